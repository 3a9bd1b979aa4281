"""Issue 26 points 2 and 7: absurd simulation counts are refused quickly, with the estimate and the
way past the limit, by one mechanism (mixedeval._resources.LoopGuard: memory checked analytically
before a loop, time extrapolated from its measured first block). Every entry point: power,
power_curve, the CLI's power --n-sim, fit.diagnose (LMM and GLMM), me.compare's parametric
bootstrap, the VCA and language-disparity bootstraps, fit_many, questions_needed. A reasonable
count still runs and the override (me.set_time_limit / MIXEDEVAL_TIME_LIMIT, me.set_memory_limit)
lets a refused loop run."""
from __future__ import annotations

import math
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval import _resources as rs
from mixedeval.errors import DataError

QUICK = 10.0  # seconds a refusal may take (before the loop, or after its first block; 2 CPUs shared here)


@pytest.fixture(autouse=True)
def default_limits(monkeypatch):
    """Every test starts from the default limits (no setting, no environment variable)."""
    monkeypatch.delenv(rs.ENV_VAR, raising=False)
    monkeypatch.delenv(rs.TIME_ENV_VAR, raising=False)
    me.set_memory_limit(None)
    me.set_time_limit(None)
    yield
    me.set_memory_limit(None)
    me.set_time_limit(None)


def refused(call, *args, **kwargs) -> tuple[str, float]:
    """The DataError message of ``call`` and the seconds it took to refuse."""
    t0 = time.perf_counter()
    with pytest.raises(DataError) as exc:
        call(*args, **kwargs)
    return str(exc.value), time.perf_counter() - t0


def scores(n_items: int = 60, n_systems: int = 3, seed: int = 0) -> pd.DataFrame:
    """A score table of n_items x n_systems rows (random item effects, a system effect)."""
    rng = np.random.default_rng(seed)
    item = np.repeat([f"i{k:03d}" for k in range(n_items)], n_systems)
    system = np.tile([f"s{k}" for k in range(n_systems)], n_items)
    u = rng.normal(size=n_items)[np.repeat(np.arange(n_items), n_systems)]
    y = 0.3 * np.tile(np.arange(n_systems), n_items) + u + rng.normal(size=item.size)
    return pd.DataFrame({"score": y, "system": system, "item": item})


@pytest.fixture(scope="module")
def design():
    d = me.design(items=20, variances={"item": 1, "residual": 1})
    me.power(d, 0.4, n_sim=1, random_state=0)  # R and its packages started: refusal times exclude them
    return d


@pytest.fixture(scope="module")
def fits():
    df = scores()  # 180 rows, as in the issue
    return me.lmm("score ~ 1 + (1|item)", df, reml=False), me.lmm("score ~ system + (1|item)", df, reml=False)


# ------------------------------------------------------------------------------ the mechanism
def test_time_limit_setting_parsing_and_environment(monkeypatch):
    assert me.get_time_limit() == rs.DEFAULT_TIME_LIMIT == 86400.0
    for value, seconds in [(90, 90.0), ("90s", 90.0), ("30min", 1800.0), ("2h", 7200.0), ("1.5d", 129600.0)]:
        me.set_time_limit(value)
        assert me.get_time_limit() == seconds
    me.set_time_limit("none")
    assert me.get_time_limit() is None
    me.set_time_limit(None)
    monkeypatch.setenv(rs.TIME_ENV_VAR, "10min")
    assert me.get_time_limit() == 600.0
    me.set_time_limit(5)  # the setting wins over the environment
    assert me.get_time_limit() == 5.0
    for bad in (0, -1, "abc", "5 parsecs", True, [1]):
        with pytest.raises(DataError, match="time limit must be"):
            me.set_time_limit(bad)


def test_format_seconds_by_hand():
    assert rs.format_seconds(42) == "42 s"
    assert rs.format_seconds(5400) == "90.0 min"
    assert rs.format_seconds(3 * 3600) == "3.0 h"
    assert rs.format_seconds(10 * 86400) == "10.0 days"
    assert rs.format_seconds(3.15576e9) == "100 years"
    assert rs.format_seconds(math.inf) == "unlimited"


def test_loop_guard_extrapolates_the_first_block_by_hand(monkeypatch):
    """With a fake clock: 2 s for the first 10 of 1,000 units, on 4 workers, 3 repeats:
    (2 + 2 / 10 * 990 / 4) * 3 = 154.5 s."""
    now = [100.0]
    monkeypatch.setattr(rs.time, "perf_counter", lambda: now[0])
    g = rs.LoopGuard("a loop", 1000, count="n=1,000", unit="units", fix="Do less.", workers=4, repeats=3)
    now[0] += 2.0
    assert g.estimate(10) == pytest.approx(154.5, rel=1e-12)
    me.set_time_limit(154)
    with pytest.raises(DataError) as exc:
        g.block_done(10)
    msg = str(exc.value)
    assert msg == (f"the units of a loop (n=1,000) would take about {rs.format_seconds(154.5)} (1,000 units on "
                   "4 workers, 3 times; the first 10 took 2 s), above mixedeval's time limit of 2.6 min (given to "
                   "me.set_time_limit; change it with me.set_time_limit or MIXEDEVAL_TIME_LIMIT). Do less.")
    g.block_done(20)  # only the first block is judged: a loop is never stopped half-way
    me.set_time_limit(155)
    g2 = rs.LoopGuard("a loop", 1000, count="n", unit="units", fix="", workers=4, repeats=3)
    now[0] += 2.0
    g2.block_done(10)  # 154.5 s <= 155 s: runs


def test_loop_guard_memory_is_checked_before_the_loop():
    g = rs.LoopGuard("a loop", 10**12, count="n=10**12", unit="units", fix="Do less.")
    msg, took = refused(g.check_memory, 100.0)
    assert took < 0.5 and "the units of a loop (n=10**12) need about 90.9 TiB" in msg
    assert "1,000,000,000,000 units x 100 B each" in msg and "Do less." in msg
    me.set_memory_limit("none")
    g.check_memory(100.0)  # the override


# ------------------------------------------------------------------------------ power
def test_power_refuses_a_trillion_simulations_at_once(design):
    msg, took = refused(me.power, design, 0.4, n_sim=10**12, random_state=1)
    assert took < QUICK
    assert "the simulations of power (lrt) (n_sim=1,000,000,000,000) need about 181.9 TiB" in msg
    assert "memory limit" in msg and "smaller n_sim" in msg


def test_power_curve_refuses_ten_billion_simulations_at_once(design):
    msg, took = refused(me.power_curve, design, 0.4, values=[10, 20], n_sim=10**10, random_state=1)
    assert took < QUICK and "n_sim=10,000,000,000" in msg and "need about 1.8 TiB" in msg


def test_power_time_guard_judges_the_first_batch_and_the_override_runs_it(design, monkeypatch):
    me.set_time_limit(1e-3)
    msg, took = refused(me.power, design, 0.4, n_sim=40, batch_size=5, random_state=1)
    assert took < QUICK
    assert "the simulations of power (lrt) (n_sim=40) would take about" in msg
    assert "the first 5 took" in msg and "time limit of 0.001 s (given to me.set_time_limit" in msg
    monkeypatch.setenv(rs.TIME_ENV_VAR, "none")
    me.set_time_limit(None)  # the environment variable switches the guard off
    res = me.power(design, 0.4, n_sim=40, batch_size=20, random_state=1)
    assert res.n_sim == 40 and len(res.simulations) == 40
    # the first batch runs on its own: results do not depend on the batch size (simulation i's seed is its index)
    np.testing.assert_array_equal(res.simulations["p_value"],
                                  me.power(design, 0.4, n_sim=40, batch_size=7, random_state=1).simulations["p_value"])


def test_power_curve_counts_the_sizes_still_to_come(design, monkeypatch):
    """Each size of a curve is judged as the runs still to come (3, 2, 1 for three sizes)."""
    from mixedeval.workflows import _power_sim as ps

    seen, real = [], ps.guard

    def spy(test, n_sim, workers, repeats):
        seen.append(repeats)
        return real(test, n_sim, workers, repeats)

    monkeypatch.setattr(ps, "guard", spy)
    me.power_curve(design, 0.4, values=[10, 12, 14], n_sim=2, random_state=1)
    assert seen == [3, 2, 1]


def test_power_cli_refuses_an_absurd_n_sim_with_exit_status_2():
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "mixedeval.cli", "power", "--items", "20", "--effect", "0.4",
                          "--n-sim", "1000000000000", "--quiet"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    assert "need about 181.9 TiB" in out.stderr and "--n-sim 1,000,000,000,000" in out.stderr  # the flag (issue 38)
    assert time.perf_counter() - t0 < 60  # interpreter, R start and the design; the refusal itself is instant


def test_a_reasonable_power_run_is_not_refused(design):
    res = me.power(design, 0.4, n_sim=5, random_state=2)
    assert res.n_sim == 5


# ------------------------------------------------------------------------------ diagnostics
def test_diagnose_refuses_ten_million_simulations_before_allocating(fits):
    fit = fits[1]
    me.set_memory_limit("8GB")  # the machine; this one refuses with its default too (57.6 GB needed)
    msg, took = refused(fit.diagnose, n_sim=10**7)
    assert took < QUICK
    assert ("180 observations x 10,000,000 simulations x 8 bytes = 13.4 GiB per copy, about 4 copies" in msg)
    assert "need about 53.6 GiB" in msg and "smaller n_sim" in msg
    tracemalloc.start()
    with pytest.raises(DataError):
        fit.diagnose(n_sim=10**7)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20 * 2**20  # nothing of size n_sim (not even the block plan's 40,000 seeds) was allocated


def test_diagnose_time_guard_and_override(fits):
    fit = fits[1]
    me.set_time_limit(1e-4)
    msg, took = refused(fit.diagnose, n_sim=500)
    assert took < QUICK and "the simulations of the simulated-residual diagnostics" in msg
    assert "the first 250 took" in msg
    me.set_time_limit("1h")
    d = fit.diagnose(n_sim=500)
    assert d.simulated.shape == (180, 500)


def test_glmm_diagnose_is_guarded():
    df = scores()
    df["correct"] = (df["score"] > 0).astype(int)
    g = me.glmm("correct ~ system + (1|item)", df, family="binomial")
    me.set_memory_limit("1GB")
    msg, took = refused(g.diagnose, n_sim=10**6)
    assert took < QUICK and "180 observations x 1,000,000 simulations" in msg
    me.set_memory_limit(None)
    assert g.diagnose(n_sim=20).simulated.shape == (180, 20)


# ------------------------------------------------------------------------------ me.compare
def test_compare_refuses_a_trillion_bootstrap_samples(fits):
    msg, took = refused(me.compare, *fits, n_resamples=10**12)
    assert took < QUICK
    assert "the replicates (2 refits each) of the parametric bootstrap" in msg
    assert "180 observations x 1,000,000,000,000 simulated responses" in msg and "need about 3.8 PiB" in msg
    assert "n_resamples=None" in msg  # the way around it


def test_compare_of_glmms_refuses_a_trillion_bootstrap_samples():
    """The issue's case: GLMMs, where pbkrtest used to end in an R assertion."""
    df = scores()
    df["correct"] = (df["score"] > 0.3).astype(int)
    g0 = me.glmm("correct ~ 1 + (1|item)", df, family="binomial")
    g1 = me.glmm("correct ~ system + (1|item)", df, family="binomial")
    msg, took = refused(me.compare, g0, g1, n_resamples=10**12)
    assert took < QUICK and "180 observations x 1,000,000,000,000 simulated responses" in msg


def test_compare_time_guard_and_override(fits):
    me.set_time_limit(1e-4)
    msg, took = refused(me.compare, *fits, n_resamples=40, random_state=1)
    assert took < QUICK and "would take about" in msg and "the first 2 took" in msg
    me.set_time_limit("none")
    res = me.compare(*fits, n_resamples=40, random_state=1)
    assert np.isfinite(res.table["p_value_pb"].iloc[1])


# ------------------------------------------------------------------------------ bootstraps of workflows
def _vca():
    return me.variance_components(scores(), score="score", object="item", facets=["system"]), {}, "variance-component"


def _disparity():
    hu = me.datasets.load("hu2025_records")
    res = me.language_disparity(hu, "score", "model", "language", "task", drop_aggregates=True)
    return res, {"chunk_size": 5}, "language-disparity"


@pytest.mark.parametrize("make", [_vca, _disparity])
def test_workflow_bootstraps_refuse_and_override(make):
    res, kw, name = make()
    msg, took = refused(res.bootstrap, n_resamples=10**12, progress=False, **kw)
    assert took < QUICK and f"the refits of the {name} bootstrap (n_resamples=1,000,000,000,000) need about" in msg
    me.set_time_limit(1e-4)
    msg, took = refused(res.bootstrap, n_resamples=60, random_state=1, progress=False, **kw)
    first = kw.get("chunk_size", 25)
    assert took < QUICK and f"the first {first} took" in msg
    me.set_time_limit(None)
    assert res.bootstrap(n_resamples=4, random_state=1, progress=False, **kw).n_resamples == 4


def test_fit_many_time_and_memory_guards():
    df = scores()
    specs = ["score ~ system + (1|item)"] * 50
    me.set_time_limit(1e-3)
    msg, took = refused(me.fit_many, specs, df, progress=False)
    assert took < QUICK and "the fits of fit_many (50 specifications)" in msg and "the first 1 took" in msg
    me.set_time_limit(None)
    me.set_memory_limit(10**6)
    msg, took = refused(me.fit_many, specs * 20, df, return_fits=True, progress=False)
    assert took < QUICK and "return_fits=True keeps 1,000 fits of up to 180 rows x 3 columns" in msg
    me.set_memory_limit(None)
    out = me.fit_many(specs[:2], df, progress=False)
    assert (out.table["status"] == "ok").all()


def test_questions_needed_simulation_is_guarded():
    msg, took = refused(me.questions_needed, effect=0.05, mean=0.7, correlation=0.5, n_sim=10**12)
    assert took < QUICK and "the simulated evaluations of questions_needed's simulation" in msg
    assert "n_sim=0 for the closed form only" in msg
    res = me.questions_needed(effect=0.05, mean=0.7, correlation=0.5, n_sim=200, random_state=1)
    assert len(res.table) >= 2 and (res.table["n_sim"] == 200).any()


def test_rank_intervals_refuse_a_trillion_normal_draws():
    from mixedeval.inference.rankings import rank_intervals

    est = pd.Series([1.0, 2.0, 3.0], index=["a", "b", "c"])
    msg, took = refused(rank_intervals, est, vcov=np.eye(3), n_sim=10**12)
    assert took < QUICK and "the normal draws of the rank intervals (n_sim=1,000,000,000,000) need about" in msg
    assert "1,000,000,000,000 normal draws x 96 B each" in msg  # 4 copies x 3 estimates x 8 bytes
    me.set_memory_limit("none")  # the override: nothing is refused before the draws (not run here: 87 TiB)
    res = rank_intervals(est, vcov=np.eye(3) * 0.01, n_sim=1000, random_state=1)
    assert list(res.table["name"]) == ["c", "b", "a"]
