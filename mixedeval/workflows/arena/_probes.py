"""The audit probes of an arena leaderboard (:func:`mixedeval.arena_audit`), each a row of the
answer's checks with a verdict computed from its own numbers ("agrees: ..." when the probe finds
nothing that weakens the leaderboard, "differs: ..." when it does, "not available: ..." when the
data cannot say). The thresholds are constants of this module, named in every verdict.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import stats
from scipy.sparse.csgraph import connected_components

from ... import _resources as res
from ..._format import fmt_p
from ...inference import _bt_numpy
from ...inference._bradley_terry import _graph
from ...inference._bt_design import TIES
from ...padjust import adjust_pvalues
from ._votes import Votes, group_influence

#: coverage: the most battles of a model over the fewest beyond which the coverage is imbalanced
MAX_MODEL_RATIO = 10.0
#: coverage: the share of pairs never compared beyond which the coverage is imbalanced
MAX_UNOBSERVED = 0.5
#: annotator influence: judges refitted exactly (the most influential by the linear approximation)
N_CONFIRM_JUDGES = 5
#: annotator influence: up to this many judges every one is refitted exactly
EXACT_JUDGES = 30


def _row(check: str, verdict: str, value: float = np.nan, p_value: float = np.nan, **detail: Any) -> dict:
    """One probe: its check row (the columns of :func:`mixedeval._answer.checks_table`; the probes do not
    estimate the headline's difference, so estimate and interval are NaN unless said) and detail."""
    out = {"check": check, "estimate": np.nan, "conf_low": np.nan, "conf_high": np.nan, "p_value": float(p_value),
           "verdict": verdict, "value": float(value)}
    out.update(detail)
    return out


def _ranks(s: np.ndarray) -> np.ndarray:
    """Rank of each strength (1 = best; NaN last)."""
    key = np.where(np.isfinite(s), -s, np.inf)
    return (np.argsort(np.argsort(key, kind="stable"), kind="stable") + 1).astype(float)


# ------------------------------------------------------------------------------- connectivity
def connectivity(v: Votes) -> dict:
    """The comparison graph: connected (else no joint strengths) and the graph of wins strongly
    connected (else a model won or lost every battle against the rest: no finite strength; Ford
    1957); the fewest distinct opponents of a model is reported (one, as in AlpacaEval's design
    against a baseline: compared to the rest only through that opponent)."""
    d = v.d
    n_comp = connected_components(_graph(d, directed=False), directed=False)[0]
    n_strong = connected_components(_graph(d, directed=True), directed=True, connection="strong")[0]
    g = _graph(d, directed=False)
    opp = np.asarray(((g + g.T) > 0).sum(axis=1)).ravel()
    few = [d.models[i] for i in np.flatnonzero(opp <= 1)]
    facts = (f"{n_comp} connected component(s), {n_strong} strongly connected component(s) of the wins, fewest "
             f"opponents of a model {int(opp.min())}")
    if few:
        facts += f" ({few[:3]} met a single opponent: compared to the rest only through it)"
    if n_comp > 1 or n_strong > 1:
        why = ("models never lost (or never won) against the rest: their strengths are not finite" if n_strong > 1
               else "the graph is not connected")
        return _row("connectivity", f"differs: {facts}; {why}", n_strong)
    return _row("connectivity", f"agrees: {facts}", n_strong)


# ------------------------------------------------------------------------------- coverage
def coverage(v: Votes) -> dict:
    """Battles per model (largest over smallest) and the share of pairs never compared."""
    d = v.d
    n = d.counts.sum(axis=1)
    per_model = np.bincount(d.a, n, d.k) + np.bincount(d.b, n, d.k)
    per_pair = sp.csr_matrix((n, (d.a, d.b)), shape=(d.k, d.k)).toarray()
    per_pair = per_pair + per_pair.T
    iu = np.triu_indices(d.k, 1)
    pairs = per_pair[iu]
    unobserved = float(np.mean(pairs == 0)) if len(pairs) else 0.0
    ratio = float(per_model.max() / per_model.min()) if per_model.min() > 0 else np.inf
    low = d.models[int(np.argmin(per_model))]
    seen = pairs[pairs > 0]
    facts = (f"battles per model {per_model.min():.0f} ({low}) to {per_model.max():.0f} (ratio {ratio:.1f}, limit "
             f"{MAX_MODEL_RATIO:g}); {unobserved:.0%} of pairs never compared (limit {MAX_UNOBSERVED:.0%}); "
             f"battles per compared pair {seen.min():.0f} to {seen.max():.0f}")
    bad = ratio > MAX_MODEL_RATIO or unobserved > MAX_UNOBSERVED
    return _row("coverage imbalance", ("differs: " if bad else "agrees: ") + facts, ratio)


# ------------------------------------------------------------------------------- intransitivity
def _pair_counts(d: Any, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wins of a over b (+ half the ties) and battles per ordered pair, (B, k, k) each, from cell
    counts (B, C, 3)."""
    k = d.k
    pair = d.a * k + d.b
    agg = sp.csr_matrix((np.ones(len(pair)), (pair, np.arange(len(pair)))), shape=(k * k, len(pair)))
    b = counts.shape[0]
    wa = (agg @ (counts[..., 0] + 0.5 * counts[..., 2]).T).T.reshape(b, k, k)
    nn = (agg @ counts.sum(axis=2).T).T.reshape(b, k, k)
    return wa + (nn - wa).transpose(0, 2, 1), nn + nn.transpose(0, 2, 1)


def cyclic_triads(wins: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Directed 3-cycles of the majority graph (i -> j when i won more than half of their battles,
    ties half), trace(D^3) / 3, and the same cycles weighted by the product of their three margins
    (win rate - 1/2: a cycle of clear majorities weighs more than one of coin flips), trace(W^3) / 3,
    per table (B,) each."""
    with np.errstate(invalid="ignore", divide="ignore"):
        margin = np.where(n > 0, wins / np.where(n > 0, n, 1.0) - 0.5, 0.0)
    dmat = (margin > 0).astype(float)
    wmat = np.where(margin > 0, margin, 0.0)
    count = np.einsum("bij,bjk,bki->b", dmat, dmat, dmat) / 3.0
    weighted = np.einsum("bij,bjk,bki->b", wmat, wmat, wmat) / 3.0
    return count, weighted


def _cell_probabilities(v: Votes, theta: np.ndarray) -> np.ndarray:
    """P(a wins), P(b wins), P(tie) per cell under the fit (C, 3); half / dropped ties: the ties
    of the cell are kept as observed, the decided battles split by plogis(eta)."""
    ops = _bt_numpy._Ops(v.d)  # noqa: SLF001
    eta, tau = ops.predictors(theta[None])
    eta = eta[0]
    if v.d.ties == "davidson":
        h = np.clip(0.5 * eta, -350, 350)
        num = np.c_[np.exp(h), np.exp(-h), np.exp(np.clip(tau[0], -700, 700))]
        return num / num.sum(axis=1, keepdims=True)
    p = 1.0 / (1.0 + np.exp(-np.clip(eta, -700, 700)))
    return np.c_[p, 1 - p, np.zeros_like(p)]


#: intransitivity: simulated tables drawn at once are cut to about this many cells x outcomes
#: (Ctrl-C between blocks; the draws do not depend on the block size)
SIM_BLOCK_CELLS = 4_000_000


#: intransitivity: working copies of one block's simulated tables (block x cells x 3 doubles: the
#: drawn counts, their float copy and the stacked table with its sums in :func:`_pair_counts`)
SIM_TABLE_COPIES = 3
#: intransitivity: working copies of one block's k x k pair matrices (wins, battles, their
#: transposed sums, the margins and their masks in :func:`cyclic_triads`, einsum's product)
SIM_PAIR_COPIES = 12


def sim_block(n_cells: int, n_models: int) -> int:
    """Simulated tables drawn at once: at most 50, cut to :data:`SIM_BLOCK_CELLS` cells x outcomes
    (or k x k pair entries), at least one."""
    return int(max(1, min(50, SIM_BLOCK_CELLS // max(1, 3 * n_cells, n_models * n_models))))


def sim_guard(n_sim: int, n_cells: int = 0, n_models: int = 0) -> res.LoopGuard | None:
    """The intransitivity probe's loop guard, its memory checked: the two statistics kept per
    simulated table (``n_sim`` x 5 doubles: kept in blocks, concatenated, and their comparison) plus
    one block's working arrays (:func:`sim_block` tables of ``n_cells`` cells, :data:`SIM_TABLE_COPIES`
    copies, and of ``n_models`` x ``n_models`` pair matrices, :data:`SIM_PAIR_COPIES` copies). Made
    before any fit from what the battle table tells up front (``n_cells``: its number of battles, an
    upper bound of the cells; ``n_models``), so that an ``n_sim`` that cannot fit is refused first."""
    if n_sim <= 0:
        return None
    g = res.LoopGuard("the intransitivity probe of me.arena_audit", n_sim, count=f"n_sim={res.format_count(n_sim)}",
                      unit="simulated tables",
                      fix="Lower n_sim (near p = 0.05 the Monte-Carlo SE of the p-value is 0.015 with 199 "
                          "simulations, 0.007 with 999).")
    block = min(n_sim, sim_block(n_cells, n_models))
    work = 8.0 * block * (SIM_TABLE_COPIES * 3 * n_cells + SIM_PAIR_COPIES * n_models * n_models)
    detail = (f"{res.format_count(n_sim)} simulated tables x 40 bytes, plus {res.format_bytes(work)} for a block of "
              f"{block} tables of {res.format_count(n_cells)} battles and {n_models} models") if work else ""
    g.check_memory(5 * 8.0, fixed_bytes=work, detail=detail)
    return g


def intransitivity(v: Votes, n_sim: int, rng: np.random.Generator, alpha: float,
                   guard: res.LoopGuard | None = None) -> dict:
    """Cyclic triads of the observed majority graph, weighted by their margins
    (:func:`cyclic_triads`), against a parametric bootstrap from the fitted Bradley-Terry model
    (the same battles per cell, outcomes drawn from the fit; a Bradley-Terry model is transitive,
    so its cycles are chance): p = (1 + #{simulated >= observed}) / (1 + n_sim). ``guard`` (of
    :func:`sim_guard`) judges the time after the first block."""
    d = v.d
    count, weighted = (float(x[0]) for x in cyclic_triads(*_pair_counts(d, d.counts[None])))
    if n_sim <= 0:
        return _row("intransitivity", f"not available: n_sim=0 (observed {count:.0f} cyclic triads)", count)
    prob = _cell_probabilities(v, v.theta)
    counts = d.counts
    sims = []
    block = sim_block(len(counts), d.k)
    guard = guard or sim_guard(n_sim)
    guard.start()
    for i in range(0, n_sim, block):
        b = min(block, n_sim - i)
        if d.ties == "davidson":
            n = np.rint(counts.sum(axis=1)).astype(np.int64)
            sim = rng.multinomial(n, prob, size=(b, len(n))).astype(float)
        else:
            dec = np.rint(counts[:, 0] + counts[:, 1]).astype(np.int64)
            wa = rng.binomial(dec, prob[:, 0], size=(b, len(dec))).astype(float)
            sim = np.stack([wa, dec - wa, np.broadcast_to(counts[:, 2], wa.shape)], axis=2)
        sims.append(np.stack(cyclic_triads(*_pair_counts(d, sim)), axis=1))
        guard.block_done(i + b)
    sim_c, sim_w = np.concatenate(sims).T
    p = (1.0 + float((sim_w >= weighted - 1e-12).sum())) / (1.0 + n_sim)
    facts = (f"{count:.0f} cyclic triads in the majority graph (margin-weighted {weighted:.3g}), "
             f"{np.mean(sim_c):.1f} ({np.mean(sim_w):.3g}) expected from the fitted Bradley-Terry model "
             f"({n_sim} simulations; p = {fmt_p(p)})")
    return _row("intransitivity", ("differs: more cycles than chance; " if p < alpha else "agrees: ") + facts, count, p,
                expected=float(np.mean(sim_c)), weighted=weighted)


# ------------------------------------------------------------------------------- position bias
def position_bias(v: Votes, alpha: float) -> tuple[dict, pd.DataFrame]:
    """Each judge's position bias (log-odds that the answer shown first wins between equally strong
    models), its likelihood standard error, z test and Holm adjustment over the judges."""
    d = v.d
    m = d.k - 1
    pj = d.pos_judges
    if not len(pj):
        return _row("position bias", "not available: no judge parameter for the order shown (position_bias=False, "
                    "or no battle records which answer was shown first)"), pd.DataFrame()
    idx = m + np.arange(len(pj))
    est = v.theta[idx]
    se = np.sqrt(np.maximum(np.diag(v.inv)[idx], 0))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2 * stats.norm.sf(np.abs(est / se))
    padj = adjust_pvalues(p, "holm")
    tab = pd.DataFrame({"judge": [d.judges[j] for j in pj], "position_bias": est, "std_error": se, "p_value": p,
                        "p_adj": padj})
    i = int(np.nanargmin(padj))
    n_sig = int(np.sum(padj < alpha))
    facts = (f"{n_sig} of {len(pj)} judge(s) with a position bias at {alpha:g} (Holm); largest evidence: "
             f"{tab['judge'][i]} {est[i]:+.3f} log-odds (p_adj = {fmt_p(padj[i])}); the fit corrects for it")
    return _row("position bias", ("differs: " if n_sig else "agrees: ") + facts, est[i], padj[i]), tab


# ------------------------------------------------------------------------------- tie convention
def tie_convention(v: Votes) -> tuple[dict, pd.DataFrame]:
    """Refits of the same cells under the other tie conventions ("davidson", "half", "drop"): each
    model's rank under each; differs when the #1 changes."""
    s0 = v.strengths(v.theta)
    r0 = _ranks(s0)
    out = {v.d.ties: r0}
    for t in TIES:
        if t == v.d.ties:
            continue
        d2 = dataclasses.replace(v.d, ties=t)
        if t == "drop" and not (d2.counts[:, :2].sum() > 0):
            continue
        f = _bt_numpy.fit(d2, d2.counts[None])
        s = np.zeros(d2.k)
        s[d2.free] = f.theta[0, :d2.k - 1]
        out[t] = _ranks(s)
    tab = pd.DataFrame({"model": list(v.d.models), **{f"rank_{t}": r for t, r in out.items()}})
    tab = tab.sort_values(f"rank_{v.d.ties}").reset_index(drop=True)
    change = max(float(np.nanmax(np.abs(r - r0))) for r in out.values())
    top0 = v.d.models[int(np.argmin(r0))]
    tops = {t: v.d.models[int(np.argmin(r))] for t, r in out.items()}
    moved = {t: m for t, m in tops.items() if m != top0}
    facts = f"largest rank change {change:.0f} across ties = {', '.join(out)}"
    if moved:
        return _row("tie convention", f"differs: the #1 becomes {moved} instead of {top0}; {facts}", change), tab
    return _row("tie convention", f"agrees: the #1 ({top0}) is the same under every convention; {facts}", change), tab


# ------------------------------------------------------------------------------- annotator influence
def annotator_influence(v: Votes, judges: np.ndarray | None, n_confirm: int = N_CONFIRM_JUDGES,
                        deadline: res.Deadline | None = None) -> tuple[dict, pd.DataFrame]:
    """Leave one judge out: the strengths without all of a judge's votes, by the linear
    approximation for every judge (the summed influence of its votes, :func:`group_influence` on
    each strength) and by exact refits for the ``n_confirm`` judges the approximation ranks as most
    influential (all judges up to :data:`EXACT_JUDGES`); differs when dropping one judge changes the #1."""
    if judges is None:
        return _row("annotator influence", "not available: no judge column"), pd.DataFrame()
    codes, names = pd.factorize(judges)
    nj = len(names)
    if nj < 2:
        return _row("annotator influence", "not available: a single judge"), pd.DataFrame()
    d = v.d
    s0 = v.strengths(v.theta)
    r0 = _ranks(s0)
    top = int(np.argmin(r0))
    eye = np.zeros((d.k - 1, d.n_params))
    eye[np.arange(d.k - 1), np.arange(d.k - 1)] = 1.0
    infl = group_influence(v, v.theta, v.inv, eye)  # (k - 1, G): change of each strength per vote
    jg = sp.csr_matrix((np.ones(len(codes)), (codes, v.group)), shape=(nj, len(v.g_n)))
    delta = np.asarray(jg @ infl.T)  # (J, k - 1)
    s_appr = np.repeat(s0[None], nj, axis=0)
    s_appr[:, d.free] += delta
    r_appr = np.argsort(np.argsort(-s_appr, axis=1, kind="stable"), axis=1, kind="stable") + 1
    change = np.abs(r_appr - r0[None]).max(axis=1)
    lost = r_appr[:, top] != 1
    gap = s_appr[:, top] - np.max(np.where(np.arange(d.k)[None] == top, -np.inf, s_appr), axis=1)
    order = np.lexsort((gap, -change, ~lost))  # the #1 lost first, then the largest change, then the smallest lead
    chosen = np.arange(nj) if nj <= EXACT_JUDGES else order[:n_confirm]
    rows = []
    for j in chosen:
        take = np.bincount(v.group[codes == j], minlength=len(v.g_n))
        theta, _ = v.refit(v.counts_without(take))
        if deadline is not None:
            deadline.check(f"{len(rows) + 1} of {len(chosen)} leave-one-judge-out refits")
        r = _ranks(v.strengths(theta))
        rows.append({"judge": str(names[j]), "n_votes": int(take.sum()), "approx_rank_change": int(change[j]),
                     "rank_change": float(np.nanmax(np.abs(r - r0))), "top_changes": bool(r[top] != 1),
                     "new_top": d.models[int(np.argmin(r))]})
    tab = pd.DataFrame(rows).sort_values(["top_changes", "rank_change"], ascending=False).reset_index(drop=True)
    worst = tab.iloc[0]
    how = "exact refits of every judge" if nj <= EXACT_JUDGES else (
        f"linear approximation for {nj} judges, exact refits of the {len(chosen)} most influential")
    facts = (f"dropping {worst['judge']} ({worst['n_votes']} votes) moves a model by {worst['rank_change']:.0f} "
             f"rank(s) ({how})")
    if bool(worst["top_changes"]):
        return _row("annotator influence", f"differs: dropping one judge changes the #1 to {worst['new_top']}; "
                    + facts, worst["rank_change"]), tab
    return _row("annotator influence", "agrees: no single judge changes the #1; " + facts, worst["rank_change"]), tab


# ------------------------------------------------------------------------------- separation
def separation(rank_result: Any, order: list[str]) -> tuple[dict, list[list[str]]]:
    """Neighbours on the leaderboard told apart by the simultaneous pairwise intervals (max-|t|,
    :func:`mixedeval.rank_intervals`); tie groups: runs of neighbours not told apart."""
    if rank_result is None or not len(getattr(rank_result, "pairwise", [])):
        return _row("separation of neighbours", "not available: no simultaneous rank intervals (ranks=False)"), \
            [[m] for m in order]
    pw = rank_result.pairwise
    sig = {}
    for a, b, s in zip(pw["name_a"].astype(str), pw["name_b"].astype(str), pw["significant"]):
        sig[(a, b)] = sig[(b, a)] = bool(s)
    groups: list[list[str]] = [[order[0]]]
    n_sep = 0
    for a, b in zip(order[:-1], order[1:]):
        if sig.get((a, b), False):
            n_sep += 1
            groups.append([b])
        else:
            groups[-1].append(b)
    top = len(groups[0]) == 1
    facts = (f"{n_sep} of {len(order) - 1} neighbouring pairs told apart at the simultaneous level; "
             f"{len(groups)} tie group(s), the first: {groups[0][:5]}")
    verdict = ("agrees: the #1 is told apart from the #2; " if top else
               "differs: the #1 is not told apart from the #2 at the simultaneous level; ") + facts
    return _row("separation of neighbours", verdict, n_sep), groups

