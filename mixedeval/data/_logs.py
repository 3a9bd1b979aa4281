"""``me.read_eval_logs``: the per-item scores of evaluation-harness logs as one long table.

Formats (one private reader module each): lm-evaluation-harness ``--log_samples`` output
(:mod:`._logs_lmeval`), Inspect AI ``.eval`` / ``.json`` logs (:mod:`._logs_inspect`, through
inspect_ai's reader), HELM run directories (:mod:`._logs_helm`) and generic long or wide tables
(:mod:`._logs_table`). The checks are in :mod:`._logs_validate`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..results import ResultMixin, ResultWarning
from . import _logs_validate as lv
from ._logs_helm import STATS_FILE, read_helm_run
from ._logs_inspect import looks_like_inspect_json, read_inspect_log
from ._logs_lmeval import is_samples_file, read_samples_file
from ._logs_rows import Rows
from ._logs_systems import LogFile, assign_systems, flatten
from ._logs_table import TABLE_SUFFIXES, read_score_table
from ._logs_walk import dir_files, glob_files

FORMATS = ("auto", "lm-eval", "inspect", "helm", "table")
COLUMNS = ("system", "task", "item", "run", "epoch", "metric", "score", "source", "format")
#: columns of :attr:`EvalLogs.reduction`
REDUCTION_COLUMNS = ("system", "task", "metric", "reducer", "n_epochs")
_NOTES = {
    "non_numeric": "{n} metric values are not numbers and were not read (e.g. {ex}); corpus-level metrics "
                   "logged as (reference, prediction) pairs need their sufficient statistics "
                   "(me.metrics.sentence_stats)",
    "lmeval_no_results": "{n} lm-eval samples files have no results_<date>.json beside them (e.g. {ex}): the system "
                         "is named after the directory and task versions are unknown",
    "helm_perturbed": "{n} HELM stats of perturbed instances were not read (e.g. {ex}); only unperturbed "
                      "instances are compared",
    "inspect_status": "{n} Inspect logs did not finish successfully (e.g. {ex}); their missing samples are "
                      "reported as missing items",
}


@dataclass(frozen=True, repr=False, eq=False)
class EvalLogs(ResultMixin):
    """Result of :func:`read_eval_logs`.

    table : the canonical long score table, one row per item x run x epoch x metric: system, task,
        item, run, epoch, metric, score, source (the file), format, plus format-specific metadata
        (``filter`` for lm-eval, ``split`` for HELM). ``run`` is a separate whole evaluation of the
        system (another log, date, seed or trial); ``epoch`` a repeated sample of the item within
        one evaluation (Inspect epochs; ``"1"`` where the format has none).
    files : one row per file read: source, format, system, task, n_rows, model (the model name
        the log gives), definition (a dict: the fields that define its system and their values,
        see ``read_eval_logs(system=...)``), fields (a dict: every field the log records).
    warnings : ResultWarning tuple (dropped items, metrics missing for some systems, values
        that are not numbers, ...).
    reduction : the epochs the reader reduced to one score per question, one row per system x
        task x metric so reduced: system, task, metric, reducer (the log's epoch reducer:
        ``"max"``, ``"median"``, ``"mode"``, ``"pass_at_2"``, ``"at_least_2"``, ...), n_epochs
        (the epochs the log's evaluation sampled, ``log.eval.config.epochs``). Empty when
        nothing was reduced: the epochs of Inspect's default ``mean`` reducer stay rows of
        ``table`` (averaged within the question by the analyses). :meth:`reduction_text` says
        it in words ("max over 3 epochs").
    """

    table: pd.DataFrame
    files: pd.DataFrame
    warnings: tuple[ResultWarning, ...] = ()
    reduction: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(REDUCTION_COLUMNS)))

    _print_tables = ("summary",)
    _title = "Evaluation logs"

    def summary(self) -> pd.DataFrame:
        """One row per system x task x metric: n_items, n_runs, n_epochs (the most epochs sampled of
        an item in one run: for a metric the reader reduced, the log's epochs), epochs (how the
        epochs enter: ``"max over 3 epochs"`` for a reduced metric, ``"3 epochs, averaged within
        the question"``, ``"one per question"``), mean_score (the mean over all rows: items with
        equal epochs weigh equally)."""
        t = self.table
        keys = ["system", "task", "metric"]
        g = t.groupby(keys, observed=True, sort=True)
        out = g.agg(n_items=("item", "nunique"), n_runs=("run", "nunique"), mean_score=("score", "mean")).reset_index()
        ep = t.groupby([*keys, "run", "item"], observed=True).size()
        ep = ep.groupby(level=keys, observed=True).max().rename("n_epochs").reset_index()
        out = out.merge(ep, on=keys, how="left")
        red = self.reduction
        words = []
        if red is not None and len(red):
            r = red.assign(**{k: red[k].astype(str) for k in keys}).drop_duplicates(keys).set_index(keys)
            for i, row in out.iterrows():
                k = (str(row["system"]), str(row["task"]), str(row["metric"]))
                if k in r.index:
                    out.loc[i, "n_epochs"] = int(r.loc[k, "n_epochs"])
                    words.append(reduction_words(str(r.loc[k, "reducer"]), int(r.loc[k, "n_epochs"])))
                else:
                    words.append(None)
        else:
            words = [None] * len(out)
        out["epochs"] = [w if w is not None else (f"{int(n)} epochs, averaged within the question" if n > 1
                                                  else "one per question")
                         for w, n in zip(words, out["n_epochs"])]
        return out[["system", "task", "metric", "n_items", "n_runs", "n_epochs", "epochs", "mean_score"]]

    def reduction_text(self, metric: str | None = None, systems: Sequence[str] | None = None) -> str | None:
        """How the reader reduced the epochs of ``metric`` (all metrics when None) for ``systems``
        (all when None), in words: ``"max over 3 epochs"``; several reducers or epoch counts are
        listed by system (``"max over 3 epochs (a, b); max over 5 epochs (c)"``). None when
        nothing was reduced (the epochs, if any, are rows of :attr:`table`)."""
        return reduction_text(self.reduction, metric, systems)

    def epochs_text(self, metric: str | None = None, systems: Sequence[str] | None = None) -> str:
        """How the epochs of ``metric`` (all metrics when None) enter the analyses, in words for a
        provenance or a method text: ``"max over 3 epochs (the log's reducer; one score per
        question)"``, ``"3 epochs, averaged within the question"`` (the mean reducer: the
        epochs are rows), or ``"one per question"``."""
        red = self.reduction_text(metric, systems)
        if red is not None:
            return f"{red} (the log's reducer; one score per question)"
        t = self.table
        if metric is not None:
            t = t[t["metric"] == metric]
        if systems is not None:
            t = t[t["system"].astype(str).isin([str(x) for x in systems])]
        n = int(t.groupby(["system", "task", "metric", "run", "item"], observed=True).size().max()) if len(t) else 1
        return f"{n} epochs, averaged within the question" if n > 1 else "one per question"

    def scores(self, metric: str) -> pd.DataFrame:
        """The rows of one metric (system, task, item, run, epoch, score), the input of the analyses."""
        if metric not in set(self.table["metric"]):
            raise DataError(f"metric {metric!r} is not in these logs; available: {sorted(set(self.table['metric']))}")
        t = self.table
        return t.loc[t["metric"] == metric, ["system", "task", "item", "run", "epoch", "score"]].reset_index(drop=True)

    def systems(self) -> pd.DataFrame:
        """One row per system: system, model, one column per field that defines the systems (the
        ``system=`` fields, the fields a default split used, or those that differ between the logs
        of a ``{name: path}`` dict), n_files."""
        f = self.files[self.files["system"].isin(set(self.table["system"]))]
        fields = list(dict.fromkeys(k for d in f["definition"] for k in d if k != "model"))
        rows = []
        for name, g in f.groupby("system", sort=True):
            row = {"system": name, "model": ", ".join(sorted({str(m) for m in g["model"] if m is not None}))}
            for k in fields:
                row[k] = ", ".join(sorted({str(d.get(k)) for d in g["definition"] if k in d}))
            rows.append({**row, "n_files": len(g)})
        return pd.DataFrame(rows, columns=["system", "model", *fields, "n_files"])

    def _scalars(self) -> list[tuple[str, Any]]:
        t = self.table
        return [("rows", len(t)), ("systems", t["system"].nunique()), ("tasks", t["task"].nunique()),
                ("metrics", ", ".join(sorted(map(str, t["metric"].unique()))[:8]))]


def reduction_words(reducer: str, n_epochs: int) -> str:
    """One reducer in words: ``"max over 3 epochs"``."""
    return f"{reducer} over {int(n_epochs)} epoch{'s' if int(n_epochs) != 1 else ''}"


def reduction_text(reduction: pd.DataFrame | None, metric: str | None = None,
                   systems: Sequence[str] | None = None) -> str | None:
    """:meth:`EvalLogs.reduction_text` on a reduction table (:data:`REDUCTION_COLUMNS`)."""
    if reduction is None or not len(reduction):
        return None
    r = reduction
    if metric is not None:
        r = r[r["metric"].astype(str) == str(metric)]
    if systems is not None:
        r = r[r["system"].astype(str).isin([str(x) for x in systems])]
    if not len(r):
        return None
    words = [reduction_words(str(a), int(b)) for a, b in zip(r["reducer"], r["n_epochs"])]
    groups: dict[str, list[str]] = {}
    for w, sys_name in zip(words, r["system"].astype(str)):
        groups.setdefault(w, [])
        if sys_name not in groups[w]:
            groups[w].append(sys_name)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{w} ({', '.join(names)})" for w, names in groups.items())


# ------------------------------------------------------------------------------ discovery
def _detect(p: Path) -> str | None:
    """The format of one file (None: not a log file)."""
    if p.name == STATS_FILE:
        return "helm"
    if is_samples_file(p):
        return "lm-eval"
    suf = p.suffix.lower()
    if suf == ".eval":
        return "inspect"
    if suf == ".json":
        if p.name.startswith("results_") or p.name == "run_spec.json":
            return None
        return "inspect" if looks_like_inspect_json(p) else None
    return None


def _expand(entry: Any, fmt: str) -> list[tuple[Path, str]]:
    """(file, format) pairs of one path, directory (searched recursively) or glob."""
    if isinstance(entry, pd.DataFrame):
        return [(entry, "table")]  # type: ignore[list-item]
    s = str(entry)
    if any(ch in s for ch in "*?["):
        paths = glob_files(s)
        if not paths:
            raise DataError(f"the pattern {s!r} matches no file")
    else:
        p = Path(s)
        if not p.exists():
            raise DataError(f"{s!r} does not exist; pass a log file, a directory of logs, a glob or a list of these")
        paths = dir_files(p) if p.is_dir() else [p]
    out = []
    for q in paths:
        suf = q.suffix.lower()
        if fmt == "auto":
            f = _detect(q)
            if f is None and not Path(s).is_dir() and suf in TABLE_SUFFIXES:
                f = "table"
        elif fmt == "table":
            f = "table" if suf in TABLE_SUFFIXES else None
        elif fmt == "lm-eval":
            f = fmt if is_samples_file(q) else None
        elif fmt == "inspect":
            f = fmt if suf == ".eval" or (suf == ".json" and looks_like_inspect_json(q)) else None
        else:
            f = fmt if q.name == STATS_FILE else None
        if f is not None:
            out.append((q, f))
    if not out:
        raise DataError(f"no evaluation log found in {s!r} (looked for lm-eval samples_<task>_<date>.jsonl, Inspect "
                        f".eval/.json logs, HELM {STATS_FILE}; CSV/Parquet tables need format='table' when inside "
                        "a directory)")
    return out


def _sources(source: Any, fmt: str) -> list[tuple[Any, str, str | None]]:
    """(file, format, system name or None) of every file to read; a file named twice is read once."""
    if isinstance(source, Mapping):
        entries = [(v, str(k)) for k, vs in source.items()
                   for v in (vs if isinstance(vs, (list, tuple)) else [vs])]
    elif isinstance(source, (list, tuple)):
        entries = [(v, None) for v in source]
    else:
        entries = [(source, None)]
    if not entries:
        raise DataError("source is empty; pass a log file, a directory, a glob, a list or a {system: path} dict")
    seen: dict[Any, str | None] = {}
    out, twice = [], []
    for entry, name in entries:
        for path, f in _expand(entry, fmt):
            key = id(path) if isinstance(path, pd.DataFrame) else path.resolve()
            if key in seen:
                if seen[key] != name:
                    raise DataError(f"{str(path)!r} is given for two systems ({seen[key]!r} and {name!r})")
                twice.append(str(path))
                continue
            seen[key] = name
            out.append((path, f, name))
    return out, twice


# ------------------------------------------------------------------------------ reading
def _read_one(path: Any, f: str, name: str | None, columns: Mapping[str, str] | None, metric: Any,
              metadata: Sequence[str] = (), keep_epochs: bool = False) -> Rows:
    rows = Rows(f)
    if f == "lm-eval":
        read_samples_file(path, rows, name, metadata=metadata)
    elif f == "inspect":
        read_inspect_log(path, rows, name, keep_epochs=keep_epochs)
    elif f == "helm":
        read_helm_run(path, rows, name, metadata=metadata)
    else:
        read_score_table(path, rows, columns=columns, metric=metric, system=name)
    return rows


def _read_all(files: list[tuple[Any, str, str | None]], columns: Mapping[str, str] | None, metric: Any,
              system: Any = None, metadata: Sequence[str] = (), keep_epochs: bool = False
              ) -> tuple[pd.DataFrame, pd.DataFrame, list[ResultWarning], list[LogFile], set[str], pd.DataFrame]:
    """Read every file; name each log's system (:func:`._logs_systems.assign_systems`). The last
    element: the epoch reductions the readers applied, per file and metric (source, metric,
    reducer, n_epochs)."""
    frames, logs, notes = [], [], []
    for i, (path, f, name) in enumerate(files):
        rows = _read_one(path, f, name, columns, metric, metadata, keep_epochs)
        df = pd.DataFrame({**rows.cols, **rows.extra})
        df["format"] = f
        frames.append(df)
        model = str(rows.fields.get("model") or (df["system"].iloc[0] if len(df) else ""))
        logs.append(LogFile(i, name, model, ", ".join(map(str, pd.unique(df["task"]))),
                            flatten(rows.fields) if rows.fields else None))
        notes.append(rows)
    defining, warnings = assign_systems(logs, system)
    file_rows = []
    for (path, f, _name), df, lf in zip(files, frames, logs):
        if lf.fields is not None:
            df["system"] = lf.system
        file_rows.append({"source": "<DataFrame>" if isinstance(path, pd.DataFrame) else str(path), "format": f,
                          "system": ", ".join(map(str, pd.unique(df["system"]))), "task": lf.task, "n_rows": len(df),
                          "model": lf.model if lf.fields is not None else None, "definition": dict(lf.definition),
                          "fields": dict(lf.fields or {})})
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
    reduced = pd.DataFrame([{"source": str(df["source"].iloc[0]), "metric": m, "reducer": r, "n_epochs": int(k)}
                            for df, rows in zip(frames, notes) if len(df) for m, (r, k) in rows.reduction.items()],
                           columns=["source", "metric", "reducer", "n_epochs"])
    for kind, text in _NOTES.items():
        n = sum(r.notes[kind] for r in notes)
        if n:
            ex = next(r.examples[kind] for r in notes if kind in r.examples)
            warnings.append(ResultWarning(kind, text.format(n=n, ex=ex)))
    return table, pd.DataFrame(file_rows), warnings, logs, defining, reduced


def _reduction(table: pd.DataFrame, reduced: pd.DataFrame) -> pd.DataFrame:
    """:attr:`EvalLogs.reduction` of the final table: the readers' reductions (per file and metric)
    of the system x task x metric cells it keeps, under the systems' final names."""
    if not len(reduced) or not len(table):
        return pd.DataFrame(columns=list(REDUCTION_COLUMNS))
    cells = table[["system", "task", "metric", "source"]].drop_duplicates()
    cells = cells.assign(source=cells["source"].astype(str), metric=cells["metric"].astype(str))
    out = cells.merge(reduced, on=["source", "metric"], how="inner")
    out = out.drop_duplicates(["system", "task", "metric", "reducer", "n_epochs"])
    out = out.sort_values(["system", "task", "metric"], kind="stable")
    return out[list(REDUCTION_COLUMNS)].reset_index(drop=True).astype({"n_epochs": int})


def _run_labels(df: pd.DataFrame) -> pd.Series:
    """``run``: the replicate (epoch, trial) when one file or directory holds a system's task, else
    the file's run (date id, run id, suite) with the replicate appended; "1" when nothing names a run."""
    g_ok, i_ok = df["run_group"].notna().to_numpy(), df["run_index"].notna().to_numpy()
    g_str = np.where(g_ok, df["run_group"].astype(str).to_numpy(dtype=object), None)
    idx = df["run_index"]
    if i_ok.any() and pd.api.types.is_numeric_dtype(idx):  # epochs / trials: integers, printed without ".0"
        i_str = np.where(i_ok, idx.fillna(0).astype(np.int64).astype(str).to_numpy(dtype=object), None)
    else:
        i_str = np.where(i_ok, idx.astype(str).to_numpy(dtype=object), None)
    n_groups = df.assign(_g=np.where(g_ok, g_str, "")).groupby(["system", "task"], observed=True)["_g"].transform(
        "nunique")
    single = np.where(i_ok, i_str, np.where(g_ok, g_str, "1"))
    multi = np.where(i_ok, np.where(g_ok, g_str, "").astype(object) + "/" + np.where(i_ok, i_str, "").astype(object),
                     np.where(g_ok, g_str, "1"))
    return pd.Series(np.where(n_groups.to_numpy() > 1, multi, single), index=df.index, dtype=object).astype(str)


def _epoch_labels(ep: pd.Series) -> pd.Series:
    """``epoch`` as strings ("1", "2", ...; integers printed without ".0"), "1" where none is logged."""
    if pd.api.types.is_numeric_dtype(ep):
        return ep.fillna(1).astype(np.int64).astype(str)
    out = ep.astype(object).where(ep.notna(), "1")
    return out.map(lambda v: str(int(v)) if isinstance(v, (int, np.integer, float, np.floating)) else str(v))


def _check_metadata(table: pd.DataFrame, metadata: Sequence[str]) -> None:
    """Every requested metadata field was found in some log (a DataError naming the missing ones)."""
    missing = [m for m in metadata if not any(c in table.columns and table[c].notna().any()
                                              for c in (m, f"metadata_{m}"))]
    if missing:
        raise DataError(f"metadata field(s) {missing} were found in no log (lm-eval: keys of each sample's 'doc'; "
                        "HELM: fields of instances.json beside per_instance_stats.json; Inspect: the samples' "
                        "scalar metadata, carried without asking)")


def _select_metrics(df: pd.DataFrame, metric: Any) -> list[str] | None:
    """The requested metrics (None: all); a metric that is not in the logs is a DataError."""
    if metric is None:
        return None
    requested = [metric] if isinstance(metric, str) else [str(m) for m in metric]
    have = set(df["metric"])
    missing = [m for m in requested if m not in have]
    if missing:
        raise DataError(f"metric(s) {missing} not found in the logs; available metrics: {sorted(have)[:30]}")
    return requested


def _select_systems(df: pd.DataFrame, systems: Any) -> pd.DataFrame:
    """Keep the requested systems (a list) or rename them (a dict); an unknown name is a DataError."""
    if systems is None:
        return df
    have = set(df["system"])
    if isinstance(systems, Mapping):
        missing = [s for s in systems if s not in have]
        df = df.assign(system=df["system"].map(lambda s: systems.get(s, s)))
    else:
        keep = [systems] if isinstance(systems, str) else list(systems)
        missing = [s for s in keep if s not in have]
        df = df.loc[df["system"].isin(keep)]
    if missing:
        raise DataError(f"system(s) {missing} not found in the logs; systems read: {sorted(have)}")
    return df


def read_eval_logs(
    source: Any,
    format: str = "auto",  # noqa: A002 - the issue's public name
    *,
    metric: str | Sequence[str] | None = None,
    systems: Sequence[str] | Mapping[str, str] | None = None,
    columns: Mapping[str, str] | None = None,
    drop_missing: bool = False,
    system: str | Sequence[str] | None = None,
    metadata: str | Sequence[str] = (),
    keep_epochs: bool = False,
) -> EvalLogs:
    """Read evaluation-harness logs into the canonical long score table.

    Parameters
    ----------
    source : a log file, a directory (searched recursively), a glob, a list of these, or a dict
        ``{system_name: path or list of paths}`` that names the systems explicitly (instead of
        the model name in the logs). A generic table may also be a pandas DataFrame.
    format : ``"auto"`` (by file name and content), ``"lm-eval"`` (lm-evaluation-harness
        ``--log_samples``: ``samples_<task>_<date>.jsonl`` beside ``results_<date>.json``),
        ``"inspect"`` (Inspect AI ``.eval`` / ``.json`` logs; needs ``mixedeval[logs]``),
        ``"helm"`` (HELM run directories: ``per_instance_stats.json`` with ``run_spec.json``) or
        ``"table"`` (a CSV/TSV/Parquet/JSON long or wide table; see ``columns``).
    metric : keep only this metric (or these metrics); a DataError if one is missing.
    systems : keep only these systems (a list), or rename systems (a dict old -> new), by the
        names the systems get (see ``system``).
    columns : for ``format="table"``: the canonical names mapped to your columns, e.g.
        ``{"system": "model", "item": "id", "run": "seed"}``. A long table has ``metric`` and
        ``score`` columns; a wide one has a column per metric.
    drop_missing : items that lack a score for some system or run of a task are an error by
        default (naming the systems and items); True drops them for every system, with a warning.
    system : the log fields that define a system, alone or combined: ``"model"``,
        ``"task_args"`` (all task arguments) or ``"task_args.cot"`` (one), ``"solver"`` (the
        solver names of Inspect's plan; HELM's adapter method), ``"plan"`` (the solvers with
        their parameters; lm-eval's system instruction / chat template; HELM's prompt settings),
        ``"model_args"`` (or one key), ``"tags"``, ``"generation_config"`` (or one key:
        ``"generation_config.temperature"``); lm-eval's come from ``results_<date>.json``
        (``config.model_args``, ``config.gen_kwargs``, ``n-shot`` as ``task_args.num_fewshot``),
        HELM's from the run spec's adapter spec. The system's name joins the values:
        ``system=["model", "task_args.cot"]`` gives ``"mockllm/m | cot=True"``. By default (None)
        the system is the model name, but one model's logs of a task that differ in task
        arguments, tags, solver, plan, model arguments or (non-operational) generation settings
        are split by the fewest differing fields (``"mockllm/m | cot=True"``) with a
        ``systems_split`` warning naming them, never merged silently; a ``system=`` or a
        ``{name: path}`` dict that leaves differing fields inside one system gets a
        ``systems_merged`` warning. The fields that define the systems (and, for a dict source,
        the fields that differ between its logs) are recorded in ``files["definition"]`` and
        :meth:`EvalLogs.systems`, and are exempt from the one-configuration-per-task check: two
        prompting strategies of one model (task args ``cot=True`` / ``False``) are compared with
        ``system=["model", "task_args.cot"]`` or ``{"direct": path, "cot": path}``.
    metadata : per-item fields to carry as columns (e.g. a question's cluster or passage id):
        lm-eval ``doc`` fields (``samples_*.jsonl``: ``doc[name]``), HELM instance fields
        (``instances.json`` beside the stats: ``split``, ``sub_split``, ``id`` or any scalar
        field). Inspect samples' scalar ``metadata`` fields are always carried. A field named like
        a canonical column gets the prefix ``metadata_``; a field found in no log is a DataError.
    keep_epochs : True keeps every epoch of an Inspect log as a row even where the log's epoch
        reducer is not the mean (``Epochs(5, "pass_at_2")``): the attempts that
        :func:`mixedeval.pass_at_k` needs; nothing is then reduced (:attr:`EvalLogs.reduction`
        stays empty).

    Returns an :class:`EvalLogs` whose ``table`` has system, task, item, run, metric, score,
    source, format (and format metadata: lm-eval ``filter``, HELM ``split``). ``run`` is a whole
    evaluation: the train trial (HELM) within one log, and the date id / run id / suite when a
    system's task comes from several logs (several dates or output directories of one model
    become runs). ``epoch`` is a repeated sample of one item within one evaluation (Inspect's
    ``epochs``; a generic table's ``epoch`` column): analyses average epochs within the item and
    never count them as runs. Epochs an Inspect log reduced by another reducer (``Epochs(3,
    "max")``) are reduced as Inspect reduces them, one row per question, and recorded in
    :attr:`EvalLogs.reduction`. Checks: see :mod:`mixedeval.data._logs_validate`.
    """
    if format not in FORMATS:
        raise DataError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
    files, twice = _sources(source, format)
    metadata = [metadata] if isinstance(metadata, str) else [str(m) for m in metadata]
    table, file_tab, warnings, logs, defining, reduced = _read_all(files, columns, metric if format == "table" else None,
                                                          system, metadata, bool(keep_epochs))
    _check_metadata(table, metadata)
    if twice:
        warnings.append(ResultWarning("duplicated_files", f"{len(twice)} files were named more than once and read "
                                                          f"once (e.g. {twice[0]})"))
    if not len(table):
        raise DataError("the logs hold no numeric score; check the files and the format")
    table["run"] = _run_labels(table)
    table["epoch"] = _epoch_labels(table["epoch"])
    table = _select_systems(table, systems)
    if isinstance(systems, Mapping):
        file_tab["system"] = file_tab["system"].map(lambda s: systems.get(s, s))
    requested = _select_metrics(table, metric)
    table, w_nan = lv.drop_nan_scores(table)
    warnings += w_nan + lv.check_metrics(table, requested)  # before selecting: which systems have the metric
    if requested is not None:
        table = table.loc[table["metric"].isin(requested)]
    lv.check_duplicates(table)
    kept = set(table["source"].unique())
    lv.check_mixed_tasks(table, [lf for lf, src in zip(logs, file_tab["source"]) if src in kept], defining)
    table, w_miss = lv.check_missing(table, drop_missing)
    warnings += w_miss
    extra = [c for c in table.columns if c not in COLUMNS and c not in ("run_group", "run_index", "task_signature",
                                                                         "item_hash") and table[c].notna().any()]
    out = table[list(COLUMNS) + extra].reset_index(drop=True)
    out["score"] = out["score"].astype(float)
    return EvalLogs(table=out, files=file_tab, warnings=tuple(warnings), reduction=_reduction(out, reduced))


__all__ = ["EvalLogs", "read_eval_logs"]
