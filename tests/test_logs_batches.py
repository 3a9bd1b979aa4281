"""Issue 33 (reading logs became 1.84x slower with the schema validation): the batched reading of
JSON lines (``mixedeval/data/_logs_json.jsonl_batches``), the column checks of the log shapes
(``_logs_schema.validate_lines``) and the lm-eval reader's column-at-a-time rows give the same
records, errors and rows as reading, validating and collecting line by line.

References: the line-by-line path is ``parse_json`` + ``validate`` per line (the path-building
``first_error``) and, for the reader, a plain loop over ``json.loads`` of each line written here.
"""
from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

import mixedeval as me
from mixedeval.data import _logs_json as lj
from mixedeval.data import _logs_schema as sch
from mixedeval.data._logs_lmeval import read_samples_file
from mixedeval.data._logs_rows import Rows

_VALUES = [None, True, False, 0, 1, -2, 1.5, float("nan"), "", "x", [], [1], ["a", "b"], ["a", 1], {}, {"a": 1},
           {"doc_id": 1, "metrics": ["acc"]}, {"doc_id": "7", "metrics": []}, {"doc_id": True, "metrics": ["acc"]},
           {"doc_id": 1, "metrics": "acc"}, {"doc_id": 1.0, "metrics": ["acc"]}, {"metrics": ["acc"]},
           {"doc_id": 1, "metrics": ["acc"], "filter": None}, {"doc_id": 1, "metrics": ["acc"], "filter": 3},
           {"doc_id": 1, "metrics": ["acc"], "doc_hash": 5}, {"doc_id": 1, "metrics": [None]},
           [{"instance_id": "i", "stats": []}], [{"instance_id": "i", "stats": [{"name": {"name": "em"}, "mean": 1}]}],
           [{"instance_id": "i", "stats": [{"name": {"name": 3}}]}], [{"instance_id": None, "stats": []}],
           [{"instance_id": "i", "stats": [{"name": {"name": "em"}, "mean": True}]}],
           {"model_name": "m", "config": {"model_args": "a=1"}}, {"model_name": ["m"]},
           {"config": {"model_args": {"a": 1}}}, {"config": {"model_args": 3}}, {"config": {"model_args": ["a"]}},
           {"versions": {"t": 1}}, {"versions": []}, {"configs": {"t": None}}, {"configs": {"t": 3}},
           {"name": "r", "scenario_spec": {"args": {"k": 1}}}, {"name": "r", "adapter_spec": {"model": 1}},
           [{"id": "a"}, {"id": 2}, {}], [{"id": 1.5}]]
_SPECS = [sch.LMEVAL_SAMPLE, sch.LMEVAL_RESULTS, sch.HELM_STATS, sch.HELM_RUN_SPEC, sch.HELM_INSTANCES, sch.STR,
          sch.NUM, sch.INT, sch.BOOL, sch.optional(sch.NUM), sch.ListOf(sch.OneOf((sch.INT, sch.STR))),
          sch.OneOf((sch.ListOf(sch.STR), sch.ListOf(sch.INT))), sch.MapOf(sch.optional(sch.Obj({"x": sch.NUM}))),
          sch.ListOf(sch.STR), sch.MapOf(sch.NUM), sch.MapOf(sch.ListOf(sch.optional(sch.STR)))]


def _valid(spec, v) -> bool:
    return spec.first_error(v, "$") is None


@pytest.mark.parametrize("spec", _SPECS, ids=lambda s: s.describe()[:30])
def test_column_checks_of_batches_agree_with_first_error(spec):
    """A batch passes the column check only when first_error finds nothing in any of its values,
    and every batch of valid values passes (singles, pairs and random batches)."""
    check = sch._columns(spec)  # noqa: SLF001
    rng = random.Random(0)
    batches = [[v] for v in _VALUES] + [list(p) for p in itertools.combinations(_VALUES, 2)]
    batches += [rng.sample(_VALUES, rng.randint(3, 12)) for _ in range(300)]
    valid = [v for v in _VALUES if _valid(spec, v)]
    batches += [valid, valid * 3] if valid else []
    for batch in batches:
        every = all(_valid(spec, v) for v in batch)
        if check(batch):
            assert every, (spec, batch)
        if every and all(type(v) is not bool or bool in getattr(spec, "types", ()) for v in batch):
            assert check(batch), (spec, batch)  # valid json values are never rejected


def test_validate_lines_returns_the_columns_or_the_first_invalid_records_error():
    recs = [{"doc_id": 1, "metrics": ["acc"], "filter": "none", "doc_hash": "h"}, {"doc_id": "2", "metrics": []}]
    cols = sch.validate_lines(recs, sch.LMEVAL_SAMPLE, "f", 5)
    assert cols == {"doc_id": [1, "2"], "metrics": [["acc"], []], "filter": ["none", None], "doc_hash": ["h", None]}
    bad = recs + [{"doc_id": 3, "metrics": ["acc", 4]}, {"metrics": []}]
    with pytest.raises(me.DataError) as err:
        sch.validate_lines(bad, sch.LMEVAL_SAMPLE, "f", 5, "samples")
    with pytest.raises(me.DataError) as ref:
        sch.validate(bad[2], sch.LMEVAL_SAMPLE, "f", "line 7", "samples")
    assert str(err.value) == str(ref.value) == "f (samples): at line 7, $.metrics[1]: expected a string, found the number 4"


# ------------------------------------------------------------------------------ batches of lines
def _line_by_line(path: Path, spec) -> list:
    """The reference: every non-blank line through parse_json and validate, one at a time."""
    out, offset = [], 0
    for lineno, line in enumerate(path.read_bytes().splitlines(keepends=True), 1):
        if line.strip():
            rec = lj.parse_json(line, str(path), f"line {lineno}", offset)
            out.append(sch.validate(rec, spec, str(path), f"line {lineno}", "x"))
        offset += len(line)
    return out


def _outcome(fn):
    try:
        return "ok", fn()
    except me.DataError as exc:
        return "error", str(exc)


def _batched(path: Path, spec) -> list:
    recs, cols = [], []
    for batch, columns in lj.jsonl_batches(path, spec, "x"):
        recs.extend(batch)
        cols.append((batch, columns))
    for batch, columns in cols:  # the columns are the batch's
        assert columns == sch.columns_of(batch, spec)
    return recs


_GOOD = '{"doc_id": %d, "metrics": ["acc"], "acc": 1.0, "doc": {"q": "%s"}}'
_ODD_LINES = {
    "blank lines": ["", "   ", "\t"],
    "CRLF": None,
    "trailing blanks": ['{"doc_id": 1, "metrics": []}   \t'],
    "leading blanks": ['  {"doc_id": 1, "metrics": []}'],
    "two values": ['{"doc_id": 1, "metrics": []} {"doc_id": 2, "metrics": []}'],
    "not JSON": ['{"doc_id": 1, "metrics": [}'],
    "a BOM": ['\ufeff{"doc_id": 1, "metrics": []}'],
    "a vertical tab after": ['{"doc_id": 1, "metrics": []}\x0b'],
    "NaN and big numbers": ['{"doc_id": 1, "metrics": ["acc"], "acc": NaN, "x": 1e400}'],
    "wrong shape": ['{"doc_id": [1], "metrics": []}'],
    "missing key": ['{"metrics": []}'],
    "deep nesting": ['{"doc_id": 1, "metrics": [], "doc": ' + "[" * 100_000 + "]" * 100_000 + "}"],
    "unicode": ['{"doc_id": "\u00e9\u2028x", "metrics": ["\u00e9"], "\u00e9": 1}'],
}


@pytest.mark.parametrize("odd", sorted(_ODD_LINES))
@pytest.mark.parametrize("where", [0, 37, 399])
def test_batched_reading_equals_line_by_line(tmp_path, odd, where, monkeypatch):
    """Records, or the DataError (file, line, byte, JSON path), are those of the line-by-line
    path, wherever the odd line falls in a batch."""
    monkeypatch.setattr(lj, "BATCH_BYTES", 2048)
    lines = [_GOOD % (i, "x" * (i % 50)) for i in range(400)]
    if odd == "CRLF":
        text = "\r\n".join(lines) + "\r\n"
    else:
        lines[where:where] = _ODD_LINES[odd]
        text = "\n".join(lines) + ("\n" if where % 2 else "")
    path = tmp_path / "s.jsonl"
    path.write_bytes(text.encode("utf-8"))
    got, ref = _outcome(lambda: _batched(path, sch.LMEVAL_SAMPLE)), _outcome(lambda: _line_by_line(path,
                                                                                                sch.LMEVAL_SAMPLE))
    assert got[0] == ref[0]
    if got[0] == "ok":
        assert json.dumps(got[1]) == json.dumps(ref[1])
    else:
        assert got[1] == ref[1]


@pytest.mark.parametrize("bad", [b"\xff", b"\xc3", b"\xed\xa0\x80"])
def test_batched_reading_names_the_byte_that_is_not_utf8(tmp_path, bad):
    head = b"".join(b'{"doc_id": %d, "metrics": []}\n' % i for i in range(100))
    path = tmp_path / "s.jsonl"
    path.write_bytes(head + b'{"doc_id": "a' + bad + b'", "metrics": []}\n')
    with pytest.raises(me.DataError, match=rf"at byte {len(head) + 13} line 101: the byte 0x{bad[0]:02x} is not UTF-8"):
        _batched(path, sch.LMEVAL_SAMPLE)
    assert _outcome(lambda: _batched(path, sch.LMEVAL_SAMPLE)) == _outcome(lambda: _line_by_line(path,
                                                                                               sch.LMEVAL_SAMPLE))


def test_batched_reading_under_a_memory_limit_reads_line_by_line(tmp_path):
    """A file larger than the line cap is read a line at a time (each line checked as it comes)."""
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(_GOOD % (i, "y") for i in range(50)) + "\n\n")
    me.set_memory_limit(str(path.stat().st_size * 5))  # the cap: a tenth of the limit, below the file's size
    try:
        batches = list(lj.jsonl_batches(path, sch.LMEVAL_SAMPLE, "x"))
    finally:
        me.set_memory_limit(None)
    assert max(len(b) for b, _ in batches) == 1
    assert [r for b, _ in batches for r in b] == _line_by_line(path, sch.LMEVAL_SAMPLE)


# ------------------------------------------------------------------------------ the lm-eval reader
def _reference_rows(path: Path, metadata=()) -> list[tuple]:
    """The rows of a samples file by a plain loop over json.loads of each line."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        filt = rec.get("filter") or "none"
        doc = rec.get("doc") if isinstance(rec.get("doc"), dict) else {}
        for name in rec["metrics"]:
            v = rec.get(name)
            if isinstance(v, (int, float)):
                meta = tuple(doc.get(k) if isinstance(doc.get(k), (str, int, float, bool)) or doc.get(k) is None
                             else None for k in metadata)
                out.append((str(rec["doc_id"]), name if filt == "none" else f"{name},{filt}", float(v),
                            rec.get("doc_hash"), filt) + meta)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_lmeval_reader_rows_equal_a_plain_loop(tmp_path, seed, monkeypatch):
    """Uniform batches (same metrics, filter, numbers) are read a column at a time, the others
    record by record: the rows, their order and the non-numeric note are those of a plain loop."""
    monkeypatch.setattr(lj, "BATCH_BYTES", 1024)
    rng = random.Random(seed)
    lines, n_non_numeric = [], 0
    for i in range(300):
        odd = rng.random() < (0.02 if seed % 2 else 0.3)
        names = rng.choice([["acc", "f1"], ["acc"], [], ["acc", "acc"], ["bleu", "acc"]]) if odd else ["acc", "f1"]
        n_non_numeric += names.count("bleu")
        rec = {"doc_id": rng.choice([i, str(i)]), "metrics": names, "doc": {"q": f"q{i}", "lvl": i % 3, "l": [1]},
               "acc": rng.choice([0.0, 1.0, True, 2, 0.5]) if odd else float(i % 2), "f1": i / 300,
               "bleu": ["ref", "pred"], "doc_hash": f"h{i}" if rng.random() > 0.1 else None}
        if odd and rng.random() < 0.5:
            rec["filter"] = rng.choice(["none", "strict", None, ""])
        if odd and rng.random() < 0.2:
            rec["doc"] = "not a dict"
        lines.append(json.dumps(rec))
        if odd and rng.random() < 0.1:
            lines.append("")
    path = tmp_path / "samples_t_2024-01-01T00-00-00.jsonl"
    path.write_text("\n".join(lines) + "\n")
    metadata = ("lvl", "l", "q")
    rows = Rows("lm-eval")
    read_samples_file(path, rows, "sys", metadata=metadata)
    got = list(zip(rows.cols["item"], rows.cols["metric"], rows.cols["score"], rows.cols["item_hash"],
                   rows.extra["filter"], *(rows.extra[k] for k in metadata)))
    ref = _reference_rows(path, metadata)
    assert got == ref
    assert all(type(a) is type(b) for g, r in zip(got, ref) for a, b in zip(g, r))
    assert rows.notes["non_numeric"] == n_non_numeric
