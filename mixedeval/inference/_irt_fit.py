"""The R fits behind :func:`mixedeval.irt` and their translation to item and ability parameters.

Convention (both models): ``logit P(correct) = discrimination_i * (ability_s - difficulty_i)``.

* Rasch, random items: ``lme4::glmer(y ~ 1 [+ c1 + ... + cp] + (1 | item) + (1 | system),
  binomial)``: discrimination 1, ``difficulty_i = -(mu + x_i' gamma + u_i)`` with standard error
  ``sqrt(x_i' V x_i + condvar(u_i))`` (V: covariance of the fixed effects; the conditional variance
  of the item's mode from ``ranef(condVar = TRUE)``; their covariance is ignored, as lme4 has
  none), ``ability_s = v_s`` (conditional mode; standard error = its conditional SD);
* Rasch, fixed items: ``glmer(y ~ 0 + item + (1 | system), binomial)``: ``difficulty_i = -beta_i``
  with its Wald standard error;
* 2PL: ``glmmTMB::glmmTMB(y ~ 0 + item + rr(0 + item | system, d = 1), binomial)``: the
  linear predictor ``beta_i + lambda_i z_s`` with ``z_s ~ N(0, 1)``, so ``discrimination_i =
  lambda_i``, ``difficulty_i = -beta_i / lambda_i`` (delta-method standard error from the joint
  covariance of (beta_i, lambda_i), sdreport's ``cov.fixed``), ``ability_s = z_s`` with the
  standard error of sdreport's ``diag.cov.random``: TMB's variance of a random effect holds the
  conditional variance *plus* the fixed parameters' uncertainty carried through the mode
  (``H_uu^-1 + J cov.fixed J'``, ``J = d u_hat / d theta``), not the conditional SD alone; the
  numpy engine computes the same (:func:`mixedeval.inference._irt_numpy.ability_variance_joint`)
  and names the conditional SD ``std_error_conditional``. The factor's sign is not identified: it is fixed so
  that the mean discrimination is positive (lambda and z flipped together).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..engine import _bridge
from ..engine.conditions import r_warnings
from ..results import ResultWarning
from ._irt_data import Responses

MODELS = ("rasch", "rasch_fixed", "2pl")
ENGINES = {
    "rasch": "R lme4::glmer (binomial, Laplace): y ~ 1 + (1 | item) + (1 | system)",
    "rasch_fixed": "R lme4::glmer (binomial, Laplace): y ~ 0 + item + (1 | system)",
    "2pl": "R glmmTMB::glmmTMB (binomial, Laplace): y ~ 0 + item + rr(0 + item | system, d = 1)",
}


@dataclass(frozen=True)
class IrtFit:
    """Item and system parameters of one fit (in the items' / systems' level order)."""

    items: pd.DataFrame       # item, difficulty, difficulty_std_error, discrimination, discrimination_std_error
    abilities: pd.DataFrame   # system, ability, std_error
    loglik: float
    nobs: int
    formula: str
    warnings: tuple[ResultWarning, ...]
    variance: dict[str, float] = field(default_factory=dict)
    covariates: pd.DataFrame | None = None
    eta_offset: np.ndarray | None = None  # Rasch: mu + x_i' gamma + u_i per item (the item's easiness)
    provenance: dict[str, Any] = field(default_factory=dict)  # numpy engine: engine and estimator


def _conv_warnings(res: Any, v: dict, source: str) -> list[ResultWarning]:
    out = list(r_warnings(res))
    msgs = v.get("convergence")
    msgs = [] if msgs is None else ([msgs] if isinstance(msgs, str) else [str(m) for m in np.atleast_1d(msgs)])
    seen = {w.message for w in out}
    out += [ResultWarning("convergence", m, source) for m in msgs if m not in seen]
    return out


def _abilities(systems: pd.DataFrame, sign: float = 1.0) -> pd.DataFrame:
    return pd.DataFrame({"system": systems["level"].astype(str).to_numpy(),
                         "ability": sign * systems["mode"].to_numpy(dtype=float),
                         "std_error": systems["cond_sd"].to_numpy(dtype=float)})


def fit_rasch(resp: Responses, *, covariates: pd.DataFrame | None = None, nagq: int = 1) -> IrtFit:
    """Rasch with random items (optionally item covariates c1..cp: the LLTM with a random residual)."""
    data = resp.long.copy()
    cnames: list[str] = []
    labels: list[str] = []
    if covariates is not None:
        labels = [str(c) for c in covariates.columns]
        cnames = [f"c{k + 1}" for k in range(len(labels))]
        x = covariates.to_numpy(dtype=float)[data["item"].cat.codes.to_numpy()]
        for k, c in enumerate(cnames):
            data[c] = x[:, k]
    res = _bridge.irt_rasch(data, binary=resp.binary, fixed_items=False, covariates=cnames, nagq=nagq)
    v = res.value
    fx = v["fixed"]
    beta = fx["estimate"].to_numpy(dtype=float)
    V = v["vcov"]
    X = np.ones((len(resp.items), 1))
    if covariates is not None:
        X = np.hstack([X, covariates.to_numpy(dtype=float)])
    modes = v["items"].set_index("level").loc[list(resp.items)]
    easy = X @ beta + modes["mode"].to_numpy(dtype=float)
    se = np.sqrt(np.einsum("ij,jk,ik->i", X, V, X) + modes["cond_sd"].to_numpy(dtype=float) ** 2)
    items = pd.DataFrame({"item": list(resp.items), "difficulty": -easy, "difficulty_std_error": se,
                          "discrimination": 1.0, "discrimination_std_error": 0.0})
    cov_table = None
    if covariates is not None:  # the covariates' effects on the difficulty scale (minus their logit effects)
        cov_table = pd.DataFrame({"term": labels, "effect_on_difficulty": -beta[1:],
                                  "std_error": np.sqrt(np.diag(V))[1:]})
    return IrtFit(items=items, abilities=_abilities(v["systems"]), loglik=float(v["loglik"]), nobs=int(v["nobs"]),
                  formula=str(v["formula"]), warnings=tuple(_rasch_warnings(res, v)),
                  variance={"system_sd": float(v["system_sd"]), "item_sd": float(v["item_sd"]),
                            "intercept": float(beta[0])},
                  covariates=cov_table, eta_offset=easy)


def _rasch_warnings(res: Any, v: dict) -> list[ResultWarning]:
    out = _conv_warnings(res, v, "lme4")
    if bool(v["singular"]):
        out.append(ResultWarning("singular", "a random-effect SD (items or systems) is estimated at zero (singular "
                                 "fit): the items or the systems do not differ beyond chance", "lme4"))
    return out


def fit_rasch_fixed(resp: Responses, *, nagq: int = 1) -> IrtFit:
    """Rasch with fixed item parameters: ``glmer(y ~ 0 + item + (1 | system), binomial)``."""
    res = _bridge.irt_rasch(resp.long, binary=resp.binary, fixed_items=True, covariates=[], nagq=nagq)
    v = res.value
    fx = v["fixed"]
    beta = fx["estimate"].to_numpy(dtype=float)
    items = pd.DataFrame({"item": list(resp.items), "difficulty": -beta,
                          "difficulty_std_error": fx["std_error"].to_numpy(dtype=float),
                          "discrimination": 1.0, "discrimination_std_error": 0.0})
    return IrtFit(items=items, abilities=_abilities(v["systems"]), loglik=float(v["loglik"]), nobs=int(v["nobs"]),
                  formula=str(v["formula"]), warnings=tuple(_rasch_warnings(res, v)),
                  variance={"system_sd": float(v["system_sd"])}, eta_offset=beta)


def twopl_parameters(t: pd.DataFrame, sign: float) -> pd.DataFrame:
    """discrimination and difficulty (delta method) from glmmTMB's beta, lambda and their covariance."""
    beta = t["beta"].to_numpy(dtype=float)
    lam = sign * t["lambda"].to_numpy(dtype=float)
    vb, vl = t["se_beta"].to_numpy(dtype=float) ** 2, t["se_lambda"].to_numpy(dtype=float) ** 2
    cbl = sign * t["cov_beta_lambda"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = -beta / lam
        var_b = vb / lam ** 2 + beta ** 2 * vl / lam ** 4 - 2 * beta * cbl / lam ** 3
    return pd.DataFrame({"item": t["item"].astype(str).to_numpy(), "difficulty": b,
                         "difficulty_std_error": np.sqrt(np.maximum(var_b, 0.0)), "discrimination": lam,
                         "discrimination_std_error": np.sqrt(vl)})


def fit_2pl(resp: Responses) -> IrtFit:
    """2PL by glmmTMB's reduced-rank term (see the module docstring)."""
    res = _bridge.irt_2pl(resp.long, binary=resp.binary)
    v = res.value
    t = v["items"]
    sign = -1.0 if np.nanmean(t["lambda"].to_numpy(dtype=float)) < 0 else 1.0
    items = twopl_parameters(t, sign)
    warns = _conv_warnings(res, v, "glmmTMB")
    if sign < 0:
        warns.append(ResultWarning("sign_flip", "glmmTMB's loadings came out with a negative mean; loadings and "
                                   "abilities were multiplied by -1 (the factor's sign is not identified) so that "
                                   "higher ability means more correct answers", "mixedeval"))
    return IrtFit(items=items, abilities=_abilities(v["systems"], sign), loglik=float(v["loglik"]),
                  nobs=int(v["nobs"]), formula=str(v["formula"]), warnings=tuple(warns),
                  variance={"sign": sign}, eta_offset=t["beta"].to_numpy(dtype=float))


NUMPY_ENGINE = "numpy: mixedeval.inference._irt_numpy"


def numpy_engine_name(n_quadrature: int) -> str:
    """The engine string of a numpy fit (the ``engine`` field of the result)."""
    how = ("Laplace approximation maximised by L-BFGS-B (the R fits' likelihood)" if n_quadrature == 1
           else f"adaptive Gauss-Hermite EM ({n_quadrature} nodes)")
    return f"numpy: marginal ML by the {how}, mixedeval.inference._irt_numpy"


def fit_numpy(resp: Responses, model: str, n_quadrature: int = 1, discrimination_prior: Any = None) -> IrtFit:
    """The same model by the numpy engine (:func:`mixedeval.inference._irt_numpy.irt_numpy`):
    ``"rasch_fixed"`` is ``glmer(y ~ 0 + item + (1 | system), binomial, nAGQ = n_quadrature)``'s
    marginal likelihood, ``"2pl"`` the reduced-rank model with N(0, 1) abilities (``n_quadrature
    = 1``: the Laplace approximation, glmmTMB's); the abilities are conditional modes with the
    standard errors lme4 (Rasch: conditional SD) and glmmTMB (2PL: with the item parameters'
    uncertainty, sdreport's) report. ``discrimination_prior``: see
    :func:`~mixedeval.inference._irt_numpy.irt_numpy` (MAP instead of ML)."""
    from ._irt_numpy import irt_numpy  # noqa: PLC0415 - the engine loads when asked for

    long = resp.long
    df = pd.DataFrame({"system": long["system"].astype(str).to_numpy(), "item": long["item"].astype(str).to_numpy(),
                       "score": long["y"].to_numpy(dtype=float), "trials": long["n"].to_numpy(dtype=float)})
    f = irt_numpy(df, "2pl" if model == "2pl" else "rasch", trials="trials", n_quadrature=n_quadrature,
                  discrimination_prior=discrimination_prior)
    it = f.items.set_index(f.items["item"].astype(str)).reindex([str(i) for i in resp.items])
    ab = f.abilities.set_index(f.abilities["system"].astype(str)).reindex([str(s) for s in resp.systems])
    items = pd.DataFrame({"item": [str(i) for i in resp.items], "difficulty": it["difficulty"].to_numpy(dtype=float),
                          "difficulty_std_error": it["difficulty_std_error"].to_numpy(dtype=float),
                          "discrimination": it["discrimination"].to_numpy(dtype=float),
                          "discrimination_std_error": it["discrimination_std_error"].to_numpy(dtype=float)})
    abilities = pd.DataFrame({"system": [str(s) for s in resp.systems], "ability": ab["ability"].to_numpy(dtype=float),
                              "std_error": ab["std_error"].to_numpy(dtype=float)})
    formula = ("y ~ 0 + item + rr(0 + item | system, d = 1) [numpy engine]" if model == "2pl"
               else "y ~ 0 + item + (1 | system) [numpy engine]")
    variance = {"sign": 1.0} if model == "2pl" else {"system_sd": float(f.sigma)}
    engine = numpy_engine_name(n_quadrature)
    if discrimination_prior is not None:
        engine = engine.replace("marginal ML", f"MAP ({f.provenance['discrimination_prior']} discrimination prior)")
        engine = engine.replace(" (the R fits' likelihood)", "")
    return IrtFit(items=items, abilities=abilities, loglik=float(f.loglik), nobs=int(len(long)), formula=formula,
                  warnings=tuple(f.warnings), variance=variance, eta_offset=it["intercept"].to_numpy(dtype=float),
                  provenance={"engine": engine, "estimator": f.provenance["estimator"],
                              **{k: f.provenance[k] for k in ("discrimination_prior", "log_posterior")
                                 if k in f.provenance}})
