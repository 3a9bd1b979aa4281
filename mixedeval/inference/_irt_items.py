"""Item statistics beside the IRT fit: classical ones (proportion correct, item-rest correlation),
the simulation-based item fit, information, and the flags with their reasons.

Item fit (DHARMa's idea applied per item). The statistic is the item's outfit mean square
``mean_s (y_si - n_si p_si)^2 / (n_si p_si (1 - p_si))`` over the systems that answered it
(Wright & Masters 1982), ``p_si`` the fitted probability. Its null distribution is not taken from
an asymptotic formula (which fails for extreme items and few systems): ``n_sim`` response
matrices are simulated from the fitted model, conditionally on the estimated abilities and item
parameters (``y* ~ Binomial(n_si, p_si)``), the statistic is recomputed for each, and the item's
p-value is ``(1 + #{sim >= observed}) / (n_sim + 1)`` (upper tail: more noise than the model
allows, the signature of mis-keyed, ambiguous or guessable items). Because the parameters were
estimated from the observed data and not re-estimated for each simulation, the test is
conservative (the observed statistic is pulled towards its expectation); p-values are adjusted
over items by Benjamini-Hochberg.

Information: ``I_i(theta) = a_i^2 p_i(theta) (1 - p_i(theta))`` with ``p_i(theta) =
logistic(a_i (theta - b_i))`` (a_i = 1 for Rasch); the test information is their sum and the
standard error of an ability estimated from the whole test is ``1 / sqrt(I(theta))``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special, stats

from .. import _resources as res
from .._random import as_generator

#: simulations of the item fit timed before the whole loop is judged against the time limit
FIRST_BLOCK = 10


def eta_matrix(a: np.ndarray, b: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """systems x items linear predictor ``a_i (theta_s - b_i)``."""
    return a[None, :] * (theta[:, None] - b[None, :])


def outfit(y: np.ndarray, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Outfit mean square per item (columns) over the cells with trials (``n > 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z2 = (y - n * p) ** 2 / (n * p * (1.0 - p))
    z2 = np.where(n > 0, z2, np.nan)
    with np.errstate(invalid="ignore"):
        return np.nanmean(z2, axis=0) if z2.size else np.zeros(0)


def item_fit(y: np.ndarray, n: np.ndarray, p: np.ndarray, *, n_sim: int, random_state) -> tuple[np.ndarray, np.ndarray]:
    """(observed outfit, simulation p-value) per item (see the module docstring)."""
    obs = outfit(y, n, p)
    if n_sim <= 0:
        return obs, np.full(obs.shape, np.nan)
    rng = as_generator(random_state)
    ni = n.astype(np.int64)
    pc = np.clip(p, 1e-12, 1 - 1e-12)
    exceed = np.zeros(obs.shape)
    guard = res.LoopGuard("the item-fit test of me.irt", int(n_sim), count=f"n_sim={res.format_count(n_sim)}",
                          unit="simulations", fix="Lower n_sim (default 200; 0 skips the item-fit test) or raise the "
                                                  "time limit")
    first = min(int(n_sim), FIRST_BLOCK)
    for k in range(int(n_sim)):
        ys = rng.binomial(ni, pc)
        sim = outfit(ys, n, p)
        exceed += np.nan_to_num(sim, nan=-np.inf) >= obs - 1e-12
        if k + 1 == first:
            guard.block_done(first)
    pval = (1.0 + exceed) / (n_sim + 1.0)
    return obs, np.where(np.isfinite(obs), pval, np.nan)


def item_rest(y: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(item-rest correlation, one-sided p-value that it is below 0) per item: the Pearson
    correlation over systems between the item's proportion correct and the proportion correct on
    the other items (Fisher's z for the p-value)."""
    tot_y, tot_n = y.sum(axis=1), n.sum(axis=1)
    k = y.shape[1]
    r = np.full(k, np.nan)
    pv = np.full(k, np.nan)
    for i in range(k):
        ok = n[:, i] > 0
        rest_n = tot_n[ok] - n[ok, i]
        good = rest_n > 0
        if good.sum() < 4:
            continue
        xi = (y[ok, i] / n[ok, i])[good]
        xr = ((tot_y[ok] - y[ok, i]) / np.where(rest_n > 0, rest_n, 1))[good]
        if np.std(xi) == 0 or np.std(xr) == 0:
            continue
        r[i] = float(np.corrcoef(xi, xr)[0, 1])
        z = np.arctanh(np.clip(r[i], -0.999999, 0.999999)) * np.sqrt(good.sum() - 3)
        pv[i] = float(stats.norm.cdf(z))
    return r, pv


def information(a: np.ndarray, b: np.ndarray, abilities: np.ndarray) -> np.ndarray:
    """abilities x items Fisher information ``a^2 p (1 - p)``."""
    p = special.expit(eta_matrix(a, b, np.asarray(abilities, dtype=float)))
    return a[None, :] ** 2 * p * (1.0 - p)


#: a difficulty or discrimination standard error above this (logits) flags the estimate as unstable
UNSTABLE_SE = 10.0


def item_flags(items: pd.DataFrame, *, alpha: float, min_discrimination: float, level: float,
               dif_name: str | None) -> list[str]:
    """The reasons an item is flagged ('; '-joined, '' when none)."""
    out = []
    for r in items.itertuples(index=False):
        why = []
        if r.p_correct in (0.0, 1.0) and r.n_systems_varying == 0:
            why.append(f"no information: every system answered it {'correctly' if r.p_correct == 1 else 'wrongly'}")
        a, lo, hi = r.discrimination, r.discrimination_conf_low, r.discrimination_conf_high
        if np.isfinite(a) and a < 0:
            sure = np.isfinite(hi) and hi < 0
            why.append(f"negative discrimination {a:.2f} ({int(round(100 * level))}% CI {lo:.2f} to {hi:.2f}"
                       f"{', excludes 0' if sure else ''}): stronger systems fail it more often; likely mis-keyed or "
                       "ambiguous")
        elif np.isfinite(a) and a < min_discrimination:
            why.append(f"near-zero discrimination {a:.2f} (< {min_discrimination:g}): it hardly separates the systems")
        if np.isfinite(r.item_rest_p_value) and r.item_rest_p_value < alpha and not (np.isfinite(a) and a < 0):
            why.append(f"negative item-rest correlation {r.item_rest_correlation:.2f} (one-sided p = "
                       f"{r.item_rest_p_value:.2g}): likely mis-keyed")
        if np.isfinite(r.fit_p_adj) and r.fit_p_adj < alpha:
            why.append(f"misfit: outfit {r.outfit:.2f} (1 expected; simulation p = {r.fit_p_value:.2g}, "
                       f"BH-adjusted {r.fit_p_adj:.2g})")
        se = max(np.nan_to_num(r.difficulty_std_error, nan=0.0), np.nan_to_num(r.discrimination_std_error, nan=0.0))
        if se > UNSTABLE_SE:
            which = "difficulty" if se == r.difficulty_std_error else "discrimination"
            why.append(f"unstable estimate: standard error {se:.3g} of the {which} (the item separates the "
                       "systems almost perfectly, or hardly at all: no finite maximum-likelihood estimate)")
        dp = getattr(r, "dif_p_adj", np.nan)
        if dif_name is not None and np.isfinite(dp) and dp < alpha:
            why.append(f"DIF by {dif_name}: likelihood-ratio p = {r.dif_p_value:.2g} (Holm-adjusted {dp:.2g})")
        out.append("; ".join(why))
    return out
