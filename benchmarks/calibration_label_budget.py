"""Do label budgets deliver? me.labels_needed on clustered and i.i.d. pilots, checked by drawing
fresh data of the planned size from the pilot's generating model and running judge_corrected's
interval of the difference (issue 42, item 4).

Data (tests/judges_budget_helpers.py): two systems, people's scores with system-specific cluster
effects (the difference varies between clusters), a judge biased differently per system with its
own cluster- and item-level errors, the same items labelled on both systems.

* clustered pilot: 400 items in 40 clusters of 10, 100 labels, ``cluster=`` given;
* i.i.d. pilot: 2000 independent items, 100 labels.

Per pilot (``--pilots`` of them, seeds 1..P) and target width, the plan of ``labels_needed``
(the pilot's items kept) and, for comparison, the rule used before issue 42 (ppi-python's
``ppi_mean_power`` formula with the classical variance and the cluster-level correlation, normal
quantile); for each planned size ``--reps`` fresh data sets give the realised mean width.
Reported: the pilots whose plan is reachable, the mean planned labels, and the realised width /
target (mean over pilots with its Monte-Carlo SE, and the median). The pilots' own noise (100
labels) spreads single plans by about +-15%; the mean over pilots is the plan's bias. Also the
answer to "how many labels for the pilot's own interval width" (100 is right).

    .venv/bin/python benchmarks/calibration_label_budget.py [--pilots 20] [--reps 100]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from judges_budget_helpers import pilot_data  # noqa: E402
from judges_helpers import fast_units  # noqa: E402

import mixedeval as me  # noqa: E402
from mixedeval.workflows import _judges_tables as T  # noqa: E402
from mixedeval.workflows._judges_budget import _fixed_items, pair_inputs  # noqa: E402

KINDS = {"clustered": (dict(n_items=400, n_clusters=40), (0.40, 0.34)),
         "iid": (dict(n_items=2000, n_clusters=None), (0.20, 0.15))}


def before_plan(inp: dict, width: float) -> float:
    """The rule before issue 42: classical variance x (1 - rho^2 N / M) with the correlation of
    the cluster totals, normal-quantile width."""
    T_ = (width / (2 * stats.norm.ppf(0.975))) ** 2
    n0 = inp["v_classical"] * inp["n"] / T_
    n, ok = _fixed_items(n0, min(inp["rho_clusters"], 1 - 1 / inp["n"]), int(inp["m"]))
    return n if ok else np.nan


def realised(kind: str, n: int, reps: int, cache: dict) -> float:
    if (kind, n) not in cache:
        kw = KINDS[kind][0]
        rng = np.random.default_rng(10_000 + n)
        w = []
        for _ in range(reps):
            u, systems = fast_units(pilot_data(rng, n_labels=n, **kw))
            pw = T.pairwise_rows(u, systems, "ppi++", 0.95, "none")
            w.append(float(pw["conf_high"].iloc[0] - pw["conf_low"].iloc[0]))
        cache[(kind, n)] = float(np.mean(w))
    return cache[(kind, n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pilots", type=int, default=20)
    ap.add_argument("--reps", type=int, default=100)
    args = ap.parse_args()
    t0 = time.time()
    rows, own, cache = [], [], {}
    for kind, (kw, targets) in KINDS.items():
        for seed in range(1, args.pilots + 1):
            pilot = me.judge_corrected(pilot_data(np.random.default_rng(seed), n_labels=100, **kw),
                                       cluster="cluster" if kw["n_clusters"] else None)
            h = pilot.pairwise.iloc[0]
            own_w = float(h["conf_high"] - h["conf_low"])
            inp = pair_inputs(pilot._prepared.units, 0, 1)  # noqa: SLF001
            own.append({"pilot": kind, "now": pilot.labels_needed(width=own_w).labels,
                        "before": before_plan(inp, own_w)})
            for target in targets:
                new = pilot.labels_needed(width=target).table.iloc[0]
                for plan, n in (("now", new["labels_needed"] if new["reachable"] else np.nan),
                                ("before", before_plan(inp, target))):
                    r = realised(kind, int(n), args.reps, cache) / target if np.isfinite(n) else np.nan
                    rows.append({"pilot": kind, "target": target, "plan": plan, "labels": n, "ratio": r})
    df = pd.DataFrame(rows)
    out = df.groupby(["pilot", "target", "plan"], sort=False).agg(
        reachable=("labels", lambda x: int(np.isfinite(x).sum())), labels=("labels", "mean"),
        ratio=("ratio", "mean"), ratio_se=("ratio", lambda x: float(np.nanstd(x) / np.sqrt(max(np.isfinite(x).sum(), 1)))),
        ratio_median=("ratio", "median")).reset_index()
    pd.set_option("display.width", 160)
    print(f"{args.pilots} pilots per kind, {args.reps} fresh data sets per planned size; realised width / target")
    print(out.round(3).to_string(index=False))
    o = pd.DataFrame(own).groupby("pilot").agg(now=("now", "mean"), now_min=("now", "min"), now_max=("now", "max"),
                                               before=("before", "mean"))
    print("\nlabels for the pilot's own interval width (the pilot has 100):")
    print(o.round(1).to_string())
    print(f"\n{time.time() - t0:.0f} s (machine shared, load high)")


if __name__ == "__main__":
    main()
