"""Diagnostic plots (matplotlib, headless).

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot (no display, no
global state), so ``fig.savefig("x.png")`` / ``"x.svg"`` works on a server. Pass ``ax=`` to draw
into an existing Axes (its figure is returned). matplotlib is imported only here, when a plot is
drawn.

DHARMa-style plots of the scaled residuals: :func:`plot_qq_uniform` (``plotQQunif``, tests
annotated), :func:`plot_residuals_vs_predicted` (``plotResiduals``: rank-transformed predictions,
reference lines at 0.25/0.5/0.75, optional binned quantiles -- not DHARMa's qgam curves),
:func:`plot_residuals_by_group` (``testCategorical``'s boxplots), :func:`plot_dharma` (the two
first side by side, as ``plot(simulationOutput)``), :func:`plot_simulation_test` (the histogram
of a simulation test's summaries with the observed value, as DHARMa's ``testDispersion`` /
``testZeroInflation`` / ``testGeneric`` plots; for integer responses the dispersion and
zero-inflation histograms are the ones to read). Classical plots: :func:`plot_residuals_vs_fitted`,
:func:`plot_qq_normal` (conditional residuals) and :func:`plot_ranef_qq` (BLUPs).

Text is drawn as given (:func:`plain_text`): a group or term name holding ``$`` or ``\\`` is not
matplotlib math text or TeX.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.stats import norm, rankdata

from .._format import fmt_p
from .core import as_group
from .result import Diagnostics, SimulationTest
from .simtests import test_categorical, test_dispersion, test_zero_inflation

_QUANTILES = (0.25, 0.5, 0.75)
_RED = "#d62728"


def _figure(ax=None, figsize=(5.5, 4.5)):
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib loads only when a figure is drawn; _report.sections imports this module

    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def plain_text(fig: Any) -> Any:
    """``fig`` with every text drawn as given (``parse_math=False``, ``usetex=False``): names from the
    data such as ``$\\frac{a}{b$`` are not matplotlib math text (which would fail to parse) or TeX.
    The figure is laid out once (tick labels are made then) with the same settings, so its tick
    labels are plain too."""
    import matplotlib  # noqa: PLC0415 - matplotlib loads only when a figure is drawn
    from matplotlib.text import Text  # noqa: PLC0415 - matplotlib loads only when a figure is drawn

    def plain() -> None:
        for t in fig.findobj(Text):
            t.set_parse_math(False)
            t.set_usetex(False)

    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        plain()
        fig.draw_without_rendering()
        plain()
    return fig


def _plain(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: the figure a plot function returns goes through :func:`plain_text`."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return plain_text(func(*args, **kwargs))
    return wrapper


def _point_style(n: int) -> dict[str, Any]:
    return {"s": 6 if n > 2000 else 14, "alpha": 0.35 if n > 2000 else 0.7, "linewidths": 0}


def rank_transform(x: np.ndarray) -> np.ndarray:
    """DHARMa's ``rankTransform``: average ranks divided by their maximum."""
    r = rankdata(np.asarray(x, dtype=float), method="average")
    return r / r.max()


def ppoints(n: int) -> np.ndarray:
    """R's ``ppoints(n)``: (i - a) / (n + 1 - 2a), a = 3/8 for n <= 10, else 1/2."""
    a = 3 / 8 if n <= 10 else 0.5
    return (np.arange(1, n + 1) - a) / (n + 1 - 2 * a)


def _test_row(diag: Diagnostics, test: str):
    rows = diag.tests[diag.tests["test"] == test]
    return None if rows.empty else rows.iloc[0]


@_plain
def plot_qq_uniform(diag: Diagnostics, ax=None):
    """QQ plot of the scaled residuals against U(0, 1) with the uniformity (KS), dispersion and
    outlier tests annotated (red when p < alpha), as DHARMa's ``plotQQunif``."""
    fig, ax = _figure(ax)
    res = np.sort(diag.residuals)
    n = res.size
    ax.scatter((np.arange(1, n + 1) - 0.5) / n, res, color="black", **_point_style(n))
    ax.plot([0, 1], [0, 1], color=_RED, lw=1)
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="Expected", ylabel="Observed", title="QQ plot residuals")
    labels = {"uniformity": "KS test", "dispersion": "Dispersion test", "outliers": "Outlier test"}
    y = 0.97
    for test, label in labels.items():
        row = _test_row(diag, test)
        if row is None:
            continue
        bad = row["verdict"] == "warning"
        ax.text(0.03, y, f"{label}: p = {fmt_p(row['p_value'])}", transform=ax.transAxes, va="top", fontsize=8, color=_RED if bad else "black")
        ax.text(0.03, y - 0.05, "Deviation significant" if bad else "Deviation n.s.", transform=ax.transAxes, va="top", fontsize=8, color=_RED if bad else "black")
        y -= 0.12
    return fig


def _binned_quantiles(x: np.ndarray, y: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(x, kind="stable")
    bins = np.array_split(order, n_bins)
    centres = np.array([x[b].mean() for b in bins])
    qs = np.array([np.quantile(y[b], _QUANTILES) for b in bins])
    return centres, qs


#: below this many distinct predictions, DHARMa's plotResiduals treats them as a factor (boxplots)
FACTOR_BELOW = 10


@_plain
def plot_residuals_vs_predicted(diag: Diagnostics, rank: bool = True, quantile_lines: bool = True, n_bins: int = 10,
                                ax=None, as_factor: bool | None = None):
    """Scaled residuals against the (rank-transformed) population-level predictions, with dashed
    reference lines at 0.25, 0.5, 0.75 (DHARMa's ``plotResiduals``). ``quantile_lines`` adds the
    empirical 0.25/0.5/0.75 quantiles of the residuals within ``n_bins`` bins of the predictor
    (a simple stand-in for DHARMa's qgam quantile regressions); under a correct model they lie on
    the reference lines.

    As DHARMa's ``plotResiduals(asFactor = NULL)`` does, predictions taking fewer than
    :data:`FACTOR_BELOW` distinct values (a model whose only fixed effect is a factor, e.g. one
    prediction per system) are drawn as one boxplot of the residuals per distinct prediction
    (``as_factor`` forces either way)."""
    fig, ax = _figure(ax)
    pred = np.asarray(diag.predicted, dtype=float)
    res = diag.residuals
    values = np.unique(pred[np.isfinite(pred)])
    if as_factor if as_factor is not None else values.size < FACTOR_BELOW:
        data = [res[pred == v] for v in values]
        ax.boxplot(data, widths=0.6, patch_artist=True, boxprops={"facecolor": "lightgrey"})
        ax.set_xticks(range(1, len(values) + 1), [f"{v:.4g}" for v in values],
                      rotation=45 if len(values) > 5 else 0, ha="right" if len(values) > 5 else "center")
        for q in _QUANTILES:
            ax.axhline(q, ls="--", color="grey", lw=1)
        ax.set(ylim=(0, 1), xlabel=f"Model predictions ({len(values)} distinct values: one box each)",
               ylabel="DHARMa residual", title="Residual vs. predicted")
        return fig
    x = rank_transform(pred) if rank else pred
    ax.scatter(x, res, color="black", **_point_style(res.size))
    for q in _QUANTILES:
        ax.axhline(q, ls="--", color="grey", lw=1)
    if quantile_lines and np.unique(x).size >= n_bins and res.size >= 5 * n_bins:
        centres, qs = _binned_quantiles(x, res, n_bins)
        for k in range(len(_QUANTILES)):
            ax.plot(centres, qs[:, k], color=_RED, lw=1.5)
    xlabel = "Model predictions (rank transformed)" if rank else "Model predictions"
    ax.set(ylim=(0, 1), xlabel=xlabel, ylabel="DHARMa residual", title="Residual vs. predicted")
    return fig


@_plain
def plot_residuals_by_group(diag: Diagnostics, group: Any = None, ax=None):
    """Boxplots of the scaled residuals per level of a categorical predictor (DHARMa's
    ``testCategorical`` plot); levels whose Holm-adjusted KS p < alpha are red, the Levene result
    is in the title."""
    cat = diag.group if group is None else as_group(group, diag.n_obs)
    if cat is None:
        raise ValueError("no grouping variable: pass group= (or build the diagnostics with one)")
    (uni, lev), per_level = test_categorical(diag, cat)
    codes = np.asarray(cat.codes)
    levels = [str(v) for v in cat.categories]
    fig, ax = _figure(ax, figsize=(max(5.5, 0.45 * len(levels) + 2), 4.5))
    data = [diag.residuals[codes == g] for g in range(len(levels))]
    box = ax.boxplot(data, patch_artist=True, widths=0.6)
    for patch, verdict in zip(box["boxes"], per_level["verdict"]):
        patch.set_facecolor(_RED if verdict == "warning" else "lightgrey")
    ax.set_xticks(range(1, len(levels) + 1), levels, rotation=45 if len(levels) > 6 else 0, ha="right" if len(levels) > 6 else "center")
    for q in _QUANTILES:
        ax.axhline(q, ls="--", color="grey", lw=1)
    ax.set(ylim=(0, 1), ylabel="DHARMa residual")
    lines = [
        "Within-group deviations from uniformity significant (red)" if uni.verdict == "warning" else "Within-group deviation from uniformity n.s.",
        f"Levene test for homogeneity of variance: p = {fmt_p(lev.p_value)}",
    ]
    ax.set_title("\n".join(lines), fontsize=9, color=_RED if "warning" in (uni.verdict, lev.verdict) else "black")
    return fig


@_plain
def plot_dharma(diag: Diagnostics):
    """DHARMa's default two-panel plot: uniform QQ plot and residuals vs predicted."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib loads only when a figure is drawn; _report.sections imports this module

    fig = Figure(figsize=(11, 4.5), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    plot_qq_uniform(diag, ax=ax1)
    plot_residuals_vs_predicted(diag, ax=ax2)
    fig.suptitle("DHARMa residual diagnostics")
    return fig


@_plain
def plot_simulation_test(diag: Diagnostics, test: str = "dispersion", ax=None):
    """Histogram of a simulation test's summary over the simulations (grey) with the observed value
    (red line), as DHARMa's ``testDispersion`` / ``testZeroInflation`` / ``testGeneric`` plots.

    ``test`` is ``"dispersion"`` or ``"zero_inflation"`` (recomputed from ``diag``, in the
    directions recorded in ``diag.tests``), or a :class:`~mixedeval.diagnostics.SimulationTest`
    that carries simulated summaries (e.g. from :func:`~mixedeval.diagnostics.test_generic`).
    """
    if isinstance(test, SimulationTest):
        res = test
    elif test in ("dispersion", "zero_inflation"):
        row = _test_row(diag, test)
        alternative = "two-sided" if row is None else row["alternative"]
        res = (test_dispersion if test == "dispersion" else test_zero_inflation)(diag, alternative=alternative)
    else:
        raise ValueError("test must be 'dispersion', 'zero_inflation' or a SimulationTest with simulated summaries")
    if res.simulated_summaries is None:
        raise ValueError(f"the {res.test} test has no simulated summaries to plot ({res.verdict}: {res.reason})")
    fig, ax = _figure(ax)
    sims = np.asarray(res.simulated_summaries, dtype=float)
    ax.hist(sims, bins=20, color="lightgrey", edgecolor="grey")
    ax.axvline(float(res.observed_summary), color=_RED, lw=2)
    bad = res.verdict == "warning"
    title = f"{res.test.replace('_', ' ').capitalize()} test {'significant' if bad else 'n.s.'}"
    ax.set_title(title, fontsize=10, color=_RED if bad else "black")
    ax.set(xlabel=f"Simulated values, red line = fitted model. p-value ({res.alternative}) = {fmt_p(res.p_value)}",
           ylabel="Frequency")
    return fig


def _conditional(diag_or_fitted: Any, residuals: Any) -> tuple[np.ndarray, np.ndarray | None]:
    if isinstance(diag_or_fitted, Diagnostics):
        if diag_or_fitted.conditional_residuals is None:
            raise ValueError("these diagnostics carry no conditional residuals (use diagnose_fit on a fitted model)")
        return diag_or_fitted.fitted_conditional, diag_or_fitted.conditional_residuals
    return np.asarray(diag_or_fitted, dtype=float), None if residuals is None else np.asarray(residuals, dtype=float)


@_plain
def plot_residuals_vs_fitted(fitted: Any, residuals: Any = None, ax=None):
    """Conditional residuals against conditional fitted values, with a zero line and a binned
    median. ``fitted`` may be a :class:`Diagnostics` from :func:`diagnose_fit`."""
    fitted, residuals = _conditional(fitted, residuals)
    if residuals is None:
        raise ValueError("pass residuals= (or a Diagnostics from diagnose_fit)")
    fig, ax = _figure(ax)
    ax.scatter(fitted, residuals, color="black", **_point_style(residuals.size))
    ax.axhline(0, color="grey", ls="--", lw=1)
    if np.unique(fitted).size >= 10 and residuals.size >= 50:
        order = np.argsort(fitted, kind="stable")
        bins = np.array_split(order, 10)
        ax.plot([fitted[b].mean() for b in bins], [np.median(residuals[b]) for b in bins], color=_RED, lw=1.5)
    ax.set(xlabel="Fitted values (conditional)", ylabel="Residuals (conditional)", title="Residuals vs fitted")
    return fig


def _qq_normal_into(ax, values: np.ndarray, title: str) -> None:
    values = np.sort(np.asarray(values, dtype=float))
    n = values.size
    theo = norm.ppf(ppoints(n))
    ax.scatter(theo, values, color="black", **_point_style(n))
    if n >= 2 and np.ptp(values) > 0:
        # R's qqline: through the first and third quartiles (quantile type 7)
        y1, y2 = np.quantile(values, [0.25, 0.75])
        x1, x2 = norm.ppf([0.25, 0.75])
        slope = (y2 - y1) / (x2 - x1)
        ax.axline((x1, y1), slope=slope, color=_RED, lw=1)
    ax.set(xlabel="Theoretical quantiles", ylabel="Sample quantiles", title=title)


@_plain
def plot_qq_normal(residuals: Any, ax=None, title: str = "Normal QQ plot of conditional residuals"):
    """Normal QQ plot (R's ``qqnorm`` positions, ``qqline`` through the quartiles) of the
    conditional residuals; ``residuals`` may be a :class:`Diagnostics` from :func:`diagnose_fit`."""
    if isinstance(residuals, Diagnostics):
        residuals = _conditional(residuals, None)[1]
    fig, ax = _figure(ax)
    _qq_normal_into(ax, residuals, title)
    return fig


@_plain
def plot_ranef_qq(ranef: Any):
    """Normal QQ plots of the BLUPs: one panel per (grouping factor, term). ``ranef`` is the dict
    ``group -> DataFrame`` of ``fit.ranef()`` (or a :class:`Diagnostics` from :func:`diagnose_fit`)."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib loads only when a figure is drawn; _report.sections imports this module

    if isinstance(ranef, Diagnostics):
        ranef = ranef.ranef
    if not ranef:
        raise ValueError("no random effects to plot")
    panels = [(g, term, df[term].to_numpy(dtype=float)) for g, df in ranef.items() for term in df.columns]
    ncol = min(3, len(panels))
    nrow = -(-len(panels) // ncol)
    fig = Figure(figsize=(4 * ncol, 3.6 * nrow), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrow, ncol)).ravel()
    for ax, (g, term, vals) in zip(axes, panels):
        _qq_normal_into(ax, vals, f"{g}: {term}")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    return fig
