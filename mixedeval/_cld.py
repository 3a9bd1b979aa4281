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
