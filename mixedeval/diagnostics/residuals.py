"""Scaled (quantile) residuals from a simulation matrix: DHARMa's PIT rule.

For observation i with simulations ``s_i1 .. s_iS`` (``getQuantile(method = "PIT")`` in DHARMa
0.4.7):

    lower_i        = mean(s_ij <  y_i)
    lower_or_eq_i  = mean(s_ij <= y_i)
    r_i = lower_i                                   if lower_i == lower_or_eq_i
    r_i = lower_i + u_i (lower_or_eq_i - lower_i)   otherwise, u_i ~ U(0, 1)

which is R's ``runif(n, lower, lowerOrEqual)`` drawn for all n observations whenever any of them
needs it. Under a correct model the r_i are U(0, 1). For an integer response (binomial,
Poisson, negative binomial) most observations tie with some simulations, so r_i is drawn
uniformly between the fraction of simulations below y_i and the fraction at or below it: the
randomized quantile residual of Dunn & Smyth, with the model's CDF replaced by the empirical CDF
of the simulations. For a continuous response no tie occurs and r_i = lower_i.

Whether a response is integer-valued (:func:`is_integer_response`) decides which tests apply
(zero-inflation) and the default outlier test; it does not change the PIT residuals.

References: Dunn, P. K. & Smyth, G. K. (1996). Randomized quantile residuals. JCGS 5, 236-244;
Hartig, F. DHARMa (R package) 0.4.7, ``getQuantile`` and ``simulateResiduals``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._random import as_generator

#: families DHARMa 0.4.7 treats as integer-valued (``simulateResiduals``: ``family(m)$family`` in
#: this list, or containing "Negative Binomial", as lme4's ``glmer.nb`` family does)
INTEGER_FAMILIES = frozenset({
    "integer-valued", "binomial", "poisson", "quasibinomial", "quasipoisson", "Negative Binom", "nbinom2",
    "nbinom1", "genpois", "compois", "truncated_poisson", "truncated_nbinom2", "truncated_nbinom1",
    "betabinomial", "Poisson", "Tpoisson", "COMPoisson", "negbin", "Tnegbin",
})


def _all_integral(x: np.ndarray) -> bool:
    x = np.asarray(x, dtype=float)
    return bool(x.size) and bool(np.all(np.isfinite(x))) and bool(np.all(x == np.round(x)))


def is_integer_response(family: str | None = None, observed: Any = None, simulated: Any = None) -> bool:
    """Whether a response is treated as integer-valued, as DHARMa decides it.

    With a ``family`` (R's ``family(m)$family``; mixedeval's ``"negative_binomial"`` too): True for
    DHARMa's integer families (:data:`INTEGER_FAMILIES`: binomial, poisson, negative binomial,
    betabinomial, ...), False otherwise (gaussian, Gamma, beta, ...) -- ``simulateResiduals``'s
    rule. Without a family (external simulations, DHARMa's ``createDHARMa``): True when the
    observed responses and every simulated value are whole numbers and the simulations repeat
    values -- the check DHARMa's ``getQuantile(method = "traditional")`` applies before switching
    to integer residuals ("duplicate values were detected in the simulation").
    """
    if family is not None:
        fam = str(family)
        return fam in INTEGER_FAMILIES or "Negative Binomial" in fam or fam.lower().replace(" ", "_") in {
            "negative_binomial", "neg_binomial", "nb"}
    if observed is None or simulated is None:
        return False
    sims = np.asarray(simulated, dtype=float)
    if not (_all_integral(observed) and _all_integral(sims)):
        return False
    flat = sims.ravel()
    return bool(np.unique(flat).size < flat.size)


def pit_counts(simulated: np.ndarray, observed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the number of simulations strictly below and at-or-below the observation."""
    below = np.count_nonzero(simulated < observed[:, None], axis=1)
    at_or_below = np.count_nonzero(simulated <= observed[:, None], axis=1)
    return below, at_or_below


def pit_residuals(
    simulated: np.ndarray,
    observed: np.ndarray,
    *,
    random_state: Any = None,
    uniforms: np.ndarray | None = None,
) -> np.ndarray:
    """Scaled residuals of ``observed`` (n,) against ``simulated`` (n, n_sim) by the PIT rule.

    Ties are broken by ``uniforms`` (n,) when given (for reproducing another implementation's
    draws), else by ``n`` uniforms drawn from ``random_state`` (None, an int, a
    ``numpy.random.SeedSequence`` or a ``numpy.random.Generator``, which is advanced) -- drawn
    only when some observation is tied, as DHARMa does. No input validation here;
    :func:`mixedeval.diagnostics.from_simulations` validates.
    """
    n_sim = simulated.shape[1]
    below, at_or_below = pit_counts(simulated, observed)
    lower = below / n_sim
    upper = at_or_below / n_sim
    needs = below != at_or_below
    if not needs.any():
        return lower
    if uniforms is None:
        uniforms = as_generator(random_state).random(observed.shape[0])
    return np.where(needs, lower + (upper - lower) * np.asarray(uniforms, dtype=float), lower)
