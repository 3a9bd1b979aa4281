"""Issue 26 points 1, 5 and 7: interrupts, dead workers and executor errors.

Real subprocesses run scripts written to ``tmp_path`` (each in its own session, with its own
TMPDIR): Ctrl-C (SIGINT to the process, to its process group as a terminal sends it, and twice)
stops the call within 10 s and leaves no process of the session and no temporary file; SIGKILL of
the parent takes its workers with it within seconds; a script without the ``__main__`` guard gets
a MainGuardError showing the fix. In this process: an interrupted call leaves the next one a clean
pool, a killed worker is a WorkerLostError and the pool recovers with the same numbers, worker
counts are checked, and the Dask cases run on a LocalCluster (closed Client, killed workers).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import mixedeval as me
from mixedeval import _executor
from mixedeval._executor import available_cpus, resolve_executor
from mixedeval.errors import DataError, ExecutorError, ExecutorWarning, MainGuardError, WorkerLostError

psutil = pytest.importorskip("psutil")

ROOT = Path(__file__).resolve().parents[1]

# a numpy loop on 2 workers that runs for minutes unless stopped
LOOP = """
import sys
import numpy as np
import mixedeval as me


def main():
    rng = np.random.default_rng(0)
    x = rng.normal(size=2000)
    y = x + rng.normal(size=2000)
    print("calling", flush=True)
    me.paired_bootstrap_test(x, y, n_resamples=5_000_000, random_state=1, progress=False, executor=2)
    print("finished", flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # as the CLI does: exit 130 (the process must then really exit)
        sys.exit(130)
"""

NO_GUARD = """
import numpy as np
import mixedeval as me

print("body runs", flush=True)
x = np.arange(50.0)
res = me.paired_bootstrap_test(x, x[::-1].copy(), n_resamples=2000, random_state=1, progress=False, executor=2)
print("finished", flush=True)
"""


def _start(tmp_path: Path, code: str) -> tuple[subprocess.Popen, Path]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(ROOT), MIXEDEVAL_QUIET="1")
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, tmp


def _session(sid: int) -> list:
    """Live (non-zombie) processes of session ``sid`` (a killed orphan may stay a zombie when the
    container's init does not reap it: it holds no memory and runs nothing)."""
    out = []
    for p in psutil.process_iter(["status"]):
        try:
            if os.getsid(p.pid) == sid and p.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return out


def _wait_gone(sid: int, timeout: float) -> list:
    deadline = time.monotonic() + timeout
    left = _session(sid)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _session(sid)
    return left


def _workers(pid: int) -> list:
    try:
        return [c for c in psutil.Process(pid).children() if "spawn_main" in " ".join(c.cmdline())]
    except psutil.Error:
        return []


def _wait_busy_workers(proc: subprocess.Popen, n: int = 2, timeout: float = 120.0, cpu: float = 2.0) -> list:
    """The ``n`` workers of ``proc`` once they have run tasks (``cpu`` seconds, beyond their start-up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        ws = _workers(proc.pid)
        try:
            if len(ws) >= n and all(sum(w.cpu_times()[:2]) > cpu for w in ws):
                return ws
        except psutil.Error:
            pass
        time.sleep(0.1)
    raise AssertionError("the workers never got busy")


def _cleanup(sid: int) -> None:
    for p in _session(sid):  # only if a test failed: the processes this test started
        try:
            p.kill()
        except psutil.Error:
            pass


@pytest.mark.parametrize("how", ["process", "process_group", "twice"])
def test_ctrl_c_stops_the_call_its_workers_and_the_process(tmp_path, how):
    proc, tmp = _start(tmp_path, LOOP)
    try:
        workers = _wait_busy_workers(proc)
        assert len(workers) == 2
        t0 = time.monotonic()
        if how == "process_group":  # a terminal's Ctrl-C
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
            if how == "twice":
                time.sleep(0.05)
                os.kill(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the process did not exit within 10 s of SIGINT ({how})")
        elapsed = time.monotonic() - t0
        left = _wait_gone(proc.pid, 5.0)
        assert not left, [(p.pid, p.cmdline()) for p in left]
        assert not any(psutil.pid_exists(w.pid) and w.status() != psutil.STATUS_ZOMBIE for w in workers)
        assert "finished" not in out and elapsed < 10
        if how != "twice":  # a second Ctrl-C may land while Python exits: its status is then Python's
            assert proc.returncode == 130, err[-3000:]
            assert "Traceback" not in err, err[-3000:]  # workers leave Ctrl-C to the parent: no tracebacks
        assert list(tmp.iterdir()) == []
    finally:
        _cleanup(proc.pid)


FIT_MANY = """
import sys
import mixedeval as me


def main():
    ter = me.datasets.load("kreutzer_ter")
    specs = [{"formula": "ter ~ system + (1|sentence_id) + (1|replication)", "name": f"fit_{i}",
              "optimizer": ["bobyqa", "Nelder_Mead"][i % 2]} for i in range(400)]
    me.fit_many(specs, ter, executor=2, progress=False)
    print("finished", flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
"""


def test_ctrl_c_stops_a_fit_many_with_r_in_the_workers(tmp_path):
    """The issue's case: R fits running in both workers when the terminal's Ctrl-C comes (400 fits: the
    call must still be running when the workers have used 6 s of CPU, also on a fast machine)."""
    proc, tmp = _start(tmp_path, FIT_MANY)
    try:
        workers = _wait_busy_workers(proc, timeout=180, cpu=6.0)  # R started, fits running
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail("the process did not exit within 10 s of SIGINT")
        assert time.monotonic() - t0 < 10 and "finished" not in out
        assert proc.returncode == 130 and "Traceback" not in err, err[-3000:]
        assert not _wait_gone(proc.pid, 5.0)
        assert not any(psutil.pid_exists(w.pid) and w.status() != psutil.STATUS_ZOMBIE for w in workers)
        assert list(tmp.iterdir()) == []
    finally:
        _cleanup(proc.pid)


def test_sigkill_of_the_parent_takes_its_workers(tmp_path):
    proc, tmp = _start(tmp_path, LOOP)
    try:
        workers = _wait_busy_workers(proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
        left = _wait_gone(proc.pid, 5.0)  # workers and multiprocessing's resource tracker
        assert not left, [(p.pid, p.cmdline()) for p in left]
        assert not any(psutil.pid_exists(w.pid) and w.status() != psutil.STATUS_ZOMBIE for w in workers)
        # the shared input was never a named file; the pool's folder (the workers' TMPDIR) stays ...
        assert [p.name.startswith(f"mixedeval-workers-{proc.pid}-") for p in tmp.iterdir()] == [True]
    finally:
        _cleanup(proc.pid)
    # ... until the next pool on the machine starts (and that one's is removed when it exits)
    nxt = subprocess.run([sys.executable, "-c", "from mixedeval._executor import resolve_executor\n"
                          "print(resolve_executor(2).map(abs, [(-1,), (-2,)]))"],
                         env=dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                         timeout=120)
    assert nxt.stdout.strip() == "[1, 2]", nxt.stderr
    assert list(tmp.iterdir()) == []


def test_script_without_main_guard_is_told_the_fix(tmp_path):
    proc, tmp = _start(tmp_path, NO_GUARD)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        _cleanup(proc.pid)
    assert proc.returncode == 1
    assert "MainGuardError" in err and 'if __name__ == "__main__":' in err and "main()" in err
    assert "Nothing was lost" in err and "BrokenProcessPool" not in err
    assert err.count("Traceback") == 1, err  # the workers exit quietly
    assert "finished" not in out and 1 <= out.count("body runs") <= 3
    assert not _wait_gone(proc.pid, 5.0)
    assert list(tmp.iterdir()) == []


# ------------------------------------------------------------------------------- in this process
def _pool_workers(n: int = 2, timeout: float = 60.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pool = _executor._POOLS.get(n)
        if pool is not None and len(pool.workers) >= n and all(p.is_alive() for p in pool.workers):
            return list(pool.workers)
        time.sleep(0.05)
    raise AssertionError("the pool's workers did not start")


def _after_tasks_start(action, delay: float = 1.5) -> threading.Thread:
    """Run ``action(workers)`` once the pool's workers run tasks (sleeps of 60 s)."""
    def go():
        workers = _pool_workers()
        time.sleep(delay)
        action(workers)

    th = threading.Thread(target=go, daemon=True)
    th.start()
    return th


def test_caught_interrupt_leaves_the_next_call_a_clean_pool():
    runner = resolve_executor(2)
    box: dict = {}

    def interrupt(workers):
        box["workers"] = workers
        box["t0"] = time.monotonic()
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    th = _after_tasks_start(interrupt)
    with pytest.raises(KeyboardInterrupt):
        runner.map(time.sleep, [(60,)] * 4)
    assert time.monotonic() - box["t0"] < 10
    th.join()
    assert not any(p.is_alive() for p in box["workers"])  # killed, not left to finish their sleeps
    t1 = time.monotonic()
    assert runner.map(abs, [(-1,), (-2,), (3,)]) == [1, 2, 3]  # a fresh pool, nothing queued before it
    assert time.monotonic() - t1 < 60


def test_killed_worker_is_a_worker_lost_error_and_the_pool_recovers():
    runner = resolve_executor(2)
    th = _after_tasks_start(lambda workers: os.kill(workers[0].pid, signal.SIGKILL))
    with pytest.raises(WorkerLostError) as info:
        runner.map(time.sleep, [(60,)] * 4)
    th.join()
    msg = str(info.value)
    assert "killed (SIGKILL" in msg and "Nothing was lost" in msg and "random_state" in msg
    assert isinstance(info.value, me.MixedEvalError) and "BrokenProcessPool" not in msg
    x = np.linspace(0.0, 1.0, 60)
    y = x + np.sin(np.arange(60.0)) / 5
    kw = dict(n_resamples=500, random_state=4, progress=False)
    here, there = me.paired_bootstrap_test(x, y, **kw), me.paired_bootstrap_test(x, y, executor=2, **kw)
    np.testing.assert_array_equal(there.null_distribution, here.null_distribution)


def test_task_error_stops_the_other_tasks():
    """A task's own error is raised as it is; the tasks still running are not left behind."""
    runner = resolve_executor(2)
    runner.map(abs, [(1,), (2,)])
    workers = _pool_workers()
    t0 = time.monotonic()
    with pytest.raises(TypeError):
        runner.map(time.sleep, [(60,), ("not a number",), (60,)])
    assert time.monotonic() - t0 < 30
    for p in workers:
        p.join(timeout=5)
    assert not any(p.is_alive() for p in workers)


def test_workers_started_from_a_short_lived_thread_outlive_it():
    """The kernel's parent-death signal follows the thread that started a worker: workers started
    for a call made in a thread that then ends must not die with that thread."""
    with _executor._POOLS_LOCK:
        old = _executor._POOLS.pop(2, None)
    if old is not None:
        old.kill()
    box: dict = {}
    th = threading.Thread(target=lambda: box.setdefault("out", resolve_executor(2).map(abs, [(-i,) for i in range(6)])))
    th.start()
    th.join(timeout=120)
    assert box["out"] == list(range(6))
    workers = list(_executor._POOLS[2].workers)
    assert workers and all(p.is_alive() for p in workers)
    time.sleep(1.0)  # a parent-death signal would have arrived by now
    assert all(p.is_alive() for p in workers)
    assert resolve_executor(2).map(abs, [(-7,)]) == [7]


def test_impossible_worker_counts_are_refused_and_too_many_warned_about():
    cpus = available_cpus()
    with pytest.raises(DataError, match=r"executor=1000000: .* refused \(at most"):
        resolve_executor(10**6)
    with pytest.raises(DataError, match="refused"):
        me.paired_bootstrap_test(np.ones(5), np.zeros(5), n_resamples=10, executor=np.int64(10**6))
    assert resolve_executor(np.int64(2)).n_workers == 2  # a numpy integer is a count too
    with pytest.warns(ExecutorWarning, match=f"starts {cpus + 1} worker processes on {cpus} CPUs"):
        resolve_executor(cpus + 1)  # only resolved: no process starts here
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resolve_executor("processes")
        resolve_executor(max(2, cpus))


# ------------------------------------------------------------------------------- Dask
@pytest.fixture()
def one_worker_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        yield cluster


def _paired(n=1000):
    rng = np.random.default_rng(0)
    x = rng.normal(size=n)
    return x, x + rng.normal(size=n)


def test_closed_dask_client_is_an_executor_error(one_worker_cluster):
    from distributed import Client

    x, y = _paired(50)
    client = Client(one_worker_cluster)
    runner = resolve_executor(client)
    client.close()
    for call in (lambda: runner.map(abs, [(1,)]), lambda: resolve_executor(client),
                 lambda: me.paired_bootstrap_test(x, y, n_resamples=10, executor=client)):
        with pytest.raises(ExecutorError, match="Dask Client passed as executor= is closed") as info:
            call()
        assert "Nothing was lost" in str(info.value)


def test_killed_dask_workers_are_a_worker_lost_error_and_a_rerun_gives_the_same_numbers(one_worker_cluster):
    from distributed import Client

    x, y = _paired()
    kw = dict(n_resamples=40_000, random_state=1, progress=False)
    with Client(one_worker_cluster) as client:
        def kill_all():
            deadline = time.monotonic() + 120
            while not any(client.processing().values()) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
            for pid in client.run(os.getpid).values():
                os.kill(pid, signal.SIGKILL)  # the nanny restarts it; the scattered input is gone

        th = threading.Thread(target=kill_all, daemon=True)
        th.start()
        with pytest.raises(WorkerLostError, match="Dask cluster lost this call's tasks") as info:
            me.paired_bootstrap_test(x, y, executor=client, **kw)
        th.join()
        assert "Nothing was lost" in str(info.value)
        client.wait_for_workers(1, timeout=60)
        small = dict(kw, n_resamples=2000)
        again = me.paired_bootstrap_test(x, y, executor=client, **small)
    here = me.paired_bootstrap_test(x, y, **small)
    np.testing.assert_array_equal(again.null_distribution, here.null_distribution)


def test_dask_client_closed_during_the_call_is_an_executor_error(one_worker_cluster):
    from distributed import Client

    x, y = _paired()
    client = Client(one_worker_cluster)

    def close_when_busy():
        deadline = time.monotonic() + 120
        while not any(client.processing().values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        client.close()

    th = threading.Thread(target=close_when_busy, daemon=True)
    th.start()
    with pytest.raises(ExecutorError, match="is closed") as info:
        me.paired_bootstrap_test(x, y, n_resamples=40_000, random_state=1, progress=False, executor=client)
    th.join()
    assert "Nothing was lost" in str(info.value)
