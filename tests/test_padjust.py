"""adjust_pvalues against R's own stats::p.adjust, called in the test through rpy2."""
from __future__ import annotations

import numpy as np
import pytest

from mixedeval.errors import DataError
from mixedeval.padjust import adjust_pvalues

R_METHODS = ["holm", "hochberg", "hommel", "bonferroni", "BH", "BY", "fdr", "none"]


@pytest.fixture(scope="module")
def r_padjust(R):  # the conftest fixture starts the embedded R session
    import rpy2.robjects as ro

    def call(p, method, n=None):
        vec = ro.FloatVector([float(v) for v in p])
        res = ro.r["p.adjust"](vec, method=method) if n is None else ro.r["p.adjust"](vec, method=method, n=n)
        return np.array(res, dtype=float, copy=True)

    return call


def _cases():
    rng = np.random.default_rng(20240601)
    yield "uniform20", rng.uniform(size=20)
    yield "small_and_large", np.concatenate([rng.uniform(0, 1e-4, 7), rng.uniform(size=9)])
    yield "ties", np.array([0.01, 0.02, 0.02, 0.02, 0.04, 0.5, 0.5, 0.01, 1.0, 0.0])
    yield "two", np.array([0.03, 0.02])
    yield "three", np.array([0.04, 0.001, 0.2])
    yield "one", np.array([0.03])
    yield "with_nan", np.array([0.01, np.nan, 0.04, 0.2, np.nan, 0.003, 0.5])
    yield "tiny", np.array([1e-300, 1e-20, 3e-10, 0.049, 0.051])
    yield "sorted_desc", np.sort(rng.uniform(size=15))[::-1].copy()
    yield "many", rng.beta(0.3, 2.0, size=200)


@pytest.mark.parametrize("method", R_METHODS)
@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[0])
def test_equals_r_p_adjust(r_padjust, method, case):
    _, p = case
    expected = r_padjust(p, method)
    got = adjust_pvalues(p, method)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0, equal_nan=True)


@pytest.mark.parametrize("method", ["holm", "hochberg", "hommel", "bonferroni", "BH", "BY"])
def test_explicit_n_equals_r(r_padjust, method):
    p = np.array([0.002, 0.01, np.nan, 0.03, 0.3])
    for n in (4, 6, 11):
        np.testing.assert_allclose(adjust_pvalues(p, method, n=n), r_padjust(p, method, n=n),
                                   rtol=1e-12, equal_nan=True)


def test_sidak_closed_form_and_input_untouched():
    p = np.array([0.01, 0.2, np.nan, 0.0, 1.0])
    before = p.copy()
    got = adjust_pvalues(p, "sidak")
    np.testing.assert_array_equal(p, before)
    np.testing.assert_allclose(got, [1 - 0.99**4, 1 - 0.8**4, np.nan, 0.0, 1.0], rtol=1e-14, equal_nan=True)


def test_shape_is_kept():
    p = np.array([[0.01, 0.02], [0.3, 0.04]])
    got = adjust_pvalues(p, "BH")
    assert got.shape == (2, 2)
    np.testing.assert_allclose(got.ravel(), adjust_pvalues(p.ravel(), "BH"))


def test_bad_input():
    with pytest.raises(DataError, match="unknown"):
        adjust_pvalues([0.1, 0.2], "tukey")
    with pytest.raises(DataError, match=r"\[0, 1\]"):
        adjust_pvalues([0.1, 1.2], "holm")
    with pytest.raises(DataError, match="n >= 3"):
        adjust_pvalues([0.1, 0.2, 0.3], "holm", n=2)
