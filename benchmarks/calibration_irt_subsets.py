"""Full-benchmark accuracy from 100 anchor items of 2,000: error and interval coverage on held-out
systems (issue 32, point 6).

Protocol (per replicate): planted 2PL bank of 2,000 items (discriminations lognormal(0, 0.5),
difficulties N(0, 1)), 200 calibration systems and ``--n-new`` held-out systems with abilities
N(0, 1); the bank is calibrated on the 200 systems with the numpy engine
(``mixedeval.inference._irt_numpy``, marginal ML); 100 anchors are chosen by
``me.select_items`` (stratified, information, cluster, random); ``me.estimate_scores`` estimates each held-out
system's accuracy on all 2,000 items from its anchor answers. Printed per method and estimator:
mean absolute error of the full accuracy (the truth is the held-out system's realized accuracy
on all items), coverage of the 95% intervals, mean interval width, and the MAE ratio against
random anchors with the same estimator (the baseline, measured in the same run).

Targets: MAE <= 0.02 and coverage 93-97% (gp-IRT / p-IRT).

    python benchmarks/calibration_irt_subsets.py [--reps 5] [--n-new 200]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from mixedeval.inference._irt_numpy import irt_numpy, simulate_2pl, wide_frame
from mixedeval.workflows.item_subsets import ESTIMATORS, estimate_scores, select_items

N_CAL, N_ITEMS, N_ANCHORS = 200, 2000, 100


def one_replicate(rep: int, n_new: int) -> tuple[list[dict], float]:
    Y, _, _, _ = simulate_2pl(N_CAL + n_new, N_ITEMS, random_state=1000 + rep)
    W = wide_frame(Y)
    t0 = time.perf_counter()
    cal = irt_numpy(W.iloc[:N_CAL], "2pl")
    t_fit = time.perf_counter() - t0
    new = W.iloc[N_CAL:]
    truth = new.mean(axis=1).to_numpy()
    rows = []
    for method in ("stratified", "information", "cluster", "random"):
        sub = select_items(cal, N_ANCHORS, method, random_state=rep)
        res = estimate_scores(cal, new[list(sub.anchors)], sub)
        for e in ESTIMATORS:
            t = res.estimates(e)
            est, lo, hi = (t[c].to_numpy() for c in ("estimate", "conf_low", "conf_high"))
            rows += [{"rep": rep, "method": method, "estimator": e, "abs_error": abs(est[j] - truth[j]),
                      "covered": lo[j] <= truth[j] <= hi[j], "width": hi[j] - lo[j], "lambda": res.gp_lambda}
                     for j in range(len(truth))]
    return rows, t_fit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--n-new", type=int, default=200)
    args = ap.parse_args()
    rows, fits = [], []
    for rep in range(args.reps):
        r, t_fit = one_replicate(rep, args.n_new)
        rows += r
        fits.append(t_fit)
        print(f"replicate {rep + 1}/{args.reps} done (2PL calibration of {N_CAL} x {N_ITEMS}: {t_fit:.1f} s)", flush=True)
    d = pd.DataFrame(rows)
    out = d.groupby(["method", "estimator"], sort=False).agg(
        mae=("abs_error", "mean"), coverage=("covered", "mean"), width=("width", "mean"),
        gp_lambda=("lambda", "mean"), n=("abs_error", "size")).reset_index()
    base = out[out["method"] == "random"].set_index("estimator")["mae"]
    out["mae_vs_random"] = out["mae"] / out["estimator"].map(base)
    pd.set_option("display.width", 140)
    print(f"\n{N_ANCHORS} anchors of {N_ITEMS} items, {N_CAL} calibration systems, {args.reps} x {args.n_new} "
          "held-out systems; 95% intervals")
    print(out.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print("\ntargets (MAE <= 0.02, coverage 93-97%), gp-IRT and p-IRT:")
    for _, r in out[out["estimator"].isin(["gp_irt", "p_irt"])].iterrows():
        ok = r["mae"] <= 0.02 and 0.93 <= r["coverage"] <= 0.97
        print(f"  {r['method']:>11} {r['estimator']:>6}: MAE {r['mae']:.4f}, coverage {r['coverage']:.3f} -> "
              f"{'met' if ok else 'NOT met'}")
    print(f"median calibration time (numpy engine, 2PL {N_CAL} x {N_ITEMS}): {np.median(fits):.1f} s")


if __name__ == "__main__":
    main()
