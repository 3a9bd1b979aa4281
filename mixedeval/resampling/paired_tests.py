"""Paired significance tests of two systems on the same test items, in vectorized numpy.

Each test takes the per-item values of system x and system y (same items, same order): one
score per item for ``statistic="mean"``, or per-item sufficient statistics (an (n, m) array)
for a corpus-level metric recomputed from sums (``"f1"`` from tp/fp/fn, or any function of
summed columns, e.g. BLEU from n-gram counts). The test statistic is

    delta = stat(x) - stat(y),   stat = mean of the scores, or f(column sums).

* :func:`paired_bootstrap_test` -- items drawn with replacement, the same draw for both
  systems; H0 is imposed by the shift method (Koehn 2004; Berg-Kirkpatrick et al. 2012):
  c = #{b : |delta_b - mean(delta_*)| >= |delta|} (two-sided).
* :func:`approximate_randomization` -- per item, the two systems' outputs are swapped with
  probability 1/2 (Noreen 1989; Riezler & Maxwell 2005); c = #{b : |delta_b| >= |delta|}.
  All 2^n swap masks are enumerated when 2^n <= n_resamples.
* :func:`sign_flip_test` -- the paired permutation test of a mean difference: the signs of the
  per-item differences are flipped at random (exactly enumerated when small).

p-values: (c + 1) / (B + 1) by default (Davison & Hinkley 1997 eq. 4.11; Phipson & Smyth
2010: never 0, valid), c / B on request (``p_value_convention="c_over_b"``); with exact
enumeration p = c / 2^n, the observed assignment being one of the 2^n. Ties are judged with a
relative tolerance of 100 machine epsilons, as scipy.stats.permutation_test does. The result
says which convention was used.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import _resources as res
from .._random import seed_sequence
from ..errors import DataError
from ..results import ResultMixin, ResultWarning, jsonable
from . import _checks as ck, _draws as dr, _stats as st

_MAX_EXACT_N = 24  # 2^24 = 16.8M assignments
_FIX = ("Use fewer n_resamples (the replicates are kept: n_resamples x 8 bytes; chunk_size does not change "
        "that).")
#: peak memory of a test in units of its B doubles of replicates, measured with tracemalloc:
#: the replicates, the centred null distribution kept in the result, and |null| with a boolean
#: mask in count_extreme (or the sorted copy of the percentile interval): 3.1
_COPIES = 3.2


def _check_memory(B: int, method: str) -> None:
    """DataError before anything is drawn when the replicates of a test and their working copies
    exceed mixedeval's memory limit."""
    res.check_memory(
        _COPIES * 8.0 * B, f"the {method} replicates and their working copies", _FIX,
        detail=(f"n_resamples={res.format_count(B)} x 8 bytes = {res.format_bytes(8.0 * B)} per copy, about "
                f"{_COPIES:g} copies: the replicates, the null distribution kept in the result and the "
                f"temporaries of the p-value"),
    )


@dataclass(frozen=True, repr=False, eq=False)
class PairedTestResult(ResultMixin):
    """Result of a paired two-system test.

    table : the main table (one row; see the property).
    statistic : observed delta = stat(x) - stat(y).
    p_value : by ``p_value_convention`` ("(c+1)/(B+1)", "c/B" or "exact c/2^n").
    n_resamples : replicates evaluated (2^n when exact).
    count : c, the replicates at least as extreme as the observed delta.
    null_distribution : the replicated deltas under H0 (shift-centred for the bootstrap).
    confidence_interval : percentile interval of delta (paired bootstrap only), at ``level``.
    """

    method: str
    statistic: float
    p_value: float
    p_value_convention: str
    n_resamples: int
    count: int
    alternative: str
    exact: bool
    estimate_x: float
    estimate_y: float
    n_items: int
    statistic_name: str
    null_distribution: np.ndarray
    confidence_interval: tuple[float, float] | None = None
    level: float | None = None
    provenance: dict[str, Any] | None = None
    warnings: tuple[ResultWarning, ...] = ()

    _title = "Paired two-system test"

    @property
    def table(self):
        """The main table, one row: method, statistic_name, estimate_x, estimate_y, statistic,
        p_value, p_value_convention, alternative, n_resamples, exact, conf_low, conf_high."""
        lo, hi = self.confidence_interval if self.confidence_interval is not None else (np.nan, np.nan)
        return pd.DataFrame([{
            "method": self.method, "statistic_name": self.statistic_name, "estimate_x": self.estimate_x,
            "estimate_y": self.estimate_y, "statistic": self.statistic, "p_value": self.p_value,
            "p_value_convention": self.p_value_convention, "alternative": self.alternative,
            "n_resamples": self.n_resamples, "exact": self.exact, "conf_low": lo, "conf_high": hi,
        }])

    def to_dict(self) -> dict[str, Any]:
        """Everything but the null distribution, JSON-friendly."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "null_distribution"}
        return jsonable(d)


def _paired_arrays(x: Any, y: Any, stat: st.CellStatistic) -> tuple[np.ndarray, np.ndarray]:
    """(n, m) float arrays, checked: same shape, finite, m columns, n >= 2."""
    out = []
    for name, a in (("x", x), ("y", y)):
        try:
            arr = np.array(a, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise DataError(f"{name} must be numeric per-item values: {exc}") from exc
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[1] != stat.n_columns:
            raise DataError(
                f"{name} must hold one row per item with {stat.n_columns} column(s) for statistic "
                f"{stat.name!r}; got shape {np.shape(a)}"
            )
        bad = ~np.isfinite(arr)
        if bad.any():
            rows = np.flatnonzero(bad.any(axis=1))
            raise DataError(f"{name} has {int(bad.sum())} non-finite values (items {rows[:5].tolist()}); "
                            "drop those items from both systems or impute them")
        out.append(arr)
    if out[0].shape != out[1].shape:
        raise DataError(f"x and y must have the same shape (paired: one row per item, same items in the same "
                        f"order); got {out[0].shape} and {out[1].shape}")
    if out[0].shape[0] < 2:
        raise DataError(f"a paired test needs at least 2 items, got {out[0].shape[0]}")
    return out[0], out[1]


def _setup(x: Any, y: Any, statistic: Any, alternative: str, p_value_convention: str, n_resamples: int):
    k = 1 if isinstance(statistic, str) and statistic == "mean" else 3 if statistic == "f1" else _n_cols(x)
    stat, _ = st.cell_statistic(statistic, [f"column {i}" for i in range(k)])
    X, Y = _paired_arrays(x, y, stat)
    ck.check_alternative(alternative)
    ck.check_p_convention(p_value_convention)
    ck.check_n_resamples(n_resamples, minimum=1)
    return stat, X, Y


def _observed(stat: st.CellStatistic, X: np.ndarray, Y: np.ndarray) -> tuple[float, float]:
    """stat(x), stat(y) on the observed items (finite, or a DataError)."""
    n = X.shape[0]
    est = float(stat(X.sum(axis=0), n)), float(stat(Y.sum(axis=0), n))
    if not np.isfinite(est).all():
        raise DataError(f"the statistic is not finite on the observed data ({est}); a function of summed columns "
                        "must be defined for the sums (guard divisions with np.where)")
    return est


def _n_cols(x: Any) -> int:
    shape = np.shape(x)
    return 1 if len(shape) < 2 else int(shape[1])


def _run_blocks(n_resamples: int, ss: np.random.SeedSequence, chunk_size: int | None, progress: bool | None,
                work_per: float, desc: str,
                one_block: Callable[[np.random.Generator, int, int], np.ndarray], executor: Any = None) -> np.ndarray:
    """The n_resamples replicates ``one_block(rng, first_replicate, r)`` of the block loop (on
    ``executor``'s workers when given), checked to be finite."""
    out = dr.run_blocks(np.empty(n_resamples), ss, one_block, chunk_size=chunk_size, progress=progress,
                        work=work_per * n_resamples, desc=desc, executor=executor)
    n_bad = int(out.size - np.count_nonzero(np.isfinite(out)))
    if n_bad:
        raise DataError(f"the statistic is not finite in {n_bad} replicates; a function "
                        "of summed columns must be defined for every resampled sum (guard divisions with np.where)")
    return out


@res.memory_errors(_FIX)
def paired_bootstrap_test(
    x: Any,
    y: Any,
    *,
    statistic: Literal["mean", "f1"] | Callable[..., Any] = "mean",
    n_resamples: int = 10_000,
    alternative: Literal["two-sided", "greater", "less"] = "two-sided",
    p_value_convention: Literal["plus_one", "c_over_b"] = "plus_one",
    level: float = 0.95,
    random_state: Any = None,
    chunk_size: int | None = None,
    progress: bool | None = None,
    executor: Any = None,
) -> PairedTestResult:
    """Paired bootstrap test of delta = stat(x) - stat(y) by the shift method.

    The items are drawn with replacement (the same draw for both systems) B times; the
    replicated deltas are centred at their mean to impose H0: delta = 0, and
    c = #{b : |delta_b - mean(delta_*)| >= |delta|} (two-sided; ``greater``: delta_b -
    mean >= delta; ``less``: <= delta). p = (c + 1) / (B + 1), or c / B. The percentile
    interval of the uncentred replicates is returned as ``confidence_interval``.

    Parameters
    ----------
    x, y : array-like, (n,) or (n, m)
        Per-item scores (``statistic="mean"``) or per-item sufficient statistics of the two
        systems on the same n items, in the same order.
    statistic : "mean", "f1", another name of ``_stats.STATISTICS``, or callable
        "f1": x and y are (n, 3) arrays of tp, fp, fn; F1 = 2 tp / (2 tp + fp + fn) of the sums
        (0 when the denominator is 0). "bleu" / "chrf": per-sentence statistics of
        :func:`mixedeval.metrics.sentence_stats`, the corpus score as sacrebleu computes it;
        "accuracy" / "exact_match" (0/1 per item, or correct and total), "precision", "recall",
        "f1_micro" (tp, fp, fn) and "precision_macro", "recall_macro", "f1_macro" (tp, fp, fn
        per class). A callable gets one array per column with the (resampled) column sums and
        must work elementwise.
    n_resamples, alternative, p_value_convention, level, random_state, chunk_size, progress
        As named; results do not depend on ``chunk_size``.
    executor : None (this process), an int or ``"processes"`` (local worker processes) or a
        ``dask.distributed.Client``; the replicates are bit-identical with every executor.
    """
    stat, X, Y = _setup(x, y, statistic, alternative, p_value_convention, n_resamples)
    level = ck.check_level(level)
    _check_memory(int(n_resamples), "paired bootstrap")
    n, m = X.shape
    Z = np.concatenate([X, Y], axis=1)
    est_x, est_y = _observed(stat, X, Y)
    obs = est_x - est_y
    ss = seed_sequence(random_state)

    def one_block(rng: np.random.Generator, b0: int, r: int) -> np.ndarray:
        # (BLOCK, 2m); the tail past r is discarded
        sums = dr.batched(lambda k: dr.resample_counts(rng, n, k) @ Z, dr.rows_per_batch(n))
        return stat(sums[:, :m], n) - stat(sums[:, m:], n)

    dist = _run_blocks(int(n_resamples), ss, chunk_size, progress, 2.0 * m * n,
                       "paired bootstrap", one_block, executor)
    null = dist - dist.mean()
    c = int(st.count_extreme(null, obs, alternative))
    p = float(st.p_from_count(c, int(n_resamples), p_value_convention))
    lo, hi = st.intervals(np.array([obs]), dist[None, :], "percentile", level)
    null.setflags(write=False)
    return PairedTestResult(
        method="paired bootstrap test (shift method)", statistic=obs, p_value=p,
        p_value_convention=st.P_CONVENTIONS[p_value_convention], n_resamples=int(n_resamples), count=c,
        alternative=alternative, exact=False, estimate_x=est_x, estimate_y=est_y, n_items=n,
        statistic_name=stat.name, null_distribution=null, confidence_interval=(float(lo[0]), float(hi[0])),
        level=level, provenance=ck.provenance("paired_bootstrap_test", ss, n_resamples=int(n_resamples)),
    )


def _swap_test(X: np.ndarray, Y: np.ndarray, stat: st.CellStatistic, n_resamples: int, alternative: str,
               p_value_convention: str, exact: bool | None, random_state: Any, chunk_size: int | None,
               progress: bool | None, method: str, desc: str, executor: Any = None) -> PairedTestResult:
    """Randomization test that swaps x_i and y_i for the items in a mask: the swapped sums are
    sum(x) + M @ (y - x) and sum(y) - M @ (y - x)."""
    n, m = X.shape
    Sx, Sy, D = X.sum(axis=0), Y.sum(axis=0), Y - X
    est_x, est_y = _observed(stat, X, Y)
    obs = est_x - est_y
    if exact is None:
        exact = n <= _MAX_EXACT_N and 2**n <= n_resamples
    if exact and n > _MAX_EXACT_N:
        raise DataError(f"exact enumeration of 2^{n} assignments is too large (limit n = {_MAX_EXACT_N} items); "
                        "use exact=False")

    def null_of(mask: np.ndarray) -> np.ndarray:
        md = mask @ D  # (r, m)
        return stat(Sx + md, n) - stat(Sy - md, n)

    ss = None
    if exact:
        total = 2**n
        bits = np.arange(n, dtype=np.int64)

        def one_block(rng: np.random.Generator, b0: int, r: int) -> np.ndarray:
            codes = np.arange(b0, b0 + r, dtype=np.int64)
            return null_of(((codes[:, None] >> bits) & 1).astype(np.float64))

        _check_memory(total, desc)
        null = _run_blocks(total, seed_sequence(0), chunk_size, progress, 2.0 * m * n, desc, one_block, executor)
        c = int(st.count_extreme(null, obs, alternative))
        p, conv, B = c / total, "exact c/2^n", total
    else:
        ss = seed_sequence(random_state)

        def one_block(rng: np.random.Generator, b0: int, r: int) -> np.ndarray:
            return dr.batched(lambda k: null_of(rng.integers(0, 2, size=(k, n), dtype=np.int8).astype(np.float64)),
                              dr.rows_per_batch(n))

        _check_memory(int(n_resamples), desc)
        null = _run_blocks(int(n_resamples), ss, chunk_size, progress, 2.0 * m * n, desc, one_block, executor)
        c = int(st.count_extreme(null, obs, alternative))
        B = int(n_resamples)
        p, conv = float(st.p_from_count(c, B, p_value_convention)), st.P_CONVENTIONS[p_value_convention]
    null.setflags(write=False)
    return PairedTestResult(
        method=method, statistic=obs, p_value=p, p_value_convention=conv, n_resamples=B, count=c,
        alternative=alternative, exact=bool(exact), estimate_x=est_x, estimate_y=est_y, n_items=n,
        statistic_name=stat.name, null_distribution=null,
        provenance=ck.provenance(desc.replace(" ", "_"), ss, n_resamples=B, exact=bool(exact)),
    )


@res.memory_errors(_FIX)
def approximate_randomization(
    x: Any,
    y: Any,
    *,
    statistic: Literal["mean", "f1"] | Callable[..., Any] = "mean",
    n_resamples: int = 10_000,
    alternative: Literal["two-sided", "greater", "less"] = "two-sided",
    p_value_convention: Literal["plus_one", "c_over_b"] = "plus_one",
    exact: bool | None = None,
    random_state: Any = None,
    chunk_size: int | None = None,
    progress: bool | None = None,
    executor: Any = None,
) -> PairedTestResult:
    """Approximate randomization test (Noreen 1989; Riezler & Maxwell 2005) of
    delta = stat(x) - stat(y).

    In each replicate every item's pair of outputs is swapped between the systems with
    probability 1/2 (a random swap mask), and delta is recomputed (from the swapped sums for a
    corpus metric). c = #{b : |delta_b| >= |delta|} (two-sided; ``greater``: delta_b >= delta;
    ``less``: delta_b <= delta); p = (c + 1) / (B + 1) or c / B. With ``exact=None`` the 2^n
    masks are enumerated when 2^n <= n_resamples, and p = c / 2^n exactly (``exact=True``
    forces it, up to n = 24 items).

    Parameters are as in :func:`paired_bootstrap_test`.
    """
    stat, X, Y = _setup(x, y, statistic, alternative, p_value_convention, n_resamples)
    return _swap_test(X, Y, stat, int(n_resamples), alternative, p_value_convention, exact, random_state,
                      chunk_size, progress, "approximate randomization (per-item swaps)", "approximate randomization",
                      executor)


@res.memory_errors(_FIX)
def sign_flip_test(
    x: Any,
    y: Any = None,
    *,
    n_resamples: int = 10_000,
    alternative: Literal["two-sided", "greater", "less"] = "two-sided",
    p_value_convention: Literal["plus_one", "c_over_b"] = "plus_one",
    exact: bool | None = None,
    random_state: Any = None,
    chunk_size: int | None = None,
    progress: bool | None = None,
    executor: Any = None,
) -> PairedTestResult:
    """Sign-flip permutation test of a mean paired difference (Fisher 1935; the ``samples``
    permutation type of scipy.stats.permutation_test).

    d_i = x_i - y_i (or ``x`` itself when ``y`` is None); statistic mean(d); null replicates
    mean(e_i d_i) with random signs e_i = +-1 (all 2^n sign vectors when 2^n <= n_resamples or
    ``exact=True``, p = c / 2^n). c = #{b : |null_b| >= |mean(d)|} (two-sided; ``greater``:
    null_b >= mean(d); ``less``: <=); p = (c + 1) / (B + 1) or c / B.

    The other parameters (``chunk_size``, ``progress``, ``random_state``, ``executor``: where the
    blocks of replicates run, with bit-identical results) are as in :func:`paired_bootstrap_test`.
    """
    X, Y = _paired_arrays(x, x if y is None else y, st.CellStatistic("mean", 1))
    d = X[:, 0] if y is None else (X - Y)[:, 0]
    stat, D, Z = _setup(d, np.zeros_like(d), "mean", alternative, p_value_convention, n_resamples)
    return _swap_test(D, Z, stat, int(n_resamples), alternative, p_value_convention, exact, random_state,
                      chunk_size, progress, "sign-flip permutation test", "sign flip", executor)
