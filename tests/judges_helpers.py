"""Simulated judged evaluations for tests/test_judges*.py and benchmarks/calibration_judges.py.

Continuous scores: answer (s, i, e) of system s to item i (cluster k(i)), epoch e has the
people's score ``y = mu_s + b_i + c_k + eps`` (item effect b ~ N(0, sd_item^2) shared by the
systems: paired; cluster effect c ~ N(0, sd_cluster^2)); the judge's score is
``y + bias_s + d_k + a_i + eta`` with a per-system bias, a cluster-level judge error d_k (errors
correlated within clusters) and an item-level one a_i. The estimand of system s is mu_s (items and
clusters are redrawn every data set). ``n_labels`` items per system (all their epochs) carry
the people's score, a simple random sample of the system's items.

Binary scores: y ~ Bernoulli(p_s + c_k) with cluster shifts c_k = +-shift at random (so the
estimand is p_s); the judge reports y with system-specific sensitivity and specificity.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def simulate(rng, *, mu=(0.6, 0.5, 0.45), bias=(0.3, 0.0, -0.1), n_items=300, n_labels=100, epochs=1,
             n_clusters=None, sd_item=0.5, sd_cluster=0.3, sd_judge_cluster=0.3, sd_judge_item=0.2, sd_noise=0.8,
             judge_noise=0.4, same_items=False) -> pd.DataFrame:
    k = len(mu)
    G = n_items if n_clusters is None else n_clusters
    cl = rng.integers(0, G, n_items) if n_clusters is not None else np.arange(n_items)
    c = rng.normal(0, sd_cluster if n_clusters else 0.0, G)[cl]
    d = rng.normal(0, sd_judge_cluster if n_clusters else 0.0, G)[cl]
    b = rng.normal(0, sd_item, n_items)
    a = rng.normal(0, sd_judge_item, n_items)
    frames = []
    shared = rng.choice(n_items, n_labels, replace=False)
    for s in range(k):
        lab = np.zeros(n_items, bool)
        lab[shared if same_items else rng.choice(n_items, n_labels, replace=False)] = True
        for e in range(epochs):
            y = mu[s] + b + c + rng.normal(0, sd_noise, n_items)
            f = y + bias[s] + d + a + rng.normal(0, judge_noise, n_items)
            frames.append(pd.DataFrame({"system": f"s{s}", "item": np.arange(n_items), "epoch": e,
                                        "cluster": cl, "judge_score": f, "human_score": np.where(lab, y, np.nan)}))
    return pd.concat(frames, ignore_index=True)


def simulate_binary(rng, *, p=(0.7, 0.6), sens=(0.95, 0.75), spec=(0.7, 0.9), n_items=400, n_labels=150,
                    n_clusters=40, shift=0.1) -> pd.DataFrame:
    cl = rng.integers(0, n_clusters, n_items)
    sign = rng.choice([-1.0, 1.0], n_clusters)  # the cluster effects are a random sample too
    frames = []
    for s in range(len(p)):
        y = (rng.random(n_items) < p[s] + shift * sign[cl]).astype(float)
        j = np.where(y == 1, rng.random(n_items) < sens[s], rng.random(n_items) > spec[s]).astype(float)
        lab = np.zeros(n_items, bool)
        lab[rng.choice(n_items, n_labels, replace=False)] = True
        frames.append(pd.DataFrame({"system": f"s{s}", "item": np.arange(n_items), "cluster": cl,
                                    "judge_score": j, "human_score": np.where(lab, y, np.nan)}))
    return pd.concat(frames, ignore_index=True)


def fast_units(df: pd.DataFrame):
    """The Units of a simulated table built directly with numpy (one judge; every epoch of a
    labelled item labelled): the fast path of the coverage loops, checked against
    mixedeval's own reduction in tests/test_judges.py."""
    from mixedeval.workflows._judges_core import Units

    systems = sorted(df["system"].unique())
    s = pd.Categorical(df["system"], categories=systems).codes.astype(int)
    items = np.asarray(df["item"])
    n_items = int(items.max()) + 1
    key = s * n_items + items
    uniq, inv = np.unique(key, return_inverse=True)
    cnt = np.bincount(inv)
    f = np.bincount(inv, weights=df["judge_score"].to_numpy()) / cnt
    h = df["human_score"].to_numpy()
    lab_rows = ~np.isnan(h)
    lab = np.bincount(inv, weights=lab_rows.astype(float)) > 0
    y = np.full(len(uniq), np.nan)
    y[lab] = (np.bincount(inv, weights=np.where(lab_rows, h, 0.0)) / np.maximum(np.bincount(inv, weights=lab_rows), 1))[lab]
    g = np.where(lab, f, np.nan)
    clus = np.zeros(len(uniq), int)
    clus[inv] = np.asarray(df["cluster"])
    _, clus = np.unique(clus, return_inverse=True)
    return Units(system=(uniq // n_items).astype(int), item=(uniq % n_items).astype(int), cluster=clus,
                 f=f[:, None], labelled=lab, y=y, g=g[:, None], rows_unit=inv[lab_rows], rows_y=h[lab_rows],
                 rows_j=df["judge_score"].to_numpy()[lab_rows][:, None], n_clusters=int(clus.max()) + 1), systems
