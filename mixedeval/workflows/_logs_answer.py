"""The one answer of :func:`mixedeval.compare_logs` and :func:`mixedeval.summarize`: the
best-first leaderboard, the paired differences best first and the headline pair, all from the
same analysis of the call's :class:`~mixedeval.workflows.logs.design.EvalDesign`
(:mod:`mixedeval.workflows._paired`: epochs reduced within the question, cluster-robust with
clusters, the pooled run variance with several runs), so that both workflows, the CLI and the
report say the same thing."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import _answer
from ..results import ResultWarning
from ._paired import SHORT, paired_differences, system_means
from .logs.design import EvalDesign


@dataclass(frozen=True)
class LogsAnswer:
    """leaderboard (pooled, or the only task), leaderboards (per task, with a task column; None
    with one task), table (the paired differences best first: system_a above system_b on the
    leaderboard, delta its advantage in the better direction), headline, the means table, the
    covariance matrices of the means, the label of the headline's rows and the order (best first)."""

    leaderboard: pd.DataFrame
    leaderboards: pd.DataFrame | None
    table: pd.DataFrame
    headline: _answer.Headline | None
    means: pd.DataFrame
    vcovs: dict[str, pd.DataFrame]
    label: str
    order: list[str]

    def answer(self, direction: _answer.Direction, checks: pd.DataFrame | None = None,
               no_headline_text: str = "no pair of systems to compare") -> _answer.Answer:
        """The :class:`mixedeval._answer.Answer`: differences are the headline's rows (pooled over
        tasks, or the only task) of :attr:`table`, best first."""
        t = self.table
        diffs = t[t["task"] == self.label] if "task" in t.columns else t
        diffs = diffs[[c for c in _answer.PAIR_COLUMNS if c in diffs.columns]].reset_index(drop=True)
        method = str(self.headline.method) if self.headline is not None else "paired question-level analysis"
        return _answer.Answer(direction=direction, leaderboard=self.leaderboard, headline=self.headline,
                              differences=diffs, checks=checks, rank_kind="simultaneous",
                              no_headline_text=no_headline_text, method=method)


def answer_notes(direction: _answer.Direction) -> list[ResultWarning]:
    """The warning that says a direction was assumed (an unknown metric: higher is better), so that
    ``res.warnings`` in Python says what the printout says."""
    if direction.source != "assumed":
        return []
    return [ResultWarning("direction_assumed", f"direction: {direction.note}")]


def best_first(table: pd.DataFrame, order: list[str], higher_is_better: bool,
               signed: tuple[str, ...] = ("t_value",)) -> pd.DataFrame:
    """A pair table (task, system_a, system_b, delta = a - b, conf_low, conf_high, ...) best first
    (:func:`mixedeval._answer.best_first_pairs`: system_a above system_b on the leaderboard, delta
    and the ``signed`` columns in the better direction), its columns in their order."""
    if table is None or not len(table):
        return table
    keep = tuple(c for c in table.columns if c not in ("task", *_answer.PAIR_COLUMNS))
    out = _answer.best_first_pairs(table, order, higher_is_better, keep=keep,
                                   signed=tuple(c for c in signed if c in table.columns))
    return out[list(table.columns)]


def _board(means: pd.DataFrame, vcov: pd.DataFrame, task: str, direction: _answer.Direction,
           level: float) -> pd.DataFrame:
    m = means[means["task"] == task].set_index("system")
    names = list(m.index)
    V = vcov.loc[names, names].to_numpy(dtype=float)
    return _answer.leaderboard(m["estimate"], std_error=m["std_error"], conf_low=m["conf_low"],
                               conf_high=m["conf_high"], vcov=V if np.isfinite(V).all() else None,
                               higher_is_better=direction.higher_is_better, level=level)


def headline_from_row(table: pd.DataFrame, task: str, pair: tuple[str, str] | None, direction: _answer.Direction,
                      level: float, unit: str, scale: float, reference: Any = None,
                      task_name: str | None = None) -> _answer.Headline | None:
    """The headline of ``pair`` from the paired-differences table (a - b on the score's scale;
    its unadjusted p-value)."""
    if pair is None:
        return None
    found = _answer.pair_row(table, *pair, task=task)
    if found is None:
        return None
    r, sign = found
    lo, hi = sorted((sign * float(r["conf_low"]), sign * float(r["conf_high"])))
    return _answer.headline(pair[0], pair[1], sign * float(r["delta"]), float(r["std_error"]), lo, hi,
                            float(r["p_value"]), float(r["df"]), SHORT.get(str(r["method"]), "paired t"), direction,
                            level=level, unit=unit, scale=scale, reference=reference, task=task_name)


def logs_answer(design: EvalDesign, direction: _answer.Direction, *, level: float, adjust: str, pooled_label: str,
                reference: Any = None) -> LogsAnswer:
    """Leaderboard(s), paired differences best first and the headline of the design."""
    systems = design.systems
    tasks = len(design.tasks) > 1
    means, vcovs = system_means(design, systems, level=level, pooled_label=pooled_label if tasks else None)
    label = pooled_label if tasks else str(means["task"].iloc[0])
    board = _board(means, vcovs[label], label, direction, level)
    boards = None
    if tasks:
        per = [_board(means, vcovs[t], t, direction, level).assign(task=t) for t in sorted(means["task"].unique())
               if t != pooled_label]
        boards = pd.concat(per, ignore_index=True)
        boards = boards[["task", *_answer.LEADERBOARD_COLUMNS]]
    order = list(board["name"]) + [x for x in systems if x not in set(board["name"])]
    raw = paired_differences(design, order, level=level, adjust=adjust, pooled_label=pooled_label if tasks else None)
    unit, scale = _answer.unit_scale(design.scores["score"], direction.metric)  # the one unit rule of every headline
    pair = _answer.choose_pair(board, reference)
    head = headline_from_row(raw, label, pair, direction, level, unit, scale, reference)
    return LogsAnswer(leaderboard=board, leaderboards=boards, table=best_first(raw, order, direction.higher_is_better),
                      headline=head, means=means, vcovs=vcovs, label=label, order=order)
