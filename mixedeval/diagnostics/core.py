"""``from_simulations``: diagnostics from any simulation matrix (DHARMa's ``createDHARMa`` plus
``testResiduals``), with input validation."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from .._random import seed_sequence
from ..errors import DataError
from ..results import ResultWarning
from ._group import as_group
from .residuals import is_integer_response, pit_residuals
from .result import TEST_COLUMNS, Diagnostics
from .simtests import test_categorical, test_dispersion, test_outliers, test_uniformity, test_zero_inflation

MIN_SIMULATIONS = 10


def _as_float_array(x: Any, name: str) -> np.ndarray:
    try:
        arr = np.array(x, dtype=float, copy=True)
    except (TypeError, ValueError) as exc:
        raise DataError(f"`{name}` must be numeric; it could not be converted to floats ({exc}).") from None
    return arr


def _validate_simulated(simulated: Any, observed: Any) -> tuple[np.ndarray, np.ndarray]:
    sims = _as_float_array(simulated, "simulated")
    obs = _as_float_array(observed, "observed")
    if obs.ndim != 1:
        obs = obs.squeeze()
        if obs.ndim != 1:
            raise DataError(f"`observed` must be a 1-D vector of responses; got shape {np.shape(observed)}.")
    n = obs.size
    if sims.ndim != 2:
        raise DataError(
            f"`simulated` must be a 2-D matrix with one row per observation and one column per "
            f"simulation (n_obs x n_sim); got shape {sims.shape}."
        )
    if sims.shape[0] != n:
        hint = " It looks transposed: pass simulated.T." if sims.shape[1] == n else ""
        raise DataError(
            f"`simulated` has {sims.shape[0]} rows but `observed` has {n} values; the matrix must be "
            f"n_obs x n_sim (rows = observations, columns = simulations).{hint}"
        )
    if n < 3:
        raise DataError(f"only {n} observations; simulated-residual diagnostics need at least 3.")
    if sims.shape[1] < MIN_SIMULATIONS:
        raise DataError(
            f"`simulated` has {sims.shape[1]} simulations (columns); at least {MIN_SIMULATIONS} are needed "
            "and 250 or more are recommended (increase n_sim)."
        )
    bad = ~np.isfinite(sims)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise DataError(
            f"`simulated` contains {int(bad.sum())} NaN or infinite values (first at row {r}, column {c}); "
            "simulations must be complete -- drop the rows with missing responses before simulating."
        )
    if not np.isfinite(obs).all():
        i = int(np.flatnonzero(~np.isfinite(obs))[0])
        raise DataError(
            f"`observed` contains {int((~np.isfinite(obs)).sum())} NaN or infinite values (first at position {i}); "
            "remove those observations (and their simulation rows)."
        )
    return sims, obs


def _validate_predicted(predicted: Any, n: int) -> np.ndarray:
    pred = _as_float_array(predicted, "predicted").reshape(-1)
    if pred.size != n:
        raise DataError(f"`predicted` has {pred.size} values but there are {n} observations.")
    if not np.isfinite(pred).all():
        raise DataError("`predicted` contains NaN or infinite values; pass the model's population-level predictions.")
    return pred


def _validate_trials(trials: Any, n: int, observed: np.ndarray, sims: np.ndarray) -> np.ndarray | None:
    if trials is None:
        return None
    tr = _as_float_array(trials, "trials").reshape(-1)
    if tr.size != n:
        raise DataError(f"`trials` has {tr.size} values but there are {n} observations.")
    if not np.all(np.isfinite(tr)) or np.any(tr <= 0):
        raise DataError("`trials` must be positive numbers of binomial trials (one per observation); "
                        "drop observations with zero trials before simulating.")
    if np.any(observed > tr) or np.any(sims > tr[:, None]):
        raise DataError("`observed` and `simulated` must be numbers of successes, at most `trials` per "
                        "observation; pass counts (proportion x trials), not proportions above the trials.")
    return tr


def _freeze(a: np.ndarray | None) -> np.ndarray | None:
    if a is not None:
        a.setflags(write=False)
    return a


def tests_table(tests: list) -> Any:
    return pd.DataFrame([t.row() for t in tests], columns=TEST_COLUMNS)


def _generator_and_record(random_state: Any) -> tuple[np.random.Generator, Any]:
    """The Generator of the draws and what reproduces them (see ``Diagnostics.random_state``).

    An int gives ``numpy.random.default_rng(int)`` (its SeedSequence entropy is the int); None
    and a SeedSequence are recorded by their entropy; a Generator is used as it is (record None).
    """
    if isinstance(random_state, np.random.Generator):
        return random_state, None
    ss = seed_sequence(random_state)
    record: Any = ss.entropy if not ss.spawn_key else {"entropy": ss.entropy, "spawn_key": list(ss.spawn_key)}
    return np.random.default_rng(ss), record


def from_simulations(
    simulated: Any,
    observed: Any,
    predicted: Any = None,
    integer_response: bool | None = None,
    random_state: Any = None,
    *,
    group: Any = None,
    group_label: str | None = None,
    alpha: float = 0.05,
    alternative: str = "two-sided",
    trials: Any = None,
    simulation: str = "external",
) -> Diagnostics:
    """Simulated-residual diagnostics from an externally produced simulation matrix.

    The equivalent of DHARMa's ``createDHARMa(simulatedResponse, observedResponse,
    fittedPredictedResponse, integerResponse)`` followed by its tests (version 0.4.7 defaults):

    Parameters
    ----------
    simulated : array (n_obs, n_sim)
        Responses simulated from the fitted model, one column per simulation (n_sim >= 10).
    observed : array (n_obs,)
        The observed responses.
    predicted : array (n_obs,), optional
        Population-level predictions on the response scale (lme4 ``predict(re.form = NA, type =
        "response")``: a mean, a probability, a rate), used by the dispersion test and the residual
        plot. Default: row means of ``simulated`` (as DHARMa), with a warning.
    integer_response : bool or None
        True for integer responses (binomial successes, counts): enables the zero-inflation test
        and DHARMa's bootstrap outlier test for n <= 500. (With PIT residuals it does not change
        the residuals: ties are randomized whenever they occur.) None (default) decides from the
        values as DHARMa does for external simulations (:func:`is_integer_response`): whole
        numbers in ``observed`` and ``simulated`` with repeated simulated values.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Draws the uniforms that break ties in the PIT residuals (and the outlier bootstrap).
        Recorded on the result as ``random_state`` (the int, or the SeedSequence entropy drawn
        for None; None for a Generator).
    group : array-like, optional
        A categorical predictor: adds ``uniformity_by_group`` (KS per level, Holm) and ``levene``
        (median-centred) rows and the ``group_tests`` table.
    alpha : float
        Verdict threshold: ``warning`` when p < alpha.
    alternative : {"two-sided", "less", "greater"}
        Direction of the dispersion and zero-inflation tests (``"greater"``: only over-dispersion
        / excess zeros count as a deviation). Uniformity and outliers stay two-sided, as in
        DHARMa's ``testResiduals``; call the ``test_*`` functions for other directions.
    trials : array (n_obs,), optional
        Binomial trials per observation when ``observed``/``simulated`` are numbers of successes
        out of several trials (``cbind(successes, failures)`` or proportions with weights) and
        ``predicted`` is the probability: the dispersion test then centres the responses on the
        expected count ``trials * predicted``. (DHARMa 0.4.7 subtracts the probability itself from
        the counts, which leaves the test valid but dilutes it with the spread of the trials;
        for 0/1 responses, trials = 1, the two agree.)
    -------
    Diagnostics
        ``residuals``, the ``tests`` table (test, statistic, p_value, alternative, verdict,
        reason, method) and ``table`` (the same rows with ``source`` and ``name``).
    """
    sims, obs = _validate_simulated(simulated, observed)
    n, n_sim = sims.shape
    warnings: list[ResultWarning] = []
    if predicted is None:
        pred = sims.mean(axis=1)
        warnings.append(ResultWarning("predicted_missing", "no predictions given: the mean of the simulations is used (as DHARMa)."))
    else:
        pred = _validate_predicted(predicted, n)
    label = group_label or (str(group.name) if getattr(group, "name", None) is not None else "group")
    cat = as_group(group, n, label)
    tr = _validate_trials(trials, n, obs, sims)
    if integer_response is None:
        integer_response = is_integer_response(observed=obs, simulated=sims)
    rng, record = _generator_and_record(random_state)
    residuals = pit_residuals(sims, obs, random_state=rng)
    diag = Diagnostics(
        residuals=_freeze(residuals),
        tests=tests_table([]),
        n_obs=n,
        n_sim=n_sim,
        integer_response=bool(integer_response),
        random_state=record,
        alpha=alpha,
        simulation=simulation,
        warnings=tuple(warnings),
        provenance={"algorithm": "DHARMa 0.4.7 (PIT residuals), reimplemented in numpy", "residual_method": "PIT"},
        _simulated=_freeze(sims),
        _observed=_freeze(obs),
        _predicted=_freeze(pred),
        _group=cat,
        _trials=_freeze(tr),
    )
    tests = [
        test_uniformity(diag),
        test_dispersion(diag, alternative=alternative),
        test_outliers(diag, random_state=rng),
        test_zero_inflation(diag, alternative=alternative),
    ]
    group_tests = None
    if cat is not None:
        cat_tests, group_tests = test_categorical(diag, label=label)
        tests.extend(cat_tests)
    return dataclasses.replace(diag, tests=tests_table(tests), group_tests=group_tests)
