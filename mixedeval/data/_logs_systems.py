"""Which system each evaluation log belongs to: ``read_eval_logs(system=...)``.

Every log records what its evaluation was run with (the readers fill ``Rows.fields``):

* ``model``: the model name (the system by default);
* ``task_args``: the task's arguments (Inspect ``task_args``; lm-eval ``num_fewshot`` and the
  task config's prompt entries; HELM scenario args), one field per argument: ``task_args.cot``;
* ``solver``: the solver names of Inspect's plan (HELM: the adapter method); ``plan``: the solvers
  with their parameters (lm-eval: system instruction, chat template, few-shot as multi-turn;
  HELM: the adapter spec's prompt settings);
* ``model_args``: the model's arguments (lm-eval ``config.model_args``; HELM ``model_deployment``);
* ``tags``: Inspect's tags;
* ``generation_config``: the generation settings given (Inspect ``model_generate_config``,
  lm-eval ``gen_kwargs``, HELM temperature, max_tokens, ...).

``system=`` names fields, alone or combined (``["model", "task_args.cot"]``; a family name such
as ``"task_args"`` takes all its fields); the label joins their values: ``"mockllm/m | cot=True"``.

By default the system is the model name, but one model's logs of one task that differ in task
arguments, tags, solver, plan, model arguments or generation settings (apart from the
operational ones: retries, timeouts, connections, caching) are never merged silently: they are
split by the fewest differing fields, with a ``systems_split`` warning naming them. A
``{name: path}`` dict names the systems; the fields that differ between its logs are recorded as
the systems' definitions (a ``systems_merged`` warning names fields that differ within one name).
An explicit ``system=`` that leaves differing fields inside a system warns the same way. The
fields that define the systems are exempt from the check that one task name has one
configuration (:func:`._logs_validate.check_mixed_tasks`).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import DataError
from ..results import ResultWarning

FAMILIES = ("model", "task_args", "solver", "plan", "model_args", "tags", "generation_config")
#: the families that split one model's logs by default, in the order they are tried
AUTO = ("task_args", "tags", "solver", "plan", "model_args", "generation_config")
#: generation settings that change how a model is called, not what it is asked: never split by default
OPERATIONAL = frozenset({"max_retries", "timeout", "attempt_timeout", "stream_idle_timeout", "max_connections",
                         "adaptive_connections", "cache_prompt", "cache", "batch", "extra_headers", "extra_body",
                         "batch_size", "max_batch_size", "device"})
ABSENT = "None"


@dataclass
class LogFile:
    """One file read: its source, the name a ``{name: path}`` dict gave it, the model name, the
    task and its flat fields (``None`` for a score table, whose rows carry their system)."""

    index: int
    name: str | None
    model: str
    task: str
    fields: dict[str, str] | None
    system: str = ""
    definition: dict[str, str] = field(default_factory=dict)


def text(v: Any) -> str:
    """A field value as text: scalars as Python prints them (``True``), lists joined by commas,
    dicts as JSON."""
    if isinstance(v, str):
        return v
    if v is None or isinstance(v, (bool, int, float)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return ",".join(text(x) for x in v)
    return json.dumps(v, sort_keys=True, default=str)


def flatten(fields: Mapping[str, Any]) -> dict[str, str]:
    """``{"task_args": {"cot": True}, "model": "m"}`` -> ``{"task_args.cot": "True", "model": "m"}``
    (absent and None values left out)."""
    out = {}
    for fam in FAMILIES:
        v = fields.get(fam)
        if isinstance(v, Mapping):
            for k, x in v.items():
                out[f"{fam}.{k}"] = text(x)
        elif v is not None:
            out[fam] = text(v)
    return out


def _short(v: str, limit: int = 40) -> str:
    if len(v) <= limit:
        return v
    return v[:limit - 10] + "..#" + hashlib.sha1(v.encode()).hexdigest()[:7]


def _labels(names: Sequence[str]) -> dict[str, str]:
    """Label of each field in a system name: a task argument by its own name (``cot``), a family
    by its name (``solver``), another family's key by the key (``temperature``); the full name
    where two of them would read alike."""
    short = {n: (n.split(".", 1)[1] if "." in n else n) for n in names}
    clash = {s for s in short.values() if list(short.values()).count(s) > 1}
    return {n: (n if s in clash else s) for n, s in short.items()}


def label(f: LogFile, names: Sequence[str]) -> str:
    lab = _labels([n for n in names if n != "model"])
    parts = [f.model if n == "model" else f"{lab[n]}={_short(f.fields.get(n, ABSENT))}" for n in names]
    return " | ".join(parts)


def _requested(system: str | Sequence[str]) -> list[str]:
    if not (isinstance(system, str) or (isinstance(system, (list, tuple)) and all(isinstance(s, str) for s in system))):
        raise DataError(f"system= names one or more log fields as strings, e.g. system='model' or "
                        f"system=['model', 'task_args.cot']; got {system!r}")
    names = [system] if isinstance(system, str) else list(system)
    if not names:
        raise DataError("system= names one or more log fields, e.g. system=['model', 'task_args.cot']")
    bad = [n for n in names if n.split(".", 1)[0] not in FAMILIES]
    if bad:
        raise DataError(f"system= names log fields: {', '.join(FAMILIES)} (a family), or one key of a family such as "
                        f"'task_args.cot'; got {bad}")
    return names


def _expand(names: Sequence[str], logs: Sequence[LogFile]) -> list[str]:
    """The flat fields the requested names stand for (a family name: every key of it in some log)."""
    have = sorted({k for f in logs for k in f.fields})
    out: list[str] = []
    for n in names:
        got = ["model"] if n == "model" else ([n] if n in have else [k for k in have if k.startswith(n + ".")])
        if not got:
            raise DataError(f"system= names {n!r}, which none of the logs records; the fields they record: "
                            f"{have[:30]}")
        out += [g for g in got if g not in out]
    return out


def _candidates(logs: Sequence[LogFile]) -> list[str]:
    """The fields that may split one model's logs by default, in the order tried."""
    have = sorted({k for f in logs for k in f.fields})
    out = []
    for fam in AUTO:
        out += [k for k in have if (k == fam or k.startswith(fam + "."))
                and not (fam == "generation_config" and k.split(".", 1)[-1] in OPERATIONAL)]
    return out


def differing(logs: Sequence[LogFile], group, chosen: Sequence[str], candidates: Sequence[str],
              greedy: bool = True) -> list[str]:
    """The candidate fields whose values differ between logs of one group (``group(f)``: e.g. model
    and task) that the fields chosen so far do not tell apart; ``greedy``: a field picked counts as
    chosen for the next ones (the fewest fields that tell the logs apart), else every differing field."""
    picked: list[str] = []
    for c in candidates:
        if c in chosen:
            continue
        seen: dict[tuple, set] = {}
        for f in logs:
            key = (group(f), *(f.fields.get(x, ABSENT) for x in (*chosen, *(picked if greedy else ()))))
            seen.setdefault(key, set()).add(f.fields.get(c, ABSENT))
        if any(len(v) > 1 for v in seen.values()):
            picked.append(c)
    return picked


def _values(logs: Sequence[LogFile], names: Sequence[str]) -> str:
    return "; ".join(f"{n} ({', '.join(sorted({_short(f.fields.get(n, ABSENT)) for f in logs}))})" for n in names)


def _merged_warning(logs: Sequence[LogFile], fields_within: list[str], how: str) -> list[ResultWarning]:
    if not fields_within:
        return []
    return [ResultWarning("systems_merged", f"{how} joins logs whose fields differ: {_values(logs, fields_within)}; "
                                            "they are read as runs of one system; name the fields in system= "
                                            "(CLI --system-from) to compare them as systems")]


def _by_default(logs: list[LogFile]) -> tuple[list[str], list[ResultWarning]]:
    split = differing(logs, lambda f: (f.model, f.task), ["model"], _candidates(logs))
    if not split:
        for f in logs:
            f.system = f.model
        return [], []
    names = ["model", *split]
    for f in logs:
        f.system = label(f, names)
        f.definition = {n: f.fields.get(n, ABSENT) for n in names}
    models = sorted({f.model for f in logs if len({g.system for g in logs if g.model == f.model}) > 1})
    systems = sorted({f.system for f in logs if f.model in models})
    return split, [ResultWarning(
        "systems_split", f"the logs of {', '.join(map(repr, models[:3]))}{' and others' if len(models) > 3 else ''} "
        f"differ in {_values([f for f in logs if f.model in models], split)}: they are read as separate systems "
        f"({', '.join(map(repr, systems[:4]))}{', ...' if len(systems) > 4 else ''}), never as runs of one; "
        "choose the fields that define a system with system=[...] (CLI --system-from), e.g. system='model' to "
        "join them as runs")]


def _by_fields(logs: list[LogFile], system: str | Sequence[str]) -> tuple[list[str], list[ResultWarning]]:
    names = _expand(_requested(system), logs)
    for f in logs:
        f.system = label(f, names)
        f.definition = {n: f.fields.get(n, ABSENT) for n in names}
    within = differing(logs, lambda f: (f.system, f.task), names, _candidates(logs), greedy=False)
    return names, _merged_warning(logs, within, f"system={list(system) if not isinstance(system, str) else system!r}")


def _by_names(logs: list[LogFile]) -> tuple[list[str], list[ResultWarning]]:
    """A ``{name: path}`` dict: the fields that differ between the logs of one task are the systems'
    definitions (recorded); those that differ within one name are named in a warning."""
    cands = ["model", *_candidates(logs)]
    defining = [c for c in cands if any(len({f.fields.get(c, ABSENT) for f in logs if f.task == t}) > 1
                                        for t in {f.task for f in logs})]
    for f in logs:
        f.system = str(f.name)
        f.definition = {n: f.fields.get(n, ABSENT) for n in defining}
    within = differing(logs, lambda f: (f.system, f.task), [], defining, greedy=False)
    return defining, _merged_warning(logs, within, "the {name: path} dict")


def assign_systems(files: list[LogFile], system: str | Sequence[str] | None) -> tuple[set[str], list[ResultWarning]]:
    """Set each log's ``system`` and ``definition``; the fields that define the systems (exempt
    from the one-configuration-per-task check) and the warnings."""
    logs = [f for f in files if f.fields is not None]
    named = [f for f in logs if f.name is not None]
    for f in files:
        if f.fields is None:
            f.system = ""  # a score table: its rows carry their own system
    if not logs:
        if system is not None:
            raise DataError("system= names log fields (model, task_args, ...); score tables have none: name the "
                            "systems with the table's system column")
        return set(), []
    if named:
        if system is not None:
            raise DataError("name the systems either with a {name: path} dict or with system= fields, not both")
        if len(named) < len(logs):
            raise DataError("a {name: path} dict names every log's system; mixing it with unnamed logs is ambiguous")
        defining, warns = _by_names(logs)
    elif system is not None:
        defining, warns = _by_fields(logs, system)
    else:
        defining, warns = _by_default(logs)
    return set(defining), warns


__all__ = ["LogFile", "assign_systems", "flatten"]
