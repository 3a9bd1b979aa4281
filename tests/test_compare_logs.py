"""me.compare_logs end to end: the logs of two (or more) systems in, the model, contrasts, bootstrap
and report out. The model numbers are checked against lme4 / lmerTest / emmeans called directly in
R on the same data, built here from the raw log files (independently of the readers)."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from inspect_helpers import answer_solver

from conftest import OPTIMIZER_RTOL

FIX = Path(__file__).resolve().parent / "fixtures"
LM = FIX / "lm_eval" / "output"
HELM = FIX / "helm" / "benchmark_output"


def _raw_lm(metric: str) -> pd.DataFrame:
    """The lm-eval fixture's ``metric`` (filter none) read with plain json."""
    rows = []
    for f in sorted(LM.rglob("samples_*.jsonl")):
        date = f.stem.rsplit("_", 1)[1]
        task = f.stem[len("samples_"):-(len(date) + 1)]
        model = json.loads((f.parent / f"results_{date}.json").read_text())["model_name"]
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            if metric in rec["metrics"] and rec["filter"] == "none":
                rows.append({"system": model, "task": task, "item": str(rec["doc_id"]), "run": date,
                             "score": float(rec[metric])})
    return pd.DataFrame(rows)


def _raw_helm(metric: str) -> pd.DataFrame:
    rows = []
    for f in sorted(HELM.rglob("per_instance_stats.json")):
        spec = json.loads((f.parent / "run_spec.json").read_text())
        task = re.sub(r",?model=[^,]*", "", spec["name"]).rstrip(":")
        for inst in json.loads(f.read_text()):
            if "perturbation" in inst:
                continue
            for s in inst["stats"]:
                if s["name"]["name"] == metric:
                    rows.append({"system": spec["adapter_spec"]["model"], "task": task, "item": inst["instance_id"],
                                 "run": f"{f.parent.parent.name}/{inst['train_trial_index']}", "score": s["mean"]})
    return pd.DataFrame(rows)


def _to_r(R, name: str, df: pd.DataFrame) -> None:
    """Put the model frame into R as ``name`` (values as arguments, factors with code-point levels;
    item nested in task, run nested in system and task)."""
    import rpy2.robjects as ro

    def fac(v):
        v = [str(x) for x in v]
        return ro.FactorVector(ro.StrVector(v), levels=ro.StrVector(sorted(set(v))))

    cols = {"score": ro.FloatVector(df["score"].to_numpy(dtype=float)), "system": fac(df["system"]),
            "task": fac(df["task"]), "item": fac(df["task"] + "::" + df["item"]),
            "sysrun": fac(df["system"] + "::" + df["task"] + "::" + df["run"])}
    if "successes" in df.columns:
        cols["successes"] = ro.FloatVector(df["successes"].to_numpy(dtype=float))
        cols["failures"] = ro.FloatVector(df["failures"].to_numpy(dtype=float))
    ro.globalenv[name] = ro.DataFrame(cols)


def _contrast_p(R, model: str, spec: str, kind: str) -> np.ndarray:
    typ = ', type = "response"' if kind == "glmm" else ', lmer.df = "asymptotic"'
    return R(f'as.data.frame(pairs(emmeans::emmeans({model}, {spec}{typ}), adjust = "none"))$p.value')


def test_binary_metric_goes_to_the_binomial_glmm_equal_to_r(R):
    res = me.compare_logs(LM, metric="acc", n_resamples=200, random_state=0, progress=False)
    assert res.analysis.startswith("binomial GLMM")
    # several runs of pythia-70m give (1|sysrun); R puts its variance at zero, so it is dropped and said
    raw = _raw_lm("acc")
    _to_r(R, "cl_d", raw)
    R('cl_ms <- lme4::glmer(score ~ system * task + (1|item) + (1|sysrun), data = cl_d, family = binomial)')
    assert R('as.data.frame(lme4::VarCorr(cl_ms))$sdcor[2]')[0] < 1e-4 and bool(R("lme4::isSingular(cl_ms)")[0])
    assert res.formula == "score ~ system * task + (1|item)"
    assert any(w.kind == "random_effects_dropped" and "(1|sysrun)" in w.message for w in res.warnings)
    R('cl_m1 <- lme4::glmer(score ~ system * task + (1|item), data = cl_d, family = binomial)')
    R('cl_m0 <- lme4::glmer(score ~ task + (1|item), data = cl_d, family = binomial)')
    # two optimizer runs (ours and this one) on the same data: OPTIMIZER_RTOL
    np.testing.assert_allclose(res.fit.fixed["estimate"], R("lme4::fixef(cl_m1)"), rtol=OPTIMIZER_RTOL, atol=1e-8)
    np.testing.assert_allclose(res.glrt["chisq"].iloc[1], R("anova(cl_m0, cl_m1)$Chisq[2]")[0], rtol=OPTIMIZER_RTOL)
    per_task = res.contrasts[res.contrasts["task"] != "(all tasks)"]
    assert list(per_task["task"]) == ["arc_easy", "boolq"]
    np.testing.assert_allclose(per_task["estimate"],
                               R('as.data.frame(pairs(emmeans::emmeans(cl_m1, ~ system | task, type = "response")))'
                                 '$odds.ratio'), rtol=OPTIMIZER_RTOL)
    np.testing.assert_allclose(per_task["p_value"], _contrast_p(R, "cl_m1", "~ system | task", "glmm"),
                               rtol=OPTIMIZER_RTOL)
    pooled = res.contrasts[res.contrasts["task"] == "(all tasks)"]
    np.testing.assert_allclose(pooled["p_value"], _contrast_p(R, "cl_m1", "~ system", "glmm"), rtol=OPTIMIZER_RTOL)


def test_continuous_metric_goes_to_the_lmm_equal_to_r(R):
    res = me.compare_logs(HELM, metric="inference_runtime", n_resamples=200, random_state=0, progress=False)
    assert res.analysis.startswith("LMM")
    raw = _raw_helm("inference_runtime")
    raw["run"] = np.where(raw["system"] == "openai/gpt2", raw["run"], raw["run"].str.split("/").str[1])
    _to_r(R, "cl_h", raw)
    R("cl_h1 <- lmerTest::lmer(score ~ system * task + (1|item) + (1|sysrun), data = cl_h, REML = TRUE)")
    R("cl_h0 <- lmerTest::lmer(score ~ task + (1|item) + (1|sysrun), data = cl_h, REML = TRUE)")
    np.testing.assert_allclose(res.fit.fixed["estimate"], R("lme4::fixef(cl_h1)"), rtol=OPTIMIZER_RTOL, atol=1e-10)
    np.testing.assert_allclose(res.glrt["chisq"].iloc[1], R("anova(cl_h0, cl_h1)$Chisq[2]")[0], rtol=OPTIMIZER_RTOL)
    per_task = res.contrasts[res.contrasts["task"] != "(all tasks)"]
    np.testing.assert_allclose(per_task["estimate"],
                               R('as.data.frame(pairs(emmeans::emmeans(cl_h1, ~ system | task, lmer.df = '
                                 '"asymptotic")))$estimate'), rtol=OPTIMIZER_RTOL)
    np.testing.assert_allclose(per_task["p_value"], _contrast_p(R, "cl_h1", "~ system | task", "lmm"),
                               rtol=OPTIMIZER_RTOL)
    # the bootstrap means: per task the mean over runs of the item means; pooled the mean of the task means
    m = res.means.set_index(["task", "system"])["estimate"]
    hand = raw.groupby(["task", "system", "run"])["score"].mean().groupby(["task", "system"]).mean()
    for (task, system), v in hand.items():
        assert m[(task, system)] == pytest.approx(v, rel=1e-12)
    item_means = raw.groupby(["task", "system", "item"])["score"].mean().groupby(["task", "system"]).mean()
    for system in raw["system"].unique():
        pooled = item_means.xs(system, level="system").mean()  # runs averaged: trials differ between tasks
        assert m[("(all tasks)", system)] == pytest.approx(pooled, rel=1e-12)
    assert "pooled_runs_averaged" in [w.kind for w in res.warnings]
    assert set(res.bootstrap.columns) >= {"task", "system_a", "system_b", "delta", "conf_low", "conf_high",
                                          "p_value", "p_adj"}


def test_k_of_n_scores_with_trials_are_binomial_counts_equal_to_r(R, tmp_path):
    raw = _raw_lm("acc")
    raw = raw[raw["task"] == "arc_easy"]
    k = raw.groupby(["system", "item"])["score"].sum().reset_index()  # several runs -> k of n per item
    rng = np.random.default_rng(2)
    one = k[k["system"] == k["system"].iloc[0]]
    k = pd.concat([k, one.assign(system="third", score=rng.integers(0, 3, len(one)).astype(float))])
    k["score"] = np.minimum(k["score"], 2) / 2  # proportions of 2 attempts
    k.to_csv(tmp_path / "k.csv", index=False)
    res = me.compare_logs(tmp_path / "k.csv", metric="score", format="table", trials=2, n_resamples=200,
                          random_state=0, progress=False)
    assert res.formula.startswith("cbind(successes, failures) ~ system + (1|item)")
    d = k.assign(task="k", run="1", successes=k["score"] * 2, failures=2 - k["score"] * 2)
    _to_r(R, "cl_k", d)
    R('cl_k1 <- lme4::glmer(cbind(successes, failures) ~ system + (1|item), data = cl_k, family = binomial, '
      'control = lme4::glmerControl(optimizer = "bobyqa"))')
    np.testing.assert_allclose(res.fit.fixed["estimate"], R("lme4::fixef(cl_k1)"), rtol=OPTIMIZER_RTOL, atol=1e-8)
    assert len(res.contrasts) == 3 and set(res.contrasts["task"]) == {"k"}  # three systems: three pairs
    np.testing.assert_allclose(res.contrasts["p_value"], _contrast_p(R, "cl_k1", "~ system", "glmm"),
                               rtol=OPTIMIZER_RTOL)
    assert (res.contrasts["p_adj"] >= res.contrasts["p_value"]).all()


def test_choices_and_errors():
    with pytest.raises(me.DataError, match="analysis must be one of"):
        me.compare_logs(LM, metric="acc", analysis="anova")
    with pytest.raises(me.DataError, match="needs 0/1 scores"):
        me.compare_logs(HELM, metric="inference_runtime", analysis="glmm")
    with pytest.raises(me.DataError, match="comparing needs at least two"):
        me.compare_logs(LM / "EleutherAI__pythia-70m", metric="acc")
    with pytest.raises(me.DataError, match="trials must be a positive integer"):
        me.compare_logs(LM, metric="acc", trials=0)
    with pytest.raises(me.DataError, match="trials=3: the scores must be proportions"):
        me.compare_logs(HELM, metric="inference_runtime", trials=3)
    with pytest.raises(me.DataError, match="reference 'gpt' is not a system"):
        me.compare_logs(LM, metric="acc", reference="gpt")


def test_binary_path_falls_back_to_the_lmm_with_a_warning_without_glmm(monkeypatch):
    import mixedeval.inference._glmm as glmm_mod  # compare_logs imports it when the model-based check runs

    monkeypatch.setattr(glmm_mod, "glmm", None)
    res = me.compare_logs(LM, metric="acc", n_resamples=100, random_state=0, progress=False,
                          reference="EleutherAI/pythia-70m")
    assert res.analysis.startswith("LMM")
    assert "binary_as_lmm" in [w.kind for w in res.warnings]
    assert res.contrasts["contrast"].iloc[0].startswith("(EleutherAI/pythia-70m)")


def test_lmm_analysis_of_binary_scores_on_request():
    res = me.compare_logs(LM, metric="acc", analysis="lmm", n_resamples=100, random_state=0, progress=False)
    assert res.analysis.startswith("LMM") and "binary_as_lmm" not in [w.kind for w in res.warnings]
    # the bootstrap does not depend on the model: same draws, same numbers
    res2 = me.compare_logs(LM, metric="acc", n_resamples=100, random_state=0, progress=False)
    pd.testing.assert_frame_equal(res.bootstrap, res2.bootstrap)
    assert res.to_frame().equals(res.table) and "fit" not in res.to_dict()


@pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None, reason="mixedeval[logs] not installed")
def test_inspect_logs_of_two_models_end_to_end(tmp_path):
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    rng = np.random.default_rng(5)
    n = 30
    right = {"mockllm/strong": 0.8, "mockllm/weak": 0.45}
    answers = {m: {f"q{i}": [str(2 * i) if rng.random() < p else "?" for _ in range(3)] for i in range(n)}
               for m, p in right.items()}

    fixed_output = answer_solver()

    ds = [Sample(id=f"q{i}", input=f"{i}+{i}?", target=str(2 * i)) for i in range(n)]
    for model in right:
        inspect_eval(Task(dataset=ds, solver=fixed_output(answers[model]), scorer=match(), epochs=3, name="arith"),
                     model=model, log_dir=str(tmp_path / "logs"), display="none")
    res = me.compare_logs(tmp_path / "logs", metric="match", n_resamples=500, random_state=1, progress=False)
    assert res.analysis.startswith("binomial GLMM") and "(1|sysrun)" not in res.formula  # epochs are not runs
    # a question x system cell gets (1|system:item) (its epochs are correlated); answers drawn i.i.d. per
    # epoch put its variance at zero, and the GLMM is refitted without it, saying so
    assert "(1|system:item)" in res.formula or any(
        w.kind == "random_effects_dropped" and "(1|system:item)" in w.message for w in res.warnings)
    est = res.means.set_index("system")["estimate"]
    for m in right:
        expected = np.mean([a == str(2 * int(q[1:])) for q, v in answers[m].items() for a in v])
        assert est[m] == pytest.approx(expected, rel=1e-12)
    assert res.contrasts["task"].tolist() == ["arith"]
    path = me.report(res, path=tmp_path / "r.html", progress=False)
    html = path.read_text()
    assert "System comparison from evaluation logs" in html and "binomial GLMM" in html


def test_cli_compare_logs_writes_tables_and_report(tmp_path):
    out = tmp_path / "rep.html"
    cmd = [sys.executable, "-m", "mixedeval.cli", "--json", "compare-logs", str(LM), "--metric", "acc",
           "--n-resamples", "200", "--report", str(out), "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    js = json.loads(p.stdout)
    assert js["analysis"].startswith("binomial GLMM") and len(js["contrasts"]) == 3 and len(js["bootstrap"]) == 3
    assert out.exists() and "System comparison from evaluation logs" in out.read_text()
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "compare-logs", "--metric", "acc",
                        "--system", f"small={LM / 'EleutherAI__pythia-70m'}",
                        "--system", f"large={LM / 'EleutherAI__pythia-160m'}", "--n-resamples", "100", "--quiet"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert re.search(r"^headline: (large − small|small − large): ", p.stdout, re.M)  # systems named by --system
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "compare-logs", str(LM), "--metric", "accuracy"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and "metric(s) ['accuracy'] not found" in p.stderr


@pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None, reason="mixedeval[logs] not installed")
def test_inspect_metadata_clusters_reach_the_clustered_headline(tmp_path):
    """Inspect sample metadata become columns; cluster= names one: the headline's SE is the
    cluster-robust SE of the per-question differences (as Inspect's stderr(cluster=) computes it)."""
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    rng = np.random.default_rng(8)
    right = {"mockllm/a": 0.75, "mockllm/b": 0.55}
    answers = {m: {f"q{i}": [str(2 * i) if rng.random() < p else "?" for _ in range(2)] for i in range(24)}
               for m, p in right.items()}

    fixed_output = answer_solver()

    ds = [Sample(id=f"q{i}", input=f"{i}+{i}?", target=str(2 * i), metadata={"passage": f"p{i // 4}", "task": "x"})
          for i in range(24)]
    for model in right:
        inspect_eval(Task(dataset=ds, solver=fixed_output(answers[model]), scorer=match(), epochs=2, name="arith"),
                     model=model, log_dir=str(tmp_path / "logs"), display="none")
    logs = me.read_eval_logs(tmp_path / "logs")
    assert {"passage", "metadata_task"} <= set(logs.table.columns)  # a field named like a column gets a prefix
    res = me.compare_logs(logs, metric="match", cluster="passage", n_resamples=200, random_state=0, progress=False)
    q = logs.table.groupby(["system", "item", "passage"], as_index=False)["score"].mean()
    wide = q.pivot(index=["item", "passage"], columns="system", values="score").reset_index()
    d = (wide["mockllm/a"] - wide["mockllm/b"]).to_numpy()
    e = d - d.mean()
    g = wide["passage"].to_numpy()
    sums = np.array([e[g == c].sum() for c in np.unique(g)])
    G, n = len(sums), len(d)
    se = np.sqrt(G / (G - 1) * np.sum(sums**2)) / n
    row = res.table.iloc[0]
    assert row["delta"] == pytest.approx(d.mean(), rel=1e-12) and row["std_error"] == pytest.approx(se, rel=1e-10)
    assert row["df"] == G - 1 and "cluster" in row["method"]


def test_glmm_differences_sit_on_the_headline_scale():
    """The GLMM's population-averaged differences (marginal='integrate', scale='difference') are the
    fit's own emmeans contrasts, and per task they are close to the observed paired differences on
    balanced data; to_dict() and the printout lead with the headline."""
    rng = np.random.default_rng(3)
    rows = [(s, f"q{i}", e, float(rng.random() < 1 / (1 + np.exp(-(0.4 + b + eff)))))
            for i, b in enumerate(rng.normal(0, 1.2, 80)) for s, eff in (("a", 0.0), ("b", 0.6)) for e in (1, 2, 3)]
    df = pd.DataFrame(rows, columns=["system", "item", "epoch", "acc"])
    res = me.compare_logs(df, metric="acc", format="table", n_resamples=200, random_state=0, progress=False)
    direct = res.fit.emmeans("system", marginal="integrate").contrasts(adjust="holm", scale="difference").table
    np.testing.assert_allclose(res.model_differences["estimate"], direct["estimate"], rtol=1e-10)
    np.testing.assert_allclose(res.model_differences["std_error"], direct["std_error"], rtol=1e-10)
    r = res.table.iloc[0]  # leaderboard order: the better system (b) first; the model's contrast is a - b
    assert (r["system_a"], r["system_b"]) == ("b", "a") and res.model_differences["contrast"].iloc[0] == "a - b"
    assert abs(res.model_differences["estimate"].iloc[0] + r["delta"]) < 0.02
    d = res.to_dict()
    a = d["answer"]  # the answer first (issue 38)
    assert list(d)[0] == "answer" and a["headline"]["text"] == res.headline_text() == d["headline_text"]
    assert str(res).find("headline") < str(res).find("model-based check")
