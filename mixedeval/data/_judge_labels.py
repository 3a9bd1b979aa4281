"""Judge scores joined to people's labels: the input of :func:`mixedeval.judge_corrected`.

Judge scores come from evaluation logs (Inspect AI's model-graded scorers ``model_graded_qa`` /
``model_graded_fact``, whose C / P / I grades Inspect's reader maps to 1 / 0.5 / 0; lm-eval and
HELM metrics; through :func:`mixedeval.read_eval_logs`) or from a score table; the labels are a
table (CSV, Parquet, a DataFrame) with the sample id, the system (when there are several), the
epoch (when the logs have several) and the people's score. They are joined by (task,) system,
sample id and epoch. Refused with a :class:`~mixedeval.DataError` (the label table's rows named):

* labels that match no judged answer (a misspelt id, another system's name, epoch 0 vs 1);
* duplicated labels (two labels of one answer: average them or keep one first);
* labels without a system column when the logs hold several systems, or without an epoch
  column when the logs have several epochs (a label belongs to one answer);
* labelled subsets that cannot be random samples: labels on one system only, or on one task only
  of several (the correction needs a random sample of every system's answers; label the others
  or select the labelled ones with ``systems=`` / the task's rows).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ._logs import EvalLogs, read_eval_logs
from ._table_guard import guarded_table
from .validate import require_columns, require_finite


def _scores_table(scores: Any, metric: Any, format: str, columns: Mapping[str, str],  # noqa: A002
                  drop_missing: bool = False) -> pd.DataFrame:
    """system, task, item, epoch, judge_score of logs or of a score table."""
    if isinstance(scores, EvalLogs) or isinstance(scores, (str, Path, list, tuple)) and not _is_table_path(scores):
        logs = scores if isinstance(scores, EvalLogs) else read_eval_logs(scores, format, metric=metric,
                                                                           drop_missing=drop_missing)
        have = sorted(set(logs.table["metric"]))
        if metric is None:
            if len(have) != 1:
                raise DataError(f"the logs hold {len(have)} metrics ({', '.join(map(str, have[:10]))}); name the "
                                "judge's with metric= (e.g. 'model_graded_qa')")
            metric = have[0]
        s = logs.scores(str(metric))
        return pd.DataFrame({"system": s["system"].astype(str), "task": s["task"].astype(str),
                             "item": s["item"].astype(str), "epoch": s["epoch"].astype(str),
                             "judge_score": s["score"].to_numpy(dtype=float)})
    if metric is not None:
        raise DataError(f"metric={metric!r} picks the judge's metric in evaluation logs; a score table names the "
                        f"judge's column with judge_score= (here {columns['judge_score']!r})")
    df = guarded_table(scores, what="the judge scores")
    df.columns = [str(c) for c in df.columns]
    need = [columns["system"], columns["item"], columns["judge_score"]]
    require_columns(df, need + [c for c in (columns.get("epoch"), columns.get("task")) if c], "the judge scores")
    require_finite(df, columns["judge_score"], role="judge score column")
    return pd.DataFrame({
        "system": df[columns["system"]].astype(str).to_numpy(),
        "task": df[columns["task"]].astype(str).to_numpy() if columns.get("task") else "(all items)",
        "item": df[columns["item"]].astype(str).to_numpy(),
        "epoch": df[columns["epoch"]].astype(str).to_numpy() if columns.get("epoch") else "1",
        "judge_score": df[columns["judge_score"]].to_numpy(dtype=float)})


def _is_table_path(x: Any) -> bool:
    return isinstance(x, (str, Path)) and Path(x).suffix.lower() in (".csv", ".tsv", ".parquet", ".pq") \
        and not str(x).endswith(".json")


def _labels_table(labels: Any, id_column: str, human_score: str, system: str | None, epoch: str | None,
                  task: str | None) -> pd.DataFrame:
    lab = guarded_table(labels, what="the labels")
    lab.columns = [str(c) for c in lab.columns]
    require_columns(lab, [id_column, human_score, system, epoch, task], "the labels")
    require_finite(lab, human_score, role="human score column of the labels")
    out = pd.DataFrame({"item": lab[id_column].astype(str).to_numpy(),
                        "human_score": lab[human_score].to_numpy(dtype=float)}, index=lab.index)
    for role, col in (("system", system), ("epoch", epoch), ("task", task)):
        if col is not None:
            out[role] = lab[col].astype(str).to_numpy()
    return out


def _check_label_keys(lab: pd.DataFrame, sc: pd.DataFrame, keys: list[str]) -> None:
    if sc["system"].nunique() > 1 and "system" not in keys:
        raise DataError(f"the judge scores hold {sc['system'].nunique()} systems but the labels have no system "
                        "column: a label belongs to one system's answer; name it with label_system=")
    if sc.groupby(["system", "task", "item"])["epoch"].nunique().max() > 1 and "epoch" not in keys:
        raise DataError("the judge scores have several epochs per item but the labels have no epoch column: a label "
                        "belongs to one epoch's answer; name it with label_epoch=")
    dup = lab.duplicated(keys, keep=False)
    if dup.any():
        rows = list(lab.index[dup][:5])
        raise DataError(f"{int(lab.duplicated(keys).sum())} duplicated labels (same {', '.join(keys)}), label rows "
                        f"{rows}; keep one label per answer (or average the raters' labels first)")


def _check_random(out: pd.DataFrame) -> None:
    lab = out["human_score"].notna()
    by_sys = out.loc[lab, "system"].unique()
    if out["system"].nunique() > 1 and len(by_sys) == 1:
        raise DataError(f"only system {by_sys[0]!r} has labels: the labelled answers are not a random sample of every "
                        "system's answers; label a random sample of each system (the correction needs them)")
    tasks = out["task"].unique()
    by_task = out.loc[lab, "task"].unique()
    if len(tasks) > 1 and len(by_task) < len(tasks):
        missing = sorted(set(tasks) - set(by_task))
        raise DataError(f"tasks {missing[:5]} have no labels while others do: the labelled answers are not a random "
                        "sample of all answers; label every task, or analyse the labelled tasks' rows only")


def read_judge_scores(scores: Any, labels: Any = None, *, metric: Any = None, format: str = "auto",  # noqa: A002
                      system: str = "system", item: str = "item", epoch: str | None = None, task: str | None = None,
                      judge_score: str = "judge_score", label_id: str = "id", label_system: str | None = None,
                      label_epoch: str | None = None, label_task: str | None = None,
                      human_score: str = "human_score", drop_missing: bool = False) -> pd.DataFrame:
    """Judge scores with people's labels joined, ready for :func:`mixedeval.judge_corrected`.

    Parameters
    ----------
    scores : evaluation logs (paths, globs, directories, an :class:`~mixedeval.EvalLogs`; Inspect
        ``model_graded_qa`` / ``model_graded_fact`` scores, lm-eval, HELM) or a score table
        whose columns ``system``, ``item``, ``judge_score`` (and ``epoch``, ``task``) name the roles.
    labels : a table (DataFrame, CSV, Parquet) of people's scores: ``label_id`` (the sample id),
        ``human_score``, and ``label_system`` / ``label_epoch`` / ``label_task`` where the scores
        have several systems / epochs / tasks. None: no labels (``human_score`` all missing).
    metric, format : the judge's metric in the logs and the log format (:func:`mixedeval.read_eval_logs`).
    drop_missing : logs only: drop the items some system lacks, for every system
        (:func:`mixedeval.read_eval_logs`; its error about incomplete evaluations advises it).

    Returns a DataFrame with columns system, task, item (``task/item`` with several tasks),
    epoch, judge_score, human_score (NaN where unlabelled); call
    ``me.judge_corrected(df, epoch="epoch")``. See the module docstring for the errors.
    """
    cols = {"system": system, "item": item, "epoch": epoch, "task": task, "judge_score": judge_score}
    if not isinstance(drop_missing, bool):
        raise DataError(f"drop_missing must be True or False, not {drop_missing!r}")
    sc = _scores_table(scores, metric, format, cols, drop_missing)
    sc["human_score"] = np.nan
    if labels is not None:
        lab = _labels_table(labels, label_id, human_score, label_system, label_epoch, label_task)
        keys = ["item"] + [k for k in ("system", "epoch", "task") if k in lab.columns]
        _check_label_keys(lab, sc, keys)
        idx = pd.MultiIndex.from_frame(sc[keys])
        hit = pd.MultiIndex.from_frame(lab[keys]).isin(idx)
        if not hit.all():
            bad = lab.loc[~hit, keys].head(3).to_dict("records")
            raise DataError(f"{int((~hit).sum())} labels match no judged answer (by {', '.join(keys)}), e.g. {bad}, "
                            f"label rows {list(lab.index[~hit][:5])}; check the ids, system names and epochs "
                            "(Inspect epochs count from 1)")
        hs = lab.set_index(keys)["human_score"]
        sc["human_score"] = hs.reindex(idx).to_numpy()
        _check_random(sc)
    if sc["task"].nunique() > 1:
        sc["item"] = sc["task"] + "/" + sc["item"]
    return sc.reset_index(drop=True)


__all__ = ["read_judge_scores"]
