"""me.read_battles: the four battle formats, written here in their writers' layouts (FastChat
clean_battle_data.py, alpaca_eval annotations.json, FastChat llm_judge play_a_match_pair,
arena-hard-auto gen_judgment.py), and the errors on bad rows."""
from __future__ import annotations

import json

import pandas as pd
import pytest

import mixedeval as me
from mixedeval.errors import DataError

ARENA = [  # clean_battle_data.py, mode "conv_release" fields (conversations left out)
    {"question_id": "q1", "model_a": "gpt-4", "model_b": "vicuna-13b", "winner": "model_a",
     "judge": "arena_user_1", "turn": 1, "anony": True, "language": "English", "tstamp": 1.7e9},
    {"question_id": "q2", "model_a": "vicuna-13b", "model_b": "claude-2", "winner": "tie (bothbad)",
     "judge": "arena_user_2", "turn": 2, "anony": True, "language": "German", "tstamp": 1.7e9 + 5},
    {"question_id": "q3", "model_a": "claude-2", "model_b": "gpt-4", "winner": "tie",
     "judge": "arena_user_1", "turn": 1, "anony": False, "language": "English", "tstamp": 1.7e9 + 9},
    {"question_id": "q4", "model_a": "claude-2", "model_b": "gpt-4", "winner": "model_b",
     "judge": "arena_user_3", "turn": 1, "anony": True, "language": "English", "tstamp": 1.7e9 + 12},
]


def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv", ".parquet"])
def test_arena_table_in_every_file_type(tmp_path, suffix):
    path = tmp_path / f"clean_battle_20240101{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(ARENA, indent=4))  # json.dump(battles, ..., indent=4)
    elif suffix == ".jsonl":
        _write_jsonl(path, ARENA)
    elif suffix == ".csv":
        pd.DataFrame(ARENA).to_csv(path, index=False)
    else:
        pd.DataFrame(ARENA).to_parquet(path)
    df = me.read_battles(path)
    assert df.attrs["format"] == "arena"
    assert list(df.columns[:11]) == ["model_a", "model_b", "winner", "prompt", "judge", "position", "game", "turn",
                                     "weight", "source", "line"]
    assert df["winner"].tolist() == ["model_a", "tie (bothbad)", "tie", "model_b"]
    assert df["prompt"].tolist() == ["q1", "q2", "q3", "q4"]
    assert df["judge"].tolist() == ["arena_user_1", "arena_user_2", "arena_user_1", "arena_user_3"]
    assert (df["position"] == "a_first").all()
    assert df["turn"].tolist() == [1, 2, 1, 1]
    assert df["language"].tolist() == ["English", "German", "English", "English"]
    assert df["line"].tolist() == [1, 2, 3, 4]


def test_arena_dataframe_with_own_column_names():
    raw = pd.DataFrame({"left": ["a", "b"], "right": ["b", "c"], "vote": ["model_b", "tie"], "qid": [7, 8]})
    df = me.read_battles(raw, model_a="left", model_b="right", winner="vote", prompt="qid")
    assert df[["model_a", "model_b", "winner", "prompt"]].values.tolist() == [["a", "b", "model_b", 7],
                                                                              ["b", "c", "tie", 8]]
    assert df["judge"].isna().all()


def _alpaca(pref, **kw):
    return {"instruction": "Name three colours.", "output_1": "red, green, blue", "generator_1": "gpt4_1106_preview",
            "dataset": "helpful_base", "output_2": "red", "generator_2": "my-model",
            "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": pref, "time_per_example": 0.5,
            "raw_completion": "m", "price_per_example": 0.01, **kw}


def test_alpacaeval_annotations(tmp_path):
    recs = [_alpaca(1.0), _alpaca(2.0), _alpaca(1.5), _alpaca(0), _alpaca(1.23), _alpaca(1.9, is_switched_outputs=True)]
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps(recs, indent=2))
    df = me.read_battles(path)
    assert df.attrs["format"] == "alpacaeval"
    # weighted preferences (1.23, 1.9) are kept as two weighted rows of the one record
    assert df["winner"].tolist() == ["model_a", "model_b", "tie", "tie", "model_a", "model_b", "model_a", "model_b"]
    assert df["weight"].round(12).tolist() == [1.0, 1.0, 1.0, 1.0, 0.77, 0.23, 0.1, 0.9]
    assert df["line"].tolist() == [1, 2, 3, 4, 5, 5, 6, 6]
    assert (df["model_a"] == "gpt4_1106_preview").all() and (df["model_b"] == "my-model").all()
    assert df["preference"].tolist() == [1.0, 2.0, 1.5, 0.0, 1.23, 1.23, 1.9, 1.9]
    assert df["position"].iloc[:6].isna().all() and (df["position"].iloc[6:] == "b_first").all()
    assert (df["prompt"] == "Name three colours.").all()
    assert (df["judge"] == "weighted_alpaca_eval_gpt4_turbo").all()


def test_alpacaeval_failed_annotations(tmp_path):
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps([_alpaca(1.0), _alpaca(None)], indent=2))
    with pytest.raises(DataError, match=r"annotations.json: record 2: a failed judgment.*drop_failed=True"):
        me.read_battles(path)
    with pytest.warns(UserWarning, match="1 failed"):
        df = me.read_battles(path, drop_failed=True)
    assert len(df) == 1 and df.attrs["n_failed"] == 1
    path.write_text(json.dumps([_alpaca(3)]))
    with pytest.raises(DataError, match=r"record 1: field 'preference' is 3; expected a number in \[1, 2\]"):
        me.read_battles(path)


def _mt(qid, m1, m2, g1, g2, turn=1):
    return {"question_id": qid, "model_1": m1, "model_2": m2, "g1_winner": g1, "g2_winner": g2,
            "judge": ["gpt-4", "pair-v2"], "g1_user_prompt": "...", "g1_judgment": "[[A]]",
            "g2_user_prompt": "...", "g2_judgment": "[[B]]", "turn": turn, "tstamp": 1.7e9}


def test_mtbench_pair_judgments_two_games_with_swapped_positions(tmp_path):
    path = _write_jsonl(tmp_path / "gpt-4_pair.jsonl", [
        _mt(81, "vicuna-13b", "gpt-3.5-turbo", "model_2", "model_2"),
        _mt(82, "vicuna-13b", "gpt-3.5-turbo", "model_1", "model_2", turn=2),  # position-dependent
        _mt(83, "llama-13b", "gpt-3.5-turbo", "tie", "model_1"),
    ])
    df = me.read_battles(path)
    assert df.attrs["format"] == "mtbench"
    assert len(df) == 6
    assert df["winner"].tolist() == ["model_b", "model_b", "model_a", "model_b", "tie", "model_a"]
    assert df["position"].tolist() == ["a_first", "b_first"] * 3
    assert df["game"].tolist() == [1, 2] * 3
    assert df["prompt"].tolist() == [81, 81, 82, 82, 83, 83]
    assert df["turn"].tolist() == [1, 1, 2, 2, 1, 1]
    assert (df["judge"] == "gpt-4/pair-v2").all()
    assert df["line"].tolist() == [1, 1, 2, 2, 3, 3]


def test_mtbench_error_verdicts(tmp_path):
    path = _write_jsonl(tmp_path / "gpt-4_pair.jsonl", [_mt(81, "a", "b", "model_1", "error")])
    with pytest.raises(DataError, match=r"gpt-4_pair.jsonl: line 1: a failed judgment \(g2_winner is 'error'\)"):
        me.read_battles(path)
    with pytest.warns(UserWarning):
        assert len(me.read_battles(path, drop_failed=True)) == 0
    path = _write_jsonl(tmp_path / "bad.jsonl", [_mt(81, "a", "b", "model_1", "A")])
    with pytest.raises(DataError, match=r"line 1: field 'g2_winner' is 'A'; expected 'model_1', 'model_2'"):
        me.read_battles(path)


def _ah(uid, model, s1, s2, baseline="o3-mini-2025-01-31", **kw):
    rec = {"uid": uid, "category": "hard_prompt", "judge": "gpt-4.1", "model": model, "baseline": baseline,
           "games": [None if s1 is None else {"score": s1, "judgment": {"answer": "..."}, "prompt": []},
                     {"score": s2, "judgment": {"answer": "..."}, "prompt": []}]}
    rec.update(kw)
    return rec


def test_arenahard_judgments(tmp_path):
    path = _write_jsonl(tmp_path / "qwq-32b.jsonl", [
        _ah("u1", "qwq-32b", "B>>A", "A>B"),  # model wins both (round 1: model is B; round 2: model is A)
        _ah("u2", "qwq-32b", "A=B", "B>A"),   # tie, then baseline (B in round 2) wins
        _ah("u3", "qwq-32b", "B<<A", "A<B"),  # baseline wins strongly, then baseline wins
    ])
    df = me.read_battles(path)
    assert df.attrs["format"] == "arenahard"
    assert (df["model_a"] == "qwq-32b").all() and (df["model_b"] == "o3-mini-2025-01-31").all()
    assert df["winner"].tolist() == ["model_a", "model_a", "tie", "model_b", "model_b", "model_b"]
    assert df["position"].tolist() == ["b_first", "a_first"] * 3
    assert df["strong"].tolist() == [True, False, False, False, True, False]
    assert df["prompt"].tolist() == ["u1", "u1", "u2", "u2", "u3", "u3"]
    assert (df["judge"] == "gpt-4.1").all()


def test_arenahard_v01_needs_the_baseline(tmp_path):
    rec = {"question_id": "q1", "model": "gpt-4-0613", "judge": "gpt-4-1106-preview",
           "games": [{"user_prompt": "...", "judgment": "...", "score": "A>B"},
                     {"user_prompt": "...", "judgment": "...", "score": "B>A"}]}
    path = _write_jsonl(tmp_path / "gpt-4-0613.jsonl", [rec])
    with pytest.raises(DataError, match="line 1: has no field 'baseline'.*baseline='gpt-4-0314'"):
        me.read_battles(path)
    df = me.read_battles(path, baseline="gpt-4-0314")
    assert df["winner"].tolist() == ["model_b", "model_b"] and df["prompt"].tolist() == ["q1", "q1"]
    path = _write_jsonl(tmp_path / "null.jsonl", [_ah("u1", "m", None, "A>B")])
    with pytest.raises(DataError, match="line 1: a failed judgment"):
        me.read_battles(path)
    path = _write_jsonl(tmp_path / "bad.jsonl", [_ah("u1", "m", "A>>>B", "A>B")])
    with pytest.raises(DataError, match=r"line 1: game 1 has score 'A>>>B'; expected one of"):
        me.read_battles(path)


def test_bad_rows_name_file_line_and_expectation(tmp_path):
    bad = dict(ARENA[0], winner="model_c")
    path = _write_jsonl(tmp_path / "b.jsonl", [ARENA[0], bad])
    with pytest.raises(DataError, match=r"b.jsonl: line 2: field 'winner' is 'model_c'; expected one of"):
        me.read_battles(path)
    path = _write_jsonl(tmp_path / "self.jsonl", [dict(ARENA[0], model_b="gpt-4")])
    with pytest.raises(DataError, match="line 1: is a self-battle: model_a and model_b are both 'gpt-4'"):
        me.read_battles(path)
    csv = tmp_path / "nan.csv"
    pd.DataFrame([ARENA[0], dict(ARENA[1], model_b=None)]).to_csv(csv, index=False)
    with pytest.raises(DataError, match=r"nan.csv: row 2: field 'model_b' \(a model name\) is missing"):
        me.read_battles(csv)
    csv2 = tmp_path / "cols.csv"
    pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "result": ["tie"]}).to_csv(csv2, index=False)
    with pytest.raises(DataError, match=r"cols.csv: no column \['winner'\].*winner="):
        me.read_battles(csv2)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(ARENA[0]) + "\n" + '{"model_a": "x", "model_b": \n')
    with pytest.raises(DataError, match=r"broken.jsonl: line 2: malformed JSON"):
        me.read_battles(broken)
    with pytest.raises(DataError, match="cannot tell the battle format"):
        me.read_battles([{"a": 1}])
    with pytest.raises(DataError, match="format must be"):
        me.read_battles(path, format="lmsys")
    with pytest.raises(DataError, match="does not exist"):
        me.read_battles(tmp_path / "nope.json")


def test_json_lines_under_a_json_suffix_are_numbered_by_line(tmp_path):
    path = tmp_path / "battles.json"
    path.write_text(json.dumps(ARENA[0]) + "\n\n" + json.dumps(dict(ARENA[1], winner="left")) + "\n")
    with pytest.raises(DataError, match=r"battles.json: line 3: field 'winner' is 'left'"):
        me.read_battles(path)


def test_an_arena_table_prompt_column_is_found_by_either_name(tmp_path):
    rows = "model_a,model_b,winner,prompt\na,b,model_a,p1\nb,a,tie,p2\n"
    (tmp_path / "p.csv").write_text(rows)
    (tmp_path / "q.csv").write_text(rows.replace(",prompt\n", ",question_id\n"))
    assert me.read_battles(tmp_path / "p.csv")["prompt"].tolist() == ["p1", "p2"]
    assert me.read_battles(tmp_path / "q.csv")["prompt"].tolist() == ["p1", "p2"]
    with pytest.raises(me.DataError, match="no prompt column 'nope'"):
        me.read_battles(tmp_path / "p.csv", prompt="nope")
