"""Issue 15 benchmark: the item bootstrap of a score table larger than a worker's memory.

Writes a Parquet dataset of ``--rows`` scores (5 systems x 4 runs x items, ``--files`` files;
18 bytes a row in memory, so 40 M rows are 720 MB) and bootstraps every system's mean over items
with ``me.bootstrap(path, ..., executor=client)`` on a ``LocalCluster`` of ``--workers`` workers
that may use ``--memory-limit`` each, with Dask's default memory management (spill to disk at
60-70 %, pause at 80 %, restart at 95 % of the limit; nothing is switched off). Prints:

* the time and the peak resident memory of every worker process (sampled every 0.05 s with
  psutil on the worker pids, and the kernel's ``ru_maxrss`` of each worker at the end), whether a
  worker was ever paused (the scheduler's worker status, sampled with the memory), and what the
  workers spilled to disk;
* throughput in scores per second per worker (rows / wall time / workers) against the in-memory
  ``me.bootstrap`` (one process, one BLAS thread, items resampled, same B) on the first
  ``--in-memory-items`` items, read into pandas — the ratio in one run; and, for reference, the
  partitioned algorithm itself run in this process on that same table;
* whether the partitioned algorithm on the first ``--check-items`` items gives the same
  replicates from pandas in memory and from Dask (must be equal, bit for bit);
* the load average of the machine before and after.

Run: .venv/bin/python benchmarks/bench_bootstrap_dask.py [--rows 40000000] [--memory-limit 450MB]
"""
from __future__ import annotations

import argparse
import os
import resource
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

SYSTEMS, RUNS = 5, 4


def write_dataset(path: Path, rows: int, files: int, seed: int = 0) -> int:
    """Parquet files of (system, item, run, score), items in file order; returns the number of items."""
    items = rows // (SYSTEMS * RUNS)
    per_file = -(-items // files)
    rng = np.random.default_rng(seed)
    for f in range(files):
        lo, hi = f * per_file, min(items, (f + 1) * per_file)
        if lo >= hi:
            break
        n = hi - lo
        item = np.repeat(np.arange(lo, hi), SYSTEMS * RUNS)
        system = np.tile(np.repeat(np.arange(SYSTEMS), RUNS), n)
        run = np.tile(np.arange(RUNS), n * SYSTEMS)
        score = rng.normal(0.5 + 0.01 * system, 0.2) + np.repeat(rng.normal(0, 0.1, n), SYSTEMS * RUNS)
        pd.DataFrame({"system": system.astype(np.int8), "item": item, "run": run.astype(np.int8),
                      "score": score}).to_parquet(path / f"part-{f:03d}.parquet")
    return items


def _max_rss() -> int:
    """Peak resident memory of the calling (worker) process since it started, bytes (ru_maxrss, KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _spilled(dask_worker) -> int:
    """Bytes this worker wrote to disk by spilling since it started (its "disk-write" metrics)."""
    return int(sum(v for k, v in dask_worker.digests_total.items()
                   if isinstance(k, tuple) and "disk-write" in k and k[-1] == "bytes"))


def _warm_up(one_file: str) -> int:
    """In a worker: import what the bootstrap uses (mixedeval, dask.dataframe, pyarrow's Parquet
    reader), read one file's metadata; returns the resident memory then (bytes)."""
    import dask.dataframe  # noqa: F401
    import psutil
    import pyarrow.parquet as pq

    import mixedeval.resampling._bootstrap_dask  # noqa: F401

    pq.read_metadata(one_file)
    return psutil.Process().memory_info().rss


class Sampler(threading.Thread):
    """Samples the workers' resident memory (psutil, by pid) and pause status every ``dt`` seconds."""

    def __init__(self, pids: dict[str, int], scheduler, dt: float = 0.05) -> None:
        super().__init__(daemon=True)
        import psutil

        self.procs = {addr: psutil.Process(pid) for addr, pid in pids.items()}
        self.peak = dict.fromkeys(pids, 0)
        self.paused = dict.fromkeys(pids, 0)
        self.scheduler, self.dt, self.stop = scheduler, dt, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for addr, p in self.procs.items():
                try:
                    self.peak[addr] = max(self.peak[addr], p.memory_info().rss)
                except Exception:  # noqa: BLE001 - a worker restarted by the nanny: keep the others
                    pass
                ws = self.scheduler.workers.get(addr) if self.scheduler is not None else None
                if ws is not None and str(ws.status).endswith("paused"):
                    self.paused[addr] += 1
            time.sleep(self.dt)


def in_memory_rate(path: Path, n_items: int, n_resamples: int) -> tuple[float, float, int, pd.DataFrame]:
    """Scores per second of the in-memory me.bootstrap and of the partitioned algorithm run in
    this process, on the first ``n_items`` items; one BLAS thread (one worker's worth)."""
    from threadpoolctl import threadpool_limits

    import mixedeval as me
    from mixedeval.resampling._bootstrap_dask import partitioned_bootstrap

    small = pd.read_parquet(path, filters=[("item", "<", n_items)])
    with threadpool_limits(limits=1, user_api="blas"):
        t0 = time.perf_counter()
        me.bootstrap(small, "score", "system", "item", run="run", resample="items", n_resamples=n_resamples,
                     random_state=1, progress=False)
        t_mem = time.perf_counter() - t0
        t0 = time.perf_counter()
        partitioned_bootstrap(small, "score", "system", "item", "run", n_resamples=n_resamples, random_state=1)
        t_part = time.perf_counter() - t0
    return len(small) / t_mem, len(small) / t_part, len(small), small


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=40_000_000)
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--memory-limit", default="450MB")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--n-resamples", type=int, default=1000)
    ap.add_argument("--in-memory-items", type=int, default=200_000)
    ap.add_argument("--check-items", type=int, default=2000)
    args = ap.parse_args()

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import mixedeval as me
    from mixedeval.resampling._bootstrap_dask import partitioned_bootstrap

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scores"
        path.mkdir()
        t0 = time.perf_counter()
        n_items = write_dataset(path, args.rows, args.files)
        print(f"dataset: {args.rows:,} rows, {n_items:,} items, {args.rows * 18 / 1e6:.0f} MB in memory, "
              f"{sum(f.stat().st_size for f in path.iterdir()) / 1e6:.0f} MB of Parquet in "
              f"{dd.read_parquet(str(path)).npartitions} dask partitions (written in {time.perf_counter() - t0:.1f} s)")
        print(f"cluster: {args.workers} workers x 1 thread, memory_limit={args.memory_limit} each, Dask's default "
              f"memory management (spill, pause at 80 %, terminate at 95 %)")
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            idle = client.run(_warm_up, str(next(path.iterdir())))
            sampler = Sampler(client.run(os.getpid), getattr(cluster, "scheduler", None))
            sampler.start()
            t0 = time.perf_counter()
            res = me.bootstrap(str(path), "score", "system", "item", run="run", n_resamples=args.n_resamples,
                               random_state=1, executor=client)
            t_boot = time.perf_counter() - t0
            sampler.stop.set()
            sampler.join()
            max_rss, spilled = client.run(_max_rss), client.run(_spilled)
            print(f"partitioned bootstrap, B = {args.n_resamples}: {t_boot:.1f} s")
            for addr in sorted(sampler.peak):
                print(f"  worker {addr}: resident memory idle (imports done) {idle[addr] / 1e6:.0f} MB, peak sampled "
                      f"{sampler.peak[addr] / 1e6:.0f} MB, ru_maxrss {max_rss[addr] / 1e6:.0f} MB; paused in "
                      f"{sampler.paused[addr]} of the samples; spilled {spilled[addr] / 1e6:.0f} MB to disk")
            print(res.summary().to_string(index=False))
            small = dd.read_parquet(str(path), filters=[("item", "<", args.check_items)])
            on_dask = me.bootstrap(small, "score", "system", "item", run="run", n_resamples=200, random_state=3,
                                   executor=client)
        rate_out = args.rows / t_boot / args.workers
        rate_mem, rate_part, rows_mem, _ = in_memory_rate(path, args.in_memory_items, args.n_resamples)
        print(f"throughput, scores per second per worker (B = {args.n_resamples}): out-of-core {rate_out:,.0f}; "
              f"in-memory me.bootstrap on {rows_mem:,} rows {rate_mem:,.0f} (ratio out-of-core / in-memory "
              f"{rate_out / rate_mem:.2f}); the partitioned algorithm in this process on the same rows "
              f"{rate_part:,.0f}")
        here = pd.read_parquet(path, filters=[("item", "<", args.check_items)])
        ref = partitioned_bootstrap(here, "score", "system", "item", "run", n_resamples=200, random_state=3)
        same = np.array_equal(ref["distribution"], on_dask.distribution)
        print(f"first {args.check_items} items: Dask and pandas-in-memory replicates identical: {same}")
    print(f"load average (1, 5, 15 min): before {tuple(round(x, 2) for x in load_before)}, "
          f"after {tuple(round(x, 2) for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
