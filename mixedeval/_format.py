"""The one p-value formatter of mixedeval (report tables, verdict reasons, plot annotations).

It lives below every layer that prints p-values (diagnostics, workflows, report) so that all of
them can import it. Statistical rule 8: p-values come from survival functions and are printed so
that a tiny value never reads as 0.

Estimates and intervals follow one rule too (:func:`decimals`, :func:`fmt_fixed`,
:func:`fmt_interval`): the decimals of every estimate and bound of one table or sentence come from
its standard error (two significant digits), so a table never mixes "0.2999 to 0.31939".
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np


def fmt_p(p: Any) -> str:
    """A p-value as text.

    * 1e-4 <= p: four decimals (``0.0457``, ``1.0000``);
    * 0 < p < 1e-4: three significant digits in e-notation (``3.20e-12``);
    * exactly 0 (underflow of the survival function, not rounding): ``<1e-300``;
    * NaN or None (no p-value): ``NA``.
    """
    if p is None:
        return "NA"
    p = float(p)
    if math.isnan(p):
        return "NA"
    if p == 0:
        return "<1e-300"
    if p >= 1e-4:
        return f"{p:.4f}"
    return f"{p:.2e}"


def plain(value: Any) -> str:
    """A setting's value as plain words, never a Python repr (report provenance, the command line's
    text output): None -> ``none``; True/False -> ``yes``/``no``; a float -> 6 significant digits
    (NaN -> ``NA``); numpy scalars as their Python values; a dict -> ``key: value, ...``; a list,
    tuple or set -> ``a, b, c`` (nested ones in parentheses); a table -> ``table of N rows``; a
    path -> its text; a numpy ``SeedSequence`` -> ``SeedSequence, entropy N``; a ``Generator``
    -> ``numpy Generator (PCG64)``; anything else -> ``str(value)``."""
    if value is None:
        return "none"
    if hasattr(value, "item") and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        value = value.item()  # numpy scalar
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "NA" if math.isnan(value) else f"{value:.6g}"
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, dict):
        return ", ".join(f"{plain(k)}: {_nested(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple, set, frozenset)) or (type(value).__module__ == "numpy"
                                                             and hasattr(value, "tolist")):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(
            value.tolist() if hasattr(value, "tolist") else value)
        return ", ".join(_nested(v) for v in items) or "none"
    if hasattr(value, "shape") and hasattr(value, "columns"):  # a DataFrame
        return f"table of {len(value)} rows"
    name = type(value).__name__
    if name == "SeedSequence":
        return f"SeedSequence, entropy {value.entropy}"
    if name == "Generator" and hasattr(value, "bit_generator"):
        return f"numpy Generator ({type(value.bit_generator).__name__})"
    return str(value)


def _nested(value: Any) -> str:
    """:func:`plain` of a value inside a list or dict: a nested container in parentheses."""
    text = plain(value)
    return f"({text})" if isinstance(value, (dict, list, tuple, set, frozenset)) and "," in text else text


def decimals(std_error: Any = None, conf_low: Any = None, conf_high: Any = None, *, scale: float = 1.0,
             lo: int = 0, hi: int = 6) -> int:
    """Decimals for estimates whose standard errors are ``std_error`` (scalar or array), times
    ``scale``: two significant digits of the smallest positive finite SE, clipped to [lo, hi]. Without
    an SE, the half-width of the interval / 1.96 stands for it; 2 when nothing is known."""
    se = np.atleast_1d(np.asarray(std_error if std_error is not None else np.nan, dtype=float)) * scale
    se = se[np.isfinite(se) & (se > 0)]
    if not se.size and conf_low is not None and conf_high is not None:
        w = (np.atleast_1d(np.asarray(conf_high, dtype=float)) - np.atleast_1d(np.asarray(conf_low, dtype=float)))
        se = np.abs(w[np.isfinite(w) & (w != 0)]) * scale / 3.92
    if not se.size:
        return 2
    return int(min(hi, max(lo, 1 - math.floor(math.log10(float(se.min()))))))


def fmt_fixed(v: Any, digits: int, *, sign: bool = False) -> str:
    """``v`` with ``digits`` decimals ("NA" when missing); ``sign`` writes "+" before positives.
    A value that rounds to zero prints as 0 without a minus sign."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(x):
        return "NA" if math.isnan(x) else ("Inf" if x > 0 else "-Inf")
    if round(x, digits) == 0:
        x = 0.0
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def fmt_interval(lo: Any, hi: Any, digits: int, *, sign: bool = False) -> str:
    """"lo to hi" with the same decimals ("" when a bound is missing)."""
    try:
        a, b = float(lo), float(hi)
    except (TypeError, ValueError):
        return ""
    if not (math.isfinite(a) and math.isfinite(b)):
        return ""
    return f"{fmt_fixed(a, digits, sign=sign)} to {fmt_fixed(b, digits, sign=sign)}"
