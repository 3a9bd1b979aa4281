"""The item bootstrap of tables larger than memory: partial sums per partition of items.

:func:`partitioned_bootstrap` is what :func:`mixedeval.bootstrap` runs on a dask DataFrame (or
a Parquet dataset with a Dask ``executor``). It is an exact item bootstrap, computed without
ever holding the table in one place:

1. every item goes to one of ``P`` partitions by a stable hash of its id (the same on every
   machine and for pandas, Parquet or Dask input);
2. each replicate draws how many of the ``N`` resampled items fall in each partition,
   ``(m_1, ..., m_P) ~ Multinomial(N, n_g / N)`` (block ``b`` of 64 replicates from its own
   stream), and then, inside partition ``g``, ``m_g`` items uniformly with replacement (block ``b``
   of partition ``g`` from its own stream). Together this is exactly ``N`` draws with replacement
   from the ``N`` items;
3. the workers hold only their partitions: per item the mean score of each system (runs
   averaged), and return per partition the summed resampled means of every replicate
   (``n_resamples x n_systems``); the caller adds the partitions in partition order, so the
   result is bit-identical for pandas input, Dask input, any number of workers or dask
   partitions.

The statistic is each system's mean over items (``statistic="mean"``, items resampled). The draws
differ from the in-memory :func:`mixedeval.bootstrap` (which draws the N items directly), so the
two agree to Monte-Carlo error, and this function on a pandas table equals itself on Dask.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._random import seed_sequence
from ..errors import DataError
from ..results import ResultWarning
from . import _checks as ck
from . import _draws as dr
from . import _stats as st

_PART = "__mixedeval_partition__"
#: default number of item partitions (the unit of parallel work; not the number of dask partitions)
PARTITIONS = 32


def is_partitioned_input(data: Any, executor: Any) -> bool:
    """True for a dask DataFrame, or a Parquet path (directory, file or glob) with a Dask Client."""
    if type(data).__module__.startswith("dask") and hasattr(data, "map_partitions"):
        return True
    if isinstance(data, (str, os.PathLike)) and type(executor).__name__ == "Client":
        p = str(data)
        return p.endswith(".parquet") or os.path.isdir(p) or any(ch in p for ch in "*?[")
    return False


def _part_of(items: pd.Series, n_parts: int) -> np.ndarray:
    """The partition of each item: a stable 64-bit hash of its text, modulo ``n_parts``."""
    h = pd.util.hash_pandas_object(items.astype(str).astype(object), index=False).to_numpy()
    return (h % np.uint64(n_parts)).astype(np.int64)


def _with_parts(frame: pd.DataFrame, item: str, n_parts: int) -> pd.DataFrame:
    return frame.assign(**{_PART: _part_of(frame[item], n_parts)})


def _cell_means(sub: pd.DataFrame, score: str, system: str, item: str, systems: Sequence[Any]) -> np.ndarray:
    """(n_items, n_systems) mean score per item (rows sorted by item text) and system."""
    wide = sub.groupby([item, system], observed=True)[score].mean().unstack(system)
    wide = wide.reindex(columns=list(systems))
    wide.index = wide.index.astype(str)
    wide = wide.sort_index()
    if wide.isna().to_numpy().any():
        bad = wide.index[wide.isna().any(axis=1)][:5].tolist()
        raise DataError(f"items {bad} lack a score for some {system!r} values; the partitioned bootstrap needs every "
                        f"system on every {item!r} (drop the incomplete items first)")
    return wide.to_numpy(dtype=float)


def _partition_sums(chunk: pd.DataFrame, score: str, system: str, item: str, systems: Sequence[Any],
                    counts_per_part: np.ndarray, ss: np.random.SeedSequence, n_resamples: int) -> pd.DataFrame:
    """In a worker: for each partition in ``chunk``, its observed column sums and the resampled
    sums of every replicate (rows: partition, replicate; one column per system)."""
    out = []
    for g, sub in chunk.groupby(_PART, sort=True):
        S = _cell_means(sub, score, system, item, systems)
        rows = np.empty((n_resamples + 1, S.shape[1]))
        rows[0] = S.sum(axis=0)
        part_ss = dr.stream(dr.stream(ss, 1), int(g))
        for blk, r in dr.block_sizes(0, n_resamples):
            m = counts_per_part[blk * dr.BLOCK:blk * dr.BLOCK + r, int(g)]
            rng = dr.block_generator(part_ss, blk)
            counts = np.zeros((r, S.shape[0]))
            for j in range(r):  # m[j] uniform draws among the partition's items
                counts[j] = np.bincount(rng.integers(0, S.shape[0], size=int(m[j])), minlength=S.shape[0])
            rows[1 + blk * dr.BLOCK:1 + blk * dr.BLOCK + r] = counts @ S
        frame = pd.DataFrame(rows, columns=[str(s) for s in systems])
        frame.insert(0, "replicate", np.arange(n_resamples + 1))
        frame.insert(0, "partition", int(g))
        out.append(frame)
    if not out:
        return _empty(systems)
    return pd.concat(out, ignore_index=True)


def _empty(systems: Sequence[Any]) -> pd.DataFrame:
    return pd.DataFrame({"partition": pd.Series(dtype=np.int64), "replicate": pd.Series(dtype=np.int64),
                         **{str(s): pd.Series(dtype=float) for s in systems}})


def _partition_counts(n_items: np.ndarray, ss: np.random.SeedSequence, n_resamples: int) -> np.ndarray:
    """(n_resamples, P) items drawn in each partition: Multinomial(N, n_g / N) per replicate."""
    N = int(n_items.sum())
    p = n_items / N
    out = np.empty((n_resamples, len(n_items)), dtype=np.int64)
    for blk, r in dr.block_sizes(0, n_resamples):
        rng = dr.block_generator(dr.stream(ss, 0), blk)
        out[blk * dr.BLOCK:blk * dr.BLOCK + r] = rng.multinomial(N, p, size=dr.BLOCK)[:r]
    return out


def _source(data: Any, score: str, system: str, item: str, run: str | None):
    cols = [c for c in (score, system, item, run) if c]
    if isinstance(data, (str, os.PathLike)):
        import dask.dataframe as dd  # noqa: PLC0415 - optional dependency (mixedeval[dask])

        return dd.read_parquet(str(data), columns=cols)
    missing = [c for c in cols if c not in data.columns]
    if missing:
        raise DataError(f"columns {missing} are not in the data; available: {list(data.columns)[:20]}")
    return data[cols]  # a new frame (pandas) or graph (dask): the caller's table is not modified


def partitioned_bootstrap(data: Any, score: str, system: str, item: str, run: str | None = None, *,
                          n_resamples: int = 10_000, ci: str = "percentile", level: float = 0.95,
                          random_state: Any = None, partitions: int = PARTITIONS, higher_is_better: bool = True):
    """Item bootstrap of each system's mean score from per-partition partial sums (module docstring).

    ``data``: a dask DataFrame, a Parquet path (read with ``dask.dataframe.read_parquet``) or a
    pandas DataFrame (the same numbers in memory). Computed with Dask's current scheduler (the
    ``Client`` that is active, e.g. the ``executor`` given to :func:`mixedeval.bootstrap`).
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
    framed = src.map_partitions(_with_parts, item, int(partitions)) if not isinstance(src, pd.DataFrame) \
        else _with_parts(src, item, int(partitions))
    systems, n_items = _design(framed, system, item, int(partitions))
    counts = _partition_counts(n_items, ss, n_resamples)
    if isinstance(framed, pd.DataFrame):
        sums = _partition_sums(framed, score, system, item, systems, counts, ss, n_resamples)
    else:
        shuffled = framed.shuffle(on=_PART)
        sums = shuffled.map_partitions(_partition_sums, score, system, item, systems, counts, ss, n_resamples,
                                       meta=_empty(systems)).compute()
    return _fields(sums, systems, n_items, ss, n_resamples, ci, level, higher_is_better, int(partitions))


def _part_sizes(chunk: pd.DataFrame, system: str, item: str) -> pd.DataFrame:
    """Per partition in ``chunk``: its number of distinct items; plus the systems seen (one row each)."""
    sizes = chunk.groupby(_PART)[item].nunique()
    systems = pd.unique(chunk[system].dropna())
    return pd.DataFrame({"kind": ["size"] * len(sizes) + ["system"] * len(systems),
                         "part": [*sizes.index.astype(np.int64), *([-1] * len(systems))],
                         "value": [*(str(v) for v in sizes.to_numpy()), *(str(v) for v in systems)],
                         "raw": pd.Series([*([None] * len(sizes)), *systems], dtype=object)})


def _design(framed: Any, system: str, item: str, n_parts: int) -> tuple[list[Any], np.ndarray]:
    """Sorted systems and the number of distinct items per partition (one pass over the data;
    on Dask the partitions' own sizes after the shuffle by partition, so no worker holds more
    than its partitions)."""
    if isinstance(framed, pd.DataFrame):
        parts = _part_sizes(framed, system, item)
    else:
        meta = pd.DataFrame({"kind": pd.Series(dtype=object), "part": pd.Series(dtype=np.int64),
                             "value": pd.Series(dtype=object), "raw": pd.Series(dtype=object)})
        parts = framed.shuffle(on=_PART).map_partitions(_part_sizes, system, item, meta=meta).compute()
    systems = sorted({v for v in parts.loc[parts["kind"] == "system", "raw"]}, key=str)
    sz = parts[parts["kind"] == "size"]
    per = pd.Series(sz["value"].astype(np.int64).to_numpy(), index=sz["part"].astype(np.int64).to_numpy())
    if len(systems) < 2:
        raise DataError(f"the partitioned bootstrap compares systems: {system!r} has {len(systems)} value(s)")
    n_items = np.zeros(n_parts, dtype=np.int64)
    n_items[per.index.to_numpy(dtype=np.int64)] = per.to_numpy(dtype=np.int64)
    if n_items.sum() < 2:
        raise DataError(f"need at least 2 items to resample; got {int(n_items.sum())}")
    return systems, n_items


def _fields(sums: pd.DataFrame, systems: list[Any], n_items: np.ndarray, ss: np.random.SeedSequence,
            n_resamples: int, ci: str, level: float, higher_is_better: bool, n_parts: int) -> dict[str, Any]:
    cols = [str(s) for s in systems]
    sums = sums.sort_values(["partition", "replicate"], kind="stable")
    total = np.zeros((n_resamples + 1, len(cols)))
    for _, part in sums.groupby("partition", sort=True):  # partition order: bit-identical everywhere
        total += part[cols].to_numpy(dtype=float)
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
