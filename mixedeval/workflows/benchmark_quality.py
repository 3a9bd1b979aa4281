"""Benchmark quality: signal, noise and their ratio, decision accuracy across scales, and
reliability with the number of items needed (issue 32, point 4).

Definitions (Heineman et al. 2025, "Signal and Noise: A Framework for Reducing Uncertainty in
Language Model Evaluation", Sec. 2): for a population of models with final scores ``m_j``

* **signal** = relative dispersion ``max_{j,k} |m_j - m_k| / mean(m)`` (the largest gap between
  two models' final scores over the mean score);
* **noise** = relative standard deviation of one model's scores over its last ``n`` training
  checkpoints, ``sd(m_{T-n+1..T}) / mean(m_{T-n+1..T})``; here averaged over the models (and
  runs) that have checkpoints. Without checkpoints, the relative SD of the final scores over
  training runs (seeds) is used instead and the table says so (``noise_source``);
* **signal-to-noise ratio** = signal / noise;
* **decision accuracy** (the paper's Sec. 2.1, after DataDecide, Magnusson et al. 2025): the share
  of pairs of systems (e.g. data recipes) ordered the same way at the small scale as at the large
  scale (ties count one half).

**Reliability** (generalizability theory; Brennan 2001): from item-level scores of the final
checkpoint (of the large scale when there are scales), the variance components of
``score ~ (1 | system) + (1 | item) [+ (1 | run)]`` by REML (:func:`mixedeval.variance_components`,
lme4), the G coefficient ``E rho^2 = s2_system / (s2_system + s2_delta / n_items)`` of the
benchmark's mean over its items and the number of items needed for ``target_reliability``
(the smallest ``n`` with ``E rho^2(n) >= target``; Brennan's D study).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import _answer
from ..data._table_guard import guarded_table
from ..data.validate import require_columns, require_nonempty
from ..errors import DataError
from ..results import ResultWarning
from ._common import _WorkflowResult, koo_li_band
from .variance_components import variance_components


@dataclass(frozen=True, repr=False)
class BenchmarkQuality(_answer.AnswerMixin, _WorkflowResult):
    """Signal, noise, decision accuracy and reliability of a benchmark.

    ``table``: one row per scale (or one row): scale, n_systems, mean_score, signal, noise,
    snr, noise_source, n_series (models x runs whose checkpoints or runs gave the noise).
    ``answer`` (:class:`mixedeval._answer.Answer`; views ``leaderboard``, ``direction``,
    ``differences``): the systems' final scores (large scale), best first; std_error is the SD of
    the system's last checkpoints or runs over sqrt(their number) (NaN without repeats); no
    headline pair (the answer's text is the summary sentence of :meth:`headline_text`); every pair
    as Wald differences of independent scores when every system has a std_error.
    ``reliability``: coefficient (g_coefficient, phi), value, band (Koo & Li), n_items, and the
    items needed for ``target_reliability``; None without item-level scores.
    """

    table: pd.DataFrame
    answer: _answer.Answer
    decision_accuracy: float
    n_pairs: int
    reliability: Any
    items_needed: float
    target_reliability: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]
    variance_components: Any = field(default=None, repr=False, compare=False)

    _print_tables = ("table", "reliability", "leaderboard")
    _skip_in_dict = ("variance_components",)
    _answer_priority = 70

    @property
    def _title(self) -> str:  # type: ignore[override]
        return "Benchmark quality (signal and noise: Heineman et al. 2025; reliability: G theory)"

    def _scalars(self):
        return [("summary", self.headline_text())]

    def headline_text(self) -> str:
        """One sentence: the signal-to-noise ratio, the decision accuracy and the reliability
        (the answer's text: a benchmark's quality has no headline pair)."""
        return self.answer.headline_text()


def _summary(table: pd.DataFrame, decision_accuracy: float, n_pairs: int, reliability: Any, items_needed: float,
             target_reliability: float) -> str:
    """One sentence: the signal-to-noise ratio, the decision accuracy and the reliability."""
    last = table.iloc[-1]
    parts = [f"signal-to-noise ratio {last['snr']:.3g} (signal {last['signal']:.3g}, noise {last['noise']:.3g})"]
    if np.isfinite(decision_accuracy):
        parts.append(f"decision accuracy small -> large {decision_accuracy:.3f} over {n_pairs} pairs")
    if reliability is not None:
        g = reliability.set_index("coefficient").loc["g_coefficient"]
        parts.append(f"G coefficient {g['value']:.3f} with {int(g['n_items'])} items; "
                     f"{_fmt_items(items_needed)} items for {target_reliability:g}")
    return "; ".join(parts)


def _fmt_items(n: float) -> str:
    return "unreachable" if not np.isfinite(n) else f"{int(n)}"


# ----------------------------------------------------------------------------- pieces
def _order_key(s: pd.Series) -> pd.Series:
    num = pd.to_numeric(s, errors="coerce")
    return num if num.notna().all() else s.astype(str)


def _series_scores(df: pd.DataFrame, score: str, system: str, item: str | None, keys: list[str]) -> pd.DataFrame:
    """The benchmark score per (system, keys...): the mean over items when rows are items."""
    group = [system, *keys]
    if item is None:
        dup = df.duplicated(group)
        if dup.any():
            raise DataError(f"{int(dup.sum())} row(s) repeat a ({', '.join(group)}) combination; give one score per "
                            "combination, or name the item column with item= so scores are averaged over items")
        return df[[*group, score]].copy()
    return df.groupby(group, observed=True, sort=False)[score].mean().reset_index()


def signal(final: np.ndarray) -> float:
    """Relative dispersion: the largest gap between two final scores over their mean."""
    m = float(np.mean(final))
    return float((np.max(final) - np.min(final)) / abs(m)) if m != 0 and len(final) > 1 else float("nan")


def _noise(s: pd.DataFrame, score: str, system: str, checkpoint: str | None, run: str | None,
           last_n: int) -> tuple[float, str, int, pd.Series]:
    """Mean relative SD over the last checkpoints (per system and run) or over runs, with the
    per-system standard error of the final score."""
    if checkpoint is not None:
        ids = [system] + ([run] if run else [])
        s = s.assign(_k=_order_key(s[checkpoint])).sort_values([*ids, "_k"])
        tail = s.groupby(ids, observed=True, sort=False).tail(last_n)
        g = tail.groupby(ids, observed=True, sort=False)[score]
        rel = (g.std(ddof=1) / g.mean().abs()).dropna()
        se = tail.groupby(system, observed=True)[score].agg(lambda v: v.std(ddof=1) / math.sqrt(len(v)))
        return (float(rel.mean()) if len(rel) else float("nan"), f"last {last_n} checkpoints", int(len(rel)), se)
    if run is not None:
        g = s.groupby(system, observed=True)[score]
        rel = (g.std(ddof=1) / g.mean().abs()).dropna()
        se = g.agg(lambda v: v.std(ddof=1) / math.sqrt(len(v)))
        return (float(rel.mean()) if len(rel) else float("nan"), "runs (no checkpoints)", int(len(rel)), se)
    return float("nan"), "none (no checkpoints or runs)", 0, pd.Series(dtype=float)


def _final(s: pd.DataFrame, score: str, system: str, checkpoint: str | None) -> pd.Series:
    """Each system's final score: its last checkpoint (averaged over runs), else its mean over runs."""
    if checkpoint is not None:
        s = s.assign(_k=_order_key(s[checkpoint]))
        last = s.groupby(system, observed=True)["_k"].transform("max")
        s = s[s["_k"] == last]
    return s.groupby(system, observed=True)[score].mean()


def decision_accuracy(small: pd.Series, large: pd.Series) -> tuple[float, int]:
    """Share of system pairs ordered the same way at both scales (ties: one half) and the pair count."""
    common = small.index.intersection(large.index)
    a, b = small.loc[common].to_numpy(float), large.loc[common].to_numpy(float)
    i, j = np.triu_indices(len(common), k=1)
    if len(i) == 0:
        return float("nan"), 0
    sa, sb = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    agree = np.where((sa == 0) | (sb == 0), 0.5, (sa == sb).astype(float))
    return float(agree.mean()), int(len(i))


def items_needed(vca: Any, target: float, sizes: dict[str, float]) -> float:
    """The smallest number of items with ``E rho^2 >= target`` (other facets at ``sizes``);
    ``inf`` when more items cannot reach it (the error left by the other facets is too large)."""
    def g(n: float) -> float:
        return vca.g_coefficient(**{**sizes, "item": n})
    if g(1) >= target:
        return 1.0
    if not g(1e12) >= target:
        return float("inf")
    lo, hi = 1, 2
    while g(hi) < target:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if g(mid) < target else (lo, mid)
    return float(hi)


def _reliability(rows: pd.DataFrame, score: str, system: str, item: str, run: str | None, target: float):
    facets = [item] + ([run] if run is not None and rows[run].nunique() > 1 else [])
    frame = rows[[score, system, *facets]].rename(columns={score: "score", system: "system", item: "item"})
    if run in facets:
        frame = frame.rename(columns={run: "run"})
    facet_names = ["item"] + (["run"] if run in facets else [])
    vca = variance_components(frame, "score", "system", facets=facet_names)
    sizes = {"item": float(frame["item"].nunique())}
    if "run" in facet_names:
        sizes["run"] = float(frame["run"].nunique())
    g, p = vca.g_coefficient(**sizes), vca.phi(**sizes)
    need = items_needed(vca, target, {k: v for k, v in sizes.items() if k != "item"})
    table = pd.DataFrame({"coefficient": ["g_coefficient", "phi"], "value": [g, p],
                          "band": [koo_li_band(g), koo_li_band(p)], "n_items": int(sizes["item"]),
                          "target": target, "items_needed": [need, np.nan]})
    return table, need, vca


def _check_args(df, score, system, item, checkpoint, run, scale, small, large, last_n, target):
    require_nonempty(df)
    cols = [c for c in (score, system, item, checkpoint, run, scale) if c is not None]
    require_columns(df, cols)
    if not pd.api.types.is_numeric_dtype(df[score]):
        raise DataError(f"column {score!r} must be numeric scores")
    if not (isinstance(last_n, (int, np.integer)) and last_n >= 2):
        raise DataError(f"last_n={last_n!r} must be a whole number >= 2 (checkpoints whose SD is the noise)")
    if isinstance(target, bool) or not isinstance(target, (int, float, np.integer, np.floating)) or not 0 < target < 1:
        raise DataError(f"target_reliability={target!r} must be a number between 0 and 1, e.g. 0.9")
    if scale is None:
        return None, None
    levels = [str(v) for v in pd.unique(df[scale].dropna())]
    if small is None or large is None:
        raise DataError(f"with scale={scale!r} name the two levels to compare: small=..., large=... (levels: "
                        f"{', '.join(levels[:10])})")
    for name, v in (("small", small), ("large", large)):
        if str(v) not in levels:
            raise DataError(f"{name}={v!r} is not a level of {scale!r} ({', '.join(levels[:10])})")
    if str(small) == str(large):
        raise DataError(f"small= and large= both name the level {str(small)!r} of {scale!r}: the decision accuracy "
                        f"compares the systems' order at two different scales (levels: {', '.join(levels[:10])})")
    return str(small), str(large)


def benchmark_quality(data: Any, *, score: str = "score", system: str = "system", item: str | None = None,
                      checkpoint: str | None = None, run: str | None = None, scale: str | None = None,
                      small: Any = None, large: Any = None, last_n: int = 5, target_reliability: float = 0.9,
                      higher_is_better: bool | None = None, reliability: bool = True) -> BenchmarkQuality:
    """Signal, noise, signal-to-noise ratio, decision accuracy and reliability of a benchmark.

    ``data``: scores of several systems, one row per system (and ``checkpoint`` / ``run`` /
    ``scale``), or per item when ``item`` names the item column (the benchmark score is then the
    mean over items, and the reliability is computed). ``checkpoint``: ordered training steps
    (numeric order when numeric); the noise is the relative SD over the last ``last_n`` of them.
    ``run``: training runs (seeds). ``scale`` with levels ``small`` and ``large``: the decision
    accuracy compares the systems' orders at the two scales. Definitions and references in the
    module documentation; the reliability needs R (lme4) for the variance components."""
    df = guarded_table(data).copy()
    df.columns = [str(c) for c in df.columns]
    small_l, large_l = _check_args(df, score, system, item, checkpoint, run, scale, small, large, last_n,
                                   target_reliability)
    df = df.dropna(subset=[c for c in (score, system, item, checkpoint, run, scale) if c is not None])
    require_nonempty(df, "rows without missing values")
    df[system] = df[system].astype(str)
    keys = [c for c in (checkpoint, run, scale) if c is not None]
    series = _series_scores(df, score, system, item, keys)
    scales = [None] if scale is None else [small_l, large_l]
    rows, finals, ws = [], {}, []
    se_large = pd.Series(dtype=float)
    for sc in scales:
        part = series if sc is None else series[series[scale].astype(str) == sc]
        fin = _final(part, score, system, checkpoint)
        nz, src, n_series, se = _noise(part, score, system, checkpoint, run, last_n)
        sg = signal(fin.to_numpy(float))
        finals[sc] = fin
        se_large = se
        rows.append({"scale": "all" if sc is None else sc, "n_systems": len(fin), "mean_score": float(fin.mean()),
                     "signal": sg, "noise": nz, "snr": sg / nz if nz and np.isfinite(nz) and nz > 0 else float("nan"),
                     "noise_source": src, "n_series": n_series})
    table = pd.DataFrame(rows)
    if not np.isfinite(table["noise"]).all():
        ws.append(ResultWarning("no_noise", "no checkpoints or runs to measure noise: give checkpoint= (training "
                                "steps) or run= (seeds)"))
    da, n_pairs = decision_accuracy(finals[small_l], finals[large_l]) if scale is not None else (float("nan"), 0)
    direction = _answer.direction(score, higher_is_better)
    fin = finals[scales[-1]]
    board = _answer.leaderboard(fin, std_error=se_large.reindex(fin.index) if len(se_large) else None,
                                higher_is_better=direction.higher_is_better)
    rel, need, vca = (None, float("nan"), None)
    if item is not None and reliability:
        rows_rel = df if scale is None else df[df[scale].astype(str) == large_l]
        if checkpoint is not None:
            k = _order_key(rows_rel[checkpoint])
            rows_rel = rows_rel[k == k.max()]
        rel, need, vca = _reliability(rows_rel, score, system, item, run, target_reliability)
        ws += list(vca.warnings)
    prov = {"signal_noise": "Heineman et al. 2025", "last_n": last_n, "reliability": "lme4 REML variance components"
            if rel is not None else "not computed (no item column)"}
    se = board["std_error"].to_numpy(dtype=float)
    diffs = _answer.wald_pairs(board, higher_is_better=direction.higher_is_better) \
        if 1 < len(board) <= 200 and np.all(np.isfinite(se)) else None
    ans = _answer.Answer(direction=direction, leaderboard=board, headline=None, differences=diffs,
                         no_headline_text=_summary(table, da, n_pairs, rel, need, target_reliability),
                         method="signal and noise (Heineman et al. 2025)")
    return BenchmarkQuality(table=table, answer=ans, decision_accuracy=da, n_pairs=n_pairs, reliability=rel,
                            items_needed=need, target_reliability=target_reliability,
                            warnings=tuple(ws), provenance=prov, variance_components=vca)
