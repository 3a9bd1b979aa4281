"""Issue 3 benchmark (ANOVA + LRT part): mixedeval against the same R code timed inside R in
the same process, on the same fitted models, printed as ratios measured in one run.

1. Kreutzer TER ``ter ~ system * src_length + (1|sentence_id)``: ``fit.anova()`` (lmerTest
   Type III + effectsize's partial eta-squared) against ``anova(m, type = 3)`` +
   ``effectsize::F_to_eta2(...)`` in R; also shown: ``effectsize::eta_squared(m, ...)`` as an R
   user would call it.
2. ``me.compare(m0, m1)`` (fixed effects differ: automatic ML refit) against ``anova(m0, m1)``.
3. Parametric bootstrap on sleepstudy (``n_resamples=100``, chunked with progress) against
   ``set.seed(1); pbkrtest::PBmodcomp(m1, m0, nsim = 100)``.

Run: .venv/bin/python benchmarks/bench_anova_compare.py
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

import mixedeval as me


R_TIMER = """
function(expr_fun) {
  t0 <- proc.time()[["elapsed"]]
  expr_fun()
  proc.time()[["elapsed"]] - t0
}
"""


def interleaved(r_timer, r_fun, py_fun, repeat: int):
    """(min, median) seconds of the R function (timed inside R) and of the Python callable,
    run alternately so that both see the same machine load."""
    r_t, py_t = [], []
    for _ in range(repeat):
        r_t.append(float(r_timer(r_fun)[0]))
        t = time.perf_counter()
        py_fun()
        py_t.append(time.perf_counter() - t)
    return (min(r_t), float(np.median(r_t))), (min(py_t), float(np.median(py_t)))


def report(label: str, r_times, py_times, r_label: str = "plain R in-process") -> None:
    (r_min, r_med), (py_min, py_med) = r_times, py_times
    print(label)
    print(f"  {r_label:<26}: min {r_min:.3f} s  median {r_med:.3f} s")
    print(f"  {'mixedeval':<26}: min {py_min:.3f} s  median {py_med:.3f} s")
    print(f"  ratio                     : {py_med / r_med:.3f} (median), {py_min / r_min:.3f} (min)")


def main() -> None:
    import rpy2.robjects as ro

    ter = me.datasets.load("kreutzer_ter")
    fit = me.lmm("ter ~ system * src_length + (1|sentence_id)", ter)
    f0 = me.lmm("ter ~ src_length + (1|sentence_id)", ter)
    fit.anova()  # warm-up (loads effectsize)
    me.compare(f0, fit)
    ro.globalenv["b_m"] = fit._model
    ro.globalenv["b_m0"] = f0._model
    timer = ro.r(R_TIMER)

    same = ro.r("""function() {
      a <- anova(b_m, type = 3, ddf = "Satterthwaite")
      effectsize::F_to_eta2(a[["F value"]], a[["NumDF"]], a[["DenDF"]], ci = 0.95, alternative = "greater")
    }""")
    user = ro.r("""function() {
      a <- anova(b_m, type = 3)
      effectsize::eta_squared(b_m, partial = TRUE, ci = 0.95, alternative = "greater")
    }""")
    r_same, py = interleaved(timer, same, fit.anova, 11)
    r_user, _ = interleaved(timer, user, lambda: None, 5)
    print("1. Type III ANOVA + partial eta-squared, Kreutzer TER (7,287 rows)")
    report("   same R code (anova + F_to_eta2)", r_same, py)
    print(f"   (R user code anova + eta_squared(m): median {r_user[1]:.3f} s; mixedeval / that = "
          f"{py[1] / r_user[1]:.3f})")

    lrt = ro.r("function() anova(b_m0, b_m)")
    r_lrt, py_lrt = interleaved(timer, lrt, lambda: me.compare(f0, fit), 7)
    report("\n2. Likelihood-ratio test with ML refit, Kreutzer TER", r_lrt, py_lrt, "anova(m0, m1) in R")

    ro.r('data(sleepstudy, package = "lme4")')
    sleep = pd.DataFrame({"Reaction": np.array(ro.r("sleepstudy$Reaction")), "Days": np.array(ro.r("sleepstudy$Days")),
                          "Subject": np.array(ro.r("as.character(sleepstudy$Subject)"))})
    s0 = me.lmm("Reaction ~ Days + (1|Subject)", sleep)
    s1 = me.lmm("Reaction ~ Days + (Days|Subject)", sleep)
    ro.globalenv["b_s0"] = s0._model
    ro.globalenv["b_s1"] = s1._model
    pb = ro.r("function() { set.seed(1); pbkrtest::PBmodcomp(b_s1, b_s0, nsim = 100) }")
    r_pb, py_pb = interleaved(timer, pb, lambda: me.compare(s0, s1, n_resamples=100, random_state=1, progress=False), 3)
    report("\n3. Parametric bootstrap (100 samples, chunked), sleepstudy", r_pb, py_pb, "PBmodcomp in R")


if __name__ == "__main__":
    main()
