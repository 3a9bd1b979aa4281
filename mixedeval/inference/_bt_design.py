"""The battle table of a Bradley-Terry analysis, checked and aggregated once.

A battle is one judgment: ``model_a`` against ``model_b`` with a ``winner`` in {"model_a",
"model_b", "tie", "tie (bothbad)"} (Chatbot Arena's values; a tie of two bad answers is a tie).
Which answer the judge saw first is ``first`` = +1 (model_a first: the Arena's left answer, the
default without a ``position`` column), -1 (model_b first: ``position == "b_first"``, as
:func:`mixedeval.read_battles` records swapped games) or 0 (unknown: the battle carries no
position effect). The table is aggregated into *cells* -- one per (model_a, model_b, judge,
first) with the counts of a-wins, b-wins and ties -- and, for the resampling, into the same
counts per *unit* (prompt, or row when no prompt column is given) as a sparse (units x 3 cells)
matrix: a bootstrap replicate's counts are a weighted sum of the units' rows, one matrix product
for a whole block of replicates. With ``covariates`` (per-battle differences such as the answer
length of a minus that of b) every battle is its own cell.

Parameters (the order of every parameter vector of :mod:`._bt_numpy` and of the R design):
the strengths of all models but the reference (log-odds scale, reference = 0), then one
position effect per judge (the log-odds that the answer shown first wins, beyond the
strengths; with ``position_bias``; its design column is ``first``), then the covariates'
coefficients, then (Davidson ties only) one tie propensity ``log(nu)`` per judge.
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

    @property
    def k(self) -> int:
        return len(self.models)

    @property
    def free(self) -> np.ndarray:
        """The models whose strength is a parameter (all but the reference)."""
        return np.array([i for i in range(self.k) if i != self.ref], dtype=np.int64)

    @property
    def n_position(self) -> int:
        return len(self.judges) if self.position_bias else 0

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
        if self.position_bias:
            cols.append(np.eye(len(self.judges))[self.judge] * self.first[:, None])
        if self.cov is not None:
            cols.append(self.cov)
        return np.hstack(cols) if cols else np.zeros((len(self.a), 0))

    def tau_columns(self) -> np.ndarray:
        """Judge indicators of the tie propensities (Davidson), (cells, n_tau)."""
        if self.ties != "davidson":
            return np.zeros((len(self.a), 0))
        return np.eye(len(self.judges))[self.judge]

    def param_names(self) -> list[tuple[str, str]]:
        """(kind, name) per parameter: ("strength", model), ("position", judge), ("covariate",
        column), ("tie", judge)."""
        out = [("strength", self.models[i]) for i in self.free]
        out += [("position", j) for j in self.judges] if self.position_bias else []
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
    return s.astype(str).to_numpy() if as_str else s.to_numpy()


def _outcomes(df: pd.DataFrame, winner: str) -> np.ndarray:
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


def _levels(ma: np.ndarray, mb: np.ndarray, anchor: str | None) -> tuple[tuple[str, ...], int]:
    models = tuple(sorted(set(ma) | set(mb)))
    if len(models) < 2:
        raise DataError(f"the battles involve {len(models)} model(s); a Bradley-Terry model needs at least two")
    if anchor is None:
        return models, 0
    if str(anchor) not in models:
        raise DataError(f"anchor {anchor!r} is not a model of the battles; choose one of {list(models)[:10]}")
    return models, models.index(str(anchor))


def _unit_matrix(unit: np.ndarray, cell: np.ndarray, outcome: np.ndarray, n_cells: int) -> tuple[sp.csr_matrix, int]:
    u, uniq = pd.factorize(unit)  # hashing: np.unique's sort of a million labels takes seconds
    m = sp.coo_matrix((np.ones(len(u)), (u, cell * 3 + outcome)), shape=(len(uniq), 3 * n_cells)).tocsr()
    m.sum_duplicates()
    return m, len(uniq)


def build_design(df: Any, model_a: str, model_b: str, winner: str, *, prompt: str | None, judge: str | None,
                 ties: str, position_bias: bool, covariates: Sequence[str] | None, anchor: str | None,
                 position: str | None = None) -> BTDesign:
    """Check the battle table and aggregate it (see the module docstring)."""
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"battles must be a pandas DataFrame, not {type(df).__name__}")
    if ties not in TIES:
        raise DataError(f"ties must be one of {', '.join(map(repr, TIES))}; got {ties!r}")
    covariates = list(covariates or [])
    require_columns(df, [model_a, model_b, winner, prompt, judge, position, *covariates], "battles")
    require_nonempty(df, "battles")
    ma, mb = _labels(df, model_a, "model_a"), _labels(df, model_b, "model_b")
    _check_self_battles(ma, mb, df, model_a, model_b)
    out = _outcomes(df, winner)
    jd = _labels(df, judge, "judge") if judge else np.full(len(df), ALL_JUDGES, dtype=object)
    units = _labels(df, prompt, "prompt", as_str=False) if prompt else np.arange(len(df))
    cov = _covariates(df, covariates)
    first = _first(df, position)
    keep = out != 2 if ties == "drop" else np.ones(len(df), dtype=bool)
    if not keep.any():
        raise DataError("every battle is a tie; with ties='drop' nothing is left: use ties='davidson' or 'half'")
    models, ref = _levels(ma[keep], mb[keep], anchor)
    judges = tuple(sorted(set(jd[keep])))
    ai = pd.Categorical(ma[keep], categories=list(models)).codes.astype(np.int64)
    bi = pd.Categorical(mb[keep], categories=list(models)).codes.astype(np.int64)
    ji = pd.Categorical(jd[keep], categories=list(judges)).codes.astype(np.int64)
    fi = first[keep]
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
    np.add.at(counts, (cell, out[keep]), 1.0)
    umat, n_units = _unit_matrix(units[keep], cell, out[keep], n_cells)
    return BTDesign(models=models, ref=ref, judges=judges, a=ca.astype(np.int64), b=cb.astype(np.int64),
                    judge=cj.astype(np.int64), first=np.asarray(cf, dtype=float),
                    cov=None if cov is None else cov[keep], cov_names=tuple(covariates),
                    counts=counts, units=umat, unit_label="prompt" if prompt else "row", n_units=n_units, ties=ties,
                    position_bias=bool(position_bias))
