"""pass@k and pass^k of agents with intervals and paired differences: :func:`pass_at_k`.

Each task (a question of an agent benchmark) was attempted ``n_i >= k`` times (Inspect epochs, a
table's ``epoch`` column; several runs of a system pool their attempts) and succeeded ``c_i``
times. Per task the unbiased estimators are

* **pass@k** (at least one of k attempts succeeds; Chen et al. 2021, eq. 1):
  ``1 - C(n - c, k) / C(n, k)``, computed in the numerically stable product form
  ``1 - prod_{j = n - c + 1}^{n} (1 - k / j)`` (1 when ``n - c < k``) as ``-expm1(sum log1p(-k / j))``
  -- Inspect AI's ``pass_at(k)`` epoch reducer (``pass_at_k``) and passk-inference's ``pass_at_k``;
* **pass^k** (all k attempts succeed; Yao et al. 2024, tau-bench):
  ``C(c, k) / C(n, k) = prod_{j = 0}^{k - 1} (c - j) / (n - j)`` (0 when ``c < k``), the unbiased
  estimator of ``p_i^k`` -- Inspect AI's ``pass_k(k)`` reducer.

A system's pass@k (pass^k) is the mean of its task values (the population of tasks: ``E[1 - (1 -
p)^k]``, ``E[p^k]``), with the task-level standard error ``sd / sqrt(T)`` (Inspect's ``stderr()`` of
the reduced scores) and a t interval on T - 1 df; with ``cluster=`` the cluster-robust SE (Inspect's
``stderr(cluster=)``, ``sandwich::vcovCL(type = "HC0", cadjust = TRUE)``) on G - 1 df
(:func:`mixedeval.workflows._paired.clustered_se`). Where that interval reaches 0 or 1, or
``T min(p, 1 - p) < 5``, pass@k and pass^k with k >= 2 get the Clopper-Pearson interval of ``p T``
successes out of the T tasks (Korn-Graubard effective n with clusters; :func:`exact_intervals`),
which stays in [0, 1]; with it every k >= 2 design of benchmarks/calibration_passk.py covers at
least 93% (the plain Wilson interval used before: 82% in the worst). Over all 308 designs 305 do
(the others: pass@1 with 50 tasks at 0.5, 92.85%, a t row within MC error, and the two below). pass@1 (= pass^1) is a system's mean score,
each task's value its share of successful attempts: its interval is the means' rule of
:mod:`mixedeval.workflows._bounded` (Wilson, modified Wilson, Wilson with effective n), the interval
``me.summarize`` and ``me.compare_logs`` give the same scores -- one rule for one quantity. On the
benchmark's pass@1 designs the two rules agree from 20 tasks on; with 10 tasks of one attempt at
success rates 0.3 / 0.7 the Wilson interval covers 92.3% (4,000 data sets; its known dip for a count
of 3 of 10; Clopper-Pearson 98.9%).
Differences between systems are paired per task:
``d_i`` the difference of the two systems' task values, the paired t (cluster-robust with
clusters) of :mod:`mixedeval.workflows._paired`. The answer (:mod:`mixedeval._answer`): the best-first
leaderboard with simultaneous rank intervals, the headline (best against runner-up, or against
``reference=``) and checks: the sign-flip permutation test of the per-task differences (of the
cluster sums with clusters), and with ``kind="both"`` the other kind's difference of the same pair.

References: Chen, M. et al. (2021). Evaluating large language models trained on code.
arXiv:2107.03374. Yao, S. et al. (2024). tau-bench. arXiv:2406.12045.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ... import _answer
from ...data.validate import require_level
from ...errors import DataError
from ...resampling import sign_flip_test
from ...results import ResultWarning
from .._common import _WorkflowResult, dedupe_warnings
from .._input_checks import check_column_args, check_table_systems
from .._logs_answer import LogsAnswer, answer_notes, logs_answer
from .._paired import system_means
from ..logs.design import EvalDesign, build_design, read_design

KINDS = ("pass@k", "pass^k")
TABLE_COLUMNS = ("kind", "system", "k", "n_tasks", "n_attempts", "estimate", "std_error", "df", "conf_low",
                 "conf_high", "interval")
TASK_COLUMNS = ("system", "task", "n", "c", "pass@k", "pass^k")
ALL = "(all tasks)"


# ------------------------------------------------------------------------------ the estimators
def pass_at_k_values(n: Any, c: Any, k: int) -> np.ndarray:
    """Per task the unbiased pass@k ``1 - C(n - c, k) / C(n, k)`` (Chen et al. 2021) from ``n``
    attempts with ``c`` successes: ``-expm1(sum_{j = n - c + 1}^{n} log1p(-k / j))``, 1 where
    ``n - c < k``; NaN where ``n < k``."""
    n, c = np.asarray(n, dtype=np.int64), np.asarray(c, dtype=np.int64)
    out = np.ones(n.shape, dtype=float)
    out[n < k] = np.nan
    for i in np.flatnonzero((n >= k) & (n - c >= k)):
        j = np.arange(n[i] - c[i] + 1, n[i] + 1, dtype=float)
        out[i] = -np.expm1(np.log1p(-k / j).sum())
    return out


def pass_hat_k_values(n: Any, c: Any, k: int) -> np.ndarray:
    """Per task the unbiased pass^k ``C(c, k) / C(n, k) = prod_{j < k} (c - j) / (n - j)`` (all k
    attempts succeed; tau-bench), 0 where ``c < k``; NaN where ``n < k``."""
    n, c = np.asarray(n, dtype=np.int64), np.asarray(c, dtype=np.int64)
    out = np.zeros(n.shape, dtype=float)
    out[n < k] = np.nan
    j = np.arange(k, dtype=float)
    for i in np.flatnonzero((n >= k) & (c >= k)):
        out[i] = float(np.exp(np.sum(np.log(c[i] - j) - np.log(n[i] - j))))
    return out


ESTIMATORS = {"pass@k": pass_at_k_values, "pass^k": pass_hat_k_values}


# ------------------------------------------------------------------------------ the intervals
#: the ``interval`` column's names of the exact-binomial rows (:func:`exact_intervals`)
CLOPPER_PEARSON, CLOPPER_PEARSON_EFFECTIVE = "Clopper-Pearson", "Clopper-Pearson, effective n"


def clopper_pearson(x: Any, n: Any, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson interval of ``x`` successes out of ``n`` (arrays; ``x`` may be fractional):
    ``qbeta(a/2, x, n - x + 1)`` (0 where x = 0) to ``qbeta(1 - a/2, x + 1, n - x)`` (1 where
    x = n), ``a = 1 - level`` -- R's ``binom.test(x, n)$conf.int`` for whole x."""
    from scipy import stats  # noqa: PLC0415 - scipy.stats only for rows near 0 or 1 (import time of the module)

    x, n = np.asarray(x, dtype=float), np.asarray(n, dtype=float)
    a = 1.0 - float(level)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(x <= 0, 0.0, stats.beta.ppf(a / 2, np.maximum(x, 1e-300), n - x + 1))
        hi = np.where(x >= n, 1.0, stats.beta.ppf(1 - a / 2, x + 1, np.maximum(n - x, 1e-300)))
    bad = ~(n > 0)
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def exact_intervals(means: pd.DataFrame, level: float) -> pd.DataFrame:
    """The rows of a means table (``estimate``, ``std_error``, ``df``, ``n_items``, ``conf_low``,
    ``conf_high``, ``interval`` from :func:`mixedeval.workflows._paired.system_means`) whose
    interval is a Wilson one (plain or modified) -- the t interval reached 0 or 1, or ``T min(p, 1 - p) < 5``
    (:mod:`mixedeval.workflows._bounded`) -- get the Clopper-Pearson interval of ``p T``
    successes out of the ``T`` tasks instead (:func:`clopper_pearson`); with clusters (the
    ``"Wilson, effective n"`` rows) of ``p n*`` out of Korn & Graubard's (1998) effective
    ``n* = min(T, p (1 - p) / SE^2 (z / t_df)^2)`` (T where ``p (1 - p)`` or the SE is 0). A task's
    pass@k / pass^k lies in [0, 1] with variance at most ``p (1 - p)``, so the exact binomial
    interval of T tasks is conservative; the Wilson interval was not (benchmarks/
    calibration_passk.py: it covered 82-93% where pass^k or 1 - pass@k is below about 1 / T, and
    with 5 tasks; this rule: 97-100% there, and 307 of the 308 designs at or above 93%). Other rows
    keep the t interval."""
    from scipy import stats  # noqa: PLC0415 - scipy.stats only for rows near 0 or 1 (import time of the module)

    from .._bounded import WILSON, WILSON_EFFECTIVE, WILSON_MODIFIED  # noqa: PLC0415 - the interval hunk's own

    fam = means["interval"].to_numpy(dtype=object)
    plain = (fam == WILSON) | (fam == WILSON_MODIFIED)  # the means' rule near 0 or 1 (modified: 1-3 from 0 or T)
    zone = plain | (fam == WILSON_EFFECTIVE)
    if not zone.any():
        return means
    est = means["estimate"].to_numpy(dtype=float)
    se = means["std_error"].to_numpy(dtype=float)
    dfs = means["df"].to_numpy(dtype=float)
    n = means["n_items"].to_numpy(dtype=float)
    num = est * (1.0 - est)
    ok_df = np.isfinite(dfs) & (dfs >= 1)
    q_t = stats.t.ppf(0.5 + level / 2, np.where(ok_df, dfs, 1.0))
    adj = np.where(ok_df, (stats.norm.ppf(0.5 + level / 2) / q_t) ** 2, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.where((num > 0) & (se > 0), np.minimum(n, num / se**2 * adj), n)
    n_star = np.where(plain, n, n_eff)
    lo, hi = clopper_pearson(est * n_star, n_star, level)
    out = means.copy()
    out["conf_low"] = np.where(zone, lo, means["conf_low"].to_numpy(dtype=float))
    out["conf_high"] = np.where(zone, hi, means["conf_high"].to_numpy(dtype=float))
    out["interval"] = np.where(plain, CLOPPER_PEARSON, np.where(zone, CLOPPER_PEARSON_EFFECTIVE, fam))
    return out


def zone_intervals(means: pd.DataFrame, level: float, k: int) -> pd.DataFrame:
    """The intervals of pass@k / pass^k means near 0 or 1 (module docstring): :func:`exact_intervals`
    for k >= 2; for k = 1 (pass@1, a mean score) the means' rule as it is (``means`` unchanged)."""
    return means if k == 1 else exact_intervals(means, level)


def _zone_answer(la: LogsAnswer, level: float, k: int) -> LogsAnswer:
    """:func:`zone_intervals` on a :class:`LogsAnswer`'s means and its leaderboard's intervals."""
    means = zone_intervals(la.means, level, k)
    if means is la.means:  # pass@1: the means' rule as it is
        return la
    m = means[means["task"] == la.label].set_index("system") if "task" in means.columns else means.set_index("system")
    board = la.leaderboard.copy()
    for c in ("conf_low", "conf_high"):
        board[c] = m[c].reindex(board["name"]).to_numpy()
    return replace(la, means=means, leaderboard=board)


# ------------------------------------------------------------------------------ the result
@dataclass(frozen=True, repr=False)
class PassAtKResult(_answer.AnswerMixin, _WorkflowResult):
    """Result of :func:`pass_at_k`.

    answer : the one :class:`mixedeval._answer.Answer` of the first kind asked for (``headline``,
        ``leaderboard``, ``checks``, ``differences``, ``p_value``, ``headline_text()`` are views).
    table : per kind and system (best first): kind, system, k, n_tasks, n_attempts, estimate
        (the mean of the task values), std_error (task-level; cluster-robust with clusters), df
        (T - 1; G - 1), conf_low, conf_high, interval (``"t"``, or where the t interval reached 0 or 1
        or T min(p, 1 - p) < 5 ``"Clopper-Pearson"`` for k >= 2 and the means' Wilson family for
        pass@1: :func:`zone_intervals`).
    tasks : per system and task: n (attempts), c (successes), pass@k, pass^k.
    pairwise : per kind, every pair best first (system_a above system_b, delta its advantage):
        kind, system_a, system_b, n_items (shared tasks), delta, std_error, df, t_value, p_value,
        p_adj, conf_low, conf_high, method.
    answers : the answer of each kind (``answers["pass^k"]``).
    k, kinds : the k and the kinds computed.
    """

    answer: _answer.Answer
    table: Any
    tasks: Any
    pairwise: Any
    k: int
    kinds: tuple[str, ...]
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    answers: Mapping[str, _answer.Answer] = field(default_factory=dict, repr=False, compare=False)

    _main_table = "table"
    _print_tables = ("table", "pairwise", "checks")
    _skip_in_dict = ("answer", "answers")
    _title = "pass@k / pass^k"
    _answer_priority = 25

    def _scalars(self) -> list[tuple[str, Any]]:
        out = [("headline", self.headline_text()), ("k", self.k), ("kinds", ", ".join(self.kinds))]
        if self.answer.differences is not None:
            out.append(("differences", self.answer.convention))
        return out + [("attempts", self.provenance.get("attempts")), ("interval", self.provenance.get("interval"))]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["answers"] = {kd: a.to_dict() for kd, a in self.answers.items()}
        return {"answer": d.pop("answer"), "headline_text": self.headline_text(), **d}


# ------------------------------------------------------------------------------ the input
def _kinds(kind: Any) -> tuple[str, ...]:
    if isinstance(kind, str):
        kind = KINDS if kind == "both" else (kind,)
    try:
        kinds = tuple(dict.fromkeys(str(x) for x in kind))
    except TypeError:
        raise DataError(f"kind must be 'pass@k', 'pass^k', 'both' or a list of these, got {kind!r}") from None
    bad = [x for x in kinds if x not in KINDS]
    if bad or not kinds:
        raise DataError(f"kind must be 'pass@k', 'pass^k', 'both' or a list of these, got {kind!r}")
    return kinds


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise DataError(f"k must be a positive integer (the attempts of pass@k / pass^k), got {k!r}")
    return int(k)


def _attempt_rows(data: Any, metric: Any, cols: dict[str, Any], cluster: str | None, format: str,  # noqa: A002
                  systems: Any) -> tuple[EvalDesign, pd.DataFrame]:
    """The design of the input (:func:`read_design`, log paths read with every epoch kept) and its
    unreduced attempts (:attr:`EvalDesign.attempts`: system, task, item, run, epoch, score[, cluster])."""
    design = read_design(data, metric, cols, cluster, format, systems, False, keep_epochs=True)
    if design.attempts is None:
        r = design.reduction.iloc[0]
        raise DataError(f"the logs reduced the attempts of {r['system']!r} by Inspect's {r['reducer']!r} reducer "
                        f"(one score per task): pass@k needs every attempt; pass the log files themselves (they are "
                        "read with keep_epochs=True) or me.read_eval_logs(..., keep_epochs=True)")
    return design, design.attempts


def _threshold(value: Any) -> float:
    """``value=`` as a finite number (a NaN threshold would count every attempt as a failure)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if isinstance(value, bool) or not np.isfinite(v):
        raise DataError(f"value= must be a finite number (a score >= value is a success), got {value!r}; pass e.g. "
                        "value=1.0, or value=None for 0/1 scores")
    return v


def _counts(rows: pd.DataFrame, value: float | None, k: int) -> tuple[pd.DataFrame, list[ResultWarning]]:
    """Per system and task (``task::item`` with several tasks): n attempts and c successes."""
    s = rows["score"].to_numpy(dtype=float)
    warns: list[ResultWarning] = []
    if value is None:
        if not np.isin(s, (0.0, 1.0)).all():
            bad = s[~np.isin(s, (0.0, 1.0))][0]
            raise DataError(f"pass@k counts successes, but some scores are not 0/1 (e.g. {bad!r}); pass value= (a "
                            "score >= value is a success, as Inspect's pass_at(k, value=)) or a 0/1 success column")
        ok = s >= 1.0
    else:
        ok = s >= _threshold(value)
    several_tasks = rows["task"].nunique() > 1
    unit = (rows["task"].astype(str) + "::" + rows["item"].astype(str)) if several_tasks else rows["item"].astype(str)
    keys = {"system": rows["system"].astype(str).to_numpy(), "task": unit.to_numpy()}
    if "cluster" in rows.columns:
        keys["cluster"] = rows["cluster"].to_numpy()
    g = pd.DataFrame({**keys, "ok": ok.astype(int)}).groupby(list(keys), sort=True, observed=True)["ok"]
    out = pd.DataFrame({"n": g.size(), "c": g.sum()}).reset_index()
    if several_tasks:
        warns.append(ResultWarning("tasks_pooled", f"the rows hold {rows['task'].nunique()} tasks: every question "
                                   "is one unit (task::item) of one population, weighted equally"))
    if rows["run"].nunique() > 1:
        warns.append(ResultWarning("runs_pooled", "some system has several runs: their attempts of a task are "
                                   "pooled (attempts are taken as exchangeable)"))
    short = out[out["n"] < k]
    if len(short):
        r = short.iloc[0]
        raise DataError(f"k={k} but task {r['task']!r} of system {r['system']!r} has {int(r['n'])} attempt(s) "
                        f"({len(short)} (system, task) cells have fewer than {k}); pass@k / pass^k need n >= k "
                        f"attempts per task: lower k to at most {int(out['n'].min())}, or drop the tasks with fewer "
                        "attempts")
    if out["n"].nunique() > 1:
        warns.append(ResultWarning("unequal_attempts", f"tasks have {int(out['n'].min())} to {int(out['n'].max())} "
                                   "attempts: each task's estimate uses its own n (unbiased for each), tasks weigh "
                                   "equally"))
    return out, warns


# ------------------------------------------------------------------------------ the analysis
def _checks(design: EvalDesign, ans: LogsAnswer, other: LogsAnswer | None, other_kind: str | None,
            n_resamples: int, random_state: Any) -> pd.DataFrame | None:
    head = ans.headline
    if head is None:
        return None
    wide, cl = design.wide(design.tasks[0], [head.better, head.other])
    both = wide.dropna()
    d = both[head.better].to_numpy() - both[head.other].to_numpy()
    rows = []
    if cl is not None:
        d = pd.Series(d).groupby(cl.reindex(both.index).to_numpy()).sum().to_numpy()
        name = "sign-flip permutation test of the per-cluster differences"
    else:
        name = "sign-flip permutation test of the per-task differences"
    if d.size >= 2 and np.any(d != 0):
        p = sign_flip_test(d, n_resamples=n_resamples, random_state=random_state, progress=False).p_value
        rows.append(_answer.check_row(name, head, p_value=float(p)))
    if other is not None:
        found = _answer.pair_row(other.table, head.better, head.other)
        if found is not None:
            r, sign = found
            lo, hi = sorted((sign * float(r["conf_low"]), sign * float(r["conf_high"])))
            est = sign * float(r["delta"])
            rows.append(_answer.check_row(f"{other_kind} of the same pair (paired t)", head, estimate=est,
                                          conf_low=lo, conf_high=hi, p_value=float(r["p_value"]),
                                          why=f"{other_kind} weighs consistency differently"))
    return _answer.checks_table(rows) if rows else None


def pass_at_k(
    data: Any,
    k: int,
    *,
    kind: str | Sequence[str] = "pass@k",
    metric: str | None = None,
    score: str = "score",
    system: str = "system",
    item: str = "item",
    epoch: str | None = None,
    task: str | None = None,
    run: str | None = None,
    cluster: str | None = None,
    value: float | None = None,
    level: float = 0.95,
    adjust: str = "holm",
    higher_is_better: bool = True,
    reference: Any = None,
    n_resamples: int = 10_000,
    random_state: Any = None,
    format: str = "auto",  # noqa: A002 - read_eval_logs' name
    systems: Sequence[str] | Mapping[str, str] | None = None,
) -> PassAtKResult:
    """pass@k and pass^k per system with intervals from the task-level distribution, and paired
    differences between systems (module docstring: estimators, SEs, intervals, checks).

    Parameters
    ----------
    data : a table of attempts (one row per system x task x attempt: ``item`` names the task,
        ``epoch`` the attempt), an :class:`EvalLogs` read with ``keep_epochs=True``, or Inspect log
        files / directories (read with every epoch kept, whatever the log's reducer).
    k : the attempts of pass@k / pass^k; every task needs ``n >= k`` attempts (else a DataError
        naming the task). Tasks may have different n (each uses its own).
    kind : ``"pass@k"`` (at least one of k succeeds), ``"pass^k"`` (all k succeed), ``"both"``
        (the answer is the first kind's; the other's is ``answers[...]`` and a check).
    metric : the logs' (or a long table's) metric to use.
    score, system, item, epoch, task, run : the table's columns (``epoch``/``task``/``run`` default
        to a column of that name). Several tasks: each (task, item) is one unit.
    cluster : a column naming each task's cluster (cluster-robust SEs on G - 1 df).
    value : a score >= value is a success (Inspect's ``pass_at(k, value=)``); None: scores must be 0/1.
    level, adjust : interval level; p-value adjustment over pairs (R's ``p.adjust``).
    higher_is_better : pass rates: True. reference : the headline compares the best other system to it.
    n_resamples, random_state : the sign-flip check.
    format, systems : as :func:`mixedeval.read_eval_logs` (log input).

    Returns a :class:`PassAtKResult`; the command line is ``mixedeval pass-k LOGS --k K [--kind pass^k]``.
    """
    k = _check_k(k)
    kinds = _kinds(kind)
    level = require_level(level)
    check_column_args(score=score, system=system, item=item, task=task, run=run, epoch=epoch, cluster=cluster)
    check_table_systems(data, systems)
    hib = _answer.check_higher_is_better(higher_is_better)
    hib = True if hib is None else hib
    cols = {"score": score, "system": system, "item": item, "task": task, "run": run, "epoch": epoch}
    design, rows = _attempt_rows(data, metric, cols, cluster, format, systems)
    counts, warns = _counts(rows, value, k)
    for kd in KINDS:
        counts[kd] = ESTIMATORS[kd](counts["n"].to_numpy(), counts["c"].to_numpy(), k)
    tasks = counts[[c for c in ("system", "task", "cluster", "n", "c", *KINDS) if c in counts.columns]]
    answers: dict[str, _answer.Answer] = {}
    tables, pairs, built = [], [], {}
    for kd in kinds:
        sub = pd.DataFrame({"system": counts["system"], "task": ALL, "item": counts["task"], "run": "1",
                            "score": counts[kd]})
        if "cluster" in counts.columns:
            sub["cluster"] = counts["cluster"].to_numpy()
        d = build_design(sub, metric=kd, cluster="cluster" if "cluster" in sub.columns else None, runs=False,
                         nest_clusters=False)
        direction = _answer.direction(kd.replace("k", str(k)), hib)
        la = logs_answer(d, direction, level=level, adjust=adjust, pooled_label=ALL,
                         reference=reference) if len(d.systems) > 1 else None
        if la is not None:  # the per-task values are the reduced attempts: say so in the method
            la = replace(la, table=la.table.assign(method=f"paired task-level t of the per-task {kd} (Miller 2024)" + (
                ", cluster-robust SE, df = clusters - 1" if cluster is not None else "")))
            la = _zone_answer(la, level, k)
        built[kd] = (d, la, direction)
    for j, kd in enumerate(kinds):
        d, la, direction = built[kd]
        other_kind = next((x for x in kinds if x != kd), None)
        if la is None:
            means = zone_intervals(system_means(d, d.systems, level=level)[0], level, k)
            board = _answer.leaderboard(means.set_index("system")["estimate"], std_error=means["std_error"].to_numpy(),
                                        conf_low=means["conf_low"].to_numpy(), conf_high=means["conf_high"].to_numpy(),
                                        higher_is_better=hib, level=level)
            ans = _answer.Answer(direction=direction, leaderboard=board, headline=None, differences=None,
                                 no_headline_text="one system: no comparison", method=f"{kd}, task-level t")
        else:
            means = la.means
            other = built[other_kind][1] if other_kind is not None else None
            checks = _checks(d, la, other, other_kind, n_resamples, random_state) if j == 0 else None
            ans = la.answer(direction, checks)
            pairs.append(la.table.assign(kind=kd))
        answers[kd] = ans
        per = counts.groupby("system")
        m = means.set_index("system")
        order = list(ans.leaderboard["name"])
        tables.append(pd.DataFrame({
            "kind": kd, "system": order, "k": k, "n_tasks": per.size().reindex(order).to_numpy(),
            "n_attempts": per["n"].sum().reindex(order).to_numpy(),
            **{c: m.loc[order, c].to_numpy() for c in ("estimate", "std_error", "df", "conf_low", "conf_high",
                                                       "interval")}}))
    table = pd.concat(tables, ignore_index=True)[list(TABLE_COLUMNS)]
    pairwise = (pd.concat(pairs, ignore_index=True) if pairs else pd.DataFrame())
    if len(pairwise):
        pairwise = pairwise[["kind", *[c for c in pairwise.columns if c not in ("kind", "task")]]]
    first = answers[kinds[0]]
    warns += answer_notes(first.direction)
    n_att = counts["n"]
    prov = {"workflow": "pass_at_k", "k": k, "kinds": list(kinds), "level": float(level), "adjust": adjust,
            "attempts": (f"{int(n_att.min())} per task" if n_att.nunique() == 1 else
                         f"{int(n_att.min())}-{int(n_att.max())} per task"),
            "estimator": "unbiased per task (Chen et al. 2021 pass@k; C(c,k)/C(n,k) pass^k), mean over tasks",
            "interval": ("cluster-robust t on G - 1 df" if cluster is not None else "task-level t on T - 1 df") +
                        (" (the means' Wilson rule where it reaches 0 or 1 or T min(p, 1 - p) < 5, as summarize)"
                         if k == 1 else
                         " (Clopper-Pearson of the tasks where it reaches 0 or 1 or T min(p, 1 - p) < 5)"),
            "cluster": None if cluster is None else f"{cluster} ({design.n_clusters} clusters)",
            "metric": design.metric, "success": "score == 1" if value is None else f"score >= {value}"}
    return PassAtKResult(answer=first, table=table, tasks=tasks.reset_index(drop=True), pairwise=pairwise, k=k,
                         kinds=kinds, warnings=dedupe_warnings([*design.warnings, *warns]), provenance=prov,
                         answers=answers)


__all__ = ["PassAtKResult", "pass_at_k", "pass_at_k_values", "pass_hat_k_values"]
