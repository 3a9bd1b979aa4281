"""Issue 15: the parametric-bootstrap GLRT (pbkrtest's PBmodcomp, through ``me.compare``) in
``compare_systems``, ``conditional_compare`` and ``assess_meta_parameter``.

* ``p_value_pb`` equals what ``me.compare`` gives on the same two fits with the same settings;
* for compare_systems it also equals R's own ``set.seed(1); pbkrtest::PBmodcomp(full, null,
  nsim = 20)`` on the same rows (computed by R in the test);
* the same p-values and statistics in process and on worker processes (``executor=2``);
* without ``n_resamples`` nothing changes (no ``p_value_pb`` column).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.errors import DataError
from conftest import OPTIMIZER_RTOL, assert_rel

N_SENT = 30


@pytest.fixture(scope="module")
def ter_small(ter):
    ids = sorted(ter["sentence_id"].unique())[:N_SENT]
    return ter[ter["sentence_id"].isin(ids)]


@pytest.fixture(scope="module")
def hyp_small():
    hyp = me.datasets.load("kreutzer_hyperparameters")
    hyp = hyp[hyp["delta_scheme"] == "(-0.5:0.5)"]
    return hyp[hyp["sentence_id"].isin(sorted(hyp["sentence_id"].unique())[:20])]


@pytest.fixture(scope="module")
def cs_pb(ter_small):
    return me.compare_systems(ter_small, "ter", "system", "sentence_id", n_resamples=20, random_state=1,
                              progress=False)


def test_compare_systems_p_value_pb_is_me_compare_on_the_same_fits(cs_pb):
    ref = me.compare(cs_pb.null_fit, cs_pb.fit, names=["null", "full"], n_resamples=20, random_state=1,
                     progress=False)
    assert "p_value_pb" in cs_pb.glrt.columns
    # the same R objects and seed in the same process: the same statistics, so the same p-value
    assert_rel(cs_pb.glrt["p_value_pb"], ref.table["p_value_pb"], rtol=1e-12)
    assert cs_pb.table["p_value_pb"].iloc[0] == ref.table["p_value_pb"].iloc[1]
    assert cs_pb.table["p_value_pb"].iloc[1:].isna().all()          # the averaged analyses have none
    assert cs_pb.provenance["glrt_n_resamples"] == 20 and cs_pb.provenance["glrt_random_state"] == 1
    # the chi-square part of the GLRT is unchanged
    plain = me.compare(cs_pb.null_fit, cs_pb.fit, names=["null", "full"])
    assert_rel(cs_pb.glrt["chisq"], plain.table["chisq"], rtol=1e-12)


def test_compare_systems_p_value_pb_equals_r_pbmodcomp(R, cs_pb):
    ids = ", ".join(f'"{i}"' for i in sorted(cs_pb.fit.data["sentence_id"].astype(str).unique()))
    R(f"""
    pb_sub <- droplevels(ter_df[ter_df$sentence_id %in% c({ids}), ])
    pb_full <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = pb_sub)
    pb_null <- lmerTest::lmer(ter ~ 1 + (1|sentence_id), data = pb_sub)
    set.seed(1)
    pb_r <- pbkrtest::PBmodcomp(pb_full, pb_null, nsim = 20)
    """)
    assert int(R("nrow(pb_sub)")[0]) == cs_pb.fit.nobs
    p_r = R('pb_r$test["PBtest", "p.value"]')[0]
    # PBmodcomp's p-value counts replicates above the observed LRT: a count, equal unless a
    # replicate ties with the observed statistic to optimizer precision
    assert cs_pb.glrt["p_value_pb"].iloc[1] == pytest.approx(p_r, rel=1e-12)
    assert 1 / 21 < p_r < 1                          # not at the floor: the counts are compared
    # the LRT statistic itself: two ML refits of the same data (optimizer runs)
    assert cs_pb.glrt["chisq"].iloc[1] == pytest.approx(R('pb_r$test["LRT", "stat"]')[0], rel=OPTIMIZER_RTOL)


def test_conditional_compare_p_value_pb_is_me_compare_on_the_same_fits(ter_small):
    cc = me.conditional_compare(ter_small, "ter", "system", "sentence_id", prop="src_length", bins=[25],
                                n_resamples=12, random_state=3, progress=False)
    ref = me.compare(cc.null_fit, cc.fit, names=["null", "full"], n_resamples=12, random_state=3, progress=False)
    assert_rel(cc.glrt["p_value_pb"], ref.table["p_value_pb"], rtol=1e-12)
    assert 1 / 13 < cc.glrt["p_value_pb"].iloc[1] < 1      # not at the floor (0.38 here)
    assert cc.provenance["glrt_n_resamples"] == 12


# (param, prop): the seed main effect and the learning rate x length class interaction, whose
# bootstrap p-values (0.77 and 0.15 with 12 samples) are not at the floor 1 / 13, so equal p-values
# mean equal counts of replicate statistics above the observed one
CASES = [("seed", None), ("learning_rate", "src_length_class")]


@pytest.mark.parametrize("param, prop", CASES)
def test_assess_meta_parameter_p_value_pb_is_me_compare_on_the_same_fits(hyp_small, param, prop):
    a = me.assess_meta_parameter(hyp_small, "ter", "sentence_id", param, prop=prop, n_resamples=12,
                                 random_state=2, progress=False)
    ref = me.compare(a.null_fit, a.fit, names=["null", "full"], n_resamples=12, random_state=2, progress=False)
    assert_rel(a.glrt["p_value_pb"], ref.table["p_value_pb"], rtol=1e-12)
    assert 1 / 13 < a.glrt["p_value_pb"].iloc[1] < 1
    expected_df = 2 if prop is None else 4          # 3 levels (x 3 length classes)
    assert a.glrt["df"].iloc[1] == expected_df


def test_in_process_equals_worker_processes(hyp_small):
    kw = dict(prop="src_length_class", n_resamples=12, random_state=2, progress=False)
    here = me.assess_meta_parameter(hyp_small, "ter", "sentence_id", "learning_rate", **kw)
    there = me.assess_meta_parameter(hyp_small, "ter", "sentence_id", "learning_rate", executor=2, **kw)
    # ML refits on workers against refits here: two optimizer runs
    pd.testing.assert_frame_equal(there.glrt, here.glrt, check_exact=False, rtol=OPTIMIZER_RTOL, atol=0.0)
    assert 1 / 13 < here.glrt["p_value_pb"].iloc[1] < 1
    cs_kw = dict(n_resamples=12, random_state=2, progress=False, average=False)
    a = me.compare_systems(hyp_small, "ter", "seed", "sentence_id", **cs_kw)
    b = me.compare_systems(hyp_small, "ter", "seed", "sentence_id", executor=2, **cs_kw)
    pd.testing.assert_frame_equal(b.glrt, a.glrt, check_exact=False, rtol=OPTIMIZER_RTOL, atol=0.0)
    pd.testing.assert_frame_equal(b.table, a.table, check_exact=False, rtol=OPTIMIZER_RTOL, atol=0.0)
    assert 1 / 13 < a.glrt["p_value_pb"].iloc[1] < 1


def test_without_n_resamples_there_is_no_bootstrap(ter_small):
    cs = me.compare_systems(ter_small, "ter", "system", "sentence_id", average=False)
    assert "p_value_pb" not in cs.glrt.columns and "p_value_pb" not in cs.table.columns
    assert "glrt_n_resamples" not in cs.provenance


def test_bad_n_resamples_and_numeric_property_are_clear_errors(hyp_small, ter_small):
    with pytest.raises(DataError, match="n_resamples"):
        me.compare_systems(ter_small, "ter", "system", "sentence_id", n_resamples=0, average=False)
    with pytest.raises(DataError, match="is numeric: give bins"):
        me.assess_meta_parameter(hyp_small, "ter", "sentence_id", "learning_rate", prop="src_length",
                                 n_resamples=10)


def test_binomial_compare_systems_gets_the_glmm_parametric_bootstrap():
    """family="binomial": the GLRT of two glmer fits; p_value_pb is me.compare's (pbkrtest on
    lme4 GLMMs) on the same fits."""
    rng = np.random.default_rng(1)
    eff = rng.normal(0, 1, 40)
    acc = pd.DataFrame([(f"q{i:02d}", s, r, rng.binomial(1, 1 / (1 + np.exp(-(0.3 + 0.3 * (s == "B") + eff[i])))))
                        for i in range(40) for s in ("A", "B") for r in range(3)],
                       columns=["item", "system", "run", "correct"])
    cs = me.compare_systems(acc, "correct", "system", "item", family="binomial", n_resamples=10, random_state=1,
                            progress=False)
    ref = me.compare(cs.null_fit, cs.fit, names=["null", "full"], n_resamples=10, random_state=1, progress=False)
    assert_rel(cs.glrt["p_value_pb"], ref.table["p_value_pb"], rtol=1e-12)
    assert cs.table["p_value_pb"].iloc[0] == ref.table["p_value_pb"].iloc[1]
    assert 1 / 11 < cs.glrt["p_value_pb"].iloc[1] < 1
