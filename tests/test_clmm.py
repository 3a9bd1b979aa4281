"""me.clmm against ordinal::clmm fitted in R inside the tests on the same data (ordinal::wine:
rating ~ temp + contact + (1|judge), Christensen's example), 1e-6 relative (the issue's
tolerance for quantities of one fit), plus the response rules and the likelihood-ratio test."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

import mixedeval as me
from mixedeval.inference._clmm import _convergence

RTOL = 1e-6
WINE_F = "rating ~ temp + contact + (1|judge)"


@pytest.fixture(scope="module")
def wine(R):
    from mixedeval.engine import convert

    R("wine_df <- as.data.frame(ordinal::wine)")
    df = convert.from_r(R("wine_df", raw=True))
    df["rating"] = np.asarray(df["rating"].astype(str).astype(int))  # 1..5 as integers
    return df


def _coef(R, model: str, rows: str) -> np.ndarray:
    """summary(model)$coefficients restricted to ``rows`` (alpha or beta names), as a matrix."""
    return np.asarray(R(f"unname(coef(summary({model}))[names({model}${rows}), , drop = FALSE])"))


def _check_wine(R, fit, model: str, odds: bool) -> None:
    beta = _coef(R, model, "beta")
    assert fit.fixed["term"].tolist() == list(R(f"names({model}$beta)"))
    assert_rel(fit.fixed["estimate"], beta[:, 0], rtol=RTOL)
    assert_rel(fit.fixed["std_error"], beta[:, 1], rtol=RTOL)
    assert_rel(fit.fixed["z_value"], beta[:, 2], rtol=RTOL)
    assert_rel(fit.fixed["p_value"], beta[:, 3], rtol=RTOL)
    ci = np.asarray(R(f"unname(confint({model}, level = 0.95)[names({model}$beta), , drop = FALSE])"))
    assert_rel(fit.fixed[["conf_low", "conf_high"]].to_numpy(), ci, rtol=RTOL)
    if odds:
        assert_rel(fit.fixed["odds_ratio"], R(f"exp(unname({model}$beta))"), rtol=RTOL)
        assert_rel(fit.fixed[["odds_ratio_conf_low", "odds_ratio_conf_high"]].to_numpy(), np.exp(ci), rtol=RTOL)
    else:
        assert "odds_ratio" not in fit.fixed.columns
    alpha = _coef(R, model, "alpha")
    assert fit.thresholds["term"].tolist() == list(R(f"names({model}$alpha)"))
    assert_rel(fit.thresholds["estimate"], alpha[:, 0], rtol=RTOL)
    assert_rel(fit.thresholds["std_error"], alpha[:, 1], rtol=RTOL)
    assert_rel(fit.thresholds["z_value"], alpha[:, 2], rtol=RTOL)
    ci_a = np.asarray(R(f"unname(confint({model})[names({model}$alpha), , drop = FALSE])"))
    assert_rel(fit.thresholds[["conf_low", "conf_high"]].to_numpy(), ci_a, rtol=RTOL)
    assert_rel([fit.loglik, fit.aic, fit.bic],
               [R(f"as.numeric(logLik({model}))")[0], R(f"AIC({model})")[0], R(f"BIC({model})")[0]], rtol=RTOL)
    assert fit.npar == int(R(f"attr(logLik({model}), 'df')")[0])
    assert fit.nobs == int(R(f"nobs({model})")[0])
    assert_rel(fit.random["variance"], R(f"unname(ordinal::VarCorr({model})$judge[1, 1])"), rtol=RTOL)
    assert_rel(fit.random["std_dev"], R(f"unname(attr(ordinal::VarCorr({model})$judge, 'stddev'))"), rtol=RTOL)


def test_wine_logit_parity(R, wine):
    R(f"m_wine <- ordinal::clmm({WINE_F}, data = wine_df)")
    fit = me.clmm(WINE_F, wine)
    _check_wine(R, fit, "m_wine", odds=True)
    assert fit.ngroups == {"judge": 9}
    assert fit.response_levels == ("1", "2", "3", "4", "5")
    assert fit.converged and not fit.singular
    assert fit.random[["group", "term"]].values.tolist() == [["judge", "(Intercept)"]]
    assert fit.provenance["r_function"] == "ordinal::clmm" and fit.provenance["ordinal"]
    assert fit.table.equals(fit.fixed) and fit.to_frame().equals(fit.fixed)
    d = fit.to_dict()
    assert d["thresholds"][0]["term"] == "1|2" and d["link"] == "logit"
    assert "thresholds:" in repr(fit)


def test_wine_probit_quadrature_parity(R, wine):
    R(f"m_wine_p <- ordinal::clmm({WINE_F}, data = wine_df, link = 'probit', nAGQ = 7L)")
    fit = me.clmm(WINE_F, wine, link="probit", nagq=7)
    _check_wine(R, fit, "m_wine_p", odds=False)
    assert fit.nagq == 7 and "Gauss-Hermite" in fit.provenance["approximation"]


def test_equidistant_thresholds_parity(R, wine):
    R(f"m_wine_e <- ordinal::clmm({WINE_F}, data = wine_df, threshold = 'equidistant')")
    fit = me.clmm(WINE_F, wine, threshold="equidistant")
    assert fit.thresholds["term"].tolist() == list(R("names(m_wine_e$alpha)"))
    assert_rel(fit.thresholds["estimate"], _coef(R, "m_wine_e", "alpha")[:, 0], rtol=RTOL)
    assert_rel(fit.loglik, R("as.numeric(logLik(m_wine_e))")[0], rtol=RTOL)


def test_response_codings_agree(wine):
    base = me.clmm(WINE_F, wine)
    labels = {1: "awful", 2: "poor", 3: "fair", 4: "good", 5: "superb"}
    order = list(labels.values())
    words = wine.assign(rating=wine["rating"].map(labels))
    by_levels = me.clmm(WINE_F, words, levels={"rating": order})
    cat = words.assign(rating=pd.Categorical(words["rating"], categories=order, ordered=True))
    by_cat = me.clmm(WINE_F, cat)
    floats = me.clmm(WINE_F, wine.assign(rating=wine["rating"].astype(float)))
    for f in (by_levels, by_cat, floats):
        assert_rel(f.fixed["estimate"], base.fixed["estimate"], rtol=1e-10)
        assert_rel(f.thresholds["estimate"], base.thresholds["estimate"], rtol=1e-10)
    assert by_cat.response_levels == tuple(order)
    # reversing the order flips the sign of the effects
    rev = me.clmm(WINE_F, words, levels={"rating": order[::-1]})
    assert_rel(rev.fixed["estimate"], -base.fixed["estimate"], rtol=1e-5)


def test_unused_category_is_dropped_with_a_warning(wine):
    cat = wine.assign(rating=pd.Categorical(wine["rating"], categories=[0, 1, 2, 3, 4, 5], ordered=True))
    fit = me.clmm(WINE_F, cat)
    assert fit.response_levels == ("1", "2", "3", "4", "5")
    assert [w.kind for w in fit.warnings] == ["unused_levels"]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d.assign(rating=d["rating"].map({1: "a", 2: "b", 3: "c", 4: "d", 5: "e"})), "levels="),
        (lambda d: d.assign(rating=(d["rating"] > 3).astype(int)), "family='binomial'"),
        (lambda d: d.assign(rating=d["rating"] > 3), "family='binomial'"),
        (lambda d: d.assign(rating=d["rating"] + 0.5), "non-integer"),
        (lambda d: d.assign(rating=pd.Categorical(d["rating"])), "unordered Categorical"),
        (lambda d: d.assign(rating=d["rating"].where(d.index != 3)), "non-finite"),
    ],
)
def test_bad_responses_raise_clear_errors(wine, change, match):
    bad = change(wine)
    before = bad.copy()
    with pytest.raises(me.DataError, match=match):
        me.clmm(WINE_F, bad)
    pd.testing.assert_frame_equal(bad, before)


def test_bad_options_and_formulas(wine):
    with pytest.raises(me.DataError, match="link"):
        me.clmm(WINE_F, wine, link="identity")
    with pytest.raises(me.DataError, match="threshold"):
        me.clmm(WINE_F, wine, threshold="free")
    with pytest.raises(me.DataError, match="nagq"):
        me.clmm(WINE_F, wine, nagq=0)
    with pytest.raises(me.DataError, match="single random intercept"):
        me.clmm("rating ~ temp + (1|judge) + (1|bottle)", wine, nagq=5)
    with pytest.raises(me.DataError, match="random-effect"):
        me.clmm("rating ~ temp", wine)
    with pytest.raises(me.DataError, match="one column"):
        me.clmm("log(rating) ~ temp + (1|judge)", wine)
    with pytest.raises(me.DataError, match="levels"):
        me.clmm(WINE_F, wine, levels={"rating": [1, 2, 3]})  # 4 and 5 are not among the levels
    with pytest.raises(me.FormulaError):
        me.clmm("rating ~ temp + system('ls') + (1|judge)", wine)


def test_user_frame_untouched_and_missing_predictor_rows(R, wine):
    d = wine.copy()
    d["temp"] = d["temp"].astype(object)
    d.loc[[0, 5], "temp"] = None
    before = d.copy()
    fit = me.clmm(WINE_F, d)
    pd.testing.assert_frame_equal(d, before)
    assert fit.nobs == 70 and "missing_rows" in [w.kind for w in fit.warnings]
    R(f"wine_na <- wine_df; wine_na$temp[c(1, 6)] <- NA; m_wine_na <- ordinal::clmm({WINE_F}, data = wine_na)")
    assert_rel(fit.fixed["estimate"], R("unname(m_wine_na$beta)"), rtol=RTOL)
    assert_rel(fit.loglik, R("as.numeric(logLik(m_wine_na))")[0], rtol=RTOL)


def test_random_slope_table_and_singular_flag(R, wine):
    f = "rating ~ temp + contact + (1 + contact|judge)"
    R(f"m_wine_s <- ordinal::clmm({f}, data = wine_df); vc_s <- ordinal::VarCorr(m_wine_s)$judge")
    fit = me.clmm(f, wine)
    r = fit.random
    assert r[["term", "term2"]].values.tolist() == [["(Intercept)", None], ["(Intercept)", "contactyes"],
                                                    ["contactyes", None]]
    assert_rel(r["variance"], R("c(vc_s[1, 1], vc_s[2, 1], vc_s[2, 2])"), rtol=RTOL)
    assert_rel(r["corr"].iloc[1], R("vc_s[2, 1] / sqrt(vc_s[1, 1] * vc_s[2, 2])")[0], rtol=RTOL)
    singular = bool(R("any(abs(unlist(lapply(m_wine_s$ST, diag))) < 1e-4)")[0])
    assert fit.singular is singular
    assert ("singular" in [w.kind for w in fit.warnings]) is singular


def test_compare_is_ordinal_anova(R, wine):
    R("m_w0 <- ordinal::clmm(rating ~ temp + (1|judge), data = wine_df); "
      f"m_w1 <- ordinal::clmm({WINE_F}, data = wine_df); a_w <- anova(m_w0, m_w1)")
    m0 = me.clmm("rating ~ temp + (1|judge)", wine)
    m1 = me.clmm(WINE_F, wine)
    lrt = me.compare(m1, m0, names=["full", "null"])  # rows ordered by npar, as ordinal does
    t = lrt.table
    assert t["model"].tolist() == ["null", "full"]
    assert t["npar"].tolist() == list(R("a_w$no.par").astype(int))
    assert_rel(t["loglik"], R("a_w$logLik"), rtol=RTOL)
    assert_rel(t["aic"], R("a_w$AIC"), rtol=RTOL)
    assert_rel(t["bic"], R("c(BIC(m_w0), BIC(m_w1))"), rtol=RTOL)
    assert_rel(t["chisq"].iloc[1], R("a_w$LR.stat[2]")[0], rtol=RTOL)
    assert t["df"].iloc[1] == R("a_w$df[2]")[0]
    assert_rel(t["p_value"].iloc[1], R("a_w[['Pr(>Chisq)']][2]")[0], rtol=RTOL)
    assert np.isnan(t["chisq"].iloc[0]) and (t["estimator"] == "ML").all()
    with pytest.raises(me.DataError, match="bootstrap"):
        me.compare(m0, m1, n_resamples=10)


def test_convergence_rules():
    ok = {"code": 0, "message": "relative convergence (4)", "max_grad": 1e-5, "cond_h": 30.0}
    assert _convergence(ok) == (True, [])
    conv, ws = _convergence({**ok, "code": 1, "max_grad": 0.01})
    assert not conv and [w.kind for w in ws] == ["convergence", "convergence"]
    conv, ws = _convergence({**ok, "cond_h": float("nan")})
    assert not conv and [w.kind for w in ws] == ["hessian"]
    conv, ws = _convergence({**ok, "cond_h": 1e7})
    assert not conv and "unidentifiable" in ws[0].message


def _emm_r(R, code: str) -> pd.DataFrame:
    from mixedeval.engine import convert

    return convert.from_r(R(f"as.data.frame(summary({code}))", raw=True))


def test_emmeans_latent_and_contrasts_parity(R, wine):
    R(f"m_wine_emm <- ordinal::clmm({WINE_F}, data = wine_df); "
      "e_lat <- emmeans::emmeans(m_wine_emm, specs = 'temp', mode = 'latent')")
    fit = me.clmm(WINE_F, wine)
    emm = me.emmeans(fit, "temp")  # dispatches to fit.emmeans (latent scale)
    exp = _emm_r(R, "e_lat")
    assert emm.table["temp"].astype(str).tolist() == exp["temp"].astype(str).tolist()
    assert_rel(emm.table["emmean"], exp["emmean"])
    assert_rel(emm.table["std_error"], exp["SE"])
    assert_rel(emm.table[["conf_low", "conf_high"]].to_numpy(), exp[["asymp.LCL", "asymp.UCL"]].to_numpy())
    con = emm.contrasts(method="revpairwise", adjust="none")
    ec = _emm_r(R, "emmeans::contrast(e_lat, 'revpairwise', adjust = 'none'), infer = c(TRUE, TRUE)")
    assert con.table["contrast"].tolist() == ec["contrast"].astype(str).tolist()
    assert_rel(con.table["estimate"], ec["estimate"])
    assert_rel(con.table["z_value"], ec["z.ratio"])
    assert_rel(con.table["p_value"], ec["p.value"])
    assert_rel(con.table["odds_ratio"], np.exp(ec["estimate"]))
    # the latent difference of temp is the model's coefficient (an odds ratio of higher ratings)
    assert_rel(con.table["estimate"], fit.fixed.set_index("term").loc[["tempwarm"], "estimate"])


def test_emmeans_prob_and_mean_class_parity(R, wine):
    R(f"m_wine_emm2 <- ordinal::clmm({WINE_F}, data = wine_df); "
      "e_prob <- emmeans::emmeans(m_wine_emm2, specs = 'temp', by = 'rating', mode = 'prob'); "
      "e_mc <- emmeans::emmeans(m_wine_emm2, specs = 'temp', by = 'contact', mode = 'mean.class')")
    fit = me.clmm(WINE_F, wine)
    prob = fit.emmeans("temp", mode="prob")
    exp = _emm_r(R, "e_prob")
    assert prob.by == ("rating",) and prob.table["rating"].astype(str).tolist() == exp["rating"].astype(str).tolist()
    assert_rel(prob.table["prob"], exp["prob"])
    assert_rel(prob.table["std_error"], exp["SE"])
    sums = prob.table.groupby("temp", observed=True)["prob"].sum()
    assert_rel(sums.to_numpy(), [1.0, 1.0], rtol=1e-10)
    con = prob.contrasts(adjust="holm")
    ec = _emm_r(R, "emmeans::contrast(e_prob, 'pairwise', adjust = 'holm'), infer = c(TRUE, TRUE)")
    assert_rel(con.table["estimate"], ec["estimate"])
    assert_rel(con.table["p_adj"], ec["p.value"])
    assert "odds_ratio" not in con.table.columns
    mc = fit.emmeans("temp", by="contact", mode="mean.class")
    exp = _emm_r(R, "e_mc")
    assert_rel(mc.table["mean_class"], exp["mean.class"])
    assert_rel(mc.table[["conf_low", "conf_high"]].to_numpy(), exp[["asymp.LCL", "asymp.UCL"]].to_numpy())
    with pytest.raises(me.DataError, match="mode"):
        fit.emmeans("temp", mode="cum.prob")
    with pytest.raises(me.DataError, match="type"):
        me.emmeans(fit, "temp", type="response")
