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
    between are weighted annotators' P(output_2 better) + 1 and are kept as weights: two rows of
    the one record (same ``line`` and prompt), ``model_a`` winning with ``weight`` 2 - p and
    ``model_b`` with ``weight`` p - 1, so that the weighted share of generator_2's wins (ties
    half) is alpaca_eval's leaderboard ``win_rate`` (``metrics/helpers.py``: the mean of
    ``preference - 1`` with 0 read as 1.5); the raw value is kept in ``preference``; null =
    failed annotation. model_a = generator_1 (the baseline), model_b = generator_2.
    alpaca_eval shows the outputs in a random order and maps the preference back; the order is
    recorded only in ``is_switched_outputs`` (a boolean, or the strings "true" / "false"; then
    ``position`` is set, else it is unknown and the fit has no position term for it).
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
    ``strong`` marks ``>>`` verdicts, which get ``weight`` = ``strong_weight`` (3: ``show_result.py``
    counts them as 3 battles) instead of duplicated rows. ``gen_judgment.py`` writes one file per
    model (``model_judgment/<judge>/<model>.jsonl``): pass that folder to read them all.

Every format also gets a ``weight`` column (1 for an ordinary judgment; see above), which
:func:`mixedeval.bradley_terry` uses when the table has it. A Chatbot Arena record's
``conv_metadata`` (FastChat's style fields: ``sum_assistant_a_tokens``, ``header_count_a``,
``list_count_a``, ``bold_count_a`` and their ``_b`` twins, a count or a dict of counts) becomes
the style covariates ``style_length``, ``style_headers``, ``style_lists``, ``style_bold``: the
difference a - b over the sum plus one (FastChat ``rating_systems.py`` ``preprocess_for_style``
with ``apply_ratio=[1, 1, 1, 1]``, ``add_one=True``; FastChat then standardises them, which rescales
the coefficients and leaves the strengths unchanged).

Guards: the file's size against mixedeval's memory limit before it is read (about
:data:`BYTES_PER_FILE_BYTE` bytes of memory per byte of JSON); only regular files and folders
(a device such as ``/dev/zero`` is refused); UTF-8 (UTF-16 and UTF-8 with a byte-order mark are
decoded; other encodings are an error naming the byte); JSON nested deeper than Python parses;
names (models, prompts, judges) that are not a string or a number, or hold NUL characters.
"""
from __future__ import annotations

import codecs
import json
import math
import stat
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from .._resources import check_memory, format_bytes
from ..errors import DataError

FORMATS = ("arena", "alpacaeval", "mtbench", "arenahard")
WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
#: an arena table's prompt column when ``prompt=None``: FastChat's name first
PROMPT_COLUMNS = ("question_id", "prompt")
COLUMNS = ["model_a", "model_b", "winner", "prompt", "judge", "position", "game", "turn", "weight", "source", "line"]
#: memory per byte of a battle file while it is parsed (the text, Python's objects, the table)
BYTES_PER_FILE_BYTE = 12
#: FastChat's style fields (rating_systems.py STYLE_CONTROL_ELEMENTS_V1) -> our covariate names
STYLE_FIELDS = {"style_length": "sum_assistant_{}_tokens", "style_headers": "header_count_{}",
                "style_lists": "list_count_{}", "style_bold": "bold_count_{}"}
_BOOLS = {"true": True, "false": False, "1": True, "0": False}

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

def _decode(p: Path, raw: bytes) -> str:
    """The text of a battle file: UTF-8 (a byte-order mark of UTF-8 or UTF-16 is honoured)."""
    if raw.startswith(codecs.BOM_UTF8):
        raw, enc = raw[len(codecs.BOM_UTF8):], "utf-8"
    elif raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        enc = "utf-16"
    else:
        enc = "utf-8"
        if raw[:2000].count(b"\x00") > 20:  # ASCII as UTF-16 is valid UTF-8 with a NUL every other byte
            raise DataError(f"{p}: the file looks like UTF-16 without a byte-order mark (NUL bytes between the "
                            f"characters); battle files are read as UTF-8: re-save it as UTF-8 (e.g. iconv -f utf-16le "
                            f"-t utf-8 {p.name} > fixed{p.suffix})")
    try:
        return raw.decode(enc)
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        hint = (" (it looks like UTF-16 without a byte-order mark)" if raw[:200].count(b"\x00") > 20 else "")
        raise DataError(f"{p}: line {line}: byte {raw[exc.start:exc.start + 1]!r} at offset {exc.start} is not "
                        f"{enc.upper()}{hint}; battle files are read as UTF-8: re-save the file as UTF-8 (e.g. "
                        f"iconv -f latin1 -t utf-8 {p.name} > fixed{p.suffix})") from None


def _loads(p: Path, text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise DataError(f"{p}: {where}: the JSON is nested too deeply to read (a battle record is a flat "
                        "object); the file is not a battle file or is damaged") from None


def _json_records(p: Path, text: str) -> tuple[str, list[tuple[int, Any]]]:
    """("record", records of a JSON list) or ("line", the objects of JSON Lines by line number)."""
    if text.lstrip().startswith("["):
        try:
            data = _loads(p, text, "line 1")
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
            yield i, _loads(p, line, f"line {i}")
        except json.JSONDecodeError as exc:
            raise DataError(f"{p}: line {i}: malformed JSON ({exc.msg}); expected one JSON object per line "
                            f"(JSON Lines), got {line[:60]!r}") from exc


def _frame_records(df: pd.DataFrame) -> Iterator[tuple[int, Any]]:
    cols = [str(c) for c in df.columns]
    for i, row in enumerate(df.itertuples(index=False, name=None), start=1):
        yield i, dict(zip(cols, row))


def _regular_file(p: Path) -> int:
    """The size of ``p``; DataError unless it is a regular file within the memory limit."""
    try:
        st = p.stat()
    except OSError as exc:
        raise DataError(f"cannot read battle file {str(p)!r}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        via = " via a symlink" if p.is_symlink() else ""
        raise DataError(f"{str(p)!r} is not a regular file (a device, pipe or socket{via}); "
                        "pass a battle file (.csv, .json, .jsonl, .parquet) or a folder of judgment files")
    check_memory(float(st.st_size) * BYTES_PER_FILE_BYTE, f"reading the battle file {str(p)!r}",
                 "split the file (e.g. by month) and read the parts one at a time, or raise the limit",
                 detail=f"{format_bytes(st.st_size)} on disk x about {BYTES_PER_FILE_BYTE} while parsed")
    return st.st_size


def _read_file(p: Path) -> tuple[str, list[tuple[int, Any]]]:
    """(what a number counts, numbered records) of one regular file."""
    _regular_file(p)
    suffix = p.suffix.lower()
    if suffix in (".json", ".jsonl", ".ndjson"):
        return _json_records(p, _decode(p, p.read_bytes()))
    try:
        if suffix in (".csv", ".tsv"):
            df = pd.read_csv(p, sep="\t" if suffix == ".tsv" else ",", keep_default_na=False, na_values=[""])
        elif suffix in (".parquet", ".pq"):
            df = pd.read_parquet(p)
        else:
            raise DataError(f"unknown file type {suffix!r} for {str(p)!r}; use .csv, .json, .jsonl, .parquet or a "
                            "folder of .jsonl judgment files")
    except DataError:
        raise
    except UnicodeDecodeError as exc:
        raise DataError(f"{str(p)!r} is not UTF-8 ({exc.reason} at byte {exc.start}); re-save it as UTF-8") from None
    except Exception as exc:  # noqa: BLE001 - the reader's own message, with the file
        raise DataError(f"could not read {str(p)!r}: {exc}") from exc
    return "row", list(_frame_records(df))


def _folder(p: Path) -> list[Path]:
    """The judgment files of a folder (arena-hard-auto gen_judgment.py: one .jsonl per model)."""
    files = sorted(f for f in p.iterdir() if f.suffix.lower() in (".jsonl", ".json") and not f.is_dir())
    if not files:
        raise DataError(f"the folder {str(p)!r} holds no .jsonl / .json files; pass a battle file or a folder of "
                        "judgment files (arena-hard-auto writes model_judgment/<judge>/<model>.jsonl)")
    total = sum(f.stat().st_size for f in files if f.is_file())
    check_memory(float(total) * BYTES_PER_FILE_BYTE, f"reading the {len(files)} judgment files of {str(p)!r}",
                 "read fewer files at a time, or raise the limit",
                 detail=f"{format_bytes(total)} on disk x about {BYTES_PER_FILE_BYTE} while parsed")
    return files


def _records(source: Any) -> list[tuple[str, str, list[tuple[int, Any]]]]:
    """Per file: (source name, what a number counts: line / record / row, numbered records)."""
    if isinstance(source, pd.DataFrame):
        return [("<DataFrame>", "row", list(_frame_records(source)))]
    if isinstance(source, list):
        return [("<list>", "record", list(enumerate(source, start=1)))]
    if not isinstance(source, (str, Path)):
        from .table import as_pandas  # noqa: PLC0415 - pyarrow / polars tables only

        return [("<table>", "row", list(_frame_records(as_pandas(source, what="battles"))))]
    if isinstance(source, str) and "\x00" in source:
        raise DataError("the battle file name contains a NUL character")
    p = Path(source)
    if not p.exists():
        raise DataError(f"battle file {str(p)!r} does not exist")
    files = _folder(p) if p.is_dir() else [p]
    return [(str(f), *_read_file(f)) for f in files]


# ---------------------------------------------------------------------------------------------
# one record -> rows
# ---------------------------------------------------------------------------------------------

def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _scalar(v: Any, key: str, what: str) -> Any:
    """``v`` when it can name something (a string or a number without NUL characters)."""
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise DataError(f"field {key!r} ({what}) is a {type(v).__name__} ({str(v)[:40]}); expected a string or a "
                        "number")
    if isinstance(v, str) and "\x00" in v:
        raise DataError(f"field {key!r} ({what}) contains a NUL character ({v[:40]!r}); clean the names first")
    return v


def _name(rec: dict, key: str, what: str) -> str:
    if key not in rec:
        raise DataError(f"has no field {key!r} ({what}); fields: {sorted(map(str, rec))[:12]}")
    v = rec[key]
    if _missing(v) or (isinstance(v, str) and not v.strip()):
        raise DataError(f"field {key!r} ({what}) is missing (NaN / null / empty)")
    return str(_scalar(v, key, what))


def _pair(rec: dict, key_a: str, key_b: str) -> tuple[str, str]:
    a, b = _name(rec, key_a, "a model name"), _name(rec, key_b, "a model name")
    if a == b:
        raise DataError(f"is a self-battle: {key_a} and {key_b} are both {a!r}; a model cannot be compared "
                        "with itself -- drop such rows before reading")
    return a, b


def _opt(rec: dict, key: str | None, what: str = "a label") -> Any:
    v = rec.get(key) if key is not None else None
    return None if _missing(v) else _scalar(v, key, what)


def _count(v: Any) -> float:
    """A FastChat style count: a number or a dict of counts (e.g. header_count_a = {"h1": 2, ...})."""
    if isinstance(v, dict):
        return float(sum(_count(x) for x in v.values()))
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise DataError(f"conv_metadata holds {v!r} where a count is expected")
    return float(v)


def _style(meta: Any) -> dict[str, float]:
    """The style covariates of a Chatbot Arena record's ``conv_metadata`` (module docstring)."""
    if not isinstance(meta, dict):
        return {}
    out = {}
    for name, field_ in STYLE_FIELDS.items():
        ka, kb = field_.format("a"), field_.format("b")
        if ka in meta and kb in meta:
            a, b = _count(meta[ka]), _count(meta[kb])
            out[name] = (a - b) / (a + b + 1.0)
    return out


def _arena(rec: dict, cols: dict[str, Any]) -> list[dict]:
    a, b = _pair(rec, cols["model_a"], cols["model_b"])
    w = _name(rec, cols["winner"], "the winner")
    if w not in WINNERS:
        raise DataError(f"field {cols['winner']!r} is {w!r}; expected one of {list(WINNERS)} (Chatbot Arena's values)")
    used = {v for v in cols.values() if isinstance(v, str)} | {"conversation_a", "conversation_b"}
    extra = {k: v for k, v in rec.items() if k not in used and k not in COLUMNS
             and (v is None or isinstance(v, (str, int, float, bool)))}
    return [{"model_a": a, "model_b": b, "winner": w, "prompt": _opt(rec, cols["prompt"], "the prompt"),
             "judge": _opt(rec, cols["judge"], "the judge"), "position": "a_first", "game": 1,
             "turn": _opt(rec, "turn"), "weight": 1.0, **extra, **_style(rec.get("conv_metadata"))}]


def _switched(v: Any) -> str | None:
    """The position of an AlpacaEval record from ``is_switched_outputs`` (bool, 0/1 or "true"/"false")."""
    if _missing(v):
        return None
    if isinstance(v, str):
        if v.strip().lower() not in _BOOLS:
            raise DataError(f"field 'is_switched_outputs' is {v!r}; expected true / false")
        v = _BOOLS[v.strip().lower()]
    if not isinstance(v, (bool, int)) or v not in (0, 1):
        raise DataError(f"field 'is_switched_outputs' is {v!r}; expected true / false")
    return "b_first" if v else "a_first"


def _alpacaeval(rec: dict, cols: dict[str, Any]) -> list[dict]:
    a, b = _pair(rec, "generator_1", "generator_2")
    if "preference" not in rec:
        raise DataError("has no field 'preference' (1 = output_1 preferred, 2 = output_2, 1.5 or 0 = draw)")
    p = rec["preference"]
    if _missing(p):
        raise _Failed("preference is null")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not (p == 0 or 1 <= p <= 2):
        raise DataError(f"field 'preference' is {p!r}; expected a number in [1, 2] or 0 (1 = output_1 preferred, "
                        "2 = output_2, 1.5 or 0 = draw; alpaca_eval's validate_alpacaeval_preference)")
    base = {"model_a": a, "model_b": b, "prompt": _opt(rec, "instruction", "the prompt"),
            "judge": _opt(rec, "annotator", "the judge"), "position": _switched(rec.get("is_switched_outputs")),
            "game": 1, "turn": None, "preference": float(p), "dataset": _opt(rec, "dataset")}
    if p in (0, 1.5):
        return [{**base, "winner": "tie", "weight": 1.0}]
    share_b = float(p) - 1.0  # the annotator's P(output_2 better)
    return [{**base, "winner": w, "weight": x} for w, x in (("model_a", 1.0 - share_b), ("model_b", share_b)) if x > 0]


def _judge_name(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return "/".join(str(_scalar(x, "judge", "the judge")) for x in v)
    return None if _missing(v) else _scalar(v, "judge", "the judge")


def _mtbench(rec: dict, cols: dict[str, Any]) -> list[dict]:
    a, b = _pair(rec, "model_1", "model_2")
    rows = []
    for g, pos in ((1, "a_first"), (2, "b_first")):
        w = _name(rec, f"g{g}_winner", "the winner of that game")
        if w == "error":
            raise _Failed(f"g{g}_winner is 'error'")
        if w not in _MTBENCH:
            raise DataError(f"field 'g{g}_winner' is {w!r}; expected 'model_1', 'model_2', 'tie' or 'error' "
                            "(FastChat llm_judge play_a_match_pair)")
        rows.append({"model_a": a, "model_b": b, "winner": _MTBENCH[w],
                     "prompt": _opt(rec, "question_id", "the prompt"),
                     "judge": _judge_name(rec.get("judge")), "position": pos, "game": g, "turn": _opt(rec, "turn"),
                     "weight": 1.0})
    return rows


def _arenahard(rec: dict, cols: dict[str, Any]) -> list[dict]:
    if "baseline" not in rec and cols["baseline"] is None:
        raise DataError("has no field 'baseline' (arena-hard v0.1 files take it from the config: "
                        "pass baseline='gpt-4-0314' (--baseline on the command line) or the config's baseline_model)")
    rec = {"baseline": cols["baseline"], **rec}
    model, base = _pair(rec, "model", "baseline")
    games = rec.get("games")
    if not isinstance(games, list) or not games:
        raise DataError(f"field 'games' is {str(games)[:60]}; expected a list of one or two games with a 'score'")
    prompt = _opt(rec, "uid", "the prompt") if "uid" in rec else _opt(rec, "question_id", "the prompt")
    rows = []
    for g, game in enumerate(games, start=1):
        score = game.get("score") if isinstance(game, dict) else None
        if _missing(score):
            raise _Failed(f"game {g} has no score")
        if not isinstance(score, str) or score not in _ARENAHARD:
            raise DataError(f"game {g} has score {str(score)[:40]!r}; expected one of {list(_ARENAHARD)} "
                            "(arena-hard-auto show_result.py)")
        side, strong = _ARENAHARD[score]
        model_is_a = g % 2 == 0  # round 1: baseline is A; round 2: swapped
        w = "tie" if side == "tie" else ("model_a" if (side == "A") == model_is_a else "model_b")
        rows.append({"model_a": model, "model_b": base, "winner": w, "prompt": prompt,
                     "judge": _opt(rec, "judge", "the judge"),
                     "position": "a_first" if model_is_a else "b_first", "game": g, "turn": None,
                     "weight": float(cols["strong_weight"]) if strong else 1.0,
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
                raise DataError(f"{src}: {where} {i}: a failed judgment ({exc}); pass drop_failed=True "
                                "(--drop-failed on the command line) to leave such judgments out (they are counted "
                                "in df.attrs['n_failed'])") from None
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
    if cols["prompt"] is not None and cols["prompt"] not in keys:
        raise DataError(f"{src}: no prompt column {cols['prompt']!r}; columns: {sorted(keys)[:12]}")


def _read_one(src: str, where: str, records: list[tuple[int, Any]], fmt: str | None, cols: dict,
              drop_failed: bool) -> tuple[str, list[dict], int]:
    """(format, rows, failed judgments) of one file."""
    if not records:
        raise DataError(f"{src}: no battles (the file is empty)")
    fmt = fmt or _detect(records, src, {cols["model_a"], cols["model_b"], cols["winner"]})
    cols = dict(cols)
    if fmt == "arena":
        _check_columns(records, cols, src)
        first = records[0][1]
        prompt = cols["prompt"]
        cols["prompt"] = prompt if prompt in first else next(
            (c for c in PROMPT_COLUMNS if prompt is None and c in first), None)
        cols["judge"] = cols["judge"] if cols["judge"] in first else None
    rows, failed = _rows(records, fmt, cols, src, where, drop_failed)
    return fmt, rows, failed


def read_battles(source: Any, format: str | None = None, *,  # noqa: A002 - the format of the file
                 model_a: str = "model_a", model_b: str = "model_b",
                 winner: str = "winner", prompt: str | None = None, judge: str | None = "judge",
                 baseline: str | None = None, drop_failed: bool = False, strong_weight: float = 3.0) -> pd.DataFrame:
    """Read judged pairwise comparisons into one table, one row per judgment.

    Parameters
    ----------
    source : path (.csv, .json, .jsonl, .parquet), a folder of judgment files (.jsonl / .json,
        e.g. arena-hard-auto's ``model_judgment/<judge>/``, one file per model: all are read),
        DataFrame or list of dicts.
    format : None (detected from the fields), ``"arena"``, ``"alpacaeval"``, ``"mtbench"`` or
        ``"arenahard"`` (see the module docstring and docs/tutorials/battles_formats.md).
    model_a, model_b, winner, prompt, judge : column names of an arena table (``prompt`` and
        ``judge`` may be absent; ``prompt`` None takes ``question_id`` (FastChat's name) or else
        ``prompt`` when the table has one); the other formats have fixed field names.
    baseline : Arena-Hard v0.1 records name no baseline: the config's baseline model.
    drop_failed : leave out judgments the judge did not give (MT-Bench ``"error"``, null
        AlpacaEval preferences, null Arena-Hard scores) instead of raising; counted in
        ``df.attrs["n_failed"]``.
    strong_weight : the ``weight`` of an Arena-Hard ``>>`` verdict (3: arena-hard-auto's
        ``show_result.py`` counts it as three battles).

    Returns
    -------
    DataFrame
        ``model_a, model_b, winner, prompt, judge, position, game, turn, weight, source, line``
        and the format's own columns; ``attrs``: ``format``, ``n_failed``, ``files`` and, for
        Arena-Hard and AlpacaEval, ``baseline`` (the model every other is judged against:
        :func:`mixedeval.bradley_terry`'s default ``reference``).
    """
    if format is not None and format not in FORMATS:
        raise DataError(f"format must be None or one of {list(FORMATS)}, not {format!r}")
    if isinstance(strong_weight, bool) or not isinstance(strong_weight, (int, float)) or \
            not (math.isfinite(strong_weight) and strong_weight > 0):
        raise DataError(f"strong_weight must be a positive number (3: Arena-Hard's own scoring), got {strong_weight!r}")
    cols = {"model_a": model_a, "model_b": model_b, "winner": winner, "prompt": prompt, "judge": judge,
            "baseline": baseline, "strong_weight": strong_weight}
    rows: list[dict] = []
    failed, fmts, files = 0, [], []
    for src, where, records in _records(source):
        fmt, r, f = _read_one(src, where, records, format, cols, drop_failed)
        rows += r
        failed += f
        fmts.append(fmt)
        files.append(src)
    if len(set(fmts)) > 1:
        raise DataError(f"the files hold different formats ({sorted(set(fmts))}); read them one at a time")
    if failed:
        warnings.warn(f"{files[0] if len(files) == 1 else source}: {failed} failed judgment(s) left out "
                      "(drop_failed=True)", stacklevel=2)
    df = pd.DataFrame(rows)
    df = df[COLUMNS + [c for c in df.columns if c not in COLUMNS]] if len(df) else pd.DataFrame(columns=COLUMNS)
    df.attrs.update(format=fmts[0], n_failed=failed, files=files)
    base_col = {"arenahard": "model_b", "alpacaeval": "model_a"}.get(fmts[0])
    if base_col and len(df) and df[base_col].nunique() == 1:
        df.attrs["baseline"] = str(df[base_col].iloc[0])
    return df
