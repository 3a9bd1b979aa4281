"""Speed of me.irt against the same R calls in plain R (issue 32, point 6).

For each model the same simulated 2PL data (abilities N(0, 1), discriminations lognormal(0, 0.5),
difficulties N(0, 1); one 0/1 answer per system and item) is fitted

* by ``me.irt(..., n_sim=0)`` in this process (R already started; the time includes the data
  preparation, the conversion to R, the item and ability tables and the leaderboard), and
* by ``Rscript`` running the same R work: ``glmer(y ~ 1 + (1 | item) + (1 | system), binomial)``
  with ``vcov()`` and ``ranef(condVar = TRUE)`` (Rasch), ``glmmTMB(y ~ 0 + item + rr(0 + item |
  system, d = 1), binomial)`` (2PL, sdreport included as glmmTMB does by default); the R time is
  measured inside R around the fit (R's start-up and reading the CSV are left out).

The ratio is mixedeval's time over plain R's (target <= 1.1). The 2PL default is 100 x 100
items, not 2,000: glmmTMB 1.1.5's reduced-rank term costs O(systems x items^2) per evaluation
(4.8 minutes at 100 x 300 here), so 100 x 2,000 would take hours in plain R as well; pass
``--items-2pl 2000`` to measure it anyway.

    .venv/bin/python benchmarks/bench_irt.py [--systems 100] [--items 2000] [--items-2pl 100]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import textwrap
import time

import numpy as np
import pandas as pd

import mixedeval as me

R_CODE = textwrap.dedent("""
    args <- commandArgs(TRUE)
    d <- read.csv(args[1], colClasses = c("character", "character", "numeric"))
    d$system <- factor(d$system, levels = sort(unique(d$system)))
    d$item <- factor(d$item, levels = sort(unique(d$item)))
    names(d)[3] <- "y"
    t0 <- proc.time()[["elapsed"]]
    if (args[2] == "rasch") {
      m <- lme4::glmer(y ~ 1 + (1 | item) + (1 | system), data = d, family = binomial,
                       control = lme4::glmerControl(check.conv.singular = lme4::.makeCC(action = "ignore", tol = 1e-4)))
      v <- vcov(m); re <- lme4::ranef(m, condVar = TRUE)
      ll <- as.numeric(logLik(m))
    } else {
      m <- glmmTMB::glmmTMB(y ~ 0 + item + rr(0 + item | system, d = 1), data = d, family = binomial)
      ll <- as.numeric(logLik(m))
    }
    cat(proc.time()[["elapsed"]] - t0, ll, "\\n")
""")


def simulate(n_sys: int, n_items: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a, b, th = np.exp(rng.normal(0, 0.5, n_items)), rng.normal(size=n_items), rng.normal(size=n_sys)
    y = (rng.random((n_sys, n_items)) < 1 / (1 + np.exp(-a * (th[:, None] - b)))).astype(int)
    return pd.DataFrame({"system": np.repeat([f"s{i:04d}" for i in range(n_sys)], n_items),
                         "item": np.tile([f"i{j:05d}" for j in range(n_items)], n_sys), "score": y.ravel()})


def plain_r(df: pd.DataFrame, model: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        csv, script = os.path.join(tmp, "d.csv"), os.path.join(tmp, "fit.R")
        df.to_csv(csv, index=False)
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(R_CODE)
        out = subprocess.run(["Rscript", script, csv, model], capture_output=True, text=True, check=True).stdout
    sec, ll = out.split()[:2]
    return float(sec), float(ll)


def bench(n_sys: int, n_items: int, model: str) -> dict:
    df = simulate(n_sys, n_items)
    r_sec, r_ll = plain_r(df, model)
    t0 = time.perf_counter()
    res = me.irt(df, model, n_sim=0, progress=False)
    me_sec = time.perf_counter() - t0
    row = {"model": model, "systems": n_sys, "items": n_items, "mixedeval_s": me_sec, "plain_r_s": r_sec,
           "ratio": me_sec / r_sec, "loglik_diff": abs(res.loglik - r_ll)}
    print(row, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=100)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--items-2pl", type=int, default=100)
    args = ap.parse_args()
    me.irt(simulate(10, 5), "rasch", n_sim=0, progress=False)  # start R and load the packages first
    rows = [bench(args.systems, args.items, "rasch"), bench(args.systems, args.items_2pl, "2pl")]
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()
