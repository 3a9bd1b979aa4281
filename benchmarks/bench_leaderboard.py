"""Benchmark: vectorized leaderboard simulation vs a per-resample loop doing the same work.

Realistic size (the paper's NER case, sec. 6): 20 models x 61 languages, parametric noise,
languages bootstrapped with the noise added (add_noise=True, the work the loop does), B = 10,000,
three aggregators, pairwise differences and ranks.
Baseline, measured in the same run: a Python loop over resamples that draws the noise and the
languages with numpy and computes the aggregates per resample (then the same summaries).
The work is dominated by the B x M x L normal draws and the medians, which the loop does too,
so the ratio to the loop is modest; the floor (draws + median alone) is printed as well.
Also times the run-interval engine (800 items x 30 runs, B = 5000, macro F1) against a
per-resample loop. Prints ratios.

Leaderboards of many systems (issue 42, item 6; ``--systems`` runs only this part): the answer's
leaderboard (``mixedeval._answer.leaderboard``: simultaneous rank intervals from 20,000 joint-normal
draws, letters up to 150 systems) of 100, 300 and 1,000 systems with independent estimates (IRT
abilities: N(0, 1), standard errors 0.1-0.4), against today's code copied verbatim into
benchmarks/baseline_leaderboard.py, timed in the same run (same numbers asserted); and the compact
letters alone (``rank_intervals(..., letters=True)``) where the old insert-absorb finishes.

    .venv/bin/python benchmarks/bench_leaderboard.py [--systems]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mixedeval.resampling import decompose_variance_summary, run_intervals, simulate_leaderboard

M, L, B = 20, 61, 10_000


def loop_leaderboard(means: np.ndarray, eta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    draws = np.empty((B, M, 3))
    for b in range(B):
        idx = rng.integers(0, L, L)
        Y = means[:, idx] + eta[:, idx] * rng.standard_normal((M, L))
        draws[b, :, 0] = Y.mean(1)
        draws[b, :, 1] = np.exp(np.log(Y).mean(1))
        draws[b, :, 2] = np.median(Y, 1)
    ia, ib = np.triu_indices(M, 1)
    for a in range(3):
        d = draws[:, ia, a] - draws[:, ib, a]
        d.std(0, ddof=1), np.quantile(d, [0.025, 0.975], axis=0)
        np.argsort(np.argsort(-draws[:, :, a], 1), 1)
    return draws


def loop_runs(stats_correct: np.ndarray, rng: np.random.Generator, n_res: int) -> np.ndarray:
    l, n = stats_correct.shape
    out = np.empty(n_res)
    for b in range(n_res):
        idx = rng.integers(0, l, l)
        out[b] = stats_correct[idx].mean()
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    means = rng.uniform(60, 90, (M, L))
    eta = rng.uniform(0.5, 2.0, (M, L))
    table = pd.DataFrame({"model": np.repeat([f"m{i}" for i in range(M)], L),
                          "language": np.tile([f"l{j}" for j in range(L)], M),
                          "mean": means.ravel(), "sd_total": eta.ravel()})
    vd = decompose_variance_summary(table, sd_total="sd_total")
    simulate_leaderboard(vd, n_resamples=100, progress=False)  # warm-up (imports)

    t0 = time.perf_counter()
    simulate_leaderboard(vd, languages="bootstrap", add_noise=True, n_resamples=B, random_state=1, progress=False)
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop_leaderboard(means, eta, np.random.default_rng(1))
    t_loop = time.perf_counter() - t0
    t0 = time.perf_counter()
    g = np.random.default_rng(1)
    for s0 in range(0, B, 1000):  # floor: the normal draws and the median alone
        np.median(means + eta * g.standard_normal((1000, M, L)), axis=2)
    t_floor = time.perf_counter() - t0
    print(f"leaderboard {M} models x {L} languages, B={B}: vectorized {t_vec:.2f} s, per-resample loop "
          f"{t_loop:.2f} s, ratio {t_loop / t_vec:.1f}x; floor (noise draws + median only) {t_floor:.2f} s, "
          f"vectorized / floor {t_vec / t_floor:.1f}x")

    l, n, Br = 800, 30, 5000
    y = rng.integers(0, 4, l)
    pred = np.where(rng.random((n, l)) < 0.7, y, rng.integers(0, 4, (n, l)))
    run_intervals(y_true=y, y_pred=pred, metric="accuracy", n_resamples=64, progress=False)  # warm-up (scipy.stats)
    t0 = time.perf_counter()
    run_intervals(y_true=y, y_pred=pred, metric="accuracy", n_resamples=Br, random_state=1, progress=False)
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop_runs((pred == y).T.astype(float), np.random.default_rng(1), Br)  # instance bootstrap only
    t_loop = time.perf_counter() - t0
    print(f"run_intervals {l} items x {n} runs, B={Br} (all nine intervals): {t_vec:.2f} s; a loop doing only "
          f"the instance bootstrap: {t_loop:.2f} s, ratio {t_loop / t_vec:.1f}x")
    t0 = time.perf_counter()
    run_intervals(y_true=y, y_pred=pred, metric="macro_f1", n_resamples=Br, random_state=1, progress=False)
    print(f"run_intervals macro F1 (4 classes): {time.perf_counter() - t0:.2f} s")


def many_systems() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import baseline_leaderboard as base

    from mixedeval import _answer, _rankings

    for k in (100, 300, 1000):
        rng = np.random.default_rng(k)
        s = pd.Series(rng.normal(0, 1, k), index=[f"s{i}" for i in range(k)])
        se = rng.uniform(0.1, 0.4, k)
        t0 = time.perf_counter()
        new = _answer.leaderboard(s, std_error=se)
        t_new = time.perf_counter() - t0
        t0 = time.perf_counter()
        old = base.leaderboard(s, std_error=se)
        t_old = time.perf_counter() - t0
        pd.testing.assert_frame_equal(new, old)
        print(f"leaderboard of {k} systems ({'with' if k <= 150 else 'without'} letters): {t_new:.2f} s, "
              f"before issue 42 {t_old:.2f} s, ratio {t_old / t_new:.1f}x (same table)", flush=True)
    for k in (60, 100, 150):
        rng = np.random.default_rng(k)
        est, se = rng.normal(0, 1, k), rng.uniform(0.1, 0.4, k)
        names = [f"s{i}" for i in range(k)]
        t0 = time.perf_counter()
        new = _rankings.rank_intervals(pd.Series(est, index=names), vcov=np.diag(se ** 2), n_sim=20_000,
                                       random_state=0, distribution=False)
        t_new = time.perf_counter() - t0
        t0 = time.perf_counter()
        old = base.rank_intervals_core(names, est, vcov=np.diag(se ** 2), n_sim=20_000, random_state=0)[0]
        t_old = time.perf_counter() - t0
        pd.testing.assert_frame_equal(new.table, old)
        print(f"rank intervals + letters of {k} systems: {t_new:.2f} s, before {t_old:.2f} s "
              f"(with the rank distribution), ratio {t_old / t_new:.1f}x", flush=True)


if __name__ == "__main__":
    if "--systems" not in sys.argv:
        main()
    many_systems()
