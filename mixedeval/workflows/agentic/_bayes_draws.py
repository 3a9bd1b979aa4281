"""The numpy side of :func:`mixedeval.bayes_glmm`: from posterior draws of the linear predictor
and of the group-effect variances to the systems' success rates on the population of tasks, their
differences, P(A > B), P(best), posterior ranks and ROPE probabilities; and the posterior
predictive statistics.

Population of tasks (marginal) rate. For draw s and system j, with linear predictor ``eta_js``
(the intercept plus the system's coefficient) and total group-effect variance
``tau2_s = sigma2_item,s + sigma2_cluster,s``, the success rate of system j on a new task drawn
from the population of tasks is

    p_js = E_u[ logit^-1(eta_js + u) ],  u ~ N(0, tau2_s),

computed by Gauss-Hermite quadrature with :data:`N_NODES` nodes (probabilists' Hermite:
``sum_k w_k logit^-1(eta + tau z_k) / sqrt(2 pi)``). This is not ``posterior_epred(re.form = NA)``,
which is ``logit^-1(eta_js)``: the rate of a *typical* task (u = 0), reported as
``conditional`` beside it. For the gaussian family (identity link) both are ``eta_js``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

#: Gauss-Hermite nodes of the marginal rate (exact to < 1e-10 for tau up to ~5 on the logit scale)
N_NODES = 40


def marginal_rate(eta: np.ndarray, tau: np.ndarray, n_nodes: int = N_NODES) -> np.ndarray:
    """``E[logit^-1(eta + tau Z)]``, Z standard normal, elementwise over ``eta`` (draws x systems)
    with ``tau`` (draws,) broadcast over the systems; by Gauss-Hermite quadrature."""
    z, w = np.polynomial.hermite_e.hermegauss(int(n_nodes))
    w = w / np.sqrt(2.0 * np.pi)
    eta = np.asarray(eta, dtype=float)
    t = np.asarray(tau, dtype=float).reshape(-1, *([1] * (eta.ndim - 1)))
    out = np.zeros_like(eta)
    for zk, wk in zip(z, w):
        out += wk * expit(eta + t * zk)
    return out


def ranks_of(draws: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Rank of each system in each draw (1 = best; ties share the better rank)."""
    x = draws if higher_is_better else -draws
    # rank = 1 + number of systems strictly better in that draw
    return 1 + (x[:, None, :] > x[:, :, None]).sum(axis=2)


def system_table(rate: np.ndarray, cond: np.ndarray, names: list[str], higher_is_better: bool,
                 level: float) -> pd.DataFrame:
    """Per system: the posterior of the marginal rate (mean, SD, median, equal-tailed interval),
    the conditional (typical-task) rate's mean, P(best), the expected rank and the equal-tailed
    interval of the posterior rank."""
    a = (1.0 - level) / 2.0
    rk = ranks_of(rate, higher_is_better)
    return pd.DataFrame({
        "system": names, "estimate": rate.mean(axis=0), "std_error": rate.std(axis=0, ddof=1),
        "median": np.median(rate, axis=0), "conf_low": np.quantile(rate, a, axis=0),
        "conf_high": np.quantile(rate, 1 - a, axis=0), "conditional": cond.mean(axis=0),
        "p_best": (rk == 1).mean(axis=0), "expected_rank": rk.mean(axis=0),
        "rank_low": np.floor(np.quantile(rk, a, axis=0, method="lower")).astype(int),
        "rank_high": np.ceil(np.quantile(rk, 1 - a, axis=0, method="higher")).astype(int),
    })


def pair_table(rate: np.ndarray, names: list[str], level: float, rope: float | None) -> pd.DataFrame:
    """Every pair (a before b in ``names``): the posterior of rate_a - rate_b (mean, SD,
    equal-tailed interval), ``p_a_greater`` = P(rate_a > rate_b), ``p_value`` = the two-sided
    posterior tail probability ``2 min(P(d > 0), P(d < 0))`` (what a p-value column can hold for a
    posterior), bounded below by ``1 / n_draws`` (the resolution of the draws), and with ``rope`` the probabilities of |d| < rope (practically equivalent),
    d >= rope and d <= -rope."""
    a = (1.0 - level) / 2.0
    ia, ib = np.triu_indices(len(names), 1)
    d = rate[:, ia] - rate[:, ib]
    pg = (d > 0).mean(axis=0)
    pl = (d < 0).mean(axis=0)
    out = pd.DataFrame({"system_a": [names[i] for i in ia], "system_b": [names[j] for j in ib],
                        "delta": d.mean(axis=0), "std_error": d.std(axis=0, ddof=1),
                        "conf_low": np.quantile(d, a, axis=0), "conf_high": np.quantile(d, 1 - a, axis=0),
                        "p_a_greater": pg,
                        "p_value": np.clip(2 * np.minimum(pg, pl), 1.0 / len(rate), 1.0)})
    if rope is not None:
        out["p_rope"] = (np.abs(d) < rope).mean(axis=0)
        out["p_above_rope"] = (d >= rope).mean(axis=0)
        out["p_below_rope"] = (d <= -rope).mean(axis=0)
    return out


def p_matrix(rate: np.ndarray, names: list[str], higher_is_better: bool) -> pd.DataFrame:
    """P(row system better than column system) for every ordered pair (diagonal NaN)."""
    x = rate if higher_is_better else -rate
    m = (x[:, :, None] > x[:, None, :]).mean(axis=0)
    np.fill_diagonal(m, np.nan)
    return pd.DataFrame(m, index=pd.Index(names, name="system"), columns=names)


def ppc_p(observed: float, replicated: np.ndarray) -> float:
    """Two-sided posterior predictive p-value ``2 min(P(T_rep >= T_obs), P(T_rep <= T_obs))``, within
    ``[1 / n_draws, 1]`` (the draws cannot resolve smaller)."""
    r = np.asarray(replicated, dtype=float)
    return float(np.clip(2 * min((r >= observed).mean(), (r <= observed).mean()), 1.0 / r.size, 1.0))


__all__ = ["N_NODES", "marginal_rate", "p_matrix", "pair_table", "ppc_p", "ranks_of", "system_table"]
