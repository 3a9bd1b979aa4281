"""krippendorff_alpha(): published examples (Krippendorff 2011, "Computing Krippendorff's
alpha-reliability"; the two-coder examples of Hagmann 2023, ch. 3.3.1) and hand-derived cases.
No R package for alpha is installed, so the references are the published numbers and
coincidence matrices worked out by hand below."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.workflows.krippendorff import krippendorff_alpha

NA = np.nan
# Krippendorff (2011), section C: 4 coders x 12 units with missing values
K2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NA, NA, NA],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NA, 3],
    [NA, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NA],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NA],
]


@pytest.mark.parametrize("level, published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849),
                                              ("ratio", 0.797)])
def test_krippendorff_2011_example(level, published):
    res = krippendorff_alpha(K2011, level)
    assert round(res.alpha, 3) == published
    assert res.n_pairable == 40 and res.n_units == 11 and res.n_coders == 4


def test_krippendorff_2011_coincidences_and_exact_nominal():
    """The paper's coincidence matrix, and alpha = 1 - (n-1) sum_{c!=k} o_ck / sum_{c!=k} n_c n_k by hand."""
    res = krippendorff_alpha(K2011, "nominal")
    o = res.coincidences.set_index("value").to_numpy()
    expected = np.array([
        [7, 4 / 3, 1 / 3, 1 / 3, 0],
        [4 / 3, 10, 4 / 3, 1 / 3, 0],
        [1 / 3, 4 / 3, 8, 1 / 3, 0],
        [1 / 3, 1 / 3, 1 / 3, 4, 0],
        [0, 0, 0, 0, 3],
    ])
    np.testing.assert_allclose(o, expected, rtol=1e-12)
    n_c = expected.sum(axis=1)  # 9, 13, 10, 5, 3
    n = n_c.sum()
    disagree_o = expected.sum() - np.trace(expected)
    disagree_e = n * n - (n_c ** 2).sum()
    np.testing.assert_allclose(res.alpha, 1 - (n - 1) * disagree_o / disagree_e, rtol=1e-12)
    np.testing.assert_allclose(res.alpha, 1 - 39 * 8 / (1600 - 384), rtol=1e-12)  # 0.7434...
    np.testing.assert_allclose(res.observed_disagreement, 8 / 40, rtol=1e-12)


def test_two_coder_binary_examples():
    """Krippendorff (2004) / Hagmann (2023) ch. 3.3.1: 0.095, -0.07, 1 and 0."""
    a = krippendorff_alpha([[1, 1, 0, 0, 0, 0, 0, 0, 0, 0], [0, 1, 1, 0, 0, 1, 0, 1, 0, 0]])
    np.testing.assert_allclose(a.alpha, 1 - 4 / (14 * 6 / 19), rtol=1e-12)  # 1 - o01 / e01
    assert round(a.alpha, 3) == 0.095
    b = krippendorff_alpha([[0, 0, 0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 0, 0, 1]])
    np.testing.assert_allclose(b.alpha, 1 - 2 / (14 * 2 / 15), rtol=1e-12)
    assert round(b.alpha, 2) == -0.07
    assert krippendorff_alpha([[0] * 7 + [1], [0] * 7 + [1]]).alpha == 1.0
    np.testing.assert_allclose(krippendorff_alpha([[0] * 8, [0] * 7 + [1]]).alpha, 0.0, atol=1e-15)


def test_no_variation_convention():
    res = krippendorff_alpha([[0] * 8, [0] * 8])
    assert res.alpha == 0.0
    assert res.expected_disagreement == 0.0
    assert [w.kind for w in res.warnings] == ["no_variation"]


def test_interval_hand_derived():
    """Two coders, three units: values (1,2), (2,2), (3,5).
    o: pairs (1,2),(2,1) with weight 1; (2,2) x2; (3,5),(5,3). n = 6.
    D_o = [2*(1)^2 + 2*(2)^2] / 6 = 10/6; n_c: 1:1, 2:3, 3:1, 5:1.
    D_e = sum_{c,k} n_c n_k (c-k)^2 / (6*5)."""
    res = krippendorff_alpha([[1, 2, 3], [2, 2, 5]], "interval")
    vals = np.array([1, 2, 3, 5.0])
    n_c = np.array([1, 3, 1, 1.0])
    d_e = (np.outer(n_c, n_c) * (vals[:, None] - vals[None, :]) ** 2).sum() / 30
    np.testing.assert_allclose(res.observed_disagreement, 10 / 6, rtol=1e-12)
    np.testing.assert_allclose(res.expected_disagreement, d_e, rtol=1e-12)
    np.testing.assert_allclose(res.alpha, 1 - (10 / 6) / d_e, rtol=1e-12)


def test_ordinal_metric_hand_derived():
    """Ordinal delta between ranks c < k: (sum_{g=c..k} n_g - (n_c + n_k)/2)^2; with n = (1, 3, 1, 1)
    over values 1, 2, 3, 5: delta(1,2) = (4 - 2)^2 = 4, delta(1,5) = (6 - 1)^2 = 25."""
    res = krippendorff_alpha([[1, 2, 3], [2, 2, 5]], "ordinal")
    n_c = np.array([1, 3, 1, 1.0])
    d2 = np.zeros((4, 4))
    for c in range(4):
        for k in range(4):
            lo, hi = min(c, k), max(c, k)
            d2[c, k] = (n_c[lo:hi + 1].sum() - (n_c[c] + n_c[k]) / 2) ** 2 if c != k else 0
    assert d2[0, 1] == 4 and d2[0, 3] == 25
    o = np.zeros((4, 4))
    o[0, 1] = o[1, 0] = 1
    o[1, 1] = 2
    o[2, 3] = o[3, 2] = 1
    d_o = (o * d2).sum() / 6
    d_e = (np.outer(n_c, n_c) * d2).sum() / 30
    np.testing.assert_allclose(res.alpha, 1 - d_o / d_e, rtol=1e-12)


def test_long_format_and_string_categories():
    wide = pd.DataFrame(K2011, index=list("ABCD"))
    long = wide.stack().rename("value").reset_index()
    long.columns = ["coder", "unit", "value"]
    res = krippendorff_alpha(long, unit="unit", coder="coder", value="value")
    assert round(res.alpha, 3) == 0.743
    labels = {1: "a", 2: "b", 3: "c", 4: "d", 5: "e"}
    cat = [[labels.get(v) if v == v else None for v in row] for row in K2011]
    np.testing.assert_allclose(krippendorff_alpha(cat).alpha, krippendorff_alpha(K2011).alpha, rtol=1e-12)
    # coders in rows: transposing changes the meaning, so units x coders is not silently accepted as equal
    assert krippendorff_alpha(np.array(K2011).T).alpha != pytest.approx(res.alpha)


def test_mixedeval_name_and_bad_input():
    assert me.krippendorff_alpha is krippendorff_alpha
    with pytest.raises(me.DataError, match="level must be"):
        krippendorff_alpha(K2011, "cardinal")
    with pytest.raises(me.DataError, match="numeric"):
        krippendorff_alpha([["a", "b"], ["a", "a"]], "interval")
    with pytest.raises(me.DataError, match="pairable"):
        krippendorff_alpha([[1, NA], [NA, 2]])
    with pytest.raises(me.DataError, match="2-D"):
        krippendorff_alpha([1, 2, 3])
    with pytest.raises(me.DataError, match="unit=, coder= and value="):
        krippendorff_alpha(pd.DataFrame({"u": [1]}), unit="u")
    with pytest.raises(me.DataError, match="duplicated"):
        krippendorff_alpha(pd.DataFrame({"u": [1, 1], "c": ["a", "a"], "v": [1, 2]}), unit="u", coder="c", value="v")


def test_main_table_is_one_row_of_alpha_and_its_ingredients():
    res = krippendorff_alpha(K2011, "interval")
    tab = res.table
    assert list(tab.columns) == ["alpha", "level", "observed_disagreement", "expected_disagreement", "n_pairable",
                                 "n_units", "n_coders"]
    assert len(tab) == 1 and tab["alpha"].iloc[0] == res.alpha and tab["level"].iloc[0] == "interval"
    pd.testing.assert_frame_equal(res.to_frame(), tab)
    assert "coincidences" in repr(res)
