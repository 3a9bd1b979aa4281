"""What every resampling function computes from its replicates: statistics from (resampled)
sums of per-item columns (the mean, F1 from tp / fp / fn counts, a user's function of sums),
aggregators over languages / groups, bootstrap intervals, p-values from resampled statistics,
and rank summaries.

One definition of each: ``bootstrap``, the paired tests, ``simulate_leaderboard``,
``pooled_run_bootstrap`` and ``run_intervals`` all use these.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from ..errors import DataError

CI_METHODS = ("percentile", "basic", "bca", "se")
AGGREGATORS = ("mean", "median", "geometric_mean")
_AGGREGATOR_ALIASES = {"mean": "mean", "median": "median", "geometric_mean": "geometric_mean",
                       "gmean": "geometric_mean", "geometric": "geometric_mean"}
REL_TIES = 100 * np.finfo(float).eps  # relative tolerance when comparing resampled to observed
P_CONVENTIONS = {"plus_one": "(c+1)/(B+1)", "c_over_b": "c/B"}


# ---------------------------------------------------------------------------------------------
# statistics computed from sums of per-item columns
# ---------------------------------------------------------------------------------------------

def f1_from_counts(tp: Any, fp: Any, fn: Any, zero_division: float = 0.0) -> np.ndarray:
    """F1 = 2 tp / (2 tp + fp + fn) of summed counts, elementwise; ``zero_division`` where
    tp + fp + fn = 0 (nothing to find and nothing found; 0 is scikit-learn's default)."""
    den = 2.0 * np.asarray(tp, dtype=float) + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 2.0 * np.asarray(tp, dtype=float) / np.where(den > 0, den, 1.0), zero_division)


@dataclass(frozen=True)
class CellStatistic:
    """The statistic of one cell (system x run x group, or one system in a paired test),
    computed from the SUMS over items of ``n_columns`` per-item columns.

    ``"mean"``: sum / n_items. ``"f1"``: :func:`f1_from_counts` of the (tp, fp, fn) sums (0 when
    the denominator is 0). A callable is called as ``f(*sums)`` with one array per column (equal
    shapes) and returns the statistic elementwise: a corpus-level metric recomputed from
    resampled sufficient statistics.
    """

    name: str
    n_columns: int
    func: Callable[..., Any] | None = None

    def __call__(self, sums: np.ndarray, n_items: Any) -> np.ndarray:
        if self.name == "mean":
            return sums[..., 0] / n_items
        if self.name == "f1":
            return f1_from_counts(sums[..., 0], sums[..., 1], sums[..., 2])
        with np.errstate(divide="ignore", invalid="ignore"):  # non-finite results are reported by the callers
            out = np.asarray(self.func(*[sums[..., i] for i in range(self.n_columns)]), dtype=float)
        if out.shape != sums.shape[:-1]:
            raise DataError(
                f"the statistic function returned shape {out.shape} for summed columns of shape "
                f"{sums.shape[:-1]}; it must work elementwise on numpy arrays (use np.where, not if)"
            )
        return out


def cell_statistic(statistic: Any, score: str | Sequence[str]) -> tuple[CellStatistic, list[str]]:
    """Parse ``statistic`` and ``score`` into a CellStatistic and the list of value columns."""
    try:
        cols = [score] if isinstance(score, str) else list(score)
    except TypeError:  # not a name and not a list of names
        cols = []
    if not cols or not all(isinstance(c, str) for c in cols):
        raise DataError(f"score must be a column name or a list of column names, got {score!r}")
    if callable(statistic):
        return CellStatistic(getattr(statistic, "__name__", "custom"), len(cols), statistic), cols
    if statistic == "mean":
        if len(cols) != 1:
            raise DataError(f"statistic='mean' takes one score column, got {cols}; pass score='column'")
        return CellStatistic("mean", 1), cols
    if statistic == "f1":
        if len(cols) != 3:
            raise DataError(
                f"statistic='f1' is computed from per-item true positive, false positive and false negative "
                f"counts: pass score=['tp', 'fp', 'fn'] (your column names, in that order); got {cols}"
            )
        return CellStatistic("f1", 3), cols
    raise DataError(
        f"statistic must be 'mean', 'f1' or a function of summed per-item columns (f(*sums) -> array); "
        f"got {statistic!r}"
    )


# ---------------------------------------------------------------------------------------------
# aggregators over groups (languages, tasks)
# ---------------------------------------------------------------------------------------------

def check_aggregator(aggregator: Any) -> str:
    """The canonical name of an aggregator (aliases gmean, geometric)."""
    name = _AGGREGATOR_ALIASES.get(aggregator.lower()) if isinstance(aggregator, str) else None
    if name is None:
        raise DataError(f"aggregator must be one of {', '.join(AGGREGATORS)}; got {aggregator!r}")
    return name


def aggregate(values: np.ndarray, aggregator: str, axis: int = -1, *, nonpositive: str = "raise",
              during: str = "") -> np.ndarray:
    """Combine per-group scores along ``axis``: mean, median or geometric mean.

    The geometric mean needs positive scores. ``nonpositive="raise"``: a DataError (the
    bootstrap, whose replicates must all be defined); ``"nan"``: NaN where a value is <= 0 (the
    leaderboard simulation, whose parametric noise can push a simulated score below 0: those
    replicates are counted and left out of the summaries)."""
    if aggregator == "mean":
        return values.mean(axis=axis)
    if aggregator == "median":
        return np.median(values, axis=axis)
    if aggregator != "geometric_mean":
        raise DataError(f"aggregator must be one of {', '.join(AGGREGATORS)}; got {aggregator!r}")
    if nonpositive == "raise":
        if np.any(values <= 0):
            raise DataError(
                f"aggregator='geometric_mean' needs positive per-group scores, but {during} a group's score is "
                "<= 0; use aggregator='mean' or 'median', or a strictly positive score"
            )
        return np.exp(np.log(values).mean(axis=axis))
    ok = (values > 0).all(axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.exp(np.log(values).mean(axis=axis))
    return np.where(ok, g, np.nan)


# ---------------------------------------------------------------------------------------------
# moments and intervals of a bootstrap distribution (rows = quantities, columns = replicates)
# ---------------------------------------------------------------------------------------------

def check_ci(ci: str) -> str:
    c = str(ci).lower()
    if c not in CI_METHODS:
        raise DataError(f"ci must be one of {', '.join(repr(m) for m in CI_METHODS)}; got {ci!r}")
    return c


def sd(dist: np.ndarray) -> np.ndarray:
    """SD (ddof 1) of each row, ignoring NaN (NaN with fewer than 2 finite values)."""
    if np.isfinite(dist).all():
        return dist.std(axis=1, ddof=1) if dist.shape[1] > 1 else np.full(dist.shape[0], np.nan)
    n = np.isfinite(dist).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.nanstd(dist, axis=1, ddof=1)
    return np.where(n > 1, out, np.nan)


def mean(dist: np.ndarray) -> np.ndarray:
    """Mean of each row, ignoring NaN."""
    if np.isfinite(dist).all():
        return dist.mean(axis=1)
    with np.errstate(invalid="ignore"):
        return np.nanmean(dist, axis=1)


def linear_quantile(sorted_rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise quantile with numpy's default ('linear') rule; ``q`` has one value per row."""
    B = sorted_rows.shape[1]
    pos = np.clip(q, 0.0, 1.0) * (B - 1)
    lo = np.floor(pos).astype(np.int64)
    lo = np.clip(lo, 0, B - 1)
    hi = np.minimum(lo + 1, B - 1)
    frac = pos - lo
    r = np.arange(sorted_rows.shape[0])
    a, b = sorted_rows[r, lo], sorted_rows[r, hi]
    return a + frac * (b - a)


def quantiles(dist: np.ndarray, probs: Sequence[float]) -> np.ndarray:
    """(len(probs), rows) linear-rule quantiles of each row, ignoring NaN (NaN for a row with no
    finite value)."""
    if np.isfinite(dist).all():
        srt = np.sort(dist, axis=1)
        return np.stack([linear_quantile(srt, np.full(dist.shape[0], p)) for p in probs])
    with np.errstate(invalid="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows give NaN
            return np.nanquantile(dist, probs, axis=1)


def acceleration(jackknife: Sequence[np.ndarray]) -> np.ndarray:
    """BCa acceleration from leave-one-out values, one (rows x n_l) array per resampled level
    (strata count as levels): a = sum_l sum_i U^3 / n_l^3 / (6 (sum_l sum_i U^2 / n_l^2)^(3/2)),
    U = (n_l - 1)(mean - theta_(i)); Efron & Tibshirani (1993) eq. 14.15, summed over levels as
    in ``scipy.stats.bootstrap`` for several samples. 0 when the jackknife values are constant."""
    num = 0.0
    den = 0.0
    for jk in jackknife:
        n = float(jk.shape[1])
        u = (n - 1.0) * (jk.mean(axis=1, keepdims=True) - jk)
        num = num + (u**3).sum(axis=1) / n**3
        den = den + (u**2).sum(axis=1) / n**2
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / (6.0 * np.where(den > 0, den, 1.0) ** 1.5), 0.0)


def intervals(estimate: np.ndarray, dist: np.ndarray, method: str, level: float,
              jackknife: Sequence[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided ``level`` intervals for each row of ``dist`` (rows x B, finite values).

    percentile: quantiles alpha/2 and 1 - alpha/2 of the bootstrap distribution (numpy's
    linear rule, as scipy.stats.bootstrap). basic: 2 estimate - those quantiles, swapped.
    bca: Efron's bias-corrected and accelerated percentile interval; z0 = Phi^-1 of the share
    of replicates below the estimate (ties count half, as scipy), acceleration from the
    jackknife (:func:`acceleration`); NaN where z0 is infinite (the estimate outside the
    replicates: degenerate, as scipy). se: estimate -+ z_(1 - alpha/2) * SD of the replicates
    (the "+-2 SE" interval; z = 1.96 at level 0.95). Rows whose replicates are all equal give a
    zero-width interval at that value (percentile, basic shift it by 2 (estimate - value)).
    """
    alpha = 1.0 - level
    estimate = np.asarray(estimate, dtype=float)
    if method == "se":
        z = ndtri(1.0 - alpha / 2.0)
        se = sd(dist)
        return estimate - z * se, estimate + z * se
    srt = np.sort(dist, axis=1)
    rows = dist.shape[0]
    if method in ("percentile", "basic"):
        lo = linear_quantile(srt, np.full(rows, alpha / 2.0))
        hi = linear_quantile(srt, np.full(rows, 1.0 - alpha / 2.0))
        if method == "basic":
            lo, hi = 2.0 * estimate - hi, 2.0 * estimate - lo
        return lo, hi
    if method != "bca":
        raise DataError(f"ci must be one of {', '.join(CI_METHODS)}; got {method!r}")
    B = dist.shape[1]
    share = ((dist < estimate[:, None]).sum(axis=1) + (dist <= estimate[:, None]).sum(axis=1)) / (2.0 * B)
    with np.errstate(divide="ignore", invalid="ignore"):
        z0 = ndtri(share)
        a = acceleration(jackknife) if jackknife else np.zeros(rows)
        za = ndtri(alpha / 2.0)
        n1, n2 = z0 + za, z0 - za
        q1 = ndtr(z0 + n1 / (1.0 - a * n1))
        q2 = ndtr(z0 + n2 / (1.0 - a * n2))
    lo = linear_quantile(srt, np.nan_to_num(q1))
    hi = linear_quantile(srt, np.nan_to_num(q2))
    bad = ~(np.isfinite(q1) & np.isfinite(q2) & np.isfinite(z0))
    lo[bad] = np.nan
    hi[bad] = np.nan
    const = srt[:, 0] == srt[:, -1]
    lo[const] = srt[const, 0]
    hi[const] = srt[const, 0]
    return lo, hi


# ---------------------------------------------------------------------------------------------
# p-values from resampled statistics
# ---------------------------------------------------------------------------------------------

def count_extreme(null: np.ndarray, observed: np.ndarray | float, alternative: str) -> np.ndarray:
    """c = number of null values at least as extreme as ``observed`` (last axis), with a
    relative tolerance of 100 machine epsilons for floating-point ties (as scipy's
    permutation_test). two-sided: |null| >= |observed|; greater: null >= observed; less:
    null <= observed."""
    obs = np.asarray(observed, dtype=float)[..., None]
    tol = np.abs(obs) * REL_TIES
    if alternative == "two-sided":
        return (np.abs(null) >= np.abs(obs) - tol).sum(axis=-1)
    if alternative == "greater":
        return (null >= obs - tol).sum(axis=-1)
    if alternative == "less":
        return (null <= obs + tol).sum(axis=-1)
    raise DataError(f"alternative must be 'two-sided', 'greater' or 'less'; got {alternative!r}")


def p_from_count(c: np.ndarray | int, B: int, convention: str) -> np.ndarray:
    """(c + 1) / (B + 1) ('plus_one', Davison & Hinkley 1997 eq. 4.11; never 0) or c / B."""
    if convention == "plus_one":
        return (np.asarray(c, dtype=float) + 1.0) / (B + 1.0)
    if convention == "c_over_b":
        return np.asarray(c, dtype=float) / B
    raise DataError(f"p_value_convention must be 'plus_one' ((c+1)/(B+1)) or 'c_over_b' (c/B); got {convention!r}")


# ---------------------------------------------------------------------------------------------
# ranks (rows = systems / models, columns = replicates)
# ---------------------------------------------------------------------------------------------

def rank_matrix(x: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Rank of every row in every column: 1 + the number of rows strictly better (rank 1 = best;
    ties share the better rank: 1, 2, 2, 4 -- scipy's ``rankdata(method="min")``). Row by row,
    compared in the direction of ``higher_is_better`` (no negated copy)."""
    ranks = np.ones(x.shape, dtype=np.int64)
    for i in range(x.shape[0]):
        ranks[i] += (x > x[i]).sum(axis=0) if higher_is_better else (x < x[i]).sum(axis=0)
    return ranks


def rank_columns(ranks: np.ndarray, level: float) -> dict[str, np.ndarray]:
    """The rank summary of every row: p_rank_1 .. p_rank_k (share of replicates with that rank),
    expected_rank, rank_conf_low and rank_conf_high (the alpha/2 and 1 - alpha/2 quantiles,
    inverted-CDF rule, so they are ranks). NaN when there is no replicate."""
    k, B = ranks.shape
    out: dict[str, np.ndarray] = {}
    if B == 0:
        for r in range(1, k + 1):
            out[f"p_rank_{r}"] = np.full(k, np.nan)
        out.update(expected_rank=np.full(k, np.nan), rank_conf_low=np.full(k, np.nan),
                   rank_conf_high=np.full(k, np.nan))
        return out
    for r in range(1, k + 1):
        out[f"p_rank_{r}"] = (ranks == r).mean(axis=1)
    alpha = 1.0 - level
    out["expected_rank"] = ranks.mean(axis=1)
    # row by row (np.quantile copies its input; the inverted-CDF rule selects, so the values
    # are those of the quantile over axis 1)
    q = np.array([np.quantile(row, [alpha / 2, 1 - alpha / 2], method="inverted_cdf") for row in ranks])
    out["rank_conf_low"] = q[:, 0].astype(np.int64)
    out["rank_conf_high"] = q[:, 1].astype(np.int64)
    return out


def share_better(diff: np.ndarray, higher_is_better: bool, axis: int = -1) -> np.ndarray:
    """P(a better than b) from replicate differences a - b: the share of finite replicates with
    a better, ties counting one half."""
    better = (diff > 0) if higher_is_better else (diff < 0)
    n = np.isfinite(diff).sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (better.sum(axis=axis) + 0.5 * (diff == 0).sum(axis=axis)) / n


def p_beats(x: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """(k, k) matrix: entry (a, b) = P(row a better than row b) over the columns (replicates),
    ties counting one half; the diagonal is NaN. Row by row (no (k, k, B) array)."""
    k, B = x.shape
    p = np.empty((k, k))
    for i in range(k):
        p[i] = (((x[i] > x) if higher_is_better else (x[i] < x)).mean(axis=1) + 0.5 * (x[i] == x).mean(axis=1)
                if B else np.nan)
    np.fill_diagonal(p, np.nan)
    return p
