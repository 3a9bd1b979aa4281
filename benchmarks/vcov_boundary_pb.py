"""Standard errors of GLMM fixed effects near the boundary against a parametric bootstrap.

lme4's glmer takes the covariance of the fixed effects from a finite-difference Hessian of the
deviance; at a boundary (a variance component estimated at ~0) or on a flat optimum those
standard errors can collapse. mixedeval checks every glmer fit (``me_glmm_vcov_check`` in
``r/glmm.R``): a non-positive-definite Hessian, or a standard error more than 10% away from the
RX-based one (``vcov(m, use.hessian = FALSE)``), makes the fit use the RX-based covariance and
carry a ``vcov_unstable`` warning. This script checks the standard errors that ``me.glmm``
reports on simulated binary designs typical of LLM evaluation logs, near the boundary:

    a  3 systems x 60 questions x 3 epochs, item SD 1.5, true system:item variance 0.05 (tiny);
       y ~ system + (1|item) + (1|system:item)
    b  the same data shape, true system:item variance 0; the old mis-specified model with
       sysrun = system x epoch (true variance 0): y ~ system + (1|item) + (1|sysrun)
    c  3 systems x 4 runs x 60 questions (one answer per run), item SD 1.2, true run SD 0.1;
       y ~ system + (1|item) + (1|sysrun)
    d  ill-conditioned: accuracy near 0.95 (intercept 3.5, item SD 1.5), 3 systems x 60 x 3 epochs,
       true system:item variance 0; y ~ system + (1|item) + (1|system:item)

(system effects 0, 0.5, 1.0 on the logit scale in a-c; 0, 0.3, 0.6 in d). For every design and
data-set replicate (``--reps``, numpy ``random_state`` + replicate) it

  1. fits ``me.glmm(formula, df)`` (default optimizer) and records the chosen SEs of the system
     coefficients (``fit.fixed["std_error"]``) and whether ``vcov_unstable`` was raised;
  2. refits the same call with ``lme4::glmer`` in the same embedded R (same data, same optimum:
     the estimates are checked against me.glmm's) and takes the Hessian-based SEs (the inverse of
     ``m@optinfo$derivs$Hessian``, as ``vcov.merMod`` does, NA when not positive definite) and
     the RX-based SEs (``vcov(m, use.hessian = FALSE)``);
  3. parametric bootstrap: ``simulate(m, nsim = B, seed = random_state)`` and ``lme4::refit(m, y)``
     for each draw; the SD of the B bootstrap fixed effects (relative Monte-Carlo SE of an SD
     from B draws about 1/sqrt(2B): 4% at B = 300).

The parametric bootstrap simulates from the *fitted* model, so when a component that is really
non-zero is estimated at 0 it cannot see the missing variance. As an independent reference,
``--oracle`` data sets per design are simulated in numpy from the *true* model (random effects
redrawn, same design) and refitted (``lme4::refit`` of the replicate-0 model): the SD of those
estimates is the estimator's true sampling SD for that design ("oracle SD").

Tables: one row per design x replicate x system term (SE chosen / Hessian / RX, PB SD, ratio
chosen / PB SD, estimated SD of the boundary component, vcov_unstable), then a summary per design
and term over replicates (median, min, max of chosen / PB SD; mean chosen SE / oracle SD; how many
fits were flagged). Work is spread over ``--jobs`` worker processes (each with its own R); numbers
do not depend on the number of jobs. Load average printed; timings are never asserted.

Run: .venv/bin/python benchmarks/vcov_boundary_pb.py [--B 300] [--reps 5] [--oracle 100]
     [--random-state 2026] [--jobs 2] [--designs a,b,c,d]
"""
from __future__ import annotations

import argparse
import datetime
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

# name: (description, formula, boundary component, n_systems, n_items, n_epochs_or_runs, "epoch"/"run",
#        intercept, system effects, item SD, true SD of the boundary component (system:item or sysrun))
DESIGNS = {
    "a": ("3x60x3 epochs, sys:item var 0.05", "y ~ system + (1|item) + (1|system:item)", "system:item",
          60, 3, "epoch", 0.0, (0.0, 0.5, 1.0), 1.5, np.sqrt(0.05)),
    "b": ("3x60x3 epochs, (1|sysrun) var 0", "y ~ system + (1|item) + (1|sysrun)", "sysrun",
          60, 3, "epoch", 0.0, (0.0, 0.5, 1.0), 1.5, 0.0),
    "c": ("3x4 runs x60, run SD 0.1", "y ~ system + (1|item) + (1|sysrun)", "sysrun",
          60, 4, "run", 0.0, (0.0, 0.5, 1.0), 1.2, 0.1),
    "d": ("acc ~0.95, sys:item var 0", "y ~ system + (1|item) + (1|system:item)", "system:item",
          60, 3, "epoch", 3.5, (0.0, 0.3, 0.6), 1.5, 0.0),
}

R_HELPERS = r"""
vpb_se <- function(m) {
  ntheta <- length(lme4::getME(m, "theta"))
  se_rx <- sqrt(diag(as.matrix(suppressWarnings(vcov(m, use.hessian = FALSE)))))
  h <- m@optinfo$derivs$Hessian
  se_h <- rep(NA_real_, length(se_rx))
  hi <- if (is.null(h)) NULL else tryCatch(solve(h), error = function(e) NULL)
  if (!is.null(hi) && !anyNA(hi)) {
    i <- -seq_len(ntheta)
    vh <- 2 * hi[i, i, drop = FALSE]
    vh <- (vh + t(vh)) / 2
    ev <- eigen(vh, symmetric = TRUE, only.values = TRUE)$values
    if (all(is.finite(ev)) && min(ev) > 0) se_h <- sqrt(diag(vh))
  }
  vc <- as.data.frame(lme4::VarCorr(m))
  list(se_h = unname(se_h), se_rx = unname(se_rx), fixef = unname(lme4::fixef(m)),
       comp_sd = vc$sdcor, comp_name = as.character(vc$grp), singular = lme4::isSingular(m, tol = 1e-4))
}
vpb_refits <- function(m, ys) {
  out <- matrix(NA_real_, length(lme4::fixef(m)), ncol(ys))
  for (k in seq_len(ncol(ys))) {
    r <- tryCatch(suppressWarnings(suppressMessages(lme4::refit(m, ys[, k]))), error = function(e) NULL)
    if (!is.null(r)) out[, k] <- lme4::fixef(r)
  }
  out
}
vpb_pb <- function(m, B, seed) {
  ys <- stats::simulate(m, nsim = B, seed = seed)
  vpb_refits(m, as.matrix(as.data.frame(ys)))
}
"""


def simulate(design: str, rng: np.random.Generator) -> pd.DataFrame:
    _, _, _, n_items, n_rep, rep_kind, icpt, eff, sd_item, sd_comp = DESIGNS[design]
    systems = ("a", "b", "c")
    u = rng.normal(0, sd_item, n_items)
    rows = []
    if rep_kind == "epoch":  # boundary component system:item (a, d) or sysrun = system x epoch (b)
        v = rng.normal(0, sd_comp, (len(systems), n_items)) if sd_comp > 0 else np.zeros((len(systems), n_items))
        for i in range(n_items):
            for s, name in enumerate(systems):
                for e in range(n_rep):
                    p = 1 / (1 + np.exp(-(icpt + eff[s] + u[i] + v[s, i])))
                    rows.append((name, f"q{i:02d}", f"{name}_{e + 1}", int(rng.random() < p)))
    else:  # runs: one answer per item and run, run effect sd_comp
        w = rng.normal(0, sd_comp, (len(systems), n_rep))
        for i in range(n_items):
            for s, name in enumerate(systems):
                for r in range(n_rep):
                    p = 1 / (1 + np.exp(-(icpt + eff[s] + u[i] + w[s, r])))
                    rows.append((name, f"q{i:02d}", f"{name}_{r + 1}", int(rng.random() < p)))
    return pd.DataFrame(rows, columns=["system", "item", "sysrun", "y"])


def true_responses(design: str, df: pd.DataFrame, n: int, rng: np.random.Generator) -> np.ndarray:
    """n response vectors (columns) from the true model on the design of df, random effects redrawn."""
    _, _, _, n_items, n_rep, rep_kind, icpt, eff, sd_item, sd_comp = DESIGNS[design]
    s = df["system"].map({"a": 0, "b": 1, "c": 2}).to_numpy()
    i = df["item"].str[1:].astype(int).to_numpy()
    r = df["sysrun"].str.split("_").str[1].astype(int).to_numpy() - 1
    u = rng.normal(0, sd_item, (n, n_items))
    eta = icpt + np.asarray(eff)[s][None, :] + u[:, i]
    if rep_kind == "epoch" and design != "b":  # system:item
        eta = eta + rng.normal(0, sd_comp, (n, 3, n_items))[:, s, i]
    else:  # sysrun (b: sd 0)
        eta = eta + rng.normal(0, sd_comp, (n, 3, n_rep))[:, s, r]
    return (rng.random(eta.shape) < 1 / (1 + np.exp(-eta))).astype(float).T


def _r_setup():
    import rpy2.robjects as ro

    from mixedeval.engine import session

    session._start()
    ro.r(R_HELPERS)
    return ro


def _fit_in_r(ro, design: str, df: pd.DataFrame, name: str):
    from mixedeval.engine import convert

    ro.globalenv[name] = convert.to_r(df)
    formula = DESIGNS[design][1]
    ro.r(f"{name}_m <- lme4::glmer({formula}, data = {name}, family = binomial)")  # R's defaults, as me.glmm
    return ro.r(f"vpb_se({name}_m)")


def replicate_task(design: str, rep: int, B: int, random_state: int) -> list[dict]:
    import mixedeval as me

    ro = _r_setup()
    df = simulate(design, np.random.default_rng([random_state, ord(design), rep]))
    t0 = time.perf_counter()
    fit = me.glmm(DESIGNS[design][1], df)
    unstable = any(w.kind == "vcov_unstable" for w in fit.warnings)
    name = f"vpb_{design}{rep}"
    se = _fit_in_r(ro, design, df, name)
    fixef_r = np.array(se.rx2("fixef"), copy=True)
    same = float(np.max(np.abs(fixef_r - fit.fixed["estimate"].to_numpy()) / np.maximum(np.abs(fixef_r), 1e-3)))
    comp = DESIGNS[design][2]
    names = [str(x) for x in se.rx2("comp_name")]
    comp_sd = float(np.array(se.rx2("comp_sd"), copy=True)[names.index(comp)])
    boot = np.array(ro.r(f"vpb_pb({name}_m, {B}, {int(random_state) + rep})"), copy=True)
    ro.r(f"rm({name}, {name}_m)")
    ok = ~np.isnan(boot).any(axis=0)
    pb_sd = boot[:, ok].std(axis=1, ddof=1)
    se_h = np.array(se.rx2("se_h"), copy=True)
    se_rx = np.array(se.rx2("se_rx"), copy=True)
    rows = []
    for k, term in enumerate(fit.fixed["term"]):
        if not str(term).startswith("system"):
            continue
        rows.append({"design": design, "rep": rep, "term": term, "estimate": float(fit.fixed["estimate"].iloc[k]),
                     "se_chosen": float(fit.fixed["std_error"].iloc[k]), "se_hessian": float(se_h[k]),
                     "se_rx": float(se_rx[k]), "pb_sd": float(pb_sd[k]), "n_refits": int(ok.sum()),
                     "comp_sd_hat": comp_sd, "vcov_unstable": unstable, "same_optimum": same,
                     "seconds": time.perf_counter() - t0})
    return rows


def oracle_task(design: str, n: int, random_state: int) -> list[dict]:
    """The estimator's sampling SD: refits of the replicate-0 model to n true-model responses."""
    ro = _r_setup()
    df = simulate(design, np.random.default_rng([random_state, ord(design), 0]))
    name = f"vpb_o{design}"
    _fit_in_r(ro, design, df, name)
    ys = true_responses(design, df, n, np.random.default_rng([random_state, ord(design), 10_000]))
    ro.globalenv[f"{name}_y"] = ro.r.matrix(ro.FloatVector(ys.ravel(order="F")), nrow=ys.shape[0])
    est = np.array(ro.r(f"vpb_refits({name}_m, {name}_y)"), copy=True)
    ro.r(f"rm({name}, {name}_m, {name}_y)")
    est = est[:, ~np.isnan(est).any(axis=0)]
    sd = est.std(axis=1, ddof=1)
    return [{"design": design, "term": t, "oracle_sd": float(sd[k]), "n_oracle": est.shape[1]}
            for k, t in enumerate(["(Intercept)", "systemb", "systemc"]) if t.startswith("system")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--B", type=int, default=300, help="parametric-bootstrap refits per fitted data set")
    ap.add_argument("--reps", type=int, default=5, help="simulated data sets per design")
    ap.add_argument("--oracle", type=int, default=100, help="true-model data sets per design (0: skip)")
    ap.add_argument("--random-state", type=int, default=2026)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (each with its own embedded R)")
    ap.add_argument("--designs", default="a,b,c,d")
    args = ap.parse_args()
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max(1, args.jobs), mp_context=ctx) as pool:
        oracle = [pool.submit(oracle_task, d, args.oracle, args.random_state) for d in designs if args.oracle > 0]
        reps = [pool.submit(replicate_task, d, r, args.B, args.random_state) for d in designs for r in range(args.reps)]
        rows = []
        for f in reps:  # progress on stderr, so that a long run shows its numbers as they come
            rows += f.result()
            print("  done", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in rows[-1].items()},
                  file=sys.stderr, flush=True)
        orows = [row for f in oracle for row in f.result()]
    wall = time.perf_counter() - t0
    tab = pd.DataFrame(rows)
    tab["ratio_chosen_pb"] = tab["se_chosen"] / tab["pb_sd"]
    tab["ratio_rx_pb"] = tab["se_rx"] / tab["pb_sd"]
    tab["ratio_h_pb"] = tab["se_hessian"] / tab["pb_sd"]
    pd.set_option("display.width", 220)
    pd.set_option("display.max_columns", 30)
    pd.set_option("display.max_rows", 500)
    print(f"vcov near the boundary vs parametric bootstrap ({datetime.date.today()}; B = {args.B}, reps = {args.reps}, "
          f"oracle = {args.oracle}, random_state = {args.random_state}, jobs = {args.jobs})")
    for d in designs:
        print(f"  {d}: {DESIGNS[d][0]:<36} {DESIGNS[d][1]}")
    print("\nper data set (SEs of the system coefficients; comp_sd_hat = estimated SD of the boundary component):")
    cols = ["design", "rep", "term", "se_chosen", "se_hessian", "se_rx", "pb_sd", "ratio_chosen_pb", "comp_sd_hat",
            "vcov_unstable", "n_refits", "same_optimum"]
    print(tab[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    g = tab.groupby(["design", "term"], sort=True)
    summ = pd.DataFrame({
        "n_flagged": g["vcov_unstable"].sum().astype(int), "reps": g.size(),
        "mean_se_chosen": g["se_chosen"].mean(), "mean_se_h": g["se_hessian"].mean(), "mean_se_rx": g["se_rx"].mean(),
        "mean_pb_sd": g["pb_sd"].mean(),
        "chosen_pb_med": g["ratio_chosen_pb"].median(), "chosen_pb_min": g["ratio_chosen_pb"].min(),
        "chosen_pb_max": g["ratio_chosen_pb"].max(), "h_pb_min": g["ratio_h_pb"].min(),
        "h_pb_max": g["ratio_h_pb"].max(), "sd_est_over_reps": g["estimate"].std(),
    }).reset_index()
    if orows:
        summ = summ.merge(pd.DataFrame(orows), on=["design", "term"], how="left")
        summ["chosen_oracle"] = summ["mean_se_chosen"] / summ["oracle_sd"]
        summ["pb_oracle"] = summ["mean_pb_sd"] / summ["oracle_sd"]
    print("\nsummary over data-set replicates (ratios are SE / parametric-bootstrap SD; h_pb: Hessian-based, "
          "NaN where not PD; oracle_sd: SD over true-model data sets):")
    print(summ.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    r = tab["ratio_chosen_pb"]
    print(f"\nall fits: chosen / PB SD median {r.median():.3f}, range [{r.min():.3f}, {r.max():.3f}]; "
          f"flagged vcov_unstable {int(tab.drop_duplicates(['design', 'rep'])['vcov_unstable'].sum())} of "
          f"{tab.drop_duplicates(['design', 'rep']).shape[0]} fits; largest |fixef(me.glmm) - fixef(glmer)| rel "
          f"{tab['same_optimum'].max():.2g}")
    print(f"wall {wall:.0f} s; load average (1, 5, 15 min): before {tuple(round(x, 2) for x in load0)}, "
          f"after {tuple(round(x, 2) for x in os.getloadavg())} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
