"""Rankings with uncertainty: simultaneous rank intervals, rank distributions, compact letters.

This module sits beside the layers (like :mod:`mixedeval.results`): the inference results
(EMMs, Bradley-Terry) and the resampling results (bootstrap) all call it; the public entry point
is :func:`mixedeval.inference.rankings.rank_intervals` (``me.rank_intervals``).

Method (Mogstad, Romano, Shaikh & Wilhelm 2024, "Inference for ranks with applications to
mobility across neighbourhoods and academic achievement across countries", Review of Economic
Studies 91(1), 476-518, the single-step "simultaneous" confidence set for all ranks): build
simultaneous confidence intervals for all k(k-1)/2 pairwise differences with the max-|t|
critical value; system i is "significantly better" than j when its interval excludes 0 on the
better side. Then with probability >= ``level`` all these decisions are right at once, and so

    rank_low  = 1 + #{j significantly better than i}
    rank_high = k - #{j significantly worse than i}

cover the true ranks of all systems simultaneously.

* ``vcov`` (``method="normal"``): the estimates are jointly normal with covariance ``vcov``;
  t_ij = (est_i - est_j) / se_ij with se_ij^2 = V_ii + V_jj - 2 V_ij; the critical value is the
  ``level`` quantile of max_ij |Z_i - Z_j| / se_ij, Z ~ N(0, vcov), simulated (``n_sim`` draws,
  Monte-Carlo error about 0.3% of the value at 100,000 draws). This is the same critical value
  and the same single-step adjusted p-values as ``multcomp::glht(parm(est, vcov), linfct =
  Tukey contrasts)`` with its default ``adjusted("single-step")`` (mvtnorm's randomized
  quasi-Monte-Carlo integration, error 0.001 in probability); tests/test_rankings.py checks it.
* ``draws`` (``method="bootstrap"``): the bootstrap of the same statistic, as in Mogstad et al.
  Section 3: the critical value is the ``level`` quantile over the replicates of the
  *studentized, centred* max_ij |(d*_ij - d_ij)| / s_ij, with d the observed differences, d* a
  replicate's and s_ij the replicates' standard deviation of d*_ij. ``"bootstrap_centered"``
  drops the studentization (max_ij |d*_ij - d_ij| against |d_ij|): simpler, but pairs with
  wide intervals dominate it, so it is less powerful when standard errors differ.

The rank of a point estimate, and ranks in the rank distribution, are 1 + the number of systems
strictly better (ties share the better rank: 1, 2, 2, 4 -- scipy's ``rankdata(method="min")``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtr

from . import _cld, _resources
from ._executor import one_blas_thread
from ._random import as_generator
from .data.validate import require_level
from .errors import DataError
from .results import ResultMixin, jsonable

METHODS = ("normal", "bootstrap", "bootstrap_centered")
_CHUNK = 20_000  # simulated rows per block (memory: chunk x k floats)
_GROUP = 16  # names per group of the branch and bound of the max statistic (_pair_max): at least
# 16, about sqrt(k) (fewer blocks to bound for many names: 1,000 names 0.9 s instead of 1.3 s)


# ---------------------------------------------------------------------------------------------
# rank matrices (shared with mixedeval.resampling)
# ---------------------------------------------------------------------------------------------

def rank_matrix(x: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Rank of every row in every column: 1 + the number of rows strictly better (rank 1 = best;
    ties share the better rank: 1, 2, 2, 4 -- scipy's ``rankdata(method="min")``), compared in
    the direction of ``higher_is_better``. One sort per column: the rank of a value is read from
    the end (higher is better) or the start (lower is better) of its run of ties in the sorted
    column. Columns with NaN (never better or worse than anything) are compared row by row."""
    x = np.asarray(x)
    k = x.shape[0]
    if k == 0 or x.ndim != 2 or x.shape[1] == 0 or np.isnan(x).any():
        ranks = np.ones(x.shape, dtype=np.int64)
        for i in range(k):
            ranks[i] += (x > x[i]).sum(axis=0) if higher_is_better else (x < x[i]).sum(axis=0)
        return ranks
    xt = np.ascontiguousarray(x.T)  # one row per column of x
    order = np.argsort(xt, axis=1, kind="stable")
    v = np.take_along_axis(xt, order, axis=1)
    pos = np.arange(k)
    if higher_is_better:  # 1 + the number above the last of its ties = k - that position
        end = np.ones(v.shape, dtype=bool)
        end[:, :-1] = v[:, 1:] != v[:, :-1]
        last = np.minimum.accumulate(np.where(end, pos, k)[:, ::-1], axis=1)[:, ::-1]
        r = k - last
    else:  # 1 + the number below the first of its ties
        start = np.ones(v.shape, dtype=bool)
        start[:, 1:] = v[:, 1:] != v[:, :-1]
        r = 1 + np.maximum.accumulate(np.where(start, pos, 0), axis=1)
    ranks = np.empty(xt.shape, dtype=np.int64)
    np.put_along_axis(ranks, order, r.astype(np.int64), axis=1)
    return np.ascontiguousarray(ranks.T)


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
    # counts of every rank in every row (one bincount): p_rank_r = count / B, as (ranks == r).mean
    counts = np.bincount((ranks - 1 + k * np.arange(k)[:, None]).ravel(), minlength=k * k).reshape(k, k)
    for r in range(1, k + 1):
        out[f"p_rank_{r}"] = counts[:, r - 1] / B
    alpha = 1.0 - level
    out["expected_rank"] = ranks.mean(axis=1)
    # the inverted-CDF quantiles select one sorted position (numpy's own rule, read off a sorted
    # 0..B-1); the rank at that position is 1 + the number of ranks whose cumulative count is
    # at most the position
    at = np.quantile(np.arange(B), [alpha / 2, 1 - alpha / 2], method="inverted_cdf").astype(np.int64)
    cum = counts.cumsum(axis=1)
    out["rank_conf_low"] = 1 + (cum <= at[0]).sum(axis=1).astype(np.int64)
    out["rank_conf_high"] = 1 + (cum <= at[1]).sum(axis=1).astype(np.int64)
    return out


# ---------------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, repr=False, eq=False)
class RankIntervals(ResultMixin):
    """Result of :func:`rank_intervals`.

    Attributes
    ----------
    table : DataFrame
        One row per name, best first: ``name, estimate, rank`` (rank of the point estimate,
        1 = best), ``rank_low, rank_high`` (simultaneous rank intervals at ``level``),
        ``letters`` (compact letter display: names sharing a letter are not significantly
        different; the group of the best name gets ``a``).
    pairwise : DataFrame
        One row per pair (in the input order, multcomp's Tukey order ``name_b - name_a``):
        ``name_a, name_b, estimate`` (a - b), ``std_error``, ``statistic`` (estimate /
        std_error), ``p_adj`` (single-step adjusted p-value: share of simulated / bootstrap
        max-|t| at or above |statistic|; bootstrap (count + 1) / (B + 1); joint normal: never
        below the unadjusted p-value, the Bonferroni bound where no simulated maximum reaches it),
        ``conf_low, conf_high`` (simultaneous), ``significant``.
    rank_distribution : DataFrame
        ``name, p_rank_1 .. p_rank_k, expected_rank, rank_conf_low, rank_conf_high`` (marginal,
        per-name quantiles, not simultaneous) from the bootstrap replicates or the simulated
        joint normal.
    critical_value : float
        The max-|t| critical value (for ``"bootstrap_centered"``: the quantile of max |d* - d|).
    method, level, higher_is_better, n_draws : the settings used.
    estimate_scale : what ``estimate`` holds when a result's ``ranks()`` made it (e.g. the link
        scale of a GLMM's means); empty for direct calls.
    """

    table: pd.DataFrame
    pairwise: pd.DataFrame
    rank_distribution: pd.DataFrame
    critical_value: float
    method: str
    level: float
    higher_is_better: bool
    n_draws: int
    estimate_scale: str = ""
    warnings: tuple[Any, ...] = field(default=())

    _main_table = "table"
    _title = "Simultaneous rank intervals"

    def _scalars(self) -> list[tuple[str, Any]]:
        scale = [("estimates", self.estimate_scale)] if self.estimate_scale else []
        return scale + [("method", self.method), ("level (simultaneous)", self.level),
                ("critical value", round(self.critical_value, 4)),
                ("direction", "higher is better" if self.higher_is_better else "lower is better")]

    def to_dict(self) -> dict[str, Any]:
        return jsonable({"table": self.table, "pairwise": self.pairwise, "rank_distribution": self.rank_distribution,
                         "critical_value": self.critical_value, "method": self.method, "level": self.level,
                         "higher_is_better": self.higher_is_better, "n_draws": self.n_draws,
                         "estimate_scale": self.estimate_scale})


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------

def _as_estimates(estimates: Any) -> tuple[list[str], np.ndarray]:
    if isinstance(estimates, pd.Series):
        names, est = [str(x) for x in estimates.index], estimates.to_numpy(dtype=float)
    elif isinstance(estimates, dict):
        names, est = [str(x) for x in estimates], np.asarray(list(estimates.values()), dtype=float)
    else:
        raise DataError(f"estimates must be a pandas Series indexed by name (e.g. pd.Series(est, index=names)), "
                        f"not {type(estimates).__name__}")
    if len(names) < 2:
        raise DataError(f"rank_intervals needs at least 2 names to rank; got {len(names)}")
    if len(set(names)) != len(names):
        raise DataError(f"the names of the estimates must be unique; repeated: "
                        f"{sorted({n for n in names if names.count(n) > 1})}")
    if not np.all(np.isfinite(est)):
        raise DataError(f"estimates must be finite; not finite for {[n for n, e in zip(names, est) if not np.isfinite(e)]}")
    return names, est


def _as_vcov(vcov: Any, names: list[str]) -> np.ndarray:
    if isinstance(vcov, pd.DataFrame):
        missing = [n for n in names if n not in map(str, vcov.index) or n not in map(str, vcov.columns)]
        if missing:
            raise DataError(f"vcov has no row/column for {missing}; label it with the names of the estimates")
        v = vcov.set_axis([str(x) for x in vcov.index], axis=0).set_axis([str(x) for x in vcov.columns], axis=1)
        V = v.loc[names, names].to_numpy(dtype=float)
    else:
        V = np.asarray(vcov, dtype=float)
    k = len(names)
    if V.shape != (k, k) or not np.all(np.isfinite(V)):
        raise DataError(f"vcov must be a finite {k} x {k} matrix (one row and column per estimate); got shape {V.shape}")
    if not np.allclose(V, V.T, rtol=1e-8, atol=1e-12 * max(1.0, np.abs(V).max())):
        raise DataError("vcov must be symmetric")
    if _min_eigenvalue((V + V.T) / 2) < -1e-8 * max(1.0, np.abs(V).max()):
        raise DataError("vcov must be positive semi-definite (a covariance matrix of the estimates)")
    return (V + V.T) / 2


def _is_diagonal(V: np.ndarray) -> bool:
    return V.ndim == 2 and V.shape[0] == V.shape[1] and not np.any(V[~np.eye(V.shape[0], dtype=bool)])


def _min_eigenvalue(V: np.ndarray) -> float:
    """The smallest eigenvalue of symmetric V (of a diagonal V: its smallest diagonal value, which
    is what LAPACK returns, without its multi-threaded reduction of a k x k matrix)."""
    if _is_diagonal(V):
        return float(np.diag(V).min(initial=np.inf))
    return float(np.linalg.eigvalsh(V).min())


def _as_draws(draws: Any, names: list[str]) -> np.ndarray:
    if isinstance(draws, pd.DataFrame):
        cols = [str(c) for c in draws.columns]
        missing = [n for n in names if n not in cols]
        if missing:
            raise DataError(f"draws has no column for {missing}; one column per name (n_draws x k)")
        D = draws.set_axis(cols, axis=1)[names].to_numpy(dtype=float)
    else:
        D = np.asarray(draws, dtype=float)
    if D.ndim != 2 or D.shape[1] != len(names) or D.shape[0] < 2:
        raise DataError(f"draws must be an n_draws x {len(names)} array (one column per name, n_draws >= 2); "
                        f"got shape {D.shape}")
    if not np.all(np.isfinite(D)):
        raise DataError("draws must be finite (drop the replicates with NaN or inf first)")
    return D


def _method(method: Any, vcov: Any, draws: Any) -> str:
    if method is None:
        if vcov is not None and draws is not None:
            raise DataError("give vcov or draws, not both (or say which to use: method='normal' or 'bootstrap')")
        if vcov is None and draws is None:
            raise DataError("rank_intervals needs vcov (joint normal of the estimates) or draws (bootstrap replicates)")
        return "normal" if vcov is not None else "bootstrap"
    if method not in METHODS:
        raise DataError(f"method must be one of {METHODS} or None, not {method!r}")
    if method != "normal" and draws is None:
        raise DataError(f"method={method!r} needs draws (bootstrap replicates, n_draws x k)")
    if method == "normal" and vcov is None and draws is None:
        raise DataError("method='normal' needs vcov (or draws, whose covariance is then used)")
    return method


# ---------------------------------------------------------------------------------------------
# computation
# ---------------------------------------------------------------------------------------------

def _pair_index(k: int) -> tuple[np.ndarray, np.ndarray]:
    """multcomp's Tukey order: for a = 1..k-1, for b = a+1..k: the contrast (b, a)."""
    a, b = np.triu_indices(k, 1)
    return a, b


def _pair_se(V: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sqrt(np.maximum(V[a, a] + V[b, b] - 2 * V[a, b], 0.0))


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


def _independent_draws(d: np.ndarray, n_sim: int, random_state: Any) -> np.ndarray:
    """:func:`_normal_draws` of ``diag(d)`` with distinct positive ``d``, without LAPACK: the
    eigen-decomposition of such a matrix is the sort of ``d`` (eigenvalues ``d`` ascending, exactly,
    and the eigenvectors the unit vectors, +1, in that order: tests/test_issue42_hardening.py
    checks it against ``numpy.linalg.eigh``), so name ``r``'s column of the draws is standard normal
    column ``rank of d[r]`` times ``sqrt(d[r])``: the same numbers, without the O(k^3) eigh of a
    k x k matrix (0.1-0.3 s at k = 1,000)."""
    k = d.size
    col = np.empty(k, dtype=np.int64)
    col[np.argsort(d, kind="stable")] = np.arange(k)
    N = as_generator(random_state).standard_normal((n_sim, k))
    Zt = N.T[col]  # one gather of the columns (a transposed copy, then a row gather: twice the time)
    del N
    Zt *= np.sqrt(d)[:, None]
    return Zt.T


def _normal_draws(V: np.ndarray, n_sim: int, random_state: Any) -> np.ndarray:
    """n_sim x k draws of N(0, V) (symmetric square root: V may be singular). Where the root has
    at most one non-zero per row (independent estimates: eigh of a diagonal matrix), each column
    is one standard normal column times one number: the product with the root, without its
    k x k multiplications per draw (the same numbers: every other term of the sum is 0)."""
    if _is_diagonal(V):  # no rounding in LAPACK's reduction of a diagonal matrix: one thread gives the same
        d = np.diag(V)
        if d.size and np.all(d > 0) and np.unique(d).size == d.size:
            return _independent_draws(d, n_sim, random_state)
        with one_blas_thread():
            w, U = np.linalg.eigh(V)
    else:
        w, U = np.linalg.eigh(V)
    root = U * np.sqrt(np.clip(w, 0.0, None))
    rng = as_generator(random_state)
    N = rng.standard_normal((n_sim, V.shape[0]))
    nz = root != 0
    if nz.sum(axis=1).max(initial=0) <= 1:
        col = np.argmax(nz, axis=1)
        # built as k x n_sim rows (one gather of N's columns) and returned as its transpose: the
        # same numbers, and _null_max's transposed blocks are then views
        return (N.T[col] * root[np.arange(V.shape[0]), col][:, None]).T
    return N @ root.T


def _pair_blocks(sigma: np.ndarray, scale: np.ndarray) -> list[tuple[Any, ...]]:
    """Blocks of pairs for :func:`_pair_max`: the names sorted by ``sigma`` (their own spread)
    and cut into groups of about 16 (sqrt(k) for more than 256 names); a block is the pairs
    between two groups (or within one): (group numbers g, h, pair rows i < j and columns j as
    positions in ``rows``, positions in Tukey order, the smallest ``scale`` of its pairs, the largest
    sqrt(sigma_i^2 + sigma_j^2) / scale_ij, ``rows``: the names of both groups). Pairs with
    scale 0 are left out (they count 0)."""
    k = sigma.size
    srt = np.argsort(sigma, kind="stable")
    groups = np.array_split(srt, max(1, int(np.ceil(k / max(_GROUP, int(np.sqrt(k)))))))
    gid = np.empty(k, dtype=np.int64)
    for g, members in enumerate(groups):
        gid[members] = g
    i, j = _pair_index(k)
    p = np.arange(i.size)
    ok = scale > 0
    i, j, p = i[ok], j[ok], p[ok]
    lo, hi = np.minimum(gid[i], gid[j]), np.maximum(gid[i], gid[j])
    key = lo * len(groups) + hi
    srt_p = np.argsort(key, kind="stable")
    i, j, p, key = i[srt_p], j[srt_p], p[srt_p], key[srt_p]
    cuts = np.flatnonzero(np.diff(key)) + 1
    with np.errstate(divide="ignore", invalid="ignore"):
        rho_all = np.sqrt(sigma[i] ** 2 + sigma[j] ** 2) / scale[p]
    out = []
    for bi, bj, bp, br, bk in zip(np.split(i, cuts), np.split(j, cuts), np.split(p, cuts), np.split(rho_all, cuts),
                                  np.split(key, cuts)):
        if not bp.size:
            continue
        g, h = divmod(int(bk[0]), len(groups))
        rows = np.union1d(groups[g], groups[h])
        rho = float(br.max())
        out.append((g, h, np.searchsorted(rows, bi), np.searchsorted(rows, bj), bp, float(scale[bp].min()),
                    rho if np.isfinite(rho) else np.inf, rows))
    return out, groups


def _arg_extremes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.argmax(x, axis=0), np.argmin(x, axis=0)`` of a finite (k, n) array, row by row (the
    first row holding the column's largest / smallest value, as numpy's): numpy reduces a
    C-ordered array along axis 0 through a transposed copy (5x slower at 1,000 x 20,000)."""
    k, n = x.shape
    hv, lv = x[0].copy(), x[0].copy()
    hi, lo = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for r in range(1, k):
        row = x[r]
        hi[row > hv] = r
        np.maximum(hv, row, out=hv)
        lo[row < lv] = r
        np.minimum(lv, row, out=lv)
    return hi, lo


def _seed_max(Zt: np.ndarray, W: np.ndarray, sigma: np.ndarray, shift: np.ndarray,
              scale: np.ndarray, u: np.ndarray | None = None) -> np.ndarray:
    """A start for :func:`_pair_max`'s running maximum: per replicate, the exact statistic of two
    pairs likely to be the largest -- the names with the largest and smallest ``W``, and those with
    the largest and smallest ``W / sigma`` -- computed with the same operations as a block (so the
    maximum over all pairs, which includes them, is unchanged). A high start lets the bounds skip
    almost every block. ``u``: ``W / sigma`` if the caller has it (every sigma positive)."""
    k, n = Zt.shape
    cols = np.arange(n)
    best = np.zeros(n)
    if u is not None:
        pass
    elif np.all(sigma > 0):
        u = W / sigma[:, None]
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(sigma[:, None] > 0, W / np.where(sigma > 0, sigma, 1.0)[:, None], 0.0)
    for x in (W, u):
        hi, lo = _arg_extremes(x)
        a, b = np.minimum(hi, lo), np.maximum(hi, lo)
        p = a * (2 * k - a - 1) // 2 + (b - a - 1)  # the pair (a, b)'s position in Tukey order
        d = Zt[b, cols] - Zt[a, cols]
        d -= shift[p]
        np.abs(d, out=d)
        sc = scale[p]
        use = (a != b) & (sc > 0)
        d /= np.where(use, sc, 1.0)
        best = np.maximum(best, np.where(use, d, 0.0))
    return best


def _pair_max(Zt: np.ndarray, shift: np.ndarray, scale: np.ndarray, center: np.ndarray,
              sigma: np.ndarray) -> np.ndarray:
    """max over pairs (i < j, Tukey order) of |Zt[j] - Zt[i] - shift_ij| / scale_ij per column of
    ``Zt`` (names x replicates); pairs with scale 0 count 0.

    Branch and bound, the same numbers as evaluating every pair: ``shift_ij`` is
    ``center[j] - center[i]``, so a pair's statistic is |W_j - W_i| / scale_ij with
    W = Zt - center (up to rounding, for which a margin is added). Over a block of pairs between
    two groups of names (:func:`_pair_blocks`) it is at most (max W of one group - min W of the
    other) / the block's smallest scale, and (Cauchy-Schwarz, u = W / sigma) at most
    sqrt(max u^2 of one group + max u^2 of the other) x the block's largest
    sqrt(sigma_i^2 + sigma_j^2) / scale_ij. Blocks are visited from the largest bound down; a
    block is evaluated exactly (the same operations as pair by pair) only for the replicates where
    its bound reaches the running maximum: a few blocks per replicate instead of all
    k (k - 1) / 2 pairs."""
    k, n = Zt.shape
    out = np.zeros(n)
    if k < 2 or n == 0:
        return out
    blocks, groups = _pair_blocks(sigma, scale)
    if not blocks:
        return out
    W = Zt - center[:, None] if np.any(center) else Zt
    # rounding: both sides are a few roundings of numbers no larger than M
    M = float(np.abs(Zt).max()) + float(np.abs(center).max()) + float(np.abs(shift).max(initial=0.0))
    tol = 1e-12 * M
    gmax = [W[g].max(axis=0) for g in groups]
    gmin = [W[g].min(axis=0) for g in groups]
    u = None
    if np.all(sigma > 0):  # the same quotients, without the masks (nothing to replace)
        u = W / sigma[:, None]
        u2 = [(u[g] ** 2).max(axis=0) for g in groups]
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            u2 = [np.nan_to_num((W[g] / sigma[g][:, None]) ** 2, nan=np.inf).max(axis=0) for g in groups]

    def bound(blk, cols=slice(None)):
        g, h, _, _, _, smin, rho, _ = blk
        wide = (np.maximum(gmax[g][cols] - gmin[h][cols], gmax[h][cols] - gmin[g][cols]) + tol) / smin
        if np.isfinite(rho):
            with np.errstate(invalid="ignore"):
                cs = np.sqrt(u2[g][cols] + u2[h][cols]) * rho + tol / smin
            wide = np.minimum(wide, np.where(np.isnan(cs), np.inf, cs))
        return wide * (1 + 1e-9)

    out = _seed_max(Zt, W, sigma, shift, scale, u)
    probe = slice(0, min(n, 256))
    order = np.argsort([-bound(blk, probe).mean() for blk in blocks], kind="stable")
    for bi in order:
        _, _, i, j, p, _, _, rows = blocks[bi]
        idx = np.flatnonzero(bound(blocks[bi]) >= out)
        step = max(1, 4_000_000 // max(1, p.size))
        for s0 in range(0, idx.size, step):
            cols = idx[s0:s0 + step]
            sub = Zt[np.ix_(rows, cols)]
            d = sub[j] - sub[i]
            d -= shift[p][:, None]
            np.abs(d, out=d)
            d /= scale[p][:, None]
            out[cols] = np.maximum(out[cols], d.max(axis=0))
    return out


def _null_max(method: str, Z: np.ndarray, d_hat: np.ndarray, se: np.ndarray, est: np.ndarray,
              sigma: np.ndarray) -> np.ndarray:
    """The max statistic per replicate: |Z_j - Z_i| / se_ij for the joint normal, centred on the
    observed differences (``est``) for the bootstrap (studentized unless ``"bootstrap_centered"``);
    ``sigma``: each name's own spread (it groups the names for :func:`_pair_max`)."""
    shift = np.zeros_like(d_hat) if method == "normal" else d_hat
    center = np.zeros_like(est) if method == "normal" else est
    scale = np.where(se > 0, 1.0, 0.0) if method == "bootstrap_centered" else se
    out = np.zeros(Z.shape[0])
    for start in range(0, Z.shape[0], _CHUNK):
        out[start:start + _CHUNK] = _pair_max(np.ascontiguousarray(Z[start:start + _CHUNK].T), shift, scale,
                                              center, sigma)
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
        "name_a": np.asarray(names, dtype=object)[b], "name_b": np.asarray(names, dtype=object)[a], "estimate": d,
        "std_error": se, "statistic": stat, "p_adj": p_adj,
        "conf_low": d - crit * scale, "conf_high": d + crit * scale, "significant": np.abs(stat) > crit,
    })


def _rank_bounds(k: int, pw: pd.DataFrame, pos: dict[str, int], higher_is_better: bool
                 ) -> tuple[np.ndarray, np.ndarray]:
    """1 + the number of names significantly better than each, and k - the number significantly
    worse (vectorized over the pairs: 2 million pairs of 2,000 names in milliseconds)."""
    sig = pw["significant"].to_numpy(dtype=bool)
    lo, hi = _pair_index(k)  # the pair table's rows are in Tukey order: name_a = hi, name_b = lo
    ia, ib = hi[sig].astype(np.int64), lo[sig].astype(np.int64)
    a_better = (pw["estimate"].to_numpy()[sig] > 0) == higher_is_better
    win, lose = np.where(a_better, ia, ib), np.where(a_better, ib, ia)
    return 1 + np.bincount(lose, minlength=k), k - np.bincount(win, minlength=k)


def _letters(names: list[str], est: np.ndarray, pw: pd.DataFrame, order: np.ndarray) -> dict[str, str]:
    """Compact letters by multcomp's insert-absorb (comparisons in Tukey order, lvl_order by
    increasing estimate as multcomp::cld, rows best first so that the best group gets 'a').
    :func:`mixedeval._cld.tukey_letter_matrix` gives the same matrix as inserting the pairs one
    by one (:func:`mixedeval._cld.compact_letters`), one level at a time; one BLAS thread (its
    products are small counts, and OpenBLAS' idle threads slow them down many times)."""
    k = len(names)
    a, b = _pair_index(k)
    sig = np.zeros((k, k), dtype=bool)
    flags = pw["significant"].to_numpy(dtype=bool)
    sig[a, b] = flags
    sig[b, a] = flags
    with one_blas_thread():
        lmat = _cld.tukey_letter_matrix(sig, np.asarray(order))
    labels = np.asarray(_cld.get_letters(lmat.shape[1]), dtype=object)
    return {names[i]: "".join(labels[row]) for i, row in zip(order, lmat)}


def _tables(names, est, pw, rank_sim, level, higher_is_better, with_letters=True):
    """The best-first table and the rank distribution (``rank_sim`` None: the distribution
    holds the names only)."""
    k = len(names)
    pos = {n: i for i, n in enumerate(names)}
    low, high = _rank_bounds(k, pw, pos, higher_is_better)
    rank = rank_matrix(est[:, None], higher_is_better)[:, 0]
    order = np.lexsort((np.arange(k), rank))
    letters = _letters(names, est, pw, order) if with_letters else dict.fromkeys(names)
    table = pd.DataFrame({"name": names, "estimate": est, "rank": rank, "rank_low": low, "rank_high": high,
                          "letters": [letters[n] for n in names]}).iloc[order].reset_index(drop=True)
    cols = rank_columns(rank_matrix(rank_sim.T, higher_is_better), level) if rank_sim is not None else {}
    dist = pd.DataFrame({"name": names, **cols})
    return table, dist.iloc[order].reset_index(drop=True)


def rank_intervals(estimates: Any, *, vcov: Any = None, draws: Any = None, level: float = 0.95,
                   higher_is_better: bool = True, method: str | None = None, random_state: Any = None,
                   n_sim: int = 100_000, letters: bool = True, distribution: bool = True) -> RankIntervals:
    """Simultaneous rank intervals, rank distribution and compact letters for k estimates.

    Parameters
    ----------
    estimates : Series
        One estimate per name (the index).
    vcov : DataFrame or (k, k) array, optional
        Covariance matrix of the estimates (joint normal, ``method="normal"``).
    draws : DataFrame or (n_draws, k) array, optional
        Bootstrap replicates, one column per name (``method="bootstrap"``).
    level : simultaneous confidence level of the rank intervals (all k at once).
    higher_is_better : rank 1 is the largest estimate (False: the smallest, e.g. error rates).
    method : None (``"normal"`` with vcov, ``"bootstrap"`` with draws), ``"normal"``,
        ``"bootstrap"`` (studentized max-|t|, default for draws) or ``"bootstrap_centered"``.
        ``"normal"`` with draws only uses the draws' covariance.
    random_state : seeds the joint-normal simulation (``method="normal"``).
    n_sim : draws from the joint normal (critical value and rank distribution).
    letters : compute the compact letter display (False: the ``letters`` column is empty).
    distribution : compute the rank distribution (False: ``rank_distribution`` holds the names
        only; a leaderboard does not read it, and it ranks every draw).

    Returns
    -------
    RankIntervals
        ``.table``: name, estimate, rank, rank_low, rank_high, letters (best first);
        ``.pairwise``, ``.rank_distribution``, ``.critical_value``.
    """
    level = require_level(level)
    names, est = _as_estimates(estimates)
    method = _method(method, vcov, draws)
    D = _as_draws(draws, names) if draws is not None else None
    if method == "normal":
        V = _as_vcov(vcov, names) if vcov is not None else np.cov(D, rowvar=False)
        if isinstance(n_sim, bool) or not isinstance(n_sim, (int, np.integer)) or n_sim < 100:
            raise DataError(f"n_sim must be an integer >= 100, not {n_sim!r}")
        # the draws Z, est + Z, their ranks and the working copies: about 4 n_sim x k doubles
        guard = _resources.LoopGuard("the rank intervals", int(n_sim), count=f"n_sim={int(n_sim):,}",
                                     unit="normal draws",
                                     fix="Use a smaller n_sim (the default is 100,000), or raise the limit.")
        guard.check_memory(4 * 8.0 * len(names))
        Z = _normal_draws(V, int(n_sim), random_state)
        a, b = _pair_index(len(names))
        se = _pair_se(V, a, b)
        rank_sim = est + Z if distribution else None
        sigma = np.sqrt(np.clip(np.diag(V), 0.0, None))
    else:
        # the rank matrix of the draws, its working copies and one block of pair differences
        guard = _resources.LoopGuard("the rank intervals", int(D.shape[0]), count=f"{D.shape[0]:,} draws",
                                     unit="bootstrap draws",
                                     fix="Pass fewer draws (e.g. draws[:2000]) or fewer names, or raise the limit.")
        guard.check_memory(8.0 * (3 * len(names) + max(len(names) - 1, 0)))
        a, b = _pair_index(len(names))
        se = _pair_sd(D)
        Z, rank_sim = D, (D if distribution else None)
        sigma = D.std(axis=0)
    d_hat = est[b] - est[a]
    maxstat = _null_max(method, Z, d_hat, se, est, sigma)
    crit = float(np.quantile(maxstat, level))
    pw = _pairwise(names, est, se, maxstat, crit, method, bool(higher_is_better))
    table, dist = _tables(names, est, pw, rank_sim, level, bool(higher_is_better), bool(letters))
    return RankIntervals(table=table, pairwise=pw, rank_distribution=dist, critical_value=crit, method=method,
                         level=level, higher_is_better=bool(higher_is_better), n_draws=int(Z.shape[0]))
