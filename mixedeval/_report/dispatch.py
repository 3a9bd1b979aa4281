"""Which section shows which result: two registries keyed by result type.

* :func:`model_parts`: the results that belong to the model sections of one fitted model (the
  fit itself, F tests, likelihood-ratio tests, EMMs, contrasts, R², ICC, diagnostics);
* :func:`result_kinds`: every other result type -> its :class:`Kind` (section id, heading and
  builder); one section per result object.

A result is dispatched on its type (the nearest registered class in its MRO); a result type that
is not registered but is a mixedeval result gets the generic section (its ``.table`` and the
tables it prints). Nothing is recognised by sniffing attributes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd

from ..diagnostics import Diagnostics
from ..errors import DataError
from ..inference._glmm import GLMMFit
from ..inference._glmm_infer import GLMMAnovaResult, GLMMContrastResult, GLMMEMMResult
from ..inference._irt import IrtResult
from ..inference._lmm import LMMFit
from ..inference._r2_glmm import GLMMICCResult, GLMMR2Result
from ..inference.anova import AnovaResult
from ..inference.compare import CompareResult
from ..inference.emmeans import ContrastResult, EMMResult
from ..inference.r2 import ICCResult, R2Result
from ..resampling import (
    BootstrapResult,
    LeaderboardResult,
    PairedTestResult,
    PooledRunBootstrapResult,
    RunIntervalsResult,
    VarianceDecomposition,
)
from ..results import ResultMixin
from ..workflows.compare_logs import CompareLogsResult
from ..workflows.compare_systems import CompareSystemsResult
from ..workflows.conditional_compare import ConditionalCompareResult
from ..workflows._judges_battles import JudgedBattlesResult
from ..workflows.judges import JudgeCorrected
from ..workflows.krippendorff import KrippendorffResult
from ..workflows.language_disparity import (
    DisparityBootstrap,
    DisparityRobustness,
    LanguageDisparityResult,
    PotentialIntervals,
)
from ..workflows.meta_parameters import MetaParameterAssessment, MetaParameterImportance
from ..workflows.power import MinimumDetectableEffect, PowerCurveResult, PowerResult, SampleSizeResult
from ..workflows.preferences import BradleyTerryResult
from ..workflows.arena.audit import ArenaAuditResult
from ..workflows.reproducibility import ReproducibilityResult
from ..workflows.summarize import SummarizeResult
from ..workflows.variance_components import VCAResult
from ..workflows.agentic.bayes import BayesGLMMResult
from ..workflows.agentic.pass_k import PassAtKResult
from ..workflows.agentic.time_horizon import TimeHorizonResult
from . import agentic as agentic_section
from . import bayes as bayes_section
from . import judges as judges_section
from . import irt as irt_section
from . import preferences as prefs
from . import arena as arena_section
from . import result_sections as rs


@dataclass(frozen=True)
class Kind:
    """A kind of result section: its id (also the HTML anchor), heading and builder
    ``builder(section, result, context)``."""

    id: str
    title: str
    builder: Callable[..., None] = field(repr=False, compare=False)


def model_parts() -> dict[type, str]:
    """Result type -> the key of the model section that shows it."""
    return {LMMFit: "fit", AnovaResult: "anova", CompareResult: "comparison", EMMResult: "emmeans",
            ContrastResult: "contrasts", R2Result: "r2", ICCResult: "icc", Diagnostics: "diagnostics",
            GLMMFit: "fit", GLMMAnovaResult: "anova", GLMMEMMResult: "emmeans", GLMMContrastResult: "contrasts",
            GLMMR2Result: "r2", GLMMICCResult: "icc"}


def result_kinds() -> dict[type, Kind]:
    """Result type -> its section kind, in report order."""
    return {
        BootstrapResult: Kind("bootstrap", "Bootstrap", rs.bootstrap),
        PairedTestResult: Kind("paired_test", "Paired two-system test", rs.generic),
        VarianceDecomposition: Kind("variance_decomposition", "Leaderboard variance decomposition", rs.generic),
        LeaderboardResult: Kind("leaderboard", "Simulated leaderboards", rs.generic),
        RunIntervalsResult: Kind("run_intervals", "Intervals over runs", rs.generic),
        PooledRunBootstrapResult: Kind("pooled_run_bootstrap", "Pooled-run bootstrap", rs.generic),
        CompareSystemsResult: Kind("compare_systems", "System comparison", rs.generic),
        CompareLogsResult: Kind("compare_logs", "System comparison from evaluation logs", rs.compare_logs),
        SummarizeResult: Kind("summarize", "Summary of scores per task and system", rs.summarize),
        ConditionalCompareResult: Kind("conditional_compare", "Comparison conditional on a data property",
                                       rs.generic),
        VCAResult: Kind("vca", "Variance components and reliability", rs.vca),
        MetaParameterImportance: Kind("meta_parameter_importance", "Meta-parameter importance", rs.generic),
        MetaParameterAssessment: Kind("meta_parameter_assessment", "Meta-parameter assessment", rs.generic),
        ReproducibilityResult: Kind("reproducibility", "Training vs inferential reproducibility", rs.reproducibility),
        KrippendorffResult: Kind("krippendorff", "Krippendorff's alpha", rs.generic),
        LanguageDisparityResult: Kind("disparity", "Language disparity", rs.disparity),
        PotentialIntervals: Kind("potential_intervals", "Language potential: t intervals", rs.potential_intervals),
        DisparityBootstrap: Kind("disparity_bootstrap", "Language disparity: parametric bootstrap",
                                 rs.disparity_bootstrap),
        DisparityRobustness: Kind("disparity_robustness", "Language disparity: robustness", rs.generic),
        PowerResult: Kind("power", "Design and power", rs.power),
        PowerCurveResult: Kind("power_curve", "Design and power: power curve", rs.power_curve),
        SampleSizeResult: Kind("sample_size", "Design and power: sample size", rs.power_curve),
        MinimumDetectableEffect: Kind("minimum_detectable_effect", "Design and power: minimum detectable effect",
                                      rs.minimum_detectable_effect),
        BradleyTerryResult: Kind("preferences", "Pairwise preferences: Bradley-Terry strengths", prefs.preferences),
        ArenaAuditResult: Kind("arena_audit", "How robust is this leaderboard?", arena_section.arena),
        JudgeCorrected: Kind("judges", "LLM judge corrected with human labels", judges_section.judges),
        JudgedBattlesResult: Kind("judged_battles", "Judged battles corrected with human verdicts", rs.generic),
        IrtResult: Kind("irt", "Item response theory: items and abilities", irt_section.irt),
        BayesGLMMResult: Kind("bayes_glmm", "Bayesian hierarchical model (small evaluation)", bayes_section.bayes),
        PassAtKResult: Kind("pass_at_k", "pass@k and pass^k with intervals", agentic_section.pass_k),
        TimeHorizonResult: Kind("time_horizon", "Task-length time horizons", agentic_section.horizon),
    }


def _generic_kind() -> Kind:
    return Kind("result", "Other results", rs.generic)


def _lookup(obj: Any, table: dict[type, Any]) -> Any:
    for cls in type(obj).__mro__:
        if cls in table:
            return table[cls]
    return None


@dataclass
class Dispatched:
    """The results of one report, sorted: the fit, the model parts by key (lists), the result
    sections as ``(kind, result)`` in report order, and bare tables."""

    fit: Any = None
    parts: dict[str, list[Any]] = field(default_factory=dict)
    items: list[tuple[Kind, Any]] = field(default_factory=list)
    tables: list[Any] = field(default_factory=list)


def _flatten(results: tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    for r in results:
        if isinstance(r, (list, tuple)):
            out.extend(_flatten(tuple(r)))
        elif r is not None:
            out.append(r)
    return out


def dispatch(results: tuple[Any, ...]) -> Dispatched:
    """Sort ``results`` (result objects, lists of them, DataFrames) into the report's sections."""
    parts_of, kinds = model_parts(), result_kinds()
    order = {k.id: i for i, k in enumerate(kinds.values())}
    out = Dispatched()
    for obj in _flatten(results):
        key = _lookup(obj, parts_of)
        kind = _lookup(obj, kinds)
        if key == "fit":
            if out.fit is not None and out.fit is not obj:
                raise DataError("report() shows one fitted model; pass one LMMFit per report (its anova, "
                                "comparisons, EMMs, contrasts, R², ICC and diagnostics with it)")
            out.fit = obj
        elif key is not None:
            out.parts.setdefault(key, []).append(obj)
        elif kind is not None:
            out.items.append((kind, obj))
        elif isinstance(obj, pd.DataFrame):
            out.tables.append(obj)
        elif isinstance(obj, ResultMixin):
            out.items.append((_generic_kind(), obj))
        else:
            raise DataError(f"report() takes mixedeval result objects (a fit, anova, compare, EMMs, contrasts, "
                            f"diagnostics, resampling or workflow results) or DataFrames, not {type(obj).__name__}")
    out.items.sort(key=lambda kv: order.get(kv[0].id, len(order)))  # stable: given order within a kind
    return out


def section_titles() -> dict[str, str]:
    """Kind id -> heading of every result section kind, in report order."""
    titles = {k.id: k.title for k in result_kinds().values()}
    titles["result"] = _generic_kind().title
    return titles
