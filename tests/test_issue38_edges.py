"""Issue 38, the edges: Inspect reducers recorded and named ("max over 3 epochs"), the plan's
text naming the effect it plans for, intervals of accuracies inside [0, 1], and advice that
works with the API it is given in (the summarize seeds table; the assumed direction as a
warning).

The Inspect logs are written offline by Inspect itself (``tests/inspect_helpers.py``) with
``Task(epochs=Epochs(3, "max"))``; Wilson intervals are checked against Inspect's own
``ci_wilson()`` metric and R's ``prop.test`` formula written out independently."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import mixedeval as me
from inspect_helpers import answer_solver

N, EPOCHS = 40, 3


def _write_max_logs(path, right=(("mockllm/a", 0.75), ("mockllm/b", 0.7)), seed=1, reducer="max"):
    """Inspect logs of two models on N questions, ``Epochs(3, reducer)``; per question and epoch
    the answer is right with the model's probability."""
    from inspect_ai import Epochs, Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    rng = np.random.default_rng(seed)
    fixed_output = answer_solver()
    ds = [Sample(id=f"q{i}", input=f"{i}+{i}?", target=str(2 * i)) for i in range(N)]
    for model, p in right:
        ans = {f"q{i}": [str(2 * i) if rng.random() < p else "?" for _ in range(EPOCHS)] for i in range(N)}
        inspect_eval(Task(dataset=ds, solver=fixed_output(ans), scorer=match(), epochs=Epochs(EPOCHS, reducer),
                          name="arith"), model=model, log_dir=str(path), display="none")


@pytest.fixture(scope="module")
def max_logs(tmp_path_factory):
    pytest.importorskip("inspect_ai")
    path = tmp_path_factory.mktemp("max_logs")
    _write_max_logs(path)  # seed 1: a is right on all 40 questions (max over 3), b on 39
    return path


@pytest.fixture(scope="module")
def max_result(max_logs):
    return me.compare_logs(max_logs, metric="match", model_check=False, n_sim=0, n_resamples=200, random_state=1)


# ------------------------------------------------------------------------------ 1. reducers
def test_the_reader_records_the_logs_reducer_and_epochs(max_logs):
    logs = me.read_eval_logs(max_logs)
    red = logs.reduction
    assert list(red.columns) == ["system", "task", "metric", "reducer", "n_epochs"]
    assert sorted(red["system"]) == ["mockllm/a", "mockllm/b"]
    assert set(red["reducer"]) == {"max"} and set(red["n_epochs"]) == {EPOCHS} and set(red["metric"]) == {"match"}
    assert logs.reduction_text("match") == "max over 3 epochs"
    s = logs.summary()
    assert (s["n_epochs"] == EPOCHS).all() and (s["epochs"] == "max over 3 epochs").all()
    assert logs.epochs_text("match") == "max over 3 epochs (the log's reducer; one score per question)"


def test_renamed_systems_keep_their_reduction(max_logs):
    logs = me.read_eval_logs(max_logs, systems={"mockllm/a": "A"})
    assert sorted(logs.reduction["system"]) == ["A", "mockllm/b"]
    assert logs.reduction_text("match", ["A"]) == "max over 3 epochs"
    assert logs.reduction_text("other_metric") is None


def test_mean_reduced_logs_have_no_reduction_and_say_averaged(tmp_path):
    pytest.importorskip("inspect_ai")
    _write_max_logs(tmp_path, reducer="mean")
    logs = me.read_eval_logs(tmp_path)
    assert len(logs.reduction) == 0 and list(logs.reduction.columns) == ["system", "task", "metric", "reducer",
                                                                          "n_epochs"]
    assert logs.reduction_text() is None
    assert (logs.summary()["epochs"] == "3 epochs, averaged within the question").all()
    assert logs.epochs_text("match") == "3 epochs, averaged within the question"


def test_several_reducers_are_named_per_metric(tmp_path):
    pytest.importorskip("inspect_ai")
    _write_max_logs(tmp_path, reducer=["median", "max"])
    red = me.read_eval_logs(tmp_path).reduction.set_index("metric")
    assert set(red.loc["match", "reducer"]) == {"median"} and set(red.loc["match_max", "reducer"]) == {"max"}


def test_a_max_reduced_pilot_is_not_called_a_one_epoch_pilot(max_logs, max_result):
    kinds = {w.kind for w in max_result.warnings}
    assert "one_epoch_pilot" not in kinds and "reduced_epochs_pilot" in kinds
    note = next(w.message for w in max_result.warnings if w.kind == "reduced_epochs_pilot")
    assert "max over 3 epochs" in note and "one score per question" in note
    plan = me.questions_needed(me.read_eval_logs(max_logs), 0.05, metric="match", n_sim=0)
    assert "one_epoch_pilot" not in {w.kind for w in plan.warnings}


def test_the_plan_text_says_max_over_3_epochs(max_result):
    text = max_result.plan_text()
    assert "each the max over 3 epochs" in text and "x 1 epoch" not in text
    assert max_result.plan.provenance["reduction"] == "max over 3 epochs"


def test_the_data_summary_says_max_over_3_epochs(max_result):
    ds = max_result.data_summary
    assert (ds["epochs"] == "max over 3 epochs").all() and (ds["n_epochs"] == EPOCHS).all()


# ------------------------------------------------------------------------------ 2. plan text
def _wer_table(n=400, seed=5):
    """A lower-is-better WER table: zeta's WER is lower than alpha's by well under a point."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.4, n)
    rows = [{"system": s, "item": f"s{i}", "wer": float(base[i] + off + rng.normal(0, 0.02))}
            for s, off in (("alpha", 0.006), ("zeta", 0.0)) for i in range(n)]
    return pd.DataFrame(rows)


def test_the_plan_names_the_effect_it_plans_for_not_the_observed_size():
    res = me.compare_logs(_wer_table(), metric="wer", model_check=False, n_sim=0, n_resamples=200, random_state=0)
    (seen,) = abs(res.table["delta"]).tolist()  # the one pair's difference, in score units
    assert 0.001 < seen < 0.01  # the observed difference is below the 1-point floor
    assert res.plan.effect == pytest.approx(0.01)
    text = res.plan_text()
    assert "1.0 points (the size observed)" not in text
    assert f"to detect a difference of 1.0 points (the smallest difference planned for; {100 * seen:.2g} points " \
           "observed)" in text
    assert res.plan.provenance["effect_rule"] == "floor"
    assert res.plan.provenance["observed_effect"] == pytest.approx(seen, rel=1e-12)


def test_an_observed_effect_above_the_floor_is_called_the_size_observed(max_result):
    assert max_result.plan.provenance["effect_rule"] == "observed"
    assert f"{100 * max_result.plan.effect:.1f} points (the size observed)" in max_result.plan_text()


def test_a_given_effect_says_the_observed_size_beside_it():
    res = me.compare_logs(_wer_table(), metric="wer", model_check=False, n_sim=0, n_resamples=200, random_state=0,
                          effect=0.03)
    seen = res.plan.provenance["observed_effect"]
    assert f"to detect a difference of 3.0 points (as given; {100 * seen:.2g} points observed)" in res.plan_text()


# ------------------------------------------------------------------------------ 3. intervals in [0, 1]
def _prop_test_wilson(x, n, level=0.95):
    """R's prop.test(x, n, correct = FALSE)$conf.int, written out (Wilson 1927)."""
    z = stats.norm.ppf(0.5 + level / 2)
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(centre - half, 0.0), min(centre + half, 1.0)


def _modified_wilson_r(R, x, n, level=0.95):
    """Brown, Cai & DasGupta's (2001, section 4.1.1) modified Wilson interval with x* = 3, in R:
    ``prop.test(x, n, correct = FALSE)$conf.int`` with the lower limit min(it, qchisq(alpha/2, 2x) /
    (2n)) for 1 <= x <= 3 and the upper max(it, 1 - qchisq(alpha/2, 2(n - x)) / (2n)) for 1 <= n - x <= 3."""
    return tuple(np.asarray(R(f"""local({{x <- {int(x)}; n <- {int(n)}; a <- (1 - {level}) / 2
        ci <- prop.test(x, n, conf.level = {level}, correct = FALSE)$conf.int
        lo <- if (x >= 1 && x <= 3) min(ci[1], qchisq(a, 2 * x) / (2 * n)) else ci[1]
        hi <- if (n - x >= 1 && n - x <= 3) max(ci[2], 1 - qchisq(a, 2 * (n - x)) / (2 * n)) else ci[2]
        c(lo, hi)}})""")))


def test_the_leaderboard_interval_of_an_accuracy_stays_in_0_1(max_result, R):
    board = max_result.leaderboard.set_index("name")
    assert (board["conf_low"] >= 0).all() and (board["conf_high"] <= 1).all()
    acc = max_result.accuracies.set_index("system")
    for name, r in board.iterrows():
        x = round(r["estimate"] * N)
        modified = min(x, N - x) in (1, 2, 3)
        lo, hi = _modified_wilson_r(R, x, N) if modified else _prop_test_wilson(x, N)
        assert r["conf_low"] == pytest.approx(lo, abs=1e-12) and r["conf_high"] == pytest.approx(hi, abs=1e-12)
        if not modified:  # Inspect's ci_wilson() column is the plain Wilson interval
            assert r["conf_low"] == pytest.approx(acc.loc[name, "wilson_low"], abs=1e-12)


def test_inspects_own_ci_columns_are_kept_as_inspect_computes_them(max_result, max_logs):
    """The accuracies' conf_low / conf_high stay Inspect's ci() (here beyond 1 for b: 0.975 of
    40), its wilson columns Inspect's ci_wilson()."""
    from inspect_ai.scorer import SampleScore, Score, ci, ci_wilson
    from inspect_ai.log import list_eval_logs, read_eval_log

    acc = max_result.accuracies.set_index("system")
    for info in list_eval_logs(str(max_logs)):
        log = read_eval_log(info)
        (red,) = [r for r in log.reductions if r.scorer == "match"]
        scores = [SampleScore(score=Score(value=s.value), sample_id=s.sample_id) for s in red.samples]
        t = ci()(scores)
        w = ci_wilson()(scores)
        row = acc.loc[log.eval.model]
        assert row["conf_low"] == pytest.approx(t["lower"], abs=1e-12)
        assert row["conf_high"] == pytest.approx(t["upper"], abs=1e-12)
        assert row["wilson_low"] == pytest.approx(w["lower"], abs=1e-12)
        assert row["wilson_high"] == pytest.approx(w["upper"], abs=1e-12)
    assert acc["conf_high"].max() > 1  # Inspect's t interval leaves [0, 1]; the leaderboard's does not


def test_system_means_names_the_family_of_each_row(R):
    from mixedeval.workflows import _paired

    rng = np.random.default_rng(0)
    n = 40
    rows = [{"system": s, "task": "t", "item": f"q{i}", "run": "1",
             "score": float(i != 0) if s == "near_one" else float(rng.random() < 0.5)}
            for s in ("near_one", "middle") for i in range(n)]
    means, _ = _paired.system_means(pd.DataFrame(rows), ["middle", "near_one"])
    m = means.set_index("system")
    assert m.loc["middle", "interval"] == "t"
    q = stats.t.ppf(0.975, n - 1)
    assert m.loc["middle", "conf_high"] == pytest.approx(m.loc["middle", "estimate"] + q * m.loc["middle",
                                                                                                  "std_error"])
    # 39 of 40: one failure, the modified Wilson interval (Brown, Cai & DasGupta 2001)
    assert m.loc["near_one", "interval"] == "Wilson, modified"
    assert (m.loc["near_one", "conf_low"], m.loc["near_one", "conf_high"]) == pytest.approx(_modified_wilson_r(R, 39, n),
                                                                                            abs=1e-12)
    assert m.loc["near_one", "conf_high"] > _prop_test_wilson(39, n)[1]  # the Poisson limit is the wider one


def test_with_clusters_the_bounded_interval_is_inspects_clustered_ci_wilson():
    pytest.importorskip("inspect_ai")
    from inspect_ai.scorer import SampleScore, Score, ci_wilson

    from mixedeval.workflows import _paired

    n = 40
    cl = [f"c{i // 4}" for i in range(n)]
    x = [0.0 if i in (0, 1, 5) else 1.0 for i in range(n)]
    df = pd.DataFrame({"system": "a", "task": "t", "item": [f"q{i}" for i in range(n)], "run": "1", "score": x,
                       "cluster": cl})
    other = df.assign(system="b", score=0.5)
    means, _ = _paired.system_means(pd.concat([df, other]), ["a", "b"], cluster="cluster")
    r = means.set_index("system").loc["a"]
    scores = [SampleScore(score=Score(value=v), sample_id=f"q{i}", sample_metadata={"cl": c})
              for i, (v, c) in enumerate(zip(x, cl))]
    w = ci_wilson(cluster="cl")(scores)
    assert r["interval"] == "Wilson, effective n"
    assert r["conf_low"] == pytest.approx(w["lower"], abs=1e-12) and r["conf_high"] == pytest.approx(w["upper"],
                                                                                                      abs=1e-12)


def test_interval_note_names_the_wilson_rows():
    from mixedeval.workflows._bounded import interval_note

    t = pd.DataFrame({"system": ["a", "b"], "interval": ["t", "Wilson"]})
    assert "b: Wilson" in interval_note(t) and interval_note(t.assign(interval="t")) is None


# ------------------------------------------------------------------------------ 4. advice
def _seeds_csv(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"system": s, "seed": seed, "item": f"q{i}", "score": float(rng.normal(0.5, 0.1))}
            for s in ("a", "b") for seed in range(3) for i in range(20)]
    path = tmp_path / "seeds.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_the_seeds_advice_works_as_written(tmp_path):
    """The advice of summarize on a seeds table names arguments summarize's inputs take, and
    following it gives a summary with three runs."""
    path = _seeds_csv(tmp_path)
    with pytest.raises(me.DataError) as err:
        me.summarize(path)
    msg = str(err.value)
    assert f"me.read_eval_logs({str(path)!r}, columns={{'run': 'seed'}})" in msg
    assert "me.summarize takes run='seed'" in msg
    logs = me.read_eval_logs(path, columns={"run": "seed"})  # the advice, as written
    assert (me.summarize(logs).table["n_runs"] == 3).all()
    assert (me.summarize(pd.read_csv(path), run="seed").table["n_runs"] == 3).all()


def test_direction_warning_for_an_assumed_direction():
    from mixedeval._answer import direction, direction_warning

    w = direction_warning(direction("score"))
    assert w is not None and w.kind == "direction_assumed" and "higher_is_better=False" in w.message
    assert "'score'" in w.message
    assert direction_warning(direction("accuracy")) is None
    assert direction_warning(direction("score", higher_is_better=True)) is None
    assert direction_warning(None) is None
