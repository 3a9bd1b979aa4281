"""Issue 42 (hardening IV): leaderboards for many systems, clear errors for bad values, smaller
statistical corners.

Item 6: the leaderboard's simultaneous rank intervals, rank distribution and compact letters
are computed by new algorithms (branch and bound for the max-|t| statistic, one sort per draw for
ranks, one update per level for insert-absorb, vectorized sweep); every number must equal what
the code before issue 42 computed. The reference is that code, kept verbatim in
benchmarks/baseline_leaderboard.py (also the baseline of benchmarks/bench_leaderboard.py).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixedeval import _answer, _cld, _rankings

_BASE = Path(__file__).resolve().parents[1] / "benchmarks" / "baseline_leaderboard.py"
_spec = importlib.util.spec_from_file_location("baseline_leaderboard", _BASE)
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)


def _estimates(rng: np.random.Generator, k: int, ties: bool):
    est = rng.normal(0, 1, k)
    if ties:  # rounded: many exact ties, and equal standard errors among them
        est = np.round(est, 1)
    se = rng.uniform(0.05, 0.5, k)
    if ties:
        se = np.round(se, 1) + 0.05
    return est, se


# ------------------------------------------------------------------------------- item 6: numbers unchanged
@pytest.mark.parametrize("seed", range(12))
def test_rank_intervals_equal_the_reference_on_random_inputs(seed):
    """Normal (independent and correlated), bootstrap and centred bootstrap; 3-60 names, ties."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 61)) if seed % 3 else int(rng.integers(3, 12))
    est, se = _estimates(rng, k, ties=seed % 2 == 0)
    names = [f"m{i:02d}" for i in range(k)]
    hib = bool(seed % 4 != 1)
    if seed % 3 == 0:
        A = rng.normal(0, 1, (k, k))
        V = (A @ A.T / k + np.eye(k)) * 0.04
    else:
        V = np.diag(se ** 2)
    letters = k <= 40
    new = _rankings.rank_intervals(pd.Series(est, index=names), vcov=V, random_state=seed, n_sim=3000,
                                   higher_is_better=hib, letters=letters)
    t, pw, dist, crit = base.rank_intervals_core(names, est, vcov=V, random_state=seed, n_sim=3000,
                                                 higher_is_better=hib, letters=letters)
    assert new.critical_value == crit
    pd.testing.assert_frame_equal(new.table, t)
    pd.testing.assert_frame_equal(new.pairwise, pw)
    pd.testing.assert_frame_equal(new.rank_distribution, dist)
    D = est + rng.normal(0, 1, (400, k)) * se
    if seed % 2:
        D[:, 0] = D[:, 1]  # a pair with zero spread (counts 0 in the max statistic)
    for method in ("bootstrap", "bootstrap_centered"):
        new = _rankings.rank_intervals(pd.Series(est, index=names), draws=D, method=method, higher_is_better=hib,
                                       letters=letters)
        t, pw, dist, crit = base.rank_intervals_core(names, est, draws=D, method=method, higher_is_better=hib,
                                                     letters=letters)
        assert new.critical_value == crit
        pd.testing.assert_frame_equal(new.table, t)
        pd.testing.assert_frame_equal(new.pairwise, pw)
        pd.testing.assert_frame_equal(new.rank_distribution, dist)


@pytest.mark.parametrize("seed", range(6))
def test_leaderboard_equals_the_reference(seed):
    rng = np.random.default_rng(100 + seed)
    k = int(rng.integers(3, 61))
    est, se = _estimates(rng, k, ties=seed % 2 == 1)
    s = pd.Series(est, index=[f"sys{i}" for i in range(k)])
    pd.testing.assert_frame_equal(_answer.leaderboard(s, std_error=se, n_sim=4000),
                                  base.leaderboard(s, std_error=se, n_sim=4000))


def test_letters_equal_insert_absorb_one_pair_at_a_time():
    """The one-update-per-level letters against multcomp's insert-absorb (the reference port) on
    random decisions: interval-like ones (from estimates and standard errors) and arbitrary ones."""
    rng = np.random.default_rng(42)
    for _ in range(120):
        k = int(rng.integers(3, 26))
        est, se = _estimates(rng, k, ties=bool(rng.random() < 0.3))
        a, b = np.triu_indices(k, 1)
        if rng.random() < 0.3:
            sig = rng.random(a.size) < rng.uniform(0.1, 0.9)
        else:
            sig = np.abs(est[b] - est[a]) > rng.uniform(0.5, 4) * np.sqrt(se[a] ** 2 + se[b] ** 2)
        names = [f"n{i}" for i in range(k)]
        rows = rng.permutation(k)
        ref = base.letter_matrix(sig, [(names[j], names[i]) for i, j in zip(a, b)],
                                 [names[i] for i in np.argsort(est, kind="stable")], [names[i] for i in rows])
        S = np.zeros((k, k), dtype=bool)
        S[a, b] = S[b, a] = sig
        np.testing.assert_array_equal(_cld.tukey_letter_matrix(S, rows), ref)


def test_sweep_letters_equals_the_reference():
    rng = np.random.default_rng(7)
    for _ in range(200):
        mat = rng.random((int(rng.integers(1, 25)), int(rng.integers(1, 20)))) < rng.uniform(0.1, 0.9)
        if rng.random() < 0.3:
            mat[:, 0] = True
        np.testing.assert_array_equal(_cld.sweep_letters(mat), base.sweep_letters(mat))


def test_rank_matrix_and_rank_columns_equal_the_reference():
    rng = np.random.default_rng(3)
    for _ in range(30):
        k, n = int(rng.integers(1, 30)), int(rng.integers(1, 300))
        x = np.round(rng.normal(0, 1, (k, n)), int(rng.integers(0, 3)))
        if rng.random() < 0.2:
            x[rng.random(x.shape) < 0.1] = np.nan  # the row-by-row path
        if rng.random() < 0.3:
            x[0] = np.inf
        for hib in (True, False):
            r = _rankings.rank_matrix(x, hib)
            np.testing.assert_array_equal(r, base.rank_matrix(x, hib))
            level = float(rng.uniform(0.5, 0.99))
            new, old = _rankings.rank_columns(r, level), base.rank_columns(r, level)
            assert list(new) == list(old)
            for c in new:
                np.testing.assert_array_equal(new[c], old[c])


def test_max_statistic_equals_every_pair_evaluated():
    """The branch and bound against the pair-by-pair maximum, with names of very different spread,
    exact ties and large offsets (rounding margin)."""
    rng = np.random.default_rng(5)
    for k in (2, 3, 17, 70):
        se = rng.choice([0.01, 0.3, 3.0], k) * rng.uniform(0.9, 1.1, k)
        est = 1e6 + rng.normal(0, 1, k) if k == 17 else rng.normal(0, 1, k)
        D = est + rng.normal(0, 1, (500, k)) * se
        a, b = _rankings._pair_index(k)
        sd = _rankings._pair_sd(D)
        d_hat = est[b] - est[a]
        for method in ("normal", "bootstrap", "bootstrap_centered"):
            Z = D - est if method == "normal" else D
            new = _rankings._null_max(method, Z, d_hat, sd, est, D.std(axis=0))
            np.testing.assert_array_equal(new, base._null_max(method, Z, d_hat, sd))


def test_leaderboard_of_a_thousand_systems_is_fast():
    """Rank intervals of 1,000 systems (with these overlapping intervals the letters would need thousands of
    groups: above _answer.LETTERS_MAX_PAIRS pairs not told apart the leaderboard leaves them empty)."""
    import time
    rng = np.random.default_rng(1)
    k = 1000
    s = pd.Series(rng.normal(0, 1, k), index=[f"s{i}" for i in range(k)])
    t0 = time.perf_counter()
    board = _answer.leaderboard(s, std_error=rng.uniform(0.1, 0.4, k))
    elapsed = time.perf_counter() - t0
    assert board["rank_low"].notna().all() and (board["rank_low"] <= board["rank"]).all()
    assert elapsed < 20  # 6 minutes before issue 42, about 3 s now on this 2-core machine (bench_leaderboard.py)


# ------------------------------------------------------------------------------- item 2: bad values
import sys  # noqa: E402

import mixedeval as me  # noqa: E402
from mixedeval.errors import DataError  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judges_helpers import simulate, simulate_binary  # noqa: E402


@pytest.fixture(scope="module")
def judged():
    return simulate(np.random.default_rng(0))


@pytest.fixture(scope="module")
def pilot(judged):
    return me.judge_corrected(judged)


@pytest.fixture(scope="module")
def bank():
    from mixedeval.inference._irt_numpy import irt_numpy, simulate_2pl, wide_frame
    Y, *_ = simulate_2pl(60, 40, random_state=4)
    W = wide_frame(Y)
    return irt_numpy(W.iloc[:50], "2pl"), W.iloc[50:]


def test_infinite_scores_are_errors_not_missing_answers(bank):
    cal, new = bank
    wide = new.copy()
    wide.iloc[0, 3] = np.inf
    with pytest.raises(DataError, match="infinite"):
        me.estimate_scores(cal, wide, n_folds=0)
    wide.iloc[0, 3] = -np.inf
    with pytest.raises(DataError, match="infinite"):
        me.irt(wide, "2pl", engine="numpy", n_sim=0)
    long = pd.DataFrame({"system": ["a", "a", "b", "b"], "item": ["i", "j", "i", "j"], "score": [1.0, np.inf, 0, 1]})
    with pytest.raises(DataError, match="score column 'score' has 1 infinite"):
        me.irt(long, "rasch_fixed", engine="numpy", n_sim=0)


@pytest.mark.parametrize("level", [2, 0, float("nan"), True])
def test_next_items_level_is_checked(bank, level):
    with pytest.raises(DataError, match="level"):
        me.next_items(bank[0], None, level=level)


def test_nan_anchor_weights_are_an_error(bank):
    cal, new = bank
    w = pd.Series(1.0, index=list(new.columns[:5]))
    w.iloc[1] = np.nan
    with pytest.raises(DataError, match="anchor weights must be finite"):
        me.estimate_scores(cal, new, w, n_folds=0)


def test_labels_needed_arguments(pilot):
    with pytest.raises(DataError, match="cost_ratio must be a positive finite"):
        me.labels_needed(pilot, width=0.2, cost_ratio=float("inf"))
    for alpha in (0, 1, float("nan"), 1.5):
        with pytest.raises(DataError, match="alpha must lie strictly between 0 and 1"):
            me.labels_needed(pilot, power=0.8, alpha=alpha)
    with pytest.raises(DataError, match="delta"):
        me.labels_needed(pilot, power=0.8, delta=float("nan"))
    with pytest.raises(DataError, match="width"):
        me.labels_needed(pilot, width=float("inf"))
    assert me.labels_needed(pilot, width=0.3, cost_ratio=5.0).table["labels_needed"].iloc[0] > 0


def test_judge_corrected_constant_human_score_and_judge_as_human(judged):
    d = judged.copy()
    d.loc[d["human_score"].notna() & (d["system"] == "s1"), "human_score"] = 1.0
    with pytest.raises(DataError, match=r"human_score is the same on every labelled item of system\(s\) \['s1'\]"):
        me.judge_corrected(d)
    with pytest.raises(DataError, match="judge_score and human_score both name column 'judge_score'"):
        me.judge_corrected(judged, human_score="judge_score")
    with pytest.raises(DataError, match="both name"):
        me.judge_agreement(judged, judge_score="human_score")
    with pytest.raises(DataError, match="passed both as system= and as item="):
        me.judge_corrected(judged, item="system")


def test_judge_agreement_binary_scale_needs_0_1_and_constant_judge_warns():
    rng = np.random.default_rng(1)
    b = simulate_binary(rng)
    cont = b.assign(judge_score=rng.random(len(b)))
    with pytest.raises(DataError, match="scale='binary' needs 0/1 scores; judge_score"):
        me.judge_agreement(cont, scale="binary")
    const = b.assign(judge_score=1.0)
    res = me.judge_agreement(const)
    assert "constant_judge" in [w.kind for w in res.warnings]
    assert "constant_judge" not in [w.kind for w in me.judge_agreement(b).warnings]


def _battles(rng, n=1500):
    names = ["m0", "m1", "m2", "m3"]
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    s = np.array([0.0, 0.3, 0.6, 1.0])
    y = rng.random(n) < 1 / (1 + np.exp(-(s[a] - s[b])))
    yh = np.where(rng.random(n) < 0.8, y, ~y)
    word = lambda v: np.where(v, "model_a", "model_b")  # noqa: E731
    lab = rng.random(n) < 0.3
    return pd.DataFrame({"model_a": np.array(names)[a], "model_b": np.array(names)[b], "winner": word(yh),
                         "human_winner": np.where(lab, word(y), None)})


def test_bradley_terry_corrected_singular_designs_are_clear_errors():
    df = _battles(np.random.default_rng(2))
    me.bradley_terry_corrected(df)  # the design itself fits
    d = df.assign(human_winner=df["winner"])
    with pytest.raises(DataError, match="every battle has a human verdict"):
        me.bradley_terry_corrected(d)
    d = df.copy()
    d.loc[(d.model_a == "m2") | (d.model_b == "m2"), "human_winner"] = None
    with pytest.raises(DataError, match=r"model\(s\) \['m2'\] have no battle with a human verdict"):
        me.bradley_terry_corrected(d)
    g = {"m0", "m1"}
    d = df[df.model_a.isin(g) == df.model_b.isin(g)]
    with pytest.raises(DataError, match="split the models into 2 groups"):
        me.bradley_terry_corrected(d)


def test_read_judge_scores_accepts_the_drop_missing_it_advises(monkeypatch):
    from mixedeval.data import _judge_labels
    seen = {}

    def fake(source, fmt, **kw):
        seen.update(kw)
        raise DataError("stop here")

    monkeypatch.setattr(_judge_labels, "read_eval_logs", fake)
    with pytest.raises(DataError, match="stop here"):
        me.read_judge_scores("some_logs_folder", drop_missing=True)
    assert seen["drop_missing"] is True
    with pytest.raises(DataError, match="drop_missing must be True or False"):
        me.read_judge_scores("some_logs_folder", drop_missing="yes")


# ------------------------------------------------------------------------------- item 8: statistical corners
def test_dif_leaves_constant_items_out_with_a_warning():
    from scipy import special
    rng = np.random.default_rng(12)
    n_sys, n_items = 60, 6
    th = rng.normal(size=n_sys)
    b = np.linspace(-1, 1, n_items)
    rows = []
    for lang in ("en", "de"):
        y = rng.binomial(1, special.expit(th[:, None] - b))
        y[:, 5] = 1  # q005: every system right in both languages
        rows.append(pd.DataFrame({"system": np.repeat([f"s{i:03d}" for i in range(n_sys)], n_items),
                                  "item": np.tile([f"q{j:03d}" for j in range(n_items)], n_sys),
                                  "language": lang, "score": y.ravel()}))
    df = pd.concat(rows, ignore_index=True)
    with pytest.warns(UserWarning, match=r"DIF by language: 1 item\(s\) answered alike by every system"):
        res = me.irt(df, "rasch", n_sim=0, dif="language", progress=False)
    tab = res.dif["table"]
    assert "q005" not in set(tab["item"]) and len(tab) == 5
    assert np.isnan(res.items.set_index("item").loc["q005", "dif_p_value"])
    # Holm over the five tested items only
    np.testing.assert_allclose(np.sort(tab["p_adj"]), np.sort(
        np.minimum(1, np.maximum.accumulate(np.sort(tab["p_value"]) * (5 - np.arange(5))))), rtol=1e-12)


def test_select_items_leaves_a_constant_item_out_with_a_warning():
    from mixedeval.inference._irt_numpy import simulate_2pl, wide_frame
    Y, *_ = simulate_2pl(60, 40, random_state=4)
    W = wide_frame(Y)
    W.iloc[:, 5] = 1.0  # answered right by every system
    cal = me.irt(W.iloc[:50], "2pl", engine="numpy", n_sim=0)
    with pytest.warns(UserWarning, match="left out of the item bank"):
        sub = me.select_items(cal, 10)
    assert len(sub.table) == 10 and W.columns[5] not in set(sub.table["item"])
    with pytest.warns(UserWarning, match="left out of the item bank"):
        kept = cal.items.loc[np.isfinite(cal.items["difficulty"]), "item"]
        scores = me.estimate_scores(cal, W.iloc[50:][list(kept)], sub, n_folds=0)
    assert np.isfinite(scores.table["estimate"]).all()


@pytest.mark.parametrize(("kind", "vcd"), [("quadratic", "Fleiss-Cohen"), ("linear", "Equal-Spacing")])
def test_weighted_kappa_interval_equals_vcd(R, kind, vcd):
    """The documented claim: weighted-kappa standard errors are Fleiss, Cohen & Everitt's as
    vcd::Kappa computes them (psych::cohen.kappa's differ)."""
    from mixedeval.workflows._judges_agree import agreement_weights, kappa_fce
    if not bool(np.ravel(R('c(isTRUE(requireNamespace("vcd", quietly = TRUE)))'))[0]):
        pytest.skip("R package vcd is not installed")
    rng = np.random.default_rng(9)
    tab = rng.integers(1, 30, (4, 4)).astype(float) + np.diag([40, 30, 50, 20])
    vals = ", ".join(repr(float(v)) for v in tab.ravel())
    ref = np.ravel(R(f'unclass(vcd::Kappa(matrix(c({vals}), 4, byrow = TRUE), weights = "{vcd}"))$Weighted'))
    k, var = kappa_fce(tab, agreement_weights(4, kind))
    assert k == pytest.approx(ref[0], rel=1e-12)
    assert np.sqrt(var) == pytest.approx(ref[1], rel=1e-10)


# ------------------------------------------------------------------------------- item 1: guards before work
def test_judge_agreement_refuses_a_huge_bootstrap_before_drawing(judged, monkeypatch):
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "2GB")
    with pytest.raises(DataError, match=r"cluster bootstrap of judge_agreement \(n_resamples=1,000,000,000\).*"
                                        r"MIXEDEVAL_MEMORY_LIMIT"):
        me.judge_agreement(judged, n_resamples=10**9)


@pytest.mark.parametrize("scale", ["interval", "binary"])
def test_judge_agreement_chunked_draws_give_the_same_replicates(monkeypatch, judged, scale):
    """The bootstrap draws its resamples in chunks (memory, Ctrl-C between chunks): the same
    numbers as drawing them all at once."""
    from mixedeval.workflows import _judges_agree
    data = judged if scale == "interval" else simulate_binary(np.random.default_rng(3))
    chunked = me.judge_agreement(data, n_resamples=450, random_state=7)
    monkeypatch.setattr(_judges_agree, "_BOOT_CHUNK", 100)
    smaller = me.judge_agreement(data, n_resamples=450, random_state=7)
    monkeypatch.setattr(_judges_agree, "_BOOT_CHUNK", 10**9)
    whole = me.judge_agreement(data, n_resamples=450, random_state=7)
    pd.testing.assert_frame_equal(chunked.table, whole.table)
    pd.testing.assert_frame_equal(smaller.table, whole.table)


def test_independent_draws_equal_the_eigen_decomposition():
    """The draws of independent estimates skip LAPACK: eigh of a diagonal matrix with distinct
    positive entries is their ascending sort with +1 unit eigenvectors (checked here), so the
    draws equal the reference's, which multiplies by the eigh root (ties go through eigh as before)."""
    rng = np.random.default_rng(11)
    for t in range(60):
        k = int(rng.integers(2, 200))
        d = rng.uniform(0.01, 0.5, k) ** 2
        if t % 4 == 0:
            d = np.round(d, 3)  # ties: the eigh path
        if np.unique(d).size == k:
            with _rankings.one_blas_thread():
                w, U = np.linalg.eigh(np.diag(d))
            perm = np.zeros((k, k))
            perm[np.argsort(d, kind="stable"), np.arange(k)] = 1.0
            assert np.array_equal(w, np.sort(d)) and np.array_equal(U, perm) and not np.signbit(U).any()
            new = _rankings._normal_draws(np.diag(d), 300, t)
            old = base._normal_draws(np.diag(d), 300, t)  # the product with the eigh root
            assert np.array_equal(new, old) and np.array_equal(np.signbit(new), np.signbit(old))
