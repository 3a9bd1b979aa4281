"""Issue 3 benchmark: Satterthwaite EMMs and contrasts on a 100,000-row crossed design.

A simulated score table, items x systems x seeds (default 2,000 x 5 x 10 = 100,000 rows),
``score ~ system + (1|item) + (1|seed)`` fitted once by ``mixedeval.lmm``; then timed (median
of ``--reps``):

* mixedeval: ``fit.emmeans("system")`` (Satterthwaite df, explicit ``lmer.df`` and limits) and
  ``.contrasts("pairwise", adjust="holm")``;
* the same emmeans calls written directly in R, in the same process, on the same model.

Printed: the time of each, the share of mixedeval's time spent inside R (plain-R time /
mixedeval time; the rest is argument/result conversion and Python bookkeeping), and a check
that the df are finite (no silent fallback to df = Inf above 3000 rows).

Run: .venv/bin/python benchmarks/bench_emmeans_large.py [--items 2000 --systems 5 --seeds 10 --reps 5]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import mixedeval as me

R_SAME = """
function(m, reps) {
  n <- stats::nobs(m)
  t <- numeric(reps)
  for (i in seq_len(reps)) {
    t0 <- proc.time()[["elapsed"]]
    e <- emmeans::emmeans(m, "system", lmer.df = "satterthwaite", lmerTest.limit = n, pbkrtest.limit = n)
    se <- summary(e, infer = c(TRUE, FALSE))
    p <- summary(emmeans::contrast(e, method = "pairwise", adjust = "holm"), infer = c(TRUE, TRUE))
    t[i] <- proc.time()[["elapsed"]] - t0
  }
  stats::median(t)
}
"""


def simulate(n_items: int, n_systems: int, n_seeds: int, rng: np.random.Generator) -> pd.DataFrame:
    """score = system effect + item effect + seed effect + system:item noise + residual."""
    item = np.repeat(np.arange(n_items), n_systems * n_seeds)
    system = np.tile(np.repeat(np.arange(n_systems), n_seeds), n_items)
    seed = np.tile(np.arange(n_seeds), n_items * n_systems)
    sys_eff = np.linspace(0.0, 0.05, n_systems)
    score = (0.5 + sys_eff[system] + rng.normal(0, 0.10, n_items)[item] + rng.normal(0, 0.02, n_seeds)[seed]
             + rng.normal(0, 0.05, n_items * n_systems)[item * n_systems + system] + rng.normal(0, 0.08, item.size))
    return pd.DataFrame({
        "score": score,
        "system": pd.Categorical.from_codes(system, [f"sys{i}" for i in range(n_systems)]),
        "item": pd.Categorical.from_codes(item, [f"item{i:05d}" for i in range(n_items)]),
        "seed": pd.Categorical.from_codes(seed, [f"seed{i:02d}" for i in range(n_seeds)]),
    })


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--systems", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    df = simulate(args.items, args.systems, args.seeds, np.random.default_rng(0))
    t0 = time.perf_counter()
    fit = me.lmm("score ~ system + (1|item) + (1|seed)", df)
    t_fit = time.perf_counter() - t0

    def run():
        emm = fit.emmeans("system")
        ct = emm.contrasts("pairwise", adjust="holm")
        return emm, ct

    emm, ct = run()  # warm-up
    import rpy2.robjects as ro

    r_same = ro.r(R_SAME)
    r_same(fit._model, 1)
    py_t, r_t = [], []
    for _ in range(args.reps):  # interleaved, so load changes hit both alike
        t0 = time.perf_counter()
        emm, ct = run()
        py_t.append(time.perf_counter() - t0)
        r_t.append(float(r_same(fit._model, 1)[0]))
    py_med, r_med = float(np.median(py_t)), float(np.median(r_t))

    print(f"Crossed design {args.items:,} items x {args.systems} systems x {args.seeds} seeds = {len(df):,} rows")
    print(f"  fit (mixedeval.lmm, once)            : {t_fit:.2f} s")
    print(f"  emmeans + pairwise Holm, mixedeval   : median {py_med:.3f} s")
    print(f"  the same emmeans calls in plain R    : median {r_med:.3f} s")
    print(f"  share of mixedeval's time inside R   : {r_med / py_med:.1%}")
    df_vals = emm.table["df"].to_numpy()
    fallback = [w for w in emm.warnings + ct.warnings if w.kind == "df_fallback"]
    print(f"  Satterthwaite df of the EMMs         : {', '.join(f'{v:.1f}' for v in df_vals)}")
    print(f"  contrast df                          : {ct.table['df'].min():.1f} .. {ct.table['df'].max():.1f}")
    print(f"  finite df, no fallback               : {bool(np.all(np.isfinite(df_vals)) and not fallback)}")


if __name__ == "__main__":
    main()
