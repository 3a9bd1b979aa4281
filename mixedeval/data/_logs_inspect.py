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

Epoch reducers: Inspect reduces each sample's epochs to one score per scorer before its metrics
(``Task(epochs=Epochs(3, "max"))``; the reducers are in ``log.reductions`` and
``log.eval.config.epochs_reducer``, default ``mean``). The mean keeps the epochs as rows (they
are averaged within the question downstream, and a GLMM may use them as repeated trials); any
other reducer is applied here as Inspect applies it (``inspect_ai/scorer/_reducer/reducer.py``)
and gives one row per question (epoch 1): ``median`` (statistics.median of the floats), ``mode``
(the most common raw value, first seen on ties), ``max`` (the value with the largest float),
``pass_at_k`` (Chen et al. 2021: ``1 - prod(1 - k / (total - correct + 1 .. total))``, a value
counted correct at >= 1), ``at_least_k`` (1 when at least k values are >= 1) and ``pass_k``
(``C(correct, k) / C(total, k)``). With several reducers the first keeps the scorer's name and
the others are the metrics ``<scorer>_<reducer>``. Each reduced metric's reducer and the epochs
the log sampled (``log.eval.config.epochs``) are recorded (``Rows.reduction``, then
:attr:`mixedeval.EvalLogs.reduction`), so that outputs say "max over 3 epochs". Each reduced score is checked against
Inspect's own reduced score in the log; a reducer that is not one of these, or whose values
differ from Inspect's (e.g. ``pass_at(k, value=0.5)``, whose threshold the log does not record),
is a DataError naming it.

inspect_ai is an optional dependency (``pip install 'mixedeval[logs]'``).
"""
from __future__ import annotations

import importlib.util
import json
import math
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from ..errors import DataError
from ._logs_json import JSON_MEMORY_FACTOR, check_size, file_size
from ._logs_rows import Rows, metadata_column
from ._logs_inspect_fast import can_read, read_log_fast, wanted
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


# ------------------------------------------------------------------------------ epoch reducers
REDUCERS = ("mean", "median", "mode", "max", "pass_at_k", "at_least_k", "pass_k")


def _reducer_names(log: Any) -> dict[str, list[str]]:
    """Per scorer, the epoch reducers Inspect applied (``log.reductions``; else the eval config's
    ``epochs_reducer``; default mean). Key ``None``: the config's list for scorers not listed."""
    out: dict[Any, list[str]] = defaultdict(list)
    for red in getattr(log, "reductions", None) or []:
        name = getattr(red, "reducer", None) or "mean"
        if name not in out[red.scorer]:
            out[red.scorer].append(str(name))
    cfg = getattr(getattr(log.eval, "config", None), "epochs_reducer", None)
    out[None] = [str(r) for r in cfg] if cfg else ["mean"]
    return dict(out)


def _reduce(name: str, values: list[Any], to_float: Any) -> float:
    """One reducer on one question's epoch values, as Inspect computes it; DataError when unknown."""
    vals = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    floats = [float(to_float(v)) for v in vals]
    if not floats:
        return math.nan
    m = re.fullmatch(r"(pass_at|at_least|pass_k)_(\d+)", name)
    if name == "mean":
        return float(statistics.mean(floats))
    if name == "median":
        return float(statistics.median(floats))
    if name == "mode":
        return float(to_float(Counter(vals).most_common(1)[0][0]))
    if name == "max":
        return float(to_float(max(vals, key=to_float)))
    if m is not None:
        kind, k = m.group(1), int(m.group(2))
        total, correct = len(floats), sum(1 for f in floats if f >= 1.0)
        if kind == "at_least":
            return 1.0 if correct >= k else 0.0
        if total < k:
            return math.nan
        if kind == "pass_k":
            return math.comb(correct, k) / math.comb(total, k)
        if total - correct < k:
            return 1.0
        prod = 1.0
        for j in range(total - correct + 1, total + 1):
            prod *= 1.0 - k / j
        return 1.0 - prod
    raise DataError(f"the Inspect epoch reducer {name!r} cannot be reproduced by mixedeval (it applies "
                    f"{', '.join(REDUCERS)}); rerun the evaluation with one of those, or use the log's reduced "
                    "scores in a score table")


def _inspect_reduced(log: Any, to_float: Any) -> dict[tuple[str, str, str], float]:
    """(scorer, reducer, sample id) -> Inspect's own reduced score (scalar values only)."""
    out = {}
    for red in getattr(log, "reductions", None) or []:
        for smp in red.samples:
            v = smp.value
            if _convertible(v):
                out[(str(red.scorer), str(red.reducer or "mean"), str(smp.sample_id))] = float(to_float(v))
    return out


def _config_epochs(log: Any, raw: dict) -> int:
    """The epochs the log's evaluation sampled (``log.eval.config.epochs``; else the most epoch
    values of a question read)."""
    n = getattr(getattr(log.eval, "config", None), "epochs", None)
    if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
        return n
    return max((len(vals) for vals, _key, _meta in raw.values()), default=1)


def _add_reduced(rows: Rows, log: Any, to_float: Any, raw: dict, reducers: dict, src: str) -> None:
    """The rows of the non-mean reducers: one per question and reducer, checked against Inspect's;
    each reduced metric's reducer and epochs are recorded in ``rows.reduction``."""
    theirs = _inspect_reduced(log, to_float)
    n_epochs = _config_epochs(log, raw)
    for (scorer, metric, sid), (vals, key, meta) in raw.items():
        names = reducers.get(scorer, reducers[None])
        for j, name in enumerate(names):
            v = _reduce(name, vals, to_float)
            ref = theirs.get((scorer, name, sid))
            if ref is not None and metric == scorer and not (math.isclose(v, ref, rel_tol=1e-9, abs_tol=1e-12)
                                                              or (math.isnan(v) and math.isnan(ref))):
                raise DataError(f"the Inspect epoch reducer {name!r} of scorer {scorer!r} could not be reproduced in "
                                f"{src}: sample {sid} reduces to {v!r} here, {ref!r} in the log (a threshold or "
                                "option the log does not record?)")
            if math.isnan(v):
                rows.note("non_numeric", f"{metric!r} in {src} (sample {sid}): no scored epoch")
                continue
            name_out = metric if j == 0 else f"{metric}_{name}"
            rows.reduction.setdefault(name_out, (str(name), n_epochs))
            rows.add(*key[:3], name_out, v, key[3], None, key[5], key[6], None, epoch=1, **meta)


def _read_log(path: Path, src: str, entries: dict[str, bytes] | None) -> tuple[Any, Any]:
    """The log and the score-value mapping: a finished ``.eval`` archive read directly
    (:mod:`._logs_inspect_fast`, the same values without importing inspect_ai, which takes a
    second; ``entries``: the archive's entries it reads, kept by the zip-bomb check), anything
    else through inspect_ai's ``read_eval_log`` and ``value_to_float()``."""
    log = read_log_fast(path, entries) if entries is not None else None
    if log is not None:
        return log, fast_value_to_float
    read_eval_log, to_float = _inspect()
    try:
        return read_eval_log(src), to_float
    except Exception as exc:  # inspect raises its own errors for unreadable logs
        raise DataError(f"inspect_ai could not read {src!r}: {exc}") from exc


def read_inspect_log(path: Path, rows: Rows, system: str | None = None, keep_epochs: bool = False) -> None:
    """Append the per-sample, per-epoch scores of one Inspect AI log to ``rows`` (epochs reduced
    by the log's reducer when it is not the mean, unless ``keep_epochs``; module docstring)."""
    src = str(path)
    entries = None
    if path.suffix.lower() == ".eval":  # checked before its entries are inflated whole
        fast = inspect_installed() and can_read()
        kept = check_eval_archive(path, wanted if fast else None)  # the fast reader's entries, inflated once
        entries = kept if fast else None
    else:
        check_size(src, file_size(path), JSON_MEMORY_FACTOR, "the whole JSON log")
    log, to_float = _read_log(path, src, entries)
    ev = log.eval
    sysname = system if system is not None else str(ev.model)
    status = str(getattr(log, "status", "success"))
    if status != "success":
        rows.note("inspect_status", f"{src} has status {status!r}")
    sig = _signature(ev)
    rows.fields = _fields(log)
    run_group = str(getattr(ev, "run_id", None) or getattr(ev, "eval_id", None) or path.stem)
    reducers = _reducer_names(log)
    raw: dict[tuple[str, str, str], tuple[list, tuple, dict]] = {}
    for s in log.samples or []:
        meta = _metadata(s)
        for scorer, score in (s.scores or {}).items():
            v = score.value
            key = (sysname, str(ev.task), str(s.id), run_group, int(s.epoch), src, sig)
            items = [(f"{scorer}/{k}", vk) for k, vk in v.items()] if isinstance(v, dict) else [(str(scorer), v)]
            plain = keep_epochs or reducers.get(str(scorer), reducers[None]) == ["mean"]
            for metric, val in items:
                if plain or not _convertible(val):
                    _add_value(rows, to_float, metric, val, key, src, meta)
                else:
                    raw.setdefault((str(scorer), metric, str(s.id)), ([], key, meta))[0].append(val)
    if raw:
        _add_reduced(rows, log, to_float, raw, reducers, src)
