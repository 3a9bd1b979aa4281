"""The two companions of :func:`mixedeval.compare_logs`' headline: the accuracies with the
intervals Inspect AI prints (:func:`mixedeval.summarize`'s table) and a sample-size answer for
the next run (:func:`mixedeval.questions_needed` on the logs as a pilot), so that one call gives
all three."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._answer import z_quantile
from ..data._logs import reduction_text
from ..errors import DataError
from ..results import ResultWarning
from ._paired import RUN_SHRINK_FLOOR
from .plan_eval import QuestionsNeededResult, _check_args, _Refused, questions_needed, run_variance_part, runs_for
from .summarize import system_table

#: the smallest difference planned for by default (an observed difference below it is planned as 1 point)
MIN_PLANNED_EFFECT = 0.01


def check_plan(effect: float | None, target: float, n_sim: int) -> None:
    """The plan's arguments as :func:`mixedeval.questions_needed` checks them, before any work (a
    bad ``target`` is the caller's error, not a reason to skip the plan)."""
    _check_args(MIN_PLANNED_EFFECT if effect is None else effect, target, 0.05, None, n_sim)


def accuracies(design: Any, level: float, adjust: str) -> pd.DataFrame:
    """:func:`mixedeval.summarize`'s per task x system table of the call's design (Inspect's
    ``stderr()``, ``ci()``, Wilson for 0/1 scores, and ``stderr(cluster=)`` with clusters).
    ``adjust`` is not used by the table (kept for the callers).

    ``conf_low`` / ``conf_high`` are Inspect's ``ci()`` to the last digit, a t interval that can
    leave [0, 1] near 0 or 1 (0.975 of 40 questions: up to 1.026); ``wilson_low`` /
    ``wilson_high`` (Inspect's ``ci_wilson()``) cannot. The interval that leads -- the
    leaderboard's, :func:`mixedeval.workflows._paired.system_means` -- is the bounded one there
    (its ``interval`` column names the family: :mod:`mixedeval.workflows._bounded`)."""
    return system_table(design, level)


def headline_pair(head: pd.DataFrame, all_tasks: str) -> pd.Series | None:
    """The headline row: the pooled (or the only task's) first pair."""
    if head is None or not len(head):
        return None
    pooled = head[head["task"] == all_tasks]
    return (pooled if len(pooled) else head).iloc[0]


def plan_next_run(design: Any, metric: str, row: pd.Series | None, effect: float | None, target: float, n_sim: int,
                  random_state: Any, cluster: str | None = None) -> tuple[QuestionsNeededResult | None,
                                                                           list[ResultWarning]]:
    """:func:`mixedeval.questions_needed` for the headline pair with the call's design
    (:class:`~mixedeval.workflows.logs.design.EvalDesign`) as the pilot: no second reading of the
    logs. ``effect`` None plans for a difference of the size observed (at least
    :data:`MIN_PLANNED_EFFECT`, 1 point). The plan's provenance records what :func:`plan_text`
    says: ``observed_effect`` (the headline's difference, in score units, unsigned),
    ``effect_rule`` (``"observed"``, ``"floor"``: the observed size was below
    :data:`MIN_PLANNED_EFFECT`, ``"given"``) and ``reduction`` (how the log's reducer reduced the
    pilot's epochs, "max over 3 epochs"; None when it did not)."""
    if row is None:
        return None, []
    observed = abs(float(row["delta"]))
    rule = "given" if effect is not None else "observed" if observed >= MIN_PLANNED_EFFECT else "floor"
    if effect is None:  # the size observed, not rounded (a rounded effect changes n near small differences)
        effect = max(observed, MIN_PLANNED_EFFECT)
    try:
        plan = questions_needed(design, effect, target=target, metric=metric, n_sim=n_sim, random_state=random_state,
                                systems=(str(row["system_a"]), str(row["system_b"])))
    except _Refused:  # an effect too small to plan for, an n_sim beyond the loop guard: the caller's error
        raise
    except DataError as exc:
        return None, [ResultWarning("no_plan", f"no sample-size plan for the next run: {exc}")]
    red = reduction_text(getattr(design, "reduction", None), metric, plan.systems)
    plan = dataclasses.replace(plan, provenance={**plan.provenance, "observed_effect": observed, "effect_rule": rule,
                                                 "reduction": red})
    warns = list(plan.warnings)
    if cluster is not None:
        warns.append(ResultWarning("plan_ignores_clusters", f"the sample-size plan treats questions as independent "
                                   f"(Miller's formula without clusters); with clustered questions ({cluster}) the "
                                   "next run needs more of them than it says"))
    return plan, warns


def detectable_now(plan: QuestionsNeededResult, n_questions: int, epochs: int) -> float:
    """The smallest difference the current design (``n_questions`` x ``epochs`` samples per
    question; the pilot's own: the variance of its question differences) detects at the plan's
    power and alpha (Miller's closed form solved for the effect,
    with the pilot's between-run part ``sigma2_run (1/R_a + 1/R_b)`` when the plan has one: the
    headline's SE times z_{1-alpha/2} + z_power)."""
    est = plan.estimates.set_index("quantity")["value"]
    var_d = float(est["var_between"]) + (float(est["within_a"]) + float(est["within_b"])) / epochs
    if not math.isfinite(var_d):  # one epoch in the pilot: the one-epoch variance of the difference
        var_d = float(est["var_one_epoch_difference"])
    if "var_question_differences" in est.index and epochs == round(float(est["epochs_pilot"])):
        var_d = float(est["var_question_differences"])  # the pilot's own design: its observed variance (the
        # headline's sd(d)^2), not the pieces, whose between part may have been truncated at 0
    z = z_quantile(1 - plan.alpha) + stats.norm.ppf(plan.target)
    base = max(var_d, 0.0) / n_questions
    shrink = float(est.get("run_shrink", 0.0))  # the headline's share of a negative run estimate
    return float(z * math.sqrt(_pilot_run_part(est) + (max(base + shrink, RUN_SHRINK_FLOOR * base)
                                                        if math.isfinite(shrink) and shrink < 0 else base)))


def _pilot_run_part(est: pd.Series) -> float:
    """``sigma2_run (1/R_a + 1/R_b)`` with the pilot's runs (0 without a run variance in the plan)."""
    s2 = float(est.get("sigma2_run", 0.0))
    return s2 * (1.0 / float(est["runs_a"]) + 1.0 / float(est["runs_b"])) if math.isfinite(s2) and s2 > 0 else 0.0


def _points(x: float) -> str:
    """A difference in score units as points: two significant digits below 1 point ("0.61"),
    one decimal above ("1.0", "12.3")."""
    v = 100.0 * abs(float(x))
    return f"{v:.2g}" if 0 < v < 1 else f"{v:.1f}"


def _per_question(design: str, reduction: str | None, k: int) -> str:
    """" x K epochs" after "N questions"; with a reduced pilot (``reduction``, "max over 3
    epochs") its one reduced score per question: ", each the max over 3 epochs"."""
    if reduction is None:
        return f" x {design}"
    return f", each the {reduction}" if k == 1 else f" x {k} scores, each the {reduction}"


def _effect_words(plan: QuestionsNeededResult, observed: bool) -> str:
    """The effect planned for and how it relates to the observed difference: "(the size
    observed)", "(the smallest difference planned for; 0.61 points observed)", "(as given; 0.61
    points observed)". ``observed``: the effect was chosen from the observed difference."""
    prov = plan.provenance or {}
    seen = prov.get("observed_effect")
    if seen is None:  # a plan made elsewhere: the pilot's own mean difference
        est = plan.estimates.set_index("quantity")["value"]
        seen = abs(float(est["delta_pilot"])) if "delta_pilot" in est.index else None
    seen = None if seen is None or not math.isfinite(float(seen)) else float(seen)
    if seen is None:
        return " (the size observed)" if observed else ""
    same = math.isclose(seen, abs(plan.effect), rel_tol=1e-9, abs_tol=1e-12)
    if same:
        return " (the size observed)"
    if observed or prov.get("effect_rule") == "floor":
        return f" (the smallest difference planned for; {_points(seen)} points observed)"
    return f" (as given; {_points(seen)} points observed)"


def _pilot_design(est: pd.Series, epochs: int) -> str:
    """The pilot's design in words (``K epochs``; ``R runs``; ``R_a and R_b runs``)."""
    if "epochs_per_run" not in est.index or est["runs_a"] == est["runs_b"]:
        return _design(est, epochs)
    per_run = float(est["epochs_per_run"])
    runs = f"{int(est['runs_a'])} and {int(est['runs_b'])} runs"
    return runs if per_run == 1 else f"{runs} of {per_run:g} epochs"


def _design(est: pd.Series, k: int) -> str:
    """K samples of a question in words: ``K epochs``, or for a pilot with runs ``R runs`` (of E
    epochs each)."""
    if "epochs_per_run" not in est.index:
        return f"{k} epoch{'s' if k > 1 else ''}"
    r, per_run = runs_for(est, k), float(est["epochs_per_run"])
    runs = f"{r} run{'s' if r > 1 else ''}"
    return runs if per_run == 1 else f"{runs} of {per_run:g} epochs"


#: relative disagreement of the simulated and the closed-form n above which the simulation leads
DISAGREE = 0.10


def _why_disagree(plan: QuestionsNeededResult) -> str:
    """Why the simulation and Miller's closed form differ, in words."""
    est = plan.estimates.set_index("quantity")["value"]
    if run_variance_part(est, 1) > 0:
        return ("the headline's t rests on few Satterthwaite df when the run variance is estimated from few runs "
                "(and its preliminary F test sometimes pools it), which the closed form's normal approximation does "
                "not see; the simulation draws runs with the pilot's run variance and runs the headline's test")
    means = [float(est.get("mean_a", np.nan)), float(est.get("mean_b", np.nan))]
    edge = [m for m in means if np.isfinite(m) and (m > 0.85 or m < 0.15)]
    if edge:
        return ("near the ceiling or floor (accuracy " + ", ".join(f"{m:.2f}" for m in edge) + ") moving the systems "
                "apart by the effect changes p (1 - p) and clips at 0 or 1, which the closed form's fixed pilot "
                "variances do not see; the simulation draws the scores at the planned accuracies and runs the t test")
    return ("the closed form is a normal approximation with the pilot's variances; the simulation runs the paired t "
            "test on scores drawn like the pilot's")


def plan_text(plan: QuestionsNeededResult | None, n_questions: int, epochs: int, observed: bool) -> str:
    """The plan in one sentence: the difference planned for (``plan.effect``, and where it is not
    the size observed -- the floor of :data:`MIN_PLANNED_EFFECT`, or an ``effect=`` given -- the
    observed size beside it), questions needed per number of epochs (the simulation's n first
    where it and Miller's closed form differ by more than 10%, with the reason; a pilot whose
    epochs the log's reducer reduced is planned in its reduced scores, "each the max over 3
    epochs"), and what the current design detects. ``observed``: the effect was chosen from the
    observed difference (not given)."""
    if plan is None:
        return "no sample-size plan (see the warnings)"
    t = plan.table
    est = plan.estimates.set_index("quantity")["value"]
    red = (plan.provenance or {}).get("reduction")
    parts, disagree, unreachable = [], False, []
    for k in dict.fromkeys(t["epochs"]):
        rows = t[t["epochs"] == k].set_index("method")["n_questions"]
        cf, sim = rows.get("closed_form"), rows.get("simulation")
        ep = _design(est, int(k))
        if (cf is None or pd.isna(cf)) and run_variance_part(est, int(k)) > 0:
            unreachable.append(ep)
            continue
        if cf is None or pd.isna(cf):
            continue
        if sim is not None and not pd.isna(sim) and abs(float(sim) - float(cf)) > DISAGREE * float(cf):
            disagree = True
            parts.append(f"{int(sim)} questions{_per_question(ep, red, int(k))} by simulation (Miller's closed "
                         f"form: {int(cf)})")
        else:
            sim_txt = "" if sim is None or pd.isna(sim) else f" (simulation: {int(sim)})"
            parts.append(f"{int(cf)} questions{_per_question(ep, red, int(k))}{sim_txt}")
    if unreachable:
        parts.insert(0, f"not reachable with {' or '.join(unreachable)} per system (the between-run variance alone "
                        "keeps the SE too large)")
    if not parts:
        return "no sample-size plan (the pilot's variances are not estimable; see the warnings)"
    simulated = bool(((t["method"] == "simulation") & (t["n_sim"] > 0)).any())
    sims = (f" beside {plan.n_sim} simulations" if simulated else
            "; nothing to simulate: no design above has a number of questions and two runs or more"
            if plan.n_sim and "epochs_per_run" in est.index else "")
    size = _effect_words(plan, observed)
    mde = detectable_now(plan, n_questions, epochs)
    runs_note = " and the between-run variance" if _pilot_run_part(est) > 0 else ""
    why = f" The simulation leads where the two differ by more than 10%: {_why_disagree(plan)}." if disagree else ""
    return (f"to detect a difference of {_points(plan.effect)} points{size} between {plan.systems[0]} and "
            f"{plan.systems[1]} with {100 * plan.target:.0f}% power at alpha {plan.alpha:g}: {'; '.join(parts)} (Miller "
            f"2024 closed form{sims}).{why} With these {n_questions} questions"
            f"{_per_question(_pilot_design(est, epochs), red, epochs)}{',' if red else ''} the smallest difference "
            f"detectable at that "
            f"power is {_points(mde)} points (closed form{runs_note}).")
