"""mixedeval.bayes_glmm: rstanarm::stan_glmer through the engine, tested against R itself (the
same stan_glmer call in Rscript, same seed: the same draws), the marginal rates against numerical
integration, the answer's internal consistency, and checks that fail on bad models."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy.special import expit

import mixedeval as me
from mixedeval.workflows.agentic._bayes_draws import marginal_rate, ppc_p

ROOT = Path(__file__).resolve().parents[1]
needs_r = pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript is not installed")


def _agent_table(n_systems=3, n_tasks=10, n_epochs=3, task_sd=1.0, effects=(-0.6, 0.0, 0.9), seed=1):
    rng = np.random.default_rng(seed)
    u = rng.normal(0, task_sd, n_tasks)
    rows = []
    for s in range(n_systems):
        for i in range(n_tasks):
            p = expit(effects[s] + u[i])
            for e in range(n_epochs):
                rows.append({"agent": f"agent {s}", "task_id": f"t{i:02d}", "attempt": e, "success": float(rng.random() < p)})
    return pd.DataFrame(rows)


QUICK = dict(chains=2, iter=500, cores=1, progress=False)


@pytest.fixture(scope="module")
def small_fit():
    df = _agent_table()
    before = df.copy()
    res = me.bayes_glmm(df, score="success", system="agent", item="task_id", epoch="attempt", random_state=11,
                        rope=0.05, **QUICK)
    pd.testing.assert_frame_equal(df, before)  # the user's table is never modified
    return df, res


# ------------------------------------------------------------------------------ parity with R
@needs_r
def test_draws_equal_the_same_stan_glmer_call_in_R(small_fit, tmp_path):
    df, res = small_fit
    cells = df.groupby(["agent", "task_id"], sort=True)["success"].agg(["sum", "count"]).reset_index()
    cells.to_csv(tmp_path / "cells.csv", index=False)
    (tmp_path / "systems.txt").write_text("\n".join(sorted(df["agent"].unique())) + "\n")
    script = textwrap.dedent(f"""
        suppressMessages(library(rstanarm))
        d <- read.csv("{tmp_path / 'cells.csv'}", stringsAsFactors = FALSE)
        lv <- readLines("{tmp_path / 'systems.txt'}")
        data <- data.frame(system = factor(d$agent, levels = lv), item = factor(d$task_id, levels = sort(unique(d$task_id))),
                           successes = d$sum, failures = d$count - d$sum)
        m <- stan_glmer(cbind(successes, failures) ~ system + (1 | item), data = data, family = binomial(),
                        chains = 2, iter = 500, seed = 11, refresh = 0)
        x <- as.matrix(m)
        writeBin(as.vector(x), "{tmp_path / 'draws.bin'}")
        writeLines(colnames(x), "{tmp_path / 'cols.txt'}")
    """)
    (tmp_path / "ref.R").write_text(script)
    subprocess.run(["Rscript", str(tmp_path / "ref.R")], check=True, capture_output=True, timeout=600)
    cols = (tmp_path / "cols.txt").read_text().splitlines()
    ref = np.fromfile(tmp_path / "draws.bin", dtype="<f8").reshape(len(cols), -1).T
    ours = res.parameter_draws
    assert list(ours.columns) == cols
    np.testing.assert_allclose(ours.to_numpy(dtype=float), ref, rtol=1e-8, atol=0)


def test_marginal_rate_equals_numerical_integration():
    eta = np.array([[-2.0, 0.3, 1.7], [0.5, -0.1, 3.0]])
    tau = np.array([1.5, 0.4])
    got = marginal_rate(eta, tau)
    for s in range(2):
        for j in range(3):
            want = integrate.quad(lambda z: expit(eta[s, j] + tau[s] * z) * np.exp(-z * z / 2) / np.sqrt(2 * np.pi),
                                  -np.inf, np.inf, epsabs=1e-13)[0]
            assert got[s, j] == pytest.approx(want, abs=1e-10)
    assert np.allclose(marginal_rate(eta, np.zeros(2)), expit(eta))


def test_rates_come_from_the_draws(small_fit):
    _, res = small_fit
    d = res.parameter_draws
    systems = sorted(res.table["system"])
    tau = np.sqrt(d["Sigma[item:(Intercept),(Intercept)]"].to_numpy())
    for j, s in enumerate(systems):
        eta = d["(Intercept)"].to_numpy() + (d[f"system{s}"].to_numpy() if j else 0.0)
        # Monte Carlo over new task effects (an independent computation of the same integral)
        z = np.random.default_rng(j).standard_normal((1, 20_000))
        mc = expit(eta[:, None] + tau[:, None] * z).mean(axis=1)
        np.testing.assert_allclose(res.draws[s].to_numpy(), mc, atol=0.01)
        row = res.table.set_index("system").loc[s]
        assert row["estimate"] == pytest.approx(res.draws[s].mean())
        assert row["conf_low"] == pytest.approx(np.quantile(res.draws[s], 0.025))
        assert row["conditional"] == pytest.approx(expit(eta).mean())


# ------------------------------------------------------------------------------ the answer
def test_answer_is_consistent(small_fit):
    df, res = small_fit
    board = res.leaderboard
    assert list(board.columns) == ["name", "estimate", "std_error", "conf_low", "conf_high", "rank", "rank_low",
                                   "rank_high", "letters"]
    assert board["estimate"].is_monotonic_decreasing
    assert res.answer.rank_kind == "marginal"
    assert res.table["p_best"].sum() == pytest.approx(1.0)
    head = res.headline
    assert head.better == board["name"].iloc[0] and head.other == board["name"].iloc[1]
    d = res.draws[head.better] - res.draws[head.other]
    assert head.estimate == pytest.approx(d.mean())
    assert head.conf_low == pytest.approx(np.quantile(d, 0.025))
    assert head.p_value == pytest.approx(np.clip(2 * min((d > 0).mean(), (d < 0).mean()), 1 / len(d), 1))
    pw = res.pairwise.set_index(["system_a", "system_b"])
    assert pw.loc[(head.better, head.other), "p_a_greater"] == pytest.approx((d > 0).mean())
    assert pw.loc[(head.better, head.other), "p_rope"] == pytest.approx((d.abs() < 0.05).mean())
    pm = res.p_better
    assert pm.loc[head.better, head.other] == pytest.approx((d > 0).mean())
    assert pm.loc[head.other, head.better] == pytest.approx((d < 0).mean())
    # every delta is system_a's advantage: system_a stands above system_b
    pos = {n: i for i, n in enumerate(board["name"])}
    assert all(pos[a] < pos[b] for a, b in zip(res.pairwise["system_a"], res.pairwise["system_b"]))
    checks = res.checks.set_index("check")
    assert checks.filter(like="frequentist", axis=0)["verdict"].iloc[0].startswith(("agrees", "differs"))
    assert "rstanarm defaults" in res.provenance["prior"]
    assert set(res.prior["slot"]) >= {"prior", "prior_intercept", "prior_covariance"}
    json.dumps(res.to_dict(), default=str)


def test_lower_is_better_flips_the_answer():
    df = _agent_table(seed=2)
    res = me.bayes_glmm(df.rename(columns={"success": "error"}), score="error", system="agent", item="task_id",
                        epoch="attempt", random_state=5, loo=False, frequentist=False, **QUICK)
    assert not res.direction.higher_is_better
    assert res.leaderboard["estimate"].is_monotonic_increasing
    assert (res.pairwise["delta"] > -1).all() and res.headline.estimate >= 0


def test_ppc_plot_is_a_png(small_fit, tmp_path):
    _, res = small_fit
    out = tmp_path / "ppc.png"
    res.ppc_plot(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------------------ checks can fail
def _verdict(res, start):
    c = res.checks
    return str(c.loc[c["check"].str.startswith(start), "verdict"].iloc[0])


def test_too_few_iterations_fail_rhat_or_ess():
    df = _agent_table(seed=3)
    res = me.bayes_glmm(df, score="success", system="agent", item="task_id", epoch="attempt", random_state=1,
                        chains=2, iter=40, cores=1, progress=False, loo=False, ppc=False, frequentist=False)
    bad = [_verdict(res, "R-hat"), _verdict(res, "bulk ESS"), _verdict(res, "tail ESS")]
    assert any(v.startswith("differs") for v in bad), bad
    assert _verdict(res, "bulk ESS").startswith("differs")


def test_task_variation_without_task_effects_is_flagged():
    df = _agent_table(n_tasks=14, n_epochs=5, task_sd=2.5, seed=4)
    res = me.bayes_glmm(df, score="success", system="agent", item="task_id", epoch="attempt", random_state=2,
                        task_effects=False, frequentist=False, **QUICK)
    assert res.provenance["formula"] == "cbind(successes, failures) ~ system"
    assert _verdict(res, "posterior predictive check: SD").startswith("differs")
    assert _verdict(res, "loo").startswith("differs")
    assert "predicts better" in _verdict(res, "loo")


def test_the_right_model_passes_the_same_checks():
    df = _agent_table(n_tasks=14, n_epochs=5, task_sd=2.5, seed=4)
    res = me.bayes_glmm(df, score="success", system="agent", item="task_id", epoch="attempt", random_state=2,
                        frequentist=False, **QUICK)
    assert _verdict(res, "posterior predictive check: SD") == "agrees"
    assert "predicts better" not in _verdict(res, "loo")


# ------------------------------------------------------------------------------ input
def test_bad_input_is_a_data_error():
    df = _agent_table()
    kw = dict(score="success", system="agent", item="task_id", epoch="attempt")
    with pytest.raises(me.DataError, match="family"):
        me.bayes_glmm(df, family="poisson", **kw)
    with pytest.raises(me.DataError, match="0/1"):
        me.bayes_glmm(df.assign(success=df["success"] * 0.5 + 0.1), **kw)
    with pytest.raises(me.DataError, match="prior"):
        me.bayes_glmm(df, prior={"prior": {"dist": "laplace"}}, **kw)
    with pytest.raises(me.DataError, match="iter"):
        me.bayes_glmm(df, iter=5, **kw)
    with pytest.raises(me.DataError, match="rope"):
        me.bayes_glmm(df, rope=-0.1, **kw)


def test_a_user_prior_reaches_stan():
    df = _agent_table(seed=6)
    res = me.bayes_glmm(df, score="success", system="agent", item="task_id", epoch="attempt", random_state=3,
                        prior={"prior": {"dist": "normal", "location": 0, "scale": 1, "autoscale": False}},
                        loo=False, ppc=False, frequentist=False, **QUICK)
    p = res.prior[res.prior["slot"] == "prior"]
    assert np.allclose(p["scale"], 1.0) and p["adjusted_scale"].isna().all()
    assert res.provenance["prior"] == "user"


def test_gaussian_family_rates_are_the_linear_predictor():
    df = _agent_table(seed=7)
    rng = np.random.default_rng(0)
    df = df.assign(quality=df["success"] + rng.normal(0, 0.3, len(df)))
    res = me.bayes_glmm(df, score="quality", system="agent", item="task_id", epoch="attempt", family="gaussian",
                        random_state=4, loo=False, frequentist=False, **QUICK)
    d = res.parameter_draws
    assert np.allclose(res.draws["agent 0"], d["(Intercept)"])
    assert res.headline.unit == ""


# ------------------------------------------------------------------------------ progress, Ctrl-C
def test_progress_is_shown_and_silenceable(capfd):
    df = _agent_table(n_tasks=5, seed=8)
    kw = dict(score="success", system="agent", item="task_id", epoch="attempt", random_state=1, chains=1, iter=100,
              cores=1, loo=False, ppc=False, frequentist=False)
    me.bayes_glmm(df, progress=False, **kw)
    quiet = capfd.readouterr()
    assert "Iteration" not in quiet.err + quiet.out
    os.environ.pop("MIXEDEVAL_QUIET", None)
    me.bayes_glmm(df, progress=True, **kw)
    loud = capfd.readouterr()
    assert "Iteration" in loud.err


CTRL_C = """
import os, sys, time
import numpy as np, pandas as pd
import mixedeval as me
from scipy.special import expit
rng = np.random.default_rng(0)
rows = [{"system": f"s{s}", "item": f"t{i}", "epoch": e, "score": float(rng.random() < expit(0.2 * s + (i % 7) / 3 - 1))}
        for s in range(10) for i in range(50) for e in range(5)]
df = pd.DataFrame(rows)
import mixedeval.engine.session as sess; sess.r_available()
print("start", flush=True)
t0 = time.time()
try:
    me.bayes_glmm(df, epoch="epoch", chains=2, iter=20000, cores=int(sys.argv[1]), progress=False, loo=False, ppc=False,
                  frequentist=False, random_state=1)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", round(time.time() - t0, 1), flush=True)
time.sleep(1)
left = sess.call("me_bayes_workers").value  # this session's parallel-chain workers still running
forks = [c for t in os.listdir("/proc/self/task")  # forked chains (children of this process) still alive
         for c in open(f"/proc/self/task/{t}/children").read().split()
         if open(f"/proc/{c}/stat").read().split(")")[-1].split()[0] != "Z"]
print("workers left", (0 if left is None else np.atleast_1d(left).size) + len(forks), flush=True)
small = df[df["item"].isin(["t1", "t2", "t3", "t4"]) & df["system"].isin(["s0", "s9"])]
r = me.bayes_glmm(small, epoch="epoch", chains=1, iter=200, cores=1, progress=False, loo=False, ppc=False,
                  frequentist=False, random_state=1)
print("next call ok", r.headline.better, flush=True)
"""


@pytest.mark.parametrize("cores", [1, 2])
def test_ctrl_c_stops_the_chains_and_the_session_survives(tmp_path, cores):
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, str(script), str(cores)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "start"
        time.sleep(8 if cores > 1 else 4)  # into the sampling
        t0 = time.time()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        assert line.startswith("interrupted"), line + p.stderr.read()
        assert time.time() - t0 < 10
        out, err = p.communicate(timeout=120)
        assert "workers left 0" in out, out + err
        assert "next call ok" in out, err
    finally:
        if p.poll() is None:
            p.kill()


def test_ppc_p_value_by_hand():
    rep = np.array([1.0, 2, 3, 4, 5])
    assert ppc_p(5, rep) == pytest.approx(0.4)  # 2 * min(P(rep >= 5) = 1/5, P(rep <= 5) = 1)
    assert ppc_p(3, rep) == 1.0
    assert ppc_p(9, rep) == pytest.approx(0.2)  # never below 1 / n_draws


# ------------------------------------------------------------------------------ CLI and report
def test_cli_bayes_json_and_report(tmp_path):
    from mixedeval.cli import main

    df = _agent_table(n_tasks=8, seed=9).rename(columns={"agent": "system", "task_id": "item", "attempt": "epoch",
                                                         "success": "score"})
    path = tmp_path / "agent.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "mixedeval.cli", "--json", "--quiet", "bayes", str(path), "--epoch", "epoch",
           "--chains", "2", "--iter", "500", "--cores", "1", "--random-state", "4", "--no-frequentist",
           "--ppc-plot", str(tmp_path / "ppc.png"), "--report", str(tmp_path / "r.html")]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["answer"]["leaderboard"][0]["name"] in set(df["system"])
    assert out["formula"] == "cbind(successes, failures) ~ system + (1 | item)"
    assert out["seed"] == 4 and len(out["p_better"]) == 3
    assert (tmp_path / "ppc.png").read_bytes()[:4] == b"\x89PNG"
    html = (tmp_path / "r.html").read_text()
    assert "Bayesian hierarchical model" in html and "Posterior predictive check" in html
    # the same call through the API gives the same leaderboard (same seed, same draws)
    res = me.bayes_glmm(df, epoch="epoch", random_state=4, loo=False, frequentist=False, **QUICK)
    api = res.leaderboard
    cli = pd.DataFrame(out["answer"]["leaderboard"])
    assert list(cli["name"]) == list(api["name"])
    np.testing.assert_allclose(cli["estimate"], api["estimate"], rtol=1e-12)
    assert main(["bayes", str(path), "--family", "poisson"]) == 2


def test_task_clusters_are_a_second_random_intercept():
    df = _agent_table(n_tasks=8, seed=10)
    df["family"] = df["task_id"].map(lambda t: "fam-" + str(int(t[1:]) % 3))
    res = me.bayes_glmm(df, score="success", system="agent", item="task_id", epoch="attempt", cluster="family",
                        random_state=6, loo=False, ppc=False, frequentist=False, **QUICK)
    assert res.provenance["formula"].endswith("(1 | item) + (1 | cluster)")
    d = res.parameter_draws
    tau = np.sqrt(d["Sigma[item:(Intercept),(Intercept)]"] + d["Sigma[cluster:(Intercept),(Intercept)]"]).to_numpy()
    eta = d["(Intercept)"].to_numpy()
    np.testing.assert_allclose(res.draws["agent 0"], marginal_rate(eta[:, None], tau)[:, 0], rtol=1e-12)


def test_beta_family_models_continuous_scores_in_0_1():
    df = _agent_table(n_tasks=6, seed=11)
    rng = np.random.default_rng(1)
    df = df.assign(quality=np.clip(0.2 + 0.6 * df["success"] + rng.normal(0, 0.1, len(df)), 0.01, 0.99))
    res = me.bayes_glmm(df, score="quality", system="agent", item="task_id", epoch="attempt", family="beta",
                        random_state=2, chains=1, iter=300, cores=1, progress=False, loo=False, ppc=False,
                        frequentist=False)
    assert res.provenance["formula"] == "score ~ system + (1 | item)"
    assert "(phi)" in res.parameter_draws.columns
    assert ((res.draws > 0) & (res.draws < 1)).all().all()
    with pytest.raises(me.DataError, match="strictly between 0 and 1"):
        me.bayes_glmm(df, score="success", system="agent", item="task_id", epoch="attempt", family="beta")


# ------------------------------------------------------------------------------ parallel chains
PARALLEL = """
import sys, threading
import numpy as np
import mixedeval as me
sys.path.insert(0, {tests!r})
from test_bayes_glmm import QUICK, _agent_table
df = _agent_table()
kw = dict(score="success", system="agent", item="task_id", epoch="attempt", random_state=11, rope=0.05,
          **{{**QUICK, "cores": 2}})
r = me.bayes_glmm(df, **kw)  # one Python thread: the chains run in forked copies of this process
np.save({fork!r}, r.parameter_draws.to_numpy(dtype=float))
stop = threading.Event()
t = threading.Thread(target=stop.wait)  # another Python thread: no fork, new R processes
t.start()
try:
    r2 = me.bayes_glmm(df, **kw)
finally:
    stop.set()
    t.join()
np.save({psock!r}, r2.parameter_draws.to_numpy(dtype=float))
from mixedeval.engine import session
import rpy2.rinterface as ri
with session.lock:
    print(r.provenance["parallel_chains"], r2.provenance["parallel_chains"], bool(ri.baseenv["interactive"]()[0]))
"""


@needs_r
def test_parallel_chains_fork_as_Rscript_does_and_give_Rscripts_draws(small_fit, tmp_path):
    """cores=2: the chains run in forked copies of the Python process (rstan's mclapply path, which
    Rscript takes) when no other Python thread runs, else in new R processes; both give the draws
    of the same stan_glmer call in Rscript with cores = 2 (and cores = 1: the draws do not depend
    on it), and R's interactive flag is restored."""
    df, res = small_fit
    cells = df.groupby(["agent", "task_id"], sort=True)["success"].agg(["sum", "count"]).reset_index()
    cells.to_csv(tmp_path / "cells.csv", index=False)
    (tmp_path / "ref.R").write_text(textwrap.dedent(f"""
        suppressMessages(library(rstanarm))
        d <- read.csv("{tmp_path / 'cells.csv'}", stringsAsFactors = FALSE)
        data <- data.frame(system = factor(d$agent, levels = sort(unique(d$agent))),
                           item = factor(d$task_id, levels = sort(unique(d$task_id))),
                           successes = d$sum, failures = d$count - d$sum)
        m <- stan_glmer(cbind(successes, failures) ~ system + (1 | item), data = data, family = binomial(),
                        chains = 2, iter = 500, seed = 11, refresh = 0, cores = 2)
        writeBin(as.vector(as.matrix(m)), "{tmp_path / 'draws.bin'}")
    """))
    script = tmp_path / "par.py"
    script.write_text(PARALLEL.format(tests=str(ROOT / "tests"), fork=str(tmp_path / "fork.npy"),
                                      psock=str(tmp_path / "psock.npy")))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[-3:] == ["fork", "psock", "True"]
    subprocess.run(["Rscript", str(tmp_path / "ref.R")], check=True, capture_output=True, timeout=600)
    ours = res.parameter_draws.to_numpy(dtype=float)
    ref = np.fromfile(tmp_path / "draws.bin", dtype="<f8").reshape(ours.shape[1], -1).T
    for got in (ours, np.load(tmp_path / "fork.npy"), np.load(tmp_path / "psock.npy")):
        np.testing.assert_allclose(got, ref, rtol=1e-8, atol=0)


def test_fork_mode_restores_interactive_after_an_R_error():
    """An R error while R's interactive flag is off is caught by me_call (a non-interactive R would
    quit at its top level); the flag comes back and the session keeps working."""
    import rpy2.rinterface as ri

    from mixedeval.engine import _bridge, session

    with pytest.raises(me.RError, match="boom"), _bridge._rstan_fork(True):
        with session.lock:
            assert not ri.baseenv["interactive"]()[0]
        session.call("me_call_test_stop")
    with session.lock:
        assert ri.baseenv["interactive"]()[0]
    assert float(np.atleast_1d(session.call("me_call_test_conditions").value)[0]) == 42
    assert _bridge.bayes_chain_mode(1) == "serial"
