"""Resource guards of :func:`mixedeval.bayes_glmm`, all applied before R or Stan starts.

* Arguments: ``chains``, ``iter``, ``cores`` integers within :data:`MAX_CHAINS` / :data:`MAX_ITER`
  (typo guards: far beyond any use; the memory and time guards below are the real limits),
  ``adapt_delta`` in (0, 1).
* Memory: the draws the call materialises (:func:`draws_bytes`), checked against
  ``MIXEDEVAL_MEMORY_LIMIT`` / :func:`mixedeval.set_memory_limit` by
  :func:`mixedeval._resources.check_memory`.
* Time: the time limit (:func:`mixedeval.set_time_limit`) is a :class:`mixedeval._resources.Deadline`
  started when the call starts and checked before each Stan fit (the model's, and the second
  model ``loo`` fits): a call already past the limit (e.g. after reading large logs) starts no new
  fit. The duration of a Stan fit is not estimated beforehand: NUTS takes up to 2^10 leapfrog steps
  per iteration depending on the posterior's geometry, so no pre-estimate would be reliable. Ctrl-C
  stops a running fit (``r/bayes.R``).
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ... import _resources as res
from ...errors import DataError

#: the most iterations per chain (warm-up included): Stan's default is 2,000; a million per chain
#: is far beyond what a posterior summary can use (more draws come cheaper from more chains)
MAX_ITER = 1_000_000
#: the most chains (and cores): Stan's default is 4
MAX_CHAINS = 256
#: copies of the kept draws (draws x parameters): R's ``as.matrix`` and its data frame,
#: ``as.array``, posterior's ``draws_array`` and the numpy copy rpy2 hands over
DRAW_COPIES = 5
#: draws x systems arrays of the Python side: linear predictor, marginal and conditional rates,
#: quadrature temporaries, the better-direction copy, ranks
SYSTEM_COPIES = 8
#: draws x systems^2 arrays of the Python side: the pairs' differences and their sorted copies,
#: the rank and P(better) comparisons
PAIR_COPIES = 2
#: copies of the posterior predictive draws (draws x rows): rstanarm's linear predictor and
#: replicates, the data frame and the numpy copy
PPC_COPIES = 4
#: doubles per row of rstanarm's pointwise loo (elpd, p_loo, looic, Pareto k, n_eff, MCSE, influence)
LOO_PER_ROW = 8


def _int_in(name: str, v: Any, low: int, high: int, fix: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not low <= v <= high:
        raise DataError(f"{name} must be an integer from {res.format_count(low)} to {res.format_count(high)}, "
                        f"got {v!r}; {fix}")


def check_sampler_args(chains: Any, iter: Any, cores: Any, adapt_delta: Any) -> None:  # noqa: A002 - Stan's name
    """Stan's arguments of :func:`mixedeval.bayes_glmm`: :class:`mixedeval.DataError` naming the
    argument and the fix."""
    _int_in("chains", chains, 1, MAX_CHAINS, "Stan's default is chains=4")
    _int_in("iter", iter, 20, MAX_ITER, "iter counts the iterations per chain, warm-up half included (Stan's "
            "default is 2000); for more draws use more chains")
    if cores is not None:
        _int_in("cores", cores, 1, MAX_CHAINS, "or None for one R process per chain up to the CPUs")
    if adapt_delta is not None and (isinstance(adapt_delta, bool) or not isinstance(adapt_delta, numbers.Real)
                                    or not 0 < float(adapt_delta) < 1):
        raise DataError(f"adapt_delta must be None or a number between 0 and 1 (Stan's target acceptance rate, "
                        f"e.g. 0.99 against divergent transitions), got {adapt_delta!r}")


def n_parameters(n_systems: int, n_items: int, n_clusters: int, family: str, items: bool, clustered: bool) -> int:
    """Parameters Stan keeps per draw: the intercept and system effects, per group (tasks with
    ``items``, clusters) one effect per level plus its variance and its Cholesky factor, sigma / phi
    (gaussian, beta), mean_PPD and the log-posterior."""
    groups = (n_items + 2 if items else 0) + (n_clusters + 2 if clustered else 0)
    return int(n_systems + groups + (family != "binomial") + 2)


def draws_bytes(*, chains: int, iter: int, n_params: int, n_params_loo: int, n_rows: int, n_systems: int,  # noqa: A002
                ppc: bool, loo: bool) -> tuple[float, str]:
    """Upper bound of the bytes one :func:`mixedeval.bayes_glmm` call materialises (8 bytes a
    double), summed over its steps, and its breakdown: Stan's draws of ``n_params`` parameters
    with the warm-up (rstan keeps it: chains x iter), :data:`DRAW_COPIES` copies of the kept draws
    (chains x (iter - iter // 2)), the Python side's draws x systems arrays; with ``ppc`` the
    posterior predictive draws (up to 1,000 x ``n_rows``, :data:`PPC_COPIES` copies); with ``loo``
    the second model (``n_params_loo`` parameters, as the first) and rstanarm's pointwise loo
    (its log-likelihood is computed one row at a time: the draws once more and
    :data:`LOO_PER_ROW` doubles a row). The data themselves are not counted."""
    kept = chains * (iter - iter // 2)

    def fit(p: int) -> float:
        return 8.0 * p * (chains * iter + DRAW_COPIES * kept)

    python = 8.0 * kept * (SYSTEM_COPIES * n_systems + PAIR_COPIES * n_systems * n_systems)
    ppc_b = 8.0 * PPC_COPIES * min(kept, 1000) * n_rows if ppc else 0.0
    loo_b = fit(n_params_loo) + 8.0 * (kept * n_params + LOO_PER_ROW * n_rows) if loo else 0.0
    total = fit(n_params) + python + ppc_b + loo_b
    detail = (f"{res.format_count(kept)} kept draws ({chains} chains x {res.format_count(iter - iter // 2)}) x "
              f"{n_params} parameters x 8 bytes = {res.format_bytes(8.0 * kept * n_params)} per copy, "
              f"{DRAW_COPIES} copies, plus the warm-up Stan keeps")
    if ppc:
        detail += f", {res.format_bytes(ppc_b)} of posterior predictive draws"
    if loo:
        detail += f", {res.format_bytes(loo_b)} for loo's second model"
    return total, detail


def check_draws_memory(frame: Any, family: str, n_systems: int, *, chains: int, iter: int, items: bool,  # noqa: A002
                       clustered: bool, ppc: bool, loo: bool) -> None:
    """Refuse (:class:`mixedeval.DataError` with the estimate, the limit and the fix) a call whose
    :func:`draws_bytes` exceed the memory limit; ``frame`` is the model's rows
    (:func:`mixedeval.workflows.agentic.bayes.model_data`)."""
    n_items = int(frame["item"].nunique())
    n_clusters = int(frame["cluster"].nunique()) if clustered else 0
    p = n_parameters(n_systems, n_items, n_clusters, family, items, clustered)
    p_loo = n_parameters(n_systems, n_items, n_clusters, family, not items, clustered)
    need, detail = draws_bytes(chains=chains, iter=iter, n_params=p, n_params_loo=p_loo, n_rows=len(frame),
                               n_systems=n_systems, ppc=ppc, loo=loo)
    res.check_memory(need, f"the posterior draws of me.bayes_glmm (chains={chains}, iter={res.format_count(iter)})",
                     "Use fewer iter or chains (chains=4, iter=2000 keep 4,000 draws, plenty for 95% intervals), "
                     "loo=False (CLI: --no-loo) to skip loo's second fit, or raise the limit; in Python also "
                     "ppc=False.", detail)


def deadline(chains: int, iter: int) -> res.Deadline:  # noqa: A002 - Stan's name
    """The time limit of one :func:`mixedeval.bayes_glmm` call, checked before each Stan fit."""
    return res.Deadline(f"me.bayes_glmm (chains={chains}, iter={res.format_count(iter)})",
                        "Use fewer iter or chains, loo=False (CLI: --no-loo) to skip loo's second fit, or raise the "
                        "time limit.")
