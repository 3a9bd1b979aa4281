"""The report sections of the small agentic evaluations (:mod:`mixedeval.workflows.agentic`):

* :func:`pass_k` (:func:`mixedeval.pass_at_k`): the settings, per kind (pass@k, pass^k) at the
  result's k the table of every system with its interval and an interval plot, the paired
  differences, the checks and the per-task values;
* :func:`horizon` (:func:`mixedeval.time_horizon`): the settings, the horizons with their
  bootstrap intervals, the fitted success probability against log2 task length per system with
  the horizons marked (:func:`horizon_curve_plot`), the ratios, the sensitivity to the modelling
  choices, the fits and the checks.

The answer (headline, leaderboard, differences, checks) opens the report from the result's own
``answer`` (:mod:`mixedeval._report.answer`); these sections show the details below it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .blocks import Section
from .figures import _BLUE, _GREY, _figure, interval_plot
from .result_sections import _scalars

#: systems drawn in one horizon plot (the rest are in the tables)
PLOT_MAX_SYSTEMS = 12
#: the plot's x range reaches this many doublings beyond the outermost finite horizon
_MARGIN_DOUBLINGS = 2.0
_LINESTYLES = ("-", "--", ":", "-.")


def pass_k(sec: Section, res: Any, ctx: Any = None) -> None:
    """me.pass_at_k: settings, per kind the table at k with its interval plot, the pairs, the
    checks and the per-task values."""
    sec.kv(_scalars(res), caption="Settings and summary")
    prov = res.provenance
    level = float(prov.get("level", 0.95))
    for kind in res.kinds:
        tab = res.table[res.table["kind"] == kind]
        what = ("at least one of k attempts succeeds; Chen et al. 2021's unbiased estimator per task" if kind == "pass@k"
                else "all k attempts succeed; C(c, k) / C(n, k) per task (tau-bench)")
        sec.table(tab.drop(columns=["kind", "k"]),
                  f"{kind} at k = {res.k} ({what}), best first: the mean of the per-task values over "
                  f"{int(tab['n_tasks'].max()) if len(tab) else 0} tasks; {level:.0%} intervals: "
                  f"{prov.get('interval')} (the interval column names the family used)")
        if len(tab) and len(tab) <= PLOT_MAX_SYSTEMS * 4:
            fig = sec.guarded(f"{kind} interval plot", interval_plot, list(tab["system"]), tab["estimate"],
                              tab["conf_low"], tab["conf_high"], xlabel=f"{kind} (k = {res.k})",
                              title=f"{kind} at k = {res.k}")
            if fig is not None:
                sec.figure(fig, f"{kind} at k = {res.k} per system with its {level:.0%} interval, best first")
        pw = res.pairwise
        if pw is not None and len(pw):
            sub = pw[pw["kind"] == kind]
            sec.table(sub.drop(columns="kind"), f"{kind} at k = {res.k}: every pair best first (delta: system_a's advantage), the "
                           f"paired difference of the per-task values; p_adj adjusts over pairs "
                           f"({prov.get('adjust')})")
    checks = res.answer.checks
    if checks is not None and len(checks):
        sec.table(checks, "Checks of the headline, each with its verdict computed from its own numbers")
    sec.table(res.tasks, "Per system and task: attempts n, successes c, and the per-task pass@k and pass^k "
                         f"at k = {res.k}")
    sec.warnings(list(res.warnings))
    sec.headline = res.headline_text()


def horizon_curve_plot(fits: pd.DataFrame, table: pd.DataFrame, *, xlabel: str = "log2(task length)",
                       title: str = "Success probability against task length",
                       order: Sequence[str] | None = None) -> Any:
    """The fitted success probability ``expit(intercept + slope x)`` against ``x = log2(length)``,
    one curve per system (``fits``: system, intercept, slope), each system's horizons (``table``:
    system, p_success, horizon[, conf_low, conf_high]) marked where its curve crosses the success
    probabilities, with their intervals as horizontal bars (clipped to the plot) and dotted lines
    at those probabilities."""
    from scipy.special import expit  # noqa: PLC0415 - scipy loads with the figure

    names = [str(s) for s in (order if order is not None else fits["system"])][:PLOT_MAX_SYSTEMS]
    f = fits.assign(system=fits["system"].astype(str)).set_index("system")
    t = table.assign(system=table["system"].astype(str))
    with np.errstate(divide="ignore", invalid="ignore"):
        logh = np.log2(t["horizon"].to_numpy(dtype=float))
    finite = logh[np.isfinite(logh)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 8.0)
    x = np.linspace(lo - _MARGIN_DOUBLINGS, hi + _MARGIN_DOUBLINGS, 200)
    fig = _figure((6.4, 4.0))
    ax = fig.add_subplot()
    levels = sorted({float(q) for q in t["p_success"]})
    for q in levels:
        ax.axhline(q, color=_GREY, linestyle=":", linewidth=1)
    cmap = _colors(len(names))
    for i, name in enumerate(names):
        if name not in f.index:
            continue
        a, b = float(f.loc[name, "intercept"]), float(f.loc[name, "slope"])
        ax.plot(x, expit(a + b * x), color=cmap[i], linestyle=_LINESTYLES[i % len(_LINESTYLES)], linewidth=2,
                label=name)
        mine = t[t["system"] == name]
        hx = np.log2(mine["horizon"].to_numpy(dtype=float))
        ok = np.isfinite(hx)
        ys = mine["p_success"].to_numpy(dtype=float)
        ax.plot(hx[ok], ys[ok], "o", color=cmap[i], markersize=6)
        if {"conf_low", "conf_high"} <= set(mine.columns):  # the horizon's interval, clipped to the plot
            with np.errstate(divide="ignore", invalid="ignore"):
                lo_h = np.log2(mine["conf_low"].to_numpy(dtype=float))
                hi_h = np.log2(mine["conf_high"].to_numpy(dtype=float))
            bar = ok & ~np.isnan(lo_h) & ~np.isnan(hi_h)
            if bar.any():
                ax.hlines(ys[bar], np.clip(lo_h[bar], x[0], x[-1]), np.clip(hi_h[bar], x[0], x[-1]), color=cmap[i],
                          linewidth=1.5, alpha=0.6)
    ax.set_xlim(float(x[0]), float(x[-1]))
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("P(success)")
    ax.set_title(title)
    ax.legend(fontsize=8, frameon=False, loc="best")
    return fig


def _colors(n: int) -> list[Any]:
    if n <= 1:
        return [_BLUE]
    from matplotlib import colormaps  # noqa: PLC0415 - matplotlib loads with the figure

    cm = colormaps["tab10"]
    return [cm(i % 10) for i in range(n)]


def horizon(sec: Section, res: Any, ctx: Any = None) -> None:
    """me.time_horizon: settings, the horizons with intervals, the success curves with the
    horizons marked, the ratios, the sensitivity, the fits and the checks."""
    sec.kv(_scalars(res), caption="Settings and summary")
    prov = res.provenance
    level = float(prov.get("level", 0.95))
    order = [str(n) for n in res.answer.leaderboard["name"]] if res.answer.leaderboard is not None else None
    tab = res.table
    sec.table(tab, f"Horizons per system and success probability (p_success): the task length (in the length "
                   f"column's units) where the fitted success probability equals p_success; {level:.0%} "
                   f"intervals: {prov.get('interval')}; log2_std_error: the bootstrap SD of log2 horizon")
    length = str(prov.get("length") or "log2(task length)")
    levels = ", ".join(f"{q:.0%}" for q in prov.get("levels", []))
    fig = sec.guarded("success curve plot", horizon_curve_plot, res.fits, tab, xlabel=length, order=order)
    if fig is not None:
        sec.figure(fig, f"Fitted success probability against {length} per system ({prov.get('fit')}); the points "
                        f"mark each system's {levels} horizons, the bars their {level:.0%} intervals (dotted lines: those "
                        "probabilities)")
    first = tab[tab["p_success"] == tab["p_success"].iloc[0]] if len(tab) else tab
    if len(first) and order is not None:
        first = first.set_index("system").reindex(order).reset_index()
        with np.errstate(divide="ignore", invalid="ignore"):
            fig = sec.guarded("horizon interval plot", interval_plot, list(first["system"]),
                              np.log2(first["horizon"].to_numpy(float)), np.log2(first["conf_low"].to_numpy(float)),
                              np.log2(first["conf_high"].to_numpy(float)), xlabel=f"log2 horizon ({length})",
                              title=f"{float(first['p_success'].iloc[0]):.0%} horizons")
        if fig is not None:
            sec.figure(fig, f"log2 of each system's {float(first['p_success'].iloc[0]):.0%} horizon with its "
                            f"{level:.0%} bootstrap interval, longest first")
    if res.ratios is not None and len(res.ratios):
        sec.table(res.ratios, "Ratios of horizons per success probability and pair, longer horizon first: ratio "
                              "h_a / h_b with its percentile interval, log2_ratio (doublings), bootstrap p-value, "
                              "p_adj (Holm per success probability)")
    checks = res.answer.checks
    if checks is not None and len(checks):
        sec.table(checks, "Checks of the headline: the same bootstrap under the other modelling choices METR's "
                          "note names (regularisation, weighting) and the hierarchical GLMM, each with its verdict")
    if res.sensitivity is not None and len(res.sensitivity):
        sec.table(res.sensitivity, "Sensitivity: each system's horizon under each variant; moved = that horizon / "
                                   "the headline fit's")
    sec.table(res.fits, "The logistic fits per system: logit P(success) = intercept + slope log2(length)")
    sec.warnings(list(res.warnings))
    sec.headline = res.headline_text()
