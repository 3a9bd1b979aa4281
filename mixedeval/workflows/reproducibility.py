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

``table`` has one row per scope and pairwise contrast: scope, contrast, mean per system
(``mean_<system>``, EMMs), estimate, effect_size, p_value (unadjusted contrast p-value), p_adj
(adjusted, ``adjust``), glrt_p_value (omnibus), nobs. ``findings`` lists, in words: sign
reversals between the scopes, changes of significance (by ``p_adj``), significant interactions
with data properties (and reversals within property levels), and the reliability bands.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._format import fmt_p
from ..data.table import as_pandas
from ..data.validate import require_columns, require_finite, require_level, require_supported_dtypes
from ..errors import DataError
from ..results import ResultWarning
from ._common import _WorkflowResult, dedupe_warnings, koo_li_band
from .compare_systems import compare_systems
from .conditional_compare import conditional_compare
from .variance_components import variance_components


@dataclass(frozen=True, repr=False)
class ReproducibilityResult(_WorkflowResult):
    """Result of :func:`inferential_reproducibility`.

    ``table`` (the main table; see the module docstring); ``best``: the instance chosen per
    system (its meta-parameter values and mean score); ``conditional``: prop, kind, chisq, df, p_value of
    each interaction GLRT; ``reliability``: system, phi, band, top_component, top_percent,
    singular; ``findings``: sentences; ``details``: the underlying results by name.
    """

    table: Any
    best: Any
    conditional: Any
    reliability: Any
    findings: tuple[str, ...]
    alpha: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    details: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    _main_table = "table"
    _print_tables = ("table", "best", "conditional", "reliability")
    _title = "Training vs inferential reproducibility (mixed-model GLRTs, variance components)"
    _skip_in_dict = ("details",)

    def __repr__(self) -> str:
        base = super().__repr__()
        return base + "\n\nfindings:\n" + "\n".join(f"  - {f}" for f in self.findings)


def _choose_best(frame, score: str, system: str, meta_params: list[str], best: Any):
    """One row per system: its best instance's meta-parameter values and mean score."""
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
                     "effect_size": r["effect_size"], "p_value": r["p_value"], "p_adj": r["p_adj"],
                     "glrt_p_value": res.glrt_p_value, "nobs": res.fit.nobs})
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
    """``= 0.0123`` / ``= 3.20e-12`` / ``<1e-300`` (the one p-value format, in a sentence)."""
    text = fmt_p(p)
    return text if text.startswith("<") else f"= {text}"


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
    effect_size: str = "total",
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
    meta_params : columns that identify an instance within a system (run, learning rate, ...);
        systems without variation in them (a single baseline run) are fine.
    props : data properties to condition on: names (categorical or continuous columns) or
        ``{name: bins}`` / ``{name: {"bins": [...], "labels": [...]}}``.
    reference : reference system (first level otherwise), e.g. the baseline.
    alpha : significance level used for the findings (compared with the adjusted ``p_adj``).
    adjust, posthoc_df, effect_size : as in :func:`mixedeval.compare_systems`.
    reliability : run the variance-component reliability of every system whose instances vary.
    """
    alpha = require_level(alpha, "alpha")
    meta_params = [meta_params] if isinstance(meta_params, str) else list(meta_params)
    prop_specs = _prop_spec(props)
    frame = _instances_frame(data, score, system, item, meta_params, [p for p, _, _ in prop_specs])
    kw = dict(reference=reference, posthoc_df=posthoc_df, adjust=adjust, effect_size=effect_size, optimizer=optimizer)
    best_tab = _choose_best(frame, score, system, meta_params, best)
    training = compare_systems(_subset_best(frame, best_tab, system, meta_params), score, system, item,
                               average=False, **kw)
    inferential = compare_systems(frame, score, system, item, average=True, **kw)
    details: dict[str, Any] = {"training": training, "inferential": inferential}
    warnings = [w for w in (*training.warnings, *inferential.warnings) if w.kind != "averaging"]
    table = pd.DataFrame(_summary_rows("training (best vs best)", training, system)
                         + _summary_rows("inferential (all instances)", inferential, system))
    findings = _scope_findings(training.contrasts, inferential.contrasts, alpha)
    cond_rows = []
    for prop, bins, labels in prop_specs:
        cc = conditional_compare(frame, score, system, item, prop, bins=bins, labels=labels, **kw)
        details[f"conditional:{prop}"] = cc
        warnings += list(cc.warnings)
        cond_rows.append({"prop": prop, "kind": cc.kind, "chisq": float(cc.glrt["chisq"].iloc[1]),
                          "df": float(cc.glrt["df"].iloc[1]), "p_value": cc.p_value})
        findings.append(_interaction_finding(cc, prop, system, alpha))
    rel_rows = []
    if reliability:
        for sys_level, vca in _system_reliabilities(frame, score, system, item, meta_params, optimizer, warnings):
            details[f"reliability:{sys_level}"] = vca
            row, line = _reliability_row(sys_level, vca)
            rel_rows.append(row)
            findings.append(line)
    prov = dict(inferential.provenance)
    prov.update({"workflow": "inferential_reproducibility", "best": best if isinstance(best, str) else "explicit",
                 "alpha": alpha, "meta_params": meta_params})
    best_out = best_tab.copy()
    for c in meta_params:
        best_out[c] = best_out[c].astype(str)
    conditional = pd.DataFrame(cond_rows, columns=["prop", "kind", "chisq", "df", "p_value"])
    rel = pd.DataFrame(rel_rows, columns=["system", "phi", "band", "top_component", "top_percent", "singular"])
    return ReproducibilityResult(table=table, best=best_out, conditional=conditional, reliability=rel,
                                 findings=tuple(findings), alpha=float(alpha), warnings=dedupe_warnings(warnings),
                                 provenance=prov, details=details)


def _instances_frame(data: Any, score: str, system: str, item: str, meta_params: list[str], props: list[str]):
    """A checked copy of the table whose meta-parameter columns are strings (``"(none)"`` where
    a system lacks the meta-parameter, so that it is one instance)."""
    if not meta_params:
        raise DataError("meta_params must name the columns that identify an instance (e.g. ['run', 'learning_rate'])")
    df = as_pandas(data)
    df.columns = [str(c) for c in df.columns]
    require_columns(df, [score, system, item, *meta_params, *props])
    require_supported_dtypes(df, [score, system, item, *meta_params], score=score)
    require_finite(df, score)  # before choosing the best instances: a missing score is an error
    frame = df.copy()
    for c in meta_params:
        frame[c] = frame[c].astype(object).where(frame[c].notna(), "(none)").astype(str)
    return frame


def _scope_findings(tr_contrasts, inf_contrasts, alpha: float) -> list[str]:
    """Sentences comparing each contrast best vs best and over all instances (sign reversal,
    change of significance by ``p_adj``, or agreement)."""
    findings: list[str] = []
    tr = tr_contrasts.set_index("contrast")
    inf = inf_contrasts.set_index("contrast")
    for c in inf.index:
        if c not in tr.index:
            continue
        e_tr, e_in = float(tr.loc[c, "estimate"]), float(inf.loc[c, "estimate"])
        p_tr, p_in = float(tr.loc[c, "p_adj"]), float(inf.loc[c, "p_adj"])
        if np.sign(e_tr) != np.sign(e_in) and e_tr != 0 and e_in != 0:
            findings.append(
                f"sign reversal for {c}: {e_tr:+.4g} best vs best (p_adj {_fmt_p(p_tr)}) but {e_in:+.4g} over all "
                f"instances (p_adj {_fmt_p(p_in)}); the best-instance result does not carry over to meta-parameter "
                "variation")
        elif (p_tr < alpha) != (p_in < alpha):
            which = "best vs best only" if p_tr < alpha else "over all instances only"
            findings.append(f"{c} is significant at {alpha} {which} (p_adj {_fmt_p(p_tr)} best vs best, p_adj "
                            f"{_fmt_p(p_in)} all instances)")
        else:
            verdict = "significant" if p_in < alpha else "not significant"
            findings.append(f"{c}: same direction in both scopes ({e_tr:+.4g} best vs best, {e_in:+.4g} all instances), "
                            f"{verdict} at {alpha} over all instances (p_adj {_fmt_p(p_in)}, effect size "
                            f"{float(inf.loc[c, 'effect_size']):+.3f})")
    return findings


def _interaction_finding(cc, prop: str, system: str, alpha: float) -> str:
    """One sentence on the system x ``prop`` interaction GLRT, with sign flips and level-only
    significance (by ``p_adj``) of the contrasts within the property levels."""
    if cc.p_value >= alpha:
        return f"no significant system x {prop} interaction (p {_fmt_p(cc.p_value)})"
    msg = f"significant system x {prop} interaction (p {_fmt_p(cc.p_value)}, {cc.kind})"
    if cc.kind == "continuous":
        sl = cc.slopes
        return msg + ": slopes " + ", ".join(f"{a} {b:+.3g}" for a, b in zip(sl[system].astype(str), sl["trend"]))
    con = cc.contrasts
    flips = []
    for c in con["contrast"].unique():
        rows = con[con["contrast"] == c]
        est = rows["estimate"].to_numpy(dtype=float)
        lv = rows[prop].astype(str).to_numpy()
        if (est > 0).any() and (est < 0).any():
            flips.append(f"{c} changes sign across {prop} ({', '.join(f'{a}: {b:+.3g}' for a, b in zip(lv, est))})")
        sig = rows.loc[rows["p_adj"] < alpha, prop].astype(str).tolist()
        if 0 < len(sig) < len(lv):
            flips.append(f"{c} is significant only for {prop} in {sig}")
    return msg + (": " + "; ".join(flips) if flips else "")


def _system_reliabilities(frame, score: str, system: str, item: str, meta_params: list[str], optimizer: str,
                          warnings: list[ResultWarning]):
    """``(system level, VCAResult)`` for every system whose instances vary in meta-parameters
    crossed with the items; systems whose analysis is refused get a ``reliability_skipped``
    warning (appended to ``warnings``)."""
    for sys_level, grp in frame.groupby(system, observed=True, sort=False):
        varying = [c for c in meta_params if grp[c].nunique() > 1]
        crossed = [c for c in varying
                   if grp[[item, c]].drop_duplicates().groupby(item, observed=True)[c].nunique().max() > 1]
        if not crossed:
            continue
        try:
            vca = variance_components(grp, score, item, crossed, optimizer=optimizer)
        except DataError as exc:
            warnings.append(ResultWarning("reliability_skipped", f"reliability of {sys_level!r} skipped: {exc}"))
            continue
        warnings += [w for w in vca.warnings if w.kind != "singular"]
        yield sys_level, vca


def _reliability_row(sys_level: Any, vca) -> tuple[dict[str, Any], str]:
    """The reliability table's row of one system and its finding."""
    facets = vca.table[vca.table["role"] == "facet"]
    top = facets.iloc[0] if len(facets) else None
    phi = vca.phi()
    row = {"system": str(sys_level), "phi": phi, "band": koo_li_band(phi),
           "top_component": None if top is None else str(top["component"]),
           "top_percent": np.nan if top is None else float(top["percent"]), "singular": vca.singular}
    line = f"reliability of {sys_level}: phi = {phi:.3f} ({koo_li_band(phi)}, Koo & Li)"
    if top is not None:
        line += f"; largest meta-parameter share {top['component']} {float(top['percent']):.2f}%"
    return row, line


__all__ = ["ReproducibilityResult", "inferential_reproducibility"]
