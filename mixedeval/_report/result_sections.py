"""Section builders of the results that are not parts of one model: resampling results,
workflow results, and anything else with a main table.

Every builder is ``builder(section, result, context)``; :mod:`mixedeval.report.dispatch` chooses
it by the result's type. :func:`generic` renders any result from the protocol all mixedeval
results share (the title, the scalars they print, ``.table`` and the tables they print); the
other builders add the figures and reliability tables of their result type.
"""
from __future__ import annotations

from typing import Any

from .blocks import Section, as_frame, fmt_cell, fmt_number
from .figures import _figure, bar_plot, d_study_plot, interval_plot, rank_heatmap, rank_interval_plot


#: the label of a rank interval read from the replicates of one system's rank (quantiles of its rank)
MARGINAL = "marginal rank interval (each system on its own: quantiles of its rank over the replicates)"


def _warnings(sec: Section, obj: Any) -> None:
    """The result's warnings about its headline; those of its checks are counted here and shown
    in the section "Warnings of the checks"."""
    from .answer import primary_warnings, secondary_warnings  # noqa: PLC0415 - answer imports this module's figures

    sec.warnings(primary_warnings(obj))
    n = len(secondary_warnings(obj))
    if n:
        sec.text(f"{n} warning(s) of the checks (secondary analyses, not the headline) are shown in the section "
                 "\"Warnings of the checks\".", css="table-note")


def _scalars(obj: Any) -> list[tuple[str, Any]]:
    pairs = obj._scalars() if hasattr(obj, "_scalars") else []  # noqa: SLF001 - the ResultMixin protocol
    return [(str(k), v if isinstance(v, (int, float, str, bool)) else str(v)) for k, v in pairs]


def _other_tables(obj: Any, main: Any) -> list[tuple[str, Any]]:
    """The tables the result prints, without its main table (by name or by content)."""
    names = {"table", getattr(obj, "_main_table", "table")}
    tables = obj._tables() if hasattr(obj, "_tables") else []  # noqa: SLF001 - the ResultMixin protocol
    return [(name, df) for name, df in tables
            if name not in names and not (main is not None and df.shape == main.shape and df.equals(main))]


def generic(sec: Section, obj: Any, ctx: Any = None) -> None:
    """Title, settings, the main table (``.table``) and the other tables the result prints."""
    title = str(getattr(obj, "_title", "") or "")
    if title and not sec.title.startswith(title):
        sec.text(title)
    pairs = _scalars(obj)
    sec.kv(pairs, caption="Settings and summary")
    main = as_frame(obj)
    sec.table(main, f"Main table (.table of {type(obj).__name__})")
    for name, df in _other_tables(obj, main):
        sec.table(df, name)
    _warnings(sec, obj)
    if pairs:
        sec.headline = ", ".join(f"{k}: {fmt_cell(v, k)}" for k, v in pairs[:2])


def compare_logs(sec: Section, res: Any, ctx: Any = None) -> None:
    """me.compare_logs: the headline difference in points first (table and forest plot), then the
    model-based check (likelihood-ratio test, contrasts, EMMs), the paired bootstrap and the data."""
    sec.kv(_scalars(res), caption="Settings and summary")
    head = res.table.copy()
    methods = "; ".join(dict.fromkeys(str(m) for m in head.get("method", [])))
    sec.table(head.drop(columns="method", errors="ignore"),
              "Difference in mean score between two systems on their shared questions (delta = a - b; 0.05 is 5 "
              f"points); epochs averaged within each question. Method: {methods or 'none'}; p_adj adjusts over "
              f"pairs and tasks ({res.provenance.get('adjust')})")
    if len(head):
        forest = head.assign(pair=head["system_a"].astype(str) + " - " + head["system_b"].astype(str))
        _interval_figure(sec, forest[["task", "pair", "delta", "conf_low", "conf_high"]], "delta",
                         "Differences with their intervals (a - b), per task", xlabel=f"difference in {res.metric}",
                         title="Paired differences")
    if getattr(res, "accuracies", None) is not None:
        sec.table(res.accuracies, "Accuracy per task and system with the intervals Inspect AI prints: mean of the "
                                  "epoch-averaged question scores, std_error and conf_low/conf_high as stderr() and "
                                  "ci() (t on n - 1 df), wilson_low/wilson_high for 0/1 scores, *_cluster: "
                                  "stderr(cluster=)")
    if getattr(res, "plan", None) is not None:
        sec.text(f"Next run: {res.plan_text()}")
        sec.table(res.plan.table.drop(columns=["alpha", "target"], errors="ignore"),
                  "How many questions the next run needs (the logs as a pilot for the headline pair): Miller's "
                  "closed form and the simulated paired t test, per number of epochs")
    sec.table(res.glrt, "Model-based check (secondary): likelihood-ratio test of the system effect (ML)")
    if getattr(res, "model_differences", None) is not None:
        sec.table(res.model_differences, "Model-based check (secondary): the GLMM's differences of population-averaged "
                                         "accuracies, on the headline's scale")
    sec.table(res.contrasts, f"Model-based check (secondary): {res.analysis} contrasts of the systems per task and "
                             "pooled (odds ratios for the binomial GLMM)")
    sec.table(res.emmeans, "Model-based check (secondary): estimated marginal means of the systems")
    sec.table(res.bootstrap, "Paired bootstrap of the epoch-averaged scores (questions, and runs when several)")
    for task in dict.fromkeys(res.means["task"]):  # one panel per task, then the pooled one
        means = res.means[res.means["task"] == task].drop(columns="task")
        _interval_figure(sec, means, "estimate", f"Mean {res.metric} per system with 95% bootstrap intervals: {task}",
                         xlabel=res.metric, title=str(task))
    _rank_intervals(sec, res)
    sec.table(res.data_summary, "Scores read from the logs (per system, task and metric)")
    _warnings(sec, res)
    sec.headline = res.headline_text()


def summarize(sec: Section, res: Any, ctx: Any = None) -> None:
    """me.summarize: the per task x system table (Inspect's mean, stderr and intervals) with an
    interval plot of the means, then the paired comparisons of the systems."""
    sec.kv(_scalars(res), caption="Settings and summary")
    tab = res.table
    sec.table(tab, "Per task and system: mean of the epoch-averaged question scores, std_error and conf_low/"
                   "conf_high as Inspect's stderr() and ci() (t on n - 1 df), wilson_low/wilson_high for 0/1 "
                   "scores; *_cluster columns: Inspect's clustered stderr/ci (clusters - 1 df); std_error_cr2: "
                   "clubSandwich's CR2")
    if len(tab):
        lo_hi = ("conf_low_cluster", "conf_high_cluster") if "conf_low_cluster" in tab.columns else (
            "conf_low", "conf_high")
        plot = tab[["task", "system", "mean_score", *lo_hi]].rename(columns=dict(zip(lo_hi, ("conf_low",
                                                                                           "conf_high"))))
        which = "clustered t" if lo_hi[0].endswith("_cluster") else "t"
        _interval_figure(sec, plot, "mean_score", f"Mean score per task and system with {which} intervals",
                         xlabel=str(res.metric or "score"), title="Mean scores")
    pw = res.pairwise
    sec.table(pw, "Paired differences on shared questions (delta = a - b, Miller 2024); test names the p-value's "
                  f"test; p_adj adjusts over pairs and tasks ({res.provenance.get('adjust')})")
    _warnings(sec, res)
    sec.headline = (f"{int((pw['p_adj'] < 0.05).sum())} of {len(pw)} pairs with adjusted p < 0.05" if len(pw)
                    else f"{len(tab)} task x system rows, no pair of systems")


def _rank_intervals(sec: Section, res: Any) -> None:
    """Ranks of the systems over the bootstrap replicates of the pooled comparison: the share of
    replicates at each rank and the interval of the rank (rank 1 = best)."""
    boot = getattr(res, "boot_result", None)
    if boot is None or len(getattr(boot, "systems", ())) < 2:
        return
    ranks = sec.guarded("ranks()", _call_or_attr, boot, "ranks")
    if ranks is None:
        return
    sec.table(ranks, "Ranks of the systems over the bootstrap replicates (rank 1 = best): the share of replicates "
                     f"at each rank, the expected rank and the rank's 95% {MARGINAL} (the answer's leaderboard "
                     "leads with its own rank intervals, labelled there)")
    fig = sec.guarded("rank heatmap", rank_heatmap, ranks)
    if fig is not None:
        sec.figure(fig, "How often each system takes each rank")
    _simultaneous_ranks(sec, boot)


def rank_interval_block(sec: Section, what: str, compute: Any, caption: str, figure_caption: str) -> None:
    """A :class:`mixedeval.RankIntervals` computed by ``compute()`` (guarded) as a table and a
    :func:`rank_interval_plot`; ``caption`` may use ``{level}`` (the simultaneous level)."""
    ri = sec.guarded(what, compute)
    if ri is None:
        return
    sec.table(ri.table, caption.format(level=f"{ri.level:.0%}"))
    fig = sec.guarded("rank interval plot", rank_interval_plot, ri.table)
    if fig is not None:
        sec.figure(fig, figure_caption)


def _simultaneous_ranks(sec: Section, boot: Any) -> None:
    """Simultaneous rank intervals (Mogstad et al. 2024) and compact letters from the replicates."""
    if callable(getattr(boot, "rank_intervals", None)):
        rank_interval_block(sec, "rank_intervals()", boot.rank_intervals,
                            "Simultaneous {level} rank intervals (all systems at once; studentized bootstrap of all "
                            "pairwise differences, Mogstad et al. 2024) and compact letters: systems sharing a letter "
                            "are not significantly different", "Simultaneous rank intervals with compact letters")


# ------------------------------------------------------------------------------------ resampling
def _call_or_attr(obj: Any, name: str) -> Any:
    val = getattr(obj, name, None)
    return val() if callable(val) else val


def _interval_figure(sec: Section, tab: Any, value_col: str, caption: str, **kw: Any) -> None:
    if tab is None or not {value_col, "conf_low", "conf_high"} <= set(tab.columns):
        return
    cols = list(tab.columns)
    label_cols = cols[: cols.index(value_col)] or cols[:1]
    labels = [" | ".join(str(v) for v in row) for row in tab[label_cols].itertuples(index=False, name=None)]
    fig = sec.guarded(caption, interval_plot, labels, tab[value_col], tab["conf_low"], tab["conf_high"], **kw)
    if fig is not None:
        sec.figure(fig, caption)


def bootstrap(sec: Section, boot: Any, ctx: Any = None) -> None:
    """The hierarchical paired bootstrap: per-system intervals, paired differences, ranks."""
    sec.kv(_scalars(boot), caption="Settings")
    summ = sec.guarded(".table", as_frame, boot)
    if summ is not None:
        sec.table(summ, "Per system: observed statistic, bootstrap standard error and interval")
        _interval_figure(sec, summ, "estimate", "Per-system estimates with bootstrap intervals",
                         xlabel="estimate", title="Bootstrap intervals")
    pw = sec.guarded("pairwise()", _call_or_attr, boot, "pairwise")
    if pw is not None:
        adj = pw.attrs.get("p_adjust") or pw.attrs.get("adjust") or "holm"
        sec.table(pw, f"Paired differences (shared draws); p_value unadjusted, p_adj by {adj}")
        if "p_adj" in pw.columns:
            sec.headline = f"{int((pw['p_adj'] < 0.05).sum())} of {len(pw)} pairs with adjusted p < 0.05"
    ranks = sec.guarded("ranks()", _call_or_attr, boot, "ranks")
    if ranks is not None:
        sec.table(ranks, f"Rank distribution (rank 1 = best); rank_conf_low/rank_conf_high: {MARGINAL}; the "
                         "simultaneous intervals follow")

        fig = sec.guarded("rank heatmap", rank_heatmap, ranks)
        if fig is not None:
            sec.figure(fig, "Rank probabilities P(rank = k) over the bootstrap draws")
        _simultaneous_ranks(sec, boot)
    _warnings(sec, boot)


# --------------------------------------------------------------------------- variance components
def vca(sec: Section, v: Any, ctx: Any = None) -> None:
    """Components, the ANOVA cross-check, reliability coefficients and the D study."""
    sec.table(as_frame(v), "Variance components (REML), percent of the summed estimated components")
    sec.text(f"Model: {v.formula} (" + ("REML" if v.reml else "ML") + ").")
    if v.singular:
        sec.set_status("warning", "Singular fit: components estimated at zero are reported as zero.")
    if v.anova_check is not None:
        sec.table(v.anova_check, "Cross-check: ANOVA expected-mean-squares estimates (balanced design)")
    rel = sec.guarded("reliability()", v.reliability)
    if rel is not None:
        sec.table(rel, "Reliability with one level of each facet (phi: absolute, g_coefficient: relative; "
                       "bands by Koo & Li 2016)")
        vals = dict(zip(rel["coefficient"], rel["value"]))
        sec.headline = ", ".join(f"{k} = {fmt_number(float(x))}" for k, x in list(vals.items())[:2])
    if v.zero_components:
        sec.text(f"Components estimated at zero (singular fit): {', '.join(map(str, v.zero_components))}.")
    grid = getattr(ctx, "d_study_grid", None) or _default_grid(v)
    if grid:
        ds = sec.guarded("d_study()", v.d_study, grid)
        if ds is not None:
            sec.table(ds, "D-study: reliability over numbers of facet levels averaged over")
            fig = sec.guarded("D-study plot", d_study_plot, ds, title="D-study")
            if fig is not None:
                sec.figure(fig, "D-study: coefficients by number of facet levels (dotted: Koo & Li bands)")
    _warnings(sec, v)


def _default_grid(v: Any) -> dict[str, list[int]] | None:
    facets = list(v.facets or ())
    if not facets:
        return None
    return {f: [1, 2, 3, 5, 10] if i == 0 else [1, 3] for i, f in enumerate(facets[:2])}


def reproducibility(sec: Section, rep: Any, ctx: Any = None) -> None:
    """The generic section with the findings in words first."""
    for line in rep.findings:
        sec.text(line)
    generic(sec, rep, ctx)


# ------------------------------------------------------------------------------------ disparity
def disparity(sec: Section, d: Any, ctx: Any = None) -> None:
    """PRR per model, language potential (plot), the authors' diagnostics and the records."""
    ref = d.reference
    sec.kv([("reference levels", ", ".join(f"{k} = {v}" for k, v in ref.items()) if ref else None),
            ("language-potential convention", d.lp_convention),
            ("aggregate records dropped", d.n_aggregates_dropped)])
    sec.table(d.by_model, "Per model: performance realisation ratio (PRR = score / performance potential), its "
                          "mean, SD and coefficient of variation")
    lp = d.language_potential
    sec.table(lp, "Language potential (intercept + language effect + mean task effect), ranked")
    _lp_figure(sec, lp["language"], lp["potential"], None, None, "Language potential by language (highest first)")
    sec.headline = f"{len(lp)} languages; highest potential {lp.iloc[0]['language']}, lowest {lp.iloc[-1]['language']}"
    sec.table(d.diagnostics, "Diagnostics the authors reported (Shapiro-Wilk on residuals, Levene across languages)")
    sec.table(d.records, "Records with performance potential (pp) and realisation ratio (prr)", max_rows=50)
    _warnings(sec, d)


def _lp_figure(sec: Section, languages: Any, values: Any, lo: Any, hi: Any, caption: str) -> None:
    fig = sec.guarded("language-potential plot", bar_plot, languages, values, xlabel="language potential",
                      title="Language potential", conf_low=lo, conf_high=hi)
    if fig is not None:
        sec.figure(fig, caption)


def disparity_bootstrap(sec: Section, boot: Any, ctx: Any = None) -> None:
    """Intervals for mean PRR, CV-PRR and LP with rank intervals, and the LP plot with them."""
    sec.kv(_scalars(boot), caption="Settings")
    sec.table(boot.models, f"Parametric bootstrap ({boot.n_used} of {boot.n_resamples} refits, random_state "
                           f"{boot.random_state}): intervals for mean PRR and CV-PRR with rank intervals")
    lang = boot.languages
    sec.table(lang, "Parametric bootstrap: language potential with intervals and ranks")
    _lp_figure(sec, lang["language"], lang["potential"], lang["conf_low"], lang["conf_high"],
               "Language potential by language; whiskers: parametric-bootstrap percentile intervals")
    sec.headline = f"{boot.n_used} of {boot.n_resamples} refits used, level {boot.level:g}"
    _warnings(sec, boot)


def potential_intervals(sec: Section, pi: Any, ctx: Any = None) -> None:
    """Analytic t intervals for the language potential, with their plot."""
    tab = pi.table
    sec.kv(_scalars(pi), caption="Settings")
    sec.table(tab, f"Language potential with {pi.level:.0%} t intervals ({pi.df_method} df, {pi.estimator} fit)")
    _lp_figure(sec, tab["language"], tab["estimate"], tab["conf_low"], tab["conf_high"],
               "Language potential by language; whiskers: t intervals")
    sec.headline = f"{len(tab)} languages, {pi.df_method} df"
    _warnings(sec, pi)


# ----------------------------------------------------------------------------------- power
def _design_blocks(sec: Section, res: Any) -> None:
    """The design simulated from and the parameters used (variance components, effect)."""
    d = getattr(res, "design", None)
    if d is not None:
        sec.kv(_scalars(d), caption="Design (me.design)")
        sec.table(d.components, "Variance components of the design")
    params = getattr(res, "parameters", None)
    if params is not None:
        sec.table(params, "Parameters simulated from (lme4 names: beta fixed effects with the effect of interest, "
                          "theta relative covariance factors, sigma residual SD)")


def power(sec: Section, res: Any, ctx: Any = None) -> None:
    """One power estimate: the design, its parameters, power with its Monte-Carlo interval."""
    sec.kv(_scalars(res), caption="Settings and result")
    sec.table(res.table, f"Power: share of {res.n_sim} simulated analyses rejecting at alpha {res.alpha:g}; "
                         f"Clopper-Pearson {res.level:.0%} interval")
    _design_blocks(sec, res)
    sec.headline = f"power {fmt_number(res.power)} [{fmt_number(res.conf_low)}, {fmt_number(res.conf_high)}] ({res.test})"
    _warnings(sec, res)


def _power_curve_figure(table: Any, along: str, target: float | None):
    fig = _figure((5.6, 3.8))
    ax = fig.add_subplot()
    x = table["n_levels"].to_numpy(dtype=float)
    y = table["power"].to_numpy(dtype=float)
    ax.fill_between(x, table["conf_low"].to_numpy(dtype=float), table["conf_high"].to_numpy(dtype=float),
                    color="#1f5f99", alpha=0.18, lw=0, label="Clopper-Pearson interval")
    ax.plot(x, y, marker="o", ms=4, lw=1.5, color="#1f5f99", label="power")
    if target is not None:
        ax.axhline(target, color="#888888", ls=":", lw=1, label=f"target {target:g}")
    ax.set(xlabel=f"number of {along}", ylabel="power", ylim=(0, 1.02))
    ax.grid(color="#eeeeee", lw=0.8)
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def power_curve(sec: Section, res: Any, ctx: Any = None) -> None:
    """A power curve (or the curve of a sample-size search) with its plot."""
    sec.kv(_scalars(res), caption="Settings and result")
    sec.table(res.table, f"Power by number of {res.along} (Clopper-Pearson {res.level:.0%} intervals)")
    fig = sec.guarded("power curve plot", _power_curve_figure, res.table, res.along, getattr(res, "target", None))
    if fig is not None:
        sec.figure(fig, f"Power by number of {res.along}; band: Monte-Carlo interval")
    first = (getattr(res, "results", None) or (getattr(getattr(res, "curve", None), "results", None) or (None,)))[0]
    if first is not None:
        _design_blocks(sec, first)
    if hasattr(res, "n_levels"):
        sec.headline = (f"{res.n_levels} {res.along} for power {res.target:g} (Monte-Carlo range "
                        f"{res.n_levels_low} to {res.n_levels_high})")
    _warnings(sec, res)


def minimum_detectable_effect(sec: Section, res: Any, ctx: Any = None) -> None:
    """The minimum detectable effect with the power at each effect evaluated."""
    sec.kv(_scalars(res), caption="Settings and result")
    sec.table(res.table, "Power at each effect evaluated (same simulations shifted by the effect)")
    if res.results:
        _design_blocks(sec, res.results[0])
    sec.headline = (f"differences below {fmt_number(res.effect)} are not detected with power {res.target:g} "
                    f"({res.test})")
    _warnings(sec, res)
