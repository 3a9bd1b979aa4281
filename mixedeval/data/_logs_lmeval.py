"""Reader of lm-evaluation-harness ``--log_samples`` output.

Layout written by ``EvaluationTracker`` (lm_eval/loggers/evaluation_tracker.py, lm-eval 0.4.x)::

    <output_path>/<model_name_sanitized>/results_<date_id>.json
    <output_path>/<model_name_sanitized>/samples_<task>_<date_id>.jsonl

``date_id = datetime.now().isoformat().replace(":", "-")`` is shared by the results file and the
samples files of one evaluation run, so each date id is one run. A samples line is the dict the
evaluator logs (lm_eval/evaluator.py): ``doc_id``, ``doc``, ``target``, ``arguments``,
``resps``, ``filtered_resps``, ``filter``, ``metrics`` (the names of the metric fields), the
hashes ``doc_hash``, ``prompt_hash``, ``target_hash``, and one field per metric (``"acc": 1.0``).
The results file gives the model name (``model_name``, else ``pretrained=`` in
``config.model_args``), and per task its ``versions`` and ``n-shot``.

Metric names follow lm-eval's results keys without the default filter: ``acc`` for filter
``none``, ``exact_match,strict-match`` for another filter. Metric values that are not numbers
(the (reference, prediction) pairs of corpus metrics such as lm-eval's bleu) are skipped and
counted in a warning.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import DataError
from ._logs_rows import Rows

SAMPLES_RE = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")


def is_samples_file(p: Path) -> bool:
    return SAMPLES_RE.match(p.name) is not None


def _results_header(path: Path, date: str) -> dict[str, Any]:
    """The results_<date>.json beside a samples file ({} when there is none)."""
    res = path.parent / f"results_{date}.json"
    if not res.exists():
        return {}
    try:
        with res.open(encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError) as exc:
        raise DataError(f"could not read the lm-evaluation-harness results file {str(res)!r}: {exc}") from exc


def _model_name(header: dict[str, Any], path: Path) -> str:
    name = header.get("model_name")
    if name:
        return str(name)
    args = str((header.get("config") or {}).get("model_args") or "")
    for key in ("peft=", "delta=", "pretrained=", "model=", "path=", "engine="):  # lm-eval's own order
        if key in args:
            return args.split(key)[1].split(",")[0]
    return path.parent.name  # the model_name_sanitized directory


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, complex)


def read_samples_file(path: Path, rows: Rows, system: str | None = None) -> None:
    """Append the per-document scores of one samples_<task>_<date>.jsonl file to ``rows``."""
    m = SAMPLES_RE.match(path.name)
    if m is None:
        raise DataError(f"{str(path)!r} is not an lm-evaluation-harness samples file (samples_<task>_<date>.jsonl)")
    task, date = m.group("task"), m.group("date")
    header = _results_header(path, date)
    if not header:
        rows.note("lmeval_no_results", str(path))
    sysname = system if system is not None else _model_name(header, path)
    version = (header.get("versions") or {}).get(task)
    nshot = (header.get("n-shot") or {}).get(task)
    signature = json.dumps({"version": version, "n_shot": nshot}, sort_keys=True, default=str)
    src = str(path)
    items, metrics, scores, hashes, filters = [], [], [], [], []
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
                else:
                    rows.note("non_numeric", f"{name!r} in {src} (doc_id {doc_id}): {str(v)[:60]}")
    rows.extend(sysname, task, items, metrics, scores, date, None, src, signature, hashes, filter=filters)
