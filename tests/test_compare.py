"""me.compare() parity with lme4's anova(m0, m1[, refit = FALSE]) and pbkrtest::PBmodcomp,
computed by R in the test."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

import mixedeval as me
from mixedeval.engine import names
from mixedeval.inference import compare as compare_mod
from mixedeval.inference.compare import COLUMNS

R_LRT = 'c("npar", "AIC", "BIC", "logLik", "deviance", "Chisq", "Df", "Pr(>Chisq)")'
OUR_LRT = ["npar", "aic", "bic", "loglik", "deviance", "chisq", "df", "p_value"]
SLEEP = {
    "ri": "Reaction ~ Days + (1|Subject)",
    "corr": "Reaction ~ Days + (Days|Subject)",
    "uncorr": "Reaction ~ Days + (1|Subject) + (0 + Days|Subject)",
    "null": "Reaction ~ 1 + (1|Subject)",
}


@pytest.fixture(scope="module")
def sleep(R):
    R('data(sleepstudy, package = "lme4"); sleep_df <- sleepstudy')
    df = pd.DataFrame({
        "Reaction": R("sleep_df$Reaction"),
        "Days": R("sleep_df$Days"),
        "Subject": R("as.character(sleep_df$Subject)"),
    })
    for k, f in SLEEP.items():
        R(f"c_{k} <- lmerTest::lmer({f}, data = sleep_df)")
    return df


@pytest.fixture(scope="module")
def sleep_fits(sleep):
    return {k: me.lmm(f, sleep) for k, f in SLEEP.items()}


def _r_anova(R, call: str):
    R(f"c_tab <- as.data.frame({call})")
    return {"rows": [str(x) for x in R("rownames(c_tab)")], "tab": R(f"as.matrix(c_tab[, {R_LRT}])")}


def _check(res, exp):
    tab = res.table
    assert list(tab.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert list(tab["model"]) == exp["rows"]
    assert_rel(tab[OUR_LRT].to_numpy(dtype=float), exp["tab"])


def test_random_only_keeps_reml_with_mixture(R, sleep_fits):
    res = me.compare(sleep_fits["ri"], sleep_fits["corr"], names=["ri", "corr"])
    _check(res, _r_anova(R, "anova(c_ri, c_corr, refit = FALSE, model.names = c('ri', 'corr'))"))
    assert (res.table["estimator"] == "REML").all() and res.estimator == "REML" and not res.refitted
    assert not [w for w in res.warnings if w.kind == "refit_ml"]
    # REML log-likelihoods as R reports them for the fits themselves
    assert_rel(res.table["loglik"], R("c(logLik(c_ri), logLik(c_corr))"))
    # slope variance + covariance added: 50:50 mixture of chi2(1) and chi2(2)
    exp_mix = R("x <- 2 * (logLik(c_corr) - logLik(c_ri)); 0.5 * pchisq(x, 2, lower.tail = FALSE) + "
                "0.5 * pchisq(x, 1, lower.tail = FALSE)")
    assert np.isnan(res.table["p_value_mixture"].iloc[0])
    assert_rel(res.table["p_value_mixture"].iloc[1], exp_mix[0])
    assert res.table["formula"].tolist() == [SLEEP["ri"], SLEEP["corr"]]


def test_three_models_ordered_by_npar(R, sleep_fits):
    fits = [sleep_fits["corr"], sleep_fits["ri"], sleep_fits["uncorr"]]
    res = me.compare(*fits, names=["corr", "ri", "uncorr"])
    _check(res, _r_anova(R, "anova(c_corr, c_ri, c_uncorr, refit = FALSE, model.names = c('corr', 'ri', 'uncorr'))"))
    assert list(res.table["model"]) == ["ri", "uncorr", "corr"]
    # uncorr adds one variance (df 1): 0.5 * P(chi2_1 > x); corr adds only a covariance: no mixture
    exp_mix = R("0.5 * pchisq(2 * (logLik(c_uncorr) - logLik(c_ri)), 1, lower.tail = FALSE)")
    assert_rel(res.table["p_value_mixture"].iloc[1], exp_mix[0])
    assert np.isnan(res.table["p_value_mixture"].iloc[2])


def test_fixed_effects_differ_refits_ml(R, ter):
    f0 = me.lmm("ter ~ 1 + (1|sentence_id)", ter)
    f1 = me.lmm("ter ~ system + (1|sentence_id)", ter)
    res = me.compare(f1, f0, names=["m1", "m0"])
    R("c_t0 <- lmerTest::lmer(ter ~ 1 + (1|sentence_id), data = ter_df); "
      "c_t1 <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = ter_df)")
    _check(res, _r_anova(R, "anova(c_t1, c_t0, model.names = c('m1', 'm0'))"))
    assert (res.table["estimator"] == "ML").all() and res.refitted
    assert [w.kind for w in res.warnings].count("refit_ml") == 1
    assert "p_value_mixture" not in res.table
    # the ML log-likelihoods (not the REML ones) are the ones in the table
    assert_rel(res.table["loglik"], R("c(logLik(lme4::refitML(c_t0)), logLik(lme4::refitML(c_t1)))"))
    assert not np.allclose(res.table["loglik"], [f0.loglik, f1.loglik])
    # p-value is the chi-square survival function (pchisq(lower.tail = FALSE)), not 1 - cdf
    assert_rel(res.table["p_value"].iloc[1], R(f"pchisq({float(res.table['chisq'].iloc[1])!r}, 2, lower.tail = FALSE)")[0])


def test_ml_fits_interaction_no_warning(R, ter):
    f0 = me.lmm("ter ~ system + src_length + (1|sentence_id)", ter, reml=False)
    f1 = me.lmm("ter ~ system * src_length + (1|sentence_id)", ter, reml=False)
    res = me.compare(f0, f1)
    R("c_i0 <- lmerTest::lmer(ter ~ system + src_length + (1|sentence_id), data = ter_df, REML = FALSE); "
      "c_i1 <- lmerTest::lmer(ter ~ system * src_length + (1|sentence_id), data = ter_df, REML = FALSE)")
    _check(res, _r_anova(R, "anova(c_i0, c_i1, model.names = c('model_1', 'model_2'))"))
    assert not [w for w in res.warnings if w.kind == "refit_ml"] and not res.refitted
    assert res.estimator == "ML"


def test_refit_options(R, sleep_fits):
    res = me.compare(sleep_fits["ri"], sleep_fits["corr"], refit=True, names=["ri", "corr"])
    _check(res, _r_anova(R, "anova(c_ri, c_corr, model.names = c('ri', 'corr'))"))
    assert res.estimator == "ML" and any(w.kind == "refit_ml" for w in res.warnings)
    with pytest.raises(me.DataError, match="REML"):
        me.compare(sleep_fits["null"], sleep_fits["ri"], refit=False)
    # a REML and an ML fit with only random effects differing: both compared by ML
    ml = sleep_fits["corr"].refit(reml=False)
    res2 = me.compare(sleep_fits["ri"], ml, names=["ri", "corr"])
    _check(res2, _r_anova(R, "anova(c_ri, c_corr, model.names = c('ri', 'corr'))"))
    assert res2.estimator == "ML" and any(w.kind == "refit_ml" for w in res2.warnings)
    with pytest.raises(me.DataError, match="REML and some by ML"):
        me.compare(sleep_fits["ri"], ml, refit=False)


def test_annotation_variance_component(R, annotation):
    f0 = "score ~ mode + (1|sentence) + (1|rater)"
    f1 = "score ~ mode + (1|sentence) + (1|rater) + (1|sentence:rater)"
    res = me.compare(me.lmm(f0, annotation), me.lmm(f1, annotation), names=["m0", "m1"])
    R(f"c_a0 <- lmerTest::lmer({f0}, data = ann_df); c_a1 <- lmerTest::lmer({f1}, data = ann_df)")
    _check(res, _r_anova(R, "anova(c_a0, c_a1, refit = FALSE, model.names = c('m0', 'm1'))"))
    exp_mix = R("0.5 * pchisq(2 * (logLik(c_a1) - logLik(c_a0)), 1, lower.tail = FALSE)")
    assert_rel(res.table["p_value_mixture"].iloc[1], exp_mix[0])


def _r_pb(R, large: str, small: str, nsim: int, seed: int, loglik: float):
    """R's own ``set.seed(seed); PBmodcomp(large, small, nsim = nsim)``, its replicates drawn by
    ``PBrefdist`` (as PBmodcomp draws them) with the statistics within rounding of 0 set to 0 by
    the rule of :func:`mixedeval.inference.compare.boundary_zero` (``loglik``: the larger fit's):
    R's raw count of ``ref > 0`` includes zeros of either sign (their last bits, which differ
    between processes and CPUs: issue 42), here 2 of 40."""
    tol = compare_mod.BOUNDARY_ATOL + compare_mod.BOUNDARY_RTOL * abs(2 * loglik)
    R(f"set.seed({seed}); c_ref <- pbkrtest::PBrefdist({large}, {small}, nsim = {nsim}); "
      f"c_ref[abs(c_ref) < {tol!r}] <- 0; c_pb <- pbkrtest::PBmodcomp({large}, {small}, ref = c_ref); "
      "c_pbs <- summary(c_pb)$test")
    return {"tests": [str(x) for x in R("rownames(c_pbs)")], "tab": R("as.matrix(c_pbs)"),
            "ref": R("c_pb$ref")}


def test_parametric_bootstrap_equals_pbmodcomp(R, sleep_fits):
    res = me.compare(sleep_fits["ri"], sleep_fits["uncorr"], n_resamples=40, random_state=20240501, progress=False)
    exp = _r_pb(R, "c_uncorr", "c_ri", 40, 20240501, sleep_fits["uncorr"].loglik)
    pb = res.pb
    assert list(pb.columns) == ["comparison", "test", "statistic", "df", "ddf", "p_value", "n_resamples", "n_positive"]
    assert list(pb["test"]) == exp["tests"]
    assert_rel(pb[["statistic", "df", "ddf", "p_value"]].to_numpy(dtype=float), exp["tab"])
    assert_rel(res.table["p_value_pb"].iloc[1], exp["tab"][exp["tests"].index("PBtest"), 3])
    assert np.isnan(res.table["p_value_pb"].iloc[0])
    assert int(pb["n_resamples"].iloc[0]) == 40 and int(pb["n_positive"].iloc[0]) == int((exp["ref"] > 0).sum())
    assert res.provenance["random_state"] == 20240501 and res.provenance["n_resamples"] == 40
    assert "seed" not in res.provenance and "pb_nsim" not in res.provenance
    # the REML LRT row and the mixture p-value are kept beside it
    assert res.estimator == "REML" and "p_value_mixture" in res.table


def test_parametric_bootstrap_fixed_effect(R, sleep_fits):
    res = me.compare(sleep_fits["null"], sleep_fits["ri"], n_resamples=30, random_state=7, progress=False)
    exp = _r_pb(R, "c_ri", "c_null", 30, 7, sleep_fits["ri"].loglik)
    assert_rel(res.pb[["statistic", "df", "ddf", "p_value"]].to_numpy(dtype=float), exp["tab"])
    assert res.estimator == "ML"
    # random_state=None draws R's seed and records it, so the run can be repeated
    r2 = me.compare(sleep_fits["null"], sleep_fits["ri"], n_resamples=5)  # with the tqdm bar
    r3 = me.compare(sleep_fits["null"], sleep_fits["ri"], n_resamples=5, random_state=r2.provenance["random_state"],
                    progress=False)
    assert r2.pb.equals(r3.pb)
    # a SeedSequence (or Generator) becomes one reproducible set.seed value
    r4 = me.compare(sleep_fits["null"], sleep_fits["ri"], n_resamples=5, random_state=np.random.SeedSequence(3),
                    progress=False)
    r5 = me.compare(sleep_fits["null"], sleep_fits["ri"], n_resamples=5, random_state=np.random.SeedSequence(3),
                    progress=False)
    assert r4.provenance["random_state"] == r5.provenance["random_state"] and r4.pb.equals(r5.pb)


def test_bad_input(ter, sleep_fits):
    f_all = me.lmm("ter ~ system + (1|sentence_id)", ter)
    f_sub = me.lmm("ter ~ system + (1|sentence_id)", ter.iloc[:3000])
    with pytest.raises(me.DataError, match="different data"):
        me.compare(f_all, f_sub)
    f_other = me.lmm("src_length ~ system + (1|sentence_id)", ter)
    with pytest.raises(me.DataError, match="different response"):
        me.compare(f_all, f_other)
    with pytest.raises(me.DataError, match="at least two"):
        me.compare(f_all)
    with pytest.raises(me.DataError, match="not a fit"):
        me.compare(f_all, "ter ~ 1 + (1|sentence_id)")
    with pytest.raises(me.DataError, match="names"):
        me.compare(sleep_fits["ri"], sleep_fits["corr"], names=["a"])
    with pytest.raises(me.DataError, match="random_state"):
        me.compare(sleep_fits["ri"], sleep_fits["corr"], n_resamples=5, random_state=1.5)
    with pytest.raises(me.DataError, match="n_resamples"):
        me.compare(sleep_fits["ri"], sleep_fits["corr"], n_resamples=0)


def test_column_names_do_not_follow_lme4_renames():
    current = pd.DataFrame(columns=["model", "npar", "AIC", "BIC", "logLik", "deviance", "Chisq", "Df", "Pr(>Chisq)"])
    legacy = pd.DataFrame(columns=["model", "Df", "AIC", "BIC", "logLik", "deviance", "Chisq", "Chi Df", "Pr(>Chisq)"])
    want = ["model", *OUR_LRT]
    assert list(names.rename(current, names.LRT, legacy=names.LRT_LEGACY).columns) == want
    assert list(names.rename(legacy, names.LRT, legacy=names.LRT_LEGACY).columns) == want


def test_result_object(sleep_fits):
    res = me.compare(sleep_fits["ri"], sleep_fits["corr"])
    text = repr(res)
    assert "REML" in text and "p_value" in text
    assert "<table" in res._repr_html_()
    assert res.to_dict()["table"][1]["model"] == "model_2"
