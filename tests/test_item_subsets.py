"""select_items / estimate_scores / next_items (mixedeval.workflows.item_subsets) on small planted
simulations, with the pieces checked against independent computations: the posterior predictive
moments against a dense-grid integral, the information ranking against a direct formula, the
k-means clusters against planted groups; the adapter on an IrtResult-like object."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import special

import mixedeval as me
from mixedeval.errors import DataError
from mixedeval.inference._irt_numpy import irt_numpy, simulate_2pl, wide_frame
from mixedeval.workflows import item_subsets as S
from mixedeval.workflows._irt_bank import as_bank


@pytest.fixture(scope="module")
def sim():
    Y, theta, a, b = simulate_2pl(230, 300, random_state=4)
    W = wide_frame(Y)
    cal = irt_numpy(W.iloc[:150], "2pl")
    return cal, W.iloc[150:], theta[150:]


def test_stratified_anchors_one_per_difficulty_stratum(sim):
    cal, _, _ = sim
    sub = me.select_items(cal, 20, "stratified")
    t = sub.table
    assert len(t) == 20 and t["item"].is_unique and t["weight"].sum() == pytest.approx(1)
    order = cal.items.sort_values("difficulty", kind="stable")["item"].tolist()
    for k, chunk in enumerate(np.array_split(np.array(order, dtype=object), 20)):
        info = t.loc[t["group"] == k]
        assert info["item"].iloc[0] in set(chunk)  # the anchor lies in its stratum
        # and is the most informative there (information averaged over N(0, 1), by a direct grid sum)
        bank = cal.items.set_index("item").loc[list(chunk)]
        grid = np.linspace(-8, 8, 4001)
        dens = np.exp(-grid ** 2 / 2) / np.sqrt(2 * np.pi) * (grid[1] - grid[0])
        p = special.expit(bank["discrimination"].to_numpy()[:, None] * (grid[None, :] - bank["difficulty"].to_numpy()[:, None]))
        direct = (bank["discrimination"].to_numpy()[:, None] ** 2 * p * (1 - p)) @ dens
        assert bank.index[np.argmax(direct)] == info["item"].iloc[0]
        assert info["information"].iloc[0] == pytest.approx(direct.max(), rel=1e-6)


def test_random_anchors_follow_random_state(sim):
    cal, _, _ = sim
    a = me.select_items(cal, 15, "random", random_state=3)
    b = me.select_items(cal, 15, "random", random_state=3)
    c = me.select_items(cal, 15, "random", random_state=4)
    assert a.anchors == b.anchors and a.anchors != c.anchors
    assert np.allclose(a.table["weight"], 1 / 15)


def test_cluster_anchors_recover_planted_correctness_groups():
    rng = np.random.default_rng(0)
    groups = rng.random((6, 40)) < 0.5  # 6 correctness patterns over 40 systems
    sizes = [3, 5, 7, 9, 11, 13]
    cols = np.concatenate([np.repeat(groups[g][:, None], s, axis=1) for g, s in enumerate(sizes)], axis=1).astype(float)
    items = [f"q{j:03d}" for j in range(cols.shape[1])]
    fake = SimpleNamespace(  # an IrtResult-like calibration (the adapter's other input)
        items=pd.DataFrame({"item": items, "difficulty": np.zeros(len(items)), "discrimination": np.ones(len(items))}),
        abilities=pd.DataFrame({"system": [f"s{i}" for i in range(40)], "ability": np.zeros(40), "std_error": 1.0}),
        model="2pl", responses=wide_frame(cols, items=items).reset_index().melt(
            id_vars="system", var_name="item", value_name="score"))
    sub = me.select_items(fake, 6, "cluster", random_state=1)
    assert sorted(sub.table["group_size"]) == sizes
    assert sub.table["weight"].sum() == pytest.approx(1)
    with pytest.raises(DataError, match="responses"):
        me.select_items(SimpleNamespace(**{**vars(fake), "responses": None}), 6, "cluster")


def test_posterior_moments_equal_a_dense_grid_integral(sim):
    cal, new, _ = sim
    sub = me.select_items(cal, 25, "stratified")
    ans = new.iloc[:3][list(sub.anchors)]
    res = me.estimate_scores(cal, ans, sub, n_folds=0)
    bank = as_bank(cal).shrunk()  # new systems are scored with the empirical-Bayes discriminations
    grid = np.linspace(-9, 9, 8001)
    post_tab = res.estimates("posterior").set_index("system")
    for name, row in ans.iterrows():
        seen = bank.index(row.index, "t")
        y = row.to_numpy(float)
        P = special.expit(bank.discrimination[None, :] * (grid[:, None] - bank.difficulty[None, :]))
        loglik = (y * np.log(P[:, seen]) + (1 - y) * np.log(1 - P[:, seen])).sum(axis=1) - grid ** 2 / 2
        w = np.exp(loglik - loglik.max())
        w /= w.sum()
        unseen = np.setdiff1d(np.arange(len(bank.items)), seen)
        T = P[:, unseen].sum(axis=1)
        mean = (y.sum() + w @ T) / len(bank.items)
        var = (w @ (P[:, unseen] * (1 - P[:, unseen])).sum(axis=1) + w @ T ** 2 - (w @ T) ** 2) / len(bank.items) ** 2
        assert post_tab.loc[name, "estimate"] == pytest.approx(mean, abs=1e-8)
        assert post_tab.loc[name, "std_error"] == pytest.approx(np.sqrt(var), rel=1e-6)


def test_answers_to_every_item_give_the_exact_accuracy(sim):
    cal, new, _ = sim
    res = me.estimate_scores(cal, new.iloc[:4], None)
    truth = new.iloc[:4].mean(axis=1).to_numpy()
    for e in ("p_irt", "posterior", "anchor", "gp_irt"):
        t = res.estimates(e)
        np.testing.assert_allclose(t["estimate"], truth, atol=1e-12)
        np.testing.assert_allclose(t["std_error"], 0, atol=1e-9)


def test_subset_estimates_beat_the_anchor_mean_and_cover(sim):
    cal, new, _ = sim
    truth = new.mean(axis=1).to_numpy()
    sub = me.select_items(cal, 40, "stratified")
    res = me.estimate_scores(cal, new[list(sub.anchors)], sub)
    err = {}
    for e in S.ESTIMATORS:
        t = res.estimates(e)
        err[e] = np.mean(np.abs(t["estimate"] - truth))
        cover = np.mean((t["conf_low"] <= truth) & (truth <= t["conf_high"]))
        assert 0.85 <= cover <= 1.0, (e, cover)
    print({k: round(v, 4) for k, v in err.items()}, "lambda", round(res.gp_lambda, 3))
    assert err["p_irt"] < err["anchor"] and err["gp_irt"] < err["anchor"]
    assert 0 <= res.gp_lambda <= 1
    board = res.leaderboard
    assert list(board["estimate"]) == sorted(board["estimate"], reverse=True)
    assert board["name"].iloc[0] in res.headline_text()
    assert set(res.tuning["estimator"]) == set(S.ESTIMATORS)


def test_next_items_ranks_by_information_and_stops_on_the_standard_error(sim):
    cal, new, _ = sim
    first = me.next_items(cal, None, n_items=5)
    bank = cal.items.set_index("item")
    a, b = bank["discrimination"].to_numpy(), bank["difficulty"].to_numpy()
    p = special.expit(a * (first.ability - b))
    direct = pd.Series(a ** 2 * p * (1 - p), index=bank.index).sort_values(ascending=False)
    assert list(first.table["item"]) == list(direct.index[:5]) and not first.stop
    answers: dict[str, float] = {}
    system = new.iloc[0]
    step = first
    for _ in range(60):  # adaptive loop on one held-out system
        if step.stop:
            break
        it = step.table["item"].iloc[0]
        answers[it] = float(system[it])
        step = me.next_items(cal, answers, target_se=0.35)
    assert step.stop and step.std_error <= 0.35 and "standard error" in step.reason
    assert not set(step.table["item"]) & set(answers)
    capped = me.next_items(cal, dict(list(answers.items())[:3]), target_se=0.01, max_items=3)
    assert capped.stop and "max_items" in capped.reason


def test_bad_input(sim):
    cal, new, _ = sim
    with pytest.raises(DataError, match="n_items"):
        me.select_items(cal, 300)
    with pytest.raises(DataError, match="method"):
        me.select_items(cal, 10, "best")
    with pytest.raises(DataError, match="not in the calibrated bank"):
        me.estimate_scores(cal, pd.Series({"nope": 1.0, "i0001": 0.0}))
    with pytest.raises(DataError, match="one system at a time"):
        me.next_items(cal, new.iloc[:2, :5])
    with pytest.raises(DataError, match="estimator"):
        me.estimate_scores(cal, new.iloc[:2, :5], estimator="magic")
    with pytest.raises(DataError, match="calibration"):
        me.select_items(pd.DataFrame({"x": [1]}), 3)


def test_cross_fitting_scores_each_fold_with_a_bank_that_never_saw_it(sim):
    from mixedeval.workflows._irt_bank import fold_banks

    cal, _, _ = sim
    bank = as_bank(cal)
    rows = np.arange(len(cal.abilities))
    fold, banks = fold_banks(bank, rows, 3, random_state=5)
    assert sorted(np.bincount(fold)) == [50, 50, 50]
    train = np.nonzero(fold != 1)[0]
    direct = irt_numpy(cal.responses[cal.responses["system"].isin(np.asarray(bank.calibration.systems)[train])], "2pl")
    # the fold refits stop at a looser tolerance (1e-5 per EM step, 7 adaptive nodes): they measure error sizes
    ok = direct.items["discrimination"].abs().to_numpy() < 5  # items far from separating the systems
    np.testing.assert_allclose(banks[1].difficulty[ok], direct.items["difficulty"][ok], atol=2e-3)
    np.testing.assert_allclose(banks[1].discrimination[ok], direct.items["discrimination"][ok], atol=2e-3)
    again = fold_banks(bank, rows, 3, random_state=5)
    assert again[1][1] is banks[1]  # cached per calibration object


def test_information_anchors_are_the_most_informative_items(sim):
    cal, _, _ = sim
    sub = me.select_items(cal, 10, "information")
    info = as_bank(cal).expected_information()
    assert set(sub.anchors) == {as_bank(cal).items[i] for i in np.argsort(-info)[:10]}


def test_conformal_quantile_is_the_finite_sample_rank():
    # ceil(0.95 * (n + 1))-th smallest: n = 19 -> the 19th (the largest); n = 18 -> too few (infinite)
    scores = np.arange(19, 0, -1.0)
    assert S.conformal_quantile(scores, 0.95) == 19.0
    assert S.conformal_quantile(scores[:18], 0.95) == np.inf
    assert S.conformal_quantile(np.arange(1.0, 101.0), 0.9) == 91.0  # ceil(0.9 * 101) = 91
    # exchangeable scores: a new one falls at or below the quantile with probability >= level
    rng = np.random.default_rng(1)
    hits = [rng.standard_t(3) ** 2 <= S.conformal_quantile(rng.standard_t(3, 40) ** 2, 0.9) for _ in range(4000)]
    assert 0.9 <= np.mean(hits) <= 0.93  # exact value ceil(0.9 * 41) / 41 = 0.9024


def test_gp_lambda_is_the_least_squares_weight_of_the_combination():
    rng = np.random.default_rng(2)
    truth = rng.uniform(0.3, 0.8, 300)
    p = truth + rng.normal(0.02, 0.02, 300)  # biased, correlated with the anchor's error below
    a = truth + 0.5 * (p - truth) + rng.normal(0, 0.03, 300)
    core = {"truth": truth, "p_irt": p, "anchor": a}
    # direct: regress (truth - p) on (a - p) without intercept
    coef = np.linalg.lstsq((a - p)[:, None], truth - p, rcond=None)[0][0]
    assert S._stacking_lambda(core) == pytest.approx(coef, rel=1e-12)
    assert 0 < coef < 1
    assert S._stacking_lambda({"truth": truth, "p_irt": truth, "anchor": a}) == 0.0  # p-IRT exact: no anchor weight
    assert S._stacking_lambda({"truth": truth, "p_irt": p, "anchor": truth + 2 * (truth - p)}) == pytest.approx(1 / 3)
    assert S._stacking_lambda({"truth": truth, "p_irt": p, "anchor": p - (truth - p)}) == 0.0  # -1, clipped
    assert S._stacking_lambda({"truth": truth, "p_irt": p, "anchor": p + 0.5 * (truth - p)}) == 1.0  # 2, clipped


def test_small_calibrations_warn_and_fall_back(sim):
    cal_all, new, _ = sim
    W = cal_all.responses.pivot(index="system", columns="item", values="score")
    for n_cal, code, conformal in ((40, "few_calibration_systems", True), (14, "few_calibration_systems", False)):
        part = W.iloc[:n_cal, :120]
        part = part.loc[:, (part.mean() > 0) & (part.mean() < 1)]  # items answered alike carry no information
        cal = irt_numpy(part, "rasch")  # a small Rasch calibration: fast and identified
        sub = me.select_items(cal, 10, "random", random_state=0)
        res = me.estimate_scores(cal, new.iloc[:5][list(sub.anchors)], sub)
        codes = [w.kind for w in res.warnings]
        assert code in codes, codes
        assert bool(res.tuning["conformal"].all()) is conformal
        t = res.estimates("p_irt")
        assert np.all(t["conf_low"] <= t["estimate"]) and np.all(t["estimate"] <= t["conf_high"])


def test_calibrated_intervals_cover_on_held_out_systems():
    """Coverage regression guard (the full protocol is benchmarks/calibration_irt_subsets.py):
    2PL bank of 400 items, 150 calibration systems, 40 stratified anchors, 3 replicates x 100
    held-out systems. The model's own interval under-covers (item parameters taken as known);
    the cross-conformal one must cover about 95%."""
    cover, model_cover = {e: [] for e in ("gp_irt", "p_irt", "irt")}, []
    for rep in range(3):
        Y, _, _, _ = simulate_2pl(250, 400, random_state=70 + rep)
        W = wide_frame(Y)
        cal, new = irt_numpy(W.iloc[:150], "2pl"), W.iloc[150:]
        truth = new.mean(axis=1).to_numpy()
        sub = me.select_items(cal, 40, "stratified")
        res = me.estimate_scores(cal, new[list(sub.anchors)], sub, random_state=rep)
        for e in cover:
            t = res.estimates(e)
            cover[e].append(np.mean((t["conf_low"] <= truth) & (truth <= t["conf_high"])))
        t = me.estimate_scores(cal, new[list(sub.anchors)], sub, n_folds=0).estimates("p_irt")
        model_cover.append(np.mean((t["conf_low"] <= truth) & (truth <= t["conf_high"])))
    got = {e: float(np.mean(v)) for e, v in cover.items()}
    print(got, "model only", np.mean(model_cover))
    for e, c in got.items():
        assert 0.9 <= c <= 0.99, (e, c)


def test_scoring_bank_shrinks_log_discriminations_by_their_standard_errors():
    rng = np.random.default_rng(3)
    a = rng.lognormal(0.1, 0.4, 60)
    se = a * rng.uniform(0.05, 0.6, 60)
    se[0], a[1] = np.inf, -0.3  # no SE: the prior mean; negative: left as it is
    items = [f"q{j}" for j in range(60)]
    fake = SimpleNamespace(items=pd.DataFrame({"item": items, "difficulty": rng.normal(size=60), "discrimination": a,
                                               "discrimination_std_error": se}),
                           abilities=pd.DataFrame({"system": ["s"], "ability": [0.0], "std_error": [1.0]}),
                           model="2pl", responses=None)
    got = as_bank(fake).shrunk().discrimination
    # by hand: normal prior on log a by the method of moments over items with s = se / a < 1
    x, s = np.log(np.abs(a)), se / np.abs(a)
    use = [j for j in range(60) if a[j] > 0 and s[j] < 1]
    mu = sum(x[j] for j in use) / len(use)
    tau2 = sum((x[j] - mu) ** 2 for j in use) / len(use) - sum(s[j] ** 2 for j in use) / len(use)
    for j in range(2, 60):
        assert got[j] == pytest.approx(np.exp(mu + tau2 / (tau2 + s[j] ** 2) * (x[j] - mu)), rel=1e-12)
    assert got[0] == pytest.approx(np.exp(mu)) and got[1] == -0.3
    rasch = SimpleNamespace(**{**vars(fake), "model": "rasch"})
    assert as_bank(rasch).shrunk() is not None and np.all(as_bank(rasch).shrunk().discrimination == a)
