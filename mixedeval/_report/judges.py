"""The report section of :func:`mixedeval.judge_corrected`: the corrected leaderboard and
headline, the corrected / human-only / judge-only intervals per system, the judge-vs-human
plot, the agreement and bias tables and the labelling budget."""
from __future__ import annotations

from typing import Any

import numpy as np

from .blocks import Section
from .figures import _figure


def judge_vs_human_plot(res: Any):
    """The judge's score against the people's on the labelled units (epochs averaged), one
    colour per system, with the identity line: points off the line are the judge's errors,
    systems off it on average are the judge's bias."""
    p = res._prepared  # noqa: SLF001 - the result's own data
    u = p.units
    lab = u.labelled
    g = u.g.mean(axis=1)
    fig = _figure((5.6, 4.4))
    ax = fig.add_subplot()
    for s, name in enumerate(p.systems):
        m = lab & (u.system == s)
        jitter = np.random.default_rng(s).normal(0, 0.01, int(m.sum()))  # fixed: 0/1 scores overlap otherwise
        ax.scatter(u.y[m] + jitter, g[m] + jitter[::-1], s=14, alpha=0.6, label=str(name))
    lo = float(np.nanmin([np.nanmin(u.y[lab]), np.nanmin(g[lab])]))
    hi = float(np.nanmax([np.nanmax(u.y[lab]), np.nanmax(g[lab])]))
    ax.plot([lo, hi], [lo, hi], color="#777777", ls="--", lw=1)
    ax.set_xlabel("people's score")
    ax.set_ylabel("judge's score")
    ax.set_title("Judge vs people on the labelled answers", fontsize=11)
    if len(p.systems) <= 12:
        ax.legend(fontsize=7, loc="best")
    return fig


def three_intervals_plot(res: Any):
    """Per system the corrected, human-only and judge-only intervals one above the other."""
    t = res.table
    fig = _figure((6.4, max(2.4, 0.9 * len(t) + 1.2)))
    ax = fig.add_subplot()
    colors = {"": "#1f77b4", "classical_": "#2ca02c", "judge_": "#d62728"}
    names = {"": "corrected", "classical_": "people only", "judge_": "judge only"}
    y0 = np.arange(len(t))[::-1] * 1.0
    for k, (prefix, color) in enumerate(colors.items()):
        y = y0 + 0.25 - 0.25 * k
        est = t[f"{prefix}estimate"].to_numpy(dtype=float)
        lo, hi = t[f"{prefix}conf_low"].to_numpy(dtype=float), t[f"{prefix}conf_high"].to_numpy(dtype=float)
        ax.errorbar(est, y, xerr=[np.maximum(est - lo, 0), np.maximum(hi - est, 0)], fmt="o", color=color,
                    capsize=3, label=names[prefix])
    ax.set_yticks(y0, [str(s) for s in t["system"]])
    ax.set_xlabel("mean score")
    ax.legend(fontsize=7, loc="best")
    ax.set_title("Corrected, people-only and judge-only intervals", fontsize=11)
    return fig


def judges(sec: Section, res: Any, ctx: Any = None) -> None:
    """me.judge_corrected: headline, leaderboard, intervals, plots, checks, agreement, bias, budget."""
    sec.kv([(k, v if isinstance(v, (int, float, str)) else str(v)) for k, v in res._scalars()],  # noqa: SLF001
           caption="Method and answer")
    sec.table(res.leaderboard, f"Judge-corrected leaderboard, best first ({res.level:.0%} intervals; "
                               f"{res.answer.rank_label}; systems sharing a letter cannot be told apart)")
    sec.table(res.table, "Per system: the corrected mean, people's labels only (classical) and the judge only; "
                         "n_eff_labels = the human labels a people-only estimate would need for the same interval")
    for what, fn in (("interval plot", three_intervals_plot), ("judge-vs-human plot", judge_vs_human_plot)):
        fig = sec.guarded(what, fn, res)
        if fig is not None:
            sec.figure(fig, what[0].upper() + what[1:])
    sec.table(res.pairwise, "Paired differences on shared items (a - b), corrected, people-only and judge-only")
    if res.checks is not None:
        sec.table(res.checks, "The headline's question answered by people's labels alone and by the judge alone")
    agr = sec.guarded("agreement", res.agreement, n_resamples=400, random_state=0)
    if agr is not None:
        sec.table(agr.table, "Agreement of the judge with people on the labelled answers")
        sec.table(agr.bias, "Bias by system: judge - people on the labelled answers; excess = bias minus the other "
                            "systems' mean bias (a self-preferring judge shows a positive excess)")
        sec.table(agr.bias_test, "Wald test that the judge's bias is the same for every system")
        sec.warnings(list(agr.warnings), "Judge warnings")
    if res.headline is not None:
        w = res.headline.conf_high - res.headline.conf_low
        plan = sec.guarded("labelling budget", res.labels_needed, width=w / 2)
        if plan is not None:
            sec.table(plan.table, f"Labels needed to halve the headline interval (width {w:.3g} -> {w / 2:.3g}) "
                                  "with the judged items kept")
    sec.warnings(list(res.warnings))
    sec.headline = res.headline_text()
