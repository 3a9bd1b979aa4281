"""Issue 15 point 3: the out-of-core item bootstrap (mixedeval/resampling/_bootstrap_dask.py).

What these tests show, and what they do not:

* the per-(item, system) sums are exact: ``_exact_sums`` equals ``math.fsum`` (correctly rounded,
  the reference) wherever it reports itself exact, and the cell means do not depend on how an
  item's rows are split among input partitions, including the fallback for sums that two floats
  cannot hold (scores 1e-20 .. 1e20 apart). That is what makes pandas, Parquet and Dask input
  give the same replicates, bit for bit, whatever the partitioning;
* on a ``LocalCluster`` of 2 worker processes with ``memory_limit="350MB"`` each and Dask's default
  memory management (pausing and spilling on), ``me.bootstrap`` of a Parquet dataset of 24 files
  (rows shuffled, so every item's rows are spread over many files) completes and equals the
  pandas path bit for bit. A scheduler plugin records the size of every task result: no task of
  the bootstrap produces anything larger than one input partition (raw rows are reduced where
  they are read and never gathered), while the table is 24 input partitions. This is the
  mechanism that bounds a worker's memory; the CI table itself (72,000 rows, a few MB) is far
  below the memory limit, because a table larger than the limit is too slow for CI.
  ``benchmarks/bench_bootstrap_dask.py`` runs the real case (40 M rows, 720 MB in memory, against
  450 MB per worker, pausing on) and reports the workers' peak resident memory.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.errors import DataError
from mixedeval.resampling import _bootstrap_dask as bd

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")

SYSTEMS, RUNS, ITEMS, FILES = 3, 4, 6000, 24


def _table(items: int = ITEMS, seed: int = 0, wide: bool = False) -> pd.DataFrame:
    """systems x items x runs rows in random order; ``wide``: scores 1e-20 .. 1e20 apart within items."""
    rng = np.random.default_rng(seed)
    n = items * SYSTEMS * RUNS
    df = pd.DataFrame({"item": np.repeat([f"item-{i:05d}" for i in range(items)], SYSTEMS * RUNS),
                       "system": np.tile(np.repeat([f"sys{s}" for s in range(SYSTEMS)], RUNS), items),
                       "run": np.tile(np.arange(RUNS), items * SYSTEMS),
                       "score": rng.normal(0.5, 0.2, n)})
    if wide:
        df["score"] *= 10.0 ** rng.integers(-20, 21, n)
    return df.iloc[rng.permutation(n)].reset_index(drop=True)


def _split(df: pd.DataFrame, parts: int) -> list[pd.DataFrame]:
    return [df.iloc[ix] for ix in np.array_split(np.arange(len(df)), parts)]


def _aligned_means(cells: bd._Cells, systems: list) -> np.ndarray:
    return cells.means[:, [list(cells.systems).index(s) for s in systems]]


# --------------------------------------------------------------- exact, order-independent cell sums
def test_exact_sums_are_the_correctly_rounded_sums():
    rng = np.random.default_rng(1)
    cell = rng.integers(0, 3000, 20000)
    x = rng.normal(size=20000) * 10.0 ** rng.integers(-8, 9, 20000)
    hi, lo, bad = bd._exact_sums(cell, x, 3000)
    ref = np.array([math.fsum(x[cell == c]) for c in range(3000)])
    assert (~bad).sum() > 2500  # values 1e16 apart: two floats hold almost every sum exactly
    np.testing.assert_array_equal(hi[~bad], ref[~bad])
    # hand-derived: 1e16 + 1 - 1e16 is 1 exactly (naive left-to-right addition gives 0)
    hi, lo, bad = bd._exact_sums(np.zeros(3, dtype=np.int64), np.array([1e16, 1.0, -1e16]), 1)
    assert hi[0] == 1.0 and not bad[0]
    # the fallback: math.fsum of the cells two floats cannot hold
    assert bd._fsum_cells(np.array([0, 0, 0, 1]), np.array([1e30, 1.0, 1e-30, 2.0]), np.array([0, 1])).tolist() \
        == [math.fsum([1e30, 1.0, 1e-30]), 2.0]


@pytest.mark.parametrize("wide", [False, True])
def test_cell_means_do_not_depend_on_how_rows_are_split(wide):
    df = _table(items=500, seed=2, wide=wide)
    whole = bd._combine([bd._map_chunk(df, "score", "system", "item", 1)[0]])
    systems = sorted(whole.systems)
    expected = (df.groupby(["item", "system"])["score"].apply(math.fsum) / df.groupby(["item", "system"]).size())
    np.testing.assert_array_equal(_aligned_means(whole, systems), expected.unstack("system")[systems].to_numpy())
    for splits in (2, 9):
        pieces = [bd._map_chunk(part, "score", "system", "item", 1)[0] for part in _split(df, splits)]
        if wide:
            assert any(len(p.raw[0]) for p in pieces)  # the raw-value fallback was exercised
        split = bd._combine(pieces)
        assert list(split.texts) == list(whole.texts)
        np.testing.assert_array_equal(_aligned_means(split, systems), _aligned_means(whole, systems))


@pytest.mark.parametrize("wide", [False, True])
def test_dask_input_with_items_split_over_partitions_equals_pandas(wide):
    import dask

    df = _table(items=400, seed=3, wide=wide)
    kw = dict(n_resamples=130, random_state=8, partitions=5)
    here = bd.partitioned_bootstrap(df, "score", "system", "item", "run", **kw)
    with dask.config.set(scheduler="sync"):
        there = bd.partitioned_bootstrap(dd.from_pandas(df, npartitions=7, sort=False), "score", "system", "item",
                                         "run", **kw)
    np.testing.assert_array_equal(there["distribution"], here["distribution"])
    np.testing.assert_array_equal(there["estimate"], here["estimate"])
    assert there["design"]["n_items"] == 400


# --------------------------------------------------------------- a Parquet dataset on a memory-limited cluster
class _ResultSizes(distributed.diagnostics.plugin.SchedulerPlugin):
    """Records the size (Dask's sizeof, bytes) of every task result the scheduler sees."""

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "memory" and kwargs.get("nbytes") is not None:
            self.sizes[str(key)] = int(kwargs["nbytes"])


def _add_plugin(dask_scheduler):
    dask_scheduler.add_plugin(_ResultSizes(), name="mixedeval-result-sizes")


def _sizes(dask_scheduler):
    return dask_scheduler.plugins["mixedeval-result-sizes"].sizes


def test_parquet_dataset_on_a_memory_limited_cluster_equals_pandas(tmp_path):
    from distributed import Client, LocalCluster

    df = _table()
    by_system = df.sort_values(["system", "item"], kind="stable")  # files of one system each, as leaderboards
    for f, part in enumerate(_split(by_system, FILES)):  # store them: every item's rows are in SYSTEMS files
        part.to_parquet(tmp_path / f"part-{f:02d}.parquet", index=False)
    kw = dict(n_resamples=200, random_state=11)
    here = bd.partitioned_bootstrap(df, "score", "system", "item", "run", **kw)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="350MB",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        assert dd.read_parquet(str(tmp_path)).npartitions == FILES
        client.run_on_scheduler(_add_plugin)
        res = me.bootstrap(str(tmp_path), "score", "system", "item", run="run", executor=client, **kw)
        sizes = client.run_on_scheduler(_sizes)
    np.testing.assert_array_equal(res.distribution, here["distribution"])
    np.testing.assert_array_equal(res.estimate, here["estimate"])
    assert res.design == {"n_items": ITEMS, "partitions": bd.PARTITIONS, "method": "partitioned item bootstrap"}
    inputs = {k: v for k, v in sizes.items() if "read_parquet" in k or "readparquet" in k.replace("-", "")}
    ours = {k: v for k, v in sizes.items() if k not in inputs}
    assert len(inputs) == FILES and sum(k.startswith("_map_chunk") for k in ours) == FILES
    assert max(ours.values()) < max(inputs.values()) < sum(inputs.values()) / (FILES / 2)
    avg = df.groupby(["item", "system"])["score"].mean().reset_index()
    mem = me.bootstrap(avg, "score", "system", "item", n_resamples=10, random_state=1, progress=False)
    np.testing.assert_allclose(res.estimate, mem.estimate, rtol=1e-12)


# --------------------------------------------------------------- bad input
def test_bad_input_is_refused_with_the_column_named():
    df = _table(items=50, seed=4)
    before = df.copy()
    nan = df.assign(score=np.where(np.arange(len(df)) == 3, np.nan, df["score"]))
    with pytest.raises(DataError, match="'score' has 1 missing or infinite"):
        bd.partitioned_bootstrap(nan, "score", "system", "item", "run", n_resamples=10)
    with pytest.raises(DataError, match="column 'system' has 1 missing"):
        bd.partitioned_bootstrap(df.assign(system=df["system"].where(df.index != 5)), "score", "system", "item",
                                 n_resamples=10)
    incomplete = df[~((df["item"] == "item-00007") & (df["system"] == "sys1"))]
    with pytest.raises(DataError, match="item-00007"):
        bd.partitioned_bootstrap(incomplete, "score", "system", "item", "run", n_resamples=10)
    with pytest.raises(DataError, match="item-00007"):  # raised in a Dask task, re-raised here
        import dask

        with dask.config.set(scheduler="sync"):
            bd.partitioned_bootstrap(dd.from_pandas(incomplete, npartitions=3), "score", "system", "item",
                                     n_resamples=10)
    pd.testing.assert_frame_equal(df, before)
