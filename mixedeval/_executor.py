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
back in task order, and tasks run numpy's BLAS with the caller's thread count (threadpoolctl),
on which OpenBLAS' last bits depend. (Machines with other CPUs may still differ in the last bits,
as any two runs on them would.) Exceptions raised in a task (e.g. :class:`mixedeval.RError` with R's
message) are raised in the caller. Progress bars (tqdm) count finished tasks with every executor.

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
import numbers
import concurrent.futures as cf
import os
import sys
import threading
import uuid
import warnings
from collections.abc import Callable, Sequence
from typing import Any

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
    so it is made once, and once more after R has started and loaded its own BLAS."""
    global _CONTROLLER  # noqa: PLW0603 - one controller per (worker) process
    key = _r_started()
    if _CONTROLLER is None or _CONTROLLER[0] != key:
        _CONTROLLER = (key, ThreadpoolController())
    return _CONTROLLER[1]


def _call(fn: Callable[..., Any], args: tuple, shared: Any, threads: int | None = None) -> Any:
    """Run one task in a worker with the caller's BLAS thread count: OpenBLAS splits a product
    differently with another count, which moves last bits (Dask's nannies start workers with
    OPENBLAS_NUM_THREADS=1, and worker processes inherit that once a LocalCluster exists)."""
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


class _ProcessRunner(Runner):
    name = "processes"

    def __init__(self, n_workers: int) -> None:
        self.n_workers = n_workers

    def _live_pool(self) -> _pool.Pool:
        with _POOLS_LOCK:
            pool = _POOLS.get(self.n_workers)
            if pool is None or getattr(pool, "_broken", False) or getattr(pool, "_shutdown_thread", False):
                if pool is not None:  # broken while idle (a worker killed between calls)
                    pool.kill()
                pool = _pool.Pool(self.n_workers)
                _POOLS[self.n_workers] = pool
            return pool

    def _discard(self, pool: _pool.Pool) -> None:
        with _POOLS_LOCK:
            if _POOLS.get(self.n_workers) is pool:
                del _POOLS[self.n_workers]
        pool.kill()

    def map(self, fn, tasks, *, shared=None, progress=False, desc=""):
        _pool.refuse_in_bootstrapping_child()
        blob, pool, futures = None, self._live_pool(), {}
        try:
            blob = None if shared is None else _pool.SharedBlob(shared)
            token = None if blob is None else blob.token()
            threads = blas_threads()
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
            threads = blas_threads()
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
    for pool in list(_POOLS.values()):
        pool.kill()
    _POOLS.clear()
