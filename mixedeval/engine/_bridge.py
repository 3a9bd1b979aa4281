"""The R bridge: one typed Python wrapper per helper of the R library ``r/*.R``.

Everything above the engine calls R through these functions, never by a helper's name
(:func:`mixedeval.engine.session.call` is the transport they share). Conventions:

* one wrapper per R helper, named after it without the ``me_`` prefix (``me_anova`` ->
  :func:`anova`); helpers that only other R helpers call (``me_fit_summary``,
  ``me_emm_grid``, ...) and the conversion helpers ``me_as_df`` / ``me_factor`` (used by
  :mod:`mixedeval.engine.convert`) have none; ``tests/test_r_helpers.py`` checks the
  correspondence both ways;
* a fitted model is passed as the mixedeval fit (:class:`mixedeval.LMMFit`); this module is
  the one place that reads the fit's R object;
* R tables come back with mixedeval's column names (:mod:`mixedeval.engine.names`, the one
  table of R-to-mixedeval names), so no R label leaves the engine;
* wrappers whose callers report R's warnings return the :class:`RCallResult` (``.value`` plus
  the captured ``warnings`` / ``messages``; classify them with
  :func:`mixedeval.engine.conditions.r_warnings`); the others return the value.

Arguments keep R's exact (dotted) names where R has them; nothing is pasted into R code.
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from . import names
from .session import REQUIRED_R_PACKAGES, RCallResult, _as_str_list, _rlib, _start, call, console_echo, lock


def _m(fit: Any) -> Any:
    """The R model object of a mixedeval fit."""
    return fit._model  # noqa: SLF001 - the bridge owns the fit's R handle


def _replace(res: RCallResult, value: Any) -> RCallResult:
    return dataclasses.replace(res, value=value)


# --------------------------------------------------------------------------- r/engine.R
def versions(packages: Sequence[str] = REQUIRED_R_PACKAGES) -> dict[str, Any]:
    """``me_versions``: R version and installed versions of ``packages`` (None when missing)."""
    v = call("me_versions", packages=list(packages)).value
    pk = _as_str_list(v["packages"])
    vs = v["versions"]
    vs = [vs] if isinstance(vs, str) or vs is None else list(vs)
    return {
        "r_version": v["r_version"],
        "r_version_string": v["r_version_string"],
        "packages": {p: (None if x is None or x != x else str(x)) for p, x in zip(pk, vs)},
    }


# ------------------------------------------------------------------------------ r/fit.R
def _fixed(raw: Any) -> Any:
    return names.rename(raw, names.COEFFICIENTS)


def _random(raw: Any) -> Any:
    """VarCorr's frame -> group, term, term2, variance, std_dev, corr (``sdcor`` split)."""
    t = names.rename(raw, names.VARCORR)
    term, term2 = (np.asarray(t[c], dtype=object) for c in ("term", "term2"))
    missing = pd.isna(term), pd.isna(term2)
    term, term2 = np.where(missing[0], None, term), np.where(missing[1], None, term2)  # None for R's NA
    is_cov = ~missing[1]
    sdcor = np.asarray(t["sdcor"], dtype=float)
    return pd.DataFrame({
        "group": np.asarray(t["group"], dtype=object),
        "term": pd.Series(term, dtype=object),
        "term2": pd.Series(term2, dtype=object),
        "variance": np.asarray(t["variance"], dtype=float),
        "std_dev": np.where(is_cov, np.nan, sdcor),
        "corr": np.where(is_cov, sdcor, np.nan),
    }, copy=False)


def _summary(res: RCallResult) -> RCallResult:
    v = dict(res.value)
    v["fixed"] = _fixed(v["fixed"])
    v["random"] = _random(v["random"])
    return _replace(res, v)


def fit_and_summarise(formula: str, data: Any, *, reml: bool, optimizer: str, ddf: str, level: float,
                      calc_derivs: bool) -> RCallResult:
    """``me_fit_and_summarise``: ``lmerTest::lmer`` and the fit's summary (``value["model"]`` is
    the R model; ``fixed``/``random`` tables with mixedeval names)."""
    return _summary(call("me_fit_and_summarise", formula=formula, data=data, reml=bool(reml), optimizer=optimizer,
                         ddf=ddf, level=float(level), calc_derivs=bool(calc_derivs)))


def serialize_model(fit: Any) -> bytes:
    """``me_serialize_model``: the fit's R model as bytes (``base::serialize``), to ship to workers."""
    return call("me_serialize_model", m=_m(fit)).value


def unserialize_model(data: bytes) -> Any:
    """``me_unserialize_model``: the R model of :func:`serialize_model`'s bytes, in this R session."""
    return call("me_unserialize_model", bytes=bytes(data)).value


def refit_and_summarise(fit: Any, *, reml: bool, ddf: str, level: float) -> RCallResult:
    """``me_refit_and_summarise``: the model refitted by REML or ML (``lme4::refitML``), summarised."""
    return _summary(call("me_refit_and_summarise", m=_m(fit), reml=bool(reml), ddf=ddf, level=float(level)))


def fixed_table(fit: Any, *, ddf: str, level: float):
    """``me_fixed_table``: term, estimate, std_error, df, t_value (z_value for ``ddf="asymptotic"``),
    p_value, conf_low, conf_high."""
    return _fixed(call("me_fixed_table", m=_m(fit), ddf=ddf, level=float(level)).value)


def model_values(fit: Any) -> dict[str, np.ndarray]:
    """``me_model_values``: response, conditional and population fitted values, residuals."""
    v = call("me_model_values", m=_m(fit)).value
    return {k: np.array(v[k], dtype=float, copy=True) for k in v}


def model_frame(fit: Any):
    """``me_model_frame``: the model frame R used (complete rows, the formula's variables)."""
    return call("me_model_frame", m=_m(fit)).value


def ranef(fit: Any) -> dict[str, Any]:
    """``me_ranef``: BLUPs per grouping factor, one DataFrame each (``level`` column first)."""
    return call("me_ranef", m=_m(fit)).value


def simulate(fit: Any, *, n_sim: int, r_seed: int | None, conditional: bool) -> np.ndarray:
    """``me_simulate``: ``simulate(m, nsim = n_sim, seed = r_seed, re.form = NULL or NA)`` as an
    (nobs, n_sim) array (``r_seed`` is R's ``set.seed`` value; see :func:`mixedeval._random.r_seed`)."""
    sims = call("me_simulate", m=_m(fit), nsim=int(n_sim), seed=None if r_seed is None else int(r_seed),
                conditional=bool(conditional)).value
    arr = np.array(sims, dtype=float, copy=True)
    return arr.reshape(int(fit.nobs), int(n_sim)) if arr.ndim == 1 else arr


# ---------------------------------------------------------------------------- r/anova.R
def anova(fit: Any, *, type: str, ddf: str, level: float) -> RCallResult:  # noqa: A002 - R's name
    """``me_anova``: ``lmerTest::anova`` with ``effectsize::F_to_eta2``; ``value`` is the table
    (mixedeval names) or None for a model without fixed-effect terms."""
    res = call("me_anova", m=_m(fit), type=str(type), ddf=ddf, level=float(level))
    raw = res.value["table"]
    return _replace(res, None if raw is None else names.rename(raw, {**names.ANOVA, **names.ETA2_PARTIAL}))


# -------------------------------------------------------------------------- r/compare.R
def compare_check(fits: Sequence[Any]) -> dict[str, Any]:
    """``me_compare_check``: do the models share the fixed-effect design and the response? Which are REML?"""
    v = call("me_compare_check", models=[_m(f) for f in fits]).value
    return {"fixed_equal": bool(v["fixed_equal"]), "response_equal": bool(v["response_equal"]),
            "reml": [bool(r) for r in np.atleast_1d(v["reml"])]}


def compare(fits: Sequence[Any], *, model_names: Sequence[str], refit: bool, mixture: bool) -> RCallResult:
    """``me_compare``: lme4's ``anova(m0, m1, ..., refit)``; ``value["table"]`` with mixedeval
    names (either lme4 naming generation), ``value["p_mixture"]`` the 50:50 mixture p-values."""
    res = call("me_compare", models=[_m(f) for f in fits], model_names=list(model_names), refit=bool(refit),
               mixture=bool(mixture))
    v = dict(res.value)
    v["table"] = names.rename(v["table"], names.LRT, legacy=names.LRT_LEGACY)
    return _replace(res, v)


def pb_setup(large: Any, small: Any, *, n_resamples: int, r_seed: int | None) -> Any:
    """``me_pb_setup``: ``set.seed(r_seed)``, both models refitted by ML, ``n_resamples`` responses
    simulated from ``small`` (as ``pbkrtest::PBmodcomp``); returns the R state for :func:`pb_chunk`."""
    return call("me_pb_setup", large=_m(large), small=_m(small), nsim=int(n_resamples),
                seed=None if r_seed is None else int(r_seed)).value


def pb_chunk(state: Any, first: int, last: int) -> RCallResult:
    """``me_pb_chunk``: the likelihood-ratio statistics of replicates ``first..last`` (1-based)."""
    res = call("me_pb_chunk", state=state, first=int(first), last=int(last))
    return _replace(res, np.atleast_1d(np.array(res.value, dtype=float, copy=True)))


def pb_sims(state: Any) -> np.ndarray:
    """``me_pb_sims``: the simulated responses of a :func:`pb_setup` state, (nobs, n_resamples)."""
    return np.atleast_2d(np.array(call("me_pb_sims", state=state).value, dtype=float, copy=True))


def pb_models(state: Any) -> bytes:
    """``me_pb_models``: the two ML models of a :func:`pb_setup` state, ``base::serialize``d as one
    list (``small``, ``large``), to ship to worker processes (:func:`unserialize_model` there)."""
    return call("me_pb_models", state=state).value


def pb_refit(small: Any, large: Any, ysim: np.ndarray) -> RCallResult:
    """``me_pb_refit``: the likelihood-ratio statistics of the columns of ``ysim`` refitted from the
    ML fits ``small`` and ``large`` (fits made in this process; used by worker processes)."""
    res = call("me_pb_refit", small=_m(small), large=_m(large), ysim=np.asfortranarray(ysim, dtype=float))
    return _replace(res, np.atleast_1d(np.array(res.value, dtype=float, copy=True)))


def pb_finish(large: Any, small: Any, ref: np.ndarray) -> dict[str, Any]:
    """``me_pb_finish``: ``summary(pbkrtest::PBmodcomp(large, small, ref = ref))$test`` (test,
    statistic, df, ddf, p_value), the number of replicates and of positive ones."""
    v = call("me_pb_finish", large=_m(large), small=_m(small), ref=np.asarray(ref, dtype=float)).value
    return {"test": names.rename(v["test"], names.PBMODCOMP), "nsim": int(v["nsim"]), "npos": int(v["npos"])}


# -------------------------------------------------------------------------- r/emmeans.R
def _emm_summary(v: Mapping[str, Any]) -> dict[str, Any]:
    """An ``me_emm_summary`` list with the table's standard columns renamed (the estimate column
    keeps emmeans' ``est_name``)."""
    out = dict(v)
    out["table"] = names.rename(v["table"], names.EMMEANS)
    return out


def emmeans(fit: Any, *, specs: Sequence[str], by: Sequence[str] | None, at: Mapping[str, Any] | None,
            var: str | None, level: float, df_options: Mapping[str, Any]) -> RCallResult:
    """``me_emmeans``: ``emmeans::emmeans`` (or ``emtrends`` with ``var``) with the dotted df
    options (``lmer.df``, ``lmerTest.limit``, ``pbkrtest.limit``) passed by their exact names;
    ``value["grid"]`` is the emmGrid, ``value["table"]`` its summary."""
    res = call("me_emmeans", m=_m(fit), specs=list(specs), by=list(by) if by else None, at=at, var=var,
               level=float(level), **dict(df_options))
    return _replace(res, _emm_summary(res.value))


def emm_contrast(fit: Any, grid: Any, *, method: str | Mapping[str, Sequence[float]], adjust: str, level: float,
                 by: Sequence[str] | None, use_grid_by: bool, ref: Sequence[Any] | None, r_seed: int | None,
                 eff_size: bool) -> RCallResult:
    """``me_emm_contrast``: ``emmeans::contrast`` of ``grid`` summarised with ``adjust``
    (``value["table"]``), the unadjusted p-values (``value["p_raw"]``) and, with ``eff_size``,
    ``summary(emmeans::eff_size(grid, sigma = sigma(m), edf = df.residual(m), method, by, ref))``
    (``value["eff_size"]["table"]``: effect_size, effect_size_std_error, effect_size_df,
    effect_size_conf_low, effect_size_conf_high)."""
    res = call("me_emm_contrast", m=_m(fit), grid=grid, method=method, adjust=adjust, level=float(level),
               by=list(by) if by else None, use_grid_by=bool(use_grid_by), ref=ref,
               seed=None if r_seed is None else int(r_seed), eff_size=bool(eff_size))
    v = _emm_summary(res.value)
    v["p_raw"] = np.atleast_1d(np.asarray(v["p_raw"], dtype=float))
    if v.get("eff_size") is not None:
        es = dict(v["eff_size"])
        es["table"] = names.rename(es["table"], names.EFF_SIZE)
        v["eff_size"] = es
    return _replace(res, v)


# ----------------------------------------------------------------------- r/optimizers.R
def _optimizer_value(res: RCallResult) -> RCallResult:
    v = dict(res.value)
    v["fixed"] = _fixed(v["fixed"])
    v["random"] = _random(v["random"])
    return _replace(res, v)


def optimizer_summary(fit: Any) -> RCallResult:
    """``me_optimizer_summary``: log-likelihood, convergence, singularity, evaluations, fixed
    effects (Satterthwaite df) and variance components of the fit itself."""
    return _optimizer_value(call("me_optimizer_summary", m=_m(fit)))


def check_optimizer(fit: Any, optimizer: str) -> RCallResult:
    """``me_check_optimizer``: the same summary after refitting with ``optimizer``."""
    return _optimizer_value(call("me_check_optimizer", m=_m(fit), optimizer=optimizer))


# ------------------------------------------------------------------------------- r/r2.R
def r2_parts(fit: Any) -> dict[str, Any]:
    """``me_r2_parts``: var(X beta), sigma and per random-effect term (group, term) its variance
    contribution mean_i(z_i' Sigma z_i) (the pieces of the Nakagawa-Schielzeth / Johnson R²)."""
    return call("me_r2_parts", m=_m(fit)).value


# ------------------------------------------------------------------------------ r/vca.R
def lm_glrt(*, null_formula: str, full_formula: str, data: Any,
            model_names: Sequence[str] = ("null", "full")) -> RCallResult:
    """``me_lm_glrt``: likelihood-ratio (and F) test between two nested linear models without
    random effects, laid out like lme4's ``anova(m0, m1)``."""
    return call("me_lm_glrt", null_formula=null_formula, full_formula=full_formula, data=data,
                model_names=list(model_names))


def vca_refit(fit: Any, ysim: np.ndarray) -> dict[str, Any]:
    """``me_vca_refit``: ``lme4::refit`` of a variance-component model to each column of ``ysim``
    and ``as.data.frame(VarCorr(.))$vcov`` (bootMer's replicate); ``vcov`` (replicates x
    components, NaN where the refit failed), ``groups`` (VarCorr's grp, in column order), and per
    replicate ``singular``, ``failed``, ``warned`` and ``problem`` (R's messages)."""
    v = call("me_vca_refit", m=_m(fit), ysim=np.ascontiguousarray(ysim, dtype=float)).value
    groups = _as_str_list(v["groups"])
    nb = int(np.shape(ysim)[1])
    problem = v["problem"]
    return {
        "vcov": np.array(v["vcov"], dtype=float, copy=True).reshape(nb, len(groups)),
        "groups": groups,
        "singular": np.array(np.atleast_1d(v["singular"]), dtype=float, copy=True),  # NaN where failed
        "failed": np.array(np.atleast_1d(v["failed"]), dtype=bool, copy=True),
        "warned": np.array(np.atleast_1d(v["warned"]), dtype=bool, copy=True),
        "problem": [problem] if isinstance(problem, str) else [str(p) for p in problem],
    }


# ------------------------------------------------------------------------ r/disparity.R
def disparity_refit_fixef(fit: Any, ysim: np.ndarray) -> dict[str, Any]:
    """``me_disparity_refit_fixef``: ``lme4::refit`` of the ML model to each column of ``ysim``;
    per replicate the fixed effects, both SDs, singular / converged flags and problems."""
    return call("me_disparity_refit_fixef", m=_m(fit), ysim=np.ascontiguousarray(ysim)).value


def disparity_contest(fit: Any, L: Any, *, ddf: str, level: float) -> RCallResult:  # noqa: N803 - the matrix
    """``me_disparity_contest``: ``lmerTest::contest(m, L, joint = FALSE, confint = TRUE)``:
    estimate, std_error, df, conf_low, conf_high per row of ``L``."""
    return call("me_disparity_contest", m=_m(fit), L=L, ddf=ddf, level=float(level))


# ----------------------------------------------------------------------------- r/glmm.R
def _glmm_summary(res: RCallResult) -> RCallResult:
    v = dict(res.value)
    if "model" in v and type(v["model"]).__name__ == "SexpEnvironment":
        # glmmTMB fits travel wrapped in an environment (me_glmm_handle: an S3 list would be converted
        # element by element); the fit keeps the glmmTMB object itself, unconverted
        with lock:
            v["model"] = v["model"]["model"]
    v["fixed"] = _fixed(v["fixed"])
    v["random"] = _random(v["random"])
    return _replace(res, v)


def glmm_fit_and_summarise(formula: str, data: Any, *, family: str, link: str | None, nagq: int, optimizer: str,
                           weights: np.ndarray | None, level: float, calc_derivs: bool) -> RCallResult:
    """``me_glmm_fit_and_summarise``: ``lme4::glmer`` / ``glmer.nb`` / ``glmmTMB::glmmTMB`` and the
    fit's summary (``value["model"]`` is the R model; ``fixed``/``random`` with mixedeval names;
    ``vcov_unstable`` / ``vcov_message``: whether the Hessian-based covariance was replaced by the
    RX-based one, ``me_glmm_vcov_check``)."""
    return _glmm_summary(call("me_glmm_fit_and_summarise", formula=formula, data=data, family=family, link=link,
                              nagq=int(nagq), optimizer=_glmm_optimizer_arg(optimizer),
                              weights=None if weights is None else np.asarray(weights, dtype=float),
                              level=float(level), calc_derivs=bool(calc_derivs)))


def glmm_fixed(fit: Any, *, level: float):
    """``me_glmm_fixed``: term, estimate, std_error, z_value, p_value, conf_low, conf_high (Wald, link scale)."""
    return _fixed(call("me_glmm_fixed", m=_m(fit), level=float(level)).value)


# ----------------------------------------------------------------------------- r/clmm.R
def clmm_fit(formula: str, data: Any, *, response: str, response_levels: Sequence[str], link: str, threshold: str,
             nagq: int, level: float) -> RCallResult:
    """``me_clmm_fit``: ``ordinal::clmm`` with the response column (codes 1..K) turned into an
    ordered factor of ``response_levels``; ``value["model"]`` is the R model, ``fixed`` /
    ``thresholds`` the coefficient tables (mixedeval names; ``fixed`` None without fixed effects),
    ``random`` the VarCorr table as :func:`fit_and_summarise` lays it out."""
    res = call("me_clmm_fit", formula=formula, data=data, response=response, response_levels=list(response_levels),
               link=link, threshold=threshold, nagq=int(nagq), level=float(level))
    v = dict(res.value)
    v["fixed"] = None if v["fixed"] is None else _fixed(v["fixed"])
    v["thresholds"] = _fixed(v["thresholds"])
    v["random"] = _random(v["random"])
    return _replace(res, v)


def clmm_compare(fits: Sequence[Any], *, model_names: Sequence[str]):
    """``me_clmm_compare``: likelihood-ratio tests between clmm fits (ordinal's ``anova``):
    model, npar, aic, bic, loglik, chisq, df, p_value, rows ordered by npar."""
    v = call("me_clmm_compare", models=[_m(f) for f in fits], model_names=list(model_names)).value
    return names.rename(v, names.CLMM_LRT)


def clmm_emmeans(fit: Any, *, specs: Sequence[str], by: Sequence[str] | None, at: Mapping[str, Any] | None,
                 mode: str, level: float) -> RCallResult:
    """``me_clmm_emmeans``: ``emmeans::emmeans(m, specs, by, at, mode)`` of a clmm fit
    (``mode="prob"`` adds the response categories as the first ``by`` variable);
    ``value["grid"]`` is the emmGrid, ``value["table"]`` its summary (mixedeval names)."""
    res = call("me_clmm_emmeans", m=_m(fit), specs=list(specs), by=list(by) if by else None, at=at, mode=mode,
               level=float(level))
    return _replace(res, _emm_summary(res.value))


# ---------------------------------------------------------------------- r/simulate_glmm.R
def simulate_glmm(fit: Any, *, n_sim: int, r_seed: int | None, conditional: bool) -> dict[str, Any]:
    """``me_simulate_glmm``: ``simulate(m, nsim = n_sim, seed = r_seed, re.form = NA or NULL)`` of a
    glmer / glmer.nb / glmmTMB fit on DHARMa's scale (binomial: numbers of successes). Returns
    ``simulated`` (nobs, n_sim), ``observed``, ``predicted`` (population level, response scale),
    ``trials`` (k/n binomial responses, else None) and ``family`` (R's ``family(m)$family``)."""
    v = call("me_simulate_glmm", m=_m(fit), nsim=int(n_sim), seed=None if r_seed is None else int(r_seed),
             conditional=bool(conditional)).value
    observed = np.array(v["observed"], dtype=float, copy=True).reshape(-1)
    sims = np.array(v["simulated"], dtype=float, copy=True)
    if sims.ndim == 1:  # an R matrix arrives column-major when flattened
        sims = sims.reshape((observed.size, int(n_sim)), order="F")
    trials = v.get("trials")
    return {
        "simulated": sims,
        "observed": observed,
        "predicted": np.array(v["predicted"], dtype=float, copy=True).reshape(-1),
        "trials": None if trials is None else np.array(trials, dtype=float, copy=True).reshape(-1),
        "family": str(v["family"]),
    }


def glmm_observed(fit: Any) -> dict[str, Any]:
    """``me_glmm_observed``: what :func:`simulate_glmm` returns besides the simulations (``observed``,
    ``predicted``, ``trials``, ``family``), without simulating (the simulations come from elsewhere,
    e.g. worker processes)."""
    v = call("me_glmm_observed", m=_m(fit)).value
    trials = v.get("trials")
    return {
        "observed": np.array(v["observed"], dtype=float, copy=True).reshape(-1),
        "predicted": np.array(v["predicted"], dtype=float, copy=True).reshape(-1),
        "trials": None if trials is None else np.array(trials, dtype=float, copy=True).reshape(-1),
        "family": str(v["family"]),
    }


# -------------------------------------------------------------------------------- r/power.R
def _named(d: Any) -> dict[str, float]:
    """A named R vector (a dict, or a bare scalar for a one-element vector without names) as a
    {name: float} dict."""
    return {str(k): float(v) for k, v in d.items()} if isinstance(d, dict) else {}


def power_pilot(fit: Any) -> dict[str, Any]:
    """``me_power_pilot``: a fitted model's parameters as lme4 names them: ``beta``
    (``fixef``), ``theta`` (``getME(m, "theta")``), ``sigma``."""
    v = call("me_power_pilot", m=_m(fit)).value
    beta, theta = v["beta"], v["theta"]
    if not isinstance(beta, dict) or not isinstance(theta, dict):
        raise TypeError("me_power_pilot returned unnamed parameters")
    return {"beta": _named(beta), "theta": _named(theta), "sigma": float(v["sigma"])}


def power_setup(formula: str, data: Any, *, beta: Mapping[str, float] | Sequence[float],
                theta: Mapping[str, float] | None, sigma: float, variances: Mapping[str, float] | None,
                family: str, term: str, effect: Sequence[float], test: str, template_seed: int = 1) -> Any:
    """``me_power_setup``: the R state of a power simulation (template models fitted once to a
    response simulated with ``set.seed(template_seed)``; the coefficients of ``term`` set to
    ``effect``). ``test`` is ``"lrt"``, ``"Satterthwaite"``, ``"Kenward-Roger"`` or ``"none"``."""
    b = dict(beta) if isinstance(beta, Mapping) else [float(x) for x in beta]
    return call("me_power_setup", formula=formula, data=data, beta=b, theta=None if theta is None else dict(theta),
                sigma=float(sigma), variances=None if variances is None else {k: float(v) for k, v in variances.items()},
                family=family, term=term, effect=[float(e) for e in effect], test=test,
                template_seed=int(template_seed)).value


def power_batch(state: Any, seeds: Sequence[int]) -> dict[str, np.ndarray]:
    """``me_power_batch``: one simulation per seed (``set.seed(seed)``, ``simulate()``, refit,
    test): arrays ``estimate``, ``statistic``, ``ddf``, ``p_value``, ``singular`` and ``problem``."""
    v = call("me_power_batch", state=state, seeds=[int(s) for s in seeds]).value
    n = len(seeds)
    out = {k: np.atleast_1d(np.array(v[k], dtype=float, copy=True)).reshape(n)
           for k in ("estimate", "statistic", "ddf", "p_value")}
    sing = v["singular"]
    out["singular"] = np.atleast_1d(np.array([None if x is None else x for x in np.atleast_1d(sing)],
                                             dtype=object)).reshape(n)
    prob = v["problem"]
    out["problem"] = np.array([prob] if isinstance(prob, str) else list(prob), dtype=object).reshape(n)
    return out


def power_responses(state: Any, seeds: Sequence[int]) -> np.ndarray:
    """``me_power_responses``: the simulated responses, an (nobs, len(seeds)) array, column i
    drawn after ``set.seed(seeds[i])``."""
    arr = np.array(call("me_power_responses", state=state, seeds=[int(s) for s in seeds]).value,
                   dtype=float, copy=True)
    return arr.reshape(-1, len(seeds)) if arr.ndim == 1 else arr


def power_info(state: Any) -> dict[str, Any]:
    """``me_power_info``: the tested coefficients, the parameters used (beta, theta, sigma), the
    likelihood-ratio test's df and null model formula."""
    v = call("me_power_info", state=state).value
    coef = v["coef"]
    nf = v["null_formula"]
    return {"coef": [coef] if isinstance(coef, str) else list(coef), "beta": _named(v["beta"]),
            "theta": _named(v["theta"]), "sigma": float(v["sigma"]),
            "df": None if v["df"] is None or v["df"] != v["df"] else int(v["df"]),
            "null_formula": nf if isinstance(nf, str) else None}


_LME4_OPTIMIZERS = ("bobyqa", "Nelder_Mead", "nloptwrap", "nlminbwrap")


def _glmm_optimizer_arg(optimizer: str) -> list[str] | None:
    """glmerControl's ``optimizer`` for mixedeval's name: ``"bobyqa"`` -> ["bobyqa"] (both stages),
    ``"bobyqa+Nelder_Mead"`` -> the two stages; anything else (glmmTMB's nlminb) -> None (lme4's default)."""
    parts = str(optimizer).split("+")
    return parts if all(p in _LME4_OPTIMIZERS for p in parts) and len(parts) <= 2 else None


def _glmm_args(fit: Any) -> dict[str, Any]:
    """The arguments of ``me_glmm_fit`` that reproduce ``fit`` (R formula text, data, family, link,
    nAGQ, optimizer, weights)."""
    opt = _glmm_optimizer_arg(fit.optimizer)
    w = fit.weights
    return {"formula": fit._r_formula, "data": fit.data, "family": fit.family,  # noqa: SLF001 - the bridge owns it
            "link": None if fit.family == "negative_binomial" else fit.link, "nagq": int(fit.nagq), "optimizer": opt,
            "weights": None if w is None else np.asarray(w, dtype=float)}


def glmm_anova(fit: Any) -> RCallResult:
    """``me_glmm_anova``: ``car::Anova(m, type = 3)`` on ``fit`` refitted with ``contr.sum`` for the
    factors of the fixed part; ``value["table"]``: term, chisq, df, p_value; ``value["sum_contrasts"]``."""
    res = call("me_glmm_anova", **_glmm_args(fit))
    v = dict(res.value)
    v["table"] = names.rename(v["table"], names.WALD_CHISQ)
    return _replace(res, v)


def glmm_compare_check(fits: Sequence[Any]) -> dict[str, Any]:
    """``me_glmm_compare_check``: do the GLMMs share the fixed-effect design and the response?"""
    v = call("me_glmm_compare_check", models=[_m(f) for f in fits]).value
    return {"fixed_equal": bool(v["fixed_equal"]), "response_equal": bool(v["response_equal"])}


def glmm_compare(fits: Sequence[Any], *, model_names: Sequence[str], mixture: bool) -> RCallResult:
    """``me_glmm_compare``: ``anova(m0, m1, ...)`` of GLMMs (lme4 or glmmTMB; all ML) with
    mixedeval names, and the 50:50 mixture p-values (``value["p_mixture"]``)."""
    res = call("me_glmm_compare", models=[_m(f) for f in fits], model_names=list(model_names), mixture=bool(mixture))
    v = dict(res.value)
    v["table"] = names.rename(v["table"], names.LRT, legacy=names.LRT_LEGACY)
    return _replace(res, v)


def glmm_emmeans(fit: Any, *, specs: Sequence[str], by: Sequence[str] | None, at: Mapping[str, Any] | None,
                 var: str | None, level: float, type: str, marginal: str = "none",  # noqa: A002 - emmeans' name
                 sigma: float | None = None) -> RCallResult:
    """``me_glmm_emmeans``: ``emmeans::emmeans`` (or ``emtrends``) of a GLMM summarised with
    ``type`` ("response" or "link"); ``value["grid"]`` is the emmGrid. ``marginal`` ("none",
    "bias_adj", "integrate") with ``sigma`` (the random effects' SD) makes the response scale
    population-averaged; ``value["integrated"]`` holds the exactly integrated means (or None)."""
    res = call("me_glmm_emmeans", m=_m(fit), specs=list(specs), by=list(by) if by else None, at=at, var=var,
               level=float(level), type=type, marginal=str(marginal), sigma=None if sigma is None else float(sigma))
    return _replace(res, _emm_summary(res.value))


def glmm_contrast(grid: Any, *, method: str | Mapping[str, Sequence[float]], adjust: str, level: float,
                  by: Sequence[str] | None, use_grid_by: bool, ref: Sequence[Any] | None, r_seed: int | None,
                  type: str, scale: str) -> RCallResult:  # noqa: A002 - emmeans' name
    """``me_glmm_contrast``: contrasts of GLMM means as ratios (``scale="ratio"``) or, after
    ``emmeans::regrid``, differences on the response scale; ``value["p_raw"]`` unadjusted p-values."""
    res = call("me_glmm_contrast", grid=grid, method=method, adjust=adjust, level=float(level),
               by=list(by) if by else None, use_grid_by=bool(use_grid_by), ref=ref,
               seed=None if r_seed is None else int(r_seed), type=type, scale=scale)
    v = _emm_summary(res.value)
    v["p_raw"] = np.atleast_1d(np.asarray(v["p_raw"], dtype=float))
    return _replace(res, v)


def glmm_optimizer_summary(fit: Any) -> RCallResult:
    """``me_glmm_optimizer_summary``: log-likelihood, convergence, fixed effects and variances of the fit."""
    return _glmm_summary(call("me_glmm_optimizer_summary", m=_m(fit)))


def glmm_check_optimizer(fit: Any, *, optimizer: str, nagq: int) -> RCallResult:
    """``me_glmm_check_optimizer``: the same summary after refitting with ``optimizer`` and ``nagq``."""
    args = {**_glmm_args(fit), "optimizer": _glmm_optimizer_arg(optimizer), "nagq": int(nagq)}
    return _glmm_summary(call("me_glmm_check_optimizer", **args))


# --------------------------------------------------------------------------- r/r2_glmm.R
def r2_glmm_parts(fit: Any) -> RCallResult:
    """``me_r2_glmm_parts``: variance components of a binomial / Poisson / negative binomial
    ``glmer`` fit for R² and ICC (MuMIn's r.squaredGLMM): var_fixed, var_random (and per term),
    the null model's intercept and random variance, the mean number of binomial trials, theta."""
    return call("me_r2_glmm_parts", m=_m(fit))



# ------------------------------------------------------------------------ r/separation.R
def glmm_separation(fit: Any) -> dict[str, Any]:
    """``me_glmm_separation``: for a binomial ``glmer`` fit, the cells of the fixed part's factors
    (``cells``: one column per factor in ``factors``; ``n`` trials and ``successes`` per cell) and
    Konis' (2007) linear program (``xbar``: the distinct rows -x (successes) / +x (failures) of the
    fixed-effect matrix, columns ``coef_names``; per row piece: ``piece_unique`` (0-based row of
    ``xbar``), ``piece_cell`` (0-based cell), ``piece_outcome``)."""
    v = call("me_glmm_separation", m=_m(fit)).value
    coef = _as_str_list(v["coef_names"])
    xbar = np.array(v["xbar"], dtype=float, copy=True).reshape(-1, len(coef))
    return {
        "factors": _as_str_list(v["factors"]),
        "cells": v["cells"],
        "n": np.atleast_1d(np.array(v["n"], dtype=float)),
        "successes": np.atleast_1d(np.array(v["successes"], dtype=float)),
        "coef_names": coef,
        "xbar": xbar,
        "piece_unique": np.atleast_1d(np.array(v["piece_unique"], dtype=np.int64)) - 1,
        "piece_cell": np.atleast_1d(np.array(v["piece_cell"], dtype=np.int64)) - 1,
        "piece_outcome": np.atleast_1d(np.array(v["piece_outcome"], dtype=np.int64)),
        "response": str(v["response"]),
    }


def bglmer_fit(fit: Any, *, level: float, intercept_sd: float, slope_sd: float) -> RCallResult:
    """``me_bglmer_fit``: the binomial GLMM of ``fit`` refitted with ``blme::bglmer`` (normal prior on
    the fixed effects: ``intercept_sd`` for the intercept, ``slope_sd`` for the other coefficients;
    no covariance prior), summarised as :func:`glmm_fit_and_summarise` plus ``prior_sd`` /
    ``prior_terms``."""
    a = _glmm_args(fit)
    return _glmm_summary(call("me_bglmer_fit", formula=a["formula"], data=a["data"], link=a["link"],
                              nagq=a["nagq"], optimizer=a["optimizer"], weights=a["weights"], level=float(level),
                              calc_derivs=True, intercept_sd=float(intercept_sd), slope_sd=float(slope_sd)))


def emm_vcov(grid: Any) -> dict[str, np.ndarray]:
    """``me_emm_vcov``: the estimates of an emmGrid on its link scale (``predict(grid, type =
    "link")``) and their covariance matrix (``vcov(grid)``), for rank intervals."""
    v = call("me_emm_vcov", grid=grid).value
    est = np.atleast_1d(np.array(v["estimate"], dtype=float, copy=True))
    return {"estimate": est, "vcov": np.array(v["vcov"], dtype=float, copy=True).reshape(est.size, est.size)}


# ------------------------------------------------------------------------ r/bradley_terry.R
def _bt_value(res: RCallResult, p: int) -> RCallResult:
    v = dict(res.value)
    v["vcov"] = np.array(v["vcov"].to_numpy(dtype=float), copy=True).reshape(p, p)
    return _replace(res, v)


def bt_glm(data: Any, *, xnames: Sequence[str], level: float) -> RCallResult:
    """``me_bt_glm``: ``glm(cbind(y, n - y) ~ 0 + x1 + ... + xp, binomial)`` of a Bradley-Terry
    design (``data``: y, n and the design columns ``xnames``); ``fixed`` (term, estimate,
    std_error, z_value, p_value, conf_low, conf_high), ``vcov`` (p x p), deviance, converged."""
    return _bt_value(call("me_bt_glm", data=data, xnames=list(xnames), level=float(level)), len(xnames))


def bt_glmer(data: Any, *, xnames: Sequence[str], level: float, prompt: bool, judge: bool) -> RCallResult:
    """``me_bt_glmer``: the design of :func:`bt_glm` with ``+ (1 | prompt)`` (``prompt``) and
    ``+ (0 + first | judge)`` (``judge``: a random position bias; ``data`` then has ``first`` and
    ``judge``) by ``lme4::glmer`` (Laplace); adds ``prompt_sd``, ``judge_sd``, ``judge_modes``
    (judge, estimate, std_error: conditional modes and their conditional SDs), ``loglik``,
    ``singular`` and lme4's ``convergence`` messages."""
    return _bt_value(call("me_bt_glmer", data=data, xnames=list(xnames), level=float(level), prompt=bool(prompt),
                          judge=bool(judge)), len(xnames))


def bt_glmer_mp(data: Any, *, xnames: Sequence[str], level: float) -> RCallResult:
    """``me_bt_glmer_mp``: the design of :func:`bt_glm` with a model x prompt random effect
    ``+ u[model_a, prompt] - u[model_b, prompt]`` (a multi-membership term lme4 has no syntax
    for: built with lme4's modular functions; ``data`` has integer ``ma``, ``mb`` and ``prompt``);
    ``prompt_sd`` is the SD of u; the other fields as :func:`bt_glmer`."""
    return _bt_value(call("me_bt_glmer_mp", data=data, xnames=list(xnames), level=float(level)), len(xnames))


# ------------------------------------------------------------------------------------ r/irt.R
def irt_rasch(data: Any, *, binary: bool, fixed_items: bool, covariates: Sequence[str], nagq: int) -> RCallResult:
    """``me_irt_rasch``: ``lme4::glmer(y ~ 1 [+ c1 + ...] + (1 | item) + (1 | system), binomial)``
    (``fixed_items``: ``y ~ 0 + item + (1 | system)``; ``cbind(y, n - y)`` unless ``binary``):
    ``fixed`` (term, estimate, std_error), ``vcov`` (fixed effects), ``systems`` / ``items``
    (level, mode, cond_sd: conditional modes and SDs), ``system_sd``, ``item_sd``, ``loglik``,
    ``nobs``, ``singular``, ``convergence`` (messages), ``formula``."""
    res = call("me_irt_rasch", data=data, binary=bool(binary), fixed_items=bool(fixed_items),
               covariates=list(covariates), nagq=int(nagq))
    v = dict(res.value)
    p = len(v["fixed"])
    v["vcov"] = np.array(v["vcov"].to_numpy(dtype=float), copy=True).reshape(p, p)
    return _replace(res, v)


def irt_2pl(data: Any, *, binary: bool) -> RCallResult:
    """``me_irt_2pl``: ``glmmTMB::glmmTMB(y ~ 0 + item + rr(0 + item | system, d = 1), binomial)``:
    ``items`` (item, beta, lambda, se_beta, se_lambda, cov_beta_lambda), ``systems`` (level, mode,
    cond_sd: the latent z_s), ``loglik``, ``nobs``, ``convergence`` (messages), ``formula``."""
    return call("me_irt_2pl", data=data, binary=bool(binary))


def irt_dif_base(data: Any, *, binary: bool) -> RCallResult:
    """``me_irt_dif_base``: the DIF base fit ``y ~ 1 + grp + (1 | item) + (1 | system)`` and the
    global test of a DIF variance ``(1 | item:grp)`` (``global_chisq``, ``global_p_value``: 50:50
    mixture, ``dif_sd``); ``state`` is the R handle :func:`irt_dif_item` takes."""
    return call("me_irt_dif_base", data=data, binary=bool(binary))


def irt_dif_item(state: Any, item: str) -> dict[str, Any]:
    """``me_irt_dif_item``: the likelihood-ratio test of item ``item``'s own group effect (one row:
    item, chisq, df, p_value, estimate, std_error)."""
    t = call("me_irt_dif_item", state=state, item=str(item)).value
    return {k: (t[k].iloc[0] if hasattr(t[k], "iloc") else t[k]) for k in t}


def irt_erm(x: Any) -> dict[str, np.ndarray]:
    """``me_irt_erm``: conditional-ML Rasch item difficulties of a 0/1 systems x items matrix
    (``eRm::RM(x, sum0 = TRUE)``; difficulty = -beta) with standard errors and the conditional logLik."""
    v = call("me_irt_erm", x=x).value
    return {"difficulty": np.array(v["difficulty"], dtype=float, copy=True),
            "std_error": np.array(v["std_error"], dtype=float, copy=True), "loglik": float(v["loglik"])}


# ----------------------------------------------------------------------------- r/bayes.R
def bayes_fit(data: Any, *, family: str, items: bool, cluster: bool, chains: int, iter: int,  # noqa: A002 - R's name
              seed: int, refresh: int, cores: int, prior: Mapping[str, Any] | None = None,
              prior_intercept: Mapping[str, Any] | None = None, prior_aux: Mapping[str, Any] | None = None,
              adapt_delta: float | None = None, echo: bool = False) -> RCallResult:
    """``me_bayes_fit``: ``rstanarm::stan_glmer`` (``stan_glm`` without group effects) of the fixed
    formula chosen by ``family`` / ``items`` / ``cluster`` (``r/bayes.R``); ``value["model"]`` is the
    R model, ``value["summary"]`` the draws, ``posterior::summarise_draws`` diagnostics, divergences
    and the prior summary. ``echo``: Stan's console output (``refresh``) goes to stderr.

    Parallel chains (``cores > 1``) run as plain ``Rscript`` runs them: ``rstan::sampling`` forks
    this process per chain (``parallel::mclapply``) when R is not interactive, but starts new R
    processes that load rstan (``makeCluster``, seconds each) when it is, and embedded R is
    interactive. :func:`bayes_chain_mode` says which; ``"fork"`` turns R's interactive flag off
    for this call only. The draws are the same either way (each chain is seeded by ``seed`` and
    its chain id)."""
    with console_echo(echo), _rstan_fork(bayes_chain_mode(cores) == "fork"):
        return call("me_bayes_fit", data=data, family=family, items=bool(items), cluster=bool(cluster),
                    chains=int(chains), iter=int(iter), seed=int(seed), refresh=int(refresh), cores=int(cores),
                    prior=None if prior is None else dict(prior),
                    prior_intercept=None if prior_intercept is None else dict(prior_intercept),
                    prior_aux=None if prior_aux is None else dict(prior_aux),
                    adapt_delta=None if adapt_delta is None else float(adapt_delta))


def bayes_chain_mode(cores: int) -> str:
    """How :func:`bayes_fit` runs parallel chains: ``"serial"`` (``cores`` 1), ``"fork"`` (one
    forked copy of this process per chain, as ``Rscript`` does) when this process runs a single
    Python thread, else ``"psock"`` (new R worker processes): a fork copies only the forking
    thread, and another Python thread holding the interpreter lock at that moment would leave
    the child's R callbacks into Python (console output, event processing) blocked for ever."""
    if int(cores) <= 1:
        return "serial"
    return "fork" if threading.active_count() == 1 else "psock"


@contextlib.contextmanager
def _rstan_fork(enabled: bool) -> Iterator[None]:
    """While the block runs, R's ``interactive()`` is FALSE (R's ``R_Interactive`` flag), so that
    ``rstan::sampling`` takes its ``mclapply`` path; restored on exit. Errors and interrupts in
    the block are caught by ``me_call`` (never R's top level, where a non-interactive R quits)."""
    if not enabled:
        yield
        return
    with lock:
        _start()  # R's start sets the flag itself
    rlib = _rlib()
    before = rlib.R_Interactive
    rlib.R_Interactive = 0
    try:
        yield
    finally:
        rlib.R_Interactive = before


def bayes_predict(model: Any, *, n_draws: int, seed: int) -> dict[str, np.ndarray]:
    """``me_bayes_predict``: ``rstanarm::posterior_predict(m, draws = n_draws, seed = seed)`` as an
    (n_draws, nobs) array ``yrep`` and the observed response ``observed`` (successes for a binomial)."""
    v = call("me_bayes_predict", m=model, n_draws=int(n_draws), seed=int(seed)).value
    yrep = v["yrep"]
    arr = np.column_stack([np.array(yrep[c], dtype=float, copy=True) for c in yrep.columns]) \
        if isinstance(yrep, pd.DataFrame) else np.array(yrep, dtype=float, copy=True)
    return {"yrep": arr, "observed": np.array(v["observed"], dtype=float, copy=True).ravel()}


def bayes_loo(full: Any, reduced: Any, *, model_names: Sequence[str]) -> RCallResult:
    """``me_bayes_loo``: ``loo`` of two rstanarm fits and ``loo::loo_compare`` (model, elpd_diff,
    se_diff), each model's elpd_loo and SE, and its Pareto k (count above 0.7, maximum)."""
    return call("me_bayes_loo", m_full=full, m_reduced=reduced, names=list(model_names))
