"""Issue 30, point 7: Inspect ``.eval`` logs read without importing inspect_ai
(:mod:`mixedeval.data._logs_inspect_fast`) give the same table, files and warnings as inspect_ai's
own ``read_eval_log`` (the reference: the reader with the fast path switched off), on logs that
inspect_ai writes here offline: 0/1 ``match`` scores over epochs with sample metadata, and a
scorer whose values are dicts, "C"/"P"/"I" letters, numeric strings, booleans and text it cannot
convert, with tags and generation settings (the fields systems are defined by).
Its ``value_to_float`` equals inspect_ai's on every kind of value. Without a ``header.json`` (a
log still running) or for ``.json`` logs the fast path declines and inspect_ai reads the log.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

import mixedeval as me
import mixedeval.data._logs_inspect as li
from mixedeval.data._logs_inspect_fast import _entry, read_log_fast, value_to_float

pytestmark = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None,
                                reason="the optional extra mixedeval[logs] is not installed (CI installs it)")
ROOT = Path(__file__).resolve().parents[1]


def _both(source, monkeypatch, **kw):
    fast = me.read_eval_logs(source, **kw)
    with monkeypatch.context() as m:
        m.setattr(li, "read_log_fast", lambda path, entries=None: None)
        ref = me.read_eval_logs(source, **kw)
    return fast, ref


def _assert_same(fast, ref):
    pd.testing.assert_frame_equal(fast.table, ref.table)
    pd.testing.assert_frame_equal(fast.files.astype(str), ref.files.astype(str))
    assert [(w.kind, w.message) for w in fast.warnings] == [(w.kind, w.message) for w in ref.warnings]


@pytest.fixture(scope="module")
def mixed_logs(tmp_path_factory):
    """Two models x a scorer with every kind of value, tags and a temperature."""
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, Target, accuracy, scorer

    from inspect_helpers import answer_solver

    out = tmp_path_factory.mktemp("mixed")
    values = ["C", "I", "P", "N", "0.25", "7", "yes", "False", True, 3, 0.5, "c", "-2", "1e-1", "n/a",
              {"a": "C", "b": 0.5}]

    @scorer(metrics=[accuracy()])
    def every_kind():
        async def score(state, target: Target):
            i = int(str(state.sample_id)[1:])
            return Score(value=values[(i + state.epoch) % len(values)], answer=state.output.completion)
        return score

    fixed_output = answer_solver()
    ds = [Sample(id=f"s{i}", input=f"{i}?", target="x", metadata={"passage": f"p{i // 4}", "hard": i % 3 == 0,
                                                                    "weight": 0.5 * i, "nested": {"k": i}})
          for i in range(len(values))]
    answers = {f"s{i}": ["x", "y"] for i in range(len(values))}
    for model in ("mockllm/one", "mockllm/two"):
        inspect_eval(Task(dataset=ds, solver=fixed_output(answers), scorer=every_kind(), epochs=2, name="kinds"),
                     model=model, log_dir=str(out), display="none", tags=["t1", model[-3:]],
                     temperature=0.3)
    return out


def test_match_logs_read_the_same(tmp_path, monkeypatch):
    from inspect_helpers import write_match_logs

    write_match_logs(tmp_path, {"mockllm/a": 0.6, "mockllm/b": 0.8}, epochs=3, seed=1, n=25,
                     metadata=lambda i: {"cluster": f"c{i // 5}"})
    fast, ref = _both(tmp_path, monkeypatch, metric="match", metadata=["cluster"])
    assert len(fast.table) == 2 * 25 * 3 and fast.table["cluster"].notna().all()
    _assert_same(fast, ref)


def test_every_kind_of_value_and_field_reads_the_same(mixed_logs, monkeypatch):
    fast, ref = _both(mixed_logs, monkeypatch)
    assert {"every_kind", "every_kind/a", "every_kind/b"} <= set(fast.table["metric"])
    assert "metadata_passage" in fast.table.columns or "passage" in fast.table.columns
    _assert_same(fast, ref)
    fast, ref = _both(mixed_logs, monkeypatch, system=["model", "tags", "generation_config.temperature"])
    _assert_same(fast, ref)
    assert fast.table["system"].nunique() == 2


def test_bundled_logs_read_the_same(monkeypatch):
    fast, ref = _both(me.datasets.path("llm_inspect_logs"), monkeypatch, metric="match", metadata=["cluster"])
    _assert_same(fast, ref)


def test_value_to_float_is_inspects():
    from inspect_ai.scorer import value_to_float as inspect_value_to_float

    theirs = inspect_value_to_float()
    for v in ["C", "I", "P", "N", "c", "yes", "YES", "no", "true", "False", "0.25", " 7 ", "-2", "1e-1", "inf",
              "nan", "n/a", "", True, False, 0, 1, 3, 0.5, -1.5]:
        assert value_to_float(v) == theirs(v), v


def test_declines_what_it_does_not_know(tmp_path):
    log = next(me.datasets.path("llm_inspect_logs").glob("*.eval"))
    assert read_log_fast(log) is not None
    running = tmp_path / "running.eval"  # no header.json: a log still running
    with zipfile.ZipFile(log) as src, log.open("rb") as fh, zipfile.ZipFile(running, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename != "header.json":
                dst.writestr(info.filename, _entry(fh, info))
    assert read_log_fast(running) is None
    with zipfile.ZipFile(running, "a", zipfile.ZIP_DEFLATED) as dst:  # an unknown log format version
        dst.writestr("header.json", b'{"version": 1, "eval": {}}')
    assert read_log_fast(running) is None
    assert read_log_fast(tmp_path / "log.json") is None


def test_reading_bundled_logs_imports_no_inspect_ai():
    code = ("import sys, mixedeval as me\n"
            "logs = me.read_eval_logs(me.datasets.path('llm_inspect_logs'), metric='match')\n"
            "print(len(logs.table), 'inspect_ai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout.split()
    assert out == ["1080", "False"]


def test_the_archive_check_keeps_the_entries_so_nothing_is_inflated_twice(monkeypatch):
    """read_eval_logs inflates each entry of an .eval once: the zip-bomb check keeps the entries
    the fast reader reads (equal to the archive's own), and the reader inflates none again."""
    import zipfile

    from mixedeval.data import _logs_inspect_fast as fast
    from mixedeval.data._logs_zip import check_eval_archive

    log = next(me.datasets.path("llm_inspect_logs").glob("*.eval"))
    kept = check_eval_archive(log, fast.wanted)
    with zipfile.ZipFile(log) as zf, log.open("rb") as fh:  # the reference: each entry inflated on its own
        assert kept == {i.filename: _entry(fh, i) for i in zf.infolist() if fast.wanted(i.filename)}
    assert "header.json" in kept and any(n.startswith("samples/") for n in kept)
    ref = me.read_eval_logs(log)

    def no_second_inflation(*a, **k):
        raise AssertionError("an entry inflated twice")
    monkeypatch.setattr(fast, "_entry", no_second_inflation)
    pd.testing.assert_frame_equal(me.read_eval_logs(log).table, ref.table)
