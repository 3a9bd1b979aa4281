"""0.2.0 against 0.1.0: the outputs saved by tests/make_resampling_v01.py (run on 0.1.0 before the
refactoring) recomputed with the 0.2.0 names.

* bootstrap, the paired tests, the variance decomposition: the same numbers. Their seeding
  scheme and methods did not change; matrix products may differ in the last bits between BLAS
  builds, hence ``rtol=1e-12`` instead of bit equality.
* simulate_leaderboard, pooled_run_bootstrap, run_intervals: 0.2.0 draws them with the
  block-seeded, chunk-invariant scheme of the bootstrap, so the draws differ by design. Their
  deterministic parts (observed values, exact per-language moments, variance split, t and
  prediction intervals, order-statistic indices) are the same numbers; their Monte-Carlo parts
  agree within Monte-Carlo error (5 standard errors of the difference of two independent
  estimates, the error estimated from the 0.2.0 draws; quantiles checked distribution-free by
  the 0.1.0 value lying between the 0.2.0 quantiles at p -+ 5 SE(p)).
* Changed by design: with resampled languages, 0.1.0 added within-language noise on top (the
  published procedure, now ``add_noise=True``); 0.2.0's default resamples the cell estimates
  alone. The 0.1.0 numbers are compared with ``add_noise=True``, the new default with its
  closed form.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import make_resampling_v01 as v01_inputs  # tests/ is on sys.path (rootdir conftest)

import mixedeval as me
from mixedeval.resampling import _stats

DATA = Path(__file__).resolve().parent / "data" / "resampling_v01.json"
RTOL = 1e-12
Z = 5.0  # Monte-Carlo standard errors allowed


@lru_cache(maxsize=1)
def v01() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def frame(d: dict, rename: dict | None = None) -> pd.DataFrame:
    return pd.DataFrame(d["data"], columns=d["columns"]).rename(columns=rename or {})


def same(new: pd.DataFrame, old: dict, rename: dict | None = None, columns=None):
    """The 0.1.0 table (columns renamed to 0.2.0's) equals the new one, numbers to rtol 1e-12."""
    ref = frame(old, rename)
    cols = list(ref.columns) if columns is None else columns
    pd.testing.assert_frame_equal(new[cols].reset_index(drop=True), ref[cols], check_dtype=False, check_exact=False,
                                  rtol=RTOL, atol=0)


def same_pairs(b, new: pd.DataFrame, old: dict) -> None:
    """A 0.1.0 pair table (a - b in system order) equals the new best-first one: the old rows
    rewritten by :func:`mixedeval._answer.best_first_pairs` (system_a above system_b on the
    leaderboard, delta in the better direction; the signal-to-noise ratio follows delta's sign)."""
    from mixedeval._answer import best_first_pairs

    ref = frame(old, {"effect_size": "snr"})
    want = best_first_pairs(ref, list(b.leaderboard["name"]), b.higher_is_better)
    want["snr"] = want["delta"] / want["std_error"]
    cols = [c for c in ref.columns if c in want.columns]
    got = new.assign(system_a=new.system_a.astype(str), system_b=new.system_b.astype(str))
    pd.testing.assert_frame_equal(got[cols].reset_index(drop=True), want[cols], check_dtype=False, check_exact=False,
                                  rtol=RTOL, atol=1e-15)


def same_ranks(new: pd.DataFrame, old: dict) -> None:
    """A 0.1.0 rank table (system order) equals the new best-first one, row by row by system."""
    ref = frame(old)
    got = new.set_index("system").loc[list(ref["system"])].reset_index()
    pd.testing.assert_frame_equal(got[list(ref.columns)], ref, check_dtype=False, check_exact=False, rtol=RTOL, atol=0)


# ------------------------------------------------------------------------------ inputs
# the script's own builders (one definition of the inputs), with the 0.1 column names renamed
def replicate_table() -> pd.DataFrame:
    return v01_inputs.replicate_table().rename(columns={"seed": "run"})


def summary_input() -> pd.DataFrame:
    return v01_inputs.summary_input().rename(columns={"sd_seed": "sd_run", "n_seeds": "n_runs"})


crossed_table, paired_inputs, runs_inputs = v01_inputs.crossed_table, v01_inputs.paired_inputs, v01_inputs.runs_inputs


# ------------------------------------------------------------------------------ Monte-Carlo agreement
def mc_mean(old: float, draws: np.ndarray, what: str) -> None:
    d = draws[np.isfinite(draws)]
    tol = Z * d.std(ddof=1) * np.sqrt(2.0 / d.size) + 1e-9 * max(1.0, abs(old))
    assert abs(old - d.mean()) <= tol, (what, old, d.mean(), tol)


def mc_sd(old: float, draws: np.ndarray, what: str) -> None:
    """SE of an SD estimate from B draws: sd sqrt((kurtosis - 1) / (4 B)); two estimates differ
    by sqrt(2) times that."""
    d = draws[np.isfinite(draws)]
    sd = d.std(ddof=1)
    kurt = np.mean((d - d.mean()) ** 4) / sd**4 if sd > 0 else 3.0
    tol = Z * sd * np.sqrt(2 * (kurt - 1) / (4 * d.size)) + 1e-9 * max(1.0, abs(old))
    assert abs(old - sd) <= tol, (what, old, sd, tol)


def mc_quantile(old: float, draws: np.ndarray, p: float, what: str) -> None:
    d = np.sort(draws[np.isfinite(draws)])
    delta = Z * np.sqrt(2 * p * (1 - p) / d.size)
    lo, hi = np.quantile(d, [max(0.0, p - delta), min(1.0, p + delta)])
    slack = 1e-9 * max(1.0, abs(old))
    assert lo - slack <= old <= hi + slack, (what, old, lo, hi)


def mc_share(old: float, new: float, B: int, what: str) -> None:
    p = (old + new) / 2
    tol = Z * np.sqrt(2 * p * (1 - p) / B) + 2.0 / B
    assert abs(old - new) <= tol, (what, old, new, tol)


# ------------------------------------------------------------------------------ bootstrap: unchanged
def test_bootstrap_numbers_unchanged():
    ref = v01()["bootstrap"]
    ter = me.datasets.load("kreutzer_ter")
    b = me.bootstrap(ter, score="ter", system="system", item="sentence_id", run="replication", n_resamples=300,
                     random_state=0, higher_is_better=False)
    r = ref["kreutzer_nested_runs"]
    np.testing.assert_allclose(b.distribution, r["distribution"], rtol=RTOL, atol=0)
    np.testing.assert_allclose(b.estimate, r["estimate"], rtol=RTOL, atol=0)
    same(b.table, r["summary"])
    same(b.summary(ci="basic"), r["summary_basic"])
    same(b.summary(ci="se", level=0.9), r["summary_se"])
    same_pairs(b, b.pairwise(), r["pairwise"])
    same_pairs(b, b.pairwise(reference="Baseline", adjust="BH"), r["pairwise_reference"])
    same_ranks(b.ranks(), r["ranks"])
    np.testing.assert_allclose(b.p_beats().to_numpy(), np.array(r["p_beats"], dtype=float), rtol=RTOL)
    assert [w.kind for w in b.warnings] == [{"nested_seeds": "nested_runs"}.get(k, k) for k in r["warnings"]]
    assert b.resample == tuple({"seeds": "runs"}.get(x, x) for x in r["resample"])
    assert b.design == {{"n_seeds": "n_runs"}.get(k, k): v for k, v in r["design"].items()}

    df = crossed_table()
    b = me.bootstrap(df, ["tp", "fp", "fn"], "system", "item", run="run", group="lang",
                     resample=["groups", "items", "runs"], statistic="f1", aggregator="median", n_resamples=200,
                     ci="bca", random_state=11)
    r = ref["crossed_f1_median_bca"]
    np.testing.assert_allclose(b.distribution, r["distribution"], rtol=RTOL, atol=0)
    same(b.table, r["summary"])
    same_pairs(b, b.pairwise(), r["pairwise"])
    same_ranks(b.ranks(level=0.8), r["ranks"])

    b = me.bootstrap(df, "score", "system", "item", run="run", group="lang", n_groups=2, aggregator="geometric_mean",
                     n_resamples=130, random_state=5)
    r = ref["subsample_geometric"]
    np.testing.assert_allclose(b.distribution, r["distribution"], rtol=RTOL, atol=0)
    same(b.table, r["summary"])
    assert b.resample == ("groups", "items", "runs")

    b = me.bootstrap(df, "score", "system", "item", run="run", group="lang", n_resamples=256, random_state=1,
                     precision="float32")
    np.testing.assert_allclose(b.distribution, ref["float32"]["distribution"], rtol=1e-6)  # single precision

    avg = ter.groupby(["system", "sentence_id"], as_index=False)["ter"].mean()
    b = me.bootstrap(avg, score="ter", system="system", item="sentence_id", n_resamples=500, ci="bca",
                     random_state=0, higher_is_better=False)
    same(b.table, ref["kreutzer_avg_bca"]["summary"])
    same_pairs(b, b.pairwise(reference="Baseline", adjust="holm"), ref["kreutzer_avg_bca"]["pairwise"])


def test_paired_test_numbers_unchanged():
    ref = v01()["paired_tests"]
    x, y, cx, cy, sx, sy = paired_inputs()
    calls = {
        "bootstrap_mean": lambda: me.paired_bootstrap_test(x, y, n_resamples=999, random_state=3),
        "bootstrap_mean_greater_c_over_b": lambda: me.paired_bootstrap_test(
            x, y, n_resamples=999, alternative="greater", p_value_convention="c_over_b", level=0.9, random_state=3),
        "bootstrap_f1": lambda: me.paired_bootstrap_test(cx, cy, statistic="f1", n_resamples=500, random_state=4),
        "ar_mean": lambda: me.approximate_randomization(x, y, n_resamples=999, random_state=5),
        "ar_f1_exact": lambda: me.approximate_randomization(cx[:9], cy[:9], statistic="f1", exact=True),
        "sign_flip_mc": lambda: me.sign_flip_test(x, y, n_resamples=999, alternative="less", random_state=6),
        "sign_flip_exact": lambda: me.sign_flip_test(sx, sy),
    }
    for name, call in calls.items():
        res, r = call(), ref[name]
        same(res.table, r["table"])
        assert res.count == r["count"], name
        if "null_distribution" in r:
            np.testing.assert_allclose(res.null_distribution, r["null_distribution"], rtol=RTOL, atol=1e-15)


# ------------------------------------------------------------------------------ decomposition: unchanged
CELLS = {"mean": "estimate", "mean_se": "std_error", "n_seeds": "n_runs", "n_boot": "n_replicates"}


def test_variance_decomposition_numbers_unchanged():
    ref = v01()["leaderboard"]
    vd = me.decompose_variance(replicate_table())
    same(vd.table, ref["decompose_variance"]["cells"], CELLS)
    same(vd.summary(), ref["decompose_variance"]["summary"], {"mean": "average", "min": "minimum", "max": "maximum"})
    vs = me.decompose_variance_summary(summary_input(), n_runs="n_runs")
    same(vs.table, ref["decompose_variance_summary"]["cells"], CELLS)
    for new, old in ((vd, ref["decompose_variance"]), (vs, ref["decompose_variance_summary"])):
        unchanged = ["model", "n_languages", "estimate", "nu", "nu_se", "se_mean_fixed_languages"]
        same(new.models, old["models"], {"mean": "estimate"}, columns=unchanged)
        # changed by design: the closed form of the new default (languages resampled alone)
        old_models = frame(old["models"])
        for m, row in new.models.set_index("model").iterrows():
            c = new.cells[new.cells["model"] == m]
            mu, eta = c["estimate"].to_numpy(), c["eta"].to_numpy()
            L = len(mu)
            assert row["se_mean_resampled_languages"] == pytest.approx(np.std(mu) / np.sqrt(L), rel=RTOL)
            old_se = old_models.set_index("model").loc[m, "se_mean_resampled_languages"]
            assert old_se == pytest.approx(np.sqrt((np.var(mu) + np.mean(eta**2)) / L), rel=RTOL)
            assert old_se > row["se_mean_resampled_languages"]


# ------------------------------------------------------------------------------ leaderboard: new draws
def _simulations():
    vd = me.decompose_variance(replicate_table())
    vs = me.decompose_variance_summary(summary_input(), n_runs="n_runs")
    # 0.1.0's language resampling added noise: add_noise=True is that method in 0.2.0
    return {
        "fixed_parametric": (vs, dict()),
        "fixed_nonparametric": (vd, dict(noise="nonparametric")),
        "fixed_nonparametric_paired": (vd, dict(noise="nonparametric", pair_noise=True, aggregators=("mean",))),
        "bootstrap_parametric": (vs, dict(languages="bootstrap", add_noise=True)),
        "subsample_parametric": (vs, dict(languages="subsample", n_languages=3, add_noise=True)),
        "bootstrap_nonparametric_paired": (vd, dict(noise="nonparametric", pair_noise=True, languages="bootstrap",
                                                    aggregators=("mean", "median"), add_noise=True)),
    }


@pytest.mark.parametrize("name", list(_simulations()))
def test_leaderboard_same_method_within_monte_carlo_error(name):
    comp, kw = _simulations()[name]
    ref = v01()["leaderboard"][f"simulate_{name}"]
    B = ref["n_resamples"]
    lb = me.simulate_leaderboard(comp, n_resamples=B, random_state=0, progress=False, **kw)
    alpha = (1 - lb.level) / 2
    # deterministic parts: the same numbers
    agg_old = frame(ref["aggregates"], {"aggregate": "aggregator"})
    same(lb.aggregates, ref["aggregates"], {"aggregate": "aggregator"}, columns=["aggregator", "model", "estimate"])
    same(lb.pairwise, ref["pairwise"], {"aggregate": "aggregator"},
         columns=["aggregator", "model_a", "model_b", "delta"])
    same(lb.language_pairwise, ref["language_pairwise"], {"z": "snr"})
    same(lb.ranks, ref["ranks"], {"aggregate": "aggregator"}, columns=["aggregator", "model", "observed_rank"])
    # Monte-Carlo parts: agreement within Monte-Carlo error
    models = list(lb.models)
    for _, row in agg_old.iterrows():
        a, m = lb.aggregators.index(row["aggregator"]), models.index(row["model"])
        d = lb.draws[:, m, a]
        what = f"{name} {row['aggregator']} {row['model']}"
        mc_mean(row["boot_mean"], d, what)
        mc_sd(row["std_error"], d, what)
        mc_quantile(row["conf_low"], d, alpha, what)
        mc_quantile(row["conf_high"], d, 1 - alpha, what)
        assert row["n_draws"] == B
    for _, row in frame(ref["pairwise"], {"aggregate": "aggregator", "effect_size": "snr"}).iterrows():
        a = lb.aggregators.index(row["aggregator"])
        dd = lb.draws[:, models.index(row["model_a"]), a] - lb.draws[:, models.index(row["model_b"]), a]
        what = f"{name} {row['aggregator']} {row['model_a']}-{row['model_b']}"
        mc_mean(row["boot_mean"], dd, what)
        mc_sd(row["std_error"], dd, what)
        mc_quantile(row["conf_low"], dd, alpha, what)
        mc_quantile(row["conf_high"], dd, 1 - alpha, what)
        new = lb.pairwise[(lb.pairwise["aggregator"] == row["aggregator"]) & (lb.pairwise["model_a"] == row["model_a"])
                          & (lb.pairwise["model_b"] == row["model_b"])].iloc[0]
        mc_share(row["prob_a_better"], new["prob_a_better"], B, what)
    old_ranks = frame(ref["ranks"], {"aggregate": "aggregator"})
    for _, row in old_ranks.iterrows():
        new = lb.ranks[(lb.ranks["aggregator"] == row["aggregator"]) & (lb.ranks["model"] == row["model"])].iloc[0]
        for k in range(1, len(models) + 1):
            mc_share(row[f"p_rank_{k}"], new[f"p_rank_{k}"], B, f"{name} {row['model']} p_rank_{k}")


def test_leaderboard_language_resampling_changed_by_design():
    """0.1.0's languages="bootstrap" added the within-language noise on top; 0.2.0's default does
    not and its SEs match SD_0 / sqrt(L) (the numbers reported in the 0.2.0 changes)."""
    vs = me.decompose_variance_summary(summary_input(), n_runs="n_runs")
    old = frame(v01()["leaderboard"]["simulate_bootstrap_parametric"]["aggregates"])
    old_pw = frame(v01()["leaderboard"]["simulate_bootstrap_parametric"]["pairwise"])
    B = 4000
    new = me.simulate_leaderboard(vs, languages="bootstrap", n_resamples=B, random_state=0, progress=False)
    cells = vs.cells.set_index(["model", "language"])
    means = cells["estimate"].unstack().loc[list(new.models)].to_numpy()
    eta = cells["eta"].unstack().loc[list(new.models)].to_numpy()
    L = means.shape[1]
    for m, model in enumerate(new.models):
        o = old[(old["aggregate"] == "mean") & (old["model"] == model)].iloc[0]
        n = new.aggregates[(new.aggregates["aggregator"] == "mean") & (new.aggregates["model"] == model)].iloc[0]
        closed = np.std(means[m]) / np.sqrt(L)
        mc_sd(closed, new.draws[:, m, new.aggregators.index("mean")], f"default {model}")
        assert o["std_error"] > n["std_error"]  # 0.1.0 counted the within-language noise twice
    for _, o in old_pw[old_pw["aggregate"] == "mean"].iterrows():
        a, b = list(new.models).index(o["model_a"]), list(new.models).index(o["model_b"])
        n = new.pairwise[(new.pairwise["aggregator"] == "mean") & (new.pairwise["model_a"] == o["model_a"])
                         & (new.pairwise["model_b"] == o["model_b"])].iloc[0]
        d = means[a] - means[b]
        closed = np.std(d) / np.sqrt(L)
        assert n["std_error"] == pytest.approx(closed, rel=Z / np.sqrt(2 * B))
        # 0.1.0: the closed form of the two-stage procedure, the noise counted a second time
        published = np.sqrt((np.var(d) + np.mean(eta[a] ** 2 + eta[b] ** 2)) / L)
        assert o["std_error"] == pytest.approx(published, rel=Z / np.sqrt(2 * B))
        assert o["std_error"] > n["std_error"]


# ------------------------------------------------------------------------------ runs: new draws
def _exact_run_bootstrap(scores: np.ndarray) -> np.ndarray:
    """Every one of the n^n equally likely resamples of the n run scores: their means."""
    n = len(scores)
    idx = np.indices((n,) * n).reshape(n, -1).T
    return scores[idx].mean(axis=1)


@pytest.mark.parametrize("metric", ["accuracy", "macro_f1"])
def test_pooled_run_bootstrap_within_monte_carlo_error(metric):
    ref = v01()["runs"][f"pooled_{metric}"]
    y, pred = runs_inputs()
    old = frame(ref["table"]).iloc[0]
    B = int(old["n_resamples"])
    p = me.pooled_run_bootstrap(y_true=y, y_pred=pred, metric=metric, n_resamples=B, random_state=0, progress=False)
    new = p.table.iloc[0]
    assert list(p.order_statistics) == ref["order_statistics"]
    for c in ("method", "target", "metric", "level", "n_resamples", "n_items", "n_runs"):
        assert new[c] == old[c]
    assert new["observed"] == pytest.approx(old["observed"], rel=RTOL)
    d = p.bootstrap_distribution
    mc_mean(old["estimate"], d, "pooled estimate")
    mc_sd(old["std_error"], d, "pooled std_error")
    mc_quantile(old["conf_low"], d, 0.025, "pooled conf_low")
    mc_quantile(old["conf_high"], d, 0.975, "pooled conf_high")


@pytest.mark.parametrize("case", ["accuracy", "macro_f1", "accuracy_resample_runs", "macro_f1_resample_runs"])
def test_run_intervals_deterministic_parts_unchanged_and_draws_within_monte_carlo_error(case):
    ref = v01()["runs"][f"run_intervals_{case}"]
    metric = case.replace("_resample_runs", "")
    y, pred = runs_inputs()
    old = frame(ref["intervals"]).set_index("method")
    B = int(old["n_resamples"].max())
    r = me.run_intervals(y_true=y, y_pred=pred, metric=metric, n_resamples=B, resample_runs=case.endswith("runs"),
                         random_state=0, progress=False)
    new = r.table.set_index("method")
    assert list(new.index) == list(old.index) and list(new.columns) == list(old.columns)
    assert r.estimate == pytest.approx(ref["estimate"], rel=RTOL)
    same(r.variance, ref["variance"])
    same(r.runs, ref["runs"], columns=["run", "score"])
    for m in ("variance_components", "prediction_t", "prediction_components", "t"):
        np.testing.assert_allclose(new.loc[m, ["estimate", "std_error", "conf_low", "conf_high"]].to_numpy(float),
                                   old.loc[m, ["estimate", "std_error", "conf_low", "conf_high"]].to_numpy(float),
                                   rtol=RTOL)
    assert sorted(w.kind for w in r.warnings) == sorted(ref["warnings"])
    alpha = (1 - r.level) / 2
    inst = "instance_run_bootstrap" if case.endswith("runs") else "instance_bootstrap"
    for method, d in ((inst, r.distributions["instance"]), ("pooled_instance_bootstrap", r.distributions["pooled"])):
        mc_sd(old.loc[method, "std_error"], d, f"{case} {method}")
        mc_quantile(old.loc[method, "conf_low"], d, alpha, f"{case} {method}")
        mc_quantile(old.loc[method, "conf_high"], d, 1 - alpha, f"{case} {method}")
    old_runs = frame(ref["runs"])
    for j in range(r.n_runs):
        d = r.distributions["per_run"][:, j]
        mc_mean(old_runs.loc[j, "boot_mean"], d, f"{case} run {j}")
        mc_sd(old_runs.loc[j, "std_error"], d, f"{case} run {j}")
        mc_quantile(old_runs.loc[j, "conf_low"], d, alpha, f"{case} run {j}")
        mc_quantile(old_runs.loc[j, "conf_high"], d, 1 - alpha, f"{case} run {j}")
    # run-level baselines: both releases within Monte-Carlo error of the exact bootstrap
    # distribution of the mean of n run scores (all n^n resamples enumerated)
    exact = _exact_run_bootstrap(r.runs["score"].to_numpy())
    for res in (old, new):
        mc_sd(res.loc["percentile", "std_error"], exact, f"{case} run-level")
        mc_quantile(res.loc["percentile", "conf_low"], exact, alpha, f"{case} percentile")
        mc_quantile(res.loc["percentile", "conf_high"], exact, 1 - alpha, f"{case} percentile")
        lam = B * r.n_runs / r.n_runs ** r.n_runs  # resamples drawing one run n times (bootstrap-t)
        assert abs(res.loc["bootstrap_t", "n_degenerate"] - lam) <= Z * np.sqrt(lam) + 1
    # the BCa of both releases from the exact distribution's levels, within Monte-Carlo error
    scores = r.runs["score"].to_numpy()
    n = len(scores)
    lo_lvl, hi_lvl = _bca_levels(exact, scores.mean(), (scores.sum() - scores) / (n - 1), r.level)
    for res in (old, new):
        mc_quantile(res.loc["bca", "conf_low"], exact, lo_lvl, f"{case} bca")
        mc_quantile(res.loc["bca", "conf_high"], exact, hi_lvl, f"{case} bca")


def _bca_levels(dist: np.ndarray, est: float, jack: np.ndarray, level: float) -> tuple[float, float]:
    """The quantile levels of the BCa interval computed on the exact bootstrap distribution."""
    from scipy.special import ndtr, ndtri

    share = ((dist < est).sum() + (dist <= est).sum()) / (2.0 * dist.size)
    z0 = ndtri(share)
    a = _stats.acceleration([jack[None, :]])[0]
    z = ndtri(np.array([(1 - level) / 2, (1 + level) / 2]))
    q = ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))
    return float(q[0]), float(q[1])
