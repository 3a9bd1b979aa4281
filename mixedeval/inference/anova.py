"""F tests of the fixed-effect terms of a linear mixed model, with partial eta-squared.

The table is ``lmerTest::anova(m, type = type, ddf = ddf)`` (Kuznetsova, Brockhoff &
Christensen 2017, *J. Stat. Softw.* 82(13)): Type I, II or III F tests with Satterthwaite or
Kenward-Roger denominator df. lmerTest builds its Type III hypotheses from the model itself, so
the table does not depend on the contrast coding the factors carry (treatment, sum, ...).

Partial eta-squared is what ``effectsize::eta_squared(m, partial = TRUE, ci = level,
alternative = "greater")`` computes for a mixed model (Ben-Shachar, Lüdecke & Makowski 2020,
*JOSS* 5(56)): ``eta2_partial = F * df1 / (F * df1 + df2)`` with lmerTest's numerator and
denominator df, and a one-sided interval from the noncentral F distribution (the
noncentrality parameters bracketing ``F``, mapped back to eta-squared), upper bound 1. The
numbers come from ``effectsize::F_to_eta2`` in R, whose interval search (``stats::optim``) is
reproduced only approximately by any other implementation.

The test statistic is ``f_value`` (the column is named after its reference distribution, F;
see :mod:`mixedeval.engine.names` for the rule every table follows).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..data.validate import require_level
from ..engine import _bridge
from ..engine.conditions import r_warnings
from ..errors import DataError
from ..results import ResultMixin, ResultWarning
from ._fit_common import fit_method
from ._options import normalize_df_method

COLUMNS = ("term", "sum_sq", "mean_sq", "num_df", "den_df", "f_value", "p_value",
           "eta2_partial", "eta2_partial_ci_low", "eta2_partial_ci_high")

_TYPES = {"1": "1", "i": "1", "2": "2", "ii": "2", "3": "3", "iii": "3"}
_DDF = {"satterthwaite": "Satterthwaite", "kenward-roger": "Kenward-Roger"}


@dataclass(frozen=True, repr=False)
class AnovaResult(ResultMixin):
    """F tests per fixed-effect term (lmerTest) with partial eta-squared (effectsize).

    ``table``: term, sum_sq, mean_sq, num_df, den_df, f_value, p_value, eta2_partial,
    eta2_partial_ci_low, eta2_partial_ci_high (one-sided interval at ``level``, upper bound 1).
    """

    table: Any
    type: int
    ddf: str
    level: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    @property
    def _title(self) -> str:  # type: ignore[override]
        roman = {1: "I", 2: "II", 3: "III"}[self.type]
        return (f"Type {roman} ANOVA with {self.ddf} df (lmerTest); partial eta-squared with one-sided "
                f"{self.level:.0%} CI (effectsize)")


def _normalize_type(type_: int | str) -> str:
    key = str(type_).strip().lower()
    if key not in _TYPES:
        raise DataError(f"type {type_!r} is not an ANOVA type; use 1, 2 or 3 (or 'I', 'II', 'III')")
    return _TYPES[key]


def _normalize_ddf(ddf: str) -> str:
    key = normalize_df_method(ddf)
    if key not in _DDF:
        raise DataError(f"ddf {ddf!r} is not available for F tests; use 'satterthwaite' or 'kenward-roger'")
    return key


def anova(fit: Any, type: int | str = 3, ddf: str = "satterthwaite", level: float = 0.95) -> AnovaResult:  # noqa: A002
    """F tests of the fixed-effect terms of ``fit`` with partial eta-squared and its interval.

    Parameters
    ----------
    fit : an :class:`mixedeval.LMMFit`.
    type : 1, 2 or 3 (sequential, marginal-with-respect-to-containing-terms, marginal), as
        ``lmerTest::anova(type=)``.
    ddf : ``"satterthwaite"`` (default) or ``"kenward-roger"`` (pbkrtest; needs a REML fit).
    level : confidence level of the one-sided eta-squared interval (effectsize's ``ci``).

    Returns
    -------
    AnovaResult with ``table`` (see :data:`COLUMNS`). A model without fixed-effect terms
    besides the intercept gives an empty table. For a GLMM fit (:func:`mixedeval.glmm`): Type III
    Wald chi-square tests (``car::Anova`` on a ``contr.sum`` refit; ``ddf`` and ``level`` unused).
    Each fit class runs this through its own ``_anova`` method: the model family owns its R calls.
    """
    run = fit_method(fit, "_anova", "anova", "mixedeval.lmm or mixedeval.glmm")
    return run(type=type, ddf=ddf, level=level)


def lmm_anova(fit: Any, type: int | str = 3, ddf: str = "satterthwaite", level: float = 0.95) -> AnovaResult:  # noqa: A002
    """What :func:`anova` runs on an :class:`mixedeval.LMMFit` (its ``_anova`` method)."""
    type_key = _normalize_type(type)
    ddf_key = _normalize_ddf(ddf)

    level = require_level(level)
    if ddf_key == "kenward-roger" and not fit.reml:
        raise DataError("Kenward-Roger df need a REML fit; use fit.refit(reml=True).anova(ddf='kenward-roger') "
                        "or ddf='satterthwaite'")
    res = _bridge.anova(fit, type=type_key, ddf=_DDF[ddf_key], level=float(level))
    raw = res.value
    if raw is None:  # intercept-only model
        raw = pd.DataFrame({c: [] for c in COLUMNS})
    tab = pd.DataFrame({"term": [str(t) for t in raw["term"]],
                        **{c: raw[c].to_numpy(dtype=float) for c in COLUMNS[1:]}})
    prov = dict(fit.provenance)
    prov.update({"r_function": "lmerTest::anova + effectsize::F_to_eta2", "anova_type": int(type_key),
                 "df_method": ddf_key, "level": float(level), "alternative": "greater"})
    return AnovaResult(table=tab, type=int(type_key), ddf=ddf_key, level=float(level),
                       warnings=tuple(r_warnings(res)), provenance=prov)
