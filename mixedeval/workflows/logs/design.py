"""The evaluation design: one frozen value built once per call of :func:`mixedeval.compare_logs`,
:func:`mixedeval.summarize` or :func:`mixedeval.questions_needed`, which every analysis of that call
reads (DESIGN.md: "one design in, one answer out"). It is the one place where

* the rows are put in canonical form (system, task, item, run, [epoch], score[, cluster]);
* the cluster identity is built (``task::label``: clusters are nested in tasks) and checked (one
  non-missing label per question), once, whichever door the rows came in by (logs, a table);
* epochs are reduced: each question's score per system, task and run is the mean of its epochs
  (Inspect's default reducer; :attr:`EvalDesign.scores`), and the question's score per system and
  task the mean of those over runs (:attr:`EvalDesign.questions`). Logs whose scores Inspect
  already reduced with another reducer (``Epochs(3, "max")``: ``EvalLogs.reduction``) hold one row
  per question; the design says so (:attr:`EvalDesign.epochs_text`, "max over 3 epochs");
* the run verdict is decided: per task the between-run ANOVA pooled over the systems
  (:func:`run_anova`, the questions x runs tables of :attr:`EvalDesign.scores`) and Bancroft's
  sometimes-pool rule (:class:`RunAnova`; the rule and its calibration are in
  :mod:`mixedeval.workflows._paired`), whose variance pieces are never negative in total.

Every input comes in by one door, :func:`read_design` (a score table, an
:class:`~mixedeval.EvalLogs`, or log paths read here once; ``keep_epochs=True`` reads every epoch
whatever the log's reducer). The design carries both the unreduced attempts
(:attr:`EvalDesign.attempts`: pass@k and pass^k count them) and their reduction
(:attr:`EvalDesign.scores`, :attr:`EvalDesign.questions`).

The paired analysis (:mod:`mixedeval.workflows._paired`), the system table of
:func:`mixedeval.summarize`, the bootstraps and the model of :func:`mixedeval.compare_logs`, and
the plan's pilot statistics (:meth:`EvalDesign.sample_stats`) read this value, never the logs
again.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ...data._logs import EvalLogs, read_eval_logs
from ...data.table import as_pandas
from ...data.validate import require_columns, require_finite
from ...errors import DataError
from ...results import ResultWarning
from .._input_checks import check_cluster_labels, check_repeated_questions

#: level of the preliminary F test of the run variance (Bancroft 1944 "sometimes pool"; :mod:`.._paired`;
#: 0.25 before issue 39's atlas found 92.5% coverage with 2 systems x 3 runs of 0/1 scores)
RUN_PRETEST_LEVEL = 0.30
#: share of a negative method-of-moments run variance (MS_run < MS_res) added when the test pools it
RUN_NEGATIVE_SHARE = 0.45
#: at most this many run df (df_run = sum_s (R_s - 1): 2 runs of 2 or 3 systems) the run variance
#: rests on too little to pool it on a test at ``RUN_PRETEST_LEVEL`` (issue 39's atlas: 89% coverage
#: with 2 systems x 2 runs): the test's level is ``RUN_PRETEST_LEVEL_FEW_DF`` and no share of a
#: negative estimate is added (:mod:`.._paired`)
RUN_FEW_DF = 3
RUN_PRETEST_LEVEL_FEW_DF = 0.5
#: the Satterthwaite df of a variance with the run part added never fall below this (a difference of
#: mean squares can push them below 1, where no t interval exists)
RUN_MIN_DF = 1.0
#: the variance of a difference (or of a system's mean) never falls below this share of its
#: question-level variance through that share
RUN_SHRINK_FLOOR = 0.25

KEYS = ("system", "task", "item", "run")


# ------------------------------------------------------------------------------ clusters
def check_clusters(s: pd.DataFrame, cluster: str) -> None:
    """A DataError unless every question (task, item) has exactly one, non-missing cluster."""
    if cluster not in s.columns:
        raise DataError(f"cluster={cluster!r} is not a column of the scores; columns: {list(s.columns)}")
    check_cluster_labels(s[cluster], cluster)
    if s[cluster].isna().any():
        bad = s.loc[s[cluster].isna(), "item"].iloc[0]
        raise DataError(f"{int(s[cluster].isna().sum())} rows have no cluster (column {cluster!r}), e.g. item "
                        f"{bad!r}; every question needs its cluster")
    k = s.groupby(["task", "item"], observed=True)[cluster].nunique()
    if (k > 1).any():
        t, i = k.index[int(np.argmax(k.to_numpy() > 1))]
        raise DataError(f"question {i!r} of task {t!r} has {int(k.max())} different clusters (column {cluster!r}); "
                        "a question belongs to one cluster")


def logs_cluster_column(table: pd.DataFrame, cluster: str) -> str:
    """The column of a logs' table holding ``cluster`` (the column itself, or Inspect's sample
    metadata field ``metadata_<cluster>``): the one rule of every door."""
    if not isinstance(cluster, str):
        raise DataError(f"cluster must name a column of the logs' table, got {cluster!r}")
    for col in (cluster, f"metadata_{cluster}"):
        if col in table.columns:
            return col
    raise DataError(f"cluster={cluster!r} is not a column of the logs' table (columns: {list(table.columns)}); "
                    "Inspect sample metadata fields become columns, a generic table names it with a 'cluster' column")


# ------------------------------------------------------------------------------ the run verdict
@dataclass(frozen=True)
class RunAnova:
    """The pooled two-way ANOVA of the systems' questions x runs tables (:mod:`.._paired`)."""

    ms_run: float
    ms_res: float
    df_run: float
    df_res: float
    weight: float  # sum_s (R_s - 1) n_s

    @property
    def sigma2(self) -> float:
        """The method-of-moments between-run variance, truncated at 0."""
        return max(0.0, (self.ms_run - self.ms_res) * self.df_run / self.weight) if self.df_run else 0.0

    @property
    def p_value(self) -> float:
        """P-value of the preliminary F test ``MS_run / MS_res`` on (df_run, df_res) df (NaN without it)."""
        if not self.df_run or not self.df_res:
            return np.nan
        if self.ms_res == 0:
            return 0.0 if self.ms_run > 0 else np.nan
        return float(stats.f.sf(self.ms_run / self.ms_res, self.df_run, self.df_res))

    @property
    def few_df(self) -> bool:
        """At most ``RUN_FEW_DF`` run df (:data:`RUN_FEW_DF`)."""
        return bool(self.df_run <= RUN_FEW_DF)

    @property
    def level(self) -> float:
        """The preliminary test's level: ``RUN_PRETEST_LEVEL``, ``RUN_PRETEST_LEVEL_FEW_DF`` with few run df."""
        return RUN_PRETEST_LEVEL_FEW_DF if self.few_df else RUN_PRETEST_LEVEL

    @property
    def kept(self) -> bool:
        """Whether the run variance is added (the preliminary test rejects at :attr:`level`)."""
        p = self.p_value
        return bool(np.isfinite(p) and p < self.level and self.ms_run > self.ms_res)

    def shrink(self, inv_runs: float) -> float:
        """When the test pools the run variance and the runs vary less than chance (MS_run <
        MS_res): ``RUN_NEGATIVE_SHARE`` of the negative estimate times ``inv_runs``, added to a
        variance whose total is then floored at ``RUN_SHRINK_FLOOR`` of it (:func:`floored`);
        else (and with few run df, :data:`RUN_FEW_DF`) 0."""
        if self.kept or not self.df_run or self.few_df or not self.ms_run < self.ms_res:
            return 0.0
        return RUN_NEGATIVE_SHARE * inv_runs * (self.ms_run - self.ms_res) * self.df_run / self.weight

    def pieces(self, inv_runs: float) -> list[tuple[float, float]]:
        """The run part of a variance as Welch-Satterthwaite pieces ``(coefficient * mean square, df)``:
        ``sigma2_run * inv_runs`` = ``k MS_run - k MS_res`` (k = inv_runs df_run / weight, a
        positive total) when kept, else nothing."""
        if not self.kept:
            return []
        k = inv_runs * self.df_run / self.weight
        return [(k * self.ms_run, self.df_run), (-k * self.ms_res, self.df_res)]


def floored(v: float, shrink: float) -> float:
    """A variance ``v`` plus a (negative) share of a negative run estimate, never below
    ``RUN_SHRINK_FLOOR * v`` (so never negative: a perfect or constant system keeps variance 0)."""
    if not shrink or not np.isfinite(v):
        return v
    return float(max(v + shrink, RUN_SHRINK_FLOOR * v))


def run_anova(tables: Sequence[np.ndarray]) -> RunAnova | None:
    """The between-run ANOVA pooled over systems; None when no system has two runs of two questions.

    ``tables``: per system its n_s questions x R_s runs table of (epoch-reduced) scores
    (complete: runs with every question). Per system the sums of squares of R's
    ``anova(lm(y ~ item + run))``; pooled by adding sums of squares and df."""
    ss_run = ss_res = df_run = df_res = weight = 0.0
    for y in tables:
        n, R = y.shape
        if R < 2 or n < 2:
            continue
        col = y.mean(axis=0)
        resid = y - y.mean(axis=1, keepdims=True) - col[None, :] + y.mean()
        ss_run += n * float(np.sum((col - col.mean()) ** 2))
        ss_res += float(np.sum(resid**2))
        df_run += R - 1
        df_res += (n - 1) * (R - 1)
        weight += (R - 1) * n
    if df_run == 0:
        return None
    return RunAnova(ss_run / df_run, ss_res / df_res, df_run, df_res, weight)


def run_tables(scores: pd.DataFrame, systems: Sequence[str]) -> dict[str, np.ndarray]:
    """Per system, its questions x runs table of epoch-reduced scores (runs with at least half the
    system's questions, questions with every kept run)."""
    out = {}
    for x in systems:
        sx = scores[scores["system"].to_numpy() == x]
        if not len(sx):
            continue
        t = sx.pivot_table(index="item", columns="run", values="score", aggfunc="mean", observed=True)
        t = t.loc[:, t.notna().mean(axis=0) >= 0.5].dropna(axis=0)
        out[str(x)] = t.to_numpy(dtype=float)
    return out


@dataclass(frozen=True)
class RunVerdict:
    """The run verdict of one task (or of all tasks' questions together, for the plan): the
    pooled ANOVA (None when no system has two runs of two questions) and each system's runs."""

    anova: RunAnova | None
    n_runs: Mapping[str, int]

    def inv(self, *systems: str) -> float:
        """``sum 1 / R_s`` over ``systems``."""
        return float(sum(1.0 / self.n_runs.get(str(x), 1) for x in systems))

    def pieces(self, *systems: str) -> list[tuple[float, float]]:
        """The Welch-Satterthwaite pieces of ``sigma2_run * sum 1/R_s`` (empty when pooled)."""
        return [] if self.anova is None else self.anova.pieces(self.inv(*systems))

    def shrink(self, *systems: str) -> float:
        """:meth:`RunAnova.shrink` of ``sum 1/R_s`` (0 without a negative pooled estimate)."""
        return 0.0 if self.anova is None else self.anova.shrink(self.inv(*systems))


def run_verdict(scores: pd.DataFrame, systems: Sequence[str] | None = None) -> RunVerdict:
    """The :class:`RunVerdict` of epoch-reduced rows (system, item, run, score) over ``systems``."""
    names = sorted(map(str, scores["system"].unique())) if systems is None else list(systems)
    anova = run_anova(list(run_tables(scores, names).values()))
    n_runs = scores.groupby("system", observed=True)["run"].nunique()
    return RunVerdict(anova, {str(k): int(v) for k, v in n_runs.items()})


# ------------------------------------------------------------------------------ the design
@dataclass(frozen=True, repr=False, eq=False)
class EvalDesign:
    """The evaluation design of one call (module docstring).

    rows : every sample: system, task, item, run, [epoch,] score (float)[, cluster] -- ``cluster``
        the question's cluster as ``task::label``. :attr:`attempts` is the same rows with an
        ``epoch`` always (None where the log's own reducer reduced the epochs).
    scores : each question's score per system, task and run, reduced over its epochs by the mean:
        system, task, item, run, score[, cluster] (first-appearance order).
    questions : each question's score per system and task, the mean of ``scores`` over runs:
        task, system, item, score[, cluster] (sorted).
    metric : the metric (None for a table without one). cluster : the user's cluster column (None
        without clusters); ``n_clusters`` how many (task, label) clusters.
    runs : some system has several runs in some task; ``run_verdicts[task]`` the task's
        :class:`RunVerdict` (empty without runs) and ``run_verdict_all`` the verdict over all
        tasks' questions together (``task::item``; the plan's pilot), None when no system has two
        run labels.
    binary : every score is 0 or 1. n_epochs : most samples of a question in one run (1 for
        scores reduced by the log's own reducer).
    epochs_text : how the epochs were reduced, in words ("mean over up to 3 epochs (averaged
        within the question)", "max over 3 epochs (Inspect's reducer)", "one per question").
    cells : per task and system: n_epochs (the log reducer's epochs where it reduced them), n_runs.
    reduction : the logs' own epoch reductions (``EvalLogs.reduction``: system, task, reducer,
        n_epochs) of these rows, or None.
    logs : the :class:`~mixedeval.EvalLogs` the rows came from (None for a table); warnings: theirs.
    """

    rows: pd.DataFrame
    scores: pd.DataFrame
    questions: pd.DataFrame
    metric: Any
    cluster: str | None
    runs: bool
    run_verdicts: Mapping[str, RunVerdict]
    run_verdict_all: RunVerdict | None
    binary: bool
    n_epochs: int
    epochs_text: str
    cells: pd.DataFrame
    reduction: pd.DataFrame | None = None
    logs: Any = field(default=None, compare=False)
    warnings: tuple[ResultWarning, ...] = ()
    _wide: dict = field(default_factory=dict, repr=False, compare=False)  # per task: questions x systems

    def __repr__(self) -> str:
        n_q = int(self.questions[["task", "item"]].drop_duplicates().shape[0])
        cl = f", {self.n_clusters} clusters ({self.cluster})" if self.clustered else ""
        runs = "several runs" if self.runs else "one run"
        return (f"EvalDesign({len(self.systems)} systems, {len(self.tasks)} tasks, {n_q} questions, {runs}, "
                f"epochs: {self.epochs_text}{cl})")

    @property
    def systems(self) -> list[str]:
        return sorted(map(str, self.scores["system"].unique()))

    @property
    def tasks(self) -> list[str]:
        return sorted(map(str, self.scores["task"].unique()))

    @property
    def clustered(self) -> bool:
        return self.cluster is not None

    @property
    def attempts(self) -> pd.DataFrame | None:
        """Every attempt, unreduced: system, task, item, run, epoch, score[, cluster] (``epoch``
        ``"1"`` where the input had one sample per question and run). :attr:`scores` is their mean
        per question and run (``reduce_epochs(attempts)``: one source, two views). None where the
        log's own reducer (``Epochs(3, "max")``, ``pass_at_k``; :attr:`reduction`) reduced the
        epochs before they were read: read the logs with ``keep_epochs=True``
        (:func:`read_design`)."""
        if self.reduction is not None:
            return None
        return self.rows if "epoch" in self.rows.columns else self.rows.assign(epoch="1")

    @property
    def n_clusters(self) -> int:
        return int(self.rows["cluster"].nunique()) if self.clustered else 0

    def run_verdict(self, task: Any) -> RunVerdict | None:
        """The run verdict of ``task`` (None without runs)."""
        return self.run_verdicts.get(str(task)) if self.runs else None

    def several_runs(self, task: Any = None) -> bool:
        """Whether some system has several runs (in ``task``; in some task when None)."""
        c = self.cells if task is None else self.cells[self.cells["task"].astype(str) == str(task)]
        return bool(len(c) and c["n_runs"].max() > 1)

    def pooled_scores(self) -> tuple[pd.DataFrame, bool, bool]:
        """The rows of the across-task bootstrap, whether they keep the runs and whether the runs
        were reduced: ``scores`` when every system has the same runs in every task (runs crossed
        with tasks), else each question's score (``questions``: the runs reduced)."""
        s = self.scores
        runs_per = s.groupby(["system", "task"])["run"].agg(lambda r: tuple(sorted(set(r))))
        if runs_per.groupby(level="system").nunique().max() == 1:
            return s, self.several_runs(), False
        return self.questions[["system", "task", "item", "score"]], False, True

    def sample_stats(self, systems: tuple[str, str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The plan's pilot statistics: per question (task::item) scored by both systems and per
        system, the mean, the variance (ddof 1; NaN with one sample) and the number of its samples
        (every epoch of every run: runs pooled as epochs). Columns in the order of ``systems``."""
        s = self.rows[self.rows["system"].astype(str).isin(systems)]
        q = s["task"].astype(str) + "::" + s["item"].astype(str)
        g = s.assign(question=q, system=s["system"].astype(str)).groupby(["question", "system"], observed=True)["score"]
        agg = pd.DataFrame({"m": g.mean(), "v": g.var(ddof=1), "k": g.size()}).unstack("system")
        agg = agg.dropna(subset=[("m", systems[0]), ("m", systems[1])])
        if len(agg) < 3:
            raise DataError(f"the pilot has {len(agg)} questions scored for both systems; planning needs at least 3")
        cols = list(systems)
        return agg["m"][cols].to_numpy(float), agg["v"][cols].to_numpy(float), agg["k"][cols].to_numpy(float)

    def wide(self, task: Any, systems: Sequence[str]) -> tuple[pd.DataFrame, pd.Series | None]:
        """Questions x ``systems`` (those present) of one task's question scores, and the questions'
        clusters (None without clusters). Each task's table is pivoted once."""
        if task not in self._wide:
            sub = self.questions[self.questions["task"] == task]
            full = sub.pivot(index="item", columns="system", values="score")
            cl = (sub.drop_duplicates("item").set_index("item")["cluster"].reindex(full.index) if self.clustered
                  else None)
            self._wide[task] = (full, cl)
        full, cl = self._wide[task]
        return full[[x for x in systems if x in full.columns]], cl


def reduce_epochs(rows: pd.DataFrame) -> pd.DataFrame:
    """Each question's score per system, task and run: the mean over its epochs (Inspect's
    default reducer), first-appearance order; a ``cluster`` column (one per question) is kept.
    The one epoch reduction (:attr:`EvalDesign.scores`)."""
    keys = [*KEYS, *(["cluster"] if "cluster" in rows.columns else [])]
    return rows.groupby(keys, observed=True, sort=False)["score"].mean().reset_index()


def _reduction_for(reduction: Any, rows: pd.DataFrame, metric: Any) -> pd.DataFrame | None:
    """The logs' epoch reductions (system, task, reducer, n_epochs) that concern these rows."""
    if not isinstance(reduction, pd.DataFrame) or not len(reduction):
        return None
    r = reduction
    if "metric" in r.columns and metric is not None:
        r = r[r["metric"].astype(str) == str(metric)]
    keep = r["system"].astype(str).isin(set(rows["system"].astype(str))) & r["task"].astype(str).isin(
        set(rows["task"].astype(str)))
    r = r.loc[keep]
    return r.reset_index(drop=True) if len(r) else None


def _epochs_text(n_epochs: int, reduction: pd.DataFrame | None, logs: Any = None, metric: Any = None) -> str:
    """How the epochs were reduced, in words (the logs' own ``reduction_text`` where they have one)."""
    if reduction is not None:
        words = getattr(logs, "reduction_text", None)
        text = words(metric, sorted(map(str, reduction["system"].unique()))) if callable(words) else None
        if not text:
            parts = []
            for red, g in reduction.groupby("reducer", sort=True):
                k = sorted({int(x) for x in g["n_epochs"]})
                ks = str(k[0]) if len(k) == 1 else f"{k[0]}-{k[-1]}"
                parts.append(f"{red} over {ks} epoch{'s' if k[-1] != 1 else ''}")
            text = "; ".join(parts)
        return text + " (the log's own reducer: one score per question)"
    if n_epochs > 1:
        return f"averaged within the question (mean reducer; up to {n_epochs} per question)"
    return "one per question"


def build_design(rows: pd.DataFrame, *, metric: Any = None, cluster: str | None = None, logs: Any = None,
                 runs: bool | None = None, nest_clusters: bool = True) -> EvalDesign:
    """The :class:`EvalDesign` of canonical rows (system, task, item, run, [epoch,] score[,
    cluster]: ``cluster`` holds each row's cluster label when ``cluster`` names the user's
    column).

    ``logs``: the :class:`~mixedeval.EvalLogs` they came from (their ``reduction`` and warnings).
    ``runs``: None decides from the rows (some system with several runs in a task); True / False
    forces it (the low-level entry of :mod:`.._paired`). ``nest_clusters``: clusters become
    ``task::label`` (the workflows; False for rows whose labels are already final)."""
    if not len(rows):
        raise DataError("there are no scores to analyse")
    v = rows["score"].to_numpy(dtype=float)
    if not np.isfinite(v).all():
        raise DataError("some scores are NaN or infinite; drop or impute them first")
    s = rows.assign(score=v)
    if "run" not in s.columns:
        s = s.assign(run="1")
    if "task" not in s.columns:
        s = s.assign(task="(all items)")
    if cluster is not None:
        check_clusters(s, "cluster")
        if nest_clusters:
            s["cluster"] = s["task"].astype(str) + "::" + s["cluster"].astype(str)
    elif "cluster" in s.columns:
        s = s.drop(columns="cluster")
    ckey = ["cluster"] if cluster is not None else []
    scores = reduce_epochs(s)
    questions = scores.groupby(["task", "system", "item", *ckey], observed=True, sort=True)["score"].mean()
    questions = questions.reset_index()
    size = s.groupby(list(KEYS), observed=True, sort=True).size()
    n_epochs = int(size.max())
    cells = size.groupby(level=["task", "system"], observed=True).max().rename("n_epochs").reset_index()
    cells["n_runs"] = scores.groupby(["task", "system"], observed=True, sort=True)["run"].nunique().to_numpy()
    several = bool(cells["n_runs"].max() > 1)
    runs = several if runs is None else bool(runs)
    red = _reduction_for(getattr(logs, "reduction", None), s, metric)
    if red is not None:  # the log reduced the epochs itself: say how many it reduced
        k = red.assign(task=red["task"].astype(str), system=red["system"].astype(str))
        k = k.groupby(["task", "system"])["n_epochs"].max()
        idx = pd.MultiIndex.from_arrays([cells["task"].astype(str), cells["system"].astype(str)])
        cells["n_epochs"] = k.reindex(idx).fillna(pd.Series(cells["n_epochs"].to_numpy(), index=idx)).astype(
            int).to_numpy()
    verdicts: dict[str, RunVerdict] = {}
    verdict_all = None
    if runs:
        for task, sub in scores.groupby("task", sort=True, observed=True):
            verdicts[str(task)] = run_verdict(sub)
    if scores.groupby("system", observed=True)["run"].nunique().max() > 1:  # the plan's: questions task::item
        verdict_all = run_verdict(scores.assign(item=scores["task"].astype(str) + "::" + scores["item"].astype(str)))
    return EvalDesign(rows=s, scores=scores, questions=questions, metric=metric, cluster=cluster, runs=runs,
                      run_verdicts=verdicts, run_verdict_all=verdict_all, binary=bool(np.isin(v, (0.0, 1.0)).all()),
                      n_epochs=n_epochs, epochs_text=_epochs_text(n_epochs, red, logs, metric), cells=cells, reduction=red,
                      logs=logs, warnings=tuple(getattr(logs, "warnings", ()) or ()))


def design_from_logs(logs: Any, metric: Any, cluster: str | None = None) -> EvalDesign:
    """The design of one metric of :class:`~mixedeval.EvalLogs` (the only one when ``metric`` is
    None), the cluster read from the logs' table by :func:`logs_cluster_column`."""
    t = logs.table
    if metric is None:
        have = sorted(set(t["metric"]))
        if len(have) != 1:
            raise DataError(f"the logs hold {len(have)} metrics ({', '.join(map(str, have[:10]))}); name one with "
                            "metric=")
        metric = have[0]
    s = logs.scores(metric)
    if cluster is not None:
        col = logs_cluster_column(t, cluster)
        s["cluster"] = t.loc[t["metric"] == metric, col].to_numpy()
    return build_design(s, metric=metric, cluster=cluster, logs=logs)


# ------------------------------------------------------------------------------ the design of any input
def table_rows(df: pd.DataFrame, metric: Any, cols: Mapping[str, str | None],
               cluster: str | None) -> pd.DataFrame:
    """Canonical columns (system, task, item, run, epoch, score[, cluster]) of a score table."""
    df.columns = [str(c) for c in df.columns]
    if "metric" in df.columns:
        have = list(dict.fromkeys(df["metric"].astype(str)))
        if metric is None and len(have) > 1:
            raise DataError(f"the table holds {len(have)} metrics in its 'metric' column ({', '.join(have[:10])}); "
                            "name one with metric=")
        if metric is not None:
            if str(metric) not in have:
                raise DataError(f"metric {metric!r} is not in the table's 'metric' column; available: {have[:30]}")
            df = df.loc[df["metric"].astype(str) == str(metric)]
    elif metric is not None:
        raise DataError(f"metric={metric!r} selects rows of a 'metric' column, which this table does not have; "
                        f"name the score column with score= (columns: {list(df.columns)[:20]})")
    require_columns(df, [c for c in (*cols.values(), cluster) if c is not None], "the score table")
    require_finite(df, cols["score"])
    out = pd.DataFrame({"system": df[cols["system"]].astype(str).to_numpy(),
                        # no task column: the task is named after the metric (or the score column), as
                        # read_eval_logs names it, so summarize and compare_logs label the same rows alike
                        "task": (df[cols["task"]].astype(str).to_numpy() if cols["task"] else
                                 str(metric) if metric is not None else str(cols["score"])),
                        "item": df[cols["item"]].astype(str).to_numpy(),
                        "run": df[cols["run"]].astype(str).to_numpy() if cols["run"] else "1",
                        "score": df[cols["score"]].to_numpy(dtype=float)})
    check_repeated_questions(out, cols["epoch"])
    if cols["epoch"]:
        out["epoch"] = df[cols["epoch"]].astype(str).to_numpy()
        dup = out.duplicated(["system", "task", "item", "run", "epoch"])
        if dup.any():
            r = out.loc[dup].iloc[0]
            raise DataError(f"{int(dup.sum())} rows repeat a (system, task, item, run, epoch), e.g. system "
                            f"{r['system']!r}, item {r['item']!r}, epoch {r['epoch']!r}")
    for k in ("system", "item", *(["task"] if cols["task"] else []), *(["run"] if cols["run"] else [])):
        if df[cols[k]].isna().any():
            raise DataError(f"column {cols[k]!r} ({k}) has {int(df[cols[k]].isna().sum())} missing values")
    if cluster is not None:
        out["cluster"] = df[cluster].to_numpy()
    return out


def table_columns(df: pd.DataFrame, score: str, system: str, item: str, task: str | None, run: str | None,
                  epoch: str | None) -> dict[str, str | None]:
    """The table's column of each role; ``task``/``run``/``epoch`` default to a column of that name."""
    names = {"score": score, "system": system, "item": item}
    for role, given in (("task", task), ("run", run), ("epoch", epoch)):
        names[role] = given if given is not None else (role if role in map(str, df.columns) else None)
    for role, name in names.items():
        if name is not None and not isinstance(name, str):
            raise DataError(f"{role}= must name a column, got {name!r}")
    return names


def read_design(data: Any, metric: Any, cols: dict[str, Any], cluster: str | None, format: str,  # noqa: A002
                systems: Any, drop_missing: bool, keep_epochs: bool = False) -> EvalDesign:
    """The call's :class:`EvalDesign` of any accepted input (a design is used as it is): a score
    table, an :class:`~mixedeval.EvalLogs`, or what :func:`mixedeval.read_eval_logs` reads (read
    here, once). ``cols``: the table's column of each role (score, system, item, task, run, epoch).

    ``keep_epochs``: log paths are read with every epoch kept whatever the log's reducer
    (``read_eval_logs(..., keep_epochs=True)``), so that :attr:`EvalDesign.attempts` holds every
    attempt (pass@k, pass^k); the reduced rows are then their mean per question. An
    :class:`~mixedeval.EvalLogs` given is used as it was read (its ``attempts`` are None where
    the log's reducer reduced them)."""
    if cluster is not None and not isinstance(cluster, str):
        raise DataError(f"cluster must name a column, got {cluster!r}")
    if isinstance(data, EvalDesign):
        return data
    if isinstance(data, EvalLogs) and systems is not None:
        raise DataError("systems= selects systems while reading; pass the log paths instead of EvalLogs")
    if isinstance(data, EvalLogs) or isinstance(data, (str, Path, list, tuple, Mapping)):
        # a table file: the columns named here (run=, epoch=, task=, item=, system=) are its columns
        named = {role: cols[role] for role in ("system", "item", "task", "run", "epoch")
                 if cols[role] is not None and cols[role] != role}
        logs = data if isinstance(data, EvalLogs) else read_eval_logs(
            data, format, metric=metric, systems=systems, drop_missing=drop_missing,
            **({"columns": named} if named else {}), **({"keep_epochs": True} if keep_epochs else {}))
        return design_from_logs(logs, metric, cluster)
    df = as_pandas(data, what="data")
    if not len(df):
        raise DataError("the score table has no rows")
    return build_design(table_rows(df, metric, table_columns(df, **cols), cluster), metric=metric, cluster=cluster)


__all__ = ["EvalDesign", "RunAnova", "RunVerdict", "build_design", "check_clusters", "design_from_logs",
           "logs_cluster_column", "read_design", "reduce_epochs", "run_anova", "run_tables", "run_verdict",
           "table_columns", "table_rows"]
