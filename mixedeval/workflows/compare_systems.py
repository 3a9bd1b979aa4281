"""Algorithm comparison with a linear mixed model on all instances (Hagmann 2023, ch. 2.3).

:func:`compare_systems` keeps every evaluated instance (seed / meta-parameter setting) as its own
rows and pairs the systems through a random intercept per test item:

    full: score ~ system + (1|item)        null: score ~ 1 + (1|item)

* ``glrt``: the omnibus generalized likelihood-ratio test of the system effect
  (:func:`mixedeval.compare`: both models refitted by ML, chi-square with ``k - 1`` df);
* ``emmeans`` / ``contrasts``: estimated marginal means of the systems and all pairwise
  contrasts (:meth:`LMMFit.emmeans` -> ``.contrasts``), p-values adjusted (Holm by default),
  ``effect_size = estimate / sigma`` (residual SD, unrounded);
* ``averaged``: the same analysis after averaging the instances of each system per item (the
  strategy of Hothorn et al. 2005 that Hagmann's Table 2.2 shows to destroy power): the
  published linear model without the item effect (Eq. 2.10 against 2.11, ``lm``, GLRT), and the
  mixed model with the item intercept on the averaged data, side by side.

Extra random effects (e.g. ``random=["seed", "system:seed"]``) are added to both models.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import DataError
from ..results import ResultWarning
from .variance_components import WorkflowResult

POSTHOC_DF = ("asymptotic", "satterthwaite", "kenward-roger")


# ----------------------------------------------------------------- shared helpers
def random_terms(random: str | Sequence[str] | None, columns: Sequence[str]) -> list[str]:
    """Validate extra grouping terms (``"seed"``, ``"system:seed"``); return them as written."""
    if random is None:
        return []
    if isinstance(random, str):
        random = [random]
    out = []
    for term in random:
        parts = [p.strip() for p in str(term).split(":")]
        missing = [p for p in parts if p not in columns]
        if missing or not all(parts):
            raise DataError(
                f"random term {term!r} names column(s) {', '.join(map(repr, missing)) or '(empty)'} not in the data; "
                f"write grouping terms like 'seed' or 'system:seed' (available: {', '.join(list(columns)[:20])})"
            )
        out.append(str(term))
    return out


def term_columns(terms: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(p.strip() for t in terms for p in t.split(":")))


def prepare_frame(data: Any, score: str, factors: Sequence[str], numeric: Sequence[str] = ()):
    """A private copy with only the needed columns and every factor with two or more levels.

    The rules of :mod:`mixedeval.data.validate`: a missing or infinite score is a
    :class:`DataError`; rows with a missing factor or numeric predictor are dropped (with a
    ``missing_rows`` warning; all models use the same rows); rows repeating another row exactly
    get a ``duplicated_rows`` warning."""
    from ..data.table import as_pandas  # noqa: PLC0415
    from ..data.validate import (  # noqa: PLC0415
        ROWS_CHECKED,
        duplicated_rows_warning,
        require_columns,
        require_finite,
        require_levels,
        require_nonempty,
        require_supported_dtypes,
    )

    df = as_pandas(data)
    df.columns = [str(c) for c in df.columns]
    require_nonempty(df)
    cols = list(dict.fromkeys([score, *factors, *numeric]))
    require_columns(df, cols)
    require_supported_dtypes(df, cols, score=score)
    require_finite(df, score)
    frame = df[cols].copy()
    warnings: list[ResultWarning] = []
    dup = duplicated_rows_warning(df, score)
    if dup is not None:
        warnings.append(dup)
    bad = frame.isna().any(axis=1)
    if bad.any():
        which = [c for c in cols if frame[c].isna().any()]
        warnings.append(ResultWarning("missing_rows", f"{int(bad.sum())} row(s) with missing values in "
                                      f"{', '.join(which)} were dropped before fitting (all models use the same rows)"))
        frame = frame.loc[~bad].copy()
        require_nonempty(frame, "data without missing values")
    for c in numeric:
        require_finite(frame, c, role="numeric column")
    for c in factors:
        require_levels(frame, c, 2, "factor")
    frame.attrs[ROWS_CHECKED] = True  # checked on the whole table above; lmm does not repeat it
    return frame, warnings


def model_formula(lhs: str, fixed: str, item: str, extra: Sequence[str]) -> str:
    """``lhs ~ fixed + (1|item) + (1|extra)...`` from column names (back-quoted where needed);
    ``fixed`` is ``"1"`` or column names joined by ``" * "`` / ``" + "``; ``extra`` terms join columns by ``:``."""
    from ..data._formula import quote_name  # noqa: PLC0415

    parts = re.split(r" ([*+]) ", fixed)  # column, op, column, ...
    fix = "1" if fixed == "1" else " ".join(p if i % 2 else quote_name(p) for i, p in enumerate(parts))
    rand = " + ".join("(1|" + ":".join(quote_name(p.strip()) for p in t.split(":")) + ")" for t in [item, *extra])
    return f"{quote_name(lhs)} ~ {fix} + {rand}"


def dedupe_warnings(ws: Sequence[ResultWarning]) -> tuple[ResultWarning, ...]:
    out: list[ResultWarning] = []
    for w in ws:
        if w not in out:
            out.append(w)
    return tuple(out)


def check_posthoc_df(posthoc_df: str) -> str:
    from ..lmm import normalize_df_method  # noqa: PLC0415

    return normalize_df_method(posthoc_df)


@dataclass(frozen=True)
class _Analysis:
    full: Any
    null: Any
    glrt: Any  # CompareResult
    emm: Any  # EMMResult
    contrasts: Any  # ContrastResult

    def warnings(self) -> list[ResultWarning]:
        return [*self.full.warnings, *self.null.warnings, *self.glrt.warnings, *self.emm.warnings,
                *self.contrasts.warnings]


def system_analysis(frame, score: str, system: str, item: str, extra: Sequence[str], *, levels: Mapping | None,
                    posthoc_df: str, adjust: str, level: float, optimizer: str, factors: Sequence[str]) -> _Analysis:
    """GLRT of ``system`` (ML refit by :func:`mixedeval.compare`), EMMs and pairwise contrasts."""
    from ..inference.compare import compare  # noqa: PLC0415
    from ..lmm import lmm  # noqa: PLC0415

    kw = dict(reml=True, optimizer=optimizer, factors=factors, levels=levels)
    full = lmm(model_formula(score, system, item, extra), frame, **kw)
    null = lmm(model_formula(score, "1", item, extra), frame, **kw)
    glrt = compare(null, full, names=["null", "full"])
    emm = full.emmeans(system, df_method=posthoc_df, level=level)
    con = emm.contrasts(method="pairwise", adjust=adjust)
    return _Analysis(full, null, glrt, emm, con)


def system_levels(frame, system: str, reference: Any) -> dict[str, list[str]] | None:
    """Explicit level order of the system factor with ``reference`` first (None: lmm's default)."""
    import pandas as pd  # noqa: PLC0415

    s = frame[system]
    if isinstance(s.dtype, pd.CategoricalDtype):
        lv = [str(c) for c in s.cat.remove_unused_categories().cat.categories]
    else:
        codes, uniq = pd.factorize(s, sort=True)
        lv = [str(u) for u in uniq]
    if reference is None:
        return {system: lv}
    ref = str(reference)
    if ref not in lv:
        raise DataError(f"reference {reference!r} is not a level of {system!r} ({', '.join(lv[:10])})")
    return {system: [ref] + [x for x in lv if x != ref]}


# ------------------------------------------------------------------- result
@dataclass(frozen=True, repr=False)
class AveragedAnalysis(WorkflowResult):
    """The seed-averaged analysis: one row per (item, system), the mean over instances.

    ``glrt``: two likelihood-ratio tests of the system effect on the averaged data: ``lm``
    (``score ~ system`` against ``score ~ 1``, no item effect: Hagmann 2023 Eq. 2.10/2.11, the
    published p = 0.517 for Kreutzer TER) and ``lmm`` (with the item intercept). Columns:
    analysis, formula, npar, loglik, chisq, df, p_value, residual_sd, estimator. ``emmeans`` and
    ``contrasts`` come from the averaged mixed model.
    """

    glrt: Any
    emmeans: Any
    contrasts: Any
    nobs: int
    f_value: float
    p_value_f: float
    fit: Any = field(default=None, repr=False, compare=False)

    _main_table = "glrt"
    _print_tables = ("glrt", "emmeans", "contrasts")
    _skip_in_dict = ("fit",)
    _title = "Seed-averaged analysis (one mean per item and system)"


@dataclass(frozen=True, repr=False)
class CompareSystemsResult(WorkflowResult):
    """Result of :func:`compare_systems`.

    ``summary``: analysis, formula, nobs, residual_sd, chisq, df, p_value (all-instances mixed
    model, and the averaged analyses when there was anything to average) -- Hagmann's Table 2.2.
    ``glrt``: :func:`mixedeval.compare`'s table (null and full model, ML). ``emmeans``: system,
    emmean, std_error, df, conf_low, conf_high. ``contrasts``: contrast, estimate, std_error, df,
    t_ratio, p_value, conf_low, conf_high, effect_size. ``averaged``: :class:`AveragedAnalysis`
    or None (one instance per system and item).
    """

    summary: Any
    glrt: Any
    emmeans: Any
    contrasts: Any
    averaged: AveragedAnalysis | None
    p_adjust: str
    posthoc_df: str
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    fit: Any = field(default=None, repr=False, compare=False)
    null_fit: Any = field(default=None, repr=False, compare=False)
    emm_result: Any = field(default=None, repr=False, compare=False)
    contrast_result: Any = field(default=None, repr=False, compare=False)

    _main_table = "summary"
    _print_tables = ("summary", "emmeans", "contrasts")
    _skip_in_dict = ("fit", "null_fit", "emm_result", "contrast_result")
    _title = "System comparison with a linear mixed model (GLRT, EMMs, pairwise contrasts)"

    def _scalars(self):
        p = float(self.glrt["p_value"].iloc[-1])
        return [("omnibus GLRT p-value", f"{p:.4g}"), ("p-value adjustment", self.p_adjust),
                ("post-hoc df", self.posthoc_df)]

    @property
    def p_value(self) -> float:
        """The omnibus GLRT p-value on all instances."""
        return float(self.glrt["p_value"].iloc[-1])


def _averaged(frame, score: str, system: str, item: str, levels, posthoc_df, adjust, level, optimizer):
    import pandas as pd  # noqa: PLC0415

    from ..engine import session  # noqa: PLC0415
    from ..data._formula import parse_formula  # noqa: PLC0415

    from ..data.validate import ROWS_CHECKED  # noqa: PLC0415

    avg = frame.groupby([item, system], observed=True, sort=False)[score].mean().reset_index()
    avg.attrs[ROWS_CHECKED] = True  # one row per (item, system): equal means are not copies
    an = system_analysis(avg, score, system, item, (), levels=levels, posthoc_df=posthoc_df, adjust=adjust,
                         level=level, optimizer=optimizer, factors=[system, item])
    cols = [score, system]
    res = session.call("me_lm_glrt", null_formula=parse_formula(f"`{score}` ~ 1", cols).r_formula,
                       full_formula=parse_formula(f"`{score}` ~ `{system}`", cols).r_formula,
                       data=an.full.data[[score, system]])
    v = res.value
    lm_tab = v["table"]
    g = an.glrt.table
    rows = [
        {"analysis": "averaged, linear model (no item effect)", "formula": f"{score} ~ {system}",
         "npar": int(lm_tab["npar"].iloc[1]), "loglik": float(lm_tab["loglik"].iloc[1]),
         "chisq": float(lm_tab["chisq"].iloc[1]), "df": float(lm_tab["df"].iloc[1]),
         "p_value": float(lm_tab["p_value"].iloc[1]), "residual_sd": float(np.atleast_1d(v["sigma"])[1]),
         "estimator": "ML"},
        {"analysis": "averaged, mixed model (item intercept)", "formula": an.full.formula,
         "npar": int(g["npar"].iloc[1]), "loglik": float(g["loglik"].iloc[1]), "chisq": float(g["chisq"].iloc[1]),
         "df": float(g["df"].iloc[1]), "p_value": float(g["p_value"].iloc[1]), "residual_sd": an.full.sigma,
         "estimator": str(g["estimator"].iloc[1])},
    ]
    out = AveragedAnalysis(glrt=pd.DataFrame(rows), emmeans=an.emm.table, contrasts=an.contrasts.table,
                           nobs=len(avg), f_value=float(v["f_value"]), p_value_f=float(v["p_value_f"]), fit=an.full)
    return out, an.warnings()


def compare_systems(
    data: Any,
    score: str,
    system: str,
    item: str,
    reference: Any = None,
    posthoc_df: str = "asymptotic",
    adjust: str = "holm",
    *,
    random: str | Sequence[str] | None = None,
    average: bool = True,
    level: float = 0.95,
    optimizer: str = "nloptwrap",
) -> CompareSystemsResult:
    """Compare systems on all instances with ``score ~ system + (1|item)`` (Hagmann 2023, ch. 2).

    Parameters
    ----------
    data : score table, one row per (system, instance, item); never modified.
    score, system, item : column names (score numeric; item = test input such as a sentence).
    reference : reference level of ``system`` (first level otherwise).
    posthoc_df : df of the EMMs and contrasts: ``"asymptotic"`` (z, default; Wald tests as in
        the thesis' large-sample setting), ``"satterthwaite"`` or ``"kenward-roger"``.
    adjust : p-value adjustment of the pairwise contrasts (emmeans names; Holm by default).
    random : extra grouping terms added to both models, e.g. ``["seed", "system:seed"]``.
    average : also run the seed-averaged analysis (when there is more than one row per
        system and item).
    level : confidence level of EMMs and contrasts.

    Returns a :class:`CompareSystemsResult` (``summary``, ``glrt``, ``emmeans``, ``contrasts``,
    ``averaged``, ``warnings``, ``fit``).
    """
    import pandas as pd  # noqa: PLC0415

    from ..data.table import as_pandas  # noqa: PLC0415

    from ..data.validate import require_level  # noqa: PLC0415

    posthoc_df = check_posthoc_df(posthoc_df)
    level = require_level(level)
    df = as_pandas(data)
    extra = random_terms(random, [str(c) for c in df.columns])
    factors = list(dict.fromkeys([system, item, *term_columns(extra)]))
    frame, warnings = prepare_frame(df, score, factors)
    levels = system_levels(frame, system, reference)
    an = system_analysis(frame, score, system, item, extra, levels=levels, posthoc_df=posthoc_df, adjust=adjust,
                         level=level, optimizer=optimizer, factors=factors)
    warnings += an.warnings()
    g = an.glrt.table
    rows = [{"analysis": "all instances, mixed model (item intercept)", "formula": an.full.formula, "nobs": an.full.nobs,
             "residual_sd": an.full.sigma, "chisq": float(g["chisq"].iloc[1]), "df": float(g["df"].iloc[1]),
             "p_value": float(g["p_value"].iloc[1])}]
    averaged = None
    per_cell = frame.groupby([item, system], observed=True).size()
    if average and per_cell.max() > 1:
        averaged, aw = _averaged(frame, score, system, item, levels, posthoc_df, adjust, level, optimizer)
        warnings += [w for w in aw if w.kind not in ("refit_ml", "ci_adjust")]
        for r in averaged.glrt.to_dict(orient="records"):
            rows.append({"analysis": r["analysis"], "formula": r["formula"], "nobs": averaged.nobs,
                         "residual_sd": r["residual_sd"], "chisq": r["chisq"], "df": r["df"], "p_value": r["p_value"]})
        warnings.append(ResultWarning(
            "averaging",
            f"averaging the instances of each system per {item!r} discards the replication and the pairing the item "
            f"intercept provides: p = {averaged.glrt['p_value'].iloc[0]:.3g} (averaged, linear model) and "
            f"{averaged.glrt['p_value'].iloc[1]:.3g} (averaged, mixed model) against {rows[0]['p_value']:.3g} on all "
            "instances; report the all-instances analysis",
        ))
    prov = dict(an.full.provenance)
    prov.update({"workflow": "compare_systems", "posthoc_df": posthoc_df, "adjust": adjust, "level": float(level),
                 "glrt": "lme4 anova (ML refit)", "contrasts": "emmeans::contrast pairwise"})
    return CompareSystemsResult(
        summary=pd.DataFrame(rows), glrt=g, emmeans=an.emm.table, contrasts=an.contrasts.table, averaged=averaged,
        p_adjust=an.contrasts.p_adjust, posthoc_df=posthoc_df, warnings=dedupe_warnings(warnings), provenance=prov,
        fit=an.full, null_fit=an.null, emm_result=an.emm, contrast_result=an.contrasts,
    )


__all__ = ["AveragedAnalysis", "CompareSystemsResult", "compare_systems"]
