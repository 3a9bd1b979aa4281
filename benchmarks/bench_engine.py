"""Issue 2 benchmark: engine overhead, printed as ratios measured in one run.

1. Kreutzer TER ``ter ~ system + (1|sentence_id)``: ``mixedeval.lmm`` (conversion + fit + table
   extraction) against the same ``lmerTest::lmer`` call plus the same tables timed inside R in the
   same process (data already in R). Target ratio <= 1.10.
2. Converting a 1,000,000-row, 5-column score table to an R data.frame. Target < 1 s.
   Baseline for comparison: rpy2's pandas2ri converter on the same table.

Run: .venv/bin/python benchmarks/bench_engine.py
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

import mixedeval as me
from mixedeval.engine import convert, session


def best_of(fn, repeat=7):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times))


def main() -> None:
    ter = me.datasets.load("kreutzer_ter")
    me.lmm("ter ~ system + (1|sentence_id)", ter)  # warm-up: starts R, loads packages
    import rpy2.robjects as ro

    ro.globalenv["bench_df"] = convert.to_r(ter[["ter", "system", "sentence_id"]])
    r_once = ro.r(
        """
        function(env) {
          t0 <- proc.time()[["elapsed"]]
          m <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = bench_df, REML = TRUE)
          s <- env$me_fit_summary(m)
          proc.time()[["elapsed"]] - t0
        }
        """
    )
    helpers = session.helper_env()  # mixedeval's R helpers live in their own environment
    r_times, py_times = [], []
    for _ in range(15):  # interleaved, so that changes in machine load hit both sides alike
        r_times.append(float(r_once(helpers)[0]))
        t = time.perf_counter()
        me.lmm("ter ~ system + (1|sentence_id)", ter)
        py_times.append(time.perf_counter() - t)
    r_min, r_med = min(r_times), float(np.median(r_times))
    py_min, py_med = min(py_times), float(np.median(py_times))
    print("Kreutzer TER fit + tables (7,287 rows)")
    print(f"  plain R in-process : min {r_min:.3f} s  median {r_med:.3f} s")
    print(f"  mixedeval.lmm      : min {py_min:.3f} s  median {py_med:.3f} s")
    print(f"  overhead ratio     : {py_med / r_med:.3f} (median), {py_min / r_min:.3f} (min)   target <= 1.10")

    rng = np.random.default_rng(0)
    n = 1_000_000
    big = pd.DataFrame(
        {
            "score": rng.random(n),
            "system": pd.Categorical(rng.choice([f"sys{i}" for i in range(20)], n)),
            "item": rng.integers(0, 10_000, n).astype(str),
            "seed": rng.integers(0, 5, n),
            "language": pd.Categorical(rng.choice(["de", "fr", "ja"], n)),
        }
    )
    with session.lock:
        t_conv, _ = best_of(lambda: convert.to_r(big), repeat=3)
        big_cat = big.assign(item=big["item"].astype("category"))
        t_conv_cat, _ = best_of(lambda: convert.to_r(big_cat), repeat=3)
        from rpy2.robjects import pandas2ri
        from rpy2.robjects.conversion import localconverter

        t = time.perf_counter()
        with localconverter(ro.default_converter + pandas2ri.converter):
            ro.conversion.get_conversion().py2rpy(big)
        t_p2ri = time.perf_counter() - t
    print("\n1,000,000 x 5 score table -> R data.frame")
    print(f"  mixedeval column-wise (string item ids) : {t_conv:.3f} s   target < 1 s")
    print(f"  mixedeval column-wise (categorical ids) : {t_conv_cat:.3f} s")
    print(f"  rpy2 pandas2ri                          : {t_p2ri:.3f} s   ratio {t_p2ri / t_conv:.1f}x slower")


if __name__ == "__main__":
    main()
