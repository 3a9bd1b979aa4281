"""Estimated marginal means, trends and their contrasts, computed by R's emmeans.

:func:`emmeans` calls ``emmeans::emmeans(m, specs, by, at, lmer.df = ..., lmerTest.limit = n,
pbkrtest.limit = n)`` on the fitted ``lmerTest`` model and :func:`emtrends` calls
``emmeans::emtrends(m, specs, var, ...)`` the same way (Lenth, emmeans package). The
``.contrasts()`` method of the result calls ``emmeans::contrast(grid, method, adjust, by, ref)``
and ``summary(..., infer = c(TRUE, TRUE), level)``, so every estimate, standard error, df,
t ratio, p-value and interval is emmeans' own number.

Degrees of freedom (statistical rule 2 of the design): emmeans defaults to Kenward-Roger and
silently switches to ``df = Inf`` when the model has more than 3000 rows unless
``lmerTest.limit`` / ``pbkrtest.limit`` are raised. mixedeval always passes ``lmer.df`` and
both limits (set to the number of rows) with their exact dotted names, so Satterthwaite
(default) or Kenward-Roger df are computed at any size; ``df_method="asymptotic"`` gives z
tests (``df = Inf``) on request. If infinite df appear anyway (or emmeans reports another df
method, or says it disabled the df calculation) the result carries a
``ResultWarning(kind="df_fallback")``. Kenward-Roger needs a REML fit and builds n x n matrices
(pbkrtest): use it for small data only.

Column names: ``emmean`` (means) or ``trend`` (slopes from :func:`emtrends`; emmeans calls it
``<var>.trend``; the variable is kept in ``EMMResult.var``), ``std_error``, ``df``, ``conf_low``,
``conf_high``. Contrasts (:class:`ContrastResult`) have ``contrast``, the ``by`` columns,
``estimate``, ``std_error``, ``df``, the test statistic, ``p_value``, ``p_adj``, ``conf_low``,
``conf_high``, ``effect_size``, ``effect_size_conf_low``, ``effect_size_conf_high`` and
``effect_size_sd``:

* **Test statistic**: the column is named after its reference distribution (the rule of every
  mixedeval table, :mod:`mixedeval.engine.names`): ``t_value`` for Satterthwaite and
  Kenward-Roger df (emmeans' ``t.ratio``), ``z_value`` for ``df_method="asymptotic"`` (emmeans'
  ``z.ratio``; ``df = Inf``). The name follows from the means' df method, so it is known before
  the call; if emmeans falls back to infinite df anyway, the column stays ``t_value`` (a t
  statistic with infinite df is a z statistic) and a ``df_fallback`` warning says so.
* **p-values**: ``p_value`` is unadjusted (the same contrasts summarised with
  ``adjust = "none"``) and ``p_adj`` is adjusted by the method recorded as
  ``ContrastResult.p_adjust`` (what emmeans applied; ``adjust`` is what was asked for).
* **Effect size** (``effect_size="total"``, the default): ``effect_size = estimate / sd_total``
  with ``sd_total = sqrt(var_random + sigma^2)``, the standard deviation of one observation
  around the fixed-effect prediction: the square root of the sum of all variance components
  (Westfall, Kenny & Judd 2014, *J. Exp. Psychol. Gen.* 143:2020, for crossed designs). With
  random slopes, ``var_random`` is the variance of the random part averaged over the rows of
  the data (Johnson 2014: ``mean_i z_i' Sigma z_i``, the ``var_random`` of :meth:`LMMFit.r2`),
  so it equals the plain sum of the variance components for random-intercept models.
  ``effect_size_sd`` holds the denominator; the effect-size interval columns are NaN (the
  total SD is an estimate without a simple sampling distribution here).
  ``effect_size="residual"``: emmeans' own standardized effect,
  ``emmeans::eff_size(grid, sigma = sigma(m), edf = df.residual(m), method, by, ref)``: the
  estimate over the residual SD (``effect_size_sd = sigma(m)``), with emmeans' interval (which
  accounts for the uncertainty of sigma through ``edf``; unadjusted, at ``level``). In
  crossed designs with a large item variance the residual standardizer makes differences look
  several times larger than they are in units of the observations' spread.

Confidence intervals of contrasts always use an adjustment emmeans can apply to intervals. For
``holm``, ``hochberg``, ``hommel``, ``fdr``/``BH`` and ``BY`` (step-wise p-value methods)
emmeans uses Bonferroni intervals instead, and its ``tukey`` applies only to one family of
pairwise comparisons (otherwise it becomes ``sidak`` for p-values and intervals). The result
records both adjustments actually applied (``p_adjust``, ``ci_adjust``) and carries a
``ResultWarning`` (``ci_adjust`` / ``adjust_changed``) whenever one differs from the request.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._random import r_seed
from ..data.validate import require_level
from ..engine import _bridge
from ..engine.conditions import r_warnings
from ..errors import DataError, MixedEvalError
from ..results import ResultWarning
from ._emm_tables import (  # noqa: F401 - ADJUST, METHODS and ContrastResult are also this module's public names
    ADJUST,
    METHODS,
    ContrastResult,
    _adjust_name,
    _adjust_warnings,
    _applied,
    _applied_adjustments,
    _at_arg,
    _EmmeansOutput,
    _names,
    _ref_arg,
    _str_tuple,
    _z_contrast_table,
    contrast_weights,
    require_no_type,
    emm_arguments,
)
from ._emm_answer import EMMAnswer, with_direction
from ._fit_common import fit_method
from ._options import normalize_df_method
from .r2 import variance_parts

EMM_COLUMNS = ["std_error", "df", "conf_low", "conf_high"]
#: the columns of a contrast table after ``contrast`` and the ``by`` columns; ``<statistic>`` is
#: ``t_value`` or ``z_value`` (:func:`statistic_column`)
CONTRAST_COLUMNS = ["estimate", "std_error", "df", "<statistic>", "p_value", "p_adj", "conf_low", "conf_high",
                    "effect_size", "effect_size_conf_low", "effect_size_conf_high", "effect_size_sd"]
#: standardizers of ``effect_size`` (see the module docstring)
EFFECT_SIZES = ("total", "residual")
_EMMEANS_DF = {"satterthwaite": "satterthwaite", "kenward-roger": "kenward-roger", "asymptotic": "asymptotic"}


def _df_args(fit: Any, df_method: str) -> tuple[str, dict[str, Any]]:
    key = normalize_df_method(df_method)
    if key == "kenward-roger" and not fit.reml:
        raise DataError("Kenward-Roger df need a REML fit; use fit.refit(reml=True) or df_method='satterthwaite'")
    limit = max(int(fit.nobs), 3000)
    return key, {"lmer.df": _EMMEANS_DF[key], "lmerTest.limit": limit, "pbkrtest.limit": limit}


def statistic_column(df_method: str) -> str:
    """The name of the test-statistic column for a df method: ``z_value`` (asymptotic) or ``t_value``."""
    return "z_value" if df_method == "asymptotic" else "t_value"


def _df_warnings(table: Any, notes: Sequence[str], key: str, est_col: str) -> list[ResultWarning]:
    """A ``df_fallback`` warning when finite df were asked for and not delivered."""
    if key == "asymptotic":
        return []
    out: list[ResultWarning] = []
    used = next((n.split(":", 1)[1].strip() for n in notes if n.startswith("Degrees-of-freedom method:")), None)
    if used is not None and used != _EMMEANS_DF[key]:
        out.append(ResultWarning("df_fallback", f"{key} df were requested but emmeans used the {used} method", "mixedeval"))
    est = np.asarray(table[est_col], dtype=float)
    df = np.asarray(table["df"], dtype=float)
    bad = np.isfinite(est) & ~np.isfinite(df)
    if bad.any():
        out.append(ResultWarning(
            "df_fallback", f"{int(bad.sum())} row(s) have infinite df although {key} df were requested "
            "(emmeans fell back to asymptotic z statistics)", "mixedeval"))
    return out


def _tidy(v: dict[str, Any], est_to: str, df_method: str | None = None, extra: Mapping[str, str] | None = None) -> Any:
    """The bridge's summary frame (standard columns already renamed) with the estimate column
    named ``est_to``, the statistic named by :func:`statistic_column` and ``extra`` renames
    (factors stay Categoricals with R's levels). The frame is the bridge's own, just converted
    from R, so its labels are replaced in place (``rename`` would copy every column)."""
    t = v["table"]
    rename = {str(v["est_name"]): est_to, **(extra or {})}
    if df_method is not None:
        rename.update({c: statistic_column(df_method) for c in ("t_value", "z_value") if c in t.columns})
    t.columns = [rename.get(str(c), c) for c in t.columns]
    return t


def _non_estimable(table: Any, col: str) -> list[ResultWarning]:
    n = int(np.isnan(np.asarray(table[col], dtype=float)).sum())
    if not n:
        return []
    return [ResultWarning("non_estimable", f"{n} row(s) are not estimable (rank-deficient fixed effects, e.g. empty "
                          "cells); their values are NaN", "emmeans")]


@dataclass(frozen=True, repr=False, kw_only=True)
class EMMResult(EMMAnswer, _EmmeansOutput):
    """Estimated marginal means (or trends) of a fitted model.

    ``table``: <spec columns>, <by columns>, emmean (or trend), std_error, df, conf_low,
    conf_high. ``kind`` is ``"emmeans"`` or ``"emtrends"`` (then ``var`` names the covariate).
    ``sigma`` is the model's residual SD (the effect-size scale of the contrasts).
    """

    specs: tuple[str, ...]
    by: tuple[str, ...]
    kind: str
    var: str | None
    sigma: float
    higher_is_better: bool | None = None  # declared direction (None: from the response's name)

    @property
    def _title(self) -> str:  # type: ignore[override]
        if self.kind == "emtrends":
            return f"Trends of {self.var} (emmeans::emtrends)"
        return "Estimated marginal means (emmeans)"

    def _scalars(self):
        return [("df method", self.df_method), ("confidence level", self.level)]

    @property
    def estimate_column(self) -> str:
        return "trend" if self.kind == "emtrends" else "emmean"

    def contrasts(
        self,
        method: str | Mapping[str, Sequence[float]] = "pairwise",
        adjust: str = "holm",
        by: str | Sequence[str] | None = None,
        ref: str | int | Sequence[str | int] | None = None,
        level: float | None = None,
        random_state: Any = 1,
        effect_size: str = "total",
    ) -> ContrastResult:
        """Contrasts of the means (``emmeans::contrast``) with intervals and adjusted p-values.

        Parameters
        ----------
        method : ``"pairwise"`` (A - B for every pair), ``"revpairwise"`` (B - A),
            ``"trt.vs.ctrl"`` (each level minus the reference ``ref``, default the first),
            ``"consec"`` (each level minus the previous), ``"poly"`` (orthogonal polynomials),
            ``"eff"``/``"del.eff"``, or a dict ``{name: weights}`` of custom weight vectors (one
            weight per level in the order of ``table``, within each ``by`` group).
        adjust : holm (default), tukey, bonferroni, sidak, fdr/BH, BY, hochberg, hommel, mvt,
            scheffe, dunnettx or none (see the module docstring for the intervals).
        by : None keeps the grouping of the means; ``()`` contrasts across all cells; names
            group the contrasts by those variables.
        ref : reference level(s) for ``trt.vs.ctrl``: a label, or a 0-based position.
        level : confidence level (default: the level of the means).
        random_state : randomness of the ``mvt`` adjustment (randomised quasi-Monte-Carlo, drawn
            by R): an int is R's ``set.seed`` value (the default 1 makes ``mvt`` p-values
            reproducible); a SeedSequence or Generator is turned into one such int; None draws a
            fresh one. Unused by the other adjustments.
        effect_size : the standardizer of ``effect_size``: ``"total"`` (default; the square
            root of the sum of all variance components) or ``"residual"`` (the residual SD with
            emmeans' ``eff_size`` interval). See the module docstring.
        """
        return contrasts(self, method=method, adjust=adjust, by=by, ref=ref, level=level, random_state=random_state,
                         effect_size=effect_size)

    def ranks(self, level: float = 0.95, higher_is_better: bool | None = None, random_state: Any = None,
              n_sim: int = 100_000):
        """Simultaneous rank intervals of the means (:func:`mixedeval.rank_intervals` with the
        joint normal of the means: ``vcov`` of the emmGrid from R's emmeans; the df of the means
        are not used, so with few groups the intervals are slightly liberal), rank distribution
        and compact letters. ``higher_is_better=False`` ranks the smallest mean first (error
        rates such as TER); None (default) takes the direction from the response's name
        (:attr:`direction`: ``ter`` is lower-is-better)."""
        from .rankings import _emm_ranks  # noqa: PLC0415 - rankings imports the engine only when ranking

        return _emm_ranks(self, level=level, higher_is_better=higher_is_better, random_state=random_state,
                          n_sim=n_sim, scale=self.estimate_column)


def _emm(fit: Any, specs: Any, by: Any, df_method: str, level: float, at: Any, var: str | None) -> EMMResult:
    specs_t, by_t, level = emm_arguments(fit, specs, by, level, var)
    key, df_kw = _df_args(fit, df_method)
    res = _bridge.emmeans(fit, specs=list(specs_t), by=list(by_t) or None, at=_at_arg(fit, at), var=var,
                          level=float(level), df_options=df_kw)
    v = res.value
    kind = "emmeans" if var is None else "emtrends"
    est_to = "emmean" if var is None else "trend"
    labels = list(_str_tuple(v["pri_vars"])) + list(_str_tuple(v["by_vars"]))
    t = _tidy(v, est_to)
    t = pd.DataFrame({c: t[c] for c in labels + [est_to] + EMM_COLUMNS}, copy=False)
    notes = _str_tuple(v.get("mesg"))
    warnings = r_warnings(res, "emmeans") + _df_warnings(t, notes, key, est_to) + _non_estimable(t, est_to)
    prov = dict(fit.provenance)
    prov.update({"r_function": f"emmeans::{kind}", **df_kw, "level": float(level)})
    return EMMResult(table=t, specs=specs_t, by=_str_tuple(v["by_vars"]), kind=kind, var=var, df_method=key,
                     level=float(level), sigma=float(fit.sigma), notes=notes, warnings=tuple(warnings),
                     provenance=prov, _grid=v["grid"], _fit=fit)


def lmm_emm(fit: Any, specs: Any, *, var: str | None = None, by: Any, df_method: str, level: float, at: Any,
            type: str | None) -> EMMResult:  # noqa: A002 - emmeans' name
    """What :func:`emmeans` (``var=None``) and :func:`emtrends` run on an :class:`mixedeval.LMMFit`
    (its ``_emmeans`` / ``_emtrends`` methods)."""
    require_no_type(type)
    return _emm(fit, specs, by, df_method, level, at, var)


def emmeans(fit: Any, specs: str | Sequence[str], by: str | Sequence[str] | None = None,
            df_method: str = "satterthwaite", level: float = 0.95,
            at: Mapping[str, Any] | None = None, *, type: str | None = None,  # noqa: A002
            higher_is_better: bool | None = None) -> EMMResult:
    """Estimated marginal means of ``specs`` (per ``by`` group): ``emmeans::emmeans``.

    For a GLMM fit (:func:`mixedeval.glmm`) the df are asymptotic and ``type`` chooses the
    scale (``"response"``, the default: probabilities / rates; ``"link"``); the result is a
    :class:`mixedeval.inference._glmm_infer.GLMMEMMResult`. ``type`` is not used for LMMs. For a
    clmm fit (:func:`mixedeval.clmm`) the means are on the latent scale
    (``fit.emmeans(mode="prob")`` gives category probabilities). Each fit class runs this through
    its own ``_emmeans`` method: the model family owns its R calls.

    ``df_method``: ``"satterthwaite"`` (default), ``"kenward-roger"`` (REML fits; small data)
    or ``"asymptotic"``; passed as ``lmer.df`` together with ``lmerTest.limit`` and
    ``pbkrtest.limit`` equal to the number of rows, so the df are finite at any size.
    ``at`` fixes covariate values (``{"src_length": [10, 30]}``); otherwise emmeans averages
    over factor levels with equal weights and holds covariates at their means.
    ``higher_is_better``: the score's direction, declared once for the means' leaderboard,
    headline, differences, the report and the command line (None: from the response's name,
    ``ter`` lower; an unknown name higher, said in ``direction.note``).
    """
    run = fit_method(fit, "_emmeans", "emmeans", "mixedeval.lmm, mixedeval.glmm or mixedeval.clmm")
    return with_direction(run(specs, by=by, df_method=df_method, level=level, at=at, type=type), higher_is_better)


def emtrends(fit: Any, specs: str | Sequence[str], var: str, by: str | Sequence[str] | None = None,
             df_method: str = "satterthwaite", level: float = 0.95,
             at: Mapping[str, Any] | None = None, *, type: str | None = None) -> EMMResult:  # noqa: A002
    """Slopes of the numeric covariate ``var`` per level of ``specs``: ``emmeans::emtrends``.

    For a GLMM fit, ``type`` is ``"link"`` (default: slopes of the linear predictor) or
    ``"response"`` (slopes of the mean, ``regrid = "response"``).

    The slope column is ``trend`` (emmeans' ``<var>.trend``); df as in :func:`emmeans`.
    """
    if not isinstance(var, str) or not var:
        raise DataError("var must name a numeric covariate, e.g. var='src_length'")
    run = fit_method(fit, "_emtrends", "emtrends", "mixedeval.lmm or mixedeval.glmm")
    return run(specs, var=var, by=by, df_method=df_method, level=level, at=at, type=type)


def _check_weights(emm: EMMResult, weights: Mapping[str, Sequence[float]], by_t: tuple[str, ...]) -> dict[str, list[float]]:
    t = emm.table
    n_groups = len(t.drop_duplicates(list(by_t))) if by_t else 1
    n_levels = len(t) // n_groups
    out: dict[str, list[float]] = {}
    for name, w in weights.items():
        arr = np.asarray(contrast_weights(name, w), dtype=float)
        if arr.ndim != 1 or arr.size != n_levels or not np.all(np.isfinite(arr)):
            raise DataError(f"custom contrast {name!r} needs {n_levels} finite weights (one per level, in the order "
                            f"of the table within each by group); got {arr.size}")
        out[str(name)] = arr.tolist()
    if not out:
        raise DataError("custom contrasts: give at least one {name: weights} entry")
    return out


def _effect_size_name(effect_size: str) -> str:
    key = str(effect_size).lower()
    if key not in EFFECT_SIZES:
        raise DataError(f"effect_size {effect_size!r} is not one of {', '.join(EFFECT_SIZES)} (the standardizer: "
                        "'total' = all variance components, 'residual' = the residual SD as emmeans' eff_size)")
    return key


def total_sd(fit: Any) -> float:
    """``sqrt(var_random + sigma^2)``: the SD of one observation around the fixed-effect
    prediction (all variance components; random slopes averaged over the data as Johnson 2014),
    the standardizer of ``effect_size="total"``.

    With random intercepts only (every VarCorr row an ``(Intercept)`` variance) Johnson's average
    ``mean_i z_i' Sigma z_i`` is the variance itself, so the sum of the ``random`` table's
    variances is used and no R call is needed; otherwise :func:`variance_parts`."""
    rnd = getattr(fit, "random", None)
    if "r2_parts" not in fit._cache and rnd is not None and len(rnd) and rnd["term2"].isna().all() \
            and set(rnd["term"].dropna()) <= {"(Intercept)"} and rnd["term"].isna().sum() == 1:
        return float(np.sqrt(float(np.sum(np.asarray(rnd["variance"], dtype=float)))))
    p = variance_parts(fit)
    return float(np.sqrt(p.var_random + p.var_residual))


def contrasts(emm: EMMResult, method: str | Mapping[str, Sequence[float]] = "pairwise", adjust: str = "holm",
              by: str | Sequence[str] | None = None, ref: Any = None, level: float | None = None,
              random_state: Any = 1, effect_size: str = "total") -> ContrastResult:
    """Contrasts of an :class:`EMMResult` (see :meth:`EMMResult.contrasts`)."""
    level = emm.level if level is None else require_level(level)
    adj = _adjust_name(adjust)
    es_key = _effect_size_name(effect_size)
    if emm._fit is None:
        raise DataError("these means carry no fitted model; compute them with fit.emmeans() or fit.emtrends()")
    use_grid_by = by is None
    by_t = emm.by if use_grid_by else _names(by, "by")
    if not use_grid_by:
        unknown = [b for b in by_t if b not in emm.table.columns]
        if unknown:
            raise DataError(f"by variable(s) {unknown} are not columns of the means ({list(emm.table.columns)})")
    weights = None
    if isinstance(method, Mapping):
        weights = _check_weights(emm, method, by_t)
        r_method: Any = weights
        method_name = "custom"
    else:
        if method not in METHODS:
            raise DataError(f"method {method!r} is not one of {', '.join(METHODS)} (or a dict of custom weights)")
        r_method = method_name = method
    r_ref = _ref_arg(ref, method_name)
    seed = r_seed(random_state) if adj == "mvt" else None
    res = _bridge.emm_contrast(emm._fit, emm._grid, method=r_method, adjust=adj, level=level, by=list(by_t) or None,
                               use_grid_by=use_grid_by, ref=r_ref, r_seed=seed, eff_size=(es_key == "residual"))
    v = res.value
    labels = ["contrast"] + list(_str_tuple(v["by_vars"]))
    stat = statistic_column(emm.df_method)
    t = _tidy(v, "estimate", emm.df_method, {"p_value": "p_adj"})
    cols = {c: t[c] for c in t.columns}
    cols["p_value"] = np.asarray(v["p_raw"], dtype=float)
    est = np.asarray(t["estimate"], dtype=float)
    if es_key == "total":
        sd = total_sd(emm._fit)
        cols["effect_size"] = est / sd
        cols["effect_size_conf_low"] = cols["effect_size_conf_high"] = np.full(len(est), np.nan)
    else:
        es = v["eff_size"]["table"]
        if len(es) != len(t) or [str(x) for x in es["contrast"]] != [str(x) for x in t["contrast"]]:
            raise MixedEvalError("emmeans' eff_size returned other contrasts than contrast() for the same "
                                 f"arguments ({list(es['contrast'])[:4]} vs {list(t['contrast'])[:4]})")
        sd = float(emm._fit.sigma)
        for c in ("effect_size", "effect_size_conf_low", "effect_size_conf_high"):
            cols[c] = np.asarray(es[c], dtype=float)
    cols["effect_size_sd"] = np.full(len(est), sd)
    order = labels + [stat if c == "<statistic>" else c for c in CONTRAST_COLUMNS]
    t = pd.DataFrame({c: cols[c] for c in order}, copy=False)  # one frame in the final column order
    notes, p_adj, ci_adj = _applied_adjustments(v)
    warnings = r_warnings(res, "emmeans")
    warnings += _adjust_warnings(adj, p_adj, ci_adj, warnings)
    warnings += _df_warnings(t, notes, emm.df_method, "estimate") + _non_estimable(t, "estimate")
    prov = dict(emm.provenance)
    prov.update({"r_function": "emmeans::contrast", "method": method_name, "adjust": adj, "p_adjust": p_adj,
                 "ci_adjust": ci_adj, "level": level, "effect_size": es_key, "effect_size_sd": sd})
    if es_key == "residual":
        prov["effect_size_function"] = "emmeans::eff_size(sigma = sigma(m), edf = df.residual(m))"
    if adj == "mvt":
        prov["random_state"] = seed
    return ContrastResult(table=t, method=method_name, adjust=adj, p_adjust=p_adj, ci_adjust=ci_adj,
                          effect_size=es_key, level=level, df_method=emm.df_method, by=_str_tuple(v["by_vars"]),
                          weights=weights, notes=notes, warnings=tuple(warnings), provenance=prov, _grid=v["grid"],
                          _fit=emm._fit)
