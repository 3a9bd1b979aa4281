"""Normality tests for the classical checks (conditional residuals, BLUPs).

* 3 <= n <= 5000: Shapiro-Wilk, as R's ``shapiro.test`` -- Royston's algorithm AS R94 (1995),
  transcribed from R's ``swilk.c`` in double precision. Hand-written because scipy does not give
  R's number: ``scipy.stats.shapiro`` is a separate port of AS R94 whose numerical details
  differ from R's ``swilk.c``; its W differs from R's by up to ~3e-9 and its p-value by up to
  ~1.2e-6 relative (measured on t(4) samples, n = 3 .. 5000, scipy 1.17 against R 4.2). This
  transcription matches R to 1e-10 (W) and 1e-8 (p) in tests/test_diagnostics.py.
* n > 5000 (where R's ``shapiro.test`` refuses): D'Agostino-Pearson omnibus K^2 test
  (``scipy.stats.normaltest``; D'Agostino, Belanger & D'Agostino 1990, The American Statistician
  44, 316-321), chi-square with 2 df on the skewness and kurtosis z-scores.

With thousands of observations both tests flag deviations too small to matter for a linear mixed
model's inference; read them with the QQ plot.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri
from scipy.stats import norm, normaltest

_C1 = (0.0, 0.221157, -0.147981, -2.07119, 4.434685, -2.706056)
_C2 = (0.0, 0.042981, -0.293762, -1.752461, 5.682633, -3.582633)
_C3 = (0.544, -0.39978, 0.025054, -6.714e-4)
_C4 = (1.3822, -0.77857, 0.062767, -0.0020322)
_C5 = (-1.5861, -0.31082, -0.083751, 0.0038915)
_C6 = (-0.4803, -0.082676, 0.0030302)
_G = (-2.273, 0.459)


@dataclass(frozen=True)
class NormalityResult:
    statistic: float
    p_value: float
    method: str
    n: int


def _poly(cc: tuple[float, ...], x: float) -> float:
    """AS 181.2: polynomial with coefficients cc (constant first), evaluated as in R's swilk.c."""
    ret = cc[0]
    if len(cc) > 1:
        p = x * cc[-1]
        for j in range(len(cc) - 2, 0, -1):
            p = (p + cc[j]) * x
        ret += p
    return ret


def _swilk_coefficients(n: int) -> np.ndarray:
    """The coefficients a[1..n/2] (index 0 unused) of AS R94."""
    nn2 = n // 2
    a = np.zeros(nn2 + 1)
    if n == 3:
        a[1] = 0.70710678
        return a
    an = float(n)
    an25 = an + 0.25
    a[1:] = ndtri((np.arange(1, nn2 + 1) - 0.375) / an25)
    summ2 = 2.0 * float(np.sum(a[1:] ** 2))
    ssumm2 = math.sqrt(summ2)
    rsn = 1.0 / math.sqrt(an)
    a1 = _poly(_C1, rsn) - a[1] / ssumm2
    if n > 5:
        i1 = 3
        a2 = -a[2] / ssumm2 + _poly(_C2, rsn)
        fac = math.sqrt((summ2 - 2.0 * a[1] ** 2 - 2.0 * a[2] ** 2) / (1.0 - 2.0 * a1**2 - 2.0 * a2**2))
        a[2] = a2
    else:
        i1 = 2
        fac = math.sqrt((summ2 - 2.0 * a[1] ** 2) / (1.0 - 2.0 * a1**2))
    a[1] = a1
    a[i1:] /= -fac
    return a


def shapiro_wilk(x) -> NormalityResult:
    """Shapiro-Wilk W and p-value, as R's ``shapiro.test`` (3 <= n <= 5000, not all equal)."""
    x = np.sort(np.asarray(x, dtype=float)[~np.isnan(np.asarray(x, dtype=float))])
    n = x.size
    if n < 3 or n > 5000:
        raise ValueError("sample size must be between 3 and 5000")
    rng = x[-1] - x[0]
    if rng == 0:
        raise ValueError("all 'x' values are identical")
    if rng < 1e-10:
        x = x / rng
        rng = x[-1] - x[0]
    a = _swilk_coefficients(n)
    # antisymmetric coefficient of each sorted position: sign(i - j) a[1 + min(i, j)], j = n-1-i
    i = np.arange(n)
    j = n - 1 - i
    coef = np.where(i != j, np.sign(i - j) * a[np.minimum(1 + np.minimum(i, j), a.size - 1)], 0.0)
    xs = x / rng
    sa = float(np.sum(coef)) / n
    sx = float(np.sum(xs)) / n
    asa = coef - sa
    xsx = xs - sx
    ssa = float(np.sum(asa * asa))
    ssx = float(np.sum(xsx * xsx))
    sax = float(np.sum(asa * xsx))
    ssassx = math.sqrt(ssa * ssx)
    w1 = (ssassx - sax) * (ssassx + sax) / (ssa * ssx)
    w = 1.0 - w1
    method = "Shapiro-Wilk normality test"
    if n == 3:
        pw = 1.90985931710274 * (math.asin(math.sqrt(w)) - 1.04719755119660)
        return NormalityResult(w, max(pw, 0.0), method, n)
    y = math.log(w1)
    xx = math.log(n)
    if n <= 11:
        gamma = _poly(_G, float(n))
        if y >= gamma:
            return NormalityResult(w, 1e-99, method, n)
        y = -math.log(gamma - y)
        m = _poly(_C3, float(n))
        s = math.exp(_poly(_C4, float(n)))
    else:
        m = _poly(_C5, xx)
        s = math.exp(_poly(_C6, xx))
    return NormalityResult(w, float(norm.sf(y, m, s)), method, n)


def normality_test(x) -> NormalityResult:
    """Shapiro-Wilk for 3 <= n <= 5000, D'Agostino-Pearson K^2 above (see module docstring)."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    if x.size <= 5000:
        return shapiro_wilk(x)
    res = normaltest(x)
    return NormalityResult(float(res.statistic), float(res.pvalue), "D'Agostino-Pearson K^2 normality test", int(x.size))
