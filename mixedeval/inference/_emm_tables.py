"""The estimated-marginal-means tables every model family builds alike: argument checks
(``specs``, ``by``, ``at``, contrast references), emmeans' adjustment names and annotations, the
z-statistic contrast table of asymptotic-df models, and the contrast result class.

:mod:`.emmeans` (linear mixed models, and the public :func:`mixedeval.emmeans`), :mod:`._glmm_infer`
(GLMMs) and :mod:`._clmm` (ordinal models) build their tables with these. This module imports no
model family, so the families and the public functions import it without an import cycle.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.validate import require_level
from ..errors import DataError
from ..results import ResultMixin, ResultWarning

#: contrast methods passed to emmeans by name (custom weights are given as a dict)
METHODS = ("pairwise", "revpairwise", "trt.vs.ctrl", "consec", "poly", "eff", "del.eff")
#: adjustment names accepted (lower-case key -> emmeans' name)
ADJUST = {
    "holm": "holm", "tukey": "tukey", "bonferroni": "bonferroni", "sidak": "sidak", "fdr": "fdr", "bh": "BH",
    "by": "BY", "hochberg": "hochberg", "hommel": "hommel", "mvt": "mvt", "scheffe": "scheffe",
    "dunnettx": "dunnettx", "none": "none",
}


def _names(x: str | Sequence[str] | None, what: str, example: str = "'system' or ['system', 'seed']") -> tuple[str, ...]:
    if x is None:
        return ()
    if isinstance(x, str):
        x = [x]
    out = tuple(str(v) for v in x)
    for v in out:
        if "~" in v or "|" in v:
            raise DataError(f"{what} takes variable names (e.g. {example}), not formulas: {v!r}")
    return out


def _check_vars(fit: Any, names: Sequence[str], what: str) -> None:
    cols = [str(c) for c in fit.data.columns]
    missing = [v for v in names if v not in cols]
    if missing:
        raise DataError(
            f"{what} {', '.join(repr(v) for v in missing)} not among the model's variables ({', '.join(cols)}); "
            "use the column names of the formula"
        )


def _at_arg(fit: Any, at: Mapping[str, Any] | None,
            example: str = ", e.g. {'src_length': [10, 30]}") -> dict[str, Any] | None:
    if at is None:
        return None
    if not isinstance(at, Mapping):
        raise DataError("at must be a dict {variable: value or list of values}" + example)
    _check_vars(fit, list(at), "at variable(s)")
    out: dict[str, Any] = {}
    for k, v in at.items():
        vals = list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v]
        if not vals:
            raise DataError(f"at[{k!r}] is empty; give at least one value")
        out[str(k)] = [str(x) for x in vals] if any(isinstance(x, str) for x in vals) else [float(x) for x in vals]
    return out


def emm_arguments(fit: Any, specs: Any, by: Any, level: float, var: str | None = None
                  ) -> tuple[tuple[str, ...], tuple[str, ...], float]:
    """The checked arguments every family's emmeans/emtrends takes: ``specs`` (at least one
    variable) and ``by`` as names of the model's variables, ``level`` in (0, 1) and, for
    emtrends, ``var`` a numeric covariate of the model. Returns (specs, by, level)."""
    specs_t = _names(specs, "specs")
    if not specs_t:
        raise DataError("specs must name at least one variable, e.g. 'system'")
    by_t = _names(by, "by")
    _check_vars(fit, specs_t + by_t, "specs/by variable(s)")
    level = require_level(level)
    if var is not None:
        _check_vars(fit, [var], "var")
        s = fit.data[var]
        if not _is_numeric(s):
            raise DataError(f"var {var!r} must be a numeric covariate of the model (emtrends differentiates by it)")
    return specs_t, by_t, level


def _is_numeric(s: Any) -> bool:
    import pandas as pd  # noqa: PLC0415 - pandas only where a model's data are checked

    return bool(pd.api.types.is_numeric_dtype(s.dtype) and not isinstance(s.dtype, pd.CategoricalDtype))


def _str_tuple(x: Any) -> tuple[str, ...]:
    if x is None:
        return ()
    return (x,) if isinstance(x, str) else tuple(str(s) for s in x)


@dataclass(frozen=True, repr=False, kw_only=True)
class _EmmeansOutput(ResultMixin):
    """Fields shared by means and contrasts: the tidy table, df method, confidence level,
    emmeans' annotations, warnings, provenance and the R emmGrid handle."""

    table: Any
    df_method: str
    level: float
    notes: tuple[str, ...]
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    _grid: Any = field(default=None, repr=False, compare=False)
    _fit: Any = field(default=None, repr=False, compare=False)

    _main_table = "table"


@dataclass(frozen=True, repr=False, kw_only=True)
class ContrastResult(_EmmeansOutput):
    """Contrasts of estimated marginal means (``emmeans::contrast`` + ``summary``).

    ``table``: contrast, <by columns>, estimate, std_error, df, t_value (``z_value`` for
    asymptotic df), p_value (unadjusted), p_adj (adjusted by ``p_adjust``), conf_low, conf_high
    (adjusted by ``ci_adjust``), effect_size, effect_size_conf_low, effect_size_conf_high,
    effect_size_sd (the standardizer, see :mod:`mixedeval.inference.emmeans`). ``adjust`` is the adjustment
    asked for; ``p_adjust`` and ``ci_adjust`` are the ones emmeans applied to ``p_adj`` and to
    the intervals (``"none"`` when unadjusted). ``effect_size`` is the standardizer:
    ``"total"`` (all variance components) or ``"residual"`` (emmeans' ``eff_size``).
    ``notes`` are emmeans' annotations (df method, family sizes).
    """

    method: str
    adjust: str
    p_adjust: str
    ci_adjust: str
    effect_size: str
    by: tuple[str, ...]
    weights: dict[str, list[float]] | None

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"Contrasts ({self.method}) of estimated marginal means (emmeans)"

    def _scalars(self):
        return [("p-value adjustment (p_adj)", self.p_adjust), ("interval adjustment", self.ci_adjust),
                ("effect size standardizer", self.effect_size), ("confidence level", self.level),
                ("df method", self.df_method)]


def _adjust_name(adjust: str) -> str:
    key = str(adjust).lower()
    if key not in ADJUST:
        raise DataError(f"adjust {adjust!r} is not one of {', '.join(sorted(set(ADJUST.values())))}")
    return ADJUST[key]


def _applied(notes: Sequence[str], prefix: str) -> str:
    for n in notes:
        m = re.match(prefix + r"\s*(\S+) method", n)
        if m:
            return m.group(1)
    return "none"


def _applied_adjustments(v: Mapping[str, Any]) -> tuple[tuple[str, ...], str, str]:
    """emmeans' annotations of a contrast summary and the p-value and interval adjustments they report."""
    notes = _str_tuple(v.get("mesg"))
    return notes, _applied(notes, "P value adjustment:"), _applied(notes, "Conf-level adjustment:")


def _z_contrast_table(v: Mapping[str, Any]) -> Any:
    """The bridge's contrast summary with asymptotic df (GLMM, clmm): contrast, <by columns>, estimate,
    std_error, df, z_value, p_value (unadjusted), p_adj, conf_low, conf_high."""
    labels = ["contrast"] + list(_str_tuple(v["by_vars"]))
    t = v["table"].rename(columns={str(v["est_name"]): "estimate", "p_value": "p_adj"})
    t["p_value"] = v["p_raw"]
    return t[labels + ["estimate", "std_error", "df", "z_value", "p_value", "p_adj", "conf_low", "conf_high"]]


def _ref_arg(ref: Any, method: str) -> list[Any] | None:
    """``ref`` for ``emmeans::contrast``: level labels as given, 0-based positions made 1-based."""
    if ref is None:
        return None
    if method != "trt.vs.ctrl":
        raise DataError("ref is only used with method='trt.vs.ctrl'")
    refs = list(ref) if isinstance(ref, (list, tuple)) else [ref]
    if all(isinstance(r, (int, np.integer)) and not isinstance(r, bool) for r in refs):
        return [int(r) + 1 for r in refs]
    if all(isinstance(r, str) for r in refs):
        return refs
    raise DataError("ref must be level label(s) or 0-based position(s), not a mix")


def _adjust_warnings(adjust: str, p_adj: str, ci_adj: str, have: list[ResultWarning]) -> list[ResultWarning]:
    same = lambda a, b: {"fdr": "bh"}.get(a.lower(), a.lower()) == {"fdr": "bh"}.get(b.lower(), b.lower())  # noqa: E731
    out: list[ResultWarning] = []
    if not same(p_adj, adjust) and not any(w.kind == "adjust_changed" for w in have):
        out.append(ResultWarning("adjust_changed", f"adjust = {adjust!r} was changed to {p_adj!r} by emmeans", "emmeans"))
    if p_adj != "none" and not same(ci_adj, p_adj):
        out.append(ResultWarning(
            "ci_adjust", f"emmeans has no {p_adj} confidence intervals: conf_low/conf_high use the {ci_adj} "
            f"adjustment, p_adj the {p_adj} adjustment (p_value is unadjusted)", "emmeans"))
    return out


def require_no_type(type_: str | None) -> None:
    """``type=`` (the response or link scale) exists for GLMM means only."""
    if type_ is not None:
        raise DataError("type= (the response or link scale) applies to GLMM fits (mixedeval.glmm) only")


def contrast_weights(name: Any, w: Any) -> list[float]:
    """The weights of custom contrast ``name`` as floats; a DataError naming the contrast and the
    (0-based) position of a weight that is not a finite number (None, NaN, a string, a bool)."""
    items = [w] if isinstance(w, (str, bytes, Mapping)) or np.ndim(w) == 0 else list(w)
    out = []
    for i, x in enumerate(items):
        ok = isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))
        if not ok or not np.isfinite(float(x)):
            raise DataError(f"custom contrast {name!r}: weight {i} (0-based) is {x!r}; weights must be finite numbers, "
                            "one per level in the order of the means table, e.g. {'B - A': [-1, 1, 0]}")
        out.append(float(x))
    return out
