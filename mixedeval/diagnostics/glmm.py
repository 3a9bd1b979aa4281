"""Simulated-residual diagnostics of a generalized linear mixed model (:class:`mixedeval.GLMMFit`).

DHARMa's algorithm (version 0.4.7 defaults) for integer and other non-Gaussian responses:

* **simulations**: lme4's ``simulate()`` of the glmer / glmer.nb fit (glmmTMB's for the beta
  families), read on DHARMa's scale by the R helper ``me_simulate_glmm``
  (``r/simulate_glmm.R``): binomial responses as numbers of successes (a 0/1 or two-level factor
  response as 0/1, ``cbind(successes, failures)`` as successes, a proportion with weights as
  proportion x weights), counts as counts; the population-level prediction is
  ``predict(m, re.form = NA, type = "response")`` (DHARMa's ``getFitted``);
* **integer response** decided from the family as DHARMa's ``simulateResiduals`` does
  (:func:`~mixedeval.diagnostics.residuals.is_integer_response`: binomial, poisson, negative
  binomial, betabinomial are integer; beta is not);
* **residuals**: randomized PIT (uniform between the fraction of simulations below and at or
  below the observation; :func:`~mixedeval.diagnostics.pit_residuals`);
* **tests**: uniformity (R's ``ks.test``), dispersion (DHARMa's simulation test on the variance
  of ``observed - fitted``, centred on the expected count for k/n binomial responses, direction
  ``alternative``), outliers (DHARMa's default: bootstrap for integer responses with at most 500
  observations, the binomial test otherwise), zero-inflation (observed over simulated number of
  zeros), and with ``group`` the per-level uniformity and Levene tests;
* **checks**: convergence (with lme4's gradient / Hessian messages), singular fit, normality of
  the conditional modes of each random effect (normal on the link scale by assumption), other
  fit warnings. A normality test of response residuals is reported as not applicable: binomial
  or Poisson responses are not normal around their means -- the PIT residuals are the check.

0/1 outcomes cannot show over-dispersion observation by observation; sum them over the units
that share a random effect or a cell (item x system over runs) with
:func:`~mixedeval.diagnostics.aggregate_residuals`.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from .._random import r_seed
from ..engine import _bridge
from ..errors import DataError, RError
from ._checks import model_warnings_rows, normality_row, optimizer_row, row, with_fit_provenance
from ._blocks import plan_record, simulate_glmm
from .core import from_simulations
from .residuals import is_integer_response
from .result import CHECK_COLUMNS, Diagnostics

#: families simulated by glmmTMB, whose ``simulate()`` has no conditional (re.form) option
_TMB_FAMILIES = ("beta", "betabinomial")
_CONVERGENCE_KINDS = ("convergence", "convergence_gradient", "convergence_hessian")


def is_glmm(fit: Any) -> bool:
    """True for a generalized mixed model fit (an object with a ``family`` name, as :class:`GLMMFit`)."""
    return isinstance(getattr(fit, "family", None), str)


def _ranef(fit: Any) -> dict[str, pd.DataFrame] | None:
    """Conditional modes per grouping factor (``lme4::ranef``), indexed by level; None if R has none."""
    try:
        raw = _bridge.ranef(fit)
    except RError:
        return None
    out = {}
    for g, d in (raw or {}).items():
        if not isinstance(d, pd.DataFrame) or "level" not in d.columns:
            return None
        d = d.set_index("level")
        d.index = d.index.astype(str)
        out[str(g)] = d
    return out


def glmm_checks(fit: Any, ranef: dict[str, pd.DataFrame] | None, alpha: float = 0.05) -> pd.DataFrame:
    """The classical checks of a GLMM: ``check, statistic, p_value, verdict, reason, method``.

    ``convergence`` (lme4's gradient and Hessian checks: the fit's ``convergence*`` warnings),
    ``singular_fit``, ``normality_residuals`` (not applicable for a GLMM),
    ``normality_ranef[group:term]`` (R's ``shapiro.test`` of the conditional modes) and
    ``model_warnings`` (other R warnings of the fit).
    """
    fit_warnings = tuple(getattr(fit, "warnings", ()) or ())
    conv = [w for w in fit_warnings if getattr(w, "kind", "") in _CONVERGENCE_KINDS]
    if bool(fit.converged) and not conv:
        rows = [row("convergence", "ok", "optimizer converged; lme4's gradient and Hessian checks passed")]
    else:
        detail = "; ".join(w.message for w in conv[:2]) or "the optimizer did not converge"
        rows = [row("convergence", "warning", f"{detail} -- estimates may be unreliable: compare optimizers "
                    "(check_optimizers) or simplify the random effects")]
    if bool(fit.singular):
        rows.append(row("singular_fit", "warning", "singular (boundary) fit: a variance component is zero or a "
                        "correlation is +-1; consider simplifying the random effects"))
    else:
        rows.append(row("singular_fit", "ok", "fit is not singular"))
    rows.append(row("normality_residuals", "not_applicable",
                    f"{fit.family} responses are not normal around their fitted values; the scaled (PIT) "
                    "residuals of the simulation tests are the check"))
    for group, modes in (ranef or {}).items():
        for term in modes.columns:
            rows.append(normality_row(f"normality_ranef[{group}:{term}]", modes[term].to_numpy(dtype=float),
                                      f"conditional modes of {term} by {group}", alpha))
    other = [w for w in fit_warnings if getattr(w, "kind", "") not in ("singular",) + _CONVERGENCE_KINDS]
    rows += model_warnings_rows(other)
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


def _group_column(fit: Any, group: Any) -> tuple[Any, str | None]:
    if not isinstance(group, str):
        return group, None
    mf = _bridge.model_frame(fit)
    if group not in mf.columns:
        raise DataError(f"group={group!r} is not a column of the model frame; available: {list(mf.columns)}")
    return mf[group], group


def diagnose_glmm(
    fit: Any,
    n_sim: int = 250,
    random_state: Any = 123,
    re: str = "unconditional",
    group: Any = None,
    alpha: float = 0.05,
    check_optimizers: bool = False,
    alternative: str = "two-sided",
    executor: Any = None,
) -> Diagnostics:
    """Simulated-residual diagnostics and checks of a GLMM (see the module docstring).

    ``random_state``: an int is R's ``set.seed`` for ``simulate()`` and seeds the numpy draws
    (PIT ties, outlier bootstrap); other values become one such int, recorded as
    ``random_state``. ``re="unconditional"`` (default, DHARMa 0.4.7) draws new random effects,
    ``"conditional"`` keeps the fitted ones (lme4 fits only; DHARMa 0.5 made it its default as the
    more sensitive choice for the dispersion test). ``alternative`` is the direction of the
    dispersion and zero-inflation tests (``"greater"``: over-dispersion / excess zeros only).

    The simulations are drawn in blocks of 250 as for an LMM (:func:`mixedeval.diagnostics.diagnose_fit`,
    :mod:`mixedeval.diagnostics._blocks`): block 0 is ``simulate(m, nsim = min(n_sim, 250), seed = s)``
    (R's own matrix for ``n_sim <= 250``), block ``b >= 1`` uses
    ``seed = r_seed(numpy.random.SeedSequence(s, spawn_key=(b,)))``, recorded in
    ``provenance["simulation_block_seeds"]``. With an ``executor`` and several blocks, each worker rebuilds
    the glmer / glmer.nb / glmmTMB fit once from its formula, model frame, family, link, nAGQ,
    optimizer and weights and simulates its blocks; the observed response, predictions and trials,
    the numpy draws and the checks come from this process.
    """
    if re == "conditional" and fit.family in _TMB_FAMILIES:
        raise DataError(f"re='conditional' is not available for family={fit.family!r} (glmmTMB's simulate() "
                        "always draws new random effects); use re='unconditional'")
    state = r_seed(random_state)
    group, label = _group_column(fit, group)
    sim, plan = simulate_glmm(fit, int(n_sim), state, re == "conditional", executor)
    diag = from_simulations(
        sim["simulated"], sim["observed"], sim["predicted"], integer_response=is_integer_response(sim["family"]),
        random_state=state, group=group, group_label=label, alpha=alpha, alternative=alternative,
        trials=sim["trials"], simulation=re,
    )
    ranef = _ranef(fit)
    checks = glmm_checks(fit, ranef, alpha)
    if check_optimizers:
        checks = pd.concat([checks, pd.DataFrame([optimizer_row(fit)])], ignore_index=True)
    provenance = with_fit_provenance(diag.provenance, fit, {
        "simulation": f"simulate() of the {fit.family} GLMM, {re}", "n_sim": int(n_sim), "random_state": state,
        "family": sim["family"], "simulation_block_seeds": plan_record(plan)})
    return dataclasses.replace(
        diag, checks=checks, warnings=diag.warnings + tuple(getattr(fit, "warnings", ()) or ()),
        provenance=provenance, _ranef=ranef,
    )
