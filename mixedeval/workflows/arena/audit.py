"""How robust is an arena leaderboard? ``me.votes_to_flip`` and ``me.arena_audit``.

``votes_to_flip``: for the top rank, each pair of neighbours on the leaderboard and the pairs
named in ``pairs``, the fewest votes (battles) whose removal flips the order -- found by the
approximate maximum influence perturbation (Broderick, Giordano & Meager 2020; applied to
Chatbot Arena by Huang et al. 2025, arXiv 2508.11847: "Dropping just 0.003% of human preferences
can change the top-ranked model"), then confirmed by an exact refit without those votes, the set
grown by re-linearising at the refit when the refit does not flip (:mod:`._votes`). The
approximate count (``approx_votes``) and the confirmed one (``votes_to_flip``) are both reported,
and the votes are listed (row of the table, judge, prompt, model_a, model_b, winner).

``arena_audit``: the Bradley-Terry leaderboard of :func:`mixedeval.bradley_terry` (intervals,
simultaneous rank intervals, tie groups) with the votes-to-flip column and the probes of
:mod:`._probes` as the answer's checks: comparison-graph connectivity, coverage imbalance,
intransitivity (cyclic triads beyond a parametric bootstrap from the fit), position bias per
judge, tie-convention sensitivity, annotator influence (leave one judge out) and the
simultaneous separation of neighbours.

Both refit the Bradley-Terry likelihood of :func:`mixedeval.bradley_terry` (Davidson, half or
dropped ties, judges' position bias, covariates, weights, pooled judges) by numpy's Newton
iteration (:mod:`mixedeval.inference._bt_numpy`); random effects (``prompt_effect``,
``judge_effect="random"``) are not audited.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ... import _resources as res
from ..._answer import Answer, checks_table, z_quantile
from ..._progress import bar_disabled
from ..._random import seed_sequence
from ...data.table import as_pandas
from ...data.validate import require_columns
from ...errors import DataError
from ...inference._bt_design import TIES
from ...inference.rankings import rank_intervals
from ...results import ResultWarning
from .._bt_answer import BTAnswer, bt_answer
from .._common import _WorkflowResult, dedupe_warnings
from ..preferences import BradleyTerryResult, _one_blas_thread, _rank_n_sim, bradley_terry
from . import _probes
from ._votes import Votes, build_votes, greedy, group_influence, refit_many, search, start

FLIP_COLUMNS = ("target", "system_a", "system_b", "gap", "approx_votes", "approx_share", "votes_to_flip", "share",
                "confirmed", "refit_gap", "rounds")
#: the votes_to_flip answer's compact letter display up to this many models
LETTERS_MAX_MODELS = 30
VOTE_COLUMNS = ("target", "system_a", "system_b", "row", "model_a", "model_b", "winner", "judge", "prompt")


def _share_text(n: float, total: int) -> str:
    pct = 100.0 * n / total
    return f"{pct:.2g}%" if pct < 1 else f"{pct:.1f}%"


@dataclass(frozen=True, repr=False)
class VotesToFlipResult(BTAnswer, _WorkflowResult):
    """Result of :func:`votes_to_flip`.

    table : one row per target: target ("top rank", "neighbours", "pair"), system_a (the better of
        the two), system_b, gap (strength of system_a - system_b, log-odds), approx_votes (the
        linear approximation's count), approx_share, votes_to_flip (the confirmed count: an exact
        refit without these votes flips the order; NaN when none was found), share (of
        ``n_votes``), confirmed, refit_gap (system_a - system_b in the last refit), rounds (exact
        refits). For "top rank" system_b is the challenger that needs the fewest votes.
    votes : the confirmed votes of each target: target, system_a, system_b, row (the table's
        index label), model_a, model_b, winner, judge, prompt.
    leaderboard : the models best first (the answer's leaderboard) with ``votes_to_flip`` and
        ``votes_to_flip_share``: the votes whose removal swaps the model with the one below it.
    """

    table: Any
    votes: Any
    n_votes: int
    ties: str
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    answer: Answer | None = field(default=None, repr=False, compare=False)

    _print_tables = ("table", "votes")
    _title = "Votes to flip the leaderboard"

    @property
    def leaderboard(self) -> pd.DataFrame | None:
        return None if self.answer is None else self.answer.leaderboard

    def robustness_text(self) -> str:
        """One sentence: how many votes change the #1."""
        t = self.table[self.table["target"] == "top rank"]
        if not len(t):
            return "the top rank was not audited"
        r = t.iloc[0]
        n = r["votes_to_flip"]
        if not np.isfinite(n):
            return (f"no set of votes found whose removal changes the #1 ({r['system_a']}) among {self.n_votes:,} "
                    "votes (linear approximation and exact refits)")
        return (f"the #1 ({r['system_a']}) changes if {int(n):,} of {self.n_votes:,} votes "
                f"({_share_text(n, self.n_votes)}) are dropped (confirmed by an exact refit; the linear approximation "
                f"said {int(r['approx_votes']):,})")

    def _scalars(self) -> list[tuple[str, Any]]:
        return [("votes", self.n_votes), ("ties", self.ties), ("robustness", self.robustness_text())]


@dataclass(frozen=True, repr=False)
class ArenaAuditResult(BTAnswer, _WorkflowResult):
    """Result of :func:`arena_audit`.

    table : the leaderboard best first (name, estimate, std_error, conf_low, conf_high, rank,
        rank_low, rank_high, letters, tie_group, votes_to_flip, votes_to_flip_share) -- the
        answer's leaderboard.
    probes : one row per probe: check, verdict, value (the probe's statistic), p_value and the
        numbers behind it; the answer's ``checks`` are these rows.
    flips : the :class:`VotesToFlipResult`.  fit : the :class:`BradleyTerryResult` audited.
    position_bias, tie_conventions, judge_influence : the probes' tables.
    tie_groups : runs of neighbours not told apart by the simultaneous intervals.
    """

    table: Any
    probes: Any
    flips: VotesToFlipResult
    fit: BradleyTerryResult
    position_bias: Any
    tie_conventions: Any
    judge_influence: Any
    tie_groups: list
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    answer: Answer | None = field(default=None, repr=False, compare=False)

    _print_tables = ("table", "probes")
    _skip_in_dict = ("fit",)
    _title = "Arena audit: how robust is this leaderboard?"

    def robustness_text(self) -> str:
        """One sentence: how many votes change the #1."""
        return self.flips.robustness_text()

    def _scalars(self) -> list[tuple[str, Any]]:
        return [("robustness", self.robustness_text())]


# ------------------------------------------------------------------------------------ arguments
def _pairs(pairs: Any, models: Sequence[str]) -> list[tuple[str, str]]:
    if pairs is None:
        return []
    if isinstance(pairs, tuple) and len(pairs) == 2 and all(isinstance(p, str) for p in pairs):
        pairs = [pairs]
    out = []
    for p in pairs:
        if not (isinstance(p, (tuple, list)) and len(p) == 2):
            raise DataError(f"pairs must be a list of (model, model) tuples, e.g. [('gpt-4', 'claude-3')]; got {p!r}")
        a, b = str(p[0]), str(p[1])
        bad = [m for m in (a, b) if m not in models]
        if bad or a == b:
            raise DataError(f"pairs: {bad or [a]} {'are not models of the battles' if bad else 'is named twice'}; "
                            f"choose two of {list(models)[:10]}")
        out.append((a, b))
    return out


def _settings(fit: Any, ties: Any, position_bias: Any, min_judge_battles: Any, weight: Any) -> dict:
    """The likelihood's settings: those given, else the audited fit's (its provenance)."""
    if fit is not None and not isinstance(fit, BradleyTerryResult):
        raise DataError(f"fit must be a result of mixedeval.bradley_terry, not {type(fit).__name__}")
    prov = fit.provenance if fit is not None else {}
    if fit is not None and (prov.get("prompt_effect") is not None or prov.get("judge_effect") == "random"):
        raise DataError("the audit refits fixed-effect Bradley-Terry models; fit has random effects "
                        "(prompt_effect / judge_effect='random'): audit a fit without them")
    out = {"ties": ties if ties is not None else prov.get("ties", "davidson"),
           "position_bias": position_bias if position_bias is not None else prov.get("position_bias", True),
           "min_judge_battles": min_judge_battles if min_judge_battles is not None else prov.get("min_judge_battles", 50),
           "weight": weight if weight is not None else (prov.get("weight") or False) if fit is not None else None}
    if out["ties"] not in TIES:
        raise DataError(f"ties must be one of {', '.join(map(repr, TIES))}; got {out['ties']!r}")
    return out


def _weight(df: pd.DataFrame, weight: Any) -> str | None:
    if weight is None:
        return "weight" if "weight" in df.columns else None
    return None if weight is False or weight == "" else weight


def _check_int(x: Any, name: str, minimum: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < minimum:
        raise DataError(f"{name} must be an integer >= {minimum}, got {x!r}")
    return int(x)


# ------------------------------------------------------------------------------------ votes to flip
def _targets(order: list[int], named: list[tuple[int, int]], top: bool, adjacent: bool) -> list[tuple[str, int, int]]:
    out = []
    if top:
        out += [("top rank", order[0], j) for j in order[1:]]
    if adjacent:
        out += [("neighbours", a, b) for a, b in zip(order[:-1], order[1:])]
    out += [("pair", a, b) for a, b in named]
    return out


#: contrasts whose influences are computed at once (an array of contrasts x vote groups each)
_CHUNK = 16
#: what to change when the search would run past the time limit
_FLIP_FIX = ("Audit fewer targets (top=False, adjacent=False, or a few pairs=), lower max_rounds or n_challengers, or "
             "audit a random sample of the battles.")


def _flip_deadline(v: Votes) -> res.Deadline:
    """The time limit of the votes-to-flip search (:func:`_flip_rows`)."""
    return res.Deadline(f"the votes-to-flip search of {res.format_count(v.n_votes)} votes and {v.d.k} models",
                        _FLIP_FIX)


def _judge_first_chunk(dl: res.Deadline, took: float, done: int, total: int) -> None:
    """After the first chunk of targets (``done`` of ``total`` in ``took`` seconds): refuse when
    the rest, at the same pace, would take the search past the time limit."""
    if done < total:
        res.check_time(dl.elapsed() + took / done * (total - done), dl.what, dl.fix,
                       detail=f"{total} targets confirmed by exact refits; the first {done} took "
                              f"{res.format_seconds(took)}")


def _flip_rows(v: Votes, targets: list[tuple[str, int, int]], max_rounds: int, n_challengers: int,
               progress: Any) -> list[tuple[str, Any]]:
    """(target, Flip) per audited target; the top rank: the challengers with the fewest
    approximate votes are confirmed (``n_challengers``) and the fewest confirmed kept. Influences
    are computed :data:`_CHUNK` contrasts at a time (their arrays grow with the vote groups)."""
    dl = _flip_deadline(v)
    c = np.array([v.contrast(a, b) for _, a, b in targets]) if targets else np.zeros((0, v.d.n_params))
    top_idx = [i for i, t in enumerate(targets) if t[0] == "top rank"]
    approx: dict[int, int] = {}
    for s0 in range(0, len(top_idx), _CHUNK):
        dl.check(f"the influences of {s0} of {len(top_idx)} challengers of the #1")
        part = top_idx[s0:s0 + _CHUNK]
        infl = group_influence(v, v.theta, v.inv, c[part])
        for i, row in zip(part, infl):
            take = greedy(float(c[i] @ v.theta), row, v.g_n)
            if take is not None:
                approx[i] = int(take.sum())
    ranked = sorted(approx, key=approx.__getitem__)
    todo = ranked[:n_challengers] + [i for i, t in enumerate(targets) if t[0] != "top rank"]
    if top_idx and not ranked:  # no challenger is reached by the linear approximation: search the runner-up
        todo.insert(0, top_idx[0])
    out: list[tuple[str, Any]] = []
    top_flips = []
    for s0 in tqdm(range(0, len(todo), _CHUNK), desc="votes to flip", disable=bar_disabled(progress), leave=False):
        t_chunk = time.perf_counter()
        part = todo[s0:s0 + _CHUNK]
        infl = group_influence(v, v.theta, v.inv, c[part])
        starts = [start(v, targets[i][1], targets[i][2], row) for i, row in zip(part, infl)]
        have = [j for j, st in enumerate(starts) if st[2] is not None]
        firsts = dict(zip(have, refit_many(v, [starts[j][2] for j in have]))) if have else {}
        for j, i in enumerate(part):
            kind, a, b = targets[i]
            f = search(v, a, b, *starts[j], top=kind == "top rank", max_rounds=max_rounds, first=firsts.get(j),
                       deadline=dl)
            if kind == "top rank":
                top_flips.append(f)
            else:
                out.append((kind, f))
        if s0 == 0:
            _judge_first_chunk(dl, time.perf_counter() - t_chunk, len(part), len(todo))
    if top_flips:
        ok = [f for f in top_flips if f.confirmed]
        out.insert(0, ("top rank", min(ok, key=lambda f: int(f.take.sum())) if ok else top_flips[0]))
    return out


def _flip_tables(v: Votes, df: pd.DataFrame, flips: list[tuple[str, Any]], cols: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    m = v.d.models
    n = v.n_votes
    rows, votes = [], []
    for kind, f in flips:
        approx = np.nan if f.approx is None else float(f.approx)
        count = float(f.take.sum()) if f.confirmed else np.nan
        rows.append({"target": kind, "system_a": m[f.better], "system_b": m[f.worse], "gap": f.gap,
                     "approx_votes": approx, "approx_share": approx / n, "votes_to_flip": count, "share": count / n,
                     "confirmed": bool(f.confirmed), "refit_gap": f.refit_gap, "rounds": f.rounds})
        if f.confirmed:
            pos = v.group_rows(f.take)
            sub = df.iloc[pos]
            votes.append(pd.DataFrame({
                "target": kind, "system_a": m[f.better], "system_b": m[f.worse], "row": sub.index.to_numpy(),
                "model_a": sub[cols["model_a"]].to_numpy(), "model_b": sub[cols["model_b"]].to_numpy(),
                "winner": sub[cols["winner"]].to_numpy(),
                "judge": sub[cols["judge"]].to_numpy() if cols["judge"] else None,
                "prompt": sub[cols["prompt"]].to_numpy() if cols["prompt"] else None}))
    table = pd.DataFrame(rows, columns=list(FLIP_COLUMNS))
    vt = pd.concat(votes, ignore_index=True) if votes else pd.DataFrame(columns=list(VOTE_COLUMNS))
    return table, vt[list(VOTE_COLUMNS)]


def _with_flips(board: pd.DataFrame, table: pd.DataFrame, n: int) -> pd.DataFrame:
    """The leaderboard with the votes that swap each model with the one below it."""
    nb = table[table["target"] == "neighbours"]
    by = {str(a): c for a, c in zip(nb["system_a"], nb["votes_to_flip"])}
    out = board.copy()
    out["votes_to_flip"] = [by.get(str(x), np.nan) for x in out["name"]]
    out["votes_to_flip_share"] = out["votes_to_flip"] / n
    return out


def _prepare(battles: Any, fit: Any, prompt: Any = None, **flags: Any) -> pd.DataFrame:
    if isinstance(battles, BradleyTerryResult):
        raise DataError("pass the battle table as battles (a Bradley-Terry result does not keep its battles) and the "
                        "result as fit=: votes_to_flip(df, fit=result, ...) audits the result's settings")
    for name, x in flags.items():
        if not isinstance(x, (bool, np.bool_)):
            raise DataError(f"{name} must be True or False, got {x!r}")
    df = as_pandas(battles) if not isinstance(battles, pd.DataFrame) else battles
    if prompt is not None:  # it only labels the listed votes, but a wrong name must not fail at the end
        require_columns(df, [prompt], "battles")
    return df


def _votes(df: pd.DataFrame, model_a: str, model_b: str, winner: str, judge: Any, position: Any, covariates: Any,
           anchor: Any, s: dict) -> Votes:
    return build_votes(df, model_a, model_b, winner, judge=judge, position=position, ties=s["ties"],
                       position_bias=bool(s["position_bias"]), covariates=covariates, weight=_weight(df, s["weight"]),
                       min_judge_battles=s["min_judge_battles"], anchor=anchor)


def _votes_result(v: Votes, df: pd.DataFrame, cols: dict, pairs: Any, top: bool, adjacent: bool, max_rounds: int,
                  n_challengers: int, progress: Any, level: float, s: dict, answer: bool = True) -> VotesToFlipResult:
    strengths = v.strengths(v.theta)
    order = [int(i) for i in np.argsort(-strengths, kind="stable")]
    idx = {mm: i for i, mm in enumerate(v.d.models)}
    named = [(idx[a], idx[b]) if strengths[idx[a]] >= strengths[idx[b]] else (idx[b], idx[a])
             for a, b in _pairs(pairs, v.d.models)]
    flips = _flip_rows(v, _targets(order, named, top, adjacent), max_rounds, n_challengers, progress)
    table, votes = _flip_tables(v, df, flips, cols)
    warns = []
    if not v.converged:
        warns.append(ResultWarning("convergence", "the Bradley-Terry fit did not converge (a model won or lost every "
                                   "battle?): influences at a non-maximum are not meaningful"))
    if len(table) and (~table["confirmed"]).any():
        bad = table.loc[~table["confirmed"], ["system_a", "system_b"]].astype(str).agg(" > ".join, axis=1).tolist()
        warns.append(ResultWarning("not_confirmed", f"no confirmed set of votes flips {bad[:5]} within {max_rounds} "
                                   "refits (or the linear approximation cannot reach a flip): votes_to_flip is NaN"))
    ans = _flip_answer(v, table, level) if answer else None
    return VotesToFlipResult(table=table, votes=votes, n_votes=v.n_votes, ties=s["ties"],
                             warnings=dedupe_warnings(warns),
                             provenance={"method": "votes_to_flip (AMIP, Broderick, Giordano & Meager 2020; "
                                         "arXiv 2508.11847)", "max_rounds": max_rounds,
                                         "n_challengers": n_challengers, **s, "weight": _weight(df, s["weight"])},
                             answer=ans)


def _flip_answer(v: Votes, table: pd.DataFrame, level: float) -> Answer:
    """The answer of :func:`votes_to_flip`: Wald strengths (likelihood SE) with simultaneous rank
    intervals from their joint normal, the leaderboard with the votes-to-flip column."""
    k = v.d.k
    strengths = v.strengths(v.theta)
    cov = np.zeros((k, k))
    cov[np.ix_(v.d.free, v.d.free)] = v.inv[:k - 1, :k - 1]
    se = np.sqrt(np.maximum(np.diag(cov), 0))
    z = z_quantile(level)
    tab = pd.DataFrame({"model": list(v.d.models), "estimate": strengths, "std_error": se,
                        "conf_low": strengths - z * se, "conf_high": strengths + z * se})
    tab = tab.sort_values("estimate", ascending=False, kind="stable").reset_index(drop=True)
    ri = rank_intervals(pd.Series(strengths, index=list(v.d.models)), vcov=cov, level=level, random_state=0,
                        n_sim=_rank_n_sim(k), letters=k <= LETTERS_MAX_MODELS)
    ans = bt_answer(tab, ri.table, ri, level, 0)
    return dataclasses.replace(ans, leaderboard=_with_flips(ans.leaderboard, table, v.n_votes),
                               method=ans.method + "; votes to flip: approximate maximum influence perturbation, "
                                                   "confirmed by exact refits")


@_one_blas_thread
def votes_to_flip(battles: Any, model_a: str = "model_a", model_b: str = "model_b", winner: str = "winner", *,
                  prompt: str | None = None, judge: str | None = None, position: str | None = None,
                  ties: str | None = None, position_bias: bool | None = None, covariates: Sequence[str] | None = None,
                  weight: str | bool | None = None, min_judge_battles: float | None = None,
                  anchor: str | None = None, pairs: Any = None, top: bool = True, adjacent: bool = True,
                  max_rounds: int = 10, n_challengers: int = 3, level: float = 0.95, fit: Any = None,
                  progress: bool | None = None) -> VotesToFlipResult:
    """The fewest votes whose removal flips the top rank, each pair of neighbours and each pair in
    ``pairs`` of a Bradley-Terry leaderboard (see the module docstring and :mod:`._votes`).

    battles, model_a, model_b, winner, judge, position, covariates, weight, anchor : as
        :func:`mixedeval.bradley_terry` (the same likelihood); ``prompt`` only labels the votes.
    ties, position_bias, min_judge_battles : as :func:`mixedeval.bradley_terry` (None: those of
        ``fit``, else its defaults "davidson", True, 50).
    pairs : [(model, model), ...] audited besides the leaderboard's neighbours.
    top, adjacent : audit the top rank / every pair of neighbours.
    max_rounds : exact refits per target before giving up (each adds the votes the influences
        recomputed at the refit ask for).  n_challengers : challengers of the #1 confirmed (those
        the linear approximation needs the fewest votes for).
    fit : a :func:`mixedeval.bradley_terry` result whose settings are audited.
    Returns :class:`VotesToFlipResult`; its answer's leaderboard carries ``votes_to_flip``.
    """
    df = _prepare(battles, fit, prompt, top=top, adjacent=adjacent)
    s = _settings(fit, ties, position_bias, min_judge_battles, weight)
    max_rounds = _check_int(max_rounds, "max_rounds", 1)
    n_challengers = _check_int(n_challengers, "n_challengers", 1)
    v = _votes(df, model_a, model_b, winner, judge, position, covariates, anchor, s)
    cols = {"model_a": model_a, "model_b": model_b, "winner": winner, "judge": judge, "prompt": prompt}
    return _votes_result(v, df, cols, pairs, top, adjacent, max_rounds, n_challengers, progress, level, s)


# ------------------------------------------------------------------------------------ audit
def _n_models(df: pd.DataFrame, model_a: str, model_b: str) -> int:
    """Distinct models of the battle table (0 when the columns are missing: the fit names them)."""
    if model_a not in df.columns or model_b not in df.columns:
        return 0
    return int(pd.unique(np.concatenate([df[model_a].to_numpy(), df[model_b].to_numpy()])).size)


def _audit_guard(battles: Any, model_a: str = "model_a", model_b: str = "model_b", *, n_sim: Any = 200,
                max_rounds: Any = 10, n_challengers: Any = 3,
                n_confirm_judges: Any = _probes.N_CONFIRM_JUDGES) -> tuple[int, int, int, int, res.LoopGuard | None]:
    """What :func:`arena_audit` checks before any fit, from what the battle table tells up front:
    its integer arguments, and the intransitivity probe's memory (:func:`._probes.sim_guard`: ``n_sim``
    simulated tables of at most as many cells as battles, the models counted in ``model_a`` /
    ``model_b``), refused with :class:`mixedeval.DataError` above ``MIXEDEVAL_MEMORY_LIMIT``.
    ``mixedeval preferences --robustness`` calls it before its Bradley-Terry fit. Returns n_sim,
    max_rounds, n_challengers, n_confirm_judges and the probe's loop guard (None with n_sim=0)."""
    n_sim = _check_int(n_sim, "n_sim", 0)
    max_rounds = _check_int(max_rounds, "max_rounds", 1)
    n_challengers = _check_int(n_challengers, "n_challengers", 1)
    n_confirm_judges = _check_int(n_confirm_judges, "n_confirm_judges", 1)
    df = as_pandas(battles) if not isinstance(battles, pd.DataFrame) else battles
    guard = _probes.sim_guard(n_sim, len(df), _n_models(df, model_a, model_b))
    return n_sim, max_rounds, n_challengers, n_confirm_judges, guard


@_one_blas_thread
def arena_audit(battles: Any, model_a: str = "model_a", model_b: str = "model_b", winner: str = "winner", *,
                prompt: str | None = None, judge: str | None = None, position: str | None = None,
                ties: str | None = None, position_bias: bool | None = None, covariates: Sequence[str] | None = None,
                weight: str | bool | None = None, min_judge_battles: float | None = None,
                anchor: str | None = None, pairs: Any = None, fit: Any = None, n_resamples: int = 1000,
                n_sim: int = 200, level: float = 0.95, random_state: Any = None, max_rounds: int = 10,
                n_challengers: int = 3, n_confirm_judges: int = _probes.N_CONFIRM_JUDGES,
                progress: bool | None = None, **bt_kwargs: Any) -> ArenaAuditResult:
    """How robust is this leaderboard: the Bradley-Terry leaderboard (``fit``, else
    :func:`mixedeval.bradley_terry` with these arguments, ``n_resamples`` prompt-bootstrap
    replicates and ``**bt_kwargs``) with the votes to flip each neighbour and the top rank
    (:func:`votes_to_flip`) and the probes as the answer's checks (see the module docstring):

    * connectivity: the comparison graph connected, its wins strongly connected, every model with
      two opponents or more;
    * coverage imbalance: battles per model (largest / smallest <= 10) and pairs never compared
      (<= 50%);
    * intransitivity: cyclic triads of the majority graph against ``n_sim`` parametric-bootstrap
      tables from the fitted model (p < 1 - level: more cycles than a transitive model makes);
    * position bias: each judge's position effect, z test, Holm over the judges;
    * tie convention: ranks under ties = "davidson", "half", "drop" (differs when the #1 changes);
    * annotator influence: leave one judge out (linear approximation for all judges, exact refits
      of the ``n_confirm_judges`` most influential; differs when one judge changes the #1);
    * separation of neighbours: neighbours told apart by the simultaneous intervals; tie groups.
    """
    df = _prepare(battles, fit, prompt)
    s = _settings(fit, ties, position_bias, min_judge_battles, weight)
    # arguments and the n_sim memory estimate before any fit
    n_sim, max_rounds, n_challengers, n_confirm_judges, sim_guard = _audit_guard(
        df, model_a, model_b, n_sim=n_sim, max_rounds=max_rounds, n_challengers=n_challengers,
        n_confirm_judges=n_confirm_judges)
    ss = seed_sequence(random_state)
    if fit is None:
        fit = bradley_terry(df, model_a, model_b, winner, prompt=prompt, judge=judge, position=position,
                            ties=s["ties"], position_bias=bool(s["position_bias"]), covariates=covariates,
                            weight=s["weight"], min_judge_battles=s["min_judge_battles"], anchor=anchor,
                            n_resamples=n_resamples, level=level, random_state=random_state, progress=progress,
                            **bt_kwargs)
    v = _votes(df, model_a, model_b, winner, judge, position, covariates, fit.reference, s)
    cols = {"model_a": model_a, "model_b": model_b, "winner": winner, "judge": judge, "prompt": prompt}
    flips = _votes_result(v, df, cols, pairs, True, True, max_rounds, n_challengers, progress, level, s, answer=False)
    alpha = 1.0 - level
    rng = np.random.default_rng(ss)
    order = [str(m) for m in fit.answer.leaderboard["name"]] if fit.answer is not None else list(fit.table["model"])
    pos_row, pos_tab = _probes.position_bias(v, alpha)
    tie_row, tie_tab = _probes.tie_convention(v)
    judges = df[judge].astype(str).to_numpy()[v.rows] if judge else None
    inf_row, inf_tab = _probes.annotator_influence(v, judges, n_confirm_judges, res.Deadline(
        f"the leave-one-judge-out refits of me.arena_audit ({res.format_count(v.n_votes)} votes, {v.d.k} models)",
        f"Audit a random sample of the battles, or without judge=; with more than {_probes.EXACT_JUDGES} judges, "
        "lower n_confirm_judges."))
    sep_row, groups = _probes.separation(fit.rank_result, order)
    rows = [_probes.connectivity(v), _probes.coverage(v), _probes.intransitivity(v, n_sim, rng, alpha, sim_guard),
            pos_row, tie_row, inf_row, sep_row]
    probes = pd.DataFrame(rows)
    first = ["check", "verdict", "value", "p_value"]
    probes = probes[first + [c for c in probes.columns if c not in first + ["estimate", "conf_low", "conf_high"]]]
    group_of = {m: i + 1 for i, g in enumerate(groups) for m in g}
    board = fit.answer.leaderboard.copy() if fit.answer is not None else None
    if board is not None:
        board["tie_group"] = [group_of.get(str(x)) for x in board["name"]]
        board = _with_flips(board, flips.table, flips.n_votes)
    answer = None if fit.answer is None else dataclasses.replace(fit.answer, leaderboard=board,
                                                                 checks=checks_table(rows))
    return ArenaAuditResult(table=board, probes=probes, flips=flips, fit=fit, position_bias=pos_tab,
                            tie_conventions=tie_tab, judge_influence=inf_tab, tie_groups=groups,
                            warnings=dedupe_warnings(list(fit.warnings) + list(flips.warnings)),
                            provenance={"method": "arena_audit", "n_sim": n_sim, "random_state": random_state,
                                        "level": level, **flips.provenance}, answer=answer)
