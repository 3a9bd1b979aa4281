"""Issue 23 point 3: systems from configurations. Inspect logs generated here by inspect_ai itself
(offline: a solver sets the output) for one model with task args cot=True / cot=False, with
different tags, and with two solvers; lm-eval and HELM fixtures for their fields. The default
splits one model's differing logs (never merges them silently), ``system=`` names the fields,
a ``{name: path}`` dict joins two configurations with their definitions recorded, and
compare_logs / the CLI ``--system-from`` compare them."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mixedeval as me

FIX = Path(__file__).resolve().parent / "fixtures"
LM = FIX / "lm_eval" / "output"
HELM = FIX / "helm" / "benchmark_output"
MODEL = "mockllm/model"
N = 12

needs_inspect = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None,
                                   reason="the optional extra mixedeval[logs] is not installed (CI installs it)")


def _wrong(n: int, cot: bool) -> bool:
    """The answers: with chain of thought wrong on every 4th question, without on every 3rd."""
    return n % 4 == 0 if cot else n % 3 == 0


@pytest.fixture(scope="module")
def logs_dir(tmp_path_factory):
    """cot/ and direct/: task args cot=True / False; tags/: three logs tagged t1, t2, t3;
    solvers/: two solvers of one model on the same task."""
    from inspect_ai import Task, eval as inspect_eval, task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import match
    from inspect_ai.solver import solver

    @solver
    def answer(cot: bool = False):
        async def solve(state, generate):  # sets the output itself: no model call
            n = int(str(state.sample_id)[1:])
            out = str(2 * n + _wrong(n, cot))
            state.output = ModelOutput.from_content(model=str(state.model), content=out)
            return state
        return solve

    @solver
    def always_zero():
        async def solve(state, generate):
            state.output = ModelOutput.from_content(model=str(state.model), content="0")
            return state
        return solve

    @task
    def arith_cot(cot: bool = False):
        ds = [Sample(id=f"q{i}", input=f"What is {i}+{i}?", target=str(2 * i)) for i in range(N)]
        return Task(dataset=ds, solver=answer(cot), scorer=match())

    d = tmp_path_factory.mktemp("systems")
    kw = dict(model=MODEL, display="none")
    inspect_eval(arith_cot(cot=True), log_dir=str(d / "cot"), **kw)
    inspect_eval(arith_cot(cot=False), log_dir=str(d / "direct"), **kw)
    for tag in ("t1", "t2", "t3"):
        inspect_eval(arith_cot(cot=True), log_dir=str(d / "tags"), tags=[tag], **kw)
    inspect_eval(arith_cot(cot=True), log_dir=str(d / "solvers"), **kw)
    inspect_eval(arith_cot(cot=True), solver=always_zero(), log_dir=str(d / "solvers"), **kw)
    return d


def _kinds(logs) -> list[str]:
    return [w.kind for w in logs.warnings]


# ------------------------------------------------------------------------------ the default: split, with a warning
@needs_inspect
def test_default_splits_task_args_with_a_warning_naming_the_field(logs_dir):
    logs = me.read_eval_logs([logs_dir / "cot", logs_dir / "direct"])
    assert set(logs.table["system"]) == {f"{MODEL} | cot=True", f"{MODEL} | cot=False"}
    (w,) = [w for w in logs.warnings if w.kind == "systems_split"]
    assert "task_args.cot" in w.message and MODEL in w.message
    assert logs.table.groupby("system")["run"].nunique().eq(1).all()  # one run each, not one system with two
    s = logs.systems()
    assert list(s.columns) == ["system", "model", "task_args.cot", "n_files"]
    assert dict(zip(s["system"], s["task_args.cot"])) == {f"{MODEL} | cot=False": "False",
                                                          f"{MODEL} | cot=True": "True"}


@needs_inspect
def test_default_splits_tags_and_solvers(logs_dir):
    tags = me.read_eval_logs(logs_dir / "tags")
    assert sorted(tags.table["system"].unique()) == [f"{MODEL} | tags={t}" for t in ("t1", "t2", "t3")]
    (w,) = [w for w in tags.warnings if w.kind == "systems_split"]
    assert "tags (t1, t2, t3)" in w.message
    solvers = me.read_eval_logs(logs_dir / "solvers")
    assert set(solvers.table["system"]) == {f"{MODEL} | solver=answer", f"{MODEL} | solver=always_zero"}
    (w,) = [w for w in solvers.warnings if w.kind == "systems_split"]
    assert "solver (always_zero, answer)" in w.message
    assert "plan" not in w.message  # the fewest fields: the plan follows from the solver


@needs_inspect
def test_joining_by_model_warns_naming_the_fields(logs_dir):
    logs = me.read_eval_logs(logs_dir / "tags", system="model")
    assert set(logs.table["system"]) == {MODEL} and logs.table["run"].nunique() == 3
    (w,) = [w for w in logs.warnings if w.kind == "systems_merged"]
    assert "tags (t1, t2, t3)" in w.message
    # differing task args are not runs of one system: the error says how to name them
    with pytest.raises(me.DataError, match=r"task 'arith_cot' comes from 2 different task configurations.*cot: "
                                           r"False, True.*system=\['model', 'task_args.cot'\]"):
        me.read_eval_logs([logs_dir / "cot", logs_dir / "direct"], system="model")


# ------------------------------------------------------------------------------ system= and the dict
@needs_inspect
def test_system_names_fields(logs_dir):
    src = [logs_dir / "cot", logs_dir / "direct"]
    logs = me.read_eval_logs(src, system=["model", "task_args.cot"])
    assert set(logs.table["system"]) == {"mockllm/model | cot=True", "mockllm/model | cot=False"}
    assert "systems_split" not in _kinds(logs) and "systems_merged" not in _kinds(logs)
    defs = dict(zip(logs.files["system"], logs.files["definition"]))
    assert defs["mockllm/model | cot=True"] == {"model": MODEL, "task_args.cot": "True"}
    assert set(me.read_eval_logs(src, system="task_args").table["system"]) == {"cot=True", "cot=False"}
    both = me.read_eval_logs(logs_dir / "solvers", system=["solver", "task_args.cot"])
    assert set(both.table["system"]) == {"solver=answer | cot=True", "solver=always_zero | cot=True"}
    assert "solver" in both.files["fields"].iloc[0] and "plan" in both.files["fields"].iloc[0]
    with pytest.raises(me.DataError, match="system= names log fields"):
        me.read_eval_logs(src, system="temperature")
    with pytest.raises(me.DataError, match="'task_args.shots', which none of the logs records"):
        me.read_eval_logs(src, system=["model", "task_args.shots"])
    with pytest.raises(me.DataError, match="either with a"):
        me.read_eval_logs({"a": logs_dir / "cot"}, system="model")


@needs_inspect
def test_dict_joins_two_configurations_and_records_their_definitions(logs_dir):
    logs = me.read_eval_logs({"direct": logs_dir / "direct", "cot": logs_dir / "cot"})
    assert set(logs.table["system"]) == {"direct", "cot"}
    assert logs.warnings == ()
    defs = dict(zip(logs.files["system"], logs.files["definition"]))
    assert defs["cot"]["task_args.cot"] == "True" and defs["direct"]["task_args.cot"] == "False"
    assert "model" not in defs["cot"]  # the same model: not what defines these systems
    s = logs.systems().set_index("system")
    assert s.loc["cot", "task_args.cot"] == "True" and s.loc["direct", "model"] == MODEL
    joined = me.read_eval_logs({"both": [logs_dir / "cot", logs_dir / "direct"]})
    (w,) = [w for w in joined.warnings if w.kind == "systems_merged"]
    assert "task_args.cot (False, True)" in w.message


# ------------------------------------------------------------------------------ compare_logs and the CLI
@needs_inspect
def test_compare_logs_compares_two_prompting_strategies(logs_dir):
    res = me.compare_logs([logs_dir / "cot", logs_dir / "direct"], metric="match", system=["model", "task_args.cot"],
                          n_resamples=200, random_state=1)
    (row,) = res.table.itertuples()
    assert {row.system_a, row.system_b} == {f"{MODEL} | cot=True", f"{MODEL} | cot=False"}
    acc = {c: 1 - sum(_wrong(n, c) for n in range(N)) / N for c in (True, False)}
    sign = 1 if row.system_a.endswith("cot=True") else -1
    assert row.delta == pytest.approx(sign * (acc[True] - acc[False]))
    by_dict = me.compare_logs({"direct": logs_dir / "direct", "cot": logs_dir / "cot"}, metric="match",
                              n_resamples=200, random_state=1)
    assert by_dict.table["delta"].abs().iloc[0] == pytest.approx(abs(row.delta))
    with pytest.raises(me.DataError, match="apply while reading"):
        me.compare_logs(by_dict.logs, metric="match", system="model")


@needs_inspect
def test_cli_system_from(logs_dir):
    cmd = [sys.executable, "-m", "mixedeval.cli", "--json", "compare-logs", str(logs_dir / "cot"),
           str(logs_dir / "direct"), "--metric", "match", "--system-from", "model", "--system-from", "task_args.cot",
           "--n-resamples", "100", "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    js = json.loads(p.stdout)
    (d,) = js["answer"]["differences"]  # the answer's pairs (issue 38)
    assert {d["system_a"], d["system_b"]} == {f"{MODEL} | cot=True", f"{MODEL} | cot=False"}
    assert not any("systems_split" in w for w in js["warnings"])


# ------------------------------------------------------------------------------ lm-eval and HELM fields
def test_lm_eval_and_helm_record_their_fields():
    lm = me.read_eval_logs(LM)
    assert "systems_split" not in _kinds(lm)  # two dates of one configuration are runs
    f = lm.files["fields"].iloc[0]
    assert f["model_args.model"] == "hf" and f["model_args.dtype"] == "float32" and f["task_args.num_fewshot"] == "0"
    helm = me.read_eval_logs(HELM)
    assert "systems_split" not in _kinds(helm)
    h = helm.files["fields"].iloc[0]
    assert h["generation_config.temperature"] == "0.0" and "model_args.model_deployment" in h
    assert set(me.read_eval_logs(HELM, system=["model", "solver"]).table["system"]) == {
        "openai/gpt2 | solver=generation", "openai/gpt2 | solver=multiple_choice_joint",
        "eleutherai/pythia-1b-v0 | solver=generation", "eleutherai/pythia-1b-v0 | solver=multiple_choice_joint"}


def test_lm_eval_few_shot_strategies_of_one_model(tmp_path):
    """One model's boolq run 0-shot and 5-shot: split by num_fewshot by default (two systems, not
    one with two runs); reading it as one system by model is the configuration error."""
    d = tmp_path / "m"
    shutil.copytree(LM / "EleutherAI__pythia-70m", d)
    res = sorted(d.glob("results_*.json"))[1]
    header = json.loads(res.read_text())
    header["n-shot"] = {k: 5 for k in header["n-shot"]}
    res.write_text(json.dumps(header))
    logs = me.read_eval_logs(d, metric="acc")
    assert set(logs.table["system"]) == {"EleutherAI/pythia-70m | num_fewshot=0",
                                         "EleutherAI/pythia-70m | num_fewshot=5"}
    assert any("task_args.num_fewshot (0, 5)" in w.message for w in logs.warnings if w.kind == "systems_split")
    with pytest.raises(me.DataError, match="task 'arc_easy' comes from 2 different task configurations"):
        me.read_eval_logs(d, system="model")
