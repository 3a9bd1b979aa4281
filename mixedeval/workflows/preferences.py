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
* ``"half"``: a tie counts as half a win for each side (FastChat's ``compute_elo_mle_with_tie`` in
  ``elo_analysis.py``, ``compute_bt`` in ``rating_systems.py``; Arena-Hard v0.1's ``compute_mle_elo``);
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
With ``interval="sandwich"`` they are Wald intervals from the sandwich covariance (the CLT for
M-estimators), clustered by ``cluster`` ("prompt", "judge", both: Cameron-Gelbach-Miller's
two-way, CR1 and Student's t with G - 1 df; "battle": unclustered, arena-rank's);
``estimator="arena-rank"`` and ``reweight="pair"`` are LMArena's model and weights
(:mod:`mixedeval.workflows._bt_interval`, :mod:`mixedeval.inference._bt_sandwich`).

Elo scale. ``elo = anchor_rating + 400 / ln(10) * (s - center)``, ``center`` = the strength of
``anchor`` or, without an anchor, the mean strength: FastChat's ``compute_elo_mle_with_tie``
(fastchat/serve/monitor/elo_analysis.py: a logistic regression without intercept or penalty on
the +-ln(10) design, ties as half wins, ``SCALE=400``, ``INIT_RATING=1000``; its minimum-norm
solution is mean-centred; with ``mixtral-8x7b-instruct-v0.1`` present it is shifted so that model
rates 1114 -- ``anchor="mixtral-8x7b-instruct-v0.1", anchor_rating=1114``).
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from .._random import seed_sequence
from ..data.table import as_pandas
from ..data.validate import require_level
from ..errors import DataError
from ..inference._bradley_terry import BTFit, fit_bt
from ..inference._bt_numpy import one_blas_thread
from ..inference._bt_design import POOLED_JUDGES, TIES, BTDesign, build_design
from ..inference.rankings import RankIntervals, rank_intervals
from .._answer import Answer, z_quantile
from ._bt_answer import BTAnswer, bt_answer
from ._bt_bootstrap import bt_bootstrap
from . import _bt_interval as _bi
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
        conf_low, conf_high (prompt bootstrap, percentile; Wald with n_resamples=0; the sandwich's
        with interval="sandwich", t intervals when clustered),
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
    answer: Answer | None = field(default=None, repr=False, compare=False)

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


def _present(df: pd.DataFrame, name: str | None, model_a: str, model_b: str) -> str | None:
    """``name`` when it is one of the table's models (the benchmark's baseline as the reference)."""
    if name is None or model_a not in df.columns or model_b not in df.columns:
        return None
    return name if (df[model_a].astype(str) == name).any() or (df[model_b].astype(str) == name).any() else None


def _strengths(d: BTDesign, theta: np.ndarray | None) -> np.ndarray | None:
    """Strengths (..., k), the reference at 0, from parameter vectors (..., p) (only the strength
    parameters are read: a NaN elsewhere, e.g. the position bias of a judge left out of a
    replicate, does not leak into them)."""
    if theta is None:
        return None
    out = np.zeros(theta.shape[:-1] + (d.k,))
    out[..., d.free] = theta[..., :d.k - 1]
    return out


def _strength_cov(d: BTDesign, vcov: np.ndarray) -> np.ndarray:
    """Covariance (k, k) of the strengths (the reference's row and column 0)."""
    v = np.zeros((d.k, d.k))
    v[np.ix_(d.free, d.free)] = vcov[:d.k - 1, :d.k - 1]
    return v


def _centered(s: np.ndarray | None, center: int | None) -> np.ndarray | None:
    """``s - center``: the anchor's strength, or the mean strength (the Elo scale's centre)."""
    if s is None:
        return None
    return s - (s[..., [center]] if center is not None else s.mean(axis=-1, keepdims=True))


def _centered_var(v: np.ndarray, center: int | None) -> np.ndarray:
    """Variance of each ``s_i - center`` from the strengths' covariance ``v``."""
    diag = np.diag(v)
    if center is not None:
        return diag + v[center, center] - 2.0 * v[:, center]
    return diag - 2.0 * v.mean(axis=1) + v.mean()


def _nan_quantiles(draws: np.ndarray, probs: Sequence[float]) -> np.ndarray:
    """``np.nanquantile(draws, probs, axis=0)`` (linear interpolation, numpy's default) in one
    vectorized sort: NaN sorts last, each column interpolates among its own finite values
    (numpy's nanquantile loops over the columns in Python: 10,000 columns took a second)."""
    srt = np.sort(draws, axis=0)
    n_ok = (~np.isnan(draws)).sum(axis=0)
    out = np.full((len(probs), draws.shape[1]), np.nan)
    cols = np.arange(draws.shape[1])
    for i, q in enumerate(probs):
        pos = q * np.maximum(n_ok - 1, 0)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(n_ok - 1, 0))
        frac = pos - lo
        v = srt[lo, cols] + frac * (srt[hi, cols] - srt[lo, cols])
        out[i] = np.where(n_ok > 0, v, np.nan)
    return out


def _interval(point: np.ndarray, se: np.ndarray, draws: np.ndarray | None, level: float, crit: float | None = None):
    """(std_error, low, high): bootstrap SD and percentiles, or Wald (``crit``: the critical value,
    e.g. Student's t of a clustered sandwich; None: the normal quantile)."""
    if draws is None:
        z = z_quantile(level) if crit is None else crit
        return se, point - z * se, point + z * se
    alpha = (1 - level) / 2
    lo, hi = _nan_quantiles(draws, [alpha, 1 - alpha])
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.nanstd(draws, axis=0, ddof=1) if np.isnan(draws).any() else draws.std(axis=0, ddof=1)
    return sd, lo, hi


def _se(var: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.sqrt(np.maximum(var, 0.0))


def _battle_counts(d: BTDesign) -> pd.DataFrame:
    c = d.counts
    k = d.k
    wins = np.bincount(d.a, c[:, 0], k) + np.bincount(d.b, c[:, 1], k)
    losses = np.bincount(d.a, c[:, 1], k) + np.bincount(d.b, c[:, 0], k)
    ties = np.bincount(d.a, c[:, 2], k) + np.bincount(d.b, c[:, 2], k)
    return pd.DataFrame({"n_battles": (wins + losses + ties).astype(np.int64), "wins": wins.astype(np.int64),
                         "losses": losses.astype(np.int64), "ties": ties.astype(np.int64)})


def _strength_table(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float, anchor: str | None,
                    anchor_rating: float, crit: float | None = None) -> pd.DataFrame:
    center = d.models.index(anchor) if anchor is not None else None
    est = _strengths(d, fit.theta)
    elo_c = _centered(est, center)
    v = _strength_cov(d, fit.vcov)
    se_model = _se(np.diag(v))
    s_draws = _strengths(d, draws)
    se, lo, hi = _interval(est, se_model, s_draws, level, crit)
    _, elo_lo, elo_hi = _interval(elo_c, _se(_centered_var(v, center)), _centered(s_draws, center), level, crit)
    tab = pd.DataFrame({"model": list(d.models), "estimate": est, "std_error": se, "conf_low": lo, "conf_high": hi,
                        "model_std_error": se_model, "elo": anchor_rating + ELO_SCALE * elo_c,
                        "elo_conf_low": anchor_rating + ELO_SCALE * elo_lo,
                        "elo_conf_high": anchor_rating + ELO_SCALE * elo_hi})
    tab = pd.concat([tab, _battle_counts(d)], axis=1)
    return tab.sort_values("estimate", ascending=False, kind="stable").reset_index(drop=True)


#: strength differences whose percentiles are computed at once (bounds the win table's memory)
_PAIR_CHUNK_BYTES = 64 * 2**20


def _pair_intervals(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float, i: np.ndarray, j: np.ndarray,
                    crit: float | None = None):
    """Estimate and interval of s_i - s_j for the pairs (i, j), a chunk of pairs at a time."""
    strengths = _strengths(d, draws)
    est = _strengths(d, fit.theta)
    v = _strength_cov(d, fit.vcov) if draws is None else None
    diff = est[i] - est[j]
    lo, hi = np.empty(len(i)), np.empty(len(i))
    step = len(i) if strengths is None else max(1, int(_PAIR_CHUNK_BYTES // (16 * max(len(strengths), 1))))
    by_model = None if strengths is None else np.ascontiguousarray(strengths.T)  # (k, draws): pairs are rows
    alpha = (1 - level) / 2
    for s0 in range(0, len(i), step):
        a, b, sl = i[s0:s0 + step], j[s0:s0 + step], slice(s0, s0 + step)
        if by_model is None:
            se = _se(v[a, a] + v[b, b] - 2 * v[a, b])
            _, lo[sl], hi[sl] = _interval(diff[sl], se, None, level, crit)
        else:
            lo[sl], hi[sl] = _row_quantiles(by_model[a] - by_model[b], [alpha, 1 - alpha])
    return diff, lo, hi


def _row_quantiles(x: np.ndarray, probs: Sequence[float]) -> np.ndarray:
    """The quantiles of each row of ``x`` (rows, draws) as :func:`_nan_quantiles` computes those of
    its columns (numpy's linear interpolation, NaN left out), by partitioning each row at the two
    order statistics a quantile interpolates between instead of sorting it (rows without NaN)."""
    if np.isnan(x).any():
        return _nan_quantiles(x.T, probs)
    n = x.shape[1]
    pos = [q * (n - 1) for q in probs]
    kth = sorted({int(np.floor(p)) for p in pos} | {min(int(np.floor(p)) + 1, n - 1) for p in pos})
    part = np.partition(x, kth, axis=1)
    out = np.empty((len(probs), x.shape[0]))
    for r, p in enumerate(pos):
        lo, frac = int(np.floor(p)), p - np.floor(p)
        hi = min(lo + 1, n - 1)
        out[r] = part[:, lo] + frac * (part[:, hi] - part[:, lo])
    return out


def _win_table(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float, crit: float | None = None
               ) -> pd.DataFrame:
    """P(model preferred to opponent) for every ordered pair; the pairs (j, i) mirror (i, j)."""
    i, j = np.triu_indices(d.k, 1)
    diff, lo, hi = _pair_intervals(d, fit, draws, level, i, j, crit)
    logistic = special.expit
    names = np.asarray(d.models, dtype=object)
    out = pd.DataFrame({"model": np.r_[names[i], names[j]], "opponent": np.r_[names[j], names[i]],
                        "estimate": logistic(np.r_[diff, -diff]), "conf_low": logistic(np.r_[lo, -hi]),
                        "conf_high": logistic(np.r_[hi, -lo])})
    pos = np.r_[i * d.k + j, j * d.k + i]
    return out.iloc[np.argsort(pos, kind="stable")].reset_index(drop=True)


def _param_table(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float, kinds: Sequence[str],
                 crit: float | None = None):
    names = d.param_names()
    idx = [t for t, (kind, _) in enumerate(names) if kind in kinds]
    est = fit.theta[idx]
    se_model = np.sqrt(np.maximum(np.diag(fit.vcov)[idx], 0.0))
    se, lo, hi = _interval(est, se_model, None if draws is None else draws[:, idx], level, crit)
    return idx, names, est, se, lo, hi


def _random_judge_table(d: BTDesign, fit: BTFit, level: float) -> pd.DataFrame:
    """Each judge's position bias: the mean (fixed effect) plus the judge's conditional mode; its
    standard error combines the mean's SE and the conditional SD (as if independent)."""
    modes = fit.extra["judge_modes"]
    mean, se_mean = fit.extra["judge_mean"]
    z = z_quantile(level)
    est = mean + modes["estimate"].to_numpy(dtype=float)
    se = np.sqrt(se_mean ** 2 + modes["std_error"].to_numpy(dtype=float) ** 2)
    per_judge = np.bincount(d.judge, d.counts.sum(axis=1), len(d.judges)).astype(np.int64)
    return pd.DataFrame({"judge": modes["judge"].astype(str).to_numpy(), "parameter": "position_bias",
                         "estimate": est, "std_error": se, "conf_low": est - z * se, "conf_high": est + z * se,
                         "n_battles": [per_judge[d.judges.index(str(j))] for j in modes["judge"]]})


def _judge_table(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float, crit: float | None = None
                 ) -> pd.DataFrame | None:
    if "judge_modes" in fit.extra:
        return _random_judge_table(d, fit, level)
    if not d.n_position + d.n_tau:
        return None
    idx, names, est, se, lo, hi = _param_table(d, fit, draws, level, ("position", "tie"), crit)
    per_judge = np.bincount(d.judge, d.counts.sum(axis=1), len(d.judges)).astype(np.int64)
    label = {"position": "position_bias", "tie": "leniency"}
    return pd.DataFrame({"judge": [names[t][1] for t in idx], "parameter": [label[names[t][0]] for t in idx],
                         "estimate": est, "std_error": se, "conf_low": lo, "conf_high": hi,
                         "n_battles": [per_judge[d.judges.index(names[t][1])] for t in idx]})


def _covariate_table(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float, crit: float | None = None
                     ) -> pd.DataFrame | None:
    if not d.cov_names:
        return None
    idx, names, est, se, lo, hi = _param_table(d, fit, draws, level, ("covariate",), crit)
    return pd.DataFrame({"term": [names[t][1] for t in idx], "estimate": est, "std_error": se, "conf_low": lo,
                         "conf_high": hi})


#: largest number of models that gets compact letters by default (multcomp's insert-absorb grows
#: fast: 62 s at 200 models)
LETTERS_MAX_MODELS = 100
#: pair-draw products of the joint-normal rank intervals (n_sim x pairs): n_sim is lowered to keep
#: within it for many models (at least 1,000 draws; 10,000 at 200 models)
_RANK_WORK = 2e8
#: largest number of models whose rank intervals are computed by default (ranks=None): their cost
#: grows with the pairs (k^2 / 2) times the draws
RANKS_MAX_MODELS = 500


def _without_ties(d: BTDesign) -> tuple[BTDesign, list[ResultWarning]]:
    """Davidson's model of battles none of which is a tie: the tie propensity's maximum is nu = 0
    (log nu = -inf, where Newton never arrives), and the model is then Bradley-Terry's -- fitted
    as such (ties="drop" drops nothing here), said in a warning."""
    if d.ties != "davidson" or d.counts[:, 2].sum() > 0:
        return d, []
    return dataclasses.replace(d, ties="drop"), [ResultWarning("no_ties", (
        "no battle is a tie: Davidson's tie model reduces to the Bradley-Terry model (tie propensity nu = 0, "
        "log(nu) = -inf), which is what is fitted; the judges have no leniency parameter"))]


def _want_ranks(ranks: bool | None, k: int) -> bool:
    return k <= RANKS_MAX_MODELS if ranks is None else bool(ranks)


def _ranks_warning(ranks: bool, k: int) -> list[ResultWarning]:
    if ranks or k <= RANKS_MAX_MODELS:
        return []
    return [ResultWarning("ranks_skipped", f"{k} models: the simultaneous rank intervals (over "
                          f"{k * (k - 1) // 2:,} pairs) "
                          f"are skipped by default beyond {RANKS_MAX_MODELS} models; pass ranks=True (--ranks) to "
                          "compute them")]


def _rank_n_sim(k: int) -> int:
    pairs = k * (k - 1) / 2
    return int(min(100_000, max(1_000, _RANK_WORK // max(pairs, 1))))


def _ranks(d: BTDesign, fit: BTFit, draws: np.ndarray | None, level: float, random_state: Any, letters: bool):
    """Simultaneous rank intervals (:func:`mixedeval.rank_intervals`) from the bootstrap replicates
    of the strengths (replicates where a model had no battles left out), else from their joint
    normal distribution (vcov; fewer normal draws for many models, see :func:`_rank_n_sim`)."""
    est = pd.Series(_strengths(d, fit.theta), index=list(d.models))
    if draws is not None:
        sd = _strengths(d, draws)
        sd = sd[np.isfinite(sd).all(axis=1)]
        return rank_intervals(est, draws=sd, level=level, random_state=random_state, letters=letters)
    return rank_intervals(est, vcov=_strength_cov(d, fit.vcov), level=level, random_state=random_state,
                          n_sim=_rank_n_sim(d.k), letters=letters)


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


def _check_args(level: Any, n_resamples: Any, anchor_rating: Any, ties: Any, min_judge_battles: Any
                ) -> tuple[float, int, float]:
    level = require_level(level)
    n = 0 if n_resamples in (0, None) else check_n_resamples(n_resamples, minimum=2)
    if ties not in TIES:
        raise DataError(f"ties must be one of {', '.join(map(repr, TIES))}; got {ties!r}")
    try:
        rating = float(anchor_rating)
    except (TypeError, ValueError, OverflowError):
        raise DataError(f"anchor_rating must be a number (e.g. 1000), got {anchor_rating!r}") from None
    if not np.isfinite(rating) or abs(rating) > 1e12:
        raise DataError(f"anchor_rating must be a finite number (e.g. 1000: FastChat's initial rating), got "
                        f"{anchor_rating!r}")
    if isinstance(min_judge_battles, bool) or not isinstance(min_judge_battles, (int, float, np.integer, np.floating)) \
            or not (min_judge_battles >= 0 and np.isfinite(min_judge_battles)):
        raise DataError(f"min_judge_battles must be a number >= 0 (0: every judge gets its own parameters), got "
                        f"{min_judge_battles!r}")
    return level, n, rating


def _label(v: Any, what: str) -> str | None:
    """A model name given as an argument (anchor, reference), as the design names models (str)."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int, float, np.integer, np.floating)):
        raise DataError(f"{what} must be a model name (a string), got {type(v).__name__} {str(v)[:40]}")
    return str(v)


def _weight_column(df: pd.DataFrame, weight: Any) -> str | None:
    """``weight``: a column, False / "" (none), or None: the column "weight" when the table has one
    (as read_battles writes it)."""
    if weight is None:
        return "weight" if "weight" in df.columns else None
    if weight is False or weight == "":
        return None
    return weight


def _judge_warnings(d: BTDesign, position_bias: bool, min_judge_battles: float) -> list[ResultWarning]:
    out = []
    if d.n_pooled:
        out.append(ResultWarning("judges_pooled", (
            f"{d.n_pooled} judge(s) with fewer than {min_judge_battles:g} battles share one set of judge parameters "
            f"({POOLED_JUDGES!r}): too few battles to estimate a position bias"
            f"{' and a leniency' if d.ties == 'davidson' else ''} "
            "of their own; min_judge_battles=0 gives every judge its own (or judge_effect='random' shrinks them), "
            "judge=None ignores the judges")))
    if position_bias and not d.position_bias:
        out.append(ResultWarning("position_unknown", "no battle records which answer the judge saw first (e.g. "
                                 "AlpacaEval annotations without is_switched_outputs): the model has no position-bias "
                                 "term, and a position bias of the judge, if any, is not corrected"))
    elif d.position_bias and d.n_position < len(d.judges):
        names = [d.judges[i] for i in np.flatnonzero(~d.position_judges)][:5]
        out.append(ResultWarning("position_unknown", f"the order the answers were shown in is unknown for every "
                                 f"battle of the judge(s) {names}: they have no position-bias term"))
    return out


def _bootstrap(d: BTDesign, fit: BTFit, n: int, ss: Any, resample_judges: bool, executor: Any, progress: Any,
               ranks: bool, cluster: tuple[str, ...] | None = None):
    """The replicates and the warnings about them."""
    draws, conv = bt_bootstrap(d, fit.theta, n_resamples=n, ss=ss, resample_judges=resample_judges,
                               executor=executor, progress=progress, ranks=ranks, cluster=cluster)
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


def _one_blas_thread(func: Any) -> Any:
    """Run ``func`` with numpy's BLAS on one thread (:func:`mixedeval.inference._bt_numpy.one_blas_thread`)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_blas_thread():
            return func(*args, **kwargs)

    return wrapper


@_one_blas_thread
def bradley_terry(battles: Any, model_a: str = "model_a", model_b: str = "model_b", winner: str = "winner", *,
                  prompt: str | None = None, judge: str | None = None, position: str | None = None,
                  ties: str = "davidson",
                  position_bias: bool = True, covariates: Sequence[str] | None = None, anchor: str | None = None,
                  anchor_rating: float = 1000.0, prompt_effect: str | None = None, judge_effect: str = "fixed",
                  level: float = 0.95,
                  n_resamples: int = 1000, resample_judges: bool = False, ranks: bool | None = None,
                  random_state: Any = None, executor: Any = None, weight: str | bool | None = None,
                  min_judge_battles: float = 50, reference: str | None = None, letters: bool | None = None,
                  progress: bool | None = None, interval: str = "bootstrap",
                  cluster: str | Sequence[str] | None = None, reweight: str | None = None,
                  min_pair_battles: float = 50, estimator: str = "ml") -> BradleyTerryResult:
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
    ranks : compute the simultaneous rank intervals (None: up to :data:`RANKS_MAX_MODELS` models,
        beyond that skipped with a ``ranks_skipped`` warning; True / False: always / never).
    letters : the compact letter display of the rank intervals (None: up to
        :data:`LETTERS_MAX_MODELS` models; multcomp's insert-absorb takes a minute at 200 models).
    random_state, executor : the draws' seed and where the replicates run (same numbers everywhere).
    weight : column of battle weights (a battle counts ``weight`` times, its prompt's battles kept
        together in the bootstrap); None: the column ``weight`` when the table has one (as
        :func:`mixedeval.read_battles` writes it: Arena-Hard ``>>`` verdicts 3, AlpacaEval's weighted
        preferences), False: every row counts once.
    min_judge_battles : judges with fewer battles (total weight) than this share one set of judge
        parameters ("(pooled judges)", a ``judges_pooled`` warning); 0: every judge its own.
    reference : the model whose log-odds strength is 0 (None: ``anchor``, else the benchmark's
        baseline when the table names one -- ``df.attrs["baseline"]`` as read_battles sets it for
        Arena-Hard and AlpacaEval -- else the first model by name). Stored as ``result.reference``.
    progress : show the bootstrap's progress bar (None: for long runs only).
    interval : "bootstrap" (default: the unit bootstrap with n_resamples > 0, Wald intervals with
        n_resamples=0) or "sandwich" (the CLT for M-estimators: the inverse information around the
        clustered sum of the battles' scores; no resampling; :mod:`mixedeval.inference._bt_sandwich`).
    cluster : the units the intervals treat as independent: "prompt" (default with a prompt column),
        "judge" (the voter: the raw judge labels, never pooled), ("judge", "prompt") (both: the
        sandwich is Cameron-Gelbach-Miller's two-way V_prompt + V_judge - V_prompt:judge; the bootstrap
        draws prompts and judges independently) or "battle" (sandwich only: every battle independent,
        arena-rank's; the default without a prompt column). Clustered sandwich intervals use CR1
        (G/(G-1), R's ``sandwich::vcovCL(type="HC0", cadjust=TRUE)``) and Student's t with G - 1 df
        (G: the fewest clusters of the dimensions used).
    reweight : None or "pair": each battle weighs 1 / max(battles of its pair, ``min_pair_battles``)
        (LMArena's inverse pair frequency, arena-rank's ``reweighted=True``, min_pair_count 50).
    estimator : "ml" (maximum likelihood of the model above) or "arena-rank" (arena-rank 0.1.1's
        model exactly: ties as half wins, no judge or position terms -- a judge column then only
        clusters -- covariates standardised and ridge-penalised (reg=1; its contextual Bradley-Terry,
        weights rescaled to mean 1), and with interval="sandwich", cluster="battle" its sandwich with
        ``hessian_reg`` 1e-5; the Elo columns at anchor None / 1000 are its ratings and intervals).
    """
    opt = _bi.resolve(interval, cluster, estimator, reweight, min_pair_battles, ties, prompt_effect, judge_effect,
                      prompt, judge, position_bias, n_resamples, resample_judges, covariates)
    ties, position_bias, model_judge, dims, n_resamples, resample_judges, arena = (
        opt.ties, opt.position_bias, opt.model_judge, opt.dims, opt.n_resamples, opt.resample_judges, opt.arena)
    level, n, rating = _check_args(level, n_resamples, anchor_rating, ties, min_judge_battles)
    if ranks is not None and not isinstance(ranks, (bool, np.bool_)):
        raise DataError(f"ranks must be None (automatic), True or False, got {ranks!r}")
    anchor, reference = _label(anchor, "anchor"), _label(reference, "reference")
    ss = seed_sequence(random_state)
    if resample_judges and not judge:
        raise DataError("resample_judges=True needs a judge column (judge=...)")
    df = as_pandas(battles) if not isinstance(battles, pd.DataFrame) else battles
    judge_random = _check_judge_effect(judge_effect, model_judge, position_bias)
    baseline = df.attrs.get("baseline") if isinstance(df.attrs.get("baseline"), str) else None
    if (interval == "sandwich" or dims) and (prompt_effect is not None or judge_random):
        raise DataError("interval='sandwich' and cluster= go with fixed-effect models: prompt_effect and "
                        "judge_effect='random' model the clustering instead (their intervals are glmer's)")
    work, wcol = _bi.working_table(df, model_a, model_b, _weight_column(df, weight), reweight, min_pair_battles,
                                   estimator, list(covariates or []))
    d = build_design(work, model_a, model_b, winner, prompt=prompt, judge=model_judge, ties=ties,
                     position_bias=position_bias and not judge_random, covariates=covariates,
                     anchor=reference or anchor or _present(df, baseline, model_a, model_b), position=position,
                     weight=wcol, min_judge_battles=0 if judge_random else min_judge_battles,
                     keep_first=bool(position_bias), canonical=prompt_effect != "random",
                     cluster_by=_bi.cluster_by(dims, prompt, judge))
    if anchor is not None and anchor not in d.models:
        raise DataError(f"anchor {anchor!r} is not a model of the battles; choose one of {list(d.models)[:10]}")
    ranks = _want_ranks(ranks, d.k)
    d, tie_warn = _without_ties(d)
    fit = fit_bt(d, level=level, prompt_effect=prompt_effect, judge_random=judge_random,
                 ridge=_bi.ridge(arena, covariates, len(df)))
    model_vcov, sand = fit.vcov, (_bi.sandwich(d, fit, dims, arena, len(df)) if interval == "sandwich" else None)
    fit = dataclasses.replace(fit, vcov=sand.vcov) if sand else fit
    warns = (list(fit.warnings) + list(sand.warnings if sand else []) + _ranks_warning(ranks, d.k) + tie_warn + _design_warnings(d)
             + _judge_warnings(d, position_bias and not judge_random, min_judge_battles))
    mixed = prompt_effect is not None or judge_random
    if n and mixed:
        warns.append(ResultWarning("no_bootstrap", f"random effects: the intervals are glmer's Wald intervals (the "
                                   f"variances are in the model); the bootstrap (n_resamples={n}) refits "
                                   "fixed-effect models and is not run with them"))
        n = 0
    draws = None
    if n:
        draws, bw = _bootstrap(d, fit, n, ss, resample_judges, executor, progress, bool(ranks), dims)
        warns += bw
    units = (("prompt", "judge") if resample_judges else dims if dims else (d.unit_label,))
    letters = d.k <= LETTERS_MAX_MODELS if letters is None else bool(letters)
    crit = _bi.critical_value(level, sand.df) if sand else None
    rank_res = _ranks(d, fit, draws, level, random_state, letters) if ranks else None
    method = _method(d, sand, n, dims, resample_judges, mixed)
    res = BradleyTerryResult(
        table=_with_model_se(d, _strength_table(d, fit, draws, level, anchor, rating, crit), model_vcov, sand),
        win_probabilities=_win_table(d, fit, draws, level, crit), judges=_judge_table(d, fit, draws, level, crit),
        covariates=_covariate_table(d, fit, draws, level, crit), ranks=None if rank_res is None else rank_res.table,
        reference=d.models[d.ref], anchor=anchor, anchor_rating=rating, ties=ties, level=level,
        interval_method=method, resample_units=units if (n or sand) else (), n_battles=int(d.counts.sum()),
        n_models=d.k, n_prompts=d.n_units if prompt else None, n_judges=len(d.judges), loglik=fit.loglik,
        prompt_sd=fit.prompt_sd, warnings=dedupe_warnings(warns),
        provenance=provenance("bradley_terry", ss if n else None, engine=fit.engine, ties=ties,
                              position_bias=bool(position_bias), prompt_effect=prompt_effect,
                              judge_effect=judge_effect, judge_sd=fit.extra.get("judge_sd"),
                              position_bias_mean=fit.extra.get("judge_mean", (None,))[0],
                              resample_units=list(units) if n else [], n_resamples=n,
                              weight=_weight_column(df, weight), min_judge_battles=min_judge_battles,
                              judges_pooled=d.n_pooled, letters=letters,
                              **_bi.provenance_extra(interval, dims, reweight, min_pair_battles, estimator, sand)),
        rank_result=rank_res, draws=draws, vcov=fit.vcov)
    return dataclasses.replace(res, answer=bt_answer(res.table, res.ranks, rank_res, level, n,
                                                     interval=method if sand else None,
                                                     df=sand.df if sand else None,
                                                     cov=_model_cov(d, fit.vcov) if sand else None))


def _method(d: BTDesign, sand: Any, n: int, dims: Any, resample_judges: bool, mixed: bool) -> str:
    """The intervals' method as the result names it."""
    if sand is not None:
        return sand.label
    if n and dims:
        return f"{' and '.join(dims)} bootstrap (percentile, {n} replicates)"
    if n:
        return f"{d.unit_label} bootstrap{' and judge' if resample_judges else ''} (percentile, {n} replicates)"
    return "Wald (glmer with random effects)" if mixed else "Wald (likelihood standard errors)"


def _with_model_se(d: BTDesign, table: pd.DataFrame, model_vcov: np.ndarray, sand: Any) -> pd.DataFrame:
    """With the sandwich, ``model_std_error`` stays the likelihood's SE (beside the sandwich's)."""
    if sand is None:
        return table
    se_lik = pd.Series(_se(np.diag(_strength_cov(d, model_vcov))), index=list(d.models))
    return table.assign(model_std_error=se_lik.loc[list(table["model"])].to_numpy())


def _model_cov(d: BTDesign, vcov: np.ndarray) -> pd.DataFrame:
    """The strengths' covariance as a models x models frame."""
    return pd.DataFrame(_strength_cov(d, vcov), index=list(d.models), columns=list(d.models))
