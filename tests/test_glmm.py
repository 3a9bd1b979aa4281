"""glmm() parity with lme4::glmer / glmer.nb and glmmTMB, computed by R in the test on the same
data, and bad-input errors.

Tolerance: 1e-6 relative for quantities of one fit (the issue's tolerance for GLMMs: glmer's
Laplace fits and glmmTMB's nlminb follow the same path for identical input, but the R fit here
and ours get the data through different converters, so the last bits of the input can differ).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

import mixedeval as me
from mixedeval.inference import compare as compare_mod

RTOL = 1e-6


def _r():
    from mixedeval.engine import session

    session._start()
    import rpy2.robjects as ro

    return ro


def R(code: str):
    out = _r().r(code)
    try:
        return np.array(out, copy=True)
    except Exception:  # noqa: BLE001
        return out


def r_frame(name: str) -> pd.DataFrame:
    """The R data.frame ``name`` as pandas (factors as strings, in the test only)."""
    ro = _r()
    from rpy2.robjects import conversion, pandas2ri

    ro.r(f"..tmp <- as.data.frame(lapply({name}, function(x) if (is.factor(x)) as.character(x) else x))")
    with conversion.localconverter(ro.default_converter + pandas2ri.converter):
        df = conversion.get_conversion().rpy2py(ro.r("..tmp"))
    return df.reset_index(drop=True)


def _radix_factors(name: str, cols: list[str]) -> None:
    """Factor levels sorted by code point in R too (mixedeval's order for string columns)."""
    for c in cols:
        R(f'{name}${c} <- factor(as.character({name}${c}), levels = sort(unique(as.character({name}${c})), '
          f'method = "radix"))')


@pytest.fixture(scope="module")
def cbpp():
    R('data(cbpp, package = "lme4"); cbpp_t <- as.data.frame(cbpp)')
    _radix_factors("cbpp_t", ["herd", "period"])
    return r_frame("cbpp_t")


def r_glmm_expect(name: str) -> dict:
    cf = R(f"unname(summary({name})$coefficients)")
    return {
        "terms": list(R(f"rownames(summary({name})$coefficients)")),
        "coef": cf,
        "loglik": R(f"as.numeric(logLik({name}))")[0],
        "aic": R(f"AIC({name})")[0],
        "bic": R(f"BIC({name})")[0],
        "vc": R(f"as.data.frame(lme4::VarCorr({name}), order = 'lower.tri')$vcov"),
        "nobs": int(R(f"nobs({name})")[0]),
    }


def check_fixed(fit, exp, rtol=RTOL):
    assert list(fit.fixed["term"]) == exp["terms"]
    c = exp["coef"]
    assert_rel(fit.fixed["estimate"], c[:, 0], rtol=rtol)
    assert_rel(fit.fixed["std_error"], c[:, 1], rtol=rtol)
    assert_rel(fit.fixed["z_value"], c[:, 2], rtol=rtol)
    assert_rel(fit.fixed["p_value"], c[:, 3], rtol=rtol)
    q = R("qnorm(0.975)")[0]
    assert_rel(fit.fixed["conf_low"], c[:, 0] - q * c[:, 1], rtol=rtol)
    assert_rel(fit.fixed["conf_high"], c[:, 0] + q * c[:, 1], rtol=rtol)
    assert_rel(fit.loglik, exp["loglik"], rtol=rtol)
    assert_rel(fit.aic, exp["aic"], rtol=rtol)
    assert_rel(fit.bic, exp["bic"], rtol=rtol)
    assert fit.nobs == exp["nobs"]


# ----------------------------------------------------------------------------- binomial
def test_cbpp_cbind_parity(cbpp):
    fit = me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd)", cbpp)
    R("m_cbpp <- lme4::glmer(cbind(incidence, size - incidence) ~ period + (1|herd), data = cbpp_t, "
      "family = binomial)")
    exp = r_glmm_expect("m_cbpp")
    check_fixed(fit, exp)
    assert_rel(fit.random["variance"], exp["vc"], rtol=RTOL)
    assert isinstance(fit, me.GLMMFit)
    assert fit.family == "binomial" and fit.link == "logit" and fit.exp_label == "odds_ratio"
    assert_rel(fit.fixed["exp_estimate"], np.exp(exp["coef"][:, 0]), rtol=RTOL)
    assert fit.ngroups == {"herd": 15}
    assert fit.table is fit.fixed and fit.to_frame().equals(fit.fixed)
    assert fit.converged and not fit.singular
    assert fit.provenance["r_function"] == "lme4::glmer" and fit.provenance["nagq"] == 1
    assert fit.to_dict()["family"] == "binomial"
    ct90 = fit.coef_table(level=0.9)
    q = R("qnorm(0.95)")[0]
    assert_rel(ct90["conf_low"], exp["coef"][:, 0] - q * exp["coef"][:, 1], rtol=RTOL)
    assert_rel(ct90["exp_conf_high"], np.exp(exp["coef"][:, 0] + q * exp["coef"][:, 1]), rtol=RTOL)


def test_boolean_response_is_zero_one():
    R("set.seed(2); bo_t <- data.frame(item = rep(sprintf('i%02d', 1:30), each = 4), system = rep(c('a', 'b'), 60));"
      "bo_t$ok <- runif(120) < plogis(0.3 + 0.6 * (bo_t$system == 'b') + rep(rnorm(30), each = 4))")
    d = r_frame("bo_t")
    assert pd.api.types.is_bool_dtype(d["ok"].dtype)
    before = d.copy()
    fit = me.glmm("ok ~ system + (1|item)", d)
    pd.testing.assert_frame_equal(d, before)
    R("m_bo <- lme4::glmer(as.integer(ok) ~ system + (1|item), data = bo_t, family = binomial)")
    check_fixed(fit, r_glmm_expect("m_bo"))
    with pytest.raises(me.DataError, match="GLMM"):
        me.emmeans(me.lmm("ok ~ system + (1|item)", d.assign(ok=d["ok"].astype(float))), "system", type="response")


def test_proportion_with_weights_equals_cbind(cbpp):
    d = cbpp.assign(prop=cbpp["incidence"] / cbpp["size"])
    fit_w = me.glmm("prop ~ period + (1|herd)", d, weights=d["size"].to_numpy())
    R("m_cbpp_w <- lme4::glmer(incidence / size ~ period + (1|herd), data = cbpp_t, weights = size, "
      "family = binomial)")
    check_fixed(fit_w, r_glmm_expect("m_cbpp_w"))
    fit_col = me.glmm("prop ~ period + (1|herd)", d, weights="size")
    assert_rel(fit_col.fixed["estimate"], fit_w.fixed["estimate"], rtol=1e-12)


def test_nagq_and_other_optimizer(cbpp):
    for nagq, opt in ((0, "bobyqa"), (5, "Nelder_Mead")):
        fit = me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd)", cbpp, nagq=nagq, optimizer=opt)
        R(f"m_q <- lme4::glmer(cbind(incidence, size - incidence) ~ period + (1|herd), data = cbpp_t, "
          f"family = binomial, nAGQ = {nagq}, control = lme4::glmerControl(optimizer = '{opt}'))")
        check_fixed(fit, r_glmm_expect("m_q"))
        assert fit.nagq == nagq and fit.optimizer == opt


# ---------------------------------------------------------------------------- bad input
def test_bad_binomial_response(cbpp):
    with pytest.raises(me.DataError, match="'incidence'.*outside"):
        me.glmm("incidence ~ period + (1|herd)", cbpp)
    d = cbpp.assign(prop=cbpp["incidence"] / cbpp["size"])
    with pytest.raises(me.DataError, match="'prop'.*weights"):
        me.glmm("prop ~ period + (1|herd)", d)
    d2 = cbpp.assign(inc=cbpp["incidence"] + 0.5)
    with pytest.raises(me.DataError, match="'inc'.*non-integer"):
        me.glmm("cbind(inc, size - inc) ~ period + (1|herd)", d2)
    d3 = cbpp.copy()
    d3.loc[0, "incidence"] = -1
    with pytest.raises(me.DataError, match="negative"):
        me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd)", d3)


def test_bad_arguments(cbpp):
    f = "cbind(incidence, size - incidence) ~ period + (1|herd)"
    with pytest.raises(me.DataError, match="family"):
        me.glmm(f, cbpp, family="gaussian")
    with pytest.raises(me.DataError, match="link"):
        me.glmm(f, cbpp, link="identity")
    with pytest.raises(me.DataError, match="optimizer"):
        me.glmm(f, cbpp, optimizer="lbfgs")
    with pytest.raises(me.DataError, match="nagq"):
        me.glmm(f, cbpp, nagq=-1)
    with pytest.raises(me.DataError, match="squeeze"):
        me.glmm(f, cbpp, squeeze="smithson_verkuilen")


def test_formula_injection_refused(cbpp):
    with pytest.raises(me.FormulaError):
        me.glmm('cbind(incidence, size - incidence) ~ period + I(file.create("x")) + (1|herd)', cbpp)
    with pytest.raises(me.FormulaError):
        me.glmm("cbind(incidence, size - incidence) ~ period + system('ls') + (1|herd)", cbpp)


def test_data_never_modified(cbpp):
    before = cbpp.copy(deep=True)
    me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd)", cbpp)
    pd.testing.assert_frame_equal(cbpp, before)


# ------------------------------------------------------------------ cbpp: inference
def test_cbpp_anova_emmeans_contrasts(cbpp):
    fit = me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd)", cbpp)
    R("m_cbpp <- lme4::glmer(cbind(incidence, size - incidence) ~ period + (1|herd), data = cbpp_t, "
      "family = binomial)")
    # Type III Wald chi-square on the contr.sum refit
    R("m_cbpp_sum <- lme4::glmer(cbind(incidence, size - incidence) ~ period + (1|herd), data = cbpp_t, "
      "family = binomial, contrasts = list(period = 'contr.sum'));"
      "a_cbpp <- car::Anova(m_cbpp_sum, type = 3)")
    a = me.anova(fit)
    assert list(a.table.columns) == ["term", "chisq", "df", "p_value"]
    assert list(a.table["term"]) == list(R("rownames(a_cbpp)"))
    assert_rel(a.table["chisq"], R("a_cbpp$Chisq"), rtol=RTOL)
    assert_rel(a.table["df"], R("a_cbpp$Df"))
    assert_rel(a.table["p_value"], R("a_cbpp[['Pr(>Chisq)']]"), rtol=RTOL)
    assert a.sum_contrasts == ("period",)
    with pytest.raises(me.DataError, match="Type III"):
        fit.anova(type=2)
    # response-scale means (probabilities) with back-transformed intervals
    R("e_cbpp <- emmeans::emmeans(m_cbpp, 'period'); s_cbpp <- summary(e_cbpp, type = 'response')")
    emm = me.emmeans(fit, "period")
    assert emm.type == "response" and emm.estimate_label == "prob"
    assert_rel(emm.table["emmean"], R("s_cbpp$prob"), rtol=RTOL)
    assert_rel(emm.table["std_error"], R("s_cbpp$SE"), rtol=RTOL)
    assert_rel(emm.table["conf_low"], R("s_cbpp$asymp.LCL"), rtol=RTOL)
    assert_rel(emm.table["conf_high"], R("s_cbpp$asymp.UCL"), rtol=RTOL)
    assert np.isinf(emm.table["df"]).all()
    # pairwise odds ratios, holm
    R("c_cbpp <- emmeans::contrast(e_cbpp, 'pairwise', adjust = 'holm');"
      "sc_cbpp <- summary(c_cbpp, type = 'response', infer = c(TRUE, TRUE));"
      "sr_cbpp <- summary(c_cbpp, type = 'response', infer = c(TRUE, TRUE), adjust = 'none')")
    ct = emm.contrasts()
    assert ct.estimate_label == "odds_ratio"
    assert list(ct.table["contrast"]) == list(R("as.character(sc_cbpp$contrast)"))
    assert_rel(ct.table["estimate"], R("sc_cbpp$odds.ratio"), rtol=RTOL)
    assert_rel(ct.table["std_error"], R("sc_cbpp$SE"), rtol=RTOL)
    assert_rel(ct.table["z_value"], R("sc_cbpp$z.ratio"), rtol=RTOL)
    assert_rel(ct.table["p_adj"], R("sc_cbpp$p.value"), rtol=RTOL)
    assert_rel(ct.table["p_value"], R("sr_cbpp$p.value"), rtol=RTOL)
    assert_rel(ct.table["conf_low"], R("sc_cbpp$asymp.LCL"), rtol=RTOL)
    assert_rel(ct.table["conf_high"], R("sc_cbpp$asymp.UCL"), rtol=RTOL)
    # risk differences through regrid
    R("d_cbpp <- summary(emmeans::contrast(emmeans::regrid(e_cbpp), 'pairwise', adjust = 'holm'), "
      "infer = c(TRUE, TRUE))")
    rd = emm.contrasts(scale="difference")
    assert rd.estimate_label == "difference"
    assert_rel(rd.table["estimate"], R("d_cbpp$estimate"), rtol=RTOL)
    assert_rel(rd.table["std_error"], R("d_cbpp$SE"), rtol=RTOL)
    assert_rel(rd.table["p_adj"], R("d_cbpp$p.value"), rtol=RTOL)
    assert_rel(rd.table["conf_low"], R("d_cbpp$asymp.LCL"), rtol=RTOL)
    # link scale: log odds ratios
    lk = fit.emmeans("period", type="link")
    assert_rel(lk.table["emmean"], R("summary(e_cbpp)$emmean"), rtol=RTOL)
    lc = lk.contrasts(adjust="none")
    assert lc.estimate_label == "link_difference"
    assert_rel(lc.table["estimate"], R("summary(emmeans::contrast(e_cbpp, 'pairwise'))$estimate"), rtol=RTOL)
    with pytest.raises(me.DataError, match="response scale"):
        lk.contrasts(scale="difference")
    ref = emm.contrasts(method="trt.vs.ctrl", ref=3, adjust="none")
    assert_rel(ref.table["estimate"], R("summary(emmeans::contrast(e_cbpp, 'trt.vs.ctrl', ref = 4), "
                                        "type = 'response')$odds.ratio"), rtol=RTOL)


def test_cbpp_compare_mixture_and_bootstrap(cbpp):
    d = cbpp.assign(obs=[f"o{i:02d}" for i in range(len(cbpp))])
    R("cbpp_t$obs <- factor(sprintf('o%02d', seq_len(nrow(cbpp_t)) - 1L))")
    f1 = me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd)", d)
    f2 = me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd) + (1|obs)", d)
    f0 = me.glmm("cbind(incidence, size - incidence) ~ 1 + (1|herd)", d)
    R("ctl <- lme4::glmerControl();"
      "g0 <- lme4::glmer(cbind(incidence, size - incidence) ~ 1 + (1|herd), cbpp_t, binomial, control = ctl);"
      "g1 <- lme4::glmer(cbind(incidence, size - incidence) ~ period + (1|herd), cbpp_t, binomial, control = ctl);"
      "g2 <- lme4::glmer(cbind(incidence, size - incidence) ~ period + (1|herd) + (1|obs), cbpp_t, binomial, "
      "control = ctl); a01 <- anova(g0, g1); a12 <- anova(g1, g2)")
    c01 = me.compare(f0, f1)
    t = c01.table
    assert list(t["estimator"]) == ["ML", "ML"] and not c01.refitted
    assert_rel(t["chisq"].iloc[1], R("a01$Chisq[2]")[0], rtol=RTOL)
    assert_rel(t["p_value"].iloc[1], R("a01[['Pr(>Chisq)']][2]")[0], rtol=RTOL)
    assert_rel(t["aic"], R("a01$AIC"), rtol=RTOL)
    assert "p_value_mixture" not in t.columns  # the fixed effects differ
    c12 = me.compare(f1, f2, n_resamples=20, random_state=7, progress=False)
    t = c12.table
    chisq = R("a12$Chisq[2]")[0]
    assert_rel(t["chisq"].iloc[1], chisq, rtol=RTOL)
    expect_mix = R("0.5 * pchisq(a12$Chisq[2], 1, lower.tail = FALSE) + 0.5 * pchisq(a12$Chisq[2], 0, lower.tail = FALSE)")[0]
    assert_rel(t["p_value_mixture"].iloc[1], expect_mix, rtol=RTOL)
    # R's own replicates (PBmodcomp draws them with PBrefdist), the statistics within rounding of 0 set to 0 by
    # the rule of mixedeval.inference.compare.boundary_zero (R's raw count of ref > 0 includes signed zeros)
    tol = compare_mod.BOUNDARY_ATOL + compare_mod.BOUNDARY_RTOL * abs(2 * f2.loglik)
    R(f"set.seed(7); pb12_ref <- pbkrtest::PBrefdist(g2, g1, nsim = 20); pb12_ref[abs(pb12_ref) < {tol!r}] <- 0; "
      "pb12 <- pbkrtest::PBmodcomp(g2, g1, ref = pb12_ref)")
    assert_rel(t["p_value_pb"].iloc[1], R("summary(pb12)$test['PBtest', 'p.value']")[0], rtol=RTOL)
    with pytest.raises(me.DataError, match="GLMM fits"):
        me.compare(f1, me.lmm("incidence ~ period + (1|herd)", d))


def test_cbpp_check_optimizers(cbpp):
    fit = me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd)", cbpp)
    chk = fit.check_optimizers()
    assert list(chk.table["optimizer"]) == ["bobyqa+Nelder_Mead", "bobyqa", "Nelder_Mead", "nloptwrap",
                                            "bobyqa+Nelder_Mead, nAGQ=0"]
    assert chk.agree  # the three optimizers reach the same Laplace optimum on cbpp
    R("m_q0 <- lme4::glmer(cbind(incidence, size - incidence) ~ period + (1|herd), data = cbpp_t, "
      "family = binomial, nAGQ = 0)")
    row = chk.table.set_index("optimizer").loc["bobyqa+Nelder_Mead, nAGQ=0"]
    assert_rel(row["loglik"], R("as.numeric(logLik(m_q0))")[0], rtol=RTOL)
    assert list(fit.check_optimizers(optimizers=["bobyqa"], nagq0=False).table["optimizer"]) == [
        "bobyqa+Nelder_Mead", "bobyqa"]
    only = me.check_optimizers(fit, optimizers=["Nelder_Mead"])
    assert list(only.table["optimizer"]) == ["bobyqa+Nelder_Mead", "Nelder_Mead", "bobyqa+Nelder_Mead, nAGQ=0"]


def test_convergence_warnings_are_structured():
    rng = np.random.default_rng(3)
    u = rng.normal(0, 1.0, 40)
    rows = [(f"i{i:02d}", s, rng.binomial(1, 1 / (1 + np.exp(-(0.5 * k + u[i])))))
            for i in range(40) for k, s in enumerate("ab") for _ in range(3)]
    d = pd.DataFrame(rows, columns=["item", "system", "correct"])
    d["x"] = rng.normal(size=len(d)) * 1e3 + 1e4  # unscaled covariate: lme4's gradient and Hessian checks fire
    fit = me.glmm("correct ~ system + x + (1|item)", d)
    kinds = {w.kind for w in fit.warnings}
    assert kinds & {"convergence_gradient", "convergence_hessian"}
    assert not fit.converged
    msgs = [w.message for w in fit.warnings]
    assert len(msgs) == len(set(msgs))


# ------------------------------------------------------------------- VerbAgg (binary, crossed)
@pytest.fixture(scope="module")
def verbagg():
    R('data(VerbAgg, package = "lme4"); va_t <- as.data.frame(VerbAgg)[, c("Anger", "Gender", "item", "id", '
      '"btype")]; va_t$y <- as.integer(VerbAgg$r2 == "Y")')
    _radix_factors("va_t", ["Gender", "item", "id", "btype"])
    return r_frame("va_t")


def test_verbagg_crossed_binary(verbagg):
    f = "y ~ btype + Gender + Anger + (1|id) + (1|item)"
    fit = me.glmm(f, verbagg)
    R(f"m_va <- lme4::glmer({f}, data = va_t, family = binomial)")
    exp = r_glmm_expect("m_va")
    check_fixed(fit, exp)
    assert_rel(fit.random["variance"], exp["vc"], rtol=RTOL)
    assert fit.ngroups == {"id": 316, "item": 24}
    R("e_va <- emmeans::emmeans(m_va, 'btype'); s_va <- summary(e_va, type = 'response');"
      "c_va <- summary(emmeans::contrast(e_va, 'pairwise', adjust = 'tukey'), type = 'response', infer = c(TRUE, TRUE))")
    emm = fit.emmeans("btype")
    assert_rel(emm.table["emmean"], R("s_va$prob"), rtol=RTOL)
    ct = emm.contrasts(adjust="tukey")
    assert_rel(ct.table["estimate"], R("c_va$odds.ratio"), rtol=RTOL)
    assert_rel(ct.table["p_adj"], R("c_va$p.value"), rtol=RTOL)
    assert_rel(ct.table["conf_low"], R("c_va$asymp.LCL"), rtol=RTOL)
    tr = fit.emtrends("btype", var="Anger")
    assert_rel(tr.table["trend"], R("summary(emmeans::emtrends(m_va, 'btype', var = 'Anger'))$Anger.trend"), rtol=RTOL)
    trr = fit.emtrends("btype", var="Anger", type="response")
    assert_rel(trr.table["trend"], R("summary(emmeans::emtrends(m_va, 'btype', var = 'Anger', "
                                     "regrid = 'response'))$Anger.trend"), rtol=RTOL)


# ---------------------------------------------------------------- grouseticks (Poisson)
@pytest.fixture(scope="module")
def grouse():
    R('data(grouseticks, package = "lme4"); gt_t <- as.data.frame(grouseticks)[, c("TICKS", "YEAR", "cHEIGHT", '
      '"BROOD", "LOCATION")]')
    _radix_factors("gt_t", ["YEAR", "BROOD", "LOCATION"])
    return r_frame("gt_t")


def test_grouseticks_poisson_two_crossed_factors(grouse):
    f = "TICKS ~ YEAR + cHEIGHT + (1|BROOD) + (1|LOCATION)"
    fit = me.glmm(f, grouse, family="poisson")
    R(f"m_gt <- lme4::glmer({f}, data = gt_t, family = poisson)")
    exp = r_glmm_expect("m_gt")
    check_fixed(fit, exp)
    assert_rel(fit.random["variance"], exp["vc"], rtol=RTOL)
    assert fit.link == "log" and fit.exp_label == "rate_ratio"
    R("m_gt_sum <- update(m_gt, contrasts = list(YEAR = 'contr.sum')); a_gt <- car::Anova(m_gt_sum, type = 3)")
    a = fit.anova()
    assert_rel(a.table["chisq"], R("a_gt$Chisq"), rtol=RTOL)
    assert_rel(a.table["p_value"], R("a_gt[['Pr(>Chisq)']]"), rtol=RTOL)
    R("e_gt <- emmeans::emmeans(m_gt, 'YEAR'); s_gt <- summary(e_gt, type = 'response');"
      "c_gt <- summary(emmeans::contrast(e_gt, 'pairwise', adjust = 'holm'), type = 'response', infer = c(TRUE, TRUE))")
    emm = fit.emmeans("YEAR")
    assert emm.estimate_label == "rate"
    assert_rel(emm.table["emmean"], R("s_gt$rate"), rtol=RTOL)
    assert_rel(emm.table["conf_high"], R("s_gt$asymp.UCL"), rtol=RTOL)
    ct = emm.contrasts()
    assert ct.estimate_label == "rate_ratio"
    assert_rel(ct.table["estimate"], R("c_gt$ratio"), rtol=RTOL)
    assert_rel(ct.table["p_adj"], R("c_gt$p.value"), rtol=RTOL)
    tr = me.emtrends(fit, "YEAR", var="cHEIGHT")
    R("t_gt <- summary(emmeans::emtrends(m_gt, 'YEAR', var = 'cHEIGHT'))")
    assert_rel(tr.table["trend"], R("t_gt$cHEIGHT.trend"), rtol=RTOL)
    assert_rel(tr.table["std_error"], R("t_gt$SE"), rtol=RTOL)


def test_bad_count_response(grouse):
    d = grouse.copy()
    d.loc[3, "TICKS"] = -2
    with pytest.raises(me.DataError, match="'TICKS'.*negative"):
        me.glmm("TICKS ~ YEAR + (1|LOCATION)", d, family="poisson")
    d = grouse.assign(TICKS=grouse["TICKS"] + 0.25)
    with pytest.raises(me.DataError, match="'TICKS'.*non-integer"):
        me.glmm("TICKS ~ YEAR + (1|LOCATION)", d, family="negative_binomial")


# ------------------------------------------------------------- negative binomial (glmer.nb)
def test_negative_binomial_simulated():
    R("set.seed(11); nb_t <- expand.grid(item = sprintf('i%02d', 1:40), system = c('A', 'B', 'C'), "
      "stringsAsFactors = FALSE); u <- rnorm(40, 0, 0.6); "
      "nb_t$errors <- rnbinom(nrow(nb_t), mu = exp(1 + 0.3 * (nb_t$system == 'B') - 0.4 * (nb_t$system == 'C') + "
      "u[match(nb_t$item, sprintf('i%02d', 1:40))]), size = 2)")
    _radix_factors("nb_t", ["item", "system"])
    d = r_frame("nb_t")
    fit = me.glmm("errors ~ system + (1|item)", d, family="negative_binomial")
    R("m_nb <- lme4::glmer.nb(errors ~ system + (1|item), data = nb_t)")
    check_fixed(fit, r_glmm_expect("m_nb"))
    assert_rel(fit.dispersion["theta"], R("lme4::getME(m_nb, 'glmer.nb.theta')")[0], rtol=RTOL)
    assert fit.provenance["r_function"] == "lme4::glmer.nb" and fit.exp_label == "rate_ratio"
    R("m_nb_sum <- lme4::glmer.nb(errors ~ system + (1|item), data = nb_t, contrasts = list(system = 'contr.sum')); "
      "a_nb <- car::Anova(m_nb_sum, type = 3)")
    assert_rel(fit.anova().table["chisq"], R("a_nb$Chisq"), rtol=RTOL)
    R("c_nb <- summary(emmeans::contrast(emmeans::emmeans(m_nb, 'system'), 'pairwise'), type = 'response')")
    assert_rel(fit.emmeans("system").contrasts().table["estimate"], R("c_nb$ratio"), rtol=RTOL)


# ------------------------------------------------------------------------- beta (glmmTMB)
@pytest.fixture(scope="module")
def beta_table():
    R("set.seed(5); bt <- expand.grid(item = sprintf('i%02d', 1:50), system = c('A', 'B', 'C'), "
      "stringsAsFactors = FALSE); u <- rnorm(50, 0, 0.5); "
      "mu <- plogis(0.2 * (bt$system == 'B') + 0.5 * (bt$system == 'C') + u[match(bt$item, sprintf('i%02d', 1:50))]); "
      "bt$score <- rbeta(nrow(bt), mu * 15, (1 - mu) * 15)")
    _radix_factors("bt", ["item", "system"])
    return r_frame("bt")


def test_beta_glmmtmb_parity(beta_table):
    fit = me.glmm("score ~ system + (1|item)", beta_table, family="beta")
    R("m_bt <- glmmTMB::glmmTMB(score ~ system + (1|item), data = bt, family = glmmTMB::beta_family());"
      "cf_bt <- summary(m_bt)$coefficients$cond")
    exp = {"terms": list(R("rownames(cf_bt)")), "coef": R("unname(cf_bt)"), "loglik": R("as.numeric(logLik(m_bt))")[0],
           "aic": R("AIC(m_bt)")[0], "bic": R("BIC(m_bt)")[0], "nobs": int(R("nobs(m_bt)")[0])}
    check_fixed(fit, exp)
    assert_rel(fit.dispersion["phi"], R("sigma(m_bt)")[0], rtol=RTOL)
    assert_rel(fit.random["variance"], R("glmmTMB::VarCorr(m_bt)$cond$item[1, 1]"), rtol=RTOL)
    assert fit.provenance["r_function"] == "glmmTMB::glmmTMB"
    R("m_bt_sum <- glmmTMB::glmmTMB(score ~ system + (1|item), data = bt, family = glmmTMB::beta_family(), "
      "contrasts = list(system = 'contr.sum')); a_bt <- car::Anova(m_bt_sum, type = 3)")
    a = fit.anova()
    assert_rel(a.table["chisq"], R("a_bt$Chisq"), rtol=RTOL)
    assert_rel(a.table["p_value"], R("a_bt[['Pr(>Chisq)']]"), rtol=RTOL)
    R("e_bt <- emmeans::emmeans(m_bt, 'system', df = Inf); s_bt <- summary(e_bt, type = 'response')")
    emm = fit.emmeans("system")
    assert_rel(emm.table["emmean"], R("s_bt$response"), rtol=RTOL)
    assert_rel(emm.table["conf_low"], R("s_bt$asymp.LCL"), rtol=RTOL)
    R("c_bt <- summary(emmeans::contrast(e_bt, 'pairwise', adjust = 'holm'), type = 'response', infer = c(TRUE, TRUE))")
    ct = emm.contrasts()
    assert ct.estimate_label == "odds_ratio"
    assert_rel(ct.table["estimate"], R("c_bt$odds.ratio"), rtol=RTOL)
    assert_rel(ct.table["p_adj"], R("c_bt$p.value"), rtol=RTOL)
    f0 = me.glmm("score ~ 1 + (1|item)", beta_table, family="beta")
    R("m_bt0 <- glmmTMB::glmmTMB(score ~ 1 + (1|item), data = bt, family = glmmTMB::beta_family())")
    t = me.compare(f0, fit).table
    assert_rel(t["chisq"].iloc[1], R("2 * (as.numeric(logLik(m_bt)) - as.numeric(logLik(m_bt0)))")[0], rtol=RTOL)
    assert_rel(t["p_value"].iloc[1], R("anova(m_bt0, m_bt)[['Pr(>Chisq)']][2]")[0], rtol=RTOL)
    with pytest.raises(me.DataError, match="lme4"):
        me.compare(f0, fit, n_resamples=10)


def test_beta_exact_zero_one_and_squeeze(beta_table):
    d = beta_table.copy()
    d.loc[[0, 7], "score"] = [0.0, 1.0]
    with pytest.raises(me.DataError, match="'score'.*exactly 0 or 1.*squeeze='smithson_verkuilen'"):
        me.glmm("score ~ system + (1|item)", d, family="beta")
    before = d.copy()
    fit = me.glmm("score ~ system + (1|item)", d, family="beta", squeeze="smithson_verkuilen")
    pd.testing.assert_frame_equal(d, before)
    assert [w.kind for w in fit.warnings] == ["squeeze"]
    R("bt2 <- bt; bt2$score[c(1, 8)] <- c(0, 1); n <- nrow(bt2); bt2$score <- (bt2$score * (n - 1) + 0.5) / n;"
      "m_bt2 <- glmmTMB::glmmTMB(score ~ system + (1|item), data = bt2, family = glmmTMB::beta_family())")
    assert_rel(fit.fixed["estimate"], R("unname(glmmTMB::fixef(m_bt2)$cond)"), rtol=RTOL)
    with pytest.raises(me.DataError, match="outside"):
        me.glmm("score ~ system + (1|item)", d.assign(score=d["score"] * 2), family="beta")


def test_betabinomial_cbpp(cbpp):
    fit = me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd)", cbpp, family="betabinomial")
    R("m_bb <- glmmTMB::glmmTMB(cbind(incidence, size - incidence) ~ period + (1|herd), data = cbpp_t, "
      "family = glmmTMB::betabinomial()); cf_bb <- summary(m_bb)$coefficients$cond")
    exp = {"terms": list(R("rownames(cf_bb)")), "coef": R("unname(cf_bb)"), "loglik": R("as.numeric(logLik(m_bb))")[0],
           "aic": R("AIC(m_bb)")[0], "bic": R("BIC(m_bb)")[0], "nobs": int(R("nobs(m_bb)")[0])}
    check_fixed(fit, exp)
    with pytest.raises(me.DataError, match="betabinomial"):
        me.glmm("y ~ period + (1|herd)", cbpp.assign(y=(cbpp["incidence"] > 0).astype(int)), family="betabinomial")
