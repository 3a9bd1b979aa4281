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
draws and multcomp's compact letters) of 100, 300 and 1,000 systems with independent estimates
(IRT abilities: N(0, 1), standard errors 0.1-0.4; and 1,000 systems with standard errors
0.01-0.04), against today's code timed in the same run: the same rank intervals plus the letters
of the first pass of issue 42 (benchmarks/baseline_leaderboard.py, ``tukey_letter_matrix_today``;
same letters asserted). Wall and CPU time, with the load average.

    .venv/bin/python benchmarks/bench_leaderboard.py [--systems]
"""
from __future__ import annotations

import re
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


def _timed(fn, *args, **kw):
    """(result, wall seconds, CPU seconds of this process)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0, time.process_time() - c0


def _todays_letters(s: pd.Series, se: np.ndarray) -> tuple[list[str], float, float]:
    """The leaderboard's letters as today's code (commit 4fb8a1e, the first pass of issue 42) made
    them, without its 150-system cap: insert-absorb one update per level and its sweep
    (baseline_leaderboard.tukey_letter_matrix_today) on the same decisions; best-first order.
    Returns the letters and the wall and CPU time of the letters alone."""
    import baseline_leaderboard as base

    from mixedeval import _cld, _rankings
    from mixedeval._executor import one_blas_thread

    names = list(s.index)
    ri = _rankings.rank_intervals(s, vcov=np.diag(se ** 2), n_sim=20_000, random_state=0, letters=False,
                                  distribution=False)
    k = len(names)
    a, b = _rankings._pair_index(k)
    sig = np.zeros((k, k), dtype=bool)
    sig[a, b] = sig[b, a] = ri.pairwise["significant"].to_numpy(dtype=bool)
    rank = ri.table.set_index("name").loc[names, "rank"].to_numpy()
    order = np.lexsort((np.arange(k), rank))
    with one_blas_thread():
        lmat, wall, cpu = _timed(base.tukey_letter_matrix_today, sig, order)
    labels = _cld.get_letters(lmat.shape[1])
    return ["".join(n for n, on in zip(labels, row) if on) for row in lmat], wall, cpu


def many_systems() -> None:
    """The answer's leaderboard (rank intervals and letters) of 100, 300 and 1,000 systems against
    today's code: the rank intervals (timed with the current code in both: the same algorithm as
    today's, less two copies and an argmax, and larger groups in the branch and bound) plus today's
    letters, timed apart and added (letters asserted equal). IRT-like overlap (N(0, 1) abilities, standard errors 0.1-0.4) and,
    at 1,000 systems, an arena-like spread (standard errors 0.01-0.04); at 1,000 IRT-like systems
    more than LETTERS_MAX_PAIRS pairs are not significantly different, so the leaderboard leaves
    the letters empty and today's letters are not run (hours). Wall and CPU time (the machine is
    shared: the load average is printed)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import os

    from mixedeval import _answer

    _answer.leaderboard(pd.Series([0.0, 1.0, 2.0], index=list("abc")), std_error=[0.1, 0.1, 0.1])  # warm-up
    for k, lo, hi in ((100, 0.1, 0.4), (300, 0.1, 0.4), (1000, 0.1, 0.4), (1000, 0.01, 0.04)):
        rng = np.random.default_rng(k)
        s = pd.Series(rng.normal(0, 1, k), index=[f"s{i}" for i in range(k)])
        se = rng.uniform(lo, hi, k)
        load = os.getloadavg()[0]
        new, w_new, c_new = _timed(_answer.leaderboard, s, std_error=se)
        lets = new["letters"].ne("").any()
        _, w_ri, c_ri = _timed(_answer.leaderboard, s, std_error=se, letters=False)
        what = f"leaderboard of {k} systems (standard errors {lo}-{hi})"
        if not lets:
            print(f"{what}: {w_new:.2f} s wall / {c_new:.2f} s CPU, letters left empty (more than "
                  f"{_answer.LETTERS_MAX_PAIRS:,} pairs not significantly different); without letters "
                  f"{w_ri:.2f} s / {c_ri:.2f} s; load {load:.1f}", flush=True)
            continue
        old, w_let, c_let = _todays_letters(s, se)
        assert list(new["letters"]) == old, "letters differ from today's"
        w_old, c_old = w_ri + w_let, c_ri + c_let
        n_letters = len(set().union(*(re.findall(r"\.*[A-Za-z]", x) for x in old)))
        print(f"{what} with letters ({n_letters} letters): {w_new:.2f} s wall / {c_new:.2f} s CPU; today's "
              f"code {w_old:.2f} s / {c_old:.2f} s (rank intervals, current code, {c_ri:.2f} s + letters {c_let:.2f} s CPU); "
              f"ratio {w_old / w_new:.1f}x wall, {c_old / c_new:.1f}x CPU (same letters); load {load:.1f}",
              flush=True)


if __name__ == "__main__":
    if "--systems" not in sys.argv:
        main()
    many_systems()
