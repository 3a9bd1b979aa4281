"""me.r2 / me.icc of GLMMs (Nakagawa, Johnson & Schielzeth 2017; MuMIn's r.squaredGLMM) against
R computed inside the tests: performance::r2_nakagawa / performance::icc where they compute
the same quantity (0/1 responses, logit and probit: the theoretical observation-level
variance), and MuMIn's formulas written out by hand in R otherwise (binomial with trials,
the delta method, Poisson and negative binomial: delta, lognormal, trigamma; random slopes).

performance 0.10.2 (insight 0.19) computes the Poisson lognormal variance with
``mu = exp(b0_null)`` where MuMIn uses ``exp(b0_null + vt / 2)``, and divides nothing by the
number of binomial trials, so those cases are checked by hand only.

The R models in the tests use the control mixedeval's glmm uses (lme4's default), so both fits take the
same path and 1e-8 applies."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

import mixedeval as me
from mixedeval.inference._r2_glmm import glmm_variance

CTRL = "control = lme4::glmerControl()"

#: MuMIn's r.squaredGLMM formulas by hand, for models whose random effects are intercepts:
#: returns c(R2m, R2c, ICCadj, ICCunadj) per observation-level variance, given var_obs
HAND = """
hand_vf <- function(m) var(drop(model.matrix(m) %*% lme4::fixef(m)))
hand_vr <- function(m) sum(sapply(lme4::VarCorr(m), function(s) s[1, 1]))
hand_ratios <- function(vf, vr, vo) c(vf / (vf + vr + vo), (vf + vr) / (vf + vr + vo), vr / (vr + vo),
                                      vr / (vf + vr + vo))
"""


@pytest.fixture(scope="module")
def rdata(R):
    from mixedeval.engine import convert

    R(HAND)
    R("""
      cbpp_df <- as.data.frame(lme4::cbpp)
      grouse_df <- as.data.frame(lme4::grouseticks)
      grouse_df$zHEIGHT <- as.numeric(scale(grouse_df$HEIGHT))
      verb_df <- as.data.frame(lme4::VerbAgg)
      verb_df <- droplevels(verb_df[verb_df$id %in% levels(verb_df$id)[1:100], ])  # 100 persons x 24 items
      verb_df$r2 <- as.integer(verb_df$r2 == "Y")  # 0/1 (glmer codes the factor N < Y the same way)
      rownames(verb_df) <- NULL
      set.seed(20170213)
      slope_df <- data.frame(g = factor(rep(sprintf("g%02d", 1:40), each = 25)), x = runif(1000, -1, 1))
      u0 <- rnorm(40, 0, 1); u1 <- rnorm(40, 0, 0.7)
      slope_df$y <- rbinom(1000, 1, plogis(-0.3 + 0.8 * slope_df$x + u0[slope_df$g] + u1[slope_df$g] * slope_df$x))
    """)
    return {k: convert.from_r(R(f"{k}_df", raw=True)) for k in ("cbpp", "grouse", "verb", "slope")}


def _ratios(res_r2, res_icc, method: str) -> list[float]:
    a = res_r2.table.set_index("method").loc[method]
    b = res_icc.table.set_index("method").loc[method]
    return [a["r2_marginal"], a["r2_conditional"], b["icc_adjusted"], b["icc_unadjusted"]]


def _perf(R, model: str) -> list[float]:
    return [R(f"performance::r2_nakagawa({model})$R2_marginal")[0],
            R(f"performance::r2_nakagawa({model})$R2_conditional")[0],
            R(f"performance::icc({model})$ICC_adjusted")[0], R(f"performance::icc({model})$ICC_unadjusted")[0]]


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_verbagg_binary_vs_performance(R, rdata, link):
    """0/1 responses, crossed persons x items (the LLM x item shape; lme4's VerbAgg, its first 100
    persons to keep the test fast): theoretical = performance."""
    f = "r2 ~ Anger + Gender + btype + (1|id) + (1|item)"
    R(f"m_verb <- lme4::glmer({f}, data = verb_df, family = binomial('{link}'), {CTRL})")
    fit = me.glmm(f, rdata["verb"], family="binomial", link=link)
    r2, icc = me.r2(fit), me.icc(fit)
    assert r2.method == icc.method == "theoretical"
    assert_rel([r2.r2_marginal, r2.r2_conditional, icc.icc_adjusted, icc.icc_unadjusted], _perf(R, "m_verb"))
    assert r2.table["method"].tolist() == ["theoretical", "delta"]
    assert_rel(r2.var_residual, np.pi ** 2 / 3 if link == "logit" else 1.0)
    # components: var(X beta) and each VarCorr variance, in VarCorr's order
    comp = r2.components
    assert_rel(comp["variance"].iloc[0], R("hand_vf(m_verb)")[0])
    vc = R("sapply(lme4::VarCorr(m_verb), function(s) s[1, 1])")
    assert comp["group"].iloc[1:3].tolist() == list(R("names(lme4::VarCorr(m_verb))"))
    assert_rel(comp["variance"].iloc[1:3], vc)
    # delta method by hand: p from the null model's intercept (MuMIn)
    R(f"""
      n_verb <- lme4::glmer(r2 ~ 1 + (1|id) + (1|item), data = verb_df, family = binomial('{link}'), {CTRL})
      b0 <- unname(lme4::fixef(n_verb)); vt <- hand_vr(n_verb)
      p <- binomial('{link}')$linkinv(b0 - 0.5 * vt * tanh(b0 * (1 + 2 * exp(-0.5 * vt)) / 6))
      vo <- if ('{link}' == 'logit') 1 / (p * (1 - p)) else 2 * pi * p * (1 - p) * exp(qnorm(p)^2)
      h_verb <- hand_ratios(hand_vf(m_verb), hand_vr(m_verb), vo)
    """)
    assert_rel(_ratios(r2, icc, "delta"), R("h_verb"))
    assert_rel(me.r2(fit, method="delta").r2_marginal, R("h_verb[1]")[0])


def test_cbpp_trials_hand_derivation(R, rdata):
    """cbind(successes, failures): MuMIn divides the observation-level variance by the mean
    number of trials (its .binomial.sample.size); performance does not, so by hand."""
    f = "cbind(incidence, size - incidence) ~ period + (1|herd)"
    R(f"""
      m_cb <- lme4::glmer({f}, data = cbpp_df, family = binomial, {CTRL})
      n_cb <- lme4::glmer(cbind(incidence, size - incidence) ~ 1 + (1|herd), data = cbpp_df, family = binomial,
                          {CTRL})
      b0 <- unname(lme4::fixef(n_cb)); vt <- hand_vr(n_cb); n <- mean(cbpp_df$size)
      p <- plogis(b0 - 0.5 * vt * tanh(b0 * (1 + 2 * exp(-0.5 * vt)) / 6))
      h_cb <- rbind(hand_ratios(hand_vf(m_cb), hand_vr(m_cb), pi^2 / 3 / n),
                    hand_ratios(hand_vf(m_cb), hand_vr(m_cb), 1 / (n * p * (1 - p))))
    """)
    fit = me.glmm(f, rdata["cbpp"], family="binomial")
    r2, icc = me.r2(fit), me.icc(fit)
    h = np.asarray(R("h_cb"))
    assert_rel(_ratios(r2, icc, "theoretical"), h[0])
    assert_rel(_ratios(r2, icc, "delta"), h[1])
    assert_rel(r2.parameters["n_trials"], R("n")[0])
    assert_rel(r2.parameters["p_mean"], R("p")[0])


def test_grouseticks_poisson_hand_derivation(R, rdata):
    """Poisson, two crossed grouping factors: delta, lognormal, trigamma with
    lambda = exp(b0_null + vt / 2) (MuMIn)."""
    f = "TICKS ~ YEAR + zHEIGHT + (1|BROOD) + (1|LOCATION)"
    R(f"""
      m_gt <- lme4::glmer({f}, data = grouse_df, family = poisson, {CTRL})
      n_gt <- lme4::glmer(TICKS ~ 1 + (1|BROOD) + (1|LOCATION), data = grouse_df, family = poisson, {CTRL})
      lam <- exp(unname(lme4::fixef(n_gt)) + 0.5 * hand_vr(n_gt))
      h_gt <- sapply(c(1 / lam, log1p(1 / lam), trigamma(lam)), function(vo) hand_ratios(hand_vf(m_gt),
                                                                                        hand_vr(m_gt), vo))
    """)
    fit = me.glmm(f, rdata["grouse"], family="poisson")
    r2, icc = me.r2(fit), me.icc(fit)
    h = np.asarray(R("h_gt"))
    for j, method in enumerate(["delta", "lognormal", "trigamma"]):
        assert_rel(_ratios(r2, icc, method), h[:, j])
    assert r2.method == "trigamma" and r2.r2_marginal == r2.table["r2_marginal"].iloc[2]
    assert_rel(r2.parameters["lambda"], R("lam")[0])
    assert r2.table["var_observation_formula"].tolist() == ["1/lambda", "log(1+1/lambda)", "trigamma(lambda)"]


def test_negative_binomial_hand_derivation(R, rdata):
    """glmer.nb: v = 1/lambda + 1/theta; the null model keeps the fit's theta (MuMIn's update of
    the glmer call lme4 stores for a glmer.nb fit)."""
    f = "TICKS ~ YEAR + zHEIGHT + (1|LOCATION)"
    R(f"""
      m_nb <- lme4::glmer.nb({f}, data = grouse_df, {CTRL})
      th <- lme4::getME(m_nb, "glmer.nb.theta")
      n_nb <- lme4::glmer(TICKS ~ 1 + (1|LOCATION), data = grouse_df, family = MASS::negative.binomial(theta = th),
                          {CTRL})
      lam <- exp(unname(lme4::fixef(n_nb)) + 0.5 * hand_vr(n_nb)); v <- 1 / lam + 1 / th
      h_nb <- sapply(c(v, log1p(v), trigamma(1 / v)), function(vo) hand_ratios(hand_vf(m_nb), hand_vr(m_nb), vo))
    """)
    fit = me.glmm(f, rdata["grouse"], family="negative_binomial")
    r2, icc = me.r2(fit), me.icc(fit)
    h = np.asarray(R("h_nb"))
    for j, method in enumerate(["delta", "lognormal", "trigamma"]):
        assert_rel(_ratios(r2, icc, method), h[:, j])
    assert_rel(r2.parameters["theta"], R("th")[0])


def test_random_slope_vs_performance_and_hand(R, rdata):
    """(1 + x|g): var_random = mean_i(z_i' Sigma z_i) (Johnson 2014); performance agrees for
    correlated slopes."""
    f = "y ~ x + (1 + x|g)"
    R(f"""
      m_sl <- lme4::glmer({f}, data = slope_df, family = binomial, {CTRL})
      S <- lme4::VarCorr(m_sl)$g; Z <- cbind(1, slope_df$x)
      vr_sl <- mean(rowSums((Z %*% S) * Z))
      h_sl <- hand_ratios(hand_vf(m_sl), vr_sl, pi^2 / 3)
    """)
    fit = me.glmm(f, rdata["slope"], family="binomial")
    r2, icc = me.r2(fit), me.icc(fit)
    assert_rel(_ratios(r2, icc, "theoretical"), R("h_sl"))
    assert_rel([r2.r2_marginal, r2.r2_conditional, icc.icc_adjusted, icc.icc_unadjusted], _perf(R, "m_sl"))


def test_latent_r2_recovers_the_simulated_truth():
    """Simulated 0/1 data with known latent variances (fixed 1.0, item 1.5, logistic pi^2/3): the
    theoretical R² and ICC are close to the truth on a large table."""
    rng = np.random.default_rng(7)
    n_items, n_sys = 400, 2
    item = np.repeat(np.arange(n_items), n_sys * 10)
    system = np.tile(np.repeat([0, 1], 10), n_items)
    u = rng.normal(0, np.sqrt(1.5), n_items)
    eta = -0.2 + 2.0 * system + u[item]  # var(2 * system) = 1.0 with balanced systems
    y = rng.binomial(1, 1 / (1 + np.exp(-eta)))
    df = pd.DataFrame({"correct": y, "system": np.where(system == 1, "B", "A"),
                       "item": [f"i{k:03d}" for k in item]})
    fit = me.glmm("correct ~ system + (1|item)", df, family="binomial")
    r2, icc = me.r2(fit), me.icc(fit)
    vf = np.var(2.0 * system, ddof=1)
    vu = np.var(u, ddof=1)  # the item variance this sample of items realised (the estimate's target)
    total = vf + vu + np.pi ** 2 / 3
    assert abs(r2.r2_marginal - vf / total) < 0.03
    assert abs(r2.r2_conditional - (vf + vu) / total) < 0.03
    assert abs(icc.icc_adjusted - vu / (vu + np.pi ** 2 / 3)) < 0.03


def test_methods_and_errors(R, rdata):
    fit = me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd)", rdata["cbpp"], family="binomial")
    d = me.r2(fit, method="delta")
    assert d.method == "delta"
    assert_rel(d.r2_marginal, d.table.set_index("method").loc["delta", "r2_marginal"], rtol=0)
    assert d.components["component"].iloc[-1] == "observation (delta)"
    with pytest.raises(me.DataError, match="trigamma"):
        me.r2(fit, method="trigamma")
    lm = me.lmm("size ~ period + (1|herd)", rdata["cbpp"])
    with pytest.raises(me.DataError, match="GLMM"):
        me.r2(lm, method="delta")
    assert d.to_frame().equals(d.table) and "methods:" in repr(d) and d.to_dict()["method"] == "delta"

    class _Beta:  # a GLMMFit of a family MuMIn's merMod method does not cover
        family, _cache = "beta", {}

    with pytest.raises(me.DataError, match="beta"):
        glmm_variance(_Beta())


def test_null_model_uses_the_rows_of_the_model(R, rdata):
    """Rows dropped for a missing covariate are dropped from the null model too (MuMIn would
    refit the null model on them): the hand derivation fits the null model to the complete rows."""
    f = "TICKS ~ YEAR + zHEIGHT + (1|BROOD) + (1|LOCATION)"
    R(f"""
      grouse_na <- grouse_df; grouse_na$zHEIGHT[c(3, 50, 200)] <- NA
      m_na <- lme4::glmer({f}, data = grouse_na, family = poisson, {CTRL})
      n_na <- lme4::glmer(TICKS ~ 1 + (1|BROOD) + (1|LOCATION), data = grouse_na[!is.na(grouse_na$zHEIGHT), ],
                          family = poisson, {CTRL})
      lam_na <- exp(unname(lme4::fixef(n_na)) + 0.5 * hand_vr(n_na))
      h_na <- hand_ratios(hand_vf(m_na), hand_vr(m_na), trigamma(lam_na))
    """)
    d = rdata["grouse"].copy()
    d.loc[[2, 49, 199], "zHEIGHT"] = np.nan
    fit = me.glmm(f, d, family="poisson")
    assert fit.nobs == 400
    r2, icc = me.r2(fit), me.icc(fit)
    assert_rel(_ratios(r2, icc, "trigamma"), R("h_na"))
    assert_rel(r2.parameters["lambda"], R("lam_na")[0])
