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


def test_mtbench_judgments_with_swapped_games(tmp_path):
    """MT-Bench pair judgments (FastChat llm_judge): every pair judged twice with the positions
    swapped; the reader's position column lets the judge's position bias be estimated."""
    rng = np.random.default_rng(12)
    s = {"m-a": 0.0, "m-b": 0.6, "m-c": -0.4, "m-d": 0.2}
    names = list(s)
    records = []
    for q in range(120):
        for i in range(4):
            for j in range(i + 1, 4):
                games = []
                for first in (1, -1):  # game 1: model_1 shown first; game 2: model_2 first
                    eta = s[names[i]] - s[names[j]] + first * 0.8
                    games.append("model_1" if rng.random() < 1 / (1 + np.exp(-eta)) else "model_2")
                records.append({"question_id": q, "model_1": names[i], "model_2": names[j], "g1_winner": games[0],
                                "g2_winner": games[1], "judge": ["gpt-4", "pair-v2"], "turn": 1})
    path = tmp_path / "gpt-4_pair.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = _cli(str(path), "--ties", "drop", "--n-resamples", "64", "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    bias = pd.DataFrame(got["judges"]).set_index("parameter").loc["position_bias"]
    assert bias["conf_low"] > 0.4 and bias["conf_high"] < 1.2  # simulated 0.8
    exp = me.bradley_terry(me.read_battles(path), prompt="prompt", judge="judge", position="position", ties="drop",
                           n_resamples=64, random_state=0)
    np.testing.assert_allclose(pd.DataFrame(got["strengths"])["estimate"], exp.table["estimate"], rtol=1e-12)
