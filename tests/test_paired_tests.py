"""Paired two-system tests: exact enumeration against scipy.stats.permutation_test and brute
force, Monte-Carlo agreement, type I error by simulation, conventions, bad input."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats as st

import mixedeval as me
from mixedeval.errors import DataError


def _mean_diff(a, b, axis=-1):
    return np.mean(a - b, axis=axis)


def _f1(t):
    den = 2 * t[..., 0] + t[..., 1] + t[..., 2]
    return np.where(den > 0, 2 * t[..., 0] / np.where(den > 0, den, 1), 0.0)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_sign_flip_exact_equals_scipy_permutation_test(alternative):
    rng = np.random.default_rng(1)
    x, y = rng.normal(0.4, 1, 11), rng.normal(0, 1, 11)
    ours = me.sign_flip_test(x, y, alternative=alternative)  # 2^11 <= 10_000: exact
    ref = st.permutation_test((x, y), _mean_diff, permutation_type="samples", n_resamples=np.inf,
                              alternative=alternative, vectorized=True)
    assert ours.exact and ours.n_resamples == 2**11 and ours.p_value_convention == "exact c/2^n"
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    np.testing.assert_allclose(np.sort(ours.null_distribution), np.sort(ref.null_distribution), rtol=1e-10,
                               atol=1e-14)


def test_approximate_randomization_with_mean_is_the_sign_flip_test():
    rng = np.random.default_rng(2)
    x, y = rng.normal(0.5, 1, 9), rng.normal(0, 1, 9)
    ar = me.approximate_randomization(x, y)
    sf = me.sign_flip_test(x - y)
    assert ar.exact and ar.p_value == pytest.approx(sf.p_value, rel=1e-12)


def test_approximate_randomization_exact_f1_equals_brute_force():
    rng = np.random.default_rng(3)
    n = 8
    x = np.column_stack([rng.poisson(3, n), rng.poisson(1, n), rng.poisson(1, n)])
    y = np.column_stack([rng.poisson(2, n), rng.poisson(2, n), rng.poisson(1, n)])
    res = me.approximate_randomization(x, y, statistic="f1", exact=True)
    obs = _f1(x.sum(0)) - _f1(y.sum(0))
    count = 0
    for mask in itertools.product([False, True], repeat=n):  # every swap assignment
        m = np.array(mask)[:, None]
        xs, ys = np.where(m, y, x), np.where(m, x, y)
        count += abs(_f1(xs.sum(0)) - _f1(ys.sum(0))) >= abs(obs) * (1 - 1e-12)
    assert res.statistic == pytest.approx(obs, rel=1e-12)
    assert res.count == count and res.p_value == pytest.approx(count / 2**n, rel=1e-12)


def test_randomized_tests_agree_with_scipy_within_monte_carlo_error():
    rng = np.random.default_rng(4)
    x, y = rng.normal(0.25, 1, 40), rng.normal(0, 1, 40)
    ref = st.permutation_test((x, y), _mean_diff, permutation_type="samples", n_resamples=50_000,
                              vectorized=True, random_state=5)
    for fn in (me.sign_flip_test, me.approximate_randomization):
        ours = fn(x, y, n_resamples=50_000, random_state=6)
        assert not ours.exact and ours.p_value_convention == "(c+1)/(B+1)"
        assert ours.p_value == pytest.approx(ref.pvalue, abs=4 * np.sqrt(2 * 0.25 / 50_000))


def test_paired_bootstrap_matches_exact_bootstrap_enumeration():
    """n = 4 items: all 4^4 resamples are equally likely; the shift-method p-value and the
    percentile interval of the exact bootstrap distribution are the targets."""
    x = np.array([0.91, 0.23, 0.68, 0.47])
    y = np.array([0.30, 0.13, 0.61, 0.52])
    d = x - y
    exact = np.array([d[list(i)].mean() for i in itertools.product(range(4), repeat=4)])
    dev = np.abs(exact - exact.mean())
    assert np.min(np.abs(dev - abs(d.mean()))) > 1e-3  # no replicate sits on the rejection boundary
    p_exact = np.mean(dev >= abs(d.mean()))
    res = me.paired_bootstrap_test(x, y, n_resamples=100_000, random_state=7, p_value_convention="c_over_b")
    assert res.statistic == pytest.approx(d.mean(), rel=1e-12)
    assert res.p_value == pytest.approx(p_exact, abs=4 * np.sqrt(p_exact * (1 - p_exact) / 100_000))
    lo, hi = res.confidence_interval
    assert lo == pytest.approx(np.quantile(exact, 0.025), abs=0.05)
    assert hi == pytest.approx(np.quantile(exact, 0.975), abs=0.05)


def test_p_value_conventions_share_the_count():
    rng = np.random.default_rng(8)
    x, y = rng.normal(0.1, 1, 50), rng.normal(0, 1, 50)
    for fn in (me.paired_bootstrap_test, me.approximate_randomization, me.sign_flip_test):
        a = fn(x, y, n_resamples=999, random_state=1)
        b = fn(x, y, n_resamples=999, random_state=1, p_value_convention="c_over_b")
        assert a.count == b.count
        assert a.p_value == pytest.approx((a.count + 1) / 1000) and b.p_value == pytest.approx(b.count / 999)
        assert b.p_value_convention == "c/B"


def test_corpus_f1_bootstrap_uses_summed_counts():
    rng = np.random.default_rng(9)
    n = 80
    x = np.column_stack([rng.poisson(3, n), rng.poisson(1, n), rng.poisson(1, n)])
    y = np.column_stack([rng.poisson(3, n), rng.poisson(2, n), rng.poisson(1, n)])
    res = me.paired_bootstrap_test(x, y, statistic="f1", n_resamples=2000, random_state=3)
    assert res.estimate_x == pytest.approx(_f1(x.sum(0)), rel=1e-12)
    custom = me.paired_bootstrap_test(x, y, statistic=lambda tp, fp, fn: 2 * tp / (2 * tp + fp + fn),
                                      n_resamples=2000, random_state=3)
    assert custom.p_value == res.p_value
    np.testing.assert_allclose(custom.null_distribution, res.null_distribution, rtol=1e-12)
    # zero-division rule: nothing to find and nothing found gives F1 = 0
    zero = np.zeros((5, 3))
    assert me.paired_bootstrap_test(zero, zero, statistic="f1", n_resamples=64).estimate_x == 0.0


def test_type_one_error_is_near_nominal():
    """Exchangeable pairs (H0 true): the share of p <= 0.05 is close to 5%."""
    rng = np.random.default_rng(10)
    rejections = {"ar": 0, "boot": 0}
    n_sim = 300
    for r in range(n_sim):
        base = rng.normal(0, 1, 30)
        x, y = base + rng.normal(0, 1, 30), base + rng.normal(0, 1, 30)
        rejections["ar"] += me.approximate_randomization(x, y, n_resamples=500, random_state=r).p_value <= 0.05
        rejections["boot"] += me.paired_bootstrap_test(x, y, n_resamples=500, random_state=r).p_value <= 0.05
    assert 0.025 <= rejections["ar"] / n_sim <= 0.08
    assert 0.025 <= rejections["boot"] / n_sim <= 0.09  # the shift bootstrap is slightly liberal at n = 30


def test_determinism_across_chunk_sizes():
    rng = np.random.default_rng(11)
    x, y = rng.normal(0.1, 1, 30), rng.normal(0, 1, 30)
    for fn in (me.paired_bootstrap_test, me.approximate_randomization, me.sign_flip_test):
        a = fn(x, y, n_resamples=1000, random_state=4)
        b = fn(x, y, n_resamples=1000, random_state=4, chunk_size=1)
        np.testing.assert_array_equal(a.null_distribution, b.null_distribution)
        assert a.p_value == b.p_value


def test_tiny_memory_budget_batches_the_draws(monkeypatch):
    from mixedeval.resampling import _draws as dr

    rng = np.random.default_rng(12)
    x, y = rng.normal(0.2, 1, 60), rng.normal(0, 1, 60)
    full = me.paired_bootstrap_test(x, y, n_resamples=20_000, random_state=5)
    monkeypatch.setattr(dr, "CHUNK_BYTES", 12 * 60 * 5)  # 5 replicates per count matrix
    small = me.paired_bootstrap_test(x, y, n_resamples=20_000, random_state=5)
    again = me.paired_bootstrap_test(x, y, n_resamples=20_000, random_state=5, chunk_size=1)
    np.testing.assert_array_equal(small.null_distribution, again.null_distribution)
    assert small.p_value == pytest.approx(full.p_value, abs=0.01)
    assert np.std(small.null_distribution) == pytest.approx(np.std(full.null_distribution), rel=0.03)
    ar = me.approximate_randomization(x, y, n_resamples=20_000, random_state=5)
    assert ar.p_value == pytest.approx(me.sign_flip_test(x, y, n_resamples=20_000, random_state=6).p_value, abs=0.01)


def test_result_object():
    res = me.sign_flip_test([0.1, 0.3, -0.2, 0.5, 0.4])
    assert res.table.loc[0, "method"] == "sign-flip permutation test" and res.to_frame().equals(res.table)
    assert "p_value" in repr(res) and "<table" in res._repr_html_()
    d = res.to_dict()
    assert d["p_value"] == res.p_value and "null_distribution" not in d


def test_bad_input():
    with pytest.raises(DataError, match="same shape"):
        me.paired_bootstrap_test([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(DataError, match="non-finite"):
        me.approximate_randomization([1.0, np.nan, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(DataError, match="at least 2 items"):
        me.sign_flip_test([1.0], [0.0])
    with pytest.raises(DataError, match="alternative"):
        me.sign_flip_test([1.0, 2.0], alternative="bigger")
    with pytest.raises(DataError, match="3 column"):
        me.paired_bootstrap_test([1.0, 2.0], [1.0, 2.0], statistic="f1")
    with pytest.raises(DataError, match="exact enumeration"):
        me.approximate_randomization(np.ones(30), np.zeros(30), exact=True)
    with pytest.raises(DataError, match="p_value_convention"):
        me.sign_flip_test([1.0, 2.0], p_value_convention="c/b")
    ratio = lambda a, b: a / b  # noqa: E731  (undefined when a resampled sum of b is 0)
    with pytest.raises(DataError, match="not finite in"):
        me.paired_bootstrap_test(np.column_stack([np.ones(6), [1.0, 0, 0, 0, 0, 0]]),
                                 np.column_stack([np.ones(6), np.ones(6)]), statistic=ratio, random_state=0)
    with pytest.raises(DataError, match="random_state"):
        me.paired_bootstrap_test([1.0, 2.0], [0.0, 1.0], random_state="seed")


def test_large_n_defaults_to_monte_carlo_without_overflow():
    """More than 1023 items: 2**n overflows a float; the default must pick Monte Carlo."""
    import mixedeval as me

    ter = me.datasets.load("kreutzer_ter")
    base = ter[ter["system"] == "Baseline"].sort_values("sentence_id")["ter"].to_numpy()
    mark = ter[(ter["system"] == "Marking") & (ter["replication"] == "1")].sort_values("sentence_id")["ter"].to_numpy()
    assert len(base) == 1041
    ar = me.approximate_randomization(base, mark, n_resamples=500, random_state=0)
    sf = me.sign_flip_test(base, mark, n_resamples=500, random_state=0)
    for res in (ar, sf):
        assert not res.exact and res.n_resamples == 500
        assert res.statistic == pytest.approx(np.mean(base - mark), rel=1e-12)
        assert res.p_value == pytest.approx((res.count + 1) / 501, rel=1e-12)
        # the paired t-test gives p ~ 3e-4: at most a few of 500 sign flips reach the observed mean
        assert st.ttest_rel(base, mark).pvalue < 1e-3 and res.count <= 3
