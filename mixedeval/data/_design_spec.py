"""Evaluation designs specified without data, for power analysis (``me.design``), and the
extension of a pilot table along one factor (as simr's ``extend``).

A :class:`Design` is pure data: the design table (one row per observation: every system x item
x run x rater, items nested in languages when there are languages), the variance components
of the model that generates the scores, the family and the analysis formula. No score is drawn
here; :func:`mixedeval.power` simulates them (in R, with lme4's ``simulate``).

The model behind a Gaussian design, with treatment coding of ``system`` (the first system is
the reference; ``effect`` is the difference of each other system from it):

    score = intercept + effect[system] + u_item + u_run(system) + u_rater + u_language
            + u_system:item + u_system:language + e,

each ``u`` and ``e`` independent normal with the variance given in ``variances`` (keys
``item``, ``run`` (a run is nested in its system: R term ``(1|system:run)``), ``rater``,
``language``, ``system:item``, ``system:language``, ``residual``). A binomial design has the
same linear predictor on the logit scale (no residual) and 0/1 scores.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..results import ResultMixin

#: the factors a design is built from: size name -> column of the design table
FACTORS: dict[str, str] = {"systems": "system", "items": "item", "runs": "run", "raters": "rater",
                           "languages": "language"}
#: variance component -> (its R grouping term, the sizes it needs to be identifiable)
COMPONENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "item": ("item", ()),
    "run": ("system:run", ("runs",)),
    "rater": ("rater", ("raters",)),
    "language": ("language", ("languages",)),
    "system:item": ("system:item", ()),
    "system:language": ("system:language", ("languages",)),
}
FAMILIES = ("gaussian", "binomial")
_ALIASES = {"system": "systems", "item": "items", "run": "runs", "rater": "raters", "language": "languages"}


def factor_name(along: str) -> str:
    """The size name of a design factor (``"items"``; ``"item"`` is accepted too)."""
    key = _ALIASES.get(str(along), str(along))
    if key not in FACTORS:
        raise DataError(f"along must be one of {', '.join(FACTORS)}, not {along!r}")
    return key


def _labels(prefix: str, n: int) -> list[str]:
    """``n`` level labels that sort by code point in their numeric order (zero-padded)."""
    width = len(str(n))
    return [f"{prefix}{i + 1:0{width}d}" for i in range(n)]


def _size(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise DataError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True, repr=False)
class Design(ResultMixin):
    """An evaluation design without data (see :func:`design`).

    table : the design table, one row per observation: ``system``, ``item`` and, when used,
        ``run``, ``rater``, ``language``, plus ``score`` (zeros: the scores are simulated).
    sizes : number of systems, items (per language), runs (per system), raters, languages.
    variances : variance of each random component (``residual`` for Gaussian designs).
    family, intercept, formula : the generating model and the analysis formula.
    """

    sizes: dict[str, int]
    variances: dict[str, float]
    family: str
    intercept: float
    formula: str
    table: Any

    _print_tables = ("components",)
    _title = "Evaluation design"

    @property
    def components(self):
        """One row per variance component: component, r_term (the R grouping factor), variance,
        std_dev."""
        rows = [{"component": k, "r_term": COMPONENTS[k][0] if k in COMPONENTS else "",
                 "variance": v, "std_dev": math.sqrt(v)} for k, v in self.variances.items()]
        return pd.DataFrame(rows, columns=["component", "r_term", "variance", "std_dev"])

    def _scalars(self):
        return [("sizes", ", ".join(f"{k} {v}" for k, v in self.sizes.items() if v)), ("family", self.family),
                ("observations", len(self.table)), ("formula", self.formula)]

    def group_variances(self) -> dict[str, float]:
        """Variance per R grouping factor of the analysis formula (``item``, ``system:run``, ...)."""
        return {COMPONENTS[k][0]: v for k, v in self.variances.items() if k != "residual"}

    @property
    def sigma(self) -> float:
        """Residual standard deviation (1 for a binomial design, which has none)."""
        return math.sqrt(self.variances.get("residual", 1.0))

    def extend(self, along: str, n: int) -> "Design":
        """The same design with ``n`` levels of ``along`` (``"items"``, ``"runs"``, ``"raters"``,
        ``"languages"`` or ``"systems"``)."""
        key = factor_name(along)
        sizes = dict(self.sizes)
        sizes[key] = _size(key, n, 2 if key == "systems" else 1)
        return design(**sizes, variances=self.variances, family=self.family, intercept=self.intercept)


def _check_variances(variances: Mapping[str, Any], family: str, sizes: Mapping[str, int]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in dict(variances).items():
        if k not in COMPONENTS and k != "residual":
            raise DataError(f"unknown variance component {k!r}; use {', '.join([*COMPONENTS, 'residual'])}")
        try:
            x = float(v)
        except (TypeError, ValueError) as exc:
            raise DataError(f"variance of {k!r} must be a number, got {v!r}") from exc
        if not math.isfinite(x) or x < 0:
            raise DataError(f"variance of {k!r} must be finite and >= 0, got {v!r}")
        out[k] = x
    if family == "gaussian" and out.get("residual", 0.0) <= 0:
        raise DataError("a Gaussian design needs variances={'residual': ...} > 0 (the score's noise variance)")
    if family == "binomial" and "residual" in out:
        raise DataError("a binomial design has no residual variance (the variances are on the logit scale); "
                        "drop 'residual'")
    for k in out:
        for need in COMPONENTS.get(k, ("", ()))[1]:
            if sizes[need] < 2:
                raise DataError(f"the {k!r} variance needs at least 2 {need} (got {sizes[need]})")
    if "system:item" in out and sizes["runs"] * sizes["raters"] < 2:
        raise DataError("the 'system:item' variance is not separable from the residual with one observation per "
                        "system and item: use runs >= 2 or raters >= 2, or drop it")
    return out


def _formula(variances: Mapping[str, float]) -> str:
    terms = [f"(1 | {COMPONENTS[k][0]})" for k in COMPONENTS if k in variances]
    if not terms:
        raise DataError("a design needs at least one random component (e.g. variances={'item': 1.0, ...})")
    return "score ~ system + " + " + ".join(terms)


def _table(sizes: Mapping[str, int]) -> pd.DataFrame:
    """Every system x item x run x rater (items nested in languages), in that nesting order."""
    n_lang = sizes["languages"]
    langs = _labels("language_", n_lang) if n_lang else [None]
    parts: dict[str, list[str]] = {}
    items = [(lg, it) for lg in langs for it in _labels("item_", sizes["items"])]
    axes = [("system", _labels("system_", sizes["systems"])), ("item", list(range(len(items)))),
            ("run", _labels("run_", sizes["runs"])), ("rater", _labels("rater_", max(sizes["raters"], 1)))]
    grids = np.meshgrid(*[np.arange(len(v)) for _, v in axes], indexing="ij")
    for (name, values), g in zip(axes, grids):
        parts[name] = [values[i] for i in g.ravel()] if name != "item" else list(g.ravel())
    item_idx = parts.pop("item")
    out = {"system": parts["system"]}
    if n_lang:
        out["language"] = [items[i][0] for i in item_idx]
        out["item"] = [f"{items[i][0]}:{items[i][1]}" for i in item_idx]
    else:
        out["item"] = [items[i][1] for i in item_idx]
    if sizes["runs"] > 1:
        out["run"] = parts["run"]
    if sizes["raters"]:
        out["rater"] = parts["rater"]
    df = pd.DataFrame(out)
    for c in df.columns:
        df[c] = pd.Categorical(df[c], categories=sorted(set(df[c])))
    df["score"] = 0.0
    return df


def design(
    systems: int = 2,
    items: int = 100,
    runs: int = 1,
    raters: int = 0,
    languages: int = 0,
    *,
    variances: Mapping[str, float] | None = None,
    family: str = "gaussian",
    intercept: float = 0.0,
) -> Design:
    """An evaluation design for power analysis: the design table and the variance components.

    Parameters
    ----------
    systems : number of systems compared (>= 2; the first is the reference level).
    items : test items (per language when ``languages`` > 0).
    runs : runs (training seeds) per system; a run belongs to one system (R term ``(1|system:run)``).
    raters : raters scoring every output (0: no rater factor).
    languages : languages, each with its own ``items`` items (0: no language factor).
    variances : variance per component: ``item``, ``run``, ``rater``, ``language``, ``system:item``,
        ``system:language`` and, for Gaussian scores, ``residual``. Default ``{"item": 1,
        "residual": 1}`` (binomial: ``{"item": 1}``, on the logit scale).
    family : ``"gaussian"`` (continuous scores) or ``"binomial"`` (0/1 correctness per item).
    intercept : the reference system's mean (binomial: its log-odds).

    The analysis formula has ``system`` as the fixed effect and one random intercept per
    component given (:attr:`Design.formula`). Example:
    ``me.design(systems=2, items=500, runs=3, variances={"item": 0.04, "run": 0.0004,
    "residual": 0.01})``.
    """
    if family not in FAMILIES:
        raise DataError(f"family must be one of {', '.join(FAMILIES)}, not {family!r}")
    sizes = {"systems": _size("systems", systems, 2), "items": _size("items", items, 2),
             "runs": _size("runs", runs, 1), "raters": _size("raters", raters, 0),
             "languages": _size("languages", languages, 0)}
    if variances is None:
        variances = {"item": 1.0, "residual": 1.0} if family == "gaussian" else {"item": 1.0}
    var = _check_variances(variances, family, sizes)
    try:
        icpt = float(intercept)
    except (TypeError, ValueError) as exc:
        raise DataError(f"intercept must be a number, got {intercept!r}") from exc
    n = sizes["systems"] * sizes["items"] * max(sizes["languages"], 1) * sizes["runs"] * max(sizes["raters"], 1)
    if n > 5_000_000:
        raise DataError(f"the design has {n:,} observations; power by simulation refits a model per simulation, "
                        "so use a smaller design (fewer items, runs or raters)")
    return Design(sizes=sizes, variances=var, family=family, intercept=icpt, formula=_formula(var), table=_table(sizes))


def with_sizes(d: Design, **sizes: int) -> Design:
    """``d`` with some sizes changed (the others kept)."""
    return design(**{**d.sizes, **sizes}, variances=d.variances, family=d.family, intercept=d.intercept)


def extend_levels(frame: pd.DataFrame, column: str, n: int) -> pd.DataFrame:
    """A copy of ``frame`` in which ``column`` has ``n`` levels (as simr's ``extend``).

    Fewer levels than present: the rows of the first ``n`` levels (in level order). More: the
    rows of every level are copied, level by level in order and cyclically, under new labels
    ``"<level>#<k>"`` (k = 2, 3, ...), until there are ``n`` levels; every other column (the
    design and the response) is copied with them. ``frame`` is not modified.
    """
    if column not in frame.columns:
        raise DataError(f"cannot extend along {column!r}: not a column of the model data "
                        f"({', '.join(map(str, frame.columns))})")
    n = _size(f"the number of levels of {column!r}", n, 2)
    s = frame[column]
    levels = list(s.cat.categories) if isinstance(s.dtype, pd.CategoricalDtype) else sorted(pd.unique(s.dropna()))
    if n <= len(levels):
        keep = set(levels[:n])
        out = frame[s.isin(keep)].copy()
        if isinstance(s.dtype, pd.CategoricalDtype):
            out[column] = out[column].cat.remove_unused_categories()
        return out.reset_index(drop=True)
    pieces, labels = [frame], [str(v) for v in levels]
    for j in range(len(levels), n):
        lev = levels[j % len(levels)]
        copy = frame[s == lev].copy()
        new = f"{lev}#{j // len(levels) + 1}"
        copy[column] = new
        pieces.append(copy)
        labels.append(new)
    out = pd.concat([p.assign(**{column: p[column].astype(str)}) for p in pieces], ignore_index=True)
    out[column] = pd.Categorical(out[column], categories=labels)
    return out


