"""Validation of score tables. Every failure raises :class:`mixedeval.DataError` with a message
that names the column and says how to fix it. The caller's table is never modified.

Rules every entry point follows (:func:`mixedeval.lmm`, :func:`mixedeval.compare_systems`,
:func:`mixedeval.conditional_compare`, :func:`mixedeval.variance_components`, the
meta-parameter and reproducibility workflows, :func:`mixedeval.language_disparity`):

* **Missing scores are an error, never dropped silently.** A NaN, None, ``pd.NA`` or infinite
  value in the *score* (response) column raises :class:`~mixedeval.DataError` naming the
  column, the number of such values and the first rows, with the fix
  (``df.dropna(subset=[score])``, or impute). Which rows to drop is the analyst's decision: a
  missing score is often a failed run, and dropping it silently biases the comparison
  (:func:`require_finite`).
* **Missing predictors drop the row, with a warning.** A missing value in a predictor or
  factor column (system, item, seed, language, a data property, ...) drops that row before
  the model is fitted -- all models of a workflow use the same rows -- and the result carries
  a ``missing_rows`` :class:`~mixedeval.results.ResultWarning` saying how many rows and which
  columns. (Krippendorff's alpha is the exception by design: missing ratings are part of its
  reliability data matrix.)
* Column names must be unique (:func:`require_unique_columns`); complex numbers,
  dates/times/durations/periods and list/dict cells are refused in the columns a model uses
  (:func:`require_supported_dtypes`); confidence levels lie strictly between 0 and 1
  (:func:`require_level`).
* Rows that repeat another row exactly -- the same key columns (system, item, run, ...) *and*
  the same score -- are kept but flagged with a ``duplicated_rows`` warning
  (:func:`duplicated_rows_warning`): they are usually a log file read twice.
"""
from __future__ import annotations

import datetime as _dt
import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as pt

from ..errors import DataError
from ..results import ResultWarning


def _rows_preview(index: Iterable[Any], limit: int = 5) -> str:
    idx = list(index)
    shown = ", ".join(str(i) for i in idx[:limit])
    return shown + (f", ... ({len(idx) - limit} more)" if len(idx) > limit else "")


def require_nonempty(df, what: str = "data") -> None:
    if len(df) == 0:
        raise DataError(f"{what} is empty (0 rows); pass a table with at least one row per cell")


def require_columns(df, columns: Iterable[str | None], what: str = "data") -> None:
    """Every named column exists."""
    columns = [c for c in columns if c is not None]
    missing = [c for c in columns if not _has_column(df, c)]
    if missing:
        have = ", ".join(map(str, df.columns[:20]))
        raise DataError(
            f"column(s) {', '.join(repr(m) for m in missing)} not found in {what}; available columns: {have}"
        )
    named = set(columns)
    if any(c in named for c in df.columns[df.columns.duplicated()]):
        require_unique_columns(df, what)


def _series(df, column: Any, what: str = "data"):
    """``df[column]`` as a Series (a duplicated name raises the duplicated-names DataError)."""
    s = df[column]
    if s.ndim != 1:
        require_unique_columns(df, what)
    return s


def _has_column(df, c: Any) -> bool:
    try:
        return c in df.columns
    except TypeError:  # an unhashable "name" (a list passed as a column name)
        raise DataError(f"column names must be strings, got {c!r}") from None


def require_unique_columns(df, what: str = "data") -> None:
    """Column names are unique, also as text (``1`` and ``"1"`` would collide once mixedeval
    names columns by their string form)."""
    names = [str(c) for c in df.columns]
    if len(set(names)) == len(names):
        return
    seen: dict[str, int] = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
    dups = [n for n, k in seen.items() if k > 1]
    raw = [c for c in df.columns if str(c) in dups]
    alike = len(set(map(repr, raw))) > len(dups)  # e.g. 1 and "1": different objects, same text
    shown = ", ".join(f"{n!r} ({seen[n]}x)" for n in dups[:10])
    raise DataError(
        f"{what} has duplicated column names: {shown}"
        + (f" (the columns {', '.join(map(repr, raw[:6]))} have the same name as text)" if alike else "")
        + "; column names must be unique (df.columns): rename them, e.g. "
        "df.columns = [f'{c}_{i}' for i, c in enumerate(df.columns)], or drop the copies with "
        "df.loc[:, ~df.columns.duplicated()]"
    )


def require_level(level: Any, name: str = "level") -> float:
    """A confidence level strictly between 0 and 1 (e.g. 0.95); returned as a float."""
    ok = isinstance(level, numbers.Real) and not isinstance(level, bool)
    value = float(level) if ok else math.nan
    if not ok or not 0.0 < value < 1.0:
        example = f"{name}=0.05" if name == "alpha" else f"{name}=0.95 for 95% intervals"
        raise DataError(f"{name} must be a number strictly between 0 and 1 (e.g. {example}), not {level!r}")
    return value


def _value_kinds(s) -> set[type]:
    """Types of the values of an object column, without the missing-value markers."""
    kinds = set(map(type, s.to_numpy(dtype=object)))
    return kinds - {type(None), type(pd.NA), type(pd.NaT)}


_DATE_FIX = ("convert it to a number (e.g. days since the start: (df[{c!r}] - df[{c!r}].min()).dt.days, or "
             "df[{c!r}].dt.total_seconds() for durations) or to a category with df[{c!r}].astype(str)")


def require_supported_dtypes(df, columns: Iterable[str | None], *, score: str | None = None,
                             what: str = "data") -> None:
    """The columns a model uses hold values a model can use: real numbers, booleans, strings or
    categories. Refused with a :class:`DataError` naming the column and the fix: complex
    numbers, dates/times/durations/periods/intervals (ambiguous: a number or a category?), and
    cells holding lists, dicts, sets or arrays. ``score`` names the response (its message says
    so)."""
    for c in dict.fromkeys(c for c in columns if c is not None):
        if c not in df.columns:
            continue  # require_columns reports missing columns
        s = _series(df, c, what)
        role = "score column" if c == score else "column"
        dtype = s.dtype
        kinds: set[type] = set()
        if dtype == object:
            kinds = _value_kinds(s)
        if pt.is_complex_dtype(dtype) or any(issubclass(k, (complex, np.complexfloating)) for k in kinds):
            raise DataError(f"{role} {c!r} has complex values; take .real or abs() first: "
                            f"df[{c!r}] = df[{c!r}].real (or np.abs(df[{c!r}]))")
        is_date = (pt.is_datetime64_any_dtype(dtype) or pt.is_timedelta64_dtype(dtype)
                   or isinstance(dtype, (pd.PeriodDtype, pd.IntervalDtype))
                   or any(issubclass(k, (_dt.date, _dt.time, _dt.timedelta, np.datetime64, np.timedelta64,
                                         pd.Period, pd.Interval)) for k in kinds))
        if is_date:
            shown = dtype if dtype != object else "date/time objects"
            if c == score:
                raise DataError(f"score column {c!r} holds dates/times ({shown}), not scores; choose the score "
                                f"column, or convert it to a number, e.g. df[{c!r}].dt.total_seconds()")
            raise DataError(
                f"column {c!r} holds dates/times ({shown}), which a model cannot use as they are; "
                + _DATE_FIX.format(c=c)
            )
        bad = [k for k in kinds if issubclass(k, (list, dict, set, frozenset, tuple, np.ndarray, pd.Series,
                                                   pd.DataFrame))]
        if bad:
            raise DataError(
                f"{role} {c!r} holds {', '.join(sorted(k.__name__ for k in bad))} values; one scalar per cell is "
                f"needed: explode or aggregate it first (df.explode({c!r}), or a summary such as its mean)"
            )


ROWS_CHECKED = "mixedeval_rows_checked"
"""``df.attrs`` key set by the workflows on the reduced frames they pass to :func:`mixedeval.lmm`
after checking the caller's whole table: :func:`duplicated_rows_warning` does not check such a
frame again (its few columns would make replications look like copies)."""


def duplicated_rows_warning(df, score: str, keys: Sequence[str] | None = None) -> ResultWarning | None:
    """A ``duplicated_rows`` warning when rows repeat another row's ``keys`` *and* ``score``
    exactly, else None. ``keys`` defaults to every column except ``score`` (rows identical in
    the whole table): pass the columns that identify an observation (system, item, run, ...).
    Such rows are kept (a model counts each), but they usually come from a log read twice.

    Use the whole table, not just the model's columns: the replications of a system on an item
    often have equal scores (Kreutzer TER: 3529 of 7287 rows repeat (system, item, score)) and
    differ only in a run column the model does not use. A frame whose ``attrs`` carry
    :data:`ROWS_CHECKED` is not checked (None)."""
    if getattr(df, "attrs", {}).get(ROWS_CHECKED):
        return None
    if keys is None:
        keys = [c for c in df.columns if c != score]
    cols = list(dict.fromkeys([*[k for k in keys if k in df.columns], score]))
    if score not in df.columns or len(cols) < 2 or len(df) < 2:
        return None
    sub = pd.DataFrame({i: _hashable(_series(df, c)) for i, c in enumerate(cols)}, copy=False)
    dup = sub.duplicated(keep="first").to_numpy()
    n = int(dup.sum())
    if not n:
        return None
    key_txt = ", ".join(str(k) for k in cols if k != score)
    return ResultWarning(
        "duplicated_rows",
        f"{n} row(s) repeat an earlier row exactly (same {key_txt} and the same {score!r}), e.g. rows "
        f"{_rows_preview(df.index[dup])}; each copy counts as a separate observation. If they are accidental "
        "copies (a log read twice), drop them with df.drop_duplicates(); if they are genuine repeats, add the "
        "column that distinguishes them (e.g. the run or seed)",
    )


def _hashable(s):
    """``s``, or its values' reprs where some are unhashable (lists, dicts, arrays)."""
    if s.dtype != object or all(k.__hash__ is not None for k in _value_kinds(s)):
        return s
    return s.map(lambda v: repr(v) if type(v).__hash__ is None else v)


def require_finite(df, column: str, *, allow_nan: bool = False, role: str = "score column") -> None:
    """``column`` is real-valued and (unless ``allow_nan``) has no NaN/None/pd.NA/inf values.

    This is the missing-score rule (module docstring): the error names the column, the count,
    the first rows and the fix ``df.dropna(subset=[column])``."""
    s = _series(df, column)
    if pt.is_complex_dtype(s.dtype):
        raise DataError(f"{role} {column!r} has complex values; take .real or abs() first: "
                        f"df[{column!r}] = df[{column!r}].real (or np.abs(df[{column!r}]))")
    if pt.is_bool_dtype(s.dtype) or not pt.is_numeric_dtype(s.dtype):
        require_supported_dtypes(df, [column], score=column if role == "score column" else None)
        try:
            conv = pd.to_numeric(s, errors="coerce")
        except (TypeError, ValueError):
            conv = pd.Series(np.nan, index=s.index)
        if pt.is_complex_dtype(conv.dtype):
            raise DataError(f"{role} {column!r} has complex values; take .real or abs() first: "
                            f"df[{column!r}] = df[{column!r}].real (or np.abs(df[{column!r}]))")
        bad = conv.isna() & s.notna()
        if bad.any() or pt.is_bool_dtype(s.dtype):
            examples = ", ".join(repr(v) for v in pd.unique(s[bad].astype(str))[:3]) if bad.any() else "booleans"
            raise DataError(
                f"{role} {column!r} is not numeric ({int(bad.sum()) or len(s)} non-numeric values, e.g. {examples}); "
                f"convert it with pd.to_numeric(df[{column!r}]) or choose the right column"
            )
        raise DataError(
            f"{role} {column!r} has dtype {s.dtype}, not a number; convert it with pd.to_numeric(df[{column!r}])"
        )
    if allow_nan:
        return
    vals = s.to_numpy(dtype="float64", na_value=np.nan)
    bad = ~np.isfinite(vals)
    if bad.any():
        n_nan = int(np.isnan(vals).sum())
        n_inf = int(bad.sum()) - n_nan
        kinds = ", ".join(k for k in (f"{n_nan} missing/NaN" if n_nan else "", f"{n_inf} infinite" if n_inf else "") if k)
        fix = (f"drop or impute them first, e.g. df.dropna(subset=[{column!r}])" if not n_inf else
               f"drop or impute them first, e.g. df[np.isfinite(df[{column!r}])]")
        raise DataError(
            f"{role} {column!r} has {int(bad.sum())} non-finite values ({kinds}) in rows "
            f"{_rows_preview(s.index[bad])}; {fix}"
        )


#: the largest magnitude of a number sent to a model: squares (sums of squares, variances, the
#: Gaussian log-likelihood) of larger values overflow double precision (lme4 then stops with
#: "Downdated VtV is not positive definite" or "objective in x0 returns NA")
MAX_MODEL_VALUE = 1e150


def require_representable(df, column: str, role: str = "response column") -> None:
    """``column``'s finite values are at most :data:`MAX_MODEL_VALUE` in magnitude (a DataError
    naming the column, the first rows and the fix otherwise); non-numeric columns pass."""
    s = _series(df, column)
    if pt.is_bool_dtype(s.dtype) or not pt.is_numeric_dtype(s.dtype) or isinstance(s.dtype, pd.CategoricalDtype):
        return
    vals = np.abs(s.to_numpy(dtype="float64", na_value=np.nan))
    with np.errstate(invalid="ignore"):
        big = np.isfinite(vals) & (vals > MAX_MODEL_VALUE)
    if big.any():
        first = s[big].iloc[0]
        raise DataError(
            f"{role} {column!r} has {int(big.sum())} value(s) beyond +-{MAX_MODEL_VALUE:g} (e.g. {first:g} in rows "
            f"{_rows_preview(s.index[big])}), whose squares overflow the model's computations in R; rescale the "
            f"column (e.g. df[{column!r}] / 1e6, or np.log10) or drop those rows"
        )


def require_levels(df, column: str, min_levels: int = 2, role: str = "grouping factor") -> None:
    """``column`` has at least ``min_levels`` distinct non-missing values."""
    try:
        n = _series(df, column).nunique(dropna=True)
    except TypeError:  # unhashable cells (lists, dicts)
        require_supported_dtypes(df, [column])
        raise
    if n < min_levels:
        vals = ", ".join(repr(v) for v in df[column].dropna().unique()[:3])
        raise DataError(
            f"{role} {column!r} has {n} level{'s' if n != 1 else ''} ({vals or 'none'}); it needs at least "
            f"{min_levels}: remove it from the model or supply data with more {column!r} values"
        )


def require_unique(df, keys: Sequence[str], what: str = "data") -> None:
    """One row per combination of ``keys``."""
    keys = list(dict.fromkeys(keys))
    sub = pd.DataFrame({i: _hashable(_series(df, k, what)) for i, k in enumerate(keys)}, index=df.index)
    dup = sub.duplicated(keep=False)
    if dup.any():
        n = int(sub.duplicated(keep="first").sum())
        first = [dict(zip(keys, r)) for r in df.loc[dup.to_numpy(), keys].head(3).itertuples(index=False)]
        raise DataError(
            f"{what} has {n} duplicated row(s) for the cell key ({', '.join(map(str, keys))}), e.g. {first}; one row per "
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
    require_unique_columns(df, what)
    cols = [c for c in (score, *factors, *(unique_keys or ())) if c is not None]
    require_columns(df, cols, what)
    require_supported_dtypes(df, cols, score=score, what=what)
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
