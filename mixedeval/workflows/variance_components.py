"""Variance component analysis (VCA) and generalizability-theory reliability.

:func:`variance_components` fits a random-effects-only linear mixed model by REML with
``lmerTest::lmer`` (lme4), one random intercept per facet, per listed interaction and per nested
term, and decomposes the score variance (Hagmann 2023, ch. 3.4; Riezler & Hagmann 2024):

    score = mu + b_object + sum_f b_f + sum_(a:b) b_(a:b) + e

The components are read from ``as.data.frame(VarCorr(m))`` and mapped to the model terms by
their grouping-factor NAME (lme4 reorders terms by their number of levels, so positions are
meaningless). The percent column is the share of the sum of the estimated components, as in the
thesis' Tables 3.1-3.8. Singular (boundary) fits are normal here: the zero components are named
and the analysis continues.

Reliability (Brennan 2001, *Generalizability Theory*, ch. 4-5; Hagmann 2023, Eq. 3.9-3.10,
3.17-3.18), with ``n_f`` the number of levels of facet ``f`` averaged over (D-study sizes):

* absolute error variance ``sigma2_Delta = sum_c sigma2_c / prod_{f in c} n_f`` over every
  component ``c`` except the object (the residual is divided by the product over all facets);
* relative error variance ``sigma2_delta``: the same sum over the components that contain the
  object and at least one facet, plus the residual;
* ``phi = sigma2_object / (sigma2_object + sigma2_Delta)`` (index of dependability; with all
  ``n_f = 1`` it is the object's percent of the total, the thesis' reliability coefficient);
* ``E rho^2 = sigma2_object / (sigma2_object + sigma2_delta)`` (generalizability coefficient).

Interpretation bands follow Koo & Li (2016): < .5 poor, .5-.75 moderate, .75-.9 good, > .9
excellent.

Uncertainty: :meth:`VCAResult.bootstrap` is lme4's parametric bootstrap (``bootMer`` with
``use.u = FALSE``: simulate from the fit, refit, read ``VarCorr``) with percentile intervals of
every component and coefficient; the refits can run on an ``executor``.

For a balanced crossed object x facet design the ANOVA (expected-mean-squares) estimators
(Searle, Casella & McCulloch 1992, ch. 4; Hagmann 2023, proof of Prop. 3.1) are computed as a
cross-check: on balanced data they equal REML whenever none of them is negative.
"""
from __future__ import annotations

import itertools
import math
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._executor import resolve_executor
from .._random import r_seed
from .._resources import LoopGuard
from ..data._formula import is_syntactic
from ..data.table import as_pandas
from ..data.validate import (
    ROWS_CHECKED,
    _rows_preview,
    duplicated_rows_warning,
    require_columns,
    require_finite,
    require_level,
    require_levels,
    require_nonempty,
    require_supported_dtypes,
)
from ..engine import _bridge
from ..errors import DataError, MixedEvalError
from ..inference._lmm import lmm
from ..resampling._checks import check_n_resamples
from ..resampling._draws import chunks
from ..results import ResultWarning
from ._common import KOO_LI_BANDS, _WorkflowResult, koo_li_band, refit_guard, worker_model

#: a component is reported as zero when its standard deviation relative to the residual one
#: (lme4's theta) is below this value, the tolerance of ``lme4::isSingular``
ZERO_TOL = 1e-4


# --------------------------------------------------------------------------- terms
@dataclass(frozen=True)
class _Term:
    name: str  # display name: "sentence", "sentence:rater", "Residual"
    role: str  # object / facet / interaction / nested / residual
    variables: tuple[str, ...]  # data columns involved (empty for the residual)


def _as_term(spec: Any, what: str) -> tuple[str, ...]:
    if isinstance(spec, str):
        parts = tuple(p.strip() for p in spec.split(":"))
    elif isinstance(spec, Iterable):
        parts = tuple(str(p) for p in spec)
    else:
        raise DataError(f"{what} {spec!r} must be a string like 'a:b' or a tuple of column names")
    if len(parts) < 2 or any(not p for p in parts):
        raise DataError(f"{what} {spec!r} must name at least two columns, e.g. 'sentence:rater' or ('sentence', 'rater')")
    if len(set(parts)) != len(parts):
        raise DataError(f"{what} {spec!r} names a column twice")
    return parts


def _nested_terms(nested: Any) -> list[tuple[str, ...]]:
    """``"a/b"`` -> ``[("a",), ("a", "b")]``; ``"a/b/c"`` -> a, a:b, a:b:c (lme4's expansion)."""
    if nested is None:
        return []
    specs = [nested] if isinstance(nested, str) else list(nested)
    out: list[tuple[str, ...]] = []
    for spec in specs:
        if not isinstance(spec, str) or "/" not in spec:
            raise DataError(f"nested term {spec!r} must be a string like 'learning_rate/src_length_class'")
        parts = tuple(p.strip() for p in spec.split("/"))
        if any(not p for p in parts):
            raise DataError(f"nested term {spec!r} has an empty part; write 'a/b'")
        for i in range(1, len(parts) + 1):
            out.append(parts[:i])
    return out


def _build_terms(obj: str, facets: Sequence[str], interactions: Any, nested: Any) -> list[_Term]:
    terms = [_Term(obj, "object", (obj,))]
    seen = {(obj,)}
    for f in facets:
        if (f,) in seen:
            raise DataError(f"facet {f!r} is listed twice (or equals the object column)")
        terms.append(_Term(f, "facet", (f,)))
        seen.add((f,))
    if isinstance(interactions, str) and interactions in ("all", "two-way"):
        interactions = list(itertools.combinations([obj, *facets], 2))
    for spec in interactions or ():
        parts = _as_term(spec, "interaction")
        key = tuple(sorted(parts))
        if any(tuple(sorted(t.variables)) == key for t in terms):
            raise DataError(f"interaction {':'.join(parts)!r} is listed twice")
        terms.append(_Term(":".join(parts), "interaction", parts))
    for parts in _nested_terms(nested):
        key = tuple(sorted(parts))
        if any(tuple(sorted(t.variables)) == key for t in terms):
            continue  # a/b's main effect already listed as a facet
        terms.append(_Term(":".join(parts), "nested", parts))
    return terms


def _alias(name: str, taken: set[str]) -> str:
    if is_syntactic(name) and ":" not in name:
        taken.add(name)
        return name
    base = re.sub(r"[^A-Za-z0-9._]", "_", name)
    if not base or not base[0].isalpha():
        base = "v_" + base
    cand, i = base, 1
    while cand in taken or not is_syntactic(cand):
        i += 1
        cand = f"{base}_{i}"
    taken.add(cand)
    return cand


# ------------------------------------------------------------------------ checks
def _check_design(df, obj: str, facets: Sequence[str], terms: list[_Term], score: str):
    """``(rows used, warnings)``: a missing score is an error, rows with a missing object/facet
    value are dropped with a ``missing_rows`` warning (the rules of mixedeval.data.validate)."""
    require_nonempty(df)
    require_columns(df, [score, obj, *facets])
    for t in terms:
        missing = [v for v in t.variables if v not in df.columns]
        if missing:
            raise DataError(
                f"{t.role} term {t.name!r} names column(s) {', '.join(map(repr, missing))} that are not in the data; "
                f"available columns: {', '.join(map(str, df.columns[:20]))}"
            )
    variables = sorted({v for t in terms for v in t.variables})
    require_supported_dtypes(df, [score, *variables], score=score)
    require_finite(df, score)
    warnings: list[ResultWarning] = []
    dup = duplicated_rows_warning(df, score)
    if dup is not None:
        warnings.append(dup)
    na = df[variables].isna()
    bad = na.any(axis=1).to_numpy()
    if bad.any():
        which = ", ".join(f"{v!r} ({int(na[v].sum())})" for v in variables if na[v].any())
        warnings.append(ResultWarning(
            "missing_rows",
            f"{int(bad.sum())} row(s) with missing values in {which} were dropped before fitting "
            f"(rows {_rows_preview(df.index[bad])})",
        ))
        df = df.loc[~bad]
        require_nonempty(df, "data without missing object/facet values")
    for v in variables:
        role = "object column" if v == obj else "facet"
        require_levels(df, v, 2, role)
    warnings += _check_crossing(df, obj, facets, terms)
    return df, warnings


def _check_crossing(df, obj: str, facets: Sequence[str], terms: list[_Term]) -> list[ResultWarning]:
    """Refuse an object nested in a facet (or the reverse) and terms with one row per level;
    warn about partially crossed facets."""
    warnings: list[ResultWarning] = []
    n_obj = df[obj].nunique()
    for f in facets:
        pairs = df[[obj, f]].drop_duplicates()
        n_f = df[f].nunique()
        obj_per_facet = pairs.groupby(f, observed=True)[obj].nunique()
        facet_per_obj = pairs.groupby(obj, observed=True)[f].nunique()
        if facet_per_obj.max() == 1:
            raise DataError(
                f"object {obj!r} is not crossed with facet {f!r}: each {obj!r} level occurs with a single {f!r} level "
                f"(the object is nested in the facet), so their variances cannot be separated. Use a design in which "
                f"every {obj!r} is measured under several {f!r} levels, or model it as nested=['{f}/{obj}']"
            )
        if obj_per_facet.max() == 1:
            raise DataError(
                f"facet {f!r} is not crossed with object {obj!r}: each {f!r} level occurs with a single {obj!r} level "
                f"(the facet is nested in the object). Recode {f!r} so that its levels are shared across objects "
                f"(e.g. rater ids, seeds), or drop it from facets"
            )
        if len(pairs) < n_obj * n_f:
            warnings.append(ResultWarning(
                "partially_crossed",
                f"object {obj!r} and facet {f!r} are partially crossed ({len(pairs)} of {n_obj * n_f} combinations "
                "observed); REML handles the missing cells but the estimates are less precise",
            ))
    n = len(df)
    for t in terms:
        if len(t.variables) > 1:
            n_lev = len(df[list(t.variables)].drop_duplicates())
            if n_lev >= n:
                raise DataError(
                    f"{t.role} term {t.name!r} has one observation per level ({n_lev} levels, {n} rows): its variance is "
                    "confounded with the residual; drop it (the residual contains it)"
                )
    return warnings


# ----------------------------------------------------------------------- result
@dataclass(frozen=True, repr=False)
class VCAResult(_WorkflowResult):
    """Variance components of a random-effects-only model and reliability coefficients.

    ``table``: component, role (object / facet / interaction / nested / residual), variance,
    std_dev, percent (of the sum of all components), sorted by variance (largest first).
    ``anova_check``: for a balanced crossed object x facet design, the ANOVA expected-mean-squares
    estimates beside the REML ones (None otherwise). :meth:`bootstrap` gives parametric-bootstrap
    intervals of the components and reliability coefficients (lme4's ``bootMer`` method).
    """

    table: Any
    object: str
    facets: tuple[str, ...]
    formula: str
    reml: bool
    singular: bool
    zero_components: tuple[str, ...]
    nobs: int
    anova_check: Any
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    model: Any = field(default=None, repr=False, compare=False)
    _terms: tuple[_Term, ...] = field(default=(), repr=False, compare=False)
    #: (lme4 grouping factor, component) pairs: VarCorr's ``grp`` -> the table's ``component``
    _groups: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)

    _main_table = "table"
    _print_tables = ("table", "anova_check")
    _skip_in_dict = ("model",)

    @property
    def _title(self) -> str:  # type: ignore[override]
        est = "REML" if self.reml else "ML"
        return f"Variance components ({est}, lme4): object {self.object!r}, facets {list(self.facets)}"

    def _scalars(self):
        p = self.phi()
        return [("nobs", self.nobs), ("phi (n=1)", f"{p:.4g} ({koo_li_band(p)})"),
                ("E rho2 (n=1)", f"{self.g_coefficient():.4g}"), ("singular", self.singular),
                ("zero components", ", ".join(self.zero_components) or "none")]

    # ------------------------------------------------------------- helpers
    def variance(self, component: str) -> float:
        """The estimated variance of a component by name (``"Residual"`` for the residual)."""
        row = self.table.loc[self.table["component"] == component, "variance"]
        if row.empty:
            raise DataError(f"no component {component!r}; components: {', '.join(self.table['component'])}")
        return float(row.iloc[0])

    def _var_by_vars(self, variables: Iterable[str], var: Any = None) -> Any:
        """The variance of the term made of ``variables`` (0 when the model has no such term);
        ``var`` maps a component name to its variance (default :meth:`variance`; the bootstrap
        passes one array of replicates per component)."""
        var = self.variance if var is None else var
        key = frozenset(variables)
        for t in self._terms:
            if t.role != "residual" and frozenset(t.variables) == key:
                return var(t.name)
        return 0.0  # not in the model: confounded with the residual

    @property
    def _facet_variables(self) -> tuple[str, ...]:
        out: list[str] = []
        for t in self._terms:
            for v in t.variables:
                if v != self.object and v not in out:
                    out.append(v)
        return tuple(out)

    def _sizes(self, sizes: Mapping[str, float]) -> dict[str, float]:
        fv = self._facet_variables
        unknown = [k for k in sizes if k not in fv]
        if unknown:
            raise DataError(
                f"facet size(s) given for {', '.join(map(repr, unknown))}, which are not facets of this design "
                f"({', '.join(fv) or 'none'})"
            )
        out = {v: 1.0 for v in fv}
        for k, n in sizes.items():
            n = float(n)
            if not (n >= 1 and math.isfinite(n)):
                raise DataError(f"facet size {k}={sizes[k]!r} must be a number >= 1 (levels averaged over)")
            out[k] = n
        return out

    def _error_variances(self, sizes: Mapping[str, float], var: Any = None) -> tuple[Any, Any, Any]:
        """``(sigma2_object, sigma2_Delta, sigma2_delta)`` at the facet sizes (``var`` as in
        :meth:`_var_by_vars`)."""
        var = self.variance if var is None else var
        n = self._sizes(sizes)
        s2 = var(self.object)
        abs_err = rel_err = 0.0
        for t in self._terms:
            if t.role == "object":
                continue
            if t.role == "residual":
                div = float(np.prod([n[v] for v in self._facet_variables])) if self._facet_variables else 1.0
                v = var(t.name) / div
                abs_err += v
                rel_err += v
                continue
            div = float(np.prod([n[v] for v in t.variables if v != self.object]))
            v = var(t.name) / div
            abs_err += v
            if self.object in t.variables:
                rel_err += v
        return s2, abs_err, rel_err

    # --------------------------------------------------------- reliability
    def phi(self, **facet_sizes: float) -> float:
        """Brennan's index of dependability (absolute): ``s2 / (s2 + sigma2_Delta)``.

        Keyword arguments give the number of levels averaged over per facet (default 1), e.g.
        ``vca.phi(rater=3, occasion=1)``. With all sizes 1 this is the object's share of the total
        variance (Hagmann 2023, Def. 3.5).
        """
        s2, abs_err, _ = self._error_variances(facet_sizes)
        return _ratio(s2, s2 + abs_err)

    def g_coefficient(self, **facet_sizes: float) -> float:
        """Generalizability coefficient E rho² (relative): ``s2 / (s2 + sigma2_delta)``, where
        ``sigma2_delta`` holds only the components that interact with the object and the residual
        (Brennan 2001, Eq. 4.5)."""
        s2, _, rel_err = self._error_variances(facet_sizes)
        return _ratio(s2, s2 + rel_err)

    def d_study(self, grid: Mapping[str, Iterable[float]] | Any):
        """Phi and E rho² over a grid of facet sizes (Brennan's D study).

        ``grid`` is ``{facet: sizes}`` (all combinations are evaluated) or a DataFrame with one
        column per facet. Returns columns ``n_<facet>``, phi, phi_band, g_coefficient, g_band.
        """
        if isinstance(grid, pd.DataFrame):
            rows = grid.to_dict(orient="records")
        elif isinstance(grid, Mapping):
            keys = list(grid)
            values = [list(np.atleast_1d(grid[k])) for k in keys]
            rows = [dict(zip(keys, combo)) for combo in itertools.product(*values)]
        else:
            raise DataError("grid must be a dict {facet: sizes} or a DataFrame with one column per facet")
        if not rows:
            raise DataError("grid is empty; give at least one size per facet, e.g. {'rater': [1, 2, 3]}")
        out = []
        for r in rows:
            p = self.phi(**r)
            g = self.g_coefficient(**r)
            out.append({**{f"n_{k}": v for k, v in r.items()}, "phi": p, "phi_band": koo_li_band(p),
                        "g_coefficient": g, "g_band": koo_li_band(g)})
        return pd.DataFrame(out)

    def _rater_occasion(self, rater: str | None, occasion: str | None) -> tuple[str, str]:
        fv = self._facet_variables
        if rater is None and "rater" in fv:
            rater = "rater"
        if occasion is None and "occasion" in fv:
            occasion = "occasion"
        if rater is None or occasion is None:
            raise DataError(
                f"name the rater and occasion facets, e.g. intra_rater(rater='annotator', occasion='round'); "
                f"facets of this design: {', '.join(fv)}"
            )
        for role, name in (("rater", rater), ("occasion", occasion)):
            if name not in fv:
                raise DataError(f"{role} facet {name!r} is not a facet of this design ({', '.join(fv)})")
        return rater, occasion

    def intra_rater(self, rater: str | None = None, occasion: str | None = None, variant: str = "brennan") -> float:
        """Intra-rater (test-retest) reliability: one rater fixed, generalizing over occasions.

        ``variant="brennan"``: ``(s + sr) / (s + sr + si + res)`` (Brennan 2001's relative
        coefficient with the rater facet fixed). ``variant="hagmann2023"``: the thesis' Eq. 3.17 as
        printed, ``(s + sr) / (s + sr + ri + res)``. Components missing from the model count as 0
        (they are confounded with the residual).
        """
        r, i = self._rater_occasion(rater, occasion)
        return self._intra_rater(r, i, variant)

    def _intra_rater(self, r: str, i: str, variant: str = "brennan", var: Any = None) -> Any:
        var = self.variance if var is None else var
        s = var(self.object)
        sr = self._var_by_vars((self.object, r), var)
        si = self._var_by_vars((self.object, i), var)
        ri = self._var_by_vars((r, i), var)
        res = var("Residual")
        if variant == "brennan":
            err = si + res
        elif variant == "hagmann2023":
            err = ri + res
        else:
            raise DataError(f"variant must be 'brennan' or 'hagmann2023', not {variant!r}")
        return _ratio(s + sr, s + sr + err)

    def inter_rater(self, rater: str | None = None, occasion: str | None = None) -> float:
        """Inter-rater reliability: one occasion fixed, generalizing over raters (Hagmann 2023,
        Eq. 3.18): ``(s + si) / (s + si + sr + res)``."""
        r, i = self._rater_occasion(rater, occasion)
        return self._inter_rater(r, i)

    def _inter_rater(self, r: str, i: str, var: Any = None) -> Any:
        var = self.variance if var is None else var
        s = var(self.object)
        si = self._var_by_vars((self.object, i), var)
        sr = self._var_by_vars((self.object, r), var)
        res = var("Residual")
        return _ratio(s + si, s + si + sr + res)

    def _coefficients(self, facet_sizes: Mapping[str, float], var: Any = None) -> dict[str, Any]:
        """The coefficients :meth:`reliability` lists: phi and E rho² at ``facet_sizes``, plus
        intra- and inter-rater reliability (one rater / one occasion) for designs with ``rater``
        and ``occasion`` facets; ``var`` as in :meth:`_var_by_vars` (arrays give arrays)."""
        s2, abs_err, rel_err = self._error_variances(facet_sizes, var)
        out = {"phi": _ratio(s2, s2 + abs_err), "g_coefficient": _ratio(s2, s2 + rel_err)}
        fv = self._facet_variables
        if "rater" in fv and "occasion" in fv:
            out["intra_rater"] = self._intra_rater("rater", "occasion", "brennan", var)
            out["inter_rater"] = self._inter_rater("rater", "occasion", var)
        return out

    def reliability(self, **facet_sizes: float):
        """A table (coefficient, value, band) of phi and E rho² at the given facet sizes, plus
        intra- and inter-rater reliability when the design has rater and occasion facets."""
        rows = self._coefficients(facet_sizes).items()
        return pd.DataFrame([{"coefficient": k, "value": v, "band": koo_li_band(v)} for k, v in rows])

    @staticmethod
    def band(value: float) -> str:
        """Koo & Li (2016) interpretation of a reliability coefficient."""
        return koo_li_band(value)

    # ---------------------------------------------------------- bootstrap
    def bootstrap(self, n_resamples: int = 1000, *, level: float = 0.95, random_state: Any = None,
                  executor: Any = None, progress: bool = True,
                  facet_sizes: Mapping[str, float] | None = None) -> VCABootstrap:
        """Parametric-bootstrap intervals of the variance components and reliability coefficients.

        The method of ``lme4::bootMer(m, FUN, nsim = n_resamples, seed = s, use.u = FALSE, type =
        "parametric")`` with ``FUN = function(x) as.data.frame(VarCorr(x))$vcov``: ``n_resamples``
        response vectors are simulated from the fitted model with new random effects
        (``simulate(m, nsim, seed = s, re.form = NA)``, one ``set.seed``: an int ``random_state``
        is R's seed ``s``; a SeedSequence or Generator gives one such int, None a fresh one), the
        model is refitted to each (``lme4::refit``: same REML/ML estimator, optimizer started at
        the fitted theta), and the variance components of every refit are read from ``VarCorr``.
        The reliability coefficients of :meth:`reliability` (phi and E rho² at ``facet_sizes``,
        plus intra-/inter-rater reliability for rater x occasion designs) are computed from each
        replicate's components.

        ``table``: component (the components, then the coefficients), role, estimate (the
        fit's value), std_error (SD of the replicates, ddof = 1), conf_low, conf_high (percentile
        interval: the (1 - level)/2 and (1 + level)/2 quantiles of the replicates with R's
        ``quantile(type = 7)`` rule, numpy's ``linear``), n_resamples, n_failed. ``distribution``:
        one row per replicate (NaN where the refit failed). Refits that fail are left out and
        counted; refits that warn (e.g. convergence checks) are kept, as bootMer keeps them, and
        counted (``n_warned``); singular refits are normal here and counted (``n_singular``).

        The refits run in chunks (one R call each), in this process or on the ``executor``'s
        workers (None, an int or ``"processes"``, or a ``dask.distributed.Client``; each worker
        receives the fitted R model itself, serialized, once per call). The responses are always simulated here, so the
        replicates agree with every executor to optimizer precision (two R processes are two
        optimizer runs; where a component is near zero the likelihood is flat and the runs may
        stop further apart -- 1e-4 relative was seen for a zero occasion component).

        Caveats: REML variance components are biased in small samples and a component near
        zero has a point mass at 0 in its replicates; a component estimated as zero is simulated
        as zero, so its interval does not say how large it could be (a ``boundary`` warning).
        """
        n = check_n_resamples(n_resamples, minimum=2)
        level = require_level(level)
        sizes = dict(facet_sizes or {})
        self._sizes(sizes)  # validates the facet names and sizes
        fit = self.model
        if fit is None or not self._groups:
            raise DataError("this VCAResult has no fitted model to bootstrap; run me.variance_components(...) again")
        g = refit_guard("the variance-component bootstrap", n, fit.nobs, executor)
        seed = r_seed(random_state)
        ysim = fit.simulate(n, random_state=seed, re="unconditional")
        parts = _vca_refits(fit, ysim, progress, executor, g)
        return _bootstrap_result(self, parts, n=n, level=level, seed=seed, sizes=sizes,
                                 executor=resolve_executor(executor).name)


@dataclass(frozen=True, repr=False)
class VCABootstrap(_WorkflowResult):
    """Parametric-bootstrap intervals of variance components (see :meth:`VCAResult.bootstrap`).

    ``table``: component, role (object / facet / interaction / nested / residual, or
    ``reliability`` for phi, g_coefficient, intra_rater, inter_rater), estimate, std_error,
    conf_low, conf_high, n_resamples, n_failed. ``distribution``: the replicates, one row each,
    one column per table row (NaN rows for failed refits). ``random_state``: the int given to R's
    ``set.seed``, so ``random_state=result.random_state`` repeats the draws.
    """

    table: Any
    distribution: Any
    n_resamples: int
    n_failed: int
    n_warned: int
    n_singular: int
    level: float
    random_state: int
    facet_sizes: dict[str, float]
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _main_table = "table"
    _print_tables = ("table",)
    _skip_in_dict = ("distribution",)

    @property
    def _title(self) -> str:  # type: ignore[override]
        return (f"Parametric bootstrap of the variance components ({self.n_resamples - self.n_failed}/"
                f"{self.n_resamples} refits, {self.level:.0%} percentile intervals; lme4::bootMer's method)")

    def _scalars(self):
        return [("random_state", self.random_state), ("failed refits", self.n_failed),
                ("refits that warned", self.n_warned), ("singular refits", self.n_singular)]


#: refits per R call (the progress bar's step; the results do not depend on it)
_REFIT_CHUNK = 25


def _refit_task(token: str, ysim: np.ndarray, model_bytes: bytes) -> dict[str, Any]:
    """In a worker: the caller's model (:func:`worker_model`), then ``me_vca_refit`` of the columns
    of ``ysim``."""
    return _bridge.vca_refit(worker_model(token, model_bytes), ysim)


def _vca_refits(fit: Any, ysim: np.ndarray, progress: bool, executor: Any, g: LoopGuard) -> dict[str, Any]:
    """The refits of every column of ``ysim`` in chunks, here or on the executor's workers,
    combined in replicate order; the first chunk is timed by ``g``."""
    runner = resolve_executor(executor)
    n = ysim.shape[1]
    desc = "variance-component bootstrap refits"
    g.start()
    if runner.name == "in-process":
        parts = []
        for a, b in chunks(n, _REFIT_CHUNK, progress, desc):
            parts.append(_bridge.vca_refit(fit, ysim[:, a:b]))
            g.block_done(b)
    else:
        size = max(1, min(_REFIT_CHUNK, -(-n // (2 * runner.n_workers))))
        token = uuid.uuid4().hex
        tasks = [(token, ysim[:, a:a + size]) for a in range(0, n, size)]
        parts = g.map(runner, _refit_task, tasks, first_units=min(size, n), shared=_bridge.serialize_model(fit),
                      progress=progress, desc=desc)
    return {"vcov": np.vstack([p["vcov"] for p in parts]), "groups": parts[0]["groups"],
            **{k: np.concatenate([p[k] for p in parts]) for k in ("singular", "failed", "warned")},
            "problem": [m for p in parts for m in p["problem"]]}


def _interval_rows(dist: pd.DataFrame, ok: np.ndarray, level: float) -> dict[str, np.ndarray]:
    """std_error (ddof = 1) and percentile bounds (numpy's linear rule = R's type 7) per column
    over the replicates ``ok``."""
    vals = dist.to_numpy(dtype=float)[ok]
    alpha = 1.0 - level
    nan = np.full(vals.shape[1], np.nan)
    if vals.shape[0] < 2:
        return {"std_error": nan, "conf_low": nan, "conf_high": nan}
    with np.errstate(invalid="ignore"):
        q = np.nanquantile(vals, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        return {"std_error": np.nanstd(vals, axis=0, ddof=1), "conf_low": q[0], "conf_high": q[1]}


def _bootstrap_warnings(vca: VCAResult, parts: dict[str, Any], n: int) -> list[ResultWarning]:
    failed, warned = parts["failed"], parts["warned"]
    problems = parts["problem"]
    out = []
    if failed.any():
        first = problems[int(np.argmax(failed))]
        out.append(ResultWarning("bootstrap_failed", f"{int(failed.sum())} of {n} refits failed and are left out "
                                 f"(first: {first})", "lme4"))
    if warned.any():
        first = problems[int(np.argmax(warned))]
        out.append(ResultWarning("convergence", f"{int(warned.sum())} of {n} refits warned; they are kept, as "
                                 f"lme4::bootMer keeps them (first: {first})", "lme4"))
    if n - int(failed.sum()) < 2:
        out.append(ResultWarning("bootstrap_failed", "fewer than 2 usable refits: no intervals", "mixedeval"))
    if vca.zero_components:
        out.append(ResultWarning(
            "boundary", f"component(s) estimated as zero ({', '.join(vca.zero_components)}) are simulated as zero, so "
            "their intervals do not show how large they could be", "mixedeval"))
    return out


def _bootstrap_result(vca: VCAResult, parts: dict[str, Any], *, n: int, level: float, seed: int,
                      sizes: dict[str, float], executor: str) -> VCABootstrap:
    """The table and replicates of :meth:`VCAResult.bootstrap` from the refits' variances."""
    name_of = dict(vca._groups)  # noqa: SLF001 - the result's own mapping
    cols = {name_of[g]: parts["vcov"][:, j] for j, g in enumerate(parts["groups"])}
    comps = [str(c) for c in vca.table["component"]]
    with np.errstate(invalid="ignore", divide="ignore"):  # NaN rows of failed refits stay NaN
        coefs = vca._coefficients(sizes, cols.__getitem__)  # noqa: SLF001 - the result's own method
    dist = pd.DataFrame({**{c: cols[c] for c in comps}, **coefs})
    dist.index.name = "replicate"
    ok = ~parts["failed"]
    estimate = [vca.variance(c) for c in comps] + list(vca._coefficients(sizes).values())  # noqa: SLF001
    roles = list(vca.table["role"]) + ["reliability"] * len(coefs)
    tab = pd.DataFrame({"component": list(dist.columns), "role": roles, "estimate": np.asarray(estimate, dtype=float),
                        **_interval_rows(dist, ok, level), "n_resamples": n, "n_failed": int((~ok).sum())})
    prov = dict(vca.provenance)
    prov.update({"method": "parametric bootstrap (lme4::simulate(re.form = NA) + lme4::refit), as lme4::bootMer "
                 "with use.u = FALSE", "random_state": seed, "n_resamples": n, "interval": "percentile (type 7)",
                 "executor": executor, "facet_sizes": dict(sizes)})
    return VCABootstrap(table=tab, distribution=dist, n_resamples=n, n_failed=int((~ok).sum()),
                        n_warned=int(parts["warned"].sum()), n_singular=int(np.nansum(parts["singular"])),
                        level=float(level), random_state=seed, facet_sizes=dict(sizes),
                        warnings=tuple(_bootstrap_warnings(vca, parts, n)), provenance=prov)


def _ratio(num: Any, den: Any) -> Any:
    """``num / den`` where ``den > 0``, NaN elsewhere; a float for scalars, an array for arrays."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return float(out) if out.ndim == 0 else out


# ------------------------------------------------------------------ ANOVA check
def anova_components(df, score: str, obj: str, facet: str, interaction: bool):
    """ANOVA expected-mean-squares estimates for a balanced crossed object x facet design.

    With ``k`` observations per cell, ``n`` objects and ``m`` facet levels:
    ``E[MS_obj] = s2_e + k s2_of + k m s2_obj`` (interaction in the model) or ``s2_e + k m
    s2_obj`` (additive model; the interaction and within-cell sums of squares are pooled into the
    residual). Returns a table: component, df, sum_sq, mean_sq, anova_variance. Estimates may be
    negative (they are not truncated).
    """
    y = df[score].to_numpy(dtype=float)
    a_codes, a_lev = pd.factorize(df[obj], sort=True)
    b_codes, b_lev = pd.factorize(df[facet], sort=True)
    n, m = len(a_lev), len(b_lev)
    cells = np.zeros((n, m))
    np.add.at(cells, (a_codes, b_codes), 1)
    k = int(cells.flat[0])
    if not np.all(cells == k) or k < 1:
        raise DataError(f"the {obj!r} x {facet!r} design is not balanced (cells hold different numbers of rows)")
    sums = np.zeros((n, m))
    np.add.at(sums, (a_codes, b_codes), y)
    cell_mean = sums / k
    grand = y.mean()
    a_mean = cell_mean.mean(axis=1)
    b_mean = cell_mean.mean(axis=0)
    ss_a = m * k * np.sum((a_mean - grand) ** 2)
    ss_b = n * k * np.sum((b_mean - grand) ** 2)
    ss_ab = k * np.sum((cell_mean - a_mean[:, None] - b_mean[None, :] + grand) ** 2)
    ss_e = float(np.sum((y - cell_mean[a_codes, b_codes]) ** 2))
    df_a, df_b, df_ab, df_e = n - 1, m - 1, (n - 1) * (m - 1), n * m * (k - 1)
    ms_a, ms_b = ss_a / df_a, ss_b / df_b
    if interaction:
        if k < 2:
            raise DataError("an object x facet interaction needs more than one observation per cell")
        ms_ab, ms_e = ss_ab / df_ab, ss_e / df_e
        rows = [
            (obj, df_a, ss_a, ms_a, (ms_a - ms_ab) / (m * k)),
            (facet, df_b, ss_b, ms_b, (ms_b - ms_ab) / (n * k)),
            (f"{obj}:{facet}", df_ab, ss_ab, ms_ab, (ms_ab - ms_e) / k),
            ("Residual", df_e, ss_e, ms_e, ms_e),
        ]
    else:
        ss_r, df_r = ss_ab + ss_e, df_ab + df_e
        ms_r = ss_r / df_r
        rows = [
            (obj, df_a, ss_a, ms_a, (ms_a - ms_r) / (m * k)),
            (facet, df_b, ss_b, ms_b, (ms_b - ms_r) / (n * k)),
            ("Residual", df_r, ss_r, ms_r, ms_r),
        ]
    return pd.DataFrame(rows, columns=["component", "df", "sum_sq", "mean_sq", "anova_variance"])


def _anova_check(df, score, obj, facets, terms, vc_table):
    """The ANOVA cross-check table when the design is a balanced crossed object x facet one."""
    if len(facets) != 1 or any(t.role == "nested" for t in terms):
        return None
    facet = facets[0]
    inter = [t for t in terms if t.role == "interaction"]
    if inter and (len(inter) > 1 or set(inter[0].variables) != {obj, facet}):
        return None
    counts = df.groupby([obj, facet], observed=True).size()
    n_cells = df[obj].nunique() * df[facet].nunique()
    if len(counts) != n_cells or counts.nunique() != 1:
        return None
    tab = anova_components(df, score, obj, facet, interaction=bool(inter))
    if inter:  # name the interaction row as the model term
        tab.loc[2, "component"] = inter[0].name
    reml = dict(zip(vc_table["component"], vc_table["variance"]))
    tab["reml_variance"] = [reml.get(c, np.nan) for c in tab["component"]]
    tab["difference"] = tab["reml_variance"] - tab["anova_variance"]
    return tab


# --------------------------------------------------------------------- main
def variance_components(
    data: Any,
    score: str,
    object: str,  # noqa: A002 - the G-theory name
    facets: Sequence[str] = (),
    interactions: Sequence[str | Sequence[str]] | str = (),
    nested: str | Sequence[str] | None = None,
    reml: bool = True,
    *,
    optimizer: str = "nloptwrap",
    calc_derivs: bool = True,
) -> VCAResult:
    """Variance components of ``score`` over the object of measurement and facets (REML).

    Parameters
    ----------
    data : score table (pandas/polars/pyarrow or a path); never modified.
    score : numeric response column.
    object : the objects of measurement (e.g. ``"sentence_id"``); its component is the
        "true-score" variance.
    facets : columns whose levels replicate the measurement (raters, occasions, seeds,
        meta-parameters); one random intercept each. Each must be crossed with ``object``.
    interactions : extra random intercepts for combinations, ``"sentence:rater"`` or
        ``("sentence", "rater")``; ``"all"`` adds every two-way interaction of object and facets.
    nested : ``"a/b"`` terms expanded as lme4 does to ``(1|a) + (1|a:b)`` (e.g.
        ``"learning_rate/src_length_class"``, Hagmann 2023 Eq. 3.15).
    reml : REML (default, as the thesis) or ML.
    optimizer, calc_derivs : lme4 ``lmerControl`` settings (``calc_derivs=False`` skips the
        finite-difference gradient/Hessian check, which dominates the time on large grids).

    Returns
    -------
    VCAResult with ``table`` (component, role, variance, std_dev, percent), ``singular`` and the
    named ``zero_components``, ``phi()``, ``g_coefficient()``, ``d_study()``, ``intra_rater()``,
    ``inter_rater()``, ``reliability()``, and ``anova_check`` for balanced two-way designs.
    """
    if not isinstance(object, str) or not object:
        raise DataError("object must name the column of the objects of measurement, e.g. object='sentence_id'")
    facets = [str(f) for f in ([facets] if isinstance(facets, str) else facets)]
    df = as_pandas(data)
    df.columns = [str(c) for c in df.columns]
    terms = _build_terms(object, facets, interactions, nested)
    df, warnings = _check_design(df, object, facets, terms, score)
    frame, formula, grp_of, alias = _model_frame(df, score, terms)
    fit = lmm(formula, frame, reml=reml, optimizer=optimizer, df_method="asymptotic", calc_derivs=calc_derivs)
    tab = _component_table(fit.random, grp_of, terms)
    zero = _zero_components(tab)
    warnings += [w for w in fit.warnings if w.kind != "singular"]
    if fit.singular or zero:
        warnings.append(ResultWarning(
            "singular",
            "boundary (singular) fit: " + (f"component(s) estimated as zero: {', '.join(zero)}" if zero else
                                           "lme4::isSingular is TRUE") +
            " (normal in variance-component analysis; the zero components are reported, not dropped)",
            "lme4",
        ))
    check = _anova_check(df, score, object, facets, terms, tab)
    if check is not None and (check["anova_variance"] < 0).any():
        neg = ", ".join(check.loc[check["anova_variance"] < 0, "component"])
        warnings.append(ResultWarning(
            "negative_anova_estimate",
            f"ANOVA estimate(s) negative for {neg}; REML truncates them at zero, so the two estimators differ there",
        ))
    prov = dict(fit.provenance)
    prov.update({"workflow": "variance_components", "r_function": "lmerTest::lmer + lme4::VarCorr",
                 "calc_derivs": bool(calc_derivs)})
    inv = {a: v for v, a in alias.items()}
    display_formula = re.sub(r"[A-Za-z._][A-Za-z0-9._]*", lambda mo: inv.get(mo.group(0), mo.group(0)), formula)
    return VCAResult(table=tab, object=object, facets=tuple(facets), formula=display_formula, reml=bool(reml),
                     singular=bool(fit.singular), zero_components=zero, nobs=fit.nobs, anova_check=check,
                     warnings=tuple(warnings), provenance=prov, model=fit,
                     _terms=tuple([*terms, _Term("Residual", "residual", ())]),
                     _groups=(*((g, t.name) for g, t in grp_of.items()), ("Residual", "Residual")))


def _model_frame(df, score: str, terms: list[_Term]):
    """``(frame, formula, {grouping factor: term}, {column: alias})``: the columns renamed to
    syntactic aliases, grouping factors as strings (explicit, code-point-sorted levels), and
    ``score ~ 1 + (1|g1) + ...``."""
    variables = list(dict.fromkeys(v for t in terms for v in t.variables))
    taken: set[str] = set()
    alias = {v: _alias(v, taken) for v in [*variables, score]}
    frame = pd.DataFrame({alias[score]: df[score].to_numpy(dtype=float, na_value=np.nan),
                          **{alias[v]: df[v].to_numpy() for v in variables}})
    for v in variables:
        frame[alias[v]] = frame[alias[v]].astype(str)
    frame.attrs[ROWS_CHECKED] = True  # the caller's whole table was checked in _check_design
    grp_of = {":".join(alias[v] for v in t.variables): t for t in terms}
    formula = f"{alias[score]} ~ 1 + " + " + ".join(f"(1|{g})" for g in grp_of)
    return frame, formula, grp_of, alias


def _component_table(rand, grp_of: dict[str, _Term], terms: list[_Term]):
    """component, role, variance, std_dev, percent from ``fit.random``, mapped to the terms by
    grouping-factor name and sorted by variance (largest first; model order among ties)."""
    comp_rows, found = [], set()
    for g, var in zip(rand["group"].astype(str), rand["variance"].astype(float)):
        if g == "Residual":
            comp_rows.append(("Residual", "residual", var))
            continue
        if g not in grp_of:
            raise MixedEvalError(f"internal: lme4 returned the unexpected grouping factor {g!r} (expected {sorted(grp_of)})")
        found.add(g)
        comp_rows.append((grp_of[g].name, grp_of[g].role, var))
    if found != set(grp_of):
        raise MixedEvalError(f"internal: components {sorted(set(grp_of) - found)} missing from VarCorr")
    tab = pd.DataFrame(comp_rows, columns=["component", "role", "variance"])
    tab["variance"] = tab["variance"].clip(lower=0.0)
    tab["std_dev"] = np.sqrt(tab["variance"])
    total = tab["variance"].sum()
    tab["percent"] = 100.0 * tab["variance"] / total if total > 0 else np.nan
    order = {t.name: i for i, t in enumerate(terms)}
    order["Residual"] = len(terms)
    tab["_o"] = tab["component"].map(order)
    tab = tab.sort_values(["variance", "_o"], ascending=[False, True], kind="mergesort").drop(columns="_o")
    return tab.reset_index(drop=True)[["component", "role", "variance", "std_dev", "percent"]]


def _zero_components(tab) -> tuple[str, ...]:
    """Components whose SD relative to the residual SD is below :data:`ZERO_TOL`."""
    sigma = float(np.sqrt(tab.loc[tab["component"] == "Residual", "variance"].iloc[0]))
    return tuple(c for c, role, sd in zip(tab["component"], tab["role"], tab["std_dev"])
                 if role != "residual" and (sigma == 0 or sd / sigma < ZERO_TOL))


__all__ = ["KOO_LI_BANDS", "VCABootstrap", "VCAResult", "anova_components", "koo_li_band", "variance_components"]
