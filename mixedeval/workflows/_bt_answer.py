"""The one answer of a Bradley-Terry result (:func:`mixedeval.bradley_terry`): strengths best
first as a leaderboard, the best model against the runner-up as the headline.

A mixin of :class:`mixedeval.workflows.preferences.BradleyTerryResult` (kept apart from the
fitting code): it only reads the result's ``table`` (strengths, best first), ``ranks``
(simultaneous rank intervals and letters) and ``rank_result`` (its pairwise differences of
strengths with their standard errors, from the bootstrap replicates or the joint normal).
Strengths are log-odds of being preferred: higher is better.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._answer import (Answer, AnswerMixin, Direction, best_first_pairs, choose_pair, headline, leaderboard as _leaderboard,
                       pair_row, z_quantile)
from ..padjust import adjust_pvalues

BT_DIRECTION = Direction(True, "known metric", "strength")
_NO_HEADLINE = "a single model: nothing to compare"


class BTAnswer(AnswerMixin):
    """The answer's views (:class:`mixedeval._answer.AnswerMixin`) on a Bradley-Terry result,
    whose ``answer`` is built by :func:`bt_answer`."""

    _no_headline_text = _NO_HEADLINE
    _answer_priority = 40


def _board(t: pd.DataFrame, ranks: Any, level: float) -> pd.DataFrame:
    """The models best first: name, estimate (strength, log-odds; the reference model 0),
    std_error, conf_low, conf_high (the result's intervals), rank, rank_low, rank_high
    (simultaneous rank intervals of ``ranks``) and letters."""
    est = pd.Series(t["estimate"].to_numpy(dtype=float), index=[str(m) for m in t["model"]])
    board = _leaderboard(est, std_error=t["std_error"].to_numpy(dtype=float),
                         conf_low=t["conf_low"].to_numpy(dtype=float),
                         conf_high=t["conf_high"].to_numpy(dtype=float), higher_is_better=True,
                         level=float(level), letters=False)
    if ranks is not None and len(ranks):
        r = ranks.assign(name=ranks["name"].astype(str)).set_index("name")
        for c in ("rank_low", "rank_high", "letters"):
            board[c] = r.loc[list(board["name"]), c].to_numpy()
    return board


def _pair_difference(t: pd.DataFrame, rank_result: Any, n_resamples: int, a: str, b: str) -> tuple[float, float, str]:
    """(strength of a - strength of b, its standard error, where the SE comes from): the SE of
    ``rank_result.pairwise`` (bootstrap replicates, or the joint normal), else as if independent."""
    t = t.assign(model=t["model"].astype(str)).set_index("model")
    est = float(t.loc[a, "estimate"] - t.loc[b, "estimate"])
    if rank_result is not None:
        hit = pair_row(rank_result.pairwise.astype({"name_a": str, "name_b": str}), a, b, a_col="name_a",
                       b_col="name_b")
        if hit is not None:
            return est, float(hit[0]["std_error"]), ("bootstrap SE" if n_resamples else "Wald SE")
    se = float(np.hypot(t.loc[a, "std_error"], t.loc[b, "std_error"]))
    return est, se, "SE as if the strengths were independent (ranks=False)"


def bt_answer(table: pd.DataFrame, ranks: Any, rank_result: Any, level: float, n_resamples: int) -> Answer:
    """The one answer of Bradley-Terry strengths (higher is better): the leaderboard
    (:func:`_board`), the headline (the best model against the runner-up: the difference of their
    strengths in log-odds with the standard error of ``rank_result.pairwise`` -- bootstrap
    replicates, or the joint normal -- a Wald interval and the unadjusted z test), and every pair
    best first with the same Wald intervals and z tests (``p_adj``: Holm over the pairs)."""
    board = _board(table, ranks, level)
    pair = choose_pair(board)
    if pair is None:
        return Answer(direction=BT_DIRECTION, leaderboard=board, headline=None, no_headline_text=_NO_HEADLINE,
                      method="Bradley-Terry strengths")
    z = z_quantile(level)
    names = list(board["name"])
    rows, how = [], ""
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            est, se, how_ = _pair_difference(table, rank_result, n_resamples, a, b)
            how = how or how_
            p = float(2 * stats.norm.sf(abs(est / se))) if se > 0 else float("nan")
            rows.append({"system_a": a, "system_b": b, "delta": est, "std_error": se, "conf_low": est - z * se,
                         "conf_high": est + z * se, "p_value": p})
    pairs = pd.DataFrame(rows)
    pairs["p_adj"] = adjust_pvalues(pairs["p_value"].to_numpy(dtype=float), "holm")
    method = f"Bradley-Terry strength difference (log-odds), {how}"
    row = pair_row(pairs, *pair)[0]
    head = headline(pair[0], pair[1], float(row["delta"]), float(row["std_error"]), float(row["conf_low"]),
                    float(row["conf_high"]), float(row["p_value"]), float("inf"), method, BT_DIRECTION,
                    level=float(level))
    return Answer(direction=BT_DIRECTION, leaderboard=board, headline=head,
                  differences=best_first_pairs(pairs, names, True), no_headline_text=_NO_HEADLINE, method=method)
