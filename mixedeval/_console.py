"""Console output shared by the command line (:mod:`mixedeval.cli`) and the demo
(:mod:`mixedeval.demo`): JSON on stdout and titled text tables."""
from __future__ import annotations

import json
import sys
from typing import Any

import pandas as pd

from .results import jsonable


def print_json(obj: Any) -> None:
    """``obj`` as indented JSON on stdout (numpy/pandas values converted; NaN becomes null)."""
    json.dump(jsonable(obj), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def print_table(title: str, df: Any) -> None:
    """A titled table (``== title ==``) on stdout, without its all-missing columns (as the report
    shows it; ``--json`` keeps every column), a missing cell as ``NA`` (never ``NaN``); a
    non-DataFrame value is printed as it is."""
    if isinstance(df, pd.DataFrame) and len(df):
        df = df.loc[:, df.notna().any(axis=0).to_numpy()]
    with pd.option_context("display.max_columns", 30, "display.width", 160, "display.max_rows", 100):
        print(f"\n== {title} ==")
        print(df.to_string(index=False, na_rep="NA") if isinstance(df, pd.DataFrame) else df)
