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


#: the answer lists every pair up to this many models (beyond, ``differences`` is None: the
#: pairs grow as k^2 / 2, and the headline needs one)
MAX_PAIR_MODELS = 200


def _pair_table(t: pd.DataFrame, rank_result: Any, n_resamples: int, names: list[str],
                level: float, interval: str | None = None, df: float | None = None,
                cov: pd.DataFrame | None = None) -> tuple[pd.DataFrame, str]:
    """Every pair (a before b in ``names``): delta = strength of a - strength of b, its standard
    error from ``rank_result.pairwise`` (bootstrap replicates, or the joint normal) or, without
    it, as if the strengths were independent; Wald interval, unadjusted z test, Holm ``p_adj``;
    and where the SE comes from."""
    s = t.assign(model=t["model"].astype(str)).set_index("model")
    est, sd = s.loc[names, "estimate"].to_numpy(dtype=float), s.loc[names, "std_error"].to_numpy(dtype=float)
    ia, ib = np.triu_indices(len(names), 1)
    delta = est[ia] - est[ib]
    se = np.hypot(sd[ia], sd[ib])
    how = "SE as if the strengths were independent (ranks=False)"
    if rank_result is not None and len(rank_result.pairwise):
        pw = rank_result.pairwise
        pw = pw[pw["name_a"].astype(str).isin(names) & pw["name_b"].astype(str).isin(names)]
        lookup = {(str(a), str(b)): float(v) for a, b, v in zip(pw["name_a"], pw["name_b"], pw["std_error"])}
        got = np.array([lookup.get((names[i], names[j]), lookup.get((names[j], names[i]), np.nan))
                        for i, j in zip(ia, ib)])
        if np.all(np.isfinite(got)):
            se, how = got, (interval if interval else "bootstrap SE" if n_resamples else "Wald SE")
    if cov is not None:  # the sandwich's covariance of the strengths: exact SEs of the differences
        v = cov.loc[names, names].to_numpy(dtype=float)
        se, how = np.sqrt(np.maximum(v[ia, ia] + v[ib, ib] - 2 * v[ia, ib], 0.0)), f"SE from the {interval}"
    dist = stats.norm if df is None else stats.t(df)
    z = z_quantile(level) if df is None else float(stats.t.ppf(0.5 + level / 2, df))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(se > 0, 2 * dist.sf(np.abs(delta) / np.where(se > 0, se, 1.0)), np.nan)
    pairs = pd.DataFrame({"system_a": [names[i] for i in ia], "system_b": [names[j] for j in ib], "delta": delta,
                          "std_error": se, "conf_low": delta - z * se, "conf_high": delta + z * se, "p_value": p})
    pairs["p_adj"] = adjust_pvalues(p, "holm") if len(p) else p
    return pairs, how


def bt_answer(table: pd.DataFrame, ranks: Any, rank_result: Any, level: float, n_resamples: int,
              interval: str | None = None, df: float | None = None, cov: pd.DataFrame | None = None) -> Answer:
    """The one answer of Bradley-Terry strengths (higher is better): the leaderboard
    (:func:`_board`), the headline (the best model against the runner-up: the difference of their
    strengths in log-odds with the standard error of ``rank_result.pairwise`` -- bootstrap
    replicates, or the joint normal -- a Wald interval and the unadjusted z test), and every pair
    best first with the same Wald intervals and z tests (``p_adj``: Holm over the pairs).
    ``interval``: the sandwich's name (its SE from the joint normal of its covariance), ``df``: its
    t degrees of freedom (clustered sandwich: t intervals and tests instead of z); ``cov``: the
    strengths' covariance (models x models), whose differences give the pairs' SEs."""
    board = _board(table, ranks, level)
    pair = choose_pair(board)
    if pair is None:
        return Answer(direction=BT_DIRECTION, leaderboard=board, headline=None, no_headline_text=_NO_HEADLINE,
                      method="Bradley-Terry strengths")
    names = list(board["name"])
    many = len(names) > MAX_PAIR_MODELS
    pairs, how = _pair_table(table, rank_result, n_resamples, list(pair) if many else names, level, interval, df, cov)
    method = f"Bradley-Terry strength difference (log-odds), {how}"
    row = pair_row(pairs, *pair)[0]
    head = headline(pair[0], pair[1], float(row["delta"]), float(row["std_error"]), float(row["conf_low"]),
                    float(row["conf_high"]), float(row["p_value"]), float("inf") if df is None else float(df), method,
                    BT_DIRECTION,
                    level=float(level))
    return Answer(direction=BT_DIRECTION, leaderboard=board, headline=head,
                  differences=None if many else best_first_pairs(pairs, names, True), no_headline_text=_NO_HEADLINE,
                  method=method)
