"""LLM judges with a few human labels: judge-corrected means and differences (prediction-powered
inference), the judge's agreement with people and its bias by system, and the labelling budget.

* :func:`judge_corrected` -- per system the PPI / PPI++ / Rogan-Gladen corrected mean, per pair
  of systems the corrected paired difference on their shared items, the best-first leaderboard
  and the headline; the human-only (classical) and judge-only estimates beside them.
* :func:`judge_agreement` -- Cohen's kappa (weighted too), Krippendorff's alpha, the confusion
  matrix, correlations, and the judge's bias by system (judge - people) with a test.
* :func:`labels_needed` -- how many human labels (and judge calls) for a target interval width
  or power, from a pilot.

The numerics are in :mod:`mixedeval.workflows._judges_core` (see its docstring for the
formulas); they equal ppi-python's ``ppi_mean_ci`` / ``ppi_mean_pointestimate`` on independent
designs and are cluster-robust on the designs evaluations have (items shared across systems,
epochs, clusters of items).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import _answer
from ..data.validate import require_level
from ..errors import DataError
from ..results import ResultWarning
from . import _judges_agree, _judges_budget
from ._common import _WorkflowResult, dedupe_warnings
from ._judges_core import METHODS
from ._judges_prep import Prepared, build_units, canonical_rows, check_labels
from ._judges_tables import METHOD_LABEL, answer, best_first, pairwise_rows, system_rows, vcov


@dataclass(frozen=True, repr=False)
class JudgeCorrected(_answer.AnswerMixin, _WorkflowResult):
    """Judge-corrected estimates (:func:`judge_corrected`).

    table : per system: system, estimate, std_error, df, conf_low, conf_high (the corrected mean),
        n_items, n_labels (items with a human label), n_eff_labels (the human labels a human-only
        estimate would need for the same interval: ``n_labels * (classical_std_error /
        std_error)^2``), lam (PPI++'s power-tuning weight; 1 for PPI; NaN for Rogan-Gladen or
        several judges, see ``weights``), classical_* (people's labels only), judge_* (the
        judge's scores only, uncorrected); for Rogan-Gladen sensitivity and specificity.
    pairwise : per pair of systems on their shared items, best first (system_a above system_b on
        the leaderboard): system_a, system_b, estimate (system_a's advantage in the better
        direction: a - b when higher is better, b - a when lower is better), std_error, df,
        conf_low, conf_high, p_value, p_adj, n_items, n_labels, n_eff_labels, classical_* and
        judge_* (signed the same way, with their p-values).
    answer : the one answer (:class:`mixedeval._answer.Answer`; views ``leaderboard``,
        ``headline``, ``checks``, ``direction``, ``differences``, ``p_value``): best first by the
        corrected means; the headline is the corrected paired difference of the best system and
        the runner-up (or ``reference``); the checks are the human-only and the judge-only
        differences of the same pair.
    weights : per system and judge, PPI++'s weight of the judge.
    """

    table: pd.DataFrame
    pairwise: pd.DataFrame
    answer: _answer.Answer
    weights: pd.DataFrame
    method: str
    level: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    _prepared: Any = field(default=None, repr=False, compare=False)

    _print_tables = ("leaderboard", "table", "pairwise", "checks")
    _skip_in_dict = ("_prepared",)
    _title = "Judge-corrected estimates"
    _answer_priority = 35

    def _scalars(self):
        h = self.headline_text()
        return [("method", METHOD_LABEL[self.method]), ("headline", h), ("direction", self.direction.note)]

    def agreement(self, *, scale: str = "auto", level: float | None = None, n_resamples: int = 1000,
                  random_state: Any = None) -> Any:
        """The judge's agreement with the people on the labelled rows and its bias by system
        (:func:`judge_agreement` on this result's data)."""
        return _judges_agree.agreement_of(self._prepared, scale=scale, level=self.level if level is None else level,
                                          n_resamples=n_resamples, random_state=random_state)

    def labels_needed(self, *, width: float | None = None, power: float | None = None, delta: float | None = None,
                      cost_ratio: float | None = None, alpha: float | None = None) -> Any:
        """How many human labels the next round needs (:func:`labels_needed` with this result as the pilot)."""
        return labels_needed(self, width=width, power=power, delta=delta, cost_ratio=cost_ratio, alpha=alpha)


def _check_args(method: Any, level: Any, adjust: Any) -> tuple[str, float]:
    m = str(method).lower().replace("_", "-") if isinstance(method, str) else method
    m = {"ppi+": "ppi++", "ppipp": "ppi++", "rg": "rogan-gladen", "roganGladen": "rogan-gladen"}.get(m, m)
    if m not in METHODS:
        raise DataError(f"method must be one of {list(METHODS)}, not {method!r}")
    if not isinstance(adjust, str):
        raise DataError(f"adjust must name a p-value adjustment (e.g. 'holm'), not {adjust!r}")
    return m, require_level(level)


def _warnings(p: Prepared, table: pd.DataFrame, method: str) -> list[ResultWarning]:
    out = []
    few = table.loc[table["n_labels"] < 30, "system"].tolist()
    if few:
        out.append(ResultWarning("few_labels", f"system(s) {few[:5]} have fewer than 30 human labels: the corrected "
                                 "intervals are large-sample (normal / t) intervals and may undercover; label more"))
    frac = table["n_labels"] / table["n_items"]
    if len(frac) > 1 and frac.max() > 4 * max(frac.min(), 1e-12):
        out.append(ResultWarning("uneven_labels", "the share of labelled items differs more than fourfold between "
                                 f"systems ({frac.min():.1%} to {frac.max():.1%}); the estimates stay valid when each "
                                 "system's labelled items are a random sample of its items"))
    low_df = table.loc[~(table["df"] >= 5), "system"].tolist()
    if low_df:
        out.append(ResultWarning("few_clusters", f"system(s) {low_df[:5]} have their labels in so few clusters (or so "
                                 "unevenly) that the interval has under 5 degrees of freedom (or none): label items "
                                 "from more clusters"))
    if method == "rogan-gladen":
        d = table["sensitivity"] + table["specificity"] - 1
        if (d < 0.2).any():
            out.append(ResultWarning("weak_judge", "sensitivity + specificity - 1 is below 0.2 for some system: the "
                                     "Rogan-Gladen correction divides by it and its interval is wide and unstable"))
    return out


def judge_corrected(data: Any, judge_score: str = "judge_score", human_score: str = "human_score", *,
                    system: str = "system", item: str = "item", epoch: str | None = None, judge: str | None = None,
                    cluster: str | None = None, method: str = "ppi++", level: float = 0.95, adjust: str = "holm",
                    higher_is_better: bool | None = None, reference: Any = None,
                    random_state: Any = None) -> JudgeCorrected:
    """Judge-corrected means per system and paired differences, with valid intervals.

    Every row is an answer scored by the judge (``judge_score``); a subset was also scored by
    people (``human_score``; missing elsewhere). The labelled answers must be a random sample of
    each system's answers (the estimate is then unbiased whatever the judge's bias).

    Methods (:mod:`mixedeval.workflows._judges_core` has the formulas):

    * ``"ppi++"`` (default): prediction-powered inference with the power-tuned weight
      (Angelopoulos, Duchi & Zrnic 2024, arXiv:2311.01453); never wider than the human-only
      interval in large samples; with several judges (``judge=``) one weight per judge;
    * ``"ppi"``: weight 1 (Angelopoulos et al. 2023, *Science* 382:669);
    * ``"rogan-gladen"``: a 0/1 judge's positive rate corrected by its sensitivity and
      specificity on each system's labelled answers (Rogan & Gladen 1978), delta-method interval.

    Design: epochs (``epoch=``) are averaged within the item; the systems' answers to one item
    are paired (the differences' variance is clustered by item); ``cluster=`` (a column
    constant within items: a source document, a prompt template) makes every variance
    cluster-robust (CR1, Student's t with clusters - 1 df). On independent units the numbers are
    ppi-python's ``ppi_mean_ci`` / ``ppi_mean_pointestimate`` (normal quantiles).

    Parameters
    ----------
    data : a table (pandas, polars, pyarrow, a path) with the columns named below.
    judge_score, human_score : the judge's score and the people's score (NaN where unlabelled).
    system, item, epoch, judge, cluster : the table's columns of those roles (``judge`` when
        several judges scored each answer).
    method : ``"ppi++"``, ``"ppi"`` or ``"rogan-gladen"``.
    level : confidence level; adjust : p-value adjustment over the pairs (Holm).
    higher_is_better, reference : the direction of the score and the headline's reference system.
    random_state : seeds the simulation of the leaderboard's rank intervals.

    Returns a :class:`JudgeCorrected` (``.leaderboard``, ``.headline_text()``, ``.p_value``,
    ``.table``, ``.pairwise``, ``.checks``, ``.agreement()``, ``.labels_needed()``).
    """
    method, level = _check_args(method, level, adjust)
    rows = canonical_rows(data, judge_score, human_score, system, item, epoch, judge, cluster)
    p = build_units(rows)
    check_labels(p, method)
    table, ests = system_rows(p.units, p.systems, method, level)
    pw = pairwise_rows(p.units, p.systems, method, level, adjust)
    d = _answer.direction(human_score, higher_is_better)
    ans = answer(table, pw, vcov(ests, table), method, d, level, reference, random_state)
    pw = best_first(pw, list(ans.leaderboard["name"]), d.higher_is_better)
    weights = pd.DataFrame([{"system": s, "judge": j, "lam": float(e.lam[k]) if k < len(e.lam) else np.nan}
                            for s, e in zip(p.systems, ests) for k, j in enumerate(p.judges)])
    prov = {"workflow": "judge_corrected", "method": METHOD_LABEL[method], "level": level, "adjust": adjust,
            "epochs": f"averaged within the item (up to {p.n_epochs})" if p.n_epochs > 1 else "one per item",
            "cluster": (f"{cluster} ({len(p.clusters)} clusters; CR1, t with clusters - 1 df)" if cluster else
                        "items (paired differences; per-system means on independent items)"),
            "judges": p.judges, "n_labels": int(p.units.labelled.sum()), "n_items": len(p.items),
            "human_score": human_score, "judge_score": judge_score, "random_state": random_state
            if isinstance(random_state, (int, type(None))) else type(random_state).__name__}
    return JudgeCorrected(table=table, pairwise=pw, answer=ans, weights=weights, method=method, level=level,
                          warnings=dedupe_warnings(_warnings(p, table, method)), provenance=prov, _prepared=p)


def judge_agreement(data: Any, judge_score: str = "judge_score", human_score: str = "human_score", *,
                    system: str = "system", item: str = "item", epoch: str | None = None, judge: str | None = None,
                    cluster: str | None = None, scale: str = "auto", level: float = 0.95, n_resamples: int = 1000,
                    random_state: Any = None) -> Any:
    """How well the judge agrees with people, and whether it favours some systems.

    On the rows people labelled: Cohen's kappa (and linearly / quadratically weighted kappa for
    ordered categories) with the large-sample interval of Fleiss, Cohen & Everitt (1969) (for kappa
    as R's ``psych::cohen.kappa`` computes it, for weighted kappas as ``vcd::Kappa`` does: psych's
    weighted-kappa intervals differ by up to about 0.005); Krippendorff's alpha (:func:`mixedeval.krippendorff_alpha`)
    with an item-cluster bootstrap interval; the confusion matrix; Pearson's correlation (Fisher
    z interval) and Spearman's for graded scores. Bias by system: per system the mean of
    judge - human on its labelled answers with a cluster-robust interval, and a Wald test that the
    bias is the same for every system (so a judge favouring its own model family is reported, not
    averaged away).

    ``scale``: ``"binary"``, ``"ordinal"`` (integer grades), ``"interval"`` (continuous) or
    ``"auto"`` (from the values). With ``judge=``, one block of rows per judge.

    Returns a :class:`~mixedeval.workflows._judges_agree.JudgeAgreement` (``.table``, ``.confusion``,
    ``.bias``, ``.bias_test``).
    """
    level = require_level(level)
    rows = canonical_rows(data, judge_score, human_score, system, item, epoch, judge, cluster)
    return _judges_agree.agreement_of(build_units(rows), scale=scale, level=level, n_resamples=n_resamples,
                                      random_state=random_state)


def labels_needed(pilot: Any, *, width: float | None = None, power: float | None = None, delta: float | None = None,
                  cost_ratio: float | None = None, alpha: float | None = None, judge_score: str = "judge_score",
                  human_score: str = "human_score", system: str = "system", item: str = "item",
                  epoch: str | None = None, judge: str | None = None, cluster: str | None = None,
                  method: str = "ppi++") -> Any:
    """How many human labels (and judge-scored items) the next round needs, from a pilot.

    ``pilot`` is a :class:`JudgeCorrected` or a table :func:`judge_corrected` accepts. The
    target is ``width`` (the full width of the corrected interval of the
    headline difference) or ``power`` to detect a difference ``delta`` (default: the pilot's
    headline difference) at ``alpha`` (default 1 - the pilot's level). Without ``cost_ratio``
    the number of judge-scored items stays the pilot's and the answer is the human labels;
    with ``cost_ratio`` (cost of one human label / cost of one judge call) both are chosen to
    minimize the cost (ppi-python's ``ppi_power`` rule).

    The plan uses the variance the interval will use (:mod:`mixedeval.workflows._judges_budget`):
    the cluster-robust PPI++ variance -- within clusters ppi-python's model (a label part ``~ 1/n``
    reduced by the judge's correlation), between clusters the part of the pilot's variance that
    more labels in the same clusters cannot remove -- with the CR1 factor and Student's t with the
    degrees of freedom of the planned design, as :func:`judge_corrected` computes them. On
    independent items it is ppi-python's ``ppi_mean_power`` for that target variance. Validated by
    simulation (benchmarks/calibration_label_budget.py). Returns a
    :class:`~mixedeval.workflows._judges_budget.LabelsNeeded`.
    """
    if not isinstance(pilot, JudgeCorrected):
        pilot = judge_corrected(pilot, judge_score, human_score, system=system, item=item, epoch=epoch, judge=judge,
                                cluster=cluster, method=method)
    if pilot.method == "rogan-gladen":
        raise DataError("labels_needed plans PPI / PPI++ analyses; run the pilot with method='ppi++'")
    return _judges_budget.plan(pilot, width=width, power=power, delta=delta, cost_ratio=cost_ratio, alpha=alpha)


__all__ = ["JudgeCorrected", "judge_agreement", "judge_corrected", "labels_needed"]
