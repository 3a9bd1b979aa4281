"""Reader of HELM run directories (``per_instance_stats.json`` beside ``run_spec.json``).

HELM's runner (src/helm/benchmark/runner.py, crfm-helm 0.5.x) writes one directory per run spec
under ``benchmark_output/runs/<suite>/<run spec name>/``. ``per_instance_stats.json`` is a list
of ``PerInstanceStats`` (src/helm/benchmark/metrics/metric.py): ``instance_id``,
``perturbation`` (absent for the unperturbed instance: ``asdict_without_nones``),
``train_trial_index`` and ``stats``, each a ``Stat`` (src/helm/benchmark/metrics/statistic.py)
with ``name`` (a ``MetricName``: ``name``, ``split``, optional ``sub_split``, ``perturbation``),
``count``, ``sum``, ``sum_squared``, ``min``, ``max``, ``mean``, ``variance``, ``stddev``.
``run_spec.json`` holds ``name`` (``scenario:args,model=...``), ``scenario_spec`` and
``adapter_spec.model``.

System: ``adapter_spec.model``; task: the run spec name without its ``model=`` and
``model_deployment=`` arguments; run: the suite directory, with the train trial index as the
replicate; score: the stat's ``mean`` (``sum / count`` when no mean is stored). Perturbed
instances and stats of perturbed names are not read (counted in a warning). The adapter spec and
the scenario's args are the fields a system may be defined by (``read_eval_logs(system=...)``).
"""
from __future__ import annotations

import json
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from ..errors import DataError
from ._logs_json import load_json
from ._logs_rows import Rows, metadata_column, scalar
from ._logs_schema import HELM_INSTANCES, HELM_RUN_SPEC, HELM_STATS

STATS_FILE = "per_instance_stats.json"


def _task_name(run_name: str) -> str:
    scen, _, args = run_name.partition(":")
    keep = [a for a in args.split(",") if a and not a.startswith(("model=", "model_deployment="))]
    return scen + (":" + ",".join(keep) if keep else "")


def _score(stat: dict[str, Any]) -> float | None:
    mean = stat.get("mean")
    if isinstance(mean, (int, float)) and not isinstance(mean, bool):
        return float(mean)
    cnt, tot = stat.get("count"), stat.get("sum")
    if isinstance(cnt, (int, float)) and cnt and isinstance(tot, (int, float)):
        return float(tot) / float(cnt)
    return None


#: adapter_spec entries that are decoding settings (generation_config); the others but the model's
#: and the bookkeeping ones (how many instances and trials were run) make the plan
_GENERATION = ("temperature", "max_tokens", "stop_sequences", "num_outputs", "top_p", "top_k", "presence_penalty",
               "frequency_penalty", "random")
_NOT_PLAN = ("model", "model_deployment", "method", "max_eval_instances", "num_train_trials", "num_trials",
             "eval_splits", *_GENERATION)


def _fields(spec: dict[str, Any], model: str) -> dict[str, Any]:
    """The fields a system may be defined by: model, task_args (the scenario's args), solver
    (``adapter_spec.method``), plan (the other prompt settings of the adapter spec: instructions,
    prefixes, in-context examples), model_args (``model_deployment``), generation_config
    (temperature, max_tokens, stop sequences, ...); HELM has no tags."""
    adapter = spec.get("adapter_spec") or {}
    return {"model": model, "task_args": dict((spec.get("scenario_spec") or {}).get("args") or {}),
            "solver": adapter.get("method"),
            "plan": {k: v for k, v in adapter.items() if k not in _NOT_PLAN},
            "model_args": {k: adapter[k] for k in ("model_deployment",) if adapter.get(k) is not None},
            "generation_config": {k: adapter[k] for k in _GENERATION if k in adapter}}


def _instances(run_dir: Path, metadata: Sequence[str]) -> dict[str, dict[str, Any]]:
    """instance id -> the requested scalar fields of ``instances.json`` (HELM's ``Instance``: id,
    split, sub_split, input, references, ...); {} when nothing is requested or the file is absent."""
    p = run_dir / "instances.json"
    if not metadata or not p.exists():
        return {}
    data = load_json(p, HELM_INSTANCES, "HELM instances")
    return {str(inst.get("id")): {metadata_column(k): scalar(inst.get(k)) for k in metadata} for inst in data}


def read_helm_run(path: Path, rows: Rows, system: str | None = None, metadata: Sequence[str] = ()) -> None:
    """Append the per-instance stats of one HELM run directory (or its per_instance_stats.json);
    ``metadata`` names fields of ``instances.json`` carried as columns."""
    run_dir = path if path.is_dir() else path.parent
    spec_path = run_dir / "run_spec.json"
    if not spec_path.exists():
        raise DataError(f"the HELM run directory {str(run_dir)!r} has no run_spec.json beside {STATS_FILE}; "
                        "copy the whole run directory")
    spec = load_json(spec_path, HELM_RUN_SPEC, "a HELM run spec")
    adapter = spec.get("adapter_spec") or {}
    sysname = system if system is not None else str(adapter.get("model") or adapter.get("model_deployment")
                                                     or run_dir.name)
    task = _task_name(str(spec.get("name", run_dir.name)))
    sig = json.dumps(spec.get("scenario_spec"), sort_keys=True, default=str)
    rows.fields = _fields(spec, str(adapter.get("model") or adapter.get("model_deployment") or run_dir.name))
    suite = run_dir.parent.name
    src = str(run_dir / STATS_FILE)
    data = load_json(run_dir / STATS_FILE, HELM_STATS, "HELM per-instance stats")
    inst_meta = _instances(run_dir, metadata)
    empty = {metadata_column(k): None for k in metadata}
    for inst in data:
        iid, stats = inst["instance_id"], inst["stats"]
        trial = inst.get("train_trial_index")
        trial = 0 if trial is None else trial
        if inst.get("perturbation"):
            rows.note("helm_perturbed", f"instance {iid} in {src}", len(stats))
            continue
        for stat in stats:
            name = stat["name"]
            if name.get("perturbation"):
                rows.note("helm_perturbed", f"instance {iid} in {src}")
                continue
            score = _score(stat)
            if score is None:
                rows.note("non_numeric", f"{name.get('name')!r} in {src} (instance {iid})")
                continue
            metric = str(name.get("name"))
            if name.get("sub_split"):
                metric = f"{metric}/{name['sub_split']}"
            rows.add(sysname, task, str(iid), metric, score, suite, int(trial), src, sig, None,
                     split=name.get("split"), **inst_meta.get(str(iid), empty))
