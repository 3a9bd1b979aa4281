"""Power and sample size for evaluation designs by simulation from a mixed model (as R's simr:
``powerSim``, ``powerCurve``, ``extend``).

:func:`power` simulates responses from a model -- a pilot fit (:class:`~mixedeval.LMMFit`, or a
binomial :class:`~mixedeval.GLMMFit`: variance components as estimated, the tested term's
coefficients replaced by ``effect``) or a :func:`mixedeval.design` (a design table with
variance components, no data) -- runs the analysis on each, and counts rejections at ``alpha``.
Responses are drawn by lme4's ``simulate(m, newparams = list(beta, theta, sigma))``; the tests:

* ``"lrt"``: likelihood-ratio test of the term (``me.compare``'s test: both models by ML,
  chi-square on the difference in parameters), refits by ``lme4::refit``;
* ``"satterthwaite"`` / ``"kenward-roger"``: ``lmerTest::lmer`` (REML) and
  ``lmerTest::contest`` of the term's coefficients (an F test; for one coefficient it is the t
  test of ``fit.fixed`` / the contrast, F = t²);
* ``"wald_z"``: a binomial GLMM fitted by ``lme4::glmer`` as ``me.glmm`` fits it (Laplace,
  glmer's default two-stage optimizer, me.glmm's rule for the covariance of the fixed effects)
  and the Wald z test of the coefficient (``fit.fixed``'s ``z_value``);
* ``"sign_flip"``, ``"approximate_randomization"``, ``"paired_bootstrap"``: the paired
  resampling tests of :mod:`mixedeval.resampling` on the two systems' per-item means (averaged
  over runs and raters), ``n_resamples`` each.

Power is the share of rejections (p-value <= alpha) among the simulations whose analysis ran,
with the Clopper-Pearson interval at ``level`` (``scipy.stats.binomtest(...).proportion_ci``).
Simulations and refits run in R in batches of ``batch_size`` (one R call per batch); see
:mod:`mixedeval.workflows._power_sim` for the seeding (results do not depend on the batch size;
equal ``random_state`` means common random numbers across effects and sizes).

:func:`power_curve` repeats it along one factor (items, runs, raters, languages; or a column of
the pilot data, whose levels are copied as simr's ``extend``); :func:`sample_size` searches for
the smallest size reaching ``target`` power and states the Monte-Carlo range of its answer;
:func:`minimum_detectable_effect` searches for the smallest effect detected with ``target``
power for a fixed design.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._executor import resolve_executor
from .._random import seed_sequence
from ..data._design_spec import Design
from ..errors import DataError
from ..inference._lmm import r_provenance
from ..results import ResultWarning
from . import _power_sim as ps
from ._common import _WorkflowResult, dedupe_warnings

_POWER_COLUMNS = ["test", "effect", "alpha", "n_sim", "n_used", "n_rejected", "power", "conf_low", "conf_high",
                  "n_singular", "n_failed"]


def clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a binomial proportion k / n at ``level``."""
    if n == 0:
        return math.nan, math.nan
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


# ------------------------------------------------------------------------------------ results
@dataclass(frozen=True, repr=False, eq=False)
class PowerResult(_WorkflowResult):
    """Power of one test for one design and effect (see :func:`power`).

    table : one row: test, effect, alpha, n_sim, n_used, n_rejected, power, conf_low, conf_high
        (Clopper-Pearson at ``level``), n_singular, n_failed.
    simulations : one row per simulation: sim, r_seed (R's set.seed before its response was
        drawn), estimate (the term's first coefficient, or the paired tests' difference), the
        statistic (``chisq``, ``f_value``, ``z_value`` or ``statistic``), den_df, p_value,
        singular, failed, problem (errors and warnings of its analysis).
    parameters : the model simulated from: parameter (beta / theta / sigma / variance), name, value.
    """

    table: Any
    simulations: Any
    parameters: Any
    test: str
    effect: tuple[float, ...]
    alpha: float
    level: float
    n_sim: int
    power: float
    conf_low: float
    conf_high: float
    formula: str
    null_formula: str | None
    source: str
    design: Design | None = field(default=None, repr=False)
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)

    _print_tables = ("table", "parameters")
    _title = "Power by simulation"
    _skip_in_dict = ("design",)

    def _scalars(self):
        return [("power", f"{self.power:.3f} [{self.conf_low:.3f}, {self.conf_high:.3f}]"), ("test", self.test),
                ("formula", self.formula), ("n_sim", self.n_sim)]


@dataclass(frozen=True, repr=False, eq=False)
class PowerCurveResult(_WorkflowResult):
    """Power along one factor (see :func:`power_curve`).

    table : one row per size: along, n_levels, and the columns of :class:`PowerResult`'s table.
    results : the :class:`PowerResult` of each size.
    """

    table: Any
    along: str
    test: str
    effect: tuple[float, ...]
    alpha: float
    level: float
    target: float | None
    results: tuple[PowerResult, ...] = field(repr=False)
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)

    _title = "Power curve"
    _skip_in_dict = ("results",)

    def _scalars(self):
        return [("along", self.along), ("test", self.test), ("effect", list(self.effect))]


@dataclass(frozen=True, repr=False, eq=False)
class SampleSizeResult(_WorkflowResult):
    """The smallest size along one factor reaching ``target`` power (see :func:`sample_size`).

    n_levels : the smallest size evaluated whose estimated power is >= target (None if none).
    n_levels_low, n_levels_high : its Monte-Carlo range: sizes below ``n_levels_low`` have a
        Clopper-Pearson upper bound below target (too small even allowing for simulation error);
        ``n_levels_high`` is the smallest size whose lower bound reaches target (enough even
        allowing for it). None where no size evaluated qualifies.
    table : the power curve evaluated during the search (sorted by size).
    """

    table: Any
    along: str
    target: float
    n_levels: int | None
    n_levels_low: int | None
    n_levels_high: int | None
    test: str
    effect: tuple[float, ...]
    alpha: float
    level: float
    curve: PowerCurveResult = field(repr=False)
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)

    _title = "Sample size for a target power"
    _skip_in_dict = ("curve",)

    def _scalars(self):
        return [("along", self.along), ("target", self.target), ("n_levels", self.n_levels),
                ("Monte-Carlo range", f"[{self.n_levels_low}, {self.n_levels_high}]"), ("test", self.test)]


@dataclass(frozen=True, repr=False, eq=False)
class MinimumDetectableEffect(_WorkflowResult):
    """The smallest effect detected with ``target`` power (see :func:`minimum_detectable_effect`).

    effect : the minimum detectable effect, interpolated linearly between the two evaluated
        effects whose estimated power brackets the target.
    effect_low, effect_high : its Monte-Carlo range, the same interpolation on the
        Clopper-Pearson upper and lower bounds (effects below ``effect_low`` are not detected with
        target power even allowing for simulation error; ``effect_high`` is enough even allowing
        for it). NaN where the evaluated effects do not bracket the target.
    table : power at every effect evaluated (sorted by effect).
    """

    table: Any
    effect: float
    effect_low: float
    effect_high: float
    target: float
    test: str
    alpha: float
    level: float
    results: tuple[PowerResult, ...] = field(repr=False)
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)

    _title = "Minimum detectable effect"
    _skip_in_dict = ("results",)

    def _scalars(self):
        return [("minimum detectable effect", f"{self.effect:.6g} [{self.effect_low:.6g}, {self.effect_high:.6g}]"),
                ("target", self.target), ("test", self.test), ("alpha", self.alpha)]


# --------------------------------------------------------------------------------- validation
def _effect(effect: Any) -> tuple[float, ...]:
    vals = np.atleast_1d(np.asarray(effect, dtype=float)) if not isinstance(effect, str) else np.array([np.nan])
    if vals.ndim != 1 or vals.size == 0 or not np.isfinite(vals).all():
        raise DataError(f"effect must be a finite number (or one per coefficient of the term), got {effect!r}")
    return tuple(float(v) for v in vals)


def _prob(name: str, x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be a number strictly between 0 and 1, got {x!r}") from exc
    if not 0.0 < v < 1.0:
        raise DataError(f"{name} must be strictly between 0 and 1, got {x!r}")
    return v


def _count(name: str, x: Any, minimum: int = 1) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < minimum:
        raise DataError(f"{name} must be an integer >= {minimum}, got {x!r}")
    return int(x)


@dataclass(frozen=True)
class _Settings:
    test: str
    alpha: float
    level: float
    n_sim: int
    n_resamples: int
    batch_size: int
    progress: bool
    ss: Any
    random_state: Any
    executor: Any = None  # a mixedeval._executor.Runner
    repeats: int = 1  # power estimates still to make with these settings (the time guard's multiplier)


def _settings(test: str, alpha: Any, level: Any, n_sim: Any, n_resamples: Any, batch_size: Any, progress: Any,
              random_state: Any, executor: Any = None) -> _Settings:
    return _Settings(test=test, alpha=_prob("alpha", alpha), level=_prob("level", level),
                     n_sim=_count("n_sim", n_sim), n_resamples=_count("n_resamples", n_resamples),
                     batch_size=_count("batch_size", batch_size), progress=bool(progress),
                     ss=seed_sequence(random_state), random_state=random_state, executor=resolve_executor(executor))


# ------------------------------------------------------------------------------------ the core
def _parameters(info: dict[str, Any], m: ps.Model) -> pd.DataFrame:
    rows = [("beta", k, v) for k, v in info["beta"].items()] + [("theta", k, v) for k, v in info["theta"].items()]
    if m.family == "gaussian":
        rows.append(("sigma", "residual", info["sigma"]))
    if m.variances is not None:
        rows += [("variance", k, v) for k, v in m.variances.items()]
    return pd.DataFrame(rows, columns=["parameter", "name", "value"])


def _warnings(sims: pd.DataFrame, n_used: int, n_sim: int) -> list[ResultWarning]:
    out = []
    n_failed = n_sim - n_used
    if n_failed:
        first = next((p for p in sims["problem"] if p.startswith("error")), "")
        out.append(ResultWarning("failed_simulations", f"{n_failed} of {n_sim} analyses failed and are left out of "
                                 f"the power estimate (first: {first})"))
    n_sing = int(sims["singular"].fillna(False).sum())
    if n_sing:
        out.append(ResultWarning("singular", f"{n_sing} of {n_sim} refits were singular (a variance estimated at "
                                 "zero); they are counted as analysed, as the analyst would"))
    if n_sim < 100:
        out.append(ResultWarning("few_simulations", f"only {n_sim} simulations: the Monte-Carlo interval of the "
                                 "power is wide (use n_sim >= 1000 for decisions)"))
    return out


def _power(m: ps.Model, effect: tuple[float, ...], s: _Settings) -> PowerResult:
    """One power estimate: simulate, analyse, count."""
    ps.check_test(m, s.test)
    sims, info = ps.run(m, effect, s.test, n_sim=s.n_sim, ss=s.ss, batch_size=s.batch_size,
                        n_resamples=s.n_resamples, progress=s.progress, executor=s.executor, repeats=s.repeats)
    used = ~sims["failed"].to_numpy()
    n_used = int(used.sum())
    k = int((sims["p_value"].to_numpy()[used] <= s.alpha).sum())
    pw = k / n_used if n_used else math.nan
    lo, hi = clopper_pearson(k, n_used, s.level)
    row = {"test": s.test, "effect": effect[0] if len(effect) == 1 else str(list(effect)), "alpha": s.alpha,
           "n_sim": s.n_sim, "n_used": n_used, "n_rejected": k, "power": pw, "conf_low": lo, "conf_high": hi,
           "n_singular": int(sims["singular"].fillna(False).sum()), "n_failed": s.n_sim - n_used}
    prov = r_provenance()
    prov.update({"function": "power", "test": s.test, "n_sim": s.n_sim, "batch_size": s.batch_size,
                 "random_state": s.random_state if isinstance(s.random_state, int) else None,
                 "seed_entropy": str(s.ss.entropy), "seeding": "set.seed(r_seed(stream(stream(ss, 0), i))) per "
                 "simulation i", "r_function": "lme4::simulate + lme4::refit / lmerTest::lmer",
                 "n_resamples": s.n_resamples if s.test in ps.RESAMPLING_TESTS else None,
                 "coefficients": info["coef"]})
    return PowerResult(table=pd.DataFrame([row], columns=_POWER_COLUMNS), simulations=sims,
                       parameters=_parameters(info, m), test=s.test, effect=effect, alpha=s.alpha, level=s.level,
                       n_sim=s.n_sim, power=pw, conf_low=lo, conf_high=hi, formula=m.formula,
                       null_formula=info["null_formula"] if s.test == "lrt" else None, source=m.source,
                       design=m.design, warnings=tuple(_warnings(sims, n_used, s.n_sim)), provenance=prov)


def power(
    model: Any,
    effect: float | Sequence[float],
    *,
    test: str = "lrt",
    term: str | None = None,
    alpha: float = 0.05,
    n_sim: int = 200,
    level: float = 0.95,
    random_state: Any = None,
    n_resamples: int = 1000,
    system: str | None = None,
    item: str | None = None,
    batch_size: int = 20,
    progress: bool = False,
    executor: Any = None,
) -> PowerResult:
    """Power of a test to detect ``effect``, estimated by simulation.

    Parameters
    ----------
    model : a :func:`mixedeval.design` (no data), or a pilot :class:`~mixedeval.LMMFit` /
        binomial :class:`~mixedeval.GLMMFit` (variance components and the other fixed effects
        as estimated).
    effect : the tested term's coefficient(s): for ``system``, the difference of each other
        system from the reference (one number for two systems; binomial: in log-odds).
    test : ``"lrt"``, ``"satterthwaite"``, ``"kenward-roger"`` (Gaussian), ``"wald_z"``
        (binomial), or a paired resampling test ``"sign_flip"``, ``"approximate_randomization"``,
        ``"paired_bootstrap"`` (two systems; per-item means).
    term : the fixed-effect term tested (default ``"system"``; a design always tests ``system``).
    alpha, level : test level; confidence level of the Clopper-Pearson interval of the power.
    n_sim : simulations (the Monte-Carlo SE of a power p is sqrt(p (1 - p) / n_sim)).
    random_state : an int, SeedSequence, Generator or None; simulation i uses R's
        ``set.seed`` with a value derived from it and i (see ``simulations["r_seed"]``).
    n_resamples : resamples of each paired resampling test.
    system, item : columns of the paired tests for a pilot fit (default: ``term`` and none).
    batch_size : simulations per R call (does not change the results).
    executor : where the batches run: None (this process), an int or ``"processes"`` (local
        worker processes, each with its own R) or a ``dask.distributed.Client``; every simulation
        is seeded from its index, so the result is the same with every executor.
    """
    s = _settings(test, alpha, level, n_sim, n_resamples, batch_size, progress, random_state, executor)
    m = ps.as_model(model, term, system, item)
    return _power(m, _effect(effect), s)


def _curve(m: ps.Model, effect: tuple[float, ...], along: str, values: Sequence[int], s: _Settings,
           target: float | None) -> PowerCurveResult:
    results, rows = [], []
    for i, v in enumerate(values):
        r = _power(ps.extend(m, along, int(v)), effect, replace(s, repeats=len(values) - i))
        results.append(r)
        rows.append({"along": along, "n_levels": int(v), **r.table.iloc[0].to_dict()})
    table = pd.DataFrame(rows, columns=["along", "n_levels", *_POWER_COLUMNS])
    ws = dedupe_warnings([w for r in results for w in r.warnings if w.kind != "few_simulations"]
                         + [w for w in results[0].warnings if w.kind == "few_simulations"])
    prov = dict(results[0].provenance, function="power_curve", along=along, values=[int(v) for v in values])
    return PowerCurveResult(table=table, along=along, test=s.test, effect=effect, alpha=s.alpha, level=s.level,
                            target=target, results=tuple(results), warnings=ws, provenance=prov)


def _values(values: Any) -> list[int]:
    try:
        vals = [int(v) for v in values]
    except (TypeError, ValueError) as exc:
        raise DataError(f"values must be a list of integers (numbers of levels), got {values!r}") from exc
    if not vals or any(v < 1 for v in vals) or any(int(v) != v for v in values):
        raise DataError(f"values must be a non-empty list of positive integers, got {values!r}")
    return sorted(set(vals))


def power_curve(
    model: Any,
    effect: float | Sequence[float],
    *,
    along: str = "items",
    values: Sequence[int] = (),
    test: str = "lrt",
    term: str | None = None,
    alpha: float = 0.05,
    n_sim: int = 200,
    level: float = 0.95,
    target: float | None = 0.8,
    random_state: Any = None,
    n_resamples: int = 1000,
    system: str | None = None,
    item: str | None = None,
    batch_size: int = 20,
    progress: bool = False,
    executor: Any = None,
) -> PowerCurveResult:
    """:func:`power` at each number of levels in ``values`` of ``along`` (``"items"``,
    ``"runs"``, ``"raters"``, ``"languages"`` for a design; a column of the pilot data for a fit,
    extended as simr's ``extend``: the levels' rows are copied under new labels, or the first
    levels kept). ``target`` is drawn on the report's plot. Same ``random_state`` for every size."""
    s = _settings(test, alpha, level, n_sim, n_resamples, batch_size, progress, random_state, executor)
    m = ps.as_model(model, term, system, item)
    ps.size_of(m, along)
    return _curve(m, _effect(effect), along, _values(values), s,
                  None if target is None else _prob("target", target))


def _search_sizes(m: ps.Model, effect: tuple[float, ...], along: str, target: float, s: _Settings,
                  max_levels: int) -> list[int]:
    """Doubling from the current size until the power reaches target (or ``max_levels``), then
    bisection between the last size below and the first at or above target."""
    evaluated: dict[int, float] = {}

    def pw(n: int) -> float:
        if n not in evaluated:
            evaluated[n] = _power(ps.extend(m, along, n), effect, s).power
        return evaluated[n]

    lo, hi = None, max(2, ps.size_of(m, along))
    while pw(hi) < target and hi < max_levels:
        lo, hi = hi, min(2 * hi, max_levels)
    if pw(hi) >= target:
        lo = lo if lo is not None else 1
        while hi - lo > max(1, hi // 50):
            mid = (lo + hi) // 2
            if mid < 2:
                break
            lo, hi = (mid, hi) if pw(mid) < target else (lo, mid)
    return sorted(evaluated)


def sample_size(
    model: Any,
    effect: float | Sequence[float],
    *,
    along: str = "items",
    target: float = 0.8,
    values: Sequence[int] | None = None,
    max_levels: int | None = None,
    test: str = "lrt",
    term: str | None = None,
    alpha: float = 0.05,
    n_sim: int = 200,
    level: float = 0.95,
    random_state: Any = None,
    n_resamples: int = 1000,
    system: str | None = None,
    item: str | None = None,
    batch_size: int = 20,
    progress: bool = False,
    executor: Any = None,
) -> SampleSizeResult:
    """The smallest number of levels of ``along`` whose power reaches ``target``.

    With ``values``, power is evaluated at those sizes; without, the search doubles the current
    size until the power reaches target (at most ``max_levels``, default 16 times the current
    size) and then bisects to within 2% of the size. The answer comes with its Monte-Carlo range
    (see :class:`SampleSizeResult`); every size uses the same ``random_state``. The other
    parameters, ``executor`` included (where the batches of simulations run), are as in :func:`power`.
    """
    s = _settings(test, alpha, level, n_sim, n_resamples, batch_size, progress, random_state, executor)
    target = _prob("target", target)
    m = ps.as_model(model, term, system, item)
    eff = _effect(effect)
    n0 = ps.size_of(m, along)
    if values is None:
        cap = _count("max_levels", max_levels, 2) if max_levels is not None else 16 * max(n0, 2)
        grid = _search_sizes(m, eff, along, target, s, cap)
    else:
        grid = _values(values)
    curve = _curve(m, eff, along, grid, s, target)
    t = curve.table

    def first(col: str) -> int | None:
        ok = t.loc[t[col] >= target, "n_levels"]
        return int(ok.iloc[0]) if len(ok) else None

    ws = list(curve.warnings)
    if first("power") is None:
        ws.append(ResultWarning("target_not_reached", f"no size evaluated (up to {int(t['n_levels'].max())}) reaches "
                                f"power {target:g}; raise max_levels or give larger values"))
    prov = dict(curve.provenance, function="sample_size", target=target)
    return SampleSizeResult(table=t, along=curve.along, target=target, n_levels=first("power"),
                            n_levels_low=first("conf_high"), n_levels_high=first("conf_low"), test=s.test,
                            effect=eff, alpha=s.alpha, level=s.level, curve=curve, warnings=tuple(ws), provenance=prov)


def _crossing(x: np.ndarray, y: np.ndarray, target: float) -> float:
    """Linear interpolation of the first crossing of ``target`` by ``y`` over increasing ``x``."""
    above = np.flatnonzero(y >= target)
    if not above.size:
        return math.nan
    j = int(above[0])
    if j == 0:
        return float(x[0]) if y[0] == target or x[0] == 0 else math.nan
    x0, x1, y0, y1 = x[j - 1], x[j], y[j - 1], y[j]
    return float(x0 + (target - y0) * (x1 - x0) / (y1 - y0))


def _search_effects(m: ps.Model, target: float, s: _Settings, steps: int) -> list[PowerResult]:
    """Doubling from a quarter of the observation SD until the power reaches target, then
    ``steps`` bisections (common random numbers: the same draws at every effect)."""
    out: dict[float, PowerResult] = {0.0: _power(m, (0.0,), s)}
    e = 0.25 * m.scale
    for _ in range(20):
        out[e] = _power(m, (e,), s)
        if out[e].power >= target:
            break
        e *= 2.0
    below = max((k for k, r in out.items() if r.power < target), default=0.0)
    above = min((k for k, r in out.items() if r.power >= target), default=None)
    for _ in range(steps if above is not None else 0):
        mid = 0.5 * (below + above)
        out[mid] = _power(m, (mid,), s)
        below, above = (mid, above) if out[mid].power < target else (below, mid)
    return [out[k] for k in sorted(out)]


def minimum_detectable_effect(
    model: Any,
    *,
    target: float = 0.8,
    effects: Sequence[float] | None = None,
    steps: int = 5,
    test: str = "lrt",
    term: str | None = None,
    alpha: float = 0.05,
    n_sim: int = 200,
    level: float = 0.95,
    random_state: Any = None,
    n_resamples: int = 1000,
    system: str | None = None,
    item: str | None = None,
    batch_size: int = 20,
    progress: bool = False,
    executor: Any = None,
) -> MinimumDetectableEffect:
    """The smallest effect of the tested term (one coefficient) detected with ``target`` power.

    With ``effects``, power is evaluated at those effects (positive, increasing); without, at 0,
    then doubling from a quarter of the SD of one observation (the square root of the summed
    variance components; 1 on the logit scale of a binomial design) until the power reaches
    target, then ``steps`` bisections. The effect is interpolated linearly where the power curve
    crosses target, with the Monte-Carlo range from the Clopper-Pearson bounds. Every effect uses
    the same ``random_state`` (common random numbers), so the power curve is monotone in all but
    rare cases. For two-sided tests the MDE of a negative difference is the same. The other
    parameters, ``executor`` included (where the batches of simulations run), are as in :func:`power`.
    """
    s = _settings(test, alpha, level, n_sim, n_resamples, batch_size, progress, random_state, executor)
    target = _prob("target", target)
    m = ps.as_model(model, term, system, item)
    if effects is None:
        results = _search_effects(m, target, s, _count("steps", steps, 0))
    else:
        grid = sorted({float(e) for e in _effect(effects)})
        results = [_power(m, (e,), s) for e in grid]
    t = pd.concat([r.table for r in results], ignore_index=True)
    x = t["effect"].to_numpy(dtype=float)
    mde = _crossing(x, t["power"].to_numpy(float), target)
    lo = _crossing(x, t["conf_high"].to_numpy(float), target)
    hi = _crossing(x, t["conf_low"].to_numpy(float), target)
    ws = dedupe_warnings([w for r in results for w in r.warnings])
    if not math.isfinite(mde):
        ws = (*ws, ResultWarning("target_not_reached", f"the effects evaluated do not bracket power {target:g}"))
    prov = dict(results[0].provenance, function="minimum_detectable_effect", target=target)
    return MinimumDetectableEffect(table=t, effect=mde, effect_low=lo, effect_high=hi, target=target, test=s.test,
                                   alpha=s.alpha, level=s.level, results=tuple(results), warnings=tuple(ws),
                                   provenance=prov)
