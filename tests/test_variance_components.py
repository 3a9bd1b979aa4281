"""variance_components(): parity with lme4 computed by R in the test, G-theory coefficients from
R's VarCorr written out by hand, the ANOVA cross-check against R's anova(lm()), published values
(Hagmann 2023, Tables 3.1 and 3.2), and bad-input errors."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import OPTIMIZER_RTOL, assert_rel

import mixedeval as me
from mixedeval.workflows.variance_components import koo_li_band, variance_components

SIX = "(1|sentence) + (1|rater) + (1|occasion) + (1|sentence:rater) + (1|sentence:occasion) + (1|rater:occasion)"


def _r_vc(R, name: str) -> dict[str, float]:
    grp = list(R(f"as.data.frame(lme4::VarCorr({name}))$grp"))
    vc = R(f"as.data.frame(lme4::VarCorr({name}))$vcov")
    return dict(zip(grp, vc))


@pytest.fixture(scope="module")
def ann_fits(R, annotation):
    out = {}
    for mode, tag in (("Marking", "mk"), ("Post Edit", "pe")):
        R(f"vc_{tag} <- lme4::lmer(score ~ 1 + {SIX}, data = droplevels(ann_df[ann_df$mode == '{mode}', ]))")
        vca = variance_components(annotation[annotation["mode"] == mode], "score", "sentence", ["rater", "occasion"],
                                  interactions="all")
        out[mode] = (vca, _r_vc(R, f"vc_{tag}"), tag)
    return out


@pytest.mark.parametrize("mode", ["Marking", "Post Edit"])
def test_annotation_parity_with_lme4(R, ann_fits, mode):
    vca, exp, tag = ann_fits[mode]
    got = dict(zip(vca.table["component"], vca.table["variance"]))
    assert set(got) == set(exp)
    for k, v in exp.items():
        assert_rel(got[k], v, rtol=1e-8)
    total = sum(exp.values())
    pct = dict(zip(vca.table["component"], vca.table["percent"]))
    for k, v in exp.items():
        assert_rel(pct[k], 100 * v / total)
    assert vca.singular == bool(R(f"lme4::isSingular(vc_{tag}, tol = 1e-4)")[0])
    theta = R(f"lme4::getME(vc_{tag}, 'theta')")
    names = list(R(f"names(lme4::getME(vc_{tag}, 'theta'))"))
    zero_r = {n.split(".")[0] for n, t in zip(names, theta) if t < 1e-4}
    assert set(vca.zero_components) == zero_r
    # sorted by variance, largest first; percents sum to 100
    assert list(vca.table["variance"]) == sorted(vca.table["variance"], reverse=True)
    assert_rel(vca.table["percent"].sum(), 100.0)
    assert vca.nobs == 150


def test_published_annotation_values(ann_fits):
    """Hagmann (2023) Tables 3.1 and 3.2: sentence share 12.0% (Marking) and 60.4% (Post Edit),
    both fits singular."""
    for mode, published in (("Marking", 12.0), ("Post Edit", 60.4)):
        vca = ann_fits[mode][0]
        assert round(float(vca.table.set_index("component").loc["sentence", "percent"]), 1) == published
        assert vca.singular
        assert any(w.kind == "singular" for w in vca.warnings)
        assert round(vca.phi(), 3) == round(published / 100, 3)
    # Table 3.1: rater 14.2%, sentence:rater 16.1%, residual 57.6%
    t = ann_fits["Marking"][0].table.set_index("component")["percent"].round(1)
    assert (t["rater"], t["sentence:rater"], t["Residual"]) == (14.2, 16.1, 57.6)


@pytest.mark.parametrize("mode", ["Marking", "Post Edit"])
def test_reliability_coefficients_from_r_components(R, ann_fits, mode):
    vca, _, tag = ann_fits[mode]
    v = {k: R(f"with(as.data.frame(lme4::VarCorr(vc_{tag})), vcov[grp == '{k}'])")[0]
         for k in ("sentence", "rater", "occasion", "sentence:rater", "sentence:occasion", "rater:occasion", "Residual")}
    s, r, i, sr, si, ri, e = (v[k] for k in ("sentence", "rater", "occasion", "sentence:rater", "sentence:occasion",
                                                "rater:occasion", "Residual"))
    for nr, ni in ((1, 1), (3, 1), (2, 5), (12, 5)):
        abs_err = r / nr + i / ni + sr / nr + si / ni + ri / (nr * ni) + e / (nr * ni)  # Brennan Eq. 3.9
        rel_err = sr / nr + si / ni + e / (nr * ni)
        assert_rel(vca.phi(rater=nr, occasion=ni), s / (s + abs_err))
        assert_rel(vca.g_coefficient(rater=nr, occasion=ni), s / (s + rel_err))
    assert_rel(vca.phi(), s / (s + r + i + sr + si + ri + e))
    assert_rel(vca.inter_rater(), (s + si) / (s + si + sr + e))  # Eq. 3.18
    assert_rel(vca.intra_rater(), (s + sr) / (s + sr + si + e))
    assert_rel(vca.intra_rater(variant="hagmann2023"), (s + sr) / (s + sr + ri + e))  # Eq. 3.17 as printed
    ds = vca.d_study({"rater": range(1, 13), "occasion": [1, 2, 3, 4, 5]})
    assert len(ds) == 60 and list(ds.columns) == ["n_rater", "n_occasion", "phi", "phi_band", "g_coefficient", "g_band"]
    row = ds[(ds["n_rater"] == 3) & (ds["n_occasion"] == 2)].iloc[0]
    assert_rel(row["phi"], vca.phi(rater=3, occasion=2))
    assert row["phi_band"] == koo_li_band(row["phi"])
    # averaging over more raters never lowers phi
    for ni in range(1, 6):
        p = ds[ds["n_occasion"] == ni].sort_values("n_rater")["phi"].to_numpy()
        assert np.all(np.diff(p) >= -1e-15)
    rel = vca.reliability()
    assert list(rel["coefficient"]) == ["phi", "g_coefficient", "intra_rater", "inter_rater"]


def test_post_edit_two_raters_reach_good(ann_fits):
    """Hagmann (2023) Fig. 3.3: averaging post-edits over 2-3 raters gives good reliability, marking
    stays poor (and needs about 12 raters to reach .75)."""
    assert ann_fits["Post Edit"][0].phi(rater=3) >= 0.75
    assert ann_fits["Marking"][0].phi(rater=3) < 0.5
    assert ann_fits["Marking"][0].phi(rater=8, occasion=5) < 0.75


def test_koo_li_bands():
    assert [koo_li_band(x) for x in (0.0, 0.49, 0.5, 0.74, 0.75, 0.9, 0.91, 1.0)] == [
        "poor", "poor", "moderate", "moderate", "good", "good", "excellent", "excellent"]
    assert koo_li_band(float("nan")) == "undefined"


def test_anova_check_balanced_with_replicates(R, annotation):
    """sentence x rater with 3 occasions per cell: EMS estimates from R's own anova(lm()) mean squares,
    and REML equals them on balanced data (all positive)."""
    sub = annotation[annotation["mode"] == "Marking"]
    vca = variance_components(sub, "score", "sentence", ["rater"], interactions=["sentence:rater"])
    R("mk_df <- droplevels(ann_df[ann_df$mode == 'Marking', ])")
    ms = R("anova(lm(score ~ sentence * rater, data = mk_df))[['Mean Sq']]")
    dfs = R("anova(lm(score ~ sentence * rater, data = mk_df))[['Df']]")
    n, m, k = 5, 10, 3
    exp = {"sentence": (ms[0] - ms[2]) / (m * k), "rater": (ms[1] - ms[2]) / (n * k),
           "sentence:rater": (ms[2] - ms[3]) / k, "Residual": ms[3]}
    chk = vca.anova_check.set_index("component")
    for c, v in exp.items():
        assert_rel(chk.loc[c, "anova_variance"], v)
    assert_rel(chk["mean_sq"].to_numpy(), ms)
    assert_rel(chk["df"].to_numpy(), dfs)
    assert (chk["anova_variance"] > 0).all()
    # REML = ANOVA on balanced data: to the optimizer's precision with a tight optimizer in R, up to
    # the default optimizer's stopping tolerance in ours
    R("mk_tight <- lme4::lmer(score ~ 1 + (1|sentence) + (1|rater) + (1|sentence:rater), data = mk_df, "
      "control = lme4::lmerControl(optimizer = 'bobyqa', optCtrl = list(rhoend = 1e-12)))")
    tight = _r_vc(R, "mk_tight")
    # an optimum of a flat deviance is located only to ~sqrt(eps) in theta, and where depends on the
    # optimizer's path (5e-8 here; up to 3e-7 with other start values or row orders): variances are
    # an optimizer output, so optimizer tolerance for variances (2 * OPTIMIZER_RTOL), not 1e-8
    for c in exp:
        assert_rel(chk.loc[c, "anova_variance"], tight[c], rtol=2 * OPTIMIZER_RTOL)
    # default optimizer's stopping rule: 4.8e-5 here, up to 2.6e-4 with other start values or row orders
    assert_rel(chk["reml_variance"], chk["anova_variance"], rtol=1e-3)
    R("mk_reml <- lme4::lmer(score ~ 1 + (1|sentence) + (1|rater) + (1|sentence:rater), data = mk_df)")
    r_vc = _r_vc(R, "mk_reml")
    for c, v in r_vc.items():
        assert_rel(chk.loc[c, "reml_variance"], v)


def test_anova_check_one_per_cell(R, ter):
    """Marking system: sentence x replication, one score per cell (Hagmann 2023, proof of Prop. 3.1)."""
    keep = sorted(ter["sentence_id"].unique())[:300]
    sub = ter[(ter["system"] == "Marking") & ter["sentence_id"].isin(keep)]
    vca = variance_components(sub, "ter", "sentence_id", ["replication"])
    R("mk_ter <- ter_df[ter_df$system == 'Marking', ]")
    R("mk_ter <- droplevels(mk_ter[mk_ter$sentence_id %in% sort(unique(as.character(mk_ter$sentence_id)), "
      "method = 'radix')[1:300], ])")
    ms = R("anova(lm(ter ~ sentence_id + replication, data = mk_ter))[['Mean Sq']]")
    n, m = 300, 3
    chk = vca.anova_check.set_index("component")
    assert_rel(chk.loc["sentence_id", "anova_variance"], (ms[0] - ms[2]) / m)
    assert_rel(chk.loc["replication", "anova_variance"], (ms[1] - ms[2]) / n)
    assert_rel(chk.loc["Residual", "anova_variance"], ms[2])
    R("mk_ter_tight <- lme4::lmer(ter ~ 1 + (1|sentence_id) + (1|replication), data = mk_ter, "
      "control = lme4::lmerControl(optimizer = 'bobyqa', optCtrl = list(rhoend = 1e-12)))")
    tight = _r_vc(R, "mk_ter_tight")
    # the optimum is located only to ~sqrt(eps) in theta (8e-8 relative here, up to 5e-7 with other
    # start values or row orders: optimizer tolerance); the tiny replication component (theta ~ 3e-3)
    # carries that absolute error as 1.8e-6 relative here, up to 3.6e-5 on other paths
    for c, tol in (("sentence_id", 2 * OPTIMIZER_RTOL), ("replication", 2e-4), ("Residual", 2 * OPTIMIZER_RTOL)):
        assert_rel(chk.loc[c, "anova_variance"], tight[c], rtol=tol)
    # default optimizer's stopping rule: up to 5.5e-6 (sentence_id, Residual) with other start values or
    # row orders; the tiny replication component 2.6e-4 here, up to 3.2e-3 on other paths
    for c, tol in (("sentence_id", 1e-4), ("replication", 2e-2), ("Residual", 1e-4)):
        assert_rel(chk.loc[c, "reml_variance"], chk.loc[c, "anova_variance"], rtol=tol)
    R("mk_ter_fit <- lme4::lmer(ter ~ 1 + (1|sentence_id) + (1|replication), data = mk_ter)")
    for c, v in _r_vc(R, "mk_ter_fit").items():
        assert_rel(chk.loc[c, "reml_variance"], v)


def test_no_anova_check_for_unbalanced_or_multi_facet(annotation, ann_fits):
    assert ann_fits["Marking"][0].anova_check is None  # two facets
    sub = annotation[annotation["mode"] == "Marking"].iloc[3:]
    vca = variance_components(sub, "score", "sentence", ["rater"])
    assert vca.anova_check is None


def test_names_mapped_not_positions(R, annotation):
    """Non-syntactic column names, and terms whose VarCorr order differs from the call order."""
    sub = annotation[annotation["mode"] == "Post Edit"].rename(columns={"rater": "rater id", "sentence": "item[1]"})
    orig = sub.copy()
    vca = variance_components(sub, "score", "item[1]", ["occasion", "rater id"], interactions=[("item[1]", "rater id")])
    pd.testing.assert_frame_equal(sub, orig)  # the user's frame is untouched
    R("pe_df <- droplevels(ann_df[ann_df$mode == 'Post Edit', ])")
    R("pe3 <- lme4::lmer(score ~ 1 + (1|occasion) + (1|rater) + (1|sentence) + (1|sentence:rater), data = pe_df)")
    exp = _r_vc(R, "pe3")
    got = dict(zip(vca.table["component"], vca.table["variance"]))
    mapping = {"item[1]": "sentence", "rater id": "rater", "occasion": "occasion", "item[1]:rater id": "sentence:rater",
               "Residual": "Residual"}
    assert set(got) == set(mapping)
    for ours, theirs in mapping.items():
        assert_rel(got[ours], exp[theirs])
    roles = dict(zip(vca.table["component"], vca.table["role"]))
    assert roles == {"item[1]": "object", "rater id": "facet", "occasion": "facet",
                     "item[1]:rater id": "interaction", "Residual": "residual"}
    assert "item[1]" in vca.formula and "rater id" in vca.formula


def test_nested_term_expands_like_lme4(R, annotation):
    sub = annotation[annotation["mode"] == "Post Edit"]
    vca = variance_components(sub, "score", "sentence", ["rater"], nested="rater/occasion")
    R("pe_n <- lme4::lmer(score ~ 1 + (1|sentence) + (1|rater/occasion), data = droplevels(ann_df[ann_df$mode == 'Post Edit', ]))")
    exp = _r_vc(R, "pe_n")  # lme4 names the nested term occasion:rater
    got = dict(zip(vca.table["component"], vca.table["variance"]))
    assert set(got) == {"sentence", "rater", "rater:occasion", "Residual"}
    assert_rel(got["rater:occasion"], exp["occasion:rater"])
    for k in ("sentence", "rater", "Residual"):
        assert_rel(got[k], exp[k])
    assert dict(zip(vca.table["component"], vca.table["role"]))["rater:occasion"] == "nested"
    # the nested term's levels are averaged over with both facets' sizes
    s, r, ro, e = (got[k] for k in ("sentence", "rater", "rater:occasion", "Residual"))
    assert_rel(vca.phi(rater=2, occasion=3), s / (s + r / 2 + ro / 6 + e / 6))


def test_ml_estimates(R, annotation):
    sub = annotation[annotation["mode"] == "Post Edit"]
    vca = variance_components(sub, "score", "sentence", ["rater"], reml=False)
    R("pe_ml <- lme4::lmer(score ~ 1 + (1|sentence) + (1|rater), data = droplevels(ann_df[ann_df$mode == 'Post Edit', ]), REML = FALSE)")
    for k, v in _r_vc(R, "pe_ml").items():
        assert_rel(vca.variance(k), v)
    assert not vca.reml


def test_result_conversion(ann_fits):
    vca = ann_fits["Marking"][0]
    assert list(vca.to_frame().columns) == ["component", "role", "variance", "std_dev", "percent"]
    d = vca.to_dict()
    assert d["singular"] is True and d["object"] == "sentence"
    assert "model" not in d and len(d["table"]) == 7  # the fitted model (and its data) is not dumped
    json.dumps(d)
    assert "phi" in repr(vca) and "<table" in vca._repr_html_()


def test_reml_recovers_known_components_by_simulation():
    """Balanced crossed design with known components: the mean REML estimate over replications is
    within Monte-Carlo error of the truth for each named component (a position mix-up would fail)."""
    rng = np.random.default_rng(2024)
    n_obj, n_rat, reps = 40, 6, 20
    truth = {"item": 1.0, "rater": 0.5, "Residual": 0.25}
    est = {k: [] for k in truth}
    phis = []
    items = np.repeat(np.arange(n_obj), n_rat)
    raters = np.tile(np.arange(n_rat), n_obj)
    for _ in range(reps):
        y = (rng.normal(0, 1.0, n_obj)[items] + rng.normal(0, np.sqrt(0.5), n_rat)[raters]
             + rng.normal(0, 0.5, n_obj * n_rat))
        df = pd.DataFrame({"item": [f"i{i}" for i in items], "rater": [f"r{r}" for r in raters], "y": y})
        vca = variance_components(df, "y", "item", ["rater"])
        for k in truth:
            est[k].append(vca.variance(k))
        phis.append(vca.phi())
    for k, t in truth.items():
        e = np.asarray(est[k])
        se = e.std(ddof=1) / np.sqrt(reps)
        assert abs(e.mean() - t) < 4 * se + 1e-3, (k, e.mean(), t, se)
    true_phi = 1.0 / (1.0 + 0.5 + 0.25)
    assert abs(np.mean(phis) - true_phi) < 0.1


# ---------------------------------------------------------------- bad input
def _toy():
    rng = np.random.default_rng(1)
    rows = [(s, r, rng.normal()) for s in range(6) for r in range(4)]
    return pd.DataFrame(rows, columns=["item", "rater", "y"]).astype({"item": str, "rater": str})


def test_object_nested_in_facet_is_an_error():
    df = _toy()
    df["judge"] = df["item"].map(lambda s: "a" if int(s) < 3 else "b")  # each item seen by one judge
    with pytest.raises(me.DataError, match="not crossed.*'judge'"):
        variance_components(df, "y", "item", ["judge"])


def test_facet_nested_in_object_is_an_error():
    df = _toy()
    df["rater"] = df["item"] + "_" + df["rater"]  # rater ids unique per item
    with pytest.raises(me.DataError, match="not crossed"):
        variance_components(df, "y", "item", ["rater"])


def test_facet_with_one_level_is_an_error():
    df = _toy()
    df["occasion"] = "1"
    with pytest.raises(me.DataError, match="'occasion' has 1 level"):
        variance_components(df, "y", "item", ["rater", "occasion"])


def test_nested_missing_column_is_an_error():
    with pytest.raises(me.DataError, match="'length_class'.*not in the data"):
        variance_components(_toy(), "y", "item", ["rater"], nested="rater/length_class")
    with pytest.raises(me.DataError, match="must be a string like"):
        variance_components(_toy(), "y", "item", ["rater"], nested="rater")


def test_other_bad_input():
    df = _toy()
    with pytest.raises(me.DataError, match="not found"):
        variance_components(df, "y", "item", ["judge"])
    with pytest.raises(me.DataError, match="one observation per level"):
        variance_components(df, "y", "item", ["rater"], interactions=["item:rater"])
    with pytest.raises(me.DataError, match="listed twice"):
        variance_components(df, "y", "item", ["rater", "rater"])
    bad = df.copy()
    bad.loc[0, "y"] = np.nan
    with pytest.raises(me.DataError, match="non-finite"):
        variance_components(bad, "y", "item", ["rater"])
    vca = variance_components(df, "y", "item", ["rater"])
    with pytest.raises(me.DataError, match="not facets of this design"):
        vca.phi(occasion=2)
    with pytest.raises(me.DataError, match=">= 1"):
        vca.phi(rater=0)
    with pytest.raises(me.DataError, match="name the rater and occasion"):
        vca.intra_rater()


def test_partially_crossed_warns():
    df = _toy().iloc[1:]
    vca = variance_components(df, "y", "item", ["rater"])
    assert any(w.kind == "partially_crossed" for w in vca.warnings)
