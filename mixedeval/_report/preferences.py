"""The report section of :func:`mixedeval.bradley_terry`: strengths with intervals (log-odds and
Elo), the judges' position bias and leniency, style covariates, the win-probability heatmap and
the simultaneous rank intervals with their tie groups."""
from __future__ import annotations

from typing import Any

import numpy as np

from .blocks import Section
from .figures import _figure, interval_plot, rank_interval_plot


def win_heatmap(matrix: Any, title: str = ""):
    """Heatmap of P(row model preferred to column model), models best first."""
    mat = matrix.to_numpy(dtype=float)
    names = [str(m) for m in matrix.index]
    k = len(names)
    fig = _figure((max(4.0, 0.45 * k + 2.6), max(3.0, 0.4 * k + 1.6)))
    ax = fig.add_subplot()
    im = ax.imshow(mat, cmap="RdBu", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(k), names, rotation=90, fontsize=8)
    ax.set_yticks(range(k), names, fontsize=8)
    ax.set_xlabel("opponent")
    if k <= 12:
        for i in range(k):
            for j in range(k):
                if np.isfinite(mat[i, j]):
                    ax.text(j, i, f"{mat[i, j]:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if abs(mat[i, j] - 0.5) > 0.3 else "black")
    fig.colorbar(im, ax=ax, label="P(row preferred)", shrink=0.9)
    if title:
        ax.set_title(title, fontsize=11)
    return fig


#: largest number of models drawn in the win-probability heatmap (beyond, the cells are unreadable)
HEATMAP_MAX_MODELS = 60
#: largest number of models in the Elo and rank-interval plots (one row per model)
PLOT_MAX_MODELS = 150
#: decimals of the preference tables' columns (one column, one number of decimals)
DECIMALS = {"estimate": 3, "std_error": 3, "conf_low": 3, "conf_high": 3, "model_std_error": 3, "elo": 1,
            "elo_conf_low": 1, "elo_conf_high": 1}


def _headline(res: Any) -> str:
    tab = res.table
    best = tab.iloc[0]
    ranks = res.ranks
    tied = ""
    if ranks is not None and len(ranks):
        top = ranks.set_index("name").loc[str(best["model"])]
        tied = f", rank interval {int(top['rank_low'])}-{int(top['rank_high'])}"
    return (f"{len(tab)} models, {res.n_battles} battles; best: {best['model']} (Elo {best['elo']:.0f}, "
            f"{best['elo_conf_low']:.0f}-{best['elo_conf_high']:.0f}{tied})")


def _judges(sec: Section, res: Any) -> None:
    j = res.judges
    if j is None:
        return
    sec.table(j, decimals=DECIMALS,
              caption="Judges: position_bias = log-odds that the answer shown first wins between equally strong "
                      "models (0 = no bias); leniency = Davidson's log(nu), the judge's propensity to call a tie")
    pos = j[j["parameter"] == "position_bias"]
    if len(pos):
        fig = sec.guarded("position bias plot", interval_plot, list(pos["judge"]), pos["estimate"], pos["conf_low"],
                          pos["conf_high"], xlabel="position bias (log-odds, first shown wins)", zero_line=True,
                          title="Position bias per judge")
        if fig is not None:
            sec.figure(fig, "Position bias per judge with intervals")


def _ranks(sec: Section, res: Any) -> None:
    r = res.ranks
    if r is None or not len(r):
        return
    sec.table(r, decimals=DECIMALS,
              caption=f"Simultaneous {res.level:.0%} rank intervals (all models at once; rank 1 = best); models "
                      "sharing a letter cannot be told apart (tie groups)")
    fig = None if len(r) > PLOT_MAX_MODELS else sec.guarded("rank interval plot", rank_interval_plot, r,
                                                            title="Rank intervals")
    if fig is not None:
        sec.figure(fig, "Rank of each model with its simultaneous interval")


def preferences(sec: Section, res: Any, ctx: Any = None) -> None:
    """me.bradley_terry: settings, strengths, Elo plot, judges, covariates, win probabilities, ranks."""
    sec.kv([(k, v if isinstance(v, (int, float, str)) else str(v)) for k, v in res._scalars()],  # noqa: SLF001
           caption="Settings and summary")
    tab = res.table
    sec.table(tab, decimals=DECIMALS,
              caption=f"Strengths (log-odds, {res.reference} = 0) and Elo ratings ({res.anchor or 'mean'} = "
                      f"{res.anchor_rating:g}); intervals: {res.interval_method}; model_std_error treats battles as "
                      "independent")
    fig = None if len(tab) > PLOT_MAX_MODELS else sec.guarded("Elo plot", interval_plot, list(tab["model"]), tab["elo"],
                                                              tab["elo_conf_low"],
                      tab["elo_conf_high"], xlabel="Elo rating", title="Elo ratings")
    if fig is not None:
        sec.figure(fig, f"Elo ratings with {res.level:.0%} intervals ({res.interval_method})")
    _judges(sec, res)
    if res.covariates is not None:
        sec.table(res.covariates, decimals=DECIMALS,
                  caption="Style covariates: log-odds of winning per unit of the difference a - b")
    fig = None
    if res.n_models <= HEATMAP_MAX_MODELS:
        fig = sec.guarded("win-probability heatmap", win_heatmap, res.win_matrix(), "P(row model preferred)")
    if fig is not None:
        sec.figure(fig, "Win probabilities plogis(s_row - s_column): positions balanced, ties aside")
    _ranks(sec, res)
    sec.warnings(list(res.warnings))
    sec.headline = _headline(res)
