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
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from ..errors import DataError
from ._logs_json import iter_jsonl, load_json
from ._logs_rows import Rows, metadata_column, scalar
from ._logs_schema import LMEVAL_RESULTS, LMEVAL_SAMPLE

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


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, complex)


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
    items, metrics, scores, hashes, filters = [], [], [], [], []
    meta: dict[str, list[Any]] = {metadata_column(k): [] for k in metadata}
    for _lineno, rec in iter_jsonl(path, LMEVAL_SAMPLE, "an lm-evaluation-harness samples file"):
        doc_id, filt = rec["doc_id"], rec.get("filter") or "none"
        doc = rec.get("doc") if isinstance(rec.get("doc"), dict) else {}
        for name in rec["metrics"]:
            v = rec.get(name)
            if isinstance(v, bool) or _is_number(v):
                items.append(str(doc_id))
                metrics.append(name if filt == "none" else f"{name},{filt}")
                scores.append(float(v))
                hashes.append(rec.get("doc_hash"))
                filters.append(filt)
                for k in metadata:
                    meta[metadata_column(k)].append(scalar(doc.get(k)))
            else:
                rows.note("non_numeric", f"{name!r} in {src} (doc_id {doc_id}): {str(v)[:60]}")
    rows.extend(sysname, task, items, metrics, scores, date, None, src, signature, hashes, filter=filters, **meta)
