"""Intervals for a stochastic model evaluated in several runs on one test set, after
Fraile-Hernández & Peñas (2025), "On measuring large language models performance with
inferential statistics", Information 16(9):817.

Input: the predictions of n runs on the same l test instances (and the gold labels), or
per-instance numeric scores. Metrics: accuracy, binary F1 (``pos_label``), micro F1, macro F1
(explicit ``zero_division`` for classes with tp + fp + fn = 0), or the mean of numeric scores.
Every metric is recomputed from resampled sufficient statistics (tp / fp / fn counts), never
averaged over instances.

- :func:`pooled_run_bootstrap` is the published method (Algorithm 1): the l x n prediction-
  label pairs of all runs are pooled, each bootstrap test set is l pairs drawn with
  replacement (an instance drawn at random carrying the prediction of a run drawn at random),
  B = 5000, and the interval is the pair of order statistics F_(alpha/2 B), F_((1-alpha/2) B).
  Its width reflects test-set sampling plus run-to-run noise of ONE run: it is a predictive
  interval for the score of one new run on a new test set of size l, not a confidence interval
  for the expected score (which is why its "coverage" of single-run outcomes is ~100%).
- :func:`run_intervals` puts beside it the interval for the expected score (cluster bootstrap
  over instances, each drawn instance carrying the predictions of all runs, runs averaged), a
  variance-components interval that also counts run-level effects, prediction intervals for a
  new run (on this test set and on a new one), the run-level baselines the paper compares
  against (t, percentile, BCa, bootstrap-t over the n run scores, with degenerate resamples
  handled explicitly), and the split of the variance of one run's score into a test-set part
  and a run-to-run part.

Draws follow the package's block-seeded scheme (``_draws.py``), with one random stream per kind
of draw (pooled test sets, instances, runs, run-level baselines): results do not depend on
``chunk_size``, and the same ``random_state`` gives the same pooled draws in both functions.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .. import _resources as res
from .._answer import z_quantile
from .._random import seed_sequence
from ..data import as_pandas, require_columns, require_finite, require_nonempty, require_unique
from ..errors import DataError
from ..results import ResultMixin, ResultWarning
from . import _checks as ck, _draws as dr, _stats as st

METRICS: tuple[str, ...] = ("accuracy", "f1", "micro_f1", "macro_f1", "mean")
_FIX = "Use fewer n_resamples."
#: peak of run_intervals beyond one batch, in units of B doubles: 8 per run (the (B, n) per-run
#: draws kept, the run-level bootstrap's (B, n) index and value arrays, nan-aware moments and
#: quantiles) plus 4 (pooled and instance draws); the whole run measured with tracemalloc at
#: 4.3-6.2 per run for 2 to 20 runs (accuracy and macro F1), so the estimate is an upper bound.
#: The batch temporaries are taken as 1.5 times the byte counts of the draw loops.
_RUN_COPIES, _RUN_EXTRA, _BATCH_FACTOR = 8, 4, 1.5
#: random streams, one per kind of draw (the pooled one is shared by both public functions)
_POOLED, _INSTANCES, _RUNS, _BASELINES = 0, 1, 2, 3


def _pooled_bytes(l: int, K: int) -> float:
    """Temporaries per pooled test set: the indices and the gathered statistics."""
    return 8.0 * l * (K + 2)


def _instance_bytes(l: int, n: int, K: int) -> float:
    """Temporaries per instance resample: indices, count row, per-run sums."""
    return 8.0 * (3 * l + 2 * n * K)


def _instance_blocks(l: int, n: int, K: int) -> int:
    """Blocks of 64 resamples whose count matrices share one (exact) product with the statistics:
    up to 16 (1024 rows, where the product's speed saturates) within CHUNK_BYTES; 1 when even one
    block must be split into batches."""
    if dr.batch_rows(_instance_bytes(l, n, K)) < dr.BLOCK:
        return 1
    return int(max(1, min(16, dr.CHUNK_BYTES // (dr.BLOCK * _instance_bytes(l, n, K)))))


# --------------------------------------------------------------------------------------------
# data preparation and metrics from sufficient statistics
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _RunData:
    stats: np.ndarray      # (l, n, K) per instance and run sufficient statistics
    metric: str
    n_classes: int
    zero_division: float
    items: tuple
    runs: tuple

    @property
    def n_items(self) -> int:
        return self.stats.shape[0]

    @property
    def n_runs(self) -> int:
        return self.stats.shape[1]

    def score(self, sums: np.ndarray, count: int) -> np.ndarray:
        """Metric from summed statistics ``sums`` (..., K) over ``count`` instances."""
        if self.metric in ("accuracy", "mean"):
            return sums[..., 0] / count
        if self.metric in ("f1", "micro_f1"):
            return st.f1_from_counts(sums[..., 0], sums[..., 1], sums[..., 2], self.zero_division)
        s = sums.reshape(*sums.shape[:-1], self.n_classes, 3)
        f = st.f1_from_counts(s[..., 0], s[..., 1], s[..., 2], self.zero_division)
        if np.isnan(self.zero_division):
            with np.errstate(invalid="ignore"):
                ok = np.isfinite(f)
                n_ok = ok.sum(axis=-1)
                return np.where(n_ok > 0, np.where(ok, f, 0.0).sum(axis=-1) / np.maximum(n_ok, 1), np.nan)
        return f.mean(axis=-1)

    def influence(self) -> np.ndarray:
        """(l, n) first-order contributions of each prediction to the metric (the 0/1 correctness
        for accuracy; (2 tp - F (2 tp + fp + fn)) / mean(2 tp + fp + fn) for F1, averaged over
        classes for macro F1)."""
        stt = self.stats
        if self.metric in ("accuracy", "mean"):
            return stt[..., 0]
        if self.metric in ("f1", "micro_f1"):
            stt = stt[..., None, :]
        else:
            stt = stt.reshape(*stt.shape[:2], self.n_classes, 3)
        tp, fp, fn = stt[..., 0], stt[..., 1], stt[..., 2]
        d = 2 * tp + fp + fn
        dbar = d.mean(axis=(0, 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            F = np.where(dbar > 0, 2 * tp.mean(axis=(0, 1)) / dbar, 0.0)
            psi = np.where(dbar > 0, (2 * tp - F * d) / dbar, 0.0)
        if np.isnan(self.zero_division):
            keep = dbar > 0
            return psi[..., keep].mean(axis=-1) if keep.any() else np.zeros(stt.shape[:2])
        return psi.mean(axis=-1)


def _check_zero_division(zero_division: Any) -> float:
    try:
        z = float(zero_division)
    except (TypeError, ValueError):
        z = None
    if z is None or not (np.isnan(z) or z in (0.0, 1.0)):
        raise DataError(
            f"zero_division must be 0, 1 or nan (the F1 of a class with tp + fp + fn = 0; nan leaves the class "
            f"out of the macro average, as scikit-learn does); got {zero_division!r}"
        )
    return z


def _from_table(data: Any, item: str, run: str, prediction: str, target: str, metric: str):
    """Predictions P (n, l), gold labels T (l,) or None, item and run labels, from a table."""
    df = as_pandas(data)
    require_nonempty(df)
    labels = [item, run] + ([] if metric == "mean" else [target])
    require_columns(df, [*labels, prediction])
    ck.check_labels(df, labels)
    if metric == "mean":
        require_finite(df, prediction)
    elif df[prediction].isna().any():
        raise DataError(
            f"column {prediction!r} has {int(df[prediction].isna().sum())} missing predictions; a failed "
            "prediction is a wrong answer: fill it with a label that is never correct (e.g. '<none>')"
        )
    require_unique(df, [item, run], what="prediction table")
    items, runs = list(pd.unique(df[item])), list(pd.unique(df[run]))
    l, n = len(items), len(runs)
    if len(df) != l * n:
        miss = pd.MultiIndex.from_product([items, runs]).difference(pd.MultiIndex.from_frame(df[[item, run]]))
        raise DataError(
            f"{len(miss)} (item, run) predictions are missing, e.g. {', '.join(map(str, list(miss)[:5]))}; every "
            f"run must predict every item (column {item!r} x column {run!r}): drop incomplete items or runs"
        )
    ic = pd.Categorical(df[item], categories=items).codes
    rc = pd.Categorical(df[run], categories=runs).codes
    P = np.empty((n, l), dtype=object if metric != "mean" else float)
    P[rc, ic] = df[prediction].to_numpy()
    if metric == "mean":
        return P, None, items, runs
    nt = df.groupby(item, sort=False)[target].nunique()
    if (nt > 1).any():
        raise DataError(
            f"the gold label (column {target!r}) differs between runs for items "
            f"{', '.join(map(str, nt.index[nt > 1][:5]))}; one gold label per item is expected"
        )
    T = np.empty(l, dtype=object)
    T[ic] = df[target].to_numpy()
    return P, T, items, runs


def _from_arrays(y_true: Any, y_pred: Any, metric: str):
    """Predictions P (n, l), gold labels T (l,) or None, item and run labels, from arrays."""
    if y_pred is None:
        raise DataError("pass data= (a table with item, run, prediction, target columns) or y_pred= (n_runs x n_items)")
    P = np.asarray(y_pred, dtype=float if metric == "mean" else None)
    if P.ndim == 1:
        P = P[None, :]
    if P.ndim != 2 or P.shape[1] < 1:
        raise DataError(f"y_pred must be a 2-D array (n_runs, n_items); got shape {P.shape}")
    n, l = P.shape
    if metric == "mean":
        if y_true is not None:
            raise DataError("metric='mean' averages numeric per-item scores given in y_pred; y_true must be None")
        if not np.isfinite(P).all():
            raise DataError("y_pred has non-finite scores; drop or impute them first")
        return P, None, list(range(l)), list(range(n))
    if y_true is None:
        raise DataError(f"metric={metric!r} needs the gold labels y_true (n_items,)")
    T = np.asarray(y_true)
    if T.ndim != 1 or len(T) != l:
        raise DataError(f"y_true must be 1-D with one gold label per item ({l}); got shape {T.shape}")
    if pd.isna(pd.Series(T.ravel())).any() or pd.isna(pd.Series(P.ravel())).any():
        raise DataError("y_true / y_pred contain missing values; a failed prediction is a wrong answer: "
                        "fill it with a label that is never correct")
    return P, T, list(range(l)), list(range(n))


def _classes(P: np.ndarray, T: np.ndarray, labels: Sequence[Any] | None) -> list[Any]:
    if labels is not None:
        if not list(labels):
            raise DataError("labels is empty; pass the classes to score or None for all labels seen")
        return list(labels)
    seen = pd.unique(pd.Series(np.concatenate([T.ravel(), P.ravel()])))
    try:
        return sorted(seen)
    except TypeError:
        return list(seen)


def _sufficient_statistics(P: np.ndarray, T: np.ndarray | None, metric: str, pos_label: Any,
                           labels: Sequence[Any] | None) -> tuple[np.ndarray, int]:
    """(l, n, K) per-instance statistics of every run, and the number of classes: the score
    (mean), correctness (accuracy), tp / fp / fn (binary and micro F1), per class (macro F1)."""
    if metric == "mean":
        return P.T[:, :, None].astype(float), 0
    Tb = T[None, :]
    if metric == "accuracy":
        return (P == Tb).T[:, :, None].astype(float), 0
    if metric == "f1":
        present = set(pd.unique(pd.Series(np.concatenate([T.ravel(), P.ravel()]))))
        if pos_label not in present:
            raise DataError(
                f"pos_label={pos_label!r} occurs neither in the gold labels nor in the predictions (labels seen: "
                f"{sorted(map(str, present))[:10]}); pass the positive class with pos_label="
            )
        pp, tt = P == pos_label, Tb == pos_label
        return np.stack([pp & tt, pp & ~tt, ~pp & tt], axis=-1).transpose(1, 0, 2).astype(float), 1
    classes = _classes(P, T, labels)
    if metric == "micro_f1":
        in_p, in_t = np.isin(P, classes), np.isin(Tb, classes)
        hit = P == Tb
        return np.stack([hit & in_p, in_p & ~hit, in_t & ~hit], axis=-1).transpose(1, 0, 2).astype(float), 1
    n, l = P.shape
    stt = np.empty((l, n, len(classes), 3))
    for k, c in enumerate(classes):  # loop over classes, not resamples
        pp, tt = P == c, Tb == c
        stt[:, :, k, 0] = (pp & tt).T
        stt[:, :, k, 1] = (pp & ~tt).T
        stt[:, :, k, 2] = (~pp & tt).T
    return stt.reshape(l, n, -1), len(classes)


def _prepare_runs(
    data: Any, y_true: Any, y_pred: Any, *, item: str, run: str, prediction: str, target: str,
    metric: str, pos_label: Any, labels: Sequence[Any] | None, zero_division: Any,
) -> _RunData:
    metric = ck.check_choice(metric, "metric", METRICS)
    zd = _check_zero_division(zero_division)
    if data is not None:
        if y_true is not None or y_pred is not None:
            raise DataError("pass either data= (a table) or y_true=/y_pred= (arrays), not both")
        P, T, items, runs = _from_table(data, item, run, prediction, target, metric)
    else:
        P, T, items, runs = _from_arrays(y_true, y_pred, metric)
    stats, n_classes = _sufficient_statistics(P, T, metric, pos_label, labels)
    return _RunData(stats, metric, n_classes, zd, tuple(items), tuple(runs))


# --------------------------------------------------------------------------------------------
# resampling engines
# --------------------------------------------------------------------------------------------

def _pooled_draws(rd: _RunData, B: int, ss: np.random.SeedSequence, chunk_size: int | None,
                  progress: bool, executor: Any = None) -> np.ndarray:
    """Algorithm 1 of Fraile-Hernández & Peñas: B test sets of l pairs drawn with replacement
    from the l x n pooled (instance, run) pairs; the metric of each."""
    l, n, K = rd.stats.shape
    flat = np.ascontiguousarray(rd.stats.reshape(l * n, K))
    rows = dr.batch_rows(_pooled_bytes(l, K))

    def one_block(rng: np.random.Generator, b0: int, r: int) -> np.ndarray:
        return dr.batched(lambda k: rd.score(flat[dr.draw_indices(rng, l * n, k, size=l)].sum(axis=1), l), rows)

    return dr.run_blocks(np.empty(B), dr.stream(ss, _POOLED), one_block, chunk_size=chunk_size, progress=progress,
                         work=0.0, desc="pooled bootstrap", executor=executor)


def _instance_draws(rd: _RunData, B: int, ss: np.random.SeedSequence, chunk_size: int | None,
                    progress: bool, executor: Any = None) -> np.ndarray:
    """Cluster bootstrap over instances: each resample draws l instances with replacement, each
    carrying the predictions of all n runs; returns the (B, n) per-run metrics."""
    l, n, K = rd.stats.shape
    flat = np.ascontiguousarray(rd.stats.reshape(l, n * K))  # contiguous: the product goes to BLAS
    rows = dr.batch_rows(_instance_bytes(l, n, K))
    out = np.empty((B, n))
    if rd.metric != "mean" and rows == dr.BLOCK:  # 0/1 counts: the product is exact, blocks can share one
        def compute(W: np.ndarray) -> np.ndarray:
            return rd.score((W @ flat).reshape(len(W), n, K), l)

        return dr.run_block_groups(out, dr.stream(ss, _INSTANCES), lambda rng: dr.resample_counts(rng, l, dr.BLOCK),
                                   compute, blocks=_instance_blocks(l, n, K), chunk_size=chunk_size,
                                   progress=progress, desc="instance bootstrap", executor=executor)

    def one_batch(rng: np.random.Generator, k: int) -> np.ndarray:
        sums = (dr.resample_counts(rng, l, k) @ flat).reshape(k, n, K)  # count matrix (k, l) x stats
        return rd.score(sums, l)

    def one_block(rng: np.random.Generator, b0: int, r: int) -> np.ndarray:
        return dr.batched(lambda k: one_batch(rng, k), rows)

    return dr.run_blocks(out, dr.stream(ss, _INSTANCES), one_block, chunk_size=chunk_size,
                         progress=progress, work=0.0, desc="instance bootstrap", executor=executor)


def _run_indices(n: int, B: int, ss: np.random.SeedSequence) -> np.ndarray:
    """(B, n) runs drawn with replacement in every resample (stream ``ss``)."""
    return dr.run_blocks(np.empty((B, n), dtype=np.int64), ss, lambda rng, b0, r: dr.draw_indices(rng, n, dr.BLOCK),
                         chunk_size=None, progress=False, work=0.0, desc="runs")


def _order_statistic_interval(dist: np.ndarray, level: float) -> tuple[float, float, int, int]:
    """[F_(j_lo), F_(j_hi)], the j-th smallest of B values with j_lo = floor(alpha/2 B) and
    j_hi = ceil((1 - alpha/2) B), clipped to 1..B (Fraile-Hernández & Peñas, sec. 3.4)."""
    B = len(dist)
    alpha = 1.0 - level
    j_lo = int(np.clip(np.floor(alpha / 2 * B + 1e-9), 1, B))
    j_hi = int(np.clip(np.ceil((1 - alpha / 2) * B - 1e-9), 1, B))
    s = np.sort(dist)
    return float(s[j_lo - 1]), float(s[j_hi - 1]), j_lo, j_hi


def _two_way_anova(psi: np.ndarray) -> dict[str, float]:
    """Mean squares of the instances x runs table with one value per cell."""
    l, n = psi.shape
    g = psi.mean()
    ri = psi.mean(axis=1, keepdims=True)
    cj = psi.mean(axis=0, keepdims=True)
    ms_a = n * ((ri - g) ** 2).sum() / (l - 1) if l > 1 else np.nan
    ms_b = l * ((cj - g) ** 2).sum() / (n - 1) if n > 1 else np.nan
    ms_e = ((psi - ri - cj + g) ** 2).sum() / ((l - 1) * (n - 1)) if (l > 1 and n > 1) else np.nan
    return {"ms_instance": float(ms_a), "ms_run": float(ms_b), "ms_residual": float(ms_e)}


def _satterthwaite_df(parts: Sequence[tuple[float, float]]) -> float:
    """Welch-Satterthwaite df of a sum of independent variance estimates (value, df)."""
    tot = sum(v for v, _ in parts)
    den = sum(v * v / d for v, d in parts if d > 0 and v > 0)
    return float(tot * tot / den) if den > 0 else np.inf


def _row(method: str, target: str, estimate: float, std_error: float, lo: float, hi: float,
         n_resamples: int | None = None, n_degenerate: int = 0) -> dict[str, Any]:
    return {"method": method, "target": target, "estimate": float(estimate), "std_error": float(std_error),
            "conf_low": float(lo), "conf_high": float(hi),
            "n_resamples": n_resamples if n_resamples is not None else 0, "n_degenerate": int(n_degenerate)}


def _run_level_rows(scores: np.ndarray, B: int, ss: np.random.SeedSequence, level: float
                    ) -> tuple[list[dict[str, Any]], list[ResultWarning]]:
    """The run-level baselines (intervals for the mean of the n per-run scores), their bootstrap
    resamples of the runs drawn from stream ``ss``."""
    n = len(scores)
    alpha = 1.0 - level
    target = "expected_score_this_test_set"
    names = ("t", "percentile", "bca", "bootstrap_t")
    if n < 2:
        w = ResultWarning("too_few_runs", f"run-level intervals need at least 2 runs; got {n} (they are NaN)")
        return [_row(m, target, np.nan, np.nan, np.nan, np.nan) for m in names], [w]
    m, s = float(scores.mean()), float(scores.std(ddof=1))
    se = s / np.sqrt(n)
    if np.ptp(scores) == 0:
        w = ResultWarning("degenerate", "all runs have the same score: the run-level intervals have zero width (they "
                                        "only see run-to-run variation, and there is none on this test set)")
        return [_row(k, target, m, 0.0, m, m, B if k != "t" else None) for k in names], [w]
    tq = stats.t.ppf(1 - alpha / 2, n - 1)
    rows = [_row("t", target, m, se, m - tq * se, m + tq * se)]
    x = scores[_run_indices(n, B, ss)]
    bm = x.mean(axis=1)
    est, dist = np.array([m]), bm[None, :]
    lo, hi = st.intervals(est, dist, "percentile", level)
    rows.append(_row("percentile", target, m, float(bm.std(ddof=1)), lo[0], hi[0], B))
    lo, hi = st.intervals(est, dist, "bca", level, [((scores.sum() - scores) / (n - 1))[None, :]])
    warns: list[ResultWarning] = []
    if not np.isfinite(lo[0]):
        warns.append(ResultWarning("degenerate", "BCa interval undefined: the observed mean lies outside the "
                                                 "bootstrap distribution (z0 infinite); reported as NaN"))
    rows.append(_row("bca", target, m, float(bm.std(ddof=1)), lo[0], hi[0], B))
    rows.append(_bootstrap_t_row(x, bm, m, se, level, target))
    n_deg = rows[-1]["n_degenerate"]
    if n_deg:
        warns.append(ResultWarning(
            "degenerate_resamples",
            f"bootstrap-t: {n_deg} of {B} resamples drew the same run n times (SD 0, t undefined) and were dropped"))
    return rows, warns


def _bootstrap_t_row(x: np.ndarray, bm: np.ndarray, m: float, se: float, level: float, target: str) -> dict[str, Any]:
    """Bootstrap-t interval: resamples whose runs are all identical have SD 0 and no t statistic;
    they are dropped (and counted), the standard convention (Efron & Tibshirani 1993, ch. 12)."""
    B, n = x.shape
    alpha = 1.0 - level
    ok = np.ptp(x, axis=1) != 0
    n_deg = int(B - ok.sum())
    if ok.sum() < 2:
        return _row("bootstrap_t", target, m, se, np.nan, np.nan, B, n_deg)
    tstar = (bm[ok] - m) / (x[ok].std(axis=1, ddof=1) / np.sqrt(n))
    tq_lo, tq_hi = np.quantile(tstar, [alpha / 2, 1 - alpha / 2])
    return _row("bootstrap_t", target, m, se, m - tq_hi * se, m - tq_lo * se, B, n_deg)


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class PooledRunBootstrapResult(ResultMixin):
    """Result of :func:`pooled_run_bootstrap`: ``estimate`` (mean of the B pooled scores, the
    paper's F1-hat_{1..n}), ``observed`` (metric of all l x n pooled pairs), ``std_error`` (SD
    of the draws), ``conf_low`` / ``conf_high`` (order statistics ``order_statistics``), and
    ``table`` (the main table: one row with all of them).
    The interval is predictive: it is where the score of ONE new run on a new test set of l
    instances is expected to fall, not a confidence interval for the expected score."""

    estimate: float
    observed: float
    std_error: float
    conf_low: float
    conf_high: float
    level: float
    n_resamples: int
    n_items: int
    n_runs: int
    metric: str
    order_statistics: tuple[int, int]
    interpretation: str = "predictive interval for the score of one run on a new test set of the same size"
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    _distribution: np.ndarray | None = field(default=None, repr=False, compare=False)

    _main_table = "table"
    _title = "Pooled instance-level run bootstrap (Fraile-Hernandez & Penas 2025)"

    @property
    def bootstrap_distribution(self) -> np.ndarray:
        return self._distribution

    @property
    def table(self):
        """One row: method, target, metric, estimate, observed, std_error, conf_low, conf_high,
        level, n_resamples, n_items, n_runs."""
        return pd.DataFrame([{
            "method": "pooled_instance_bootstrap", "target": "new_run_new_test_set", "metric": self.metric,
            "estimate": self.estimate, "observed": self.observed, "std_error": self.std_error,
            "conf_low": self.conf_low, "conf_high": self.conf_high, "level": self.level,
            "n_resamples": self.n_resamples, "n_items": self.n_items, "n_runs": self.n_runs,
        }])

    def _scalars(self) -> list[tuple[str, Any]]:
        return [("interpretation", self.interpretation)]


def _check_run_memory(rd: _RunData, B: int, pooled_only: bool) -> None:
    l, n, K = rd.stats.shape
    pooled = dr.batch_rows(_pooled_bytes(l, K)) * _pooled_bytes(l, K)
    if pooled_only:
        ck.check_draw_memory("the pooled bootstrap draws and their working copies", 8.0 * B, 8.0 * B,
                             _BATCH_FACTOR * pooled, B, "", _FIX)
        return
    inst_rows = min(dr.batch_rows(_instance_bytes(l, n, K)) * _instance_blocks(l, n, K), -(-B // dr.BLOCK) * dr.BLOCK)
    inst = inst_rows * _instance_bytes(l, n, K)
    ck.check_draw_memory("the bootstrap draws of run_intervals and their working copies", 8.0 * B * (n + 2),
                         8.0 * B * ((_RUN_COPIES - 1) * n + _RUN_EXTRA - 2), _BATCH_FACTOR * max(pooled, inst), B,
                         f"({n} runs + 2)", _FIX)


@res.memory_errors(_FIX)
def pooled_run_bootstrap(
    data: Any = None,
    *,
    y_true: Any = None,
    y_pred: Any = None,
    item: str = "item",
    run: str = "run",
    prediction: str = "prediction",
    target: str = "target",
    metric: str = "accuracy",
    pos_label: Any = 1,
    labels: Sequence[Any] | None = None,
    zero_division: float = 0.0,
    n_resamples: int = 5000,
    level: float = 0.95,
    random_state: Any = None,
    chunk_size: int | None = None,
    progress: bool = True,
    executor: Any = None,
) -> PooledRunBootstrapResult:
    """The pooled instance-level bootstrap of Fraile-Hernández & Peñas (2025, Algorithm 1).

    The predictions of all n runs are concatenated with the gold labels into l x n pairs; each
    of ``n_resamples`` (B = 5000 as published) bootstrap test sets holds l pairs drawn with
    replacement from them, i.e. an instance drawn uniformly carrying the prediction of a run
    drawn uniformly; the metric is recomputed from the summed tp/fp/fn (or correct) counts of
    the drawn pairs. ``estimate`` is the mean of the B scores, and the interval is the pair of
    order statistics [F_(floor(alpha/2 B)), F_(ceil((1 - alpha/2) B))] (sec. 3.4).

    What it is: the distribution of the score of ONE run (a prediction per instance drawn from
    the run-mixture) on a resampled test set of size l, so the interval predicts a single new
    run on a new test set. It does not narrow as runs are added and is not a confidence interval
    for the expected score; see :func:`run_intervals` for that and for prediction intervals.

    ``data`` is a table with columns ``item``, ``run``, ``prediction`` and ``target`` (one row
    per item and run), or pass ``y_true`` (n_items,) and ``y_pred`` (n_runs, n_items). Metrics:
    ``accuracy``, ``f1`` (binary, positive class ``pos_label``), ``micro_f1``, ``macro_f1``
    (over ``labels`` or all labels seen; a class with tp + fp + fn = 0 scores ``zero_division``,
    NaN leaves it out of the average), ``mean`` (numeric per-item scores in ``y_pred`` /
    ``prediction``). Results do not depend on ``chunk_size`` (the progress-bar step) nor on
    ``executor`` (None, an int or ``"processes"`` for local worker processes, or a
    ``dask.distributed.Client``: whole blocks of replicates run on the workers).
    """
    rd = _prepare_runs(data, y_true, y_pred, item=item, run=run, prediction=prediction, target=target,
                       metric=metric, pos_label=pos_label, labels=labels, zero_division=zero_division)
    level = ck.check_level(level)
    B = ck.check_n_resamples(n_resamples)
    _check_run_memory(rd, B, pooled_only=True)
    ss = seed_sequence(random_state)
    dist = _pooled_draws(rd, B, ss, chunk_size, progress, executor)
    lo, hi, jl, jh = _order_statistic_interval(dist, level)
    l, n, _ = rd.stats.shape
    observed = float(rd.score(rd.stats.sum(axis=(0, 1)), l * n))
    return PooledRunBootstrapResult(
        estimate=float(dist.mean()), observed=observed, std_error=float(dist.std(ddof=1)), conf_low=lo,
        conf_high=hi, level=level, n_resamples=B, n_items=l, n_runs=n, metric=rd.metric, order_statistics=(jl, jh),
        provenance=ck.provenance("pooled_run_bootstrap", ss, n_resamples=B, zero_division=rd.zero_division),
        _distribution=dist,
    )


@dataclass(frozen=True, repr=False)
class RunIntervalsResult(ResultMixin):
    """Result of :func:`run_intervals`.

    - ``intervals`` (the main table, also ``table``): method, target, estimate, std_error,
      conf_low, conf_high, n_resamples, n_degenerate. Targets: ``expected_score`` (the mean
      score of a run over runs and test sets of size l), ``expected_score_this_test_set``
      (over runs, this test set fixed: what the run-level baselines estimate),
      ``new_run_this_test_set`` and ``new_run_new_test_set`` (prediction intervals for one
      new run).
    - ``runs``: run, score, and the per-run instance-bootstrap boot_mean, std_error,
      conf_low, conf_high (the paper's per-run distributions F1_r).
    - ``variance``: component (test_set, run_to_run, total), variance, std_dev, percent —
      the law-of-total-variance split of one run's score on a new test set of size l.
    """

    intervals: Any
    runs: Any
    variance: Any
    metric: str
    estimate: float
    n_items: int
    n_runs: int
    level: float
    n_resamples: int
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    _distributions: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    _main_table = "table"
    _print_tables = ("intervals", "variance")
    _title = "Intervals for multiple stochastic runs (Fraile-Hernandez & Penas 2025)"

    def _scalars(self) -> list[tuple[str, Any]]:
        return [("metric", self.metric), ("items x runs", f"{self.n_items} x {self.n_runs}"),
                ("estimate (mean over runs)", self.estimate), ("level", self.level)]

    @property
    def table(self):
        """The main table: ``intervals``."""
        return self.intervals

    @property
    def distributions(self) -> dict[str, np.ndarray]:
        """Bootstrap draws: ``instance`` (B,), ``per_run`` (B, n), ``pooled`` (B,)."""
        return self._distributions


def _variance_split(rd: _RunData, scores: np.ndarray, resample_runs: bool):
    """The variance table (test set, run to run, total), the two-way ANOVA mean squares, the
    two components and warnings (run effect; one run)."""
    l, n, _ = rd.stats.shape
    an = _two_way_anova(rd.influence())
    v_run = float(scores.var(ddof=1)) if n > 1 else np.nan
    warns: list[ResultWarning] = []
    if n > 1:
        v_test = max(0.0, an["ms_instance"] - an["ms_residual"]) / (n * l)
        if an["ms_residual"] > 0:
            F = an["ms_run"] / an["ms_residual"]
            p = float(stats.f.sf(F, n - 1, (l - 1) * (n - 1)))
            if p < 0.01 and not resample_runs:
                warns.append(ResultWarning(
                    "run_effect",
                    f"runs differ by more than per-prediction noise explains (two-way F = {F:.3g}, p = {p:.2g}); the "
                    "instance bootstrap keeps the runs fixed and misses that variance: prefer 'variance_components'"))
    else:
        v_test = an["ms_instance"] / (n * l)
        warns.append(ResultWarning("too_few_runs", "one run: run-to-run variance is not estimable and the test-set "
                                                   "variance includes the item x run interaction"))
    tot = v_test + v_run
    variance = pd.DataFrame({
        "component": ["test_set", "run_to_run", "total"],
        "variance": [v_test, v_run, tot],
        "std_dev": np.sqrt([v_test, v_run, tot]),
        "percent": [100 * v_test / tot, 100 * v_run / tot, 100.0] if tot > 0 else [np.nan, np.nan, np.nan],
    })
    return variance, an, v_test, v_run, warns


def _t_rows(est: float, v_test: float, v_run: float, l: int, n: int, level: float) -> list[dict[str, Any]]:
    """The variance-components interval and the two prediction intervals (t quantiles,
    Satterthwaite df)."""
    alpha = 1.0 - level

    def t_row(method: str, tgt: str, parts: list[tuple[float, float]]) -> dict[str, Any]:
        if n < 2:
            return _row(method, tgt, est, np.nan, np.nan, np.nan)
        v = sum(p for p, _ in parts)
        df_ = _satterthwaite_df(parts)
        tq = stats.t.ppf(1 - alpha / 2, df_) if np.isfinite(df_) else z_quantile(1 - alpha)
        return _row(method, tgt, est, np.sqrt(v), est - tq * np.sqrt(v), est + tq * np.sqrt(v))

    rows = [t_row("variance_components", "expected_score", [(v_test, l - 1), (v_run / n, n - 1)])]
    if n >= 2:
        sp = np.sqrt(v_run * (1 + 1 / n))
        tq = stats.t.ppf(1 - alpha / 2, n - 1)
        rows.append(_row("prediction_t", "new_run_this_test_set", est, sp, est - tq * sp, est + tq * sp))
    else:
        rows.append(_row("prediction_t", "new_run_this_test_set", est, np.nan, np.nan, np.nan))
    rows.append(t_row("prediction_components", "new_run_new_test_set",
                      [(2 * v_test, l - 1), (v_run * (1 + 1 / n), n - 1)]))
    return rows


def _instance_interval(rd: _RunData, est: float, B: int, ss: np.random.SeedSequence, resample_runs: bool,
                       level: float, chunk_size: int | None, progress: bool, executor: Any = None):
    """The instance (cluster) bootstrap row, the (B, n) per-run draws, the (B,) run averages
    and a warning when the metric is undefined in some resamples."""
    n = rd.n_runs
    per_run = _instance_draws(rd, B, ss, chunk_size, progress, executor)  # (B, n)
    if resample_runs:
        inst = np.take_along_axis(per_run, _run_indices(n, B, dr.stream(ss, _RUNS)), axis=1).mean(axis=1)
    else:
        inst = per_run.mean(axis=1)
    alpha = 1.0 - level
    q = st.quantiles(inst[None, :], [alpha / 2, 1 - alpha / 2])[:, 0]
    row = _row("instance_run_bootstrap" if resample_runs else "instance_bootstrap", "expected_score", est,
               float(st.sd(inst[None, :])[0]), q[0], q[1], B)
    warns = []
    if np.isnan(inst).any():
        warns.append(ResultWarning("undefined_draws", f"the metric is undefined in {int(np.isnan(inst).sum())} "
                                                      "instance-bootstrap resamples (zero_division=nan); left out"))
    return row, per_run, inst, warns


def _runs_table(rd: _RunData, scores: np.ndarray, per_run: np.ndarray, level: float):
    alpha = 1.0 - level
    d = np.ascontiguousarray(per_run.T)  # (n, B)
    q = st.quantiles(d, [alpha / 2, 1 - alpha / 2])
    return pd.DataFrame({"run": list(rd.runs), "score": scores, "boot_mean": st.mean(d), "std_error": st.sd(d),
                         "conf_low": q[0], "conf_high": q[1]})


@res.memory_errors(_FIX)
def run_intervals(
    data: Any = None,
    *,
    y_true: Any = None,
    y_pred: Any = None,
    item: str = "item",
    run: str = "run",
    prediction: str = "prediction",
    target: str = "target",
    metric: str = "accuracy",
    pos_label: Any = 1,
    labels: Sequence[Any] | None = None,
    zero_division: float = 0.0,
    n_resamples: int = 5000,
    level: float = 0.95,
    resample_runs: bool = False,
    random_state: Any = None,
    chunk_size: int | None = None,
    progress: bool = True,
    executor: Any = None,
) -> RunIntervalsResult:
    """Intervals for a model evaluated in n stochastic runs on one test set of l instances.

    Input and metrics as in :func:`pooled_run_bootstrap`. With per-run scores s_1..s_n on the
    full test set, estimate = mean_r s_r, and ``intervals`` holds:

    - ``instance_bootstrap`` (target ``expected_score``): cluster bootstrap over instances —
      each resample draws l instances with replacement, every drawn instance carrying the
      predictions of all n runs; the metric is recomputed per run from summed counts and the n
      run scores are averaged; percentile interval. Runs are kept fixed, so a run-level effect
      (a run better on every item, e.g. a fine-tuning seed) is not counted; with
      ``resample_runs=True`` runs are also drawn with replacement in each resample
      (conservative: the item x run noise is counted twice). A warning is raised when the
      two-way F test finds a run effect.
    - ``variance_components`` (``expected_score``): estimate +- t * sqrt(V_test + V_run / n),
      Satterthwaite df, from the variance split below (counts run-level effects).
    - ``prediction_t`` (``new_run_this_test_set``): estimate +- t_{n-1} s sqrt(1 + 1/n).
    - ``prediction_components`` (``new_run_new_test_set``):
      estimate +- t * sqrt(2 V_test + V_run (1 + 1/n)), Satterthwaite df.
    - ``pooled_instance_bootstrap`` (``new_run_new_test_set``): the published method, see
      :func:`pooled_run_bootstrap` (same ``random_state`` gives the same draws).
    - run-level baselines over the n scores (target ``expected_score_this_test_set``): ``t``,
      ``percentile``, ``bca`` (scipy's formulas: 'mean' percentile-of-score z0, jackknife
      acceleration; NaN when z0 is infinite), ``bootstrap_t`` (resamples that draw one run n
      times have SD 0 and are dropped and counted in ``n_degenerate``). With one run they are
      NaN; with identical run scores they have zero width (both with a warning).

    Variance split (``variance``): V_run = sample variance of the n run scores (run-to-run
    variance on a fixed test set); V_test = max(0, MS_instance - MS_residual) / (n l) from the
    two-way instances x runs ANOVA of the per-prediction influence values (the 0/1 correctness
    for accuracy; the linearisation (2tp - F d) / mean(d) for F1), i.e. the variance over test
    sets of the run-averaged expected score. total = V_test + V_run is the variance of one run's
    score on a new test set (law of total variance). With one run V_run is NaN and V_test
    includes the item x run interaction. Results do not depend on ``chunk_size`` nor on
    ``executor`` (None, an int or ``"processes"``, or a ``dask.distributed.Client``).
    """
    rd = _prepare_runs(data, y_true, y_pred, item=item, run=run, prediction=prediction, target=target,
                       metric=metric, pos_label=pos_label, labels=labels, zero_division=zero_division)
    level = ck.check_level(level)
    B = ck.check_n_resamples(n_resamples)
    l, n, K = rd.stats.shape
    if l < 2:
        raise DataError(f"need at least 2 test instances to resample; got {l}")
    _check_run_memory(rd, B, pooled_only=False)
    ss = seed_sequence(random_state)
    scores = rd.score(rd.stats.sum(axis=0), l)  # (n,)
    est = float(scores.mean())
    inst_row, per_run, inst, warns = _instance_interval(rd, est, B, ss, bool(resample_runs), level, chunk_size,
                                                        progress, executor)
    variance, an, v_test, v_run, var_warns = _variance_split(rd, scores, bool(resample_runs))
    pooled = _pooled_draws(rd, B, ss, chunk_size, progress, executor)
    lo, hi, _, _ = _order_statistic_interval(pooled, level)
    pooled_row = _row("pooled_instance_bootstrap", "new_run_new_test_set", float(pooled.mean()),
                      float(pooled.std(ddof=1)), lo, hi, B)
    base_rows, base_warns = _run_level_rows(scores, B, dr.stream(ss, _BASELINES), level)

    intervals = pd.DataFrame([inst_row, *_t_rows(est, v_test, v_run, l, n, level), pooled_row, *base_rows])
    return RunIntervalsResult(
        intervals=intervals, runs=_runs_table(rd, scores, per_run, level), variance=variance, metric=rd.metric,
        estimate=est, n_items=l, n_runs=n, level=level, n_resamples=B, warnings=tuple(warns + var_warns + base_warns),
        provenance=ck.provenance("run_intervals", ss, n_resamples=B, resample_runs=bool(resample_runs),
                                 zero_division=rd.zero_division, **an),
        _distributions={"instance": inst, "per_run": per_run, "pooled": pooled},
    )
