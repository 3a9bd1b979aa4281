"""Accept any tabular input and return a private pandas copy (the caller's data is never
modified)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError
from .validate import require_unique_columns


def read_table(path: str | Path):
    """Read a CSV, TSV, Parquet or JSON (records or lines) file into pandas."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"data file {str(p)!r} does not exist")
    suffix = p.suffix.lower()
    try:
        if suffix in (".csv", ".txt"):
            return pd.read_csv(p)
        if suffix == ".tsv":
            return pd.read_csv(p, sep="\t")
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(p)
        if suffix == ".json":
            try:
                return pd.read_json(p)
            except ValueError:
                return pd.read_json(p, lines=True)
        if suffix in (".jsonl", ".ndjson"):
            return pd.read_json(p, lines=True)
    except DataError:
        raise
    except Exception as exc:
        raise DataError(f"could not read {str(p)!r}: {exc}") from exc
    raise DataError(f"unknown file type {suffix!r} for {str(p)!r}; use .csv, .tsv, .parquet or .json")


def as_pandas(data: Any, *, what: str = "data"):
    """A pandas DataFrame copy of ``data``.

    Accepts a pandas DataFrame, a pyarrow Table, a polars DataFrame/LazyFrame, a dict of
    columns, a list of records, or a path to a CSV/Parquet/JSON file.
    """
    if data is None:
        raise DataError(f"{what} is None; pass a DataFrame or a path to a CSV/Parquet/JSON file")
    if isinstance(data, pd.DataFrame):
        require_unique_columns(data, what)  # before copying: duplicated names break column access
        return data.copy(deep=True)
    if isinstance(data, (str, Path)):
        df = read_table(data)
    else:
        mod = type(data).__module__.split(".")[0]
        try:
            if mod == "pyarrow":
                df = data.to_pandas()
            elif mod == "polars":
                if hasattr(data, "collect") and not hasattr(data, "to_pandas"):
                    data = data.collect()
                df = data.to_pandas()
            elif isinstance(data, (dict, list)):
                df = pd.DataFrame(data)
            else:
                raise DataError(
                    f"{what} has unsupported type {type(data).__name__}; pass a pandas/polars DataFrame, a pyarrow "
                    "Table or a file path"
                )
        except DataError:
            raise
        except Exception as exc:  # e.g. a dict of columns of different lengths
            raise DataError(f"could not turn {what} ({type(data).__name__}) into a table: {exc}") from exc
    require_unique_columns(df, what)
    return df
