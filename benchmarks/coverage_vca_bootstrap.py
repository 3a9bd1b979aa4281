"""Coverage of the parametric-bootstrap intervals of variance components (``VCAResult.bootstrap``)
by simulation: the large version of
tests/test_vca_bootstrap.py::test_small_coverage_simulation_of_the_item_variance_interval.

Data from a crossed item x rater design with known components:

    score[i, r, k] = a_i + b_r + e_irk,   a ~ N(0, s2_item), b ~ N(0, s2_rater), e ~ N(0, s2_res)

(default 20 items x 5 raters x 2 ratings, s2 = 1, 0.5, 1). Each data set is analysed with
``me.variance_components(df, "score", object="item", facets=["rater"])`` and bootstrapped with
``n_resamples=B``; the table counts how often the percentile interval (nominal ``level``)
covers the true item, rater and residual variances and the true phi = s2_item / total. The
Monte-Carlo SE of a coverage c is sqrt(c (1 - c) / reps).

What to expect: a percentile interval of a variance under-covers, because the estimator's
chi-square-like skew is mirrored the wrong way (for a variance estimated with d degrees of
freedom, coverage is P(d^2 / chi2_(1-a/2) <= X <= d^2 / chi2_(a/2)) for X ~ chi2_d: 0.92 at d = 19,
0.84 at d = 4). The rater variance of 5 raters (d = 4) is the hard case; shown, not hidden.

    .venv/bin/python benchmarks/coverage_vca_bootstrap.py [--reps 200] [--B 200] [--executor 2] [--seed 2026]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import stats

import mixedeval as me


def simulate(rng, n_item: int, n_rater: int, n_rep: int, s2: dict[str, float]) -> pd.DataFrame:
    a = rng.normal(0, np.sqrt(s2["item"]), n_item)
    b = rng.normal(0, np.sqrt(s2["rater"]), n_rater)
    i = np.repeat(np.arange(n_item), n_rater * n_rep)
    r = np.tile(np.repeat(np.arange(n_rater), n_rep), n_item)
    y = a[i] + b[r] + rng.normal(0, np.sqrt(s2["Residual"]), i.size)
    return pd.DataFrame({"item": [f"i{k:03d}" for k in i], "rater": [f"r{k:02d}" for k in r], "score": y})


def chi2_percentile_coverage(d: int, level: float) -> float:
    """Coverage of the percentile interval of a variance estimated as s2 * chi2_d / d."""
    a = 1 - level
    hi, lo = d**2 / stats.chi2.ppf(a / 2, d), d**2 / stats.chi2.ppf(1 - a / 2, d)
    return float(stats.chi2.cdf(hi, d) - stats.chi2.cdf(lo, d))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="simulated data sets")
    ap.add_argument("--B", type=int, default=200, help="bootstrap refits per data set")
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--raters", type=int, default=5)
    ap.add_argument("--ratings", type=int, default=2, help="ratings per item x rater cell")
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--executor", default=None, help="e.g. 2 (worker processes)")
    ap.add_argument("--seed", type=int, default=2026, help="numpy seed of the simulated data sets")
    args = ap.parse_args()
    executor = int(args.executor) if args.executor and args.executor.isdigit() else args.executor
    s2 = {"item": 1.0, "rater": 0.5, "Residual": 1.0}
    truth = {**s2, "phi": s2["item"] / sum(s2.values())}
    rng = np.random.default_rng(args.seed)
    hits: dict[str, list[bool]] = {k: [] for k in truth}
    widths: dict[str, list[float]] = {k: [] for k in truth}
    n_failed = n_singular = 0
    t0 = time.perf_counter()
    for rep in range(args.reps):
        df = simulate(rng, args.items, args.raters, args.ratings, s2)
        v = me.variance_components(df, "score", object="item", facets=["rater"])
        b = v.bootstrap(args.B, level=args.level, random_state=10_000 + rep, executor=executor, progress=False)
        tab = b.table.set_index("component")
        for k, true in truth.items():
            hits[k].append(bool(tab.loc[k, "conf_low"] <= true <= tab.loc[k, "conf_high"]))
            widths[k].append(float(tab.loc[k, "conf_high"] - tab.loc[k, "conf_low"]))
        n_failed += b.n_failed
        n_singular += b.n_singular
    elapsed = time.perf_counter() - t0
    print(f"{args.reps} data sets x {args.B} refits ({args.items} items x {args.raters} raters x {args.ratings}), "
          f"level {args.level}, executor={executor!r}: {elapsed:.1f} s "
          f"({1000 * elapsed / (args.reps * (args.B + 1)):.1f} ms per fit or refit)")
    print(f"failed refits {n_failed}, singular refits {n_singular} of {args.reps * args.B}")
    df_item, df_rater = args.items - 1, args.raters - 1
    ref = {"item": chi2_percentile_coverage(df_item, args.level),
           "rater": chi2_percentile_coverage(df_rater, args.level)}
    for k in truth:
        c = float(np.mean(hits[k]))
        se = np.sqrt(c * (1 - c) / args.reps)
        note = f"   (chi-square approximation: {ref[k]:.3f})" if k in ref else ""
        print(f"  {k:>8}: coverage {c:.3f} (MC SE {se:.3f}), mean width {np.mean(widths[k]):.3f}{note}")


if __name__ == "__main__":
    main()
