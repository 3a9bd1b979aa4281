"""Issue 33 part 1: ``mixedeval preferences`` on real-shaped battle files (tests/fixtures/battles,
written to the published layouts by make_battles.py): a Chatbot Arena clean_battle file with
one voter per judge and conv_metadata, Arena-Hard v0.1 / v2 judgment folders, AlpacaEval weighted
annotations without positions, MT-Bench pair judgments with an "error" verdict."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import logit

import mixedeval as me
from mixedeval.cli import main
from mixedeval.errors import DataError

HERE = Path(__file__).resolve().parent / "fixtures" / "battles"
ARENA = HERE / "arena_clean_battle.json"
AH01 = HERE / "arenahard_v01" / "model_judgment" / "gpt-4-1106-preview"
AH2 = HERE / "arenahard_v2" / "model_judgment" / "gpt-4.1"
ALPACA = HERE / "alpacaeval_annotations.json"
MTBENCH = HERE / "mtbench_gpt-4_pair.jsonl"


def _run(capsys, *args):
    code = main(["preferences", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def _json(capsys, *args):
    code, out, err = _run(capsys, *args, "--json", "--quiet")
    assert code == 0, err
    return json.loads(out)


# ------------------------------------------------------------------ Chatbot Arena: voters as judges
def test_arena_voters_with_few_battles_are_pooled_and_said(capsys):
    got = _json(capsys, ARENA, "--n-resamples", "0")
    judges = pd.DataFrame(got["judges"])
    # two voters have 60+ votes (their own position bias and leniency); the ~60 others share one set
    assert set(judges["judge"]) == {"arena_user_1", "arena_user_2", "(pooled judges)"}
    assert (judges["estimate"].abs() < 3).all()  # no +-24 estimates from a voter with three votes
    assert any(w.startswith("[judges_pooled]") and "--min-judge-battles" in w for w in got["warnings"])  # the flag
    df = me.read_battles(ARENA)
    voters = df["judge"].value_counts()
    assert (voters >= 50).sum() == 2 and (voters < 50).sum() > 40
    # pooling is relabelling: the same fit as every small voter renamed by hand, min_judge_battles=0
    by_hand = df.assign(judge=np.where(df["judge"].map(voters) < 50, "(pooled judges)", df["judge"]))
    exp = me.bradley_terry(by_hand, prompt="prompt", judge="judge", position="position", n_resamples=0,
                           min_judge_battles=0)
    np.testing.assert_allclose(pd.DataFrame(got["strengths"])["estimate"], exp.table["estimate"], rtol=1e-9)


@pytest.mark.parametrize("flag", [["--judge", ""], ["--no-judge"]])
def test_arena_judge_column_turned_off(capsys, flag):
    got = _json(capsys, ARENA, "--n-resamples", "0", *flag)
    assert {r["judge"] for r in got["judges"]} == {"(all)"}
    exp = me.bradley_terry(me.read_battles(ARENA), prompt="prompt", position="position", n_resamples=0)
    np.testing.assert_allclose(pd.DataFrame(got["strengths"])["estimate"], exp.table["estimate"], rtol=1e-9)


def test_arena_conv_metadata_becomes_style_covariates(capsys):
    records = json.loads(ARENA.read_text())
    df = me.read_battles(ARENA)
    for rec, (_, row) in zip(records[:20], df.head(20).iterrows()):
        m = rec["conv_metadata"]
        for name, key in (("style_length", "sum_assistant_{}_tokens"), ("style_headers", "header_count_{}"),
                          ("style_lists", "list_count_{}"), ("style_bold", "bold_count_{}")):
            a, b = m[key.format("a")], m[key.format("b")]
            a, b = (sum(a.values()), sum(b.values())) if isinstance(a, dict) else (a, b)
            assert row[name] == pytest.approx((a - b) / (a + b + 1))  # FastChat preprocess_for_style's ratio
    got = _json(capsys, ARENA, "--n-resamples", "0", "--style")
    assert [r["term"] for r in got["covariates"]] == ["style_length", "style_headers", "style_lists", "style_bold"]
    exp = me.bradley_terry(df, prompt="prompt", judge="judge", position="position", n_resamples=0,
                           covariates=["style_length", "style_headers", "style_lists", "style_bold"])
    np.testing.assert_allclose([r["estimate"] for r in got["covariates"]], exp.covariates["estimate"], rtol=1e-9)
    code, _, err = _run(capsys, MTBENCH, "--style", "--drop-failed", "--n-resamples", "0", "--quiet")
    assert code == 2 and "conv_metadata" in err


# ------------------------------------------------------------------ Arena-Hard folders
def test_arenahard_v01_folder_needs_baseline_and_drop_failed_from_the_cli(capsys):
    code, _, err = _run(capsys, AH01, "--n-resamples", "0", "--quiet")
    assert code == 2 and "--baseline" in err
    code, _, err = _run(capsys, AH01, "--n-resamples", "0", "--quiet", "--baseline", "gpt-4-0314")
    assert code == 2 and "llama-2-70b-chat.jsonl: line 4: a failed judgment" in err and "--drop-failed" in err
    got = _json(capsys, AH01, "--n-resamples", "50", "--baseline", "gpt-4-0314", "--drop-failed")
    models = {r["model"] for r in got["strengths"]}
    assert models == {"gpt-4-0314", "gpt-4-0613", "claude-2.1", "llama-2-70b-chat", "Starling-LM-7B-beta"}
    assert got["reference"] == "gpt-4-0314"  # the benchmark's baseline, not the alphabetically first model
    ref = next(r for r in got["strengths"] if r["model"] == "gpt-4-0314")
    assert ref["estimate"] == 0.0


def test_arenahard_v2_folder_strong_verdicts_are_weights_kept_together(capsys):
    df = me.read_battles(AH2)
    assert len(df.attrs["files"]) == 4 and df.attrs["baseline"] == "o3-mini-2025-01-31"
    assert len(df) == 4 * 25 * 2  # one row per game: nothing duplicated
    assert (df.loc[df["strong"], "weight"] == 3).all() and (df.loc[~df["strong"], "weight"] == 1).all()
    assert df["strong"].sum() > 10
    # a weight of 3 is 3 battles (arena-hard-auto show_result.py): the fit and the prompt bootstrap
    # equal those of the table with every >> row written three times (same prompt, so the same units)
    dup = df.loc[df.index.repeat(df["weight"].astype(int))].drop(columns="weight")
    kw = dict(prompt="prompt", judge="judge", position="position", n_resamples=64, random_state=5, ranks=False)
    res_w, res_d = me.bradley_terry(df, **kw), me.bradley_terry(dup, **kw)
    np.testing.assert_allclose(res_w.table["estimate"], res_d.table["estimate"], rtol=1e-9)
    np.testing.assert_allclose(res_w.draws, res_d.draws, rtol=1e-7, atol=1e-10)
    assert res_w.table["n_battles"].sum() == res_d.table["n_battles"].sum() == 2 * dup.shape[0]
    got = _json(capsys, AH2, "--n-resamples", "64", "--random-state", "5", "--no-ranks")
    np.testing.assert_allclose(pd.DataFrame(got["strengths"])["conf_low"], res_w.table["conf_low"], rtol=1e-9)
    assert got["reference"] == "o3-mini-2025-01-31"
    got1 = _json(capsys, AH2, "--n-resamples", "0", "--strong-weight", "1", "--no-ranks")
    exp1 = me.bradley_terry(df.drop(columns="weight"), prompt="prompt", judge="judge", position="position",
                            n_resamples=0, ranks=False)
    np.testing.assert_allclose(pd.DataFrame(got1["strengths"])["estimate"], exp1.table["estimate"], rtol=1e-9)


# ------------------------------------------------------------------ AlpacaEval
def _alpaca_win_rate(records, model):
    """alpaca_eval metrics/helpers.py describe_head2head: mean(preference - 1) * 100, 0 read as 1.5."""
    p = np.array([r["preference"] for r in records if r["generator_2"] == model], dtype=float)
    return float(np.mean(np.where(p == 0, 1.5, p) - 1.0) * 100)


def test_alpacaeval_weighted_preferences_reproduce_the_leaderboard_win_rate(capsys):
    records = json.loads(ALPACA.read_text())
    df = me.read_battles(ALPACA)
    assert df.attrs["baseline"] == "gpt4_1106_preview" and df["position"].isna().all()
    for model in ("FuseChat-3B", "tiny-model", "big-model"):
        m = df[df["model_b"] == model]
        wins = m.loc[m["winner"] == "model_b", "weight"].sum() + 0.5 * m.loc[m["winner"] == "tie", "weight"].sum()
        ours = 100 * wins / m["weight"].sum()
        thresholded = 100 * ((m.groupby("line")["preference"].first() > 1.5).mean()
                             + 0.5 * (m.groupby("line")["preference"].first() == 1.5).mean())
        assert ours == pytest.approx(_alpaca_win_rate(records, model), abs=1e-9)
        assert abs(thresholded - ours) > 0.1  # the old reading (the nearer winner) is a different number
    # every model meets only the baseline: with half ties and no position term the strength against
    # the baseline is exactly the log-odds of the weighted win rate
    res = me.bradley_terry(df, prompt="prompt", ties="half", position_bias=False, n_resamples=0)
    est = res.table.set_index("model")["estimate"]
    assert res.reference == "gpt4_1106_preview" and est["gpt4_1106_preview"] == 0.0
    for model in ("FuseChat-3B", "tiny-model", "big-model"):
        assert est[model] == pytest.approx(logit(_alpaca_win_rate(records, model) / 100), rel=1e-7)


def test_alpacaeval_unknown_positions_mean_no_position_term(capsys):
    got = _json(capsys, ALPACA, "--n-resamples", "40")
    assert any(w.startswith("[position_unknown]") for w in got["warnings"])
    assert {r["parameter"] for r in got["judges"]} == {"leniency"}  # Davidson's tie propensity only
    res = me.bradley_terry(me.read_battles(ALPACA), prompt="prompt", judge="judge", position="position",
                           n_resamples=0)
    assert set(res.judges["parameter"]) == {"leniency"}
    assert not any(w.kind == "one_side" for w in res.warnings)
    np.testing.assert_allclose(res.table["estimate"],
                               me.bradley_terry(me.read_battles(ALPACA), prompt="prompt", judge="judge",
                                                position_bias=False, n_resamples=0).table["estimate"], rtol=1e-9)


# ------------------------------------------------------------------ MT-Bench
def test_mtbench_error_verdict_and_drop_failed_flag(capsys):
    code, _, err = _run(capsys, MTBENCH, "--n-resamples", "0", "--quiet")
    assert code == 2 and "line 6" in err and "--drop-failed" in err
    code, out, err = _run(capsys, MTBENCH, "--n-resamples", "0", "--drop-failed")
    assert code == 0 and "1 failed judgment(s) left out" in err
    assert "== strengths ==" in out


# ------------------------------------------------------------------ --quiet, report
def test_quiet_silences_the_bootstrap_progress(capsys, monkeypatch):
    import mixedeval.resampling._draws as dr

    monkeypatch.setattr(dr, "auto_progress", lambda progress, work: True if progress is None else bool(progress))
    monkeypatch.setenv("MIXEDEVAL_PROGRESS", "always")  # a bar is drawn only on a terminal otherwise (_progress)
    code, _, err = _run(capsys, ARENA, "--n-resamples", "128", "--no-ranks")
    assert code == 0 and "Bradley-Terry bootstrap" in err  # the bar shows without --quiet (forced here)
    code, _, err = _run(capsys, ARENA, "--n-resamples", "128", "--no-ranks", "--quiet")
    assert code == 0 and err == ""


def test_report_design_decimals_provenance_and_reference(capsys, tmp_path):
    html = tmp_path / "prefs.html"
    code, _, err = _run(capsys, AH2, "--n-resamples", "64", "--quiet", "--report", html)
    assert code == 0, err
    text = html.read_text(encoding="utf-8")
    assert "Data design" not in text and "NOT AVAILABLE" not in text.upper().replace("NOT AVAILABLE: NO FITTED", "")
    # every input file is named in the provenance with its SHA-256
    for f in sorted(AH2.glob("*.jsonl")):
        assert f.name in text and hashlib.sha256(f.read_bytes()).hexdigest() in text
    assert "o3-mini-2025-01-31 = 0" in text  # the reference is the benchmark's baseline
    # one column, one number of decimals: the Elo column has one decimal in every row
    table = text[text.index("Strengths (log-odds"):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S) for r in rows]
    cells = [c for c in cells if c]
    assert len(cells) == 5
    header = re.findall(r"<th[^>]*>(.*?)</th>", table, flags=re.S)
    for col, pattern in (("elo", r"^-?\d+\.\d$"), ("estimate", r"^-?\d+\.\d{3}$")):
        j = header.index(col)
        assert all(re.match(pattern, c[j].strip()) for c in cells), [c[j] for c in cells]


def test_docs_name_fastchat_functions_and_the_measured_ratio():
    text = (Path(__file__).resolve().parents[1] / "docs" / "tutorials" / "preferences.md").read_text()
    assert "51.3x" not in text and "FastChat's way / me.bradley_terry" not in text  # the superseded comparison
    assert "compute_bootstrap_bt" in text and "compute_elo_mle_with_tie" in text
    assert "rating_systems.py" in text


def test_read_battles_folder_errors_name_the_folder(tmp_path):
    empty = tmp_path / "judgments.json"  # a folder named like a file
    empty.mkdir()
    with pytest.raises(DataError, match="holds no .jsonl"):
        me.read_battles(empty)
    (empty / "a.jsonl").write_text((AH2 / "claude-2.1.jsonl").read_text())
    assert me.read_battles(empty).attrs["format"] == "arenahard"
