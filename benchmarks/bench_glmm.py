"""Issue 13 benchmark: ``me.glmm`` against the same ``lme4::glmer`` call in plain R, measured in one run.

Data: a simulated 0/1 item table of 50,000 rows (200 items x 5 systems x 50 runs; item random
intercept SD 1, system effects on the logit scale). Model: ``correct ~ system + (1|item)``.

1. ``me.glmm`` (validation + column-wise conversion + glmer + the covariance check + tidy tables)
   against the same R call an R user makes: ``m <- lme4::glmer(correct ~ system + (1|item),
   family = binomial)`` with glmer's default control -- its two-stage optimizer (bobyqa for the
   nAGQ = 0 stage, Nelder-Mead for the Laplace stage), as ``me.glmm`` runs it (issue 33: the
   baseline used to be bobyqa-only, a different and faster call, which made the ratio 1.40) --
   plus ``summary(m)``, timed inside the same embedded R (data already in R). Interleaved
   repetitions; target ratio <= 1.10 (median). The largest difference of the fixed effects
   between the two fits shows that they are the same call. The facade's own cost is ``me.glmm``'s
   time minus the time of the glmer fit alone, measured the same way.
2. ``nagq=0`` (fixed effects inside PIRLS) against the Laplace fit (``nagq=1``): time and the
   largest fixed-effect difference, for the fast path documented in ``me.glmm``; its plain-R
   baseline is the same glmer call with ``nAGQ = 0``.

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
    # the same call as me.glmm: glmer's default control (two-stage optimizer), then summary(m);
    # `fit_only` times the glmer fit alone (for the facade's own cost)
    r_once = ro.r(
        """
        function(nagq, fit_only) {
          t0 <- proc.time()[["elapsed"]]
          m <- lme4::glmer(correct ~ system + (1|item), data = bench_glmm_df, family = binomial, nAGQ = nagq)
          if (!fit_only) s <- summary(m)
          list(seconds = proc.time()[["elapsed"]] - t0, beta = unname(lme4::fixef(m)))
        }
        """
    )
    r_times, py_times, r0_times, py0_times, fit_times = [], [], [], [], []
    fits, r_beta = {}, {}
    for _ in range(args.repeat):  # interleaved, so that changes in machine load hit both sides alike
        out = r_once(1, False)
        r_times.append(float(out[0][0]))
        r_beta[1] = np.asarray(out[1], dtype=float)
        fit_times.append(float(r_once(1, True)[0][0]))
        t = time.perf_counter()
        fits[1] = me.glmm(FORMULA, df)
        py_times.append(time.perf_counter() - t)
        out = r_once(0, False)
        r0_times.append(float(out[0][0]))
        r_beta[0] = np.asarray(out[1], dtype=float)
        t = time.perf_counter()
        fits[0] = me.glmm(FORMULA, df, nagq=0)
        py0_times.append(time.perf_counter() - t)
    r_med, py_med, fit_med = float(np.median(r_times)), float(np.median(py_times)), float(np.median(fit_times))
    r0_med, py0_med = float(np.median(r0_times)), float(np.median(py0_times))
    same = max(float(np.max(np.abs(fits[k].fixed["estimate"].to_numpy() - r_beta[k]))) for k in (0, 1))
    print(f"\nLaplace fit + tables ({args.repeat} interleaved runs; glmer's default two-stage optimizer on both sides)")
    print(f"  plain R glmer + summary : min {min(r_times):.3f} s  median {r_med:.3f} s")
    print(f"  mixedeval.glmm          : min {min(py_times):.3f} s  median {py_med:.3f} s")
    print(f"  ratio                   : {py_med / r_med:.3f} (median), {min(py_times) / min(r_times):.3f} (min)   "
          "target <= 1.10")
    print(f"  the facade's own cost   : {py_med - fit_med:.3f} s = me.glmm {py_med:.3f} s - the glmer fit alone "
          f"{fit_med:.3f} s (medians; {py_med / fit_med:.3f}x the fit)")
    print(f"  same call               : largest fixed-effect difference me.glmm vs plain R {same:.2e}")
    print("\nnAGQ = 0 (fast path)")
    print(f"  plain R glmer + summary : median {r0_med:.3f} s;  mixedeval.glmm median {py0_med:.3f} s "
          f"(ratio {py0_med / r0_med:.3f})")
    diff = np.max(np.abs(fits[0].fixed["estimate"].to_numpy() - fits[1].fixed["estimate"].to_numpy()))
    se = float(fits[1].fixed["std_error"].min())
    print(f"  nagq=0 / Laplace time: {py0_med / py_med:.3f};  largest fixed-effect difference {diff:.2e} "
          f"({diff / se:.3f} of the smallest SE); logLik {fits[0].loglik:.3f} vs {fits[1].loglik:.3f}")


if __name__ == "__main__":
    main()
