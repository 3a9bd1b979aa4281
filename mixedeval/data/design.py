"""Describe the design of a score table: levels per factor, which factors are crossed or
nested, and whether the cells are balanced."""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..errors import DataError
from ..results import ResultMixin
from .table import as_pandas
from .validate import require_columns, require_nonempty, require_supported_dtypes


@dataclass(frozen=True, repr=False)
class DesignDescription(ResultMixin):
    """``table`` (= ``factors``): factor, n_levels, min_rows_per_level, max_rows_per_level.
    ``relations``: factor_a, factor_b, relation (crossed / partially crossed / a nested in b /
    b nested in a), cells_observed, cells_possible.
    ``balanced``: every cell of the design occurs, each with the same number of rows; factors
    nested in one another (items in tasks, seeds in systems) count their observed combinations
    as the possible ones (a complete evaluation log set, every system on every question of every
    task, is balanced)."""

    n_rows: int
    factors: Any
    relations: Any
    balanced: bool
    cell_counts: dict

    _main_table = "factors"
    _print_tables = ("factors", "relations")
    _title = "Design of the score table"

    @property
    def table(self):
        """The main table: one row per factor (``factors``)."""
        return self.factors

    def _scalars(self):
        return [("rows", self.n_rows), ("balanced", self.balanced)]


def _relation(df, a: str, b: str) -> tuple[str, int, int]:
    pairs = df[[a, b]].drop_duplicates()
    n_a, n_b = df[a].nunique(), df[b].nunique()
    observed, possible = len(pairs), n_a * n_b
    if observed == possible:
        return "crossed", observed, possible
    a_in_b = pairs.groupby(a, observed=True, sort=False)[b].nunique().max() == 1  # each a-level in one b-level
    b_in_a = pairs.groupby(b, observed=True, sort=False)[a].nunique().max() == 1
    if a_in_b and n_a > n_b:
        return f"{a} nested in {b}", observed, possible
    if b_in_a and n_b > n_a:
        return f"{b} nested in {a}", observed, possible
    return "partially crossed", observed, possible


def _possible_cells(df, factors: list[str], relations: list[dict]) -> int:
    """The number of cells a complete design has: factors nested in one another (items in tasks,
    seeds in systems) form one group whose observed combinations are its possible ones; the
    groups are crossed, so the cells multiply. Without nesting: the product of the levels."""
    group = {f: f for f in factors}

    def root(f: str) -> str:
        while group[f] != f:
            f = group[f]
        return f

    for r in relations:
        if " nested in " in r["relation"]:
            group[root(r["factor_a"])] = root(r["factor_b"])
    members: dict[str, list[str]] = {}
    for f in factors:
        members.setdefault(root(f), []).append(f)
    n = 1
    for cols in members.values():
        n *= len(df[cols].dropna().drop_duplicates())
    return n


def _require_hashable(df, column: str) -> None:
    s = df[column]
    if s.dtype != object:
        return
    try:
        s.nunique()
    except TypeError:
        require_supported_dtypes(df, [column])  # names the list/dict values
        raise DataError(f"factor column {column!r} holds values that cannot be compared; convert it with "
                        f"df[{column!r}].astype(str)") from None


def describe_design(data: Any, factors: Sequence[str]) -> DesignDescription:
    """Levels per factor, pairwise crossed/nested relations, and balance of the full cells.

    A pair is *crossed* when every combination of levels occurs, *nested* when each level of
    one factor occurs with exactly one level of the other (e.g. seeds within systems).
    """
    df = as_pandas(data)
    require_nonempty(df)
    if isinstance(factors, str):
        factors = [factors]
    factors = list(factors)
    if len(set(map(str, factors))) != len(factors):
        raise DataError(f"factors lists a column twice ({factors}); name each factor once")
    require_columns(df, factors)
    for f in factors:
        _require_hashable(df, f)
        if df[f].isna().all():
            raise DataError(f"factor column {f!r} has no non-missing values; fill it in or leave it out of factors")
    rows = []
    for f in factors:
        counts = df[f].value_counts(dropna=True)
        rows.append({"factor": f, "n_levels": int(counts.size), "min_rows_per_level": int(counts.min()),
                     "max_rows_per_level": int(counts.max())})
    rel = []
    for a, b in itertools.combinations(factors, 2):
        r, obs, pos = _relation(df, a, b)
        rel.append({"factor_a": a, "factor_b": b, "relation": r, "cells_observed": obs, "cells_possible": pos})
    cell = df.groupby(factors, observed=True, sort=False).size() if factors else pd.Series([len(df)])
    if cell.size == 0:  # every row misses at least one factor
        raise DataError(f"no row has a value in every factor ({', '.join(map(str, factors))}); fill in the "
                        "missing levels or describe fewer factors")
    balanced = bool(cell.nunique() == 1 and cell.size == _possible_cells(df, factors, rel))
    return DesignDescription(
        n_rows=len(df),
        factors=pd.DataFrame(rows),
        relations=pd.DataFrame(rel, columns=["factor_a", "factor_b", "relation", "cells_observed", "cells_possible"]),
        balanced=balanced,
        cell_counts={"min": int(cell.min()), "max": int(cell.max()), "n_cells": int(cell.size)},
    )
