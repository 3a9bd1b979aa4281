"""Issue 15 benchmark: the item bootstrap of a score table larger than a worker's memory.

Writes a Parquet dataset of ``--rows`` scores (systems x items x runs; about 17 bytes a row in
memory, so 20 M rows are ~340 MB) and bootstraps every system's mean over items with
``me.bootstrap(path, ..., executor=client)`` on a ``LocalCluster`` whose workers may use only
``--memory-limit`` each (less than the table). Prints the time, the table's in-memory size
against the per-worker limit, the peak memory the workers reported, and checks that the
partitioned algorithm on the first ``--check-items`` items gives the same replicates whether they
come from pandas in memory or from Dask (the numbers must be equal, bit for bit).

Run: .venv/bin/python benchmarks/bench_bootstrap_dask.py [--rows 20000000] [--memory-limit 300MB]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def write_dataset(path: Path, rows: int, systems: int, runs: int, files: int, seed: int = 0) -> int:
    """Parquet files of (system, item, run, score); returns the number of items."""
    items = rows // (systems * runs)
    per_file = -(-items // files)
    rng = np.random.default_rng(seed)
    for f in range(files):
        lo, hi = f * per_file, min(items, (f + 1) * per_file)
        if lo >= hi:
            break
        n = hi - lo
        item = np.repeat(np.arange(lo, hi), systems * runs)
        system = np.tile(np.repeat(np.arange(systems), runs), n)
        run = np.tile(np.arange(runs), n * systems)
        score = rng.normal(0.5 + 0.01 * system, 0.2).astype(np.float64) + np.repeat(rng.normal(0, 0.1, n), systems * runs)
        pd.DataFrame({"system": system.astype(np.int8),
                      "item": item, "run": run.astype(np.int8), "score": score}).to_parquet(path / f"part-{f:03d}.parquet")
    return items


def _peak_rss() -> int:
    """Peak resident memory of the calling (worker) process, bytes (Linux: ru_maxrss in KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--memory-limit", default="300MB")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--n-resamples", type=int, default=1000)
    ap.add_argument("--check-items", type=int, default=2000)
    args = ap.parse_args()

    import dask
    from distributed import Client, LocalCluster

    import mixedeval as me
    from mixedeval.resampling._bootstrap_dask import partitioned_bootstrap

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scores"
        path.mkdir()
        t0 = time.perf_counter()
        n_items = write_dataset(path, args.rows, systems=5, runs=4, files=40)
        t_write = time.perf_counter() - t0
        bytes_in_memory = args.rows * (1 + 8 + 1 + 8)
        print(f"dataset: {args.rows:,} rows, {n_items:,} items, {bytes_in_memory / 1e6:.0f} MB in memory "
              f"(written in {t_write:.1f} s); per-worker memory limit {args.memory_limit} x {args.workers} workers")
        with dask.config.set({"distributed.worker.memory.terminate": False, "distributed.worker.memory.pause": False}), \
                LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit,
                             dashboard_address=None) as cluster, Client(cluster) as client:
            t0 = time.perf_counter()
            res = me.bootstrap(str(path), "score", "system", "item", run="run", n_resamples=args.n_resamples,
                               random_state=1, executor=client)
            t_boot = time.perf_counter() - t0
            peak = max(client.run(_peak_rss).values())
            print(f"partitioned bootstrap, {args.n_resamples} replicates: {t_boot:.1f} s; "
                  f"peak resident memory of a worker {peak / 1e6:.0f} MB (pausing off, spilling to disk on)")
            print(res.summary().to_string(index=False))
            import dask.dataframe as dd

            small = dd.read_parquet(str(path))
            small = small[small["item"] < args.check_items]
            on_dask = me.bootstrap(small, "score", "system", "item", run="run", n_resamples=200, random_state=3,
                                   executor=client)
        in_memory = pd.read_parquet(path)
        in_memory = in_memory[in_memory["item"] < args.check_items]
        here = partitioned_bootstrap(in_memory, "score", "system", "item", "run", n_resamples=200, random_state=3)
        same = np.array_equal(here["distribution"], on_dask.distribution)
        print(f"first {args.check_items} items: Dask and pandas-in-memory replicates identical: {same}")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
