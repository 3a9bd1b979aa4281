"""Scaled (quantile) residuals from a simulation matrix: DHARMa's PIT rule.

For observation i with simulations ``s_i1 .. s_iS`` (``getQuantile(method = "PIT")`` in DHARMa
0.4.7):

    lower_i        = mean(s_ij <  y_i)
    lower_or_eq_i  = mean(s_ij <= y_i)
    r_i = lower_i                                   if lower_i == lower_or_eq_i
    r_i = lower_i + u_i (lower_or_eq_i - lower_i)   otherwise, u_i ~ U(0, 1)

which is R's ``runif(n, lower, lowerOrEqual)`` drawn for all n observations whenever any of them
needs it. Under a correct model the r_i are U(0, 1). References: Dunn, P. K. & Smyth, G. K.
(1996). Randomized quantile residuals. JCGS 5, 236-244; Hartig, F. DHARMa (R package) 0.4.7.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._random import as_generator


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
