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


def _sweep_once(mat: np.ndarray) -> tuple[np.ndarray, bool]:
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


# ---------------------------------------------------------------------------------------------
# the same letters for many levels: insert-absorb one level at a time
# ---------------------------------------------------------------------------------------------

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


def tukey_letter_matrix(significant: np.ndarray, lvl_rows: np.ndarray) -> np.ndarray:
    """:func:`letter_matrix` for the comparisons of k levels in Tukey order (for i = 0..k-2, for
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
    return _order_columns(_order_columns(M))
