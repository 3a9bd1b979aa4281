"""The one p-value formatter of mixedeval (report tables, verdict reasons, plot annotations).

It lives below every layer that prints p-values (diagnostics, workflows, report) so that all of
them can import it. Statistical rule 8: p-values come from survival functions and are printed so
that a tiny value never reads as 0.
"""
from __future__ import annotations

import math
from typing import Any


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
