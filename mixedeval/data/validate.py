"""Validation of score tables. Every failure raises :class:`mixedeval.DataError` with a message
that names the column and says how to fix it."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import DataError


def _rows_preview(index: Iterable[Any], limit: int = 5) -> str:
    idx = list(index)
    shown = ", ".join(str(i) for i in idx[:limit])
    return shown + (f", ... ({len(idx) - limit} more)" if len(idx) > limit else "")


def require_nonempty(df, what: str = "data") -> None:
    if len(df) == 0:
        raise DataError(f"{what} is empty (0 rows); pass a table with at least one row per cell")


def require_columns(df, columns: Iterable[str | None], what: str = "data") -> None:
    """Every named column exists."""
    missing = [c for c in columns if c is not None and c not in df.columns]
    if missing:
        have = ", ".join(map(str, df.columns[:20]))
        raise DataError(
            f"column(s) {', '.join(repr(m) for m in missing)} not found in {what}; available columns: {have}"
        )


def require_finite(df, column: str, *, allow_nan: bool = False) -> None:
    """``column`` is numeric and (unless ``allow_nan``) has no NaN/None/inf values."""
    import numpy as np  # noqa: PLC0415
    import pandas as pd  # noqa: PLC0415
    from pandas.api import types as pt  # noqa: PLC0415

    s = df[column]
    if pt.is_bool_dtype(s.dtype) or not pt.is_numeric_dtype(s.dtype):
        conv = pd.to_numeric(s, errors="coerce")
        bad = conv.isna() & s.notna()
        if bad.any() or pt.is_bool_dtype(s.dtype):
            examples = ", ".join(repr(v) for v in s[bad].unique()[:3]) if bad.any() else "booleans"
            raise DataError(
                f"score column {column!r} is not numeric ({int(bad.sum()) or len(s)} non-numeric values, e.g. {examples}); "
                f"convert it with pd.to_numeric(df[{column!r}]) or choose the right column"
            )
        raise DataError(
            f"score column {column!r} has dtype {s.dtype}, not a number; convert it with pd.to_numeric(df[{column!r}])"
        )
    if allow_nan:
        return
    vals = s.to_numpy(dtype="float64", na_value=np.nan)
    bad = ~np.isfinite(vals)
    if bad.any():
        n_nan = int(np.isnan(vals).sum())
        n_inf = int(bad.sum()) - n_nan
        kinds = ", ".join(k for k in (f"{n_nan} missing/NaN" if n_nan else "", f"{n_inf} infinite" if n_inf else "") if k)
        raise DataError(
            f"score column {column!r} has {int(bad.sum())} non-finite values ({kinds}) in rows "
            f"{_rows_preview(s.index[bad])}; drop or impute them first, e.g. df.dropna(subset=[{column!r}])"
        )


def require_levels(df, column: str, min_levels: int = 2, role: str = "grouping factor") -> None:
    """``column`` has at least ``min_levels`` distinct non-missing values."""
    n = df[column].nunique(dropna=True)
    if n < min_levels:
        vals = ", ".join(repr(v) for v in df[column].dropna().unique()[:3])
        raise DataError(
            f"{role} {column!r} has {n} level{'s' if n != 1 else ''} ({vals or 'none'}); it needs at least "
            f"{min_levels}: remove it from the model or supply data with more {column!r} values"
        )


def require_unique(df, keys: Sequence[str], what: str = "data") -> None:
    """One row per combination of ``keys``."""
    dup = df.duplicated(subset=list(keys), keep=False)
    if dup.any():
        n = int(df.duplicated(subset=list(keys), keep="first").sum())
        first = df.loc[dup, list(keys)].head(3).to_dict(orient="records")
        raise DataError(
            f"{what} has {n} duplicated row(s) for the cell key ({', '.join(keys)}), e.g. {first}; one row per "
            "cell is expected: aggregate duplicates (df.groupby(keys).mean()) or add the column that distinguishes them"
        )


def validate_score_table(
    df,
    score: str,
    factors: Sequence[str | None] = (),
    *,
    unique_keys: Sequence[str] | None = None,
    min_levels: int = 2,
    what: str = "data",
) -> None:
    """Standard checks for a score table: not empty, columns present, numeric finite score,
    every factor with at least ``min_levels`` levels, optionally one row per ``unique_keys`` cell."""
    require_nonempty(df, what)
    cols = [c for c in (score, *factors) if c is not None]
    require_columns(df, cols, what)
    require_finite(df, score)
    for f in factors:
        if f is not None:
            if df[f].isna().any():
                n = int(df[f].isna().sum())
                raise DataError(
                    f"factor column {f!r} has {n} missing values in rows {_rows_preview(df.index[df[f].isna()])}; "
                    "drop those rows or fill in the level"
                )
            require_levels(df, f, min_levels)
    if unique_keys:
        require_unique(df, unique_keys, what)
