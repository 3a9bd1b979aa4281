"""Time limits, memory limits and Ctrl-C in the loops of me.time_horizon (the hierarchical
bootstrap's refits), me.votes_to_flip (the search: exact refits per target), me.arena_audit (its
search, its leave-one-judge-out refits and the intransitivity probe's simulations) and
me.pass_at_k (the sign-flip check), in the style of tests/test_issue42_guards.py.

Ctrl-C is SIGINT sent to the main thread from a timer thread (``_thread.interrupt_main``) one
second into a call that runs far longer (measured here, on a loaded 2-core machine, next to each
test; at least 3x the delay on a CPU several times faster): the call must raise KeyboardInterrupt
within 2 s of it. Memory guards are tested with a small ``MIXEDEVAL_MEMORY_LIMIT`` and must refuse
before the work starts (the fits they would guard are replaced by ``pytest.fail``).
"""
from __future__ import annotations

import _thread
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval._resources import Deadline
from mixedeval.errors import DataError
from mixedeval.workflows.agentic import time_horizon as th
from mixedeval.workflows.arena import audit as arena_audit_module

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bt_helpers import simulate_battles  # noqa: E402
from test_pass_k import _attempts  # noqa: E402
from test_time_horizon import _runs  # noqa: E402


@pytest.fixture()
def time_limit():
    yield me.set_time_limit
    me.set_time_limit(None)


def _interrupt_after(seconds):
    t = threading.Timer(seconds, _thread.interrupt_main)
    t.start()
    return t


def _stops_within_2_s_of_ctrl_c(call, delay=1.0):
    timer = _interrupt_after(delay)
    t0 = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        timer.cancel()
    took = time.perf_counter() - t0
    assert took < delay + 2.0, f"stopped {took - delay:.1f} s after Ctrl-C"


def _arena(k, n, seed=2, judges=20):
    df, _ = simulate_battles(k=k, n=n, strengths=np.linspace(1, -1, k), judges=[f"j{i:02d}" for i in range(judges)],
                             positions=True, seed=seed, position=0.1)
    return df


# ------------------------------------------------------------------------------- time_horizon
def test_time_horizon_chunked_refits_equal_one_call(monkeypatch):
    """The replicates are refitted in chunks (Ctrl-C between them): each replicate's fit is its own,
    so chunks of 7 replicates give the numbers of one call over all 60 (to rounding: the matrix products
    of a chunk may be summed in another order)."""
    df = _runs(seed=1)  # 40 tasks: no replicate is separated (whose diverging slope would magnify rounding)
    whole = me.time_horizon(df, family="family", n_resamples=60, random_state=4, hierarchical=False)
    assert not whole.warnings
    monkeypatch.setattr(th, "_BOOT_CELLS", 7 * 120)  # 120 attempts per system: 7 replicates a chunk
    real, sizes = th._fit_all, []

    def fit_all(systems, lam, weighting, counts):
        if counts is not None:
            sizes.append(counts[0].shape[0])
        return real(systems, lam, weighting, counts)

    monkeypatch.setattr(th, "_fit_all", fit_all)
    chunked = me.time_horizon(df, family="family", n_resamples=60, random_state=4, hierarchical=False)
    assert sorted(sizes) == [4] * 4 + [7] * 32  # 4 variants x (8 chunks of 7 + one of 4)
    pd.testing.assert_frame_equal(chunked.table, whole.table, check_exact=False, rtol=1e-9)
    pd.testing.assert_frame_equal(chunked.ratios, whole.ratios, check_exact=False, rtol=1e-9)
    pd.testing.assert_frame_equal(chunked.answer.checks, whole.answer.checks, check_exact=False, rtol=1e-9)


def test_time_horizon_bootstrap_honours_the_time_limit(time_limit):
    # 20,000 replicates x 4 variants: about 80 s here, judged after the first chunk of ~8,300 replicates
    df = _runs(seed=1)
    time_limit(0.2)
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=r"the replicate refits of time_horizon's hierarchical bootstrap "
                                        r"\(n_resamples=20,000\) would take about .*80,000 replicate refits; the first "
                                        r".* above mixedeval's time limit of 0.2 s .*Lower n_resamples"):
        me.time_horizon(df, n_resamples=20_000, random_state=0, hierarchical=False)
    assert time.perf_counter() - t0 < 40


def test_time_horizon_refuses_n_resamples_that_cannot_fit_before_drawing(monkeypatch):
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "100MB")
    monkeypatch.setattr(th, "_task_counts", lambda *a, **k: pytest.fail("drew replicates before the memory check"))
    with pytest.raises(DataError, match=r"the bootstrap replicates of time_horizon need about 11.0 GiB \(1000000 "
                                        r"replicates .*above "
                                        r"mixedeval's memory limit .*MIXEDEVAL_MEMORY_LIMIT.*lower n_resamples"):
        me.time_horizon(_runs(seed=1), n_resamples=1_000_000, hierarchical=False)


def test_time_horizon_stops_within_2_s_of_ctrl_c():
    # 100,000 replicates (tasks only, no attempt resampling: the refits start at once) x 4 variants:
    # about 80 s here
    df = _runs(seed=1)
    _stops_within_2_s_of_ctrl_c(lambda: me.time_horizon(df, n_resamples=100_000, random_state=0, hierarchical=False,
                                                        resample_attempts=False))


# ------------------------------------------------------------------------------- votes_to_flip
def test_votes_to_flip_honours_the_time_limit(time_limit):
    df = _arena(30, 100_000)  # 30 models: 3 challengers of the #1 and 29 neighbours, about 6 s here
    time_limit(0.05)
    t0 = time.perf_counter()
    # judged after the first chunk of 16 targets, or (on a loaded machine) already past the limit before it
    with pytest.raises(DataError, match=r"the votes-to-flip search of 100,000 votes and 30 models (would take about "
                                        r".*\d+ targets confirmed by exact refits; the first 16 took|ran past "
                                        r"mixedeval's time limit).*Audit fewer targets"):
        me.votes_to_flip(df, judge="judge", position="position", min_judge_battles=0, progress=False)
    assert time.perf_counter() - t0 < 30


def test_votes_to_flip_search_stops_within_2_s_of_ctrl_c(monkeypatch):
    """Ctrl-C one second into the search itself (the fit before it takes about 6 s here)."""
    df = _arena(80, 200_000)  # the search: about 16 s here (80 models: 3 challengers and 79 neighbours)
    real, started = arena_audit_module._flip_rows, []

    def flip_rows(*args, **kwargs):
        started.append((time.perf_counter(), _interrupt_after(1.0)))
        return real(*args, **kwargs)

    monkeypatch.setattr(arena_audit_module, "_flip_rows", flip_rows)
    try:
        with pytest.raises(KeyboardInterrupt):
            me.votes_to_flip(df, judge="judge", position="position", min_judge_battles=0, progress=False)
    finally:
        for _, timer in started:
            timer.cancel()
    assert started, "the search did not start"
    took = time.perf_counter() - started[0][0]
    assert took < 1.0 + 2.0, f"stopped {took - 1.0:.1f} s after Ctrl-C"


# ------------------------------------------------------------------------------- arena_audit
def test_arena_audit_refuses_an_n_sim_that_cannot_fit_before_any_fit(monkeypatch):
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "100MB")
    monkeypatch.setattr(arena_audit_module, "bradley_terry", lambda *a, **k: pytest.fail("fitted before the check"))
    monkeypatch.setattr(arena_audit_module, "build_votes", lambda *a, **k: pytest.fail("fitted before the check"))
    df, _ = simulate_battles(k=4, n=400, seed=1)
    with pytest.raises(DataError, match=r"the simulated tables of the intransitivity probe of me.arena_audit "
                                        r"\(n_sim=100,000,000\) need about 3.7 GiB .*MIXEDEVAL_MEMORY_LIMIT.*Lower "
                                        r"n_sim"):
        me.arena_audit(df, n_sim=100_000_000)


def test_arena_audit_refuses_n_resamples_that_cannot_fit(monkeypatch):
    """n_resamples goes to me.bradley_terry's prompt bootstrap, whose guard refuses it."""
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "50MB")
    df, _ = simulate_battles(k=4, n=400, seed=1)
    with pytest.raises(DataError, match=r"Bradley-Terry bootstrap.*n_resamples.*MIXEDEVAL_MEMORY_LIMIT"):
        me.arena_audit(df, n_resamples=100_000_000, n_sim=0)


def test_arena_audit_intransitivity_honours_the_time_limit(time_limit):
    df, _ = simulate_battles(k=5, n=2000, seed=2)  # the fit and the search: well under a second here
    time_limit(10)
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=r"the simulated tables of the intransitivity probe of me.arena_audit "
                                        r"\(n_sim=10,000,000\) would take about .*the first 50 took .*above "
                                        r"mixedeval's time limit of 10 s .*Lower n_sim"):
        me.arena_audit(df, position_bias=False, n_resamples=0, n_sim=10_000_000, random_state=0)
    assert time.perf_counter() - t0 < 30


def test_intransitivity_blocks_do_not_change_the_draws(monkeypatch):
    """Blocks of simulated tables are cut by size (Ctrl-C between them): the p-value is the same."""
    from mixedeval.workflows.arena import _probes
    df, _ = simulate_battles(k=5, n=1500, seed=6)
    one = me.arena_audit(df, position_bias=False, n_resamples=0, n_sim=120, random_state=5)
    monkeypatch.setattr(_probes, "SIM_BLOCK_CELLS", 1)  # one table per block
    many = me.arena_audit(df, position_bias=False, n_resamples=0, n_sim=120, random_state=5)
    a, b = (r.probes.set_index("check").loc["intransitivity"] for r in (one, many))
    assert a["p_value"] == b["p_value"] and a["expected"] == b["expected"]


def test_arena_audit_stops_within_2_s_of_ctrl_c():
    df, _ = simulate_battles(k=5, n=2000, seed=2)  # 10,000,000 simulated tables: over 10 minutes here
    _stops_within_2_s_of_ctrl_c(lambda: me.arena_audit(df, position_bias=False, n_resamples=0, n_sim=10_000_000,
                                                       random_state=0))


def test_arena_audit_judge_refits_honour_the_time_limit(time_limit, monkeypatch):
    """The leave-one-judge-out refits check the time limit after each refit (a Deadline)."""
    from mixedeval.workflows.arena import _probes
    df = _arena(4, 3000, judges=12)
    fit = me.bradley_terry(df, judge="judge", position="position", min_judge_battles=0, n_resamples=0)
    real = _probes.annotator_influence

    def slow(v, judges, n_confirm, deadline):
        assert isinstance(deadline, Deadline)
        me.set_time_limit(0.5)
        dl = Deadline(deadline.what, deadline.fix)  # the audit's deadline under a 0.5 s limit
        time.sleep(0.6)  # as if the search had taken this long
        return real(v, judges, n_confirm, dl)

    monkeypatch.setattr(_probes, "annotator_influence", slow)
    with pytest.raises(DataError, match=r"the leave-one-judge-out refits of me.arena_audit \(3,000 votes, 4 "
                                        r"models\) ran past mixedeval's time limit of 0.5 s .*\(1 of 12 leave-one-judge-out refits\)"
                                        r".*Audit a random sample"):
        me.arena_audit(df, judge="judge", position="position", fit=fit, n_sim=0)


# ------------------------------------------------------------------------------- pass_at_k
def test_pass_at_k_refuses_n_resamples_that_cannot_fit(monkeypatch):
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "200MB")
    with pytest.raises(DataError, match=r"sign flip replicates .*n_resamples=1,000,000,000.*MIXEDEVAL_MEMORY_LIMIT"):
        me.pass_at_k(_attempts(seed=1, T=40), k=2, n_resamples=10**9)


def test_pass_at_k_stops_within_2_s_of_ctrl_c():
    df = _attempts(seed=1, T=40)  # the sign-flip check with 100,000,000 resamples: about 220 s here
    _stops_within_2_s_of_ctrl_c(lambda: me.pass_at_k(df, k=2, n_resamples=100_000_000))


def test_pass_at_k_sign_flip_honours_the_time_limit(time_limit):
    # the shared block loop of the resampling layer (resampling/_draws.py) is judged after its first
    # chunk or 0.25 s: 100,000,000 sign flips (about 220 s here) are refused within about a second
    df = _attempts(seed=1, T=40)
    time_limit(0.5)
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=r"the resamples of .*n_resamples=100,000,000\) would take about .* above "
                                        r"mixedeval's time limit of 0.5 s.*Pass fewer n_resamples"):
        me.pass_at_k(df, k=2, n_resamples=100_000_000)
    assert time.perf_counter() - t0 < 10
    time_limit(None)
    assert me.pass_at_k(df, k=2, n_resamples=2_000, random_state=0).headline is not None
