"""Which votes move a Bradley-Terry leaderboard: the approximate maximum influence perturbation.

The votes (battles) are the rows of the user's table that enter the fit. Each one adds a term
``l_v(theta)`` to the log-likelihood; at the maximum-likelihood estimate ``theta_hat`` the scores
``g_v = d l_v / d theta`` sum to zero. Dropping a set ``S`` of votes moves the estimate, to first
order (one Newton step from ``theta_hat``, the infinitesimal jackknife), by

    theta_{-S} - theta_hat  ~=  - I^{-1} sum_{v in S} g_v,

``I`` the observed information of all votes. The influence of vote ``v`` on a difference of two
strengths ``c' theta`` (``c`` = +1 / -1 on the two models) is ``-c' I^{-1} g_v``: one solve
``I^{-1} c`` per difference, then one number per vote. Broderick, Giordano & Meager (2020, "An
automatic finite-sample robustness metric: when can dropping a little data make a big
difference?") sort the votes by it and drop the most negative ones until the linearised
difference changes sign (the approximate maximum influence perturbation, AMIP); Huang et al.
(2025, "Dropping just 0.003% of human preferences can change the top-ranked model on Chatbot
Arena", arXiv 2508.11847) apply it to the Arena's Bradley-Terry model. The linearisation is then
checked by an exact refit without those votes (Newton's method of
:mod:`mixedeval.inference._bt_numpy`, from ``theta_hat``); when the refit does not flip the
difference, the influences are recomputed at the refit (its information, its scores, the votes
left) and the greedy step adds votes, until an exact refit flips it (``max_rounds`` rounds).

Votes in one cell of the design (same pair, judge parameters and order shown) with the same
outcome and weight have the same score, so the sort runs over these groups, not over a million
rows; within a group the votes listed are the first rows of the table.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...data.validate import require_columns, require_nonempty
from ...errors import DataError
from ...inference import _bt_numpy
from ...inference._bradley_terry import check_connected, check_identified, check_size
from ...inference._bt_design import BTDesign, _outcomes, _weights, build_design

#: the column naming each row when the design is built with one unit per row
_ROW = "__mixedeval_row__"


@dataclass(frozen=True)
class Votes:
    """The votes of one Bradley-Terry design, their groups (votes with the same score) and the fit.

    rows : position in the user's table of each vote entering the fit (weight > 0; ties kept
        unless ``ties="drop"``), in table order.
    group : the group of each vote; ``g_cell``, ``g_out``, ``g_w``, ``g_n``: per group its cell,
        outcome code (0: the cell's model a wins, 1: b wins, 2: tie), weight and number of votes;
        ``members``: the votes (indices into ``rows``) of group g are
        ``members[starts[g]:starts[g + 1]]``, in table order.
    theta, info, inv : the fit of all votes (estimates, information, its inverse).
    """

    d: BTDesign
    rows: np.ndarray
    group: np.ndarray
    g_cell: np.ndarray
    g_out: np.ndarray
    g_w: np.ndarray
    g_n: np.ndarray
    members: np.ndarray
    starts: np.ndarray
    theta: np.ndarray
    info: np.ndarray
    inv: np.ndarray
    converged: bool

    @property
    def n_votes(self) -> int:
        return len(self.rows)

    def strengths(self, theta: np.ndarray) -> np.ndarray:
        """Strengths (k,) (reference 0) of a parameter vector."""
        s = np.zeros(self.d.k)
        s[self.d.free] = theta[:self.d.k - 1]
        return s

    def contrast(self, i: int, j: int) -> np.ndarray:
        """The parameter vector c with c' theta = s_i - s_j."""
        c = np.zeros(self.d.n_params)
        pos = np.full(self.d.k, -1)
        pos[self.d.free] = np.arange(self.d.k - 1)
        if pos[i] >= 0:
            c[pos[i]] += 1.0
        if pos[j] >= 0:
            c[pos[j]] -= 1.0
        return c

    def group_rows(self, take: np.ndarray) -> np.ndarray:
        """Positions in the user's table of the first ``take[g]`` votes of every group g."""
        g = np.flatnonzero(take > 0)
        if not len(g):
            return np.zeros(0, dtype=np.int64)
        idx = np.concatenate([self.members[self.starts[x]:self.starts[x] + int(take[x])] for x in g])
        return np.sort(self.rows[idx])

    def counts_without(self, take: np.ndarray) -> np.ndarray:
        """The design's cell counts (C, 3) without ``take[g]`` votes of every group g."""
        rc = np.zeros_like(self.d.counts)
        np.add.at(rc, (self.g_cell, self.g_out), take * self.g_w)
        out = self.d.counts - rc
        out[np.abs(out) < 1e-9] = 0.0
        return out

    def refit(self, counts: np.ndarray, theta0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Exact maximum-likelihood refit of the counts (C, 3) from ``theta0`` (default the full
        fit): (theta, information); parameters without battles are NaN."""
        f = _bt_numpy.fit(self.d, counts[None], theta0=(self.theta if theta0 is None else theta0)[None])
        return f.theta[0], f.information[0]


def build_votes(df: pd.DataFrame, model_a: str, model_b: str, winner: str, *, judge: str | None,
                position: str | None, ties: str, position_bias: bool, covariates: Sequence[str] | None,
                weight: str | None, min_judge_battles: float, anchor: str | None) -> Votes:
    """The design of the battles with one unit per row (which cell and outcome each row is), the
    groups of votes with the same score, and the maximum-likelihood fit (numpy Newton, the same
    likelihood as :func:`mixedeval.bradley_terry` without random effects)."""
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"battles must be a pandas DataFrame, not {type(df).__name__}")
    cols = [c for c in dict.fromkeys([model_a, model_b, winner, judge, position, weight, *(covariates or [])]) if c]
    require_columns(df, cols, "battles")
    require_nonempty(df, "battles")
    frame = df[cols].reset_index(drop=True)
    frame[_ROW] = np.arange(len(frame))
    d = build_design(frame, model_a, model_b, winner, prompt=_ROW, judge=judge, ties=ties,
                     position_bias=position_bias, covariates=covariates, anchor=anchor, position=position,
                     weight=weight, min_judge_battles=min_judge_battles, keep_first=bool(position_bias))
    out, wt = _outcomes(frame, winner), _weights(frame, weight)
    keep = (out != 2) & (wt > 0) if ties == "drop" else wt > 0
    rows = np.flatnonzero(keep)
    u = d.units
    if u.shape[0] != len(rows) or not np.all(np.diff(u.indptr) == 1):  # one entry per vote, by construction
        raise AssertionError("the per-row design does not have one cell per vote")
    cell, outcome, w = u.indices // 3, u.indices % 3, u.data
    key = cell.astype(np.int64) * 3 + outcome
    if np.all(w == w[0]):
        uniq, group = np.unique(key, return_inverse=True)
        g_w = np.full(len(uniq), float(w[0]))
    else:
        both = np.unique(np.c_[key.astype(float), w], axis=0, return_inverse=True)
        uniq, group = both[0][:, 0].astype(np.int64), np.asarray(both[1]).ravel()
        g_w = both[0][:, 1]
    group = np.asarray(group).ravel()
    g_n = np.bincount(group, minlength=len(uniq))
    members = np.argsort(group, kind="stable")
    check_size(d)
    check_connected(d)
    check_identified(d)
    f = _bt_numpy.fit(d, d.counts[None])
    try:
        inv = _bt_numpy.vcov(f.information[0])
    except np.linalg.LinAlgError:
        raise DataError("the Bradley-Terry information matrix of the battles is singular (a model won or lost every "
                        "battle, or a judge's position effect is not identified): the influence of a vote is not "
                        "defined; collect battles these models lose (or win), or drop them from the table") from None
    return Votes(d=d, rows=rows, group=group, g_cell=uniq // 3, g_out=uniq % 3, g_w=g_w, g_n=g_n, members=members,
                 starts=np.r_[0, np.cumsum(g_n)], theta=f.theta[0], info=f.information[0],
                 inv=inv, converged=bool(f.converged[0]))


def unit_scores(v: Votes, theta: np.ndarray, ops: object = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Scores of one vote of each cell and outcome on the linear predictor and (Davidson) on the
    tie propensity: (C, 3) arrays r_eta, r_tau (``ops``: the design's sparse pieces, if made)."""
    ops = ops or _bt_numpy._Ops(v.d)  # noqa: SLF001 - the design's sparse pieces
    eta, tau = ops.predictors(theta[None])
    c = len(v.d.a)
    r_eta = np.zeros((c, 3))
    r_tau = np.zeros((c, 3)) if v.d.ties == "davidson" else None
    for o in range(3):
        one = np.zeros((1, c, 3))
        one[..., o] = 1.0
        _, re, rt, *_ = _bt_numpy.cell_terms(one, eta, tau, v.d.ties)
        r_eta[:, o] = re[0]
        if r_tau is not None:
            r_tau[:, o] = rt[0]
    return r_eta, r_tau


def group_influence(v: Votes, theta: np.ndarray, inv: np.ndarray, contrasts: np.ndarray) -> np.ndarray:
    """The linear change of each contrast (rows of ``contrasts``, (m, p)) when one vote of each
    group is dropped, ``-c' I^{-1} g_v`` at ``theta`` with inverse information ``inv``: (m, G)."""
    ops = _bt_numpy._Ops(v.d)  # noqa: SLF001
    sol = np.nan_to_num(contrasts @ np.nan_to_num(inv))  # (m, p): I^{-1} c (inv is symmetric)
    xe, xt = ops.predictors(sol)  # (m, C): x_cell' I^{-1} c
    r_eta, r_tau = unit_scores(v, theta, ops)
    infl = xe[:, v.g_cell] * r_eta[v.g_cell, v.g_out]
    if r_tau is not None:
        infl = infl + xt[:, v.g_cell] * r_tau[v.g_cell, v.g_out]
    return -infl * v.g_w


def greedy(gap: float, infl: np.ndarray, avail: np.ndarray, partial: bool = False) -> np.ndarray | None:
    """The fewest votes whose summed linear influence ``infl`` (per group, one vote) turns ``gap``
    (> 0) negative, taking the most negative groups first (at most ``avail[g]`` votes of group g):
    the votes taken per group, or None when all negative influences together do not reach it
    (``partial``: then every vote with a negative influence, for a refit to re-linearise at)."""
    neg = np.flatnonzero((infl < 0) & (avail > 0))
    if not len(neg):
        return None
    order = neg[np.argsort(infl[neg], kind="stable")]
    tot = np.cumsum(avail[order] * infl[order])
    reach = np.flatnonzero(gap + tot < 0)
    if not len(reach):
        if not partial:
            return None
        take = np.zeros(len(avail), dtype=np.int64)
        take[order] = avail[order]
        return take
    g = int(reach[0])
    rem = gap + (tot[g - 1] if g else 0.0)
    m = min(int(np.floor(max(rem, 0.0) / -infl[order[g]])) + 1, int(avail[order[g]]))
    take = np.zeros(len(avail), dtype=np.int64)
    take[order[:g]] = avail[order[:g]]
    take[order[g]] = m
    return take


def flipped(s: np.ndarray, better: int, worse: int | None) -> bool:
    """Whether the strengths ``s`` put ``worse`` above ``better`` (``worse=None``: any model above
    ``better``: the top rank changed); a model without battles (NaN) is not ranked."""
    if not np.isfinite(s[better]):
        return True
    if worse is None:
        others = np.delete(s, better)
        return bool(np.any(np.isfinite(others) & (others > s[better])))
    return bool(np.isfinite(s[worse]) and s[worse] > s[better])


@dataclass(frozen=True)
class Flip:
    """The votes that flip one difference: the linear approximation's count and the confirmed set."""

    better: int
    worse: int
    gap: float
    approx: int | None
    take: np.ndarray | None
    confirmed: bool
    rounds: int
    refit_gap: float


def start(v: Votes, better: int, worse: int, infl0: np.ndarray) -> tuple[float, int | None, np.ndarray | None]:
    """The greedy AMIP set for s_better - s_worse from the linear influences ``infl0`` at the full
    fit: (gap, the approximation's count or None, the votes taken per group). Where the
    linearisation cannot reach a flip (count None), every vote with a negative influence is taken,
    for the search to go on from that refit."""
    gap = float(v.contrast(better, worse) @ v.theta)
    take = greedy(gap, infl0, v.g_n)
    if take is not None:
        return gap, int(take.sum()), take
    return gap, None, greedy(gap, infl0, v.g_n, partial=True)


def refit_many(v: Votes, takes: list[np.ndarray]) -> np.ndarray:
    """Exact refits without each set of votes (B, p), all at once: the chord iteration of the
    bootstrap (:func:`mixedeval.inference._bt_numpy.chord_fit`: Newton's step with the full fit's
    information, Anderson-accelerated, to a zero score -- the same maximum as Newton's method),
    then Newton's method for the refits it hands on (a model or judge left without votes, an
    estimate far from the full fit's)."""
    counts = np.stack([v.counts_without(t) for t in takes], axis=2)
    theta, ok = _bt_numpy.chord_fit(_bt_numpy.CellDesign(v.d), counts, v.theta, np.nan_to_num(v.inv), REFIT_TOL)
    for b in np.flatnonzero(~ok):
        theta[b] = v.refit(counts[:, :, b])[0]
    return theta


#: the refits' stopping rule: no parameter moved by more than this in the last step
REFIT_TOL = 1e-9


def _information(v: Votes, counts: np.ndarray, theta: np.ndarray) -> np.ndarray:
    ops = _bt_numpy._Ops(v.d)  # noqa: SLF001
    return _bt_numpy._score_info(ops, counts[None], theta[None], v.d.ties)[2][0]  # noqa: SLF001


def search(v: Votes, better: int, worse: int, gap: float, approx: int | None, take: np.ndarray | None, *,
           top: bool, max_rounds: int, first: np.ndarray | None = None, deadline: Any = None) -> Flip:
    """Confirm the greedy AMIP set ``take`` of :func:`start` by exact refits (``first``: the first
    refit, if done, e.g. by :func:`refit_many`); the set grows by the influences recomputed at each
    refit until the refit flips s_better - s_worse (``top``: the top rank changes) or
    ``max_rounds`` refits are done. ``deadline`` (a :class:`mixedeval._resources.Deadline`) is
    checked after each refit."""
    c = v.contrast(better, worse)
    rounds, refit_gap, theta = 0, np.nan, first
    while take is not None and rounds < max_rounds:
        rounds += 1
        counts = v.counts_without(take)
        if theta is None:
            theta = v.refit(counts)[0]
        if deadline is not None:
            deadline.check(f"{rounds} refit(s) of {v.d.models[better]} > {v.d.models[worse]}")
        s = v.strengths(theta)
        refit_gap = float(s[better] - s[worse])
        if flipped(s, better, None if top else worse):
            return Flip(better, worse, gap, approx, take, True, rounds, refit_gap)
        if not np.isfinite(s).all():
            break
        try:
            inv = _bt_numpy.vcov(_information(v, counts, theta))
        except np.linalg.LinAlgError:  # the refit separated (a model no longer loses or wins): no linearisation
            break
        extra = greedy(refit_gap, group_influence(v, theta, inv, c[None])[0], v.g_n - take, partial=True)
        if extra is None:
            break
        take, theta = take + extra, None
    return Flip(better, worse, gap, approx, take, False, rounds, refit_gap)
