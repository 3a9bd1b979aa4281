"""R² and ICC of Gaussian linear mixed models from the variance components R computes.

Variance components (Nakagawa & Schielzeth 2013, *Methods Ecol. Evol.* 4:133; random slopes as
in Johnson 2014, *Methods Ecol. Evol.* 5:944; the definition of MuMIn's ``r.squaredGLMM`` for
Gaussian models):

* ``var_fixed = var(X beta)``: the sample variance (denominator n - 1, R's ``var``) of the
  fixed-effect predictions, ``X = getME(m, "X")``, ``beta = fixef(m)``;
* ``var_random = sum over random-effect terms k of mean_i(z_ik' Sigma_k z_ik)``, with
  ``z_ik`` the row of term k's raw model matrix (``model.matrix(m, type = "randomListRaw")``)
  and ``Sigma_k`` its ``VarCorr`` matrix; for a random intercept this is the variance itself;
* ``var_residual = sigma(m)^2``.

``r2_marginal = var_fixed / total`` and ``r2_conditional = (var_fixed + var_random) / total``
with ``total = var_fixed + var_random + var_residual``. ``sqrt(var_random + var_residual)`` is
also the standardizer of the contrasts' default ``effect_size="total"``
(:mod:`mixedeval.inference.emmeans`). The ICCs are those of
``performance::icc``: ``icc_adjusted = var_random / (var_random + var_residual)`` and
``icc_unadjusted = var_random / total``.

For ``(1|g)`` and correlated slopes ``(x|g)`` these equal ``performance::r2_nakagawa`` /
``performance::icc``; for uncorrelated terms such as ``(1|g) + (0 + x|g)`` performance 0.10
differs from MuMIn and mixedeval follows MuMIn (Johnson's formula, term by term). Singular fits
are computed as they are (a zero component gives a zero contribution) and flagged with a
warning; performance returns NA there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..engine import _bridge
from ..errors import DataError
from ..results import ResultMixin, ResultWarning
from ._r2_glmm import R2_SEPARATION_NOTE, GLMMICCResult, GLMMR2Result, _ICCFields, _R2Fields, icc_glmm, r2_glmm


@dataclass(frozen=True)
class VarianceParts:
    """The three variance components of a Gaussian LMM and the per-term random parts."""

    var_fixed: float
    var_random: float
    var_residual: float
    terms: tuple[tuple[str, str, float], ...]  # (group, term, variance contribution)

    @property
    def total(self) -> float:
        return self.var_fixed + self.var_random + self.var_residual


def variance_parts(fit: Any) -> VarianceParts:
    """Fixed, random (Johnson 2014) and residual variance of ``fit`` (see module docstring)."""
    if "r2_parts" in fit._cache:
        return fit._cache["r2_parts"]
    v = _bridge.r2_parts(fit)
    contrib = np.atleast_1d(np.asarray(v["contribution"], dtype=float))
    groups, terms = (np.atleast_1d(np.asarray(v[k], dtype=object)) for k in ("group", "term"))
    out = [(str(g), str(t), float(c)) for g, t, c in zip(groups, terms, contrib)]
    var_fixed = float(np.asarray(v["var_fixed"], dtype=float))
    parts = VarianceParts(var_fixed=var_fixed, var_random=float(sum(c for _, _, c in out)),
                          var_residual=float(v["sigma"]) ** 2, terms=tuple(out))
    fit._cache["r2_parts"] = parts
    return parts


def _warnings(fit: Any, parts: VarianceParts) -> tuple[ResultWarning, ...]:
    ws = []
    if any(w.kind == "separation" for w in getattr(fit, "warnings", ())):
        ws.append(ResultWarning("separation", R2_SEPARATION_NOTE, "mixedeval"))
    if fit.singular:
        ws.append(ResultWarning("singular", "singular fit: at least one random-effect variance is (near) zero; "
                                "its contribution is computed as estimated (performance returns NA here)", "mixedeval"))
    if not fit.reml:
        ws.append(ResultWarning("estimator", "variance components from an ML fit (REML is usual for R² and ICC)",
                                "mixedeval"))
    return tuple(ws)


def _components_table(parts: VarianceParts):
    rows = [{"component": "fixed", "group": None, "term": None, "variance": parts.var_fixed}]
    rows += [{"component": "random", "group": g, "term": t, "variance": c} for g, t, c in parts.terms]
    rows.append({"component": "residual", "group": None, "term": None, "variance": parts.var_residual})
    return pd.DataFrame(rows)


@dataclass(frozen=True, repr=False, kw_only=True)
class _VarianceRatios(ResultMixin):
    """Two ratios of variance components, with the components they come from.

    ``components``: component (fixed / random / residual), group, term, variance (one row per
    random-effect term).
    """

    var_fixed: float
    var_random: float
    var_residual: float
    components: Any
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _ratios: ClassVar[tuple[str, str]] = ("", "")
    _main_table = "table"
    _print_tables = ("components",)

    @property
    def table(self):
        return pd.DataFrame([{n: getattr(self, n) for n in self._ratios}])

    def _scalars(self):
        return [(n, f"{getattr(self, n):.6g}") for n in self._ratios]


@dataclass(frozen=True, repr=False, kw_only=True)
class R2Result(_R2Fields, _VarianceRatios):
    """Marginal and conditional R² (Nakagawa & Schielzeth 2013; Johnson 2014; MuMIn's definition)."""

    _title = "R² of a linear mixed model (Nakagawa & Schielzeth 2013; Johnson 2014)"


@dataclass(frozen=True, repr=False, kw_only=True)
class ICCResult(_ICCFields, _VarianceRatios):
    """Adjusted and unadjusted intraclass correlation (as ``performance::icc``)."""

    _title = "Intraclass correlation of a linear mixed model (as performance::icc)"


def _provenance(fit: Any, what: str) -> dict[str, Any]:
    prov = dict(fit.provenance)
    prov.update({"method": what, "r_function": "lme4::getME / model.matrix(type = 'randomListRaw') / VarCorr"})
    return prov


def r2(fit: Any, method: str | None = None) -> R2Result | GLMMR2Result:
    """Marginal and conditional R² of a Gaussian LMM (module docstring has the formulas), or of a
    GLMM (a fit with a ``family``: :func:`mixedeval.inference._r2_glmm.r2_glmm`, whose ``method``
    picks the observation-level variance of the scalar fields)."""
    if getattr(fit, "family", None) is not None:  # GLMMFit: Nakagawa, Johnson & Schielzeth 2017
        return r2_glmm(fit, method)
    if method is not None:
        raise DataError("method applies to GLMM fits only (a Gaussian LMM's observation-level variance is sigma^2)")
    p = variance_parts(fit)
    total = p.total
    return R2Result(r2_marginal=p.var_fixed / total, r2_conditional=(p.var_fixed + p.var_random) / total,
                    var_fixed=p.var_fixed, var_random=p.var_random, var_residual=p.var_residual,
                    components=_components_table(p), warnings=_warnings(fit, p),
                    provenance=_provenance(fit, "Nakagawa & Schielzeth 2013; Johnson 2014 (MuMIn r.squaredGLMM)"))


def icc(fit: Any, method: str | None = None) -> ICCResult | GLMMICCResult:
    """Adjusted and unadjusted ICC of a Gaussian LMM, as ``performance::icc``, or the latent-scale
    ICC of a GLMM (:func:`mixedeval.inference._r2_glmm.icc_glmm`)."""
    if getattr(fit, "family", None) is not None:  # GLMMFit: Nakagawa, Johnson & Schielzeth 2017
        return icc_glmm(fit, method)
    if method is not None:
        raise DataError("method applies to GLMM fits only (a Gaussian LMM's observation-level variance is sigma^2)")
    p = variance_parts(fit)
    return ICCResult(icc_adjusted=p.var_random / (p.var_random + p.var_residual),
                     icc_unadjusted=p.var_random / p.total, var_fixed=p.var_fixed, var_random=p.var_random,
                     var_residual=p.var_residual, components=_components_table(p), warnings=_warnings(fit, p),
                     provenance=_provenance(fit, "performance::icc definition (Nakagawa et al. 2017)"))
