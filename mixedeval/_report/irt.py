"""The report section of :func:`mixedeval.irt`: the answer, abilities with intervals and rank
intervals, the Wright map (abilities and difficulties on one axis), item characteristic and
information curves, the flagged items and the full item table."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..inference._irt_items import eta_matrix, information
from .blocks import Section, fmt_p
from .figures import _figure, interval_plot, rank_interval_plot

_BLUE = "#1f5f99"
_RED = "#b03a2e"
_GREY = "#888888"


def wright_map(abilities: Any, items: Any, title: str = ""):
    """Abilities (left) and item difficulties (right) as histograms on one vertical scale;
    flagged items in red."""
    th = abilities["ability"].to_numpy(dtype=float)
    b = items["difficulty"].to_numpy(dtype=float)
    flagged = (items["flag_reasons"] != "").to_numpy()
    ok = np.isfinite(b)
    vals = np.r_[th[np.isfinite(th)], b[ok]]
    lo, hi = np.percentile(vals, [0.5, 99.5]) if len(vals) else (-3.0, 3.0)
    lo, hi = min(lo, -1.0), max(hi, 1.0)
    bins = np.linspace(lo, hi, 31)
    fig = _figure((6.4, 4.2))
    ax_l, ax_r = fig.subplots(1, 2, sharey=True)
    ax_l.hist(np.clip(th, lo, hi), bins=bins, orientation="horizontal", color=_BLUE)
    ax_l.invert_xaxis()
    ax_l.set_xlabel("systems")
    ax_l.set_ylabel("ability / difficulty")
    ax_r.hist([np.clip(b[ok & ~flagged], lo, hi), np.clip(b[ok & flagged], lo, hi)], bins=bins,
              orientation="horizontal", color=[_GREY, _RED], stacked=True, label=["items", "flagged items"])
    ax_r.set_xlabel("items")
    ax_r.legend(fontsize=8, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def curves_plot(res: Any, what: str, max_items: int = 30, title: str = ""):
    """Item characteristic curves (``what="p_correct"``) or item information curves with the test
    information (``what="information"``) over the abilities' range; at most ``max_items`` items
    (the flagged ones first, then evenly spaced by difficulty)."""
    items = res.items
    idx = _pick(items, max_items)
    grid = res._grid(None)  # noqa: SLF001 - the result's own default grid
    a, b = res.parameters()
    fig = _figure((6.4, 3.8))
    ax = fig.add_subplot()
    if what == "information":
        info = information(a, b, grid)
        for i in idx:
            ax.plot(grid, info[:, i], color=_RED if items["flag_reasons"].iat[i] else _GREY, lw=0.8)
        ax2 = ax.twinx()
        ax2.plot(grid, np.nansum(info, axis=1), color=_BLUE, lw=2)
        ax2.set_ylabel("test information", color=_BLUE)
        ax.set_ylabel("item information")
    else:
        p = 1.0 / (1.0 + np.exp(-eta_matrix(a, b, grid)))
        for i in idx:
            ax.plot(grid, p[:, i], color=_RED if items["flag_reasons"].iat[i] else _GREY, lw=0.9)
        ax.set_ylabel("P(correct)")
        ax.set_ylim(0, 1)
    ax.set_xlabel("ability")
    if title:
        ax.set_title(title, fontsize=11)
    return fig


def _pick(items: Any, k: int) -> list[int]:
    ok = np.flatnonzero(np.isfinite(items["difficulty"].to_numpy(dtype=float)))
    flagged = [i for i in ok if items["flag_reasons"].iat[i]]
    rest = [i for i in ok if not items["flag_reasons"].iat[i]]
    rest = sorted(rest, key=lambda i: items["difficulty"].iat[i])
    room = max(0, k - len(flagged[:k]))
    if len(rest) > room > 0:
        rest = [rest[j] for j in np.linspace(0, len(rest) - 1, room).round().astype(int)]
    return flagged[:k] + rest[:room]


def _abilities(sec: Section, res: Any) -> None:
    answer = res.answer
    board = answer.leaderboard
    unit = "logits" if res.model.startswith("rasch") else "N(0, 1) scale"
    sec.table(board, f"Abilities ({unit}), best first, with {res.level:.0%} intervals (conditional SDs); "
                     f"{answer.rank_label}; systems sharing a letter cannot be told apart")
    fig = sec.guarded("ability plot", interval_plot, list(board["name"]), board["estimate"], board["conf_low"],
                      board["conf_high"], xlabel=f"ability ({unit})", title="Abilities")
    if fig is not None:
        sec.figure(fig, f"Abilities with {res.level:.0%} intervals")
    fig = sec.guarded("rank interval plot", rank_interval_plot, board, title="Rank intervals")
    if fig is not None:
        sec.figure(fig, f"Rank of each system with its {answer.rank_kind} interval")


def irt(sec: Section, res: Any, ctx: Any = None) -> None:
    """me.irt: summary, abilities, Wright map, curves, flagged items, all items, DIF, covariates."""
    sec.kv([(k, v if isinstance(v, (int, float, str)) else str(v)) for k, v in res._scalars()]  # noqa: SLF001
           + [("model", res.formula)], caption="Settings and summary")
    _abilities(sec, res)
    for what, func, args, caption in (
            ("Wright map", wright_map, (res.abilities, res.items), "Wright map: systems' abilities and items' "
             "difficulties on one scale (flagged items in red)"),
            ("item characteristic curves", curves_plot, (res, "p_correct"), "Item characteristic curves "
             "(at most 30 items; flagged in red)"),
            ("information curves", curves_plot, (res, "information"), "Item information (grey; flagged in red) and "
             "test information (blue)")):
        fig = sec.guarded(what, func, *args)
        if fig is not None:
            sec.figure(fig, caption)
    flagged = res.flagged
    if len(flagged):
        sec.table(flagged[["item", "difficulty", "discrimination", "p_correct", "item_rest_correlation", "outfit",
                           "fit_p_adj", "flag_reasons"]], f"Flagged items ({len(flagged)} of {len(res.items)})")
    else:
        sec.text(f"No item is flagged (of {len(res.items)}).")
    sec.table(res.items, "All items: difficulty and discrimination with Wald intervals, classical statistics, the "
                         "simulation-based item fit (outfit; BH-adjusted p)")
    if res.dif is not None:
        sec.table(res.dif["table"], f"DIF by {res.dif['group']}: {res.dif['method']}; global test p = "
                                    f"{fmt_p(res.dif['global_p_value'])}")
    if res.covariates is not None:
        sec.table(res.covariates, "Item features (LLTM): effect on the difficulty per unit (logits)")
    sec.warnings(list(res.warnings))
    sec.headline = res.headline_text() or f"{len(res.abilities)} systems, {len(res.items)} items"
