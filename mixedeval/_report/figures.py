"""Figures of the HTML report (matplotlib, headless) and their embedding as data URIs.

Every plot function returns a :class:`matplotlib.figure.Figure` built without pyplot (no display,
no global state), like :mod:`mixedeval.diagnostics.plots`, which the report reuses for the
residual plots. :func:`to_data_uri` turns a figure into a ``data:image/svg+xml`` or
``data:image/png`` URI, so the report needs no files beside it and no network.
"""
from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

_BLUE = "#1f5f99"
_GREY = "#888888"


def _figure(figsize: tuple[float, float]):
    from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib loads only when a figure is drawn; _report.blocks imports this module

    return Figure(figsize=figsize, layout="constrained")


def to_data_uri(fig: Any, fmt: str = "svg", dpi: int = 100) -> str:
    """Render ``fig`` to an embeddable ``data:`` URI (``fmt`` ``"svg"`` or ``"png"``).

    SVG keeps line plots and heatmaps sharp; PNG keeps scatter plots with thousands of points
    small. Text in the SVG is stored as paths, so the figure looks the same without the fonts.
    Every text is drawn as given (names such as ``$\\frac{a}{b$`` are not math text or TeX).
    """
    import matplotlib  # noqa: PLC0415 - matplotlib loads only when a figure is drawn; _report.blocks imports this module

    from ..diagnostics.plots import plain_text  # noqa: PLC0415 - loads matplotlib and scipy: only when drawing

    plain_text(fig)
    buf = io.BytesIO()
    if fmt == "svg":
        with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "mixedeval", "text.parse_math": False,
                                    "text.usetex": False}):
            fig.savefig(buf, format="svg", metadata={"Date": None})
        mime = "image/svg+xml"
    elif fmt == "png":
        with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
            fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
        mime = "image/png"
    else:
        raise ValueError(f"fmt must be 'svg' or 'png', not {fmt!r}")
    return f"data:{mime};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


def interval_plot(
    labels: Sequence[str],
    estimate: Sequence[float],
    conf_low: Sequence[float],
    conf_high: Sequence[float],
    *,
    xlabel: str = "estimate",
    title: str = "",
    zero_line: bool = False,
    null_value: float = 0.0,
):
    """Point estimates with interval bars, one row per label (top to bottom in the given order).

    Used for estimated marginal means (emmean with conf_low/conf_high), contrasts (with a line at
    ``null_value``: 0 for differences, 1 for odds / rate ratios) and bootstrap summaries.
    """
    labels = [str(v) for v in labels]
    est = np.asarray(estimate, dtype=float)
    lo = np.asarray(conf_low, dtype=float)
    hi = np.asarray(conf_high, dtype=float)
    n = len(labels)
    fig = _figure((6.4, max(2.0, 0.42 * n + 1.2)))
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    ax.errorbar(est, y, xerr=_whiskers(est, lo, hi), fmt="o", color=_BLUE, ecolor=_BLUE, elinewidth=2, capsize=4,
                markersize=6)
    if zero_line:
        ax.axvline(float(null_value), color=_GREY, ls="--", lw=1)
    _label_rows(ax, y, labels, xlabel, title, fontsize=9)
    return fig


def _whiskers(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``xerr`` of an interval around ``values``; a percentile interval need not contain the
    estimate, so whiskers are clipped at zero length instead of pointing inwards."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    err = np.vstack([np.where(np.isfinite(lo), values - lo, 0.0), np.where(np.isfinite(hi), hi - values, 0.0)])
    return np.clip(err, 0.0, None)


def _label_rows(ax: Any, y: np.ndarray, labels: list[str], xlabel: str, title: str, fontsize: int) -> None:
    ax.set_yticks(y, labels, fontsize=fontsize)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", color="#dddddd", lw=0.8)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(title, fontsize=11)


def rank_heatmap(ranks: Any, system_col: str = "system", prefix: str = "p_rank_", title: str = ""):
    """Heatmap of rank probabilities: one row per system, one column per rank ``k``
    (``P(rank = k)`` from the ``p_rank_1 .. p_rank_k`` columns of ``bootstrap(...).ranks()``),
    each cell annotated with its probability."""
    cols = [c for c in ranks.columns if str(c).startswith(prefix)]
    if not cols:
        raise ValueError(f"no {prefix}* columns in the ranks table ({list(ranks.columns)})")
    cols = sorted(cols, key=lambda c: int(str(c)[len(prefix):]) if str(c)[len(prefix):].isdigit() else 0)
    mat = ranks[cols].to_numpy(dtype=float)
    systems = [str(s) for s in ranks[system_col]] if system_col in ranks.columns else [str(i) for i in ranks.index]
    k = len(cols)
    fig = _figure((max(4.0, 0.75 * k + 2.6), max(2.2, 0.45 * len(systems) + 1.3)))
    ax = fig.add_subplot()
    im = ax.imshow(mat, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(k), [str(c)[len(prefix):] for c in cols])
    ax.set_yticks(range(len(systems)), systems)
    ax.set_xlabel("rank (1 = best)")
    if k <= 15 and len(systems) <= 30:
        for i in range(mat.shape[0]):
            for j in range(k):
                v = mat[i, j]
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8, color="white" if v > 0.6 else "black")
    fig.colorbar(im, ax=ax, label="P(rank)", shrink=0.9)
    if title:
        ax.set_title(title, fontsize=11)
    return fig


def rank_interval_plot(table: Any, title: str = "", xlabel: str = "rank (1 = best)"):
    """Simultaneous rank intervals: one row per name, best at the top (the ``table`` of
    :func:`mixedeval.rank_intervals`: name, estimate, rank, rank_low, rank_high, letters), a
    horizontal bar from rank_low to rank_high, a dot at the rank of the estimate, the estimate in
    the row label and the compact letters at the right (names sharing a letter are not
    significantly different)."""
    t = table.sort_values(["rank", "rank_low"], kind="stable").reset_index(drop=True)
    n = len(t)
    k = int(max(n, int(t["rank_high"].max()) if n else 1))
    fig = _figure((6.4, max(2.0, 0.42 * n + 1.2)))
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    ax.hlines(y, t["rank_low"].to_numpy(dtype=float) - 0.3, t["rank_high"].to_numpy(dtype=float) + 0.3,
              color=_BLUE, lw=6, alpha=0.35)
    ax.plot(t["rank"].to_numpy(dtype=float), y, "o", color=_BLUE, ms=6)
    labels = [f"{name} ({est:.3g})" for name, est in zip(t["name"], t["estimate"])]
    _label_rows(ax, y, labels, xlabel, title, fontsize=7 if n > 25 else 9)
    ax.set_xlim(0.3, k + 1.6)
    ax.set_xticks(range(1, k + 1) if k <= 20 else np.unique(np.linspace(1, k, 10).round().astype(int)))
    if "letters" in t.columns:
        for yi, letters in zip(y, t["letters"]):
            ax.text(k + 0.8, yi, str(letters), va="center", ha="left", fontsize=8, family="monospace")
    return fig


def d_study_plot(table: Any, coefficients: Sequence[str] | None = None, title: str = ""):
    """Reliability coefficients of a D-study over facet sizes.

    ``table`` has one integer column per facet (the number of levels averaged over) and one
    column per coefficient (by default every column whose name contains ``phi``, ``g_coef``,
    ``rho`` or ``reliab``). The x axis is the first facet whose size varies; each combination of
    the other varying facets is one line; one panel per coefficient; Koo & Li's bands are marked
    at 0.5, 0.75 and 0.9.
    """
    if coefficients is None:
        coefficients = [c for c in table.columns if any(t in str(c).lower() for t in ("phi", "g_coef", "rho", "reliab"))
                        and pd.api.types.is_numeric_dtype(table[c])]
    coefficients = list(coefficients)
    if not coefficients:
        raise ValueError(f"no reliability coefficient columns in the D-study table ({list(table.columns)})")
    facets = [c for c in table.columns if c not in coefficients and pd.api.types.is_numeric_dtype(table[c])
              and table[c].nunique() > 1]
    if not facets:
        raise ValueError("the D-study table has no facet column whose size varies")
    x, others = facets[0], facets[1:]
    fig = _figure((5.2 * len(coefficients) + 0.6, 4.0))
    axes = np.atleast_1d(fig.subplots(1, len(coefficients)))
    groups = [((), table)] if not others else list(table.groupby(others, sort=True))
    for ax, coef in zip(axes, coefficients):
        for key, sub in groups:
            sub = sub.sort_values(x)
            key = key if isinstance(key, tuple) else (key,)
            label = ", ".join(f"{o}={v}" for o, v in zip(others, key)) or None
            ax.plot(sub[x], sub[coef], marker="o", ms=4, lw=1.5, label=label)
        for level in (0.5, 0.75, 0.9):
            ax.axhline(level, color=_GREY, ls=":", lw=0.8)
        facet = str(x)[2:] if str(x).startswith("n_") else str(x)
        ax.set(xlabel=f"levels of {facet} averaged over", ylabel=str(coef), ylim=(0, 1.02), title=str(coef))
        ax.grid(color="#eeeeee", lw=0.8)
        ax.set_axisbelow(True)
        if others and len(groups) <= 12:
            ax.legend(fontsize=7, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def bar_plot(labels: Sequence[str], values: Sequence[float], *, xlabel: str = "", title: str = "",
             conf_low: Sequence[float] | None = None, conf_high: Sequence[float] | None = None):
    """Horizontal bars (e.g. language potential), top to bottom in the given order, with optional
    interval whiskers."""
    labels = [str(v) for v in labels]
    vals = np.asarray(values, dtype=float)
    n = len(labels)
    fig = _figure((6.4, max(2.0, 0.22 * n + 1.2)))
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    xerr = None if conf_low is None or conf_high is None else _whiskers(vals, conf_low, conf_high)
    ax.barh(y, vals, color=_BLUE, alpha=0.85, xerr=xerr, error_kw={"ecolor": "#333333", "lw": 1})
    _label_rows(ax, y, labels, xlabel, title, fontsize=7 if n > 25 else 9)
    return fig


def difference_plot(labels: Sequence[str], estimate: Sequence[float], conf_low: Sequence[float],
                    conf_high: Sequence[float], *, anchor: str, xlabel: str = "difference", scale: float = 1.0):
    """Every system's difference from ``anchor`` (the best, or the reference), one row each in
    leaderboard order with the anchor itself at 0 on top: points with interval bars, a dashed
    line at 0; bars that cross it mark systems not told apart from the anchor. ``scale``
    multiplies the values (100: points)."""
    labels = [str(anchor), *(str(v) for v in labels)]
    est = np.r_[0.0, np.asarray(estimate, dtype=float)] * scale
    lo = np.r_[np.nan, np.asarray(conf_low, dtype=float)] * scale
    hi = np.r_[np.nan, np.asarray(conf_high, dtype=float)] * scale
    n = len(labels)
    fig = _figure((5.2, min(5.4, max(1.9, 0.27 * n + 1.0))))
    ax = fig.add_subplot()
    y = np.arange(n)[::-1]
    apart = np.isfinite(lo) & np.isfinite(hi) & ((lo > 0) | (hi < 0))
    colors = np.where(apart, _BLUE, "#7a8796")
    for yi, e, c, w in zip(y, est, colors, _whiskers(est, lo, hi).T):
        ax.errorbar([e], [yi], xerr=w.reshape(2, 1), fmt="o", color=c, ecolor=c, elinewidth=2, capsize=3, markersize=5)
    ax.plot([0.0], [y[0]], marker="D", color="#1d2733", markersize=6)
    ax.axvline(0.0, color=_GREY, ls="--", lw=1)
    fs = 9 if n <= 12 else 7
    _label_rows(ax, y, labels, xlabel, "", fontsize=fs)
    return fig
