"""Checks of the canonical long score table read from evaluation logs.

Nothing is dropped silently; each problem is a DataError that names it and the fix, or a
ResultWarning on the result:

* duplicated item ids within one run (the same system, task, run, metric and item twice): a
  DataError (a log read twice is caught earlier, by file path);
* one task name with different task configurations (versions / dataset / scenario, task
  arguments such as n-shot or Inspect ``task_args`` that do not define the systems, or lm-eval
  ``doc_hash`` values that differ for the same document): a DataError;
* a metric present for some systems of a task only: a ``metric_missing`` warning (a DataError
  when that metric was asked for);
* items missing for some systems or runs of a task: a DataError naming the systems, the counts
  and examples, or with ``drop_missing=True`` those items are dropped for every system with a
  ``missing_rows`` warning;
* missing (NaN) scores: left out and counted in a ``missing_scores`` warning, so that the missing
  item check sees them.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import pandas as pd

from ..errors import DataError
from ..results import ResultWarning


def _examples(values, limit: int = 3) -> str:
    vals = list(values)
    out = ", ".join(repr(v) for v in vals[:limit])
    return out + (f" (+{len(vals) - limit} more)" if len(vals) > limit else "")


def check_duplicates(df: pd.DataFrame) -> None:
    keys = ["system", "task", "run", "epoch", "metric", "item"]
    dup = df.duplicated(keys, keep=False)
    if dup.any():
        d = df.loc[dup, keys + ["source"]].drop_duplicates(keys)
        r = d.iloc[0]
        raise DataError(
            f"{int(dup.sum())} rows repeat an item id within one run, e.g. item {r['item']!r} of task {r['task']!r}, "
            f"system {r['system']!r}, run {r['run']!r}, epoch {r['epoch']!r}, metric {r['metric']!r} (from "
            f"{r['source']}); item ids must be unique within a run and epoch (repeated samples of an item belong in "
            "an epoch column: columns={'epoch': ...}); "
            "otherwise a task logged twice in one run, or two different tasks under one name -- read "
            "them separately or rename one task"
        )


def _check_task_args(logs: Sequence[Any], defining: Collection[str]) -> None:
    """The task arguments of one task's logs agree, apart from those that define the systems."""
    by_task: dict[str, list] = {}
    for lf in logs:
        by_task.setdefault(lf.task, []).append(lf)
    for task, group in sorted(by_task.items()):
        keys = sorted({k for lf in group for k in lf.fields if k.startswith("task_args.") and k not in defining})
        differ = [k for k in keys if len({lf.fields.get(k) for lf in group}) > 1]
        if not differ:
            continue
        configs = {tuple(lf.fields.get(k) for k in differ) for lf in group}
        vals = "; ".join(f"{k[len('task_args.'):]}: {', '.join(sorted({str(lf.fields.get(k)) for lf in group}))}"
                         for k in differ)
        raise DataError(
            f"task {task!r} comes from {len(configs)} different task configurations (task arguments {vals}) that do "
            f"not define the systems; if they are what the systems differ by (prompting strategies of one model), say "
            f"so: system=['model', {', '.join(repr(k) for k in differ)}] (CLI --system-from), or name the systems "
            "with a {name: path} dict; if they are different tasks, read them separately"
        )


def check_mixed_tasks(df: pd.DataFrame, logs: Sequence[Any] = (), defining: Collection[str] = ()) -> None:
    """One task name, one configuration: the task signatures (version, n-shot, dataset, scenario)
    and lm-eval's document hashes agree, and so do the task arguments of ``logs`` (the files read,
    :class:`._logs_systems.LogFile`) except the fields in ``defining`` (those that define the
    systems: ``system=["model", "task_args.cot"]``)."""
    _check_task_args([lf for lf in logs if lf.fields is not None], set(defining))
    sig = df.dropna(subset=["task_signature"]).groupby("task", observed=True)["task_signature"].unique()
    for task, sigs in sig.items():
        if len(sigs) > 1:
            raise DataError(
                f"task {task!r} comes from {len(sigs)} different task configurations ({_examples(sigs, 2)}); these "
                "are different tasks under one name: read the logs of each configuration separately, or rename the "
                "task in one of them"
            )
    h = df.dropna(subset=["item_hash"])
    if len(h):
        n = h.groupby(["task", "item"], observed=True)["item_hash"].nunique()
        bad = n[n > 1]
        if len(bad):
            task, item = bad.index[0]
            raise DataError(
                f"task {task!r}: {len(bad)} documents have different contents (doc_hash) in different logs, e.g. "
                f"doc_id {item!r}; the logs come from different versions of the task: read them separately"
            )


def check_metrics(df: pd.DataFrame, requested: Sequence[str] | None) -> list[ResultWarning]:
    out = []
    n_sys = df.groupby("task", observed=True)["system"].nunique()
    per = df.groupby(["task", "metric"], observed=True)["system"].nunique()
    if (per.to_numpy() == n_sys.reindex(per.index.get_level_values("task")).to_numpy()).all():
        return out  # the common case, vectorized: every metric logged for every system of its task
    for task, sub in df.groupby("task", observed=True, sort=True):
        systems = set(sub["system"].unique())
        per_metric = sub.groupby("metric", observed=True)["system"].unique()
        for metric, have in per_metric.items():
            lack = sorted(systems - set(have))
            if not lack or (requested is not None and metric not in requested):
                continue
            msg = (f"task {task!r}: metric {metric!r} is reported for {len(have)} of {len(systems)} systems; "
                   f"missing for {_examples(lack)}")
            if requested is not None:
                raise DataError(msg + "; log it for every system, or compare only the systems that have it "
                                      "(systems=[...])")
            out.append(ResultWarning("metric_missing", msg + "; compare that metric only among the systems "
                                                             "that have it"))
    return out


def _missing_report(sub: pd.DataFrame) -> tuple[set, pd.Series]:
    """Items of a (task, metric) block not scored in every (system, run) cell, and the missing count
    per system."""
    items = set(sub["item"].unique())
    lack: set = set()
    per_sys: dict = {}
    for (system, _run), cell in sub.groupby(["system", "run"], observed=True, sort=True):
        miss = items - set(cell["item"])
        if miss:
            lack |= miss
            per_sys[system] = per_sys.get(system, 0) + len(miss)
    return lack, pd.Series(per_sys, dtype=int)


def check_missing(df: pd.DataFrame, drop_missing: bool) -> tuple[pd.DataFrame, list[ResultWarning]]:
    warnings: list[ResultWarning] = []
    drops = []
    keys = ["task", "metric"]
    n_items = df.groupby(keys, observed=True)["item"].nunique()
    per_cell = df.groupby([*keys, "system", "run"], observed=True)["item"].nunique()
    full = per_cell.to_numpy() == n_items.reindex(per_cell.index.droplevel(["system", "run"])).to_numpy()
    if full.all():  # the common case, vectorized: every (system, run) cell has every item
        return df, warnings
    incomplete = set(per_cell.index[~full].droplevel(["system", "run"]))
    for (task, metric), sub in df.groupby(keys, observed=True, sort=True):
        if (task, metric) not in incomplete:
            continue
        lack, per_sys = _missing_report(sub)
        if not lack:
            continue
        detail = ", ".join(f"{s!r}: {int(n)}" for s, n in per_sys.items())
        msg = (f"task {task!r}, metric {metric!r}: {len(lack)} of {sub['item'].nunique()} items lack a score for "
               f"some system or run (missing cells per system: {detail}), e.g. items {_examples(sorted(lack))}")
        if not drop_missing:
            raise DataError(msg + "; every system needs a score for every item to be compared paired: rerun the "
                                  "incomplete evaluations, or pass drop_missing=True to drop these items for every "
                                  "system")
        drops.append((task, metric, lack))
        warnings.append(ResultWarning("missing_rows", f"dropped {msg[0].lower()}{msg[1:]}"))
    if drops:
        mask = pd.Series(False, index=df.index)
        for task, metric, lack in drops:
            mask |= (df["task"] == task) & (df["metric"] == metric) & df["item"].isin(lack)
        df = df.loc[~mask]
    return df, warnings


def drop_nan_scores(df: pd.DataFrame) -> tuple[pd.DataFrame, list[ResultWarning]]:
    nan = df["score"].isna()
    if not nan.any():
        return df, []
    ex = df.loc[nan].iloc[0]
    return df.loc[~nan], [ResultWarning(
        "missing_scores", f"{int(nan.sum())} scores are missing (NaN), e.g. item {ex['item']!r} of system "
                          f"{ex['system']!r}, task {ex['task']!r}, metric {ex['metric']!r}; they are left out and "
                          "treated as missing items")]
