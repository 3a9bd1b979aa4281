"""Issue 41, point 5: speed of :func:`mixedeval.bayes_glmm` against the same ``stan_glmer`` call in
plain R.

Design (``--design issue``): 10 systems x 50 tasks x 5 attempts (0/1), 4 chains x 2000 iterations;
``--design small``: 3 systems x 20 tasks x 5 attempts (seconds per fit). For each ``--cores``
setting (default 1 and 2) and each of ``--repeat`` rounds, in turn:

* **Rscript**: a new ``Rscript`` process runs ``rstanarm::stan_glmer(cbind(successes, failures) ~
  system + (1 | item), family = binomial(), chains, iter, seed = 1, refresh = 0, cores)`` on the same
  cells; timed inside R around the call (``proc.time``: wall, and CPU of R plus its forked chains);
* **rpy2**: the same R function in this process's embedded R, called through rpy2 directly (no
  mixedeval): once as rpy2 leaves R (interactive, ``rpy2 (interactive)``) and, with ``cores > 1``,
  once with R's interactive flag off as in ``Rscript`` (``rpy2 (as Rscript)``);
* **mixedeval**: ``me.bayes_glmm(..., loo=False, ppc=False, frequentist=False)`` (the same Stan
  call plus the draws' conversion, the diagnostics, the marginal rates and the answer), wall and
  CPU time of this process and of its waited-for children (the forked chains).

The minimum over the rounds of each is reported (a shared machine only ever adds time), and the
ratio mixedeval / Rscript of the wall and of the CPU times (and of the median CPU times) (the CPU time moves less with the load
of other jobs). CPU times of PSOCK workers (``rpy2 (interactive)`` with ``cores > 1``: new R
processes, not children) are not counted: shown as ``-``. Then the full call with its checks
(loo fits a second model without task effects; posterior predictive draws; the frequentist GLMM)
once, with the time of each check.

Why the embedded R was slower with ``cores > 1``: ``rstan::sampling`` forks the R process per
chain (``parallel::mclapply``) only when ``!interactive() || isatty(stdout())``; otherwise it
starts a PSOCK cluster: new R processes that load rstan (seconds each). ``Rscript`` is not
interactive; rpy2's embedded R is. ``me.bayes_glmm`` now turns the flag off for its fit
(``mixedeval.engine._bridge.bayes_chain_mode``), so its chains fork as in ``Rscript``.

Target (the issue): the fit in under 60 s on this 2-core machine, ratio <= 1.1.

Run: .venv/bin/python benchmarks/bench_bayes.py [--design issue|small] [--repeat 3] [--iter 2000]
     [--chains 4] [--cores 1 2] [--no-full]
"""
from __future__ import annotations

import argparse
import functools
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mixedeval as me  # noqa: E402 - this checkout, not an installed copy

#: the timed R call, shared by Rscript and the embedded R (defines bench_fit(dir, iter, cores, chains))
R_FIT = """
bench_fit <- function(dir, iter, cores, chains) {
  d <- read.csv(file.path(dir, "cells.csv"), stringsAsFactors = FALSE)
  data <- data.frame(system = factor(d$system, levels = readLines(file.path(dir, "systems.txt"))),
                     item = factor(d$item, levels = readLines(file.path(dir, "items.txt"))),
                     successes = d$successes, failures = d$failures)
  t0 <- proc.time()
  m <- rstanarm::stan_glmer(cbind(successes, failures) ~ system + (1 | item), data = data,
                            family = binomial(), chains = as.integer(chains), iter = as.integer(iter),
                            seed = 1L, refresh = 0L, cores = as.integer(cores), open_progress = FALSE)
  dt <- proc.time() - t0
  c(dt[["elapsed"]], dt[["user.self"]] + dt[["sys.self"]] + dt[["user.child"]] + dt[["sys.child"]],
    as.matrix(m)[1, 1])
}
"""
R_SCRIPT = R_FIT + """
suppressMessages(library(rstanarm))
a <- commandArgs(trailingOnly = TRUE)
cat(format(bench_fit(a[1], a[2], a[3], a[4]), digits = 17), "\\n")
"""

DESIGNS = {"issue": (10, 50, 5), "small": (3, 20, 5)}


def design(name: str = "issue", seed: int = 0) -> pd.DataFrame:
    """0/1 attempts of systems x tasks x attempts: logit P = a_system + u_task, u ~ N(0, 1.5)."""
    n_sys, n_tasks, n_att = DESIGNS[name]
    rng = np.random.default_rng(seed)
    a = np.linspace(-1.0, 1.0, n_sys)
    u = rng.normal(0, 1.5, n_tasks)
    rows = [{"system": f"sys{s:02d}", "item": f"task{i:02d}", "epoch": e,
             "score": float(rng.random() < 1 / (1 + np.exp(-(a[s] + u[i]))))}
            for s in range(n_sys) for i in range(n_tasks) for e in range(n_att)]
    return pd.DataFrame(rows)


def _cpu() -> float:
    """CPU seconds of this process and of its waited-for children (forked chains)."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class Embedded:
    """The R function :data:`R_FIT` in this process's embedded R, through rpy2 directly."""

    def __init__(self) -> None:
        from mixedeval.engine import session  # noqa: PLC0415 - starts R

        session.helper_env()
        import rpy2.rinterface as ri  # noqa: PLC0415
        from rpy2.rinterface_lib import openrlib  # noqa: PLC0415

        self.ri, self.rlib, self.lock = ri, openrlib.rlib, session.lock
        with self.lock:
            ri.baseenv["eval"](ri.parse(R_FIT + "\nsuppressMessages(library(rstanarm))"), ri.globalenv)

    def fit(self, d: Path, iter: int, cores: int, chains: int, interactive: bool) -> list[float]:  # noqa: A002
        ri = self.ri
        with self.lock:
            before = self.rlib.R_Interactive
            self.rlib.R_Interactive = int(interactive)  # rpy2 leaves it TRUE; Rscript runs FALSE
            try:
                c0 = _cpu()
                out = ri.globalenv["bench_fit"](ri.StrSexpVector([str(d)]), ri.IntSexpVector([iter]),
                                                ri.IntSexpVector([cores]), ri.IntSexpVector([chains]))
                cpu = _cpu() - c0  # R's proc.time misses nothing here but counts the same
            finally:
                self.rlib.R_Interactive = before
        wall, _, first = list(out)
        return [wall, cpu, first]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--design", choices=sorted(DESIGNS), default="issue")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--iter", type=int, default=2000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-full", action="store_true", help="skip the full call with its checks")
    args = ap.parse_args()
    df = design(args.design)
    g = df.groupby(["system", "item"], sort=True)["score"]
    cells = pd.DataFrame({"successes": g.sum().astype(int), "failures": (g.count() - g.sum()).astype(int)}).reset_index()
    tmp = Path(tempfile.mkdtemp())
    cells.to_csv(tmp / "cells.csv", index=False)
    (tmp / "systems.txt").write_text("\n".join(sorted(df["system"].unique())) + "\n")
    (tmp / "items.txt").write_text("\n".join(sorted(df["item"].unique())) + "\n")
    (tmp / "fit.R").write_text(R_SCRIPT)
    n_sys, n_tasks, n_att = DESIGNS[args.design]
    print(f"{n_sys} systems x {n_tasks} tasks x {n_att} attempts, {args.chains} chains x {args.iter} iterations; "
          f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    kw = dict(epoch="epoch", chains=args.chains, iter=args.iter, random_state=1, progress=False)
    me.bayes_glmm(df[df["item"].isin(sorted(df["item"].unique())[:2])], loo=False, ppc=False, frequentist=False,
                  **{**kw, "iter": 200, "cores": 1})  # start R, load rstanarm
    emb = Embedded()
    rows = []
    for cores in args.cores:
        t: dict[str, list[list[float]]] = {}
        for _ in range(args.repeat):
            out = subprocess.run(["Rscript", str(tmp / "fit.R"), str(tmp), str(args.iter), str(cores),
                                  str(args.chains)], capture_output=True, text=True, check=True)
            t.setdefault("Rscript", []).append([float(x) for x in out.stdout.split()[-3:]])
            for inter in ([True, False] if cores > 1 else [True]):
                name = "rpy2" if cores == 1 else ("rpy2 (interactive)" if inter else "rpy2 (as Rscript)")
                t.setdefault(name, []).append(emb.fit(tmp, args.iter, cores, args.chains, inter))
            t0, c0 = time.perf_counter(), _cpu()
            res = me.bayes_glmm(df, loo=False, ppc=False, frequentist=False, cores=cores, **kw)
            t.setdefault("mixedeval", []).append([time.perf_counter() - t0, _cpu() - c0,
                                                  float(res.parameter_draws.iloc[0, 0])])
            print(f"  cores={cores}: " + "; ".join(f"{k} {v[-1][0]:.1f} s (CPU {v[-1][1]:.1f} s)" for k, v in t.items())
                  + f"  [load {os.getloadavg()[0]:.1f}; mixedeval chains: {res.provenance['parallel_chains']}]",
                  flush=True)
        firsts = {k: v[0][2] for k, v in t.items()}
        same = len({round(x, 12) for x in firsts.values()}) == 1
        r_wall, r_cpu = min(v[0] for v in t["Rscript"]), min(v[1] for v in t["Rscript"])
        r_cpu_med = float(np.median([v[1] for v in t["Rscript"]]))
        for k, v in t.items():
            w, c = min(x[0] for x in v), min(x[1] for x in v)
            psock = k == "rpy2 (interactive)" and cores > 1
            rows.append({"cores": cores, "run": k, "wall_min": w, "cpu_min": np.nan if psock else c,
                         "ratio_wall": w / r_wall, "ratio_cpu": np.nan if psock else c / r_cpu,
                         "ratio_cpu_median": np.nan if psock else float(np.median([x[1] for x in v])) / r_cpu_med})
        print(f"  cores={cores}: first draw equal in all runs: {same}", flush=True)
    tab = pd.DataFrame(rows)
    print(f"\nminimum over {args.repeat} rounds (wall and CPU in s; ratios to Rscript; CPU '-' = PSOCK workers "
          "not counted):")
    print(tab.to_string(index=False, float_format=lambda x: f"{x:.3f}", na_rep="-"))
    for cores in args.cores:
        m = tab[(tab["cores"] == cores) & (tab["run"] == "mixedeval")].iloc[0]
        print(f"ratio mixedeval / Rscript, cores={cores}: wall {m['ratio_wall']:.3f}, CPU {m['ratio_cpu']:.3f} "
              f"(of the medians {m['ratio_cpu_median']:.3f}) (target <= 1.1)")
    print(f"draws {res.provenance['n_draws']}; max R-hat {res.diagnostics['rhat'].max():.3f}; "
          f"load average at end {os.getloadavg()[0]:.1f}")
    if not args.no_full:
        full_call(df, kw, max(args.cores))


def full_call(df: pd.DataFrame, kw: dict, cores: int) -> None:
    """The full call with its checks, each check timed (wall and CPU)."""
    from mixedeval.workflows.agentic import _bayes_checks as checks  # noqa: PLC0415

    times: dict[str, list[float]] = {}

    def timed(name: str, f):
        @functools.wraps(f)
        def g(*a, **k):
            t0, c0 = time.perf_counter(), _cpu()
            try:
                return f(*a, **k)
            finally:
                times[name] = [time.perf_counter() - t0, _cpu() - c0]
        return g

    saved = {n: getattr(checks, n) for n in ("ppc", "loo_table", "frequentist_row")}
    labels = {"ppc": "posterior predictive checks", "loo_table": "loo (a second fit without task effects + loo)",
              "frequentist_row": "frequentist GLMM (lme4)"}
    for n, f in saved.items():
        setattr(checks, n, timed(labels[n], f))
    try:
        t0, c0 = time.perf_counter(), _cpu()
        full = me.bayes_glmm(df, cores=cores, **kw)
        tot = [time.perf_counter() - t0, _cpu() - c0]
    finally:
        for n, f in saved.items():
            setattr(checks, n, f)
    chk = sum(v[0] for v in times.values()), sum(v[1] for v in times.values())
    print(f"\nfull call (cores={cores}) with loo, PPC and the frequentist GLMM: {tot[0]:.1f} s (CPU {tot[1]:.1f} s); "
          f"load {os.getloadavg()[0]:.1f}")
    for k, (w, c) in times.items():
        print(f"  {k}: {w:.1f} s (CPU {c:.1f} s)")
    print(f"  the fit and the rest: {tot[0] - chk[0]:.1f} s (CPU {tot[1] - chk[1]:.1f} s); the checks add "
          f"{chk[0] / (tot[0] - chk[0]):.0%} wall, {chk[1] / (tot[1] - chk[1]):.0%} CPU")
    print(full.checks[["check", "verdict"]].to_string(index=False))


if __name__ == "__main__":
    main()
