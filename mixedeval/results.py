"""Base pieces of every mixedeval result: structured warnings, provenance, and printing.

Results are small frozen dataclasses holding pandas DataFrames. They print as plain tables in a
terminal, as HTML tables in a notebook (``_repr_html_``), and convert with ``to_frame()`` (the
main table) and ``to_dict()`` (everything, JSON-friendly).
"""
from __future__ import annotations

import dataclasses
import html
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class ResultWarning:
    """A structured warning attached to a result.

    ``kind`` is one of: ``singular``, ``convergence``, ``df_fallback``, ``refit_ml``,
    ``missing_rows``, ``r_warning``, ``r_message``, ``averaging``, ``optimizer_disagreement``,
    ``response_type`` (the model does not suit the response: a Gaussian LMM of 0/1 or count data),
    or another short snake_case label; ``message`` is one human sentence.
    """

    kind: str
    message: str
    source: str = "mixedeval"

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


def jsonable(x: Any) -> Any:
    """Convert numpy/pandas values to JSON-friendly Python values (NaN/inf become None)."""
    if isinstance(x, pd.DataFrame):
        return [{str(k): jsonable(v) for k, v in row.items()} for row in x.to_dict(orient="records")]
    if isinstance(x, pd.Series):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return [jsonable(v) for v in x.tolist()]
    if isinstance(x, ResultWarning):
        return dataclasses.asdict(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: jsonable(getattr(x, f.name)) for f in dataclasses.fields(x) if not f.name.startswith("_")}
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if x is pd.NA or x is None:
        return None
    if isinstance(x, (str, int, float, bool)):
        return x
    return str(x)


class ResultMixin:
    """Printing and conversion for frozen result dataclasses.

    Subclasses name their main table in ``_main_table`` (attribute or method name) and may list
    the tables to print in ``_print_tables``.
    """

    _main_table: str = "table"
    _print_tables: tuple[str, ...] = ()
    _title: str = ""

    def to_frame(self):
        obj = getattr(self, self._main_table)
        return obj() if callable(obj) else obj.copy()

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)

    def _tables(self) -> list[tuple[str, Any]]:
        names = self._print_tables or (self._main_table,)
        out = []
        for n in names:
            obj = getattr(self, n, None)
            if callable(obj):
                obj = obj()
            if isinstance(obj, pd.DataFrame):
                out.append((n, obj))
        return out

    def _scalars(self) -> list[tuple[str, Any]]:
        return []

    def __repr__(self) -> str:
        title = self._title or type(self).__name__
        lines = [title]
        for k, v in self._scalars():
            lines.append(f"  {k}: {v}")
        with pd.option_context("display.max_columns", 20, "display.width", 140, "display.max_rows", 60):
            for name, df in self._tables():
                lines.append(f"\n{name}:")
                lines.append(df.to_string(index=False))
        for w in getattr(self, "warnings", ()) or ():
            lines.append(f"warning: {w}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        title = html.escape(self._title or type(self).__name__)
        parts = [f"<div class='mixedeval-result'><h4>{title}</h4>"]
        if self._scalars():
            parts.append("<ul>" + "".join(f"<li>{html.escape(str(k))}: {html.escape(str(v))}</li>" for k, v in self._scalars()) + "</ul>")
        for name, df in self._tables():
            parts.append(f"<h5>{html.escape(name)}</h5>")
            parts.append(df.to_html(index=False, float_format=lambda v: f"{v:.6g}"))
        ws = getattr(self, "warnings", ()) or ()
        if ws:
            parts.append("<ul class='warnings'>" + "".join(f"<li>{html.escape(str(w))}</li>" for w in ws) + "</ul>")
        parts.append("</div>")
        return "".join(parts)
