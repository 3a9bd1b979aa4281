"""Speed of me.irt against the same R calls in plain R, and of the numpy engine (issue 32, point 6).

Data: simulated 2PL answers (abilities N(0, 1), discriminations lognormal(0, 0.5), difficulties
N(0, 1); one 0/1 answer per system and item). Timed, in this run:

* ``plain R``: ``Rscript`` running the R work of me.irt's R engine, timed inside R around the fit
  (R's start-up and reading the CSV left out): ``glmer(y ~ 1 + (1 | item) + (1 | system),
  binomial)`` with ``vcov()`` and ``ranef(condVar = TRUE)`` (Rasch), ``glmmTMB(y ~ 0 + item +
  rr(0 + item | system, d = 1), binomial)`` (2PL, sdreport included as glmmTMB does by default).
  Each Rscript run has a wall-clock limit (``--r-timeout``) and an address-space limit
  (``--r-max-gb``); a run that hits one is reported as ``timeout`` / ``memory`` with NaN times.
* ``me.irt``: ``me.irt(..., n_sim=0)`` with the R engine in this process (R already started; the
  time includes the data preparation, the conversion to R, the item and ability tables and the
  leaderboard). Ratio = me.irt / plain R (target <= 1.1). Run only where plain R finished.
* ``numpy``: ``me.irt(..., engine="numpy")`` (default ``nagq=1``: the same Laplace likelihood,
  maximised by the numpy engine; item parameters equal to glmmTMB's within 3e-6 and glmer's
  within 5e-4, tests/test_irt_engines.py). Speed-up = plain R / numpy; the largest absolute
  differences of its discriminations and intercepts (``-discrimination x difficulty``, what the fits
  estimate) from me.irt's R fit at R's default tolerances, and the median one of the difficulties
  (the largest is meaningless: an item with slope 0.0017 has difficulty 362 with SE 45,000), over
  the items whose numpy slope is not at the engine's bound of 20 (an item that separates the
  systems perfectly: glmmTMB's slope runs on, e.g. to 35, with a log-likelihood up to 0.1 higher;
  ``items_at_bound`` counts them); ``numpy_fit_s``:
  the engine alone (``_irt_numpy.irt_numpy``), without me.irt's item table and leaderboard (whose
  simultaneous rank intervals and letters take most of me.irt's time at 100 systems).

The 2PL is timed at ``--sizes-2pl`` item counts (100 systems each): glmmTMB 1.1.5's reduced-rank
term grows faster than linearly in the items (its per-system random-effect block has one latent
value per item), so the log-log slope of plain R's time over the sizes is printed and the time at
2,000 items extrapolated from it when plain R does not finish there within the limit.

    .venv/bin/python benchmarks/bench_irt.py [--systems 100] [--items 2000] [--sizes-2pl 100 200 400 2000]
        [--r-timeout 1800] [--quick]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import tempfile
import textwrap
import time

import numpy as np
import pandas as pd

import mixedeval as me
from mixedeval.inference._irt_numpy import ALPHA_MAX, irt_numpy

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


def plain_r(df: pd.DataFrame, model: str, timeout: float, max_gb: float) -> tuple[float, float, str]:
    """(seconds inside R, logLik, status): status "ok", "timeout" (the run hit ``timeout`` seconds)
    or "memory" (R could not allocate within ``max_gb`` GB of address space; nan times then)."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (int(max_gb * 2 ** 30), int(max_gb * 2 ** 30)))

    with tempfile.TemporaryDirectory() as tmp:
        csv, script = os.path.join(tmp, "d.csv"), os.path.join(tmp, "fit.R")
        df.to_csv(csv, index=False)
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(R_CODE)
        try:
            out = subprocess.run(["Rscript", script, csv, model], capture_output=True, text=True, check=True,
                                 timeout=timeout, preexec_fn=limit).stdout
        except subprocess.TimeoutExpired:
            return float("nan"), float("nan"), "timeout"
        except subprocess.CalledProcessError as exc:
            err = exc.stderr.lower()
            if any(k in err for k in ("allocate", "memory", "bad_alloc")) or exc.returncode < 0:
                return float("nan"), float("nan"), "memory"
            return float("nan"), float("nan"), "error: " + (exc.stderr.strip().splitlines() or ["?"])[-1][:80]
    sec, ll = out.split()[:2]
    return float(sec), float(ll), "ok"


def _timed(df: pd.DataFrame, model: str, **kw) -> tuple[float, me.IrtResult]:
    t0 = time.perf_counter()
    res = me.irt(df, model, n_sim=0, progress=False, **kw)
    return time.perf_counter() - t0, res


def bench(n_sys: int, n_items: int, model: str, timeout: float, numpy: bool, max_gb: float) -> dict:
    df = simulate(n_sys, n_items)
    r_sec, r_ll, status = plain_r(df, model, timeout, max_gb)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2 ** 20  # largest R run so far (KiB -> GiB)
    row = {"model": model, "systems": n_sys, "items": n_items, "plain_r_s": r_sec, "plain_r": status,
           "r_peak_gb_so_far": round(peak, 2)}
    if np.isfinite(r_sec):
        me_sec, res = _timed(df, model)
        row.update({"mixedeval_s": me_sec, "ratio": me_sec / r_sec, "loglik_diff": abs(res.loglik - r_ll)})
    if numpy:
        np_model = "2pl" if model == "2pl" else "rasch_fixed"
        np_sec, rn = _timed(df, np_model, engine="numpy")
        t0 = time.perf_counter()
        irt_numpy(df, "2pl" if model == "2pl" else "rasch", n_quadrature=1)
        row.update({"numpy_s": np_sec, "numpy_fit_s": time.perf_counter() - t0,
                    "speedup_vs_plain_r": r_sec / np_sec if np.isfinite(r_sec) else np.nan})
        if model == "2pl" and "mixedeval_s" in row:
            a_r, b_r = res.parameters()
            a_n, b_n = rn.parameters()
            free = np.abs(a_n) < 0.99 * ALPHA_MAX  # items whose numpy slope stopped at the bound are left out
            row["items_at_bound"] = int((~free & np.isfinite(a_n)).sum())
            row["max_diff_discrimination"] = float(np.nanmax(np.abs(a_r - a_n)[free]))
            row["max_diff_intercept"] = float(np.nanmax(np.abs(a_r * b_r - a_n * b_n)[free]))
            row["median_diff_difficulty"] = float(np.nanmedian(np.abs(b_r - b_n)[free]))
            row["loglik_numpy_minus_r"] = rn.loglik - res.loglik
    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return row


def scaling(rows: list[dict], target_items: int) -> str:
    """Log-log slope of plain R's 2PL time in the items and the extrapolation to ``target_items``."""
    t = pd.DataFrame(rows)
    t = t[(t["model"] == "2pl") & np.isfinite(t["plain_r_s"])]
    if len(t) < 2:
        return "2PL scaling: fewer than two sizes finished in plain R"
    slope, icpt = np.polyfit(np.log(t["items"]), np.log(t["plain_r_s"]), 1)
    pred = float(np.exp(icpt + slope * np.log(target_items)))
    done = t[t["items"] == target_items]
    tail = (f"measured {float(done['plain_r_s'].iloc[0]):.0f} s" if len(done)
            else f"extrapolated {pred / 3600:.1f} h")
    return (f"2PL plain-R time ~ items^{slope:.2f} over {sorted(t['items'].tolist())} items (100 systems); at "
            f"{target_items} items: {tail}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=100)
    ap.add_argument("--items", type=int, default=2000, help="items of the Rasch comparison")
    ap.add_argument("--sizes-2pl", type=int, nargs="+", default=[100, 200, 400, 2000],
                    help="item counts of the 2PL comparison")
    ap.add_argument("--r-timeout", type=float, default=1800.0, help="wall-clock limit of one Rscript run (s)")
    ap.add_argument("--r-max-gb", type=float, default=8.0,
                    help="address-space limit of one Rscript run (GB): glmmTMB's 2PL at 100 x 2,000 items passed "
                         "12 GB resident within its first CPU minute on the shared machine")
    ap.add_argument("--quick", action="store_true", help="Rasch at 100 x 500, 2PL at 100 x 50 and 100 items")
    args = ap.parse_args()
    if args.quick:
        args.items, args.sizes_2pl = 500, [50, 100]
    me.irt(simulate(10, 5), "rasch", n_sim=0, progress=False)  # start R and load the packages first
    me.irt(simulate(10, 5), "2pl", n_sim=0, progress=False)
    rows = [bench(args.systems, args.items, "rasch", args.r_timeout, True, args.r_max_gb)]
    rows += [bench(args.systems, k, "2pl", args.r_timeout, True, args.r_max_gb) for k in args.sizes_2pl]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(scaling(rows, max(args.sizes_2pl)))
    print("ratio = me.irt (R engine) / plain Rscript, target <= 1.1; speedup = plain Rscript / me.irt(engine='numpy') "
          "(rasch row: the numpy engine fits the fixed-item Rasch model, a different model from glmer's random items); "
          "plain R times that hit --r-timeout are NaN")


if __name__ == "__main__":
    main()
