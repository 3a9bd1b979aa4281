"""Power by simulation: seconds per 100 simulations of ``me.power`` against the same loop
written in plain R, measured in the same run (issue 16, point 5).

Design: 2 systems x 500 items x 3 runs (3,000 rows), ``score ~ system + (1|item) +
(1|system:run)``, likelihood-ratio test of ``system`` (ML refits of both models). mixedeval runs
the simulations in R in batches (one R call per ``batch_size`` simulations: lme4 ``simulate``
with the design's parameters after ``set.seed(s_i)``, ``lme4::refit`` of both models, the
chi-square p-value); the baseline is the same loop written directly in R (the same template
models, seeds and calls, no Python in the loop), run in the same embedded R session.

Usage: ``.venv/bin/python benchmarks/bench_power.py [--n-sim 1000] [--test lrt|satterthwaite]``
(``--n-sim 100`` for a quick run). Prints power, seconds per 100 simulations for both, and the
ratio (mixedeval / plain R).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import mixedeval as me
from mixedeval.workflows import _power_sim as ps

R_LOOP = """
function(formula, null_formula, data, seeds, beta, theta, sigma, test) {
  f <- stats::as.formula(formula)
  params <- list(beta = beta, theta = theta, sigma = sigma)
  data$score <- simulate(f[-2L], newdata = data, newparams = params, seed = 1L)[[1L]]
  reml <- test != "lrt"
  m1 <- lme4::lmer(f, data = data, REML = reml)
  if (!reml) m0 <- lme4::lmer(stats::as.formula(null_formula), data = data, REML = FALSE)
  p <- numeric(length(seeds))
  for (i in seq_along(seeds)) {
    y <- simulate(m1, nsim = 1L, seed = seeds[i], newparams = params)[[1L]]
    if (!reml) {
      r1 <- lme4::refit(m1, newresp = y)
      r0 <- lme4::refit(m0, newresp = y)
      p[i] <- stats::pchisq(as.numeric(2 * (logLik(r1) - logLik(r0))), 1, lower.tail = FALSE)
    } else {
      data$score <- y
      r1 <- lmerTest::lmer(f, data = data, REML = TRUE)
      p[i] <- lmerTest::contest(r1, matrix(c(0, 1), 1), joint = TRUE, ddf = "Satterthwaite")[["Pr(>F)"]]
    }
  }
  p
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-sim", type=int, default=1000)
    ap.add_argument("--test", default="lrt", choices=["lrt", "satterthwaite"])
    ap.add_argument("--batch-size", type=int, default=20)
    ap.add_argument("--effect", type=float, default=0.05)
    args = ap.parse_args()

    d = me.design(systems=2, items=500, runs=3, variances={"item": 0.04, "run": 0.0004, "residual": 0.01})
    me.power(d, args.effect, test=args.test, n_sim=2, random_state=0)  # start R, load the packages

    t0 = time.perf_counter()
    res = me.power(d, args.effect, test=args.test, n_sim=args.n_sim, random_state=1, batch_size=args.batch_size)
    t_me = time.perf_counter() - t0

    import rpy2.robjects as ro  # noqa: PLC0415 - R is running (me.power started it)
    from mixedeval.engine import convert  # noqa: PLC0415 - the benchmark's own conversion of the design

    seeds = ps.sim_seeds(np.random.SeedSequence(1), 0, args.n_sim)
    loop = ro.r(R_LOOP)
    theta = ro.FloatVector([0.2 / 0.1, 0.02 / 0.1])
    theta.names = ro.StrVector(["item.(Intercept)", "system:run.(Intercept)"])
    t0 = time.perf_counter()
    p_r = np.array(loop(d.formula, "score ~ 1 + (1 | item) + (1 | system:run)", convert.to_r(d.table),
                        ro.IntVector(seeds), ro.FloatVector([0.0, args.effect]), theta, 0.1, args.test))
    t_r = time.perf_counter() - t0

    p_me = res.simulations["p_value"].to_numpy()
    print(f"design: 2 systems x 500 items x 3 runs ({len(d.table)} rows), test {args.test}, n_sim {args.n_sim}, "
          f"effect {args.effect}")
    print(f"power {res.power:.3f} [{res.conf_low:.3f}, {res.conf_high:.3f}]; plain R loop power "
          f"{np.mean(p_r <= 0.05):.3f}; max |p difference| {np.nanmax(np.abs(p_me - p_r)):.2e}")
    print(f"mixedeval: {100 * t_me / args.n_sim:.2f} s per 100 simulations ({t_me:.1f} s total)")
    print(f"plain R:   {100 * t_r / args.n_sim:.2f} s per 100 simulations ({t_r:.1f} s total)")
    print(f"ratio mixedeval / plain R: {t_me / t_r:.3f}")


if __name__ == "__main__":
    main()
