"""Issue 23's "done" criterion: an evaluator with two harness logs gets, in one call
(``me.compare_logs``) and one command (``mixedeval compare-logs``), the accuracies with the
intervals Inspect AI prints, the paired difference with its interval and one p-value, a plot of
it, and a sample-size answer for the next run.

Expected values are computed independently: Inspect AI's own metric functions on the
epoch-reduced scores Inspect wrote into its logs, scipy's paired t test on those scores, and
Miller's closed form computed here by hand from the raw epoch scores."""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

import mixedeval as me
from inspect_helpers import reduced_scores, write_match_logs

pytestmark = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None, reason="mixedeval[logs] not installed")

N = 40
RTOL = 1e-10


def _meta(i: int) -> dict:
    return {"passage": f"p{i // 4}"}


@pytest.fixture(scope="module")
def two_logs(tmp_path_factory):
    path = tmp_path_factory.mktemp("onecall") / "logs"
    answers = write_match_logs(path, {"mockllm/a": 0.8, "mockllm/b": 0.6}, epochs=3, seed=23, n=N, metadata=_meta)
    return path, answers


@pytest.fixture(scope="module")
def result(two_logs):
    return me.compare_logs(two_logs[0], "match", n_resamples=500, random_state=3, n_sim=300)


def test_accuracies_are_inspects_own_stderr_and_ci(result, two_logs):
    from inspect_ai.scorer import ci, ci_wilson, mean, stderr

    reduced = reduced_scores(two_logs[0], metadata=_meta)
    acc = result.accuracies
    assert sorted(acc["system"]) == sorted(reduced)
    for _, row in acc.iterrows():
        scores, logged = reduced[row["system"]]
        assert row["mean_score"] == pytest.approx(mean()(scores), rel=RTOL)
        assert row["std_error"] == pytest.approx(stderr()(scores), rel=RTOL)
        assert row["std_error"] == pytest.approx(logged, rel=RTOL)
        c = ci()(scores)
        assert (row["conf_low"], row["conf_high"]) == pytest.approx((c["lower"], c["upper"]), rel=RTOL)
        w = ci_wilson()(scores)
        assert (row["wilson_low"], row["wilson_high"]) == pytest.approx((w["lower"], w["upper"]), rel=RTOL)


def test_headline_is_the_paired_t_on_inspects_reduced_scores(result, two_logs):
    reduced = reduced_scores(two_logs[0])
    a = np.array([float(s.score.value) for s in reduced["mockllm/a"][0]])
    b = np.array([float(s.score.value) for s in reduced["mockllm/b"][0]])
    t = stats.ttest_rel(a, b)
    ci = t.confidence_interval(0.95)
    (row,) = result.table.to_dict("records")
    assert (a - b).mean() > 0  # a is the better system: first on the leaderboard and in the pair
    assert (row["system_a"], row["system_b"]) == ("mockllm/a", "mockllm/b")
    assert list(result.leaderboard["name"]) == ["mockllm/a", "mockllm/b"]
    assert row["delta"] == pytest.approx((a - b).mean(), rel=RTOL)
    assert row["p_value"] == pytest.approx(t.pvalue, rel=1e-8)
    assert (row["conf_low"], row["conf_high"]) == pytest.approx((ci.low, ci.high), rel=1e-8)
    assert result.headline_text().startswith(f"mockllm/a − mockllm/b: {100 * (a - b).mean():+.1f} points")
    assert result.p_value == pytest.approx(t.pvalue, rel=1e-8)  # the headline's p, not the GLMM's LRT


def test_plan_is_millers_closed_form_from_the_raw_epoch_scores(result, two_logs):
    answers = two_logs[1]
    x = {m: np.array([[float(ans == str(2 * i)) for ans in answers[m][f"q{i}"]] for i in range(N)]) for m in answers}
    d = x["mockllm/a"].mean(axis=1) - x["mockllm/b"].mean(axis=1)
    within = {m: v.var(axis=1, ddof=1).mean() for m, v in x.items()}
    k = 3
    var_between = max(0.0, d.var(ddof=1) - sum(within.values()) / k)
    effect = abs(d.mean())  # the size observed, not rounded
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    plan = result.plan
    assert plan.effect == pytest.approx(effect) and plan.systems == ("mockllm/a", "mockllm/b")
    t = plan.table.set_index(["epochs", "method"])
    for epochs in (1, 3):
        var_d = var_between + sum(within.values()) / epochs
        assert t.loc[(epochs, "closed_form"), "n_questions"] == math.ceil(z**2 * var_d / effect**2)
        assert t.loc[(epochs, "simulation"), "n_sim"] == 300
    mde = z * math.sqrt(d.var(ddof=1) / N)  # the current design: its observed variance, the headline's SE
    assert mde == pytest.approx(z * result.headline.std_error, rel=1e-12)
    text = result.plan_text()
    assert f"{100 * effect:.1f} points (the size observed)" in text
    assert f"With these {N} questions x 3 epochs the smallest difference detectable at that power is " \
           f"{100 * mde:.1f} points" in text


def test_plan_options(two_logs):
    res = me.compare_logs(two_logs[0], "match", n_resamples=200, random_state=3, effect=0.1, n_sim=0)
    assert res.plan.effect == 0.1 and set(res.plan.table["method"]) == {"closed_form"}
    assert "(the size observed)" not in res.plan_text()
    none = me.compare_logs(two_logs[0], "match", n_resamples=200, random_state=3, plan=False)
    assert none.plan is None and none.plan_text() == "no sample-size plan (plan=False)"
    assert none.to_dict()["plan"] is None


def test_one_command_gives_all_of_it_with_the_report(two_logs, tmp_path):
    html = tmp_path / "r.html"
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "compare-logs", str(two_logs[0]), "--metric", "match",
                        "--n-resamples", "300", "--n-sim", "200", "--json", "--quiet", "--report", str(html)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    ans = out["answer"]  # the answer record first (issue 38)
    assert ans["headline"]["text"].startswith("mockllm/a − mockllm/b:") and ans["headline"]["better"] == "mockllm/a"
    assert list(out)[0] == "answer" and ans["leaderboard"][0]["name"] == "mockllm/a"
    assert out["next_run"].startswith("to detect a difference of")
    assert {r["system"] for r in out["accuracies"]} == {"mockllm/a", "mockllm/b"}
    assert {r["method"] for r in out["plan"]} == {"closed_form", "simulation"}
    page = html.read_text()
    for piece in ("Differences with their intervals (a - b)", "data:image/svg+xml", "the intervals Inspect AI prints", "How many questions the next run needs",
                  out["next_run"][:60]):
        assert piece in page, piece


def test_a_one_epoch_pilot_with_runs_plans_one_epoch_only():
    """lm-eval logs with two runs of a system and one epoch per question: the runs' samples of a
    question are pooled (median 1.5 per question), but the within-question variance of one
    epoch is not separable, so only K = 1 is planned and said."""
    from pathlib import Path

    lm = Path(__file__).parent / "fixtures" / "lm_eval" / "output"
    res = me.compare_logs(lm, "acc", n_resamples=100, random_state=0, progress=False, n_sim=0)
    assert list(res.plan.table["epochs"].unique()) == [1]
    assert {"one_epoch_pilot", "runs_in_plan"} <= {w.kind for w in res.warnings}  # the F test finds a run variance
    assert "not reachable with 1 run per system" in res.plan_text() and "x 2 epochs" not in res.plan_text()
    assert "14 questions x 1 and 2 runs" in res.plan_text()


def test_clustered_logs_get_clustered_accuracies_and_a_plan_warning(two_logs):
    from inspect_ai.scorer import stderr

    res = me.compare_logs(two_logs[0], "match", n_resamples=200, random_state=3, n_sim=0, cluster="passage")
    reduced = reduced_scores(two_logs[0], metadata=_meta)
    for _, row in res.accuracies.iterrows():
        assert row["std_error_cluster"] == pytest.approx(stderr(cluster="passage")(reduced[row["system"]][0]), rel=RTOL)
    assert "plan_ignores_clusters" in {w.kind for w in res.warnings}


@pytest.mark.parametrize("kw, match", [({"target": 2.0}, "target"), ({"effect": 0}, "effect"),
                                       ({"n_sim": -1}, "n_sim")])
def test_bad_plan_arguments_are_errors_before_any_work(two_logs, kw, match):
    with pytest.raises(me.DataError, match=match):
        me.compare_logs(two_logs[0], "match", n_resamples=100, **kw)
