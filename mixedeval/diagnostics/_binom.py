"""Exact binomial test p-value, as R's ``binom.test(x, n, p, alternative)``.

The two-sided p-value follows R's rule (not the "minlike" rule of every other package): with
``d = dbinom(x, n, p)`` and ``m = n p``, the observations on the far side of the mode whose
probability is at most ``d * (1 + 1e-7)`` are added to the tail of ``x``:

* ``x == m``: 1;
* ``x < m``: ``pbinom(x) + P(X > n - y)`` with ``y = #{i >= ceiling(m): dbinom(i) <= d (1 + 1e-7)}``;
* ``x > m``: ``pbinom(y - 1) + P(X >= x)`` with ``y = #{i <= floor(m): dbinom(i) <= d (1 + 1e-7)}``.

One-sided: ``less`` = ``pbinom(x)``, ``greater`` = ``P(X >= x)``. Reference: R's
``stats::binom.test`` (R 4.2); Clopper & Pearson (1934) for the exact test.
"""
from __future__ import annotations

import math

import numpy as np

_REL_ERR = 1 + 1e-7


def binom_test_pvalue(x: int, n: int, p: float, alternative: str = "two.sided") -> float:
    """p-value of the exact binomial test of ``x`` successes in ``n`` trials against ``p``."""
    from scipy.stats import binom  # noqa: PLC0415

    x, n = int(round(x)), int(round(n))
    if n < 1 or x < 0 or x > n:
        raise ValueError("'n' must be a positive integer >= 'x' and 'x' nonnegative")
    if not 0 <= p <= 1:
        raise ValueError("'p' must be a single number between 0 and 1")
    if alternative == "less":
        return float(binom.cdf(x, n, p))
    if alternative == "greater":
        return float(binom.sf(x - 1, n, p))
    if alternative != "two.sided":
        raise ValueError(f"alternative must be 'two.sided', 'less' or 'greater', got {alternative!r}")
    if p == 0:
        return float(x == 0)
    if p == 1:
        return float(x == n)
    d = binom.pmf(x, n, p)
    m = n * p
    if x == m:
        return 1.0
    if x < m:
        i = np.arange(math.ceil(m), n + 1)
        y = int(np.sum(binom.pmf(i, n, p) <= d * _REL_ERR))
        pval = binom.cdf(x, n, p) + binom.sf(n - y, n, p)
    else:
        i = np.arange(0, math.floor(m) + 1)
        y = int(np.sum(binom.pmf(i, n, p) <= d * _REL_ERR))
        pval = binom.cdf(y - 1, n, p) + binom.sf(x - 1, n, p)
    return float(min(1.0, pval))
