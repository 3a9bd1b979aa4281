"""emmeans / contrasts / emtrends parity with emmeans called directly in R (in the test), the
published Hagmann (2023) Table 2.3 p-value, df at any size, the effect-size standardizers
(total variance by hand from R's VarCorr; residual = emmeans::eff_size in R), and bad-input
errors."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

import mixedeval as me
from mixedeval.engine.conditions import r_warnings
from mixedeval.errors import DataError
from mixedeval.inference import emmeans as emm_mod

N_TER = 7287
LIM = f"lmer.df = 'satterthwaite', lmerTest.limit = {N_TER}, pbkrtest.limit = {N_TER}"

EMM_MAP = {"SE": "std_error", "df": "df", "lower.CL": "conf_low", "upper.CL": "conf_high",
           "asymp.LCL": "conf_low", "asymp.UCL": "conf_high"}
#: R's adjusted summary -> ours (p.value of an adjusted summary is our p_adj)
CT_MAP = {"estimate": "estimate", "t.ratio": "t_value", "z.ratio": "z_value", "p.value": "p_adj", **EMM_MAP}
CONTRAST_COLUMNS = ["contrast", "estimate", "std_error", "df", "t_value", "p_value", "p_adj", "conf_low", "conf_high",
                    "effect_size", "effect_size_conf_low", "effect_size_conf_high", "effect_size_sd"]


def check_raw_p(R, ours: pd.DataFrame, contrast_expr: str) -> None:
    """``p_value`` is the unadjusted p-value: R's summary of the same contrasts with adjust = 'none'."""
    exp = r_table(R, f"summary({contrast_expr}, infer = c(TRUE, TRUE), adjust = 'none')")
    assert_rel(ours["p_value"], exp["p.value"])


def r_table(R, expr: str) -> dict[str, np.ndarray]:
    """Evaluate an emmeans summary in R and return its columns."""
    R(f".me_s <- as.data.frame({expr}); .me_s[] <- lapply(.me_s, function(x) if (is.factor(x)) as.character(x) else x)")
    names = [str(n) for n in R("names(.me_s)")]
    return {n: R(f".me_s[[{i + 1}]]") for i, n in enumerate(names)}


def check_table(ours: pd.DataFrame, exp: dict[str, np.ndarray], mapping: dict[str, str], labels=()) -> None:
    for lab in labels:
        assert [str(x) for x in ours[lab]] == [str(x) for x in exp[lab]]
    n_checked = 0
    for rname, col in mapping.items():
        if rname in exp:
            assert_rel(ours[col], exp[rname])
            n_checked += 1
    assert n_checked >= 4


@pytest.fixture(scope="module")
def ter_fit(ter, R):
    R("m_emm <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = ter_df)")
    R(f"e_emm <- emmeans::emmeans(m_emm, 'system', {LIM})")
    return me.lmm("ter ~ system + (1|sentence_id)", ter)


@pytest.fixture(scope="module")
def ter_emm(ter_fit):
    return ter_fit.emmeans("system")


@pytest.fixture(scope="module")
def slope_fit(ter, R):
    R("m_sl <- lmerTest::lmer(ter ~ system * src_length + (1|sentence_id), data = ter_df)")
    return me.lmm("ter ~ system * src_length + (1|sentence_id)", ter)


def test_emmeans_satterthwaite_any_size(R, ter_fit, ter_emm):
    assert ter_fit.nobs == N_TER > 3000
    t = ter_emm.table
    assert list(t.columns) == ["system", "emmean", "std_error", "df", "conf_low", "conf_high"]
    exp = r_table(R, "summary(e_emm)")
    check_table(t, exp, {"emmean": "emmean", **EMM_MAP}, labels=["system"])
    assert np.all(np.isfinite(t["df"])) and np.all(t["df"] < 5000)
    # the trap: emmeans without the limits silently uses df = Inf at this size
    assert np.all(np.isinf(R("suppressMessages(summary(emmeans::emmeans(m_emm, 'system'))$df)")))
    assert not [w for w in ter_emm.warnings if w.kind == "df_fallback"]
    assert ter_emm.provenance["lmerTest.limit"] >= N_TER and ter_emm.provenance["lmer.df"] == "satterthwaite"
    assert list(t["system"].cat.categories) == ["Baseline", "Marking", "PostEdit"]


@pytest.mark.parametrize("adjust", ["holm", "tukey", "bonferroni", "sidak", "fdr", "BH", "none", "mvt", "hochberg",
                                    "hommel", "BY", "scheffe", "dunnettx"])
def test_pairwise_adjustments(R, ter_emm, adjust):
    ct = ter_emm.contrasts("pairwise", adjust=adjust, random_state=7)
    r_adj = adjust
    exp = r_table(R, f"{{set.seed(7); summary(pairs(e_emm, adjust = '{r_adj}'), infer = c(TRUE, TRUE))}}")
    t = ct.table
    assert list(t.columns) == CONTRAST_COLUMNS
    check_table(t, exp, CT_MAP, labels=["contrast"])
    check_raw_p(R, t, "pairs(e_emm)")
    if adjust == "none":
        assert_rel(t["p_value"], t["p_adj"])
    assert ct.adjust == r_adj
    if adjust == "mvt":
        assert ct.provenance["random_state"] == 7
    if adjust in ("holm", "fdr", "BH", "hochberg", "hommel", "BY"):  # p-value-only methods
        assert (ct.p_adjust, ct.ci_adjust) == (adjust, "bonferroni")
        assert [w for w in ct.warnings if w.kind == "ci_adjust"]
    elif adjust == "none":
        assert (ct.p_adjust, ct.ci_adjust) == ("none", "none")
        assert not ct.warnings
    else:
        assert ct.p_adjust == ct.ci_adjust == adjust
        assert not [w for w in ct.warnings if w.kind in ("ci_adjust", "adjust_changed")]


def test_hagmann_2023_table_2_3(R, ter_fit):
    """Published: Marking - PostEdit p = 0.0685 (asymptotic df, Holm); all asymptotic p-values
    (Holm and Tukey) equal emmeans in R."""
    emm = ter_fit.emmeans("system", df_method="asymptotic")
    assert np.all(np.isinf(emm.table["df"]))
    assert not [w for w in emm.warnings if w.kind == "df_fallback"]
    R("e_asy <- emmeans::emmeans(m_emm, 'system', lmer.df = 'asymptotic')")
    holm = emm.contrasts(adjust="holm").table.set_index("contrast")
    # asymptotic df: the statistic is a z statistic and its column says so
    assert "z_value" in holm.columns and "t_value" not in holm.columns
    assert round(holm.loc["Marking - PostEdit", "p_adj"], 4) == 0.0685
    assert holm.loc["Baseline - Marking", "p_adj"] < 1e-4
    assert holm.loc["Baseline - PostEdit", "p_adj"] < 1e-4
    exp = r_table(R, "summary(pairs(e_asy, adjust = 'holm'))")
    assert list(holm.index) == list(exp["contrast"])
    assert_rel(holm["p_adj"], exp["p.value"])
    assert_rel(holm["z_value"], exp["z.ratio"])
    check_raw_p(R, holm, "pairs(e_asy)")
    tukey = emm.contrasts(adjust="tukey").table.set_index("contrast")
    exp = r_table(R, "summary(pairs(e_asy, adjust = 'tukey'))")
    assert list(tukey.index) == list(exp["contrast"])
    assert_rel(tukey["p_adj"], exp["p.value"])


@pytest.mark.parametrize(
    ("method", "kw", "r_args"),
    [
        ("revpairwise", {}, "'revpairwise'"),
        ("trt.vs.ctrl", {"ref": "Marking"}, "'trt.vs.ctrl', ref = 2"),
        ("trt.vs.ctrl", {"ref": 2}, "'trt.vs.ctrl', ref = 3"),
        ("consec", {}, "'consec'"),
        ("poly", {}, "'poly'"),
        ({"base_vs_fb": [1, -0.5, -0.5], "mark_vs_pe": [0, 1, -1]}, {},
         "list(base_vs_fb = c(1, -0.5, -0.5), mark_vs_pe = c(0, 1, -1))"),
    ],
)
def test_contrast_methods(R, ter_emm, method, kw, r_args):
    ct = ter_emm.contrasts(method, adjust="bonferroni", level=0.9, **kw)
    exp = r_table(R, f"summary(emmeans::contrast(e_emm, {r_args}, adjust = 'bonferroni'), infer = c(TRUE, TRUE), "
                     "level = 0.9)")
    check_table(ct.table, exp, CT_MAP, labels=["contrast"])
    check_raw_p(R, ct.table, f"emmeans::contrast(e_emm, {r_args})")
    assert ct.method == (method if isinstance(method, str) else "custom")
    # emmeans' own effect sizes for the same method (and ref): eff_size passes them to contrast()
    es = ter_emm.contrasts(method, adjust="bonferroni", level=0.9, effect_size="residual", **kw)
    exp_es = r_table(R, f"summary(emmeans::eff_size(e_emm, sigma = sigma(m_emm), edf = df.residual(m_emm), "
                        f"method = {r_args}), level = 0.9)")
    assert list(es.table["contrast"]) == [str(x) for x in exp_es["contrast"]]
    assert_rel(es.table[["effect_size", "effect_size_conf_low", "effect_size_conf_high"]].to_numpy(),
               np.column_stack([exp_es["effect.size"], exp_es["lower.CL"], exp_es["upper.CL"]]))


def test_by_and_at_with_override(R, slope_fit):
    at = {"src_length": [10, 30, 60]}
    emm = slope_fit.emmeans("system", by="src_length", at=at, level=0.9)
    R(f"e_by <- emmeans::emmeans(m_sl, 'system', by = 'src_length', at = list(src_length = c(10, 30, 60)), {LIM})")
    exp = r_table(R, "summary(e_by, level = 0.9)")
    assert list(emm.table.columns[:2]) == ["system", "src_length"]
    check_table(emm.table, exp, {"emmean": "emmean", **EMM_MAP}, labels=["system"])
    assert_rel(emm.table["src_length"], exp["src_length"])
    ct = emm.contrasts(adjust="holm")
    exp = r_table(R, "summary(pairs(e_by, adjust = 'holm'), infer = c(TRUE, TRUE), level = 0.9)")
    assert list(ct.table.columns[:2]) == ["contrast", "src_length"]
    check_table(ct.table, exp, CT_MAP, labels=["contrast"])
    check_raw_p(R, ct.table, "pairs(e_by)")
    # residual effect sizes per by group, as eff_size(..., method = 'pairwise') with the grid's by
    es = emm.contrasts(adjust="holm", effect_size="residual")
    exp_es = r_table(R, "summary(emmeans::eff_size(e_by, sigma = sigma(m_sl), edf = df.residual(m_sl)), level = 0.9)")
    assert_rel(es.table["src_length"], exp_es["src_length"])
    assert_rel(es.table[["effect_size", "effect_size_conf_low", "effect_size_conf_high"]].to_numpy(),
               np.column_stack([exp_es["effect.size"], exp_es["lower.CL"], exp_es["upper.CL"]]))
    # by=() contrasts across all 9 cells (36 pairs), as emmeans' by = NULL
    ct_all = emm.contrasts(adjust="holm", by=())
    exp = r_table(R, "summary(pairs(e_by, adjust = 'holm', by = NULL), infer = c(TRUE, TRUE), level = 0.9)")
    assert len(ct_all.table) == 36 and "src_length" not in ct_all.table.columns
    check_table(ct_all.table, exp, CT_MAP, labels=["contrast"])
    es_all = emm.contrasts(adjust="holm", by=(), effect_size="residual")
    exp_es = r_table(R, "summary(emmeans::eff_size(e_by, sigma = sigma(m_sl), edf = df.residual(m_sl), by = NULL), "
                        "level = 0.9)")
    assert list(es_all.table["contrast"]) == [str(x) for x in exp_es["contrast"]]
    assert_rel(es_all.table["effect_size_conf_low"], exp_es["lower.CL"])


def test_emtrends(R, slope_fit):
    tr = slope_fit.emtrends("system", var="src_length")
    R(f"e_tr <- emmeans::emtrends(m_sl, 'system', var = 'src_length', {LIM})")
    exp = r_table(R, "summary(e_tr)")
    assert list(tr.table.columns) == ["system", "trend", "std_error", "df", "conf_low", "conf_high"]
    assert tr.var == "src_length" and tr.kind == "emtrends"
    check_table(tr.table, exp, {"src_length.trend": "trend", **EMM_MAP}, labels=["system"])
    assert np.all(np.isfinite(tr.table["df"]))
    ct = tr.contrasts(adjust="tukey")
    exp = r_table(R, "summary(pairs(e_tr, adjust = 'tukey'), infer = c(TRUE, TRUE))")
    check_table(ct.table, exp, CT_MAP, labels=["contrast"])


def test_kenward_roger(R, annotation):
    fit = me.lmm("score ~ mode + (1|sentence) + (1|rater)", annotation)
    emm = fit.emmeans("mode", df_method="kenward-roger")
    R("m_kr <- lmerTest::lmer(score ~ mode + (1|sentence) + (1|rater), data = ann_df)")
    R("e_kr <- emmeans::emmeans(m_kr, 'mode', lmer.df = 'kenward-roger', lmerTest.limit = 1e6, pbkrtest.limit = 1e6)")
    check_table(emm.table, r_table(R, "summary(e_kr)"), {"emmean": "emmean", **EMM_MAP}, labels=["mode"])
    assert "kenward-roger" in emm.notes[0]
    ct = emm.contrasts(adjust="none")
    check_table(ct.table, r_table(R, "summary(pairs(e_kr, adjust = 'none'), infer = c(TRUE, TRUE))"), CT_MAP)
    with pytest.raises(DataError, match="REML"):
        fit.refit(reml=False).emmeans("mode", df_method="kenward-roger")


def test_non_estimable_cells(R, ter):
    """Baseline has one replication only: emmeans marks the empty cells non-estimable (NA)."""
    fit = me.lmm("ter ~ system * replication + (1|sentence_id)", ter, factors=["replication"])
    emm = fit.emmeans("system", by="replication")
    R(f"m_ne <- lmerTest::lmer(ter ~ system * replication + (1|sentence_id), data = ter_df); "
      f"e_ne <- emmeans::emmeans(m_ne, 'system', by = 'replication', {LIM})")
    check_table(emm.table, r_table(R, "summary(e_ne)"), {"emmean": "emmean", **EMM_MAP}, labels=["system", "replication"])
    assert emm.table["emmean"].isna().sum() == 2
    assert [w for w in emm.warnings if w.kind == "non_estimable"]
    assert not [w for w in emm.warnings if w.kind == "df_fallback"]


def test_tukey_changed_to_sidak_is_reported(ter_emm):
    ct = ter_emm.contrasts("trt.vs.ctrl", adjust="tukey")
    assert ct.p_adjust == "sidak"
    assert [w for w in ct.warnings if w.kind == "adjust_changed"]


def test_df_fallback_is_never_silent(R):
    """The detector flags infinite df, another df method, and emmeans' 'disabled' note."""
    t = pd.DataFrame({"emmean": [1.0, 2.0], "df": [np.inf, 12.0]})
    ws = emm_mod._df_warnings(t, ("Degrees-of-freedom method: satterthwaite",), "satterthwaite", "emmean")
    assert [w.kind for w in ws] == ["df_fallback"]
    ws = emm_mod._df_warnings(t.assign(df=[3.0, 4.0]), ("Degrees-of-freedom method: asymptotic",),
                              "kenward-roger", "emmean")
    assert [w.kind for w in ws] == ["df_fallback"]
    assert emm_mod._df_warnings(t, (), "asymptotic", "emmean") == []
    msgs = R("{m <- character(0); withCallingHandlers(emmeans::emmeans(m_emm, 'system'), message = function(c) "
             "{m <<- c(m, conditionMessage(c)); invokeRestart('muffleMessage')}); m}")

    class Res:
        warnings = ()
        messages = tuple(str(x) for x in msgs)

    kinds = {w.kind for w in r_warnings(Res(), "emmeans")}
    assert "df_fallback" in kinds


def test_result_objects(ter_emm):
    ct = ter_emm.contrasts()
    assert "Marking - PostEdit" in repr(ct) and "<table" in ct._repr_html_()
    d = ct.to_dict()
    assert d["p_adjust"] == "holm" and d["effect_size"] == "total" and isinstance(d["table"], list)
    assert ter_emm.to_frame().shape == (3, 6)
    assert ct.to_frame().equals(ct.table)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda f, e: f.emmeans("systm"), "systm"),
        (lambda f, e: f.emmeans("system", by="nope"), "nope"),
        (lambda f, e: f.emmeans("system ~ 1"), "formulas"),
        (lambda f, e: f.emmeans("system", level=1.5), "level"),
        (lambda f, e: f.emmeans("system", df_method="wald"), "df_method"),
        (lambda f, e: f.emmeans("system", at=[1]), "dict"),
        (lambda f, e: f.emtrends("system", var="system"), "numeric"),
        (lambda f, e: e.contrasts("allpairs"), "method"),
        (lambda f, e: e.contrasts(adjust="holmes"), "adjust"),
        (lambda f, e: e.contrasts({"x": [1, -1]}), "3 finite weights"),
        (lambda f, e: e.contrasts("pairwise", ref="Marking"), "trt.vs.ctrl"),
        (lambda f, e: e.contrasts(by="replication"), "replication"),
        (lambda f, e: e.contrasts(effect_size="cohen"), "effect_size"),
        (lambda f, e: e.contrasts(adjust="mvt", random_state=-1), "random_state"),
    ],
)
def test_bad_input(ter_fit, ter_emm, call, match):
    with pytest.raises(DataError, match=match):
        call(ter_fit, ter_emm)


def test_bad_reference_level_is_an_r_error(ter_emm):
    with pytest.raises(me.RError, match="Nope"):
        ter_emm.contrasts("trt.vs.ctrl", ref="Nope")


# ---------------------------------------------------------------------------- effect sizes


def test_effect_size_total_variance_by_hand(R, ter_fit, ter_emm):
    """Default standardizer: the square root of the sum of all variance components (item +
    residual), from R's VarCorr; Baseline - Marking is 0.047 total SDs (0.21 residual SDs)."""
    ct = ter_emm.contrasts(adjust="holm")
    assert ct.effect_size == "total" and ct.provenance["effect_size"] == "total"
    sd_total = float(np.sqrt(R("sum(as.data.frame(lme4::VarCorr(m_emm))$vcov)")[0]))
    assert_rel(ct.table["effect_size_sd"], np.full(3, sd_total))
    exp = r_table(R, "summary(pairs(e_emm))")
    assert_rel(ct.table["effect_size"], exp["estimate"] / sd_total)
    row = ct.table.set_index("contrast").loc["Baseline - Marking"]
    assert round(row["effect_size"], 3) == 0.047 and round(row["effect_size_sd"], 2) == 0.26
    assert row[["effect_size_conf_low", "effect_size_conf_high"]].isna().all()
    # the standardizer is the one of fit.r2(): var_random + var_residual
    r2 = ter_fit.r2()
    assert_rel(sd_total, np.sqrt(r2.var_random + r2.var_residual))


def test_effect_size_residual_equals_emmeans_eff_size(R, ter_emm):
    """effect_size='residual' is emmeans::eff_size(emm, sigma = sigma(m), edf = df.residual(m)),
    estimate and interval, for several levels and adjustments (eff_size's interval is unadjusted)."""
    for level, adjust in ((0.95, "holm"), (0.9, "tukey")):
        ct = ter_emm.contrasts(adjust=adjust, level=level, effect_size="residual")
        exp = r_table(R, f"summary(emmeans::eff_size(e_emm, sigma = sigma(m_emm), edf = df.residual(m_emm)), "
                         f"level = {level})")
        assert list(ct.table["contrast"]) == [str(x) for x in exp["contrast"]]
        assert_rel(ct.table["effect_size"], exp["effect.size"])
        assert_rel(ct.table["effect_size_conf_low"], exp["lower.CL"])
        assert_rel(ct.table["effect_size_conf_high"], exp["upper.CL"])
        assert_rel(ct.table["effect_size_sd"], np.full(3, R("sigma(m_emm)")[0]))
        assert ct.effect_size == "residual"
        row = ct.table.set_index("contrast").loc["Baseline - Marking"]
        assert round(row["effect_size"], 2) == 0.21


def test_effect_size_random_slopes_follows_johnson(R, tmp_path):
    """With random slopes the total variance averages the random part over the rows (Johnson
    2014), computed here in R from VarCorr and the random-effect model matrix."""
    path = tmp_path / "sleep.csv"
    R(f"data(sleepstudy, package = 'lme4'); write.csv(sleepstudy, '{path}', row.names = FALSE)")
    sleep = pd.read_csv(path, dtype={"Subject": str})
    sleep["half"] = np.where(sleep["Days"] < 5, "early", "late")
    fit = me.lmm("Reaction ~ half + (Days|Subject)", sleep)
    ct = fit.emmeans("half").contrasts(adjust="none")
    R("sl_d <- sleepstudy; sl_d$half <- factor(ifelse(sl_d$Days < 5, 'early', 'late')); "
      "sl_m <- lmerTest::lmer(Reaction ~ half + (Days|Subject), data = sl_d); "
      "sl_S <- lme4::VarCorr(sl_m)$Subject; sl_Z <- cbind(1, sl_d$Days); "
      "sl_v <- mean(rowSums((sl_Z %*% sl_S) * sl_Z)) + sigma(sl_m)^2")
    sd_total = float(np.sqrt(R("sl_v")[0]))
    assert_rel(ct.table["effect_size_sd"], [sd_total])
    assert_rel(ct.table["effect_size"], ct.table["estimate"] / sd_total)
