"""Checks of a workflow's input shared by :func:`mixedeval.summarize` and
:func:`mixedeval.compare_logs` (issue 33): what a score table cannot mean, refused with the fix
before any work."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..data._logs import EvalLogs
from ..errors import DataError

#: values that cannot label a cluster (unhashable, or a collection of labels)
_NOT_LABELS = (list, dict, set, np.ndarray)


def is_table(data: Any) -> bool:
    """Whether ``data`` is a score table (not logs, paths or a ``{system: path}`` dict)."""
    return not isinstance(data, (EvalLogs, str, Path, list, tuple, Mapping))


def check_column_args(**names: Any) -> None:
    """Column-name arguments (``score=``, ``system=``, ``item=``, ...) are strings (None where
    optional), whatever the input: with logs they are unused, and a number there is a slip."""
    for role, name in names.items():
        if name is not None and not isinstance(name, str):
            raise DataError(f"{role}= must name a column of the score table (a string), got {name!r}")


def check_table_systems(data: Any, systems: Any) -> None:
    """``systems=`` selects or renames systems while reading logs; a score table names its systems
    in its system column, and a ``systems=`` given with one would be ignored: refused."""
    if systems is not None and is_table(data):
        how = "renames" if isinstance(systems, Mapping) else "selects"
        raise DataError(f"systems={systems!r} {how} systems while reading logs; a score table names its systems in "
                        "its system column, so systems= is refused for a table: filter or rename that column first, "
                        "e.g. df[df['system'].isin([...])] or df.replace({'system': {'old': 'new'}})")


def check_cluster_labels(values: pd.Series, column: str) -> None:
    """A cluster is one label per row: lists, dicts, sets or arrays are refused (pandas cannot
    group them: a raw "unhashable type" later)."""
    if values.dtype != object:
        return
    kinds = set(map(type, values.to_numpy()))
    bad = [k for k in kinds if issubclass(k, _NOT_LABELS)]
    if bad:
        first = next(v for v in values.to_numpy() if isinstance(v, _NOT_LABELS))
        n = int(values.map(lambda v: isinstance(v, _NOT_LABELS)).sum())
        raise DataError(f"cluster column {column!r} holds {n} value(s) that are {bad[0].__name__}s, e.g. {first!r}: a "
                        "cluster is one label per question (a string or a number); pick one element or join them, "
                        f"e.g. df[{column!r}] = df[{column!r}].map(lambda v: '+'.join(map(str, v)))")


def check_repeated_questions(out: pd.DataFrame, epoch_column: str | None) -> None:
    """Without an epoch column, a score table has one row per (system, task, item, run): rows
    repeating one are duplicates or unlabelled epochs, refused as :func:`mixedeval.read_eval_logs`
    (and so :func:`mixedeval.compare_logs`) refuses them."""
    if epoch_column is not None:
        return
    keys = ["system", "task", "item", "run"]
    dup = out.duplicated(keys, keep=False)
    if dup.any():
        r = out.loc[dup].iloc[0]
        raise DataError(f"{int(dup.sum())} rows repeat a question (system, task, item, run), e.g. system "
                        f"{r['system']!r}, item {r['item']!r}: drop duplicated rows (df.drop_duplicates()), or name the "
                        "column that numbers repeated samples of a question with epoch= (rows of one question are "
                        "its epochs only when an epoch column says so)")
