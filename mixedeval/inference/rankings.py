"""Rankings with uncertainty for every comparison result: simultaneous rank intervals (Mogstad,
Romano, Shaikh & Wilhelm 2024), the rank distribution and a compact letter display (multcomp's
insert-absorb).

``rank_intervals(estimates, vcov=...)`` ranks jointly normal estimates (EMMs of an LMM / GLMM,
Bradley-Terry strengths); ``rank_intervals(estimates, draws=...)`` ranks from bootstrap
replicates. ``EMMResult.ranks()``, ``GLMMEMMResult.ranks()`` and
``BootstrapResult.rank_intervals()`` call it. The computation lives in
:mod:`mixedeval._rankings` (beside the layers, so that the resampling results use the same
code); see its docstring for the method and docs/concepts/rankings.md.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._answer import (Answer, best_first_pairs, choose_pair, direction, headline, leaderboard, pair_row, unit_scale,
                      z_quantile)
from .._rankings import RankIntervals, rank_intervals
from ..engine import _bridge
from ..errors import DataError

__all__ = ["RankIntervals", "rank_intervals"]


def _emm_ranks(emm: Any, *, level: float, higher_is_better: Any, random_state: Any, n_sim: int,
               scale: str) -> RankIntervals:
    """Rank intervals of estimated marginal means from the joint normal of emmeans: the grid's
    estimates on its link scale and ``vcov(grid)`` (R's emmeans, through the engine);
    ``higher_is_better=None`` takes the direction from the response's name (:func:`emm_direction`)."""
    higher_is_better = emm_direction(emm, higher_is_better).higher_is_better
    if emm.by:
        raise DataError(f"ranks() ranks all the means of one table; these are grouped by {list(emm.by)}: "
                        f"compute the means without by= (e.g. fit.emmeans({list(emm.specs)!r})) or one group at a time")
    v = _bridge.emm_vcov(emm._grid)  # noqa: SLF001 - the result's own R handle
    t = emm.table
    labels = [":".join(str(x) for x in row) for row in t[list(emm.specs)].itertuples(index=False, name=None)]
    est = pd.Series(v["estimate"], index=labels)
    res = rank_intervals(est, vcov=v["vcov"], level=level, higher_is_better=higher_is_better,
                         method="normal", random_state=random_state, n_sim=n_sim)
    return dataclasses.replace(res, estimate_scale=scale)


# ------------------------------------------------------------------------------ the one answer
def emm_direction(emm: Any, higher_is_better: Any = None):
    """The direction of the means: declared (this call's ``higher_is_better``, else the one the
    means were made with, ``emmeans(..., higher_is_better=)``), or from the name of the model's
    response (``ter``: lower is better; :func:`mixedeval._answer.direction`)."""
    if higher_is_better is None:
        higher_is_better = getattr(emm, "higher_is_better", None)

    fit = getattr(emm, "_fit", None)
    metric = getattr(fit, "response", None) if fit is not None else None
    if getattr(emm, "kind", "emmeans") == "emtrends":
        metric = f"slope of {getattr(emm, 'var', '')}"
    return direction(metric, higher_is_better)


def emm_units(emm: Any) -> tuple[str, float]:
    """How the headline of the means writes differences: :func:`mixedeval._answer.unit_scale` of
    the model's response column (``("points", 100.0)`` for scores in [0, 1], 0/1 outcomes on the
    response scale, and TER-like rates: TER points are 100 x TER). The score's own units
    (``("", 1.0)``) for slopes (emtrends), the link scale, and a response that is not a numeric
    column of the data (a transformed or ordinal response)."""

    fit = getattr(emm, "_fit", None)
    name, data = getattr(fit, "response", None), getattr(fit, "data", None)
    if getattr(emm, "kind", "emmeans") != "emmeans" or getattr(emm, "type", "response") != "response" \
            or not isinstance(data, pd.DataFrame) or name not in data.columns \
            or not pd.api.types.is_numeric_dtype(data[name]):
        return "", 1.0
    return unit_scale(data[name], name)


def _emm_labels(emm: Any) -> list[str]:
    t = emm.table
    return [":".join(str(x) for x in row) for row in t[list(emm.specs)].itertuples(index=False, name=None)]


def emm_leaderboard(emm: Any, *, higher_is_better: Any = None, level: float | None = None,
                    random_state: Any = None) -> pd.DataFrame:
    """The best-first leaderboard of the means (:func:`mixedeval._answer.leaderboard`): estimate,
    std_error and interval are the means' own (``emm.table``, on its scale); ranks, simultaneous
    rank intervals and letters come from the joint normal of the means on the link scale
    (``vcov`` of the emmGrid: the same ordering, the scale where the model is normal)."""

    if emm.by:
        raise DataError(f"leaderboard() ranks all the means of one table; these are grouped by {list(emm.by)}: "
                        f"compute the means without by= (e.g. fit.emmeans({list(emm.specs)!r}))")
    d = emm_direction(emm, higher_is_better)
    v = _bridge.emm_vcov(emm._grid)  # noqa: SLF001 - the result's own R handle
    labels = _emm_labels(emm)
    t = emm.table.set_axis(labels, axis=0)
    board = leaderboard(pd.Series(v["estimate"], index=labels), vcov=v["vcov"], higher_is_better=d.higher_is_better,
                        level=float(emm.level if level is None else level), random_state=random_state)
    names = list(board["name"])
    for col, src in (("estimate", emm.estimate_column), ("std_error", "std_error"), ("conf_low", "conf_low"),
                     ("conf_high", "conf_high")):
        board[col] = t.loc[names, src].to_numpy(dtype=float)
    return board


def contrast_pairs(table: pd.DataFrame, labels: list[str], level: float) -> pd.DataFrame:
    """A pairwise contrast table of ``k`` means in emmeans' order (l1 - l2, l1 - l3, ..., l2 - l3)
    as a pair table: ``system_a, system_b`` (emmeans' order, ``system_a`` the earlier label),
    ``delta`` = a - b (emmeans' estimate), ``std_error``, ``df``, ``conf_low, conf_high`` (the
    unadjusted t interval at ``level``; z with infinite df), ``p_value`` (unadjusted) and
    ``p_adj`` (the table's, else the unadjusted p). A row whose ``contrast`` names the pair in
    the other order ("l2 - l1", emmeans' ``revpairwise``) is read with its sign turned."""
    k = len(labels)
    if len(table) != k * (k - 1) // 2:
        raise DataError(f"expected the {k * (k - 1) // 2} pairwise contrasts of {k} means, got {len(table)} rows")
    a, b = np.triu_indices(k, 1)
    sa, sb = [labels[i] for i in a], [labels[j] for j in b]
    sign = np.ones(len(table))
    if "contrast" in table.columns:
        for i, c in enumerate(table["contrast"].astype(str)):
            if c in (f"{sb[i]} - {sa[i]}", f"({sb[i]}) - ({sa[i]})"):
                sign[i] = -1.0
    est = sign * table["estimate"].to_numpy(dtype=float)
    se = table["std_error"].to_numpy(dtype=float)
    df = table["df"].to_numpy(dtype=float) if "df" in table.columns else np.full(len(table), np.inf)
    lvl = float(level)
    q = np.where(np.isfinite(df), stats.t.ppf(0.5 + lvl / 2, np.where(np.isfinite(df), df, 1.0)), z_quantile(lvl))
    p = table["p_value"].to_numpy(dtype=float)
    return pd.DataFrame({"system_a": sa, "system_b": sb, "delta": est, "std_error": se, "df": df,
                         "conf_low": est - q * se, "conf_high": est + q * se, "p_value": p,
                         "p_adj": table["p_adj"].to_numpy(dtype=float) if "p_adj" in table.columns else p})


def emm_pairs(emm: Any, table: pd.DataFrame) -> pd.DataFrame:
    """:func:`contrast_pairs` of a pairwise contrast table of these means, at the means' level."""
    return contrast_pairs(table, _emm_labels(emm), float(emm.level))


def contrast_headline(pairs: pd.DataFrame, a: str, b: str, d: Any, *, level: float, method: str,
                      reference: Any = None, scale: float = 1.0, unit: str = ""):
    """The headline (:func:`mixedeval._answer.headline`) of the pair (a, b) from a pair table
    (:func:`contrast_pairs`; the row found by :func:`mixedeval._answer.pair_row`): a - b, its
    std_error and df, the unadjusted p-value and the unadjusted t (z with infinite df) interval."""
    hit = pair_row(pairs, a, b)
    if hit is None:
        raise DataError(f"the pairwise contrasts have no row for {a!r} and {b!r}")
    row, sign = hit
    est, lo, hi = sign * float(row["delta"]), float(row["conf_low"]), float(row["conf_high"])
    lo, hi = (lo, hi) if sign > 0 else (-hi, -lo)
    return headline(a, b, est, float(row["std_error"]), lo, hi, float(row["p_value"]), float(row["df"]), method, d,
                    level=level, reference=reference, scale=scale, unit=unit)


def emm_method(emm: Any, df_note: str | None = None) -> str:
    """The headline's method in words: the GLMM's Wald z test, or the contrast's df. ``df_note``
    says why the df are what they are (e.g. "asymptotic: compare_systems' default without run=");
    without it, asymptotic df of means are the ones asked for (``fit.emmeans(df_method=)``)."""
    if hasattr(emm, "estimate_label"):  # a GLMM: Wald z tests on the link scale, differences by regrid
        return "emmeans contrast of the GLMM, Wald z test, unadjusted"
    if emm.df_method == "asymptotic":
        note = df_note or "asymptotic df were asked for"
        return f"emmeans contrast, z test (df = Inf: {note}), unadjusted"
    return f"emmeans contrast, {emm.df_method} df, unadjusted"


def emm_answer(emm: Any, *, higher_is_better: Any = None, reference: Any = None, level: float | None = None,
               random_state: Any = None, contrasts: Any = None, df_note: str | None = None) -> Answer:
    """The one answer of a table of means (:class:`mixedeval._answer.Answer`): the leaderboard
    (:func:`emm_leaderboard`, simultaneous rank intervals), the headline (the best against the
    runner-up, or the best other against ``reference``: their pairwise contrast, unadjusted
    p-value and interval, the emmeans df, its text in the units of :func:`emm_units`) and every
    pair best first (:func:`mixedeval._answer.best_first_pairs` of :func:`emm_pairs`). The
    contrasts are ``contrasts`` (a pairwise contrast table of these means in emmeans' order)
    or ``emm.contrasts(adjust="none")``; ``level`` is the leaderboard's (default the means')."""
    d = emm_direction(emm, higher_is_better)
    board = emm_leaderboard(emm, higher_is_better=d.higher_is_better, level=level, random_state=random_state)
    method = emm_method(emm, df_note)
    pair = choose_pair(board, reference)
    if pair is None:
        return Answer(direction=d, leaderboard=board, headline=None, method=method,
                      no_headline_text="a single mean: nothing to compare")
    tab = contrasts if contrasts is not None else emm.contrasts(method="pairwise", adjust="none").table
    pairs = emm_pairs(emm, tab)
    unit, scale = emm_units(emm)
    head = contrast_headline(pairs, pair[0], pair[1], d, level=float(emm.level), method=method, reference=reference,
                             unit=unit, scale=scale)
    diffs = best_first_pairs(pairs, list(board["name"]), d.higher_is_better)
    return Answer(direction=d, leaderboard=board, headline=head, differences=diffs, method=method,
                  no_headline_text="a single mean: nothing to compare")
