"""Score tables: loading (pandas, pyarrow, polars, CSV, Parquet, JSON), validation with clear
errors, and a description of the design (crossed / nested / balanced)."""
from __future__ import annotations

from .table import as_pandas
from .validate import (
    require_columns,
    require_finite,
    require_levels,
    require_nonempty,
    require_unique,
    validate_score_table,
)

__all__ = [
    "as_pandas",
    "require_columns",
    "require_finite",
    "require_levels",
    "require_nonempty",
    "require_unique",
    "validate_score_table",
]
