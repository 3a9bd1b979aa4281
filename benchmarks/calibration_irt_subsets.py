"""Full-benchmark accuracy from 100 anchor items of 2,000: error and interval coverage on held-out
systems (issue 32, point 6).

Protocol (per replicate): planted 2PL bank of 2,000 items (discriminations lognormal(0, 0.5),
difficulties N(0, 1)), 200 calibration systems and ``--n-new`` held-out systems with abilities
N(0, 1); the bank is calibrated on the 200 systems with the numpy engine
(``mixedeval.inference._irt_numpy``, marginal ML); 100 anchors are chosen by ``me.select_items``
(random, stratified, cluster as tinyBenchmarks, information); ``me.estimate_scores`` estimates each
held-out system's accuracy on all 2,000 items from its anchor answers. The truth is the held-out
system's realized accuracy on all items.

Printed per method and estimator (plug-in ``irt``, ``p_irt``, ``gp_irt``, ``anchor``, ``posterior``):
mean absolute error (MAE), coverage of the 95% intervals, mean interval width, each with its
Monte-Carlo SE, and the MAE ratio against random anchors with the same estimator (the baseline,
measured in the same run). The SEs are between replicates (SD of the replicate means / sqrt(reps)):
the held-out systems of one replicate share its bank and anchors, so their errors are correlated
and a binomial SE over all systems would be too small.

Diagnosis columns: ``cov_model`` is the coverage of the model's own interval (``n_folds=0``:
posterior predictive, item parameters taken as known); ``cov_oracle`` the same interval computed
with the true item parameters and the same anchors (what the model interval covers when nothing
but the anchor answers and the unseen items' Bernoulli noise is uncertain).

Targets: MAE <= 0.02 and coverage 93-97%.

    python benchmarks/calibration_irt_subsets.py              # 10 replicates x 200 held-out systems
    python benchmarks/calibration_irt_subsets.py --quick      # 2 x 100 (a CI-size check)
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from mixedeval.inference._irt_numpy import irt_numpy, simulate_2pl, wide_frame
from mixedeval.workflows import item_subsets as S
from mixedeval.workflows._irt_bank import Bank, as_bank

N_CAL, N_ITEMS, N_ANCHORS = 200, 2000, 100
METHODS = ("random", "stratified", "cluster", "information")


def _covered(t: pd.DataFrame, truth: np.ndarray) -> np.ndarray:
    return ((t["conf_low"].to_numpy() <= truth) & (truth <= t["conf_high"].to_numpy()))


def one_replicate(rep: int, n_new: int, n_cal: int, n_items: int, n_anchors: int, methods) -> tuple[list[dict], float]:
    Y, _, a, b = simulate_2pl(n_cal + n_new, n_items, random_state=1000 + rep)
    W = wide_frame(Y)
    t0 = time.perf_counter()
    cal = irt_numpy(W.iloc[:n_cal], "2pl")
    t_fit = time.perf_counter() - t0
    bank = as_bank(cal)
    oracle = Bank(bank.items, np.asarray(b, float), np.asarray(a, float), "2pl", 1.0, "truth", None)
    new = W.iloc[n_cal:]
    truth = new.mean(axis=1).to_numpy()
    rows = []
    for method in methods:
        sub = S.select_items(cal, n_anchors, method, random_state=rep)
        answers = new[list(sub.anchors)]
        res = S.estimate_scores(cal, answers, sub, random_state=rep)
        model = S.estimate_scores(cal, answers, sub, n_folds=0)
        orc = S.estimate_scores(oracle, answers, sub, n_folds=0)
        for e in S.ESTIMATORS:
            t = res.estimates(e)
            err = np.abs(t["estimate"].to_numpy() - truth)
            rows.append({"rep": rep, "method": method, "estimator": e, "mae": err.mean(),
                         "coverage": _covered(t, truth).mean(),
                         "width": (t["conf_high"] - t["conf_low"]).mean(),
                         "cov_model": _covered(model.estimates(e), truth).mean(),
                         "cov_oracle": _covered(orc.estimates(e), truth).mean(),
                         "mae_oracle": np.abs(orc.estimates(e)["estimate"].to_numpy() - truth).mean(),
                         "gp_lambda": res.gp_lambda})
    return rows, t_fit


def summarize(d: pd.DataFrame) -> pd.DataFrame:
    cols = ["mae", "coverage", "width", "cov_model", "cov_oracle", "mae_oracle", "gp_lambda"]
    g = d.groupby(["method", "estimator"], sort=False)
    out = g[cols].mean()
    se = g[["mae", "coverage"]].std(ddof=1) / np.sqrt(g.size().to_numpy()[:, None])
    out.insert(1, "mae_se", se["mae"])
    out.insert(3, "cov_se", se["coverage"])
    out = out.reset_index()
    base = out[out["method"] == "random"].set_index("estimator")["mae"]
    out["mae_vs_random"] = out["mae"] / out["estimator"].map(base)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--n-new", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="2 replicates x 100 held-out systems")
    ap.add_argument("--methods", default=",".join(METHODS))
    args = ap.parse_args()
    reps, n_new = (2, 100) if args.quick else (args.reps, args.n_new)
    methods = tuple(m for m in args.methods.split(",") if m)
    rows, fits = [], []
    t_all = time.perf_counter()
    for rep in range(reps):
        r, t_fit = one_replicate(rep, n_new, N_CAL, N_ITEMS, N_ANCHORS, methods)
        rows += r
        fits.append(t_fit)
        print(f"replicate {rep + 1}/{reps} done (2PL calibration of {N_CAL} x {N_ITEMS}: {t_fit:.1f} s)", flush=True)
    out = summarize(pd.DataFrame(rows))
    pd.set_option("display.width", 200)
    print(f"\n{N_ANCHORS} anchors of {N_ITEMS} items, {N_CAL} calibration systems, {reps} x {n_new} held-out systems; "
          "95% intervals; SEs between replicates")
    print(out.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print("\ntargets (MAE <= 0.02, coverage 93-97%):")
    for _, r in out[out["estimator"].isin(["gp_irt", "p_irt", "irt"])].iterrows():
        ok = r["mae"] <= 0.02 and 0.93 <= r["coverage"] <= 0.97
        print(f"  {r['method']:>11} {r['estimator']:>6}: MAE {r['mae']:.4f} (SE {r['mae_se']:.4f}), coverage "
              f"{r['coverage']:.3f} (SE {r['cov_se']:.3f}) -> {'met' if ok else 'NOT met'}")
    print(f"median calibration time (numpy engine, 2PL {N_CAL} x {N_ITEMS}): {np.median(fits):.1f} s; "
          f"total {time.perf_counter() - t_all:.0f} s")


if __name__ == "__main__":
    main()
