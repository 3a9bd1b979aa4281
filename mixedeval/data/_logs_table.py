"""Reader of a generic score table (CSV, TSV, Parquet, JSON) in long or wide form.

``columns`` maps the canonical names to the file's columns, e.g. ``{"system": "model", "item":
"id", "run": "seed", "task": "dataset"}``; canonical names the file already uses need no entry.
Long form: the table has a ``metric`` and a ``score`` column. Wide form: one column per metric
(the columns named in ``metric``, else every numeric column that is not a key). ``system`` and
``item`` are required; ``task`` defaults to the file name (for a DataFrame, which has none: the
metric's name, i.e. the score column of a wide table), ``run`` to one run, ``epoch`` (repeated
samples of an item within one evaluation) to none. Rows that repeat a (system, task, item, run,
epoch) of one metric are an error naming the table's column that tells them apart and whether it
looks like runs (``seed``, ``run``, ``replicate``, ``trial``: ``columns={"run": ...}``, CLI
``--run``) or epochs (``epoch``, ``sample``, ``attempt``, ``repeat``: ``columns={"epoch": ...}``,
CLI ``--epoch``). An optional ``cluster`` (the group of
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

from .._resources import check_memory, format_bytes
from ..errors import DataError
from ._logs_json import file_size
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
            cli = " (CLI --item COLUMN)" if k == "item" else " (on the command line: a column called system)"
            raise DataError(f"{src!r} has no {k!r} column; name it with columns={{'{k}': '<your column>'}}{cli}")
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


#: Bytes of memory reading a text table (CSV, TSV, JSON) into the score table takes per byte of
#: the file, at the peak: the parsed columns, the strings of every key cell and the checks' copies
#: (benchmarks/logs_table_memory.py measured 29 on a long table of short fields).
TEXT_TABLE_FACTOR = 30
#: The same per cell (rows x columns of the Parquet metadata) for Parquet, whose file size says
#: little (compressed, dictionary-encoded): benchmarks/logs_table_memory.py measured 184.
PARQUET_CELL_BYTES = 200
#: ... and per byte of the Parquet metadata's uncompressed size, a floor for tables of long strings.
PARQUET_FACTOR = 4


def _estimate(path: Path, src: str) -> tuple[float, str]:
    """The memory reading ``path`` needs (bytes) and how it was estimated, before reading it."""
    size = file_size(path)
    if path.suffix.lower() not in (".parquet", ".pq"):
        return size * TEXT_TABLE_FACTOR, f"{format_bytes(size)} of text x {TEXT_TABLE_FACTOR}"
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415 - pandas' Parquet engine, needed for Parquet only

        md = pq.ParquetFile(path).metadata
    except Exception as exc:  # noqa: BLE001 - not a Parquet file, or no engine: read_table says which
        raise DataError(f"could not read the Parquet metadata of {src!r}: {exc}") from exc
    cells = md.num_rows * md.num_columns
    unc = sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
    return (max(cells * PARQUET_CELL_BYTES, unc * PARQUET_FACTOR),
            f"{cells:,} cells x {PARQUET_CELL_BYTES} bytes, or {format_bytes(unc)} uncompressed x {PARQUET_FACTOR}")


def read_score_table(path: Path | pd.DataFrame, rows: Rows, *, columns: Mapping[str, str] | None = None,
                     metric: Any = None, system: str | None = None) -> None:
    """Append the scores of a long or wide table (a file or a DataFrame, not modified); a file's
    estimated memory is checked against the limit first, and running out of memory (or of
    Arrow's capacity) while reading is a DataError naming the file."""
    if isinstance(path, pd.DataFrame):
        _read_score_table(path, "<DataFrame>", rows, columns, metric, system)
        return
    src = str(path)
    need, how = _estimate(Path(path), src)
    check_memory(need, f"{src}: reading the table would", "If the machine has the memory, raise the limit; else "
                 "split the table", detail=how)
    try:
        _read_score_table(path, src, rows, columns, metric, system)
    except MemoryError:
        raise DataError(f"{src}: ran out of memory while reading the table ({how}); split it or free "
                        "memory") from None
    except Exception as exc:
        if type(exc).__module__.split(".")[0] != "pyarrow":
            raise
        raise DataError(f"{src}: pyarrow could not hold the table ({type(exc).__name__}: {exc}); split "
                        "it") from None


#: column names that say "runs of a system" / "repeated samples within one evaluation" (lower case, substrings)
_RUN_WORDS = ("seed", "run", "replicat", "trial", "rep")
_EPOCH_WORDS = ("epoch", "sample", "attempt", "repeat", "draw", "generation")


def _check_repeats(df: pd.DataFrame, src: str) -> None:
    """Rows that repeat a (system, task, item, run, epoch) of one metric are a DataError naming the
    column that tells them apart and saying whether it looks like runs or epochs (a seeds table
    read without ``run``: ``columns={"run": "seed"}``, CLI ``--run seed``). ``df``: the table with
    canonical names, long (with ``metric``) or wide (one row holds every metric)."""
    keys = [k for k in ("system", "task", "item", "metric", "run", "epoch") if k in df.columns]
    key_frame = df[keys].astype(str)
    dup = key_frame.duplicated(keep=False).to_numpy()
    if not dup.any():
        return
    r = key_frame.loc[dup].iloc[0]
    shown = ", ".join(k for k in keys if k != "metric")
    where = "the table" if src == "<DataFrame>" else repr(src)
    what = (f"{int(dup.sum())} rows of {where} repeat a ({shown}), e.g. system {r['system']!r}, item {r['item']!r}"
            + (f", metric {r['metric']!r}" if "metric" in keys else ""))
    sub = df.loc[dup]
    group = [sub[k].astype(str) for k in keys]
    candidates = [c for c in df.columns if c not in (*KEYS, "metric", "score")
                  and bool((sub[c].astype(str).groupby(group).nunique() > 1).any())]
    if not candidates:
        raise DataError(f"{what}; no other column tells them apart: if they are runs of a system (seeds, repeated "
                        "evaluations) or repeated samples of an item, add a column numbering them and name it as "
                        "run or epoch (me.read_eval_logs(..., columns={'run': ...}) or columns={'epoch': ...}; a "
                        "DataFrame given to me.summarize takes run= / epoch=; command line: --run / --epoch); "
                        "otherwise drop the duplicates")
    named = [c for c in candidates if any(w in str(c).lower() for w in (*_RUN_WORDS, *_EPOCH_WORDS))]
    col = str((named or candidates)[0])
    low = col.lower()
    runs = ("run", "runs of a system (training seeds, repeated evaluations)")
    epochs = ("epoch", "repeated samples of an item within one evaluation")
    is_epoch = any(w in low for w in _EPOCH_WORDS) and not any(w in low for w in ("seed", "run"))
    first, second = (epochs, runs) if is_epoch else (runs, epochs)
    looks = ("looks like " + ("epochs" if is_epoch else "runs")) if named else "may hold them"
    raise DataError(f"{what}; column {col!r} tells them apart and {looks}: if it names {first[1]}, read it as the "
                    f"{first[0]} column: logs = me.read_eval_logs({_source_arg(src)}, columns={{'{first[0]}': "
                    f"{col!r}}}), then pass logs to me.summarize / me.compare_logs / me.questions_needed (a "
                    f"DataFrame given to me.summarize takes {first[0]}={col!r}; command line: --{first[0]} {col}); "
                    f"if it numbers {second[1]}, as the {second[0]} column the same way (columns={{'{second[0]}': "
                    f"{col!r}}}, {second[0]}={col!r}, --{second[0]} {col})")


def _source_arg(src: str) -> str:
    """How the advice names the table: its path, or ``df`` for a DataFrame."""
    return "df" if src == "<DataFrame>" else repr(src)


def _read_score_table(path: Path | pd.DataFrame, src: str, rows: Rows, columns: Mapping[str, str] | None,
                      metric: Any, system: str | None) -> None:
    df = read_table(path) if not isinstance(path, pd.DataFrame) else path
    if system is not None and "system" not in dict(columns or {}):
        df = df.assign(system=system)
    df = _renamed(df, columns, src)
    _check_repeats(df, src)
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

    if "task" in long.columns:
        task = strings(long["task"])
    elif isinstance(path, pd.DataFrame):  # no file name: the metric (the score column of a wide table)
        task = strings(long["metric"])
    else:
        task = np.full(n, Path(src).stem, dtype=object)
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
