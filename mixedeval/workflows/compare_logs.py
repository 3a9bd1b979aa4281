"""``me.compare_logs``: from evaluation-harness logs to the comparison of systems, in one call.

1. The logs are read by :func:`mixedeval.read_eval_logs` (lm-eval, Inspect AI, HELM, tables),
   with its checks (missing items, duplicated ids, mixed tasks).
2. The answer (one analysis, :mod:`mixedeval.workflows._logs_answer`): the direction of the score
   (``higher_is_better=``, or known from the metric's name: :func:`mixedeval._answer.direction`),
   the best-first ``leaderboard`` (each system's mean score, pooled over tasks as the mean of the
   task means, with its interval, simultaneous rank interval and letters; per task in
   ``leaderboards``) and the ``headline``: the best system against the runner-up (or the best
   other system against ``reference=``), signed so that the better system's advantage is positive;
   ``p_value`` and ``headline_text()`` are the headline's. All from the paired question-level
   analysis of Miller (2024) (:mod:`mixedeval.workflows._paired`: epochs averaged within the
   question -- they are never runs; SE = sd(d) / sqrt(n), t interval, paired t test); with
   ``cluster=`` the cluster-robust SE of Inspect AI's ``stderr(cluster=)`` on clusters - 1 df;
   when some system has several runs, each question's score is its mean over runs and the
   between-run variance (method of moments, pooled over the systems) is added when a preliminary
   F test finds it (Bancroft's 1944 sometimes-pool rule at level 0.30), with Satterthwaite df
   (0.45 of a negative estimate when the test pools it). The means' covariance matrix is that of the same analysis (the
   difference of two systems has exactly the headline's SE), so the rank intervals and letters
   agree with the pairwise table (``.table``, every pair per task and pooled, ``p_adj`` by
   ``adjust``). ``method`` says which SE.
   Calibration (``benchmarks/calibration_logs.py``, 2,000 simulated pairs per scenario): 95%
   intervals cover 94.7-95.2% and the test rejects 4.3-5.7% at no difference with i.i.d.
   epochs, clustered questions (``cluster=``), accuracies near 0 and 1 and 30 questions; with
   several runs see :mod:`mixedeval.workflows._paired` and the benchmark's runs scenarios.
   The model-based analysis and the bootstrap below are **checks** of the headline (``checks``:
   one row each, verdict ``"agrees"`` or ``"differs: <why>"``); their warnings carry
   ``source="check:<name>"`` and do not qualify the headline.
3. The model-based check, chosen from the scores of ``metric``:

   * 0/1 scores (accuracy, exact match), or proportions of ``trials`` attempts (k of n): the
     binomial GLMM ``lme4::glmer(score ~ system [* task] + (1|item) [+ (1|system:item)]
     [+ (1|sysrun)], family = binomial)`` (:func:`mixedeval.inference._glmm.glmm`), with
     odds-ratio contrasts; the epochs are its 0/1 rows, repeated trials of the question;
   * other (continuous) scores: the LMM ``lmerTest::lmer`` of the same formula (REML).

   Items are nested in tasks (an item id is the task and the id). With several epochs the
   question x system cell gets a random intercept ``(1|system:item)`` (a system answers a
   question consistently across its epochs; without it the epochs would count as independent
   evidence); runs (separate evaluations: dates, seeds, trials) are nested in systems and get a
   random intercept ``(1|sysrun)`` when some system has several; with ``cluster=`` the clusters
   get ``(1|cluster) + (1|system:cluster)`` (difficulty and system difference shared within a
   cluster). The system
   effect is tested by the likelihood-ratio test of the model without ``system`` (ML refits,
   :func:`mixedeval.compare`); the contrasts are the pairwise contrasts of the estimated
   marginal means of the systems per task (``by="task"``) and pooled over tasks (emmeans'
   equal-weight average), with ``p_value`` unadjusted and ``p_adj`` adjusted (Holm by default).
4. The paired bootstrap of the mean of the epoch-averaged scores (:func:`mixedeval.bootstrap`:
   questions -- whole clusters of questions with ``cluster=`` -- and runs when there are several,
   drawn with replacement, the same draws for every system) per task and across tasks (the mean of the task means), with intervals and
   shift-method p-values of the differences.
5. ``me.report(result, path=...)`` writes the HTML report (the CLI's ``compare-logs --report``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .. import _answer
from .._random import seed_sequence
from ..data._logs import EvalLogs, read_eval_logs
from ..data.validate import require_level
from ..errors import DataError
from ..resampling import bootstrap
from ..results import ResultWarning
from ._common import _WorkflowResult, check_posthoc_df, dedupe_warnings, model_formula
from ._logs_answer import answer_notes, best_first, logs_answer
from ._next_run import accuracies, check_plan, plan_next_run, plan_text
from .logs.design import EvalDesign, design_from_logs

ALL_TASKS = "(all tasks)"
ANALYSES = ("auto", "glmm", "lmm")


@dataclass(frozen=True, repr=False)
class CompareLogsResult(_answer.AnswerMixin, _WorkflowResult):
    """Result of :func:`compare_logs`.

    answer : the one :class:`mixedeval._answer.Answer` (``headline``, ``leaderboard``, ``checks``,
        ``direction``, ``differences``, ``p_value`` and ``headline_text()`` are views of it):
        the headline is the best system against the runner-up (or against ``reference``) on the
        pooled scores, the better system's advantage positive, with its interval and the paired
        test's p-value; the leaderboard is best first (name, estimate: mean score, pooled over
        tasks as the mean of the task means; std_error, conf_low, conf_high, rank, rank_low,
        rank_high: simultaneous rank intervals from the means' covariance of the headline's
        analysis; letters); differences every pair of the headline's rows best first; checks the
        other analyses of the headline's question (model contrast, likelihood-ratio test,
        bootstrap), each with a verdict computed from its numbers; their warnings have ``source``
        ``"check:glmm"``, ``"check:lmm"`` or ``"check:bootstrap"``.
    leaderboards : the leaderboard per task (task column; None with one task).
    table : every pair per task (and pooled over tasks, ``task == "(all tasks)"``) best first:
        system_a above system_b on the leaderboard, delta system_a's advantage in the better
        direction (for a lower-is-better score b - a; on the score's scale: 0.05 is 5 accuracy
        points; ``answer.convention`` says it in words): task, system_a, system_b, n_items,
        delta, std_error, df, t_value (of delta), p_value, p_adj (``adjust`` over pairs x tasks),
        conf_low, conf_high, method (see the module docstring).
    model_differences : the binomial GLMM's pairwise differences of the population-averaged
        accuracies (emmeans ``regrid`` of the ``marginal="integrate"`` means: the headline's scale),
        per task and pooled; None for the LMM.
    contrasts : the model's pairwise contrasts of the systems, per task and pooled over tasks:
        task, contrast, estimate (difference for the LMM, odds ratio for the GLMM), std_error,
        df, the statistic (t_value / z_value), p_value (unadjusted), p_adj (adjusted by
        ``adjust`` within each task), conf_low, conf_high.
    glrt : likelihood-ratio test of the system effect (:func:`mixedeval.compare`).
    emmeans : estimated marginal means of the systems per task and pooled (task column).
    bootstrap : paired bootstrap differences per task and pooled, best first as ``table``: task,
        system_a, system_b, delta, std_error, conf_low, conf_high, p_value (shift method), p_adj,
        snr.
    means : bootstrap means per task and pooled: task, system, estimate, boot_mean, std_error,
        conf_low, conf_high.
    data_summary : :meth:`EvalLogs.summary` of the scores used.
    analysis : which model was fitted ("binomial GLMM" / "LMM"), with ``formula``.
    accuracies : per task and system, the accuracies with the intervals Inspect AI prints
        (:func:`mixedeval.summarize`'s table: mean_score, Inspect's ``stderr()`` and ``ci()``,
        Wilson for 0/1 scores, ``stderr(cluster=)`` with ``cluster``).
    plan : the sample-size answer for the next run (:func:`mixedeval.questions_needed` with the
        design as the pilot, for the headline pair; ``plan_text()`` says it in words); None when
        the logs cannot serve as a pilot (a ``no_plan`` warning says why) or ``plan=False``.
    design : the call's :class:`mixedeval.workflows.logs.design.EvalDesign` (rows, reduced scores,
        clusters, run verdict, ``epochs_text``); ``logs`` the :class:`EvalLogs` read.
    """

    answer: _answer.Answer
    table: Any
    contrasts: Any
    model_differences: Any
    glrt: Any
    emmeans: Any
    bootstrap: Any
    means: Any
    data_summary: Any
    analysis: str
    formula: str | None
    metric: str
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    fit: Any = field(default=None, repr=False, compare=False)
    logs: Any = field(default=None, repr=False, compare=False)
    design: Any = field(default=None, repr=False, compare=False)
    boot_result: Any = field(default=None, repr=False, compare=False)
    accuracies: Any = None
    plan: Any = field(default=None, compare=False)
    leaderboards: Any = None

    _main_table = "table"
    _print_tables = ("leaderboard", "checks", "table", "accuracies", "model_differences", "contrasts", "bootstrap",
                     "means")
    _answer_priority = 10

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly: the answer first (headline, leaderboard, differences, checks), the plan's
        sentence, then the tables and settings."""
        d = super().to_dict()
        return {"answer": d.pop("answer"), "headline_text": self.headline_text(), "next_run": self.plan_text(), **d}
    _skip_in_dict = ("fit", "logs", "design", "boot_result", "answer")
    _title = "System comparison from evaluation logs"
    _no_headline_text = "no pair of systems to compare"

    def _scalars(self):
        out = [("headline", self.headline_text()),
               ("direction", self.direction.note if self.direction is not None else "higher is better"),
               ("differences", self.answer.convention),
               ("next run", self.plan_text()), ("metric", self.metric),
               ("epochs", self.provenance.get("epochs"))]
        if self.glrt is None:  # model_check=False
            return [*out, ("model-based check", self.analysis)]
        lrt = float(self.glrt["p_value"].iloc[-1]) if len(self.glrt) else float("nan")
        return [*out, ("model-based check", f"{self.analysis}: {self.formula}"),
                ("check: system effect, likelihood-ratio p-value (all systems at once)", f"{lrt:.4g}")]

    def plan_text(self) -> str:
        """The sample-size answer for the next run in one sentence (:attr:`plan`)."""
        if self.plan is None:
            asked = self.provenance.get("plan_effect") is not None
            return "no sample-size plan" + (" (see the warnings)" if asked else " (plan=False)")
        est = self.plan.estimates.set_index("quantity")["value"]
        epochs = int(round(est["epochs_pilot"])) if np.isfinite(est["within_a"]) else 1
        head = self.headline
        # "the size observed" only when the plan is for it (an observed difference below the smallest
        # planned effect is planned at that minimum: 1.0 points where 0.61 were observed)
        observed = (self.provenance.get("plan_effect") == "observed" and head is not None
                    and bool(np.isclose(self.plan.effect, abs(head.estimate), rtol=1e-12, atol=0.0)))
        return plan_text(self.plan, int(est["n_questions_pilot"]), epochs, observed)



# ------------------------------------------------------------------------------ the data
def _cluster_source(source: Any, cluster: str | None) -> tuple[Any, str | None]:
    """A DataFrame source whose cluster column has another name gets it as ``cluster`` (the
    generic-table reader carries a column of that name); the column to read afterwards."""
    if cluster is None:
        return source, None
    if not isinstance(cluster, str):
        raise DataError(f"cluster must name a column of the logs' table, got {cluster!r}")
    if isinstance(source, pd.DataFrame) and cluster in source.columns and cluster != "cluster":
        if "cluster" in source.columns:
            raise DataError(f"cluster={cluster!r}: the table also has a column named 'cluster'; rename one of them")
        return source.rename(columns={cluster: "cluster"}), "cluster"
    return source, cluster


def _design(source: Any, metric: str, fmt: str, systems: Any, drop_missing: bool,
            cluster: str | None = None, system: Any = None) -> EvalDesign:
    """The call's :class:`EvalDesign`: the logs read once (:func:`mixedeval.read_eval_logs`, or
    the :class:`EvalLogs` given), the cluster read and checked once, epochs reduced once."""
    if isinstance(source, EvalLogs):
        logs = source
        if systems is not None or system is not None:
            raise DataError("systems= and system= apply while reading; pass the source path instead of EvalLogs")
    else:
        logs = read_eval_logs(source, fmt, metric=metric, systems=systems, drop_missing=drop_missing,
                              system=system, metadata=[cluster] if cluster is not None else ())
    if metric not in set(logs.table["metric"]):
        logs.scores(metric)  # its DataError names the metrics available
    n_sys = logs.table.loc[logs.table["metric"] == metric, "system"].nunique()
    if n_sys < 2:
        raise DataError(f"metric {metric!r} has scores for {n_sys} system(s); comparing needs at least two (systems "
                        f"read: {sorted(logs.table['system'].unique())})")
    return design_from_logs(logs, metric, cluster)


def _kind(scores: pd.Series, trials: int | None) -> str:
    """"binary" (0/1), "binomial" (proportions of ``trials``) or "continuous"."""
    v = scores.to_numpy(dtype=float)
    if trials is not None:
        if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
            raise DataError(f"trials must be a positive integer (attempts per item and run), got {trials!r}")
        k = v * trials
        if np.any((v < 0) | (v > 1)) or not np.allclose(k, np.round(k), atol=1e-9):
            raise DataError(f"trials={trials}: the scores must be proportions k / {trials} (k = 0..{trials})")
        return "binomial"
    return "binary" if np.isin(v, (0.0, 1.0)).all() else "continuous"


def _frame(design: EvalDesign, trials: int | None) -> tuple[pd.DataFrame, bool, bool]:
    """Model columns of the design's rows: score, system, task, item (task::id), sysrun; whether
    runs vary, several tasks. One row per epoch (the GLMM's repeated trials of a question)."""
    s = design.rows
    f = pd.DataFrame({"score": s["score"].to_numpy(dtype=float), "system": s["system"].astype(str).to_numpy(),
                      "task": s["task"].astype(str).to_numpy(),
                      "item": (s["task"].astype(str) + "::" + s["item"].astype(str)).to_numpy(),
                      "sysrun": (s["system"].astype(str) + "::" + s["task"].astype(str) + "::"
                                 + s["run"].astype(str)).to_numpy()})
    if "cluster" in s.columns:  # task::cluster (nested in tasks)
        f["cluster"] = s["cluster"].astype(str).to_numpy()
    if "epoch" in s.columns:  # not in the formula; it keeps the epochs of a question distinct rows (no duplicate)
        f["epoch"] = s["epoch"].astype(str).to_numpy()
    if trials is not None:
        f["successes"] = np.round(f["score"] * trials)
        f["failures"] = trials - f["successes"]
    return f, design.runs, f["task"].nunique() > 1


# ------------------------------------------------------------------------------ the model
#: grouping terms of the log GLMM that are dropped when their variance is estimated at zero
_PRUNABLE = ("system:item", "sysrun", "system:cluster", "cluster")


def _zero_terms(fit: Any, extra: Sequence[str]) -> list[str]:
    """The optional grouping terms estimated at (practically) zero: a standard deviation below
    lme4's singularity tolerance (1e-4 on the link scale) in a singular fit, or below 0.01 (an odds
    factor of 1.01) in a fit whose convergence check failed -- such a flat direction is what stalls
    the optimizer near the boundary."""
    kinds = {w.kind for w in getattr(fit, "warnings", ())}
    tol = 0.01 if kinds & {"convergence", "convergence_gradient", "convergence_hessian"} else (
        1e-4 if getattr(fit, "singular", False) else 0.0)
    r = fit.random
    sd = dict(zip(r["group"].astype(str), r["std_dev"].astype(float)))
    return [t for t in extra if t in _PRUNABLE and sd.get(t, 1.0) < tol]


def _fit_models(frame: pd.DataFrame, kind: str, analysis: str, runs: bool, tasks: bool, trials: int | None,
                levels: Mapping, epochs: bool = False, extra: Sequence[str] | None = None,
                dropped: Sequence[str] = ()) -> tuple[Any, Any, str, str, list[ResultWarning]]:
    clustered = "cluster" in frame.columns
    if extra is None:
        extra = ((["system:item"] if epochs else []) + (["sysrun"] if runs else [])
                 + (["cluster", "system:cluster"] if clustered else []))
    lhs = "score"
    fixed = "system * task" if tasks else "system"
    null_fixed = "task" if tasks else "1"
    # the models (rpy2, R) are imported when the model-based check runs (model_check=True): the
    # command line's default skips it and should not pay for loading them
    from ..inference._lmm import lmm  # noqa: PLC0415 - R: only when the model-based check runs

    try:  # the binomial GLMM; without it the binary path falls back to the LMM with a warning
        from ..inference._glmm import glmm  # noqa: PLC0415 - R: only when the model-based check runs
    except ImportError:  # pragma: no cover - depends on the installed version
        glmm = None
    warns: list[ResultWarning] = []
    use_glmm = analysis == "glmm" or (analysis == "auto" and kind != "continuous")
    if use_glmm and kind == "continuous":
        raise DataError("analysis='glmm' needs 0/1 scores or proportions of trials= attempts; these scores are "
                        "continuous (use analysis='lmm')")
    if use_glmm and glmm is None:  # pragma: no cover - before the GLMM issue has landed
        warns.append(ResultWarning("binary_as_lmm", "the binomial GLMM is not available in this version: the 0/1 "
                                   "scores are analysed with the LMM and the paired bootstrap"))
        use_glmm = False
    factors = ["system", "task", "item", *(["sysrun"] if "sysrun" in extra else []),
               *(["cluster"] if any("cluster" in t for t in extra) else [])]
    lv = {**levels, "task": sorted(frame["task"].unique())}
    if use_glmm:
        if trials is not None:
            lhs_f = "cbind(successes, failures)"
            full_f = model_formula("score", fixed, "item", extra).replace("score ~", f"{lhs_f} ~", 1)
            null_f = model_formula("score", null_fixed, "item", extra).replace("score ~", f"{lhs_f} ~", 1)
        else:
            full_f, null_f = model_formula(lhs, fixed, "item", extra), model_formula(lhs, null_fixed, "item", extra)
        full = glmm(full_f, frame, family="binomial", factors=factors, levels=lv)
        zero = _zero_terms(full, extra)
        if zero:  # parsimonious model: refit without the components estimated at zero
            kept = [t for t in extra if t not in zero]
            return _fit_models(frame, kind, analysis, runs, tasks, trials, levels, epochs, kept, [*dropped, *zero])
        null = glmm(null_f, frame, family="binomial", factors=factors, levels=lv)
        if dropped:
            warns.append(ResultWarning("random_effects_dropped", "the variance of " + ", ".join(
                f"(1|{t})" for t in dropped) + " was estimated as (practically) zero (SD below 1e-4 in a singular "
                "fit, or below 0.01 where the optimizer stalled on it), so the GLMM was refitted without it (a "
                "parsimonious model: Bates, Kliegl, Vasishth & Baayen 2015); the likelihood-ratio test and contrasts "
                "come from the refit, whose likelihood is (nearly) the same", "mixedeval"))
        return full, null, "binomial GLMM (lme4::glmer, Laplace)", full_f, warns
    full_f, null_f = model_formula(lhs, fixed, "item", extra), model_formula(lhs, null_fixed, "item", extra)
    full = lmm(full_f, frame, reml=True, factors=factors, levels=lv)
    null = lmm(null_f, frame, reml=True, factors=factors, levels=lv)
    return full, null, "LMM (lmerTest::lmer, REML)", full_f, warns


def _separated(full: Any, analysis_name: str) -> tuple[Any, str, list[ResultWarning]]:
    """The fit the contrasts come from: ``full``, or, when its fixed part is separated (a system
    right or wrong on every question of a task: infinite log-odds, meaningless Wald tests), the
    weakly penalised refit ``blme::bglmer`` (normal prior sd 10 / 2.5; Gelman et al. 2008). The
    likelihood-ratio test stays on the ML fits, where it is valid."""
    if not any(w.kind == "separation" for w in getattr(full, "warnings", ())):
        return full, analysis_name, []
    pen = full.penalized_refit()
    note = ResultWarning("separation_penalized", "the GLMM's fixed part is separated, so its contrasts and means come "
                         "from the weakly penalised refit blme::bglmer (normal prior on the fixed effects, sd 10 for "
                         "the intercept and 2.5 for the others; Gelman, Jakulin, Pittau & Su 2008); the "
                         "likelihood-ratio test uses the ML fits; the headline difference in points needs no model",
                         "mixedeval")
    return pen, analysis_name + "; contrasts from the penalised refit (blme::bglmer)", [note, *pen.warnings]


def _contrast_tables(fit: Any, tasks: bool, only_task: str, glmm_fit: bool, posthoc_df: str, adjust: str,
                     level: float) -> tuple[pd.DataFrame, pd.DataFrame, Any, list[ResultWarning]]:
    """Pairwise contrasts and EMMs of the systems, per task (when several) and pooled. GLMM means
    are population-averaged (``marginal="integrate"``: the inverse link averaged over the random
    effects), so that they estimate the accuracy; the odds-ratio contrasts are conditional; the
    GLMM's differences of the population-averaged means (``scale="difference"``) are on the
    headline's scale (None for the LMM, whose contrasts are differences already)."""
    kw = {"level": level, "marginal": "integrate"} if glmm_fit else {"df_method": posthoc_df, "level": level}
    emms, cons, diffs, warns = [], [], [], []
    specs = [("task", None), (None, ALL_TASKS)] if tasks else [(None, only_task)]
    for by, label in specs:
        emm = fit.emmeans("system", by=by, **kw)
        con = emm.contrasts(method="pairwise", adjust=adjust)
        dif = emm.contrasts(method="pairwise", adjust=adjust, scale="difference") if glmm_fit else None
        warns += [w for r in (emm, con, dif) if r is not None for w in getattr(r, "warnings", ())]
        for tab, out in ((emm.table, emms), (con.table, cons), (None if dif is None else dif.table, diffs)):
            if tab is None:
                continue
            t = tab.copy()
            if label is not None:
                t.insert(0, "task", label)
            else:  # by task: emmeans puts the by column after the contrast; move it first
                t.insert(0, "task", t.pop("task"))
            out.append(t)
    model_diff = pd.concat(diffs, ignore_index=True) if diffs else None
    return pd.concat(cons, ignore_index=True), pd.concat(emms, ignore_index=True), model_diff, warns


# ------------------------------------------------------------------------------ the bootstrap
#: the warning of the across-task bootstrap when runs differ between tasks
_POOLED_RUNS = ResultWarning(
    "pooled_runs_averaged", "the runs differ between tasks (e.g. a different number of trials per task), so "
    "the across-task bootstrap resamples items of each item's mean over its runs; the per-task bootstraps "
    "resample the runs")


def _cluster_sums(s: pd.DataFrame) -> pd.DataFrame:
    """Per system, task, cluster and run: the sum of the question scores and their count (the
    bootstrap of whole clusters: the mean over questions is sum / count of the drawn clusters)."""
    g = s.groupby(["system", "task", "cluster", "run"], observed=True, sort=False)["score"]
    return g.agg(score_sum="sum", n_questions="size").reset_index()


def _ratio(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    return total / count


def _bootstraps(design: EvalDesign, adjust: str, n_resamples: int, level: float,
                random_state: np.random.SeedSequence, progress: Any,
                higher_is_better: bool = True) -> tuple[pd.DataFrame, pd.DataFrame, Any, list[ResultWarning]]:
    """Paired bootstrap of the mean of the design's epoch-reduced scores per task and (several
    tasks) of the mean of the task means; with clusters whole clusters of questions are drawn (the
    mean is the ratio of the drawn clusters' score sums to their question counts)."""
    kw = dict(score="score", system="system", item="item", n_resamples=n_resamples, level=level, progress=progress,
              higher_is_better=higher_is_better)
    cluster = design.clustered
    s = design.scores
    if cluster:
        s = _cluster_sums(s)
        kw.update(score=["score_sum", "n_questions"], item="cluster", statistic=_ratio)
    ss = seed_sequence(random_state)
    task_names = design.tasks
    names = [*task_names, ALL_TASKS] if len(task_names) > 1 else task_names
    pw, means, warns = [], [], []
    boot = None
    for name, seed in zip(names, ss.spawn(len(names))):
        if name == ALL_TASKS:
            if cluster:
                sub, runs = s, design.several_runs()
            else:
                sub, runs, reduced = design.pooled_scores()
                warns += [_POOLED_RUNS] if reduced else []
            boot = bootstrap(sub, run="run" if runs else None, group="task", random_state=seed, **kw)
        else:
            sub = s[s["task"] == name]
            boot = bootstrap(sub, run="run" if design.several_runs(name) else None, random_state=seed, **kw)
        warns += list(boot.warnings)
        p, m = boot.pairwise(adjust=adjust), boot.summary()
        p.insert(0, "task", name)
        m.insert(0, "task", name)
        pw.append(p)
        means.append(m)
    return pd.concat(pw, ignore_index=True), pd.concat(means, ignore_index=True), boot, warns


def _boot_best_first(bpw: pd.DataFrame, bmeans: pd.DataFrame, order: list[str],
                     direction: _answer.Direction) -> pd.DataFrame:
    """The bootstrap's pair table best first (the leaderboard's order), delta and snr signed in
    the better direction. A table already signed in the better direction (delta is not a - b of
    the bootstrap's means) is only reordered."""
    if bpw is None or not len(bpw):
        return bpw
    est = bmeans.assign(task=bmeans["task"].astype(str), system=bmeans["system"].astype(str)).set_index(
        ["task", "system"])["estimate"]
    t = bpw["task"].astype(str)
    raw = (est.reindex(list(zip(t, bpw["system_a"].astype(str)))).to_numpy(dtype=float)
           - est.reindex(list(zip(t, bpw["system_b"].astype(str)))).to_numpy(dtype=float))
    delta = bpw["delta"].to_numpy(dtype=float)
    ok = np.isfinite(raw) & np.isfinite(delta)
    on_score_scale = bool(np.allclose(delta[ok], raw[ok], rtol=1e-9, atol=1e-12)) if ok.any() else True
    return best_first(bpw, order, direction.higher_is_better if on_score_scale else True,
                      signed=("snr",))


#: what :func:`compare_logs` holds in place of the model-based check when ``model_check=False``
_NO_MODEL = (None, None, None, None, None, "not run (model_check=False)", None, [])


def _model_check(frame: pd.DataFrame, kind: str, analysis: str, runs: bool, tasks: bool, trials: int | None,
                 sys_levels: Sequence[str], epochs: bool, posthoc_df: str, adjust: str, level: float) -> tuple:
    """The model-based check (step 3 of the module docstring): the fit, the likelihood-ratio test's
    table, the contrasts, EMMs and the GLMM's differences, the analysis' name, its formula and
    the warnings of all of them."""
    from ..inference.compare import compare  # noqa: PLC0415 - R: only when the check runs

    full, null, analysis_name, formula, warns = _fit_models(frame, kind, analysis, runs, tasks, trials,
                                                            {"system": sys_levels}, epochs)
    glrt = compare(null, full, names=["null", "full"])
    con_fit, analysis_name, w_sep = _separated(full, analysis_name)
    con, emm, model_diff, w2 = _contrast_tables(con_fit, tasks, str(frame["task"].iloc[0]),
                                                analysis_name.startswith("binomial"), posthoc_df, adjust, level)
    return (full, glrt.table, con, emm, model_diff, analysis_name, formula,
            [*warns, *full.warnings, *null.warnings, *glrt.warnings, *w_sep, *w2])


def compare_logs(
    source: Any,
    metric: str = "acc",
    *,
    format: str = "auto",  # noqa: A002 - read_eval_logs' name
    systems: Sequence[str] | Mapping[str, str] | None = None,
    system: str | Sequence[str] | None = None,
    drop_missing: bool = False,
    analysis: str = "auto",
    trials: int | None = None,
    reference: Any = None,
    adjust: str = "holm",
    posthoc_df: str = "asymptotic",
    n_resamples: int = 10_000,
    level: float = 0.95,
    random_state: Any = None,
    progress: bool | None = None,
    cluster: str | None = None,
    plan: bool = True,
    effect: float | None = None,
    target: float = 0.8,
    n_sim: int = 1000,
    higher_is_better: bool | None = None,
    model_check: bool = True,
) -> CompareLogsResult:
    """Compare the systems in evaluation logs on ``metric``: mixed model, contrasts, bootstrap, report.

    Parameters
    ----------
    source : what :func:`mixedeval.read_eval_logs` reads (paths, directories, globs, a
        ``{system: path}`` dict), or an :class:`EvalLogs` already read.
    metric : the metric to compare (lm-eval ``acc``; Inspect scorer name; HELM ``exact_match``).
    format, systems, drop_missing : as :func:`mixedeval.read_eval_logs`.
    system : the log fields that define a system (``"model"``, ``"task_args.cot"``, ``"solver"``,
        ``"tags"``, ...; :func:`mixedeval.read_eval_logs`): ``system=["model", "task_args.cot"]``
        compares two prompting strategies of one model. By default one model's logs that differ
        in such fields are split into systems with a warning.
    analysis : ``"auto"`` (binomial GLMM for 0/1 scores or ``trials``, LMM otherwise), ``"glmm"``
        or ``"lmm"``.
    trials : the scores are proportions of ``trials`` attempts per item and run (k of n):
        binomial GLMM of ``cbind(successes, failures)``.
    reference : the system the others are compared to: the headline is then the best other
        system against it (and it is the model's first level; code-point order otherwise).
    higher_is_better : the score's direction (None: from the metric's name -- TER, error, loss:
        lower; accuracy, match, F1: higher; unknown: higher, said in ``direction.note``). The
        leaderboard, the headline and the bootstrap's ranks follow it.
    adjust : p-value adjustment of the pairwise contrasts and bootstrap differences (Holm).
    posthoc_df : df of the LMM's EMMs and contrasts (``"asymptotic"``, ``"satterthwaite"``,
        ``"kenward-roger"``); GLMM contrasts are z tests.
    n_resamples, level, random_state, progress : the bootstrap's (and the intervals' level).
    cluster : a column of the logs' table naming each question's cluster (a passage, a document,
        a template: questions that share it are not independent). A generic table carries a
        column named ``cluster`` (or names it here, or with ``columns={"cluster": ...}`` in
        :func:`mixedeval.read_eval_logs`). The headline's SE is then the cluster-robust SE of
        Inspect AI's ``stderr(cluster=...)`` (Miller 2024, appendix A; equal to
        ``sandwich::vcovCL(lm(d ~ 1), cluster = ~cluster, type = "HC0", cadjust = TRUE)``) with
        a t interval on clusters - 1 df. Clusters are nested in tasks.
    plan, effect, target, n_sim : the sample-size answer for the next run (``.plan``): with the
        logs as the pilot, :func:`mixedeval.questions_needed` for the headline pair -- questions
        (and epochs) needed to detect a difference of ``effect`` (score units; default: the size
        observed, at least 0.01) at power ``target``, Miller's closed form beside ``n_sim``
        simulations (0: closed form only). It ignores ``cluster`` and pools runs as epochs
        (its warnings say so). ``plan=False`` skips it.
    model_check : fit the mixed model of step 3 (the model-based check: the GLMM or LMM, its
        likelihood-ratio test, contrasts and EMMs; it starts R and takes seconds). False skips it:
        ``glrt``, ``contrasts``, ``emmeans``, ``model_differences``, ``formula`` and ``fit`` are
        None and ``analysis`` says "not run"; the headline, the accuracies, the bootstrap and the
        plan need no model and are the same. The command line skips it unless asked
        (``mixedeval compare-logs ... --checks``).

    Returns a :class:`CompareLogsResult`; ``me.report(result, path="report.html")`` writes its HTML
    report (the command line: ``mixedeval compare-logs PATH... --metric acc --report out.html``).
    """
    if analysis not in ANALYSES:
        raise DataError(f"analysis must be one of {', '.join(ANALYSES)}; got {analysis!r}")
    level = require_level(level)
    posthoc_df = check_posthoc_df(posthoc_df)
    higher_is_better = _answer.check_higher_is_better(higher_is_better)
    if plan:
        check_plan(effect, target, n_sim)
    source, cluster = _cluster_source(source, cluster)
    design = _design(source, metric, format, systems, drop_missing, cluster, system)
    logs = design.logs
    kind = _kind(design.rows["score"], trials)
    frame, runs, tasks = _frame(design, trials)
    sys_levels = sorted(frame["system"].unique())
    if reference is not None:
        if str(reference) not in sys_levels:
            raise DataError(f"reference {reference!r} is not a system in the logs ({', '.join(sys_levels)})")
        sys_levels = [str(reference)] + [x for x in sys_levels if x != str(reference)]
    model = (_model_check(frame, kind, analysis, runs, tasks, trials, sys_levels, design.n_epochs > 1, posthoc_df,
                          adjust, level)
             if model_check else _NO_MODEL)
    full, glrt, con, emm, model_diff, analysis_name, formula, w_model = model
    ss = seed_sequence(random_state)
    direction = _answer.direction(metric, higher_is_better)
    ans = logs_answer(design, direction, level=level, adjust=adjust, pooled_label=ALL_TASKS, reference=reference)
    bpw, bmeans, pooled, w3 = _bootstraps(design, adjust, n_resamples, level, ss, progress,
                                          direction.higher_is_better)
    bpw = _boot_best_first(bpw, bmeans, ans.order, direction)
    acc = accuracies(design, level, adjust)
    nxt, w4 = (plan_next_run(design, metric, _plan_row(ans.headline), effect, target, n_sim, ss, cluster)
               if plan else (None, []))
    model_tag = "check:glmm" if str(analysis_name).startswith("binomial") else "check:lmm"
    w_df = _df_note(analysis_name, posthoc_df) if glrt is not None else []
    checks = _checks(ans.headline, ans.label, glrt, con, model_diff, bpw, analysis_name, posthoc_df,
                     n_systems=len(sys_levels), runs=runs, cluster=bool(cluster), n_resamples=n_resamples)
    warnings = dedupe_warnings([*design.warnings, *answer_notes(direction), *w4,
                                *_tag([*w_model, *w_df], model_tag),
                                *_tag(w3, "check:bootstrap")])
    prov = dict(full.provenance) if full is not None else {}
    prov.update({"workflow": "compare_logs", "metric": metric, "analysis": analysis_name, "adjust": adjust,
                 "posthoc_df": posthoc_df, "level": float(level), "n_resamples": int(n_resamples),
                 "random_state_entropy": str(ss.entropy),  # reproduces the bootstrap: random_state=<this int>
                 "bootstrap": "mixedeval.bootstrap (questions -- whole clusters with cluster= -- and runs when "
                              "several; per task and across tasks)",
                 "epochs": design.epochs_text,
                 "headline": str(ans.table["method"].iloc[0]) if len(ans.table) else None,
                 "direction": direction.note, "reference": None if reference is None else str(reference),
                 "cluster": None if cluster is None else f"{cluster} ({design.n_clusters} clusters)",
                 "plan_effect": None if not plan else "observed" if effect is None else float(effect)})
    answer = ans.answer(direction, checks, CompareLogsResult._no_headline_text)
    return CompareLogsResult(answer=answer, table=ans.table, contrasts=con, model_differences=model_diff, glrt=glrt,
                             emmeans=emm, bootstrap=bpw, means=bmeans,
                             data_summary=logs.summary().query("metric == @metric").reset_index(drop=True),
                             analysis=analysis_name, formula=formula, metric=metric, warnings=warnings,
                             provenance=prov, fit=full, logs=logs, design=design, boot_result=pooled,
                             accuracies=acc, plan=nxt, leaderboards=ans.leaderboards)


# ------------------------------------------------------------------------------ the checks
def _tag(ws: Sequence[ResultWarning], source: str) -> list[ResultWarning]:
    """The warnings of a check, with ``source`` naming it (they never qualify the headline)."""
    return [replace(w, source=source) for w in ws]


def _plan_row(head: Any) -> pd.Series | None:
    """The headline pair as the plan's row (the observed advantage, not rounded)."""
    if head is None:
        return None
    return pd.Series({"system_a": head.better, "system_b": head.other, "delta": head.estimate})


def _df_note(analysis_name: str, posthoc_df: str) -> list[ResultWarning]:
    """A note where the model's contrasts show df = Inf (asymptotic z tests)."""
    if analysis_name.startswith("binomial"):
        return [ResultWarning("df_asymptotic", "the GLMM's contrasts and means are Wald z tests (df = Inf: a binomial "
                              "GLMM has no residual df to count), so they are a little too narrow with few questions; "
                              "the headline uses the paired t on n - 1 df")]
    if posthoc_df == "asymptotic":
        return [ResultWarning("df_asymptotic", "the LMM's contrasts and means use asymptotic df (df = Inf: z tests; "
                              "posthoc_df='asymptotic', the default because Satterthwaite df are slow on large logs); "
                              "pass posthoc_df='satterthwaite' for t tests on estimated df")]
    return []


def _unadjusted(r: pd.Series, level: float) -> tuple[float, float]:
    """The unadjusted interval of a contrast row (estimate -+ t or z quantile x SE; the table's own
    interval is adjusted over the pairs)."""
    df = float(r["df"]) if "df" in r.index and pd.notna(r["df"]) else np.inf
    q = float(stats.t.ppf(0.5 + level / 2.0, df)) if np.isfinite(df) else _answer.z_quantile(level)
    est, se = float(r["estimate"]), float(r["std_error"])
    return est - q * se, est + q * se


def _checks(head: Any, label: str, glrt: pd.DataFrame, con: pd.DataFrame, model_diff: pd.DataFrame | None,
            boot: pd.DataFrame, analysis_name: str, posthoc_df: str, *, n_systems: int, runs: bool, cluster: bool,
            n_resamples: int) -> pd.DataFrame | None:
    """The checks table: the model's contrast of the headline pair, its likelihood-ratio test and
    the paired bootstrap (``boot``: best first, signed in the better direction), each with a
    verdict computed from its numbers (:func:`mixedeval._answer.check_row`) and only its own
    reason."""
    if head is None:
        return None
    sgn = 1.0 if head.direction is None or head.direction.higher_is_better else -1.0
    glmm_fit = analysis_name.startswith("binomial")
    model_name = "binomial GLMM" if glmm_fit else "LMM"
    model_why = []
    if glmm_fit:
        model_why.append("the GLMM weighs the questions by their log-odds information (Wald z, df = Inf), the "
                         "headline averages accuracies (paired t)")
    elif posthoc_df == "asymptotic":
        model_why.append("the LMM's contrast uses df = Inf (asymptotic z), the headline n - 1 df")
    if runs:
        model_why.append("the model treats runs as a random intercept (1|sysrun) whose variance is estimated "
                         "by REML from few runs (the headline pools the method-of-moments estimate over systems)")
    if cluster:
        model_why.append("the model's clusters are random effects, the headline's SE is cluster-robust")
    rows = []
    diff = model_diff if model_diff is not None else con
    hit = _answer.pair_row(diff, head.better, head.other, task=label)
    if hit is not None:
        r, sign = hit
        lo, hi = _unadjusted(r, head.level)
        lo, hi = sorted((sgn * sign * lo, sgn * sign * hi))
        what = "difference of population-averaged accuracies" if model_diff is not None else "contrast"
        rows.append(_answer.check_row(f"{model_name} {what}", head, estimate=sgn * sign * float(r["estimate"]),
                                      conf_low=lo, conf_high=hi, p_value=float(r["p_value"]),
                                      why="; ".join(model_why) or None))
    if glrt is not None and len(glrt):
        lrt_why = (f"the likelihood-ratio test asks whether any of the {n_systems} systems differ, not this pair"
                   if n_systems > 2 else "the likelihood-ratio test compares the models' fits (ML), not the "
                   "mean scores")
        rows.append(_answer.check_row(f"{model_name} likelihood-ratio test of the system effect", head,
                                      p_value=float(glrt["p_value"].iloc[-1]), why=lrt_why))
    bhit = _answer.pair_row(boot, head.better, head.other, task=label) if boot is not None and len(boot) else None
    if bhit is not None:
        r, sign = bhit  # the table is signed in the better direction: sign turns it into better - other
        lo, hi = sorted((sign * float(r["conf_low"]), sign * float(r["conf_high"])))
        why = ("the bootstrap resamples questions and runs, which counts the question x run noise twice"
               if runs else f"the bootstrap's percentile interval and shift p-value ({n_resamples} resamples) differ "
               "from the t interval near the threshold")
        rows.append(_answer.check_row("paired bootstrap" + (" of clusters" if cluster else ""), head,
                                      estimate=sign * float(r["delta"]), conf_low=lo, conf_high=hi,
                                      p_value=float(r["p_value"]), why=why))
    return _answer.checks_table(rows)


__all__ = ["CompareLogsResult", "compare_logs"]
