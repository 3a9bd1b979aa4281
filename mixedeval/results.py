"""Base pieces of every mixedeval result: structured warnings, provenance, and printing.

Results are small frozen dataclasses holding pandas DataFrames. They print as plain tables in a
terminal, as HTML tables in a notebook (``_repr_html_``), and convert with ``to_frame()`` (the
main table) and ``to_dict()`` (everything, JSON-friendly).
"""
from __future__ import annotations

import dataclasses
import html
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class ResultWarning:
    """A structured warning attached to a result.

    ``kind`` is one of: ``singular``, ``convergence``, ``df_fallback``, ``refit_ml``,
    ``missing_rows``, ``r_warning``, ``r_message``, ``averaging``, ``optimizer_disagreement``,
    ``response_type`` (the model does not suit the response: a Gaussian LMM of 0/1 or count data),
    or another short snake_case label; ``message`` is one human sentence.
    """

    kind: str
    message: str
    source: str = "mixedeval"

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


def jsonable(x: Any) -> Any:
    """Convert numpy/pandas values to JSON-friendly Python values (NaN/inf become None)."""
    if isinstance(x, pd.DataFrame):
        return [{str(k): jsonable(v) for k, v in row.items()} for row in x.to_dict(orient="records")]
    if isinstance(x, pd.Series):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return [jsonable(v) for v in x.tolist()]
    if isinstance(x, ResultWarning):
        return dataclasses.asdict(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: jsonable(getattr(x, f.name)) for f in dataclasses.fields(x) if not f.name.startswith("_")}
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if x is pd.NA or x is None:
        return None
    if isinstance(x, (str, int, float, bool)):
        return x
    return str(x)


class ResultMixin:
    """Printing and conversion for frozen result dataclasses.

    Subclasses name their main table in ``_main_table`` (attribute or method name) and may list
    the tables to print in ``_print_tables``.
    """

    _main_table: str = "table"
    _print_tables: tuple[str, ...] = ()
    _title: str = ""

    def to_frame(self):
        obj = getattr(self, self._main_table)
        return obj() if callable(obj) else obj.copy()

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)

    def _tables(self) -> list[tuple[str, Any]]:
        names = self._print_tables or (self._main_table,)
        out = []
        for n in names:
            obj = getattr(self, n, None)
            if callable(obj):
                obj = obj()
            if isinstance(obj, pd.DataFrame):
                out.append((n, obj))
        return out

    def _scalars(self) -> list[tuple[str, Any]]:
        return []

    def __repr__(self) -> str:
        title = self._title or type(self).__name__
        lines = [title]
        for k, v in self._scalars():
            lines.append(f"  {k}: {v}")
        with pd.option_context("display.max_columns", 20, "display.width", 140, "display.max_rows", 60):
            for name, df in self._tables():
                lines.append(f"\n{name}:")
                lines.append(df.to_string(index=False))
        for w in getattr(self, "warnings", ()) or ():
            lines.append(f"warning: {w}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        title = html.escape(self._title or type(self).__name__)
        parts = [f"<div class='mixedeval-result'><h4>{title}</h4>"]
        if self._scalars():
            parts.append("<ul>" + "".join(f"<li>{html.escape(str(k))}: {html.escape(str(v))}</li>" for k, v in self._scalars()) + "</ul>")
        for name, df in self._tables():
            parts.append(f"<h5>{html.escape(name)}</h5>")
            parts.append(df.to_html(index=False, float_format=lambda v: f"{v:.6g}"))
        ws = getattr(self, "warnings", ()) or ()
        if ws:
            parts.append("<ul class='warnings'>" + "".join(f"<li>{html.escape(str(w))}</li>" for w in ws) + "</ul>")
        parts.append("</div>")
        return "".join(parts)


# ------------------------------------------------------------------------------ severity
#: Warning kinds that make a result's inferential numbers untrustworthy whatever was tested.
#: A report never shows such a result under an "ok" badge and explains it first, in plain words.
#:
#: * ``vcov_unstable``: the variance-covariance matrix of the fixed effects (the standard errors)
#:   was numerically unstable; Wald z/t statistics, p-values and intervals built from it can be
#:   absurd (z = -603).
#: * ``separation``: a system is always right (or always wrong) in some cell, so its log-odds
#:   estimate runs off to infinity; odds ratios and their Wald tests are meaningless.
#: * ``convergence``, ``convergence_gradient``, ``convergence_hessian``: a failed convergence
#:   check of lme4 / glmmTMB (the optimizer stopped early, the gradient at the optimum is not
#:   small, or the Hessian is not positive definite).
#: * ``hessian``: ordinal::clmm's failed Hessian check (not positive definite or ill-conditioned):
#:   the same failure as ``convergence_hessian`` under the name its module gives it.
#: * ``optimizer_disagreement``: refits with other optimizers reached another optimum; this is
#:   the convergence check that catches silent early stops (DESIGN rule 4).
#:
#: Not severe: ``singular`` in general (normal in variance-component analysis; severe only on a
#: tested term, see :func:`is_severe`), ``df_fallback`` (emmeans used asymptotic or other df than
#: asked: the numbers are valid, slightly liberal with few groups), ``refit_ml``, ``missing_rows``,
#: ``response_type`` (shown first in the report's own "Model choice" section), R's other
#: warnings and messages.
SEVERE_KINDS: frozenset[str] = frozenset({
    "vcov_unstable", "separation", "convergence", "convergence_gradient", "convergence_hessian", "hessian",
    "optimizer_disagreement",
})

#: ``|corr|`` at or above this counts as a correlation estimated at +-1 (a boundary)
BOUNDARY_CORR = 0.999
#: a standard deviation at or below this times the residual SD (1 without a residual) is zero
#: (lme4::isSingular's default tolerance on the relative covariance factor)
BOUNDARY_TOL = 1e-4


def _strip_suffix(name: str) -> str:
    """lme4 names repeated grouping factors ``g.1``, ``g.2``: the factor's own name."""
    head, dot, tail = name.rpartition(".")
    return head if dot and tail.isdigit() else name


def _mentions(name: Any, term: str, slope: bool = False) -> bool:
    """Whether a VarCorr ``group`` names ``term`` (a part of an interaction grouping:
    ``system:replication``, ``item/system``) or, with ``slope``, a VarCorr ``term`` is a slope of
    it (``system``, or a factor's dummy such as ``systemB``)."""
    if name is None or (isinstance(name, float) and name != name):
        return False
    s = str(name)
    if s in ("(Intercept)", "Residual"):
        return False
    parts = [_strip_suffix(p.strip()) for p in s.replace("/", ":").split(":")]
    return any(p == term or (slope and p.startswith(term)) for p in parts)


def boundary_components(random: Any, tested_terms: Any = ()) -> list[str]:
    """The variance components of a fit's ``random`` table (group, term, term2, variance,
    std_dev, corr) estimated at the boundary (a standard deviation ~0, a correlation ~+-1)
    whose group or term involves one of ``tested_terms`` (all boundary components when
    ``tested_terms`` is None). Returned as ``"group: term"`` labels."""
    if random is None or not isinstance(random, pd.DataFrame) or not len(random):
        return []
    tab = random
    resid = tab[tab["group"].astype(str) == "Residual"] if "group" in tab.columns else tab.iloc[:0]
    scale = float(resid["std_dev"].iloc[0]) if len(resid) and "std_dev" in tab.columns else 1.0
    scale = scale if math.isfinite(scale) and scale > 0 else 1.0
    out: list[str] = []
    for row in tab.itertuples(index=False):
        group = getattr(row, "group", None)
        if str(group) == "Residual":
            continue
        term, term2 = getattr(row, "term", None), getattr(row, "term2", None)
        has_term2 = term2 is not None and not (isinstance(term2, float) and term2 != term2)
        if has_term2:
            corr = getattr(row, "corr", float("nan"))
            at_boundary = corr is not None and corr == corr and abs(float(corr)) >= BOUNDARY_CORR
        else:
            sd = getattr(row, "std_dev", None)
            if sd is None or sd != sd:
                var = getattr(row, "variance", float("nan"))
                sd = math.sqrt(max(float(var), 0.0)) if var == var else float("nan")
            at_boundary = sd == sd and float(sd) <= BOUNDARY_TOL * scale
        if not at_boundary:
            continue
        if tested_terms is None or any(
                _mentions(group, str(t)) or _mentions(term, str(t), slope=True)
                or (has_term2 and _mentions(term2, str(t), slope=True)) for t in tested_terms):
            label = f"{group}: {term}" + (f" ~ {term2}" if has_term2 else "")
            out.append(label)
    return out


#: R's own warning (kind ``r_warning``) that lme4's variance-covariance matrix is unstable: read as
#: ``vcov_unstable`` (lme4: "variance-covariance matrix computed from finite-difference Hessian is
#: not positive definite or contains NA values: falling back to var-cov estimated from RX")
_VCOV_UNSTABLE_TEXT = re.compile(r"variance-covariance matrix .*(not positive definite|contains NA)", re.I | re.S)


def effective_kind(w: ResultWarning) -> str:
    """The kind a warning is judged by: its ``kind``, except that R's unclassified warning of an
    unstable variance-covariance matrix counts as ``vcov_unstable``."""
    kind = str(getattr(w, "kind", ""))
    if kind in ("r_warning", "warning") and _VCOV_UNSTABLE_TEXT.search(str(getattr(w, "message", ""))):
        return "vcov_unstable"
    return kind


def is_severe(w: ResultWarning, tested_terms: Any = (), random: Any = None) -> bool:
    """Whether warning ``w`` makes its result's inferential numbers untrustworthy.

    Kinds in :data:`SEVERE_KINDS` always are (judged by :func:`effective_kind`). A ``singular`` warning is severe only when the
    boundary component involves a tested term (e.g. ``(1|system:replication)`` at zero when the
    ``system`` effect is tested): with the fit's ``random`` table this is decided by
    :func:`boundary_components`; without it, by whether the message names a tested term. A
    singular fit of a nuisance component (items, raters) is normal (DESIGN rule 4) and not severe.
    """
    kind = effective_kind(w)
    if kind in SEVERE_KINDS:
        return True
    if kind != "singular" or not tested_terms:
        return False
    if isinstance(random, pd.DataFrame) and len(random):
        return bool(boundary_components(random, tested_terms))
    msg = str(getattr(w, "message", ""))
    return any(re.search(rf"(?<![A-Za-z0-9_.]){re.escape(str(t))}", msg) for t in tested_terms)
