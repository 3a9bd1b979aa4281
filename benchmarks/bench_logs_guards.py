"""Benchmark of the guards of ``me.read_eval_logs`` against huge and hostile logs (issue 26.4):
the memory factors the guards assume, measured against a baseline in the same run, and the
time the guards add.

1. Tables (``format="table"``): the peak resident memory ``read_eval_logs`` adds while reading a
   long CSV and the same table as Parquet (a child process each, ``ru_maxrss`` minus the
   resident size before the read), as ratios to the baseline: the CSV's size in bytes, the
   Parquet metadata's cells (rows x columns) and uncompressed bytes. Compare with
   ``_logs_table.TEXT_TABLE_FACTOR``, ``PARQUET_CELL_BYTES`` and ``PARQUET_FACTOR``.
2. JSON: the peak memory (tracemalloc) of reading and parsing a HELM ``per_instance_stats.json``
   and an lm-eval samples file, as a ratio to the file size. Compare with
   ``_logs_json.JSON_MEMORY_FACTOR``.
3. Inspect ``.eval``: the peak memory of inspect_ai's ``read_eval_log`` as a ratio to the
   declared inflated size of the archive (``JSON_MEMORY_FACTOR`` again), and the time of the
   zip-bomb check (``_logs_zip.check_eval_archive``, one extra inflation) as a ratio to the time
   of ``read_eval_log``.
4. Globs: the symlink-safe walk (``_logs_walk.glob_files``) against ``glob.glob`` on a tree
   without links (time ratio), and the walk on the same tree with two symlink loops.

    .venv/bin/python benchmarks/bench_logs_guards.py [--rows 400000] [--samples 2000]
"""
from __future__ import annotations

import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd


def _arg(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(path: str) -> None:
    """Run in a child process: print the peak resident bytes read_eval_logs added."""
    import mixedeval as me
    from mixedeval.data import _logs  # noqa: F401 - imports done before the baseline
    import pyarrow.parquet  # noqa: F401

    me.set_memory_limit("none")
    before = _rss()
    me.read_eval_logs(path, format="table")
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before)


def _peak_child(path: Path) -> int:
    out = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def bench_tables(tmp: Path, n: int) -> None:
    from mixedeval.data import _logs_table as lt
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"system": np.repeat(["sysA", "sysB"], n // 2), "item": np.tile([f"item{i}" for i in
                                                                                       range(n // 2)], 2),
                       "metric": "acc", "score": rng.integers(0, 2, n).astype(float)})
    csv, parquet = tmp / "long.csv", tmp / "long.parquet"
    df.to_csv(csv, index=False)
    df.to_parquet(parquet)
    size = csv.stat().st_size
    peak = _peak_child(csv)
    print(f"1. tables, a long table of {n:,} rows x 4 columns")
    print(f"  CSV: {size / 1e6:.1f} MB (baseline); read_eval_logs peak {peak / 1e6:.0f} MB = {peak / size:.1f} x the "
          f"file (TEXT_TABLE_FACTOR = {lt.TEXT_TABLE_FACTOR})")
    md = pq.ParquetFile(parquet).metadata
    cells = md.num_rows * md.num_columns
    unc = sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
    peak = _peak_child(parquet)
    print(f"  Parquet: {cells:,} cells, {unc / 1e6:.1f} MB uncompressed (baselines); peak {peak / 1e6:.0f} MB = "
          f"{peak / cells:.0f} bytes per cell (PARQUET_CELL_BYTES = {lt.PARQUET_CELL_BYTES}), "
          f"{peak / unc:.1f} x uncompressed (PARQUET_FACTOR = {lt.PARQUET_FACTOR}, the floor for long strings)")


def _json_peak(path: Path, lines: bool) -> float:
    tracemalloc.start()
    raw = path.read_bytes()
    obj = [json.loads(ln) for ln in raw.decode().splitlines()] if lines else json.loads(raw.decode())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del obj
    return peak / len(raw)


def bench_json(tmp: Path) -> None:
    from mixedeval.data._logs_json import JSON_MEMORY_FACTOR

    stats = [{"instance_id": f"id{i}", "train_trial_index": 0, "stats": [
        {"name": {"name": m, "split": "test"}, "count": 1, "sum": 1.0, "sum_squared": 1.0, "min": 1.0, "max": 1.0,
         "mean": 1.0, "variance": 0.0, "stddev": 0.0} for m in ("exact_match", "quasi_exact_match", "num_tokens")]}
             for i in range(20_000)]
    helm = tmp / "per_instance_stats.json"
    helm.write_text(json.dumps(stats, indent=2))
    lm = tmp / "samples.jsonl"
    lm.write_text("".join(json.dumps({"doc_id": i, "doc": {"question": f"question {i}", "choices": ["a", "b"]},
                                      "target": "a", "resps": [[["-1.5", "False"]]], "filter": "none",
                                      "metrics": ["acc"], "doc_hash": "d" * 64, "acc": 1.0}) + "\n"
                          for i in range(20_000)))
    print("2. JSON: peak memory of reading + parsing per byte of the file (baseline: the file size)")
    print(f"  HELM per_instance_stats.json ({helm.stat().st_size / 1e6:.1f} MB): {_json_peak(helm, False):.1f} x; "
          f"lm-eval samples ({lm.stat().st_size / 1e6:.1f} MB): {_json_peak(lm, True):.1f} x "
          f"(JSON_MEMORY_FACTOR = {JSON_MEMORY_FACTOR})")


def bench_inspect(tmp: Path, n: int) -> None:
    import zipfile

    from inspect_ai.log import EvalLog, EvalSample, EvalSpec, read_eval_log, write_eval_log
    from inspect_ai.log._log import EvalConfig, EvalDataset
    from inspect_ai.scorer import Score

    from mixedeval.data._logs_json import JSON_MEMORY_FACTOR
    from mixedeval.data._logs_zip import check_eval_archive

    spec = EvalSpec(created="2024-06-01T10:15:30+00:00", task="bench", dataset=EvalDataset(name="bench"),
                    model="mockllm/model", config=EvalConfig())
    samples = [EvalSample(id=f"s{i}", epoch=1, input=f"question {i} " * 20, target="a",
                          scores={"match": Score(value="C" if i % 2 else "I")}) for i in range(n)]
    path = tmp / "bench.eval"
    write_eval_log(EvalLog(eval=spec, samples=samples, status="success"), str(path))
    with zipfile.ZipFile(path) as zf:
        declared = sum(i.file_size for i in zf.infolist())
    t = time.perf_counter()
    tracemalloc.start()
    read_eval_log(str(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    t_read = time.perf_counter() - t
    t = time.perf_counter()
    check_eval_archive(path)
    t_check = time.perf_counter() - t
    print(f"3. Inspect .eval, {n:,} samples, {path.stat().st_size / 1e6:.1f} MB, {declared / 1e6:.1f} MB inflated "
          "(baseline)")
    print(f"  read_eval_log peak {peak / declared:.1f} x the inflated size (JSON_MEMORY_FACTOR = "
          f"{JSON_MEMORY_FACTOR}); zip-bomb check {t_check:.3f} s = {t_check / t_read:.2f} x read_eval_log's "
          f"{t_read:.2f} s")


def bench_glob(tmp: Path) -> None:
    from mixedeval.data._logs_walk import glob_files

    root = tmp / "logs"
    for a in range(20):
        for b in range(20):
            d = root / f"m{a}" / f"run{b}"
            d.mkdir(parents=True)
            for k in range(5):
                (d / f"samples_t{k}_2024-06-01T10-00-00.jsonl").write_text("{}\n")
    pattern = str(root / "**" / "*.jsonl")
    t = time.perf_counter()
    base = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
    t_glob = time.perf_counter() - t
    t = time.perf_counter()
    ours = glob_files(pattern)
    t_walk = time.perf_counter() - t
    assert [str(p) for p in ours] == base
    os.symlink("..", root / "m0" / "up")
    os.symlink("../..", root / "m1" / "run0" / "up")
    t = time.perf_counter()
    looped = glob_files(pattern)
    t_loop = time.perf_counter() - t
    print(f"4. globs, {len(base):,} files in 400 directories: glob.glob {t_glob:.3f} s (baseline), the walk "
          f"{t_walk:.3f} s = {t_walk / t_glob:.2f} x; with two symlink loops the walk takes {t_loop:.3f} s "
          f"({len(looped):,} files; glob.glob would not return)")


def main() -> None:
    if "--child" in sys.argv:
        child(sys.argv[sys.argv.index("--child") + 1])
        return
    with tempfile.TemporaryDirectory() as tmp:
        bench_tables(Path(tmp), _arg("--rows", 400_000))
        bench_json(Path(tmp))
        bench_inspect(Path(tmp), _arg("--samples", 2000))
        bench_glob(Path(tmp))


if __name__ == "__main__":
    main()
