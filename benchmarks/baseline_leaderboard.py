"""Baseline for benchmarks/bench_leaderboard.py and tests/test_issue42_hardening.py: the leaderboard's
rank intervals and compact letters as they were before issue 42 (commit 6b05c4c), copied verbatim
from mixedeval/_rankings.py, mixedeval/_cld.py and mixedeval/_answer.leaderboard (only the imports
and the module prefixes of calls changed). The new code must give the same numbers; this is the
reference it is compared with and the code it is timed against.
"""
from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtr

from mixedeval._random import as_generator
from mixedeval._answer import LEADERBOARD_COLUMNS, _as_array
from mixedeval.errors import DataError

_CHUNK = 20_000  # simulated rows per block (memory: chunk x k floats)


# ----------------------------------------------------------------- mixedeval/_cld.py

LETTERS = tuple(string.ascii_lowercase + string.ascii_uppercase)


def get_letters(n: int, separator: str = ".") -> list[str]:
    """``multcomp:::get_letters``: a..z A..Z, then .a...Z, ..a... (one more separator per round)."""
    out: list[str] = []
    sep = ""
    for _ in range(n // len(LETTERS)):
        out += [sep + x for x in LETTERS]
        sep += separator
    out += [sep + x for x in LETTERS[: n % len(LETTERS)]]
    return out


def _absorb(m: np.ndarray, overlap: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Drop a column whose set of levels is contained in another's, repeat: multcomp's double loop
    (``j`` < ``k`` in order; ``k`` inside ``j`` drops ``k``, else ``j`` inside ``k`` drops ``j``;
    restart after each drop), with the containments read from the columns' overlap counts
    (column ``k`` lies in column ``j`` when they share all of ``k``'s levels) instead of a scan
    per pair. ``overlap``: the columns' overlap counts if the caller keeps them up to date (else
    computed); returned with the kept columns."""
    if overlap is None:
        mi = m.astype(np.int64)
        overlap = mi.T @ mi
    while m.shape[1] > 1:
        sub = overlap == np.diag(overlap)[None, :]  # sub[j, k]: column k lies in column j
        cand = np.triu(sub | sub.T, 1)
        if not cand.any():
            break
        j, k = divmod(int(np.flatnonzero(cand)[0]), m.shape[1])
        drop = k if sub[j, k] else j
        m = np.delete(m, drop, axis=1)
        overlap = np.delete(np.delete(overlap, drop, axis=0), drop, axis=1)
    return m, overlap


def _update_overlap(overlap: np.ndarray, m: np.ndarray, changed: np.ndarray) -> np.ndarray:
    """The overlap counts of ``m``'s columns from those of its first ``overlap.shape[0]`` columns
    before the columns ``changed`` (a boolean mask over m's columns, the new ones included) were
    altered: only the rows and columns of the changed columns are recomputed."""
    n_old, n = overlap.shape[0], m.shape[1]
    out = np.empty((n, n), dtype=np.int64)
    out[:n_old, :n_old] = overlap
    mi = m.astype(np.int64)
    cols = mi.T @ mi[:, changed]
    out[:, changed] = cols
    out[changed, :] = cols.T
    return out


def _sweep_once(mat: np.ndarray) -> tuple[np.ndarray, bool]:
    """One pass of ``sweepLetters``: returns the matrix and whether a column was emptied (restart)."""
    n, ncol = mat.shape
    locked = np.zeros((n, ncol), dtype=bool)
    for i in range(ncol):
        tmp = np.zeros((n, ncol), dtype=bool)
        tmp[mat[:, i]] = mat[mat[:, i]]
        one = np.flatnonzero(tmp[:, i])
        if np.all(np.delete(tmp, i, axis=1).any(axis=1)):
            continue
        for j in one:
            if locked[j, i]:
                continue
            locks = []
            for k in one:
                if j == k:
                    continue
                hit = np.flatnonzero(tmp[j] & tmp[k])
                hit = hit[hit != i]
                if hit.size:
                    locks.append((j, k, hit[-1]))
            if locks and len(locks) == one.size - 1:
                for a, b, h in locks:
                    locked[a, h] = locked[b, h] = True
                mat[j, i] = False
        if not mat[:, i].any():
            return np.delete(mat, i, axis=1), True
    return mat, False


def sweep_letters(mat: np.ndarray) -> np.ndarray:
    """``multcomp:::sweepLetters``: remove letters that are not needed (start column 1)."""
    mat = mat.copy()
    again = True
    while again:
        mat, again = _sweep_once(mat)
    return mat[:, mat.any(axis=0)]


def _order_columns(lmat: np.ndarray) -> np.ndarray:
    """Columns by increasing size (stable), swept, then by their first row (stable)."""
    lmat = lmat[:, np.argsort(lmat.sum(axis=0), kind="stable")]
    lmat = sweep_letters(lmat)
    first = np.array([np.flatnonzero(c)[0] if c.any() else lmat.shape[0] for c in lmat.T])
    return lmat[:, np.argsort(first, kind="stable")]


def letter_matrix(significant: Sequence[bool], comps: Sequence[tuple[str, str]], lvl_order: Sequence[str],
                  levels_x: Sequence[str]) -> np.ndarray:
    """The boolean (levels_x x letters) matrix of ``insert_absorb`` (rows in ``levels_x`` order)."""
    pos = {name: i for i, name in enumerate(lvl_order)}
    lmat = np.ones((len(lvl_order), 1), dtype=bool)
    if not np.any(significant):
        return lmat[[pos[x] for x in levels_x]]
    overlap = np.array([[len(lvl_order)]], dtype=np.int64)
    for sig, (a, b) in zip(significant, comps):
        if not sig:
            continue
        ia, ib = pos[a], pos[b]
        wassert = lmat[ia] & lmat[ib]
        if wassert.any():
            tmpcols = lmat[:, wassert].copy()
            tmpcols[ib] = False
            lmat[ia, wassert] = False
            lmat = np.concatenate([lmat, tmpcols], axis=1)
            overlap = _update_overlap(overlap, lmat, np.concatenate([wassert, np.ones(tmpcols.shape[1], bool)]))
            if lmat.shape[1] > 1:
                lmat, overlap = _absorb(lmat, overlap)
    lmat = lmat[[pos[x] for x in levels_x]]
    return _order_columns(_order_columns(lmat))


def compact_letters(significant: Sequence[bool], comps: Sequence[tuple[str, str]], lvl_order: Sequence[str],
                    levels_x: Sequence[str]) -> dict[str, str]:
    """Letters per level (``$Letters`` of ``multcomp:::insert_absorb``), keyed by level name.

    ``significant[m]`` says whether the levels ``comps[m] = (a, b)`` differ significantly."""
    lmat = letter_matrix(significant, comps, lvl_order, levels_x)
    names = get_letters(lmat.shape[1])
    return {x: "".join(n for n, on in zip(names, row) if on) for x, row in zip(levels_x, lmat)}


# ----------------------------------------------------------------- mixedeval/_rankings.py

def rank_matrix(x: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Rank of every row in every column: 1 + the number of rows strictly better (rank 1 = best;
    ties share the better rank: 1, 2, 2, 4 -- scipy's ``rankdata(method="min")``). Row by row,
    compared in the direction of ``higher_is_better`` (no negated copy)."""
    ranks = np.ones(x.shape, dtype=np.int64)
    for i in range(x.shape[0]):
        ranks[i] += (x > x[i]).sum(axis=0) if higher_is_better else (x < x[i]).sum(axis=0)
    return ranks


def rank_columns(ranks: np.ndarray, level: float) -> dict[str, np.ndarray]:
    """The rank summary of every row: p_rank_1 .. p_rank_k (share of replicates with that rank),
    expected_rank, rank_conf_low and rank_conf_high (the alpha/2 and 1 - alpha/2 quantiles,
    inverted-CDF rule, so they are ranks). NaN when there is no replicate."""
    k, B = ranks.shape
    out: dict[str, np.ndarray] = {}
    if B == 0:
        for r in range(1, k + 1):
            out[f"p_rank_{r}"] = np.full(k, np.nan)
        out.update(expected_rank=np.full(k, np.nan), rank_conf_low=np.full(k, np.nan),
                   rank_conf_high=np.full(k, np.nan))
        return out
    for r in range(1, k + 1):
        out[f"p_rank_{r}"] = (ranks == r).mean(axis=1)
    alpha = 1.0 - level
    out["expected_rank"] = ranks.mean(axis=1)
    # row by row (np.quantile copies its input; the inverted-CDF rule selects, so the values
    # are those of the quantile over axis 1)
    q = np.array([np.quantile(row, [alpha / 2, 1 - alpha / 2], method="inverted_cdf") for row in ranks])
    out["rank_conf_low"] = q[:, 0].astype(np.int64)
    out["rank_conf_high"] = q[:, 1].astype(np.int64)
    return out


def _pair_index(k: int) -> tuple[np.ndarray, np.ndarray]:
    """multcomp's Tukey order: for a = 1..k-1, for b = a+1..k: the contrast (b, a)."""
    a, b = np.triu_indices(k, 1)
    return a, b


def _pair_se(V: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sqrt(np.maximum(V[a, a] + V[b, b] - 2 * V[a, b], 0.0))


def _pair_max(Zt: np.ndarray, shift: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """max over pairs (i < j, Tukey order) of |Zt[j] - Zt[i] - shift_ij| / scale_ij per column of
    ``Zt`` (names x replicates); pairs with scale 0 count 0. One contiguous block per i."""
    k, n = Zt.shape
    out = np.zeros(n)
    start = 0
    for i in range(k - 1):
        sl = slice(start, start + k - 1 - i)
        start = sl.stop
        ok = scale[sl] > 0
        if not ok.any():
            continue
        d = Zt[i + 1:][ok] - Zt[i]
        d -= shift[sl][ok, None]
        np.abs(d, out=d)
        d /= scale[sl][ok, None]
        np.maximum(out, d.max(axis=0), out=out)
    return out


def _pair_sd(D: np.ndarray) -> np.ndarray:
    """SD (ddof 1) over the draws of every pair difference D[:, j] - D[:, i] (i < j, Tukey order),
    one name at a time: n_draws x (k - 1) at most, never n_draws x k (k - 1) / 2 (20,000 draws of
    300 names would be 7 GB at once)."""
    k = D.shape[1]
    out = np.empty(k * (k - 1) // 2)
    start = 0
    for i in range(k - 1):
        d = D[:, i + 1:] - D[:, i, None]
        out[start:start + k - 1 - i] = d.std(axis=0, ddof=1)
        start += k - 1 - i
    return out


def _normal_draws(V: np.ndarray, n_sim: int, random_state: Any) -> np.ndarray:
    """n_sim x k draws of N(0, V) (symmetric square root: V may be singular)."""
    w, U = np.linalg.eigh(V)
    root = U * np.sqrt(np.clip(w, 0.0, None))
    rng = as_generator(random_state)
    return rng.standard_normal((n_sim, V.shape[0])) @ root.T


def _null_max(method: str, Z: np.ndarray, d_hat: np.ndarray, se: np.ndarray) -> np.ndarray:
    """The max statistic per replicate: |Z_j - Z_i| / se_ij for the joint normal, centred on the
    observed differences for the bootstrap (studentized unless ``"bootstrap_centered"``)."""
    shift = np.zeros_like(d_hat) if method == "normal" else d_hat
    scale = np.where(se > 0, 1.0, 0.0) if method == "bootstrap_centered" else se
    out = np.zeros(Z.shape[0])
    for start in range(0, Z.shape[0], _CHUNK):
        out[start:start + _CHUNK] = _pair_max(np.ascontiguousarray(Z[start:start + _CHUNK].T), shift, scale)
    return out


def _p_adj(maxstat: np.ndarray, stat: np.ndarray, method: str) -> np.ndarray:
    """Single-step adjusted p-values: the share of max statistics at or above |statistic|.
    Bootstrap: (count + 1) / (B + 1). Joint normal: at least the unadjusted normal p-value, and
    where no simulated maximum reaches |statistic| the Bonferroni bound min(1, m p) instead of
    0 (the simulation cannot resolve smaller values; DESIGN rule 8)."""
    srt = np.sort(maxstat)
    count = srt.size - np.searchsorted(srt, np.abs(stat) * (1 - 1e-12), side="left")
    if method != "normal":
        return (count + 1.0) / (srt.size + 1.0)
    p_raw = 2.0 * ndtr(-np.abs(stat))
    return np.where(count == 0, np.minimum(1.0, stat.size * p_raw), np.maximum(count / srt.size, p_raw))


def _pairwise(names: list[str], est: np.ndarray, se: np.ndarray, maxstat: np.ndarray, crit: float,
              method: str, higher_is_better: bool) -> pd.DataFrame:
    a, b = _pair_index(len(names))
    d = est[b] - est[a]
    scale = np.ones_like(se) if method == "bootstrap_centered" else se
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(scale > 0, d / np.where(scale > 0, scale, 1.0), np.where(d == 0, 0.0, np.sign(d) * np.inf))
    p_adj = _p_adj(maxstat, stat, method)
    return pd.DataFrame({
        "name_a": [names[i] for i in b], "name_b": [names[i] for i in a], "estimate": d,
        "std_error": se, "statistic": stat, "p_adj": p_adj,
        "conf_low": d - crit * scale, "conf_high": d + crit * scale, "significant": np.abs(stat) > crit,
    })


def _rank_bounds(k: int, pw: pd.DataFrame, pos: dict[str, int], higher_is_better: bool
                 ) -> tuple[np.ndarray, np.ndarray]:
    """1 + the number of names significantly better than each, and k - the number significantly
    worse (vectorized over the pairs: 2 million pairs of 2,000 names in milliseconds)."""
    sig = pw["significant"].to_numpy(dtype=bool)
    ia = pw["name_a"].map(pos).to_numpy()[sig].astype(np.int64)
    ib = pw["name_b"].map(pos).to_numpy()[sig].astype(np.int64)
    a_better = (pw["estimate"].to_numpy()[sig] > 0) == higher_is_better
    win, lose = np.where(a_better, ia, ib), np.where(a_better, ib, ia)
    return 1 + np.bincount(lose, minlength=k), k - np.bincount(win, minlength=k)


def _letters(names: list[str], est: np.ndarray, pw: pd.DataFrame, order: np.ndarray) -> dict[str, str]:
    """Compact letters by multcomp's insert-absorb (comparisons in Tukey order, lvl_order by
    increasing estimate as multcomp::cld, rows best first so that the best group gets 'a')."""
    comps = list(zip(pw["name_a"], pw["name_b"]))
    lvl_order = [names[i] for i in np.argsort(est, kind="stable")]
    return compact_letters(pw["significant"].to_numpy(), comps, lvl_order, [names[i] for i in order])


def _tables(names, est, pw, rank_sim, level, higher_is_better, with_letters=True):
    k = len(names)
    pos = {n: i for i, n in enumerate(names)}
    low, high = _rank_bounds(k, pw, pos, higher_is_better)
    rank = rank_matrix(est[:, None], higher_is_better)[:, 0]
    order = np.lexsort((np.arange(k), rank))
    letters = _letters(names, est, pw, order) if with_letters else dict.fromkeys(names)
    table = pd.DataFrame({"name": names, "estimate": est, "rank": rank, "rank_low": low, "rank_high": high,
                          "letters": [letters[n] for n in names]}).iloc[order].reset_index(drop=True)
    dist = pd.DataFrame({"name": names, **rank_columns(rank_matrix(rank_sim.T, higher_is_better), level)})
    return table, dist.iloc[order].reset_index(drop=True)


def rank_intervals_core(names, est, *, vcov=None, draws=None, level=0.95, higher_is_better=True,
                        method="normal", random_state=None, n_sim=100_000, letters=True):
    """The computation of the old ``rank_intervals`` (its argument checks left out): returns
    (table, pairwise, rank_distribution, critical_value)."""
    if method == "normal":
        V = vcov if vcov is not None else np.cov(draws, rowvar=False)
        Z = _normal_draws(V, int(n_sim), random_state)
        a, b = _pair_index(len(names))
        se = _pair_se(V, a, b)
        rank_sim = est + Z
    else:
        D = draws
        a, b = _pair_index(len(names))
        se = _pair_sd(D)
        Z, rank_sim = D, D
    d_hat = est[b] - est[a]
    maxstat = _null_max(method, Z, d_hat, se)
    crit = float(np.quantile(maxstat, level))
    pw = _pairwise(names, est, se, maxstat, crit, method, bool(higher_is_better))
    table, dist = _tables(names, est, pw, rank_sim, level, bool(higher_is_better), bool(letters))
    return table, pw, dist, crit


# ----------------------------------------------------------------- mixedeval/_answer.py

def leaderboard(estimates: pd.Series, *, std_error: Any = None, conf_low: Any = None, conf_high: Any = None,
                vcov: Any = None, draws: Any = None, higher_is_better: bool = True, level: float = 0.95,
                random_state: Any = None, n_sim: int = 20_000, letters: bool = True) -> pd.DataFrame:
    """The best-first leaderboard of k systems (columns :data:`LEADERBOARD_COLUMNS`).

    ``estimates`` is a Series indexed by system name; ``std_error``, ``conf_low``, ``conf_high``
    are per-system (Series by name or arrays in the same order) and are copied as they are.
    The rank intervals and letters come from :func:`mixedeval._rankings.rank_intervals`: from
    ``draws`` (bootstrap replicates, a column per system) when given, else the joint normal with
    ``vcov`` (default: independent, ``diag(std_error**2)``). A missing ``random_state`` means a
    fixed seed (0), so the default path gives the same leaderboard in every process.
    ``letters=False`` (or more than 150 systems) leaves the letters empty (their cost grows
    fast with k)."""
    if not isinstance(estimates, pd.Series):
        raise DataError("leaderboard estimates must be a pandas Series indexed by system name")
    names = [str(n) for n in estimates.index]
    est = estimates.to_numpy(dtype=float)
    se = _as_array(std_error, list(estimates.index), "std_error")
    lo = _as_array(conf_low, list(estimates.index), "conf_low")
    hi = _as_array(conf_high, list(estimates.index), "conf_high")
    hib = bool(higher_is_better)
    k = len(names)
    base = pd.DataFrame({"name": names, "estimate": est, "std_error": se, "conf_low": lo, "conf_high": hi})
    if k == 0:
        return pd.DataFrame(columns=list(LEADERBOARD_COLUMNS))
    rank = rank_matrix(np.where(np.isfinite(est), est, -np.inf if hib else np.inf)[:, None], hib)[:, 0]
    base["rank"] = rank
    usable = k >= 2 and np.all(np.isfinite(est)) and (
        draws is not None or vcov is not None or (np.all(np.isfinite(se)) and np.all(se > 0)))
    if not usable:
        base["rank_low"] = 1 if k == 1 else np.nan
        base["rank_high"] = 1 if k == 1 else np.nan
        base["letters"] = "a" if k == 1 else ""
    else:
        V = vcov if (vcov is not None or draws is not None) else np.diag(se ** 2)
        if isinstance(V, pd.DataFrame):
            V = V.loc[list(estimates.index), list(estimates.index)].to_numpy(dtype=float)
        if isinstance(draws, pd.DataFrame):
            draws = draws[list(estimates.index)].to_numpy(dtype=float)
        t = rank_intervals_core(names, est, vcov=None if draws is not None else np.asarray(V, dtype=float), draws=draws,
                                level=level, higher_is_better=hib, method="normal" if draws is None else "bootstrap",
                                random_state=0 if random_state is None else random_state,
                                n_sim=n_sim, letters=bool(letters and k <= 150))[0].set_index("name")
        base["rank_low"] = t.loc[names, "rank_low"].to_numpy()
        base["rank_high"] = t.loc[names, "rank_high"].to_numpy()
        base["letters"] = t.loc[names, "letters"].to_numpy() if (letters and k <= 150) else ""
    order = np.lexsort((np.arange(k), base["rank"].to_numpy()))
    out = base.iloc[order].reset_index(drop=True)
    return out[list(LEADERBOARD_COLUMNS)]


# ----------------------------------------------------------------- mixedeval/_cld.py at commit 4fb8a1e
# The letters of the first pass of issue 42 (item 6), copied verbatim (names suffixed ``_today``):
# insert-absorb one update per level (_block_update) and the vectorized sweep. The reference of
# tests/test_issue42_leaderboard.py (letters of up to 200 levels, beyond the one-pair-at-a-time
# port above) and the baseline of bench_leaderboard.py's letters.

def _sweep_once_today(mat: np.ndarray) -> tuple[np.ndarray, bool]:
    """One pass of ``sweepLetters``: returns the matrix and whether a column was emptied (restart).

    Column by column (``i``): a member ``j`` of column ``i`` is redundant there when it shares
    another letter with every other member ``k`` (``tmp``: the members' rows as the column starts;
    the decisions of one column do not depend on each other, as the locks they set sit in other
    columns); each pair then locks its last shared letter for both, and ``j`` leaves column ``i``.
    The pairwise sharing is one product of the members' rows (multcomp loops over the pairs)."""
    n, ncol = mat.shape
    locked = np.zeros((n, ncol), dtype=bool)
    for i in range(ncol):
        one = np.flatnonzero(mat[:, i])
        other = mat[one].copy()
        other[:, i] = False
        if one.size == n and n > 0 and other.any(axis=1).all():
            continue
        if one.size > 1:
            f = other.astype(np.float32)
            share = (f @ f.T) > 0.5
            np.fill_diagonal(share, True)
            for jj in np.flatnonzero(share.all(axis=1) & ~locked[one, i]):
                both = other & other[jj]
                last = ncol - 1 - np.argmax(both[:, ::-1], axis=1)
                ks = np.arange(one.size) != jj
                locked[one[ks], last[ks]] = True
                locked[one[jj], last[ks]] = True
                mat[one[jj], i] = False
        if not mat[:, i].any():
            return np.delete(mat, i, axis=1), True
    return mat, False


def sweep_letters_today(mat: np.ndarray) -> np.ndarray:
    """``multcomp:::sweepLetters``: remove letters that are not needed (start column 1)."""
    mat = mat.copy()
    again = True
    while again:
        mat, again = _sweep_once_today(mat)
    return mat[:, mat.any(axis=0)]


def _order_columns_today(lmat: np.ndarray) -> np.ndarray:
    """Columns by increasing size (stable), swept, then by their first row (stable)."""
    lmat = lmat[:, np.argsort(lmat.sum(axis=0), kind="stable")]
    lmat = sweep_letters_today(lmat)
    first = np.array([np.flatnonzero(c)[0] if c.any() else lmat.shape[0] for c in lmat.T])
    return lmat[:, np.argsort(first, kind="stable")]


def _block_update(M: np.ndarray, i: int, J: np.ndarray) -> np.ndarray:
    """``insert_absorb``'s matrix after inserting the significant pairs (j, i), j in ``J`` (all
    ``> i``, in increasing order, as Tukey order has them), into ``M`` (levels x letters, an
    antichain: no column inside another, as after every absorb).

    Every step (j, i) splits each column c holding both i and j into c - {j} (in place) and
    c - {i} (appended), then absorbs. Step by step that is |J| splits; taken together:

    * columns without ``i`` are untouched (nothing can contain them later: columns only shrink);
    * the columns holding ``i`` (the group) lose J in place; one of them is absorbed when at its
      step it lies inside another group column (equal ones: the later one goes); x lies inside y
      from the step that removes the last element of x - y, so the deletions are replayed at those
      steps only;
    * column c of the group appends c - {i} at its first step (min of c & J); later splits of the
      same column append subsets of it (absorbed at once). c - {i} survives unless an untouched
      column without ``i`` contains it (no group column can, and no later new column).
    New columns follow the kept ones in the order they were appended (step, then column order).
    """
    inJ = np.zeros(M.shape[0], dtype=bool)
    inJ[J] = True
    grp = np.flatnonzero(M[i])
    X = M[:, grp]
    hit = X & inJ[:, None]
    touched = hit.any(axis=0)
    if not touched.any():
        return M
    m = grp.size
    alive = np.ones(m, dtype=bool)
    if m > 1:
        # x can lie inside y only if x - y is in J: pairs with no member of x - y outside J
        Xo = X[~inJ].astype(np.float32)
        outside = Xo.sum(axis=0)[:, None] - Xo.T @ Xo  # |x - y| outside J
        np.fill_diagonal(outside, 1.0)
        px, py = np.nonzero(outside < 0.5)
        if px.size:
            XJ = X[J]  # J increasing: the step of an element is its row here
            d = XJ[:, px] & ~XJ[:, py]
            T = d.shape[0] - 1 - np.argmax(d[::-1], axis=0)  # last step that removes a member of x - y
            key = dict(zip(zip(px.tolist(), py.tolist()), T.tolist()))
            order = np.argsort(T, kind="stable")
            px, py, T = px[order], py[order], T[order]
            bounds = np.flatnonzero(np.diff(T)) + 1
            for sl_x, sl_y, sl_t in zip(np.split(px, bounds), np.split(py, bounds), np.split(T, bounds)):
                t = sl_t[0]
                both = alive[sl_x] & alive[sl_y]
                if not both.any():
                    continue
                gone = [x for x, y in zip(sl_x[both].tolist(), sl_y[both].tolist())
                        if key.get((y, x), t + 1) > t or y < x]
                alive[gone] = False
    # the new columns c - {i}, in the order of their first step, then column order
    new = np.flatnonzero(touched)
    first = np.where(hit[:, new], np.arange(M.shape[0])[:, None], M.shape[0]).min(axis=0)
    new = new[np.argsort(first, kind="stable")]
    N = X[:, new].copy()
    N[i] = False
    others = np.flatnonzero(~M[i])
    if others.size:
        size = N.sum(axis=0)
        inside = (N.T.astype(np.float32) @ M[:, others].astype(np.float32)) >= size[:, None] - 0.5
        N = N[:, ~inside.any(axis=1)]
    keep = np.ones(M.shape[1], dtype=bool)
    keep[grp[~alive]] = False
    M = M.copy()
    M[np.ix_(J, grp)] = False
    return np.concatenate([M[:, keep], N], axis=1)


def tukey_letter_matrix_today(significant: np.ndarray, lvl_rows: np.ndarray) -> np.ndarray:
    """Today's (commit 4fb8a1e) :func:`letter_matrix` for the comparisons of k levels in Tukey order (for i = 0..k-2, for
    j = i+1..k-1: the pair (j, i)), as :func:`mixedeval._rankings.rank_intervals` makes them:
    ``significant`` is the k x k symmetric matrix of decisions (level index = position in that
    order), ``lvl_rows`` the level indices in the order of the rows of the result (``levels_x``).
    The same matrix as :func:`letter_matrix`, in milliseconds where it takes minutes (one update
    per level instead of one per significant pair; see :func:`_block_update`)."""
    sig = np.asarray(significant, dtype=bool)
    k = sig.shape[0]
    M = np.ones((k, 1), dtype=bool)
    if not sig.any():
        return M[lvl_rows]
    for i in range(k - 1):
        J = np.flatnonzero(sig[i, i + 1:]) + i + 1
        if J.size:
            M = _block_update(M, i, J)
    M = M[lvl_rows]
    return _order_columns_today(_order_columns_today(M))
