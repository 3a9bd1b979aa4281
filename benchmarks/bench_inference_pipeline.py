"""Issue 3 benchmark: the mixed-model inference pipeline through mixedeval vs plain R, one run.

Kreutzer TER (7,287 rows), ``ter ~ system + (1|sentence_id)``:

    fit (lmerTest::lmer + coefficient table with Satterthwaite df + VarCorr + logLik/AIC/BIC)
    + Type III ANOVA with partial eta-squared and its interval (lmerTest + effectsize)
    + EMMs of system with Satterthwaite df (emmeans, explicit lmer.df and limits)
    + pairwise contrasts, Holm, with intervals
    + marginal/conditional R² (Nakagawa & Schielzeth / Johnson)

through mixedeval (``me.lmm`` -> ``fit.anova()`` -> ``fit.emmeans()`` -> ``.contrasts()`` ->
``fit.r2()``) against the same steps written directly in R and timed inside R in the same
process (wall and CPU time), with the data already in R (so the R side pays no conversion). R² in the R baseline is
MuMIn's arithmetic written in R (MuMIn is not installed here); ``performance::r2_nakagawa`` is
timed as well for reference. Target ratio (median) <= 1.05 (issue 12).

A third line runs mixedeval's own R helpers (``me_fit_and_summarise``, ``me_anova``,
``me_emmeans``, ``me_emm_contrast``, ``me_r2_parts``, each through ``me_call`` with the arguments
the Python side sends) from R on the same data: the R work of mixedeval's pipeline, so that
"mixedeval - its R helpers" is the facade's own cost (validation, conversion, tidy tables). The
helpers are faster than the plain-R pipeline in one place: ``emmeans`` grids of lme4 fits are built
without emmeans' ``utils::getAnywhere`` method searches (r/emmeans.R ``me_ref_grid_merMod``; same
methods, same numbers), which costs a plain R call about 20 ms here.

Run: .venv/bin/python benchmarks/bench_inference_pipeline.py [--reps 7]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import mixedeval as me
from mixedeval.engine import convert, session

FORMULA = "ter ~ system + (1|sentence_id)"

STEPS = ("fit + tables", "anova + eta2", "emmeans", "pairwise Holm", "R2")

# returns c(wall total, CPU per step...); CPU = user + system time of this process
R_PIPELINE = """
function(r2_fun) {
  n <- nrow(bench_df)
  cpu <- function() { d <- proc.time(); d[["user.self"]] + d[["sys.self"]] }
  w0 <- proc.time()[["elapsed"]]
  c0 <- cpu()
  m <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = bench_df, REML = TRUE)
  cf <- summary(m, ddf = "Satterthwaite")$coefficients
  vc <- as.data.frame(lme4::VarCorr(m), order = "lower.tri")
  fitstats <- c(stats::logLik(m), stats::AIC(m), stats::BIC(m), lme4::isSingular(m))
  c1 <- cpu()
  a <- stats::anova(m, type = "3", ddf = "Satterthwaite")
  eta <- effectsize::F_to_eta2(a[["F value"]], a[["NumDF"]], a[["DenDF"]], ci = 0.95, alternative = "greater")
  c2 <- cpu()
  e <- emmeans::emmeans(m, "system", lmer.df = "satterthwaite", lmerTest.limit = n, pbkrtest.limit = n)
  se <- summary(e, infer = c(TRUE, FALSE))
  c3 <- cpu()
  p <- summary(emmeans::contrast(e, method = "pairwise", adjust = "holm"), infer = c(TRUE, TRUE))
  c4 <- cpu()
  r2 <- r2_fun(m)
  c5 <- cpu()
  c(proc.time()[["elapsed"]] - w0, diff(c(c0, c1, c2, c3, c4, c5)))
}
"""

# MuMIn::r.squaredGLMM's arithmetic for a Gaussian LMM (Nakagawa & Schielzeth 2013; Johnson 2014)
R_R2_MUMIN = """
function(m) {
  vf <- stats::var(drop(lme4::getME(m, "X") %*% lme4::fixef(m)))
  mm <- stats::model.matrix(m, type = "randomListRaw")
  vc <- lme4::VarCorr(m)
  vr <- sum(vapply(seq_along(vc), function(k) {
    Z <- mm[[k]][, rownames(vc[[k]]), drop = FALSE]
    sum((Z %*% vc[[k]]) * Z) / nrow(Z)
  }, 0))
  ve <- stats::sigma(m)^2
  c(vf / (vf + vr + ve), (vf + vr) / (vf + vr + ve))
}
"""


# the R side of mixedeval's pipeline: its helpers, called as the Python side calls them
R_HELPERS = """
function(me) {
  n <- nrow(bench_df)
  cpu <- function() { d <- proc.time(); d[["user.self"]] + d[["sys.self"]] }
  w0 <- proc.time()[["elapsed"]]
  c0 <- cpu()
  fit <- me$me_call("me_fit_and_summarise", list(formula = "ter ~ system + (1 | sentence_id)", data = bench_df,
                    reml = TRUE, optimizer = "nloptwrap", ddf = "Satterthwaite", level = 0.95, calc_derivs = TRUE))
  m <- fit$value$model
  c1 <- cpu()
  a <- me$me_call("me_anova", list(m = m, type = "3", ddf = "Satterthwaite", level = 0.95))
  c2 <- cpu()
  e <- me$me_call("me_emmeans", list(m = m, specs = "system", level = 0.95, lmer.df = "satterthwaite",
                  lmerTest.limit = n, pbkrtest.limit = n))
  c3 <- cpu()
  p <- me$me_call("me_emm_contrast", list(m = m, grid = e$value$grid, method = "pairwise", adjust = "holm",
                  level = 0.95, use_grid_by = TRUE, eff_size = FALSE))
  c4 <- cpu()
  r2 <- me$me_call("me_r2_parts", list(m = m))
  c5 <- cpu()
  c(proc.time()[["elapsed"]] - w0, diff(c(c0, c1, c2, c3, c4, c5)))
}
"""


def pipeline(ter) -> list[float]:
    """The mixedeval pipeline; returns [wall total, CPU per step] (CPU includes the embedded R)."""
    w0 = time.perf_counter()
    cpu = [time.process_time()]
    fit = me.lmm(FORMULA, ter)
    cpu.append(time.process_time())
    fit.anova(type=3, ddf="satterthwaite")
    cpu.append(time.process_time())
    emm = fit.emmeans("system")
    cpu.append(time.process_time())
    emm.contrasts("pairwise", adjust="holm")
    cpu.append(time.process_time())
    fit.r2()
    cpu.append(time.process_time())
    return [time.perf_counter() - w0, *np.diff(cpu)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()

    ter = me.datasets.load("kreutzer_ter")
    pipeline(ter)  # warm-up: starts R, loads lme4/lmerTest/emmeans/effectsize
    import rpy2.robjects as ro

    ro.globalenv["bench_df"] = convert.to_r(ter[["ter", "system", "sentence_id"]])
    run_r = ro.r(R_PIPELINE)
    mumin = ro.r(R_R2_MUMIN)
    perf = ro.r("function(m) performance::r2_nakagawa(m)")
    run_helpers = ro.r(R_HELPERS)
    me_env = session._state["env"]
    run_r(mumin)
    run_r(perf)  # warm-up of the R baselines
    run_helpers(me_env)

    # interleaved, so that changes in machine load hit all sides alike
    r_t, f_t, h_t, p_t = [], [], [], []
    for _ in range(args.reps):
        r_t.append([float(x) for x in run_r(mumin)])
        f_t.append([float(x) for x in run_r(perf)])
        h_t.append([float(x) for x in run_helpers(me_env)])
        p_t.append(pipeline(ter))
    r_med, f_med, h_med, p_med = (np.median(np.array(x), axis=0) for x in (r_t, f_t, h_t, p_t))
    r_cpu, f_cpu, h_cpu, p_cpu = (float(np.median(np.array(x)[:, 1:].sum(axis=1))) for x in (r_t, f_t, h_t, p_t))

    print(f"Kreutzer TER inference pipeline ({len(ter):,} rows): fit + anova/eta2 + emmeans + pairwise Holm + R2")
    print(f"  {'median of ' + str(args.reps) + ' runs':<34}: {'wall':>8} {'CPU':>8}")
    print(f"  {'plain R in-process (R2 as MuMIn)':<34}: {r_med[0]:8.3f} {r_cpu:8.3f} s")
    print(f"  {'plain R with performance R2':<34}: {f_med[0]:8.3f} {f_cpu:8.3f} s   (reference)")
    print(f"  {'mixedeval R helpers called from R':<34}: {h_med[0]:8.3f} {h_cpu:8.3f} s   (mixedeval's R work)")
    print(f"  {'mixedeval':<34}: {p_med[0]:8.3f} {p_cpu:8.3f} s")
    print(f"  {'ratio mixedeval / plain R':<34}: {p_med[0] / r_med[0]:8.3f} {p_cpu / r_cpu:8.3f}     target <= 1.05")
    print(f"  {'ratio mixedeval / its R helpers':<34}: {p_med[0] / h_med[0]:8.3f} {p_cpu / h_cpu:8.3f}     "
          f"(the facade's own cost: {1e3 * (p_med[0] - h_med[0]):.1f} ms per pipeline)")
    print("  CPU per step (median ms)          :  plain R  R helpers  mixedeval  facade")
    for k, step in enumerate(STEPS, start=1):
        print(f"    {step:<32}: {1e3 * r_med[k]:8.1f} {1e3 * h_med[k]:10.1f} {1e3 * p_med[k]:10.1f} "
              f"{1e3 * (p_med[k] - h_med[k]):7.1f}")
    print(f"  load average during the run: {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} CPUs); wall times are only comparable on an idle machine")


if __name__ == "__main__":
    main()
