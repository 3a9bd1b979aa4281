"""Inspect AI ``.eval`` logs read without importing inspect_ai (issue 30, point 7).

Importing inspect_ai takes about a second (it loads its whole evaluation framework) and its
validated reader most of another for a few logs, which made ``mixedeval compare-logs`` slow to
start. A finished ``.eval`` log is a zip archive of JSON entries: ``header.json`` (the
``EvalLog`` without samples: ``eval``, ``plan``, ``results``, ``status``, ...),
``reductions.json`` and one ``samples/<id>_epoch_<n>.json`` per sample and epoch. This module
reads those entries as inspect_ai's ``read_eval_log`` does (the last entry of a name wins, the
samples sorted by epoch and id as ``inspect_ai.log._log.sort_samples`` sorts them, the reductions
kept only when the log has results) and gives objects with the attributes the reader uses
(:class:`Model`: an attribute per JSON field, None when absent, as the pydantic models' optional
fields; the fields inspect types as plain dicts -- task and model arguments, metadata, a solver's
params, a score's value -- stay dicts).

It declines (returns None, and inspect_ai reads the log) whenever the log is not a finished
``.eval`` archive of the log format it knows (``version`` 2, a ``header.json``), when an entry is
not JSON, or when ``zstandard`` (installed with inspect_ai) is missing. ``tests/test_logs_inspect_fast.py``
checks that both readers give the same table on logs written by inspect_ai itself.

:func:`value_to_float` is inspect_ai's ``value_to_float()`` (``inspect_ai.scorer._metric``,
default sentinels "C", "P", "I", "N"), the mapping of score values to numbers.
"""
from __future__ import annotations

import importlib.util
import json
import math
import zipfile
from pathlib import Path
from typing import Any

from ._logs_zip import _LOCAL_HEADER, _inflated_chunks, _Range

#: the log format version this reader knows (inspect_ai writes 2 since 2024)
LOG_VERSION = 2
#: fields inspect_ai types as plain dicts (their values are not models)
_RAW = frozenset({"task_args", "task_args_passed", "model_args", "metadata", "params", "value", "model_roles",
                  "sandbox", "task_attribs", "solver_args", "revision", "packages", "answer", "store",
                  "attachments", "explanation"})


class Model:
    """A JSON object with attribute access: ``obj.field`` is the field (a :class:`Model` for an
    object, a list of them for a list of objects; the :data:`_RAW` fields as they are), None
    when absent."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]):
        self._data = data

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = self._data.get(name)
        if name in _RAW:
            return value
        if name == "scores" and isinstance(value, dict):  # a sample's scores: scorer name -> Score
            return {k: Model(v) if isinstance(v, dict) else v for k, v in value.items()}
        return _wrap(value)

    def model_dump(self, exclude_none: bool = False) -> dict[str, Any]:
        """The object as a dict (pydantic's ``model_dump``)."""
        return _without_none(self._data) if exclude_none else dict(self._data)

    def __repr__(self) -> str:
        return f"Model({sorted(self._data)})"


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Model(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def value_to_float(value: Any) -> float:
    """inspect_ai's ``value_to_float()`` with its default sentinels (C 1, P 0.5, I and N 0)."""
    if value == "C":
        return 1.0
    if value == "P":
        return 0.5
    if value == "I" or value == "N":
        return 0.0
    if isinstance(value, (int, float, bool)):
        return float(value)
    if isinstance(value, str):
        low = value.lower()
        if low in ("yes", "true"):
            return 1.0
        if low in ("no", "false"):
            return 0.0
        try:
            number = float(low)
        except ValueError:
            return 0.0
        return number if math.isfinite(number) else 0.0
    return 0.0


def _entry(fh: Any, info: zipfile.ZipInfo) -> bytes:
    """The inflated bytes of one archive entry (stored, deflate or zstd; checked beforehand by
    :func:`mixedeval.data._logs_zip.check_eval_archive`)."""
    fh.seek(info.header_offset)
    fields = _LOCAL_HEADER.unpack(fh.read(_LOCAL_HEADER.size))
    fh.seek(info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10])
    return b"".join(_inflated_chunks(_Range(fh, info.compress_size), info.compress_type))


def _sample_key(sample: dict[str, Any]) -> tuple[Any, str]:
    sid = sample.get("id")
    return sample.get("epoch"), sid if isinstance(sid, str) else str(sid).zfill(20)


def wanted(name: str) -> bool:
    """The archive entries this reader reads (to keep while the archive is checked)."""
    return name in ("header.json", "reductions.json") or (name.startswith("samples/") and name.endswith(".json"))


def can_read() -> bool:
    """Whether this reader can read ``.eval`` archives here (their zstd codec is installed)."""
    return importlib.util.find_spec("zstandard") is not None  # inspect_ai's zstd codec; else inspect_ai reads


def _archive_entries(path: Path) -> dict[str, bytes] | None:
    """The inflated entries of the archive this reader reads (None: not a readable zip)."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = {i.filename: i for i in zf.infolist()}  # a re-logged entry: the last one wins
        with path.open("rb") as fh:
            return {name: _entry(fh, info) for name, info in infos.items() if wanted(name)}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None


def read_log_fast(path: Path, entries: dict[str, bytes] | None = None) -> Model | None:
    """The log at ``path`` (a finished ``.eval`` archive) as a :class:`Model` with ``samples``
    and ``reductions``, or None when this reader does not handle it (inspect_ai then reads it).
    ``entries``: the archive's inflated entries that :func:`wanted` selects, when the caller has
    them already (:func:`mixedeval.data._logs_zip.check_eval_archive` keeps them as it checks
    the archive); else they are read here."""
    if path.suffix.lower() != ".eval" or not can_read():
        return None
    if entries is None:
        entries = _archive_entries(path)
    if entries is None or "header.json" not in entries:
        return None  # a log still running (only its journal): inspect_ai knows how to read it
    try:
        header = json.loads(entries["header.json"])
        if not isinstance(header, dict) or header.get("version") != LOG_VERSION or not isinstance(
                header.get("eval"), dict):
            return None
        samples = [json.loads(data) for name, data in entries.items() if name.startswith("samples/")]
        reductions = (json.loads(entries["reductions.json"])
                      if "reductions.json" in entries and header.get("results") is not None else None)
    except ValueError:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None
    if not all(isinstance(s, dict) and "epoch" in s and "id" in s for s in samples):
        return None
    samples.sort(key=_sample_key)
    header.setdefault("status", "started")  # inspect_ai's default
    return Model({**header, "samples": samples, "reductions": reductions})
