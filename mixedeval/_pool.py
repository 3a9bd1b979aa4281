"""The local process pool behind ``executor=n`` and what happens when things go wrong (issue 26).

* **Interrupts and failures.** A call that stops before all its tasks are done (Ctrl-C, an error
  raised by a task, a dead worker) takes its pool with it: the worker processes are killed
  (SIGKILL: a task deep in R or BLAS would not notice a gentler signal for minutes), pending tasks
  are cancelled, and the next call starts a fresh pool instead of queueing behind abandoned tasks.
  Workers ignore SIGINT (Ctrl-C in a terminal reaches the whole process group): the parent
  decides, and the workers' tracebacks do not bury the one that matters.
* **Workers die with their parent**, however it dies (SIGKILL included): each worker asks the
  Linux kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``) and runs a watchdog
  thread polling ``os.getppid()`` (other systems, and the case where the parent died before the
  worker started). The kernel's signal is tied to the *thread* that started the process, so
  workers are always started from the main thread or from one long-lived daemon thread, never from
  a short-lived caller thread. Without workers, multiprocessing's resource tracker exits too.
* **Temporary files**: a pool's workers keep their temporary files (R's session folders) in
  the pool's own folder ``<tmp>/mixedeval-workers-<pid>-*``, removed when the pool is killed or
  at exit; after a SIGKILL of the parent, the next pool started on the machine removes the
  folders of parents that no longer exist.
* **Shared inputs leave no file behind**: they are written to an anonymous file (Linux
  ``O_TMPFILE`` in the temporary folder, else ``memfd_create``), which the workers open through
  ``/proc/<parent>/fd/<n>``; the kernel frees it when the parent closes it or dies. Elsewhere a
  named temporary file is used and removed when the call ends.
* **A script without the ``__main__`` guard**: a spawned worker re-imports the script, whose top
  level calls mixedeval with ``executor=n`` again; the worker exits there with a recognisable
  status and the parent raises :class:`mixedeval.errors.MainGuardError` showing the fix.
"""
from __future__ import annotations

import concurrent.futures as cf
import ctypes
import multiprocessing
import os
import pickle
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import cloudpickle

from .errors import MainGuardError, WorkerLostError

__all__ = ["Pool", "SharedBlob", "shared_value", "refuse_in_bootstrapping_child", "lost_worker_error",
           "NOTHING_LOST"]

#: exit status of a worker that found itself re-importing a script without the ``__main__`` guard
NO_GUARD_EXIT = 87
#: a pool's temporary folder (its workers' TMPDIR: R's session folders) is <tmp>/<prefix><parent pid>-<random>
_FOLDER_PREFIX = "mixedeval-workers-"
#: seconds between two looks of a worker's watchdog at its parent
WATCH_INTERVAL = 0.25

NOTHING_LOST = ("Nothing was lost: a call returns all its results or none, and the same call with the same "
                "random_state gives the same numbers.")

_GUARD_FIX = ("    if __name__ == \"__main__\":\n"
              "        main()  # the script's top-level code, moved into a function (or indented here)")

#: in a worker: the shared input of the current call, by key
_WORKER_SHARED: dict[str, Any] = {}


# ------------------------------------------------------------------------------------ in a worker
def _worker_init(parent_pid: int, tmpdir: str) -> None:
    """Initializer of every worker: die with the parent, leave Ctrl-C to the parent, keep R's
    (and Python's) temporary files in the pool's folder, which the parent removes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["TMPDIR"] = tmpdir  # read by R when it starts in this worker
    tempfile.tempdir = None
    _set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the kernel was asked
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True, name="mixedeval-parent-watch").start()


def _set_parent_death_signal() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl: the watchdog remains
        pass


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(WATCH_INTERVAL)
    os._exit(1)


def refuse_in_bootstrapping_child() -> None:
    """Called before worker processes are used: in a process that multiprocessing is still
    starting (it is re-importing the parent's script as ``__mp_main__``), the script has no
    ``__main__`` guard; exit quietly with :data:`NO_GUARD_EXIT` so the parent can say so."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise SystemExit(NO_GUARD_EXIT)


class SharedBlob:
    """A shared input, pickled once into an anonymous file the workers read once per call."""

    def __init__(self, value: Any) -> None:
        self.key = uuid.uuid4().hex
        self._fd, self.path, self._named = _anonymous_file()
        with open(self._fd, "wb", closefd=False) as fh:
            cloudpickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)  # closures too

    def token(self) -> _SharedToken:
        return _SharedToken(self.key, self.path)

    def close(self) -> None:
        os.close(self._fd)
        if self._named:
            os.unlink(self.path)


class _SharedToken:
    """What a task receives in place of a shared input (see :func:`shared_value`)."""

    def __init__(self, key: str, path: str) -> None:
        self.key, self.path = key, path


def _anonymous_file() -> tuple[int, str, bool]:
    """(fd, path the workers open, whether the path is a named file to remove)."""
    pid = os.getpid()
    if sys.platform.startswith("linux"):
        try:
            fd = os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR, 0o600)
            return fd, f"/proc/{pid}/fd/{fd}", False
        except (OSError, AttributeError):
            pass
        try:
            fd = os.memfd_create("mixedeval-shared", os.MFD_CLOEXEC)
            return fd, f"/proc/{pid}/fd/{fd}", False
        except (OSError, AttributeError):  # pragma: no cover - a kernel without memfd
            pass
    fd, path = tempfile.mkstemp(prefix="mixedeval-shared-", suffix=".pkl")  # pragma: no cover - not Linux
    return fd, path, True  # pragma: no cover


def shared_value(x: Any) -> Any:
    """The value of a shared input inside a task (tasks receive what :meth:`Runner.map` shipped);
    a worker keeps the current call's input only."""
    if isinstance(x, _SharedToken):
        if x.key not in _WORKER_SHARED:
            _WORKER_SHARED.clear()
            with open(x.path, "rb") as fh:
                _WORKER_SHARED[x.key] = pickle.load(fh)  # noqa: S301 - our own file, written just before
        return _WORKER_SHARED[x.key]
    return x


# ------------------------------------------------------------------------------------ in the parent
_SPAWN_QUEUE: queue.SimpleQueue = queue.SimpleQueue()
_SPAWNER: threading.Thread | None = None
_SPAWNER_LOCK = threading.Lock()


def _spawner_loop() -> None:
    while True:
        fn, box, done = _SPAWN_QUEUE.get()
        try:
            box.append((True, fn()))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box.append((False, exc))
        done.set()


def _in_long_lived_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` in the main thread if called there, else in one daemon thread that lives as long as
    the process (the parent-death signal follows the thread that started a worker)."""
    global _SPAWNER  # noqa: PLW0603 - one spawner thread per process
    if threading.current_thread() is threading.main_thread():
        return fn()
    with _SPAWNER_LOCK:
        if _SPAWNER is None or not _SPAWNER.is_alive():
            _SPAWNER = threading.Thread(target=_spawner_loop, daemon=True, name="mixedeval-spawner")
            _SPAWNER.start()
    box: list = []
    done = threading.Event()
    _SPAWN_QUEUE.put((fn, box, done))
    done.wait()
    ok, value = box[0]
    if not ok:
        raise value
    return value


class Pool(cf.ProcessPoolExecutor):
    """A spawn process pool whose workers die with the parent and which can be killed at once."""

    def __init__(self, n_workers: int) -> None:
        _sweep_stale_folders()
        self.tmpdir = tempfile.mkdtemp(prefix=f"{_FOLDER_PREFIX}{os.getpid()}-")
        super().__init__(n_workers, mp_context=multiprocessing.get_context("spawn"),
                         initializer=_worker_init, initargs=(os.getpid(), self.tmpdir))
        self.n_workers = n_workers
        self.calls = 0  # calls running on this pool now (mixedeval._executor keeps it at one at most)
        self.workers: list[multiprocessing.Process] = []  # every process started, for their exit codes

    def _spawn_process(self) -> None:
        before = set(self._processes)
        _in_long_lived_thread(super()._spawn_process)
        self.workers.extend(p for pid, p in self._processes.items() if pid not in before)

    def kill(self) -> None:
        """Cancel what is pending, SIGKILL every worker, reap them (a second Ctrl-C meanwhile
        does not leave them running)."""
        for _ in range(3):
            try:
                self.shutdown(wait=False, cancel_futures=True)
                for p in self.workers:
                    if p.exitcode is None:
                        p.kill()
                for p in self.workers:
                    p.join(timeout=5)
                shutil.rmtree(self.tmpdir, ignore_errors=True)
                return
            except KeyboardInterrupt:
                continue

    def exit_codes(self, timeout: float = 3.0) -> list[int | None]:
        deadline = time.monotonic() + timeout
        for p in self.workers:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        return [p.exitcode for p in self.workers]


def _sweep_stale_folders() -> None:
    """Remove the temporary folders of pools whose parent died without cleaning up (SIGKILL):
    ``mixedeval-workers-<pid>-*`` of this user whose process no longer exists."""
    base = tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(base) if n.startswith(_FOLDER_PREFIX)]
    except OSError:
        return
    for name in names:
        path = os.path.join(base, name)
        try:
            pid = int(name[len(_FOLDER_PREFIX):].split("-", 1)[0])
            if os.stat(path).st_uid != os.getuid() or _alive(pid):
                continue
        except (ValueError, OSError):
            continue
        shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lost_worker_error(pool: Pool, what: str) -> Exception:
    """The error for a pool that broke under a call (``what`` names the executor)."""
    codes = pool.exit_codes()
    if NO_GUARD_EXIT in codes:
        return MainGuardError(
            f"The worker processes of {what} stopped while starting: the script calls mixedeval with worker "
            "processes from its top level, without the `__main__` guard. Each worker starts a fresh Python "
            "that imports the script again (multiprocessing's 'spawn'), which would run the script's code "
            "once more in every worker. Put the script's top-level code under the guard:\n\n"
            f"{_GUARD_FIX}\n\n{NOTHING_LOST}")
    # the pool SIGTERMs the survivors of a broken pool: the culprit is another signal or an exit status
    signals = [-c for c in codes if c is not None and c < 0 and c != -signal.SIGTERM]
    statuses = [c for c in codes if c is not None and c > 0]
    if signals:
        sig = signal.Signals(signals[0]).name if signals[0] in signal.valid_signals() else f"signal {signals[0]}"
        how = {"SIGKILL": "was killed (SIGKILL: often the out-of-memory killer)",
               "SIGSEGV": "crashed (SIGSEGV: e.g. a deep recursion in R or a fault in compiled code)"}.get(
            sig, f"was stopped by {sig}")
    elif statuses:
        how = f"exited with status {statuses[0]} (its own error, if any, is printed above on the standard error)"
    else:
        how = "was stopped (SIGTERM)" if codes else "stopped"
    return WorkerLostError(
        f"A worker process of {what} {how} while running this call's tasks. {NOTHING_LOST} Run the call "
        "again (a fresh pool is started); if memory ran out, use fewer workers (executor=None runs in this "
        "process) or smaller chunks.")
