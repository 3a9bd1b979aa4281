"""The calibrated item bank behind item subsets and adaptive testing (a private adapter).

A *calibration* is either the IRT fit of :func:`mixedeval.irt` (an ``IrtResult``) or the numpy
engine's :class:`mixedeval.inference._irt_numpy.IrtNumpyFit`; both have ``.items`` (item,
difficulty, discrimination, ...), ``.abilities`` (system, ability, std_error, ...), ``.model``
(``"rasch"`` / ``"2pl"``) and ``.responses`` (the calibration systems' answers). The package's
convention holds for both: ``logit P(correct) = discrimination * (ability - difficulty)``, the
abilities N(0, 1) for the 2PL and N(0, sigma^2) in logits for the Rasch model.

:class:`Bank` holds the item parameters as arrays in slope-intercept form on the standard normal
``z`` scale of the calibration population (``eta = alpha * z + beta``, ``alpha = discrimination *
sigma``, ``beta = -discrimination * difficulty``), so the posterior of a new system's ability is
computed by the engine's adaptive Gauss-Hermite pieces whatever engine calibrated the bank.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from ..errors import DataError
from ..inference._irt_numpy import Responses, adaptive_nodes, fit_em, posterior_modes, response_matrix

#: Gauss-Hermite nodes of the posterior of one system's ability (adaptive: exact far beyond need)
N_NODES = 41


@dataclass(frozen=True)
class Bank:
    """Item parameters of a calibration (arrays in the order of ``items``)."""

    items: tuple[str, ...]
    difficulty: np.ndarray
    discrimination: np.ndarray
    model: str
    sigma: float
    engine: str
    calibration: Responses | None  # the calibration systems' answers, columns in the order of ``items``
    source: Any = field(default=None, repr=False, compare=False)  # the calibration object (cache key)
    discrimination_se: Any = field(default=None, repr=False, compare=False)  # standard errors (2PL), or None

    @property
    def alpha(self) -> np.ndarray:
        return self.discrimination * self.sigma

    @property
    def beta(self) -> np.ndarray:
        return -self.discrimination * self.difficulty

    def shrunk(self) -> "Bank":
        """The bank with empirical-Bayes discriminations for scoring new systems (2PL with standard
        errors; otherwise the bank itself).

        Anchors are chosen for their estimated information, so their estimated discriminations
        are too large on average (selection bias, the winner's curse) and the ability posterior
        from their answers is too sure and pulled toward their difficulties. Each log
        discrimination ``x_i`` (delta-method SE ``s_i = se_i / a_i``) is replaced by its posterior
        mean under a normal prior fitted to the bank by the method of moments,
        ``mu + tau^2 / (tau^2 + s_i^2) (x_i - mu)`` with ``mu`` the mean and ``tau^2`` the variance
        of the ``x_i`` minus the mean ``s_i^2`` (items with ``s_i < 1``); this is Tweedie's
        correction of selection bias for a normal likelihood (Efron 2011, "Tweedie's formula and
        selection bias", JASA). Items with a discrimination <= 0 are left as they are."""
        se = self.discrimination_se
        if self.model != "2pl" or se is None:
            return self
        a = self.discrimination
        pos = a > 0
        x = np.log(np.where(pos, a, 1.0))
        s = np.where(pos & np.isfinite(se), np.asarray(se, dtype=float) / np.where(pos, a, 1.0), np.inf)
        ok = pos & (s < 1)
        if ok.sum() < 10:
            return self
        mu = float(np.mean(x[ok]))
        tau2 = max(float(np.var(x[ok]) - np.mean(s[ok] ** 2)), 1e-4)
        shrink = np.where(np.isfinite(s), tau2 / (tau2 + s ** 2), 0.0)
        new = np.where(pos, np.exp(mu + shrink * (x - mu)), a)
        return Bank(self.items, self.difficulty, new, self.model, self.sigma, self.engine, self.calibration,
                    self.source, None)

    def index(self, names: Any, what: str) -> np.ndarray:
        """Positions of item names in the bank; unknown names are a DataError."""
        pos = {n: i for i, n in enumerate(self.items)}
        names = [str(n) for n in names]
        unknown = [n for n in names if n not in pos]
        if unknown:
            raise DataError(f"{what}: {len(unknown)} item(s) are not in the calibrated bank "
                            f"({', '.join(unknown[:5])}{', ...' if len(unknown) > 5 else ''}); calibrate them first "
                            "or drop them")
        return np.array([pos[n] for n in names], dtype=int)

    def prob(self, theta: np.ndarray, idx: np.ndarray | slice = slice(None)) -> np.ndarray:
        """P(correct) at abilities ``theta`` (any shape, ability scale) for the items ``idx``."""
        a, b = self.discrimination[idx], self.difficulty[idx]
        return special.expit(a * (np.asarray(theta)[..., None] - b))

    def information(self, theta: np.ndarray, idx: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Fisher information ``discrimination^2 p (1 - p)`` at abilities ``theta`` (ability scale)."""
        p = self.prob(theta, idx)
        return self.discrimination[idx] ** 2 * p * (1 - p)

    def expected_information(self) -> np.ndarray:
        """Each item's information averaged over the calibration population N(0, sigma^2) (a
        2,001-point grid over +-8 SD: a sharp item's information curve is too narrow for a
        Gauss-Hermite rule)."""
        x = np.linspace(-8.0, 8.0, 2001)
        w = np.exp(-0.5 * x ** 2)
        w /= w.sum()
        out = np.empty(len(self.items))
        for lo in range(0, len(self.items), 500):
            sl = slice(lo, lo + 500)
            out[sl] = w @ self.information(self.sigma * x, sl)
        return out


def _attr(obj: Any, name: str) -> Any:
    v = getattr(obj, name, None)
    return v() if callable(v) and not isinstance(v, pd.DataFrame) else v


def _sigma(calibration: Any, model: str) -> float:
    if model == "2pl":
        return 1.0
    s = _attr(calibration, "sigma")
    if s is not None and np.isfinite(float(s)) and float(s) > 0:
        return float(s)
    ab = _attr(calibration, "abilities")
    # the ability SD from the conditional modes and their conditional variances (E var + var E)
    est = pd.to_numeric(ab["ability"]).to_numpy(dtype=float)
    se = pd.to_numeric(ab["std_error"]).to_numpy(dtype=float) if "std_error" in ab else np.zeros_like(est)
    return float(np.sqrt(np.nanvar(est) + np.nanmean(se ** 2)))


def _calibration_responses(calibration: Any, items: tuple[str, ...]) -> Responses | None:
    data = _attr(calibration, "responses")
    if data is None:
        return None
    prov = getattr(calibration, "provenance", None) or {}
    names = {k: prov.get(k, k) if isinstance(prov.get(k, k), str) else k for k in ("score", "system", "item")}
    try:
        resp = response_matrix(data, score=names["score"], system=names["system"], item=names["item"],
                               trials="trials" if isinstance(data, pd.DataFrame) and "trials" in data.columns else None)
    except DataError:
        return None
    pos = {n: j for j, n in enumerate(resp.items)}
    cols = [pos.get(n, -1) for n in items]
    y = np.zeros((len(resp.systems), len(items)))
    n = np.zeros_like(y)
    ok = np.array([c >= 0 for c in cols])
    if ok.any():
        src = np.array([c for c in cols if c >= 0])
        y[:, ok], n[:, ok] = resp.y[:, src], resp.n[:, src]
    return Responses(y, n, resp.systems, items)


def _finite_items(names: tuple[str, ...], b: np.ndarray, a: np.ndarray, se: np.ndarray | None):
    """The items with finite parameters. Items answered alike by every calibration system have
    none (their difficulty runs off to the edge of the scale; the fit flags them 'no
    information'): they are left out of the bank with a warning, as they carry no information
    about any system; a calibration without any usable item is a DataError."""
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.all():
        return names, b, a, se
    bad = [names[i] for i in np.flatnonzero(~ok)]
    if ok.sum() < 2:
        raise DataError(f"the calibration has {int(ok.sum())} item(s) with finite parameters ({len(bad)} without, e.g. "
                        f"{', '.join(bad[:5])}); calibrate on items that some systems answer right and others wrong")
    warnings.warn(f"the calibration has {len(bad)} item(s) without finite parameters ({', '.join(bad[:5])}"
                  f"{', ...' if len(bad) > 5 else ''}; e.g. answered alike by every system): they carry no information "
                  "and are left out of the item bank", stacklevel=3)
    keep = np.flatnonzero(ok)
    return (tuple(names[i] for i in keep), b[keep], a[keep], None if se is None else np.asarray(se, dtype=float)[keep])


def as_bank(calibration: Any) -> Bank:
    """The :class:`Bank` of an IRT calibration (``IrtResult`` or the numpy engine's fit)."""
    if isinstance(calibration, Bank):
        return calibration
    items = _attr(calibration, "items")
    model = _attr(calibration, "model")
    if not isinstance(items, pd.DataFrame) or model is None:
        raise DataError("calibration must be an IRT fit (me.irt(...) or the numpy engine's fit) with .items, "
                        f".abilities, .model and .responses; got {type(calibration).__name__}")
    model = str(model).lower()
    if model not in ("rasch", "2pl"):
        raise DataError(f"calibration model {model!r} is not supported here; calibrate a 'rasch' or '2pl' model")
    for col in ("item", "difficulty"):
        if col not in items.columns:
            raise DataError(f"the calibration's item table has no {col!r} column")
    names = tuple(str(i) for i in items["item"])
    b = pd.to_numeric(items["difficulty"]).to_numpy(dtype=float)
    a = (pd.to_numeric(items["discrimination"]).to_numpy(dtype=float) if "discrimination" in items.columns
         else np.ones(len(b)))
    engine = str(getattr(calibration, "engine", None) or (getattr(calibration, "provenance", None) or {}).get("engine", "R"))
    se = (pd.to_numeric(items["discrimination_std_error"]).to_numpy(dtype=float)
          if model == "2pl" and "discrimination_std_error" in items.columns else None)
    names, b, a, se = _finite_items(names, b, a, se)
    return Bank(names, b, a, model, _sigma(calibration, model), engine, _calibration_responses(calibration, names),
                calibration, se)


# ----------------------------------------------------------------------------- posterior of new systems
@dataclass(frozen=True)
class Posterior:
    """Each system's ability posterior on adaptive nodes: ``theta`` and ``weight`` (S x K), the
    posterior mode and its conditional SD (ability scale)."""

    theta: np.ndarray
    weight: np.ndarray
    mode: np.ndarray
    mode_se: np.ndarray

    @property
    def mean(self) -> np.ndarray:
        return np.sum(self.weight * self.theta, axis=1)

    @property
    def sd(self) -> np.ndarray:
        m = self.mean
        return np.sqrt(np.maximum(np.sum(self.weight * self.theta ** 2, axis=1) - m ** 2, 0.0))


def posterior(bank: Bank, y: np.ndarray, n: np.ndarray) -> Posterior:
    """Ability posteriors of systems with correct counts ``y`` out of ``n`` trials per bank item
    (S x I, 0 trials where not answered), under the calibration population's N(0, sigma^2) prior."""
    cols = np.nonzero(n.sum(axis=0) > 0)[0]  # only the answered items carry likelihood
    y, n = y[:, cols], n[:, cols]
    alpha, beta = bank.alpha[cols], bank.beta[cols]
    mode, curv = posterior_modes(y, n, alpha, beta)
    nodes = adaptive_nodes(y, n, alpha, beta, mode, curv, N_NODES)
    return Posterior(bank.sigma * nodes.z, nodes.post, bank.sigma * mode, bank.sigma / np.sqrt(curv))


# ----------------------------------------------------------------------------- cross-fitted banks
#: fold banks of recent calibrations: (id of the Responses, model, folds, seed) -> (responses, fold ids, banks)
_FOLD_CACHE: dict[tuple, tuple] = {}
_FOLD_CACHE_SIZE = 4
#: the fold refits only measure error sizes: a looser tolerance and a cap on the EM iterations
#: (warm-started from the full calibration, they move little)
FOLD_TOL, FOLD_MAX_ITER = 1e-5, 60


def fold_banks(bank: Bank, rows: np.ndarray, n_folds: int, random_state: Any) -> tuple[np.ndarray, list[Bank]]:
    """Cross-fitting: the calibration systems ``rows`` split into ``n_folds`` folds, and for each
    fold the bank refitted without that fold's systems (numpy engine, same model, warm-started
    from the bank's parameters; its ``calibration`` holds the answers it was fitted on). Returns each row's fold and the fold banks (cached per calibration)."""
    cal = bank.calibration
    assert cal is not None
    owner = bank.source if bank.source is not None else cal
    key = (id(owner), bank.model, n_folds, repr(random_state), len(rows))
    hit = _FOLD_CACHE.get(key)
    if hit is not None and hit[0] is owner:
        return hit[1], hit[2]
    rng = np.random.default_rng(0 if random_state is None else random_state)  # None: a fixed split
    fold = np.empty(len(rows), dtype=int)
    fold[rng.permutation(len(rows))] = np.arange(len(rows)) % n_folds
    banks = []
    start = (bank.alpha, bank.beta, bank.sigma)
    for f in range(n_folds):
        train = np.setdiff1d(np.arange(cal.y.shape[0]), rows[fold == f])
        em = fit_em(cal.y[train], cal.n[train], bank.model, start=start, tol=FOLD_TOL, max_iter=FOLD_MAX_ITER,
                    n_quadrature=7 if len(bank.items) >= 100 else 15)
        if bank.model == "2pl":
            a, b, s = em["alpha"], -em["beta"] / em["alpha"], 1.0
        else:
            a, b, s = np.ones(len(bank.items)), -em["beta"], float(em["sigma"])
        train_resp = Responses(cal.y[train], cal.n[train], tuple(np.asarray(cal.systems, dtype=object)[train]),
                               cal.items)  # for anchor selections that use the answers (clusters)
        # the fold fit's standard errors: the full fit's scaled to the fold's number of systems
        se = None if bank.discrimination_se is None else bank.discrimination_se * math.sqrt(cal.y.shape[0] / len(train))
        banks.append(Bank(bank.items, b, a, bank.model, s, "numpy", train_resp, None, se))
    if len(_FOLD_CACHE) >= _FOLD_CACHE_SIZE:
        _FOLD_CACHE.pop(next(iter(_FOLD_CACHE)))
    _FOLD_CACHE[key] = (owner, fold, banks)
    return fold, banks
