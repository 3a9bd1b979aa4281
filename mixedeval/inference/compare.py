"""Likelihood-ratio tests between nested linear mixed models.

The table is lme4's ``anova(m0, m1, ...)`` (Bates et al. 2015): models ordered by their number
of parameters, ``chisq = 2 * (loglik_k - loglik_{k-1})`` (floored at 0), ``df`` the difference
in parameters and ``p_value = pchisq(chisq, df, lower.tail = FALSE)``.

Which likelihood is compared (statistical rule 1 of the design):

* the fixed-effect design differs (any column of ``getME(m, "X")``): every model is refitted by
  ML (``anova(m0, m1)``, lme4's ``refitML``), and a ``refit_ml`` warning says so, because REML
  likelihoods of different fixed effects are not comparable;
* only the random effects differ and every model is REML: REML is kept
  (``anova(m0, m1, refit = FALSE)``), the better test for variance components (Pinheiro &
  Bates 2000, sec. 2.4).

The ``estimator`` column says which likelihood each row holds; a REML log-likelihood is never
printed beside an ML chi-square.

A variance tested against zero sits on the boundary of its parameter space, where the
chi-square reference is conservative. When a model adds exactly one variance (with its
covariances in the same random-effect block) and nothing else, ``p_value_mixture`` is the
50:50 mixture ``0.5 * P(chi2_df > chisq) + 0.5 * P(chi2_{df-1} > chisq)`` (Self & Liang 1987;
Stram & Lee 1994). On request, ``p_value_pb`` is pbkrtest's parametric-bootstrap p-value
(Halekoh & Højsgaard 2014): ``(1 + #{ref > chisq_ML}) / (1 + #{ref > 0})`` over ``n_resamples``
likelihood-ratio statistics of data simulated from the smaller model, both models refitted by
ML; with an integer ``random_state`` it equals
``set.seed(random_state); pbkrtest::PBmodcomp(large, small, nsim = n_resamples)``, with one
difference: statistics within rounding of 0 (a replicate whose extra variance is estimated at 0)
count as 0, not by the sign of their last bits (:func:`boundary_zero`), so that p is the same
whichever process refits a replicate.

Test statistics: ``chisq`` (chi-square reference) in ``table``; pbkrtest's table ``pb`` mixes
reference distributions row by row (LRT, PBtest, Gamma, Bartlett, F), so its statistic column
is ``statistic`` beside ``test`` (the rule of :mod:`mixedeval.engine.names`).
"""
from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import _resources as res
from .._executor import resolve_executor
from .._random import r_seed
from ..engine import _bridge
from ..engine.conditions import r_warnings
from ..errors import DataError
from ..resampling._draws import chunks
from ..results import ResultMixin, ResultWarning
from ._clmm import CLMMFit, clmm_lrt
from ._glmm import GLMMFit
from ._glmm_infer import glmm_lrt
from ._lmm import LMMFit

COLUMNS = ("model", "formula", "npar", "aic", "bic", "loglik", "deviance", "chisq", "df", "p_value", "estimator")


@dataclass(frozen=True, repr=False)
class CompareResult(ResultMixin):
    """Likelihood-ratio tests between nested mixed models (lme4's ``anova(m0, m1, ...)``).

    ``table``: model, formula, npar, aic, bic, loglik, deviance, chisq, df, p_value, estimator
    (``"ML"`` or ``"REML"``: the likelihood in loglik/aic/bic/deviance/chisq), plus
    ``p_value_mixture`` (50:50 chi-square mixture; NaN where it does not apply) when a model
    adds exactly one variance component to the previous one, and ``p_value_pb`` (parametric
    bootstrap) when ``n_resamples`` was given. ``pb``: pbkrtest's summary table per comparison
    (comparison, test LRT / PBtest / Gamma / Bartlett / F, statistic, df, ddf, p_value,
    n_resamples, n_positive: the replicates with a positive statistic, PBmodcomp's denominator)
    or None.
    """

    table: Any
    estimator: str
    refitted: bool
    pb: Any
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _main_table = "table"
    _print_tables = ("table", "pb")

    @property
    def _title(self) -> str:  # type: ignore[override]
        how = "refitted by ML" if self.refitted else f"{self.estimator} as fitted"
        return f"Likelihood-ratio tests (lme4 anova), models {how}"


def _default_names(k: int) -> list[str]:
    return [f"model_{i + 1}" for i in range(k)]


def _check_fits(fits: Sequence[Any], names_: Sequence[str] | None) -> list[str]:
    if len(fits) < 2:
        raise DataError("compare() needs at least two fitted models, e.g. me.compare(null_fit, full_fit)")
    for i, f in enumerate(fits):
        if not isinstance(f, LMMFit):
            raise DataError(f"argument {i + 1} is a {type(f).__name__}, not a fit from mixedeval.lmm()")
    labels = _default_names(len(fits)) if names_ is None else [str(n) for n in names_]
    if len(labels) != len(fits):
        raise DataError(f"names has {len(labels)} entries for {len(fits)} models; give one name per model")
    if len(set(labels)) != len(labels):
        raise DataError(f"names must be distinct, got {labels}")
    nobs = [f.nobs for f in fits]
    if len(set(nobs)) > 1:
        detail = ", ".join(f"{n}: {k} rows" for n, k in zip(labels, nobs))
        raise DataError(
            f"the models were fitted to different data ({detail}); likelihood-ratio tests need the same rows. "
            "Drop rows with missing values in any model's variables before fitting all models"
        )
    return labels


def _decide_refit(refit: bool | None, fixed_equal: bool, reml: list[bool], labels: list[str]):
    """(refit_flag, warnings) following the module docstring's rules."""
    any_reml = any(reml)
    mixed = any_reml and not all(reml)
    if refit is None:
        do_refit = (not fixed_equal) or mixed
    elif refit:
        do_refit = True
    else:
        if not fixed_equal and any_reml:
            raise DataError("refit=False with different fixed effects would compare REML likelihoods, which are not "
                            "comparable across fixed-effect structures; use refit=None (automatic ML refit)")
        if mixed:
            raise DataError("refit=False with some models fitted by REML and some by ML compares likelihoods of "
                            "different kinds; refit the models alike or use refit=None")
        do_refit = False
    ws: list[ResultWarning] = []
    if do_refit and any_reml:
        which = ", ".join(n for n, r in zip(labels, reml) if r)
        why = ("the fixed effects differ and REML likelihoods are not comparable across fixed effects"
               if not fixed_equal else "ML refit requested" if refit else "the models mix REML and ML fits")
        ws.append(ResultWarning("refit_ml", f"refitted by ML for the likelihood-ratio test ({which}): {why} "
                                "(as lme4's anova(m0, m1) does)", "mixedeval"))
    return do_refit, ws


def compare(
    *fits: Any,
    refit: bool | None = None,
    n_resamples: int | None = None,
    random_state: Any = None,
    progress: bool = True,
    names: Sequence[str] | None = None,
    executor: Any = None,
) -> CompareResult:
    """Likelihood-ratio tests between nested fits (see the module docstring for the rules).

    Parameters
    ----------
    *fits : two or more :class:`mixedeval.LMMFit` on the same rows, in any order (rows are
        ordered by number of parameters, as lme4 does; each row is tested against the one above).
    refit : None (automatic: ML when the fixed effects differ or estimators are mixed, REML kept
        when only random effects differ), True (always ML), False (keep the fits; an error when
        that would compare REML likelihoods of different fixed effects).
    n_resamples : number of parametric-bootstrap samples (pbkrtest's PBmodcomp); None for none.
    random_state : randomness of the bootstrap (R draws it): an int is R's ``set.seed`` value
        exactly; a ``numpy.random.SeedSequence`` or ``Generator`` is turned into one such int;
        None draws a fresh one. The int used is recorded as ``provenance["random_state"]``.
    progress : show a tqdm bar during the bootstrap.
    names : row labels of the models (default ``model_1``, ``model_2``, ... in argument order).
    executor : where the bootstrap refits run: None (this process), an int or ``"processes"``
        (worker processes, each with its own R) or a ``dask.distributed.Client``. The responses are
        simulated here (one ``set.seed``, as ``PBmodcomp``); each worker receives the two ML models
        made here (``update(m, REML = FALSE)``; GLMMs as fitted), serialized, once per comparison
        and refits its share of the replicates (``lme4::refit``), so the statistics agree with
        every executor to optimizer precision.
    """
    if fits and all(isinstance(f, CLMMFit) for f in fits):  # ordinal::clmm fits: ordinal's ML likelihood-ratio test
        tab, prov = clmm_lrt(fits, names, n_resamples)
        return CompareResult(table=tab, estimator="ML", refitted=False, pb=None, warnings=(), provenance=prov)
    if fits and any(isinstance(f, GLMMFit) for f in fits):  # GLMMs are ML fits: never refitted (_glmm_infer.glmm_lrt)
        return _compare_glmm(fits, n_resamples, random_state, progress, names, executor)
    labels = _check_fits(fits, names)
    seed = None
    if n_resamples is not None:
        _check_n_resamples(n_resamples)
        seed = r_seed(random_state)
    chk = _bridge.compare_check(fits)
    if not chk["response_equal"]:
        raise DataError("the models were fitted to different response values (or rows in a different order); "
                        "fit all models to the same data frame")
    fixed_equal = chk["fixed_equal"]
    reml = chk["reml"]
    do_refit, ws = _decide_refit(refit, fixed_equal, reml, labels)
    res = _bridge.compare(fits, model_names=labels, refit=do_refit, mixture=fixed_equal)
    ws += [w for w in r_warnings(res) if w.kind != "refit_ml"]  # lme4's note; our own refit_ml warning says it
    tab = res.value["table"].copy()
    order = [labels.index(str(m)) for m in tab["model"]]
    tab["model"] = [labels[i] for i in order]
    tab.insert(1, "formula", [fits[i].formula for i in order])
    tab["npar"] = tab["npar"].astype(int)
    for c in ("aic", "bic", "loglik", "deviance", "chisq", "df", "p_value"):
        tab[c] = pd.to_numeric(tab[c]).astype(float)
    estimator = "ML" if (do_refit or not any(reml)) else "REML"
    tab["estimator"] = estimator
    tab = tab.reindex(columns=list(COLUMNS))
    pmix = np.atleast_1d(np.asarray(res.value["p_mixture"], dtype=float))
    if fixed_equal and np.isfinite(pmix).any():
        tab["p_value_mixture"] = pmix
    pb = None
    prov = dict(fits[0].provenance)
    prov.update({"r_function": "lme4::anova.merMod", "estimator": estimator, "refit_ml": bool(do_refit)})
    if n_resamples is not None:
        pvals, pb, pb_ws = _parametric_bootstrap([fits[i] for i in order], list(tab["model"]), int(n_resamples),
                                                 seed, progress, executor)
        tab["p_value_pb"] = pvals
        ws += pb_ws
        prov.update({"n_resamples": int(n_resamples), "random_state": seed, "pb_function": "pbkrtest::PBmodcomp"})
    return CompareResult(table=tab, estimator=estimator, refitted=bool(do_refit and any(reml)), pb=pb,
                         warnings=tuple(ws), provenance=prov)


def _check_n_resamples(n_resamples: Any) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise DataError(f"n_resamples must be a positive integer number of bootstrap samples (e.g. 1000), "
                        f"not {n_resamples!r}")


#: in a worker: the two ML models of one bootstrap comparison (token -> (small, large)), received once per worker
_WORKER_FITS: dict[str, Any] = {}


@dataclass(frozen=True)
class _ShippedModel:
    """One of the caller's ML models, unserialized in a worker (what the bridge's wrappers read)."""

    _model: Any = field(repr=False)


def _pb_refit_task(token: str, ysim: np.ndarray, model_bytes: bytes) -> tuple[np.ndarray, list]:
    """In a worker: the caller's two ML models of the comparison (the ones ``me_pb_setup`` made,
    ``base::serialize``d by ``me_pb_models`` and unserialized here once per worker and token), then
    the likelihood-ratio statistics of the simulated responses ``ysim`` (``me_pb_sims``' column
    layout)."""
    pair = _WORKER_FITS.get(token)
    if pair is None:
        both = _bridge.unserialize_model(model_bytes)
        pair = (_ShippedModel(both["small"]), _ShippedModel(both["large"]))
        _WORKER_FITS.clear()
        _WORKER_FITS[token] = pair
    out = _bridge.pb_refit(pair[0], pair[1], ysim)
    return out.value, list(out.warnings)


#: bytes per simulated response of the parametric bootstrap: R's simulated data frame, its numpy
#: copy and the workers' slices (float64 each)
PB_VALUE_BYTES = 24


def _pb_guard(nobs: int, nsim: int, runner: Any, repeats: int) -> res.LoopGuard:
    """The loop guard of ``nsim`` bootstrap replicates (:class:`mixedeval._resources.LoopGuard`):
    the simulated responses (nobs x nsim) are checked before R draws them, the time after the
    first chunk of refits."""
    g = res.LoopGuard("the parametric bootstrap (pbkrtest::PBmodcomp)", nsim,
                      count=f"n_resamples={res.format_count(nsim)}", unit="replicates (2 refits each)",
                      workers=runner.n_workers if runner.name != "in-process" else 1, repeats=repeats,
                      fix="Use a smaller n_resamples (1,000 gives a p-value of 0.05 to +-0.014), the chi-square "
                          "test (n_resamples=None), or raise the limit.")
    g.check_matrix(nobs, PB_VALUE_BYTES // 8, "simulated responses")
    return g


def _pb_statistics(state, small, large, nsim: int, progress: bool, desc: str, executor: Any,
                   g: res.LoopGuard | None = None):
    """The bootstrap LR statistics (in replicate order) and the refits' warnings; the first chunk
    is timed by the guard ``g`` (default: :func:`_pb_guard`'s, memory not checked again)."""
    runner = resolve_executor(executor)
    g = g or _pb_guard(0, nsim, runner, 1)
    step = max(1, min(25, nsim // 20))
    g.start()
    if runner.name == "in-process":
        ref, warns = [], []
        for a, b in chunks(nsim, step, progress, desc):
            out = _bridge.pb_chunk(state, a + 1, b)
            ref.append(out.value)
            warns += list(out.warnings)
            g.block_done(b)
        return np.concatenate(ref), warns
    sims = _bridge.pb_sims(state)
    width = sims.shape[1] // nsim  # 2 columns per replicate for a cbind(successes, failures) response
    size = max(1, -(-nsim // (4 * runner.n_workers)))
    token = uuid.uuid4().hex
    bounds = [(0, step)] + [(a, min(nsim, a + size)) for a in range(step, nsim, size)]
    tasks = [(token, sims[:, a * width:b * width]) for a, b in bounds]
    outs = g.map(runner, _pb_refit_task, tasks, first_units=step, shared=_bridge.pb_models(state),
                 progress=progress, desc=desc)
    return np.concatenate([o[0] for o in outs]), [w for o in outs for w in o[1]]


#: absolute part of the boundary tolerance of :func:`boundary_zero` (deviance units)
BOUNDARY_ATOL = 1e-6
#: relative part (times |deviance|): far above the rounding of two deviances, far below any statistic
#: that carries evidence
BOUNDARY_RTOL = 1e-10


def boundary_zero(ref: np.ndarray, loglik: float) -> np.ndarray:
    """The bootstrap likelihood-ratio statistics with the boundary's numerical zeros set to 0.

    A replicate whose larger model puts its extra variance at 0 fits exactly as well as the
    smaller one: its statistic is 0 in exact arithmetic, and two optimizer runs leave it at
    +-1e-13 .. 1e-10. pbkrtest counts ``ref > 0`` (the denominator of its p-value, and the
    moments of its Gamma and Bartlett tests), so the sign of that rounding decided p: the refits
    of one replicate on another worker process (or CPU) differ in their last bits, and
    ``me.compare(..., executor=2)`` gave 1/23 where the in-process call gave 1/22 on the Kreutzer
    annotation data (issue 42). Statistics with ``|ref| < 1e-6 + 1e-10 |deviance|`` are therefore
    counted as 0 (the tolerance is above the optimizers' deviance precision and below any
    statistic with evidence: chi-square p > 0.999), so p no longer depends on which process
    refits which replicate. Where no statistic is that close to 0 the p-value is pbkrtest's on
    the raw statistics, digit for digit."""
    ref = np.asarray(ref, dtype=float).copy()
    tol = BOUNDARY_ATOL + BOUNDARY_RTOL * abs(2.0 * float(loglik)) if np.isfinite(loglik) else BOUNDARY_ATOL
    ref[np.abs(ref) < tol] = 0.0
    return ref


def _parametric_bootstrap(ordered_fits, labels, nsim: int, seed: int, progress: bool, executor: Any = None):
    """p_value_pb per row (NaN for the first) and pbkrtest's summary tables."""
    pvals = [np.nan]
    tables = []
    ws: list[ResultWarning] = []
    runner = resolve_executor(executor)
    for k in range(1, len(ordered_fits)):
        small, large = ordered_fits[k - 1], ordered_fits[k]
        g = _pb_guard(int(large.nobs), nsim, runner, len(ordered_fits) - k)
        # every comparison restarts from the seed, as a fresh set.seed(seed); PBmodcomp(...) would
        state = _bridge.pb_setup(large, small, n_resamples=nsim, r_seed=seed)
        desc = f"parametric bootstrap {labels[k]} vs {labels[k - 1]}"
        ref_arr, warns = _pb_statistics(state, small, large, nsim, progress, desc, runner, g)
        ref_arr = boundary_zero(ref_arr, getattr(large, "loglik", np.nan))
        n_warn = len(warns)
        first_warning = warns[0] if warns else None
        fin = _bridge.pb_finish(large, small, ref_arr)
        t = fin["test"]
        t.insert(0, "comparison", f"{labels[k]} vs {labels[k - 1]}")
        t["n_resamples"] = fin["nsim"]
        t["n_positive"] = fin["npos"]
        tables.append(t)
        pvals.append(float(t.loc[t["test"] == "PBtest", "p_value"].iloc[0]))
        if n_warn:
            ws.append(ResultWarning("pb_refit", f"{n_warn} of the {2 * nsim} bootstrap refits warned (first: {first_warning})",
                                    "R"))
    pb = pd.concat(tables, ignore_index=True)
    return np.asarray(pvals, dtype=float), pb, ws


def _compare_glmm(fits, n_resamples, random_state, progress, names, executor=None) -> CompareResult:
    """:func:`compare` for GLMM fits: lme4's ``anova(m0, m1)`` (all ML), the 50:50 mixture and,
    with ``n_resamples``, pbkrtest's parametric bootstrap (lme4 fits; the refits on the
    ``executor``'s workers as for LMMs)."""
    tab, ws, prov, ordered = glmm_lrt(fits, names)
    pb = None
    if n_resamples is not None:
        _check_n_resamples(n_resamples)
        if any(f.r_function == "glmmTMB::glmmTMB" for f in fits):
            raise DataError("the parametric bootstrap (pbkrtest::PBmodcomp) needs lme4 fits; glmmTMB fits "
                            "(beta, betabinomial) have the likelihood-ratio test only")
        seed = r_seed(random_state)
        pvals, pb, pb_ws = _parametric_bootstrap(ordered, list(tab["model"]), int(n_resamples), seed, progress,
                                                 executor)
        tab["p_value_pb"] = pvals
        ws = list(ws) + pb_ws
        prov.update({"n_resamples": int(n_resamples), "random_state": seed, "pb_function": "pbkrtest::PBmodcomp"})
    return CompareResult(table=tab, estimator="ML", refitted=False, pb=pb, warnings=tuple(ws), provenance=prov)
