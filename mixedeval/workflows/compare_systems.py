"""Algorithm comparison with a linear mixed model on all instances (Hagmann 2023, ch. 2.3).

:func:`compare_systems` keeps every evaluated instance (seed / meta-parameter setting) as its own
rows and pairs the systems through a random intercept per test item:

    full: score ~ system + (1|item)        null: score ~ 1 + (1|item)

* ``glrt``: the omnibus generalized likelihood-ratio test of the system effect
  (:func:`mixedeval.compare`: both models refitted by ML, chi-square with ``k - 1`` df);
* ``emmeans`` / ``contrasts``: estimated marginal means of the systems and all pairwise
  contrasts (:meth:`LMMFit.emmeans` -> ``.contrasts``): ``p_value`` unadjusted, ``p_adj``
  adjusted (Holm by default), ``effect_size`` as :meth:`EMMResult.contrasts` computes it;
* ``table``: one row per analysis (Hagmann's Table 2.2);
* ``averaged``: the same analysis after averaging the instances of each system per item (the
  strategy of Hothorn et al. 2005 that Hagmann's Table 2.2 shows to destroy power): the
  published linear model without the item effect (Eq. 2.10 against 2.11, ``lm``, GLRT), and the
  mixed model with the item intercept on the averaged data, side by side.

Extra random effects (e.g. ``random=["run", "system:run"]``) are added to both models.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..data._formula import parse_formula
from ..data.table import as_pandas
from ..data.validate import ROWS_CHECKED, require_level
from ..engine import _bridge
from ..inference._glmm import glmm
from ..inference._lmm import lmm
from .._answer import Answer, AnswerMixin, check_row, checks_table
from ..inference.compare import compare
from ..inference.rankings import contrast_headline, contrast_pairs, emm_answer
from ..errors import DataError
from ..results import ResultWarning
from ._common import (
    _WorkflowResult,
    check_posthoc_df,
    dedupe_warnings,
    model_formula,
    prepare_frame,
    random_terms,
    system_levels,
    term_columns,
)


@dataclass(frozen=True)
class _Analysis:
    full: Any
    null: Any
    glrt: Any  # CompareResult
    emm: Any  # EMMResult
    contrasts: Any  # ContrastResult

    def warnings(self) -> list[ResultWarning]:
        return [*self.full.warnings, *self.null.warnings, *self.glrt.warnings, *self.emm.warnings,
                *self.contrasts.warnings]


def _system_analysis(frame, score: str, system: str, item: str, extra: Sequence[str], *, levels: Mapping | None,
                     posthoc_df: str, contrast_kw: Mapping[str, Any], level: float, optimizer: str,
                     factors: Sequence[str], pb: Mapping[str, Any] | None = None) -> _Analysis:
    """GLRT of ``system`` (ML refit by :func:`mixedeval.compare`; with ``pb`` -- n_resamples,
    random_state, executor, progress -- also its parametric bootstrap), EMMs and pairwise
    contrasts (``contrast_kw``: ``adjust`` and ``effect_size`` of :meth:`EMMResult.contrasts`)."""
    kw = dict(reml=True, optimizer=optimizer, factors=factors, levels=levels)
    full = lmm(model_formula(score, system, item, extra), frame, **kw)
    null = lmm(model_formula(score, "1", item, extra), frame, **kw)
    glrt = compare(null, full, names=["null", "full"], **(pb or {}))
    emm = full.emmeans(system, df_method=posthoc_df, level=level)
    con = emm.contrasts(method="pairwise", **contrast_kw)
    return _Analysis(full, null, glrt, emm, con)


# ------------------------------------------------------------------- result
@dataclass(frozen=True, repr=False)
class AveragedAnalysis(_WorkflowResult):
    """The run-averaged analysis: one row per (item, system), the mean over instances.

    ``glrt`` (the main table, also ``table``): two likelihood-ratio tests of the system effect
    on the averaged data: ``lm`` (``score ~ system`` against ``score ~ 1``, no item effect:
    Hagmann 2023 Eq. 2.10/2.11, the published p = 0.517 for Kreutzer TER) and ``lmm`` (with the
    item intercept). Columns: analysis, formula, npar, loglik, chisq, df, p_value, residual_sd,
    estimator. ``emmeans`` and ``contrasts`` come from the averaged mixed model.
    """

    glrt: Any
    emmeans: Any
    contrasts: Any
    nobs: int
    f_value: float
    p_value_f: float
    fit: Any = field(default=None, repr=False, compare=False)

    _main_table = "glrt"
    _print_tables = ("glrt", "emmeans", "contrasts")
    _skip_in_dict = ("fit",)
    _title = "Run-averaged analysis (one mean per item and system)"

    @property
    def table(self):
        """The main table: ``glrt``."""
        return self.glrt


@dataclass(frozen=True, repr=False)
class CompareSystemsResult(AnswerMixin, _WorkflowResult):
    """Result of :func:`compare_systems`.

    ``answer`` (:class:`mixedeval._answer.Answer`), with its views ``leaderboard`` (systems best
    first), ``headline`` (best vs runner-up or reference; ``headline_text()``, ``p_value``: the
    unadjusted pairwise contrast of that pair; the omnibus GLRT's is :attr:`glrt_p_value`),
    ``checks`` (other analyses of the question with verdicts), ``direction``, ``differences``
    (every pair best first, signed in the better direction: unadjusted intervals and p-values,
    ``p_adj`` of the contrasts).

    ``table`` (the main table): analysis, formula, nobs, residual_sd, chisq, df, p_value
    (all-instances mixed model, and the averaged analyses when there was anything to average) --
    Hagmann's Table 2.2. ``glrt``: :func:`mixedeval.compare`'s table (null and full model, ML).
    ``emmeans``: system, emmean, std_error, df, conf_low, conf_high. ``contrasts``: the table of
    :meth:`EMMResult.contrasts` (contrast, estimate, std_error, df, the statistic, ``p_value``
    unadjusted, ``p_adj`` adjusted by ``p_adjust``, conf_low, conf_high, effect_size).
    ``averaged``: :class:`AveragedAnalysis` or None (one instance per system and item).
    With ``n_resamples``, ``glrt`` and the all-instances row of ``table`` have ``p_value_pb``
    (pbkrtest's parametric-bootstrap p-value from :func:`mixedeval.compare`).
    """

    table: Any
    glrt: Any
    emmeans: Any
    contrasts: Any
    averaged: AveragedAnalysis | None
    p_adjust: str
    posthoc_df: str
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    answer: Answer
    fit: Any = field(default=None, repr=False, compare=False)
    null_fit: Any = field(default=None, repr=False, compare=False)
    emm_result: Any = field(default=None, repr=False, compare=False)
    contrast_result: Any = field(default=None, repr=False, compare=False)

    _main_table = "table"
    _print_tables = ("leaderboard", "checks", "table", "emmeans", "contrasts")
    _skip_in_dict = ("fit", "null_fit", "emm_result", "contrast_result")
    _title = "System comparison with a linear mixed model (GLRT, EMMs, pairwise contrasts)"
    _answer_priority = 30

    def _scalars(self):
        out = [("headline", self.headline_text())] if self.headline is not None else []
        if self.direction is not None:
            out.append(("direction", self.direction.note))
        return out + [("omnibus GLRT p-value (check)", f"{self.glrt_p_value:.4g}"),
                      ("p-value adjustment", self.p_adjust), ("post-hoc df", self.posthoc_df)]

    @property
    def glrt_p_value(self) -> float:
        """The omnibus GLRT p-value on all instances (a check of the headline)."""
        return float(self.glrt["p_value"].iloc[-1])


# ------------------------------------------------------------------- the one answer
def _answer(emm: Any, contrasts: Any, *, reference: Any, higher_is_better: Any, glrt: Any,
            averaged: AveragedAnalysis | None = None, runs: bool = False, df_note: str | None = None) -> Answer:
    """The one answer (:func:`mixedeval.inference.rankings.emm_answer`): the EMMs best first (rank
    intervals from emmeans' covariance), the headline from the pairwise contrast of the best and
    the runner-up (or ``reference``), every pair best first; and as checks the omnibus GLRT (and
    its parametric bootstrap), and the run-averaged analyses when there are any. ``df_note``
    says why the contrasts' df are asymptotic when they are."""
    ans = emm_answer(emm, higher_is_better=higher_is_better, reference=reference, contrasts=contrasts,
                     df_note=df_note)
    ans = dataclasses.replace(ans, no_headline_text="fewer than two systems: nothing to compare")
    head = ans.headline
    if head is None:
        return ans
    k = len(ans.leaderboard)
    why_omnibus = "; ".join(
        ([] if k == 2 else ["the likelihood-ratio test asks whether any of the systems differ, not this pair"])
        + (["its chi-square reference is asymptotic, which does not see that the run variance rests on few runs "
            "(the headline's contrast has Satterthwaite df)"] if runs else [])) or None
    g = glrt.table
    rows = [check_row("likelihood-ratio test of the system effect (ML refits)", head,
                      p_value=float(g["p_value"].iloc[-1]), why=None)]
    if why_omnibus is not None and rows[0]["verdict"].startswith("differs") \
            and rows[0]["verdict"] != "differs: the opposite sign":
        rows[0] = check_row(rows[0]["check"], head, p_value=rows[0]["p_value"], why=why_omnibus)
    if "p_value_pb" in g.columns:
        rows.append(check_row("parametric bootstrap of the likelihood-ratio test (pbkrtest)", head,
                              p_value=float(g["p_value_pb"].iloc[-1]),
                              why=why_omnibus if k > 2 else None))
    if averaged is not None:
        rows += _averaged_checks(averaged, emm, head, runs=runs)
    return dataclasses.replace(ans, checks=checks_table(rows))


def _averaged_checks(averaged: AveragedAnalysis, emm: Any, head: Any, runs: bool = False) -> list[dict[str, Any]]:
    """The run-averaged analyses as checks: the averaged mixed model's contrast of the headline
    pair, and the averaged linear model's omnibus test (Hagmann 2023, Table 2.2)."""
    labels = [str(x) for x in averaged.emmeans.iloc[:, 0]]
    why = ("the run-averaged data have no run variance: each system's run shifts stay in its mean, so these "
           "analyses are too sure when runs vary (the headline's model estimates the run variance)" if runs else
           "averaging the runs of each system per item discards their replication (Hagmann 2023, Table 2.2)")
    out = []
    if head.better in labels and head.other in labels and len(averaged.contrasts) == len(labels) * (len(labels) - 1) // 2:
        pairs = contrast_pairs(averaged.contrasts, labels, head.level)
        h2 = contrast_headline(pairs, head.better, head.other, head.direction, level=head.level, method="averaged")
        adv = h2.estimate if h2.better == head.better else -h2.estimate
        lo, hi = (h2.conf_low, h2.conf_high) if h2.better == head.better else (-h2.conf_high, -h2.conf_low)
        r = check_row("run-averaged data, mixed model (item intercept): the same pair", head, estimate=adv,
                      conf_low=lo, conf_high=hi, p_value=h2.p_value)
        if r["verdict"].startswith("differs") and r["verdict"] != "differs: the opposite sign":
            r = check_row(r["check"], head, estimate=adv, conf_low=lo, conf_high=hi, p_value=h2.p_value, why=why)
        out.append(r)
    p_lm = float(averaged.glrt["p_value"].iloc[0])
    r = check_row("run-averaged data, linear model without the item effect (Hagmann Eq. 2.10)", head, p_value=p_lm)
    if r["verdict"].startswith("differs"):
        r = check_row(r["check"], head, p_value=p_lm, why=why + "; without the item effect the systems are not paired")
    out.append(r)
    return out


def _averaged(frame, score: str, system: str, item: str, levels, posthoc_df, contrast_kw, level, optimizer):
    avg = frame.groupby([item, system], observed=True, sort=False)[score].mean().reset_index()
    avg.attrs[ROWS_CHECKED] = True  # one row per (item, system): equal means are not copies
    an = _system_analysis(avg, score, system, item, (), levels=levels, posthoc_df=posthoc_df,
                          contrast_kw=contrast_kw, level=level, optimizer=optimizer, factors=[system, item])
    cols = [score, system]
    res = _bridge.lm_glrt(null_formula=parse_formula(f"`{score}` ~ 1", cols).r_formula,
                          full_formula=parse_formula(f"`{score}` ~ `{system}`", cols).r_formula,
                          data=an.full.data[[score, system]])
    v = res.value
    lm_tab = v["table"]
    g = an.glrt.table
    rows = [
        {"analysis": "averaged, linear model (no item effect)", "formula": f"{score} ~ {system}",
         "npar": int(lm_tab["npar"].iloc[1]), "loglik": float(lm_tab["loglik"].iloc[1]),
         "chisq": float(lm_tab["chisq"].iloc[1]), "df": float(lm_tab["df"].iloc[1]),
         "p_value": float(lm_tab["p_value"].iloc[1]), "residual_sd": float(np.atleast_1d(v["sigma"])[1]),
         "estimator": "ML"},
        {"analysis": "averaged, mixed model (item intercept)", "formula": an.full.formula,
         "npar": int(g["npar"].iloc[1]), "loglik": float(g["loglik"].iloc[1]), "chisq": float(g["chisq"].iloc[1]),
         "df": float(g["df"].iloc[1]), "p_value": float(g["p_value"].iloc[1]), "residual_sd": an.full.sigma,
         "estimator": str(g["estimator"].iloc[1])},
    ]
    out = AveragedAnalysis(glrt=pd.DataFrame(rows), emmeans=an.emm.table, contrasts=an.contrasts.table,
                           nobs=len(avg), f_value=float(v["f_value"]), p_value_f=float(v["p_value_f"]), fit=an.full)
    return out, an.warnings()


def compare_systems(
    data: Any,
    score: str,
    system: str,
    item: str,
    reference: Any = None,
    posthoc_df: str | None = None,
    adjust: str = "holm",
    *,
    random: str | Sequence[str] | None = None,
    run: str | None = None,
    average: bool = True,
    level: float = 0.95,
    effect_size: str = "total",
    optimizer: str | None = None,
    family: str = "gaussian",
    higher_is_better: bool | None = None,
    n_resamples: int | None = None,
    random_state: Any = None,
    executor: Any = None,
    progress: bool = True,
) -> CompareSystemsResult:
    """Compare systems on all instances with ``score ~ system + (1|item)`` (Hagmann 2023, ch. 2).

    Parameters
    ----------
    data : score table, one row per (system, instance, item); never modified.
    score, system, item : column names (score numeric; item = test input such as a sentence).
    reference : reference level of ``system`` (first level otherwise).
    posthoc_df : df of the EMMs and contrasts: ``"asymptotic"`` (z; Wald tests as in the
        thesis' large-sample setting; the default without ``run``), ``"satterthwaite"`` (the
        default with ``run``: the run variance rests on few runs) or ``"kenward-roger"``.
    adjust : p-value adjustment of the pairwise contrasts (emmeans names; Holm by default).
    random : extra grouping terms added to both models, e.g. ``["run", "system:run"]``.
    run : the column of runs (training seeds, separate evaluations) of each system: adds the
        run-within-system intercept ``(1|system:run)`` to both models, so that the seed-to-seed
        variance enters the comparison (as the headline of :func:`mixedeval.compare_logs` adds
        it). Without it, several rows per system and item are analysed as independent
        replications grouped by the item (Hagmann 2023), and a warning says so: when they are
        runs whose shifts are shared by all items, that analysis is too sure.
    average : also run the run-averaged analysis (when there is more than one row per
        system and item).
    level : confidence level of EMMs and contrasts.
    effect_size : standardizer of the contrasts' ``effect_size``: ``"total"`` (the SD of all
        variance components) or ``"residual"`` (the residual SD, Hagmann's ``estimate / sigma``);
        see :meth:`EMMResult.contrasts`.
    optimizer : lme4 optimizer (default nloptwrap for the LMM; for a GLMM, glmer's own default: bobyqa then Nelder-Mead).
    family : ``"gaussian"`` (the linear mixed model) or a GLMM family of :func:`mixedeval.glmm`:
        ``"binomial"`` for 0/1 item outcomes (an LLM right or wrong on each item, over runs) fits
        ``score ~ system + (1|item)`` by ``lme4::glmer``; the GLRT is lme4's likelihood-ratio test
        (GLMMs are ML fits), the EMMs are accuracies (probabilities, ``type="response"``) with
        their intervals, and the pairwise contrasts are odds ratios (``estimate_label``), Holm by
        default. ``posthoc_df``, ``effect_size`` and the averaged analysis apply to the LMM only.
    higher_is_better : which way the score is better; None (default): from the score's name
        (``ter``, ``wer``, ``error``, ``loss``: lower; ``accuracy``, ``bleu``, ``chrf``: higher;
        an unknown name: higher, said in ``direction.note``). The leaderboard, ranks, letters and
        headline follow it.
    n_resamples, random_state, executor, progress : with ``n_resamples``, the omnibus GLRT also
        gets ``p_value_pb``, the parametric-bootstrap p-value of pbkrtest's ``PBmodcomp`` computed
        by :func:`mixedeval.compare` on the same two fits (an int ``random_state`` is R's
        ``set.seed``; ``executor`` runs the refits on workers; ``progress`` shows their bar).

    Returns a :class:`CompareSystemsResult`: the one answer first -- ``leaderboard`` (the
    systems best first: EMM, interval, simultaneous rank interval, letters), ``headline`` (the
    best system against the runner-up, or against ``reference`` when given: their pairwise
    contrast, unadjusted, signed so the better system's advantage is positive, its text in points
    for scores in [0, 1] and TER-like rates (``+0.27 points`` for a TER difference of 0.0027;
    :func:`mixedeval._answer.unit_scale`); ``headline_text()``, ``p_value``), ``checks`` (the omnibus GLRT, its parametric bootstrap and
    the run-averaged analyses of the same question, each with its verdict), ``direction`` --
    then ``table``, ``glrt``, ``emmeans``, ``contrasts``, ``averaged``, ``warnings``, ``fit``.
    """
    df_note = None if posthoc_df is not None else "asymptotic, compare_systems' default without run="
    posthoc_df = check_posthoc_df(posthoc_df if posthoc_df is not None else
                                  "satterthwaite" if run is not None else "asymptotic")
    level = require_level(level)
    random = _with_run(random, system, run)
    pb = None if n_resamples is None else {"n_resamples": n_resamples, "random_state": random_state,
                                           "executor": executor, "progress": progress}
    if family != "gaussian":
        return _compare_glmm_systems(data, score, system, item, reference, adjust, random=random, level=level,
                                     optimizer=optimizer, family=family, pb=pb, higher_is_better=higher_is_better)
    optimizer = optimizer or "nloptwrap"
    df = as_pandas(data)
    extra = random_terms(random, [str(c) for c in df.columns])
    factors = list(dict.fromkeys([system, item, *term_columns(extra)]))
    frame, warnings = prepare_frame(df, score, factors)
    levels = system_levels(frame, system, reference)
    contrast_kw = {"adjust": adjust, "effect_size": effect_size}
    an = _system_analysis(frame, score, system, item, extra, levels=levels, posthoc_df=posthoc_df,
                          contrast_kw=contrast_kw, level=level, optimizer=optimizer, factors=factors, pb=pb)
    warnings += an.warnings()
    g = an.glrt.table
    rows = [{"analysis": "all instances, mixed model (item intercept)", "formula": an.full.formula, "nobs": an.full.nobs,
             "residual_sd": an.full.sigma, "chisq": float(g["chisq"].iloc[1]), "df": float(g["df"].iloc[1]),
             "p_value": float(g["p_value"].iloc[1]), **_pb_cell(g)}]
    averaged = None
    per_cell = frame.groupby([item, system], observed=True).size()
    if per_cell.max() > 1 and not extra:
        warnings.append(_replications_warning(frame, system, item))
    if average and per_cell.max() > 1:
        averaged, aw = _averaged(frame, score, system, item, levels, posthoc_df, contrast_kw, level, optimizer)
        warnings += [w for w in aw if w.kind not in ("refit_ml", "ci_adjust")]
        for r in averaged.glrt.to_dict(orient="records"):
            rows.append({"analysis": r["analysis"], "formula": r["formula"], "nobs": averaged.nobs,
                         "residual_sd": r["residual_sd"], "chisq": r["chisq"], "df": r["df"], "p_value": r["p_value"]})
        warnings.append(ResultWarning(
            "averaging",
            f"averaging the instances of each system per {item!r} discards the replication and the pairing the item "
            f"intercept provides: p = {averaged.glrt['p_value'].iloc[0]:.3g} (averaged, linear model) and "
            f"{averaged.glrt['p_value'].iloc[1]:.3g} (averaged, mixed model) against {rows[0]['p_value']:.3g} on all "
            "instances" + (" with the run variance" if run is not None else
                           " (independent replications within the item; see 'replications')"),
        ))
    prov = dict(an.full.provenance)
    prov.update({"workflow": "compare_systems", "posthoc_df": posthoc_df, "adjust": adjust, "level": float(level),
                 "effect_size": effect_size,
                 "glrt": "lme4 anova (ML refit)", "contrasts": "emmeans::contrast pairwise", **_pb_provenance(an.glrt)})
    answer = _answer(an.emm, an.contrasts.table, reference=reference, higher_is_better=higher_is_better,
                     glrt=an.glrt, averaged=averaged, runs=run is not None, df_note=df_note)
    prov["direction"] = answer.direction.note
    return CompareSystemsResult(
        table=pd.DataFrame(rows), glrt=g, emmeans=an.emm.table, contrasts=an.contrasts.table, averaged=averaged,
        p_adjust=an.contrasts.p_adjust, posthoc_df=posthoc_df, warnings=dedupe_warnings(warnings), provenance=prov,
        fit=an.full, null_fit=an.null, emm_result=an.emm, contrast_result=an.contrasts, answer=answer,
    )


def _with_run(random: str | Sequence[str] | None, system: str, run: str | None) -> list[str] | None:
    """``random`` plus the run-within-system term ``system:run`` of ``run=`` (once)."""
    if run is None:
        return None if random is None else ([random] if isinstance(random, str) else list(random))
    if not isinstance(run, str) or not run:
        raise DataError(f"run must name the column of runs (training seeds) of each system, got {run!r}")
    terms = [] if random is None else ([random] if isinstance(random, str) else list(random))
    term = f"{system}:{run}"
    return terms if term in terms else [*terms, term]


def _replications_warning(frame: pd.DataFrame, system: str, item: str) -> ResultWarning:
    """Several rows per system and item without ``run=``: what they are taken for."""
    return ResultWarning("replications", f"several rows per {system} and {item} are analysed as independent "
                         f"replications grouped by {item!r} (Hagmann 2023); if they are runs (training seeds, "
                         f"separate evaluations) whose shifts are shared by all items, pass run=<the runs' column> "
                         "so that the run variance enters the comparison (without it the p-values can be far too "
                         "small)")


def _pb_cell(glrt_table) -> dict[str, float]:
    """``{"p_value_pb": ...}`` of the full model's row when the GLRT has a parametric bootstrap."""
    return {"p_value_pb": float(glrt_table["p_value_pb"].iloc[1])} if "p_value_pb" in glrt_table.columns else {}


def _pb_provenance(glrt: Any) -> dict[str, Any]:
    """The parametric bootstrap's settings from :func:`mixedeval.compare`'s provenance (if any)."""
    keys = ("n_resamples", "random_state", "pb_function")
    return {f"glrt_{k}": glrt.provenance[k] for k in keys if k in glrt.provenance}


def _compare_glmm_systems(data: Any, score: str, system: str, item: str, reference: Any, adjust: str, *,
                          random: Any, level: float, optimizer: str, family: str,
                          pb: Mapping[str, Any] | None = None, higher_is_better: Any = None) -> CompareSystemsResult:
    """:func:`compare_systems` with a GLMM (``family``): GLRT, response-scale EMMs and ratio contrasts."""
    df = as_pandas(data)
    extra = random_terms(random, [str(c) for c in df.columns])
    factors = list(dict.fromkeys([system, item, *term_columns(extra)]))
    frame, warnings = prepare_frame(df, score, factors)
    levels = system_levels(frame, system, reference)
    kw = dict(family=family, optimizer=optimizer, factors=factors, levels=levels)
    full = glmm(model_formula(score, system, item, extra), frame, **kw)
    null = glmm(model_formula(score, "1", item, extra), frame, **kw)
    glrt = compare(null, full, names=["null", "full"], **(pb or {}))
    emm = full.emmeans(system, level=level)
    con = emm.contrasts(method="pairwise", adjust=adjust)
    warnings += [*full.warnings, *null.warnings, *glrt.warnings, *emm.warnings, *con.warnings]
    g = glrt.table
    rows = [{"analysis": f"all instances, {family} GLMM (item intercept)", "formula": full.formula,
             "nobs": full.nobs, "residual_sd": np.nan, "chisq": float(g["chisq"].iloc[1]), "df": float(g["df"].iloc[1]),
             "p_value": float(g["p_value"].iloc[1]), **_pb_cell(g)}]
    prov = dict(full.provenance)
    prov.update({"workflow": "compare_systems", "family": family, "posthoc_df": "asymptotic", "adjust": adjust,
                 "level": float(level), "glrt": "lme4 anova (ML)", "contrasts": f"emmeans::contrast pairwise "
                 f"({con.estimate_label})", **_pb_provenance(glrt)})
    diff = emm.contrasts(method="pairwise", adjust="none", scale="difference") if len(emm.table) > 1 else None
    answer = _answer(emm, None if diff is None else diff.table, reference=reference,
                     higher_is_better=higher_is_better, glrt=glrt)
    prov["direction"] = answer.direction.note
    return CompareSystemsResult(
        table=pd.DataFrame(rows), glrt=g, emmeans=emm.table, contrasts=con.table, averaged=None,
        p_adjust=con.p_adjust, posthoc_df="asymptotic", warnings=dedupe_warnings(warnings), provenance=prov,
        fit=full, null_fit=null, emm_result=emm, contrast_result=con, answer=answer,
    )


__all__ = ["AveragedAnalysis", "CompareSystemsResult", "compare_systems"]
