"""R² and ICC of binomial, Poisson and negative binomial GLMMs, as MuMIn's ``r.squaredGLMM``.

Nakagawa, Johnson & Schielzeth (2017), "The coefficient of determination R² and intra-class
correlation coefficient from generalized linear mixed-effects models revisited and expanded",
*J. R. Soc. Interface* 14:20170213; the definitions of MuMIn's ``r.squaredGLMM.merMod`` (version
1.48). The R helper ``me_r2_glmm_parts`` (``r/r2_glmm.R``) computes the variance components
from the ``glmer`` fit and its null model; the observation-level variances and the ratios are
computed here:

* ``var_fixed = var(X beta)``; ``var_random = sum_k mean_i(z_ik' Sigma_k z_ik)`` (random
  intercepts: the sum of their variances; random slopes as Johnson 2014);
* the **null model** is the same model with the fixed part replaced by an intercept (random
  terms kept), refitted in R; ``b0`` its intercept and ``vt`` its random variance summed as
  above with the full model's random-effect design;
* the **observation-level variance** ``var_observation`` (the distribution-specific variance on
  the latent / link scale), one table row per method:

  ==================  =============  =======================================================
  family (link)       method         var_observation
  ==================  =============  =======================================================
  binomial (logit)    theoretical    ``pi^2 / 3 / n``
  binomial (logit)    delta          ``1 / (n p (1 - p))``
  binomial (probit)   theoretical    ``1 / n``
  binomial (probit)   delta          ``2 pi / n * p (1 - p) * exp(qnorm(p)^2)``
  binomial (cloglog)  theoretical    ``pi^2 / 6 / n``
  binomial (cloglog)  delta          ``p / (n log(1 - p)^2 (1 - p))``
  poisson (log)       delta          ``1 / lambda``
  poisson (log)       lognormal      ``log(1 + 1 / lambda)``
  poisson (log)       trigamma       ``trigamma(lambda)``
  poisson (sqrt)      delta          ``0.25``
  neg. binomial (log) delta          ``v = 1 / lambda + 1 / theta``
  neg. binomial (log) lognormal      ``log(1 + v)``
  neg. binomial (log) trigamma       ``trigamma(1 / v)``
  ==================  =============  =======================================================

  with ``n`` the mean number of binomial trials (1 for 0/1 data; ``cbind`` row sums or the
  prior weights otherwise), ``p = linkinv(b0 - 0.5 vt tanh(b0 (1 + 2 exp(-0.5 vt)) / 6))``
  (the null model's mean probability), ``lambda = exp(b0 + 0.5 vt)`` (the null model's mean
  count) and ``theta`` the negative binomial shape of the fit (the null model is refitted with
  that theta, as MuMIn's ``update`` of a ``glmer.nb`` fit does);
* ``r2_marginal = var_fixed / (var_fixed + var_random + var_observation)`` and
  ``r2_conditional = (var_fixed + var_random) / (...)``; the latent-scale ICCs
  ``icc_adjusted = var_random / (var_random + var_observation)`` and ``icc_unadjusted =
  var_random / (var_fixed + var_random + var_observation)`` (as ``performance::icc``).

The scalar ``r2_marginal`` / ``r2_conditional`` (and ``icc_*``) of a result are those of its
``method``: ``theoretical`` for binomial (what ``performance::r2_nakagawa`` reports for 0/1
data), ``trigamma`` for Poisson and negative binomial (the most accurate of the three, Nakagawa
et al. 2017, sec. 5). Beta and beta-binomial GLMMs (glmmTMB) are not covered.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.special import polygamma

from ..engine import _bridge
from ..engine.conditions import r_warnings
from ..errors import DataError
from ..results import ResultMixin, ResultWarning

#: R² of a fit whose fixed part is separated (a ``separation`` warning on the fit)
R2_SEPARATION_NOTE = ("R² is not meaningful under separation: the fixed-effect variance on the latent scale grows "
                      "without bound with the estimates of the separated cells, so the marginal R² is pushed towards "
                      "1 by wherever glmer's optimizer happened to stop; report the penalised refit's R² or none")

_PI2 = math.pi ** 2
_NORMAL = NormalDist()


def _trigamma(x: float) -> float:
    return float(polygamma(1, x))


def _linkinv(link: str, eta: float) -> float:
    if link == "logit":
        return 1.0 / (1.0 + math.exp(-eta))
    if link == "probit":
        return _NORMAL.cdf(eta)
    if link == "cloglog":
        return -math.expm1(-math.exp(eta))
    raise DataError(f"R² for binomial GLMMs is defined for the logit, probit and cloglog links, not {link!r}")


def _binomial(link: str, n: float, p: float) -> list[tuple[str, str, float]]:
    """(method, formula, var_observation) rows of MuMIn's r2glmm for a binomial family."""
    if link == "logit":
        return [("theoretical", "pi^2/3/n", _PI2 / 3.0 / n), ("delta", "1/(n*p*(1-p))", 1.0 / (n * p * (1.0 - p)))]
    if link == "probit":
        return [("theoretical", "1/n", 1.0 / n),
                ("delta", "2*pi/n*p*(1-p)*exp(qnorm(p)^2)",
                 2.0 * math.pi / n * p * (1.0 - p) * math.exp((_NORMAL.inv_cdf(p) / math.sqrt(2.0)) ** 2) ** 2)]
    return [("theoretical", "pi^2/6/n", _PI2 / 6.0 / n),
            ("delta", "p/(n*log(1-p)^2*(1-p))", p / n / math.log1p(-p) ** 2 / (1.0 - p))]


def _counts(family: str, link: str, lam: float, theta: float) -> list[tuple[str, str, float]]:
    """(method, formula, var_observation) rows for Poisson and negative binomial (log link)."""
    if family == "poisson" and link == "sqrt":
        return [("delta", "0.25", 0.25)]
    if link != "log":
        raise DataError(f"R² for {family} GLMMs is defined for the log link (and sqrt for Poisson), not {link!r}")
    if family == "poisson":
        return [("delta", "1/lambda", 1.0 / lam), ("lognormal", "log(1+1/lambda)", math.log1p(1.0 / lam)),
                ("trigamma", "trigamma(lambda)", _trigamma(lam))]
    v = 1.0 / lam + 1.0 / theta
    return [("delta", "1/lambda+1/theta", v), ("lognormal", "log(1+1/lambda+1/theta)", math.log1p(v)),
            ("trigamma", "trigamma(1/(1/lambda+1/theta))", _trigamma(1.0 / v))]


@dataclass(frozen=True)
class GLMMVariance:
    """Variance components of a GLMM and the observation-level variance of each method."""

    family: str
    link: str
    var_fixed: float
    var_random: float
    terms: tuple[tuple[str, str, float], ...]
    observation: tuple[tuple[str, str, float], ...]  # (method, formula, var_observation)
    parameters: dict[str, float]
    warnings: tuple[ResultWarning, ...]

    @property
    def default_method(self) -> str:
        names = [m for m, _, _ in self.observation]
        return "theoretical" if "theoretical" in names else "trigamma" if "trigamma" in names else names[0]


def glmm_variance(fit: Any) -> GLMMVariance:
    """The components of ``fit`` (a :class:`mixedeval.GLMMFit`; module docstring), cached on the fit."""
    if "r2_glmm" in fit._cache:
        return fit._cache["r2_glmm"]
    if fit.family not in ("binomial", "poisson", "negative_binomial"):
        raise DataError(f"R² and ICC are available for binomial, poisson and negative_binomial GLMMs (MuMIn's "
                        f"r.squaredGLMM), not family={fit.family!r}")
    res = _bridge.r2_glmm_parts(fit)
    v = res.value
    b0, vt = float(v["null_intercept"]), float(v["var_random_null"])
    params = {"null_intercept": b0, "var_random_null": vt}
    if fit.family == "binomial":
        n = float(v["n_trials"])
        p = _linkinv(str(v["link"]), b0 - 0.5 * vt * math.tanh(b0 * (1.0 + 2.0 * math.exp(-0.5 * vt)) / 6.0))
        params.update({"n_trials": n, "p_mean": p})
        obs = _binomial(str(v["link"]), n, p)
    else:
        lam = math.exp(b0 + 0.5 * vt)
        theta = float(v["theta"]) if fit.family == "negative_binomial" else math.nan
        params.update({"lambda": lam} if fit.family == "poisson" else {"lambda": lam, "theta": theta})
        obs = _counts(fit.family, str(v["link"]), lam, theta)
    groups = np.atleast_1d(np.asarray(v["groups"], dtype=object)).tolist()
    tnames = v["terms"]
    if isinstance(tnames, dict):
        tnames = list(tnames.values())
    tnames = np.atleast_1d(np.asarray(tnames, dtype=object)).tolist()
    contrib = np.atleast_1d(np.asarray(v["var_terms"], dtype=float)).tolist()
    ws = [w for w in r_warnings(res, "lme4 (null model)")]
    if bool(v["null_singular"]):
        ws.append(ResultWarning("singular", "the null model (intercept and the random effects) is singular; "
                                "its intercept still defines the mean used by the observation-level variance", "lme4"))
    if fit.singular:
        ws.append(ResultWarning("singular", "singular fit: a random-effect variance is (near) zero; its "
                                "contribution is computed as estimated", "mixedeval"))
    if any(w.kind == "separation" for w in fit.warnings):
        ws.append(ResultWarning("separation", R2_SEPARATION_NOTE, "mixedeval"))
    out = GLMMVariance(family=fit.family, link=str(v["link"]), var_fixed=float(v["var_fixed"]),
                       var_random=float(v["var_random"]),
                       terms=tuple((str(g), str(t), float(c)) for g, t, c in zip(groups, tnames, contrib)),
                       observation=tuple(obs), parameters=params, warnings=tuple(ws))
    fit._cache["r2_glmm"] = out
    return out


def _components(p: GLMMVariance, method: str):
    rows = [{"component": "fixed", "group": None, "term": None, "variance": p.var_fixed}]
    rows += [{"component": "random", "group": g, "term": t, "variance": c} for g, t, c in p.terms]
    var_obs = dict((m, v) for m, _, v in p.observation)[method]
    rows.append({"component": f"observation ({method})", "group": None, "term": None, "variance": var_obs})
    return pd.DataFrame(rows)


@dataclass(frozen=True, repr=False, kw_only=True)
class _GLMMRatios(ResultMixin):
    """Two variance ratios per method of observation-level variance, with the components.

    ``methods`` (also ``table``): one row per method: method, var_observation_formula,
    var_observation, var_fixed, var_random and the two ratios. The scalar fields hold the row of
    ``method``; ``var_residual`` is that row's observation-level variance. ``components``:
    component (fixed / random / observation), group, term, variance. ``parameters``: the null
    model's intercept and random variance, and ``n_trials`` / ``p_mean`` (binomial), ``lambda``
    (and ``theta``) for counts.
    """

    family: str
    link: str
    method: str
    methods: Any
    var_fixed: float
    var_random: float
    var_residual: float
    components: Any
    parameters: dict[str, float]
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _ratios: ClassVar[tuple[str, str]] = ("", "")
    _main_table = "table"
    _print_tables = ("methods", "components")

    @property
    def table(self):
        return self.methods.copy()

    def _scalars(self):
        return [("method", self.method)] + [(n, f"{getattr(self, n):.6g}") for n in self._ratios]


@dataclass(frozen=True, repr=False, kw_only=True)
class _R2Fields:
    """The two R² fields of the LMM and GLMM results (listed before the variance fields' base, so
    they come after its fields)."""

    r2_marginal: float
    r2_conditional: float

    _ratios = ("r2_marginal", "r2_conditional")


@dataclass(frozen=True, repr=False, kw_only=True)
class _ICCFields:
    """The two ICC fields of the LMM and GLMM results (listed before the variance fields' base, so
    they come after its fields)."""

    icc_adjusted: float
    icc_unadjusted: float

    _ratios = ("icc_adjusted", "icc_unadjusted")


@dataclass(frozen=True, repr=False, kw_only=True)
class GLMMR2Result(_R2Fields, _GLMMRatios):
    """Marginal and conditional R² of a GLMM (Nakagawa, Johnson & Schielzeth 2017; MuMIn)."""

    _title = "R² of a generalized linear mixed model (Nakagawa, Johnson & Schielzeth 2017; MuMIn r.squaredGLMM)"


@dataclass(frozen=True, repr=False, kw_only=True)
class GLMMICCResult(_ICCFields, _GLMMRatios):
    """Adjusted and unadjusted ICC of a GLMM on the latent scale (Nakagawa et al. 2017)."""

    _title = "Latent-scale intraclass correlation of a generalized linear mixed model (Nakagawa et al. 2017)"


def _method(p: GLMMVariance, method: str | None) -> str:
    names = [m for m, _, _ in p.observation]
    if method is None:
        return p.default_method
    if method not in names:
        raise DataError(f"method {method!r} is not available for a {p.family} ({p.link}) GLMM; use one of {names}")
    return method


def _table(p: GLMMVariance, ratios) -> pd.DataFrame:
    rows = []
    for m, formula, vo in p.observation:
        row = {"method": m, "var_observation_formula": formula, "var_observation": vo,
               "var_fixed": p.var_fixed, "var_random": p.var_random}
        row.update(ratios(vo))
        rows.append(row)
    return pd.DataFrame(rows)


def _provenance(fit: Any, what: str) -> dict[str, Any]:
    prov = dict(fit.provenance)
    prov.update({"method": what, "r_function": "lme4 fit and its null model (me_r2_glmm_parts, as MuMIn 1.48 "
                 "r.squaredGLMM.merMod)"})
    return prov


def r2_glmm(fit: Any, method: str | None = None) -> GLMMR2Result:
    """Marginal and conditional R² of a binomial / Poisson / negative binomial GLMM (module docstring)."""
    p = glmm_variance(fit)
    m = _method(p, method)

    def ratios(vo: float) -> dict[str, float]:
        tot = p.var_fixed + p.var_random + vo
        return {"r2_marginal": p.var_fixed / tot, "r2_conditional": (p.var_fixed + p.var_random) / tot}

    tab = _table(p, ratios)
    row = tab.set_index("method").loc[m]
    return GLMMR2Result(family=p.family, link=p.link, method=m, methods=tab, var_fixed=p.var_fixed,
                        var_random=p.var_random, var_residual=float(row["var_observation"]),
                        components=_components(p, m), parameters=dict(p.parameters), warnings=p.warnings,
                        provenance=_provenance(fit, "Nakagawa, Johnson & Schielzeth 2017 (MuMIn r.squaredGLMM)"),
                        r2_marginal=float(row["r2_marginal"]), r2_conditional=float(row["r2_conditional"]))


def icc_glmm(fit: Any, method: str | None = None) -> GLMMICCResult:
    """Adjusted and unadjusted latent-scale ICC of a GLMM (module docstring)."""
    p = glmm_variance(fit)
    m = _method(p, method)

    def ratios(vo: float) -> dict[str, float]:
        return {"icc_adjusted": p.var_random / (p.var_random + vo),
                "icc_unadjusted": p.var_random / (p.var_fixed + p.var_random + vo)}

    tab = _table(p, ratios).drop(columns=["var_fixed"])
    row = tab.set_index("method").loc[m]
    return GLMMICCResult(family=p.family, link=p.link, method=m, methods=tab, var_fixed=p.var_fixed,
                         var_random=p.var_random, var_residual=float(row["var_observation"]),
                         components=_components(p, m), parameters=dict(p.parameters), warnings=p.warnings,
                         provenance=_provenance(fit, "Nakagawa, Johnson & Schielzeth 2017, latent scale"),
                         icc_adjusted=float(row["icc_adjusted"]), icc_unadjusted=float(row["icc_unadjusted"]))
