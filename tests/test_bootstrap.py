"""mixedeval.bootstrap: closed forms, scipy.stats.bootstrap, exact enumeration, an independent
per-replicate reference on the same draws, pairing, determinism, coverage, bad input."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

import mixedeval as me
from mixedeval.errors import DataError
from mixedeval._random import seed_sequence
from mixedeval.resampling import _draws as dr
from mixedeval.resampling import _stats as stats_


def table(rng, S=3, K=1, G=1, n=40, sd=1.0, shift=None, run_col=True, group_col=True):
    """Long score table: system x run x group x item, normal scores."""
    s, k, g, i = np.indices((S, K, G, n))
    mu = np.arange(S) * 0.1 if shift is None else np.asarray(shift)
    y = mu[s] + rng.normal(0, sd, s.shape)
    df = pd.DataFrame({"system": [f"s{v}" for v in s.ravel()], "item": i.ravel(), "score": y.ravel()})
    if run_col:
        df["run"] = k.ravel()
    if group_col:
        df["lang"] = np.array(["de", "fr", "ja", "sw", "yo", "zu"])[g.ravel()]
    return df


# ---------------------------------------------------------------------------------------------
# closed forms and scipy
# ---------------------------------------------------------------------------------------------

def test_se_of_a_mean_closed_form():
    rng = np.random.default_rng(1)
    df = table(rng, S=1, n=60, run_col=False, group_col=False)
    res = me.bootstrap(df, "score", "system", "item", n_resamples=20_000, random_state=2)
    x = df["score"].to_numpy()
    se_plugin = x.std(ddof=0) / np.sqrt(x.size)  # exact bootstrap SE of a mean
    sm = res.summary()
    assert sm.loc[0, "estimate"] == pytest.approx(x.mean(), rel=1e-12)
    assert sm.loc[0, "std_error"] == pytest.approx(se_plugin, rel=0.03)
    assert sm.loc[0, "boot_mean"] == pytest.approx(x.mean(), abs=4 * se_plugin / np.sqrt(20_000))


def test_sd_of_difference_of_independent_normals():
    rng = np.random.default_rng(3)
    n = 80
    df = pd.DataFrame({"system": ["a"] * n + ["b"] * n, "item": np.tile(np.arange(n), 2),
                       "score": np.concatenate([rng.normal(0, 1, n), rng.normal(0, 2, n)])})
    res = me.bootstrap(df, "score", "system", "item", n_resamples=20_000, random_state=4)
    a, b = df.score[:n].to_numpy(), df.score[n:].to_numpy()
    d = a - b  # the paired bootstrap SE of a mean difference is the plug-in SD of d / sqrt(n)
    pw = res.pairwise()  # best first: the better system is system_a, delta its advantage (> 0)
    sign = 1.0 if pw.loc[0, "system_a"] == "a" else -1.0
    assert pw.loc[0, "delta"] == pytest.approx(sign * (a.mean() - b.mean()), rel=1e-12) and pw.loc[0, "delta"] > 0
    assert pw.loc[0, "std_error"] == pytest.approx(d.std(ddof=0) / np.sqrt(n), rel=0.03)
    # independent normals: Var(a - b) = 1 + 4, so the SE is near sqrt(5 / n)
    assert pw.loc[0, "std_error"] == pytest.approx(np.sqrt(5 / n), rel=0.2)
    assert pw.loc[0, "snr"] == pytest.approx(pw.loc[0, "delta"] / pw.loc[0, "std_error"], rel=1e-12)


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_mean_intervals_match_scipy_bootstrap(method):
    rng = np.random.default_rng(5)
    x = rng.exponential(1.0, 40)  # skewed, so BCa differs from percentile
    df = pd.DataFrame({"system": "a", "item": np.arange(40), "score": x})
    ours = me.bootstrap(df, "score", "system", "item", n_resamples=40_000, ci=method, random_state=6).summary()
    ref = st.bootstrap((x,), np.mean, n_resamples=40_000, method=method, random_state=7, vectorized=True)
    se = ref.standard_error
    assert ours.loc[0, "std_error"] == pytest.approx(se, rel=0.03)
    assert ours.loc[0, "conf_low"] == pytest.approx(ref.confidence_interval.low, abs=0.1 * se)
    assert ours.loc[0, "conf_high"] == pytest.approx(ref.confidence_interval.high, abs=0.1 * se)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_corpus_f1_matches_scipy_paired_bootstrap(method):
    rng = np.random.default_rng(8)
    n = 60
    tp, fp, fn = rng.poisson(2.0, n), rng.poisson(1.0, n), rng.poisson(1.5, n)
    df = pd.DataFrame({"system": "a", "item": np.arange(n), "tp": tp, "fp": fp, "fn": fn})
    ours = me.bootstrap(df, ["tp", "fp", "fn"], "system", "item", statistic="f1", n_resamples=40_000,
                        ci=method, random_state=9).summary()
    f1 = 2 * tp.sum() / (2 * tp.sum() + fp.sum() + fn.sum())
    assert ours.loc[0, "estimate"] == pytest.approx(f1, rel=1e-12)

    def f1_stat(a, b, c, axis=-1):
        ta, fb, nc = a.sum(axis=axis), b.sum(axis=axis), c.sum(axis=axis)
        return 2 * ta / (2 * ta + fb + nc)

    ref = st.bootstrap((tp, fp, fn), f1_stat, paired=True, vectorized=True, n_resamples=40_000,
                       method=method, random_state=10)
    se = ref.standard_error
    assert ours.loc[0, "std_error"] == pytest.approx(se, rel=0.03)
    assert ours.loc[0, "conf_low"] == pytest.approx(ref.confidence_interval.low, abs=0.1 * se)
    assert ours.loc[0, "conf_high"] == pytest.approx(ref.confidence_interval.high, abs=0.1 * se)


def test_bca_acceleration_equals_closed_form_for_a_mean():
    """For the mean, the jackknife acceleration is sum(d^3) / (6 sum(d^2)^1.5), d = x - mean
    (Efron & Tibshirani 1993, eq. 14.15)."""
    rng = np.random.default_rng(11)
    x = rng.gamma(2.0, size=25)
    df = pd.DataFrame({"system": "a", "item": np.arange(25), "score": x})
    res = me.bootstrap(df, "score", "system", "item", n_resamples=100, ci="bca", random_state=0)
    d = x - x.mean()
    assert stats_.acceleration(res._jackknife)[0] == pytest.approx((d**3).sum() / (6 * (d**2).sum() ** 1.5), rel=1e-10)


def test_se_interval_is_estimate_plus_minus_z_se():
    rng = np.random.default_rng(12)
    df = table(rng, S=2, n=30, run_col=False, group_col=False)
    sm = me.bootstrap(df, "score", "system", "item", n_resamples=500, ci="se", random_state=1).summary()
    z = st.norm.ppf(0.975)
    np.testing.assert_allclose(sm.conf_low, sm.estimate - z * sm.std_error, rtol=1e-12)
    np.testing.assert_allclose(sm.conf_high, sm.estimate + z * sm.std_error, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# exact enumeration and the structure of the hierarchical draws
# ---------------------------------------------------------------------------------------------

def test_tiny_input_matches_exact_bootstrap_distribution():
    x = np.array([0.0, 1.0, 5.0])
    df = pd.DataFrame({"system": "a", "item": range(3), "score": x})
    dist = me.bootstrap(df, "score", "system", "item", n_resamples=60_000, random_state=3).distribution[0]
    support = {}
    for idx in itertools.product(range(3), repeat=3):  # all 27 equally likely resamples
        m = round(x[list(idx)].mean(), 10)
        support[m] = support.get(m, 0) + 1 / 27
    vals, counts = np.unique(np.round(dist, 10), return_counts=True)
    assert set(vals) == set(support)
    for v, c in zip(vals, counts):
        assert c / dist.size == pytest.approx(support[v], abs=4 * np.sqrt(support[v] / dist.size))


def test_run_only_resampling_matches_exact_enumeration():
    rng = np.random.default_rng(13)
    df = table(rng, S=1, K=3, G=2, n=5)
    res = me.bootstrap(df, "score", "system", "item", run="run", group="lang", resample="runs",
                       n_resamples=30_000, random_state=1)
    per_seed = df.groupby("run").score.mean().to_numpy()  # balanced: mean over groups and items
    exact = np.array([per_seed[list(i)].mean() for i in itertools.product(range(3), repeat=3)])
    assert res.estimate[0] == pytest.approx(per_seed.mean(), rel=1e-12)
    assert res.summary().std_error[0] == pytest.approx(exact.std(), rel=0.03)
    assert set(np.round(res.distribution[0], 9)) <= set(np.round(exact, 9))


def test_group_resampling_closed_form_and_subsampling_support():
    rng = np.random.default_rng(14)
    df = table(rng, S=1, G=5, n=20)
    gs = df.groupby("lang").score.mean().to_numpy()
    res = me.bootstrap(df, "score", "system", "item", group="lang", resample="groups", n_resamples=30_000,
                       random_state=2)
    assert res.summary().std_error[0] == pytest.approx(gs.std(ddof=0) / np.sqrt(5), rel=0.03)
    sub = me.bootstrap(df, "score", "system", "item", group="lang", resample="groups", n_groups=3,
                       n_resamples=20_000, random_state=3)
    assert sub.resample == ("groups",)
    assert me.bootstrap(df, "score", "system", "item", group="lang", n_groups=3, n_resamples=64).resample == \
        ("groups", "items")  # the default adds group subsampling to the item draws
    subsets = {round(gs[list(c)].mean(), 9) for c in itertools.combinations(range(5), 3)}
    vals, counts = np.unique(np.round(sub.distribution[0], 9), return_counts=True)
    assert set(vals) == subsets  # every draw is one of the C(5, 3) subsets, without replacement
    np.testing.assert_allclose(counts / counts.sum(), 0.1, atol=0.012)


def test_stratified_item_resampling_closed_form():
    rng = np.random.default_rng(15)
    df = table(rng, S=1, G=3, n=25)
    df.loc[df.lang == "fr", "score"] *= 3  # unequal spread per group
    res = me.bootstrap(df, "score", "system", "item", group="lang", n_resamples=30_000, random_state=4)
    var = sum(g.score.var(ddof=0) / len(g) for _, g in df.groupby("lang")) / 9  # mean of 3 group means
    assert res.summary().std_error[0] == pytest.approx(np.sqrt(var), rel=0.03)


def _reference_replicates(df, ss, B, S, K, G, n, stat_fn, agg_fn):
    """Per-replicate reference computed directly from the drawn indices (same random streams
    and draw order as the engine: groups, runs, then per group and slot the items)."""
    X = {(s, k, g): df[(df.system == f"s{s}") & (df.run == k) & (df.lang == ["de", "fr", "ja"][g])]
         .sort_values("item")[["tp", "fp", "fn"]].to_numpy(float) for s in range(S) for k in range(K) for g in range(G)}
    out = np.empty((S, B))
    for blk, r in dr.block_sizes(0, B):
        rng = dr.block_generator(ss, blk)
        gidx = rng.integers(0, G, size=(dr.BLOCK, G))  # whole blocks are drawn, the tail unused
        seeds = dr.draw_indices(rng, K, dr.BLOCK)
        items = {}
        for g in range(G):
            for j in range(G):
                reps = np.flatnonzero(gidx[:, j] == g)
                if reps.size:
                    for rep, row in zip(reps, dr.draw_indices(rng, n, reps.size)):
                        items[(rep, j)] = row
        for rep in range(r):
            for s in range(S):
                slot_scores = [np.mean([stat_fn(X[(s, k, gidx[rep, j])][items[(rep, j)]].sum(axis=0))
                                        for k in seeds[rep]]) for j in range(G)]
                out[s, blk * dr.BLOCK + rep] = agg_fn(slot_scores)
    return out


@pytest.mark.parametrize("aggregator,agg_fn", [("mean", np.mean), ("median", np.median),
                                              ("geometric_mean", st.gmean)])
def test_multistage_draws_equal_a_per_replicate_reference(aggregator, agg_fn):
    rng = np.random.default_rng(16)
    S, K, G, n, B = 2, 3, 3, 7, 130
    s, k, g, i = np.indices((S, K, G, n))
    df = pd.DataFrame({"system": [f"s{v}" for v in s.ravel()], "run": k.ravel(),
                       "lang": np.array(["de", "fr", "ja"])[g.ravel()], "item": i.ravel(),
                       "tp": rng.poisson(3, s.size) + 1, "fp": rng.poisson(1, s.size), "fn": rng.poisson(2, s.size)})
    res = me.bootstrap(df, ["tp", "fp", "fn"], "system", "item", run="run", group="lang",
                       resample=["groups", "items", "runs"], statistic="f1", aggregator=aggregator,
                       n_resamples=B, random_state=77)
    ref = _reference_replicates(df, seed_sequence(77), B, S, K, G, n,
                                lambda t: 2 * t[0] / (2 * t[0] + t[1] + t[2]), agg_fn)
    np.testing.assert_allclose(res.distribution, ref, rtol=1e-12)


def test_corpus_metric_is_recomputed_from_sums_per_run_and_group():
    rng = np.random.default_rng(17)
    S, K, G, n = 2, 2, 2, 10
    s, k, g, i = np.indices((S, K, G, n))
    df = pd.DataFrame({"system": s.ravel(), "run": k.ravel(), "lang": g.ravel(), "item": i.ravel(),
                       "tp": rng.poisson(2, s.size), "fp": rng.poisson(1, s.size), "fn": rng.poisson(1, s.size)})
    res = me.bootstrap(df, ["tp", "fp", "fn"], "system", "item", run="run", group="lang", statistic="f1",
                       n_resamples=64, random_state=0)
    sums = df.groupby(["system", "lang", "run"])[["tp", "fp", "fn"]].sum()
    f1 = 2 * sums.tp / (2 * sums.tp + sums.fp + sums.fn)
    expected = f1.groupby(["system", "lang"]).mean().groupby("system").mean().to_numpy()
    np.testing.assert_allclose(res.estimate, expected, rtol=1e-12)
    # a user function of the summed statistics gives the same numbers
    custom = me.bootstrap(df, ["tp", "fp", "fn"], "system", "item", run="run", group="lang",
                          statistic=lambda tp, fp, fn: 2 * tp / (2 * tp + fp + fn), n_resamples=64, random_state=0)
    np.testing.assert_allclose(custom.distribution, res.distribution, rtol=1e-12)


def test_float32_precision_is_close_to_float64():
    rng = np.random.default_rng(18)
    df = table(rng, S=2, K=3, G=2, n=300)
    df["score"] += 50.0  # large offset: centring keeps single precision accurate
    a = me.bootstrap(df, "score", "system", "item", run="run", group="lang", n_resamples=256, random_state=1)
    b = me.bootstrap(df, "score", "system", "item", run="run", group="lang", n_resamples=256, random_state=1,
                     precision="float32")
    se = a.summary().std_error.to_numpy()
    assert np.max(np.abs(a.distribution - b.distribution) / se[:, None]) < 1e-4


# ---------------------------------------------------------------------------------------------
# pairing, determinism, ranks
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ci", ["percentile", "basic", "bca", "se"])
def test_constant_shift_gives_zero_width_delta_interval(ci):
    rng = np.random.default_rng(19)
    base = table(rng, S=1, K=3, G=2, n=30)
    other = base.assign(system="s1", score=base.score + 0.25)
    df = pd.concat([base, other], ignore_index=True)
    res = me.bootstrap(df, "score", "system", "item", run="run", group="lang", resample=["groups", "items", "runs"],
                       n_resamples=500, ci=ci, random_state=5)
    pw = res.pairwise()  # best first: s1 (0.25 higher) is system_a
    assert (pw.loc[0, "system_a"], pw.loc[0, "system_b"]) == ("s1", "s0")
    assert pw.loc[0, "delta"] == pytest.approx(0.25, rel=1e-12)
    assert pw.loc[0, "std_error"] == pytest.approx(0.0, abs=1e-13)
    assert pw.loc[0, "conf_low"] == pytest.approx(0.25, rel=1e-12)
    assert pw.loc[0, "conf_high"] == pytest.approx(0.25, rel=1e-12)
    assert pw.loc[0, "p_value"] == pytest.approx(1 / 501)
    assert res.p_beats().loc["s1", "s0"] == 1.0
    assert res.summary().std_error[0] > 0.01  # while each system alone varies


def test_same_seed_same_result_for_any_chunk_size_and_row_order():
    rng = np.random.default_rng(20)
    df = table(rng, S=3, K=3, G=3, n=20)
    kw = dict(run="run", group="lang", resample=["groups", "items", "runs"], n_resamples=300, random_state=11)
    a = me.bootstrap(df, "score", "system", "item", **kw)
    for cs in (1, 64, 100, 10_000):
        b = me.bootstrap(df, "score", "system", "item", chunk_size=cs, **kw)
        np.testing.assert_array_equal(a.distribution, b.distribution)
    shuffled = df.sample(frac=1.0, random_state=1)
    np.testing.assert_array_equal(a.distribution, me.bootstrap(shuffled, "score", "system", "item", **kw).distribution)
    longer = me.bootstrap(df, "score", "system", "item", **{**kw, "n_resamples": 700})
    np.testing.assert_array_equal(a.distribution, longer.distribution[:, :300])
    other = me.bootstrap(df, "score", "system", "item", **{**kw, "random_state": 12})
    assert not np.array_equal(a.distribution, other.distribution)
    gen = me.bootstrap(df, "score", "system", "item", **{**kw, "random_state": np.random.default_rng(5)})
    gen2 = me.bootstrap(df, "score", "system", "item", **{**kw, "random_state": np.random.default_rng(5)})
    np.testing.assert_array_equal(gen.distribution, gen2.distribution)


def test_tiny_memory_budget_splits_the_products_and_stays_correct(monkeypatch):
    rng = np.random.default_rng(30)
    df = table(rng, S=2, K=2, G=2, n=40)
    monkeypatch.setattr(dr, "CHUNK_BYTES", 12 * 40 * 3)  # count matrices of 3 replicates at most
    kw = dict(run="run", group="lang", resample=["groups", "items"], n_resamples=20_000, random_state=3)
    a = me.bootstrap(df, "score", "system", "item", **kw)
    b = me.bootstrap(df, "score", "system", "item", chunk_size=64, **kw)
    np.testing.assert_array_equal(a.distribution, b.distribution)
    # exact two-stage bootstrap variance of a mean of 2 group means (groups drawn with replacement,
    # then items within each drawn group): Var = E[var_items] / G + Var_groups / G, plug-in moments
    gm = df.groupby(["system", "lang", "item"]).score.mean().reset_index()  # fixed runs: mean over runs
    for s, sub in gm.groupby("system"):
        means = sub.groupby("lang").score.mean()
        within = sub.groupby("lang").score.var(ddof=0) / 40
        var = (within.mean() + means.var(ddof=0)) / 2
        got = a.summary().set_index("system").loc[s, "std_error"]
        assert got == pytest.approx(np.sqrt(var), rel=0.03)


def test_pairwise_p_value_equals_paired_bootstrap_test_on_the_same_draws():
    rng = np.random.default_rng(21)
    df = table(rng, S=2, n=50, shift=[0.0, 0.3], run_col=False, group_col=False)
    res = me.bootstrap(df, "score", "system", "item", n_resamples=3000, random_state=8)
    x, y = df.score[df.system == "s0"].to_numpy(), df.score[df.system == "s1"].to_numpy()
    t = me.paired_bootstrap_test(x, y, n_resamples=3000, random_state=8)
    pw = res.pairwise()  # best first: s1 - s0, the test's x - y negated
    assert (pw.loc[0, "system_a"], pw.loc[0, "system_b"]) == ("s1", "s0")
    assert pw.loc[0, "p_value"] == pytest.approx(t.p_value, rel=1e-12)
    lo, hi = t.confidence_interval
    assert (pw.loc[0, "conf_low"], pw.loc[0, "conf_high"]) == pytest.approx((-hi, -lo), rel=1e-12)


def test_pairwise_adjustment_and_reference():
    rng = np.random.default_rng(22)
    df = table(rng, S=4, n=30, run_col=False, group_col=False)
    res = me.bootstrap(df, "score", "system", "item", n_resamples=400, random_state=1)
    pw = res.pairwise(adjust="BH")
    assert list(pw.columns) == ["system_a", "system_b", "delta", "std_error", "conf_low", "conf_high",
                                "p_value", "p_adj", "snr"]
    assert len(pw) == 6 and pw.attrs["adjust"] == "BH"
    np.testing.assert_allclose(pw.p_adj, me.adjust_pvalues(pw.p_value, "BH"))
    ref = res.pairwise(reference="s0")  # every pair with s0, best first, delta >= 0
    assert len(ref) == 3 and all("s0" in (a, b) for a, b in zip(ref.system_a, ref.system_b))
    est = dict(zip(res.systems, res.estimate))
    np.testing.assert_allclose(ref.delta, [est[a] - est[b] for a, b in zip(ref.system_a, ref.system_b)])
    assert (ref.delta >= 0).all()
    order = list(res.leaderboard["name"])
    assert [order.index(a) < order.index(b) for a, b in zip(ref.system_a, ref.system_b)] == [True] * 3


def test_ranks_and_p_beats():
    rng = np.random.default_rng(23)
    df = table(rng, S=3, n=40, shift=[0.0, 0.05, 1.0], run_col=False, group_col=False)
    res = me.bootstrap(df, "score", "system", "item", n_resamples=1000, random_state=2)
    rk = res.ranks().set_index("system").loc[["s0", "s1", "s2"]].reset_index()  # (ranks() is best first)
    p = rk[["p_rank_1", "p_rank_2", "p_rank_3"]].to_numpy()
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(p.sum(axis=0), 1.0)  # no ties with continuous scores
    np.testing.assert_allclose(rk.expected_rank, p @ [1, 2, 3])
    assert rk.loc[2, "p_rank_1"] == 1.0 and rk.loc[2, "rank_conf_high"] == 1
    pb = res.p_beats()
    np.testing.assert_allclose(pb.to_numpy() + pb.to_numpy().T, np.where(np.eye(3) == 1, np.nan, 1.0))
    d = res.distribution
    assert pb.loc["s1", "s0"] == pytest.approx(np.mean(d[1] > d[0]))
    low = res.ranks(higher_is_better=False).set_index("system").loc[["s0", "s1", "s2"]]
    np.testing.assert_allclose(low.p_rank_3, rk.p_rank_1)


def test_result_printing_and_dict():
    rng = np.random.default_rng(24)
    df = table(rng, S=2, n=20, run_col=False, group_col=False)
    res = me.bootstrap(df, "score", "system", "item", n_resamples=100, random_state=0)
    assert list(res.summary().columns) == ["system", "estimate", "boot_mean", "std_error", "conf_low", "conf_high"]
    text = repr(res)
    assert "summary" in text and "pairwise" in text and "s1" in text
    assert "<table" in res._repr_html_()
    d = res.to_dict()
    assert d["summary"][0]["system"] == "s0" and "distribution" not in d
    assert res.to_frame().equals(res.summary()) and res.table.equals(res.summary())
    assert res.distribution.shape == (2, 100) and not res.distribution.flags.writeable


def test_other_table_types_and_category_order():
    rng = np.random.default_rng(31)
    df = table(rng, S=3, n=15, run_col=False, group_col=False)
    ref = me.bootstrap(df, "score", "system", "item", n_resamples=128, random_state=1)
    import polars as pl  # a test dependency (pyproject test extra): missing polars is a failure
    res = me.bootstrap(pl.from_pandas(df), "score", "system", "item", n_resamples=128, random_state=1)
    np.testing.assert_array_equal(res.distribution, ref.distribution)
    cat = df.assign(system=pd.Categorical(df.system, categories=["s2", "s0", "s1", "unused"]))
    res = me.bootstrap(cat, "score", "system", "item", n_resamples=128, random_state=1)
    assert res.systems == ("s2", "s0", "s1")  # the categorical's order, unused levels dropped
    np.testing.assert_allclose(res.estimate, ref.estimate[[2, 0, 1]], rtol=1e-12)


def test_progress_bar_can_be_forced(capsys, monkeypatch):
    monkeypatch.setenv("MIXEDEVAL_PROGRESS", "always")  # bars are drawn on a terminal only (mixedeval._progress)
    rng = np.random.default_rng(25)
    df = table(rng, S=2, n=20, run_col=False, group_col=False)
    a = me.bootstrap(df, "score", "system", "item", n_resamples=200, random_state=0, progress=True, chunk_size=64)
    b = me.bootstrap(df, "score", "system", "item", n_resamples=200, random_state=0, progress=False)
    np.testing.assert_array_equal(a.distribution, b.distribution)
    assert "bootstrap" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# coverage (small version; the large one is benchmarks/coverage_bootstrap.py)
# ---------------------------------------------------------------------------------------------

def simulate_crossed(rng, S=3, K=10, G=3, n=30, sd_item=1.0, sd_run=0.15, sd_sys_item=0.5, sd_res=0.5,
                     sd_lang=None):
    """y = mu_s + alpha_g + b_gi + c_sk + d_sgi + e: items (nested in languages) and runs random,
    crossed. Languages fixed (sd_lang=None; truth of system s: mu_s + mean(alpha)) or random
    (alpha ~ N(0, sd_lang^2); truth mu_s). Also used by benchmarks/coverage_bootstrap.py."""
    mu = np.arange(S) * 0.1
    if sd_lang is None:
        alpha = np.linspace(-0.3, 0.5, G)
        truth = mu + alpha.mean()
    else:
        alpha = rng.normal(0, sd_lang, G)
        truth = mu.astype(float)
    y = (mu[:, None, None, None] + alpha[None, None, :, None] + rng.normal(0, sd_item, (1, 1, G, n))
         + rng.normal(0, sd_run, (S, K, 1, 1)) + rng.normal(0, sd_sys_item, (S, 1, G, n))
         + rng.normal(0, sd_res, (S, K, G, n)))
    s, k, g, i = np.indices(y.shape)
    df = pd.DataFrame({"system": s.ravel(), "run": k.ravel(), "lang": g.ravel(), "item": i.ravel(),
                       "score": y.ravel()})
    return df, truth


def test_coverage_of_hierarchical_bootstrap_small():
    rng = np.random.default_rng(2024)
    hits = []
    for r in range(350):
        df, truth = simulate_crossed(rng)
        res = me.bootstrap(df, "score", "system", "item", run="run", group="lang", n_resamples=400,
                           random_state=r, progress=False)
        sm, pw = res.summary(), res.pairwise()
        hits.extend((sm.conf_low <= truth) & (truth <= sm.conf_high))
        td = truth[pw.system_a.to_numpy()] - truth[pw.system_b.to_numpy()]
        hits.extend((pw.conf_low <= td) & (td <= pw.conf_high))
    cover = np.mean(hits)
    assert 0.93 <= cover <= 0.97, cover


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------

def test_missing_cells_are_named_or_dropped():
    rng = np.random.default_rng(26)
    df = table(rng, S=2, K=2, G=2, n=10)
    before = df.copy()
    holey = df.drop(df.index[(df.system == "s1") & (df.item == 3) & (df.lang == "fr") & (df.run == 1)])
    with pytest.raises(DataError, match=r"system='s1', lang='fr', item=3, run=1.*drop_missing=True"):
        me.bootstrap(holey, "score", "system", "item", run="run", group="lang", n_resamples=100)
    res = me.bootstrap(holey, "score", "system", "item", run="run", group="lang", n_resamples=100,
                       drop_missing=True, random_state=1)
    assert res.warnings[0].kind == "missing_rows" and "dropped 1 of 20 items" in res.warnings[0].message
    ref = df[~((df.item == 3) & (df.lang == "fr"))]
    np.testing.assert_allclose(res.estimate, me.bootstrap(ref, "score", "system", "item", run="run", group="lang",
                                                          n_resamples=100).estimate, rtol=1e-12)
    pd.testing.assert_frame_equal(df, before)
    # a system lacking a whole run is not a hole: runs are then nested in systems
    no_run = df.drop(df.index[(df.system == "s0") & (df.run == 1)])
    res = me.bootstrap(no_run, "score", "system", "item", run="run", group="lang", n_resamples=100)
    assert [w.kind for w in res.warnings] == ["nested_runs", "single_run"]


def test_runs_nested_in_systems():
    """Systems with different run sets (Kreutzer: Baseline 1 run, the others 3): each system
    resamples its own runs; checked by exact enumeration with items held fixed."""
    rng = np.random.default_rng(31)
    rows = []
    for system, runs in (("a", [1]), ("b", [1, 2]), ("c", [4, 5, 6])):
        for run in runs:
            for item in range(6):
                rows.append({"system": system, "run": run, "item": item, "score": rng.normal()})
    df = pd.DataFrame(rows)
    means = df.groupby(["system", "run"])["score"].mean()
    res = me.bootstrap(df, "score", "system", "item", run="run", resample="runs", n_resamples=4000,
                       random_state=3)
    np.testing.assert_allclose(res.estimate, [means["a"].mean(), means["b"].mean(), means["c"].mean()], rtol=1e-12)
    d = res.distribution
    assert np.ptp(d[0]) == 0  # one run: nothing to resample
    # two runs: mean of 2 draws with replacement -> values {m1, (m1+m2)/2, m2} with prob 1/4, 1/2, 1/4
    m1, m2 = means["b"].to_numpy()
    vals = np.array([m1, (m1 + m2) / 2, m2])
    assert np.isclose(d[1][:, None], vals[None, :], rtol=0, atol=1e-12).any(axis=1).all()
    share = np.isclose(d[1], (m1 + m2) / 2, atol=1e-12).mean()
    assert abs(share - 0.5) < 4 * np.sqrt(0.25 / 4000)
    # three runs: bootstrap variance of a mean of 3 draws = var_pop(runs) / 3
    expect = np.var(means["c"].to_numpy()) / 3
    assert abs(d[2].var() / expect - 1) < 0.1
    # items resampled as well: the draws are shared (paired), runs independent per system
    both = me.bootstrap(df, "score", "system", "item", run="run", n_resamples=200, random_state=3)
    assert both.resample == ("items", "runs")
    with pytest.raises(DataError, match="ci='bca' is not available"):
        me.bootstrap(df, "score", "system", "item", run="run", n_resamples=200, ci="bca")


def test_design_example_on_kreutzer_ter():
    ter = me.datasets.load("kreutzer_ter")
    boot = me.bootstrap(ter, score="ter", system="system", item="sentence_id", run="replication",
                        n_resamples=300, random_state=0, higher_is_better=False)
    own = ter.groupby(["system", "replication"])["ter"].mean().groupby("system").mean()
    np.testing.assert_allclose(boot.estimate, own.loc[list(boot.systems)].to_numpy(), rtol=1e-12)
    assert list(boot.summary().columns) == ["system", "estimate", "boot_mean", "std_error", "conf_low", "conf_high"]
    assert {w.kind for w in boot.warnings} == {"nested_runs", "single_run"}


def test_bad_scores_and_keys():
    rng = np.random.default_rng(27)
    df = table(rng, S=2, n=10, run_col=False, group_col=False)
    bad = df.copy()
    bad.loc[3, "score"] = np.inf
    with pytest.raises(DataError, match="'score' has 1 non-finite"):
        me.bootstrap(bad, "score", "system", "item")
    bad = df.copy()
    bad.loc[4, "item"] = None
    with pytest.raises(DataError, match="'item' has 1 missing"):
        me.bootstrap(bad, "score", "system", "item")
    with pytest.raises(DataError, match="'nope'"):
        me.bootstrap(df, "nope", "system", "item")
    counts = df.assign(a=1.0, b=(df.item == 0).astype(float))
    with pytest.raises(DataError, match="not finite .* replicates"):
        me.bootstrap(counts, ["a", "b"], "system", "item", statistic=lambda a, b: a / b, n_resamples=200,
                     random_state=0)
    dup = pd.concat([df, df.iloc[[0]]])
    with pytest.raises(DataError, match="more than one row"):
        me.bootstrap(dup, "score", "system", "item")


def test_too_few_units_and_bad_options():
    rng = np.random.default_rng(28)
    df = table(rng, S=2, K=1, G=2, n=10)
    with pytest.raises(DataError, match="at least 2 levels of column 'run'"):
        me.bootstrap(df, "score", "system", "item", run="run", group="lang", resample=["items", "runs"])
    one_item = df[(df.lang == "de") | (df.item == 0)]
    with pytest.raises(DataError, match=r"at least 2 items per group.*\['fr'\]"):
        me.bootstrap(one_item, "score", "system", "item", group="lang")
    with pytest.raises(DataError, match="at least 2 levels of column 'lang'"):
        me.bootstrap(df[df.lang == "de"], "score", "system", "item", group="lang", resample="groups")
    with pytest.raises(DataError, match="no run column"):
        me.bootstrap(df, "score", "system", "item", resample="runs")
    with pytest.raises(DataError, match=r"'seeds' is not a level; use any of 'groups', 'items', 'runs'"):
        me.bootstrap(df, "score", "system", "item", run="run", resample="seeds")  # 0.1's name for runs
    with pytest.raises(DataError, match="n_groups"):
        me.bootstrap(df, "score", "system", "item", group="lang", n_groups=3)
    with pytest.raises(DataError, match="ci must be one of"):
        me.bootstrap(df, "score", "system", "item", group="lang", ci="student")
    with pytest.raises(DataError, match="aggregator must be"):
        me.bootstrap(df, "score", "system", "item", group="lang", aggregator="max")
    with pytest.raises(DataError, match=r"score=\['tp', 'fp', 'fn'\]"):
        me.bootstrap(df, "score", "system", "item", group="lang", statistic="f1")
    with pytest.raises(DataError, match="level"):
        me.bootstrap(df, "score", "system", "item", group="lang", level=95)
    with pytest.raises(DataError, match="rerun bootstrap"):
        me.bootstrap(df, "score", "system", "item", group="lang", n_resamples=64).summary(ci="bca")


def test_geometric_mean_of_non_positive_scores():
    rng = np.random.default_rng(29)
    df = table(rng, S=2, G=3, n=10)  # normal scores around 0: some group means are negative
    with pytest.raises(DataError, match="geometric_mean.*positive"):
        me.bootstrap(df, "score", "system", "item", group="lang", aggregator="geometric_mean")
    pos = df.assign(score=np.exp(df.score))
    res = me.bootstrap(pos, "score", "system", "item", group="lang", aggregator="geometric_mean", n_resamples=64)
    expected = pos.groupby(["system", "lang"]).score.mean().groupby("system").apply(st.gmean).to_numpy()
    np.testing.assert_allclose(res.estimate, expected, rtol=1e-12)


def test_bootstrap_headline_speaks_points_for_proportions_and_score_units_otherwise():
    """One unit rule with compare_logs and the EMMs (_answer.unit_scale): accuracies in [0, 1] are
    written in points (100 x), other scores in their own units; the numbers stay in the score's."""
    rng = np.random.default_rng(4)
    n = 200
    acc = pd.DataFrame({"system": np.repeat(["a", "b"], n), "item": np.tile(np.arange(n), 2),
                        "score": np.r_[rng.random(n) < 0.7, rng.random(n) < 0.5].astype(float)})
    head = me.bootstrap(acc, "score", "system", "item", n_resamples=500, random_state=1, progress=False).headline
    assert (head.unit, head.scale) == ("points", 100.0)
    assert f"+{100 * head.estimate:.1f} points" in head.text()
    assert 0.1 < head.estimate < 0.3
    raw = acc.assign(score=acc["score"] * 10 + rng.normal(size=2 * n))
    head = me.bootstrap(raw, "score", "system", "item", n_resamples=500, random_state=1, progress=False).headline
    assert (head.unit, head.scale) == ("", 1.0)
    assert "points" not in head.text()
