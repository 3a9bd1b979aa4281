"""Intervals of mean scores that cannot leave [0, 1] (accuracies, pass rates, any score in [0, 1]).

The leaderboard's interval of a system's mean score is the t interval of the paired analysis
(:func:`mixedeval.workflows._paired.system_means`: ``estimate +- t_df * std_error``, the SE of
the questions -- cluster-robust with clusters, with the run variance with runs). Near 0 or 1 that
interval can leave [0, 1] (0.975 of 40 questions: up to 1.026) or collapse to a point (40 of 40:
1 to 1). Where the scores lie in [0, 1] and the t interval reaches 0 or 1, the row's interval is
a Wilson score interval instead, which stays inside [0, 1] by construction; the same near 0 or 1,
where n min(mean, 1 - mean) < ``MIN_EXPECTED`` (5: the textbook rule for the normal approximation),
even when the t interval stays inside (0, 1):

* ``"Wilson"``: questions independent, one SE from the questions alone (no clusters, no run
  part): the Wilson score interval of the proportion ``p`` of ``n`` questions with the normal
  quantile -- Inspect AI's ``ci_wilson()``, R's ``prop.test(x, n, correct = FALSE)$conf.int``;
* ``"Wilson, modified"``: as ``"Wilson"`` where the count ``x = n p`` is 1-3 from 0 or from n
  (0 < x <= ``MODIFIED_COUNT`` or the same from n): the lower limit (near 0; the upper near n)
  is the smaller of Wilson's and the Poisson limit ``qchisq(alpha/2, 2x) / (2n)`` (``1 -
  qchisq(alpha/2, 2(n - x)) / (2n)``): Brown, Cai & DasGupta's (2001, *Statist. Sci.* 16, 101-133,
  section 4.1.1) "modified Wilson" interval, with their x* = 3 at every n. Why (issue 39,
  ``benchmarks/coverage_atlas.py --exact``, exact coverage by enumeration): Wilson's coverage dips
  where the true proportion lies just below the lower limit of a count of 1-3 -- 0/1 scores at
  0.02 (or 0.98) with 50 questions: 92.2%, exact; the modified limits: 98.2%; the lowest exact
  coverage over true proportions 0.001-0.15 at 30 / 50 / 100 / 200 questions 84.2 / 84.0 / 84.0 /
  89.5% (Wilson) and 92.1 / 92.9 / 92.7 / 93.0% (modified), 2-3% wider on average;
* ``"Wilson, effective n"``: otherwise (clusters, a run variance, the mean of several tasks): the
  Korn-Graubard effective size ``min(n, p (1 - p) / SE^2)`` (n where ``p (1 - p)`` or the SE is
  0) with the t quantile on the row's df -- Inspect AI's ``ci_wilson(cluster=)`` when the SE is
  its clustered SE.

Integer scores outside [0, 1] (a rating scale: Likert 1-5, a judge's 1-10; :func:`score_scale`): the
same rule on the **observed range** [min, max] of the call's scores -- means and SEs rescaled to
[0, 1], the limits mapped back, the family named with `` (observed range)``. mixedeval is not told
the scale's bounds; the observed range is inside them, and by the Bhatia-Davis inequality
(mean - min)(max - mean) bounds the variance of scores in it, so the Wilson interval on it keeps
the role it has on [0, 1]. Why (issue 39): Likert 1-5 scores piling up at 1 or 5 (the atlas'
``likert`` cells at 0.02 / 0.98: means 1.08 / 4.92), system a's mean, 1,500 simulated evaluations
each: the t interval covered 88.1 / 89.8 / 90.3% (0.02; 30 / 50 / 100 questions) and 88.5 / 88.7 /
90.0% (0.98); this rule 98.3 / 96.7 / 98.5% and 97.5 / 97.3 / 98.7%; the same rule on the true
scale [1, 5] 99.9-100% (wider: no score reaches 3 there).

Scores in [0, 1] that are not 0/1 (epoch means, partial credit) have a variance of at most
``p (1 - p)``, so the Wilson interval is conservative for them (Inspect's ``ci_wilson`` says the
same). Rows whose t interval lies inside (0, 1) and whose mean is away from 0 and 1 keep it
(``"t"``); the ``interval`` column names the family of each row.

Why the zone near 0 and 1 (issue 39, ``benchmarks/coverage_atlas.py``): the mean of skewed scores
near the boundary has a skewed distribution that the t interval ignores. Simulated [0, 1] scores
(Beta, logit-normal question difficulty; 1,000 evaluations each), coverage of system a's mean by
the t interval / by this rule: mean 0.98, 30 questions 85.8% / 100%; 0.02, 30: 82.5% / 100%; 0.98,
100: 89.4% / 100%; 0.98, 10: 72.1% / 99.8%; 0/1 scores at 0.98, 100 questions: 87.1% / 100%;
outside the zone (0.98, 500 questions) the t interval covers 93.5% and is kept. The Wilson interval
uses the largest variance a [0, 1] score can have, p (1 - p), so it is conservative for
continuous scores (the Korn-Graubard effective size of the observed variance covered only 88.8%
at 0.98 / 30, a logit-t interval 89.9%): coverage at or above 97% there is the price of not
covering less than 93%.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from .._answer import z_quantile

#: the interval families, as the ``interval`` column names them
T, WILSON, WILSON_MODIFIED, WILSON_EFFECTIVE = "t", "Wilson", "Wilson, modified", "Wilson, effective n"
#: counts this close to 0 or n get the Poisson limit (Brown, Cai & DasGupta 2001, x* = 3)
MODIFIED_COUNT = 3
#: appended to a family's name when the rule ran on the observed range of integer scores
OBSERVED_RANGE = " (observed range)"

#: the textbook rule for the normal approximation near 0 or 1 (n min(p, 1 - p) >= 5): below it a
#: mean of scores in [0, 1] gets the Wilson interval (:func:`bounded_intervals`) and the paired
#: difference of two systems' 0/1 scores Newcombe's hybrid score interval (:func:`use_newcombe`)
MIN_EXPECTED = 5.0


def wilson(p: Any, n: Any, critical: Any) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of proportions ``p`` of ``n`` with the critical values given
    (arrays broadcast; NaN where n <= 0), clipped to [0, 1] for floating-point safety only."""
    p, n, c = (np.asarray(x, dtype=float) for x in (p, n, critical))
    with np.errstate(invalid="ignore", divide="ignore"):
        den = 1.0 + c**2 / n
        centre = (p + c**2 / (2.0 * n)) / den
        half = c * np.sqrt(p * (1.0 - p) / n + c**2 / (4.0 * n * n)) / den
        lo, hi = np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
    bad = ~(n > 0)
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def modified_wilson(p: Any, n: Any, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Brown, Cai & DasGupta's (2001, section 4.1.1) modified Wilson interval of proportions ``p`` of
    ``n`` (arrays broadcast): the Wilson interval with the normal quantile, whose lower limit is
    ``min(Wilson's, qchisq(alpha/2, 2x) / (2n))`` where the count ``x = n p`` is in (0,
    ``MODIFIED_COUNT``] and upper limit ``max(Wilson's, 1 - qchisq(alpha/2, 2(n - x)) / (2n))`` where
    ``n - x`` is; returns (low, high, modified) -- ``modified``: whether a limit was replaced."""
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    lo, hi = wilson(p, n, z_quantile(level))
    a = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore"):
        x, y = np.round(n * p, 9), np.round(n * (1.0 - p), 9)
        near0 = (x > 0) & (x <= MODIFIED_COUNT)
        near1 = (y > 0) & (y <= MODIFIED_COUNT)
        p_lo = stats.chi2.ppf(a, 2.0 * np.where(near0, x, 1.0)) / (2.0 * n)
        p_hi = 1.0 - stats.chi2.ppf(a, 2.0 * np.where(near1, y, 1.0)) / (2.0 * n)
    lo = np.where(near0, np.minimum(lo, p_lo), lo)
    hi = np.where(near1, np.maximum(hi, p_hi), hi)
    return lo, hi, near0 | near1


def newcombe_paired(x: Any, y: Any, level: float) -> tuple[float, float, float]:
    """Newcombe's (1998) hybrid score interval of the difference of two paired proportions (his
    method 10, as Fagerland, Lydersen & Laake (2014, eqs. 19-22) recommend it) and the exact McNemar
    p-value: ``x``, ``y`` the 0/1 scores of the two systems on the same n questions; with a (both
    1), b (x only), c (y only), d (both 0), p1 = mean x, p2 = mean y, the Wilson intervals (l1,
    u1), (l2, u2) of p1 and p2 and phi = (A - n/2) / sqrt((a+b)(c+d)(a+c)(b+d)) when A = ad - bc >
    n/2, A / sqrt(...) when A < 0, else 0 (0 when a margin is empty),

        L = (p1 - p2) - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)
        U = (p1 - p2) + sqrt((u1 - p1)^2 - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)^2);

    the p-value is the exact McNemar test, ``binom.test(b, b + c)`` (1 when b + c = 0).
    Returns (conf_low, conf_high, p_value). Newcombe, R. G. (1998). Improved confidence intervals
    for the difference between binomial proportions based on paired data. *Stat. Med.* 17,
    2635-2650 (method 10); Fagerland, M. W., Lydersen, S. & Laake, P. (2014). Recommended tests and
    confidence intervals for paired binomial proportions. *Stat. Med.* 33, 2850-2875 (evalstats'
    ``newcombe_mover_paired_ci`` is the same formula; the tests compare the two)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = x.size
    a, b = float(np.sum((x == 1) & (y == 1))), float(np.sum((x == 1) & (y == 0)))
    c, d = float(np.sum((x == 0) & (y == 1))), float(np.sum((x == 0) & (y == 0)))
    p1, p2 = (a + b) / n, (a + c) / n
    z = z_quantile(level)
    (l1, l2), (u1, u2) = wilson(np.array([p1, p2]), n, z)
    den = (a + b) * (c + d) * (a + c) * (b + d)
    det = a * d - b * c
    phi = 0.0 if den <= 0 else (det - n / 2.0) / np.sqrt(den) if det > n / 2.0 else det / np.sqrt(den) if det < 0 else 0.0
    delta = p1 - p2
    lo = delta - np.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    hi = delta + np.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    p = float(stats.binomtest(int(b), int(b + c), 0.5).pvalue) if b + c > 0 else 1.0
    return float(lo), float(hi), p


def use_newcombe(x: Any, y: Any) -> bool:
    """The rule of :data:`MIN_EXPECTED`: both score vectors 0/1 and some system's
    n min(p, 1 - p) below it (near 0 or 1, or few questions)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 2 or not (np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all()):
        return False
    n = x.size
    return min(n * min(v.mean(), 1 - v.mean()) for v in (x, y)) < MIN_EXPECTED


def score_scale(scores: Any) -> tuple[float, float, bool] | None:
    """The scale the Wilson rule works on, from the scores of a call: ``(0, 1, False)`` when every
    score lies in [0, 1]; ``(min, max, True)`` -- the observed range -- when every score is an
    integer and they are not all equal (a rating scale: Likert 1-5, a judge's 1-10); else None
    (the t interval everywhere)."""
    v = np.asarray(scores, dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        return None
    if ((v >= 0) & (v <= 1)).all():
        return 0.0, 1.0, False
    if np.all(v == np.round(v)) and v.max() > v.min():
        return float(v.min()), float(v.max()), True
    return None


def bounded_intervals(estimate: Any, std_error: Any, df: Any, n: Any, level: float, plain: Any,
                      bounded: bool = True, scale: tuple[float, float] = (0.0, 1.0),
                      observed: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(conf_low, conf_high, interval) of mean scores: the t interval, and where ``bounded``
    (every score in [0, 1]) and it reaches 0 or 1 or n min(mean, 1 - mean) < ``MIN_EXPECTED``,
    the Wilson interval of the module docstring
    (``plain`` rows: questions independent, the SE from the questions alone). ``scale``: the
    (low, high) the rule works on (means and SEs rescaled to [0, 1] and the limits mapped back);
    ``observed``: it is the observed range of integer scores (:func:`score_scale`; the family
    names get ``OBSERVED_RANGE``)."""
    a0, w = float(scale[0]), float(scale[1] - scale[0])
    if bounded and (a0, w) != (0.0, 1.0):
        lo, hi, fam = bounded_intervals((np.asarray(estimate, dtype=float) - a0) / w,
                                        np.asarray(std_error, dtype=float) / w, df, n, level, plain)
        if observed:
            fam = np.array([f if f == T else f + OBSERVED_RANGE for f in fam], dtype=object)
        return a0 + w * lo, a0 + w * hi, fam
    est, se, dfs, nn = (np.asarray(x, dtype=float) for x in (estimate, std_error, df, n))
    plain = np.asarray(plain, dtype=bool)
    ok_df = np.isfinite(dfs) & (dfs >= 1)
    q_t = np.where(ok_df, stats.t.ppf(0.5 + level / 2.0, np.where(ok_df, dfs, 1.0)), np.nan)
    lo, hi = est - q_t * se, est + q_t * se
    family = np.full(est.shape, T, dtype=object)
    if not bounded:
        return lo, hi, family
    with np.errstate(invalid="ignore"):
        near = nn * np.minimum(est, 1.0 - est) < MIN_EXPECTED
    swap = (np.isfinite(lo) & np.isfinite(hi) & ((lo <= 0.0) | (hi >= 1.0) | near) & (est >= 0.0) & (est <= 1.0))
    if not swap.any():
        return lo, hi, family
    num = est * (1.0 - est)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.where((num > 0) & (se > 0), np.minimum(nn, num / se**2), nn)
    z = z_quantile(level)
    w_lo, w_hi = wilson(est, np.where(plain, nn, n_eff), np.where(plain, z, q_t))
    m_lo, m_hi, mod = modified_wilson(est, nn, level)
    mod = mod & plain
    w_lo, w_hi = np.where(mod, m_lo, w_lo), np.where(mod, m_hi, w_hi)
    lo, hi = np.where(swap, w_lo, lo), np.where(swap, w_hi, hi)
    family[swap] = np.where(plain[swap], np.where(mod[swap], WILSON_MODIFIED, WILSON), WILSON_EFFECTIVE)
    return lo, hi, family


def interval_note(table: Any, name: str = "system") -> str | None:
    """The sentence naming the rows whose interval is a Wilson interval (``table``: columns
    ``interval`` and ``name``), for a result's method text; None when every row is a t interval."""
    if table is None or "interval" not in getattr(table, "columns", ()):
        return None
    w = table[table["interval"] != T]
    if not len(w):
        return None
    names = ", ".join(dict.fromkeys(map(str, w[name])))
    fams = " / ".join(dict.fromkeys(map(str, w["interval"])))
    if any(OBSERVED_RANGE in f for f in w["interval"].astype(str)):
        return (f"intervals of means: t, except {names}: {fams} (the t interval reached a bound of the scale -- the observed "
                "range of the integer scores -- or the mean is within 5 / n of it; a Wilson interval on it stays inside it)")
    return (f"intervals of means: t, except {names}: {fams} (the t interval reached 0 or 1, or the mean is within 5 / n of it; a Wilson interval "
            "stays inside [0, 1])")


__all__ = ["MIN_EXPECTED", "MODIFIED_COUNT", "OBSERVED_RANGE", "T", "WILSON", "WILSON_EFFECTIVE", "WILSON_MODIFIED",
           "bounded_intervals", "interval_note", "modified_wilson", "newcombe_paired", "score_scale", "use_newcombe",
           "wilson"]
