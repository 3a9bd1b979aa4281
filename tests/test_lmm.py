"""lmm() parity with lme4/lmerTest computed by R in the test, and bad-input errors."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

import mixedeval as me

ANN_FORMULA = (
    "score ~ 1 + (1|sentence) + (1|rater) + (1|occasion) + (1|sentence:rater) + (1|sentence:occasion)"
    " + (1|rater:occasion)"
)


def _r_fit(R, name, formula, data, reml=True, ddf="Satterthwaite"):
    R(f"{name} <- lmerTest::lmer({formula}, data = {data}, REML = {'TRUE' if reml else 'FALSE'})")
    return {
        "coef": R(f"unname(summary({name}, ddf = '{ddf}')$coefficients)"),
        "names": list(R(f"rownames(summary({name})$coefficients)")),
        "vc": R(f"as.data.frame(lme4::VarCorr({name}), order = 'lower.tri')$vcov"),
        "sd": R(f"as.data.frame(lme4::VarCorr({name}), order = 'lower.tri')$sdcor"),
        "grp": list(R(f"as.data.frame(lme4::VarCorr({name}), order = 'lower.tri')$grp")),
        "sigma": R(f"sigma({name})")[0],
        "loglik": R(f"as.numeric(logLik({name}))")[0],
        "aic": R(f"AIC({name})")[0],
        "bic": R(f"BIC({name})")[0],
        "nobs": int(R(f"nobs({name})")[0]),
        "singular": bool(R(f"lme4::isSingular({name})")[0]),
    }


def _check(fit, exp, df_col=True):
    assert list(fit.fixed["term"]) == exp["names"]
    coef = exp["coef"]
    assert_rel(fit.fixed["estimate"], coef[:, 0])
    assert_rel(fit.fixed["std_error"], coef[:, 1])
    if df_col:
        assert_rel(fit.fixed["df"], coef[:, 2])
        assert_rel(fit.fixed["t_value"], coef[:, 3])
        assert_rel(fit.fixed["p_value"], coef[:, 4])
        q = __import__("scipy.stats", fromlist=["t"]).t.ppf(0.975, coef[:, 2])
        assert_rel(fit.fixed["conf_low"], coef[:, 0] - q * coef[:, 1])
        assert_rel(fit.fixed["conf_high"], coef[:, 0] + q * coef[:, 1])
    assert list(fit.random["group"]) == exp["grp"]
    assert_rel(fit.random["variance"], exp["vc"])
    assert_rel(fit.sigma, exp["sigma"])
    assert_rel(fit.loglik, exp["loglik"])
    assert_rel(fit.aic, exp["aic"])
    assert_rel(fit.bic, exp["bic"])
    assert fit.nobs == exp["nobs"]
    assert fit.singular == exp["singular"]


@pytest.mark.parametrize("reml", [True, False])
def test_kreutzer_ter_parity(R, ter, reml):
    fit = me.lmm("ter ~ system + (1|sentence_id)", ter, reml=reml)
    exp = _r_fit(R, "m_ter", "ter ~ system + (1|sentence_id)", "ter_df", reml=reml)
    _check(fit, exp)
    assert fit.reml is reml
    assert fit.ngroups == {"sentence_id": 1041}
    assert fit.converged
    assert fit.provenance["estimator"] == ("REML" if reml else "ML")
    for k in ("mixedeval", "r", "lme4", "lmerTest", "optimizer"):
        assert fit.provenance[k]
    # the main table is .table (the fixed effects), as for every result
    assert fit.table is fit.fixed and fit.to_frame().equals(fit.fixed)
    assert list(fit.random.columns) == ["group", "term", "term2", "variance", "std_dev", "corr"]
    assert fit.random["term"].iloc[-1] is None and fit.random["group"].iloc[-1] == "Residual"


def test_kenward_roger_and_asymptotic(R, ter):
    fit = me.lmm("ter ~ system + (1|sentence_id)", ter.iloc[:700], df_method="kenward-roger")
    R("m_kr <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = ter_df[1:700, ])")
    coef = R("unname(summary(m_kr, ddf = 'Kenward-Roger')$coefficients)")
    assert_rel(fit.fixed["df"], coef[:, 2])
    assert_rel(fit.fixed["std_error"], coef[:, 1])
    asym = fit.coef_table("asymptotic")
    assert np.isinf(asym["df"]).all()
    # the statistic column is named after its reference distribution: z for asymptotic df
    assert list(asym.columns) == ["term", "estimate", "std_error", "df", "z_value", "p_value", "conf_low", "conf_high"]
    z = asym["estimate"] / asym["std_error"]
    assert_rel(asym["z_value"], z)
    from scipy.stats import norm

    assert_rel(asym["p_value"], 2 * norm.sf(np.abs(z)))
    assert_rel(asym["conf_high"], asym["estimate"] + norm.ppf(0.975) * asym["std_error"])
    fit_z = me.lmm("ter ~ system + (1|sentence_id)", ter.iloc[:700], df_method="asymptotic")
    assert "z_value" in fit_z.fixed.columns and "t_value" not in fit_z.fixed.columns
    assert list(fit.fixed.columns) == ["term", "estimate", "std_error", "df", "t_value", "p_value", "conf_low",
                                       "conf_high"]


def test_annotation_marking_singular(R, annotation):
    marking = annotation[annotation["mode"] == "Marking"]
    fit = me.lmm(ANN_FORMULA, marking)
    exp = _r_fit(R, "m_ann", ANN_FORMULA, "ann_df[ann_df$mode == 'Marking', ]")
    _check(fit, exp)
    assert fit.singular
    assert any(w.kind == "singular" for w in fit.warnings)


def test_sleepstudy_random_slopes(R, tmp_path):
    path = tmp_path / "sleep.csv"
    R(f"data(sleepstudy, package = 'lme4'); write.csv(sleepstudy, '{path}', row.names = FALSE)")
    sleep = pd.read_csv(path, dtype={"Subject": str})
    fit = me.lmm("Reaction ~ Days + (Days|Subject)", sleep)
    exp = _r_fit(R, "m_sleep", "Reaction ~ Days + (Days|Subject)", "sleepstudy")
    _check(fit, exp)
    # covariance row: term2 and corr are set
    cov = fit.random[fit.random["term2"].notna()]
    assert len(cov) == 1
    corr = R("as.data.frame(lme4::VarCorr(m_sleep), order = 'lower.tri')$sdcor[2]")[0]
    assert_rel(cov["corr"].iloc[0], corr)


def test_fitted_residuals_simulate(R, ter):
    fit = me.lmm("ter ~ system + (1|sentence_id)", ter)
    R("m_ter2 <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = ter_df)")
    assert_rel(fit.fitted(), R("unname(fitted(m_ter2))"))
    assert_rel(fit.fitted("population"), R("unname(predict(m_ter2, re.form = NA))"))
    assert_rel(fit.residuals(), R("unname(residuals(m_ter2))"))
    sims = fit.simulate(4, random_state=7)
    assert sims.shape == (7287, 4)
    assert_rel(sims, R("as.matrix(simulate(m_ter2, nsim = 4, seed = 7, re.form = NA))"))
    cond = fit.simulate(2, random_state=7, re="conditional")
    assert_rel(cond, R("as.matrix(simulate(m_ter2, nsim = 2, seed = 7, re.form = NULL))"))
    blups = fit.ranef()["sentence_id"]
    assert_rel(blups["(Intercept)"].to_numpy(), R("lme4::ranef(m_ter2)$sentence_id[, 1]"))


def test_refit_ml_equals_r(R, ter):
    fit = me.lmm("ter ~ system + (1|sentence_id)", ter)
    ml = fit.refit(reml=False)
    assert not ml.reml
    assert_rel(ml.loglik, R("as.numeric(logLik(lme4::refitML(lme4::lmer(ter ~ system + (1|sentence_id), data = ter_df))))")[0])


def test_reference_level_and_factor_columns(ter):
    fit = me.lmm("ter ~ system + (1|sentence_id)", ter, reference={"system": "PostEdit"})
    assert list(fit.fixed["term"]) == ["(Intercept)", "systemBaseline", "systemMarking"]
    d = ter.assign(seed=ter["replication"].astype(int))
    fit2 = me.lmm("ter ~ seed + (1|sentence_id)", d, factors=["seed"])
    assert list(fit2.fixed["term"]) == ["(Intercept)", "seed2", "seed3"]


def test_column_names_with_spaces_and_brackets(ter):
    d = ter.rename(columns={"system": "nmt system", "sentence_id": "sentence [id]"})
    fit = me.lmm("ter ~ nmt system + (1|sentence [id])", d)
    ref = me.lmm("ter ~ system + (1|sentence_id)", ter)
    assert_rel(fit.fixed["estimate"], ref.fixed["estimate"])
    assert fit.ngroups == {"sentence [id]": 1041}


def test_polars_and_pyarrow_inputs(ter):
    import pyarrow as pa

    ref = me.lmm("ter ~ system + (1|sentence_id)", ter)
    f_pa = me.lmm("ter ~ system + (1|sentence_id)", pa.Table.from_pandas(ter))
    assert_rel(f_pa.fixed["estimate"], ref.fixed["estimate"])
    import polars as pl  # a test dependency (pyproject test extra): missing polars is a failure
    f_pl = me.lmm("ter ~ system + (1|sentence_id)", pl.from_pandas(ter))
    assert_rel(f_pl.fixed["estimate"], ref.fixed["estimate"])


def test_data_never_modified(ter):
    before = ter.copy()
    me.lmm("ter ~ system + (1|sentence_id)", ter)
    pd.testing.assert_frame_equal(ter, before)


# ------------------------------------------------------------------ bad input


def test_missing_column(ter):
    with pytest.raises(me.DataError, match="'sytem'"):
        me.lmm("ter ~ sytem + (1|sentence_id)", ter)


def test_nan_scores_named(ter):
    d = ter.copy()
    d.loc[[3, 10], "ter"] = np.nan
    with pytest.raises(me.DataError, match=r"'ter' has 2 non-finite values.*rows 3, 10"):
        me.lmm("ter ~ system + (1|sentence_id)", d)


def test_non_numeric_scores(ter):
    d = ter.copy()
    d["ter"] = d["ter"].astype(str)
    d.loc[5, "ter"] = "n/a"
    with pytest.raises(me.DataError, match="'ter' is not numeric"):
        me.lmm("ter ~ system + (1|sentence_id)", d)


def test_one_level_factor(ter):
    d = ter[ter["system"] == "Marking"]
    with pytest.raises(me.DataError, match="'system' has 1 level"):
        me.lmm("ter ~ system + (1|sentence_id)", d)
    d2 = ter[ter["sentence_id"] == "0_0"]
    with pytest.raises(me.DataError, match="grouping factor 'sentence_id' has 1 level"):
        me.lmm("ter ~ 1 + (1|sentence_id)", d2)


def test_empty_table(ter):
    with pytest.raises(me.DataError, match="empty"):
        me.lmm("ter ~ system + (1|sentence_id)", ter.iloc[:0])


def test_bad_arguments(ter):
    with pytest.raises(me.DataError, match="optimizer"):
        me.lmm("ter ~ system + (1|sentence_id)", ter, optimizer="lbfgs")
    with pytest.raises(me.DataError, match="df_method"):
        me.lmm("ter ~ system + (1|sentence_id)", ter, df_method="welch")
    with pytest.raises(me.DataError, match="formula"):
        me.lmm("ter system", ter)
