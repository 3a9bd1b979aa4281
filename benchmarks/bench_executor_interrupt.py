"""Issue 26 benchmark: how fast a call with worker processes stops, against Dask in the same run.

A script (with the ``__main__`` guard) runs a long numpy resampling loop
(``me.paired_bootstrap_test(n_resamples=5_000_000)``) on ``executor=2`` or on a Dask
``LocalCluster(n_workers=2)`` (the baseline: the issue measured Dask stopping cleanly in 4.4 s
while the pool kept running for more than 580 s). Once both workers have run tasks for a while,
the script's process is sent

* SIGINT (Ctrl-C; the script exits 130 on KeyboardInterrupt, as the CLI does), or
* SIGKILL (the parent dies without any clean-up of its own),

and the benchmark measures the seconds until the script's process has exited and until no
process of its session (workers, resource tracker, Dask nannies) is running any more, and counts
the files left in the script's private temporary folder. Printed: one line per executor and
signal, and the pool's times as ratios to Dask's.

Processes are found by scanning /proc (session id, state); zombies (killed orphans the
container's init may not reap) hold no memory and count as gone.

Run: .venv/bin/python benchmarks/bench_executor_interrupt.py [--repeats 2] [--no-dask]
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys
import numpy as np
import mixedeval as me


def main(kind):
    rng = np.random.default_rng(0)
    x = rng.normal(size=2000)
    y = x + rng.normal(size=2000)
    if kind == "dask":
        from distributed import Client, LocalCluster
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
        executor = Client(cluster)
    else:
        executor = 2
    me.paired_bootstrap_test(x, y, n_resamples=5_000_000, random_state=1, progress=False, executor=executor)


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except KeyboardInterrupt:
        sys.exit(130)
"""


def _stat(pid: int) -> tuple[int, str, int, float] | None:
    """(session id, state, parent pid, CPU seconds) of a process, from /proc/<pid>/stat."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[3]), fields[0], int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks


def _live_in_session(sid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st[0] == sid and st[1] != "Z":
                out.append(int(name))
    return out


def _busy(sid: int, parent: int) -> bool:
    """Two processes of the session besides the parent have used 3 CPU seconds each."""
    others = [_stat(p) for p in _live_in_session(sid) if p != parent]
    return sum(1 for st in others if st is not None and st[3] > 3.0) >= 2


def one_run(kind: str, sig: int, workdir: Path) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(dir=workdir))
    script = workdir / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(script), kind], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not _busy(proc.pid, proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    t0 = time.monotonic()
    os.kill(proc.pid, sig)
    try:
        proc.wait(timeout=120)
        exited = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        exited = float("nan")
    while _live_in_session(proc.pid) and time.monotonic() - t0 < 120:
        time.sleep(0.05)
    gone = time.monotonic() - t0
    left = _live_in_session(proc.pid)
    for pid in left:  # still running after 120 s: stop them (this run's own processes)
        os.kill(pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    return {"exited": exited, "gone": gone if not left else float("nan"), "files": len(list(tmp.iterdir())),
            "status": proc.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-dask", action="store_true")
    args = ap.parse_args()
    kinds = ["processes"] + ([] if args.no_dask else ["dask"])
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; median of {args.repeats} runs")
    results: dict[tuple[str, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as work:
        for sig in (signal.SIGINT, signal.SIGKILL):
            for kind in kinds:
                runs = [one_run(kind, sig, Path(work)) for _ in range(args.repeats)]
                med = {k: statistics.median(r[k] for r in runs) for k in ("exited", "gone", "files")}
                results[(kind, sig.name)] = med
                print(f"{kind:>9} {sig.name:7}: process exited after {med['exited']:6.2f} s, every process of "
                      f"its session gone after {med['gone']:6.2f} s, files left in TMPDIR {med['files']:.0f}, "
                      f"exit statuses {[r['status'] for r in runs]}")
    if not args.no_dask:
        for sig in ("SIGINT", "SIGKILL"):
            p, d = results[("processes", sig)], results[("dask", sig)]
            print(f"{sig}: executor=2 / Dask LocalCluster(2): exit {p['exited'] / d['exited']:.2f}x, "
                  f"all processes gone {p['gone'] / d['gone']:.2f}x")


if __name__ == "__main__":
    main()
