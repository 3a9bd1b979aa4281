"""Meta-parameter importance and assessment (Hagmann 2023, ch. 3.4.4).

:func:`meta_parameter_importance` decomposes the score variance over a meta-parameter grid with a
random-effects-only model (Eq. 3.13): one random intercept for the test items and one per
meta-parameter (plus optional nested terms such as ``"learning_rate/src_length_class"``,
Eq. 3.15), fitted by REML through :func:`mixedeval.variance_components`. The item share is the
algorithm's performance reliability phi (Def. 3.5); each meta-parameter's share says how much of
the variation it causes.

:func:`assess_meta_parameter` turns one meta-parameter into a fixed effect (Eq. 3.16): GLRT of
``score ~ param + (1|item)`` against ``score ~ 1 + (1|item)``, or, with a data property, of
``score ~ param * prop + (1|item)`` against ``score ~ param + prop + (1|item)``; EMMs per level
(per property level) and Holm-adjusted pairwise contrasts, through the same code as
:func:`mixedeval.compare_systems` and :func:`mixedeval.conditional_compare`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..data.table import as_pandas
from ..data.validate import require_columns, require_level, require_supported_dtypes
from ..errors import DataError
from ..results import ResultWarning
from ._common import _WorkflowResult, koo_li_band
from .compare_systems import compare_systems
from .conditional_compare import conditional_compare
from .variance_components import VCAResult, variance_components


@dataclass(frozen=True, repr=False)
class MetaParameterImportance(_WorkflowResult):
    """Variance shares of the items and of each meta-parameter.

    ``table`` (the main table): component, role, variance, std_dev, percent (all components,
    as :class:`VCAResult`). ``importance``: meta_parameter, variance, percent (of the total
    variance), percent_of_meta (share of the variance the meta-parameters cause together),
    rank. ``phi`` is the item share (performance reliability) and ``band`` its Koo & Li label.
    ``vca``: the :class:`VCAResult` (``imp.vca.bootstrap(...)``: parametric-bootstrap intervals of
    the components and of phi).
    """

    table: Any
    importance: Any
    phi: float
    band: str
    singular: bool
    zero_components: tuple[str, ...]
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    vca: VCAResult = field(default=None, repr=False, compare=False)

    _main_table = "table"
    _print_tables = ("table", "importance")
    _skip_in_dict = ("vca",)

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"Meta-parameter importance (variance components, REML): phi = {self.phi:.4g} ({self.band})"


def meta_parameter_importance(
    data: Any,
    score: str,
    item: str,
    meta_params: Sequence[str],
    nested: str | Sequence[str] | None = None,
    *,
    reml: bool = True,
    optimizer: str = "nloptwrap",
    calc_derivs: bool = True,
) -> MetaParameterImportance:
    """Variance components over a meta-parameter grid and each meta-parameter's share.

    ``meta_params`` become random intercepts (they must be crossed with ``item``: every
    instance is evaluated on the same items). ``nested`` adds ``a/b`` terms (a meta-parameter
    within a data property, e.g. ``"learning_rate/src_length_class"``). For large grids,
    ``calc_derivs=False`` saves lme4's post-fit derivative check (see
    ``benchmarks/bench_vca_grid.py``).
    """
    if isinstance(meta_params, str):
        meta_params = [meta_params]
    meta_params = list(meta_params)
    if not meta_params:
        raise DataError("meta_params must name at least one meta-parameter column, e.g. ['learning_rate', 'seed']")
    vca = variance_components(data, score, item, meta_params, nested=nested, reml=reml, optimizer=optimizer,
                              calc_derivs=calc_derivs)
    tab = vca.table
    meta = tab[~tab["role"].isin(["object", "residual"])].copy()
    total_meta = meta["variance"].sum()
    imp = pd.DataFrame({
        "meta_parameter": meta["component"].to_numpy(),
        "variance": meta["variance"].to_numpy(),
        "percent": meta["percent"].to_numpy(),
        "percent_of_meta": (100.0 * meta["variance"] / total_meta).to_numpy() if total_meta > 0 else 0.0,
    })
    imp["rank"] = imp["variance"].rank(ascending=False, method="min").astype(int)
    imp = imp.sort_values(["rank", "meta_parameter"], kind="mergesort").reset_index(drop=True)
    phi = vca.phi()
    prov = dict(vca.provenance)
    prov["workflow"] = "meta_parameter_importance"
    return MetaParameterImportance(table=tab, importance=imp, phi=phi, band=koo_li_band(phi), singular=vca.singular,
                                   zero_components=vca.zero_components, warnings=vca.warnings, provenance=prov, vca=vca)


@dataclass(frozen=True, repr=False)
class MetaParameterAssessment(_WorkflowResult):
    """Result of :func:`assess_meta_parameter`.

    ``glrt``: :func:`mixedeval.compare`'s table (main effect of the meta-parameter, or its
    interaction with ``prop``). ``emmeans``: EMMs per level (per property level). ``contrasts``
    (the main table, also ``table``): pairwise contrasts of the levels (within each property
    level), ``p_value`` unadjusted and ``p_adj`` (Holm by default). With ``n_resamples``,
    ``glrt`` has ``p_value_pb`` (pbkrtest's parametric-bootstrap p-value, :func:`mixedeval.compare`).
    ``fit`` and ``null_fit``: the two REML fits of the GLRT (``me.compare(a.null_fit, a.fit)``).
    """

    glrt: Any
    emmeans: Any
    contrasts: Any
    param: str
    prop: str | None
    p_adjust: str
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    fit: Any = field(default=None, repr=False, compare=False)
    null_fit: Any = field(default=None, repr=False, compare=False)

    _main_table = "contrasts"
    _print_tables = ("glrt", "emmeans", "contrasts")
    _skip_in_dict = ("fit", "null_fit")

    @property
    def table(self):
        """The main table: ``contrasts``."""
        return self.contrasts

    @property
    def _title(self) -> str:  # type: ignore[override]
        what = f"{self.param} x {self.prop} interaction" if self.prop else f"{self.param} main effect"
        return f"Meta-parameter assessment: GLRT of the {what}, EMMs and pairwise contrasts"

    def _scalars(self):
        return [("GLRT p-value", f"{self.p_value:.4g}"), ("p-value adjustment", self.p_adjust)]

    @property
    def p_value(self) -> float:
        return float(self.glrt["p_value"].iloc[-1])


def assess_meta_parameter(
    data: Any,
    score: str,
    item: str,
    param: str,
    prop: str | None = None,
    *,
    bins: Sequence[float] | None = None,
    labels: Sequence[str] | None = None,
    adjust: str = "holm",
    posthoc_df: str = "asymptotic",
    level: float = 0.95,
    effect_size: str = "total",
    optimizer: str = "nloptwrap",
    n_resamples: int | None = None,
    random_state: Any = None,
    executor: Any = None,
    progress: bool = True,
) -> MetaParameterAssessment:
    """GLRT, EMMs and Holm contrasts for one meta-parameter as a fixed effect (Hagmann Eq. 3.16).

    ``param`` is always treated as categorical (learning rates, training seeds). With ``prop`` (a
    categorical data property, or a numeric one with ``bins``), the interaction
    ``param x prop`` is tested and the levels are compared within each property level.
    ``adjust``, ``posthoc_df``, ``level`` and ``effect_size`` as in :func:`mixedeval.compare_systems`.
    With ``n_resamples``, the GLRT also gets ``p_value_pb``: pbkrtest's parametric bootstrap
    (``PBmodcomp``) of the same two fits, computed by :func:`mixedeval.compare` (an int
    ``random_state`` is R's ``set.seed``; ``executor`` runs the refits on workers, ``progress``
    shows their bar).
    """
    pb = {"n_resamples": n_resamples, "random_state": random_state, "executor": executor, "progress": progress}
    level = require_level(level)
    data = _param_as_text(data, param, score)
    if prop is None:
        if bins is not None or labels is not None:
            raise DataError("bins/labels need a property: pass prop=")
        r = compare_systems(data, score, param, item, posthoc_df=posthoc_df, adjust=adjust, average=False,
                            level=level, effect_size=effect_size, optimizer=optimizer, **pb)
        emm, con, glrt, fit, null_fit = r.emmeans, r.contrasts, r.glrt, r.fit, r.null_fit
        ws, p_adj, prov = r.warnings, r.p_adjust, dict(r.provenance)
    else:
        if bins is None and prop in data.columns and _is_numeric(data[prop]):  # refused before any fit is made
            raise DataError(f"property {prop!r} is numeric: give bins= (cut points) to compare the levels of {param!r} "
                            "within property classes, or use conditional_compare for slopes")
        r = conditional_compare(data, score, param, item, prop, bins=bins, labels=labels, adjust=adjust,
                                posthoc_df=posthoc_df, level=level, effect_size=effect_size, optimizer=optimizer,
                                **pb)
        if r.kind == "continuous":
            raise DataError(f"property {prop!r} is numeric: give bins= (cut points) to compare the levels of {param!r} "
                            "within property classes, or use conditional_compare for slopes")
        emm, con, glrt, fit, null_fit = r.cell_means, r.contrasts, r.glrt, r.fit, r.null_fit
        ws, p_adj, prov = r.warnings, r.p_adjust, dict(r.provenance)
    prov["workflow"] = "assess_meta_parameter"
    return MetaParameterAssessment(glrt=glrt, emmeans=emm, contrasts=con, param=param, prop=prop, p_adjust=p_adj,
                                   warnings=ws, provenance=prov, fit=fit, null_fit=null_fit)


def _is_numeric(s: Any) -> bool:
    """A numeric column that :func:`mixedeval.conditional_compare` would treat as continuous."""
    return (pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)
            and not isinstance(s.dtype, pd.CategoricalDtype))


def _param_as_text(data: Any, param: str, score: str | None = None):
    """A copy whose ``param`` column is categorical in numeric order (0.0001 < 0.0003 < 0.001)."""
    df = as_pandas(data)
    df.columns = [str(c) for c in df.columns]
    require_columns(df, [param])
    require_supported_dtypes(df, [param, score], score=score)
    s = df[param]
    if isinstance(s.dtype, pd.CategoricalDtype):
        return df
    if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        label = {v: (str(float(v)) if isinstance(v, (float, np.floating)) else str(v)) for v in s.dropna().unique()}
        order = [label[v] for v in sorted(label)]
        df[param] = pd.Categorical(s.map(label), categories=order)
        return df
    num = pd.to_numeric(s, errors="coerce")
    if num.notna().all():  # numbers stored as text: numeric order, labels kept
        order = list(dict.fromkeys(s.iloc[num.argsort(kind="mergesort")]))
        df[param] = pd.Categorical(s, categories=order)
    return df


__all__ = ["MetaParameterAssessment", "MetaParameterImportance", "assess_meta_parameter", "meta_parameter_importance"]
