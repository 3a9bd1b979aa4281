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

from .._rankings import rank_columns, rank_matrix  # noqa: F401 - one definition, shared with the EMM / Bradley-Terry rankings
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


def _safe_div(num: Any, den: Any, zero_division: float = 0.0) -> np.ndarray:
    """num / den elementwise, ``zero_division`` where den == 0 (scikit-learn's default 0)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    return np.where(den != 0, num / np.where(den != 0, den, 1.0), zero_division)


def precision_from_counts(tp: Any, fp: Any, fn: Any = None) -> np.ndarray:
    """Precision tp / (tp + fp) of summed counts (0 when nothing was predicted)."""
    return _safe_div(tp, np.asarray(tp, dtype=float) + fp)


def recall_from_counts(tp: Any, fp: Any, fn: Any) -> np.ndarray:
    """Recall tp / (tp + fn) of summed counts (0 when there was nothing to find)."""
    return _safe_div(tp, np.asarray(tp, dtype=float) + fn)


def _macro(func: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Macro average over classes of a per-class statistic of (tp, fp, fn) counts; the columns are
    tp_1, fp_1, fn_1, tp_2, fp_2, fn_2, ... (one triple per class)."""

    def macro(*sums: np.ndarray) -> np.ndarray:
        per_class = [func(sums[i], sums[i + 1], sums[i + 2]) for i in range(0, len(sums), 3)]
        return np.mean(per_class, axis=0)

    macro.__name__ = macro.__qualname__ = f"{func.__name__.split('_')[0]}_macro"  # picklable by name
    return macro


def bleu_from_sums(*sums: Any, smooth_method: str = "exp") -> np.ndarray:
    """Corpus BLEU from summed sacrebleu sentence statistics, elementwise: the columns are
    sys_len, ref_len, correct_1..N, total_1..N (``sacrebleu.metrics.BLEU``'s order, N = max
    n-gram order). The formula of ``BLEU.compute_bleu`` (sacrebleu 2.x) with its defaults for a
    corpus (``effective_order=False``): brevity penalty exp(1 - ref_len / sys_len) when sys_len <
    ref_len (0 when sys_len = 0); precisions 100 correct_n / total_n, with ``smooth_method="exp"``
    (sacrebleu's default, NIST's mteval smoothing) 100 / (2^k total_n) for the k-th order with no
    match; orders from the first with total_n = 0 on have precision 0; BLEU = bp *
    exp(sum_n log p_n / N) (log 0 = -9999999999), and 0 when no n-gram matches. ``"none"``: no
    smoothing. Papineni et al. (2002); Post (2018)."""
    if smooth_method not in ("exp", "none"):
        raise DataError(f"smooth_method must be 'exp' (sacrebleu's default) or 'none'; got {smooth_method!r}")
    if len(sums) < 4 or len(sums) % 2:
        raise DataError(f"BLEU statistics have 2 + 2 N columns (sys_len, ref_len, correct_1..N, total_1..N); "
                        f"got {len(sums)}")
    order = (len(sums) - 2) // 2
    sys_len, ref_len = np.asarray(sums[0], dtype=float), np.asarray(sums[1], dtype=float)
    correct, total = sums[2:2 + order], sums[2 + order:]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bp = np.where(sys_len < ref_len,
                      np.where(sys_len > 0, np.exp(1 - ref_len / np.where(sys_len > 0, sys_len, 1.0)), 0.0), 1.0)
        log_sum = np.zeros(np.shape(sys_len))
        smooth = np.ones(np.shape(sys_len))
        stopped = np.zeros(np.shape(sys_len), dtype=bool)
        any_match = np.zeros(np.shape(sys_len), dtype=bool)
        for n in range(order):
            c, t = np.asarray(correct[n], dtype=float), np.asarray(total[n], dtype=float)
            any_match |= c != 0
            stopped |= t == 0
            t1 = np.where(t == 0, 1.0, t)
            zero = c == 0
            if smooth_method == "exp":
                smooth = np.where(zero & ~stopped, smooth * 2, smooth)
                p = np.where(zero, 100.0 / (smooth * t1), 100.0 * c / t1)
            else:
                p = np.where(zero, 0.0, 100.0 * c / t1)
            p = np.where(stopped, 0.0, p)
            log_sum = log_sum + np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), -9999999999.0)
        score = bp * np.exp(log_sum / order)
    return np.where(any_match, score, 0.0)


def chrf_from_sums(*sums: Any, beta: float = 2) -> np.ndarray:
    """Corpus chrF (chrF++ with word n-grams) from summed sacrebleu sentence statistics,
    elementwise: the columns are (n_hyp, n_ref, n_match) per order, character orders first
    (``sacrebleu.metrics.CHRF``'s order). The formula of ``CHRF._compute_f_score`` (sacrebleu 2.x,
    default ``eps_smoothing=False``): precision and recall averaged over the orders where both
    the hypothesis and the reference have n-grams, then 100 (1 + beta^2) P R / (beta^2 P + R)
    (0 when P + R = 0). Popović (2015, 2017)."""
    if not sums or len(sums) % 3:
        raise DataError(f"chrF statistics have 3 columns (hyp, ref, match) per n-gram order; got {len(sums)}")
    factor = beta**2
    shape = np.shape(sums[0])
    avg_p, avg_r, eff = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(0, len(sums), 3):
            h, r, m = (np.asarray(sums[i + k], dtype=float) for k in range(3))
            both = (h > 0) & (r > 0)
            avg_p = avg_p + np.where(both, m / np.where(h > 0, h, 1.0), 0.0)
            avg_r = avg_r + np.where(both, m / np.where(r > 0, r, 1.0), 0.0)
            eff = eff + both
        avg_p = np.where(eff > 0, avg_p / np.where(eff > 0, eff, 1.0), 0.0)
        avg_r = np.where(eff > 0, avg_r / np.where(eff > 0, eff, 1.0), 0.0)
        den = factor * avg_p + avg_r
        score = (1 + factor) * avg_p * avg_r
        score = score / np.where(den != 0, den, 1.0)
    return np.where(avg_p + avg_r != 0, 100 * score, 0.0)


def bleu(*sums: Any) -> np.ndarray:
    """``statistic="bleu"``: :func:`bleu_from_sums` with sacrebleu's corpus defaults."""
    return bleu_from_sums(*sums)


def chrf(*sums: Any) -> np.ndarray:
    """``statistic="chrf"``: :func:`chrf_from_sums` with beta = 2 (chrF, or chrF++ when the
    statistics include word n-gram orders)."""
    return chrf_from_sums(*sums)


def accuracy(*sums: Any) -> np.ndarray:
    """``statistic="accuracy"`` with two columns (correct, total) per item: sum(correct) /
    sum(total), the k-of-n accuracy (with one 0/1 column it is the mean)."""
    return _safe_div(sums[0], sums[1], np.nan)


def precision_micro(tp: Any, fp: Any, fn: Any) -> np.ndarray:
    """Micro precision: :func:`precision_from_counts` of the counts summed over items (and classes)."""
    return precision_from_counts(tp, fp, fn)


def recall_micro(tp: Any, fp: Any, fn: Any) -> np.ndarray:
    """Micro recall: :func:`recall_from_counts` of the summed counts."""
    return recall_from_counts(tp, fp, fn)


def f1_micro(tp: Any, fp: Any, fn: Any) -> np.ndarray:
    """Micro F1: :func:`f1_from_counts` of the summed counts."""
    return f1_from_counts(tp, fp, fn)


precision_macro = _macro(precision_from_counts)
recall_macro = _macro(recall_from_counts)
f1_macro = _macro(f1_from_counts)

#: named statistics computed from sums: name -> (function, rule for the number of columns, text)
NAMED: dict[str, tuple[Callable[..., Any], Callable[[int], bool], str]] = {
    "bleu": (bleu, lambda m: m >= 4 and m % 2 == 0,
             "2 + 2 N columns sys_len, ref_len, correct_1..N, total_1..N (me.metrics.sentence_stats(..., 'bleu'))"),
    "chrf": (chrf, lambda m: m >= 3 and m % 3 == 0,
             "3 columns (hyp, ref, match) per n-gram order (me.metrics.sentence_stats(..., 'chrf'))"),
    "precision": (precision_micro, lambda m: m == 3, "3 columns tp, fp, fn"),
    "recall": (recall_micro, lambda m: m == 3, "3 columns tp, fp, fn"),
    "precision_micro": (precision_micro, lambda m: m == 3, "3 columns tp, fp, fn (summed over classes)"),
    "recall_micro": (recall_micro, lambda m: m == 3, "3 columns tp, fp, fn (summed over classes)"),
    "f1_micro": (f1_micro, lambda m: m == 3, "3 columns tp, fp, fn (summed over classes)"),
    "precision_macro": (precision_macro, lambda m: m >= 3 and m % 3 == 0,
                        "3 columns tp, fp, fn per class: tp_1, fp_1, fn_1, tp_2, ..."),
    "recall_macro": (recall_macro, lambda m: m >= 3 and m % 3 == 0,
                     "3 columns tp, fp, fn per class: tp_1, fp_1, fn_1, tp_2, ..."),
    "f1_macro": (f1_macro, lambda m: m >= 3 and m % 3 == 0,
                 "3 columns tp, fp, fn per class: tp_1, fp_1, fn_1, tp_2, ..."),
}
STATISTICS = ("mean", "accuracy", "exact_match", "f1", *NAMED)
MEAN_NAMES = ("mean", "accuracy", "exact_match")


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

    @property
    def linear(self) -> bool:
        """The mean of one per-item column ("mean", and "accuracy" / "exact_match" of 0/1 scores)."""
        return self.func is None and self.name in MEAN_NAMES

    def __call__(self, sums: np.ndarray, n_items: Any) -> np.ndarray:
        if self.linear:
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
    if statistic in ("accuracy", "exact_match") and len(cols) == 1:
        return CellStatistic(statistic, 1), cols  # the mean of per-item 0/1 scores
    if statistic == "accuracy" and len(cols) == 2:
        return CellStatistic("accuracy", 2, accuracy), cols
    if statistic in ("accuracy", "exact_match"):
        raise DataError(f"statistic={statistic!r} takes one per-item 0/1 column"
                        f"{' or two columns (correct, total) for k-of-n scores' if statistic == 'accuracy' else ''}; "
                        f"got {cols}")
    if isinstance(statistic, str) and statistic in NAMED:
        func, ok, text = NAMED[statistic]
        if not ok(len(cols)):
            raise DataError(f"statistic={statistic!r} is computed from per-item sufficient statistics: {text}; "
                            f"got {len(cols)} column(s) {cols}")
        return CellStatistic(statistic, len(cols), func), cols
    if statistic == "f1":
        if len(cols) != 3:
            raise DataError(
                f"statistic='f1' is computed from per-item true positive, false positive and false negative "
                f"counts: pass score=['tp', 'fp', 'fn'] (your column names, in that order); got {cols}"
            )
        return CellStatistic("f1", 3), cols
    raise DataError(
        f"statistic must be one of {', '.join(repr(n) for n in STATISTICS)} or a function of summed per-item "
        f"columns (f(*sums) -> array); "
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
