"""Coverage of the hierarchical bootstrap intervals by simulation (the precise version of
tests/test_bootstrap.py::test_coverage_of_hierarchical_bootstrap_small).

Data from a crossed items x runs x languages model with known truth:

    y[s, k, g, i] = mu_s + alpha_g + b_gi + c_sk + d_sgi + e_skgi

items b (nested in languages) and runs c random and crossed, d a system x item interaction,
e residual. Scenarios:

  A  fixed languages (G = 3), 30 items each, 10 runs; resample items + runs.
     Truth: mu_s + mean(alpha). (The CI test's design.)
  B  as A with 5 runs and a larger run variance: the run part of the variance is
     underestimated by (K - 1) / K and its bootstrap distribution is coarse, so intervals for
     differences under-cover -- shown, not hidden.
  C  random languages (G = 12, alpha ~ N(0, 0.3^2)), 20 items each, 10 runs; resample
     languages + items + runs. Truth: mu_s (expected over languages).

For each scenario, coverage of nominal 95% intervals for system scores and for pairwise
differences, for the percentile, basic, BCa and +-z SE intervals (same replicates). With R
replications the Monte-Carlo SE of a coverage near 95% is sqrt(.95 * .05 / R) per quantity.

    .venv/bin/python benchmarks/coverage_bootstrap.py [--reps 2000] [--B 1000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import mixedeval as me

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_bootstrap import simulate_crossed as simulate  # noqa: E402  (the CI test's data model)

SCENARIOS = {
    "A": dict(K=10, G=3, n=30, sd_run=0.15, sd_lang=None, resample=["items", "runs"]),
    "B": dict(K=5, G=3, n=30, sd_run=0.25, sd_lang=None, resample=["items", "runs"]),
    "C": dict(K=10, G=12, n=20, sd_run=0.15, sd_lang=0.3, resample=["groups", "items", "runs"]),
}


def run(name: str, reps: int, B: int) -> None:
    cfg = dict(SCENARIOS[name])
    resample = cfg.pop("resample")
    rng = np.random.default_rng(100 + ord(name))
    methods = ("percentile", "basic", "bca", "se")
    hits = {(m, what): [] for m in methods for what in ("system", "delta")}
    t = time.perf_counter()
    for r in range(reps):
        df, truth = simulate(rng, **cfg)
        res = me.bootstrap(df, "score", "system", "item", run="run", group="lang", resample=resample,
                           n_resamples=B, ci="bca", random_state=r, progress=False)
        for m in methods:
            sm, pw = res.summary(ci=m), res.pairwise(ci=m)
            hits[(m, "system")].extend((sm.conf_low <= truth) & (truth <= sm.conf_high))
            td = truth[pw.system_a.to_numpy()] - truth[pw.system_b.to_numpy()]
            hits[(m, "delta")].extend((pw.conf_low <= td) & (td <= pw.conf_high))
    se = np.sqrt(0.95 * 0.05 / reps)
    print(f"scenario {name} {SCENARIOS[name]}: {reps} replications, B = {B}, {time.perf_counter() - t:.0f} s "
          f"(MC SE of one coverage ~ {se:.3f})")
    for m in methods:
        print(f"  {m:>10}: systems {np.mean(hits[(m, 'system')]):.3f}   differences {np.mean(hits[(m, 'delta')]):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--B", type=int, default=1000)
    ap.add_argument("--scenarios", default="ABC")
    args = ap.parse_args()
    for name in args.scenarios:
        run(name, args.reps, args.B)


if __name__ == "__main__":
    main()
