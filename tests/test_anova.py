"""fit.anova() parity with lmerTest::anova and effectsize::eta_squared, computed by R in the test."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import OPTIMIZER_RTOL, assert_rel

import mixedeval as me
from mixedeval.inference.anova import COLUMNS, anova

TER_INTERACTION = "ter ~ system * src_length + (1|sentence_id)"
R_COLS = '"Sum Sq", "Mean Sq", "NumDF", "DenDF", "F value", "Pr(>F)"'


@pytest.fixture(scope="module")
def ter_fit(ter):
    return me.lmm(TER_INTERACTION, ter)


@pytest.fixture(scope="module")
def r_ter_models(R):
    R(f"""
    a_m_trt <- lmerTest::lmer({TER_INTERACTION}, data = ter_df)
    ter_sum <- ter_df
    contrasts(ter_sum$system) <- contr.sum(nlevels(ter_sum$system))
    a_m_sum <- lmerTest::lmer({TER_INTERACTION}, data = ter_sum, start = lme4::getME(a_m_trt, "theta"))
    """)
    return ("a_m_trt", "a_m_sum")


def _r_table(R, aov: str, eta: str):
    """lmerTest's table (as a matrix) and effectsize's eta2 columns, row names."""
    return {
        "terms": [str(x) for x in R(f"rownames({aov})")],
        "tab": R(f"as.matrix(as.data.frame({aov})[, c({R_COLS})])"),
        "eta": R(f"as.matrix(as.data.frame({eta})[, c('Eta2_partial', 'CI_low', 'CI_high')])"),
        "eta_terms": [str(x) for x in R(f"{eta}$Parameter")],
    }


def _check(result, exp):
    tab = result.table
    assert list(tab.columns) == list(COLUMNS)
    assert list(tab["term"]) == exp["terms"] == exp["eta_terms"]
    ours = tab[["sum_sq", "mean_sq", "num_df", "den_df", "f_value", "p_value"]].to_numpy()
    assert_rel(ours, exp["tab"])
    assert_rel(tab[["eta2_partial", "eta2_partial_ci_low", "eta2_partial_ci_high"]].to_numpy(), exp["eta"])


def test_type3_satterthwaite_equals_lmertest_and_effectsize_on_model(R, ter_fit, r_ter_models):
    res = ter_fit.anova()
    # effectsize on the model itself (its default path for mixed models) and lmerTest's anova
    R("a_aov3 <- anova(a_m_trt, type = 3, ddf = 'Satterthwaite'); "
      "a_eta3 <- effectsize::eta_squared(a_m_trt, partial = TRUE, ci = 0.95, alternative = 'greater')")
    _check(res, _r_table(R, "a_aov3", "a_eta3"))
    assert res.type == 3 and res.ddf == "satterthwaite"
    assert (res.table["eta2_partial_ci_high"] == 1.0).all()
    # the formula of the mixed-model partial eta-squared, by hand from the table
    t = res.table
    assert_rel(t["eta2_partial"], t["f_value"] * t["num_df"] / (t["f_value"] * t["num_df"] + t["den_df"]))
    assert res.provenance["r_function"].startswith("lmerTest::anova")


@pytest.mark.parametrize("type_", [1, 2, "III"])
def test_types_equal_lmertest(R, ter_fit, r_ter_models, type_):
    res = anova(ter_fit, type=type_, ddf="satterthwaite", level=0.9)
    t = {1: 1, 2: 2, "III": 3}[type_]
    R(f"a_aov <- anova(a_m_trt, type = {t}); "
      "a_eta <- effectsize::eta_squared(a_aov, partial = TRUE, ci = 0.9, alternative = 'greater')")
    _check(res, _r_table(R, "a_aov", "a_eta"))
    assert res.level == 0.9


def test_type3_independent_of_contrast_coding(R, ter_fit, r_ter_models):
    """The R fit whose factor carries contr.sum gives the same Type III table as treatment coding,
    and ours equals both."""
    res = ter_fit.anova(type=3)
    R("a_aovt <- anova(a_m_trt, type = 3); "
      "a_etat <- effectsize::eta_squared(a_aovt, partial = TRUE, ci = 0.95, alternative = 'greater')")
    _check(res, _r_table(R, "a_aovt", "a_etat"))
    R("a_aovs <- anova(a_m_sum, type = 3); "
      "a_etas <- effectsize::eta_squared(a_aovs, partial = TRUE, ci = 0.95, alternative = 'greater')")
    exp = _r_table(R, "a_aovs", "a_etas")
    tab = res.table
    assert list(tab["term"]) == exp["terms"]
    # the coding really differs between the two R fits (their coefficients are not the same) ...
    assert not np.allclose(R("lme4::fixef(a_m_trt)"), R("lme4::fixef(a_m_sum)"))
    # ... yet the table is the same. The two fits are two optimizer runs with different contrast
    # codings: even started at the treatment fit's theta, the sum-coded run moves within the
    # optimizer's tolerance (gap 1e-12 on one machine, 1.1e-8 on another; up to 3.6e-7 with the
    # start perturbed by 1e-12..1e-4), so they agree to the optimizer tolerance, not to 1e-8.
    theta_gap = R("abs(lme4::getME(a_m_sum, 'theta') / lme4::getME(a_m_trt, 'theta') - 1)")
    assert theta_gap.max() < OPTIMIZER_RTOL
    # sums of squares and F are quadratic in theta (7e-7 at most in the perturbation runs)
    assert_rel(tab[["sum_sq", "mean_sq", "num_df", "f_value"]].to_numpy(), exp["tab"][:, [0, 1, 2, 4]],
               rtol=2 * OPTIMIZER_RTOL)
    # lmerTest's Satterthwaite df take numDeriv derivatives of the coefficients' covariance: with theta
    # 1.1e-8 apart they differ by 8e-7, by up to 2.3e-6 in the perturbation runs (df, and eta2 through
    # df); p = 6e-9 for src_length multiplies F's relative error by ~F/2 = 17 (up to 1.1e-5).
    assert_rel(tab[["eta2_partial", "eta2_partial_ci_low", "eta2_partial_ci_high"]].to_numpy(), exp["eta"], rtol=1e-5)
    assert_rel(tab["den_df"].to_numpy(), exp["tab"][:, 3], rtol=1e-5)
    assert_rel(tab["p_value"].to_numpy(), exp["tab"][:, 5], rtol=1e-4)


def test_kenward_roger(R, annotation):
    f = "score ~ mode * occasion + (1|sentence) + (1|rater)"
    fit = me.lmm(f, annotation)
    res = fit.anova(type=3, ddf="kenward-roger")
    R(f"a_ann <- lmerTest::lmer({f}, data = ann_df); a_aovkr <- anova(a_ann, type = 3, ddf = 'Kenward-Roger'); "
      "a_etakr <- effectsize::eta_squared(a_aovkr, partial = TRUE, ci = 0.95, alternative = 'greater')")
    _check(res, _r_table(R, "a_aovkr", "a_etakr"))
    assert res.ddf == "kenward-roger"
    res2 = fit.anova(type=2, ddf="kr")
    R("a_aovkr2 <- anova(a_ann, type = 2, ddf = 'Kenward-Roger'); "
      "a_etakr2 <- effectsize::eta_squared(a_aovkr2, partial = TRUE, ci = 0.95, alternative = 'greater')")
    _check(res2, _r_table(R, "a_aovkr2", "a_etakr2"))


def test_ml_fit_and_simple_model(R, ter):
    fit = me.lmm("ter ~ system + (1|sentence_id)", ter, reml=False)
    res = fit.anova()
    R("a_ml <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = ter_df, REML = FALSE); a_aovml <- anova(a_ml); "
      "a_etaml <- effectsize::eta_squared(a_ml, partial = TRUE, ci = 0.95, alternative = 'greater')")
    _check(res, _r_table(R, "a_aovml", "a_etaml"))
    with pytest.raises(me.DataError, match="REML"):
        fit.anova(ddf="kenward-roger")


def test_intercept_only_gives_empty_table(ter):
    fit = me.lmm("ter ~ 1 + (1|sentence_id)", ter)
    res = fit.anova()
    assert list(res.table.columns) == list(COLUMNS)
    assert len(res.table) == 0


def test_bad_arguments(ter_fit):
    with pytest.raises(me.DataError, match="type"):
        ter_fit.anova(type=4)
    with pytest.raises(me.DataError, match="satterthwaite"):
        ter_fit.anova(ddf="asymptotic")
    with pytest.raises(me.DataError):
        ter_fit.anova(ddf="bogus")
    with pytest.raises(me.DataError, match="level"):
        ter_fit.anova(level=1.5)


def test_result_object(ter_fit):
    res = ter_fit.anova()
    assert "Type III" in repr(res) and "system:src_length" in repr(res)
    assert "<table" in res._repr_html_()
    d = res.to_dict()
    assert d["table"][0]["term"] == "system"
    assert res.to_frame().equals(res.table)
