"""``mixedeval demo``: the complete analysis of a bundled data set, as tables and an HTML report.

For ``kreutzer_ter`` (the README's main job; Kreutzer, Berger & Riezler 2020, as analysed by
Hagmann 2023, ch. 2): the design of the score table; ``ter ~ system + (1|sentence_id)`` by REML;
the likelihood-ratio test against ``ter ~ 1 + (1|sentence_id)`` (both refitted by ML); F test with
partial eta²; EMMs and Holm-adjusted pairwise contrasts; R² and ICC; simulated-residual
diagnostics; a paired bootstrap of the system means over sentences (replications averaged per
system and sentence first, so every system has one score per sentence); and the variance
components of the annotation study (mode "Marking": sentence, rater, occasion and their two-way
interactions) with phi, G and a D study.

For ``hu2025_records``: the language-disparity analysis of Hu, Vulić & Korhonen (2025) with the
robustness refit.

``mixedeval demo llm`` (:func:`run_llm_demo`): three mock LLMs compared from the bundled Inspect
AI logs (``me.datasets.path("llm_inspect_logs")``, written by ``scripts/make_llm_example.py``)
with ``me.compare_logs(..., metric="match", cluster="cluster")``: the headline difference with
its cluster-robust interval, the table of all pairs per task and pooled, the model-based check,
and the HTML report.

Each step is timed; a step that fails is reported (stderr, JSON ``failures``, and its report
section) and the others still run.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Any, Callable

import pandas as pd

from . import datasets
from ._cli_answer import answer_record, emm_answer, render_answer
from ._console import print_json, print_table
from ._format import fmt_p
from ._report import report
from ._report.answer import answer_of
from ._report.blocks import as_frame
from .data.design import describe_design
from .datasets import DATASETS, _path
from .errors import DataError
from .inference._lmm import lmm
from .inference.compare import compare
from .resampling import bootstrap
from .workflows.compare_logs import compare_logs
from .workflows.language_disparity import language_disparity
from .workflows.variance_components import variance_components

TER_FORMULA = "ter ~ system + (1|sentence_id)"
TER_NULL = "ter ~ 1 + (1|sentence_id)"
ANNOTATION_MODE = "Marking"
D_STUDY_GRID = {"rater": [1, 2, 3, 5, 10], "occasion": [1, 2, 3]}


class _Steps:
    """Runs named steps, timing them and recording failures instead of stopping."""

    def __init__(self, progress: bool, random_state: Any = 123):
        self.progress = progress
        self.random_state = random_state
        self.timings: dict[str, float] = {}
        self.failures: dict[str, str] = {}

    def run(self, name: str, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.progress:
            print(f"mixedeval demo: {name}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the demo reports every step it can
            msg = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            self.failures[name] = msg
            print(f"mixedeval demo: step '{name}' failed: {msg}", file=sys.stderr, flush=True)
            return None
        finally:
            self.timings[name] = round(time.perf_counter() - t0, 3)


def _table_of(obj: Any, attr: str = "table") -> Any:
    return as_frame(obj, attr)


def _ter_analysis(steps: _Steps, n_sim: int, n_resamples: int) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """Run the Kreutzer TER analysis; returns (tables for output, the results for report(), its
    keyword arguments)."""
    # direct imports: ``import mixedeval.lmm`` rebinds ``mixedeval.lmm`` to the module

    df = datasets.load("kreutzer_ter")
    factors = ["system", "sentence_id", "replication"]
    design = steps.run("design", describe_design, df, factors)
    fit = steps.run(f"fit {TER_FORMULA} (REML)", lmm, TER_FORMULA, df, reml=True)
    if fit is None:
        raise DataError(f"the demo model could not be fitted: {steps.failures}")
    null = steps.run(f"fit {TER_NULL} (REML)", lmm, TER_NULL, df, reml=True)
    comparison = steps.run("likelihood-ratio test (ML refits)", compare, null, fit) if null is not None else None
    anova = steps.run("F test with partial eta-squared", fit.anova)
    emm = steps.run("estimated marginal means", fit.emmeans, "system")
    con = steps.run("Holm pairwise contrasts", emm.contrasts, method="pairwise", adjust="holm") if emm else None
    answer = steps.run("the answer: leaderboard, headline, every pair best first", emm_answer, emm) if emm else None
    r2 = steps.run("R2 (Nakagawa-Schielzeth)", fit.r2)
    icc = steps.run("ICC", fit.icc)
    diag = steps.run(f"residual diagnostics ({n_sim} simulations)", fit.diagnose, n_sim=n_sim,
                     random_state=steps.random_state, group="system", check_optimizers=True)
    per_sentence = df.groupby(["system", "sentence_id"], as_index=False, observed=True)["ter"].mean()
    boot = steps.run(f"paired bootstrap over sentences ({n_resamples} resamples)", bootstrap, per_sentence,
                     score="ter", system="system", item="sentence_id", n_resamples=n_resamples,
                     random_state=steps.random_state, higher_is_better=False, progress=steps.progress)
    if answer is not None:
        answer = dataclasses.replace(answer, checks=_ter_checks(emm, boot, comparison))
    ann = datasets.load("kreutzer_annotation")
    ann = ann[ann["mode"] == ANNOTATION_MODE]
    vca = steps.run(f"variance components of the annotation data (mode {ANNOTATION_MODE})", variance_components,
                    ann, score="score", object="sentence", facets=["rater", "occasion"], interactions="all")

    tables: dict[str, Any] = {
        "answer": answer,
        "design": design.factors if design is not None else None,
        "design_relations": design.relations if design is not None else None,
        "fixed_effects": fit.fixed,
        "random_effects": fit.random,
        "likelihood_ratio_test": _table_of(comparison),
        "anova": _table_of(anova),
        "emmeans": _table_of(emm),
        "contrasts": _table_of(con),
        "r2_icc": _r2_icc_table(r2, icc),
        "diagnostics": diag.summary() if diag is not None else None,
        "bootstrap_summary": boot.table if boot is not None else None,
        "bootstrap_pairwise": boot.pairwise() if boot is not None else None,
        "bootstrap_ranks": boot.ranks() if boot is not None else None,
        "variance_components": _table_of(vca),
        "reliability": vca.reliability() if vca is not None else None,
        "d_study": vca.d_study(D_STUDY_GRID) if vca is not None else None,
    }

    results = [fit, anova, comparison, emm, con, r2, icc, diag, boot, vca]
    report_kw = dict(data=df, design_factors=factors, d_study_grid=D_STUDY_GRID,
                     input_file=[str(_path(DATASETS["kreutzer_ter"])), str(_path(DATASETS["kreutzer_annotation"]))],
                     title="mixedeval demo: Kreutzer et al. (2020) TER, ter ~ system + (1|sentence_id)")
    return tables, results, report_kw


TER_REFERENCE = "Baseline"


def _ter_checks(emm: Any, boot: Any, comparison: Any) -> Any:
    """The checks of the TER headline, as the report's answer shows them
    (:func:`mixedeval._report.answer.answer_of`): the likelihood-ratio test of the system effect
    and the paired bootstrap of the same pair, each with its verdict ("agrees" / "differs: why")."""
    others, tests = [boot] if boot is not None else [], [comparison] if comparison is not None else []
    return answer_of(emm, others, tests).checks  # the report's checks of the headline, not printed here


def _print_ter(tables: dict[str, Any], results: list[Any], words: Callable[[str], str]) -> None:
    """The TER demo's text output: the answer first (:func:`mixedeval._cli_answer.render_answer`:
    headline, leaderboard, every pair best first, the checks with their verdicts), then one line
    per further part (the tables are in the report and in --json)."""
    ans = tables.get("answer")
    if ans is not None:
        print(render_answer(ans, words=words))
    fit, anova, comparison, _emm, _con, r2, icc, diag, boot, vca = results
    lines = []
    if comparison is not None:
        r = comparison.table.iloc[-1]
        lines.append(f"likelihood-ratio test of the system effect (ML refits): chi2({r['df']:g}) = {r['chisq']:.1f}, "
                     f"p = {fmt_p(r['p_value'])}")
    if r2 is not None and icc is not None:
        lines.append(f"R2 marginal {r2.r2_marginal:.3g}, conditional {r2.r2_conditional:.3g}; ICC {icc.icc_adjusted:.3g}")
    if diag is not None:
        s = diag.summary()
        flagged = list(s.loc[s["verdict"] == "warning", "name"])
        lines.append("residual diagnostics: " + ("all checks ok" if not flagged else "flagged: " + ", ".join(flagged)))
    if vca is not None:
        rel = vca.reliability()
        vals = ", ".join(f"{c} {v:.2f}" for c, v in zip(rel["coefficient"], rel["value"]))
        lines.append(f"annotation study (mode {ANNOTATION_MODE}): {vals}")
    if lines:
        print("\ndetails:")
        for line in lines:
            print(f"  {line}")


def _r2_icc_table(r2: Any, icc: Any) -> Any:
    rows = []
    for obj, names in ((r2, ("r2_marginal", "r2_conditional")), (icc, ("icc_adjusted", "icc_unadjusted"))):
        for n in names:
            if obj is not None and getattr(obj, n, None) is not None:
                rows.append({"statistic": n, "value": float(getattr(obj, n))})
    return pd.DataFrame(rows, columns=["statistic", "value"]) if rows else None


def _disparity_analysis(steps: _Steps, n_sim: int, n_resamples: int) -> tuple[dict[str, Any], list[Any],
                                                                              dict[str, Any]]:
    """The language-disparity analysis of the Hu et al. records with the robustness refit."""
    df = datasets.load("hu2025_records")
    res = steps.run("language disparity (ML fit)", language_disparity, df, score="score", model="model",
                    language="language", task="task", drop_aggregates=True)
    if res is None:
        raise DataError(f"the disparity model could not be fitted: {steps.failures}")
    rob = steps.run("robustness refit without the 10 largest residuals", res.robustness, k=10)
    tables = {"by_model": res.by_model, "language_potential": res.language_potential,
              "diagnostics": res.diagnostics, "robustness": rob.agreement if rob is not None else None}
    report_kw = dict(data=df, design_factors=["model", "language", "task"],
                     input_file=str(_path(DATASETS["hu2025_records"])),
                     title="mixedeval demo: language disparity (Hu, Vulić & Korhonen 2025)")
    return tables, [res, rob], report_kw


DEMOS: dict[str, Callable[[_Steps, int, int], tuple[dict[str, Any], list[Any], dict[str, Any]]]] = {
    "kreutzer_ter": _ter_analysis,
    "hu2025_records": _disparity_analysis,
}


def run_demo(dataset: str = "kreutzer_ter", out: str = "mixedeval-report.html", n_sim: int = 250,
             n_resamples: int = 2000, random_state: Any = 123, progress: bool = True, as_json: bool = False,
             words: Callable[[str], str] | None = None) -> int:
    """Run the demo analysis of ``dataset``, print its tables (or JSON with ``as_json``; the
    answer first, by the command line's one printer, its sentences through ``words``) and
    write the HTML report to ``out``. ``n_sim`` simulations for the residual diagnostics and
    ``n_resamples`` for the bootstrap, both drawn with ``random_state`` (an int is R's
    ``set.seed`` for the simulations). Returns 0, or 1 when a step failed (the failures are
    printed and shown in the report)."""
    if dataset not in DEMOS:
        raise DataError(f"no demo for data set {dataset!r}; available: {', '.join(DEMOS)}")
    if int(n_sim) < 10:
        raise DataError(f"--n-sim {n_sim}: the residual diagnostics need at least 10 simulations (250 recommended)")
    if int(n_resamples) < 2:
        raise DataError(f"--n-resamples {n_resamples}: the bootstrap needs at least 2 resamples")
    words = words or (lambda text: text)
    steps = _Steps(progress, random_state)
    t0 = time.perf_counter()
    tables, results, report_kw = DEMOS[dataset](steps, int(n_sim), int(n_resamples))
    path = steps.run("HTML report", report, *results, path=out, n_sim=int(n_sim), random_state=random_state,
                     progress=progress, **report_kw)
    total = round(time.perf_counter() - t0, 3)
    if as_json:
        ans = tables.get("answer")
        print_json({"answer": None if ans is None else answer_record(ans, words=words), "dataset": dataset,
                    "tables": {k: v for k, v in tables.items() if v is not None and k != "answer"},
                    "report": str(path) if path is not None else None, "timings": steps.timings,
                    "total_seconds": total, "failures": steps.failures})
    else:
        if dataset == "kreutzer_ter":
            _print_ter(tables, results, words)
        else:
            print(f"mixedeval demo: {dataset}")
            for name, tab in tables.items():
                if tab is not None:
                    print_table(name.replace("_", " "), tab)
        if steps.failures:
            print("\nfailed steps:\n" + json.dumps(steps.failures, indent=2))
        print(f"\nreport: {path}" if path is not None else "\nreport: not written")
        print(f"all tables: --json; total time: {total:.1f} s")
    return 1 if steps.failures else 0


LLM_LOGS = "llm_inspect_logs"
LLM_METRIC = "match"


def run_llm_demo(out: str = "mixedeval-llm-report.html", n_sim: int = 250, n_resamples: int = 2000,
                 random_state: Any = 123, progress: bool = True, as_json: bool = False,
                 words: Callable[[str], str] | None = None) -> int:
    """``mixedeval demo llm``: compare the three mock models of the bundled Inspect AI logs
    (two tasks of 60 questions in clusters of 3, 3 epochs, scorer ``match``) with
    ``me.compare_logs(me.datasets.path("llm_inspect_logs"), metric="match", cluster="cluster")``;
    print the headline and the differences (or JSON with ``as_json``) and write the HTML report
    to ``out``. ``n_resamples`` bootstrap resamples and the report's ``n_sim`` simulations are
    drawn with ``random_state``; ``words``: the command line's translation of its sentences.
    Returns 0, or 1 when a step failed."""
    words = words or (lambda text: text)
    if int(n_resamples) < 2:
        raise DataError(f"--n-resamples {n_resamples}: the bootstrap needs at least 2 resamples")
    steps = _Steps(progress, random_state)
    t0 = time.perf_counter()
    logs = datasets.path(LLM_LOGS)
    res = steps.run("compare the models from their Inspect logs (metric match, clusters)", compare_logs, logs,
                    metric=LLM_METRIC, cluster="cluster", n_resamples=int(n_resamples), random_state=random_state,
                    progress=progress)
    if res is None:
        raise DataError(f"the bundled logs could not be compared: {steps.failures}")
    path = steps.run("HTML report", report, res, path=out, n_sim=int(n_sim), random_state=random_state,
                     progress=progress, input_file=str(logs),
                     title="mixedeval demo: three LLMs compared from their Inspect AI logs")
    total = round(time.perf_counter() - t0, 3)
    answer = res.answer
    tables = {"accuracies": res.accuracies, "means": res.means, "contrasts": res.contrasts, "glrt": res.glrt}
    if as_json:
        print_json({"answer": answer_record(answer, words=words), "dataset": LLM_LOGS,
                    "next_run": words(res.plan_text()), "analysis": res.analysis,
                    "formula": res.formula, "tables": tables, "warnings": [words(str(w)) for w in res.warnings],
                    "report": str(path) if path is not None else None, "timings": steps.timings,
                    "total_seconds": total, "failures": steps.failures})
    else:
        _print_llm(res, answer, logs, words)
        print(f"\nreport: {path}" if path is not None else "\nreport: not written")
        print(f"total time: {total:.1f} s")
    return 1 if steps.failures else 0


def _print_llm(res: Any, answer: Any, logs: Any, words: Callable[[str], str]) -> None:
    """The LLM demo's text output: data, the answer (:func:`mixedeval._cli_answer.render_answer`:
    headline, leaderboard, every pair best first, checks), accuracies, the plan, the model-based
    check and the warnings (the checks' apart)."""
    print(render_answer(answer, words=words))
    s = res.data_summary
    print(f"\ndata: {s['system'].nunique()} models x {s['task'].nunique()} tasks "
          f"({', '.join(sorted(s['task'].unique()))}), {int(s['n_items'].max())} questions each, "
          f"{int(s['n_epochs'].max())} epochs; Inspect AI logs in {logs}")
    acc = res.accuracies
    print_table("accuracy per model (Inspect's stderr and clustered 95% interval)",
                acc[[c for c in ("task", "system", "mean_score", "std_error_cluster", "conf_low_cluster",
                                 "conf_high_cluster") if c in acc.columns]])
    print(f"\nnext run: {words(res.plan_text())}")
    if res.glrt is not None and "p_value" in res.glrt.columns and res.glrt["p_value"].notna().any():
        lrt_p = float(res.glrt["p_value"].dropna().iloc[-1])  # the model's test, not the headline's p_value
        print(f"\nmodel-based check (secondary): {res.analysis}: {res.formula}; "
              f"likelihood-ratio test of the system effect p = {lrt_p:.3g}")
    for w in res.warnings:
        of_check = str(getattr(w, "source", "")).startswith("check:")
        if getattr(w, "kind", None) == "r_message":  # R's notes are notes, as the report lists them
            print(f"note from R{' (a check)' if of_check else ''}: {words(str(getattr(w, 'message', w)))}")
        else:
            print(f"{'check warning' if of_check else 'warning'}: {words(str(w))}")

