"""The report section of :func:`mixedeval.arena_audit`: "How robust is this leaderboard?" -- the
leaderboard with its intervals, tie groups and votes-to-flip column, the sentence on the #1, the
votes that flip it, and the probes' verdicts."""
from __future__ import annotations

from typing import Any

from .blocks import Section
from .figures import interval_plot
from .preferences import DECIMALS, PLOT_MAX_MODELS

#: decimals of the audit's tables
_DECIMALS = {**DECIMALS, "gap": 3, "refit_gap": 3, "approx_votes": 0, "votes_to_flip": 0, "value": 3}
#: votes listed in the report per target (the full list is in the result's ``flips.votes``)
MAX_VOTES_SHOWN = 30


def _share(v: Any) -> str:
    try:
        x = 100.0 * float(v)
    except (TypeError, ValueError):
        return ""
    return "" if x != x else (f"{x:.2g}%" if x < 1 else f"{x:.1f}%")


def arena(sec: Section, res: Any, ctx: Any = None) -> None:
    """me.arena_audit: leaderboard with intervals, tie groups and votes to flip; probes; votes."""
    sec.text(res.robustness_text())
    board = res.table.copy()
    board["votes_to_flip_share"] = [_share(x) for x in board["votes_to_flip_share"]]
    sec.table(board, decimals=_DECIMALS,
              caption=f"Leaderboard ({res.fit.interval_method}; simultaneous {res.fit.level:.0%} rank intervals; "
                      "tie_group: neighbours not told apart share a group); votes_to_flip: the fewest votes whose "
                      "removal puts the model below the next one (approximate maximum influence perturbation, "
                      "confirmed by an exact refit)")
    if len(board) <= PLOT_MAX_MODELS:
        fig = sec.guarded("strength plot", interval_plot, list(board["name"]), board["estimate"], board["conf_low"],
                          board["conf_high"], xlabel="strength (log-odds)", title="Strengths")
        if fig is not None:
            sec.figure(fig, "Strengths with their intervals, best first")
    checks = res.probes[["check", "verdict", "value", "p_value"]]
    sec.table(checks, decimals=_DECIMALS,
              caption="Probes: each with a verdict computed from its own numbers (agrees: nothing here weakens the "
                      "leaderboard; differs: read the leaderboard with this in mind)")
    flips = res.flips.table.copy()
    for c in ("approx_share", "share"):
        flips[c] = [_share(x) for x in flips[c]]
    top = flips[flips["target"] != "neighbours"]
    sec.table(top, decimals=_DECIMALS,
              caption="Votes to flip the top rank and the named pairs: approx_votes from the linear approximation, "
                      "votes_to_flip confirmed by an exact refit without them")
    votes = res.flips.votes
    one = votes[votes["target"] == "top rank"].head(MAX_VOTES_SHOWN)
    if len(one):
        sec.table(one, caption=f"The votes whose removal changes the #1 (first {MAX_VOTES_SHOWN} shown)")
    if res.judge_influence is not None and len(res.judge_influence):
        sec.table(res.judge_influence, caption="Annotator influence: leave one judge out (exact refits)")
    if res.tie_conventions is not None and len(res.tie_conventions):
        sec.table(res.tie_conventions, caption="Ranks under each tie convention")
    sec.warnings(list(res.warnings))
    sec.headline = res.robustness_text()
