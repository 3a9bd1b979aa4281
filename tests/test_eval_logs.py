"""me.read_eval_logs on real formats: lm-evaluation-harness and HELM fixtures written to their
writers' source (tests/fixtures/*/README.md), Inspect AI logs generated here by inspect_ai itself
(offline: a solver sets the output, no model is called), and generic tables. Expected values are
read from the raw files independently of the readers."""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.data import _logs_inspect

FIX = Path(__file__).resolve().parent / "fixtures"
LM = FIX / "lm_eval" / "output"
HELM = FIX / "helm" / "benchmark_output"


def _raw_lm_samples() -> pd.DataFrame:
    """The lm-eval fixture read with plain json: one row per (file, doc, metric)."""
    rows = []
    for f in sorted(LM.rglob("samples_*.jsonl")):
        date = f.stem.rsplit("_", 1)[1]
        task = f.stem[len("samples_"):-(len(date) + 1)]
        header = json.loads((f.parent / f"results_{date}.json").read_text())
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            for m in rec["metrics"]:
                name = m if rec["filter"] == "none" else f"{m},{rec['filter']}"
                rows.append({"system": header["model_name"], "task": task, "item": str(rec["doc_id"]), "date": date,
                             "metric": name, "score": float(rec[m])})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ lm-eval
def test_lm_eval_every_field_multi_task_multi_model_several_runs():
    logs = me.read_eval_logs(LM)
    t = logs.table
    assert list(t.columns[:9]) == ["system", "task", "item", "run", "epoch", "metric", "score", "source", "format"]
    assert set(t["system"]) == {"EleutherAI/pythia-70m", "EleutherAI/pythia-160m"}  # model_name of results_*.json
    assert set(t["task"]) == {"arc_easy", "boolq", "gsm8k"}
    assert set(t["metric"]) == {"acc", "acc_norm", "exact_match,strict-match", "exact_match,flexible-extract"}
    assert set(t["filter"]) == {"none", "strict-match", "flexible-extract"}
    # several dates of one model are runs; a model with one date has one run
    runs = t.groupby("system")["run"].unique()
    assert sorted(runs["EleutherAI/pythia-70m"]) == ["2024-06-01T10-15-30.123456", "2024-06-02T09-00-01.654321"]
    assert list(runs["EleutherAI/pythia-160m"]) == ["2024-06-01T11-20-00.000001"]
    raw = _raw_lm_samples()
    assert len(t) == len(raw)
    merged = t.merge(raw, left_on=["system", "task", "item", "run", "metric"],
                     right_on=["system", "task", "item", "date", "metric"], how="outer", validate="1:1",
                     indicator=True)
    assert (merged["_merge"] == "both").all()
    np.testing.assert_array_equal(merged["score_x"], merged["score_y"])
    assert logs.warnings == ()
    assert set(logs.files["format"]) == {"lm-eval"} and len(logs.files) == 9
    assert logs.to_frame().equals(t)


def _copy_lm(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(LM, out)
    return out


def test_lm_eval_model_name_fallbacks(tmp_path):
    out = _copy_lm(tmp_path)
    d = out / "EleutherAI__pythia-160m"
    res = next(d.glob("results_*.json"))
    header = json.loads(res.read_text())
    del header["model_name"]  # older lm-eval: model name from config.model_args pretrained=
    res.write_text(json.dumps(header))
    t = me.read_eval_logs(d).table
    assert set(t["system"]) == {"EleutherAI/pythia-160m"}
    res.unlink()  # no results file: the sanitized directory name, with a warning
    logs = me.read_eval_logs(d)
    assert set(logs.table["system"]) == {"EleutherAI__pythia-160m"}
    assert [w.kind for w in logs.warnings] == ["lmeval_no_results"]


def test_dict_source_names_systems_and_metric_filter():
    src = {"small": LM / "EleutherAI__pythia-70m", "large": LM / "EleutherAI__pythia-160m"}
    t = me.read_eval_logs(src, metric="acc").table
    assert set(t["system"]) == {"small", "large"} and set(t["metric"]) == {"acc"}
    t2 = me.read_eval_logs(LM, systems={"EleutherAI/pythia-70m": "small"}, metric=["acc"]).table
    assert set(t2["system"]) == {"small", "EleutherAI/pythia-160m"}
    t3 = me.read_eval_logs(str(LM / "*" / "samples_boolq_*.jsonl"), systems=["EleutherAI/pythia-160m"]).table
    assert set(t3["task"]) == {"boolq"} and set(t3["system"]) == {"EleutherAI/pythia-160m"}
    with pytest.raises(me.DataError, match="metric.*'accuracy'.*not found"):
        me.read_eval_logs(LM, metric="accuracy")
    with pytest.raises(me.DataError, match="system.*not found"):
        me.read_eval_logs(LM, systems=["gpt-5"])


def test_file_named_twice_is_read_once_with_a_warning():
    d = LM / "EleutherAI__pythia-160m"
    logs = me.read_eval_logs([d, next(d.glob("samples_boolq_*.jsonl"))])
    assert len(logs.table) == len(me.read_eval_logs(d).table)
    assert "duplicated_files" in [w.kind for w in logs.warnings]


def _edit_samples(path: Path, fn) -> None:
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines = fn(lines)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_missing_items_named_or_dropped(tmp_path):
    out = _copy_lm(tmp_path)
    f = next((out / "EleutherAI__pythia-160m").glob("samples_boolq_*.jsonl"))
    _edit_samples(f, lambda ls: [x for x in ls if x["doc_id"] not in (2, 4)])
    with pytest.raises(me.DataError, match=r"task 'boolq', metric 'acc': 2 of 6 items lack a score.*"
                                           r"'EleutherAI/pythia-160m': 2.*'2', '4'.*drop_missing=True"):
        me.read_eval_logs(out)
    logs = me.read_eval_logs(out, drop_missing=True)
    b = logs.table[logs.table["task"] == "boolq"]
    assert set(b["item"]) == {"0", "1", "3", "5"}  # dropped for every system
    assert b.groupby(["system", "run"]).size().eq(4).all()
    assert [w.kind for w in logs.warnings] == ["missing_rows"]


def test_duplicated_item_ids_within_a_run(tmp_path):
    out = _copy_lm(tmp_path)
    f = next((out / "EleutherAI__pythia-160m").glob("samples_boolq_*.jsonl"))
    _edit_samples(f, lambda ls: ls + [ls[0]])
    with pytest.raises(me.DataError, match=r"repeat an item id within one run.*item '0' of task 'boolq'"):
        me.read_eval_logs(out)


def test_metric_present_for_some_systems_only(tmp_path):
    out = _copy_lm(tmp_path)
    f = next((out / "EleutherAI__pythia-160m").glob("samples_arc_easy_*.jsonl"))

    def drop_norm(ls):
        for x in ls:
            x["metrics"] = ["acc"]
            del x["acc_norm"]
        return ls

    _edit_samples(f, drop_norm)
    logs = me.read_eval_logs(out)
    w = [w for w in logs.warnings if w.kind == "metric_missing"]
    assert len(w) == 1 and "'acc_norm' is reported for 1 of 2 systems" in w[0].message
    assert "EleutherAI/pythia-160m" in w[0].message
    with pytest.raises(me.DataError, match="'acc_norm' is reported for 1 of 2 systems"):
        me.read_eval_logs(out, metric="acc_norm")


def test_mixed_tasks_under_one_name(tmp_path):
    out = _copy_lm(tmp_path)
    res = next((out / "EleutherAI__pythia-160m").glob("results_*.json"))
    header = json.loads(res.read_text())
    header["n-shot"]["boolq"] = 5  # a 5-shot boolq against the 0-shot boolq of the other model
    res.write_text(json.dumps(header))
    with pytest.raises(me.DataError, match="task 'boolq' comes from 2 different task configurations"):
        me.read_eval_logs(out)
    out2 = _copy_lm(tmp_path / "b")
    f = next((out2 / "EleutherAI__pythia-160m").glob("samples_arc_easy_*.jsonl"))

    def other_doc(ls):
        for x in ls:
            if x["doc_id"] == 3:
                x["doc_hash"] = "0" * 64
        return ls

    _edit_samples(f, other_doc)
    with pytest.raises(me.DataError, match="task 'arc_easy'.*different contents.*doc_id '3'"):
        me.read_eval_logs(out2)


def test_non_numeric_metric_values_are_counted(tmp_path):
    out = _copy_lm(tmp_path)
    f = next((out / "EleutherAI__pythia-160m").glob("samples_boolq_*.jsonl"))

    def add_bleu(ls):
        for x in ls:
            x["metrics"] = ["acc", "bleu"]
            x["bleu"] = ["the reference", "the prediction"]  # lm-eval logs corpus metrics as pairs
        return ls

    _edit_samples(f, add_bleu)
    logs = me.read_eval_logs(out, metric="acc")
    w = [w for w in logs.warnings if w.kind == "non_numeric"]
    assert len(w) == 1 and w[0].message.startswith("6 metric values are not numbers")


def test_bad_sources():
    with pytest.raises(me.DataError, match="does not exist"):
        me.read_eval_logs("/nonexistent/dir")
    with pytest.raises(me.DataError, match="matches no file"):
        me.read_eval_logs("/nonexistent/*.jsonl")
    with pytest.raises(me.DataError, match="format must be one of"):
        me.read_eval_logs(LM, format="lmeval")
    with pytest.raises(me.DataError, match="no evaluation log found"):
        me.read_eval_logs(FIX / "lm_eval", format="helm")


# ------------------------------------------------------------------------------ HELM
def _raw_helm() -> pd.DataFrame:
    rows = []
    for f in sorted(HELM.rglob("per_instance_stats.json")):
        spec = json.loads((f.parent / "run_spec.json").read_text())
        for inst in json.loads(f.read_text()):
            if "perturbation" in inst:
                continue
            for s in inst["stats"]:
                rows.append({"system": spec["adapter_spec"]["model"], "suite": f.parent.parent.name,
                             "task": re.sub(r",?model=[^,]*", "", spec["name"]).rstrip(":"),
                             "item": inst["instance_id"], "trial": inst["train_trial_index"],
                             "metric": s["name"]["name"], "score": s["mean"], "split": s["name"]["split"]})
    return pd.DataFrame(rows)


def test_helm_every_field_multi_task_multi_model_several_runs():
    logs = me.read_eval_logs(HELM)
    t = logs.table
    assert set(t["system"]) == {"openai/gpt2", "eleutherai/pythia-1b-v0"}  # adapter_spec.model
    assert set(t["task"]) == {"mmlu:subject=anatomy,method=multiple_choice_joint", "boolq"}  # model= removed
    assert set(t["metric"]) == {"exact_match", "quasi_exact_match", "num_output_tokens", "inference_runtime"}
    assert set(t["split"]) == {"test"}
    raw = _raw_helm()
    assert len(t) == len(raw)
    # gpt2 ran in two suites: run = suite/trial; pythia in one suite: run = train trial
    g = t[(t["system"] == "openai/gpt2") & (t["task"] == "boolq")]
    assert sorted(g["run"].unique()) == ["v1/0", "v1/1", "v2/0", "v2/1"]
    p = t[(t["system"] == "eleutherai/pythia-1b-v0") & (t["task"] == "boolq")]
    assert sorted(p["run"].unique()) == ["0", "1"]
    raw["run"] = np.where(raw["system"] == "openai/gpt2", raw["suite"] + "/" + raw["trial"].astype(str),
                          raw["trial"].astype(str))
    m = t.merge(raw, on=["system", "task", "item", "run", "metric"], validate="1:1")
    assert len(m) == len(t)
    np.testing.assert_array_equal(m["score_x"], m["score_y"])
    w = [w for w in logs.warnings if w.kind == "helm_perturbed"]
    assert len(w) == 1 and w[0].message.startswith("9 HELM stats of perturbed instances")


def test_helm_sum_over_count_when_no_mean(tmp_path):
    src = HELM / "runs" / "v1" / "boolq:model=openai_gpt2"
    d = tmp_path / "suite" / src.name
    shutil.copytree(src, d)
    data = json.loads((d / "per_instance_stats.json").read_text())
    for inst in data:
        for s in inst["stats"]:
            s["count"], s["sum"] = 2, 2 * s["mean"]
            del s["mean"]
    (d / "per_instance_stats.json").write_text(json.dumps(data))
    a = me.read_eval_logs(d, metric="inference_runtime").table
    b = me.read_eval_logs(src, metric="inference_runtime").table
    np.testing.assert_allclose(a["score"], b["score"], rtol=1e-15)
    (d / "run_spec.json").unlink()
    with pytest.raises(me.DataError, match="no run_spec.json"):
        me.read_eval_logs(d)


# ------------------------------------------------------------------------------ Inspect AI
needs_inspect = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None,
                                   reason="the optional extra mixedeval[logs] is not installed (CI installs it)")

ANSWERS = {  # model -> per sample, the output of epochs 1..3
    "mockllm/model_a": {f"q{i}": [str(2 * i), str(2 * i + i % 2), str(2 * i)] for i in range(6)},
    "mockllm/model_b": {f"q{i}": [str(2 * i + (i < 3)), str(2 * i), "no idea"] for i in range(6)},
}


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    """Real Inspect logs: two models x one task x 3 epochs (.eval), and one .json log."""
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score, accuracy, match, scorer
    from inspect_ai.solver import solver

    @solver
    def fixed_output(answers):
        async def solve(state, generate):  # sets the output itself: no model call
            content = answers[str(state.sample_id)][state.epoch - 1]
            state.output = ModelOutput.from_content(model=str(state.model), content=content)
            return state
        return solve

    @scorer(metrics=[accuracy()])
    def graded():
        async def score(state, target):  # C / P / I as inspect's model-graded scorers return them
            out = state.output.completion
            v = "C" if out == target.text else ("P" if out.isdigit() else "I")
            return Score(value=v)
        return score

    d = tmp_path_factory.mktemp("inspect_logs")
    ds = [Sample(id=f"q{i}", input=f"What is {i}+{i}?", target=str(2 * i)) for i in range(6)]
    for model, answers in ANSWERS.items():
        task = Task(dataset=ds, solver=fixed_output(answers), scorer=[match(), graded()], epochs=3, name="arith")
        inspect_eval(task, model=model, log_dir=str(d / "eval"), display="none")
    task = Task(dataset=ds, solver=fixed_output(ANSWERS["mockllm/model_a"]), scorer=match(), epochs=3,
                name="arith_json")
    inspect_eval(task, model="mockllm/model_a", log_dir=str(d / "json"), log_format="json", display="none")
    return d


@needs_inspect
def test_inspect_eval_logs_read_back(inspect_logs):
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import value_to_float

    logs = me.read_eval_logs(inspect_logs / "eval")
    t = logs.table
    assert set(t["system"]) == set(ANSWERS) and set(t["task"]) == {"arith"}
    assert set(t["metric"]) == {"match", "graded"} and set(t["format"]) == {"inspect"}
    assert sorted(t["epoch"].unique()) == ["1", "2", "3"]  # epochs are epochs, not runs
    runs = t.groupby("system")["run"].unique()
    for f in sorted((inspect_logs / "eval").glob("*.eval")):  # one log per model: one run, named by its run id
        log = read_eval_log(str(f), header_only=True)
        assert list(runs[log.eval.model]) == [log.eval.run_id]
    assert len(t) == 2 * 6 * 3 * 2
    to_float = value_to_float()
    expected = []
    for f in sorted((inspect_logs / "eval").glob("*.eval")):
        log = read_eval_log(str(f))
        for s in log.samples:
            for name, sc in s.scores.items():
                expected.append({"system": log.eval.model, "item": s.id, "epoch": str(s.epoch), "metric": name,
                                 "expected": to_float(sc.value)})
    m = t.merge(pd.DataFrame(expected), on=["system", "item", "epoch", "metric"], validate="1:1")
    assert len(m) == len(t)
    np.testing.assert_array_equal(m["score"], m["expected"])
    # the answers decide the scores: model_a epoch 2 is wrong on odd items; P gives 0.5
    a = t[(t["system"] == "mockllm/model_a") & (t["metric"] == "match")].set_index(["item", "epoch"])["score"]
    assert a[("q1", "2")] == 0.0 and a[("q2", "2")] == 1.0 and a[("q1", "1")] == 1.0
    g = t[(t["system"] == "mockllm/model_b") & (t["metric"] == "graded")].set_index(["item", "epoch"])["score"]
    assert g[("q0", "1")] == 0.5 and g[("q0", "2")] == 1.0 and g[("q0", "3")] == 0.0


@needs_inspect
def test_inspect_json_log_and_mixed_formats(inspect_logs):
    logs = me.read_eval_logs([inspect_logs / "json", LM / "EleutherAI__pythia-160m"], metric=["match", "acc"])
    t = logs.table
    assert set(t["format"]) == {"inspect", "lm-eval"}
    j = t[t["format"] == "inspect"]
    assert set(j["task"]) == {"arith_json"} and len(j) == 18
    e = me.read_eval_logs(inspect_logs / "eval", metric="match", systems=["mockllm/model_a"]).table
    np.testing.assert_array_equal(j.sort_values(["item", "run"])["score"], e.sort_values(["item", "run"])["score"])


@needs_inspect
def test_inspect_missing_extra_says_how_to_install(inspect_logs, monkeypatch):
    def broken():
        raise me.DataError(_logs_inspect._INSTALL)

    monkeypatch.setattr(_logs_inspect, "_inspect", broken)
    monkeypatch.setattr(_logs_inspect, "inspect_installed", lambda: False)  # the direct .eval reader too
    with pytest.raises(me.DataError, match=r"pip install 'mixedeval\[logs\]'"):
        me.read_eval_logs(inspect_logs / "eval")


def test_inspect_import_error_message(monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("inspect_ai"):
            raise ImportError("no inspect_ai")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(me.DataError, match=r"optional dependency.*pip install 'mixedeval\[logs\]'"):
        _logs_inspect._inspect()


# ------------------------------------------------------------------------------ generic tables
def test_generic_long_and_wide_tables(tmp_path):
    rng = np.random.default_rng(0)
    wide = pd.DataFrame({"model": np.repeat(["a", "b"], 10), "id": np.tile(np.arange(10), 2),
                         "seed": 1, "acc": rng.integers(0, 2, 20).astype(float), "f1": rng.random(20)})
    before = wide.copy()
    p = tmp_path / "scores.csv"
    wide.to_csv(p, index=False)
    t = me.read_eval_logs(p, columns={"system": "model", "item": "id", "run": "seed"}).table
    assert set(t["metric"]) == {"acc", "f1"} and set(t["task"]) == {"scores"} and set(t["run"]) == {"1"}
    got = t[t["metric"] == "f1"].sort_values(["system", "item"], key=lambda s: s.astype(str))["score"].to_numpy()
    np.testing.assert_array_equal(np.sort(got), np.sort(wide["f1"].to_numpy()))
    long = wide.melt(id_vars=["model", "id"], value_vars=["acc"], var_name="metric", value_name="score")
    long.to_parquet(tmp_path / "long.parquet")
    t2 = me.read_eval_logs(tmp_path / "long.parquet", format="table", columns={"system": "model", "item": "id"}).table
    assert set(t2["metric"]) == {"acc"} and len(t2) == 20
    t3 = me.read_eval_logs(wide, format="table", columns={"system": "model", "item": "id"}, metric="acc").table
    assert len(t3) == 20
    pd.testing.assert_frame_equal(wide, before)  # never modified
    with pytest.raises(me.DataError, match="no 'item' column"):
        me.read_eval_logs(p, columns={"system": "model"})
    with pytest.raises(me.DataError, match="unknown key"):
        me.read_eval_logs(p, columns={"model": "model"})


def test_generic_nan_scores_are_missing_items(tmp_path):
    df = pd.DataFrame({"system": ["a", "a", "b", "b"], "item": [1, 2, 1, 2], "acc": [1.0, 0.0, np.nan, 1.0]})
    with pytest.raises(me.DataError, match="1 of 2 items lack a score"):
        me.read_eval_logs(df, format="table")
    logs = me.read_eval_logs(df, format="table", drop_missing=True)
    assert [w.kind for w in logs.warnings] == ["missing_scores", "missing_rows"]
    assert set(logs.table["item"]) == {"2"}


def test_lm_eval_doc_fields_and_helm_instance_fields_as_metadata(tmp_path):
    """metadata=[...] carries lm-eval doc fields and HELM instance fields as columns; compare_logs
    asks for its cluster= field itself; a field found nowhere is a DataError."""
    out = _copy_lm(tmp_path)
    for f in out.rglob("samples_boolq_*.jsonl"):  # a passage id per document, read back by plain json
        recs = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        for r in recs:
            r["doc"]["passage_id"] = f"p{r['doc_id'] // 3}"
            r["doc"]["split"] = "validation"  # named like a column: carried as metadata_split
        f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    logs = me.read_eval_logs(out, metric="acc", metadata=["passage_id", "split"])
    t = logs.table[logs.table["task"] == "boolq"]
    expected = [f"p{int(i) // 3}" for i in t["item"]]
    assert t["passage_id"].tolist() == expected and set(t["metadata_split"]) == {"validation"}
    assert logs.table.loc[logs.table["task"] != "boolq", "passage_id"].isna().all()
    with pytest.raises(me.DataError, match="nowhere|found in no log"):
        me.read_eval_logs(out, metric="acc", metadata=["no_such_field"])
    sub = {k: sorted((out / d).glob("samples_boolq_*.jsonl"))[0]
           for k, d in {"a": "EleutherAI__pythia-70m", "b": "EleutherAI__pythia-160m"}.items()}
    res = me.compare_logs(sub, metric="acc", cluster="passage_id", n_resamples=100, random_state=0, progress=False)
    assert "cluster" in res.table["method"].iloc[0]
    helm = tmp_path / "helm"
    shutil.copytree(HELM, helm)
    for stats in helm.rglob("per_instance_stats.json"):
        ids = sorted({str(e["instance_id"]) for e in json.loads(stats.read_text())})
        (stats.parent / "instances.json").write_text(json.dumps(
            [{"id": i, "split": "test", "sub_split": f"s{n % 2}", "input": {"text": "x"}} for n, i in enumerate(ids)]))
    h = me.read_eval_logs(helm, metadata=["sub_split"]).table
    assert set(h["sub_split"]) == {"s0", "s1"}
