"""Issue 33 part 6, the cases of read_battles and bradley_terry: each is a clear mixedeval error
naming the file, line or argument and the fix, or a right answer; and the guards and scale cases
of Bradley-Terry (memory and time limits, many models, many judges)."""
from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from bt_helpers import simulate_battles

import mixedeval as me
from mixedeval.errors import DataError

ARENA = [{"question_id": f"q{i}", "model_a": a, "model_b": b, "winner": w, "judge": "u1"}
         for i, (a, b, w) in enumerate([("gpt-4", "claude-2", "model_a"), ("claude-2", "vicuna", "tie"),
                                        ("vicuna", "gpt-4", "model_b"), ("gpt-4", "vicuna", "model_b"),
                                        ("claude-2", "gpt-4", "model_a"), ("vicuna", "claude-2", "model_a")])]


@pytest.fixture(autouse=True)
def _limits():
    yield
    me.set_memory_limit(None)
    me.set_time_limit(None)


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- read_battles
def test_non_utf8_file_names_file_line_and_fix(tmp_path):
    path = tmp_path / "battles.jsonl"
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ARENA).replace("vicuna", "vicuña", 1)
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(DataError, match=r"battles.jsonl: line 2: byte .* is not UTF-8.*re-save the file as UTF-8"):
        me.read_battles(path)


def test_utf16_with_a_byte_order_mark_is_read_and_without_one_refused(tmp_path):
    path = tmp_path / "battles.json"
    path.write_bytes(codecs.BOM_UTF16_LE + json.dumps(ARENA).encode("utf-16-le"))
    df = me.read_battles(path)
    assert len(df) == 6 and df["model_a"].iloc[0] == "gpt-4"
    path.write_bytes(json.dumps(ARENA).encode("utf-16-le"))
    with pytest.raises(DataError, match="UTF-16 without a byte-order mark"):
        me.read_battles(path)


def test_deeply_nested_json_is_a_data_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(DataError, match="nested too deeply"):
        me.read_battles(path)
    _jsonl(tmp_path / "deep.jsonl", [])
    (tmp_path / "deep.jsonl").write_text('{"a": ' * 100_000 + "1" + "}" * 100_000 + "\n")
    with pytest.raises(DataError, match=r"deep.jsonl: line 1: the JSON is nested too deeply"):
        me.read_battles(tmp_path / "deep.jsonl")


@pytest.mark.parametrize("field,value", [("model_a", ["x", "y"]), ("model_b", {"name": "x"}),
                                         ("question_id", ["q", 1]), ("judge", {"id": 1})])
def test_lists_and_objects_as_names_are_refused_at_their_line(tmp_path, field, value):
    recs = [dict(r) for r in ARENA]
    recs[2][field] = value
    with pytest.raises(DataError, match=rf"line 3: field '{field}' .* is a (list|dict)"):
        me.read_battles(_jsonl(tmp_path / "b.jsonl", recs))


def test_arenahard_score_that_is_a_list_is_refused(tmp_path):
    rec = {"uid": "u1", "judge": "gpt-4.1", "model": "m", "baseline": "base",
           "games": [{"score": ["A>B"]}, {"score": "B>A"}]}
    with pytest.raises(DataError, match=r"line 1: game 1 has score .*expected one of"):
        me.read_battles(_jsonl(tmp_path / "m.jsonl", [rec]))


def test_nul_bytes_in_names_are_refused(tmp_path):
    recs = [dict(r) for r in ARENA]
    recs[0]["model_b"] = "claude\x00-2"
    with pytest.raises(DataError, match=r"line 1: field 'model_b' .* contains a NUL character"):
        me.read_battles(_jsonl(tmp_path / "b.jsonl", recs))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_symlink_to_a_device_is_refused_at_once(tmp_path, device):
    link = tmp_path / "battles.json"
    link.symlink_to(device)
    t0 = time.perf_counter()
    with pytest.raises(DataError, match="not a regular file"):
        me.read_battles(link)
    assert time.perf_counter() - t0 < 2


def test_is_switched_outputs_as_strings(tmp_path):
    base = {"instruction": "i", "output_1": "", "generator_1": "base", "output_2": "", "generator_2": "m",
            "annotator": "a", "preference": 2.0}
    recs = [{**base, "is_switched_outputs": v} for v in ("true", "false", "True", True, 0)]
    df = me.read_battles(_write(tmp_path / "annotations.json", recs))
    assert df["position"].tolist() == ["b_first", "a_first", "b_first", "b_first", "a_first"]
    with pytest.raises(DataError, match=r"record 1: field 'is_switched_outputs' is 'maybe'"):
        me.read_battles(_write(tmp_path / "annotations.json", [{**base, "is_switched_outputs": "maybe"}]))


def _write(path, records):
    path.write_text(json.dumps(records))
    return path


def test_size_guard_refuses_before_reading(tmp_path):
    path = _jsonl(tmp_path / "big.jsonl", ARENA * 2000)  # ~1 MB
    me.set_memory_limit("2MB")
    with pytest.raises(DataError, match=r"reading the battle file .*big.jsonl.* need about .* memory limit"):
        me.read_battles(path)
    me.set_memory_limit(None)
    assert len(me.read_battles(path)) == 12_000


# ----------------------------------------------------------------------------- bradley_terry
def _battles(k=4, n=600, seed=1, **kw):
    df, _ = simulate_battles(k=k, n=n, n_prompts=max(n // 10, 20), seed=seed, **kw)
    return df


def test_integer_model_names_with_an_integer_anchor():
    df = _battles()
    codes = {f"m{i}": i + 1 for i in range(4)}
    df = df.assign(model_a=df["model_a"].map(codes), model_b=df["model_b"].map(codes))
    res = me.bradley_terry(df, anchor=1, anchor_rating=1200, n_resamples=0)
    row = res.table.set_index("model").loc["1"]
    assert row["elo"] == pytest.approx(1200) and row["estimate"] == 0 and res.reference == "1"
    with pytest.raises(DataError, match="anchor must be a model name"):
        me.bradley_terry(df, anchor=[1], n_resamples=0)


@pytest.mark.parametrize("rating", [float("nan"), float("inf"), -float("inf"), 1e300])
def test_anchor_rating_must_be_finite(rating):
    with pytest.raises(DataError, match="anchor_rating must be a finite number"):
        me.bradley_terry(_battles(), anchor_rating=rating, n_resamples=0)


def test_constant_and_huge_covariates():
    df = _battles()
    with pytest.raises(DataError, match=r"covariate column 'c' is constant .*not identifiable"):
        me.bradley_terry(df.assign(c=2.5), covariates=["c"], n_resamples=0)
    with pytest.raises(DataError, match=r"covariate column 'c' has values up to 1e\+300; rescale it"):
        me.bradley_terry(df.assign(c=np.linspace(-1e300, 1e300, len(df))), covariates=["c"], n_resamples=0)


def test_unhashable_prompt_values_name_the_column():
    df = _battles()
    df["prompt"] = [[p] for p in df["prompt"]]
    with pytest.raises(DataError, match=r"column 'prompt' \(prompt\) holds a list at row 0"):
        me.bradley_terry(df, prompt="prompt", n_resamples=0)


def test_nul_in_a_judge_name_with_random_judges_is_refused_before_r():
    df = _battles(judges=["j1", "j2", "j3"])
    df.loc[df["judge"] == "j2", "judge"] = "j\x002"
    with pytest.raises(DataError, match=r"column 'judge' \(judge\) holds a NUL character"):
        me.bradley_terry(df, judge="judge", ties="drop", judge_effect="random", n_resamples=0)


# ----------------------------------------------------------------------------- guards
def test_a_hundred_million_replicates_are_refused_by_the_guard():
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=r"Bradley-Terry bootstrap's replicates need about .*n_resamples=100,000,000"):
        me.bradley_terry(_battles(), n_resamples=10**8)
    assert time.perf_counter() - t0 < 10


def test_the_memory_guard_counts_what_the_replicates_become():
    """30 models, 20,000 replicates: the parameter replicates alone are ~10 MB, the rank intervals'
    pairwise differences ~140 MB; under a 60 MB limit the guard refuses (it counted only the kept
    replicates before), and passes with ranks=False."""
    from mixedeval.workflows._bt_bootstrap import replicate_bytes

    df = _battles(k=30, n=3000, seed=4)
    d_small = 8.0 * 20_000 * (30 + 2 + 30)
    me.set_memory_limit("60MB")
    with pytest.raises(DataError, match="rank intervals"):
        me.bradley_terry(df, prompt="prompt", position_bias=False, ties="half", n_resamples=20_000)
    assert d_small < 60e6
    from mixedeval.inference._bt_design import build_design

    d = build_design(df, "model_a", "model_b", "winner", prompt="prompt", judge=None, ties="half",
                     position_bias=False, covariates=None, anchor=None)
    assert replicate_bytes(d, 20_000, True) > 60e6 > replicate_bytes(d, 20_000, False)


@pytest.mark.parametrize("executor", [None, 2])
def test_time_limit_stops_a_million_replicate_bootstrap(executor):
    me.set_time_limit("5s")
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=r"the replicates of the Bradley-Terry bootstrap \(n_resamples=1,000,000\) would "
                                        r"take about .* above mixedeval's time limit of 5 s"):
        me.bradley_terry(_battles(k=6, n=3000), prompt="prompt", n_resamples=10**6, executor=executor, ranks=False)
    assert time.perf_counter() - t0 < 30


def test_time_limit_from_the_environment_stops_the_cli(tmp_path):
    path = tmp_path / "battles.csv"
    _battles(k=6, n=3000).to_csv(path, index=False)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "MIXEDEVAL_TIME_LIMIT": "3s"}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "mixedeval.cli", "preferences", str(path), "--n-resamples", "1000000",
                          "--quiet"], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 2, out.stderr
    assert "time limit of 3 s (from MIXEDEVAL_TIME_LIMIT='3s'" in out.stderr
    assert time.perf_counter() - t0 < 60


def test_ten_thousand_judges_are_pooled_or_refused_not_a_memory_error():
    rng = np.random.default_rng(3)
    df = _battles(k=8, n=20_000, seed=3)
    df["judge"] = [f"arena_user_{i}" for i in rng.integers(0, 10_000, len(df))]
    t0 = time.perf_counter()
    res = me.bradley_terry(df, judge="judge", n_resamples=0)
    assert time.perf_counter() - t0 < 30
    assert list(res.judges["judge"].unique()) == ["(pooled judges)"]
    assert any(w.kind == "judges_pooled" and "8,633" not in w.message for w in res.warnings)
    me.set_memory_limit("2GB")
    with pytest.raises(DataError, match="Bradley-Terry fit's dense matrices need about .* min_judge_battles"):
        me.bradley_terry(df, judge="judge", n_resamples=0, min_judge_battles=0)


# ----------------------------------------------------------------------------- scale
def _many(k, n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    s = rng.normal(0, 0.5, k)
    pa = 1 / (1 + np.exp(-(s[a] - s[b])))
    names = np.array([f"model-{i:04d}" for i in range(k)])
    return pd.DataFrame({"model_a": names[a], "model_b": names[b],
                         "winner": np.where(rng.random(n) < pa, "model_a", "model_b")})


def test_rank_letters_at_200_models_are_skipped_by_default_with_a_switch():
    df = _many(200, 20_000)
    t0 = time.perf_counter()
    res = me.bradley_terry(df, ties="drop", n_resamples=0)
    took = time.perf_counter() - t0
    assert took < 30, took  # the letters alone took 62 s
    assert res.ranks["letters"].isna().all() and res.provenance["letters"] is False
    assert (res.ranks["rank_low"] <= res.ranks["rank"]).all() and (res.ranks["rank"] <= res.ranks["rank_high"]).all()
    small = me.bradley_terry(df[df["model_a"].isin([f"model-{i:04d}" for i in range(20)])
                                & df["model_b"].isin([f"model-{i:04d}" for i in range(20)])], ties="drop",
                             n_resamples=0)
    assert small.ranks["letters"].notna().all()  # 20 models: letters by default
    no = me.bradley_terry(df, ties="drop", n_resamples=0, ranks=False)
    assert no.ranks is None


def test_two_thousand_models_without_bootstrap_finish():
    df = _many(2000, 60_000, seed=1)
    t0 = time.perf_counter()
    res = me.bradley_terry(df, ties="drop", n_resamples=0)
    took = time.perf_counter() - t0
    assert took < 120, took  # did not finish in 240 s
    assert len(res.table) == 2000 and np.isfinite(res.table["conf_low"]).all()
    assert res.ranks is None and any(w.kind == "ranks_skipped" for w in res.warnings)
    assert len(res.win_probabilities) == 2000 * 1999


def test_many_models_bootstrap_speed():
    """300 models, 30,000 battles: the fit and 64 replicates (the full 1,000 are in
    benchmarks/bench_bradley_terry.py --scale) -- was 30 replicates/s."""
    df = _many(300, 30_000, seed=2)
    t0 = time.perf_counter()
    res = me.bradley_terry(df, n_resamples=64, random_state=0, ranks=False)
    took = time.perf_counter() - t0
    assert took < 60, took
    assert np.isfinite(res.table["conf_low"]).all()
