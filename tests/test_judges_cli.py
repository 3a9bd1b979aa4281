"""`mixedeval judge` (--json, the budget, the report) and the report section of me.judge_corrected."""
from __future__ import annotations

import json

import numpy as np
import pytest

import mixedeval as me
from judges_helpers import simulate
from mixedeval.cli import main


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    path = tmp_path_factory.mktemp("judged") / "judged.csv"
    df = simulate(np.random.default_rng(0), n_items=200, n_labels=60, epochs=2, n_clusters=20)
    df.to_csv(path, index=False)
    return path, df


def test_cli_json_equals_the_api(judged, capsys):
    path, df = judged
    rc = main(["judge", str(path), "--epoch", "epoch", "--cluster", "cluster", "--width", "0.2", "--cost-ratio", "10",
               "--n-resamples", "100", "--json", "--quiet"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    res = me.judge_corrected(df, epoch="epoch", cluster="cluster", random_state=0)
    ans = out["answer"]  # the answer record first (issue 38): headline, leaderboard, differences, checks
    assert ans["headline"]["text"] == res.headline_text()
    assert [r["name"] for r in ans["leaderboard"]] == list(res.leaderboard["name"])
    assert out["systems"][0]["estimate"] == pytest.approx(res.table["estimate"].iloc[0], rel=1e-12)
    assert {"agreement", "bias", "bias_test", "labels_needed"} <= set(out) and ans["checks"] and ans["differences"]
    assert out["labels_needed"][0]["labels_needed"] > 0
    assert any("judge_bias_by_system" in w for w in out["warnings"])  # s0's judge is biased by +0.3


def test_cli_text_and_report(judged, tmp_path, capsys):
    path, _ = judged
    html = tmp_path / "judge.html"
    rc = main(["judge", str(path), "--epoch", "epoch", "--no-agreement", "--quiet", "--report", str(html)])
    assert rc == 0
    text = capsys.readouterr().out
    assert text.startswith("headline: s") and "== leaderboard ==" in text and "== agreement ==" not in text
    page = html.read_text(encoding="utf-8")
    assert "LLM judge corrected with human labels" in page and page.count("data:image") >= 2
    assert "Judge-vs-human plot" in page and "Labels needed to halve" in page and "failed:" not in page


def test_cli_bad_method_is_a_usage_error(judged, capsys):
    path, _ = judged
    assert main(["judge", str(path), "--method", "magic"]) != 0
    assert "invalid choice" in capsys.readouterr().err
