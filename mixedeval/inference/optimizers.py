"""Refit a mixed model with several optimizers and compare the answers.

lme4's optimizers (``nloptwrap``, ``bobyqa``, ``Nelder_Mead``; Bates et al. 2015, sec. 3.4) can
stop early without a convergence warning, for instance near a boundary, which changes variance
components and with them the Satterthwaite df. Refitting the same model with the other
optimizers (what ``lme4::allFit`` does) and comparing the log-likelihood, fixed effects and
variance components shows whether the reported fit is the optimum.

Each refit is ``lmerTest::lmer`` on the same formula, data and estimator with
``lmerControl(optimizer = ...)``. Differences are taken against the fit passed in (the
reference). Agreement (``agree``) means every refit succeeded and, for each optimizer:

* ``|loglik - loglik_ref| <= loglik_tol`` (log-likelihood units);
* every fixed effect: ``|b - b_ref| <= rtol * max(|b_ref|, se_ref)``;
* every variance/covariance: ``|v - v_ref| <= rtol * max(|v_ref|, rtol * V)`` with ``V`` the
  sum of the reference variances (residual included), so components estimated as zero compare
  on an absolute scale;
* every Satterthwaite df: ``|df - df_ref| <= rtol * df_ref``.

Otherwise the result carries an ``optimizer_disagreement`` warning.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..engine import _bridge
from ..engine.conditions import r_warnings
from ..errors import DataError, RError
from ..results import ResultMixin, ResultWarning
from ._fit_common import fit_method
from ._options import OPTIMIZERS, normalize_optimizer

COLUMNS = ("optimizer", "reference", "loglik", "loglik_diff", "converged", "singular", "feval",
           "max_abs_diff_fixed", "max_abs_diff_varcomp", "max_abs_diff_df", "within_tolerance", "messages")


@dataclass(frozen=True, repr=False)
class OptimizerCheck(ResultMixin):
    """Refits of one model with several optimizers (see the module docstring).

    ``table``: optimizer, reference (the fit passed in), loglik, loglik_diff, converged,
    singular, feval (objective evaluations), max_abs_diff_fixed, max_abs_diff_varcomp,
    max_abs_diff_df (largest absolute differences from the reference), within_tolerance,
    messages (convergence messages or the R error). ``fixed``: optimizer, term, estimate,
    std_error, df, p_value. ``random``: optimizer, group, term, term2, variance, std_dev, corr.
    ``agree``: every refit within tolerance. ``best_optimizer``: highest log-likelihood.
    """

    table: Any
    fixed: Any
    random: Any
    agree: bool
    best_optimizer: str
    reference: str
    rtol: float
    loglik_tol: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    @property
    def _title(self) -> str:  # type: ignore[override]
        verdict = "agree" if self.agree else "DISAGREE"
        return f"Optimizer check (lme4 refits): optimizers {verdict} (rtol={self.rtol:g}, loglik_tol={self.loglik_tol:g})"


def _summary_frames(opt: str, v: dict[str, Any]):
    fixed = v["fixed"][["term", "estimate", "std_error", "df", "p_value"]].copy()
    fixed.insert(0, "optimizer", opt)
    random = v["random"].copy()
    random.insert(0, "optimizer", opt)
    return fixed, random


def _messages(v: dict[str, Any], res: Any) -> str:
    msgs = v["convergence"].get("messages")
    msgs = [] if msgs is None else ([msgs] if isinstance(msgs, str) else [str(m) for m in msgs])
    msgs += [str(w) for w in getattr(res, "warnings", ()) if str(w) not in msgs]
    return "; ".join(msgs)


def _max_abs(a, b) -> float:
    d = np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
    return float(np.max(d)) if d.size else 0.0


def _within(v, ref, rtol: float, loglik_tol: float) -> bool:
    fa, fr = v["fixed"], ref["fixed"]
    ra, rr = v["random"], ref["random"]
    if list(fa["term"]) != list(fr["term"]) or len(ra) != len(rr):
        return False
    b, b0, se0 = (np.asarray(x, dtype=float) for x in (fa["estimate"], fr["estimate"], fr["std_error"]))
    var, var0 = np.asarray(ra["variance"], dtype=float), np.asarray(rr["variance"], dtype=float)
    df, df0 = np.asarray(fa["df"], dtype=float), np.asarray(fr["df"], dtype=float)
    total = float(np.nansum(np.abs(var0[rr["term2"].isna().to_numpy()])))
    ok_ll = abs(float(v["loglik"]) - float(ref["loglik"])) <= loglik_tol
    ok_b = np.all(np.abs(b - b0) <= rtol * np.maximum(np.abs(b0), se0))
    ok_v = np.all(np.abs(var - var0) <= rtol * np.maximum(np.abs(var0), rtol * total))
    ok_df = np.all(np.abs(df - df0) <= rtol * np.abs(df0))
    return bool(ok_ll and ok_b and ok_v and ok_df)


def check_optimizers(
    fit: Any,
    optimizers: Sequence[str] = ("nloptwrap", "bobyqa", "Nelder_Mead"),
    rtol: float = 1e-3,
    loglik_tol: float = 1e-3,
) -> OptimizerCheck:
    """Refit ``fit`` with each optimizer and compare with ``fit`` (see the module docstring).

    Parameters
    ----------
    fit : an :class:`mixedeval.LMMFit` (its own optimizer is the reference row; it is not refitted).
    optimizers : lme4 optimizer names (``"nloptwrap"``, ``"bobyqa"``, ``"Nelder_Mead"``).
    rtol : relative tolerance for fixed effects, variance components and Satterthwaite df.
    loglik_tol : absolute tolerance for the log-likelihood.

    For a GLMM fit (:func:`mixedeval.glmm`): glmer's optimizers (the default set means bobyqa,
    Nelder_Mead and nloptwrap) and ``nAGQ = 0`` against the fit's nAGQ. Each fit class runs this
    through its own ``_check_optimizers`` method: the model family owns its R calls.
    """
    run = fit_method(fit, "_check_optimizers", "check_optimizers", "mixedeval.lmm or mixedeval.glmm")
    return run(optimizers=optimizers, rtol=rtol, loglik_tol=loglik_tol)


def lmm_check_optimizers(fit: Any, optimizers: Sequence[str] = OPTIMIZERS, rtol: float = 1e-3,
                         loglik_tol: float = 1e-3) -> OptimizerCheck:
    """What :func:`check_optimizers` runs on an :class:`mixedeval.LMMFit` (its ``_check_optimizers`` method)."""
    if not (float(rtol) >= 0 and float(loglik_tol) >= 0):
        raise DataError("rtol and loglik_tol must be non-negative numbers")
    opts = [normalize_optimizer(o) for o in ([optimizers] if isinstance(optimizers, str) else optimizers)]
    if not opts:
        raise DataError("optimizers is empty; give at least one of nloptwrap, bobyqa, Nelder_Mead")
    opts = list(dict.fromkeys([fit.optimizer, *opts]))  # the reference first, no duplicates
    ref_res = _bridge.optimizer_summary(fit)
    ref = ref_res.value
    rows, fixed, random = [], [], []
    ws: list[ResultWarning] = []
    for opt in opts:
        if opt == fit.optimizer:
            v, res = ref, ref_res
        else:
            try:
                res = _bridge.check_optimizer(fit, opt)
                v = res.value
            except RError as exc:
                rows.append({"optimizer": opt, "reference": False, "loglik": np.nan, "loglik_diff": np.nan,
                             "converged": False, "singular": None, "feval": None, "max_abs_diff_fixed": np.nan,
                             "max_abs_diff_varcomp": np.nan, "max_abs_diff_df": np.nan, "within_tolerance": False,
                             "messages": exc.r_message})
                ws.append(ResultWarning("optimizer_error", f"refit with {opt} failed: {exc.r_message}", "R"))
                continue
            ws += [ResultWarning(w.kind, f"{opt}: {w.message}", w.source) for w in r_warnings(res)]
        f, r = _summary_frames(opt, v)
        fixed.append(f)
        random.append(r)
        same_shape = list(v["fixed"]["term"]) == list(ref["fixed"]["term"]) and len(v["random"]) == len(ref["random"])
        rows.append({
            "optimizer": opt,
            "reference": opt == fit.optimizer,
            "loglik": float(v["loglik"]),
            "loglik_diff": float(v["loglik"]) - float(ref["loglik"]),
            "converged": bool(v["convergence"]["converged"]),
            "singular": bool(v["singular"]),
            "feval": v["feval"],
            "max_abs_diff_fixed": _max_abs(v["fixed"]["estimate"], ref["fixed"]["estimate"]) if same_shape else np.nan,
            "max_abs_diff_varcomp": _max_abs(v["random"]["variance"], ref["random"]["variance"]) if same_shape else np.nan,
            "max_abs_diff_df": _max_abs(v["fixed"]["df"], ref["fixed"]["df"]) if same_shape else np.nan,
            "within_tolerance": _within(v, ref, float(rtol), float(loglik_tol)),
            "messages": _messages(v, res),
        })
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    table["feval"] = pd.array([None if x is None or x != x else int(x) for x in table["feval"]], dtype="Int64")
    agree = bool(table["within_tolerance"].all())
    best = str(table.loc[table["loglik"].idxmax(), "optimizer"]) if table["loglik"].notna().any() else fit.optimizer
    if not agree:
        bad = ", ".join(table.loc[~table["within_tolerance"], "optimizer"])
        ws.append(ResultWarning(
            "optimizer_disagreement",
            f"refits with {bad} differ from the {fit.optimizer} fit beyond tolerance (rtol={rtol:g}, "
            f"loglik_tol={loglik_tol:g}); highest log-likelihood: {best}. Inspect .table/.fixed/.random and "
            f"consider refitting with optimizer={best!r}",
            "mixedeval"))
    prov = dict(fit.provenance)
    prov.update({"r_function": "lmerTest::lmer(control = lmerControl(optimizer = ...))", "optimizers": opts,
                 "rtol": float(rtol), "loglik_tol": float(loglik_tol)})
    return OptimizerCheck(table=table, fixed=pd.concat(fixed, ignore_index=True), random=pd.concat(random, ignore_index=True),
                          agree=agree, best_optimizer=best, reference=fit.optimizer, rtol=float(rtol),
                          loglik_tol=float(loglik_tol), warnings=tuple(ws), provenance=prov)
