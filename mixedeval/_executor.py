"""``executor``: where a loop of resampling replicates or R refits runs (glossary, README "Conventions").

One parameter, ``executor``, on every function with such a loop:

* ``None`` (default): in this process, as before;
* an int ``n`` or ``"processes"`` (one per CPU): a pool of ``n`` local worker processes, started
  with ``spawn`` (never ``fork``: R is not fork-safe once it runs); each worker starts its own R
  the first time a task needs it, and the pool is kept for the next call, so R starts once per
  worker and session;
* a ``dask.distributed.Client`` (a ``LocalCluster`` or a real cluster): tasks are submitted to it;
  large shared inputs are scattered to every worker once (``Client.scatter(broadcast=True)``); a
  worker that dies has its tasks recomputed by the scheduler (the tasks are pure functions of
  their arguments).

The numbers do not depend on the executor or on the number of workers: every task receives its
own seed derived from its index (never from the order in which workers finish), results are put
back in task order, and the resampling loops run their products with one BLAS thread wherever they
run (:func:`one_blas_thread`; OpenBLAS' last bits depend on the thread count: measured here, a
10 x 5,000 x 64 product differs between one and two threads). (Machines with other CPUs may still
differ in the last bits, as any two runs on them would.)

BLAS threads (issue 33): each worker process runs its tasks with ONE BLAS thread (threadpoolctl):
n workers each spinning up one OpenBLAS thread per core would put n x cores busy threads on the
machine's cores; a worker is the unit of parallelism. In the calling process, the resampling
loops' count-matrix products (small: bounded by :data:`mixedeval.resampling._draws.CHUNK_BYTES`)
also run with one thread: OpenBLAS' threads spin-wait between products, and when another process
holds a core they spin against it (10 systems x 5,000 items x 1,000 resamples: 0.7-1.9 s with two
threads on a busy two-core machine, 0.05-0.15 s with one; ``benchmarks/bench_bootstrap.py``).

Exceptions raised in a task (e.g. :class:`mixedeval.RError` with R's message) are raised in the
caller. Progress bars (tqdm) count finished tasks with every executor.

When things go wrong (issue 26; :mod:`mixedeval._pool`): a call with worker processes that stops
before all its tasks are done (Ctrl-C, a task's error, a dead worker) kills its pool, so nothing
keeps running and the next call starts a fresh pool; workers die with their parent; shared inputs
leave no file behind; lost workers, a closed Dask Client and a script without the ``__main__``
guard are :class:`mixedeval.errors.ExecutorError` subclasses that say what to do; more workers than
CPUs warn (:class:`mixedeval.errors.ExecutorWarning`), more than ``MAX_WORKERS_PER_CPU`` per CPU are
refused.
"""
from __future__ import annotations

import atexit
import contextlib
import numbers
import concurrent.futures as cf
import os
import shutil
import sys
import threading
import uuid
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import threadpoolctl
from threadpoolctl import ThreadpoolController, threadpool_info
from tqdm.auto import tqdm

from ._progress import bar_disabled
from . import _pool
from .errors import DataError, ExecutorError, ExecutorWarning, WorkerLostError

__all__ = ["Runner", "resolve_executor", "shared_value", "EXECUTOR_DOC"]

EXECUTOR_DOC = ("executor : where the loop runs: None (this process), an int or 'processes' (local worker "
                "processes, each with its own R), or a dask.distributed.Client; the numbers are the same with every "
                "executor")

_POOLS: dict[int, _pool.Pool] = {}
#: pools of calls that found the kept pool busy with another thread's call (see _ProcessRunner._live_pool)
_EXTRA_POOLS: set[_pool.Pool] = set()
_POOLS_LOCK = threading.Lock()
#: this process's threadpoolctl controller (see _controller)
_CONTROLLER: tuple[bool, ThreadpoolController] | None = None
#: more worker processes than this many per CPU are refused (a typo, not a plan)
MAX_WORKERS_PER_CPU = 64

shared_value = _pool.shared_value


def blas_threads() -> int | None:
    """Threads of numpy's BLAS in this process (None when threadpoolctl finds no BLAS)."""
    counts = [d["num_threads"] for d in threadpool_info() if d.get("user_api") == "blas"]
    return max(counts) if counts else None


def _r_started() -> bool:
    """Has this process started R (whose BLAS, loaded with libR, the controller must also see)?
    Read from rpy2's module if it was imported; nothing is imported here."""
    embedded = sys.modules.get("rpy2.rinterface_lib.embedded")
    return bool(embedded is not None and embedded.isinitialized())


def _controller() -> ThreadpoolController:
    """This process's threadpoolctl controller: it finds the loaded BLAS libraries by scanning the
    process's shared objects (about 2 ms, which a new ``threadpool_limits`` repeats on every task),
    so it is made once, and again after R has started (libR's BLAS) or after new modules were
    imported (scipy.linalg loads scipy's own OpenBLAS: a controller made before it would leave that
    library at one thread per core)."""
    global _CONTROLLER  # noqa: PLW0603 - one controller per (worker) process
    key = (_r_started(), len(sys.modules))
    if _CONTROLLER is None or _CONTROLLER[0] != key:
        _CONTROLLER = (key, ThreadpoolController())
    return _CONTROLLER[1]


_ONE_THREAD_LOCK = threading.Lock()
#: [depth, limiter]: how many callers (threads of this process) are inside one_blas_thread, and the
#: threadpoolctl limiter that restores the original thread counts when the last one leaves
_ONE_THREAD_STATE: list[Any] = [0, None]


@contextlib.contextmanager
def one_blas_thread():
    """Run the block with numpy's BLAS (OpenBLAS) limited to one thread, then restore the
    original count. The limit is process-wide (OpenBLAS has one thread count per process), so
    concurrent callers in several Python threads share it: the first one in sets it, the last one
    out restores it (nesting works too). About 3 microseconds."""
    with _ONE_THREAD_LOCK:
        if _ONE_THREAD_STATE[0] == 0:
            _release_blas_control()
            _ONE_THREAD_STATE[1] = _controller().limit(limits=1, user_api="blas")
            _release_blas_control()
        _ONE_THREAD_STATE[0] += 1
    try:
        yield
    finally:
        with _ONE_THREAD_LOCK:
            _ONE_THREAD_STATE[0] -= 1
            if _ONE_THREAD_STATE[0] == 0:
                limiter, _ONE_THREAD_STATE[1] = _ONE_THREAD_STATE[1], None
                _release_blas_control()
                limiter.restore_original_limits()
                _release_blas_control()


def _release_blas_control() -> None:
    """threadpoolctl >= 3.6 lets one Python thread at a time "control" OpenBLAS (a set from
    another thread is silently ignored) and hands control back only when a limiter used as a
    context manager exits in that thread. one_blas_thread sets and restores under its own lock,
    possibly from two different threads (first in, last out), so it releases the control before
    and after each change (public ``clear_controlling_thread(force=True)``; absent in older
    versions, where every set applies)."""
    clear = getattr(getattr(threadpoolctl, "OpenBLASController", None), "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


#: BLAS threads of a task in a worker process (module docstring, "BLAS threads")
WORKER_BLAS_THREADS = 1


def _call(fn: Callable[..., Any], args: tuple, shared: Any, threads: int | None = None) -> Any:
    """Run one task in a worker with ``threads`` BLAS threads (:data:`WORKER_BLAS_THREADS`):
    one per worker, so that n workers do not each start one OpenBLAS thread per core (Dask's
    nannies start workers with OPENBLAS_NUM_THREADS=1 for the same reason)."""
    if threads is None:
        return fn(*args) if shared is None else fn(*args, shared_value(shared))
    with _controller().limit(limits=threads, user_api="blas"):
        return fn(*args) if shared is None else fn(*args, shared_value(shared))


class Runner:
    """Runs ``fn(*args[, shared])`` for every ``args`` of a task list and returns the results in
    task order (see the module docstring)."""

    name = "in-process"
    n_workers = 1

    def map(self, fn: Callable[..., Any], tasks: Sequence[tuple], *, shared: Any = None, progress: bool = False,
            desc: str = "") -> list[Any]:
        bar = _bar(len(tasks), progress, desc)
        out = []
        for args in tasks:
            out.append(fn(*args) if shared is None else fn(*args, shared))
            bar.update(1)
        bar.close()
        return out


def _usable(pool: _pool.Pool) -> bool:
    """Neither broken (a worker died) nor shut down (killed after a failed call)."""
    return not (getattr(pool, "_broken", False) or getattr(pool, "_shutdown_thread", False))


class _ProcessRunner(Runner):
    name = "processes"

    def __init__(self, n_workers: int) -> None:
        self.n_workers = n_workers

    def _live_pool(self) -> _pool.Pool:
        """The pool of this call. One call at a time uses a pool: the kept pool of ``n_workers``
        when it is idle, else (another thread's call runs on it) a pool of this call's own, so
        that a call stopped by its task's error, which kills its pool, never takes another
        call's workers with it (issue 33)."""
        with _POOLS_LOCK:
            pool = _POOLS.get(self.n_workers)
            if pool is not None and pool.calls > 0:  # busy with another thread's call
                pool = _pool.Pool(self.n_workers)
                _EXTRA_POOLS.add(pool)
            elif pool is None or not _usable(pool):
                if pool is not None:  # broken while idle (a worker killed between calls)
                    pool.kill()
                pool = _pool.Pool(self.n_workers)
                _POOLS[self.n_workers] = pool
            pool.calls += 1
            return pool

    def _release(self, pool: _pool.Pool) -> None:
        """After a call: the kept pool stays for the next call; a call's own pool becomes the kept
        one when there is none, else it is shut down (its workers exit when idle)."""
        with _POOLS_LOCK:
            pool.calls -= 1
            if pool not in _EXTRA_POOLS:
                return
            _EXTRA_POOLS.discard(pool)
            if pool.calls == 0 and self.n_workers not in _POOLS and _usable(pool):
                _POOLS[self.n_workers] = pool
                return
        pool.shutdown(wait=False)
        shutil.rmtree(pool.tmpdir, ignore_errors=True)

    def _discard(self, pool: _pool.Pool) -> None:
        with _POOLS_LOCK:
            if _POOLS.get(self.n_workers) is pool:
                del _POOLS[self.n_workers]
        pool.kill()

    def map(self, fn, tasks, *, shared=None, progress=False, desc=""):
        _pool.refuse_in_bootstrapping_child()
        pool = self._live_pool()
        try:
            return self._run(pool, fn, tasks, shared, progress, desc)
        finally:
            self._release(pool)

    def _run(self, pool, fn, tasks, shared, progress, desc):
        blob, futures = None, {}
        try:
            blob = None if shared is None else _pool.SharedBlob(shared)
            token = None if blob is None else blob.token()
            threads = WORKER_BLAS_THREADS if blas_threads() is not None else None
            for i, args in enumerate(tasks):
                futures[pool.submit(_call, fn, tuple(args), token, threads)] = i
            # fn and args go through pickle: module-level functions and plain values; closures
            # (the resampling loops' block functions) travel as the shared input
            return _collect(futures, cf.as_completed, len(tasks), progress, desc)
        except cf.process.BrokenProcessPool:
            self._discard(pool)
            raise _pool.lost_worker_error(pool, f"executor={self.n_workers}") from None
        except BaseException:  # Ctrl-C, a task's error: nothing may keep running for this call
            if not all(f.done() for f in futures):
                self._discard(pool)
            raise
        finally:
            if blob is not None:
                blob.close()


class _DaskRunner(Runner):
    name = "dask"

    def __init__(self, client: Any) -> None:
        _check_client(client)
        self.client = client
        self.n_workers = max(1, len(client.scheduler_info().get("workers", {})))

    def map(self, fn, tasks, *, shared=None, progress=False, desc=""):
        from distributed import as_completed  # noqa: PLC0415 - optional dependency, only with a Client

        client = self.client
        _check_client(client)
        call_id = uuid.uuid4().hex[:12]
        futures = {}
        try:
            scattered = None if shared is None else client.scatter(shared, broadcast=True, hash=False)
            threads = WORKER_BLAS_THREADS if blas_threads() is not None else None
            for i, args in enumerate(tasks):
                fut = client.submit(_call, fn, tuple(args), scattered, threads, key=f"mixedeval-{call_id}-{i}",
                                    pure=False, retries=0)
                futures[fut] = i
            return _collect(futures, as_completed, len(tasks), progress, desc)
        except _dask_lost_errors() as exc:
            if not _client_running(client):  # closed while the call ran: its futures were cancelled
                raise _closed_client_error() from None
            raise WorkerLostError(
                f"The Dask cluster lost this call's tasks or shared data ({type(exc).__name__}): its workers "
                f"died or were restarted while the call ran. {_pool.NOTHING_LOST} Run the call again once the "
                "cluster has workers (client.wait_for_workers(n)); if they ran out of memory, give them more "
                "(LocalCluster(memory_limit=...)) or use fewer threads per worker; client.get_worker_logs() "
                "says why they stopped.") from None
        finally:
            if futures and _client_running(client):
                client.cancel(list(futures))


def _dask_lost_errors() -> tuple[type[BaseException], ...]:
    """Dask's exceptions for tasks or data lost with their workers (cancelled futures, a task
    that killed its workers too often)."""
    from distributed import KilledWorker  # noqa: PLC0415 - optional dependency, only with a Client

    return (cf.CancelledError, KilledWorker)


def _client_running(client: Any) -> bool:
    return getattr(client, "status", "running") not in ("closed", "closing") and \
        getattr(client, "scheduler", True) is not None


def _closed_client_error() -> ExecutorError:
    return ExecutorError(
        "The Dask Client passed as executor= is closed (client.close() was called, its `with` block ended, "
        f"or its cluster shut down). {_pool.NOTHING_LOST} Pass a running Client (e.g. "
        "Client(LocalCluster(n_workers=2))) or executor=None to run in this process.")


def _check_client(client: Any) -> None:
    if not _client_running(client):
        raise _closed_client_error()


def _collect(futures: dict, as_completed: Callable, n: int, progress: bool, desc: str) -> list[Any]:
    out: list[Any] = [None] * n
    bar = _bar(n, progress, desc)
    try:
        for fut in as_completed(list(futures)):
            out[futures[fut]] = fut.result()  # re-raises the task's exception here
            bar.update(1)
    finally:
        bar.close()
    return out


def _bar(total: int, progress: bool, desc: str):
    return tqdm(total=total, desc=desc or "tasks", unit="task", leave=False, disable=bar_disabled(progress))


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _process_runner(n: int, spelled: str) -> Runner:
    """The runner for ``n`` local workers: an impossible count refused, more workers than CPUs
    warned about (each worker is a whole Python with its own R)."""
    cpus = available_cpus()
    limit = MAX_WORKERS_PER_CPU * cpus
    if n > limit:
        raise DataError(f"executor={spelled}: {n} worker processes on {cpus} CPUs is refused (at most {limit}, "
                        f"{MAX_WORKERS_PER_CPU} per CPU); each worker is a whole Python process with its own R. "
                        "Use executor='processes' (one per CPU) or a dask.distributed.Client for a cluster")
    if n > cpus:
        warnings.warn(ExecutorWarning(
            f"executor={spelled} starts {n} worker processes on {cpus} CPUs: each is a whole Python process with "
            "its own R (about 150-550 MB once R runs), and workers beyond the CPUs only compete for them "
            "(the results are the same). executor='processes' starts one per CPU."), stacklevel=3)
    if n == 1 and spelled != "'processes'":  # executor=1: this process; 'processes' keeps its pool
        return Runner()
    _pool.refuse_in_bootstrapping_child()
    return _ProcessRunner(n)


def resolve_executor(executor: Any) -> Runner:
    """The :class:`Runner` for an ``executor`` argument (see the module docstring)."""
    if executor is None:
        return Runner()
    if isinstance(executor, Runner):
        return executor
    if isinstance(executor, str):
        if executor != "processes":
            raise DataError(f"executor {executor!r} is not understood: use None, an int (worker processes), "
                            "'processes' (one per CPU) or a dask.distributed.Client")
        return _process_runner(available_cpus(), "'processes'")
    if isinstance(executor, numbers.Integral) and not isinstance(executor, bool):
        if executor < 1:
            raise DataError(f"executor={executor}: the number of worker processes must be at least 1")
        return _process_runner(int(executor), str(executor))
    if type(executor).__name__ == "Client" and hasattr(executor, "submit") and hasattr(executor, "scatter"):
        return _DaskRunner(executor)
    raise DataError(f"executor of type {type(executor).__name__} is not understood: use None, an int, 'processes' "
                    "or a dask.distributed.Client")


@atexit.register
def _shutdown_pools() -> None:
    """At exit: idle pools stop; a pool still running tasks (a caller thread abandoned) is killed."""
    for pool in [*_POOLS.values(), *_EXTRA_POOLS]:
        pool.kill()
    _POOLS.clear()
    _EXTRA_POOLS.clear()
