"""Reader of Inspect AI eval logs (``.eval`` and ``.json``), through inspect_ai's own reader (a
finished ``.eval`` archive is read directly, to the same values, by :mod:`._logs_inspect_fast`).

``inspect_ai.log.read_eval_log`` gives the header (``log.eval.model``, ``log.eval.task``,
``log.eval.run_id``, ``log.eval.task_version``, ``log.eval.task_args``, ``log.eval.dataset``,
``log.eval.tags``, ``log.eval.model_args``, ``log.eval.model_generate_config``, ``log.plan.steps``:
the fields a system may be defined by) and the samples (``sample.id``, ``sample.epoch``,
``sample.scores``: scorer name -> ``Score``).
Each score value becomes a number as ``inspect_ai.scorer.value_to_float()`` maps it (C -> 1,
P -> 0.5, I and N -> 0, yes/true -> 1, no/false -> 0, numeric strings and numbers as floats); a
dict value gives one metric per key (``scorer/key``). Values that inspect could not convert (it
logs a warning and returns 0) and list values are skipped here and counted in a warning instead.
``sample.epoch`` is the ``epoch`` (a repeated sample of the question within this evaluation,
never a run); several logs of one model and task are its runs (the log's run id). The sample's
scalar ``metadata`` fields become columns of the table (a field named like a canonical column gets
the prefix ``metadata_``), e.g. a question's cluster for ``compare_logs(cluster=...)``.

inspect_ai is an optional dependency (``pip install 'mixedeval[logs]'``).
"""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

from ..errors import DataError
from ._logs_json import JSON_MEMORY_FACTOR, check_size, file_size
from ._logs_rows import Rows, metadata_column
from ._logs_inspect_fast import read_log_fast
from ._logs_inspect_fast import value_to_float as fast_value_to_float
from ._logs_zip import check_eval_archive

_INSTALL = ("reading Inspect AI logs needs the inspect_ai package, an optional dependency of mixedeval: "
            "pip install 'mixedeval[logs]' (or pip install inspect-ai)")


def _inspect():
    try:
        from inspect_ai.log import read_eval_log  # noqa: PLC0415 - optional dependency, imported when used
        from inspect_ai.scorer import value_to_float  # noqa: PLC0415 - optional dependency, imported when used
    except ImportError as exc:
        raise DataError(_INSTALL) from exc
    return read_eval_log, value_to_float()


def inspect_installed() -> bool:
    """Whether inspect_ai is installed (looked up, not imported): the direct ``.eval`` reader is
    used only then, so that reading Inspect logs needs the ``mixedeval[logs]`` extra either way."""
    return importlib.util.find_spec("inspect_ai") is not None


def looks_like_inspect_json(p: Path) -> bool:
    """A .json file whose first bytes hold Inspect's log keys (``"eval"`` and ``"version"``)."""
    try:
        with p.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"eval"' in head and b'"version"' in head


def _convertible(v: Any) -> bool:
    """The scalar values value_to_float maps without falling back to 0 with a warning."""
    if isinstance(v, (bool, int, float)):
        return not (isinstance(v, float) and math.isnan(v))
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("c", "i", "p", "n", "yes", "no", "true", "false"):
            return True
        try:
            return math.isfinite(float(s))
        except ValueError:
            return False
    return False


def _signature(ev: Any) -> str:
    """Task version and dataset; the task arguments are a field of the log (:func:`_fields`), checked
    apart because they may define the systems (``system=["model", "task_args.cot"]``)."""
    ds = getattr(ev, "dataset", None)
    return json.dumps({"task_version": getattr(ev, "task_version", None),
                       "dataset": getattr(ds, "name", None) if ds is not None else None}, sort_keys=True, default=str)


def _step_text(step: Any) -> str:
    params = getattr(step, "params", None) or {}
    args = ", ".join(f"{k}={json.dumps(v, default=str) if not isinstance(v, str) else v}" for k, v in params.items())
    return f"{step.solver}({args})"


def _fields(log: Any) -> dict[str, Any]:
    """The fields a system may be defined by: model, task_args, solver (the plan's solver names),
    plan (the solvers with their parameters), model_args, tags, generation_config (the settings
    given, ``model_generate_config`` without its unset fields)."""
    ev = log.eval
    steps = list(getattr(getattr(log, "plan", None), "steps", None) or [])
    solver = " -> ".join(str(s.solver) for s in steps) if steps else getattr(ev, "solver", None)
    plan = " -> ".join(_step_text(s) for s in steps) if steps else solver
    gen = getattr(ev, "model_generate_config", None)
    gen = gen.model_dump(exclude_none=True) if hasattr(gen, "model_dump") else dict(gen or {})
    tags = getattr(ev, "tags", None)
    return {"model": str(ev.model), "task_args": dict(getattr(ev, "task_args", None) or {}), "solver": solver,
            "plan": plan, "model_args": dict(getattr(ev, "model_args", None) or {}),
            "tags": ",".join(sorted(map(str, tags))) if tags else None, "generation_config": gen}


def _metadata(sample: Any) -> dict[str, Any]:
    """The sample's scalar metadata (str, int, float, bool) as columns; other values are left out."""
    md = getattr(sample, "metadata", None) or {}
    out = {}
    for k, v in md.items():
        if isinstance(v, (str, int, float, bool)) and not (isinstance(v, float) and math.isnan(v)):
            name = str(k)
            out[metadata_column(name)] = v
    return out


def _add_value(rows: Rows, to_float: Any, metric: str, v: Any, key: tuple, src: str, meta: dict) -> None:
    if _convertible(v):
        rows.add(*key[:3], metric, float(to_float(v)), key[3], None, key[5], key[6], None, epoch=key[4], **meta)
    else:
        rows.note("non_numeric", f"{metric!r} in {src} (sample {key[2]}): {str(v)[:60]}")


def _read_log(path: Path, src: str) -> tuple[Any, Any]:
    """The log and the score-value mapping: a finished ``.eval`` archive read directly
    (:mod:`._logs_inspect_fast`, the same values without importing inspect_ai, which takes a
    second), anything else through inspect_ai's ``read_eval_log`` and ``value_to_float()``."""
    log = read_log_fast(path) if inspect_installed() else None
    if log is not None:
        return log, fast_value_to_float
    read_eval_log, to_float = _inspect()
    try:
        return read_eval_log(src), to_float
    except Exception as exc:  # inspect raises its own errors for unreadable logs
        raise DataError(f"inspect_ai could not read {src!r}: {exc}") from exc


def read_inspect_log(path: Path, rows: Rows, system: str | None = None) -> None:
    """Append the per-sample, per-epoch scores of one Inspect AI log to ``rows``."""
    src = str(path)
    if path.suffix.lower() == ".eval":
        check_eval_archive(path)  # before its entries are inflated whole
    else:
        check_size(src, file_size(path), JSON_MEMORY_FACTOR, "the whole JSON log")
    log, to_float = _read_log(path, src)
    ev = log.eval
    sysname = system if system is not None else str(ev.model)
    status = str(getattr(log, "status", "success"))
    if status != "success":
        rows.note("inspect_status", f"{src} has status {status!r}")
    sig = _signature(ev)
    rows.fields = _fields(log)
    run_group = str(getattr(ev, "run_id", None) or getattr(ev, "eval_id", None) or path.stem)
    for s in log.samples or []:
        meta = _metadata(s)
        for scorer, score in (s.scores or {}).items():
            v = score.value
            key = (sysname, str(ev.task), str(s.id), run_group, int(s.epoch), src, sig)
            if isinstance(v, dict):
                for k, vk in v.items():
                    _add_value(rows, to_float, f"{scorer}/{k}", vk, key, src, meta)
            else:
                _add_value(rows, to_float, str(scorer), v, key, src, meta)
