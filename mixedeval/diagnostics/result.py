"""Result objects of the simulated-residual diagnostics, and the simulation p-value and generic
simulation test (DHARMa's ``getP`` and ``testGeneric``) that the tests of :mod:`.simtests` build on."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd

from .._format import fmt_p
from ..errors import DataError
from ..results import ResultMixin, ResultWarning
from ._ks import ALTERNATIVES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: columns of ``Diagnostics.tests`` (the first five are the public contract of issue 5)
TEST_COLUMNS = ["test", "statistic", "p_value", "alternative", "verdict", "reason", "method"]
#: columns of ``Diagnostics.checks``
CHECK_COLUMNS = ["check", "statistic", "p_value", "verdict", "reason", "method"]
#: columns of ``Diagnostics.group_tests``
GROUP_TEST_COLUMNS = ["level", "n", "statistic", "p_value", "p_adj", "exact", "verdict"]
#: columns of ``Diagnostics.table`` (every test and check in one table)
TABLE_COLUMNS = ["source", "name", "statistic", "p_value", "alternative", "verdict", "reason", "method"]

VERDICTS = ("ok", "warning", "not_applicable")


@dataclass(frozen=True, eq=False, repr=False)
class SimulationTest(ResultMixin):
    """One diagnostic test: statistic, p-value, alternative and a verdict with a one-line reason.

    ``observed_summary`` and ``simulated_summaries`` hold the summary statistic on the data and on
    each simulation for the simulation-based tests (dispersion, zero-inflation, generic), else
    ``None``. ``details`` holds test-specific numbers (e.g. the expected outlier count).
    ``table`` is the test as a one-row DataFrame (``test, statistic, p_value, alternative,
    verdict, reason, method``).
    """

    test: str
    statistic: float
    p_value: float
    alternative: str
    verdict: str
    reason: str
    method: str
    observed_summary: float | None = None
    simulated_summaries: np.ndarray | None = None
    details: dict[str, Any] = field(default_factory=dict)

    _main_table = "table"
    _title = "Simulation test"

    @property
    def table(self) -> "pd.DataFrame":
        """The test as a one-row table: ``test, statistic, p_value, alternative, verdict, reason, method``."""
        return pd.DataFrame([self.row()], columns=TEST_COLUMNS)

    def row(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in TEST_COLUMNS}


@dataclass(frozen=True, eq=False, repr=False)
class Diagnostics(ResultMixin):
    """Simulated-residual diagnostics of one model (DHARMa's algorithm, version 0.4.7 defaults).

    Attributes
    ----------
    table : DataFrame
        The main table: every test and check in one table, ``source, name, statistic, p_value,
        alternative, verdict, reason, method`` (``source`` is ``simulated_residuals`` for the rows
        of ``tests`` and ``classical`` for the rows of ``checks``).
    residuals : ndarray (n_obs,)
        Scaled PIT residuals, U(0, 1) under a correct model.
    tests : DataFrame
        ``test, statistic, p_value, alternative, verdict, reason, method``; rows ``uniformity``,
        ``dispersion``, ``outliers``, ``zero_inflation`` and, with a grouping variable,
        ``uniformity_by_group`` and ``levene``.
    group_tests : DataFrame or None
        Per-level KS tests (``level, n, statistic, p_value, p_adj, exact, verdict``; Holm).
    checks : DataFrame or None
        Classical checks of a fitted model (``check, statistic, p_value, verdict, reason,
        method``); ``None`` for :func:`from_simulations`.
    random_state : int, entropy record or None
        What reproduces the random draws (R's ``set.seed`` value and the numpy tie-breaking of
        the PIT residuals): the int given or used; for ``random_state=None`` or a
        ``SeedSequence`` given to :func:`from_simulations`, the SeedSequence's entropy (pass
        ``numpy.random.SeedSequence(entropy)`` to reproduce); ``None`` when a ``Generator`` was
        passed (its state belongs to the caller).
    """

    residuals: np.ndarray
    tests: "pd.DataFrame"
    n_obs: int
    n_sim: int
    integer_response: bool
    random_state: Any
    alpha: float
    simulation: str = "external"
    group_tests: "pd.DataFrame | None" = None
    checks: "pd.DataFrame | None" = None
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    # large arrays: kept out of to_dict() (leading underscore), exposed read-only as properties
    _simulated: np.ndarray | None = None
    _observed: np.ndarray | None = None
    _predicted: np.ndarray | None = None
    _group: Any = None
    _conditional_residuals: np.ndarray | None = None
    _fitted_conditional: np.ndarray | None = None
    _ranef: dict[str, Any] | None = None
    _trials: np.ndarray | None = None

    _main_table = "table"
    _print_tables = ("tests", "group_tests", "checks")
    _title = "Simulated-residual diagnostics (DHARMa algorithm)"

    def _scalars(self) -> list[tuple[str, Any]]:
        return [("observations", self.n_obs), ("simulations", f"{self.n_sim} ({self.simulation})"), ("random_state", self.random_state)]

    # read-only views of the inputs -------------------------------------------------------------
    @property
    def simulated(self) -> np.ndarray:
        """The simulation matrix (n_obs x n_sim)."""
        return self._simulated

    @property
    def observed(self) -> np.ndarray:
        return self._observed

    @property
    def predicted(self) -> np.ndarray:
        """Population-level (fixed-effects) predictions used by the dispersion test and plots."""
        return self._predicted

    @property
    def trials(self) -> np.ndarray | None:
        """Binomial trials per observation (k/n responses) or None."""
        return self._trials

    @property
    def group(self):
        """The grouping variable of the categorical tests (pandas Categorical) or None."""
        return self._group

    @property
    def conditional_residuals(self) -> np.ndarray | None:
        return self._conditional_residuals

    @property
    def fitted_conditional(self) -> np.ndarray | None:
        return self._fitted_conditional

    @property
    def ranef(self) -> dict[str, Any] | None:
        return self._ranef

    # the main table and conveniences ------------------------------------------------------------
    @property
    def table(self) -> "pd.DataFrame":
        """Every test and check in one table: ``source, name, statistic, p_value, alternative,
        verdict, reason, method`` (checks have no ``alternative``: None)."""
        parts = [self.tests.assign(source="simulated_residuals").rename(columns={"test": "name"})]
        if self.checks is not None and len(self.checks):
            parts.append(self.checks.assign(source="classical", alternative=None).rename(columns={"check": "name"}))
        return pd.concat(parts, ignore_index=True)[TABLE_COLUMNS]

    @property
    def ok(self) -> bool:
        """True when no test and no check gave a warning."""
        frames = [self.tests] + ([self.checks] if self.checks is not None else [])
        return not any((f["verdict"] == "warning").any() for f in frames)

    def summary(self) -> "pd.DataFrame":
        """The verdicts of :attr:`table` in short: ``source, name, verdict, reason``."""
        return self.table[["source", "name", "verdict", "reason"]]

    def test_generic(self, fun: Callable[[np.ndarray], float], alternative: str = "two-sided", name: str = "generic") -> SimulationTest:
        """Shortcut for :func:`mixedeval.diagnostics.test_generic` on this object."""
        return test_generic(self, fun, alternative=alternative, name=name)


# ------------------------------------------------------------------------------------------------
# The simulation p-value (DHARMa's getP) and the generic simulation test: the other tests of
# :mod:`.simtests` build on them and Diagnostics.test_generic runs the test. They live here, beside
# the result classes they return, so that simtests imports this module and not the other way round
# (simtests re-exports them: mixedeval.diagnostics.test_generic is unchanged).
def _check_alternative(alternative: str) -> None:
    if alternative not in ALTERNATIVES:
        hint = " (R's 'two.sided' is spelled 'two-sided')" if alternative == "two.sided" else ""
        raise DataError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}{hint}")


def _verdict(p: float, alpha: float) -> str:
    return "warning" if p < alpha else "ok"


def simulation_p_value(simulated: np.ndarray, observed: float, alternative: str = "two-sided") -> float:
    """DHARMa's ``getP``: where the observed summary falls among the simulated summaries."""
    simulated = np.asarray(simulated, dtype=float)
    ge = float(np.mean(simulated >= observed))
    le = float(np.mean(simulated <= observed))
    if alternative == "greater":
        return ge
    if alternative == "less":
        return le
    return min(min(le, ge) * 2, 1.0)


def _ratio_and_p(observed: float, simulated: np.ndarray, alternative: str, alpha: float) -> tuple[float, float, str]:
    """testGeneric's statistic (observed / mean simulated), getP p-value and the verdict."""
    p = simulation_p_value(simulated, observed, alternative)
    mean_sim = float(np.mean(simulated))
    ratio = observed / mean_sim if mean_sim != 0 else (float("nan") if observed == 0 else float("inf"))
    return ratio, p, _verdict(p, alpha)


def test_generic(
    diag: Diagnostics,
    fun: Callable[[np.ndarray], float],
    alternative: str = "two-sided",
    name: str = "generic",
    alpha: float | None = None,
) -> SimulationTest:
    """DHARMa's ``testGeneric``: ``fun`` on the observed response and on each simulation.

    Statistic = fun(y) / mean(fun(simulations)) (``ratioObsSim``); p-value by ``getP``.
    ``fun`` takes a 1-D array of length n_obs and returns a number.
    """
    _check_alternative(alternative)
    alpha = diag.alpha if alpha is None else alpha
    observed = float(fun(np.asarray(diag.observed)))
    sims_by_col = np.ascontiguousarray(diag.simulated.T)
    simulated = np.array([float(fun(col)) for col in sims_by_col])
    ratio, p, verdict = _ratio_and_p(observed, simulated, alternative, alpha)
    text = f"observed/simulated {ratio:.3g}, p={fmt_p(p)}"
    reason = f"{name} statistic differs from the simulations ({text})" if verdict == "warning" else f"{name} statistic as simulated ({text})"
    return SimulationTest(name, ratio, p, alternative, verdict, reason, "DHARMa generic simulation test", observed_summary=observed, simulated_summaries=simulated)
