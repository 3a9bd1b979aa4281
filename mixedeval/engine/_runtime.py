"""The embedded R runtime: starting R, the helper environment, the lock and the C stack limit.

What :mod:`.session` (the calls into R) and :mod:`.convert` (the column-wise conversion, which
needs the conversion helpers of ``r/engine.R``) both stand on, so that neither imports the
other's importer. :mod:`.session` re-exports every name here (``session.lock``,
``session.helper_env``, ...); see its docstring for the C stack limit and Ctrl-C.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import RNotAvailableError

#: one re-entrant lock serialises all R access (R is single-threaded)
lock = threading.RLock()

_state: dict[str, Any] = {"started": False, "ri": None, "env": None, "main_stack": None, "sigint_depth": 0}

#: the name R prints for the helpers' environment (``environmentName``)
HELPER_ENV_NAME = "mixedeval"

#: share of a thread's stack R may use; R itself keeps the same 5% headroom (setup_Rmainloop) and
#: spends it on signalling the overflow error
_STACK_SHARE = 0.95
#: main-thread stack assumed when RLIMIT_STACK is unlimited (R itself would disable the check)
_FALLBACK_STACK = 8 * 1024 * 1024
#: R's "no limit" value of R_CStackLimit, (uintptr_t) -1
_NO_LIMIT = 2 ** (8 * ctypes.sizeof(ctypes.c_void_p)) - 1
#: R and glibc round ``__libc_stack_end`` up to a page differently, so R's start may lie a page
#: or two above the main thread's stack top as pthreads reports it (other threads' stacks are
#: mmap-ed at least 128 MiB lower, so this slack cannot misattribute them)
_START_SLACK = 64 * 1024
#: per-thread cache of (R_CStackStart, R_CStackLimit) for that thread's stack
_thread_stack = threading.local()

INSTALL_HINT = (
    "Install R and the R packages from Debian (as root): apt-get install -y r-base-core r-base-dev "
    "r-cran-lme4 r-cran-lmertest r-cran-emmeans r-cran-pbkrtest r-cran-effectsize r-cran-performance "
    "r-cran-parameters r-cran-insight r-cran-car r-cran-nlme r-cran-glmmtmb r-cran-ordinal; "
    "then pip install 'rpy2==3.5.17'. "
    "Or run `bash scripts/setup.sh` from the repository, which does all of it."
)


def r_library_dir() -> Path:
    """Folder holding the R helper library (``r/`` at the repository root).

    ``MIXEDEVAL_R_DIR`` overrides it; otherwise the ``r/`` folder beside the package (editable
    install, Docker image) or a packaged copy ``mixedeval/_r`` is used.
    """
    env = os.environ.get("MIXEDEVAL_R_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent
    for cand in (here.parent / "r", here / "_r"):
        if cand.is_dir() and any(cand.glob("*.R")):
            return cand
    raise RNotAvailableError(
        f"mixedeval's R helper library was not found (looked in {here.parent / 'r'} and {here / '_r'}); "
        "set MIXEDEVAL_R_DIR to the repository's r/ folder"
    )


def _ensure_r_home() -> None:
    if os.environ.get("R_HOME"):
        return
    r_bin = shutil.which("R")
    if r_bin is None:
        raise RNotAvailableError("R is not installed (no `R` on PATH). " + INSTALL_HINT)
    out = subprocess.run([r_bin, "RHOME"], capture_output=True, text=True, check=False)
    if out.returncode == 0 and out.stdout.strip():
        os.environ["R_HOME"] = out.stdout.strip()


def _start():
    """Start embedded R and source the helper library (once). Caller holds the lock."""
    if _state["started"]:
        return _state["ri"]
    _ensure_r_home()
    try:
        import rpy2.rinterface as ri  # noqa: PLC0415 - rpy2 loads libR: R starts lazily
        import rpy2.rinterface_lib.callbacks as cb  # noqa: PLC0415 - rpy2 loads libR: R starts lazily
    except Exception as exc:  # ImportError, or rpy2 failing to find/load libR
        raise RNotAvailableError(f"rpy2 could not be imported ({exc}). " + INSTALL_HINT) from exc
    # R's console output must never reach the user's terminal uncontrolled: everything a helper
    # says is captured by me_call; anything else (startup chatter) is dropped here.
    cb.consolewrite_print = lambda s: None
    cb.consolewrite_warnerror = lambda s: None
    ld_before = os.environ.get("LD_LIBRARY_PATH")
    ri.initr_simple()
    _restore_env("LD_LIBRARY_PATH", ld_before)
    _init_stack_limit()
    with _stack_limit():  # this thread's stack, which need not be the main thread's
        env = ri.baseenv["new.env"](parent=ri.globalenv)
        ri.baseenv["attr<-"](env, "name", ri.StrSexpVector([HELPER_ENV_NAME]))
        for path in sorted(r_library_dir().glob("*.R")):
            ri.baseenv["sys.source"](ri.StrSexpVector([str(path)]), envir=env)
    _state["env"] = env
    _state["ri"] = ri
    _state["started"] = True
    return ri


def _restore_env(name: str, value: str | None) -> None:
    """Undo rpy2's change of ``name`` in this process's environment once R has started.

    rpy2 prepends R's library directories to ``LD_LIBRARY_PATH`` while starting R. The loader
    of this process read the variable at startup, so the change only reaches child processes,
    where it breaks Python workers started later (executor worker processes, Dask's nannies:
    their Python extension modules load the system's libraries instead of their own)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def helper_env():
    """The R environment holding the helper library (starts R if needed).

    A child of R's global environment: helpers find base R and attached packages, but they are
    not in the global environment. R code written by hand (tests, benchmarks) reaches a helper
    as ``env[["me_fit_summary"]]`` or by assigning this environment to a name first.
    """
    with lock:
        _start()
        return _state["env"]


def helper(name: str):
    """The R function ``name`` from the helper environment (the caller holds :data:`lock`)."""
    _start()
    return _state["env"][name]


# ------------------------------------------------------------------------------ C stack limit
def _rlib() -> Any:
    from rpy2.rinterface_lib import openrlib  # noqa: PLC0415 - rpy2 loads libR: R starts lazily

    return openrlib.rlib


def _init_stack_limit() -> None:
    """Give embedded R the main thread's stack limit, as R's own ``Rf_initialize_R`` would.

    R computed ``R_CStackStart`` from ``__libc_stack_end`` (the main thread's stack top) before
    rpy2 switched the check off; the limit is RLIMIT_STACK (8 MiB when unlimited) times 0.95,
    R's own headroom. The values are installed now, so rpy2 used directly from the main thread
    is protected too, and :func:`_stack_limit` switches to another thread's stack per call.
    """
    rlib = _rlib()
    start = int(rlib.R_CStackStart)
    soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
    size = _FALLBACK_STACK if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)
    if start in (0, _NO_LIMIT):  # R did not know its stack start (not glibc): ask pthreads
        bounds = _pthread_stack() if threading.current_thread() is threading.main_thread() else None
        if bounds is None:
            return  # leave the check as rpy2 set it; nothing reliable to go by
        low, size = bounds
        start = low + size
    _state["main_stack"] = (start, int(_STACK_SHARE * size))
    rlib.R_CStackStart, rlib.R_CStackLimit = _state["main_stack"]


def _pthread_stack() -> tuple[int, int] | None:
    """(lowest address, size) of the calling thread's stack from glibc, or None elsewhere."""
    try:
        libc = ctypes.CDLL(None)
        libc.pthread_self.restype = ctypes.c_ulong
        libc.pthread_getattr_np.argtypes = [ctypes.c_ulong, ctypes.c_void_p]
        attr = ctypes.create_string_buffer(256)  # larger than pthread_attr_t on every glibc ABI
        if libc.pthread_getattr_np(libc.pthread_self(), attr) != 0:
            return None
        try:
            low, size = ctypes.c_void_p(), ctypes.c_size_t()
            if libc.pthread_attr_getstack(attr, ctypes.byref(low), ctypes.byref(size)) != 0 or not low.value:
                return None
            return low.value, size.value
        finally:
            libc.pthread_attr_destroy(attr)
    except (OSError, AttributeError):  # no glibc (macOS, musl without the _np call)
        return None


def _stack_bounds() -> tuple[int, int]:
    """``(R_CStackStart, R_CStackLimit)`` for the calling thread (cached per thread).

    R measures stack use as ``R_CStackStart - &local`` (stacks grow down on every platform R
    supports here), so the values must describe the stack the call actually runs on. The thread
    whose stack holds R's own start (the process's main thread) keeps R's values; any other
    thread gets its pthread stack's top and 95% of its size. Deciding by address rather than by
    ``threading.main_thread()`` stays right in a child forked from a worker thread. When a
    thread's stack cannot be determined the check is off for its calls (the old behaviour)
    rather than firing spuriously on a foreign stack.
    """
    cached = getattr(_thread_stack, "bounds", None)
    if cached is None:
        main = _state["main_stack"]
        bounds = _pthread_stack()
        if bounds is None:
            on_main = main is not None and threading.current_thread() is threading.main_thread()
            cached = main if on_main else (0, _NO_LIMIT)
        elif main is not None and bounds[0] <= main[0] <= bounds[0] + bounds[1] + _START_SLACK:
            cached = main
        else:
            cached = (bounds[0] + bounds[1], int(_STACK_SHARE * bounds[1]))
        _thread_stack.bounds = cached
    return cached


@contextlib.contextmanager
def _stack_limit() -> Iterator[None]:
    """Run the block with R's C stack check set for the calling thread; restore it after.

    Restoring matters: rpy2 used directly from the main thread after a call from a worker
    thread must see the main thread's values again. The caller holds :data:`lock`.
    """
    rlib = _rlib()
    saved = (int(rlib.R_CStackStart), int(rlib.R_CStackLimit))
    start, limit = _stack_bounds()
    if start:
        rlib.R_CStackStart, rlib.R_CStackLimit = start, limit
    else:
        rlib.R_CStackLimit = _NO_LIMIT
    try:
        yield
    finally:
        rlib.R_CStackStart, rlib.R_CStackLimit = saved
