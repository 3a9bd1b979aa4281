"""Power and sample size by simulation (issue 16): the design builder, the R side against R
itself (simulated responses, per-simulation tests), the seeding, and the statistics against
closed forms: the level at effect 0, the noncentral-t power of the paired t test, the exact power
of McNemar's test, monotone power curves. CI-sized; the larger versions are in
benchmarks/bench_power.py."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

import mixedeval as me
from mixedeval.data._design_spec import extend_levels
from mixedeval.engine import _bridge
from mixedeval.workflows import _power_sim as ps
from mixedeval.workflows.power import _crossing, clopper_pearson

from conftest import OPTIMIZER_RTOL, assert_rel


def _mc_tol(p: float, n: int, k: float = 4.0) -> float:
    """k Monte-Carlo standard errors of a proportion p estimated from n simulations."""
    return k * math.sqrt(p * (1 - p) / n)


# ------------------------------------------------------------------------------------ design
def test_design_table_and_formula():
    d = me.design(systems=3, items=4, runs=2, raters=2, variances={"item": 1, "run": 0.1, "rater": 0.2,
                                                                     "residual": 0.5})
    assert len(d.table) == 3 * 4 * 2 * 2
    assert list(d.table.columns) == ["system", "item", "run", "rater", "score"]
    assert d.formula == "score ~ system + (1 | item) + (1 | system:run) + (1 | rater)"
    cells = d.table.groupby(["system", "item", "run", "rater"], observed=True).size()
    assert (cells == 1).all() and len(cells) == 48
    assert d.table["system"].cat.categories.tolist() == ["system_1", "system_2", "system_3"]
    assert d.group_variances() == {"item": 1.0, "system:run": 0.1, "rater": 0.2}
    assert d.sigma == pytest.approx(math.sqrt(0.5))
    assert d.components["component"].tolist() == ["item", "run", "rater", "residual"]
    big = d.extend("items", 10)
    assert big.sizes["items"] == 10 and len(big.table) == 3 * 10 * 2 * 2
    lang = me.design(systems=2, items=3, languages=2, variances={"item": 1, "language": 1, "residual": 1})
    per_lang = lang.table.groupby("language", observed=True)["item"].nunique()
    assert per_lang.tolist() == [3, 3] and lang.table["item"].nunique() == 6  # items nested in languages


@pytest.mark.parametrize("kwargs, fragment", [
    ({"variances": {"item": 1}}, "residual"),
    ({"variances": {"item": 1, "residual": 1, "typo": 1}}, "unknown variance component"),
    ({"variances": {"item": 1, "residual": 1, "system:item": 1}}, "not separable"),
    ({"variances": {"item": 1, "run": 1, "residual": 1}}, "at least 2 runs"),
    ({"variances": {"item": -1, "residual": 1}}, ">= 0"),
    ({"systems": 1}, "systems must be"),
    ({"family": "poisson"}, "family"),
    ({"family": "binomial", "variances": {"item": 1, "residual": 1}}, "no residual"),
])
def test_design_rejects_bad_input(kwargs, fragment):
    with pytest.raises(me.DataError, match=fragment):
        me.design(**kwargs)


def test_extend_levels_copies_or_keeps_levels():
    f = pd.DataFrame({"item": pd.Categorical(["a", "a", "b", "b"]), "y": [1.0, 2.0, 3.0, 4.0]})
    before = f.copy()
    up = extend_levels(f, "item", 5)
    assert up["item"].cat.categories.tolist() == ["a", "b", "a#2", "b#2", "a#3"]
    assert up.loc[up["item"] == "b#2", "y"].tolist() == [3.0, 4.0]
    down = extend_levels(f, "item", 2)
    assert len(down) == 4
    pd.testing.assert_frame_equal(f, before)  # the input is not modified
    with pytest.raises(me.DataError, match="not a column"):
        extend_levels(f, "nope", 3)


def test_clopper_pearson_and_crossing_by_hand():
    lo, hi = clopper_pearson(3, 10, 0.95)
    assert lo == pytest.approx(stats.beta.ppf(0.025, 3, 8), rel=1e-10)  # the beta-quantile form
    assert hi == pytest.approx(stats.beta.ppf(0.975, 4, 7), rel=1e-10)
    x, y = np.array([0.0, 1.0, 2.0]), np.array([0.05, 0.5, 0.9])
    assert _crossing(x, y, 0.8) == pytest.approx(1.75)
    assert math.isnan(_crossing(x, y, 0.95))


# ------------------------------------------------------------------------- the R side against R
@pytest.fixture(scope="module")
def small_design():
    return me.design(systems=2, items=12, runs=2, variances={"item": 1.0, "run": 0.2, "residual": 0.5})


def _design_in_r(R, n_items: int, runs: int) -> None:
    R(f"""
      pw_d <- expand.grid(run = sprintf("run_%d", 1:{runs}), item = sprintf("item_%02d", 1:{n_items}),
                          system = c("system_1", "system_2"), stringsAsFactors = TRUE)[, c("system", "item", "run")]
      pw_d$score <- 0
    """)


def test_design_table_equals_r_expand_grid(R, small_design):
    _design_in_r(R, 12, 2)
    for col in ("system", "item", "run"):
        assert small_design.table[col].astype(str).tolist() == [str(v) for v in R(f"as.character(pw_d${col})")]


def test_simulated_responses_equal_lme4_simulate(R, small_design):
    """Response i is lme4's simulate() after set.seed(s_i) with the design's parameters."""
    m = ps.from_design(small_design)
    ss = np.random.SeedSequence(7)
    seeds = ps.sim_seeds(ss, 0, 3)
    state = ps.setup(m, (0.4,), "sign_flip")
    Y = _bridge.power_responses(state, seeds)
    _design_in_r(R, 12, 2)
    for j, s in enumerate(seeds):
        y = R(f"""simulate(~ system + (1 | item) + (1 | system:run), newdata = pw_d, seed = {s},
                   newparams = list(beta = c(0, 0.4), theta = c(`item.(Intercept)` = 1 / sqrt(0.5),
                   `system:run.(Intercept)` = sqrt(0.2) / sqrt(0.5)), sigma = sqrt(0.5)))[[1]]""")
        assert_rel(Y[:, j], y)


def test_satterthwaite_p_values_equal_lmertest(R, small_design):
    """Each simulation's F test is lmerTest::contest of a lmerTest::lmer fit to that response."""
    res = me.power(small_design, 0.4, test="satterthwaite", n_sim=3, random_state=11)
    _design_in_r(R, 12, 2)
    for _, row in res.simulations.iterrows():
        out = R(f"""local({{
          pw_d$score <- simulate(~ system + (1 | item) + (1 | system:run), newdata = pw_d, seed = {row.r_seed},
                   newparams = list(beta = c(0, 0.4), theta = c(`item.(Intercept)` = 1 / sqrt(0.5),
                   `system:run.(Intercept)` = sqrt(0.2) / sqrt(0.5)), sigma = sqrt(0.5)))[[1]]
          m <- lmerTest::lmer(score ~ system + (1 | item) + (1 | system:run), data = pw_d)
          ct <- lmerTest::contest(m, matrix(c(0, 1), 1), joint = TRUE)
          c(lme4::fixef(m)[2], ct[["F value"]], ct[["DenDF"]], ct[["Pr(>F)"]])
        }})""")
        assert_rel([row.estimate, row.f_value, row.den_df, row.p_value], out)


def test_lrt_statistics_equal_anova_of_fresh_fits(R, small_design):
    """The likelihood-ratio statistic of each simulation equals lme4's anova(m0, m1) of fresh fits
    (our refits start from the template's theta, the fresh fits from lme4's default: two optimizer
    paths, hence OPTIMIZER_RTOL; the chi-square is flat at the optimum)."""
    res = me.power(small_design, 0.4, test="lrt", n_sim=3, random_state=5)
    assert res.null_formula == "score ~ 1 + (1 | item) + (1 | system:run)"
    _design_in_r(R, 12, 2)
    for _, row in res.simulations.iterrows():
        out = R(f"""local({{
          pw_d$score <- simulate(~ system + (1 | item) + (1 | system:run), newdata = pw_d, seed = {row.r_seed},
                   newparams = list(beta = c(0, 0.4), theta = c(`item.(Intercept)` = 1 / sqrt(0.5),
                   `system:run.(Intercept)` = sqrt(0.2) / sqrt(0.5)), sigma = sqrt(0.5)))[[1]]
          m1 <- lme4::lmer(score ~ system + (1 | item) + (1 | system:run), data = pw_d, REML = FALSE)
          m0 <- lme4::lmer(score ~ 1 + (1 | item) + (1 | system:run), data = pw_d, REML = FALSE)
          a <- anova(m0, m1)
          c(a[["Chisq"]][2], a[["Pr(>Chisq)"]][2])
        }})""")
        assert_rel([row.chisq, row.p_value], out, rtol=OPTIMIZER_RTOL, atol=1e-7)


def test_results_do_not_depend_on_batch_size(small_design):
    a = me.power(small_design, 0.4, test="lrt", n_sim=7, random_state=3, batch_size=7)
    b = me.power(small_design, 0.4, test="lrt", n_sim=7, random_state=3, batch_size=2)
    pd.testing.assert_frame_equal(a.simulations, b.simulations)
    c = me.power(small_design, 0.4, test="lrt", n_sim=4, random_state=3, batch_size=3)
    pd.testing.assert_frame_equal(c.simulations, a.simulations.head(4))  # a prefix of the longer run
    assert a.table.loc[0, "n_sim"] == 7 and a.power == a.simulations["p_value"].le(0.05).mean()


def test_pilot_fit_parameters_and_extension(R):
    """From a pilot LMMFit: beta with the effect replaced, theta and sigma as R estimated them."""
    rng = np.random.default_rng(1)
    n = 15
    pilot = pd.DataFrame({"sys": np.repeat(["a", "b"], n), "it": np.tile([f"i{k:02d}" for k in range(n)], 2)})
    u = rng.normal(0, 1, n)
    pilot["y"] = np.tile(u, 2) + 0.3 * (pilot["sys"] == "b") + rng.normal(0, 0.6, 2 * n)
    fit = me.lmm("y ~ sys + (1|it)", data=pilot)
    with pytest.raises(me.DataError, match="not a fixed-effect term"):
        me.power(fit, 0.25, n_sim=2)
    res = me.power(fit, 0.25, term="sys", test="lrt", n_sim=3, random_state=1)
    par = res.parameters.set_index(["parameter", "name"])["value"]
    import rpy2.robjects as robjects  # R is running (the R fixture started it)

    robjects.globalenv["pw_pilot"] = robjects.DataFrame({"y": robjects.FloatVector(pilot["y"]),
                                                         "sys": robjects.StrVector(pilot["sys"]),
                                                         "it": robjects.StrVector(pilot["it"])})
    want = R("local({m <- lme4::lmer(y ~ sys + (1|it), data = pw_pilot); "
             "c(lme4::fixef(m)[1], lme4::getME(m, 'theta'), sigma(m))})")
    assert_rel([par[("beta", "(Intercept)")], par[("theta", "it.(Intercept)")], par[("sigma", "residual")]], want)
    assert par[("beta", "sysb")] == 0.25
    curve = me.power_curve(fit, 0.25, term="sys", along="it", values=[10, 30], test="lrt", n_sim=3, random_state=1)
    assert curve.table["n_levels"].tolist() == [10, 30]
    with pytest.raises(me.DataError, match="item column"):
        me.power(fit, 0.25, term="sys", test="sign_flip", n_sim=2)
    ok = me.power(fit, 0.25, term="sys", test="sign_flip", n_sim=2, item="it", n_resamples=99, random_state=1)
    assert ok.table.loc[0, "n_used"] == 2


@pytest.mark.parametrize("kwargs, fragment", [
    ({"test": "nope"}, "test must be one of"),
    ({"test": "wald_z"}, "binomial GLMM"),
    ({"alpha": 1.5}, "alpha"),
    ({"n_sim": 0}, "n_sim"),
])
def test_power_rejects_bad_arguments(small_design, kwargs, fragment):
    with pytest.raises(me.DataError, match=fragment):
        me.power(small_design, 0.3, **kwargs)


def test_binomial_design_needs_a_binomial_test_and_two_systems_for_paired_tests():
    db = me.design(systems=2, items=10, family="binomial")
    with pytest.raises(me.DataError, match="binomial design"):
        me.power(db, 0.5, test="lrt", n_sim=2)
    d3 = me.design(systems=3, items=10)
    with pytest.raises(me.DataError, match="two systems"):
        me.power(d3, 0.5, test="sign_flip", n_sim=2)


# ----------------------------------------------------------------------- statistical behaviour
def test_power_at_effect_zero_is_the_level():
    d = me.design(systems=2, items=20, variances={"item": 1.0, "residual": 1.0})
    n = 240
    res = me.power(d, 0.0, test="lrt", n_sim=n, random_state=2024)
    assert abs(res.power - 0.05) <= _mc_tol(0.05, n), res.table
    assert res.conf_low <= 0.05 <= res.conf_high or abs(res.power - 0.05) <= _mc_tol(0.05, n)


def test_paired_design_matches_noncentral_t_power():
    """Two systems, every item scored once by each, Gaussian item effects: the LMM's t test of
    the system effect is the paired t test (df = n - 1), whose power is a noncentral-t tail."""
    n_items, s2_item, s2_res, effect, alpha = 16, 1.0, 0.5, 0.45, 0.05
    d = me.design(systems=2, items=n_items, variances={"item": s2_item, "residual": s2_res})
    n = 200
    res = me.power(d, effect, test="satterthwaite", n_sim=n, random_state=99)
    df = n_items - 1
    ncp = effect / math.sqrt(2 * s2_res / n_items)
    tc = stats.t.ppf(1 - alpha / 2, df)
    exact = stats.nct.sf(tc, df, ncp) + stats.nct.cdf(-tc, df, ncp)
    assert abs(res.power - exact) <= _mc_tol(exact, n), (res.power, exact)
    ok = res.simulations[~res.simulations["singular"].astype(bool)]
    assert len(ok) > 0.9 * n
    # balanced, item variance > 0: Satterthwaite df = n - 1 (numerically differentiated: 1e-4)
    assert (np.abs(ok["den_df"] - df) < 1e-4 * df).mean() >= 0.9


def _mcnemar_exact_power(n_items: int, b0: float, b1: float, s2: float, alpha: float) -> float:
    """Power of the exact (conditional binomial) McNemar test for a logit item model, computed
    from the discordance probabilities p10 = E[p0 (1 - p1)], p01 = E[(1 - p0) p1] over the item
    effect u ~ N(0, s2), p0 = expit(b0 + u), p1 = expit(b0 + b1 + u)."""
    dens = stats.norm(0, math.sqrt(s2)).pdf

    def e(f):
        return integrate.quad(lambda u: f(u) * dens(u), -12 * math.sqrt(s2), 12 * math.sqrt(s2))[0]

    p10 = e(lambda u: special.expit(b0 + u) * (1 - special.expit(b0 + b1 + u)))
    p01 = e(lambda u: (1 - special.expit(b0 + u)) * special.expit(b0 + b1 + u))
    pd_ = p10 + p01
    total = 0.0
    for k in range(1, n_items + 1):
        pk = stats.binom.pmf(k, n_items, pd_)
        for j in range(k + 1):
            if stats.binomtest(j, k, 0.5).pvalue <= alpha:
                total += pk * stats.binom.pmf(j, k, p01 / pd_)
    return total


def test_binomial_design_matches_exact_mcnemar_power():
    """0/1 correctness per item, two systems: the sign-flip test of the per-item differences is
    McNemar's exact test (the discordant items' signs), so its power is the exact McNemar power."""
    n_items, b0, b1, s2, alpha = 40, 0.0, 1.0, 1.0, 0.05
    d = me.design(systems=2, items=n_items, family="binomial", intercept=b0, variances={"item": s2})
    n = 300
    res = me.power(d, b1, test="sign_flip", n_sim=n, n_resamples=2000, random_state=5)
    exact = _mcnemar_exact_power(n_items, b0, b1, s2, alpha)
    assert abs(res.power - exact) <= _mc_tol(exact, n), (res.power, exact)


def test_power_curve_is_monotone_and_sample_size_consistent():
    d = me.design(systems=2, items=8, variances={"item": 1.0, "residual": 1.0})
    curve = me.power_curve(d, 0.6, along="items", values=[8, 24, 72], test="lrt", n_sim=50, random_state=3)
    pw = curve.table["power"].to_numpy()
    assert np.all(np.diff(pw) > 0), curve.table
    assert curve.table["n_levels"].tolist() == [8, 24, 72]
    ss = me.sample_size(d, 0.6, along="items", target=0.7, values=[8, 24, 72], test="lrt", n_sim=50, random_state=3)
    pd.testing.assert_frame_equal(ss.table, curve.table)  # same random_state: the same simulations
    t = ss.table.set_index("n_levels")
    assert ss.n_levels == min(n for n in t.index if t.loc[n, "power"] >= 0.7)
    assert ss.n_levels_low is None or ss.n_levels_low <= ss.n_levels
    assert ss.n_levels_high is None or ss.n_levels_high >= ss.n_levels


def test_sample_size_search_brackets_the_target():
    d = me.design(systems=2, items=6, variances={"item": 1.0, "residual": 1.0})
    ss = me.sample_size(d, 1.0, along="items", target=0.8, test="lrt", n_sim=12, random_state=1, max_levels=24)
    t = ss.table
    assert ss.n_levels is not None
    below = t.loc[t["n_levels"] < ss.n_levels, "power"]
    assert (below < 0.8).all() and t.loc[t["n_levels"] == ss.n_levels, "power"].iloc[0] >= 0.8


def test_minimum_detectable_effect_brackets_and_uses_common_random_numbers():
    d = me.design(systems=2, items=20, variances={"item": 1.0, "residual": 0.5})
    mde = me.minimum_detectable_effect(d, target=0.8, effects=[0.0, 0.3, 0.6, 0.9, 1.2], test="lrt", n_sim=60,
                                       random_state=4)
    t = mde.table
    assert t["effect"].tolist() == [0.0, 0.3, 0.6, 0.9, 1.2]
    assert np.all(np.diff(t["power"]) >= 0)  # common random numbers: the same draws shifted by the effect
    assert mde.effect_low <= mde.effect <= mde.effect_high
    j = int(np.argmax(t["power"].to_numpy() >= 0.8))
    assert t["effect"].iloc[j - 1] <= mde.effect <= t["effect"].iloc[j]
    # the closed form for this paired design: the effect with noncentral-t power 0.8
    df, se = 19, math.sqrt(2 * 0.5 / 20)
    tc = stats.t.ppf(0.975, df)
    closed = next(e for e in np.linspace(0.01, 2, 2000)
                  if stats.nct.sf(tc, df, e / se) + stats.nct.cdf(-tc, df, e / se) >= 0.8)
    assert mde.effect_low - 0.15 <= closed <= mde.effect_high + 0.15


def test_report_has_a_design_and_power_section(tmp_path):
    d = me.design(systems=2, items=8, variances={"item": 1.0, "residual": 1.0})
    curve = me.power_curve(d, 0.8, along="items", values=[8, 16], test="lrt", n_sim=10, random_state=1)
    one = curve.results[0]
    path = me.report(one, curve, path=tmp_path / "power.html", progress=False)
    html = open(path, encoding="utf-8").read()
    assert "Design and power" in html and "Design and power: power curve" in html
    assert "data:image/svg+xml" in html


def test_wald_z_equals_glmer_summary(R):
    """Binomial design, GLMM Wald z test: each simulation's z is that of a glmer fit with glmer's
    default control (its two-stage optimizer, the call me.glmm makes) to the same simulated 0/1
    response, computed in R with me.glmm's covariance rule (Hessian-based as summary(), RX-based
    when the two disagree by more than 10%), and equals me.glmm's own z on that response."""
    d = me.design(systems=2, items=30, family="binomial", intercept=0.2, variances={"item": 1.0})
    res = me.power(d, 0.7, test="wald_z", n_sim=3, random_state=8)
    R("""pw_b <- expand.grid(item = sprintf("item_%02d", 1:30), system = c("system_1", "system_2"),
                            stringsAsFactors = TRUE)[, c("system", "item")]""")
    n_rx = 0
    for _, row in res.simulations.iterrows():
        out = R(f"""local({{
          pw_b$score <- simulate(~ system + (1 | item), newdata = pw_b, family = binomial, seed = {row.r_seed},
                                 newparams = list(beta = c(0.2, 0.7), theta = c(`item.(Intercept)` = 1)))[[1]]
          pw_score <<- pw_b$score
          m <- lme4::glmer(score ~ system + (1 | item), data = pw_b, family = binomial)
          # me.glmm's documented rule: the RX-based covariance when the Hessian-based standard
          # errors are not finite or differ from it by more than 10%
          se_h <- suppressWarnings(sqrt(diag(as.matrix(vcov(m)))))
          se_rx <- sqrt(diag(as.matrix(vcov(m, use.hessian = FALSE))))
          rx <- any(!is.finite(se_h)) || any(abs(log(se_h / se_rx)) > log1p(0.10))
          b <- lme4::fixef(m)[2]
          z <- b / (if (rx) se_rx else se_h)[2]
          c(b, z, 2 * pnorm(-abs(z)), rx)
        }})""")
        assert_rel([row.estimate, row.z_value, row.p_value], out[:3])
        n_rx += int(out[3])
        df = pd.DataFrame({"system": np.repeat(["system_1", "system_2"], 30),
                           "item": np.tile([f"item_{i:02d}" for i in range(1, 31)], 2),
                           "score": np.asarray(R("pw_score"), dtype=float)})
        fixed = me.glmm("score ~ system + (1 | item)", df, family="binomial").fixed.set_index("term")
        assert_rel([row.estimate, row.z_value], [fixed.loc["systemsystem_2", "estimate"],
                                                 fixed.loc["systemsystem_2", "z_value"]])
    assert 0 < n_rx < len(res.simulations)  # both covariances are exercised (seed 8: one of three)
