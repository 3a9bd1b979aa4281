"""``me.summarize``: what Inspect AI prints for one evaluation, per task and system, and the paired
comparison of every two systems -- from a score table, an :class:`EvalLogs` or log paths.

Each question's score is first reduced over its epochs by the mean (Inspect's default reducer;
with several runs of a system, also over its runs). On those n question scores x_i of a task and
system, ``.table`` holds

* ``mean_score``: mean(x);
* ``std_error``: Inspect's ``stderr()``, ``sd(x, ddof=1) / sqrt(n)``;
* ``conf_low`` / ``conf_high``: Inspect's ``ci()`` (``method="t"``), ``mean +- t_{n-1} * SE``;
* ``wilson_low`` / ``wilson_high``: for 0/1 scores, the Wilson score interval of the proportion
  mean(x) of n (R's ``prop.test(sum(x), n, correct = FALSE)$conf.int``; Inspect's
  ``ci_wilson()``); NaN for other scores;
* with ``cluster=`` (a column naming each question's cluster: a passage, a document, a
  template; clusters are nested in tasks): ``n_clusters``; ``std_error_cluster``, Inspect's
  ``stderr(cluster=)``, ``sqrt(G / (G - 1) * sum_c (sum_{i in c} (x_i - mean))^2) / n`` (=
  ``sandwich::vcovCL(lm(x ~ 1), cluster = ~cl, type = "HC0", cadjust = TRUE)``); the interval
  of Inspect's ``ci(cluster=)`` on G - 1 df in ``conf_low_cluster`` / ``conf_high_cluster``;
  Inspect's ``ci_wilson(cluster=)`` (Korn-Graubard effective size, t on G - 1 df) in
  ``wilson_low_cluster`` / ``wilson_high_cluster``;
* with ``cluster_se="CR2"`` also ``std_error_cr2``: the bias-reduced linearization SE of Bell &
  McCaffrey (2002), ``clubSandwich::vcovCR(lm(x ~ 1), cluster = cl, type = "CR2")``; for the
  mean it is ``sqrt(sum_c (sum_{i in c} e_i)^2 / (1 - n_c / n)) / n`` (better with few clusters).

Where Inspect returns 0 for an SE that cannot be estimated (one question, one cluster), the
table has NaN (and NaN intervals).

The answer (the same analysis as :func:`mixedeval.compare_logs`, :mod:`._logs_answer`):
``direction`` (``higher_is_better=`` or from the metric's name), the best-first ``leaderboard``
(pooled over tasks as the mean of the task means; per task in ``leaderboards``) with intervals,
simultaneous rank intervals and letters, and the ``headline``: the best system against the
runner-up (or ``reference=``), the better system's advantage positive, ``p_value`` its test.

``.pairwise``: per task (and pooled over tasks, ``"(all tasks)"``, when several) and pair of
systems (a before b in leaderboard order) on their shared questions, the paired question-level
difference of Miller (2024) (:mod:`._paired`): ``delta = mean(x_a - x_b)``,
``std_error = sd(d) / sqrt(n)`` (cluster-robust with ``cluster=``, G - 1 df; the between-run
variance, pooled over systems, added when some system has several runs and a preliminary F test
finds it, Bancroft's sometimes-pool rule), the t interval and
the paired t test (``test``: ``"paired t"``, ``"paired t, cluster-robust"``, ``"paired t, run
variance"``) -- the same test and p-value as :func:`mixedeval.compare_logs` for the same pair.
When every score is 0 or 1 with one epoch and one run (and no cluster), ``p_mcnemar`` holds the
exact McNemar test of the discordant pairs, ``binom.test(b, b + c)`` (=
``exact2x2::mcnemar.exact``, b = ``n_a_better``, c = ``n_b_better``) as a check (the headline's
row in ``checks``).

``p_adj`` adjusts ``p_value`` over pairs x tasks (``adjust``, Holm by default; the pooled rows
among themselves). With
``sign_flip=True`` a column ``p_sign_flip`` holds the sign-flip permutation p-value of the mean
difference (:func:`mixedeval.sign_flip_test`, ``n_resamples``, ``random_state``; with
``cluster=`` whole clusters are flipped: the test of the cluster sums of d).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .. import _answer
from .._random import seed_sequence
from ..data.validate import require_level
from ..errors import DataError
from ..resampling import sign_flip_test
from ..results import ResultWarning
from ._bounded import wilson
from ._common import _WorkflowResult, dedupe_warnings
from ._input_checks import check_column_args, check_table_systems
from ._logs_answer import answer_notes, logs_answer
from ._paired import SHORT, clustered_se
from .logs.design import EvalDesign, read_design, table_columns, table_rows

CLUSTER_SES = (None, "CR2")
TABLE_COLUMNS = ("task", "system", "n_items", "n_epochs", "n_runs", "mean_score", "std_error", "conf_low", "conf_high",
                 "wilson_low", "wilson_high")
CLUSTER_COLUMNS = ("n_clusters", "std_error_cluster", "conf_low_cluster", "conf_high_cluster", "wilson_low_cluster",
                   "wilson_high_cluster")
PAIR_COLUMNS = ("task", "system_a", "system_b", "n_items", "delta", "std_error", "df", "conf_low", "conf_high",
                "n_a_better", "n_b_better", "test", "t_value", "p_value", "p_adj", "method")
ALL_TASKS = "(all tasks)"


@dataclass(frozen=True, repr=False)
class SummarizeResult(_answer.AnswerMixin, _WorkflowResult):
    """Result of :func:`summarize`.

    answer : the one :class:`mixedeval._answer.Answer`, as :class:`mixedeval.CompareLogsResult`'s
        (``headline``, ``leaderboard``, ``checks``, ``direction``, ``differences``, ``p_value``,
        ``headline_text()`` are views of it); checks: the exact McNemar test and the sign-flip
        test of the headline pair, when computed.
    leaderboards : the leaderboard per task (task column; None with one task).
    table : per task x system: task, system, n_items, n_epochs (most epochs of a question in one
        run; the log reducer's epochs where Inspect reduced them), n_runs, mean_score, std_error
        (Inspect's ``stderr()``), conf_low, conf_high (Inspect's ``ci()``), wilson_low,
        wilson_high (0/1 scores; NaN otherwise); with ``cluster=`` n_clusters,
        std_error_cluster, conf_low_cluster, conf_high_cluster, wilson_low_cluster,
        wilson_high_cluster (Inspect's ``stderr/ci/ci_wilson(cluster=)``); with
        ``cluster_se="CR2"`` std_error_cr2 (clubSandwich's CR2). See the module docstring.
    pairwise : per task and pair of systems on their shared questions, best first (system_a above
        system_b on the leaderboard, delta system_a's advantage in the better direction, in score
        units; ``answer.convention``): task, system_a, system_b, n_items, delta, std_error, df,
        conf_low, conf_high (Miller 2024's paired analysis), n_a_better, n_b_better (questions
        where a / b is better), test, t_value, p_value (of ``test``), p_adj (``adjust`` over
        pairs x tasks), method; p_mcnemar (0/1 scores, one epoch and run, no cluster); with
        ``sign_flip=True`` p_sign_flip. Empty with one system.
    metric : the metric summarized (None for a score table without a metric column).
    design : the call's :class:`mixedeval.workflows.logs.design.EvalDesign`; ``logs`` the
        :class:`EvalLogs` read (None for a table).
    """

    answer: _answer.Answer
    table: Any
    pairwise: Any
    metric: Any
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    logs: Any = field(default=None, repr=False, compare=False)
    design: Any = field(default=None, repr=False, compare=False)
    leaderboards: Any = None

    _main_table = "table"
    _print_tables = ("leaderboard", "table", "pairwise", "checks")
    _skip_in_dict = ("logs", "design", "answer")
    _title = "Summary of scores"
    _no_headline_text = "no pair of systems to compare"
    _answer_priority = 20

    def _scalars(self):
        out = [("headline", self.headline_text())]
        if self.direction is not None:
            out.append(("direction", self.direction.note))
        if self.answer.differences is not None:
            out.append(("differences", self.answer.convention))
        out += [("metric", self.metric)] if self.metric is not None else []
        return out + [("epochs", self.provenance.get("epochs")), ("p_adj", self.provenance.get("adjust"))]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly: the answer first (headline, leaderboard, differences, checks), then the
        tables and settings."""
        d = super().to_dict()
        return {"answer": d.pop("answer"), "headline_text": self.headline_text(), **d}


# ------------------------------------------------------------------------------ the data
# the design builder of every input (a table, EvalLogs, log paths) is the design module's
# (:func:`mixedeval.workflows.logs.design.read_design`); these names stay for the workflows that import them
_table_scores, _columns, _read = table_rows, table_columns, read_design


# ------------------------------------------------------------------------------ per system
def wilson_interval(p_hat: float, n: float, critical: float) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p_hat`` of ``n`` with the critical value given
    (the normal quantile: R's ``prop.test(..., correct = FALSE)``; :func:`._bounded.wilson`)."""
    lo, hi = wilson(p_hat, n, critical)
    return float(lo), float(hi)


def cr2_se(x: np.ndarray, clusters: np.ndarray) -> float:
    """CR2 SE of mean(x) (Bell & McCaffrey 2002; clubSandwich's ``vcovCR(type = "CR2")`` of
    ``lm(x ~ 1)``): for the intercept-only model the adjustment of cluster c is
    ``(I - J / n)^{-1/2}`` on its block, so ``V = sum_c (sum_{i in c} e_i)^2 / (1 - n_c / n) / n^2``."""
    x = np.asarray(x, dtype=float)
    codes, _ = pd.factorize(pd.Series(clusters), sort=True)
    G = int(codes.max()) + 1 if codes.size else 0
    if G < 2:
        return np.nan
    n = x.size
    sums = np.bincount(codes, weights=x - x.mean(), minlength=G)
    sizes = np.bincount(codes, minlength=G)
    return float(np.sqrt(np.sum(sums**2 / (1.0 - sizes / n))) / n)


def _t_interval(m: float, se: float, df: float, level: float) -> tuple[float, float]:
    if not (np.isfinite(se) and df >= 1):
        return np.nan, np.nan
    q = float(stats.t.ppf(0.5 + level / 2.0, df))
    return m - q * se, m + q * se


def _system_row(q: pd.DataFrame, level: float, binary: bool, cluster: bool, cr2: bool) -> dict[str, Any]:
    """The table's row of one task x system from its question scores ``q`` (score[, cluster])."""
    x = q["score"].to_numpy(dtype=float)
    n = int(x.size)
    m = float(x.mean())
    se = float(x.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan
    lo, hi = _t_interval(m, se, n - 1, level)
    z = _answer.z_quantile(level)
    wlo, whi = wilson_interval(m, n, z) if binary else (np.nan, np.nan)
    row = {"n_items": n, "mean_score": m, "std_error": se, "conf_low": lo, "conf_high": hi,
           "wilson_low": wlo, "wilson_high": whi}
    if cluster:
        cl = q["cluster"].to_numpy()
        cse, G = clustered_se(x, cl)
        clo, chi = _t_interval(m, cse, G - 1, level)
        wc = (np.nan, np.nan)
        if binary and G >= 2:
            tq = float(stats.t.isf((1.0 - level) / 2.0, G - 1))
            num = m * (1.0 - m)
            n_eff = min(num / cse**2, n) if num > 0 and cse > 0 else n  # Korn-Graubard, as Inspect's ci_wilson
            wc = wilson_interval(m, n_eff, tq)
        row.update(n_clusters=G, std_error_cluster=cse, conf_low_cluster=clo, conf_high_cluster=chi,
                   wilson_low_cluster=wc[0], wilson_high_cluster=wc[1])
    if cr2:
        row["std_error_cr2"] = cr2_se(x, q["cluster"].to_numpy())
    return row


def system_table(design: EvalDesign, level: float, cr2: bool = False) -> pd.DataFrame:
    """The per task x system table of the design's question scores (module docstring), with the
    epochs (the log reducer's where it reduced them) and runs of each cell."""
    cluster = design.clustered
    cells = design.cells.set_index(["task", "system"])
    rows = []
    for (task, system), q in design.questions.groupby(["task", "system"], observed=True, sort=True):
        c = cells.loc[(task, system)]
        rows.append({"task": task, "system": system, "n_epochs": int(c["n_epochs"]), "n_runs": int(c["n_runs"]),
                     **_system_row(q, level, design.binary, cluster, cr2)})
    cols = [*TABLE_COLUMNS, *(CLUSTER_COLUMNS if cluster else ()), *(["std_error_cr2"] if cr2 else [])]
    return pd.DataFrame(rows, columns=cols)


# ------------------------------------------------------------------------------ pairs
def _question_wide(design: EvalDesign, task: str, a: str, b: str) -> pd.DataFrame:
    """The shared questions of a and b in ``task``: columns a, b (question scores)[, cluster]."""
    wide, cl = design.wide(task, [a, b])
    qm = wide[[a, b]].dropna()
    if cl is not None:
        qm["cluster"] = cl.reindex(qm.index)
    return qm


def _pair_extras(design: EvalDesign, pw: pd.DataFrame, mcnemar: bool, sign_flip: bool, n_resamples: int,
                 random_state: Any, higher_is_better: bool = True) -> pd.DataFrame:
    """n_a_better, n_b_better (questions where a / b is better, in the score's direction), the
    test's name, p_mcnemar (exact McNemar), p_sign_flip; the pooled rows count over every task
    (no McNemar: it is a one-sample-of-questions test)."""
    children = seed_sequence(random_state).spawn(len(pw)) if sign_flip else [None] * len(pw)
    tasks = design.tasks
    cluster = design.clustered
    sign = 1.0 if higher_is_better else -1.0
    extra = []
    for (_, r), ss in zip(pw.iterrows(), children):
        pooled = r["task"] == ALL_TASKS
        parts = [_question_wide(design, t, r["system_a"], r["system_b"]) for t in (tasks if pooled else [r["task"]])]
        w = pd.concat(parts) if len(parts) > 1 else parts[0]
        d = sign * (w[r["system_a"]] - w[r["system_b"]]).to_numpy(dtype=float)
        b, c = int(np.sum(d > 0)), int(np.sum(d < 0))
        e = {"n_a_better": b, "n_b_better": c, "test": SHORT.get(str(r["method"]), "paired t")}
        if mcnemar:
            e["p_mcnemar"] = (np.nan if pooled else float(stats.binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0)
        if sign_flip:
            if cluster:
                codes, _ = pd.factorize(w["cluster"], sort=True)
                d = np.bincount(codes, weights=d)  # whole clusters flipped: the sums of d per cluster
            e["p_sign_flip"] = (sign_flip_test(d, n_resamples=n_resamples, random_state=ss, progress=False).p_value
                                if d.size >= 2 and not pooled else np.nan)
        extra.append(e)
    cols = ["n_a_better", "n_b_better", "test", *(["p_mcnemar"] if mcnemar else []),
            *(["p_sign_flip"] if sign_flip else [])]
    return pd.DataFrame(extra, index=pw.index, columns=cols)


def _pairwise(design: EvalDesign, table: pd.DataFrame, mcnemar: bool, sign_flip: bool, n_resamples: int,
              random_state: Any, higher_is_better: bool = True) -> pd.DataFrame:
    """The paired-differences table of the answer (:func:`._logs_answer.logs_answer`: best first,
    signed in the better direction) with the extras."""
    cols = [*PAIR_COLUMNS, *(["p_mcnemar"] if mcnemar else []), *(["p_sign_flip"] if sign_flip else [])]
    if not len(table):
        return pd.DataFrame(columns=cols)
    ex = _pair_extras(design, table, mcnemar, sign_flip, n_resamples, random_state, higher_is_better)
    return table.join(ex)[cols].reset_index(drop=True)


def _checks(head: Any, pw: pd.DataFrame, label: str) -> pd.DataFrame | None:
    """The exact McNemar and sign-flip tests of the headline pair, when computed."""
    if head is None:
        return None
    found = _answer.pair_row(pw, head.better, head.other, task=label)
    if found is None:
        return None
    r, _ = found
    rows = []
    if "p_mcnemar" in pw.columns and np.isfinite(r["p_mcnemar"]):
        rows.append(_answer.check_row("exact McNemar test (discordant questions)", head, p_value=float(r["p_mcnemar"]),
                                      why="McNemar counts only which system won each question, the paired t uses "
                                          "the size of the differences"))
    if "p_sign_flip" in pw.columns and np.isfinite(r["p_sign_flip"]):
        rows.append(_answer.check_row("sign-flip permutation test", head, p_value=float(r["p_sign_flip"]),
                                      why="a permutation p-value near the threshold"))
    return _answer.checks_table(rows) if rows else None


# ------------------------------------------------------------------------------ the workflow
def _check_options(level: Any, cluster_se: Any, cluster: Any, n_resamples: Any) -> float:
    level = require_level(level)
    if cluster_se not in CLUSTER_SES:
        raise DataError(f"cluster_se must be None (Inspect's clustered SE only) or 'CR2'; got {cluster_se!r}")
    if cluster_se is not None and cluster is None:
        raise DataError("cluster_se='CR2' needs cluster= (the column naming each question's cluster)")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise DataError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    return level


def summarize(
    data: Any,
    metric: str | None = None,
    *,
    score: str = "score",
    system: str = "system",
    item: str = "item",
    task: str | None = None,
    run: str | None = None,
    epoch: str | None = None,
    cluster: str | None = None,
    cluster_se: str | None = None,
    level: float = 0.95,
    adjust: str = "holm",
    sign_flip: bool = False,
    n_resamples: int = 10_000,
    random_state: Any = None,
    format: str = "auto",  # noqa: A002 - read_eval_logs' name
    systems: Sequence[str] | Mapping[str, str] | None = None,
    drop_missing: bool = False,
    higher_is_better: bool | None = None,
    reference: Any = None,
) -> SummarizeResult:
    """Inspect-style summary per task x system (mean, stderr, t and Wilson intervals, clustered
    SEs) and the paired comparison of every two systems; see the module docstring for formulas.

    Parameters
    ----------
    data : a score table (pandas, polars, pyarrow; one row per system x item [x task] [x run]
        [x epoch]), an :class:`EvalLogs`, or what :func:`mixedeval.read_eval_logs` reads (a log
        file, directory, glob, list, or ``{system: path}`` dict).
    metric : the metric to summarize: needed for logs holding several metrics; for a table with
        a ``metric`` column it selects rows.
    score, system, item : the table's columns (as :func:`mixedeval.bootstrap` names them).
    task, run, epoch : the table's task, run and epoch columns; default: the column of that name
        if there is one (else one task, one run, one epoch: rows repeating a question are refused).
    cluster : a column naming each question's cluster (for logs: an Inspect sample metadata
        field); adds Inspect's clustered SE and intervals; the pairwise SE is cluster-robust.
    cluster_se : ``"CR2"`` adds clubSandwich's CR2 SE (``std_error_cr2``).
    level : confidence level of the intervals.
    adjust : p-value adjustment over pairs x tasks (R's ``p.adjust`` methods; Holm).
    sign_flip, n_resamples, random_state : add the sign-flip permutation p-value of every pair.
    format, systems, drop_missing : as :func:`mixedeval.read_eval_logs` (log input only).
    higher_is_better : the score's direction (None: from the metric's name; unknown: higher,
        said in ``direction.note``); the leaderboard and the headline follow it.
    reference : the headline is the best other system against this one.

    Returns a :class:`SummarizeResult` (``.headline``, ``.leaderboard``, ``.table``, ``.pairwise``); the command line is
    ``mixedeval summarize LOGS... --metric M [--cluster C] [--json]``.
    """
    level = _check_options(level, cluster_se, cluster, n_resamples)
    check_column_args(score=score, system=system, item=item, task=task, run=run, epoch=epoch)
    check_table_systems(data, systems)
    higher_is_better = _answer.check_higher_is_better(higher_is_better)
    cols = {"score": score, "system": system, "item": item, "task": task, "run": run, "epoch": epoch}
    design = _read(data, metric, cols, cluster, format, systems, drop_missing)
    metric, logs, clustered = design.metric, design.logs, design.clustered
    if cluster_se is not None and not clustered:
        raise DataError("cluster_se='CR2' needs cluster= (the column naming each question's cluster)")
    mcnemar = design.binary and design.n_epochs == 1 and not design.runs and not clustered
    table = system_table(design, level, cluster_se == "CR2")
    direction = _answer.direction(metric if metric is not None else score, higher_is_better)
    ans = logs_answer(design, direction, level=level, adjust=adjust, pooled_label=ALL_TASKS,
                      reference=reference) if len(design.systems) > 1 else None
    pw = _pairwise(design, ans.table if ans is not None else pd.DataFrame(), mcnemar, sign_flip, n_resamples,
                   random_state, direction.higher_is_better)
    warns: list[ResultWarning] = [*design.warnings, *answer_notes(direction)]
    if design.runs:
        warns.append(ResultWarning("several_runs", "some system has several runs: each question's score is its mean "
                                   "over runs; the table's std_error is over questions only, the pairwise SE and the "
                                   "leaderboard add the between-run variance (pooled over systems) when a "
                                   "preliminary F test finds it"))
    prov = {"workflow": "summarize", "metric": metric, "level": float(level), "adjust": adjust,
            "epochs": design.epochs_text, "scores": "0/1" if design.binary else "continuous",
            "direction": direction.note,
            "cluster": None if not clustered else f"{design.cluster} ({design.n_clusters} clusters, nested in tasks)",
            "cluster_se": cluster_se, "pairwise_test": "paired t (Miller 2024)" + ("; exact McNemar as a check" if mcnemar else ""),
            "sign_flip": {"n_resamples": int(n_resamples), "random_state": _jsonable_state(random_state)}
            if sign_flip else None}
    if ans is None:
        answer = _answer.Answer(direction=direction, leaderboard=None, headline=None, differences=None,
                                no_headline_text=SummarizeResult._no_headline_text, method="")
    else:
        answer = ans.answer(direction, _checks(ans.headline, pw, ans.label), SummarizeResult._no_headline_text)
    return SummarizeResult(answer=answer, table=table, pairwise=pw, metric=metric, warnings=dedupe_warnings(warns),
                           provenance=prov, logs=logs, design=design,
                           leaderboards=None if ans is None else ans.leaderboards)


def _jsonable_state(random_state: Any) -> Any:
    """``random_state`` as provenance: an int as it is, anything else by its type."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return None if random_state is None else type(random_state).__name__


__all__ = ["SummarizeResult", "summarize"]
