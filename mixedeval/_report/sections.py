"""The model sections of the HTML report, the data design, extra tables and provenance.

Every builder takes the section and the :class:`Context`. Model sections show the results of
one fitted model (given, or computed by :mod:`mixedeval.report.compute`), each of which may be
a list (several comparisons, several EMMs); the sections of other results are built by
:mod:`mixedeval.report.result_sections`, chosen by type in :mod:`mixedeval.report.dispatch`.
Builders raise freely: :func:`build` turns an exception into a visible error in that section.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd

from ..data.design import describe_design
from ..diagnostics import plots
from .blocks import Section, as_frame, fmt_number, fmt_p, one_line
from .figures import interval_plot
from .result_sections import rank_interval_block
from .provenance import collect

#: model section id -> heading, in report order
MODEL_TITLES: dict[str, str] = {
    "model": "Model",
    "fixed": "Fixed effects",
    "random": "Random effects",
    "anova": "ANOVA with partial eta²",
    "lrt": "Likelihood-ratio tests",
    "emmeans": "Estimated marginal means",
    "contrasts": "Contrasts",
    "r2_icc": "R² and ICC",
    "diagnostics": "Residual diagnostics",
}
#: model sections -> the results they show (empty: the fit itself); shown with a fit, or when one of them is given
MODEL_SECTIONS: dict[str, tuple[str, ...]] = {
    "model": (), "fixed": (), "random": (), "anova": ("anova",), "lrt": ("comparison",), "emmeans": ("emmeans",),
    "contrasts": ("contrasts",), "r2_icc": ("r2", "icc"), "diagnostics": ("diagnostics",)}
#: the sections around the model and result sections ("model_check" only when a result warns
#: that its model does not suit the response)
FIRST = {"model_check": "Model choice", "design": "Data design"}
LAST = {"extra": "Additional tables", "provenance": "Provenance"}


@dataclass
class Context:
    """Everything the builders may use: the fit and its results by key (lists), the result
    sections' ``(kind, result)`` pairs, the data and the report's options."""

    fit: Any = None
    data: Any = None
    design_factors: Any = None
    results: dict[str, list[Any]] = field(default_factory=dict)
    absent: dict[str, tuple[str, str]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    items: list[tuple[Any, Any]] = field(default_factory=list)
    d_study_grid: Any = None
    extra_tables: list[tuple[str, Any]] = field(default_factory=list)
    input_files: list[str] = field(default_factory=list)

    def first(self, key: str) -> Any:
        vals = self.results.get(key)
        return vals[0] if vals else None


def guarded_build(section_id: str, title: str, builder: Callable[..., None], *args: Any) -> Section:
    """Run ``builder(section, *args)``; an exception becomes an error note in the section."""
    sec = Section(section_id, title)
    try:
        builder(sec, *args)
    except Exception as exc:  # noqa: BLE001 - never sink the report for one section
        sec.set_status("error")
        sec.blocks.append({"kind": "error", "text": f"this section failed: {type(exc).__name__}: {one_line(exc)}"})
    return sec


def build(section_id: str, ctx: Context) -> Section:
    """Build one of the fixed sections (design, model sections, extra, provenance)."""
    title = {**FIRST, **MODEL_TITLES, **LAST}[section_id]
    return guarded_build(section_id, title, BUILDERS[section_id], ctx)


def _needs(sec: Section, ctx: Context, key: str) -> list[Any]:
    """The results ``key`` (a list, empty when absent: the section is then marked with the
    recorded reason)."""
    value = ctx.results.get(key) or []
    if not value:
        status, reason = ctx.absent.get(key, ("not_available", "not available: not computed for this report"))
        sec.set_status(status, reason[0].upper() + reason[1:])
    return value


def _warnings(sec: Section, obj: Any) -> None:
    ws = list(getattr(obj, "warnings", ()) or ())
    sec.warnings(ws)


def _origin(ctx: Context, key: str) -> str:
    return " Computed for this report by mixedeval." if ctx.origin.get(key) == "computed" else ""


# ---------------------------------------------------------------------------- model check
def response_type_warnings(ctx: Context) -> list[Any]:
    """The ``response_type`` warnings of the fit and of every result in the report (once each)."""
    objs = [ctx.fit, *(obj for _, obj in ctx.items), *(v for vals in ctx.results.values() for v in vals)]
    seen: dict[str, Any] = {}
    for obj in objs:
        for w in getattr(obj, "warnings", ()) or ():
            if getattr(w, "kind", None) == "response_type":
                seen.setdefault(w.message, w)
    return list(seen.values())


def model_check(sec: Section, ctx: Context) -> None:
    """First section of a report whose model does not suit its response (e.g. a linear mixed
    model of 0/1 outcomes): the warning and the model to use instead."""
    ws = response_type_warnings(ctx)
    sec.set_status("warning", "The model does not suit the response; see below.")
    sec.headline = "a Gaussian model of a binary or count response"
    for w in ws:
        sec.text(w.message)


# --------------------------------------------------------------------------------- design
def _design_factors(ctx: Context, data: Any) -> list[str]:
    if ctx.design_factors:
        return list(ctx.design_factors)
    cols = []
    for c in data.columns:
        s = data[c]
        if isinstance(s.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(s.dtype) \
                or pd.api.types.is_bool_dtype(s.dtype):
            cols.append(str(c))
    for c in getattr(ctx.fit, "factors", ()) or ():
        if c in data.columns and c not in cols:
            cols.append(c)
    return cols


def design(sec: Section, ctx: Context) -> None:
    data = ctx.data if ctx.data is not None else getattr(ctx.fit, "data", None)
    if data is None:
        sec.set_status("not_available", "Not available: no data and no fitted model were given.")
        return
    factors = _design_factors(ctx, data)
    if not factors:
        sec.set_status("not_available", "No categorical columns to describe; pass design_factors=[...].")
        return
    desc = describe_design(data, factors)
    cells = desc.cell_counts
    sec.kv([("rows", desc.n_rows), ("factors", ", ".join(factors)), ("balanced", desc.balanced),
            ("rows per full cell", f"{cells['min']} to {cells['max']} over {cells['n_cells']} observed cells")])
    sec.table(desc.factors, "Levels and rows per level of each factor")
    if len(desc.relations):
        sec.table(desc.relations, "Crossed or nested: observed / possible combinations of levels of each pair")
    small = [f for f in factors if data[f].nunique() <= 12]
    for i, a in enumerate(small[:3]):
        for b in small[i + 1: 3]:
            tab = pd.crosstab(data[a], data[b]).reset_index()
            tab.columns = [str(c) for c in tab.columns]
            sec.table(tab, f"Rows per cell: {a} (rows) by {b} (columns)")
    fit = ctx.fit
    if fit is not None and getattr(fit, "response", None) in data.columns:
        y = pd.to_numeric(data[fit.response], errors="coerce")
        sec.kv([("mean", float(y.mean())), ("SD", float(y.std())), ("min", float(y.min())), ("max", float(y.max())),
                ("missing", int(y.isna().sum()))], caption=f"Response {fit.response}")
    crossed = [f"{r.factor_a} × {r.factor_b} {r.relation}" for r in desc.relations.itertuples()]
    sec.headline = f"{desc.n_rows} rows; " + ("; ".join(crossed[:2]) + "; " if crossed else "") + \
        ("balanced" if desc.balanced else "unbalanced")


# ---------------------------------------------------------------------------------- model
def _needs_fit(sec: Section, ctx: Context) -> Any:
    if ctx.fit is None:
        sec.set_status("not_available", "Not available: no fitted model was given.")
    return ctx.fit


def _glmm_model(sec: Section, fit: Any) -> str:
    """The model table of a GLMM (family, link, quadrature); returns the headline's start."""
    quad = "Laplace" if int(fit.nagq) == 1 else ("nAGQ = 0 (fast, approximate)" if int(fit.nagq) == 0
                                                   else f"adaptive Gauss-Hermite, {int(fit.nagq)} points")
    sec.kv([
        ("formula", fit.formula),
        ("fitted by", f"{fit.r_function}, {fit.family} family, {fit.link} link, {quad}"),
        ("optimizer", fit.optimizer),
        ("tests and intervals", "Wald z on the link scale (exp_ columns: odds / rate ratios)"),
        ("observations", fit.nobs),
        ("groups", ", ".join(f"{k}: {v}" for k, v in fit.ngroups.items())),
        *((f"dispersion {k}", float(v)) for k, v in (fit.dispersion or {}).items()),
        ("log-likelihood", float(fit.loglik)),
        ("AIC", float(fit.aic)),
        ("BIC", float(fit.bic)),
        ("converged", fit.converged),
        ("singular fit", fit.singular),
    ])
    return f"{fit.family} ({fit.link}), {fit.optimizer}"


def model(sec: Section, ctx: Context) -> None:
    fit = _needs_fit(sec, ctx)
    if fit is None:
        return
    if getattr(fit, "family", None) is not None:
        head = _glmm_model(sec, fit)
    else:
        head = _lmm_model(sec, fit)
    _warnings(sec, fit)
    problems = []
    if not fit.converged:
        problems.append("the optimizer did not converge")
    if fit.singular:
        problems.append("the fit is singular (a variance component is zero or a correlation ±1)")
    if problems:
        sec.set_status("warning", "Attention: " + "; ".join(problems) + ".")
    sec.headline = f"{head}; " + ("converged" if fit.converged else "NOT converged") + \
        ("; singular" if fit.singular else "; not singular")


def _lmm_model(sec: Section, fit: Any) -> str:
    est = "REML" if fit.reml else "ML"
    sec.kv([
        ("formula", fit.formula),
        ("fitted by", f"lmerTest::lmer (lme4), {est}"),
        ("optimizer", fit.optimizer),
        ("denominator df", fit.df_method),
        ("observations", fit.nobs),
        ("groups", ", ".join(f"{k}: {v}" for k, v in fit.ngroups.items())),
        ("residual SD (sigma)", float(fit.sigma)),
        ("log-likelihood" + (" (REML criterion)" if fit.reml else ""), float(fit.loglik)),
        ("AIC", float(fit.aic)),
        ("BIC", float(fit.bic)),
        ("converged", fit.converged),
        ("singular fit", fit.singular),
    ])
    return f"{est}, {fit.optimizer}"


def fixed(sec: Section, ctx: Context) -> None:
    fit = _needs_fit(sec, ctx)
    if fit is None:
        return
    level = int(round(100 * float(getattr(fit, "level", 0.95))))
    if getattr(fit, "family", None) is not None:
        ratio = f"; exp_ columns: {fit.exp_label.replace('_', ' ')}s" if getattr(fit, "exp_label", None) else ""
        sec.table(fit.fixed, f"Estimates on the {fit.link} scale with Wald z tests and {level}% Wald intervals "
                             f"(summary of {fit.r_function}){ratio}")
        return
    sec.table(fit.fixed, f"Estimates with {fit.df_method} df, t tests and {level}% Wald t intervals "
                         "(summary(m) of lmerTest)")


def random(sec: Section, ctx: Context) -> None:
    fit = _needs_fit(sec, ctx)
    if fit is None:
        return
    tab = fit.random.copy()
    var_rows = tab["term2"].isna() if "term2" in tab.columns else None
    if var_rows is not None and var_rows.any():
        total = float(tab.loc[var_rows, "variance"].sum())
        if total > 0:
            tab["percent"] = (100 * tab["variance"] / total).where(var_rows)
    sec.table(tab, "Variance components (VarCorr); percent of the summed variances; Residual last")
    if fit.singular:
        sec.set_status("warning", "Singular fit: at least one component is estimated at the boundary (zero).")


# -------------------------------------------------------------------------------- inference
def anova(sec: Section, ctx: Context) -> None:
    for res in _needs(sec, ctx, "anova"):
        tab = as_frame(res)
        typ, ddf = getattr(res, "type", None), getattr(res, "ddf", None)
        if tab is not None and "chisq" in tab.columns:  # GLMM: Wald chi-square tests (car::Anova)
            sec.table(tab, f"Type {typ or 'III'} Wald chi-square tests (car::Anova, sum-to-zero contrasts)."
                           f"{_origin(ctx, 'anova')}")
            _warnings(sec, res)
            if len(tab):
                r = tab.sort_values("p_value").iloc[0]
                sec.headline = (f"{r['term']}: chi²({fmt_number(float(r['df']))}) = {fmt_number(float(r['chisq']))}, "
                                f"p = {fmt_p(float(r['p_value']))}")
            continue
        what = "F tests" + (f" (type {typ}" if typ else " (") + (f", {ddf} denominator df)" if ddf else ")")
        sec.table(tab, f"{what}; partial eta² with its one-sided interval as effectsize::eta_squared."
                       f"{_origin(ctx, 'anova')}")
        _warnings(sec, res)
        if tab is not None and len(tab) and "p_value" in tab.columns:
            r = tab.sort_values("p_value").iloc[0]
            eta = f", partial eta² = {fmt_number(float(r['eta2_partial']))}" if "eta2_partial" in tab.columns else ""
            sec.headline = (f"{r['term']}: F({fmt_number(float(r['num_df']))}, {fmt_number(float(r['den_df']))}) = "
                            f"{fmt_number(float(r['f_value']))}, p = {fmt_p(float(r['p_value']))}{eta}")


def lrt(sec: Section, ctx: Context) -> None:
    items = _needs(sec, ctx, "comparison")
    heads = []
    for i, comp in enumerate(items, 1):
        tab = as_frame(comp)
        est = getattr(comp, "estimator", None)
        if est is None and tab is not None and "estimator" in tab.columns:
            est = ", ".join(str(v) for v in tab["estimator"].dropna().unique())
        cap = f"Comparison {i}" if len(items) > 1 else "Model comparison"
        cap += f"; log-likelihoods and chi-square by {est}" if est else ""
        sec.table(tab, cap + "." + _origin(ctx, "comparison"))
        pb = as_frame(getattr(comp, "pb", None))
        if pb is not None:
            sec.table(pb, "Parametric bootstrap (pbkrtest::PBmodcomp)")
        _warnings(sec, comp)
        if tab is not None and "chisq" in tab.columns and tab["chisq"].notna().any():
            r = tab[tab["chisq"].notna()].iloc[-1]
            heads.append(f"chi²({fmt_number(float(r['df']))}) = {fmt_number(float(r['chisq']))}, "
                         f"p = {fmt_p(float(r['p_value']))}")
    sec.headline = "; ".join(heads) or None


def _label_columns(tab: Any, value_col: str) -> list[str]:
    cols = list(tab.columns)
    return cols[: cols.index(value_col)] if value_col in cols else cols[:1]


def _labels(tab: Any, cols: list[str]) -> list[str]:
    return [" | ".join(str(v) for v in row) for row in tab[cols].itertuples(index=False, name=None)]


def emmeans(sec: Section, ctx: Context) -> None:
    for res in _needs(sec, ctx, "emmeans"):
        tab = as_frame(res)
        level = int(round(100 * float(getattr(res, "level", 0.95))))
        dfm = getattr(res, "df_method", None)
        sec.table(tab, f"EMMs with {level}% intervals" + (f" ({dfm} df)" if dfm else "") + "." +
                  _origin(ctx, "emmeans"))
        _warnings(sec, res)
        if not {"emmean", "conf_low", "conf_high"} <= set(tab.columns):
            continue
        fig = sec.guarded("EMM plot", interval_plot, _labels(tab, _label_columns(tab, "emmean")), tab["emmean"],
                          tab["conf_low"], tab["conf_high"], xlabel="estimated marginal mean",
                          title=f"EMMs with {level}% confidence intervals")
        if fig is not None:
            sec.figure(fig, f"Estimated marginal means with {level}% confidence intervals")
        _emm_ranks(sec, res)
        d = getattr(res, "direction", None)
        hib = bool(getattr(d, "higher_is_better", True))
        best = tab.loc[tab["emmean"].idxmax() if hib else tab["emmean"].idxmin()]
        lab = " | ".join(str(best[c]) for c in _label_columns(tab, "emmean"))
        sec.headline = (f"{len(tab)} means; best {lab} = {fmt_number(float(best['emmean']))}"
                        + (f" ({d.word})" if d is not None else ""))


def _emm_ranks(sec: Section, res: Any) -> None:
    """Simultaneous rank intervals of the means (joint normal of the EMMs; rank 1 = best in the
    direction of the response, :attr:`EMMResult.direction`)."""
    if not callable(getattr(res, "ranks", None)) or getattr(res, "by", ()) or getattr(res, "kind", "") != "emmeans":
        return
    scale = " (link scale)" if hasattr(res, "estimate_label") else ""
    d = getattr(res, "direction", None)
    best = f"rank 1 = best: {d.note}" if d is not None else "rank 1 = highest"
    rank_interval_block(sec, "ranks()", lambda: res.ranks(random_state=1),
                        f"Simultaneous {{level}} rank intervals of the means{scale}, {best} (all means at "
                        "once, Mogstad et al. 2024, from emmeans' covariance of the means) and compact letters: means "
                        "sharing a letter are not significantly different",
                        "Simultaneous rank intervals of the means with compact letters")


def _effect_size_note(res: Any) -> str:
    kind = getattr(res, "effect_size", None)
    if not isinstance(kind, str):
        kind = (getattr(res, "provenance", None) or {}).get("effect_size")
    return f"; effect_size standardized by the {kind} SD" if isinstance(kind, str) else ""


def contrasts(sec: Section, ctx: Context) -> None:
    for res in _needs(sec, ctx, "contrasts"):
        tab = as_frame(res)
        adjust = getattr(res, "p_adjust", None) or getattr(res, "adjust", None)
        method = getattr(res, "method", None)
        cap = (f"{method} contrasts" if isinstance(method, str) else "Contrasts") + \
            ("; p_value unadjusted, p_adj adjusted by " + str(adjust) if adjust else "") + \
            _effect_size_note(res) + "." + _origin(ctx, "contrasts")
        sec.table(tab, cap)
        _warnings(sec, res)
        if {"estimate", "conf_low", "conf_high"} <= set(tab.columns):
            label = str(getattr(res, "estimate_label", "difference"))
            ratio = label.endswith("ratio")
            fig = sec.guarded("contrast plot", interval_plot, _labels(tab, _label_columns(tab, "estimate")),
                              tab["estimate"], tab["conf_low"], tab["conf_high"], xlabel=label.replace("_", " "),
                              zero_line=True, null_value=1.0 if ratio else 0.0,
                              title="Contrasts with confidence intervals")
            if fig is not None:
                sec.figure(fig, f"Contrasts with their confidence intervals (dashed line: no difference, "
                                f"{label.replace('_', ' ')} = {1 if ratio else 0})")
        p_col = "p_adj" if "p_adj" in tab.columns else "p_value"
        if p_col in tab.columns:
            n_sig = int((tab[p_col] < 0.05).sum())
            sec.headline = f"{n_sig} of {len(tab)} contrasts with {p_col} < 0.05" + (f" ({adjust})" if adjust else "")


def r2_icc(sec: Section, ctx: Context) -> None:
    r2, icc = ctx.first("r2"), ctx.first("icc")
    if r2 is None and icc is None:
        _needs(sec, ctx, "r2")
        return
    pairs: list[tuple[str, Any]] = []
    for obj, fields, key in ((r2, ("r2_marginal", "r2_conditional"), "r2"),
                             (icc, ("icc_adjusted", "icc_unadjusted"), "icc")):
        if obj is None:
            status, reason = ctx.absent.get(key, ("not_available", "not available"))
            sec.set_status(status, f"{key.upper()}: {reason}.")
            continue
        for f in fields:
            v = getattr(obj, f, None)
            if v is not None:
                pairs.append((f, float(v)))
        _warnings(sec, obj)
    src = r2 if r2 is not None else icc
    for f in ("var_fixed", "var_random", "var_residual"):
        if isinstance(getattr(src, f, None), (int, float)):
            pairs.append((f, float(getattr(src, f))))
    sec.kv(pairs, caption="Nakagawa-Schielzeth R² (MuMIn's r.squaredGLMM definition) and ICC (performance::icc)")
    comps = as_frame(src, "components")
    if comps is not None:
        sec.table(comps, "Variance contributions")
    sec.headline = ", ".join(f"{k} = {fmt_number(v)}" for k, v in pairs if not k.startswith("var_")) or None


# ------------------------------------------------------------------------------ diagnostics
def diagnostics(sec: Section, ctx: Context) -> None:
    for diag in _needs(sec, ctx, "diagnostics"):
        _one_diagnostics(sec, diag, _origin(ctx, "diagnostics"))
    cells = ctx.absent.get("diagnostics_cells")
    if cells is not None:
        sec.text(cells[1])


def _one_diagnostics(sec: Section, diag: Any, origin: str) -> None:
    prov = getattr(diag, "provenance", None) or {}
    if prov.get("aggregated"):
        sec.text(f"Responses summed within {prov.get('n_groups', 'the')} cells (grouping level x factor, e.g. item x "
                 "system: DHARMa's recalculateResiduals), simulated with the fitted random effects kept. A single "
                 "0/1 outcome cannot be overdispersed; the sums over a cell's runs can, when the model leaves out an "
                 "effect of the cell, and the dispersion test here looks for that (alternative 'greater').")
    sec.text(f"Scaled residuals by DHARMa's algorithm from {diag.n_sim} simulations "
             f"({diag.simulation}, random_state {diag.random_state}); uniform on (0, 1) under a correct model."
             + origin)
    summary = diag.summary()
    sec.table(summary, "Verdicts")
    warn = summary[summary["verdict"] == "warning"]
    if len(warn):
        sec.set_status("warning", f"{len(warn)} check(s) flagged: {', '.join(map(str, warn['name']))}.")
    sec.headline = "all checks ok" if not len(warn) else f"{len(warn)} flagged: {', '.join(map(str, warn['name'][:4]))}"
    sec.table(diag.tests.drop(columns=["reason"], errors="ignore"), "Tests of the simulated residuals")
    if diag.group_tests is not None:
        sec.table(diag.group_tests, "Uniformity within each level of the grouping factor (KS, Holm)")
    if diag.checks is not None:
        sec.table(diag.checks.drop(columns=["reason"], errors="ignore"), "Classical checks")
    figs: list[tuple[str, Callable[..., Any]]] = [
        ("Scaled residuals: uniform QQ plot and residuals against predictions", plots.plot_dharma)]
    if diag.group is not None:
        figs.append(("Scaled residuals by level of the grouping factor", plots.plot_residuals_by_group))
    if diag.conditional_residuals is not None:
        figs.append(("Conditional residuals against fitted values", plots.plot_residuals_vs_fitted))
        figs.append(("Normal QQ plot of the conditional residuals", plots.plot_qq_normal))
    if diag.ranef:
        figs.append(("Normal QQ plots of the random effects (BLUPs)", plots.plot_ranef_qq))
    for caption, func in figs:
        fig = sec.guarded(caption, func, diag)
        if fig is not None:
            sec.figure(fig, caption, fmt="png")
    _warnings(sec, diag)


# ------------------------------------------------------------------------------- extra tables
def extra(sec: Section, ctx: Context) -> None:
    for name, obj in ctx.extra_tables:
        tab = as_frame(obj)
        if tab is None:
            sec.text(f"{name}: {obj}")
        else:
            sec.table(tab, str(name))


# ------------------------------------------------------------------------------ provenance
def provenance(sec: Section, ctx: Context) -> None:
    info = collect(ctx)
    sec.kv(info["software"], caption="Software")
    if info["settings"] is not None and len(info["settings"]):
        sec.table(info["settings"], "Settings recorded by each result")
    sec.kv(info["random_states"], caption="Random states and simulation sizes")
    if info["inputs"] is not None and len(info["inputs"]):
        sec.table(info["inputs"], "Input files (SHA-256)")
    sec.kv(info["data"], caption="Data as analysed")


BUILDERS: dict[str, Callable[[Section, Context], None]] = {
    "model_check": model_check, "design": design, "model": model, "fixed": fixed, "random": random, "anova": anova, "lrt": lrt,
    "emmeans": emmeans, "contrasts": contrasts, "r2_icc": r2_icc, "diagnostics": diagnostics,
    "extra": extra, "provenance": provenance,
}
