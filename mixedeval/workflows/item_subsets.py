"""A few items for the whole benchmark: anchor items, full-benchmark scores with intervals, and
adaptive item choice, from an IRT calibration (an item bank).

* :func:`select_items` chooses ``n_items`` anchor items from a calibrated bank: ``"stratified"``
  (difficulty strata of equal size, in each the item with the largest information averaged over
  the calibration population), ``"cluster"`` (tinyBenchmarks' clustering of correctness
  patterns: k-means of the items' 0/1 vectors across the calibration systems, the item nearest
  each centroid, weight = cluster size; Maia Polo et al. 2024, Sec. 3.1) or ``"random"``.
* :func:`estimate_scores` estimates each new system's accuracy on the whole bank from its answers
  to a subset, with the estimators of Maia Polo et al. (2024, "tinyBenchmarks: evaluating LLMs
  with fewer examples", ICML), each with an interval (see :func:`estimate_scores`).
* :func:`next_items` gives the most informative next items at the current ability estimate
  (Fisher information, as Fluid Benchmarking does: Hofmann et al. 2025) with a stopping rule on
  the ability's standard error.

The calibration is the fit of :func:`mixedeval.irt` or of the numpy engine
(:mod:`mixedeval.inference._irt_numpy`); abilities follow the package's convention
``logit P(correct) = discrimination * (ability - difficulty)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import _answer
from .._random import as_generator, seed_sequence
from ..data._table_guard import guarded_table
from ..data.validate import require_level
from ..errors import DataError
from ..results import ResultWarning
from ._common import _WorkflowResult
from ..inference._irt_numpy import response_matrix
from ._irt_bank import Bank, Posterior, as_bank, fold_banks, posterior

METHODS = ("stratified", "information", "cluster", "random")
#: the estimators, headline first
ESTIMATORS = ("gp_irt", "p_irt", "irt", "anchor", "posterior")
#: (systems x nodes x items) values computed at once
CHUNK_VALUES = 4_000_000
#: leaderboards with simultaneous rank intervals (and letters) up to this many systems
RANK_INTERVALS_MAX = 60


# ============================================================================= select_items
@dataclass(frozen=True, repr=False)
class ItemSubset(_WorkflowResult):
    """Anchor items chosen from a calibrated bank.

    ``table``: item, weight (the anchor's share of the bank: stratum or cluster size / bank
    size; 1 / n_items for random items), difficulty, discrimination, information (averaged over
    the calibration population), group (stratum or cluster number), group_size.
    """

    table: pd.DataFrame
    method: str
    n_bank: int
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    @property
    def anchors(self) -> tuple[str, ...]:
        """The anchor items' names."""
        return tuple(self.table["item"])

    @property
    def weights(self) -> pd.Series:
        """The anchors' weights (summing to 1), indexed by item."""
        return self.table.set_index("item")["weight"]

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"{len(self.table)} anchor items of {self.n_bank} ({self.method})"


def _kmeans(X: np.ndarray, k: int, rng: np.random.Generator, max_iter: int = 100) -> np.ndarray:
    """Lloyd's k-means with k-means++ seeding (Arthur & Vassilvitskii 2007); returns the labels."""
    n = X.shape[0]
    sq = np.einsum("ij,ij->i", X, X)
    centers = [int(rng.integers(n))]
    d2 = np.maximum(sq - 2 * X @ X[centers[0]] + sq[centers[0]], 0.0)
    for _ in range(1, k):
        tot = d2.sum()
        c = int(rng.choice(n, p=d2 / tot)) if tot > 0 else int(rng.integers(n))
        centers.append(c)
        d2 = np.minimum(d2, np.maximum(sq - 2 * X @ X[c] + sq[c], 0.0))
    C = X[centers].copy()
    labels = np.full(n, -1)
    for _ in range(max_iter):
        dist = sq[:, None] - 2 * X @ C.T + np.einsum("ij,ij->i", C, C)[None, :]
        new = np.argmin(dist, axis=1)
        counts = np.bincount(new, minlength=k)
        for j in np.nonzero(counts == 0)[0]:  # an empty cluster takes the worst-fitted item
            far = int(np.argmax(dist[np.arange(n), new]))
            new[far] = j
            dist[far, :] = -np.inf
        if np.array_equal(new, labels):
            break
        labels = new
        C = np.vstack([X[labels == j].mean(axis=0) for j in range(k)])
    return labels


def _by_cluster(bank: Bank, n_items: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cal = bank.calibration
    if cal is None or cal.n.sum() == 0:
        raise DataError("method='cluster' clusters the calibration systems' answers, but this calibration has no "
                        ".responses; use method='stratified'")
    frac = np.where(cal.n > 0, cal.y / np.maximum(cal.n, 1), np.nan)
    col_mean = np.nanmean(np.where(np.isfinite(frac), frac, np.nan), axis=0)
    X = np.where(np.isfinite(frac), frac, col_mean[None, :]).T  # items x systems
    X = np.nan_to_num(X, nan=0.5)
    labels = _kmeans(X, n_items, rng)
    chosen, group, size = [], [], []
    for j in range(n_items):
        members = np.nonzero(labels == j)[0]
        center = X[members].mean(axis=0)
        best = members[np.argmin(((X[members] - center) ** 2).sum(axis=1))]
        chosen.append(best)
        group.append(j)
        size.append(len(members))
    return np.array(chosen), np.array(group), np.array(size)


def _by_strata(bank: Bank, n_items: int, info: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.argsort(bank.difficulty, kind="stable")
    strata = np.array_split(order, n_items)
    chosen = np.array([s[np.argmax(info[s])] for s in strata])
    return chosen, np.arange(n_items), np.array([len(s) for s in strata])


def _choose(bank: Bank, n_items: int, method: str, rng: np.random.Generator):
    """The anchors of ``method`` in ``bank``: positions, group, group size, average information."""
    I = len(bank.items)
    info = bank.expected_information()
    if method == "random":
        chosen = np.sort(rng.choice(I, size=n_items, replace=False))
        group, size = np.arange(n_items), np.full(n_items, I / n_items)
    elif method == "information":
        chosen = np.argsort(-info, kind="stable")[:n_items]
        group, size = np.arange(n_items), np.full(n_items, I / n_items)
    elif method == "stratified":
        chosen, group, size = _by_strata(bank, n_items, info)
    else:
        chosen, group, size = _by_cluster(bank, n_items, rng)
    return chosen, group, size, info


def select_items(calibration: Any, n_items: int = 100, method: str = "stratified", *,
                 random_state: Any = None) -> ItemSubset:
    """Choose ``n_items`` anchor items from a calibrated item bank.

    ``method``:

    * ``"stratified"``: the bank is cut into ``n_items`` strata of (nearly) equal size by
      difficulty; in each the item with the largest Fisher information averaged over the
      calibration population (``E[discrimination^2 p (1 - p)]`` over N(0, sigma^2), 41-node
      Gauss-Hermite) is the anchor, weighted by its stratum's share of the bank;
    * ``"cluster"``: tinyBenchmarks' correctness clustering (Maia Polo et al. 2024, Sec. 3.1):
      k-means with ``n_items`` clusters of the items' correctness vectors across the calibration
      systems (k-means++ seeding with ``random_state``), the item nearest each centroid is the
      anchor, weight = cluster size / bank size;
    * ``"information"``: the ``n_items`` items of largest average information, equal weights
      (the most precise ability; the anchor mean is then not representative of the bank);
    * ``"random"``: a simple random sample, equal weights (the baseline).

    Returns an :class:`ItemSubset` (``.anchors``, ``.weights``, ``.table``)."""
    bank = as_bank(calibration)
    if method not in METHODS:
        raise DataError(f"method={method!r} must be one of {', '.join(map(repr, METHODS))}")
    I = len(bank.items)
    if isinstance(n_items, bool) or not (isinstance(n_items, (int, np.integer)) and 1 <= n_items < I):
        raise DataError(f"n_items={n_items!r} must be a whole number from 1 to {I - 1} (the bank has {I} items)")
    chosen, group, size, info = _choose(bank, n_items, method, as_generator(random_state))
    table = pd.DataFrame({"item": [bank.items[i] for i in chosen], "weight": size / size.sum(),
                          "difficulty": bank.difficulty[chosen], "discrimination": bank.discrimination[chosen],
                          "information": info[chosen], "group": group, "group_size": size})
    ws = []
    if method == "cluster" and np.any(size == 1):
        ws.append(ResultWarning("singleton_clusters", f"{int(np.sum(size == 1))} cluster(s) hold a single item"))
    prov = {"method": method, "n_items": int(n_items), "random_state": random_state, "calibration_engine": bank.engine,
            "model": bank.model}
    return ItemSubset(table=table, method=method, n_bank=I, warnings=tuple(ws), provenance=prov)


# ============================================================================= estimate_scores
def _chunk_rows(n_nodes: int, n_items: int) -> int:
    return max(1, CHUNK_VALUES // max(1, n_nodes * n_items))


def _core(bank: Bank, y: np.ndarray, n: np.ndarray, w_anchor: np.ndarray) -> dict[str, np.ndarray]:
    """Every estimator and the posterior predictive moments of the full-bank accuracy for systems
    with ``y`` correct of ``n`` trials (S x I); ``w_anchor`` weights the bank items (anchors > 0)."""
    I = len(bank.items)
    obs = n > 0
    frac = np.where(obs, y / np.maximum(n, 1), 0.0)
    post = posterior(bank, y, n)
    out = {k: np.empty(len(y)) for k in ("mean", "var", "irt", "p_irt", "anchor")}
    step = _chunk_rows(post.theta.shape[1], I)
    for lo in range(0, len(y), step):
        sl = slice(lo, lo + step)
        unseen = ~obs[sl]
        P = bank.prob(post.theta[sl])  # s x K x I
        pu = P * unseen[:, None, :]
        s1, s2 = pu.sum(axis=2), (pu * P).sum(axis=2)
        pw = post.weight[sl]
        e_t = np.sum(pw * s1, axis=1)
        var_t = np.maximum(np.sum(pw * s1 ** 2, axis=1) - e_t ** 2, 0.0)
        e_pq = np.sum(pw * (s1 - s2), axis=1)
        obs_sum = frac[sl].sum(axis=1)
        out["mean"][sl] = (obs_sum + e_t) / I
        out["var"][sl] = (e_pq + var_t) / I ** 2
        p_map = bank.prob(post.mode[sl])  # s x I
        out["irt"][sl] = p_map.mean(axis=1)
        out["p_irt"][sl] = (obs_sum + np.sum(p_map * unseen, axis=1)) / I
        wa = w_anchor[None, :] * obs[sl]
        tot = wa.sum(axis=1)
        out["anchor"][sl] = np.where(tot > 0, (wa * frac[sl]).sum(axis=1) / np.where(tot > 0, tot, 1), np.nan)
    out["posterior"] = out["mean"]
    out["_post"] = post  # type: ignore[assignment]
    return out


def _mse(core: dict[str, Any], est: np.ndarray) -> np.ndarray:
    """Posterior mean squared error of an estimate of the full-bank accuracy: predictive variance
    plus the squared distance to the predictive mean."""
    return core["var"] + (core["mean"] - est) ** 2


def _gp(core: dict[str, Any], lam: float) -> np.ndarray:
    anc = core["anchor"]
    return np.where(np.isfinite(anc), lam * anc + (1 - lam) * core["p_irt"], core["p_irt"])


@dataclass(frozen=True)
class _Tuning:
    gp_lambda: float
    half_width: dict[str, float]  # the interval's half-width in units of the model's root mean squared error
    table: pd.DataFrame
    source: str
    n_systems: int = 0
    conformal: bool = True


#: anchor selections that use the calibration (re-done on each fold's bank when cross-fitting)
DATA_METHODS = ("stratified", "information", "cluster")
#: fewer cross-fitted calibration systems than this: the interval's quantile is unstable (a warning)
MIN_CALIBRATION_SYSTEMS = 50


@dataclass(frozen=True)
class _Design:
    """How the anchors came about: re-selected on each fold's bank (``method`` in
    :data:`DATA_METHODS`) or the same items and weights on every fold."""

    subset: np.ndarray
    weight: np.ndarray
    method: str | None = None
    n_items: int = 0
    random_state: Any = None

    def on(self, bank: Bank) -> tuple[np.ndarray, np.ndarray]:
        if self.method not in DATA_METHODS:
            return self.subset, self.weight
        seed = self.random_state if isinstance(self.random_state, (int, np.integer)) else 0  # never a user's generator
        chosen, _, size, _ = _choose(bank, self.n_items, self.method, as_generator(seed))
        w = np.zeros(len(bank.items))
        w[chosen] = size / size.sum()
        return chosen, w


def _gather(bank: Bank, design: _Design, n_folds: int, random_state: Any):
    """Cross-fitted estimates for the calibration systems that answered every item: each fold's
    systems are scored by the bank refitted without them, from their answers to the anchors
    (re-selected on that bank when the selection used the calibration)."""
    cal = bank.calibration
    rows = np.nonzero((cal.n > 0).all(axis=1))[0]
    fold, banks = fold_banks(bank, rows, n_folds, random_state)
    parts = []
    for f, fb in enumerate(banks):
        r = rows[fold == f]
        subset, w = design.on(fb)
        mask = np.zeros(len(bank.items), dtype=bool)
        mask[subset] = True
        core = _core(fb.shrunk(), cal.y[r] * mask, cal.n[r] * mask, w)
        core["truth"] = (cal.y[r] / cal.n[r]).mean(axis=1)
        parts.append(core)
    keys = ("mean", "var", "irt", "p_irt", "anchor", "posterior", "truth")
    return {k: np.concatenate([c[k] for c in parts]) for k in keys}


def conformal_quantile(scores: np.ndarray, level: float) -> float:
    """The ``ceil(level (n + 1))``-th smallest of ``n`` scores (split conformal prediction: a new
    exchangeable score is at most this with probability >= ``level``; Vovk et al. 2005, Lei et
    al. 2018); infinite when ``n`` is too small for ``level``."""
    s = np.sort(np.asarray(scores, dtype=float))
    k = math.ceil(level * (len(s) + 1))
    return float(s[k - 1]) if 1 <= k <= len(s) else math.inf


def _stacking_lambda(core: dict[str, Any]) -> float:
    """gp-IRT's weight of the anchor estimate: the least-squares weight of the convex
    combination over the cross-fitted systems, ``E[(Z - p)(a - p)] / E[(a - p)^2]`` clipped to
    [0, 1] (p: p-IRT, a: anchor, Z: the known full-bank accuracy). Maia Polo et al.'s heuristic
    ``b^2 / (b^2 + s^2)`` is this weight when the two errors are uncorrelated; they are not (the
    same anchor answers feed both)."""
    t, p, a = core["truth"], core["p_irt"], core["anchor"]
    ok = np.isfinite(a) & np.isfinite(p) & np.isfinite(t)
    den = float(np.sum((a[ok] - p[ok]) ** 2))
    return float(np.clip(np.sum((t[ok] - p[ok]) * (a[ok] - p[ok])) / den, 0.0, 1.0)) if den > 0 else 0.0


def _tuning_table(core: dict[str, Any], lam: float, z: float, level: float) -> tuple[dict[str, float], pd.DataFrame]:
    rows, half = [], {}
    truth = core["truth"]
    for e in ESTIMATORS:
        est = _gp(core, lam) if e == "gp_irt" else core[e]
        ok = np.isfinite(est) & np.isfinite(truth)
        err = np.abs(est[ok] - truth[ok])
        sd = np.sqrt(_mse(core, est)[ok])
        pos = sd > 0
        q = conformal_quantile(err[pos] / sd[pos], level) if pos.any() else math.inf
        conformal = math.isfinite(q)
        if not conformal:  # too few systems: the model's interval widened by the mean squared error ratio
            q = z * math.sqrt(max(1.0, float(np.mean(err ** 2) / np.mean(sd ** 2)))) if pos.any() else z
        half[e] = q
        rows.append({"estimator": e, "n_systems": int(ok.sum()),
                     "rmse": float(np.sqrt(np.mean(err ** 2))) if ok.any() else np.nan,
                     "mean_abs_error": float(np.mean(err)) if ok.any() else np.nan,
                     "model_sd": float(np.sqrt(np.mean(sd ** 2))) if ok.any() else np.nan,
                     "quantile": q, "inflation": (q / z) ** 2, "conformal": conformal,
                     "coverage": float(np.mean(err <= q * sd)) if ok.any() else np.nan})
    return half, pd.DataFrame(rows)


def _tune(bank: Bank, design: _Design, z: float, level: float, n_folds: int, random_state: Any) -> _Tuning | None:
    """gp-IRT's weight and each estimator's interval from cross-fitted calibration systems
    (their full-bank accuracy is known; the bank that scores them never saw them)."""
    cal = bank.calibration
    if cal is None or n_folds < 2 or (cal.n > 0).all(axis=1).sum() < 2 * n_folds:
        return None
    core = _gather(bank, design, n_folds, random_state)
    lam = _stacking_lambda(core)
    half, table = _tuning_table(core, lam, z, level)
    return _Tuning(lam, half, table, f"{n_folds}-fold cross-fitted calibration systems", len(core["truth"]),
                   bool(table["conformal"].all()))


def _model_tuning(core: dict[str, Any], z: float) -> _Tuning:
    """Without calibration answers: gp-IRT's weight from the posterior MSEs, the model's intervals."""
    b2 = float(np.mean(_mse(core, core["p_irt"])))
    s2 = float(np.nanmean(_mse(core, core["anchor"])))
    lam = b2 / (b2 + s2) if (b2 + s2) > 0 and np.isfinite(s2) else 0.0
    return _Tuning(lam, {e: z for e in ESTIMATORS}, pd.DataFrame(), "model only")


@dataclass(frozen=True, repr=False)
class SubsetScores(_answer.AnswerMixin, _WorkflowResult):
    """Full-benchmark accuracies estimated from answers to a subset of a calibrated bank.

    ``table``: system, estimator, estimate, std_error, conf_low, conf_high, n_answered (one row
    per system and estimator; estimators ``gp_irt``, ``p_irt``, ``irt``, ``anchor``, ``posterior``,
    see :func:`estimate_scores`). ``answer`` (:class:`mixedeval._answer.Answer`; views
    ``leaderboard``, ``headline``, ``differences``, ``direction``, ``p_value``): best first by the
    headline estimator (``estimator``), with simultaneous rank intervals (up to 60 systems; beyond,
    the ranks and intervals of the estimates only); the headline and every pair (up to 200
    systems) as Wald differences of independent estimates. ``abilities``: system, ability (posterior
    mode), std_error, ability_eap, std_error_eap, n_answered. ``tuning``: per estimator, its error
    on the cross-fitted calibration systems answering the same subset (rmse, mean_abs_error), the
    model's root mean squared error there (model_sd), the conformal quantile of the studentized
    errors that sets the half-width (quantile; ``conformal`` False when too few systems, see
    :func:`estimate_scores`), its square over the normal quantile's (inflation) and the coverage
    on those systems.
    """

    table: pd.DataFrame
    answer: _answer.Answer
    abilities: pd.DataFrame
    tuning: pd.DataFrame
    estimator: str
    gp_lambda: float
    level: float
    n_bank: int
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _print_tables = ("leaderboard", "table", "tuning")
    _answer_priority = 60

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"Full-benchmark accuracy from item subsets ({self.estimator}; bank of {self.n_bank} items)"

    def _scalars(self):
        out = [("gp-IRT weight of the anchor estimate (lambda)", f"{self.gp_lambda:.3f}")]
        if self.headline is not None:
            out.append(("headline", self.headline_text()))
        return out

    def estimates(self, estimator: str | None = None) -> pd.DataFrame:
        """The rows of one estimator (default: the headline one)."""
        e = estimator or self.estimator
        if e not in ESTIMATORS:
            raise DataError(f"estimator={e!r} must be one of {', '.join(ESTIMATORS)}")
        return self.table[self.table["estimator"] == e].reset_index(drop=True)


def _new_responses(bank: Bank, responses: Any, score: str, system: str, item: str):
    if isinstance(responses, pd.Series):  # one system: {item: score}
        df = pd.DataFrame({system: "system", item: [str(i) for i in responses.index],
                           score: responses.to_numpy()})
    else:
        df = guarded_table(responses)
        if score in df.columns and item in df.columns and system not in df.columns:
            df = df.assign(**{system: "system"})
    resp = response_matrix(df, score=score, system=system, item=item)
    idx = bank.index(resp.items, "responses")
    y = np.zeros((len(resp.systems), len(bank.items)))
    n = np.zeros_like(y)
    y[:, idx], n[:, idx] = resp.y, resp.n
    return resp.systems, y, n


def _anchor_weights(bank: Bank, anchors: Any, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    I = len(bank.items)
    w = np.zeros(I)
    if anchors is None:
        subset = np.nonzero(n.sum(axis=0) > 0)[0]
        w[subset] = 1.0 / max(len(subset), 1)
        return w, subset, "equal weights on the answered items"
    if isinstance(anchors, ItemSubset):
        idx = bank.index(anchors.anchors, "anchors")
        w[idx] = anchors.table["weight"].to_numpy(dtype=float)
        return w, idx, f"{anchors.method} anchors"
    if isinstance(anchors, pd.Series):
        idx = bank.index(anchors.index, "anchors")
        w[idx] = anchors.to_numpy(dtype=float)
    else:
        idx = bank.index(list(anchors), "anchors")
        w[idx] = 1.0
    if not np.all(np.isfinite(w)):
        raise DataError(f"anchor weights must be finite numbers; {int((~np.isfinite(w)).sum())} are NaN or infinite "
                        "(give every anchor item a weight >= 0, e.g. 1 for equal weights)")
    if np.any(w < 0) or w.sum() <= 0:
        raise DataError("anchor weights must be >= 0 and not all 0")
    return w / w.sum(), idx, "given anchors"


def _score_rows(systems, core, lam: float, tuning: _Tuning, z: float, n_answered) -> pd.DataFrame:
    rows = []
    for e in ESTIMATORS:
        est = _gp(core, lam) if e == "gp_irt" else core[e]
        half = np.sqrt(_mse(core, est)) * tuning.half_width.get(e, z)
        rows.append(pd.DataFrame({"system": list(systems), "estimator": e, "estimate": est, "std_error": half / z,
                                  "conf_low": np.clip(est - half, 0, 1), "conf_high": np.clip(est + half, 0, 1),
                                  "n_answered": n_answered}))
    return pd.concat(rows, ignore_index=True)


def _headline(board: pd.DataFrame, direction, level: float, reference: Any, estimator: str):
    return _answer.wald_headline(board, f"{estimator} full-benchmark accuracy from item subsets, normal approximation",
                                 direction, level=level, reference=reference, unit="points", scale=100.0)


def estimate_scores(calibration: Any, responses: Any, anchors: Any = None, *, score: str = "score",
                    system: str = "system", item: str = "item", estimator: str = "gp_irt", level: float = 0.95,
                    n_folds: int = 5, higher_is_better: bool | None = None, reference: Any = None,
                    random_state: Any = None) -> SubsetScores:
    """Each new system's accuracy on the whole calibrated bank from its answers to a subset.

    ``responses``: the new systems' answers (long: ``system``, ``item``, ``score`` 0/1; or wide:
    one row per system, one column per item; or one system's Series indexed by item).
    ``anchors``: the :class:`ItemSubset` of :func:`select_items` (its weights drive the anchor
    and gp-IRT estimators), a Series of weights by item, a list of items, or None (equal weights
    on the answered items). Estimators (Maia Polo et al. 2024; ``I`` bank items, ``A`` answered):

    * ``irt``: the IRT plug-in ``(1/I) sum_i p_i(theta_hat)`` with ``theta_hat`` the posterior
      mode under the calibration population's N(0, sigma^2) (the paper fits the maximum
      likelihood, which is infinite for a system answering every anchor right or wrong);
    * ``p_irt``: ``(1/I) [sum_{i in A} y_i + sum_{i not in A} p_i(theta_hat)]``;
    * ``anchor``: the weighted anchor mean ``sum_j w_j y_j``;
    * ``gp_irt``: ``lambda * anchor + (1 - lambda) * p_irt``. The paper sets
      ``lambda = b^2 / (b^2 + s^2)`` from p-IRT's error ``b`` on validation systems and a
      variance ``s^2`` of the anchor estimate; here ``lambda`` is the least-squares weight of the
      combination over the cross-fitted calibration systems answering the same anchors (their
      full-bank accuracy is known), ``E[(Z - p)(a - p)] / E[(a - p)^2]`` clipped to [0, 1], which
      equals the paper's form when the two errors are uncorrelated and accounts for their
      correlation (both use the same anchor answers);
    * ``posterior``: the posterior predictive mean of the full-bank accuracy (Bayes estimate).

    Scoring bank: a 2PL calibration scores new systems with empirical-Bayes discriminations
    (``Bank.shrunk`` in ``mixedeval.workflows._irt_bank``: log discriminations shrunk
    toward the bank's distribution by their standard errors, Efron 2011), which undoes most of
    the winner's curse of anchors chosen for their information (on the planted benchmark the
    p-IRT error falls most of the way to that with the true item parameters); the abilities and
    every estimator above use it.

    Intervals (none of the peers has one). The model part: under the calibrated model the
    unanswered answers are Bernoulli(p_i(theta)) given the ability, and the ability has the
    posterior given the answered items, computed on 41 adaptive Gauss-Hermite nodes. The
    full-bank accuracy ``Z`` then has the posterior predictive mean ``m`` and variance
    ``v = (1/I^2) [E sum_{i not in A} p_i (1 - p_i) + Var(sum_{i not in A} p_i)]`` (the Bernoulli
    noise of the unseen items, the finite-population part, and the ability's uncertainty given the
    anchor answers propagated to the accuracy); estimator ``e`` has the model root mean squared
    error ``r_e = sqrt(v + (m - e)^2)``.

    What the model leaves out, and the calibration on held-out systems (``n_folds``, default 5):
    the model takes the item parameters as known, but they are estimated from the calibration
    systems, and anchors chosen for their estimated information have overestimated
    discriminations (the winner's curse), so the posterior is too sure of the ability; a real
    benchmark also departs from the 2PL/Rasch model. On the planted benchmark
    (``benchmarks/calibration_irt_subsets.py``) the model's interval covers about 95% with the
    true item parameters and 88-92% with the estimated ones. So the interval is calibrated
    by cross-conformal prediction (Vovk 2015; the CV+ setting of Barber et al. 2021, "Predictive
    inference with the jackknife+", Ann. Statist.) with studentized scores (Lei et al. 2018,
    "Distribution-free predictive inference for regression", JASA): the calibration systems that
    answered every item are split into ``n_folds`` folds (with ``random_state``; a fixed split
    when None); each fold is scored by the bank refitted without it (numpy engine, same model,
    warm-started; anchors of :func:`select_items` chosen from the calibration are chosen again on
    that bank, so the selection's own error is included), and its known full-bank accuracy gives
    the scores ``|e - Z| / r_e``. The half-width is ``q_e * r_e`` with ``q_e`` the
    ``ceil(level (n + 1))``-th smallest of the ``n`` scores: it covers a new system exchangeable
    with the calibration systems with probability about ``level`` (with K-fold refits the
    guarantee is approximate; the fold banks see fewer systems than the full bank, which errs on
    the wide side). ``std_error`` is the half-width divided by the normal quantile at ``level``.
    Fewer than 50 cross-fitted systems give a warning (the quantile is unstable); too few for the
    quantile at ``level`` (fewer than 19 at 95%) fall back to the model interval widened by the
    cross-fitted mean squared error ratio. The fold fits are cached per calibration. ``n_folds=0``
    gives the model's intervals alone (and gp-IRT's weight from the model's MSEs).

    The leaderboard ranks the systems by ``estimator`` with simultaneous rank intervals; the
    headline compares the best with the runner-up (or ``reference``)."""
    if estimator not in ESTIMATORS:
        raise DataError(f"estimator={estimator!r} must be one of {', '.join(ESTIMATORS)}")
    if not 0 < level < 1:
        raise DataError(f"level={level!r} must be between 0 and 1, e.g. 0.95")
    bank = as_bank(calibration)
    systems, y, n = _new_responses(bank, responses, score, system, item)
    w, subset, wsource = _anchor_weights(bank, anchors, n)
    z = _answer.z_quantile(level)
    core = _core(bank.shrunk(), y, n, w)
    if isinstance(n_folds, bool) or not (isinstance(n_folds, (int, np.integer)) and (n_folds == 0 or n_folds >= 2)):
        raise DataError(f"n_folds={n_folds!r} must be 0 (model-only intervals) or a whole number >= 2")
    if not isinstance(random_state, (np.random.Generator, np.random.SeedSequence)):
        seed_sequence(random_state)  # a DataError naming random_state (it was a raw TypeError from numpy)
    design = _Design(subset, w) if not isinstance(anchors, ItemSubset) else _Design(
        subset, w, anchors.method, len(anchors.table), anchors.provenance.get("random_state"))
    tuning = _tune(bank, design, z, level, int(n_folds), random_state) or _model_tuning(core, z)
    n_answered = (n > 0).sum(axis=1)
    table = _score_rows(systems, core, tuning.gp_lambda, tuning, z, n_answered)
    post: Posterior = core["_post"]
    abilities = pd.DataFrame({"system": list(systems), "ability": post.mode, "std_error": post.mode_se,
                              "ability_eap": post.mean, "std_error_eap": post.sd, "n_answered": n_answered})
    head = table[table["estimator"] == estimator].set_index("system")
    direction = _answer.direction("accuracy", higher_is_better)
    board = _board(head, direction, level, random_state)
    ws = _score_warnings(tuning, n_answered, len(bank.items))
    if len(head) > RANK_INTERVALS_MAX:
        ws += (ResultWarning("no_rank_intervals", f"{len(head)} systems: the simultaneous rank intervals and letters "
                             f"are computed for at most {RANK_INTERVALS_MAX} systems (their cost grows fast)"),)
    prov = {"calibration_engine": bank.engine, "model": bank.model, "anchors": wsource, "n_subset": int(len(subset)),
            "tuning": tuning.source, "n_folds": n_folds, "random_state": random_state, "level": level, "n_nodes": 41}
    head_ = _headline(board, direction, level, reference, estimator)
    ans = _answer.Answer(direction=direction, leaderboard=board, headline=head_,
                         differences=_answer.wald_pairs(board, level=level, higher_is_better=direction.higher_is_better)
                         if 1 < len(board) <= 200 else None,
                         method="" if head_ is None else head_.method, no_headline_text="one system: no comparison")
    return SubsetScores(table=table, answer=ans, abilities=abilities, tuning=tuning.table, estimator=estimator,
                        gp_lambda=tuning.gp_lambda, level=level, n_bank=len(bank.items), warnings=ws, provenance=prov)


def _board(head: pd.DataFrame, direction, level: float, random_state: Any) -> pd.DataFrame:
    """The best-first leaderboard; rank intervals only up to :data:`RANK_INTERVALS_MAX` systems."""
    if len(head) <= RANK_INTERVALS_MAX:
        return _answer.leaderboard(head["estimate"], std_error=head["std_error"], conf_low=head["conf_low"],
                                   conf_high=head["conf_high"], higher_is_better=direction.higher_is_better,
                                   level=level, random_state=random_state)
    board = _answer.leaderboard(head["estimate"], higher_is_better=direction.higher_is_better)
    idx = board["name"].to_numpy()
    for c in ("std_error", "conf_low", "conf_high"):
        board[c] = head.loc[idx, c].to_numpy()
    return board


def _score_warnings(tuning: _Tuning, n_answered: np.ndarray, n_bank: int) -> tuple[ResultWarning, ...]:
    ws = []
    if tuning.source == "model only":
        ws.append(ResultWarning("model_only_intervals", "no cross-fitting (n_folds=0, or too few calibration systems "
                                "answered the whole bank): the gp-IRT weight comes from the model and the intervals "
                                "are the model's alone"))
    if np.any(n_answered == 0):
        ws.append(ResultWarning("no_answers", f"{int(np.sum(n_answered == 0))} system(s) answered no bank item: "
                                "their estimates are the calibration population's average"))
    if tuning.source != "model only" and tuning.n_systems < MIN_CALIBRATION_SYSTEMS:
        ws.append(ResultWarning("few_calibration_systems", f"the intervals are calibrated on {tuning.n_systems} "
                                f"cross-fitted calibration systems (fewer than {MIN_CALIBRATION_SYSTEMS}): their "
                                "coverage varies from one calibration to another; calibrate on more systems"
                                + ("" if tuning.conformal else "; too few for a conformal quantile at this level, "
                                   "so the intervals are the model's widened by the mean squared error ratio")))
    t = tuning.table
    big = [] if t.empty else list(t.loc[t["inflation"] > 1.5, "estimator"])
    if big:
        ws.append(ResultWarning("misfit", "on the cross-fitted calibration systems the errors of "
                                f"{', '.join(big)} exceed the model's by more than half its variance: their intervals "
                                "are widened accordingly (see .tuning)"))
    return tuple(ws)


# ============================================================================= next_items
@dataclass(frozen=True, repr=False)
class NextItems(_WorkflowResult):
    """The most informative next items for one system (adaptive testing).

    ``table``: rank, item, information (Fisher information at the current ability), difficulty,
    discrimination, p_correct (predicted). ``ability``/``std_error``: the posterior mode of the
    ability from the items answered so far and its conditional SD; ``stop`` says whether the
    stopping rule is met (``reason``); ``accuracy`` with ``conf_low``/``conf_high``: the full-bank
    accuracy's posterior predictive mean and interval from the answers so far.
    """

    table: pd.DataFrame
    ability: float
    std_error: float
    n_answered: int
    target_se: float
    stop: bool
    reason: str
    accuracy: float
    conf_low: float
    conf_high: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    @property
    def _title(self) -> str:  # type: ignore[override]
        return "Next items (Fisher information at the current ability)"

    def _scalars(self):
        return [("answered", self.n_answered), ("ability", f"{self.ability:.3f} (SE {self.std_error:.3f})"),
                ("full-bank accuracy", f"{self.accuracy:.3f} ({self.conf_low:.3f} to {self.conf_high:.3f})"),
                ("stop", f"{self.stop}: {self.reason}")]


def _one_system(bank: Bank, responses: Any, score: str, item: str, system: str):
    if responses is None or (hasattr(responses, "__len__") and len(responses) == 0):
        return np.zeros((1, len(bank.items))), np.zeros((1, len(bank.items)))
    if isinstance(responses, dict):
        responses = pd.Series(responses, dtype=float)
    names, y, n = _new_responses(bank, responses, score, system, item)
    if len(names) != 1:
        raise DataError(f"next_items works on one system at a time; the responses hold {len(names)} "
                        f"({', '.join(names[:5])}); pass one system's rows")
    return y, n


def next_items(calibration: Any, responses: Any = None, *, n_items: int = 1, target_se: float | None = None,
               max_items: int | None = None, score: str = "score", item: str = "item", system: str = "system",
               level: float = 0.95) -> NextItems:
    """The ``n_items`` most informative items to ask one system next, and whether to stop.

    The ability is the posterior mode given the items answered so far (``responses``: a dict or
    Series ``{item: 0/1}``, or a long table of one system; None before the first item) under the
    calibration population's N(0, sigma^2), with its conditional SD as standard error. The next
    items are the unanswered ones with the largest Fisher information
    ``discrimination^2 p (1 - p)`` at that ability (maximum-information adaptive testing; Fluid
    Benchmarking, Hofmann et al. 2025, uses the same rule on a 2PL bank). Stopping rule: stop when
    the ability's standard error is at most ``target_se`` (default ``0.3 * sigma``: a reliability
    of about 0.91 on the calibration population), when ``max_items`` items are answered, or when
    the bank is exhausted."""
    level = require_level(level)
    bank = as_bank(calibration)
    for name, v in (("n_items", n_items), ("max_items", max_items)):
        if v is not None and (isinstance(v, bool) or not (isinstance(v, (int, np.integer)) and v >= 1)):
            raise DataError(f"{name}={v!r} must be a whole number >= 1")
    target = 0.3 * bank.sigma if target_se is None else float(target_se)
    if not (target > 0 and np.isfinite(target)):
        raise DataError(f"target_se={target_se!r} must be > 0 (on the ability scale)")
    y, n = _one_system(bank, responses, score, item, system)
    answered = n[0] > 0
    core = _core(bank, y, n, answered / max(answered.sum(), 1))
    post: Posterior = core["_post"]
    theta, se = float(post.mode[0]), float(post.mode_se[0])
    info = bank.information(np.array(theta))
    free = np.nonzero(~answered)[0]
    top = free[np.argsort(-info[free], kind="stable")[:n_items]]
    table = pd.DataFrame({"rank": np.arange(1, len(top) + 1), "item": [bank.items[i] for i in top],
                          "information": info[top], "difficulty": bank.difficulty[top],
                          "discrimination": bank.discrimination[top], "p_correct": bank.prob(np.array(theta))[top]})
    k = int(answered.sum())
    if k and se <= target:
        stop, reason = True, f"the ability's standard error {se:.3f} is at most target_se={target:.3g}"
    elif max_items is not None and k >= max_items:
        stop, reason = True, f"{k} items answered (max_items={max_items})"
    elif len(free) == 0:
        stop, reason = True, "every bank item is answered"
    else:
        stop, reason = False, f"standard error {se:.3f} > target_se={target:.3g}"
    zq = _answer.z_quantile(level)
    m, sd = float(core["mean"][0]), float(np.sqrt(core["var"][0]))
    return NextItems(table=table, ability=theta, std_error=se, n_answered=k, target_se=target, stop=stop,
                     reason=reason, accuracy=m, conf_low=max(0.0, m - zq * sd), conf_high=min(1.0, m + zq * sd),
                     warnings=(), provenance={"model": bank.model, "calibration_engine": bank.engine,
                                              "rule": "maximum Fisher information at the posterior mode"})
