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
``config.model_args``), and per task its ``versions`` and ``n-shot``; ``config`` (model type,
``model_args``, ``gen_kwargs``), ``n-shot`` and the task's prompt entries in ``configs`` are the
fields a system may be defined by (``read_eval_logs(system=...)``).

Metric names follow lm-eval's results keys without the default filter: ``acc`` for filter
``none``, ``exact_match,strict-match`` for another filter. Metric values that are not numbers
(the (reference, prediction) pairs of corpus metrics such as lm-eval's bleu) are skipped and
counted in a warning.
"""
from __future__ import annotations

import json
import re
from itertools import chain, repeat
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from ..errors import DataError
from ._logs_json import jsonl_batches, load_json
from ._logs_rows import Rows, metadata_column, scalar
from ._logs_schema import LMEVAL_RESULTS, LMEVAL_SAMPLE, Columns

SAMPLES_RE = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")


def is_samples_file(p: Path) -> bool:
    return SAMPLES_RE.match(p.name) is not None


def _results_header(path: Path, date: str) -> dict[str, Any]:
    """The results_<date>.json beside a samples file ({} when there is none), validated against
    :data:`._logs_schema.LMEVAL_RESULTS`."""
    res = path.parent / f"results_{date}.json"
    if not res.exists():
        return {}
    return load_json(res, LMEVAL_RESULTS, "an lm-evaluation-harness results file")


def _model_name(header: dict[str, Any], path: Path) -> str:
    name = header.get("model_name")
    if name:
        return str(name)
    args = str((header.get("config") or {}).get("model_args") or "")
    for key in ("peft=", "delta=", "pretrained=", "model=", "path=", "engine="):  # lm-eval's own order
        if key in args:
            return args.split(key)[1].split(",")[0]
    return path.parent.name  # the model_name_sanitized directory


def _args(v: Any) -> dict[str, Any]:
    """lm-eval's ``k=v,k=v`` argument strings (``model_args``, ``gen_kwargs``) or dicts as a dict."""
    if isinstance(v, dict):
        return dict(v)
    out: dict[str, Any] = {}
    for part in str(v or "").split(","):
        k, sep, x = part.partition("=")
        if sep and k.strip():
            out[k.strip()] = x.strip()
    return out


#: per-task config entries that define the prompt (lm-eval task YAML keys), read as task arguments
_PROMPT_KEYS = ("description", "doc_to_text", "doc_to_target", "doc_to_choice", "target_delimiter",
                "fewshot_delimiter")


def _fields(header: dict[str, Any], task: str, model: str) -> dict[str, Any]:
    """The fields a system may be defined by: model (the model name), task_args (n-shot as
    ``num_fewshot`` and the task config's prompt entries), model_args (``config.model_args``, with
    ``config.model``, the model type, as ``model``), generation_config (``config.gen_kwargs``), plan
    (system instruction, chat template, few-shot as multi-turn); lm-eval has no solver or tags."""
    cfg = header.get("config") or {}
    tcfg = (header.get("configs") or {}).get(task) or {}
    task_args = {k: tcfg[k] for k in _PROMPT_KEYS if isinstance(tcfg.get(k), (str, int, float, bool))}
    nshot = (header.get("n-shot") or {}).get(task, tcfg.get("num_fewshot"))
    if nshot is not None:
        task_args = {"num_fewshot": nshot, **task_args}
    margs = _args(cfg.get("model_args"))
    if cfg.get("model") is not None:
        margs = {"model": cfg["model"], **margs}
    plan = {"system_instruction": header.get("system_instruction_sha") or header.get("system_instruction"),
            "chat_template": header.get("chat_template_sha") or header.get("chat_template"),
            "fewshot_as_multiturn": header.get("fewshot_as_multiturn")}
    return {"model": model, "task_args": task_args, "model_args": margs,
            "generation_config": _args(cfg.get("gen_kwargs")),
            "plan": {k: v for k, v in plan.items() if v is not None} if header else {}}


#: the types of a metric value read as a score (json's own: exact types; true/false are 1/0)
_NUMBER = frozenset({int, float, bool})
#: the columns a samples file's rows are collected in: items, metrics, scores, hashes, filters, metadata
_Columns = tuple[list, list, list, list, list, dict[str, list]]


def _record_by_record(batch: list[dict[str, Any]], cols: _Columns, metadata: Sequence[str], rows: Rows,
                      src: str) -> None:
    """Append the rows of validated sample records to ``cols``: one per metric named in a
    record's ``metrics`` whose value is a number (others are counted in a note)."""
    items, metrics, scores, hashes, filters, meta = cols
    for rec in batch:
        doc_id, filt, get = rec["doc_id"], rec.get("filter") or "none", rec.get
        doc = get("doc")
        if type(doc) is not dict:
            doc = {}
        for name in rec["metrics"]:
            v = get(name)
            if type(v) in _NUMBER:
                items.append(str(doc_id))
                metrics.append(name if filt == "none" else f"{name},{filt}")
                scores.append(float(v))
                hashes.append(get("doc_hash"))
                filters.append(filt)
                for k in metadata:
                    meta[metadata_column(k)].append(scalar(doc.get(k)))
            else:
                rows.note("non_numeric", f"{name!r} in {src} (doc_id {doc_id}): {str(v)[:60]}")


def _each(values: list, times: int) -> Any:
    """Every value of ``values`` ``times`` times in a row (the rows of a record, one per metric)."""
    return values if times == 1 else chain.from_iterable(zip(*([values] * times)))


def _uniform_batch(batch: list[dict[str, Any]], fields: Columns, cols: _Columns, metadata: Sequence[str]) -> bool:
    """Append the rows of validated sample records to ``cols`` as :func:`_record_by_record` does,
    a column at a time, when every record names the same metrics with the same filter and every
    value is a number (the usual samples file); False (nothing appended) otherwise. ``fields``:
    the records' validated columns (doc_id, metrics, filter, doc_hash)."""
    n = len(batch)
    if not n:
        return True
    names, filts = fields["metrics"][0], fields["filter"]
    if fields["metrics"].count(names) != n or filts.count(filts[0]) != n:
        return False
    values = [list(map(dict.get, batch, repeat(name))) for name in names]
    if not all(_NUMBER.issuperset(map(type, v)) for v in values):
        return False
    items, metrics, scores, hashes, filters, meta = cols
    k, filt = len(names), filts[0] or "none"
    items.extend(_each(list(map(str, fields["doc_id"])), k))
    metrics.extend([name if filt == "none" else f"{name},{filt}" for name in names] * n)
    scores.extend(map(float, chain.from_iterable(zip(*values))))
    hashes.extend(_each(fields["doc_hash"], k))
    filters.extend([filt] * (n * k))
    if metadata and k:
        docs = [d if type(d) is dict else {} for d in map(dict.get, batch, repeat("doc"))]
        for key in metadata:
            meta[metadata_column(key)].extend(_each([scalar(d.get(key)) for d in docs], k))
    return True




def read_samples_file(path: Path, rows: Rows, system: str | None = None, metadata: Sequence[str] = ()) -> None:
    """Append the per-document scores of one samples_<task>_<date>.jsonl file to ``rows``;
    ``metadata`` names ``doc`` fields carried as columns (scalars; other values become None)."""
    m = SAMPLES_RE.match(path.name)
    if m is None:
        raise DataError(f"{str(path)!r} is not an lm-evaluation-harness samples file (samples_<task>_<date>.jsonl)")
    task, date = m.group("task"), m.group("date")
    header = _results_header(path, date)
    if not header:
        rows.note("lmeval_no_results", str(path))
    sysname = system if system is not None else _model_name(header, path)
    version = (header.get("versions") or {}).get(task)
    signature = json.dumps({"version": version}, sort_keys=True, default=str)  # n-shot: task_args.num_fewshot
    rows.fields = _fields(header, task, _model_name(header, path))
    src = str(path)
    cols: _Columns = ([], [], [], [], [], {metadata_column(k): [] for k in metadata})
    for batch, fields in jsonl_batches(path, LMEVAL_SAMPLE, "an lm-evaluation-harness samples file"):
        if not _uniform_batch(batch, fields, cols, metadata):
            _record_by_record(batch, cols, metadata, rows, src)
    items, metrics, scores, hashes, filters, meta = cols
    rows.extend(sysname, task, items, metrics, scores, date, None, src, signature, hashes, filter=filters, **meta)
