"""Rows of the classical-checks table shared by the LMM and GLMM diagnostics."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._format import fmt_p
from ._normality import normality_test

_NAN = float("nan")


def row(check: str, verdict: str, reason: str, statistic: float = _NAN, p_value: float = _NAN, method: str = "") -> dict[str, Any]:
    return {"check": check, "statistic": statistic, "p_value": p_value, "verdict": verdict, "reason": reason, "method": method}


def normality_row(check: str, values: np.ndarray, what: str, alpha: float) -> dict[str, Any]:
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size < 3:
        return row(check, "not_applicable", f"{what}: fewer than 3 values, no normality test")
    if np.ptp(values) <= 1e-12 * max(1.0, float(np.max(np.abs(values)))):
        return row(check, "not_applicable", f"{what}: all values equal (zero variance component), no normality test")
    res = normality_test(values)
    stat_name = "W" if res.method.startswith("Shapiro") else "K^2"
    text = f"{stat_name}={res.statistic:.4g}, p={fmt_p(res.p_value)}, n={res.n}"
    if res.p_value < alpha:
        reason = f"{what} deviate from normality ({text}); check the QQ plot -- with large n small deviations are flagged"
        verdict = "warning"
    else:
        reason = f"{what} consistent with normality ({text})"
        verdict = "ok"
    return row(check, verdict, reason, res.statistic, res.p_value, res.method)


def model_warnings_rows(other: Sequence[Any]) -> list[dict[str, Any]]:
    """The ``model_warnings`` row (the first other fitting warning, and how many more) or none."""
    if not other:
        return []
    more = f" (+{len(other) - 1} more)" if len(other) > 1 else ""
    return [row("model_warnings", "warning", f"{other[0]}{more}")]


def with_fit_provenance(diag_provenance: Mapping[str, Any], fit: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
    """The simulation's provenance updated with ``extra``, then the fit's own keys it does not have."""
    provenance = dict(diag_provenance)
    provenance.update(extra)
    provenance.update({k: v for k, v in (getattr(fit, "provenance", None) or {}).items() if k not in provenance})
    return provenance


def optimizer_row(fit: Any) -> dict[str, Any]:
    """One checks row from ``fit.check_optimizers()``."""
    try:
        oc = fit.check_optimizers()
    except Exception as exc:  # noqa: BLE001 - a failed refit is itself a finding
        return row("optimizers", "warning", f"optimizer comparison failed: {exc}")
    t = oc.table
    diff = float(np.nanmax(np.abs(t["loglik_diff"].to_numpy(dtype=float)))) if len(t) else _NAN
    names = ", ".join(str(o) for o in t["optimizer"])
    if oc.agree:
        return row("optimizers", "ok", f"{names} agree (max |logLik difference| {diff:.3g})", statistic=diff,
                   method="lme4 refits with each optimizer")
    return row("optimizers", "warning", f"optimizers disagree (max |logLik difference| {diff:.3g}; best: "
               f"{oc.best_optimizer}); estimates may depend on an early stop", statistic=diff,
                method="lme4 refits with each optimizer")
