"""Benchmark: numpy side of the simulated-residual diagnostics at Kreutzer TER size.

Times ``mixedeval.diagnostics.from_simulations`` (PIT residuals + uniformity, dispersion,
outlier, zero-inflation tests, and the per-group KS + Levene for a 5-level factor) on a
7,287 x 250 simulation matrix (target: < 0.2 s), against baselines measured in the same run:

* a row-by-row Python loop of the same residual rule (DHARMa's ``getQuantile`` written naively);
* with ``--r``: the same residuals and tests in plain R (tests/dharma_reference.R + ks.test +
  binom.test + car::leveneTest) on the same matrix, timed inside R (no conversion cost).

With ``--fit``: the split of ``fit.diagnose()`` on the bundled Kreutzer TER fit
(``ter ~ system + (1|sentence_id)``) between R's lme4 ``simulate()`` and the numpy part.
Usage: python benchmarks/bench_diagnostics_numpy.py [--r] [--fit] [--repeat 7]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

N_OBS, N_SIM, N_GROUPS = 7287, 250, 5


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def naive_residuals(sims: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    out = np.empty(y.size)
    for i in range(y.size):
        lo = np.mean(sims[i] < y[i])
        hi = np.mean(sims[i] <= y[i])
        out[i] = lo if lo == hi else rng.uniform(lo, hi)
    return out


def r_seconds(sims: np.ndarray, y: np.ndarray, pred: np.ndarray, group: np.ndarray, repeat: int) -> float:
    import rpy2.robjects as ro  # noqa: PLC0415

    ro.r.source(str(Path(__file__).resolve().parents[1] / "tests" / "dharma_reference.R"))
    ro.globalenv["S"] = ro.r.matrix(ro.FloatVector(sims.ravel(order="F")), nrow=sims.shape[0])
    ro.globalenv["y"] = ro.FloatVector(y)
    ro.globalenv["pred"] = ro.FloatVector(pred)
    ro.globalenv["g"] = ro.StrVector(group.astype(str))
    ro.globalenv["u"] = ro.FloatVector(np.random.default_rng(0).random(y.size))
    code = f"""
    min(replicate({repeat}, system.time({{
      res <- dharma_ref_pit(S, y, u)
      ks <- suppressWarnings(ks.test(res, "punif"))
      disp <- dharma_ref_dispersion(S, y, pred)
      outl <- dharma_ref_outliers_binomial(res, ncol(S))
      cat <- dharma_ref_categorical(res, g)
    }})[["elapsed"]]))
    """
    return float(ro.r(code)[0])


def fit_split(repeat: int) -> None:
    import mixedeval as me  # noqa: PLC0415
    from mixedeval.diagnostics import diagnose_fit  # noqa: PLC0415

    fit = me.lmm("ter ~ system + (1|sentence_id)", data=me.datasets.load("kreutzer_ter"))
    diagnose_fit(fit, n_sim=N_SIM, random_state=1)  # warm-up: model values, ranef, frame cached
    t_total = best_of(lambda: diagnose_fit(fit, n_sim=N_SIM, random_state=123, group="system"), repeat)
    t_sim = best_of(lambda: fit.simulate(N_SIM, random_state=123), repeat)
    print(f"Kreutzer TER fit ({fit.nobs} rows, {N_SIM} simulations), best of {repeat}")
    print(f"  diagnose_fit total:        {t_total * 1e3:8.1f} ms")
    print(f"  R simulate():              {t_sim * 1e3:8.1f} ms   ({t_sim / t_total:.0%} of total)")
    print(f"  numpy residuals/tests/checks: {(t_total - t_sim) * 1e3:5.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--r", action="store_true", help="also time the plain-R reference on the same matrix")
    ap.add_argument("--fit", action="store_true", help="also time diagnose_fit on the Kreutzer TER fit")
    args = ap.parse_args()

    from mixedeval.diagnostics import from_simulations  # noqa: PLC0415

    rng = np.random.default_rng(1)
    pred = rng.normal(size=N_OBS)
    sims = pred[:, None] + rng.normal(size=(N_OBS, N_SIM))
    y = pred + rng.normal(size=N_OBS)
    group = rng.integers(0, N_GROUPS, size=N_OBS)
    from_simulations(sims[:100], y[:100], pred[:100], random_state=0, group=group[:100])  # imports, warm-up

    t_ours = best_of(lambda: from_simulations(sims, y, pred, random_state=0, group=group), args.repeat)
    t_plain = best_of(lambda: from_simulations(sims, y, pred, random_state=0), args.repeat)
    t_naive = best_of(lambda: naive_residuals(sims, y, np.random.default_rng(0)), max(1, args.repeat // 3))

    print(f"matrix {N_OBS} x {N_SIM}, best of {args.repeat}")
    print(f"  from_simulations (residuals + all tests, {N_GROUPS}-level group): {t_ours * 1e3:8.1f} ms"
          f"   target < 200 ms: {'met' if t_ours < 0.2 else 'MISSED'}")
    print(f"  from_simulations without group tests:                 {t_plain * 1e3:8.1f} ms")
    print(f"  baseline, row-loop residuals only:                    {t_naive * 1e3:8.1f} ms"
          f"   ratio ours/baseline = {t_ours / t_naive:.3f}")
    if args.r:
        t_r = r_seconds(sims, y, pred, group, args.repeat)
        print(f"  plain R reference (same residuals and tests):         {t_r * 1e3:8.1f} ms"
              f"   ratio ours/R = {t_ours / t_r:.3f}")
    if args.fit:
        fit_split(max(1, args.repeat // 2))


if __name__ == "__main__":
    main()
