"""me.votes_to_flip and me.arena_audit (mixedeval/workflows/arena/).

The approximate maximum influence perturbation is checked against brute force (every subset of
1..3 votes of tiny arenas refitted exactly), its confirmed sets against an independent refit by
me.bradley_terry (R's glm for half ties) of the table without those rows, and its linear
influences against exact leave-one-out refits; each probe against data built to pass or fail it.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.inference import _bt_numpy
from mixedeval.workflows.arena import _votes as V
from bt_helpers import simulate_battles


def _tiny(seed: int, n: int = 36) -> pd.DataFrame:
    df, _ = simulate_battles(k=4, n=n, strengths=[0.4, 0.2, 0.0, -0.3], position=0.0, nu=0.5, seed=seed)
    return df


def _brute_min(v: V.Votes, top: int, worse: int | None, max_size: int = 3) -> int | None:
    """The true fewest votes (up to max_size) whose removal flips: every subset refitted exactly."""
    for m in range(1, max_size + 1):
        subs = list(itertools.combinations(range(v.n_votes), m))
        cnt = np.repeat(v.d.counts[None], len(subs), axis=0)
        for b, sub in enumerate(subs):
            for r in sub:
                cnt[b, v.g_cell[v.group[r]], v.g_out[v.group[r]]] -= v.g_w[v.group[r]]
        f = _bt_numpy.fit(v.d, cnt, theta0=np.repeat(v.theta[None], len(subs), axis=0))
        s = np.zeros((len(subs), v.d.k))
        s[:, v.d.free] = f.theta[:, :v.d.k - 1]
        if any(V.flipped(x, top, worse) for x in s):
            return m
    return None


@pytest.mark.parametrize("ties", ["davidson", "half"])
@pytest.mark.parametrize("n", [36, 40])
def test_votes_to_flip_matches_brute_force_on_tiny_arenas(ties, n):
    """Measured (each tie convention): with 36 votes the greedy count is the true minimum in 6 of 6
    arenas where that is at most 3 votes; with 40 votes in 5 of 8, one vote too many in the other
    3 (the linearisation underrates how much a few votes move a tiny fit)."""
    agree_conf = agree_approx = n_cases = 0
    for seed in range(8):
        df = _tiny(seed, n)
        r = me.votes_to_flip(df, ties=ties, position_bias=False)
        v = V.build_votes(df, "model_a", "model_b", "winner", judge=None, position=None, ties=ties,
                          position_bias=False, covariates=None, weight=None, min_judge_battles=0, anchor=None)
        top = r.table[r.table["target"] == "top rank"].iloc[0]
        best = v.d.models.index(top["system_a"])
        truth = _brute_min(v, best, None)
        if truth is None:  # more than 3 votes needed: the confirmed count must be above 3
            assert not np.isfinite(top["votes_to_flip"]) or top["votes_to_flip"] > 3
            continue
        n_cases += 1
        # a confirmed set flips, so it can never be smaller than the true minimum
        assert top["votes_to_flip"] >= truth
        assert top["votes_to_flip"] <= truth + 1
        agree_conf += int(top["votes_to_flip"] == truth)
        agree_approx += int(top["approx_votes"] == truth)
    assert n_cases >= 5
    # the greedy search found the true minimum in most arenas (measured: 6 of 6 and 5 of 8)
    assert agree_conf >= n_cases / 2, (agree_conf, n_cases)
    assert agree_approx >= n_cases / 2, (agree_approx, n_cases)


def test_confirmed_votes_flip_in_an_independent_refit():
    """Dropping the listed rows and refitting with me.bradley_terry (R's glm for half ties) flips
    each confirmed target."""
    df, _ = simulate_battles(k=5, n=600, strengths=[0.5, 0.35, 0.1, 0.0, -0.4], position=0.0, nu=0.6, seed=11)
    r = me.votes_to_flip(df, ties="half", position_bias=False, prompt="prompt")
    assert r.table["confirmed"].all()
    for _, row in r.table.iterrows():
        rows = r.votes.loc[(r.votes["target"] == row["target"]) & (r.votes["system_a"] == row["system_a"])
                           & (r.votes["system_b"] == row["system_b"]), "row"]
        assert len(rows) == row["votes_to_flip"]
        fit = me.bradley_terry(df.drop(index=rows), ties="half", position_bias=False, n_resamples=0, ranks=False)
        s = fit.table.set_index("model")["estimate"]
        if row["target"] == "top rank":
            assert fit.table["model"].iloc[0] != row["system_a"]
        else:
            assert s[row["system_b"]] > s[row["system_a"]]
        # and one vote fewer (the last listed) does not flip by the linear count's exact refit
        assert row["votes_to_flip"] >= row["approx_votes"] or not np.isfinite(row["approx_votes"])


def test_linear_influence_matches_exact_leave_one_out():
    df, _ = simulate_battles(k=5, n=3000, judges=["j1", "j2"], positions=True, seed=4)
    v = V.build_votes(df, "model_a", "model_b", "winner", judge="judge", position="position", ties="davidson",
                      position_bias=True, covariates=None, weight=None, min_judge_battles=0, anchor=None)
    c = v.contrast(0, 3)
    infl = V.group_influence(v, v.theta, v.inv, c[None])[0]
    for g in np.argsort(infl)[:3].tolist() + np.argsort(infl)[-2:].tolist():
        take = np.zeros(len(v.g_n), dtype=np.int64)
        take[g] = 1
        theta, _ = v.refit(v.counts_without(take))
        exact = c @ theta - c @ v.theta
        assert exact == pytest.approx(infl[g], rel=0.05, abs=1e-6)


def test_arena_audit_leaderboard_probes_and_sentence():
    df, _ = simulate_battles(k=6, n=3000, judges=["j1", "j2", "j3"], positions=True, seed=3)
    before = df.copy()
    a = me.arena_audit(df, prompt="prompt", judge="judge", position="position", min_judge_battles=0, n_resamples=100,
                       n_sim=50, random_state=1)
    pd.testing.assert_frame_equal(df, before)  # the user's table is not modified
    assert {"votes_to_flip", "votes_to_flip_share", "tie_group"} <= set(a.table.columns)
    assert list(a.table["name"]) == list(a.answer.leaderboard["name"])
    assert set(a.answer.checks["check"]) == {"connectivity", "coverage imbalance", "intransitivity", "position bias",
                                             "tie convention", "annotator influence", "separation of neighbours"}
    assert all(str(x).split(":")[0] in ("agrees", "differs", "not available") for x in a.answer.checks["verdict"])
    # position biases of 0.3, 0.6, 0.9 log-odds over 1,000 battles each: all detected
    assert a.answer.checks.set_index("check").loc["position bias", "verdict"].startswith("differs")
    assert "of 3,000 votes" in a.robustness_text()
    assert a.table["votes_to_flip"].iloc[:-1].notna().all() and np.isnan(a.table["votes_to_flip"].iloc[-1])
    assert a.to_dict()["probes"]


def test_intransitivity_probe_detects_a_cycle_and_passes_a_transitive_arena():
    rng = np.random.default_rng(0)
    # rock-paper-scissors among three equally strong models: each beats the next 80% of the time
    rows = []
    for a, b in [("r", "s"), ("s", "p"), ("p", "r")] * 150:
        rows.append((a, b, "model_a" if rng.random() < 0.8 else "model_b"))
    cyc = pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])
    a = me.arena_audit(cyc, ties="drop", position_bias=False, n_resamples=0, n_sim=99, random_state=0)
    v = a.probes.set_index("check").loc["intransitivity"]
    assert v["verdict"].startswith("differs") and v["value"] == 1 and v["p_value"] < 0.05
    df, _ = simulate_battles(k=5, n=2000, strengths=[1.0, 0.5, 0.0, -0.5, -1.0], seed=2)
    b = me.arena_audit(df, ties="half", position_bias=False, n_resamples=0, n_sim=99, random_state=0)
    assert b.probes.set_index("check").loc["intransitivity", "verdict"].startswith("agrees")


def test_annotator_influence_finds_the_judge_that_decides_the_top():
    df, _ = simulate_battles(k=4, n=800, strengths=[0.6, 0.3, 0.0, -0.3], position=0.0, nu=0.5, seed=5,
                             judges=[f"j{i:02d}" for i in range(40)])
    df["position"] = "a_first"
    # one prolific judge always prefers m1 over m0: without it m0 leads
    shill = pd.DataFrame({"model_a": ["m1"] * 200, "model_b": ["m0"] * 200, "winner": "model_a",
                          "prompt": [f"q{i}" for i in range(200)], "judge": "shill", "position": "a_first"})
    data = pd.concat([df, shill], ignore_index=True)
    a = me.arena_audit(data, judge="judge", prompt="prompt", ties="half", position_bias=False, n_resamples=0,
                       n_sim=0, random_state=0)
    row = a.probes.set_index("check").loc["annotator influence"]
    assert row["verdict"].startswith("differs")
    top = a.judge_influence.iloc[0]
    assert top["judge"] == "shill" and top["top_changes"]
    assert len(a.judge_influence) == 5  # 41 judges: the approximation chose 5 for exact refits


def test_tie_groups_and_separation():
    df, _ = simulate_battles(k=4, n=4000, strengths=[2.0, 1.99, 0.0, -2.0], position=0.0, seed=8)
    a = me.arena_audit(df, position_bias=False, n_resamples=200, n_sim=0, random_state=3)
    assert a.tie_groups[0] == sorted(a.tie_groups[0], key=list(a.table["name"]).index)
    assert len(a.tie_groups[0]) == 2  # m0 and m1 are not told apart
    assert a.probes.set_index("check").loc["separation of neighbours", "verdict"].startswith("differs")
    assert a.probes.set_index("check").loc["tie convention", "verdict"].split(":")[0] in ("agrees", "differs")


def test_weights_and_named_pairs():
    df, _ = simulate_battles(k=4, n=400, seed=9)
    df["weight"] = np.where(np.arange(len(df)) % 4 == 0, 3.0, 1.0)
    r = me.votes_to_flip(df, pairs=[("m3", "m0")], ties="half", position_bias=False)
    pair = r.table[r.table["target"] == "pair"].iloc[0]
    assert {pair["system_a"], pair["system_b"]} == {"m0", "m3"}
    assert pair["confirmed"]
    fit = me.bradley_terry(df.drop(index=r.votes.loc[r.votes["target"] == "pair", "row"]), ties="half",
                           position_bias=False, n_resamples=0, ranks=False)
    s = fit.table.set_index("model")["estimate"]
    assert s[pair["system_b"]] > s[pair["system_a"]]


def test_bad_input():
    df, _ = simulate_battles(k=3, n=200, seed=1)
    with pytest.raises(me.DataError, match="pairs"):
        me.votes_to_flip(df, pairs=[("m0", "nope")])
    with pytest.raises(me.DataError, match="max_rounds"):
        me.votes_to_flip(df, max_rounds=0)
    fit = me.bradley_terry(df, n_resamples=0)
    with pytest.raises(me.DataError, match="fit="):
        me.votes_to_flip(fit)
    with pytest.raises(me.DataError, match="ties"):
        me.votes_to_flip(df, ties="coin")
    with pytest.raises(me.DataError, match="winner"):
        me.votes_to_flip(df.drop(columns="winner"))


def test_a_gap_beyond_the_linear_approximation_is_still_confirmed():
    """m0 leads m3 by 2.8 log-odds: all negative influences together do not reach the gap linearly
    (approx_votes NaN); every vote with a negative influence is dropped, the search goes on from
    that refit, and the set it confirms flips in an independent refit."""
    df, _ = simulate_battles(k=6, n=3000, judges=["j1", "j2", "j3"], positions=True, seed=3)
    r = me.votes_to_flip(df, judge="judge", position="position", min_judge_battles=0, pairs=[("m0", "m3")],
                         top=False, adjacent=False)
    row = r.table.iloc[0]
    assert np.isnan(row["approx_votes"]) and row["confirmed"]
    fit = me.bradley_terry(df.drop(index=r.votes["row"]), judge="judge", position="position", min_judge_battles=0,
                           n_resamples=0, ranks=False)
    s = fit.table.set_index("model")["estimate"]
    assert s["m3"] > s["m0"]
