"""Issue 24 point 5: ``mixedeval preferences battles.csv`` gives the numbers of me.bradley_terry
with the same options, as tables, JSON and the HTML report; bad input exits with status 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from bt_helpers import simulate_battles

import mixedeval as me


def _cli(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "mixedeval.cli", "preferences", *args],
                          capture_output=True, text=True, timeout=900, env=env)


@pytest.fixture(scope="module")
def battles_csv(tmp_path_factory):
    df, _ = simulate_battles(k=5, n=1500, n_prompts=150, judges=["j1", "j2"], seed=9)
    df = df.rename(columns={"prompt": "question_id"})  # the Arena's name of the prompt column
    path = tmp_path_factory.mktemp("battles") / "battles.csv"
    df.to_csv(path, index=False)
    return path, df


def test_json_equals_the_api_and_the_report_is_written(battles_csv, tmp_path):
    path, df = battles_csv
    html = tmp_path / "prefs.html"
    out = _cli(str(path), "--n-resamples", "100", "--random-state", "4", "--json", "--quiet", "--report", str(html))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    exp = me.bradley_terry(me.read_battles(path), prompt="prompt", judge="judge", position="position",
                           n_resamples=100, random_state=4)
    strengths = pd.DataFrame(got["strengths"])
    np.testing.assert_allclose(strengths["estimate"], exp.table["estimate"], rtol=1e-12)
    np.testing.assert_allclose(strengths["conf_low"], exp.table["conf_low"], rtol=1e-12)
    assert list(strengths["model"]) == list(exp.table["model"])
    assert "prompt bootstrap" in got["intervals"]
    assert {r["parameter"] for r in got["judges"]} == {"position_bias", "leniency"}
    assert [r["name"] for r in got["ranks"]] == list(exp.ranks["name"])
    text = html.read_text(encoding="utf-8")
    assert "Bradley-Terry" in text and "Position bias per judge" in text and "Rank of each model with its simultaneous interval" in text


def test_text_tables_and_options(battles_csv):
    path, _ = battles_csv
    out = _cli(str(path), "--ties", "half", "--no-position-bias", "--n-resamples", "0", "--anchor", "m2",
               "--anchor-rating", "1200", "--quiet")
    assert out.returncode == 0, out.stderr
    assert "== strengths ==" in out.stdout and "== judges ==" not in out.stdout
    line = next(ln for ln in out.stdout.splitlines() if ln.strip().startswith("m2 "))
    assert "1200.0" in line


@pytest.mark.parametrize("extra, message", [
    (["--ties", "coin"], "invalid choice"),
    (["--anchor", "nobody"], "anchor"),
    (["--n-resamples", "1"], "n_resamples"),
])
def test_user_errors_exit_2(battles_csv, extra, message):
    path, _ = battles_csv
    out = _cli(str(path), *extra, "--quiet")
    assert out.returncode == 2
    assert message in out.stderr


def test_unknown_winner_values_exit_2_with_json_error(tmp_path):
    bad = pd.DataFrame({"model_a": ["a", "b"], "model_b": ["b", "a"], "winner": ["model_a", "draw"]})
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    out = _cli(str(path), "--json", "--quiet")
    assert out.returncode == 2
    assert "error" in json.loads(out.stdout)
