"""The shapes of the JSON the evaluation-log readers read, declared per format, and one validator.

Each reader validates a document (or a JSON-lines record) against its shape *before* reading
fields from it, so a log of the wrong shape is a :class:`~mixedeval.errors.DataError` of the form
``"<file>: at <place>: expected <shape>, found <value>"`` (``<place>`` a JSON path such as
``$.config`` or ``$[3].stats[0].name``, prefixed by ``line N`` for JSON lines) instead of a
``TypeError`` / ``AttributeError`` deep in the reader.

Only what the readers use is declared: an object lists the keys read (other keys are allowed
and not checked), and a value the readers treat as data (a metric value that may be a number
or a (reference, prediction) pair, a free-form config entry) is :data:`ANY`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain, repeat
from operator import itemgetter
from dataclasses import dataclass, field
from typing import Any

from ..errors import DataError


class Spec:
    """An expected shape: :meth:`describe` says it, :meth:`first_error` finds the first mismatch."""

    def describe(self) -> str:
        raise NotImplementedError

    def first_error(self, value: Any, at: str) -> tuple[str, Spec, Any] | None:
        """(place, expected shape, value found) of the first mismatch, or None."""
        raise NotImplementedError


@dataclass(frozen=True)
class Kind(Spec):
    """A scalar (or any value) of the given Python types; bool is never a number."""

    types: tuple[type, ...]
    name: str

    def describe(self) -> str:
        return self.name

    def first_error(self, value: Any, at: str) -> tuple[str, Spec, Any] | None:
        if not self.types:
            return None
        ok = isinstance(value, self.types) and not (isinstance(value, bool) and bool not in self.types)
        return None if ok else (at, self, value)


ANY = Kind((), "anything")
STR = Kind((str,), "a string")
NUM = Kind((int, float), "a number")
INT = Kind((int,), "an integer")
BOOL = Kind((bool,), "true or false")
NULL = Kind((type(None),), "null")


@dataclass(frozen=True)
class OneOf(Spec):
    """One of several shapes (e.g. a string or null)."""

    options: tuple[Spec, ...]

    def describe(self) -> str:
        return " or ".join(o.describe() for o in self.options)

    def first_error(self, value: Any, at: str) -> tuple[str, Spec, Any] | None:
        errs = [o.first_error(value, at) for o in self.options]
        if any(e is None for e in errs):
            return None
        deeper = [e for e in errs if e is not None and e[0] != at]  # the value has the right kind, a part is wrong
        return deeper[0] if deeper else (at, self, value)


def optional(spec: Spec) -> OneOf:
    """``spec`` or null (an absent and a null key are the same to the readers)."""
    return OneOf((spec, NULL))


def _key_path(at: str, key: str) -> str:
    return f"{at}.{key}" if key.isidentifier() else f"{at}[{key!r}]"


@dataclass(frozen=True)
class Obj(Spec):
    """A JSON object; ``fields``: the keys read and their shapes (others are not checked)."""

    fields: Mapping[str, Spec] = field(default_factory=dict)
    required: tuple[str, ...] = ()

    def describe(self) -> str:
        need = f" with key(s) {', '.join(self.required)}" if self.required else ""
        return f"an object{need}"

    def first_error(self, value: Any, at: str) -> tuple[str, Spec, Any] | None:
        if not isinstance(value, dict):
            return at, self, value
        for key in self.required:
            if key not in value:
                return _key_path(at, key), Kind((), f"the key {key!r} ({self.fields[key].describe()})"), _MISSING
        for key, spec in self.fields.items():
            if key in value:
                err = spec.first_error(value[key], _key_path(at, key))
                if err is not None:
                    return err
        return None


@dataclass(frozen=True)
class ListOf(Spec):
    """A JSON array whose every element has the shape ``item``."""

    item: Spec

    def describe(self) -> str:
        return f"a list (each element {self.item.describe()})"

    def first_error(self, value: Any, at: str) -> tuple[str, Spec, Any] | None:
        if not isinstance(value, list):
            return at, self, value
        for i, v in enumerate(value):
            err = self.item.first_error(v, f"{at}[{i}]")
            if err is not None:
                return err
        return None


@dataclass(frozen=True)
class MapOf(Spec):
    """A JSON object with any keys, each value of the shape ``value``."""

    value: Spec
    what: str = "an object"

    def describe(self) -> str:
        return self.what

    def first_error(self, value: Any, at: str) -> tuple[str, Spec, Any] | None:
        if not isinstance(value, dict):
            return at, self, value
        for k, v in value.items():
            err = self.value.first_error(v, _key_path(at, str(k)))
            if err is not None:
                return err
        return None


_MISSING = object()


def found(value: Any) -> str:
    """A short description of a JSON value for an error message."""
    if value is _MISSING:
        return "no such key"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:40] + "..."
        return f"the string {text!r}"
    if isinstance(value, list):
        return f"a list of {len(value)} element(s)"
    if isinstance(value, dict):
        keys = ", ".join(map(str, list(value)[:5]))
        return f"an object (keys: {keys}{', ...' if len(value) > 5 else ''})"
    return type(value).__name__


# ------------------------------------------------------------------------------ the fast path
# Validating every line of a 100,000-line samples file through first_error (which builds the JSON
# path of every key it visits) made reading 1.84x slower (issue 33); a predicate per value called
# per record still cost ~10%. A shape is therefore compiled once into a *column* check: it answers
# "is every value of this list valid?" by walking the shape once per batch, with C-level loops
# over the batch (``set(map(type, values))``, ``map(dict.get, ...)``, ``chain.from_iterable``)
# instead of Python calls per value -- a list of JSON lines is checked key by key, the elements
# of every list under a key together. first_error runs only when a batch is rejected, to find and
# name the first invalid value. The check may reject a valid batch (e.g. an int subclass, which
# json never makes): then first_error decides, so the answer is always first_error's.

_Check = Callable[[list], bool]
#: the columns of a batch of objects: key -> the value of every object (None where absent)
Columns = dict[str, list]


def _types_check(types: frozenset[type]) -> _Check:
    """Every value's exact type is in ``types`` (json's own types: bool is not an int)."""
    return lambda values: types.issuperset(map(type, values))


def _obj_columns(spec: Obj) -> Callable[[list], Columns | None]:
    """The columns of ``spec``'s checked keys (and required ones) of a batch of objects, or None
    when the batch is not valid: not all dicts, a required key missing, a column failing its check
    (an optional key's column checked where the key is present; absent and null read alike)."""
    plan = []
    for key, sub in spec.fields.items():
        check, required = _compile(sub), key in spec.required
        if check is not None or required:
            plan.append((key, required, itemgetter(key), sub.first_error(None, "$") is None, check))

    def columns(values: list) -> Columns | None:
        if not _DICT.issuperset(map(type, values)):
            return None
        out: Columns = {}
        for key, required, get, nullable, check in plan:
            if required:
                try:
                    column = list(map(get, values))
                except KeyError:
                    return None
                ok = check is None or check(column)
            else:
                column = list(map(dict.get, values, repeat(key)))
                ok = check(column if nullable else [d[key] for d in values if key in d])  # type: ignore[misc]
            if not ok:
                return None
            out[key] = column
        return out
    return columns


def _container_check(spec: Spec) -> _Check | None:
    """The check of a list (ListOf) or object (Obj, MapOf) shape; None for any other shape."""
    if isinstance(spec, Obj):
        columns = _obj_columns(spec)
        return lambda values: columns(values) is not None
    if isinstance(spec, ListOf):
        item = _compile(spec.item)
        if item is None:
            return _types_check(_LIST)
        if isinstance(spec.item, Kind):  # the elements' types straight from the lists, no list of them made
            kinds = frozenset(spec.item.types)
            return lambda values: _LIST.issuperset(map(type, values)) and kinds.issuperset(
                map(type, chain.from_iterable(values)))
        return lambda values: _LIST.issuperset(map(type, values)) and item(list(chain.from_iterable(values)))
    if isinstance(spec, MapOf):
        value = _compile(spec.value)
        if value is None:
            return _types_check(_DICT)
        if isinstance(spec.value, Kind):
            kinds = frozenset(spec.value.types)
            return lambda values: _DICT.issuperset(map(type, values)) and kinds.issuperset(
                map(type, chain.from_iterable(map(dict.values, values))))
        return lambda values: _DICT.issuperset(map(type, values)) and value(
            list(chain.from_iterable(map(dict.values, values))))
    return None


def _oneof_check(spec: OneOf) -> _Check | None:
    """Scalars by their types; values of a container type by the one option of that type (a
    per-value check when two options take the same container type)."""
    parts = [_compile(o) for o in spec.options]
    if any(p is None for p in parts):
        return None
    scalars = frozenset(t for o in spec.options if isinstance(o, Kind) for t in o.types)
    by_type: dict[type, _Check] = {}
    for o, part in zip(spec.options, parts):
        if isinstance(o, Kind):
            continue
        kind = list if isinstance(o, ListOf) else dict if isinstance(o, (Obj, MapOf)) else None
        if kind is None or kind in by_type or kind in scalars:
            return lambda values: all(any(p([v]) for p in parts) for v in values)  # type: ignore[misc]
        by_type[kind] = part  # type: ignore[assignment]
    if not by_type:
        return _types_check(scalars)
    allowed = scalars | frozenset(by_type)

    def check(values: list) -> bool:
        if not allowed.issuperset(map(type, values)):
            return False
        return all(c([v for v in values if type(v) is kind]) for kind, c in by_type.items())
    return check


def _compile(spec: Spec) -> _Check | None:
    """The column check of ``spec`` (None: anything is valid)."""
    if isinstance(spec, Kind):
        return _types_check(frozenset(spec.types)) if spec.types else None
    if isinstance(spec, OneOf):
        return _oneof_check(spec)
    box = _container_check(spec)
    if box is not None:
        return box
    return lambda values: all(spec.first_error(v, "$") is None for v in values)  # another Spec: its own check


_DICT, _LIST = frozenset({dict}), frozenset({list})
_COMPILED: dict[int, tuple[Spec, Any]] = {}


def _cached(spec: Spec, kind: str, make: Callable[[], Any]) -> Any:
    """``make()``, made once per shape and kind (keyed by identity: shapes hold dicts)."""
    hit = _COMPILED.get(id(spec))
    if hit is None or hit[0] is not spec:
        hit = (spec, {})
        _COMPILED[id(spec)] = hit
    if kind not in hit[1]:
        hit[1][kind] = make()
    return hit[1][kind]


def _columns(spec: Spec) -> _Check:
    """The compiled column check of ``spec`` (every value of a batch valid?)."""
    return _cached(spec, "check", lambda: _compile(spec) or (lambda _values: True))


def _predicate(spec: Spec) -> Callable[[Any], bool]:
    """``spec``'s check of one value (its column check of a batch of one)."""
    check = _columns(spec)
    return lambda value: check([value])


def _error(file: str, where: str, what: str, err: tuple[str, Spec, Any]) -> DataError:
    at, expected, got = err
    place = f"{where}, {at}" if where else at
    kind = f" ({what})" if what else ""
    return DataError(f"{file}{kind}: at {place}: expected {expected.describe()}, found {found(got)}")


def validate(value: Any, spec: Spec, file: str, where: str = "", what: str = "") -> Any:
    """``value`` itself when it has the shape ``spec``; else a DataError naming ``file``, the place
    (``where``, e.g. ``"line 3"``, then the JSON path), the shape expected and the value found.
    ``what`` names the kind of file in the message (e.g. ``"an lm-evaluation-harness results
    file"``)."""
    if _columns(spec)([value]):
        return value
    err = spec.first_error(value, "$")
    if err is not None:
        raise _error(file, where, what, err)
    return value


def columns_of(values: list, spec: Obj) -> Columns:
    """The columns of the keys of ``spec`` that are checked or required (key -> the value of each
    object, None where absent), of objects already validated against ``spec``."""
    keys = _cached(spec, "keys", lambda: [k for k, sub in spec.fields.items()
                                          if k in spec.required or _compile(sub) is not None])
    return {key: list(map(dict.get, values, repeat(key))) for key in keys}


def validate_lines(values: list, spec: Obj, file: str, first_line: int, what: str = "") -> Columns:
    """The columns (:func:`columns_of`) of ``values``, the records of consecutive JSON lines (the
    first on line ``first_line``), when each has the object shape ``spec``, checked as one batch
    a key at a time; else :func:`validate`'s DataError for the first invalid record, naming its line."""
    out = _cached(spec, "columns", lambda: _obj_columns(spec))(values)
    if out is not None:
        return out
    for i, value in enumerate(values):
        err = spec.first_error(value, "$")
        if err is not None:
            raise _error(file, f"line {first_line + i}", what, err)
    return columns_of(values, spec)


# ------------------------------------------------------------------------------ per format
_ARGS = optional(OneOf((STR, MapOf(ANY, "an object of arguments"))))  # lm-eval's "k=v,k=v" or a dict

#: lm-eval ``results_<date>.json`` (lm_eval/loggers/evaluation_tracker.py): the keys read
LMEVAL_RESULTS = Obj({
    "model_name": optional(OneOf((STR, NUM))),
    "config": optional(Obj({"model_args": _ARGS, "gen_kwargs": _ARGS, "model": ANY})),
    "configs": optional(MapOf(optional(MapOf(ANY, "an object (the task's config)")), "an object of task configs")),
    "versions": optional(MapOf(ANY, "an object of task versions")),
    "n-shot": optional(MapOf(ANY, "an object of task n-shots")),
})

#: one line of an lm-eval ``samples_<task>_<date>.jsonl`` (lm_eval/evaluator.py); the metric
#: values (one key per name in ``metrics``) are data: numbers are read, others counted
LMEVAL_SAMPLE = Obj({
    "doc_id": OneOf((INT, STR)),
    "metrics": ListOf(STR),
    "filter": optional(STR),
    "doc": ANY,
    "doc_hash": optional(STR),
}, required=("doc_id", "metrics"))

_HELM_NAME = Obj({"name": STR, "split": optional(STR), "sub_split": optional(STR), "perturbation": ANY},
                 required=("name",))
_HELM_STAT = Obj({"name": _HELM_NAME, "count": optional(NUM), "sum": optional(NUM), "mean": optional(NUM)},
                 required=("name",))

#: HELM ``per_instance_stats.json``: a list of ``PerInstanceStats`` (src/helm/benchmark/metrics/metric.py)
HELM_STATS = ListOf(Obj({
    "instance_id": OneOf((STR, INT)),
    "train_trial_index": optional(INT),
    "perturbation": optional(Obj()),
    "stats": ListOf(_HELM_STAT),
}, required=("instance_id", "stats")))

#: HELM ``run_spec.json`` (src/helm/benchmark/run_spec.py): name, scenario_spec, adapter_spec
HELM_RUN_SPEC = Obj({
    "name": STR,
    "scenario_spec": optional(Obj({"class_name": optional(STR), "args": optional(MapOf(ANY, "an object of "
                                                                                           "arguments"))})),
    "adapter_spec": optional(Obj({"model": optional(STR), "model_deployment": optional(STR),
                                  "method": optional(STR)})),
})

#: HELM ``instances.json`` (read for ``metadata=``): a list of ``Instance`` objects
HELM_INSTANCES = ListOf(Obj({"id": optional(OneOf((STR, INT)))}))

__all__ = ["ANY", "BOOL", "HELM_INSTANCES", "HELM_RUN_SPEC", "HELM_STATS", "INT", "LMEVAL_RESULTS", "LMEVAL_SAMPLE",
           "NULL", "NUM", "STR", "Kind", "ListOf", "MapOf", "Obj", "OneOf", "Spec", "found", "optional",
           "Columns", "columns_of", "validate", "validate_lines"]
