"""Issue 15 benchmark: R refit loops on 1 and 2 local workers, the per-task overhead of the Dask
path against the process pool, and the memory of a worker; ratios measured in one run.

(a) the language-disparity parametric bootstrap of the bundled Hu et al. (2025) records
    (``res.bootstrap(n_resamples=200)``: lme4::simulate here, the ML refits in chunks of 25 on the
    workers) with ``executor=None``, a 1-worker process pool (``_ProcessRunner(1)``: ``executor=1``
    means "in this process"), a 2-worker pool (``executor=2``) and a Dask ``LocalCluster(2)``;
    target: 2 workers >= 1.7x faster than 1 worker;
(b) a 200-fit ``me.fit_many`` grid on Kreutzer TER (5 formulas x 10 data subsets x 4 optimizer
    settings) on the same executors; same target;
(c) the per-task overhead: 500 no-op tasks and 500 tiny numpy tasks through
    ``resolve_executor(...).map`` on a Dask ``LocalCluster(2)`` against ``executor=2``, in ms per
    task (wall clock of the whole map / number of tasks) and their ratio, beside each executor's
    floor ("bare submit": its own submit/result without mixedeval's task wrapper);
(d) the numbers are asserted equal across executors (R refits to 1e-6, as two optimizer runs;
    numpy task results exactly), and whether the refits were bit-identical is printed;
(e) the memory of a worker: resident memory of a fresh Python process after importing
    mixedeval, after R starts, after ``me.lmm`` on Kreutzer TER (7,287 rows) and after a fit of a
    simulated ``--memory-rows``-row table (default 200,000: 2,000 items x 5 systems x 20 runs,
    ``score ~ system + (1|item)``); and the workers' resident memory at the end of the run.

Every pool and the cluster is started and warmed up (R started, lme4/lmerTest loaded, one small
fit) before the timings; the start-up is reported separately. The timed runs are interleaved
(None, 1 worker, 2 workers, Dask) ``--repeats`` times and the medians are compared. The machine's
load average is printed with the results, and beside every timing the cores that other jobs used
meanwhile (the machine's busy CPU time from /proc/stat minus that of this process and its
descendants, over the wall time): the 1.7x target needs two idle cores, and on a shared machine
another job's process takes one of them.

Run: .venv/bin/python benchmarks/bench_executor.py [--quick] [--repeats 3] [--n-resamples 200]
     [--tasks 500] [--no-dask]
(``--quick``: one repetition of each timing, the same sizes; about 2 minutes on 2 idle cores.)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import mixedeval as me
from mixedeval._executor import _POOLS, Runner, _ProcessRunner, resolve_executor
from mixedeval.engine import session
from mixedeval.workflows.language_disparity import language_disparity

FORMULAS = (
    "ter ~ system + (1|sentence_id)",
    "ter ~ system + src_length + (1|sentence_id)",
    "ter ~ system * scale(src_length) + (1|sentence_id)",
    "log1p(ter) ~ system + (1|sentence_id)",
    "ter ~ 1 + (1|sentence_id) + (1|system)",
)
SUBSETS = (None, {"replication": "1"}, {"replication": "2"}, {"replication": "3"},
           {"replication": ["1", "2"]}, {"replication": ["1", "3"]}, {"replication": ["2", "3"]},
           {"system": ["Baseline", "Marking"]}, {"system": ["Baseline", "PostEdit"]},
           {"system": ["Marking", "PostEdit"]})
SETTINGS = ({"optimizer": "nloptwrap"}, {"optimizer": "nloptwrap", "reml": False}, {"optimizer": "bobyqa"},
            {"optimizer": "Nelder_Mead"})


# ------------------------------------------------------------------ tasks (run in the workers)
def _noop(i: int) -> int:
    return i


def _tiny_numpy(i: int) -> float:
    return float(np.random.default_rng(i).standard_normal(64).sum())


def _start_r(i: int) -> int:
    """Start R in this worker, load lme4/lmerTest with one small fit; return the worker's pid."""
    ter = me.datasets.load("kreutzer_ter")
    me.lmm("ter ~ system + (1|sentence_id)", ter.iloc[:600])
    time.sleep(0.3)  # let the other worker take the next warm-up task
    return os.getpid()


def _rss_mb(pid: int | str = "self") -> tuple[float, float]:
    """(resident, peak resident) memory of a process in MB, from /proc/<pid>/status (Linux)."""
    out = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line[:5]] = int(line.split()[1]) / 1024
    return out["VmRSS"], out["VmHWM"]


# ------------------------------------------------------------------ helpers
def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


_LOAD_BEFORE = [""]  # load average when the current section started (the 1-minute value then counts this run too)
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds() -> tuple[float, float]:
    """(busy CPU seconds of the whole machine, CPU seconds of this process and its descendants:
    pool workers, Dask nannies and workers), from /proc (Linux). Busy includes steal time."""
    with open("/proc/stat", encoding="ascii") as fh:
        f = [int(x) for x in fh.readline().split()[1:]]
    busy = sum(f[:3]) + sum(f[5:8])  # user nice system . . irq softirq steal
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat", encoding="ascii", errors="replace") as fh:
                    rest = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(d)], cpu[int(d)] = int(rest[1]), int(rest[11]) + int(rest[12])
    ours, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier and p not in ours]
        ours.update(kids)
        frontier = kids
    return busy / _TICK, sum(cpu.get(p, 0) for p in ours) / _TICK


def _timed(fn: Callable[[], Any]) -> tuple[float, Any, float]:
    """Wall seconds, result, and the cores other jobs used meanwhile (machine busy minus ours)."""
    b0, o0 = _cpu_seconds()
    t = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t
    b1, o1 = _cpu_seconds()
    # /proc counts in clock ticks (10 ms): too coarse for runs shorter than about half a second
    return wall, out, max(0.0, ((b1 - b0) - (o1 - o0)) / wall) if wall >= 0.5 else float("nan")


def _warm_up(runner: Runner, n_workers: int) -> float:
    """Start R in every worker of ``runner`` (repeated until every worker has taken a task)."""
    t = time.perf_counter()
    pids: set[int] = set()
    for _ in range(5):
        pids |= set(runner.map(_start_r, [(i,) for i in range(2 * n_workers)]))
        if len(pids) >= n_workers:
            break
    return time.perf_counter() - t


def _interleaved(executors: dict[str, Any], run: Callable[[Any], Any], repeats: int):
    """Median seconds, mean cores used by other jobs and the last result of ``run(executor)`` per
    executor, the runs interleaved."""
    secs: dict[str, list[float]] = {k: [] for k in executors}
    other: dict[str, list[float]] = {k: [] for k in executors}
    results: dict[str, Any] = {}
    for _ in range(repeats):
        for name, ex in executors.items():
            s, results[name], o = _timed(lambda ex=ex: run(ex))
            secs[name].append(s)
            other[name].append(o)
    known = {k: [x for x in v if not np.isnan(x)] for k, v in other.items()}
    return ({k: statistics.median(v) for k, v in secs.items()},
            {k: float(np.mean(v)) if v else float("nan") for k, v in known.items()}, results)


def _print_times(title: str, secs: dict[str, float], other: dict[str, float], n: int, unit: str,
                 base: str = "1 worker") -> None:
    print(f"\n{title}   (load average before: {_LOAD_BEFORE[0]})")
    print(f"  {'executor':22s} {'seconds':>8s} {f'ms/{unit}':>10s} {'speed-up vs ' + base:>22s} "
          f"{'other jobs (cores)':>19s}")
    for name, s in secs.items():
        print(f"  {name:22s} {s:8.2f} {1000 * s / n:10.1f} {secs[base] / s:22.2f} {other[name]:19.2f}")


#: R refits made in two processes agree like two optimizer runs, not bit for bit (two R processes can
#: differ in the last bits of lme4's arithmetic; tests/conftest.py OPTIMIZER_RTOL)
REFIT_RTOL = 1e-6


def _assert_frames_identical(frames: dict[str, pd.DataFrame], what: str) -> None:
    """Equal across executors to REFIT_RTOL (R refits); also says whether they were bit-identical."""
    ref_name, ref = next(iter(frames.items()))
    exact = True
    for name, f in frames.items():
        a, b = f.reset_index(drop=True), ref.reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=REFIT_RTOL, atol=0.0,
                                      obj=f"{what}: {name} vs {ref_name}")
        exact = exact and a.equals(b)
    print(f"  (d) {what}: equal across {', '.join(frames)} "
          f"({'bit-identical' if exact else f'to rtol {REFIT_RTOL:g}, not bit for bit'})")


# ------------------------------------------------------------------ (a) disparity bootstrap
def bench_disparity(executors: dict[str, Any], n_resamples: int, repeats: int) -> dict[str, float]:
    res = language_disparity(me.datasets.load("hu2025_records"), drop_aggregates=True)
    for ex in executors.values():  # warm-up: byte compilation of the refit loop (each call ships the model anew)
        res.bootstrap(n_resamples=50, random_state=99, progress=False, executor=ex)

    def run(ex):
        return res.bootstrap(n_resamples=n_resamples, random_state=2025, progress=False, executor=ex)

    _LOAD_BEFORE[0] = _load()
    secs, other, boots = _interleaved(executors, run, repeats)
    _print_times(f"(a) language-disparity parametric bootstrap, {n_resamples} ML refits "
                 f"({res.fit.nobs} records, chunks of 25)", secs, other, n_resamples, "refit")
    print("  split of the last run (s): lme4::simulate here / the refit loop (on the executor) / numpy here")
    for name, b in boots.items():
        tm = b.timing
        print(f"  {name:22s} {tm['simulate']:.2f} / {tm['r_refit']:.2f} / {tm['numpy']:.2f}")
    _assert_frames_identical({k: b.replicates for k, b in boots.items()}, "bootstrap replicates")
    _assert_frames_identical({k: b.languages for k, b in boots.items()}, "language-potential intervals")
    return secs


# ------------------------------------------------------------------ (b) model grid
def grid_specs() -> list[dict[str, Any]]:
    """5 formulas x 10 subsets x 4 optimizer settings = 200 specifications."""
    specs = []
    for f, formula in enumerate(FORMULAS):
        for s, subset in enumerate(SUBSETS):
            for o, setting in enumerate(SETTINGS):
                spec = {"formula": formula, "name": f"f{f}_s{s}_o{o}", **setting}
                if subset is not None:
                    spec["subset"] = subset
                specs.append(spec)
    return specs


def bench_grid(executors: dict[str, Any], repeats: int) -> dict[str, float]:
    ter = me.datasets.load("kreutzer_ter")
    specs = grid_specs()

    def run(ex):
        return me.fit_many(specs, ter, executor=ex, progress=False)

    _LOAD_BEFORE[0] = _load()
    secs, other, grids = _interleaved(executors, run, repeats)
    n_ok = int((next(iter(grids.values())).table["status"] == "ok").sum())
    _print_times(f"(b) me.fit_many grid of {len(specs)} lmm fits on Kreutzer TER (5 formulas x 10 subsets x "
                 f"4 optimizer settings; {n_ok} ok)", secs, other, len(specs), "fit")
    for part in ("table", "fixed", "random"):
        _assert_frames_identical({k: getattr(g, part) for k, g in grids.items()}, f"grid .{part}")
    return secs


# ------------------------------------------------------------------ (c) per-task overhead
class _BareMap:
    """The floor of an executor: its own submit/gather of ``fn(*args)``, without mixedeval's task
    wrapper (which pins the BLAS thread count with threadpoolctl in every task)."""

    def __init__(self, ex: Any) -> None:
        self.ex = ex

    def map(self, fn: Callable[..., Any], tasks: list[tuple]) -> list[Any]:
        if isinstance(self.ex, _ProcessRunner):
            pool = self.ex._pool()  # noqa: SLF001 - the same pool the runner uses
            return [f.result() for f in [pool.submit(fn, *args) for args in tasks]]
        return self.ex.gather([self.ex.submit(fn, *args, pure=False) for args in tasks])


def bench_overhead(executors: dict[str, Any], n_tasks: int, repeats: int) -> None:
    runners: dict[str, Any] = {name: resolve_executor(ex) for name, ex in executors.items()}
    runners["2 workers, bare submit"] = _BareMap(executors["2 workers"])
    if "Dask LocalCluster(2)" in executors:
        runners["Dask, bare submit"] = _BareMap(executors["Dask LocalCluster(2)"])
    _LOAD_BEFORE[0] = _load()
    print(f"\n(c) per-task overhead: {n_tasks} tasks through resolve_executor(...).map   (load average before: "
          f"{_LOAD_BEFORE[0]}); 'bare submit': the executor's own submit/result without mixedeval's task wrapper")
    print(f"  {'task':12s} {'executor':24s} {'ms/task':>8s} {'other jobs (cores)':>19s}")
    for label, fn in (("no-op", _noop), ("tiny numpy", _tiny_numpy)):
        tasks = [(i,) for i in range(n_tasks)]
        for r in runners.values():  # warm-up (imports in the workers)
            r.map(fn, tasks[:20])
        secs, other, outs = _interleaved(runners, lambda r, fn=fn, tasks=tasks: r.map(fn, tasks), repeats)
        for name, s in secs.items():
            print(f"  {label:12s} {name:24s} {1000 * s / n_tasks:8.3f} {other[name]:19.2f}")
        if "Dask LocalCluster(2)" in secs:
            print(f"  {label:12s} ratio Dask / 2-worker pool: {secs['Dask LocalCluster(2)'] / secs['2 workers']:.2f} "
                  f"(bare: {secs['Dask, bare submit'] / secs['2 workers, bare submit']:.2f})")
        ref = outs["in-process"]
        assert all(o == ref for o in outs.values()), f"{label}: task results differ between executors"
    print("  (d) task results: identical across executors")


# ------------------------------------------------------------------ (e) memory of a worker
_MEMORY_SCRIPT = r"""
import json, os, sys
import numpy as np, pandas as pd
def _rss_mb():
    got = {}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                got[line[:5]] = int(line.split()[1]) / 1024
    return got["VmRSS"], got["VmHWM"]
out = {}
import mixedeval as me
from mixedeval.engine import session
me.lmm; me.fit_many  # the lazy imports a worker's first task makes
out["python + mixedeval imported"] = _rss_mb()
session.r_available()
out["R started (helpers sourced)"] = _rss_mb()
ter = me.datasets.load("kreutzer_ter")
me.lmm("ter ~ system + (1|sentence_id)", ter)
out["after me.lmm on Kreutzer TER (7,287 rows)"] = _rss_mb()
rng = np.random.default_rng(1)
n_items, n_sys, n_runs = 2000, 5, int(sys.argv[1]) // 10000
item = np.repeat(np.arange(n_items), n_sys * n_runs)
system = np.tile(np.repeat(np.arange(n_sys), n_runs), n_items)
big = pd.DataFrame({"item": "i" + pd.Series(item).astype(str), "system": "s" + pd.Series(system).astype(str),
                    "score": rng.normal(0.5, 0.1, len(item)) + rng.normal(0, 0.1, n_items)[item] + 0.01 * system})
mb = big.memory_usage(deep=True).sum() / 2**20
out[f"{len(big):,}-row table in memory (pandas {mb:.0f} MB)"] = _rss_mb()
me.lmm("score ~ system + (1|item)", big)
out["after me.lmm('score ~ system + (1|item)') on it"] = _rss_mb()
print(json.dumps(out))
"""


def bench_memory(rows: int) -> None:
    proc = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, str(rows)], capture_output=True, text=True,
                          check=True)
    stages = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\n(e) memory of a fresh worker-like process (resident / peak resident, MB)   (load average {_load()})")
    for stage, (rss, hwm) in stages.items():
        print(f"  {stage:56s} {rss:7.0f} / {hwm:7.0f}")


def workers_memory(executors: dict[str, Any]) -> None:
    print("\n    resident memory of the benchmark's workers at the end of the run (MB)")
    for name, ex in executors.items():
        if isinstance(ex, _ProcessRunner):
            pool = _POOLS.get(ex.n_workers)
            rss = [_rss_mb(pid)[0] for pid in (pool._processes or {})] if pool is not None else []  # noqa: SLF001
        elif ex is not None:
            rss = [v[0] for v in ex.run(_rss_mb).values()]
        else:
            rss = [_rss_mb()[0]]
        print(f"  {name:22s} " + ", ".join(f"{r:.0f}" for r in rss) + ("  (this process)" if ex is None else ""))


# ------------------------------------------------------------------ main
def _start_executors(with_dask: bool) -> tuple[dict[str, Any], Any]:
    session.r_available()
    _start_r(0)  # R and lme4 in this process too, so that "in-process" is warm as well
    executors: dict[str, Any] = {"in-process": None, "1 worker": _ProcessRunner(1), "2 workers": _ProcessRunner(2)}
    print("start-up (not in the timings below):")
    for name in ("1 worker", "2 workers"):  # pools before the cluster: Dask sets OPENBLAS_NUM_THREADS
        secs = _warm_up(executors[name], executors[name].n_workers)
        print(f"  {name:22s} pool started, R + lme4 loaded in every worker: {secs:.2f} s")
    cluster = None
    if with_dask:
        from distributed import Client, LocalCluster  # noqa: PLC0415 - optional dependency

        s, cluster, _ = _timed(lambda: LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                    dashboard_address=None))
        client = Client(cluster)
        executors["Dask LocalCluster(2)"] = client
        print(f"  {'Dask LocalCluster(2)':22s} cluster started {s:.2f} s; R + lme4 loaded in every worker: "
              f"{_warm_up(resolve_executor(client), 2):.2f} s")
    return executors, cluster


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one repetition of each timing (the same sizes)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repetitions; the median is reported")
    ap.add_argument("--n-resamples", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=500, help="trivial tasks for the per-task overhead")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster rows")
    ap.add_argument("--memory-rows", type=int, default=200_000,
                    help="rows of the simulated table of (e) (2,000 items x 5 systems x rows / 10,000 runs)")
    args = ap.parse_args()
    repeats = 1 if args.quick else args.repeats
    print(f"{os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), load average {_load()} (1/5/15 min); "
          f"{repeats} interleaved repetition(s), medians. The >= 1.7x target needs 2 idle cores; the column "
          "'other jobs (cores)' shows how much of the machine other jobs took during each timing.")
    t0 = time.perf_counter()
    executors, cluster = _start_executors(not args.no_dask)
    try:
        a = bench_disparity(executors, args.n_resamples, repeats)
        b = bench_grid(executors, repeats)
        bench_overhead(executors, args.tasks, repeats)
        bench_memory(args.memory_rows)
        workers_memory(executors)
    finally:
        if cluster is not None:
            executors["Dask LocalCluster(2)"].close()
            cluster.close()
    print(f"\nsummary: speed-up 2 vs 1 workers: disparity bootstrap {a['1 worker'] / a['2 workers']:.2f}x, "
          f"200-fit grid {b['1 worker'] / b['2 workers']:.2f}x (target >= 1.7x on 2 idle cores)"
          + ("" if args.no_dask else f"; Dask LocalCluster(2) against the 1-worker pool: "
             f"{a['1 worker'] / a['Dask LocalCluster(2)']:.2f}x and {b['1 worker'] / b['Dask LocalCluster(2)']:.2f}x")
          + f"; load average at the end {_load()}; total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
