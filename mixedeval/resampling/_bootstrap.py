"""Hierarchical paired bootstrap of item-level score tables, in vectorized numpy.

The table has one row per (system, item[, run][, group]) with a per-item score (or, for a
corpus-level metric, per-item sufficient statistics such as tp/fp/fn). Items are nested in
groups (languages, tasks); runs (training seeds, sampling runs) are crossed with items and
groups: run k of a system is one run evaluated on every item of every group.

Point estimate of a system (``statistic="mean"``)::

    cell(k, g)   = mean over the items of group g of the scores of run k
    group(g)     = mean over runs of cell(k, g)
    estimate     = aggregator over groups of group(g)        (mean, median or geometric mean)

For a corpus-level metric, cell(k, g) = f(sums over the items of group g of the statistics of
run k), e.g. F1 = 2 tp / (2 tp + fp + fn) from summed counts (DESIGN rule 7: recomputed from
resampled sufficient statistics, never averaged over items).

One bootstrap replicate redraws the sampled units named in ``resample``, as a multi-stage
bootstrap (Davison & Hinkley 1997, sec. 3.8):

1. ``"groups"``: the groups are drawn with replacement (or ``n_groups = k`` of them without
   replacement: a leaderboard on k languages);
2. ``"items"``: within each drawn group slot, its items are drawn with replacement
   (independently for every slot, also when a group is drawn twice);
3. ``"runs"``: K runs are drawn with replacement, once per replicate, shared by all groups.

The same draws are used for every system (paired by construction): differences between systems
and ranks are computed replicate by replicate. Draws are count matrices applied to the data by
matrix products, with no Python loop over replicates. Replicates are processed in blocks of
64, each with its own random stream and its own matrix products (split further so that a
count matrix never exceeds ~100 MB), so memory stays bounded whatever B is, and the results
are bitwise identical whatever ``chunk_size`` (the progress-bar step) is (the seeding scheme of
every resampling function, see ``_draws.py``).

References: Efron & Tibshirani (1993) An Introduction to the Bootstrap, ch. 13-14 (percentile,
BCa); Davison & Hinkley (1997) Bootstrap Methods and their Application, secs. 3.8, 4.4, 5.2-5.3;
Koehn (2004) and Berg-Kirkpatrick et al. (2012) for paired bootstrap comparisons of systems;
Sälevä, Ataman & Lignos (2025) for language resampling and rank distributions.
"""
from __future__ import annotations

from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import _rankings, _resources as res
from .._answer import (PAIR_COLUMNS, Answer, AnswerMixin, Direction, Headline, choose_pair, convention, direction,
                       leaderboard, pair_row, unit_scale)
from .._random import seed_sequence
from ..data.table import as_pandas
from ..data.validate import require_columns, require_finite, require_nonempty
from ..errors import DataError
from ..padjust import adjust_pvalues
from ..results import ResultMixin, ResultWarning, jsonable
from . import _checks as ck, _draws as dr, _stats as st
from ._bootstrap_dask import is_partitioned_input, partitioned_bootstrap

LEVELS = ("groups", "items", "runs")
_LEVEL_ALIASES = {"group": "groups", "groups": "groups", "item": "items", "items": "items",
                  "run": "runs", "runs": "runs"}
_FIX = ("Use fewer n_resamples (the replicates are kept in the result: n_resamples x systems x 8 bytes; "
        "chunk_size does not change that), or fewer systems per call.")
#: working copies of the (systems x n_resamples) replicates that summary(), pairwise() and
#: ranks() make at their peak, in units of the replicates; measured with tracemalloc for 2 to 10
#: systems: ranks() 1 + 1/S + 1/8 (rank matrix, one row's copy in np.quantile, a boolean mask),
#: summary() 1.0 (1.14 with BCa), pairwise() <= 1.1 (pairs taken S // 2 at a time), p_beats()
#: 0.14, bootstrap() itself 0.07 beyond the replicates
_WORK_COPIES = 2
#: the answer lists every pair (``differences``) up to this many systems; beyond, only the
#: headline's pair is computed (the pairs grow as S^2 / 2: :meth:`BootstrapResult.pairwise` gives them)
MAX_PAIR_SYSTEMS = 200


# ---------------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, repr=False, eq=False)
class BootstrapResult(AnswerMixin, ResultMixin):
    """Result of :func:`bootstrap`.

    Attributes
    ----------
    table : DataFrame
        The main table, :meth:`summary` with the default interval: one row per system.
    systems : tuple
        System labels, in the order of the rows of ``estimate`` and ``distribution``.
    estimate : ndarray (n_systems,)
        The statistic on the observed table.
    distribution : ndarray (n_systems, n_resamples)
        The raw bootstrap replicates; column b of every row comes from the same draw.
    ci, level : the default interval method and level of :meth:`summary` and :meth:`pairwise`.
    resample : the levels redrawn (subset of groups, items, runs).
    statistic, aggregator, higher_is_better, n_resamples : the settings used.
    design : sizes of the table (n_items per group, n_runs, n_groups, n_groups_drawn).
    provenance : versions, settings and the seed entropy that reproduces the run.
    warnings : tuple of ResultWarning (e.g. dropped incomplete items).
    answer : the one answer (:class:`mixedeval._answer.Answer`): the leaderboard best first with
        simultaneous rank intervals, the headline (best vs runner-up, or the best other vs
        ``reference``: the row of :meth:`pairwise`), ``differences`` (:meth:`pairwise`, best
        first, signed in the better direction); ``headline``, ``leaderboard``, ``direction``,
        ``differences``, ``p_value``, ``headline_text()`` are its views.
    """

    systems: tuple[Any, ...]
    estimate: np.ndarray
    distribution: np.ndarray
    ci: str
    level: float
    n_resamples: int
    resample: tuple[str, ...]
    statistic: str
    aggregator: str
    higher_is_better: bool
    design: dict[str, Any]
    provenance: dict[str, Any]
    warnings: tuple[ResultWarning, ...] = ()
    _jackknife: tuple[np.ndarray, ...] = field(default=(), repr=False)
    answer: Answer | None = field(default=None, repr=False, compare=False)

    _main_table = "table"
    _title = "Hierarchical paired bootstrap"
    _answer_priority = 50

    @property
    def _print_tables(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("summary", "pairwise") if len(self.systems) <= 6 else ("summary",)

    def _scalars(self) -> list[tuple[str, Any]]:
        head = [("headline", self.headline_text())] if self.answer is not None else []
        return head + [("statistic", self.statistic), ("aggregator over groups", self.aggregator),
                       ("resampled", ", ".join(self.resample)), ("n_resamples", self.n_resamples),
                       ("interval", f"{self.ci}, level {self.level:g}")]

    @property
    def table(self):
        """The main table: :meth:`summary` with the interval given to :func:`bootstrap`."""
        return self.summary()

    def _interval(self, est: np.ndarray, dist: np.ndarray, jack: tuple[np.ndarray, ...],
                  ci: str | None, level: float | None) -> tuple[np.ndarray, np.ndarray]:
        ci = self.ci if ci is None else st.check_ci(ci)
        level = self.level if level is None else ck.check_level(level)
        if ci == "bca" and not jack:
            raise DataError("ci='bca' needs the jackknife, computed only when bootstrap() is called with "
                            "ci='bca'; rerun bootstrap(..., ci='bca')")
        return st.intervals(est, dist, ci, level, jack)

    @res.memory_errors(_FIX)
    def summary(self, ci: str | None = None, level: float | None = None):
        """One row per system: system, estimate (observed statistic), boot_mean (mean of the
        replicates), std_error (SD of the replicates, ddof=1), conf_low, conf_high (interval
        method ``ci``, default the one given to :func:`bootstrap`)."""
        lo, hi = self._interval(self.estimate, self.distribution, self._jackknife, ci, level)
        return pd.DataFrame({
            "system": list(self.systems),
            "estimate": self.estimate,
            "boot_mean": self.distribution.mean(axis=1),
            "std_error": st.sd(self.distribution),
            "conf_low": lo,
            "conf_high": hi,
        })

    @res.memory_errors(_FIX)
    def pairwise(self, adjust: str = "holm", ci: str | None = None, level: float | None = None,
                 reference: Any = None):
        """Paired differences for every pair of systems (or of every system and ``reference``),
        best first: in every row ``system_a`` stands above ``system_b`` on the leaderboard (by the
        point estimate in the better direction, ties in system order), and ``delta`` is the
        advantage of ``system_a`` in the better direction: system_a - system_b when higher is
        better, system_b - system_a when lower is better (TER, WER), so ``delta >= 0`` for every
        row and the row of the best system and the runner-up is the headline's. Rows are sorted by
        the leaderboard position of system_a, then of system_b (:func:`mixedeval._answer.best_first_pairs`'s
        convention; ``DataFrame.attrs['convention']`` says it in words).

        Columns: system_a, system_b, delta (observed), std_error (SD of the replicate
        differences), conf_low, conf_high (interval of delta, from the replicates of the same
        signed difference), p_value (unadjusted), p_adj (adjusted by ``adjust``), snr = delta /
        std_error, the signal-to-noise ratio of the difference (Sälevä et al. 2025 call it an
        effect size; its denominator is the bootstrap SD of delta, which shrinks with more
        items, so it is not a standardized effect size).

        p_value: paired bootstrap test by the shift method (Koehn 2004; Berg-Kirkpatrick et al.
        2012): the replicate differences are centred at their mean to impose H0: delta = 0, and
        p = (c + 1) / (B + 1) with c = #{b : |delta_b - mean(delta_*)| >= |delta|}. p_adj adjusts
        them with ``adjust`` (a method of R's p.adjust, see :func:`mixedeval.adjust_pvalues`);
        the method is stored in ``DataFrame.attrs['adjust']``.
        """
        a_idx, b_idx = self._pairs(reference)
        return self._pair_table(a_idx, b_idx, adjust, ci, level)

    def _pair_table(self, a_idx: np.ndarray, b_idx: np.ndarray, adjust: str, ci: str | None, level: float | None):
        """:meth:`pairwise`'s table for the pairs (a_idx[i], b_idx[i]), delta signed in the better direction."""
        sign = 1.0 if self.higher_is_better else -1.0
        est = sign * (self.estimate[a_idx] - self.estimate[b_idx])
        n_pairs = len(a_idx)
        lo, hi, sd, c = (np.empty(n_pairs) for _ in range(4))
        # pairs in batches of S // 2 rows (every quantity is computed row by row, so the numbers do
        # not depend on the batching): working memory stays below that of the replicates
        step = max(1, len(self.systems) // 2)
        for a in range(0, n_pairs, step):
            sl = slice(a, min(n_pairs, a + step))
            ia, ib = a_idx[sl], b_idx[sl]
            dist = self.distribution[ia] - self.distribution[ib]
            if sign < 0:
                np.negative(dist, out=dist)
            jack = tuple(sign * (j[ia] - j[ib]) for j in self._jackknife)
            lo[sl], hi[sl] = self._interval(est[sl], dist, jack, ci, level)
            sd[sl] = st.sd(dist)
            dist -= dist.mean(axis=1, keepdims=True)  # the null distribution, centred in place
            c[sl] = st.count_extreme(dist, est[sl], "two-sided")
            del dist
        if not n_pairs:  # validate ci and level as the unbatched code did
            self._interval(est, np.empty((0, self.n_resamples)), tuple(j[:0] for j in self._jackknife), ci, level)
        p = st.p_from_count(c, self.n_resamples, "plus_one")
        with np.errstate(divide="ignore", invalid="ignore"):
            snr = est / sd
        out = pd.DataFrame({
            "system_a": [self.systems[i] for i in a_idx],
            "system_b": [self.systems[i] for i in b_idx],
            "delta": est, "std_error": sd, "conf_low": lo, "conf_high": hi,
            "p_value": p, "p_adj": adjust_pvalues(p, adjust) if len(p) else p, "snr": snr,
        })
        out.attrs["adjust"] = adjust
        out.attrs["convention"] = convention(self._direction())
        return out

    def _pairs(self, reference: Any) -> tuple[np.ndarray, np.ndarray]:
        """(a, b) indices of the pairs, best first: a above b on the leaderboard, rows sorted by
        the position of a, then of b."""
        order = self._order()
        pos = np.empty(len(order), dtype=np.intp)
        pos[order] = np.arange(len(order))
        k = len(self.systems)
        if reference is None:
            a, b = np.triu_indices(k, 1)
            a, b = order[a], order[b]
        else:
            if reference not in self.systems:
                raise DataError(f"reference system {reference!r} is not one of the systems {list(self.systems)}")
            r = self.systems.index(reference)
            o = np.array([i for i in order if i != r], dtype=np.intp)
            first = pos[o] < pos[r]
            a = np.where(first, o, r).astype(np.intp)
            b = np.where(first, r, o).astype(np.intp)
            srt = np.lexsort((pos[b], pos[a]))
            a, b = a[srt], b[srt]
        return a.astype(np.intp), b.astype(np.intp)

    def _direction(self) -> Direction:
        """The score's direction (the answer's; from ``higher_is_better`` and the provenance when
        the result was built without one)."""
        if self.answer is not None:
            return self.answer.direction
        d = self.provenance.get("direction") or {}
        return Direction(bool(self.higher_is_better), d.get("source", "declared"), d.get("metric"))

    def _rank_matrix(self, higher_is_better: bool | None) -> np.ndarray:
        hib = self.higher_is_better if higher_is_better is None else bool(higher_is_better)
        return st.rank_matrix(self.distribution, hib)

    @res.memory_errors(_FIX)
    def ranks(self, level: float | None = None, higher_is_better: bool | None = None, simultaneous: bool = False):
        """Rank distribution, best first (rows in leaderboard order: by the point estimate in the
        better direction, ties in system order): system, p_rank_1 .. p_rank_k (share of
        replicates in which the system has rank k; rank 1 = best, ties share the better rank:
        1, 2, 2, 4), expected_rank, rank_conf_low, rank_conf_high (the alpha/2 and 1 - alpha/2
        quantiles of the rank, inverted-CDF rule, so they are ranks: **marginal** rank intervals,
        each system on its own, not simultaneous).

        ``simultaneous=True`` adds rank, rank_low, rank_high (**simultaneous** rank intervals
        covering all systems' ranks at once at ``level``, Mogstad et al. 2024, from the
        studentized bootstrap of all pairwise differences: the leaderboard's) and letters
        (compact letter display): see :meth:`rank_intervals`.

        ``DataFrame.attrs['rank_kind']`` labels the interval columns: ``{"rank_conf_low":
        "marginal", "rank_conf_high": "marginal"}`` (and ``"simultaneous"`` for rank_low,
        rank_high)."""
        level = self.level if level is None else ck.check_level(level)
        cols = st.rank_columns(self._rank_matrix(higher_is_better), level)
        out = pd.DataFrame({"system": list(self.systems), **cols})
        kinds = {"rank_conf_low": "marginal", "rank_conf_high": "marginal"}
        if simultaneous:
            t = self.rank_intervals(level, higher_is_better).table.set_index("name")
            names = [str(s) for s in self.systems]
            for c in ("rank", "rank_low", "rank_high", "letters"):
                out[c] = t.loc[names, c].to_numpy()
            kinds.update(rank_low="simultaneous", rank_high="simultaneous")
        out = out.iloc[self._order(higher_is_better)].reset_index(drop=True)
        out.attrs["rank_kind"] = kinds
        return out

    @res.memory_errors(_FIX)
    def rank_intervals(self, level: float | None = None, higher_is_better: bool | None = None,
                       method: str = "bootstrap"):
        """Simultaneous rank intervals, rank distribution and compact letters from the replicates
        (:func:`mixedeval.rank_intervals` with ``draws``): ``method="bootstrap"`` studentizes
        the pairwise differences, ``"bootstrap_centered"`` does not, ``"normal"`` uses the
        replicates' covariance as a joint normal. Names are the systems as strings."""
        level = self.level if level is None else ck.check_level(level)
        hib = self.higher_is_better if higher_is_better is None else bool(higher_is_better)
        est = pd.Series(self.estimate, index=[str(s) for s in self.systems])
        return _rankings.rank_intervals(est, draws=self.distribution.T, level=level, higher_is_better=hib, method=method)

    @res.memory_errors(_FIX)
    def p_beats(self, higher_is_better: bool | None = None):
        """Square DataFrame: entry (a, b) = P(system a scores better than system b) over the
        replicates, ties counting one half; the diagonal is NaN."""
        hib = self.higher_is_better if higher_is_better is None else bool(higher_is_better)
        return pd.DataFrame(st.p_beats(self.distribution, hib), index=pd.Index(list(self.systems), name="system_a"),
                            columns=pd.Index(list(self.systems), name="system_b"))

    # ------------------------------------------------------------------ the one answer
    def _order(self, higher_is_better: bool | None = None) -> np.ndarray:
        """System indices best first, as the leaderboard lists them: by the point estimate in the
        better direction, ties in system order."""
        hib = self.higher_is_better if higher_is_better is None else bool(higher_is_better)
        return np.argsort(-self.estimate if hib else self.estimate, kind="stable")

    def to_dict(self) -> dict[str, Any]:
        """The answer first, then tables and settings, JSON-friendly (the raw distribution is left
        out: use ``.distribution``)."""
        return jsonable({
            "answer": None if self.answer is None else self.answer.to_dict(),
            "summary": self.summary(), "pairwise": self.pairwise(), "ranks": self.ranks(),
            "systems": list(self.systems), "statistic": self.statistic, "aggregator": self.aggregator,
            "resample": list(self.resample), "n_resamples": self.n_resamples, "ci": self.ci,
            "level": self.level, "higher_is_better": self.higher_is_better, "design": self.design,
            "provenance": self.provenance, "warnings": list(self.warnings),
        })


def _bootstrap_answer(res: BootstrapResult, d: Direction, reference: Any) -> Answer:
    """The one answer of a bootstrap (:class:`mixedeval._answer.Answer`).

    leaderboard: the systems best first (:func:`mixedeval._answer.leaderboard`): name, estimate,
    std_error (bootstrap SD), conf_low, conf_high (the default interval), rank, rank_low,
    rank_high (simultaneous rank intervals from the replicates, Mogstad et al. 2024) and letters.
    differences: :meth:`BootstrapResult.pairwise` (best first, Holm), its :data:`PAIR_COLUMNS`
    (None beyond :data:`MAX_PAIR_SYSTEMS` systems).
    headline: the row of the best system and the runner-up (or the best other and ``reference``)
    of the unadjusted paired table: the paired bootstrap difference, the default ``ci`` interval
    and the shift-method p-value, the better system's advantage positive. No checks."""
    s = res.summary()
    idx = [str(x) for x in res.systems]
    board = leaderboard(pd.Series(res.estimate, index=idx), std_error=s["std_error"].to_numpy(),
                        conf_low=s["conf_low"].to_numpy(), conf_high=s["conf_high"].to_numpy(),
                        draws=res.distribution.T, higher_is_better=res.higher_is_better, level=res.level)
    method = f"paired bootstrap ({res.ci} interval, shift-method p)"
    if len(idx) < 2:
        return Answer(direction=d, leaderboard=board, headline=None, differences=None, method=method)
    pair = choose_pair(board, reference)
    many = len(idx) > MAX_PAIR_SYSTEMS
    if many:  # the headline's pair only (Holm over one pair: p_adj = p)
        ia, ib = idx.index(pair[0]), idx.index(pair[1])
        pw = res._pair_table(np.array([ia]), np.array([ib]), "holm", None, None)  # noqa: SLF001 - its own result
    else:
        pw = res.pairwise()
    diffs = pw[[c for c in PAIR_COLUMNS if c in pw.columns]].copy()
    diffs["system_a"], diffs["system_b"] = diffs["system_a"].astype(str), diffs["system_b"].astype(str)
    hit = pair_row(diffs, *pair)
    if hit is None or hit[1] < 0:  # the pair is in every best-first table, better system first
        raise AssertionError(f"bootstrap pair table misses the headline pair {pair}")
    row = hit[0]
    unit, scale = unit_scale(res.estimate, d.metric)
    head = Headline(better=str(row["system_a"]), other=str(row["system_b"]), estimate=float(row["delta"]),
                    std_error=float(row["std_error"]), conf_low=float(row["conf_low"]),
                    conf_high=float(row["conf_high"]), p_value=float(row["p_value"]), df=float("inf"), method=method,
                    level=float(res.level), unit=unit, scale=scale, direction=d,
                    reference=None if reference is None else str(reference))
    return Answer(direction=d, leaderboard=board, headline=head, differences=None if many else diffs, method=method)


# ---------------------------------------------------------------------------------------------
# the score table as an array
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Table:
    """Scores as X[system, run, unit, column]; units (items) sorted by group, group g holding
    units offsets[g]:offsets[g+1]."""

    systems: list[Any]
    runs: list[Any]
    groups: list[Any]
    X: np.ndarray
    offsets: np.ndarray
    warnings: tuple[ResultWarning, ...]
    run_mask: np.ndarray  # (S, K): system s has run k (all True when runs are crossed with systems)

    @property
    def nested_runs(self) -> bool:
        return not bool(self.run_mask.all())

    @property
    def n_items(self) -> np.ndarray:
        return np.diff(self.offsets)


@dataclass(frozen=True)
class _Keys:
    """Integer codes of the key columns. A unit is a (group, item) pair: items are nested in
    groups, so item ids may repeat across groups."""

    columns: dict[str, str | None]  # role (system, item, run, group) -> column name
    systems: list[Any]
    runs: list[Any]
    groups: list[Any]
    s_code: np.ndarray
    k_code: np.ndarray
    u_code: np.ndarray
    unit_group: np.ndarray  # (N,) group of each unit
    unit_items: list[Any]  # (N,) item label of each unit

    @property
    def shape(self) -> tuple[int, int, int]:
        return len(self.systems), len(self.runs), len(self.unit_items)

    def label(self, cell: int) -> str:
        """The key of a flat cell index, e.g. (system='B', language='de', item=17, run=3)."""
        S, K, N = self.shape
        s, rest = divmod(int(cell), K * N)
        k, u = divmod(rest, N)
        c = self.columns
        parts = [f"{c['system']}={self.systems[s]!r}"]
        if c["group"] is not None:
            parts.append(f"{c['group']}={self.groups[self.unit_group[u]]!r}")
        parts.append(f"{c['item']}={self.unit_items[u]!r}")
        if c["run"] is not None:
            parts.append(f"{c['run']}={self.runs[k]!r}")
        return "(" + ", ".join(parts) + ")"


def _levels(s, column: str) -> tuple[np.ndarray, list[Any]]:
    """Integer codes and labels of a key column: a categorical's own order (unused levels
    dropped), otherwise sorted values (order of appearance if they cannot be sorted)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        s = s.cat.remove_unused_categories()
        return s.cat.codes.to_numpy(dtype=np.int64), list(s.cat.categories)
    try:
        codes, uniq = pd.factorize(s, sort=True)
    except TypeError:
        codes, uniq = pd.factorize(s, sort=False)
    return codes.astype(np.int64), list(uniq)


def _checked_frame(data: Any, cols: list[str], columns: dict[str, str | None]):
    """The table as a pandas DataFrame (only read, never modified), its columns checked."""
    df = data if isinstance(data, pd.DataFrame) else as_pandas(data)
    require_nonempty(df)
    for k in columns.values():
        if k is not None and not isinstance(k, str):
            raise DataError(f"column names must be strings, got {k!r}")
    require_columns(df, [*cols, *columns.values()])
    named = [c for c in columns.values() if c is not None]
    if len(set(named)) != len(named) or set(named) & set(cols):
        raise DataError(f"system, item, run, group and score must be different columns; got {named} and {cols}")
    for c in cols:
        require_finite(df, c)
    ck.check_labels(df, named)
    return df


def _keys(df, columns: dict[str, str | None]) -> _Keys:
    s_code, systems = _levels(df[columns["system"]], columns["system"])
    i_code, item_labels = _levels(df[columns["item"]], columns["item"])
    none = (np.zeros(len(df), np.int64), [None])
    k_code, runs = _levels(df[columns["run"]], columns["run"]) if columns["run"] is not None else none
    g_code, groups = _levels(df[columns["group"]], columns["group"]) if columns["group"] is not None else none
    n_item_codes = int(i_code.max()) + 1
    key = g_code * n_item_codes + i_code
    if len(groups) * n_item_codes <= 4 * len(df) + 1024:  # O(n) without sorting
        present = np.bincount(key, minlength=len(groups) * n_item_codes) > 0
        unit_keys = np.flatnonzero(present)
        u_code = (np.cumsum(present) - 1)[key]
    else:
        unit_keys, u_code = np.unique(key, return_inverse=True)
        u_code = u_code.ravel()
    return _Keys(columns, systems, runs, groups, s_code, k_code, u_code, unit_keys // n_item_codes,
                 [item_labels[c] for c in (unit_keys % n_item_codes)])


def _scatter(df, cols: list[str], keys: _Keys) -> tuple[np.ndarray, np.ndarray]:
    """X (S, K, N, m) with NaN where a cell has no row, and the row count of every cell
    (a DataError names duplicated cells)."""
    S, K, N = keys.shape
    flat = (keys.s_code * K + keys.k_code) * N + keys.u_code
    count = np.bincount(flat, minlength=S * K * N)
    dup = np.flatnonzero(count > 1)
    if dup.size:
        run = keys.columns["run"]
        ex = "; ".join(keys.label(c) for c in dup[:3])
        raise DataError(
            f"{dup.size} cells have more than one row, e.g. {ex}; one score per system x item"
            f"{' x ' + run if run else ''} cell is expected: average the duplicates first "
            f"(df.groupby([...]).mean()) or name the column that tells them apart as run= or group="
        )
    X = np.full((S * K * N, len(cols)), np.nan)
    X[flat] = df[cols].to_numpy(dtype=np.float64)
    return X.reshape(S, K, N, len(cols)), (count == 0).reshape(S, K, N)


def _nested_runs(missing: np.ndarray, keys: _Keys) -> tuple[np.ndarray, np.ndarray, list[ResultWarning]]:
    """Runs a system never has are nested runs, not missing cells: (missing cells left, run
    mask (S, K), warnings)."""
    S, K, _ = keys.shape
    run = keys.columns["run"]
    run_mask = np.ones((S, K), dtype=bool)
    absent = missing.all(axis=2)  # system s never ran run k
    if run is None or not absent.any():
        return missing, run_mask, []
    run_mask = ~absent
    runs = {str(keys.systems[s]): [keys.runs[k] for k in range(K) if run_mask[s, k]] for s in range(S)}
    warnings = [ResultWarning(
        "nested_runs",
        f"the systems have different {run} values ({runs}); runs are treated as nested in systems: "
        f"each system's own runs are resampled independently (items stay paired across systems)")]
    single = [name for name, r in runs.items() if len(r) == 1]
    if single:
        one = len(single) == 1
        warnings.append(ResultWarning(
            "single_run",
            f"{', '.join(single)} {'has' if one else 'have'} a single {run}: run-to-run variation cannot be "
            f"resampled there, so {'its' if one else 'their'} intervals are narrower than those of systems with "
            f"several runs"))
    return missing & run_mask[:, :, None], run_mask, warnings


def _drop_missing(X: np.ndarray, missing: np.ndarray, keys: _Keys, drop: bool) -> tuple[np.ndarray, np.ndarray,
                                                                                       list[ResultWarning]]:
    """Refuse missing cells (naming them), or with ``drop`` drop the incomplete items: (X, group
    of each kept unit, warnings)."""
    if not missing.any():
        return X, keys.unit_group, []
    S, K, N = keys.shape
    c = keys.columns
    system, run, group = c["system"], c["run"], c["group"]
    n_miss = int(missing.sum())
    whole = [(s, k) for s in range(S) for k in range(K) if run is not None and missing[s, k].all()]
    detail = ""
    if whole:
        detail = " (" + "; ".join(f"{system}={keys.systems[s]!r} has no rows for {run}={keys.runs[k]!r}"
                                  for s, k in whole[:3]) + ")"
    x_run = f" x {run}" if run else ""
    if not drop:
        ex = "; ".join(keys.label(i) for i in np.flatnonzero(missing.ravel())[:3])
        per_sys = {keys.systems[s]: int(missing[s].sum()) for s in range(S) if missing[s].any()}
        raise DataError(
            f"{n_miss} of the {S * K * N} system x item{x_run} cells have no score, e.g. {ex}{detail}; missing "
            f"cells per system: {per_sys}. Every system needs a score for every item{' and ' + run if run else ''} "
            f"for a paired comparison: fill them in, or pass drop_missing=True to drop the items that are incomplete"
        )
    keep = ~missing.any(axis=(0, 1))
    if not keep.any():
        raise DataError(
            f"drop_missing=True would drop every item: no item has a score for every system"
            f"{' and ' + run if run else ''}{detail}; fill in the missing cells or remove the incomplete "
            f"system{' or ' + run if run else ''}"
        )
    empty = [keys.groups[g] for g in range(len(keys.groups)) if not keep[keys.unit_group == g].any()]
    if empty:
        raise DataError(f"drop_missing=True would drop every item of {group} {empty}; remove that {group} from the "
                        f"table or fill in its missing cells")
    warning = ResultWarning("missing_rows", f"dropped {int((~keep).sum())} of {N} items that lack a score for some "
                                            f"system{' or ' + run if run else ''} ({n_miss} missing cells){detail}")
    return X[:, :, keep], keys.unit_group[keep], [warning]


def _pivot(data: Any, cols: list[str], system: str, item: str, run: str | None, group: str | None,
           drop_missing: bool) -> _Table:
    """The score table as X[system, run, unit, column], checked and encoded."""
    columns = {"system": system, "item": item, "run": run, "group": group}
    df = _checked_frame(data, cols, columns)
    keys = _keys(df, columns)
    X, missing = _scatter(df, cols, keys)
    missing, run_mask, warnings = _nested_runs(missing, keys)
    X, unit_group, dropped = _drop_missing(X, missing, keys, drop_missing)
    G = len(keys.groups)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(unit_group, minlength=G))]).astype(np.int64)
    X[~run_mask] = 0.0  # runs a system does not have: zero weight in every replicate
    return _Table(keys.systems, keys.runs, keys.groups, np.ascontiguousarray(X), offsets,
                  tuple(warnings + dropped), run_mask)


# ---------------------------------------------------------------------------------------------
# the statistic of a (resampled) table
# ---------------------------------------------------------------------------------------------

def _combine(cells: np.ndarray, run_weights: np.ndarray, aggregator: str, during: str,
             run_mask: np.ndarray | None = None) -> np.ndarray:
    """cells (S, K, J, c) of per-run statistics -> (S, c): weighted mean over runs (weights
    (c, K) shared by all systems, or (S, c, K) per system = how often each run was drawn), then
    aggregator over the J group slots. ``run_mask`` (S, K) zeroes the runs a system lacks."""
    if run_mask is not None and not run_mask.all():
        cells = np.where(run_mask[:, :, None, None], cells, 0.0)
    if run_weights.ndim == 2:
        group_scores = np.einsum("skjc,ck->sjc", cells, run_weights) / run_weights.sum(axis=1)
    else:
        group_scores = np.einsum("skjc,sck->sjc", cells, run_weights) / run_weights.sum(axis=2)[:, None, :]
    return st.aggregate(group_scores, aggregator, axis=1, during=during)


def _run_means(X: np.ndarray, run_mask: np.ndarray) -> np.ndarray:
    """Mean over each system's own runs: X (S, K, ...) -> (S, 1, ...).

    This is the bootstrap's statistic (the mean over runs of the observed or resampled cells),
    not a reduction of the data: the logs workflows hand the bootstrap the rows of their
    evaluation design (:mod:`mixedeval.workflows.logs.design`), whose epochs are already reduced
    there, and their runs are reduced here only as part of the statistic."""
    if run_mask.all():
        return X.mean(axis=1, keepdims=True)
    w = run_mask.astype(float)
    tail = [1] * (X.ndim - 2)
    return (X * w.reshape(*w.shape, *tail)).sum(axis=1, keepdims=True) / w.sum(axis=1).reshape(w.shape[0], 1, *tail)


# ---------------------------------------------------------------------------------------------
# the bootstrap
# ---------------------------------------------------------------------------------------------

def _parse_resample(resample: Any, run: str | None, group: str | None, item: str, n_runs: int,
                    n_groups: int | None) -> tuple[str, ...]:
    if resample is None:
        out = {"items"}
        if run is not None and n_runs >= 2:
            out.add("runs")
        if n_groups is not None:
            out.add("groups")
    else:
        names = [resample] if isinstance(resample, str) else list(resample)
        columns = {item: "items", run: "runs", group: "groups"}
        out = set()
        for r in names:
            lvl = _LEVEL_ALIASES.get(str(r).lower()) if r not in columns else columns[r]
            if lvl is None:
                raise DataError(
                    f"resample entry {r!r} is not a level; use any of 'groups', 'items', 'runs' (or the column names "
                    f"{[c for c in (group, item, run) if c]})"
                )
            out.add(lvl)
        if not out:
            raise DataError("resample is empty; name at least one of 'groups', 'items', 'runs'")
    if "runs" in out and run is None:
        raise DataError("resample includes 'runs' but no run column was given; pass run='<run column>'")
    if "groups" in out and group is None:
        raise DataError("resample includes 'groups' but no group column was given; pass group='<language column>'")
    if n_groups is not None and "groups" not in out:
        raise DataError("n_groups subsamples groups: include 'groups' in resample (or leave resample=None)")
    return tuple(lv for lv in LEVELS if lv in out)


@dataclass(frozen=True)
class _Settings:
    """The checked arguments of :func:`bootstrap`."""

    stat: st.CellStatistic
    cols: list[str]
    aggregator: str
    ci: str
    level: float
    n_resamples: int
    precision: str
    ss: np.random.SeedSequence


def _check_args(score: Any, statistic: Any, aggregator: Any, ci: Any, level: Any, n_resamples: Any,
                precision: Any, random_state: Any) -> _Settings:
    stat, cols = st.cell_statistic(statistic, score)
    if precision not in ("float64", "float32"):
        raise DataError(f"precision must be 'float64' or 'float32', got {precision!r}")
    return _Settings(stat, cols, st.check_aggregator(aggregator), st.check_ci(ci), ck.check_level(level),
                     ck.check_n_resamples(n_resamples), precision, seed_sequence(random_state))


@res.memory_errors(_FIX)
def bootstrap(
    data: Any,
    score: str | Sequence[str],
    system: str,
    item: str,
    run: str | None = None,
    group: str | None = None,
    *,
    resample: str | Sequence[str] | None = None,
    statistic: Literal["mean", "f1"] | Any = "mean",
    aggregator: Literal["mean", "median", "geometric_mean"] = "mean",
    n_resamples: int = 10_000,
    ci: Literal["percentile", "basic", "bca", "se"] = "percentile",
    level: float = 0.95,
    random_state: Any = None,
    n_groups: int | None = None,
    higher_is_better: bool | None = None,
    reference: Any = None,
    drop_missing: bool = False,
    chunk_size: int | None = None,
    precision: Literal["float64", "float32"] = "float64",
    progress: bool | None = None,
    executor: Any = None,
) -> BootstrapResult:
    """Hierarchical paired bootstrap of systems' scores on an item-level table.

    Parameters
    ----------
    data : DataFrame (pandas, polars, pyarrow) or file path
        One row per system x item (x run) (x group). Not modified.
    score : str or list of str
        The per-item score column, or for a corpus-level ``statistic`` the per-item
        sufficient-statistic columns (``["tp", "fp", "fn"]`` for F1).
    system, item : str
        Columns naming the system and the test item (items are nested in groups).
    run : str, optional
        Column naming the run of a system (training seed, sampling run; crossed with items and
        groups, or nested in systems when the systems have different runs).
    group : str, optional
        Column naming the language / task; item ids may repeat across groups.
    resample : str or list, optional
        Levels redrawn: any of ``"groups"``, ``"items"``, ``"runs"`` (or the column names).
        Default: items, plus runs when ``run`` has at least 2 levels, plus groups when
        ``n_groups`` is given. Languages are treated as fixed unless listed.
    statistic : "mean", "f1" or callable
        ``"mean"``: mean of the item scores per (system, run, group). ``"f1"``: 2 tp / (2 tp +
        fp + fn) of the summed counts (0 when there is nothing to find and nothing found). A
        callable ``f(*sums)`` receives one array per score column holding the sums over
        the (resampled) items and must work elementwise. Named corpus statistics: "bleu" /
        "chrf" (columns of :func:`mixedeval.metrics.sentence_stats`), "accuracy", "exact_match",
        "precision", "recall", "f1_micro", "precision_macro", "recall_macro", "f1_macro"
        (see ``mixedeval.resampling._stats.STATISTICS``).
    aggregator : "mean", "median" or "geometric_mean"
        How per-group scores (mean over runs of the cell statistic) combine into a system
        score. The geometric mean needs positive scores (DataError otherwise).
    n_resamples : int
        Number of bootstrap replicates B.
    ci : "percentile", "basic", "bca" or "se"
        Default interval of summary() and pairwise(): percentile; basic; BCa (acceleration from
        the jackknife over every resampled level: leave one group / item (per group) / run
        out, combined as in scipy.stats.bootstrap for several samples); ``"se"``: estimate -+
        z_(1-alpha/2) * bootstrap SE, the "+-2 SE" interval (z = 1.96 at level 0.95).
    level : float
        Confidence level of the intervals.
    random_state : None, int, SeedSequence or Generator
        Seed; results are identical for any ``chunk_size``.
    n_groups : int, optional
        Draw this many groups WITHOUT replacement in every replicate (a leaderboard on a
        random subset of languages) instead of all groups with replacement.
    higher_is_better : bool, optional
        Direction used by ranks(), p_beats(), the leaderboard and the headline (False for error
        rates such as TER). None (default): from the score's name (``ter``, ``wer``, ``loss``:
        lower; ``accuracy``, ``bleu``: higher; an unknown name: higher, said in ``direction.note``).
    reference : optional
        A system: the headline is the best other system against it (default: the best against
        the runner-up).
    drop_missing : bool
        Missing cells (a system lacking an item or a run) raise a DataError naming them;
        with True the incomplete items are dropped (for every system) and a warning is kept.
    chunk_size : int, optional
        Replicates per progress step (rounded up to a multiple of 64). Memory does not depend
        on it: the work is done in blocks of 64 replicates whose count matrices stay under
        ~100 MB. The replicates themselves (n_resamples x systems x 8 bytes) are kept; with the
        working copies of summary(), pairwise() and ranks() the peak is about three times that,
        and a DataError is raised before anything is drawn when this exceeds mixedeval's memory
        limit (:func:`mixedeval.set_memory_limit`).
    precision : "float64" or "float32"
        Arithmetic of the resampled sums. "float32" computes the products on data centred per
        (system, run, group) in single precision (about twice as fast; relative error of a
        resampled mean ~1e-7 of the score SD); the default is exact double precision.
    progress : bool, optional
        tqdm bar over chunks; default: shown only for long runs.
    executor : None (this process), an int or ``"processes"`` (local worker processes) or a
        ``dask.distributed.Client``: runs of whole 64-replicate blocks go to the workers, each
        block with its own random stream, so the replicates are bit-identical to ``None``'s.

    Returns
    -------
    BootstrapResult
        ``table`` (= ``summary()``), ``pairwise(adjust="holm")``, ``ranks()``, ``p_beats()``,
        ``distribution``.
    """
    d = _direction(score, statistic, higher_is_better)
    if is_partitioned_input(data, executor):
        return _answered(_partitioned(data, score, system, item, run, group, resample, statistic, aggregator,
                                      n_resamples, ci, level, random_state, d.higher_is_better, executor), d, reference)
    cfg = _check_args(score, statistic, aggregator, ci, level, n_resamples, precision, random_state)
    _parse_resample(resample, run, group, item, 2, n_groups)  # argument errors before reading the table
    tab = _pivot(data, cfg.cols, system, item, run, group, drop_missing)
    levels = _parse_resample(resample, run, group, item, len(tab.runs), n_groups)
    _check_units(tab, levels, n_groups, item, run, group)
    if tab.nested_runs and cfg.ci == "bca" and "runs" in levels:
        raise DataError(
            f"ci='bca' is not available when the systems have different {run} values (runs nested in systems); "
            "use ci='percentile', 'basic' or 'se'"
        )
    w, estimate = _prepare(tab, levels, cfg, n_groups)
    dist = _draw(w, tab, cfg, chunk_size, progress, executor)
    if not np.isfinite(dist).all() or not np.isfinite(estimate).all():
        raise DataError(
            f"the statistic is not finite on the observed table or in {dist.size - np.count_nonzero(np.isfinite(dist))}"
            f" replicates; a function of summed columns must be defined for every resampled sum (guard divisions "
            f"with np.where), and the score columns {cfg.cols} must be finite"
        )
    X = w.X_full
    jack = _jackknife(X, w.T_obs, tab.offsets, levels, cfg.stat, cfg.aggregator, w.run_mask) if cfg.ci == "bca" else ()
    estimate.setflags(write=False)
    dist.setflags(write=False)
    columns = {"score": cfg.cols, "system": system, "item": item, "run": run, "group": group}
    return _answered(_result(tab, levels, cfg, estimate, dist, jack, n_groups, d.higher_is_better, columns,
                             chunk_size), d, reference)


def _direction(score: Any, statistic: Any, higher_is_better: Any):
    """The score's direction: declared, or from the score's (or named statistic's) name."""

    metric = score if isinstance(score, str) else (statistic if isinstance(statistic, str) else None)
    if isinstance(statistic, str) and statistic != "mean":
        metric = statistic
    return direction(metric, higher_is_better)


def _answered(out: BootstrapResult, d: Any, reference: Any) -> BootstrapResult:
    """The result with its direction and reference recorded (provenance) and its answer; a
    reference that is not a system is a DataError."""
    if reference is not None and str(reference) not in [str(s) for s in out.systems]:
        raise DataError(f"reference={reference!r} is not one of the systems {list(out.systems)}")
    out.provenance["direction"] = d.to_dict()
    out.provenance["reference"] = None if reference is None else str(reference)
    return dataclasses.replace(out, answer=_bootstrap_answer(out, d, reference))


def _partitioned(data, score, system, item, run, group, resample, statistic, aggregator, n_resamples, ci, level,
                 random_state, higher_is_better, executor) -> BootstrapResult:
    """:func:`bootstrap` of a dask DataFrame / Parquet dataset: the partitioned item bootstrap."""
    if group is not None or statistic != "mean" or aggregator != "mean" or not isinstance(score, str) \
            or (resample is not None and list(np.atleast_1d(resample)) != ["items"]):
        raise DataError("a dask DataFrame or Parquet dataset is bootstrapped over items with statistic='mean' "
                        "(runs averaged per item): group, resample, another statistic or aggregator need the table "
                        "in memory")
    kw = dict(n_resamples=n_resamples, ci=ci, level=level, random_state=random_state,
              higher_is_better=higher_is_better)
    if type(executor).__name__ == "Client":
        with executor.as_current():
            return BootstrapResult(**partitioned_bootstrap(data, score, system, item, run, **kw))
    return BootstrapResult(**partitioned_bootstrap(data, score, system, item, run, **kw))


def _result(tab: _Table, levels: tuple[str, ...], cfg: _Settings, estimate: np.ndarray, dist: np.ndarray,
            jack: tuple[np.ndarray, ...], n_groups: int | None, higher_is_better: bool, columns: dict[str, Any],
            chunk_size: int | None) -> BootstrapResult:
    S, K, N, _ = tab.X.shape
    G = len(tab.groups)
    n_g = tab.n_items
    design = {"n_systems": S, "n_items": int(N), "n_items_per_group": dict(zip(map(str, tab.groups), n_g.tolist())),
              "n_runs": K, "n_groups": G, "n_groups_drawn": G if n_groups is None else int(n_groups)}
    prov = ck.provenance(
        "hierarchical paired bootstrap (multi-stage, shared draws)", cfg.ss, resample=list(levels),
        statistic=cfg.stat.name, aggregator=cfg.aggregator, ci=cfg.ci, level=cfg.level, n_resamples=cfg.n_resamples,
        n_groups=n_groups, chunk_size=dr.chunk_length(cfg.n_resamples, chunk_size), precision=cfg.precision,
        columns=columns)
    return BootstrapResult(
        systems=tuple(tab.systems), estimate=estimate, distribution=dist, ci=cfg.ci, level=cfg.level,
        n_resamples=cfg.n_resamples, resample=levels, statistic=cfg.stat.name, aggregator=cfg.aggregator,
        higher_is_better=higher_is_better, design=design, provenance=prov, warnings=tab.warnings,
        _jackknife=jack,
    )


def _check_memory(S: int, B: int, bca: bool, X: np.ndarray, n_g: np.ndarray, G: int, buf_len: int,
                  precision: str) -> None:
    """DataError before anything is drawn when the replicates (kept: S x B doubles), the working
    copies of the summaries (``_WORK_COPIES`` times that), the per-group data matrices, the
    count-matrix buffer and, for BCa, the jackknife exceed mixedeval's memory limit."""
    kept = 8.0 * S * B
    S_, Kw, N, m = X.shape
    extra = X.nbytes + buf_len * (4 if precision == "float32" else 8)
    if bca:  # leave-one-out values (kept) and the largest per-group temporary
        extra += 8.0 * S * (N + G + Kw) + 8.0 * S * int(n_g.max()) * (2 * Kw * m + G)
    need = kept * (1 + _WORK_COPIES) + extra
    res.check_memory(
        need, "the bootstrap replicates and their working copies", _FIX,
        detail=(f"n_resamples={res.format_count(B)} x {S} systems x 8 bytes = {res.format_bytes(kept)} kept in the "
                f"result, plus {_WORK_COPIES}x that as working copies of summary(), pairwise() and ranks()"
                + (f", plus {res.format_bytes(extra)} of data and buffers" if extra >= 2**20 else "")),
    )


def _check_units(tab: _Table, levels: tuple[str, ...], n_groups: int | None, item: str, run: str | None,
                 group: str | None) -> None:
    """Every resampled level needs at least 2 units."""
    G = len(tab.groups)
    if "items" in levels:
        small = [tab.groups[g] for g in range(G) if tab.n_items[g] < 2]
        if small:
            where = f" in {group} {small}" if group is not None else ""
            raise DataError(
                f"resampling items needs at least 2 items per group, but column {item!r} has fewer{where}; "
                f"add items, or drop 'items' from resample"
            )
    if "runs" in levels and len(tab.runs) < 2:
        raise DataError(f"resampling runs needs at least 2 levels of column {run!r}, found {len(tab.runs)}; "
                        "drop 'runs' from resample")
    if "groups" in levels:
        if G < 2:
            raise DataError(f"resampling groups needs at least 2 levels of column {group!r}, found {G}; "
                            "drop 'groups' from resample")
        if n_groups is not None and (isinstance(n_groups, bool) or not isinstance(n_groups, (int, np.integer))
                                     or not 1 <= n_groups <= G):
            raise DataError(f"n_groups must be an integer between 1 and the number of groups ({G}), got {n_groups!r}")


def _group_matrix(X: np.ndarray, offsets: np.ndarray, g: int, precision: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Group g's data as a (S*K*m, n_g) matrix for the products with count matrices (for
    float32: centred rows, plus their means, added back exactly since the counts sum to n_g)."""
    S, K, _, m = X.shape
    block = X[:, :, offsets[g]:offsets[g + 1], :]  # (S, K, n, m)
    mat = np.ascontiguousarray(np.moveaxis(block, 3, 2).reshape(S * K * m, -1))
    mu = None
    if precision == "float32":
        mu = mat.mean(axis=1, keepdims=True)
        mat = (mat - mu).astype(np.float32)
    return mat, mu


@dataclass(frozen=True)
class _Work:
    """Everything a block of replicates needs: per-group data matrices, the reusable
    count-matrix buffer, the observed sums T_obs (S, Kw, G, m), items per group, the resampled
    levels, the number of group slots J, the statistic, and the data used (X_full: the table, or
    its means over runs when runs are fixed and the statistic is linear)."""

    Xg: list
    buf: np.ndarray
    T_obs: np.ndarray
    n_g: np.ndarray
    levels: tuple[str, ...]
    J: int
    subsample: bool
    stat: st.CellStatistic
    aggregator: str
    run_mask: np.ndarray  # (S, Kw)
    X_full: np.ndarray


def _prepare(tab: _Table, levels: tuple[str, ...], cfg: _Settings, n_groups: int | None) -> tuple[_Work, np.ndarray]:
    """The observed estimate and the work arrays of the draws (memory checked first)."""
    S, K, N, m = tab.X.shape
    G = len(tab.groups)
    n_g = tab.n_items
    J = G if n_groups is None else int(n_groups)
    # mean over runs first when runs are fixed and the statistic is linear (5x less work)
    premean = cfg.stat.linear and "runs" not in levels
    X = _run_means(tab.X, tab.run_mask) if premean else tab.X
    mask = np.ones((S, 1), dtype=bool) if premean else tab.run_mask
    T_obs = np.add.reduceat(X, tab.offsets[:-1], axis=2)  # (S, Kw, G, m) sums over items
    cells_obs = cfg.stat(T_obs, n_g[None, None, :])[..., None]  # (S, Kw, G, 1)
    estimate = _combine(cells_obs, mask[:, None, :].astype(float), cfg.aggregator, "on the observed table", mask)[:, 0]
    buf_len = max([min(J * dr.BLOCK, dr.rows_per_batch(int(n))) * int(n) for n in n_g]) if "items" in levels else 0
    _check_memory(S, cfg.n_resamples, cfg.ci == "bca" and bool(levels), X, n_g, G, buf_len, cfg.precision)
    Xg = [_group_matrix(X, tab.offsets, g, cfg.precision) for g in range(G)] if "items" in levels else []
    # one buffer for the count matrices of a block, reused by every block (no page faults)
    buf = np.empty(buf_len, dtype=np.float32 if cfg.precision == "float32" else np.float64)
    w = _Work(Xg, buf, T_obs, n_g, levels, J, n_groups is not None, cfg.stat, cfg.aggregator, mask, X)
    return w, estimate


def _draw(w: _Work, tab: _Table, cfg: _Settings, chunk_size: int | None, progress: bool | None,
          executor: Any = None) -> np.ndarray:
    """The (S, n_resamples) replicates, block by block (written in place: no chunk-sized copy).
    A whole block is always drawn (and its tail discarded), so the first B replicates of a
    longer run are the replicates of a run with n_resamples = B."""
    S, Kw, N, m = w.X_full.shape
    dist = np.empty((S, cfg.n_resamples))
    flops = float(cfg.n_resamples) * S * Kw * m * N * (1 if "items" in w.levels else 0)
    dr.run_blocks(dist.T, cfg.ss, lambda rng, b0, r: _block(rng, dr.BLOCK, w).T, chunk_size=chunk_size,
                  progress=progress, work=flops, desc="bootstrap", executor=executor)
    return dist


def _block(rng: np.random.Generator, r: int, w: _Work) -> np.ndarray:
    """r replicates (S, r) from one block's random stream, drawn in a fixed order: groups
    (stage 1), runs (stage 3), then for each group and slot the items of the replicates that
    drew that group in that slot (stage 2)."""
    S, Kw, G, m = w.T_obs.shape
    if "groups" in w.levels and w.subsample:  # J of the G groups without replacement
        gidx = dr.subsample_indices(rng, G, w.J, r)
    elif "groups" in w.levels:
        gidx = rng.integers(0, G, size=(r, w.J))
    else:
        gidx = np.broadcast_to(np.arange(w.J), (r, w.J))
    v = _run_weights(rng, r, w)
    T = w.T_obs[:, :, gidx.T, :] if "items" not in w.levels else _item_sums(rng, gidx, w)  # (S, Kw, J, r, m)
    cells = w.stat(T, w.n_g[gidx.T][None, None])  # (S, Kw, J, r)
    return _combine(cells, v, w.aggregator, "in a bootstrap replicate", w.run_mask)


def _run_weights(rng: np.random.Generator, r: int, w: _Work) -> np.ndarray:
    """How often each run is drawn in each of r replicates: (r, Kw) shared by all systems, or
    (S, r, Kw) when runs are nested in systems (each system redraws its own runs)."""
    S, Kw = w.run_mask.shape
    mask = w.run_mask
    if "runs" in w.levels and mask.all():  # runs crossed with systems: one shared draw
        return dr.index_counts(dr.draw_indices(rng, Kw, r), Kw)
    if "runs" in w.levels:
        v = np.zeros((S, r, Kw))
        for s_ in range(S):
            own = np.flatnonzero(mask[s_])
            v[s_][:, own] = dr.index_counts(dr.draw_indices(rng, own.size, r), own.size)
        return v
    return np.broadcast_to(mask[:, None, :].astype(float), (S, r, Kw)) if not mask.all() else np.ones((r, Kw))


def _item_sums(rng: np.random.Generator, gidx: np.ndarray, w: _Work) -> np.ndarray:
    """Sums over resampled items, (S, Kw, J, r, m): for each group and slot, the items of the
    replicates that drew that group in that slot, as count matrices times the group's data."""
    S, Kw, G, m = w.T_obs.shape
    r, J = gidx.shape
    T = np.empty((S, Kw, J, r, m))
    for g in range(G):
        slot, rep = np.nonzero((gidx == g).T)  # slot-major: the draw order of this group
        if slot.size == 0:
            continue
        mat, mu = w.Xg[g]
        ng = int(w.n_g[g])
        step = dr.rows_per_batch(ng)
        for p in range(0, slot.size, step):  # one batch unless n_g is huge
            q = min(slot.size, p + step)
            W = w.buf[:(q - p) * ng].reshape(q - p, ng)
            cuts = np.unique(np.concatenate([[p, q], np.searchsorted(slot, np.arange(J + 1))]))
            for a, b in zip(cuts[:-1], cuts[1:]):  # rows of one slot: one draw
                if p <= a < b <= q:
                    dr.index_counts(dr.draw_indices(rng, ng, int(b - a)), ng, out=W[a - p:b - p])
            sums = mat @ W.T  # (S*Kw*m, q - p)
            if mu is not None:
                sums = sums.astype(np.float64) + ng * mu
            T[:, :, slot[p:q], rep[p:q], :] = np.moveaxis(sums.reshape(S, Kw, m, q - p), 2, 3)
    return T


def _jackknife(X: np.ndarray, T_obs: np.ndarray, offsets: np.ndarray, levels: tuple[str, ...],
               stat: st.CellStatistic, aggregator: str, run_mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """Leave-one-out statistics (S, n_units) for every resampled level, for the BCa
    acceleration: one array for groups, one per group for its items (strata), one for runs.
    Per-run values are averaged over each system's own runs (``run_mask``)."""
    S, Kw, G, m = T_obs.shape
    n_g = np.diff(offsets)
    cells = stat(T_obs, n_g[None, None, :])  # (S, Kw, G)
    group_scores = _run_means(cells, run_mask)[:, 0]  # (S, G)
    out: list[np.ndarray] = []
    if "groups" in levels:
        others = np.array([[h for h in range(G) if h != g] for g in range(G)], dtype=np.intp)  # (G, G-1)
        out.append(st.aggregate(group_scores[:, others], aggregator, axis=2, during="leaving one group out"))
    if "items" in levels:
        for g in range(G):
            block = X[:, :, offsets[g]:offsets[g + 1], :]  # (S, Kw, n, m)
            loo = _run_means(stat(T_obs[:, :, g, None, :] - block, n_g[g] - 1), run_mask)[:, 0]  # (S, n)
            scores = np.repeat(group_scores[:, :, None], n_g[g], axis=2)  # (S, G, n)
            scores[:, g, :] = loo
            out.append(st.aggregate(scores, aggregator, axis=1, during="leaving one item out"))
    if "runs" in levels:
        keep = 1.0 - np.eye(Kw)  # row l leaves run l out
        scores = np.einsum("skg,lk->sgl", cells, keep) / (Kw - 1)  # (S, G, Kw)
        out.append(st.aggregate(scores, aggregator, axis=1, during="leaving one run out"))
    return tuple(out)
