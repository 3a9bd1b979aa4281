"""Reader of a generic score table (CSV, TSV, Parquet, JSON) in long or wide form.

``columns`` maps the canonical names to the file's columns, e.g. ``{"system": "model", "item":
"id", "run": "seed", "task": "dataset"}``; canonical names the file already uses need no entry.
Long form: the table has a ``metric`` and a ``score`` column. Wide form: one column per metric
(the columns named in ``metric``, else every numeric column that is not a key). ``system`` and
``item`` are required; ``task`` defaults to the file name, ``run`` to one run, ``epoch`` (repeated
samples of an item within one evaluation) to none. An optional ``cluster`` (the group of
questions an item belongs to: a passage, a document, a template; ``columns={"cluster":
"passage"}`` or a column named ``cluster``) is carried into the table as a ``cluster`` column for
clustered standard errors (``me.compare_logs(..., cluster="cluster")``).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pandas.api import types as pt

from ..errors import DataError
from ._logs_rows import Rows
from .table import read_table

KEYS = ("system", "task", "item", "run", "epoch", "cluster")
TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq", ".jsonl", ".ndjson", ".json", ".txt")


def _renamed(df: pd.DataFrame, columns: Mapping[str, str] | None, src: str) -> pd.DataFrame:
    columns = dict(columns or {})
    bad = [k for k in columns if k not in (*KEYS, "metric", "score")]
    if bad:
        raise DataError(f"columns= maps the canonical names system, task, item, run, epoch, cluster, metric, score "
                        f"to your "
                        f"columns; "
                        f"got unknown key(s) {bad}")
    missing = [v for v in columns.values() if v not in df.columns]
    if missing:
        raise DataError(f"columns= names {missing}, not found in {src!r}; its columns: {list(df.columns)[:20]}")
    out = df.rename(columns={v: k for k, v in columns.items()})
    for k in ("system", "item"):
        if k not in out.columns:
            raise DataError(f"{src!r} has no {k!r} column; name it with columns={{'{k}': '<your column>'}}")
    return out


def _wide_metrics(df: pd.DataFrame, metric: Any, src: str) -> list[str]:
    if metric is not None:
        names = [metric] if isinstance(metric, str) else list(metric)
        missing = [m for m in names if m not in df.columns]
        if missing:
            raise DataError(f"metric column(s) {missing} not found in the wide table {src!r}; its columns: "
                            f"{list(df.columns)[:20]}")
        return names
    names = [c for c in df.columns if c not in KEYS and pt.is_numeric_dtype(df[c]) and not pt.is_bool_dtype(df[c])]
    names += [c for c in df.columns if c not in KEYS and pt.is_bool_dtype(df[c])]
    if not names:
        raise DataError(f"the wide table {src!r} has no numeric metric column; pass metric=[...] or a long table "
                        "with metric and score columns")
    return names


def read_score_table(path: Path | pd.DataFrame, rows: Rows, *, columns: Mapping[str, str] | None = None,
                     metric: Any = None, system: str | None = None) -> None:
    """Append the scores of a long or wide table (a file or a DataFrame, not modified)."""
    src = str(path) if not isinstance(path, pd.DataFrame) else "<DataFrame>"
    df = read_table(path) if not isinstance(path, pd.DataFrame) else path
    if system is not None and "system" not in dict(columns or {}):
        df = df.assign(system=system)
    df = _renamed(df, columns, src)
    if "metric" in df.columns and "score" in df.columns:
        long = df
    else:
        names = _wide_metrics(df, metric, src)
        keys = [k for k in KEYS if k in df.columns]
        long = df.melt(id_vars=keys, value_vars=names, var_name="metric", value_name="__value__")
        long = long.rename(columns={"__value__": "score"})
    score = pd.to_numeric(long["score"], errors="coerce")
    bad = score.isna() & long["score"].notna()
    if bad.any():
        raise DataError(f"{int(bad.sum())} scores in {src!r} are not numbers, e.g. {long['score'][bad].iloc[0]!r}; "
                        "convert them before reading")
    n = len(long)

    def strings(col: pd.Series) -> np.ndarray:
        return col.astype(str).to_numpy(dtype=object)  # vectorized (iterating arrow strings is slow)

    task = strings(long["task"]) if "task" in long.columns else np.full(n, Path(src).stem, dtype=object)
    run = strings(long["run"]) if "run" in long.columns else np.full(n, None, dtype=object)
    epoch = strings(long["epoch"]) if "epoch" in long.columns else np.full(n, None, dtype=object)
    c = rows.cols
    c["system"].extend(strings(long["system"]).tolist())
    c["task"].extend(task.tolist())
    c["item"].extend(strings(long["item"]).tolist())
    c["metric"].extend(strings(long["metric"]).tolist())
    c["score"].extend(np.asarray(score, dtype=float).tolist())
    c["run_group"].extend(run.tolist())
    c["run_index"].extend([None] * n)
    c["source"].extend([src] * n)
    c["task_signature"].extend([None] * n)
    c["item_hash"].extend([None] * n)
    c["epoch"].extend(epoch.tolist())
    extra = {}
    if "cluster" in long.columns:  # an extra column (the other formats have none); missing stays None
        cl = long["cluster"]
        extra["cluster"] = np.where(cl.notna().to_numpy(), strings(cl), None).tolist()
        rows.extra.setdefault("cluster", [None] * (len(rows) - n))  # rows before this table's
    for k, col in rows.extra.items():
        col.extend(extra.get(k, [None] * n))
