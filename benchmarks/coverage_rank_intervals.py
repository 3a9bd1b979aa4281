"""Simultaneous coverage of the rank intervals of me.rank_intervals by simulation (the larger
version of tests/test_rankings.py::test_simultaneous_coverage_of_true_ranks).

Data: k systems scored on n shared items, y[s, i] = mu_s + b_i + e_si (b ~ N(0, 0.5^2), e ~
N(0, 1)); each replication draws a new table, runs me.bootstrap (items resampled, paired) and
ranks the systems from its replicates with

  normal              the joint normal of the estimates (covariance of the replicates)
  bootstrap           studentized max-|t| bootstrap of all pairwise differences (default)
  bootstrap_centered  the same without studentization
  marginal (baseline) BootstrapResult.ranks(): per-system 2.5% / 97.5% quantiles of the rank
                      (rank_conf_low / rank_conf_high), not simultaneous

"covered" = every system's true rank (rank of mu) lies in its interval at once. Printed: the
simultaneous coverage (Monte-Carlo SE sqrt(.95 * .05 / reps)), the mean interval width, and
both as ratios to the marginal baseline of the same run. Scenarios: "spread" (means 0, 0.1,
..., clearly ordered with some neighbours close), "near_equal" (means within 0.02: the least
favourable case for a max-|t| method, coverage should be close to nominal), "two_groups" (two
tiers of nearly equal systems).

    .venv/bin/python benchmarks/coverage_rank_intervals.py [--reps 1000] [--n-resamples 1000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import mixedeval as me
from mixedeval._rankings import rank_matrix

SCENARIOS = {
    "spread": np.array([0.0, 0.1, 0.2, 0.45, 0.5, 0.9]),
    "near_equal": np.linspace(0.0, 0.02, 6),
    "two_groups": np.array([0.0, 0.01, 0.02, 0.5, 0.51, 0.52]),
}
METHODS = ("normal", "bootstrap", "bootstrap_centered")


def _table(mu: np.ndarray, n: int, rng: np.random.Generator) -> pd.DataFrame:
    k = mu.size
    y = mu[:, None] + rng.normal(0, 0.5, n)[None, :] + rng.normal(0, 1.0, (k, n))
    return pd.DataFrame({"system": np.repeat([f"s{j}" for j in range(k)], n), "item": np.tile(np.arange(n), k),
                         "score": y.ravel()})


def _covered(low, high, true) -> tuple[bool, float]:
    low, high = np.asarray(low), np.asarray(high)
    return bool(((low <= true) & (true <= high)).all()), float((high - low).mean())


def run(mu: np.ndarray, reps: int, n: int, n_resamples: int, seed: int) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    names = [f"s{j}" for j in range(mu.size)]
    true = rank_matrix(mu[:, None], True)[:, 0]
    hits = {m: 0 for m in (*METHODS, "marginal")}
    width = {m: 0.0 for m in hits}
    for _ in range(reps):
        boot = me.bootstrap(_table(mu, n, rng), score="score", system="system", item="item",
                            n_resamples=n_resamples, random_state=rng, progress=False)
        marg = boot.ranks().set_index("system").loc[names]
        h, w = _covered(marg["rank_conf_low"], marg["rank_conf_high"], true)
        hits["marginal"] += h
        width["marginal"] += w
        for m in METHODS:
            t = boot.rank_intervals(method=m).table.set_index("name").loc[names]
            h, w = _covered(t["rank_low"], t["rank_high"], true)
            hits[m] += h
            width[m] += w
    return {m: (hits[m] / reps, width[m] / reps) for m in hits}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--n-resamples", type=int, default=1000)
    ap.add_argument("--items", type=int, default=100)
    args = ap.parse_args()
    se = np.sqrt(0.95 * 0.05 / args.reps)
    print(f"reps={args.reps} n_resamples={args.n_resamples} items={args.items}; MC SE of a 95% coverage {se:.4f}")
    for i, (name, mu) in enumerate(SCENARIOS.items()):
        t0 = time.perf_counter()
        out = run(mu, args.reps, args.items, args.n_resamples, seed=1000 + i)
        base_cov, base_w = out["marginal"]
        print(f"\nscenario {name}: means {np.round(mu, 3).tolist()} ({time.perf_counter() - t0:.0f} s)")
        print(f"  {'method':<20}{'coverage':>10}{'width':>8}{'cov/baseline':>14}{'width/baseline':>16}")
        for m, (cov, w) in out.items():
            print(f"  {m:<20}{cov:>10.3f}{w:>8.2f}{cov / base_cov:>14.3f}{(w / base_w if base_w else np.nan):>16.3f}")


if __name__ == "__main__":
    main()
