"""mixedeval: statistically sound evaluation of ML/NLP systems.

Linear mixed models computed by R (lme4, lmerTest, emmeans, pbkrtest, effectsize,
performance) through rpy2, with numbers equal to what R prints; resampling, diagnostics maths
and reporting in vectorized numpy.

``import mixedeval`` is cheap: it neither starts R nor imports pandas. Public names are
resolved lazily on first access.
"""
from __future__ import annotations

from . import _lazy
from .errors import DataError, FormulaError, MixedEvalError, RError, RNotAvailableError
from .errors import ExecutorError, ExecutorWarning, MainGuardError, WorkerLostError

__version__ = "0.4.0.dev0"

# public name -> (module, attribute); attribute None means the module itself
_LAZY: dict[str, tuple[str, str | None]] = {
    "datasets": ("mixedeval.datasets", None),
    "check_r": ("mixedeval.engine.check", "check_r"),
    "lmm": ("mixedeval.inference._lmm", "lmm"),
    "LMMFit": ("mixedeval.inference._lmm", "LMMFit"),
    "clmm": ("mixedeval.inference._clmm", "clmm"),
    "CLMMFit": ("mixedeval.inference._clmm", "CLMMFit"),
    "glmm": ("mixedeval.inference._glmm", "glmm"),
    "GLMMFit": ("mixedeval.inference._glmm", "GLMMFit"),
    "compare": ("mixedeval.inference.compare", "compare"),
    "adjust_pvalues": ("mixedeval.padjust", "adjust_pvalues"),
    "anova": ("mixedeval.inference.anova", "anova"),
    "emmeans": ("mixedeval.inference.emmeans", "emmeans"),
    "emtrends": ("mixedeval.inference.emmeans", "emtrends"),
    "r2": ("mixedeval.inference.r2", "r2"),
    "icc": ("mixedeval.inference.r2", "icc"),
    "check_optimizers": ("mixedeval.inference.optimizers", "check_optimizers"),
    "bootstrap": ("mixedeval.resampling", "bootstrap"),
    "paired_bootstrap_test": ("mixedeval.resampling", "paired_bootstrap_test"),
    "approximate_randomization": ("mixedeval.resampling", "approximate_randomization"),
    "sign_flip_test": ("mixedeval.resampling", "sign_flip_test"),
    "resampling": ("mixedeval.resampling", None),
    "decompose_variance": ("mixedeval.resampling", "decompose_variance"),
    "decompose_variance_summary": ("mixedeval.resampling", "decompose_variance_summary"),
    "simulate_leaderboard": ("mixedeval.resampling", "simulate_leaderboard"),
    "run_intervals": ("mixedeval.resampling", "run_intervals"),
    "pooled_run_bootstrap": ("mixedeval.resampling", "pooled_run_bootstrap"),
    "diagnostics": ("mixedeval.diagnostics", None),
    "variance_components": ("mixedeval.workflows.variance_components", "variance_components"),
    "compare_systems": ("mixedeval.workflows.compare_systems", "compare_systems"),
    "conditional_compare": ("mixedeval.workflows.conditional_compare", "conditional_compare"),
    "meta_parameter_importance": ("mixedeval.workflows.meta_parameters", "meta_parameter_importance"),
    "assess_meta_parameter": ("mixedeval.workflows.meta_parameters", "assess_meta_parameter"),
    "inferential_reproducibility": ("mixedeval.workflows.reproducibility", "inferential_reproducibility"),
    "krippendorff_alpha": ("mixedeval.workflows.krippendorff", "krippendorff_alpha"),
    "language_disparity": ("mixedeval.workflows.language_disparity", "language_disparity"),
    "fit_many": ("mixedeval.workflows.fit_many", "fit_many"),
    "report": ("mixedeval._report", "report"),
    "validate": ("mixedeval.data.validate", None),
    "describe_design": ("mixedeval.data.design", "describe_design"),
    "design": ("mixedeval.data._design_spec", "design"),
    "Design": ("mixedeval.data._design_spec", "Design"),
    "power": ("mixedeval.workflows.power", "power"),
    "power_curve": ("mixedeval.workflows.power", "power_curve"),
    "sample_size": ("mixedeval.workflows.power", "sample_size"),
    "minimum_detectable_effect": ("mixedeval.workflows.power", "minimum_detectable_effect"),
    "set_memory_limit": ("mixedeval._resources", "set_memory_limit"),
    "get_memory_limit": ("mixedeval._resources", "get_memory_limit"),
    "set_time_limit": ("mixedeval._resources", "set_time_limit"),
    "get_time_limit": ("mixedeval._resources", "get_time_limit"),
    "parse_formula": ("mixedeval.data._formula", "parse_formula"),
    "read_eval_logs": ("mixedeval.data._logs", "read_eval_logs"),
    "EvalLogs": ("mixedeval.data._logs", "EvalLogs"),
    "metrics": ("mixedeval.resampling.metrics", None),
    "compare_logs": ("mixedeval.workflows.compare_logs", "compare_logs"),
    "questions_needed": ("mixedeval.workflows.plan_eval", "questions_needed"),
    "summarize": ("mixedeval.workflows.summarize", "summarize"),
    "bayes_glmm": ("mixedeval.workflows.agentic.bayes", "bayes_glmm"),
    "BayesGLMMResult": ("mixedeval.workflows.agentic.bayes", "BayesGLMMResult"),
    "rank_intervals": ("mixedeval.inference.rankings", "rank_intervals"),
    "RankIntervals": ("mixedeval.inference.rankings", "RankIntervals"),
    "read_battles": ("mixedeval.data._battles", "read_battles"),
    "bradley_terry": ("mixedeval.workflows.preferences", "bradley_terry"),
    "BradleyTerryResult": ("mixedeval.workflows.preferences", "BradleyTerryResult"),
    "judge_corrected": ("mixedeval.workflows.judges", "judge_corrected"),
    "JudgeCorrected": ("mixedeval.workflows.judges", "JudgeCorrected"),
    "judge_agreement": ("mixedeval.workflows.judges", "judge_agreement"),
    "labels_needed": ("mixedeval.workflows.judges", "labels_needed"),
    "read_judge_scores": ("mixedeval.data._judge_labels", "read_judge_scores"),
    "bradley_terry_corrected": ("mixedeval.workflows._judges_battles", "bradley_terry_corrected"),
    "irt": ("mixedeval.inference._irt", "irt"),
    "IrtResult": ("mixedeval.inference._irt", "IrtResult"),
    "select_items": ("mixedeval.workflows.item_subsets", "select_items"),
    "estimate_scores": ("mixedeval.workflows.item_subsets", "estimate_scores"),
    "next_items": ("mixedeval.workflows.item_subsets", "next_items"),
    "benchmark_quality": ("mixedeval.workflows.benchmark_quality", "benchmark_quality"),
    "pass_at_k": ("mixedeval.workflows.agentic.pass_k", "pass_at_k"),
    "PassAtKResult": ("mixedeval.workflows.agentic.pass_k", "PassAtKResult"),
    "time_horizon": ("mixedeval.workflows.agentic.time_horizon", "time_horizon"),
    "TimeHorizonResult": ("mixedeval.workflows.agentic.time_horizon", "TimeHorizonResult"),
    "votes_to_flip": ("mixedeval.workflows.arena.audit", "votes_to_flip"),
    "arena_audit": ("mixedeval.workflows.arena.audit", "arena_audit"),
    "ArenaAuditResult": ("mixedeval.workflows.arena.audit", "ArenaAuditResult"),
    "VotesToFlipResult": ("mixedeval.workflows.arena.audit", "VotesToFlipResult"),
}

__all__ = ["DataError", "FormulaError", "MixedEvalError", "RError", "RNotAvailableError", "__version__",
           "ExecutorError", "ExecutorWarning", "MainGuardError", "WorkerLostError"]

_lazy.install(__name__, _LAZY)
