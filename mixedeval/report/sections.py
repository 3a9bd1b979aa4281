"""The sections of the HTML report, one builder per analysis.

Every builder takes the :class:`Context` and returns a :class:`~mixedeval.report.blocks.Section`.
Result objects are used duck-typed through their documented fields (``.table``,
``.summary()``, ``.r2_marginal`` ...), so the report renders whatever parts of an analysis exist.
Builders raise freely: :func:`build` turns an exception into a visible error in that section.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .blocks import Section, as_frame, fmt_cell, fmt_number, fmt_p, one_line

#: section id -> heading; the order of the report
TITLES: dict[str, str] = {
    "design": "Data design",
    "model": "Model",
    "fixed": "Fixed effects",
    "random": "Random effects",
    "anova": "ANOVA with partial eta²",
    "lrt": "Likelihood-ratio tests",
    "emmeans": "Estimated marginal means",
    "contrasts": "Contrasts",
    "r2_icc": "R² and ICC",
    "diagnostics": "Residual diagnostics",
    "bootstrap": "Bootstrap",
    "vca": "Variance components and reliability",
    "disparity": "Language disparity",
    "extra": "Additional tables",
    "provenance": "Provenance",
}

#: sections shown only when their input is present
OPTIONAL = ("bootstrap", "vca", "disparity", "extra")
#: model sections -> the result they show (None: the fit itself); shown when a fit or that result is given
MODEL_SECTIONS = {"model": None, "fixed": None, "random": None, "anova": "anova", "lrt": "comparison",
                  "emmeans": "emmeans", "contrasts": "contrasts", "r2_icc": ("r2", "icc"), "diagnostics": "diagnostics"}


@dataclass
class Context:
    """Everything the builders may use."""

    fit: Any = None
    data: Any = None
    design_factors: Any = None
    results: dict[str, Any] = field(default_factory=dict)
    absent: dict[str, tuple[str, str]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    bootstrap: Any = None
    vca: Any = None
    vca_grid: Any = None
    disparity: Any = None
    extra_tables: Any = None
    seeds: dict[str, Any] = field(default_factory=dict)
    input_files: list[str] = field(default_factory=list)


def build(section_id: str, ctx: Context) -> Section:
    """Run the builder of ``section_id``; an exception becomes an error note in the section."""
    sec = Section(section_id, TITLES[section_id])
    try:
        BUILDERS[section_id](sec, ctx)
    except Exception as exc:  # noqa: BLE001 - never sink the report for one section
        sec.set_status("error")
        sec.blocks.append({"kind": "error", "text": f"this section failed: {type(exc).__name__}: {one_line(exc)}"})
    return sec


def _needs(sec: Section, ctx: Context, key: str) -> Any:
    """The result ``key`` or None, marking the section not available with the recorded reason."""
    value = ctx.results.get(key)
    if value is None:
        status, reason = ctx.absent.get(key, ("not_available", "not available: not computed for this report"))
        sec.set_status(status, reason[0].upper() + reason[1:])
    return value


def _warnings(sec: Section, obj: Any) -> None:
    ws = list(getattr(obj, "warnings", ()) or ())
    sec.warnings(ws)


def _origin(ctx: Context, key: str) -> str:
    return " Computed for this report by mixedeval." if ctx.origin.get(key) == "computed" else ""


# --------------------------------------------------------------------------------- design
def _design_factors(ctx: Context, data: Any) -> list[str]:
    import pandas as pd  # noqa: PLC0415

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
    import pandas as pd  # noqa: PLC0415

    from ..data.design import describe_design  # noqa: PLC0415

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


def model(sec: Section, ctx: Context) -> None:
    fit = _needs_fit(sec, ctx)
    if fit is None:
        return
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
    _warnings(sec, fit)
    problems = []
    if not fit.converged:
        problems.append("the optimizer did not converge")
    if fit.singular:
        problems.append("the fit is singular (a variance component is zero or a correlation ±1)")
    if problems:
        sec.set_status("warning", "Attention: " + "; ".join(problems) + ".")
    sec.headline = f"{est}, {fit.optimizer}; " + ("converged" if fit.converged else "NOT converged") + \
        ("; singular" if fit.singular else "; not singular")


def fixed(sec: Section, ctx: Context) -> None:
    fit = _needs_fit(sec, ctx)
    if fit is None:
        return
    level = int(round(100 * float(getattr(fit, "level", 0.95))))
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
    res = _needs(sec, ctx, "anova")
    if res is None:
        return
    tab = as_frame(res)
    typ, ddf = getattr(res, "type", None), getattr(res, "ddf", None)
    what = "F tests" + (f" (type {typ}" if typ else " (") + (f", {ddf} denominator df)" if ddf else ")")
    sec.table(tab, f"{what}; partial eta² with its one-sided interval as effectsize::eta_squared.{_origin(ctx, 'anova')}")
    _warnings(sec, res)
    if tab is not None and len(tab) and "p_value" in tab.columns:
        r = tab.sort_values("p_value").iloc[0]
        eta = f", partial eta² = {fmt_number(float(r['eta2_partial']))}" if "eta2_partial" in tab.columns else ""
        sec.headline = (f"{r['term']}: F({fmt_number(float(r['num_df']))}, {fmt_number(float(r['den_df']))}) = "
                        f"{fmt_number(float(r['f_value']))}, p = {fmt_p(float(r['p_value']))}{eta}")


def lrt(sec: Section, ctx: Context) -> None:
    res = _needs(sec, ctx, "comparison")
    if res is None:
        return
    items = list(res) if isinstance(res, (list, tuple)) else [res]
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
    res = _needs(sec, ctx, "emmeans")
    if res is None:
        return
    tab = as_frame(res)
    level = int(round(100 * float(getattr(res, "level", 0.95))))
    dfm = getattr(res, "df_method", None)
    sec.table(tab, f"EMMs with {level}% intervals" + (f" ({dfm} df)" if dfm else "") + "." + _origin(ctx, "emmeans"))
    _warnings(sec, res)
    if {"emmean", "conf_low", "conf_high"} <= set(tab.columns):
        from .figures import interval_plot  # noqa: PLC0415

        fig = sec.guarded("EMM plot", interval_plot, _labels(tab, _label_columns(tab, "emmean")), tab["emmean"],
                          tab["conf_low"], tab["conf_high"], xlabel="estimated marginal mean",
                          title=f"EMMs with {level}% confidence intervals")
        if fig is not None:
            sec.figure(fig, f"Estimated marginal means with {level}% confidence intervals")
        best = tab.loc[tab["emmean"].idxmax()]
        lab = " | ".join(str(best[c]) for c in _label_columns(tab, "emmean"))
        sec.headline = f"{len(tab)} means; highest {lab} = {fmt_number(float(best['emmean']))}"


def contrasts(sec: Section, ctx: Context) -> None:
    res = _needs(sec, ctx, "contrasts")
    if res is None:
        return
    tab = as_frame(res)
    adjust = getattr(res, "adjust", None)
    if adjust is None and "adjust" in tab.columns:
        adjust = ", ".join(map(str, tab["adjust"].unique()))
    method = getattr(res, "method", None)
    cap = (f"{method} contrasts" if isinstance(method, str) else "Contrasts") + \
        (f"; p-values adjusted by {adjust}" if adjust else "; p-value adjustment not reported") + \
        "; effect_size = estimate / residual SD." + _origin(ctx, "contrasts")
    sec.table(tab, cap)
    _warnings(sec, res)
    if {"estimate", "conf_low", "conf_high"} <= set(tab.columns):
        from .figures import interval_plot  # noqa: PLC0415

        fig = sec.guarded("contrast plot", interval_plot, _labels(tab, _label_columns(tab, "estimate")),
                          tab["estimate"], tab["conf_low"], tab["conf_high"], xlabel="difference", zero_line=True,
                          title="Contrasts with confidence intervals")
        if fig is not None:
            sec.figure(fig, "Contrasts with their confidence intervals (dashed line: no difference)")
    if "p_value" in tab.columns:
        n_sig = int((tab["p_value"] < 0.05).sum())
        sec.headline = f"{n_sig} of {len(tab)} contrasts with adjusted p < 0.05" + (f" ({adjust})" if adjust else "")


def r2_icc(sec: Section, ctx: Context) -> None:
    r2, icc = ctx.results.get("r2"), ctx.results.get("icc")
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
            if v is None and isinstance(obj, dict):
                v = obj.get(f)
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
    diag = _needs(sec, ctx, "diagnostics")
    if diag is None:
        return
    from ..diagnostics import plots  # noqa: PLC0415

    n_sim, seed = getattr(diag, "n_sim", None), getattr(diag, "seed", None)
    sec.text(f"Scaled residuals by DHARMa's algorithm from {n_sim} simulations "
             f"({getattr(diag, 'simulation', '')}, seed {seed}); uniform on (0, 1) under a correct model."
             + _origin(ctx, "diagnostics"))
    summary = diag.summary() if hasattr(diag, "summary") else None
    if summary is not None:
        sec.table(summary, "Verdicts")
        warn = summary[summary["verdict"] == "warning"]
        if len(warn):
            sec.set_status("warning", f"{len(warn)} check(s) flagged: {', '.join(map(str, warn['name']))}.")
        sec.headline = "all checks ok" if not len(warn) else f"{len(warn)} flagged: {', '.join(map(str, warn['name'][:4]))}"
    drop = ["reason"] if summary is not None else []
    sec.table(diag.tests.drop(columns=drop, errors="ignore"), "Tests of the simulated residuals")
    if getattr(diag, "group_tests", None) is not None:
        sec.table(diag.group_tests, "Uniformity within each level of the grouping factor (KS, Holm)")
    if getattr(diag, "checks", None) is not None:
        sec.table(diag.checks.drop(columns=drop, errors="ignore"), "Classical checks")
    figs: list[tuple[str, Callable[..., Any], str]] = [
        ("Scaled residuals: uniform QQ plot and residuals against predictions", plots.plot_dharma, "png"),
    ]
    if getattr(diag, "group", None) is not None:
        figs.append(("Scaled residuals by level of the grouping factor", plots.plot_residuals_by_group, "png"))
    if getattr(diag, "conditional_residuals", None) is not None:
        figs.append(("Conditional residuals against fitted values", plots.plot_residuals_vs_fitted, "png"))
        figs.append(("Normal QQ plot of the conditional residuals", plots.plot_qq_normal, "png"))
    if getattr(diag, "ranef", None):
        figs.append(("Normal QQ plots of the random effects (BLUPs)", plots.plot_ranef_qq, "png"))
    for caption, func, fmt in figs:
        fig = sec.guarded(caption, func, diag)
        if fig is not None:
            sec.figure(fig, caption, fmt=fmt)
    _warnings(sec, diag)


# ----------------------------------------------------------------------------- resampling
def _call_or_attr(obj: Any, name: str) -> Any:
    val = getattr(obj, name, None)
    return val() if callable(val) else val


def bootstrap(sec: Section, ctx: Context) -> None:
    boot = ctx.bootstrap
    settings = [(k, getattr(boot, k)) for k in ("n_resamples", "resample", "statistic", "aggregate", "ci", "level",
                                                 "random_state") if getattr(boot, k, None) is not None]
    sec.kv(settings, caption="Settings")
    summ = sec.guarded("summary()", _call_or_attr, boot, "summary")
    if summ is not None:
        sec.table(summ, "Per system: observed statistic, bootstrap standard error and interval")
        if {"estimate", "conf_low", "conf_high"} <= set(summ.columns):
            from .figures import interval_plot  # noqa: PLC0415

            fig = sec.guarded("summary plot", interval_plot, _labels(summ, _label_columns(summ, "estimate")),
                              summ["estimate"], summ["conf_low"], summ["conf_high"], xlabel="estimate",
                              title="Bootstrap intervals")
            if fig is not None:
                sec.figure(fig, "Per-system estimates with bootstrap intervals")
    pw = sec.guarded("pairwise()", _call_or_attr, boot, "pairwise")
    if pw is not None:
        adj = pw.attrs.get("p_adjust") or pw.attrs.get("adjust") or "holm"
        sec.table(pw, f"Paired differences (shared draws); p_adj by {adj}; effect_size = delta / SD of the delta "
                      "distribution")
        if "p_adj" in pw.columns:
            sec.headline = f"{int((pw['p_adj'] < 0.05).sum())} of {len(pw)} pairs with adjusted p < 0.05"
    ranks = sec.guarded("ranks()", _call_or_attr, boot, "ranks")
    if ranks is not None:
        sec.table(ranks, "Rank distribution (rank 1 = best)")
        from .figures import rank_heatmap  # noqa: PLC0415

        fig = sec.guarded("rank heatmap", rank_heatmap, ranks)
        if fig is not None:
            sec.figure(fig, "Rank probabilities P(rank = k) over the bootstrap draws")
    _warnings(sec, boot)


# ---------------------------------------------------------------------- variance components
def _coefficient(value: Any) -> Any:
    """A reliability coefficient as a float, or the result object's main number."""
    if isinstance(value, (int, float)):
        return float(value)
    for name in ("value", "coefficient", "estimate", "phi", "g_coefficient"):
        v = getattr(value, name, None)
        if isinstance(v, (int, float)):
            return float(v)
    return value


def vca(sec: Section, ctx: Context) -> None:
    from .figures import d_study_plot  # noqa: PLC0415

    v = ctx.vca
    tab = as_frame(v)
    sec.table(tab, "Variance components (REML), percent of the summed estimated components")
    if getattr(v, "formula", None):
        sec.text(f"Model: {v.formula} (" + ("REML" if getattr(v, "reml", True) else "ML") + ").")
    if getattr(v, "singular", False):
        sec.set_status("warning", "Singular fit: components estimated at zero are reported as zero.")
    if getattr(v, "anova_check", None) is not None:
        sec.table(as_frame(v.anova_check), "Cross-check: ANOVA expected-mean-squares estimates (balanced design)")
    rel = sec.guarded("reliability()", v.reliability) if hasattr(v, "reliability") else None
    if rel is not None:
        sec.table(rel, "Reliability with one level of each facet (phi: absolute, g_coefficient: relative; "
                       "bands by Koo & Li 2016)")
        vals = dict(zip(rel["coefficient"], rel["value"]))
        sec.headline = ", ".join(f"{k} = {fmt_number(float(x))}" for k, x in list(vals.items())[:2])
    pairs = []
    for name in ("phi", "g_coefficient") if rel is None else ():
        val = sec.guarded(f"{name}()", _call_or_attr, v, name)
        if val is not None:
            val = _coefficient(val)
            pairs.append((name, val if isinstance(val, float) else str(val)))
            band = getattr(v, "interpret", None)
            if isinstance(val, float) and callable(band):
                b = sec.guarded("interpretation", band, val)
                if b is not None:
                    pairs.append((f"{name} band (Koo & Li)", str(b)))
    sec.kv(pairs, caption="Reliability with one level of each facet (phi: absolute, G: relative)")
    zero = getattr(v, "zero_components", ())
    if zero:
        sec.text(f"Components estimated at zero (singular fit): {', '.join(map(str, zero))}.")
    if pairs:
        sec.headline = ", ".join(f"{k} = {fmt_cell(val, k)}" for k, val in pairs if isinstance(val, float))
    grid = ctx.vca_grid if ctx.vca_grid is not None else _default_grid(v, tab)
    if grid:
        ds = sec.guarded("d_study()", v.d_study, grid)
        if ds is not None:
            ds = as_frame(ds)
            sec.table(ds, "D-study: reliability over numbers of facet levels averaged over")
            fig = sec.guarded("D-study plot", d_study_plot, ds, title="D-study")
            if fig is not None:
                sec.figure(fig, "D-study: coefficients by number of facet levels (dotted: Koo & Li bands)")
    _warnings(sec, v)


def _default_grid(v: Any, tab: Any) -> dict[str, list[int]] | None:
    facets = list(getattr(v, "facets", None) or ())
    if not facets:
        return None
    return {f: [1, 2, 3, 5, 10] if i == 0 else [1, 3] for i, f in enumerate(facets[:2])}


# ------------------------------------------------------------------------------- disparity
def _disparity_parts(d: Any) -> tuple[Any, Any, Any]:
    """(main result, parametric bootstrap, robustness refit) from one result or a list of them."""
    items = list(d) if isinstance(d, (list, tuple)) else [d]
    main = next((x for x in items if hasattr(x, "by_model")), None)
    boot = next((x for x in items if hasattr(x, "languages") and hasattr(x, "n_boot")), None)
    rob = next((x for x in items if hasattr(x, "agreement")), None)
    return main, boot, rob


def disparity(sec: Section, ctx: Context) -> None:
    d, boot, rob = _disparity_parts(ctx.disparity)
    if d is None:
        sec.set_status("not_available", "No language-disparity result (with by_model) was given.")
    else:
        ref = getattr(d, "reference", None)
        sec.kv([("reference levels", ", ".join(f"{k} = {v}" for k, v in ref.items()) if ref else None),
                ("language-potential convention", getattr(d, "lp_convention", None)),
                ("aggregate records dropped", getattr(d, "n_aggregates_dropped", None))])
        sec.table(as_frame(d, "by_model"), "Per model: performance realisation ratio (PRR = score / performance "
                                             "potential), its mean, SD and coefficient of variation")
        _disparity_lp(sec, as_frame(d, "language_potential"), boot)
        diag = as_frame(d, "diagnostics") if not callable(getattr(d, "diagnostics", None)) else None
        if diag is not None:
            sec.table(diag, "Diagnostics the authors reported (Shapiro-Wilk on residuals, Levene across languages)")
    if boot is not None:
        sec.table(as_frame(boot, "models"), f"Parametric bootstrap ({getattr(boot, 'n_used', '?')} of "
                                            f"{getattr(boot, 'n_boot', '?')} refits, seed {getattr(boot, 'seed', '?')}):"
                                            " intervals for mean PRR and CV-PRR with rank intervals")
        sec.table(as_frame(boot, "languages"), "Parametric bootstrap: language potential with intervals and ranks")
        _warnings(sec, boot)
    if rob is not None:
        sec.table(as_frame(rob, "agreement"), f"Robustness: rankings without the {getattr(rob, 'k', '?')} records "
                                              "with the largest |residual|")
        sec.table(as_frame(rob, "changes"), "Robustness: units whose rank moved")
        _warnings(sec, rob)
    if d is not None:
        sec.table(as_frame(d, "records"), "Records with performance potential (pp) and realisation ratio (prr)",
                  max_rows=50)
        _warnings(sec, d)


def _disparity_lp(sec: Section, lp: Any, boot: Any) -> None:
    if lp is None:
        return
    sec.table(lp, "Language potential (intercept + language effect + mean task effect), ranked")
    if not {"language", "potential"} <= set(lp.columns):
        return
    from .figures import bar_plot  # noqa: PLC0415

    lps = lp.sort_values("potential", ascending=False)
    lo = hi = None
    blang = as_frame(boot, "languages") if boot is not None else None
    if blang is not None and {"language", "conf_low", "conf_high"} <= set(blang.columns):
        ci = blang.set_index("language").reindex(lps["language"])
        lo, hi = ci["conf_low"].to_numpy(), ci["conf_high"].to_numpy()
    fig = sec.guarded("language-potential plot", bar_plot, lps["language"], lps["potential"],
                      xlabel="language potential", title="Language potential", conf_low=lo, conf_high=hi)
    if fig is not None:
        sec.figure(fig, "Language potential by language (highest first)" +
                   ("; whiskers: parametric-bootstrap intervals" if lo is not None else ""))
    sec.headline = f"{len(lp)} languages; highest potential {lps.iloc[0]['language']}, lowest {lps.iloc[-1]['language']}"


def extra(sec: Section, ctx: Context) -> None:
    items = ctx.extra_tables.items() if isinstance(ctx.extra_tables, dict) else enumerate(ctx.extra_tables, 1)
    for name, obj in items:
        tab = as_frame(obj)
        if tab is None:
            sec.text(f"{name}: {obj}")
        else:
            sec.table(tab, str(name))


# ------------------------------------------------------------------------------ provenance
def provenance(sec: Section, ctx: Context) -> None:
    from .provenance import collect  # noqa: PLC0415

    info = collect(ctx)
    sec.kv(info["software"], caption="Software")
    if info["settings"] is not None and len(info["settings"]):
        sec.table(info["settings"], "Settings recorded by each result")
    sec.kv(info["seeds"], caption="Seeds and simulation sizes")
    if info["inputs"] is not None and len(info["inputs"]):
        sec.table(info["inputs"], "Input files (SHA-256)")
    sec.kv(info["data"], caption="Data as analysed")


BUILDERS: dict[str, Callable[[Section, Context], None]] = {
    "design": design, "model": model, "fixed": fixed, "random": random, "anova": anova, "lrt": lrt,
    "emmeans": emmeans, "contrasts": contrasts, "r2_icc": r2_icc, "diagnostics": diagnostics,
    "bootstrap": bootstrap, "vca": vca, "disparity": disparity, "extra": extra, "provenance": provenance,
}
