"""The item bootstrap of tables larger than memory: partial sums per partition of items.

:func:`partitioned_bootstrap` is what :func:`mixedeval.bootstrap` runs on a dask DataFrame (or
a Parquet dataset with a Dask ``executor``). It is an exact item bootstrap, computed without
ever holding the table, or even its raw rows of one item partition, in one place:

1. every item goes to one of ``P`` partitions by a stable hash of its id's text (the same on
   every machine and for pandas, Parquet or Dask input);
2. **map** (one task per input partition, e.g. per Parquet file): the task reduces its rows to
   one entry per (item, system) cell — the exact sum of its scores as two floats ``hi + lo``
   (error-free transformations, TwoSum; Ogita, Rump & Oishi 2005, "Accurate sum and dot
   product", SIAM J. Sci. Comput. 26) and the number of rows — and splits these cells by item
   partition into ``P`` small pieces. Raw rows never leave the task that read them;
3. **combine** (one task per item partition): adds the pieces of its items and gives every cell
   its mean over the runs, ``RN(sum) / count`` where ``RN(sum)`` is the exact sum rounded once to
   the nearest double. That number depends only on the cell's scores, never on how the rows
   were split among input partitions, so pandas, Parquet and Dask input give the same bits (a
   cell whose two-float sum cannot be exact, which needs scores about 2**50 times apart, is
   summed with ``math.fsum``, also correctly rounded);
4. each replicate draws how many of the ``N`` resampled items fall in each partition,
   ``(m_1, ..., m_P) ~ Multinomial(N, n_g / N)`` (block ``b`` of 64 replicates from its own
   stream), and then, inside partition ``g``, ``m_g`` items uniformly with replacement (block ``b``
   of partition ``g`` from its own stream; items in the order of their text). Together this is
   exactly ``N`` draws with replacement from the ``N`` items;
5. the partition's task returns the summed resampled item means of every replicate
   (``(n_resamples + 1) x n_systems``, row 0 the observed sums), computed with one BLAS thread;
   the caller adds the partitions in partition order, so the result is bit-identical for any
   executor, number of workers or dask partitions.

What moves between workers is therefore the per-cell sums (about 25 bytes a cell plus the item's
id once per input partition) and the per-partition replicate sums, never raw rows: a worker
holds at most one input partition's rows at a time, plus its share of the cell sums until the
combine tasks have run (Dask spills them to disk under memory pressure).

The statistic is each system's mean over items (``statistic="mean"``, items resampled). The draws
differ from the in-memory :func:`mixedeval.bootstrap` (which draws the N items directly), so the
two agree to Monte-Carlo error, and this function on a pandas table equals itself on Dask.
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .._executor import one_blas_thread
from .._random import seed_sequence
from ..errors import DataError
from ..results import ResultWarning
from . import _checks as ck
from . import _draws as dr
from . import _stats as st

#: default number of item partitions (the unit of parallel work; not the number of dask partitions)
PARTITIONS = 32
#: bytes of one batch of a partition's replicate count matrix (rows x items, float64)
BATCH_BYTES = 16 * 2**20


def is_partitioned_input(data: Any, executor: Any) -> bool:
    """True for a dask DataFrame, or a Parquet path (directory, file or glob) with a Dask Client."""
    if type(data).__module__.startswith("dask") and hasattr(data, "map_partitions"):
        return True
    if isinstance(data, (str, os.PathLike)) and type(executor).__name__ == "Client":
        p = str(data)
        return p.endswith(".parquet") or os.path.isdir(p) or any(ch in p for ch in "*?[")
    return False


def _part_of(texts: pd.Series, n_parts: int) -> np.ndarray:
    """The partition of each item: a stable 64-bit hash of its text, modulo ``n_parts``."""
    h = pd.util.hash_pandas_object(texts.astype(object), index=False).to_numpy()
    return (h % np.uint64(n_parts)).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# exact sums per cell (order-independent: the result depends only on the values of a cell)
# ---------------------------------------------------------------------------------------------

def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: ``s = fl(a + b)`` and the rounding error ``e``, with ``s + e == a + b`` exactly."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _exact_sums(cell: np.ndarray, x: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cell, ``hi + lo`` equal to the exact sum of its values ``x`` and ``hi`` that sum rounded
    once to the nearest double; ``bad`` marks the cells where two floats could not hold the sum
    exactly (their ``hi``/``lo`` are then meaningless). Each addition is TwoSum of the running
    ``hi`` with the value, then TwoSum of ``lo`` with that error (whose own error must be 0),
    then ``(hi, lo) = TwoSum(s, t)``. Vectorized over the cells: step ``k`` adds every cell's
    ``k``-th value, so the work is one pass over the values."""
    v = x[np.argsort(cell, kind="stable")]
    n = np.bincount(cell, minlength=n_cells)
    start = np.cumsum(n) - n
    by_count = np.argsort(-n, kind="stable")  # cells with more than k values are a prefix of it
    desc = n[by_count]
    hi, lo, bad = np.zeros(n_cells), np.zeros(n_cells), np.zeros(n_cells, dtype=bool)
    for k in range(int(n.max(initial=0))):
        cc = by_count[:int(np.count_nonzero(desc > k))]
        s, e = _two_sum(hi[cc], v[start[cc] + k])
        t, f = _two_sum(lo[cc], e)
        hi[cc], lo[cc] = _two_sum(s, t)
        bad[cc] |= f != 0  # NaN (overflow) counts as not exact too
    return hi, lo, bad


def _fsum_cells(cell: np.ndarray, x: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """``math.fsum`` (the correctly rounded sum) of the values of each of ``cells``."""
    keep = np.isin(cell, cells)
    c, v = cell[keep], x[keep]
    order = np.argsort(c, kind="stable")
    c, v = c[order], v[order]
    bounds = np.searchsorted(c, cells, side="left"), np.searchsorted(c, cells, side="right")
    try:
        return np.array([math.fsum(v[a:b]) for a, b in zip(*bounds)], dtype=float)
    except OverflowError as exc:
        raise DataError("the sum of one item's scores overflows float64; rescale the score column") from exc


# ---------------------------------------------------------------------------------------------
# map: one input partition -> per-(item, system) sums, split by item partition
# ---------------------------------------------------------------------------------------------

class _Piece(NamedTuple):
    """The cells of one input partition that belong to one item partition (long format)."""

    texts: Any  # item ids as text (a pandas string array), one per item of the piece
    systems: np.ndarray  # system values of the input partition (object)
    item: np.ndarray  # per cell: index into texts
    system: np.ndarray  # per cell: index into systems
    hi: np.ndarray  # per cell: exact sum hi + lo (0 for cells sent as raw values)
    lo: np.ndarray
    n: np.ndarray  # per cell: number of rows
    raw: tuple[np.ndarray, np.ndarray]  # (cell position, value) of cells whose sum is not exact in two floats


def _labels(s: pd.Series, column: str) -> tuple[np.ndarray, Any]:
    codes, uniques = pd.factorize(s, sort=False)
    if (codes < 0).any():
        raise DataError(f"column {column!r} has {int((codes < 0).sum())} missing values; drop those rows or fill in "
                        f"the {column!r} label")
    return codes.astype(np.int64), uniques


def _scores(chunk: pd.DataFrame, score: str) -> np.ndarray:
    try:
        v = chunk[score].to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise DataError(f"score column {score!r} must be numeric, got {chunk[score].dtype}") from exc
    if not np.isfinite(v).all():
        raise DataError(f"score column {score!r} has {int((~np.isfinite(v)).sum())} missing or infinite values; "
                        f"drop them first (e.g. df.dropna(subset=[{score!r}]))")
    return v


def _row_cells(chunk: pd.DataFrame, system: str, item: str) -> tuple[np.ndarray, np.ndarray, int, pd.Series, Any]:
    """Each row's cell (index into the sorted cell ids ``item_text_code * k + system_code``), the
    cell ids, the number of systems ``k``, the items' texts and the system values of the chunk."""
    i_code, i_uniq = _labels(chunk[item], item)
    text_code, texts = pd.factorize(pd.Series(i_uniq).astype(str), sort=False)  # the text is the item's id
    key = text_code[i_code]
    del i_code
    s_code, s_uniq = _labels(chunk[system], system)
    k = len(s_uniq)
    key *= k
    key += s_code
    del s_code
    n_keys = len(texts) * k
    if n_keys <= 4 * len(key) + 1024:  # O(rows) without sorting
        present = np.bincount(key, minlength=n_keys) > 0
        cell_ids = np.flatnonzero(present)
        cell_of_row = (np.cumsum(present) - 1)[key]
    else:
        cell_ids, cell_of_row = np.unique(key, return_inverse=True)
    return cell_of_row.ravel(), cell_ids, k, pd.Series(texts), s_uniq


def _map_chunk(chunk: pd.DataFrame, score: str, system: str, item: str, n_parts: int) -> list[_Piece | None]:
    """In a worker, for one input partition: its cells' exact sums and counts, as ``n_parts``
    pieces (None where the partition has no item of that piece)."""
    v = _scores(chunk, score)
    cell_of_row, cell_ids, k, texts, s_uniq = _row_cells(chunk, system, item)
    hi, lo, bad = _exact_sums(cell_of_row, v, len(cell_ids))
    n = np.bincount(cell_of_row, minlength=len(cell_ids))
    hi[bad], lo[bad] = 0.0, 0.0
    raw_rows = bad[cell_of_row]
    raw_cell, raw_val = cell_of_row[raw_rows], v[raw_rows]
    del cell_of_row, v, raw_rows
    cell_item, cell_sys = cell_ids // k, cell_ids % k
    part_of_cell = _part_of(texts, n_parts)[cell_item]
    order = np.argsort(part_of_cell, kind="stable")  # within a partition: cells in item order
    bounds = np.searchsorted(part_of_cell[order], np.arange(n_parts + 1))
    systems = np.asarray(pd.Index(s_uniq), dtype=object)
    out: list[_Piece | None] = [None] * n_parts
    for g in np.flatnonzero(np.diff(bounds)):
        cells = order[bounds[g]:bounds[g + 1]]
        items, local_item = np.unique(cell_item[cells], return_inverse=True)
        out[int(g)] = _Piece(texts.array[items], systems, _small(local_item.ravel()),
                             _small(cell_sys[cells]), hi[cells], lo[cells], _small(n[cells]),
                             _raw_of(cells, raw_cell, raw_val, len(cell_ids)))
    return out


def _small(a: np.ndarray) -> np.ndarray:
    """Non-negative integers in the smallest unsigned dtype (the pieces travel between workers)."""
    return a.astype(np.min_scalar_type(int(a.max(initial=0))))


def _raw_of(cells: np.ndarray, raw_cell: np.ndarray, raw_val: np.ndarray, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """The raw values of the piece's cells whose sum is not exact in two floats, by position in the piece."""
    if raw_cell.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0)
    pos = np.full(n_cells, -1, dtype=np.int64)
    pos[cells] = np.arange(len(cells))
    in_piece = pos[raw_cell] >= 0
    return pos[raw_cell[in_piece]], raw_val[in_piece]


# ---------------------------------------------------------------------------------------------
# combine: the pieces of one item partition -> item x system means
# ---------------------------------------------------------------------------------------------

class _Cells(NamedTuple):
    """One item partition: items (sorted by text), its systems, and the mean per item and system
    (NaN where an item has no score for a system)."""

    texts: pd.Series
    systems: np.ndarray
    means: np.ndarray


def _combine(pieces: Sequence[_Piece | None]) -> _Cells:
    """In a worker: add the pieces of one item partition; each cell's mean is ``RN(exact sum) / n``."""
    pieces = [p for p in pieces if p is not None]
    if not pieces:
        return _Cells(pd.Series([], dtype=object), np.empty(0, dtype=object), np.empty((0, 0)))
    codes, texts = pd.factorize(pd.concat([pd.Series(p.texts) for p in pieces], ignore_index=True), sort=True)
    s_codes, systems = pd.factorize(pd.Series(np.concatenate([p.systems for p in pieces]), dtype=object), sort=False)
    k = len(systems)
    cells, comps, counts = [], [], []
    i0 = s0 = 0
    for p in pieces:
        cell = codes[i0 + p.item.astype(np.int64)] * k + s_codes[s0 + p.system.astype(np.int64)]
        cells += [cell, cell, cell[p.raw[0]]]
        comps += [p.hi, p.lo, p.raw[1]]
        counts.append((cell, p.n))
        i0, s0 = i0 + len(p.texts), s0 + len(p.systems)
    cell, comp = np.concatenate(cells), np.concatenate(comps)
    nz = comp != 0  # zeros add nothing to an exact sum
    hi, _, bad = _exact_sums(cell[nz], comp[nz], len(texts) * k)
    if bad.any():
        hi[np.flatnonzero(bad)] = _fsum_cells(cell[nz], comp[nz], np.flatnonzero(bad))
    n = np.zeros(len(texts) * k, dtype=np.int64)
    for c, m in counts:  # float weights: exact for counts below 2**53
        n += np.bincount(c, weights=m, minlength=len(n)).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(n > 0, hi / np.maximum(n, 1), np.nan) + 0.0  # + 0.0: one zero, never -0.0
    return _Cells(pd.Series(texts), np.asarray(systems, dtype=object), means.reshape(len(texts), k))


def _cell_meta(cells: _Cells) -> tuple[int, list[Any]]:
    """What the design needs of one partition: its number of items and its systems."""
    return len(cells.texts), list(cells.systems)


def _design(metas: Sequence[tuple[int, list[Any]]], n_parts: int, system: str) -> tuple[list[Any], np.ndarray]:
    """Sorted systems (by text) and the number of items per partition."""
    seen: dict[Any, None] = {}
    for _, sys_g in metas:
        seen.update(dict.fromkeys(sys_g))
    systems = sorted(seen, key=str)
    if len(systems) < 2:
        raise DataError(f"the partitioned bootstrap compares systems: {system!r} has {len(systems)} value(s)")
    n_items = np.array([m[0] for m in metas], dtype=np.int64)
    if len(n_items) != n_parts:
        raise DataError(f"expected {n_parts} item partitions, got {len(n_items)}")
    if n_items.sum() < 2:
        raise DataError(f"need at least 2 items to resample; got {int(n_items.sum())}")
    return systems, n_items


def _partition_counts(design: tuple[list[Any], np.ndarray], ss: np.random.SeedSequence,
                      n_resamples: int) -> np.ndarray:
    """(n_resamples, P) items drawn in each partition: Multinomial(N, n_g / N) per replicate."""
    n_items = design[1]
    N = int(n_items.sum())
    p = n_items / N
    out = np.empty((n_resamples, len(n_items)), dtype=np.int64)
    for blk, r in dr.block_sizes(0, n_resamples):
        rng = dr.block_generator(dr.stream(ss, 0), blk)
        out[blk * dr.BLOCK:blk * dr.BLOCK + r] = rng.multinomial(N, p, size=dr.BLOCK)[:r]
    return out


# ---------------------------------------------------------------------------------------------
# the replicates of one item partition
# ---------------------------------------------------------------------------------------------

def _aligned(cells: _Cells, systems: list[Any], system: str, item: str) -> np.ndarray:
    """The partition's (n_items, n_systems) means in the order of ``systems``; a DataError names
    items lacking a score for some system."""
    col = {s: j for j, s in enumerate(cells.systems)}
    S = np.full((len(cells.texts), len(systems)), np.nan)
    for j, s in enumerate(systems):
        if s in col:
            S[:, j] = cells.means[:, col[s]]
    if np.isnan(S).any():
        bad = cells.texts[np.isnan(S).any(axis=1)].iloc[:5].tolist()
        raise DataError(f"items {bad} lack a score for some {system!r} values; the partitioned bootstrap needs every "
                        f"system on every {item!r} (drop the incomplete items first)")
    return S


def _replicate_sums(cells: _Cells, design: tuple[list[Any], np.ndarray], counts_per_part: np.ndarray, g: int,
                    ss: np.random.SeedSequence, n_resamples: int, system: str, item: str) -> np.ndarray:
    """In a worker: partition ``g``'s observed column sums (row 0) and the resampled sums of every
    replicate: ``m_g`` uniform draws among its items (block streams), as counts times the means,
    in batches of at most BATCH_BYTES of counts, with one BLAS thread (so the bits do not depend
    on the process that computes them)."""
    S = _aligned(cells, design[0], system, item)
    rows = np.zeros((n_resamples + 1, len(design[0])))
    n_g = S.shape[0]
    if n_g == 0:
        return rows
    rows[0] = S.sum(axis=0)
    part_ss = dr.stream(dr.stream(ss, 1), int(g))
    batch = int(max(1, min(dr.BLOCK, BATCH_BYTES // (8 * n_g))))
    with one_blas_thread():
        for blk, r in dr.block_sizes(0, n_resamples):
            m = counts_per_part[blk * dr.BLOCK:blk * dr.BLOCK + r, int(g)]
            rng = dr.block_generator(part_ss, blk)
            for b0 in range(0, r, batch):
                counts = np.zeros((min(batch, r - b0), n_g))
                for j in range(counts.shape[0]):  # m[j] uniform draws among the partition's items
                    counts[j] = np.bincount(rng.integers(0, n_g, size=int(m[b0 + j])), minlength=n_g)
                top = 1 + blk * dr.BLOCK + b0
                rows[top:top + counts.shape[0]] = counts @ S
    return rows


# ---------------------------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------------------------

def _source(data: Any, score: str, system: str, item: str, run: str | None):
    """The columns needed (score, system, item) as a pandas frame or a dask DataFrame; the run
    column only has to exist (runs are averaged per item and system)."""
    if isinstance(data, (str, os.PathLike)):
        import dask.dataframe as dd  # noqa: PLC0415 - optional dependency (mixedeval[dask])

        data = dd.read_parquet(str(data))
    for c in (score, system, item, run):
        if c is not None and not isinstance(c, str):
            raise DataError(f"column names must be strings, got {c!r}")
    named = [c for c in (score, system, item, run) if c]
    missing = [c for c in named if c not in data.columns]
    if missing:
        raise DataError(f"columns {missing} are not in the data; available: {list(data.columns)[:20]}")
    if len(set(named)) != len(named):
        raise DataError(f"score, system, item and run must be different columns; got {named}")
    return data[[score, system, item]]  # a new frame (pandas) or graph (dask): the caller's table is not modified


def _in_memory(frame: pd.DataFrame, score: str, system: str, item: str, n_parts: int,
               ss: np.random.SeedSequence, n_resamples: int) -> tuple[tuple[list[Any], np.ndarray], list[np.ndarray]]:
    """The same steps as the Dask graph, one after another in this process."""
    pieces = _map_chunk(frame, score, system, item, n_parts)
    cells = [_combine([p]) for p in pieces]
    design = _design([_cell_meta(c) for c in cells], n_parts, system)
    counts = _partition_counts(design, ss, n_resamples)
    return design, [_replicate_sums(c, design, counts, g, ss, n_resamples, system, item) for g, c in enumerate(cells)]


def _on_dask(ddf: Any, score: str, system: str, item: str, n_parts: int, ss: np.random.SeedSequence,
             n_resamples: int) -> tuple[tuple[list[Any], np.ndarray], list[np.ndarray]]:
    """The graph: a map task per dask partition, a combine and a replicate task per item
    partition; computed with Dask's current scheduler (the active ``Client``)."""
    import dask  # noqa: PLC0415 - optional dependency (mixedeval[dask])

    maps = [dask.delayed(_map_chunk, nout=n_parts)(d, score, system, item, n_parts) for d in ddf.to_delayed()]
    cells = [dask.delayed(_combine)([m[g] for m in maps]) for g in range(n_parts)]
    design = dask.delayed(_design)([dask.delayed(_cell_meta)(c) for c in cells], n_parts, system)
    counts = dask.delayed(_partition_counts)(design, ss, n_resamples)
    sums = [dask.delayed(_replicate_sums)(c, design, counts, g, ss, n_resamples, system, item)
            for g, c in enumerate(cells)]
    design_v, sums_v = dask.compute(design, sums)
    return design_v, list(sums_v)


def partitioned_bootstrap(data: Any, score: str, system: str, item: str, run: str | None = None, *,
                          n_resamples: int = 10_000, ci: str = "percentile", level: float = 0.95,
                          random_state: Any = None, partitions: int = PARTITIONS, higher_is_better: bool = True):
    """Item bootstrap of each system's mean score from per-partition partial sums (module docstring).

    ``data``: a dask DataFrame, a Parquet path (read with ``dask.dataframe.read_parquet``) or a
    pandas DataFrame (the same numbers in memory). Computed with Dask's current scheduler (the
    ``Client`` that is active, e.g. the ``executor`` given to :func:`mixedeval.bootstrap`).
    Scores must be finite and system / item labels present (DataError otherwise, as in memory).
    Returns the fields of a :class:`mixedeval.resampling.BootstrapResult` (a dict), which
    :func:`mixedeval.bootstrap` wraps."""
    ci = st.check_ci(ci)
    if ci == "bca":
        raise DataError("ci='bca' needs the jackknife over all items, which the partitioned bootstrap does not "
                        "compute; use 'percentile', 'basic' or 'se'")
    level = ck.check_level(level)
    n_resamples = ck.check_n_resamples(n_resamples)
    if isinstance(partitions, bool) or not isinstance(partitions, (int, np.integer)) or partitions < 1:
        raise DataError(f"partitions must be a positive integer, not {partitions!r}")
    ss = seed_sequence(random_state)
    src = _source(data, score, system, item, run)
    if isinstance(src, pd.DataFrame):
        design, sums = _in_memory(src, score, system, item, int(partitions), ss, n_resamples)
    else:
        design, sums = _on_dask(src, score, system, item, int(partitions), ss, n_resamples)
    return _fields(sums, design, ss, n_resamples, ci, level, higher_is_better, int(partitions))


def _fields(sums: list[np.ndarray], design: tuple[list[Any], np.ndarray], ss: np.random.SeedSequence,
            n_resamples: int, ci: str, level: float, higher_is_better: bool, n_parts: int) -> dict[str, Any]:
    systems, n_items = design
    total = np.zeros((n_resamples + 1, len(systems)))
    for part in sums:  # partition order: bit-identical everywhere
        total += part
    N = float(n_items.sum())
    estimate = total[0] / N
    dist = (total[1:] / N).T.copy()
    estimate.setflags(write=False)
    dist.setflags(write=False)
    warnings: tuple[ResultWarning, ...] = ()
    return dict(systems=tuple(systems), estimate=estimate, distribution=dist, ci=ci, level=level,
                n_resamples=n_resamples, resample=("items",), statistic="mean", aggregator="mean",
                higher_is_better=bool(higher_is_better),
                design={"n_items": int(N), "partitions": n_parts, "method": "partitioned item bootstrap"},
                provenance=ck.provenance("partitioned_bootstrap", ss, n_resamples=n_resamples, partitions=n_parts),
                warnings=warnings)
