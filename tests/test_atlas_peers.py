"""benchmarks/atlas_peers.py: the calibration atlas' alternatives (issue 39, item 2).

The output contract; each textbook method against R (t.test, prop.test, binom.test) or a hand
derivation; each peer adapter against the peer called directly on the same numbers (so the adapter's
data plumbing -- epochs, runs, clusters, pair order -- is right); lm-eval's re-derived stderrs against
its source's formulas and its own pure-Python resampling loop.
"""
from __future__ import annotations

import importlib.util
import math
import random
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixedeval.errors import DataError

_spec = importlib.util.spec_from_file_location(
    "atlas_peers", Path(__file__).resolve().parents[1] / "benchmarks" / "atlas_peers.py")
ap = importlib.util.module_from_spec(_spec)
sys.modules["atlas_peers"] = ap
_spec.loader.exec_module(ap)

KEYS = ["method", "target", "system", "system_a", "system_b"]


def _sim(probs, n, *, epochs=1, runs=1, cluster_size=None, binary=True, seed=0) -> pd.DataFrame:
    """One simulated evaluation: systems x questions x epochs x runs; binary or continuous scores."""
    rng = np.random.default_rng(seed)
    rows = []
    for s, p in probs.items():
        for q in range(n):
            for r in range(1, runs + 1):
                for e in range(1, epochs + 1):
                    v = float(rng.random() < p) if binary else float(np.clip(rng.normal(p, 0.2), 0, 1))
                    rows.append((s, f"q{q:03d}", f"c{q // cluster_size}" if cluster_size else None, e, r, v))
    return pd.DataFrame(rows, columns=["system", "question", "cluster", "epoch", "run", "score"])


def _to_r(name, values):
    import rpy2.robjects as ro
    ro.globalenv[name] = ro.FloatVector([float(v) for v in values])


def _row(out, method, system=None, pair=None):
    if pair is None:
        sel = out[(out.method == method) & (out.target == "score") & (out.system == system)]
    else:
        sel = out[(out.method == method) & (out.target == "difference") & (out.system_a == pair[0])
                  & (out.system_b == pair[1])]
    assert len(sel) == 1, (method, system, pair)
    return sel.iloc[0]


@pytest.fixture(scope="module")
def binary_out():
    data = _sim({"beta": 0.6, "alpha": 0.7, "gamma": 0.9}, 40, cluster_size=5, seed=3)
    return data, ap.alternatives(data, random_state=1, n_resamples=500, lm_eval_iters=2000)


# ------------------------------------------------------------------------------------------ contract

def test_contract_binary(binary_out):
    data, out = binary_out
    assert list(out.columns) == ap._COLUMNS
    assert out.attrs["errors"] == []
    assert set(out["method"]) <= set(ap.METHODS)
    # every method of METHODS but the judge ones answers a binary single-run data set
    assert set(out["method"]) == set(ap.METHODS) - {"ppi_plusplus", "human_t"}
    assert not out.duplicated(KEYS).any()
    assert set(out["target"]) == {"score", "difference"}
    sc, df = out[out.target == "score"], out[out.target == "difference"]
    assert sc["system_a"].isna().all() and df["system"].isna().all() and sc["p_value"].isna().all()
    assert (df["system_a"] < df["system_b"]).all()
    assert set(zip(df.system_a, df.system_b)) == {("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")}
    # one row per system (pair) for every method giving that target
    assert (sc.groupby("method").size() == 3).all() and (df.groupby("method").size() == 3).all()
    for col in ["estimate", "conf_low", "conf_high"]:
        assert np.isfinite(out[col]).all()
    assert (out.conf_low <= out.estimate + 1e-12).all() and (out.estimate <= out.conf_high + 1e-12).all()
    assert ((df.p_value >= 0) & (df.p_value <= 1)).all()
    # estimates: the per-question means and their differences
    y = data.groupby("system")["score"].mean()
    for _, r in sc.iterrows():
        assert r.estimate == pytest.approx(y[r.system], abs=1e-12)
    for _, r in df.iterrows():
        assert r.estimate == pytest.approx(y[r.system_a] - y[r.system_b], abs=1e-12)


def test_contract_runs_epochs_continuous():
    # continuous scores, 2 epochs: binary-only methods are left out; 3 runs go to evalstats as runs
    data = _sim({"a": 0.5, "b": 0.6}, 25, epochs=2, runs=3, binary=False, seed=5)
    out = ap.alternatives(data, n_resamples=300, lm_eval_iters=1000)
    assert out.attrs["errors"] == []
    methods = set(out["method"])
    assert not methods & {"wilson", "mcnemar_exact_wald", "newcombe_midp", "evalstats_bonett_price",
                          "evalstats_newcombe", "evalstats_tango", "evalstats_wilson"}
    assert {"evalstats_auto", "evalstats_bootstrap", "inspect_ci_wilson", "t", "paired_bootstrap"} <= methods
    assert np.isfinite(out[["estimate", "conf_low", "conf_high"]].to_numpy()).all()
    assert (out.conf_low <= out.estimate + 1e-12).all() and (out.estimate <= out.conf_high + 1e-12).all()
    # binary cells, 3 runs: evalstats' binary methods model the runs (Tango, single-run only, is left out)
    data = _sim({"a": 0.5, "b": 0.6}, 25, runs=3, seed=6)
    out_r3 = ap.alternatives(data, n_resamples=300, lm_eval_iters=1000)
    methods = set(out_r3["method"])
    assert {"evalstats_bonett_price", "evalstats_newcombe", "evalstats_wilson"} <= methods
    assert not methods & {"evalstats_tango", "wilson", "newcombe_midp"}
    details = {(d["method"], d["target"]): d["what"] for d in out_r3.attrs["details"]}
    assert details[("evalstats_auto", "difference")].startswith("bonett_price shrunk")   # the multi-run variant
    assert details[("evalstats_newcombe", "difference")].startswith("nested smooth bootstrap")  # not Newcombe
    assert details[("evalstats_auto", "score")] == "wilson"


def test_bad_input_and_data_untouched():
    data = _sim({"a": 0.5, "b": 0.6}, 10)
    before = data.copy()
    ap.alternatives(data, n_resamples=100, lm_eval_iters=1000)
    pd.testing.assert_frame_equal(data, before)
    with pytest.raises(DataError, match="score"):
        ap.alternatives(data.drop(columns="score"))
    with pytest.raises(DataError, match="complete"):
        ap.alternatives(data.iloc[1:])
    with pytest.raises(DataError, match="level"):
        ap.alternatives(data, level=95)


# ------------------------------------------------------------------------------------------ textbook

def test_t_wald_wilson_scores_against_r(binary_out, R):
    data, out = binary_out
    for s, g in data.groupby("system"):
        y = g.sort_values("question")["score"].to_numpy()
        _to_r("y", y)
        ci = R("t.test(y)$conf.int")
        r = _row(out, "t", s)
        np.testing.assert_allclose([r.conf_low, r.conf_high], ci, rtol=1e-8)
        ci = R("prop.test(sum(y), length(y), correct = FALSE)$conf.int")
        r = _row(out, "wilson", s)
        np.testing.assert_allclose([r.conf_low, r.conf_high], ci, rtol=1e-8)
        p, n = y.mean(), len(y)      # Wald by hand: p +/- z sqrt(p(1-p)/n)
        r = _row(out, "wald", s)
        h = 1.959963984540054 * math.sqrt(p * (1 - p) / n)
        np.testing.assert_allclose([r.conf_low, r.conf_high], [p - h, p + h], rtol=1e-12)


def test_paired_t_mcnemar_newcombe_against_r(binary_out, R):
    data, out = binary_out
    w = data.pivot(index="question", columns="system", values="score")
    for a, b in [("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")]:
        _to_r("ya", w[a]), _to_r("yb", w[b])
        r = _row(out, "t", pair=(a, b))
        np.testing.assert_allclose([r.conf_low, r.conf_high], R("t.test(ya, yb, paired = TRUE)$conf.int"),
                                   rtol=1e-8)
        assert r.p_value == pytest.approx(R("t.test(ya, yb, paired = TRUE)$p.value")[0], rel=1e-8)
        nb, nc = int(((w[a] == 1) & (w[b] == 0)).sum()), int(((w[a] == 0) & (w[b] == 1)).sum())
        R(f"nb <- {nb}; nc <- {nc}")
        r = _row(out, "mcnemar_exact_wald", pair=(a, b))
        assert r.p_value == pytest.approx(R("binom.test(nb, nb + nc)$p.value")[0], rel=1e-8)
        # paired Wald = the Wald interval (divisor n) of the per-question differences
        np.testing.assert_allclose([r.estimate, r.conf_low, r.conf_high],
                                   ap.wald_interval((w[a] - w[b]).to_numpy(), 0.95), rtol=1e-12)
        r = _row(out, "newcombe_midp", pair=(a, b))
        midp = R("if (nb == nc) 1 - 0.5 * dbinom(nb, 2 * nb, 0.5) else "
                 "binom.test(nb, nb + nc)$p.value - dbinom(min(nb, nc), nb + nc, 0.5)")[0]
        assert r.p_value == pytest.approx(midp, rel=1e-8)
        # Newcombe method 10 from R's Wilson limits of both margins and phi, by hand
        l1, u1 = R("prop.test(sum(ya), length(ya), correct = FALSE)$conf.int")
        l2, u2 = R("prop.test(sum(yb), length(yb), correct = FALSE)$conf.int")
        n = len(w)
        e, h = int(((w[a] == 1) & (w[b] == 1)).sum()), int(((w[a] == 0) & (w[b] == 0)).sum())
        p1, p2 = w[a].mean(), w[b].mean()
        A = e * h - nb * nc
        den = math.sqrt((e + nb) * (nc + h) * (e + nc) * (nb + h))
        phi = (A - n / 2) / den if A > n / 2 else (0.0 if A >= 0 else A / den)
        lo = p1 - p2 - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
        hi = p1 - p2 + math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
        np.testing.assert_allclose([r.conf_low, r.conf_high], [lo, hi], rtol=1e-8)


def test_newcombe_against_evalstats_and_degenerate_tables():
    res = pytest.importorskip("evalstats.core.resampling")
    rng = np.random.default_rng(11)
    for n, pa, pb in [(12, 0.5, 0.5), (30, 0.9, 0.95), (60, 0.05, 0.2), (20, 1.0, 0.9)]:
        a, b = (rng.random(n) < pa).astype(float), (rng.random(n) < pb).astype(float)
        d, lo, hi = ap.newcombe_paired(a, b, 0.95)
        np.testing.assert_allclose([lo, hi], res.newcombe_mover_paired_ci(a, b, 0.05), rtol=1e-10)
    # no discordant pairs: exact and mid-p McNemar are 1
    assert ap.mcnemar_exact_p(0, 0) == 1.0 and ap.mcnemar_midp(0, 0) == 1.0


def test_mcnemar_midp_published_example():
    # Fagerland, Lydersen & Laake (2013), supplement: Bentur et al.'s AHR table, n12 = 1, n21 = 7:
    # exact p = 2 x 9/256 = 0.0703, mid-p = 0.0703 - 8/256 = 0.0391 (published to 3 decimals: 0.039)
    assert ap.mcnemar_exact_p(1, 7) == pytest.approx(18 / 256, rel=1e-12)
    assert ap.mcnemar_midp(1, 7) == pytest.approx(10 / 256, rel=1e-12)
    assert round(ap.mcnemar_midp(7, 1), 3) == 0.039
    # ties: 1 - P(X = n12) / 2 (the supplement's rule), e.g. 3 vs 3: 1 - 20/64/2
    assert ap.mcnemar_midp(3, 3) == pytest.approx(1 - 10 / 64, rel=1e-12)


def test_paired_bootstrap_draws_are_shared_and_seeded():
    data = _sim({"a": 0.5, "b": 0.7}, 30, seed=2)
    data2 = data[data.system == "a"].assign(system="c")           # c identical to a
    out = ap.alternatives(pd.concat([data, data2]), random_state=4, n_resamples=400, lm_eval_iters=1000)
    r = _row(out, "paired_bootstrap", pair=("a", "c"))
    assert (r.conf_low, r.conf_high, r.p_value) == (0.0, 0.0, 1.0)   # paired draws: the difference is 0
    # the percentile interval of the means of the seeded index matrix (numpy Generator, random_state)
    y = data.pivot(index="question", columns="system", values="score")
    idx = np.random.default_rng(4).integers(0, 30, size=(400, 30))
    ma, mb = y["a"].to_numpy()[idx].mean(axis=1), y["b"].to_numpy()[idx].mean(axis=1)
    np.testing.assert_allclose([_row(out, "paired_bootstrap", "a").conf_low, _row(out, "paired_bootstrap", "a").conf_high],
                               np.quantile(ma, [0.025, 0.975]), rtol=1e-12)
    r = _row(out, "paired_bootstrap", pair=("a", "b"))
    np.testing.assert_allclose([r.conf_low, r.conf_high], np.quantile(ma - mb, [0.025, 0.975]), rtol=1e-12)


# ------------------------------------------------------------------------------------------- lm-eval

def _lm_eval_loop(xs, iters):
    """lm-eval's _bootstrap_internal_no_mp, as its source writes it (pure Python)."""
    res = []
    chunk_size = min(1000, iters)
    for i in range(iters // chunk_size):
        rnd = random.Random(i)
        for _ in range(chunk_size):
            s = rnd.choices(xs, k=len(xs))
            res.append(sum(s) / len(s))
    return res


def test_lm_eval_mean_stderr_hand_case():
    # [1, 0, 1, 1]: mean 0.75, sample SD sqrt(0.75 / 3) = 0.5, stderr 0.5 / 2 = 0.25
    assert ap.lm_eval_mean_stderr([1, 0, 1, 1]) == pytest.approx(0.25, rel=1e-15)
    assert ap.lm_eval_mean_stderr([0.2, 0.4, 0.9]) == pytest.approx(np.std([0.2, 0.4, 0.9], ddof=1) / math.sqrt(3))


def test_lm_eval_bootstrap_is_lm_evals_own_draws():
    xs = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.0]
    ours = ap.lm_eval_bootstrap_replicates(lambda m: m.mean(axis=1), xs, 3000)
    theirs = _lm_eval_loop(xs, 3000)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    # lm-eval's iters // chunk: 2500 resamples -> 2 chunks of 1000
    assert len(ap.lm_eval_bootstrap_replicates(lambda m: m.mean(axis=1), xs, 2500)) == 2000
    # the source's comment: for the mean it estimates the SE without Bessel's correction, s_n / sqrt(n)
    y = np.random.default_rng(0).random(50)
    se = ap.lm_eval_bootstrap_stderr(lambda m: m.mean(axis=1), y, 20_000)
    assert se == pytest.approx(np.std(y) / math.sqrt(50), rel=0.03)      # MC SE of an SD at B = 20,000: 0.5%


def test_lm_eval_rows(binary_out):
    data, out = binary_out
    y = data[data.system == "alpha"]["score"].to_numpy()
    r = _row(out, "lm_eval_stderr", "alpha")
    se = np.std(y, ddof=1) / math.sqrt(len(y))
    np.testing.assert_allclose([r.conf_low, r.conf_high], [y.mean() - 1.96 * se, y.mean() + 1.96 * se])
    r = _row(out, "lm_eval_bootstrap", "alpha")
    se = np.std(_lm_eval_loop(list(y), 2000), ddof=1)
    np.testing.assert_allclose([r.conf_low, r.conf_high], [y.mean() - 1.96 * se, y.mean() + 1.96 * se])


# ------------------------------------------------------------------------------------------- Inspect

def test_inspect_adapter_against_inspect_metrics():
    pytest.importorskip("inspect_ai")
    from inspect_ai.scorer import SampleScore, Score, ci, ci_wilson, mean_score, stderr
    data = _sim({"x": 0.4, "y": 0.8}, 24, epochs=3, cluster_size=4, seed=8)
    out = ap.alternatives(data, random_state=5, n_resamples=200, lm_eval_iters=1000)
    for s in ["x", "y"]:
        g = data[data.system == s]
        scores = []
        for q, gq in g.groupby("question"):          # by hand: Inspect's mean_score over the 3 epochs
            v = mean_score()([Score(value=v) for v in gq.sort_values("epoch")["score"]]).value
            assert v == pytest.approx(gq["score"].mean())
            scores.append(SampleScore(score=Score(value=v), sample_id=q,
                                      sample_metadata={"cluster": gq["cluster"].iloc[0]}))
        m = float(np.mean([x.score.value for x in scores]))
        se = stderr(cluster="cluster")(scores)
        r = _row(out, "inspect_stderr", s)
        np.testing.assert_allclose([r.estimate, r.conf_low, r.conf_high],
                                   [m, m - 1.959963984540054 * se, m + 1.959963984540054 * se], rtol=1e-12)
        c = ci(method="t", cluster="cluster")(scores)
        r = _row(out, "inspect_ci_t", s)
        np.testing.assert_allclose([r.conf_low, r.conf_high], [c["lower"], c["upper"]], rtol=1e-12)
        c = ci_wilson(cluster="cluster")(scores)
        r = _row(out, "inspect_ci_wilson", s)
        np.testing.assert_allclose([r.conf_low, r.conf_high], [c["lower"], c["upper"]], rtol=1e-12)
    # the bootstrap uses numpy's global RNG: the adapter seeds it with random_state and restores it
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    again = ap.alternatives(data, random_state=5, n_resamples=200, lm_eval_iters=1000)
    assert (np.random.get_state()[1] == before).all()
    pd.testing.assert_frame_equal(out, again)


# ----------------------------------------------------------------------------------------- evalstats

def test_evalstats_adapter_against_evalstats():
    es = pytest.importorskip("evalstats")
    import warnings
    data = _sim({"m2": 0.55, "m1": 0.75}, 40, runs=3, seed=9)
    out = ap.alternatives(data, random_state=2, n_resamples=300, lm_eval_iters=1000)
    arr = np.stack([data[data.system == s].pivot(index="question", columns="run", values="score").to_numpy()
                    for s in ["m1", "m2"]])                # (systems, questions, runs), sorted labels
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bench = es.BenchmarkResult(scores=arr, template_labels=["m1", "m2"],
                                   input_labels=sorted(data.question.unique()))
        b = es.analyze(bench, method="auto", correction="none", simultaneous_ci=False,
                       rng=np.random.default_rng(2), n_bootstrap=300)
    pr = b.pairwise.results[("m1", "m2")]
    assert pr.test_method.startswith("bonett_price")          # the clustered multi-run variant at R = 3
    r = _row(out, "evalstats_auto", pair=("m1", "m2"))
    np.testing.assert_allclose([r.estimate, r.conf_low, r.conf_high, r.p_value],
                               [pr.point_diff, pr.ci_low, pr.ci_high, pr.p_value], rtol=1e-12)
    for k, s in enumerate(["m1", "m2"]):
        r = _row(out, "evalstats_auto", s)
        np.testing.assert_allclose([r.conf_low, r.conf_high], [b.robustness.ci_low[k], b.robustness.ci_high[k]])


def test_evalstats_mean_ci_and_tango_documented_entry_points():
    es = pytest.importorskip("evalstats")
    from evalstats.core.paired import pairwise_differences
    data = _sim({"p": 0.3, "q": 0.45}, 30, seed=10)
    out = ap.alternatives(data, random_state=0, n_resamples=300, lm_eval_iters=1000)
    y = data.pivot(index="question", columns="system", values="score")
    # es.mean_ci: "picks the same CI method compare() would use" (Wilson for binary scores)
    for s in ["p", "q"]:
        m = es.mean_ci(y[s].to_numpy())
        assert m.method == "wilson"
        r = _row(out, "evalstats_auto", s)
        np.testing.assert_allclose([r.estimate, r.conf_low, r.conf_high], [m.mean, m.ci_low, m.ci_high])
    t = pairwise_differences(y[["p", "q"]].to_numpy().T, 0, 1, method="tango")
    r = _row(out, "evalstats_tango", pair=("p", "q"))
    np.testing.assert_allclose([r.estimate, r.conf_low, r.conf_high, r.p_value],
                               [t.point_diff, t.ci_low, t.ci_high, t.p_value], rtol=1e-10)


# ---------------------------------------------------------------------------------------------- judges

def test_judge_alternatives_against_ppi_and_r(R):
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(4)
    rows = []
    for s, mu in [("s2", 0.6), ("s1", 0.4)]:
        for i in range(300):
            h = float(rng.random() < mu)
            j = float(np.clip(h * 0.8 + rng.normal(0.1, 0.2), 0, 1))
            rows.append((s, f"i{i}", None, j, h if i % 6 == 0 else np.nan))
    data = pd.DataFrame(rows, columns=["system", "item", "cluster", "judge_score", "human_score"])
    out = ap.judge_alternatives(data)
    assert list(out.columns) == ap._COLUMNS and out.attrs["errors"] == []
    assert sorted(zip(out.method, out.system)) == [("human_t", "s1"), ("human_t", "s2"),
                                                    ("ppi_plusplus", "s1"), ("ppi_plusplus", "s2")]
    for s, g in data.groupby("system"):
        lab = g.human_score.notna()
        Y, Yh, Yu = g.human_score[lab].to_numpy(), g.judge_score[lab].to_numpy(), g.judge_score[~lab].to_numpy()
        lo, hi = ppi_py.ppi_mean_ci(Y, Yh, Yu, alpha=0.05, lam=None)
        r = _row(out, "ppi_plusplus", s)
        np.testing.assert_allclose([r.conf_low, r.conf_high], [np.ravel(lo)[0], np.ravel(hi)[0]], rtol=1e-12)
        assert r.conf_low <= r.estimate <= r.conf_high
        _to_r("yh", Y)
        r = _row(out, "human_t", s)
        np.testing.assert_allclose([r.conf_low, r.conf_high], R("t.test(yh)$conf.int"), rtol=1e-8)


def test_a_peer_that_raises_is_a_recorded_failure(monkeypatch):
    pytest.importorskip("evalstats")
    data = _sim({"a": 0.5, "b": 0.6}, 12, seed=1)

    def boom(des, method, *args):
        if method == "tango":
            raise ValueError("no interval")
        return real(des, method, *args)

    real = ap.evalstats_bundle
    monkeypatch.setattr(ap, "evalstats_bundle", boom)
    out = ap.alternatives(data, n_resamples=100, lm_eval_iters=1000)
    assert out.attrs["errors"] == [dict(method="evalstats_tango", error="ValueError: no interval")]
    r = _row(out, "evalstats_tango", pair=("a", "b"))          # the row is kept, without an answer
    assert np.isnan([r.estimate, r.conf_low, r.conf_high, r.p_value]).all()
    assert np.isfinite(_row(out, "evalstats_newcombe", pair=("a", "b")).conf_low)
    # two runs: evalstats pre-averages them, so its binary-only methods are left out (not failures)
    # (30 questions: at 12 evalstats' Wilcoxon p-value of non-binary data is a scipy permutation test, ~6 s a call)
    out = ap.alternatives(_sim({"a": 0.5, "b": 0.6}, 30, runs=2, seed=1), n_resamples=100, lm_eval_iters=1000)
    assert out.attrs["errors"] == [] and not set(out.method) & {"evalstats_newcombe", "evalstats_wilson"}


def test_binary_methods_follow_the_design_not_the_draw():
    # three epochs that happen to agree on every question: per-question means are 0/1, but the design has
    # epochs, so the one-score-per-question binary methods stay out (the same methods on every data set)
    one = _sim({"a": 0.5, "b": 0.7}, 20, seed=4)
    data = pd.concat([one.assign(epoch=e) for e in (1, 2, 3)], ignore_index=True)
    methods = set(ap.alternatives(data, n_resamples=100, lm_eval_iters=1000)["method"])
    assert not methods & {"wilson", "mcnemar_exact_wald", "newcombe_midp", "evalstats_tango"}
    assert {"inspect_ci_wilson", "evalstats_auto"} <= methods
