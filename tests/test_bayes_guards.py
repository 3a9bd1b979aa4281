"""Resource guards of me.bayes_glmm (mixedeval/workflows/agentic/_bayes_guards.py), all before R
or Stan starts: Stan's arguments within bounds, the memory of the draws the call materialises
against MIXEDEVAL_MEMORY_LIMIT / me.set_memory_limit, and the time limit checked before each
Stan fit. The parameter count of the estimate is checked against rstanarm's own draws."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mixedeval as me
from mixedeval._resources import format_bytes
from mixedeval.errors import DataError
from mixedeval.workflows.agentic import _bayes_guards as guards

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bayes_glmm import _agent_table, needs_r  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KW = dict(score="success", system="agent", item="task_id", epoch="attempt", progress=False)


@pytest.fixture()
def limits():
    yield me
    me.set_memory_limit(None)
    me.set_time_limit(None)


@pytest.mark.parametrize("arg, value", [
    ("chains", 0), ("chains", 2.5), ("chains", True), ("chains", "4"), ("chains", 10**4),
    ("iter", 19), ("iter", 2000.0), ("iter", 10**9), ("iter", None),
    ("cores", 0), ("cores", 1.5), ("cores", 10**4),
    ("adapt_delta", 1.0), ("adapt_delta", 0), ("adapt_delta", True), ("adapt_delta", "0.9"),
])
def test_bad_sampler_arguments_are_refused_with_the_argument_named(arg, value):
    with pytest.raises(DataError, match=rf"^{arg} must be (an integer from|None or a number).*got {value!r}"):
        me.bayes_glmm(_agent_table(n_tasks=4, n_epochs=1), **KW, **{arg: value})


def test_huge_iter_and_over_limit_draws_are_refused_fast_without_starting_R(tmp_path):
    """In a fresh process: iter=10**9 (beyond MAX_ITER) and iter=10**6 under a 50 MB memory limit
    are refused in well under a few seconds, and rpy2 (hence R and Stan) is never imported."""
    script = tmp_path / "refuse.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys, time
        sys.path.insert(0, {str(ROOT / 'tests')!r})
        from test_bayes_glmm import _agent_table
        import mixedeval as me
        df = _agent_table()
        out = {{}}
        for name, kw in (("huge", dict(iter=10**9)), ("memory", dict(iter=10**6))):
            if name == "memory":
                me.set_memory_limit("50MB")
            t0 = time.perf_counter()
            try:
                me.bayes_glmm(df, **{KW!r}, **kw)
            except me.DataError as e:
                out[name] = [str(e), time.perf_counter() - t0]
        out["rpy2"] = "rpy2" in sys.modules or "mixedeval.engine._bridge" in sys.modules
        print(json.dumps(out))
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("MIXEDEVAL_MEMORY_LIMIT", None)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["rpy2"] is False
    msg, took = got["huge"]
    assert msg.startswith("iter must be an integer from 20 to 1,000,000, got 1000000000") and took < 3.0
    msg, took = got["memory"]
    assert msg.startswith("the posterior draws of me.bayes_glmm (chains=4, iter=1,000,000) need about ") and took < 3.0
    assert "above mixedeval's memory limit of 47.7 MiB" in msg and "Use fewer iter or chains" in msg


def _expected_bytes(chains, it, p, p_loo, rows, k, ppc=True, loo=True):
    """The estimate by hand: Stan's draws with warm-up, 5 copies of the kept draws, 8 draws x k and
    2 draws x k^2 arrays, 4 copies of 1,000 x rows predictive draws, loo's second model plus the
    draws once more and 8 doubles a row."""
    kept = chains * (it - it // 2)
    fit = 8 * p * (chains * it + 5 * kept)
    py = 8 * kept * (8 * k + 2 * k * k)
    pp = 8 * 4 * min(kept, 1000) * rows if ppc else 0
    lo = 8 * p_loo * (chains * it + 5 * kept) + 8 * (kept * p + 8 * rows) if loo else 0
    return fit + py + pp + lo


@pytest.mark.parametrize("setter", ["env", "set_memory_limit"])
def test_memory_limit_refuses_with_the_figure_and_the_fix(monkeypatch, limits, setter):
    df = _agent_table()  # 3 systems x 10 tasks: 30 binomial rows, 3 + (10 + 2) + 2 = 17 parameters
    if setter == "env":
        monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "100MB")
    else:
        monkeypatch.delenv("MIXEDEVAL_MEMORY_LIMIT", raising=False)
        me.set_memory_limit("100MB")
    need = _expected_bytes(4, 200_000, 17, 5, 30, 3)
    with pytest.raises(DataError) as err:
        me.bayes_glmm(df, **KW, iter=200_000)
    msg = str(err.value)
    assert msg.startswith(f"the posterior draws of me.bayes_glmm (chains=4, iter=200,000) need about "
                          f"{format_bytes(need)} (400,000 kept draws (4 chains x 100,000) x 17 parameters x 8 bytes")
    assert "above mixedeval's memory limit of 95.4 MiB" in msg
    assert "loo=False" in msg and "ppc=False" in msg and "raise the limit" in msg
    # without the checks' draws the same request needs less, and the message says what is counted
    need2 = _expected_bytes(4, 200_000, 17, 5, 30, 3, ppc=False, loo=False)
    with pytest.raises(DataError, match=rf"need about {format_bytes(need2)} \(.*plus the warm-up Stan keeps\)"):
        me.bayes_glmm(df, **KW, iter=200_000, ppc=False, loo=False)


def test_parameter_count_of_each_model():
    # tasks and clusters: one effect per level plus the variance and its Cholesky factor
    assert guards.n_parameters(3, 10, 0, "binomial", True, False) == 3 + 12 + 2
    assert guards.n_parameters(3, 10, 4, "gaussian", True, True) == 3 + 12 + 6 + 1 + 2
    assert guards.n_parameters(3, 10, 0, "beta", False, False) == 3 + 1 + 2


def test_a_time_limit_already_passed_starts_no_stan_fit(limits, monkeypatch):
    import mixedeval.workflows.agentic.bayes as bayes_module

    monkeypatch.setattr(bayes_module, "_default_cores", lambda *a: pytest.fail("went on towards the Stan fit"))
    me.set_time_limit(1e-9)  # reading the table alone takes longer
    with pytest.raises(DataError, match=r"me.bayes_glmm \(chains=4, iter=2,000\) ran past mixedeval's time limit of "
                                        r".*\(before the Stan fit\)\. Use fewer iter or chains"):
        me.bayes_glmm(_agent_table(), **KW)


@needs_r
def test_a_small_call_is_unaffected_and_the_count_bounds_rstanarm_s_draws(limits, monkeypatch):
    """Under explicit limits (1 GB, 10 min) a small fit runs; the guard's parameter count covers
    the columns of rstanarm's as.matrix (it adds the Cholesky factor, mean_PPD and the
    log-posterior Stan keeps besides them) and its kept-draw count is the real one."""
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "1GB")
    me.set_time_limit("10min")
    df = _agent_table(n_tasks=6, n_epochs=2)
    res = me.bayes_glmm(df, **KW, chains=2, iter=200, cores=1, random_state=3, loo=False, ppc=False,
                        frequentist=False)
    p = guards.n_parameters(3, 6, 0, "binomial", True, False)
    assert res.parameter_draws.shape[1] <= p <= res.parameter_draws.shape[1] + 3
    assert res.parameter_draws.shape[0] == res.provenance["n_draws"] == 2 * (200 - 100)


def test_cli_bayes_refuses_with_exit_status_2(monkeypatch, capsys, tmp_path):
    from mixedeval.cli import EXIT_USAGE, main

    df = _agent_table().rename(columns={"agent": "system", "task_id": "item", "attempt": "epoch", "success": "score"})
    path = tmp_path / "agent.csv"
    df.to_csv(path, index=False)
    base = ["bayes", str(path), "--epoch", "epoch", "--json", "--quiet"]
    assert main([*base, "--iter", "1000000000"]) == EXIT_USAGE
    obj = json.loads(capsys.readouterr().out)
    assert obj["kind"] == "DataError" and "iter" in obj["error"] and "1,000,000" in obj["error"]
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "50MB")
    assert main([*base, "--iter", "1000000"]) == EXIT_USAGE
    obj = json.loads(capsys.readouterr().out)
    assert "the posterior draws of me.bayes_glmm" in obj["error"] and "MIXEDEVAL_MEMORY_LIMIT" in obj["error"]
    assert "--no-loo" in obj["error"] and "loo=False" not in obj["error"]  # the advice in the command's flags
