"""Bad input that used to slip through (issue 11): duplicated column names, complex scores and
predictors, dates/times as predictors, non-syntactic grouping-factor names in R² / ICC, confidence
levels outside (0, 1), duplicated rows, and the one missing-score rule of every entry point
(a NaN/None/inf score is a DataError; a missing predictor drops the row with a warning).

Every call also checks that the caller's DataFrame is left exactly as it was."""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

import mixedeval as me
from mixedeval.data.table import as_pandas
from mixedeval.data.validate import (
    duplicated_rows_warning,
    require_finite,
    require_level,
    require_supported_dtypes,
    require_unique_columns,
    validate_score_table,
)


# ------------------------------------------------------------------------ helpers
def _toy(n_items: int = 8, seed: int = 0) -> pd.DataFrame:
    """Three systems x two seeds x n_items items, item-level scores with an item effect."""
    rng = np.random.default_rng(seed)
    rows = []
    item_eff = rng.normal(0, 1, n_items)
    for s, shift in zip(["A", "B", "C"], [0.0, 0.5, 1.0]):
        for k in ("1", "2"):
            for i in range(n_items):
                rows.append({"system": s, "seed": k, "item": f"i{i}", "length": float(5 + 3 * i),
                             "score": 10 + shift + item_eff[i] + rng.normal(0, 0.5)})
    return pd.DataFrame(rows)


def _vca_toy(seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    item = rng.normal(0, 2, 10)
    rater = rng.normal(0, 1, 4)
    for i in range(10):
        for r in range(4):
            rows.append({"item": f"s{i}", "rater": f"r{r}", "y": 5 + item[i] + rater[r] + rng.normal(0, 0.7)})
    return pd.DataFrame(rows)


def _disparity_toy(seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for m, me_ in zip("abcde", rng.normal(0, 3, 5)):
        for lang, le in zip(["de", "en", "fr", "sw"], [2.0, 5.0, 1.0, -3.0]):
            for task, te in zip(["t1", "t2", "t3"], [0.0, 4.0, -2.0]):
                rows.append({"model": m, "language": lang, "task": task,
                             "score": 50 + me_ + le + te + rng.normal(0, 1)})
    return pd.DataFrame(rows)


class Unchanged:
    """``with Unchanged(df):`` asserts that ``df`` (values, dtypes, column names, index) is the
    same afterwards."""

    def __init__(self, df: pd.DataFrame):
        self.df = df

    def __enter__(self):
        self.copy = self.df.copy(deep=True)
        self.columns = list(self.df.columns)
        self.dtypes = list(map(str, self.df.dtypes))
        return self

    def __exit__(self, *exc):
        assert list(self.df.columns) == self.columns
        assert list(map(str, self.df.dtypes)) == self.dtypes
        pd.testing.assert_frame_equal(self.df, self.copy, check_exact=True)
        return False


# ------------------------------------------------------------------ duplicated column names
def _dup_columns(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    cols = list(out.columns)
    cols[cols.index("length")] = "item"  # a second column called "item"
    out.columns = cols
    return out


def test_duplicated_column_names_are_a_data_error_everywhere():
    bad = _dup_columns(_toy())
    calls = {
        "as_pandas": lambda: as_pandas(bad),
        "describe_design": lambda: me.describe_design(bad, ["system", "item"]),
        "bootstrap": lambda: me.bootstrap(bad, score="score", system="system", item="item", n_resamples=10),
        "compare_systems": lambda: me.compare_systems(bad, "score", "system", "item"),
        "conditional_compare": lambda: me.conditional_compare(bad, "score", "system", "item", "seed"),
        "variance_components": lambda: me.variance_components(bad, "score", "item", ["seed"]),
        "assess_meta_parameter": lambda: me.assess_meta_parameter(bad, "score", "item", "seed"),
        "language_disparity": lambda: me.language_disparity(bad, "score", "seed", "system", "item"),
        "validate_score_table": lambda: validate_score_table(bad, "score", ["system"]),
    }
    for name, call in calls.items():
        with Unchanged(bad), pytest.raises(me.DataError, match=r"duplicated column names: 'item' \(2x\).*rename") as e:
            call()
        assert "unique" in str(e.value), name


def test_duplicated_column_names_in_lmm():
    bad = _dup_columns(_toy())
    with Unchanged(bad), pytest.raises(me.DataError, match=r"duplicated column names: 'item'"):
        me.lmm("score ~ system + (1|item)", bad)


def test_columns_that_print_alike_are_duplicates():
    df = pd.DataFrame({1: [1.0, 2.0], "1": [3.0, 4.0], "x": ["a", "b"]})
    with pytest.raises(me.DataError, match=r"'1' \(2x\).*same name as text"):
        require_unique_columns(df)
    require_unique_columns(_toy())  # fine


def test_duplicated_column_names_from_pyarrow():
    pa = pytest.importorskip("pyarrow")
    tab = pa.table([pa.array([1.0, 2.0]), pa.array(["a", "b"])], names=["x", "x"])
    with pytest.raises(me.DataError, match="duplicated column names: 'x'"):
        as_pandas(tab)


def test_unequal_dict_columns_are_a_data_error():
    with pytest.raises(me.DataError, match="could not turn data"):
        as_pandas({"a": [1, 2], "b": [1]})


# ------------------------------------------------------------------ complex values
def test_complex_scores():
    df = _toy()
    df["score"] = df["score"] + 0.5j
    msg = r"score column 'score' has complex values; take \.real or abs\(\)"
    for call in (lambda: require_finite(df, "score"),
                 lambda: validate_score_table(df, "score", ["system"]),
                 lambda: me.compare_systems(df, "score", "system", "item"),
                 lambda: me.variance_components(df, "score", "item", ["seed"]),
                 lambda: me.bootstrap(df, score="score", system="system", item="item", n_resamples=10),
                 lambda: me.language_disparity(df, "score", "seed", "system", "item")):
        with Unchanged(df), pytest.raises(me.DataError, match=msg):
            call()
    obj = _toy()
    obj["score"] = obj["score"].astype(object)
    obj.loc[3, "score"] = 1 + 2j
    with Unchanged(obj), pytest.raises(me.DataError, match=msg):
        me.compare_systems(obj, "score", "system", "item")


def test_complex_scores_in_lmm():
    df = _toy()
    df["score"] = df["score"] + 0.5j
    with Unchanged(df), pytest.raises(me.DataError, match=r"score column 'score' has complex values"):
        me.lmm("score ~ system + (1|item)", df)


def test_complex_predictors():
    df = _toy()
    df["length"] = df["length"] * (1 + 1j)
    with Unchanged(df), pytest.raises(me.DataError, match=r"column 'length' has complex values; take \.real"):
        me.conditional_compare(df, "score", "system", "item", "length")
    with pytest.raises(me.DataError, match=r"^column 'length' has complex values"):
        require_supported_dtypes(df, ["score", "length"], score="score")
    df2 = _toy()
    df2["system"] = df2["system"].astype(object).map({"A": 1j, "B": 2j, "C": 3j}).astype(complex)
    with Unchanged(df2), pytest.raises(me.DataError, match=r"column 'system' has complex values"):
        me.compare_systems(df2, "score", "system", "item")


# ------------------------------------------------------------------ dates and times
@pytest.mark.parametrize("kind", ["datetime", "datetime_tz", "timedelta", "period", "date_objects"])
def test_datetime_predictors(kind):
    df = _toy()
    n = len(df)
    start = pd.Timestamp("2024-01-01")
    values = {
        "datetime": start + pd.to_timedelta(np.arange(n) % 7, "D"),
        "datetime_tz": (start + pd.to_timedelta(np.arange(n) % 7, "D")).tz_localize("UTC"),
        "timedelta": pd.to_timedelta(np.arange(n) % 7, "h"),
        "period": pd.period_range("2024-01", periods=7, freq="M")[np.arange(n) % 7],
        "date_objects": pd.Series([(start + pd.Timedelta(days=int(i % 7))).date() for i in range(n)], dtype=object),
    }[kind]
    df["when"] = pd.Series(values)
    msg = r"column 'when' holds dates/times.*convert it to a number.*astype\(str\)"
    with pytest.raises(me.DataError, match=msg):
        require_supported_dtypes(df, ["score", "when"], score="score")
    with Unchanged(df), pytest.raises(me.DataError, match=msg):
        me.conditional_compare(df, "score", "system", "item", "when")
    with Unchanged(df), pytest.raises(me.DataError, match=msg):
        me.compare_systems(df, "score", "system", "item", random="when")
    with Unchanged(df), pytest.raises(me.DataError, match=msg):
        me.variance_components(df, "score", "item", ["when"])


def test_datetime_predictor_in_lmm():
    df = _toy()
    df["when"] = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(len(df)), "D")
    with Unchanged(df), pytest.raises(me.DataError, match=r"column 'when' holds dates/times"):
        me.lmm("score ~ system + when + (1|item)", df)


def test_datetime_score_and_list_cells():
    df = _toy()
    df["score"] = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(len(df)), "D")
    with pytest.raises(me.DataError, match=r"score column 'score' holds dates/times"):
        require_finite(df, "score")
    df = _toy()
    df["tokens"] = [["a", "b"]] * len(df)
    with pytest.raises(me.DataError, match=r"column 'tokens' holds list values; one scalar per cell"):
        require_supported_dtypes(df, ["tokens"])
    with Unchanged(df), pytest.raises(me.DataError, match="'tokens' holds list values"):
        me.describe_design(df, ["system", "tokens"])
    # an unused column of lists does not get in the way (and does not break the duplicate check)
    assert duplicated_rows_warning(df, "score") is None
    res = me.describe_design(df, ["system", "item"])
    assert res.balanced


# ------------------------------------------------------------------ R² / ICC with odd names
ODD_NAMES = ["item id", "item's id", 'item "id"', "item[1]"]


def _r_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.parametrize("name", ODD_NAMES)
def test_r2_icc_with_non_syntactic_grouping_factor(R, ter, name):
    d = ter.rename(columns={"sentence_id": name})
    with Unchanged(d):
        fit = me.lmm(f"ter ~ system + (1|{name})", d)
        r2, icc = fit.r2(), fit.icc()
    R(f"d_odd <- ter_df; names(d_odd)[names(d_odd) == 'sentence_id'] <- {_r_string(name)}")
    bq = "`" + name + "`"
    R(f"m_odd <- lmerTest::lmer(ter ~ system + (1|{bq}), data = d_odd)")
    exp = [R("performance::r2_nakagawa(m_odd)$R2_marginal")[0], R("performance::r2_nakagawa(m_odd)$R2_conditional")[0],
           R("performance::icc(m_odd)$ICC_adjusted")[0], R("performance::icc(m_odd)$ICC_unadjusted")[0]]
    assert_rel([r2.r2_marginal, r2.r2_conditional, icc.icc_adjusted, icc.icc_unadjusted], exp)
    assert list(r2.components["group"].dropna()) == [name]


def test_r2_icc_crossed_odd_names_and_slope(R, annotation):
    """Two odd grouping factors plus their interaction (lme4 reorders the terms by level count)."""
    d = annotation.rename(columns={"rater": "rater's id", "sentence": 'sentence "no" [1]'})
    f = "score ~ mode + (1|rater's id) + (1|sentence \"no\" [1])"
    fit = me.lmm(f, d)
    R("d_odd2 <- ann_df; names(d_odd2)[names(d_odd2) == 'rater'] <- \"rater's id\"; "
      "names(d_odd2)[names(d_odd2) == 'sentence'] <- 'sentence \"no\" [1]'")
    R("m_odd2 <- lmerTest::lmer(score ~ mode + (1|`rater's id`) + (1|`sentence \"no\" [1]`), data = d_odd2)")
    exp = [R("performance::r2_nakagawa(m_odd2)$R2_marginal")[0], R("performance::r2_nakagawa(m_odd2)$R2_conditional")[0],
           R("performance::icc(m_odd2)$ICC_adjusted")[0], R("performance::icc(m_odd2)$ICC_unadjusted")[0]]
    r2, icc = fit.r2(), fit.icc()
    assert_rel([r2.r2_marginal, r2.r2_conditional, icc.icc_adjusted, icc.icc_unadjusted], exp)
    # a correlated slope in a factor named with a space: Johnson's formula by hand in R
    s = me.datasets.load("kreutzer_ter").rename(columns={"sentence_id": "item id", "src_length": "src len"})
    s = s[s["system"] != "Baseline"]
    fit2 = me.lmm("ter ~ src len + (src len|item id)", s.head(600))
    R(f"d_sl <- ter_df[ter_df$system != 'Baseline', ][1:600, ]; names(d_sl)[names(d_sl) == 'sentence_id'] <- 'item id'; "
      "names(d_sl)[names(d_sl) == 'src_length'] <- 'src len'")
    R("m_sl <- lmerTest::lmer(ter ~ `src len` + (`src len`|`item id`), data = d_sl)")
    R("vc_sl <- lme4::VarCorr(m_sl)[[1]]; x_sl <- d_sl[['src len']]; "
      "vr_sl <- vc_sl[1, 1] + 2 * vc_sl[1, 2] * mean(x_sl) + vc_sl[2, 2] * mean(x_sl^2)")
    vr = R("vr_sl")[0]
    assert_rel(fit2.r2().var_random, vr, rtol=1e-6)


def test_report_r2_section_with_non_syntactic_grouping_factor(tmp_path):
    import re

    d = _toy().rename(columns={"item": "item 'id\" [1]"})
    fit = me.lmm("score ~ system + (1|item 'id\" [1])", d)
    path = tmp_path / "odd.html"
    me.report(fit, path=path, progress=False)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")))
    assert re.search(r"R² and ICC ok r2_marginal = ", text)
    assert "no random-effect model matrix" not in text


# ------------------------------------------------------------------ confidence levels
@pytest.mark.parametrize("bad", [1.5, 0, 1, -0.1, float("nan"), "0.95", None, True])
def test_require_level(bad):
    with pytest.raises(me.DataError, match="level must be a number strictly between 0 and 1"):
        require_level(bad)


def test_require_level_accepts_numbers():
    assert require_level(0.9) == 0.9
    assert require_level(np.float32(0.5)) == 0.5
    with pytest.raises(me.DataError, match="conf_level must be"):
        require_level(2, "conf_level")


@pytest.fixture(scope="module")
def toy_fit():
    return me.lmm("score ~ system + length + (1|item)", _toy())


def test_every_level_argument_is_checked(toy_fit):
    fit = toy_fit
    emm = fit.emmeans("system")
    calls = {
        "coef_table": lambda: fit.coef_table(level=1.5),
        "anova": lambda: fit.anova(level=1.5),
        "emmeans": lambda: fit.emmeans("system", level=1.5),
        "emtrends": lambda: fit.emtrends("system", var="length", level=1.5),
        "contrasts": lambda: emm.contrasts(level=1.5),
        "compare_systems": lambda: me.compare_systems(_toy(), "score", "system", "item", level=1.5),
        "conditional_compare": lambda: me.conditional_compare(_toy(), "score", "system", "item", "seed", level=1.5),
        "assess_meta_parameter": lambda: me.assess_meta_parameter(_toy(), "score", "item", "seed", level=1.5),
    }
    for name, call in calls.items():
        with pytest.raises(me.DataError, match="level must be a number strictly between 0 and 1") as e:
            call()
        assert "1.5" in str(e.value), name
    with pytest.raises(me.DataError, match="level must be"):
        fit.coef_table(level="high")
    with pytest.raises(me.DataError, match="alpha must be a number strictly between 0 and 1"):
        me.inferential_reproducibility(_toy(), "score", "system", "item", meta_params=["seed"], alpha=1.5)
    ok = fit.coef_table(level=0.9)
    assert (ok["conf_high"] - ok["conf_low"] > 0).all()


def test_language_disparity_levels():
    res = me.language_disparity(_disparity_toy())
    with pytest.raises(me.DataError, match="level must be a number strictly between 0 and 1"):
        res.potential_intervals(level=1.5)
    with pytest.raises(me.DataError, match="level must be a number strictly between 0 and 1"):
        res.bootstrap(n_resamples=5, level=0, progress=False)


# ------------------------------------------------------------------ duplicated rows
def test_duplicated_rows_warning_function():
    df = _toy()
    assert duplicated_rows_warning(df, "score") is None
    twice = pd.concat([df, df.iloc[[0, 5]]])
    w = duplicated_rows_warning(twice, "score")
    assert w.kind == "duplicated_rows"
    assert "2 row(s) repeat an earlier row exactly" in w.message and "drop_duplicates()" in w.message
    # same key, different score: not a duplicate; same key and score: one
    keyed = df.copy()
    keyed.loc[1, ["system", "seed", "item"]] = keyed.loc[0, ["system", "seed", "item"]].to_numpy()
    assert duplicated_rows_warning(keyed, "score", ["system", "seed", "item"]) is None
    keyed.loc[1, "score"] = keyed.loc[0, "score"]
    w = duplicated_rows_warning(keyed, "score", ["system", "seed", "item"])
    assert w is not None and "1 row(s)" in w.message and "rows 1" in w.message
    # lists in a key column are compared by value
    lists = pd.DataFrame({"k": [[1], [1], [2]], "score": [1.0, 1.0, 1.0]})
    assert "1 row(s)" in duplicated_rows_warning(lists, "score").message


def test_duplicated_rows_are_flagged_by_the_workflows():
    df = _toy()
    twice = pd.concat([df, df.iloc[:3]], ignore_index=True)
    with Unchanged(twice):
        res = me.compare_systems(twice, "score", "system", "item", random="seed", average=False)
    w = [w for w in res.warnings if w.kind == "duplicated_rows"]
    assert len(w) == 1 and "3 row(s)" in w[0].message
    assert not any(w.kind == "duplicated_rows" for w in me.compare_systems(df, "score", "system", "item",
                                                                            average=False).warnings)
    v = _vca_toy()
    with Unchanged(v):
        res = me.variance_components(pd.concat([v, v.iloc[:2]], ignore_index=True), "y", "item", ["rater"])
    assert any(w.kind == "duplicated_rows" and "2 row(s)" in w.message for w in res.warnings)
    d = _disparity_toy()
    res = me.language_disparity(pd.concat([d, d.iloc[:1]], ignore_index=True))
    assert any(w.kind == "duplicated_rows" for w in res.warnings)


def test_runs_with_equal_scores_are_not_duplicates():
    """Two runs with the same score on every item differ in the run column: no warning, neither on
    the workflow result nor on the models it fits from its reduced frames (system, item, score)."""
    df = _toy()
    df.loc[df["seed"] == "2", "score"] = df.loc[df["seed"] == "1", "score"].to_numpy()
    res = me.compare_systems(df, "score", "system", "item")
    fits = [res.fit, res.null_fit, res.averaged.fit]
    assert not any(w.kind == "duplicated_rows" for w in [*res.warnings, *(w for f in fits for w in f.warnings)])
    vca = me.variance_components(df, "score", "item", ["system"])
    assert not any(w.kind == "duplicated_rows" for w in [*vca.warnings, *vca.model.warnings])
    cc = me.conditional_compare(df, "score", "system", "item", "length")
    assert not any(w.kind == "duplicated_rows" for w in [*cc.warnings, *cc.fit.warnings])


def test_replications_with_equal_scores_are_not_duplicates(ter):
    """Kreutzer TER: replications often repeat a system's score on an item; the rows still differ in
    the replication column, so nothing is flagged."""
    assert duplicated_rows_warning(ter, "ter") is None


# ------------------------------------------------------------------ the missing-score rule
def _with_nan_scores(df: pd.DataFrame, col: str, rows=(3, 7)) -> pd.DataFrame:
    out = df.copy()
    out.loc[list(rows), col] = np.nan
    return out


@pytest.mark.parametrize("value", [np.nan, None, np.inf, pd.NA])
def test_missing_scores_are_an_error_in_every_workflow(value):
    df = _toy()
    df["score"] = df["score"].astype("Float64") if value is pd.NA else df["score"]
    df.loc[[3, 7], "score"] = value
    n_kind = "infinite" if value is np.inf else "missing/NaN"
    msg = rf"score column 'score' has 2 non-finite values \(2 {n_kind}\) in rows 3, 7; drop or impute"
    calls = {
        "compare_systems": lambda: me.compare_systems(df, "score", "system", "item"),
        "conditional_compare": lambda: me.conditional_compare(df, "score", "system", "item", "length"),
        "variance_components": lambda: me.variance_components(df, "score", "item", ["seed"]),
        "meta_parameter_importance": lambda: me.meta_parameter_importance(df, "score", "item", ["seed"]),
        "assess_meta_parameter": lambda: me.assess_meta_parameter(df, "score", "item", "seed"),
        "inferential_reproducibility": lambda: me.inferential_reproducibility(df, "score", "system", "item",
                                                                              meta_params=["seed"]),
        "language_disparity": lambda: me.language_disparity(df, "score", "seed", "system", "item"),
        "lmm": lambda: me.lmm("score ~ system + (1|item)", df),
    }
    for name, call in calls.items():
        with Unchanged(df), pytest.raises(me.DataError, match=msg) as e:
            call()
        fix = "df.dropna(subset=['score'])" if value is not np.inf else "np.isfinite(df['score'])"
        assert fix in str(e.value), name


def test_missing_predictors_drop_rows_with_a_warning():
    df = _toy()
    df.loc[[0, 4], "system"] = None
    with Unchanged(df):
        res = me.compare_systems(df, "score", "system", "item", average=False)
    w = [w for w in res.warnings if w.kind == "missing_rows"]
    assert len(w) == 1 and "2 row(s)" in w[0].message and "system" in w[0].message
    assert res.fit.nobs == len(df) - 2
    v = _vca_toy()
    v.loc[[1, 2, 3], "rater"] = np.nan
    with Unchanged(v):
        res = me.variance_components(v, "y", "item", ["rater"])
    w = [w for w in res.warnings if w.kind == "missing_rows"]
    assert len(w) == 1 and "3 row(s)" in w[0].message and "'rater' (3)" in w[0].message
    assert res.nobs == len(v) - 3
    d = _disparity_toy()
    d.loc[[0, 1], "language"] = None
    with Unchanged(d):
        res = me.language_disparity(d)
    w = [w for w in res.warnings if w.kind == "missing_rows"]
    assert len(w) == 1 and "2 record(s)" in w[0].message and "'language' (2)" in w[0].message
    assert res.fit.nobs == len(d) - 2 and 0 not in set(res.records["row"])
