"""One question, one answer (issue 30) for me.compare_logs and me.summarize: the direction of the
score, the best-first leaderboard, the headline (best against the runner-up or the reference,
signed for the better system; ``p_value`` its test), the checks with verdicts and their
warnings apart -- the same in the API, the JSON and the command line, for the bundled logs, a
5-system Inspect run and a seeds table."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.workflows import _paired

HAS_INSPECT = importlib.util.find_spec("inspect_ai") is not None


@pytest.fixture(scope="module")
def bundled():
    logs = me.datasets.path("llm_inspect_logs")
    res = me.compare_logs(logs, metric="match", cluster="cluster", random_state=0, n_resamples=500, n_sim=100,
                          progress=False)
    return logs, res


def _pair(table, task, a, b):
    t = table[(table["task"] == task)]
    hit = t[(t["system_a"] == a) & (t["system_b"] == b)]
    return hit.iloc[0]


def test_bundled_logs_one_headline_for_the_best_pair(bundled):
    logs, res = bundled
    board = res.leaderboard
    assert list(board.columns) == ["name", "estimate", "std_error", "conf_low", "conf_high", "rank", "rank_low",
                                   "rank_high", "letters"]
    assert list(board["estimate"]) == sorted(board["estimate"], reverse=True) and list(board["rank"]) == [1, 2, 3]
    h = res.headline
    assert (h.better, h.other) == tuple(board["name"].iloc[:2]) and h.estimate > 0
    row = _pair(res.table, "(all tasks)", h.better, h.other)  # leaderboard order: the better system first
    assert h.estimate == pytest.approx(row["delta"]) and res.p_value == row["p_value"] == h.p_value
    assert (h.conf_low, h.conf_high) == (row["conf_low"], row["conf_high"]) and "cluster-robust" in h.method
    assert res.headline_text() == h.text() and res.headline_text().startswith(f"{h.better} − {h.other}: +")
    d = res.to_dict()
    a = d["answer"]  # the answer first (issue 38): headline, leaderboard, best-first differences, checks
    assert list(d)[0] == "answer" and a["headline"]["better"] == h.better and a["headline"]["p_value"] == h.p_value
    json.dumps(d, default=str)
    # the checks: GLMM difference, its likelihood-ratio test, the bootstrap of clusters
    checks = res.checks
    assert list(checks.columns) == ["check", "estimate", "conf_low", "conf_high", "p_value", "verdict"]
    assert len(checks) == 3 and checks["check"].iloc[2] == "paired bootstrap of clusters"
    assert all(v == "agrees" or v.startswith("differs: ") for v in checks["verdict"])
    # the checks' warnings are tagged and kept apart from the answer's
    checked = [w for w in res.warnings if w.source.startswith("check:")]
    assert {w.source for w in checked} <= {"check:glmm", "check:bootstrap"}
    assert any(w.kind == "df_asymptotic" for w in checked) and any(w.kind == "random_effects_dropped" for w in checked)
    assert all(w.source == "mixedeval" for w in res.warnings if w.kind in ("plan_ignores_clusters",))
    assert res.direction.higher_is_better and res.direction.source == "known metric"
    # the plan is for the headline pair, with the observed advantage unrounded
    assert res.plan.systems == (h.better, h.other) and res.plan.effect == pytest.approx(h.estimate, rel=1e-12)


def test_summarize_reports_the_same_test_and_p_for_the_same_pair(bundled):
    logs, res = bundled
    s = me.summarize(logs, metric="match", cluster="cluster")
    assert (s.headline.better, s.headline.other) == (res.headline.better, res.headline.other)
    assert s.p_value == pytest.approx(res.p_value, rel=1e-12)
    np.testing.assert_allclose(s.pairwise["p_value"], res.table["p_value"], rtol=1e-12)
    pd.testing.assert_frame_equal(s.leaderboard, res.leaderboard)


def test_cluster_robust_leaderboard_ses_are_inspects_clustered_stderr():
    rng = np.random.default_rng(4)
    rows = [(s, f"q{i}", f"c{i // 4}", float(rng.random() < p + 0.1 * np.sin(i // 4)))
            for s, p in (("x", 0.6), ("y", 0.5), ("z", 0.45)) for i in range(48)]
    df = pd.DataFrame(rows, columns=["system", "item", "passage", "score"])
    s = me.summarize(df, cluster="passage")
    tab = s.table.set_index("system")
    for r in s.leaderboard.itertuples():
        assert r.std_error == pytest.approx(tab.loc[r.name, "std_error_cluster"], rel=1e-12)
    # the difference of two systems from the leaderboard's covariance is the pair's clustered SE
    means, V = _paired.system_means(df.assign(task="t", run="1").rename(columns={"passage": "cluster"}),
                                    ["x", "y", "z"], cluster="cluster")
    for r in s.pairwise.itertuples():
        v = V["t"].loc[r.system_a, r.system_a] + V["t"].loc[r.system_b, r.system_b] - 2 * V["t"].loc[r.system_a, r.system_b]
        assert np.sqrt(v) == pytest.approx(r.std_error, rel=1e-10)


def test_lower_is_better_from_the_metric_name_declared_and_reference():
    rng = np.random.default_rng(5)
    rows = [(s, f"q{i}", rng.normal(m, 0.2)) for s, m in (("base", 0.50), ("good", 0.30), ("mid", 0.40))
            for i in range(40)]
    df = pd.DataFrame(rows, columns=["system", "item", "error"])
    s = me.summarize(df, score="error")
    assert not s.direction.higher_is_better and s.direction.source == "known metric"
    assert list(s.leaderboard["name"]) == ["good", "mid", "base"]
    h = s.headline
    assert (h.better, h.other) == ("good", "mid") and h.estimate > 0
    assert "lower error is better" in s.headline_text()
    row = _pair(s.pairwise, "error", "good", "mid")  # the task is named after the score, as compare_logs names it
    # the pair table is signed in the better direction, as the headline (issue 38: it had the opposite sign)
    assert h.estimate == pytest.approx(row["delta"]) and s.p_value == row["p_value"]
    assert (row["system_a"], row["system_b"]) == ("good", "mid") and row["t_value"] > 0
    declared = me.summarize(df.rename(columns={"error": "points"}), score="points", higher_is_better=True)
    assert declared.direction.source == "declared" and declared.leaderboard["name"].iloc[0] == "base"
    assumed = me.summarize(df.rename(columns={"error": "points"}), score="points")
    assert assumed.direction.source == "assumed" and "assumed" in assumed.direction.note
    ref = me.summarize(df, score="error", reference="base")
    assert (ref.headline.better, ref.headline.other, ref.headline.reference) == ("good", "base", "base")
    with pytest.raises(me.DataError, match="reference"):
        me.summarize(df, score="error", reference="nope")
    with pytest.raises(me.DataError, match="higher_is_better"):
        me.summarize(df, score="error", higher_is_better="yes")


def _seeds(rng, n=50, runs=3, sd_run=0.03):
    rows = []
    for s, p in (("alpha", 0.62), ("beta", 0.55), ("gamma", 0.50)):
        for r in range(runs):
            shift = rng.normal(0, sd_run)
            rows += [(s, f"q{i}", f"seed{r}", float(rng.random() < p + shift + 0.2 * np.sin(i)))
                     for i in range(n)]
    return pd.DataFrame(rows, columns=["system", "item", "run", "acc"])


def test_seeds_table_headline_with_the_pooled_run_variance():
    df = _seeds(np.random.default_rng(6))
    res = me.compare_logs(df, metric="acc", format="table", analysis="lmm", n_resamples=300, random_state=1,
                          progress=False, plan=False)
    h = res.headline
    assert h.method == "paired t, run variance" and (h.better, h.other) == tuple(res.leaderboard["name"].iloc[:2])
    row = _pair(res.table, res.table["task"].iloc[0], h.better, h.other)
    assert res.p_value == row["p_value"] and row["method"] == _paired.RUNS_METHOD
    s = me.summarize(df.rename(columns={"acc": "score"}))
    assert s.p_value == pytest.approx(res.p_value, rel=1e-12)  # summarize and compare_logs: same test, same p
    lrt = res.checks[res.checks["check"].str.contains("likelihood-ratio")].iloc[0]
    assert lrt["verdict"] == "agrees" or "3 systems" in lrt["verdict"]
    assert any(w.kind == "df_asymptotic" and w.source == "check:lmm" for w in res.warnings)


def test_plan_near_the_ceiling_lets_the_simulation_lead():
    rng = np.random.default_rng(0)
    rows = [(s, f"q{i}", float(rng.random() < 0.98)) for s in ("top", "runner") for i in range(100)]
    df = pd.DataFrame(rows, columns=["system", "item", "acc"])
    res = me.compare_logs(df, metric="acc", format="table", analysis="lmm", n_resamples=200, random_state=1,
                          progress=False, effect=0.03, n_sim=400)
    t = res.plan.table.set_index("method")["n_questions"]
    assert abs(t["simulation"] - t["closed_form"]) > 0.1 * t["closed_form"]  # they do disagree here
    text = res.plan_text()
    assert f"{int(t['simulation'])} questions x 1 epoch by simulation (Miller's closed form: {int(t['closed_form'])})" \
        in text
    assert "near the ceiling" in text


@pytest.mark.skipif(not HAS_INSPECT, reason="mixedeval[logs] not installed")
def test_five_system_inspect_run(tmp_path):
    from inspect_helpers import write_match_logs

    right = {"mockllm/top": 0.85, "mockllm/strong": 0.75, "mockllm/mid": 0.6, "mockllm/mid2": 0.55,
             "mockllm/weak": 0.4}
    write_match_logs(tmp_path, right, epochs=2, seed=30, n=60)
    res = me.compare_logs(tmp_path, metric="match", n_resamples=300, random_state=2, n_sim=0, progress=False)
    board = res.leaderboard
    assert len(board) == 5 and list(board["estimate"]) == sorted(board["estimate"], reverse=True)
    assert board["name"].iloc[0] == "mockllm/top"
    h = res.headline
    assert (h.better, h.other) == tuple(board["name"].iloc[:2]) and h.estimate > 0
    assert res.plan.systems == (h.better, h.other)
    assert (board["rank_low"] <= board["rank"]).all() and (board["rank"] <= board["rank_high"]).all()
    assert board["letters"].iloc[0].startswith("a")
    lrt = res.checks[res.checks["check"].str.contains("likelihood-ratio")].iloc[0]
    assert lrt["verdict"] == "agrees" or "any of the 5 systems" in lrt["verdict"]
    s = me.summarize(tmp_path, metric="match")
    assert s.headline_text() == res.headline_text()


def test_cli_summarize_opens_with_the_headline_and_json_has_its_fields():
    logs = str(me.datasets.path("llm_inspect_logs"))
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "summarize", logs, "--metric", "match", "--quiet"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()[0]
    assert first.startswith("headline: mockllm/large − mockllm/medium: +8.6 points"), first
    j = subprocess.run([sys.executable, "-m", "mixedeval.cli", "summarize", logs, "--metric", "match", "--quiet",
                        "--json", "--lower-is-better"], capture_output=True, text=True, timeout=600)
    out = json.loads(j.stdout)
    ans = out["answer"]  # the answer record first (issue 38)
    assert list(out)[0] == "answer" and ans["headline"]["better"] == "mockllm/small"  # declared: lower is better
    assert ans["leaderboard"][0]["name"] == "mockllm/small" and "declared" in ans["direction"]["note"]
