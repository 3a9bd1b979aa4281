"""Training versus inferential reproducibility (Hagmann 2023, ch. 4; Riezler & Hagmann 2024).

:func:`inferential_reproducibility` runs the scheme of Hagmann's Figure 4.1 on one score table:

1. *training reproducibility*: the best instance of each system against the best instance of
   the others (one meta-parameter setting per system), item-level mixed model, GLRT and
   pairwise contrasts (:func:`mixedeval.compare_systems`);
2. *inferential reproducibility*: the same comparison on all instances (every meta-parameter
   setting), so that the system effect is an expected performance under meta-parameter
   variation;
3. conditioning on data properties (:func:`mixedeval.conditional_compare`, interaction GLRT per
   property, on all instances);
4. the variance-component reliability of each system over its meta-parameters
   (:func:`mixedeval.variance_components`: phi, Koo & Li band, the largest meta-parameter
   share).

``summary`` has one row per scope and pairwise contrast: scope, contrast, mean per system
(``mean_<system>``, EMMs), estimate, effect_size (estimate / residual SD), p_value (adjusted
contrast p-value), glrt_p_value (omnibus). ``findings`` lists, in words: sign reversals between
the scopes, changes of significance, significant interactions with data properties (and
reversals within property levels), and the reliability bands.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DataError
from ..results import ResultWarning
from .compare_systems import compare_systems, dedupe_warnings
from .conditional_compare import conditional_compare
from .variance_components import WorkflowResult, koo_li_band, variance_components


@dataclass(frozen=True, repr=False)
class ReproducibilityResult(WorkflowResult):
    """Result of :func:`inferential_reproducibility`.

    ``summary`` (see the module docstring); ``best``: the instance chosen per system (its
    meta-parameter values and mean score); ``conditional``: prop, kind, chisq, df, p_value of
    each interaction GLRT; ``reliability``: system, phi, band, top_component, top_percent,
    singular; ``findings``: sentences; ``details``: the underlying results by name.
    """

    summary: Any
    best: Any
    conditional: Any
    reliability: Any
    findings: tuple[str, ...]
    alpha: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    details: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    _main_table = "summary"
    _print_tables = ("summary", "best", "conditional", "reliability")
    _title = "Training vs inferential reproducibility (mixed-model GLRTs, variance components)"
    _skip_in_dict = ("details",)

    def __repr__(self) -> str:
        base = super().__repr__()
        return base + "\n\nfindings:\n" + "\n".join(f"  - {f}" for f in self.findings)


def _choose_best(frame, score: str, system: str, meta_params: list[str], best: Any):
    """One row per system: its best instance's meta-parameter values and mean score."""
    import pandas as pd  # noqa: PLC0415

    keys = [system, *meta_params]
    means = frame.groupby(keys, observed=True, dropna=False)[score].mean().reset_index()
    rows = []
    for sys_level, grp in means.groupby(system, observed=True, sort=False):
        if isinstance(best, str):
            if best not in ("max", "min"):
                raise DataError(f"best must be 'max', 'min' or a dict {{system: {{meta_param: value}}}}, not {best!r}")
            pick = grp.loc[grp[score].idxmax() if best == "max" else grp[score].idxmin()]
        elif isinstance(best, Mapping):
            spec = best.get(sys_level, best.get(str(sys_level)))
            if spec is None:
                if len(grp) != 1:
                    raise DataError(f"best has no entry for system {sys_level!r}, which has {len(grp)} instances")
                pick = grp.iloc[0]
            else:
                sel = grp
                for k, v in spec.items():
                    if k not in meta_params:
                        raise DataError(f"best[{sys_level!r}] names {k!r}, which is not one of meta_params {meta_params}")
                    sel = sel[sel[k].astype(str) == str(v)]
                if len(sel) != 1:
                    raise DataError(f"best[{sys_level!r}] = {dict(spec)} matches {len(sel)} instances of {sys_level!r}; "
                                    "name every meta-parameter that varies within the system")
                pick = sel.iloc[0]
        else:
            raise DataError("best must be 'max', 'min' or a dict {system: {meta_param: value}}")
        rows.append(pick)
    out = pd.DataFrame(rows).reset_index(drop=True).rename(columns={score: "mean_score"})
    return out


def _subset_best(frame, best_tab, system: str, meta_params: list[str]):
    import pandas as pd  # noqa: PLC0415

    keys = [system, *meta_params]
    key_frame = frame[keys].astype(str)
    sel = best_tab[keys].astype(str)
    mask = pd.Series(False, index=frame.index)
    for _, r in sel.iterrows():
        m = pd.Series(True, index=frame.index)
        for k in keys:
            m &= key_frame[k] == r[k]
        mask |= m
    return frame.loc[mask]


def _summary_rows(scope: str, res, system: str) -> list[dict[str, Any]]:
    emm = res.emmeans
    means = {f"mean_{lvl}": float(v) for lvl, v in zip(emm[system].astype(str), emm["emmean"])}
    rows = []
    for r in res.contrasts.to_dict(orient="records"):
        rows.append({"scope": scope, "contrast": r["contrast"], **means, "estimate": r["estimate"],
                     "effect_size": r["effect_size"], "p_value": r["p_value"], "glrt_p_value": res.p_value,
                     "nobs": res.fit.nobs})
    return rows


def _prop_spec(props: Any) -> list[tuple[str, Any, Any]]:
    """props: names, or {name: bins} / {name: {"bins": .., "labels": ..}} -> (name, bins, labels)."""
    if props is None:
        return []
    if isinstance(props, str):
        return [(props, None, None)]
    if isinstance(props, Mapping):
        out = []
        for k, v in props.items():
            if isinstance(v, Mapping):
                out.append((str(k), v.get("bins"), v.get("labels")))
            else:
                out.append((str(k), v, None))
        return out
    return [(str(p), None, None) for p in props]


def _fmt_p(p: float) -> str:
    return "< 0.0001" if p < 1e-4 else f"= {p:.4f}"


def inferential_reproducibility(
    data: Any,
    score: str,
    system: str,
    item: str,
    best: str | Mapping[Any, Mapping[str, Any]] = "max",
    meta_params: Sequence[str] = (),
    props: str | Sequence[str] | Mapping[str, Any] | None = None,
    *,
    reference: Any = None,
    alpha: float = 0.05,
    adjust: str = "holm",
    posthoc_df: str = "asymptotic",
    reliability: bool = True,
    optimizer: str = "nloptwrap",
) -> ReproducibilityResult:
    """Contrast training reproducibility (best vs best) with inferential reproducibility.

    Parameters
    ----------
    data : score table with one row per (system, instance, item); never modified.
    score, system, item : column names.
    best : how to pick each system's best instance: ``"max"`` (highest mean score, e.g. BLEU,
        Rouge), ``"min"`` (lowest, e.g. TER), or ``{system: {meta_param: value}}``.
    meta_params : columns that identify an instance within a system (seed, learning rate, ...);
        systems without variation in them (a single baseline run) are fine.
    props : data properties to condition on: names (categorical or continuous columns) or
        ``{name: bins}`` / ``{name: {"bins": [...], "labels": [...]}}``.
    reference : reference system (first level otherwise), e.g. the baseline.
    alpha : significance level used for the findings.
    adjust, posthoc_df : as in :func:`mixedeval.compare_systems`.
    reliability : run the variance-component reliability of every system whose instances vary.
    """
    import pandas as pd  # noqa: PLC0415

    from ..data.table import as_pandas  # noqa: PLC0415
    from ..data.validate import (  # noqa: PLC0415
        require_columns,
        require_finite,
        require_level,
        require_supported_dtypes,
    )

    alpha = require_level(alpha, "alpha")
    meta_params = [meta_params] if isinstance(meta_params, str) else list(meta_params)
    if not meta_params:
        raise DataError("meta_params must name the columns that identify an instance (e.g. ['seed', 'learning_rate'])")
    df = as_pandas(data)
    df.columns = [str(c) for c in df.columns]
    prop_specs = _prop_spec(props)
    require_columns(df, [score, system, item, *meta_params, *[p for p, _, _ in prop_specs]])
    require_supported_dtypes(df, [score, system, item, *meta_params], score=score)
    require_finite(df, score)  # before choosing the best instances: a missing score is an error
    frame = df.copy()
    for c in meta_params:  # a system without this meta-parameter (NaN) is one instance
        frame[c] = frame[c].astype(object).where(frame[c].notna(), "(none)").astype(str)
    warnings: list[ResultWarning] = []
    details: dict[str, Any] = {}

    best_tab = _choose_best(frame, score, system, meta_params, best)
    best_rows = _subset_best(frame, best_tab, system, meta_params)
    training = compare_systems(best_rows, score, system, item, reference=reference, posthoc_df=posthoc_df,
                               adjust=adjust, average=False, optimizer=optimizer)
    inferential = compare_systems(frame, score, system, item, reference=reference, posthoc_df=posthoc_df,
                                  adjust=adjust, average=True, optimizer=optimizer)
    details.update(training=training, inferential=inferential)
    warnings += [w for w in (*training.warnings, *inferential.warnings) if w.kind != "averaging"]
    rows = _summary_rows("training (best vs best)", training, system) + \
        _summary_rows("inferential (all instances)", inferential, system)
    summary = pd.DataFrame(rows)

    findings: list[str] = []
    tr = training.contrasts.set_index("contrast")
    inf = inferential.contrasts.set_index("contrast")
    for c in inf.index:
        if c not in tr.index:
            continue
        e_tr, e_in = float(tr.loc[c, "estimate"]), float(inf.loc[c, "estimate"])
        p_tr, p_in = float(tr.loc[c, "p_value"]), float(inf.loc[c, "p_value"])
        if np.sign(e_tr) != np.sign(e_in) and e_tr != 0 and e_in != 0:
            findings.append(
                f"sign reversal for {c}: {e_tr:+.4g} best vs best (p {_fmt_p(p_tr)}) but {e_in:+.4g} over all "
                f"instances (p {_fmt_p(p_in)}); the best-instance result does not carry over to meta-parameter variation")
        elif (p_tr < alpha) != (p_in < alpha):
            which = "best vs best only" if p_tr < alpha else "over all instances only"
            findings.append(f"{c} is significant at {alpha} {which} (p {_fmt_p(p_tr)} best vs best, p {_fmt_p(p_in)} "
                            "all instances)")
        else:
            verdict = "significant" if p_in < alpha else "not significant"
            findings.append(f"{c}: same direction in both scopes ({e_tr:+.4g} best vs best, {e_in:+.4g} all instances), "
                            f"{verdict} at {alpha} over all instances (p {_fmt_p(p_in)}, effect size "
                            f"{float(inf.loc[c, 'effect_size']):+.3f})")

    cond_rows = []
    for prop, bins, labels in prop_specs:
        cc = conditional_compare(frame, score, system, item, prop, bins=bins, labels=labels, reference=reference,
                                 adjust=adjust, posthoc_df=posthoc_df, optimizer=optimizer)
        details[f"conditional:{prop}"] = cc
        warnings += list(cc.warnings)
        g = cc.glrt
        cond_rows.append({"prop": prop, "kind": cc.kind, "chisq": float(g["chisq"].iloc[1]), "df": float(g["df"].iloc[1]),
                          "p_value": cc.p_value})
        if cc.p_value < alpha:
            msg = f"significant system x {prop} interaction (p {_fmt_p(cc.p_value)}, {cc.kind})"
            if cc.kind != "continuous":
                con = cc.contrasts
                flips = []
                for c in con["contrast"].unique():
                    est = con.loc[con["contrast"] == c, "estimate"].to_numpy(dtype=float)
                    lv = con.loc[con["contrast"] == c, prop].astype(str).to_numpy()
                    if (est > 0).any() and (est < 0).any():
                        flips.append(f"{c} changes sign across {prop} ({', '.join(f'{a}: {b:+.3g}' for a, b in zip(lv, est))})")
                    sig = con.loc[(con["contrast"] == c) & (con["p_value"] < alpha), prop].astype(str).tolist()
                    if 0 < len(sig) < len(lv):
                        flips.append(f"{c} is significant only for {prop} in {sig}")
                if flips:
                    msg += ": " + "; ".join(flips)
            else:
                sl = cc.slopes
                msg += ": slopes " + ", ".join(f"{a} {b:+.3g}" for a, b in zip(sl[system].astype(str), sl["trend"]))
            findings.append(msg)
        else:
            findings.append(f"no significant system x {prop} interaction (p {_fmt_p(cc.p_value)})")
    conditional = pd.DataFrame(cond_rows, columns=["prop", "kind", "chisq", "df", "p_value"])

    rel_rows = []
    if reliability:
        for sys_level, grp in frame.groupby(system, observed=True, sort=False):
            varying = [c for c in meta_params if grp[c].nunique() > 1]
            if not varying:
                continue
            crossed = [c for c in varying
                       if grp[[item, c]].drop_duplicates().groupby(item, observed=True)[c].nunique().max() > 1]
            if not crossed:
                continue
            try:
                vca = variance_components(grp, score, item, crossed, optimizer=optimizer)
            except DataError as exc:
                warnings.append(ResultWarning("reliability_skipped", f"reliability of {sys_level!r} skipped: {exc}"))
                continue
            details[f"reliability:{sys_level}"] = vca
            warnings += [w for w in vca.warnings if w.kind != "singular"]
            facets = vca.table[vca.table["role"] == "facet"]
            top = facets.iloc[0] if len(facets) else None
            phi = vca.phi()
            rel_rows.append({"system": str(sys_level), "phi": phi, "band": koo_li_band(phi),
                             "top_component": None if top is None else str(top["component"]),
                             "top_percent": np.nan if top is None else float(top["percent"]),
                             "singular": vca.singular})
            line = f"reliability of {sys_level}: phi = {phi:.3f} ({koo_li_band(phi)}, Koo & Li)"
            if top is not None:
                line += f"; largest meta-parameter share {top['component']} {float(top['percent']):.2f}%"
            findings.append(line)
    reliability_tab = pd.DataFrame(rel_rows, columns=["system", "phi", "band", "top_component", "top_percent",
                                                      "singular"])
    prov = dict(inferential.provenance)
    prov.update({"workflow": "inferential_reproducibility", "best": best if isinstance(best, str) else "explicit",
                 "alpha": alpha, "meta_params": meta_params})
    best_out = best_tab.copy()
    for c in meta_params:
        best_out[c] = best_out[c].astype(str)
    return ReproducibilityResult(summary=summary, best=best_out, conditional=conditional, reliability=reliability_tab,
                                 findings=tuple(findings), alpha=float(alpha), warnings=dedupe_warnings(warnings),
                                 provenance=prov, details=details)


__all__ = ["ReproducibilityResult", "inferential_reproducibility"]
