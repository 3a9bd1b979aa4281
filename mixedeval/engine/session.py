"""The single R session.

R is started lazily, on the first call that needs it; ``import mixedeval`` never starts it.
The helper library ``r/*.R`` is sourced once into its own R environment (:func:`helper_env`, a
child of R's global environment, so base R and the attached packages are found but nothing the
helpers define lands in the user's workspace, and no object of the workspace can shadow a
helper). Every access to R goes through :data:`lock` (R is single-threaded), and every helper is
invoked through the R function ``me_call`` (``r/engine.R``), which returns warnings, messages and
errors as data: an R error becomes :class:`mixedeval.RError` carrying R's message and the
session keeps working. Python code calls the helpers through the typed wrappers of
:mod:`mixedeval.engine._bridge` (one per helper), not by name.

Two process-level safety nets that embedded R lacks under rpy2 are restored here:

* **C stack limit.** rpy2 starts R with its C stack check off (``R_CStackLimit = -1``), so deep
  recursion (a formula with ~1,000 terms through lme4) overflows the stack and kills Python with
  SIGSEGV. Every call sets R's ``R_CStackStart``/``R_CStackLimit`` for the calling thread's own
  stack (see :func:`_stack_bounds`), so R raises its "C stack usage ... too close to the limit"
  error instead, and restores the previous values afterwards.
* **Ctrl-C.** During a call from the main thread, SIGINT sets R's ``R_interrupts_pending``; R
  notices it at its next interrupt check (well within a second in lme4's optimizer loop),
  ``me_call`` catches the ``interrupt`` condition, and Python raises :class:`KeyboardInterrupt`
  with the session still usable.

Starting R, the helper environment, :data:`lock` and the C stack limit are in
:mod:`mixedeval.engine._runtime` (below :mod:`.convert`, which needs the conversion helpers) and
re-exported here; this module holds the calls into R.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import RError, RNotAvailableError
from . import convert
from ._runtime import (  # noqa: F401 - the runtime's public names are also this module's (session.lock, ...)
    HELPER_ENV_NAME,
    INSTALL_HINT,
    _rlib,
    _stack_limit,
    _start,
    _state,
    helper,
    helper_env,
    lock,
    r_library_dir,
)

REQUIRED_R_PACKAGES = (
    "lme4",
    "lmerTest",
    "emmeans",
    "pbkrtest",
    "effectsize",
    "performance",
    "parameters",
    "insight",
    "car",
    "nlme",
    "Matrix",
    "glmmTMB",
    "ordinal",
)


# ------------------------------------------------------------------------------------ Ctrl-C
@contextlib.contextmanager
def _sigint_to_r() -> Iterator[list[bool]]:
    """Route SIGINT to R while the block runs; yields a flag list, ``[True]`` once SIGINT came.

    Python's default handler raises KeyboardInterrupt inside whichever rpy2 callback runs next,
    where cffi prints "Exception ignored" and R carries on. This handler instead sets R's
    ``R_interrupts_pending``; R acts on it at its next ``R_CheckUserInterrupt`` (right after
    the process-events callback in which this handler runs) by signalling an ``interrupt``
    condition. Only the main thread can own signal handlers, and only the outermost call
    installs one; SIGINT set to be ignored, to kill the process (SIG_DFL), or to a handler not set
    from Python is left alone.
    The pending flag is cleared on exit so that a late Ctrl-C cannot interrupt the next call.
    """
    fired = [False]
    previous = signal.getsignal(signal.SIGINT)
    if (threading.current_thread() is not threading.main_thread() or _state["sigint_depth"]
            or previous in (signal.SIG_IGN, signal.SIG_DFL, None)):
        yield fired
        return
    rlib = _rlib()

    def handler(signum: int, frame: Any) -> None:
        fired[0] = True
        rlib.R_interrupts_pending = 1

    signal.signal(signal.SIGINT, handler)
    _state["sigint_depth"] += 1
    try:
        yield fired
    finally:
        _state["sigint_depth"] -= 1
        signal.signal(signal.SIGINT, previous)
        rlib.R_interrupts_pending = 0


@contextlib.contextmanager
def console_echo(enabled: bool = True, stream: Any = None) -> Iterator[None]:
    """While the block runs, R's console output (e.g. Stan's sampling progress, ``refresh=``) is
    written to ``stream`` (default: ``sys.stderr``) instead of being dropped; nothing changes when
    ``enabled`` is false. Starts R if it was not running."""
    if not enabled:
        yield
        return
    import rpy2.rinterface_lib.callbacks as cb  # noqa: PLC0415 - rpy2 loads libR: R starts lazily

    with lock:
        _start()
    out = stream if stream is not None else sys.stderr
    previous = cb.consolewrite_print
    cb.consolewrite_print = lambda s: (out.write(s), out.flush())
    try:
        yield
    finally:
        cb.consolewrite_print = previous


def r_available() -> bool:
    """True when R and rpy2 can be started (starts R if it was not running)."""
    try:
        with lock:
            _start()
        return True
    except RNotAvailableError:
        return False


@dataclass(frozen=True)
class RCallResult:
    """What one R helper returned, with the warnings and messages it raised."""

    value: Any
    warnings: tuple[str, ...] = field(default_factory=tuple)
    warning_calls: tuple[str, ...] = field(default_factory=tuple)
    messages: tuple[str, ...] = field(default_factory=tuple)


def call(fname: str, /, **kwargs: Any) -> RCallResult:
    """Call the R helper ``fname`` with keyword arguments (passed with their exact R names).

    Arguments are converted column-wise by :mod:`mixedeval.engine.convert`; the returned
    named list is converted back to Python (data.frames to pandas, vectors to numpy).
    R errors raise :class:`mixedeval.RError` with R's message (deep recursion included: R's C
    stack check is on for the calling thread). Ctrl-C in the main thread interrupts R and raises
    :class:`KeyboardInterrupt`; the session stays usable.
    """
    with lock:
        ri = _start()
        with _stack_limit(), _sigint_to_r() as interrupted:
            try:
                args = convert.to_r_list(kwargs)
                out = _state["env"]["me_call"](ri.StrSexpVector([fname]), args)
                res = convert.from_r(out)
            except Exception as exc:  # rpy2 failure outside me_call's handlers (an interrupt there too)
                if interrupted[0]:
                    raise KeyboardInterrupt from None
                if isinstance(exc, RError):
                    raise
                raise RError(f"R call {fname} failed: {exc}", r_message=str(exc), call=fname) from exc
        if interrupted[0] or _truthy(res.get("interrupted")):
            raise KeyboardInterrupt
        warns = tuple(_as_str_list(res.get("warnings")))
        wcalls = tuple(_as_str_list(res.get("warning_calls")))
        msgs = tuple(_as_str_list(res.get("messages")))
        if not _truthy(res.get("ok")):
            msg = _as_str_list(res.get("error"))
            r_msg = msg[0] if msg else "unknown R error"
            err_call = _as_str_list(res.get("error_call"))
            raise RError(f"R error in {fname}: {r_msg}", r_message=r_msg, call=err_call[0] if err_call else None)
        return RCallResult(value=res.get("value"), warnings=warns, warning_calls=wcalls, messages=msgs)


def call_value(fname: str, /, **kwargs: Any) -> Any:
    """:func:`call` returning only the value."""
    return call(fname, **kwargs).value


def _as_str_list(x: Any) -> list[str]:
    if x is None:
        return []
    if isinstance(x, str):
        return [x]
    return [str(s) for s in list(x)]


def _truthy(x: Any) -> bool:
    if x is None:
        return False
    if isinstance(x, (bool, int)):
        return bool(x)
    try:
        return bool(list(x)[0])
    except TypeError:
        return bool(x)
