"""The rows every evaluation-log reader produces, before they become the canonical long table.

A reader appends one record per (item x run x metric) score to :class:`Rows` and its notes
(non-numeric values skipped, perturbed instances left out, ...) to ``Rows.notes``. Columns:

* ``system``, ``task``, ``item``, ``metric``, ``score``: as in the final table;
* ``run_group``: the file or directory one evaluation run came from (an lm-eval date id, an
  Inspect log's run id, a HELM suite), ``run_index``: the replicate inside it (a
  HELM train trial: the few-shot examples change, shared by every item; None where a file holds
  one run), ``epoch``: a repeated sample of one item within one evaluation (Inspect epochs;
  None where the format has none) -- never a run;
* ``source``: the file read; ``task_signature``: what identifies the task's configuration (task
  version and n-shot, dataset and task arguments, scenario spec) so that different tasks logged
  under one name are caught; ``item_hash``: a per-item content hash where the format logs one
  (lm-eval's ``doc_hash``), else None; ``extra``: format-specific metadata columns.

``fields`` holds what the file's evaluation was run with, the fields a system may be defined by
(:mod:`._logs_systems`): ``model``, ``task_args``, ``solver``, ``plan``, ``model_args``,
``tags``, ``generation_config`` (a value or a dict of values each; one file is one evaluation).

``reduction`` holds, per metric a reader reduced over epochs itself (Inspect's non-mean
reducers), the reducer's name and the epochs it reduced: ``{metric: (reducer, n_epochs)}``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

FIELDS = ("system", "task", "item", "metric", "score", "run_group", "run_index", "source", "task_signature",
          "item_hash", "epoch")


@dataclass
class Rows:
    """Column lists of the records read so far, plus counted notes ``kind -> (count, example)``."""

    format: str
    cols: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in FIELDS})
    extra: dict[str, list[Any]] = field(default_factory=dict)
    notes: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    reduction: dict[str, tuple[str, int]] = field(default_factory=dict)

    def add(self, system: Any, task: Any, item: Any, metric: str, score: float, run_group: str,
            run_index: Any, source: str, task_signature: str | None, item_hash: str | None = None,
            epoch: Any = None, **extra: Any) -> None:
        n = len(self.cols["system"])
        for k, v in (("system", system), ("task", task), ("item", item), ("metric", metric), ("score", score),
                     ("run_group", run_group), ("run_index", run_index), ("source", source),
                     ("task_signature", task_signature), ("item_hash", item_hash), ("epoch", epoch)):
            self.cols[k].append(v)
        for k, v in extra.items():
            col = self.extra.get(k)
            if col is None:
                col = self.extra[k] = [None] * n
            col.append(v)
        for k, col in self.extra.items():
            if k not in extra:
                col.append(None)

    def extend(self, system: Any, task: Any, items: list, metrics: list, scores: list, run_group: str,
               run_index: Any, source: str, task_signature: str | None, item_hashes: list,
               **extra: list) -> None:
        """Append one file's records at once: per-record lists (items, metrics, scores, item
        hashes, extra columns) and values shared by the whole file."""
        n, before = len(items), len(self)
        c = self.cols
        c["item"].extend(items)
        c["metric"].extend(metrics)
        c["score"].extend(scores)
        c["item_hash"].extend(item_hashes)
        for k, v in (("system", system), ("task", task), ("run_group", run_group), ("run_index", run_index),
                     ("source", source), ("task_signature", task_signature), ("epoch", None)):
            c[k].extend([v] * n)
        for k, col in extra.items():
            self.extra.setdefault(k, [None] * before).extend(col)
        for k, col in self.extra.items():
            if k not in extra:
                col.extend([None] * n)

    def note(self, kind: str, example: str, count: int = 1) -> None:
        """Count a note (e.g. ``non_numeric``) and keep its first example for the warning."""
        self.notes[kind] += count
        self.examples.setdefault(kind, example)

    def __len__(self) -> int:
        return len(self.cols["system"])


#: names a metadata field may not take as a column (it gets the prefix ``metadata_``)
RESERVED = frozenset({"system", "task", "item", "run", "epoch", "metric", "score", "source", "format", "run_group",
                      "run_index", "task_signature", "item_hash", "filter", "split"})


def metadata_column(name: str) -> str:
    """The table column of a metadata field: its name, or ``metadata_<name>`` for a reserved one."""
    return f"metadata_{name}" if name in RESERVED else name


def scalar(v: Any) -> Any:
    """A metadata value as a column value: str, int, float or bool as is, anything else None."""
    return v if isinstance(v, (str, int, float, bool)) else None

