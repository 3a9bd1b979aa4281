"""me.read_judge_scores: Inspect AI logs graded by its own model_graded_qa / model_graded_fact
(written offline with a stub grader model), joined to a human-label CSV by sample id, system and
epoch; the DataErrors for labels that match nothing, duplicated labels and non-random labelled
subsets."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me

pytest.importorskip("inspect_ai")
from inspect_helpers import write_graded_logs  # noqa: E402

N = 16


@pytest.fixture(scope="module", params=["model_graded_qa", "model_graded_fact"])
def graded(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    answers = write_graded_logs(path, {"mockllm/a": 0.8, "mockllm/b": 0.5}, epochs=2, seed=3, n=N,
                                scorer=request.param)
    return path, answers, request.param


def _labels(answers, rng, frac=0.4):
    rows = []
    for model, by_id in answers.items():
        for sid, texts in by_id.items():
            for e, text in enumerate(texts, start=1):
                if rng.random() < frac:  # a person's grade: right answers are right, 1 in 10 disputed
                    y = float("right" in text) if rng.random() > 0.1 else 0.5
                    rows.append({"id": sid, "model": model, "epoch": e, "human": y})
    return pd.DataFrame(rows)


def test_inspect_model_graded_scores_join_the_labels(graded, tmp_path):
    path, answers, scorer = graded
    labels = _labels(answers, np.random.default_rng(0))
    csv = tmp_path / "labels.csv"
    labels.to_csv(csv, index=False)
    df = me.read_judge_scores(path, csv, metric=scorer, label_system="model", label_epoch="epoch",
                              human_score="human")
    assert len(df) == 2 * N * 2 and set(df["system"]) == {"mockllm/a", "mockllm/b"}
    # the judge's grade is Inspect's (C -> 1, I -> 0) of the text the solver gave
    for _, r in df.iterrows():
        text = answers[r["system"]][r["item"]][int(r["epoch"]) - 1]
        assert r["judge_score"] == float("right" in text)
    merged = df.dropna(subset=["human_score"])
    assert len(merged) == len(labels)
    key = labels.assign(epoch=labels["epoch"].astype(str)).set_index(["model", "id", "epoch"])["human"]
    got = merged.set_index(["system", "item", "epoch"])["human_score"]
    pd.testing.assert_series_equal(got.sort_index(), key.sort_index(), check_names=False, check_index_type=False)
    res = me.judge_corrected(df, epoch="epoch")
    assert set(res.table["system"]) == {"mockllm/a", "mockllm/b"}


def test_label_errors(graded):
    path, answers, scorer = graded
    labels = _labels(answers, np.random.default_rng(1))
    kw = dict(metric=scorer, label_system="model", label_epoch="epoch", human_score="human")
    bad = pd.concat([labels, pd.DataFrame([{"id": "q999", "model": "mockllm/a", "epoch": 1, "human": 1.0}])],
                    ignore_index=True)
    with pytest.raises(me.DataError, match="match no judged answer"):
        me.read_judge_scores(path, bad, **kw)
    with pytest.raises(me.DataError, match="duplicated labels"):
        me.read_judge_scores(path, pd.concat([labels, labels.iloc[:2]], ignore_index=True), **kw)
    with pytest.raises(me.DataError, match="only system 'mockllm/a' has labels"):
        me.read_judge_scores(path, labels[labels["model"] == "mockllm/a"], **kw)
    with pytest.raises(me.DataError, match="no system column"):
        me.read_judge_scores(path, labels, metric=scorer, label_epoch="epoch", human_score="human")
    with pytest.raises(me.DataError, match="no epoch column"):
        me.read_judge_scores(path, labels, metric=scorer, label_system="model", human_score="human")
    zero = labels.assign(epoch=labels["epoch"] - 1)  # epochs counted from 0
    with pytest.raises(me.DataError, match="Inspect epochs count from 1"):
        me.read_judge_scores(path, zero, **kw)


def test_score_tables_and_labels_only_on_one_task():
    rng = np.random.default_rng(2)
    rows = [{"system": s, "task": t, "item": f"i{i}", "judge_score": float(rng.random() < 0.6)}
            for s in ("x", "y") for t in ("t1", "t2") for i in range(30)]
    scores = pd.DataFrame(rows)
    labels = pd.DataFrame([{"id": f"i{i}", "system": s, "task": "t1", "y": 1.0} for s in ("x", "y") for i in range(10)])
    with pytest.raises(me.DataError, match=r"tasks \['t2'\] have no labels"):
        me.read_judge_scores(scores, labels, task="task", label_system="system", label_task="task", human_score="y")
    both = pd.concat([labels, labels.assign(task="t2")], ignore_index=True)
    df = me.read_judge_scores(scores, both, task="task", label_system="system", label_task="task", human_score="y")
    assert df["item"].str.startswith(("t1/", "t2/")).all() and df["human_score"].notna().sum() == 40
    none = me.read_judge_scores(scores, None, task="task")
    assert none["human_score"].isna().all()


def test_cli_reads_logs_and_labels(graded, tmp_path, capsys):
    import json

    from mixedeval.cli import main

    path, answers, scorer = graded
    csv = tmp_path / "labels.csv"
    _labels(answers, np.random.default_rng(3), frac=0.6).to_csv(csv, index=False)
    rc = main(["judge", str(path), "--labels", str(csv), "--metric", scorer, "--label-system", "model",
               "--label-epoch", "epoch", "--human-score", "human", "--no-agreement", "--json", "--quiet"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    df = me.read_judge_scores(path, csv, metric=scorer, label_system="model", label_epoch="epoch", human_score="human")
    res = me.judge_corrected(df, epoch="epoch", random_state=0)
    assert out["answer"]["headline"]["text"] == res.headline_text()
