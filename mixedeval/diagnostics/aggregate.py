"""Residuals of responses summed within groups: DHARMa's ``recalculateResiduals(group = )``.

Observed responses, every simulation and the population-level predictions are summed within
each level of a grouping variable (DHARMa's ``aggregateBy = sum``), and the PIT residuals and tests
are computed on the sums. This is how over-dispersion of 0/1 outcomes becomes visible: a single
Bernoulli outcome cannot be over-dispersed (its variance is fixed by its mean), but the number
of correct answers of a system on an item over several runs can vary more between items than the
model allows. Summing over units that share a random effect level (all rows of an item) tests
that level's distribution instead.

Reference: Hartig, F. DHARMa (R package) 0.4.7, ``recalculateResiduals``.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..errors import DataError
from .core import as_group, from_simulations
from .result import Diagnostics


def _group_sums(values: np.ndarray, codes: np.ndarray, n_levels: int) -> np.ndarray:
    """Row sums of ``values`` ((n,) or (n, k)) within the level codes, levels in code order."""
    if values.ndim == 1:
        return np.bincount(codes, weights=values, minlength=n_levels)
    out = np.zeros((n_levels, values.shape[1]))
    np.add.at(out, codes, values)
    return out


def aggregate_residuals(
    diag: Diagnostics,
    group: Any,
    random_state: Any = None,
    *,
    alternative: str = "two-sided",
    alpha: float | None = None,
) -> Diagnostics:
    """Diagnostics of the responses summed within the levels of ``group``
    (DHARMa's ``recalculateResiduals(simulationOutput, group)``).

    ``group`` has one value per observation of ``diag`` (e.g. ``fit.model_frame()["item"]`` or
    an item x system key); the result has one residual per level (levels sorted as
    :func:`pandas.Categorical` sorts them, or a Categorical's own order). The predictions are
    summed too (for k/n binomial responses the expected counts ``trials * predicted``), so the
    dispersion test compares the variance of the observed sums around their expectation with
    the simulated sums'. ``random_state`` breaks the PIT ties of the sums; None reuses
    ``diag.random_state`` when it is an int. ``alternative`` is the direction of the dispersion and
    zero-inflation tests; ``alpha`` defaults to ``diag.alpha``.
    """
    cat = as_group(group, diag.n_obs, "group")
    if cat is None:
        raise DataError("group= is required: one value per observation naming the unit to sum over")
    n_levels = len(cat.categories)
    if n_levels < 3:
        raise DataError(f"`group` has {n_levels} levels; summing needs at least 3 groups to test anything.")
    codes = np.asarray(cat.codes)
    pred = np.asarray(diag.predicted, dtype=float)
    if diag.trials is not None:
        pred = pred * diag.trials
    if random_state is None and isinstance(diag.random_state, int):
        random_state = diag.random_state
    out = from_simulations(
        _group_sums(diag.simulated, codes, n_levels),
        _group_sums(diag.observed, codes, n_levels),
        _group_sums(pred, codes, n_levels),
        integer_response=diag.integer_response,
        random_state=random_state,
        alpha=diag.alpha if alpha is None else alpha,
        alternative=alternative,
        simulation=diag.simulation,
    )
    provenance = dict(diag.provenance)
    provenance.update(out.provenance)
    provenance.update({"aggregated": "sum within groups (DHARMa recalculateResiduals)", "n_groups": n_levels})
    return dataclasses.replace(out, provenance=provenance, warnings=out.warnings + tuple(
        w for w in diag.warnings if w not in out.warnings))
