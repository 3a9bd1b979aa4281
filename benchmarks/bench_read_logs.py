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
(``mixedeval/data/_logs_schema.py``), which made reading 1.84x slower when it came in (c8092c4).
The pre-validation reader is re-created here: ``prevalidation_read_samples_file`` is
``read_samples_file`` and ``_results_header`` of ``mixedeval/data/_logs_lmeval.py`` as they were
at c8092c4^ (text-mode line iteration, ``json.loads`` per line, only ``doc_id`` / ``metrics``
looked up), copied verbatim; it is swapped in for the current one inside the same
``me.read_eval_logs`` call (discovery, run labels, checks, the table: all as they run now), so the
ratio is the cost of the current reading of the samples files with their validation against
the reading before it. The same read is timed, interleaved, as it runs, with the pre-validation
reader and as it runs with the shape check switched off; goal: ~1x the pre-validation read.

    .venv/bin/python benchmarks/bench_read_logs.py [--inspect 10000] [--validation-only] [--quick] [--repeats 5]

``--quick``: 2 models x 5 tasks x 2,000 documents (20,000 samples) instead of 100,000.
"""
from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import mixedeval as me
from mixedeval.data import _logs, _logs_json, _logs_schema
from mixedeval.data._logs_lmeval import SAMPLES_RE, _fields, _model_name  # unchanged since c8092c4^
from mixedeval.data._logs_rows import metadata_column, scalar
from mixedeval.errors import DataError

MODELS, TASKS = 2, 5
DOCS = 2_000 if "--quick" in sys.argv else 10_000


# ------------------------------------------------------------------ the pre-validation reader
# mixedeval/data/_logs_lmeval.py at c8092c4^ (before the schema validation), copied verbatim.
def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, complex)


def _prevalidation_results_header(path, date):
    """The results_<date>.json beside a samples file ({} when there is none)."""
    res = path.parent / f"results_{date}.json"
    if not res.exists():
        return {}
    try:
        with res.open(encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError) as exc:
        raise DataError(f"could not read the lm-evaluation-harness results file {str(res)!r}: {exc}") from exc


def prevalidation_read_samples_file(path, rows, system=None, metadata=()):  # noqa: C901 - verbatim
    """Append the per-document scores of one samples_<task>_<date>.jsonl file to ``rows``;
    ``metadata`` names ``doc`` fields carried as columns (scalars; other values become None)."""
    m = SAMPLES_RE.match(path.name)
    if m is None:
        raise DataError(f"{str(path)!r} is not an lm-evaluation-harness samples file (samples_<task>_<date>.jsonl)")
    task, date = m.group("task"), m.group("date")
    header = _prevalidation_results_header(path, date)
    if not header:
        rows.note("lmeval_no_results", str(path))
    sysname = system if system is not None else _model_name(header, path)
    version = (header.get("versions") or {}).get(task)
    signature = json.dumps({"version": version}, sort_keys=True, default=str)  # n-shot: task_args.num_fewshot
    rows.fields = _fields(header, task, _model_name(header, path))
    src = str(path)
    items, metrics, scores, hashes, filters = [], [], [], [], []
    meta = {metadata_column(k): [] for k in metadata}
    try:
        fh = path.open(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"could not read {src!r}: {exc}") from exc
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                doc_id, names = rec["doc_id"], rec["metrics"]
            except (ValueError, KeyError, TypeError) as exc:
                raise DataError(f"{src!r} line {lineno} is not an lm-evaluation-harness sample record "
                                f"(doc_id, metrics, ...): {exc}") from exc
            filt = rec.get("filter", "none")
            for name in names:
                v = rec.get(name)
                if isinstance(v, bool) or _is_number(v):
                    items.append(str(doc_id))
                    metrics.append(name if filt in (None, "none") else f"{name},{filt}")
                    scores.append(float(v))
                    hashes.append(rec.get("doc_hash"))
                    filters.append(filt)
                    doc = rec.get("doc") if isinstance(rec.get("doc"), dict) else {}
                    for k in metadata:
                        meta[metadata_column(k)].append(scalar(doc.get(k)))
                else:
                    rows.note("non_numeric", f"{name!r} in {src} (doc_id {doc_id}): {str(v)[:60]}")
    rows.extend(sysname, task, items, metrics, scores, date, None, src, signature, hashes, filter=filters, **meta)


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
    inspect_inflations(path, _repeats())


def inspect_inflations(path: Path, repeats: int) -> None:
    """The .eval read as it runs (the zip-bomb check keeps the entries the fast reader parses:
    one inflation) against the way it ran before (the check inflating every entry, then the fast
    reader inflating them again) and without the check at all; interleaved, CPU-time medians."""
    from mixedeval.data import _logs_inspect, _logs_zip  # noqa: PLC0415

    real = _logs_inspect.check_eval_archive

    def check_then_inflate_again(p, keep=None):  # before: check everything, keep nothing
        _logs_zip.check_eval_archive(p)
        from mixedeval.data._logs_inspect_fast import _archive_entries  # noqa: PLC0415
        return _archive_entries(p) if keep is not None else {}

    def no_check(p, keep=None):
        from mixedeval.data._logs_inspect_fast import _archive_entries  # noqa: PLC0415
        return _archive_entries(p) if keep is not None else {}

    variants = {"as it runs (one inflation)": real, "check, then inflate again (before)": check_then_inflate_again,
                "no zip-bomb check (the reader inflating)": no_check}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for _ in range(repeats):
            for name, fn in variants.items():
                _logs_inspect.check_eval_archive = fn
                c = time.process_time()
                me.read_eval_logs(path)
                cpu[name].append(time.process_time() - c)
    finally:
        _logs_inspect.check_eval_archive = real
    base = statistics.median(cpu["check, then inflate again (before)"])
    print(f"  the .eval read, interleaved ({repeats} repeats, CPU-time medians):")
    for name, c in cpu.items():
        print(f"    {name:36s} {statistics.median(c):.2f} s  ({statistics.median(c) / base:.2f}x the read before)")


def _shape_check_off(values, spec, file, first_line, what=""):
    """validate_lines without the check: the same columns, unchecked."""
    return _logs_schema.columns_of(values, spec)


def validation_cost(root: Path, repeats: int = 5) -> float:
    """read_eval_logs as it runs, with the pre-validation samples reader and as it runs with the
    shape check off, interleaved, ``repeats`` times each; wall and CPU (process) time, the median
    of each. Returns the median CPU-time ratio of the read as it runs to the pre-validation read
    (CPU time: what the read costs, unaffected by other processes waiting for the cores)."""
    real_reader, real_check = _logs.read_samples_file, _logs_json.validate_lines
    base = "pre-validation reader (c8092c4^)"
    variants = {"as it runs (validated)": (real_reader, real_check),
                base: (prevalidation_read_samples_file, real_check),
                "as it runs, shape check off": (real_reader, _shape_check_off)}
    wall: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    tables = {}
    try:
        for _ in range(repeats):
            for name, (reader, check) in variants.items():
                _logs.read_samples_file, _logs_json.validate_lines = reader, check
                t, c = time.perf_counter(), time.process_time()
                logs = me.read_eval_logs(root)
                cpu[name].append(time.process_time() - c)
                wall[name].append(time.perf_counter() - t)
                tables[name] = logs.table
    finally:
        _logs.read_samples_file, _logs_json.validate_lines = real_reader, real_check
    cols = ["system", "task", "item", "run", "metric", "score"]
    for name, table in tables.items():  # the same scores read by every variant
        assert table[cols].equals(tables[base][cols]), name
    med = {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in variants}
    print(f"  schema validation, the same read_eval_logs interleaved ({repeats} repeats; medians of wall / CPU time):")
    for name, (w, c) in med.items():
        print(f"    {name:34s} {w:.2f} s / {c:.2f} s  ({w / med[base][0]:.2f}x / {c / med[base][1]:.2f}x the "
              f"pre-validation read)")
    ratio = med["as it runs (validated)"][1] / med[base][1]
    print(f"  reading as it runs / pre-validation reading: {ratio:.2f}x CPU time, "
          f"{med['as it runs (validated)'][0] / med[base][0]:.2f}x wall time (goal ~1x; 1.84x when the validation "
          f"came in, 1.08x last session)")
    return ratio


def _repeats() -> int:
    return int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 5


def main() -> None:
    rng = np.random.default_rng(0)
    if "--inspect-only" in sys.argv:  # e.g. --inspect-only 10000
        with tempfile.TemporaryDirectory() as tmp:
            bench_inspect(Path(tmp), int(sys.argv[sys.argv.index("--inspect-only") + 1]))
        return
    if "--validation-only" in sys.argv:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "out"
            n = write_lm_eval(root, rng)
            print(f"lm-eval --log_samples: {n:,} samples in {MODELS * TASKS} files")
            validation_cost(root, _repeats())
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
        validation_cost(root, _repeats())
        if "--inspect" in sys.argv:
            bench_inspect(Path(tmp), int(sys.argv[sys.argv.index("--inspect") + 1]))


if __name__ == "__main__":
    main()
