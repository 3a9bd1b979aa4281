"""Bradley-Terry at arena scale: me.bradley_terry's fit + 1,000-replicate prompt bootstrap against
FastChat's current bootstrap, side by side in this run.

The baseline is FastChat's ``compute_bootstrap_bt`` (``fastchat/serve/monitor/rating_systems.py``,
lm-sys/FastChat, read at commit 2bdb2e0c), re-derived here from its source (FastChat is not
installed; its code is not copied, the computation is the same):

* ``preprocess_for_bt``: the battles become the distinct (model_a, model_b, outcome) triples with
  their counts (outcome 1 / 0.5 / 0 for an a-win / tie / b-win; ``np.unique(..., axis=0)``);
* the bootstrap draws ``rng.multinomial(n_battles, counts / n_battles, size=num_round)`` (a row
  bootstrap expressed on the triples, ``default_rng(seed=0)``) and divides by n_battles;
* ``fit_bt`` per replicate: ``scipy.optimize.minimize(method="L-BFGS-B", jac=True,
  options={"maxiter": 100, "gtol": 1e-6})`` of the weighted Bradley-Terry negative log-likelihood
  on the log(10)-scaled strengths (``bt_loss_and_grad``: ties as half a win, gradient gathered
  with ``np.add.at``), from zeros;
* the replicates run on ``multiprocessing.Pool(os.cpu_count())`` with ``imap_unordered``.

Left out (negligible cost): the tqdm bar, ``scale_and_offset`` (Elo = 400 * strength + 1000, here
applied without the baseline shift) and the final median sort of the replicates' DataFrame.

me.bradley_terry does more: it resamples prompts (the unit that was sampled), not rows; it fits
each replicate to its maximum (the chord iteration with the full data's information, then Newton's
method for the replicates it hands on; not L-BFGS-B stopped at 100 iterations). The
"same model" rows use FastChat's model (ties as half wins, no position effect); the "defaults"
rows add mixedeval's defaults (Davidson ties with a leniency, the position bias). Rank intervals
are left out (``ranks=False``: FastChat computes none). Each timing is one run (no
extrapolation); the machine is shared, so the ratio of the two measured in the same run is the
figure to read. A second ratio comes from CPU time, which other jobs disturb less: FastChat's
idle-machine time estimated as its process's CPU time plus its workers' CPU time divided by the
number of workers (they run in parallel), against mixedeval's CPU time (in-process, one thread).

    .venv/bin/python benchmarks/bench_bradley_terry.py                 # 1e5 / 30 and 1e6 / 100
    .venv/bin/python benchmarks/bench_bradley_terry.py --all           # the two sizes and --scale, one run
    .venv/bin/python benchmarks/bench_bradley_terry.py --all --quick   # the same with 200 replicates each
    .venv/bin/python benchmarks/bench_bradley_terry.py --sizes 100000:30:5000
    .venv/bin/python benchmarks/bench_bradley_terry.py --scale          # 300 models x 30,000 battles
    .venv/bin/python benchmarks/bench_bradley_terry.py --sandwich       # clustered sandwich vs arena-rank

``--sandwich`` (issue 40): 1,000,000 battles among 100 models on 100,000 prompts by 50,000 voters
(``--sandwich-size battles:models:prompts:judges``). mixedeval's fit with the two-way clustered
sandwich (``interval="sandwich", cluster=("judge", "prompt")``, ties as half wins, no position
term; with and without the rank intervals) and with arena-rank's own estimator and unclustered
sandwich (``estimator="arena-rank", cluster="battle"``: the same numbers as arena-rank), against
arena-rank 0.1.1's ``BradleyTerry.compute_ratings_and_cis(ci_method="sandwich")`` on the same
battles, run in arena-rank's own interpreter (it pins numpy 2.3.3: ``scripts/setup_peers.sh``,
``$MIXEDEVAL_ARENA_PYTHON`` or /work/venv-arena/bin/python) through
tests/peers/arena_rank_runner.py, twice: the first run includes JAX's compilation, the second
is warm. Both sides read the table from memory (arena-rank's timing starts after pandas read the
CSV; mixedeval's after the DataFrame exists).
"""
from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import time
from functools import partial

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit


def simulate(n: int, k: int, n_prompts: int, seed: int = 0) -> pd.DataFrame:
    """n battles among k models on n_prompts prompts, Davidson ties (nu 0.6)."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 0.8, size=k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    eta = s[a] - s[b]
    pa, pb, nu = np.exp(eta / 2), np.exp(-eta / 2), 0.6
    u = rng.random(n) * (pa + pb + nu)
    winner = np.where(u < pa, "model_a", np.where(u < pa + pb, "model_b", "tie"))
    names = np.array([f"model-{i:03d}" for i in range(k)])
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner,
                         "prompt": rng.integers(0, n_prompts, n)})


# ------------------------------------------------------------------ FastChat, re-derived (see above)
def fc_triples(df: pd.DataFrame):
    """preprocess_for_bt: distinct (a, b, outcome) triples, outcome in {0, 0.5, 1}, and their counts."""
    n = len(df)
    codes, models = pd.factorize(pd.concat([df["model_a"], df["model_b"]]))
    sched = np.ones((n, 3), dtype=np.int32)
    sched[:, 0], sched[:, 1] = codes[:n], codes[n:]
    w = df["winner"].to_numpy()
    sched[w == "model_a", 2] = 2
    sched[w == "model_b", 2] = 0
    uniq, counts = np.unique(sched, return_counts=True, axis=0)
    return uniq[:, :2], uniq[:, 2] / 2.0, list(models), counts.astype(float)


def fc_loss(r, pairs, y, w, alpha):
    """bt_loss_and_grad: weighted negative log-likelihood (ties half) and its gradient."""
    p = expit(alpha * (r[pairs[:, 0]] - r[pairs[:, 1]]))
    loss = -((np.log(p) * y + np.log(1.0 - p) * (1.0 - y)) * w).sum()
    g_pair = -alpha * (y - p) * w
    grad = np.zeros_like(r)
    np.add.at(grad, pairs, g_pair[:, None] * np.array([1.0, -1.0]))
    return loss, grad


def fc_fit(pairs, y, w, n_models, alpha, tol=1e-6):
    """fit_bt: L-BFGS-B from zeros, at most 100 iterations, gtol 1e-6."""
    return minimize(fc_loss, np.zeros(n_models), args=(pairs, y, w, alpha), jac=True, method="L-BFGS-B",
                    options={"maxiter": 100, "gtol": tol})["x"]  # (FastChat also passes disp=False)


def _one_thread() -> None:
    """Pool initializer: one BLAS thread per worker (OPENBLAS_NUM_THREADS=1 in effect)."""
    from threadpoolctl import threadpool_limits  # noqa: PLC0415 - in the worker

    threadpool_limits(limits=1, user_api="blas")


def fc_bootstrap_bt(df: pd.DataFrame, num_round: int, workers: int | None = None, as_is: bool = False) -> np.ndarray:
    """compute_bootstrap_bt: multinomial weights over the triples, one L-BFGS-B fit per replicate
    on a process pool; Elo = 400 * strength + 1000. Unless ``as_is``, each worker runs with one
    BLAS thread (FastChat's pool inherits one OpenBLAS thread per core in every worker: on a busy
    machine they spin against each other, which would flatter the ratio)."""
    pairs, y, models, w = fc_triples(df)
    rng = np.random.default_rng(seed=0)
    boot = rng.multinomial(len(df), w / w.sum(), size=num_round) / len(df)
    fn = partial(fc_fit, pairs, y, n_models=len(models), alpha=math.log(10.0))
    with mp.get_context("fork").Pool(workers or os.cpu_count(), initializer=None if as_is else _one_thread) as pool:
        ratings = np.array(list(pool.imap_unordered(fn, boot)))
    return 400.0 * ratings + 1000.0


#: CPU seconds by battles: FastChat's idle-machine time estimated from CPU time (its process plus its
#: pool workers' CPU divided by the number of workers: they run in parallel), mixedeval's defaults
CPU: dict[str, dict[int, float]] = {"fastchat": {}, "ours": {}}


def fastchat(df: pd.DataFrame, n: int, workers: int | None, as_is: bool = False) -> float:
    t0, c0 = time.perf_counter(), os.times()
    pairs, y, models, w = fc_triples(df)
    fc_fit(pairs, y, w, len(models), math.log(10.0))  # compute_bt on the full data
    fc_bootstrap_bt(df, n, workers, as_is)  # the pool's workers are joined (and their CPU time counted) on exit
    t, c1 = time.perf_counter() - t0, os.times()
    own = c1.user - c0.user + c1.system - c0.system
    kids = c1.children_user - c0.children_user + c1.children_system - c0.children_system
    CPU["fastchat"][len(df)] = own + kids / (workers or os.cpu_count())
    print(f"  (FastChat on {len(df):,} battles: {t:.2f} s, load average {os.getloadavg()[0]:.1f}; CPU {own:.2f} s + "
          f"workers {kids:.2f} s)", flush=True)
    return t


# ------------------------------------------------------------------ mixedeval
def ours(me, df: pd.DataFrame, n: int, *, prompt: str | None, same_model: bool, executor=None):
    kw = dict(ties="half", position_bias=False) if same_model else {}
    t0, c0 = time.perf_counter(), time.process_time()
    res = me.bradley_terry(df, prompt=prompt, n_resamples=n, random_state=0, ranks=False, progress=False,
                           executor=executor, **kw)
    if not same_model and executor is None:
        CPU["ours"][len(df)] = time.process_time() - c0
    return time.perf_counter() - t0, res


def cpu_line(n_battles: int) -> str:
    """The ratio of the idle-machine estimates from CPU time (less sensitive to other jobs)."""
    fc, me_ = CPU["fastchat"][n_battles], CPU["ours"][n_battles]
    return (f"  CPU time (an idle machine's time, less sensitive to the load): FastChat {fc:.2f} s (its process + its "
            f"workers' CPU / workers), mixedeval defaults {me_:.2f} s -> ratio {fc / me_:.1f}x")


def run_size(me, n_battles: int, k: int, n_prompts: int, t_fc: float, a: argparse.Namespace) -> None:
    df = simulate(n_battles, k, n_prompts)
    print(f"\n{n_battles:,} battles, {k} models, {n_prompts:,} prompts, {a.n_resamples} replicates "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"  FastChat compute_bootstrap_bt (row bootstrap, L-BFGS-B, Pool({a.workers or os.cpu_count()}), one BLAS "
          f"thread per worker{'; as is' if a.fastchat_as_is else ''}), fit + bootstrap: {t_fc:.2f} s")
    t_same, res = ours(me, df, a.n_resamples, prompt="prompt", same_model=True)
    print(f"  me.bradley_terry fit + prompt bootstrap, same model (half ties, no position), in-process: {t_same:.2f} s"
          f"  -> ratio FastChat / mixedeval = {t_fc / t_same:.1f}x  ({res.provenance['engine']})")
    t_ex, _ = ours(me, df, a.n_resamples, prompt="prompt", same_model=True, executor=a.workers or 2)
    print(f"  same, executor={a.workers or 2}: {t_ex:.2f} s  -> ratio {t_fc / t_ex:.1f}x")
    t_def, _ = ours(me, df, a.n_resamples, prompt="prompt", same_model=False)
    print(f"  defaults (Davidson ties, position bias), in-process: {t_def:.2f} s  -> ratio {t_fc / t_def:.1f}x")
    print(cpu_line(len(df)))
    width = (res.table["elo_conf_high"] - res.table["elo_conf_low"]).median()
    print(f"  median width of the 95% Elo intervals (prompt bootstrap, same model): {width:.1f} Elo points")


def scale_data() -> pd.DataFrame:
    """300 models x 30,000 battles, no prompt column (each battle its own unit)."""
    return simulate(30_000, 300, 30_000, seed=2).drop(columns="prompt")


def run_scale(me, t_fc: float, a: argparse.Namespace) -> None:
    df = scale_data()
    print(f"\nscale: {len(df):,} battles among 300 models, {a.n_resamples} replicates (row units: no prompt column; "
          f"load average {os.getloadavg()[0]:.1f})")
    print(f"  FastChat compute_bootstrap_bt: {t_fc:.1f} s ({a.n_resamples / t_fc:.0f} replicates/s)")
    t_def, _ = ours(me, df, a.n_resamples, prompt=None, same_model=False)
    print(f"  me.bradley_terry defaults (Davidson, position bias), in-process: {t_def:.1f} s "
          f"({a.n_resamples / t_def:.0f} replicates/s) -> ratio {t_fc / t_def:.1f}x")
    print(cpu_line(len(df)))
    t_same, _ = ours(me, df, a.n_resamples, prompt=None, same_model=True)
    print(f"  me.bradley_terry same model: {t_same:.1f} s ({a.n_resamples / t_same:.0f} replicates/s) -> ratio "
          f"{t_fc / t_same:.1f}x")
    t_ex, _ = ours(me, df, a.n_resamples, prompt=None, same_model=False, executor=a.workers or 2)
    print(f"  me.bradley_terry defaults, executor={a.workers or 2} (two cores, as FastChat's pool): {t_ex:.1f} s "
          f"({a.n_resamples / t_ex:.0f} replicates/s) -> ratio {t_fc / t_ex:.1f}x")


def _timed(func, *args, **kw):
    t0, c0 = time.perf_counter(), time.process_time()
    out = func(*args, **kw)
    return out, time.perf_counter() - t0, time.process_time() - c0


def run_sandwich(a: argparse.Namespace) -> None:
    """mixedeval's clustered sandwich and arena-rank's sandwich on the same battles (see the module docstring)."""
    import sys
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_arena_rank_parity import arena_python, run_arena  # noqa: PLC0415

    import mixedeval as me  # noqa: PLC0415

    n, k, n_prompts, n_judges = (int(x) for x in a.sandwich_size.split(":"))
    df = simulate(n, k, n_prompts)
    df["judge"] = np.random.default_rng(1).integers(0, n_judges, n)
    print(f"{n:,} battles, {k} models, {n_prompts:,} prompts, {n_judges:,} judges (voters)")
    me.bradley_terry(df.iloc[:5000], ties="half", position_bias=False, n_resamples=0)  # start R (not timed)
    kw = dict(prompt="prompt", judge="judge", ties="half", position_bias=False, interval="sandwich")
    rows = []
    for label, extra in (("two-way clustered sandwich (judge, prompt), no ranks", dict(cluster=("judge", "prompt"),
                                                                                         ranks=False)),
                         ("two-way clustered sandwich (judge, prompt), with rank intervals",
                          dict(cluster=("judge", "prompt"))),
                         ("arena-rank's estimator and unclustered sandwich", dict(estimator="arena-rank",
                                                                                 cluster="battle", ranks=False))):
        args = {**kw, **extra}
        if "estimator" in extra:
            args = {k_: v for k_, v in args.items() if k_ not in ("ties", "position_bias")}
        res, wall, cpu = _timed(me.bradley_terry, df, **args)
        rows.append((label, wall, cpu))
        print(f"  mixedeval {label}: {wall:.2f} s wall, {cpu:.2f} s CPU  [{res.interval_method}]")
    python = arena_python()
    if python is None:
        print("  arena-rank: no interpreter with arena-rank (scripts/setup_peers.sh); no ratio")
        return
    with tempfile.TemporaryDirectory() as tmp:
        df[["model_a", "model_b", "winner"]].to_csv(Path(tmp) / "b.csv", index=False)
        out = run_arena([{"csv": str(Path(tmp) / "b.csv"), "features": None, "reweighted": False, "repeat": 2}],
                        Path(tmp), python)[0]
    first, warm = out["seconds"]
    cpu_first, cpu_warm = out["cpu_seconds"]
    print(f"  arena-rank {out['version']} BradleyTerry sandwich (unclustered): {first:.2f} s wall / {cpu_first:.2f} s "
          f"CPU with JAX compilation, {warm:.2f} s wall / {cpu_warm:.2f} s CPU warm")
    ours_arena = me.bradley_terry(df, estimator="arena-rank", interval="sandwich", cluster="battle", ranks=False)
    tab = ours_arena.table.set_index("model").loc[out["competitors"]]
    print(f"  same numbers: max |rating diff| {np.abs(tab['elo'] - out['ratings']).max():.2e}, max |lower diff| "
          f"{np.abs(tab['elo_conf_low'] - out['rating_lower']).max():.2e} (arena-rank stops at ftol 1e-9)")
    for label, wall, cpu in rows:
        print(f"  ratio arena-rank warm / mixedeval ({label}): {warm / wall:.2f}x wall, {cpu_warm / cpu:.2f}x CPU "
              f"(with its compilation: {first / wall:.2f}x wall, {cpu_first / cpu:.2f}x CPU)")
    print(f"  load average now: {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000:30:5000,1000000:100:50000",
                    help="battles:models:prompts, comma-separated")
    ap.add_argument("--n-resamples", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=None, help="FastChat's pool size (default: os.cpu_count())")
    ap.add_argument("--scale", action="store_true", help="only the 300 models x 30,000 battles case")
    ap.add_argument("--all", action="store_true", help="the sizes and the 300 models x 30,000 battles case")
    ap.add_argument("--quick", action="store_true", help="200 replicates (both sides) instead of --n-resamples")
    ap.add_argument("--sandwich", action="store_true",
                    help="only the clustered sandwich at 1e6 battles against arena-rank's sandwich (issue 40)")
    ap.add_argument("--sandwich-size", default="1000000:100:100000:50000", help="battles:models:prompts:judges")
    ap.add_argument("--fastchat-as-is", action="store_true",
                    help="FastChat's workers with the inherited BLAS threads (slower on a busy machine)")
    a = ap.parse_args()
    if a.quick:
        a.n_resamples = 200
    print(f"CPUs: {os.cpu_count()}; load average: {os.getloadavg()[0]:.1f} (a shared machine: read the ratios)")
    if a.sandwich:
        run_sandwich(a)
        return
    sizes = [tuple(int(x) for x in spec.split(":")) for spec in a.sizes.split(",")]
    # FastChat's pools fork this process: they run before R starts (mixedeval is imported after)
    sizes = [] if a.scale and not a.all else sizes
    t_fc = [fastchat(simulate(n, k, p), a.n_resamples, a.workers, a.fastchat_as_is) for n, k, p in sizes]
    if a.scale or a.all:
        t_scale = fastchat(scale_data(), a.n_resamples, a.workers, a.fastchat_as_is)
    import mixedeval as me  # noqa: PLC0415 - after FastChat's forks (see above)

    me.bradley_terry(simulate(2000, 5, 100), ties="half", position_bias=False, n_resamples=0)  # start R (not timed)
    for (n, k, p), t in zip(sizes, t_fc):
        run_size(me, n, k, p, t, a)
    if a.scale or a.all:
        run_scale(me, t_scale, a)


if __name__ == "__main__":
    main()
