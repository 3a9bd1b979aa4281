"""Issue 41, point 4 (Bayesian part): coverage of :func:`mixedeval.bayes_glmm`'s 95% credible
intervals beside mixedeval's frequentist intervals on the same simulated data sets, on the grid of
5-50 tasks x 1-10 attempts x success rates 0.02-0.98 (resumable: ``benchmarks/results/``).

Simulation: two systems A and B, ``n_tasks`` tasks x ``n_attempts`` attempts, 0/1 success with
``logit P = mu_s + u_t``, ``u_t ~ N(0, 1)`` shared by the two systems (paired tasks; a new draw of
the tasks per data set). The estimand of both analyses is each system's success rate on the
population of tasks, ``E_u[logit^-1(mu_s + u)]`` (numerical integration), and the difference B - A.
``mu_A`` is set so that A's population rate is the design's ``rate`` (0.02, 0.2, 0.5, 0.8, 0.98);
``mu_B = mu_A + 0.5`` towards the middle (``mu_A - 0.5`` when the rate is above 0.5): B differs by
half a logit (0.02 -> 0.032, 0.2 -> 0.277, 0.5 -> 0.602, 0.8 -> 0.723, 0.98 -> 0.968).

Intervals, each 95%:

* ``bayes``: :func:`mixedeval.bayes_glmm` (``rstanarm::stan_glmer``, binomial, rstanarm's default
  priors), the equal-tailed credible interval of each marginal rate and of the difference; 2 chains
  x ``--iter`` iterations (default 1000: 1,000 post-warm-up draws; the quantiles 2.5% / 97.5% of
  1,000 draws with tail-ESS in the hundreds move the interval's ends by a few percent of the
  posterior SD, which changes coverage by far less than its Monte-Carlo SE here -- the CSV keeps
  each fit's smallest tail-ESS, largest R-hat and divergences to check this);
* ``freq``: :func:`mixedeval.summarize`'s answer (the leaderboard's interval: Inspect's t interval
  of the mean over tasks, a Wilson interval near 0 or 1; the difference: the paired t interval,
  Newcombe's hybrid score interval near 0 or 1 -- what a user reads);
* ``t``: the plain t interval of ``summarize``'s table (``conf_low``/``conf_high``, no switch) and
  the paired t of the difference on T - 1 df (what Inspect prints).

Coverage is the share of data sets whose interval contains the true value, with its Monte-Carlo
SE ``sqrt(c (1 - c) / n)``; an interval of zero width (every attempt failed) misses.

Resumable: every data set is one row of ``benchmarks/results/calibration_bayes.csv`` (its data are
seeded by the design and replicate number, so a resumed run continues the same sequence). The grid
is run in passes (``--batch`` replicates of every design per pass) so that a run stopped at any
time (``--max-minutes``, Ctrl-C) leaves every design with about the same number of replicates.
``--workers N --worker I`` runs the designs with index ``I mod N`` (several processes, one CSV).

Run: ``nice -n 10 python benchmarks/calibration_bayes.py [--reps 100] [--max-minutes 80]``;
``--report`` prints the table from the CSV only; ``--quick``: 2 designs x 3 data sets (-> results/
calibration_bayes_quick.csv).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import integrate, optimize, stats
from scipy.special import expit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mixedeval as me  # noqa: E402 - this checkout, not an installed copy

RESULTS = ROOT / "benchmarks" / "results"
CSV, QUICK_CSV = RESULTS / "calibration_bayes.csv", RESULTS / "calibration_bayes_quick.csv"
TASKS, ATTEMPTS, RATES = (5, 10, 20, 50), (1, 3, 10), (0.02, 0.2, 0.5, 0.8, 0.98)
GRID = [(t, a, r) for t in TASKS for a in ATTEMPTS for r in RATES]
QUICK = [(5, 1, 0.02), (10, 3, 0.5)]
TASK_SD = 1.0
SHIFT = 0.5
METHODS = ("bayes", "freq", "t")
COLUMNS = ["tasks", "attempts", "rate", "rep", "truth_a", "truth_b",
           *[f"{m}_{q}" for m in METHODS for q in ("hit_a", "hit_b", "hit_diff", "width_a", "width_diff")],
           "rhat_max", "ess_tail_min", "divergences", "seconds"]


def pop_rate(mu: float, sd: float = TASK_SD) -> float:
    f = lambda z: expit(mu + sd * z) * np.exp(-z * z / 2) / np.sqrt(2 * np.pi)  # noqa: E731
    return float(integrate.quad(f, -np.inf, np.inf)[0])


def mu_for(rate: float) -> float:
    return float(optimize.brentq(lambda m: pop_rate(m) - rate, -20, 20))


def mus_of(rate: float) -> tuple[float, float]:
    mu = mu_for(rate)
    return mu, mu + (SHIFT if rate <= 0.5 else -SHIFT)


def simulate(rng: np.random.Generator, n_tasks: int, n_attempts: int, mus: tuple[float, float]) -> pd.DataFrame:
    u = rng.normal(0, TASK_SD, n_tasks)
    p = expit(np.asarray(mus)[:, None] + u[None, :])
    y = rng.random((2, n_tasks, n_attempts)) < p[:, :, None]
    s, t, e = np.meshgrid(np.arange(2), np.arange(n_tasks), np.arange(n_attempts), indexing="ij")
    return pd.DataFrame({"system": np.array(["A", "B"])[s.ravel()], "item": [f"t{i:02d}" for i in t.ravel()],
                         "epoch": e.ravel(), "score": y.ravel().astype(float)})


def covers(lo: float, hi: float, truth: float) -> bool:
    return bool(hi > lo and lo <= truth <= hi)


def _diff(pw: pd.DataFrame) -> tuple[float, float]:
    """The B - A interval of a pairwise table (its rows are best first: either order)."""
    r = pw.iloc[0]
    sign = 1.0 if (str(r["system_a"]), str(r["system_b"])) == ("B", "A") else -1.0
    lo, hi = sorted((sign * float(r["conf_low"]), sign * float(r["conf_high"])))
    return lo, hi


def one(df: pd.DataFrame, truth: tuple[float, float], seed: int, iter_: int) -> dict[str, float]:
    """The three analyses of one data set: hits and widths."""
    t0 = time.perf_counter()
    b = me.bayes_glmm(df, epoch="epoch", chains=2, iter=iter_, cores=1, progress=False, loo=False, ppc=False,
                      frequentist=False, random_state=seed, higher_is_better=True)
    secs = time.perf_counter() - t0
    f = me.summarize(df, epoch="epoch", higher_is_better=True)
    d_true = truth[1] - truth[0]
    ints: dict[str, dict[str, tuple[float, float]]] = {}
    bt = b.table.set_index("system")
    ints["bayes"] = {s: (bt.loc[s, "conf_low"], bt.loc[s, "conf_high"]) for s in ("A", "B")}
    ints["bayes"]["diff"] = _diff(b.pairwise)
    lb = f.answer.leaderboard.set_index("name")
    ints["freq"] = {s: (lb.loc[s, "conf_low"], lb.loc[s, "conf_high"]) for s in ("A", "B")}
    ints["freq"]["diff"] = _diff(f.pairwise)
    ft = f.table.set_index("system")
    ints["t"] = {s: (ft.loc[s, "conf_low"], ft.loc[s, "conf_high"]) for s in ("A", "B")}
    wide = df.pivot_table(index="item", columns="system", values="score", aggfunc="mean")
    dd = (wide["B"] - wide["A"]).to_numpy()
    n = dd.size
    half = stats.t.ppf(0.975, n - 1) * dd.std(ddof=1) / np.sqrt(n)
    ints["t"]["diff"] = (dd.mean() - half, dd.mean() + half)
    out: dict[str, float] = {}
    for m, iv in ints.items():
        out[f"{m}_hit_a"] = covers(*iv["A"], truth[0])
        out[f"{m}_hit_b"] = covers(*iv["B"], truth[1])
        out[f"{m}_hit_diff"] = covers(*iv["diff"], d_true)
        out[f"{m}_width_a"] = float(iv["A"][1] - iv["A"][0])
        out[f"{m}_width_diff"] = float(iv["diff"][1] - iv["diff"][0])
    diag = b.diagnostics
    out["rhat_max"] = float(np.nanmax(diag["rhat"])) if "rhat" in diag else np.nan
    out["ess_tail_min"] = float(np.nanmin(diag["ess_tail"])) if "ess_tail" in diag else np.nan
    div = getattr(b, "divergences", None)
    out["divergences"] = float(np.sum(div)) if div is not None else np.nan
    out["seconds"] = secs
    return out


def _seed(cell: int, rep: int, base: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([base, cell, rep]))


def _append(path: Path, row: dict) -> None:
    line = ",".join("" if (isinstance(row[c], float) and np.isnan(row[c])) else
                    (f"{row[c]:.6g}" if isinstance(row[c], float) else str(int(row[c]) if isinstance(row[c], (bool, np.bool_)) else row[c]))
                    for c in COLUMNS) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())  # one write per row: safe with several worker processes
    finally:
        os.close(fd)


def read(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    return pd.read_csv(path)


def summary(raw: pd.DataFrame) -> pd.DataFrame:
    """Per design: replicates, coverage of each interval (A's rate, B's rate, the difference),
    median widths, the Monte-Carlo SE at 95%."""
    g = raw.groupby(["tasks", "attempts", "rate"])
    cols = {"n_rep": g.size()}
    for m in METHODS:
        cols[f"{m}_rate"] = g[f"{m}_hit_a"].mean()
        cols[f"{m}_rate_b"] = g[f"{m}_hit_b"].mean()
        cols[f"{m}_diff"] = g[f"{m}_hit_diff"].mean()
    for m in ("bayes", "freq"):
        cols[f"{m}_width"] = g[f"{m}_width_a"].median()
    cols["ess_tail_min"] = g["ess_tail_min"].min()
    cols["fit_s"] = g["seconds"].median()
    t = pd.DataFrame(cols).reset_index()
    t["mc_se"] = np.sqrt(0.95 * 0.05 / t["n_rep"])
    return t


def pooled(raw: pd.DataFrame) -> pd.DataFrame:
    """Coverage pooled over designs (every data set weighs the same): by task count and by rate
    zone (``extreme``: 0.02 and 0.98; ``middle``: 0.2-0.8), with the Monte-Carlo SE
    ``sqrt(c (1 - c) / n)`` (at least that of 95%). Few replicates per design say little about one
    design; the pooled rows are what the docs state."""
    r = raw.assign(zone=np.where(raw["rate"].isin([0.02, 0.98]), "extreme", "middle"))
    out = []
    for keys, g in [(("all", "all"), r), *[((t, "all"), g) for t, g in r.groupby("tasks")],
                    *[((t, z), g) for (t, z), g in r.groupby(["tasks", "zone"])]]:
        row = {"tasks": keys[0], "rates": keys[1], "designs": g.groupby(["tasks", "attempts", "rate"]).ngroups,
               "n": len(g)}
        for m in METHODS:
            row[f"{m}_rate"] = g[f"{m}_hit_a"].mean()
            row[f"{m}_diff"] = g[f"{m}_hit_diff"].mean()
        c = min(row["bayes_rate"], row["freq_rate"], 0.95)
        row["mc_se"] = float(np.sqrt(c * (1 - c) / len(g)))
        row["bayes_width"] = g["bayes_width_a"].median()
        row["freq_width"] = g["freq_width_a"].median()
        out.append(row)
    return pd.DataFrame(out)


def pooled_markdown(p: pd.DataFrame) -> str:
    """The pooled table of the docs (coverage %)."""
    rows = ["| tasks | rates | designs | data sets | credible rate | freq. rate (t/Wilson) | t rate | credible diff | "
            "freq. diff (t/Newcombe) | t diff | MC SE | median width: credible / freq. |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in p.itertuples():
        def c(v: float) -> str:
            s = f"{100 * v:.1f}"
            return f"**{s}**" if v < 0.93 - 2 * r.mc_se else s
        rows.append(f"| {r.tasks} | {r.rates} | {r.designs} | {r.n} | {c(r.bayes_rate)} | {c(r.freq_rate)} | {c(r.t_rate)} | "
                    f"{c(r.bayes_diff)} | {c(r.freq_diff)} | {c(r.t_diff)} | {100 * r.mc_se:.1f} | "
                    f"{r.bayes_width:.3f} / {r.freq_width:.3f} |")
    return "\n".join(rows)


def verdicts(t: pd.DataFrame) -> list[str]:
    """Where each interval is outside 93-97% by more than twice the Monte-Carlo SE, and where the
    credible interval is closer to 95% than the frequentist one."""
    lines = []
    tol = 2 * t["mc_se"]
    for m in METHODS:
        for q in ("rate", "diff"):
            low = t[t[f"{m}_{q}"] < 0.93 - tol]
            lines.append(f"{m:5s} {q:4s}: below 93% beyond 2 MC SE in {len(low)} of {len(t)} designs"
                         + (": " + "; ".join(f"{int(r['tasks'])}x{int(r['attempts'])} @{r['rate']:g} {r[f'{m}_{q}']:.2f}"
                                             for _, r in low.iterrows()) if len(low) else ""))
    for q in ("rate", "diff"):
        better = (np.abs(t[f"bayes_{q}"] - 0.95) < np.abs(t[f"freq_{q}"] - 0.95) - tol)
        worse = (np.abs(t[f"bayes_{q}"] - 0.95) > np.abs(t[f"freq_{q}"] - 0.95) + tol)
        lines.append(f"{q}: credible closer to 95% than the frequentist answer by > 2 MC SE in {int(better.sum())} designs, "
                     f"farther in {int(worse.sum())}" + (": " + "; ".join(
                         f"{r.tasks}x{r.attempts} @{r.rate:g}" for r in t[worse].itertuples()) if worse.any() else ""))
    return lines


def markdown(t: pd.DataFrame) -> str:
    """The table of the docs (coverage %, A's rate and the difference)."""
    head = ("| tasks x attempts | rate A | reps | credible rate | freq. rate (t/Wilson) | t rate | credible diff | "
            "freq. diff (t/Newcombe) | t diff |\n|---|---|---|---|---|---|---|---|---|")
    rows = [head]
    for r in t.itertuples():
        def c(v: float) -> str:
            s = f"{100 * v:.0f}"
            return f"**{s}**" if v < 0.93 - 2 * r.mc_se else s
        rows.append(f"| {r.tasks} x {r.attempts} | {r.rate:g} | {r.n_rep} | {c(r.bayes_rate)} | {c(r.freq_rate)} | "
                    f"{c(r.t_rate)} | {c(r.bayes_diff)} | {c(r.freq_diff)} | {c(r.t_diff)} |")
    return "\n".join(rows)


def run(cells: list[tuple[int, int, float]], reps: int, batch: int, iter_: int, path: Path, base: int,
        deadline: float, worker: int, workers: int) -> None:
    truths = {c: mus_of(c[2]) for c in cells}
    mine = [i for i in range(len(cells)) if i % workers == worker]
    while time.time() < deadline:
        raw = read(path)
        done = raw.groupby(["tasks", "attempts", "rate"]).size().to_dict() if len(raw) else {}
        todo = [i for i in mine if done.get(cells[i], 0) < reps]
        if not todo:
            break
        for i in todo:
            n_tasks, n_att, rate = cells[i]
            have = done.get(cells[i], 0)
            mus = truths[cells[i]]
            truth = (pop_rate(mus[0]), pop_rate(mus[1]))
            for rep in range(have, min(have + batch, reps)):
                if time.time() >= deadline:
                    return
                df = simulate(_seed(GRID.index(cells[i]) if cells[i] in GRID else 1000 + QUICK.index(cells[i]), rep, base),
                              n_tasks, n_att, mus)
                res = one(df, truth, seed=rep + 1, iter_=iter_)
                _append(path, {"tasks": n_tasks, "attempts": n_att, "rate": rate, "rep": rep, "truth_a": truth[0],
                               "truth_b": truth[1], **res})
                print(f"{n_tasks}x{n_att} @{rate:g} rep {rep}: {res['seconds']:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=100, help="data sets per design (default 100)")
    ap.add_argument("--batch", type=int, default=2, help="data sets of each design per pass")
    ap.add_argument("--iter", type=int, default=1000, help="Stan iterations per chain (2 chains; half warm-up)")
    ap.add_argument("--max-minutes", type=float, default=float("inf"))
    ap.add_argument("--random-state", type=int, default=2026)
    ap.add_argument("--tasks", type=int, nargs="+", default=None, help="only the designs with these task counts")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--worker", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="2 designs x 3 data sets -> results/calibration_bayes_quick.csv")
    ap.add_argument("--report", action="store_true", help="print the table from the CSV only")
    ap.add_argument("--markdown", action="store_true", help="also print the docs' markdown table")
    a = ap.parse_args(argv)
    path = QUICK_CSV if a.quick else CSV
    cells = QUICK if a.quick else [c for c in GRID if a.tasks is None or c[0] in a.tasks]
    reps = 3 if a.quick else a.reps
    RESULTS.mkdir(exist_ok=True)
    if not path.exists():
        path.write_text(",".join(COLUMNS) + "\n")
    t0 = time.time()
    if not a.report:
        run(cells, reps, a.batch, 400 if a.quick else a.iter, path, a.random_state, t0 + 60 * a.max_minutes,
            a.worker, a.workers)
    raw = read(path)
    t = summary(raw)
    pd.set_option("display.width", 250)
    print(f"\ncoverage of 95% intervals ({path.relative_to(ROOT)}: {len(raw)} data sets; task SD {TASK_SD} logit; "
          f"B = A + {SHIFT} logit towards 0.5); this run {time.time() - t0:.0f} s (machine shared, load high)")
    print(t.round(3).to_string(index=False))
    print("\n".join(verdicts(t)))
    pool = pooled(raw)
    print("\npooled over designs (coverage of A's rate and of the difference B - A):")
    print(pool.round(3).to_string(index=False))
    if a.markdown:
        print(markdown(t))
        print()
        print(pooled_markdown(pool))
    return t


if __name__ == "__main__":
    main()
