"""r2() / icc() against performance::r2_nakagawa / performance::icc (computed in R in the test)
and, where performance 0.10 differs from MuMIn, against a hand derivation written in R."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_rel

import mixedeval as me


@pytest.fixture(scope="module")
def sleep(R):
    from mixedeval.engine import convert

    R("sleep_df <- lme4::sleepstudy")
    return convert.from_r(R("sleep_df", raw=True))


def _perf(R, name: str) -> dict[str, float]:
    return {
        "r2_marginal": R(f"performance::r2_nakagawa({name})$R2_marginal")[0],
        "r2_conditional": R(f"performance::r2_nakagawa({name})$R2_conditional")[0],
        "icc_adjusted": R(f"performance::icc({name})$ICC_adjusted")[0],
        "icc_unadjusted": R(f"performance::icc({name})$ICC_unadjusted")[0],
    }


def _check(fit, exp) -> None:
    r2 = fit.r2()
    icc = fit.icc()
    assert_rel([r2.r2_marginal, r2.r2_conditional], [exp["r2_marginal"], exp["r2_conditional"]])
    assert_rel([icc.icc_adjusted, icc.icc_unadjusted], [exp["icc_adjusted"], exp["icc_unadjusted"]])


@pytest.mark.parametrize(
    "formula",
    ["Reaction ~ Days + (1|Subject)", "Reaction ~ Days + (Days|Subject)", "Reaction ~ 1 + (1|Subject)"],
)
def test_sleepstudy_vs_performance(R, sleep, formula):
    R(f"m_r2 <- lmerTest::lmer({formula}, data = sleep_df)")
    _check(me.lmm(formula, sleep), _perf(R, "m_r2"))


def test_kreutzer_ter_vs_performance(R, ter):
    R("m_r2t <- lmerTest::lmer(ter ~ system * src_length + (1|sentence_id), data = ter_df)")
    _check(me.lmm("ter ~ system * src_length + (1|sentence_id)", ter), _perf(R, "m_r2t"))


def test_crossed_intercepts_vs_performance(R, annotation):
    # several terms whose order lme4 changes (by number of levels): components must be matched
    f = "score ~ mode + (1|rater) + (1|sentence) + (1|rater:sentence)"
    R(f"m_r2a <- lmerTest::lmer({f}, data = ann_df)")
    fit = me.lmm(f, annotation)
    _check(fit, _perf(R, "m_r2a"))
    comp = fit.r2().components.set_index("group")
    vc = {str(g): v for g, v in zip(R("as.data.frame(lme4::VarCorr(m_r2a))$grp"),
                                     R("as.data.frame(lme4::VarCorr(m_r2a))$vcov"))}
    for g in ("rater", "sentence", "rater:sentence"):
        assert_rel(comp.loc[g, "variance"], vc[g])


def _hand(R, name: str, random_code: str) -> dict[str, float]:
    """Nakagawa & Schielzeth / Johnson written out by hand in R for one model."""
    R(f"""
      vf <- var(drop(model.matrix({name}) %*% lme4::fixef({name})))
      vc <- lme4::VarCorr({name})
      vr <- {random_code}
      ve <- sigma({name})^2
      hand <- c(vf / (vf + vr + ve), (vf + vr) / (vf + vr + ve), vr / (vr + ve), vr / (vf + vr + ve))
    """)
    h = R("hand")
    return dict(zip(["r2_marginal", "r2_conditional", "icc_adjusted", "icc_unadjusted"], h))


def test_uncorrelated_slopes_hand_derivation(R, sleep):
    """(1|g) + (0 + x|g): var_random = s_int + s_slope * mean(x^2) (MuMIn; performance 0.10 differs)."""
    f = "Reaction ~ Days + (1|Subject) + (0 + Days|Subject)"
    R(f"m_unc <- lmerTest::lmer({f}, data = sleep_df)")
    exp = _hand(R, "m_unc", "vc[[1]][1, 1] + vc[[2]][1, 1] * mean(sleep_df$Days^2)")
    _check(me.lmm(f, sleep), exp)


def test_correlated_slope_hand_derivation(R, sleep):
    """(x|g): s00 + 2 s01 mean(x) + s11 mean(x^2) (Johnson 2014), beside the performance check."""
    f = "Reaction ~ Days + (Days|Subject)"
    R(f"m_cor <- lmerTest::lmer({f}, data = sleep_df)")
    x = "sleep_df$Days"
    exp = _hand(R, "m_cor", f"vc$Subject[1, 1] + 2 * vc$Subject[1, 2] * mean({x}) + vc$Subject[2, 2] * mean({x}^2)")
    _check(me.lmm(f, sleep), exp)


def test_slope_not_in_fixed_part_hand_derivation(R, sleep):
    """A random slope whose variable is not a fixed effect still counts (MuMIn's raw matrices)."""
    f = "Reaction ~ 1 + (1|Subject) + (0 + Days|Subject)"
    R(f"m_nf <- lmerTest::lmer({f}, data = sleep_df)")
    exp = _hand(R, "m_nf", "vc[[1]][1, 1] + vc[[2]][1, 1] * mean(sleep_df$Days^2)")
    fit = me.lmm(f, sleep)
    _check(fit, exp)
    assert fit.r2().r2_marginal == 0.0


def test_terms_reordered_with_tied_level_counts(R, sleep):
    """lme4 orders VarCorr (rev(order(nlevels))) and the raw matrices (order(decreasing)) differently
    when level counts tie: the terms must be matched by group and columns, not by position."""
    f = "Reaction ~ Days + (1|Subject) + (1|pair) + (0 + Days|Subject)"
    R(f"sleep_df$pair <- factor((seq_len(nrow(sleep_df)) - 1) %/% 2); m_tie <- lmerTest::lmer({f}, data = sleep_df)")
    assert [str(x) for x in R("names(lme4::VarCorr(m_tie))")] == ["pair", "Subject", "Subject.1"]
    exp = _hand(R, "m_tie", "sum(sapply(vc, function(s) if (rownames(s) == 'Days') s[1, 1] * mean(sleep_df$Days^2) "
                            "else s[1, 1]))")
    df = sleep.assign(pair=[str(i // 2) for i in range(len(sleep))])
    _check(me.lmm(f, df), exp)


def test_singular_fit_is_flagged(R):
    rng = np.random.default_rng(3)
    import pandas as pd

    # identical values in every group: equal group means, so the group variance is estimated as 0
    df = pd.DataFrame({"y": np.tile(rng.normal(size=10), 6), "g": np.repeat([f"g{i}" for i in range(6)], 10)})
    fit = me.lmm("y ~ 1 + (1|g)", df)
    assert fit.singular
    r2 = fit.r2()
    assert [w.kind for w in r2.warnings] == ["singular"]
    assert r2.var_random == pytest.approx(0.0, abs=1e-8)
    assert r2.r2_marginal == 0.0


def test_result_objects(R, sleep):
    fit = me.lmm("Reaction ~ Days + (Days|Subject)", sleep)
    r2 = fit.r2()
    assert list(r2.to_frame().columns) == ["r2_marginal", "r2_conditional"]
    assert list(r2.components["component"]) == ["fixed", "random", "residual"]
    assert_rel(r2.var_residual, fit.sigma ** 2)
    assert "r2_marginal" in repr(r2) and "<table" in r2._repr_html_()
    assert set(r2.to_dict()) >= {"r2_marginal", "r2_conditional", "components", "provenance"}
    assert list(fit.icc().to_frame().columns) == ["icc_adjusted", "icc_unadjusted"]
