"""Power by simulation: seconds per 100 simulations of ``me.power`` against the same loop
written in plain R, measured in the same run (issue 16, point 5).

Design: 2 systems x 500 items x 3 runs (3,000 rows), ``score ~ system + (1|item) +
(1|system:run)``, likelihood-ratio test of ``system`` (ML refits of both models). mixedeval runs
the simulations in R in batches (one R call per ``batch_size`` simulations: lme4 ``simulate``
with the design's parameters after ``set.seed(s_i)``, ``lme4::refit`` of both models, the
chi-square p-value); the baseline is the same loop written directly in R (the same template
models, seeds and calls, no Python in the loop), run in the same embedded R session.

``--test wald_z`` (issue 33, the same call): a binomial design, 2 systems x 200 items,
``score ~ system + (1|item)``, the Wald z test of ``system``; mixedeval fits each simulated
response as ``me.glmm`` does (glmer's default control: bobyqa for the nAGQ = 0 stage, Nelder-Mead
for the Laplace stage; me.glmm's covariance rule); the baseline is the same glmer call and rule
written in R, and, for information, the bobyqa-only glmer call the simulation used before.

Usage: ``.venv/bin/python benchmarks/bench_power.py [--n-sim 1000] [--test lrt|satterthwaite|wald_z]``
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

R_WALD = """
function(formula, data, seeds, beta, theta, bobyqa) {
  f <- stats::as.formula(formula)
  params <- list(beta = beta, theta = theta)
  ctrl <- if (bobyqa) lme4::glmerControl(optimizer = "bobyqa") else lme4::glmerControl()
  data$score <- simulate(f[-2L], newdata = data, newparams = params, family = binomial, seed = 1L)[[1L]]
  m1 <- lme4::glmer(f, data = data, family = binomial)
  p <- numeric(length(seeds))
  for (i in seq_along(seeds)) {
    data$score <- simulate(m1, nsim = 1L, seed = seeds[i], newparams = params)[[1L]]
    m <- lme4::glmer(f, data = data, family = binomial, control = ctrl)
    se <- se_rx <- sqrt(diag(as.matrix(vcov(m, use.hessian = FALSE))))
    if (!bobyqa) {  # me.glmm's covariance rule: Hessian-based unless it disagrees by more than 10%
      se_h <- suppressWarnings(sqrt(diag(as.matrix(vcov(m)))))
      if (all(is.finite(se_h)) && all(abs(log(se_h / se_rx)) <= log1p(0.10))) se <- se_h
    } else {
      se <- sqrt(diag(as.matrix(vcov(m))))
    }
    p[i] <- 2 * stats::pnorm(-abs(lme4::fixef(m)[2L] / se[2L]))
  }
  p
}
"""


def wald_z(args: argparse.Namespace) -> None:
    """me.power(test="wald_z") against the same glmer call and covariance rule in plain R."""
    import rpy2.robjects as ro  # noqa: PLC0415 - R is running (me.power starts it)
    from mixedeval.engine import convert  # noqa: PLC0415

    d = me.design(systems=2, items=200, family="binomial", intercept=0.2, variances={"item": 1.0})
    me.power(d, args.effect, test="wald_z", n_sim=2, random_state=0)  # start R, load the packages
    t0 = time.perf_counter()
    res = me.power(d, args.effect, test="wald_z", n_sim=args.n_sim, random_state=1, batch_size=args.batch_size)
    t_me = time.perf_counter() - t0
    seeds = ro.IntVector(ps.sim_seeds(np.random.SeedSequence(1), 0, args.n_sim))
    theta = ro.FloatVector([1.0])
    theta.names = ro.StrVector(["item.(Intercept)"])
    loop, data = ro.r(R_WALD), convert.to_r(d.table)
    times = {}
    for bobyqa in (False, True):
        t0 = time.perf_counter()
        p = np.array(loop(d.formula, data, seeds, ro.FloatVector([0.2, args.effect]), theta, bobyqa))
        times[bobyqa] = time.perf_counter() - t0
        if not bobyqa:
            p_r = p
    p_me = res.simulations["p_value"].to_numpy()
    print(f"design: 2 systems x 200 items (binomial, {len(d.table)} rows), test wald_z, n_sim {args.n_sim}, "
          f"effect {args.effect}")
    print(f"power {res.power:.3f}; plain R loop power {np.mean(p_r <= 0.05):.3f}; max |p difference| "
          f"{np.nanmax(np.abs(p_me - p_r)):.2e} (the same glmer call)")
    print(f"mixedeval: {100 * t_me / args.n_sim:.2f} s per 100 simulations ({t_me:.1f} s total)")
    print(f"plain R, the same call (glmer default control + me.glmm's rule): {100 * times[False] / args.n_sim:.2f} s "
          f"per 100; ratio mixedeval / plain R: {t_me / times[False]:.3f}")
    print(f"for information, plain R with bobyqa for both stages (the call used before): "
          f"{100 * times[True] / args.n_sim:.2f} s per 100 ({times[True] / times[False]:.2f}x the default call)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-sim", type=int, default=1000)
    ap.add_argument("--test", default="lrt", choices=["lrt", "satterthwaite", "wald_z"])
    ap.add_argument("--batch-size", type=int, default=20)
    ap.add_argument("--effect", type=float, default=None, help="default 0.05 (Gaussian), 0.5 (wald_z)")
    args = ap.parse_args()
    if args.effect is None:
        args.effect = 0.5 if args.test == "wald_z" else 0.05
    if args.test == "wald_z":
        wald_z(args)
        return

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
