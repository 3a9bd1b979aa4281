"""The headline of me.compare_logs (mixedeval.workflows._paired) against R, computed here in R:

* the paired question-level t of Miller (2024) = ``t.test(x, y, paired = TRUE)``;
* the clustered SE = ``sandwich::vcovCL(lm(d ~ 1), cluster = ~cluster, type = "HC0",
  cadjust = TRUE)`` (Inspect AI's ``stderr(cluster=)``), t interval on G - 1 df;
* the between-run variance pooled over systems = the ANOVA estimate from R's ``anova(lm(y ~ item
  + run))`` sums of squares per system, and lme4's REML estimate in a balanced design; its
  preliminary F test = R's ``anova(lm(y ~ sys * item + sys:run))`` F test of ``sys:run``;
* ``p_adj`` of NaN p-values = ``p.adjust`` (NA ignored, n = number of non-missing);
* the ``cluster`` column of a generic table read by me.read_eval_logs and used by me.compare_logs.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.workflows import _paired
from mixedeval.workflows.logs.design import reduce_epochs as epoch_means

RTOL = 1e-10


def _put(name: str, values, strings: bool = False) -> None:
    import rpy2.robjects as ro

    ro.globalenv[name] = ro.StrVector([str(v) for v in values]) if strings else ro.FloatVector(
        np.asarray(values, dtype=float))


def _long(x: np.ndarray, y: np.ndarray, task: str = "t", clusters=None) -> pd.DataFrame:
    n = len(x)
    df = pd.DataFrame({"system": ["a"] * n + ["b"] * n, "task": task, "item": [f"q{i:03d}" for i in range(n)] * 2,
                       "run": "1", "score": np.concatenate([x, y])})
    if clusters is not None:
        df["cluster"] = list(clusters) * 2
    return df


@pytest.mark.parametrize("kind", ["continuous", "epoch means of 0/1"])
def test_unclustered_equals_r_paired_t_test(R, kind):
    rng = np.random.default_rng(11)
    n = 47
    if kind == "continuous":
        x, y = rng.normal(0.6, 0.2, n), rng.normal(0.5, 0.25, n)
    else:
        x, y = rng.binomial(3, 0.6, n) / 3, rng.binomial(3, 0.5, n) / 3
    row = _paired.paired_differences(_long(x, y), ["a", "b"], level=0.9).iloc[0]
    _put("x", x)
    _put("y", y)
    tt = R("tt <- t.test(x, y, paired = TRUE, conf.level = 0.9); "
           "c(tt$estimate, tt$stderr, tt$statistic, tt$parameter, tt$p.value, tt$conf.int)")
    got = row[["delta", "std_error", "t_value", "df", "p_value", "conf_low", "conf_high"]].to_numpy(dtype=float)
    np.testing.assert_allclose(got, tt, rtol=RTOL)
    assert row["n_items"] == n and row["method"] == _paired.METHOD


def _clustered_case(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sizes = rng.integers(1, 6, 17)  # unequal clusters, some singletons
    cl = np.repeat([f"p{k}" for k in range(sizes.size)], sizes)
    shared = rng.normal(0, 0.3, sizes.size)[np.repeat(np.arange(sizes.size), sizes)]
    x = np.clip(0.6 + shared + rng.normal(0, 0.2, cl.size), 0, 1)
    y = np.clip(0.5 + shared + rng.normal(0, 0.2, cl.size), 0, 1)
    return x, y, cl


def test_clustered_se_equals_sandwich_vcovcl(R):
    rng = np.random.default_rng(12)
    x, y, cl = _clustered_case(rng)
    row = _paired.paired_differences(_long(x, y, clusters=cl), ["a", "b"], cluster="cluster").iloc[0]
    _put("d", x - y)
    _put("cl", cl, strings=True)
    se = R('sqrt(sandwich::vcovCL(lm(d ~ 1), cluster = ~cl, type = "HC0", cadjust = TRUE)[1, 1])')
    G = R("length(unique(cl))")
    np.testing.assert_allclose(row["std_error"], se, rtol=RTOL)
    assert row["df"] == G[0] - 1
    ci = R(f"mean(d) + c(-1, 1) * qt(0.975, {G[0] - 1}) * {float(se[0])!r}")
    np.testing.assert_allclose([row["conf_low"], row["conf_high"]], ci, rtol=RTOL)
    p = R(f"2 * pt(abs(mean(d) / {float(se[0])!r}), {G[0] - 1}, lower.tail = FALSE)")
    np.testing.assert_allclose(row["p_value"], p, rtol=RTOL)
    assert row["method"] == _paired.CLUSTER_METHOD


def test_clustered_se_equals_inspect_stderr_cluster():
    std = pytest.importorskip("inspect_ai.scorer._metrics.std")
    rng = np.random.default_rng(13)
    x, y, cl = _clustered_case(rng)
    d = x - y
    partition = [list(d[cl == c]) for c in pd.unique(cl)]
    se, _ = _paired.clustered_se(d, cl)
    np.testing.assert_allclose(se, std._clustered_stderr(partition), rtol=1e-12)


def test_singleton_clusters_are_the_hc0_se_times_the_cluster_correction(R):
    rng = np.random.default_rng(14)
    x, y = rng.normal(0.5, 0.2, 30), rng.normal(0.45, 0.2, 30)
    row = _paired.paired_differences(_long(x, y, clusters=range(30)), ["a", "b"], cluster="cluster").iloc[0]
    _put("d", x - y)
    # G = n: G / (G - 1) * sum (d - mean)^2 / n^2 = var(d) / n, the unclustered SE exactly
    np.testing.assert_allclose(row["std_error"], R("sd(d) / sqrt(length(d))"), rtol=RTOL)


def test_a_question_in_two_clusters_or_none_is_an_error():
    x = np.linspace(0, 1, 6)
    bad = _long(x, x[::-1], clusters=list("aabbcc"))
    bad.loc[0, "cluster"] = "z"  # item q000 is in cluster z for system a and a for system b
    with pytest.raises(me.DataError, match="different clusters"):
        _paired.paired_differences(bad, ["a", "b"], cluster="cluster")
    bad = _long(x, x[::-1], clusters=list("aabbcc"))
    bad.loc[3, "cluster"] = None
    with pytest.raises(me.DataError, match="no cluster"):
        _paired.paired_differences(bad, ["a", "b"], cluster="cluster")


def test_pooled_run_variance_equals_the_anova_estimates_from_r_and_lme4_reml(R):
    rng = np.random.default_rng(15)
    n, k = 25, 4
    tabs = [rng.normal(0, 1, (n, 1)) + rng.normal(0, 0.5, (1, k)) + rng.normal(0, 0.3, (n, k)) for _ in range(3)]
    est, df = _paired.pooled_run_variance(tabs)
    ss_run = ss_res = 0.0
    for y in tabs:  # per system: R's anova(lm(y ~ item + run)) sums of squares
        _put("yv", y.ravel())  # row-major: item-major
        a = R(f"item <- factor(rep(seq_len({n}), each = {k})); run <- factor(rep(seq_len({k}), {n})); "
              "a <- anova(lm(yv ~ item + run)); c(a['run', 'Sum Sq'], a['Residuals', 'Sum Sq'])")
        ss_run, ss_res = ss_run + a[0], ss_res + a[1]
    ms_run, ms_res = ss_run / (3 * (k - 1)), ss_res / (3 * (n - 1) * (k - 1))
    np.testing.assert_allclose(est, (ms_run - ms_res) / n, rtol=RTOL)
    assert df == 3 * (k - 1)
    # balanced and positive: the method-of-moments estimate is lme4's REML estimate of the run variance
    _put("yall", np.concatenate([y.ravel() for y in tabs]))
    reml = R(f"sys <- factor(rep(1:3, each = {n * k})); it <- factor(rep(rep(seq_len({n}), each = {k}), 3)); "
             f"rn <- factor(rep(rep(seq_len({k}), {n}), 3)); "
             "f <- lme4::lmer(yall ~ sys * it + (1 | sys:rn), REML = TRUE); "
             "as.data.frame(lme4::VarCorr(f))$vcov[1]")[0]
    np.testing.assert_allclose(est, reml, rtol=1e-6)
    # the preliminary F test (Bancroft's sometimes-pool rule): R's F test of the runs within systems
    an = _paired.run_anova(tabs)
    fr = R("a <- anova(lm(yall ~ sys * it + sys:rn)); c(a['sys:rn', 'F value'], a['sys:rn', 'Pr(>F)'], "
           "a['sys:rn', 'Df'], a['Residuals', 'Df'])")
    np.testing.assert_allclose([an.ms_run / an.ms_res, an.p_value, an.df_run, an.df_res], fr, rtol=RTOL)
    assert an.kept and an.p_value < _paired.RUN_PRETEST_LEVEL
    # no run effect beyond the question x run noise: truncated at 0; one run: no information
    flat = [rng.normal(0, 1, (n, 1)) + rng.normal(0, 0.3, (n, k)) - 0.0 for _ in range(2)]
    flat = [y - y.mean(axis=0, keepdims=True) for y in flat]  # identical run means
    assert _paired.pooled_run_variance(flat) == (0.0, 2.0 * (k - 1))
    assert _paired.pooled_run_variance([tabs[0][:, :1]]) == (0.0, np.inf)
    assert not _paired.run_anova(flat).kept and _paired.run_anova([tabs[0][:, :1]]) is None


def _anova_by_hand(tabs):
    """Pooled MS_run, MS_res, df_run, df_res, sum (R_s - 1) n_s of questions x runs tables (two-way
    ANOVA written out with double loops, independent of the package's vectorized code)."""
    ss_run = ss_res = df_run = df_res = w = 0.0
    for y in tabs:
        n, k = y.shape
        g = sum(sum(r) for r in y.tolist()) / (n * k)
        rows = [sum(y[i, :]) / k for i in range(n)]
        cols = [sum(y[:, j]) / n for j in range(k)]
        ss_run += n * sum((c - g) ** 2 for c in cols)
        ss_res += sum((y[i, j] - rows[i] - cols[j] + g) ** 2 for i in range(n) for j in range(k))
        df_run, df_res, w = df_run + k - 1, df_res + (n - 1) * (k - 1), w + (k - 1) * n
    return ss_run / df_run, ss_res / df_res, df_run, df_res, w


def test_run_se_adds_the_pooled_run_variance_with_its_df():
    from scipy import stats

    rng = np.random.default_rng(16)
    n = 30
    rows = []
    for s, shift, R in (("a", 0.1, 3), ("b", 0.0, 3), ("c", 0.05, 5)):
        base = rng.normal(0.5, 0.2, n)
        for r in range(R):
            sc = base + rng.normal(0, 0.1) + rng.normal(0, 0.05, n)
            rows.append(pd.DataFrame({"system": s, "task": "t", "item": range(n), "run": str(r), "score": sc + shift}))
    s = pd.concat(rows, ignore_index=True)
    out = _paired.paired_differences(s, ["a", "b", "c"], runs=True)
    tabs = [s[s.system == x].pivot(index="item", columns="run", values="score").to_numpy() for x in "abc"]
    s2, df_run = _paired.pooled_run_variance(tabs)
    assert s2 > 0 and df_run == 2 + 2 + 4
    ms_run, ms_res, dfr, dfe, w = _anova_by_hand(tabs)
    assert stats.f.sf(ms_run / ms_res, dfr, dfe) < _paired.RUN_PRETEST_LEVEL  # the run variance is kept
    np.testing.assert_allclose(s2, (ms_run - ms_res) * dfr / w, rtol=1e-12)
    q = s.groupby(["system", "item"])["score"].mean().unstack(0)
    for (_, row), (a, b, Ra, Rb) in zip(out.iterrows(), [("a", "b", 3, 3), ("a", "c", 3, 5), ("b", "c", 3, 5)]):
        d = (q[a] - q[b]).to_numpy()
        k = (1 / Ra + 1 / Rb) * dfr / w
        vq, vr = d.var(ddof=1) / n, s2 * (1 / Ra + 1 / Rb)
        np.testing.assert_allclose(row["std_error"], np.sqrt(vq + vr), rtol=1e-12)
        # Satterthwaite (1946) df of vq + k MS_run - k MS_res
        df = (vq + vr) ** 2 / (vq**2 / (n - 1) + (k * ms_run) ** 2 / dfr + (k * ms_res) ** 2 / dfe)
        np.testing.assert_allclose(row["df"], df, rtol=1e-12)
        assert row["method"] == _paired.RUNS_METHOD
    # the leaderboard's covariance: a difference of two systems has the pair's variance
    means, V = _paired.system_means(s, ["a", "b", "c"], runs=True)
    Vt = V["t"]
    for _, row in out.iterrows():
        a, b = row["system_a"], row["system_b"]
        np.testing.assert_allclose(Vt.loc[a, a] + Vt.loc[b, b] - 2 * Vt.loc[a, b], row["std_error"] ** 2, rtol=1e-10)
    # i.i.d. runs (no run shift): the preliminary test pools the run variance: the SE is sd(d) / sqrt(n)
    # on n - 1 df, plus RUN_NEGATIVE_SHARE (0.45) of the estimate when it is negative (MS_run < MS_res)
    kinds = set()
    for seed in range(40):
        r2 = np.random.default_rng(100 + seed)
        iid = pd.concat([pd.DataFrame({"system": x, "task": "t", "item": range(n), "run": str(r),
                                       "score": r2.normal(0.5, 0.05, n) + np.arange(n) / n})
                         for x in "ab" for r in range(3)], ignore_index=True)
        tabs = [iid[iid.system == x].pivot(index="item", columns="run", values="score").to_numpy() for x in "ab"]
        ms_run, ms_res, dfr, dfe, w = _anova_by_hand(tabs)
        if stats.f.sf(ms_run / ms_res, dfr, dfe) < _paired.RUN_PRETEST_LEVEL:
            continue
        row = _paired.paired_differences(iid, ["a", "b"], runs=True).iloc[0]
        q = iid.groupby(["system", "item"])["score"].mean().unstack(0)
        d = (q["a"] - q["b"]).to_numpy()
        vq = d.var(ddof=1) / n
        shrink = _paired.RUN_NEGATIVE_SHARE * (1 / 3 + 1 / 3) * (ms_run - ms_res) * dfr / w if ms_run < ms_res else 0.0
        np.testing.assert_allclose([row["std_error"], row["df"]], [np.sqrt(max(vq + shrink, vq / 4)), n - 1],
                                   rtol=1e-12)
        assert row["method"] == _paired.RUNS_METHOD
        means, V = _paired.system_means(iid, ["a", "b"], runs=True)  # the leaderboard's covariance agrees
        np.testing.assert_allclose(V["t"].loc["a", "a"] + V["t"].loc["b", "b"] - 2 * V["t"].loc["a", "b"],
                                   row["std_error"] ** 2, rtol=1e-10)
        kinds.add(shrink < 0)
        if kinds == {True, False}:
            break
    assert kinds == {True, False}  # both cases of a pooled run variance were checked


def test_two_runs_of_two_systems_use_the_few_df_rule_by_hand():
    """df_run <= RUN_FEW_DF (2 systems x 2 runs: 2 run df): the preliminary test at
    RUN_PRETEST_LEVEL_FEW_DF (0.5), no share of a negative estimate, df floored at RUN_MIN_DF;
    the formulas by hand (ANOVA sums of squares, Satterthwaite df) on data sets of each case."""
    from scipy import stats

    from mixedeval.workflows.logs.design import RUN_FEW_DF, RUN_MIN_DF, RUN_PRETEST_LEVEL_FEW_DF

    assert RUN_FEW_DF == 3 and RUN_PRETEST_LEVEL_FEW_DF == 0.5 and RUN_MIN_DF == 1.0
    n, seen = 30, set()
    for seed in range(400):
        r2 = np.random.default_rng(500 + seed)
        base = np.arange(n) / n
        sd_run = (0.0, 0.03)[seed % 2]
        s = pd.concat([pd.DataFrame({"system": x, "task": "t", "item": range(n), "run": str(r),
                                     "score": base + r2.normal(0, sd_run) + r2.normal(0.5, 0.05, n)})
                       for x in "ab" for r in range(2)], ignore_index=True)
        tabs = [s[s.system == x].pivot(index="item", columns="run", values="score").to_numpy() for x in "ab"]
        ms_run, ms_res, dfr, dfe, w = _anova_by_hand(tabs)
        assert dfr == 2
        p = stats.f.sf(ms_run / ms_res, dfr, dfe)
        case = "pooled, negative" if ms_run < ms_res else "kept" if p < 0.5 else "pooled"
        mid = 0.25 <= p < 0.5  # kept now, pooled by the rule at RUN_PRETEST_LEVEL
        row = _paired.paired_differences(s, ["a", "b"], runs=True).iloc[0]
        q = s.groupby(["system", "item"])["score"].mean().unstack(0)
        d = (q["a"] - q["b"]).to_numpy()
        vq = d.var(ddof=1) / n
        if case == "kept":
            k = (1 / 2 + 1 / 2) * dfr / w
            v = vq + k * (ms_run - ms_res)
            df = max(v**2 / (vq**2 / (n - 1) + (k * ms_run) ** 2 / dfr + (k * ms_res) ** 2 / dfe), 1.0)
            case += ", p in [0.25, 0.5)" if mid else ""
            case += ", df floored" if df == 1.0 else ""
        else:
            v, df = vq, n - 1.0  # no share of a negative estimate
        np.testing.assert_allclose([row["std_error"], row["df"]], [np.sqrt(v), df], rtol=1e-12)
        assert np.isfinite(row["conf_low"]) and np.isfinite(row["p_value"])
        # the vectorized rule (plan, benchmarks) is the same rule
        v2, df2 = _paired.balanced_run_se(vq, ms_run, ms_res, dfr, dfe, (1 / 2 + 1 / 2) * dfr / w, n)
        np.testing.assert_allclose([v2, df2], [v, df], rtol=1e-12)
        seen.add(case)
        if {"pooled, negative", "kept, p in [0.25, 0.5)"} <= seen and any("floored" in c for c in seen):
            break
    # (with 2 run df a pooled positive estimate does not occur: p >= 0.5 needs F < 1)
    assert {"pooled, negative", "kept, p in [0.25, 0.5)"} <= seen, seen
    assert any("floored" in c for c in seen), seen


def test_two_runs_cover_at_least_about_93_percent_with_run_effects():
    """The few-df rule's coverage with a strong run effect (2 systems x 2 runs, 30 questions, run SD
    0.6 on the logit scale; the atlas' data model, vectorized): the rule before it covered 89.1%
    (20,000 data sets); 3,000 here, MC SE ~0.005: the limit 0.91 is 3.7 SE below the rule's
    92.9% and 3.8 SE above the old rule's coverage."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import coverage_atlas as ca

    tab = ca.runs_rule_table(reps=3000, random_state=7, designs=((2, 2),), ns=(30,), sds=(0.6,))
    cov = tab.set_index("rule")["coverage"]
    assert cov["now"] >= 0.91, cov
    assert cov["before"] < cov["now"], cov


def test_nan_p_values_are_left_out_of_the_adjustment_as_r_does(R):
    rng = np.random.default_rng(17)
    frames = [_long(rng.normal(0.6, 0.2, 20), rng.normal(0.5, 0.2, 20), task="t1"),
              _long(np.array([0.7]), np.array([0.2]), task="t2"),  # one question: no SE, p is NaN
              _long(rng.normal(0.6, 0.2, 15), rng.normal(0.55, 0.2, 15), task="t3")]
    out = _paired.paired_differences(pd.concat(frames, ignore_index=True), ["a", "b"], adjust="holm",
                                     pooled_label="all")
    per = out[out["task"] != "all"]
    assert np.isnan(per["p_value"].iloc[1]) and np.isnan(per["p_adj"].iloc[1])
    p = per["p_value"].to_numpy()
    expect = R(f'p.adjust(c({float(p[0])!r}, NA, {float(p[2])!r}), "holm")')
    np.testing.assert_allclose(per["p_adj"].to_numpy(), expect, rtol=RTOL, equal_nan=True)
    pooled = out[out["task"] == "all"].iloc[0]  # a task without SE leaves the pooled SE undefined
    assert np.isnan(pooled["std_error"]) and np.isnan(pooled["p_value"]) and np.isnan(pooled["p_adj"])


def test_generic_table_carries_the_cluster_column():
    df = pd.DataFrame({"system": ["a", "a", "b", "b"], "item": ["1", "2", "1", "2"], "passage": ["p", "q", "p", "q"],
                       "acc": [1.0, 0.0, 1.0, 1.0]})
    logs = me.read_eval_logs(df, format="table", columns={"cluster": "passage"})
    assert list(logs.table.sort_values(["system", "item"])["cluster"]) == ["p", "q", "p", "q"]
    assert set(logs.table["metric"]) == {"acc"}  # the cluster is a key, not a metric
    logs2 = me.read_eval_logs(df.rename(columns={"passage": "cluster"}), format="table")
    assert "cluster" in logs2.table.columns
    assert "cluster" not in me.read_eval_logs(df.drop(columns="passage"), format="table").table.columns


def _clustered_logs(rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for i in range(36):
        p = rng.uniform(0.2, 0.9)
        for s, shift in (("base", 0.0), ("tuned", 0.1)):
            for e in range(3):
                rows.append({"system": s, "item": f"q{i}", "passage": f"p{i // 4}", "epoch": e,
                             "acc": float(rng.random() < min(p + shift, 1.0))})
    return pd.DataFrame(rows)


def test_compare_logs_cluster_headline_equals_sandwich_on_epoch_means(R):
    df = _clustered_logs(np.random.default_rng(18))
    res = me.compare_logs(df, metric="acc", format="table", cluster="passage", analysis="lmm", n_resamples=200,
                          random_state=1, progress=False)
    row = res.table.iloc[0]
    q = df.groupby(["system", "item", "passage"], as_index=False)["acc"].mean()
    w = q.pivot(index=["item", "passage"], columns="system", values="acc").reset_index()
    sign = 1.0 if row["system_a"] == "tuned" else -1.0
    _put("d", sign * (w["tuned"] - w["base"]).to_numpy())
    _put("cl", w["passage"], strings=True)
    np.testing.assert_allclose(row["std_error"], R('sqrt(sandwich::vcovCL(lm(d ~ 1), cluster = ~cl, type = "HC0", '
                                                   'cadjust = TRUE)[1, 1])'), rtol=RTOL)
    np.testing.assert_allclose(row["delta"], R("mean(d)"), rtol=RTOL)
    assert row["df"] == 8 and row["method"] == _paired.CLUSTER_METHOD
    assert res.provenance["cluster"].endswith("(9 clusters)")
    with pytest.raises(me.DataError, match="not a column|found in no log"):
        me.compare_logs(df, metric="acc", format="table", cluster="nope", analysis="lmm", n_resamples=50,
                        progress=False)


def test_epoch_means_keep_the_cluster():
    df = _clustered_logs(np.random.default_rng(19)).rename(columns={"passage": "cluster"})
    df["task"], df["run"] = "t", "1"
    avg = epoch_means(df.rename(columns={"acc": "score"}))
    assert len(avg) == 72 and avg.groupby("item")["cluster"].nunique().max() == 1


def test_compare_logs_with_runs_adds_the_pooled_run_variance(R):
    rng = np.random.default_rng(20)
    rows = []
    for s, p0 in (("base", 0.55), ("tuned", 0.65)):
        for r in range(3):
            shift = rng.normal(0, 0.08)
            for i in range(40):
                rows += [{"system": s, "item": f"q{i}", "run": f"seed{r}", "epoch": e,
                          "acc": float(rng.random() < p0 + shift)} for e in range(2)]
    df = pd.DataFrame(rows)
    res = me.compare_logs(df, metric="acc", format="table", analysis="lmm", n_resamples=100, random_state=2,
                          progress=False, plan=False)
    row = res.table.iloc[0]
    assert row["method"] == _paired.RUNS_METHOD
    em = df.groupby(["system", "run", "item"], as_index=False)["acc"].mean()  # epochs averaged
    ss_run = ss_res = 0.0
    for x in ("base", "tuned"):
        y = em[em.system == x].pivot(index="item", columns="run", values="acc")
        _put("yv", y.to_numpy().ravel())
        a = R(f"item <- factor(rep(seq_len({y.shape[0]}), each = {y.shape[1]})); "
              f"run <- factor(rep(seq_len({y.shape[1]}), {y.shape[0]})); a <- anova(lm(yv ~ item + run)); "
              "c(a['run', 'Sum Sq'], a['Residuals', 'Sum Sq'])")
        ss_run, ss_res = ss_run + a[0], ss_res + a[1]
    ms_run, ms_res = ss_run / 4, ss_res / (2 * 39 * 2)
    p_pre = R(f"pf({float(ms_run / ms_res)!r}, 4, 156, lower.tail = FALSE)")[0]  # the preliminary F test
    assert p_pre < _paired.RUN_PRETEST_LEVEL  # the run variance is kept
    s2 = max(0.0, (ms_run - ms_res) / 40)
    v = s2 * (1 / 3 + 1 / 3)
    k = (1 / 3 + 1 / 3) / 40
    q = em.groupby(["system", "item"])["acc"].mean().unstack(0)
    d = (q[row["system_a"]] - q[row["system_b"]]).to_numpy()
    _put("d", d)
    vq = R("var(d) / length(d)")[0]
    np.testing.assert_allclose(row["std_error"], np.sqrt(vq + v), rtol=RTOL)
    np.testing.assert_allclose(row["delta"], d.mean(), rtol=RTOL)
    assert v > 0
    satt = (vq + v) ** 2 / (vq**2 / 39 + (k * ms_run) ** 2 / 4 + (k * ms_res) ** 2 / 156)
    np.testing.assert_allclose(row["df"], satt, rtol=RTOL)
    # the headline is the leaderboard's top pair, signed for the better system
    assert res.headline.better == res.leaderboard["name"].iloc[0] and res.headline.estimate > 0
    assert res.p_value == pytest.approx(row["p_value"], rel=1e-12)
