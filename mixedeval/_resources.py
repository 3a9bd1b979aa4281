"""Resource guards: estimate the memory a step needs before allocating it, and refuse with a
:class:`~mixedeval.errors.DataError` (estimate, limit and fix in the message) above a limit.

The limit
---------
Default: half of the memory available at the moment of the check (``MemAvailable`` of
``/proc/meminfo``, lowered to what a cgroup memory limit leaves, if any). It is set, in this
order of precedence, by :func:`set_memory_limit` (for the running process), by the environment
variable ``MIXEDEVAL_MEMORY_LIMIT``, or by the default. Both take bytes (``8000000000``), a
size (``"8GB"``, ``"512MiB"``, ``"1.5G"``: kB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB
and K/M/G/T powers of 1024), a share of the available memory (``"50%"``), or ``"none"`` to
switch the guard off. :func:`get_memory_limit` returns the limit in bytes as it stands now.

Estimates are upper bounds of what the step allocates at its peak (the arrays kept plus the
working copies the computation makes), so a refused step would really have needed about that
much; a step under the limit may still fail if other programs take the memory meanwhile, which
is why the public resampling functions also turn numpy's ``MemoryError`` into a ``DataError``
with the same advice (:func:`memory_errors`).

This module imports only the standard library (``import mixedeval`` stays cheap and R-free).
"""
from __future__ import annotations

import ctypes
import functools
import math
import numbers
import os
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .errors import DataError

ENV_VAR = "MIXEDEVAL_MEMORY_LIMIT"
DEFAULT_FRACTION = 0.5

#: Copies of the n x p double fixed-effect model matrix that R holds at the peak of a
#: ``lmerTest::lmer`` fit plus ``summary(m, ddf = "Satterthwaite")`` (see model_matrix_bytes).
MODEL_MATRIX_COPIES = 6
#: Copies of a p x p double matrix per variance parameter at that peak (lmerTest's numerical
#: Jacobian of vcov(beta), see model_matrix_bytes).
SQUARE_COPIES_PER_VARPAR = 16

_setting: Any = None  # None: not set in this process; else a parsed limit (see _parse_limit)

_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4, "pb": 1000**5,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4, "pib": 1024**5,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")
_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")
_OFF = {"none", "off", "unlimited", "inf", "infinite", "no"}
_FORMS = ("bytes (e.g. 8000000000), a size such as '8GB', '512MiB' or '1.5G', a share of the available "
          "memory such as '50%', or 'none' to switch the guard off")


# ---------------------------------------------------------------------------------------------
# sizes
# ---------------------------------------------------------------------------------------------

def format_bytes(n: float) -> str:
    """Human-readable size in powers of 1024: ``'14.9 GiB'``, ``'512.0 MiB'``, ``'900 B'``."""
    n = float(n)
    if not math.isfinite(n):
        return "unlimited"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def format_count(n: int) -> str:
    """``1000000000`` -> ``'1,000,000,000'``."""
    return f"{int(n):,}"


def _meminfo(path: str = "/proc/meminfo") -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(path, encoding="ascii") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[key.strip()] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    except OSError:
        pass
    return out


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_headroom() -> int | None:
    """Bytes a cgroup memory limit still allows this process (v2 or v1), or None without one."""
    best: int | None = None
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit = _read_int(limit_file)
        if limit is None or limit >= 2**60:  # "max" or the "no limit" sentinel of cgroup v1
            continue
        usage = _read_int(usage_file) or 0
        room = max(0, limit - usage)
        best = room if best is None else min(best, room)
    return best


def available_memory() -> int:
    """Bytes of memory available to this process now: ``MemAvailable`` of ``/proc/meminfo``
    (Linux), lowered to the headroom of a cgroup memory limit if one is set (containers);
    elsewhere ``os.sysconf`` (available pages, else physical pages) or, on Windows,
    ``GlobalMemoryStatusEx``. 0 when it cannot be determined (then only an absolute limit
    applies)."""
    info = _meminfo()
    avail: int | None = info.get("MemAvailable")
    if avail is None and "MemFree" in info:  # kernels before 3.14
        avail = info["MemFree"] + info.get("Cached", 0) + info.get("Buffers", 0)
    if avail is None:
        avail = _sysconf_memory()
    room = _cgroup_headroom()
    if room is not None:
        avail = room if avail is None else min(avail, room)
    return int(avail or 0)


def _sysconf_memory() -> int | None:
    for pages in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
        try:
            n, size = os.sysconf(pages), os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            continue
        if n > 0 and size > 0:
            return int(n) * int(size)
    if os.name == "nt":  # pragma: no cover - Windows only
        try:
            class _Status(ctypes.Structure):
                _fields_ = [("dwLength", ctypes.c_ulong), ("dwMemoryLoad", ctypes.c_ulong),
                            ("ullTotalPhys", ctypes.c_ulonglong), ("ullAvailPhys", ctypes.c_ulonglong),
                            ("ullTotalPageFile", ctypes.c_ulonglong), ("ullAvailPageFile", ctypes.c_ulonglong),
                            ("ullTotalVirtual", ctypes.c_ulonglong), ("ullAvailVirtual", ctypes.c_ulonglong),
                            ("ullAvailExtendedVirtual", ctypes.c_ulonglong)]

            st = _Status()
            st.dwLength = ctypes.sizeof(_Status)
            if ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(st)):  # type: ignore[attr-defined]
                return int(st.ullAvailPhys)
        except Exception:  # noqa: BLE001
            return None
    return None


# ---------------------------------------------------------------------------------------------
# the limit
# ---------------------------------------------------------------------------------------------

def _parse_limit(value: Any, source: str) -> tuple[str, float]:
    """('bytes', n), ('fraction', f) or ('off', inf) from an int, a size string, a percentage
    or 'none'."""
    if isinstance(value, bool):
        raise DataError(f"{source} must be {_FORMS}; got {value!r}")
    if isinstance(value, numbers.Integral):
        if value <= 0:
            raise DataError(f"{source} must be a positive number of bytes, got {value!r}; {_FORMS}")
        if int(value) > _MAX_BYTES:
            raise _too_large(source, value, "bytes", "none")
        return ("bytes", float(int(value)))
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isinf(value) and value > 0:
            return ("off", math.inf)
        if math.isfinite(value) and value > _MAX_BYTES:
            raise _too_large(source, value, "bytes", "none")
        if math.isfinite(value) and value >= 1:
            return ("bytes", float(int(value)))
        raise DataError(f"{source} must be a positive number of bytes, got {value!r}; {_FORMS}")
    if not isinstance(value, str):
        raise DataError(f"{source} must be {_FORMS}; got {value!r}")
    text = value.strip()
    if text.lower() in _OFF:
        return ("off", math.inf)
    m = _PERCENT.match(text)
    if m:
        pct = float(m.group(1))
        if not 0 < pct <= 100:
            raise DataError(f"{source} must be a share between 0% and 100% of the available memory, got {value!r}")
        return ("fraction", pct / 100.0)
    m = _SIZE.match(text)
    if m and m.group(2).lower() in _UNITS:
        n = float(m.group(1)) * _UNITS[m.group(2).lower()]
        if n > _MAX_BYTES:  # '1e400GB' is inf: not a size (say 'none' to switch the guard off)
            raise _too_large(source, value, "bytes", "none")
        if n >= 1:
            return ("bytes", float(int(n)))
    raise DataError(f"{source} must be {_FORMS}; got {value!r}")


#: the largest limits taken as numbers (an exabyte; a million years): beyond them a value is a typo
#: or an overflow (10**400, '1e400GB' is inf), and the way to say "no limit" is 'none'
_MAX_BYTES = 1e18
_MAX_SECONDS = 1e6 * 365.25 * 86400


def _too_large(source: str, value: Any, unit: str, off: str) -> DataError:
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    top = "1e18 bytes (an exabyte)" if unit == "bytes" else "a million years"
    return DataError(f"{source} {shown} is too large to be a limit (the largest is {top}); to switch the guard off "
                     f"pass {off!r}")


def set_memory_limit(limit: int | str | None) -> None:
    """Set the memory limit of mixedeval's resource guards for this process.

    ``limit``: bytes (int), a size string (``"8GB"``, ``"512MiB"``, ``"1.5G"``; kB/MB/GB/TB are
    powers of 1000, KiB/MiB/GiB/TiB and K/M/G/T powers of 1024), a share of the memory available
    at the time of each check (``"25%"``), ``"none"`` to switch the guard off, or ``None`` to
    restore the default: the environment variable ``MIXEDEVAL_MEMORY_LIMIT`` if set, else half
    of the available memory.

    Steps whose estimated peak memory exceeds the limit (bootstrap and permutation output
    arrays, the fixed-effect model matrix of a mixed model) raise :class:`mixedeval.DataError`
    before allocating anything, with the estimate and what to change.
    """
    global _setting
    _setting = None if limit is None else _parse_limit(limit, "the memory limit")


def _current() -> tuple[tuple[str, float], str]:
    """The limit in force and a description of where it comes from."""
    if _setting is not None:
        return _setting, "given to me.set_memory_limit"
    env = os.environ.get(ENV_VAR)
    if env is not None and env.strip():
        return _parse_limit(env, f"the environment variable {ENV_VAR}"), f"from {ENV_VAR}={env.strip()!r}"
    return ("fraction", DEFAULT_FRACTION), "the default"


def _resolve() -> tuple[float, str]:
    """(limit in bytes, inf when off or unknown; description for messages)."""
    (kind, value), origin = _current()
    change = f"change it with me.set_memory_limit or {ENV_VAR}"
    if kind == "off":
        return math.inf, f"none ({origin})"
    if kind == "bytes":
        return value, f"{format_bytes(value)} ({origin}; {change})"
    avail = available_memory()
    share = "half" if value == 0.5 else f"{value * 100:g}%"
    if avail <= 0:
        return math.inf, f"{share} of the available memory, which could not be determined ({origin})"
    return value * avail, (f"{format_bytes(value * avail)} ({share} of the {format_bytes(avail)} of memory "
                           f"available now, {origin}; {change})")


def get_memory_limit() -> int | None:
    """The memory limit of mixedeval's resource guards now, in bytes; None when the guard is
    off (``set_memory_limit("none")``) or the available memory cannot be determined under a
    relative limit. See :func:`set_memory_limit`."""
    limit, _ = _resolve()
    return None if math.isinf(limit) else int(limit)


def check_memory(n_bytes: float, what: str, fix: str, detail: str = "") -> None:
    """Raise :class:`DataError` when ``n_bytes`` (an estimate of the peak memory of a step)
    exceeds the memory limit: "<what> need about <size> (<detail>), above mixedeval's memory
    limit of <limit> (<where it comes from>; change it with me.set_memory_limit or
    MIXEDEVAL_MEMORY_LIMIT). <fix>"."""
    limit, desc = _resolve()
    if n_bytes <= limit:
        return
    paren = f" ({detail})" if detail else ""
    raise DataError(
        f"{what} need about {format_bytes(n_bytes)}{paren}, above mixedeval's memory limit of {desc}. {fix}"
    )


F = TypeVar("F", bound=Callable[..., Any])


def memory_errors(fix: str) -> Callable[[F], F]:
    """Decorator: a ``MemoryError`` raised inside becomes a :class:`DataError` naming the
    function, numpy's message (which states the size it could not allocate) and ``fix``."""
    def deco(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except MemoryError as exc:
                msg = " ".join(str(exc).split()) or "no detail"
                raise DataError(f"{func.__qualname__} ran out of memory ({msg}). {fix}") from exc
        return wrapper  # type: ignore[return-value]
    return deco


# ---------------------------------------------------------------------------------------------
# the fixed-effect model matrix of a mixed model
# ---------------------------------------------------------------------------------------------

def model_matrix_bytes(n_rows: int, n_columns: int, copies: float = MODEL_MATRIX_COPIES,
                       square_copies: float = SQUARE_COPIES_PER_VARPAR * 2) -> int:
    """Peak bytes R allocates for a fixed-effect model matrix of ``n_rows`` x ``n_columns``
    doubles: ``8 * (copies * n * p + square_copies * p * p)``.

    Measured with R 4.2.2, lme4 1.1.31 and lmerTest 3.1.3 on the fit mixedeval makes
    (``lmerTest::lmer(y ~ f + (1 | g))`` then ``summary(m, ddf = "Satterthwaite")``; f a factor
    with p levels, 50 groups g): the peak of R's heap (``gc(reset = TRUE)`` before, the "max used"
    columns of ``gc()`` after) minus that of the same fit without f, cross-checked with the
    maximum resident size of ``/usr/bin/time -v``:

    ==========  =====  ==========  ==========  ===============================  ==========
    n rows      p      X = 8 n p   8 p^2       peak above the fit without f     estimate
    ==========  =====  ==========  ==========  ===============================  ==========
    8,000       250    15.3 MiB    0.5 MiB     120 MiB (RSS 115 MiB)            107 MiB
    24,000      500    91.6 MiB    1.9 MiB     604 MiB                          610 MiB
    2,000       1,000  15.3 MiB    7.6 MiB     352 MiB (RSS 360 MiB)            336 MiB
    3,000       1,500  34.3 MiB    17.2 MiB    710 MiB (RSS 764 MiB)            755 MiB
    ==========  =====  ==========  ==========  ===============================  ==========

    * n x p part, ``copies`` = 6: ``model.matrix``; the QR of lme4's rank check
      (``chkRank.drop.cols``); ``X`` and its weighted copy ``V`` in the ``merPredD`` object;
      ``crossprod`` temporaries. Going from 6,000 to 24,000 rows at p = 500 adds 5.1-6.1 bytes
      per byte of X.
    * p x p part, ``square_copies`` = 16 per variance parameter (k = 2 for one random intercept
      plus the residual): lmerTest's numerical Jacobian of vcov(beta) with respect to the k
      variance parameters (``numDeriv::jacobian`` with Richardson extrapolation, r = 4: a
      p^2 x 4 x k array and its shifted copies) plus vcov itself. A random slope (k = 4) added
      59 MiB at p = 500 (15.5 p^2 doubles per extra parameter).

    At the size of the issue (a 5,000-level fixed factor on 7,000 rows, X = 267 MiB) the whole
    fit could not be timed here (its time grows like p^3: p = 1,000 took 100 s, p = 1,500 six
    minutes), but ``lme4::lFormula`` alone (model frame, ``model.matrix`` and the rank check's
    QR, before any optimization) peaked 1,318 MiB above the base: 4.9 copies of X, in line with
    ``copies`` = 6 once ``merPredD`` holds X and V. The estimate for that design is 7.5 GiB,
    80% of it the p x p part. For 50,000 levels on 100,000 rows, where R was OOM-killed, one
    copy of X alone is 40 GB and the estimate 880 GB.
    """
    n, p = int(n_rows), int(n_columns)
    return int(8 * (copies * n * p + square_copies * p * p))


def _is_factor(series: Any) -> bool:
    import pandas as pd  # noqa: PLC0415 - light: me.set_memory_limit must not import pandas

    dt = series.dtype
    return (isinstance(dt, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dt)
            or not pd.api.types.is_numeric_dtype(dt))


def _n_levels(series: Any) -> int:
    """Levels R would see after ``model.frame(drop.unused.levels = TRUE)``: the distinct
    non-missing values (2 for a logical)."""
    import pandas as pd  # noqa: PLC0415 - light: me.set_memory_limit must not import pandas

    if pd.api.types.is_bool_dtype(series.dtype):
        return 2
    return int(series.nunique(dropna=True))


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses (call arguments)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == sep and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


_CALL = re.compile(r"^\s*([A-Za-z.][A-Za-z0-9._]*)\s*\((.*)\)\s*$", re.S)
_FACTOR_FUNCS = {"factor", "as.factor", "ordered", "as.ordered"}
_BASIS_FUNCS = {"poly", "ns", "bs", "splines::ns", "splines::bs"}


def _variable(name: str, frame: Any) -> tuple[str, int]:
    """('factor', n_levels) or ('numeric', n_columns) of a term variable: a column of
    ``frame`` or a call such as factor(x), poly(x, 3), log(x)."""
    key = name.strip()
    if key.startswith("`") and key.endswith("`"):
        key = key[1:-1]
    if key in frame.columns:
        s = frame[key]
        return ("factor", _n_levels(s)) if _is_factor(s) else ("numeric", 1)
    m = _CALL.match(key)
    if m:
        func, args = m.group(1), [a.strip() for a in _split_top(m.group(2), ",")]
        inner = args[0].strip("`") if args else ""
        if func in _FACTOR_FUNCS and inner in frame.columns:
            return ("factor", _n_levels(frame[inner]))
        if func in _BASIS_FUNCS and len(args) > 1:
            for a in args[1:]:
                v = a.split("=", 1)[-1].strip()
                if v.isdigit():
                    return ("numeric", max(1, int(v)))
    return ("numeric", 1)


def fixed_effect_columns(frame: Any, terms: Sequence[Sequence[str]], intercept: bool = True) -> int:
    """Number of columns of R's ``model.matrix`` for the fixed-effect ``terms`` (treatment
    contrasts), each term a list of variable names forming an interaction, e.g.
    ``[["system"], ["src_length"], ["system", "src_length"]]`` for ``system * src_length``.

    ``frame``: a pandas DataFrame; categorical, boolean and non-numeric columns are factors
    (levels = distinct values present, as after ``drop.unused.levels``), numeric columns one
    column each; ``factor(x)``, ``poly(x, k)`` and other calls are understood as R codes them.

    Columns = intercept + sum over terms of prod over the term's variables of (n_levels - 1
    for a factor coded by contrasts, n_levels for a factor coded by indicators, the width of a
    numeric variable). As in R (``TermCode`` in ``stats/src/model.c``), a factor F of term T is
    coded by contrasts when T without F is empty or contained in a preceding term (terms ordered
    by degree), else by indicators; without an intercept the first factor of the first term with
    a factor is coded by indicators. In the usual hierarchical formula this is
    1 + sum_T prod (n_levels - 1 or 1). Rank-deficient columns are counted (R allocates them
    before dropping them).
    """
    norm = [tuple(dict.fromkeys(str(v) for v in t)) for t in terms]
    norm = [t for t in dict.fromkeys(norm) if t]
    order = list(dict.fromkeys(v for t in norm for v in t))  # variable order of first appearance
    info = {v: _variable(v, frame) for v in order}
    norm.sort(key=len)  # R orders terms by degree (stable)
    total = 1 if intercept else 0
    first_factor_done = intercept
    for j, t in enumerate(norm):
        width = 1
        factors_in_t = [v for v in order if v in t and info[v][0] == "factor" and info[v][1] > 1]
        full_first = None
        if not first_factor_done and factors_in_t:
            full_first, first_factor_done = factors_in_t[0], True
        for v in t:
            kind, k = info[v]
            if kind == "numeric":
                width *= k
                continue
            rest = set(t) - {v}
            contrasts = not rest or any(rest <= set(u) for u in norm[:j])
            width *= k if (v == full_first or not contrasts) else max(k - 1, 0)
        total += width
    return int(total)


def _parsed(formula: Any, frame: Any):
    """``formula`` itself: a :class:`mixedeval.data._formula.ParsedFormula` (the data layer
    parses; this module sits below it and imports none of it)."""
    if isinstance(formula, str) or not hasattr(formula, "fixed_expanded"):
        raise TypeError("pass a parsed formula (mixedeval.parse_formula(formula, columns)), not "
                        f"{type(formula).__name__}")
    return formula


def fixed_terms(formula: Any, frame: Any) -> tuple[list[list[str]], bool]:
    """Fixed-effect terms of an lme4 formula as lists of variables, and whether it has an
    intercept (R's expansion, from :func:`mixedeval.data._formula.parse_formula`):
    ``"y ~ a * b + (1|g)"`` -> ``([["a"], ["b"], ["a", "b"]], True)``."""
    p = _parsed(formula, frame)
    return [list(t) for t in p.fixed_expanded], p.intercept


def variance_parameters(formula: Any, frame: Any) -> int:
    """Number of variance parameters of an lme4 formula: for every bar term ``(expr | g)``
    with q model-matrix columns, q (q + 1) / 2 (``||``: q), plus the residual variance."""
    k = 1
    for terms, icpt, uncorrelated in _parsed(formula, frame).random_expanded:
        q = fixed_effect_columns(frame, terms, icpt) if (terms or icpt) else 0
        k += q if uncorrelated else q * (q + 1) // 2
    return k


def check_fixed_effects_memory(frame: Any, terms: Any, *, intercept: bool = True,
                               n_variance_parameters: int | None = None) -> None:
    """Refuse (:class:`DataError`) a mixed model whose fixed-effect model matrix would make R
    allocate more than the memory limit (estimate: :func:`model_matrix_bytes` with the
    columns of :func:`fixed_effect_columns` on ``len(frame)`` rows).

    ``terms``: the fixed-effect terms (lists of variable names), or the parsed model formula
    (:func:`mixedeval.data._formula.parse_formula`: terms, intercept and the number of variance
    parameters are read from it).
    ``n_variance_parameters``: variance parameters of the model including the residual
    (default: from the formula, or 2 = one random intercept).
    """
    if isinstance(terms, Sequence) and not isinstance(terms, str):
        term_list = [list(t) for t in terms]
    else:  # a parsed formula
        parsed = _parsed(terms, frame)
        if parsed.verbatim:  # allow_r_code=True text that the parser could not read
            return
        term_list, intercept = [list(t) for t in parsed.fixed_expanded], parsed.intercept
        if n_variance_parameters is None:
            n_variance_parameters = variance_parameters(parsed, frame)
    k = 2 if n_variance_parameters is None else max(1, int(n_variance_parameters))
    n = len(frame)
    p = fixed_effect_columns(frame, term_list, intercept)
    need = model_matrix_bytes(n, p, square_copies=SQUARE_COPIES_PER_VARPAR * k)
    if need <= 8 * 2**20:  # below 8 MiB: not worth reading /proc
        return
    big: dict[str, int] = {}
    for t in term_list:
        for v in t:
            kind, lev = _variable(v, frame)
            if kind == "factor" and lev > 50:
                big[v] = lev
    many = ", ".join(f"{v} has {format_count(lev)} levels" for v, lev in big.items())
    name = max(big, key=big.get).strip("`") if big else "item"
    check_memory(
        need,
        "the fixed-effect model matrix and R's working copies of it",
        f"Use a random effect instead of a fixed one for a factor with many levels, e.g. (1|{name}) instead of "
        f"{name}, or fit fewer rows.",
        detail=(f"{format_count(n)} rows x {format_count(p)} columns x 8 bytes = {format_bytes(8 * n * p)} "
                f"per copy, about {MODEL_MATRIX_COPIES} copies in lme4/lmerTest, plus p x p matrices for "
                f"{k} variance parameters{'; ' + many if many else ''}"),
    )


# ---------------------------------------------------------------------------------------------
# the time limit of loops (simulations, resamples, refits, fits)
# ---------------------------------------------------------------------------------------------

TIME_ENV_VAR = "MIXEDEVAL_TIME_LIMIT"
#: default time limit of one guarded loop: 24 hours
DEFAULT_TIME_LIMIT = 24 * 3600.0

_time_setting: float | None = None  # None: not set in this process; else seconds (inf: off)

_TIME_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hour": 3600.0,
               "hours": 3600.0, "d": 86400.0, "day": 86400.0, "days": 86400.0}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")
_TIME_FORMS = ("seconds (e.g. 3600), a duration such as '90s', '30min', '2h' or '1d', or 'none' to switch the "
               "guard off")


def format_seconds(s: float) -> str:
    """``42.0`` -> ``'42 s'``, ``5400`` -> ``'1.5 h'``, ``3e7`` -> ``'347.2 days'``, ``3e9`` -> ``'95.1 years'``."""
    s = float(s)
    if not math.isfinite(s):
        return "unlimited"
    if s < 120:
        return f"{s:.3g} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    if s < 2 * 86400:
        return f"{s / 3600:.1f} h"
    if s < 2 * 365.25 * 86400:
        return f"{s / 86400:.1f} days"
    return f"{s / (365.25 * 86400):.3g} years"


def _parse_duration(value: Any, source: str) -> float:
    """Seconds (inf when off) from a number of seconds, a duration string or 'none'."""
    if isinstance(value, bool):
        raise DataError(f"{source} must be {_TIME_FORMS}; got {value!r}")
    if isinstance(value, numbers.Integral) and int(value) > _MAX_SECONDS:  # 10**400 does not fit a float
        raise _too_large(source, value, "seconds", "none")
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isfinite(v) and v > _MAX_SECONDS:
            raise _too_large(source, value, "seconds", "none")
        if v > 0:
            return v
        raise DataError(f"{source} must be a positive number of seconds, got {value!r}; {_TIME_FORMS}")
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _OFF:
            return math.inf
        m = _DURATION.match(text)
        if m and m.group(2).lower() in _TIME_UNITS and float(m.group(1)) > 0:
            v = float(m.group(1)) * _TIME_UNITS[m.group(2).lower()]
            if v > _MAX_SECONDS:  # '1e400' is inf: not a duration (say 'none' to switch the guard off)
                raise _too_large(source, value, "seconds", "none")
            return v
    raise DataError(f"{source} must be {_TIME_FORMS}; got {value!r}")


def set_time_limit(limit: float | str | None) -> None:
    """Set the time limit of mixedeval's loop guards for this process.

    ``limit``: seconds (a number), a duration (``"90s"``, ``"30min"``, ``"2h"``, ``"1d"``),
    ``"none"`` to switch the guard off, or ``None`` to restore the default: the environment
    variable ``MIXEDEVAL_TIME_LIMIT`` if set, else 24 hours.

    Loops over simulations, resamples, refits or fits (power, diagnostics, parametric
    bootstraps, fit_many, ...) time their first block and raise :class:`mixedeval.DataError`
    when the whole loop would take longer than the limit, with the estimate and what to change.
    """
    global _time_setting
    _time_setting = None if limit is None else _parse_duration(limit, "the time limit")


def _time_resolve() -> tuple[float, str]:
    """(limit in seconds, inf when off; description for messages)."""
    change = f"change it with me.set_time_limit or {TIME_ENV_VAR}"
    if _time_setting is not None:
        limit, origin = _time_setting, "given to me.set_time_limit"
    else:
        env = os.environ.get(TIME_ENV_VAR)
        if env is not None and env.strip():
            limit = _parse_duration(env, f"the environment variable {TIME_ENV_VAR}")
            origin = f"from {TIME_ENV_VAR}={env.strip()!r}"
        else:
            limit, origin = DEFAULT_TIME_LIMIT, "the default"
    if math.isinf(limit):
        return limit, f"none ({origin})"
    return limit, f"{format_seconds(limit)} ({origin}; {change})"


def get_time_limit() -> float | None:
    """The time limit of mixedeval's loop guards now, in seconds; None when the guard is off
    (``set_time_limit("none")``). See :func:`set_time_limit`."""
    limit, _ = _time_resolve()
    return None if math.isinf(limit) else float(limit)


def check_time(seconds: float, what: str, fix: str, detail: str = "") -> None:
    """Raise :class:`DataError` when ``seconds`` (an estimate of the duration of a loop) exceeds
    the time limit: "<what> would take about <duration> (<detail>), above mixedeval's time limit
    of <limit> (<where it comes from>; change it with me.set_time_limit or MIXEDEVAL_TIME_LIMIT).
    <fix>"."""
    limit, desc = _time_resolve()
    if seconds <= limit:
        return
    paren = f" ({detail})" if detail else ""
    raise DataError(f"{what} would take about {format_seconds(seconds)}{paren}, above mixedeval's time limit of "
                    f"{desc}. {fix}")


class LoopGuard:
    """The guard of one loop of ``total`` units (simulations, resamples, refits, fits) run in blocks.

    Before the loop, :meth:`check_memory` refuses what is known analytically (``bytes_per_unit``
    x ``total`` + ``fixed_bytes``: the arrays the loop keeps or allocates at once). After the first
    block, :meth:`block_done` extrapolates the measured time linearly to the whole loop
    (``elapsed / done * total`` spread over ``workers``, times ``repeats`` when the same loop runs
    several times, e.g. once per size of a power curve) and refuses above the time limit. Only the
    first block is judged, so a loop is never stopped half-way through.

    ``what`` names the loop ("power (lrt)"), ``count`` the argument and its value as the user gave
    it ("n_sim=1,000,000"), ``unit`` the units ("simulations"), ``fix`` what to change.
    """

    def __init__(self, what: str, total: int, *, count: str, unit: str, fix: str, workers: int = 1,
                 repeats: int = 1) -> None:
        self.what, self.total, self.count, self.unit, self.fix = what, int(total), count, unit, fix
        self.workers, self.repeats = max(1, int(workers)), max(1, int(repeats))
        self.judged = False
        self.start()

    def start(self) -> None:
        """(Re)start the clock: call it just before the first block when setup came in between."""
        self._t0 = time.perf_counter()

    def check_memory(self, bytes_per_unit: float, fixed_bytes: float = 0.0, detail: str = "") -> None:
        """Refuse before the loop when ``total`` units of ``bytes_per_unit`` do not fit the memory limit."""
        need = float(bytes_per_unit) * self.total + float(fixed_bytes)
        if need <= 8 * 2**20:  # below 8 MiB: not worth reading /proc
            return
        check_memory(need, self._subject(), self.fix,
                     detail or f"{format_count(self.total)} {self.unit} x {format_bytes(bytes_per_unit)} each")

    def _subject(self) -> str:
        """'the simulations of power (lrt) (n_sim=1,000,000)'."""
        return f"the {self.unit} of {self.what} ({self.count})"

    def check_matrix(self, n_rows: int, copies: int, columns: str) -> None:
        """:meth:`check_memory` of an ``n_rows`` x ``total`` matrix of doubles held ``copies`` times."""
        per_copy = 8.0 * n_rows * self.total
        self.check_memory(8.0 * copies * n_rows,
                          detail=(f"{format_count(n_rows)} observations x {format_count(self.total)} {columns} x 8 "
                                  f"bytes = {format_bytes(per_copy)} per copy, about {copies} copies"))

    def estimate(self, done: int) -> float:
        """Seconds the whole loop (all repeats) would take, from the ``done`` units timed so far."""
        elapsed = time.perf_counter() - self._t0
        rest = max(0, self.total - int(done)) / self.workers
        return (elapsed + elapsed / max(1, int(done)) * rest) * self.repeats

    def block_done(self, done: int) -> None:
        """After a block (``done`` units so far): the first time, refuse when the extrapolation
        exceeds the time limit; later calls do nothing."""
        if self.judged:
            return
        self.judged = True
        if done >= self.total and self.repeats == 1:
            return
        took = time.perf_counter() - self._t0
        spread = f" on {self.workers} workers" if self.workers > 1 else ""
        times = f", {self.repeats} times" if self.repeats > 1 else ""
        check_time(self.estimate(done), self._subject(), self.fix,
                   detail=(f"{format_count(self.total)} {self.unit}{spread}{times}; the first "
                           f"{format_count(done)} took {format_seconds(took)}"))

    def map(self, runner: Any, fn: Callable[..., Any], tasks: Sequence[tuple], *, first_units: int,
            shared: Any = None, progress: bool = False, desc: str = "") -> list[Any]:
        """``runner.map(fn, tasks, ...)`` (a :class:`mixedeval._executor.Runner`) with the first task
        run alone and judged (:meth:`block_done` with ``first_units`` units done), then the rest."""
        out = list(runner.map(fn, list(tasks[:1]), shared=shared, progress=False, desc=desc))
        self.block_done(first_units)
        if len(tasks) > 1:
            out += runner.map(fn, list(tasks[1:]), shared=shared, progress=progress, desc=desc)
        return out


class Deadline:
    """The time limit of a loop whose length is not known beforehand (an optimizer's iterations):
    :meth:`check` raises :class:`mixedeval.DataError` once the time since the start exceeds the
    limit, and :meth:`first` refuses after the first iteration when ``at_least`` iterations
    (the fewest the loop plausibly needs) would already exceed it. ``what`` names the loop
    ("the EM of me.irt (engine='numpy', nagq=100)"), ``fix`` what to change."""

    def __init__(self, what: str, fix: str) -> None:
        self.what, self.fix = what, fix
        self.limit, self.desc = _time_resolve()
        self._t0 = time.perf_counter()
        self.judged = False

    def elapsed(self) -> float:
        """Seconds since the start."""
        return time.perf_counter() - self._t0

    def first(self, took: float, at_least: int, unit: str = "iterations") -> None:
        """After the first iteration (``took`` seconds): refuse when ``at_least`` of them exceed the
        limit. Only the first call judges; later ones do nothing."""
        if self.judged:
            return
        self.judged = True
        check_time(self.elapsed() - took + took * at_least, self.what, self.fix,
                   detail=f"at least {format_count(at_least)} {unit}; the first took {format_seconds(took)}")

    def check(self, done: str = "") -> None:
        """Raise when the loop has run past the time limit (``done``: how far it got, e.g. '40 iterations')."""
        if self.elapsed() <= self.limit:
            return
        paren = f" ({done})" if done else ""
        raise DataError(f"{self.what} ran past mixedeval's time limit of {self.desc}{paren}. {self.fix}")
