"""The score table of a judged evaluation, checked and reduced to units (system x item, epochs
averaged within the item) for :mod:`mixedeval.workflows._judges_core`.

Rules (each a :class:`~mixedeval.DataError` naming the column and the fix):

* every row has a finite ``judge_score``; ``human_score`` is a number or missing (not labelled);
* one row per (system, item, epoch, judge); rows repeating an (system, item[, judge]) without an
  ``epoch`` column are refused (name the epoch column);
* with ``judge=`` every (system, item, epoch) is scored by every judge, and a person's score of
  a row is the same on every judge's copy of it;
* ``cluster=`` is constant within an item (items nest in clusters);
* every system has at least two labelled items (the corrected mean needs its own labels).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..data._table_guard import guarded_table
from ..data.validate import require_columns, require_finite, require_nonempty, require_supported_dtypes
from ..errors import DataError
from ._judges_core import Units


@dataclass(frozen=True)
class Prepared:
    """The canonical rows (system, item, epoch, judge, cluster, judge_score, human_score), the
    units, and the names behind the codes."""

    rows: pd.DataFrame
    units: Units
    systems: list[str]
    items: list[str]
    judges: list[str]
    clusters: list[str]
    n_epochs: int


def _name(x: Any, what: str, optional: bool = False) -> str | None:
    if x is None and optional:
        return None
    if not isinstance(x, str) or not x:
        raise DataError(f"{what}= must name a column of the table, got {x!r}")
    return x


def _check_roles(names: dict[str, str | None]) -> None:
    """Each column plays one role: the judge's score passed as the people's (or any column named
    twice) would compare the judge with itself (a tiny p-value and no error otherwise)."""
    if names["judge_score"] == names["human_score"]:
        raise DataError(f"judge_score and human_score both name column {names['judge_score']!r}: human_score= must "
                        "name the people's score (NaN where nobody labelled), judge_score= the judge's")
    seen: dict[str, str] = {}
    for role, col in names.items():
        if col is None:
            continue
        if col in seen:
            raise DataError(f"column {col!r} is passed both as {seen[col]}= and as {role}=; each role needs its own "
                            "column")
        seen[col] = role


def canonical_rows(data: Any, judge_score: str, human_score: str, system: str, item: str, epoch: str | None,
                   judge: str | None, cluster: str | None) -> pd.DataFrame:
    """The table's rows with canonical column names (the caller's table is not modified)."""
    names = {"judge_score": _name(judge_score, "judge_score"), "human_score": _name(human_score, "human_score"),
             "system": _name(system, "system"), "item": _name(item, "item"),
             "epoch": _name(epoch, "epoch", True), "judge": _name(judge, "judge", True),
             "cluster": _name(cluster, "cluster", True)}
    _check_roles(names)
    df = guarded_table(data, what="data")
    df.columns = [str(c) for c in df.columns]
    require_nonempty(df)
    require_columns(df, list(names.values()))
    require_supported_dtypes(df, list(names.values()), score=judge_score)
    require_finite(df, judge_score, role="judge score column")
    require_finite(df, human_score, allow_nan=True, role="human score column")
    for role in ("system", "item", "epoch", "judge", "cluster"):
        c = names[role]
        if c is not None and df[c].isna().any():
            raise DataError(f"column {c!r} ({role}) has {int(df[c].isna().sum())} missing values; fill or drop "
                            f"those rows (df.dropna(subset=[{c!r}]))")
    hum = pd.to_numeric(df[human_score], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if np.isinf(hum).any():
        raise DataError(f"human score column {human_score!r} has infinite values; leave unlabelled rows missing (NaN)")
    out = pd.DataFrame({
        "system": df[system].astype(str).to_numpy(), "item": df[item].astype(str).to_numpy(),
        "epoch": df[epoch].astype(str).to_numpy() if epoch else "1",
        "judge": df[judge].astype(str).to_numpy() if judge else "judge",
        "cluster": df[cluster].astype(str).to_numpy() if cluster else df[item].astype(str).to_numpy(),
        "judge_score": df[judge_score].to_numpy(dtype=float), "human_score": hum})
    _check_keys(out, epoch, judge, cluster)
    return out


def _check_keys(rows: pd.DataFrame, epoch: str | None, judge: str | None, cluster: str | None) -> None:
    dup = rows.duplicated(["system", "item", "epoch", "judge"], keep=False)
    if dup.any():
        r = rows.loc[dup].iloc[0]
        keys = "system, item" + (", epoch" if epoch else "") + (", judge" if judge else "")
        fix = ("several rows per item are epochs: name their column with epoch=" if not epoch else
               "one row per (system, item, epoch, judge) is expected: drop the copies")
        raise DataError(f"{int(rows.duplicated(['system', 'item', 'epoch', 'judge']).sum())} rows repeat a ({keys}),"
                        f" e.g. system {r['system']!r}, item {r['item']!r}; {fix}")
    if cluster:
        per_item = rows.groupby("item")["cluster"].nunique()
        if (per_item > 1).any():
            bad = per_item.index[per_item > 1][:3].tolist()
            raise DataError(f"cluster column {cluster!r} varies within an item (items {bad}); items must nest in "
                            "clusters: one cluster per item")


def _wide(rows: pd.DataFrame, judges: list[str]) -> pd.DataFrame:
    """One row per (system, item, epoch): a column per judge, the person's score and cluster."""
    key = ["system", "item", "epoch"]
    w = rows.pivot_table(index=key, columns="judge", values="judge_score", aggfunc="first", observed=True,
                         dropna=False)
    w = w.reindex(columns=judges)
    w = w.loc[w.notna().any(axis=1)]
    if w.isna().any().any():
        miss = w.index[w.isna().any(axis=1)][0]
        raise DataError(f"{int(w.isna().any(axis=1).sum())} (system, item, epoch) rows lack some judge's score, "
                        f"e.g. {dict(zip(key, miss))}; every judge must score every row (drop the judge or the rows)")
    hum = rows.groupby(key, observed=True)["human_score"].agg(["min", "max"])
    conflict = hum["min"].notna() & (hum["min"] != hum["max"])
    if conflict.any():
        raise DataError(f"the human score differs between judges' copies of {int(conflict.sum())} rows, e.g. "
                        f"{dict(zip(key, hum.index[conflict][0]))}; a person's label belongs to the answer, not to a "
                        "judge: give it once per (system, item, epoch)")
    out = w.reset_index()
    out["human_score"] = hum["max"].reindex(w.index).to_numpy()
    out["cluster"] = rows.groupby(key, observed=True)["cluster"].first().reindex(w.index).to_numpy()
    return out


def build_units(rows: pd.DataFrame) -> Prepared:
    """The units (system x item, epochs averaged) of the canonical rows."""
    judges = list(dict.fromkeys(rows["judge"]))
    w = _wide(rows, judges)
    systems = sorted(w["system"].unique())
    items = sorted(w["item"].unique())
    clusters = sorted(w["cluster"].unique())
    key = ["system", "item"]
    J = w[judges].to_numpy(dtype=float)
    lab_row = w["human_score"].notna().to_numpy()
    g_unit = w.groupby(key, sort=True)
    f = g_unit[judges].mean()
    unit_index = pd.MultiIndex.from_frame(f.index.to_frame(index=False))
    lw = w.loc[lab_row]
    y = lw.groupby(key)["human_score"].mean().reindex(unit_index)
    g = lw.groupby(key)[judges].mean().reindex(unit_index)
    cl = g_unit["cluster"].first()
    sys_code = pd.Categorical(f.index.get_level_values(0), categories=systems).codes
    item_code = pd.Categorical(f.index.get_level_values(1), categories=items).codes
    cl_code = pd.Categorical(cl.to_numpy(), categories=clusters).codes
    pos = pd.Series(np.arange(len(f)), index=unit_index)
    rows_unit = pos.reindex(pd.MultiIndex.from_frame(lw[key])).to_numpy()
    units = Units(system=np.asarray(sys_code, dtype=int), item=np.asarray(item_code, dtype=int),
                  cluster=np.asarray(cl_code, dtype=int), f=f.to_numpy(dtype=float),
                  labelled=y.notna().to_numpy(), y=y.to_numpy(dtype=float), g=g.to_numpy(dtype=float),
                  rows_unit=np.asarray(rows_unit, dtype=int), rows_y=lw["human_score"].to_numpy(dtype=float),
                  rows_j=J[lab_row], n_clusters=len(clusters))
    n_epochs = int(w.groupby(key).size().max())
    return Prepared(rows, units, systems, items, judges, clusters, n_epochs)


def _check_constant_labels(p: Prepared) -> None:
    """A system whose labelled answers all carry the same human score has a corrected mean with
    standard error 0 (nothing varies): a DataError naming the systems and the value."""
    u = p.units
    y = np.asarray(u.y, dtype=float)
    same = []
    for s, name in enumerate(p.systems):
        v = y[(u.system == s) & u.labelled]
        v = v[np.isfinite(v)]
        if v.size >= 2 and np.all(v == v[0]):
            same.append((name, float(v[0])))
    if same:
        raise DataError(f"human_score is the same on every labelled item of system(s) {[n for n, _ in same][:5]} "
                        f"(e.g. {same[0][1]:g}): the corrected mean then has standard error 0 and no interval; check "
                        "the human_score column (the people's score, NaN where unlabelled) or label more items of "
                        "those systems")


def check_labels(p: Prepared, method: str) -> None:
    """Every system has two or more labelled items (and, for Rogan-Gladen, 0/1 scores with
    labelled positives and negatives)."""
    u = p.units
    n_lab = np.bincount(u.system[u.labelled], minlength=len(p.systems))
    few = [s for s, n in zip(p.systems, n_lab) if n < 2]
    if few:
        raise DataError(f"system(s) {few} have fewer than two items with a human_score; a corrected mean needs "
                        "people's labels on each system's own answers: label a random sample of every system's items")
    _check_constant_labels(p)
    if method == "rogan-gladen":
        if len(p.judges) > 1:
            raise DataError("method='rogan-gladen' corrects one 0/1 judge; pass one judge's rows or use 'ppi++'")
        for what, v in (("judge_score", p.rows["judge_score"].to_numpy()),
                        ("human_score", p.rows["human_score"].dropna().to_numpy())):
            if not np.isin(v, (0.0, 1.0)).all():
                raise DataError(f"method='rogan-gladen' needs 0/1 scores; {what} has other values "
                                f"({np.unique(v[~np.isin(v, (0.0, 1.0))])[:3]}); use method='ppi++'")
        for s in range(len(p.systems)):
            ys = u.rows_y[u.system[u.rows_unit] == s]
            if not ((ys == 1).any() and (ys == 0).any()):
                raise DataError(f"system {p.systems[s]!r} has no labelled {'positive' if not (ys == 1).any() else 'negative'}"
                                " answers: Rogan-Gladen needs the judge's sensitivity and specificity on each system; "
                                "label more items or use method='ppi++'")
