"""Column-wise conversion between pandas/numpy and R, without rpy2's pandas2ri.

Python to R (``to_r``):

* float columns become R doubles built straight from the numpy buffer; NaN is written as R's
  ``NA_real_`` bit pattern, so ``is.na()`` and ``na.omit`` see it as missing;
* integer columns become R integers (nullable ``Int64`` NA becomes ``NA_integer_``);
* boolean columns become R logicals;
* categorical columns become R factors with the categories as explicit levels (in their order,
  unused levels dropped); string/object columns become factors whose levels are the distinct
  values sorted by code point (C-locale order, identical on every machine); None, NaN and
  ``pd.NA`` become ``NA``.

R to Python (``from_r``): data.frames become pandas DataFrames (factors as pandas
Categoricals with R's level order), atomic vectors numpy arrays (length-1 unnamed ones Python
scalars, named ones dicts), named lists dicts; anything else (fitted models, environments)
stays an R object handle. Values are copied out of R while the R object is alive.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as pt

from ..errors import DataError
from . import _runtime

_NA_REAL_BITS = np.uint64(0x7FF00000000007A2)  # R's NA_real_: a NaN with payload 1954
_NA_INT = np.iinfo(np.int32).min


def _ri():
    import rpy2.rinterface as ri  # noqa: PLC0415 - rpy2 loads libR: R starts lazily

    return ri


def _helper(name: str):
    """A conversion helper of ``r/engine.R`` (from the helpers' own environment, not the global one)."""
    with _runtime.lock:
        return _runtime.helper(name)


# ----------------------------------------------------------------------------- Python -> R


def float_vector(values: Any):
    """R double vector from a float array; NaN becomes NA_real_."""
    ri = _ri()
    arr = np.array(values, dtype=np.float64, copy=True).ravel()
    nan = np.isnan(arr)
    if nan.any():
        arr.view(np.uint64)[nan] = _NA_REAL_BITS
    return ri.FloatSexpVector.from_memoryview(memoryview(arr))


def int_vector(values: Any, mask: np.ndarray | None = None):
    ri = _ri()
    arr = np.array(values, dtype=np.int32, copy=True).ravel()
    if mask is not None and mask.any():
        arr[mask] = _NA_INT
    return ri.IntSexpVector.from_memoryview(memoryview(arr))


def logical_vector(values: Any, mask: np.ndarray | None = None):
    ri = _ri()
    arr = np.array(values, dtype=bool).astype(np.int32).ravel()
    if mask is not None and mask.any():
        arr[mask] = _NA_INT
    vec = ri.BoolSexpVector.from_memoryview(memoryview(arr)) if hasattr(ri.BoolSexpVector, "from_memoryview") else None
    if vec is None:  # pragma: no cover - older rpy2
        vec = ri.BoolSexpVector([None if m else bool(v) for v, m in zip(arr, mask if mask is not None else [False] * len(arr))])
    return vec


def str_vector(values: Any):
    ri = _ri()
    return ri.StrSexpVector([ri.NA_Character if _is_missing(v) else str(v) for v in values])


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        if v is pd.NA or v is pd.NaT:
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(v, float) and v != v


def column_to_r(series, name: str | None = None):
    """Convert one pandas Series to an R vector (see module docstring for the rules)."""
    vec, levels = _column_parts(series, name)
    if levels is None:
        return vec
    ri = _ri()
    return _helper("me_factor")(vec, ri.StrSexpVector(levels))


def _column_parts(series, name: str | None = None):
    """(R vector, factor levels or None): factor codes are 1-based integers, levels separate."""
    label = name if name is not None else series.name
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _categorical_parts(series)
    if pt.is_bool_dtype(dtype):
        mask = series.isna().to_numpy()
        return logical_vector(series.fillna(False).to_numpy(dtype=bool), mask=mask), None
    if pt.is_integer_dtype(dtype) and isinstance(dtype, np.dtype):  # numpy integers: no NA
        arr = series.to_numpy()
        if arr.size and (arr.max() > np.iinfo(np.int32).max or arr.min() <= _NA_INT):
            return float_vector(arr.astype(np.float64)), None
        return int_vector(arr), None
    if pt.is_integer_dtype(dtype):
        mask = series.isna().to_numpy()
        vals = series.to_numpy(dtype="float64", na_value=np.nan)
        finite = vals[~mask]
        if finite.size and (finite.max() > np.iinfo(np.int32).max or finite.min() <= _NA_INT):
            return float_vector(vals), None
        return int_vector(np.where(mask, 0, vals).astype(np.int64), mask=mask), None
    if pt.is_float_dtype(dtype):
        return float_vector(series.to_numpy(dtype="float64", na_value=np.nan)), None
    if pt.is_string_dtype(dtype) or dtype == object:
        if dtype == object:  # a pandas string dtype holds only strings (and NA): nothing to check
            values = series.to_numpy(dtype=object)
            present = values[~series.isna().to_numpy()]
            if present.size and pd.api.types.infer_dtype(present, skipna=False) != "string":
                kinds = sorted({type(v).__name__ for v in present})
                raise DataError(
                    f"column {label!r} mixes value types ({', '.join(kinds)}); convert it to one type "
                    f"(e.g. df[{label!r}].astype(str) for a factor, or pd.to_numeric for a number)"
                )
        codes, uniques = pd.factorize(series, sort=True, use_na_sentinel=True)
        levels = uniques.to_numpy(dtype=object).tolist() if dtype != object else [str(u) for u in uniques]
        return int_vector(codes + 1, mask=codes < 0), levels
    if pt.is_datetime64_any_dtype(dtype):
        raise DataError(
            f"column {label!r} holds dates/times, which mixedeval does not send to R; convert it to a "
            "number (e.g. days since start) or to strings (a factor)"
        )
    raise DataError(f"column {label!r} has unsupported dtype {dtype}; convert it to numbers or strings")


def _categorical_parts(series):
    """Codes (1-based, NA as NA_integer_) and the levels that occur, in the categories' order.
    Unused categories are dropped by renumbering the codes (a count per category, not a hash of
    the values as ``remove_unused_categories`` would)."""
    cats = series.cat.categories
    codes = series.cat.codes.to_numpy()
    counts = np.bincount(codes.astype(np.intp) + 1, minlength=len(cats) + 1)[1:]  # slot 0: NA (-1)
    used = counts > 0
    if used.all():
        return int_vector(codes.astype(np.int32) + 1, mask=codes < 0), [str(c) for c in cats]
    remap = np.zeros(len(cats) + 1, dtype=np.int32)  # old code + 1 -> new 1-based code (0 for NA)
    remap[1:][used] = np.arange(1, int(used.sum()) + 1, dtype=np.int32)
    new = remap[codes.astype(np.intp) + 1]
    return int_vector(new, mask=codes < 0), [str(c) for c, u in zip(cats, used) if u]


def dataframe_to_r(df):
    """R data.frame built column by column (names kept exactly, no check.names mangling)."""
    ri = _ri()
    parts = [_column_parts(df[c], name=str(c)) for c in df.columns]
    cols = ri.ListSexpVector([vec for vec, _ in parts])
    packed = [lv is not None and _packable(lv) for _, lv in parts]
    levels = ri.ListSexpVector([
        ri.NULL if lv is None else ri.StrSexpVector(["\x1f".join(lv)] if pk else lv)
        for (_, lv), pk in zip(parts, packed)
    ])
    # one R call: factor classes and row.names go through R's own setters (see r/engine.R)
    return _helper("me_as_df")(cols, ri.StrSexpVector([str(c) for c in df.columns]),
                                    ri.IntSexpVector([len(df)]), levels, ri.BoolSexpVector(packed))


def _packable(levels: list[str]) -> bool:
    """Many levels are sent as one string joined by U+001F (split in R), unless a level is
    empty or contains the separator."""
    return len(levels) > 32 and all(lv and "\x1f" not in lv for lv in levels)


def to_r(x: Any):
    """Convert a Python value to an R object (see module docstring)."""
    ri = _ri()

    if x is None:
        return ri.NULL
    if isinstance(x, ri.Sexp):
        return x
    if isinstance(x, pd.DataFrame):
        return dataframe_to_r(x)
    if isinstance(x, pd.Series):
        return column_to_r(x)
    if isinstance(x, (bytes, bytearray)):
        return ri.ByteSexpVector(bytes(x))  # an R raw vector (e.g. a serialized model)
    if isinstance(x, (bool, np.bool_)):
        return ri.BoolSexpVector([bool(x)])
    if isinstance(x, (int, np.integer)):
        if abs(int(x)) < 2**31 - 1:
            return ri.IntSexpVector([int(x)])
        return ri.FloatSexpVector([float(x)])
    if isinstance(x, (float, np.floating)):
        return float_vector([float(x)])
    if isinstance(x, str):
        return ri.StrSexpVector([x])
    if isinstance(x, dict):
        return to_r_list(x)
    if isinstance(x, np.ndarray):
        return _array_to_r(x)
    if isinstance(x, (list, tuple)):
        if len(x) and all(isinstance(v, str) or v is None for v in x):
            return str_vector(x)
        if len(x) and all(isinstance(v, (bool, np.bool_)) for v in x):
            return ri.BoolSexpVector([bool(v) for v in x])
        if len(x) and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in x):
            if all(isinstance(v, (int, np.integer)) for v in x):
                return _array_to_r(np.asarray(x, dtype=np.int64))
            return float_vector(x)
        return ri.ListSexpVector([to_r(v) for v in x])
    raise TypeError(f"cannot convert {type(x).__name__} to R")


def _array_to_r(x: np.ndarray):
    ri = _ri()
    flat = x.ravel(order="F")
    if x.dtype.kind == "f":
        vec = float_vector(flat)
    elif x.dtype.kind in "iu":
        if flat.size and (flat.max() > np.iinfo(np.int32).max or flat.min() <= _NA_INT):
            vec = float_vector(flat.astype(float))
        else:
            vec = int_vector(flat)
    elif x.dtype.kind == "b":
        vec = logical_vector(flat)
    else:
        vec = str_vector(flat.tolist())
    if x.ndim > 1:
        vec.do_slot_assign("dim", ri.IntSexpVector(list(x.shape)))
    return vec


def to_r_list(d: dict[str, Any]):
    """Named R list from a dict (names passed exactly; no ``_`` to ``.`` translation)."""
    ri = _ri()
    lst = ri.ListSexpVector([to_r(v) for v in d.values()])
    if d:
        lst.do_slot_assign("names", ri.StrSexpVector([str(k) for k in d]))
    return lst


# ----------------------------------------------------------------------------- R -> Python


def _attr(x, name: str):
    ri = _ri()
    try:
        a = x.do_slot(name)
    except LookupError:
        return None
    return None if a is ri.NULL else a


def _names(x) -> list[str] | None:
    n = _attr(x, "names")
    return None if n is None else [str(s) for s in n]


def _classes(x) -> list[str]:
    c = _attr(x, "class")
    return [] if c is None else [str(s) for s in c]


def _buffer(x, dtype) -> np.ndarray:
    """Copy of an R vector's data. Reads R's memory through cffi directly: rpy2 3.5.17's
    ``memoryview()`` drops a reference to ``None`` on every call, which eventually crashes
    long-running processes ("none_dealloc")."""
    from rpy2.rinterface_lib import openrlib  # noqa: PLC0415 - rpy2 loads libR: R starts lazily

    dt = np.dtype(dtype)
    ptr = x._R_GET_PTR(x.__sexp__._cdata)
    return np.frombuffer(openrlib.ffi.buffer(ptr, dt.itemsize * len(x)), dtype=dt).copy()


def _atomic_to_numpy(x) -> np.ndarray:
    """Copy an atomic R vector into a numpy array (NA -> NaN / None)."""
    ri = _ri()
    if len(x) == 0:  # memoryview cannot cast zero-length views
        kind = {ri.FloatSexpVector: np.float64, ri.IntSexpVector: np.int64, ri.BoolSexpVector: bool}
        return np.array([], dtype=next((v for k, v in kind.items() if isinstance(x, k)), object))
    if isinstance(x, ri.FloatSexpVector):
        return _buffer(x, np.float64)
    if isinstance(x, ri.IntSexpVector) and not isinstance(x, ri.BoolSexpVector):
        arr = _buffer(x, np.int32)
        na = arr == _NA_INT
        if na.any():
            out = arr.astype(np.float64)
            out[na] = np.nan
            return out
        return arr.astype(np.int64)
    if isinstance(x, ri.BoolSexpVector):
        arr = _buffer(x, np.int32)
        na = arr == _NA_INT
        if na.any():
            out = np.array([None if m else bool(v) for v, m in zip(arr, na)], dtype=object)
            return out
        return arr.astype(bool)
    if isinstance(x, ri.StrSexpVector):
        return np.array([None if s is ri.NA_Character else str(s) for s in x], dtype=object)
    if isinstance(x, ri.ComplexSexpVector):  # pragma: no cover
        return np.array(list(x), dtype=complex)
    raise TypeError(f"not an atomic vector: {type(x)}")


def _factor_to_categorical(x):
    codes = _buffer(x, np.int32) if len(x) else np.array([], dtype=np.int32)
    levels = [str(s) for s in _attr(x, "levels") or []]
    codes = np.where(codes == _NA_INT, -1, codes - 1)
    return pd.Categorical.from_codes(codes, categories=levels)


def _dataframe_from_r(x):
    names = _names(x) or []
    data = {}
    for name, col in zip(names, x):
        if "factor" in _classes(col):
            data[name] = _factor_to_categorical(col)
        else:
            arr = _atomic_to_numpy(col) if _is_atomic(col) else [from_r(v) for v in col]
            data[name] = arr
    return pd.DataFrame(data)


def _is_atomic(x) -> bool:
    ri = _ri()
    return isinstance(x, (ri.FloatSexpVector, ri.IntSexpVector, ri.BoolSexpVector, ri.StrSexpVector, ri.ComplexSexpVector))


def from_r(x: Any) -> Any:
    """Convert an R object to Python (see module docstring)."""
    ri = _ri()
    if x is ri.NULL or x is None:
        return None
    if isinstance(x, ri.ByteSexpVector):
        return bytes(_buffer(x, np.uint8)) if len(x) else b""  # an R raw vector
    if isinstance(x, ri.ListSexpVector):
        classes = _classes(x)
        if "data.frame" in classes:
            return _dataframe_from_r(x)
        names = _names(x)
        items = [from_r(v) for v in x]
        if names is not None and all(names):
            return dict(zip(names, items))
        return items
    if _is_atomic(x):
        classes = _classes(x)
        if "factor" in classes:
            return list(_factor_to_categorical(x).astype(object))
        arr = _atomic_to_numpy(x)
        dim = _attr(x, "dim")
        if dim is not None:
            shape = tuple(int(d) for d in dim)
            return arr.reshape(shape, order="F")
        names = _names(x)
        if names is not None:
            return {n: _scalar(v) for n, v in zip(names, arr)}
        if arr.size == 1:
            return _scalar(arr[0])
        return arr
    return x  # S4 objects, environments, closures: keep the handle


def _scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v
