"""``me.bradley_terry``: strengths of models from pairwise judgments (Chatbot Arena, AlpacaEval,
Arena-Hard, MT-Bench pairwise), with intervals whose unit is the prompt.

Model. Per battle of ``model_a`` against ``model_b`` the log-odds that a wins (ties aside) is
``eta = s_a - s_b + first * position[judge] + beta' x``, ``first`` = +1 when a's answer was
shown first (the default: the Arena's left answer), -1 when b's was (``position`` column
"b_first", e.g. the swapped second game of MT-Bench and Arena-Hard), 0 when unknown; ``s``
are the strengths (log-odds scale, the reference model at 0), ``position[judge]`` the judge's
position bias (log-odds that the answer shown first wins between equally strong models;
``position_bias=True``) and ``x`` the ``covariates`` (per-battle differences a - b, e.g. answer
length: style control, the contextual Bradley-Terry of the Arena). Ties:

* ``"davidson"`` (default): Davidson's (1970) model, P(tie) = nu / (exp(eta/2) + exp(-eta/2) + nu),
  one tie propensity ``log(nu)`` per judge (the judge's leniency: how readily it calls a tie);
* ``"half"``: a tie counts as half a win for each side (FastChat's ``compute_mle_elo``);
* ``"drop"``: ties are removed.

Estimation: R's ``glm`` on the +1/-1 design for half / dropped ties, an exact Newton iteration for
Davidson's likelihood (:mod:`mixedeval.inference._bradley_terry`); with ``prompt_effect="random"``
``lme4::glmer`` with ``(1 | prompt)``: a normal random shift, per prompt, of the log-odds that the
answer shown first wins (prompt-level correlation of the outcomes of one prompt's battles; it
does not give each model its own prompt effect); with ``prompt_effect="model"`` a random effect
per model and prompt, ``+ u[a, p] - u[b, p]`` in a battle of a against b on prompt p (each
model's own advantage or handicap on a prompt: the model-based counterpart of the prompt
bootstrap; lme4's modular functions, Laplace).

Intervals. With ``n_resamples > 0`` (default 1000) the prompts are resampled (the unit that was
sampled; with ``resample_judges=True`` the judges too, independently): every replicate refits the
model, and ``conf_low`` / ``conf_high`` are percentile intervals, ``std_error`` the replicates'
SD. Rows are never resampled unless there is no ``prompt`` column (then each battle is its own
unit, with a ``unit_rows`` warning). ``model_std_error`` is the likelihood's standard error, which
treats battles as independent. With ``n_resamples=0`` the intervals are Wald intervals from it.

Elo scale. ``elo = anchor_rating + 400 / ln(10) * (s - center)``, ``center`` = the strength of
``anchor`` or, without an anchor, the mean strength: FastChat's ``compute_mle_elo``
(fastchat/serve/monitor/elo_analysis.py: a logistic regression without intercept or penalty on
the +-ln(10) design, ties as half wins, ``SCALE=400``, ``INIT_RATING=1000``; its minimum-norm
solution is mean-centred; with ``mixtral-8x7b-instruct-v0.1`` present it is shifted so that model
rates 1114 -- ``anchor="mixtral-8x7b-instruct-v0.1", anchor_rating=1114``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._random import seed_sequence
from ..data.table import as_pandas
from ..data.validate import require_level
from ..errors import DataError
from ..inference._bradley_terry import BTFit, fit_bt
from ..inference._bt_design import TIES, BTDesign, build_design
from ..inference.rankings import RankIntervals, rank_intervals
from ._bt_answer import BTAnswer
from ._bt_bootstrap import bt_bootstrap
from ..resampling._checks import check_n_resamples, provenance
from ..results import ResultWarning
from ._common import _WorkflowResult, dedupe_warnings

ELO_SCALE = 400.0 / np.log(10.0)
STRENGTH_COLUMNS = ("model", "estimate", "std_error", "conf_low", "conf_high", "model_std_error", "elo",
                    "elo_conf_low", "elo_conf_high", "n_battles", "wins", "losses", "ties")


@dataclass(frozen=True, repr=False)
class BradleyTerryResult(BTAnswer, _WorkflowResult):
    """Result of :func:`bradley_terry`.

    table : strengths, best first: model, estimate (log-odds, reference model 0), std_error,
        conf_low, conf_high (prompt bootstrap, percentile; Wald with n_resamples=0),
        model_std_error (likelihood SE: battles independent), elo, elo_conf_low, elo_conf_high,
        n_battles, wins, losses, ties.
    win_probabilities : model, opponent, estimate (P(model preferred to opponent) = plogis(s_model -
        s_opponent), positions balanced, no tie), conf_low, conf_high. ``win_matrix()`` pivots it.
    judges : judge, parameter ("position_bias": log-odds the answer shown first wins between equal
        models; "leniency": Davidson's log(nu), the judge's propensity to call a tie), estimate,
        std_error, conf_low, conf_high, n_battles. With judge_effect="random": the mean position bias
        (provenance["position_bias_mean"]) plus each judge's conditional mode; the SE combines the
        mean's SE and the conditional SD (the judges' SD: provenance["judge_sd"]).
    covariates : term, estimate, std_error, conf_low, conf_high (log-odds per unit of the difference).
    ranks : simultaneous rank intervals of the strengths (:func:`mixedeval.rank_intervals` on the
        bootstrap replicates; the joint normal with n_resamples=0): name, estimate, rank, rank_low,
        rank_high, letters (models sharing a letter are not told apart: tie groups); the whole
        :class:`RankIntervals` (pairwise tests, rank distribution) is ``rank_result``.
    """

    table: Any
    win_probabilities: Any
    judges: Any
    covariates: Any
    ranks: Any
    reference: str
    anchor: str | None
    anchor_rating: float
    ties: str
    level: float
    interval_method: str
    resample_units: tuple[str, ...]
    n_battles: int
    n_models: int
    n_prompts: int | None
    n_judges: int
    loglik: float
    prompt_sd: float | None
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    rank_result: RankIntervals | None = field(default=None, repr=False, compare=False)
    draws: Any = field(default=None, repr=False, compare=False)
    vcov: Any = field(default=None, repr=False, compare=False)

    _print_tables = ("table", "judges", "covariates", "ranks")
    _skip_in_dict = ("draws", "vcov", "rank_result")
    _title = "Bradley-Terry strengths"

    @property
    def n_resamples(self) -> int:
        """Bootstrap replicates behind the intervals (0: Wald intervals)."""
        return int(self.provenance.get("n_resamples", 0))

    @property
    def strengths(self):
        """The main table (alias of ``.table``)."""
        return self.table

    def win_matrix(self) -> pd.DataFrame:
        """P(row model preferred to column model), models in the order of ``.table`` (best first)."""
        m = self.win_probabilities.pivot(index="model", columns="opponent", values="estimate")
        order = list(self.table["model"])
        return m.reindex(index=order, columns=order)

    def _scalars(self) -> list[tuple[str, Any]]:
        return [("ties", self.ties), ("intervals", self.interval_method), ("battles", self.n_battles),
                ("models", self.n_models), ("prompts", self.n_prompts), ("judges", self.n_judges),
                ("reference", self.reference), ("elo", f"{self.anchor or 'mean'} = {self.anchor_rating:g}")]


def _contrasts(d: BTDesign, anchor: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Matrices (k x p) mapping the parameters to the strengths (reference 0) and to the Elo
    centre-differences ``s - center``."""
    k, p = d.k, d.n_params
    lmat = np.zeros((k, p))
    lmat[d.free, np.arange(k - 1)] = 1.0
    center = lmat[d.models.index(anchor)] if anchor is not None else lmat.mean(axis=0)
    return lmat, lmat - center[None]


def _map(draws: np.ndarray | None, lmat: np.ndarray) -> np.ndarray | None:
    """``draws @ lmat.T`` over the parameters ``lmat`` uses (NaN elsewhere, e.g. the position bias of
    a judge left out of a replicate, does not leak into the strengths)."""
    if draws is None:
        return None
    cols = np.flatnonzero(np.abs(lmat).sum(axis=0))
    return draws[:, cols] @ lmat[:, cols].T


def _interval(point: np.ndarray, se: np.ndarray, draws: np.ndarray | None, level: float):
    """(std_error, low, high): bootstrap SD and percentiles, or Wald."""
    if draws is None:
        z = stats.norm.ppf(0.5 + level / 2)
        return se, point - z * se, point + z * se
    alpha = (1 - level) / 2
    lo, hi = np.nanquantile(draws, [alpha, 1 - alpha], axis=0)
    return np.nanstd(draws, axis=0, ddof=1), lo, hi


def _wald_se(lmat: np.ndarray, vcov: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", lmat, vcov, lmat), 0.0))


def _battle_counts(d: BTDesign) -> pd.DataFrame:
    c = d.counts
    k = d.k
    wins = np.bincount(d.a, c[:, 0], k) + np.bincount(d.b, c[:, 1], k)
    losses = np.bincount(d.a, c[:, 1], k) + np.bincount(d.b, c[:, 0], k)
    ties = np.bincount(d.a, c[:, 2], k) + np.bincount(d.b, c[:, 2], k)
    return pd.DataFrame({"n_battles": (wins + losses + ties).astype(np.int64), "wins": wins.astype(np.int64),
                         "losses": losses.astype(np.int64), "ties": ties.astype(np.int64)})


def _strength_table(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float, anchor: str | None,
                    anchor_rating: float) -> pd.DataFrame:
    lmat, emat = _contrasts(d, anchor)
    est, elo_c = lmat @ fit.theta, emat @ fit.theta
    se_model = _wald_se(lmat, fit.vcov)
    se, lo, hi = _interval(est, se_model, _map(draws, lmat), level)
    _, elo_lo, elo_hi = _interval(elo_c, _wald_se(emat, fit.vcov), _map(draws, emat), level)
    tab = pd.DataFrame({"model": list(d.models), "estimate": est, "std_error": se, "conf_low": lo, "conf_high": hi,
                        "model_std_error": se_model, "elo": anchor_rating + ELO_SCALE * elo_c,
                        "elo_conf_low": anchor_rating + ELO_SCALE * elo_lo,
                        "elo_conf_high": anchor_rating + ELO_SCALE * elo_hi})
    tab = pd.concat([tab, _battle_counts(d)], axis=1)
    return tab.sort_values("estimate", ascending=False, kind="stable").reset_index(drop=True)


def _win_table(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float) -> pd.DataFrame:
    lmat, _ = _contrasts(d, None)
    i, j = np.nonzero(~np.eye(d.k, dtype=bool))
    dmat = lmat[i] - lmat[j]
    diff = dmat @ fit.theta
    _, lo, hi = _interval(diff, _wald_se(dmat, fit.vcov), _map(draws, dmat), level)
    logistic = stats.logistic.cdf
    return pd.DataFrame({"model": [d.models[x] for x in i], "opponent": [d.models[x] for x in j],
                         "estimate": logistic(diff), "conf_low": logistic(lo), "conf_high": logistic(hi)})


def _param_table(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float, kinds: Sequence[str]):
    names = d.param_names()
    idx = [t for t, (kind, _) in enumerate(names) if kind in kinds]
    est = fit.theta[idx]
    se_model = np.sqrt(np.maximum(np.diag(fit.vcov)[idx], 0.0))
    se, lo, hi = _interval(est, se_model, None if draws is None else draws[:, idx], level)
    return idx, names, est, se, lo, hi


def _random_judge_table(d: BTDesign, fit: BTFit, level: float) -> pd.DataFrame:
    """Each judge's position bias: the mean (fixed effect) plus the judge's conditional mode; its
    standard error combines the mean's SE and the conditional SD (as if independent)."""
    modes = fit.extra["judge_modes"]
    mean, se_mean = fit.extra["judge_mean"]
    z = stats.norm.ppf(0.5 + level / 2)
    est = mean + modes["estimate"].to_numpy(dtype=float)
    se = np.sqrt(se_mean ** 2 + modes["std_error"].to_numpy(dtype=float) ** 2)
    per_judge = np.bincount(d.judge, d.counts.sum(axis=1), len(d.judges)).astype(np.int64)
    return pd.DataFrame({"judge": modes["judge"].astype(str).to_numpy(), "parameter": "position_bias",
                         "estimate": est, "std_error": se, "conf_low": est - z * se, "conf_high": est + z * se,
                         "n_battles": [per_judge[d.judges.index(str(j))] for j in modes["judge"]]})


def _judge_table(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float) -> pd.DataFrame | None:
    if "judge_modes" in fit.extra:
        return _random_judge_table(d, fit, level)
    if not d.n_position + d.n_tau:
        return None
    idx, names, est, se, lo, hi = _param_table(d, fit, draws, level, ("position", "tie"))
    per_judge = np.bincount(d.judge, d.counts.sum(axis=1), len(d.judges)).astype(np.int64)
    label = {"position": "position_bias", "tie": "leniency"}
    return pd.DataFrame({"judge": [names[t][1] for t in idx], "parameter": [label[names[t][0]] for t in idx],
                         "estimate": est, "std_error": se, "conf_low": lo, "conf_high": hi,
                         "n_battles": [per_judge[d.judges.index(names[t][1])] for t in idx]})


def _covariate_table(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float) -> pd.DataFrame | None:
    if not d.cov_names:
        return None
    idx, names, est, se, lo, hi = _param_table(d, fit, draws, level, ("covariate",))
    return pd.DataFrame({"term": [names[t][1] for t in idx], "estimate": est, "std_error": se, "conf_low": lo,
                         "conf_high": hi})


def _ranks(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float, random_state: Any):
    """Simultaneous rank intervals (:func:`mixedeval.rank_intervals`) from the bootstrap replicates
    of the strengths (replicates where a model had no battles left out), else from their joint
    normal distribution (vcov)."""
    lmat, _ = _contrasts(d, None)
    est = pd.Series(lmat @ fit.theta, index=list(d.models))
    if draws is not None:
        sd = _map(draws, lmat)
        sd = sd[np.isfinite(sd).all(axis=1)]
        return rank_intervals(est, draws=sd, level=level, random_state=random_state)
    return rank_intervals(est, vcov=lmat @ fit.vcov @ lmat.T, level=level, random_state=random_state)


def _design_warnings(d: BTDesign) -> list[ResultWarning]:
    out = []
    if d.unit_label == "row":
        out.append(ResultWarning("unit_rows", "no prompt column: each battle is its own resampling unit (FastChat's "
                                 "row bootstrap); battles on the same prompt are correlated, so pass prompt= for "
                                 "intervals whose unit is the prompt"))
    shown = d.counts.sum(axis=1) > 0
    first = set(d.a[shown & (d.first > 0)]) | set(d.b[shown & (d.first < 0)])
    second = set(d.b[shown & (d.first > 0)]) | set(d.a[shown & (d.first < 0)])
    one_side = [d.models[i] for i in sorted(first ^ second)]
    if one_side and d.position_bias:
        out.append(ResultWarning("one_side", f"models {one_side[:6]} appear on one side only (always shown first or "
                                 "always second): their strengths rest on the estimated position bias"))
    return out


def _check_judge_effect(judge_effect: Any, judge: str | None, position_bias: bool) -> bool:
    if judge_effect not in ("fixed", "random"):
        raise DataError(f"judge_effect must be 'fixed' or 'random'; got {judge_effect!r}")
    if judge_effect == "random" and (not judge or not position_bias):
        raise DataError("judge_effect='random' models the judges' position bias as random: it needs a judge column "
                        "(judge=...) and position_bias=True")
    return judge_effect == "random"


def _check_args(level: Any, n_resamples: Any, anchor_rating: Any, ties: Any) -> tuple[float, int, float]:
    level = require_level(level)
    n = 0 if n_resamples in (0, None) else check_n_resamples(n_resamples, minimum=2)
    if ties not in TIES:
        raise DataError(f"ties must be one of {', '.join(map(repr, TIES))}; got {ties!r}")
    try:
        rating = float(anchor_rating)
    except (TypeError, ValueError):
        raise DataError(f"anchor_rating must be a number (e.g. 1000), got {anchor_rating!r}") from None
    return level, n, rating


def _bootstrap(d: BTDesign, fit: BTFit, n: int, ss: Any, resample_judges: bool, executor: Any):
    """The replicates and the warnings about them."""
    draws, conv = bt_bootstrap(d, fit.theta, n_resamples=n, ss=ss, resample_judges=resample_judges,
                               executor=executor)
    warns = []
    if (~conv).any():
        warns.append(ResultWarning("bootstrap_nonconverged", f"{int((~conv).sum())} of {n} bootstrap replicates did "
                                   "not converge (a model won or lost all its battles in the replicate: its "
                                   "strength runs off); they are kept, widening the intervals as they should"))
    nan = np.isnan(draws).any(axis=1)
    if nan.any():
        warns.append(ResultWarning("bootstrap_missing", f"in {int(nan.sum())} of {n} replicates some model or judge "
                                   "had no battles; its parameters are left out of those replicates' percentiles"))
    return draws, warns


def bradley_terry(battles: Any, model_a: str = "model_a", model_b: str = "model_b", winner: str = "winner", *,
                  prompt: str | None = None, judge: str | None = None, position: str | None = None,
                  ties: str = "davidson",
                  position_bias: bool = True, covariates: Sequence[str] | None = None, anchor: str | None = None,
                  anchor_rating: float = 1000.0, prompt_effect: str | None = None, judge_effect: str = "fixed",
                  level: float = 0.95,
                  n_resamples: int = 1000, resample_judges: bool = False, ranks: bool = True,
                  random_state: Any = None, executor: Any = None) -> BradleyTerryResult:
    """Bradley-Terry strengths of the models in a table of pairwise battles (see the module docstring).

    battles : one row per judgment; ``model_a`` is the answer shown first, ``winner`` one of
        "model_a", "model_b", "tie", "tie (bothbad)".
    prompt, judge : columns naming the prompt (the resampling unit) and the judge (one position
        bias and, with Davidson ties, one leniency per judge).
    position : column saying which answer the judge saw first ("a_first", "b_first", missing =
        unknown), as :func:`mixedeval.read_battles` writes it; None: model_a was shown first.
    ties : "davidson", "half" or "drop".  position_bias : estimate the judges' position bias.
    covariates : columns of per-battle differences a - b (style control).
    anchor, anchor_rating : the model whose Elo is ``anchor_rating`` (None: the mean Elo is).
        ``anchor`` is also the reference of the log-odds strengths (else the first model by name).
    prompt_effect : None, "model" (a random effect per model and prompt: + u[a, prompt] -
        u[b, prompt], each model's own advantage on a prompt; lme4 Laplace; ties="drop") or
        "random" (glmer with (1 | prompt): a per-prompt shift of the first-shown answer's log-odds).
    judge_effect : "fixed" (one position bias per judge) or "random" (glmer with
        first + (0 + first | judge): normal position biases around a mean; ties="drop").
    n_resamples : bootstrap replicates (0: Wald intervals).  resample_judges : resample judges too.
    ranks : compute the simultaneous rank intervals (False skips them: their compact letter display
        takes minutes beyond ~50 models).
    random_state, executor : the draws' seed and where the replicates run (same numbers everywhere).
    """
    level, n, rating = _check_args(level, n_resamples, anchor_rating, ties)
    ss = seed_sequence(random_state)
    if resample_judges and not judge:
        raise DataError("resample_judges=True needs a judge column (judge=...)")
    df = as_pandas(battles) if not isinstance(battles, pd.DataFrame) else battles
    judge_random = _check_judge_effect(judge_effect, judge, position_bias)
    d = build_design(df, model_a, model_b, winner, prompt=prompt, judge=judge, ties=ties,
                     position_bias=position_bias and not judge_random, covariates=covariates, anchor=anchor,
                     position=position)
    fit = fit_bt(d, level=level, prompt_effect=prompt_effect, judge_random=judge_random)
    warns = list(fit.warnings) + _design_warnings(d)
    mixed = prompt_effect is not None or judge_random
    if n and mixed:
        warns.append(ResultWarning("no_bootstrap", f"random effects: the intervals are glmer's Wald intervals (the "
                                   f"variances are in the model); the bootstrap (n_resamples={n}) refits "
                                   "fixed-effect models and is not run with them"))
        n = 0
    draws = None
    if n:
        draws, bw = _bootstrap(d, fit, n, ss, resample_judges, executor)
        warns += bw
    units = ("prompt", "judge") if resample_judges else (d.unit_label,)
    rank_res = _ranks(d, fit, draws, level, random_state) if ranks else None
    method = (f"{d.unit_label} bootstrap{' and judge' if resample_judges else ''} (percentile, {n} replicates)"
              if n else "Wald (glmer with random effects)" if mixed else "Wald (likelihood standard errors)")
    return BradleyTerryResult(
        table=_strength_table(d, fit, draws, level, anchor, rating),
        win_probabilities=_win_table(d, fit, draws, level), judges=_judge_table(d, fit, draws, level),
        covariates=_covariate_table(d, fit, draws, level), ranks=None if rank_res is None else rank_res.table,
        reference=d.models[d.ref], anchor=anchor, anchor_rating=rating, ties=ties, level=level,
        interval_method=method, resample_units=units if n else (), n_battles=int(d.counts.sum()),
        n_models=d.k, n_prompts=d.n_units if prompt else None, n_judges=len(d.judges), loglik=fit.loglik,
        prompt_sd=fit.prompt_sd, warnings=dedupe_warnings(warns),
        provenance=provenance("bradley_terry", ss if n else None, engine=fit.engine, ties=ties,
                              position_bias=bool(position_bias), prompt_effect=prompt_effect,
                              judge_effect=judge_effect, judge_sd=fit.extra.get("judge_sd"),
                              position_bias_mean=fit.extra.get("judge_mean", (None,))[0],
                              resample_units=list(units) if n else [], n_resamples=n),
        rank_result=rank_res, draws=draws, vcov=fit.vcov)
