"""Paired question-level differences of two systems: the closed-form analysis of Miller (2024).

Miller, E. (2024). *Adding Error Bars to Evals: A Statistical Approach to Language Model
Evaluations.* arXiv:2411.00640, sections 2-4 and appendix A. Per question i the scores are
first reduced over epochs (the mean: Inspect's default reducer); then, for a pair of systems
(a, b) on their shared questions,

    d_i = s_{a,i} - s_{b,i},   delta = mean(d),   SE = sd(d, ddof=1) / sqrt(n),

the interval is ``delta +- t_{n-1, 1-alpha/2} * SE`` and the test is the paired t test (R's
``t.test(x, y, paired = TRUE)``).

Clustered questions (``cluster=``: several questions share a passage, a document, a template):
the cluster-robust SE of the mean (Miller 2024, appendix A, eq. 4, with the finite-cluster
correction of Inspect AI's ``stderr(cluster=...)``),

    SE^2 = G / (G - 1) * sum_c ( sum_{i in c} (d_i - delta) )^2 / n^2,

which is ``sandwich::vcovCL(lm(d ~ 1), cluster = ~cluster, type = "HC0", cadjust = TRUE)``
(Zeileis, Koell & Graham 2020), with a t interval and test on G - 1 df (Cameron & Miller 2015,
section VI.C). Clusters are nested in tasks.

Several runs per system (separate whole evaluations whose run-level shifts -- a date, a seed, a
sampling configuration -- are shared by all questions of the run): the two-stage SE of
:func:`run_components`. ``s_{a,i}`` is then the mean over runs of the epoch means, and

    SE^2 = sd(d)^2 / n + sum_{s in (a, b)} sigma2_run_s / R_s,

where ``sigma2_run_s = max(0, (MS_run - MS_res) / n)`` is the ANOVA (method-of-moments)
estimate of system s's between-run variance from its n x R_s table of question-by-run means
(MS_run: the mean square of the run means, MS_res: the question x run residual mean square;
Searle, Casella & McCulloch 1992, ch. 4). ``sd(d)^2 / n`` already carries the question x run
noise, which is why only the run variance *beyond* it is added. df: Welch-Satterthwaite over
the pieces (n - 1 for the questions; Satterthwaite's df of a difference of mean squares for each
run part). Runs of different systems are assumed independent (not shared seeds).

Pooled over tasks (the mean of the task means, tasks fixed): ``delta = mean_t delta_t``,
``SE = sqrt(sum_t SE_t^2) / T`` with Welch-Satterthwaite df.

Missing p-values (a pair with one question: no SE) stay NaN and are left out of the count of the
adjustment (R's ``p.adjust``, :func:`mixedeval.padjust.adjust_pvalues`).
"""
from __future__ import annotations

from itertools import combinations
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import DataError
from ..padjust import adjust_pvalues
from ._input_checks import check_cluster_labels

COLUMNS = ("task", "system_a", "system_b", "n_items", "delta", "std_error", "df", "t_value", "p_value", "p_adj",
           "conf_low", "conf_high", "method")
METHOD = "paired question-level t (Miller 2024): epochs averaged within question"
CLUSTER_METHOD = ("paired question-level t, cluster-robust SE (Miller 2024 app. A; Inspect stderr(cluster)), df = "
                  "clusters - 1: epochs averaged within question")
RUNS_METHOD = ("paired question-level t with the between-run variance added (two-stage SE, Satterthwaite df): "
               "epochs averaged within question and run, runs averaged within question")


def check_clusters(s: pd.DataFrame, cluster: str) -> None:
    """A DataError unless every question (task, item) has exactly one, non-missing cluster."""
    if cluster not in s.columns:
        raise DataError(f"cluster={cluster!r} is not a column of the scores; columns: {list(s.columns)}")
    check_cluster_labels(s[cluster], cluster)
    if s[cluster].isna().any():
        bad = s.loc[s[cluster].isna(), "item"].iloc[0]
        raise DataError(f"{int(s[cluster].isna().sum())} rows have no cluster (column {cluster!r}), e.g. item "
                        f"{bad!r}; every question needs its cluster")
    k = s.groupby(["task", "item"], observed=True)[cluster].nunique()
    if (k > 1).any():
        t, i = k.index[int(np.argmax(k.to_numpy() > 1))]
        raise DataError(f"question {i!r} of task {t!r} has {int(k.max())} different clusters (column {cluster!r}); "
                        "a question belongs to one cluster")


def question_means(s: pd.DataFrame, cluster: str | None = None) -> pd.DataFrame:
    """Each question's score per system and task: the mean over its epochs and runs (with its
    cluster when ``cluster`` names a column)."""
    keys = ["task", "system", "item", *([cluster] if cluster else [])]
    return s.groupby(keys, observed=True, sort=True)["score"].mean().reset_index()


def clustered_se(d: np.ndarray, clusters: np.ndarray) -> tuple[float, int]:
    """Cluster-robust SE of ``mean(d)`` and the number of clusters G (NaN SE when G < 2):
    ``sqrt(G / (G - 1) * sum_c (sum_{i in c} (d_i - mean d))^2) / n`` (Inspect's
    ``stderr(cluster=)``; ``sandwich::vcovCL(..., type = "HC0", cadjust = TRUE)``)."""
    d = np.asarray(d, dtype=float)
    codes, _ = pd.factorize(pd.Series(clusters), sort=True)
    G = int(codes.max()) + 1 if codes.size else 0
    if G < 2:
        return np.nan, G
    sums = np.bincount(codes, weights=d - d.mean(), minlength=G)
    return float(np.sqrt(G / (G - 1.0) * np.sum(sums**2)) / d.size), G


def run_components(y: np.ndarray) -> tuple[float, float]:
    """ANOVA estimate of the between-run variance of one system and its Satterthwaite df.

    ``y``: the n questions x R runs table of (epoch-averaged) scores. Returns
    ``(sigma2_run, df)`` with ``sigma2_run = max(0, (MS_run - MS_res) / n)``; df is
    Satterthwaite's for the difference of mean squares (inf when the estimate is 0: the part is
    then absent). R < 2 runs: ``(0, inf)``."""
    n, R = y.shape
    if R < 2 or n < 2:
        return 0.0, np.inf
    col = y.mean(axis=0)
    resid = y - y.mean(axis=1, keepdims=True) - col[None, :] + y.mean()
    ms_run = n * col.var(ddof=1)
    ms_res = float(np.sum(resid**2) / ((n - 1) * (R - 1)))
    est = (ms_run - ms_res) / n
    if est <= 0:
        return 0.0, np.inf
    df = (ms_run - ms_res) ** 2 / (ms_run**2 / (R - 1) + ms_res**2 / ((n - 1) * (R - 1)))
    return float(est), float(df)


def _welch(parts: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """SE and Welch-Satterthwaite df of a sum of independent variance pieces ``(v, df)``."""
    v = np.array([p[0] for p in parts], dtype=float)
    dfs = np.array([p[1] for p in parts], dtype=float)
    tot = float(v.sum())
    if not np.isfinite(tot):
        return np.nan, np.nan
    if tot == 0:
        return 0.0, float(np.sum(np.where(np.isfinite(dfs), dfs, 0.0)))
    keep = v > 0
    return float(np.sqrt(tot)), float(tot**2 / np.sum(v[keep] ** 2 / dfs[keep]))


def _row(task: str, a: str, b: str, d: np.ndarray, level: float, clusters: np.ndarray | None = None,
         run_parts: Sequence[tuple[float, float]] = ()) -> dict[str, Any]:
    n = int(d.size)
    delta = float(d.mean()) if n else np.nan
    method = METHOD
    if clusters is not None:
        se, G = clustered_se(d, clusters)
        df = float(G - 1)
        method = CLUSTER_METHOD
    else:
        se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
        df = float(n - 1)
    if run_parts:
        se, df = _welch([(se**2, df), *run_parts])
        method = RUNS_METHOD
    return _finish({"task": task, "system_a": a, "system_b": b, "n_items": n, "delta": delta, "std_error": se,
                    "df": df}, level, method)


def _finish(r: dict[str, Any], level: float, method: str = METHOD) -> dict[str, Any]:
    delta, se, df = r["delta"], r["std_error"], r["df"]
    if not np.isfinite(se) or not df >= 1:  # NaN df fails too
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
    r.update(t_value=t_val, p_value=p, conf_low=lo, conf_high=hi, method=method)
    return r


def _adjusted(p: pd.Series, adjust: str) -> np.ndarray:
    """``p.adjust`` of the non-missing p-values (NaN stays NaN and is not counted)."""
    arr = p.to_numpy(dtype=float)
    return adjust_pvalues(arr, adjust) if arr.size else np.empty(0)


def _run_parts(sub_runs: pd.DataFrame | None, items: pd.Index, systems: Sequence[str]) -> list[tuple[float, float]]:
    """Per system, ``(sigma2_run / R, df)`` from its questions x runs table on ``items``."""
    if sub_runs is None:
        return []
    parts = []
    for x in systems:
        sx = sub_runs[sub_runs["system"].to_numpy() == x]
        ii = items.get_indexer(sx["item"])
        keep = ii >= 0
        rc, rl = pd.factorize(sx["run"].to_numpy()[keep])
        tot, cnt = np.zeros((len(items), len(rl))), np.zeros((len(items), len(rl)))
        np.add.at(tot, (ii[keep], rc), sx["score"].to_numpy(dtype=float)[keep])  # the mean over epochs, if any
        np.add.at(cnt, (ii[keep], rc), 1.0)
        with np.errstate(invalid="ignore"):
            y = tot / cnt
        y = y[:, ~np.isnan(y).any(axis=0)]  # runs with every question
        est, df = run_components(y)
        parts.append((est / max(y.shape[1], 1), df))
    return parts


def paired_differences(s: pd.DataFrame, systems: Sequence[str], *, level: float = 0.95, adjust: str = "holm",
                       pooled_label: str | None = None, cluster: str | None = None,
                       runs: bool = False) -> pd.DataFrame:
    """Per task and pair (a before b in ``systems``' order) the paired question-level difference
    a - b; with ``pooled_label`` one more block pooled over tasks. ``p_adj`` adjusts the per-task
    rows together (pairs x tasks) and the pooled rows among themselves.

    ``s``: one row per system, task, item (and run) with the epoch-averaged ``score``.
    ``cluster``: a column of ``s`` naming each question's cluster (clustered SE, df = G - 1).
    ``runs``: add each system's between-run variance (``s`` has a ``run`` column; see the
    module docstring)."""
    if cluster is not None:
        check_clusters(s, cluster)
    q = question_means(s, cluster)
    by_task = dict(tuple(s.groupby("task", sort=False, observed=True))) if runs else {}
    rows: list[dict[str, Any]] = []
    for task, sub in q.groupby("task", sort=True, observed=True):
        wide = sub.pivot(index="item", columns="system", values="score")
        cl = sub.drop_duplicates("item").set_index("item")[cluster] if cluster else None
        sub_runs = by_task.get(task)
        present = [x for x in systems if x in wide.columns]
        for a, b in combinations(present, 2):
            both = wide[[a, b]].dropna()
            rows.append(_row(str(task), a, b, both[a].to_numpy() - both[b].to_numpy(), level,
                             None if cl is None else cl.reindex(both.index).to_numpy(),
                             _run_parts(sub_runs, both.index, (a, b))))
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    out["p_adj"] = _adjusted(out["p_value"], adjust)
    if pooled_label is None or out["task"].nunique() < 2:
        return out
    pooled = []
    for (a, b), blk in out.groupby(["system_a", "system_b"], sort=False):
        T = len(blk)
        se, df = _welch(list(zip(blk["std_error"].to_numpy(dtype=float) ** 2 / T**2, blk["df"].to_numpy(dtype=float))))
        pooled.append(_finish({"task": pooled_label, "system_a": a, "system_b": b,
                               "n_items": int(blk["n_items"].sum()), "delta": float(blk["delta"].mean()),
                               "std_error": se, "df": df}, level, str(blk["method"].iloc[0])))
    pooled_df = pd.DataFrame(pooled, columns=list(COLUMNS))
    pooled_df["p_adj"] = _adjusted(pooled_df["p_value"], adjust)
    return pd.concat([out, pooled_df], ignore_index=True)
