"""Pieces shared by the workflows: the result base class, the preparation of a score table,
model formulas built from column names, the system factor's levels, and the Koo & Li bands.

Workflow modules import from here, never from each other's internals (a workflow may call
another workflow's public function, e.g. ``inferential_reproducibility`` runs
``compare_systems``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import _resources as res
from .._executor import resolve_executor
from ..data._formula import quote_name
from ..data.table import as_pandas
from ..data.validate import (
    ROWS_CHECKED,
    duplicated_rows_warning,
    require_columns,
    require_finite,
    require_levels,
    require_nonempty,
    require_supported_dtypes,
)
from ..errors import DataError
from ..inference._options import normalize_df_method
from ..results import ResultMixin, ResultWarning, jsonable

#: Koo & Li (2016) interpretation bands of reliability coefficients: (upper bound, label)
KOO_LI_BANDS: tuple[tuple[float, str], ...] = ((0.5, "poor"), (0.75, "moderate"), (0.9, "good"), (math.inf, "excellent"))


def koo_li_band(value: float) -> str:
    """Koo & Li (2016) label of a reliability coefficient: ``"poor"`` (< .5), ``"moderate"``
    (.5 to < .75), ``"good"`` (.75 to .9), ``"excellent"`` (> .9); ``"undefined"`` for NaN."""
    v = float(value)
    if not math.isfinite(v):
        return "undefined"
    if v == 0.9:
        return "good"
    for upper, label in KOO_LI_BANDS:
        if v < upper:
            return label
    return "excellent"


class _WorkflowResult(ResultMixin):
    """ResultMixin whose ``to_dict()`` leaves out the fitted models and nested results named in
    ``_skip_in_dict`` (they hold the whole data; reach them through the attributes).

    Every workflow result has its main table as ``.table`` (a field, or a property returning
    the field named in ``_main_table``) and ``.to_frame()`` (a copy of it)."""

    _skip_in_dict: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name.startswith("_") or f.name in self._skip_in_dict:
                continue
            v = getattr(self, f.name)
            out[f.name] = v.to_dict() if isinstance(v, _WorkflowResult) else jsonable(v)
        return out


def dedupe_warnings(ws: Sequence[ResultWarning]) -> tuple[ResultWarning, ...]:
    """The warnings in order, each once."""
    out: list[ResultWarning] = []
    for w in ws:
        if w not in out:
            out.append(w)
    return tuple(out)


# ----------------------------------------------------------------------------- terms and formulas
def random_terms(random: str | Sequence[str] | None, columns: Sequence[str]) -> list[str]:
    """Validate extra grouping terms (``"run"``, ``"system:run"``); return them as written."""
    if random is None:
        return []
    if isinstance(random, str):
        random = [random]
    out = []
    for term in random:
        parts = [p.strip() for p in str(term).split(":")]
        missing = [p for p in parts if p not in columns]
        if missing or not all(parts):
            raise DataError(
                f"random term {term!r} names column(s) {', '.join(map(repr, missing)) or '(empty)'} not in the data; "
                f"write grouping terms like 'run' or 'system:run' (available: {', '.join(list(columns)[:20])})"
            )
        out.append(str(term))
    return out


def term_columns(terms: Sequence[str]) -> list[str]:
    """The data columns named by ``a:b`` grouping terms, each once."""
    return list(dict.fromkeys(p.strip() for t in terms for p in t.split(":")))


def model_formula(lhs: str, fixed: str, item: str, extra: Sequence[str]) -> str:
    """``lhs ~ fixed + (1|item) + (1|extra)...`` from column names (back-quoted where needed);
    ``fixed`` is ``"1"`` or column names joined by ``" * "`` / ``" + "``; ``extra`` terms join columns by ``:``."""
    parts = re.split(r" ([*+]) ", fixed)  # column, op, column, ...
    fix = "1" if fixed == "1" else " ".join(p if i % 2 else quote_name(p) for i, p in enumerate(parts))
    rand = " + ".join("(1|" + ":".join(quote_name(p.strip()) for p in t.split(":")) + ")" for t in [item, *extra])
    return f"{quote_name(lhs)} ~ {fix} + {rand}"


def check_posthoc_df(posthoc_df: str) -> str:
    """The canonical df method name (``asymptotic``, ``satterthwaite``, ``kenward-roger``)."""
    return normalize_df_method(posthoc_df)


# ------------------------------------------------------------------------------------- the table
def prepare_frame(data: Any, score: str, factors: Sequence[str], numeric: Sequence[str] = ()):
    """A private copy with only the needed columns and every factor with two or more levels.

    The rules of :mod:`mixedeval.data.validate`: a missing or infinite score is a
    :class:`DataError`; rows with a missing factor or numeric predictor are dropped (with a
    ``missing_rows`` warning; all models use the same rows); rows repeating another row exactly
    get a ``duplicated_rows`` warning."""
    df = as_pandas(data)
    df.columns = [str(c) for c in df.columns]
    require_nonempty(df)
    cols = list(dict.fromkeys([score, *factors, *numeric]))
    require_columns(df, cols)
    require_supported_dtypes(df, cols, score=score)
    require_finite(df, score)
    frame = df[cols].copy()
    warnings: list[ResultWarning] = []
    dup = duplicated_rows_warning(df, score)
    if dup is not None:
        warnings.append(dup)
    bad = frame.isna().any(axis=1)
    if bad.any():
        which = [c for c in cols if frame[c].isna().any()]
        warnings.append(ResultWarning("missing_rows", f"{int(bad.sum())} row(s) with missing values in "
                                      f"{', '.join(which)} were dropped before fitting (all models use the same rows)"))
        frame = frame.loc[~bad].copy()
        require_nonempty(frame, "data without missing values")
    for c in numeric:
        require_finite(frame, c, role="numeric column")
    for c in factors:
        require_levels(frame, c, 2, "factor")
    frame.attrs[ROWS_CHECKED] = True  # checked on the whole table above; lmm does not repeat it
    return frame, warnings


def system_levels(frame, system: str, reference: Any) -> dict[str, list[str]]:
    """Explicit level order of the system factor with ``reference`` first (code-point order
    otherwise; a pandas Categorical keeps its order)."""
    s = frame[system]
    if isinstance(s.dtype, pd.CategoricalDtype):
        lv = [str(c) for c in s.cat.remove_unused_categories().cat.categories]
    else:
        lv = [str(u) for u in pd.factorize(s, sort=True)[1]]
    if reference is None:
        return {system: lv}
    ref = str(reference)
    if ref not in lv:
        raise DataError(f"reference {reference!r} is not a level of {system!r} ({', '.join(lv[:10])})")
    return {system: [ref] + [x for x in lv if x != ref]}


__all__: list[str] = []


# ------------------------------------------------------------------ refit loops on workers
@dataclass(frozen=True)
class ShippedModel:
    """The caller's R model, unserialized in a worker process (what the bridge's wrappers read)."""

    _model: Any = field(repr=False)


#: in a worker process: the model of the current refit loop (token -> model), received once per worker and call
_WORKER_MODELS: dict[str, ShippedModel] = {}


def worker_model(token: str, model_bytes: bytes) -> ShippedModel:
    """In a worker: the caller's fitted R model, shipped as ``base::serialize`` bytes
    (:func:`mixedeval.engine._bridge.serialize_model`) and unserialized once per worker and loop
    (``token``). The refits then start from the caller's own model, not from a refit of the data
    in another process (which can differ from it in lme4's last bits)."""
    if token not in _WORKER_MODELS:
        from ..engine import _bridge  # noqa: PLC0415 - R: the workflows that need no model do not load it

        _WORKER_MODELS.clear()
        _WORKER_MODELS[token] = ShippedModel(_bridge.unserialize_model(model_bytes))
    return _WORKER_MODELS[token]


def refit_guard(what: str, n: int, nobs: int, executor: Any) -> res.LoopGuard:
    """The loop guard of a parametric bootstrap of ``n`` refits of a model of ``nobs`` rows
    (:class:`mixedeval._resources.LoopGuard`): the simulated responses (n x nobs values, twice)
    are checked before R draws them, the time after the first chunk of refits."""
    runner = resolve_executor(executor)
    g = res.LoopGuard(what, n, count=f"n_resamples={res.format_count(n)}", unit="refits",
                  workers=runner.n_workers if runner.name != "in-process" else 1,
                  fix="Use fewer n_resamples (1,000 is plenty for 95% percentile intervals) or a smaller table, or "
                      "raise the limit.")
    g.check_memory(2.0 * 8.0 * nobs, detail=f"{res.format_count(n)} x {res.format_count(nobs)} simulated values, twice")
    return g
