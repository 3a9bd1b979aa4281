"""The interval options of :func:`mixedeval.bradley_terry`: ``interval="sandwich"`` with its
``cluster``, LMArena's reweighting (``reweight="pair"``) and arena-rank's estimator
(``estimator="arena-rank"``).

* ``interval="bootstrap"`` (default): the unit bootstrap (:mod:`._bt_bootstrap`): prompts
  (``cluster="prompt"``, the default with a prompt column), judges (``cluster="judge"``) or both
  (``cluster=("judge", "prompt")``: prompts and judges drawn independently, a battle weighted by
  the product of its prompt's and its judge's counts);
* ``interval="sandwich"``: the sandwich covariance (:mod:`mixedeval.inference._bt_sandwich`),
  clustered by ``cluster``: "prompt" (the default with a prompt column), "judge", ("judge",
  "prompt") (Cameron-Gelbach-Miller two-way) or "battle" (every battle its own cluster: arena-rank's
  unclustered sandwich, the default without a prompt column). Clustered intervals use CR1
  (``G/(G-1)``) and Student's t with ``G - 1`` df.
* ``reweight="pair"``: every battle weighs ``1 / max(n_pair, min_pair_battles)``, ``n_pair`` the
  battles of its pair of models (either order), as arena-rank's ``reweighted=True``
  (``min_pair_count=50``): each pair counts about equally however often it was sampled.
* ``estimator="arena-rank"``: arena-rank 0.1.1's model exactly -- ties as half wins, no judge or
  position terms, covariates standardised (mean 0, population SD 1 over the battles) with the ridge
  ``reg = 1`` on the mean log-likelihood (its contextual Bradley-Terry; weights rescaled to mean
  1), and its sandwich's ``hessian_reg``; its ratings are the Elo column at anchor None and
  anchor_rating 1000 (``1000 + 400 / ln(10) * (s - mean s)``).
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import DataError
from ..inference import _bt_sandwich as sw

INTERVALS = ("bootstrap", "sandwich")
REWEIGHTS = (None, "pair")
ESTIMATORS = ("ml", "arena-rank")
#: the column holding the battles' combined weights in the working copy of the table
WEIGHT_COLUMN = "__mixedeval_weight__"
_CLUSTER_WORDS = {"prompt": "prompt", "judge": "judge", "voter": "judge", "battle": "battle"}


def check_interval(interval: Any) -> str:
    if interval not in INTERVALS:
        raise DataError(f"interval must be 'bootstrap' or 'sandwich'; got {interval!r}")
    return interval


def check_cluster(cluster: Any, interval: str, prompt: str | None, judge: str | None) -> tuple[str, ...] | None:
    """The clustering dimensions as a sorted tuple: ("battle",), ("prompt",), ("judge",) or
    ("judge", "prompt"); None: the bootstrap's defaults (prompts, or rows)."""
    if cluster is None:
        if interval == "bootstrap":
            return None
        return ("prompt",) if prompt else ("battle",)
    items = [c.strip() for c in cluster.split(",")] if isinstance(cluster, str) else cluster
    try:
        dims = tuple(sorted({_CLUSTER_WORDS[c] for c in items}))
    except (KeyError, TypeError):
        raise DataError(f"cluster must be 'prompt', 'judge', ('judge', 'prompt') or 'battle'; got {cluster!r}") \
            from None
    if not dims or ("battle" in dims and len(dims) > 1):
        raise DataError(f"cluster must be 'prompt', 'judge', ('judge', 'prompt') or 'battle'; got {cluster!r}")
    if dims == ("battle",) and interval == "bootstrap":
        raise DataError("cluster='battle' is the sandwich's (interval='sandwich'); the bootstrap resamples rows "
                        "when the table has no prompt column")
    for dim, col in (("prompt", prompt), ("judge", judge)):
        if dim in dims and not col:
            raise DataError(f"cluster={cluster!r} needs a {dim} column ({dim}=...)")
    return dims


def check_estimator(estimator: Any, reweight: Any, min_pair_battles: Any, ties: str, prompt_effect: Any,
                    judge_effect: Any) -> None:
    if estimator not in ESTIMATORS:
        raise DataError(f"estimator must be 'ml' or 'arena-rank'; got {estimator!r}")
    if reweight not in REWEIGHTS:
        raise DataError(f"reweight must be None or 'pair' (LMArena's inverse pair frequency); got {reweight!r}")
    if isinstance(min_pair_battles, bool) or not isinstance(min_pair_battles, (int, float, np.integer, np.floating)) \
            or not (min_pair_battles >= 1 and np.isfinite(min_pair_battles)):
        raise DataError(f"min_pair_battles must be a number >= 1 (arena-rank: 50), got {min_pair_battles!r}")
    if estimator == "arena-rank" and (ties == "drop" or prompt_effect is not None or judge_effect != "fixed"):
        raise DataError("estimator='arena-rank' is arena-rank's model (ties as half wins, no random effects): "
                        "leave ties, prompt_effect and judge_effect at their defaults")


def pair_weights(df: pd.DataFrame, model_a: str, model_b: str, min_pair_battles: float) -> np.ndarray:
    """``1 / max(n_pair, min_pair_battles)`` per battle (arena-rank's ``reweighted=True``)."""
    a, b = df[model_a].astype(str).to_numpy(), df[model_b].astype(str).to_numpy()
    lo, hi = np.where(a < b, a, b), np.where(a < b, b, a)
    codes, _ = pd.factorize(pd.MultiIndex.from_arrays([lo, hi]))
    n_pair = np.bincount(codes)[codes].astype(float)
    return 1.0 / np.maximum(n_pair, float(min_pair_battles))


def working_table(df: pd.DataFrame, model_a: str, model_b: str, weight: str | None, reweight: str | None,
                  min_pair_battles: float, estimator: str, covariates: list[str]) -> tuple[pd.DataFrame, str | None]:
    """The table the design is built from (a new frame when anything changes; the user's is never
    modified) and its weight column: the battles' weights times the pair weights; with
    ``estimator="arena-rank"`` and covariates, weights rescaled to mean 1 and the covariates
    standardised (arena-rank's ``ContextualPairDataset``)."""
    arena_cov = estimator == "arena-rank" and bool(covariates)
    if reweight is None and not arena_cov:
        return df, weight
    w = np.ones(len(df)) if weight is None else pd.to_numeric(df[weight], errors="coerce").to_numpy(dtype=float)
    if reweight == "pair":
        w = w * pair_weights(df, model_a, model_b, min_pair_battles)
    new = {WEIGHT_COLUMN: w}
    if arena_cov:
        if reweight == "pair":
            new[WEIGHT_COLUMN] = w / w.mean()
        for c in covariates:
            x = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
            sd = x.std()
            new[c] = (x - x.mean()) / (sd if sd > 0 else 1.0)
    return df.assign(**new), WEIGHT_COLUMN


def arena_hessian_reg(d: Any, n_battles: int, covariates: bool) -> float:
    """arena-rank's diagonal ``hessian_reg`` in the sum-form Hessian: ``1e-5 * n`` for unweighted
    battles or with covariates (its Hessian is a mean there), ``1e-5`` for reweighted battles
    without covariates (its Hessian is a weighted sum)."""
    unweighted = np.allclose(d.sq_counts.sum(), d.counts.sum()) and np.allclose(d.counts.sum(), n_battles)
    return sw.ARENA_HESSIAN_REG * (n_battles if (covariates or unweighted) else 1.0)


def critical_value(level: float, df: float | None) -> float | None:
    """Student's t quantile with ``df`` degrees of freedom for two-sided ``level`` intervals
    (None: the normal quantile is used)."""
    if df is None or not np.isfinite(df):
        return None
    return float(stats.t.ppf(0.5 + level / 2.0, df))


def cluster_by(dims: tuple[str, ...] | None, prompt: str | None, judge: str | None) -> dict[str, str] | None:
    """The columns whose cluster matrices the design must hold (prompt first)."""
    if not dims or dims == ("battle",):
        return None
    out = {}
    if "prompt" in dims:
        out["prompt"] = prompt
    if "judge" in dims:
        out["judge"] = judge
    return out


def ridge(arena: bool, covariates: Any, n_battles: int) -> float:
    """arena-rank's ridge on the covariates in the sum form of the log-likelihood (``n * reg``)."""
    return sw.ARENA_RIDGE * n_battles if arena and covariates else 0.0


def sandwich(d: Any, fit: Any, dims: tuple[str, ...], arena: bool, n_battles: int) -> sw.Sandwich:
    """The sandwich of the fit: arena-rank's own (``hessian_reg``, its ridge correction) for
    ``estimator="arena-rank"`` with ``cluster="battle"``, else the clustered one."""
    if arena and d.cov_names and dims != ("battle",):
        raise DataError("estimator='arena-rank' with covariates penalises their coefficients (its ridge): its "
                        "sandwich is the unclustered one (cluster='battle'); for clustered intervals with "
                        "covariates use estimator='ml' (unpenalised maximum likelihood)")
    if arena and dims == ("battle",):
        cov = bool(d.cov_names)
        v = sw.arena_rank_vcov(d, fit.theta, arena_hessian_reg(d, n_battles, cov),
                               ridge=sw.ARENA_RIDGE if cov else 0.0)
        return sw.Sandwich(vcov=v, df=None, n_clusters={}, label="sandwich (arena-rank 0.1.1: battles independent, "
                           "hessian_reg 1e-5, normal quantiles)")
    return sw.cluster_sandwich(d, fit.theta, dims)


def resolve(interval: Any, cluster: Any, estimator: Any, reweight: Any, min_pair_battles: Any, ties: str,
            prompt_effect: Any, judge_effect: Any, prompt: str | None, judge: str | None, position_bias: bool,
            n_resamples: Any, resample_judges: bool, covariates: Any = None) -> SimpleNamespace:
    """The checked interval options and what they imply for the model: arena-rank's estimator
    fixes ties="half", no position term and no judge parameters (a judge column then only
    clusters); the sandwich draws no replicates; a cluster bootstrap by judge replaces
    resample_judges."""
    interval = check_interval(interval)
    check_estimator(estimator, reweight, min_pair_battles, ties, prompt_effect, judge_effect)
    arena = estimator == "arena-rank"
    dims = check_cluster(cluster, interval, prompt, judge)
    if arena and covariates and interval == "bootstrap" and n_resamples not in (0, None):
        raise DataError("estimator='arena-rank' with covariates (its ridge-penalised contextual model) has "
                        "interval='sandwich' (its own intervals), not mixedeval's bootstrap, whose replicates "
                        "are unpenalised fits; pass interval='sandwich' or n_resamples=0")
    return SimpleNamespace(
        arena=arena, dims=dims, ties="half" if arena else ties, position_bias=False if arena else position_bias,
        model_judge=None if arena else judge, n_resamples=0 if interval == "sandwich" else n_resamples,
        resample_judges=False if (dims is not None and interval == "bootstrap" and dims != ("prompt",))
        else resample_judges)


def provenance_extra(interval: str, dims: Any, reweight: Any, min_pair_battles: float, estimator: str,
                     sand: sw.Sandwich | None) -> dict:
    """The interval options' entries of the result's provenance."""
    return {"interval": interval, "cluster": list(dims) if dims else None, "reweight": reweight,
            "min_pair_battles": min_pair_battles if reweight else None, "estimator": estimator,
            "n_clusters": dict(sand.n_clusters) if sand else None, "t_df": sand.df if sand else None}
