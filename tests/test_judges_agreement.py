"""me.judge_agreement / JudgeCorrected.agreement(): Cohen's kappa against R's psych::cohen.kappa,
weighted kappas against the multinomial delta method and scikit-learn, Krippendorff's alpha
against me.krippendorff_alpha, the bias by system (a self-preferring judge is reported)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from judges_helpers import simulate
from mixedeval.workflows._judges_agree import _alpha_2coders, _alpha_interval, _ordinal_d2, agreement_weights, kappa_fce


def _graded(rng, n=300, systems=("a", "b", "c"), favour="a"):
    rows = []
    for s in systems:
        h = rng.integers(1, 6, n).astype(float)
        j = np.clip(h + rng.choice([-1, 0, 0, 0, 1], n) + (1 if s == favour else 0) * (rng.random(n) < 0.5), 1, 5)
        lab = rng.random(n) < 0.5
        rows.append(pd.DataFrame({"system": s, "item": np.arange(n), "judge_score": j,
                                  "human_score": np.where(lab, h, np.nan)}))
    return pd.concat(rows, ignore_index=True)


def _r_kappa(R, j, h):
    import rpy2.robjects as ro

    R("invisible(NULL)")
    ro.globalenv["kx1"] = ro.FloatVector(j.tolist())
    ro.globalenv["kx2"] = ro.FloatVector(h.tolist())
    out = R("local({ r <- psych::cohen.kappa(cbind(kx1, kx2)); c(r$kappa, r$var.kappa, r$confid[1, 1], "
            "r$confid[1, 3], r$weighted.kappa) })")
    return out


def test_kappa_equals_psych_cohen_kappa(R):
    df = _graded(np.random.default_rng(1))
    res = me.judge_agreement(df, random_state=0, n_resamples=200)
    lab = df[df["human_score"].notna()]
    j, h = lab["judge_score"].to_numpy(), lab["human_score"].to_numpy()
    kappa, var, lo, hi, wkappa = _r_kappa(R, j, h)
    t = res.table.set_index("statistic")
    assert t.loc["cohen_kappa", "estimate"] == pytest.approx(kappa, rel=1e-10)
    assert t.loc["cohen_kappa", "conf_low"] == pytest.approx(lo, rel=1e-10)
    assert t.loc["cohen_kappa", "conf_high"] == pytest.approx(hi, rel=1e-10)
    assert t.loc["weighted_kappa_quadratic", "estimate"] == pytest.approx(wkappa, rel=1e-10)
    cats = np.unique(np.concatenate([j, h]))
    tab = np.zeros((len(cats), len(cats)))
    np.add.at(tab, (np.searchsorted(cats, j), np.searchsorted(cats, h)), 1)
    assert kappa_fce(tab)[1] == pytest.approx(var, rel=1e-10)


def _kap(p, w):
    rs, cs = p.sum(1), p.sum(0)
    po, pc = (w * p).sum(), (w * np.outer(rs, cs)).sum()
    return (po - pc) / (1 - pc)


@pytest.mark.parametrize("kind", ["linear", "quadratic"])
def test_weighted_kappa_variance_is_the_multinomial_delta_method(kind):
    """FCE's variance of a weighted kappa is the delta method on the multinomial cell
    proportions (gradient by finite differences here). psych's var.weighted differs: it weights
    the row means by the row's own margin (``rowSums(w * rs)``), which is why this check is not
    against psych."""
    rng = np.random.default_rng(2)
    tab = rng.integers(1, 30, (4, 4)).astype(float) + np.diag([40, 30, 50, 20])
    w = agreement_weights(4, kind)
    k, var = kappa_fce(tab, w)
    n, p = tab.sum(), tab / tab.sum()
    g = np.zeros_like(p)
    for i in range(4):
        for jj in range(4):
            e = np.zeros_like(p)
            e[i, jj] = 1e-7
            g[i, jj] = (_kap(p + e, w) - _kap(p - e, w)) / 2e-7
    assert k == pytest.approx(_kap(p, w), rel=1e-12)
    assert var == pytest.approx(((p * g ** 2).sum() - (p * g).sum() ** 2) / n, rel=1e-6)


def test_kappas_equal_scikit_learn():
    sk = pytest.importorskip("sklearn.metrics")
    df = _graded(np.random.default_rng(3))
    res = me.judge_agreement(df, random_state=0, n_resamples=100)
    lab = df[df["human_score"].notna()]
    t = res.table.set_index("statistic")["estimate"]
    j, h = lab["judge_score"].to_numpy(), lab["human_score"].to_numpy()
    assert t["cohen_kappa"] == pytest.approx(sk.cohen_kappa_score(j, h), rel=1e-10)
    assert t["weighted_kappa_linear"] == pytest.approx(sk.cohen_kappa_score(j, h, weights="linear"), rel=1e-10)
    assert t["weighted_kappa_quadratic"] == pytest.approx(sk.cohen_kappa_score(j, h, weights="quadratic"), rel=1e-10)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_fast_two_coder_alpha_equals_krippendorff_alpha(level):
    rng = np.random.default_rng(4)
    j = rng.integers(0, 4, 200).astype(float)
    h = np.where(rng.random(200) < 0.7, j, rng.integers(0, 4, 200)).astype(float)
    ref = me.krippendorff_alpha(np.vstack([j, h]), level=level).alpha
    if level == "interval":
        got = _alpha_interval(j, h, np.ones((1, 200)), (j - h) ** 2)[0]
    else:
        tab = np.zeros((4, 4))
        np.add.at(tab, (j.astype(int), h.astype(int)), 1)
        d2 = 1 - np.eye(4) if level == "nominal" else _ordinal_d2((tab + tab.T).sum(axis=1))
        got = _alpha_2coders(tab[None], d2)[0]
    assert got == pytest.approx(ref, rel=1e-10)


def test_a_self_preferring_judge_is_reported():
    df = _graded(np.random.default_rng(5), favour="a")
    res = me.judge_agreement(df, random_state=0, n_resamples=200)
    b = res.bias.set_index("system")
    lab = df[df["human_score"].notna()]
    hand = (lab["judge_score"] - lab["human_score"]).groupby(lab["system"]).mean()
    np.testing.assert_allclose(b.loc[hand.index, "bias"], hand, rtol=1e-12)
    assert b.loc["a", "excess"] > 0 and b.loc["a", "excess_p_adj"] < 0.05
    assert res.bias_test["p_value"].iloc[0] < 1e-6
    assert any(w.kind == "judge_bias_by_system" and "favours ['a']" in w.message for w in res.warnings)
    assert res.scale == "ordinal"
    cm = res.confusion_matrix()
    assert cm.to_numpy().sum() == len(lab)
    fair = me.judge_agreement(_graded(np.random.default_rng(7), favour=None), random_state=0, n_resamples=100)
    assert fair.bias_test["p_value"].iloc[0] > 0.01
    assert not any(w.kind == "judge_bias_by_system" for w in fair.warnings)


def test_continuous_agreement_intervals_and_result_method():
    df = simulate(np.random.default_rng(7), n_items=300, n_labels=100, epochs=2, n_clusters=30)
    res = me.judge_corrected(df, epoch="epoch", cluster="cluster")
    a = res.agreement(random_state=1, n_resamples=300)
    t = a.table.set_index("statistic")
    assert a.scale == "interval" and "cohen_kappa" not in t.index
    lab = df[df["human_score"].notna()]
    assert t.loc["pearson", "estimate"] == pytest.approx(np.corrcoef(lab["judge_score"], lab["human_score"])[0, 1],
                                                         rel=1e-10)
    for s in ("pearson", "spearman", "krippendorff_alpha"):
        assert t.loc[s, "conf_low"] < t.loc[s, "estimate"] < t.loc[s, "conf_high"]
    again = res.agreement(random_state=1, n_resamples=300)
    pd.testing.assert_frame_equal(a.table, again.table)
    # the judge of s0 is biased by +0.3, of s2 by -0.1 (tests/judges_helpers.py)
    b = a.bias.set_index("system")["bias"]
    assert b["s0"] > b["s1"] > b["s2"]
    with pytest.raises(me.DataError, match="scale"):
        res.agreement(scale="nominalish")
