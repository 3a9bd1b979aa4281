"""Levene's test with median centring (Brown-Forsythe), as ``car::leveneTest(y, group,
center = median)`` -- the homogeneity test DHARMa's ``testCategorical`` runs on scaled residuals.

The statistic and p-value are ``scipy.stats.levene(*groups, center="median")``: the one-way ANOVA
F test of the absolute deviations of ``y`` from its group median, which is what car computes
(``anova(lm(abs(y - median_g) ~ group))``); the two agree to about 1e-12 relative (checked against
car in tests/test_diagnostics.py). This module only adapts it to integer group codes, adds the
degrees of freedom, and returns NaN instead of raising where the test is undefined.
Reference: Brown, M. B. & Forsythe, A. B. (1974). Robust tests for the equality of variances.
JASA 69, 364-367; Fox & Weisberg, car.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import levene


@dataclass(frozen=True)
class LeveneResult:
    """F statistic, its degrees of freedom and upper-tail p-value."""

    statistic: float
    df_num: int
    df_den: int
    p_value: float


def levene_median(y, codes) -> LeveneResult:
    """Brown-Forsythe test of equal spread of ``y`` across the groups given by integer ``codes``
    (0 .. k-1, every code present). NaN statistic and p-value when k < 2 or n - k < 1; when every
    value equals its group median the statistic is inf (p = 0) if the group spreads still differ,
    else NaN."""
    y = np.asarray(y, dtype=float)
    codes = np.asarray(codes)
    k = int(codes.max()) + 1 if codes.size else 0
    n = y.size
    if k < 2 or n - k < 1:
        return LeveneResult(float("nan"), k - 1, n - k, float("nan"))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(k + 1))
    ys = y[order]
    groups = [ys[bounds[g]:bounds[g + 1]] for g in range(k)]
    with np.errstate(divide="ignore", invalid="ignore"):
        res = levene(*groups, center="median")
    stat, p = float(res.statistic), float(res.pvalue)
    if np.isinf(stat):
        p = 0.0
    return LeveneResult(stat, k - 1, n - k, p)
