"""The response data of an IRT fit: one row per (system, item) with ``y`` correct out of ``n`` trials.

Accepted inputs (:func:`prepare_responses`):

* a **long score table** (one row per system x item [x run x epoch]) with a 0/1 (or boolean)
  ``score`` column, or ``score`` = the number correct out of the ``trials=`` column;
* :func:`mixedeval.read_eval_logs` output (:class:`mixedeval.EvalLogs`) or a **folder of logs**
  (read with ``read_eval_logs``): one ``metric=`` is used (required when the logs have several);
  items of different tasks are kept apart as ``task/item``;
* a **wide table**: one row per system (a ``system`` column, or the index), one column per item
  (0/1, NaN where not answered), as leaderboard "details" files are shaped.

Several rows of one system and item (runs, epochs, repeated trials) are summed into ``y`` of
``n`` trials (the glossary's rule: epochs are repeated trials of the item in a GLMM). With
``higher_is_better=False`` (the score counts failures: error, wrong) the response is flipped to
``n - y``. System and item labels become strings (factor levels in sorted order).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..data._logs import EvalLogs, read_eval_logs
from ..data._table_guard import guarded_table
from ..errors import DataError
from ..results import ResultWarning


@dataclass(frozen=True)
class Responses:
    """The aggregated responses: ``long`` (system, item categoricals; y, n floats), the labels,
    whether every row is a single trial (``binary``), the score's name and the warnings so far."""

    long: pd.DataFrame
    systems: tuple[str, ...]
    items: tuple[str, ...]
    binary: bool
    score: str
    flipped: bool = False
    source: str = "long table"
    warnings: tuple[ResultWarning, ...] = field(default=())
    by_group: pd.DataFrame | None = None  # system, item, grp, y, n (for DIF)

    def matrix(self, what: str = "p") -> pd.DataFrame:
        """systems x items: ``"p"`` proportion correct, ``"y"`` correct, ``"n"`` trials (NaN / 0 where unanswered)."""
        idx = (self.long["system"].cat.codes.to_numpy(), self.long["item"].cat.codes.to_numpy())
        out = np.full((len(self.systems), len(self.items)), np.nan if what == "p" else 0.0)
        vals = {"p": self.long["y"] / self.long["n"], "y": self.long["y"], "n": self.long["n"]}[what]
        out[idx] = vals.to_numpy(dtype=float)
        return pd.DataFrame(out, index=pd.Index(self.systems, name="system"), columns=pd.Index(self.items, name="item"))


def _from_logs(logs: EvalLogs, metric: str | None) -> tuple[pd.DataFrame, str]:
    t = logs.table
    metrics = sorted(map(str, t["metric"].unique()))
    if metric is None:
        if len(metrics) != 1:
            raise DataError(f"the logs hold several metrics {metrics}; pass metric= the 0/1 one to analyse "
                            "(e.g. metric='acc')")
        metric = metrics[0]
    elif metric not in metrics:
        raise DataError(f"metric={metric!r} is not in the logs; available: {metrics}")
    t = t[t["metric"].astype(str) == metric]
    item = t["item"].astype(str)
    if t["task"].nunique() > 1:
        item = t["task"].astype(str) + "/" + item
    return pd.DataFrame({"system": t["system"].astype(str).to_numpy(), "item": item.to_numpy(),
                         "score": t["score"].to_numpy()}), metric


def _from_wide(df: pd.DataFrame, system: str) -> pd.DataFrame:
    if system in df.columns:
        wide = df.set_index(system)
    else:
        wide = df
    items = [c for c in wide.columns]
    bad = [c for c in items if not (pd.api.types.is_numeric_dtype(wide[c]) or pd.api.types.is_bool_dtype(wide[c]))]
    if bad:
        raise DataError(f"a wide table needs one numeric 0/1 column per item (and the {system!r} column or the index "
                        f"naming the systems); column(s) {bad[:5]} are not numeric. For a long table pass score=, "
                        "system= and item= naming its columns")
    long = wide.astype(float).rename_axis("system").reset_index().melt(id_vars="system", var_name="item",
                                                                       value_name="score")
    long["system"] = long["system"].astype(str)
    long["item"] = long["item"].astype(str)
    return long


def _table(data: Any, *, score: str, system: str, item: str, trials: str | None, metric: str | None,
           group: str | None = None) -> tuple[pd.DataFrame, str, str]:
    """(system, item, score[, trials]) rows, the score's name and the source kind."""
    if isinstance(data, (str, os.PathLike)) and Path(data).is_dir():
        data = read_eval_logs(data, metric=metric)
    if isinstance(data, EvalLogs):
        long, name = _from_logs(data, metric)
        return long, name, "evaluation logs"
    df = guarded_table(data)
    if metric is not None:
        raise DataError(f"metric={metric!r} picks one metric of evaluation logs; a table names its 0/1 score column "
                        f"with score= (here {score!r})")
    if item in df.columns and score in df.columns:
        missing = [c for c in (system, trials) if c is not None and c not in df.columns]
        if missing:
            raise DataError(f"column(s) {missing} not found in data; available columns: {list(df.columns)[:20]}")
        cols = {"system": df[system].astype(str), "item": df[item].astype(str), "score": df[score]}
        if trials is not None:
            cols["trials"] = df[trials]
        if group is not None:
            if group not in df.columns:
                raise DataError(f"dif={group!r} is not a column of the data; available columns: {list(df.columns)[:20]}")
            cols["grp"] = df[group]
        return pd.DataFrame(cols), score, "long table"
    if group is not None:
        raise DataError(f"dif={group!r} as a column name needs a long table (score, system, item columns); for logs or a "
                        "wide table pass dif= a dict or Series mapping each system to its group")
    if trials is not None:
        raise DataError(f"trials={trials!r} needs a long table with the score={score!r} and item={item!r} columns")
    if score in df.columns or item in df.columns:
        raise DataError(f"a long table needs both the score={score!r} and item={item!r} columns; found only "
                        f"{[c for c in (score, item) if c in df.columns]} (columns: {list(df.columns)[:20]})")
    return _from_wide(df, system), "score", "wide table"


def _numeric(s: pd.Series, what: str) -> np.ndarray:
    if pd.api.types.is_bool_dtype(s.dtype):
        return s.to_numpy(dtype=float)
    v = pd.to_numeric(s, errors="coerce")
    bad = v.isna() & s.notna()
    if bad.any():
        raise DataError(f"{what} has values that are not numbers (e.g. {s[bad].iloc[0]!r}); IRT needs 0/1 scores "
                        "(correct / incorrect) or counts correct with trials=")
    return v.to_numpy(dtype=float)


def _check_infinite(y: np.ndarray, n: np.ndarray, score: str, trials: str | None, rows: pd.DataFrame) -> None:
    """An infinite score or trial count is a broken value, not a missing answer (NaN): a
    DataError naming the column and a row, instead of dropping it with the missing ones."""
    for v, what in ((y, f"score column {score!r}"), (n, f"trials column {trials!r}")):
        bad = np.isinf(v)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{what} has {int(bad.sum())} infinite value(s) (e.g. {v[i]:g} for system "
                            f"{rows['system'].iloc[i]!r}, item {rows['item'].iloc[i]!r}); IRT needs 0/1 scores (or "
                            "counts with trials=): fix those values, or set them to NaN where the system did not answer")


def _check_values(y: np.ndarray, n: np.ndarray, score: str, trials: str | None) -> None:
    if trials is None:
        bad = ~np.isin(y, (0.0, 1.0))
        if bad.any():
            raise DataError(f"score column {score!r} has values other than 0 and 1 (e.g. {y[bad][0]:g}); IRT models "
                            "correct/incorrect answers: threshold a graded score first (e.g. score >= 0.5), or pass "
                            "trials= the number of trials when the score counts correct answers")
        return
    if (n <= 0).any() or np.any(np.abs(n - np.round(n)) > 1e-9):
        raise DataError(f"trials column {trials!r} must hold positive integers (the number of trials per row)")
    if (y < 0).any() or (y > n).any() or np.any(np.abs(y - np.round(y)) > 1e-9):
        raise DataError(f"score column {score!r} must count correct answers: integers from 0 to the row's trials "
                        f"({trials!r})")


def prepare_responses(data: Any, *, score: str = "score", system: str = "system", item: str = "item",
                      trials: str | None = None, metric: str | None = None,
                      higher_is_better: bool = True, group: str | None = None) -> Responses:
    """The responses of ``data`` aggregated per (system, item) (see the module docstring);
    ``group``: a column whose levels split the rows for DIF (aggregated per system, item, group
    in ``by_group``)."""
    rows, name, source = _table(data, score=score, system=system, item=item, trials=trials, metric=metric,
                                group=group)
    warns: list[ResultWarning] = []
    y = _numeric(rows["score"], f"score column {name!r}")
    n = np.ones(len(y)) if trials is None else _numeric(rows["trials"], f"trials column {trials!r}")
    _check_infinite(y, n, name, trials, rows)
    keep = np.isfinite(y) & np.isfinite(n) & rows["system"].notna().to_numpy() & rows["item"].notna().to_numpy()
    if not keep.all():
        if source != "wide table":
            warns.append(ResultWarning("missing_rows", f"{int((~keep).sum())} row(s) without a score were left out"))
        rows, y, n = rows[keep], y[keep], n[keep]
    _check_values(y, n, name, trials)
    if not higher_is_better:
        y = n - y
    agg = pd.DataFrame({"system": rows["system"].to_numpy(), "item": rows["item"].to_numpy(), "y": y, "n": n})
    agg = agg.groupby(["system", "item"], sort=True, observed=True)[["y", "n"]].sum().reset_index()
    systems = tuple(sorted(agg["system"].unique()))
    items = tuple(sorted(agg["item"].unique()))
    if len(systems) < 2 or len(items) < 2:
        raise DataError(f"IRT needs at least 2 systems and 2 items; got {len(systems)} system(s) and {len(items)} "
                        f"item(s) (check the system={system!r} and item={item!r} columns)")
    agg["system"] = pd.Categorical(agg["system"], categories=list(systems))
    agg["item"] = pd.Categorical(agg["item"], categories=list(items))
    by_group = None
    if group is not None:
        by_group = _by_group(rows, y, n, systems, items, group)
    return Responses(long=agg, systems=systems, items=items, binary=bool((agg["n"] == 1).all()), score=name,
                     flipped=not higher_is_better, source=source, warnings=tuple(warns), by_group=by_group)


def _by_group(rows: pd.DataFrame, y: np.ndarray, n: np.ndarray, systems: tuple, items: tuple, group: str) -> pd.DataFrame:
    g = rows["grp"]
    if g.isna().any():
        raise DataError(f"dif column {group!r} has {int(g.isna().sum())} missing value(s); every row needs a group")
    g = g.astype(str).to_numpy()
    levels = sorted(set(g))
    if len(levels) < 2:
        raise DataError(f"dif column {group!r} has a single group {levels}; DIF compares 2 or more groups")
    agg = pd.DataFrame({"system": rows["system"].to_numpy(), "item": rows["item"].to_numpy(), "grp": g, "y": y, "n": n})
    agg = agg.groupby(["system", "item", "grp"], sort=True, observed=True)[["y", "n"]].sum().reset_index()
    agg["system"] = pd.Categorical(agg["system"], categories=list(systems))
    agg["item"] = pd.Categorical(agg["item"], categories=list(items))
    agg["grp"] = pd.Categorical(agg["grp"], categories=levels)
    return agg


def system_groups(resp: Responses, mapping: Any, name: str = "dif") -> pd.DataFrame:
    """``resp.long`` with ``grp`` = the group of each row's system (``mapping``: dict or Series system -> group)."""
    m = {str(k): v for k, v in (mapping.items() if hasattr(mapping, "items") else [])}
    missing = [s for s in resp.systems if s not in m or pd.isna(m[s])]
    if missing:
        raise DataError(f"{name}= gives no group for system(s) {missing[:5]}; map every system to its group")
    out = resp.long.copy()
    g = out["system"].astype(str).map(lambda s: str(m[s]))
    levels = sorted(set(g))
    if len(levels) < 2:
        raise DataError(f"{name}= puts every system in one group {levels}; DIF compares 2 or more groups")
    out["grp"] = pd.Categorical(g, categories=levels)
    return out


def subset(resp: Responses, items: list[str]) -> Responses:
    """The responses to ``items`` only (levels dropped)."""
    long = resp.long[resp.long["item"].isin(items)].copy()
    long["item"] = pd.Categorical(long["item"].astype(str), categories=list(items))
    long["system"] = long["system"].cat.remove_unused_categories()
    return Responses(long=long.reset_index(drop=True), systems=tuple(long["system"].cat.categories),
                     items=tuple(items), binary=resp.binary, score=resp.score, flipped=resp.flipped,
                     source=resp.source, warnings=resp.warnings)
