"""me.rank_intervals: simultaneous rank intervals (Mogstad, Romano, Shaikh & Wilhelm 2024), the
rank distribution and compact letters.

R parity: the max-|t| critical value and the single-step adjusted p-values against
multcomp::glht(parm(est, vcov), Tukey contrasts) on the same estimates (both sides are Monte
Carlo / quasi-Monte-Carlo integrals: Monte-Carlo tolerances), the independent equal-variance
case against R's qtukey (deterministic), the letters against multcomp:::insert_absorb and
multcomp::cld on the same decisions (exact). Coverage by simulation.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import mixedeval as me
from mixedeval import _cld
from mixedeval._rankings import rank_matrix
from mixedeval.errors import DataError


def _r_vec(x) -> str:
    return "c(" + ", ".join(repr(float(v)) for v in np.ravel(x)) + ")"


def _r_names(names) -> str:
    return "c(" + ", ".join(f'"{n}"' for n in names) + ")"


def _random_vcov(k: int, rng: np.random.Generator, scale: float = 0.05) -> np.ndarray:
    A = rng.standard_normal((k, k))
    V = A @ A.T / k + np.eye(k) * 0.3
    return V * scale**2


@pytest.fixture(scope="module")
def glht(R):
    """multcomp's single-step critical value and adjusted p-values for estimates and a vcov."""
    R("suppressMessages(library(multcomp))")

    def run(names, est, V):
        k = len(names)
        R(f"nm <- {_r_names(names)}; est <- setNames({_r_vec(est)}, nm); "
          f"V <- matrix({_r_vec(V)}, {k}, {k}, dimnames = list(nm, nm)); "
          f"K <- contrMat(setNames(rep(1, {k}), nm), 'Tukey'); set.seed(20240101); "
          f"g <- glht(parm(est, V), linfct = K); s <- summary(g); "
          f"ci <- confint(g, level = 0.95)")
        return {"p_adj": R("as.numeric(s$test$pvalues)"), "estimate": R("as.numeric(s$test$coefficients)"),
                "std_error": R("as.numeric(s$test$sigma)"), "crit": float(R("attr(ci$confint, 'calpha')")[0]),
                "contrast": list(R("rownames(K)", raw=True))}
    return run


def test_critical_value_equals_studentized_range_for_independent_equal_variances(R):
    """k independent estimates with equal variances: max |Z_i - Z_j| / sqrt(2 v) is the studentized
    range over sqrt(2): qtukey(level, k, Inf) / sqrt(2) (deterministic in R)."""
    for k, level in [(4, 0.95), (7, 0.9)]:
        est = pd.Series(np.arange(k, dtype=float), index=[f"s{i}" for i in range(k)])
        res = me.rank_intervals(est, vcov=np.eye(k) * 0.3, level=level, random_state=1, n_sim=200_000)
        expected = float(R(f"qtukey({level}, {k}, Inf) / sqrt(2)")[0])
        # Monte-Carlo quantile of 200,000 draws: standard error about 0.15% of the value
        assert res.critical_value == pytest.approx(expected, rel=6e-3)


def test_glht_single_step_parity_on_correlated_estimates(glht):
    rng = np.random.default_rng(7)
    names = ["gpt", "llama", "mistral", "qwen", "phi", "gemma"]
    V = _random_vcov(6, rng)
    est = np.array([0.0, 0.02, 0.25, 0.3, 0.6, 0.61])
    r = glht(names, est, V)
    res = me.rank_intervals(pd.Series(est, index=names), vcov=V, random_state=3, n_sim=200_000)
    pw = res.pairwise
    assert [f"{a} - {b}" for a, b in zip(pw["name_a"], pw["name_b"])] == r["contrast"]
    # deterministic parts: the differences and their standard errors, exactly
    np.testing.assert_allclose(pw["estimate"], r["estimate"], rtol=1e-10)
    np.testing.assert_allclose(pw["std_error"], r["std_error"], rtol=1e-10)
    # Monte-Carlo parts: mvtnorm's error 0.001 in probability, ours 200,000 draws
    assert res.critical_value == pytest.approx(r["crit"], rel=6e-3)
    np.testing.assert_allclose(pw["p_adj"], r["p_adj"], atol=4e-3)
    clear = np.abs(np.asarray(r["p_adj"]) - 0.05) > 0.01
    assert clear.sum() >= 10
    np.testing.assert_array_equal(pw["significant"].to_numpy()[clear], (np.asarray(r["p_adj"]) < 0.05)[clear])


def test_rank_bounds_from_pairwise_decisions_by_hand():
    """Five independent estimates with se 0.1: C is significantly apart from everyone, D/E and
    A/B are not separable."""
    est = pd.Series([0.0, 0.1, 0.5, 1.0, 1.05], index=list("ABCDE"))
    res = me.rank_intervals(est, vcov=np.eye(5) * 0.01, random_state=0, n_sim=50_000)
    t = res.table.set_index("name")
    # no simulated maximum reaches |t| = 7.4 (E - A): the Bonferroni bound, not 0
    e_a = res.pairwise.query("name_a == 'E' and name_b == 'A'").iloc[0]
    assert e_a["p_adj"] == pytest.approx(10 * 2 * stats.norm.sf(e_a["statistic"]), rel=1e-12) and e_a["p_adj"] > 0
    assert list(res.table["name"]) == list("EDCBA")
    assert t.loc[list("EDCBA"), "rank"].tolist() == [1, 2, 3, 4, 5]
    assert t.loc[list("EDCBA"), "rank_low"].tolist() == [1, 1, 3, 4, 4]
    assert t.loc[list("EDCBA"), "rank_high"].tolist() == [2, 2, 3, 5, 5]
    assert t.loc[list("EDCBA"), "letters"].tolist() == ["a", "a", "b", "c", "c"]
    low = me.rank_intervals(-est, vcov=np.eye(5) * 0.01, random_state=0, n_sim=50_000, higher_is_better=False)
    pd.testing.assert_frame_equal(low.table.drop(columns="estimate"), res.table.drop(columns="estimate"))


def test_letters_share_a_letter_exactly_when_not_significant():
    rng = np.random.default_rng(11)
    for _ in range(20):
        k = int(rng.integers(3, 9))
        names = [f"m{i}" for i in range(k)]
        est = pd.Series(rng.normal(0, 0.3, k), index=names)
        res = me.rank_intervals(est, vcov=_random_vcov(k, rng, 0.1), random_state=1, n_sim=2_000)
        letters = res.table.set_index("name")["letters"]
        for a, b, sig in res.pairwise[["name_a", "name_b", "significant"]].itertuples(index=False):
            assert bool(set(letters[a]) & set(letters[b])) == (not sig)
        assert "a" in letters[res.table["name"].iloc[0]]
        t = res.table
        assert ((t["rank_low"] <= t["rank"]) & (t["rank"] <= t["rank_high"])).all()


def _insert_absorb_r(R, signif, comps, lvl_order, levels_x):
    code = (f"x <- setNames(as.logical({_r_vec(np.asarray(signif, dtype=float))}), "
            f"{_r_names([f'{a}-{b}' for a, b in comps])}); "
            f"comps <- cbind({_r_names([a for a, _ in comps])}, {_r_names([b for _, b in comps])}); "
            f"l <- multcomp:::insert_absorb(x, comps = comps, lvl_order = {_r_names(lvl_order)}, "
            f"levels.x = {_r_names(levels_x)}); l$Letters[{_r_names(levels_x)}]")
    return [str(v) for v in R(code, raw=True)]


def test_insert_absorb_parity_with_multcomp(R):
    R("suppressMessages(library(multcomp))")
    rng = np.random.default_rng(5)
    for trial in range(40):
        k = int(rng.integers(3, 10))
        names = [f"L{i}" for i in range(k)]
        a, b = np.triu_indices(k, 1)
        comps = [(names[j], names[i]) for i, j in zip(a, b)]
        signif = rng.random(len(comps)) < rng.uniform(0.2, 0.9)
        lvl_order = list(rng.permutation(names))
        levels_x = list(rng.permutation(names))
        ours = _cld.compact_letters(signif, comps, lvl_order, levels_x)
        assert [ours[x] for x in levels_x] == _insert_absorb_r(R, signif, comps, lvl_order, levels_x), trial


def test_insert_absorb_parity_with_multcomp_many_levels(R):
    """Leaderboards of 25-40 systems: many absorb rounds, where the overlap counts are updated
    incrementally (only the changed columns recomputed) rather than recomputed per round."""
    R("suppressMessages(library(multcomp))")
    rng = np.random.default_rng(11)
    for trial in range(3):
        k = int(rng.integers(25, 41))
        names = [f"L{i}" for i in range(k)]
        means = np.sort(rng.normal(size=k))
        a, b = np.triu_indices(k, 1)
        comps = [(names[j], names[i]) for i, j in zip(a, b)]
        signif = np.abs(means[b] - means[a]) > rng.uniform(0.3, 0.8)
        lvl_order = names
        levels_x = list(rng.permutation(names))
        ours = _cld.compact_letters(signif, comps, lvl_order, levels_x)
        assert [ours[x] for x in levels_x] == _insert_absorb_r(R, signif, comps, lvl_order, levels_x), trial


def test_rank_intervals_letters_are_multcomp_letters_of_the_same_decisions(R):
    R("suppressMessages(library(multcomp))")
    rng = np.random.default_rng(2)
    k = 8
    names = [f"sys{i}" for i in range(k)]
    est = pd.Series(np.sort(rng.normal(0, 0.25, k)), index=names)
    res = me.rank_intervals(est, vcov=_random_vcov(k, rng, 0.1), random_state=4, n_sim=5_000)
    pw = res.pairwise
    comps = list(zip(pw["name_a"], pw["name_b"]))
    lvl_order = list(est.sort_values(kind="stable").index)
    expected = _insert_absorb_r(R, pw["significant"], comps, lvl_order, list(res.table["name"]))
    assert list(res.table["letters"]) == expected


def test_cld_of_a_glht_fit_equals_our_letters(R):
    """multcomp::cld(glht(aov, mcp(g = 'Tukey'))) end to end: its decisions, lvl_order (levels by
    increasing mean) and factor-level rows give our letters."""
    R("suppressMessages(library(multcomp)); set.seed(3); "
      "d <- data.frame(g = factor(rep(c('A','B','C','D','E','F'), each = 8)), "
      "y = rep(c(0, 0.2, 1, 1.1, 2, 2.6), each = 8) + rnorm(48, sd = 0.5)); "
      "fm <- aov(y ~ g, data = d); gl <- glht(fm, linfct = mcp(g = 'Tukey')); cl <- cld(gl)")
    signif = np.asarray(R("cl$signif"), dtype=bool)
    comps = [tuple(str(v).split(" - ")) for v in R("rownames(gl$linfct)", raw=True)]
    means = R("tapply(d$y, d$g, mean)")
    levels = [str(v) for v in R("levels(d$g)", raw=True)]
    lvl_order = [levels[i] for i in np.argsort(means, kind="stable")]
    ours = _cld.compact_letters(signif, comps, lvl_order, levels)
    assert [ours[x] for x in levels] == [str(v) for v in R("as.character(cl$mcletters$Letters)", raw=True)]
    assert len(set("".join(ours.values()))) >= 2


def test_bootstrap_draws_rank_distribution_reuses_bootstrap_ranks():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"system": np.repeat(["a", "b", "c", "d"], 40), "item": np.tile(np.arange(40), 4)})
    df["score"] = rng.normal(np.repeat([0.0, 0.1, 0.6, 0.65], 40), 0.5)
    boot = me.bootstrap(df, score="score", system="system", item="item", n_resamples=2000, random_state=0)
    est = pd.Series(boot.estimate, index=boot.systems)
    res = me.rank_intervals(est, draws=boot.distribution.T)
    old = boot.ranks().set_index("system")
    new = res.rank_distribution.set_index("name").loc[old.index]
    np.testing.assert_array_equal(new.to_numpy(), old.to_numpy())
    # studentized bootstrap: the critical value is the replicates' max-|t| quantile, recomputed here
    D = boot.distribution.T
    a, b = np.triu_indices(4, 1)
    d_star = D[:, b] - D[:, a]
    t_max = (np.abs(d_star - (est.to_numpy()[b] - est.to_numpy()[a])) / d_star.std(axis=0, ddof=1)).max(axis=1)
    assert res.critical_value == pytest.approx(np.quantile(t_max, 0.95), rel=1e-12)
    stat = (est.to_numpy()[b] - est.to_numpy()[a]) / d_star.std(axis=0, ddof=1)
    count = (t_max[None, :] >= np.abs(stat)[:, None] * (1 - 1e-12)).sum(axis=1)
    np.testing.assert_allclose(res.pairwise["p_adj"], (count + 1) / (t_max.size + 1), rtol=1e-12)


def _coverage(method: str, reps: int, rng: np.random.Generator) -> tuple[float, float]:
    mu = np.array([0.0, 0.05, 0.3, 0.35, 0.8])
    se = np.array([0.1, 0.1, 0.12, 0.08, 0.15])
    true = rank_matrix(mu[:, None], True)[:, 0]
    names = list("abcde")
    hit, width = 0, 0.0
    for _ in range(reps):
        est = pd.Series(mu + se * rng.standard_normal(5), index=names)
        if method == "normal":
            res = me.rank_intervals(est, vcov=np.diag(se**2), random_state=rng, n_sim=2_000)
        else:  # a parametric bootstrap of the estimates
            draws = est.to_numpy() + se * rng.standard_normal((1000, 5))
            res = me.rank_intervals(est, draws=draws, method=method)
        t = res.table.set_index("name").loc[names]
        hit += bool(((t["rank_low"] <= true) & (true <= t["rank_high"])).all())
        width += float((t["rank_high"] - t["rank_low"]).mean())
    return hit / reps, width / reps


@pytest.mark.parametrize("method", ["normal", "bootstrap", "bootstrap_centered"])
def test_simultaneous_coverage_of_true_ranks(method):
    """CI-sized (150 replications, Monte-Carlo SE of a 95% coverage 0.018); the benchmark
    benchmarks/coverage_rank_intervals.py runs the larger version."""
    cov, width = _coverage(method, 150, np.random.default_rng(123))
    assert cov >= 0.91
    assert width < 3.0  # informative: the trivial [1, 5] has width 4


def test_coverage_is_tight_near_equal_means_where_pointwise_decisions_fail():
    """Nearly equal true means are the least favourable case: the simultaneous intervals cover at
    about the nominal rate, the pointwise 1.96 decisions (what the check above would catch)
    clearly do not."""
    rng = np.random.default_rng(9)
    mu = np.linspace(0, 0.01, 8)
    true = rank_matrix(mu[:, None], True)[:, 0]
    names = [f"s{i}" for i in range(8)]
    a, b = np.triu_indices(8, 1)
    ours = pointwise = 0
    for _ in range(200):
        est = mu + 0.1 * rng.standard_normal(8)
        t = me.rank_intervals(pd.Series(est, index=names), vcov=np.eye(8) * 0.01, random_state=rng,
                              n_sim=2_000).table.set_index("name").loc[names]
        ours += bool(((t["rank_low"] <= true) & (true <= t["rank_high"])).all())
        sig = np.abs(est[b] - est[a]) / (np.sqrt(2) * 0.1) > 1.96
        pointwise += not (sig & (np.sign(est[b] - est[a]) != np.sign(mu[b] - mu[a]))).any()
    assert ours / 200 >= 0.91
    assert pointwise / 200 < 0.8


def test_bad_input():
    est = pd.Series([1.0, 2.0], index=["a", "b"])
    with pytest.raises(DataError, match="vcov or draws, not both"):
        me.rank_intervals(est, vcov=np.eye(2), draws=np.zeros((5, 2)))
    with pytest.raises(DataError, match="needs vcov"):
        me.rank_intervals(est)
    with pytest.raises(DataError, match="positive semi-definite"):
        me.rank_intervals(est, vcov=np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(DataError, match="no column for"):
        me.rank_intervals(est, draws=pd.DataFrame({"a": [1.0, 2.0], "c": [1.0, 3.0]}))
    with pytest.raises(DataError, match="finite"):
        me.rank_intervals(pd.Series([1.0, np.nan], index=["a", "b"]), vcov=np.eye(2))
    with pytest.raises(DataError, match="unique"):
        me.rank_intervals(pd.Series([1.0, 2.0], index=["a", "a"]), vcov=np.eye(2))
    with pytest.raises(DataError, match="level"):
        me.rank_intervals(est, vcov=np.eye(2), level=95)


def _glht_from_r(R, est_expr: str, vcov_expr: str):
    R(f"est <- {est_expr}; V <- {vcov_expr}; nm <- names(est); dimnames(V) <- list(nm, nm); "
      "K <- contrMat(setNames(rep(1, length(est)), nm), 'Tukey'); set.seed(1); "
      "s <- summary(multcomp::glht(multcomp::parm(est, V), linfct = K))")
    return {"estimate": R("as.numeric(s$test$coefficients)"), "std_error": R("as.numeric(s$test$sigma)"),
            "p_adj": R("as.numeric(s$test$pvalues)"), "contrast": [str(x) for x in R("rownames(K)", raw=True)],
            "est": R("as.numeric(est)"), "names": [str(x) for x in R("nm", raw=True)]}


def test_lmm_emm_ranks_use_emmeans_vcov(R, ter):
    """LMM means: the estimates and vcov come from R's emmeans (independent R fit here), the
    pairwise statistics equal glht's on them; TER is an error rate (lower is better)."""
    R("suppressMessages({library(multcomp); library(lmerTest)}); "
      "m_rank <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = ter_df); "
      "e_rank <- emmeans::emmeans(m_rank, 'system', lmer.df = 'satterthwaite')")
    r = _glht_from_r(R, "setNames(predict(e_rank), as.character(summary(e_rank)$system))", "vcov(e_rank)")
    emm = me.lmm("ter ~ system + (1|sentence_id)", data=ter).emmeans("system")
    res = emm.ranks(higher_is_better=False, random_state=2, n_sim=100_000)
    assert res.estimate_scale == "emmean"
    t = res.table.set_index("name").loc[r["names"]]
    np.testing.assert_allclose(t["estimate"], r["est"], rtol=1e-8)
    np.testing.assert_allclose(t["estimate"], emm.table.set_index("system").loc[r["names"], "emmean"], rtol=1e-8)
    pw = res.pairwise
    assert [f"{a} - {b}" for a, b in zip(pw["name_a"], pw["name_b"])] == r["contrast"]
    np.testing.assert_allclose(pw["estimate"], r["estimate"], rtol=1e-8)
    np.testing.assert_allclose(pw["std_error"], r["std_error"], rtol=1e-8)
    np.testing.assert_allclose(pw["p_adj"], r["p_adj"], atol=5e-3)
    # lower is better: the smallest TER is ranked first
    assert res.table["estimate"].is_monotonic_increasing


def test_glmm_emm_ranks_on_the_link_scale(R, tmp_path):
    rng = np.random.default_rng(4)
    items = np.repeat(np.arange(60), 4)
    systems = np.tile(["s1", "s2", "s3", "s4"], 60)
    eta = np.array([-0.5, 0.0, 0.6, 0.7])[np.tile(np.arange(4), 60)] + rng.normal(0, 0.8, 60)[items]
    df = pd.DataFrame({"item": items.astype(str), "system": systems,
                       "y": (rng.random(240) < 1 / (1 + np.exp(-eta))).astype(int)})
    path = tmp_path / "glmm.csv"
    df.to_csv(path, index=False)
    R(f"suppressMessages(library(multcomp)); gd <- read.csv('{path}', colClasses = c(item = 'character', "
      "system = 'character')); gd$system <- factor(gd$system, levels = c('s1','s2','s3','s4')); "
      "gm <- lme4::glmer(y ~ system + (1|item), data = gd, family = binomial); ge <- emmeans::emmeans(gm, 'system')")
    r = _glht_from_r(R, "setNames(predict(ge, type = 'link'), levels(gd$system))", "vcov(ge)")
    emm = me.glmm("y ~ system + (1|item)", df, family="binomial").emmeans("system")
    res = emm.ranks(random_state=5, n_sim=100_000)
    assert res.estimate_scale == "link"
    # two optimizer runs (ours and R's glmer above) agree to about 1e-6, not bit for bit
    np.testing.assert_allclose(res.table.set_index("name").loc[r["names"], "estimate"], r["est"], rtol=1e-5)
    np.testing.assert_allclose(res.pairwise["std_error"], r["std_error"], rtol=1e-5)
    np.testing.assert_allclose(res.pairwise["p_adj"], r["p_adj"], atol=5e-3)
    with pytest.raises(DataError, match="without by="):
        me.glmm("y ~ system + g + (1|item)", df.assign(g=np.where(items < 30, "a", "b")),
                family="binomial").emmeans("system", by="g").ranks()


def test_bootstrap_result_rank_intervals_and_backward_compatible_ranks():
    rng = np.random.default_rng(8)
    df = pd.DataFrame({"system": np.repeat(["x", "y", "z"], 50), "item": np.tile(np.arange(50), 3)})
    df["score"] = rng.normal(np.repeat([0.0, 0.05, 0.8], 50), 0.4)
    boot = me.bootstrap(df, score="score", system="system", item="item", n_resamples=1000, random_state=1)
    plain = boot.ranks()
    assert "rank_low" not in plain.columns
    both = boot.ranks(simultaneous=True)
    pd.testing.assert_frame_equal(both[plain.columns], plain)
    direct = me.rank_intervals(pd.Series(boot.estimate, index=list(boot.systems)), draws=boot.distribution.T)
    t = direct.table.set_index("name").loc[["z", "y", "x"]]
    for c in ("rank", "rank_low", "rank_high", "letters"):
        assert both[c].tolist() == t[c].tolist()
    assert both["system"].tolist() == ["z", "y", "x"]  # best first
    assert both["rank_low"].tolist() == [1, 2, 2] and both["rank_high"].tolist() == [1, 3, 3]
    assert both.attrs["rank_kind"] == {"rank_conf_low": "marginal", "rank_conf_high": "marginal",
                                       "rank_low": "simultaneous", "rank_high": "simultaneous"}
    assert boot.rank_intervals(method="normal").method == "normal"


def test_rank_interval_plot_and_report_section(tmp_path):
    import re

    from mixedeval._report.figures import rank_interval_plot

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"system": np.repeat(["x", "y", "z", "w"], 40), "item": np.tile(np.arange(40), 4)})
    df["score"] = rng.normal(np.repeat([0.0, 0.05, 0.8, 1.5], 40), 0.4)
    boot = me.bootstrap(df, score="score", system="system", item="item", n_resamples=400, random_state=1)
    ri = boot.rank_intervals()
    fig = rank_interval_plot(ri.table, title="ranks")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()][0].startswith("w (")  # best at the top
    assert sorted(t.get_text() for t in ax.texts) == sorted(ri.table["letters"])
    html = me.report(boot, path=tmp_path / "boot.html", progress=False).read_text(encoding="utf-8")
    sec = dict(re.findall(r'<section id="([a-z0-9_]+)"[^>]*>(.*?)</section>', html, flags=re.S))["bootstrap"]
    assert "Simultaneous 95% rank intervals" in sec and "Simultaneous rank intervals with compact letters" in sec
    assert "rank_low" in sec and "letters" in sec


def test_report_emmeans_section_shows_rank_intervals(tmp_path, ter):
    import re

    emm = me.lmm("ter ~ system + (1|sentence_id)", data=ter).emmeans("system")
    html = me.report(emm, path=tmp_path / "emm.html", compute_missing=False, progress=False).read_text(encoding="utf-8")
    sec = dict(re.findall(r'<section id="([a-z0-9_]+)"[^>]*>(.*?)</section>', html, flags=re.S))["emmeans"]
    assert "Simultaneous 95% rank intervals of the means" in sec and "rank_high" in sec
    assert "Simultaneous rank intervals of the means with compact letters" in sec


def test_rank_distribution_of_the_joint_normal_by_hand():
    """Two independent estimates 0.1 apart with se 0.1: P(A ranks first) = Phi(0.1 / sqrt(0.02))."""
    res = me.rank_intervals(pd.Series({"A": 0.1, "B": 0.0}), vcov=np.eye(2) * 0.01, random_state=3, n_sim=200_000)
    dist = res.rank_distribution.set_index("name")
    p = stats.norm.cdf(0.1 / np.sqrt(0.02))
    assert dist.loc["A", "p_rank_1"] == pytest.approx(p, abs=4 * np.sqrt(p * (1 - p) / 200_000))
    assert dist.loc["B", "p_rank_1"] == pytest.approx(1 - dist.loc["A", "p_rank_1"], abs=1e-12)
    assert dist.loc["A", "expected_rank"] == pytest.approx(2 - dist.loc["A", "p_rank_1"], abs=1e-12)
    d = res.to_dict()
    assert d["method"] == "normal" and d["table"][0]["name"] == "A"
    assert "critical value" in repr(res)
