"""System comparison conditional on a data property (Hagmann 2023, ch. 2.3 and 4.3).

:func:`conditional_compare` adds a data property ``prop`` (categorical, binned from a number, or
continuous) and its interaction with the system to the item-level mixed model:

    full: score ~ system * prop + (1|item)

and tests the interaction with a generalized likelihood-ratio test (:func:`mixedeval.compare`,
ML refit) against a documented null model:

* ``null="interaction"`` (default; Hagmann Eq. 2.16 against 2.17): ``score ~ system + prop +
  (1|item)``; df = (systems - 1)(levels - 1), or systems - 1 for a continuous property;
* ``null="system+interaction"`` (Hagmann Eq. 4.6 against 4.7): ``score ~ prop + (1|item)``,
  testing whether the systems differ at any level of the property; df = (systems - 1) levels,
  or 2 (systems - 1) for a continuous property.

Categorical or binned properties: ``cell_means`` (EMMs of the systems per level) and
``contrasts`` (all pairwise system contrasts within each level; ``p_adj`` adjusted within each
level: emmeans' ``by`` families, Holm by default) with a column named after the property.
Continuous properties: ``slopes`` (``emmeans::emtrends``: the slope of the score in the property
per system), ``contrasts`` of the slopes, and ``plot_data`` (EMMs over a grid of property values)
for an interaction plot.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..data.table import as_pandas
from ..data.validate import require_columns, require_level
from ..errors import DataError
from ..inference._lmm import lmm
from ..inference.compare import compare
from ..results import ResultWarning
from ._common import (
    _WorkflowResult,
    check_posthoc_df,
    dedupe_warnings,
    model_formula,
    prepare_frame,
    system_levels,
)

NULLS = ("interaction", "system+interaction")


def _fmt(x: float) -> str:
    return f"{x:g}"


def bin_property(values, bins: Sequence[float], labels: Sequence[str] | None, name: str):
    """Right-closed bins from interior cut points: ``<= b0``, ``(b0, b1]``, ..., ``> b_last``.

    Returns a pandas Categorical with the labels in bin order.
    """
    edges = [float(b) for b in np.atleast_1d(np.asarray(bins, dtype=float))]
    if not edges or any(not np.isfinite(e) for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
        raise DataError(f"bins must be increasing finite cut points, e.g. [15, 55] for <=15 / 16-55 / >55; got {bins!r}")
    if labels is None:
        labels = [f"<={_fmt(edges[0])}"] + [f"({_fmt(a)}, {_fmt(b)}]" for a, b in zip(edges, edges[1:])] + [
            f">{_fmt(edges[-1])}"]
    labels = [str(x) for x in labels]
    if len(labels) != len(edges) + 1:
        raise DataError(f"{len(edges)} cut points make {len(edges) + 1} bins, but {len(labels)} labels were given")
    if len(set(labels)) != len(labels):
        raise DataError(f"bin labels must be distinct: {labels}")
    cat = pd.cut(values, bins=[-np.inf, *edges, np.inf], labels=labels, right=True)
    counts = pd.Series(cat).value_counts()
    empty = [lab for lab in labels if counts.get(lab, 0) == 0]
    if empty:
        raise DataError(f"bin(s) {empty} of {name!r} hold no rows; choose other cut points")
    return cat


def _property_kind(frame, prop: str, bins, scale: bool) -> str:
    s = frame[prop]
    numeric = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype) \
        and not isinstance(s.dtype, pd.CategoricalDtype)
    if bins is not None:
        if scale:
            raise DataError("scale=True z-scores a continuous property; it cannot be combined with bins=")
        if not numeric:
            raise DataError(f"bins need a numeric property; {prop!r} has dtype {s.dtype}")
        return "binned"
    if numeric:
        return "continuous"
    if scale:
        raise DataError(f"scale=True needs a numeric property; {prop!r} is categorical")
    return "categorical"


@dataclass(frozen=True, repr=False)
class ConditionalCompareResult(_WorkflowResult):
    """Result of :func:`conditional_compare`.

    ``glrt``: :func:`mixedeval.compare`'s table (null, full; ML). ``cell_means``: system, <prop>,
    emmean, ... (categorical/binned; None for continuous). ``slopes``: system, trend, ...
    (continuous; None otherwise). ``contrasts`` (the main table, also ``table``): contrast,
    <prop>, estimate, ..., p_value (unadjusted), p_adj, effect_size (pairwise system contrasts
    within each level; contrasts of slopes for a continuous property). ``plot_data``: the EMMs to draw an interaction plot (cell means, or a
    grid of property values per system). ``kind``: categorical / binned / continuous;
    ``scaling``: centre and scale of a z-scored property. With ``n_resamples``, ``glrt`` has
    ``p_value_pb`` (pbkrtest's parametric-bootstrap p-value from :func:`mixedeval.compare`).
    """

    glrt: Any
    cell_means: Any
    slopes: Any
    contrasts: Any
    plot_data: Any
    prop: str
    kind: str
    null: str
    levels: tuple[str, ...]
    scaling: dict[str, float] | None
    p_adjust: str
    posthoc_df: str
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    fit: Any = field(default=None, repr=False, compare=False)
    null_fit: Any = field(default=None, repr=False, compare=False)

    _main_table = "contrasts"
    _print_tables = ("glrt", "cell_means", "slopes", "contrasts")
    _skip_in_dict = ("fit", "null_fit")

    @property
    def table(self):
        """The main table: ``contrasts``."""
        return self.contrasts

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"System comparison conditional on {self.prop!r} ({self.kind}; interaction GLRT, null = {self.null})"

    def _scalars(self):
        return [("interaction GLRT p-value", f"{self.p_value:.4g}"), ("p-value adjustment", self.p_adjust),
                ("post-hoc df", self.posthoc_df)]

    @property
    def p_value(self) -> float:
        return float(self.glrt["p_value"].iloc[-1])


def conditional_analysis(frame, score: str, system: str, item: str, prop: str, *, kind: str, null: str,
                         levels: dict, posthoc_df: str, adjust: str, level: float, optimizer: str,
                         extra: Sequence[str] = (), grid_points: int = 25, effect_size: str = "total",
                         pb: Mapping[str, Any] | None = None):
    """Fits, interaction GLRT (with ``pb`` -- n_resamples, random_state, executor, progress --
    also its parametric bootstrap), EMMs/trends and contrasts; returns a dict of parts."""
    if null not in NULLS:
        raise DataError(f"null must be one of {', '.join(NULLS)}, not {null!r}")
    factors = [system, item] + ([prop] if kind != "continuous" else [])
    kw = dict(reml=True, optimizer=optimizer, factors=factors, levels=levels)
    full = lmm(model_formula(score, f"{system} * {prop}", item, extra), frame, **kw)
    null_fixed = f"{system} + {prop}" if null == "interaction" else prop
    null_fit = lmm(model_formula(score, null_fixed, item, extra), frame, **kw)
    glrt = compare(null_fit, full, names=["null", "full"], **(pb or {}))
    ws = [*full.warnings, *null_fit.warnings, *glrt.warnings]
    out: dict[str, Any] = {"full": full, "null": null_fit, "glrt": glrt.table, "cell_means": None, "slopes": None,
                           "plot_data": None, "glrt_provenance": glrt.provenance}
    if kind == "continuous":
        tr = full.emtrends(system, var=prop, df_method=posthoc_df, level=level)
        con = tr.contrasts(method="pairwise", adjust=adjust, effect_size=effect_size)
        x = frame[prop].to_numpy(dtype=float)
        grid = np.linspace(np.min(x), np.max(x), grid_points)
        pd_emm = full.emmeans(system, by=prop, df_method=posthoc_df, level=level, at={prop: grid.tolist()})
        out.update(slopes=tr.table, plot_data=pd_emm.table)
        ws += [*tr.warnings, *con.warnings, *pd_emm.warnings]
    else:
        emm = full.emmeans(system, by=prop, df_method=posthoc_df, level=level)
        con = emm.contrasts(method="pairwise", adjust=adjust, effect_size=effect_size)
        out.update(cell_means=emm.table, plot_data=emm.table)
        ws += [*emm.warnings, *con.warnings]
    out.update(contrasts=con.table, p_adjust=con.p_adjust, warnings=ws)
    return out


def _transform_property(frame, prop: str, kind: str, bins, labels, scale: bool) -> dict[str, float] | None:
    """Bin (``binned``) or z-score (``continuous`` with ``scale``) the property column of
    ``frame`` in place; returns the centre and scale of a z-scored property."""
    if kind == "binned":
        frame[prop] = bin_property(frame[prop].to_numpy(dtype=float), bins, labels, prop)
    if kind != "continuous":
        return None
    x = frame[prop].to_numpy(dtype=float)
    if np.std(x) == 0:
        raise DataError(f"property {prop!r} is constant; nothing to condition on")
    if not scale:
        frame[prop] = x
        return None
    centre, sd = float(np.mean(x)), float(np.std(x, ddof=1))
    frame[prop] = (x - centre) / sd
    return {"center": centre, "scale": sd}


def _property_levels(frame, system: str, prop: str, warnings: list[ResultWarning]) -> list[str]:
    """The levels of a categorical property (a Categorical's order, else code-point order); an
    ``empty_cells`` warning (appended to ``warnings``) names system x property cells without data."""
    s = frame[prop]
    lv = [str(c) for c in s.cat.categories] if isinstance(s.dtype, pd.CategoricalDtype) else \
        [str(u) for u in pd.factorize(s, sort=True)[1]]
    empty = frame.groupby([system, prop], observed=False).size()
    if (empty == 0).any():
        cells = [f"{a}/{b}" for (a, b), n in empty.items() if n == 0][:5]
        warnings.append(ResultWarning("empty_cells", f"system x {prop} cells without data: {', '.join(cells)}; "
                                      "their means are not estimable"))
    return lv


def conditional_compare(
    data: Any,
    score: str,
    system: str,
    item: str,
    prop: str,
    bins: Sequence[float] | None = None,
    labels: Sequence[str] | None = None,
    scale: bool = False,
    null: str = "interaction",
    *,
    reference: Any = None,
    adjust: str = "holm",
    posthoc_df: str = "asymptotic",
    level: float = 0.95,
    effect_size: str = "total",
    optimizer: str = "nloptwrap",
    n_resamples: int | None = None,
    random_state: Any = None,
    executor: Any = None,
    progress: bool = True,
) -> ConditionalCompareResult:
    """Compare systems conditional on a data property with an interaction GLRT.

    Parameters
    ----------
    data : score table (never modified).
    score, system, item : column names, as in :func:`mixedeval.compare_systems`.
    prop : the data property: a categorical column, or a numeric one (continuous, or binned
        with ``bins``).
    bins : interior cut points of right-closed bins, e.g. ``[15, 55]`` gives ``<=15``,
        ``(15, 55]`` and ``>55`` (Hagmann's short / typical / very long source sentences).
    labels : names of the bins (one more than the cut points).
    scale : z-score a continuous property (``(x - mean) / sd``, R's ``scale()``) so that the
        main effects are at its mean and the slopes per SD.
    null : ``"interaction"`` or ``"system+interaction"`` (see the module docstring).
    reference : reference level of ``system``.
    adjust : adjustment of the pairwise contrasts, applied within each level of ``prop``.
    posthoc_df : ``"asymptotic"`` (default), ``"satterthwaite"`` or ``"kenward-roger"``.
    effect_size : standardizer of the contrasts' ``effect_size`` (``"total"`` or
        ``"residual"``), as in :func:`mixedeval.compare_systems`.
    n_resamples, random_state, executor, progress : with ``n_resamples``, the interaction GLRT
        also gets ``p_value_pb``, pbkrtest's parametric-bootstrap p-value computed by
        :func:`mixedeval.compare` on the same two fits (an int ``random_state`` is R's
        ``set.seed``; ``executor`` runs the refits on workers).
    """
    posthoc_df = check_posthoc_df(posthoc_df)
    level = require_level(level)
    if null not in NULLS:
        raise DataError(f"null must be one of {', '.join(NULLS)}, not {null!r}")
    if prop in (system, item, score):
        raise DataError(f"prop {prop!r} must be a column other than score, system and item")
    df = as_pandas(data)
    df.columns = [str(c) for c in df.columns]
    require_columns(df, [prop])
    kind = _property_kind(df, prop, bins, scale)
    if labels is not None and bins is None:
        raise DataError("labels name the bins; give bins= (cut points) as well")
    cat_prop = [prop] if kind == "categorical" else []
    frame, warnings = prepare_frame(df, score, [system, item, *cat_prop],
                                    numeric=[prop] if kind in ("continuous", "binned") else [])
    scaling = _transform_property(frame, prop, kind, bins, labels, scale)
    levels = system_levels(frame, system, reference)
    prop_levels: list[str] = []
    if kind != "continuous":
        prop_levels = _property_levels(frame, system, prop, warnings)
        levels = {**levels, prop: prop_levels}
    pb = None if n_resamples is None else {"n_resamples": n_resamples, "random_state": random_state,
                                           "executor": executor, "progress": progress}
    parts = conditional_analysis(frame, score, system, item, prop, kind=kind, null=null, levels=levels,
                                 posthoc_df=posthoc_df, adjust=adjust, level=level, optimizer=optimizer,
                                 effect_size=effect_size, pb=pb)
    warnings += parts["warnings"]
    prov = dict(parts["full"].provenance)
    prov.update({"workflow": "conditional_compare", "null": null, "kind": kind, "posthoc_df": posthoc_df,
                 "effect_size": effect_size,
                 "adjust": adjust, "bins": None if bins is None else [float(b) for b in bins], "scaling": scaling})
    gp = parts["glrt_provenance"]
    prov.update({f"glrt_{k}": gp[k] for k in ("n_resamples", "random_state", "pb_function") if k in gp})
    return ConditionalCompareResult(
        glrt=parts["glrt"], cell_means=parts["cell_means"], slopes=parts["slopes"], contrasts=parts["contrasts"],
        plot_data=parts["plot_data"], prop=prop, kind=kind, null=null, levels=tuple(prop_levels), scaling=scaling,
        p_adjust=parts["p_adjust"], posthoc_df=posthoc_df, warnings=dedupe_warnings(warnings), provenance=prov,
        fit=parts["full"], null_fit=parts["null"],
    )


__all__ = ["ConditionalCompareResult", "bin_property", "conditional_compare"]
