"""Sandwich covariance of a Bradley-Terry fit (the CLT for M-estimators), clustered by prompt,
by judge, or both, and arena-rank's own variant of it.

With the parameters ``theta`` (the order of :meth:`BTDesign.param_names`: strengths of all
models but the reference, judge terms, covariates, Davidson tie propensities), the bread is the
inverse information ``B = I(theta)^-1`` (``I = sum_i w_i X_i' W_i X_i``, the model's Hessian;
weighted battles count ``w_i`` times) and the meat sums the battles' scores within clusters:

    M_c = sum_g s_g s_g',   s_g = sum_{battles i in cluster g} w_i * score_i(theta)

``V_c = G_c / (G_c - 1) * B M_c B`` (CR1: the small-cluster correction ``G/(G-1)`` of R's
``sandwich::vcovCL(type = "HC0", cadjust = TRUE)``; no ``(n-1)/(n-k)`` factor). Two-way
clustering by prompt and judge (Cameron, Gelbach & Miller 2011, "Robust inference with multiway
clustering", JBES 29(2)): ``V = V_prompt + V_judge - V_prompt:judge``, each term with its own
``G/(G-1)``, the intersection's clusters being the (prompt, judge) combinations -- R's
``vcovCL(cluster = ~ prompt + judge, multi0 = FALSE)``; when the sum of the meats is not positive
semi-definite its negative eigenvalues are set to 0 (CGM's fix, ``vcovCL(fix = TRUE)``) and a
warning says so. Intervals use Student's t with ``G - 1`` degrees of freedom, ``G`` the smallest
number of clusters of the dimensions used (CGM section 2.4). ``cluster="battle"`` (every battle
its own cluster, no correction, normal quantiles) is the sandwich of arena-rank.

A battle's score depends on its cell (models, judge, order shown, covariates) and its outcome
only, so the scores are one sparse (3 cells x parameters) matrix ``S`` and the clusters' sums one
sparse product ``U S`` with the (clusters x 3 cells) battle counts ``U`` of
:class:`BTDesign.clusters`: a million battles on 100,000 prompts and 50,000 judges take a
fraction of a second.

arena-rank 0.1.1 (LMArena, ``arena_rank/models/bradley_terry.py`` and
``contextual_bradley_terry.py``) parametrises all ``k`` ratings (no reference; L-BFGS from 0
keeps their mean at 0) and adds ``hessian_reg`` to the Hessian's diagonal before inverting it:
``V = (H + c I)^-1 G (H + c I)^-1`` with ``H`` and ``G`` the information and the battle-level
meat in all ``k`` (+ covariates) parameters and ``c = 1e-5 * n_battles`` (unweighted battles) or
``1e-5`` (reweighted), ``c = 1e-5 * n_battles`` with covariates; with covariates (its
contextual Bradley-Terry) the loss carries a ridge ``reg / 2 * |beta|^2`` on the mean
log-likelihood (``reg = 1``; in the sum form ``n * reg / 2``) that enters the estimates but not
``H``, and ``G`` is corrected by ``- reg^2 beta beta'``. :func:`arena_rank_vcov` computes exactly
this and maps it to the reference parametrisation (whose centred variances are arena-rank's).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import DataError
from ..results import ResultWarning
from . import _bt_numpy
from ._bt_design import BTDesign

#: arena-rank 0.1.1's ``hessian_reg`` (added to the Hessian's diagonal before it is inverted)
ARENA_HESSIAN_REG = 1e-5
#: arena-rank 0.1.1's ridge ``reg`` on the covariate coefficients of its contextual model
ARENA_RIDGE = 1.0
#: clustering dimensions
CLUSTER_DIMS = ("prompt", "judge")


@dataclass(frozen=True)
class Sandwich:
    """The sandwich covariance (p, p) in the fit's parametrisation, the t degrees of freedom of
    its intervals (None: normal), the clusters per dimension, a label naming the method and
    warnings."""

    vcov: np.ndarray
    df: float | None
    n_clusters: dict
    label: str
    warnings: tuple[ResultWarning, ...] = ()


def score_matrix(d: BTDesign, theta: np.ndarray) -> sp.csr_matrix:
    """The score of one battle of each cell and outcome: row ``3 * cell + outcome`` (outcome 0:
    model_a wins, 1: model_b wins, 2: tie) of a sparse (3 cells, p) matrix."""
    ops = _bt_numpy._Ops(d)
    eta, tau = ops.predictors(np.asarray(theta, dtype=float)[None])
    c, k, p = len(d.a), d.k, d.n_params
    one, zero = np.ones((3, c)), np.zeros((3, c))
    o = np.arange(3)[:, None] * np.ones((1, c))
    if d.ties == "davidson":
        parts = {"diff": (o == 0).astype(float) - (o == 1), "nt": (o == 2).astype(float), "n": one}
    elif d.ties == "half":
        parts = {"y": (o == 0) + 0.5 * (o == 2), "n": one}
    else:
        parts = {"y": (o == 0).astype(float), "n": np.where(o == 2, zero, one)}
    counts = _bt_numpy.Counts(None, d.ties, parts)
    eta3 = np.broadcast_to(eta, (3, c))
    tau3 = None if tau is None else np.broadcast_to(tau, (3, c))
    _, r_eta, r_tau, *_ = _bt_numpy.cell_terms(counts, eta3, tau3, d.ties)
    r = r_eta.T.ravel()  # row 3 * cell + outcome
    rows3 = np.arange(3 * c)
    cell3 = rows3 // 3
    pos = np.full(k, -1, dtype=np.int64)
    pos[d.free] = np.arange(k - 1)
    ri, ci, vi = [], [], []
    for m, sign in ((d.a, 1.0), (d.b, -1.0)):
        col = pos[m][cell3]
        ok = col >= 0
        ri.append(rows3[ok]), ci.append(col[ok]), vi.append(sign * r[ok])
    e = ops.e_eta
    if e.shape[1]:
        nz_c, nz_j = np.nonzero(e)
        for out in range(3):
            ri.append(3 * nz_c + out), ci.append(k - 1 + nz_j), vi.append(r[3 * nz_c + out] * e[nz_c, nz_j])
    if d.ties == "davidson":
        rt = r_tau.T.ravel()
        ri.append(rows3), ci.append(k - 1 + e.shape[1] + d.judge[cell3]), vi.append(rt)
    return sp.csr_matrix((np.concatenate(vi), (np.concatenate(ri), np.concatenate(ci))), shape=(3 * c, p))


def meat(d: BTDesign, scores: sp.csr_matrix, dim: str) -> np.ndarray:
    """``sum_g s_g s_g'`` over the clusters of ``dim`` ("battle": every battle its own cluster,
    ``sum_i w_i^2 score_i score_i'``)."""
    if dim == "battle":
        sq = np.asarray(d.sq_counts, dtype=float).ravel()
        return np.asarray((scores.T @ sp.diags(sq) @ scores).todense())
    return _gram(d.clusters[dim] @ scores)


#: row block of the dense cross-product of the clusters' scores (bytes)
_GRAM_BYTES = 32 * 2**20


def _gram(us: sp.csr_matrix) -> np.ndarray:
    """``us' us`` of the clusters' score sums (clusters x p, sparse): a sparse product (its cost
    grows with the square of each row's entries), or dense row blocks through BLAS when the rows
    hold more than a third of the parameters (few large clusters: the sparse product's overhead
    per entry is then the larger cost; measured at 100,000 prompts x 99 parameters the two are
    equal at about 20 entries per row)."""
    g, p = us.shape
    if us.nnz <= g * p / 3:
        return np.asarray((us.T @ us).todense())
    out = np.zeros((p, p))
    step = max(1, int(_GRAM_BYTES // (8 * max(p, 1))))
    for s0 in range(0, g, step):
        blk = us[s0:s0 + step].toarray()
        out += blk.T @ blk
    return out


def information(d: BTDesign, theta: np.ndarray) -> np.ndarray:
    """The information (the negative Hessian of the log-likelihood) at ``theta``, (p, p)."""
    return _bt_numpy._score_info(_bt_numpy._Ops(d), d.counts[None], np.asarray(theta, float)[None], d.ties)[2][0]


def _dims(cluster: tuple[str, ...], d: BTDesign) -> list[tuple[str, float]]:
    """(cluster dimension, sign) of the terms of the one-way or CGM two-way sum."""
    if cluster == ("battle",):
        return [("battle", 1.0)]
    if len(cluster) == 1:
        return [(cluster[0], 1.0)]
    return [("prompt", 1.0), ("judge", 1.0), ("prompt:judge", -1.0)]


def _psd_fix(m: np.ndarray) -> tuple[np.ndarray, list[ResultWarning]]:
    """The meat with its negative eigenvalues set to 0 (R's ``meatCL(fix = TRUE)``: the two-way sum
    ``M_prompt + M_judge - M_prompt:judge`` need not be positive semi-definite)."""
    m = 0.5 * (m + m.T)
    if not np.isfinite(m).all():
        return m, []
    ev, vec = np.linalg.eigh(m)
    if ev.min() >= 0:
        return m, []
    fixed = (vec * np.maximum(ev, 0.0)) @ vec.T
    tol = 1e-10 * max(abs(ev).max(), 1e-300)
    if ev.min() >= -tol:  # rounding only
        return fixed, []
    return fixed, [ResultWarning("sandwich_fixed", (
        f"the two-way cluster-robust meat (M_prompt + M_judge - M_prompt:judge) had {int((ev < -tol).sum())} "
        "negative eigenvalue(s); they were set to 0 (Cameron, Gelbach & Miller's fix, R's vcovCL(fix = TRUE))"))]


def cluster_label(cluster: tuple[str, ...]) -> str:
    """The method's name as the output shows it."""
    if cluster == ("battle",):
        return "sandwich (battles independent: arena-rank's, HC0, normal quantiles)"
    if len(cluster) == 1:
        return f"sandwich, clustered by {cluster[0]} (CR1: G/(G-1), t with G-1 df)"
    return ("sandwich, clustered by prompt and judge (CGM two-way: V_prompt + V_judge - V_prompt:judge, "
            "CR1 each, t with min(G)-1 df)")


def cluster_sandwich(d: BTDesign, theta: np.ndarray, cluster: tuple[str, ...],
                     bread: np.ndarray | None = None) -> Sandwich:
    """The one-way (``("prompt",)``, ``("judge",)``), two-way (``("judge", "prompt")``) or
    battle-level (``("battle",)``) sandwich of the fit at ``theta`` (see the module docstring);
    ``bread``: the inverse information (computed when None)."""
    if bread is None:
        bread = _bt_numpy.vcov(information(d, theta))
    s = score_matrix(d, theta)
    total = np.zeros_like(bread)
    n_cl = {}
    for dim, sign in _dims(tuple(cluster), d):
        m = meat(d, s, dim)
        if dim == "battle":
            total += m
            continue
        g = d.clusters[dim].shape[0]
        if g < 2 and ":" not in dim:
            raise DataError(f"cluster={dim!r}: the battles have a single {dim}; a cluster-robust covariance needs at "
                            f"least two clusters (many more for trustworthy intervals): cluster by another unit or "
                            "use cluster='battle'")
        n_cl[dim] = int(g)
        total += sign * (g / (g - 1.0) if g > 1 else 0.0) * m
    warns: list[ResultWarning] = []
    if len(cluster) == 2:
        total, warns = _psd_fix(total)
    bread0 = np.nan_to_num(bread)
    v = bread0 @ total @ bread0
    v[~np.isfinite(bread)] = np.nan
    dims = [n for k_, n in n_cl.items() if ":" not in k_]
    df = float(min(dims) - 1) if dims else None
    if df is not None and min(dims) < 20:
        warns.append(ResultWarning("few_clusters", (
            f"only {min(dims)} clusters: the cluster-robust standard errors rest on few units (t with {df:g} df is "
            "used; below about 20 clusters they can still be too small, Cameron & Miller 2015)")))
    return Sandwich(vcov=v, df=df, n_clusters=n_cl, label=cluster_label(tuple(cluster)), warnings=tuple(warns))


def _expand(d: BTDesign) -> np.ndarray:
    """A ((k + extras) x p): the parameters' score/design in all k ratings from the reference
    parametrisation (the strengths' rows of every battle sum to zero: the reference's entry is
    minus the others' sum)."""
    k, p = d.k, d.n_params
    q = p - (k - 1)
    a = np.zeros((k + q, p))
    a[d.free, np.arange(k - 1)] = 1.0
    a[d.ref, :k - 1] = -1.0
    a[k:, k - 1:] = np.eye(q)
    return a


def arena_rank_vcov(d: BTDesign, theta: np.ndarray, hessian_reg: float, ridge: float = 0.0) -> np.ndarray:
    """arena-rank 0.1.1's sandwich ``(H + c I)^-1 (G - ridge^2 b b') (H + c I)^-1`` in all k
    ratings (and covariates), ``c = hessian_reg`` (already multiplied by the battles where
    arena-rank does), ``b`` = (0 for the ratings, the covariates' coefficients), mapped to the
    fit's reference parametrisation (``s_i - s_ref``), whose centred variances (``s_i - mean s``)
    are arena-rank's ``variances``."""
    a = _expand(d)
    k, p = d.k, d.n_params
    m = a.shape[0]
    one = np.zeros(m)
    one[:k] = 1.0 / np.sqrt(k)  # the ratings' common shift: H and G are zero along it
    proj = np.eye(m) - np.outer(one, one)
    # H + c I is c along `one` (condition number 1 / c): its inverse times G times its inverse is
    # computed in exact arithmetic's value by moving that eigenvalue to 1 and projecting G off
    # `one` (G's rounding along it would otherwise enter multiplied by 1 / c^2)
    h = a @ information(d, theta) @ a.T + hessian_reg * np.eye(m) + (1.0 - hessian_reg) * np.outer(one, one)
    g = proj @ (a @ meat(d, score_matrix(d, theta), "battle") @ a.T) @ proj
    if ridge:
        b = np.r_[np.zeros(k), np.asarray(theta, float)[k - 1:]]
        g = g - ridge ** 2 * np.outer(b, b)
    hi = np.linalg.inv(h)
    c = hi @ g @ hi
    t = np.zeros((p, a.shape[0]))
    t[np.arange(k - 1), d.free] = 1.0
    t[:k - 1, d.ref] = -1.0
    t[k - 1:, k:] = np.eye(p - (k - 1))
    return t @ c @ t.T


def fit_ridge(d: BTDesign, lam: float, tol: float = 1e-12, max_iter: int = 200):
    """Maximum of ``loglik - lam / 2 * |beta|^2`` (``beta``: the covariates' coefficients) by
    Newton's method from 0 (arena-rank's contextual Bradley-Terry with ``lam = n * reg``):
    (theta, information of the log-likelihood, log-likelihood, converged)."""
    ops = _bt_numpy._Ops(d)
    counts = _bt_numpy.Counts(d.counts[None], d.ties)
    p, k = d.n_params, d.k
    pen = np.zeros(p)
    pen[k - 1:k - 1 + len(d.cov_names)] = lam
    theta = np.zeros((1, p))
    converged = False
    for _ in range(max_iter):
        ll, g, info = _bt_numpy._score_info(ops, counts, theta, d.ties)
        step = np.linalg.solve(info[0] + np.diag(pen), g[0] - pen * theta[0])
        theta[0] += step
        if np.abs(step).max() < tol:
            converged = True
            break
    ll, _, info = _bt_numpy._score_info(ops, counts, theta, d.ties)
    return theta[0], info[0], float(ll[0]), converged
