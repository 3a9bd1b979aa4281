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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

MAX_ITER = 100


@dataclass(frozen=True)
class PPIFit:
    """Strengths (reference excluded), their covariance, the weight and the degrees of freedom."""

    theta: np.ndarray
    vcov: np.ndarray
    lam: float
    df: float
    n_labels: int
    n_battles: int


def _newton(X: np.ndarray, Y: np.ndarray, Yh: np.ndarray, Xu: np.ndarray, Yhu: np.ndarray, lam: float,
            theta0: np.ndarray | None = None) -> np.ndarray:
    n, N = len(Y), len(Yhu)
    theta = np.zeros(X.shape[1]) if theta0 is None else theta0.copy()
    for _ in range(MAX_ITER):
        mu, mu_u = expit(X @ theta), expit(Xu @ theta)
        grad = (lam / N * Xu.T @ (mu_u - Yhu) if N else 0.0) + X.T @ ((mu - Y) - lam * (mu - Yh)) / n
        H = (lam / N * (Xu * (mu_u * (1 - mu_u))[:, None]).T @ Xu if N else 0.0) + \
            (1 - lam) / n * (X * (mu * (1 - mu))[:, None]).T @ X
        step = np.linalg.solve(H, grad)
        theta = theta - step
        if np.max(np.abs(step)) < 1e-13 * max(1.0, np.max(np.abs(theta))):
            break
    return theta


def _stats(theta, X, Y, Yh, Xu, Yhu):
    """ppi-python's ``_logistic_get_stats``: per-battle gradients and the inverse Hessian over all."""
    n, N = len(Y), len(Yhu)
    mu, mu_u = expit(X @ theta), expit(Xu @ theta)
    H = ((Xu * (mu_u * (1 - mu_u))[:, None]).T @ Xu + (X * (mu * (1 - mu))[:, None]).T @ X) / (N + n)
    return X * (mu - Y)[:, None], X * (mu - Yh)[:, None], Xu * (mu_u - Yhu)[:, None], np.linalg.inv(H)


def _lam(grads, grads_hat, grads_hat_u, inv_h) -> float:
    """ppi-python's ``_calc_lam_glm`` (overall mode, clipped to [0, 1])."""
    n, N = len(grads), len(grads_hat_u)
    gc, ghc = grads - grads.mean(axis=0), grads_hat - grads_hat.mean(axis=0)
    cov = (gc.T @ ghc + ghc.T @ gc) / n
    var = np.atleast_2d(np.cov(np.concatenate([grads_hat, grads_hat_u]).T))
    num = np.trace(inv_h @ cov @ inv_h)
    den = 2 * (1 + n / N) * np.trace(inv_h @ var @ inv_h)
    return float(np.clip(num / den, 0.0, 1.0)) if den > 0 else 0.0


def _meat(grads, grads_hat, grads_hat_u, lam, cl_l, cl_u):
    """(n/N V_U + V_L, df): sample covariances, or cluster sums (CR1) with clusters."""
    n, N = len(grads), len(grads_hat_u)
    r = grads - lam * grads_hat
    if cl_l is None:
        vu = n / N * np.atleast_2d(np.cov((lam * grads_hat_u).T)) if N > 1 else 0.0
        return vu + np.atleast_2d(np.cov(r.T)), np.inf
    G = int(max(cl_l.max(initial=-1), cl_u.max(initial=-1))) + 1
    d = r.shape[1]
    su = np.zeros((G, d))
    sl = np.zeros((G, d))
    if N:
        np.add.at(su, cl_u, lam * (grads_hat_u - grads_hat_u.mean(axis=0)) / N)
    np.add.at(sl, cl_l, (r - r.mean(axis=0)) / n)
    s = su + sl
    g_used = int(np.count_nonzero(np.abs(s).sum(axis=1)))
    return n * (s.T @ s) * g_used / max(g_used - 1, 1), float(max(g_used - 1, 1))


def ppi_bt(X: np.ndarray, Y: np.ndarray, Yh: np.ndarray, Xu: np.ndarray, Yhu: np.ndarray, *, method: str = "ppi++",
           cl_l: np.ndarray | None = None, cl_u: np.ndarray | None = None) -> PPIFit:
    """PPI++ (``method="ppi++"``), PPI (lambda 1) or classical (``"classical"``: people only)
    Bradley-Terry coefficients with their covariance (see the module docstring)."""
    n, N = len(Y), len(Yhu)
    if method == "classical":
        lam = 0.0
        theta = _newton(X, Y, Yh, Xu[:0], Yhu[:0], 0.0)
        Xu, Yhu, cl_u = Xu[:0], Yhu[:0], None if cl_u is None else cl_u[:0]
    else:
        theta = _newton(X, Y, Yh, Xu, Yhu, 1.0)
        lam = 1.0
        if method == "ppi++":
            for _ in range(2):  # ppi_logistic_pointestimate's tuning, then ppi_logistic_ci's
                lam = _lam(*_stats(theta, X, Y, Yh, Xu, Yhu))
                theta = _newton(X, Y, Yh, Xu, Yhu, lam, theta)
    grads, grads_hat, grads_hat_u, inv_h = _stats(theta, X, Y, Yh, Xu, Yhu) if len(Yhu) else \
        _stats_labelled(theta, X, Y, Yh)
    meat, df = _meat(grads, grads_hat, grads_hat_u, lam, cl_l, cl_u if cl_u is not None else (None if cl_l is None
                                                                                               else cl_l[:0]))
    V = inv_h @ meat @ inv_h / n
    return PPIFit(theta, V, lam, df, n, n + len(Yhu))


def _stats_labelled(theta, X, Y, Yh):
    mu = expit(X @ theta)
    H = (X * (mu * (1 - mu))[:, None]).T @ X / len(Y)
    return X * (mu - Y)[:, None], X * (mu - Yh)[:, None], np.zeros((0, X.shape[1])), np.linalg.inv(H)
