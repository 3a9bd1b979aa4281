"""DHARMa's residual tests (version 0.4.7 definitions), one function per test.

Each function takes a :class:`~mixedeval.diagnostics.Diagnostics` and returns a
:class:`~mixedeval.diagnostics.result.SimulationTest` with a verdict (``ok`` / ``warning`` when
p < alpha / ``not_applicable``) and a one-line reason.

* :func:`test_uniformity` -- ``testUniformity``: R's ``ks.test(residuals, "punif")``.
* :func:`test_dispersion` -- ``testDispersion(type = "DHARMa")`` without refit: the summary
  ``var(x - predicted) / sd(simulated)^2`` on the data and on every simulation; statistic = observed
  / mean(simulated); p-value by ``getP``.
* :func:`test_outliers` -- ``testOutliers(type = "default")``: binomial (R's ``binom.test`` of
  the number of residuals below 1/(n_sim+1) or above 1 - 1/(n_sim+1) against p = 2/(n_sim+1),
  computed by ``scipy.stats.binomtest``, which applies R's two-sided rule) for continuous
  responses and for integer responses with more than 500 observations; bootstrap otherwise.
* :func:`test_zero_inflation` -- ``testZeroInflation`` (count of zeros) for integer responses;
  reported as not applicable for continuous (Gaussian) responses.
* :func:`test_generic` -- ``testGeneric`` for any user summary statistic.
* :func:`test_categorical` -- ``testCategorical``: KS per level (Holm-adjusted by
  :func:`mixedeval.adjust_pvalues`, R's default ``p.adjust``) and Levene's test with median
  centring on the scaled residuals (``scipy.stats.levene(center="median")``, equal to
  ``car::leveneTest``).

``getP`` (simulation p-value): greater = mean(sim >= obs), less = mean(sim <= obs),
two-sided = min(1, 2 min(the two)).

``alternative`` is ``"two-sided"``, ``"less"`` or ``"greater"`` everywhere (R's ``"two.sided"``
is spelled ``"two-sided"`` in mixedeval).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from .._format import fmt_p
from .._random import as_generator
from ..errors import DataError
from ..padjust import adjust_pvalues
from ._ks import ks_test_uniform
from ._levene import levene_median
from .residuals import pit_residuals
from ._group import as_group
from .result import (  # noqa: F401 - the generic test and the p-value rule are also this module's
    GROUP_TEST_COLUMNS,
    Diagnostics,
    SimulationTest,
    _check_alternative,
    _ratio_and_p,
    _verdict,
    simulation_p_value,
    test_generic,
)


def test_uniformity(diag: Diagnostics, alternative: str = "two-sided", alpha: float | None = None) -> SimulationTest:
    """KS test of the scaled residuals against U(0, 1) (R's ``ks.test``, exact when n < 100 and
    no ties, else asymptotic)."""
    _check_alternative(alternative)
    alpha = diag.alpha if alpha is None else alpha
    ks = ks_test_uniform(diag.residuals, alternative=alternative)
    verdict = _verdict(ks.p_value, alpha)
    text = f"KS D={ks.statistic:.3g}, p={fmt_p(ks.p_value)}"
    reason = (
        f"scaled residuals deviate from U(0,1) ({text}): the model's distribution does not match the data"
        if verdict == "warning"
        else f"scaled residuals consistent with U(0,1) ({text})"
    )
    return SimulationTest("uniformity", ks.statistic, ks.p_value, alternative, verdict, reason, ks.method, details={"exact": ks.exact, "ties": ks.ties})


def test_dispersion(diag: Diagnostics, alternative: str = "two-sided", alpha: float | None = None) -> SimulationTest:
    """DHARMa's default dispersion test (``testDispersion``, ``type = "DHARMa"``, no refit).

    Summary ``spread(x) = var(x - predicted) / sd(S)^2`` (S = the whole simulation matrix) on the
    data and on each simulation; statistic = spread(y) / mean(spread(simulations)) (> 1:
    overdispersion, < 1: underdispersion); simulation p-value by ``getP`` in the direction of
    ``alternative`` (``"greater"``: overdispersion only, the common failure of binomial and
    Poisson GLMMs; ``"less"``: underdispersion only). For k/n binomial responses with
    ``diag.trials``, ``predicted`` (a probability) is scaled to the expected count
    ``trials * predicted`` (see :func:`~mixedeval.diagnostics.from_simulations`).

    For 0/1 responses, observation-level over-dispersion does not exist (a Bernoulli variable's
    variance is fixed by its mean); aggregate the responses first
    (:func:`~mixedeval.diagnostics.aggregate_residuals`, DHARMa's ``recalculateResiduals``).
    """
    _check_alternative(alternative)
    alpha = diag.alpha if alpha is None else alpha
    sims, pred = diag.simulated, diag.predicted
    if diag.trials is not None:
        pred = pred * diag.trials
    expected_var = float(np.std(sims, ddof=1)) ** 2
    observed = float(np.var(diag.observed - pred, ddof=1)) / expected_var
    simulated = np.var(sims - pred[:, None], axis=0, ddof=1) / expected_var
    ratio, p, verdict = _ratio_and_p(observed, simulated, alternative, alpha)
    kind = "overdispersion" if ratio > 1 else "underdispersion"
    text = f"observed/simulated residual variance {ratio:.3g}, p={fmt_p(p)}"
    reason = f"{kind} ({text})" if verdict == "warning" else f"dispersion as simulated ({text})"
    return SimulationTest(
        "dispersion", ratio, p, alternative, verdict, reason,
        "DHARMa nonparametric dispersion test via sd of residuals fitted vs. simulated",
        observed_summary=observed, simulated_summaries=simulated,
    )


def _outlier_frequency(res: np.ndarray, margin: str) -> float:
    lo, hi = float(np.mean(res == 0)), float(np.mean(res == 1))
    return {"both": hi + lo, "upper": hi, "lower": lo}[margin]


def outlier_bootstrap_frequencies(simulated: np.ndarray, sel: np.ndarray, uniforms: np.ndarray, margin: str = "both") -> np.ndarray:
    """Outlier frequencies of DHARMa's bootstrap (``testOutliers(type = "bootstrap")``).

    Replicate i treats simulation i as data and the simulations ``sel[i]`` (n_sim indices drawn
    with replacement from all but i) as its simulations; ``uniforms[i]`` breaks PIT ties.
    """
    out = np.empty(sel.shape[0])
    for i in range(sel.shape[0]):
        res = pit_residuals(simulated[:, sel[i]], simulated[:, i], uniforms=uniforms[i])
        out[i] = _outlier_frequency(res, margin)
    return out


def test_outliers(
    diag: Diagnostics,
    alternative: str = "two-sided",
    margin: str = "both",
    type: str = "default",  # noqa: A002  (DHARMa's argument name)
    n_resamples: int = 100,
    random_state: Any = None,
    alpha: float | None = None,
) -> SimulationTest:
    """Test for too many / too few residuals outside the simulation envelope (``testOutliers``).

    ``type="default"`` is DHARMa 0.4.7's rule: binomial unless the response is integer-valued
    with at most 500 observations, then bootstrap (``n_resamples`` replicates -- DHARMa's
    ``nBoot`` -- at most n_sim). Binomial: outliers = #(r < 1/(n_sim+1)) + #(r > 1 - 1/(n_sim+1))
    (for continuous data exactly the residuals at 0 or 1), tested with R's ``binom.test`` against
    1/(n_sim+1) per margin, computed by ``scipy.stats.binomtest`` (the same two-sided rule: the
    outcomes with probability at most ``dbinom(x) * (1 + 1e-7)``).

    ``random_state`` (None, int, SeedSequence or Generator) draws the bootstrap; None uses the
    diagnostics' recorded ``random_state`` when it is an int, else fresh entropy.
    """
    _check_alternative(alternative)
    if margin not in ("both", "upper", "lower"):
        raise ValueError("margin must be 'both', 'upper' or 'lower'")
    if type not in ("default", "bootstrap", "binomial"):
        raise ValueError("type must be 'default', 'bootstrap' or 'binomial'")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise DataError(f"n_resamples must be a positive integer, not {n_resamples!r}")
    alpha = diag.alpha if alpha is None else alpha
    res, n_sim, n = diag.residuals, diag.n_sim, diag.n_obs
    if type == "default":
        type = "binomial" if (not diag.integer_response or n > 500) else "bootstrap"  # noqa: A001
    if type == "binomial":
        lo = int(np.sum(res < 1 / (n_sim + 1)))
        hi = int(np.sum(res > 1 - 1 / (n_sim + 1)))
        count = {"both": lo + hi, "upper": hi, "lower": lo}[margin]
        p_h0 = 1 / (n_sim + 1) * (2 if margin == "both" else 1)

        p = float(binomtest(count, n, p_h0, alternative=alternative).pvalue)
        expected = n * p_h0
        method = "DHARMa outlier test based on exact binomial test with approximate expectations"
        details: dict[str, Any] = {"expected": expected, "frequency": count / n, "margin": margin, "type": "binomial"}
        stat = float(count)
    else:
        if random_state is None and isinstance(diag.random_state, int):
            random_state = diag.random_state
        rng = as_generator(random_state)
        n_rep = min(int(n_resamples), n_sim)
        sel = np.stack([rng.choice(np.delete(np.arange(n_sim), i), size=n_sim, replace=True) for i in range(n_rep)])
        uniforms = rng.random((n_rep, n))
        freq_boot = outlier_bootstrap_frequencies(diag.simulated, sel, uniforms, margin)
        freq = _outlier_frequency(res, margin)
        p = simulation_p_value(freq_boot, freq, alternative)
        stat = freq * n
        expected = float(np.mean(freq_boot)) * n
        method = "DHARMa bootstrapped outlier test"
        details = {"expected": expected, "frequency": freq, "margin": margin, "type": "bootstrap", "bootstrap_frequencies": freq_boot}
    verdict = _verdict(p, alpha)
    text = f"{stat:.0f} of {n} outside the simulation envelope, expected {expected:.3g}, p={fmt_p(p)}"
    if verdict == "warning":
        reason = f"{'more' if stat > expected else 'fewer'} outliers than expected ({text})"
    else:
        reason = f"outlier count as expected ({text})"
    return SimulationTest("outliers", stat, p, alternative, verdict, reason, method, details=details)


def test_zero_inflation(diag: Diagnostics, alternative: str = "two-sided", alpha: float | None = None) -> SimulationTest:
    """``testZeroInflation`` (observed vs simulated number of zeros) for integer responses; for a
    continuous (Gaussian) response the test is meaningless and is reported as not applicable."""
    _check_alternative(alternative)
    if not diag.integer_response:
        return SimulationTest(
            "zero_inflation", float("nan"), float("nan"), alternative, "not_applicable",
            "continuous (e.g. Gaussian) response: zero-inflation is not defined",
            "DHARMa zero-inflation test (not run)",
        )
    out = test_generic(diag, lambda x: np.sum(x == 0), alternative=alternative, name="zero_inflation", alpha=alpha)
    reason = out.reason.replace("zero_inflation statistic", "number of zeros")
    return SimulationTest(
        "zero_inflation", out.statistic, out.p_value, alternative, out.verdict, reason,
        "DHARMa zero-inflation test via comparison to expected zeros with simulation under H0 = fitted model",
        observed_summary=out.observed_summary, simulated_summaries=out.simulated_summaries,
    )


def test_categorical(diag: Diagnostics, group: Any = None, alpha: float | None = None, label: str = "group"):
    """DHARMa's ``testCategorical``: within-level uniformity and between-level homogeneity.

    Returns ``(tests, per_level)``: two :class:`SimulationTest` rows (``uniformity_by_group``:
    largest D and smallest Holm-adjusted p over levels; ``levene``: Brown-Forsythe F test of the
    scaled residuals, as ``car::leveneTest(center = median)``) and a per-level DataFrame
    (``level, n, statistic, p_value, p_adj, exact, verdict``). ``group`` defaults to the grouping
    variable stored on ``diag``.
    """
    alpha = diag.alpha if alpha is None else alpha
    cat = diag.group if group is None else as_group(group, diag.n_obs, label)
    if cat is None:
        raise ValueError("no grouping variable: pass group=")
    codes = np.asarray(cat.codes)
    levels = [str(v) for v in cat.categories]
    res = diag.residuals
    rows = []
    for g, lev in enumerate(levels):
        ks = ks_test_uniform(res[codes == g])
        rows.append({"level": lev, "n": ks.n, "statistic": ks.statistic, "p_value": ks.p_value, "exact": ks.exact})
    per_level = pd.DataFrame(rows)
    per_level["p_adj"] = adjust_pvalues(per_level["p_value"].to_numpy(dtype=float), "holm")
    per_level["verdict"] = np.where(per_level["p_adj"] < alpha, "warning", "ok")
    per_level = per_level[GROUP_TEST_COLUMNS]

    bad = per_level.loc[per_level["verdict"] == "warning", "level"].tolist()
    min_adj = float(per_level["p_adj"].min())
    max_d = float(per_level["statistic"].max())
    if bad:
        shown = ", ".join(bad[:3]) + (" ..." if len(bad) > 3 else "")
        reason = f"residuals not uniform within {len(bad)} of {len(levels)} levels of {label} ({shown}; min Holm p={fmt_p(min_adj)})"
    else:
        reason = f"residuals uniform within every level of {label} (min Holm p={fmt_p(min_adj)})"
    uni = SimulationTest(
        "uniformity_by_group", max_d, min_adj, "two-sided", "warning" if bad else "ok", reason,
        f"KS test per level of {label}, Holm-adjusted", details={"group": label},
    )
    lev = levene_median(res, codes)
    if np.isnan(lev.p_value):
        levene = SimulationTest("levene", lev.statistic, lev.p_value, "greater", "not_applicable",
                                f"Levene test needs at least two levels of {label} and residual df > 0",
                                "Levene's test (center = median)")
    else:
        verdict = _verdict(lev.p_value, alpha)
        text = f"F({lev.df_num},{lev.df_den})={lev.statistic:.3g}, p={fmt_p(lev.p_value)}"
        reason = (f"residual spread differs between levels of {label} ({text})" if verdict == "warning"
                  else f"residual spread homogeneous across levels of {label} ({text})")
        levene = SimulationTest("levene", lev.statistic, lev.p_value, "greater", verdict, reason,
                                "Levene's test for homogeneity of variance (center = median)",
                                details={"df_num": lev.df_num, "df_den": lev.df_den, "group": label})
    return [uni, levene], per_level
