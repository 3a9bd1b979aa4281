"""Tests of mixedeval.resampling.leaderboard (Sälevä, Ataman & Lignos 2025): variance
decomposition against hand computation, simulation against closed forms, pairing, the two
published defects (np.triu on (M, M, B) draws; language draws not shared / not redrawn),
determinism, a small coverage simulation, and bad input."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from mixedeval.errors import DataError
from mixedeval.resampling import (
    LeaderboardResult,
    decompose_variance,
    decompose_variance_summary,
    simulate_leaderboard,
)


def replicate_table(rng, means, sigma=0.7, tau=1.0, S=4, B=10, shift_models=None):
    """Replicate table: score = mean + run noise (sigma) + replicate noise (tau), replicate 0
    without replicate noise. ``shift_models`` = {model: (base_model, shift)} copies a model's
    replicates exactly plus a constant (perfectly paired noise)."""
    M, L = means.shape
    rows = []
    store = {}
    for m in range(M):
        for l in range(L):
            seed_eff = rng.normal(0, sigma, S)
            boot = rng.normal(0, tau, (S, B))
            x = means[m, l] + seed_eff[:, None] + np.concatenate([np.zeros((S, 1)), boot], axis=1)
            store[m, l] = x
    if shift_models:
        for m, (base, c) in shift_models.items():
            for l in range(L):
                store[m, l] = store[base, l] + c
    for (m, l), x in store.items():
        for s in range(S):
            for b in range(B + 1):
                rows.append((f"m{m}", f"lang{l}", f"s{s}", b, x[s, b]))
    return pd.DataFrame(rows, columns=["model", "language", "run", "replicate", "score"])


def summary_table(means, eta):
    M, L = means.shape
    return pd.DataFrame({
        "model": np.repeat([f"m{m}" for m in range(M)], L),
        "language": np.tile([f"lang{l}" for l in range(L)], M),
        "mean": means.ravel(),
        "sd_total": np.broadcast_to(eta, means.shape).ravel(),
    })


def sim(vd, **kw):
    kw.setdefault("progress", False)
    kw.setdefault("random_state", 0)
    return simulate_leaderboard(vd, **kw)


def pick(table, **eq):
    mask = np.ones(len(table), bool)
    for k, v in eq.items():
        mask &= table[k].to_numpy() == v
    assert mask.sum() == 1, eq
    return table[mask].iloc[0]


# ---------------------------------------------------------------------------- decomposition

def test_decompose_matches_hand_computation():
    rng = np.random.default_rng(1)
    means = rng.normal(60, 8, (2, 3))
    df = replicate_table(rng, means, S=4, B=6)
    vd = decompose_variance(df, ddof=1)
    for (m, g), cell in df.groupby(["model", "language"]):
        X = cell.pivot(index="run", columns="replicate", values="score").to_numpy()  # (S, B+1)
        S = X.shape[0]
        orig, boot = X[:, 0], X[:, 1:]
        sigma = np.std(orig, ddof=1)
        sigma_se = np.std([np.std(boot[:, b], ddof=1) for b in range(boot.shape[1])], ddof=1)
        tau_s = np.array([np.std(boot[s], ddof=1) for s in range(S)])
        tau, tau_se = tau_s.mean(), np.std(tau_s, ddof=1) / np.sqrt(S)
        eta = np.sqrt(sigma**2 + tau**2)
        eta_se = np.sqrt((sigma * sigma_se) ** 2 + (tau * tau_se) ** 2) / eta
        mean_se = np.sqrt(sigma**2 / S + np.std(boot.mean(axis=0), ddof=1) ** 2)
        row = pick(vd.cells, model=m, language=g)
        np.testing.assert_allclose(
            row[["estimate", "sigma", "sigma_se", "tau", "tau_se", "eta", "eta_se", "std_error"]].to_numpy(float),
            [orig.mean(), sigma, sigma_se, tau, tau_se, eta, eta_se, mean_se], rtol=1e-12)
        assert row["n_runs"] == 4 and row["n_replicates"] == 6
    for ddof in (0, 1):
        vd = decompose_variance(df, ddof=ddof)
        for m in ("m0", "m1"):
            c = vd.cells[vd.cells["model"] == m]
            mu, eta = c["estimate"].to_numpy(), c["eta"].to_numpy()
            row = pick(vd.models, model=m)
            np.testing.assert_allclose(row["nu"], np.std(mu, ddof=ddof), rtol=1e-12)
            np.testing.assert_allclose(row["se_mean_fixed_languages"], np.sqrt((eta**2).sum()) / 3, rtol=1e-12)
            np.testing.assert_allclose(row["se_mean_resampled_languages"], np.std(mu) / np.sqrt(3), rtol=1e-12)


def test_decompose_recovers_known_components():
    rng = np.random.default_rng(2)
    means = rng.normal(50, 5, (2, 15))
    vd = decompose_variance(replicate_table(rng, means, sigma=0.8, tau=1.5, S=8, B=40))
    assert abs(vd.cells["sigma"].mean() / 0.8 - 1) < 0.08
    assert abs(vd.cells["tau"].mean() / 1.5 - 1) < 0.03
    # the reported SEs describe the scatter of the estimates across cells
    assert 0.6 < vd.cells["tau"].std() / vd.cells["tau_se"].mean() < 1.6
    summ = vd.summary()
    assert set(summ["component"]) == {"nu", "eta", "sigma", "tau"}
    assert len(summ) == 2 * 4


def test_decompose_summary_and_parity_with_replicates():
    rng = np.random.default_rng(3)
    vd = decompose_variance(replicate_table(rng, rng.normal(60, 5, (2, 4))))
    c = vd.cells.rename(columns={"sigma": "sd_run", "tau": "sd_boot"})
    vs = decompose_variance_summary(c, mean="estimate", n_runs="n_runs")
    np.testing.assert_allclose(vs.cells["eta"], vd.cells["eta"], rtol=1e-12)
    np.testing.assert_allclose(vs.models["nu"], vd.models["nu"], rtol=1e-12)
    np.testing.assert_allclose(vs.cells["std_error"], np.sqrt(c["sd_run"] ** 2 / 4 + c["sd_boot"] ** 2), rtol=1e-12)
    vt = decompose_variance_summary(c.assign(sd_total=c["sd_run"] + 1), mean="estimate", sd_total="sd_total")
    np.testing.assert_allclose(vt.cells["eta"], c["sd_run"] + 1)
    assert vt.cells["sigma"].isna().all()
    assert vs.source == "summary" and vd.source == "replicates"
    assert "nu" in repr(vd) and "<table" in vd._repr_html_()
    assert vd.to_dict()["cells"][0]["model"] == "m0"


# ---------------------------------------------------------------------------- closed forms

def test_fixed_languages_parametric_closed_forms():
    rng = np.random.default_rng(4)
    means = rng.normal(60, 6, (3, 5))
    eta = rng.uniform(0.5, 2.0, (3, 5))
    vd = decompose_variance_summary(summary_table(means, eta).assign(sd_total=eta.ravel()), sd_total="sd_total")
    r = sim(vd, n_resamples=20_000, aggregators=("mean",))
    for m in range(3):
        row = pick(r.aggregates, aggregator="mean", model=f"m{m}")
        assert row["estimate"] == pytest.approx(means[m].mean(), rel=1e-12)
        assert row["std_error"] == pytest.approx(np.sqrt((eta[m] ** 2).sum()) / 5, rel=0.03)
        # the three intervals
        assert row["conf_high_se"] - row["conf_low_se"] == pytest.approx(4 * row["std_error"], rel=1e-12)
        assert row["conf_high_hw"] - row["conf_low_hw"] == pytest.approx(row["conf_high"] - row["conf_low"], rel=1e-12)
    for a, b in itertools.combinations(range(3), 2):
        # SD of a difference of independent normals
        sd = np.sqrt((eta[a] ** 2 + eta[b] ** 2).sum()) / 5
        row = pick(r.pairwise, aggregator="mean", model_a=f"m{a}", model_b=f"m{b}")
        assert row["std_error"] == pytest.approx(sd, rel=0.03)
        assert row["snr"] == pytest.approx(row["delta"] / row["std_error"], rel=1e-12)
        for l in range(5):
            lr = pick(r.language_pairwise, language=f"lang{l}", model_a=f"m{a}", model_b=f"m{b}")
            assert lr["delta"] == pytest.approx(means[a, l] - means[b, l], rel=1e-12)
            assert lr["std_error"] == pytest.approx(np.sqrt(eta[a, l] ** 2 + eta[b, l] ** 2), rel=1e-12)
            assert lr["significant"] == (abs(lr["snr"]) >= 2)


def test_no_triu_defect_pairwise_sd_not_inflated():
    """Far-apart models and few replicates: np.triu on an (M, M, B) array of deltas zeroes draws
    (entries with b < column index) and inflates SD(delta). Ours matches the closed form, and
    the buggy construction on the same draws would not."""
    means = np.array([[10.0, 12, 11, 9], [60, 62, 61, 59], [110, 112, 111, 109]])
    vd = decompose_variance_summary(summary_table(means, 1.0), sd_total="sd_total")
    r = sim(vd, n_resamples=400, aggregators=("mean",), random_state=3)
    closed = np.sqrt(8) / 4
    got = r.pairwise["std_error"].to_numpy()
    np.testing.assert_allclose(got, closed, rtol=0.12)
    assert (r.pairwise["conf_high"] < 0).all()  # a < b by 50 points: never a zero draw
    d = r.draws[:, :, 0]  # (B, M)
    buggy = np.triu(d.T[:, None, :] - d.T[None, :, :])  # (M, M, B) as in the toolkit
    buggy_sd = buggy[0, 2].std(ddof=1)
    assert buggy_sd > 1.5 * closed  # what the defect looks like; the test above would catch it


def test_bootstrapped_languages_closed_form_and_pairing():
    rng = np.random.default_rng(5)
    base = rng.normal(60, 6, 6)
    means = np.vstack([base, base + 3.0])  # model 1 = model 0 + 3 in every language
    vd = decompose_variance_summary(summary_table(means, 0.0), sd_total="sd_total")
    r = sim(vd, languages="bootstrap", n_resamples=20_000, aggregators=("mean", "median"))
    row = pick(r.aggregates, aggregator="mean", model="m0")
    assert row["std_error"] == pytest.approx(np.std(base) / np.sqrt(6), rel=0.03)  # nu_0 / sqrt(L)
    # languages redrawn in every replicate (not drawn once)
    assert len(np.unique(np.round(r.draws[:, 0, 0], 10))) > 100
    # ... and shared by the two models: the difference is exactly the shift, zero width
    for agg in ("mean", "median"):
        p = pick(r.pairwise, aggregator=agg)
        assert p["std_error"] < 1e-9
        assert p["conf_low"] == pytest.approx(-3.0, abs=1e-9) and p["conf_high"] == pytest.approx(-3.0, abs=1e-9)
    # within-language noise is not added on top by default: the same numbers with eta > 0
    eta = rng.uniform(0.5, 2, (2, 6))
    vd2 = decompose_variance_summary(summary_table(means, eta), sd_total="sd_total")
    r2 = sim(vd2, languages="bootstrap", n_resamples=20_000, aggregators=("mean",))
    se = pick(vd2.models, model="m1")["se_mean_resampled_languages"]
    assert se == pytest.approx(np.std(base) / np.sqrt(6), rel=1e-12)
    assert pick(r2.aggregates, model="m1")["std_error"] == pytest.approx(se, rel=0.03)
    assert not r2.add_noise and not r2.warnings


def _leaderboard_with_noise(rng, M=3, L=8):
    """Cell estimates with language effects, model-by-language interactions and unequal eta."""
    lang = rng.normal(0, 6, L)
    means = 60 + np.arange(M)[:, None] * 1.5 + lang[None, :] + rng.normal(0, 0.8, (M, L))
    return means, rng.uniform(0.5, 2.5, (M, L))


def test_bootstrapped_languages_do_not_double_count_the_noise():
    """The fix of 0.2.0: with languages="bootstrap" the default resamples the cell estimates
    alone, and the simulated SE of the aggregate mean and of a pairwise difference match their
    closed forms SD_0 / sqrt(k) within Monte-Carlo error; add_noise=True is the published
    two-stage procedure, whose SEs carry the within-language variance a second time."""
    rng = np.random.default_rng(21)
    M, L, B = 3, 8, 40_000
    means, eta = _leaderboard_with_noise(rng, M, L)
    vd = decompose_variance_summary(summary_table(means, eta), sd_total="sd_total")
    default = sim(vd, languages="bootstrap", n_resamples=B, aggregators=("mean",), random_state=1)
    noisy = sim(vd, languages="bootstrap", add_noise=True, n_resamples=B, aggregators=("mean",), random_state=1)
    assert not default.add_noise and noisy.add_noise
    assert [w.kind for w in noisy.warnings] == ["double_counting"] and not default.warnings
    mc = 4 / np.sqrt(2 * B)  # 4 Monte-Carlo standard errors of an SD estimated from B draws (normal theory)
    for m in range(M):
        closed = np.std(means[m]) / np.sqrt(L)  # ddof 0: the plug-in variance of the bootstrap
        assert pick(vd.models, model=f"m{m}")["se_mean_resampled_languages"] == pytest.approx(closed, rel=1e-12)
        assert pick(default.aggregates, model=f"m{m}")["std_error"] == pytest.approx(closed, rel=mc)
        published = np.sqrt((np.var(means[m]) + np.mean(eta[m] ** 2)) / L)
        assert pick(noisy.aggregates, model=f"m{m}")["std_error"] == pytest.approx(published, rel=mc)
    for a, b in itertools.combinations(range(M), 2):
        d = means[a] - means[b]
        closed = np.std(d) / np.sqrt(L)
        got = pick(default.pairwise, model_a=f"m{a}", model_b=f"m{b}")
        assert got["std_error"] == pytest.approx(closed, rel=mc)
        assert got["snr"] == pytest.approx(got["delta"] / got["std_error"], rel=1e-12)
        published = np.sqrt((np.var(d) + np.mean(eta[a] ** 2 + eta[b] ** 2)) / L)
        assert pick(noisy.pairwise, model_a=f"m{a}", model_b=f"m{b}")["std_error"] == pytest.approx(published, rel=mc)
        assert published > 1.5 * closed  # the double counting is not a detail here
    # fewer languages per replicate: SD_0 / sqrt(k)
    k5 = sim(vd, languages="bootstrap", n_languages=5, n_resamples=B, aggregators=("mean",), random_state=2)
    assert pick(k5.aggregates, model="m0")["std_error"] == pytest.approx(np.std(means[0]) / np.sqrt(5), rel=mc)
    # the per-language comparisons still describe the within-language noise
    pd.testing.assert_frame_equal(default.language_pairwise, noisy.language_pairwise)


def test_the_default_language_bootstrap_estimates_the_sampling_variance():
    """Why the default: observed cell scores are language effects plus within-language noise.
    Over many leaderboards (languages and noise drawn anew), the SD of the observed mean
    difference is what the language bootstrap estimates (SD_0(d) / sqrt(L), its closed form,
    tested above against the simulation); adding the noise again overstates it."""
    rng = np.random.default_rng(22)
    L, reps, s_lang, s_int, eta = 30, 4000, 4.0, 1.0, 1.2
    lang = rng.normal(0, s_lang, (reps, 1, L))
    true = lang + np.array([0.5, 0.0])[None, :, None] + rng.normal(0, s_int, (reps, 2, L))
    obs = true + rng.normal(0, eta, (reps, 2, L))
    d = obs[:, 0] - obs[:, 1]  # (reps, L) per-language differences of one leaderboard
    truth = d.mean(axis=1).std(ddof=1)  # sampling SD of the observed mean difference
    default = np.sqrt(np.mean(d.var(axis=1) / L))
    published = np.sqrt(np.mean((d.var(axis=1) + 2 * eta**2) / L))
    assert default / truth == pytest.approx(np.sqrt((L - 1) / L), abs=0.05)  # the bootstrap's plug-in bias only
    # about sqrt((L - 1) / L + 2 eta^2 / (2 s_int^2 + 2 eta^2)) = 1.25: the noise counted twice
    assert published / truth > 1.2


def test_add_noise_arguments():
    vd = decompose_variance_summary(summary_table(np.array([[60.0, 62.0], [58.0, 66.0]]), 1.0), sd_total="sd_total")
    with pytest.raises(DataError, match="nothing random"):
        sim(vd, add_noise=False)
    with pytest.raises(DataError, match="add_noise must be"):
        sim(vd, languages="bootstrap", add_noise="yes")
    assert sim(vd, n_resamples=64).add_noise  # fixed languages: noise is the only randomness


def test_subsampled_languages_exact_distribution():
    base = np.array([50.0, 55, 61, 70, 72])
    means = np.vstack([base, base - 1.0])
    vd = decompose_variance_summary(summary_table(means, 0.0), sd_total="sd_total")
    r = sim(vd, languages="subsample", n_languages=2, n_resamples=20_000, aggregators=("mean",))
    vals = np.round(r.draws[:, 0, 0], 9)
    exact = sorted(np.round((a + b) / 2, 9) for a, b in itertools.combinations(base, 2))
    u, cnt = np.unique(vals, return_counts=True)
    assert list(u) == sorted(set(exact))
    np.testing.assert_allclose(cnt / cnt.sum(), 0.1, atol=0.012)  # each of the C(5,2) subsets
    s2 = np.var(base, ddof=1)
    assert pick(r.aggregates, model="m0")["std_error"] == pytest.approx(np.sqrt(s2 / 2 * (1 - 2 / 5)), rel=0.03)
    assert pick(r.pairwise, aggregator="mean")["std_error"] < 1e-9  # same subset for both models


def test_nonparametric_noise_paired_and_unpaired():
    rng = np.random.default_rng(6)
    means = rng.normal(60, 5, (2, 4))
    df = replicate_table(rng, means, sigma=0.5, tau=1.0, S=3, B=30, shift_models={1: (0, 2.0)})
    vd = decompose_variance(df)
    paired = sim(vd, noise="nonparametric", pair_noise=True, n_resamples=5000, aggregators=("mean",))
    assert (paired.language_pairwise["std_error"] < 1e-9).all()
    assert pick(paired.pairwise, aggregator="mean")["std_error"] < 1e-9
    paired_langs = sim(vd, noise="nonparametric", pair_noise=True, languages="bootstrap", n_resamples=2000,
                       aggregators=("mean", "median"))  # an additive shift is not constant on the geometric mean
    assert (paired_langs.pairwise["std_error"] < 1e-9).all()
    assert (paired_langs.aggregates["std_error"] > 0.5).all()
    unpaired = sim(vd, noise="nonparametric", n_resamples=20_000, aggregators=("mean",))
    for l in range(4):
        reps = df[(df.model == "m0") & (df.language == f"lang{l}") & (df.replicate > 0)]["score"]
        lr = pick(unpaired.language_pairwise, language=f"lang{l}")
        assert lr["std_error"] == pytest.approx(np.sqrt(2) * reps.std(ddof=0), rel=1e-12)
        assert lr["boot_mean"] == pytest.approx(-2.0, abs=1e-9)  # mean of replicate differences
    # pairing is refused where the replicates differ between models
    bad = df[~((df.model == "m1") & (df.replicate == 30))]
    with pytest.raises(DataError, match="pair_noise"):
        sim(decompose_variance(bad), noise="nonparametric", pair_noise=True)


def test_exact_language_moments_match_simulation():
    """With one language the aggregate is the language score, so the Monte-Carlo SD of the
    aggregate difference must agree with the exact per-language SD (paired and unpaired)."""
    rng = np.random.default_rng(12)
    df = replicate_table(rng, np.array([[60.0], [58.0]]), S=3, B=40)
    extra = df[df.model == "m0"].assign(model="m1")
    extra["score"] = extra["score"] * 0.6 + rng.normal(0, 0.8, len(extra)) + 20  # correlated with m0
    vd = decompose_variance(pd.concat([df[df.model == "m0"], extra]))
    for paired in (False, True):
        r = sim(vd, noise="nonparametric", pair_noise=paired, n_resamples=30_000, aggregators=("mean",))
        mc = pick(r.pairwise, aggregator="mean")
        ex = r.language_pairwise.iloc[0]
        assert mc["std_error"] == pytest.approx(ex["std_error"], rel=0.03)
        assert mc["boot_mean"] == pytest.approx(ex["boot_mean"], abs=0.05 * ex["std_error"])


def test_ranks_beats_and_direction():
    means = np.array([[80.0, 82, 81], [70, 71, 69], [60, 61, 62]])
    vd = decompose_variance_summary(summary_table(means, 0.3), sd_total="sd_total")
    r = sim(vd, n_resamples=2000)
    rk = r.ranks[r.ranks["aggregator"] == "mean"]
    P = rk[["p_rank_1", "p_rank_2", "p_rank_3"]].to_numpy()
    np.testing.assert_allclose(P.sum(axis=0), 1.0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert list(rk["observed_rank"]) == [1, 2, 3] and P[0, 0] == 1.0
    bt = r.p_beats("mean").to_numpy()
    np.testing.assert_allclose(bt + bt.T, np.where(np.eye(3, dtype=bool), np.nan, 1.0))
    low = sim(vd, n_resamples=200, higher_is_better=False)  # e.g. an error rate
    assert list(low.ranks[low.ranks["aggregator"] == "mean"]["observed_rank"]) == [3, 2, 1]
    assert pick(low.pairwise, aggregator="mean", model_a="m0", model_b="m1")["prob_a_better"] == 0.0


def test_determinism_and_chunk_invariance():
    rng = np.random.default_rng(7)
    df = replicate_table(rng, rng.normal(60, 5, (3, 4)), S=3, B=8)
    vd = decompose_variance(df)
    for kw in (dict(), dict(languages="bootstrap"), dict(noise="nonparametric", languages="bootstrap", add_noise=True),
               dict(noise="nonparametric", pair_noise=True, languages="subsample", n_languages=2, add_noise=True)):
        a = sim(vd, random_state=11, n_resamples=300, **kw)
        for cs in (1, 7, 64, 10_000):  # block-seeded: the chunk size is only the progress step
            b = sim(vd, random_state=11, n_resamples=300, chunk_size=cs, **kw)
            np.testing.assert_array_equal(a.draws, b.draws)
            for t in ("aggregates", "pairwise", "language_pairwise", "ranks"):
                pd.testing.assert_frame_equal(getattr(a, t), getattr(b, t))
        longer = sim(vd, random_state=11, n_resamples=500, **kw)
        np.testing.assert_array_equal(a.draws, longer.draws[:300])  # a prefix of a longer run
        c = sim(vd, random_state=12, n_resamples=300, **kw)
        assert not np.array_equal(a.draws, c.draws)
    g = sim(vd, random_state=np.random.default_rng(5), n_resamples=50)
    g2 = sim(vd, random_state=np.random.default_rng(5), n_resamples=50)
    assert isinstance(g, LeaderboardResult) and np.array_equal(g.draws, g2.draws)
    assert g.table is g.aggregates and vd.table is vd.cells


def test_tiny_memory_budget_batches_the_rows_of_a_block(monkeypatch):
    """Rows of a block are drawn in batches whose size depends on the problem's shape only."""
    from mixedeval.resampling import _draws as dr

    rng = np.random.default_rng(13)
    vd = decompose_variance(replicate_table(rng, rng.normal(60, 5, (3, 4)), S=3, B=8))
    kw = dict(noise="nonparametric", languages="bootstrap", add_noise=True, n_resamples=700, random_state=4)
    full = sim(vd, **kw)
    monkeypatch.setattr(dr, "CHUNK_BYTES", 3 * 8 * (6 * 3 * 4 + 4))  # 3 replicates per batch
    small = sim(vd, **kw)
    np.testing.assert_array_equal(small.draws, sim(vd, chunk_size=1, **kw).draws)
    assert small.aggregates["std_error"].to_numpy() == pytest.approx(full.aggregates["std_error"].to_numpy(),
                                                                      rel=0.2)


def test_center_and_geometric_mean_warnings():
    means = np.array([[2.0, 3.0, 2.5], [3.0, 2.0, 4.0]])
    vd = decompose_variance_summary(summary_table(means, 1.5), sd_total="sd_total")
    r = sim(vd, n_resamples=2000, center="boot_mean")
    row = pick(r.aggregates, aggregator="mean", model="m0")
    assert (row["conf_low_se"] + row["conf_high_se"]) / 2 == pytest.approx(row["boot_mean"])
    gm = r.aggregates[r.aggregates["aggregator"] == "geometric_mean"]
    assert (gm["n_draws"] < 2000).all()
    assert any(w.kind == "undefined_draws" for w in r.warnings)
    assert "aggregates" in repr(r) and r.to_frame().shape[0] == 6
    assert r.to_dict()["pairwise"]


def test_dataframe_inputs_accepted():
    means = np.array([[60.0, 62.0], [58.0, 66.0]])
    r = sim(summary_table(means, 1.0), n_resamples=100)
    assert r.aggregates["estimate"].iloc[0] == pytest.approx(61.0)
    rng = np.random.default_rng(8)
    r2 = sim(replicate_table(rng, means), n_resamples=100, noise="nonparametric")
    assert r2.noise == "nonparametric"


# ---------------------------------------------------------------------------- coverage

def test_coverage_of_mean_with_bootstrapped_languages():
    """Languages drawn from a population (nu = 5) and noise eta = 1: intervals for the
    population mean from the bootstrapped-language simulation cover at about the nominal rate."""
    rng = np.random.default_rng(9)
    L, reps, hits_pct, hits_se = 40, 150, 0, 0
    for _ in range(reps):
        lang = rng.normal(70, 5, L)
        obs = lang + rng.normal(0, 1, L)
        vd = decompose_variance_summary(summary_table(obs[None, :], 1.0), sd_total="sd_total")
        r = sim(vd, languages="bootstrap", n_resamples=400, aggregators=("mean",), random_state=rng)
        row = r.aggregates.iloc[0]
        hits_pct += row["conf_low"] <= 70 <= row["conf_high"]
        hits_se += row["conf_low_se"] <= 70 <= row["conf_high_se"]
    assert 0.87 <= hits_pct / reps <= 0.99
    assert 0.88 <= hits_se / reps <= 1.0


# ---------------------------------------------------------------------------- bad input

def test_bad_input_decompose():
    rng = np.random.default_rng(10)
    df = replicate_table(rng, rng.normal(60, 5, (2, 2)), S=3, B=4)
    with pytest.raises(DataError, match="'score'"):
        decompose_variance(df.drop(columns="score"))
    with pytest.raises(DataError, match="non-finite"):
        decompose_variance(df.assign(score=df["score"].where(df.index != 3, np.inf)))
    with pytest.raises(DataError, match="duplicated"):
        decompose_variance(pd.concat([df, df.iloc[:1]]))
    with pytest.raises(DataError, match="fewer than 2 runs"):
        decompose_variance(df[df.run == "s0"])
    with pytest.raises(DataError, match="replicate=0|original test set"):
        decompose_variance(df[~((df.run == "s1") & (df.replicate == 0))])
    with pytest.raises(DataError, match="not shared"):
        decompose_variance(df[~((df.run == "s1") & (df.replicate == 4))])
    with pytest.raises(DataError, match="fewer than 2 bootstrap"):
        decompose_variance(df[df.replicate <= 1])
    with pytest.raises(DataError, match="integers >= 0"):
        decompose_variance(df.assign(replicate=df["replicate"] - 1))
    with pytest.raises(DataError, match="ddof"):
        decompose_variance(df, ddof=-1)
    original = df.copy()
    decompose_variance(df)
    pd.testing.assert_frame_equal(df, original)  # the user's table is not modified


def test_bad_input_simulate():
    means = np.array([[60.0, 62.0, 61.0], [58.0, 66.0, 63.0]])
    summ = summary_table(means, 1.0)
    vd = decompose_variance_summary(summ, sd_total="sd_total")
    with pytest.raises(DataError, match="missing"):
        sim(decompose_variance_summary(summ.iloc[:-1], sd_total="sd_total"))
    with pytest.raises(DataError, match="nonparametric"):
        sim(vd, noise="nonparametric")
    with pytest.raises(DataError, match="pair_noise"):
        sim(vd, pair_noise=True)
    with pytest.raises(DataError, match="n_languages"):
        sim(vd, languages="subsample")
    with pytest.raises(DataError, match="n_languages"):
        sim(vd, languages="subsample", n_languages=3)
    with pytest.raises(DataError, match="geometric mean"):
        sim(decompose_variance_summary(summary_table(means - 60, 1.0), sd_total="sd_total"))
    with pytest.raises(DataError, match="level"):
        sim(vd, level=95)
    with pytest.raises(DataError, match="aggregator"):
        sim(vd, aggregators=("harmonic",))
    with pytest.raises(DataError, match="random_state"):
        sim(vd, random_state="seed")
    with pytest.raises(DataError, match="n_resamples"):
        sim(vd, n_resamples=1)
    with pytest.raises(DataError, match="decompose_variance"):
        simulate_leaderboard([1, 2, 3])
    with pytest.raises(DataError, match="sd_run"):
        decompose_variance_summary(summ, sd_run=None)
    with pytest.raises(DataError, match="negative"):
        decompose_variance_summary(summ.assign(sd_total=-1.0), sd_total="sd_total")
