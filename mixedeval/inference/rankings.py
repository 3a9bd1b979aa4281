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

from .._answer import choose_pair, differences, direction, headline, leaderboard, unit_scale
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


def pair_row(table: pd.DataFrame, labels: list[str], a: str, b: str) -> tuple[Any, float]:
    """The row of a pairwise contrast table (emmeans' order: l1 - l2, l1 - l3, ..., l2 - l3)
    holding ``a`` and ``b``, and the sign turning its estimate into ``a - b``."""
    ia, ib = labels.index(a), labels.index(b)
    lo, hi = min(ia, ib), max(ia, ib)
    k = len(labels)
    pos = sum(k - 1 - i for i in range(lo)) + (hi - lo - 1)
    if "contrast" in table.columns:
        want = {f"{labels[lo]} - {labels[hi]}", f"({labels[lo]}) - ({labels[hi]})"}
        hits = [i for i, c in enumerate(table["contrast"].astype(str)) if c in want]
        if hits:
            pos = hits[0]
    if len(table) != k * (k - 1) // 2:
        raise DataError(f"expected the {k * (k - 1) // 2} pairwise contrasts of {k} means, got {len(table)} rows")
    return table.iloc[pos], (1.0 if ia == lo else -1.0)


def contrast_headline(row: Any, sign: float, a: str, b: str, d: Any, *, level: float, method: str,
                      reference: Any = None, scale: float = 1.0, unit: str = ""):
    """The headline (:func:`mixedeval._answer.headline`) from one emmeans contrast row: estimate
    ``sign * estimate`` = a - b, its std_error and df, the unadjusted p-value and the unadjusted
    t (z with infinite df) interval at ``level``."""


    est, se = sign * float(row["estimate"]), float(row["std_error"])
    df = float(row["df"]) if "df" in row.index else float("inf")
    q = stats.norm.ppf(0.5 + level / 2) if not np.isfinite(df) else stats.t.ppf(0.5 + level / 2, df)
    return headline(a, b, est, se, est - q * se, est + q * se, float(row["p_value"]), df, method, d, level=level,
                    reference=reference, scale=scale, unit=unit)


def emm_headline(emm: Any, *, higher_is_better: Any = None, reference: Any = None, board: Any = None,
                 contrasts: Any = None):
    """The headline of the means: the best against the runner-up (or the best other against
    ``reference``), from their pairwise contrast (``emm.contrasts(adjust="none")`` unless
    ``contrasts``, a pairwise contrast table of the same means, is given): unadjusted p-value and
    interval, the emmeans df; its text in the units of :func:`emm_units` (TER points)."""

    d = emm_direction(emm, higher_is_better)
    board = emm_leaderboard(emm, higher_is_better=d.higher_is_better) if board is None else board
    pair = choose_pair(board, reference)
    if pair is None:
        return None
    tab = contrasts if contrasts is not None else emm.contrasts(method="pairwise", adjust="none").table
    row, sign = pair_row(tab, _emm_labels(emm), *pair)
    if hasattr(emm, "estimate_label"):  # a GLMM: Wald z tests on the link scale, differences by regrid
        method = "emmeans contrast of the GLMM, Wald z test, unadjusted"
    elif emm.df_method == "asymptotic":
        method = "emmeans contrast, z test (df = Inf: asymptotic df were asked for), unadjusted"
    else:
        method = f"emmeans contrast, {emm.df_method} df, unadjusted"
    unit, scale = emm_units(emm)
    return contrast_headline(row, sign, pair[0], pair[1], d, level=float(emm.level), method=method,
                             reference=reference, unit=unit, scale=scale)


def emm_pairs(emm: Any, table: pd.DataFrame) -> pd.DataFrame:
    """A pairwise contrast table of the means (emmeans' order l1 - l2, l1 - l3, ..., l2 - l3) as
    ``a, b, delta, conf_low, conf_high, p_value`` with unadjusted t (z) intervals at the means' level."""

    labels = _emm_labels(emm)
    k = len(labels)
    if len(table) != k * (k - 1) // 2:
        raise DataError(f"expected the {k * (k - 1) // 2} pairwise contrasts of {k} means, got {len(table)} rows")
    a, b = np.triu_indices(k, 1)
    est = table["estimate"].to_numpy(dtype=float)
    se = table["std_error"].to_numpy(dtype=float)
    df = table["df"].to_numpy(dtype=float) if "df" in table.columns else np.full(len(table), np.inf)
    lvl = float(emm.level)
    q = np.where(np.isfinite(df), stats.t.ppf(0.5 + lvl / 2, np.where(np.isfinite(df), df, 1.0)),
                 stats.norm.ppf(0.5 + lvl / 2))
    return pd.DataFrame({"a": [labels[i] for i in a], "b": [labels[j] for j in b], "delta": est,
                         "conf_low": est - q * se, "conf_high": est + q * se,
                         "p_value": table["p_value"].to_numpy(dtype=float)})


def emm_differences(emm: Any, board: pd.DataFrame, head: Any, table: pd.DataFrame) -> pd.DataFrame:
    """Every mean's difference from the best (or from the headline's reference) in the better
    direction, unadjusted (:func:`mixedeval._answer.differences`)."""

    anchor = str(head.reference) if head is not None and head.reference is not None else str(board["name"].iloc[0])
    hib = head.direction.higher_is_better if head is not None else True
    return differences(emm_pairs(emm, table), anchor, list(board["name"]), hib)
