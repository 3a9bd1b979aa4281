"""How every resampling function draws: random streams that do not depend on chunking, the
block loop that fills the replicates, row batches that bound memory, and index / count draws.

Random streams (the one seeding scheme of the package). ``random_state`` becomes one
``numpy.random.SeedSequence`` (:func:`mixedeval._random.seed_sequence`). Resamples are grouped
in fixed blocks of :data:`BLOCK` consecutive resamples; block ``i`` draws from its own generator
``PCG64(SeedSequence(entropy, spawn_key=(..., i)))``. A chunk is a run of whole blocks and only
sets the progress-bar step, so the draws (and every result) are identical whatever the chunk
size, and the first ``B`` resamples of a run with ``n_resamples > B`` are the resamples of a run
with ``B`` (whole blocks are always drawn, the tail of the last one discarded). A function that
draws several kinds of things independently (e.g. the pooled and the instance bootstrap of
``run_intervals``) gives each kind its own stream, :func:`stream` ``(ss, kind)``, and blocks
under it. Within a block, rows are drawn in batches whose size depends only on the shape of the
problem (:func:`batch_rows`), never on ``chunk_size``, so memory stays bounded (about
:data:`CHUNK_BYTES` per batch) and the draws stay the same.

BLAS threads (issue 33). The block loops run with numpy's BLAS limited to one thread
(:func:`mixedeval._executor.one_blas_thread`), in this process and in an executor's workers alike:
a block's products are small (bounded by CHUNK_BYTES) and alternate with single-threaded draws
and counts, so OpenBLAS' extra threads only spin between them, against any other process holding
a core (10 systems x 5,000 items x 1,000 resamples: 0.7-1.9 s with two threads on a busy two-core
machine, 0.15 s with one); and the same thread count everywhere keeps the replicates bit-identical
whichever executor computes them (OpenBLAS' last bits depend on the thread count).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from .._progress import bar_disabled
from .._executor import one_blas_thread, resolve_executor
from .._resources import LoopGuard, format_count
from ..errors import DataError

BLOCK = 64  # resamples per random stream (and per matrix product)
CHUNK_BYTES = 96 * 2**20  # memory budget of one batch of rows (e.g. a count matrix with its indices)


# ---------------------------------------------------------------------------------------------
# random streams
# ---------------------------------------------------------------------------------------------

def stream(ss: np.random.SeedSequence, kind: int) -> np.random.SeedSequence:
    """The SeedSequence of one kind of draw: (entropy, spawn_key + (kind,)), built directly so
    it does not depend on earlier spawns."""
    return np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, int(kind)), pool_size=ss.pool_size)


def block_generator(ss: np.random.SeedSequence, block: int) -> np.random.Generator:
    """Generator of resample block ``block``: PCG64 seeded by the child SeedSequence
    (entropy, spawn_key + (block,))."""
    return np.random.Generator(np.random.PCG64(stream(ss, block)))


def block_sizes(start: int, stop: int) -> Iterator[tuple[int, int]]:
    """(block index, number of resamples) of the blocks covering resamples [start, stop);
    ``start`` is a multiple of BLOCK."""
    for b0 in range(start, stop, BLOCK):
        yield b0 // BLOCK, min(BLOCK, stop - b0)


# ---------------------------------------------------------------------------------------------
# chunks (progress steps) and the block loop
# ---------------------------------------------------------------------------------------------

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
        bar = tqdm(total=n_resamples, desc=desc, unit="resample", leave=False, disable=bar_disabled(progress))
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


def _blocks_task(ss: np.random.SeedSequence, spans: list[tuple[int, int]],
                 one_block: Callable[[np.random.Generator, int, int], np.ndarray]) -> list[np.ndarray]:
    """In a worker: the replicates of the blocks ``spans`` ((block, rows) pairs), each from its
    own generator, exactly as the in-process loop computes them (one BLAS thread, as there)."""
    with one_blas_thread():
        return [one_block(block_generator(ss, blk), blk * BLOCK, r)[:r] for blk, r in spans]


def _worker_spans(n: int, n_workers: int) -> list[list[tuple[int, int]]]:
    """The blocks of ``n`` resamples cut into about four runs of whole blocks per worker."""
    spans = list(block_sizes(0, n))
    size = max(1, -(-len(spans) // (4 * max(1, n_workers))))
    return [spans[i:i + size] for i in range(0, len(spans), size)]


def _on_workers(out: np.ndarray, runner: Any, task: Callable[..., Any], args: Callable[[list], tuple],
                shared: Any, progress: Any, desc: str) -> np.ndarray:
    """Runs of whole blocks on the executor's workers (``task(shared, *args(group))`` returns the
    rows of each block of its group), written into ``out`` in block order."""
    groups = _worker_spans(out.shape[0], runner.n_workers)
    results = runner.map(task, [args(g) for g in groups], shared=shared, progress=progress, desc=desc)
    for g, res in zip(groups, results):
        for (blk, r), rows in zip(g, res):
            out[blk * BLOCK:blk * BLOCK + r] = rows
    return out


def run_blocks(out: np.ndarray, ss: np.random.SeedSequence,
               one_block: Callable[[np.random.Generator, int, int], np.ndarray], *,
               chunk_size: int | None, progress: bool | None, work: float, desc: str,
               executor: Any = None) -> np.ndarray:
    """Fill ``out`` (resamples on axis 0) block by block: ``one_block(rng, b0, r)`` returns the
    replicates b0 .. b0 + BLOCK - 1 drawn from block b0 // BLOCK's generator (at least r rows;
    the rows past r are discarded). ``work`` (multiply-adds of the whole run) decides whether
    ``progress=None`` shows a bar. With an ``executor`` (:mod:`mixedeval._executor`) runs of
    whole blocks go to its workers, ``one_block`` (a closure over the data) shipped once to
    each; every block still draws from its own generator, so ``out`` is bit-identical to the
    in-process result. Returns ``out``."""
    n = out.shape[0]
    runner = resolve_executor(executor)
    if runner.name != "in-process":
        return _on_workers(out, runner, _blocks_task, lambda g: (ss, g), one_block, auto_progress(progress, work), desc)
    length = chunk_length(n, chunk_size)
    guard = _time_guard(desc, n)
    with one_blas_thread():
        for start, stop in chunks(n, length, auto_progress(progress, work), desc):
            for blk, r in block_sizes(start, stop):
                b0 = blk * BLOCK
                out[b0:b0 + r] = one_block(block_generator(ss, blk), b0, r)[:r]
                _judge(guard, b0 + r, length)
    return out


def _time_guard(desc: str, n: int) -> LoopGuard:
    """The time limit (:func:`mixedeval.set_time_limit`) of an in-process block loop of ``n``
    resamples: judged after the first block, by extrapolation (a loop is never cut half-way)."""
    return LoopGuard(desc or "the resampling", n, count=f"n_resamples={format_count(n)}", unit="resamples",
                     fix="Pass fewer n_resamples.")


def _judge(guard: LoopGuard, done: int, length: int) -> None:
    """Judge the loop once, after the first chunk (``length`` resamples) or a quarter second of
    work, whichever comes first: the first 64-row block alone is too short to extrapolate from."""
    if not guard.judged and (done >= length or time.perf_counter() - guard._t0 > 0.25):
        guard.block_done(done)


def _block_groups_task(ss: np.random.SeedSequence, spans: list[tuple[int, int]], blocks: int,
                       fns: tuple[Callable, Callable]) -> list[np.ndarray]:
    """In a worker: :func:`run_block_groups`' computation for the blocks ``spans``."""
    draw, compute = fns
    out = []
    with one_blas_thread():
        for g in range(0, len(spans), blocks):
            group = spans[g:g + blocks]
            res = compute(np.concatenate([draw(block_generator(ss, blk)) for blk, _ in group]))
            out += [res[j * BLOCK:j * BLOCK + r] for j, (_, r) in enumerate(group)]
    return out


def run_block_groups(out: np.ndarray, ss: np.random.SeedSequence,
                     draw: Callable[[np.random.Generator], np.ndarray], compute: Callable[[np.ndarray], np.ndarray],
                     *, blocks: int, chunk_size: int | None, progress: bool | None, desc: str,
                     executor: Any = None) -> np.ndarray:
    """Like :func:`run_blocks` for a computation that is EXACT (sums of products of small
    integers, e.g. count matrices times tp / fp / fn or 0/1 correctness): ``draw(rng)`` makes
    the random input of one whole block (BLOCK rows) from its own generator, and ``compute``
    maps the inputs of up to ``blocks`` consecutive blocks, stacked, to their replicates in one
    product (one large matrix product is several times faster than many of 64 rows). The draws
    are those of the block scheme, and since the arithmetic is exact the grouping (which the
    chunks and an ``executor``'s workers cut) does not change a single bit."""
    n = out.shape[0]
    runner = resolve_executor(executor)
    if runner.name != "in-process":
        return _on_workers(out, runner, _block_groups_task, lambda g: (ss, g, max(1, int(blocks))), (draw, compute),
                           auto_progress(progress, 0.0), desc)
    length = chunk_length(n, chunk_size)
    guard = _time_guard(desc, n)
    with one_blas_thread():
        for start, stop in chunks(n, length, auto_progress(progress, 0.0), desc):
            spans = list(block_sizes(start, stop))
            for g in range(0, len(spans), max(1, int(blocks))):
                group = spans[g:g + max(1, int(blocks))]
                res = compute(np.concatenate([draw(block_generator(ss, blk)) for blk, _ in group]))
                for j, (blk, r) in enumerate(group):
                    out[blk * BLOCK:blk * BLOCK + r] = res[j * BLOCK:j * BLOCK + r]
                _judge(guard, group[-1][0] * BLOCK + group[-1][1], length)
    return out


# ---------------------------------------------------------------------------------------------
# row batches within a block
# ---------------------------------------------------------------------------------------------

def batch_rows(bytes_per_row: float) -> int:
    """Rows of a block drawn and processed together so that their temporaries stay within
    CHUNK_BYTES; depends on the problem's shape only, so the draws do not depend on chunking."""
    return int(max(1, min(BLOCK, CHUNK_BYTES // max(float(bytes_per_row), 1.0))))


def rows_per_batch(n: int) -> int:
    """Rows of a count matrix over n units (float64) with its indices (int32) within CHUNK_BYTES
    (not capped at BLOCK: the bootstrap draws several group slots of a block at once)."""
    return max(1, int(CHUNK_BYTES // (12 * n)))


def batched(f: Callable[[int], np.ndarray], rows: int) -> np.ndarray:
    """``f(k)`` for consecutive batches of ``rows`` rows (the last one shorter) covering one whole
    block, concatenated along axis 0; ``f`` draws its k rows from the block's generator."""
    return np.concatenate([f(min(rows, BLOCK - p)) for p in range(0, BLOCK, rows)])


# ---------------------------------------------------------------------------------------------
# indices and counts
# ---------------------------------------------------------------------------------------------

def draw_indices(rng: np.random.Generator, n: Any, rows: int, size: int | None = None) -> np.ndarray:
    """``rows`` x ``size`` (default n) uniform indices in [0, n): ``rows`` bootstrap resamples of
    n units. ``n`` may be an array broadcasting to (rows, size) (one bound per column)."""
    size = int(n) if size is None else int(size)
    big = np.max(n) >= 2**31
    return rng.integers(0, n, size=(rows, size), dtype=np.int64 if big else np.int32)


def subsample_indices(rng: np.random.Generator, n: int, k: int, rows: int) -> np.ndarray:
    """``rows`` x ``k`` indices: k of n units without replacement in every row (each k-subset
    equally likely), from the ranks of uniforms."""
    return np.argsort(rng.random((rows, n)), axis=1)[:, :k]


def index_counts(idx: np.ndarray, n: int, out: np.ndarray | None = None) -> np.ndarray:
    """Count matrix (rows x n): how often each of the n units occurs in each row of ``idx``.
    Counted 8 rows at a time so the bins stay in cache (3x faster than one big bincount at
    64 x 5,000; 8 rows measured 6% faster than 16 in the whole bootstrap, bench_bootstrap.py)."""
    rows = idx.shape[0]
    if out is None:
        out = np.empty((rows, n), dtype=np.float64)
    step = 8
    offsets = np.arange(step, dtype=np.int64)[:, None] * n
    for a in range(0, rows, step):
        part = idx[a:a + step]
        k = part.shape[0]
        out[a:a + k] = np.bincount((part + offsets[:k]).ravel(), minlength=k * n).reshape(k, n)
    return out


def resample_counts(rng: np.random.Generator, n: int, rows: int) -> np.ndarray:
    """``rows`` multinomial(n; 1/n, ..., 1/n) count vectors, drawn as indices then counted."""
    return index_counts(draw_indices(rng, n, rows), n)
