"""Compact letter display: the insert-absorb algorithm of Piepho (2004) as multcomp implements it.

A faithful port of ``multcomp:::insert_absorb`` and ``multcomp:::sweepLetters`` (R package
multcomp 1.4, file R/cld.R), which ``multcomp::cld`` applies to a ``glht`` object's single-step
adjusted p-values. Levels that share a letter are not significantly different; every pair of
levels that is significantly different shares no letter. The letters depend on the order in
which the significant pairs are inserted (``comps``), on ``lvl_order`` (multcomp: levels by
increasing mean response) and on ``levels_x`` (the order of the rows when the letters are
named: the first letter goes to the group of the first row). Parity with R is tested in
tests/test_rankings.py by calling ``multcomp:::insert_absorb`` on the same decisions.

Piepho, H.-P. (2004). An algorithm for a letter-based representation of all-pairwise
comparisons. Journal of Computational and Graphical Statistics 13(2), 456-466.
"""
from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

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


def _last_common(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The last column shared by each row of ``a`` and each row of ``b`` (boolean, same columns):
    an (a rows x b rows) array of column indices, -1 where they share none. The rows are packed
    into 64-bit words, so a pair costs a word per 64 columns; the highest bit of the last non-zero
    word is read from the exponent of its 32-bit halves (exact in float64)."""
    c = a.shape[1]
    W = max(1, (c + 63) // 64)

    def pack(x: np.ndarray) -> np.ndarray:
        pad = np.zeros((x.shape[0], W * 64), dtype=bool)
        pad[:, :c] = x
        return np.packbits(pad, axis=1, bitorder="little").view("<u8")

    both = pack(a)[:, None, :] & pack(b)[None, :, :]
    if W == 1:
        word = both[..., 0]
        w = np.where(word != 0, 0, -1)
    else:
        w = ((both != 0) * np.arange(1, W + 1, dtype=np.int32)).max(axis=2) - 1
        word = np.take_along_axis(both, np.maximum(w, 0)[..., None], axis=2)[..., 0]
    hi = (word >> np.uint64(32)).astype(np.float64)
    lo = (word & np.uint64(0xFFFFFFFF)).astype(np.float64)
    bit = np.where(hi > 0, 31 + np.frexp(hi)[1], np.frexp(lo)[1] - 1)
    return np.where(w >= 0, w * 64 + bit, -1)


def _sweep_pass(mat: np.ndarray, start: int, cov: np.ndarray, stable: np.ndarray) -> tuple[int | None, int]:
    """One pass of ``sweepLetters`` from column ``start`` with fresh locks, changing ``mat`` (and
    ``cov``, the number of letters each pair of levels shares) in place. Returns the column that
    was emptied (multcomp then deletes it and starts again) or None, and the first column where a
    redundant member was kept only by a lock (or that was skipped as holding every level).

    Column by column (``i``): a member ``j`` of column ``i`` is redundant there when it shares
    another letter with every other member ``k`` (``cov[j, k] > 1``, counted as the column starts;
    the decisions of one column do not depend on each other, as the locks they set sit in other
    columns); each pair then locks its last shared letter for both, and ``j`` leaves column ``i``.
    Only the locks in later columns are read again in the pass, and those columns have not changed
    since the pass began, so the last shared letter is looked up among them only; when every member
    leaves, the pass ends at once and its locks are not needed. A column where no redundant member
    stayed (for a lock) is marked ``stable``: its members keep their letter for good (each has a
    co-member sharing no other letter, and letters are only removed), so later passes skip it."""
    n, ncol = mat.shape
    locked = np.zeros((n, ncol), dtype=bool)
    dirty = ncol
    for i in range(start, ncol):
        if stable[i]:
            continue
        one = np.flatnonzero(mat[:, i])
        if one.size == n and n > 0 and (mat.sum(axis=1) > 1).all():
            dirty = min(dirty, i)
            continue
        if one.size > 1:
            oc = one[:, None]
            shared = cov[oc, one]
            np.fill_diagonal(shared, 2)
            red = (shared > 1).all(axis=1)
            lk = locked[one, i]
            if (red & lk).any():
                dirty = min(dirty, i)
            else:
                stable[i] = True
            R = np.flatnonzero(red & ~lk)
            if R.size:
                cols = np.empty(0, dtype=np.int64)
                if R.size < one.size:  # the later columns holding a member that leaves
                    cols = np.flatnonzero(mat[one[R], i + 1:].any(axis=0)) + i + 1
                if cols.size:
                    later = mat[oc, cols]
                    last = _last_common(later[R], later)  # R x members
                    last[np.arange(R.size), R] = -1
                    rr, kk = np.nonzero(last >= 0)
                    h = cols[last[rr, kk]]
                    locked[one[kk], h] = True
                    locked[one[R[rr]], h] = True
                mat[one[R], i] = False
                keep = np.ones(one.size, dtype=bool)
                keep[R] = False
                cov[oc, one] -= 1
                rest = one[keep]
                cov[rest[:, None], rest] += 1
        else:
            stable[i] = True
        if not mat[:, i].any():
            return i, dirty
    return None, dirty


def sweep_letters(mat: np.ndarray) -> np.ndarray:
    """``multcomp:::sweepLetters``: remove letters that are not needed (start column 1).

    multcomp restarts from the first column with fresh locks whenever a column is emptied; the
    restart resumes at the first column that could change: before it, every member of every column
    kept its letter because some co-member shares no other letter with it, which stays true (letters
    are only removed), so a fresh pass leaves those columns and sets no lock there."""
    mat = np.array(mat, dtype=bool)
    f = mat.astype(np.float32)
    cov = np.rint(f @ f.T).astype(np.int64)
    start = 0
    stable = np.zeros(mat.shape[1], dtype=bool)
    while True:
        emptied, dirty = _sweep_pass(mat, start, cov, stable)
        if emptied is None:
            break
        mat = np.delete(mat, emptied, axis=1)
        stable = np.delete(stable, emptied)
        start = min(dirty, emptied)
    return mat[:, mat.any(axis=0)]


def _order_columns(lmat: np.ndarray) -> np.ndarray:
    """Columns by increasing size (stable), swept, then by their first row (stable)."""
    lmat = lmat[:, np.argsort(lmat.sum(axis=0), kind="stable")]
    lmat = sweep_letters(lmat)
    first = np.where(lmat.any(axis=0), np.argmax(lmat, axis=0), lmat.shape[0])
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


# ---------------------------------------------------------------------------------------------
# the same letters for many levels: the maximal cliques, in the order insert-absorb creates them
# ---------------------------------------------------------------------------------------------

def maximal_cliques(adj: np.ndarray, order: Sequence[int] | None = None) -> np.ndarray:
    """All maximal cliques of the graph ``adj`` (k x k boolean, symmetric, True on the diagonal),
    as the columns of a k x m boolean matrix, by adding the vertices one at a time in ``order``
    (default 0..k-1): the maximal cliques of the vertices so far that lie in v's neighbourhood
    take v in, and the largest of the others' intersections with it, plus v, are the new ones
    (Tsukiyama et al. 1977's vertex-incremental step). Any order gives the same set; an order
    along which the neighbourhoods are nearly intervals (levels best first) keeps it small at
    every step."""
    adj = np.asarray(adj, dtype=bool)
    k = adj.shape[0]
    cap = 64
    Q = np.zeros((k, cap), dtype=bool)
    size = np.zeros(cap, dtype=np.int64)
    n = 0
    done = np.zeros(k, dtype=bool)
    for v in (range(k) if order is None else order):
        nb = np.flatnonzero(adj[v] & done)
        done[v] = True
        hit = np.empty(0, dtype=np.int64)
        if n and nb.size:
            sub = Q[nb, :n]
            cnt = sub.sum(axis=0)
            hit = np.flatnonzero(cnt)
        if hit.size == 0:
            new = np.zeros((k, 1), dtype=bool)
            new[v] = True
        else:
            ch = cnt[hit]
            full = ch == size[hit]  # inside v's neighbourhood: takes v in (always maximal)
            part = np.flatnonzero(~full)
            new = None
            if part.size:  # the others' intersections: keep those in no other (the first of equals)
                cand = sub[:, hit]
                cf = cand.astype(np.float32)
                inside = (cf[:, part].T @ cf) >= ch[part][:, None] - 0.5
                inside[np.arange(part.size), part] = False
                earlier = part[:, None] > np.arange(hit.size)[None, :]
                drop = (inside & ((ch[None, :] > ch[part][:, None]) | earlier)).any(axis=1)
                kept = part[~drop]
                if kept.size:
                    new = np.zeros((k, kept.size), dtype=bool)
                    new[nb] = cand[:, kept]
                    new[v] = True
            Q[v, hit[full]] = True
            size[hit[full]] += 1
            if new is None:
                continue
        m = new.shape[1]
        if n + m > cap:
            cap = max(2 * cap, n + m)
            Q = np.concatenate([Q[:, :n], np.zeros((k, cap - n), dtype=bool)], axis=1)
            size = np.concatenate([size[:n], np.zeros(cap - n, dtype=np.int64)])
        Q[:, n:n + m] = new
        size[n:n + m] = new.sum(axis=0)
        n += m
    return Q[:, :n]


def _creation_order(sig: np.ndarray, C: np.ndarray) -> np.ndarray:
    """The order in which insert-absorb (pairs in Tukey order) leaves the maximal cliques ``C``
    of the not-significant graph, as a permutation of C's columns.

    After the pairs (j, i) of levels i = 0..t are inserted, the columns are the maximal cliques of
    the graph where the levels after t are still all linked; such a column is fixed by its
    *head*, its members up to t. Step t keeps the columns without t, shrinks those with t in place
    (the head gains t) and appends, for each of those that a pair (j, t) splits, the copy without
    t (the same head), in the order of its first splitting j, then of the column split; absorbed
    columns leave, the others keep their relative order. So the final order is the order of
    creation, and the column of clique C was created from its parent at the last level b not in
    C that is linked to every member of C before b (its head then held neither b nor later
    members: the parent held b). Its key is (b, first j > b significant against b and linked to
    those members, the parent's key), the parent being the same clique's column one such b
    earlier: the b of a clique are all levels not in it that are linked to its earlier members,
    last first. Checked against the step-by-step algorithm in tests/test_issue42_leaderboard.py."""
    k, m = C.shape
    low = np.tril(sig, -1).astype(np.float32)
    births = ((low @ C.astype(np.float32)) < 0.5) & ~C
    history = [np.flatnonzero(births[:, c])[::-1] for c in range(m)]

    def first_split(c: int, b: int) -> int:
        members = np.flatnonzero(C[:b, c])
        J = np.flatnonzero(sig[b, b + 1:]) + b + 1
        if members.size:
            J = J[~sig[J[:, None], members].any(axis=1)]
        if not J.size:
            raise RuntimeError("compact letters: a column with no history (internal error)")
        return int(J[0])

    out: list[int] = []
    stack = [(list(range(m)), 0)]
    while stack:
        ids, depth = stack.pop()
        if len(ids) == 1:
            out.append(ids[0])
            continue
        b = [int(history[c][depth]) if depth < history[c].size else -1 for c in ids]
        tied = {x for x in b if b.count(x) > 1 and x >= 0}
        keys = sorted(((x, first_split(c, x) if x in tied else -1), c) for x, c in zip(b, ids))
        groups: list[tuple[tuple[int, int], list[int]]] = []
        for key, c in keys:
            if groups and groups[-1][0] == key:
                groups[-1][1].append(c)
            else:
                groups.append((key, [c]))
        for key, g in reversed(groups):
            if len(g) > 1 and key[0] < 0:
                raise RuntimeError("compact letters: two columns with one history (internal error)")
            stack.append((g, depth + 1))
    return np.asarray(out, dtype=np.int64)


def tukey_letter_matrix(significant: np.ndarray, lvl_rows: np.ndarray) -> np.ndarray:
    """:func:`letter_matrix` for the comparisons of k levels in Tukey order (for i = 0..k-2, for
    j = i+1..k-1: the pair (j, i)), as :func:`mixedeval._rankings.rank_intervals` makes them:
    ``significant`` is the k x k symmetric matrix of decisions (level index = position in that
    order), ``lvl_rows`` the level indices in the order of the rows of the result (``levels_x``).

    The same matrix as :func:`letter_matrix` (multcomp's insert-absorb one pair at a time),
    without inserting the pairs: insert-absorb ends with the maximal cliques of the graph of pairs
    that are not significantly different (every column is such a clique, every maximal clique
    lies in a column, and absorb leaves no column inside another), found here directly
    (:func:`maximal_cliques`, levels taken in ``lvl_rows`` order) and put in the order
    insert-absorb creates them (:func:`_creation_order`); then the sweep and the column orders
    as before. The time grows with the number and the size of the maximal cliques: 300
    overlapping systems in about 0.1 s for the cliques plus the sweep."""
    sig = np.asarray(significant, dtype=bool)
    k = sig.shape[0]
    rows = np.asarray(lvl_rows)
    if not sig.any():
        return np.ones((k, 1), dtype=bool)[rows]
    adj = ~sig
    np.fill_diagonal(adj, True)
    C = maximal_cliques(adj, rows)
    C = C[:, _creation_order(sig, C)]
    return _order_columns(_order_columns(C[rows]))
