"""Malformed, hostile and huge evaluation logs (issue 26, points 3 and 4): every fixture is built
here in tmp_path; each read must end in a DataError naming the file and the place in it (never a
raw TypeError / UnicodeDecodeError / RecursionError / ArrowCapacityError, never gigabytes of
memory, never a hang), and the CLI must exit 2 on them."""
from __future__ import annotations

import glob
import json
import os
import re
import struct
import sys
import time
import tracemalloc
import zipfile
from pathlib import Path

import pandas as pd
import pytest

import mixedeval as me
from mixedeval._resources import format_bytes
from mixedeval.cli import main
from mixedeval.data import _logs_walk
from mixedeval.data._logs_json import JSON_MEMORY_FACTOR

DATE = "2024-06-01T10-00-00.000001"


@pytest.fixture(autouse=True)
def _reset_memory_limit():
    me.set_memory_limit(None)
    yield
    me.set_memory_limit(None)


def _sample(doc_id: int, acc: float = 1.0, **over) -> dict:
    rec = {"doc_id": doc_id, "doc": {"q": f"q{doc_id}"}, "filter": "none", "metrics": ["acc"], "acc": acc,
           "doc_hash": f"h{doc_id}"}
    rec.update(over)
    return rec


def _lm_dir(tmp_path: Path, lines: list | None = None, results: object = None,
            model: str = "org/model") -> tuple[Path, Path, Path]:
    """A model directory with results_<date>.json and samples_boolq_<date>.jsonl (valid by default);
    ``lines``: the samples lines (dicts are dumped, bytes/str written as they are)."""
    d = tmp_path / "out" / model.replace("/", "__")
    d.mkdir(parents=True)
    res = d / f"results_{DATE}.json"
    header = {"model_name": model, "config": {"model_args": "pretrained=org/model"},
              "versions": {"boolq": 2}, "n-shot": {"boolq": 0}} if results is None else results
    res.write_bytes(header if isinstance(header, bytes) else json.dumps(header).encode())
    lines = [_sample(i, float(i % 2)) for i in range(4)] if lines is None else lines
    raw = b"".join((ln if isinstance(ln, bytes) else (ln if isinstance(ln, str) else json.dumps(ln)).encode())
                   + b"\n" for ln in lines)
    samples = d / f"samples_boolq_{DATE}.jsonl"
    samples.write_bytes(raw)
    return d, res, samples


def _fails(source, *parts: str, **kw) -> str:
    """read_eval_logs(source) raises a DataError whose message holds every one of ``parts``."""
    with pytest.raises(me.DataError) as ei:
        me.read_eval_logs(source, **kw)
    msg = str(ei.value)
    for p in parts:
        assert p in msg, f"{p!r} not in {msg!r}"
    return msg


# ------------------------------------------------------------------------------ lm-eval
def test_valid_lm_eval_fixture_reads(tmp_path):
    d, _, _ = _lm_dir(tmp_path)
    t = me.read_eval_logs(d).table
    assert list(t["score"]) == [0.0, 1.0, 0.0, 1.0] and set(t["system"]) == {"org/model"}


def test_lm_eval_non_utf8_byte_names_its_offset(tmp_path):
    good = json.dumps(_sample(0)).encode() + b"\n"
    bad = json.dumps(_sample(1, doc={"q": "caf\u00e9"})).encode().replace(b"caf\\u00e9", b"caf\xff")
    d, _, samples = _lm_dir(tmp_path, [good.rstrip(b"\n"), bad])
    offset = samples.read_bytes().index(b"\xff")  # independent: where the byte really is
    assert offset > len(good)
    _fails(d, str(samples), f"at byte {offset} line 2", "0xff", "not UTF-8")


@pytest.mark.parametrize("value, found", [(5, "the number 5"), (None, "null"), ("acc", "the string 'acc'"),
                                          ([1], "the number 1")])
def test_lm_eval_metrics_of_the_wrong_shape(tmp_path, value, found):
    d, _, samples = _lm_dir(tmp_path, [_sample(0), _sample(1, metrics=value)])
    at = "line 2, $.metrics[0]" if isinstance(value, list) else "line 2, $.metrics"
    _fails(d, str(samples), f"at {at}: expected", found)


def test_lm_eval_missing_doc_id_and_non_object_line(tmp_path):
    rec = _sample(0)
    del rec["doc_id"]
    d, _, samples = _lm_dir(tmp_path, [rec])
    _fails(d, str(samples), "at line 1, $.doc_id: expected the key 'doc_id'", "found no such key")
    d2, _, s2 = _lm_dir(tmp_path / "b", [_sample(0), [1, 2]])
    _fails(d2, str(s2), "at line 2, $: expected an object with key(s) doc_id, metrics, found a list of 2")


def test_lm_eval_deeply_nested_line_is_a_data_error(tmp_path):
    d, _, samples = _lm_dir(tmp_path, [_sample(0), "[" * 100_000])
    _fails(d, str(samples), "line 2", "nested too deeply")


def test_lm_eval_invalid_json_line_and_column(tmp_path):
    d, _, samples = _lm_dir(tmp_path, [_sample(0), '{"doc_id": 1, "metrics": ["acc"], "acc": 1.0'])
    line2 = samples.read_text().splitlines()[1]
    msg = _fails(d, str(samples), "at line 2 column", "not valid JSON")
    col = int(re.search(r"line 2 column (\d+)", msg).group(1))
    with pytest.raises(json.JSONDecodeError) as ei:  # independent: where json itself stops
        json.loads(line2)
    assert col == ei.value.colno


@pytest.mark.parametrize("results, at, found", [
    ([1, 2], "at $: expected an object", "a list of 2"),
    ({"versions": ["boolq"]}, "at $.versions: expected an object of task versions", "a list of 1"),
    ({"config": ["x"]}, "at $.config: expected an object or null", "a list of 1"),
    ({"configs": {"boolq": [1]}}, "at $.configs.boolq: expected an object (the task's config) or null", "a list"),
    ({"n-shot": 0}, "at $['n-shot']: expected an object of task n-shots", "the number 0"),
    ({"config": {"model_args": 3}}, "at $.config.model_args: expected a string or an object of arguments",
     "the number 3"),
])
def test_lm_eval_results_file_of_the_wrong_shape(tmp_path, results, at, found):
    d, res, _ = _lm_dir(tmp_path, results=results)
    _fails(d, str(res), "an lm-evaluation-harness results file", at, found)


def test_lm_eval_results_file_not_utf8_or_not_json(tmp_path):
    d, res, _ = _lm_dir(tmp_path, results=b'{"model_name": "m\xfe"}')
    _fails(d, str(res), f"at byte {res.read_bytes().index(bytes([0xFE]))}", "0xfe")
    d2, res2, _ = _lm_dir(tmp_path / "b", results=b'{"model_name": ')
    _fails(d2, str(res2), "at line 1 column 16", "not valid JSON")


def test_lm_eval_line_longer_than_the_memory_limit_allows(tmp_path):
    big = _sample(1, doc={"q": "x" * 3_000_000})
    d, _, samples = _lm_dir(tmp_path, [_sample(0), big])
    assert len(me.read_eval_logs(d).table) == 2  # fine under the default limit
    me.set_memory_limit("8MiB")  # 8 MiB / JSON_MEMORY_FACTOR (10) per byte: lines up to 0.8 MiB
    _fails(d, str(samples), "reading line 2 (at byte", "above mixedeval's memory limit")


def test_lm_eval_huge_line_without_newline_is_refused_without_reading_it(tmp_path):
    d, _, samples = _lm_dir(tmp_path, [_sample(0)])
    with samples.open("ab") as fh:  # a sparse gigabyte of NUL bytes, no newline
        fh.truncate(samples.stat().st_size + (1 << 30))
    if samples.stat().st_blocks * 512 > (1 << 28):
        pytest.skip("the filesystem does not make sparse files")
    me.set_memory_limit("64MiB")
    tracemalloc.start()
    try:
        _fails(d, str(samples), "line 2", "above mixedeval's memory limit")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20  # read at most the 6.4 MiB cap, not the gigabyte


# ------------------------------------------------------------------------------ HELM
def _stat(name: str, mean: float) -> dict:
    return {"name": {"name": name, "split": "test"}, "count": 1, "sum": mean, "mean": mean}


def _helm_dir(tmp_path: Path, stats: object = None, spec: object = None) -> tuple[Path, Path, Path]:
    d = tmp_path / "benchmark_output" / "runs" / "v1" / "boolq:model=org_m"
    d.mkdir(parents=True)
    spec = {"name": "boolq:model=org/m", "scenario_spec": {"class_name": "B", "args": {}},
            "adapter_spec": {"method": "generation", "model": "org/m"}} if spec is None else spec
    stats = [{"instance_id": f"id{i}", "train_trial_index": 0, "stats": [_stat("exact_match", i % 2)]}
             for i in range(3)] if stats is None else stats
    (d / "run_spec.json").write_text(json.dumps(spec))
    (d / "per_instance_stats.json").write_text(json.dumps(stats))
    return d, d / "run_spec.json", d / "per_instance_stats.json"


def test_valid_helm_fixture_reads(tmp_path):
    d, _, _ = _helm_dir(tmp_path)
    t = me.read_eval_logs(d).table
    assert list(t["score"]) == [0.0, 1.0, 0.0] and set(t["system"]) == {"org/m"}


@pytest.mark.parametrize("spec, at, found", [
    ([{"name": "x"}], "at $: expected an object", "a list of 1"),
    ({"name": "b", "adapter_spec": ["model"]}, "at $.adapter_spec: expected an object or null", "a list of 1"),
    ({"name": "b", "scenario_spec": {"args": [1]}}, "at $.scenario_spec.args: expected an object of arguments",
     "a list"),
    ({"name": 5}, "at $.name: expected a string", "the number 5"),
])
def test_helm_run_spec_of_the_wrong_shape(tmp_path, spec, at, found):
    d, spec_path, _ = _helm_dir(tmp_path, spec=spec)
    _fails(d, str(spec_path), "a HELM run spec", at, found)


def _perturbed(stats: object) -> dict:
    return {"instance_id": "id0", "train_trial_index": 0, "perturbation": {"name": "typos"}, "stats": stats}


@pytest.mark.parametrize("stats, at, found", [
    ({"instance_id": "id0"}, "at $: expected a list", "an object (keys: instance_id)"),
    ([{"instance_id": "id0", "stats": 5}], "at $[0].stats: expected a list", "the number 5"),
    ([{"instance_id": "id0", "stats": ["abc"]}], "at $[0].stats[0]: expected an object with key(s) name",
     "the string 'abc'"),
    ([{"instance_id": "id0", "train_trial_index": "1", "stats": []}],
     "at $[0].train_trial_index: expected an integer or null", "the string '1'"),
    ([{"instance_id": "id0", "stats": []}, _perturbed(None)], "at $[1].stats: expected a list", "null"),
    ([{"instance_id": "id0", "stats": [{"name": {"split": "test"}}]}],
     "at $[0].stats[0].name.name: expected the key 'name'", "no such key"),
    ([{"stats": []}], "at $[0].instance_id: expected the key 'instance_id'", "no such key"),
    ([{"instance_id": "id0", "stats": [{"name": {"name": "em"}, "mean": "0.5"}]}],
     "at $[0].stats[0].mean: expected a number or null", "the string '0.5'"),
])
def test_helm_per_instance_stats_of_the_wrong_shape(tmp_path, stats, at, found):
    d, _, stats_path = _helm_dir(tmp_path, stats=stats)
    _fails(d, str(stats_path), "HELM per-instance stats", at, found)


def test_helm_instances_json_of_the_wrong_shape(tmp_path):
    d, _, _ = _helm_dir(tmp_path)
    (d / "instances.json").write_text(json.dumps([{"id": "id0", "split": "test"}, "id1"]))
    _fails(d, str(d / "instances.json"), "at $[1]: expected an object", "the string 'id1'", metadata=["split"])


def test_helm_stats_not_utf8_and_deeply_nested(tmp_path):
    d, _, stats_path = _helm_dir(tmp_path)
    raw = stats_path.read_bytes().replace(b"exact_match", b"exact\x80match", 1)
    stats_path.write_bytes(raw)
    _fails(d, str(stats_path), f"at byte {raw.index(bytes([0x80]))}", "0x80")
    stats_path.write_text("[" * 100_000)
    _fails(d, str(stats_path), "nested too deeply")


def test_helm_file_larger_than_the_memory_limit(tmp_path):
    stats = [{"instance_id": f"id{i}", "stats": [_stat("exact_match", 1.0)]} for i in range(20_000)]
    d, _, stats_path = _helm_dir(tmp_path, stats=stats)
    size = stats_path.stat().st_size
    me.set_memory_limit(size * JSON_MEMORY_FACTOR - 1)  # just below the estimate
    _fails(d, str(stats_path), "reading the whole JSON file would need about", "above mixedeval's memory limit")
    me.set_memory_limit(size * JSON_MEMORY_FACTOR + 10_000_000)
    assert len(me.read_eval_logs(d).table) == 20_000


# ------------------------------------------------------------------------------ Inspect .eval archives
def _zip(path: Path, entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


def _declare_size(path: Path, name: str, size: int) -> None:
    """Rewrite the inflated size an archive declares for entry ``name`` (local header and central
    directory), leaving the compressed data as it is: a lying header."""
    raw = bytearray(path.read_bytes())
    enc = name.encode()
    for sig, size_at, name_at in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
        pos = raw.find(sig)
        while pos >= 0 and raw[pos + name_at:pos + name_at + len(enc)] != enc:
            pos = raw.find(sig, pos + 1)
        assert pos >= 0
        raw[pos + size_at:pos + size_at + 4] = struct.pack("<I", size)
    path.write_bytes(bytes(raw))
    with zipfile.ZipFile(path) as zf:  # independent: zipfile itself now sees the lie
        assert zf.getinfo(name).file_size == size


HEADER = json.dumps({"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}}).encode()


def _import_inspect() -> None:
    """Import inspect_ai before measuring memory (its import alone allocates tens of MB)."""
    pytest.importorskip("inspect_ai.log")
    pytest.importorskip("inspect_ai.scorer")


def test_eval_zip_bomb_declared_large_is_refused_before_inflating(tmp_path):
    _import_inspect()
    bomb = _zip(tmp_path / "bomb.eval", {"header.json": HEADER, "samples/1_epoch_1.json": b"\0" * (64 << 20)})
    assert bomb.stat().st_size < 1 << 20  # highly compressible: 64 MiB in under 1 MiB
    me.set_memory_limit("256MiB")  # 64 MiB x JSON_MEMORY_FACTOR is above it
    tracemalloc.start()
    try:
        _fails(bomb, str(bomb), "its 2 entries as declared", "'samples/1_epoch_1.json'", "64.0 MiB",
               "above mixedeval's memory limit")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # nothing was inflated


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, 93], ids=["deflate", "zstd"])
def test_eval_entry_whose_declared_size_lies_is_stopped_early(tmp_path, method):
    _import_inspect()
    if method == 93:
        pytest.importorskip("zstandard")
        pytest.importorskip("inspect_ai._util.zipfile")  # registers zstd with zipfile (Python < 3.14)
    bomb = _zip(tmp_path / "liar.eval", {"header.json": HEADER, "samples/1_epoch_1.json": b"\0" * (256 << 20)},
                method)
    _declare_size(bomb, "samples/1_epoch_1.json", 1000)
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        _fails(bomb, str(bomb), "at entry 'samples/1_epoch_1.json'", "more than the 1000 B its header declares")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # stopped after the first chunk, not after 256 MiB
    assert time.perf_counter() - t0 < 20


def test_eval_entry_shorter_than_declared_and_not_a_zip(tmp_path):
    short = _zip(tmp_path / "short.eval", {"header.json": HEADER, "samples/1_epoch_1.json": b"{}" * 1000})
    _declare_size(short, "samples/1_epoch_1.json", 5000)
    _fails(short, str(short), "at entry 'samples/1_epoch_1.json'", "less than the")
    junk = tmp_path / "junk.eval"
    junk.write_bytes(b"PK\x03\x04 this is not an archive")
    _fails(junk, str(junk), "not a readable Inspect .eval archive")


def test_inspect_json_log_larger_than_the_memory_limit(tmp_path):
    pytest.importorskip("inspect_ai")
    log = tmp_path / "big.json"
    log.write_text(json.dumps({"version": 2, "eval": {"task": "t"}, "samples": [{"x": "y" * 2_000_000}]}))
    me.set_memory_limit("8MiB")
    _fails(log, str(log), "reading the whole JSON log would need about", "above mixedeval's memory limit")


# ------------------------------------------------------------------------------ tables
def test_table_larger_than_the_memory_limit(tmp_path):
    csv = tmp_path / "scores.csv"
    pd.DataFrame({"system": ["a", "b"] * 20_000, "item": [str(i // 2) for i in range(40_000)],
                  "metric": "acc", "score": 1.0}).to_csv(csv, index=False)
    assert len(me.read_eval_logs(csv, format="table").table) == 40_000
    me.set_memory_limit(csv.stat().st_size * 30 - 1)  # TEXT_TABLE_FACTOR
    _fails(csv, str(csv), "reading the table would need about", f"{format_bytes(csv.stat().st_size)} of text x 30",
           format="table")
    pq = tmp_path / "scores.parquet"
    pd.read_csv(csv).to_parquet(pq)
    me.set_memory_limit(40_000 * 4 * 200 - 1)  # rows x columns x PARQUET_CELL_BYTES
    _fails(pq, str(pq), "160,000 cells x 200 bytes", "above mixedeval's memory limit", format="table")


def test_sparse_multi_gigabyte_csv_is_refused_before_reading(tmp_path):
    csv = tmp_path / "sparse.csv"
    csv.write_text("system,item,metric,score\na,1,acc,1\n")
    with csv.open("ab") as fh:
        fh.truncate(2 << 30)
    if csv.stat().st_blocks * 512 > (1 << 28):
        pytest.skip("the filesystem does not make sparse files")
    me.set_memory_limit("4GiB")
    t0 = time.perf_counter()
    _fails(csv, str(csv), "reading the table would need about", "2.0 GiB of text x 30", format="table")
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("exc", ["arrow", "memory"])
def test_table_reader_running_out_of_memory_or_arrow_capacity(tmp_path, monkeypatch, exc):
    pa = pytest.importorskip("pyarrow")
    csv = tmp_path / "scores.csv"
    csv.write_text("system,item,metric,score\na,1,acc,1\n")
    from mixedeval.data import _logs_table

    def boom(path):
        raise pa.lib.ArrowCapacityError("array cannot contain more than 2147483646 bytes") if exc == "arrow" \
            else MemoryError()
    monkeypatch.setattr(_logs_table, "read_table", boom)
    _fails(csv, str(csv), "ArrowCapacityError" if exc == "arrow" else "ran out of memory", format="table")


# ------------------------------------------------------------------------------ globs and directories
def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    _lm_dir(root / "a")
    _lm_dir(root / "b" / "deep", model="org/other")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "x.jsonl").write_text("{}\n")
    (root / "a" / ".dot.jsonl").write_text("{}\n")
    (root / "notes.txt").write_text("x")
    return root


@pytest.mark.parametrize("pattern", ["**/*.jsonl", "**/samples_*.jsonl", "*/out/*/*.json", "**", "*/*/*/*",
                                     "b/**/org__other/*", "a/out/org__model/results_????-*.json", "[ab]/**/*.json*",
                                     ".hidden/*", "**/.dot.jsonl"])
def test_glob_walk_matches_python_glob_without_links(tmp_path, pattern):
    root = _tree(tmp_path)
    expected = sorted(Path(p) for p in glob.glob(str(root / pattern), recursive=True) if Path(p).is_file())
    assert _logs_walk.glob_files(str(root / pattern)) == expected
    assert expected


def test_symlink_loops_end_quickly_and_each_log_is_read_once(tmp_path):
    root = _tree(tmp_path)
    try:
        os.symlink("..", root / "a" / "up")  # a/up -> logs
        os.symlink("../..", root / "b" / "deep" / "up2")  # b/deep/up2 -> logs
        os.symlink(root, root / "self")
    except (OSError, NotImplementedError):
        pytest.skip("no symlinks here")
    t0 = time.perf_counter()
    files = _logs_walk.glob_files(str(root / "**" / "*.jsonl"))
    assert time.perf_counter() - t0 < 5
    assert {f.resolve() for f in files} == {p.resolve() for p in root.glob("[ab]/**/samples_*.jsonl")}
    assert len({f.resolve() for f in files}) == len(files) == 2
    logs = me.read_eval_logs(str(root / "**" / "*.jsonl"))
    assert logs.table["source"].nunique() == 2 and logs.warnings == ()
    assert len(me.read_eval_logs(root).table) == 8  # the directory itself: 2 files x 4 docs, read once each
    assert time.perf_counter() - t0 < 20


def test_too_many_files_is_a_data_error(tmp_path, monkeypatch):
    for i in range(6):
        (tmp_path / f"f{i}.jsonl").write_text("{}\n")
    monkeypatch.setattr(_logs_walk, "MAX_FILES", 5)
    _fails(str(tmp_path / "*.jsonl"), "gives more than 5 files")
    _fails(tmp_path, "gives more than 5 files")


# ------------------------------------------------------------------------------ the command line
@pytest.mark.parametrize("command", ["summarize", "compare-logs"])
def test_cli_exits_2_on_malformed_logs(tmp_path, capsys, command):
    d, _, samples = _lm_dir(tmp_path, [_sample(0), _sample(1, metrics=5)])
    assert main([command, str(d), "--metric", "acc"]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and str(samples) in err and "line 2, $.metrics" in err
    h, _, stats = _helm_dir(tmp_path / "h", stats=[{"instance_id": "id0", "stats": ["abc"]}])
    assert main([command, str(h), "--metric", "exact_match"]) == 2
    assert "$[0].stats[0]" in capsys.readouterr().err


def test_cli_exits_2_on_a_zip_bomb_subprocess(tmp_path):
    import subprocess

    bomb = _zip(tmp_path / "bomb.eval", {"header.json": HEADER, "samples/1_epoch_1.json": b"\0" * (32 << 20)})
    env = {**os.environ, "MIXEDEVAL_MEMORY_LIMIT": "64MiB", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    r = subprocess.run([sys.executable, "-m", "mixedeval.cli", "summarize", str(bomb), "--metric", "match"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2, r.stderr
    assert str(bomb) in r.stderr and "above mixedeval's memory limit" in r.stderr


# ------------------------------------------------------------------------------ odd corners
def test_running_out_of_memory_while_parsing_is_a_data_error(tmp_path, monkeypatch):
    d, res, _ = _lm_dir(tmp_path)

    def no_memory(*a, **k):
        raise MemoryError()
    monkeypatch.setattr(json, "loads", no_memory)
    _fails(d, str(res), "ran out of memory while parsing")


def test_eval_entry_of_an_unknown_compression_and_a_broken_inspect_json(tmp_path):
    pytest.importorskip("inspect_ai")
    odd = _zip(tmp_path / "odd.eval", {"header.json": HEADER}, zipfile.ZIP_BZIP2)
    _fails(odd, str(odd), "at entry 'header.json'", "cannot be inflated", "compression method 12")
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": 2, "eval": {"task": "t", "model": ')
    _fails(broken, "inspect_ai could not read", str(broken))
