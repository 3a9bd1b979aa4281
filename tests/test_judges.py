"""me.judge_corrected: equal to ppi-python on independent designs (1e-10), hand-derived on the
designs evaluations have (paired items, epochs, clusters, several judges), Rogan-Gladen, the
shared answer (leaderboard, headline, checks) and the DataErrors of bad input."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from judges_helpers import fast_units, simulate, simulate_binary
from mixedeval.workflows import _judges_tables as T

ppi_py = pytest.importorskip("ppi_py")
TOL = 1e-10


def _independent(rng, n_items, n_labels, systems=("a", "b", "c"), bias=(0.2, 0.0, -0.1)):
    rows = []
    for s, b in zip(systems, bias):
        y = rng.normal(0.5, 1, n_items)
        f = 0.8 * y + b + rng.normal(0, 0.6, n_items)
        lab = np.zeros(n_items, bool)
        lab[rng.choice(n_items, n_labels, replace=False)] = True
        rows.append(pd.DataFrame({"system": s, "item": [f"{s}{i}" for i in range(n_items)], "judge_score": f,
                                  "human_score": np.where(lab, y, np.nan)}))
    return pd.concat(rows, ignore_index=True)


def _ppi_inputs(df, s):
    d = df[df["system"] == s]
    lab = d["human_score"].notna()
    return (d.loc[lab, "human_score"].to_numpy(), d.loc[lab, "judge_score"].to_numpy(),
            d.loc[~lab, "judge_score"].to_numpy())


@pytest.mark.parametrize(("n_items", "n_labels", "seed"), [(400, 50, 1), (1000, 200, 2), (600, 500, 3)])
@pytest.mark.parametrize("method", ["ppi++", "ppi"])
def test_means_equal_ppi_python_on_independent_items(n_items, n_labels, seed, method):
    df = _independent(np.random.default_rng(seed), n_items, n_labels)
    res = me.judge_corrected(df, method=method, level=0.9)
    for _, row in res.table.iterrows():
        Y, Yh, Yu = _ppi_inputs(df, row["system"])
        lam = None if method == "ppi++" else 1.0
        est = float(np.squeeze(ppi_py.ppi_mean_pointestimate(Y, Yh, Yu, lam=lam)))
        lo, hi = (float(np.squeeze(v)) for v in ppi_py.ppi_mean_ci(Y, Yh, Yu, alpha=0.1, lam=lam))
        assert row["estimate"] == pytest.approx(est, rel=TOL, abs=TOL)
        assert row["conf_low"] == pytest.approx(lo, rel=TOL, abs=TOL)
        assert row["conf_high"] == pytest.approx(hi, rel=TOL, abs=TOL)
        assert row["df"] == np.inf
        clo, chi = (float(np.squeeze(v)) for v in ppi_py.classical_mean_ci(Y, alpha=0.1))
        assert (row["classical_conf_low"], row["classical_conf_high"]) == pytest.approx((clo, chi), rel=TOL)
        if method == "ppi++":  # the tuned weight is ppi-python's: the estimate with it fixed is the same
            again = float(np.squeeze(ppi_py.ppi_mean_pointestimate(Y, Yh, Yu, lam=row["lam"])))
            assert again == pytest.approx(est, rel=TOL)
            assert 0 <= row["lam"] <= 1


def test_ppi_plus_plus_is_never_wider_than_human_only_here_and_reports_effective_labels():
    df = _independent(np.random.default_rng(5), 800, 100)
    t = me.judge_corrected(df).table
    assert (t["std_error"] <= t["classical_std_error"] * (1 + 1e-12)).all()
    assert np.allclose(t["n_eff_labels"], t["n_labels"] * (t["classical_std_error"] / t["std_error"]) ** 2)
    assert (t["n_eff_labels"] > t["n_labels"]).all()


def test_paired_difference_with_matched_labels_is_ppi_of_the_differences():
    """Labels on the same items for both systems: PPI (lambda = 1) of a - b is ppi-python's PPI of
    the per-item differences; the variance is the same times the CR1 factor G/(G-1) (G the
    labelled items), with Satterthwaite's df."""
    rng = np.random.default_rng(7)
    df = simulate(rng, mu=(0.6, 0.4), bias=(0.3, -0.1), n_items=300, n_labels=80, same_items=True)
    res = me.judge_corrected(df, method="ppi")
    row = res.pairwise.iloc[0]
    wide = df.pivot_table(index="item", columns="system", values=["judge_score", "human_score"])
    dy = (wide["human_score"]["s0"] - wide["human_score"]["s1"]).reindex(wide.index)
    df_ = wide["judge_score"]["s0"] - wide["judge_score"]["s1"]
    lab = dy.notna().to_numpy()
    Y, Yh, Yu = dy.to_numpy()[lab], df_.to_numpy()[lab], df_.to_numpy()[~lab]
    est = float(np.squeeze(ppi_py.ppi_mean_pointestimate(Y, Yh, Yu, lam=1)))
    lo, hi = (float(np.squeeze(v)) for v in ppi_py.ppi_mean_ci(Y, Yh, Yu, alpha=0.05, lam=1))
    se_ppi = (hi - lo) / (2 * 1.959963984540054)
    G = 80  # the labelled items: the clusters holding labels
    assert row["estimate"] == pytest.approx(est, rel=TOL)
    assert row["std_error"] ** 2 * (G - 1) / G == pytest.approx(se_ppi ** 2, rel=1e-9)
    assert 1 <= row["df"] <= G - 1
    assert row["estimate"] == pytest.approx(res.table["estimate"].iloc[0] - res.table["estimate"].iloc[1], rel=TOL)


def _hand_cluster_variance(df, system, lam):
    """PPI variance of one system's mean with clusters, written out with pandas group sums."""
    d = df[df["system"] == system].groupby("item").agg(f=("judge_score", "mean"), y=("human_score", "mean"),
                                                        cluster=("cluster", "first"))
    lab = d["y"].notna()
    n, N = lab.sum(), (~lab).sum()
    r = d["y"] - lam * d["f"]
    psi = pd.Series(0.0, index=d.index)
    psi[~lab] = lam * (d.loc[~lab, "f"] - d.loc[~lab, "f"].mean()) / N
    psi[lab] = (r[lab] - r[lab].mean()) / n
    if 0 < lam < 1:  # PPI++: the tuned weight's own influence, times d estimate / d lambda
        yc, gc = d.loc[lab, "y"] - d.loc[lab, "y"].mean(), d.loc[lab, "f"] - d.loc[lab, "f"].mean()
        C = (yc * gc).mean()
        V = d["f"].var()
        D = (1 + n / N) * V
        if_lam = -C / D ** 2 * (1 + n / N) * ((d["f"] - d["f"].mean()) ** 2 - V) / len(d)
        if_lam[lab] += (yc * gc - C) / n / D
        psi = psi + (d.loc[~lab, "f"].mean() - d.loc[lab, "f"].mean()) * if_lam
    s = psi.groupby(d["cluster"]).sum()
    G = d.loc[lab, "cluster"].nunique()  # clusters holding labels
    est = lam * d.loc[~lab, "f"].mean() + r[lab].mean()
    k = 2 if 0 < lam < 1 else 1  # PPI++'s tuned weight counts as a parameter
    sq = psi ** 2  # Satterthwaite's df: class-averaged squared influence (labelled / not) per cluster
    a = sq.groupby(lab).transform("mean").groupby(d["cluster"]).sum()
    eff = a.sum() ** 2 / (a ** 2).sum()
    return est, (s ** 2).sum() * G / (G - k), min(G, eff) - k


def test_clustered_epochs_equal_a_hand_computation():
    rng = np.random.default_rng(11)
    df = simulate(rng, n_items=200, n_labels=60, epochs=3, n_clusters=25)
    res = me.judge_corrected(df, epoch="epoch", cluster="cluster")
    for _, row in res.table.iterrows():
        est, var, dfree = _hand_cluster_variance(df, row["system"], row["lam"])
        assert row["estimate"] == pytest.approx(est, rel=TOL)
        assert row["std_error"] ** 2 == pytest.approx(var, rel=1e-9)
        assert row["df"] == pytest.approx(dfree, rel=1e-9)
    # PPI++'s weight is ppi-python's moment rule on the units (epochs averaged)
    d = df[df["system"] == "s0"].groupby("item").agg(f=("judge_score", "mean"), y=("human_score", "mean"))
    lab = d["y"].notna()
    lam = np.mean((d.y[lab] - d.y[lab].mean()) * (d.f[lab] - d.f[lab].mean())) / (
        (1 + lab.sum() / (~lab).sum()) * np.var(d["f"], ddof=1))
    assert res.table["lam"].iloc[0] == pytest.approx(np.clip(lam, 0, 1), rel=1e-10)
    assert res.provenance["epochs"].startswith("averaged")


def test_epochs_are_averaged_within_the_item():
    rng = np.random.default_rng(3)
    df = simulate(rng, n_items=150, n_labels=50, epochs=2)
    avg = df.groupby(["system", "item"], as_index=False).agg(judge_score=("judge_score", "mean"),
                                                             human_score=("human_score", "mean"))
    a = me.judge_corrected(df, epoch="epoch").table
    b = me.judge_corrected(avg).table
    np.testing.assert_allclose(a["estimate"], b["estimate"], rtol=TOL)
    np.testing.assert_allclose(a["std_error"], b["std_error"], rtol=1e-9)


def test_partly_labelled_epochs_use_the_judge_on_the_same_epochs():
    df = pd.DataFrame({"system": ["a"] * 8 + ["b"] * 8, "item": [1, 1, 2, 2, 3, 3, 4, 4] * 2,
                       "epoch": [0, 1] * 8, "judge_score": [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1],
                       "human_score": [1, np.nan, 1, 0, np.nan, np.nan, 0, np.nan,
                                       1, 1, np.nan, 0, np.nan, np.nan, 1, 1]})
    row = me.judge_corrected(df, epoch="epoch", method="ppi").table.set_index("system").loc["a"]
    # a: labelled items 1 (epoch 0: y 1, judge 1), 2 (y .5, judge 1), 4 (epoch 0: y 0, judge 1); unlabelled item 3 (judge 0)
    expected = 0.0 + np.mean([1 - 1, 0.5 - 1, 0 - 1])
    assert row["estimate"] == pytest.approx(expected, abs=TOL)


def test_fast_units_match_mixedevals_reduction():
    rng = np.random.default_rng(4)
    df = simulate(rng, n_items=120, n_labels=40, epochs=2, n_clusters=15)
    u, systems = fast_units(df)
    tab, _ = T.system_rows(u, systems, "ppi++", 0.95)
    res = me.judge_corrected(df, epoch="epoch", cluster="cluster")
    np.testing.assert_allclose(tab["estimate"], res.table["estimate"], rtol=TOL)
    np.testing.assert_allclose(tab["std_error"], res.table["std_error"], rtol=1e-9)


def test_several_judges_get_one_weight_each_and_help():
    rng = np.random.default_rng(8)
    df = simulate(rng, n_items=400, n_labels=80)
    other = df.copy()
    other["judge_score"] = df["human_score"].fillna(0) * 0 + df["judge_score"] + rng.normal(0, 1.0, len(df))
    both = pd.concat([df.assign(judge="j1"), other.assign(judge="j2")], ignore_index=True)
    one = me.judge_corrected(df)
    two = me.judge_corrected(both, judge="judge")
    assert set(two.weights["judge"]) == {"j1", "j2"}
    assert two.table["lam"].isna().all()
    assert len(two.weights) == 2 * 3
    # the weights minimize the variance: the second, noisier judge cannot make it worse (up to O(1/n))
    assert (two.table["std_error"] <= one.table["std_error"] * 1.02).all()


# ------------------------------------------------------------------------------ Rogan-Gladen
def test_rogan_gladen_point_estimate_and_perfect_judge():
    rng = np.random.default_rng(9)
    df = simulate_binary(rng)
    res = me.judge_corrected(df, method="rogan-gladen")
    for _, row in res.table.iterrows():
        d = df[df["system"] == row["system"]]
        lab = d[d["human_score"].notna()]
        se = lab.loc[lab["human_score"] == 1, "judge_score"].mean()
        sp = 1 - lab.loc[lab["human_score"] == 0, "judge_score"].mean()
        p = d["judge_score"].mean()
        assert row["estimate"] == pytest.approx((p + sp - 1) / (se + sp - 1), rel=TOL)
        assert (row["sensitivity"], row["specificity"]) == pytest.approx((se, sp), rel=TOL)
    perfect = df.assign(judge_score=np.where(df["human_score"].notna(), df["human_score"], df["judge_score"]))
    perfect = perfect.assign(cluster=np.arange(len(perfect)))
    row = me.judge_corrected(perfect, method="rogan-gladen").table.iloc[0]
    p = perfect.loc[perfect["system"] == row["system"], "judge_score"].mean()
    assert row["estimate"] == pytest.approx(p, rel=TOL)  # se = sp = 1
    assert row["std_error"] == pytest.approx(np.sqrt(p * (1 - p) / 400), rel=1e-9)


def test_rogan_gladen_delta_method_equals_a_numerical_gradient():
    """The influence-function variance equals grad' Sigma grad with Sigma the covariance of
    (p, se, sp) computed from their own per-item influence, gradient by finite differences."""
    rng = np.random.default_rng(10)
    df = simulate_binary(rng, p=(0.6,), sens=(0.85,), spec=(0.8,), n_items=500, n_labels=200)
    df = df.assign(cluster=df["item"])
    row = me.judge_corrected(df, method="rogan-gladen").table.iloc[0]
    j, h = df["judge_score"].to_numpy(), df["human_score"].to_numpy()
    lab = ~np.isnan(h)
    N = len(j)
    p, se, sp = j.mean(), j[lab & (h == 1)].mean(), 1 - j[lab & (h == 0)].mean()
    n1, n0 = (lab & (h == 1)).sum(), (lab & (h == 0)).sum()
    infl = np.stack([(j - p) / N, np.where(lab & (h == 1), (j - se) / n1, 0), np.where(lab & (h == 0), (1 - j - sp) / n0, 0)])
    sigma = infl @ infl.T
    def theta(v): return (v[0] + v[2] - 1) / (v[1] + v[2] - 1)
    v0 = np.array([p, se, sp])
    grad = np.array([(theta(v0 + e * 1e-6) - theta(v0 - e * 1e-6)) / 2e-6 for e in np.eye(3)])
    assert row["std_error"] ** 2 == pytest.approx(grad @ sigma @ grad, rel=1e-6)


# ------------------------------------------------------------------------------ the answer
def test_leaderboard_headline_checks_and_dict():
    rng = np.random.default_rng(12)
    df = simulate(rng, mu=(1.0, 0.4, 0.3), bias=(-0.6, 0.3, 0.3), n_items=400, n_labels=150)
    res = me.judge_corrected(df, random_state=1)
    assert list(res.leaderboard["name"])[0] == "s0"
    assert res.headline.better == "s0" and res.headline.other == "s1"
    assert res.p_value == res.headline.p_value < 0.05
    assert "s0 − s1" in res.headline_text() and "PPI++" in res.headline_text()
    assert list(res.checks["check"]) == ["human labels only (classical)",
                                         "judge scores only (uncorrected for the judge's bias)"]
    assert res.checks["verdict"].iloc[1].startswith("differs")  # the biased judge ranks s0 last
    d = res.to_dict()
    assert list(d)[0] == "answer" and "_prepared" not in d
    assert d["answer"]["headline"]["better"] == "s0" and d["answer"]["leaderboard"]
    # the pairwise table best first, signed in the better direction; the answer's differences agree
    pw = res.pairwise
    assert list(zip(pw["system_a"], pw["system_b"]))[0] == ("s0", "s1") and pw["estimate"].iloc[0] > 0
    assert pw["estimate"].iloc[0] == pytest.approx(res.headline.estimate, rel=1e-12)
    np.testing.assert_allclose(res.differences["delta"], pw["estimate"], rtol=1e-12)
    np.testing.assert_allclose(res.differences["conf_low"], pw["conf_low"], rtol=1e-12)
    ref = me.judge_corrected(df, reference="s2")
    assert ref.headline.other == "s2"
    lower = me.judge_corrected(df, higher_is_better=False)
    assert list(lower.leaderboard["name"])[0] == "s2"
    lp = lower.pairwise  # lower is better: system_a scores lower, estimate = b - a > 0 at the top
    assert (lp["system_a"].iloc[0], lp["system_b"].iloc[0]) == (lower.headline.better, lower.headline.other)
    assert lp["estimate"].iloc[0] == pytest.approx(lower.headline.estimate, rel=1e-12)
    assert lp["conf_low"].iloc[0] == pytest.approx(lower.headline.conf_low, rel=1e-12)
    assert "lower" in lower.headline_text()
    assert "Judge-corrected" in repr(res) and "<table" in res._repr_html_()


def test_the_callers_table_is_not_modified():
    df = simulate(np.random.default_rng(0), n_items=60, n_labels=20)
    before = df.copy()
    me.judge_corrected(df)
    pd.testing.assert_frame_equal(df, before)


# ------------------------------------------------------------------------------ bad input
@pytest.fixture
def small():
    return simulate(np.random.default_rng(1), n_items=50, n_labels=10)


def test_bad_input_is_a_data_error(small):
    with pytest.raises(me.DataError, match="method must be one of"):
        me.judge_corrected(small, method="magic")
    with pytest.raises(me.DataError, match="epoch="):
        me.judge_corrected(pd.concat([small, small]))
    with pytest.raises(me.DataError, match="not found"):
        me.judge_corrected(small, judge_score="nope")
    only_one = small.assign(human_score=np.where(small["system"] == "s0", small["human_score"], np.nan))
    with pytest.raises(me.DataError, match="fewer than two items with a human_score"):
        me.judge_corrected(only_one)
    missing = small.copy()
    missing.loc[3, "judge_score"] = np.nan
    with pytest.raises(me.DataError, match="non-finite"):
        me.judge_corrected(missing)
    with pytest.raises(me.DataError, match="varies within an item"):
        me.judge_corrected(small.assign(cluster=np.arange(len(small))), cluster="cluster")
    with pytest.raises(me.DataError, match="0/1 scores"):
        me.judge_corrected(small, method="rogan-gladen")
    with pytest.raises(me.DataError, match="level"):
        me.judge_corrected(small, level=95)
    two = pd.concat([small.assign(judge="x"), small.assign(judge="y").iloc[5:]])
    with pytest.raises(me.DataError, match="lack some judge's score"):
        me.judge_corrected(two, judge="judge")
    warn = me.judge_corrected(small)
    assert any(w.kind == "few_labels" for w in warn.warnings)


def test_one_system_has_no_headline_and_few_clusters_warn():
    df = simulate(np.random.default_rng(13), mu=(0.5,), bias=(0.2,), n_items=200, n_labels=40, n_clusters=30)
    res = me.judge_corrected(df, cluster="cluster")
    assert res.headline is None and np.isnan(res.p_value) and len(res.pairwise) == 0
    assert len(res.leaderboard) == 1 and res.headline_text() == "one system: no comparison"
    few = df.assign(human_score=np.where(df["cluster"] < 2, df["human_score"], np.nan))
    few = few.assign(human_score=np.where((df["cluster"] < 2) & df["human_score"].isna() & (df["item"] % 3 == 0),
                                          df["judge_score"], few["human_score"]))
    assert any(w.kind == "few_clusters" for w in me.judge_corrected(few, cluster="cluster").warnings)
