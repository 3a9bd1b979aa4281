"""Issue 7 benchmark: the full language-disparity analysis of the bundled Hu et al. (2025) records
(1,364 records) with a 200-replicate parametric bootstrap, printed with the time spent in R refits.

Stages timed: the analysis (ML fit, PP/PRR/LP, diagnostics), the robustness refit (k = 10), and
the bootstrap (lme4::simulate, the R refit loop, the numpy recomputation). Baseline measured in
the same run and process: the bare R loop ``for (i in 1:200) lme4::refit(m, ysim[, i])`` on the
same model and simulations; the ratio shows the cost of our loop (warnings capture, VarCorr,
isSingular per replicate, chunked calls) and of everything around it.

Optionally (``--coverage N``) a coverage study: N synthetic data sets from a known
``score ~ language + task + (1|model)`` model (``--coverage-models`` models x 6 languages x 4
tasks, model SD 5, residual SD 4), each with a 100-replicate bootstrap; prints the coverage of the
95% percentile intervals for the language potential (all-tasks convention, whose true value is
known). Measured: 0.883 with 8 models (200 data sets), 0.875 with 13 models (100 data sets) --
the percentile interval acts as a z interval on an error dominated by the mean of the model effects,
whose variance (ML, biased low) has about M - 1 df; P(|t_(M-1)| < 1.96 sqrt((M-1)/M)) is 0.89 / 0.92.

Run: .venv/bin/python benchmarks/bench_disparity.py [--n-boot 200] [--coverage 0 --coverage-models 8]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import mixedeval as me
from mixedeval.workflows.language_disparity import language_disparity


def coverage_study(n_data: int, n_boot: int = 100, seed: int = 11, n_models: int = 8) -> None:
    rng = np.random.default_rng(seed)
    lang = np.array([0.0, -4.0, 3.0, -10.0, 6.0, -15.0])
    task = np.array([0.0, 12.0, -8.0, 20.0])
    mu, sd_model, sd_res = 55.0, 5.0, 4.0
    true_lp = mu + lang + task.mean()
    grid = pd.MultiIndex.from_product([range(n_models), range(6), range(4)], names=["m", "l", "t"]).to_frame(index=False)
    hits = np.zeros(len(lang))
    widths = []
    t0 = time.perf_counter()
    for i in range(n_data):
        u = rng.normal(0, sd_model, n_models)
        y = mu + lang[grid["l"]] + task[grid["t"]] + u[grid["m"]] + rng.normal(0, sd_res, len(grid))
        df = pd.DataFrame({"model": "m" + grid["m"].astype(str), "language": "l" + grid["l"].astype(str),
                           "task": "t" + grid["t"].astype(str), "score": y})
        res = language_disparity(df, lp_convention="all_tasks")
        b = res.bootstrap(n_boot=n_boot, seed=1000 + i, progress=False)
        t = b.languages.set_index("language").loc[[f"l{j}" for j in range(len(lang))]]
        hits += (t["conf_low"].to_numpy() <= true_lp) & (true_lp <= t["conf_high"].to_numpy())
        widths.append(float(np.mean(t["conf_high"] - t["conf_low"])))
    cov = hits / n_data
    print(f"\nCoverage study: {n_data} data sets ({n_models} models x 6 languages x 4 tasks) x {n_boot} refits "
          f"in {time.perf_counter() - t0:.1f} s")
    print(f"  95% percentile-interval coverage of LP per language: {np.round(cov, 3).tolist()}")
    print(f"  mean coverage {cov.mean():.3f} (Monte-Carlo SE ~{np.sqrt(0.95 * 0.05 / n_data):.3f}); "
          f"mean width {np.mean(widths):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--coverage", type=int, default=0, help="number of synthetic data sets (0 = skip)")
    ap.add_argument("--coverage-models", type=int, default=8, help="models per synthetic data set")
    args = ap.parse_args()

    hu = me.datasets.load("hu2025_records")
    language_disparity(hu, drop_aggregates=True)  # warm-up: R start, package loading
    t = time.perf_counter()
    res = language_disparity(hu, drop_aggregates=True)
    t_analysis = time.perf_counter() - t
    t = time.perf_counter()
    res.robustness(k=10)
    t_robust = time.perf_counter() - t
    res.bootstrap(n_boot=10, seed=99, progress=False)  # warm-up of the R loop (byte compilation)

    import rpy2.robjects as ro

    from mixedeval.engine import convert, session

    with session.lock:  # the bare loop on the same model and the same simulations (seed 2025)
        ro.globalenv["bench_m"] = res.fit._model
        ro.globalenv["bench_y"] = convert.to_r(res.fit.simulate(args.n_boot, seed=2025))
    bare = ro.r("function() system.time(for (i in seq_len(ncol(bench_y))) "
                "lme4::refit(bench_m, newresp = bench_y[, i]))[['elapsed']]")
    r_before = float(bare()[0])
    t = time.perf_counter()
    boot = res.bootstrap(n_boot=args.n_boot, seed=2025, progress=True)
    t_boot = time.perf_counter() - t
    r_after = float(bare()[0])  # before and after: the machine's load drifts (2 shared cores)
    r_loop = (r_before + r_after) / 2

    tm = boot.timing
    print(f"Language disparity, Hu et al. (2025) records: {res.fit.nobs} records, "
          f"{len(res.fit.fixed)} fixed effects, {args.n_boot}-replicate parametric bootstrap")
    print(f"  analysis (fit, PP/PRR/LP, diagnostics) : {t_analysis:.3f} s")
    print(f"  robustness refit (k = 10)              : {t_robust:.3f} s")
    print(f"  bootstrap total                        : {t_boot:.2f} s")
    print(f"    lme4::simulate                       : {tm['simulate']:.3f} s ({tm['simulate'] / tm['total']:.1%})")
    print(f"    R refits (me_disparity_refit_fixef)  : {tm['r_refit']:.2f} s ({tm['r_refit'] / tm['total']:.1%}),"
          f" {1000 * tm['r_refit'] / args.n_boot:.1f} ms per refit")
    print(f"    numpy recomputation                  : {tm['numpy']:.3f} s ({tm['numpy'] / tm['total']:.1%})")
    print(f"  full analysis + bootstrap              : {t_analysis + t_robust + t_boot:.2f} s; share in R refits "
          f"{tm['r_refit'] / (t_analysis + t_robust + t_boot):.1%}")
    print(f"  baseline: bare R refit loop in-process : {r_loop:.2f} s (before {r_before:.2f}, after {r_after:.2f})")
    print(f"  ratio bootstrap total / bare R loop    : {t_boot / r_loop:.3f}")
    print(f"  ratio our R refit loop / bare R loop   : {tm['r_refit'] / r_loop:.3f}")
    print(f"  refits: {boot.n_used} used, {boot.n_failed} failed, {boot.n_singular} singular, "
          f"{boot.n_nonconverged} with convergence messages")
    if args.coverage:
        coverage_study(args.coverage, n_models=args.coverage_models)


if __name__ == "__main__":
    main()
