"""Issue 42 item 6: compact letters for leaderboards of many systems.

``mixedeval._cld.tukey_letter_matrix`` no longer inserts the significant pairs: it finds the
maximal cliques of the not-significant graph and orders them as insert-absorb creates them, then
sweeps with pair counts. Every matrix must equal the code it replaces (the first pass of issue 42,
kept verbatim in benchmarks/baseline_leaderboard.py as ``tukey_letter_matrix_today``, itself
tested against the one-pair-at-a-time port of multcomp, whose parity with R is tested in
tests/test_rankings.py); the cliques are checked against a brute-force enumeration.
"""
from __future__ import annotations

import importlib.util
import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixedeval import _answer, _cld, _rankings
from mixedeval._executor import one_blas_thread

_BASE = Path(__file__).resolve().parents[1] / "benchmarks" / "baseline_leaderboard.py"
_spec = importlib.util.spec_from_file_location("baseline_leaderboard", _BASE)
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)


def _design(rng: np.random.Generator, k: int, kind: str) -> np.ndarray:
    """A k x k symmetric significance matrix: ``interval`` (|d| > c: the not-significant pairs are
    runs of the sorted estimates), ``se`` (|d| > c sqrt(se_a^2 + se_b^2): no interval structure)
    or ``random`` (arbitrary decisions)."""
    est = rng.normal(0, 1, k)
    if rng.random() < 0.3:
        est = np.round(est, 1)  # exact ties
    a, b = np.triu_indices(k, 1)
    if kind == "random":
        sig = rng.random(a.size) < rng.uniform(0.05, 0.95)
    elif kind == "interval":
        sig = np.abs(est[b] - est[a]) > rng.uniform(0.2, 3.0) * max(1.0, k / 60)
    else:
        se = rng.uniform(0.05, 0.5, k)
        sig = np.abs(est[b] - est[a]) > rng.uniform(0.5, 4.0) * np.sqrt(se[a] ** 2 + se[b] ** 2)
    S = np.zeros((k, k), dtype=bool)
    S[a, b] = S[b, a] = sig
    return S, est


@pytest.mark.parametrize("seed", range(8))
def test_letters_equal_todays_code_on_random_designs(seed):
    """3-200 levels, with and without interval structure, rows best first or shuffled."""
    rng = np.random.default_rng(seed)
    for trial in range(12):
        kind = ("interval", "se", "random")[trial % 3]
        k = int(rng.integers(3, 22)) if kind == "random" else int(rng.integers(3, 61 if trial < 9 else 201))
        S, est = _design(rng, k, kind)
        rows = rng.permutation(k) if rng.random() < 0.5 else np.argsort(-est, kind="stable")
        with one_blas_thread():
            new = _cld.tukey_letter_matrix(S, rows)
            old = base.tukey_letter_matrix_today(S, rows)
        np.testing.assert_array_equal(new, old, err_msg=f"{kind} k={k} trial {trial}")


def test_letters_equal_insert_absorb_one_pair_at_a_time():
    """Against the port of multcomp's insert-absorb itself (small k: it inserts pair by pair)."""
    rng = np.random.default_rng(17)
    for trial in range(60):
        k = int(rng.integers(2, 16))
        S, est = _design(rng, k, ("interval", "se", "random")[trial % 3])
        names = [f"n{i}" for i in range(k)]
        a, b = np.triu_indices(k, 1)
        rows = rng.permutation(k)
        ref = base.letter_matrix(S[a, b], [(names[j], names[i]) for i, j in zip(a, b)],
                                 [names[i] for i in np.argsort(est, kind="stable")], [names[i] for i in rows])
        np.testing.assert_array_equal(_cld.tukey_letter_matrix(S, rows), ref)


def _brute_force_cliques(adj: np.ndarray) -> set[frozenset[int]]:
    k = adj.shape[0]
    cliques = [frozenset(c) for r in range(1, k + 1) for c in itertools.combinations(range(k), r)
               if all(adj[i, j] for i, j in itertools.combinations(c, 2))]
    return {c for c in cliques if not any(c < d for d in cliques)}


def test_maximal_cliques_equal_a_brute_force_enumeration():
    rng = np.random.default_rng(3)
    for trial in range(80):
        k = int(rng.integers(1, 11))
        S, _ = _design(rng, k, ("interval", "se", "random")[trial % 3]) if k > 1 else (np.zeros((1, 1), bool), None)
        adj = ~S
        np.fill_diagonal(adj, True)
        order = rng.permutation(k)
        C = _cld.maximal_cliques(adj, order)
        found = [frozenset(np.flatnonzero(c).tolist()) for c in C.T]
        assert len(found) == len(set(found))  # no clique twice
        assert set(found) == _brute_force_cliques(adj), trial


def test_sweep_equals_the_reference_on_larger_matrices():
    """The sweep with pair counts, lock look-up in later columns and resumed restarts, against the
    port of multcomp's sweepLetters (small) and today's vectorized sweep (larger, > 64 columns:
    several packed words)."""
    rng = np.random.default_rng(11)
    for trial in range(240):
        small = trial < 200
        n, c = (int(rng.integers(1, 25)), int(rng.integers(1, 25))) if small else (int(rng.integers(20, 60)),
                                                                                 int(rng.integers(60, 150)))
        mat = rng.random((n, c)) < rng.uniform(0.05, 0.6 if not small else 0.95)
        if rng.random() < 0.2:
            mat[:, int(rng.integers(c))] = True
        ref = base.sweep_letters(mat) if small else base.sweep_letters_today(mat)
        np.testing.assert_array_equal(_cld.sweep_letters(mat), ref, err_msg=str(trial))


def test_last_common_column():
    rng = np.random.default_rng(2)
    for c in (1, 5, 63, 64, 65, 130, 200):
        a, b = rng.random((7, c)) < 0.2, rng.random((9, c)) < 0.2
        want = np.array([[max(np.flatnonzero(x & y), default=-1) for y in b] for x in a])
        np.testing.assert_array_equal(_cld._last_common(a, b), want)


def _tokens(letters: str) -> set[str]:
    """The letters of a level: a..Z, then .a...Z, ..a... (multcomp's names)."""
    return set(re.findall(r"\.*[A-Za-z]", letters))


def _assert_valid(table: pd.DataFrame, pairwise: pd.DataFrame) -> None:
    """Names sharing a letter = pairs not significantly different (a letter matrix product)."""
    lets = [_tokens(x) for x in table["letters"]]
    assert all(lets)
    vocab = {t: i for i, t in enumerate(sorted(set().union(*lets)))}
    L = np.zeros((len(lets), len(vocab)), dtype=np.float32)
    for r, ts in enumerate(lets):
        L[r, [vocab[t] for t in ts]] = 1
    share = (L @ L.T) > 0.5
    pos = {n: i for i, n in enumerate(table["name"])}
    a = pairwise["name_a"].map(pos).to_numpy()
    b = pairwise["name_b"].map(pos).to_numpy()
    np.testing.assert_array_equal(share[a, b], ~pairwise["significant"].to_numpy(dtype=bool))


def test_letters_of_a_thousand_systems_are_produced_and_valid():
    """1,000 systems (arena-like spread: standard errors small against the spread): every pair not
    significantly different shares a letter, every pair that differs shares none; the leaderboard
    (no 150-system cap any more) gives the same letters as rank_intervals."""
    rng = np.random.default_rng(1000)
    k = 1000
    s = pd.Series(rng.normal(0, 1, k), index=[f"s{i}" for i in range(k)])
    se = rng.uniform(0.01, 0.04, k)
    res = _rankings.rank_intervals(s, vcov=np.diag(se ** 2), n_sim=4000, random_state=0, distribution=False)
    assert (~res.pairwise["significant"]).sum() <= _answer.LETTERS_MAX_PAIRS
    _assert_valid(res.table, res.pairwise)
    n_letters = len(set().union(*(_tokens(x) for x in res.table["letters"])))
    assert n_letters > 52  # the names beyond a..Z (".a", ...) are in use
    board = _answer.leaderboard(s, std_error=se, n_sim=4000)
    pd.testing.assert_series_equal(board.set_index("name")["letters"],
                                   res.table.set_index("name").loc[board["name"], "letters"])


def test_leaderboard_letters_above_the_old_cap_and_their_limit(monkeypatch):
    """200 systems now get letters (valid, equal to rank_intervals'); above LETTERS_MAX_PAIRS
    pairs not significantly different they are left empty, as the docstring says."""
    rng = np.random.default_rng(200)
    k = 200
    s = pd.Series(rng.normal(0, 1, k), index=[f"s{i}" for i in range(k)])
    se = rng.uniform(0.1, 0.4, k)
    board = _answer.leaderboard(s, std_error=se, n_sim=4000)
    res = _rankings.rank_intervals(s, vcov=np.diag(se ** 2), n_sim=4000, random_state=0, distribution=False)
    assert list(board["letters"]) == list(res.table["letters"])
    _assert_valid(res.table, res.pairwise)
    n_not = int((~res.pairwise["significant"]).sum())
    monkeypatch.setattr(_answer, "LETTERS_MAX_PAIRS", n_not - 1)
    capped = _answer.leaderboard(s, std_error=se, n_sim=4000)
    assert (capped["letters"] == "").all()
    pd.testing.assert_frame_equal(capped.drop(columns="letters"), board.drop(columns="letters"))
    monkeypatch.setattr(_answer, "LETTERS_MAX_PAIRS", n_not)
    assert list(_answer.leaderboard(s, std_error=se, n_sim=4000)["letters"]) == list(board["letters"])


def test_arg_extremes_equal_numpy_with_ties():
    rng = np.random.default_rng(4)
    for k, n in ((2, 1), (3, 50), (40, 300)):
        x = np.round(rng.normal(0, 1, (k, n)), 1)  # many ties: the first row wins, as numpy's
        x[:, 0] = 0.0
        hi, lo = _rankings._arg_extremes(x)
        np.testing.assert_array_equal(hi, np.argmax(x, axis=0))
        np.testing.assert_array_equal(lo, np.argmin(x, axis=0))


def test_max_statistic_with_groups_of_sqrt_k_names_equals_every_pair():
    """400 names: the branch and bound's groups hold 20 names (sqrt(k)); the maximum over every
    pair (the code before issue 42) is the same, for the joint normal and the bootstrap."""
    rng = np.random.default_rng(400)
    k = 400
    est, se = rng.normal(0, 1, k), rng.uniform(0.1, 0.4, k)
    D = est + rng.normal(0, 1, (300, k)) * se
    a, b = _rankings._pair_index(k)
    sd = _rankings._pair_sd(D)
    for method in ("normal", "bootstrap"):
        Z = D - est if method == "normal" else D
        new = _rankings._null_max(method, Z, est[b] - est[a], sd, est, D.std(axis=0))
        np.testing.assert_array_equal(new, base._null_max(method, Z, est[b] - est[a], sd))
