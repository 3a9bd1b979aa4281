"""Building blocks of the HTML report: a :class:`Section` holding tables, figures, key-value
lists and notes as plain data, and the formatting of table cells.

The template renders these blocks with Jinja2 autoescaping, so no user text (column names,
factor levels, error messages) is ever inserted into the page as markup; figures are ``data:``
URIs in ``<img>`` elements.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import _format
from .figures import to_data_uri

#: statuses of a section, in increasing severity ("differs": the answer's checks differ from its headline)
STATUSES = ("ok", "differs", "warning", "not_available", "error")

MAX_ROWS = 200


def is_p_column(name: str) -> bool:
    """Columns holding p-values (formatted so that tiny values never print as 0)."""
    n = str(name).lower()
    return n in ("p_value", "p_adj", "pr_chisq") or n.startswith(("p_value", "p_adj")) or n.endswith(("_p_value",
                                                                                                    "_p_adj"))


def is_p_key(name: str) -> bool:
    """A setting's name that says it holds a p-value ("GLRT p-value", "omnibus p_value (check)")."""
    n = str(name).lower()
    return is_p_column(n) or bool(re.search(r"\bp[-_ ]value\b", n))


def _p_text(v: Any) -> str:
    """A p-value given as a number or as text in the one format; other text unchanged."""
    try:
        return fmt_p(float(v))
    except (TypeError, ValueError):
        return str(v)


def fmt_p(p: float) -> str:
    """A p-value in a table cell: :func:`mixedeval._format.fmt_p` (the one p-value format), with
    a missing value as an empty cell."""
    return "" if p != p else _format.fmt_p(p)


def fmt_number(v: float) -> str:
    """A float as text: 5 significant digits, e-notation for very large or small magnitudes."""
    if not math.isfinite(v):
        return "" if v != v else ("Inf" if v > 0 else "-Inf")
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6 or a < 1e-4:
        return f"{v:.4e}"
    return f"{v:.5g}"


def fmt_cell(value: Any, column: str = "") -> str:
    """Text of one table cell: ``""`` for missing values, yes/no for booleans, p-values by
    :func:`fmt_p`, other floats by :func:`fmt_number`."""
    if value is None:
        return ""
    try:
        if value is pd.NA or value is pd.NaT:
            return ""
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if v != v:
            return ""
        return fmt_p(v) if is_p_column(column) else fmt_number(v)
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_cell(v) for v in value)
    return str(value)


def as_frame(obj: Any, attr: str = "table"):
    """The DataFrame behind a result: the object itself, its ``attr`` (attribute or method), or
    ``to_frame()``; None when there is none."""
    if obj is None:
        return None
    if isinstance(obj, pd.DataFrame):
        return obj
    val = getattr(obj, attr, None)
    if callable(val):
        val = val()
    if isinstance(val, pd.DataFrame):
        return val
    if hasattr(obj, "to_frame"):
        val = obj.to_frame()
        if isinstance(val, pd.DataFrame):
            return val
    return None


def one_line(text: Any, limit: int = 400) -> str:
    """An error message on one line, shortened to ``limit`` characters."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


@dataclass
class Section:
    """One section of the report: a status (see :data:`STATUSES`), an optional note explaining
    it, a one-line headline for the overview, and content blocks."""

    id: str
    title: str
    status: str = "ok"
    note: str | None = None
    headline: str | None = None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    #: plain-word labels of the severe warnings of the results shown (see :mod:`.truth`)
    severe: list[str] = field(default_factory=list)

    def set_status(self, status: str, note: str | None = None) -> "Section":
        if STATUSES.index(status) > STATUSES.index(self.status):
            self.status = status
        if note:
            self.note = note if not self.note else f"{self.note} {note}"
        return self

    def text(self, text: str, css: str = "") -> None:
        self.blocks.append({"kind": "text", "text": str(text), "css": css})

    def kv(self, pairs: list[tuple[str, Any]], caption: str | None = None) -> None:
        """Key-value pairs; a value whose key names a p-value (:func:`is_p_key`), even one a result
        wrote as text, is printed by :func:`fmt_p` (the one p-value format)."""
        rows = [(str(k), _p_text(v) if is_p_key(str(k)) else v if isinstance(v, str) else fmt_cell(v, str(k)))
                for k, v in pairs if v is not None]
        if rows:
            self.blocks.append({"kind": "kv", "caption": caption, "pairs": rows})

    def table(self, df: Any, caption: str | None = None, note: str | None = None, max_rows: int = MAX_ROWS,
              decimals: Any = None, numeric: Any = None) -> None:
        """Add a DataFrame as a table (first ``max_rows`` rows; the caption says when rows were cut).
        ``decimals``: ``{column: n}`` prints those float columns with n decimals throughout (one
        column, one number of decimals) instead of 5 significant digits. ``numeric``: the columns
        aligned as numbers (default: those of a numeric dtype; give it for numbers already
        formatted as text)."""
        if df is None:
            return
        df = drop_empty_columns(df)
        n = len(df)
        shown = df.head(max_rows) if n > max_rows else df
        cols = [str(c) for c in shown.columns]
        fixed = dict(decimals or {})

        def cell(v: Any, c: str) -> str:
            if c in fixed and isinstance(v, (float, np.floating)) and math.isfinite(v):
                return f"{float(v):.{fixed[c]}f}"
            return fmt_cell(v, c)

        rows = [[cell(v, c) for v, c in zip(rec, cols)] for rec in shown.itertuples(index=False, name=None)]
        numeric = ([str(c) in set(map(str, numeric)) for c in shown.columns] if numeric is not None else
                   [_is_numeric(shown[c]) for c in shown.columns])
        if n > max_rows:
            cut = f"first {max_rows} of {n} rows shown"
            note = f"{note} ({cut})" if note else cut.capitalize()
        self.blocks.append({"kind": "table", "caption": caption, "columns": cols, "rows": rows, "numeric": numeric,
                            "note": note, "verdict_col": cols.index("verdict") if "verdict" in cols else -1})

    def figure(self, fig: Any, caption: str, fmt: str = "svg", alt: str | None = None) -> None:
        """Embed a matplotlib figure as a data URI (``fmt`` svg or png)."""
        wide = float(fig.get_figwidth()) >= 8.0  # multi-panel figures get a row of their own
        fig_block = {"caption": caption, "src": to_data_uri(fig, fmt), "alt": alt or caption, "wide": wide}
        if self.blocks and self.blocks[-1]["kind"] == "figures":  # consecutive figures share one row
            self.blocks[-1]["figures"].append(fig_block)
        else:
            self.blocks.append({"kind": "figures", "figures": [fig_block]})

    def warnings(self, items: Any, caption: str = "Warnings") -> None:
        """A list of warnings; R's notes (kind ``r_message``: messages, not warnings) go to a
        list of notes of their own."""
        items = list(items or ())
        notes = [w for w in items if getattr(w, "kind", None) == "r_message"]
        lines = [str(w) for w in items if w not in notes]
        if lines:
            self.blocks.append({"kind": "warnings", "caption": caption, "items": lines})
        if notes:
            self.blocks.append({"kind": "notes", "caption": "Notes from R" if caption == "Warnings" else
                                f"{caption}: notes from R",
                                "items": [f"{getattr(w, 'source', 'R')}: {getattr(w, 'message', w)}" for w in notes]})

    def guarded(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        """Run ``func``; on failure record it visibly in this section and return None."""
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - one failing part must not sink the report
            self.set_status("error")
            self.blocks.append({"kind": "error", "text": f"{what} failed: {type(exc).__name__}: {one_line(exc)}"})
            return None


def drop_empty_columns(df: Any) -> Any:
    """The table without its columns that hold no value at all (every cell missing), when it has
    rows; other columns untouched."""
    if not isinstance(df, pd.DataFrame) or not len(df) or not len(df.columns):
        return df
    empty = [c for c in df.columns if df[c].isna().all()]
    return df.drop(columns=empty) if empty and len(empty) < len(df.columns) else df


def _is_numeric(series: Any) -> bool:
    return bool(pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype))
