"""Diagnostics of a fitted mixed model: simulated residuals plus classical checks.

:func:`diagnose_fit` works on a :class:`mixedeval.GLMMFit` (any fit with a ``family``: see
:mod:`mixedeval.diagnostics.glmm`) and on any object with the :class:`mixedeval.LMMFit` interface:
``simulate(n_sim, random_state=, re=)`` (lme4 ``simulate()``, an n_obs x n_sim array; an int
``random_state`` is R's ``set.seed``),
``response_values()``, ``fitted(re="population" | "conditional")``, ``residuals()``,
``ranef()`` (dict group -> DataFrame of BLUPs, one column per term), ``model_frame()``,
``singular``, ``converged`` and ``warnings``. With an ``executor`` and more than 250 simulations
the workers rebuild the model, which needs a :class:`mixedeval.LMMFit` (``formula``, ``data``,
``reml``, ``optimizer``, ``nobs``) whose formula passes the allow-list.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from .._format import fmt_p
from .._random import r_seed
from ..errors import DataError
from ._checks import (
    model_warnings_rows,
    normality_row as _normality_row,
    optimizer_row as _optimizer_row,
    row as _row,
    with_fit_provenance,
)
from ._blocks import plan_record, simulate_lmm
from ._levene import levene_median
from .core import MIN_SIMULATIONS, as_group, from_simulations
from .glmm import diagnose_glmm, is_glmm
from .result import CHECK_COLUMNS, Diagnostics
from .simtests import _check_alternative


def _is_factor(s) -> bool:
    return isinstance(s.dtype, pd.CategoricalDtype) or s.dtype == object or pd.api.types.is_bool_dtype(s) or pd.api.types.is_string_dtype(s)


def _levene_row(name: str, residuals: np.ndarray, column, alpha: float) -> dict[str, Any]:
    cat = as_group(column, residuals.size, name)
    lev = levene_median(residuals, np.asarray(cat.codes))
    check = f"levene[{name}]"
    method = "Levene's test (center = median), as car::leveneTest"
    if np.isnan(lev.p_value):
        return _row(check, "not_applicable", f"{name}: needs at least 2 levels and more observations than levels", method=method)
    text = f"F({lev.df_num},{lev.df_den})={lev.statistic:.3g}, p={fmt_p(lev.p_value)}"
    if lev.p_value < alpha:
        return _row(check, "warning", f"residual variance differs between levels of {name} ({text})", lev.statistic, lev.p_value, method)
    return _row(check, "ok", f"residual variance homogeneous across levels of {name} ({text})", lev.statistic, lev.p_value, method)


def classical_checks(
    residuals: np.ndarray,
    model_frame: Any,
    ranef: dict[str, Any] | None,
    singular: bool,
    converged: bool,
    fit_warnings: Any = (),
    alpha: float = 0.05,
):
    """The classical checks of a linear mixed model as a table ``check, statistic, p_value,
    verdict, reason, method``:

    * ``convergence`` and ``singular_fit`` status;
    * ``normality_residuals``: Shapiro-Wilk (R's ``shapiro.test``) of the conditional residuals,
      D'Agostino-Pearson K^2 above 5000 observations;
    * ``normality_ranef[group:term]``: the same for each column of BLUPs (not applicable when the
      variance component is zero);
    * ``levene[factor]``: Levene's test (median centring, ``car::leveneTest``) of the conditional
      residuals across the levels of each categorical column of the model frame;
    * ``model_warnings``: other warnings R gave when fitting.
    """
    residuals = np.asarray(residuals, dtype=float)
    rows = [
        _row("convergence", "ok", "optimizer converged") if converged
        else _row("convergence", "warning", "the optimizer did not converge: estimates may be unreliable (try another optimizer)"),
        _row("singular_fit", "warning", "singular (boundary) fit: a variance component is zero or a correlation is +-1; "
             "zero components are reported as zero, consider simplifying the random effects") if singular
        else _row("singular_fit", "ok", "fit is not singular"),
        _normality_row("normality_residuals", residuals, "conditional residuals", alpha),
    ]
    for group, blups in (ranef or {}).items():
        for term in blups.columns:
            rows.append(_normality_row(f"normality_ranef[{group}:{term}]", blups[term].to_numpy(dtype=float),
                                       f"BLUPs of {term} by {group}", alpha))
    if model_frame is not None:
        for name in model_frame.columns:
            col = model_frame[name]
            if _is_factor(col) and len(col) == residuals.size:
                rows.append(_levene_row(str(name), residuals, col, alpha))
    other = [w for w in (fit_warnings or ()) if getattr(w, "kind", "") not in ("singular", "convergence")]
    rows += model_warnings_rows(other)
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


def diagnose_fit(
    fit: Any,
    n_sim: int = 250,
    random_state: Any = 123,
    re: str = "unconditional",
    group: Any = None,
    alpha: float = 0.05,
    check_optimizers: bool = False,
    alternative: str = "two-sided",
    executor: Any = None,
) -> Diagnostics:
    """Simulated-residual diagnostics (DHARMa's algorithm) and classical checks of a fitted model.

    For a GLMM (:class:`mixedeval.GLMMFit`) this is :func:`mixedeval.diagnostics.glmm.diagnose_glmm`
    (integer responses: randomized PIT residuals, zero-inflation test, GLMM checks); the rest of
    this docstring describes the linear mixed model.

    Simulations come from lme4's ``simulate()`` (``fit.simulate(n, random_state=..., re=re)``;
    ``re="unconditional"`` draws new random effects, DHARMa's default; ``"conditional"`` keeps the
    BLUPs), in blocks of 250 (below); the dispersion test uses the population-level predictions
    (DHARMa's ``getFitted``: ``predict(re.form = ~0)``).

    ``random_state`` (None, int, ``numpy.random.SeedSequence`` or ``numpy.random.Generator``)
    becomes one int ``s`` (:func:`mixedeval._random.r_seed`; an int is kept as it is) that is R's
    ``set.seed`` for the simulations and seeds the numpy tie-breaking of the PIT residuals; that
    int is recorded as ``Diagnostics.random_state`` and ``provenance["random_state"]``, so
    ``random_state=<recorded int>`` reproduces the diagnosis. The default 123 is DHARMa's
    (``simulateResiduals(seed = 123)``): repeated calls give the same residuals and verdicts.

    Blocks (:mod:`mixedeval.diagnostics._blocks`): the simulations are drawn 250 at a time (DHARMa's
    default ``n_sim``). Block 0 is ``simulate(m, nsim = min(n_sim, 250), seed = s)``, so for
    ``n_sim <= 250`` the matrix equals R's ``simulate(m, nsim = n_sim, seed = s)``; block ``b >= 1``
    uses ``seed = r_seed(numpy.random.SeedSequence(s, spawn_key=(b,)))``. Every block's seed
    depends on ``(s, b)`` only, so the simulations are the same with every ``executor`` and any
    number of workers; ``provenance["simulation_block_seeds"]`` lists ``[size, seed]`` per block.
    ``executor`` (None, an int or ``"processes"``, or a ``dask.distributed.Client``): where the
    blocks are simulated when there are several (``n_sim > 250``); each worker rebuilds the model
    once from the fit's formula, model frame, REML flag and optimizer (the same fit: on one machine
    the same simulations to the last bit, across machines to optimizer precision; a fit made with
    ``allow_r_code=True`` is not rebuilt: use ``executor=None``). The numpy draws (PIT ties,
    outlier bootstrap) and the classical checks run here.
    ``group`` (a model-frame column name or an array) adds the per-level uniformity and Levene
    tests on the scaled residuals. ``alternative`` is the direction of the dispersion and
    zero-inflation tests (see :func:`from_simulations`). The ``checks`` table holds :func:`classical_checks`;
    with ``check_optimizers=True`` it also holds the optimizer comparison
    (``fit.check_optimizers()``: refits with nloptwrap, bobyqa and Nelder-Mead; a warning when they
    disagree, since an early stop can change estimates and Satterthwaite df without any
    convergence warning).
    """
    if re not in ("unconditional", "conditional"):
        raise DataError(f"re must be 'unconditional' or 'conditional', not {re!r}")
    if int(n_sim) < MIN_SIMULATIONS:
        raise DataError(f"n_sim={n_sim}: at least {MIN_SIMULATIONS} simulations are needed and 250 or more are recommended.")
    _check_alternative(alternative)  # before R simulates
    if is_glmm(fit):
        return diagnose_glmm(fit, n_sim=n_sim, random_state=random_state, re=re, group=group, alpha=alpha,
                             check_optimizers=check_optimizers, alternative=alternative, executor=executor)
    state = r_seed(random_state)
    mf = fit.model_frame()
    label = None
    if isinstance(group, str):
        if group not in mf.columns:
            raise DataError(f"group={group!r} is not a column of the model frame; available: {list(mf.columns)}")
        label, group = group, mf[group]
    sims, plan = simulate_lmm(fit, int(n_sim), state, re, executor)
    diag = from_simulations(
        sims, fit.response_values(), fit.fitted(re="population"), integer_response=False,
        random_state=state, group=group, group_label=label, alpha=alpha, simulation=re, alternative=alternative,
    )
    resid = np.asarray(fit.residuals(), dtype=float)
    ranef = fit.ranef()
    fit_warnings = tuple(getattr(fit, "warnings", ()) or ())
    checks = classical_checks(resid, mf, ranef, bool(fit.singular), bool(fit.converged), fit_warnings, alpha)
    if check_optimizers:
        checks = pd.concat([checks, pd.DataFrame([_optimizer_row(fit)])], ignore_index=True)
    provenance = with_fit_provenance(
        diag.provenance, fit, {"simulation": f"lme4 simulate(), {re}", "n_sim": int(n_sim), "random_state": state,
                               "simulation_block_seeds": plan_record(plan)})
    return dataclasses.replace(
        diag,
        checks=checks,
        warnings=diag.warnings + fit_warnings,
        provenance=provenance,
        _conditional_residuals=resid,
        _fitted_conditional=np.asarray(fit.fitted(re="conditional"), dtype=float),
        _ranef=ranef,
    )
