"""fit.check_optimizers(): refits equal R's own refits with lmerControl(optimizer = ...), computed
by R in the test; agreement and disagreement on real and badly scaled data."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

import mixedeval as me
from mixedeval.inference.optimizers import COLUMNS, check_optimizers

OPTS = ("nloptwrap", "bobyqa", "Nelder_Mead")


@pytest.fixture(scope="module")
def sleep(R):
    R('data(sleepstudy, package = "lme4"); o_sleep <- sleepstudy; o_sleep$DaysK <- o_sleep$Days * 1000')
    return pd.DataFrame({
        "Reaction": R("o_sleep$Reaction"),
        "Days": R("o_sleep$Days"),
        "DaysK": R("o_sleep$DaysK"),
        "Subject": R("as.character(o_sleep$Subject)"),
    })


def _r_refits(R, formula: str, data: str, reml: bool = True):
    out = {}
    for o in OPTS:
        R(f"o_m <- suppressWarnings(lmerTest::lmer({formula}, data = {data}, REML = {'TRUE' if reml else 'FALSE'}, "
          f"control = lme4::lmerControl(optimizer = '{o}')))")
        out[o] = {
            "loglik": R("as.numeric(logLik(o_m))")[0],
            "fixef": R("unname(lme4::fixef(o_m))"),
            "se": R("unname(summary(o_m)$coefficients[, 'Std. Error'])"),
            "df": R("unname(summary(o_m, ddf = 'Satterthwaite')$coefficients[, 'df'])"),
            "vcov": R("as.data.frame(lme4::VarCorr(o_m), order = 'lower.tri')$vcov"),
        }
    return out


def _check_parity(res, exp):
    for o in OPTS:
        row = res.table.set_index("optimizer").loc[o]
        fx = res.fixed[res.fixed["optimizer"] == o]
        rn = res.random[res.random["optimizer"] == o]
        assert_rel(row["loglik"], exp[o]["loglik"])
        assert_rel(fx["estimate"], exp[o]["fixef"])
        assert_rel(fx["std_error"], exp[o]["se"])
        assert_rel(fx["df"], exp[o]["df"])
        assert_rel(rn["variance"], exp[o]["vcov"])
        ref = exp["nloptwrap"]
        assert_rel(row["loglik_diff"], exp[o]["loglik"] - ref["loglik"], rtol=1e-8)
        assert_rel(row["max_abs_diff_fixed"], np.max(np.abs(exp[o]["fixef"] - ref["fixef"])), rtol=1e-8)
        assert_rel(row["max_abs_diff_varcomp"], np.max(np.abs(exp[o]["vcov"] - ref["vcov"])), rtol=1e-8)


def test_agree_on_kreutzer_ter(R, ter):
    fit = me.lmm("ter ~ system + (1|sentence_id)", ter)
    res = fit.check_optimizers()
    _check_parity(res, _r_refits(R, "ter ~ system + (1|sentence_id)", "ter_df"))
    assert list(res.table.columns) == list(COLUMNS)
    assert list(res.table["optimizer"]) == list(OPTS)
    assert res.agree and res.table["within_tolerance"].all()
    assert res.table["reference"].tolist() == [True, False, False]
    assert res.table.loc[0, ["loglik_diff", "max_abs_diff_fixed", "max_abs_diff_varcomp"]].tolist() == [0, 0, 0]
    assert not any(w.kind == "optimizer_disagreement" for w in res.warnings)
    assert res.table["converged"].all() and (res.table["feval"] > 0).all()


def test_disagreement_on_badly_scaled_slope(R, sleep):
    """Days in thousandths makes the random-slope variance tiny: the optimizers stop at
    different points (lme4 warns for all of them), log-likelihoods differ by > 0.01."""
    f = "Reaction ~ DaysK + (DaysK|Subject)"
    fit = me.lmm(f, sleep)
    res = check_optimizers(fit, OPTS)
    exp = _r_refits(R, f, "o_sleep")
    _check_parity(res, exp)
    assert not res.agree
    assert any(w.kind == "optimizer_disagreement" for w in res.warnings)
    best = max(OPTS, key=lambda o: exp[o]["loglik"])
    assert res.best_optimizer == best
    assert not res.table["converged"].any()  # lme4's gradient check fails for all three
    assert res.table["messages"].str.contains("converge").all()


def test_tolerances_drive_the_verdict(sleep):
    fit = me.lmm("Reaction ~ Days + (Days|Subject)", sleep, optimizer="bobyqa")
    loose = fit.check_optimizers(["nelder-mead", "nloptwrap"])
    # the fit's own optimizer is the reference row, listed first
    assert list(loose.table["optimizer"]) == ["bobyqa", "Nelder_Mead", "nloptwrap"]
    assert loose.reference == "bobyqa" and loose.agree
    tight = fit.check_optimizers(["nloptwrap"], rtol=1e-12, loglik_tol=1e-12)
    diff = tight.table.loc[1, "max_abs_diff_varcomp"]
    assert diff > 0 and not tight.agree  # the refits differ in the last digits
    assert any(w.kind == "optimizer_disagreement" for w in tight.warnings)


def test_ml_fit_is_refitted_by_ml(R, sleep):
    fit = me.lmm("Reaction ~ Days + (Days|Subject)", sleep, reml=False)
    res = fit.check_optimizers()
    _check_parity(res, _r_refits(R, "Reaction ~ Days + (Days|Subject)", "o_sleep", reml=False))
    # a fit made ML by refit() keeps ML in the refits too
    res2 = me.lmm("Reaction ~ Days + (Days|Subject)", sleep).refit(reml=False).check_optimizers(["bobyqa"])
    assert_rel(res2.table.set_index("optimizer").loc["bobyqa", "loglik"],
               res.table.set_index("optimizer").loc["bobyqa", "loglik"], rtol=1e-8)


def test_bad_arguments(sleep):
    fit = me.lmm("Reaction ~ Days + (1|Subject)", sleep)
    with pytest.raises(me.DataError, match="optimizer"):
        fit.check_optimizers(["lbfgs"])
    with pytest.raises(me.DataError, match="empty"):
        fit.check_optimizers([])
    with pytest.raises(me.DataError, match="non-negative"):
        fit.check_optimizers(rtol=-1)


def test_result_object(sleep):
    res = me.lmm("Reaction ~ Days + (1|Subject)", sleep).check_optimizers(["bobyqa"])
    assert "agree" in repr(res)
    assert "<table" in res._repr_html_()
    d = res.to_dict()
    assert d["agree"] is True and d["table"][1]["optimizer"] == "bobyqa"
