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
sampling configuration -- are shared by all questions of the run): ``s_{a,i}`` is then the mean
over runs of the epoch means, and

    SE^2 = sd(d)^2 / n + sigma2_run * (1 / R_a + 1 / R_b),

``sd(d)^2 / n`` already carries the question x run noise, so only the run variance *beyond* it is
added. ``sigma2_run`` comes from the two-way ANOVA of each system's n_s x R_s table of
question-by-run means, **pooled over all systems of the task** (:func:`run_anova`; runs of every
system are assumed to vary equally -- on the score's scale: with 0/1 scores, one run effect on the
logit scale moves a system near 0.5 more than one near 0.1, and the pooled variance is then too small
for the first and too large for the second; 12 systems x 3 runs x 100 questions at accuracies 0.5
down to 0.1, run SD 0.3-1.0 on the logit scale: the top pair's interval covered 91.6-92.6%, the
bottom pair's 98-99%; at 0.5 down to 0.004, 80-88%; at 0.5 down to 0.25, 94.3-94.5%):
SS_run,s = n_s * sum_r (run mean - mean)^2 on R_s - 1 df,
the question x run residual on (n_s - 1)(R_s - 1) df, MS_run and MS_res the pooled mean squares
(df_run = sum_s (R_s - 1), df_res = sum_s (n_s - 1)(R_s - 1)), and the method-of-moments estimate
(Searle, Casella & McCulloch 1992, ch. 4)

    sigma2_run = (MS_run - MS_res) * df_run / sum_s (R_s - 1) n_s.

It is used by Bancroft's (1944) "sometimes pool" rule: a preliminary F test of the run variance,
F = MS_run / MS_res on (df_run, df_res) df (R's ``anova(lm(y ~ item + run))``, pooled), decides.
Below ``RUN_PRETEST_LEVEL`` (0.30) the estimate is added and the df are Satterthwaite's (1946)
for the linear combination of the three independent mean squares, sd(d)^2 / n on n - 1 df,
+ k MS_run on df_run, - k MS_res on df_res (k = (1/R_a + 1/R_b) df_run / sum_s (R_s - 1) n_s):

    df = SE^4 / ( (sd(d)^2/n)^2 / (n - 1) + (k MS_run)^2 / df_run + (k MS_res)^2 / df_res ).

At or above it the run variance is pooled into the question x run noise: the runs behave as
i.i.d. repetitions, df = n - 1, and SE^2 = sd(d)^2 / n -- plus, when the runs vary less than
chance (MS_run < MS_res, a negative estimate), ``RUN_NEGATIVE_SHARE`` (0.45) of that negative
estimate, ``0.45 k (MS_run - MS_res)`` (never below ``RUN_SHRINK_FLOOR`` = 1/4 of sd(d)^2 / n).

Why: the estimate of the run variance rests on few df (4 with two systems x 3 runs). Adding it
whenever positive (truncated at 0) with df_run for the run part -- the rule before -- made the
interval too wide with i.i.d. runs (the positive part of the estimate) and too narrow with a strong
run effect (df_run overstates the df of MS_run - MS_res: its variance is that of MS_run, not of the
difference), 92% coverage; the exact Satterthwaite df alone (whenever positive) fix the coverage but
collapse towards 5 df when the estimate is small and make i.i.d. intervals 1.25x too wide. The
preliminary test keeps the estimate only when the data show it; its level was 0.25, the one Bozivich,
Bancroft & Hartley (1956) recommend for sometimes-pool tests, and is 0.30 since issue 39's atlas
(below). Truncating a negative estimate at 0
biases the variance upwards exactly when the runs are i.i.d. (the test pools the positive estimates
below its threshold and every negative one): the narrowest interval of any rule deciding from F that
keeps its coverage (``calibration_logs.py --frontier``) lies below t_{n-1} sd(d) / sqrt(n) when F <
1, between the truncated and the full negative estimate; 0.45 of it brings coverage with i.i.d. runs
from 95.6-96.2% (truncated) to 94.6-95.3%, and the width down by 2-3%, at 30, 50 and 200 questions,
with the lowest coverage over run SDs 0.1-1.0 about unchanged (93.1% with 2 systems x 3 runs, 93.8%
with 3 x 3; the truncated rule 93.2% and 93.8%). Level and share were chosen on a grid of simulated
designs (2-3 systems, 3-5 runs, run SD 0-1 on the logit scale, 30 / 50 / 200 questions; not the data
sets of the table below): level 0.2 with the truncated estimate (the rule before) 1.169 / 1.117 wide
with i.i.d. runs (2 x 3 / 3 x 3); a level of 0.1 narrows i.i.d. intervals but loses coverage when a
moderate run effect goes undetected (91.3% at run SD 0.5 with two systems x 3 runs); the full
negative estimate (share 1) covers only 90.5-93.8% with i.i.d. runs.

Measured (``python benchmarks/calibration_logs.py --runs-vectorized --systems 2 3 --reps 20000``,
50 questions; coverage of the 95% interval, and mean half-width / 1.96 over the true SD of the
difference; run SD on the logit scale; target: coverage 93-97%, and width <= 1.10 with i.i.d.
runs):

    systems x runs   i.i.d. runs            run SD 0.3        run SD 0.6
    2 x 3            94.9% / 1.164 (missed)  93.6% / 1.216     94.0% / 1.284
    2 x 5            95.2% / 1.078           94.6% / 1.080     94.7% / 1.115
    3 x 3            95.0% / 1.108 (missed)  94.3% / 1.131     94.4% / 1.152
    3 x 5            95.0% / 1.052           95.2% / 1.067     94.3% / 1.053

Why 0.30 and not 0.25 (issue 39, the atlas' data model: 0/1 scores, 30 and 100 questions, 20,000 data
sets per design and run SD 0-1.0 on the logit scale, ``coverage_atlas.py --runs-rule``): at 0.25 two
systems x 3 runs covered 92.5-93.0% at run SD 0.3-0.6 (the atlas' 400-data-set cell 90.0%, 91.3% on
600 other data sets), below the band; of the levels 0.2-0.6 and shares 0-0.7 tried, 0.30 with 0.45 of a
negative estimate is the narrowest with i.i.d. runs (mean width 1.20, was 1.17) that keeps every run
SD at or above 93% (93.1%); 3 x 3 93.8% / 1.13, 2 x 5 94.4% / 1.10, 3 x 5 94.2% / 1.08, 2 x 10
94.8% / 1.06. The frontier of any rule deciding from F (``calibration_logs.py --frontier``, normal
scores, 50 questions: 1.135 for 2 x 3) is not reached on 0/1 scores with 30 questions; the issue's
1.15 for three i.i.d. runs is missed there by 4% to keep the coverage.

With few run df (df_run = sum_s (R_s - 1) <= ``RUN_FEW_DF`` = 3: two runs of two or three systems) the
preliminary test's level is ``RUN_PRETEST_LEVEL_FEW_DF`` (0.5) and no share of a negative estimate is
added; with the run part added the Satterthwaite df never fall below ``RUN_MIN_DF`` (1: a difference
of mean squares pushed them below 1 in about 1% of two-run data sets, rows with no interval before).
Why (issue 39, ``python benchmarks/coverage_atlas.py --runs-rule``: the atlas' data model -- 0/1
scores, one epoch, system b 0.5 logits below a at 0.5 -- 20,000 data sets per row; coverage of a - b,
mean and median half-width / 1.96 over the true SD): with 2 runs the run variance rests on 2 (3) df,
and the rule above covered 89.1-92.8% with run effects (2 systems x 2 runs, 30 and 100 questions, run
SD 0.3-1.0) and 91.0-93.7% with 3 systems; now 92.6-94.8% and 93.6-95.4%. The price with i.i.d.
runs: coverage 96.7% (was 93.0-93.4%), mean width 1.77 / 1.65 (was 1.49 / 1.42), median 1.14 / 1.06
(was 1.00 / 0.95) at 30 / 100 questions, 2 systems. No rule of this family (levels 0.05-1, shares
0-0.45) reached 93% at every run SD with 2 systems x 2 runs: two run df cannot tell a run effect from
chance; the t interval that ignores the runs (evalstats' ``auto``, Inspect's ``stderr()``) covers 95%
with i.i.d. runs at width 1.03 and 54-76% at run SD 0.6. Three or more runs are the remedy; 3 runs
and more are unchanged (2 x 3 on this data model: 92.6-94.6%, mean width 1.17 / median 1.02 with
i.i.d. runs).

Type I error 4.9-6.8%. The rule before it (level 0.2, a negative estimate truncated at 0; same data
sets): 96.0% / 1.172, 93.7%, 93.5% (2 x 3); 95.9% / 1.092, 94.5%, 94.6% (2 x 5); 95.9% / 1.121,
94.3%, 94.2% (3 x 3); 95.4% / 1.063, 94.9%, 94.3% (3 x 5). The rule before that (the truncated
estimate always added, its df the pooled run df): 91.9% (2 x 3) and 92.6% (3 x 3) with the strong
run effect. With 3 runs the run variance rests on 4 (2 systems) or 6 (3 systems) df; the oracle that
knows sigma2_run has width 1.01-1.03 and coverage 95.0-95.7%. The best width any rule deciding from
the F statistic can reach with coverage >= 95% with i.i.d. runs and >= 93% at every run SD 0.1-1.0
(a step function of F and of the share of question x run noise fitted on 40,000 simulated data sets
per run SD, ``calibration_logs.py --frontier``; optimistic) is 1.135 with 2 x 3 and 1.082 with 3 x 3
(1.097 at >= 93.5%, 1.114 at >= 94%): with 2 systems x 3 runs the target 1.10 is out of reach of any
such rule; this rule is at the bound (2 x 3: 1.144 with its lowest coverage 93.1%; 3 x 3: 1.097 with
93.8%, on the bound's data sets). Runs of different systems are assumed independent (not shared
seeds).

References: Bancroft, T. A. (1944). On biases in estimation due to the use of preliminary tests
of significance. *Ann. Math. Statist.* 15, 190-204. Bozivich, H., Bancroft, T. A. & Hartley,
H. O. (1956). Power of analysis of variance test procedures for certain incompletely specified
models. *Ann. Math. Statist.* 27, 1017-1043. Satterthwaite, F. E. (1946). An approximate
distribution of estimates of variance components. *Biometrics Bulletin* 2, 110-114.

The question scores, the clusters and the run verdict (the pooled ANOVA per task and the test's
decision) come from the call's evaluation design (:mod:`mixedeval.workflows.logs.design`), built
once; a variance with the share of a negative run estimate is floored at ``RUN_SHRINK_FLOOR`` of
its question-level part (a perfect or constant system keeps variance 0, never a negative one),
and the leaderboard's covariance matrix of the means stays positive semi-definite
(:func:`system_means`).

0/1 scores near 0 or 1 (one epoch, one run, no clusters: every question score of the pair is 0 or 1):
while each system of the pair has n min(p, 1 - p) >= ``MIN_EXPECTED`` (5, the textbook
rule for the normal approximation) the pair keeps the paired t above; below it (a system near 0 or
1, or few questions) the interval is Newcombe's (1998) hybrid score interval for paired proportions
and the p-value the exact McNemar test (:func:`._bounded.newcombe_paired`; method
``"Newcombe hybrid score, exact McNemar"``). Why: with few discordant questions the paired t
interval collapses (no discordant question: an interval of one point); measured by
``benchmarks/coverage_atlas.py`` (binary scores, 30 questions, system a at 0.98 and b at 0.97,
300 simulated evaluations) the paired t covered the difference in 81% (MC SE 2.3), Newcombe's
interval in the row the atlas shows now.

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

from ..padjust import adjust_pvalues
from ._bounded import MIN_EXPECTED, bounded_intervals, newcombe_paired, score_scale, use_newcombe
from .logs.design import (  # noqa: F401 - the design owns the run ANOVA and the cluster check; re-exported
    RUN_FEW_DF,
    RUN_MIN_DF,
    RUN_NEGATIVE_SHARE,
    RUN_PRETEST_LEVEL,
    RUN_PRETEST_LEVEL_FEW_DF,
    RUN_SHRINK_FLOOR,
    EvalDesign,
    RunAnova,
    RunVerdict,
    build_design,
    check_clusters,
    floored,
    run_anova,
    run_tables,
)

COLUMNS = ("task", "system_a", "system_b", "n_items", "delta", "std_error", "df", "t_value", "p_value", "p_adj",
           "conf_low", "conf_high", "method")
METHOD = "paired question-level t (Miller 2024): epochs averaged within question"
CLUSTER_METHOD = ("paired question-level t, cluster-robust SE (Miller 2024 app. A; Inspect stderr(cluster)), df = "
                  "clusters - 1: epochs averaged within question")
RUNS_METHOD = ("paired question-level t with the between-run variance (pooled over systems, method of moments) "
               f"added when a preliminary F test finds it (Bancroft 1944, level {RUN_PRETEST_LEVEL:g}; Satterthwaite "
               f"df), {RUN_NEGATIVE_SHARE:g} of it when it is negative: epochs averaged within question and run, runs "
               "averaged within question")
NEWCOMBE_METHOD = ("Newcombe hybrid score interval (Newcombe 1998, method 10) and exact McNemar test: 0/1 scores, "
                   f"one epoch and run, some system with n min(p, 1 - p) < {MIN_EXPECTED:g}")
#: short names of the methods, for the headline's sentence
SHORT = {METHOD: "paired t", CLUSTER_METHOD: "paired t, cluster-robust", RUNS_METHOD: "paired t, run variance",
         NEWCOMBE_METHOD: "Newcombe hybrid score, exact McNemar"}


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


def balanced_run_se(vq: Any, ms_run: Any, ms_res: Any, df_run: float, df_res: float, k: float,
                    n: int) -> tuple[np.ndarray, np.ndarray]:
    """The rule of the module docstring on arrays of balanced designs (many data sets at once:
    the plan's simulation, the calibration benchmark): the variance of a pair's difference and its
    df from ``vq`` = sd(d)^2 / n on n - 1 df, the pooled mean squares and ``k`` = (1/R_a + 1/R_b)
    df_run / sum_s (R_s - 1) n_s. Returns ``(v, df)``; :class:`RunAnova` is the same rule for one
    data set of any shape (the tests check the two agree)."""
    vq, ms_run, ms_res = (np.asarray(a, dtype=float) for a in (vq, ms_run, ms_res))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_run = np.where(ms_res > 0, stats.f.sf(ms_run / ms_res, df_run, df_res), np.where(ms_run > 0, 0.0, np.nan))
        few = df_run <= RUN_FEW_DF
        kept = (p_run < (RUN_PRETEST_LEVEL_FEW_DF if few else RUN_PRETEST_LEVEL)) & (ms_run > ms_res)
        shrink = np.where(~kept & (ms_run < ms_res) & (not few), RUN_NEGATIVE_SHARE * k * (ms_run - ms_res), 0.0)
        v = np.where(kept, vq + k * (ms_run - ms_res), np.maximum(vq + shrink, RUN_SHRINK_FLOOR * vq))
        den = np.where(kept, vq**2 / (n - 1) + (k * ms_run) ** 2 / df_run + (k * ms_res) ** 2 / df_res,
                       v**2 / (n - 1))
        df = np.where(den > 0, v**2 / den, n - 1.0)
    return v, np.where(kept, np.maximum(df, RUN_MIN_DF), df)


def pooled_run_variance(tables: Sequence[np.ndarray]) -> tuple[float, float]:
    """The method-of-moments between-run variance pooled over systems, truncated at 0, and its
    df_run (module docstring): ``max(0, (sum SS_run - MS_res * sum (R_s - 1)) / sum (R_s - 1) n_s)``
    and ``sum (R_s - 1)``; ``(0, inf)`` when no system has two runs. Whether it enters the SE is
    decided by the preliminary test (:class:`RunAnova`)."""
    a = run_anova(tables)
    return (0.0, np.inf) if a is None else (a.sigma2, float(a.df_run))


def as_design(s: EvalDesign | pd.DataFrame, cluster: str | None = None, runs: bool | None = None) -> EvalDesign:
    """The design of the analysis: ``s`` itself, or (the low-level entry: a table of epoch-reduced
    rows system, task, item[, run], score[, cluster]) the design built from it with ``runs`` as
    given and the cluster labels of column ``cluster`` as they are."""
    if isinstance(s, EvalDesign):
        return s
    rows = s if "task" in s.columns else s.assign(task="(all items)")
    if cluster is not None and cluster != "cluster":
        rows = rows.drop(columns="cluster", errors="ignore").rename(columns={cluster: "cluster"})
    return build_design(rows, cluster=None if cluster is None else "cluster", runs=bool(runs), nest_clusters=False)


def _welch(parts: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """SE and Welch-Satterthwaite df of a sum of independent variance pieces ``(v, df)`` (``v`` the
    piece's coefficient times its mean square, possibly negative; Satterthwaite 1946)."""
    v = np.array([p[0] for p in parts], dtype=float)
    dfs = np.array([p[1] for p in parts], dtype=float)
    tot = float(v.sum())
    if not np.isfinite(tot):
        return np.nan, np.nan
    if tot == 0:
        return 0.0, float(np.sum(np.where(np.isfinite(dfs), dfs, 0.0)))
    keep = v != 0  # a piece with a negative coefficient (a mean square subtracted) counts too
    return float(np.sqrt(tot)), float(tot**2 / np.sum(v[keep] ** 2 / dfs[keep]))


def _row(task: str, a: str, b: str, d: np.ndarray, level: float, clusters: np.ndarray | None = None,
         run_parts: Sequence[tuple[float, float]] | None = None, run_shrink: float = 0.0) -> dict[str, Any]:
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
    if run_parts is not None:
        if run_parts:
            se, df = _welch([(se**2, df), *run_parts])
            df = max(df, RUN_MIN_DF) if np.isfinite(df) else df
        elif run_shrink and np.isfinite(se):
            se = float(np.sqrt(floored(se**2, run_shrink)))
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


def paired_differences(s: EvalDesign | pd.DataFrame, systems: Sequence[str], *, level: float = 0.95,
                       adjust: str = "holm", pooled_label: str | None = None, cluster: str | None = None,
                       runs: bool = False) -> pd.DataFrame:
    """Per task and pair (a before b in ``systems``' order) the paired question-level difference
    a - b; with ``pooled_label`` one more block pooled over tasks. ``p_adj`` adjusts the per-task
    rows together (pairs x tasks) and the pooled rows among themselves.

    ``s``: the :class:`~mixedeval.workflows.logs.design.EvalDesign` of the call (its question
    scores, clusters and run verdicts), or one row per system, task, item (and run) with the
    epoch-reduced ``score``, with ``cluster`` naming its cluster column (clustered SE, df = G - 1)
    and ``runs`` whether to add each system's between-run variance (module docstring)."""
    d = as_design(s, cluster, runs)
    rows: list[dict[str, Any]] = []
    for task in d.tasks:
        wide, cl = d.wide(task, systems)
        verdict = d.run_verdict(task)
        for a, b in combinations(list(wide.columns), 2):
            both = wide[[a, b]].dropna()
            x, y = both[a].to_numpy(), both[b].to_numpy()
            row = _row(str(task), a, b, x - y, level, None if cl is None else cl.reindex(both.index).to_numpy(),
                       None if verdict is None else verdict.pieces(a, b),
                       0.0 if verdict is None else verdict.shrink(a, b))
            if cl is None and verdict is None and use_newcombe(x, y):
                lo, hi, p = newcombe_paired(x, y, level)
                row.update(conf_low=lo, conf_high=hi, p_value=p, method=NEWCOMBE_METHOD)
            rows.append(row)
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
                               "std_error": se, "df": df}, level,
                               METHOD if str(blk["method"].iloc[0]) == NEWCOMBE_METHOD else str(blk["method"].iloc[0])))
    pooled_df = pd.DataFrame(pooled, columns=list(COLUMNS))
    pooled_df["p_adj"] = _adjusted(pooled_df["p_value"], adjust)
    return pd.concat([out, pooled_df], ignore_index=True)


# ------------------------------------------------------------------------------ per-system means
def _mean_vcov(wide: pd.DataFrame, clusters: pd.Series | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(means, vcov, df) of the systems' mean scores over questions (``wide``: questions x
    systems). The covariance is that of the paired analysis: ``cov(X) / n`` over the questions
    every system answered (a difference of two systems then has the headline's SE
    ``sd(d) / sqrt(n)``), cluster-robust ``G / (G - 1) sum_c S_c S_c' / n^2`` (S_c the centred
    cluster sums) with clusters; each system's own variance is over its own questions and the
    covariances are scaled to it (correlations of the shared questions). df: n - 1 (G - 1)."""
    X = wide.to_numpy(dtype=float)
    k = X.shape[1]
    means = np.nanmean(X, axis=0)
    own_var, own_df = np.full(k, np.nan), np.full(k, np.nan)
    for j in range(k):
        ok = ~np.isnan(X[:, j])
        x = X[ok, j]
        if clusters is not None:
            se, G = clustered_se(x, clusters.to_numpy()[ok])
            own_var[j], own_df[j] = se**2, G - 1.0
        elif x.size > 1:
            own_var[j], own_df[j] = x.var(ddof=1) / x.size, x.size - 1.0
    full = ~np.isnan(X).any(axis=1)
    Xc = X[full]
    n = Xc.shape[0]
    if n >= 2:
        E = Xc - Xc.mean(axis=0)
        if clusters is not None:
            codes, _ = pd.factorize(clusters.to_numpy()[full], sort=True)
            G = int(codes.max()) + 1
            S = np.zeros((G, k))
            np.add.at(S, codes, E)
            V = G / max(G - 1.0, 1.0) * (S.T @ S) / n**2
        else:
            V = (E.T @ E) / (n * (n - 1.0))
        d = np.sqrt(np.diag(V))
        with np.errstate(invalid="ignore", divide="ignore"):
            C = V / np.outer(d, d)
        C[~np.isfinite(C)] = 0.0
        np.fill_diagonal(C, 1.0)
    else:
        C = np.eye(k)
    sd = np.sqrt(own_var)
    V = C * np.outer(sd, sd)
    return means, V, own_df


def system_means(s: EvalDesign | pd.DataFrame, systems: Sequence[str], *, level: float = 0.95,
                 cluster: str | None = None, runs: bool = False,
                 pooled_label: str | None = None) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Each system's mean score per task (and pooled over tasks: the mean of its task means) with
    the SE, df and interval of the paired analysis (:func:`paired_differences`' SEs: the same
    questions, clusters and run variance), and per task the covariance matrix of the systems'
    means (for simultaneous rank intervals: the difference of two systems has the headline's
    variance). ``s`` as in :func:`paired_differences`.

    With runs, a system's variance gets its share of the run variance (the pieces when the
    preliminary test keeps it; a share of a negative estimate when it pools it, never below
    ``RUN_SHRINK_FLOOR`` of the question-level variance, so never negative: a perfect system keeps
    variance 0). The covariance matrix stays positive semi-definite: where lowering the
    diagonals by those shares would break it, they are lowered by the largest common fraction
    that keeps it (the shares move the diagonal only).

    Returns ``(table, vcovs)``: table columns task, system, n_items, estimate, std_error, df,
    conf_low, conf_high, interval; ``vcovs[task]`` a systems x systems DataFrame. The interval is
    the t interval on the row's df, except where every score lies in [0, 1] and it reaches 0 or
    1 (or the mean is within 5 / n of it): there a Wilson interval that stays inside [0, 1]; on a
    rating scale (every score an integer) the same on the observed range of the scores
    (:mod:`._bounded`; ``interval`` names the family of each row)."""
    d = as_design(s, cluster, runs)
    rows: list[dict[str, Any]] = []
    vcovs: dict[str, pd.DataFrame] = {}
    for task in d.tasks:
        wide, cl = d.wide(task, systems)
        present = list(wide.columns)
        means, V, dfs = _mean_vcov(wide, cl)
        verdict = d.run_verdict(task)
        extra = np.zeros(len(present))
        shrink = np.zeros(len(present))
        for j, x in enumerate(present):
            parts = [(float(V[j, j]), float(dfs[j]))]
            if verdict is not None and verdict.n_runs:
                pieces = verdict.pieces(x)
                extra[j] = sum(e[0] for e in pieces)
                shrink[j] = floored(float(V[j, j]), verdict.shrink(x)) - float(V[j, j]) if not pieces else 0.0
                parts = [(float(V[j, j]) + shrink[j], float(dfs[j]))] if not pieces else parts + pieces
            se, df = _welch(parts) if len(parts) > 1 else (float(np.sqrt(parts[0][0])), parts[0][1])
            df = max(df, RUN_MIN_DF) if len(parts) > 1 and np.isfinite(df) else df
            rows.append({"task": str(task), "system": x, "n_items": int(wide[x].notna().sum()),
                         "estimate": float(means[j]), "std_error": se, "df": df,
                         "plain": not d.clustered and extra[j] == 0 and shrink[j] == 0})
        V = _psd_shift(V + np.diag(extra), shrink)
        vcovs[str(task)] = pd.DataFrame(V, index=present, columns=present)
    out = pd.DataFrame(rows, columns=["task", "system", "n_items", "estimate", "std_error", "df", "plain"])
    if pooled_label is not None and out["task"].nunique() > 1:
        pooled, Vp = _pool_tasks(out, vcovs, systems)
        out = pd.concat([out, pooled.assign(task=pooled_label, plain=False)], ignore_index=True)
        vcovs[pooled_label] = Vp
    scale = score_scale(d.rows["score"].to_numpy(dtype=float))
    lo, hi, fam = bounded_intervals(out["estimate"], out["std_error"], out["df"], out["n_items"], level,
                                    out["plain"].to_numpy(dtype=bool), bounded=scale is not None,
                                    scale=scale[:2] if scale else (0.0, 1.0), observed=bool(scale and scale[2]))
    out = out.drop(columns="plain").assign(conf_low=lo, conf_high=hi, interval=fam)
    return out, vcovs


def _psd_shift(V: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``V + diag(shift)`` (``shift`` <= 0: the shares of a negative run estimate), or, where that
    is not positive semi-definite, ``V + t diag(shift)`` with the largest t in [0, 1] that is
    (bisection; ``V`` itself is)."""
    if not np.any(shift) or not np.isfinite(V).all():
        return V + np.diag(shift)

    def psd(t: float) -> bool:
        W = V + t * np.diag(shift)
        tol = 1e-12 * max(float(np.abs(np.diag(V)).max()), 1e-300)
        return bool(np.linalg.eigvalsh((W + W.T) / 2.0).min() >= -tol)

    if psd(1.0):
        return V + np.diag(shift)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if psd(mid) else (lo, mid)
    return V + lo * np.diag(shift)


def _pool_tasks(out: pd.DataFrame, vcovs: dict[str, pd.DataFrame],
                systems: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The mean of each system's task means (tasks fixed) and its covariance
    ``sum_t V_t[a, b] / (T_a T_b)``; df Welch-Satterthwaite over the tasks."""
    names = [x for x in systems if x in set(out["system"])]
    T = out.groupby("system")["task"].nunique()
    Vp = pd.DataFrame(0.0, index=names, columns=names)
    for V in vcovs.values():
        idx = [x for x in names if x in V.index]
        Vp.loc[idx, idx] += V.loc[idx, idx].to_numpy()
    Vp = Vp / np.outer(T.reindex(names).to_numpy(dtype=float), T.reindex(names).to_numpy(dtype=float))
    rows = []
    for x in names:
        blk = out[out["system"] == x]
        t = len(blk)
        se, df = _welch(list(zip(blk["std_error"].to_numpy(dtype=float) ** 2 / t**2, blk["df"].to_numpy(dtype=float))))
        rows.append({"system": x, "n_items": int(blk["n_items"].sum()), "estimate": float(blk["estimate"].mean()),
                     "std_error": float(np.sqrt(Vp.loc[x, x])), "df": df})
    return pd.DataFrame(rows), Vp
