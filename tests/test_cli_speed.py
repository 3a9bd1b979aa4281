"""Issue 30, point 7: the speed of ``mixedeval compare-logs``.

The seconds went to the model-based check (three binomial GLMM fits through R, with R's start
and lme4's load), to importing the report, the models and R's bridge, and to the power
simulation's module. By default the command now runs what needs no model -- the headline, the
accuracies, the paired bootstrap and the plan -- without starting R or importing rpy2 (checked
here in a fresh interpreter); ``--checks`` (or ``--report``, ``--analysis``, ``--trials``) adds
the model. The default output is the same as the full analysis' (the API's ``compare_logs`` with
the model, computed here) in every table it shows. ``benchmarks/bench_cli_startup.py --logs``
times it against ``Rscript -e 'library(lme4)'`` (the issue's bound: 3x).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import mixedeval as me
from mixedeval._answer import best_first_pairs

ROOT = Path(__file__).resolve().parents[1]
LOGS = str(me.datasets.path("llm_inspect_logs"))
ARGS = ["compare-logs", LOGS, "--metric", "match", "--cluster", "cluster", "--n-resamples", "2000", "--n-sim", "200",
        "--random-state", "3", "--json", "--quiet"]


def _run(argv: list[str]) -> tuple[dict, list[str]]:
    """``mixedeval argv`` in a fresh interpreter: its JSON and the heavy modules it imported."""
    probe = ("import json, sys\nfrom mixedeval.cli import main\n"
             f"code = main({argv!r})\n"
             "sys.stdout.flush()\n"
             "print('\\nMODULES ' + json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('rpy2', 'matplotlib', 'jinja2') or m.startswith(('mixedeval.engine', 'mixedeval._report')))))\n"
             "sys.exit(code)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr
    body, _, mods = p.stdout.rpartition("\nMODULES ")
    return json.loads(body), json.loads(mods)


@pytest.fixture(scope="module")
def full():
    """The full analysis in the API (the model-based check included)."""
    return me.compare_logs(LOGS, metric="match", cluster="cluster", n_resamples=2000, n_sim=200, random_state=3,
                           progress=False)


def test_default_compare_logs_starts_no_r_and_equals_the_full_analysis(full):
    js, modules = _run(ARGS)
    assert modules == []  # no rpy2, no R bridge, no report
    assert js["glrt"] is None and js["contrasts"] is None and "--checks" in js["analysis"]
    ans = js["answer"]  # the answer record first (issue 38)
    assert list(js)[0] == "answer"
    assert ans["headline"]["text"] == full.headline_text() and js["next_run"] == full.plan_text()
    assert ans["headline"]["p_value"] == pytest.approx(full.p_value, rel=1e-12)
    order = list(full.leaderboard["name"])
    diffs = full.answer.differences if full.answer.differences is not None else best_first_pairs(
        full.table, order, True, keep=("n_items", "df", "method"))
    for key, got, table in (("differences", ans["differences"], diffs), ("accuracies", js["accuracies"], full.accuracies),
                            ("bootstrap", js["bootstrap"], best_first_pairs(full.bootstrap, order, True)),
                            ("means", js["means"], full.means), ("plan", js["plan"], full.plan.table)):
        pd.testing.assert_frame_equal(pd.DataFrame(got), table.reset_index(drop=True), check_dtype=False, rtol=1e-12,
                                      obj=key)
    assert not any("model" in w and "not run" in w for w in js["warnings"])


def test_checks_adds_the_model(full):
    js, modules = _run([*ARGS, "--checks"])
    assert "rpy2" in modules
    assert js["analysis"] == full.analysis and js["formula"] == full.formula
    assert js["glrt"][-1]["p_value"] == pytest.approx(float(full.glrt["p_value"].iloc[-1]), rel=1e-6)
    assert len(js["contrasts"]) == len(full.contrasts)


def test_the_api_default_is_unchanged_and_model_check_false_skips_the_model(full):
    assert full.glrt is not None and full.fit is not None and full.formula is not None
    res = me.compare_logs(LOGS, metric="match", cluster="cluster", n_resamples=2000, n_sim=200, random_state=3,
                          progress=False, model_check=False)
    assert res.glrt is None and res.fit is None and res.contrasts is None and res.emmeans is None
    assert res.analysis.startswith("not run")
    assert res.p_value == full.p_value  # the headline's (the paired t), which needs no model
    assert res.headline_text() == full.headline_text()
    pd.testing.assert_frame_equal(res.table, full.table)
    assert "model-based check" in repr(res)
