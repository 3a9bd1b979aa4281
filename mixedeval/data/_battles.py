"""Readers for judged pairwise comparisons ("battles"): Chatbot Arena tables, AlpacaEval
annotations, MT-Bench pairwise judgments and Arena-Hard judgments, as one table.

Every format becomes one row per judgment with the columns

    model_a, model_b, winner, prompt, judge, position, game, turn, source, line

* ``winner`` is one of ``"model_a"``, ``"model_b"``, ``"tie"``, ``"tie (bothbad)"`` (Chatbot
  Arena's values, FastChat ``fastchat/serve/monitor/clean_battle_data.py``);
* ``position`` says which model the judge saw first: ``"a_first"``, ``"b_first"``, or None when
  the file does not record it (AlpacaEval without ``is_switched_outputs``), so that position
  bias can be estimated (a covariate +1 / -1 for ``a_first`` / ``b_first``);
* ``game`` numbers the judgments of one record (MT-Bench and Arena-Hard judge every pair twice,
  with the positions swapped; the same model_a / model_b in both rows, ``position`` differs);
* ``source`` is the file (or ``"<DataFrame>"``) and ``line`` the 1-based line of JSON Lines, the
  1-based record of a JSON list, or the 1-based data row of a CSV / Parquet table.

Formats (each follows the writer's source, cited):

``arena``
    FastChat's ``clean_battle_data.py`` (``battles.append(dict(question_id=..., model_a=...,
    model_b=..., winner=convert_type[row["type"]], judge=..., turn=..., anony=..., language=...,
    tstamp=...))``, saved with ``json.dump`` as a list): CSV, JSON, JSON Lines or Parquet with
    ``model_a, model_b, winner``; ``question_id`` is the prompt, ``judge`` the voter. model_a is
    shown on the left (first). Other scalar columns are kept.
``alpacaeval``
    alpaca_eval's ``annotations.json`` (``src/alpaca_eval/annotators/pairwise_evaluator.py``):
    a JSON list of ``{instruction, output_1, generator_1, output_2, generator_2, annotator,
    preference, ...}``; preference 1 = output_1 preferred, 2 = output_2, 1.5 or 0 = draw
    (``metrics/helpers.py``: ``(predictions == 1.5) | (predictions == 0)``), values strictly
    between are weighted annotators' P(output_2 better) + 1 and become the nearer winner (the
    raw value is kept in ``preference``); null = failed annotation. model_a = generator_1.
    alpaca_eval shows the outputs in a random order and maps the preference back; the order is
    recorded only in ``is_switched_outputs`` (then ``position`` is set).
``mtbench``
    FastChat ``fastchat/llm_judge/common.py`` ``play_a_match_pair`` (``*_pair.jsonl``): one JSON
    line ``{question_id, model_1, model_2, g1_winner, g2_winner, judge: [judge model, prompt
    name], turn, ...}``. Game 1 shows model_1 as "Assistant A", game 2 swaps them (``g2_map =
    {"A": "model_2", "B": "model_1"}``); both winners are already mapped back to
    ``model_1`` / ``model_2`` / ``tie`` (``error`` = failed judgment). Each line becomes two rows
    with model_a = model_1, model_b = model_2, position ``a_first`` (game 1) / ``b_first``
    (game 2).
``arenahard``
    arena-hard-auto ``gen_judgment.py``: one JSON line ``{uid (v2) or question_id (v0.1),
    category, judge, model, baseline (v2; v0.1: the config's baseline, pass ``baseline=``),
    games: [{score, judgment, ...}, {...}]}``. Round 1 shows the baseline as A and the model as
    B, round 2 swaps them; ``score`` is the verdict label ``A>>B``, ``A>B``, ``A=B``, ``B>A``,
    ``B>>A`` (and the mirrored spellings of ``show_result.py``'s ``label_to_score``); null =
    failed. Rows: model_a = the model, model_b = the baseline; ``score`` keeps the raw label and
    ``strong`` marks ``>>`` verdicts (``show_result.py`` counts them as 3 battles).
"""
from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError

FORMATS = ("arena", "alpacaeval", "mtbench", "arenahard")
WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
COLUMNS = ["model_a", "model_b", "winner", "prompt", "judge", "position", "game", "turn", "source", "line"]

#: Arena-Hard verdict labels (show_result.py label_to_score): winner side and strength
_ARENAHARD = {"A>B": ("A", False), "A>>B": ("A", True), "A=B": ("tie", False), "A<<B": ("B", True),
              "A<B": ("B", False), "B>A": ("B", False), "B>>A": ("B", True), "B=A": ("tie", False),
              "B<<A": ("A", True), "B<A": ("A", False)}
_MTBENCH = {"model_1": "model_a", "model_2": "model_b", "tie": "tie"}


class _Failed(Exception):
    """A judgment the judge did not give (MT-Bench "error", null verdicts / preferences)."""


# ---------------------------------------------------------------------------------------------
# records with their line numbers
# ---------------------------------------------------------------------------------------------

def _json_records(p: Path) -> tuple[str, list[tuple[int, Any]]]:
    """("record", records of a JSON list) or ("line", the objects of JSON Lines by line number)."""
    text = p.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{p}: line {exc.lineno}: malformed JSON ({exc.msg}); expected a JSON list of "
                            "objects or JSON Lines (one object per line)") from exc
        return "record", list(enumerate(data, start=1))
    return "line", list(_json_lines(p, text))


def _json_lines(p: Path, text: str) -> Iterator[tuple[int, Any]]:
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield i, json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{p}: line {i}: malformed JSON ({exc.msg}); expected one JSON object per line "
                            f"(JSON Lines), got {line[:60]!r}") from exc


def _frame_records(df: pd.DataFrame) -> Iterator[tuple[int, Any]]:
    cols = [str(c) for c in df.columns]
    for i, row in enumerate(df.itertuples(index=False, name=None), start=1):
        yield i, dict(zip(cols, row))


def _records(source: Any) -> tuple[str, str, list[tuple[int, Any]]]:
    """(source name, what a number counts: line / record / row, numbered records)."""
    if isinstance(source, pd.DataFrame):
        return "<DataFrame>", "row", list(_frame_records(source))
    if isinstance(source, list):
        return "<list>", "record", list(enumerate(source, start=1))
    if not isinstance(source, (str, Path)):
        from .table import as_pandas  # noqa: PLC0415 - pyarrow / polars tables only

        return "<table>", "row", list(_frame_records(as_pandas(source, what="battles")))
    p = Path(source)
    if not p.exists():
        raise DataError(f"battle file {str(p)!r} does not exist")
    suffix = p.suffix.lower()
    if suffix in (".json", ".jsonl", ".ndjson"):
        return (str(p), *_json_records(p))
    try:
        if suffix in (".csv", ".tsv"):
            df = pd.read_csv(p, sep="\t" if suffix == ".tsv" else ",", keep_default_na=False, na_values=[""])
        elif suffix in (".parquet", ".pq"):
            df = pd.read_parquet(p)
        else:
            raise DataError(f"unknown file type {suffix!r} for {str(p)!r}; use .csv, .json, .jsonl or .parquet")
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - the reader's own message, with the file
        raise DataError(f"could not read {str(p)!r}: {exc}") from exc
    return str(p), "row", list(_frame_records(df))


# ---------------------------------------------------------------------------------------------
# one record -> rows
# ---------------------------------------------------------------------------------------------

def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _name(rec: dict, key: str, what: str) -> str:
    if key not in rec:
        raise DataError(f"has no field {key!r} ({what}); fields: {sorted(map(str, rec))[:12]}")
    v = rec[key]
    if _missing(v) or (isinstance(v, str) and not v.strip()):
        raise DataError(f"field {key!r} ({what}) is missing (NaN / null / empty)")
    return str(v)


def _pair(rec: dict, key_a: str, key_b: str) -> tuple[str, str]:
    a, b = _name(rec, key_a, "a model name"), _name(rec, key_b, "a model name")
    if a == b:
        raise DataError(f"is a self-battle: {key_a} and {key_b} are both {a!r}; a model cannot be compared "
                        "with itself -- drop such rows before reading")
    return a, b


def _opt(rec: dict, key: str | None) -> Any:
    v = rec.get(key) if key is not None else None
    return None if _missing(v) else v


def _arena(rec: dict, cols: dict[str, str | None]) -> list[dict]:
    a, b = _pair(rec, cols["model_a"], cols["model_b"])
    w = _name(rec, cols["winner"], "the winner")
    if w not in WINNERS:
        raise DataError(f"field {cols['winner']!r} is {w!r}; expected one of {list(WINNERS)} (Chatbot Arena's values)")
    used = {v for v in cols.values() if v is not None} | {"conversation_a", "conversation_b"}
    extra = {k: v for k, v in rec.items() if k not in used and k not in COLUMNS
             and (v is None or isinstance(v, (str, int, float, bool)))}
    return [{"model_a": a, "model_b": b, "winner": w, "prompt": _opt(rec, cols["prompt"]),
             "judge": _opt(rec, cols["judge"]), "position": "a_first", "game": 1, "turn": _opt(rec, "turn"), **extra}]


def _alpacaeval(rec: dict, cols: dict[str, str | None]) -> list[dict]:
    a, b = _pair(rec, "generator_1", "generator_2")
    if "preference" not in rec:
        raise DataError("has no field 'preference' (1 = output_1 preferred, 2 = output_2, 1.5 or 0 = draw)")
    p = rec["preference"]
    if _missing(p):
        raise _Failed("preference is null")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not (p == 0 or 1 <= p <= 2):
        raise DataError(f"field 'preference' is {p!r}; expected a number in [1, 2] or 0 (1 = output_1 preferred, "
                        "2 = output_2, 1.5 or 0 = draw; alpaca_eval's validate_alpacaeval_preference)")
    w = "tie" if p in (0, 1.5) else ("model_a" if p < 1.5 else "model_b")
    switched = rec.get("is_switched_outputs")
    pos = None if _missing(switched) else ("b_first" if bool(switched) else "a_first")
    return [{"model_a": a, "model_b": b, "winner": w, "prompt": _opt(rec, "instruction"),
             "judge": _opt(rec, "annotator"), "position": pos, "game": 1, "turn": None, "preference": float(p),
             "dataset": _opt(rec, "dataset")}]


def _judge_name(v: Any) -> Any:
    return "/".join(map(str, v)) if isinstance(v, (list, tuple)) else (None if _missing(v) else v)


def _mtbench(rec: dict, cols: dict[str, str | None]) -> list[dict]:
    a, b = _pair(rec, "model_1", "model_2")
    rows = []
    for g, pos in ((1, "a_first"), (2, "b_first")):
        w = _name(rec, f"g{g}_winner", "the winner of that game")
        if w == "error":
            raise _Failed(f"g{g}_winner is 'error'")
        if w not in _MTBENCH:
            raise DataError(f"field 'g{g}_winner' is {w!r}; expected 'model_1', 'model_2', 'tie' or 'error' "
                            "(FastChat llm_judge play_a_match_pair)")
        rows.append({"model_a": a, "model_b": b, "winner": _MTBENCH[w], "prompt": _opt(rec, "question_id"),
                     "judge": _judge_name(rec.get("judge")), "position": pos, "game": g, "turn": _opt(rec, "turn")})
    return rows


def _arenahard(rec: dict, cols: dict[str, str | None]) -> list[dict]:
    if "baseline" not in rec and cols["baseline"] is None:
        raise DataError("has no field 'baseline' (arena-hard v0.1 files take it from the config: "
                        "pass baseline='gpt-4-0314' or the config's baseline_model)")
    rec = {"baseline": cols["baseline"], **rec}
    model, base = _pair(rec, "model", "baseline")
    games = rec.get("games")
    if not isinstance(games, list) or not games:
        raise DataError(f"field 'games' is {games!r}; expected a list of one or two games with a 'score'")
    prompt = _opt(rec, "uid") if "uid" in rec else _opt(rec, "question_id")
    rows = []
    for g, game in enumerate(games, start=1):
        score = game.get("score") if isinstance(game, dict) else None
        if _missing(score):
            raise _Failed(f"game {g} has no score")
        if score not in _ARENAHARD:
            raise DataError(f"game {g} has score {score!r}; expected one of {list(_ARENAHARD)} "
                            "(arena-hard-auto show_result.py)")
        side, strong = _ARENAHARD[score]
        model_is_a = g % 2 == 0  # round 1: baseline is A; round 2: swapped
        w = "tie" if side == "tie" else ("model_a" if (side == "A") == model_is_a else "model_b")
        rows.append({"model_a": model, "model_b": base, "winner": w, "prompt": prompt,
                     "judge": _opt(rec, "judge"),
                     "position": "a_first" if model_is_a else "b_first", "game": g, "turn": None,
                     "score": score, "strong": strong, "category": _opt(rec, "category")})
    return rows


_READERS: dict[str, Callable[[dict, dict], list[dict]]] = {
    "arena": _arena, "alpacaeval": _alpacaeval, "mtbench": _mtbench, "arenahard": _arenahard}


# ---------------------------------------------------------------------------------------------
# the reader
# ---------------------------------------------------------------------------------------------

def _detect(records: list[tuple[int, Any]], src: str, arena_cols: set[str]) -> str:
    first = next((r for _, r in records if isinstance(r, dict)), None)
    keys = set(first or ())
    if {"g1_winner", "g2_winner"} <= keys:
        return "mtbench"
    if "games" in keys:
        return "arenahard"
    if {"generator_1", "generator_2", "preference"} <= keys:
        return "alpacaeval"
    if arena_cols & keys:  # the missing ones are named by _check_columns
        return "arena"
    raise DataError(f"{src}: cannot tell the battle format from the fields {sorted(keys)[:12]}; pass "
                    f"format= one of {list(FORMATS)}")


def _rows(records: list[tuple[int, Any]], fmt: str, cols: dict, src: str, where: str, drop_failed: bool
          ) -> tuple[list[dict], int]:
    out, failed = [], 0
    for i, rec in records:
        try:
            if not isinstance(rec, dict):
                raise DataError(f"is {type(rec).__name__}, not a JSON object")
            for row in _READERS[fmt](rec, cols):
                out.append({**row, "source": src, "line": i})
        except _Failed as exc:
            if not drop_failed:
                raise DataError(f"{src}: {where} {i}: a failed judgment ({exc}); pass drop_failed=True to "
                                "leave such judgments out (they are counted in df.attrs['n_failed'])") from None
            failed += 1
        except DataError as exc:
            raise DataError(f"{src}: {where} {i}: {exc} [format {fmt!r}]") from None
    return out, failed


def _check_columns(records: list[tuple[int, Any]], cols: dict, src: str) -> None:
    """Tabular arena input: the named columns exist (one message, not one per row)."""
    if not records or not isinstance(records[0][1], dict):
        return
    keys = set(records[0][1])
    need = [cols[k] for k in ("model_a", "model_b", "winner") if cols[k] not in keys]
    if need:
        raise DataError(f"{src}: no column {need} (arena battles need model_a, model_b and winner columns); "
                        f"columns: {sorted(keys)[:12]}; name yours with model_a=, model_b=, winner=")


def read_battles(source: Any, format: str | None = None, *,  # noqa: A002 - the format of the file
                 model_a: str = "model_a", model_b: str = "model_b",
                 winner: str = "winner", prompt: str | None = "question_id", judge: str | None = "judge",
                 baseline: str | None = None, drop_failed: bool = False) -> pd.DataFrame:
    """Read judged pairwise comparisons into one table, one row per judgment.

    Parameters
    ----------
    source : path (.csv, .json, .jsonl, .parquet), DataFrame or list of dicts.
    format : None (detected from the fields), ``"arena"``, ``"alpacaeval"``, ``"mtbench"`` or
        ``"arenahard"`` (see the module docstring and docs/tutorials/battles_formats.md).
    model_a, model_b, winner, prompt, judge : column names of an arena table (``prompt`` and
        ``judge`` may be None or absent); the other formats have fixed field names.
    baseline : Arena-Hard v0.1 records name no baseline: the config's baseline model.
    drop_failed : leave out judgments the judge did not give (MT-Bench ``"error"``, null
        AlpacaEval preferences, null Arena-Hard scores) instead of raising; counted in
        ``df.attrs["n_failed"]``.

    Returns
    -------
    DataFrame
        ``model_a, model_b, winner, prompt, judge, position, game, turn, source, line`` and the
        format's own columns; ``attrs``: ``format``, ``n_failed``.
    """
    if format is not None and format not in FORMATS:
        raise DataError(f"format must be None or one of {list(FORMATS)}, not {format!r}")
    src, where, records = _records(source)
    if not records:
        raise DataError(f"{src}: no battles (the file is empty)")
    fmt = format or _detect(records, src, {model_a, model_b, winner})
    cols = {"model_a": model_a, "model_b": model_b, "winner": winner, "prompt": prompt, "judge": judge,
            "baseline": baseline}
    if fmt == "arena":
        _check_columns(records, cols, src)
        cols["prompt"] = prompt if prompt in records[0][1] else None
        cols["judge"] = judge if judge in records[0][1] else None
    rows, failed = _rows(records, fmt, cols, src, where, drop_failed)
    if failed:
        warnings.warn(f"{src}: {failed} failed judgment(s) left out (drop_failed=True)", stacklevel=2)
    df = pd.DataFrame(rows)
    df = df[COLUMNS + [c for c in df.columns if c not in COLUMNS]] if len(df) else pd.DataFrame(columns=COLUMNS)
    df.attrs.update(format=fmt, n_failed=failed)
    return df
