"""Calibration of the intervals of ``me.pass_at_k`` (pass@k, pass^k) and ``me.time_horizon`` by simulation.

pass@k / pass^k. Data model: T tasks, each with success probability p_i ~ Beta(m phi, (1 - m) phi)
(mean m from 0.02 to 0.98, concentration phi = 4: tasks differ a lot), n attempts per task,
c_i ~ Binomial(n, p_i). The estimands are the population values over tasks,

    pass^k = E[p^k] = prod_{j<k} (a + j) / (a + b + j),   pass@k = 1 - E[(1 - p)^k] (the same with b),

exact Beta moments. The interval is the one ``me.pass_at_k`` reports for one system without
clusters (the mean of the per-task unbiased estimates, SE sd / sqrt(T), t on T - 1 df, a Wilson
interval where it reaches 0 or 1: ``mixedeval.workflows._bounded.bounded_intervals``), computed
here vectorised over replicates (``tests/test_pass_k.py`` checks that it equals the API's).
Designs: T in {5, 10, 20, 50} x n in {1, 2, 5, 10} (k = 1 with n = 1; k = 2 and k = n otherwise).

Horizons. Data model: T tasks in families of 3, lengths 2^U(0, 9) minutes, per-family effects
N(0, sd_f^2) on the logit scale, success ~ Bernoulli(expit(-(log2 L - log2 15)) + family effect),
n attempts per task. Truth: 15 minutes for the 50% horizon (the curve with the family effect 0; the
population curve crosses 50% at the same length since the effects are symmetric), and 15 / 2^(logit
0.8) minutes for the 80% horizon when sd_f = 0. The intervals of ``me.time_horizon`` (family=, one
system) by each rule of ``interval=``: ``"bootstrap"`` (METR's hierarchical bootstrap percentile
interval, families, tasks and attempts resampled, ``--boot`` replicates: the default before),
``"profile"`` (the profile-likelihood interval of the glm fit, F on tasks - 2 df) and ``"union"``
(the smallest interval holding both: the default), on the same data sets and bootstrap draws.

Columns: coverage of the 95% interval and its Monte-Carlo SE sqrt(c (1 - c) / reps); for the
horizons also the median width in doublings (log2 of conf_high / conf_low). Target 93-97%.

Run: ``python benchmarks/calibration_passk.py --reps 4000 --horizon-reps 100 --boot 300``
(``--quick`` for a smoke run). The numbers in docs/reference/benchmarks.md came from that call.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import special

import mixedeval as me
from mixedeval.workflows._bounded import bounded_intervals
from mixedeval.workflows.agentic.pass_k import pass_at_k_values, pass_hat_k_values, zone_intervals

MEANS = (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98)
#: the horizons' interval rules compared (``me.time_horizon(interval=)``)
RULES = ("bootstrap", "profile", "union")
PHI = 4.0


def truth(kind: str, m: float, k: int, phi: float = PHI) -> float:
    a, b = m * phi, (1 - m) * phi
    j = np.arange(k)
    if kind == "pass^k":
        return float(np.prod((a + j) / (a + b + j)))
    return float(1 - np.prod((b + j) / (a + b + j)))


def passk_intervals(c: np.ndarray, n: int, k: int, kind: str, level: float = 0.95,
                    rule: str = "new") -> tuple[np.ndarray, np.ndarray]:
    """The interval ``me.pass_at_k`` reports (one system, no clusters) for every row of ``c``
    (replicates x tasks of success counts); ``rule="old"``: the earlier rule (Wilson where the t
    interval reaches 0 or 1 or T min(p, 1 - p) < 5, instead of Clopper-Pearson)."""
    f = pass_hat_k_values if kind == "pass^k" else pass_at_k_values
    table = f(np.full(n + 1, n), np.arange(n + 1), k)  # the estimate for c = 0..n
    v = table[c]
    T = v.shape[1]
    est = v.mean(axis=1)
    se = v.std(axis=1, ddof=1) / np.sqrt(T)
    lo, hi, fam = bounded_intervals(est, se, np.full(est.shape, T - 1.0), np.full(est.shape, float(T)), level,
                                    np.ones(est.shape, dtype=bool))
    if rule == "old":
        return lo, hi
    m = zone_intervals(pd.DataFrame({"estimate": est, "std_error": se, "df": T - 1.0, "n_items": float(T),
                                     "conf_low": lo, "conf_high": hi, "interval": fam}), level, k)
    return m["conf_low"].to_numpy(), m["conf_high"].to_numpy()


def passk_table(reps: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for T in (5, 10, 20, 50):
        for n in (1, 2, 5, 10):
            ks = (1,) if n == 1 else tuple(sorted({2, n}))
            for m in MEANS:
                a, b = m * PHI, (1 - m) * PHI
                p = rng.beta(a, b, size=(reps, T))
                c = rng.binomial(n, p)
                for k in ks:
                    for kind in ("pass@k", "pass^k"):
                        if k == 1 and kind == "pass^k":
                            continue  # pass^1 = pass@1
                        th = truth(kind, m, k)
                        lo, hi = passk_intervals(c, n, k, kind)
                        cov = float(np.mean((lo <= th) & (th <= hi)))
                        lo0, hi0 = passk_intervals(c, n, k, kind, rule="old")
                        rows.append({"kind": kind if k > 1 else "pass@1", "tasks": T, "attempts": n, "k": k,
                                     "mean_success": m, "truth": th, "coverage": cov,
                                     "coverage_old": float(np.mean((lo0 <= th) & (th <= hi0))),
                                     "mc_se": float(np.sqrt(cov * (1 - cov) / reps)),
                                     "width": float(np.mean(hi - lo)), "width_old": float(np.mean(hi0 - lo0))})
    return pd.DataFrame(rows)


def _horizon_data(rng: np.random.Generator, T: int, n: int, sd_f: float) -> pd.DataFrame:
    F = max(1, T // 3)
    fam = np.arange(T) % F
    L = 2 ** rng.uniform(0, 9, T)
    fe = rng.normal(0, sd_f, F) if sd_f > 0 else np.zeros(F)
    p = special.expit(-(np.log2(L) - np.log2(15.0)) + fe[fam])
    y = rng.random((T, n)) < p[:, None]
    return pd.DataFrame({"system": "x", "item": np.repeat([f"t{i}" for i in range(T)], n),
                         "family": np.repeat([f"f{f}" for f in fam], n), "human_minutes": np.repeat(L, n),
                         "score": y.ravel().astype(float)})


def horizon_table(reps: int, boot: int, seed: int) -> pd.DataFrame:
    """Coverage of the horizons' 95% intervals by rule: ``bootstrap`` (METR's hierarchical
    bootstrap percentile interval: families, tasks, attempts; the default before), ``profile``
    (the profile-likelihood interval, F on tasks - 2 df) and ``union`` (the smallest interval holding
    both: ``me.time_horizon``'s default), on the same data sets and bootstrap draws."""
    rng = np.random.default_rng(seed)
    rows = []
    h80 = 15.0 / 2 ** special.logit(0.8)
    truth = {0.5: 15.0, 0.8: h80}
    for T in (10, 20, 50):
        for n in (1, 3):
            for sd_f in (0.0, 0.5):
                hits = {(r, q): 0 for r in RULES for q in truth}
                widths: dict[str, list[float]] = {r: [] for r in RULES}
                infinite = {r: 0 for r in RULES}
                for _ in range(reps):
                    d = _horizon_data(rng, T, n, sd_f)
                    seed_r = int(rng.integers(2**31))
                    tabs = {r: me.time_horizon(d, family="family", n_resamples=0 if r == "profile" else boot, random_state=seed_r,
                                               hierarchical=False, interval=r).table.set_index("p_success")
                            for r in RULES}
                    for r, tab in tabs.items():
                        for q, tv in truth.items():
                            hits[(r, q)] += tab.loc[q, "conf_low"] <= tv <= tab.loc[q, "conf_high"]
                        lo, hi = tab.loc[0.5, "conf_low"], tab.loc[0.5, "conf_high"]
                        infinite[r] += not (0 < lo and np.isfinite(hi))
                        with np.errstate(divide="ignore", invalid="ignore"):
                            widths[r].append(np.log2(hi / lo))
                for q in truth:
                    if q == 0.8 and sd_f > 0:
                        continue  # the 80% horizon of the population curve is not the conditional one
                    row = {"horizon": f"{int(q * 100)}%", "tasks": T, "attempts": n, "family_sd": sd_f}
                    for r in RULES:
                        row[f"coverage_{r}"] = hits[(r, q)] / reps
                    c = row["coverage_union"]
                    row["mc_se"] = float(np.sqrt(max(c * (1 - c), 0.05 * 0.95) / reps))
                    if q == 0.5:
                        for r in RULES:
                            row[f"median_width_{r}"] = float(np.nanmedian(widths[r]))
                            row[f"unbounded_{r}"] = infinite[r] / reps
                    rows.append(row)
                print(pd.DataFrame(rows[-1:]).round(3).to_string(index=False, header=len(rows) <= 2), flush=True)
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=4000, help="replicates per pass@k design")
    ap.add_argument("--horizon-reps", type=int, default=300, help="replicates per horizon design")
    ap.add_argument("--boot", type=int, default=400, help="bootstrap replicates of each horizon interval")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--quick", action="store_true", help="a smoke run (few replicates)")
    ap.add_argument("--no-horizon", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.horizon_reps, args.boot = 300, 10, 100
    t0 = time.perf_counter()
    pk = passk_table(args.reps, args.seed)
    pd.set_option("display.width", 200)
    print(f"pass@k / pass^k: coverage of the 95% interval ({args.reps} replicates per design; target 93-97%)\n"
          "rule: the t interval on T - 1 df; where it reaches 0 or 1 or T min(p, 1 - p) < 5 the Clopper-Pearson "
          "interval of p T successes out of the T tasks (old rule: a Wilson interval there)")
    print(pk.pivot_table(index=["kind", "tasks", "attempts", "k"], columns="mean_success", values="coverage")
          .round(3).to_string())
    for col, name in (("coverage_old", "old rule (Wilson)"), ("coverage", "new rule (Clopper-Pearson)")):
        ok = pk[col] >= 0.93
        print(f"{name}: not below 93% (conservative allowed): {ok.mean():.3f} of {len(pk)} designs; within 93-97%: "
              f"{np.mean(ok & (pk[col] <= 0.97)):.2f}; lowest {pk[col].min():.3f}; mean width "
              f"{pk['width' if col == 'coverage' else 'width_old'].mean():.4f}")
    print("\nold vs new where either is below 93%:")
    print(pk[(pk.coverage < 0.93) | (pk.coverage_old < 0.93)].sort_values("coverage_old")
          [["kind", "tasks", "attempts", "k", "mean_success", "truth", "coverage_old", "coverage", "mc_se"]]
          .round(4).to_string(index=False))
    for T in sorted(pk["tasks"].unique()):
        sub = pk[pk["tasks"] == T]
        mid = sub[(sub["mean_success"] >= 0.1) & (sub["mean_success"] <= 0.9)]
        print(f"  {T} tasks: >= 93% in {np.mean(sub.coverage >= 0.93):.2f} of designs (mean success 0.1-0.9: "
              f"{np.mean(mid.coverage >= 0.93):.2f}), lowest {sub.coverage.min():.3f}")
    low = pk[pk.coverage < 0.93].sort_values("coverage")
    print("below 93% (new rule):" if len(low) else "below 93% (new rule): none")
    if len(low):
        print(low.head(25).round(4).to_string(index=False))
    print(f"({time.perf_counter() - t0:.1f} s; machine shared, load high)")
    if not args.no_horizon:
        t1 = time.perf_counter()
        ht = horizon_table(args.horizon_reps, args.boot, args.seed + 1)
        print(f"\ntime horizons: coverage of the 95% intervals ({args.horizon_reps} replicates, {args.boot} bootstrap "
              "draws each); bootstrap = METR's percentile interval (the old default), profile = profile likelihood "
              "(F on tasks - 2 df), union = both (the default); widths in doublings, unbounded = share with an "
              "infinite end")
        print(ht.round(3).to_string(index=False))
        print(f"({time.perf_counter() - t1:.1f} s; machine shared, load high)")


if __name__ == "__main__":
    main()
