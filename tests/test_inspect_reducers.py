"""Inspect AI's epoch reducers (issue 30, item 4): logs written offline by Inspect itself with
``Task(epochs=Epochs(3, reducer))``; mixedeval's accuracies equal the accuracy Inspect logged
for the reduced scores (``log.results.scores[...].metrics["accuracy"]``), for mean, median,
mode, max, pass_at_k and at_least_k; an unknown reducer is a DataError naming it."""
from __future__ import annotations

import numpy as np
import pytest

import mixedeval as me
from inspect_helpers import answer_solver

pytest.importorskip("inspect_ai")

N, EPOCHS = 12, 3


def _write(path, reducer, models=(("mockllm/a", 0.5), ("mockllm/b", 0.7)), seed=0):
    from inspect_ai import Epochs, Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    rng = np.random.default_rng(seed)
    fixed_output = answer_solver()
    ds = [Sample(id=f"q{i}", input=f"{i}+{i}?", target=str(2 * i)) for i in range(N)]
    for model, p in models:
        ans = {f"q{i}": [str(2 * i) if rng.random() < p else "?" for _ in range(EPOCHS)] for i in range(N)}
        inspect_eval(Task(dataset=ds, solver=fixed_output(ans), scorer=match(), epochs=Epochs(EPOCHS, reducer),
                          name="arith"), model=model, log_dir=str(path), display="none")


def _inspect_accuracy(path) -> dict[tuple[str, str], float]:
    from inspect_ai.log import list_eval_logs, read_eval_log

    out = {}
    for info in list_eval_logs(str(path)):
        log = read_eval_log(info)
        for sc in log.results.scores:
            out[(log.eval.model, sc.reducer or "mean")] = sc.metrics["accuracy"].value
    return out


@pytest.mark.parametrize("reducer", ["mean", "median", "mode", "max", "pass_at_2", "at_least_2"])
def test_reduced_accuracies_equal_inspects_own(tmp_path, reducer):
    _write(tmp_path, reducer, seed=hash(reducer) % 1000)
    theirs = _inspect_accuracy(tmp_path)
    res = me.summarize(me.read_eval_logs(tmp_path), metric="match")
    for _, r in res.table.iterrows():
        assert r["mean_score"] == pytest.approx(theirs[(r["system"], reducer)], rel=1e-12, abs=1e-12)
        assert r["n_items"] == N and r["n_epochs"] == EPOCHS  # the log's epochs, also when its reducer reduced them (issue 38)


def test_several_reducers_give_one_metric_each_and_max_differs_from_mean(tmp_path):
    _write(tmp_path, ["mean", "max"], seed=3)
    theirs = _inspect_accuracy(tmp_path)
    logs = me.read_eval_logs(tmp_path)
    assert {"match", "match_max"} <= set(logs.table["metric"])
    mean = me.summarize(logs, metric="match").table.set_index("system")["mean_score"]
    mx = me.summarize(logs, metric="match_max").table.set_index("system")["mean_score"]
    for m in mean.index:
        assert mean[m] == pytest.approx(theirs[(m, "mean")], rel=1e-12)
        assert mx[m] == pytest.approx(theirs[(m, "max")], rel=1e-12)
    assert (mx > mean).any()  # the reducer matters: the max was not ignored


def test_an_unknown_reducer_is_a_data_error_naming_it():
    from mixedeval.data._logs_inspect import _reduce

    assert _reduce("pass_at_2", ["C", "I", "I"], lambda v: 1.0 if v == "C" else 0.0) == pytest.approx(1 - 1 / 3)
    assert _reduce("pass_k_2", ["C", "C", "I"], lambda v: 1.0 if v == "C" else 0.0) == pytest.approx(1 / 3)
    with pytest.raises(me.DataError, match="'majority'"):
        _reduce("majority", [1.0, 0.0, 1.0], float)
