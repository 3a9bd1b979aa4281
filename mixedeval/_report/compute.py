"""Compute the parts of a model's analysis the caller did not pass to :func:`mixedeval.report`.

For a fitted model: the F tests (``fit.anova()``), the omnibus likelihood-ratio test against the
model without fixed effects (``mixedeval.compare(null, fit)``, ML refits), the EMMs and Holm
pairwise contrasts of the first categorical fixed-effect factor, R², ICC and the simulated-residual
diagnostics. Each step is guarded: a missing module or a failure is recorded with its reason and
the report shows it in the section instead of stopping.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..data._formula import parse_formula
from ..diagnostics.aggregate import aggregate_residuals
from ..errors import FormulaError
from ..inference._glmm import GLMMFit, glmm
from ..inference._lmm import lmm
from ..inference.compare import compare
from .blocks import one_line

#: results the report can hold, in the order they are computed
RESULT_KEYS = ("anova", "comparison", "emmeans", "contrasts", "r2", "icc", "diagnostics")


@dataclass
class Outcome:
    """Results by key (a list each: several comparisons or EMMs may be given), with
    ``(status, reason)`` for each key that is absent and ``origin`` ("given" or "computed") for
    each one that is present."""

    values: dict[str, list[Any]] = field(default_factory=dict)
    absent: dict[str, tuple[str, str]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        """The first result of ``key`` or None."""
        vals = self.values.get(key)
        return vals[0] if vals else None


def split_formula(formula: str, columns: Any = None) -> tuple[str, list[str], list[str]]:
    """``(lhs, fixed_terms, random_terms)`` of an lme4 formula as R text: the right-hand side's
    top-level terms (a removed term such as ``-1`` keeps its sign), random-effect terms with their
    brackets. ``columns`` (the data's) lets names with spaces be written unquoted."""
    p = parse_formula(formula, None if columns is None else [str(c) for c in columns])
    return p.lhs or "", list(p.fixed_terms), list(p.random_terms)


def fixed_effect_terms(formula: str, columns: Any = None) -> list[str]:
    """Fixed-effect terms other than the intercept (``1``, ``0``, ``-1``)."""
    return [t for t in split_formula(formula, columns)[1] if t.replace(" ", "") not in ("1", "0", "-1", "-0")]


def null_formula(formula: str, columns: Any = None) -> str | None:
    """The model without fixed effects (``y ~ 1 + random terms``), or None when there is nothing
    to drop."""
    lhs, _, random = split_formula(formula, columns)
    if not fixed_effect_terms(formula, columns) or not random:
        return None
    return f"{lhs} ~ 1 + {' + '.join(random)}"


def first_factor(fit: Any) -> str | None:
    """The first categorical column among the fixed-effect terms of ``fit`` (formula order)."""
    data = getattr(fit, "data", None)
    if data is None:
        return None
    terms = fixed_effect_terms(fit.formula, data.columns)
    if not terms:
        return None
    for col in parse_formula("~ " + " + ".join(terms), data.columns).columns:
        if isinstance(data[col].dtype, pd.CategoricalDtype):
            return col
    return None


def _note(progress: bool, text: str) -> None:
    if progress:
        print(f"mixedeval report: {text}", file=sys.stderr, flush=True)


def _attempt(out: Outcome, key: str, func: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        value = func(*args, **kwargs)
    except ImportError as exc:
        out.absent[key] = ("not_available", f"not available: the module needed for it is missing ({one_line(exc)})")
        return None
    except Exception as exc:  # noqa: BLE001 - recorded and shown in the report
        out.absent[key] = ("error", f"could not be computed: {type(exc).__name__}: {one_line(exc)}")
        return None
    out.values[key] = [value]
    out.origin[key] = "computed"
    return value


def given_only(given: dict[str, list[Any]], why: str) -> Outcome:
    """The results that were given, every other key absent with ``why``."""
    out = Outcome()
    for key in RESULT_KEYS:
        if given.get(key):
            out.values[key] = list(given[key])
            out.origin[key] = "given"
        else:
            out.absent[key] = ("not_available", why)
    return out


def compute_missing(fit: Any, given: dict[str, list[Any]], *, n_sim: int = 250, random_state: Any = 123,
                    progress: bool = True) -> Outcome:
    """Fill in the results of :data:`RESULT_KEYS` that are not in ``given`` (key -> list of
    results) from ``fit``; the diagnostics use ``n_sim`` simulations and ``random_state`` (an int
    is R's ``set.seed``)."""
    out = Outcome()
    for key in RESULT_KEYS:
        if given.get(key):
            out.values[key] = list(given[key])
            out.origin[key] = "given"
    if fit is None:
        for key in RESULT_KEYS:
            out.absent.setdefault(key, ("not_available", "not available: no fitted model and no result was given"))
        return out
    try:
        has_fixed = bool(fixed_effect_terms(fit.formula, fit.data.columns))
        factor = first_factor(fit)
        null = null_formula(fit.formula, fit.data.columns)
    except FormulaError:  # a formula fitted with allow_r_code=True: no automatic extra models
        has_fixed, factor, null = False, None, None
    if "anova" not in out.values:
        if has_fixed:
            _note(progress, "F tests with partial eta-squared")
            _attempt(out, "anova", fit.anova)
        else:
            out.absent["anova"] = ("not_available", "not applicable: the model has no fixed effects beyond the intercept")
    if "comparison" not in out.values:
        if null is None:
            out.absent["comparison"] = ("not_available", "not applicable: no fixed effects to test against a "
                                        "random-effects-only model; pass comparison=mixedeval.compare(...)")
        else:
            _note(progress, f"likelihood-ratio test against {null} (ML refits)")
            _attempt(out, "comparison", _omnibus_lrt, fit, null)
    if "emmeans" not in out.values:
        if factor is None:
            out.absent["emmeans"] = ("not_available", "not applicable: no categorical fixed-effect factor")
        else:
            _note(progress, f"estimated marginal means of {factor}")
            _attempt(out, "emmeans", fit.emmeans, factor)
    if "contrasts" not in out.values:
        emm = out.get("emmeans")
        if emm is not None and hasattr(emm, "contrasts"):
            _attempt(out, "contrasts", emm.contrasts, method="pairwise", adjust="holm")
        else:
            out.absent["contrasts"] = out.absent.get("emmeans", ("not_available", "not available: no EMMs to contrast"))
    for key, method in (("r2", "r2"), ("icc", "icc")):
        if key not in out.values:
            _attempt(out, key, getattr(fit, method))
    if "diagnostics" not in out.values:
        _note(progress, f"simulated-residual diagnostics ({n_sim} simulations, random_state {random_state})")
        _attempt(out, "diagnostics", fit.diagnose, n_sim=n_sim, random_state=random_state, group=factor,
                 check_optimizers=True)
        if isinstance(fit, GLMMFit) and out.values.get("diagnostics"):
            cells = _cell_dispersion(fit, factor, n_sim, random_state, out)
            if cells is not None:
                out.values["diagnostics"].append(cells)
    return out


def _cell_dispersion(fit: Any, factor: str | None, n_sim: int, random_state: Any, out: Outcome | None = None) -> Any:
    """For a binomial / count GLMM with replicated cells (runs): DHARMa's test of overdispersion on
    the responses summed per grouping level x ``factor`` cell (e.g. item x system), simulated with
    the fitted random effects kept (``re="conditional"``) and ``alternative="greater"``. A single 0/1
    outcome cannot be overdispersed; the sums over a cell's runs can, when the model leaves out an
    item x system effect. None when it does not apply or cannot be computed; in the second case the
    reason is recorded in ``out.absent["diagnostics_cells"]`` and shown in the diagnostics section."""
    groups = [g for g in fit.ngroups if g in fit.data.columns]
    if factor is None or not groups or fit.family not in ("binomial", "poisson", "negative_binomial"):
        return None
    frame = fit.data.dropna()
    key = frame[groups[0]].astype(str) + " x " + frame[factor].astype(str)
    if len(frame) != fit.nobs or key.value_counts().max() < 2:
        return None
    try:
        cond = fit.diagnose(n_sim=n_sim, random_state=random_state, re="conditional")
        return aggregate_residuals(cond, key.to_numpy(), alternative="greater")
    except Exception as exc:  # noqa: BLE001 - an extra check: the main diagnostics are shown, the reason is recorded
        if out is not None:
            out.absent["diagnostics_cells"] = (
                "error", f"The dispersion test of the responses summed per {groups[0]} x {factor} cell could not be "
                f"computed: {type(exc).__name__}: {one_line(exc)}")
        return None


def _omnibus_lrt(fit: Any, null: str) -> Any:
    if isinstance(fit, GLMMFit):  # the same family, link, quadrature and weights; GLMMs are ML fits
        null_fit = glmm(null, fit.data, family=fit.family, link=fit.link, nagq=fit.nagq, optimizer=fit.optimizer,
                        weights=fit.weights, factors=getattr(fit, "factors", ()))
        return compare(null_fit, fit)
    null_fit = lmm(null, fit.data, reml=fit.reml, optimizer=fit.optimizer, df_method=fit.df_method,
                   factors=getattr(fit, "factors", ()))
    return compare(null_fit, fit)
