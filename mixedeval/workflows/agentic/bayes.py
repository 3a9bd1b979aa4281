"""Bayesian hierarchical model of a small evaluation: :func:`bayes_glmm`.

The model is ``rstanarm::stan_glmer`` (Goodrich, Gabry, Ali & Brilleman 2020; Stan's NUTS) with
the systems as fixed effects (treatment coding, the first system in sorted order the reference)
and the tasks -- mixedeval's *items* -- and, with ``cluster=``, the task clusters as random
intercepts. Attempts (epochs, and runs) of one system on one task are repeated trials:

* ``family="binomial"``: 0/1 scores are aggregated to successes and failures per system x task,
  ``cbind(successes, failures) ~ system + (1 | item) [+ (1 | cluster)]``;
* ``family="gaussian"`` / ``"beta"`` (continuous scores, beta in (0, 1) by ``mgcv::betar``):
  one row per attempt, ``score ~ system + (1 | item) [+ (1 | cluster)]``.

The priors are rstanarm's defaults unless ``prior=`` changes them (they are in ``result.prior``,
with the autoscaled scales rstanarm used). ``random_state`` is Stan's ``seed``: the same call in R
(``r/bayes.R``'s header shows it) gives the same draws.

Results are posteriors of each system's success rate *on the population of tasks* (the mean over
new tasks' random effects, :mod:`._bayes_draws`), their differences, P(A > B), P(best), posterior
ranks and, with ``rope=``, the probabilities of practical equivalence -- as one answer whose
leaderboard carries equal-tailed credible intervals and marginal posterior rank intervals. Checks:
R-hat and bulk/tail ESS (``posterior::summarise_draws``), divergent transitions
(``rstan::get_sampler_params``), posterior predictive checks (per system and per task), ``loo``
comparison with a model without task effects, and the frequentist GLMM
(:func:`mixedeval.compare_systems`, ``family="binomial"``) on the same data.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit

from ... import _answer
from ..._cld import compact_letters
from ..._executor import available_cpus
from ..._random import r_seed
from ...errors import DataError
from ...results import ResultWarning
from .._common import _WorkflowResult, dedupe_warnings
from ..summarize import _read
from . import _bayes_checks as checks
from . import _bayes_guards as guards
from ._bayes_draws import marginal_rate, p_matrix, pair_table, system_table

FAMILIES = ("binomial", "gaussian", "beta")
PRIOR_SLOTS = ("prior", "prior_intercept", "prior_aux")
PRIOR_DISTS = ("default", "normal", "student_t", "cauchy", "exponential")
#: the posterior's summary columns of ``result.table``
TABLE_COLUMNS = ("system", "estimate", "std_error", "median", "conf_low", "conf_high", "conditional", "p_best",
                 "expected_rank", "rank_low", "rank_high")


@dataclass(frozen=True, repr=False)
class BayesGLMMResult(_answer.AnswerMixin, _WorkflowResult):
    """Result of :func:`bayes_glmm`.

    answer : the one :class:`mixedeval._answer.Answer`: leaderboard of posterior mean success rates
        on the population of tasks with equal-tailed credible intervals and marginal posterior rank
        intervals (``rank_kind="marginal"``); the headline is the best against the runner-up (or
        ``reference``): posterior mean difference, its equal-tailed interval, ``std_error`` the
        posterior SD and ``p_value`` the two-sided posterior tail probability; checks (diagnostics,
        PPC, loo, frequentist GLMM), each with its verdict.
    table : per system (:data:`TABLE_COLUMNS`): posterior mean (``estimate``), SD, median and
        interval of the marginal rate, the conditional (typical-task, u = 0) rate's mean, P(best),
        expected rank and the posterior rank interval.
    pairwise : every pair best first: delta (posterior mean difference in the better direction),
        std_error (posterior SD), conf_low, conf_high, p_a_greater (P(system_a better)), p_value;
        with ``rope`` p_rope, p_above_rope, p_below_rope.
    p_better : P(row better than column), every ordered pair.
    diagnostics : per parameter: rhat, ess_bulk, ess_tail; ``divergences`` per chain.
    ppc : posterior predictive checks: level (system / task / all), name, statistic, observed,
        replicated mean, replicated interval, p_value.
    loo : the loo comparison (model, elpd, elpd_se, elpd_diff, se_diff, pareto_k_bad, pareto_k_max);
        None with ``loo=False``.
    prior : the priors used (rstanarm's ``prior_summary``).
    draws : posterior draws of the marginal rates (one column per system).
    """

    answer: _answer.Answer
    table: pd.DataFrame
    pairwise: pd.DataFrame
    p_better: pd.DataFrame
    diagnostics: pd.DataFrame
    divergences: tuple[int, ...]
    ppc: pd.DataFrame
    loo: pd.DataFrame | None
    prior: pd.DataFrame
    family: str
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    draws: pd.DataFrame = field(repr=False, compare=False, default=None)
    parameter_draws: pd.DataFrame = field(repr=False, compare=False, default=None)
    _ppc_data: Any = field(repr=False, compare=False, default=None)

    _main_table = "table"
    _print_tables = ("leaderboard", "pairwise", "checks")
    _skip_in_dict = ("draws", "parameter_draws", "_ppc_data", "answer")
    _title = "Bayesian hierarchical model (rstanarm::stan_glmer)"
    _no_headline_text = "one system: no comparison"
    _answer_priority = 25

    def _scalars(self):
        return [("headline", self.headline_text()), ("family", self.family),
                ("draws", self.provenance.get("n_draws"))]

    def ppc_plot(self, path: Any = None):
        """The posterior predictive check as a matplotlib figure (saved as PNG to ``path`` when
        given): observed success rate per system and per task (points) against the replicated
        rates' 95% intervals (bars)."""
        return checks.ppc_figure(self._ppc_data, path)


def _prior_spec(slot: str, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise DataError(f"prior[{slot!r}] must be a dict such as {{'dist': 'normal', 'location': 0, 'scale': 2.5}}, "
                        f"got {value!r}")
    spec = dict(value)
    dist = spec.get("dist")
    if dist not in PRIOR_DISTS:
        raise DataError(f"prior[{slot!r}]['dist'] must be one of {PRIOR_DISTS}, got {dist!r}")
    out: dict[str, Any] = {"dist": str(dist)}
    for k in ("location", "scale", "df", "rate"):
        if k in spec:
            v = float(spec[k])
            if not np.isfinite(v) or (k != "location" and v <= 0):
                raise DataError(f"prior[{slot!r}][{k!r}] must be a finite number (> 0 except location), got {spec[k]!r}")
            out[k] = v
    unknown = set(spec) - {"dist", "location", "scale", "df", "rate", "autoscale"}
    if unknown:
        raise DataError(f"prior[{slot!r}] has unknown keys {sorted(unknown)}; allowed: dist, location, scale, df, "
                        "rate, autoscale")
    need = {"normal": ("location", "scale"), "cauchy": ("location", "scale"), "student_t": ("df", "location", "scale"),
            "exponential": ("rate",), "default": ()}[out["dist"]]
    miss = [k for k in need if k not in out]
    if miss:
        raise DataError(f"prior[{slot!r}] with dist={out['dist']!r} needs {miss}")
    out["autoscale"] = bool(spec.get("autoscale", True))
    return out


def _priors(prior: Any) -> dict[str, dict[str, Any] | None]:
    if prior is None:
        return {s: None for s in PRIOR_SLOTS}
    if not isinstance(prior, Mapping) or set(prior) - set(PRIOR_SLOTS):
        raise DataError(f"prior must be None or a dict with keys among {PRIOR_SLOTS}, got {prior!r}")
    return {s: _prior_spec(s, prior.get(s)) for s in PRIOR_SLOTS}


def _check_args(family: str, chains: Any, iter: Any, rope: Any, cores: Any,  # noqa: A002 - Stan's name
                adapt_delta: Any = None) -> None:
    if family not in FAMILIES:
        raise DataError(f"family must be one of {FAMILIES}, got {family!r}")
    guards.check_sampler_args(chains, iter, cores, adapt_delta)
    if rope is not None and (isinstance(rope, bool) or not np.isfinite(float(rope)) or float(rope) <= 0):
        raise DataError(f"rope must be a positive number (the half-width of the region of practical equivalence, "
                        f"on the rate scale), got {rope!r}")


def model_data(design: Any, family: str) -> tuple[pd.DataFrame, list[str], bool]:
    """The rows R fits (module docstring) from the call's design: for the binomial, successes and
    failures per system x task [x cluster] (epochs and runs are trials); otherwise one row per
    attempt. Tasks are ``task::item`` when the design holds several tasks. Returns the frame
    (factors with explicit sorted levels), the systems (sorted; the first is R's reference) and
    whether there are clusters."""
    r = design.rows
    systems = list(design.systems)
    several = r["task"].nunique() > 1
    item = (r["task"].astype(str) + "::" + r["item"].astype(str)) if several else r["item"].astype(str)
    clustered = bool(design.clustered)
    score = r["score"].to_numpy(dtype=float)
    base = pd.DataFrame({"system": r["system"].astype(str).to_numpy(), "item": item.to_numpy()})
    if clustered:
        base["cluster"] = r["cluster"].astype(str).to_numpy()
    if family == "binomial":
        if not design.binary:
            raise DataError("family='binomial' needs 0/1 scores (success or failure of each attempt); for continuous "
                            "scores use family='gaussian' or family='beta'")
        keys = ["system", "item", *(["cluster"] if clustered else [])]
        g = base.assign(s=score).groupby(keys, sort=True, observed=True)["s"]
        cells = pd.DataFrame({"successes": g.sum().astype(int), "failures": (g.count() - g.sum()).astype(int)})
        out = cells.reset_index()
    else:
        if family == "beta" and (np.any(score <= 0) or np.any(score >= 1)):
            raise DataError("family='beta' needs scores strictly between 0 and 1; squeeze exact 0/1 scores first, or "
                            "use family='binomial' for 0/1 scores")
        out = base.assign(score=score)
    out["system"] = pd.Categorical(out["system"], categories=systems)
    out["item"] = pd.Categorical(out["item"], categories=sorted(out["item"].unique()))
    if clustered:
        out["cluster"] = pd.Categorical(out["cluster"], categories=sorted(out["cluster"].unique()))
    return out, systems, clustered


def linear_predictor(draws: pd.DataFrame, systems: list[str]) -> np.ndarray:
    """Draws x systems of the systems' linear predictor: the intercept plus ``system<level>``
    (treatment coding, ``systems[0]`` the reference)."""
    icpt = draws["(Intercept)"].to_numpy(dtype=float)
    cols = [icpt] + [icpt + draws[f"system{s}"].to_numpy(dtype=float) for s in systems[1:]]
    return np.column_stack(cols)


def group_sd(draws: pd.DataFrame, clustered: bool) -> np.ndarray:
    """Draws of the SD of a new task's total random effect, sqrt(sigma2_item [+ sigma2_cluster])."""
    v = np.zeros(len(draws))
    for g in ("item", *(["cluster"] if clustered else [])):
        col = f"Sigma[{g}:(Intercept),(Intercept)]"
        if col in draws.columns:
            v = v + draws[col].to_numpy(dtype=float)
    return np.sqrt(v)


#: rows x iterations from which chains run in parallel by default (starting the R worker processes
#: costs several seconds, more than a small model's whole sampling)
PARALLEL_FROM = 200_000


def _default_cores(chains: int, n_rows: int, iter: int) -> int:  # noqa: A002 - Stan's name
    """Chains in parallel (one R process each, up to the CPUs) for a model of at least
    :data:`PARALLEL_FROM` rows x iterations; 1 below."""
    if n_rows * iter < PARALLEL_FROM:
        return 1
    return int(max(1, min(chains, available_cpus())))


def bayes_glmm(
    data: Any,
    metric: str | None = None,
    *,
    score: str = "score",
    system: str = "system",
    item: str = "item",
    task: str | None = None,
    cluster: str | None = None,
    epoch: str | None = None,
    run: str | None = None,
    family: str = "binomial",
    prior: Mapping[str, Any] | None = None,
    chains: int = 4,
    iter: int = 2000,  # noqa: A002 - Stan's name
    cores: int | None = None,
    adapt_delta: float | None = None,
    rope: float | None = None,
    level: float = 0.95,
    reference: Any = None,
    task_effects: bool = True,
    loo: bool = True,
    ppc: bool = True,
    frequentist: bool = True,
    random_state: Any = None,
    higher_is_better: bool | None = None,
    progress: bool = True,
    format: str = "auto",  # noqa: A002 - read_eval_logs' name
) -> BayesGLMMResult:
    """Bayesian hierarchical GLMM of success over systems, tasks and attempts by
    ``rstanarm::stan_glmer`` (see the module docstring for the model and the marginal rates).

    Parameters
    ----------
    data : a score table (one row per system x task [x epoch]) or evaluation logs (what
        :func:`mixedeval.read_eval_logs` reads; epochs become attempts). Never modified.
    metric, score, system, item, task, epoch, run, format : as :func:`mixedeval.summarize`.
    cluster : a column naming each task's cluster: a second random intercept.
    family : ``"binomial"`` (0/1 scores), ``"gaussian"`` or ``"beta"``.
    prior : None (rstanarm's defaults: ``normal(0, 2.5)`` autoscaled for the coefficients and the
        intercept, ``exponential(1)`` autoscaled for sigma / phi, ``decov(1, 1, 1, 1)`` for the group
        SDs; stated in ``result.prior``) or a dict with keys ``prior``, ``prior_intercept``,
        ``prior_aux``, each ``{"dist": "normal"|"student_t"|"cauchy"|"exponential", "location",
        "scale", "df", "rate", "autoscale"}``.
    chains, iter, adapt_delta : Stan's (``iter`` includes the warm-up half). Before R starts, the
        call is refused (:class:`mixedeval.DataError`) when chains > 256, iter > 1,000,000, when the
        draws it would materialise exceed the memory limit (``MIXEDEVAL_MEMORY_LIMIT``,
        :func:`mixedeval.set_memory_limit`; the estimate is in the message), and when the time
        limit (:func:`mixedeval.set_time_limit`) has passed before a Stan fit starts (the model's
        or loo's second one); a fit's duration is not estimated beforehand. See
        :mod:`mixedeval.workflows.agentic._bayes_guards`.
    cores : chains run in parallel on this many R processes (None: min(chains, CPUs) for a model of
        at least :data:`PARALLEL_FROM` rows x iterations, else 1); the draws do not depend on it.
        As in ``Rscript``, the chains run in forked copies of this process (``parallel::mclapply``),
        or, when other Python threads run (Jupyter, a thread pool), in new R processes, which
        take seconds to start (``provenance["parallel_chains"]``: serial / fork / psock).
    rope : half-width of the region of practical equivalence of two rates (e.g. 0.02).
    level : credible level (equal-tailed).
    reference : the headline is the best other system against this one.
    task_effects : False drops the tasks' random intercepts (a model that ignores variation between
        tasks; for comparison: its checks should flag extra-binomial task variation).
    loo, ppc, frequentist : compute these checks (loo fits a second model without task effects;
        frequentist fits the GLMM by lme4).
    random_state : Stan's ``seed`` (an int is passed as it is; None: a fresh one, recorded).
    higher_is_better : the score's direction (None: from the metric name; unknown: higher).
    progress : Stan's progress lines (``refresh = iter / 10``) on stderr; False: ``refresh = 0``.
    """
    _check_args(family, chains, iter, rope, cores, adapt_delta)
    dl = guards.deadline(int(chains), int(iter))  # the time limit, checked before each Stan fit
    level = float(level)
    if not 0.5 < level < 1:
        raise DataError(f"level must be in (0.5, 1), got {level!r}")
    higher_is_better = _answer.check_higher_is_better(higher_is_better)
    priors = _priors(prior)
    cols = {"score": score, "system": system, "item": item, "task": task, "run": run, "epoch": epoch}
    design = _read(data, metric, cols, cluster, format, None, False)
    frame, systems, clustered = model_data(design, family)
    seed = r_seed(random_state)
    chains, iter = int(chains), int(iter)
    guards.check_draws_memory(frame, family, len(systems), chains=chains, iter=iter, items=bool(task_effects),
                              clustered=clustered, ppc=bool(ppc), loo=bool(loo))
    dl.check("before the Stan fit")
    cores = _default_cores(chains, len(frame), iter) if cores is None else int(cores)
    refresh = max(1, iter // 10) if progress and not os.environ.get("MIXEDEVAL_QUIET") else 0
    from ...engine import _bridge  # noqa: PLC0415 - R starts on the first call that needs it

    chain_mode = _bridge.bayes_chain_mode(cores)
    fit = _bridge.bayes_fit(frame, family=family, items=bool(task_effects), cluster=clustered, chains=chains, iter=iter, seed=seed,
                            refresh=refresh, cores=cores, adapt_delta=adapt_delta, echo=refresh > 0, **priors)
    summ = fit.value["summary"]
    draws = summ["draws"]
    eta = linear_predictor(draws, systems)
    if family == "gaussian":
        rate, cond = eta, eta
    else:
        rate, cond = marginal_rate(eta, group_sd(draws, clustered)), expit(eta)
    metric_name = design.metric if design.metric is not None else score
    direction = _answer.direction(metric_name, higher_is_better)
    hib = direction.higher_is_better
    table = system_table(rate, cond, systems, hib, level)
    diag = summ["diagnostics"]
    div = tuple(int(x) for x in np.atleast_1d(summ["divergences"]))
    warns: list[ResultWarning] = [*design.warnings, *_answer_notes(direction)]
    warns += [ResultWarning("r_warning", str(w)) for w in fit.warnings]
    n_draws = len(draws)
    ppc_tab, ppc_data = (checks.ppc(fit.value["model"], frame, family, systems, seed, n_draws=min(n_draws, 1000))
                         if ppc else (None, None))
    if loo:
        dl.check("after the model's fit, before loo's second model")
    loo_tab, loo_warn = (checks.loo_table(frame, family, clustered, bool(task_effects), fit.value["model"], chains,
                                                  iter, seed, cores)
                         if loo else (None, []))
    warns += loo_warn
    board, pairs, head = _answer_parts(table, rate, systems, direction, level, reference, rope,
                                      family == "binomial")
    rows = checks.diagnostic_rows(diag, div, n_draws)
    if ppc_tab is not None:
        rows += checks.ppc_rows(ppc_tab)
    if loo_tab is not None:
        rows += checks.loo_rows(loo_tab)
    if frequentist and head is not None and family == "binomial":
        rows.append(checks.frequentist_row(design, head))
    answer = _answer.Answer(direction=direction, leaderboard=board, headline=head, differences=pairs,
                            checks=_answer.checks_table(rows), rank_kind="marginal",
                            no_headline_text=BayesGLMMResult._no_headline_text, method=_METHOD)
    ptab = pairs if pairs is not None else pair_table(rate, systems, level, rope).iloc[:0]
    order = list(board["name"])
    prov = {"workflow": "bayes_glmm", "estimator": "rstanarm::stan_glmer (NUTS)", "family": family,
            "formula": _formula_text(family, clustered, bool(task_effects)), "chains": chains, "iter": iter, "warmup": iter // 2,
            "cores": cores, "parallel_chains": chain_mode, "seed": seed, "n_draws": n_draws, "level": level, "rope": rope,
            "marginal": "success rate on the population of tasks: E over new task effects of the inverse link "
                        f"(Gauss-Hermite, {40} nodes); 'conditional' = a typical task (effect 0)",
            "prior": "rstanarm defaults" if all(v is None for v in priors.values()) else "user", "metric": design.metric,
            "epochs": "attempts (repeated trials of the task)", "direction": direction.note}
    return BayesGLMMResult(answer=answer, table=table, pairwise=ptab, p_better=p_matrix(rate, systems, hib).loc[order, order], diagnostics=diag,
                           divergences=div, ppc=ppc_tab, loo=loo_tab, prior=summ["prior"], family=family,
                           warnings=dedupe_warnings(warns), provenance=prov,
                           draws=pd.DataFrame(rate, columns=systems), parameter_draws=draws, _ppc_data=ppc_data)


_METHOD = "Bayesian hierarchical GLMM (rstanarm::stan_glmer): posterior mean difference, equal-tailed credible interval"


def _answer_notes(direction: _answer.Direction) -> list[ResultWarning]:
    w = _answer.direction_warning(direction)
    return [w] if w is not None else []


def _formula_text(family: str, clustered: bool, items: bool = True) -> str:
    lhs = "cbind(successes, failures)" if family == "binomial" else "score"
    return f"{lhs} ~ system" + (" + (1 | item)" if items else "") + (" + (1 | cluster)" if clustered else "")


def _answer_parts(table: pd.DataFrame, rate: np.ndarray, systems: list[str], direction: _answer.Direction,
                  level: float, reference: Any, rope: float | None, binary: bool):
    """Leaderboard (credible intervals, posterior rank intervals, letters from the pairs' credible
    intervals), the pairs best first (computed in leaderboard order on the better-direction scale,
    so ``delta``, ``p_a_greater`` and the ROPE tails are system_a's advantage) and the headline."""
    hib = direction.higher_is_better
    t = table.set_index("system")
    board = _answer.leaderboard(t["estimate"], std_error=t["std_error"], conf_low=t["conf_low"],
                                conf_high=t["conf_high"], higher_is_better=hib, level=level, letters=False,
                                vcov=np.cov(rate, rowvar=False) if len(systems) > 1 else None)
    names = list(board["name"])
    board["rank_low"] = t.loc[names, "rank_low"].to_numpy()
    board["rank_high"] = t.loc[names, "rank_high"].to_numpy()
    if len(systems) < 2:
        board["letters"] = "a"
        return board, None, None
    idx = [systems.index(n) for n in names]
    better = rate[:, idx] * (1.0 if hib else -1.0)
    pairs = pair_table(better, names, level, rope)
    pairs.insert(pairs.columns.get_loc("p_value") + 1, "method", "posterior")
    sig = [bool(lo > 0 or hi < 0) for lo, hi in zip(pairs["conf_low"], pairs["conf_high"])]
    lets = compact_letters(sig, list(zip(pairs["system_a"], pairs["system_b"])), names, names)
    board["letters"] = [lets[n] for n in names]
    pair = _answer.choose_pair(board, reference)
    row, sign = _answer.pair_row(pairs, *pair)
    lo, hi = (row["conf_low"], row["conf_high"]) if sign > 0 else (-row["conf_high"], -row["conf_low"])
    delta = sign * float(row["delta"])
    # headline() takes a - b on the score's scale
    s = 1.0 if hib else -1.0
    head = _answer.headline(pair[0], pair[1], s * delta, float(row["std_error"]), min(s * lo, s * hi),
                            max(s * lo, s * hi), float(row["p_value"]), float("inf"), _METHOD, direction,
                            level=level, unit="points" if binary else "", scale=100.0 if binary else 1.0,
                            reference=reference)
    return board, pairs, head


__all__ = ["BayesGLMMResult", "FAMILIES", "bayes_glmm", "group_sd", "linear_predictor", "model_data"]
