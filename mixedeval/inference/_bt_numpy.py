"""Maximum likelihood of Bradley-Terry models for many count tables at once (vectorized Newton).

One call fits ``B`` tables of cell counts (B, cells, 3) -- the full data (B = 1) or a block of
bootstrap replicates -- with the design of :class:`._bt_design.BTDesign`. Per cell the linear
predictor is ``eta = s[a] - s[b] + position[judge] + covariates @ beta``;

* ``ties="half"`` / ``"drop"``: binomial log-likelihood ``y * eta - n * log(1 + exp(eta))`` with
  ``y`` = a-wins (+ half the ties) and ``n`` = decided battles (+ ties); the estimates are those
  of R's ``glm(cbind(y, n - y) ~ 0 + X, binomial)`` on the +1/-1 design;
* ``ties="davidson"``: Davidson's (1970) trinomial model with ``tau = log(nu[judge])``:
  P(a wins) = exp(eta/2) / D, P(b wins) = exp(-eta/2) / D, P(tie) = exp(tau) / D,
  ``D = exp(eta/2) + exp(-eta/2) + exp(tau)`` (Davidson's ``pi_a / (pi_a + pi_b + nu sqrt(pi_a pi_b))``
  divided through by ``sqrt(pi_a pi_b)``).

Both log-likelihoods are concave in the parameters (multinomial logits linear in them), so
Newton's method with step halving converges to the maximum where it exists. The Hessian of the
strengths is the weighted Laplacian of the comparison graph, assembled with sparse products, so
a block of 64 replicates of 100 models costs 64 small (p x p) solves per iteration. A tiny ridge
on the Newton system (1e-9 of its largest diagonal entry) keeps it solvable when a replicate leaves
a model or a judge without battles; it changes the steps, not the fixed point (the gradient is
zero there), and parameters without information are returned as NaN.

Bootstrap replicates (:func:`chord_fit`, used by :mod:`mixedeval.workflows._bt_bootstrap`) lie
near the full-data fit, so they are fitted by the chord iteration instead: Newton's step with the
full data's information, inverted once for the whole bootstrap, accelerated by Anderson mixing,
on arrays laid out cells x replicates (one sparse product per step for all replicates, no p x p
solve per replicate: 300 models took 1-2 ms per Newton solve per replicate). It stops at the same
maximum (the score is zero there; first in single precision, then in double precision to steps
of 1e-9) and hands the replicates it cannot fit (a model or judge without battles, a model that
won or lost all its battles, an iteration that does not settle) to Newton's method above.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from .._executor import one_blas_thread  # noqa: F401 - re-exported for the Bradley-Terry modules
from ._bt_design import BTDesign

MAX_ITER = 100
TOL = 1e-10
RIDGE = 1e-9


# one_blas_thread: the process-wide one-thread BLAS limit of mixedeval._executor (issue 33: small
# p x p products and solves spin OpenBLAS threads against a busy core; a 301 x 301 eigh took 0.64 s
# with two threads and 0.046 s with one)


@dataclass(frozen=True)
class NewtonFit:
    """Estimates (B, p), the information matrices (B, p, p), log-likelihoods and convergence flags."""

    theta: np.ndarray
    information: np.ndarray
    loglik: np.ndarray
    converged: np.ndarray
    iterations: int


class _Ops:
    """The sparse pieces of one design, made once per fit."""

    def __init__(self, d: BTDesign) -> None:
        c, k = len(d.a), d.k
        rows = np.arange(c)
        self.inc = sp.csr_matrix((np.r_[np.ones(c), -np.ones(c)], (np.r_[rows, rows], np.r_[d.a, d.b])), shape=(c, k))
        self.inc_t = self.inc.T.tocsr()
        self.pair_t = sp.csr_matrix((np.ones(c), (d.a * k + d.b, rows)), shape=(k * k, c))
        self.e_eta = d.eta_extra()
        self.e_tau = d.tau_columns()
        self.free = d.free
        self.k = k
        self.davidson = d.ties == "davidson"
        self.n_eta_extra = self.e_eta.shape[1]

    def predictors(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """eta (B, C) and tau (B, C) (None unless Davidson)."""
        nb = theta.shape[0]
        s = np.zeros((nb, self.k))
        s[:, self.free] = theta[:, :self.k - 1]
        q = self.n_eta_extra
        eta = (self.inc @ s.T).T + theta[:, self.k - 1:self.k - 1 + q] @ self.e_eta.T
        tau = theta[:, self.k - 1 + q:] @ self.e_tau.T if self.davidson else None
        return eta, tau

    def laplacian(self, w: np.ndarray) -> np.ndarray:
        """sum_c w_c (e_a - e_b)(e_a - e_b)' per replicate, (B, k, k)."""
        nb = w.shape[0]
        m = np.asarray(self.pair_t @ w.T).T.reshape(nb, self.k, self.k)
        lap = -(m + m.transpose(0, 2, 1))
        idx = np.arange(self.k)
        lap[:, idx, idx] = m.sum(axis=2) + m.sum(axis=1)
        return lap

    def cross(self, w: np.ndarray, e: np.ndarray) -> np.ndarray:
        """sum_c w_c (e_a - e_b) e_c' per replicate, (B, k, q)."""
        nb, q = w.shape[0], e.shape[1]
        if q == 0:
            return np.zeros((nb, self.k, 0))
        we = (w[:, :, None] * e[None]).transpose(1, 0, 2).reshape(len(e), nb * q)
        return np.asarray(self.inc_t @ we).reshape(self.k, nb, q).transpose(1, 0, 2)


def _gram(w: np.ndarray, e1: np.ndarray, e2: np.ndarray) -> np.ndarray:
    """sum_c w_c e1_c e2_c' per replicate, (B, q1, q2)."""
    if e1.shape[1] == 0 or e2.shape[1] == 0:
        return np.zeros((w.shape[0], e1.shape[1], e2.shape[1]))
    return np.matmul(e1.T[None] * w[:, None, :], e2)


class Counts:
    """The per-cell sums a likelihood needs, contiguous (B, C) arrays made once per fit (the
    (B, C, 3) count table's strided columns cost as much as the likelihood itself): Davidson
    ``diff`` = a-wins - b-wins, ``nt`` ties, ``n`` all; binomial ``y`` (a-wins, + half the ties) and
    ``n`` (decided battles, + ties)."""

    def __init__(self, counts: np.ndarray | None, ties: str, parts: dict | None = None) -> None:
        self.ties = ties
        if parts is not None:
            self.parts = parts
            return
        na, nb_, nt = (np.ascontiguousarray(counts[..., i]) for i in range(3))
        if ties == "davidson":
            self.parts = {"diff": na - nb_, "nt": nt, "n": na + nb_ + nt}
        elif ties == "half":
            self.parts = {"y": na + 0.5 * nt, "n": na + nb_ + nt}
        else:
            self.parts = {"y": na, "n": na + nb_}

    def __getitem__(self, idx: object) -> Counts:
        return Counts(None, self.ties, {k: v[idx] for k, v in self.parts.items()})

    @property
    def total(self) -> np.ndarray:
        """Battles per replicate (B,)."""
        return self.parts["n"].sum(axis=1)


def cell_terms(counts: np.ndarray | Counts, eta: np.ndarray, tau: np.ndarray | None, ties: str):
    """Log-likelihood (B,), score of eta and tau per cell, and the information weights
    (w_ee, w_et, w_tt) per cell; ``counts`` (B, C, 3) or their :class:`Counts`."""
    c = counts.parts if isinstance(counts, Counts) else Counts(counts, ties).parts
    n = c["n"]
    if ties != "davidson":
        y = c["y"]
        e = np.exp(-np.abs(eta))  # one exponential: mu and log(1 + exp(eta)) from exp(-|eta|)
        inv = 1.0 / (1.0 + e)
        mu = np.where(eta >= 0, inv, e * inv)
        ll = (y * eta - n * (np.maximum(eta, 0.0) + np.log1p(e))).sum(axis=1)
        return ll, y - n * mu, None, n * mu * (1.0 - mu), None, None
    diff, nt = c["diff"], c["nt"]
    half = 0.5 * eta
    # D = exp(h) + exp(-h) + exp(tau) = exp(|h|) S, S = 1 + exp(-2|h|) + exp(tau - |h|): two
    # exponentials and one logarithm per cell, stable for any h
    a = np.abs(half)
    e2, et = np.exp(-2.0 * a), np.exp(np.minimum(tau - a, 700.0))
    inv = 1.0 / (1.0 + e2 + et)
    small, pt = e2 * inv, et * inv
    d = np.where(half >= 0, inv - small, small - inv)  # pa - pb
    ll = (diff * half + nt * tau - n * (a - np.log(inv))).sum(axis=1)
    r_eta = 0.5 * (diff - n * d)
    r_tau = nt - n * pt
    w_ee = 0.25 * n * ((inv + small) - d * d)
    w_et = -0.5 * n * d * pt
    w_tt = n * pt * (1.0 - pt)
    return ll, r_eta, r_tau, w_ee, w_et, w_tt


def _score_info(ops: _Ops, counts: np.ndarray, theta: np.ndarray, ties: str):
    """Log-likelihood, score (B, p) and information (B, p, p)."""
    eta, tau = ops.predictors(theta)
    ll, r_eta, r_tau, w_ee, w_et, w_tt = cell_terms(counts, eta, tau, ties)
    f, ee = ops.free, ops.e_eta
    g_s = np.asarray(ops.inc_t @ r_eta.T).T[:, f]
    parts = [g_s, r_eta @ ee]
    blocks_s = [ops.laplacian(w_ee)[:, f][:, :, f], ops.cross(w_ee, ee)[:, f]]
    blocks_e = [None, _gram(w_ee, ee, ee)]
    if ops.davidson:
        et = ops.e_tau
        parts.append(r_tau @ et)
        blocks_s.append(ops.cross(w_et, et)[:, f])
        blocks_e.append(_gram(w_et, ee, et))
        tt = _gram(w_tt, et, et)
    g = np.concatenate(parts, axis=1)
    top = np.concatenate(blocks_s, axis=2)
    mid = np.concatenate([blocks_s[1].transpose(0, 2, 1), *blocks_e[1:]], axis=2)
    rows = [top, mid]
    if ops.davidson:
        rows.append(np.concatenate([blocks_s[2].transpose(0, 2, 1), blocks_e[2].transpose(0, 2, 1), tt], axis=2))
    return ll, g, np.concatenate(rows, axis=1)


def _loglik(ops: _Ops, counts: np.ndarray, theta: np.ndarray, ties: str) -> np.ndarray:
    eta, tau = ops.predictors(theta)
    return cell_terms(counts, eta, tau, ties)[0]


def _solve(info: np.ndarray, g: np.ndarray) -> np.ndarray:
    p = info.shape[1]
    diag = np.einsum("bii->bi", info)
    ridge = RIDGE * np.maximum(diag.max(axis=1), 1.0)
    a = info + ridge[:, None, None] * np.eye(p)[None]
    dead = diag <= 0
    a[dead.nonzero()[0], dead.nonzero()[1], dead.nonzero()[1]] = 1.0
    return np.linalg.solve(a, g[..., None])[..., 0]


def fit(d: BTDesign, counts: np.ndarray, theta0: np.ndarray | None = None, max_iter: int = MAX_ITER,
        tol: float = TOL) -> NewtonFit:
    """Maximum-likelihood fits of the count tables ``counts`` (B, cells, 3) under design ``d``.
    Stops when the last Newton step moved no parameter by more than ``tol`` (the estimate is then
    within about ``tol**2`` of the maximum: Newton converges quadratically), or by less than 1e-7
    with the score below 1e-9 per battle."""
    ops = _Ops(d)
    nb, p = counts.shape[0], d.n_params
    counts = Counts(counts, d.ties)
    theta = np.zeros((nb, p)) if theta0 is None else np.array(theta0, dtype=float, copy=True)
    ll, g, info = _score_info(ops, counts, theta, d.ties)
    active = np.ones(nb, dtype=bool)
    scale = np.maximum(counts.total, 1.0)
    it = 0
    for it in range(1, max_iter + 1):
        every = bool(active.all())
        idx = slice(None) if every else active.nonzero()[0]
        c_idx = counts if every else counts[idx]
        t_old = theta[idx]
        step = _solve(info[idx], g[idx])
        t_new, (l2, g2, i2) = _step(ops, c_idx, t_old, step, ll[idx], d.ties)
        moved = np.abs(t_new - t_old).max(axis=1)
        theta[idx], ll[idx], g[idx], info[idx] = t_new, l2, g2, i2
        done = (moved < tol) | ((moved < 1e-7) & (np.abs(g2).max(axis=1) < 1e-9 * scale[idx]))
        if every:
            active[done] = False
        else:
            active[idx[done]] = False
        if not active.any():
            break
    dead = np.einsum("bii->bi", info) <= 0
    theta[dead] = np.nan
    return NewtonFit(theta=theta, information=info, loglik=ll, converged=~active, iterations=it)


def _ok(ll_new: np.ndarray, ll: np.ndarray) -> np.ndarray:
    return ll_new >= ll - 1e-9 * np.maximum(1.0, np.abs(ll))


def _step(ops: _Ops, counts: np.ndarray, theta: np.ndarray, step: np.ndarray, ll: np.ndarray, ties: str):
    """theta + step with its log-likelihood, score and information (computed once); the
    replicates whose log-likelihood decreased get the step halved (:func:`_halve`)."""
    cand = theta + step
    sc = _score_info(ops, counts, cand, ties)
    bad = ~_ok(sc[0], ll)
    if bad.any():
        fixed, _ = _halve(ops, counts[bad], theta[bad], 0.5 * step[bad], ll[bad], ties)
        cand[bad] = fixed
        sub = _score_info(ops, counts[bad], fixed, ties)
        for whole, part in zip(sc, sub):
            whole[bad] = part
    return cand, sc


def _halve(ops: _Ops, counts: np.ndarray, theta: np.ndarray, step: np.ndarray, ll: np.ndarray, ties: str):
    """theta + step, halved (per replicate) until the log-likelihood does not decrease."""
    lam = np.ones(theta.shape[0])
    for _ in range(40):
        cand = theta + lam[:, None] * step
        ll_new = _loglik(ops, counts, cand, ties)
        bad = ~_ok(ll_new, ll)
        if not bad.any():
            return cand, ll_new
        lam[bad] *= 0.5
    return theta + lam[:, None] * step, _loglik(ops, counts, theta + lam[:, None] * step, ties)


def vcov(info: np.ndarray) -> np.ndarray:
    """The inverse information matrix of one fit (p, p); NaN rows/columns where there is no
    information."""
    p = info.shape[0]
    ok = np.diag(info) > 0
    out = np.full((p, p), np.nan)
    out[np.ix_(ok, ok)] = np.linalg.inv(info[np.ix_(ok, ok)])
    return out


# ---------------------------------------------------------------------------------------------
# many replicates near one fit: the chord (fixed-information Newton) iteration
# ---------------------------------------------------------------------------------------------

#: chord steps before a replicate is handed to the full Newton iteration
CHORD_MAX_ITER = 40
#: a replicate whose estimate moves farther than this (log-odds) from the start is handed to Newton
CHORD_MAX_MOVE = 3.0
#: steps mixed by Anderson's acceleration
CHORD_DEPTH = 5
#: the step at which the chord iteration goes from single to double precision
CHORD_SINGLE_TOL = 1e-4


#: elements (cells x replicates) of one slice of the per-cell arithmetic: its temporaries stay in
#: the CPU's cache (a whole block's (cells x replicates) arrays are tens of MB: every pass over them
#: went to memory, three times slower)
_SLICE = 1 << 15


class CellDesign:
    """The design of one BTDesign as sparse matrices over its cells, for arrays laid out
    cells x replicates (C, B) and parameters (p, B): ``x_eta`` (C x (k - 1 + positions +
    covariates)) holds the linear predictor's columns (+1 / -1 for the two models, ``first`` in the
    judge's position column, the covariates), scaled by the factor that :meth:`score` needs (1/2
    for Davidson's half-predictor, -1 for the binomial's negated one); ``x_tau`` (C x n_tau) the
    judges' tie-propensity indicators (Davidson)."""

    def __init__(self, d: BTDesign) -> None:
        c, k = len(d.a), d.k
        rows = np.arange(c)
        inc = sp.csr_matrix((np.r_[np.ones(c), -np.ones(c)], (np.r_[rows, rows], np.r_[d.a, d.b])), shape=(c, k))
        x = sp.hstack([inc[:, d.free], sp.csr_matrix(d.eta_extra())], format="csr")
        self.davidson = d.ties == "davidson"
        self.ties = d.ties
        self.x_eta = (0.5 if self.davidson else -1.0) * x
        self.x_eta_t = self.x_eta.T.tocsr()
        self.abs_t = abs(self.x_eta_t)
        self.p_eta = x.shape[1]
        self.x_tau = sp.csr_matrix(d.tau_columns())
        self.x_tau_t = self.x_tau.T.tocsr()
        self.n_tau = self.x_tau.shape[1]
        self.single = (self.x_eta.astype(np.float32), self.x_eta_t.astype(np.float32), self.x_tau.astype(np.float32))

    def prepare(self, counts: np.ndarray) -> dict:
        """From counts laid out (C, 3, B): the battles per cell ``n`` (C, B) and the part of the
        score that does not depend on the parameters, ``const`` (p, B) (Davidson: the halved
        predictor's columns times a-wins minus b-wins, and the ties per judge; binomial: minus the
        negated columns times ``y``)."""
        na, nb_, nt = counts[:, 0], counts[:, 1], counts[:, 2]
        if self.davidson:
            const = np.concatenate([self.x_eta_t @ (na - nb_), self.x_tau_t @ np.ascontiguousarray(nt)])
            return {"n": na + nb_ + nt, "const": const}
        y = na + 0.5 * nt if self.ties == "half" else np.ascontiguousarray(na)
        return {"n": na + nb_ + nt if self.ties == "half" else na + nb_, "const": -(self.x_eta_t @ y)}

    def covered(self, n: np.ndarray) -> np.ndarray:
        """Whether every parameter has battles in each replicate ((C, B) battles per cell -> (B,))."""
        ok = (self.abs_t @ n > 0).all(axis=0)
        if self.davidson:
            ok &= (self.x_tau_t @ n > 0).all(axis=0)
        return ok

    def score(self, reps: dict, theta: np.ndarray) -> np.ndarray:
        """The score (p, B) at parameters theta (p, B) of the replicates :meth:`prepare` made:
        :func:`cell_terms`' score without the log-likelihood and the information, computed in
        slices of cells; in single precision when ``reps["n"]`` is float32 (:meth:`single_reps`).

        Davidson: with ``h = eta / 2``, ``e = exp(h)``, ``nu = exp(tau)`` and
        ``D = e + 1/e + nu``, P(a) - P(b) = (e - 1/e) / D and P(tie) = nu / D (h clipped to
        +-350, +-40 in single precision, where they are 0 or 1 to working precision); the score of
        h is ``a-wins - b-wins - n (P(a) - P(b))`` (that of eta half of it: ``x_eta`` holds the
        halves), that of tau ``ties - n P(tie)``. Binomial: with ``m = -eta``,
        n P(a) = n / (1 + exp(m)), the score of eta ``y - n P(a)``."""
        n = reps["n"]
        single = n.dtype == np.float32
        x_eta, x_eta_t, x_tau = self.single if single else (self.x_eta, self.x_eta_t, self.x_tau)
        lin = x_eta @ theta[:self.p_eta].astype(n.dtype)
        c, nb = lin.shape
        step = max(1, _SLICE // max(nb, 1))
        if not self.davidson:
            for c0 in range(0, c, step):
                _binomial_slice(lin[c0:c0 + step], n[c0:c0 + step], 80.0 if single else 700.0)
            return (x_eta_t @ lin).astype(float) + reps["const"]
        nu = np.exp(np.clip(theta[self.p_eta:], -700.0, 700.0))  # (n_tau, B)
        nu_c = (nu if self.n_tau == 1 else x_tau @ nu.astype(n.dtype)).astype(n.dtype)  # one judge: broadcast
        q = np.empty_like(lin)
        buf = np.empty((min(step, c), nb), dtype=n.dtype)
        for c0 in range(0, c, step):
            sl = slice(c0, c0 + step)
            _davidson_slice(lin[sl], nu_c if self.n_tau == 1 else nu_c[sl], n[sl], q[sl], buf[:len(q[sl])],
                            40.0 if single else 350.0)
        if self.n_tau == 1:  # the cells' sum as a BLAS product (numpy's axis-0 sum of float32 into doubles is slow)
            per_judge = (np.ones((1, c), dtype=q.dtype) @ q).astype(float)
        else:
            per_judge = self.x_tau_t @ q.astype(float)
        var = np.concatenate([(x_eta_t @ lin).astype(float), nu * per_judge])
        return np.subtract(reps["const"], var, out=var)

    @staticmethod
    def single_reps(reps: dict) -> dict:
        """The replicates of :meth:`prepare` for a single-precision score (the battles per cell in
        float32; the constant part stays double)."""
        return {"n": reps["n"].astype(np.float32), "const": reps["const"]}


def _davidson_slice(h, nu, n, q, buf, clip) -> None:
    """One slice of cells of :meth:`CellDesign.score` (Davidson): ``h`` becomes n (P(a) - P(b)),
    ``q`` n / D."""
    np.minimum(h, clip, out=h)
    np.maximum(h, -clip, out=h)
    e = np.exp(h, out=h)
    inv = np.divide(1.0, e, out=buf)
    np.add(e, inv, out=q)
    q += nu
    np.divide(n, q, out=q)
    np.subtract(e, inv, out=e)
    e *= q


def _binomial_slice(m, n, clip) -> None:
    """One slice of cells of :meth:`CellDesign.score` (binomial): ``m`` = -eta becomes n P(a)."""
    np.minimum(m, clip, out=m)
    e = np.exp(m, out=m)
    e += 1.0
    np.divide(n, e, out=e)


def _anderson(hist_x: list, hist_f: list, theta: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Anderson's (1965) mixing of the last chord steps, per replicate (column): the next iterate
    ``theta + f - (dX + dF) gamma`` with gamma minimising ``|f - dF gamma|`` (least squares on the
    differences of the last iterates and steps; Walker & Ni 2011), which for a linear problem is
    GMRES on the preconditioned system."""
    dx = np.stack([theta - x for x in hist_x])  # (m, p, B)
    df = np.stack([f - g for g in hist_f])
    gram = np.einsum("ipb,jpb->bij", df, df)
    rhs = np.einsum("ipb,pb->bi", df, f)
    m = gram.shape[1]
    ridge = 1e-12 * np.maximum(np.einsum("bii->b", gram), 1e-300)
    try:
        gamma = np.linalg.solve(gram + ridge[:, None, None] * np.eye(m)[None], rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return theta + f
    return theta + f - np.einsum("ipb,bi->pb", dx + df, gamma)


def chord_fit(cd: CellDesign, counts: np.ndarray, theta0: np.ndarray, inv0: np.ndarray, tol: float,
              max_iter: int = CHORD_MAX_ITER, depth: int = CHORD_DEPTH) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-likelihood fits of B count tables ``counts`` (C, 3, B) that lie near the table
    whose estimate is ``theta0`` (p,) and inverse information ``inv0`` (p, p) -- bootstrap
    replicates of it -- by the chord iteration ``theta <- theta + inv0 @ score(theta)`` (Newton's
    method with the information held at the start, Kantorovich's simplified Newton: inverted once
    and shared by all replicates, a step costs one score and one (p x p) @ (p x B) product),
    accelerated by Anderson mixing of the last ``depth`` steps (:func:`_anderson`). The fixed point
    is where the score is zero: the replicate's maximum, the same as Newton's (:func:`fit`).

    Returns the estimates (B, p) and a flag per replicate: True when its last step moved no
    parameter by more than ``tol`` (the estimate is then within a small multiple of ``tol`` of the
    maximum); False when a parameter has no battles in the replicate, the iteration did not settle
    within ``max_iter`` steps, or an estimate moved farther than :data:`CHORD_MAX_MOVE` from
    ``theta0`` (a model that won or lost all its battles: no finite maximum) -- those replicates
    are for the full Newton iteration (:func:`fit`)."""
    nb = counts.shape[2]
    reps = cd.prepare(counts)
    theta = np.repeat(np.asarray(theta0, dtype=float)[:, None], nb, axis=1)
    idx = np.flatnonzero(cd.covered(reps["n"]))  # the replicates iterated
    # first in single precision (half the memory traffic) to steps of about 1e-4 (its rounding stops
    # the steps near 1e-6), then in double precision from there: the fixed point is double precision's
    done, bad = _chord_phase(cd, CellDesign.single_reps(reps), theta, idx, theta0, inv0, CHORD_SINGLE_TOL,
                             max_iter, depth)
    idx = idx[~bad[idx]]
    done, _ = _chord_phase(cd, reps, theta, idx, theta0, inv0, tol, max_iter, depth)
    return theta.T, done


def _chord_phase(cd: CellDesign, reps: dict, theta: np.ndarray, idx: np.ndarray, theta0: np.ndarray,
                 inv0: np.ndarray, tol: float, max_iter: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Chord steps of the replicates ``idx`` (columns of ``theta`` (p, B), updated in place) until
    their steps are below ``tol``; (settled, handed on) flags over all B replicates."""
    nb = theta.shape[1]
    done = np.zeros(nb, dtype=bool)
    failed = np.zeros(nb, dtype=bool)
    cols = np.arange(len(idx))  # the iterated replicates' columns in sub (whose scores are computed)
    sub, sub_idx = ({k: v[:, idx] for k, v in reps.items()}, idx) if len(idx) < nb else (reps, idx)
    hist_x: list = []
    hist_f: list = []
    for _ in range(max_iter):
        if not len(idx):
            break
        cur = theta[:, idx]
        score = cd.score(sub, theta[:, sub_idx])
        f = inv0 @ (score if len(cols) == len(sub_idx) else score[:, cols])
        moved = np.abs(f).max(axis=0)
        fin = moved < tol
        nxt = _anderson(hist_x, hist_f, cur, f) if hist_x else cur + f
        nxt[:, fin] = cur[:, fin] + f[:, fin]
        theta[:, idx] = nxt
        bad = ~np.isfinite(nxt).all(axis=0) | (np.abs(nxt - theta0[:, None]).max(axis=0) > CHORD_MAX_MOVE)
        fin &= ~bad
        done[idx[fin]] = True
        failed[idx[bad]] = True
        hist_x = ([cur] + hist_x)[:depth]
        hist_f = ([f] + hist_f)[:depth]
        keep = ~(fin | bad)
        if keep.all():
            continue
        idx, cols = idx[keep], cols[keep]
        hist_x = [x[:, keep] for x in hist_x]
        hist_f = [g[:, keep] for g in hist_f]
        if len(idx) < 0.75 * len(sub_idx):  # drop the finished replicates' columns from the score's arrays
            sub = {k: v[:, cols] for k, v in sub.items()}
            sub_idx, cols = idx, np.arange(len(idx))
    return done, failed
