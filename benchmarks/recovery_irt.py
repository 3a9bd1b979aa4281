"""Recovery of 2PL item parameters by me.irt (issue 32, point 6): simulate banks, fit them, and
correlate the estimates with the truth -- over several simulated data sets, per engine and
estimator, so that one lucky or unlucky seed does not decide.

Design (the issue's): ``--systems`` systems (300, and 100 for the second row) x ``--items`` items
(200), abilities N(0, 1), discriminations lognormal(0, 0.5), difficulties N(0, 1), one 0/1 answer
per system and item; seeds ``--seed``, ``--seed + 1``, ... (``--n-seeds``, default 5). The model
and the simulation share one convention, ``logit P = discrimination x (ability - difficulty)``
with abilities N(0, 1), so estimates and truth are compared like with like (Pearson correlations
are invariant to the linear change of scale between the sample's abilities and N(0, 1)).

Estimators (``--estimators``, any of):

* ``r``: ``me.irt(model="2pl")``, glmmTMB's reduced-rank fit (Laplace ML); minutes per fit at
  300 x 200 (10 minutes on a loaded 2-core machine);
* ``numpy``: ``me.irt(model="2pl", engine="numpy")``, the same Laplace likelihood maximised by
  the numpy engine (equal to glmmTMB within 3e-6 on the item parameters: tests/test_irt_engines.py);
* ``numpy-agq``: the numpy engine with 21 adaptive Gauss-Hermite nodes (``nagq=21``, exact ML);
* ``numpy-map``: ``discrimination_prior="bilog"``, MAP estimates with BILOG-MG's lognormal(0, 0.5)
  slope prior. Note that this prior *is* the distribution the discriminations are drawn from here,
  the most favourable case for it.

Printed per fit and as mean [min, max] over the seeds: Pearson correlation of the estimated
discriminations and difficulties with the true ones (the issue's targets: >= 0.9 and >= 0.97 at
300 systems; at 100 systems "the information bounds the first near 0.8"), Spearman correlations
(robust to the few items whose ML slope runs off), the correlation of the intercepts
``-discrimination x difficulty`` (the parameter the fits estimate directly), of the abilities,
the abilities' mean standard error and the coverage of the true abilities by the fit's 95%
intervals (and by intervals from the conditional SD alone, item parameters held fixed: issue 42),
the number of items flagged unstable, and the fit's time.

    .venv/bin/python benchmarks/recovery_irt.py [--systems 300 100] [--items 200] [--seed 1] [--n-seeds 5]
        [--estimators numpy numpy-map] [--quick] [--save DIR]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import stats

import mixedeval as me

ESTIMATORS = {
    "r": {"engine": "r"},
    "numpy": {"engine": "numpy"},
    "numpy-agq": {"engine": "numpy", "nagq": 21},
    "numpy-map": {"engine": "numpy", "discrimination_prior": "bilog"},
}


def simulate(n_sys: int, n_items: int, seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = np.exp(rng.normal(0.0, 0.5, n_items))
    b = rng.normal(0.0, 1.0, n_items)
    th = rng.normal(0.0, 1.0, n_sys)
    p = 1.0 / (1.0 + np.exp(-a[None, :] * (th[:, None] - b[None, :])))
    y = (rng.random(p.shape) < p).astype(int)
    df = pd.DataFrame({"system": np.repeat([f"s{i:04d}" for i in range(n_sys)], n_items),
                       "item": np.tile([f"i{j:04d}" for j in range(n_items)], n_sys), "score": y.ravel()})
    return df, a, b, th


def _cor(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.corrcoef(x, y)[0, 1])


def ability_coverage(r, th: np.ndarray, df: pd.DataFrame, level: float = 0.95) -> dict:
    """Mean ability standard error and coverage of the true abilities by the fit's intervals
    (its ``std_error``: glmmTMB's sdreport, the numpy engine's joint one) and by intervals from
    the conditional SD alone (item parameters held fixed: ``1 / sqrt(curvature)`` at the fit's
    modes), issue 42 item 5."""
    from mixedeval.inference._irt_numpy import posterior_modes  # noqa: PLC0415

    ab = r.abilities.set_index("system").loc[sorted(df["system"].unique())]
    se = ab["std_error"].to_numpy(dtype=float)
    est = ab["ability"].to_numpy(dtype=float)
    a, b = r.parameters()
    wide = df.pivot(index="system", columns="item", values="score").loc[ab.index, r.items["item"].astype(str)]
    Y = wide.to_numpy(dtype=float)
    N = np.isfinite(Y).astype(float)
    ok = np.isfinite(a) & np.isfinite(b)
    _, curv = posterior_modes(np.nan_to_num(Y)[:, ok], N[:, ok], a[ok], -a[ok] * b[ok], z0=est)
    se_c = 1 / np.sqrt(curv)
    q = stats.norm.ppf(0.5 + level / 2)
    return {"se_ability": float(se.mean()), "cover_ability": float(np.mean(np.abs(est - th) <= q * se)),
            "se_ability_conditional": float(se_c.mean()),
            "cover_ability_conditional": float(np.mean(np.abs(est - th) <= q * se_c))}


def one(n_sys: int, n_items: int, seed: int, estimator: str, save: str | None = None) -> dict:
    df, a, b, th = simulate(n_sys, n_items, seed)
    t0 = time.perf_counter()
    r = me.irt(df, "2pl", n_sim=0, progress=False, **ESTIMATORS[estimator])
    dt = time.perf_counter() - t0
    est_a, est_b = r.parameters()
    ok = np.isfinite(est_a) & np.isfinite(est_b)
    stable = ok & ~r.items["flag_reasons"].str.contains("unstable").to_numpy()
    if save:
        r.items.assign(true_discrimination=a, true_difficulty=b).to_csv(
            f"{save}/irt_2pl_{estimator}_{n_sys}x{n_items}_seed{seed}.csv", index=False)
    row = {"estimator": estimator, "systems": n_sys, "items": n_items, "seed": seed, "seconds": round(dt, 1),
           "cor_discrimination": _cor(est_a[ok], a[ok]), "cor_difficulty": _cor(est_b[ok], b[ok]),
           "spearman_discrimination": float(stats.spearmanr(est_a[ok], a[ok])[0]),
           "spearman_difficulty": float(stats.spearmanr(est_b[ok], b[ok])[0]),
           "cor_intercept": _cor(-(est_a * est_b)[ok], -(a * b)[ok]),
           "cor_ability": _cor(r.abilities["ability"].to_numpy(), th),
           **ability_coverage(r, th, df),
           "max_discrimination": float(np.nanmax(est_a)), "items_unstable": int((ok & ~stable).sum()),
           "estimated_by": r.provenance["estimator"]}
    print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return row


def summary(out: pd.DataFrame) -> pd.DataFrame:
    """mean, min and max over the seeds per estimator and size."""
    cols = ["cor_discrimination", "cor_difficulty", "spearman_discrimination", "spearman_difficulty",
            "cor_intercept", "cor_ability", "se_ability", "cover_ability", "se_ability_conditional",
            "cover_ability_conditional", "items_unstable", "seconds"]
    g = out.groupby(["estimator", "systems", "items"], sort=False)
    parts = {f"{c}_{s}": g[c].agg(s) for c in cols for s in ("mean", "min", "max")}
    res = pd.DataFrame(parts).reset_index()
    res.insert(3, "n_data_sets", g.size().to_numpy())
    return res


def verdicts(summ: pd.DataFrame, estimated_by: dict[str, str]) -> list[str]:
    lines = []
    for r in summ.itertuples():
        if r.systems >= 300:
            met_a, met_b = r.cor_discrimination_mean >= 0.9, r.cor_difficulty_mean >= 0.97
            tgt = (f"targets >= 0.9 / >= 0.97 on average: discrimination {'met' if met_a else 'MISSED'}, "
                   f"difficulty {'met' if met_b else 'MISSED'}")
        else:
            tgt = "issue: discrimination near 0.8 (the information bound)"
        lines.append(
            f"2PL {r.systems} x {r.items}, {r.estimator} [{estimated_by[r.estimator]}], {r.n_data_sets} data sets: "
            f"r(discrimination) {r.cor_discrimination_mean:.3f} [{r.cor_discrimination_min:.3f}, "
            f"{r.cor_discrimination_max:.3f}], r(difficulty) {r.cor_difficulty_mean:.3f} [{r.cor_difficulty_min:.3f}, "
            f"{r.cor_difficulty_max:.3f}], Spearman {r.spearman_discrimination_mean:.3f} / "
            f"{r.spearman_difficulty_mean:.3f}, r(intercept) {r.cor_intercept_mean:.3f}; {tgt}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, nargs="+", default=[300, 100])
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1, help="first seed; the data sets use seed, seed + 1, ...")
    ap.add_argument("--n-seeds", type=int, default=5, help="simulated data sets per size (default 5)")
    ap.add_argument("--estimators", nargs="+", default=["numpy", "numpy-map"], choices=list(ESTIMATORS),
                    help="r: glmmTMB (minutes per fit); numpy: the same Laplace ML in numpy (seconds); numpy-agq: "
                         "21-node adaptive quadrature ML; numpy-map: lognormal(0, 0.5) slope prior (MAP)")
    ap.add_argument("--quick", action="store_true", help="2 data sets, 100 systems only, numpy estimators")
    ap.add_argument("--save", default=None, help="folder for the estimates (CSV)")
    args = ap.parse_args()
    if args.quick:
        args.systems, args.n_seeds = [100], 2
        args.estimators = [e for e in args.estimators if e != "r"] or ["numpy"]
    rows = [one(s, args.items, args.seed + k, e, args.save)
            for s in args.systems for e in args.estimators for k in range(args.n_seeds)]
    out = pd.DataFrame(rows)
    summ = summary(out)
    with pd.option_context("display.width", 200, "display.max_columns", 40):
        print(out.drop(columns="estimated_by").to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print(summ[["estimator", "systems", "items", "n_data_sets", "cor_discrimination_mean", "cor_discrimination_min",
                    "cor_discrimination_max", "cor_difficulty_mean", "cor_difficulty_min", "cor_difficulty_max",
                    "items_unstable_mean", "seconds_mean"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        print("abilities (issue 42): mean standard error and coverage of the true abilities at 95%, by the fit's "
              "std_error and by the conditional SD alone")
        print(summ[["estimator", "systems", "items", "n_data_sets", "se_ability_mean", "cover_ability_mean",
                    "cover_ability_min", "cover_ability_max", "se_ability_conditional_mean",
                    "cover_ability_conditional_mean"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for line in verdicts(summ, dict(zip(out["estimator"], out["estimated_by"]))):
        print(line)


if __name__ == "__main__":
    main()
