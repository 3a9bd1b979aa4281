"""The alternatives of the calibration atlas (issue 39, item 2): the intervals users would get from
the peers' own code (Inspect AI, evalstats, ppi-python), from lm-eval's formulas (re-derived: it
pulls torch) and from the textbook, computed on the atlas' simulated data sets.

``alternatives(data)`` takes one simulated evaluation (one row per system x question x epoch x run)
and returns one row per (method, target, system or pair); ``judge_alternatives(data)`` does the same
for judge-scored items; ``METHODS`` names each method and its source. ``benchmarks/coverage_atlas.py``
calls them beside mixedeval's defaults. The peers are an optional benchmark extra
(``pip install mixedeval[atlas]``), not a runtime dependency; a method whose package is missing is
left out (``out.attrs["errors"]`` says so), and so is a method that raises on a data set (its rows
are kept with NaN bounds, the message in ``out.attrs["errors"]``: the atlas counts them as failures).

Data plumbing (one rule for every method, stated per method in ``METHODS``):

* epochs are averaged within question (and run) first: Inspect's default ``mean`` epoch reducer;
  every other method assumes one score per question and run;
* runs: evalstats models them (its ``(N, M, R)`` score array: a nested / clustered multi-run method
  at R >= 3, pre-averaged at R = 2, as evalstats does); every other method gets the run-averaged
  per-question score;
* clusters: Inspect's metrics get ``cluster=`` when the data have clusters; no other peer takes
  clusters (evalstats, lm-eval and the textbook methods treat questions as independent, as their
  users would);
* binary-only methods run only on binary designs (every score 0 or 1; decided by the design, not by
  what one data set happens to show): Wilson, McNemar and Newcombe with one epoch and one run;
  evalstats' Bonett-Price / Newcombe / Wilson with one epoch and one run or 3+ runs (which evalstats
  models; it pre-averages 2 runs), Tango with one epoch and one run.
"""
from __future__ import annotations

import importlib.util
import math
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from mixedeval.errors import DataError
from mixedeval.workflows._bounded import wilson as _wilson

#: method name -> one-line description with its source
METHODS: dict[str, str] = {
    # Inspect AI (its own metric functions on SampleScore lists)
    "inspect_stderr": "Inspect AI 0.3.285 inspect_ai.scorer.stderr(cluster=) (clustered SE when the data have clusters); "
                      "interval mean +/- z x stderr (Inspect prints the stderr; the normal interval is how it is read); "
                      "epochs reduced by Inspect's mean_score reducer, runs averaged",
    "inspect_ci_t": "Inspect AI 0.3.285 inspect_ai.scorer.ci(method='t', cluster=): mean +/- t(n-1, or clusters-1) x "
                    "stderr; epochs by mean_score, runs averaged",
    "inspect_ci_bootstrap": "Inspect AI 0.3.285 inspect_ai.scorer.ci(method='bootstrap', num_samples=1000, cluster=): "
                            "percentile bootstrap of questions (of clusters when clustered; numpy's global RNG, seeded "
                            "from random_state); epochs by mean_score, runs averaged",
    "inspect_ci_wilson": "Inspect AI 0.3.285 inspect_ai.scorer.ci_wilson(cluster=): Wilson interval (Korn-Graubard "
                         "effective n and t(clusters-1) when clustered); scores in [0, 1] only; epochs by mean_score, "
                         "runs averaged",
    # lm-eval (re-derived)
    "lm_eval_stderr": "lm-eval (lm_eval/api/metrics.py, 0.4.13.dev0 @4e7e0d4) mean_stderr = sample_stddev/sqrt(n), "
                      "the stderr it prints for acc-like (mean) metrics; interval mean +/- 1.96 x stderr; "
                      "per-question score (epochs, runs averaged)",
    "lm_eval_bootstrap": "lm-eval (same source) bootstrap_stderr(mean, xs, iters=100000): chunks of 1,000 "
                         "random.Random(i).choices resamples, sample SD of the replicates (the stderr it prints for "
                         "bootstrapped aggregations such as nanmean); interval mean +/- 1.96 x stderr; fixed seeds "
                         "(random_state not used, as in lm-eval); per-question score",
    # evalstats (its own analyze())
    "evalstats_auto": "evalstats 0.3.3 evalstats.analyze(method='auto', correction='none', simultaneous_ci=False): "
                      "Bonett-Price pairs / Wilson scores for binary data (clustered multi-run Bonett-Price at R >= 3), "
                      "logit-t for [0, 1] scores, NIG/logit-t for Likert grids, t for other scores; (N, M, R) array of "
                      "epoch-averaged scores (binary scores averaged over epochs are a grid: evalstats calls them "
                      "Likert and uses NIG), clusters ignored (evalstats has none); p-values are evalstats' own "
                      "choice per pair (McNemar mid-p, CI inversion, bootstrap or paired t for binary data, Wilcoxon "
                      "signed-rank for other data, whatever the interval); out.attrs['details'] names what ran",
    "evalstats_bonett_price": "evalstats 0.3.3 analyze(method='bonett_price'): Bonett & Price (2012) adjusted Wald for "
                              "paired proportions + McNemar mid-p (multi-run shrunk variant at R >= 3); binary only",
    "evalstats_newcombe": "evalstats 0.3.3 analyze(method='newcombe'): Newcombe score interval for paired proportions "
                          "+ McNemar mid-p; binary only (at R >= 3 evalstats runs a nested smooth bootstrap instead)",
    "evalstats_tango": "evalstats 0.3.3 analyze(method='tango'): Tango (1998) score interval + McNemar mid-p; "
                       "binary, single run only",
    "evalstats_wilson": "evalstats 0.3.3 analyze(method='wilson') marginal (robustness) Wilson score interval per "
                        "system; binary only",
    "evalstats_bootstrap": "evalstats 0.3.3 analyze(method='bootstrap', n_bootstrap=n_resamples): percentile "
                           "bootstrap of questions, two-level nested (questions, then runs) at R >= 3; p-value "
                           "bootstrap (binary data) or Wilcoxon signed-rank (other data)",
    "evalstats_t": "evalstats 0.3.3 analyze(method='t_interval'): paired t (pairs) and t (scores); p-value paired t "
                   "(binary data) or Wilcoxon signed-rank (other data)",
    # textbook
    "wald": "Wald: mean +/- z x s/sqrt(n), s the SD with divisor n (sqrt(p(1-p)/n) for 0/1 scores); per-question "
            "score (epochs, runs averaged)",
    "t": "Student t: mean +/- t(n-1) s/sqrt(n) (R t.test); pairs: paired t on per-question differences with its "
         "p-value (R t.test(paired=TRUE)); per-question score",
    "wilson": "Wilson score interval (R prop.test(correct=FALSE)); binary per-question scores only",
    "mcnemar_exact_wald": "pairs, binary: exact McNemar p-value (R binom.test(b, b + c)); interval the Wald interval "
                          "for paired proportions, d +/- z sqrt(b + c - (b - c)^2/n)/n (Agresti 2013, 10.1)",
    "newcombe_midp": "pairs, binary: Newcombe (1998, Stat Med 17:2635) hybrid score interval for paired proportions "
                     "(method 10: Wilson limits of both margins and the phi correction) with the McNemar mid-p "
                     "p-value (Fagerland, Lydersen & Laake 2013)",
    "paired_bootstrap": "percentile bootstrap, n_resamples (2,000) resamples of questions shared by all systems "
                        "(numpy Generator seeded with random_state); pairs: p-value 2 x min(P*(d <= 0), P*(d >= 0)); "
                        "per-question score (epochs, runs averaged), clusters ignored",
    # judges
    "ppi_plusplus": "ppi-python 0.2.3 ppi_py.ppi_mean_ci(Y, Yhat, Yhat_unlabeled, lam=None) (PPI++, power tuned; "
                    "Angelopoulos et al. 2023) and ppi_mean_pointestimate; per system, clusters ignored",
    "human_t": "classical interval from the human labels alone: mean +/- t(n-1) s/sqrt(n) (R t.test)",
}

_COLUMNS = ["method", "target", "system", "system_a", "system_b", "estimate", "conf_low", "conf_high", "p_value"]


# ---------------------------------------------------------------------------------------------- data

class _Design:
    """The data set in the shapes the methods need (systems and questions sorted)."""

    def __init__(self, data: pd.DataFrame):
        need = ["system", "question", "epoch", "run", "score"]
        missing = [c for c in need if c not in data.columns]
        if missing:
            raise DataError(f"data is missing column(s) {missing}; alternatives() needs system, question, "
                            f"cluster (or None), epoch, run and score")
        d = data[[c for c in need + ["cluster"] if c in data.columns]].copy()
        if "cluster" not in d.columns:
            d["cluster"] = None
        if not np.isfinite(pd.to_numeric(d["score"], errors="coerce")).all():
            raise DataError("data['score'] has missing or non-numeric values; drop or fill them first")
        d["score"] = d["score"].astype(float)
        self.systems = sorted(d["system"].astype(str).unique())
        self.questions = sorted(d["question"].astype(str).unique())
        d["system"], d["question"] = d["system"].astype(str), d["question"].astype(str)
        # epoch-averaged (question, run) cells: (systems, questions, runs)
        cell = d.groupby(["system", "question", "run"], sort=True)["score"].mean()
        runs = sorted(d["run"].unique())
        idx = pd.MultiIndex.from_product([self.systems, self.questions, runs])
        cell = cell.reindex(idx)
        if cell.isna().any():
            raise DataError("data is not complete: every system must answer every question in every run")
        self.cells = cell.to_numpy().reshape(len(self.systems), len(self.questions), len(runs))
        self.y = self.cells.mean(axis=2)          # per-question score (epochs, runs averaged)
        self.n_runs, self.n_epochs = len(runs), int(d.groupby(["system", "question", "run"]).size().max())
        clus = d.drop_duplicates("question").set_index("question")["cluster"].reindex(self.questions)
        self.clustered = bool(clus.notna().any())
        self.cluster = clus.astype(str).to_numpy() if self.clustered else None
        self.data = d
        # by design, not by what one data set happens to show (the atlas compares methods over data sets)
        raw_binary = bool(d["score"].isin((0.0, 1.0)).all())
        self.binary = raw_binary and self.n_epochs == 1 and self.n_runs == 1   # per-question scores 0/1
        self.binary_cells = raw_binary and self.n_epochs == 1                  # (question, run) cells 0/1
        self.unit = bool(d["score"].between(0.0, 1.0).all())

    def pairs(self) -> list[tuple[int, int]]:
        k = len(self.systems)
        return [(i, j) for i in range(k) for j in range(i + 1, k)]


def _score_row(method: str, system: str, est: float, lo: float, hi: float) -> dict:
    return dict(method=method, target="score", system=system, system_a=None, system_b=None,
                estimate=float(est), conf_low=float(lo), conf_high=float(hi), p_value=np.nan)


def _pair_row(method: str, a: str, b: str, est: float, lo: float, hi: float, p: float = np.nan) -> dict:
    return dict(method=method, target="difference", system=None, system_a=a, system_b=b,
                estimate=float(est), conf_low=float(lo), conf_high=float(hi), p_value=float(p))


def _z(level: float) -> float:
    return float(stats.norm.ppf(0.5 + level / 2.0))


# ------------------------------------------------------------------------------------------ textbook

def wald_interval(y: np.ndarray, level: float) -> tuple[float, float, float]:
    """Wald interval of a mean: mean +/- z s/sqrt(n), s with divisor n (sqrt(p(1-p)/n) for 0/1 data)."""
    y = np.asarray(y, float)
    m = y.mean()
    h = _z(level) * y.std(ddof=0) / math.sqrt(len(y))
    return m, m - h, m + h


def t_interval(y: np.ndarray, level: float) -> tuple[float, float, float, float]:
    """One-sample t interval and the two-sided p-value of H0: mean 0 (R's t.test)."""
    y = np.asarray(y, float)
    n, m = len(y), y.mean()
    se = y.std(ddof=1) / math.sqrt(n)
    h = stats.t.ppf(0.5 + level / 2.0, n - 1) * se
    p = 2.0 * stats.t.sf(abs(m) / se, n - 1) if se > 0 else (1.0 if m == 0 else 0.0)
    return m, m - h, m + h, p


def mcnemar_counts(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int]:
    """(b, c, n) of two paired 0/1 vectors: b = a right and b wrong, c = a wrong and b right."""
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    return int(np.sum(a & ~b)), int(np.sum(~a & b)), len(a)


def mcnemar_exact_p(b: int, c: int) -> float:
    """Exact (conditional binomial) McNemar p-value, R's binom.test(b, b + c)$p.value; 1 when b + c = 0."""
    if b + c == 0:
        return 1.0
    return float(stats.binomtest(b, b + c, 0.5).pvalue)


def mcnemar_midp(b: int, c: int) -> float:
    """McNemar mid-p value (Fagerland, Lydersen & Laake 2013, BMC Med Res Methodol 13:91 and its
    supplement): 2 P(X <= min) - P(X = min), X ~ Bin(b + c, 1/2); 1 - P(X = b)/2 when b = c."""
    nd = b + c
    if nd == 0:
        return 1.0
    k = min(b, c)
    if b == c:
        return float(1.0 - 0.5 * stats.binom.pmf(k, nd, 0.5))
    return float(2.0 * stats.binom.cdf(k, nd, 0.5) - stats.binom.pmf(k, nd, 0.5))


def paired_wald(b: int, c: int, n: int, level: float) -> tuple[float, float, float]:
    """Wald interval of a difference of paired proportions: d +/- z sqrt(b + c - (b - c)^2/n)/n."""
    d = (b - c) / n
    se = math.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n
    return d, d - _z(level) * se, d + _z(level) * se


def newcombe_paired(a: np.ndarray, b: np.ndarray, level: float) -> tuple[float, float, float]:
    """Newcombe (1998) method 10 interval for p_a - p_b of paired 0/1 vectors: Wilson limits of both
    margins, corrected by phi (set to 0 when the margins make it undefined, and to 0 when
    negative-part adjustments do not apply, as in the paper)."""
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    n = len(a)
    e, f, g, h = (int(np.sum(a & b)), int(np.sum(a & ~b)), int(np.sum(~a & b)), int(np.sum(~a & ~b)))
    p1, p2 = (e + f) / n, (e + g) / n
    z = _z(level)
    l1, u1 = (float(v) for v in _wilson(p1, n, z))
    l2, u2 = (float(v) for v in _wilson(p2, n, z))
    d = p1 - p2
    den = (e + f) * (g + h) * (e + g) * (f + h)
    if den == 0:
        phi = 0.0
    else:
        num = e * h - f * g
        # Newcombe's phi-hat*: numerator reduced by n/2 when e*h - f*g > n/2 (continuity), else 0
        num = max(num - n / 2.0, 0.0) if num > 0 else float(num)
        phi = num / math.sqrt(den)
    dl = math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    du = math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return d, d - dl, d + du


def _percentile(boot: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.quantile(boot, [0.5 - level / 2.0, 0.5 + level / 2.0])
    return float(lo), float(hi)


def _textbook(des: _Design, level: float, random_state: int, n_resamples: int) -> list[dict]:
    rows: list[dict] = []
    y, S = des.y, des.systems
    for i, s in enumerate(S):
        rows.append(_score_row("wald", s, *wald_interval(y[i], level)))
        m, lo, hi, _ = t_interval(y[i], level)
        rows.append(_score_row("t", s, m, lo, hi))
        if des.binary:
            n = y.shape[1]
            lo_w, hi_w = _wilson(y[i].mean(), n, _z(level))
            rows.append(_score_row("wilson", s, y[i].mean(), float(lo_w), float(hi_w)))
    for i, j in des.pairs():
        m, lo, hi, p = t_interval(y[i] - y[j], level)
        rows.append(_pair_row("t", S[i], S[j], m, lo, hi, p))
        if des.binary:
            b, c, n = mcnemar_counts(y[i], y[j])
            rows.append(_pair_row("mcnemar_exact_wald", S[i], S[j], *paired_wald(b, c, n, level),
                                  mcnemar_exact_p(b, c)))
            rows.append(_pair_row("newcombe_midp", S[i], S[j], *newcombe_paired(y[i], y[j], level),
                                  mcnemar_midp(b, c)))
    # paired bootstrap: one index matrix shared by every system
    rng = np.random.default_rng(random_state)
    n = y.shape[1]
    idx = rng.integers(0, n, size=(n_resamples, n))
    boot = np.stack([y[k][idx].mean(axis=1) for k in range(len(S))])   # (systems, B)
    for i, s in enumerate(S):
        rows.append(_score_row("paired_bootstrap", s, y[i].mean(), *_percentile(boot[i], level)))
    for i, j in des.pairs():
        d = boot[i] - boot[j]
        p = min(1.0, 2.0 * min(np.mean(d <= 0), np.mean(d >= 0)))
        rows.append(_pair_row("paired_bootstrap", S[i], S[j], y[i].mean() - y[j].mean(),
                              *_percentile(d, level), p))
    return rows


# ------------------------------------------------------------------------------------------- lm-eval

def lm_eval_sample_stddev(arr: Sequence[float]) -> float:
    """lm_eval.api.metrics.sample_stddev: sqrt(sum((x - mean)^2) / (n - 1))."""
    mu = sum(arr) / len(arr)
    return math.sqrt(sum((x - mu) ** 2 for x in arr) / (len(arr) - 1))


def lm_eval_mean_stderr(arr: Sequence[float]) -> float:
    """lm_eval.api.metrics.mean_stderr: sample_stddev(arr) / sqrt(len(arr))."""
    return lm_eval_sample_stddev(arr) / math.sqrt(len(arr))


def lm_eval_bootstrap_replicates(f: Callable[[np.ndarray], np.ndarray], xs: Sequence[float],
                                 iters: int) -> np.ndarray:
    """The replicates of lm-eval's ``bootstrap_stderr(f, xs, iters)`` (lm_eval/api/metrics.py):
    ``iters // chunk`` chunks of ``chunk = min(1000, iters)`` resamples, chunk ``i`` drawn by
    ``random.Random(i).choices(xs, k=len(xs))``. ``choices`` takes ``xs[floor(random() * n)]`` and
    Python's ``random.Random(i)`` is MT19937 seeded by ``init_by_array([i])``, the same stream as
    ``numpy.random.RandomState([i]).random_sample`` -- so the draws are lm-eval's, vectorised.
    ``f`` maps a (chunk, n) matrix to the chunk's replicates (row-wise statistic)."""
    xs = np.asarray(xs, float)
    n = len(xs)
    chunk = min(1000, iters)
    out = []
    for i in range(iters // chunk):
        u = np.random.RandomState([i]).random_sample(chunk * n).reshape(chunk, n)
        out.append(f(xs[np.floor(u * n).astype(np.int64)]))
    return np.concatenate(out) if out else np.empty(0)


def lm_eval_bootstrap_stderr(f: Callable[[np.ndarray], np.ndarray], xs: Sequence[float], iters: int) -> float:
    """lm-eval's ``bootstrap_stderr``: ``sample_stddev`` of the replicates above."""
    res = lm_eval_bootstrap_replicates(f, xs, iters)
    return float(np.std(res, ddof=1))


def _lm_eval(des: _Design, level: float, iters: int) -> list[dict]:
    rows = []
    z = 1.96 if level == 0.95 else _z(level)
    for i, s in enumerate(des.systems):
        y = des.y[i]
        m = float(y.mean())
        se = lm_eval_mean_stderr(list(y))
        rows.append(_score_row("lm_eval_stderr", s, m, m - z * se, m + z * se))
        se_b = lm_eval_bootstrap_stderr(lambda x: x.mean(axis=1), y, iters)
        rows.append(_score_row("lm_eval_bootstrap", s, m, m - z * se_b, m + z * se_b))
    return rows


# ------------------------------------------------------------------------------------------- Inspect

def inspect_sample_scores(des: _Design, system_index: int) -> list:
    """The SampleScore list Inspect would hand its metrics for one system: each question's epochs
    reduced by Inspect's default ``mean_score`` reducer (per run, then the runs averaged: Inspect has
    no runs), ``sample_metadata={"cluster": ...}`` when the data have clusters."""
    from inspect_ai.scorer import SampleScore, Score, mean_score
    reducer = mean_score()
    s = des.systems[system_index]
    sub = des.data[des.data["system"] == s]
    out = []
    if des.n_epochs > 1:
        values: dict[str, list[float]] = {}
        seen: dict[tuple, float] = {}     # the reducer is a function of the epochs' values: reduce each pattern once
        for (q, _r), g in sub.sort_values("epoch").groupby(["question", "run"], sort=True):
            key = tuple(g["score"])
            if key not in seen:
                seen[key] = float(reducer([Score(value=float(x)) for x in key]).value)
            values.setdefault(q, []).append(seen[key])
        vals = [float(np.mean(values[q])) for q in des.questions]
    else:
        vals = list(des.y[system_index])
    for k, q in enumerate(des.questions):
        meta = {"cluster": des.cluster[k]} if des.clustered else None
        out.append(SampleScore(score=Score(value=vals[k]), sample_id=q, sample_metadata=meta))
    return out


def _inspect(des: _Design, level: float, random_state: int) -> list[dict]:
    from inspect_ai.scorer import ci, ci_wilson, stderr
    cl = "cluster" if des.clustered else None
    rows = []
    z = _z(level)
    state = np.random.get_state()
    np.random.seed(random_state)         # Inspect's bootstrap draws from numpy's global RNG
    try:
        for i, s in enumerate(des.systems):
            scores = inspect_sample_scores(des, i)
            m = float(np.mean([x.score.value for x in scores]))
            se = float(stderr(cluster=cl)(scores))
            rows.append(_score_row("inspect_stderr", s, m, m - z * se, m + z * se))
            r = ci(level=level, method="t", cluster=cl)(scores)
            rows.append(_score_row("inspect_ci_t", s, m, r["lower"], r["upper"]))
            r = ci(level=level, method="bootstrap", num_samples=1000, cluster=cl)(scores)
            rows.append(_score_row("inspect_ci_bootstrap", s, m, r["lower"], r["upper"]))
            if des.unit:
                r = ci_wilson(level=level, cluster=cl)(scores)
                rows.append(_score_row("inspect_ci_wilson", s, m, r["lower"], r["upper"]))
    finally:
        np.random.set_state(state)
    return rows


# ----------------------------------------------------------------------------------------- evalstats

def evalstats_bundle(des: _Design, method: str, level: float, random_state: int, n_resamples: int):
    """``evalstats.analyze`` on the (systems, questions, runs) array of epoch-averaged scores
    (a 2-D array with one run), marginal pairwise intervals, no multiplicity correction."""
    import evalstats
    scores = des.cells if des.n_runs > 1 else des.cells[:, :, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bench = evalstats.BenchmarkResult(scores=scores, template_labels=list(des.systems),
                                          input_labels=list(des.questions))
        return evalstats.analyze(bench, method=method, correction="none", simultaneous_ci=False,
                                 ci=level, n_bootstrap=n_resamples, rng=np.random.default_rng(random_state),
                                 ci_style="line")


def _evalstats_rows(name: str, bundle: Any, des: _Design, scores: bool, pairs: bool,
                    details: list[dict]) -> list[dict]:
    rows = []
    details.append(dict(method=name, target="score", what=str(bundle.resolved_ci_method)))
    if scores:
        rob = bundle.robustness
        for k, s in enumerate(rob.labels):
            rows.append(_score_row(name, s, rob.mean[k], rob.ci_low[k], rob.ci_high[k]))
    if pairs:
        for i, j in des.pairs():
            a, b = des.systems[i], des.systems[j]
            r = bundle.pairwise.results[(a, b)]
            rows.append(_pair_row(name, a, b, r.point_diff, r.ci_low, r.ci_high, r.p_value))
            details.append(dict(method=name, target="difference", system_a=a, system_b=b,
                                what=f"{r.test_method}; p: {r.p_test}"))
    return rows


# (method name, evalstats method, score rows?, pair rows?, binary only?, single run only?)
_EVALSTATS = [
    ("evalstats_auto", "auto", True, True, False, False),
    ("evalstats_bonett_price", "bonett_price", False, True, True, False),
    ("evalstats_newcombe", "newcombe", False, True, True, False),
    ("evalstats_wilson", "wilson", True, False, True, False),
    ("evalstats_tango", "tango", False, True, True, True),
    ("evalstats_bootstrap", "bootstrap", True, True, False, False),
    ("evalstats_t", "t_interval", True, True, False, False),
]


# ------------------------------------------------------------------------------------------ public

def _failed_rows(method: str, des: _Design, scores: bool, pairs: bool) -> list[dict]:
    rows = [_score_row(method, s, np.nan, np.nan, np.nan) for s in des.systems] if scores else []
    if pairs:
        rows += [_pair_row(method, des.systems[i], des.systems[j], np.nan, np.nan, np.nan)
                 for i, j in des.pairs()]
    return rows


def _frame(rows: list[dict], errors: list[dict]) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=_COLUMNS)
    out.attrs["errors"] = errors
    return out


def alternatives(data: pd.DataFrame, *, level: float = 0.95, random_state: int = 0,
                 n_resamples: int = 2000, lm_eval_iters: int = 100_000) -> pd.DataFrame:
    """Every alternative method of ``METHODS`` (but the judge ones) on one simulated evaluation.

    ``data``: columns system, question, cluster (None for i.i.d. questions), epoch, run, score; one
    row per system x question x epoch x run. Returns one row per (method, target, system or pair):
    method, target ("score" / "difference"), system (score rows), system_a < system_b (difference
    rows: mean of system_a minus system_b), estimate, conf_low, conf_high, p_value (two-sided,
    difference rows; NaN where the method gives none). ``out.attrs["errors"]`` lists the methods
    that raised (their rows have NaN bounds) or whose package is not installed (no rows);
    ``out.attrs["details"]`` what evalstats ran for each of its rows (its resolved marginal method, and per
    pair its ``test_method`` and ``p_test``: evalstats may run another method than the one named).
    ``n_resamples``: paired bootstrap and evalstats' bootstrap resamples; ``lm_eval_iters``: lm-eval's
    ``bootstrap_iters`` (its default 100,000)."""
    if not 0.0 < level < 1.0:
        raise DataError(f"level={level!r} must lie strictly between 0 and 1")
    des = _Design(data)
    rows: list[dict] = []
    errors: list[dict] = []
    details: list[dict] = []
    rows += _textbook(des, level, random_state, n_resamples)
    rows += _lm_eval(des, level, lm_eval_iters)
    try:
        rows += _inspect(des, level, random_state)
    except ImportError as e:
        errors.append(dict(method="inspect_*", error=f"not installed: {e}"))
    if importlib.util.find_spec("evalstats") is None:
        errors.append(dict(method="evalstats_*", error="not installed: pip install mixedeval[atlas]"))
    else:
        for name, meth, sc, pr, binary_only, single_run in _EVALSTATS:
            # evalstats pre-averages 2 runs (its binary methods then see run means, not 0/1)
            if (binary_only and not (des.binary_cells and des.n_runs != 2)) or (single_run and des.n_runs > 1):
                continue
            pr = pr and len(des.systems) > 1
            try:
                bundle = evalstats_bundle(des, meth, level, random_state, n_resamples)
                rows += _evalstats_rows(name, bundle, des, sc, pr, details)
            except Exception as e:  # a peer failing on a data set is a result of the atlas
                errors.append(dict(method=name, error=f"{type(e).__name__}: {e}"))
                rows += _failed_rows(name, des, sc, pr)
    out = _frame(rows, errors)
    out.attrs["details"] = details
    return out


def judge_alternatives(data: pd.DataFrame, *, level: float = 0.95) -> pd.DataFrame:
    """PPI++ (ppi-python's ``ppi_mean_ci`` with ``lam=None``) and the human-only t interval of each
    system's mean human score. ``data``: columns system, item, cluster (or None), judge_score,
    human_score (NaN where unlabelled). Same columns as ``alternatives``; target "score"."""
    need = ["system", "item", "judge_score", "human_score"]
    missing = [c for c in need if c not in data.columns]
    if missing:
        raise DataError(f"data is missing column(s) {missing}; judge_alternatives() needs system, item, "
                        f"cluster (or None), judge_score and human_score")
    rows: list[dict] = []
    errors: list[dict] = []
    try:
        import ppi_py
    except ImportError as e:
        ppi_py = None
        errors.append(dict(method="ppi_plusplus", error=f"not installed: {e}"))
    for s, g in data.groupby(data["system"].astype(str), sort=True):
        lab = g["human_score"].notna().to_numpy()
        Y = g.loc[lab, "human_score"].to_numpy(float)
        Yh = g.loc[lab, "judge_score"].to_numpy(float)
        Yu = g.loc[~lab, "judge_score"].to_numpy(float)
        m, lo, hi, _ = t_interval(Y, level)
        rows.append(_score_row("human_t", s, m, lo, hi))
        if ppi_py is not None:
            try:
                est = float(np.ravel(ppi_py.ppi_mean_pointestimate(Y, Yh, Yu, lam=None))[0])
                lo, hi = ppi_py.ppi_mean_ci(Y, Yh, Yu, alpha=1.0 - level, lam=None)
                rows.append(_score_row("ppi_plusplus", s, est, np.ravel(lo)[0], np.ravel(hi)[0]))
            except Exception as e:
                errors.append(dict(method="ppi_plusplus", error=f"{type(e).__name__}: {e}"))
                rows.append(_score_row("ppi_plusplus", s, np.nan, np.nan, np.nan))
    return _frame(rows, errors)


def _demo() -> None:  # pragma: no cover - a quick look from the command line
    rng = np.random.default_rng(1)
    rows = [dict(system=s, question=f"q{q:03d}", cluster=f"c{q // 5}", epoch=1, run=1,
                 score=float(rng.random() < p))
            for s, p in [("a", 0.6), ("b", 0.7), ("c", 0.95)] for q in range(50)]
    out = alternatives(pd.DataFrame(rows), lm_eval_iters=10_000)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(out)
    print(out.attrs["errors"])


if __name__ == "__main__":  # pragma: no cover
    _demo()
