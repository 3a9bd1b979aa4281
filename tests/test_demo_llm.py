"""The bundled LLM example (issue 23 point 7): Inspect AI logs of three mock models written by
scripts/make_llm_example.py, readable through ``me.datasets.path("llm_inspect_logs")``, and
``mixedeval demo llm``, which compares them and writes the report.

The script is rerun into a temporary folder: its logs must hold the same scores per model,
task, question and epoch as the bundled ones (only ids and timestamps may differ), and every
score must be what the script meant (``match()`` scores the drawn answer as drawn)."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import mixedeval as me
from mixedeval.cli import EXIT_USAGE, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "make_llm_example.py"
KEYS = ["system", "task", "item", "epoch"]

pytestmark = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None,
                                reason="mixedeval[logs] (inspect_ai) not installed")


def _script():
    spec = importlib.util.spec_from_file_location("make_llm_example", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _scores(folder: Path) -> pd.DataFrame:
    t = me.read_eval_logs(folder).table
    return t[[*KEYS, "metric", "cluster", "score"]].sort_values(KEYS).reset_index(drop=True)


@pytest.fixture(scope="module")
def bundled() -> pd.DataFrame:
    return _scores(me.datasets.path("llm_inspect_logs"))


def test_bundled_logs_have_the_documented_shape(bundled):
    folder = me.datasets.path("llm_inspect_logs")
    files = sorted(folder.glob("*.eval"))
    assert [f.name for f in files] == [f"{m}_{t}.eval" for m in ("large", "medium", "small")
                                       for t in ("arithmetic", "number_facts")]
    assert sum(f.stat().st_size for f in files) < 1.5e6  # shipped inside the package
    assert len(bundled) == 3 * 2 * 60 * 3 and set(bundled["metric"]) == {"match"}
    assert sorted(bundled["system"].unique()) == ["mockllm/large", "mockllm/medium", "mockllm/small"]
    per = bundled.groupby(["system", "task"]).agg(items=("item", "nunique"), epochs=("epoch", "nunique"),
                                                  clusters=("cluster", "nunique"))
    assert (per["items"] == 60).all() and (per["epochs"] == 3).all() and (per["clusters"] == 20).all()
    assert (bundled.groupby(["task", "cluster"])["item"].nunique() == 3).all()
    acc = bundled.groupby(["task", "system"])["score"].mean().round(3)  # as PROVENANCE.md and the script say
    assert acc.to_dict() == {("arithmetic", "mockllm/large"): 0.767, ("arithmetic", "mockllm/medium"): 0.717,
                             ("arithmetic", "mockllm/small"): 0.556, ("number_facts", "mockllm/large"): 0.961,
                             ("number_facts", "mockllm/medium"): 0.839, ("number_facts", "mockllm/small"): 0.7}
    # every score is what the script drew: match() scores "ANSWER: <target>" right and the wrong answers wrong
    meant = []
    for task, (questions, answers) in _script().example_data().items():
        target = {q["id"]: q["target"] for q in questions}
        meant += [{"system": m, "task": task, "item": qid, "epoch": str(e), "meant": float(a == f"ANSWER: {target[qid]}")}
                  for m, per_q in answers.items() for qid, eps in per_q.items() for e, a in enumerate(eps, 1)]
    both = bundled.merge(pd.DataFrame(meant), on=KEYS, validate="one_to_one")
    assert len(both) == len(bundled) and (both["score"] == both["meant"]).all()
    with pytest.raises(me.DataError, match="folder of evaluation logs"):
        me.datasets.load("llm_inspect_logs")
    assert re.fullmatch(r"[0-9a-f]{64}", me.datasets.sha256("llm_inspect_logs"))
    assert '"datasets_files/llm_inspect_logs/*"' in (ROOT / "pyproject.toml").read_text()  # in the wheel


def test_the_script_regenerates_the_bundled_logs(tmp_path, bundled):
    p = subprocess.run([sys.executable, str(SCRIPT), "--out-dir", str(tmp_path / "logs")], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    new = sorted(f.name for f in (tmp_path / "logs").glob("*.eval"))
    assert new == sorted(f.name for f in me.datasets.path("llm_inspect_logs").glob("*.eval"))
    pd.testing.assert_frame_equal(_scores(tmp_path / "logs"), bundled)


def test_cli_demo_llm_writes_the_report_with_the_headline(tmp_path):
    out = tmp_path / "llm.html"
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "demo", "llm", "--report", str(out),
                        "--n-resamples", "200", "--quiet"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    head = re.search(r"^headline: (mockllm/large − mockllm/medium: \+\d+\.\d points \(95% CI [^)]*\), p = \S+)",
                     p.stdout, re.M)
    assert head, p.stdout
    assert "== differences ==\nevery pair, best first" in p.stdout  # the pooled pairs of the headline's question
    html = out.read_text(encoding="utf-8")
    assert head.group(1) in html and "System comparison from evaluation logs" in html
    assert not (tmp_path / "mixedeval-llm-report.html").exists()  # --report is where it goes


def test_demo_arguments(capsys):
    p = build_parser()
    mt = p.parse_args(["demo"])
    assert (mt.example, mt.dataset, mt.out) == ("mt", None, None)  # the machine-translation demo stays the default
    llm = p.parse_args(["demo", "llm", "--out", "x.html", "--n-resamples", "50"])
    assert (llm.example, llm.out, llm.n_resamples) == ("llm", "x.html", 50)
    assert main(["demo", "llm", "--dataset", "kreutzer_ter", "--quiet"]) == EXIT_USAGE
    assert "--dataset" in capsys.readouterr().err
    assert main(["demo", "chess", "--quiet"]) == EXIT_USAGE
    assert "no demo 'chess'" in capsys.readouterr().err
