"""The single R session.

R is started lazily, on the first call that needs it; ``import mixedeval`` never starts it.
The helper library ``r/*.R`` is sourced once into R's global environment. Every access to R
goes through :data:`lock` (R is single-threaded), and every helper is invoked through the R
function ``me_call`` (``r/engine.R``), which returns warnings, messages and errors as data: an
R error becomes :class:`mixedeval.RError` carrying R's message and the session keeps working.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RError, RNotAvailableError

#: one re-entrant lock serialises all R access (R is single-threaded)
lock = threading.RLock()

_state: dict[str, Any] = {"started": False, "ri": None}

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
)

INSTALL_HINT = (
    "Install R and the R packages from Debian (as root): apt-get install -y r-base-core r-base-dev "
    "r-cran-lme4 r-cran-lmertest r-cran-emmeans r-cran-pbkrtest r-cran-effectsize r-cran-performance "
    "r-cran-parameters r-cran-insight r-cran-car r-cran-nlme; then pip install 'rpy2==3.5.17'. "
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
        import rpy2.rinterface as ri  # noqa: PLC0415
        import rpy2.rinterface_lib.callbacks as cb  # noqa: PLC0415
    except Exception as exc:  # ImportError, or rpy2 failing to find/load libR
        raise RNotAvailableError(f"rpy2 could not be imported ({exc}). " + INSTALL_HINT) from exc
    # R's console output must never reach the user's terminal uncontrolled: everything a helper
    # says is captured by me_call; anything else (startup chatter) is dropped here.
    cb.consolewrite_print = lambda s: None
    cb.consolewrite_warnerror = lambda s: None
    ri.initr_simple()
    for path in sorted(r_library_dir().glob("*.R")):
        ri.baseenv["source"](ri.StrSexpVector([str(path)]), local=ri.globalenv)
    _state["ri"] = ri
    _state["started"] = True
    return ri


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
    R errors raise :class:`mixedeval.RError` with R's message.
    """
    from . import convert  # noqa: PLC0415

    with lock:
        ri = _start()
        try:
            args = convert.to_r_list(kwargs)
            out = ri.globalenv["me_call"](ri.StrSexpVector([fname]), args)
            res = convert.from_r(out)
        except RError:
            raise
        except Exception as exc:  # rpy2 failure outside me_call's handlers
            raise RError(f"R call {fname} failed: {exc}", r_message=str(exc), call=fname) from exc
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


def versions(packages: tuple[str, ...] = REQUIRED_R_PACKAGES) -> dict[str, Any]:
    """R version and installed versions of ``packages`` (None when missing)."""
    v = call_value("me_versions", packages=list(packages))
    pk = _as_str_list(v["packages"])
    vs = v["versions"]
    vs = [vs] if isinstance(vs, str) or vs is None else list(vs)
    return {
        "r_version": v["r_version"],
        "r_version_string": v["r_version_string"],
        "packages": {p: (None if x is None or x != x else str(x)) for p, x in zip(pk, vs)},
    }


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
