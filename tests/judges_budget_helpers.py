"""Pilots for the label-budget tests and benchmarks/calibration_label_budget.py: two systems
whose people's scores carry system-specific cluster effects (the difference between the systems
varies from cluster to cluster, so clusters do not cancel in the paired difference), and the
i.i.d. counterpart (every item its own cluster).

Answer of system s to item i in cluster k: people's score ``y = mu_s + b_i + c_k + e_sk + eps``
(item effect b shared by the systems, cluster effect c shared, e_sk ~ N(0, sd_sys_cluster^2)
specific to the system); the judge's score ``f = y + bias_s + d_sk + a_si + eta`` (its own
system-specific cluster and item errors). ``n_labels`` items carry the people's score, the same
items for both systems (a simple random sample of the items). Clusters and items are redrawn in
every data set: the estimand is mu_0 - mu_1.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

MU = (0.6, 0.4)
BIAS = (0.3, -0.1)


def pilot_data(rng: np.random.Generator, *, n_items: int = 400, n_clusters: int | None = 40, n_labels: int = 100,
               sd_item: float = 0.5, sd_cluster: float = 0.3, sd_sys_cluster: float = 0.2, sd_judge_cluster: float = 0.2,
               sd_judge_item: float = 0.3, sd_noise: float = 0.8, judge_noise: float = 0.4) -> pd.DataFrame:
    G = n_clusters or n_items
    if n_clusters:
        cl = np.repeat(np.arange(G), int(np.ceil(n_items / G)))[:n_items]
    else:
        cl = np.arange(n_items)
        sd_cluster = sd_sys_cluster = sd_judge_cluster = 0.0
    b = rng.normal(0, sd_item, n_items)
    c = rng.normal(0, sd_cluster, G)[cl]
    lab = np.zeros(n_items, bool)
    lab[rng.choice(n_items, min(n_labels, n_items), replace=False)] = True
    frames = []
    for s in range(2):
        y = MU[s] + b + c + rng.normal(0, sd_sys_cluster, G)[cl] + rng.normal(0, sd_noise, n_items)
        f = (y + BIAS[s] + rng.normal(0, sd_judge_cluster, G)[cl] + rng.normal(0, sd_judge_item, n_items)
             + rng.normal(0, judge_noise, n_items))
        frames.append(pd.DataFrame({"system": f"s{s}", "item": np.arange(n_items), "cluster": cl,
                                    "judge_score": f, "human_score": np.where(lab, y, np.nan)}))
    return pd.concat(frames, ignore_index=True)
