"""Simulated-residual diagnostics (mixedeval.diagnostics) against R, by simulation, and on bad input.

R references are computed here, on the same simulation matrices: R's ks.test, binom.test,
p.adjust, shapiro.test, car::leveneTest, and tests/dharma_reference.R (DHARMa 0.4.7's residual
rule and tests restated in plain R, with the random draws passed in). Where mixedeval calls scipy
instead of a routine of its own (``scipy.stats.binomtest`` for binom.test,
``scipy.stats.levene(center="median")`` for car::leveneTest), the parity of scipy with R is
tested here.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixedeval._format import fmt_p
from mixedeval.errors import DataError
import mixedeval.diagnostics as md
from mixedeval.diagnostics import (
    Diagnostics,
    SimulationTest,
    classical_checks,
    diagnose_fit,
    from_simulations,
    ks_test_uniform,
    pit_residuals,
)
from mixedeval.diagnostics._levene import levene_median
from mixedeval.diagnostics._normality import normality_test, shapiro_wilk
from mixedeval.diagnostics.simtests import outlier_bootstrap_frequencies
from mixedeval.padjust import adjust_pvalues

RTOL = 1e-8
ALTERNATIVES = ["two-sided", "less", "greater"]
#: mixedeval's spelling -> R's (only where an R function is called)
R_ALT = {"two-sided": "two.sided", "less": "less", "greater": "greater"}


# --------------------------------------------------------------------------------------- R access
@pytest.fixture(scope="module")
def r(R):  # conftest's R fixture starts the package's embedded R session
    import rpy2.robjects as ro

    ro.r.source(str(Path(__file__).with_name("dharma_reference.R")))
    return ro


def rvec(ro, x):
    return ro.FloatVector(np.asarray(x, dtype=float))


def rmat(ro, m):
    m = np.asarray(m, dtype=float)
    return ro.r.matrix(ro.FloatVector(m.ravel(order="F")), nrow=m.shape[0], ncol=m.shape[1])


def num(x) -> np.ndarray:
    return np.array(x, dtype=float, copy=True)


def rlist(res) -> dict:
    return {k: res.rx2(k) for k in res.names}


# ------------------------------------------------------------------------------------- test data
def gaussian_case(n=300, n_sim=250, seed=0, sd_obs=1.0):
    rng = np.random.default_rng(seed)
    pred = rng.normal(size=n)
    sims = pred[:, None] + rng.normal(size=(n, n_sim))
    y = pred + sd_obs * rng.normal(size=n)
    return sims, y, pred


def count_case(n=120, n_sim=100, seed=0, lam=2.0):
    rng = np.random.default_rng(seed)
    mu = lam * np.exp(rng.normal(scale=0.3, size=n))
    sims = rng.poisson(mu[:, None], size=(n, n_sim)).astype(float)
    y = rng.poisson(mu).astype(float)
    return sims, y, mu


# -------------------------------------------------------------------------------- residual rule
def test_pit_residuals_continuous_match_r(r):
    sims, y, _ = gaussian_case(n=200, n_sim=50, seed=1)
    y[:3] = [-10.0, 10.0, sims[2].max()]  # below all, above all, equal to the maximum (a tie)
    u = np.random.default_rng(5).random(y.size)
    ours = pit_residuals(sims, y, uniforms=u)
    ref = num(r.globalenv["dharma_ref_pit"](rmat(r, sims), rvec(r, y), rvec(r, u)))
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=0)
    assert ours[0] == 0.0 and ours[1] == 1.0
    assert 49 / 50 <= ours[2] <= 1.0


def test_pit_residuals_with_ties_match_r(r):
    sims, y, _ = count_case(seed=2)
    u = np.random.default_rng(7).random(y.size)
    ours = pit_residuals(sims, y, uniforms=u)
    ref = num(r.globalenv["dharma_ref_pit"](rmat(r, sims), rvec(r, y), rvec(r, u)))
    below = (sims < y[:, None]).mean(axis=1)
    assert (ours != below).sum() > y.size // 2  # randomisation was exercised
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=0)


def test_from_simulations_residuals_are_seeded_pit():
    sims, y, pred = count_case(seed=3)
    d1 = from_simulations(sims, y, pred, integer_response=True, random_state=42)
    d2 = from_simulations(sims, y, pred, integer_response=True, random_state=42)
    d3 = from_simulations(sims, y, pred, integer_response=True, random_state=43)
    np.testing.assert_array_equal(d1.residuals, d2.residuals)
    assert not np.array_equal(d1.residuals, d3.residuals)
    expected = pit_residuals(sims, y, random_state=np.random.default_rng(42))
    np.testing.assert_array_equal(d1.residuals, expected)
    np.testing.assert_array_equal(pit_residuals(sims, y, random_state=42), expected)
    assert d1.random_state == 42


def test_random_state_forms_and_their_record():
    """random_state takes None, an int, a SeedSequence or a Generator; the result records what
    reproduces the draws (the int, or the SeedSequence entropy; None for a caller's Generator)."""
    sims, y, pred = count_case(seed=3)
    d_int = from_simulations(sims, y, pred, integer_response=True, random_state=7)
    d_ss = from_simulations(sims, y, pred, integer_response=True, random_state=np.random.SeedSequence(7))
    np.testing.assert_array_equal(d_int.residuals, d_ss.residuals)  # an int is SeedSequence(int)
    assert d_ss.random_state == 7
    fresh = from_simulations(sims, y, pred, integer_response=True)
    assert isinstance(fresh.random_state, int)
    again = from_simulations(sims, y, pred, integer_response=True,
                             random_state=np.random.SeedSequence(fresh.random_state))
    np.testing.assert_array_equal(fresh.residuals, again.residuals)
    d_gen = from_simulations(sims, y, pred, integer_response=True, random_state=np.random.default_rng(7))
    np.testing.assert_array_equal(d_gen.residuals, d_int.residuals)
    assert d_gen.random_state is None
    assert d_int.to_dict()["random_state"] == 7 and "random_state: 7" in repr(d_int)
    for bad in (-1, 1.5, "seed", True):
        with pytest.raises(DataError, match="random_state"):
            from_simulations(sims, y, pred, random_state=bad)


# ----------------------------------------------------------------------------------- KS test
@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_ks_matches_r_both_branches(r, alternative):
    rng = np.random.default_rng(11)
    cases = []
    for n in (1, 2, 5, 17, 60, 99):  # exact branch: n < 100, no ties
        for power in (1.0, 1.6, 3.0):
            cases.append(rng.random(n) ** power)
    for n in (100, 250, 1500):  # asymptotic branch
        for power in (1.0, 1.3):
            cases.append(rng.random(n) ** power)
    cases.append(np.round(rng.random(40), 1))  # n < 100 with ties: asymptotic
    cases.append(np.array([0.0, 0.0, 1.0, 1.0, 0.5]))
    seen = set()
    for x in cases:
        res = r.r["ks.test"](rvec(r, x), "punif", alternative=R_ALT[alternative])
        ours = ks_test_uniform(x, alternative)
        assert ours.exact == bool(res.rx2("exact")[0])
        seen.add(ours.exact)
        np.testing.assert_allclose(ours.statistic, res.rx2("statistic")[0], rtol=1e-12)
        np.testing.assert_allclose(ours.p_value, res.rx2("p.value")[0], rtol=RTOL, atol=1e-300)
    assert seen == {True, False}


def test_ks_tiny_pvalues_match_r(r):
    rng = np.random.default_rng(3)
    for n in (30, 90, 400):
        x = rng.random(n) ** 4
        res = r.r["ks.test"](rvec(r, x), "punif")
        np.testing.assert_allclose(ks_test_uniform(x).p_value, res.rx2("p.value")[0], rtol=1e-8)


def test_uniformity_row_equals_r_ks_on_residuals(r):
    for n in (60, 500):  # exact (n < 100, continuous residuals without ties) and asymptotic
        sims, y, pred = gaussian_case(n=n, n_sim=1000, seed=n)
        d = from_simulations(sims, y, pred, random_state=1)
        row = d.tests.set_index("test").loc["uniformity"]
        res = r.r["ks.test"](rvec(r, d.residuals), "punif")
        expected_exact = n < 100 and np.unique(d.residuals).size == n
        assert row["method"].startswith("Exact" if expected_exact else "Asymptotic")
        np.testing.assert_allclose(row["statistic"], res.rx2("statistic")[0], rtol=1e-12)
        np.testing.assert_allclose(row["p_value"], res.rx2("p.value")[0], rtol=RTOL)
        assert row["alternative"] == "two-sided"


# --------------------------------------------------------------------------------- dispersion
@pytest.mark.parametrize("sd_obs", [1.0, 1.3, 0.8])
@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_dispersion_matches_r(r, sd_obs, alternative):
    sims, y, pred = gaussian_case(n=400, n_sim=100, seed=5, sd_obs=sd_obs)
    d = from_simulations(sims, y, pred, random_state=1)
    ours = md.test_dispersion(d, alternative=alternative)
    ref = rlist(r.globalenv["dharma_ref_dispersion"](rmat(r, sims), rvec(r, y), rvec(r, pred), alternative))
    np.testing.assert_allclose(ours.statistic, ref["statistic"][0], rtol=RTOL)
    np.testing.assert_allclose(ours.simulated_summaries, num(ref["simulated"]), rtol=RTOL)
    assert ours.p_value == pytest.approx(ref["p.value"][0], rel=1e-12)
    if alternative == "two-sided":
        row = d.tests.set_index("test").loc["dispersion"]
        assert row["statistic"] == ours.statistic and row["p_value"] == ours.p_value


# ----------------------------------------------------------------------------------- outliers
def test_scipy_binomtest_matches_r_binom_test(r):
    """The outlier test calls scipy.stats.binomtest: it applies R's two-sided rule (outcomes with
    dbinom <= dbinom(x) * (1 + 1e-7)), so it gives binom.test's p-value. (Below ~1e-240 scipy's
    binomial CDF underflows where R's does not; such p-values are far beyond any verdict.)"""
    from scipy.stats import binomtest

    for n in (1, 7, 60, 251, 7287):
        for p in (2 / 251, 2 / 11, 0.3, 0.5, 0.97):
            m = n * p
            for x in sorted({0, 1, n, n // 2, int(m), int(m) + 1, max(0, int(m) - 2), min(n, int(1.7 * m) + 1)}):
                for alt in ALTERNATIVES:
                    ref = r.r["binom.test"](x, n, p=p, alternative=R_ALT[alt]).rx2("p.value")[0]
                    np.testing.assert_allclose(binomtest(x, n, p, alternative=alt).pvalue, ref, rtol=RTOL, atol=1e-300)
    for n in (10, 11, 100, 101):  # p = 0.5: ties of dbinom on both sides of the mode
        for x in range(n + 1):
            ref = r.r["binom.test"](x, n, p=0.5).rx2("p.value")[0]
            np.testing.assert_allclose(binomtest(x, n, 0.5).pvalue, ref, rtol=RTOL)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("margin", ["both", "upper", "lower"])
def test_outliers_binomial_matches_r(r, alternative, margin):
    sims, y, pred = gaussian_case(n=600, n_sim=50, seed=8, sd_obs=1.25)  # wider data: extra outliers
    d = from_simulations(sims, y, pred, random_state=1)
    ours = md.test_outliers(d, alternative=alternative, margin=margin)
    ref = rlist(r.globalenv["dharma_ref_outliers_binomial"](rvec(r, d.residuals), 50, alternative, margin))
    assert ours.statistic == ref["statistic"][0]
    np.testing.assert_allclose(ours.p_value, ref["p.value"][0], rtol=RTOL)
    assert ours.details["type"] == "binomial"
    # for continuous data the outliers are exactly the residuals at 0 or 1
    if margin == "both":
        assert ours.statistic == np.sum((d.residuals == 0) | (d.residuals == 1))


def test_outliers_bootstrap_matches_r(r):
    sims, y, pred = count_case(n=80, n_sim=40, seed=9)
    d = from_simulations(sims, y, pred, integer_response=True, random_state=1)
    rng = np.random.default_rng(4)
    n_boot, n_sim = 20, 40
    sel = np.stack([rng.choice(np.delete(np.arange(n_sim), i), size=n_sim) for i in range(n_boot)])
    u = rng.random((n_boot, y.size))
    ours = outlier_bootstrap_frequencies(sims, sel, u)
    ref = rlist(r.globalenv["dharma_ref_outliers_bootstrap"](
        rmat(r, sims), rvec(r, d.residuals), rmat(r, sel + 1), rmat(r, u), "two-sided"))
    np.testing.assert_allclose(ours, num(ref["frequBoot"]), rtol=RTOL)
    # DHARMa 0.4.7's default picks the bootstrap for integer responses with n <= 500
    res = md.test_outliers(d)
    assert res.details["type"] == "bootstrap" and res.method == "DHARMa bootstrapped outlier test"
    assert len(res.details["bootstrap_frequencies"]) == min(100, n_sim)
    big = from_simulations(*count_case(n=600, n_sim=40, seed=1), integer_response=True, random_state=1)
    assert md.test_outliers(big).details["type"] == "binomial"


def test_outlier_bootstrap_n_resamples_and_random_state():
    sims, y, pred = count_case(n=80, n_sim=40, seed=9)
    d = from_simulations(sims, y, pred, integer_response=True, random_state=1)
    a = md.test_outliers(d, n_resamples=15, random_state=3)
    b = md.test_outliers(d, n_resamples=15, random_state=np.random.default_rng(3))
    assert len(a.details["bootstrap_frequencies"]) == 15
    np.testing.assert_array_equal(a.details["bootstrap_frequencies"], b.details["bootstrap_frequencies"])
    # without random_state the diagnostics' recorded int seeds the bootstrap: reproducible
    np.testing.assert_array_equal(md.test_outliers(d).details["bootstrap_frequencies"],
                                  md.test_outliers(d).details["bootstrap_frequencies"])
    assert len(md.test_outliers(d, n_resamples=500).details["bootstrap_frequencies"]) == 40  # at most n_sim
    with pytest.raises(DataError, match="n_resamples"):
        md.test_outliers(d, n_resamples=0)


# ---------------------------------------------------------------------- generic, zero-inflation
@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_generic_and_zero_inflation_match_r(r, alternative):
    sims, y, pred = count_case(n=150, n_sim=200, seed=12, lam=0.8)
    y[:15] = 0.0  # some zero-inflation
    d = from_simulations(sims, y, pred, integer_response=True, random_state=1)
    zeros_r = r.r("function(x) sum(x == 0)")
    ref = rlist(r.globalenv["dharma_ref_generic"](rmat(r, sims), rvec(r, y), zeros_r, alternative))
    zi = md.test_zero_inflation(d, alternative=alternative)
    np.testing.assert_allclose(zi.statistic, ref["statistic"][0], rtol=RTOL)
    assert zi.p_value == pytest.approx(ref["p.value"][0], rel=1e-12)
    assert zi.test == "zero_inflation"

    max_r = r.r("function(x) max(x)")
    ref = rlist(r.globalenv["dharma_ref_generic"](rmat(r, sims), rvec(r, y), max_r, alternative))
    g = md.test_generic(d, np.max, alternative=alternative, name="maximum")
    np.testing.assert_allclose(g.statistic, ref["statistic"][0], rtol=RTOL)
    assert g.p_value == pytest.approx(ref["p.value"][0], rel=1e-12)
    m = d.test_generic(np.max, alternative=alternative, name="maximum")
    assert (m.statistic, m.p_value, m.test) == (g.statistic, g.p_value, "maximum")


def test_zero_inflation_not_applicable_for_gaussian():
    sims, y, pred = gaussian_case(n=50, n_sim=20)
    row = from_simulations(sims, y, pred, random_state=0).tests.set_index("test").loc["zero_inflation"]
    assert row["verdict"] == "not_applicable" and np.isnan(row["p_value"]) and "Gaussian" in row["reason"]


# -------------------------------------------------------------------------------- categorical
def test_categorical_matches_r(r):
    rng = np.random.default_rng(21)
    n = 420
    group = rng.choice(["b", "a", "c", "d"], size=n)
    sd = pd.Series(group).map({"a": 1.0, "b": 1.0, "c": 1.6, "d": 1.0}).to_numpy()
    pred = rng.normal(size=n)
    sims = pred[:, None] + rng.normal(size=(n, 100))
    y = pred + sd * rng.normal(size=n)
    d = from_simulations(sims, y, pred, random_state=2, group=group, group_label="system")
    ref = rlist(r.globalenv["dharma_ref_categorical"](rvec(r, d.residuals), r.StrVector(group)))
    levels = list(ref["levels"])
    gt = d.group_tests.set_index("level").loc[levels]
    np.testing.assert_allclose(gt["statistic"], num(ref["statistic"]), rtol=1e-12)
    np.testing.assert_allclose(gt["p_value"], num(ref["p.value"]), rtol=RTOL)
    np.testing.assert_allclose(gt["p_adj"], num(ref["p.adj"]), rtol=RTOL)
    tests = d.tests.set_index("test")
    np.testing.assert_allclose(tests.loc["levene", "statistic"], ref["levene.F"][0], rtol=RTOL)
    np.testing.assert_allclose(tests.loc["levene", "p_value"], ref["levene.p"][0], rtol=RTOL)
    assert tests.loc["uniformity_by_group", "p_value"] == pytest.approx(min(num(ref["p.adj"])), rel=1e-12)
    assert gt.loc["c", "verdict"] == "warning" and tests.loc["levene", "verdict"] == "warning"
    assert "system" in tests.loc["levene", "reason"]


def test_categorical_small_groups_use_exact_ks(r):
    rng = np.random.default_rng(5)
    n = 90
    group = np.repeat(["x", "y", "z"], 30)
    sims = rng.normal(size=(n, 5000))  # residuals k/5000: ties within a group of 30 are rare
    y = rng.normal(size=n)
    d = from_simulations(sims, y, np.zeros(n), random_state=0, group=pd.Categorical(group, categories=["z", "y", "x", "unused"]))
    assert list(d.group_tests["level"]) == ["z", "y", "x"]  # categorical order kept, unused dropped
    ref = rlist(r.globalenv["dharma_ref_categorical"](rvec(r, d.residuals), r.StrVector(group)))
    gt = d.group_tests.set_index("level").loc[list(ref["levels"])]
    for lev, row in gt.iterrows():  # R's rule: exact when n < 100 and no ties
        assert row["exact"] == (np.unique(d.residuals[group == lev]).size == 30)
    assert gt["exact"].any()
    np.testing.assert_allclose(gt["p_value"], num(ref["p.value"]), rtol=RTOL)


def test_holm_and_levene_against_r(r):
    """Holm is mixedeval.adjust_pvalues (one implementation); Levene is scipy.stats.levene with
    median centring, which equals car::leveneTest."""
    p = np.array([0.01, 0.04, 0.03, 0.2, 0.005, 0.04])
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), num(r.r["p.adjust"](rvec(r, p), "holm")), rtol=1e-14)
    rng = np.random.default_rng(0)
    car = r.r("function(y, g) { t <- car::leveneTest(y, factor(g), center = median); "
              "c(t[1, 'F value'], t[1, 'Pr(>F)'], t[1, 'Df'], t[2, 'Df']) }")
    cases = [(rng.gamma(2.0, size=57), np.repeat([0, 1, 2], 19))]
    for _ in range(30):  # unbalanced groups, 2 to 7 levels, skewed and scaled
        k = int(rng.integers(2, 8))
        codes = np.repeat(np.arange(k), rng.integers(2, 40, size=k))
        cases.append((rng.gamma(rng.uniform(0.5, 3), size=codes.size) * (1 + 0.3 * codes), codes))
    for y, codes in cases:
        lev = levene_median(y, codes)
        ref = num(car(rvec(r, y), r.IntVector(codes)))
        np.testing.assert_allclose([lev.statistic, lev.p_value], ref[:2], rtol=RTOL)
        assert (lev.df_num, lev.df_den) == (ref[2], ref[3])


def test_levene_undefined_cases():
    assert np.isnan(levene_median(np.arange(5.0), np.zeros(5, dtype=int)).p_value)  # one level
    assert np.isnan(levene_median(np.arange(2.0), np.array([0, 1])).p_value)  # no residual df
    y = np.array([1.0, 1.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    codes = np.array([0, 0, 0, 1, 1, 1, 1])
    lev = levene_median(np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0]), np.array([0, 0, 0, 1, 1, 1]))
    assert np.isnan(lev.statistic) and np.isnan(lev.p_value)  # no spread anywhere
    assert np.isfinite(levene_median(y, codes).statistic)


# ------------------------------------------------------------------------------ normality tests
def test_shapiro_wilk_matches_r(r):
    rng = np.random.default_rng(4)
    for n in (3, 4, 7, 11, 12, 40, 300, 5000):
        x = rng.standard_t(4, size=n)
        res = r.r["shapiro.test"](rvec(r, x))
        ours = shapiro_wilk(x)
        np.testing.assert_allclose(ours.statistic, res.rx2("statistic")[0], rtol=1e-10)
        np.testing.assert_allclose(ours.p_value, res.rx2("p.value")[0], rtol=RTOL)


def test_dagostino_above_5000_matches_r_formula(r):
    x = np.random.default_rng(6).standard_t(8, size=6000)
    ours = normality_test(x)
    ref = rlist(r.globalenv["dharma_ref_dagostino"](rvec(r, x)))
    assert ours.method.startswith("D'Agostino")
    np.testing.assert_allclose(ours.statistic, ref["statistic"][0], rtol=1e-8)
    np.testing.assert_allclose(ours.p_value, ref["p.value"][0], rtol=1e-8)


# ----------------------------------------------------------------------------- behaviour (no R)
def test_type_one_error_under_correct_model():
    """Data from the model's own assumptions (random-intercept model, conditional simulations):
    uniformity and dispersion p-values ~ U(0, 1), rejection rate near 5%."""
    rng = np.random.default_rng(2024)
    reps, n_groups, per, n_sim = 300, 20, 8, 100
    p_uni, p_disp = [], []
    for _ in range(reps):
        b = rng.normal(scale=0.8, size=n_groups)
        g = np.repeat(np.arange(n_groups), per)
        mu = 1.0 + b[g]
        y = mu + rng.normal(size=mu.size)
        sims = mu[:, None] + rng.normal(size=(mu.size, n_sim))
        d = from_simulations(sims, y, np.full(mu.size, 1.0), random_state=rng)
        t = d.tests.set_index("test")["p_value"]
        p_uni.append(t["uniformity"])
        p_disp.append(t["dispersion"])
    p_uni = np.array(p_uni)
    rate = np.mean(p_uni < 0.05)
    assert 0.02 <= rate <= 0.09, rate  # binomial(300, 0.05): 99.9% range ~[0.017, 0.093]
    assert ks_test_uniform(p_uni).p_value > 0.001
    assert np.mean(np.array(p_disp) < 0.05) <= 0.09


def test_heavy_tails_flagged_by_uniformity_and_outliers():
    rng = np.random.default_rng(1)
    n, n_sim = 1000, 250
    pred = rng.normal(size=n)
    y = pred + rng.standard_t(2, size=n) / np.sqrt(2.0)  # heavy tails, ~unit scale
    sims = pred[:, None] + rng.normal(size=(n, n_sim))
    d = from_simulations(sims, y, pred, random_state=0)
    v = d.tests.set_index("test")["verdict"]
    assert v["uniformity"] == "warning" and v["outliers"] == "warning"
    assert "more outliers" in d.tests.set_index("test").loc["outliers", "reason"]
    assert not d.ok


def test_group_heteroscedasticity_flagged_by_levene():
    rng = np.random.default_rng(2)
    n = 900
    group = np.repeat(["low", "mid", "high"], n // 3)
    sd = np.repeat([0.6, 1.0, 1.3], n // 3)
    pred = rng.normal(size=n)
    y = pred + sd * rng.normal(size=n)
    sims = pred[:, None] + rng.normal(scale=np.sqrt(np.mean(sd**2)), size=(n, 250))
    d = from_simulations(sims, y, pred, random_state=0, group=pd.Series(group, name="domain"))
    t = d.tests.set_index("test")
    assert t.loc["levene", "verdict"] == "warning"
    assert t.loc["uniformity_by_group", "verdict"] == "warning" and "domain" in t.loc["levene", "reason"]
    assert t.loc["dispersion", "verdict"] == "ok"  # pooled spread is right; only the split is wrong


def test_overdispersion_flagged():
    sims, y, pred = gaussian_case(n=500, n_sim=250, seed=3, sd_obs=1.4)
    row = from_simulations(sims, y, pred, random_state=0).tests.set_index("test").loc["dispersion"]
    assert row["verdict"] == "warning" and row["statistic"] > 1.5 and "overdispersion" in row["reason"]


# --------------------------------------------------------------------------------- bad input
def test_bad_input_raises_clear_errors():
    sims, y, pred = gaussian_case(n=30, n_sim=20)
    with pytest.raises(DataError, match="at least 10"):
        from_simulations(sims[:, :9], y, pred)
    with pytest.raises(DataError, match="transposed"):
        from_simulations(sims.T, y, pred)
    with pytest.raises(DataError, match="2-D"):
        from_simulations(sims[:, 0], y, pred)
    bad = sims.copy()
    bad[4, 7] = np.nan
    with pytest.raises(DataError, match=r"NaN or infinite values \(first at row 4, column 7\)"):
        from_simulations(bad, y, pred)
    y_bad = y.copy()
    y_bad[2] = np.inf
    with pytest.raises(DataError, match="observed"):
        from_simulations(sims, y_bad, pred)
    with pytest.raises(DataError, match="predicted"):
        from_simulations(sims, y, pred[:-1])
    with pytest.raises(DataError, match="missing"):
        from_simulations(sims, y, pred, group=[None] + ["a"] * 29)
    with pytest.raises(DataError, match="30 observations"):
        from_simulations(sims, y, pred, group=["a"] * 29)
    with pytest.raises(DataError, match="numeric"):
        from_simulations(np.full((30, 20), "x"), y, pred)
    assert not np.isnan(sims).any()  # the caller's arrays are never modified


def test_result_object_and_inputs_are_protected():
    sims, y, pred = gaussian_case(n=40, n_sim=30)
    d = from_simulations(sims, y, random_state=0)  # no predictions: row means, with a warning
    assert isinstance(d, Diagnostics)
    assert any(w.kind == "predicted_missing" for w in d.warnings)
    np.testing.assert_allclose(d.predicted, sims.mean(axis=1))
    sims[0, 0] = 99.0
    assert d.simulated[0, 0] != 99.0
    with pytest.raises(ValueError):
        d.residuals[0] = 0.5
    assert list(d.tests.columns[:5]) == ["test", "statistic", "p_value", "alternative", "verdict"]
    assert set(d.tests["verdict"]) <= {"ok", "warning", "not_applicable"}
    assert d.tests["reason"].str.len().gt(10).all()
    payload = d.to_dict()
    json.dumps(payload)
    assert "_simulated" not in payload and len(payload["residuals"]) == 40
    assert "uniformity" in repr(d) and "<table" in d._repr_html_()
    # the main table: every test (and, for a fitted model, every check) in one table
    assert list(d.table.columns) == ["source", "name", "statistic", "p_value", "alternative", "verdict", "reason", "method"]
    assert list(d.table["name"]) == list(d.tests["test"]) and set(d.table["source"]) == {"simulated_residuals"}
    assert d.to_frame().equals(d.table)
    assert list(d.summary().columns) == ["source", "name", "verdict", "reason"]
    t = md.test_dispersion(d)
    assert isinstance(t, SimulationTest) and list(t.table.columns) == list(d.tests.columns)
    assert t.table.iloc[0]["test"] == "dispersion" and t.to_frame().equals(t.table)


def test_p_values_in_reasons_use_the_one_formatter():
    assert (fmt_p(0.0), fmt_p(3.2e-12), fmt_p(0.04567), fmt_p(1.0)) == ("<1e-300", "3.20e-12", "0.0457", "1.0000")
    assert fmt_p(float("nan")) == "NA" and fmt_p(None) == "NA"
    sims, y, pred = gaussian_case(n=500, n_sim=250, seed=3, sd_obs=1.4)
    d = from_simulations(sims, y, pred, random_state=0)
    for _, row in d.tests.iterrows():
        if np.isfinite(row["p_value"]) and row["test"] != "uniformity_by_group":
            assert f"p={fmt_p(row['p_value'])}" in row["reason"], row["reason"]


def test_individual_tests_reject_bad_alternative():
    sims, y, pred = gaussian_case(n=40, n_sim=30)
    d = from_simulations(sims, y, pred, random_state=0)
    with pytest.raises(DataError, match="alternative"):
        md.test_uniformity(d, alternative="both")
    for test in (md.test_uniformity, md.test_dispersion, md.test_outliers, md.test_zero_inflation):
        with pytest.raises(DataError, match="spelled 'two-sided'"):  # R's spelling is not ours
            test(d, alternative="two.sided")
    with pytest.raises(ValueError, match="alternative"):
        ks_test_uniform(d.residuals, "two.sided")
    with pytest.raises(ValueError, match="grouping"):
        md.test_categorical(d)


def test_import_is_light():
    code = (
        "import sys, mixedeval.diagnostics as md; md.from_simulations; md.diagnose_fit; "
        "print('matplotlib' in sys.modules, 'rpy2' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# ------------------------------------------------------------------------ diagnose_fit (fake fit)
class FakeFit:
    """A random-intercept model y = b0 + beta[system] + u[item] + e with the LMMFit interface,
    simulated in numpy (true parameters play the role of estimates and BLUPs)."""

    def __init__(self, seed=0, n_items=40, hetero=False, singular=False, converged=True, warnings=()):
        rng = np.random.default_rng(seed)
        systems = np.array(["A", "B", "C"])
        self.item = np.repeat(np.arange(n_items), 3)
        self.system = np.tile(systems, n_items)
        self.beta = pd.Series({"A": 0.0, "B": 0.5, "C": 1.0})
        self.tau = 0.0 if singular else 0.7
        self.u = rng.normal(scale=self.tau, size=n_items)
        self.sd = np.where(self.system == "C", 2.0, 0.7) if hetero else np.ones(self.item.size)
        self.sigma = float(np.sqrt(np.mean(self.sd**2)))
        self.pop = 10.0 + self.beta[self.system].to_numpy()
        self.y = self.pop + self.u[self.item] + self.sd * rng.normal(size=self.item.size)
        self.singular, self.converged, self.warnings = singular, converged, tuple(warnings)
        self.provenance = {"estimator": "REML"}
        self.simulate_calls = 0

    def simulate(self, n_sim, random_state=123, re="unconditional"):
        self.simulate_calls += 1
        rng = np.random.default_rng(random_state)
        n = self.y.size
        if re == "unconditional":
            u = rng.normal(scale=self.tau, size=(self.u.size, n_sim))[self.item]
        else:
            u = self.u[self.item][:, None]
        return self.pop[:, None] + u + rng.normal(scale=self.sigma, size=(n, n_sim))

    def response_values(self):
        return self.y.copy()

    def fitted(self, re="conditional"):
        return self.pop.copy() if re == "population" else self.pop + self.u[self.item]

    def residuals(self):
        return self.y - self.fitted("conditional")

    def ranef(self):
        return {"item": pd.DataFrame({"(Intercept)": self.u}, index=[str(i) for i in range(self.u.size)])}

    def model_frame(self):
        return pd.DataFrame({"ter": self.y, "system": pd.Categorical(self.system),
                             "item": pd.Categorical(self.item.astype(str))})


def test_diagnose_fit_good_model():
    fit = FakeFit(seed=1)
    d = diagnose_fit(fit, n_sim=200, random_state=7, group="system")
    assert d.simulation == "unconditional" and d.n_sim == 200 and d.n_obs == fit.y.size
    assert set(d.tests["test"]) == {"uniformity", "dispersion", "outliers", "zero_inflation", "uniformity_by_group", "levene"}
    checks = d.checks.set_index("check")
    assert list(d.checks.columns[:5]) == ["check", "statistic", "p_value", "verdict", "reason"]
    assert {"convergence", "singular_fit", "normality_residuals", "normality_ranef[item:(Intercept)]",
            "levene[system]", "levene[item]"} <= set(checks.index)
    assert checks.loc["convergence", "verdict"] == "ok" and checks.loc["singular_fit", "verdict"] == "ok"
    assert checks.loc["normality_ranef[item:(Intercept)]", "method"] == "Shapiro-Wilk normality test"
    # dispersion uses the population-level predictions and the fit's simulations
    expected = from_simulations(fit.simulate(200, random_state=7), fit.y, fit.fitted("population"), random_state=7)
    np.testing.assert_array_equal(d.residuals, expected.residuals)
    assert d.tests.set_index("test").loc["dispersion", "p_value"] == expected.tests.set_index("test").loc["dispersion", "p_value"]
    np.testing.assert_allclose(d.conditional_residuals, fit.residuals())
    assert "item" in d.ranef and d.provenance["random_state"] == 7 and d.provenance["estimator"] == "REML"
    assert d.random_state == 7 and "seed" not in d.provenance
    # the main table holds the tests, then the classical checks
    t = d.table
    assert list(t["source"]) == ["simulated_residuals"] * len(d.tests) + ["classical"] * len(d.checks)
    assert list(t["name"]) == list(d.tests["test"]) + list(d.checks["check"])
    assert t.loc[t["source"] == "classical", "alternative"].isna().all()


def test_diagnose_fit_random_state_forms():
    """One int seeds R's simulation and the numpy tie-breaking; other forms become one int
    (recorded), so the recorded value reproduces the diagnosis."""
    fit = FakeFit(seed=1)
    d = diagnose_fit(fit, n_sim=50, random_state=np.random.SeedSequence(11))
    assert isinstance(d.random_state, int) and d.provenance["random_state"] == d.random_state
    again = diagnose_fit(fit, n_sim=50, random_state=d.random_state)
    np.testing.assert_array_equal(d.residuals, again.residuals)
    assert isinstance(diagnose_fit(fit, n_sim=50, random_state=None).random_state, int)
    assert isinstance(diagnose_fit(fit, n_sim=50, random_state=np.random.default_rng(1)).random_state, int)
    calls = fit.simulate_calls
    with pytest.raises(DataError, match="random_state"):
        diagnose_fit(fit, n_sim=50, random_state=-3)
    assert fit.simulate_calls == calls  # rejected before simulating


def test_diagnose_fit_flags_problems():
    fit = FakeFit(seed=2, n_items=150, hetero=True, singular=True, converged=False,
                  warnings=[type("W", (), {"kind": "r_warning", "__str__": lambda s: "[r_warning] odd"})()])
    d = diagnose_fit(fit, n_sim=100, random_state=3, re="conditional", group=fit.model_frame()["system"])
    checks = d.checks.set_index("check")
    assert checks.loc["convergence", "verdict"] == "warning"
    assert checks.loc["singular_fit", "verdict"] == "warning"
    assert checks.loc["normality_ranef[item:(Intercept)]", "verdict"] == "not_applicable"
    assert checks.loc["levene[system]", "verdict"] == "warning"
    assert checks.loc["model_warnings", "verdict"] == "warning" and "odd" in checks.loc["model_warnings", "reason"]
    assert d.tests.set_index("test").loc["levene", "verdict"] == "warning"
    assert not d.ok and d.simulation == "conditional"


def test_classical_levene_matches_r(r):
    fit = FakeFit(seed=4, hetero=True)
    checks = classical_checks(fit.residuals(), fit.model_frame(), fit.ranef(), False, True).set_index("check")
    ref = r.r("function(y, g) car::leveneTest(y, factor(g), center = median)")(
        rvec(r, fit.residuals()), r.StrVector(fit.system))
    np.testing.assert_allclose(checks.loc["levene[system]", "statistic"], ref.rx2("F value")[0], rtol=RTOL)
    np.testing.assert_allclose(checks.loc["levene[system]", "p_value"], ref.rx2("Pr(>F)")[0], rtol=RTOL)
    sw = r.r["shapiro.test"](rvec(r, fit.residuals()))
    np.testing.assert_allclose(checks.loc["normality_residuals", "p_value"], sw.rx2("p.value")[0], rtol=RTOL)


def test_diagnose_fit_bad_arguments_fail_before_simulating():
    fit = FakeFit()
    with pytest.raises(DataError, match="at least 10"):
        diagnose_fit(fit, n_sim=5)
    with pytest.raises(DataError, match="not a column"):
        diagnose_fit(fit, group="language")
    with pytest.raises(DataError, match="unconditional"):
        diagnose_fit(fit, re="marginal")
    assert fit.simulate_calls == 0


# ---------------------------------------------------------------------------------------- plots
def test_plots_save_png_and_svg(tmp_path):
    from matplotlib.figure import Figure

    from mixedeval.diagnostics import (
        plot_dharma,
        plot_qq_normal,
        plot_qq_uniform,
        plot_ranef_qq,
        plot_residuals_by_group,
        plot_residuals_vs_fitted,
        plot_residuals_vs_predicted,
    )

    fit = FakeFit(seed=5)
    d = diagnose_fit(fit, n_sim=50, random_state=1, group="system")
    figs = {
        "qq_uniform": plot_qq_uniform(d),
        "resid_pred": plot_residuals_vs_predicted(d),
        "resid_pred_raw": plot_residuals_vs_predicted(d, rank=False, quantile_lines=False),
        "by_group": plot_residuals_by_group(d),
        "by_item": plot_residuals_by_group(d, group=fit.model_frame()["item"]),
        "ranef": plot_ranef_qq(fit.ranef()),
        "ranef_diag": plot_ranef_qq(d),
        "resid_fitted": plot_residuals_vs_fitted(d),
        "resid_fitted_arrays": plot_residuals_vs_fitted(fit.fitted(), fit.residuals()),
        "qq_normal": plot_qq_normal(d),
        "dharma": plot_dharma(d),
    }
    for name, fig in figs.items():
        assert isinstance(fig, Figure)
        for ext in ("png", "svg"):
            path = tmp_path / f"{name}.{ext}"
            fig.savefig(path)
            assert path.stat().st_size > 1000
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert "<svg" in (tmp_path / f"{name}.svg").read_text()[:2000]
    # the annotations carry the test results
    texts = [t.get_text() for t in figs["qq_uniform"].axes[0].texts]
    p_ks = d.tests.set_index("test").loc["uniformity", "p_value"]
    assert f"KS test: p = {fmt_p(p_ks)}" in texts
    with pytest.raises(ValueError, match="grouping"):
        plot_residuals_by_group(from_simulations(*gaussian_case(n=20, n_sim=10), random_state=0))
