"""Paired question-level differences of two systems: the closed-form analysis of Miller (2024).

Miller, E. (2024). *Adding Error Bars to Evals: A Statistical Approach to Language Model
Evaluations.* arXiv:2411.00640, sections 2-4. Per question i the scores are first reduced over
epochs (the mean: Inspect's default reducer) and over runs; then, for a pair of systems (a, b)
on their shared questions,

    d_i = s_{a,i} - s_{b,i},   delta = mean(d),   SE = sd(d, ddof=1) / sqrt(n),

the interval is ``delta +- t_{n-1, 1-alpha/2} * SE`` and the test is the paired t test (R's
``t.test(x, y, paired = TRUE)``). Pooled over tasks (the mean of the task means, tasks fixed):
``delta = mean_t delta_t``, ``SE = sqrt(sum_t SE_t^2) / T`` with Welch-Satterthwaite df.
"""
from __future__ import annotations

from itertools import combinations
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..padjust import adjust_pvalues

COLUMNS = ("task", "system_a", "system_b", "n_items", "delta", "std_error", "df", "t_value", "p_value", "p_adj",
           "conf_low", "conf_high", "method")
METHOD = "paired question-level t (Miller 2024): epochs averaged within question"


def question_means(s: pd.DataFrame) -> pd.DataFrame:
    """Each question's score per system and task: the mean over its epochs and runs."""
    return s.groupby(["task", "system", "item"], observed=True, sort=True)["score"].mean().reset_index()


def _row(task: str, a: str, b: str, d: np.ndarray, level: float) -> dict[str, Any]:
    n = int(d.size)
    delta = float(d.mean()) if n else np.nan
    se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
    df = float(n - 1)
    return _finish({"task": task, "system_a": a, "system_b": b, "n_items": n, "delta": delta, "std_error": se,
                    "df": df}, level)


def _finish(r: dict[str, Any], level: float) -> dict[str, Any]:
    delta, se, df = r["delta"], r["std_error"], r["df"]
    if not np.isfinite(se) or df < 1:
        t_val = p = lo = hi = np.nan
    elif se == 0.0:  # the same difference on every question: no sampling variation in this sample
        t_val = np.nan if delta == 0 else np.copysign(np.inf, delta)
        p = 1.0 if delta == 0 else 0.0
        lo = hi = delta
    else:
        t_val = delta / se
        p = float(2.0 * stats.t.sf(abs(t_val), df))
        q = float(stats.t.ppf(0.5 + level / 2.0, df))
        lo, hi = delta - q * se, delta + q * se
    r.update(t_value=t_val, p_value=p, conf_low=lo, conf_high=hi, method=METHOD)
    return r


def paired_differences(s: pd.DataFrame, systems: Sequence[str], *, level: float = 0.95, adjust: str = "holm",
                       pooled_label: str | None = None) -> pd.DataFrame:
    """Per task and pair (a before b in ``systems``' order) the paired question-level difference
    a - b; with ``pooled_label`` one more block pooled over tasks. ``p_adj`` adjusts the per-task
    rows together (pairs x tasks) and the pooled rows among themselves."""
    q = question_means(s)
    rows: list[dict[str, Any]] = []
    for task, sub in q.groupby("task", sort=True, observed=True):
        wide = sub.pivot(index="item", columns="system", values="score")
        present = [x for x in systems if x in wide.columns]
        for a, b in combinations(present, 2):
            both = wide[[a, b]].dropna()
            rows.append(_row(str(task), a, b, both[a].to_numpy() - both[b].to_numpy(), level))
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    out["p_adj"] = adjust_pvalues(out["p_value"].to_numpy(dtype=float), adjust) if len(out) else []
    if pooled_label is None or out["task"].nunique() < 2:
        return out
    pooled = []
    for (a, b), blk in out.groupby(["system_a", "system_b"], sort=False):
        T = len(blk)
        v = blk["std_error"].to_numpy(dtype=float) ** 2 / T**2
        df = float(v.sum() ** 2 / np.sum(v**2 / blk["df"].to_numpy(dtype=float))) if v.sum() > 0 else float(
            blk["df"].sum())
        pooled.append(_finish({"task": pooled_label, "system_a": a, "system_b": b,
                               "n_items": int(blk["n_items"].sum()), "delta": float(blk["delta"].mean()),
                               "std_error": float(np.sqrt(v.sum())), "df": df}, level))
    pooled_df = pd.DataFrame(pooled, columns=list(COLUMNS))
    pooled_df["p_adj"] = adjust_pvalues(pooled_df["p_value"].to_numpy(dtype=float), adjust)
    return pd.concat([out, pooled_df], ignore_index=True)
