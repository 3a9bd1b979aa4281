"""Issue 41, point 4 (Bayesian part): coverage of :func:`mixedeval.bayes_glmm`'s 95% credible
intervals beside mixedeval's default frequentist intervals (:func:`mixedeval.summarize`: Inspect's
t interval of each system's mean over tasks, the paired t interval of the difference, Miller 2024)
on the same simulated data sets.

Simulation: two systems, ``n_tasks`` tasks x ``n_attempts`` attempts, 0/1 success with
``logit P = mu_s + u_t``, ``u_t ~ N(0, task_sd^2)`` (a new draw of the tasks per data set). The
estimand of both analyses is each system's success rate on the population of tasks,
``E_u[logit^-1(mu_s + u)]`` (computed by numerical integration), and the difference of the two.
``mu_s`` is set so that the rates of the two systems are the design's ``rates`` (from 0.02 to 0.98).
Coverage is the share of data sets whose interval contains the true value, with its Monte Carlo
standard error ``sqrt(c (1 - c) / n)``; an interval of zero width (every attempt failed) misses.
The table says where each is outside 93-97%.

Run: .venv/bin/python benchmarks/calibration_bayes.py [--n-rep 100] [--reduced] [--iter 1000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import integrate, optimize
from scipy.special import expit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mixedeval as me  # noqa: E402 - this checkout, not an installed copy

FULL = [(t, a, r) for t in (5, 10, 20, 50) for a in (1, 3, 10) for r in ((0.02, 0.10), (0.30, 0.50), (0.90, 0.98))]
REDUCED = [(5, 3, (0.30, 0.50)), (5, 10, (0.90, 0.98)), (10, 1, (0.02, 0.10)), (20, 3, (0.30, 0.50)),
           (50, 1, (0.90, 0.98))]
TASK_SD = 1.0


def pop_rate(mu: float, sd: float = TASK_SD) -> float:
    f = lambda z: expit(mu + sd * z) * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)  # noqa: E731
    return float(integrate.quad(f, -np.inf, np.inf)[0])


def mu_for(rate: float) -> float:
    return float(optimize.brentq(lambda m: pop_rate(m) - rate, -20, 20))


def simulate(rng: np.random.Generator, n_tasks: int, n_attempts: int, mus: tuple[float, float]) -> pd.DataFrame:
    u = rng.normal(0, TASK_SD, n_tasks)
    p = expit(np.asarray(mus)[:, None] + u[None, :])
    y = rng.random((2, n_tasks, n_attempts)) < p[:, :, None]
    s, t, e = np.meshgrid(np.arange(2), np.arange(n_tasks), np.arange(n_attempts), indexing="ij")
    return pd.DataFrame({"system": np.array(["A", "B"])[s.ravel()], "item": [f"t{i:02d}" for i in t.ravel()],
                         "epoch": e.ravel(), "score": y.ravel().astype(float)})


def covers(lo: float, hi: float, truth: float) -> bool:
    return bool(hi > lo and lo <= truth <= hi)


def one(df: pd.DataFrame, truth: dict[str, float], seed: int, iter_: int) -> dict[str, bool]:
    b = me.bayes_glmm(df, epoch="epoch", chains=2, iter=iter_, cores=1, progress=False, loo=False, ppc=False,
                      frequentist=False, random_state=seed, higher_is_better=True)
    f = me.summarize(df, epoch="epoch", higher_is_better=True)
    out = {}
    bt = b.table.set_index("system")
    ft = f.table.set_index("system")
    for s in ("A", "B"):
        out[f"bayes_rate_{s}"] = covers(bt.loc[s, "conf_low"], bt.loc[s, "conf_high"], truth[s])
        out[f"freq_rate_{s}"] = covers(ft.loc[s, "conf_low"], ft.loc[s, "conf_high"], truth[s])
    d = truth["B"] - truth["A"]
    for name, pw in (("bayes", b.pairwise), ("freq", f.pairwise)):
        r = pw.iloc[0]
        sign = 1.0 if (str(r["system_a"]), str(r["system_b"])) == ("B", "A") else -1.0
        lo, hi = sorted((sign * r["conf_low"], sign * r["conf_high"]))
        out[f"{name}_diff"] = covers(lo, hi, d)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-rep", type=int, default=100)
    ap.add_argument("--reduced", action="store_true", help="five designs instead of 36")
    ap.add_argument("--iter", type=int, default=1000)
    ap.add_argument("--random-state", type=int, default=2026)
    args = ap.parse_args()
    rng = np.random.default_rng(args.random_state)
    rows = []
    t_start = time.time()
    for n_tasks, n_att, rates in (REDUCED if args.reduced else FULL):
        mus = (mu_for(rates[0]), mu_for(rates[1]))
        truth = {"A": rates[0], "B": rates[1]}
        hits = []
        for r in range(args.n_rep):
            df = simulate(rng, n_tasks, n_att, mus)
            hits.append(one(df, truth, seed=r + 1, iter_=args.iter))
        h = pd.DataFrame(hits).mean()
        n = args.n_rep
        row = {"tasks": n_tasks, "attempts": n_att, "rates": f"{rates[0]:.2f}/{rates[1]:.2f}", "n_rep": n,
               "bayes_rate": (h["bayes_rate_A"] + h["bayes_rate_B"]) / 2, "freq_rate": (h["freq_rate_A"] + h["freq_rate_B"]) / 2,
               "bayes_diff": h["bayes_diff"], "freq_diff": h["freq_diff"]}
        row["mc_se"] = float(np.sqrt(0.95 * 0.05 / n))
        rows.append(row)
        print(pd.DataFrame([row]).round(3).to_string(index=False, header=len(rows) == 1), flush=True)
    t = pd.DataFrame(rows)

    def flag(c: float) -> str:
        return "" if 0.93 <= c <= 0.97 else "*"

    for c in ("bayes_rate", "freq_rate", "bayes_diff", "freq_diff"):
        t[c + "_out"] = t[c].map(flag)
    print()
    print(f"coverage of 95% intervals (* outside 93-97%); task SD {TASK_SD} (logit); {time.time() - t_start:.0f} s")
    print(t.round(3).to_string(index=False))
    for c, name in (("bayes_rate", "credible, rates"), ("freq_rate", "frequentist, rates"),
                    ("bayes_diff", "credible, differences"), ("freq_diff", "frequentist, differences")):
        print(f"{name}: outside 93-97% in {int((t[c + '_out'] == '*').sum())} of {len(t)} designs")


if __name__ == "__main__":
    main()
