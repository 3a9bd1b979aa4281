"""Simulated-residual diagnostics for integer responses (GLMMs; issue 13 point 4).

* the randomized PIT residual on hand-derived cases, and its exact uniformity when the simulations
  reproduce the model's CDF;
* each test statistic against an independent computation: R's ``ks.test`` and ``binom.test``,
  and tests/dharma_reference.R (DHARMa 0.4.7's rules restated in plain R) on the same matrices;
* calibration by simulation from known binomial / Poisson models (numpy: the data and the
  ``simulated`` matrix come from the true model, so no refit): the uniformity and dispersion
  tests reject at about their level, and the dispersion test detects beta-binomial
  over-dispersion (benchmarks/calibration_diagnostics_glmm.py is the bigger version);
* end to end on real glmer fits (lme4's cbpp, a simulated 0/1 LLM x item table, grouseticks):
  the simulations, observations and predictions equal R's ``simulate()`` / ``predict()`` of the
  same model fitted in the test, and the diagnostics equal :func:`from_simulations` on R's matrices.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
import mixedeval.diagnostics as md
from mixedeval.diagnostics import aggregate_residuals, from_simulations, is_integer_response, ks_test_uniform, pit_residuals
from mixedeval.errors import DataError

RTOL = 1e-8
ALTERNATIVES = ["two-sided", "less", "greater"]
R_ALT = {"two-sided": "two.sided", "less": "less", "greater": "greater"}


# --------------------------------------------------------------------------------------- R access
@pytest.fixture(scope="module")
def r(R):
    import rpy2.robjects as ro

    ro.r.source(str(Path(__file__).with_name("dharma_reference.R")))
    return ro


def rvec(ro, x):
    return ro.FloatVector(np.asarray(x, dtype=float))


def rmat(ro, m):
    m = np.asarray(m, dtype=float)
    return ro.r.matrix(ro.FloatVector(m.ravel(order="F")), nrow=m.shape[0], ncol=m.shape[1])


def rlist(res) -> dict:
    return {k: res.rx2(k) for k in res.names}


def r_frame(ro, code: str) -> pd.DataFrame:
    from rpy2.robjects import pandas2ri
    from rpy2.robjects.conversion import localconverter

    with localconverter(ro.default_converter + pandas2ri.converter):
        return ro.conversion.get_conversion().rpy2py(ro.r(code))


# ----------------------------------------------------------------------------- known models (numpy)
def binomial_case(n=150, n_sim=200, trials=10, seed=0, rho=0.0):
    """k/n binomial data from a logistic model; rho > 0 draws the data beta-binomial with
    intra-class correlation rho (same mean), the simulations always binomial (the model)."""
    rng = np.random.default_rng(seed)
    p = 1 / (1 + np.exp(-rng.normal(scale=0.8, size=n)))
    tr = np.full(n, float(trials)) if np.isscalar(trials) else np.asarray(trials, dtype=float)
    sims = rng.binomial(tr.astype(int)[:, None], p[:, None], size=(n, n_sim)).astype(float)
    if rho > 0:
        a, b = p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho
        y = rng.binomial(tr.astype(int), rng.beta(a, b)).astype(float)
    else:
        y = rng.binomial(tr.astype(int), p).astype(float)
    return sims, y, p, tr


def poisson_case(n=150, n_sim=200, seed=0, zero_extra=0.0):
    rng = np.random.default_rng(seed)
    mu = np.exp(0.3 + rng.normal(scale=0.5, size=n))
    sims = rng.poisson(mu[:, None], size=(n, n_sim)).astype(float)
    y = rng.poisson(mu).astype(float)
    if zero_extra:
        y[rng.random(n) < zero_extra] = 0.0
    return sims, y, mu


# -------------------------------------------------------------------------------- PIT residuals
def test_randomized_pit_hand_derived():
    sims = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 1, 1], [1, 2, 2, 3]], dtype=float)
    obs = np.array([0, 1, 2, -1, 2], dtype=float)
    u = np.array([0.25, 0.5, 0.9, 0.3, 0.5])
    # row 1: 0 below, 2 at or below -> U(0, 1/2) at 0.25 = 0.125; row 2: U(1/2, 1) at 0.5 = 0.75;
    # row 3: all below, no tie -> 1; row 4: none at or below -> 0; row 5: U(1/4, 3/4) at 0.5 = 0.5
    np.testing.assert_allclose(pit_residuals(sims, obs, uniforms=u), [0.125, 0.75, 1.0, 0.0, 0.5], rtol=0, atol=1e-15)
    # with a random_state the draw lies between the two fractions and is reproducible
    a = pit_residuals(sims, obs, random_state=3)
    np.testing.assert_array_equal(a, pit_residuals(sims, obs, random_state=3))
    lower, upper = np.array([0, 0.5, 1, 0, 0.25]), np.array([0.5, 1, 1, 0, 0.75])
    assert np.all((lower <= a) & (a <= upper))
    np.testing.assert_array_equal(a, lower + (upper - lower) * np.random.default_rng(3).random(5))


def test_randomized_pit_is_exactly_uniform_with_the_true_cdf():
    """When each row of simulations holds the model's distribution exactly (Bernoulli(0.3) as 7
    zeros and 3 ones; a 3-point distribution), randomized PIT residuals of data drawn from the model
    are exactly U(0, 1) (Dunn & Smyth 1996): check mean, variance and R-rule KS."""
    rng = np.random.default_rng(11)
    n = 4000
    sims = np.tile(np.r_[np.zeros(7), np.ones(3)], (n, 1))
    y = (rng.random(n) < 0.3).astype(float)
    res = pit_residuals(sims, y, random_state=rng)
    three = np.tile(np.r_[np.zeros(2), np.ones(5), np.full(3, 2.0)], (n, 1))
    y3 = rng.choice([0.0, 1.0, 2.0], p=[0.2, 0.5, 0.3], size=n)
    res3 = pit_residuals(three, y3, random_state=rng)
    for x in (res, res3):
        assert abs(x.mean() - 0.5) < 4 * np.sqrt(1 / 12 / n)
        assert abs(x.var() - 1 / 12) < 0.006
        assert ks_test_uniform(x).p_value > 0.001
    # without the randomization (lower fraction only) the same residuals are far from uniform
    assert ks_test_uniform((sims < y[:, None]).mean(axis=1)).p_value < 1e-10


def test_integer_response_detection():
    for fam in ("binomial", "poisson", "Negative Binomial(2.5)", "negative_binomial", "betabinomial", "nbinom2"):
        assert is_integer_response(fam), fam
    for fam in ("gaussian", "Gamma", "beta", "inverse.gaussian"):
        assert not is_integer_response(fam), fam
    sims, y, p, _ = binomial_case(n=30, n_sim=20)
    assert is_integer_response(observed=y, simulated=sims)
    assert not is_integer_response(observed=y + 0.5, simulated=sims)
    assert not is_integer_response(observed=y, simulated=sims + np.random.default_rng(0).normal(size=sims.shape))
    # from_simulations decides it from the values when not told (DHARMa's createDHARMa check)
    assert from_simulations(sims, y, p * 10, random_state=0).integer_response
    g = np.random.default_rng(1).normal(size=(30, 20))
    assert not from_simulations(g, g[:, 0], np.zeros(30), random_state=0).integer_response
    d = from_simulations(sims, y, p * 10, integer_response=False, random_state=0)
    assert not d.integer_response and d.tests.set_index("test").loc["zero_inflation", "verdict"] == "not_applicable"


# ---------------------------------------------------------------- tests against independent code
@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_dispersion_k_of_n_matches_r(r, alternative):
    """k/n binomial: the residual is centred on the expected count trials * p; statistic and
    p-value equal DHARMa's rule in R (dharma_ref_dispersion) given trials * p as the prediction."""
    trials = np.random.default_rng(2).integers(1, 15, size=120).astype(float)
    sims, y, p, tr = binomial_case(n=120, n_sim=150, trials=trials, seed=2, rho=0.15)
    d = from_simulations(sims, y, p, trials=tr, random_state=1, alternative=alternative)
    ref = rlist(r.globalenv["dharma_ref_dispersion"](rmat(r, sims), rvec(r, y), rvec(r, tr * p), alternative))
    row = d.tests.set_index("test").loc["dispersion"]
    np.testing.assert_allclose(row["statistic"], ref["statistic"][0], rtol=RTOL)
    assert row["p_value"] == pytest.approx(ref["p.value"][0], rel=1e-12)
    assert row["alternative"] == alternative
    # hand formula: var(y - n p) / var(all simulations), relative to the same for each simulation
    ev = np.var(sims, ddof=1)
    obs = np.var(y - tr * p, ddof=1) / ev
    sim = np.var(sims - (tr * p)[:, None], axis=0, ddof=1) / ev
    np.testing.assert_allclose(row["statistic"], obs / sim.mean(), rtol=RTOL)
    # DHARMa 0.4.7's centring on the probability itself gives another (valid, weaker) statistic
    assert not np.isclose(md.test_dispersion(from_simulations(sims, y, p, random_state=1)).statistic, row["statistic"])


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_zero_inflation_and_uniformity_match_r(r, alternative):
    sims, y, mu = poisson_case(n=140, n_sim=120, seed=4, zero_extra=0.1)
    d = from_simulations(sims, y, mu, random_state=5, alternative=alternative)
    assert d.integer_response
    t = d.tests.set_index("test")
    zeros = r.r("function(x) sum(x == 0)")
    ref = rlist(r.globalenv["dharma_ref_generic"](rmat(r, sims), rvec(r, y), zeros, alternative))
    np.testing.assert_allclose(t.loc["zero_inflation", "statistic"], ref["statistic"][0], rtol=RTOL)
    assert t.loc["zero_inflation", "p_value"] == pytest.approx(ref["p.value"][0], rel=1e-12)
    # the residuals are the randomized PIT with numpy's draws from random_state=5 ...
    u = np.random.default_rng(5).random(y.size)
    ref_res = np.array(r.globalenv["dharma_ref_pit"](rmat(r, sims), rvec(r, y), rvec(r, u)))
    np.testing.assert_allclose(d.residuals, ref_res, rtol=RTOL)
    # ... and uniformity is R's ks.test on them (two-sided in the default table)
    ks = r.r["ks.test"](rvec(r, d.residuals), "punif")
    np.testing.assert_allclose(t.loc["uniformity", "statistic"], ks.rx2("statistic")[0], rtol=RTOL)
    np.testing.assert_allclose(t.loc["uniformity", "p_value"], ks.rx2("p.value")[0], rtol=RTOL)
    ks_alt = r.r["ks.test"](rvec(r, d.residuals), "punif", alternative=R_ALT[alternative])
    np.testing.assert_allclose(md.test_uniformity(d, alternative=alternative).p_value, ks_alt.rx2("p.value")[0], rtol=RTOL)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_outliers_for_integer_responses(r, alternative):
    """DHARMa's default for integer responses: the bootstrap up to 500 observations (R reference:
    dharma_ref_outliers_bootstrap with the same resampling indices and uniforms), binom.test above."""
    sims, y, p, tr = binomial_case(n=80, n_sim=60, trials=3, seed=6)
    y[:6] = tr[:6]  # some observations above most simulations
    d = from_simulations(sims, y, p, trials=tr, random_state=1)
    out = md.test_outliers(d, alternative=alternative, n_resamples=30, random_state=9)
    assert out.details["type"] == "bootstrap"
    rng = np.random.default_rng(9)  # the draws test_outliers makes from random_state=9
    sel = np.stack([rng.choice(np.delete(np.arange(60), i), size=60, replace=True) for i in range(30)])
    u = rng.random((30, y.size))
    ref = rlist(r.globalenv["dharma_ref_outliers_bootstrap"](rmat(r, sims), rvec(r, d.residuals), rmat(r, sel + 1),
                                                             rmat(r, u), alternative))
    np.testing.assert_allclose(out.details["bootstrap_frequencies"], np.array(ref["frequBoot"]), rtol=RTOL)
    assert out.p_value == pytest.approx(ref["p.value"][0], rel=1e-12)
    assert out.statistic == pytest.approx(ref["statistic"][0], rel=1e-12)

    big_sims, big_y, big_p, big_tr = binomial_case(n=700, n_sim=40, trials=4, seed=7)
    big = from_simulations(big_sims, big_y, big_p, trials=big_tr, random_state=1)
    b = md.test_outliers(big, alternative=alternative)
    assert b.details["type"] == "binomial"
    ref_b = rlist(r.globalenv["dharma_ref_outliers_binomial"](rvec(r, big.residuals), 40, alternative, "both"))
    assert b.statistic == ref_b["statistic"][0]
    np.testing.assert_allclose(b.p_value, ref_b["p.value"][0], rtol=RTOL)


def test_aggregate_residuals_match_r(r):
    """DHARMa's recalculateResiduals(group): sums per group (R's rowsum), PIT of the sums with the
    uniforms of random_state, tests on the sums."""
    sims, y, p, tr = binomial_case(n=120, n_sim=80, trials=1, seed=8)
    group = np.repeat([f"g{i:02d}" for i in range(30)], 4)
    d = from_simulations(sims, y, p, random_state=3)
    a = aggregate_residuals(d, group, random_state=4)
    gs = r.r["factor"](r.StrVector(group))
    sums_sim = np.array(r.r["rowsum"](rmat(r, sims), gs))
    sums_obs = np.array(r.r["rowsum"](rvec(r, y), gs)).ravel()
    sums_pred = np.array(r.r["rowsum"](rvec(r, p), gs)).ravel()
    np.testing.assert_allclose(a.simulated, sums_sim, rtol=RTOL)
    np.testing.assert_allclose(a.observed, sums_obs, rtol=RTOL)
    np.testing.assert_allclose(a.predicted, sums_pred, rtol=RTOL)
    u = np.random.default_rng(4).random(30)
    np.testing.assert_allclose(a.residuals, np.array(r.globalenv["dharma_ref_pit"](rmat(r, sums_sim), rvec(r, sums_obs), rvec(r, u))), rtol=RTOL)
    ref = rlist(r.globalenv["dharma_ref_dispersion"](rmat(r, sums_sim), rvec(r, sums_obs), rvec(r, sums_pred), "two-sided"))
    np.testing.assert_allclose(a.tests.set_index("test").loc["dispersion", "statistic"], ref["statistic"][0], rtol=RTOL)
    assert a.integer_response and a.n_obs == 30 and a.provenance["n_groups"] == 30
    with pytest.raises(DataError, match="observations"):
        aggregate_residuals(d, group[:-1])
    with pytest.raises(DataError, match="at least 3"):
        aggregate_residuals(d, np.repeat(["a", "b"], 60))


def test_trials_validation():
    sims, y, p, tr = binomial_case(n=30, n_sim=20, trials=2)
    with pytest.raises(DataError, match="trials"):
        from_simulations(sims, y, p, trials=tr[:-1])
    with pytest.raises(DataError, match="at most `trials`"):
        from_simulations(sims, y, p, trials=tr / 2)
    with pytest.raises(DataError, match="positive"):
        from_simulations(sims, y, p, trials=np.zeros(30))
    with pytest.raises(DataError, match="spelled 'two-sided'"):
        from_simulations(sims, y, p, trials=tr, alternative="two.sided")


# --------------------------------------------------------------------------- calibration (numpy)
def _p_values(case, reps, **kw):
    out = {"uniformity": [], "dispersion": [], "dispersion_greater": []}
    for i in range(reps):
        sims, y, pred, *tr = case(seed=1000 + i, **kw)
        d = from_simulations(sims, y, pred, trials=tr[0] if tr else None, random_state=i)
        t = d.tests.set_index("test")["p_value"]
        out["uniformity"].append(t["uniformity"])
        out["dispersion"].append(t["dispersion"])
        out["dispersion_greater"].append(md.test_dispersion(d, alternative="greater").p_value)
    return {k: np.asarray(v) for k, v in out.items()}


@pytest.mark.parametrize("case", ["binomial", "poisson"])
def test_level_under_the_true_model(case):
    """Data and simulations from the same binomial / Poisson model: 200 replicates of n = 100.
    Binomial(200, 0.05) puts 99.9% of rejection rates in [0.015, 0.095]. The dispersion
    p-value is discrete (steps of 1/n_sim) and two-sided by doubling, so its rate is at most ~5%."""
    fn = binomial_case if case == "binomial" else poisson_case
    pv = _p_values(fn, 200, n=100, n_sim=100)
    rate = np.mean(pv["uniformity"] < 0.05)
    assert 0.015 <= rate <= 0.095, rate
    assert ks_test_uniform(pv["uniformity"]).p_value > 0.001
    assert np.mean(pv["dispersion"] < 0.05) <= 0.095
    assert 0.015 <= np.mean(pv["dispersion_greater"] < 0.05) <= 0.095


def test_dispersion_detects_beta_binomial_overdispersion():
    """Beta-binomial data (10 trials, intra-class correlation 0.2: variance x 2.8) against the
    binomial model: the dispersion test flags it in nearly every replicate (power > 0.9), in the
    direction of over-dispersion (statistic > 1)."""
    stats, pv = [], []
    for i in range(60):
        sims, y, p, tr = binomial_case(n=100, n_sim=100, trials=10, seed=2000 + i, rho=0.2)
        t = md.test_dispersion(from_simulations(sims, y, p, trials=tr, random_state=i), alternative="greater")
        stats.append(t.statistic)
        pv.append(t.p_value)
    assert np.mean(np.asarray(pv) < 0.05) > 0.9
    assert np.median(stats) > 2


# ------------------------------------------------------------------------- end to end with glmer
@pytest.fixture(scope="module")
def cbpp(r):
    r.r("""
        cb_df <- lme4::cbpp
        cb_df$herd <- factor(as.character(cb_df$herd), levels = sort(unique(as.character(cb_df$herd)), method = "radix"))
        cb_df$period <- factor(as.character(cb_df$period), levels = sort(unique(as.character(cb_df$period)), method = "radix"))
        cb_m <- lme4::glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), family = binomial,
                            data = cb_df)
    """)
    df = r_frame(r, "transform(cb_df, herd = as.character(herd), period = as.character(period))")
    return me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd)", df, family="binomial")


def test_cbpp_simulations_and_tests_equal_r(r, R, cbpp):
    d = md.diagnose_fit(cbpp, n_sim=80, random_state=5)
    sims = R("s <- simulate(cb_m, nsim = 80, seed = 5, re.form = NA); sapply(s, function(x) x[, 1])")
    np.testing.assert_array_equal(d.simulated, sims)
    np.testing.assert_array_equal(d.observed, R("cb_df$incidence"))
    np.testing.assert_array_equal(d.trials, R("cb_df$size"))
    np.testing.assert_allclose(d.predicted, R("unname(predict(cb_m, re.form = NA, type = 'response'))"), rtol=RTOL)
    ref = from_simulations(sims, R("cb_df$incidence"), R("unname(predict(cb_m, re.form = NA, type = 'response'))"),
                           trials=R("cb_df$size"), integer_response=True, random_state=5)
    np.testing.assert_array_equal(d.residuals, ref.residuals)
    pd.testing.assert_frame_equal(d.tests, ref.tests)
    assert d.integer_response and d.random_state == 5 and d.provenance["family"] == "binomial"
    t = d.tests.set_index("test")
    assert t.loc["zero_inflation", "verdict"] in ("ok", "warning")  # applicable now
    assert t.loc["outliers", "method"] == "DHARMa bootstrapped outlier test"  # n = 56 <= 500
    checks = d.checks.set_index("check")
    assert checks.loc["normality_residuals", "verdict"] == "not_applicable"
    shapiro = R("shapiro.test(lme4::ranef(cb_m)$herd[, 1])$p.value")
    np.testing.assert_allclose(checks.loc["normality_ranef[herd:(Intercept)]", "p_value"], shapiro, rtol=1e-6)
    # conditional simulations keep the fitted herd effects (re.form = NULL)
    dc = md.diagnose_fit(cbpp, n_sim=20, random_state=6, re="conditional")
    sims_c = R("s <- simulate(cb_m, nsim = 20, seed = 6, re.form = NULL); sapply(s, function(x) x[, 1])")
    np.testing.assert_array_equal(dc.simulated, sims_c)
    assert dc.simulation == "conditional"


def test_proportion_with_weights_equals_cbind(cbpp):
    df = cbpp.data.copy() if isinstance(cbpp.data, pd.DataFrame) else None
    if df is None:
        pytest.skip("GLMMFit.data is not a DataFrame")
    df["prop"] = df["incidence"] / df["size"]
    fit_w = me.glmm("prop ~ period + (1|herd)", df, family="binomial", weights="size")
    a = md.diagnose_fit(fit_w, n_sim=40, random_state=2)
    b = md.diagnose_fit(cbpp, n_sim=40, random_state=2)
    np.testing.assert_array_equal(a.observed, b.observed)
    np.testing.assert_array_equal(a.trials, b.trials)
    np.testing.assert_array_equal(a.simulated, b.simulated)


@pytest.fixture(scope="module")
def llm_items(r):
    """0/1 outcomes of 2 systems x 60 items x 4 runs with an item effect and, in `y_od`, an
    item x system effect the model `(1|item)` leaves out (over-dispersion of the per-cell counts)."""
    r.r("""
        set.seed(42)
        it_df <- expand.grid(run = 1:4, system = c("A", "B"), item = sprintf("i%02d", 1:60), stringsAsFactors = FALSE)
        b_item <- rnorm(60, sd = 1)[as.integer(factor(it_df$item))]
        b_cell <- rnorm(120, sd = 1.5)[as.integer(factor(paste(it_df$item, it_df$system)))]
        eta <- 0.4 + 0.6 * (it_df$system == "B") + b_item
        it_df$y <- rbinom(nrow(it_df), 1, plogis(eta))
        it_df$y_od <- rbinom(nrow(it_df), 1, plogis(eta + b_cell))
        it_df$cell <- paste(it_df$item, it_df$system, sep = ":")
    """)
    return r_frame(r, "it_df")


def test_binary_llm_table_end_to_end(R, llm_items):
    fit = me.glmm("y ~ system + (1|item)", llm_items, family="binomial")
    d = fit.diagnose(n_sim=100, random_state=1) if hasattr(fit, "diagnose") else md.diagnose_fit(fit, n_sim=100, random_state=1)
    R("""it_df$item <- factor(it_df$item, levels = sort(unique(it_df$item), method = "radix"))
         it_m <- lme4::glmer(y ~ system + (1 | item), family = binomial, data = it_df)""")
    np.testing.assert_array_equal(d.simulated, R("as.matrix(simulate(it_m, nsim = 100, seed = 1, re.form = NA))"))
    assert d.integer_response and d.trials is None and set(np.unique(d.simulated)) <= {0.0, 1.0}
    assert d.n_obs == 480 and d.tests.set_index("test").loc["outliers", "method"] == "DHARMa bootstrapped outlier test"
    # per item x system cell (4 runs): the correct model shows no over-dispersion ...
    agg = aggregate_residuals(d, llm_items["cell"], alternative="greater")
    assert agg.n_obs == 120
    assert agg.tests.set_index("test").loc["dispersion", "p_value"] > 0.05


def test_missing_cell_effect_is_flagged_as_overdispersion(llm_items):
    """The 'Done when' of issue 13: 0/1 outcomes whose item x system variation the model leaves out
    are flagged: the cell sums are over-dispersed (dispersion warning, statistic > 1)."""
    fit = me.glmm("y_od ~ system + (1|item)", llm_items, family="binomial")
    d = md.diagnose_fit(fit, n_sim=200, random_state=3)
    agg = aggregate_residuals(d, llm_items["cell"], alternative="greater")
    row = agg.tests.set_index("test").loc["dispersion"]
    assert row["verdict"] == "warning" and row["p_value"] < 0.01
    assert row["statistic"] > 1.2 and "overdispersion" in row["reason"]


def test_poisson_grouseticks_end_to_end(r, R):
    r.r("""
        gt_df <- lme4::grouseticks
        for (v in c("BROOD", "LOCATION", "YEAR"))
          gt_df[[v]] <- factor(as.character(gt_df[[v]]), levels = sort(unique(as.character(gt_df[[v]])), method = "radix"))
        gt_m <- lme4::glmer(TICKS ~ YEAR + (1 | BROOD) + (1 | LOCATION), family = poisson, data = gt_df)
    """)
    df = r_frame(r, "data.frame(TICKS = gt_df$TICKS, YEAR = as.character(gt_df$YEAR), BROOD = as.character(gt_df$BROOD), "
                    "LOCATION = as.character(gt_df$LOCATION))")
    fit = me.glmm("TICKS ~ YEAR + (1|BROOD) + (1|LOCATION)", df, family="poisson")
    d = md.diagnose_fit(fit, n_sim=60, random_state=7, group="YEAR")
    np.testing.assert_array_equal(d.simulated, R("as.matrix(simulate(gt_m, nsim = 60, seed = 7, re.form = NA))"))
    zeros = R("s <- as.matrix(simulate(gt_m, nsim = 60, seed = 7, re.form = NA)); colSums(s == 0)")
    t = d.tests.set_index("test")
    np.testing.assert_allclose(t.loc["zero_inflation", "statistic"], np.sum(d.observed == 0) / zeros.mean(), rtol=RTOL)
    assert {"uniformity_by_group", "levene"} <= set(t.index) and list(d.group_tests["level"]) == ["95", "96", "97"]
    assert t.loc["outliers", "method"] == "DHARMa bootstrapped outlier test"  # integer response, n = 403 <= 500
    checks = d.checks.set_index("check")
    assert {"normality_ranef[BROOD:(Intercept)]", "normality_ranef[LOCATION:(Intercept)]"} <= set(checks.index)


def test_plots_for_integer_diagnostics(cbpp):
    from matplotlib.figure import Figure

    d = md.diagnose_fit(cbpp, n_sim=40, random_state=1)
    for fig in (md.plot_dharma(d), md.plot_simulation_test(d, "dispersion"), md.plot_simulation_test(d, "zero_inflation"),
                md.plot_simulation_test(d, md.test_generic(d, np.max, name="maximum")), md.plot_qq_uniform(d)):
        assert isinstance(fig, Figure)
    ax = md.plot_simulation_test(d).axes[0]
    assert ax.lines[0].get_xdata()[0] == pytest.approx(md.test_dispersion(d).observed_summary)
    with pytest.raises(ValueError, match="simulated summaries"):
        md.plot_simulation_test(d, md.test_uniformity(d))
    with pytest.raises(ValueError, match="test must be"):
        md.plot_simulation_test(d, "uniformity")


def test_glmm_checks_and_bad_arguments(cbpp):
    with pytest.raises(DataError, match="re must be"):
        md.diagnose_fit(cbpp, n_sim=20, re="fixed")
    with pytest.raises(DataError, match="group="):
        md.diagnose_fit(cbpp, n_sim=20, group="nope")
    with pytest.raises(DataError, match="n_sim"):
        md.diagnose_fit(cbpp, n_sim=5)
    with pytest.raises(DataError, match="spelled 'two-sided'"):
        md.diagnose_fit(cbpp, n_sim=20, alternative="two.sided")
    d = md.diagnose_fit(cbpp, n_sim=20, random_state=None)
    assert isinstance(d.random_state, int) and d.provenance["random_state"] == d.random_state
    np.testing.assert_array_equal(md.diagnose_fit(cbpp, n_sim=20, random_state=d.random_state).residuals, d.residuals)
