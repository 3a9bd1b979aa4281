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
"""
from __future__ import annotations

import atexit
import concurrent.futures as cf
import multiprocessing
import os
import pickle
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import cloudpickle
from threadpoolctl import ThreadpoolController, threadpool_info
from tqdm.auto import tqdm

from .errors import DataError

__all__ = ["Runner", "resolve_executor", "shared_value", "EXECUTOR_DOC"]

EXECUTOR_DOC = ("executor : where the loop runs: None (this process), an int or 'processes' (local worker "
                "processes, each with its own R), or a dask.distributed.Client; the numbers are the same with every "
                "executor")

_POOLS: dict[int, cf.ProcessPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
#: in a worker: shared inputs loaded from their files, by path
_WORKER_SHARED: dict[str, Any] = {}
#: this process's threadpoolctl controller (see _controller)
_CONTROLLER: tuple[bool, ThreadpoolController] | None = None


class _SharedFile:
    """A shared input written once to a file; workers load it once and keep it (by path)."""

    def __init__(self, path: str) -> None:
        self.path = path


def shared_value(x: Any) -> Any:
    """The value of a shared input inside a task (tasks receive what :meth:`Runner.map` shipped)."""
    if isinstance(x, _SharedFile):
        if x.path not in _WORKER_SHARED:
            with open(x.path, "rb") as fh:
                _WORKER_SHARED[x.path] = pickle.load(fh)  # noqa: S301 - our own file, written just before
        return _WORKER_SHARED[x.path]
    return x


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

    def _pool(self) -> cf.ProcessPoolExecutor:
        with _POOLS_LOCK:
            pool = _POOLS.get(self.n_workers)
            if pool is None or getattr(pool, "_broken", False):
                pool = cf.ProcessPoolExecutor(self.n_workers, mp_context=multiprocessing.get_context("spawn"))
                _POOLS[self.n_workers] = pool
            return pool

    def map(self, fn, tasks, *, shared=None, progress=False, desc=""):
        path = None
        if shared is not None:
            fd, path = tempfile.mkstemp(prefix="mixedeval-shared-", suffix=".pkl")
            with os.fdopen(fd, "wb") as fh:
                cloudpickle.dump(shared, fh, protocol=pickle.HIGHEST_PROTOCOL)  # closures too
        try:
            token = None if path is None else _SharedFile(path)
            pool = self._pool()
            threads = blas_threads()
            futures = {pool.submit(_call, fn, tuple(args), token, threads): i for i, args in enumerate(tasks)}
            # fn and args go through pickle: module-level functions and plain values; closures
            # (the resampling loops' block functions) travel as the shared input
            return _collect(futures, cf.as_completed, len(tasks), progress, desc)
        finally:
            if path is not None:
                os.unlink(path)


class _DaskRunner(Runner):
    name = "dask"

    def __init__(self, client: Any) -> None:
        self.client = client
        self.n_workers = max(1, len(client.scheduler_info().get("workers", {})))

    def map(self, fn, tasks, *, shared=None, progress=False, desc=""):
        from distributed import as_completed  # noqa: PLC0415 - optional dependency, only with a Client

        client = self.client
        scattered = None if shared is None else client.scatter(shared, broadcast=True, hash=False)
        call_id = uuid.uuid4().hex[:12]
        futures = {}
        threads = blas_threads()
        for i, args in enumerate(tasks):
            fut = client.submit(_call, fn, tuple(args), scattered, threads, key=f"mixedeval-{call_id}-{i}",
                                pure=False, retries=0)
            futures[fut] = i
        try:
            return _collect(futures, as_completed, len(tasks), progress, desc)
        finally:
            client.cancel(list(futures))


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
    return tqdm(total=total, desc=desc or "tasks", unit="task", leave=False, disable=not progress)


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
        return _ProcessRunner(os.cpu_count() or 1)
    if isinstance(executor, (int,)) and not isinstance(executor, bool):
        if executor < 1:
            raise DataError(f"executor={executor}: the number of worker processes must be at least 1")
        return Runner() if executor == 1 else _ProcessRunner(int(executor))
    if type(executor).__name__ == "Client" and hasattr(executor, "submit") and hasattr(executor, "scatter"):
        return _DaskRunner(executor)
    raise DataError(f"executor of type {type(executor).__name__} is not understood: use None, an int, 'processes' "
                    "or a dask.distributed.Client")


@atexit.register
def _shutdown_pools() -> None:
    for pool in list(_POOLS.values()):
        pool.shutdown(wait=False, cancel_futures=True)
    _POOLS.clear()
