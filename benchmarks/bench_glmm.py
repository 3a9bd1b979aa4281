"""Issue 13 benchmark: ``me.glmm`` against the same ``lme4::glmer`` call in plain R, measured in one run.

Data: a simulated 0/1 item table of 50,000 rows (200 items x 5 systems x 50 runs; item random
intercept SD 1, system effects on the logit scale). Model: ``correct ~ system + (1|item)``.

1. ``me.glmm`` (validation + column-wise conversion + glmer + tidy tables) against
   ``lme4::glmer(correct ~ system + (1|item), family = binomial, control =
   glmerControl(optimizer = "bobyqa"))`` plus the same summary helper timed inside the same
   embedded R (data already in R). Interleaved repetitions; target ratio <= 1.10 (median).
2. ``nagq=0`` (fixed effects inside PIRLS) against the Laplace fit (``nagq=1``): time and the
   largest fixed-effect difference, for the fast path documented in ``me.glmm``.

Run: .venv/bin/python benchmarks/bench_glmm.py [--repeat N]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import mixedeval as me
from mixedeval.engine import convert, session

FORMULA = "correct ~ system + (1|item)"


def simulate_table(random_state: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(random_state)
    n_items, n_systems, n_runs = 200, 5, 50
    item = np.repeat(np.arange(n_items), n_systems * n_runs)
    system = np.tile(np.repeat(np.arange(n_systems), n_runs), n_items)
    run = np.tile(np.arange(n_runs), n_items * n_systems)
    u = rng.normal(0, 1.0, n_items)
    beta = np.array([0.0, 0.1, 0.2, -0.1, 0.3])
    p = 1 / (1 + np.exp(-(0.4 + beta[system] + u[item])))
    return pd.DataFrame({"item": [f"item{i:03d}" for i in item], "system": [f"sys{s}" for s in system],
                         "run": run, "correct": rng.binomial(1, p)})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    df = simulate_table()
    print(f"table: {len(df):,} rows, {df['item'].nunique()} items x {df['system'].nunique()} systems x "
          f"{df['run'].nunique()} runs; mean accuracy {df['correct'].mean():.3f}")
    fit = me.glmm(FORMULA, df)  # warm-up: starts R, loads lme4
    import rpy2.robjects as ro

    with session.lock:
        ro.globalenv["bench_glmm_df"] = convert.to_r(fit.data)
    r_once = ro.r(
        """
        function(env, nagq) {
          t0 <- proc.time()[["elapsed"]]
          m <- lme4::glmer(correct ~ system + (1|item), data = bench_glmm_df, family = binomial, nAGQ = nagq,
                           control = lme4::glmerControl(optimizer = "bobyqa"))
          s <- env$me_glmm_summary(m, "binomial")
          proc.time()[["elapsed"]] - t0
        }
        """
    )
    helpers = session.helper_env()
    r_times, py_times, r0_times, py0_times = [], [], [], []
    fits = {}
    for _ in range(args.repeat):  # interleaved, so that changes in machine load hit both sides alike
        r_times.append(float(r_once(helpers, 1)[0]))
        t = time.perf_counter()
        fits[1] = me.glmm(FORMULA, df)
        py_times.append(time.perf_counter() - t)
        r0_times.append(float(r_once(helpers, 0)[0]))
        t = time.perf_counter()
        fits[0] = me.glmm(FORMULA, df, nagq=0)
        py0_times.append(time.perf_counter() - t)
    r_med, py_med = float(np.median(r_times)), float(np.median(py_times))
    r0_med, py0_med = float(np.median(r0_times)), float(np.median(py0_times))
    print(f"\nLaplace fit + tables ({args.repeat} interleaved runs)")
    print(f"  plain R glmer      : min {min(r_times):.3f} s  median {r_med:.3f} s")
    print(f"  mixedeval.glmm     : min {min(py_times):.3f} s  median {py_med:.3f} s")
    print(f"  overhead ratio     : {py_med / r_med:.3f} (median), {min(py_times) / min(r_times):.3f} (min)   "
          "target <= 1.10")
    print("\nnAGQ = 0 (fast path)")
    print(f"  plain R glmer      : median {r0_med:.3f} s;  mixedeval.glmm median {py0_med:.3f} s "
          f"(ratio {py0_med / r0_med:.3f})")
    diff = np.max(np.abs(fits[0].fixed["estimate"].to_numpy() - fits[1].fixed["estimate"].to_numpy()))
    se = float(fits[1].fixed["std_error"].min())
    print(f"  nagq=0 / Laplace time: {py0_med / py_med:.3f};  largest fixed-effect difference {diff:.2e} "
          f"({diff / se:.3f} of the smallest SE); logLik {fits[0].loglik:.3f} vs {fits[1].loglik:.3f}")


if __name__ == "__main__":
    main()
