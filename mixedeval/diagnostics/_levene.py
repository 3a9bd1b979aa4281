"""Levene's test with median centring (Brown-Forsythe), as ``car::leveneTest(y, group,
center = median)`` -- the homogeneity test DHARMa's ``testCategorical`` runs on scaled residuals.

Computed as car does: the one-way ANOVA F test (``anova(lm(abs(y - median_g) ~ group))``) of the
absolute deviations of ``y`` from its group median. Reference: Brown, M. B. & Forsythe, A. B.
(1974). Robust tests for the equality of variances. JASA 69, 364-367; Fox & Weisberg, car.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LeveneResult:
    """F statistic, its degrees of freedom and upper-tail p-value."""

    statistic: float
    df_num: int
    df_den: int
    p_value: float


def levene_median(y, codes) -> LeveneResult:
    """Brown-Forsythe test of equal spread of ``y`` across the groups given by integer ``codes``
    (0 .. k-1, every code present). NaN statistic and p-value when k < 2 or n - k < 1."""
    from scipy.stats import f as f_dist  # noqa: PLC0415

    y = np.asarray(y, dtype=float)
    codes = np.asarray(codes)
    k = int(codes.max()) + 1 if codes.size else 0
    n = y.size
    if k < 2 or n - k < 1:
        return LeveneResult(float("nan"), k - 1, n - k, float("nan"))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(k + 1))
    ys = y[order]
    med = np.array([np.median(ys[bounds[g]:bounds[g + 1]]) for g in range(k)])
    z = np.abs(y - med[codes])
    counts = np.bincount(codes, minlength=k)
    means = np.bincount(codes, weights=z, minlength=k) / counts
    ss_between = float(np.sum(counts * (means - z.mean()) ** 2))
    ss_within = float(np.sum((z - means[codes]) ** 2))
    df1, df2 = k - 1, n - k
    if ss_within == 0:
        stat = float("inf") if ss_between > 0 else float("nan")
    else:
        stat = (ss_between / df1) / (ss_within / df2)
    p = float(f_dist.sf(stat, df1, df2)) if np.isfinite(stat) else (0.0 if stat == float("inf") else float("nan"))
    return LeveneResult(float(stat), df1, df2, p)
