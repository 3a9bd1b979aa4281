"""Task-length time horizons of agents (METR, Kwa et al. 2025): :func:`time_horizon`.

Per system, a logistic regression of success on ``x = log2(task length)`` (the human minutes a
task takes): ``logit P(success) = a + b x``. The horizon at success probability ``q`` (the
``levels``, METR: 50% and 80%) is the length where the fitted curve crosses ``q``:
``h_q = 2^((logit(q) - a) / b)`` (in the length column's units).

The fit minimises ``- sum_i w_i [y_i log p_i + (1 - y_i) log(1 - p_i)] + (lambda / 2) b^2``:

* ``regularization=None`` (default): no penalty, unit weights (``weighting=None``): the maximum
  likelihood fit of R's ``glm(y ~ x, family = binomial)`` (tested against R to 1e-8);
  fractional successes (partial scores in [0, 1]) enter as R's binomial with proportions does
  (and as METR splits them into weighted 0s and 1s: the same likelihood);
* ``regularization=lambda`` (METR: 0.1): the L2 penalty of scikit-learn's
  ``LogisticRegression(C = 1 / lambda)`` on the slope (the intercept is not penalised), with the
  weights normalised to sum to 1 per system (METR's ``compute_task_weights.py``): the penalty's
  strength is relative to one system's whole data;
* ``weighting``: None (every attempt weighs 1), ``"task"`` (each task weighs 1: an attempt
  ``1 / n_attempts(task)``; METR's ``equal_task_weight``) or ``"family"`` (METR's
  ``invsqrt_task_weight``: ``1 / (n_attempts(task) sqrt(n_tasks(family)))``, so a family of m
  tasks weighs ``sqrt(m)``; needs ``family=``).

The fit is Newton-Raphson on the two parameters with step halving (the objective is convex),
vectorised over bootstrap replicates.

Intervals of the horizons (``interval=``; chosen by simulation, benchmarks/calibration_passk.py):

* ``"union"`` (default): the smallest interval holding both of the following -- the bootstrap
  carries the families' variation, the profile likelihood the small-sample shape (a horizon the
  data do not bound gets an infinite end instead of a short interval);
* ``"profile"``: the profile-likelihood interval of the maximum likelihood fit
  (:func:`profile_interval`: every log2 length x0 whose curve through q at x0, slope refitted,
  raises the deviance by at most ``F(level; 1, tasks - 2)``; Venzon & Moolgavkar 1988);
* ``"bootstrap"``: METR's percentile interval, below.

Both need the maximum likelihood fit with unit weights; with ``regularization=`` or ``weighting=``
the horizons get the bootstrap interval. Coverage of the 95% intervals (benchmarks/
calibration_passk.py: 100 data sets per design, 10-50 tasks x 1-3 attempts in families of 3,
family SD 0 / 0.5; MC SE about 2 points): METR's bootstrap 77-100% (10 tasks x 1 attempt: 90% for
the 50% horizon, 77% for the 80% horizon; 20 x 1: 84%), the profile likelihood 89-98% (below 93%
where family effects add variance it does not model), the union 93-100% in all 18 designs. The
price: with 10 tasks x 1 attempt 63% of the union's intervals have an infinite end (the data do
not bound the horizon; the profile alone: 24%), and where the bootstrap was conservative (3
attempts) the union is as wide as it. With regularization or weighting only the bootstrap applies
(measured without them: 77-90% at 10 tasks x 1 attempt; read such intervals as too narrow).
The ratios between systems, the rank intervals and the sensitivity checks keep the bootstrap
(their coverage is not measured here).

The bootstrap: hierarchical (METR's ``bootstrap.py`` "ftr": task families with
replacement, then tasks within each drawn family, then attempts within each drawn task and
system), the same family and task draws for every system (paired), ``n_resamples`` replicates
seeded by ``random_state``; each replicate refits every system with its weights times the draw
counts (METR does not renormalise either), and the percentile interval of each horizon and of
each ratio ``h_a / h_b`` (p-value: twice the smaller tail share of the log ratio beyond 0,
``(count + 1) / (B + 1)``). A replicate whose data for a system hold only successes (failures)
gives that system an infinite (zero) horizon; separated replicates (the unpenalised fit has no
finite slope) are counted in a warning.

The answer: the leaderboard by the first level's horizon (best = longest), rank intervals from
the bootstrap draws; the headline difference is the log2 ratio of the two horizons (doublings)
with its bootstrap interval and p-value. Checks (the sensitivity METR's 2026 note names): the
same bootstrap with the regularisation switched (off <-> METR's 0.1), the weighting switched (by
family or task <-> none), both (METR's choices when the call uses the defaults), each with its
headline ratio and how far every system's horizon moves ("the 50% horizon moves by up to 1.8x");
and the hierarchical variant: per system lme4's ``glmer(y ~ x + (1 | family), binomial)`` (``(1 |
task)`` without families), the horizon of a typical family (random effect 0, a conditional
horizon), its SE by the delta method from a refit centred at the horizon (where the slope's
part of the gradient vanishes), and the Wald test of the two systems' log2 horizons taken as
independent.

References: Kwa, T., West, B., Becker, J. et al. (2025). Measuring AI ability to complete long
tasks. arXiv:2503.14499; METR's eval-analysis-public (``src/horizon``). Venzon, D. J. &
Moolgavkar, S. H. (1988). A method for computing profile-likelihood-based confidence intervals.
*Applied Statistics* 37, 87-94.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from ... import _answer
from ..._random import as_generator
from ..._resources import LoopGuard, check_memory, format_count
from ...data.table import as_pandas
from ...data.validate import require_columns, require_level
from ...errors import DataError, MixedEvalError
from ...padjust import adjust_pvalues
from ...results import ResultWarning
from .._common import _WorkflowResult, dedupe_warnings
from .._input_checks import check_column_args

WEIGHTINGS = (None, "task", "family")
#: METR's regularisation (``params.yaml``: ``regularization: 0.1``)
METR_REGULARIZATION = 0.1
TABLE_COLUMNS = ("system", "p_success", "horizon", "conf_low", "conf_high", "log2_std_error", "n_tasks",
                 "n_attempts")
FIT_COLUMNS = ("system", "intercept", "slope", "converged", "n_tasks", "n_attempts", "success_rate")
#: a log2 horizon (ratio) beyond this many doublings in a percentile is one interpolated with an infinite
#: replicate (all successes or all failures): it is reported as infinite
_INF_DOUBLINGS = 1000.0
RATIO_COLUMNS = ("p_success", "system_a", "system_b", "ratio", "conf_low", "conf_high", "log2_ratio",
                 "std_error", "p_value", "p_adj")


# ------------------------------------------------------------------------------ the fit
def _objective(a, b, x, Wy, W, lam):
    eta = a[:, None] + b[:, None] * x[None, :]
    # -loglik: W log(1 + e^eta) - W y eta (stable)
    return np.sum(W * np.logaddexp(0.0, eta) - Wy * eta, axis=1) + 0.5 * lam * b**2


def fit_logistic(x: Any, y: Any, W: Any, regularization: float = 0.0, max_iter: int = 100,
                 tol: float = 1e-11) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted (L2 on the slope) logistic regressions of ``y`` on ``x``, one per row of ``W``
    (replicates x observations): returns ``(intercept, slope, converged)`` arrays. Newton-Raphson
    with step halving on ``sum W [log(1 + e^eta) - y eta] + (lambda / 2) b^2``. Rows whose weighted
    successes are all 0 or all 1 get an infinite intercept of that sign and slope 0."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    W = np.atleast_2d(np.asarray(W, dtype=float))
    lam = float(regularization or 0.0)
    B = W.shape[0]
    WY = W * (y if y.ndim == 2 else y[None, :])  # y may be per replicate (B x n) or shared
    tot = W.sum(axis=1)
    ybar = np.where(tot > 0, WY.sum(axis=1) / np.where(tot > 0, tot, 1.0), 0.5)
    degenerate = (ybar <= 0.0) | (ybar >= 1.0)
    a = special.logit(np.clip(ybar, 1e-3, 1 - 1e-3))
    b = np.zeros(B)
    conv = degenerate.copy()
    active = ~conv
    f = np.full(B, np.nan)
    if active.any():
        f[active] = _objective(a[active], b[active], x, WY[active], W[active], lam)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if not idx.size:
            break
        Wi, WYi = W[idx], WY[idx]
        eta = a[idx, None] + b[idx, None] * x[None, :]
        p = special.expit(eta)
        r = WYi - Wi * p
        v = Wi * p * (1.0 - p)
        g0, g1 = r.sum(axis=1), r @ x - lam * b[idx]
        h00, h01, h11 = v.sum(axis=1), v @ x, v @ (x * x) + lam
        det = h00 * h11 - h01**2
        with np.errstate(divide="ignore", invalid="ignore"):
            da, db = (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det
        bad = ~np.isfinite(da) | ~np.isfinite(db)
        da[bad], db[bad] = 0.0, 0.0
        step = np.ones(idx.size)
        f0 = f[idx]
        for _h in range(40):  # step halving: the objective never increases
            fn = _objective(a[idx] + step * da, b[idx] + step * db, x, WYi, Wi, lam)
            worse = ~(fn <= f0 + 1e-13 * np.abs(f0))
            if not worse.any():
                break
            step[worse] *= 0.5
        a[idx] += step * da
        b[idx] += step * db
        f[idx] = fn
        done = (np.abs(step * da) <= tol * (1 + np.abs(a[idx]))) & (np.abs(step * db) <= tol * (1 + np.abs(b[idx])))
        done |= bad
        conv[idx[done & ~bad]] = True
        active[idx[done]] = False
    a = np.where(degenerate, np.where(ybar >= 1.0, np.inf, -np.inf), a)
    b = np.where(degenerate, 0.0, b)
    return a, b, conv


def horizons(a: Any, b: Any, level: float) -> np.ndarray:
    """``2^((logit(level) - a) / b)``; an all-success fit (a = +inf) gives inf, all-failure 0."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = (special.logit(level) - a) / b
        x = np.where(np.isposinf(a), np.inf, np.where(np.isneginf(a), -np.inf, x))
        return np.exp2(x)


# ------------------------------------------------------------------------------ the profile-likelihood interval
def _profile_nll(x0: float, x: np.ndarray, wy: np.ndarray, w: np.ndarray, lq: float) -> float:
    """min over b of the negative log-likelihood of ``logit p = lq + b (x - x0)`` (the curve through
    probability q at log2 length x0): convex in b, Brent on a bounded range (|b| <= 50 per doubling:
    beyond it the data are separated and the likelihood at its limit)."""
    z = x - x0

    def f(b: float) -> float:
        eta = lq + b * z
        return float(np.sum(w * np.logaddexp(0.0, eta) - wy * eta))

    r = optimize.minimize_scalar(f, bounds=(-50.0, 50.0), method="bounded", options={"xatol": 1e-12})
    return float(min(r.fun, f(0.0)))


def profile_interval(x: Any, y: Any, q: float, level: float = 0.95, df: float | None = None,
                     max_doublings: float = 200.0) -> tuple[float, float, float]:
    """Profile-likelihood interval of the log2 horizon ``x_q = (logit q - a) / b`` of the logistic
    regression of ``y`` (0/1 or proportions, unit weights) on ``x = log2 length``: the set of
    ``x0`` whose profile deviance ``2 [min_b NLL(logit q + b (x - x0)) - NLL(a, b)]`` is at most
    ``F(level; 1, df)`` (``df``: tasks - 2, the small-sample version of the chi-square(1) limit,
    Venzon & Moolgavkar 1988; ``df=None``: chi-square(1), what ``MASS::confint`` profiles use for
    a coefficient). Returns ``(log2 estimate, log2 low, log2 high)``; an end is infinite where a
    flat curve at probability q is not rejected on that side (the data do not bound the horizon),
    and the whole line when the fitted slope is not negative."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    w = np.ones_like(x)
    crit = float(stats.chi2.ppf(level, 1) if df is None else stats.f.ppf(level, 1, max(float(df), 1.0)))
    a, b, _ = fit_logistic(x, y, w[None, :])
    a, b = float(a[0]), float(b[0])
    lq = float(special.logit(q))
    if not (np.isfinite(a) and b < 0):
        return (float(np.log2(horizons(a, b, q))) if np.isfinite(a) and b != 0 else np.nan), -np.inf, np.inf
    eta = a + b * x
    xh = (lq - a) / b
    wy = w * y
    # the profile at the estimate is the minimum; with near-separated data (|slope| beyond the
    # profile's bound) the bounded profile's own value there is the reference
    n_min = max(float(np.sum(np.logaddexp(0.0, eta) - y * eta)), _profile_nll(xh, x, wy, w, lq))

    def g(x0: float) -> float:
        return 2.0 * (_profile_nll(x0, x, wy, w, lq) - n_min) - crit

    ends = []
    for sgn in (-1.0, 1.0):
        inner, step = xh, 0.5
        found = None
        while step <= max_doublings:
            outer = xh + sgn * step
            if g(outer) > 0:
                found = optimize.brentq(g, *sorted((inner, outer)), xtol=1e-12, rtol=1e-14)
                break
            inner, step = outer, step * 2.0
        ends.append(sgn * np.inf if found is None else float(found))
    return float(xh), ends[0], ends[1]


# ------------------------------------------------------------------------------ the data
@dataclass(frozen=True)
class _System:
    name: str
    task: np.ndarray  # task index (into the global task list) of each attempt
    x: np.ndarray
    y: np.ndarray
    weights: dict[Any, np.ndarray]  # weighting -> per-attempt weights (not normalised)
    grp: np.ndarray  # the GLMM check's group of each attempt: its family (its task without families)
    indicator: np.ndarray  # attempts x the system's tasks (0/1)
    xt: np.ndarray  # the x of each of the system's tasks


def _weights(task: np.ndarray, fam: np.ndarray | None) -> dict[Any, np.ndarray]:
    n_att = np.bincount(task)[task].astype(float)
    out: dict[Any, np.ndarray] = {None: np.ones(task.size), "task": 1.0 / n_att}
    if fam is not None:
        tasks_of = pd.Series(task).groupby(fam).nunique()
        out["family"] = 1.0 / (n_att * np.sqrt(tasks_of.reindex(fam).to_numpy(dtype=float)))
    return out


def _prepare(df: pd.DataFrame, success: str, length: str, system: str, item: str,
             family: str | None) -> tuple[list[_System], list[str], np.ndarray | None]:
    cols = [success, length, system, item, *([family] if family else [])]
    require_columns(df, cols, "the data")
    for c in cols:
        if df[c].isna().any():
            raise DataError(f"column {c!r} has {int(df[c].isna().sum())} missing values; drop those rows first")
    y = pd.to_numeric(df[success], errors="coerce").to_numpy(dtype=float)
    if not np.all((y >= 0) & (y <= 1)):
        raise DataError(f"success={success!r} must hold 0/1 (or proportions in [0, 1]); e.g. {df[success].iloc[0]!r}")
    L = pd.to_numeric(df[length], errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(L) & (L > 0)):
        raise DataError(f"length={length!r} must be positive task lengths (e.g. human minutes); some are missing, "
                        "zero or negative")
    task_lab = df[item].astype(str).to_numpy()
    per_task = pd.DataFrame({"t": task_lab, "L": L}).groupby("t")["L"].nunique()
    if (per_task > 1).any():
        raise DataError(f"task {per_task.index[int(np.argmax(per_task.to_numpy() > 1))]!r} has several lengths in "
                        f"column {length!r}; a task has one length")
    tasks, tcode = np.unique(task_lab, return_inverse=True)
    fam_of_task = None
    fcode = None
    if family is not None:
        fl = df[family].astype(str).to_numpy()
        k = pd.DataFrame({"t": tcode, "f": fl}).groupby("t")["f"].nunique()
        if (k > 1).any():
            raise DataError(f"task {tasks[int(k.index[int(np.argmax(k.to_numpy() > 1))])]!r} belongs to several "
                            f"families (column {family!r}); a task belongs to one family")
        fams, fcode = np.unique(fl, return_inverse=True)
        fam_of_task = np.zeros(tasks.size, dtype=int)
        fam_of_task[tcode] = fcode
    sysl = df[system].astype(str).to_numpy()
    out = []
    for s in sorted(set(sysl)):
        m = sysl == s
        t = tcode[m]
        local = np.unique(t, return_inverse=True)[1]
        w = _weights(local, None if fcode is None else fcode[m])
        grp = df[family].astype(str).to_numpy()[m] if family is not None else task_lab[m]
        ind = np.zeros((t.size, int(local.max()) + 1))
        ind[np.arange(t.size), local] = 1.0
        xt = np.zeros(ind.shape[1])
        xt[local] = np.log2(L[m])
        out.append(_System(s, t, np.log2(L[m]), y[m], w, grp, ind, xt))
    return out, list(tasks), fam_of_task


def _norm(w: np.ndarray, lam: float) -> np.ndarray:
    return w / w.sum() if lam else w


# ------------------------------------------------------------------------------ the bootstrap
def _task_counts(rng: np.random.Generator, B: int, n_tasks: int, fam_of_task: np.ndarray | None) -> np.ndarray:
    """(B, n_tasks) draw counts: families with replacement, then tasks within each drawn family
    (a family drawn c times contributes a multinomial of c m_f draws over its m_f tasks)."""
    if fam_of_task is None:
        return rng.multinomial(n_tasks, np.full(n_tasks, 1.0 / n_tasks), size=B)
    F = int(fam_of_task.max()) + 1
    fc = rng.multinomial(F, np.full(F, 1.0 / F), size=B)
    out = np.zeros((B, n_tasks), dtype=np.int64)
    for f in range(F):
        members = np.flatnonzero(fam_of_task == f)
        m = members.size
        out[:, members] = rng.multinomial(fc[:, f] * m, np.full(m, 1.0 / m))
    return out


def _attempt_counts(rng: np.random.Generator, tc: np.ndarray, s: _System, resample: bool = True) -> np.ndarray:
    """(B, attempts of s) draw counts: each drawn task's attempts with replacement (``resample``;
    METR), or every attempt of a drawn task once per draw."""
    if not resample:
        return tc[:, s.task]
    out = np.zeros((tc.shape[0], s.task.size), dtype=np.int64)
    for t in np.unique(s.task):
        idx = np.flatnonzero(s.task == t)
        r = idx.size
        out[:, idx] = rng.multinomial(tc[:, t] * r, np.full(r, 1.0 / r))
    return out


def _log_ratio(dd: np.ndarray, level: float) -> tuple[float, float, float, float]:
    """Percentile interval, bootstrap p-value (twice the smaller share at or beyond 0, ``(count + 1)
    / (B + 1)``) and SD of bootstrap log2 ratios (infinite ones, from all-success or all-failure
    replicates, count in the tails; NaN ones are left out)."""
    dd = dd[~np.isnan(dd)]
    fin = np.where(np.isfinite(dd), dd, np.sign(dd) * 1e6)
    lo, hi = np.quantile(fin, [(1 - level) / 2, 1 - (1 - level) / 2])
    lo, hi = (float(np.sign(v) * np.inf) if abs(v) >= _INF_DOUBLINGS else float(v) for v in (lo, hi))
    p = min(1.0, 2 * min(np.sum(fin <= 0) + 1, np.sum(fin >= 0) + 1) / (fin.size + 1))
    ok = np.isfinite(dd)
    return lo, hi, float(p), float(np.std(dd[ok], ddof=1)) if ok.sum() > 1 else np.nan


# ------------------------------------------------------------------------------ the result
@dataclass(frozen=True, repr=False)
class TimeHorizonResult(_answer.AnswerMixin, _WorkflowResult):
    """Result of :func:`time_horizon`.

    answer : the one :class:`mixedeval._answer.Answer` (leaderboard by the first level's horizon,
        longest first; headline: the log2 ratio of the best two horizons, in doublings; checks: the
        sensitivity to the modelling choices and the hierarchical GLMM).
    table : per system and level: system, p_success, horizon (length units), conf_low, conf_high
        (by ``interval=``: the union of profile likelihood and bootstrap percentile), log2_std_error (bootstrap SD of log2 horizon), n_tasks, n_attempts.
    fits : per system: intercept, slope (per doubling of length), converged, n_tasks, n_attempts,
        success_rate.
    ratios : per level and pair, longer horizon first: ratio h_a / h_b with its percentile interval,
        log2_ratio, std_error (of the log2 ratio), p_value (bootstrap), p_adj (Holm per level).
    sensitivity : per variant and system: variant, system, p_success, horizon, moved (horizon /
        the headline fit's).
    """

    answer: _answer.Answer
    table: Any
    fits: Any
    ratios: Any
    sensitivity: Any
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _main_table = "table"
    _print_tables = ("table", "ratios", "checks")
    _skip_in_dict = ("answer",)
    _title = "Time horizons"
    _answer_priority = 30

    def _scalars(self) -> list[tuple[str, Any]]:
        p = self.provenance
        return [("headline", self.headline_text()), ("fit", p.get("fit")), ("interval", p.get("interval"))]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        return {"answer": d.pop("answer"), "headline_text": self.headline_text(), **d}


# ------------------------------------------------------------------------------ the workflow
def _check_options(levels: Any, n_resamples: Any, regularization: Any, weighting: Any, family: Any,
                   level: Any) -> tuple[tuple[float, ...], float]:
    try:
        lv = tuple(float(q) for q in (levels if isinstance(levels, (list, tuple, np.ndarray)) else [levels]))
    except (TypeError, ValueError):
        raise DataError(f"levels must be success probabilities in (0, 1), e.g. (0.5, 0.8); got {levels!r}") from None
    if not lv or not all(0 < q < 1 for q in lv):
        raise DataError(f"levels must be success probabilities in (0, 1), e.g. (0.5, 0.8); got {levels!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 0 \
            or n_resamples == 1:
        raise DataError(f"n_resamples must be 0 (no intervals) or an integer >= 2 (percentile intervals need several "
                        f"replicates; METR: 1000), got {n_resamples!r}")
    if regularization is not None and not (isinstance(regularization, (int, float)) and not isinstance(
            regularization, bool) and 0 <= regularization < np.inf):
        raise DataError(f"regularization must be None (maximum likelihood, R's glm) or a penalty >= 0 (METR: 0.1), "
                        f"got {regularization!r}")
    if weighting not in WEIGHTINGS:
        raise DataError(f"weighting must be None, 'task' or 'family' (METR's invsqrt_task_weight), got {weighting!r}")
    if weighting == "family" and family is None:
        raise DataError("weighting='family' weighs tasks by 1/sqrt(family size): name the family column with family=")
    return lv, require_level(level)


def _fit_all(systems: list[_System], lam: float, weighting: Any, counts: list[np.ndarray] | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intercepts, slopes and convergence, (B or 1) x systems."""
    A, Bs, C = [], [], []
    for j, s in enumerate(systems):
        w = _norm(s.weights[weighting], lam)
        W = w[None, :] if counts is None else counts[j] * w[None, :]
        # sufficient statistics per task (one x each): sum W and sum W y
        ind = s.indicator
        Wt, WYt = W @ ind, (W * s.y[None, :]) @ ind
        with np.errstate(invalid="ignore", divide="ignore"):
            yt = np.where(Wt > 0, WYt / np.where(Wt > 0, Wt, 1.0), 0.0)
        a, b, c = fit_logistic(s.xt, yt, Wt, lam)
        A.append(a), Bs.append(b), C.append(c)
    return np.column_stack(A), np.column_stack(Bs), np.column_stack(C)


def _glmer_check(systems: list[_System], pair: tuple[str, str], q: float, head: _answer.Headline,
                 group_name: str) -> dict[str, Any]:
    """The hierarchical variant's check row (module docstring)."""
    from ...inference._glmm import glmm  # noqa: PLC0415 - R only for this check

    est, ses = {}, {}
    for s in systems:
        if s.name not in pair:
            continue
        d = pd.DataFrame({"y": s.y, "x": s.x, "g": s.grp})
        fit = glmm("y ~ x + (1|g)", d, family="binomial")
        fx = fit.fixed.set_index("term")
        x0 = (special.logit(q) - fx.loc["(Intercept)", "estimate"]) / fx.loc["x", "estimate"]
        fit2 = glmm("y ~ xc + (1|g)", d.assign(xc=d["x"] - x0), family="binomial")
        f2 = fit2.fixed.set_index("term")
        b = float(f2.loc["xc", "estimate"])
        x50 = x0 + (special.logit(q) - float(f2.loc["(Intercept)", "estimate"])) / b
        est[s.name] = x50
        ses[s.name] = float(f2.loc["(Intercept)", "std_error"]) / abs(b)
    d = est[pair[0]] - est[pair[1]]
    se = float(np.hypot(ses[pair[0]], ses[pair[1]]))
    z = _answer.z_quantile(head.level)
    p = float(2 * stats.norm.sf(abs(d) / se)) if se > 0 else np.nan
    row = _answer.check_row(f"hierarchical GLMM: glmer(success ~ log2 length + (1 | {group_name})) per system, "
                            "a typical group's horizon, Wald", head, estimate=d, conf_low=d - z * se,
                            conf_high=d + z * se, p_value=p,
                            why="conditional horizons of a typical group; the two systems' fits taken as independent")
    return row


def _fit_warnings(names, c0, b0, sep, B) -> list[ResultWarning]:
    """The headline fits' warnings: separation, a slope that does not fall, separated replicates."""
    warns: list[ResultWarning] = []
    if not np.all(c0):
        bad = [n for n, c in zip(names, c0[0]) if not c]
        warns.append(ResultWarning("separation", f"the logistic fit of {', '.join(bad)} did not converge (its successes "
                                   "and failures are separated by length): its horizon is the split point; try "
                                   "regularization=0.1 (METR)"))
    if np.any(b0[0] >= 0):
        bad = [n for n, b in zip(names, b0[0]) if b >= 0]
        warns.append(ResultWarning("slope_not_negative", f"success does not fall with task length for {', '.join(bad)} "
                                   "(slope >= 0): a horizon is not meaningful there"))
    if B and np.any(sep["fit"] > 0.01):
        warns.append(ResultWarning("separated_resamples", "in some bootstrap replicates the fit did not converge "
                                   f"(separated data; share per system: {dict(zip(names, np.round(sep['fit'], 3)))})"))
    return warns


def _horizon_tables(systems, names, a0, b0, c0, boot, lv, B, level):
    """The horizons per system and level with their percentile intervals, the fits, and the
    replicates' log2 horizons per level."""
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    rows, logh = [], {}
    for q in lv:
        h = horizons(a0[0], b0[0], q)
        if B:
            with np.errstate(divide="ignore"):
                hb = np.log2(horizons(boot["fit"][0], boot["fit"][1], q))
            logh[q] = hb
            fin = np.where(np.isfinite(hb), hb, np.sign(hb) * 1e6)
            qs = np.quantile(fin, [lo_q, hi_q], axis=0)
            qs = np.where(np.abs(qs) >= _INF_DOUBLINGS, np.sign(qs) * np.inf, qs)  # beyond: interpolated with an infinite one
            sd = np.array([np.std(col[np.isfinite(col)], ddof=1) if np.isfinite(col).sum() > 1 else np.nan
                           for col in hb.T])
        else:
            qs = np.full((2, len(names)), np.nan)
            sd = np.full(len(names), np.nan)
        for j, s in enumerate(systems):
            rows.append({"system": s.name, "p_success": q, "horizon": float(h[j]), "conf_low": float(np.exp2(qs[0, j])),
                         "conf_high": float(np.exp2(qs[1, j])), "log2_std_error": float(sd[j]),
                         "n_tasks": int(np.unique(s.task).size), "n_attempts": int(s.task.size)})
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    fits = pd.DataFrame({"system": names, "intercept": a0[0], "slope": b0[0], "converged": c0[0],
                         "n_tasks": [int(np.unique(s.task).size) for s in systems],
                         "n_attempts": [int(s.task.size) for s in systems],
                         "success_rate": [float(s.y.mean()) for s in systems]}, columns=list(FIT_COLUMNS))
    return table, fits, logh


INTERVALS = ("union", "profile", "bootstrap")


def _profile_table(table: pd.DataFrame, systems: list[_System], lv: Sequence[float], level: float,
                   interval: str) -> pd.DataFrame:
    """The horizons' intervals by the rule ``interval`` (:func:`time_horizon`): ``"profile"`` the
    profile-likelihood interval (:func:`profile_interval`, F on tasks - 2 df), ``"union"`` the
    smallest interval holding it and the bootstrap percentile interval (the bootstrap's alone
    where it has no replicates: then the profile's)."""
    out = table.copy()
    for i, r in out.iterrows():
        s = next(x for x in systems if x.name == r["system"])
        _, plo, phi = profile_interval(s.x, s.y, float(r["p_success"]), level, df=float(np.unique(s.task).size - 2))
        plo, phi = float(np.exp2(plo)), float(np.exp2(phi))
        blo, bhi = float(r["conf_low"]), float(r["conf_high"])
        if interval == "union" and not (np.isnan(blo) or np.isnan(bhi)):
            plo, phi = min(plo, blo), max(phi, bhi)
        out.at[i, "conf_low"], out.at[i, "conf_high"] = plo, phi
    return out


def _ratio_table(table, lv, order, logh, pos, B, level) -> pd.DataFrame:
    """Every pair's horizon ratio (best first) with its bootstrap interval, p and Holm's p_adj."""
    ratio_rows = []
    for q in lv:
        hq = table[table["p_success"] == q].set_index("system")["horizon"]
        block = []
        for i, a in enumerate(order):
            for b in order[i + 1:]:
                lr = float(np.log2(hq[a]) - np.log2(hq[b]))
                lo, hi, p, se = _log_ratio(logh[q][:, pos[a]] - logh[q][:, pos[b]], level) if B else (np.nan,) * 4
                block.append({"p_success": q, "system_a": a, "system_b": b, "ratio": float(2**lr),
                              "conf_low": float(2**lo), "conf_high": float(2**hi), "log2_ratio": lr,
                              "std_error": se, "p_value": float(p), "log2_low": lo, "log2_high": hi})
        if block:
            ps = np.array([r["p_value"] for r in block])
            padj = adjust_pvalues(ps, "holm") if np.isfinite(ps).all() else ps
            for r, pa in zip(block, padj):
                r["p_adj"] = float(pa)
            ratio_rows += block
    ratios = pd.DataFrame(ratio_rows, columns=[*RATIO_COLUMNS, "log2_low", "log2_high"])
    return ratios


def _sensitivity_checks(point, boot, names, pos, pair, q0, head, a0, b0, B, level):
    """The headline pair's ratio refitted with each modelling variant: a check row each, and
    how far every system's horizon moves."""
    sens_rows = []
    rows_c = []
    h_fit = horizons(a0[0], b0[0], q0)
    for v, (pa_, pb_, pc_) in point.items():
        if v == "fit":
            continue
        hv = horizons(pa_, pb_, q0)
        moved = hv / h_fit
        for j, n in enumerate(names):
            sens_rows.append({"variant": v, "system": n, "p_success": q0, "horizon": float(hv[j]),
                              "moved": float(moved[j])})
        est = float(np.log2(hv[pos[pair[0]]]) - np.log2(hv[pos[pair[1]]]))
        with np.errstate(divide="ignore"):
            lh = np.log2(horizons(*boot[v], q0)) if B else None
        clo, chi, pv, _se = _log_ratio(lh[:, pos[pair[0]]] - lh[:, pos[pair[1]]], level) if B else (np.nan,) * 4
        big = int(np.nanargmax(np.abs(np.log2(moved))))
        mv = moved[big]
        move = (f"the {int(round(100 * q0))}% horizon moves by up to {max(mv, 1 / mv):.2f}x "
                f"({names[big]}: {h_fit[big]:.3g} -> {hv[big]:.3g})")
        row = _answer.check_row(v, head, estimate=est, conf_low=clo, conf_high=chi, p_value=pv, why=move)
        if row["verdict"] == "agrees":
            row["verdict"] = f"agrees; {move}"
        rows_c.append(row)
    return rows_c, sens_rows


def _provenance(lam, weighting, lv, regularization, B, level, resample_attempts, method, random_state, family,
                length) -> dict[str, Any]:
    """The provenance of a time-horizon result."""
    fit_txt = ("maximum likelihood (R's glm, binomial)" if not lam else
               f"L2-penalised (lambda = {lam:g} on the slope, weights summing to 1; METR)") + \
        f", weighting {weighting or 'none'}"
    prov = {"workflow": "time_horizon", "levels": list(lv), "fit": fit_txt, "regularization": regularization,
            "weighting": weighting, "n_resamples": B, "level": float(level), "resample_attempts": resample_attempts,
            "interval": (f"{method}, percentile, {B} replicates, paired across systems" if B else "none"),
            "random_state": random_state if isinstance(random_state, (int, np.integer)) else None,
            "family": family, "length": f"log2({length})"}
    return prov


def _interval_text(rule: str, boot_text: str, B: int) -> str:
    """The provenance's sentence of the horizons' interval rule."""
    prof = "profile likelihood of the glm fit (F on tasks - 2 df)"
    if rule == "profile":
        return f"horizons: {prof}; ratios: {boot_text}"
    if rule == "union":
        return (f"horizons: the union of the {prof} and the bootstrap percentile interval ({boot_text})" if B else
                f"horizons: {prof} (no bootstrap replicates)")
    return boot_text


def _bootstrap_counts(systems, tasks, fam_of_task, B, random_state, resample_attempts):
    """The hierarchical bootstrap's counts per system (None without replicates), after the memory guard."""
    if not B:
        return None
    n_rows = sum(s.task.size for s in systems)
    check_memory(8.0 * B * (n_rows * 6 + len(tasks)), "the bootstrap replicates of time_horizon",
                 "lower n_resamples", f"{B} replicates x {n_rows} attempts")
    rng = as_generator(random_state)
    tc = _task_counts(rng, B, len(tasks), fam_of_task)
    return [_attempt_counts(rng, tc, s, resample_attempts) for s in systems]


# ------------------------------------------------------------------------------ guards
def _check_systems(systems: list[_System], length: str, success: str, **flags: Any) -> None:
    """Refuse what no logistic curve can describe: a system whose tasks have a single length (no
    slope), or systems that all succeed (fail) at every attempt (no finite horizon to compare)."""
    for name, v in flags.items():
        if not isinstance(v, (bool, np.bool_)):
            raise DataError(f"{name} must be True or False, got {v!r}")
    for s in systems:
        if np.unique(s.x).size < 2:
            raise DataError(f"system {s.name!r} has tasks of a single length ({2 ** s.x[0]:g} in column {length!r}): "
                            "the slope of success on log2 length cannot be estimated; a time horizon needs tasks of "
                            "several lengths (drop the system or add tasks)")
    if all(s.y.min() == s.y.max() for s in systems):
        ends = {float(s.y[0]) for s in systems}
        what = "succeeded" if ends == {1.0} else "failed" if ends == {0.0} else "succeeded or every attempt failed"
        raise DataError(f"every attempt of every system {what} (column {success!r}): no system has a finite time "
                        "horizon (success does not vary with length); add tasks of other lengths")


#: bootstrap replicates x attempts refitted at a time: a chunk takes well under a second, so
#: Ctrl-C stops the bootstrap at once and the time limit is judged after the first chunk
_BOOT_CELLS = 1_000_000


def _boot_guard(B: int, n_variants: int) -> LoopGuard | None:
    """The time guard of the bootstrap's refits (``n_variants`` modelling variants x ``B`` replicates)."""
    if not B:
        return None
    return LoopGuard("time_horizon's hierarchical bootstrap", B * n_variants, count=f"n_resamples={format_count(B)}",
                     unit="replicate refits",
                     fix="Lower n_resamples (METR uses 1,000).")


def _fit_boot(systems: list[_System], lam: float, weighting: Any, counts: list[np.ndarray],
              guard: LoopGuard | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_fit_all` of the replicates in chunks of about :data:`_BOOT_CELLS` replicates x
    attempts (each replicate's fit is independent of the others: the numbers of one call, to
    rounding)."""
    B = counts[0].shape[0]
    size = max(1, _BOOT_CELLS // max(1, max(c.shape[1] for c in counts)))
    parts = []
    for i in range(0, B, size):
        parts.append(_fit_all(systems, lam, weighting, [c[i:i + size] for c in counts]))
        if guard is not None:  # judged once: after the first chunk of the first variant
            guard.block_done(min(i + size, B))
    return tuple(np.concatenate(x, axis=0) for x in zip(*parts))  # type: ignore[return-value]


def _variants(lam: float, weighting: str | None, family: str | None, k: int) -> dict[str, tuple[float, Any]]:
    """The fits of the headline ("fit") and, with several systems, its sensitivity checks: the
    other regularization, the other weighting, and both (METR's choices when they differ)."""
    variants: dict[str, tuple[float, Any]] = {"fit": (lam, weighting)}
    alt_w = ("family" if family is not None else "task") if weighting is None else None
    alt_l = METR_REGULARIZATION if not lam else 0.0
    if k > 1:
        variants[f"regularization {'off' if lam else alt_l}"] = (alt_l, weighting)
        variants[f"weighting {alt_w or 'none'}"] = (lam, alt_w)
        both = "METR's choices (regularization 0.1, weighting by family)" if (alt_l and alt_w == "family") else \
            f"regularization {'off' if lam else alt_l} and weighting {alt_w or 'none'}"
        variants[both] = (alt_l, alt_w)
    return variants


def _interval_rule(table: pd.DataFrame, systems: list, lv: Any, level: float, interval: str, lam: float,
                   weighting: str | None) -> tuple[pd.DataFrame, str]:
    """The horizons' intervals by ``interval``: the profile likelihood (alone or with the bootstrap)
    needs the maximum likelihood fit with unit weights, else the bootstrap's stay. Returns the
    table and the rule used."""
    profile_ok = not lam and weighting is None
    if interval == "profile" and not profile_ok:
        raise DataError("interval='profile' is the likelihood of the maximum likelihood fit with unit weights: "
                        "drop regularization= and weighting=, or use interval='bootstrap'")
    rule = interval if profile_ok else "bootstrap"
    return (table if rule == "bootstrap" else _profile_table(table, systems, lv, level, rule)), rule


def time_horizon(
    data: Any,
    *,
    success: str = "score",
    length: str = "human_minutes",
    system: str = "system",
    item: str = "item",
    family: str | None = None,
    levels: Sequence[float] = (0.5, 0.8),
    n_resamples: int = 1000,
    random_state: Any = None,
    regularization: float | None = None,
    weighting: str | None = None,
    level: float = 0.95,
    reference: Any = None,
    hierarchical: bool = True,
    resample_attempts: bool = True,
    interval: str = "union",
) -> TimeHorizonResult:
    """Time horizons per system: the task length at which the fitted success probability is 50%
    (80%, ...) by METR's logistic regression on log2 length, with hierarchical-bootstrap intervals,
    ratios between systems and the sensitivity to the modelling choices (module docstring).

    Parameters
    ----------
    data : one row per system x task x attempt (pandas, polars, pyarrow, a file).
    success : 0/1 (or a proportion) column. length : the task's length (e.g. human minutes),
        one per task. system, item : columns of the system and the task. family : the task's family
        (bootstrapped first; needed for ``weighting="family"``).
    levels : success probabilities of the horizons (METR: 0.5 and 0.8).
    n_resamples, random_state : the hierarchical bootstrap (0: no intervals).
    regularization : None (maximum likelihood: R's glm) or the L2 penalty on the slope (METR: 0.1,
        weights normalised to sum 1 per system). weighting : None, ``"task"`` or ``"family"`` (METR).
    level : the intervals' level. reference : the headline compares the best other system to it.
    hierarchical : add the lme4 GLMM check (needs R).
    interval : the horizons' interval rule: ``"union"`` (default; the profile-likelihood and the
        bootstrap intervals together), ``"profile"`` or ``"bootstrap"`` (METR's percentile
        interval); module docstring and benchmarks/calibration_passk.py for their coverage.
    resample_attempts : True (METR's "ftr"): the attempts of each drawn task are resampled too;
        False ("ft"): a drawn task keeps its attempts. Resampling both stages counts the attempts'
        variance twice (the two-stage bootstrap's known excess; benchmarks/calibration_passk.py
        measures both).

    Returns a :class:`TimeHorizonResult`; the command line is ``mixedeval horizon TABLE --length COL``.
    """
    check_column_args(success=success, length=length, system=system, item=item, family=family)
    lv, level = _check_options(levels, n_resamples, regularization, weighting, family, level)
    if interval not in INTERVALS:
        raise DataError(f"interval must be 'union' (default), 'profile' or 'bootstrap', got {interval!r}")
    df = as_pandas(data, what="data")
    if not len(df):
        raise DataError("the data have no rows")
    systems, tasks, fam_of_task = _prepare(df, success, length, system, item, family)
    _check_systems(systems, length, success, hierarchical=hierarchical, resample_attempts=resample_attempts)
    lam = float(regularization or 0.0)
    B = int(n_resamples)
    warns: list[ResultWarning] = []
    a0, b0, c0 = _fit_all(systems, lam, weighting, None)
    names = [s.name for s in systems]
    counts = _bootstrap_counts(systems, tasks, fam_of_task, B, random_state, resample_attempts)
    # ---- the headline fit and its bootstrap
    variants = _variants(lam, weighting, family, len(systems))
    point, boot, sep, guard = {}, {}, {}, _boot_guard(B, len(variants))
    for v, (lv_lam, lv_w) in variants.items():
        a, b, c = _fit_all(systems, lv_lam, lv_w, None) if v != "fit" else (a0, b0, c0)
        point[v] = (a[0], b[0], c[0])
        if B:
            aa, bb, cc = _fit_boot(systems, lv_lam, lv_w, counts, guard)
            boot[v] = (aa, bb)
            sep[v] = 1.0 - cc.mean(axis=0)
    warns += _fit_warnings(names, c0, b0, sep, B)
    table, fits, logh = _horizon_tables(systems, names, a0, b0, c0, boot, lv, B, level)
    table, rule = _interval_rule(table, systems, lv, level, interval, lam, weighting)
    # ---- the leaderboard, the ratios, the headline
    q0 = lv[0]
    first = table[table["p_success"] == q0].set_index("system")
    direction = _answer.direction(f"{int(round(100 * q0))}% time horizon", True)
    draws = None
    if B:
        draws = np.where(np.isfinite(logh[q0]), logh[q0], np.sign(logh[q0]) * 1e6)
    board = _answer.leaderboard(first["horizon"].reindex(names), conf_low=first["conf_low"].reindex(names),
                                conf_high=first["conf_high"].reindex(names), draws=draws, higher_is_better=True,
                                level=level)
    order = list(board["name"])
    pos = {n: i for i, n in enumerate(names)}
    ratios = _ratio_table(table, lv, order, logh, pos, B, level)
    method = ("log2 horizon ratio in doublings; hierarchical bootstrap (" + ("families, " if family else "") +
              ("tasks, attempts)" if resample_attempts else "tasks)"))
    head = None
    diffs = None
    checks = None
    sens_rows = []
    if len(names) > 1:
        pair = _answer.choose_pair(board, reference)
        r0 = ratios[(ratios["p_success"] == q0)]
        found = _answer.pair_row(r0, *pair)
        r, sign = found
        lo, hi = sorted((sign * float(r["log2_low"]), sign * float(r["log2_high"])))
        head = _answer.headline(pair[0], pair[1], sign * float(r["log2_ratio"]), float(r["std_error"]), lo, hi,
                                float(r["p_value"]), np.inf, method, direction, level=level, unit="",
                                reference=reference)
        d0 = r0.rename(columns={"log2_ratio": "delta"})
        diffs = d0.assign(conf_low=d0["log2_low"], conf_high=d0["log2_high"], df=np.inf, method=method)[
            [c for c in _answer.PAIR_COLUMNS if c in d0.columns or c in ("conf_low", "conf_high", "df", "method")]]
        rows_c, sens_rows = _sensitivity_checks(point, boot, names, pos, pair, q0, head, a0, b0, B, level)
        if hierarchical:
            try:
                rows_c.append(_glmer_check(systems, pair, q0, head, "family" if family else "task"))
            except (MixedEvalError, KeyError, ImportError) as exc:
                rows_c.append(_answer.check_row("hierarchical GLMM (lme4 glmer)", head,
                                                why=f"not fitted: {exc}"))
        checks = _answer.checks_table(rows_c)
    answer = _answer.Answer(direction=direction, leaderboard=board, headline=head, differences=diffs, checks=checks,
                            rank_kind="simultaneous", no_headline_text="one system: no comparison", method=method)
    prov = _provenance(lam, weighting, lv, regularization, B, level, resample_attempts, method, random_state,
                       family, length)
    prov["interval"] = _interval_text(rule, prov["interval"], B)
    sens = pd.DataFrame(sens_rows, columns=["variant", "system", "p_success", "horizon", "moved"])
    return TimeHorizonResult(answer=answer, table=table, fits=fits,
                             ratios=ratios[list(RATIO_COLUMNS)], sensitivity=sens,
                             warnings=dedupe_warnings(warns), provenance=prov)


__all__ = ["TimeHorizonResult", "fit_logistic", "horizons", "profile_interval", "time_horizon"]
