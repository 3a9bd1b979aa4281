"""The report tells the truth: severe warnings decide the badges and open the report in plain words.

A result carrying a severe warning (:func:`mixedeval.results.is_severe`: unstable standard
errors, separation, a failed convergence check, a singular fit on a tested term) never shows an
"ok" badge: every section showing it, or showing numbers of the fit that warned, gets the status
"warning" with a note. The report then opens with a "Read this first" box listing each severe
warning once, in words a non-statistician understands, with the fix, the sections it affects
and the technical message. Other warnings stay where they are (in their section's list).

Which model sections a warning *of the fit* affects depends on what it breaks
(:data:`FIT_SCOPE`): unstable standard errors and separation break the Wald statistics (fixed
effects, F / Wald chi-square tests, EMMs, contrasts), not the likelihood-ratio test; a failed
convergence check breaks every number of the fit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..data._formula import parse_formula
from ..results import boundary_components, effective_kind, is_severe
from .blocks import Section
from .compute import fixed_effect_terms

#: the model sections that show Wald statistics computed from the fit's standard errors
WALD_SECTIONS = ("model", "fixed", "anova", "emmeans", "contrasts")
#: every model section built on the fit's estimates
FIT_SECTIONS = (*WALD_SECTIONS, "random", "lrt", "r2_icc")
#: warning kind of the fit -> the model sections it makes untrustworthy (default: all of FIT_SECTIONS)
FIT_SCOPE: dict[str, tuple[str, ...]] = {
    "vcov_unstable": WALD_SECTIONS,
    "separation": WALD_SECTIONS,
    "singular": (*WALD_SECTIONS, "random"),
}

_CONVERGENCE_FIX = ("Refit with other optimizers and compare (fit.check_optimizers()): if they agree, the numbers "
                    "can be trusted; if not, use the optimizer with the highest log-likelihood, simplify the random "
                    "effects, or rescale numeric predictors. Until then, rely on the bootstrap results, which do not "
                    "depend on the model fit.")

#: warning kind -> (short label, what it means in plain words, what to do)
PLAIN: dict[str, tuple[str, str, str]] = {
    "separation": (
        "A system was always right (or always wrong).",
        "A system got every question right (or every question wrong) in a task (the technical detail below says "
        "which), so the model cannot say how much better or worse it is there: the estimate runs off towards "
        "infinity. The odds ratios for that system, and their p-values and intervals, are meaningless. The "
        "likelihood-ratio test of the system effect and the differences in accuracy points (the bootstrap and "
        "paired differences) are still valid.",
        "Report the likelihood-ratio test and the difference in accuracy points, not the odds ratios. For odds "
        "ratios, use a penalised (bias-reduced) fit, or pool the tasks so that every system has both right and "
        "wrong answers."),
    "vcov_unstable": (
        "The model's standard errors were unstable.",
        "The usual calculation of the model's standard errors (from the curvature of the fit) was numerically "
        "unstable, so z or t statistics, p-values and intervals built from it can be absurd (a z statistic in the "
        "hundreds is a sign). The results then use standard errors from a simpler, stable calculation (lme4 falls "
        "back to its 'RX' approximation; the technical detail below says so), which can still be off when the "
        "fit is near a boundary. The likelihood-ratio test does not use these standard errors and is still "
        "valid.",
        "Do not quote the Wald z/t tests or intervals of this model; use the likelihood-ratio test and the "
        "bootstrap intervals. Simplifying the random effects or refitting with another optimizer often removes "
        "the instability."),
    "convergence": (
        "The model fit did not converge cleanly.",
        "The fitting algorithm stopped at a point it could not confirm as the best fit, so the model's "
        "estimates, p-values and intervals may change between runs or optimizers.",
        _CONVERGENCE_FIX),
    "convergence_gradient": (
        "The model fit did not converge cleanly (gradient check).",
        "At the point where the fitting algorithm stopped, the fit was still improving in some direction (the "
        "gradient was not close to zero), so the model's estimates, p-values and intervals may not be the best "
        "fit and may change between runs or optimizers.",
        _CONVERGENCE_FIX),
    "convergence_hessian": (
        "The model fit did not converge cleanly (curvature check).",
        "The fit's curvature at the point where the algorithm stopped is not that of a clean optimum (a flat "
        "ridge or a saddle), so the model's standard errors, p-values and intervals cannot be trusted and the "
        "estimates may change between runs or optimizers.",
        _CONVERGENCE_FIX),
    "hessian": (
        "The model fit did not converge cleanly (curvature check).",
        "The fit's curvature at the point where the algorithm stopped is not that of a clean optimum, so the "
        "model's standard errors, p-values and intervals cannot be trusted.",
        _CONVERGENCE_FIX),
    "optimizer_disagreement": (
        "Different fitting algorithms gave different answers.",
        "Refitting the same model with other optimizers reached a different result, so at least one of them "
        "stopped early and the model's numbers depend on which one was used.",
        "Refit with the optimizer that reached the highest log-likelihood (named in the technical detail) and "
        "check that the conclusions stay the same; rely on the bootstrap results meanwhile."),
    "singular": (
        "A variance of the tested effect was estimated as zero.",
        "The model estimated a source of variation that involves the effect being tested ({terms}) as exactly "
        "zero, or a correlation as exactly +-1 (component {components}). The model has then dropped part of the "
        "uncertainty about that very effect, so its standard errors can be far too small and its p-values far "
        "too confident.",
        "Simplify the random effects involving {terms} (drop that random slope or interaction grouping, or fit it "
        "without correlations) and check the conclusion with the likelihood-ratio test and the bootstrap "
        "(me.bootstrap), which do not rely on that variance."),
}
_GENERIC = ("A severe problem with this result.",
            "This result carries a warning that makes its p-values and intervals untrustworthy.",
            "Read the technical detail below and refit before quoting these numbers.")


@dataclass
class Source:
    """A result shown in a section with what decides the severity of its warnings: the fit's tested
    terms and random-effect table; the warning kinds in ``exclude`` are not taken (a fit's warnings
    that do not reach this section)."""

    obj: Any
    tested: tuple[str, ...] = ()
    random: Any = None
    exclude: tuple[str, ...] = ()
    #: warnings (kind, message) of the result not taken here (a check's, shown in their own section)
    skip: tuple[tuple[str, str], ...] = ()
    #: the warnings to judge instead of the result's own (a check-warnings section)
    only: tuple[Any, ...] | None = None


@dataclass
class Entry:
    """One item of the "Read this first" box: a warning kind with its plain words, the sections it
    affects and the technical messages."""

    kind: str
    label: str
    meaning: str
    fix: str
    sections: list[tuple[str, str]] = field(default_factory=list)
    details: list[str] = field(default_factory=list)


def tested_terms(fit: Any) -> tuple[str, ...]:
    """The variables of the fit's fixed-effect terms (formula order): the effects being tested."""
    if fit is None or not getattr(fit, "formula", None):
        return ()
    data = getattr(fit, "data", None)
    cols = None if data is None else [str(c) for c in data.columns]
    try:
        terms = fixed_effect_terms(fit.formula, cols)
        if not terms:
            return ()
        return tuple(str(c) for c in parse_formula("~ " + " + ".join(terms), cols).columns)
    except Exception:  # noqa: BLE001 - an unparsable formula: no tested terms known (kinds still count)
        return ()


def fit_source(fit: Any) -> Source:
    random = getattr(fit, "random", None)
    return Source(fit, tested_terms(fit), random if isinstance(random, pd.DataFrame) else None)


def item_sources(obj: Any) -> list[Source]:
    """A result section's sources: the result, and the fit it carries (``.fit``) if any, whose
    tested terms and random effects decide its ``singular`` warnings."""
    fit = getattr(obj, "fit", None)
    if fit is None or not hasattr(fit, "warnings"):
        random = getattr(obj, "random", None)
        return [Source(obj, (), random if isinstance(random, pd.DataFrame) else None)]
    src = fit_source(fit)
    return [Source(obj, src.tested, src.random), src]


def model_sources(ctx: Any, section_id: str, keys: tuple[str, ...]) -> list[Source]:
    """A model section's sources: the results it shows, every severe warning of theirs counting
    (judged against the fit's tested terms and random effects), and the fit itself, limited to
    the kinds of its warnings that reach this section (:data:`FIT_SCOPE`: separation does not
    make the likelihood-ratio test wrong)."""
    fit = ctx.fit
    base = fit_source(fit) if fit is not None else Source(None)
    out = [Source(v, base.tested, base.random) for k in keys for v in (ctx.results.get(k) or [])]
    if fit is not None and section_id in FIT_SECTIONS:
        exclude = tuple(k for k, secs in FIT_SCOPE.items() if section_id not in secs)
        out.append(Source(fit, base.tested, base.random, exclude))
    return out


def severe_warnings(src: Source) -> list[tuple[Any, Source]]:
    """The severe warnings of a source's result (each once)."""
    out, seen = [], set()
    ws = src.only if src.only is not None else (getattr(src.obj, "warnings", ()) or ())
    for w in ws:
        kind = effective_kind(w)
        key = (kind, getattr(w, "message", str(w)))
        if (str(getattr(w, "kind", "")), key[1]) in src.skip:
            continue
        if key in seen or kind in src.exclude or not is_severe(w, src.tested, src.random):
            continue
        seen.add(key)
        out.append((w, src))
    return out


def _plain(w: Any, src: Source) -> tuple[str, str, str]:
    kind = effective_kind(w)
    label, meaning, fix = PLAIN.get(kind, _GENERIC)
    if kind == "singular":
        comps = boundary_components(src.random, src.tested) if src.random is not None else []
        terms = [t for t in src.tested if any(t in c for c in comps)] or list(src.tested)
        fill = {"terms": ", ".join(terms) or "the tested effect", "components": "; ".join(comps) or "see below"}
        meaning, fix = meaning.format(**fill), fix.format(**fill)
    return label, meaning, fix


def review(sections: list[Section], sources: dict[str, list[Source]], quiet: Any = ()) -> list[Entry]:
    """Mark every section showing a severe warning ("warning", never "ok") and return the entries
    of the "Read this first" box, one per warning kind (and singular component), in report order.
    Sections in ``quiet`` (the warnings of checks) are marked but do not open the report."""
    entries: dict[tuple[str, str], Entry] = {}
    for sec in sections:
        found = [hit for src in sources.get(sec.id, ()) for hit in severe_warnings(src)]
        if not found:
            continue
        if sec.id in quiet:
            labels = list(dict.fromkeys(_plain(w, src)[0] for w, src in found))
            sec.set_status("warning", "Severe for the checks (not for the headline): " + " ".join(labels))
            continue
        for w, src in found:
            label, meaning, fix = _plain(w, src)
            e = entries.setdefault((effective_kind(w), meaning), Entry(effective_kind(w), label, meaning, fix))
            if (sec.id, sec.title) not in e.sections:
                e.sections.append((sec.id, sec.title))
            detail = f"[{w.kind}] {w.message}"
            if detail not in e.details:
                e.details.append(detail)
            if label not in sec.severe:
                sec.severe.append(label)
        sec.set_status("warning", "Severe: " + " ".join(sec.severe) + " See \"Read this first\" at the top.")
    return list(entries.values())
