"""The one answer of a Bradley-Terry result (:func:`mixedeval.bradley_terry`): strengths best
first as a leaderboard, the best model against the runner-up as the headline.

A mixin of :class:`mixedeval.workflows.preferences.BradleyTerryResult` (kept apart from the
fitting code): it only reads the result's ``table`` (strengths, best first), ``ranks``
(simultaneous rank intervals and letters) and ``rank_result`` (its pairwise differences of
strengths with their standard errors, from the bootstrap replicates or the joint normal).
Strengths are log-odds of being preferred: higher is better.
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from scipy import stats

from .._answer import LegacyAnswerMixin, Direction, choose_pair, headline, leaderboard as _leaderboard

BT_DIRECTION = Direction(True, "known metric", "strength")


class BTAnswer(LegacyAnswerMixin):
    """``direction``, ``leaderboard``, ``headline``, ``checks`` (and from :class:`LegacyAnswerMixin`:
    ``headline_text()``, ``p_value``: the unadjusted z test of best vs runner-up)."""

    _no_headline_text = "a single model: nothing to compare"

    @property
    def direction(self) -> Direction:
        """Strengths (log-odds of being preferred): higher is better."""
        return BT_DIRECTION

    @functools.cached_property
    def leaderboard(self) -> pd.DataFrame:
        """The models best first: name, estimate (strength, log-odds; the reference model 0),
        std_error, conf_low, conf_high (the result's intervals), rank, rank_low, rank_high
        (simultaneous rank intervals of ``ranks``) and letters."""
        t = self.table  # type: ignore[attr-defined]
        est = pd.Series(t["estimate"].to_numpy(dtype=float), index=[str(m) for m in t["model"]])
        board = _leaderboard(est, std_error=t["std_error"].to_numpy(dtype=float),
                             conf_low=t["conf_low"].to_numpy(dtype=float),
                             conf_high=t["conf_high"].to_numpy(dtype=float), higher_is_better=True,
                             level=float(self.level), letters=False)  # type: ignore[attr-defined]
        ranks = self.ranks  # type: ignore[attr-defined]
        if ranks is not None and len(ranks):
            r = ranks.assign(name=ranks["name"].astype(str)).set_index("name")
            for c in ("rank_low", "rank_high", "letters"):
                board[c] = r.loc[list(board["name"]), c].to_numpy()
        return board

    @functools.cached_property
    def headline(self):
        """The best model against the runner-up: the difference of their strengths (log-odds)
        with its standard error from ``rank_result.pairwise`` (bootstrap replicates, or the joint
        normal), a Wald interval and unadjusted z test; None with one model."""
        pair = choose_pair(self.leaderboard)
        if pair is None:
            return None
        a, b = pair
        level = float(self.level)  # type: ignore[attr-defined]
        est, se, how = self._pair_difference(a, b)
        z = stats.norm.ppf(0.5 + level / 2)
        p = float(2 * stats.norm.sf(abs(est / se))) if se > 0 else float("nan")
        return headline(a, b, est, se, est - z * se, est + z * se, p, float("inf"),
                        f"Bradley-Terry strength difference (log-odds), {how}", self.direction, level=level)

    def _pair_difference(self, a: str, b: str) -> tuple[float, float, str]:
        t = self.table.assign(model=self.table["model"].astype(str)).set_index("model")  # type: ignore[attr-defined]
        est = float(t.loc[a, "estimate"] - t.loc[b, "estimate"])
        rr = getattr(self, "rank_result", None)
        if rr is not None:
            pw = rr.pairwise
            for _, r in pw.iterrows():
                if {str(r["name_a"]), str(r["name_b"])} == {a, b}:
                    return est, float(r["std_error"]), ("bootstrap SE" if self.n_resamples else "Wald SE")  # type: ignore[attr-defined]
        se = float(np.hypot(t.loc[a, "std_error"], t.loc[b, "std_error"]))
        return est, se, "SE as if the strengths were independent (ranks=False)"

    @functools.cached_property
    def differences(self) -> pd.DataFrame:
        """Every model's strength difference from the best (log-odds, < 0: weaker), with Wald
        intervals from the pairwise standard errors of ``rank_result`` and unadjusted z tests."""
        board = self.leaderboard
        best = str(board["name"].iloc[0])
        level = float(self.level)  # type: ignore[attr-defined]
        z = stats.norm.ppf(0.5 + level / 2)
        rows = []
        for name in board["name"].iloc[1:]:
            est, se, _ = self._pair_difference(str(name), best)
            p = float(2 * stats.norm.sf(abs(est / se))) if se > 0 else float("nan")
            rows.append({"name": str(name), "versus": best, "estimate": est, "conf_low": est - z * se,
                         "conf_high": est + z * se, "p_value": p})
        return pd.DataFrame(rows, columns=["name", "versus", "estimate", "conf_low", "conf_high", "p_value"])

    @property
    def checks(self) -> None:
        """No second analysis of the same question (None)."""
        return None
