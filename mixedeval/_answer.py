"""One question, one answer: the direction of a score, the best-first leaderboard, the headline
and the checks that every result over several systems shares.

This module sits beside the layers (like :mod:`mixedeval._rankings`, which it uses): workflows,
inference results (EMMs, Bradley-Terry, IRT abilities) and resampling results all build their
answer with it, so that the API, the CLI, the JSON and the report say the same thing.

* **Direction** (:func:`direction`): ``higher_is_better`` declared by the user wins; otherwise a
  known metric name decides (TER, WER, error, loss, perplexity, ...: lower is better; accuracy,
  BLEU, chrF, match, F1, ...: higher); an unknown metric is taken as higher-is-better and the
  result says so (:attr:`Direction.note`).
* **Leaderboard** (:func:`leaderboard`): one row per system, best first, with the columns of
  :data:`LEADERBOARD_COLUMNS`: ``name, estimate, std_error, conf_low, conf_high`` (the result's
  own per-system interval), ``rank`` (of the point estimate, 1 = best, ties share the better
  rank), ``rank_low, rank_high`` (simultaneous rank intervals, Mogstad et al. 2024, by
  :func:`mixedeval._rankings.rank_intervals`) and ``letters`` (compact letter display:
  systems sharing a letter are not significantly different; the best group gets ``a``).
* **Headline** (:func:`choose_pair`, :func:`headline`): the best system against the runner-up,
  or the best other system against ``reference=`` when given; signed so that the better
  system's advantage is positive (for a lower-is-better score, the advantage is other - better).
  ``result.p_value`` and ``result.headline_text()`` are the headline's.
* **Checks** (:func:`check_row`): every other analysis of the same question as one row with its
  estimate of the same advantage, its p-value and a verdict, ``"agrees"`` or ``"differs: <why>"``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._rankings import _letters, rank_intervals, rank_matrix
from ._format import fmt_p
from .errors import DataError
from .results import ResultWarning, jsonable

#: the leaderboard's columns, in order (DESIGN.md glossary)
LEADERBOARD_COLUMNS = ("name", "estimate", "std_error", "conf_low", "conf_high", "rank", "rank_low",
                       "rank_high", "letters")
#: the checks table's columns, in order
CHECK_COLUMNS = ("check", "estimate", "conf_low", "conf_high", "p_value", "verdict")

#: metric names (or name tokens) whose lower values are better
LOWER_IS_BETTER = frozenset({
    "ter", "wer", "cer", "hter", "error", "errors", "error_rate", "err", "loss", "nll", "perplexity", "ppl",
    "word_perplexity", "byte_perplexity", "bits_per_byte", "bpb", "mae", "mse", "rmse", "brier", "ece",
    "latency", "cost", "time", "runtime", "distance", "edit_distance", "toxicity", "bias",
})
#: metric names (or name tokens) whose higher values are better
HIGHER_IS_BETTER = frozenset({
    "acc", "accuracy", "acc_norm", "bleu", "chrf", "chrf++", "match", "exact_match", "em", "f1", "rouge",
    "rouge1", "rouge2", "rougel", "meteor", "comet", "bertscore", "bleurt", "pass", "pass@1", "pass_at_k",
    "mc1", "mc2", "win_rate", "winrate", "elo", "strength", "ability", "auc", "auroc", "precision", "recall",
    "correct", "correctness", "includes", "reward", "success", "quasi_exact_match",
})
# not "score" / "mean_score": a generic column name says nothing of the direction (it may hold
# error rates), so it is assumed higher and the output says so


@dataclass(frozen=True)
class Direction:
    """Which way a score is better, and how that was decided.

    ``source``: ``"declared"`` (``higher_is_better=`` given), ``"known metric"`` (the metric's
    name is in :data:`LOWER_IS_BETTER` / :data:`HIGHER_IS_BETTER`) or ``"assumed"`` (unknown
    metric: higher is better, said in :attr:`note`)."""

    higher_is_better: bool
    source: str
    metric: str | None = None

    @property
    def word(self) -> str:
        """``"higher is better"`` or ``"lower is better"``."""
        return "higher is better" if self.higher_is_better else "lower is better"

    @property
    def note(self) -> str:
        """One sentence for the output: the direction and where it came from."""
        m = f" {self.metric!s}" if self.metric else ""
        if self.source == "declared":
            return f"{self.word} (declared: higher_is_better={self.higher_is_better})"
        if self.source == "known metric":
            return f"{self.word} (known metric{m})"
        return (f"{self.word} (assumed: the metric{m} is not a known one; pass higher_is_better=False "
                "if lower scores are better)")

    def to_dict(self) -> dict[str, Any]:
        return {"higher_is_better": self.higher_is_better, "source": self.source, "metric": self.metric,
                "note": self.note}


#: metric names (or name tokens) of edit rates: fractions of the reference length, usually below 1
#: but above it for a sentence with many insertions; reported in points (100 x the rate)
EDIT_RATES = frozenset({"ter", "wer", "cer", "hter"})


def _tokens(metric: str) -> list[str]:
    m = metric.strip().lower()
    m = m.split(",")[0]  # lm-eval's "acc,none" filter suffix
    toks = [t for t in re.split(r"[^a-z0-9@+]+", m) if t]
    return [m, *toks]


def known_direction(metric: Any) -> bool | None:
    """True / False when the metric's name says which way is better, None when unknown.

    The whole name first (``exact_match``, ``word_perplexity``), then its tokens split at
    non-alphanumerics (``ter_score`` -> ``ter``); a lower-is-better token wins over a
    higher-is-better one (``error_rate`` is lower, ``acc_err`` too)."""
    if not isinstance(metric, str) or not metric.strip():
        return None
    toks = _tokens(metric)
    if toks[0] in LOWER_IS_BETTER:
        return False
    if toks[0] in HIGHER_IS_BETTER:
        return True
    if any(t in LOWER_IS_BETTER for t in toks[1:]):
        return False
    if any(t in HIGHER_IS_BETTER for t in toks[1:]):
        return True
    return None


def unit_scale(scores: Any, metric: Any = None) -> tuple[str, float]:
    """How a headline writes differences of these scores: ``("points", 100.0)`` for scores in
    [0, 1] (accuracies, proportions, BLEU or chrF as fractions) and for an edit rate named as
    such (:data:`EDIT_RATES`: TER, WER, CER, HTER, a token of ``metric``) whose scores are >= 0
    with a mean of at most 1 (a fraction that may exceed 1 on some sentences; TER points are
    100 x TER); otherwise ``("", 1.0)``, the score's own units. The headline's numbers stay in
    the score's units; ``scale`` only multiplies them in its text."""
    v = np.asarray(scores, dtype=float)
    v = v[~np.isnan(v)]
    if not v.size or np.min(v) < 0:
        return "", 1.0
    if np.max(v) <= 1:
        return "points", 100.0
    rate = isinstance(metric, str) and any(t in EDIT_RATES for t in _tokens(metric))
    return ("points", 100.0) if rate and np.mean(v) <= 1 else ("", 1.0)


def check_higher_is_better(higher_is_better: Any, name: str = "higher_is_better") -> bool | None:
    """None or a bool (numpy bools too); anything else is a DataError."""
    if higher_is_better is None:
        return None
    if isinstance(higher_is_better, (bool, np.bool_)):
        return bool(higher_is_better)
    raise DataError(f"{name} must be True, False or None (decided from the metric's name), "
                    f"not {higher_is_better!r}")


def direction(metric: Any = None, higher_is_better: Any = None) -> Direction:
    """The direction of a score: declared, known from the metric's name, or assumed higher."""
    declared = check_higher_is_better(higher_is_better)
    name = str(metric) if metric is not None else None
    if declared is not None:
        return Direction(declared, "declared", name)
    known = known_direction(metric)
    if known is not None:
        return Direction(known, "known metric", name)
    return Direction(True, "assumed", name)


def direction_warning(direction: Direction | None) -> ResultWarning | None:
    """The warning a result carries when its direction was assumed (an unknown metric, e.g. a
    generic ``score`` column: higher taken as better), kind ``"direction_assumed"``, naming the
    fix ``higher_is_better=False``; None for a declared or known direction."""
    if direction is None or direction.source != "assumed":
        return None
    m = f"{direction.metric!r}" if direction.metric else "the score"
    return ResultWarning("direction_assumed", f"higher scores are taken as better: {m} is not a metric whose "
                         "direction mixedeval knows; if lower is better, pass higher_is_better=False (the leaderboard, "
                         "the headline and the signs of the differences follow it)")


# ------------------------------------------------------------------------------ leaderboard
def _as_array(x: Any, names: list[str], what: str) -> np.ndarray:
    if x is None:
        return np.full(len(names), np.nan)
    if isinstance(x, pd.Series):
        x = x.reindex(names)
    a = np.asarray(x, dtype=float)
    if a.shape != (len(names),):
        raise DataError(f"{what}: expected {len(names)} values, got shape {a.shape}")
    return a


LETTERS_MAX_PAIRS = 60_000  # leaderboard letters: at most this many pairs not significantly different


def leaderboard(estimates: pd.Series, *, std_error: Any = None, conf_low: Any = None, conf_high: Any = None,
                vcov: Any = None, draws: Any = None, higher_is_better: bool = True, level: float = 0.95,
                random_state: Any = None, n_sim: int = 20_000, letters: bool = True) -> pd.DataFrame:
    """The best-first leaderboard of k systems (columns :data:`LEADERBOARD_COLUMNS`).

    ``estimates`` is a Series indexed by system name; ``std_error``, ``conf_low``, ``conf_high``
    are per-system (Series by name or arrays in the same order) and are copied as they are.
    The rank intervals and letters come from :func:`mixedeval._rankings.rank_intervals`: from
    ``draws`` (bootstrap replicates, a column per system) when given, else the joint normal with
    ``vcov`` (default: independent, ``diag(std_error**2)``). A missing ``random_state`` means a
    fixed seed (0), so the default path gives the same leaderboard in every process.
    ``letters=False`` leaves the letters empty. The letters are multcomp's (insert-absorb and
    sweep, :mod:`mixedeval._cld`) for any number of systems, but they are left empty when more
    than :data:`LETTERS_MAX_PAIRS` (60,000) pairs of systems are not significantly different:
    the display then needs hundreds of letters per system (its letters are the maximal groups of
    systems not told apart, over a thousand for 1,000 overlapping systems) and its cost grows
    with their number and size, to minutes. Below the limit they take about 0.5 s of CPU time
    (300 systems with IRT-like overlap, 35,000 such pairs; 1,000 arena-like systems, 54,000
    pairs and 754 letters; benchmarks/bench_leaderboard.py); ``me.rank_intervals(...,
    letters=True)`` computes them without the limit."""
    if not isinstance(estimates, pd.Series):
        raise DataError("leaderboard estimates must be a pandas Series indexed by system name")
    names = [str(n) for n in estimates.index]
    est = estimates.to_numpy(dtype=float)
    se = _as_array(std_error, list(estimates.index), "std_error")
    lo = _as_array(conf_low, list(estimates.index), "conf_low")
    hi = _as_array(conf_high, list(estimates.index), "conf_high")
    hib = bool(higher_is_better)
    k = len(names)
    base = pd.DataFrame({"name": names, "estimate": est, "std_error": se, "conf_low": lo, "conf_high": hi})
    if k == 0:
        return pd.DataFrame(columns=list(LEADERBOARD_COLUMNS))
    rank = rank_matrix(np.where(np.isfinite(est), est, -np.inf if hib else np.inf)[:, None], hib)[:, 0]
    base["rank"] = rank
    usable = k >= 2 and np.all(np.isfinite(est)) and (
        draws is not None or vcov is not None or (np.all(np.isfinite(se)) and np.all(se > 0)))
    if not usable:
        base["rank_low"] = 1 if k == 1 else np.nan
        base["rank_high"] = 1 if k == 1 else np.nan
        base["letters"] = "a" if k == 1 else ""
    else:
        V = vcov if (vcov is not None or draws is not None) else np.diag(se ** 2)
        if isinstance(V, pd.DataFrame):
            V = V.loc[list(estimates.index), list(estimates.index)].to_numpy(dtype=float)
        if isinstance(draws, pd.DataFrame):
            draws = draws[list(estimates.index)].to_numpy(dtype=float)
        ri = rank_intervals(pd.Series(est, index=names), vcov=None if draws is not None else V, draws=draws,
                            level=level, higher_is_better=hib, random_state=0 if random_state is None else random_state,
                            n_sim=n_sim, letters=False, distribution=False)
        t = ri.table.set_index("name")
        base["rank_low"] = t.loc[names, "rank_low"].to_numpy()
        base["rank_high"] = t.loc[names, "rank_high"].to_numpy()
        base["letters"] = ""
    order = np.lexsort((np.arange(k), base["rank"].to_numpy()))
    if usable and letters and int((~ri.pairwise["significant"].to_numpy(dtype=bool)).sum()) <= LETTERS_MAX_PAIRS:
        found = _letters(names, est, ri.pairwise, order)  # rank_intervals' letters (same order)
        base["letters"] = [found[n] for n in names]
    out = base.iloc[order].reset_index(drop=True)
    return out[list(LEADERBOARD_COLUMNS)]


# ------------------------------------------------------------------------------ headline
def choose_pair(board: pd.DataFrame, reference: Any = None) -> tuple[str, str] | None:
    """The headline pair from a best-first leaderboard: (best, runner-up), or with ``reference``
    (best system other than the reference, reference). None with fewer than two systems.
    A reference that is not on the leaderboard is a DataError naming the systems."""
    if board is None or len(board) < 2:
        return None
    names = [str(n) for n in board["name"]]
    if reference is None:
        return names[0], names[1]
    ref = str(reference)
    if ref not in names:
        raise DataError(f"reference={reference!r} is not one of the systems {names}")
    best_other = next(n for n in names if n != ref)
    return best_other, ref


@dataclass(frozen=True)
class Headline:
    """The one answer: ``better`` is ahead of ``other`` by ``estimate`` (> 0 in the better
    direction; in the score's units times ``scale``, e.g. 100 for accuracy points).

    ``conf_low``/``conf_high`` bound the advantage at ``level``; ``p_value`` is the test's
    (``alternative`` two-sided unless said); ``method`` names the analysis; ``reference`` is set
    when the pair was chosen against a reference system."""

    better: str
    other: str
    estimate: float
    std_error: float
    conf_low: float
    conf_high: float
    p_value: float
    df: float
    method: str
    level: float = 0.95
    unit: str = ""
    scale: float = 1.0
    direction: Direction | None = None
    reference: str | None = None
    task: str | None = None

    @property
    def distinguishable(self) -> bool:
        """Whether the interval excludes zero (the two systems are told apart at ``level``)."""
        return bool(np.isfinite(self.conf_low) and (self.conf_low > 0 or self.conf_high < 0))

    def text(self) -> str:
        """``"top − strong: +8.9 points (95% CI +2.8 to +14.5), p = 0.004 [method]"``; for a
        lower-is-better score the sentence says so (``"... lower TER is better"``)."""
        s = self.scale
        unit = f" {self.unit}" if self.unit else ""
        lvl = int(round(100 * self.level))
        def f(v: float) -> str:
            return "NA" if not np.isfinite(v) else f"{s * v:+.{_digits(s * self.std_error)}f}"
        p = fmt_p(self.p_value)  # the one p-value format (tables, checks, report)
        words = f"{self.better} − {self.other}: {f(self.estimate)}{unit} ({lvl}% CI {f(self.conf_low)} to {f(self.conf_high)}), p = {p} [{self.method}]"
        if self.direction is not None and not self.direction.higher_is_better:
            m = self.direction.metric or "score"
            words += f"; lower {m} is better, so + means {self.better} scores lower"
        if self.task:
            words = f"{self.task}: {words}"
        return words

    def to_dict(self) -> dict[str, Any]:
        d = {k: jsonable(getattr(self, k)) for k in ("better", "other", "estimate", "std_error", "conf_low",
                                                      "conf_high", "p_value", "df", "method", "level", "unit",
                                                      "scale", "reference", "task")}
        d["direction"] = self.direction.to_dict() if self.direction is not None else None
        d["distinguishable"] = self.distinguishable
        d["text"] = self.text()
        return d


def _digits(se: float) -> int:
    """Decimals for a number whose standard error is ``se``: two significant digits of the SE,
    at least 1 and at most 6 decimals."""
    if not np.isfinite(se) or se <= 0:
        return 2
    return int(min(6, max(1, 1 - math.floor(math.log10(abs(se))))))


def orient(a: str, b: str, delta: float, conf_low: float, conf_high: float,
           higher_is_better: bool) -> tuple[str, str, float, float, float]:
    """A difference ``a - b`` (with its interval) as the better system's advantage: returns
    (better, other, advantage, low, high) with advantage >= 0 in the better direction."""
    sign = 1.0 if higher_is_better else -1.0
    adv, lo, hi = sign * delta, sign * conf_low, sign * conf_high
    if sign < 0:
        lo, hi = hi, lo
    if adv < 0 or (adv == 0 and str(b) < str(a)):
        return str(b), str(a), -adv, -hi, -lo
    return str(a), str(b), adv, lo, hi


def headline(a: str, b: str, delta: float, std_error: float, conf_low: float, conf_high: float, p_value: float,
             df: float, method: str, direction: Direction, *, level: float = 0.95, unit: str = "",
             scale: float = 1.0, reference: Any = None, task: str | None = None) -> Headline:
    """The headline from a pairwise difference ``a - b``, oriented so the better system leads."""
    better, other, adv, lo, hi = orient(a, b, float(delta), float(conf_low), float(conf_high),
                                        direction.higher_is_better)
    return Headline(better=better, other=other, estimate=adv, std_error=float(std_error), conf_low=lo, conf_high=hi,
                    p_value=float(p_value), df=float(df), method=method, level=float(level), unit=unit,
                    scale=float(scale), direction=direction, reference=None if reference is None else str(reference),
                    task=task)


def wald_headline(board: pd.DataFrame, method: str, direction: Direction, *, level: float = 0.95,
                  reference: Any = None, unit: str = "", scale: float = 1.0) -> Headline | None:
    """The headline of two estimates taken as independent (IRT abilities, full-benchmark
    accuracies from item subsets): the pair of :func:`choose_pair` on the best-first ``board``,
    the difference of their ``estimate`` with ``std_error = hypot(se_a, se_b)``, the Wald
    interval ``d -+ z se`` (``z = Phi^-1(1/2 + level/2)``) and the two-sided normal p-value
    ``2 (1 - Phi(|d| / se))`` (NaN when ``se`` is 0), df infinite. None with one system."""
    from scipy import stats  # noqa: PLC0415 - scipy.stats only for results that need it (CLI start-up)

    pair = choose_pair(board, reference)
    if pair is None:
        return None
    b = board.set_index("name")
    a, o = pair
    d = float(b.loc[a, "estimate"] - b.loc[o, "estimate"])
    se = float(np.hypot(b.loc[a, "std_error"], b.loc[o, "std_error"]))
    z = z_quantile(level)
    p = float(2 * stats.norm.sf(abs(d) / se)) if se > 0 else float("nan")
    return headline(a, o, d, se, d - z * se, d + z * se, p, math.inf, method, direction, level=level, unit=unit,
                    scale=scale, reference=reference)


def wald_pairs(board: pd.DataFrame, *, level: float = 0.95, higher_is_better: bool = True) -> pd.DataFrame:
    """Every pair of a best-first leaderboard as independent estimates (as :func:`wald_headline`):
    ``delta`` = estimate of a - estimate of b, ``std_error = hypot(se_a, se_b)``, the Wald
    interval, the two-sided normal p-value and ``p_adj`` (Holm over the pairs), rewritten best
    first by :func:`best_first_pairs` (columns :data:`PAIR_COLUMNS`). Empty with one system."""
    from scipy import stats  # noqa: PLC0415 - scipy.stats only for results that need it (CLI start-up)

    from .padjust import adjust_pvalues  # noqa: PLC0415 - beside the layers, as the results

    names = [str(n) for n in board["name"]]
    est = board["estimate"].to_numpy(dtype=float)
    se = board["std_error"].to_numpy(dtype=float)
    a, b = np.triu_indices(len(names), 1)
    d = est[a] - est[b]
    s = np.hypot(se[a], se[b])
    z = z_quantile(level)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(s > 0, 2 * stats.norm.sf(np.abs(d) / np.where(s > 0, s, 1.0)), np.nan)
    pairs = pd.DataFrame({"system_a": [names[i] for i in a], "system_b": [names[j] for j in b], "delta": d,
                          "std_error": s, "conf_low": d - z * s, "conf_high": d + z * s, "p_value": p,
                          "p_adj": adjust_pvalues(p, "holm") if len(p) else p})
    return best_first_pairs(pairs, names, higher_is_better)


# ------------------------------------------------------------------------------ shared small rules
def z_quantile(level: float) -> float:
    """The two-sided normal quantile of a ``level`` interval, ``Phi^-1(1/2 + level/2)``."""
    from scipy import stats  # noqa: PLC0415 - scipy.stats only for results that need it (CLI start-up)

    return float(stats.norm.ppf(0.5 + float(level) / 2.0))


def pair_row(table: pd.DataFrame, a: str, b: str, *, task: Any = None, a_col: str = "system_a",
             b_col: str = "system_b") -> tuple[pd.Series, float] | None:
    """The one pair-row helper: the row of the pair (a, b) in a pair table and the sign turning
    its difference into ``a - b`` (+1 when the row is (a, b), -1 when it is (b, a)); None when
    the pair is absent. A pair table names the pair in columns ``a_col``, ``b_col``; an emmeans
    contrast table (no such columns) in its ``contrast`` text, ``"a - b"`` or ``"(a) - (b)"``
    (emmeans puts names with spaces or signs in parentheses). With ``task``, only that task's rows."""
    if table is None or not len(table):
        return None
    t = table
    if task is not None and "task" in t.columns:
        t = t[t["task"].astype(str) == str(task)]
    if a_col not in t.columns and "contrast" in t.columns:
        c = t["contrast"].astype(str)
        def named(x: str, y: str) -> pd.Series:
            return c.isin([f"{u} - {v}" for u in (x, f"({x})") for v in (y, f"({y})")])
        for sign, hit in ((1.0, named(str(a), str(b))), (-1.0, named(str(b), str(a)))):
            if hit.any():
                return t[hit.to_numpy()].iloc[0], sign
        return None
    ta, tb = t[a_col].astype(str), t[b_col].astype(str)
    hit = t[(ta == str(a)) & (tb == str(b))]
    if len(hit):
        return hit.iloc[0], 1.0
    hit = t[(ta == str(b)) & (tb == str(a))]
    if len(hit):
        return hit.iloc[0], -1.0
    return None


#: the columns of an answer's ``differences`` table (every pair, best first)
PAIR_COLUMNS = ("system_a", "system_b", "delta", "std_error", "df", "conf_low", "conf_high", "p_value", "p_adj", "method")


def best_first_pairs(pairs: pd.DataFrame, order: list[str], higher_is_better: bool, *, delta: str = "delta",
                     keep: tuple[str, ...] = (), signed: tuple[str, ...] = ()) -> pd.DataFrame:
    """A pair table (``system_a``, ``system_b``, ``delta`` = a - b on the score's scale,
    ``conf_low``/``conf_high`` of a - b, optional ``std_error``, ``p_value``, ``p_adj``, ``task``)
    rewritten best first: in every row ``system_a`` stands above ``system_b`` on the leaderboard
    (``order``, best first), and ``delta`` is the advantage of ``system_a`` over ``system_b``
    in the better direction (``+`` = system_a is better; for a lower-is-better score
    ``delta = b - a`` on the score's scale), with its interval. Rows are sorted by the leaderboard position of
    ``system_a``, then of ``system_b`` (per task, in the table's task order). Columns
    :data:`PAIR_COLUMNS` (those present), ``keep`` and ``task`` first when present; the ``keep``
    columns named in ``signed`` (a t statistic, a signal-to-noise ratio) change sign with ``delta``."""
    pos = {str(n): i for i, n in enumerate(order)}
    sign = 1.0 if higher_is_better else -1.0
    rows = []
    for r in pairs.to_dict("records"):
        a, b = str(r["system_a"]), str(r["system_b"])
        d = float(r[delta])
        lo, hi = float(r.get("conf_low", np.nan)), float(r.get("conf_high", np.nan))
        factor = sign
        if pos.get(b, len(pos)) < pos.get(a, len(pos)):  # b ranks higher: flip the pair
            a, b, d, lo, hi = b, a, -d, -hi, -lo
            factor = -sign
        est, lo, hi = (d, lo, hi) if sign > 0 else (-d, -hi, -lo)
        out = {"system_a": a, "system_b": b, "delta": est, "conf_low": lo, "conf_high": hi}
        for c in ("std_error", "df", "p_value", "p_adj", "method", *keep):
            if c in r:
                out[c] = factor * r[c] if c in signed else r[c]
        if "task" in r:
            out["task"] = r["task"]
        rows.append(out)
    cols = [c for c in ("task", *PAIR_COLUMNS, *keep) if rows and c in rows[0]] or \
        [c for c in ("task", *PAIR_COLUMNS) if c in pairs.columns or c in ("system_a", "system_b", "delta")]
    t = pd.DataFrame(rows, columns=cols)
    if not len(t):
        return t
    tasks = list(dict.fromkeys(t["task"].astype(str))) if "task" in t.columns else []
    key = pd.DataFrame({"t": [tasks.index(str(x)) for x in t["task"]] if tasks else 0,
                        "a": [pos.get(str(x), len(pos)) for x in t["system_a"]],
                        "b": [pos.get(str(x), len(pos)) for x in t["system_b"]]})
    idx = np.lexsort((key["b"].to_numpy(), key["a"].to_numpy(), np.asarray(key["t"])))
    return t.iloc[idx].reset_index(drop=True)


def versus(pairs: pd.DataFrame, anchor: str, order: list[str] | None = None) -> pd.DataFrame:
    """Every system's difference from ``anchor`` (the best, or a reference) from a best-first
    pair table (:func:`best_first_pairs`, an answer's ``differences``): columns
    :data:`DIFFERENCE_COLUMNS`, ``estimate`` > 0 when the system is better than the anchor (in
    the better direction), rows in the order of ``order`` (default: the table's)."""
    rows = []
    for r in pairs.to_dict("records"):
        a, b = str(r["system_a"]), str(r["system_b"])
        if anchor not in (a, b) or a == b:
            continue
        d, lo, hi = float(r["delta"]), float(r.get("conf_low", np.nan)), float(r.get("conf_high", np.nan))
        other, est, lo, hi = (a, d, lo, hi) if b == str(anchor) else (b, -d, -hi, -lo)
        rows.append({"name": other, "versus": str(anchor), "estimate": est, "conf_low": lo, "conf_high": hi,
                     "p_value": float(r.get("p_value", np.nan))})
    out = pd.DataFrame(rows, columns=list(DIFFERENCE_COLUMNS))
    if order is not None and len(out):
        pos = {str(n): i for i, n in enumerate(order)}
        out = out.iloc[np.argsort([pos.get(n, len(pos)) for n in out["name"]], kind="stable")].reset_index(drop=True)
    return out


def convention(direction: Direction | None, unit: str = "") -> str:
    """The sign convention of every pair table of an answer, in one sentence."""
    u = f" (in {unit})" if unit else ""
    if direction is not None and not direction.higher_is_better:
        m = direction.metric or "score"
        return (f"delta = advantage of system_a over system_b{u}, system_a listed first as the better on the "
                f"leaderboard; lower {m} is better, so + means system_a scores lower")
    return f"delta = system_a - system_b{u}, system_a listed first as the better on the leaderboard; + means system_a scores higher"


# ------------------------------------------------------------------------------ the answer value
RANK_KINDS = ("simultaneous", "marginal")


@dataclass(frozen=True)
class Answer:
    """The one answer of a result that compares or ranks systems (DESIGN.md: one question, one answer).

    direction : :class:`Direction` of the score.
    leaderboard : best first, columns :data:`LEADERBOARD_COLUMNS`; its rank intervals are of
        kind ``rank_kind`` (``"simultaneous"``: all systems at once, Mogstad et al. 2024; or
        ``"marginal"``).
    headline : the :class:`Headline` (best against runner-up or the best other against the
        reference); None with fewer than two systems (``no_headline_text`` says why).
    differences : every pair best first (:func:`best_first_pairs`: ``system_a`` above
        ``system_b`` on the leaderboard, ``delta`` its advantage in the better direction), the
        convention in :attr:`convention`.
    checks : other analyses of the same question, columns :data:`CHECK_COLUMNS`, each with a
        verdict computed from its own numbers (:func:`check_row`).
    method : what produced the answer (the headline's analysis, or the leaderboard's when there is
        no headline).
    """

    direction: Direction
    leaderboard: pd.DataFrame | None
    headline: Headline | None
    differences: pd.DataFrame | None = None
    checks: pd.DataFrame | None = None
    rank_kind: str = "simultaneous"
    no_headline_text: str = "one system: no comparison"
    method: str = ""

    def __post_init__(self) -> None:
        if self.rank_kind not in RANK_KINDS:
            raise ValueError(f"rank_kind must be one of {RANK_KINDS}, got {self.rank_kind!r}")

    @property
    def unit(self) -> str:
        return self.headline.unit if self.headline is not None else ""

    @property
    def scale(self) -> float:
        return self.headline.scale if self.headline is not None else 1.0

    @property
    def convention(self) -> str:
        """The sign convention of :attr:`differences` (and every pair table of the result)."""
        return convention(self.direction, "")

    @property
    def rank_label(self) -> str:
        """How the leaderboard's rank intervals are labelled wherever they are shown."""
        return ("simultaneous rank interval (all systems at once, Mogstad et al. 2024)" if self.rank_kind ==
                "simultaneous" else "marginal rank interval (each system on its own)")

    def headline_text(self) -> str:
        return self.no_headline_text if self.headline is None else self.headline.text()

    @property
    def p_value(self) -> float:
        return float("nan") if self.headline is None else float(self.headline.p_value)

    @property
    def best(self) -> str | None:
        b = self.leaderboard
        return None if b is None or not len(b) else str(b["name"].iloc[0])

    def check_summary(self) -> str:
        """What the checks mean for the answer: "" when none differs, else one sentence."""
        c = self.checks
        if c is None or not len(c):
            return ""
        v = c["verdict"].astype(str)
        bad = int(v.str.startswith("differs").sum())
        if not bad:
            return ""
        n = int((~v.str.startswith("not available")).sum())
        head = self.headline
        if head is not None and head.distinguishable:
            what = (f"the headline tells {head.better} and {head.other} apart; {bad} of {n} checks "
                    "do not fully agree, so read the difference as less certain than its interval says")
        else:
            what = (f"the headline does not tell the two systems apart; {bad} of {n} checks differ, "
                    "see their reasons before reading more into either")
        return what

    def to_dict(self) -> dict[str, Any]:
        return {"headline": None if self.headline is None else self.headline.to_dict(),
                "headline_text": self.headline_text(),
                "direction": self.direction.to_dict() if self.direction is not None else None,
                "leaderboard": jsonable(self.leaderboard), "rank_interval": self.rank_kind,
                "differences": jsonable(self.differences), "convention": self.convention,
                "checks": jsonable(self.checks), "check_summary": self.check_summary(), "method": self.method}


# ------------------------------------------------------------------------------ the mixin
def _view(name: str, doc: str) -> property:
    """A read-only view of the result's ``answer.<name>`` (None without an answer)."""
    def get(self: Any) -> Any:
        a = self._get_answer()
        return None if a is None else getattr(a, name)
    get.__doc__ = doc
    return property(get)


class AnswerMixin:
    """The answer's views on every result that compares or ranks (put it before the result base
    class). The result holds one field, ``answer`` (:class:`Answer`; EMMs compute it from their
    defaults as a cached property); ``headline``, ``leaderboard``, ``checks``, ``direction``,
    ``differences``, ``p_value`` and ``headline_text()`` are views of it, and ``to_dict()`` puts
    the answer first. No result declares an answer field of its own. ``_answer_priority``
    (lower first) decides which result answers a report that holds several."""

    #: lower answers first in a report holding several results
    _answer_priority: int = 50

    def _get_answer(self) -> Answer | None:
        return getattr(self, "answer", None)

    def headline_text(self) -> str:
        """The one-line answer (:meth:`Headline.text` of the headline)."""
        a = self._get_answer()
        return "no comparison" if a is None else a.headline_text()

    @property
    def p_value(self) -> float:
        """The headline's p-value (NaN without a headline)."""
        a = self._get_answer()
        return float("nan") if a is None else a.p_value

    headline = _view("headline", "The answer's :class:`Headline` (None with fewer than two systems).")
    leaderboard = _view("leaderboard", "The answer's best-first leaderboard (:data:`LEADERBOARD_COLUMNS`).")
    checks = _view("checks", "The answer's checks (:data:`CHECK_COLUMNS`).")
    direction = _view("direction", "The score's :class:`Direction`.")
    differences = _view("differences", "Every pair best first, signed in the better direction (:func:`best_first_pairs`).")

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()  # type: ignore[misc]
        a = self._get_answer()
        d.pop("answer", None)
        return {"answer": None if a is None else a.to_dict(), **d}


# ------------------------------------------------------------------------------ checks
def width_ratio(head: Headline, conf_low: float, conf_high: float) -> float:
    """The width of an interval relative to the headline's (NaN when either is not finite)."""
    w, hw = float(conf_high) - float(conf_low), float(head.conf_high) - float(head.conf_low)
    return w / hw if np.isfinite(w) and np.isfinite(hw) and hw > 0 else float("nan")


def check_row(check: str, head: Headline, *, estimate: float = np.nan, conf_low: float = np.nan,
              conf_high: float = np.nan, p_value: float = np.nan, why: str | None = None,
              alpha: float | None = None) -> dict[str, Any]:
    """One row of a result's ``checks`` table: another analysis of the headline's question.

    ``estimate``/``conf_low``/``conf_high`` are that analysis' estimate of the same advantage
    (better minus other in the better direction; NaN when it has none on this scale, e.g. an
    odds ratio), ``p_value`` its test. The verdict is computed from these numbers only:
    ``"agrees"`` when it reaches the same decision at ``alpha`` (1 - the headline's level) with
    the same sign; else ``"differs: <what differs>"`` -- the opposite sign, or significant here
    and not in the headline (or the reverse), and how wide its interval is beside the
    headline's (:func:`width_ratio`: "1.3x as wide", "0.8x as wide", measured, never assumed)
    -- followed by ``why``, the caller's reason that belongs to this analysis alone. A check
    without a p-value is ``"not available"`` (with ``why``)."""
    a = (1.0 - head.level) if alpha is None else alpha
    head_sig = bool(np.isfinite(head.p_value) and head.p_value < a)
    sig = bool(np.isfinite(p_value) and p_value < a)
    same_sign = not (np.isfinite(estimate) and estimate < 0 and sig)
    if not np.isfinite(p_value):
        verdict = "not available" + (f": {why}" if why else "")
    elif sig == head_sig and same_sign:
        verdict = "agrees"
    else:
        if not same_sign:
            what = "the opposite sign"
        elif sig:
            what = f"significant at {a:g} here (p = {fmt_p(p_value)}), not in the headline (p = {fmt_p(head.p_value)})"
        else:
            what = f"not significant at {a:g} here (p = {fmt_p(p_value)}), unlike the headline (p = {fmt_p(head.p_value)})"
        r = width_ratio(head, conf_low, conf_high)
        if np.isfinite(r):
            what += f"; its interval is {r:.2f}x as wide as the headline's"
        verdict = f"differs: {what}" + (f"; {why}" if why else "")
    return {"check": check, "estimate": float(estimate), "conf_low": float(conf_low), "conf_high": float(conf_high),
            "p_value": float(p_value), "verdict": verdict}


def checks_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The checks table (columns :data:`CHECK_COLUMNS`) from :func:`check_row` rows."""
    return pd.DataFrame(rows, columns=list(CHECK_COLUMNS))


# ------------------------------------------------------------------------------ differences
#: the columns of a result's ``differences`` table (every system against the best or the reference)
DIFFERENCE_COLUMNS = ("name", "versus", "estimate", "conf_low", "conf_high", "p_value")


def differences(pairs: pd.DataFrame, anchor: str, names: list[str], higher_is_better: bool) -> pd.DataFrame:
    """Every system's difference from ``anchor`` (the best, or the reference) in the better
    direction: ``estimate`` > 0 means the system is better than the anchor, < 0 worse.

    ``pairs`` has one row per pair with columns ``a, b, delta`` (a - b on the score's scale),
    ``conf_low, conf_high`` (of a - b) and ``p_value``; the rows involving ``anchor`` are used,
    in the order of ``names`` (the leaderboard's). Columns :data:`DIFFERENCE_COLUMNS`."""
    sign = 1.0 if higher_is_better else -1.0
    by_other: dict[str, dict[str, Any]] = {}
    for r in pairs.itertuples(index=False):
        a, b = str(r.a), str(r.b)
        if anchor not in (a, b) or a == b:
            continue
        other, s = (a, 1.0) if b == anchor else (b, -1.0)
        lo, hi = s * float(r.conf_low), s * float(r.conf_high)  # other - anchor
        lo, hi = min(lo, hi), max(lo, hi)
        est = sign * s * float(r.delta)
        lo, hi = (sign * lo, sign * hi) if sign > 0 else (-hi, -lo)
        by_other.setdefault(other, {"name": other, "versus": anchor, "estimate": est, "conf_low": lo,
                                    "conf_high": hi, "p_value": float(r.p_value)})
    rows = [by_other[n] for n in map(str, names) if n in by_other]
    return pd.DataFrame(rows, columns=list(DIFFERENCE_COLUMNS))


def _metric_word(metric: Any) -> str:
    m = str(metric or "score")
    return m.upper() if len(m) <= 4 and m.isalpha() else m


def answer_sentence(diffs: pd.DataFrame, head: Headline | None, *, metric: Any = None, scale: float = 1.0,
                    unit: str = "") -> str:
    """The answer in one line, from every system's difference from a reference
    (:func:`differences`, ``versus`` the reference) and the headline (best vs runner-up):
    ``"Marking and PostEdit lower TER by 1.2 and 1.0 points vs Baseline (p < 0.001 each);
    Marking vs PostEdit not distinguishable (+0.27 points, 95% CI -0.02 to +0.57, p = 0.07)"``: one
    significant digit of the standard error, more where a number would round to zero."""
    d = head.direction if head is not None else None
    lower = d is not None and not d.higher_is_better
    word = "lower" if lower else "higher"
    m = _metric_word(metric if metric is not None else (d.metric if d is not None else None))
    u = f" {unit}" if unit else ""
    digits = _short_digits(scale * float(np.nanmedian(np.abs(diffs["conf_high"] - diffs["conf_low"])) / 3.92)) \
        if len(diffs) else 2
    parts = []
    if len(diffs):
        ref = str(diffs["versus"].iloc[0])
        apart = diffs[(diffs["conf_low"] > 0)]
        if len(apart):
            names = list(apart["name"].astype(str))
            vals = [f"{scale * v:.{digits}f}" for v in apart["estimate"]]
            ps = apart["p_value"].to_numpy(dtype=float)
            ptxt = (f"p < 0.001{' each' if len(ps) > 1 else ''}" if np.all(ps < 0.001) else
                    "p = " + ", ".join(fmt_p(p) for p in ps))
            parts.append(f"{_and(names)} {word} {m} by {_and(vals)}{u} vs {ref} ({ptxt})")
        worse = diffs[diffs["conf_high"] < 0]
        if len(worse):
            parts.append(f"{_and(list(worse['name'].astype(str)))} {'higher' if lower else 'lower'} {m} than {ref}")
        same = diffs[(diffs["conf_low"] <= 0) & (diffs["conf_high"] >= 0)]
        if len(same) and head is not None and {str(head.better), str(head.other)} != {ref, *map(str, same["name"])}:
            parts.append(f"{_and(list(same['name'].astype(str)))} not distinguishable from {ref}")
    if head is not None:
        s = head.scale if head.scale != 1.0 else scale
        hu = f" {head.unit}" if head.unit else u
        dd = _short_digits(s * head.std_error)
        while dd < _digits(s * head.std_error) and any(  # a bound that rounds to 0 would print "-0.0"
                v != 0 and round(s * v, dd) == 0 for v in (head.estimate, head.conf_low, head.conf_high)):
            dd += 1
        lvl = int(round(100 * head.level))
        nums = (f"{s * head.estimate:+.{dd}f}{hu}, {lvl}% CI {s * head.conf_low:+.{dd}f} to {s * head.conf_high:+.{dd}f}, "
                f"p = {fmt_p(head.p_value)}")
        if head.distinguishable:
            parts.append(f"{head.better} {word} {m} than {head.other} ({nums})")
        else:
            parts.append(f"{head.better} vs {head.other} not distinguishable ({nums})")
    return "; ".join(parts) if parts else "nothing to compare"


def _short_digits(se: float) -> int:
    """Decimals for a number in a sentence: one significant digit of its standard error."""
    if not np.isfinite(se) or se <= 0:
        return 2
    return int(min(6, max(0, -math.floor(math.log10(abs(se))))))


def _and(xs: list[str]) -> str:
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]
