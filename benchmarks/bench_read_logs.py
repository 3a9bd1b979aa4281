"""Benchmark of ``me.read_eval_logs`` (issue 14 point 5): reading 100,000 logged samples.

Writes lm-evaluation-harness ``--log_samples`` output in a temporary directory -- 2 models x 5
tasks x 10,000 documents = 100,000 sample lines (each with the fields lm-eval logs: doc, target,
arguments, resps, filtered_resps, hashes, and two metrics, acc and acc_norm, so 200,000 score
rows) -- and reads it with ``me.read_eval_logs`` (discovery, parsing, run labels and every
check: duplicated ids, mixed tasks, metrics per system, missing items). Also times, in the same
run, the floor of parsing the same lines with ``json.loads`` alone, and reading the scores back
from a Parquet long table (``format="table"``). With ``--inspect N`` it also writes one Inspect
AI ``.eval`` log of N samples with inspect_ai's own writer and reads it (inspect_ai's reader
builds a pydantic object per sample, the bulk of the time; N = 10,000 keeps it to minutes).

Schema validation (issue 33): every JSON line is checked against the format's declared shape
(``mixedeval/data/_logs_schema.py``). The same read is timed, interleaved, with the validation as
it runs (a compiled predicate per shape; the path-building ``first_error`` only for a rejected
value), with ``first_error`` on every line (how it ran when reading became 1.84x slower), and with
no validation at all; the ratios to the last say what the validation costs (goal <= 1.10x).

    .venv/bin/python benchmarks/bench_read_logs.py [--inspect 10000] [--validation-only]
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import mixedeval as me
from mixedeval.data import _logs_json, _logs_schema

MODELS, TASKS, DOCS = 2, 5, 10_000


def write_lm_eval(root: Path, rng: np.random.Generator) -> int:
    date = "2024-06-01T10-15-30.123456"
    n = 0
    for m in range(MODELS):
        d = root / f"org__model-{m}"
        d.mkdir(parents=True)
        (d / f"results_{date}.json").write_text(json.dumps({
            "model_name": f"org/model-{m}", "versions": {f"task{t}": 1.0 for t in range(TASKS)},
            "n-shot": {f"task{t}": 0 for t in range(TASKS)}, "config": {"model_args": f"pretrained=org/model-{m}"}}))
        for t in range(TASKS):
            acc = rng.random(DOCS) < 0.5 + 0.05 * m
            with (d / f"samples_task{t}_{date}.jsonl").open("w") as fh:
                for i in range(DOCS):
                    doc = {"question": f"question {i} of task {t}", "choices": ["a", "b", "c", "d"], "answer": i % 4}
                    fh.write(json.dumps({
                        "doc_id": i, "doc": doc, "target": str(i % 4),
                        "arguments": {f"gen_args_{k}": {"arg_0": f"Question: {doc['question']}", "arg_1": f" {c}"}
                                      for k, c in enumerate(doc["choices"])},
                        "resps": [[[str(-1.5 - k), "False"]] for k in range(4)],
                        "filtered_resps": [[str(-1.5 - k), "False"] for k in range(4)],
                        "filter": "none", "metrics": ["acc", "acc_norm"],
                        "doc_hash": f"{t:02d}{i:062d}", "prompt_hash": "p" * 64, "target_hash": "t" * 64,
                        "acc": float(acc[i]), "acc_norm": float(acc[i] if i % 3 else 1 - acc[i])}) + "\n")
                    n += 1
    return n


def timed(fn, repeats: int = 3):
    best, out = np.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def json_floor(root: Path) -> int:
    rows = 0
    for f in sorted(root.rglob("samples_*.jsonl")):
        with f.open() as fh:
            for line in fh:
                rec = json.loads(line)
                rows += len(rec["metrics"])
    return rows


def bench_inspect(tmp: Path, n: int) -> None:
    from inspect_ai.log import EvalLog, EvalSample, EvalSpec, read_eval_log, write_eval_log  # noqa: PLC0415
    from inspect_ai.log._log import EvalConfig, EvalDataset  # noqa: PLC0415 - optional
    from inspect_ai.scorer import Score  # noqa: PLC0415 - optional

    spec = EvalSpec(created="2024-06-01T10:15:30+00:00", task="bench", dataset=EvalDataset(name="bench"),
                    model="mockllm/model", config=EvalConfig())
    samples = [EvalSample(id=f"s{i}", epoch=1, input="q", target="a", scores={"match": Score(value="C" if i % 2
                                                                                          else "I")})
               for i in range(n)]
    path = tmp / "bench.eval"
    t = time.perf_counter()
    write_eval_log(EvalLog(eval=spec, samples=samples, status="success"), str(path))
    t_write = time.perf_counter() - t
    print(f"Inspect .eval, {n:,} samples written by inspect_ai in {t_write:.1f} s", flush=True)
    t = time.perf_counter()
    read = read_eval_log(str(path))
    t_inspect = time.perf_counter() - t
    secs, logs = timed(lambda: me.read_eval_logs(path), repeats=1)
    assert len(logs.table) == len(read.samples) == n
    print(f"  me.read_eval_logs: {secs:.2f} s, {len(logs.table) / secs:,.0f} rows/s; inspect_ai's read_eval_log "
          f"alone: {t_inspect:.2f} s ({t_inspect / secs:.0%} of it)")


def validation_cost(root: Path, repeats: int = 3) -> None:
    """read_eval_logs with the validation as it runs, with first_error on every value (the old
    path) and without validation, interleaved; best of ``repeats`` each."""
    real_validate, real_predicate = _logs_json.validate, _logs_schema._predicate  # noqa: SLF001
    variants = {"compiled predicates (as it runs)": (real_validate, real_predicate),
                "first_error on every line (before)": (real_validate, lambda spec: lambda value: False),
                "no validation": (lambda value, *a, **k: value, real_predicate)}
    best = dict.fromkeys(variants, np.inf)
    try:
        for _ in range(repeats):
            for name, (val, pred) in variants.items():
                _logs_json.validate, _logs_schema._predicate = val, pred  # noqa: SLF001
                t = time.perf_counter()
                me.read_eval_logs(root)
                best[name] = min(best[name], time.perf_counter() - t)
    finally:
        _logs_json.validate, _logs_schema._predicate = real_validate, real_predicate  # noqa: SLF001
    base = best["no validation"]
    print(f"  schema validation, the same read interleaved (best of {repeats}):")
    for name, secs in best.items():
        print(f"    {name:38s} {secs:.2f} s  ({secs / base:.2f}x the read without validation)")
    print(f"  validation cost now: {best['compiled predicates (as it runs)'] / base:.2f}x (goal <= 1.10x; "
          f"first_error on every line: {best['first_error on every line (before)'] / base:.2f}x)")


def main() -> None:
    rng = np.random.default_rng(0)
    if "--inspect-only" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            bench_inspect(Path(tmp), int(sys.argv[sys.argv.index("--inspect-only") + 1]))
        return
    if "--validation-only" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "out"
            n = write_lm_eval(root, rng)
            print(f"lm-eval --log_samples: {n:,} samples in {MODELS * TASKS} files")
            validation_cost(root)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "out"
        n = write_lm_eval(root, rng)
        size = sum(f.stat().st_size for f in root.rglob("*")) / 1e6
        secs, logs = timed(lambda: me.read_eval_logs(root))
        rows = len(logs.table)
        floor, floor_rows = timed(lambda: json_floor(root))
        assert floor_rows == rows
        pq = Path(tmp) / "scores.parquet"
        logs.table[["system", "task", "item", "run", "metric", "score"]].to_parquet(pq)
        secs_pq, logs_pq = timed(lambda: me.read_eval_logs(pq))
        assert len(logs_pq.table) == rows
        print(f"lm-eval --log_samples: {n:,} samples in {MODELS * TASKS} files ({size:.0f} MB), {rows:,} score rows")
        print(f"  me.read_eval_logs: {secs:.2f} s (best of 3), {n / secs:,.0f} samples/s, {rows / secs:,.0f} rows/s")
        print(f"  floor (json.loads of the same lines, nothing else): {floor:.2f} s; read_eval_logs / floor = "
              f"{secs / floor:.2f}")
        print(f"  the same scores from a Parquet long table: {secs_pq:.2f} s, {rows / secs_pq:,.0f} rows/s")
        validation_cost(root)
        if "--inspect" in sys.argv:
            bench_inspect(Path(tmp), int(sys.argv[sys.argv.index("--inspect") + 1]))


if __name__ == "__main__":
    main()
