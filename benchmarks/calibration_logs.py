"""Calibration of the headline of ``me.compare_logs``: coverage of its 95% interval and the
rejection rate of its p-value at 5% when the systems do not differ, by simulation.

Data model (two systems a, b; questions i; clusters k of questions; runs r; epochs e): a 0/1
score ``y[s, r, i, e] ~ Bernoulli(expit(eta))`` with

    eta = mu + sgn_s * Delta / 2 + q_i + c_k + sgn_s * g_k / 2 + u_{s,i} + rho_{s,r}

sgn_a = +1, sgn_b = -1; question difficulty q_i ~ N(0, 1.5^2); a cluster effect c_k ~ N(0, sd_c^2)
on the difficulty and g_k ~ N(0, sd_g^2) on the system difference (clustered scenario only);
the system x question interaction u_{s,i} ~ N(0, 0.7^2); a run shift rho_{s,r} ~ N(0, sd_run^2)
(independent per system and run; "runs" scenario only); epochs are i.i.d. Bernoulli draws given
eta (repeated samples of the question within one run). All effects independent.

Estimand (the quantity the headline's interval is for): the difference in expected accuracy of a
and b over the population of questions (and clusters, runs, epochs),

    theta = E[y_a] - E[y_b] = E[expit(mu + Delta/2 + Z)] - E[expit(mu - Delta/2 + Z)],
    Z ~ N(0, 1.5^2 + sd_c^2 + sd_g^2 / 4 + 0.7^2 + sd_run^2),

because the sum of the independent normal effects is normal. Each expectation is computed by
Gauss-Hermite quadrature with 200 nodes (exact to rounding for this smooth integrand). Under the
null (Delta = 0, the systems identical in distribution) theta = 0 exactly.

Scenarios: (a) i.i.d. epochs: 60 questions, 3 epochs, one run; (b) runs: 50 questions, one epoch,
3 or 5 runs per system, i.i.d. (sd_run = 0), with a run effect (sd_run = 0.3) or a strong one
(0.6); (c) clustered questions: 20 clusters of 3 questions (sd_c = 1, sd_g = 1.2), 2 epochs,
``cluster=``; (d) accuracies near 1 and near 0 (mean accuracy about 0.95 and 0.05), 60
questions, 3 epochs; (e) 30 questions, 3 epochs.

Methods (rows of the table): ``headline`` is what ``me.compare_logs`` reports (epoch means, then
``_paired.paired_differences``: Miller's paired t; clustered SE with ``cluster``; the two-stage
SE with several runs). For comparison: ``bootstrap items+runs`` (``me.bootstrap`` of the
epoch-averaged scores resampling questions and runs: the earlier headline with several runs),
``epochs as runs`` (``me.bootstrap`` of the epoch-level rows with the epoch as the run: the old
mistake), ``unclustered t`` (Miller's paired t ignoring the clusters), and optionally ``GLMM LRT``
(type I error of ``compare_logs``' likelihood-ratio test; ``--glmm``, slow).

Columns: coverage of theta by the 95% interval (Delta = 0.5 on the logit scale) and its
Monte-Carlo SE sqrt(c (1 - c) / reps); the type I error (Delta = 0) and its MC SE; mean SE / SD:
the mean reported SE over the SD of the estimates across the simulated data sets (Delta = 0.5).

Measured (2,000 reps, 500 bootstrap resamples, 2 processes, about 7 minutes): headline coverage
94.7-95.2% and type I error 4.3-5.7% in scenarios a, c, d, e; epochs as runs 98.6-98.9% /
0.5-1.0% (SE 1.41-1.46x the truth); unclustered t on clustered questions 91.0% / 8.1%.
Runs (``--runs-vectorized --systems 2 3 --reps 20000``, about 90 s; 2 or 3 systems, the pair
a - b measured, further systems Delta lower each, the run variance pooled over all systems; the
column ``halfwidth_over_sd`` is the mean half-width / 1.96 over the true SD; ``target`` is issue
30's criterion: coverage 93-97%, and with i.i.d. runs halfwidth_over_sd <= 1.10), headline
(coverage / width): 2 systems x 3 runs: i.i.d. 94.6% / 1.143 (missed), run SD 0.3 93.2% / 1.199,
SD 0.6 93.6% / 1.278; 2 x 5: 95.1% / 1.070, 94.4% / 1.074, 94.6% / 1.114; 3 x 3: 94.8% / 1.093,
94.0% / 1.121, 94.3% / 1.150; 3 x 5: 94.9% / 1.046, 95.0% / 1.063, 94.3% / 1.052 (type I error
4.9-6.8%). The rule before it (``level 0.2, truncated (before)``: a negative run estimate
truncated at 0): i.i.d. 96.0% / 1.172, 95.9% / 1.092, 95.9% / 1.121, 95.4% / 1.063; the rule
before that (``pooled, run df (before)``): strong run effect 91.9% (2 x 3) and 92.6% (3 x 3); the
oracle with the known run variance 95.0-95.7% / 1.01-1.03; the previous two-stage SE 1.33-1.34
wide with 3 i.i.d. runs. ``--frontier`` (:func:`frontier_table`, 40,000 data sets at each run SD
0-1.0, about 1 minute more): the best i.i.d. width any rule deciding from the preliminary F
statistic and the share of question x run noise can have with coverage >= 95% (i.i.d.) and >= 93%
at every run SD (a step function fitted on the same data sets: optimistic): 1.135 (2 x 3), 1.082
(3 x 3; 1.097 at >= 93.5%, 1.114 at >= 94%), 1.052 (2 x 5), 1.051 (3 x 5) -- the 2 x 3 target is
out of reach; the headline on the same data sets: 1.144 / lowest coverage 93.1% (2 x 3), 1.097 /
93.8% (3 x 3), 1.067 / 94.4%, 1.052 / 94.6%.

    .venv/bin/python benchmarks/calibration_logs.py --runs-vectorized --systems 2 3 [--reps 20000] [--frontier]
    .venv/bin/python benchmarks/calibration_logs.py [--reps 2000] [--quick] [--executor 2]
        [--n-resamples 1000] [--glmm] [--random-state 20241101]

References: Miller (2024), arXiv:2411.00640; Cameron & Miller (2015), J. Human Resources 50(2);
Bancroft (1944), Ann. Math. Statist. 15; Satterthwaite (1946), Biometrics Bulletin 2.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mixedeval.workflows._paired import paired_differences  # noqa: E402
from mixedeval.workflows.logs.design import reduce_epochs as epoch_means  # noqa: E402

SD_Q, SD_INT = 1.5, 0.7
DELTA_ALT = 0.5


@dataclass(frozen=True)
class Scenario:
    """One simulation design (see the module docstring)."""

    name: str
    n: int = 60  # questions
    epochs: int = 3
    runs: int = 1
    mu: float = 0.0
    sd_run: float = 0.0
    clusters: int = 0  # 0: no clusters; else n / clusters questions per cluster
    sd_c: float = 0.0
    sd_g: float = 0.0

    @property
    def sd_total(self) -> float:
        return float(np.sqrt(SD_Q**2 + self.sd_c**2 + self.sd_g**2 / 4 + SD_INT**2 + self.sd_run**2))


SCENARIOS: dict[str, Scenario] = {
    "a iid epochs": Scenario("a iid epochs"),
    "b 3 iid runs": Scenario("b 3 iid runs", n=50, epochs=1, runs=3),
    "b 3 runs, run effect": Scenario("b 3 runs, run effect", n=50, epochs=1, runs=3, sd_run=0.3),
    "b 3 runs, strong run effect": Scenario("b 3 runs, strong run effect", n=50, epochs=1, runs=3, sd_run=0.6),
    "b 5 iid runs": Scenario("b 5 iid runs", n=50, epochs=1, runs=5),
    "b 5 runs, run effect": Scenario("b 5 runs, run effect", n=50, epochs=1, runs=5, sd_run=0.3),
    "b 5 runs, strong run effect": Scenario("b 5 runs, strong run effect", n=50, epochs=1, runs=5, sd_run=0.6),
    "c clustered": Scenario("c clustered", epochs=2, clusters=20, sd_c=1.0, sd_g=1.2),
    "d near 1": Scenario("d near 1", mu=4.3),
    "d near 0": Scenario("d near 0", mu=-4.3),
    "e 30 questions": Scenario("e 30 questions", n=30),
}

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(200)  # probabilists' Hermite: weight exp(-x^2/2)


def expected_accuracy(mu: float, sd: float) -> float:
    """E[expit(mu + sd Z)], Z ~ N(0, 1), by 200-node Gauss-Hermite quadrature."""
    return float(np.sum(_GH_W * expit(mu + sd * _GH_X)) / np.sqrt(2 * np.pi))


def truth(sc: Scenario, delta: float) -> float:
    """theta: the difference in expected accuracy of a and b (module docstring)."""
    return expected_accuracy(sc.mu + delta / 2, sc.sd_total) - expected_accuracy(sc.mu - delta / 2, sc.sd_total)


def simulate(sc: Scenario, delta: float, rng: np.random.Generator) -> pd.DataFrame:
    """One data set: columns system, task, item, run, epoch, score (+ cluster)."""
    n, R, E = sc.n, sc.runs, sc.epochs
    sgn = np.array([1.0, -1.0])[:, None, None]  # systems a, b
    q = rng.normal(0, SD_Q, n)
    if sc.clusters:
        k = np.repeat(np.arange(sc.clusters), n // sc.clusters)
        q = q + rng.normal(0, sc.sd_c, sc.clusters)[k]
        g = rng.normal(0, sc.sd_g, sc.clusters)[k]
    else:
        k, g = np.zeros(n, dtype=int), np.zeros(n)
    eta = (sc.mu + sgn * (delta + g)[None, None, :] / 2 + q[None, None, :]
           + rng.normal(0, SD_INT, (2, 1, n)) + rng.normal(0, sc.sd_run, (2, R, 1)))  # (system, run, item)
    y = rng.random((2, R, n, E)) < expit(eta)[..., None]
    s_idx, r_idx, i_idx, e_idx = np.indices(y.shape).reshape(4, -1)
    df = pd.DataFrame({"system": np.array(["a", "b"])[s_idx], "task": "t", "item": i_idx.astype(str),
                       "run": r_idx.astype(str), "epoch": e_idx.astype(str), "score": y.ravel().astype(float)})
    if sc.clusters:
        df["cluster"] = k[i_idx].astype(str)
    return df


# ------------------------------------------------------------------------------ the methods
def headline(df: pd.DataFrame, sc: Scenario, cluster: bool = True) -> tuple[float, float, float, float, float]:
    """delta, SE, conf_low, conf_high, p of the headline (epoch means, paired differences)."""
    avg = epoch_means(df)
    r = paired_differences(avg, ["a", "b"], cluster="cluster" if (sc.clusters and cluster) else None,
                           runs=sc.runs > 1).iloc[0]
    return r["delta"], r["std_error"], r["conf_low"], r["conf_high"], r["p_value"]


def two_stage_old(df: pd.DataFrame) -> tuple[float, float, float, float, float]:
    """The previous headline with several runs (the baseline): per system the ANOVA estimate of its
    between-run variance on R - 1 df, added to sd(d)^2 / n, Satterthwaite df of each difference of
    mean squares."""
    from scipy import stats

    avg = epoch_means(df)
    q = avg.groupby(["system", "item"])["score"].mean().unstack(0)
    d = (q["a"] - q["b"]).to_numpy()
    n = d.size
    parts = [(d.var(ddof=1) / n, n - 1.0)]
    for x in ("a", "b"):
        y = avg[avg.system == x].pivot(index="item", columns="run", values="score").to_numpy()
        R = y.shape[1]
        col = y.mean(axis=0)
        resid = y - y.mean(axis=1, keepdims=True) - col[None, :] + y.mean()
        ms_run, ms_res = n * col.var(ddof=1), float(np.sum(resid**2) / ((n - 1) * (R - 1)))
        if ms_run > ms_res:
            parts.append(((ms_run - ms_res) / n / R,
                          (ms_run - ms_res) ** 2 / (ms_run**2 / (R - 1) + ms_res**2 / ((n - 1) * (R - 1)))))
    v = sum(p[0] for p in parts)
    dfw = v**2 / sum(p[0] ** 2 / p[1] for p in parts)
    se, delta = np.sqrt(v), float(d.mean())
    h = float(stats.t.ppf(0.975, dfw)) * se
    return delta, se, delta - h, delta + h, float(2 * stats.t.sf(abs(delta / se), dfw))


def boot(df: pd.DataFrame, run: str | None, n_resamples: int, seed: int) -> tuple[float, float, float, float, float]:
    """``me.bootstrap`` paired difference a - b (percentile interval, shift-method p)."""
    import mixedeval as me

    b = me.bootstrap(df, score="score", system="system", item="item", run=run, n_resamples=n_resamples,
                     random_state=seed, progress=False)
    p = b.pairwise(adjust="none")
    r = p.iloc[0]
    sign = 1.0 if r["system_a"] == "a" else -1.0
    lo, hi = sorted((sign * r["conf_low"], sign * r["conf_high"]))
    return sign * r["delta"], r["std_error"], lo, hi, r["p_value"]


def glmm_p(df: pd.DataFrame, seed: int) -> float:
    """``me.compare_logs``' likelihood-ratio p-value of the system effect (with ``cluster=`` when
    the data have clusters: ``(1|cluster) + (1|system:cluster)`` in the GLMM)."""
    import mixedeval as me

    cols = ["system", "item", "run", "epoch", "score", *(["cluster"] if "cluster" in df else [])]
    res = me.compare_logs(df[cols].rename(columns={"score": "acc"}), metric="acc", format="table",
                          n_resamples=200, random_state=seed, progress=False,
                          cluster="cluster" if "cluster" in df else None)
    return float(res.p_value)


def methods_for(sc: Scenario, glmm: bool, boot_runs: bool = True) -> list[str]:
    out = ["headline"]
    if sc.runs > 1:
        out += ["two-stage (previous)", *(["bootstrap items+runs"] if boot_runs else [])]
    if sc.epochs > 1 and sc.runs == 1 and not sc.clusters:
        out.append("epochs as runs")
    if sc.clusters:
        out.append("unclustered t")
    if glmm:
        out.append("GLMM LRT")
    return out


def one(sc: Scenario, method: str, df: pd.DataFrame, n_resamples: int, seed: int) -> tuple[float, ...]:
    """(delta, SE, low, high, p) of one method on one data set (NaN interval for the GLMM LRT)."""
    if method == "headline":
        return headline(df, sc)
    if method == "two-stage (previous)":
        return two_stage_old(df)
    if method == "unclustered t":
        return headline(df, sc, cluster=False)
    if method == "bootstrap items+runs":
        return boot(epoch_means(df), "run", n_resamples, seed)
    if method == "epochs as runs":
        return boot(df.drop(columns="run").rename(columns={"epoch": "run"}), "run", n_resamples, seed)
    if method == "GLMM LRT":
        return (np.nan, np.nan, np.nan, np.nan, glmm_p(df, seed))
    raise ValueError(method)


def chunk(name: str, methods: list[str], entropy: int, spawn_key: tuple, reps: int, n_resamples: int,
          scenario: Scenario | None = None) -> dict[str, np.ndarray]:
    """``reps`` data sets under the alternative and under the null; per method an array
    (reps, 2, 5): [alt, null] x (delta, SE, low, high, p). A task of the executor."""
    sc = scenario or SCENARIOS[name]
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=spawn_key))
    out = {m: np.full((reps, 2, 5), np.nan) for m in methods}
    for i in range(reps):
        for j, delta in enumerate((DELTA_ALT, 0.0)):
            df = simulate(sc, delta, rng)
            seed = int(rng.integers(2**31))
            for m in methods:
                if m == "GLMM LRT" and j == 0:
                    continue
                out[m][i, j] = one(sc, m, df, n_resamples, seed)
    return out


def summarize(sc: Scenario, method: str, res: np.ndarray) -> dict[str, Any]:
    """One table row: coverage (alt), type I error (null), mean SE / SD of the estimates."""
    theta = truth(sc, DELTA_ALT)
    alt, null = res[:, 0], res[:, 1]
    ok = np.isfinite(alt[:, 2]) & np.isfinite(alt[:, 3])
    cov = float(np.mean((alt[ok, 2] <= theta) & (theta <= alt[ok, 3]))) if ok.any() else np.nan
    p = null[:, 4]
    pk = np.isfinite(p)
    rej = float(np.mean(p[pk] < 0.05)) if pk.any() else np.nan
    reps = int(res.shape[0])
    est = alt[np.isfinite(alt[:, 0]), 0]
    sd = float(np.std(est, ddof=1)) if est.size > 1 else np.nan
    half = (alt[:, 3] - alt[:, 2]) / 2
    return {"scenario": sc.name, "method": method, "reps": reps, "theta": theta,
            "coverage": cov, "cov_mc_se": np.sqrt(cov * (1 - cov) / max(ok.sum(), 1)),
            "type_i": rej, "type_i_mc_se": np.sqrt(rej * (1 - rej) / max(pk.sum(), 1)),
            "se_over_sd": float(np.nanmean(alt[:, 1]) / sd) if np.isfinite(sd) and sd > 0 else np.nan,
            "halfwidth_over_sd": float(np.nanmean(half) / 1.96 / sd) if np.isfinite(sd) and sd > 0 else np.nan}


def run_all(names: list[str], reps: int, n_resamples: int, executor: Any, random_state: int, glmm: bool,
            chunk_size: int = 25, boot_runs: bool = True) -> pd.DataFrame:
    """Every scenario's rows, the data sets spread over ``executor`` in chunks of ``chunk_size``."""
    from mixedeval._executor import resolve_executor

    runner = resolve_executor(executor)
    tasks, where = [], []
    for si, name in enumerate(names):
        ms = methods_for(SCENARIOS[name], glmm, boot_runs)
        for ci, start in enumerate(range(0, reps, chunk_size)):
            tasks.append((name, ms, random_state, (si, ci), min(chunk_size, reps - start), n_resamples))
            where.append(name)
    results = runner.map(chunk, tasks, progress=False, desc="calibration")
    rows = []
    for name in names:
        parts = [r for r, w in zip(results, where) if w == name]
        for m in parts[0]:
            rows.append(summarize(SCENARIOS[name], m, np.concatenate([p[m] for p in parts])))
    return pd.DataFrame(rows)


def markdown(tab: pd.DataFrame) -> str:
    """The README table."""
    lines = ["| scenario | method | reps | coverage (MC SE) | type I error (MC SE) | mean SE / SD | "
             "mean half-width / 1.96 / SD |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in tab.itertuples():
        cov = "—" if not np.isfinite(r.coverage) else f"{100 * r.coverage:.1f}% ({100 * r.cov_mc_se:.1f})"
        se = "—" if not np.isfinite(r.se_over_sd) else f"{r.se_over_sd:.2f}"
        hw = "—" if not np.isfinite(r.halfwidth_over_sd) else f"{r.halfwidth_over_sd:.3f}"
        lines.append(f"| {r.scenario} | {r.method} | {r.reps} | {cov} | {100 * r.type_i:.1f}% "
                     f"({100 * r.type_i_mc_se:.1f}) | {se} | {hw} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ runs, vectorized
SYSTEM_NAMES = "abcdefgh"


def system_effects(delta: float, systems: int) -> np.ndarray:
    """The systems' effects on the logit scale: a = +Delta/2, b = -Delta/2 (the pair measured),
    further systems Delta lower each (c = -3 Delta/2, ...); with 2 systems the model above."""
    return delta / 2 - delta * np.arange(systems)


def simulate_runs(sc: Scenario, delta: float, rng: np.random.Generator, reps: int, systems: int = 2) -> np.ndarray:
    """``reps`` data sets of the runs scenarios at once: the epoch means, shape (reps, systems, R, n)
    (the data model of :func:`simulate` with the effects of :func:`system_effects`)."""
    n, R, E = sc.n, sc.runs, sc.epochs
    beta = system_effects(delta, systems)[None, :, None, None]
    eta = (sc.mu + beta + rng.normal(0, SD_Q, (reps, 1, 1, n)) + rng.normal(0, SD_INT, (reps, systems, 1, n))
           + rng.normal(0, sc.sd_run, (reps, systems, R, 1)))
    return rng.binomial(E, expit(eta)) / E


def _frame_of(y: np.ndarray) -> pd.DataFrame:
    """One data set of :func:`simulate_runs` as the long table compare_logs reads."""
    s, r, i = np.indices(y.shape).reshape(3, -1)
    return pd.DataFrame({"system": np.array(list(SYSTEM_NAMES[:y.shape[0]]))[s], "task": "t", "item": i.astype(str),
                         "run": r.astype(str), "score": y.ravel()})


def run_variance_true(sc: Scenario, effect: float) -> float:
    """The between-run variance of a system's expected accuracy on the probability scale,
    Var_rho(E[expit(mu + effect + rho + Z)]), Z ~ N(0, SD_Q^2 + SD_INT^2), rho ~ N(0, sd_run^2)
    (Gauss-Hermite quadrature in both): what the oracle knows."""
    sdz = np.sqrt(SD_Q**2 + SD_INT**2)
    w = _GH_W / np.sqrt(2 * np.pi)
    g = np.array([np.sum(w * expit(sc.mu + effect + sc.sd_run * r + sdz * _GH_X)) for r in _GH_X])
    return float(np.sum(w * (g - np.sum(w * g)) ** 2))


def run_anova_arrays(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per data set of ``y`` (reps, systems, R, n): the difference a - b of the run-averaged
    question means (delta), vq = sd(d)^2 / n, and per system SS_run and SS_res of the questions x
    runs ANOVA (reps, systems)."""
    n = y.shape[3]
    d = y[:, 0].mean(axis=1) - y[:, 1].mean(axis=1)  # question means over runs, a - b
    col = y.mean(axis=3)
    resid = y - y.mean(axis=2, keepdims=True) - col[..., None] + y.mean(axis=(2, 3), keepdims=True)
    ss_run = n * ((col - col.mean(axis=2, keepdims=True)) ** 2).sum(axis=2)
    return d.mean(axis=1), d.var(axis=1, ddof=1) / n, ss_run, (resid**2).sum(axis=(2, 3))


def runs_methods(y: np.ndarray, level: float = 0.95, sc: Scenario | None = None,
                 delta: float = DELTA_ALT) -> dict[str, np.ndarray]:
    """The pair a - b on every data set at once, per method an array (reps, 5) of delta, SE, low,
    high, p: ``headline`` (:mod:`mixedeval.workflows._paired`: the run ANOVA pooled over all
    systems, Bancroft's preliminary F test at ``RUN_PRETEST_LEVEL``, Satterthwaite df);
    ``pooled, run df (before)`` (the rule of session 7: the truncated estimate always added, the
    run part on df_run); ``two-stage (previous)`` (per system, Satterthwaite df of each difference
    of mean squares; a and b only); and, with ``sc``, ``oracle`` (the true run variances of
    :func:`run_variance_true`, df n - 1). Checked against ``paired_differences`` /
    :func:`two_stage_old` on the first data sets (:func:`check_runs_vectorized`)."""
    from scipy import stats

    from mixedeval.workflows._paired import balanced_run_se

    reps, S, R, n = y.shape
    delta_hat, vq, ss_run, ss_res = run_anova_arrays(y)
    out = {}
    df_run, df_res = S * (R - 1), S * (n - 1) * (R - 1)
    ms_run, ms_res = ss_run.sum(axis=1) / df_run, ss_res.sum(axis=1) / df_res
    k = 2.0 / R / n
    # headline: sometimes pool (Bancroft 1944), Satterthwaite df of vq + k MS_run - k MS_res, a share of a
    # negative estimate when pooled (the package's vectorized rule; checked against paired_differences)
    v, df = balanced_run_se(vq, ms_run, ms_res, df_run, df_res, k, n)
    out["headline"] = _t_rows(delta_hat, v, df, level)
    # session 8: level 0.2, a negative estimate truncated at 0
    with np.errstate(divide="ignore", invalid="ignore"):
        kept8 = (stats.f.sf(ms_run / ms_res, df_run, df_res) < 0.2) & (ms_run > ms_res)
    v8 = vq + np.where(kept8, k * (ms_run - ms_res), 0.0)
    den8 = vq**2 / (n - 1) + np.where(kept8, (k * ms_run) ** 2 / df_run + (k * ms_res) ** 2 / df_res, 0.0)
    out["level 0.2, truncated (before)"] = _t_rows(delta_hat, v8, v8**2 / den8, level)
    # session 7: truncated estimate always added, the run part on the pooled df_run
    vr7 = np.maximum(0.0, k * (ms_run - ms_res))
    v7 = vq + vr7
    out["pooled, run df (before)"] = _t_rows(delta_hat, v7, v7**2 / (vq**2 / (n - 1) + vr7**2 / df_run), level)
    # previous: per system, Satterthwaite df of each difference of mean squares
    ms_run_s, ms_res_s = ss_run[:, :2] / (R - 1), ss_res[:, :2] / ((n - 1) * (R - 1))
    est = np.maximum(0.0, (ms_run_s - ms_res_s) / n) / R
    with np.errstate(invalid="ignore", divide="ignore"):
        dfs = (ms_run_s - ms_res_s) ** 2 / (ms_run_s**2 / (R - 1) + ms_res_s**2 / ((n - 1) * (R - 1)))
        den_old = vq**2 / (n - 1) + np.where(est > 0, est**2 / dfs, 0.0).sum(axis=1)
    v_old = vq + est.sum(axis=1)
    out["two-stage (previous)"] = _t_rows(delta_hat, v_old, v_old**2 / den_old, level)
    if sc is not None:
        beta = system_effects(delta, S)
        vo = vq + (run_variance_true(sc, beta[0]) + run_variance_true(sc, beta[1])) / R
        out["oracle (known run variance)"] = _t_rows(delta_hat, vo, np.full(reps, n - 1.0), level)
    return out


def _t_rows(delta: np.ndarray, v: np.ndarray, df: np.ndarray, level: float) -> np.ndarray:
    from scipy import stats

    se = np.sqrt(v)
    q = stats.t.ppf(0.5 + level / 2, df)
    p = 2 * stats.t.sf(np.abs(delta / se), df)
    return np.column_stack([delta, se, delta - q * se, delta + q * se, p])


def check_runs_vectorized(sc: Scenario, rng: np.random.Generator, k: int = 5, systems: int = 2) -> None:
    """The vectorized methods equal the package's code on ``k`` data sets (1e-10)."""
    y = simulate_runs(sc, DELTA_ALT, rng, k, systems)
    fast = runs_methods(y)
    names = list(SYSTEM_NAMES[:systems])
    for j in range(k):
        df = _frame_of(y[j])
        r = paired_differences(df, names, runs=True).iloc[0]
        assert (r["system_a"], r["system_b"]) == ("a", "b")
        np.testing.assert_allclose(fast["headline"][j], [r["delta"], r["std_error"], r["conf_low"], r["conf_high"],
                                                         r["p_value"]], rtol=1e-10)
        np.testing.assert_allclose(fast["two-stage (previous)"][j],
                                   two_stage_old(df[df.system.isin(["a", "b"])].assign(epoch="0")), rtol=1e-10)


def runs_table(names: list[str], reps: int, random_state: int, systems: tuple[int, ...] = (2,)) -> pd.DataFrame:
    """The runs scenarios at each number of systems, vectorized (after :func:`check_runs_vectorized`),
    with ``target``: whether the row meets issue 30's criterion (headline rows: coverage 93-97%,
    and with i.i.d. runs mean half-width / 1.96 / SD <= 1.10)."""
    rows = []
    for S in systems:
        for si, name in enumerate(names):
            sc = SCENARIOS[name]
            rng = np.random.default_rng(np.random.SeedSequence(random_state, spawn_key=(100 + si, S)))
            check_runs_vectorized(sc, rng, systems=S)
            alt = runs_methods(simulate_runs(sc, DELTA_ALT, rng, reps, S), sc=sc, delta=DELTA_ALT)
            null = runs_methods(simulate_runs(sc, 0.0, rng, reps, S), sc=sc, delta=0.0)
            for m in alt:
                row = summarize(sc, m, np.stack([alt[m], null[m]], axis=1))
                ok = 0.93 <= row["coverage"] <= 0.97 and (sc.sd_run > 0 or row["halfwidth_over_sd"] <= 1.10)
                rows.append({"systems": S, "runs": sc.runs, "sd_run": sc.sd_run, **row,
                             "target": "met" if ok else "MISSED"})
    return pd.DataFrame(rows)


def runs_markdown(tab: pd.DataFrame) -> str:
    """The runs table as markdown (every method; ``target`` for the headline rows)."""
    lines = ["| systems | runs | run SD (logit) | method | coverage (MC SE) | type I error | "
             "mean half-width / 1.96 / SD | target |", "|---:|---:|---:|---|---:|---:|---:|---|"]
    for r in tab.itertuples():
        lines.append(f"| {r.systems} | {r.runs} | {r.sd_run:g} | {r.method} | {100 * r.coverage:.1f}% "
                     f"({100 * r.cov_mc_se:.1f}) | {100 * r.type_i:.1f}% | {r.halfwidth_over_sd:.3f} | "
                     f"{r.target if r.method == 'headline' else ''} |")
    return "\n".join(lines)


#: run SDs (logit scale) over which :func:`frontier_table` asks for coverage
FRONTIER_SDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)


def run_statistics(sc: Scenario, systems: int, reps: int, rng: np.random.Generator,
                   chunk: int = 5000) -> dict[str, np.ndarray]:
    """Per simulated data set of :func:`simulate_runs` (Delta = 0.5): the estimate ``delta``,
    ``z`` = |delta - theta| / sqrt(vq) (vq = sd(d)^2 / n, the i.i.d.-runs variance), ``sqrt_vq``,
    the preliminary F statistic ``F`` = MS_run / MS_res, ``w`` = (2 / R n) MS_res / vq (the share
    of vq that is question x run noise) and the headline's ``half`` width (:func:`runs_methods`)."""
    theta = truth(sc, DELTA_ALT)
    parts = []
    for start in range(0, reps, chunk):
        y = simulate_runs(sc, DELTA_ALT, rng, min(chunk, reps - start), systems)
        _, S, R, n = y.shape
        delta, vq, ss_run, ss_res = run_anova_arrays(y)
        ms_run, ms_res = ss_run.sum(axis=1) / (S * (R - 1)), ss_res.sum(axis=1) / (S * (n - 1) * (R - 1))
        hl = runs_methods(y)["headline"]
        parts.append({"delta": delta, "z": np.abs(delta - theta) / np.sqrt(vq),
                      "sqrt_vq": np.sqrt(vq), "F": ms_run / ms_res, "w": 2.0 / (R * n) * ms_res / vq,
                      "half": (hl[:, 3] - hl[:, 2]) / 2, "theta": np.full(len(vq), theta)})
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def frontier(by_sd: list[dict[str, np.ndarray]], floor_iid: float = 0.95, floor: float = 0.93, f_bins: int = 20,
             w_bins: int = 4, smooth: float = 0.01) -> tuple[float, np.ndarray]:
    """The best mean half-width / 1.96 / SD with i.i.d. runs that any interval
    ``delta +- sqrt(vq) M(F, w)`` can reach on these simulated data sets (``by_sd[0]``: i.i.d.
    runs; the others: run effects) with coverage >= ``floor_iid`` with i.i.d. runs and >=
    ``floor`` at every other run SD. The class holds every rule that decides from the preliminary
    F statistic and the share w (the headline's rule among them: its half-width is
    t_df * sqrt(vq (1 + w (F - 1))) when the test keeps the run variance, else t_{n-1} sqrt(vq)). M
    is a step function on ``f_bins`` x ``w_bins`` quantile bins of (F, w) under i.i.d. runs,
    non-decreasing in F, found by SLSQP on a smoothed coverage (logistic, 4, 2 and 1 times ``smooth``
    wide in turn, each from the last solution); the
    coverage returned is the exact one of the step function. Fitted on the same data sets it is
    judged on, the bound is optimistic (a lower bound on the width of such a rule). Returns
    (width, coverage per run SD)."""
    from scipy import optimize
    from scipy.special import expit

    iid = by_sd[0]
    ef = np.quantile(iid["F"], np.linspace(0, 1, f_bins + 1))
    ew = np.quantile(iid["w"], np.linspace(0, 1, w_bins + 1))
    nb = f_bins * w_bins

    def cells(s: dict[str, np.ndarray]) -> np.ndarray:
        i = np.clip(np.searchsorted(ef, s["F"]) - 1, 0, f_bins - 1)
        return i + f_bins * np.clip(np.searchsorted(ew, s["w"]) - 1, 0, w_bins - 1)

    data = [(cells(s), s["z"]) for s in by_sd]
    sd0 = float(np.std(iid["delta"], ddof=1))
    cost = np.bincount(data[0][0], weights=iid["sqrt_vq"], minlength=nb) / len(iid["z"]) / 1.96 / sd0
    need = np.array([floor_iid] + [floor] * (len(by_sd) - 1))

    def cover(m: np.ndarray, h: float) -> np.ndarray:
        return np.array([np.mean(expit((m[c] - z) / h)) for c, z in data])

    def cover_jac(m: np.ndarray, h: float) -> np.ndarray:
        rows = []
        for c, z in data:
            p = expit((m[c] - z) / h)
            rows.append(np.bincount(c, weights=p * (1 - p) / h, minlength=nb) / len(z))
        return np.array(rows)

    mono = np.zeros((w_bins * (f_bins - 1), nb))
    for j in range(w_bins):
        for i in range(f_bins - 1):
            mono[j * (f_bins - 1) + i, j * f_bins + i] = -1.0
            mono[j * (f_bins - 1) + i, j * f_bins + i + 1] = 1.0
    m = np.tile(np.linspace(2.0, 3.5, f_bins), w_bins)
    for h in (4 * smooth, 2 * smooth, smooth):  # continuation: a smooth problem first, then sharper
        m = optimize.minimize(lambda m: cost @ m, m, jac=lambda m: cost, method="SLSQP", options={"maxiter": 800},
                              constraints=[{"type": "ineq", "fun": lambda m, h=h: cover(m, h / 1.7) - need,
                                            "jac": lambda m, h=h: cover_jac(m, h / 1.7)},
                                           {"type": "ineq", "fun": lambda m: mono @ m,
                                            "jac": lambda m: mono}]).x
    exact = np.array([np.mean(z <= m[c]) for c, z in data])
    return float(cost @ m), exact


def frontier_table(systems: tuple[int, ...], random_state: int, reps: int = 40000,
                   floors: tuple[float, ...] = (0.93, 0.935, 0.94)) -> pd.DataFrame:
    """Per number of systems and 3 or 5 runs, on ``reps`` simulated data sets at each run SD of
    ``FRONTIER_SDS``: the headline's mean half-width / 1.96 / SD with i.i.d. runs, its coverage with
    i.i.d. runs and its lowest coverage over the run effects, and :func:`frontier`'s bound for a
    coverage floor of 95% with i.i.d. runs and each of ``floors`` with run effects."""
    rows = []
    for S in systems:
        for R in (3, 5):
            by_sd = []
            for j, sd in enumerate(FRONTIER_SDS):
                sc = replace(SCENARIOS["b 3 iid runs"], runs=R, sd_run=sd)
                rng = np.random.default_rng(np.random.SeedSequence(random_state, spawn_key=(300 + j, S, R)))
                by_sd.append(run_statistics(sc, S, reps, rng))
            cov = [float(np.mean(np.abs(s["delta"] - s["theta"]) <= s["half"])) for s in by_sd]
            row = {"systems": S, "runs": R, "df_run": S * (R - 1),
                   "headline_width_iid": float(np.mean(by_sd[0]["half"]) / 1.96 / np.std(by_sd[0]["delta"], ddof=1)),
                   "headline_cov_iid": cov[0], "headline_lowest_cov": min(cov[1:]),
                   "at_run_sd": FRONTIER_SDS[1 + int(np.argmin(cov[1:]))]}
            for fl in floors:
                row[f"bound_{100 * fl:g}"] = frontier(by_sd, floor=fl)[0]
            rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000, help="simulated data sets per scenario (each: alt + null)")
    ap.add_argument("--quick", action="store_true", help="200 reps, 300 bootstrap resamples")
    ap.add_argument("--n-resamples", type=int, default=1000)
    ap.add_argument("--executor", default=None, help="None, an int (processes) or 'processes'")
    ap.add_argument("--glmm", action="store_true", help="also the GLMM likelihood-ratio test's type I error")
    ap.add_argument("--scenarios", nargs="*", default=list(SCENARIOS))
    ap.add_argument("--no-run-bootstrap", action="store_true",
                    help="skip the (slow) items+runs bootstrap in the runs scenarios")
    ap.add_argument("--runs-vectorized", action="store_true",
                    help="the runs scenarios (b ...) only, headline and previous two-stage SE computed on all data "
                         "sets at once (checked against the package's code on the first data sets)")
    ap.add_argument("--systems", type=int, nargs="+", default=[2],
                    help="with --runs-vectorized: numbers of systems (e.g. 2 3); the pair a - b is measured, the "
                         "run variance pooled over all systems")
    ap.add_argument("--frontier", action="store_true",
                    help="with --runs-vectorized: also the best achievable i.i.d. width of any rule deciding from the "
                         "preliminary F statistic and the share of question x run noise, with coverage >= 95%% "
                         "(i.i.d.) and >= 93, 93.5 or 94%% at every run SD 0.1-1.0, fitted on 40,000 simulated data "
                         "sets per run SD (about 3 minutes)")
    ap.add_argument("--random-state", type=int, default=20241101)
    a = ap.parse_args(argv)
    reps, B = (200, 300) if a.quick else (a.reps, a.n_resamples)
    ex = a.executor if a.executor in (None, "processes") else int(a.executor)
    t0 = time.perf_counter()
    if a.runs_vectorized:
        tab = runs_table([s for s in a.scenarios if SCENARIOS[s].runs > 1], reps, a.random_state, tuple(a.systems))
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(tab.drop(columns=["scenario", "theta"]).round(4).to_string(index=False))
        print()
        print(runs_markdown(tab))
        hl = tab[tab["method"] == "headline"].set_index(["systems", "scenario"])["halfwidth_over_sd"]
        for m in ("two-stage (previous)", "level 0.2, truncated (before)", "pooled, run df (before)",
                  "oracle (known run variance)"):
            other = tab[tab["method"] == m].set_index(["systems", "scenario"])["halfwidth_over_sd"]
            for key in other.index:
                print(f"{key[0]} systems, {key[1]}: mean half-width, headline / {m} = {hl[key] / other[key]:.3f}")
        if a.frontier:
            fr = frontier_table(tuple(a.systems), a.random_state)
            print(f"\nbest achievable mean half-width / 1.96 / SD with i.i.d. runs of any rule deciding from the "
                  f"preliminary F statistic and the share w (coverage >= 95% with i.i.d. runs and >= the bound's floor "
                  f"at each run SD {FRONTIER_SDS[1:]}), beside the headline's figures on the same data sets:")
            print(fr.round(3).to_string(index=False))
        met = tab.loc[tab["method"] == "headline", "target"]
        print(f"\nheadline: target met in {int((met == 'met').sum())} of {len(met)} rows; {reps} reps per scenario, "
              f"{time.perf_counter() - t0:.0f} s")
        return tab
    else:
        tab = run_all(a.scenarios, reps, B, ex, a.random_state, a.glmm, boot_runs=not a.no_run_bootstrap)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(tab.round(4).to_string(index=False))
    print()
    print(markdown(tab))
    base = tab[tab["method"] == "two-stage (previous)"].set_index("scenario")["halfwidth_over_sd"]
    new = tab[tab["method"] == "headline"].set_index("scenario")["halfwidth_over_sd"]
    for sc in base.index:
        print(f"{sc}: mean half-width, headline / previous two-stage = {new[sc] / base[sc]:.3f}")
    print(f"\n{reps} reps per scenario, {B} bootstrap resamples, executor={ex}, "
          f"{time.perf_counter() - t0:.0f} s")
    return tab


if __name__ == "__main__":
    main()
