"""Battle tables with known truth for the Bradley-Terry tests and benchmarks.

* :func:`simulate_battles`: independent battles from Davidson's model with a position bias per
  judge and a tie propensity;
* :func:`simulate_prompt_correlated`: battles grouped in prompts; on prompt p model m has
  strength ``s_m + u_mp`` with ``u_mp ~ N(0, sd_prompt^2)`` shared by all battles of that prompt,
  so the battles of one prompt are correlated (no ties, no position bias);
* :func:`projected_strengths`: the estimand of the correlated design -- the strengths the
  Bradley-Terry MLE converges to as the number of prompts grows: the BT fit to the expected
  win counts, with P(a beats b) = E[plogis(s_a - s_b + u)], u ~ N(0, 2 sd_prompt^2), by
  Gauss-Hermite quadrature; pairs are drawn uniformly, so every pair has the same weight.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def _pairs(rng: np.random.Generator, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    return a, b


def simulate_battles(*, k: int = 6, n: int = 3000, n_prompts: int = 300, strengths=None, position=0.3,
                     nu: float = 0.8, judges=None, seed: int = 1, positions: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
    """Davidson battles (independent); returns the table and the true strengths. The position bias
    of judge i is ``position * (1 + i)``; with ``positions`` the answer shown first is drawn at
    random and recorded in a ``position`` column ("a_first" / "b_first"), else it is model_a's."""
    rng = np.random.default_rng(seed)
    s = rng.normal(size=k) if strengths is None else np.asarray(strengths, dtype=float)
    a, b = _pairs(rng, k, n)
    jd = rng.choice(judges, n) if judges else None
    h = np.asarray([position * (1 + i) for i in range(len(judges))])[np.searchsorted(judges, jd)] if judges else position
    first = np.where(rng.random(n) < 0.5, 1, -1) if positions else np.ones(n, dtype=int)
    eta = s[a] - s[b] + first * h
    pa, pb = np.exp(eta / 2), np.exp(-eta / 2)
    den = pa + pb + nu
    u = rng.random(n)
    w = np.where(u < pa / den, "model_a", np.where(u < (pa + pb) / den, "model_b", "tie"))
    df = pd.DataFrame({"model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b], "winner": w,
                       "prompt": [f"p{i}" for i in rng.integers(0, n_prompts, n)]})
    if judges:
        df["judge"] = jd
    if positions:
        df["position"] = np.where(first == 1, "a_first", "b_first")
    return df, s


def simulate_prompt_correlated(*, strengths, n_prompts: int, per_prompt: int, sd_prompt: float,
                               seed: int) -> pd.DataFrame:
    """Battles grouped in prompts with prompt-level model effects (see the module docstring)."""
    rng = np.random.default_rng(seed)
    s = np.asarray(strengths, dtype=float)
    k = len(s)
    n = n_prompts * per_prompt
    prompt = np.repeat(np.arange(n_prompts), per_prompt)
    u = rng.normal(0.0, sd_prompt, size=(n_prompts, k))
    a, b = _pairs(rng, k, n)
    # the first-shown side is random, so there is no position bias
    eta = s[a] - s[b] + u[prompt, a] - u[prompt, b]
    win = rng.random(n) < 1.0 / (1.0 + np.exp(-eta))
    return pd.DataFrame({"model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b],
                         "winner": np.where(win, "model_a", "model_b"), "prompt": prompt})


def projected_strengths(strengths, sd_prompt: float, n_nodes: int = 80) -> np.ndarray:
    """The Bradley-Terry projection of the correlated design (strengths relative to model 0)."""
    s = np.asarray(strengths, dtype=float)
    k = len(s)
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    w = w / w.sum()
    sd = np.sqrt(2.0) * sd_prompt
    d = s[:, None] - s[None, :]
    p = (w[None, None, :] / (1.0 + np.exp(-(d[:, :, None] + sd * x[None, None, :])))).sum(axis=2)
    theta = np.zeros(k)
    off = ~np.eye(k, dtype=bool)
    for _ in range(100):
        mu = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
        g = ((p - mu) * off).sum(axis=1)
        wmat = mu * (1 - mu) * off
        h = np.diag(wmat.sum(axis=1)) - wmat
        step = np.linalg.solve(h[1:, 1:], g[1:])
        theta[1:] += step
        if np.abs(step).max() < 1e-13:
            break
    return theta


def simulate_voter_prompt(*, strengths, n_prompts: int, per_prompt: int, n_judges: int, sd_prompt: float,
                          sd_judge: float, seed: int) -> pd.DataFrame:
    """Battles with prompt and voter (judge) effects: on prompt p judged by voter j model m has
    strength ``s_m + u_mp + v_mj``, ``u ~ N(0, sd_prompt^2)``, ``v ~ N(0, sd_judge^2)``; each battle's
    voter drawn uniformly from ``n_judges`` (voters and prompts crossed). The estimand is
    :func:`projected_strengths` with ``sd = sqrt(sd_prompt^2 + sd_judge^2)``."""
    rng = np.random.default_rng(seed)
    s = np.asarray(strengths, dtype=float)
    k = len(s)
    n = n_prompts * per_prompt
    prompt = np.repeat(np.arange(n_prompts), per_prompt)
    judge = rng.integers(0, n_judges, n)
    u = rng.normal(0.0, sd_prompt, size=(n_prompts, k))
    v = rng.normal(0.0, sd_judge, size=(n_judges, k))
    a, b = _pairs(rng, k, n)
    eta = s[a] - s[b] + u[prompt, a] - u[prompt, b] + v[judge, a] - v[judge, b]
    win = rng.random(n) < 1.0 / (1.0 + np.exp(-eta))
    return pd.DataFrame({"model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b],
                         "winner": np.where(win, "model_a", "model_b"), "prompt": prompt, "judge": judge})
