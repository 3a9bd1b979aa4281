"""GLMM optimizer settings: glmer's default (bobyqa, then Nelder-Mead) against bobyqa for both stages.

``me.glmm`` defaults to glmer's own optimizer setting (``glmerControl()``: bobyqa for the nAGQ = 0
stage, Nelder-Mead for the final stage; recorded as ``optimizer="bobyqa+Nelder_Mead"``), so that
its numbers equal ``glmer(formula, data, family)`` called without ``control``; ``optimizer=
"bobyqa"`` (both stages) stays a documented option. This script re-measures, in one run and one
embedded R session, what the two settings cost and how far apart their estimates are:

    VerbAgg   r2 ~ Anger + Gender + btype + situ + (1|id) + (1|item), binomial (lme4::VerbAgg,
              7,584 rows; the factor response r2 is sent to me.glmm as 0/1 = (r2 == "Y"), which
              is what glmer's binomial family makes of the factor)
    cbpp      cbind(incidence, size - incidence) ~ period + (1|herd), binomial (lme4::cbpp, 56 rows)
    nb sim    count ~ system + (1|item), lme4::glmer.nb, 2,000 rows simulated in R (200 items x 10
              systems, item random intercept SD 0.7, system effects 0..0.45 on the log scale,
              negative-binomial size 2, mean count about 4; set.seed(20240))
    grouse    TICKS ~ YEAR + (1|BROOD) + (1|LOCATION), lme4::glmer.nb (lme4::grouseticks, 403 rows)

For each model and setting it times (medians over ``--reps`` interleaved repetitions, so that
changes in machine load hit every column alike):

    plain R   ``glmer(...)`` / ``glmer.nb(...)`` + ``summary()`` inside the embedded R, data
              already in R (lme4's own data frames), timed with R's ``proc.time()``; the default
              setting is called without ``control``, the other with
              ``control = glmerControl(optimizer = "bobyqa")``
    me.glmm   ``me.glmm(formula, data, family)`` and ``me.glmm(..., optimizer="bobyqa")`` on a
              pandas copy of the same data (written by R to a CSV, factors as strings with R's
              level order passed as ``levels=``, so that the model matrices, the random-effect
              columns and hence the optimizer path are R's), timed with ``perf_counter``

and prints seconds, the ratio bobyqa / default (per side), the ratio me.glmm / plain R (per
setting), the largest relative difference of the fixed effects between the two settings (and in
units of their standard errors, and the logLik difference), and a check that me.glmm reproduces
plain R of the same setting. Load average before and after; timings are never asserted.

Run: .venv/bin/python benchmarks/bench_glmm_optimizers.py [--reps 5] [--quick]
"""
from __future__ import annotations

import argparse
import datetime
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import mixedeval as me

SETTINGS = ("default", "bobyqa")  # me.glmm optimizer=None / "bobyqa"; plain R without control / bobyqa

# name: (R expression of the data, formula, me.glmm family, R fitting function, factor columns, response recode)
MODELS = {
    "VerbAgg": ("lme4::VerbAgg", "r2 ~ Anger + Gender + btype + situ + (1|id) + (1|item)", "binomial",
                "glmer", ("Gender", "btype", "situ", "id", "item"), "r2"),
    "cbpp": ("lme4::cbpp", "cbind(incidence, size - incidence) ~ period + (1|herd)", "binomial",
             "glmer", ("period", "herd"), None),
    "nb sim": ("bench_nb_sim", "count ~ system + (1|item)", "negative_binomial", "glmer.nb",
               ("system", "item"), None),
    "grouse": ("lme4::grouseticks", "TICKS ~ YEAR + (1|BROOD) + (1|LOCATION)", "negative_binomial",
               "glmer.nb", ("YEAR", "BROOD", "LOCATION"), None),
}

R_SIMULATE_NB = """
local({
  set.seed(20240)
  d <- expand.grid(system = sprintf("sys%02d", 1:10), item = sprintf("item%03d", 1:200), stringsAsFactors = TRUE)
  u <- stats::rnorm(200, 0, 0.7)
  b <- seq(0, 0.45, length.out = 10)
  mu <- exp(1.2 + b[as.integer(d$system)] + u[as.integer(d$item)])
  d$count <- stats::rnbinom(nrow(d), size = 2, mu = mu)
  d
})
"""

# one plain-R fit + summary; returns list(elapsed, fixef, se, logLik, warnings)
R_FIT = """
function(data, formula, fun, bobyqa) {
  f <- stats::as.formula(formula)
  ws <- character(0)
  t0 <- proc.time()[["elapsed"]]
  m <- withCallingHandlers({
    if (fun == "glmer.nb") {
      if (bobyqa) lme4::glmer.nb(f, data = data, control = lme4::glmerControl(optimizer = "bobyqa"))
      else lme4::glmer.nb(f, data = data)
    } else {
      if (bobyqa) lme4::glmer(f, data = data, family = stats::binomial,
                              control = lme4::glmerControl(optimizer = "bobyqa"))
      else lme4::glmer(f, data = data, family = stats::binomial)
    }
  }, warning = function(w) { ws <<- c(ws, conditionMessage(w)); invokeRestart("muffleWarning") })
  s <- summary(m)
  el <- proc.time()[["elapsed"]] - t0
  cf <- stats::coef(s)
  list(elapsed = el, fixef = unname(cf[, 1]), se = unname(cf[, 2]), loglik = as.numeric(stats::logLik(m)),
       warnings = ws)
}
"""


def load_data(ro, tmp: Path) -> dict[str, tuple[pd.DataFrame, dict]]:
    """Each model's data as pandas (via a CSV written by R) and the R level order of its factors."""
    ro.globalenv["bench_nb_sim"] = ro.r(R_SIMULATE_NB)
    out = {}
    for name, (r_data, _formula, _fam, _fun, factors, recode) in MODELS.items():
        path = tmp / f"{name.replace(' ', '_')}.csv"
        ro.r(f"function(p) utils::write.csv({r_data}, p, row.names = FALSE)")(str(path))
        df = pd.read_csv(path, dtype={c: str for c in (*factors, *(() if recode is None else (recode,)))},
                         keep_default_na=False)
        levels = {c: [str(x) for x in ro.r(f"function() levels({r_data}${c})")()] for c in factors}
        if recode is not None:  # glmer's binomial family: first level = failure
            first = str(ro.r(f"function() levels({r_data}${recode})[1]")()[0])
            df[recode] = (df[recode] != first).astype(int)
        out[name] = (df, levels)
    return out


def rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 repetitions")
    args = ap.parse_args()
    reps = 2 if args.quick else args.reps
    load_before = os.getloadavg()

    me.glmm("y ~ (1|g)", pd.DataFrame({"y": [0, 1, 1, 0, 1, 0, 0, 1], "g": list("aabbccdd")}))  # starts R, lme4
    import rpy2.robjects as ro

    with tempfile.TemporaryDirectory() as tmp:
        data = load_data(ro, Path(tmp))
    r_fit = ro.r(R_FIT)

    def run_r(name: str, setting: str) -> dict:
        r_data, formula, _fam, fun, _f, _r = MODELS[name]
        res = r_fit(ro.r(r_data), formula, fun, setting == "bobyqa")
        # copies: np.asarray of an R vector is a view of R memory, reused once R collects the result
        return {"t": float(res.rx2("elapsed")[0]), "fixef": np.array(list(res.rx2("fixef")), float),
                "se": np.array(list(res.rx2("se")), float), "loglik": float(res.rx2("loglik")[0]),
                "warnings": [str(w) for w in res.rx2("warnings")]}

    def run_me(name: str, setting: str) -> dict:
        _r, formula, fam, _fun, _f, _rc = MODELS[name]
        df, levels = data[name]
        t0 = time.perf_counter()
        fit = me.glmm(formula, df, fam, levels=levels, optimizer=None if setting == "default" else "bobyqa")
        t = time.perf_counter() - t0
        return {"t": t, "fixef": fit.fixed["estimate"].to_numpy(float), "se": fit.fixed["std_error"].to_numpy(float),
                "loglik": fit.loglik, "optimizer": fit.optimizer, "converged": fit.converged,
                "warnings": [w.kind if hasattr(w, "kind") else str(w) for w in fit.warnings]}

    times: dict[tuple[str, str, str], list[float]] = {}
    last: dict[tuple[str, str, str], dict] = {}
    for name in ("cbpp", "grouse"):  # warm-up of both code paths (glmer, glmer.nb) on the small models
        for setting in SETTINGS:
            last[name, setting, "R"] = run_r(name, setting)
            last[name, setting, "me"] = run_me(name, setting)
    for _ in range(reps):
        for name in MODELS:
            for setting in SETTINGS:
                for side, fun in (("R", run_r), ("me", run_me)):
                    res = fun(name, setting)
                    times.setdefault((name, setting, side), []).append(res["t"])
                    last[name, setting, side] = res
    load_after = os.getloadavg()
    med = {k: float(np.median(v)) for k, v in times.items()}

    print(f"GLMM optimizer settings: glmer default (bobyqa + Nelder-Mead) vs bobyqa for both stages; "
          f"median of {reps} interleaved runs, fit + summary")
    for name, (_r, formula, fam, fun, _f, _rc) in MODELS.items():
        print(f"  {name:<8}: {fun}({formula}) [{len(data[name][0]):,} rows]")
    print()
    hdr = (f"  {'model':<8} {'setting':<8} {'plain R s':>10} {'me.glmm s':>10} {'me/R':>6}   "
           f"{'bobyqa/default: R':>17} {'me.glmm':>8}")
    print(hdr)
    print("  " + "-" * (len(hdr) - 2))
    for name in MODELS:
        for setting in SETTINGS:
            r_t, m_t = med[name, setting, "R"], med[name, setting, "me"]
            ratio = ""
            if setting == "bobyqa":
                ratio = (f"{r_t / med[name, 'default', 'R']:17.2f} "
                         f"{m_t / med[name, 'default', 'me']:8.2f}")
            print(f"  {name:<8} {setting:<8} {r_t:10.3f} {m_t:10.3f} {m_t / r_t:6.2f}   {ratio}")
    print()
    print("  fixed effects, bobyqa vs default          |  me.glmm vs plain R, same setting")
    print(f"  {'model':<8} {'max rel':>9} {'max |d|/SE':>10} {'dlogLik':>9}  | {'default':>9} {'bobyqa':>9}  "
          "warnings (R default / R bobyqa)")
    for name in MODELS:
        a, b = last[name, "bobyqa", "R"], last[name, "default", "R"]
        d_se = float(np.max(np.abs(a["fixef"] - b["fixef"]) / b["se"]))
        same = [rel_diff(last[name, s, "me"]["fixef"], last[name, s, "R"]["fixef"]) for s in SETTINGS]
        wtxt = " / ".join(str(len(last[name, s, "R"]["warnings"])) for s in SETTINGS)
        print(f"  {name:<8} {rel_diff(a['fixef'], b['fixef']):9.2e} {d_se:10.2e} {a['loglik'] - b['loglik']:9.2e}  | "
              f"{same[0]:9.1e} {same[1]:9.1e}  {wtxt}")
        for s in SETTINGS:
            for w in last[name, s, "R"]["warnings"]:
                print(f"      R {s} warning: {w[:150]}")
            m = last[name, s, "me"]
            if m["warnings"] or not m["converged"]:
                print(f"      me.glmm {s} ({m['optimizer']}): converged={m['converged']} warnings={m['warnings']}")
    print(f"\n  me.glmm optimizer recorded: default -> {last['VerbAgg', 'default', 'me']['optimizer']!r}, "
          f"bobyqa -> {last['VerbAgg', 'bobyqa', 'me']['optimizer']!r}")
    print(f"  load average before: {', '.join(f'{x:.2f}' for x in load_before)}; after: "
          f"{', '.join(f'{x:.2f}' for x in load_after)} ({os.cpu_count()} CPUs); {datetime.date.today()}; "
          "wall times are only comparable on an idle machine")


if __name__ == "__main__":
    main()
