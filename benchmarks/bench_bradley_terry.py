"""Bradley-Terry at arena scale: 1,000,000 battles among 100 models, the fit and a 1,000-replicate
prompt bootstrap with me.bradley_terry, against the same work done FastChat's way.

FastChat's way (fastchat/serve/monitor/elo_analysis.py): ``get_bootstrap_result`` draws
``battles.sample(frac=1.0, replace=True)`` (rows) and calls ``compute_mle_elo`` on each sample:
three pandas pivot tables (a-wins, ties, b-wins), a design of two weighted rows per ordered pair
on +-log(10), and sklearn's ``LogisticRegression(fit_intercept=False, penalty=None, tol=1e-6)``
(lbfgs). sklearn is not installed here, so the logistic regression is scipy's L-BFGS-B on the
same weighted log-likelihood with the same tolerance (sklearn's lbfgs solver is scipy's L-BFGS-B).
The baseline is timed on ``--baseline-resamples`` samples and extrapolated to 1,000 (said in
the output). Both sides use ties as half wins and no position effect (FastChat's model);
me.bradley_terry resamples prompts (50,000 prompts of 20 battles), FastChat rows. Both timings
leave out the rank intervals (ranks=False; FastChat computes none).

    .venv/bin/python benchmarks/bench_bradley_terry.py [--battles 1000000] [--models 100]
        [--prompts 50000] [--n-resamples 1000] [--baseline-resamples 10] [--workers 2]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd
from scipy.optimize import minimize

import mixedeval as me


def simulate(n: int, k: int, n_prompts: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 0.8, size=k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    eta = s[a] - s[b]
    pa, pb, nu = np.exp(eta / 2), np.exp(-eta / 2), 0.6
    u = rng.random(n) * (pa + pb + nu)
    winner = np.where(u < pa, "model_a", np.where(u < pa + pb, "model_b", "tie"))
    names = np.array([f"model-{i:03d}" for i in range(k)])
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner,
                         "prompt": rng.integers(0, n_prompts, n)})


def _lbfgs_logistic(X: np.ndarray, y: np.ndarray, w: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    def obj(beta):
        eta = X @ beta
        mu = 1.0 / (1.0 + np.exp(-eta))
        f = np.sum(w * (np.logaddexp(0.0, eta) - y * eta))
        return f, X.T @ (w * (mu - y))

    return minimize(obj, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B", options={"gtol": tol, "maxiter": 15000}).x


def compute_mle_elo(df: pd.DataFrame, scale=400, base=10, init_rating=1000) -> pd.Series:
    """FastChat's compute_mle_elo (pivot tables, duplicated design, unpenalised logistic regression)."""
    ptbl_a_win = pd.pivot_table(df[df["winner"] == "model_a"], index="model_a", columns="model_b", aggfunc="size",
                                fill_value=0)
    ties = df[df["winner"].isin(["tie", "tie (bothbad)"])]
    ptbl_tie = pd.pivot_table(ties, index="model_a", columns="model_b", aggfunc="size", fill_value=0)
    ptbl_tie = ptbl_tie + ptbl_tie.T
    ptbl_b_win = pd.pivot_table(df[df["winner"] == "model_b"], index="model_a", columns="model_b", aggfunc="size",
                                fill_value=0)
    ptbl_win = ptbl_a_win * 2 + ptbl_b_win.T * 2 + ptbl_tie
    models = pd.Series(np.arange(len(ptbl_win.index)), index=ptbl_win.index)
    p = len(models)
    X = np.zeros([p * (p - 1) * 2, p])
    Y = np.zeros(p * (p - 1) * 2)
    cur, weights = 0, []
    for m_a in ptbl_win.index:
        for m_b in ptbl_win.columns:
            if m_a == m_b or math.isnan(ptbl_win.loc[m_a, m_b]) or math.isnan(ptbl_win.loc[m_b, m_a]):
                continue
            X[cur, models[m_a]], X[cur, models[m_b]] = math.log(base), -math.log(base)
            Y[cur] = 1.0
            weights.append(ptbl_win.loc[m_a, m_b])
            X[cur + 1, models[m_a]], X[cur + 1, models[m_b]] = math.log(base), -math.log(base)
            Y[cur + 1] = 0.0
            weights.append(ptbl_win.loc[m_b, m_a])
            cur += 2
    coef = _lbfgs_logistic(X[:cur], Y[:cur], np.asarray(weights, dtype=float))
    return pd.Series(scale * coef + init_rating, index=models.index)


def fastchat_bootstrap(df: pd.DataFrame, n: int) -> tuple[pd.DataFrame, float]:
    t0 = time.perf_counter()
    rows = [compute_mle_elo(df.sample(frac=1.0, replace=True, random_state=i)) for i in range(n)]
    return pd.DataFrame(rows), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--prompts", type=int, default=50_000)
    ap.add_argument("--n-resamples", type=int, default=1000)
    ap.add_argument("--baseline-resamples", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    df = simulate(a.battles, a.models, a.prompts)
    print(f"{len(df)} battles, {a.models} models, {a.prompts} prompts; ties as half wins, no position effect")

    me.bradley_terry(df.head(2000), ties="half", position_bias=False, n_resamples=0)  # start R (not timed)
    t0 = time.perf_counter()
    fit = me.bradley_terry(df, prompt="prompt", ties="half", position_bias=False, n_resamples=0, ranks=False)
    t_fit = time.perf_counter() - t0
    print(f"me.bradley_terry fit only ({fit.provenance['engine']}): {t_fit:.2f} s")
    t0 = time.perf_counter()
    fc_full = compute_mle_elo(df)
    t_fc_fit = time.perf_counter() - t0
    diff = (fit.table.set_index("model")["elo"] - fc_full).abs().max()
    print(f"FastChat compute_mle_elo on the full data: {t_fc_fit:.2f} s; max |Elo difference| = {diff:.2e} "
          "(L-BFGS stops at gtol 1e-6, sklearn's tol; the exact comparison is tests/test_bradley_terry.py)")

    timings = {}
    for label, ex in (("in-process", None), (f"{a.workers} worker processes", a.workers)):
        t0 = time.perf_counter()
        res = me.bradley_terry(df, prompt="prompt", ties="half", position_bias=False, n_resamples=a.n_resamples,
                               random_state=0, executor=ex, ranks=False)
        timings[label] = time.perf_counter() - t0
        print(f"me.bradley_terry fit + {a.n_resamples}-replicate prompt bootstrap, {label}: {timings[label]:.1f} s")
    _, t_base = fastchat_bootstrap(df, a.baseline_resamples)
    per = t_base / a.baseline_resamples
    extrapolated = per * a.n_resamples + t_fc_fit
    print(f"FastChat's way (row bootstrap, compute_mle_elo per sample): {per:.2f} s per replicate, timed on "
          f"{a.baseline_resamples} replicates and EXTRAPOLATED to {a.n_resamples}: {extrapolated:.0f} s")
    for label, t in timings.items():
        print(f"ratio FastChat's way / me.bradley_terry ({label}): {extrapolated / t:.1f}x")
    width = (res.table["elo_conf_high"] - res.table["elo_conf_low"]).median()
    print(f"median width of the 95% Elo intervals (prompt bootstrap): {width:.1f} Elo points")


if __name__ == "__main__":
    main()
