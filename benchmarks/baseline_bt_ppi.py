"""The dense PPI Bradley-Terry fits before issue 42 (mixedeval/inference/_bt_ppi.py at commit c1bec5e),
kept verbatim as the baseline of benchmarks/bench_bt_corrected.py."""
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
