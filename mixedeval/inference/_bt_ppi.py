"""Prediction-powered Bradley-Terry strengths: judge verdicts on every battle, people's verdicts
on a random subset (Boyeau, Angelopoulos et al. 2025, "AutoEval done right", ICML; PPI++ for
GLMs, Angelopoulos, Duchi & Zrnic 2024).

The Bradley-Terry model is a logistic regression without intercept on ``x = e_a - e_b`` (the
reference model's column dropped: its strength is 0); a verdict is ``y = 1`` (a wins), ``0`` (b
wins) or ``1/2`` (a tie, half a win each). The PPI++ loss of the strengths ``theta`` is::

    lambda * mean_U l(theta; x, yhat) + mean_L l(theta; x, y) - lambda * mean_L l(theta; x, yhat)

with the logistic loss ``l`` (``U`` the battles only the judge saw, ``L`` the battles people
judged too). Its Hessian ``lambda H_U + (1 - lambda) H_L`` does not depend on the verdicts, so
for lambda in [0, 1] it is convex and Newton's method solves it exactly. The procedure,
covariance and weight are ppi-python's ``ppi_logistic_ci`` (fit with lambda = 1, tune lambda
with ``_calc_lam_glm`` at that fit, refit, tune again at the refit and refit: the covariance
``H^-1 (n/N V_U + V_L) H^-1 / n`` with ``H`` the Hessian over all battles at the estimate,
``V_U = cov(lambda g_hat_U)``, ``V_L = cov(g_L - lambda g_hat_L)``, sample covariances), so the
numbers equal ppi-python's up to its optimizer's tolerance. With ``cluster=`` (battles of one
prompt, one user) the middle term is the cluster-robust sum over clusters (CR1) and intervals
use Student's t with clusters - 1 df.

The design matrix has two non-zero entries per battle, so every sum over battles is done on its
sparse form (``scipy.sparse``): the Hessians and the gradients' covariances
``X' diag(w) X`` cost O(battles + models^2) instead of O(battles x models^2), the per-battle
gradient matrices are never formed (their means and cross-products come from the residual
vectors), and the dense work is the models x models solves and inverses. On 300 models and
30,000 battles the three fits took 130 s in the dense form and 19 s in this one (a machine at load
20 on 2 cores, where numpy's 2-thread solve of a 300 x 300 system took 0.4 s); the numbers are the
same formulas (equal to 2e-11 relative, rounding; ``tests/test_issue42_guards.py``). ``deadline`` (a
:class:`mixedeval._resources.Deadline`) holds the Newton iterations to mixedeval's time limit.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse
from scipy.special import expit

MAX_ITER = 100
#: the fewest Newton iterations the fits plausibly need in all (five fits of a few each): the first
#: one's time times this is refused up front above mixedeval's time limit
MIN_NEWTON_ITERATIONS = 15


@dataclass(frozen=True)
class PPIFit:
    """Strengths (reference excluded), their covariance, the weight and the degrees of freedom."""

    theta: np.ndarray
    vcov: np.ndarray
    lam: float
    df: float
    n_labels: int
    n_battles: int


def _csr(X: Any) -> sparse.csr_matrix:
    return X if sparse.issparse(X) and X.format == "csr" else sparse.csr_matrix(X)


def _gram(X: sparse.csr_matrix, w: np.ndarray) -> np.ndarray:
    """``X' diag(w) X`` (dense models x models) from the sparse design."""
    X = _csr(X)
    if X.shape[0] == 0:
        return np.zeros((X.shape[1], X.shape[1]))
    return np.asarray((X.T @ X.multiply(np.asarray(w, dtype=float)[:, None]).tocsr()).toarray())


def _newton(X: Any, Y: np.ndarray, Yh: np.ndarray, Xu: Any, Yhu: np.ndarray, lam: float,
            theta0: np.ndarray | None = None, deadline: Any = None) -> np.ndarray:
    X, Xu = _csr(X), _csr(Xu)
    n, N = len(Y), len(Yhu)
    theta = np.zeros(X.shape[1]) if theta0 is None else theta0.copy()
    for it in range(MAX_ITER):
        t_it = time.perf_counter()
        if deadline is not None:
            deadline.check(f"Newton iteration {it + 1} of the PPI fit")
        mu, mu_u = expit(X @ theta), expit(Xu @ theta)
        grad = (lam / N * (Xu.T @ (mu_u - Yhu)) if N else 0.0) + X.T @ ((mu - Y) - lam * (mu - Yh)) / n
        H = (lam / N * _gram(Xu, mu_u * (1 - mu_u)) if N else 0.0) + (1 - lam) / n * _gram(X, mu * (1 - mu))
        step = np.linalg.solve(H, grad)
        theta = theta - step
        if deadline is not None:
            deadline.first(time.perf_counter() - t_it, MIN_NEWTON_ITERATIONS)
        if np.max(np.abs(step)) < 1e-13 * max(1.0, np.max(np.abs(theta))):
            break
    return theta


def _stats(theta, X, Y, Yh, Xu, Yhu):
    """ppi-python's ``_logistic_get_stats``: per-battle gradients and the inverse Hessian over all
    (dense: the reference the sparse :func:`_residuals` is tested against)."""
    n, N = len(Y), len(Yhu)
    mu, mu_u = expit(X @ theta), expit(Xu @ theta)
    H = ((Xu * (mu_u * (1 - mu_u))[:, None]).T @ Xu + (X * (mu * (1 - mu))[:, None]).T @ X) / (N + n)
    return X * (mu - Y)[:, None], X * (mu - Yh)[:, None], Xu * (mu_u - Yhu)[:, None], np.linalg.inv(H)


def _residuals(theta, X, Y, Yh, Xu, Yhu):
    """:func:`_stats` without the per-battle gradient matrices (row ``i`` of a gradient matrix is
    ``x_i`` times the residual ``i``): the residuals of the people's verdicts and of the judge's
    on the labelled battles, of the judge's on the others, and the inverse Hessian over all."""
    n, N = len(Y), len(Yhu)
    mu, mu_u = expit(X @ theta), expit(Xu @ theta)
    H = (_gram(Xu, mu_u * (1 - mu_u)) + _gram(X, mu * (1 - mu))) / (N + n)
    return mu - Y, mu - Yh, mu_u - Yhu, np.linalg.inv(H)


def _cross(X: sparse.csr_matrix, r: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``sum_i (g_i - gbar)(h_i - hbar)'`` for the gradient rows ``g_i = x_i r_i``, ``h_i = x_i s_i``."""
    m = len(r)
    mg, mh = (X.T @ r) / m, (X.T @ s) / m
    return _gram(X, r * s) - m * np.outer(mg, mh)


def _lam(X, Xu, r, rh, rhu, inv_h) -> float:
    """ppi-python's ``_calc_lam_glm`` (overall mode, clipped to [0, 1])."""
    n, N = len(r), len(rhu)
    c = _cross(X, r, rh)
    cov = (c + c.T) / n
    Z = sparse.vstack([X, Xu]).tocsr()
    z = np.concatenate([rh, rhu])
    var = _cross(Z, z, z) / (len(z) - 1)
    num = np.trace(inv_h @ cov @ inv_h)
    den = 2 * (1 + n / N) * np.trace(inv_h @ var @ inv_h)
    return float(np.clip(num / den, 0.0, 1.0)) if den > 0 else 0.0


def _cluster_sums(X: sparse.csr_matrix, r: np.ndarray, cl: np.ndarray, G: int, scale: float) -> np.ndarray:
    """``sum over the battles of each cluster of scale * (x_i r_i - mean)`` (G x models)."""
    m = len(r)
    if m == 0:
        return np.zeros((G, X.shape[1]))
    C = sparse.csr_matrix((np.ones(m), (cl, np.arange(m))), shape=(G, m))
    sums = np.asarray((C @ X.multiply(r[:, None]).tocsr()).toarray())
    counts = np.bincount(cl, minlength=G).astype(float)
    return scale * (sums - counts[:, None] * ((X.T @ r) / m)[None, :])


def _meat(X, Xu, r_l, rh, rhu, lam, cl_l, cl_u):
    """(n/N V_U + V_L, df): sample covariances, or cluster sums (CR1) with clusters."""
    n, N = len(r_l), len(rhu)
    r = r_l - lam * rh
    if cl_l is None:
        vu = n / N * lam ** 2 * _cross(Xu, rhu, rhu) / (N - 1) if N > 1 else 0.0
        return vu + _cross(X, r, r) / (n - 1), np.inf
    G = int(max(cl_l.max(initial=-1), cl_u.max(initial=-1))) + 1
    s = _cluster_sums(Xu, lam * rhu, cl_u, G, 1.0 / N) if N else np.zeros((G, X.shape[1]))
    s = s + _cluster_sums(X, r, cl_l, G, 1.0 / n)
    g_used = int(np.count_nonzero(np.abs(s).sum(axis=1)))
    return n * (s.T @ s) * g_used / max(g_used - 1, 1), float(max(g_used - 1, 1))


def ppi_bt(X: Any, Y: np.ndarray, Yh: np.ndarray, Xu: Any, Yhu: np.ndarray, *, method: str = "ppi++",
           cl_l: np.ndarray | None = None, cl_u: np.ndarray | None = None, deadline: Any = None) -> PPIFit:
    """PPI++ (``method="ppi++"``), PPI (lambda 1) or classical (``"classical"``: people only)
    Bradley-Terry coefficients with their covariance (see the module docstring). ``X``, ``Xu``:
    the design of the labelled and of the judge-only battles, dense or ``scipy.sparse``."""
    X, Xu = _csr(X), _csr(Xu)
    n = len(Y)
    if method == "classical":
        lam = 0.0
        theta = _newton(X, Y, Yh, Xu[:0], Yhu[:0], 0.0, deadline=deadline)
        Xu, Yhu, cl_u = Xu[:0], Yhu[:0], None if cl_u is None else cl_u[:0]
    else:
        theta = _newton(X, Y, Yh, Xu, Yhu, 1.0, deadline=deadline)
        lam = 1.0
        if method == "ppi++":
            for _ in range(2):  # ppi_logistic_pointestimate's tuning, then ppi_logistic_ci's
                r, rh, rhu, inv_h = _residuals(theta, X, Y, Yh, Xu, Yhu)
                lam = _lam(X, Xu, r, rh, rhu, inv_h)
                theta = _newton(X, Y, Yh, Xu, Yhu, lam, theta, deadline=deadline)
    r, rh, rhu, inv_h = _residuals(theta, X, Y, Yh, Xu, Yhu)
    meat, df = _meat(X, Xu, r, rh, rhu, lam, cl_l,
                     cl_u if cl_u is not None else (None if cl_l is None else cl_l[:0]))
    V = inv_h @ meat @ inv_h / n
    return PPIFit(theta, V, lam, df, n, n + len(Yhu))
