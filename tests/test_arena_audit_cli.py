"""``mixedeval preferences FILE --robustness`` on the arenas' real file shapes (the readers'
fixtures in tests/fixtures/battles): the votes-to-flip column and the probes' verdicts, equal to
me.arena_audit on the same table, in text, JSON and the report."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.cli import main

HERE = Path(__file__).resolve().parent / "fixtures" / "battles"
FILES = {
    "arena": (HERE / "arena_clean_battle.json", []),
    "arenahard_v01": (HERE / "arenahard_v01" / "model_judgment" / "gpt-4-1106-preview",
                      ["--baseline", "gpt-4-0314", "--drop-failed"]),
    "arenahard_v2": (HERE / "arenahard_v2" / "model_judgment" / "gpt-4.1", []),
    "alpacaeval": (HERE / "alpacaeval_annotations.json", []),
    "mtbench": (HERE / "mtbench_gpt-4_pair.jsonl", ["--drop-failed"]),
}
PROBES = {"connectivity", "coverage imbalance", "intransitivity", "position bias", "tie convention",
          "annotator influence", "separation of neighbours"}


def _run(capsys, *args):
    code = main(["preferences", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("name", list(FILES))
def test_robustness_json_on_real_file_shapes(capsys, name):
    path, extra = FILES[name]
    code, out, err = _run(capsys, path, *extra, "--robustness", "--n-resamples", "30", "--n-sim", "19", "--json",
                          "--quiet")
    assert code == 0, err
    got = json.loads(out)
    assert got["robustness"].startswith("the #1 (") and " votes (" in got["robustness"]
    assert {r["check"] for r in got["probes"]} == PROBES
    assert {r["check"] for r in got["answer"]["checks"]} == PROBES
    assert all(r["verdict"].split(":")[0] in ("agrees", "differs", "not available") for r in got["probes"])
    board = pd.DataFrame(got["answer"]["leaderboard"])
    assert {"votes_to_flip", "votes_to_flip_share", "tie_group"} <= set(board.columns)
    flips = pd.DataFrame(got["votes_to_flip"])
    assert flips["confirmed"].any()
    # the votes listed for the #1 are as many as its confirmed count
    top = flips[flips["target"] == "top rank"].iloc[0]
    assert len(got["votes_changing_top"]) == top["votes_to_flip"]


def test_cli_equals_the_api_and_writes_the_report(capsys, tmp_path):
    path, _ = FILES["arena"]
    html = tmp_path / "audit.html"
    code, out, err = _run(capsys, path, "--robustness", "--n-resamples", "30", "--n-sim", "19", "--random-state", "2",
                          "--json", "--quiet", "--report", html, "--pair", "gemini-pro", "vicuna-13b")
    assert code == 0, err
    got = json.loads(out)
    df = me.read_battles(path)
    fit = me.bradley_terry(df, prompt="prompt", judge="judge", position="position", n_resamples=30, random_state=2)
    exp = me.arena_audit(df, fit=fit, prompt="prompt", judge="judge", position="position", n_sim=19, random_state=2,
                         pairs=[("gemini-pro", "vicuna-13b")])
    flips = pd.DataFrame(got["votes_to_flip"])
    np.testing.assert_array_equal(flips["votes_to_flip"], exp.flips.table["votes_to_flip"])
    assert list(flips["target"])[-1] == "pair"
    assert got["robustness"] == exp.robustness_text()
    assert [r["verdict"] for r in got["probes"]] == list(exp.probes["verdict"])
    text = html.read_text(encoding="utf-8")
    assert "How robust is this leaderboard?" in text and "votes_to_flip" in text and "annotator influence" in text


def test_text_output_prints_the_sentence_the_flips_and_the_probes(capsys):
    path, extra = FILES["mtbench"]
    code, out, err = _run(capsys, path, *extra, "--robustness", "--n-resamples", "0", "--n-sim", "0", "--quiet")
    assert code == 0, err
    assert "robustness: the #1 (" in out and "== votes_to_flip ==" in out and "== probes ==" in out
    assert "intransitivity" in out and "not available: n_sim=0" in out
