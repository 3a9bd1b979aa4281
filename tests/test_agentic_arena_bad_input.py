"""Bad input to me.pass_at_k, me.time_horizon, me.votes_to_flip and me.arena_audit: a
mixedeval DataError that names the column or argument and says what to do, never a raw
KeyError / ValueError from deep inside, and the user's DataFrame unmodified (the cases not
already in tests/test_pass_k.py, tests/test_time_horizon.py and tests/test_arena_audit.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.errors import DataError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bt_helpers import simulate_battles  # noqa: E402
from test_pass_k import _attempts  # noqa: E402
from test_time_horizon import _runs  # noqa: E402


def _with_nan(df: pd.DataFrame, col: str, row: int = 3) -> pd.DataFrame:
    out = df.copy()
    if out[col].dtype.kind in "fc":
        out.loc[row, col] = np.nan
    else:
        out[col] = out[col].astype(object)
        out.loc[row, col] = None
    return out


def _refused(call, data: pd.DataFrame, *patterns: str) -> str:
    """``call(data)`` raises a DataError whose message matches every pattern; ``data`` is unchanged."""
    before = data.copy(deep=True)
    with pytest.raises(DataError) as info:
        call(data)
    msg = str(info.value)
    for pat in patterns:
        assert pd.Series([msg]).str.contains(pat, regex=True).iloc[0], f"{pat!r} not in {msg!r}"
    pd.testing.assert_frame_equal(data, before)
    return msg


# ------------------------------------------------------------------------------- votes_to_flip, arena_audit
@pytest.fixture(scope="module")
def battles():
    df, _ = simulate_battles(k=4, n=300, seed=1)
    return df


def _vtf(df, **kw):
    return me.votes_to_flip(df, **kw)


def _audit(df, **kw):
    return me.arena_audit(df, **{"n_resamples": 0, "n_sim": 0, **kw})


@pytest.mark.parametrize("fn", [_vtf, _audit], ids=["votes_to_flip", "arena_audit"])
def test_arena_columns_and_values(battles, fn):
    _refused(lambda d: fn(d), battles.drop(columns="model_b"), r"'model_b' not found in battles", "available columns")
    _refused(lambda d: fn(d, judge="annotator"), battles, r"'annotator' not found in battles")
    # prompt only labels the votes listed: a wrong name failed with a KeyError after the whole search
    _refused(lambda d: fn(d, prompt="question_id"), battles, r"'question_id' not found in battles")
    _refused(lambda d: fn(d), _with_nan(battles, "winner"), r"column 'winner'.* 1 missing values",
             r"dropna\(subset=\['winner'\]\)")
    _refused(lambda d: fn(d), _with_nan(battles, "model_a"), r"column 'model_a'.* missing values", "dropna")
    _refused(lambda d: fn(d), battles.assign(winner=np.where(np.arange(len(battles)) % 7 == 0, "A wins",
                                                             battles["winner"])),
             r"column 'winner' has values \['A wins'\] that are not a winner", "model_a', 'model_b', 'tie'")
    _refused(lambda d: fn(d), battles.assign(model_b=battles["model_a"]), "a model cannot battle itself",
             "drop those rows")
    _refused(lambda d: fn(d), battles.iloc[:0], "empty")
    _refused(lambda d: fn(d, level=95), battles, r"level must be a number strictly between 0 and 1")
    _refused(lambda d: fn(d, n_challengers=0), battles, r"n_challengers must be an integer >= 1, got 0")
    _refused(lambda d: fn(d, max_rounds=2.5), battles, r"max_rounds must be an integer >= 1, got 2.5")
    _refused(lambda d: fn(d, pairs="m0"), battles, r"pairs must be a list of \(model, model\) tuples")
    _refused(lambda d: fn(d, pairs=[("m0", "m0")]), battles, "is named twice")
    _refused(lambda d: fn(d, ties="coin"), battles, "ties must be one of")
    _refused(lambda d: fn(d, fit="not a fit"), battles, "fit must be a result of mixedeval.bradley_terry")


def test_votes_to_flip_flags_and_the_table_untouched(battles):
    for name in ("top", "adjacent"):
        _refused(lambda d: me.votes_to_flip(d, **{name: "yes"}), battles, rf"{name} must be True or False, got 'yes'")
    before = battles.copy(deep=True)
    r = me.votes_to_flip(battles, prompt="prompt", pairs=[("m3", "m0")])
    pd.testing.assert_frame_equal(battles, before)
    assert set(r.votes["prompt"]) <= set(battles["prompt"])


def test_arena_audit_arguments(battles):
    _refused(lambda d: _audit(d, n_sim=-1), battles, r"n_sim must be an integer >= 0, got -1")
    _refused(lambda d: _audit(d, n_confirm_judges=0), battles, r"n_confirm_judges must be an integer >= 1, got 0")
    _refused(lambda d: me.arena_audit(d, n_resamples=-1, n_sim=0), battles, r"n_resamples")
    _refused(lambda d: _audit(d, random_state="seed"), battles, r"random_state must be None, a non-negative int")


def test_two_models_are_audited_and_a_model_that_never_loses_is_flagged():
    df, _ = simulate_battles(k=2, n=200, strengths=[0.5, 0.0], seed=3)
    r = me.votes_to_flip(df, position_bias=False)
    assert list(r.table["target"]) == ["top rank", "neighbours"] and r.table["confirmed"].all()
    # m0 never loses (no finite strength): a warning and unconfirmed targets, not a LinAlgError from the search
    df3, _ = simulate_battles(k=3, n=300, strengths=[0.5, 0.0, -0.2], seed=3)
    never = df3.assign(winner=np.where(df3["model_a"] == "m0", "model_a",
                                       np.where(df3["model_b"] == "m0", "model_b", df3["winner"])))
    r = me.votes_to_flip(never, position_bias=False, ties="drop")
    assert "convergence" in [w.kind for w in r.warnings]
    assert r.table.loc[r.table["target"] == "top rank", "system_a"].iloc[0] == "m0"
    a = me.arena_audit(never, position_bias=False, ties="drop", n_resamples=0, n_sim=0)
    assert a.probes.set_index("check").loc["connectivity", "verdict"].startswith("differs")


# ------------------------------------------------------------------------------- time_horizon
@pytest.fixture(scope="module")
def runs():
    return _runs(seed=5, T=12)


def _th(df, **kw):
    return me.time_horizon(df, **{"n_resamples": 0, "hierarchical": False, **kw})


def test_time_horizon_columns_and_values(runs):
    _refused(_th, runs.drop(columns="score"), r"'score' not found in the data", "available columns")
    _refused(lambda d: _th(d, family="suite"), runs, r"'suite' not found in the data")
    _refused(_th, _with_nan(runs, "score"), r"column 'score' has 1 missing values; drop those rows")
    _refused(_th, _with_nan(runs, "human_minutes"), r"column 'human_minutes' has 1 missing values")
    _refused(lambda d: _th(d, family="family"), _with_nan(runs, "family"), r"column 'family' has 1 missing values")
    _refused(_th, runs.assign(human_minutes=-runs["human_minutes"]), r"length='human_minutes' must be positive task "
                                                                     "lengths")
    _refused(_th, runs.assign(human_minutes=np.inf), r"length='human_minutes' must be positive")
    _refused(_th, runs.assign(score=np.where(runs["score"] > 0, "pass", "fail")),
             r"success='score' must hold 0/1 \(or proportions in \[0, 1\]\)")
    _refused(_th, runs.assign(score=runs["score"] * 2), r"success='score' must hold 0/1")
    mixed = runs.copy()
    mixed.loc[mixed["item"] == "t1", "family"] = np.where(np.arange((mixed["item"] == "t1").sum()) % 2, "f0", "f1")
    _refused(lambda d: _th(d, family="family"), mixed, r"task 't1' belongs to several families \(column 'family'\)")
    _refused(_th, runs.iloc[:0], "no rows")


def test_time_horizon_data_no_curve_can_describe(runs):
    # a system whose tasks all have one length: no slope (an All-NaN ValueError or a silent infinite horizon before)
    one = runs[runs["item"] == "t0"]
    _refused(_th, one, r"system 'a' has tasks of a single length \(.* in column 'human_minutes'\)",
             "a time horizon needs tasks of several lengths")
    _refused(_th, runs.assign(human_minutes=5.0), r"single length \(5 in column 'human_minutes'\)")
    # every attempt of every system succeeded (failed): no finite horizon (All-NaN ValueError before)
    _refused(_th, runs.assign(score=1.0), r"every attempt of every system succeeded \(column 'score'\)")
    _refused(_th, runs.assign(score=0.0), r"every attempt of every system failed")
    _refused(_th, runs.assign(score=(runs["system"] == "a").astype(float)),
             r"every attempt of every system succeeded or every attempt failed")
    # one system that always succeeds beside one that does not: an infinite horizon, reported as such
    r = _th(runs.assign(score=np.where(runs["system"] == "a", 1.0, runs["score"])))
    assert np.isinf(r.table.set_index(["system", "p_success"]).loc[("a", 0.5), "horizon"])


def test_time_horizon_arguments(runs):
    _refused(lambda d: _th(d, n_resamples=1), runs, r"n_resamples must be 0 \(no intervals\) or an integer >= 2")
    _refused(lambda d: _th(d, n_resamples=True), runs, r"n_resamples must be 0")
    for bad in (float("inf"), float("nan"), -0.1, True):
        _refused(lambda d: _th(d, regularization=bad), runs, r"regularization must be None \(maximum likelihood, R's "
                                                             r"glm\) or a penalty >= 0")
    _refused(lambda d: _th(d, levels=()), runs, r"levels must be success probabilities in \(0, 1\)")
    _refused(lambda d: _th(d, levels=[0.5, 1.0]), runs, r"levels must be success probabilities")
    _refused(lambda d: _th(d, level=95), runs, r"level must be a number strictly between 0 and 1")
    _refused(lambda d: _th(d, weighting="equal"), runs, r"weighting must be None, 'task' or 'family'")
    _refused(lambda d: _th(d, reference="c"), runs, r"reference='c' is not one of the systems")
    _refused(lambda d: _th(d, random_state="seed", n_resamples=10), runs, r"random_state must be None")
    for name in ("hierarchical", "resample_attempts"):
        _refused(lambda d: _th(d, **{name: "no"}), runs, rf"{name} must be True or False, got 'no'")


def test_time_horizon_one_system_has_no_headline(runs):
    r = me.time_horizon(runs[runs["system"] == "a"], n_resamples=20, random_state=0)
    assert r.headline is None and list(r.leaderboard["name"]) == ["a"]
    assert (r.table["conf_low"] <= r.table["horizon"]).all()


# ------------------------------------------------------------------------------- pass_at_k (validation only)
@pytest.fixture(scope="module")
def attempts():
    return _attempts(seed=1, T=8, n=3)


def test_pass_at_k_columns_and_values(attempts):
    P = me.pass_at_k
    _refused(lambda d: P(d, k=2), attempts.drop(columns="score"), r"'score' not found", "available columns")
    _refused(lambda d: P(d, k=2), attempts.drop(columns="item"), r"'item' not found")
    _refused(lambda d: P(d, k=2, cluster="suite"), attempts, r"'suite' not found")
    _refused(lambda d: P(d, k=2), _with_nan(attempts, "score"), r"score column 'score' has 1 non-finite values",
             "drop or impute them")
    _refused(lambda d: P(d, k=2), _with_nan(attempts, "system"), r"column 'system' \(system\) has 1 missing values")
    _refused(lambda d: P(d, k=2, cluster="family"), _with_nan(attempts, "family"), r"have no cluster")
    _refused(lambda d: P(d, k=2), attempts.assign(score=np.where(attempts["score"] > 0, "C", "I")),
             r"score column 'score' is not numeric", r"pd.to_numeric")
    _refused(lambda d: P(d, k=2), attempts.assign(score=-attempts["score"]),
             r"some scores are not 0/1 \(e.g. .*-1.0\)", "pass value=")
    _refused(lambda d: P(d, k=2), attempts.assign(epoch=0), r"rows repeat a \(system, task, item, run, epoch\)")
    _refused(lambda d: P(d, k=2), attempts.iloc[:0], "no rows")


def test_pass_at_k_arguments(attempts):
    P = me.pass_at_k
    # k > the attempts of a task: names the task and the largest k that works
    _refused(lambda d: P(d, k=5), attempts, r"k=5 but task 't\d' of system '[abc]' has 3 attempt",
             "lower k to at most 3")
    for bad in (2.0, "2", True, -1):
        _refused(lambda d: P(d, k=bad), attempts, r"k must be a positive integer")
    _refused(lambda d: P(d, k=2, level=95), attempts, r"level must be a number strictly between 0 and 1")
    _refused(lambda d: P(d, k=2, adjust="tukey"), attempts, r"adjust method 'tukey' is unknown")
    _refused(lambda d: P(d, k=2, n_resamples=0), attempts, r"n_resamples must be a positive integer")
    _refused(lambda d: P(d, k=2, reference="d"), attempts, r"reference='d' is not one of the systems")


def test_pass_at_k_one_system_has_no_headline(attempts):
    r = me.pass_at_k(attempts[attempts["system"] == "a"], k=2)
    assert r.headline is None and list(r.leaderboard["name"]) == ["a"]


@pytest.mark.parametrize("value", ["x", float("nan"), float("inf"), True, None.__class__])
def test_pass_at_k_value_must_be_a_finite_number(value):
    df = _attempts(seed=1, T=10)
    before = df.copy()
    with pytest.raises(DataError, match=r"value= must be a finite number .*value=1.0"):
        me.pass_at_k(df, k=2, value=value)
    pd.testing.assert_frame_equal(df, before)
