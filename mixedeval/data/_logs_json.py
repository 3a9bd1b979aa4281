"""Bounded, checked reading of the JSON and JSON-lines files of evaluation logs.

Every failure is a :class:`~mixedeval.errors.DataError` naming the file and the place in it:

* the memory a whole JSON file needs (its size times :data:`JSON_MEMORY_FACTOR`) is checked
  against mixedeval's memory limit (``me.set_memory_limit``) before the file is read; a
  JSON-lines file is read line by line, and a line longer than the limit allows is refused when
  it reaches that length (a multi-gigabyte file without newlines is never held in memory);
* bytes that are not UTF-8 are reported with their byte offset in the file;
* invalid JSON with its line and column (and, in JSON lines, the line of the file);
* nesting deeper than Python's JSON parser can follow (``RecursionError``) as such;
* the parsed value is validated against the format's shape (:mod:`._logs_schema`).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import repeat
from pathlib import Path
from typing import Any

from .._resources import check_memory, format_bytes, get_memory_limit
from ..errors import DataError
from ._logs_schema import Columns, Obj, Spec, columns_of, validate, validate_lines

#: Bytes of memory the parsed Python objects of a JSON document take per byte of the file, at the
#: peak of reading it (the raw bytes, the decoded text and the objects). benchmarks/bench_logs_guards.py
#: measured 4.7 (a HELM per_instance_stats.json), 9.6 (lm-eval samples lines) and 4.1 (inspect_ai's
#: read_eval_log per inflated byte of an .eval); documents of tiny containers (``[{}, {}, ...]``) can
#: exceed it, which is why a MemoryError while reading is a DataError too.
JSON_MEMORY_FACTOR = 10

_FIX = "If the file really is that large and the machine has the memory, raise the limit; else the file is damaged"


def file_size(path: Path) -> int:
    """The size of ``path`` in bytes (a DataError naming it when it cannot be read)."""
    try:
        return path.stat().st_size
    except OSError as exc:
        raise DataError(f"could not read {str(path)!r}: {exc.strerror or exc}") from exc


def check_size(src: str, n_bytes: float, factor: float, what: str) -> None:
    """A DataError when ``n_bytes`` (of a file or an archive entry) times ``factor`` exceeds the
    memory limit; ``what`` says what the bytes are (e.g. ``"its 4 entries inflated"``)."""
    check_memory(n_bytes * factor, f"{src}: reading {what} would", _FIX,
                 detail=f"{format_bytes(n_bytes)} x {factor:g}, the memory per byte of parsed JSON")


def parse_json(raw: bytes, src: str, where: str = "", offset: int = 0) -> Any:
    """The JSON value of ``raw`` (bytes of ``src``; ``where``: e.g. ``"line 3"``, ``offset``: the
    byte offset of ``raw`` in the file) or a DataError naming the file and the place."""
    at = f" {where}" if where else ""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{src}: at byte {offset + exc.start}{at}: the byte 0x{raw[exc.start]:02x} is not UTF-8 "
                        "(evaluation logs are UTF-8 JSON); the file is damaged or not a log") from None
    try:
        return json.loads(text.rstrip("\r\n") if where else text)  # a JSON line without its newline
    except RecursionError:
        raise DataError(f"{src}:{at or ' the document'} is nested too deeply for Python's JSON parser (more than "
                        "about 1000 levels of [ or {); the file is damaged or not a log") from None
    except json.JSONDecodeError as exc:
        pos = f"line {exc.lineno} column {exc.colno}" if not where else f"{where} column {exc.colno}"
        raise DataError(f"{src}: at {pos}: not valid JSON ({exc.msg})") from None
    except MemoryError:
        raise DataError(f"{src}:{at} ran out of memory while parsing ({format_bytes(len(raw))} of JSON); free "
                        "memory or lower mixedeval's memory limit so that the check refuses it first") from None


def load_json(path: Path, spec: Spec, what: str) -> Any:
    """The JSON document of ``path`` validated against ``spec`` (``what``: the kind of file, for
    messages), after checking the memory it needs against the limit."""
    src = str(path)
    size = file_size(path)
    check_size(src, size, JSON_MEMORY_FACTOR, "the whole JSON file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"could not read {src!r}: {exc.strerror or exc}") from exc
    except MemoryError:
        raise DataError(f"{src}: ran out of memory reading {format_bytes(size)}; free memory or lower "
                        "mixedeval's memory limit so that the check refuses it first") from None
    return validate(parse_json(raw, src), spec, src, what=what)


def line_cap() -> int:
    """The longest JSON line read under the memory limit (bytes; -1: no limit)."""
    limit = get_memory_limit()
    return -1 if limit is None else max(1, int(limit // JSON_MEMORY_FACTOR))


#: bytes of whole lines parsed and validated as one batch (small: records retained in a batch
#: cost fresh memory, streamed ones reuse it -- 16 KB measured fastest on lm-eval samples lines)
BATCH_BYTES = 1 << 14
_SCAN = json.JSONDecoder().scan_once  # json.loads' own parser (the C scanner), without its wrappers
_ZEROS = repeat(0)


def _parse_batch(lines: list[bytes]) -> list[Any] | None:
    """The JSON value of every line of ``lines`` (UTF-8, one value each, no leading blank), or
    None when any line is not (blank, not UTF-8, not JSON, ...): :func:`parse_json` then says which."""
    try:
        texts = list(map(bytes.decode, lines))
        parsed = list(map(_SCAN, texts, _ZEROS))
    except (ValueError, RecursionError, MemoryError):  # UnicodeDecodeError is a ValueError
        return None
    if len(parsed) != len(texts):  # the scanner's StopIteration (no value at the start of a line) ends map early
        return None
    values, ends = zip(*parsed)
    # after each value only its newline (the last line: none): the tails' total length says so at once
    if sum(map(len, texts)) - sum(ends) != len(texts) - (not texts[-1].endswith("\n")):
        for text, end in zip(texts, ends):
            if text[end:].strip(" \t\n\r"):  # more than json's whitespace after the value
                return None
    return list(values)


def _lines_one_by_one(lines: list[bytes], lineno: int, offset: int, src: str, spec: Obj,
                      what: str) -> tuple[list[Any], Columns]:
    """The records of ``lines`` (the first is line ``lineno + 1``, at byte ``offset``; blank lines
    skipped) parsed and validated one by one, each failure a DataError naming its line, and
    their columns."""
    out = []
    for line in lines:
        lineno += 1
        if line.strip():
            rec = parse_json(line, src, f"line {lineno}", offset)
            out.append(validate(rec, spec, src, f"line {lineno}", what))
        offset += len(line)
    return out, columns_of(out, spec)


def jsonl_batches(path: Path, spec: Obj, what: str) -> Iterator[tuple[list[Any], Columns]]:
    """The records of the non-blank lines of a JSON-lines file, in order, in batches, each record
    validated against the object shape ``spec``: (records, their columns) per batch, the columns
    those of :func:`._logs_schema.columns_of` (the checked keys, None where absent). A line longer
    than :func:`line_cap` is a DataError when it reaches that length.

    When no line can exceed the cap, lines are read, parsed and validated in batches of about
    :data:`BATCH_BYTES` (the shape checked a key at a time over the batch,
    :func:`._logs_schema.validate_lines`); a batch with a blank or failing line is read again line
    by line, so errors are the same."""
    src = str(path)
    cap = line_cap()
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise DataError(f"could not read {src!r}: {exc.strerror or exc}") from exc
    lineno = offset = 0
    with fh:
        if cap < 0 or file_size(path) <= cap:  # no line can exceed the cap: batches of whole lines (faster)
            while lines := fh.readlines(BATCH_BYTES):
                recs = _parse_batch(lines)
                if recs is None:
                    yield _lines_one_by_one(lines, lineno, offset, src, spec, what)
                else:
                    yield recs, validate_lines(recs, spec, src, lineno + 1, what)
                lineno += len(lines)
                offset += sum(map(len, lines))
            return
        while line := fh.readline(cap + 1 if cap > 0 else -1):
            if cap > 0 and len(line) > cap:
                check_size(src, len(line), JSON_MEMORY_FACTOR, f"line {lineno + 1} (at byte {offset}, longer still)")
            yield _lines_one_by_one([line], lineno, offset, src, spec, what)
            lineno += 1
            offset += len(line)
