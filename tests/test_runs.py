"""Tests of mixedeval.resampling.runs (Fraile-Hernández & Peñas 2025): metrics from sufficient
statistics against hand-computed cases, the published pooled bootstrap (order statistics,
closed-form spread), the interval for the expected score and the prediction intervals against
closed forms and small coverage simulations, the run-level baselines against scipy's formulas
on the same draws, degenerate resamples, the variance split, determinism, and bad input."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mixedeval.errors import DataError
from mixedeval.resampling import RunIntervalsResult, pooled_run_bootstrap, run_intervals
from mixedeval.resampling import _draws as dr
from mixedeval.resampling import _stats
from mixedeval.resampling.runs import _run_level_rows


def ri(**kw):
    kw.setdefault("progress", False)
    kw.setdefault("random_state", 0)
    return run_intervals(**kw)


def method(res, name):
    t = res.intervals
    return t[t["method"] == name].iloc[0]


def simulate_runs(rng, l=300, n=3, run_sd=0.0):
    """Binary task: instance difficulty p_i ~ Beta(4, 2) (expected accuracy 2/3), run r correct
    on i with probability p_i shifted by a run effect on the logit scale (sd ``run_sd``)."""
    p = rng.beta(4, 2, l)
    y = rng.integers(0, 2, l)
    logit = np.log(p / (1 - p))[None, :] + rng.normal(0, run_sd, (n, 1))
    correct = rng.random((n, l)) < 1 / (1 + np.exp(-logit))
    return y, np.where(correct, y, 1 - y)


# ---------------------------------------------------------------------------- metrics

def test_metrics_hand_computed():
    y = np.array([1, 1, 0, 0, 1])
    pred = np.array([[1, 0, 1, 0, 1],   # tp 2 fp 1 fn 1: F1 = 4/6, acc 3/5
                     [0, 0, 0, 0, 0]])  # tp 0 fp 0 fn 3: F1 = 0, acc 2/5
    r = ri(y_true=y, y_pred=pred, metric="f1", n_resamples=50)
    np.testing.assert_allclose(r.runs["score"], [4 / 6, 0.0], rtol=1e-12)
    r = ri(y_true=y, y_pred=pred, metric="accuracy", n_resamples=50)
    np.testing.assert_allclose(r.runs["score"], [0.6, 0.4], rtol=1e-12)
    assert r.estimate == pytest.approx(0.5)
    # micro F1 over all labels of single-label data is accuracy
    r = ri(y_true=y, y_pred=pred, metric="micro_f1", n_resamples=50)
    np.testing.assert_allclose(r.runs["score"], [0.6, 0.4], rtol=1e-12)
    # macro F1 by hand: a tp1 fp1 -> 2/3; b tp1 fp1 fn1 -> 1/2; c fn1 -> 0
    y3 = np.array(["a", "b", "b", "c"])
    p3 = np.array([["a", "b", "a", "b"]])
    f_a, f_b, f_c = 2 / 3, 0.5, 0.0
    r = ri(y_true=y3, y_pred=p3, metric="macro_f1", n_resamples=20)
    assert r.runs["score"][0] == pytest.approx((f_a + f_b + f_c) / 3)
    labels = ["a", "b", "c", "d"]  # "d": tp + fp + fn = 0 -> zero_division
    for zd, expect in ((0.0, (f_a + f_b + f_c + 0) / 4), (1.0, (f_a + f_b + f_c + 1) / 4),
                       (np.nan, (f_a + f_b + f_c) / 3)):
        r = ri(y_true=y3, y_pred=p3, metric="macro_f1", labels=labels, zero_division=zd, n_resamples=20)
        assert r.runs["score"][0] == pytest.approx(expect)
    # binary F1: resamples without any gold or predicted positive have tp + fp + fn = 0
    y1, p1 = np.array([1, 0, 0, 0, 0, 0]), np.zeros((1, 6), int)
    frac = (5 / 6) ** 6
    for zd in (0.0, 1.0, np.nan):
        r = ri(y_true=y1, y_pred=p1, metric="f1", zero_division=zd, n_resamples=4000)
        d = r.distributions["per_run"][:, 0]
        assert r.runs["score"][0] == 0.0  # observed: fn = 1
        if np.isnan(zd):
            assert abs(np.isnan(d).mean() - frac) < 0.03 and any(w.kind == "undefined_draws" for w in r.warnings)
        else:
            assert abs((d == zd).mean() - (frac if zd == 1.0 else 1.0)) < 0.03
    # numeric per-item scores
    r = ri(y_pred=np.array([[0.5, 1.0], [0.0, 0.5]]), metric="mean", n_resamples=20)
    np.testing.assert_allclose(r.runs["score"], [0.75, 0.25])


def test_table_input_matches_arrays():
    rng = np.random.default_rng(1)
    y, pred = simulate_runs(rng, l=40, n=3)
    df = pd.DataFrame({
        "item": np.tile(np.arange(40), 3), "run": np.repeat(["r0", "r1", "r2"], 40),
        "prediction": pred.ravel(), "target": np.tile(y, 3),
    }).sample(frac=1.0, random_state=0)  # rows in any order
    shuffled = ri(data=df, metric="f1", n_resamples=200)
    a = ri(data=df.sort_values(["item", "run"]), metric="f1", n_resamples=200)
    b = ri(y_true=y, y_pred=pred, metric="f1", n_resamples=200)
    pd.testing.assert_frame_equal(a.intervals, b.intervals)
    np.testing.assert_allclose(shuffled.runs.set_index("run").loc[["r0", "r1", "r2"], "score"], b.runs["score"])
    assert shuffled.estimate == pytest.approx(b.estimate)
    original = df.copy()
    pooled_run_bootstrap(df, n_resamples=100, progress=False)
    pd.testing.assert_frame_equal(df, original)


# ---------------------------------------------------------------------------- published method

def test_pooled_bootstrap_order_statistics_and_closed_form():
    rng = np.random.default_rng(2)
    y, pred = simulate_runs(rng, l=400, n=4)
    res = pooled_run_bootstrap(y_true=y, y_pred=pred, random_state=3, progress=False)
    d = np.sort(res.bootstrap_distribution)
    assert res.n_resamples == 5000 and res.order_statistics == (125, 4875)
    assert res.table.loc[0, "conf_low"] == res.conf_low and res.to_frame().equals(res.table)
    assert (res.conf_low, res.conf_high) == (d[124], d[4874])
    assert res.estimate == pytest.approx(d.mean())
    p = (pred == y).mean()  # pooled accuracy over the l x n pairs
    assert res.observed == pytest.approx(p)
    # each pooled test set is l Bernoulli(p) draws: SD = sqrt(p (1 - p) / l)
    assert res.std_error == pytest.approx(np.sqrt(p * (1 - p) / 400), rel=0.05)
    # same draws inside run_intervals with the same random_state
    r = ri(y_true=y, y_pred=pred, random_state=3)
    row = method(r, "pooled_instance_bootstrap")
    assert (row["conf_low"], row["conf_high"]) == (res.conf_low, res.conf_high)
    assert "predictive" in res.interpretation and res.to_frame().shape == (1, 12)
    b99 = pooled_run_bootstrap(y_true=y, y_pred=pred, n_resamples=1000, level=0.9, random_state=3, progress=False)
    assert b99.order_statistics == (50, 950)


def test_pooled_interval_is_predictive_not_a_confidence_interval():
    """The pooled interval does not shrink with more runs and covers a fresh single run on a
    fresh test set at about the nominal rate, while the instance-bootstrap interval for the
    expected score is much narrower and covers the expected score at the nominal rate."""
    rng = np.random.default_rng(4)
    reps, l, n = 120, 200, 5
    truth = 4 / 6
    cover_exp = cover_new = cover_pooled_exp = 0
    widths = []
    for _ in range(reps):
        y, pred = simulate_runs(rng, l=l, n=n)
        r = ri(y_true=y, y_pred=pred, n_resamples=300, random_state=rng)
        inst, pooled = method(r, "instance_bootstrap"), method(r, "pooled_instance_bootstrap")
        y_new, pred_new = simulate_runs(rng, l=l, n=1)
        new_score = (pred_new[0] == y_new).mean()
        cover_exp += inst["conf_low"] <= truth <= inst["conf_high"]
        cover_new += pooled["conf_low"] <= new_score <= pooled["conf_high"]
        cover_pooled_exp += pooled["conf_low"] <= truth <= pooled["conf_high"]
        widths.append((pooled["conf_high"] - pooled["conf_low"]) / (inst["conf_high"] - inst["conf_low"]))
    assert 0.88 <= cover_exp / reps <= 0.99
    assert 0.85 <= cover_new / reps <= 0.99
    assert cover_pooled_exp / reps >= 0.99
    assert np.mean(widths) > 1.3


def test_prediction_interval_same_test_set_coverage():
    """prediction_t covers the score of a new run on the same test set ~95% of the time."""
    rng = np.random.default_rng(5)
    hits, reps = 0, 300
    for _ in range(reps):
        p = rng.beta(4, 2, 300)  # one test set (fixed difficulties), runs vary
        correct = rng.random((7, 300)) < p
        scores = correct.mean(axis=1)
        m, s = scores[:6].mean(), scores[:6].std(ddof=1)
        r = ri(y_pred=correct[:6].astype(float), metric="mean", n_resamples=50, random_state=rng)
        row = method(r, "prediction_t")
        half = stats.t.ppf(0.975, 5) * s * np.sqrt(1 + 1 / 6)
        assert row["conf_low"] == pytest.approx(m - half) and row["conf_high"] == pytest.approx(m + half)
        hits += row["conf_low"] <= scores[6] <= row["conf_high"]
    assert 0.91 <= hits / reps <= 0.985


# ---------------------------------------------------------------------------- expected score

def test_instance_bootstrap_closed_form_se():
    rng = np.random.default_rng(6)
    y, pred = simulate_runs(rng, l=500, n=4)
    r = ri(y_true=y, y_pred=pred, n_resamples=8000)
    ybar = (pred == y).mean(axis=0)  # per-instance mean correctness over runs
    se = np.sqrt(np.var(ybar) / 500)  # plug-in SE of the mean of l cluster means
    assert method(r, "instance_bootstrap")["std_error"] == pytest.approx(se, rel=0.04)
    per_run = r.distributions["per_run"]
    assert per_run.shape == (8000, 4)
    np.testing.assert_allclose(r.runs["std_error"], np.sqrt(np.var(pred == y, axis=1) / 500), rtol=0.05)


def test_variance_split_accuracy_exact():
    rng = np.random.default_rng(7)
    y, pred = simulate_runs(rng, l=150, n=5)
    r = ri(y_true=y, y_pred=pred, n_resamples=100)
    C = (pred == y).T.astype(float)  # (l, n)
    l, n = C.shape
    g, ri_, cj = C.mean(), C.mean(axis=1, keepdims=True), C.mean(axis=0, keepdims=True)
    ms_a = n * ((ri_ - g) ** 2).sum() / (l - 1)
    ms_e = ((C - ri_ - cj + g) ** 2).sum() / ((l - 1) * (n - 1))
    v = r.variance.set_index("component")["variance"]
    assert v["run_to_run"] == pytest.approx(np.var(C.mean(axis=0), ddof=1), rel=1e-12)
    assert v["test_set"] == pytest.approx(max(0, ms_a - ms_e) / (n * l), rel=1e-12)
    assert v["total"] == pytest.approx(v["test_set"] + v["run_to_run"], rel=1e-12)
    vc = method(r, "variance_components")
    assert vc["std_error"] == pytest.approx(np.sqrt(v["test_set"] + v["run_to_run"] / n), rel=1e-12)
    pc = method(r, "prediction_components")
    assert pc["std_error"] == pytest.approx(np.sqrt(2 * v["test_set"] + v["run_to_run"] * (1 + 1 / n)), rel=1e-12)


@pytest.mark.parametrize("metric", ["f1", "macro_f1"])
def test_variance_split_f1_agrees_with_instance_bootstrap(metric):
    """Without run effects the instance-bootstrap variance of the run average estimates
    V_test + V_run / n; the linearised (influence-value) split must agree with it."""
    rng = np.random.default_rng(11)
    y, pred = simulate_runs(rng, l=600, n=12)
    r = ri(y_true=y, y_pred=pred, metric=metric, n_resamples=4000)
    v = r.variance.set_index("component")["variance"]
    boot_var = method(r, "instance_bootstrap")["std_error"] ** 2
    assert v["test_set"] + v["run_to_run"] / 12 == pytest.approx(boot_var, rel=0.15)
    assert 0 < v["test_set"] < v["total"]


def test_run_effect_warning_and_resampled_runs():
    rng = np.random.default_rng(8)
    y, pred = simulate_runs(rng, l=400, n=5, run_sd=0.6)
    r = ri(y_true=y, y_pred=pred, n_resamples=2000)
    assert any(w.kind == "run_effect" for w in r.warnings)
    rr = ri(y_true=y, y_pred=pred, n_resamples=2000, resample_runs=True)
    fixed, both = method(r, "instance_bootstrap"), method(rr, "instance_run_bootstrap")
    assert both["std_error"] > 1.3 * fixed["std_error"]
    assert method(r, "variance_components")["std_error"] > 1.3 * fixed["std_error"]
    y, pred = simulate_runs(rng, l=400, n=5, run_sd=0.0)
    assert not any(w.kind == "run_effect" for w in ri(y_true=y, y_pred=pred, n_resamples=100).warnings)


# ---------------------------------------------------------------------------- run-level baselines

def test_bca_and_percentile_match_scipy_on_same_draws():
    x = np.array([0.61, 0.64, 0.58, 0.66, 0.63, 0.70, 0.59, 0.62])
    res = stats.bootstrap((x,), np.mean, method="BCa", n_resamples=3000, random_state=1)
    lo, hi = _stats.intervals(np.array([x.mean()]), res.bootstrap_distribution[None, :], "bca", 0.95,
                              [((x.sum() - x) / 7)[None, :]])  # the package's one BCa, on scipy's draws
    np.testing.assert_allclose([lo[0], hi[0]], [res.confidence_interval.low, res.confidence_interval.high], rtol=1e-12)
    pct = stats.bootstrap((x,), np.mean, method="percentile", n_resamples=20_000, random_state=2)
    r = ri(y_pred=np.tile(x[:, None], (1, 3)), metric="mean", n_resamples=20_000)
    row = method(r, "percentile")
    np.testing.assert_allclose([row["conf_low"], row["conf_high"]],
                               [pct.confidence_interval.low, pct.confidence_interval.high], atol=0.002)
    bca = method(r, "bca")
    np.testing.assert_allclose([bca["conf_low"], bca["conf_high"]],
                               [res.confidence_interval.low, res.confidence_interval.high], atol=0.003)
    t = method(r, "t")
    assert (t["conf_low"], t["conf_high"]) == pytest.approx(
        stats.t.interval(0.95, 7, loc=x.mean(), scale=stats.sem(x)), rel=1e-12)


def test_bootstrap_t_degenerate_resamples_hand_checked():
    scores = np.array([0.60, 0.65, 0.71])
    ss = np.random.SeedSequence(9)
    rows, warns = _run_level_rows(scores, 4000, ss, 0.95)
    bt = [r for r in rows if r["method"] == "bootstrap_t"][0]
    # the same draws, by the block scheme: block i of 64 resamples from its own generator
    idx = np.concatenate([dr.block_generator(ss, i).integers(0, 3, size=(64, 3), dtype=np.int32)
                          for i in range(-(-4000 // 64))])[:4000]
    x = scores[idx]
    deg = np.ptp(x, axis=1) == 0
    assert bt["n_degenerate"] == deg.sum() and abs(deg.mean() - 1 / 9) < 0.02  # P(same run 3 times) = 3/27
    m, se = scores.mean(), scores.std(ddof=1) / np.sqrt(3)
    t = (x[~deg].mean(1) - m) / (x[~deg].std(1, ddof=1) / np.sqrt(3))
    q = np.quantile(t, [0.025, 0.975])
    assert (bt["conf_low"], bt["conf_high"]) == pytest.approx((m - q[1] * se, m - q[0] * se), rel=1e-12)
    assert any(w.kind == "degenerate_resamples" for w in warns)


def test_identical_runs_and_single_run():
    y = np.array([1, 0, 1, 1, 0, 1])
    pred = np.tile(np.array([1, 0, 0, 1, 0, 1]), (3, 1))
    r = ri(y_true=y, y_pred=pred, n_resamples=200)
    for m in ("t", "percentile", "bca", "bootstrap_t"):
        row = method(r, m)
        assert row["conf_low"] == row["conf_high"] == pytest.approx(5 / 6)
    assert any(w.kind == "degenerate" for w in r.warnings)
    one = ri(y_true=y, y_pred=pred[:1], n_resamples=200)
    assert np.isnan(method(one, "t")["conf_low"]) and np.isnan(method(one, "prediction_t")["conf_low"])
    assert np.isfinite(method(one, "pooled_instance_bootstrap")["conf_low"])
    assert np.isfinite(method(one, "instance_bootstrap")["conf_low"])
    assert any(w.kind == "too_few_runs" for w in one.warnings)
    assert isinstance(one, RunIntervalsResult) and "intervals" in repr(one) and one.to_dict()["variance"]


def test_determinism_and_chunk_invariance():
    rng = np.random.default_rng(10)
    y, pred = simulate_runs(rng, l=120, n=4)
    for metric in ("accuracy", "macro_f1"):
        kw = dict(y_true=y, y_pred=pred, metric=metric, resample_runs=metric == "macro_f1")
        a = ri(n_resamples=500, random_state=3, **kw)
        for cs in (1, 7, 64, 10_000):  # block-seeded: the chunk size is only the progress step
            b = ri(n_resamples=500, random_state=3, chunk_size=cs, **kw)
            pd.testing.assert_frame_equal(a.intervals, b.intervals)
            pd.testing.assert_frame_equal(a.runs, b.runs)
            for k, v in a.distributions.items():
                np.testing.assert_array_equal(v, b.distributions[k])
        longer = ri(n_resamples=700, random_state=3, **kw)
        for k, v in a.distributions.items():
            np.testing.assert_array_equal(v, longer.distributions[k][:500])  # a prefix of a longer run
        c = ri(n_resamples=500, random_state=4, **kw)
        assert not a.intervals.equals(c.intervals)
        assert a.table is a.intervals
    p1 = pooled_run_bootstrap(y_true=y, y_pred=pred, n_resamples=300, random_state=np.random.default_rng(2),
                              progress=False)
    p2 = pooled_run_bootstrap(y_true=y, y_pred=pred, n_resamples=300, random_state=np.random.default_rng(2),
                              chunk_size=1, progress=False)
    np.testing.assert_array_equal(p1.bootstrap_distribution, p2.bootstrap_distribution)


# ---------------------------------------------------------------------------- bad input

def test_bad_input():
    y = np.array([1, 0, 1, 1])
    pred = np.array([[1, 0, 0, 1], [1, 1, 1, 1]])
    with pytest.raises(DataError, match="metric"):
        ri(y_true=y, y_pred=pred, metric="auc")
    with pytest.raises(DataError, match="zero_division"):
        ri(y_true=y, y_pred=pred, metric="macro_f1", zero_division="warn")
    with pytest.raises(DataError, match="pos_label"):
        ri(y_true=y, y_pred=pred, metric="f1", pos_label="yes")
    with pytest.raises(DataError, match="one gold label per item"):
        ri(y_true=y[:3], y_pred=pred)
    with pytest.raises(DataError, match="y_true"):
        ri(y_pred=pred, metric="accuracy")
    with pytest.raises(DataError, match="missing"):
        ri(y_true=y, y_pred=np.array([[1, None, 0, 1]], dtype=object))
    with pytest.raises(DataError, match="non-finite"):
        ri(y_pred=np.array([[0.5, np.nan]]), metric="mean")
    with pytest.raises(DataError, match="level"):
        ri(y_true=y, y_pred=pred, level=1.5)
    with pytest.raises(DataError, match="either"):
        ri(data=pd.DataFrame({"item": [1]}), y_true=y, y_pred=pred)
    df = pd.DataFrame({"item": [1, 2, 1, 2], "run": [0, 0, 1, 1], "prediction": [1, 0, 1, 0],
                       "target": [1, 0, 1, 0]})
    with pytest.raises(DataError, match=r"predictions are missing"):
        ri(data=df.iloc[:3])
    with pytest.raises(DataError, match="gold label"):
        ri(data=df.assign(target=[1, 0, 0, 0]))
    with pytest.raises(DataError, match="'target'"):
        ri(data=df.drop(columns="target"))
    with pytest.raises(DataError, match="duplicated"):
        ri(data=pd.concat([df, df.iloc[:1]]))
