"""Coverage and width of me.judge_corrected's intervals on the designs evaluations have (the
precise version of tests/test_judges_calibration.py).

Data (tests/judges_helpers.py): three systems whose judge is biased differently (+0.3, 0, -0.1
in score units: the judge favours the first), items shared by the systems (paired), the judge's
errors correlated within clusters of items (cluster= given), epochs, and 50 to 500 labelled
items per system out of 600. Per data set and estimand (each system's mean and each pairwise
difference) the 95% intervals of

* PPI++ and PPI (judge-corrected; cluster-robust CR1, t with clusters - 1 df),
* classical (people's labels only; the baseline of the width ratio),
* judge only (the judge's scores, uncorrected: the interval people would report without labels).

A binary design checks Rogan-Gladen (sensitivity / specificity differing by system, clusters).
The Monte-Carlo SE of a coverage near 95% is about sqrt(.95 * .05 / (reps x estimands)).

    .venv/bin/python benchmarks/calibration_judges.py [--reps 400] [--labels 50 100 200 500]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from judges_helpers import fast_units, simulate, simulate_binary  # noqa: E402  (the CI test's data model)

from mixedeval.workflows import _judges_tables as T  # noqa: E402

MU = (0.6, 0.5, 0.45)
BIAS = (0.3, 0.0, -0.1)
P = (0.7, 0.6)


def _cover(tab: pd.DataFrame, truth: np.ndarray, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = tab[f"{prefix}conf_low"].to_numpy(), tab[f"{prefix}conf_high"].to_numpy()
    return (lo <= truth) & (truth <= hi), hi - lo


def one_config(reps: int, n_labels: int, n_items: int, epochs: int, n_clusters: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    truth_m = np.array(MU)
    truth_d = np.array([MU[a] - MU[b] for a in range(3) for b in range(a + 1, 3)])
    acc: dict[str, list] = {}
    for _ in range(reps):
        df = simulate(rng, mu=MU, bias=BIAS, n_items=n_items, n_labels=n_labels, epochs=epochs, n_clusters=n_clusters)
        u, systems = fast_units(df)
        for method in ("ppi++", "ppi"):
            tab, _ = T.system_rows(u, systems, method, 0.95)
            pw = T.pairwise_rows(u, systems, method, 0.95, "none")
            for what, t, truth in (("mean", tab, truth_m), ("diff", pw, truth_d)):
                for prefix, name in (("", method), ("classical_", "classical"), ("judge_", "judge only")):
                    if prefix and method == "ppi":
                        continue
                    c, w = _cover(t, truth, prefix)
                    acc.setdefault((what, name, "cover"), []).append(c)
                    acc.setdefault((what, name, "width"), []).append(w)
    out = {}
    for (what, name, kind), v in acc.items():
        out[(what, name, kind)] = float(np.mean(np.concatenate(v)))
    return out


def binary_config(reps: int, n_labels: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    truth = np.array(P)
    cov = {"rogan-gladen": [], "ppi++": [], "judge only": []}
    for _ in range(reps):
        df = simulate_binary(rng, p=P, n_labels=n_labels, n_items=600, n_clusters=60)
        u, systems = fast_units(df)
        for m in ("rogan-gladen", "ppi++"):
            try:
                tab, _ = T.system_rows(u, systems, m, 0.95)
            except (ValueError, ZeroDivisionError):
                continue
            cov[m].append(_cover(tab, truth, "")[0])
            if m == "ppi++":
                cov["judge only"].append(_cover(tab, truth, "judge_")[0])
    return {k: float(np.mean(np.concatenate(v))) for k, v in cov.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--labels", type=int, nargs="+", default=[50, 100, 200, 500])
    ap.add_argument("--items", type=int, default=600)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--clusters", type=int, default=60)
    ap.add_argument("--binary-only", action="store_true", help="only the Rogan-Gladen design")
    a = ap.parse_args()
    t0 = time.perf_counter()
    print(f"continuous scores: 3 systems, judge bias {BIAS}, {a.items} items in {a.clusters} clusters, "
          f"{a.epochs} epochs, {a.reps} data sets per row; 95% intervals")
    print(f"{'labels':>6} {'estimand':>8} {'PPI++':>7} {'PPI':>7} {'human':>7} {'judge':>7}   "
          f"{'width PPI++/human':>17} {'PPI/human':>9}")
    for i, n in enumerate([] if a.binary_only else a.labels):
        r = one_config(a.reps, n, a.items, a.epochs, a.clusters, seed=100 + i)
        for what in ("mean", "diff"):
            hw = r[(what, "classical", "width")]
            print(f"{n:>6} {what:>8} {r[(what, 'ppi++', 'cover')]:>7.3f} {r[(what, 'ppi', 'cover')]:>7.3f} "
                  f"{r[(what, 'classical', 'cover')]:>7.3f} {r[(what, 'judge only', 'cover')]:>7.3f}   "
                  f"{r[(what, 'ppi++', 'width')] / hw:>17.3f} {r[(what, 'ppi', 'width')] / hw:>9.3f}")
    print(f"\nbinary scores (Rogan-Gladen): 2 systems, p {P}, sensitivity/specificity by system, 60 clusters, "
          f"{a.reps} data sets")
    for i, n in enumerate((100, 300)):
        r = binary_config(a.reps, n, seed=200 + i)
        print(f"  labels {n}: coverage Rogan-Gladen {r['rogan-gladen']:.3f}  PPI++ {r['ppi++']:.3f}  "
              f"judge only {r['judge only']:.3f}")
    print(f"\n{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
