"""Model grids: many formulas, data subsets and optimizer settings fitted in one call.

:func:`fit_many` fits every specification with :func:`mixedeval.lmm` (``lmerTest::lmer``) or,
when the specification names a ``family``, :func:`mixedeval.glmm` (``lme4::glmer``), in this
process or on an ``executor`` (worker processes or a Dask cluster; the data are shipped to each
worker once), and returns one tidy table with a row per fit. A fit that fails (an R error, a bad
formula, a subset without data) is reported in its row (``status="error"`` and R's or
mixedeval's message) instead of aborting the grid.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import _resources as res
from .._executor import resolve_executor
from ..data.table import as_pandas
from ..errors import DataError, MixedEvalError
from ..inference._lmm import lmm
from ..results import ResultMixin, ResultWarning

#: keys a specification may carry besides ``formula``
SPEC_KEYS = ("name", "subset", "reml", "optimizer", "df_method", "family", "link", "nagq", "factors", "reference")
#: columns of FitManyResult.table, in order
TABLE_COLUMNS = ("name", "formula", "subset", "family", "reml", "optimizer", "status", "error", "nobs", "loglik",
                 "aic", "bic", "deviance", "converged", "singular", "n_warnings", "warnings")


def _normalize_spec(spec: Any, k: int) -> dict[str, Any]:
    if isinstance(spec, str):
        spec = {"formula": spec}
    if not isinstance(spec, Mapping) or not isinstance(spec.get("formula"), str):
        raise DataError(f"specification {k} must be a formula string or a dict with a 'formula' string; got {spec!r}")
    unknown = sorted(set(spec) - {"formula", *SPEC_KEYS})
    if unknown:
        raise DataError(f"specification {k} has unknown key(s) {unknown}; allowed: formula, {', '.join(SPEC_KEYS)}")
    out = dict(spec)
    out.setdefault("name", f"fit_{k + 1}")
    subset = out.get("subset")
    if subset is not None and not isinstance(subset, Mapping):
        raise DataError(f"specification {out['name']!r}: subset must be a dict {{column: value or list of values}}")
    return out


def _subset(data: pd.DataFrame, subset: Mapping[str, Any] | None) -> pd.DataFrame:
    if not subset:
        return data
    keep = np.ones(len(data), dtype=bool)
    for col, values in subset.items():
        if col not in data.columns:
            raise DataError(f"subset column {col!r} is not in the data")
        vals = list(values) if isinstance(values, (list, tuple, set)) else [values]
        keep &= data[col].isin(vals).to_numpy()
    if not keep.any():
        raise DataError(f"subset {dict(subset)} selects no rows")
    return data.loc[keep]


def _subset_text(subset: Mapping[str, Any] | None) -> str | None:
    return None if not subset else "; ".join(f"{k} in {v!r}" for k, v in subset.items())


def _fit_spec(spec: dict[str, Any], data: pd.DataFrame) -> Any:
    frame = _subset(data, spec.get("subset"))
    common = {k: spec[k] for k in ("factors", "reference") if spec.get(k) is not None}
    if spec.get("family") not in (None, "gaussian"):
        from ..inference._glmm import glmm  # noqa: PLC0415 - cycle-free but heavy; only for GLMM grids

        extra = {k: spec[k] for k in ("link", "nagq", "optimizer") if spec.get(k) is not None}
        return glmm(spec["formula"], frame, family=spec["family"], **extra, **common)
    extra = {k: spec[k] for k in ("reml", "optimizer", "df_method") if spec.get(k) is not None}
    return lmm(spec["formula"], frame, **extra, **common)


def _fit_task(spec: dict[str, Any], keep_fit: bool, data: pd.DataFrame) -> dict[str, Any]:
    """One grid cell, run in a worker: the fit's summary row and tables, or the error."""
    row: dict[str, Any] = {"name": spec["name"], "formula": spec["formula"], "subset": _subset_text(spec.get("subset")),
                           "family": spec.get("family") or "gaussian", "reml": spec.get("reml", True),
                           "optimizer": spec.get("optimizer", "nloptwrap")}
    try:
        fit = _fit_spec(spec, data)
    except (MixedEvalError, ValueError, TypeError, KeyError) as exc:
        row.update(status="error", error=f"{type(exc).__name__}: {exc}")
        return {"row": row, "fixed": None, "random": None, "fit": None}
    ws = tuple(fit.warnings)
    row.update(status="ok", error=None, nobs=fit.nobs, loglik=fit.loglik, aic=fit.aic, bic=fit.bic,
               deviance=fit.deviance, converged=fit.converged, singular=fit.singular, n_warnings=len(ws),
               warnings="; ".join(f"[{w.kind}] {w.message}" for w in ws) or None,
               reml=getattr(fit, "reml", False), optimizer=fit.optimizer)
    kept = None
    if keep_fit:  # the R model cannot leave its process: a fit from a worker keeps its tables only
        kept = fit if _in_main() else dataclasses.replace(fit, _model=None, _cache={})
    return {"row": row, "fixed": fit.fixed, "random": fit.random, "fit": kept}


def _in_main() -> bool:
    import multiprocessing  # noqa: PLC0415 - only to tell a worker from the caller

    return multiprocessing.parent_process() is None and not _in_dask_worker()


def _in_dask_worker() -> bool:
    try:
        from distributed import get_worker  # noqa: PLC0415 - optional dependency

        get_worker()
        return True
    except (ImportError, ValueError):
        return False


#: bytes a kept fit holds per cell of the data (R's model frame, model matrices and response
#: vectors, and the pandas tables of the fit), a rough measure: R copies the columns it uses
KEPT_FIT_BYTES_PER_CELL = 4 * 8


def _guard(n_specs: int, df: pd.DataFrame, runner: Any, return_fits: bool) -> res.LoopGuard:
    """The loop guard of a grid (:class:`mixedeval._resources.LoopGuard`): with ``return_fits``, the
    kept fits (specs x data size) are checked at once; the time after the first fit."""
    g = res.LoopGuard("fit_many", n_specs, count=f"{res.format_count(n_specs)} specifications", unit="fits",
                      workers=runner.n_workers if runner.name != "in-process" else 1,
                      fix="Fit fewer specifications per call (or smaller subsets), or raise the limit.")
    if return_fits:
        cells = df.shape[0] * max(1, df.shape[1])
        g.check_memory(KEPT_FIT_BYTES_PER_CELL * cells,
                       detail=(f"return_fits=True keeps {res.format_count(n_specs)} fits of up to "
                               f"{res.format_count(df.shape[0])} rows x {df.shape[1]} columns, about "
                               f"{res.format_bytes(KEPT_FIT_BYTES_PER_CELL * cells)} each"))
    return g


@dataclass(frozen=True, repr=False)
class FitManyResult(ResultMixin):
    """Fits of a model grid (see :func:`fit_many`).

    ``table``: one row per specification (columns :data:`TABLE_COLUMNS`); ``fixed`` and
    ``random``: the fits' fixed-effect and variance-component tables stacked, with the
    specification's ``name`` first; ``fits``: the fitted models when requested (``None`` for
    failed fits), in specification order.
    """

    table: Any
    fixed: Any
    random: Any
    executor: str
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    fits: tuple[Any, ...] | None = field(default=None, repr=False)

    def _title(self) -> str:  # type: ignore[override]
        n_ok = int((self.table["status"] == "ok").sum())
        return f"Model grid: {n_ok} of {len(self.table)} fits succeeded ({self.executor})"


def _stack(parts: list[tuple[str, Any]]) -> pd.DataFrame:
    frames = [t.assign(name=name)[["name", *t.columns]] for name, t in parts if t is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame({"name": []})


def fit_many(specs: Sequence[str | Mapping[str, Any]], data: Any, *, executor: Any = None, return_fits: bool = False,
             progress: bool = True) -> FitManyResult:
    """Fit a grid of mixed models and return one tidy table.

    Parameters
    ----------
    specs : formulas, or dicts with ``formula`` and any of ``name``, ``subset`` (``{column:
        value or list}``: fit to those rows), ``reml``, ``optimizer``, ``df_method``, ``factors``,
        ``reference`` and, for a GLMM, ``family``, ``link``, ``nagq``.
    data : the score table (never modified), shipped once to each worker.
    executor : None (this process), an int or ``"processes"`` (local worker processes, each
        with its own R) or a ``dask.distributed.Client``; the table is the same with every executor.
    return_fits : also return the fitted models (``.fits``). Fits computed in another process
        keep their tables but not the R model (methods that call R need a fit made here).
    progress : a progress bar over fits.

    Each fit is the one :func:`mixedeval.lmm` / :func:`mixedeval.glmm` would return for the
    specification; failures are rows with ``status="error"`` and the message.
    """
    norm = [_normalize_spec(s, k) for k, s in enumerate(specs)]
    if not norm:
        raise DataError("fit_many needs at least one specification")
    names = [s["name"] for s in norm]
    if len(set(names)) != len(names):
        raise DataError(f"specification names must be unique; repeated: {sorted({n for n in names if names.count(n) > 1})}")
    df = data if isinstance(data, pd.DataFrame) else as_pandas(data)
    runner = resolve_executor(executor)
    g = _guard(len(norm), df, runner, bool(return_fits))
    out = g.map(runner, _fit_task, [(s, bool(return_fits)) for s in norm], first_units=1, shared=df,
                progress=progress, desc="fits")
    table = pd.DataFrame([o["row"] for o in out]).reindex(columns=list(TABLE_COLUMNS))
    failed = table.loc[table["status"] == "error", "name"].tolist()
    warnings = (ResultWarning("failed_fits", f"{len(failed)} of {len(table)} fits failed: {', '.join(failed[:10])} "
                              "(see the error column)"),) if failed else ()
    return FitManyResult(
        table=table,
        fixed=_stack([(o["row"]["name"], o["fixed"]) for o in out]),
        random=_stack([(o["row"]["name"], o["random"]) for o in out]),
        executor=runner.name, warnings=warnings,
        provenance={"function": "mixedeval.fit_many", "n_specs": len(norm), "executor": runner.name,
                    "n_workers": runner.n_workers},
        fits=tuple(o["fit"] for o in out) if return_fits else None)
