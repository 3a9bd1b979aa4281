"""Issue 7 benchmark: the full language-disparity analysis of the bundled Hu et al. (2025) records
(1,364 records) with a 200-replicate parametric bootstrap, printed with the time spent in R refits.

Stages timed: the analysis (ML fit, PP/PRR/LP, diagnostics), the robustness refit (k = 10), the
analytic LP intervals (``potential_intervals``: REML refit + one ``lmerTest::contest`` call), and
the bootstrap (lme4::simulate, the R refit loop, the numpy recomputation). Baseline measured in
the same run and process: the bare R loop ``for (i in 1:200) lme4::refit(m, ysim[, i])`` on the
same model and simulations; the ratio shows the cost of our loop (warnings capture, VarCorr,
isSingular per replicate, chunked calls) and of everything around it.

Optionally (``--coverage N``) a coverage study of the 95% intervals for the language potential
(all-tasks convention, whose true value is known). Designs: ``grid`` -- N synthetic data sets from a
known ``score ~ language + task + (1|model)`` model (``--coverage-models`` models x 6 languages x 4
tasks, model SD 5, residual SD 4); ``hu`` -- N responses simulated (lme4::simulate, new model
effects) from the ML fit of the bundled records, on their unbalanced 13 x 53 x 15 design, truth =
that fit's LP. Methods compared on the same data sets: the parametric-bootstrap percentile
interval (``--coverage-boot`` ML refits; the baseline), and the analytic t intervals of
``potential_intervals``: ML + Satterthwaite, REML + Satterthwaite (the default), REML +
Kenward-Roger (grid only: KR costs ~16 s per fit of the bundled data), and the z interval
``estimate +- 1.96 SE`` of the ML fit. Coverage is the mean over data sets and languages; its
Monte-Carlo SE is the SD of the per-data-set coverage / sqrt(N).

Measured (coverage of nominal 0.95; MC SE 0.007-0.027):

    design (data sets)            bootstrap  z (ML)  t Satt. ML  t Satt. REML  t KR REML
    grid, 8 models (1,200)        0.883*     0.893   0.922       0.941         0.941
    grid, 13 models (100)         0.875      0.897   0.928       0.942         0.942
    bundled design (100)          0.916      0.935   0.942       0.952         --
    * bootstrap: the first 200 data sets only (100 refits each)

Mean width against the bootstrap: z 1.05, ML t 1.07-1.18, REML t 1.11-1.29. Cost per data set:
bootstrap (100 refits) 1.1 s (grid) / 4.9 s (bundled); REML refit + contest 0.05 / 0.25 s.
Split long runs with --coverage-random-state: the R engine's numeric conversion (rpy2's
memoryview_swapstrides) drops a reference to None per vector read, and a process aborts after
roughly 600 grid data sets.

Run: .venv/bin/python benchmarks/bench_disparity.py [--n-resamples 200] [--coverage 0 --coverage-models 8
     --coverage-design grid --coverage-resamples 100]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

import mixedeval as me
from mixedeval.workflows.language_disparity import language_disparity


METHODS = {  # label -> potential_intervals keyword arguments (None: bootstrap; "z": ML estimate +- 1.96 SE)
    "bootstrap percentile (ML)": None,
    "z interval (ML SE)": "z",
    "t, Satterthwaite, ML": {"reml": False},
    "t, Satterthwaite, REML": {},
    "t, Kenward-Roger, REML": {"df_method": "kenward-roger"},
}


def _grid_data(rng, n_models: int, n_data: int):
    lang = np.array([0.0, -4.0, 3.0, -10.0, 6.0, -15.0])
    task = np.array([0.0, 12.0, -8.0, 20.0])
    mu, sd_model, sd_res = 55.0, 5.0, 4.0
    grid = pd.MultiIndex.from_product([range(n_models), range(6), range(4)],
                                      names=["m", "l", "t"]).to_frame(index=False)
    base = pd.DataFrame({"model": "m" + grid["m"].astype(str), "language": "l" + grid["l"].astype(str),
                         "task": "t" + grid["t"].astype(str)})
    truth = pd.Series(mu + lang + task.mean(), index=[f"l{j}" for j in range(6)])
    for _ in range(n_data):
        u = rng.normal(0, sd_model, n_models)
        y = mu + lang[grid["l"]] + task[grid["t"]] + u[grid["m"]] + rng.normal(0, sd_res, len(grid))
        yield base.assign(score=y), truth


def _hu_data(n_data: int, random_state: int):
    hu = me.datasets.load("hu2025_records")
    res = language_disparity(hu, drop_aggregates=True, lp_convention="all_tasks")
    truth = res.language_potential.set_index("language")["potential"]
    base = res.records[["model", "language", "task"]]
    ysim = res.fit.simulate(n_data, random_state=random_state)
    for i in range(n_data):
        yield base.assign(score=ysim[:, i]), truth


def coverage_study(n_data: int, n_resamples: int = 100, random_state: int = 11, n_models: int = 8,
                   design: str = "grid") -> None:
    if design == "grid":
        datasets = _grid_data(np.random.default_rng(random_state), n_models, n_data)
        label = f"{n_models} models x 6 languages x 4 tasks, balanced"
        methods = dict(METHODS)
    else:
        datasets = _hu_data(n_data, random_state)
        label = "the bundled records' design (13 models x 53 languages x 15 tasks, 1,364 records)"
        methods = {k: v for k, v in METHODS.items() if "Kenward" not in k}
    if n_resamples < 2:
        methods.pop("bootstrap percentile (ML)")
    hits = {k: [] for k in methods}
    widths = {k: [] for k in methods}
    secs = dict.fromkeys(methods, 0.0)
    t0 = time.perf_counter()
    for i, (df, truth) in enumerate(tqdm(datasets, total=n_data, desc="coverage data sets", leave=False)):
        res = language_disparity(df, lp_convention="all_tasks")
        true_lp = truth.loc[list(res._design.languages)].to_numpy()
        for name, kw in methods.items():
            t = time.perf_counter()
            if kw is None:
                tab = res.bootstrap(n_resamples=n_resamples, random_state=1000 + i, progress=False).languages
            elif kw == "z":
                tab = res.potential_intervals(reml=False).table
                tab = tab.assign(conf_low=tab["estimate"] - 1.959964 * tab["std_error"],
                                 conf_high=tab["estimate"] + 1.959964 * tab["std_error"])
            else:
                tab = res.potential_intervals(**kw).table
            secs[name] += time.perf_counter() - t
            tab = tab.set_index("language").loc[list(res._design.languages)]
            lo, hi = tab["conf_low"].to_numpy(), tab["conf_high"].to_numpy()
            hits[name].append(np.mean((lo <= true_lp) & (true_lp <= hi)))
            widths[name].append(np.mean(hi - lo))
    print(f"\nCoverage study of 95% LP intervals (all_tasks convention): {n_data} data sets, {label}; "
          f"{time.perf_counter() - t0:.1f} s")
    base = next(iter(methods))
    print(f"  {'method':28s} {'coverage':>9s} {'MC SE':>6s} {'mean width':>10s} {'width ratio':>11s} "
          f"{'s/data set':>10s}")
    for name in methods:
        c = np.asarray(hits[name])
        print(f"  {name:28s} {c.mean():9.3f} {c.std(ddof=1) / np.sqrt(len(c)):6.3f} {np.mean(widths[name]):10.2f} "
              f"{np.mean(widths[name]) / np.mean(widths[base]):11.3f} {secs[name] / n_data:10.3f}")
    print(f"  (width ratio and time against '{base}', measured on the same data sets)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-resamples", type=int, default=200)
    ap.add_argument("--coverage", type=int, default=0, help="number of synthetic data sets (0 = skip)")
    ap.add_argument("--coverage-models", type=int, default=8, help="models per synthetic data set (grid design)")
    ap.add_argument("--coverage-design", choices=("grid", "hu"), default="grid")
    ap.add_argument("--coverage-resamples", type=int, default=100, help="bootstrap refits per data set (0 = skip)")
    ap.add_argument("--coverage-random-state", type=int, default=11, help="random state of the coverage data sets")
    ap.add_argument("--coverage-only", action="store_true", help="skip the timing benchmark")
    args = ap.parse_args()

    if args.coverage_only:
        coverage_study(args.coverage, n_resamples=args.coverage_resamples, random_state=args.coverage_random_state,
                       n_models=args.coverage_models, design=args.coverage_design)
        return
    hu = me.datasets.load("hu2025_records")
    language_disparity(hu, drop_aggregates=True)  # warm-up: R start, package loading
    t = time.perf_counter()
    res = language_disparity(hu, drop_aggregates=True)
    t_analysis = time.perf_counter() - t
    t = time.perf_counter()
    res.robustness(k=10)
    t_robust = time.perf_counter() - t
    t = time.perf_counter()
    res.potential_intervals()  # REML refit + one lmerTest::contest call
    t_intervals = time.perf_counter() - t
    res.bootstrap(n_resamples=10, random_state=99, progress=False)  # warm-up of the R loop (byte compilation)

    import rpy2.robjects as ro

    from mixedeval.engine import convert, session

    with session.lock:  # the bare loop on the same model and the same simulations (seed 2025)
        ro.globalenv["bench_m"] = res.fit._model
        ro.globalenv["bench_y"] = convert.to_r(res.fit.simulate(args.n_resamples, random_state=2025))
    bare = ro.r("function() system.time(for (i in seq_len(ncol(bench_y))) "
                "lme4::refit(bench_m, newresp = bench_y[, i]))[['elapsed']]")
    r_before = float(bare()[0])
    t = time.perf_counter()
    boot = res.bootstrap(n_resamples=args.n_resamples, random_state=2025, progress=True)
    t_boot = time.perf_counter() - t
    r_after = float(bare()[0])  # before and after: the machine's load drifts (2 shared cores)
    r_loop = (r_before + r_after) / 2

    tm = boot.timing
    print(f"Language disparity, Hu et al. (2025) records: {res.fit.nobs} records, "
          f"{len(res.fit.fixed)} fixed effects, {args.n_resamples}-replicate parametric bootstrap")
    print(f"  analysis (fit, PP/PRR/LP, diagnostics) : {t_analysis:.3f} s")
    print(f"  robustness refit (k = 10)              : {t_robust:.3f} s")
    print(f"  analytic LP intervals (REML + contest) : {t_intervals:.3f} s")
    print(f"  bootstrap total                        : {t_boot:.2f} s")
    print(f"    lme4::simulate                       : {tm['simulate']:.3f} s ({tm['simulate'] / tm['total']:.1%})")
    print(f"    R refits (me_disparity_refit_fixef)  : {tm['r_refit']:.2f} s ({tm['r_refit'] / tm['total']:.1%}),"
          f" {1000 * tm['r_refit'] / args.n_resamples:.1f} ms per refit")
    print(f"    numpy recomputation                  : {tm['numpy']:.3f} s ({tm['numpy'] / tm['total']:.1%})")
    print(f"  full analysis + bootstrap              : {t_analysis + t_robust + t_boot:.2f} s; share in R refits "
          f"{tm['r_refit'] / (t_analysis + t_robust + t_boot):.1%}")
    print(f"  baseline: bare R refit loop in-process : {r_loop:.2f} s (before {r_before:.2f}, after {r_after:.2f})")
    print(f"  ratio bootstrap total / bare R loop    : {t_boot / r_loop:.3f}")
    print(f"  ratio our R refit loop / bare R loop   : {tm['r_refit'] / r_loop:.3f}")
    print(f"  ratio analytic LP intervals / bootstrap: {t_intervals / t_boot:.4f}")
    print(f"  refits: {boot.n_used} used, {boot.n_failed} failed, {boot.n_singular} singular, "
          f"{boot.n_nonconverged} with convergence messages")
    if args.coverage:
        coverage_study(args.coverage, n_resamples=args.coverage_resamples, random_state=args.coverage_random_state,
                       n_models=args.coverage_models, design=args.coverage_design)


if __name__ == "__main__":
    main()
