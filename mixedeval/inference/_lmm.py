"""Linear mixed models fitted by R's lme4 through lmerTest.

:func:`lmm` fits ``lmerTest::lmer(formula, data, REML = reml)`` (Bates et al. 2015; Kuznetsova
et al. 2017) and returns an :class:`LMMFit` whose tables equal what R prints:

* ``fixed`` (also ``table``): ``summary(m, ddf = "Satterthwaite")$coefficients`` (or
  Kenward-Roger via pbkrtest, or asymptotic z), with Wald intervals
  ``estimate +- qt(1 - alpha/2, df) * std_error``. The statistic column is named after its
  reference distribution: ``t_value`` for Satterthwaite and Kenward-Roger df, ``z_value`` for
  ``df_method="asymptotic"`` (df = Inf), so a table's columns follow from its df method;
* ``random``: ``as.data.frame(VarCorr(m), order = "lower.tri")``: one row per variance
  (``std_dev`` set) and per covariance (``term2`` and ``corr`` set; ``variance`` holds the
  covariance), the residual last;
* ``sigma``, ``loglik`` (the REML criterion's log-likelihood for REML fits, as R prints it),
  ``aic``, ``bic``, ``nobs``, ``ngroups``; ``singular`` is ``lme4::isSingular(m, tol = 1e-4)``.

Factor coding: string columns become factors whose levels are sorted by code point; the first
level is the reference (treatment contrasts). Use a pandas Categorical to choose the order, or
``reference={"system": "Baseline"}``. Columns listed in ``factors`` (e.g. integer seeds) are
treated as categories.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from .._random import r_seed
from .._resources import check_fixed_effects_memory
from ..data._formula import parse_formula
from ..data.table import as_pandas
from ..data.validate import (
    ROWS_CHECKED,
    duplicated_rows_warning,
    require_finite,
    require_level,
    require_levels,
    require_nonempty,
    require_representable,
    require_supported_dtypes,
    require_unique_columns,
)
from ..diagnostics import diagnose_fit
from ..engine import _bridge
from ..engine.conditions import normalize as _normalize_condition, r_warnings
from ..errors import DataError
from ..results import ResultWarning
from ._fit_common import FitResultMixin
from ._options import DF_METHODS, OPTIMIZERS, normalize_df_method, normalize_optimizer
from .anova import anova, lmm_anova
from .emmeans import emmeans, emtrends, lmm_emm
from .optimizers import check_optimizers, lmm_check_optimizers
from .r2 import icc, r2

_VERSION_CACHE: dict[str, Any] = {}


def r_provenance() -> dict[str, Any]:
    """Versions of mixedeval, R and the R packages in use (cached per session)."""
    if not _VERSION_CACHE:
        v = _bridge.versions()
        _VERSION_CACHE.update(
            {"mixedeval": __version__, "r": v["r_version"], **{k: val for k, val in v["packages"].items()}}
        )
    return dict(_VERSION_CACHE)


def prepare_model_data(
    formula: str,
    data: Any,
    *,
    factors: Sequence[str] = (),
    levels: Mapping[str, Sequence[Any]] | None = None,
    reference: Mapping[str, Any] | None = None,
    allow_r_code: bool = False,
):
    """Validate ``data`` for ``formula`` and return ``(r_formula, frame, warnings)``.

    The formula is parsed and checked by :func:`mixedeval.data._formula.parse_formula` (an
    allow-list of columns, numbers, formula operators and functions; ``allow_r_code=True`` sends it
    verbatim); ``r_formula`` is the text R receives.

    ``frame`` is a private copy holding only the referenced columns, with categorical columns
    as pandas Categoricals carrying explicit levels. Raises :class:`DataError` for: empty data,
    names in the formula that are not columns, a non-numeric or non-finite response, a factor
    (fixed or grouping) with fewer than two levels.
    """
    if not isinstance(formula, str) or "~" not in formula:
        raise DataError(f"formula {formula!r} must be a string like 'score ~ system + (1|item)'")
    if isinstance(data, pd.DataFrame):
        require_unique_columns(data)
        df = data  # read only; the columns used are copied below
    else:
        df = as_pandas(data)
    require_nonempty(df)
    cols = [str(c) for c in df.columns]
    if list(df.columns) != cols:
        df = df.rename(columns=str)  # a new frame; the caller's is untouched
    parsed = parse_formula(formula, cols, allow_r_code=allow_r_code)
    used = list(parsed.columns)
    if not parsed.response_columns:
        raise DataError(f"the response of {formula!r} must be a data column or an expression of data columns "
                        f"(found {parsed.lhs!r})")
    frame = df[used].copy()
    for resp in parsed.response_columns:
        require_finite(frame, resp)
    require_supported_dtypes(frame, used)
    for c in used:  # numbers R cannot compute with: a DataError naming the column, before R
        require_representable(frame, c, "response column" if c in parsed.response_columns else "column")
    warnings: list[ResultWarning] = []
    levels = dict(levels or {})
    reference = dict(reference or {})
    for c in [*factors, *levels, *reference]:
        if c not in cols:
            raise DataError(f"factor column {c!r} is not in the data; available columns: {', '.join(cols[:20])}")
    groups = parsed.grouping
    for c in used:
        if c in parsed.response_columns:
            continue
        s = frame[c]
        is_cat = isinstance(s.dtype, pd.CategoricalDtype) or c in factors or c in levels or c in reference \
            or not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype)
        if pd.api.types.is_bool_dtype(s.dtype) and c not in factors:
            is_cat = False
        if is_cat:
            frame[c] = _as_categorical(s, c, levels.get(c), reference.get(c))
        if c in groups or is_cat:
            require_levels(frame, c, 2, "grouping factor" if c in groups else "factor")
    n_missing = int(frame.isna().any(axis=1).sum())
    if n_missing:
        which = [c for c in used if frame[c].isna().any()]
        warnings.append(ResultWarning(
            "missing_rows",
            f"{n_missing} row(s) with missing values in {', '.join(which)} were dropped by the model (na.omit)",
        ))

    check_fixed_effects_memory(frame, parsed)
    if not df.attrs.get(ROWS_CHECKED):  # workflows check the caller's whole table themselves
        dup = duplicated_rows_warning(df, parsed.response_columns[0])  # keys: every other column
        if dup is not None:
            warnings.append(dup)
    return parsed.r_formula, frame, warnings


def _as_categorical(s, name: str, levels: Sequence[Any] | None, ref: Any):
    if levels is not None:
        lv = [str(v) for v in levels]
        vals = s.astype(object).map(lambda v: None if v is None or (isinstance(v, float) and v != v) else str(v))
        extra = sorted(set(vals.dropna()) - set(lv))
        if extra:
            raise DataError(f"column {name!r} has values {extra[:5]} that are not in the levels given for it")
        cat = pd.Categorical(vals, categories=lv)
    elif isinstance(s.dtype, pd.CategoricalDtype):
        cat = s.cat.remove_unused_categories()
        cat = cat.cat.rename_categories([str(c) for c in cat.cat.categories]).array
    else:
        # sorted factorisation: code-point order for strings, numeric order for numbers; every
        # category occurs (factorize returns only observed values), so none is unused
        codes, uniques = pd.factorize(s, sort=True, use_na_sentinel=True)
        if pd.api.types.is_string_dtype(uniques.dtype) and uniques.dtype != object:
            labels = uniques.to_numpy(dtype=object).tolist()  # already str: no per-value str()
        else:
            labels = [str(u) for u in uniques]
            if len(set(labels)) != len(labels):  # e.g. 1 and "1" in one object column
                raise DataError(f"column {name!r} has values that differ in type but print alike; convert it to "
                                "one type")
        cat = pd.Categorical.from_codes(codes, categories=pd.Index(labels, dtype=object), validate=False)
        if ref is None:
            return pd.Series(cat, index=s.index, copy=False)
    cat = pd.Series(cat, index=s.index)
    cat = cat.cat.remove_unused_categories()
    if ref is not None:
        ref = str(ref)
        if ref not in list(cat.cat.categories):
            raise DataError(f"reference level {ref!r} is not a level of {name!r} ({list(cat.cat.categories)[:10]})")
        order = [ref] + [c for c in cat.cat.categories if c != ref]
        cat = cat.cat.reorder_categories(order)
    return cat


@dataclass(frozen=True, repr=False)
class LMMFit(FitResultMixin):
    """A fitted linear mixed model (see :func:`lmm`)."""

    formula: str
    response: str
    fixed: Any
    random: Any
    sigma: float
    loglik: float
    aic: float
    bic: float
    deviance: float
    nobs: int
    ngroups: dict[str, int]
    reml: bool
    singular: bool
    converged: bool
    optimizer: str
    df_method: str
    level: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    data: Any = field(repr=False)
    factors: tuple[str, ...] = ()
    _model: Any = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    _print_tables = ("fixed", "random")
    _dict_keys = ("formula", "response", "fixed", "random", "sigma", "loglik", "aic", "bic", "deviance", "nobs",
                  "ngroups", "reml", "singular", "converged", "optimizer", "df_method", "warnings", "provenance")

    @property
    def _title(self) -> str:  # type: ignore[override]
        est = "REML" if self.reml else "ML"
        return f"Linear mixed model fit by {est} (lme4 via lmerTest): {self.formula}"

    def _scalars(self):
        return [("nobs", self.nobs), ("groups", self.ngroups), ("sigma", f"{self.sigma:.6g}"),
                ("logLik", f"{self.loglik:.6g}"), ("AIC", f"{self.aic:.6g}"), ("BIC", f"{self.bic:.6g}"),
                ("df method", self.df_method), ("singular", self.singular), ("converged", self.converged)]

    def coef_table(self, df_method: str = "satterthwaite", level: float = 0.95):
        """The fixed-effects table with another df method or confidence level (``z_value``
        instead of ``t_value`` for ``df_method="asymptotic"``)."""
        level = require_level(level)
        key = normalize_df_method(df_method)
        return _bridge.fixed_table(self, ddf=DF_METHODS[key], level=level)

    def refit(self, reml: bool) -> "LMMFit":
        """The same model refitted by REML (``reml=True``) or ML (``lme4::refitML``)."""
        if bool(reml) == self.reml:
            return self
        res = _bridge.refit_and_summarise(self, reml=bool(reml), ddf=DF_METHODS[self.df_method],
                                          level=float(self.level))
        return _build_fit(res, self.formula, self.data, self.optimizer, self.df_method, self.level, [], self.factors)

    def _values(self) -> dict[str, np.ndarray]:
        if "values" not in self._cache:
            self._cache["values"] = _bridge.model_values(self)
        return self._cache["values"]

    def response_values(self) -> np.ndarray:
        """The response as used by the model (rows with missing values dropped)."""
        return self._values()["y"].copy()

    def fitted(self, re: str = "conditional") -> np.ndarray:
        """Fitted values: ``re="conditional"`` (with BLUPs, ``fitted(m)``) or ``"population"``
        (fixed effects only, ``predict(m, re.form = NA)``)."""
        key = {"conditional": "fitted_conditional", "population": "fitted_population"}.get(re)
        if key is None:
            raise DataError(f"re must be 'conditional' or 'population', not {re!r}")
        return self._values()[key].copy()

    def residuals(self) -> np.ndarray:
        """Conditional residuals ``residuals(m)`` (response minus conditional fitted values)."""
        return self._values()["residuals"].copy()

    def ranef(self) -> dict[str, Any]:
        """BLUPs per grouping factor: ``{group: DataFrame}`` indexed by level, one column per term."""
        if "ranef" not in self._cache:
            v = _bridge.ranef(self)
            out = {}
            for g, d in v.items():
                d = d.set_index("level")
                d.index = d.index.astype(str)
                out[g] = d
            self._cache["ranef"] = out
        return {k: v.copy() for k, v in self._cache["ranef"].items()}

    def model_frame(self):
        """The model frame R used (only complete rows, the variables of the formula)."""
        if "mf" not in self._cache:
            self._cache["mf"] = _bridge.model_frame(self)
        return self._cache["mf"].copy()

    def simulate(self, n_sim: int = 250, random_state: Any = 123, re: str = "unconditional") -> np.ndarray:
        """Responses simulated by ``lme4::simulate`` as an (nobs, n_sim) array.

        ``re="unconditional"`` draws new random effects each time (``re.form = NA``);
        ``re="conditional"`` keeps the fitted BLUPs (``re.form = NULL``).

        ``random_state``: an int is R's ``set.seed`` value (``random_state=1`` gives R's
        ``simulate(m, nsim, seed = 1)`` exactly); a ``numpy.random.SeedSequence`` or ``Generator``
        is turned into one such int; None draws a fresh one. The default 123 (DHARMa's default
        seed) makes repeated calls return the same draws -- pass another value, or None, for new
        ones.
        """
        if re not in ("unconditional", "conditional"):
            raise DataError(f"re must be 'unconditional' or 'conditional', not {re!r}")
        n_sim = int(n_sim)
        if n_sim < 1:
            raise DataError("n_sim must be at least 1")
        return _bridge.simulate(self, n_sim=n_sim, r_seed=r_seed(random_state), conditional=(re == "conditional"))

    # ------------------------------------------------------------ inference layer
    def anova(self, type: int | str = 3, ddf: str = "satterthwaite", level: float = 0.95):  # noqa: A002
        """F tests (lmerTest ``anova``) with partial eta-squared and its interval (effectsize)."""
        return anova(self, type=type, ddf=ddf, level=level)

    def emmeans(self, specs, by=None, df_method: str = "satterthwaite", level: float = 0.95, at=None, *,
                higher_is_better: bool | None = None):
        """Estimated marginal means (emmeans), with explicit ``lmer.df`` and limits;
        ``higher_is_better`` declares the score's direction (None: from the response's name)."""
        return emmeans(self, specs, by=by, df_method=df_method, level=level, at=at, higher_is_better=higher_is_better)

    def emtrends(self, specs, var: str, by=None, df_method: str = "satterthwaite", level: float = 0.95, at=None):
        """Slopes of a continuous covariate per level of ``specs`` (emmeans::emtrends)."""
        return emtrends(self, specs, var=var, by=by, df_method=df_method, level=level, at=at)

    def r2(self):
        """Marginal and conditional R² (Nakagawa & Schielzeth 2013; Johnson 2014)."""
        return r2(self)

    def icc(self):
        """Adjusted and unadjusted ICC (as performance::icc)."""
        return icc(self)

    def check_optimizers(self, optimizers: Sequence[str] = OPTIMIZERS, **kwargs: Any):
        """Refit with several optimizers and compare log-likelihoods, fixed effects and variances."""
        return check_optimizers(self, optimizers=optimizers, **kwargs)

    def diagnose(self, n_sim: int = 250, random_state: Any = 123, re: str = "unconditional", **kwargs: Any):
        """Simulated-residual diagnostics (DHARMa's algorithm) and classical checks
        (:func:`mixedeval.diagnostics.diagnose_fit`; ``kwargs``: ``group``, ``alpha``,
        ``check_optimizers``, ``alternative``, ``executor``: where blocks of 250 simulations run when
        ``n_sim > 250``). An int ``random_state`` is R's ``set.seed`` for the simulations and
        seeds the numpy tie-breaking; the default 123 is DHARMa's, so the verdicts are reproducible."""
        return diagnose_fit(self, n_sim=n_sim, random_state=random_state, re=re, **kwargs)

    # -------------------- what the public functions (mixedeval.anova, emmeans, ...) run on an LMM
    def _anova(self, *, type: int | str, ddf: str, level: float):  # noqa: A002 - anova's name
        return lmm_anova(self, type=type, ddf=ddf, level=level)

    def _emmeans(self, specs, *, by, df_method: str, level: float, at, type: str | None):  # noqa: A002
        return lmm_emm(self, specs, by=by, df_method=df_method, level=level, at=at, type=type)

    def _emtrends(self, specs, *, var: str, by, df_method: str, level: float, at, type: str | None):  # noqa: A002
        return lmm_emm(self, specs, var=var, by=by, df_method=df_method, level=level, at=at, type=type)

    def _check_optimizers(self, *, optimizers: Sequence[str], rtol: float, loglik_tol: float):
        return lmm_check_optimizers(self, optimizers=optimizers, rtol=rtol, loglik_tol=loglik_tol)


def _build_fit(res, formula, frame, optimizer, df_method, level, pre_warnings, factors) -> LMMFit:
    """An LMMFit from the result of ``me_fit_and_summarise`` / ``me_refit_and_summarise``."""
    v = res.value
    warnings = list(pre_warnings) + r_warnings(res)
    conv = v["convergence"]
    conv_msgs = conv.get("messages")
    conv_msgs = [] if conv_msgs is None else ([conv_msgs] if isinstance(conv_msgs, str) else list(conv_msgs))
    for msg in conv_msgs:
        msg = _normalize_condition(msg)
        if not any(w.message == msg for w in warnings):
            warnings.append(ResultWarning("convergence", msg, "lme4"))
    singular = bool(v["singular"])
    if singular and not any(w.kind == "singular" for w in warnings):
        warnings.append(ResultWarning("singular", "boundary (singular) fit: at least one variance component is "
                                      "estimated as zero or a correlation as +-1 (lme4::isSingular)", "lme4"))
    names = v["ngroups_names"]
    counts = v["ngroups"]
    names = [names] if isinstance(names, str) else list(names)
    counts = [counts] if np.isscalar(counts) else list(counts)
    reml = bool(v["reml"])
    prov = r_provenance()
    prov.update({"estimator": "REML" if reml else "ML", "optimizer": optimizer, "df_method": df_method,
                 "r_function": "lmerTest::lmer"})
    random = v["random"]
    return LMMFit(
        formula=formula,
        response=str(v["response"]).strip("`"),
        fixed=v["fixed"],
        random=random,
        sigma=float(v["sigma"]),
        loglik=float(v["loglik"]),
        aic=float(v["aic"]),
        bic=float(v["bic"]),
        deviance=float(v["deviance"]),
        nobs=int(v["nobs"]),
        ngroups={str(k): int(c) for k, c in zip(names, counts)},
        reml=reml,
        singular=singular,
        converged=bool(conv["converged"]),
        optimizer=optimizer,
        df_method=df_method,
        level=float(level),
        warnings=tuple(warnings),
        provenance=prov,
        data=frame,
        factors=tuple(factors),
        _model=v["model"],
    )


def lmm(
    formula: str,
    data: Any,
    reml: bool = True,
    optimizer: str = "nloptwrap",
    df_method: str = "satterthwaite",
    *,
    level: float = 0.95,
    factors: Sequence[str] = (),
    levels: Mapping[str, Sequence[Any]] | None = None,
    reference: Mapping[str, Any] | None = None,
    calc_derivs: bool = True,
    allow_r_code: bool = False,
) -> LMMFit:
    """Fit a linear mixed model with ``lmerTest::lmer`` (lme4).

    Parameters
    ----------
    formula : lme4 formula, e.g. ``"ter ~ system + (1|sentence_id)"``. Column names with spaces
        or brackets may be written as they are (they are back-quoted for R).
    data : pandas/polars DataFrame, pyarrow Table, or path to a CSV/Parquet/JSON file. Never
        modified.
    reml : REML (default; use for estimates, variance components and df) or ML.
    optimizer : ``"nloptwrap"`` (lme4's default), ``"bobyqa"`` or ``"Nelder_Mead"``.
    df_method : denominator df of ``fixed``: ``"satterthwaite"`` (lmerTest), ``"kenward-roger"``
        (pbkrtest, REML fits) or ``"asymptotic"`` (z tests).
    factors : numeric columns to treat as categories (seeds, learning rates).
    levels : explicit level order per column; the first level is the reference.
    reference : reference level per column (moved to the front).
    calc_derivs : lme4's ``calc.derivs`` (turn off to speed up very large fits).
    allow_r_code : the formula is checked before R sees it (data columns, numbers, formula
        operators and the functions in ``mixedeval.data._formula.ALLOWED_FUNCTIONS``); anything
        else raises :class:`mixedeval.FormulaError`. ``True`` sends a formula that does not pass
        verbatim, **running it as arbitrary R code**: only for formulas you wrote yourself.

    Singular fits are reported (``singular=True`` and a warning), never raised.
    """
    df_key = normalize_df_method(df_method)
    opt = normalize_optimizer(optimizer)
    if df_key == "kenward-roger" and not reml:
        raise DataError("Kenward-Roger df need a REML fit; use reml=True or df_method='satterthwaite'")
    level = require_level(level)
    qformula, frame, pre_warnings = prepare_model_data(formula, data, factors=factors, levels=levels, reference=reference,
                                                       allow_r_code=allow_r_code)
    res = _bridge.fit_and_summarise(qformula, frame, reml=bool(reml), optimizer=opt, ddf=DF_METHODS[df_key],
                                    level=float(level), calc_derivs=bool(calc_derivs))
    response = str(res.value["response"]).strip("`")
    kind = response_type_warning(frame[response]) if response in frame.columns else None
    return _build_fit(res, formula, frame, opt, df_key, level, [*pre_warnings, *([kind] if kind else [])], factors)


#: at most this many distinct integer values make a count response look like an ordered rating
_RATING_LEVELS = 10


def response_type_warning(y: Any) -> ResultWarning | None:
    """A ``response_type`` warning when a Gaussian LMM is the wrong model for the response ``y``:

    * two distinct values (0/1 accuracy, pass/fail): a binomial GLMM,
      ``me.glmm(formula, data, family="binomial")`` (lme4::glmer);
    * non-negative integers (error counts): ``family="poisson"`` or, when overdispersed,
      ``family="negative_binomial"``; with at most 10 distinct values it may also be an ordered
      rating, for which ``me.clmm`` (ordinal::clmm) is the model.

    None for any other response (and for constant or empty ones, which fail elsewhere)."""
    v = np.asarray(pd.to_numeric(pd.Series(y), errors="coerce").dropna(), dtype=float)
    distinct = np.unique(v)
    if distinct.size < 2:
        return None
    name = getattr(y, "name", "the response")
    if distinct.size == 2:
        return ResultWarning(
            "response_type",
            f"{name!r} takes only two values ({distinct[0]:g}, {distinct[1]:g}): a linear mixed model treats it as "
            "Gaussian, so means, intervals and tests can be wrong (predictions outside [0, 1], unequal variances); "
            "fit a binomial GLMM instead: me.glmm(formula, data, family='binomial') (lme4::glmer)",
        )
    if distinct[0] >= 0 and np.all(distinct == np.round(distinct)):
        rating = (f"; if it is an ordered rating ({distinct.size} levels), fit me.clmm(formula, data) "
                  "(ordinal::clmm)") if distinct.size <= _RATING_LEVELS else ""
        return ResultWarning(
            "response_type",
            f"{name!r} holds non-negative integers (counts): a linear mixed model treats them as Gaussian with "
            "constant variance; fit a count GLMM instead: me.glmm(formula, data, family='poisson') (or "
            f"family='negative_binomial' when the counts are overdispersed){rating}",
        )
    return None

