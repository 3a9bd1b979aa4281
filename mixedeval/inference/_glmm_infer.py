"""Inference for GLMM fits: Type III Wald chi-square tests, likelihood-ratio tests, estimated
marginal means on the response scale with ratio / difference contrasts, and optimizer checks.

* :func:`glmm_anova`: ``car::Anova(m, type = 3)`` (Fox & Weisberg, *An R Companion to Applied
  Regression*) on the model **refitted with sum-to-zero contrasts** (``contr.sum``) for every
  factor of the fixed part. Type III tests drop one term while keeping its interactions; with
  treatment contrasts a main effect's test would then be the effect at the reference level of
  the factors it interacts with, not the averaged main effect. The refit is the same model
  (same likelihood and fitted values, reparametrised), so the coefficients of ``fit.fixed`` keep
  their treatment coding. Columns: term (car's rows, ``(Intercept)`` included), chisq, df, p_value.
* :func:`glmm_lrt`: lme4's ``anova(m0, m1, ...)`` (glmmTMB's for glmmTMB fits): GLMMs are
  fitted by ML, so there is never a refit and never a REML likelihood (lme4 has no REML for
  GLMMs). The 50:50 mixture p-value and pbkrtest's parametric bootstrap for a variance component
  work as for LMMs (lme4 fits; :func:`mixedeval.compare`).
* :func:`glmm_emmeans` / :func:`glmm_emtrends`: ``emmeans::emmeans`` on the fitted model; df are
  asymptotic (``df = Inf``, statistic ``z_value``). ``type="response"`` (default) back-transforms
  the means and intervals (probabilities for binomial, rates for Poisson / negative binomial,
  mean proportions for beta); ``type="link"`` keeps the link scale. The mean column is ``emmean``
  whatever the scale; ``GLMMEMMResult.estimate_label`` says what it holds (``prob``, ``rate``,
  ``response`` or ``link``).
* conditional vs population-averaged (``GLMMEMMResult.response_scale``): the plain back-transform
  ``linkinv(emmean)`` is the mean **for a typical group** (every random effect at zero), the
  *subject-specific* mean of Zeger, Liang & Albert (1988, Biometrics 44:1049). With a logit link
  and item SD 1.5 it is far from the observed accuracy (a typical question is easier than the
  average question when most are easy). ``marginal=True`` / ``"bias_adj"`` gives the
  *population-averaged* mean, averaged over the random-effect distribution, with emmeans' bias
  adjustment (``emmeans(..., type = "response", bias.adj = TRUE, sigma = sigma)``: Lenth, emmeans
  vignette "transformations", section "Bias adjustment", cbpp example: ``E[h(eta + u)] ~ h(eta) +
  h''(eta) sigma^2 / 2``, a second-order Taylor approximation) where ``sigma = sqrt(sum of the
  random-intercept variances)`` (the total SD of the random effects, as in the vignette).
  ``marginal="integrate"`` computes the same average exactly, ``h(eta) = E[linkinv(eta + sigma Z)]``
  with ``Z ~ N(0, 1)``, by quadrature (trapezoidal rule on a fine grid, geometric convergence; see
  ``me_glmm_integrated_link`` in ``r/glmm.R``) installed as the emmeans grid's link, so SEs are the
  delta method through ``h'(eta) = E[mu.eta(eta + sigma Z)]`` and intervals ``h(eta +- z SE)``;
  the uncertainty of ``sigma`` itself is ignored (as emmeans does). The second-order adjustment
  errs by ~0.015 in probability at sigma ~ 1.1 and more beyond: the exact value is computed with
  every ``"bias_adj"`` result and a ``bias_adj_approximation`` warning says when they differ by more
  than 0.005 (1 % for rates). For an accuracy in a headline use ``marginal="integrate"``: on
  balanced data it reproduces the observed accuracy per system. With factors averaged over, both
  modes transform the averaged link-scale mean (emmeans' order), not average marginal means.
  Random slopes are refused (the random-effect variance then depends on the covariates).
* contrasts (:meth:`GLMMEMMResult.contrasts`): ``scale="ratio"`` (default) contrasts the
  link-scale means; on the response scale of a logit link these are **odds ratios**, of a log
  link **rate ratios** (emmeans back-transforms ``exp(difference)``; the z test is done on the
  log scale, null value 1; the SE is the delta-method SE of the ratio). ``scale="difference"``
  contrasts the means after ``emmeans::regrid`` (response scale): **risk differences**
  (probabilities) or rate differences, with delta-method SEs and z tests against 0. ``p_value``
  is unadjusted, ``p_adj`` adjusted as in the LMM layer (holm by default). From population-averaged
  means the differences are population-averaged (``regrid(bias.adjust = TRUE, sigma = sigma)``, or
  the integrated link); ratios are always **conditional** odds / rate ratios (for a typical group).
* :func:`glmm_check_optimizers`: refits with glmer's optimizers (bobyqa, Nelder_Mead,
  nloptwrap) and with ``nAGQ = 0`` against the fit's own setting, compared as for LMMs.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._random import r_seed
from ..data.validate import require_level
from ..engine import _bridge
from ..engine.conditions import r_warnings
from ..errors import DataError, RError
from ..results import ResultMixin, ResultWarning
from ._emm_tables import (
    _applied_adjustments,
    _at_arg,
    _names as _emm_names,
    _ref_arg,
    _str_tuple,
    _z_contrast_table,
    contrast_weights,
    emm_arguments,
)
from ._emm_answer import EMMAnswer
from ._options import GLMM_OPTIMIZERS, normalize_glmm_optimizer
from .optimizers import COLUMNS as OPT_COLUMNS, OptimizerCheck

ANOVA_COLUMNS = ("term", "chisq", "df", "p_value")
LRT_COLUMNS = ("model", "formula", "npar", "aic", "bic", "loglik", "deviance", "chisq", "df", "p_value", "estimator")
TYPES = ("response", "link")
#: marginal= modes: population-averaged response-scale means
MARGINAL_MODES = ("bias_adj", "integrate")
#: how far (absolute, probabilities; relative, other scales) the bias adjustment may stray from the exact integral
BIAS_ADJ_TOLERANCE = 0.005
_WHAT = {"prob": "probability", "rate": "rate"}
_WHATS = {"probability": "probabilities", "rate": "rates", "mean response": "mean responses"}
SCALES = ("ratio", "difference")
_ADJUST = {"holm": "holm", "tukey": "tukey", "bonferroni": "bonferroni", "sidak": "sidak", "fdr": "fdr", "bh": "BH",
           "by": "BY", "hochberg": "hochberg", "hommel": "hommel", "mvt": "mvt", "scheffe": "scheffe",
           "dunnettx": "dunnettx", "none": "none"}
_METHODS = ("pairwise", "revpairwise", "trt.vs.ctrl", "consec", "poly", "eff", "del.eff")


# ----------------------------------------------------------------------------- anova
@dataclass(frozen=True, repr=False)
class GLMMAnovaResult(ResultMixin):
    """Type III Wald chi-square tests of a GLMM (``car::Anova(type = 3)`` with ``contr.sum``).

    ``table``: term, chisq, df, p_value. ``sum_contrasts``: the factors recoded with contr.sum.
    """

    table: Any
    sum_contrasts: tuple[str, ...]
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _title = "Type III Wald chi-square tests (car::Anova), factors with sum-to-zero contrasts"


def glmm_anova(fit: Any, type: int | str = 3) -> GLMMAnovaResult:  # noqa: A002 - anova's name
    """Type III Wald chi-square tests of the fixed-effect terms (see the module docstring)."""
    if str(type).strip().lower() not in ("3", "iii"):
        raise DataError(f"type {type!r}: GLMM fits have Type III Wald chi-square tests only (type=3); compare nested "
                        "models with me.compare() for likelihood-ratio tests")
    res = _bridge.glmm_anova(fit)
    raw = res.value["table"]
    tab = pd.DataFrame({"term": [str(t) for t in raw["term"]], "chisq": np.asarray(raw["chisq"], dtype=float),
                        "df": np.asarray(raw["df"], dtype=float), "p_value": np.asarray(raw["p_value"], dtype=float)})
    sc = res.value.get("sum_contrasts")
    sc = () if sc is None else ((sc,) if isinstance(sc, str) else tuple(str(s) for s in sc))
    ws = r_warnings(res)
    ll = float(res.value["loglik"])
    if abs(ll - fit.loglik) > 1e-6 * max(1.0, abs(fit.loglik)):
        ws.append(ResultWarning("optimizer_disagreement", f"the sum-to-zero refit reached logLik {ll:.8g}, the fit "
                                f"{fit.loglik:.8g}: the optimizer stopped at different points (check_optimizers())",
                                "mixedeval"))
    prov = dict(fit.provenance)
    prov.update({"r_function": "car::Anova(type = 3)", "contrasts": "contr.sum", "anova_type": 3})
    return GLMMAnovaResult(table=tab, sum_contrasts=sc, warnings=tuple(ws), provenance=prov)


# ------------------------------------------------------------------------------- LRT
def glmm_lrt(fits: Sequence[Any], names: Sequence[str] | None):
    """Likelihood-ratio tests between GLMM fits: ``(table, warnings, provenance, ordered fits)``.

    ``table`` has the columns of :func:`mixedeval.compare` (estimator ``"ML"``) plus
    ``p_value_mixture`` when a model adds exactly one variance component (lme4 fits).
    """
    if len(fits) < 2:
        raise DataError("compare() needs at least two fitted models, e.g. me.compare(null_fit, full_fit)")
    for i, f in enumerate(fits):
        if getattr(f, "family", None) is None:  # not a GLMMFit (the only fit class with a family)
            raise DataError(f"argument {i + 1} is a {type(f).__name__}; GLMM fits (mixedeval.glmm) can only be "
                            "compared with other GLMM fits (a likelihood of another family is not comparable)")
    labels = [f"model_{i + 1}" for i in range(len(fits))] if names is None else [str(n) for n in names]
    if len(labels) != len(fits) or len(set(labels)) != len(labels):
        raise DataError(f"names must give one distinct name per model, got {labels}")
    engines = {f.r_function == "glmmTMB::glmmTMB" for f in fits}
    if len(engines) > 1:
        raise DataError("the fits mix lme4 and glmmTMB models; compare fits of one package (refit them alike)")
    if len({f.family for f in fits}) > 1:
        raise DataError(f"the fits have different families ({sorted({f.family for f in fits})}); a likelihood-ratio "
                        "test needs nested models of one family")
    if len({f.nobs for f in fits}) > 1:
        raise DataError("the models were fitted to different rows (" + ", ".join(
            f"{n}: {f.nobs}" for n, f in zip(labels, fits)) + "); drop rows with missing values first")
    chk = _bridge.glmm_compare_check(fits)
    if not chk["response_equal"]:
        raise DataError("the models were fitted to different response values; fit all models to the same data")
    res = _bridge.glmm_compare(fits, model_names=labels, mixture=chk["fixed_equal"])
    tab = res.value["table"].copy()
    order = [labels.index(str(m)) for m in tab["model"]]
    tab["model"] = [labels[i] for i in order]
    tab.insert(1, "formula", [fits[i].formula for i in order])
    if "deviance" not in tab.columns:  # glmmTMB's anova has no deviance column
        tab["deviance"] = -2 * pd.to_numeric(tab["loglik"]).astype(float)
    tab["npar"] = pd.to_numeric(tab["npar"]).astype(int)
    for c in ("aic", "bic", "loglik", "deviance", "chisq", "df", "p_value"):
        tab[c] = pd.to_numeric(tab[c]).astype(float)
    tab["estimator"] = "ML"
    tab = tab.reindex(columns=list(LRT_COLUMNS))
    pmix = np.atleast_1d(np.asarray(res.value["p_mixture"], dtype=float))
    if chk["fixed_equal"] and np.isfinite(pmix).any():
        tab["p_value_mixture"] = pmix
    prov = dict(fits[0].provenance)
    prov.update({"r_function": "lme4::anova.merMod" if fits[0].r_function.startswith("lme4") else "glmmTMB::anova",
                 "estimator": "ML", "refit_ml": False})
    return tab, r_warnings(res), prov, [fits[i] for i in order]


# --------------------------------------------------------------------------- emmeans
def _names(x: Any, what: str) -> tuple[str, ...]:
    return _emm_names(x, what, example="'system'")


def _type_name(type_: str | None, default: str) -> str:
    t = default if type_ is None else str(type_).lower()
    if t not in TYPES:
        raise DataError(f"type {type_!r} is not one of {', '.join(TYPES)}")
    return t


def _estimate_label(est_name: str, type_: str) -> str:
    return "link" if type_ == "link" else {"prob": "prob", "rate": "rate"}.get(est_name, "response")


@dataclass(frozen=True, repr=False, kw_only=True)
class GLMMContrastResult(ResultMixin):
    """Contrasts of GLMM means (see the module docstring).

    ``table``: contrast, <by columns>, estimate, std_error, df (Inf), z_value, p_value
    (unadjusted), p_adj (adjusted by ``p_adjust``), conf_low, conf_high. ``estimate_label`` says
    what ``estimate`` is: ``odds_ratio``, ``rate_ratio``, ``ratio`` (response-scale ratios of
    other links), ``difference`` (response scale, after regrid) or ``link_difference`` (the
    difference of link-scale means, e.g. a log odds ratio). ``response_scale``:
    ``"conditional"`` (for a typical group: every ratio, and differences of conditional means),
    ``"marginal"`` (differences of population-averaged means) or None (link scale);
    ``response_scale_note`` says it in words.
    """

    table: Any
    method: str
    adjust: str
    p_adjust: str
    ci_adjust: str
    type: str
    scale: str
    estimate_label: str
    level: float
    by: tuple[str, ...]
    notes: tuple[str, ...]
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    response_scale: str | None = None
    response_scale_note: str = ""
    _grid: Any = field(default=None, repr=False, compare=False)

    df_method = "asymptotic"

    @property
    def _title(self) -> str:  # type: ignore[override]
        title = f"Contrasts ({self.method}) of GLMM marginal means: {self.estimate_label.replace('_', ' ')}s (emmeans)"
        return f"{title}; {self.response_scale} (see response scale)" if self.response_scale else title

    def _scalars(self):
        out = [("estimate", self.estimate_label), ("p-value adjustment (p_adj)", self.p_adjust),
               ("interval adjustment", self.ci_adjust), ("confidence level", self.level)]
        return out + ([("response scale", self.response_scale_note)] if self.response_scale_note else [])


@dataclass(frozen=True, repr=False, kw_only=True)
class GLMMEMMResult(EMMAnswer, ResultMixin):
    """Estimated marginal means (or trends) of a GLMM.

    ``table``: <spec columns>, <by columns>, emmean (or trend), std_error, df (Inf), conf_low,
    conf_high. ``type``: ``"response"`` or ``"link"``; ``estimate_label``: what ``emmean``
    holds (``prob``, ``rate``, ``response``, ``link``).

    ``response_scale``: ``"conditional"`` (response scale, random effects at zero: the
    probability for a typical item), ``"marginal"`` (population-averaged: averaged over the
    random effects; what a user computes as accuracy) or None (link scale).
    ``marginal``: how the population average was taken (``"bias_adj"``, ``"integrate"``) or None;
    ``re_sd``: the random-effect SD averaged over (``sqrt`` of the summed random-intercept
    variances of ``re_groups``); ``integrated``: for ``"bias_adj"``, the exactly integrated means
    beside the approximation (None otherwise); ``response_scale_note``: all this in words (printed
    in the title and in ``to_dict()``). References: Zeger, Liang & Albert (1988, Biometrics
    44:1049) for subject-specific vs population-averaged means; Lenth, emmeans vignette
    "transformations" (bias adjustment in GLMMs).
    """

    table: Any
    specs: tuple[str, ...]
    by: tuple[str, ...]
    kind: str
    var: str | None
    type: str
    estimate_label: str
    level: float
    notes: tuple[str, ...]
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    response_scale: str | None = None
    marginal: str | None = None
    re_sd: float | None = None
    re_groups: tuple[str, ...] = ()
    integrated: tuple[float, ...] | None = None
    response_scale_note: str = ""
    higher_is_better: bool | None = None  # declared direction (None: from the response's name)
    _grid: Any = field(default=None, repr=False, compare=False)
    _fit: Any = field(default=None, repr=False, compare=False)

    df_method = "asymptotic"

    @property
    def _title(self) -> str:  # type: ignore[override]
        if self.kind == "emtrends":
            return f"Trends of {self.var} on the {self.type} scale (emmeans::emtrends)"
        title = f"Estimated marginal means on the {self.type} scale (emmeans)"
        return f"{title}: {self.response_scale_note}" if self.response_scale else title

    def _scalars(self):
        return [("response scale", self.response_scale_note)] if self.response_scale_note else []

    @property
    def estimate_column(self) -> str:
        return "trend" if self.kind == "emtrends" else "emmean"

    def _headline_contrasts(self) -> Any:
        """Differences of probabilities / rates (``regrid``) for ``type="response"``."""
        if len(self.table) > 1 and self.type == "response" and not self.by:
            return self.contrasts(method="pairwise", adjust="none", scale="difference").table
        return None

    def _difference_contrasts(self) -> Any:
        return self.contrasts(method="pairwise", adjust="none",
                              scale="difference" if self.type == "response" else "ratio").table

    def ranks(self, level: float = 0.95, higher_is_better: bool | None = None, random_state: Any = None,
              n_sim: int = 100_000):
        """Simultaneous rank intervals of the means on the link scale (log-odds, log-rate: Wald
        tests on the scale where the model is normal; ranks on it are the ranks of the
        conditional means), from ``vcov`` of the emmGrid (R's emmeans); see
        :func:`mixedeval.rank_intervals`. ``higher_is_better=None``: from the response's name."""
        from .rankings import _emm_ranks  # noqa: PLC0415 - rankings imports the engine only when ranking

        return _emm_ranks(self, level=level, higher_is_better=higher_is_better, random_state=random_state,
                          n_sim=n_sim, scale="link")

    def contrasts(self, method: str | Mapping[str, Sequence[float]] = "pairwise", adjust: str = "holm",
                  by: str | Sequence[str] | None = None, ref: Any = None, level: float | None = None,
                  random_state: Any = 1, scale: str = "ratio") -> GLMMContrastResult:
        """Contrasts of the means: ``scale="ratio"`` (odds / rate ratios on the response scale,
        link differences with ``type="link"``) or ``scale="difference"`` (risk / rate differences
        through ``emmeans::regrid``). Other arguments as :meth:`mixedeval.inference.emmeans.EMMResult.contrasts`."""
        return glmm_contrasts(self, method=method, adjust=adjust, by=by, ref=ref, level=level,
                              random_state=random_state, scale=scale)


def _marginal_mode(marginal: Any) -> str | None:
    if marginal is None or marginal is False or (isinstance(marginal, str) and marginal.lower() in ("none", "")):
        return None
    if marginal is True:
        return "bias_adj"
    key = str(marginal).lower().replace(".", "_").replace("-", "_") if isinstance(marginal, str) else None
    if key not in MARGINAL_MODES:
        raise DataError(f"marginal {marginal!r} is not one of False (conditional), True / 'bias_adj' (emmeans' bias "
                        "adjustment) or 'integrate' (exact average over the random effects)")
    return key


def random_effect_sd(fit: Any) -> tuple[float, tuple[str, ...]]:
    """The total SD of the random intercepts, ``sqrt(sum of their variances)``, and their groups.

    Lenth's emmeans vignette ("transformations", cbpp example) adds the variances of independent
    random intercepts ("the Pythagorean theorem"). Random slopes are refused: the variance of the
    random part ``z' b`` then depends on the covariate / factor values at each grid row.
    """
    r = fit.random
    r = r[r["group"].astype(str) != "Residual"]
    term2 = r["term2"].map(lambda x: x is not None and x == x)
    slope = r[(r["term"].astype(str) != "(Intercept)") | term2]
    if len(slope):
        terms = sorted({f"{g}: {t}" for g, t in zip(slope["group"], slope["term"])})
        raise DataError("population-averaged means (marginal=...) average over random intercepts only; this model "
                        f"has random slopes ({', '.join(terms)}), whose variance depends on the covariates at each "
                        "grid row. Use marginal=False (conditional means), or fit random intercepts only, e.g. "
                        "(1|item) + (1|item:system) instead of (system|item)")
    var = np.asarray(r["variance"], dtype=float)
    if not len(var) or not np.all(np.isfinite(var)):
        raise DataError("the fit has no finite random-intercept variances to average over")
    return float(np.sqrt(np.sum(var))), tuple(str(g) for g in r["group"])


def _scale_note(label: str, mode: str | None, sd: float | None, groups: tuple[str, ...], type_: str) -> str:
    if type_ == "link":
        return ""
    what = _WHAT.get(label, "mean response")
    g = " / ".join(dict.fromkeys(groups)) or "group"
    if mode is None:
        return (f"{what} for a typical {g} (random effects at zero; conditional, not population-averaged: "
                "use marginal='integrate' for the population-averaged " + what + ")")
    how = ("emmeans' second-order bias adjustment" if mode == "bias_adj"
           else "inverse link integrated over the random-effect distribution")
    return f"population-averaged {what} (averaged over {g}: {how}, random-effect SD {sd:.6g})"


def _bias_adj_warning(t: pd.DataFrame, exact: np.ndarray, label: str) -> list[ResultWarning]:
    est = np.asarray(t["emmean"], dtype=float)
    gap = np.abs(est - exact) if label == "prob" else np.abs(est - exact) / np.maximum(np.abs(exact), 1e-300)
    if not gap.size or not np.nanmax(gap) > BIAS_ADJ_TOLERANCE:
        return []
    unit = "" if label == "prob" else " (relative)"
    return [ResultWarning("bias_adj_approximation", f"the second-order bias adjustment differs from the exact "
                          f"average over the random effects by up to {np.nanmax(gap):.3g}{unit} (exact values: "
                          f"{', '.join(f'{x:.4g}' for x in exact)}); use marginal='integrate'", "mixedeval")]


def _emm(fit: Any, specs: Any, by: Any, level: float, at: Any, var: str | None, type_: str,
         mode: str | None = None) -> GLMMEMMResult:
    specs_t, by_t, level = emm_arguments(fit, specs, by, level, var)
    if mode is not None:
        sd, groups = random_effect_sd(fit)
    else:
        sd, groups = None, tuple(str(g) for g in fit.random["group"] if str(g) != "Residual")
    res = _bridge.glmm_emmeans(fit, specs=list(specs_t), by=list(by_t) or None, at=_at_arg(fit, at, example=""), var=var,
                               level=float(level), type=type_, marginal=mode or "none", sigma=sd)
    v = res.value
    est_to = "emmean" if var is None else "trend"
    labels = list(_str_tuple(v["pri_vars"])) + list(_str_tuple(v["by_vars"]))
    t = v["table"].rename(columns={str(v["est_name"]): est_to})
    t = t[labels + [est_to, "std_error", "df", "conf_low", "conf_high"]].reset_index(drop=True)
    kind = "emmeans" if var is None else "emtrends"
    label = "trend_" + type_ if var is not None else _estimate_label(str(v["est_name"]), type_)
    prov = dict(fit.provenance)
    prov.update({"r_function": f"emmeans::{kind}", "type": type_, "level": float(level), "df_method": "asymptotic"})
    ws = list(r_warnings(res, "emmeans"))
    exact = v.get("integrated")
    exact = None if mode != "bias_adj" or exact is None else np.atleast_1d(np.array(exact, dtype=float, copy=True))
    if mode is not None:
        call = ("emmeans::emmeans(..., type = 'response', bias.adj = TRUE, sigma = re_sd)" if mode == "bias_adj"
                else "emmeans::emmeans(...) with the integrated inverse link (me_glmm_integrated_link)")
        prov.update({"marginal": mode, "re_sd": sd, "r_call": call})
    if exact is not None:
        ws += _bias_adj_warning(t, exact, label)
    scale = None if type_ == "link" else ("conditional" if mode is None else "marginal")
    note = _scale_note(label if var is None else "", mode, sd, groups, type_)
    return GLMMEMMResult(table=t, specs=specs_t, by=_str_tuple(v["by_vars"]), kind=kind, var=var, type=type_,
                         estimate_label=label, level=float(level), notes=_str_tuple(v.get("mesg")),
                         warnings=tuple(ws), provenance=prov, response_scale=scale, marginal=mode, re_sd=sd,
                         re_groups=groups, integrated=None if exact is None else tuple(float(x) for x in exact),
                         response_scale_note=note, _grid=v["grid"], _fit=fit)


def glmm_emmeans(fit: Any, specs: Any, by: Any = None, level: float = 0.95, at: Any = None,
                 type: str | None = None, marginal: bool | str = False) -> GLMMEMMResult:  # noqa: A002
    """Estimated marginal means of a GLMM (``type="response"`` by default; see the module docstring).

    ``marginal``: ``False`` (default) back-transforms with the random effects at zero: the
    probability (rate, mean) **for a typical item** ("conditional", subject-specific). ``True`` or
    ``"bias_adj"``: **population-averaged** means by emmeans' second-order bias adjustment,
    ``emmeans(..., type = "response", bias.adj = TRUE, sigma = sqrt(sum of the random-intercept
    variances))`` (Lenth, emmeans vignette "transformations"). ``"integrate"``: population-averaged
    means by exact quadrature of ``E[linkinv(eta + sigma Z)]``, with delta-method SEs; use it for an
    accuracy in a headline (it matches the observed accuracy on balanced data; the bias adjustment
    is a Taylor approximation that errs by ~0.015 at sigma ~ 1.1). Response scale only; random
    slopes are refused (DataError). Contrasts of marginal means: ``scale="difference"`` gives
    population-averaged risk differences, ratios stay conditional. Zeger, Liang & Albert (1988)
    distinguish the two kinds of means.
    """
    t = _type_name(type, "response")
    mode = _marginal_mode(marginal)
    if mode is not None and t != "response":
        raise DataError("marginal=... averages the response-scale means over the random effects; on the link scale "
                        "there is nothing to average (use type='response')")
    return _emm(fit, specs, by, level, at, None, t, mode)


def glmm_emtrends(fit: Any, specs: Any, var: str, by: Any = None, level: float = 0.95, at: Any = None,
                  type: str | None = None) -> GLMMEMMResult:  # noqa: A002 - emmeans' name
    """Slopes of ``var`` per level of ``specs``: on the link scale (``type="link"``, the default:
    e.g. change in log odds per unit) or of the response-scale mean (``type="response"``:
    ``emtrends(..., regrid = "response")``, e.g. change in probability per unit)."""
    if not isinstance(var, str) or not var:
        raise DataError("var must name a numeric covariate")
    return _emm(fit, specs, by, level, at, var, _type_name(type, "link"))


def _contrast_label(emm: GLMMEMMResult, scale: str) -> str:
    if emm.kind == "emtrends":
        return "trend_difference"
    if emm.type == "link":
        return "link_difference"
    if scale == "difference":
        return "difference"
    # emmeans back-transforms differences of log / logit means as ratios; other links stay differences
    return {"logit": "odds_ratio", "log": "rate_ratio"}.get(emm._fit.link, "link_difference")


def _method_args(emm: GLMMEMMResult, method: Any, ref: Any) -> tuple[Any, str, Any]:
    if isinstance(method, Mapping):
        r_method = {str(k): contrast_weights(k, w) for k, w in method.items()}
        if not r_method:
            raise DataError("custom contrasts: give at least one {name: weights} entry")
        name = "custom"
    else:
        if method not in _METHODS:
            raise DataError(f"method {method!r} is not one of {', '.join(_METHODS)} (or a dict of custom weights)")
        r_method = name = method
    return r_method, name, _ref_arg(ref, name)


def glmm_contrasts(emm: GLMMEMMResult, method: Any = "pairwise", adjust: str = "holm", by: Any = None,
                   ref: Any = None, level: float | None = None, random_state: Any = 1,
                   scale: str = "ratio") -> GLMMContrastResult:
    """Contrasts of GLMM means (see :meth:`GLMMEMMResult.contrasts`)."""
    level = emm.level if level is None else require_level(level)
    adj = _ADJUST.get(str(adjust).lower())
    if adj is None:
        raise DataError(f"adjust {adjust!r} is not one of {', '.join(sorted(set(_ADJUST.values())))}")
    if scale not in SCALES:
        raise DataError(f"scale {scale!r} is not one of {', '.join(SCALES)} ('ratio': odds/rate ratios; "
                        "'difference': risk/rate differences on the response scale)")
    if scale == "difference" and (emm.type != "response" or emm.kind == "emtrends"):
        raise DataError("scale='difference' needs means on the response scale (type='response'); link-scale "
                        "contrasts are already differences")
    use_grid_by = by is None
    by_t = emm.by if use_grid_by else _names(by, "by")
    r_method, method_name, r_ref = _method_args(emm, method, ref)
    seed = r_seed(random_state) if adj == "mvt" else None
    res = _bridge.glmm_contrast(emm._grid, method=r_method, adjust=adj, level=level, by=list(by_t) or None,
                                use_grid_by=use_grid_by, ref=r_ref, r_seed=seed, type=emm.type, scale=scale)
    v = res.value
    t = _z_contrast_table(v)
    notes, p_adj, ci_adj = _applied_adjustments(v)
    ws = r_warnings(res, "emmeans")
    if p_adj.lower() != adj.lower() and not any(w.kind == "adjust_changed" for w in ws):
        ws.append(ResultWarning("adjust_changed", f"adjust = {adj!r} was changed to {p_adj!r} by emmeans", "emmeans"))
    if p_adj != "none" and ci_adj.lower() != p_adj.lower():
        ws.append(ResultWarning("ci_adjust", f"emmeans has no {p_adj} confidence intervals: conf_low/conf_high use "
                                f"the {ci_adj} adjustment, p_adj the {p_adj} adjustment", "emmeans"))
    prov = dict(emm.provenance)
    prov.update({"r_function": "emmeans::contrast" + (" (after emmeans::regrid)" if scale == "difference" else ""),
                 "method": method_name, "adjust": adj, "p_adjust": p_adj, "ci_adjust": ci_adj, "scale": scale})
    if adj == "mvt":
        prov["random_state"] = seed
    rs, rs_note = _contrast_scale(emm, scale)
    if emm.marginal is not None:
        prov["r_function"] = ("emmeans::contrast (after emmeans::regrid" + (", bias.adjust = TRUE, sigma = re_sd)"
                              if emm.marginal == "bias_adj" else " of the integrated inverse link)")
                              if scale == "difference" else "emmeans::contrast (conditional link-scale means)")
    return GLMMContrastResult(table=t.reset_index(drop=True), method=method_name, adjust=adj, p_adjust=p_adj,
                              ci_adjust=ci_adj, type=emm.type, scale=scale, estimate_label=_contrast_label(emm, scale),
                              level=level, by=_str_tuple(v["by_vars"]), notes=notes, warnings=tuple(ws),
                              provenance=prov, response_scale=rs, response_scale_note=rs_note, _grid=v["grid"])


def _contrast_scale(emm: GLMMEMMResult, scale: str) -> tuple[str | None, str]:
    if emm.type == "link" or emm.kind == "emtrends":
        return None, ""
    groups = " / ".join(dict.fromkeys(emm.re_groups)) or "group"
    if scale == "difference":
        what = _WHAT.get(emm.estimate_label, "mean response")
        if emm.response_scale == "marginal":
            return "marginal", f"differences of population-averaged {_WHATS[what]} ({emm.marginal}, random-effect SD " \
                               f"{emm.re_sd:.6g})"
        return "conditional", f"differences of the {_WHATS[what]} for a typical {groups} (random effects at zero)"
    extra = "; the means are population-averaged, the ratios are not" if emm.response_scale == "marginal" else ""
    return "conditional", f"ratios for a typical {groups} (conditional on the random effects{extra})"


# ------------------------------------------------------------------ optimizer check
def glmm_check_optimizers(fit: Any, optimizers: Sequence[str] = GLMM_OPTIMIZERS, rtol: float = 1e-3,
                          loglik_tol: float = 1e-3, nagq0: bool = True):
    """Refit ``fit`` with each of glmer's optimizers, and with ``nAGQ = 0`` (``nagq0=True``), and
    compare log-likelihoods, fixed effects and variance components with ``fit`` (rules of
    :mod:`mixedeval.inference.optimizers`; there are no df to compare). Rows are labelled
    ``"<optimizer>"`` or ``"<optimizer>, nAGQ=<k>"`` when the nAGQ differs from the fit's.
    glmmTMB fits have one optimizer (nlminb): they are not supported.
    """
    if fit.r_function == "glmmTMB::glmmTMB":
        raise DataError("check_optimizers() refits with lme4's optimizers; glmmTMB fits (beta, betabinomial) use "
                        "nlminb only")
    if not (float(rtol) >= 0 and float(loglik_tol) >= 0):
        raise DataError("rtol and loglik_tol must be non-negative numbers")
    opts = [optimizers] if isinstance(optimizers, str) else list(optimizers)
    opts = list(dict.fromkeys([fit.optimizer, *(normalize_glmm_optimizer(o) for o in opts)]))
    runs = [(o, fit.nagq) for o in opts]
    if nagq0 and fit.nagq != 0:
        runs.append((fit.optimizer, 0))
    ref_res = _bridge.glmm_optimizer_summary(fit)
    results = []
    for opt, q in runs:
        label = opt if q == fit.nagq else f"{opt}, nAGQ={q}"
        if (opt, q) == (fit.optimizer, fit.nagq):
            results.append((label, True, ref_res, None))
            continue
        try:
            results.append((label, False, _bridge.glmm_check_optimizer(fit, optimizer=opt, nagq=q), None))
        except RError as exc:
            results.append((label, False, None, exc.r_message))
    return _optimizer_check(fit, results, ref_res.value, float(rtol), float(loglik_tol))


def _within(v: Mapping[str, Any], ref: Mapping[str, Any], rtol: float, loglik_tol: float) -> bool:
    fa, fr, ra, rr = v["fixed"], ref["fixed"], v["random"], ref["random"]
    if list(fa["term"]) != list(fr["term"]) or len(ra) != len(rr):
        return False
    b, b0, se0 = (np.asarray(x, dtype=float) for x in (fa["estimate"], fr["estimate"], fr["std_error"]))
    var, var0 = np.asarray(ra["variance"], dtype=float), np.asarray(rr["variance"], dtype=float)
    total = float(np.nansum(np.abs(var0[rr["term2"].isna().to_numpy()]))) if len(rr) else 0.0
    return bool(abs(float(v["loglik"]) - float(ref["loglik"])) <= loglik_tol
                and np.all(np.abs(b - b0) <= rtol * np.maximum(np.abs(b0), se0))
                and np.all(np.abs(var - var0) <= rtol * np.maximum(np.abs(var0), rtol * total)))


def _max_abs(a: Any, b: Any) -> float:
    d = np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
    return float(np.max(d)) if d.size else 0.0


def _optimizer_row(label: str, is_ref: bool, res: Any, error: str | None, ref: Mapping[str, Any], rtol: float,
                   loglik_tol: float) -> dict[str, Any]:
    if res is None:
        return {"optimizer": label, "reference": False, "loglik": np.nan, "loglik_diff": np.nan, "converged": False,
                "singular": None, "feval": None, "max_abs_diff_fixed": np.nan, "max_abs_diff_varcomp": np.nan,
                "max_abs_diff_df": np.nan, "within_tolerance": False, "messages": error}
    v = res.value
    same = list(v["fixed"]["term"]) == list(ref["fixed"]["term"]) and len(v["random"]) == len(ref["random"])
    msgs = v["convergence"].get("messages")
    msgs = [] if msgs is None else ([msgs] if isinstance(msgs, str) else [str(m) for m in msgs])
    msgs += [str(w) for w in res.warnings if str(w) not in msgs]
    return {"optimizer": label, "reference": is_ref, "loglik": float(v["loglik"]),
            "loglik_diff": float(v["loglik"]) - float(ref["loglik"]), "converged": bool(v["convergence"]["converged"]),
            "singular": bool(v["singular"]), "feval": v["feval"],
            "max_abs_diff_fixed": _max_abs(v["fixed"]["estimate"], ref["fixed"]["estimate"]) if same else np.nan,
            "max_abs_diff_varcomp": _max_abs(v["random"]["variance"], ref["random"]["variance"]) if same else np.nan,
            "max_abs_diff_df": np.nan, "within_tolerance": _within(v, ref, rtol, loglik_tol), "messages": "; ".join(msgs)}


def _optimizer_check(fit: Any, results: list, ref: Mapping[str, Any], rtol: float, loglik_tol: float):
    rows, fixed, random, ws = [], [], [], []
    for label, is_ref, res, error in results:
        rows.append(_optimizer_row(label, is_ref, res, error, ref, rtol, loglik_tol))
        if res is None:
            ws.append(ResultWarning("optimizer_error", f"refit with {label} failed: {error}", "R"))
            continue
        if not is_ref:
            ws += [ResultWarning(w.kind, f"{label}: {w.message}", w.source) for w in r_warnings(res)]
        f = res.value["fixed"][["term", "estimate", "std_error", "p_value"]].copy()
        f.insert(0, "optimizer", label)
        r = res.value["random"].copy()
        r.insert(0, "optimizer", label)
        fixed.append(f)
        random.append(r)
    table = pd.DataFrame(rows, columns=list(OPT_COLUMNS))
    table["feval"] = pd.array([None if x is None or x != x else int(x) for x in table["feval"]], dtype="Int64")
    same_q = ~table["optimizer"].str.contains("nAGQ=", regex=False)
    agree = bool(table.loc[same_q, "within_tolerance"].all())  # rows with another nAGQ are another approximation
    best = str(table.loc[table["loglik"].idxmax(), "optimizer"]) if table["loglik"].notna().any() else fit.optimizer
    if not agree:
        bad = ", ".join(table.loc[same_q & ~table["within_tolerance"], "optimizer"])
        ws.append(ResultWarning("optimizer_disagreement", f"refits with {bad} differ from the {fit.optimizer} fit beyond "
                                f"tolerance (rtol={rtol:g}, loglik_tol={loglik_tol:g}); highest log-likelihood: {best}",
                                "mixedeval"))
    for _, row in table.loc[~same_q & ~table["within_tolerance"]].iterrows():
        ws.append(ResultWarning("nagq_difference", f"the {row['optimizer']} fit differs from the nAGQ={fit.nagq} fit "
                                f"beyond tolerance (logLik difference {row['loglik_diff']:.3g}, largest fixed-effect "
                                f"difference {row['max_abs_diff_fixed']:.3g}): nAGQ=0 is a cruder approximation; "
                                "keep the Laplace fit (nagq=1) for final inference", "mixedeval"))
    prov = dict(fit.provenance)
    prov.update({"r_function": "lme4::glmer(control = glmerControl(optimizer = ...), nAGQ = ...)",
                 "optimizers": list(table["optimizer"]), "rtol": rtol, "loglik_tol": loglik_tol})
    return OptimizerCheck(table=table, fixed=pd.concat(fixed, ignore_index=True),
                          random=pd.concat(random, ignore_index=True), agree=agree, best_optimizer=best,
                          reference=fit.optimizer, rtol=rtol, loglik_tol=loglik_tol, warnings=tuple(ws),
                          provenance=prov)
