"""The intransitivity probe's ``n_sim`` is refused before any Bradley-Terry fit, in the API
(``me.arena_audit``) and in ``mixedeval preferences FILE --robustness`` (which fits first, then
audits): the estimate uses what the battle table tells up front (battles, models, n_sim), and it
bounds the probe's measured peak memory (tracemalloc) from above."""
from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from bt_helpers import simulate_battles

import mixedeval as me
from mixedeval import _cli_commands
from mixedeval.cli import EXIT_USAGE, main
from mixedeval.errors import DataError
from mixedeval.workflows.arena import _probes
from mixedeval.workflows.arena import audit as audit_module


def _no_fit(*a, **k):
    pytest.fail("the Bradley-Terry model was fitted before the n_sim check")


@pytest.fixture
def battles_csv(tmp_path):
    df, _ = simulate_battles(k=4, n=400, seed=1)
    path = tmp_path / "battles.csv"
    df.to_csv(path, index=False)
    return path


def test_api_refuses_before_fitting_and_names_the_figure(monkeypatch):
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "100MB")
    for name in ("bradley_terry", "build_votes"):
        monkeypatch.setattr(audit_module, name, _no_fit)
    df, _ = simulate_battles(k=4, n=400, seed=1)
    with pytest.raises(DataError) as err:
        me.arena_audit(df, n_sim=50_000_000)
    msg = str(err.value)
    assert msg.startswith("the simulated tables of the intransitivity probe of me.arena_audit (n_sim=50,000,000) "
                          "need about 1.9 GiB (50,000,000 simulated tables x 40 bytes, plus ")
    assert "for a block of 50 tables of 400 battles and 4 models)" in msg
    assert "MIXEDEVAL_MEMORY_LIMIT" in msg and "Lower n_sim" in msg


def test_the_other_integer_arguments_are_checked_before_fitting(monkeypatch):
    monkeypatch.setattr(audit_module, "bradley_terry", _no_fit)
    df, _ = simulate_battles(k=4, n=200, seed=1)
    for kw, name in (({"max_rounds": 0}, "max_rounds"), ({"n_challengers": 1.5}, "n_challengers"),
                     ({"n_sim": -1}, "n_sim"), ({"n_confirm_judges": True}, "n_confirm_judges")):
        with pytest.raises(DataError, match=rf"{name} must be an integer >= "):
            me.arena_audit(df, **kw)


def test_many_battles_and_models_count_even_with_a_small_n_sim(monkeypatch):
    """With 20,000 battles of 40 models one block of simulated tables needs tens of MB whatever
    n_sim: refused under a 20 MB limit, with the battles and models named."""
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "20MB")
    monkeypatch.setattr(audit_module, "bradley_terry", _no_fit)
    rng = np.random.default_rng(0)
    a = rng.integers(0, 40, 20_000)
    b = (a + rng.integers(1, 40, 20_000)) % 40
    df = pd.DataFrame({"model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b],
                       "winner": rng.choice(["model_a", "model_b", "tie"], 20_000)})
    block = _probes.sim_block(20_000, 40)
    need = 8.0 * block * (_probes.SIM_TABLE_COPIES * 3 * 20_000 + _probes.SIM_PAIR_COPIES * 40 * 40) + 40 * 200
    assert need > 20e6
    with pytest.raises(DataError, match=r"n_sim=200\) need about .*20,000 battles and 40 models"):
        me.arena_audit(df, n_sim=200)
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "none")
    assert audit_module._audit_guard(df, n_sim=200)[0] == 200


def test_the_estimate_bounds_the_probe_s_measured_peak(monkeypatch):
    """tracemalloc's peak over the intransitivity probe (numpy reports its allocations) stays below
    the guard's estimate from the fitted cells and models (the up-front one uses the battles, an
    upper bound of the cells), and the estimate is not wildly above it (< 20 x)."""
    seen = {}
    real = _probes.intransitivity

    def measured(v, n_sim, rng, alpha, guard=None):
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            out = real(v, n_sim, rng, alpha, guard)
            seen["peak"] = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        seen["cells"], seen["k"] = len(v.d.counts), v.d.k
        return out

    monkeypatch.setattr(_probes, "intransitivity", measured)
    df, _ = simulate_battles(k=12, n=6000, n_prompts=600, seed=3)
    me.arena_audit(df, position_bias=False, n_resamples=0, n_sim=400, random_state=1)
    block = _probes.sim_block(seen["cells"], seen["k"])
    est = 5 * 8.0 * 400 + 8.0 * block * (_probes.SIM_TABLE_COPIES * 3 * seen["cells"]
                                         + _probes.SIM_PAIR_COPIES * seen["k"] ** 2)
    assert seen["peak"] <= est, (seen, est)
    assert est < 20 * seen["peak"], (seen, est)
    assert seen["cells"] <= len(df)


def test_cli_robustness_refuses_before_the_fit(monkeypatch, capsys, battles_csv):
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "100MB")
    monkeypatch.setattr(_cli_commands, "bradley_terry", _no_fit)
    code = main(["preferences", str(battles_csv), "--robustness", "--n-sim", "50000000", "--quiet", "--json"])
    out = capsys.readouterr()
    assert code == EXIT_USAGE, out.err
    obj = json.loads(out.out)
    assert obj["kind"] == "DataError"
    assert "--n-sim 50,000,000" in obj["error"] and "need about 1.9 GiB" in obj["error"]
    assert "MIXEDEVAL_MEMORY_LIMIT" in obj["error"]
    assert out.err.startswith("mixedeval: ")


def test_cli_without_robustness_does_not_check_n_sim(monkeypatch, capsys, battles_csv):
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "100MB")
    code = main(["preferences", str(battles_csv), "--n-sim", "50000000", "--n-resamples", "0", "--quiet", "--json"])
    assert code == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["strengths"]


def test_cli_small_robustness_still_runs(capsys, battles_csv):
    code = main(["preferences", str(battles_csv), "--robustness", "--n-sim", "19", "--n-resamples", "20", "--quiet",
                 "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert {r["check"] for r in json.loads(out.out)["probes"]} >= {"intransitivity"}
