"""The battle table of a Bradley-Terry analysis, checked and aggregated once.

A battle is one judgment: ``model_a`` against ``model_b`` with a ``winner`` in {"model_a",
"model_b", "tie", "tie (bothbad)"} (Chatbot Arena's values; a tie of two bad answers is a tie).
Which answer the judge saw first is ``first`` = +1 (model_a first: the Arena's left answer, the
default without a ``position`` column), -1 (model_b first: ``position == "b_first"``, as
:func:`mixedeval.read_battles` records swapped games) or 0 (unknown: the battle carries no
position effect). The table is aggregated into *cells* -- one per (model_a, model_b, judge,
first) with the counts of a-wins, b-wins and ties, every pair written with its models in one order (a
battle of b against a is that of a against b with the winner, the order shown and the covariates
negated: the likelihood is the same) -- and, for the resampling, into the same
counts per *unit* (prompt, or row when no prompt column is given) as a sparse (units x 3 cells)
matrix: a bootstrap replicate's counts are a weighted sum of the units' rows, one matrix product
for a whole block of replicates. With ``covariates`` (per-battle differences such as the answer
length of a minus that of b) every battle is its own cell.

Parameters (the order of every parameter vector of :mod:`._bt_numpy` and of the R design):
the strengths of all models but the reference (log-odds scale, reference = 0), then one
position effect per judge (the log-odds that the answer shown first wins, beyond the
strengths; with ``position_bias``; its design column is ``first``), then the covariates'
coefficients, then (Davidson ties only) one tie propensity ``log(nu)`` per judge. A judge none of
whose battles records the order (``first`` = 0 throughout, e.g. AlpacaEval annotations without
``is_switched_outputs``) has no position effect (``position_judges`` marks the judges that have one).

``weight`` (optional column): each battle counts ``weight`` times in the cells and in its unit's
counts (Arena-Hard's ``>>`` verdicts count 3, AlpacaEval's weighted preferences split one
judgment between the two sides), so a weighted judgment stays one row and its prompt's battles
stay together in the bootstrap.

Judges with fewer than ``min_judge_battles`` battles (total weight) share one set of judge
parameters under the label :data:`POOLED_JUDGES` (a Chatbot Arena file names each voter as its
judge: most voters cast a handful of votes, too few to estimate a position bias and a leniency).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..data.validate import require_columns, require_nonempty
from ..errors import DataError

#: winner values -> outcome code (0: model_a wins, 1: model_b wins, 2: tie)
WINNERS = {"model_a": 0, "model_b": 1, "tie": 2, "tie (bothbad)": 2}
TIES = ("davidson", "half", "drop")
#: label of the one judge when the table has no judge column
ALL_JUDGES = "(all)"
#: pandas.api.types.infer_dtype kinds whose values are all strings / numbers (hashable labels)
_SCALAR_KINDS = ("string", "integer", "floating", "mixed-integer-float", "boolean", "empty", "decimal", "unicode",
                 "bytes")
#: label of the judges pooled because they judged fewer than min_judge_battles battles
POOLED_JUDGES = "(pooled judges)"
#: largest absolute covariate value accepted (squares must stay finite in the information matrix)
MAX_COVARIATE = 1e12


@dataclass(frozen=True)
class BTDesign:
    """The aggregated battles (see the module docstring)."""

    models: tuple[str, ...]
    ref: int
    judges: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    judge: np.ndarray
    first: np.ndarray
    cov: np.ndarray | None
    cov_names: tuple[str, ...]
    counts: np.ndarray
    units: sp.csr_matrix
    unit_label: str
    n_units: int
    ties: str
    position_bias: bool
    position_judges: np.ndarray | None = None
    n_pooled: int = 0
    #: battles per cluster for the sandwich (:mod:`._bt_sandwich`) and the cluster bootstrap:
    #: "prompt", "judge" (the raw judge labels, never pooled) and "prompt:judge" (their
    #: intersection) -> sparse (clusters x 3 cells) matrices like ``units`` (built on request:
    #: ``build_design(cluster_by=...)``)
    clusters: dict | None = None
    #: for each cluster of "prompt:judge", its prompt's and its judge's index in "prompt" / "judge"
    cluster_parents: tuple | None = None
    #: sum of squared battle weights per cell and outcome (cells, 3): the meat of the battle-level
    #: sandwich (every battle its own cluster)
    sq_counts: np.ndarray | None = None

    @property
    def pos_judges(self) -> np.ndarray:
        """Indices of the judges with a position effect (none without ``position_bias``)."""
        if not self.position_bias:
            return np.zeros(0, dtype=np.int64)
        if self.position_judges is None:
            return np.arange(len(self.judges))
        return np.flatnonzero(self.position_judges)

    @property
    def k(self) -> int:
        return len(self.models)

    @property
    def free(self) -> np.ndarray:
        """The models whose strength is a parameter (all but the reference)."""
        return np.array([i for i in range(self.k) if i != self.ref], dtype=np.int64)

    @property
    def n_position(self) -> int:
        return len(self.pos_judges)

    @property
    def n_tau(self) -> int:
        return len(self.judges) if self.ties == "davidson" else 0

    @property
    def n_params(self) -> int:
        return self.k - 1 + self.n_position + len(self.cov_names) + self.n_tau

    def eta_extra(self) -> np.ndarray:
        """The dense columns of the linear predictor besides the strengths: judge indicators
        (position effects) and covariates, (cells, n_position + q)."""
        cols = []
        if self.n_position:
            pos = np.full(len(self.judges), -1, dtype=np.int64)
            pos[self.pos_judges] = np.arange(self.n_position)
            col = np.zeros((len(self.a), self.n_position))
            has = pos[self.judge] >= 0
            col[np.flatnonzero(has), pos[self.judge][has]] = self.first[has]
            cols.append(col)
        if self.cov is not None:
            cols.append(self.cov)
        return np.hstack(cols) if cols else np.zeros((len(self.a), 0))

    def tau_columns(self) -> np.ndarray:
        """Judge indicators of the tie propensities (Davidson), (cells, n_tau)."""
        if self.ties != "davidson":
            return np.zeros((len(self.a), 0))
        out = np.zeros((len(self.a), len(self.judges)))
        out[np.arange(len(self.a)), self.judge] = 1.0
        return out

    def param_names(self) -> list[tuple[str, str]]:
        """(kind, name) per parameter: ("strength", model), ("position", judge), ("covariate",
        column), ("tie", judge)."""
        out = [("strength", self.models[i]) for i in self.free]
        out += [("position", self.judges[j]) for j in self.pos_judges]
        out += [("covariate", c) for c in self.cov_names]
        out += [("tie", j) for j in self.judges] if self.ties == "davidson" else []
        return out


def _labels(df: pd.DataFrame, column: str, role: str, as_str: bool = True) -> np.ndarray:
    s = df[column]
    miss = s.isna().to_numpy()
    if miss.any():
        rows = ", ".join(map(str, df.index[miss][:5]))
        raise DataError(f"column {column!r} ({role}) has {int(miss.sum())} missing values (rows {rows}); drop those "
                        f"battles (df.dropna(subset=[{column!r}])) or fill in the {role}")
    if s.dtype == object and pd.api.types.infer_dtype(s, skipna=True) not in _SCALAR_KINDS:
        bad = s.map(lambda v: not isinstance(v, (str, int, float, bool, np.generic))).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"column {column!r} ({role}) holds a {type(s.iloc[i]).__name__} at row {df.index[i]} "
                            f"({str(s.iloc[i])[:40]}); {role} values must be strings or numbers")
    if not as_str:  # prompts: hashable labels that never reach R (integer codes do)
        return s.to_numpy()
    # the distinct values as strings, then indexed by their codes (converting a million strings
    # one by one, e.g. from pyarrow, takes half a second; the distinct ones a few microseconds)
    codes, uniq = pd.factorize(s)
    names = np.array([str(v) for v in np.asarray(uniq, dtype=object)] + [""], dtype=object)
    nul = [v for v in names[:-1] if "\x00" in v]
    if nul:
        raise DataError(f"column {column!r} ({role}) holds a NUL character ({nul[0][:40]!r}); clean the names first "
                        f"(e.g. df[{column!r}].str.replace('\\x00', ''))")
    return names[codes]


def _outcomes(df: pd.DataFrame, winner: str) -> np.ndarray:
    codes, uniq = pd.factorize(df[winner])
    if (codes >= 0).all() and all(isinstance(v, str) and v in WINNERS for v in uniq):
        return np.array([WINNERS[v] for v in uniq], dtype=np.int64)[codes]  # the usual table, fast
    w = _labels(df, winner, "winner")
    labels = list(WINNERS)
    idx = pd.Index(labels).get_indexer(w)
    bad = idx < 0
    if bad.any():
        vals = sorted(set(w[bad]))[:8]
        raise DataError(f"column {winner!r} has values {vals} that are not a winner; use one of "
                        f"{', '.join(repr(v) for v in WINNERS)} (e.g. map your labels with df[{winner!r}].map(...))")
    return np.array([WINNERS[v] for v in labels], dtype=np.int64)[idx]


def _covariates(df: pd.DataFrame, covariates: Sequence[str]) -> np.ndarray | None:
    if not covariates:
        return None
    out = np.empty((len(df), len(covariates)))
    for j, c in enumerate(covariates):
        try:
            v = pd.to_numeric(df[c], errors="raise").to_numpy(dtype=float)
        except (TypeError, ValueError):
            raise DataError(f"covariate column {c!r} is not numeric; give the difference between the two answers "
                            f"(e.g. length of a minus length of b) as a number") from None
        if not np.isfinite(v).all():
            n = int((~np.isfinite(v)).sum())
            raise DataError(f"covariate column {c!r} has {n} missing or infinite values; drop or fill those battles")
        if len(v) and np.abs(v).max() > MAX_COVARIATE:
            raise DataError(f"covariate column {c!r} has values up to {np.abs(v).max():.3g}; rescale it (e.g. divide "
                            "by its standard deviation: the coefficient is then per SD) -- values beyond 1e12 make the "
                            "information matrix overflow")
        if len(v) and np.ptp(v) == 0:
            raise DataError(f"covariate column {c!r} is constant ({v[0]:g} in every battle): it cannot be separated "
                            "from the strengths and the position bias (not identifiable); a covariate is a per-battle "
                            "difference a - b that varies -- drop it")
        out[:, j] = v
    return out


#: values of a ``position`` column -> first (+1: model_a shown first, -1: model_b first)
POSITIONS = {"a_first": 1, "b_first": -1}


def _first(df: pd.DataFrame, position: str | None) -> np.ndarray:
    if position is None:
        return np.ones(len(df), dtype=np.int64)
    s = df[position]
    known = s.notna().to_numpy()
    codes = pd.Series(s.astype(str).to_numpy()).map(POSITIONS)
    bad = known & codes.isna().to_numpy()
    if bad.any():
        vals = sorted(set(s[bad].astype(str)))[:6]
        raise DataError(f"column {position!r} has values {vals}; use 'a_first', 'b_first' or a missing value "
                        "(unknown order) as mixedeval.read_battles writes them")
    return np.where(known, codes.fillna(0).to_numpy(), 0).astype(np.int64)


def _check_self_battles(ma: np.ndarray, mb: np.ndarray, df: pd.DataFrame, model_a: str, model_b: str) -> None:
    same = ma == mb
    if same.any():
        rows = ", ".join(map(str, df.index[same][:5]))
        raise DataError(f"{int(same.sum())} battles have the same model in {model_a!r} and {model_b!r} (rows {rows}, "
                        f"e.g. {ma[same][0]!r}); a model cannot battle itself: drop those rows")


def _sorted_codes(labels: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Integer codes of ``labels`` in the sorted order of their distinct values (hashing, then a
    sort of the distinct values only: a million battles take milliseconds)."""
    codes, uniq = pd.factorize(labels)
    names = np.asarray(uniq, dtype=object)
    order = sorted(range(len(names)), key=lambda i: names[i])
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    return rank[codes], tuple(str(names[i]) for i in order)


def _levels(models: tuple[str, ...], anchor: Any) -> tuple[tuple[str, ...], int]:
    if len(models) < 2:
        raise DataError(f"the battles involve {len(models)} model(s); a Bradley-Terry model needs at least two")
    if anchor is None:
        return models, 0
    if str(anchor) not in models:
        raise DataError(f"anchor {anchor!r} is not a model of the battles; choose one of {list(models)[:10]}")
    return models, models.index(str(anchor))


def _unit_matrix(unit: np.ndarray, cell: np.ndarray, outcome: np.ndarray, n_cells: int, w: np.ndarray
                 ) -> tuple[sp.csr_matrix, int, np.ndarray]:
    u, uniq = pd.factorize(unit)  # hashing: np.unique's sort of a million labels takes seconds
    return _coded_matrix(u, len(uniq), cell, outcome, n_cells, w), len(uniq), u


def _weights(df: pd.DataFrame, weight: str | None) -> np.ndarray:
    if weight is None:
        return np.ones(len(df))
    try:
        w = pd.to_numeric(df[weight], errors="raise").to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise DataError(f"weight column {weight!r} is not numeric; give each battle's weight as a number (or pass "
                        "weight=False: bradley_terry uses a column named 'weight' by default)") from None
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        raise DataError(f"weight column {weight!r} has {int(bad.sum())} missing, negative or infinite values (e.g. row "
                        f"{df.index[np.flatnonzero(bad)[0]]}); weights are counts of battles (>= 0; weight=False "
                        "ignores the column)")
    return w


def _pool_judges(jd: np.ndarray, w: np.ndarray, min_battles: float) -> tuple[np.ndarray, int]:
    """Judges with fewer than ``min_battles`` battles relabelled :data:`POOLED_JUDGES`; (labels, number pooled)."""
    if not min_battles:
        return jd, 0
    codes, uniq = pd.factorize(jd)
    small = np.bincount(codes, w, len(uniq)) < min_battles
    if not small.any():
        return jd, 0
    out = np.where(small[codes], POOLED_JUDGES, jd).astype(object)
    return out, int(small.sum())


def _canonical(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, first: np.ndarray, cov: np.ndarray | None):
    """Every battle written with the lower model index as model_a: a battle of b against a is the
    battle of a against b with the winner, the order shown (first) and the covariate differences
    negated, which leaves every likelihood here unchanged (eta changes sign, P(a wins) becomes
    P(b wins), a tie stays a tie), so both directions of a pair share cells."""
    swap = a > b
    if not swap.any():
        return a, b, outcome, first, cov
    a2, b2 = np.where(swap, b, a), np.where(swap, a, b)
    flip = np.array([1, 0, 2], dtype=outcome.dtype)
    out2 = np.where(swap, flip[outcome], outcome)
    first2 = np.where(swap, -first, first)
    cov2 = None if cov is None else np.where(swap[:, None], -cov, cov)
    return a2, b2, out2, first2, cov2


def _as_is(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, first: np.ndarray, cov: np.ndarray | None):
    return a, b, outcome, first, cov


def _judge_positions(ji: np.ndarray, fi: np.ndarray, n_judges: int) -> np.ndarray:
    """Whether each judge has a battle whose order is known (first != 0)."""
    return np.bincount(ji, (fi != 0).astype(float), n_judges) > 0


def build_design(df: Any, model_a: str, model_b: str, winner: str, *, prompt: str | None, judge: str | None,
                 ties: str, position_bias: bool, covariates: Sequence[str] | None, anchor: Any,
                 position: str | None = None, weight: str | None = None, min_judge_battles: float = 0,
                 keep_first: bool = True, canonical: bool = True,
                 cluster_by: dict[str, str] | None = None) -> BTDesign:
    """Check the battle table and aggregate it (see the module docstring); ``keep_first=False``:
    nothing in the model uses the order the answers were shown in (no position term), so the
    cells need not record it (half as many cells once the pairs are canonical); ``canonical=False``
    keeps each battle's model_a (a prompt random intercept, ``(1 | prompt)``, shifts model_a's
    log-odds: it is not symmetric in the two models); ``cluster_by``: {"prompt": column, "judge":
    column} (one or both) whose battles-per-cluster matrices the sandwich needs (``clusters``)."""
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"battles must be a pandas DataFrame, not {type(df).__name__}")
    if ties not in TIES:
        raise DataError(f"ties must be one of {', '.join(map(repr, TIES))}; got {ties!r}")
    covariates = list(covariates or [])
    cluster_by = dict(cluster_by or {})
    require_columns(df, [model_a, model_b, winner, prompt, judge, position, weight, *covariates,
                         *cluster_by.values()], "battles")
    require_nonempty(df, "battles")
    ma, mb = _labels(df, model_a, "model_a"), _labels(df, model_b, "model_b")
    _check_self_battles(ma, mb, df, model_a, model_b)
    out = _outcomes(df, winner)
    wt = _weights(df, weight)
    jd = _labels(df, judge, "judge") if judge else np.full(len(df), ALL_JUDGES, dtype=object)
    jd, n_pooled = _pool_judges(jd, wt, min_judge_battles) if judge else (jd, 0)
    units = _labels(df, prompt, "prompt", as_str=False) if prompt else np.arange(len(df))
    cov = _covariates(df, covariates)
    first = _first(df, position)
    keep = (out != 2) & (wt > 0) if ties == "drop" else wt > 0
    if ties == "drop" and not (out != 2).any():
        raise DataError("every battle is a tie; with ties='drop' nothing is left: use ties='davidson' or 'half'")
    if not keep.any():
        raise DataError(f"every battle has weight 0 (column {weight!r}); nothing is left to fit")
    n_keep = int(keep.sum())
    mcodes, models = _sorted_codes(np.concatenate([ma[keep], mb[keep]]))
    models, ref = _levels(models, anchor)
    ai, bi = mcodes[:n_keep], mcodes[n_keep:]
    ji, judges = _sorted_codes(jd[keep])
    fi = first[keep]
    known = _judge_positions(ji, fi, len(judges))
    ai, bi, oc, fi, cov = (_canonical if canonical else _as_is)(ai, bi, out[keep], fi,
                                                                None if cov is None else cov[keep])
    if not keep_first:  # no position term anywhere: the order shown does not enter the likelihood
        fi = np.zeros_like(fi)
    if cov is None:
        nj = len(judges)
        key = ((ai * len(models) + bi) * nj + ji) * 3 + (fi + 1)
        cells, cell = np.unique(key, return_inverse=True)
        pair, cj, cf = cells // 3 // nj, cells // 3 % nj, cells % 3 - 1
        ca, cb = pair // len(models), pair % len(models)
    else:
        cell = np.arange(int(keep.sum()))
        ca, cb, cj, cf = ai, bi, ji, fi
    n_cells = len(ca)
    counts = np.zeros((n_cells, 3))
    np.add.at(counts, (cell, oc), wt[keep])
    umat, n_units, ucodes = _unit_matrix(units[keep], cell, oc, n_cells, wt[keep])
    sq = np.bincount(cell * 3 + oc, wt[keep] ** 2, 3 * n_cells).reshape(n_cells, 3)
    known_codes = {"prompt": (ucodes, n_units, umat)} if prompt and cluster_by.get("prompt") == prompt else {}
    clusters, parents = _cluster_matrices(df, cluster_by, keep, cell, oc, n_cells, wt[keep], known_codes)
    return BTDesign(models=models, ref=ref, judges=judges, a=ca.astype(np.int64), b=cb.astype(np.int64),
                    judge=cj.astype(np.int64), first=np.asarray(cf, dtype=float),
                    cov=cov, cov_names=tuple(covariates),
                    counts=counts, units=umat, unit_label="prompt" if prompt else "row", n_units=n_units, ties=ties,
                    position_bias=bool(position_bias) and bool(known.any()), position_judges=known, n_pooled=n_pooled,
                    clusters=clusters, cluster_parents=parents, sq_counts=sq)


def _cluster_matrices(df: pd.DataFrame, cluster_by: dict[str, str], keep: np.ndarray, cell: np.ndarray,
                      oc: np.ndarray, n_cells: int, w: np.ndarray, known: dict) -> tuple[dict | None, tuple | None]:
    """The (clusters x 3 cells) battle matrices of each clustering dimension and, with two, of
    their intersection (with each intersection cluster's parent indices); ``known``: dimensions
    whose (codes, count, matrix) are already made (the prompts, the design's units)."""
    if not cluster_by:
        return None, None
    codes = {}
    out = {}
    for dim, column in cluster_by.items():
        if dim in known:
            codes[dim], _, out[dim] = known[dim]
            continue
        codes[dim], uniq = pd.factorize(_labels(df, column, dim, as_str=False)[keep])
        out[dim] = _coded_matrix(codes[dim], len(uniq), cell, oc, n_cells, w)
    if len(codes) < 2:
        return out, None
    (d1, c1), (d2, c2) = codes.items()
    n2 = int(c2.max()) + 1
    both, uniq = pd.factorize(c1.astype(np.int64) * n2 + c2)
    out[f"{d1}:{d2}"] = _coded_matrix(both, len(uniq), cell, oc, n_cells, w)
    uniq = np.asarray(uniq, dtype=np.int64)
    return out, (uniq // n2, uniq % n2)


def _coded_matrix(code: np.ndarray, n: int, cell: np.ndarray, oc: np.ndarray, n_cells: int, w: np.ndarray
                  ) -> sp.csr_matrix:
    m = sp.coo_matrix((w, (code, cell * 3 + oc)), shape=(n, 3 * n_cells)).tocsr()
    m.sum_duplicates()
    return m
