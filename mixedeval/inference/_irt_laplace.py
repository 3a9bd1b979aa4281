"""The Laplace approximation of the IRT marginal likelihood, maximised directly (numpy engine).

This is the likelihood that the R fits maximise: ``lme4::glmer(..., nAGQ = 1)`` (the fixed-item
Rasch model) and ``glmmTMB`` (the 2PL's reduced-rank term, which has only the Laplace
approximation). With the linear predictor ``eta_si = alpha_i z_s + beta_i`` and ``z_s ~ N(0, 1)``
(see :mod:`._irt_numpy`), system ``s`` contributes

    l_s(z^_s) - z^_s^2 / 2 - log(H_s) / 2,   H_s = 1 + sum_i n_si p_si (1 - p_si) alpha_i^2,

with ``z^_s`` its posterior mode and ``l_s`` its binomial log-likelihood (the ``log(2 pi)`` terms
of the normal density and of the Laplace integral cancel). Its exact gradient follows from the
implicit-function theorem (``dz^ / dtheta = (d g / d theta) / H`` with ``g = dl/dz - z`` the mode's
equation), so the whole objective is maximised by L-BFGS-B over ``2 x items`` parameters (Rasch:
``sigma`` and the intercepts; every ``alpha_i = sigma``), started from the adaptive-quadrature EM
estimates, which differ from the Laplace ones by the Laplace error only.

One adaptive Gauss-Hermite node is *not* this estimator inside an EM: the EM's fixed point with
one node maximises the joint density at the modes and ignores how ``log H`` moves with the
parameters, which is why :func:`._irt_numpy.irt_numpy` sends ``n_quadrature=1`` here.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy import optimize, special

from . import _irt_numpy as E


def laplace_terms(Y, N, alpha, beta, z0=None):
    """Laplace log-likelihood (without the binomial constant), its gradient in ``(alpha, beta)``,
    and the modes and curvatures ``H`` at which it was evaluated."""
    z, H = E.posterior_modes(Y, N, alpha, beta, z0=z0, steps=100, tol=1e-13)
    eta = np.clip(z[:, None] * alpha[None, :] + beta[None, :], -E.ETA_CLIP, E.ETA_CLIP)
    p = special.expit(eta)
    r = Y - N * p
    w = N * p * (1 - p)
    w3 = w * (1 - 2 * p)
    ll = float(np.sum(Y * eta - N * np.logaddexp(0.0, eta)) - 0.5 * np.sum(z ** 2) - 0.5 * np.sum(np.log(H)))
    hz = w3 @ alpha ** 3  # dH/dz per system
    inv_h, c = 1.0 / H, hz / H ** 2
    g_a = (z @ r - alpha * (inv_h @ w) - 0.5 * alpha ** 2 * ((z * inv_h) @ w3) - 0.5 * (c @ r)
           + 0.5 * alpha * ((c * z) @ w))
    g_b = r.sum(axis=0) - 0.5 * alpha ** 2 * (inv_h @ w3) + 0.5 * alpha * (c @ w)
    return ll, g_a, g_b, z, H


def fit_laplace(Y, N, model: str, start: dict[str, Any], *, prior: tuple[float, float] | None = None,
                gtol: float = 1e-7, max_iter: int = 5000) -> dict[str, Any]:
    """Maximise the Laplace log-likelihood (plus the log prior of the discriminations, if any)
    from ``start`` (an EM result); returns the same keys as :func:`._irt_numpy.fit_em` plus
    ``"loglik_laplace"`` (with the binomial constant)."""
    terms = laplace_terms
    I = Y.shape[1]
    state = {"z": np.asarray(start["mode"], dtype=float)}
    rasch = model == "rasch"

    def unpack(x):
        return (np.full(I, x[0]), x[1:]) if rasch else (x[:I], x[I:])

    def fun(x):
        alpha, beta = unpack(x)
        ll, g_a, g_b, z, _ = terms(Y, N, alpha, beta, z0=state["z"])
        state["z"] = z
        if prior is not None:
            g_p, _ = E._lognormal_prior_terms(alpha, prior)
            ll, g_a = ll + E._log_prior(alpha, prior), g_a + g_p
        g = np.r_[g_a.sum(), g_b] if rasch else np.r_[g_a, g_b]
        return -ll, -g

    if rasch:
        x0 = np.r_[float(start["sigma"]), start["beta"]]
        bounds = [(1e-8, E.ALPHA_MAX)] + [(None, None)] * I
    else:
        x0 = np.r_[start["alpha"], start["beta"]]
        lo = 1e-8 if prior is not None else -E.ALPHA_MAX
        bounds = [(lo, E.ALPHA_MAX)] * I + [(None, None)] * I
    res = optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                            options={"maxiter": max_iter, "maxfun": 2 * max_iter, "gtol": gtol, "ftol": 1e-15,
                                     "maxcor": 30})
    alpha, beta = unpack(res.x)
    ll, g_a, g_b, mode, curv = terms(Y, N, alpha, beta, z0=state["z"])
    nodes = E.adaptive_nodes(Y, N, alpha, beta, mode, curv, E.SE_NODES)
    grad = np.abs(np.r_[g_a, g_b])
    return {"alpha": alpha, "beta": beta, "sigma": float(res.x[0]) if rasch else 1.0, "mode": mode, "curv": curv,
            "nodes": nodes, "converged": bool(res.success), "n_iter": int(start["n_iter"]) + int(res.nit),
            "last_change": float(np.max(grad)) if grad.size else 0.0, "prior": prior,
            "log_posterior": ll + E._log_prior(alpha, prior), "optimizer": str(res.message),
            "loglik_laplace": ll + E._binomial_const(Y, N)}
