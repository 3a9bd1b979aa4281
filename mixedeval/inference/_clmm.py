"""Cumulative link mixed models for ordered ratings, fitted by R's ``ordinal::clmm``.

:func:`clmm` fits ``ordinal::clmm(formula, data, link, threshold, nAGQ)`` (Christensen 2022,
*ordinal: Regression Models for Ordinal Data*; Agresti 2010, *Analysis of Ordinal Categorical
Data*, ch. 10) to a response with K >= 3 ordered categories (human evaluation on a 1-5 scale)
and returns a :class:`CLMMFit` whose tables equal what R prints (``summary(m)``):

* the model is ``link(P(Y <= j)) = theta_j - x' beta - z' u`` for ``j = 1..K-1``: the
  ``thresholds`` theta (cut-points on the latent scale, in their own table) and the fixed effects
  beta, whose positive values move ratings **up**;
* ``fixed`` (also ``table``): term, estimate, std_error, z_value, p_value (Wald z tests of
  ``summary(m)$coefficients``), conf_low, conf_high (Wald intervals ``estimate -+
  qnorm(1 - (1 - level) / 2) * std_error``, what ``confint(m)`` gives for clmm), and for the
  logit link ``odds_ratio = exp(estimate)`` with ``odds_ratio_conf_low/high`` (the exponentiated
  bounds): the cumulative odds ratio of a rating **above** any cut-point (the same for every j:
  proportional odds);
* ``thresholds``: term (``"1|2"``, ...), estimate, std_error, z_value, conf_low, conf_high (R prints
  no p-value for them: a threshold of 0 is no hypothesis);
* ``random``: ``ordinal::VarCorr(m)`` in the layout of the LMM table (group, term, term2,
  variance, std_dev, corr), with no residual row (the latent residual variance is fixed by the
  link: pi^2/3 for logit, 1 for probit);
* ``loglik``, ``aic``, ``bic``, ``nobs``, ``ngroups``; ``converged`` is nlminb's code 0 with
  ``max|gradient| <= 0.002`` (lme4's gradient tolerance) and a positive-definite Hessian; failures
  are ``convergence`` / ``hessian`` warnings. ``singular`` flags a random-effect standard deviation
  (a diagonal element of clmm's ``ST`` factor) below 1e-4, as lme4's ``isSingular`` does for theta.

Inference beyond the coefficient tables: :meth:`CLMMFit.emmeans` (``emmeans::emmeans`` with
``mode="latent"``, ``"prob"`` or ``"mean.class"``; ``me.emmeans(fit, ...)`` gives the latent
scale) and its ``.contrasts()`` (z tests; odds ratios for the logit link on the latent scale),
and ``me.compare(m0, m1)`` (the likelihood-ratio test ordinal's ``anova`` prints; clmm fits are
ML fits, so nothing is refitted).

The response: integers (the observed values, sorted, are the categories), an ordered pandas
Categorical (its category order), or any column with an explicit order in
``levels={"rating": [...]}``. A string or unordered categorical response without ``levels`` is an
error (its order cannot be guessed), and so is one with fewer than three categories (use
``me.glmm(..., family="binomial")`` for two).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..data._formula import parse_formula
from ..data.table import as_pandas
from ..data.validate import require_level, require_unique_columns
from ..engine import _bridge
from ..engine.conditions import r_warnings
from ..errors import DataError
from .._random import r_seed
from ..results import ResultMixin, ResultWarning
from ._fit_common import FitResultMixin
from ._lmm import prepare_model_data, r_provenance
from ._emm_tables import (
    METHODS,
    ContrastResult,
    _adjust_name,
    _adjust_warnings,
    _applied_adjustments,
    _at_arg,
    _names,
    _ref_arg,
    _str_tuple,
    _z_contrast_table,
    require_no_type,
    emm_arguments,
)

LINKS = ("logit", "probit", "cloglog", "loglog", "cauchit")
THRESHOLDS = ("flexible", "symmetric", "symmetric2", "equidistant")
#: lme4's default tolerance for the absolute gradient at the optimum (check.conv.grad)
GRAD_TOL = 2e-3
#: condition number of the Hessian above which ordinal's documentation calls a model ill defined
COND_H_MAX = 1e6
#: a random-effect standard deviation (clmm's ST diagonal) below this is a singular fit
SINGULAR_TOL = 1e-4

FIXED_COLUMNS = ("term", "estimate", "std_error", "z_value", "p_value", "conf_low", "conf_high")
THRESHOLD_COLUMNS = ("term", "estimate", "std_error", "z_value", "conf_low", "conf_high")
#: emmeans' modes for ordinal models -> the name of the estimate column
EMM_MODES = {"latent": "emmean", "prob": "prob", "mean.class": "mean_class"}


@dataclass(frozen=True, repr=False)
class CLMMFit(FitResultMixin):
    """A fitted cumulative link mixed model (see :func:`clmm`)."""

    formula: str
    response: str
    response_levels: tuple[str, ...]
    link: str
    threshold: str
    fixed: Any
    thresholds: Any
    random: Any
    loglik: float
    aic: float
    bic: float
    npar: int
    nobs: int
    ngroups: dict[str, int]
    singular: bool
    converged: bool
    nagq: int
    level: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    data: Any = field(repr=False)
    factors: tuple[str, ...] = ()
    _model: Any = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    _print_tables = ("fixed", "thresholds", "random")
    _dict_keys = ("formula", "response", "response_levels", "link", "threshold", "fixed", "thresholds", "random",
                  "loglik", "aic", "bic", "npar", "nobs", "ngroups", "singular", "converged", "nagq", "level",
                  "warnings", "provenance")

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"Cumulative link mixed model ({self.link} link, ordinal::clmm): {self.formula}"

    def _scalars(self):
        return [("nobs", self.nobs), ("groups", self.ngroups), ("categories", " < ".join(self.response_levels)),
                ("logLik", f"{self.loglik:.6g}"), ("AIC", f"{self.aic:.6g}"), ("BIC", f"{self.bic:.6g}"),
                ("nAGQ", self.nagq), ("singular", self.singular), ("converged", self.converged)]

    def emmeans(self, specs: str | Sequence[str], by: str | Sequence[str] | None = None, mode: str = "latent",
                level: float = 0.95, at: Mapping[str, Any] | None = None) -> "CLMMEMMResult":
        """Estimated marginal means by emmeans (:func:`clmm_emmeans`)."""
        return clmm_emmeans(self, specs, by=by, mode=mode, level=level, at=at)

    # ------------------- what the public function mixedeval.emmeans runs on a clmm fit
    def _emmeans(self, specs, *, by, df_method: str, level: float, at, type: str | None):  # noqa: A002
        require_no_type(type)  # latent scale; fit.emmeans(mode="prob") for category probabilities
        return self.emmeans(specs, by=by, level=level, at=at)


def _label(v: Any) -> str:
    """A category label: integral numbers without a trailing ``.0``."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, (np.integer, np.bool_)):
        return str(v.item())
    return str(v)


def _response_order(s: pd.Series, name: str, given: Sequence[Any] | None) -> tuple[list[str], list[ResultWarning]]:
    """The ordered categories of the response and warnings about categories never observed."""
    ws: list[ResultWarning] = []
    present = s.dropna()
    if given is not None:
        order = [_label(v) for v in given]
        if len(set(order)) != len(order):
            raise DataError(f"levels for the response {name!r} repeat a value: {order}")
    elif isinstance(s.dtype, pd.CategoricalDtype):
        if not s.cat.ordered:
            raise DataError(f"response {name!r} is an unordered Categorical, so its category order cannot be taken "
                            f"as the rating order; make it ordered (df[{name!r}].cat.as_ordered(), after "
                            f"reorder_categories if needed) or pass levels={{{name!r}: [lowest, ..., highest]}}")
        order = [_label(c) for c in s.cat.categories]
    elif pd.api.types.is_bool_dtype(s.dtype):
        raise DataError(f"response {name!r} is boolean (two categories); a cumulative link model needs at least 3 "
                        "ordered categories: for a binary response use me.glmm(..., family='binomial')")
    elif pd.api.types.is_numeric_dtype(s.dtype):
        vals = present.to_numpy(dtype=float)
        if not np.all(np.isfinite(vals)) or not np.all(vals == np.round(vals)):
            raise DataError(f"response {name!r} has non-integer values (e.g. {vals[vals != np.round(vals)][:3]}); "
                            f"ordered ratings must be integers, an ordered Categorical, or come with their order in "
                            f"levels={{{name!r}: [...]}}")
        order = [_label(v) for v in np.unique(vals)]
    else:
        raise DataError(f"response {name!r} holds text, whose order cannot be guessed; give the order from lowest "
                        f"to highest: levels={{{name!r}: ['bad', 'fair', 'good']}} (or an ordered pd.Categorical)")
    observed = set(present.map(_label))
    extra = sorted(observed - set(order))
    if extra:
        raise DataError(f"response {name!r} has values {extra[:5]} that are not among its levels {order}")
    unused = [c for c in order if c not in observed]
    if unused:
        ws.append(ResultWarning("unused_levels", f"response categories never observed were dropped: {unused} "
                                "(their thresholds cannot be estimated)", "mixedeval"))
        order = [c for c in order if c in observed]
    if len(order) < 3:
        raise DataError(f"response {name!r} has {len(order)} observed categories ({order}); a cumulative link model "
                        "needs at least 3 ordered categories: for a binary response use "
                        "me.glmm(..., family='binomial')")
    return order, ws


def _response_codes(s: pd.Series, order: list[str]) -> np.ndarray:
    """1-based codes of the response in ``order`` (NaN where missing)."""
    pos = {c: i + 1.0 for i, c in enumerate(order)}
    return np.array([np.nan if pd.isna(v) else pos[_label(v)] for v in s.astype(object)], dtype=float)


def _coef_table(raw: Any, columns: Sequence[str], odds: bool) -> pd.DataFrame:
    if raw is None:
        tab = pd.DataFrame({c: pd.Series(dtype=object if c == "term" else float) for c in columns})
    else:
        tab = raw.copy()
        tab["term"] = tab["term"].astype(str)
        tab = tab.reindex(columns=list(columns)).reset_index(drop=True)
    if odds:
        tab["odds_ratio"] = np.exp(tab["estimate"].astype(float))
        tab["odds_ratio_conf_low"] = np.exp(tab["conf_low"].astype(float))
        tab["odds_ratio_conf_high"] = np.exp(tab["conf_high"].astype(float))
    return tab


def _convergence(conv: Mapping[str, Any]) -> tuple[bool, list[ResultWarning]]:
    ws = []
    code, grad, cond = int(conv["code"]), float(conv["max_grad"]), float(conv["cond_h"])
    if code != 0:
        ws.append(ResultWarning("convergence", f"nlminb stopped with code {code}: {conv['message']}", "ordinal"))
    if not grad <= GRAD_TOL:
        ws.append(ResultWarning("convergence", f"max|gradient| = {grad:.3g} at the optimum exceeds {GRAD_TOL} "
                                "(lme4's tolerance): the fit may not have converged", "ordinal"))
    if not np.isfinite(cond):
        ws.append(ResultWarning("hessian", "the Hessian is not positive definite: standard errors are unreliable; "
                                "simplify the random effects or check for empty categories", "ordinal"))
    elif cond > COND_H_MAX:
        ws.append(ResultWarning("hessian", f"condition number of the Hessian {cond:.3g} exceeds {COND_H_MAX:.0e}: "
                                "the model is nearly unidentifiable (ordinal's cond.H)", "ordinal"))
    return not ws, ws


def _build(res, formula, response, order, link, threshold, nagq, level, frame, pre, factors) -> CLMMFit:
    v = res.value
    warnings = list(pre) + r_warnings(res, "ordinal")
    converged, conv_ws = _convergence(v["convergence"])
    warnings += [w for w in conv_ws if w not in warnings]
    st = np.atleast_1d(np.asarray(v["st_diag"], dtype=float))
    singular = bool(np.any(np.abs(st) < SINGULAR_TOL))
    if singular:
        warnings.append(ResultWarning("singular", "boundary (singular) fit: a random-effect standard deviation is "
                                      f"estimated below {SINGULAR_TOL} (or a correlation as +-1)", "mixedeval"))
    names_ = v["ngroups_names"]
    names_ = [names_] if isinstance(names_, str) else list(names_)
    counts = np.atleast_1d(v["ngroups"]).tolist()
    prov = r_provenance()
    prov.update({"ordinal": str(v["ordinal_version"]), "estimator": "ML", "r_function": "ordinal::clmm",
                 "link": link, "threshold": threshold, "nAGQ": int(nagq),
                 "approximation": "Laplace" if nagq == 1 else f"adaptive Gauss-Hermite ({nagq} points)"
                 if nagq > 1 else f"Gauss-Hermite ({-nagq} points)"})
    return CLMMFit(
        formula=formula, response=response, response_levels=tuple(order), link=link, threshold=threshold,
        fixed=_coef_table(v["fixed"], FIXED_COLUMNS, link == "logit"),
        thresholds=_coef_table(v["thresholds"], THRESHOLD_COLUMNS, False),
        random=v["random"],
        loglik=float(v["loglik"]), aic=float(v["aic"]), bic=float(v["bic"]), npar=int(v["npar"]),
        nobs=int(v["nobs"]), ngroups={str(k): int(c) for k, c in zip(names_, counts)}, singular=singular,
        converged=converged, nagq=int(nagq), level=float(level), warnings=tuple(warnings), provenance=prov,
        data=frame, factors=tuple(factors), _model=v["model"],
    )


def _check_options(link: str, threshold: str, nagq: Any) -> int:
    if link not in LINKS:
        raise DataError(f"link must be one of {', '.join(LINKS)}, not {link!r}")
    if threshold not in THRESHOLDS:
        raise DataError(f"threshold must be one of {', '.join(THRESHOLDS)}, not {threshold!r}")
    if isinstance(nagq, bool) or not isinstance(nagq, (int, np.integer)) or nagq == 0:
        raise DataError(f"nagq must be a nonzero integer (1: Laplace; > 1: adaptive Gauss-Hermite points; < -1: "
                        f"standard Gauss-Hermite), not {nagq!r}")
    return int(nagq)


def clmm(
    formula: str,
    data: Any,
    link: str = "logit",
    *,
    threshold: str = "flexible",
    nagq: int = 1,
    level: float = 0.95,
    factors: Sequence[str] = (),
    levels: Mapping[str, Sequence[Any]] | None = None,
    reference: Mapping[str, Any] | None = None,
    allow_r_code: bool = False,
) -> CLMMFit:
    """Fit a cumulative link mixed model with ``ordinal::clmm`` (module docstring has the tables).

    Parameters
    ----------
    formula : ``"rating ~ system + (1|rater) + (1|item)"``; the response is a single column.
    data : pandas/polars DataFrame, pyarrow Table or file path. Never modified.
    link : ``"logit"`` (proportional odds; adds odds ratios), ``"probit"``, ``"cloglog"``,
        ``"loglog"`` or ``"cauchit"``.
    threshold : ``"flexible"`` (one free cut-point per adjacent pair), ``"symmetric"``,
        ``"symmetric2"`` or ``"equidistant"`` (clmm's structured thresholds).
    nagq : clmm's ``nAGQ``: 1 is the Laplace approximation; ``> 1`` adaptive and ``< -1``
        standard Gauss-Hermite quadrature with that many points (one random-effect term only).
    level : confidence level of the Wald intervals.
    factors, levels, reference : categorical coding as in :func:`mixedeval.lmm`; ``levels`` of the
        response column give the order of its categories, lowest first.
    allow_r_code : send a formula that fails the allow-list check verbatim (see :func:`mixedeval.lmm`).
    """
    nagq = _check_options(link, threshold, nagq)
    level = require_level(level)
    df = data if isinstance(data, pd.DataFrame) else as_pandas(data)
    require_unique_columns(df)
    if list(df.columns) != [str(c) for c in df.columns]:
        df = df.rename(columns=str)
    parsed = parse_formula(formula, [str(c) for c in df.columns], allow_r_code=allow_r_code)
    response = parsed.response
    if response is None or response not in df.columns:
        raise DataError(f"the response of {formula!r} must be one column holding the ratings (found {parsed.lhs!r})")
    if not parsed.grouping:
        raise DataError(f"formula {formula!r} has no random-effect term such as (1|rater); clmm needs at least one")
    if abs(nagq) > 1 and (len(parsed.random_expanded) != 1 or parsed.random_expanded[0][0]):
        raise DataError(f"nagq={nagq} (Gauss-Hermite quadrature) needs a single random intercept term such as "
                        "(1|rater); use nagq=1 (Laplace) for this model")
    order, pre = _response_order(df[response], response, (levels or {}).get(response))
    work = df.copy(deep=False)  # a new frame: the caller's is untouched
    work[response] = _response_codes(df[response], order)
    r_formula, frame, more = prepare_model_data(formula, work, factors=factors, levels=levels, reference=reference,
                                                allow_r_code=allow_r_code)
    res = _bridge.clmm_fit(r_formula, frame, response=response, response_levels=order, link=link,
                           threshold=threshold, nagq=nagq, level=float(level))
    return _build(res, formula, response, order, link, threshold, nagq, level, frame, pre + more, factors)


def clmm_lrt(fits: Sequence[CLMMFit], names: Sequence[str] | None = None,
             n_resamples: int | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Likelihood-ratio tests between nested clmm fits (what ordinal's ``anova(m0, m1, ...)``
    prints; ``me.compare`` dispatches here): the table (model, formula, npar, aic, bic, loglik,
    deviance, chisq, df, p_value, estimator "ML"; rows ordered by npar, each tested against the
    row above) and the provenance. clmm fits are ML fits, so nothing is refitted."""
    if len(fits) < 2:
        raise DataError("compare() needs at least two fitted models, e.g. me.compare(null_fit, full_fit)")
    if n_resamples is not None:
        raise DataError("the parametric bootstrap (n_resamples) is not available for clmm fits; "
                        "use the chi-square test (n_resamples=None)")
    labels = [f"model_{i + 1}" for i in range(len(fits))] if names is None else [str(n) for n in names]
    if len(labels) != len(fits) or len(set(labels)) != len(labels):
        raise DataError(f"names must give one distinct name per model, got {labels} for {len(fits)} models")
    if len({f.nobs for f in fits}) > 1:
        raise DataError("the clmm fits use different numbers of rows; likelihood-ratio tests need the same rows")
    if len({(f.response, f.response_levels) for f in fits}) > 1:
        raise DataError("the clmm fits have different responses or response categories; fit them to the same ratings")
    tab = _bridge.clmm_compare(fits, model_names=labels)
    order = [labels.index(str(m)) for m in tab["model"]]
    tab.insert(1, "formula", [fits[i].formula for i in order])
    tab["npar"] = tab["npar"].astype(int)
    for c in ("aic", "bic", "loglik", "chisq", "df", "p_value"):
        tab[c] = pd.to_numeric(tab[c]).astype(float)
    tab["deviance"] = -2.0 * tab["loglik"]
    tab["estimator"] = "ML"
    cols = ["model", "formula", "npar", "aic", "bic", "loglik", "deviance", "chisq", "df", "p_value", "estimator"]
    prov = dict(fits[0].provenance)
    prov.update({"r_function": "ordinal::anova.clm (likelihood-ratio test)", "estimator": "ML", "refit_ml": False})
    return tab.reindex(columns=cols).reset_index(drop=True), prov


# ------------------------------------------------------------------------------------ emmeans
@dataclass(frozen=True, repr=False, kw_only=True)
class CLMMEMMResult(ResultMixin):
    """Estimated marginal means of a clmm fit (``emmeans::emmeans(m, specs, by, mode)``).

    ``table``: <spec columns>, <by columns>, the estimate (``emmean`` on the latent scale,
    ``prob`` for ``mode="prob"`` with the response categories as the first ``by`` column,
    ``mean_class`` for ``mode="mean.class"``), std_error, df (Inf: asymptotic), conf_low,
    conf_high (Wald, on the scale of the estimate; probabilities' bounds can leave [0, 1] as
    emmeans prints them).
    """

    table: Any
    specs: tuple[str, ...]
    by: tuple[str, ...]
    mode: str
    level: float
    notes: tuple[str, ...]
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    _grid: Any = field(default=None, repr=False, compare=False)
    _fit: Any = field(default=None, repr=False, compare=False)

    _main_table = "table"

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"Estimated marginal means of a cumulative link mixed model (emmeans, mode={self.mode!r})"

    def contrasts(self, method: str = "pairwise", adjust: str = "holm", by: str | Sequence[str] | None = None,
                  ref: str | int | Sequence[str | int] | None = None, level: float | None = None,
                  random_state: Any = 1) -> ContrastResult:
        """Contrasts of the means (``emmeans::contrast``; :func:`clmm_contrasts`)."""
        return clmm_contrasts(self, method=method, adjust=adjust, by=by, ref=ref, level=level,
                              random_state=random_state)


def clmm_emmeans(fit: CLMMFit, specs: str | Sequence[str], by: str | Sequence[str] | None = None,
                 mode: str = "latent", level: float = 0.95, at: Mapping[str, Any] | None = None) -> CLMMEMMResult:
    """Estimated marginal means of a clmm fit: ``emmeans::emmeans(m, specs, by, at, mode)``.

    ``mode="latent"`` (default): the latent variable ``x' beta`` minus the average threshold, so
    higher means higher ratings; its contrasts are log cumulative odds ratios for the logit link
    (``odds_ratio`` columns). ``mode="prob"``: the probability of each response category per
    cell (the response is the first ``by`` column, so contrasts are differences of category
    probabilities). ``mode="mean.class"``: the expected category number (1..K) per cell.
    """
    if mode not in EMM_MODES:
        raise DataError(f"mode must be one of {', '.join(EMM_MODES)}, not {mode!r}")
    specs_t, by_t, level = emm_arguments(fit, specs, by, level)
    res = _bridge.clmm_emmeans(fit, specs=list(specs_t), by=list(by_t) or None, at=_at_arg(fit, at), mode=mode,
                               level=float(level))
    v = res.value
    est = EMM_MODES[mode]
    labels = list(_str_tuple(v["pri_vars"])) + list(_str_tuple(v["by_vars"]))
    t = v["table"].rename(columns={str(v["est_name"]): est})
    t = t[labels + [est, "std_error", "df", "conf_low", "conf_high"]].reset_index(drop=True)
    prov = dict(fit.provenance)
    prov.update({"r_function": "emmeans::emmeans", "mode": mode, "level": float(level)})
    return CLMMEMMResult(table=t, specs=specs_t, by=_str_tuple(v["by_vars"]), mode=mode, level=float(level),
                         notes=_str_tuple(v.get("mesg")), warnings=tuple(r_warnings(res, "emmeans")),
                         provenance=prov, _grid=v["grid"], _fit=fit)


def clmm_contrasts(emm: CLMMEMMResult, method: str = "pairwise", adjust: str = "holm",
                   by: str | Sequence[str] | None = None, ref: Any = None, level: float | None = None,
                   random_state: Any = 1) -> ContrastResult:
    """Contrasts of clmm means: ``emmeans::contrast(grid, method, adjust, by, ref)`` summarised with
    z tests. ``table``: contrast, <by columns>, estimate, std_error, df (Inf), z_value, p_value
    (unadjusted), p_adj (adjusted by ``p_adjust``), conf_low, conf_high (adjusted by
    ``ci_adjust``), and for the logit link on the latent scale ``odds_ratio``,
    ``odds_ratio_conf_low``, ``odds_ratio_conf_high`` (the exponentiated estimate and bounds: the
    cumulative odds ratio of a higher rating). No standardized effect size (``effect_size="none"``)."""
    level = emm.level if level is None else require_level(level)
    adj = _adjust_name(adjust)
    if method not in METHODS:
        raise DataError(f"method {method!r} is not one of {', '.join(METHODS)}")
    use_grid_by = by is None
    by_t = emm.by if use_grid_by else _names(by, "by")
    unknown = [b for b in by_t if b not in emm.table.columns]
    if unknown:
        raise DataError(f"by variable(s) {unknown} are not columns of the means ({list(emm.table.columns)})")
    seed = r_seed(random_state) if adj == "mvt" else None
    res = _bridge.emm_contrast(emm._fit, emm._grid, method=method, adjust=adj, level=level, by=list(by_t) or None,
                               use_grid_by=use_grid_by, ref=_ref_arg(ref, method), r_seed=seed, eff_size=False)
    v = res.value
    t = _z_contrast_table(v).reset_index(drop=True)
    if emm.mode == "latent" and emm._fit.link == "logit":
        for src, dst in (("estimate", "odds_ratio"), ("conf_low", "odds_ratio_conf_low"),
                         ("conf_high", "odds_ratio_conf_high")):
            t[dst] = np.exp(np.asarray(t[src], dtype=float))
    notes, p_adj, ci_adj = _applied_adjustments(v)
    warnings = r_warnings(res, "emmeans")
    warnings += _adjust_warnings(adj, p_adj, ci_adj, warnings)
    prov = dict(emm.provenance)
    prov.update({"r_function": "emmeans::contrast", "method": method, "adjust": adj, "p_adjust": p_adj,
                 "ci_adjust": ci_adj, "level": level, "effect_size": "none"})
    if adj == "mvt":
        prov["random_state"] = seed
    return ContrastResult(table=t, method=method, adjust=adj, p_adjust=p_adj, ci_adjust=ci_adj, effect_size="none",
                          level=level, df_method="asymptotic", by=_str_tuple(v["by_vars"]), weights=None,
                          notes=notes, warnings=tuple(warnings), provenance=prov, _grid=v["grid"], _fit=emm._fit)
