"""Language disparity metrics of Hu, Vulić & Korhonen (2025), with the uncertainty they lack.

The framework (Hu, Vulić & Korhonen, *Quantifying Language Disparities in Multilingual Large
Language Models*, EMNLP 2025, §3) fits, by maximum likelihood (``lme4::lmer(..., REML = FALSE)``
through :func:`mixedeval.lmm`), with treatment coding::

    score ~ language + task + (1 | model)          s = mu + alpha_l + beta_t + u_m + e

and derives

* performance potential ``PP[l, t] = mu + alpha_l + beta_t`` (population level, no model effect;
  equal to ``predict(m, re.form = NA)``), their Eq. 2;
* performance realisation ratio ``PRR = score / PP`` per record (Eq. 4); per model the mean PRR,
  its standard deviation (n - 1) and ``CV = SD / mean`` (Eq. 5);
* language potential ``LP[l] = mu + alpha_l + mean_t(beta_t)`` (Eq. 3), ranked beside the raw
  mean score of each language.

**The two LP conventions.** The paper's Eq. 3 averages the task effects over "all observed tasks";
the authors' released code (``modelling.ipynb``, ``np.mean`` over the estimated ``C(Task)``
coefficients) averages over the *non-reference* tasks only, i.e. it leaves out the reference
task's zero effect. ``lp_convention="published"`` (the default) reproduces their Table 2;
``lp_convention="all_tasks"`` includes the reference task, which equals the equally weighted
estimated marginal mean of each language (``emmeans(m, "language")``) and does not depend on the
reference task. The two differ by the same constant for every language,
``sum(beta) / (T (T - 1))`` (``T`` tasks), so ranks are identical; the published values move
when another reference task is chosen. PP, PRR and CV do not depend on the reference levels.

**Reference levels.** Both factors use treatment contrasts with an explicit reference: by default
the first level in code-point order -- which is what the authors' pandas categories used (for
their data: language ``af``, task ``indicqa/exact_match``). ``reference={"language": "en"}``
chooses another; the levels used are reported in ``result.reference``.

**Uncertainty** (not in the paper). :meth:`LanguageDisparityResult.bootstrap` is a parametric
bootstrap of the fitted model (``n_resamples`` replicates; an int ``random_state`` is R's
``set.seed``): responses simulated by ``lme4::simulate`` (new model effects,
``re.form = NA``), each replicate refitted by ML with ``lme4::refit`` in one R loop, and PP, PRR,
CV and LP recomputed in numpy from each replicate's fixed effects. By default a replicate's PRR
divides the *observed* scores by the replicate's PP, so intervals for mean PRR and CV-PRR show how
much the estimated normaliser moves, and LP intervals show the sampling uncertainty of the
language effects. Percentile intervals for LP under-cover, because ML underestimates the model
variance and LP's error is dominated by the mean of the M model effects (about M - 1 df).
:meth:`LanguageDisparityResult.potential_intervals` gives analytic t intervals instead: LP is
linear in the fixed effects, ``LP_l = L_l' beta``, so estimate, standard error, Satterthwaite (or
Kenward-Roger) df and interval come from one ``lmerTest::contest`` call, by default on the model
refitted by REML (chosen by a coverage study; see that method).
:meth:`LanguageDisparityResult.robustness` repeats the analysis without the
``k`` records with the largest absolute conditional residuals (the paper's Appendix C check) and
reports which rankings change.

**Diagnostics** (the paper's Appendix C): Shapiro-Wilk on the conditional residuals and on the
model BLUPs (R's ``shapiro.test``, AS R94 transcribed in :mod:`mixedeval.diagnostics`), and
Levene's test (median centred, as ``car::leveneTest``) of the residuals across languages.
"""
from __future__ import annotations

import time
import uuid
import warnings as pywarnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau, rankdata, spearmanr
from tqdm.auto import tqdm

from .._progress import bar_disabled
from .._executor import resolve_executor
from .._random import r_seed
from .._resources import LoopGuard
from ..data.table import as_pandas
from ..data.validate import (
    ROWS_CHECKED,
    _rows_preview,
    duplicated_rows_warning,
    require_columns,
    require_finite,
    require_level,
    require_nonempty,
    require_supported_dtypes,
)
from ..diagnostics._levene import levene_median
from ..diagnostics._normality import normality_test
from ..engine import _bridge
from ..engine.conditions import r_warnings
from ..errors import DataError
from ..inference._lmm import lmm, normalize_df_method
from ..results import ResultMixin, ResultWarning, jsonable
from ._common import refit_guard, worker_model

FORMULA = "score ~ language + task + (1 | model)"
ROLES = ("language", "task")
LP_CONVENTIONS = {"published": "published", "non_reference": "published", "all_tasks": "all_tasks",
                  "emmeans": "all_tasks"}
AGGREGATE_LABELS = ("avg", "average", "mean", "overall", "all", "total")


# ----------------------------------------------------------------------------- data preparation
def _missing_rows(s) -> Any:
    return s.isna() | s.astype(str).str.strip().eq("")


def _prepare_frame(data: Any, score: str, model: str, language: str, task: str | Sequence[str],
                   drop_aggregates: bool, aggregate_labels: Sequence[str]):
    """Canonical frame (score, model, language, task as strings) indexed like the user's rows."""
    df = as_pandas(data)
    require_nonempty(df)
    task_cols = list(task) if isinstance(task, (list, tuple)) else [task]
    if not task_cols:
        raise DataError("task must name a column (or a list of columns such as ['dataset', 'metric'])")
    require_columns(df, [score, model, language, *task_cols])
    require_supported_dtypes(df, [score], score=score)
    require_finite(df, score)  # missing scores are an error (mixedeval.data.validate)
    warnings: list[ResultWarning] = []
    dup = duplicated_rows_warning(df, score)
    if dup is not None:
        warnings.append(dup)
    factor_cols = (("model", model), ("language", language), *(("task", c) for c in task_cols))
    missing = {col: _missing_rows(df[col]) for _, col in factor_cols}
    any_missing = np.logical_or.reduce([m.to_numpy() for m in missing.values()])
    if any_missing.any():  # missing factor values drop the row, with a warning (as lmm)
        which = ", ".join(f"{col!r} ({int(m.sum())})" for col, m in missing.items() if m.any())
        warnings.append(ResultWarning(
            "missing_rows",
            f"{int(any_missing.sum())} record(s) with a missing or empty model/language/task value were dropped "
            f"(rows {_rows_preview(df.index[any_missing])}; missing in {which})",
        ))
        df = df.loc[~any_missing]
        require_nonempty(df, "data without missing model/language/task values")
    task_values = df[task_cols[0]].astype(str)
    for c in task_cols[1:]:
        task_values = task_values + "/" + df[c].astype(str)
    frame = pd.DataFrame({
        "score": pd.to_numeric(df[score]).astype(float),
        "model": df[model].astype(str),
        "language": df[language].astype(str),
        "task": task_values,
    }, index=df.index)
    frame, n_agg = _drop_aggregates(frame, language, drop_aggregates, aggregate_labels, warnings)
    require_nonempty(frame, "data after dropping aggregate records")
    for col in ("model", "language", "task"):
        if frame[col].nunique() < 2:
            raise DataError(
                f"{col} column has {frame[col].nunique()} distinct value(s) ({frame[col].iloc[0]!r}); the model "
                f"score ~ language + task + (1|model) needs at least 2 {col}s"
            )
    dup = frame.duplicated(["model", "language", "task"], keep=False)
    if dup.any():
        warnings.append(ResultWarning(
            "duplicate_records",
            f"{int(frame.duplicated(['model', 'language', 'task']).sum())} records repeat a (model, language, task) "
            "cell; each is kept as a separate observation",
        ))
    frame.attrs[ROWS_CHECKED] = True  # the caller's whole table was checked above; lmm does not repeat it
    return frame, n_agg, warnings


def _drop_aggregates(frame, language: str, drop_aggregates: bool, aggregate_labels: Sequence[str],
                     warnings: list[ResultWarning]):
    """``(frame, n_dropped)``: records whose language is an aggregate label are refused, or
    dropped with a ``dropped_aggregates`` warning (appended to ``warnings``)."""
    labels = {str(a).strip().lower() for a in aggregate_labels}
    is_agg = frame["language"].str.strip().str.lower().isin(labels)
    n_agg = int(is_agg.sum())
    if not n_agg:
        return frame, 0
    found = sorted(frame.loc[is_agg, "language"].unique())
    if not drop_aggregates:
        raise DataError(
            f"language column {language!r} has {n_agg} records whose language is an aggregate label "
            f"({', '.join(map(repr, found))}): published averages over languages are not observations of a "
            "language and would be modelled as one. Pass drop_aggregates=True to drop them, or "
            "aggregate_labels=() if such a label is a real language"
        )
    frame = frame.loc[~is_agg]
    warnings.append(ResultWarning(
        "dropped_aggregates",
        f"{n_agg} records with aggregate language labels ({', '.join(map(repr, found))}) were dropped "
        f"(drop_aggregates=True); {len(frame)} records remain",
    ))
    return frame, n_agg


def _resolve_reference(frame, reference: Mapping[str, Any] | None, language: str,
                       task: str | Sequence[str]) -> dict[str, str]:
    """Reference level per factor: explicit, else the first level in code-point order."""
    ref: dict[str, str] = {}
    aliases = {"language": "language", language: "language", "task": "task"}
    if not isinstance(task, (list, tuple)):
        aliases[task] = "task"
    for key, value in dict(reference or {}).items():
        role = aliases.get(str(key))
        if role is None:
            raise DataError(f"reference key {key!r} is not 'language' or 'task' (the fixed factors of the model)")
        ref[role] = str(value)
    for role in ROLES:
        levels = sorted(frame[role].unique())
        if role not in ref:
            ref[role] = levels[0]
        elif ref[role] not in levels:
            raise DataError(f"reference {role} {ref[role]!r} is not among the {role}s in the data "
                            f"({', '.join(map(repr, levels[:10]))}{', ...' if len(levels) > 10 else ''})")
    return ref


@dataclass(frozen=True)
class _Design:
    """Integer codes of the records and the mapping from coefficients to effects."""

    models: tuple[str, ...]
    languages: tuple[str, ...]  # reference first, then code-point order
    tasks: tuple[str, ...]
    model_codes: np.ndarray
    language_codes: np.ndarray
    task_codes: np.ndarray
    terms: tuple[str, ...]
    lang_cols: np.ndarray  # column of beta holding alpha for languages[1:]
    task_cols: np.ndarray

    def effects(self, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mu, alpha, tau) from a (B, p) coefficient matrix; reference effects are 0."""
        beta = np.atleast_2d(beta)
        b = beta.shape[0]
        alpha = np.zeros((b, len(self.languages)))
        tau = np.zeros((b, len(self.tasks)))
        alpha[:, 1:] = beta[:, self.lang_cols]
        tau[:, 1:] = beta[:, self.task_cols]
        return beta[:, 0], alpha, tau

    def potential(self, beta: np.ndarray) -> np.ndarray:
        """PP per record, (B, n)."""
        mu, alpha, tau = self.effects(beta)
        return mu[:, None] + alpha[:, self.language_codes] + tau[:, self.task_codes]

    def lp_contrasts(self, convention: str) -> np.ndarray:
        """The (L, p) matrix whose rows give ``LP_l = L_l' beta``: 1 for the intercept, 1 for the
        language's own coefficient (none for the reference language), and the task-averaging
        weight on every task coefficient -- ``1 / (T - 1)`` (``published``: mean over the
        non-reference task effects) or ``1 / T`` (``all_tasks``: the reference's zero counts)."""
        n_tasks = len(self.tasks)
        L = np.zeros((len(self.languages), len(self.terms)))
        L[:, 0] = 1.0
        L[np.arange(1, len(self.languages)), self.lang_cols] = 1.0
        L[:, self.task_cols] = 1.0 / (n_tasks - 1 if convention == "published" else n_tasks)
        return L

    def language_potential(self, beta: np.ndarray, convention: str) -> np.ndarray:
        """LP per language, (B, L): ``beta @ L.T`` with :meth:`lp_contrasts`."""
        return np.atleast_2d(beta) @ self.lp_contrasts(convention).T


def _build_design(frame, fixed_terms: Sequence[str], ref: Mapping[str, str]) -> _Design:
    terms = tuple(str(t) for t in fixed_terms)
    index = {t: i for i, t in enumerate(terms)}
    if not terms or terms[0] != "(Intercept)":
        raise DataError(f"unexpected fixed-effect terms from R: {terms[:5]}")

    def levels_of(role: str) -> tuple[str, ...]:
        rest = sorted(x for x in frame[role].unique() if x != ref[role])
        return (ref[role], *rest)

    languages, tasks = levels_of("language"), levels_of("task")
    cols = {}
    for role, levels in (("language", languages), ("task", tasks)):
        missing = [lv for lv in levels[1:] if role + lv not in index]
        if missing:
            raise DataError(
                f"the {role} effect of {', '.join(map(repr, missing[:5]))} cannot be estimated: the language x task "
                "design is not connected (lme4 dropped rank-deficient columns). Every language must share a task "
                "with the rest of the data; drop the isolated records or merge the tasks"
            )
        cols[role] = np.array([index[role + lv] for lv in levels[1:]], dtype=np.int64)
    models = tuple(sorted(frame["model"].unique()))
    code = lambda col, lv: pd.Categorical(frame[col], categories=list(lv)).codes.astype(np.int64)  # noqa: E731
    return _Design(models, languages, tasks, code("model", models), code("language", languages),
                   code("task", tasks), terms, cols["language"], cols["task"])


# ----------------------------------------------------------------------------- PRR statistics
def _prr_by_model(prr: np.ndarray, model_codes: np.ndarray, n_models: int):
    """Per-model n, mean, SD (n - 1) and CV of PRR over the defined (non-NaN) values.

    ``prr`` is (B, n); returns four (B, M) arrays. Two-pass variance."""
    prr = np.atleast_2d(prr)
    ok = np.isfinite(prr)
    onehot = np.zeros((prr.shape[1], n_models))
    onehot[np.arange(prr.shape[1]), model_codes] = 1.0
    x = np.where(ok, prr, 0.0)
    count = ok.astype(float) @ onehot
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (x @ onehot) / count
        dev = np.where(ok, prr - mean[:, model_codes], 0.0)
        var = ((dev * dev) @ onehot) / (count - 1.0)
        var[count < 2] = np.nan
        sd = np.sqrt(var)
        cv = sd / mean
    return count, mean, sd, cv


def _rank_desc(values: np.ndarray) -> np.ndarray:
    """Rank 1 = largest (ties share the smallest rank); NaN stays NaN. Works along the last axis."""
    v = np.asarray(values, dtype=float)
    r = rankdata(np.where(np.isnan(v), np.inf, -v), method="min", axis=-1).astype(float)
    r[np.isnan(v)] = np.nan
    return r


def _diagnostics_table(residuals: np.ndarray, blups: np.ndarray, language_codes: np.ndarray):
    """Shapiro-Wilk (R's ``shapiro.test``; D'Agostino-Pearson above 5,000 values) on the
    conditional residuals and the model BLUPs, and median-centred Levene across languages."""
    rows = []
    for target, values in (("conditional residuals", residuals), ("model random effects (BLUPs)", blups)):
        try:
            nt = normality_test(values)
            stat, p, method = nt.statistic, nt.p_value, nt.method + " (as R shapiro.test)"
        except ValueError as exc:  # n < 3 or constant values (e.g. a zero model variance)
            stat, p, method = np.nan, np.nan, f"not applicable: {exc}"
        rows.append({"test": "shapiro_wilk", "target": target, "statistic": stat, "df_num": np.nan,
                     "df_den": np.nan, "p_value": p, "method": method})
    lev = levene_median(residuals, language_codes)
    rows.append({"test": "levene", "target": "conditional residuals across languages", "statistic": lev.statistic,
                 "df_num": float(lev.df_num), "df_den": float(lev.df_den), "p_value": lev.p_value,
                 "method": "Levene (center = median), as car::leveneTest"})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True, repr=False)
class DisparityBootstrap(ResultMixin):
    """Parametric-bootstrap intervals for the disparity metrics (see
    :meth:`LanguageDisparityResult.bootstrap`).

    ``models`` (the main table, also ``table``): model, statistic (``mean_prr`` / ``cv_prr``),
    estimate, boot_mean, std_error, conf_low, conf_high, observed_rank, expected_rank,
    rank_conf_low, rank_conf_high (rank 1 = highest mean PRR, resp. lowest CV-PRR).
    ``languages``: language, potential, boot_mean,
    std_error, conf_low, conf_high, observed_rank, expected_rank, rank_conf_low, rank_conf_high
    (rank 1 = highest LP). Percentile intervals; rank intervals are ``inverted_cdf`` quantiles.
    ``replicates``: the refitted fixed effects and standard deviations per replicate.
    ``random_state``: the int given to R's ``set.seed`` (drawn from a SeedSequence or Generator
    when one was passed), so ``random_state=result.random_state`` repeats the draws.
    """

    models: Any
    languages: Any
    replicates: Any
    n_resamples: int
    n_used: int
    n_failed: int
    n_singular: int
    n_nonconverged: int
    level: float
    random_state: int
    re: str
    scores: str
    lp_convention: str
    timing: dict[str, float]
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any] = field(default_factory=dict)

    _main_table = "models"
    _print_tables = ("models", "languages")

    @property
    def table(self):
        """The main table: ``models``."""
        return self.models

    @property
    def _title(self) -> str:  # type: ignore[override]
        return (f"Parametric bootstrap of the language disparity metrics ({self.n_used}/{self.n_resamples} ML refits, "
                f"re={self.re}, PRR from {self.scores} scores, {self.level:.0%} percentile intervals)")

    def _scalars(self):
        return [("random_state", self.random_state), ("failed refits", self.n_failed), ("singular refits", self.n_singular),
                ("non-converged refits", self.n_nonconverged),
                ("time (s)", f"{self.timing.get('total', float('nan')):.2f}, of which R refits "
                             f"{self.timing.get('r_refit', float('nan')):.2f}")]


@dataclass(frozen=True, repr=False)
class DisparityRobustness(ResultMixin):
    """The analysis repeated without the ``k`` records with the largest absolute conditional
    residuals (see :meth:`LanguageDisparityResult.robustness`).

    ``dropped``: the removed records (row, model, language, task, score, pp, residual).
    ``models``: model, mean_prr, mean_prr_robust, rank_mean_prr, rank_mean_prr_robust, cv_prr,
    cv_prr_robust, rank_cv_prr, rank_cv_prr_robust. ``languages``: language, potential,
    potential_robust, rank_potential, rank_potential_robust. ``changes``: one row per unit whose
    rank moved (the main table, also ``table``): ranking (``mean_prr``, ``cv_prr``,
    ``potential``), unit, rank, rank_robust, shift.
    ``agreement``: ranking, spearman_rho, kendall_tau, n_changed. ``refit``: the full result of
    the reduced analysis.
    """

    k: int
    dropped: Any
    models: Any
    languages: Any
    changes: Any
    agreement: Any
    refit: Any = field(repr=False)
    warnings: tuple[ResultWarning, ...] = ()

    _main_table = "changes"
    _print_tables = ("agreement", "changes", "dropped")

    @property
    def table(self):
        """The main table: ``changes``."""
        return self.changes

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"Robustness: analysis without the {self.k} records with the largest |conditional residual|"

    def rankings_changed(self) -> list[str]:
        """Names of the rankings in which at least one unit moved."""
        return sorted(set(self.changes["ranking"]))


@dataclass(frozen=True, repr=False)
class PotentialIntervals(ResultMixin):
    """Analytic t intervals for the language potential (see
    :meth:`LanguageDisparityResult.potential_intervals`).

    ``table``: language, potential (the analysis' ML value, as in ``language_potential``),
    estimate (``L_l' beta`` of the fit the interval comes from: equal to ``potential`` for
    ``estimator="ML"``, the REML fixed effects otherwise), std_error, df, conf_low, conf_high,
    rank_potential; sorted by potential. ``contrasts``: the contrast matrix ``L`` (language x
    fixed-effect term). ``estimator``: ``REML`` (the model refitted by REML for the intervals)
    or ``ML``.
    """

    table: Any
    contrasts: Any
    level: float
    df_method: str
    estimator: str
    lp_convention: str
    n_models: int
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)

    _main_table = "table"
    _print_tables = ("table",)

    @property
    def _title(self) -> str:  # type: ignore[override]
        return (f"Language potential, {self.level:.0%} t intervals (lmerTest::contest, {self.df_method} df, "
                f"{self.estimator} fit; LP convention {self.lp_convention!r})")

    def _scalars(self):
        df = self.table["df"].to_numpy(dtype=float)
        return [("models", self.n_models), ("df range", f"{np.nanmin(df):.3g} - {np.nanmax(df):.3g}")]


@dataclass(frozen=True, repr=False)
class LanguageDisparityResult(ResultMixin):
    """Result of :func:`language_disparity`.

    ``records``: row (the input's index label), model, language, task, score, pp, prr, residual.
    ``by_model`` (the main table, also ``table``): model, n, mean_prr, std_prr, cv_prr (n
    counts records with a defined PRR).
    ``language_potential``: language, potential, rank_potential, mean_score, rank_mean_score,
    sorted by potential. ``diagnostics``: test, target, statistic, df_num, df_den, p_value, method.
    ``fit``: the ML :class:`~mixedeval.LMMFit` (columns renamed to score, model, language, task).
    ``reference``: reference level per factor; ``lp_convention``: ``published`` or ``all_tasks``.
    """

    records: Any
    by_model: Any
    language_potential: Any
    diagnostics: Any
    fit: Any = field(repr=False)
    reference: dict[str, str] = field(default_factory=dict)
    lp_convention: str = "published"
    pp_threshold: float = 0.0
    n_aggregates_dropped: int = 0
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    _frame: Any = field(default=None, repr=False, compare=False)
    _design: Any = field(default=None, repr=False, compare=False)
    _options: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    _main_table = "by_model"
    _print_tables = ("by_model", "language_potential", "diagnostics")

    @property
    def table(self):
        """The main table: ``by_model``."""
        return self.by_model

    @property
    def _title(self) -> str:  # type: ignore[override]
        return ("Language disparity (Hu, Vulic & Korhonen 2025): " + FORMULA + " by ML; "
                f"LP convention {self.lp_convention!r}")

    def _scalars(self):
        f = self.fit
        return [("records", f.nobs), ("models / languages / tasks",
                                      f"{len(self.by_model)} / {len(self.language_potential)} / {f.data['task'].nunique()}"),
                ("reference", self.reference), ("logLik (ML)", f"{f.loglik:.6g}"), ("singular", f.singular)]

    def to_dict(self) -> dict[str, Any]:
        keys = ("records", "by_model", "language_potential", "diagnostics", "reference", "lp_convention",
                "pp_threshold", "n_aggregates_dropped", "warnings", "provenance")
        return {**{k: jsonable(getattr(self, k)) for k in keys}, "fit": self.fit.to_dict()}

    # -------------------------------------------------------------- uncertainty
    def potential_intervals(self, level: float = 0.95, df_method: str = "satterthwaite",
                            reml: bool = True) -> PotentialIntervals:
        """Analytic t intervals for the language potential under the result's LP convention.

        ``LP_l = L_l' beta`` is linear in the fixed effects (row ``L_l``: 1 for the intercept,
        1 for the language's coefficient, ``1 / (T - 1)`` (published) or ``1 / T``
        (all_tasks) on each task coefficient; see ``contrasts``). Estimate, standard error
        ``sqrt(L_l' V L_l)``, denominator df and the t interval come from one call of
        ``lmerTest::contest(m, L, joint = FALSE, confint = TRUE, level, ddf)`` (Kuznetsova,
        Brockhoff & Christensen 2017): ``df_method="satterthwaite"`` (default) or
        ``"kenward-roger"`` (pbkrtest's adjusted covariance and df; builds n x n matrices).

        ``reml=True`` (default) refits the model by REML (``update(m, REML = TRUE)``) for the
        intervals: ML underestimates the variance components, and LP's error is dominated by the
        mean of the M model effects, whose variance has about M - 1 df. Coverage of nominal 95%
        (``benchmarks/bench_disparity.py --coverage``; Monte-Carlo SE 0.007-0.027): REML +
        Satterthwaite 0.941 / 0.942 / 0.952 (8 and 13 models x 6 languages x 4 tasks, and the
        bundled records' unbalanced 13 x 53 x 15 design), ML + Satterthwaite 0.922 / 0.928 /
        0.942, bootstrap percentile 0.883 / 0.875 / 0.916; Kenward-Roger equals Satterthwaite
        in the balanced designs and costs ~16 s on the bundled records (pbkrtest's n x n
        matrices). With REML the fixed effects -- and so the interval's
        centre ``estimate`` -- differ slightly from the ML ``potential`` in unbalanced data
        (identical in balanced data). ``reml=False`` uses the ML fit itself (Satterthwaite
        only: Kenward-Roger is defined for REML fits, and is refused with ``reml=False``).

        Rank intervals are not analytic: use :meth:`bootstrap` for those.
        """
        level = require_level(level)
        key = normalize_df_method(df_method)
        if key == "asymptotic":
            raise DataError("df_method='asymptotic' (z intervals) is not offered: with few models the t df are what "
                            "makes the intervals cover; use 'satterthwaite' or 'kenward-roger'")
        if key == "kenward-roger" and not reml:
            raise DataError("Kenward-Roger df are defined for REML fits only; use reml=True (the default: the model "
                            "is refitted by REML for the intervals) or df_method='satterthwaite'")
        if reml:
            if "reml_fit" not in self._cache:
                self._cache["reml_fit"] = self.fit.refit(reml=True)
            fit = self._cache["reml_fit"]
        else:
            fit = self.fit
        d: _Design = self._design
        L = d.lp_contrasts(self.lp_convention)
        ddf = {"satterthwaite": "Satterthwaite", "kenward-roger": "Kenward-Roger"}[key]

        res = _bridge.disparity_contest(fit, L, ddf=ddf, level=level)
        v = {k: np.atleast_1d(np.asarray(res.value[k], dtype=float)) for k in
             ("estimate", "std_error", "df", "conf_low", "conf_high")}
        lp = self.language_potential.set_index("language").loc[list(d.languages)]
        table = pd.DataFrame({"language": list(d.languages), "potential": lp["potential"].to_numpy(), **v,
                              "rank_potential": lp["rank_potential"].to_numpy()})
        table = table.sort_values(["rank_potential", "language"], kind="stable").reset_index(drop=True)
        est = "REML" if reml else "ML"
        warnings = [w for w in fit.warnings if w.kind == "convergence"] + r_warnings(res)
        if fit.singular:
            warnings.append(ResultWarning("singular", f"the {est} fit is singular (model variance estimated as zero): "
                                          "the intervals ignore the model-to-model variation", "lme4"))
        prov = dict(self.provenance)
        prov.update({"method": f"lmerTest::contest(m, L, joint = FALSE, confint = TRUE, ddf = {ddf!r})",
                     "estimator": est, "level": level})
        contrasts = pd.DataFrame(L, index=pd.Index(list(d.languages), name="language"), columns=list(d.terms))
        return PotentialIntervals(table=table, contrasts=contrasts, level=level, df_method=key, estimator=est,
                                  lp_convention=self.lp_convention, n_models=len(d.models),
                                  warnings=tuple(warnings), provenance=prov)

    def bootstrap(self, n_resamples: int = 200, random_state: Any = 1, progress: bool = True, level: float = 0.95,
                  re: str = "unconditional", scores: str = "observed", chunk_size: int = 25,
                  executor: Any = None) -> DisparityBootstrap:
        """Parametric bootstrap: simulate ``n_resamples`` responses from the fit
        (``fit.simulate(n_resamples, random_state, re)``, i.e. ``lme4::simulate``; an int
        ``random_state`` is R's ``set.seed``, a SeedSequence or Generator gives one such int),
        refit each by ML in one R loop (``lme4::refit``, ``r/disparity.R``), and recompute PP,
        PRR, mean/CV-PRR and LP in numpy from each replicate's fixed effects.

        ``scores="observed"`` (default): a replicate's PRR is observed score / replicate PP -- the
        uncertainty of the estimated potential. ``scores="simulated"`` uses the simulated scores
        (adds residual noise); it needs ``re="conditional"`` (BLUPs kept), because with new model
        effects a model's simulated scores no longer belong to that model. Replicates whose refit
        fails are dropped (counted and warned); singular or non-converged refits are kept and
        counted. ``chunk_size`` replicates are refitted per R call (the progress bar's step).
        ``executor`` (None, an int or ``"processes"``, or a ``dask.distributed.Client``) runs the
        refits on workers; the responses are simulated here, so the replicates are the same.

        Percentile intervals do not carry the uncertainty of the estimated model variance (and
        ML underestimates it): LP's error is dominated by the mean of the M model effects, whose
        variance has about M - 1 degrees of freedom, so the intervals behave like z intervals
        where t_(M-1) would be needed. In a simulation (``benchmarks/bench_disparity.py
        --coverage``) 95% LP intervals covered 0.88 with 8 models (200 data sets) and 0.875 with
        13 models (100 data sets). Read them as a lower bound on the uncertainty; for LP use
        :meth:`potential_intervals` (analytic REML + Satterthwaite t intervals).
        """
        if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 2:
            raise DataError(f"n_resamples must be an integer >= 2, got {n_resamples!r}")
        level = require_level(level)
        if re not in ("unconditional", "conditional"):
            raise DataError(f"re must be 'unconditional' or 'conditional', not {re!r}")
        if scores not in ("observed", "simulated"):
            raise DataError(f"scores must be 'observed' or 'simulated', not {scores!r}")
        if scores == "simulated" and re == "unconditional":
            raise DataError("scores='simulated' needs re='conditional': with new model effects (re='unconditional') "
                            "a model's simulated scores are not that model's, so its PRR would be meaningless")
        g = refit_guard("the language-disparity bootstrap", int(n_resamples), self.fit.nobs, executor)
        seed = r_seed(random_state)
        t0 = time.perf_counter()
        ysim = self.fit.simulate(int(n_resamples), random_state=seed, re=re)
        t_sim = time.perf_counter() - t0
        beta, extra, t_refit, problems = _refit_replicates(self.fit, ysim, int(chunk_size), progress, executor, g)
        t1 = time.perf_counter()
        ok = np.all(np.isfinite(beta), axis=1)
        num = ysim[:, ok].T if scores == "simulated" else self._frame["score"].to_numpy(dtype=float)[None, :]
        models, languages, n_undef = self._bootstrap_tables(beta[ok], num, 1.0 - float(level))
        reps = _replicates_frame(beta, list(self._design.terms), extra)
        n_fail = int((~ok).sum())
        n_sing = int(np.nansum(extra["singular"][ok].astype(float)))
        n_nonconv = int(np.sum(extra["converged"][ok] == False))  # noqa: E712
        warnings = _bootstrap_warnings(n_fail, n_sing, n_nonconv, int(ok.sum()), problems)
        if n_undef:
            warnings.append(ResultWarning(
                "undefined_prr", f"{n_undef} replicate PRR values (over {int(ok.sum())} replicates) have PP <= "
                f"{self.pp_threshold:g}; they are left out of that replicate's per-model statistics"))
        timing = {"simulate": t_sim, "r_refit": t_refit, "numpy": time.perf_counter() - t1,
                  "total": time.perf_counter() - t0}
        prov = dict(self.provenance)
        prov.update({"method": "parametric bootstrap (lme4::simulate + lme4::refit, ML)", "random_state": seed,
                     "n_resamples": int(n_resamples), "re": re, "scores": scores, "interval": "percentile"})
        return DisparityBootstrap(models=models, languages=languages, replicates=reps, n_resamples=int(n_resamples),
                                  n_used=int(ok.sum()), n_failed=n_fail, n_singular=n_sing,
                                  n_nonconverged=n_nonconv, level=float(level), random_state=seed, re=re,
                                  scores=scores, lp_convention=self.lp_convention, timing=timing,
                                  warnings=tuple(warnings), provenance=prov)

    def _bootstrap_tables(self, beta_ok: np.ndarray, num: np.ndarray, alpha: float):
        """``(models, languages, n_undefined)``: percentile and rank intervals of mean PRR,
        CV-PRR and LP from the usable replicates' fixed effects (``num``: the PRR numerators)."""
        d: _Design = self._design
        prr = _safe_prr(num, d.potential(beta_ok), self.pp_threshold)
        _, mean_b, _, cv_b = _prr_by_model(prr, d.model_codes, len(d.models))
        lp_b = d.language_potential(beta_ok, self.lp_convention)
        bm = self.by_model.set_index("model").loc[list(d.models)]
        lp_obs = self.language_potential.set_index("language").loc[list(d.languages), "potential"].to_numpy()
        tables = []
        for stat, boot, est, sign in (("mean_prr", mean_b, bm["mean_prr"].to_numpy(), 1.0),
                                      ("cv_prr", cv_b, bm["cv_prr"].to_numpy(), -1.0)):
            t = _interval_table(boot, est, sign, alpha)
            t.insert(0, "statistic", stat)
            t.insert(0, "model", list(d.models))
            tables.append(t)
        models = pd.concat(tables, ignore_index=True)
        languages = _interval_table(lp_b, lp_obs, 1.0, alpha).rename(columns={"estimate": "potential"})
        languages.insert(0, "language", list(d.languages))
        languages = languages.sort_values(["observed_rank", "language"], kind="stable").reset_index(drop=True)
        return models, languages, int(np.sum(~np.isfinite(prr)))

    def robustness(self, k: int = 10) -> DisparityRobustness:
        """Refit without the ``k`` records with the largest absolute conditional residuals
        (``residuals(m)``; the paper's Appendix C uses k = 10) and compare the rankings by mean
        PRR, by CV-PRR and by language potential."""
        n = len(self._frame)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < n:
            raise DataError(f"k must be an integer between 1 and {n - 1} (the number of records to drop), got {k!r}")
        resid = self.records["residual"].to_numpy()
        drop = np.argsort(-np.abs(resid), kind="stable")[: int(k)]
        keep = np.ones(n, dtype=bool)
        keep[drop] = False
        reduced = self._frame.iloc[keep]
        opts = dict(self._options)
        ref = {r: lv for r, lv in self.reference.items() if lv in set(reduced[r])}
        refit = _analyse(reduced, ref, n_aggregates=0, pre_warnings=[], **opts)
        dropped = self.records.iloc[drop][["row", "model", "language", "task", "score", "pp", "residual"]]
        dropped = dropped.reset_index(drop=True)
        full, red = _model_ranks(self.by_model), _model_ranks(refit.by_model)
        models = full.merge(red, on="model", how="left", suffixes=("", "_robust"))
        lp_cols = ["language", "potential", "rank_potential"]
        languages = self.language_potential[lp_cols].merge(refit.language_potential[lp_cols], on="language",
                                                           how="left", suffixes=("", "_robust"))
        changes, agreement = [], []
        for ranking, tab, unit, col in (("mean_prr", models, "model", "rank_mean_prr"),
                                        ("cv_prr", models, "model", "rank_cv_prr"),
                                        ("potential", languages, "language", "rank_potential")):
            a, b = tab[col].to_numpy(float), tab[col + "_robust"].to_numpy(float)
            moved = ~(a == b)
            for u, ra, rb in zip(tab.loc[moved, unit], a[moved], b[moved]):
                changes.append({"ranking": ranking, "unit": u, "rank": ra, "rank_robust": rb, "shift": rb - ra})
            both = np.isfinite(a) & np.isfinite(b)
            agreement.append({"ranking": ranking, "spearman_rho": float(spearmanr(a[both], b[both])[0]),
                              "kendall_tau": float(kendalltau(a[both], b[both])[0]), "n_changed": int(moved.sum())})
        warnings = list(refit.warnings)
        lost = sorted(set(self.reference.values()) - set(ref.values()))
        if lost:
            warnings.append(ResultWarning("reference_changed", f"reference level(s) {lost} lost all records; the "
                                          f"robustness refit uses {refit.reference}"))
        changes_df = pd.DataFrame(changes, columns=["ranking", "unit", "rank", "rank_robust", "shift"])
        return DisparityRobustness(k=int(k), dropped=dropped, models=models, languages=languages, changes=changes_df,
                                   agreement=pd.DataFrame(agreement), refit=refit, warnings=tuple(warnings))


def _replicates_frame(beta: np.ndarray, terms: list[str], extra: Mapping[str, np.ndarray]):
    """The replicates table: one column per fixed-effect term, then the ``extra`` columns."""
    reps = pd.DataFrame(beta, columns=terms)
    for k, v in extra.items():
        reps[k] = v
    return reps


def _model_ranks(by_model):
    t = by_model[["model", "mean_prr", "cv_prr"]].copy()
    t["rank_mean_prr"] = _rank_desc(t["mean_prr"].to_numpy())
    t["rank_cv_prr"] = _rank_desc(-t["cv_prr"].to_numpy())
    return t[["model", "mean_prr", "rank_mean_prr", "cv_prr", "rank_cv_prr"]]


def _safe_prr(scores: np.ndarray, pp: np.ndarray, threshold: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pp > threshold, scores / np.where(pp > threshold, pp, 1.0), np.nan)


def _interval_table(boot: np.ndarray, estimate: np.ndarray, sign: float, alpha: float):
    """Percentile intervals of the columns of ``boot`` and rank summaries (rank 1 = largest of
    ``sign * value``)."""
    ranks = _rank_desc(sign * boot)
    with pywarnings.catch_warnings():  # all-NaN columns (no usable replicate) give NaN intervals
        pywarnings.simplefilter("ignore", RuntimeWarning)
        q = np.nanquantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)
        boot_mean = np.nanmean(boot, axis=0)
        std_error = np.nanstd(boot, axis=0, ddof=1)
        expected_rank = np.nanmean(ranks, axis=0)
    lo = [np.quantile(r[np.isfinite(r)], alpha / 2, method="inverted_cdf") if np.isfinite(r).any() else np.nan
          for r in ranks.T]
    hi = [np.quantile(r[np.isfinite(r)], 1 - alpha / 2, method="inverted_cdf") if np.isfinite(r).any() else np.nan
          for r in ranks.T]
    return pd.DataFrame({
        "estimate": estimate,
        "boot_mean": boot_mean,
        "std_error": std_error,
        "conf_low": q[0],
        "conf_high": q[1],
        "observed_rank": _rank_desc(sign * np.asarray(estimate, dtype=float)),
        "expected_rank": expected_rank,
        "rank_conf_low": lo,
        "rank_conf_high": hi,
    })


def _refit_task(token: str, ysim: np.ndarray, model_bytes: bytes) -> dict[str, Any]:
    """In a worker: the caller's ML model (:func:`worker_model`), then ``lme4::refit`` of every
    column of ``ysim``."""
    return _bridge.disparity_refit_fixef(worker_model(token, model_bytes), ysim)


def _refit_on_workers(fit, ysim: np.ndarray, chunk_size: int, progress: bool, runner: Any,
                      g: LoopGuard) -> list[dict[str, Any]]:
    token = uuid.uuid4().hex
    tasks = [(token, ysim[:, a:a + chunk_size]) for a in range(0, ysim.shape[1], chunk_size)]
    return g.map(runner, _refit_task, tasks, first_units=chunk_size, shared=_bridge.serialize_model(fit),
                 progress=progress, desc="parametric bootstrap refits")


def _refit_replicates(fit, ysim: np.ndarray, chunk_size: int, progress: bool, executor: Any = None,
                      g: LoopGuard | None = None):
    """Run the R refit loop over ``ysim`` columns in chunks (one R call per chunk; on the
    ``executor``'s workers when one is given); the first chunk is timed by the guard ``g``."""
    n_rep = ysim.shape[1]
    chunk_size = max(1, min(int(chunk_size), n_rep))
    runner = resolve_executor(executor)
    g = g or LoopGuard("the parametric bootstrap refits", n_rep, count=f"{n_rep} replicates", unit="refits", fix="")
    g.start()
    if runner.name != "in-process":
        t = time.perf_counter()
        parts = _refit_on_workers(fit, ysim, chunk_size, progress, runner, g)
        return _combine_refits(parts, time.perf_counter() - t)
    bar = None
    if progress:
        bar = tqdm(total=n_rep, desc="parametric bootstrap refits", unit="refit", leave=False,
                   disable=bar_disabled(progress))
    parts: list[dict[str, Any]] = []
    t_refit = 0.0
    try:
        for start in range(0, n_rep, chunk_size):
            stop = min(n_rep, start + chunk_size)
            t = time.perf_counter()
            v = _bridge.disparity_refit_fixef(fit, ysim[:, start:stop])
            t_refit += time.perf_counter() - t
            parts.append(v)
            g.block_done(stop)
            if bar is not None:
                bar.update(stop - start)
    finally:
        if bar is not None:
            bar.close()
    return _combine_refits(parts, t_refit)


def _combine_refits(parts: list[dict[str, Any]], t_refit: float):
    p = len(parts[0]["terms"]) if not isinstance(parts[0]["terms"], str) else 1
    beta = np.vstack([np.asarray(v["beta"], dtype=float).reshape(-1, p) for v in parts])
    extra = {
        "sd_model": np.concatenate([np.atleast_1d(np.asarray(v["sd_group"], dtype=float)) for v in parts]),
        "sigma": np.concatenate([np.atleast_1d(np.asarray(v["sigma"], dtype=float)) for v in parts]),
        "singular": np.concatenate([np.atleast_1d(np.asarray(v["singular"], dtype=object)) for v in parts]),
        "converged": np.concatenate([np.atleast_1d(np.asarray(v["converged"], dtype=object)) for v in parts]),
    }
    problems = [str(s) for v in parts for s in np.atleast_1d(np.asarray(v["problem"], dtype=object)) if s]
    return beta, extra, t_refit, problems


def _bootstrap_warnings(n_fail: int, n_sing: int, n_nonconv: int, n_used: int, problems: list[str]):
    out = []
    if n_fail:
        first = next((p for p in problems if p.startswith("error:")), "")
        out.append(ResultWarning("bootstrap_failed", f"{n_fail} refits failed and were dropped ({first})", "lme4"))
    if n_sing:
        out.append(ResultWarning("singular", f"{n_sing} of {n_used} bootstrap refits are singular (model variance "
                                 "estimated as zero); they are kept", "lme4"))
    if n_nonconv:
        first = next((p for p in problems if not p.startswith("error:")), "")
        out.append(ResultWarning("convergence", f"{n_nonconv} of {n_used} bootstrap refits reported convergence "
                                 f"problems; they are kept (first: {first})", "lme4"))
    if n_used < 2:
        out.append(ResultWarning("bootstrap_failed", "fewer than 2 usable refits: no intervals", "mixedeval"))
    return out


# ----------------------------------------------------------------------------- the workflow
def _analyse(frame, ref: Mapping[str, str], *, n_aggregates: int, pre_warnings: list[ResultWarning],
             lp_convention: str, pp_threshold: float, optimizer: str) -> LanguageDisparityResult:
    ref = _resolve_reference(frame, ref, "language", "task")
    fit = lmm(FORMULA, frame.reset_index(drop=True), reml=False, optimizer=optimizer, reference=dict(ref))
    design = _build_design(frame, fit.fixed["term"].tolist(), ref)
    beta = fit.fixed["estimate"].to_numpy(dtype=float)
    pp = design.potential(beta)[0]
    y = frame["score"].to_numpy(dtype=float)
    prr = _safe_prr(y, pp, pp_threshold)
    warnings = list(pre_warnings) + list(fit.warnings)
    undefined = ~np.isfinite(prr)
    if undefined.any():
        bad = frame.loc[undefined]
        examples = ", ".join(f"{m}/{lang}/{t} (PP={p:.4g})" for m, lang, t, p in
                             zip(bad["model"][:3], bad["language"][:3], bad["task"][:3], pp[undefined][:3]))
        warnings.append(ResultWarning(
            "undefined_prr",
            f"{int(undefined.sum())} records have performance potential <= {pp_threshold:g}: their PRR is undefined "
            f"(NaN) and they are left out of the per-model statistics, e.g. {examples}",
        ))
    residuals = fit.residuals()
    records = pd.DataFrame({"row": frame.index.to_numpy(), "model": frame["model"].to_numpy(),
                            "language": frame["language"].to_numpy(), "task": frame["task"].to_numpy(),
                            "score": y, "pp": pp, "prr": prr, "residual": residuals})
    count, mean, sd, cv = _prr_by_model(prr, design.model_codes, len(design.models))
    by_model = pd.DataFrame({"model": list(design.models), "n": count[0].astype(int), "mean_prr": mean[0],
                             "std_prr": sd[0], "cv_prr": cv[0]})
    lp = design.language_potential(beta, lp_convention)[0]
    mean_score = frame.groupby("language")["score"].mean().reindex(list(design.languages)).to_numpy()
    lang = pd.DataFrame({"language": list(design.languages), "potential": lp,
                         "rank_potential": _rank_desc(lp).astype(int), "mean_score": mean_score,
                         "rank_mean_score": _rank_desc(mean_score).astype(int)})
    lang = lang.sort_values(["rank_potential", "language"], kind="stable").reset_index(drop=True)
    blups = fit.ranef()["model"].iloc[:, 0].to_numpy(dtype=float)
    diagnostics = _diagnostics_table(residuals, blups, design.language_codes)
    prov = dict(fit.provenance)
    prov.update({"workflow": "language_disparity", "reference_paper": "Hu, Vulic & Korhonen (EMNLP 2025)",
                 "lp_convention": lp_convention, "formula": FORMULA})
    options = {"lp_convention": lp_convention, "pp_threshold": pp_threshold, "optimizer": optimizer}
    return LanguageDisparityResult(records=records, by_model=by_model, language_potential=lang,
                                   diagnostics=diagnostics, fit=fit, reference=dict(ref), lp_convention=lp_convention,
                                   pp_threshold=float(pp_threshold), n_aggregates_dropped=n_aggregates,
                                   warnings=tuple(warnings), provenance=prov, _frame=frame, _design=design,
                                   _options=options)


def language_disparity(
    data: Any,
    score: str = "score",
    model: str = "model",
    language: str = "language",
    task: str | Sequence[str] = "task",
    reference: Mapping[str, Any] | None = None,
    lp_convention: str = "published",
    *,
    drop_aggregates: bool = False,
    aggregate_labels: Sequence[str] = AGGREGATE_LABELS,
    pp_threshold: float = 0.0,
    optimizer: str = "nloptwrap",
) -> LanguageDisparityResult:
    """Performance potential, realisation ratio (mean, SD, CV per model) and language potential
    (Hu, Vulić & Korhonen 2025) from ``score ~ language + task + (1|model)`` fitted by ML.

    Parameters
    ----------
    data : one row per evaluation record (model, language, task, score); never modified.
    score, model, language : column names.
    task : the task column, or a list of columns (e.g. ``["dataset", "metric"]``) joined with "/".
    reference : reference level per factor, e.g. ``{"language": "en"}`` (keys ``language`` /
        ``task`` or the column names); default the first level in code-point order (the
        authors' choice). Reported in ``result.reference``.
    lp_convention : ``"published"`` (mean over the non-reference task effects, as the authors'
        released code and their Table 2) or ``"all_tasks"`` (mean over all tasks including the
        reference's zero, = equally weighted EMM; reference-invariant). See the module docstring.
    drop_aggregates : drop records whose language is an aggregate label (e.g. ``"avg"``); without
        it such records raise :class:`~mixedeval.DataError`.
    aggregate_labels : the labels treated as aggregates (case-insensitive); ``()`` disables the check.
    pp_threshold : records whose PP is at or below this value get an undefined (NaN) PRR and a
        warning; the default 0 only refuses non-positive potentials.
    optimizer : lme4 optimizer (``nloptwrap``, ``bobyqa``, ``Nelder_Mead``).

    Returns
    -------
    LanguageDisparityResult with ``records``, ``by_model``, ``language_potential``,
    ``diagnostics``, ``fit`` and ``warnings`` (singular or non-converged fits, dropped aggregates,
    undefined PRR); ``.potential_intervals()`` (analytic t intervals for LP), ``.bootstrap()``
    and ``.robustness()`` add uncertainty.
    """
    conv = LP_CONVENTIONS.get(str(lp_convention).lower())
    if conv is None:
        raise DataError(f"lp_convention {lp_convention!r} is not one of 'published', 'all_tasks'")
    try:
        threshold = float(pp_threshold)
    except (TypeError, ValueError):
        raise DataError(f"pp_threshold must be a number, got {pp_threshold!r}") from None
    if not np.isfinite(threshold):
        raise DataError(f"pp_threshold must be finite, got {pp_threshold!r}")
    if isinstance(aggregate_labels, str):
        aggregate_labels = (aggregate_labels,)
    frame, n_agg, warnings = _prepare_frame(data, score, model, language, task, bool(drop_aggregates),
                                            aggregate_labels)
    ref = _resolve_reference(frame, reference, language, task)
    return _analyse(frame, ref, n_aggregates=n_agg, pre_warnings=warnings, lp_convention=conv,
                    pp_threshold=threshold, optimizer=optimizer)


__all__ = ["DisparityBootstrap", "DisparityRobustness", "LanguageDisparityResult", "PotentialIntervals",
           "language_disparity"]
