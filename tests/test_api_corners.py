"""Issue 26 point 6: API corners. Custom contrast weights that are not numbers, glmm weights= of
the wrong kind, a back-quoted column as the term of a power simulation, names holding matplotlib
math text in plots and the report, and numbers R cannot compute with: each is a DataError naming
what is wrong (or, for the term and the names, simply works)."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.errors import DataError

MATH = r"$\frac{a}{b$"  # an unbalanced math-text string: matplotlib's parser fails on it


def table(seed: int = 0, n_items: int = 30, systems=("a", "b", "c"), system_col: str = "system") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = len(systems)
    item = np.repeat([f"i{j:02d}" for j in range(n_items)], k)
    sys_ = np.tile(list(systems), n_items)
    u = np.repeat(rng.normal(size=n_items), k)
    y = u + 0.4 * np.tile(np.arange(k), n_items) + rng.normal(size=item.size)
    return pd.DataFrame({"score": y, system_col: sys_, "item": item,
                         "count": rng.poisson(3.0, size=item.size).astype(float),
                         "correct": (y > 0.4).astype(int)})


@pytest.fixture(scope="module")
def fit():
    return me.lmm("score ~ system + (1|item)", table())


# ------------------------------------------------------------------------------ contrast weights
@pytest.mark.parametrize("weights, position, shown", [
    ([None, 1, 0], 0, "None"),
    ([1, float("nan"), -1], 1, "nan"),
    (["1); system('x')", "-1", 0], 0, "\"1); system('x')\""),
    ([1, -1, True], 2, "True"),
    ([1, -1, np.inf], 2, "inf"),
])
def test_custom_contrast_weights_must_be_numbers(fit, weights, position, shown):
    emm = fit.emmeans("system")
    with pytest.raises(DataError) as exc:
        emm.contrasts(method={"b vs a": weights})
    msg = str(exc.value)
    assert f"custom contrast 'b vs a': weight {position} (0-based) is {shown}" in msg
    assert "weights must be finite numbers" in msg


def test_valid_custom_contrast_equals_the_pairwise_difference(fit):
    """Hand-derived: the weights (-1, 1, 0) give mean(b) - mean(a), emmeans' revpairwise 'b - a'."""
    emm = fit.emmeans("system")
    custom = emm.contrasts(method={"b - a": [-1, 1, 0]}, adjust="none").table
    rev = emm.contrasts(method="revpairwise", adjust="none").table.set_index("contrast")
    t = emm.table.set_index("system")["emmean"]
    assert custom["estimate"].iloc[0] == pytest.approx(t["b"] - t["a"], rel=1e-8)
    assert custom["std_error"].iloc[0] == pytest.approx(rev.loc["b - a", "std_error"], rel=1e-8)


def test_glmm_custom_contrast_weights_are_checked_too():
    g = me.glmm("correct ~ system + (1|item)", table(), family="binomial")
    with pytest.raises(DataError, match=r"custom contrast 'x': weight 1 \(0-based\) is None"):
        g.emmeans("system").contrasts(method={"x": [1, None, 0]})


# ------------------------------------------------------------------------------ glmm weights=
@pytest.mark.parametrize("weights, fragment", [
    ({"a": 1}, "got dict {'a': 1}"),
    ({1, 2}, "got set"),
    (5, "got int 5"),
    (["x"] * 90, "not numbers"),
])
def test_glmm_weights_of_the_wrong_kind_are_a_data_error(weights, fragment):
    df = table()
    df["prop"] = df["correct"].astype(float)
    with pytest.raises(DataError) as exc:
        me.glmm("prop ~ system + (1|item)", df, family="binomial", weights=weights)
    msg = str(exc.value)
    assert "weights= must be the name of a data column, or a list, numpy array or pandas Series" in msg
    assert fragment in msg


def test_glmm_weights_as_a_list_still_fit():
    df = table()
    df["prop"] = df["correct"].astype(float)
    a = me.glmm("prop ~ system + (1|item)", df, family="binomial", weights=[1.0] * len(df))
    b = me.glmm("correct ~ system + (1|item)", df, family="binomial")
    np.testing.assert_allclose(a.fixed["estimate"], b.fixed["estimate"], rtol=1e-6)


# ------------------------------------------------------------------------------ power of a back-quoted column
def test_power_tests_a_back_quoted_column():
    """term='my system' (or with back-quotes) gives the numbers of the same data with a syntactic name."""
    quoted = table(systems=("a", "b"), system_col="my system")
    plain = quoted.rename(columns={"my system": "sys"})
    f_q = me.lmm("score ~ `my system` + (1|item)", quoted)
    f_p = me.lmm("score ~ sys + (1|item)", plain)
    ref = me.power(f_p, 0.3, term="sys", n_sim=4, random_state=5).simulations
    for term in ("my system", "`my system`"):
        got = me.power(f_q, 0.3, term=term, n_sim=4, random_state=5).simulations
        np.testing.assert_allclose(got["p_value"], ref["p_value"], rtol=1e-8)
        np.testing.assert_allclose(got["chisq"], ref["chisq"], rtol=1e-8)
    with pytest.raises(DataError, match="is not a fixed-effect term"):
        me.power(f_q, 0.3, term="my sys", n_sim=2)


# ------------------------------------------------------------------------------ names drawn as plain text
def test_math_text_names_fail_in_matplotlib_without_the_fix():
    """The case is real: matplotlib parses '$...$' as math text and fails on MATH."""
    from matplotlib.figure import Figure

    fig = Figure()
    fig.add_subplot().set_title(MATH)
    with pytest.raises(ValueError):
        fig.savefig(__import__("io").BytesIO(), format="svg")


def test_report_figures_draw_names_as_plain_text():
    from mixedeval._report.figures import interval_plot, to_data_uri

    fig = interval_plot([MATH, "b"], [0.1, 0.2], [0.0, 0.1], [0.2, 0.3], title=MATH)
    assert to_data_uri(fig, "svg").startswith("data:image/svg+xml;base64,")
    assert to_data_uri(fig, "png").startswith("data:image/png;base64,")
    from matplotlib.text import Text

    texts = [t for t in fig.findobj(Text) if t.get_text() == MATH]
    assert texts and not any(t.get_parse_math() for t in texts)


def test_full_report_with_a_math_text_system_name(tmp_path):
    df = table(systems=(MATH, "b", "c"))
    fit = me.lmm("score ~ system + (1|item)", df)
    emm = fit.emmeans("system")
    con = emm.contrasts()
    diag = fit.diagnose(n_sim=20, group="system")
    from mixedeval.diagnostics.plots import plot_residuals_by_group

    plot_residuals_by_group(diag).savefig(tmp_path / "group.svg")  # a plot drawn by the user: plain text too
    path = me.report(fit, emm, con, diag, path=tmp_path / "math.html", data=df, n_sim=20, progress=False)
    text = path.read_text(encoding="utf-8")
    assert "this section failed" not in text
    assert r"$\frac{a}{b$" in text  # the name, as given (HTML needs no escaping for it)


# ------------------------------------------------------------------------------ numbers R cannot compute with
def test_r_itself_fails_on_a_poisson_count_of_1e300(R):
    """Why the guard exists: lme4 stops with a numerical error, not a message about the data."""
    msg = R('d <- data.frame(g = factor(rep(1:10, each = 5)), x = seq(-1, 1, length.out = 50)); '
            'set.seed(1); d$y <- rpois(50, 3); d$y[1] <- 1e300; '
            'tryCatch({lme4::glmer(y ~ x + (1|g), data = d, family = poisson); "fitted"}, '
            'error = function(e) conditionMessage(e))')
    assert str(msg[0]) != "fitted"


@pytest.mark.parametrize("family, formula, column, value, fragment", [
    ("poisson", "count ~ system + (1|item)", "count", 1e300, "beyond +-1e+150"),
    ("poisson", "count ~ system + (1|item)", "count", 3e9, "above R's largest integer 2,147,483,647"),
    ("gaussian", "score ~ system + (1|item)", "score", -1e200, "beyond +-1e+150"),
    ("gaussian", "score ~ system + x + (1|item)", "x", 1e200, "column 'x' has 1 value(s) beyond"),
])
def test_numbers_r_cannot_compute_with_are_refused_before_r(family, formula, column, value, fragment, monkeypatch):
    from mixedeval.engine import _bridge

    df = table()
    df["x"] = np.linspace(-1, 1, len(df))
    df.loc[3, column] = value

    def no_r(*a, **k):
        raise AssertionError("R was called")

    monkeypatch.setattr(_bridge, "fit_and_summarise", no_r)
    monkeypatch.setattr(_bridge, "glmm_fit_and_summarise", no_r)
    t0 = time.perf_counter()
    with pytest.raises(DataError) as exc:
        if family == "gaussian":
            me.lmm(formula, df)
        else:
            me.glmm(formula, df, family=family)
    assert time.perf_counter() - t0 < 5
    msg = str(exc.value)
    assert fragment in msg and repr(column) in msg


def test_binomial_trials_above_the_integer_range_are_refused():
    df = table()
    df["prop"] = 0.5
    with pytest.raises(DataError, match="above R's largest integer"):
        me.glmm("prop ~ system + (1|item)", df, family="binomial", weights=[4e9] * len(df))


def test_ordinary_values_still_fit():
    df = table()
    df["count"] = np.random.default_rng(1).poisson(50_000.0, len(df)).astype(float)  # large, within R's integers
    g = me.glmm("count ~ system + (1|item)", df, family="poisson")
    assert np.isfinite(g.fixed["estimate"]).all()
