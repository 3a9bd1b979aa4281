"""Marginal maximum likelihood of the Rasch and 2PL item response models in numpy (the fast engine).

Model (the package's IRT convention): system ``s`` answers item ``i`` correctly ``y_si`` times out
of ``n_si`` trials (0/1 scores: ``n_si = 1``; missing cells: ``n_si = 0``) with

    logit P(correct) = discrimination_i * (ability_s - difficulty_i)

* ``"2pl"``: ability ~ N(0, 1) (the scale of the calibration systems), free discrimination and
  difficulty per item;
* ``"rasch"``: discrimination 1, ability ~ N(0, sigma^2) in logits, sigma estimated. This is the
  marginal likelihood of ``lme4::glmer(score ~ 0 + item + (1 | system), binomial, nAGQ = q)``
  with ``difficulty_i = -coef(item_i)`` and ``sigma`` the system standard deviation.

Internally the linear predictor is written in slope-intercept form ``eta = alpha_i * z + beta_i``
with ``z ~ N(0, 1)`` (2PL: ``alpha_i = discrimination_i``, ``beta_i = -alpha_i * difficulty_i``;
Rasch: ``alpha_i = sigma`` for every item, ``beta_i = -difficulty_i``).

Algorithm: Bock & Aitkin's (1981) EM with *adaptive* Gauss-Hermite quadrature (Pinheiro & Bates
1995; the rule of ``glmer(nAGQ = q)``): per system the nodes are centred at the posterior mode of
``z`` and scaled by its curvature, so a few nodes integrate the likelihood of thousands of items
exactly (a fixed grid cannot: the posterior is then far narrower than the grid's spacing). The
E step gives each system's posterior weights at its nodes; the M step is one Newton step per
item on the expected complete-data log-likelihood (for the Rasch model jointly with sigma, whose
Hessian is an arrow matrix solved by its Schur complement). Iterations stop when no parameter
moves by more than ``tol``. At the fixed point the gradient of the adaptive-quadrature marginal
log-likelihood is zero (Fisher's identity), so the estimates are glmer's up to the quadrature
and optimizer tolerances.

With ``n_quadrature=1`` the estimator is the Laplace approximation (``glmer``'s default
``nAGQ = 1`` and glmmTMB's only one), maximised directly by L-BFGS-B with its exact gradient
(:func:`fit_laplace`), started from a 7-node EM. Optionally (``discrimination_prior=``) a lognormal
prior on the 2PL discriminations turns the estimates into posterior modes (MAP).

Standard errors: the observed information of the marginal likelihood by Louis' (1982) formula
(expected complete-data information minus the posterior covariance of the complete-data score),
inverted in full when the model has at most :data:`FULL_INFO_MAX` parameters; otherwise per
item (each item's own block, which ignores the small covariances between items through the
ability scale; the result says which in ``se_method``). Abilities: the posterior mode (lme4's
conditional mode, ``ranef``). Its ``std_error``: for the 2PL the conditional standard deviation
plus the item parameters' uncertainty, ``1 / curvature + g' V g`` with ``g`` the derivative of the
mode in the item parameters (:func:`ability_variance_joint`; TMB's ``sdreport`` for random
effects, the glmmTMB fit's ``diag.cov.random``); for the Rasch model the conditional standard
deviation ``1 / sqrt(curvature)`` alone (lme4's ``condVar``, which the Rasch fit in R reports).
``std_error_conditional`` is always the latter (item parameters held fixed: it undercovers the
true abilities, 0.934 against 0.973 at 150 systems x 300 items, issue 42). The posterior mean
(EAP) and its posterior standard deviation hold the item parameters fixed too.

Identification of the 2PL: the sign of the ability scale is chosen so that the discriminations
sum to a positive number (most items are keyed in the right direction).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special
from tqdm.auto import tqdm

from .. import _resources as res
from ..data._table_guard import guarded_table
from ..errors import DataError
from ..results import ResultMixin, ResultWarning

#: models of this engine
MODELS = ("rasch", "2pl")
#: full Louis information (and its inverse) up to this many parameters, per-item blocks above
FULL_INFO_MAX = 800
#: Newton iterations of the posterior modes per EM iteration
MODE_STEPS = 3
#: bound on |discrimination x sigma| (a slope of 20 per SD is a step function): items that
#: separate the systems perfectly would otherwise run off to infinity and stall the EM
ALPHA_MAX = 20.0
#: the EM also stops when the marginal log-likelihood changes by less than this (relative),
#: which ends the slow creep of parameters without information (items answered alike by all)
LL_RTOL = 1e-12
#: adaptive Gauss-Hermite nodes of the standard errors and EAPs after a Laplace fit
SE_NODES = 21
#: the EM that starts a Laplace fit: nodes and parameter tolerance (L-BFGS-B finishes the job;
#: its result does not depend on the start to 1e-10 in the log-likelihood)
START_NODES, START_TOL = 7, 1e-4
#: slopes within 1% of the bound are reported as at the bound (the EM's fixed point with a
#: steep item at the bound has the expansion's scale slightly below 1)
BOUND_FLAG = 0.99
#: the 2PL's intercept bound is ``ETA_CLIP + Z_MAX |alpha|`` (see :func:`_bound_2pl`)
Z_MAX = 6.0
#: systems x items x nodes arrays of doubles a fit holds at its peak (the linear predictor,
#: P(correct), residuals, weights and Louis' scores; tracemalloc measured 8.2 at 21 nodes on 300
#: systems x 200 and x 900 items, 5.1 at 50 nodes) and systems x items arrays besides them
NODE_COPIES, MATRIX_COPIES = 9, 10
#: the fewest EM iterations a fit plausibly needs: the first one's time times this is refused
#: up front when it exceeds mixedeval's time limit (:class:`mixedeval._resources.Deadline`)
MIN_EM_ITERATIONS = 10
_SIZE_FIX = ("Calibrate on a random sample of the items and systems (a few thousand items calibrate an item bank; "
             "me.estimate_scores places other systems on it), or drop the items few systems answered")


# ----------------------------------------------------------------------------- response matrices
@dataclass(frozen=True)
class Responses:
    """Correct counts ``y`` and trials ``n`` (systems x items; 0 trials where unobserved)."""

    y: np.ndarray
    n: np.ndarray
    systems: tuple[str, ...]
    items: tuple[str, ...]

    def long(self) -> pd.DataFrame:
        """The observed cells as a long table: system, item, score (correct count), trials."""
        s, i = np.nonzero(self.n > 0)
        return pd.DataFrame({"system": np.asarray(self.systems, dtype=object)[s],
                             "item": np.asarray(self.items, dtype=object)[i],
                             "score": self.y[s, i], "trials": self.n[s, i]})


def fit_bytes(n_systems: int, n_items: int, n_quadrature: int = 1) -> float:
    """Peak bytes of a numpy-engine fit: ``8 S I (NODE_COPIES K + MATRIX_COPIES)`` with ``K`` the
    quadrature nodes of the EM and the standard errors (:data:`SE_NODES` after a Laplace fit)."""
    k = SE_NODES if n_quadrature == 1 else max(int(n_quadrature), START_NODES)
    return 8.0 * n_systems * n_items * (NODE_COPIES * k + MATRIX_COPIES)


def check_fit_memory(n_systems: int, n_items: int, n_quadrature: int = 1, matrices_only: bool = False) -> None:
    """Refuse (:class:`DataError`, the estimate and the fix) a fit, or with ``matrices_only`` its
    two systems x items count matrices, above mixedeval's memory limit, before allocating them."""
    S, I = int(n_systems), int(n_items)
    if matrices_only:
        need, how = 16.0 * S * I, "two systems x items matrices of doubles"
    else:
        k = SE_NODES if n_quadrature == 1 else max(int(n_quadrature), START_NODES)
        need = fit_bytes(S, I, n_quadrature)
        how = f"{NODE_COPIES} systems x items x {k} quadrature nodes arrays of doubles and {MATRIX_COPIES} matrices"
    if need > 8 * 2**20:
        res.check_memory(need, f"the numpy IRT fit of {res.format_count(S)} systems x {res.format_count(I)} items "
                         "would", _SIZE_FIX, detail=how)


def _check_counts(y: np.ndarray, n: np.ndarray, what: str) -> None:
    obs = n > 0
    if not np.all(np.isfinite(y[obs])):
        raise DataError(f"{what}: scores must be finite 0/1 values (or correct counts of trials)")
    bad = obs & ((y < 0) | (y > n) | (np.abs(y - np.round(y)) > 1e-9))
    if bad.any():
        raise DataError(
            f"{what}: {int(bad.sum())} cell(s) are not 0/1 scores or whole correct counts between 0 and the trials; "
            "IRT needs correct/incorrect answers: score 0/1 per row (repeated rows of a system and item are counted "
            "as trials), or pass trials= with correct counts")


def response_matrix(data: Any, *, score: str = "score", system: str = "system", item: str = "item",
                    trials: str | None = None) -> Responses:
    """Systems x items count matrices from a long table (columns ``system``, ``item``, ``score``
    [, ``trials``]) or a wide one (one row per system, one column per item; the systems in the
    index, or in a ``system`` column). Repeated (system, item) rows are summed as trials (epochs)."""
    if isinstance(data, Responses):
        return data
    df = guarded_table(data)
    if len(df) == 0:
        raise DataError("the response table is empty; give one row per system and item (or a wide table)")
    cols = [str(c) for c in df.columns]
    if system in cols and item in cols and score in cols:
        return _from_long(df, score, system, item, trials)
    if score in cols and (system in cols) != (item in cols):
        missing = item if system in cols else system
        raise DataError(f"column {missing!r} is not in the data; name the system and item columns with system= and item=")
    return _from_wide(df, system)


def _check_not_infinite(v: np.ndarray, what: str) -> None:
    """An infinite score is a broken value, not a missing answer (NaN, which a wide table uses for
    the items a system did not answer): a DataError instead of dropping it silently."""
    bad = np.isinf(v)
    if bad.any():
        raise DataError(f"{what} has {int(bad.sum())} infinite value(s) ({v[bad][0]:g}); scores must be 0/1 (or counts "
                        "with trials): fix those values, or set them to NaN where the system did not answer the item")


def _from_long(df: pd.DataFrame, score: str, system: str, item: str, trials: str | None) -> Responses:
    keep = df[[system, item]].notna().all(axis=1) & df[score].notna()
    d = df.loc[keep]
    if d.empty:
        raise DataError(f"no rows with a {score!r}, {system!r} and {item!r} value")
    try:
        y = pd.to_numeric(d[score].astype(float))
    except (TypeError, ValueError) as exc:
        raise DataError(f"column {score!r} must hold 0/1 scores (or correct counts), not {d[score].dtype}") from exc
    n = pd.to_numeric(d[trials]).astype(float) if trials is not None else pd.Series(1.0, index=d.index)
    s_codes, s_lev = pd.factorize(d[system].astype(str), sort=True)
    i_codes, i_lev = pd.factorize(d[item].astype(str), sort=True)
    check_fit_memory(len(s_lev), len(i_lev), matrices_only=True)
    Y = np.zeros((len(s_lev), len(i_lev)))
    N = np.zeros_like(Y)
    np.add.at(Y, (s_codes, i_codes), y.to_numpy())
    np.add.at(N, (s_codes, i_codes), n.to_numpy())
    _check_not_infinite(np.concatenate([y.to_numpy(), n.to_numpy()]), f"column {score!r}" if trials is None else
                        f"columns {score!r} / {trials!r}")
    _check_counts(Y, N, f"column {score!r}")
    return Responses(Y, N, tuple(map(str, s_lev)), tuple(map(str, i_lev)))


def _from_wide(df: pd.DataFrame, system: str) -> Responses:
    if system in [str(c) for c in df.columns]:
        df = df.set_index(system)
    names = [str(s) for s in df.index]
    if len(set(names)) != len(names):
        raise DataError("the wide table repeats a system in its index; give one row per system")
    try:
        M = df.to_numpy(dtype=float)
    except (TypeError, ValueError):
        try:
            M = df.apply(pd.to_numeric).to_numpy(dtype=float)
        except (TypeError, ValueError) as exc:
            raise DataError("a wide response table needs one row per system and 0/1 values (or NaN) in every item "
                            "column") from exc
    _check_not_infinite(M, "the wide table")
    N = np.isfinite(M).astype(float)
    Y = np.where(N > 0, M, 0.0)
    _check_counts(Y, N, "wide table")
    return Responses(Y, N, tuple(names), tuple(str(c) for c in df.columns))


# ----------------------------------------------------------------------------- quadrature pieces
#: the linear predictor is clipped here (P(correct) within 1e-13 of 0 or 1) so that the
#: log-likelihood stays finite; glmer's binomial family clips the same way (at machine precision)
ETA_CLIP = 30.0


def _node_terms(Y, N, alpha, beta, z):
    """P(correct) at abilities ``z`` (S x K) for every item (S x K x I) and each system's binomial
    log-likelihood there (S x K), with the linear predictor computed once."""
    eta = np.clip(z[:, :, None] * alpha[None, None, :] + beta[None, None, :], -ETA_CLIP, ETA_CLIP)
    q = special.expit(-eta)
    # y * eta - n * log(1 + exp(eta)) = y * eta + n * log(q)
    ll = np.matmul(eta, Y[:, :, None])[:, :, 0] + np.matmul(np.log(q), N[:, :, None])[:, :, 0]
    return 1.0 - q, ll


def _cond_loglik(Y, N, alpha, beta, z):
    """Binomial log-likelihood of every system at abilities ``z`` (S x K) -> (S x K)."""
    return _node_terms(Y, N, alpha, beta, z)[1]


def _log_posterior_z(Y, N, alpha, beta, z):
    """Each system's log posterior density of ``z`` (up to a constant): binomial log-likelihood
    minus ``z^2 / 2``."""
    eta = z[:, None] * alpha[None, :] + beta[None, :]
    return np.sum(Y * eta - N * np.logaddexp(0.0, eta), axis=1) - 0.5 * z * z


def posterior_modes(Y, N, alpha, beta, z0=None, steps: int = 50, tol: float = 1e-10):
    """Posterior modes of ``z ~ N(0, 1)`` per system and the curvature there (Newton, vectorized).

    The log posterior is concave, but a steep item (slope near :data:`ALPHA_MAX`) makes its
    curvature jump at the item's threshold, where plain Newton steps can cycle around the mode
    without reaching it (the adaptive nodes would then be misplaced and the quadrature wrong):
    every step is halved until the log posterior does not decrease (at most 40 halvings)."""
    z = np.zeros(Y.shape[0]) if z0 is None else np.array(z0, dtype=float)
    f = _log_posterior_z(Y, N, alpha, beta, z)
    for _ in range(steps):
        eta = z[:, None] * alpha[None, :] + beta[None, :]
        p = special.expit(eta)
        g = (Y - N * p) @ alpha - z
        h = (N * p * (1 - p)) @ (alpha ** 2) + 1.0
        step = np.clip(g / h, -2.0, 2.0)
        z_new = z + step
        f_new = _log_posterior_z(Y, N, alpha, beta, z_new)
        for _ in range(40):
            worse = f_new < f - 1e-12 * np.abs(f)
            if not worse.any():
                break
            step = np.where(worse, 0.5 * step, step)
            z_new = np.where(worse, z + step, z_new)
            idx = np.nonzero(worse)[0]
            f_new[idx] = _log_posterior_z(Y[idx], N[idx], alpha, beta, z_new[idx])
        z, f = z_new, f_new
        if np.max(np.abs(step)) < tol:
            break
    eta = z[:, None] * alpha[None, :] + beta[None, :]
    p = special.expit(eta)
    h = (N * p * (1 - p)) @ (alpha ** 2) + 1.0
    return z, h


@dataclass
class _Nodes:
    z: np.ndarray  # S x K abilities (z scale)
    logw: np.ndarray  # S x K log quadrature weights (including the N(0,1) density and the Jacobian)
    post: np.ndarray  # S x K normalized posterior weights
    loglik: float  # marginal log-likelihood


def adaptive_nodes(Y, N, alpha, beta, mode, curv, n_quadrature: int, keep_p: bool = False):
    """Adaptive Gauss-Hermite nodes per system and the posterior weights there (with
    ``keep_p=True`` also P(correct) at the nodes, S x K x I)."""
    x, w = np.polynomial.hermite.hermgauss(n_quadrature)
    scale = np.sqrt(2.0 / curv)
    z = mode[:, None] + scale[:, None] * x[None, :]
    logw = (np.log(w)[None, :] + x[None, :] ** 2 + np.log(scale)[:, None]
            - 0.5 * z ** 2 - 0.5 * math.log(2 * math.pi))
    p, ll = _node_terms(Y, N, alpha, beta, z)
    lg = logw + ll
    m = lg.max(axis=1, keepdims=True)
    tot = np.log(np.exp(lg - m).sum(axis=1, keepdims=True)) + m
    nodes = _Nodes(z, logw, np.exp(lg - tot), float(tot.sum()))
    return (nodes, p) if keep_p else nodes


def _binomial_const(Y, N) -> float:
    obs = N > 0
    return float(np.sum(special.gammaln(N[obs] + 1) - special.gammaln(Y[obs] + 1) - special.gammaln(N[obs] - Y[obs] + 1)))


# ----------------------------------------------------------------------------- EM
def _wsum(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``sum_{s,k} weights[s, k] * x[s, k, :]`` as one BLAS matrix-vector product."""
    return weights.reshape(-1) @ x.reshape(-1, x.shape[2])


def _item_sums(Y, N, nodes: _Nodes, p: np.ndarray):
    """Posterior-weighted sums of the complete-data scores and information terms per item."""
    z, pw = nodes.z, nodes.post
    r = Y[:, None, :] - N[:, None, :] * p  # S x K x I residuals
    w = N[:, None, :] * p * (1 - p)
    pz, pz2 = pw * z, pw * z * z
    return _wsum(pz, r), _wsum(pw, r), _wsum(pz2, w), _wsum(pz, w), _wsum(pw, w)


def _m_step_2pl(alpha, beta, sums, max_step: float = 1.0, prior: tuple[float, float] | None = None):
    """One Newton step per item on the expected complete-data log-likelihood (plus, with a
    lognormal ``prior = (mu, sd)`` on the discriminations, its log density: a MAP step, the
    discriminations kept positive), then the bounds of :func:`_bound_2pl`."""
    g_a, g_b, h_aa, h_ab, h_bb = sums
    if prior is not None:
        g_p, h_p = _lognormal_prior_terms(alpha, prior)
        g_a, h_aa = g_a + g_p, h_aa + h_p
    det = h_aa * h_bb - h_ab ** 2
    ok = det > 1e-12 * np.maximum(h_aa * h_bb, 1e-300)
    da = np.where(ok, (h_bb * g_a - h_ab * g_b) / np.where(ok, det, 1.0), 0.0)
    db = np.where(ok, (h_aa * g_b - h_ab * g_a) / np.where(ok, det, 1.0), g_b / np.maximum(h_bb, 1e-12))
    big = np.maximum(np.abs(da), np.abs(db))
    f = np.where(big > max_step, max_step / np.maximum(big, 1e-300), 1.0)
    if prior is not None:  # keep alpha > 0 (the prior's support): at most halve it in one step
        shrink = alpha + f * da < 0.5 * alpha
        f = np.where(shrink, 0.5 * alpha / np.maximum(-da, 1e-300), f)
    return _bound_2pl(alpha + f * da, beta + f * db)


def _bound_2pl(alpha, beta):
    """The 2PL's bounds, applied so that they do not fight the EM: a discrimination beyond
    :data:`ALPHA_MAX` is set to the bound *with the item's difficulty ``-beta / alpha`` kept* (an
    item that separates the systems perfectly keeps its threshold while its slope stops at the
    bound; clipping the slope alone would move the threshold and make the EM cycle), and the
    intercept is bounded by ``ETA_CLIP + Z_MAX |alpha|`` (P(correct) within 1e-13 of 0 or 1 for every
    ability within ``Z_MAX`` SDs), which only items answered alike by every system reach."""
    over = np.abs(alpha) > ALPHA_MAX
    if over.any():
        k = np.where(over, ALPHA_MAX / np.maximum(np.abs(alpha), 1e-300), 1.0)
        alpha, beta = alpha * k, beta * k
    lim = ETA_CLIP + Z_MAX * np.abs(alpha)
    return alpha, np.clip(beta, -lim, lim)


def _lognormal_prior_terms(alpha, prior: tuple[float, float]):
    """Gradient of the log lognormal(mu, sd) density of the discriminations and a positive
    curvature for the Newton step (``1 / (sd^2 alpha^2)``, the prior's information in alpha; the
    fixed point depends only on the gradient)."""
    mu, sd = prior
    a = np.maximum(alpha, 1e-8)
    return -(1.0 + (np.log(a) - mu) / sd ** 2) / a, 1.0 / (sd ** 2 * a ** 2)


def lognormal_prior_hessian(alpha, prior: tuple[float, float]) -> np.ndarray:
    """Minus the second derivative of the log lognormal density of each discrimination (the
    prior's contribution to the observed information of the log posterior)."""
    mu, sd = prior
    a = np.maximum(alpha, 1e-8)
    return (1.0 / sd ** 2 - 1.0 - (np.log(a) - mu) / sd ** 2) / a ** 2


def _px_scale_with_prior(alpha, tau_ml: float, n_systems: int, prior: tuple[float, float]) -> float:
    """The parameter-expansion scale when the discriminations have a lognormal prior.

    The expanded model has abilities N(mu, tau^2) and the reduced discriminations ``alpha * tau``;
    maximising the expected complete-data log posterior over ``tau`` (the item terms do not depend
    on it) solves ``-S + M2 / tau^2 - I - sum_i (log(alpha_i tau) - mu) / sd^2 = 0`` with ``M2 = S
    tau_ml^2`` (the ML expansion's second moment), decreasing in ``log tau``: Newton in ``log tau``
    from the ML value. Without the prior the root is ``tau_ml``."""
    mu, sd = prior
    S, I = float(n_systems), float(alpha.size)
    m2 = S * tau_ml ** 2
    c = float(np.sum(np.log(np.maximum(alpha, 1e-8)) - mu))
    t = math.log(tau_ml)
    for _ in range(50):
        f = -S + m2 * math.exp(-2 * t) - I - (c + I * t) / sd ** 2
        df = -2 * m2 * math.exp(-2 * t) - I / sd ** 2
        step = f / df
        t -= step
        if abs(step) < 1e-13:
            break
    return math.exp(t)


def _m_step_rasch(sigma, beta, sums, max_step: float = 1.0):
    g_a, g_b, h_aa, h_ab, h_bb = sums
    hb = np.maximum(h_bb, 1e-12)
    g_s, h_ss = g_a.sum(), h_aa.sum()
    schur = h_ss - np.sum(h_ab ** 2 / hb)
    ds = (g_s - np.sum(h_ab * g_b / hb)) / schur if schur > 1e-12 else 0.0
    db = (g_b - h_ab * ds) / hb
    big = max(abs(ds), float(np.max(np.abs(db))) if db.size else 0.0)
    f = max_step / big if big > max_step else 1.0
    return sigma + f * ds, beta + f * db


def _start_values(Y, N, model: str):
    obs_n = N.sum(axis=0)
    pbar = (Y.sum(axis=0) + 0.5) / (obs_n + 1.0)
    beta = special.logit(pbar) * 1.2
    alpha = np.ones(Y.shape[1])
    return alpha, beta  # Rasch: alpha (= sigma) starts at 1 too


def _px_rescale(nodes: _Nodes):
    """Parameter expansion (Liu, Rubin & Wu 1998): the location and scale of the posterior abilities."""
    m1 = np.sum(nodes.post * nodes.z, axis=1)
    m2 = np.sum(nodes.post * nodes.z ** 2, axis=1)
    mu = float(m1.mean())
    tau = float(np.sqrt(max(m2.mean() - mu ** 2, 1e-12)))
    return mu, tau


def fit_em(Y, N, model: str, *, n_quadrature: int = 15, tol: float = 1e-8, max_iter: int = 5000,
           progress: bool = False, start: tuple[np.ndarray, np.ndarray, float] | None = None,
           prior: tuple[float, float] | None = None, deadline: res.Deadline | None = None) -> dict[str, Any]:
    """Run the PX-EM to convergence; returns the slope-intercept parameters, modes, nodes and trace.

    Each iteration: adaptive nodes at the current posterior modes, the E step, one Newton step per
    item (and sigma), then the parameter-expansion step: the abilities' posterior location ``mu``
    and scale ``tau`` are absorbed into the items (``beta += alpha * mu``, ``alpha *= tau``), which
    removes the slow direction of plain EM (a common shift of all abilities and difficulties that
    only the N(0, 1) prior pins down; plain EM needs about ``curvature x log(1 / tol)`` iterations
    along it).

    ``prior=(mu, sd)`` (2PL only): a lognormal(mu, sd) prior on the discriminations, so the fixed
    point is the posterior mode (MAP) with the abilities N(0, 1); the expansion scale then solves
    :func:`_px_scale_with_prior`. ``"log_posterior"`` in the output is the marginal
    log-likelihood plus the log prior (the objective; the marginal log-likelihood without it).
    ``deadline``: the time limit (:class:`mixedeval._resources.Deadline`), judged after the first
    iteration (:data:`MIN_EM_ITERATIONS` of them) and checked after every one."""
    if prior is not None and model != "2pl":
        raise DataError("a discrimination prior needs the 2PL model")
    alpha, beta = _start_values(Y, N, model)
    sigma = 1.0
    if start is not None:  # warm start (slope-intercept alpha, beta and the Rasch sigma), e.g. from a fit on more systems
        alpha, beta, sigma = np.array(start[0], dtype=float), np.array(start[1], dtype=float), float(start[2])
    mode, curv = posterior_modes(Y, N, alpha, beta)
    converged, it, delta, ll_prev = False, 0, np.inf, -np.inf
    bar = tqdm(total=max_iter, desc=f"IRT {model} EM", unit="it", leave=False, disable=not progress)
    t_it = time.perf_counter()
    for it in range(1, max_iter + 1):
        if deadline is not None:
            if it == 2:
                deadline.first(time.perf_counter() - t_it, MIN_EM_ITERATIONS)
            deadline.check(f"{it - 1} EM iterations done")
        bar.update(1)
        mode, curv = posterior_modes(Y, N, alpha, beta, z0=mode, steps=MODE_STEPS)
        nodes, p = adaptive_nodes(Y, N, alpha, beta, mode, curv, n_quadrature, keep_p=True)
        sums = _item_sums(Y, N, nodes, p)
        mu, tau = _px_rescale(nodes)
        objective = nodes.loglik + _log_prior(alpha, prior)
        if model == "rasch":
            new_sigma, new_beta = _m_step_rasch(sigma, beta, sums)
            new_beta = new_beta + new_sigma * mu
            new_sigma = min(abs(new_sigma * tau), ALPHA_MAX) if new_sigma != 0 else 1e-6
            new_beta = np.clip(new_beta, -ETA_CLIP, ETA_CLIP)
            delta = max(abs(new_sigma - sigma), float(np.max(np.abs(new_beta - beta))))
            sigma, beta = new_sigma, new_beta
            alpha = np.full(Y.shape[1], sigma)
        else:
            new_alpha, new_beta = _m_step_2pl(alpha, beta, sums, prior=prior)
            if prior is not None:
                tau = _px_scale_with_prior(new_alpha, tau, Y.shape[0], prior)
            new_alpha, new_beta = _bound_2pl(new_alpha * tau, new_beta + new_alpha * mu)
            delta = max(float(np.max(np.abs(new_alpha - alpha))), float(np.max(np.abs(new_beta - beta))))
            alpha, beta = new_alpha, new_beta
        mode = (mode - mu) / tau
        if delta < tol or (it > 5 and abs(objective - ll_prev) <= LL_RTOL * abs(ll_prev)):
            converged = True
            break
        ll_prev = objective
    bar.close()
    mode, curv = posterior_modes(Y, N, alpha, beta, z0=mode)
    nodes = adaptive_nodes(Y, N, alpha, beta, mode, curv, n_quadrature)
    return {"alpha": alpha, "beta": beta, "sigma": sigma, "mode": mode, "curv": curv, "nodes": nodes,
            "converged": converged, "n_iter": it, "last_change": delta, "prior": prior,
            "log_posterior": nodes.loglik + _log_prior(alpha, prior)}


def _log_prior(alpha, prior: tuple[float, float] | None) -> float:
    """Sum of the log lognormal(mu, sd) densities of the discriminations (0 without a prior)."""
    if prior is None:
        return 0.0
    mu, sd = prior
    la = np.log(np.maximum(alpha, 1e-300))
    return float(np.sum(-la - 0.5 * math.log(2 * math.pi) - math.log(sd) - (la - mu) ** 2 / (2 * sd ** 2)))


# ----------------------------------------------------------------------------- Laplace
# The Laplace approximation of the IRT marginal likelihood, maximised directly (numpy engine).
#
# This is the likelihood that the R fits maximise: ``lme4::glmer(..., nAGQ = 1)`` (the fixed-item
# Rasch model) and ``glmmTMB`` (the 2PL's reduced-rank term, which has only the Laplace
# approximation). With the linear predictor ``eta_si = alpha_i z_s + beta_i`` and ``z_s ~ N(0, 1)``
# (see the module docstring), system ``s`` contributes
#
#     l_s(z^_s) - z^_s^2 / 2 - log(H_s) / 2,   H_s = 1 + sum_i n_si p_si (1 - p_si) alpha_i^2,
#
# with ``z^_s`` its posterior mode and ``l_s`` its binomial log-likelihood (the ``log(2 pi)`` terms
# of the normal density and of the Laplace integral cancel). Its exact gradient follows from the
# implicit-function theorem (``dz^ / dtheta = (d g / d theta) / H`` with ``g = dl/dz - z`` the mode's
# equation), so the whole objective is maximised by L-BFGS-B over ``2 x items`` parameters (Rasch:
# ``sigma`` and the intercepts; every ``alpha_i = sigma``), started from the adaptive-quadrature EM
# estimates, which differ from the Laplace ones by the Laplace error only.
#
# One adaptive Gauss-Hermite node is *not* this estimator inside an EM: the EM's fixed point with
# one node maximises the joint density at the modes and ignores how ``log H`` moves with the
# parameters, which is why :func:`irt_numpy` sends ``n_quadrature=1`` here.


def laplace_terms(Y, N, alpha, beta, z0=None):
    """Laplace log-likelihood (without the binomial constant), its gradient in ``(alpha, beta)``,
    and the modes and curvatures ``H`` at which it was evaluated."""
    z, H = posterior_modes(Y, N, alpha, beta, z0=z0, steps=100, tol=1e-13)
    eta = np.clip(z[:, None] * alpha[None, :] + beta[None, :], -ETA_CLIP, ETA_CLIP)
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
                gtol: float = 1e-7, max_iter: int = 5000, deadline: res.Deadline | None = None) -> dict[str, Any]:
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
            g_p, _ = _lognormal_prior_terms(alpha, prior)
            ll, g_a = ll + _log_prior(alpha, prior), g_a + g_p
        g = np.r_[g_a.sum(), g_b] if rasch else np.r_[g_a, g_b]
        return -ll, -g

    if rasch:
        x0 = np.r_[float(start["sigma"]), start["beta"]]
        bounds = [(1e-8, ALPHA_MAX)] + [(None, None)] * I
    else:
        x0 = np.r_[start["alpha"], start["beta"]]
        lo = 1e-8 if prior is not None else -ALPHA_MAX
        bounds = [(lo, ALPHA_MAX)] * I + [(None, None)] * I
    def callback(*_: Any) -> None:
        if deadline is not None:
            deadline.check("in the Laplace optimizer")

    opt = optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
                            options={"maxiter": max_iter, "maxfun": 2 * max_iter, "gtol": gtol, "ftol": 1e-15,
                                     "maxcor": 30})
    alpha, beta = unpack(opt.x)
    ll, g_a, g_b, mode, curv = terms(Y, N, alpha, beta, z0=state["z"])
    nodes = adaptive_nodes(Y, N, alpha, beta, mode, curv, SE_NODES)
    grad = np.abs(np.r_[g_a, g_b])
    return {"alpha": alpha, "beta": beta, "sigma": float(opt.x[0]) if rasch else 1.0, "mode": mode, "curv": curv,
            "nodes": nodes, "converged": bool(opt.success), "n_iter": int(start["n_iter"]) + int(opt.nit),
            "last_change": float(np.max(grad)) if grad.size else 0.0, "prior": prior,
            "log_posterior": ll + _log_prior(alpha, prior), "optimizer": str(opt.message),
            "loglik_laplace": ll + _binomial_const(Y, N)}


# ----------------------------------------------------------------------------- standard errors
def _scores_at_nodes(Y, N, alpha, beta, nodes: _Nodes):
    p = _node_terms(Y, N, alpha, beta, nodes.z)[0]
    return Y[:, None, :] - N[:, None, :] * p, N[:, None, :] * p * (1 - p)


def louis_information(Y, N, alpha, beta, nodes: _Nodes, model: str, full: bool, keep: dict | None = None):
    """Observed information of the marginal likelihood (Louis 1982) in slope-intercept parameters.

    2PL order ``[alpha_1..alpha_I, beta_1..beta_I]``, Rasch ``[sigma, beta_1..beta_I]``. With
    ``full=False`` the per-item blocks only: returns ``(None, blocks)`` with blocks (I, 2, 2)
    (Rasch: (I + 1,) diagonal entries, sigma first)."""
    r, w = _scores_at_nodes(Y, N, alpha, beta, nodes)
    z, pw = nodes.z, nodes.post
    S, K, I = r.shape
    if model == "2pl":
        u = np.concatenate([z[:, :, None] * r, r], axis=2)  # S x K x 2I
        e_aa, e_ab, e_bb = _wsum(pw * z * z, w), _wsum(pw * z, w), _wsum(pw, w)
    else:
        u = np.concatenate([(z * r.sum(axis=2))[:, :, None], r], axis=2)  # S x K x (1 + I)
        e_ss = float(_wsum(pw * z * z, w).sum())
        e_sb, e_bb = _wsum(pw * z, w), _wsum(pw, w)
    ubar = np.einsum("sk,skp->sp", pw, u)
    U = np.sqrt(pw)[:, :, None] * (u - ubar[:, None, :])
    if keep is not None and model == "2pl":  # the pieces of the information as an operator (E - U'U)
        keep.update(U=U.reshape(S * K, -1), e_aa=e_aa, e_ab=e_ab, e_bb=e_bb)
    if full:
        Um = U.reshape(S * K, -1)
        cov = Um.T @ Um
        if model == "2pl":
            E = np.zeros((2 * I, 2 * I))
            idx = np.arange(I)
            E[idx, idx], E[I + idx, I + idx] = e_aa, e_bb
            E[idx, I + idx] = E[I + idx, idx] = e_ab
        else:
            E = np.zeros((I + 1, I + 1))
            E[0, 0] = e_ss
            E[0, 1:] = E[1:, 0] = e_sb
            E[np.arange(1, I + 1), np.arange(1, I + 1)] = e_bb
        return E - cov, None
    var = np.einsum("skp,skp->p", U, U)
    if model == "2pl":
        c_ab = np.einsum("ski,ski->i", U[:, :, :I], U[:, :, I:])
        blocks = np.empty((I, 2, 2))
        blocks[:, 0, 0] = e_aa - var[:I]
        blocks[:, 1, 1] = e_bb - var[I:]
        blocks[:, 0, 1] = blocks[:, 1, 0] = e_ab - c_ab
        return None, blocks
    return None, np.r_[e_ss - var[0], e_bb - var[1:]]


def _safe_inv(M: np.ndarray) -> np.ndarray:
    try:
        V = np.linalg.inv(M)
    except np.linalg.LinAlgError:
        V = np.linalg.pinv(M)
    return V


def parameter_covariance(Y, N, alpha, beta, nodes, model: str,
                         prior: tuple[float, float] | None = None) -> tuple[dict[str, np.ndarray], str]:
    """Variances of (discrimination, difficulty[, sigma]) and their covariance per item, and the
    method. With a discrimination ``prior`` the information is the log posterior's (Louis plus the
    prior's curvature on each discrimination)."""
    I = Y.shape[1]
    P = 2 * I if model == "2pl" else I + 1
    full = P <= FULL_INFO_MAX
    parts: dict[str, Any] = {}
    info, blocks = louis_information(Y, N, alpha, beta, nodes, model, full, keep=None if full else parts)
    if prior is not None:
        hp = lognormal_prior_hessian(alpha, prior)
        if full:
            info[np.arange(I), np.arange(I)] += hp
        else:
            blocks[:, 0, 0] += hp
            if parts:
                parts["e_aa"] = parts["e_aa"] + hp
    if model == "2pl":
        if full:
            V = _safe_inv(info)
            v_aa, v_bb = np.diag(V)[:I], np.diag(V)[I:]
            v_ab = V[np.arange(I), I + np.arange(I)]
        else:
            det = blocks[:, 0, 0] * blocks[:, 1, 1] - blocks[:, 0, 1] ** 2
            det = np.where(det > 0, det, np.nan)
            v_aa, v_bb, v_ab = blocks[:, 1, 1] / det, blocks[:, 0, 0] / det, -blocks[:, 0, 1] / det
            V = None
        # difficulty = -beta / alpha: gradient (beta / alpha^2, -1 / alpha)
        ga, gb = beta / alpha ** 2, -1.0 / alpha
        var_b = ga ** 2 * v_aa + gb ** 2 * v_bb + 2 * ga * gb * v_ab
        cov_ab = ga * v_aa + gb * v_ab
        out = {"var_a": v_aa, "var_b": var_b, "cov_ab": cov_ab, "var_sigma": np.nan,
               # the covariance of (alpha, beta): full, or per item (var alpha, var beta, cov)
               "V": V, "V_items": np.stack([v_aa, v_bb, v_ab], axis=1), "info_parts": parts or None}
    else:
        if full:
            V = _safe_inv(info)
            v_s, v_bb = V[0, 0], np.diag(V)[1:]
        else:
            d = np.where(blocks > 0, blocks, np.nan)
            v_s, v_bb = 1.0 / d[0], 1.0 / d[1:]
        out = {"var_a": np.zeros(I), "var_b": v_bb, "cov_ab": np.zeros(I), "var_sigma": float(v_s)}
    return out, ("louis_full" if full else "louis_item_blocks")


# ----------------------------------------------------------------------------- the result
@dataclass(frozen=True, repr=False)
class IrtNumpyFit(ResultMixin):
    """A Rasch or 2PL calibration by the numpy engine (marginal ML, adaptive Gauss-Hermite EM).

    ``items``: item, difficulty, difficulty_std_error, discrimination, discrimination_std_error,
    conf_low/conf_high (of the difficulty), n_responses, p_correct. ``abilities``: system, ability
    (posterior mode, lme4's conditional mode), std_error (2PL: with the item parameters'
    uncertainty, as glmmTMB's sdreport; Rasch: the conditional SD, as lme4's condVar), conf_low,
    conf_high, std_error_conditional (the conditional SD, item parameters fixed), ability_eap,
    std_error_eap, n_items, p_correct. ``responses``: the long table used (system,
    item, score = correct count, trials). ``sigma``: the ability SD (Rasch; 1 for the 2PL).
    """

    items: pd.DataFrame
    abilities: pd.DataFrame
    model: str
    responses: pd.DataFrame
    sigma: float
    sigma_std_error: float
    loglik: float
    converged: bool
    n_iter: int
    n_quadrature: int
    se_method: str
    engine: str
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    _matrix: Responses | None = field(default=None, repr=False, compare=False)

    _main_table = "items"
    _print_tables = ("items", "abilities")

    @property
    def table(self) -> pd.DataFrame:
        """The item table (the main table)."""
        return self.items

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"IRT calibration ({self.model}, numpy engine: {self.provenance.get('estimator', 'marginal ML')})"

    def _scalars(self):
        return [("systems", len(self.abilities)), ("items", len(self.items)), ("loglik", f"{self.loglik:.6g}"),
                ("sigma", f"{self.sigma:.4g}"), ("converged", self.converged), ("iterations", self.n_iter)]


def _item_table(resp: Responses, alpha, beta, sigma, cov, model: str, level: float) -> pd.DataFrame:
    zq = float(special.ndtri(0.5 + level / 2))
    if model == "2pl":
        a, b = alpha, -beta / alpha
    else:
        a, b = np.ones_like(beta), -beta
    se_b = np.sqrt(cov["var_b"])
    se_a = np.sqrt(cov["var_a"]) if model == "2pl" else np.zeros_like(a)
    nresp = resp.n.sum(axis=0)
    return pd.DataFrame({
        "item": list(resp.items), "difficulty": b, "difficulty_std_error": se_b,
        "conf_low": b - zq * se_b, "conf_high": b + zq * se_b,
        "discrimination": a, "discrimination_std_error": se_a,
        "intercept": beta, "n_responses": nresp,
        "p_correct": np.where(nresp > 0, resp.y.sum(axis=0) / np.maximum(nresp, 1), np.nan),
    })


def ability_variance_joint(Y, N, alpha, beta, mode, curv, cov: dict[str, Any]) -> np.ndarray:
    """Per system, the variance of the ability's conditional mode with the item parameters'
    uncertainty: ``1 / H_s + g_s' V g_s``, TMB's ``sdreport`` for random effects (its
    ``diag.cov.random``, what glmmTMB reports; Kass & Steffey 1989's first-order correction).

    ``H_s`` is the curvature of the log posterior of ``z_s`` at its mode, ``V`` the covariance of
    the item parameters ``(alpha, beta)`` and ``g_s = d z_s / d(alpha, beta)`` the derivative of
    the mode by the implicit function theorem: ``d z_s / d alpha_i = (r_si - w_si alpha_i z_s) /
    H_s`` and ``d z_s / d beta_i = -w_si alpha_i / H_s`` (``r = y - n p``, ``w = n p (1 - p)``),
    i.e. ``-H_uu^{-1} H_u,theta`` of the joint Hessian. Over :data:`FULL_INFO_MAX` parameters
    ``g' V g`` is solved by conjugate gradients on the Louis information (:func:`_quad_form_louis`),
    so the covariances between items stay in."""
    eta = np.clip(mode[:, None] * alpha[None, :] + beta[None, :], -ETA_CLIP, ETA_CLIP)
    p = special.expit(eta)
    r, w = Y - N * p, N * p * (1 - p)
    ga = (r - w * alpha[None, :] * mode[:, None]) / curv[:, None]
    gb = -(w * alpha[None, :]) / curv[:, None]
    V = cov.get("V")
    G = np.concatenate([ga, gb], axis=1)
    if V is not None:
        extra = np.einsum("sp,sp->s", G @ V, G)
    elif cov.get("info_parts"):
        extra = _quad_form_louis(G, cov["info_parts"], cov["V_items"])
    else:
        vi = cov["V_items"]
        extra = ga ** 2 @ vi[:, 0] + gb ** 2 @ vi[:, 1] + 2 * (ga * gb) @ vi[:, 2]
    return 1.0 / curv + np.maximum(np.nan_to_num(extra), 0.0)


def _quad_form_louis(G: np.ndarray, parts: dict[str, Any], v_items: np.ndarray, rtol: float = 1e-10,
                     max_iter: int = 1000) -> np.ndarray:
    """``diag(G V G')`` with ``V`` the inverse of the Louis information ``E - U'U`` (E block
    diagonal per item, U the centred complete-data scores, (systems x nodes) x parameters) without
    forming it: conjugate gradients on ``(E - U'U) X = G'`` for every row of G at once,
    preconditioned by the inverse per-item blocks (``v_items``: var alpha, var beta, cov). Big
    item banks (over :data:`FULL_INFO_MAX` parameters) keep the covariances between items this
    way (they add about 10% to the ability SEs)."""
    U, e_aa, e_ab, e_bb = parts["U"], parts["e_aa"], parts["e_ab"], parts["e_bb"]
    I = len(e_aa)

    def A(X):
        xa, xb = X[:I], X[I:]
        return np.concatenate([e_aa[:, None] * xa + e_ab[:, None] * xb, e_ab[:, None] * xa + e_bb[:, None] * xb]) \
            - U.T @ (U @ X)

    va, vb, vab = (np.nan_to_num(v_items[:, k])[:, None] for k in range(3))

    def Minv(R):
        ra, rb = R[:I], R[I:]
        return np.concatenate([va * ra + vab * rb, vab * ra + vb * rb])

    B = G.T
    X = np.zeros_like(B)
    R = B.copy()
    Z = Minv(R)
    Pm = Z.copy()
    rz = np.sum(R * Z, axis=0)
    b_norm = np.sqrt(np.sum(B * B, axis=0)) + 1e-300
    for _ in range(max_iter):
        AP = A(Pm)
        den = np.sum(Pm * AP, axis=0)
        step = np.where(den > 0, rz / np.where(den > 0, den, 1.0), 0.0)
        X += step * Pm
        R -= step * AP
        if np.all(np.sqrt(np.sum(R * R, axis=0)) <= rtol * b_norm):
            break
        Z = Minv(R)
        rz_new = np.sum(R * Z, axis=0)
        Pm = Z + np.where(rz > 0, rz_new / np.where(rz > 0, rz, 1.0), 0.0) * Pm
        rz = rz_new
    return np.sum(B * X, axis=0)


def _ability_table(resp: Responses, mode, curv, nodes: _Nodes, scale: float, level: float,
                   var_joint: np.ndarray | None = None) -> pd.DataFrame:
    """Abilities: the conditional mode; ``std_error`` with the item parameters' uncertainty when
    ``var_joint`` is given (2PL, glmmTMB's sdreport), else the conditional SD (Rasch, lme4's
    condVar); ``std_error_conditional`` is always the conditional SD (item parameters fixed)."""
    zq = float(special.ndtri(0.5 + level / 2))
    th, se_c = scale * mode, scale / np.sqrt(curv)
    se = se_c if var_joint is None else scale * np.sqrt(var_joint)
    eap = scale * np.sum(nodes.post * nodes.z, axis=1)
    sd = scale * np.sqrt(np.maximum(np.sum(nodes.post * nodes.z ** 2, axis=1) - (eap / scale) ** 2, 0.0))
    nobs = resp.n.sum(axis=1)
    return pd.DataFrame({
        "system": list(resp.systems), "ability": th, "std_error": se, "conf_low": th - zq * se,
        "conf_high": th + zq * se, "std_error_conditional": se_c, "ability_eap": eap, "std_error_eap": sd,
        "n_items": (resp.n > 0).sum(axis=1),
        "p_correct": np.where(nobs > 0, resp.y.sum(axis=1) / np.maximum(nobs, 1), np.nan),
    })


def _fit_warnings(resp: Responses, em: dict[str, Any], model: str, tol: float) -> list[ResultWarning]:
    ws: list[ResultWarning] = []
    if not em["converged"]:
        ws.append(ResultWarning("convergence", f"the EM stopped after {em['n_iter']} iterations with a last parameter "
                                f"change of {em['last_change']:.2g} (tol {tol:g}); raise max_iter"))
    nresp = resp.n.sum(axis=0)
    frac = np.where(nresp > 0, resp.y.sum(axis=0) / np.maximum(nresp, 1), np.nan)
    extreme = [resp.items[i] for i in np.nonzero((frac == 0) | (frac == 1))[0]]
    if extreme:
        ws.append(ResultWarning("no_information", f"{len(extreme)} item(s) answered alike by every system "
                                f"({', '.join(extreme[:5])}{', ...' if len(extreme) > 5 else ''}): their difficulty "
                                "runs off to the edge of the scale and carries no information"))
    if model == "2pl" and np.any(np.abs(em["alpha"]) >= BOUND_FLAG * ALPHA_MAX):
        ws.append(ResultWarning("discrimination_bound", f"{int(np.sum(np.abs(em['alpha']) >= BOUND_FLAG * ALPHA_MAX))} "
                                "item(s) "
                                f"separate the systems (almost) perfectly: their discrimination stopped at the bound "
                                f"{ALPHA_MAX:g} (it runs off to infinity in maximum likelihood)"))
    if model == "2pl" and np.any(em["alpha"] < 0):
        neg = int(np.sum(em["alpha"] < 0))
        ws.append(ResultWarning("negative_discrimination", f"{neg} item(s) have a negative discrimination "
                                "(likely mis-keyed or ambiguous)"))
    return ws


def estimator_name(prior: tuple[float, float] | None, n_quadrature: int = 15) -> str:
    """How the numpy engine's estimates were obtained (for provenance and benchmark tables)."""
    how = ("Laplace approximation, L-BFGS-B" if n_quadrature == 1
           else f"adaptive Gauss-Hermite EM, {n_quadrature} nodes")
    if prior is None:
        return f"marginal ML ({how})"
    return f"MAP with a lognormal({prior[0]:g}, {prior[1]:g}) discrimination prior ({how})"


def _estimate(Y, N, m: str, n_quadrature: int, tol: float, max_iter: int, progress: bool,
              prior: tuple[float, float] | None, deadline: res.Deadline | None = None) -> dict[str, Any]:
    """The EM (``n_quadrature > 1``) or the Laplace fit started from a loose EM (``n_quadrature
    == 1``: :func:`fit_laplace`), with the 2PL's scale oriented so that the discriminations sum
    to a positive number (most items keyed the right way)."""
    laplace = n_quadrature == 1
    em = fit_em(Y, N, m, n_quadrature=START_NODES if laplace else n_quadrature,
                tol=max(tol, START_TOL) if laplace else tol, max_iter=max_iter, progress=progress, prior=prior,
                deadline=deadline)
    if laplace:
        em = fit_laplace(Y, N, m, em, prior=prior, max_iter=max_iter, deadline=deadline)
    if m == "2pl" and prior is None and em["alpha"].sum() < 0:
        em["alpha"], em["mode"] = -em["alpha"], -em["mode"]
        em["nodes"] = adaptive_nodes(Y, N, em["alpha"], em["beta"], em["mode"], em["curv"],
                                     SE_NODES if laplace else n_quadrature)
    return em


def _check_prior(prior: Any, model: str) -> tuple[float, float] | None:
    if prior is None:
        return None
    if isinstance(prior, str) and prior.lower() == "bilog":
        prior = (0.0, 0.5)
    try:
        mu, sd = (float(v) for v in prior)
    except (TypeError, ValueError) as exc:
        raise DataError(f"discrimination_prior={prior!r} must be (mu, sd) of a lognormal prior, e.g. (0, 0.5) "
                        "(BILOG-MG's default, also 'bilog'), or None for maximum likelihood") from exc
    if not (np.isfinite(mu) and np.isfinite(sd) and sd > 0):
        raise DataError(f"discrimination_prior={prior!r}: mu must be finite and sd > 0")
    if model != "2pl":
        raise DataError("discrimination_prior= needs model='2pl' (the Rasch discriminations are fixed)")
    return mu, sd


def _check_args(model: str, n_quadrature: int, tol: float, max_iter: int, level: float) -> str:
    m = str(model).lower().replace("-", "").replace("_", "")
    m = {"rasch": "rasch", "1pl": "rasch", "2pl": "2pl"}.get(m, m)
    if m not in MODELS:
        raise DataError(f"model={model!r} is not supported by the numpy engine; use 'rasch' or '2pl'")
    if not (isinstance(n_quadrature, (int, np.integer)) and 1 <= n_quadrature <= 100):
        raise DataError(f"n_quadrature={n_quadrature!r} must be a whole number of nodes between 1 and 100 (glmer's nAGQ)")
    if not (tol > 0 and max_iter >= 1):
        raise DataError("tol must be > 0 and max_iter >= 1")
    if not 0 < level < 1:
        raise DataError(f"level={level!r} must be between 0 and 1, e.g. 0.95")
    return m


def irt_numpy(data: Any, model: str = "rasch", *, score: str = "score", system: str = "system", item: str = "item",
              trials: str | None = None, n_quadrature: int = 15, tol: float = 1e-8, max_iter: int = 5000,
              level: float = 0.95, progress: bool = False,
              discrimination_prior: tuple[float, float] | None = None) -> IrtNumpyFit:
    """Fit a Rasch or 2PL model by marginal maximum likelihood (numpy engine; see the module doc).

    ``data``: a long table (``system``, ``item``, ``score`` 0/1 or correct counts with ``trials``)
    or a wide one (one row per system, one column per item, NaN where not answered). The Rasch
    estimates are those of ``glmer(score ~ 0 + item + (1 | system), binomial, nAGQ = n_quadrature)``
    (difficulty = -coefficient); the 2PL's abilities are N(0, 1). ``progress=True`` shows the EM
    iterations (tqdm).

    ``discrimination_prior=(mu, sd)`` (2PL): maximum a posteriori estimates with a lognormal(mu,
    sd) prior on the discriminations, the default slope prior of BILOG-MG (lognormal(0, 0.5); Mislevy
    1986, "Bayes modal estimation in item response models", Psychometrika 51) -- it keeps the
    slopes of items that separate the systems (almost) perfectly finite and those of nearly flat
    items away from 0 (whose difficulties ``-intercept / slope`` would run off), at the price of
    shrinking every slope towards the prior and of forcing them positive (a mis-keyed item then
    shows as a near-zero discrimination, not a negative one). The default (None) is maximum
    likelihood, the estimator of the R fits."""
    m = _check_args(model, n_quadrature, tol, max_iter, level)
    prior = _check_prior(discrimination_prior, m)
    resp = response_matrix(data, score=score, system=system, item=item, trials=trials)
    if len(resp.systems) < 2 or len(resp.items) < 2:
        raise DataError(f"IRT needs at least 2 systems and 2 items (got {len(resp.systems)} and {len(resp.items)})")
    t0 = time.perf_counter()
    Y, N = resp.y, resp.n
    check_fit_memory(Y.shape[0], Y.shape[1], n_quadrature)
    deadline = res.Deadline(f"the numpy IRT fit ({m}, {'Laplace' if n_quadrature == 1 else f'{n_quadrature} nodes'}) "
                            f"of {res.format_count(Y.shape[0])} systems x {res.format_count(Y.shape[1])} items",
                            "Use fewer quadrature nodes (nagq=1, the Laplace fit, or 21), calibrate on a sample of the "
                            "items, or raise the time limit")
    em = _estimate(Y, N, m, n_quadrature, tol, max_iter, progress, prior, deadline)
    alpha, beta = em["alpha"], em["beta"]
    nodes = em["nodes"]
    cov, se_method = parameter_covariance(Y, N, alpha, beta, nodes, m, prior)
    sigma = float(em["sigma"]) if m == "rasch" else 1.0
    items = _item_table(resp, alpha, beta, sigma, cov, m, level)
    var_joint = (ability_variance_joint(Y, N, alpha, beta, em["mode"], em["curv"], cov) if m == "2pl" else None)
    abilities = _ability_table(resp, em["mode"], em["curv"], nodes, sigma, level, var_joint)
    loglik = em.get("loglik_laplace", nodes.loglik + _binomial_const(Y, N))
    prov = {"engine": "numpy", "estimator": estimator_name(prior, n_quadrature), "model": m,
            "n_quadrature": n_quadrature, "tol": tol, "seconds": round(time.perf_counter() - t0, 3)}
    if prior is not None:
        prov["discrimination_prior"] = f"lognormal({prior[0]:g}, {prior[1]:g})"
        prov["log_posterior"] = em["log_posterior"] + _binomial_const(Y, N)
    return IrtNumpyFit(items=items, abilities=abilities, model=m, responses=resp.long(), sigma=sigma,
                       sigma_std_error=float(np.sqrt(cov["var_sigma"])) if m == "rasch" else 0.0,
                       loglik=loglik, converged=em["converged"], n_iter=em["n_iter"], n_quadrature=n_quadrature,
                       se_method=se_method, engine="numpy", warnings=tuple(_fit_warnings(resp, em, m, tol)),
                       provenance=prov, _matrix=resp)


# ----------------------------------------------------------------------------- simulation (tests, benchmarks)
def simulate_2pl(n_systems: int, n_items: int, *, random_state: Any = None, discrimination_sd: float = 0.5,
                 difficulty_sd: float = 1.0, rasch: bool = False, sigma: float = 1.0):
    """Planted truth for tests and benchmarks: abilities N(0, sigma^2), discriminations
    lognormal(0, discrimination_sd) (1 for ``rasch``), difficulties N(0, difficulty_sd^2); returns
    ``(Y, abilities, discriminations, difficulties)`` with Y a 0/1 systems x items matrix."""
    rng = np.random.default_rng(random_state)
    theta = rng.normal(0.0, sigma, n_systems)
    a = np.ones(n_items) if rasch else rng.lognormal(0.0, discrimination_sd, n_items)
    b = rng.normal(0.0, difficulty_sd, n_items)
    p = special.expit(a[None, :] * (theta[:, None] - b[None, :]))
    Y = (rng.random(p.shape) < p).astype(float)
    return Y, theta, a, b


def wide_frame(Y: np.ndarray, systems: Any = None, items: Any = None) -> pd.DataFrame:
    """A wide response table (index: systems ``s000``..., columns: items ``i0000``...)."""
    S, I = Y.shape
    systems = [f"s{j:03d}" for j in range(S)] if systems is None else list(systems)
    items = [f"i{j:04d}" for j in range(I)] if items is None else list(items)
    return pd.DataFrame(Y, index=pd.Index(systems, name="system"), columns=items)
