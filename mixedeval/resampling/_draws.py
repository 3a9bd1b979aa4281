"""Private machinery shared by ``bootstrap.py`` and ``paired_tests.py``: random streams that do
not depend on chunking, count matrices, chunk plans with a progress bar, the statistic computed
from (resampled) sums, bootstrap confidence intervals, and p-value conventions.

Random streams. ``random_state`` becomes one ``numpy.random.SeedSequence``. Resamples are
grouped in fixed blocks of :data:`BLOCK` consecutive resamples; block ``i`` draws from its own
generator ``PCG64(SeedSequence(entropy, spawn_key=(..., i)))``. A chunk is a run of whole
blocks, so the draws (and every result) are identical whatever the chunk size, and the first
``B`` resamples of a run with ``n_resamples > B`` are the resamples of a run with ``B`` (whole
blocks are always drawn). Chunks only set the progress-bar step.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from ..errors import DataError

BLOCK = 64  # resamples per random stream (and per matrix product)
CHUNK_BYTES = 96 * 2**20  # memory budget of one count matrix (with its indices)
CI_METHODS = ("percentile", "basic", "bca", "se")
REL_TIES = 100 * np.finfo(float).eps  # relative tolerance when comparing resampled to observed


# ---------------------------------------------------------------------------------------------
# random streams, chunks, counts
# ---------------------------------------------------------------------------------------------

def seed_sequence(random_state: Any) -> np.random.SeedSequence:
    """One SeedSequence from None, an int, a SeedSequence or a Generator (which is advanced)."""
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(random_state.integers(0, 2**63 - 1, size=4, dtype=np.int64).tolist())
    if random_state is None or (isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)
                                and random_state >= 0):
        return np.random.SeedSequence(None if random_state is None else int(random_state))
    raise DataError(
        f"random_state must be None, a non-negative int, a numpy.random.SeedSequence or a "
        f"numpy.random.Generator; got {random_state!r}"
    )


def seed_record(ss: np.random.SeedSequence) -> Any:
    """What to store in provenance to reproduce the run (the SeedSequence entropy)."""
    return ss.entropy if not ss.spawn_key else {"entropy": ss.entropy, "spawn_key": list(ss.spawn_key)}


def block_generator(ss: np.random.SeedSequence, block: int) -> np.random.Generator:
    """Generator of resample block ``block``: PCG64 seeded by the child SeedSequence
    (entropy, spawn_key + (block,)), built directly so it does not depend on earlier spawns."""
    child = np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, block), pool_size=ss.pool_size)
    return np.random.Generator(np.random.PCG64(child))


def block_sizes(start: int, stop: int) -> Iterator[tuple[int, int]]:
    """(block index, number of resamples) of the blocks covering resamples [start, stop);
    ``start`` is a multiple of BLOCK."""
    for b0 in range(start, stop, BLOCK):
        yield b0 // BLOCK, min(BLOCK, stop - b0)


def chunk_length(n_resamples: int, chunk_size: int | None) -> int:
    """Replicates per progress step: ``chunk_size`` (default: a twentieth of the run) rounded up
    to whole blocks. The work itself is done block by block, so memory does not depend on it."""
    if chunk_size is None:
        chunk_size = max(1, n_resamples // 20)
    elif isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise DataError(f"chunk_size must be a positive integer or None, got {chunk_size!r}")
    blocks = max(1, -(-int(chunk_size) // BLOCK))
    return min(blocks * BLOCK, -(-n_resamples // BLOCK) * BLOCK)


def chunks(n_resamples: int, length: int, progress: bool, desc: str) -> Iterator[tuple[int, int]]:
    """Consecutive (start, stop) chunks of ``length`` resamples, with an optional tqdm bar."""
    bar = None
    if progress:
        from tqdm.auto import tqdm  # noqa: PLC0415

        bar = tqdm(total=n_resamples, desc=desc, unit="resample", leave=False)
    try:
        for start in range(0, n_resamples, length):
            stop = min(n_resamples, start + length)
            yield start, stop
            if bar is not None:
                bar.update(stop - start)
    finally:
        if bar is not None:
            bar.close()


def auto_progress(progress: bool | None, work: float) -> bool:
    """``progress=None`` shows the bar only for long runs (more than ~2e10 multiply-adds)."""
    return bool(work > 2e10) if progress is None else bool(progress)


def rows_per_batch(n: int) -> int:
    """Replicate rows per count matrix so that it (float64) and its indices (int32) fit in
    CHUNK_BYTES; depends on n only, so the draws stay independent of chunking."""
    return max(1, int(CHUNK_BYTES // (12 * n)))


def draw_indices(rng: np.random.Generator, n: int, rows: int) -> np.ndarray:
    """``rows`` x ``n`` uniform indices in [0, n): ``rows`` bootstrap resamples of n units."""
    return rng.integers(0, n, size=(rows, n), dtype=np.int32 if n < 2**31 else np.int64)


def index_counts(idx: np.ndarray, n: int, out: np.ndarray | None = None) -> np.ndarray:
    """Count matrix (rows x n): how often each of the n units occurs in each row of ``idx``.
    Counted 16 rows at a time so the bins stay in cache (5x faster than one big bincount)."""
    rows = idx.shape[0]
    if out is None:
        out = np.empty((rows, n), dtype=np.float64)
    step = 16
    offsets = np.arange(step, dtype=np.int64)[:, None] * n
    for a in range(0, rows, step):
        part = idx[a:a + step]
        k = part.shape[0]
        out[a:a + k] = np.bincount((part + offsets[:k]).ravel(), minlength=k * n).reshape(k, n)
    return out


def resample_counts(rng: np.random.Generator, n: int, rows: int) -> np.ndarray:
    """``rows`` multinomial(n; 1/n, ..., 1/n) count vectors, drawn as indices then counted."""
    return index_counts(draw_indices(rng, n, rows), n)


# ---------------------------------------------------------------------------------------------
# statistics computed from sums of per-item columns
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CellStatistic:
    """The statistic of one cell (system x seed x group, or one system in a paired test),
    computed from the SUMS over items of ``n_columns`` per-item columns.

    ``"mean"``: sum / n_items. ``"f1"``: 2 tp / (2 tp + fp + fn) from (tp, fp, fn) sums, 0 when
    the denominator is 0 (the zero-division rule of scikit-learn's default). A callable is
    called as ``f(*sums)`` with one array per column (equal shapes) and returns the statistic
    elementwise: a corpus-level metric recomputed from resampled sufficient statistics.
    """

    name: str
    n_columns: int
    func: Callable[..., Any] | None = None

    def __call__(self, sums: np.ndarray, n_items: Any) -> np.ndarray:
        if self.name == "mean":
            return sums[..., 0] / n_items
        if self.name == "f1":
            tp, fp, fn = sums[..., 0], sums[..., 1], sums[..., 2]
            den = 2.0 * tp + fp + fn
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(den > 0, 2.0 * tp / np.where(den > 0, den, 1.0), 0.0)
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
    cols = [score] if isinstance(score, str) else list(score)
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
# confidence intervals from a bootstrap distribution
# ---------------------------------------------------------------------------------------------

def check_ci(ci: str) -> str:
    c = str(ci).lower()
    if c not in CI_METHODS:
        raise DataError(f"ci must be one of {', '.join(repr(m) for m in CI_METHODS)}; got {ci!r}")
    return c


def check_level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0.0 < float(level) < 1.0:
        raise DataError(f"level must be a number strictly between 0 and 1 (e.g. 0.95), got {level!r}")
    return float(level)


def _linear_quantile(sorted_rows: np.ndarray, q: np.ndarray) -> np.ndarray:
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
    """Two-sided ``level`` intervals for each row of ``dist`` (rows x B).

    percentile: quantiles alpha/2 and 1 - alpha/2 of the bootstrap distribution (numpy's
    linear rule, as scipy.stats.bootstrap). basic: 2 estimate - those quantiles, swapped.
    bca: Efron's bias-corrected and accelerated percentile interval; z0 = Phi^-1 of the share
    of replicates below the estimate (ties count half, as scipy), acceleration from the
    jackknife (:func:`acceleration`). se: estimate -+ z_(1 - alpha/2) * SD of the replicates
    (the "+-2 SE" interval; z = 1.96 at level 0.95). Rows whose replicates are all equal give a
    zero-width interval at that value (percentile, basic shift it by 2 (estimate - value)).
    """
    alpha = 1.0 - level
    estimate = np.asarray(estimate, dtype=float)
    if method == "se":
        z = ndtri(1.0 - alpha / 2.0)
        se = dist.std(axis=1, ddof=1) if dist.shape[1] > 1 else np.full(dist.shape[0], np.nan)
        return estimate - z * se, estimate + z * se
    srt = np.sort(dist, axis=1)
    rows = dist.shape[0]
    if method in ("percentile", "basic"):
        lo = _linear_quantile(srt, np.full(rows, alpha / 2.0))
        hi = _linear_quantile(srt, np.full(rows, 1.0 - alpha / 2.0))
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
    lo = _linear_quantile(srt, np.nan_to_num(q1))
    hi = _linear_quantile(srt, np.nan_to_num(q2))
    bad = ~(np.isfinite(q1) & np.isfinite(q2))
    lo[bad] = np.nan
    hi[bad] = np.nan
    const = srt[:, 0] == srt[:, -1]
    lo[const] = srt[const, 0]
    hi[const] = srt[const, 0]
    return lo, hi


# ---------------------------------------------------------------------------------------------
# p-values from resampled statistics
# ---------------------------------------------------------------------------------------------

P_CONVENTIONS = {"plus_one": "(c+1)/(B+1)", "c_over_b": "c/B"}


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
