"""Multiple-comparison adjustment of p-values, equal to R's ``stats::p.adjust``.

``adjust_pvalues(p, method)`` reproduces ``p.adjust(p, method, n)`` for every method R offers
(``holm``, ``hochberg``, ``hommel``, ``bonferroni``, ``BH`` / ``fdr``, ``BY``, ``none``), line
for line from R's source, including its handling of missing values: NaN entries stay NaN and
are left out of the count ``n`` (unless ``n`` is given). ``sidak`` (``1 - (1 - p)^n``) is an
extra that R's ``p.adjust`` does not have.

References: Holm (1979); Hochberg (1988); Hommel (1988); Benjamini & Hochberg (1995);
Benjamini & Yekutieli (2001); R Core Team, ``?p.adjust``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import DataError

P_ADJUST_METHODS: tuple[str, ...] = ("holm", "hochberg", "hommel", "bonferroni", "BH", "BY", "fdr", "none")
EXTRA_METHODS: tuple[str, ...] = ("sidak",)
_ALIASES = {m.lower(): m for m in (*P_ADJUST_METHODS, *EXTRA_METHODS)}


def adjust_pvalues(p: Sequence[float] | np.ndarray, method: str = "holm", n: int | None = None) -> np.ndarray:
    """Adjust p-values for multiple comparisons exactly as R's ``p.adjust(p, method, n)``.

    Parameters
    ----------
    p : array-like of float
        Unadjusted p-values in [0, 1]; NaN (or None) entries are missing and stay NaN.
    method : str
        ``"holm"`` (default, as in R), ``"hochberg"``, ``"hommel"``, ``"bonferroni"``, ``"BH"``
        (alias ``"fdr"``), ``"BY"``, ``"none"`` (R's ``p.adjust.methods``; case-insensitive
        here), or ``"sidak"`` (``1 - (1 - p)^n``; not in R's ``p.adjust``).
    n : int, optional
        Number of comparisons; defaults to the number of non-missing p-values and must not be
        smaller than it (R's rule).

    Returns
    -------
    numpy.ndarray of float, same shape as ``p``.
    """
    key = str(method).lower()
    if key not in _ALIASES:
        raise DataError(
            f"adjust method {method!r} is unknown; use one of {', '.join(P_ADJUST_METHODS + EXTRA_METHODS)}"
        )
    meth = _ALIASES[key]
    if meth == "fdr":
        meth = "BH"
    arr = np.array(p, dtype=float)  # copy: the caller's array is never modified
    shape = arr.shape
    flat = arr.ravel()
    ok = ~np.isnan(flat)
    if np.any((flat[ok] < 0) | (flat[ok] > 1)):
        raise DataError("p-values must lie in [0, 1] (NaN marks a missing p-value)")
    pv = flat[ok]
    lp = pv.size
    n_ = lp if n is None else int(n)
    if n_ < lp:
        raise DataError(f"n = {n_} is smaller than the number of non-missing p-values ({lp}); R requires n >= {lp}")
    if n_ <= 1:
        return flat.reshape(shape)
    if n_ == 2 and meth == "hommel":
        meth = "hochberg"
    flat[ok] = _ADJUST[meth](pv, n_)
    return flat.reshape(shape)


def _bonferroni(p: np.ndarray, n: int) -> np.ndarray:
    return np.minimum(1.0, n * p)


def _holm(p: np.ndarray, n: int) -> np.ndarray:
    i = np.arange(1, p.size + 1)
    o = np.argsort(p, kind="stable")
    out = np.empty_like(p)
    out[o] = np.minimum(1.0, np.maximum.accumulate((n + 1 - i) * p[o]))
    return out


def _step_up(p: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """R's ``pmin(1, cummin(factor * p[o]))[ro]`` with ``o = order(p, decreasing = TRUE)``."""
    o = np.argsort(-p, kind="stable")
    out = np.empty_like(p)
    out[o] = np.minimum(1.0, np.minimum.accumulate(factor * p[o]))
    return out


def _hochberg(p: np.ndarray, n: int) -> np.ndarray:
    i = np.arange(p.size, 0, -1)
    return _step_up(p, (n + 1 - i).astype(float))


def _bh(p: np.ndarray, n: int) -> np.ndarray:
    i = np.arange(p.size, 0, -1)
    return _step_up(p, n / i)


def _by(p: np.ndarray, n: int) -> np.ndarray:
    i = np.arange(p.size, 0, -1)
    q = np.sum(1.0 / np.arange(1, n + 1))
    return _step_up(p, q * n / i)


def _hommel(p: np.ndarray, n: int) -> np.ndarray:
    lp = p.size
    if n > lp:
        p = np.concatenate([p, np.ones(n - lp)])
    i = np.arange(1, n + 1)
    o = np.argsort(p, kind="stable")
    p = p[o]
    ro = np.empty(n, dtype=np.intp)
    ro[o] = np.arange(n)
    q = np.full(n, np.min(n * p / i))
    pa = q.copy()
    for j in range(n - 1, 1, -1):
        ij = np.arange(0, n - j + 1)
        i2 = np.arange(n - j + 1, n)
        q1 = np.min(j * p[i2] / np.arange(2, j + 1))
        q[ij] = np.minimum(j * p[ij], q1)
        q[i2] = q[n - j]
        pa = np.maximum(pa, q)
    res = np.maximum(pa, p)
    return res[ro[:lp]] if lp < n else res[ro]


def _none(p: np.ndarray, n: int) -> np.ndarray:
    return p


def _sidak(p: np.ndarray, n: int) -> np.ndarray:
    with np.errstate(divide="ignore"):  # p = 1 gives log1p(-1) = -inf and the right answer 1
        return -np.expm1(n * np.log1p(-p))


_ADJUST = {
    "bonferroni": _bonferroni,
    "holm": _holm,
    "hochberg": _hochberg,
    "BH": _bh,
    "BY": _by,
    "hommel": _hommel,
    "none": _none,
    "sidak": _sidak,
}
