"""The one answer of :func:`mixedeval.compare_logs` and :func:`mixedeval.summarize`: the
best-first leaderboard, the paired differences in leaderboard order and the headline pair,
all from the same analysis (:mod:`mixedeval.workflows._paired`: epochs averaged within the
question, cluster-robust with ``cluster``, the pooled run variance with several runs), so that
both workflows, the CLI and the report say the same thing."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import _answer
from ._paired import SHORT, paired_differences, system_means


@dataclass(frozen=True)
class LogsAnswer:
    """leaderboard (pooled, or the only task), leaderboards (per task, with a task column; None
    with one task), table (the paired differences, system_a before system_b in leaderboard
    order), headline, the means table and the covariance matrices of the means."""

    leaderboard: pd.DataFrame
    leaderboards: pd.DataFrame | None
    table: pd.DataFrame
    headline: _answer.Headline | None
    means: pd.DataFrame
    vcovs: dict[str, pd.DataFrame]
    label: str


def _board(means: pd.DataFrame, vcov: pd.DataFrame, task: str, direction: _answer.Direction,
           level: float) -> pd.DataFrame:
    m = means[means["task"] == task].set_index("system")
    names = list(m.index)
    V = vcov.loc[names, names].to_numpy(dtype=float)
    return _answer.leaderboard(m["estimate"], std_error=m["std_error"], conf_low=m["conf_low"],
                               conf_high=m["conf_high"], vcov=V if np.isfinite(V).all() else None,
                               higher_is_better=direction.higher_is_better, level=level)


def pair_row(table: pd.DataFrame, task: str, a: str, b: str) -> tuple[pd.Series, float] | None:
    """The row of the pair (a, b) in ``task`` and the sign turning its delta into a - b."""
    t = table[table["task"] == task]
    hit = t[(t["system_a"] == a) & (t["system_b"] == b)]
    if len(hit):
        return hit.iloc[0], 1.0
    hit = t[(t["system_a"] == b) & (t["system_b"] == a)]
    if len(hit):
        return hit.iloc[0], -1.0
    return None


def headline_from_row(table: pd.DataFrame, task: str, pair: tuple[str, str] | None, direction: _answer.Direction,
                      level: float, unit: str, scale: float, reference: Any = None,
                      task_name: str | None = None) -> _answer.Headline | None:
    """The headline of ``pair`` from the paired-differences table (its unadjusted p-value)."""
    if pair is None:
        return None
    found = pair_row(table, task, *pair)
    if found is None:
        return None
    r, sign = found
    lo, hi = sorted((sign * float(r["conf_low"]), sign * float(r["conf_high"])))
    return _answer.headline(pair[0], pair[1], sign * float(r["delta"]), float(r["std_error"]), lo, hi,
                            float(r["p_value"]), float(r["df"]), SHORT.get(str(r["method"]), "paired t"), direction,
                            level=level, unit=unit, scale=scale, reference=reference, task=task_name)


def logs_answer(avg: pd.DataFrame, direction: _answer.Direction, *, level: float, adjust: str, cluster: str | None,
                runs: bool, pooled_label: str, reference: Any = None) -> LogsAnswer:
    """Leaderboard(s), paired differences in leaderboard order and the headline of the
    epoch-averaged rows ``avg`` (system, task, item, run, score[, cluster])."""
    systems = sorted(map(str, avg["system"].unique()))
    tasks = avg["task"].nunique() > 1
    means, vcovs = system_means(avg, systems, level=level, cluster=cluster, runs=runs,
                                pooled_label=pooled_label if tasks else None)
    label = pooled_label if tasks else str(means["task"].iloc[0])
    board = _board(means, vcovs[label], label, direction, level)
    boards = None
    if tasks:
        per = [_board(means, vcovs[t], t, direction, level).assign(task=t) for t in sorted(means["task"].unique())
               if t != pooled_label]
        boards = pd.concat(per, ignore_index=True)
        boards = boards[["task", *_answer.LEADERBOARD_COLUMNS]]
    order = list(board["name"]) + [x for x in systems if x not in set(board["name"])]
    table = paired_differences(avg, order, level=level, adjust=adjust, pooled_label=pooled_label if tasks else None,
                               cluster=cluster, runs=runs)
    unit, scale = _answer.unit_scale(avg["score"], direction.metric)  # the one unit rule of every headline
    pair = _answer.choose_pair(board, reference)
    head = headline_from_row(table, label, pair, direction, level, unit, scale, reference)
    return LogsAnswer(leaderboard=board, leaderboards=boards, table=table, headline=head, means=means, vcovs=vcovs,
                      label=label)
