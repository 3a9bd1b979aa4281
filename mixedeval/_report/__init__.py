"""Self-contained HTML report of an evaluation analysis.

:func:`report` takes result objects and writes one HTML file (figures embedded as ``data:``
URIs, styles inline, no scripts, nothing fetched from the network). The page opens with the
answer (:mod:`.answer`: headline, leaderboard, differences from the best, checks). Each result is shown in the
section of its type (:mod:`mixedeval.report.dispatch`): one fitted model with its F tests,
likelihood-ratio tests, EMMs, contrasts, R², ICC and simulated-residual diagnostics (the parts
not given are computed), then one section per resampling or workflow result, closed by a
provenance block (versions, random states, SHA-256 of the inputs). Rendering uses a Jinja2
template (``templates/report.html.j2``, autoescaped) and matplotlib.
"""
from __future__ import annotations

import datetime as _dt
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from .. import __version__
from ..data.table import as_pandas
from .compute import compute_missing as _compute, given_only
from .dispatch import dispatch, section_titles
from .sections import FIRST, LAST, MODEL_SECTIONS, MODEL_TITLES, Context, build, guarded_build, response_type_warnings
from .answer import answer_of, answering, build_answer, candidates, model_is_check, secondary_warnings
from .truth import Entry, Source, item_sources, model_sources, review

__all__ = ["report", "render_html", "SECTION_TITLES"]

_STATUS_TEXT = {"ok": "ok", "differs": "checks differ", "warning": "warning", "not_available": "not available",
                "error": "error"}


#: the answer comes first; the warnings of the checks follow the result sections
ANSWER_TITLES = {"answer": "The answer"}
CHECK_TITLES = {"check_warnings": "Warnings of the checks"}


def _section_titles() -> dict[str, str]:
    return {**ANSWER_TITLES, **FIRST, **MODEL_TITLES, **section_titles(), **CHECK_TITLES, **LAST}


def __getattr__(name: str) -> Any:
    if name == "SECTION_TITLES":  # section id -> heading, in report order (imports the result types)
        return _section_titles()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _template():
    env = Environment(loader=FileSystemLoader(str(Path(__file__).resolve().parent / "templates")),
                      autoescape=True, undefined=StrictUndefined, trim_blocks=False, lstrip_blocks=False)
    return env.get_template("report.html.j2")


def render_html(sections: list[Any], title: str, read_first: list[Entry] | None = None) -> str:
    """The report page for already built sections, opened by the "Read this first" box of the
    severe warnings (:func:`mixedeval._report.truth.review`) when there are any."""
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return _template().render(title=title, sections=sections, version=__version__, generated=now,
                              status_text=_STATUS_TEXT, read_first=list(read_first or ()))


def report(
    *results: Any,
    path: str | os.PathLike = "mixedeval-report.html",
    title: str | None = None,
    data: Any = None,
    design_factors: Any = None,
    d_study_grid: Mapping[str, Any] | None = None,
    extra_tables: Mapping[str, Any] | None = None,
    input_file: str | os.PathLike | list | None = None,
    compute_missing: bool = True,
    n_sim: int = 250,
    random_state: Any = 123,
    progress: bool = True,
) -> Path:
    """Write a self-contained HTML report of ``results`` and return its path.

    Parameters
    ----------
    *results : result objects (or lists of them), each shown in the section of its type:
        one :class:`~mixedeval.LMMFit` and its ``AnovaResult``, ``CompareResult`` (several
        allowed), ``EMMResult``, ``ContrastResult``, ``R2Result``, ``ICCResult`` and
        ``Diagnostics`` go to the model sections; every resampling result (``BootstrapResult``,
        ``PairedTestResult``, ``VarianceDecomposition``, ``LeaderboardResult``,
        ``RunIntervalsResult``, ``PooledRunBootstrapResult``) and workflow result
        (``CompareSystemsResult``, ``ConditionalCompareResult``, ``VCAResult``,
        ``MetaParameterImportance``, ``MetaParameterAssessment``, ``ReproducibilityResult``,
        ``KrippendorffResult``, ``LanguageDisparityResult``, ``PotentialIntervals``,
        ``DisparityBootstrap``, ``DisparityRobustness``) gets a section of its own; another
        mixedeval result gets a generic section (its ``.table``), a DataFrame an extra table.
    path : output file.
    title : page title (default: the model's formula).
    data, design_factors : the score table (or a file path, whose SHA-256 is recorded) and the
        factors whose design (levels, crossed or nested, balance) is described; by default the
        model's data and its categorical columns.
    d_study_grid : ``{facet: sizes}`` of the D study in the variance-component sections.
    extra_tables : ``{caption: DataFrame}`` shown in an extra section.
    input_file : file(s) whose SHA-256 is recorded.
    compute_missing : with a fit, compute the model parts not given: F tests, the
        likelihood-ratio test against the model without fixed effects (ML refits), EMMs and Holm
        pairwise contrasts of the first categorical fixed-effect factor, R², ICC and the
        diagnostics (``n_sim`` simulations, ``random_state``: an int is R's ``set.seed``). A
        part that fails or whose module is missing says why in its section.
    progress : progress messages on stderr (also off when ``MIXEDEVAL_QUIET`` is set).

    The page opens with the answer (:mod:`mixedeval._report.answer`): the ``answer`` of the
    result whose class declares the lowest ``_answer_priority`` (every result that compares or
    ranks carries one: compare_logs, summarize, compare_systems, bootstrap, Bradley-Terry,
    judge-corrected, IRT, subset scores, the model's EMMs): its headline sentence, the best-first
    leaderboard with labelled rank intervals, a plot of every system's difference from the best
    (or the reference), the checks with their verdicts (the badge says "checks differ", with a
    sentence on what that means, when one differs) and every pair best first under its sign
    convention; then the list of sections, the details, the data design and the provenance.
    Warnings of the checks (secondary analyses) have a section of their own and never set the
    answer's badge.

    A section whose rendering fails shows the error and the others are still written. A section
    showing a result with a severe warning (:func:`mixedeval.results.is_severe`: unstable standard
    errors, separation, a failed convergence check, a singular fit on a tested term) is marked
    "warning", never "ok", and the report opens with a "Read this first" box saying in plain words
    what each severe warning means and what to do (:mod:`mixedeval._report.truth`).
    """
    progress = bool(progress) and not os.environ.get("MIXEDEVAL_QUIET")
    found = dispatch(results)
    if compute_missing and found.fit is not None:
        outcome = _compute(found.fit, found.parts, n_sim=n_sim, random_state=random_state, progress=progress)
    else:
        outcome = given_only(found.parts, "not computed (compute_missing=False)" if found.fit is not None
                             else "not available: no fitted model was given")
    input_files = [str(p) for p in (input_file if isinstance(input_file, (list, tuple)) else [input_file]) if p]
    if isinstance(data, (str, os.PathLike)):
        input_files.append(str(data))
        data = as_pandas(data)
    tables = [*(extra_tables or {}).items(), *((f"Table {i}", t) for i, t in enumerate(found.tables, 1))]
    if data is None and found.fit is None:  # a result read from evaluation logs describes its own data design
        data, design_factors = _logs_design(found.items, design_factors)
    ctx = Context(fit=found.fit, data=data, design_factors=design_factors, results=outcome.values,
                  absent=outcome.absent, origin=outcome.origin, items=found.items, d_study_grid=d_study_grid,
                  extra_tables=tables, input_files=list(dict.fromkeys(input_files)))
    if progress:
        print("mixedeval report: rendering sections and figures", file=sys.stderr, flush=True)
    if title is None:
        title = f"mixedeval report: {found.fit.formula}" if found.fit is not None else "mixedeval report"
    sections, read_first = _build_sections(ctx)
    html = render_html(sections, title, read_first)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    if progress:
        print(f"mixedeval report: wrote {out} ({len(html) / 1e6:.1f} MB)", file=sys.stderr, flush=True)
    return out


def _logs_design(items: Any, design_factors: Any) -> tuple[Any, Any]:
    """The score table and design factors (system, task, item, run, epoch; those that vary) of the
    first result that carries evaluation logs (``.logs``: :func:`mixedeval.compare_logs`)."""
    for _kind, obj in items:
        logs = getattr(obj, "logs", None)
        table = getattr(logs, "table", None)
        if table is None:
            continue
        metric = getattr(obj, "metric", None)
        t = table[table["metric"] == metric] if metric is not None and "metric" in table.columns else table
        several_runs = "run" in t.columns and bool(t.groupby("system")["run"].nunique().max() > 1)
        factors = design_factors or [c for c in ("system", "task", "item", "run", "epoch", "cluster")
                                     if c in t.columns and t[c].nunique() > 1 and (c != "run" or several_runs)]
        return t.reset_index(drop=True), factors
    for _kind, obj in items:  # a workflow result carrying its model (compare_systems): the model's data
        fit = getattr(obj, "fit", None)
        data = getattr(fit, "data", None)
        if isinstance(data, pd.DataFrame) and len(data):
            factors = design_factors or [c for c in (getattr(fit, "factors", ()) or ()) if c in data.columns] or None
            return data, factors
    return None, design_factors


#: result kinds whose section describes their own data (no empty "Data design" section without data)
_OWN_DESIGN = ("preferences", "arena_audit")


def _primary_sources(obj: Any) -> list[Source]:
    """The sources whose severe warnings count for a result's own section and for the answer:
    the result without its checks' warnings, and its fit unless its model is a check."""
    skip = tuple((str(getattr(w, "kind", "")), str(getattr(w, "message", w))) for w in secondary_warnings(obj))
    srcs = item_sources(obj)
    srcs[0].skip = skip
    return srcs[:1] if model_is_check(obj) else srcs


def _check_warnings(sec: Any, checked: list[tuple[str, Any]]) -> None:
    """The warnings of the checks (secondary analyses) of the results in ``checked``."""
    sec.text("These warnings concern the secondary analyses (the checks beside a headline: a model-based test, "
             "a run-averaged analysis), not the headline itself; the headline's own warnings are in its section.")
    for title, obj in checked:
        sec.warnings(secondary_warnings(obj), caption=f"{title}: warnings of the checks")
        fit = getattr(obj, "fit", None)
        if model_is_check(obj) and fit is not None:
            sec.warnings([w for w in getattr(fit, "warnings", ()) or () if w not in secondary_warnings(obj)],
                         caption=f"{title}: warnings of the model fit (a check)")
    sec.headline = f"{sum(len(secondary_warnings(o)) for _, o in checked)} warning(s) of the checks"


def _answer_section(ctx: Any) -> tuple[Any, list[Source]] | None:
    """The answer section and its sources (the headline's analysis only), or None: the answer of
    the result of lowest ``_answer_priority`` (:func:`mixedeval._report.answer.answering`), with
    the other answering results of the report as checks."""
    emms = ctx.results.get("emmeans") or []
    try:
        found = answering(ctx.items, emms)
    except Exception as exc:  # noqa: BLE001 - the answer could not be computed: say so where it would stand
        return guarded_build("answer", ANSWER_TITLES["answer"], _raise, exc), []
    if found is None:
        return None
    obj, ans = found
    others = [o for o in candidates(ctx.items, emms) if o is not obj]
    from_model = not any(obj is o for _, o in ctx.items)
    sec = guarded_build("answer", ANSWER_TITLES["answer"], lambda s: build_answer(
        s, answer_of(obj, others, ctx.results.get("comparison") or [], answer=ans, from_model=from_model)))
    if not from_model:
        return sec, _primary_sources(obj)
    return sec, model_sources(ctx, "emmeans", ("emmeans",))


def _raise(sec: Any, exc: Exception) -> None:
    raise exc


def _build_sections(ctx: Any) -> tuple[list[Any], list[Entry]]:
    """The answer (:mod:`.answer`), the design section, the model sections that have something
    to show, one section per result in ``ctx.items`` (ids made unique: ``bootstrap``,
    ``bootstrap_2``), the warnings of the checks, extra tables and provenance; and the "Read this
    first" entries of their severe warnings (those sections are marked "warning"; the checks'
    warnings mark their own section only)."""
    sections, sources = [], {}
    answer = _answer_section(ctx)
    if answer is not None:
        sections.append(answer[0])
        sources["answer"] = answer[1]
    if response_type_warnings(ctx):
        sections.append(build("model_check", ctx))
    battles_only = ctx.items and all(kind.id in _OWN_DESIGN for kind, _ in ctx.items)
    if ctx.fit is not None or ctx.data is not None or not battles_only:
        sections.append(build("design", ctx))  # battle results describe their own design (models, battles)
    for sid, keys in MODEL_SECTIONS.items():
        if ctx.fit is not None or any(ctx.results.get(k) for k in keys):
            sections.append(build(sid, ctx))
            sources[sid] = model_sources(ctx, sid, keys)
    count: dict[str, int] = {}
    checked: list[tuple[str, Any]] = []
    for kind, obj in ctx.items:
        count[kind.id] = n = count.get(kind.id, 0) + 1
        sid, title = (kind.id, kind.title) if n == 1 else (f"{kind.id}_{n}", f"{kind.title} ({n})")
        sections.append(guarded_build(sid, title, kind.builder, obj, ctx))
        sources[sid] = _primary_sources(obj)
        fit = getattr(obj, "fit", None)
        if secondary_warnings(obj) or (model_is_check(obj) and getattr(fit, "warnings", None)):
            checked.append((title, obj))
    if checked:
        sections.append(guarded_build("check_warnings", CHECK_TITLES["check_warnings"], _check_warnings, checked))
        sources["check_warnings"] = [
            *(Source(o, only=tuple(secondary_warnings(o))) for _, o in checked),
            *(s for _, o in checked if model_is_check(o) for s in item_sources(o)[1:])]
    if ctx.extra_tables:
        sections.append(build("extra", ctx))
    sections.append(build("provenance", ctx))
    return sections, review(sections, sources, quiet=("check_warnings",))
