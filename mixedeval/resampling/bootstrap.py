"""Hierarchical paired bootstrap of item-level score tables, in vectorized numpy.

The table has one row per (system, item[, seed][, group]) with a per-item score (or, for a
corpus-level metric, per-item sufficient statistics such as tp/fp/fn). Items are nested in
groups (languages, tasks); seeds (training runs) are crossed with items and groups: seed k of
a system is one run evaluated on every item of every group.

Point estimate of a system (``statistic="mean"``)::

    cell(k, g)   = mean over the items of group g of the scores of seed k
    group(g)     = mean over seeds of cell(k, g)
    estimate     = aggregate over groups of group(g)        (mean, median or geometric mean)

For a corpus-level metric, cell(k, g) = f(sums over the items of group g of the statistics of
seed k), e.g. F1 = 2 tp / (2 tp + fp + fn) from summed counts (DESIGN rule 7: recomputed from
resampled sufficient statistics, never averaged over items).

One bootstrap replicate redraws the sampled units named in ``resample``, as a multi-stage
bootstrap (Davison & Hinkley 1997, sec. 3.8):

1. ``"groups"``: the groups are drawn with replacement (or ``n_groups = k`` of them without
   replacement: a leaderboard on k languages);
2. ``"items"``: within each drawn group slot, its items are drawn with replacement
   (independently for every slot, also when a group is drawn twice);
3. ``"seeds"``: K seeds are drawn with replacement, once per replicate, shared by all groups.

The same draws are used for every system (paired by construction): differences between systems
and ranks are computed replicate by replicate. Draws are count matrices applied to the data by
matrix products, with no Python loop over replicates. Replicates are processed in blocks of
64, each with its own random stream and its own matrix products (split further so that a
count matrix never exceeds ~100 MB), so memory stays bounded whatever B is, and the results
are bitwise identical whatever ``chunk_size`` (the progress-bar step) is.

References: Efron & Tibshirani (1993) An Introduction to the Bootstrap, ch. 13-14 (percentile,
BCa); Davison & Hinkley (1997) Bootstrap Methods and their Application, secs. 3.8, 4.4, 5.2-5.3;
Koehn (2004) and Berg-Kirkpatrick et al. (2012) for paired bootstrap comparisons of systems;
Sälevä, Ataman & Lignos (2025) for language resampling and rank distributions.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .. import _resources as res
from ..errors import DataError
from ..results import ResultMixin, ResultWarning, jsonable
from . import _draws as dr

LEVELS = ("groups", "items", "seeds")
AGGREGATES = ("mean", "median", "geometric_mean")
_LEVEL_ALIASES = {"group": "groups", "groups": "groups", "item": "items", "items": "items",
                  "seed": "seeds", "seeds": "seeds", "run": "seeds", "runs": "seeds"}
_AGG_ALIASES = {"mean": "mean", "median": "median", "geometric_mean": "geometric_mean",
                "gmean": "geometric_mean", "geometric": "geometric_mean"}
_FIX = ("Use fewer n_resamples (the replicates are kept in the result: n_resamples x systems x 8 bytes; "
        "chunk_size does not change that), or fewer systems per call.")
#: working copies of the (systems x n_resamples) replicates that summary(), pairwise() and
#: ranks() make at their peak, in units of the replicates; measured with tracemalloc for 2 to 10
#: systems: ranks() 1 + 1/S + 1/8 (rank matrix, one row's copy in np.quantile, a boolean mask),
#: summary() 1.0 (1.14 with BCa), pairwise() <= 1.1 (pairs taken S // 2 at a time), p_beats()
#: 0.14, bootstrap() itself 0.07 beyond the replicates
_WORK_COPIES = 2


# ---------------------------------------------------------------------------------------------
# result
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, repr=False, eq=False)
class BootstrapResult(ResultMixin):
    """Result of :func:`bootstrap`.

    Attributes
    ----------
    systems : tuple
        System labels, in the order of the rows of ``estimate`` and ``distribution``.
    estimate : ndarray (n_systems,)
        The statistic on the observed table.
    distribution : ndarray (n_systems, n_resamples)
        The raw bootstrap replicates; column b of every row comes from the same draw.
    ci, level : the default interval method and level of :meth:`summary` and :meth:`pairwise`.
    resample : the levels redrawn (subset of groups, items, seeds).
    statistic, aggregate, higher_is_better, n_resamples : the settings used.
    design : sizes of the table (n_items per group, n_seeds, n_groups, n_groups_drawn).
    provenance : versions, settings and the seed entropy that reproduces the run.
    warnings : tuple of ResultWarning (e.g. dropped incomplete items).
    """

    systems: tuple[Any, ...]
    estimate: np.ndarray
    distribution: np.ndarray
    ci: str
    level: float
    n_resamples: int
    resample: tuple[str, ...]
    statistic: str
    aggregate: str
    higher_is_better: bool
    design: dict[str, Any]
    provenance: dict[str, Any]
    warnings: tuple[ResultWarning, ...] = ()
    _jackknife: tuple[np.ndarray, ...] = field(default=(), repr=False)

    _main_table = "summary"
    _title = "Hierarchical paired bootstrap"

    @property
    def _print_tables(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("summary", "pairwise") if len(self.systems) <= 6 else ("summary",)

    def _scalars(self) -> list[tuple[str, Any]]:
        return [("statistic", self.statistic), ("aggregate over groups", self.aggregate),
                ("resampled", ", ".join(self.resample)), ("n_resamples", self.n_resamples),
                ("interval", f"{self.ci}, level {self.level:g}")]

    def _interval(self, est: np.ndarray, dist: np.ndarray, jack: tuple[np.ndarray, ...],
                  ci: str | None, level: float | None) -> tuple[np.ndarray, np.ndarray]:
        ci = self.ci if ci is None else dr.check_ci(ci)
        level = self.level if level is None else dr.check_level(level)
        if ci == "bca" and not jack:
            raise DataError("ci='bca' needs the jackknife, computed only when bootstrap() is called with "
                            "ci='bca'; rerun bootstrap(..., ci='bca')")
        return dr.intervals(est, dist, ci, level, jack)

    @res.memory_errors(_FIX)
    def summary(self, ci: str | None = None, level: float | None = None):
        """One row per system: system, estimate (observed statistic), boot_mean (mean of the
        replicates), std_error (SD of the replicates, ddof=1), conf_low, conf_high (interval
        method ``ci``, default the one given to :func:`bootstrap`)."""
        import pandas as pd  # noqa: PLC0415

        lo, hi = self._interval(self.estimate, self.distribution, self._jackknife, ci, level)
        return pd.DataFrame({
            "system": list(self.systems),
            "estimate": self.estimate,
            "boot_mean": self.distribution.mean(axis=1),
            "std_error": _sd(self.distribution),
            "conf_low": lo,
            "conf_high": hi,
        })

    @res.memory_errors(_FIX)
    def pairwise(self, adjust: str = "holm", ci: str | None = None, level: float | None = None,
                 reference: Any = None):
        """Paired differences delta = system_a - system_b for every pair (a before b in system
        order), or of every system against ``reference``.

        Columns: system_a, system_b, delta (observed), std_error (SD of the replicate
        differences), conf_low, conf_high (interval of the differences), p_value, p_adj,
        effect_size = delta / std_error.

        p_value: paired bootstrap test by the shift method (Koehn 2004; Berg-Kirkpatrick et al.
        2012): the replicate differences are centred at their mean to impose H0: delta = 0, and
        p = (c + 1) / (B + 1) with c = #{b : |delta_b - mean(delta_*)| >= |delta|}. p_adj adjusts
        them with ``adjust`` (a method of R's p.adjust, see :func:`mixedeval.adjust_pvalues`);
        the method is stored in ``DataFrame.attrs['p_adjust']``.
        """
        import pandas as pd  # noqa: PLC0415

        from ..padjust import adjust_pvalues  # noqa: PLC0415

        a_idx, b_idx = self._pairs(reference)
        est = self.estimate[a_idx] - self.estimate[b_idx]
        n_pairs = len(a_idx)
        lo, hi, sd, c = (np.empty(n_pairs) for _ in range(4))
        # pairs in batches of S // 2 rows (every quantity is computed row by row, so the numbers do
        # not depend on the batching): working memory stays below that of the replicates
        step = max(1, len(self.systems) // 2)
        for a in range(0, n_pairs, step):
            sl = slice(a, min(n_pairs, a + step))
            ia, ib = a_idx[sl], b_idx[sl]
            dist = self.distribution[ia] - self.distribution[ib]
            jack = tuple(j[ia] - j[ib] for j in self._jackknife)
            lo[sl], hi[sl] = self._interval(est[sl], dist, jack, ci, level)
            sd[sl] = _sd(dist)
            dist -= dist.mean(axis=1, keepdims=True)  # the null distribution, centred in place
            c[sl] = dr.count_extreme(dist, est[sl], "two-sided")
            del dist
        if not n_pairs:  # validate ci and level as the unbatched code did
            self._interval(est, np.empty((0, self.n_resamples)), tuple(j[:0] for j in self._jackknife), ci, level)
        p = dr.p_from_count(c, self.n_resamples, "plus_one")
        with np.errstate(divide="ignore", invalid="ignore"):
            eff = est / sd
        out = pd.DataFrame({
            "system_a": [self.systems[i] for i in a_idx],
            "system_b": [self.systems[i] for i in b_idx],
            "delta": est, "std_error": sd, "conf_low": lo, "conf_high": hi,
            "p_value": p, "p_adj": adjust_pvalues(p, adjust) if len(p) else p, "effect_size": eff,
        })
        out.attrs["p_adjust"] = adjust
        return out

    def _pairs(self, reference: Any) -> tuple[np.ndarray, np.ndarray]:
        k = len(self.systems)
        if reference is None:
            a, b = np.triu_indices(k, 1)
            return a, b
        if reference not in self.systems:
            raise DataError(f"reference system {reference!r} is not one of the systems {list(self.systems)}")
        r = self.systems.index(reference)
        a = np.array([i for i in range(k) if i != r], dtype=np.intp)
        return a, np.full(a.size, r, dtype=np.intp)

    def _rank_matrix(self, higher_is_better: bool | None) -> np.ndarray:
        hib = self.higher_is_better if higher_is_better is None else bool(higher_is_better)
        x = self.distribution  # compared in the direction of hib (no negated copy)
        ranks = np.ones(x.shape, dtype=np.int64)
        for i in range(x.shape[0]):
            ranks[i] += (x > x[i]).sum(axis=0) if hib else (x < x[i]).sum(axis=0)
        return ranks

    @res.memory_errors(_FIX)
    def ranks(self, level: float | None = None, higher_is_better: bool | None = None):
        """Rank distribution: system, p_rank_1 .. p_rank_k (share of replicates in which the
        system has rank k; rank 1 = best, ties share the better rank: 1, 2, 2, 4), expected_rank,
        rank_conf_low, rank_conf_high (the alpha/2 and 1 - alpha/2 quantiles of the rank,
        inverted-CDF rule, so they are ranks)."""
        import pandas as pd  # noqa: PLC0415

        level = self.level if level is None else dr.check_level(level)
        ranks = self._rank_matrix(higher_is_better)
        k = len(self.systems)
        out = pd.DataFrame({"system": list(self.systems)})
        for r in range(1, k + 1):
            out[f"p_rank_{r}"] = (ranks == r).mean(axis=1)
        alpha = 1.0 - level
        out["expected_rank"] = ranks.mean(axis=1)
        # row by row (np.quantile copies its input; the inverted-CDF rule selects, so the values
        # are those of the quantile over axis 1)
        q = np.array([np.quantile(row, [alpha / 2, 1 - alpha / 2], method="inverted_cdf") for row in ranks])
        out["rank_conf_low"] = q[:, 0].astype(np.int64)
        out["rank_conf_high"] = q[:, 1].astype(np.int64)
        return out

    @res.memory_errors(_FIX)
    def p_beats(self, higher_is_better: bool | None = None):
        """Square DataFrame: entry (a, b) = P(system a scores better than system b) over the
        replicates, ties counting one half; the diagonal is NaN."""
        import pandas as pd  # noqa: PLC0415

        hib = self.higher_is_better if higher_is_better is None else bool(higher_is_better)
        x = self.distribution  # compared in the direction of hib (no negated copy)
        p = np.empty((x.shape[0], x.shape[0]))
        for i in range(x.shape[0]):
            p[i] = ((x[i] > x) if hib else (x[i] < x)).mean(axis=1) + 0.5 * (x[i] == x).mean(axis=1)
        np.fill_diagonal(p, np.nan)
        out = pd.DataFrame(p, index=pd.Index(list(self.systems), name="system_a"),
                           columns=pd.Index(list(self.systems), name="system_b"))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Tables and settings, JSON-friendly (the raw distribution is left out: use
        ``.distribution``)."""
        return jsonable({
            "summary": self.summary(), "pairwise": self.pairwise(), "ranks": self.ranks(),
            "systems": list(self.systems), "statistic": self.statistic, "aggregate": self.aggregate,
            "resample": list(self.resample), "n_resamples": self.n_resamples, "ci": self.ci,
            "level": self.level, "higher_is_better": self.higher_is_better, "design": self.design,
            "provenance": self.provenance, "warnings": list(self.warnings),
        })


def _sd(dist: np.ndarray) -> np.ndarray:
    if dist.shape[1] < 2:
        return np.full(dist.shape[0], np.nan)
    return dist.std(axis=1, ddof=1)


# ---------------------------------------------------------------------------------------------
# the score table as an array
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Table:
    """Scores as X[system, seed, unit, column]; units (items) sorted by group, group g holding
    units offsets[g]:offsets[g+1]."""

    systems: list[Any]
    seeds: list[Any]
    groups: list[Any]
    X: np.ndarray
    offsets: np.ndarray
    warnings: tuple[ResultWarning, ...]
    seed_mask: np.ndarray  # (S, K): system s has run k (all True when seeds are crossed with systems)

    @property
    def nested_seeds(self) -> bool:
        return not bool(self.seed_mask.all())

    @property
    def n_items(self) -> np.ndarray:
        return np.diff(self.offsets)


def _levels(s, column: str) -> tuple[np.ndarray, list[Any]]:
    """Integer codes and labels of a key column: a categorical's own order (unused levels
    dropped), otherwise sorted values (order of appearance if they cannot be sorted)."""
    import pandas as pd  # noqa: PLC0415

    from ..data.validate import _rows_preview  # noqa: PLC0415

    if s.isna().any():
        raise DataError(
            f"column {column!r} has {int(s.isna().sum())} missing values in rows {_rows_preview(s.index[s.isna()])}; "
            f"drop those rows or fill in the {column!r} label"
        )
    if isinstance(s.dtype, pd.CategoricalDtype):
        s = s.cat.remove_unused_categories()
        return s.cat.codes.to_numpy(dtype=np.int64), list(s.cat.categories)
    try:
        codes, uniq = pd.factorize(s, sort=True)
    except TypeError:
        codes, uniq = pd.factorize(s, sort=False)
    return codes.astype(np.int64), list(uniq)


def _pivot(data: Any, cols: list[str], system: str, item: str, seed: str | None, group: str | None,
           drop_missing: bool) -> _Table:
    from ..data.table import as_pandas  # noqa: PLC0415
    from ..data.validate import require_columns, require_finite, require_nonempty  # noqa: PLC0415

    import pandas as pd  # noqa: PLC0415

    df = data if isinstance(data, pd.DataFrame) else as_pandas(data)  # only read, never modified
    require_nonempty(df)
    keys = [system, item, seed, group]
    for k in keys:
        if k is not None and not isinstance(k, str):
            raise DataError(f"column names must be strings, got {k!r}")
    require_columns(df, [*cols, *keys])
    named = [c for c in keys if c is not None]
    if len(set(named)) != len(named) or set(named) & set(cols):
        raise DataError(f"system, item, seed, group and score must be different columns; got {named} and {cols}")
    for c in cols:
        require_finite(df, c)
    s_code, systems = _levels(df[system], system)
    i_code, item_labels = _levels(df[item], item)
    k_code, seeds = _levels(df[seed], seed) if seed is not None else (np.zeros(len(df), np.int64), [None])
    g_code, groups = _levels(df[group], group) if group is not None else (np.zeros(len(df), np.int64), [None])
    S, K, G = len(systems), len(seeds), len(groups)
    n_item_codes = int(i_code.max()) + 1
    key = g_code * n_item_codes + i_code  # items are nested in groups: a unit is (group, item)
    if G * n_item_codes <= 4 * len(df) + 1024:  # O(n) without sorting
        present = np.bincount(key, minlength=G * n_item_codes) > 0
        unit_keys = np.flatnonzero(present)
        u_code = (np.cumsum(present) - 1)[key]
    else:
        unit_keys, u_code = np.unique(key, return_inverse=True)
        u_code = u_code.ravel()
    unit_group = unit_keys // n_item_codes
    unit_items = [item_labels[c] for c in (unit_keys % n_item_codes)]
    N = unit_keys.size
    flat = (s_code * K + k_code) * N + u_code
    n_cells = S * K * N
    count = np.bincount(flat, minlength=n_cells)

    def label(cell: int) -> str:
        """The key of a flat cell index, e.g. (system='B', language='de', item=17, seed=3)."""
        s, rest = divmod(int(cell), K * N)
        k, u = divmod(rest, N)
        parts = [f"{system}={systems[s]!r}"]
        if group is not None:
            parts.append(f"{group}={groups[unit_group[u]]!r}")
        parts.append(f"{item}={unit_items[u]!r}")
        if seed is not None:
            parts.append(f"{seed}={seeds[k]!r}")
        return "(" + ", ".join(parts) + ")"

    dup = np.flatnonzero(count > 1)
    if dup.size:
        ex = "; ".join(label(c) for c in dup[:3])
        raise DataError(
            f"{dup.size} cells have more than one row, e.g. {ex}; one score per system x item"
            f"{' x ' + seed if seed else ''} cell is expected: average the duplicates first "
            f"(df.groupby([...]).mean()) or name the column that tells them apart as seed= or group="
        )
    values = df[cols].to_numpy(dtype=np.float64)
    X = np.full((n_cells, len(cols)), np.nan)
    X[flat] = values
    X = X.reshape(S, K, N, len(cols))
    warnings: list[ResultWarning] = []
    missing = (count == 0).reshape(S, K, N)
    seed_mask = np.ones((S, K), dtype=bool)
    if seed is not None:
        absent = missing.all(axis=2)  # system s never ran seed k
        if absent.any():
            seed_mask = ~absent
            missing = missing & seed_mask[:, :, None]
            runs = {str(systems[s]): [seeds[k] for k in range(K) if seed_mask[s, k]] for s in range(S)}
            warnings.append(ResultWarning(
                "nested_seeds",
                f"the systems have different {seed} values ({runs}); runs are treated as nested in systems: "
                f"each system's own runs are resampled independently (items stay paired across systems)"))
            single = [name for name, r in runs.items() if len(r) == 1]
            if single:
                warnings.append(ResultWarning(
                    "single_run",
                    f"{', '.join(single)} {'has' if len(single) == 1 else 'have'} a single {seed}: run-to-run "
                    f"variation cannot be resampled there, so {'its' if len(single) == 1 else 'their'} intervals "
                    f"are narrower than those of systems with several runs"))
    if missing.any():
        n_miss = int(missing.sum())
        whole = [(s, k) for s in range(S) for k in range(K) if seed is not None and missing[s, k].all()]
        detail = ""
        if whole:
            detail = " (" + "; ".join(f"{system}={systems[s]!r} has no rows for {seed}={seeds[k]!r}" for s, k in whole[:3]) + ")"
        if not drop_missing:
            ex = "; ".join(label(c) for c in np.flatnonzero(missing.ravel())[:3])
            per_sys = {systems[s]: int(missing[s].sum()) for s in range(S) if missing[s].any()}
            raise DataError(
                f"{n_miss} of the {n_cells} system x item{' x ' + seed if seed else ''} cells have no score, "
                f"e.g. {ex}{detail}; missing cells per system: {per_sys}. Every system needs a score for every "
                f"item{' and ' + seed if seed else ''} for a paired comparison: fill them in, or pass "
                f"drop_missing=True to drop the items that are incomplete"
            )
        keep = ~missing.any(axis=(0, 1))
        if not keep.any():
            raise DataError(
                f"drop_missing=True would drop every item: no item has a score for every system"
                f"{' and ' + seed if seed else ''}{detail}; fill in the missing cells or remove the incomplete "
                f"system{' or ' + seed if seed else ''}"
            )
        empty = [groups[g] for g in range(G) if not keep[unit_group == g].any()]
        if empty:
            raise DataError(
                f"drop_missing=True would drop every item of {group} {empty}; remove that {group} from the table "
                f"or fill in its missing cells"
            )
        X = X[:, :, keep]
        unit_group = unit_group[keep]
        warnings.append(ResultWarning(
            "missing_rows",
            f"dropped {int((~keep).sum())} of {N} items that lack a score for some system"
            f"{' or ' + seed if seed else ''} ({n_miss} missing cells){detail}"))
    offsets = np.concatenate([[0], np.cumsum(np.bincount(unit_group, minlength=G))]).astype(np.int64)
    X[~seed_mask] = 0.0  # runs a system does not have: zero weight in every replicate
    return _Table(systems, seeds, groups, np.ascontiguousarray(X), offsets, tuple(warnings), seed_mask)


# ---------------------------------------------------------------------------------------------
# the statistic of a (resampled) table
# ---------------------------------------------------------------------------------------------

def _aggregate(group_scores: np.ndarray, aggregate: str, axis: int, during: str) -> np.ndarray:
    """Combine per-group scores along ``axis``."""
    if aggregate == "mean":
        return group_scores.mean(axis=axis)
    if aggregate == "median":
        return np.median(group_scores, axis=axis)
    if np.any(group_scores <= 0):
        raise DataError(
            f"aggregate='geometric_mean' needs positive per-group scores, but {during} a group's score is <= 0; "
            "use aggregate='mean' or 'median', or a strictly positive score"
        )
    return np.exp(np.log(group_scores).mean(axis=axis))


def _combine(cells: np.ndarray, seed_weights: np.ndarray, aggregate: str, during: str,
             seed_mask: np.ndarray | None = None) -> np.ndarray:
    """cells (S, K, J, c) of per-seed statistics -> (S, c): weighted mean over seeds (weights
    (c, K) shared by all systems, or (S, c, K) per system = how often each seed was drawn), then
    aggregate over the J group slots. ``seed_mask`` (S, K) zeroes the runs a system lacks."""
    if seed_mask is not None and not seed_mask.all():
        cells = np.where(seed_mask[:, :, None, None], cells, 0.0)
    if seed_weights.ndim == 2:
        group_scores = np.einsum("skjc,ck->sjc", cells, seed_weights) / seed_weights.sum(axis=1)
    else:
        group_scores = np.einsum("skjc,sck->sjc", cells, seed_weights) / seed_weights.sum(axis=2)[:, None, :]
    return _aggregate(group_scores, aggregate, axis=1, during=during)


def _seed_means(X: np.ndarray, seed_mask: np.ndarray) -> np.ndarray:
    """Mean over each system's own runs: X (S, K, ...) -> (S, 1, ...)."""
    if seed_mask.all():
        return X.mean(axis=1, keepdims=True)
    w = seed_mask.astype(float)
    shape = (*w.shape, *([1] * (X.ndim - 2)))
    return (X * w.reshape(shape)).sum(axis=1, keepdims=True) / w.sum(axis=1).reshape((w.shape[0], 1, *([1] * (X.ndim - 2))))


# ---------------------------------------------------------------------------------------------
# the bootstrap
# ---------------------------------------------------------------------------------------------

def _parse_resample(resample: Any, seed: str | None, group: str | None, item: str, n_seeds: int,
                    n_groups: int | None) -> tuple[str, ...]:
    if resample is None:
        out = {"items"}
        if seed is not None and n_seeds >= 2:
            out.add("seeds")
        if n_groups is not None:
            out.add("groups")
    else:
        names = [resample] if isinstance(resample, str) else list(resample)
        columns = {item: "items", seed: "seeds", group: "groups"}
        out = set()
        for r in names:
            lvl = _LEVEL_ALIASES.get(str(r).lower()) if r not in columns else columns[r]
            if lvl is None:
                raise DataError(
                    f"resample entry {r!r} is not a level; use any of 'groups', 'items', 'seeds' (or the column names "
                    f"{[c for c in (group, item, seed) if c]})"
                )
            out.add(lvl)
        if not out:
            raise DataError("resample is empty; name at least one of 'groups', 'items', 'seeds'")
    if "seeds" in out and seed is None:
        raise DataError("resample includes 'seeds' but no seed column was given; pass seed='<run column>'")
    if "groups" in out and group is None:
        raise DataError("resample includes 'groups' but no group column was given; pass group='<language column>'")
    if n_groups is not None and "groups" not in out:
        raise DataError("n_groups subsamples groups: include 'groups' in resample (or leave resample=None)")
    return tuple(lv for lv in LEVELS if lv in out)


@res.memory_errors(_FIX)
def bootstrap(
    data: Any,
    score: str | Sequence[str],
    system: str,
    item: str,
    seed: str | None = None,
    group: str | None = None,
    *,
    resample: str | Sequence[str] | None = None,
    statistic: Literal["mean", "f1"] | Any = "mean",
    aggregate: Literal["mean", "median", "geometric_mean"] = "mean",
    n_resamples: int = 10_000,
    ci: Literal["percentile", "basic", "bca", "se"] = "percentile",
    level: float = 0.95,
    random_state: Any = None,
    n_groups: int | None = None,
    higher_is_better: bool = True,
    drop_missing: bool = False,
    chunk_size: int | None = None,
    precision: Literal["float64", "float32"] = "float64",
    progress: bool | None = None,
) -> BootstrapResult:
    """Hierarchical paired bootstrap of systems' scores on an item-level table.

    Parameters
    ----------
    data : DataFrame (pandas, polars, pyarrow) or file path
        One row per system x item (x seed) (x group). Not modified.
    score : str or list of str
        The per-item score column, or for a corpus-level ``statistic`` the per-item
        sufficient-statistic columns (``["tp", "fp", "fn"]`` for F1).
    system, item : str
        Columns naming the system and the test item (items are nested in groups).
    seed : str, optional
        Column naming the seed / run of a system (crossed with items and groups).
    group : str, optional
        Column naming the language / task; item ids may repeat across groups.
    resample : str or list, optional
        Levels redrawn: any of ``"groups"``, ``"items"``, ``"seeds"`` (or the column names).
        Default: items, plus seeds when ``seed`` has at least 2 levels, plus groups when
        ``n_groups`` is given. Languages are treated as fixed unless listed.
    statistic : "mean", "f1" or callable
        ``"mean"``: mean of the item scores per (system, seed, group). ``"f1"``: 2 tp / (2 tp +
        fp + fn) of the summed counts (0 when there is nothing to find and nothing found). A
        callable ``f(*sums)`` receives one array per score column holding the sums over
        the (resampled) items and must work elementwise, e.g. BLEU from n-gram counts.
    aggregate : "mean", "median" or "geometric_mean"
        How per-group scores (mean over seeds of the cell statistic) combine into a system
        score. The geometric mean needs positive scores (DataError otherwise).
    n_resamples : int
        Number of bootstrap replicates B.
    ci : "percentile", "basic", "bca" or "se"
        Default interval of summary() and pairwise(): percentile; basic; BCa (acceleration from
        the jackknife over every resampled level: leave one group / item (per group) / seed
        out, combined as in scipy.stats.bootstrap for several samples); ``"se"``: estimate -+
        z_(1-alpha/2) * bootstrap SE, the "+-2 SE" interval (z = 1.96 at level 0.95).
    level : float
        Confidence level of the intervals.
    random_state : None, int, SeedSequence or Generator
        Seed; results are identical for any ``chunk_size``.
    n_groups : int, optional
        Draw this many groups WITHOUT replacement in every replicate (a leaderboard on a
        random subset of languages) instead of all groups with replacement.
    higher_is_better : bool
        Direction used by ranks() and p_beats() (False for error rates such as TER).
    drop_missing : bool
        Missing cells (a system lacking an item or a seed) raise a DataError naming them;
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
        (system, seed, group) in single precision (about twice as fast; relative error of a
        resampled mean ~1e-7 of the score SD); the default is exact double precision.
    progress : bool, optional
        tqdm bar over chunks; default: shown only for long runs.

    Returns
    -------
    BootstrapResult
        ``summary()``, ``pairwise(adjust="holm")``, ``ranks()``, ``p_beats()``, ``distribution``.
    """
    stat, cols = dr.cell_statistic(statistic, score)
    agg = _AGG_ALIASES.get(str(aggregate).lower()) if isinstance(aggregate, str) else None
    if agg is None:
        raise DataError(f"aggregate must be one of {', '.join(AGGREGATES)}; got {aggregate!r}")
    ci = dr.check_ci(ci)
    level = dr.check_level(level)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 2:
        raise DataError(f"n_resamples must be an integer >= 2, got {n_resamples!r}")
    n_resamples = int(n_resamples)
    if precision not in ("float64", "float32"):
        raise DataError(f"precision must be 'float64' or 'float32', got {precision!r}")
    ss = dr.seed_sequence(random_state)
    _parse_resample(resample, seed, group, item, 2, n_groups)  # argument errors before reading the table
    tab = _pivot(data, cols, system, item, seed, group, drop_missing)
    S, K, N, m = tab.X.shape
    G = len(tab.groups)
    n_g = tab.n_items
    levels = _parse_resample(resample, seed, group, item, K, n_groups)
    _check_units(tab, levels, n_groups, item, seed, group)
    J = G if n_groups is None else int(n_groups)

    # mean over seeds first when seeds are fixed and the statistic is linear (5x less work)
    premean = stat.name == "mean" and "seeds" not in levels
    X = _seed_means(tab.X, tab.seed_mask) if premean else tab.X
    Kw = X.shape[1]
    mask = np.ones((S, 1), dtype=bool) if premean else tab.seed_mask
    if tab.nested_seeds and ci == "bca" and "seeds" in levels:
        raise DataError(
            f"ci='bca' is not available when the systems have different {seed} values (runs nested in systems); "
            "use ci='percentile', 'basic' or 'se'"
        )
    T_obs = np.add.reduceat(X, tab.offsets[:-1], axis=2)  # (S, Kw, G, m) sums over items
    cells_obs = stat(T_obs, n_g[None, None, :])[..., None]  # (S, Kw, G, 1)
    estimate = _combine(cells_obs, mask[:, None, :].astype(float), agg, "on the observed table", mask)[:, 0]

    length = dr.chunk_length(n_resamples, chunk_size)
    buf_len = max([min(J * dr.BLOCK, dr.rows_per_batch(int(n))) * int(n) for n in n_g]) if "items" in levels else 0
    _check_memory(S, n_resamples, ci == "bca" and bool(levels), X, n_g, G, buf_len, precision)
    flops = float(n_resamples) * S * Kw * m * N * (1 if "items" in levels else 0)
    show = dr.auto_progress(progress, flops)
    Xg = [_group_matrix(X, tab.offsets, g, precision) for g in range(G)] if "items" in levels else []
    # one buffer for the count matrices of a block, reused by every block (no page faults)
    buf = np.empty(buf_len, dtype=np.float32 if precision == "float32" else np.float64)
    w = _Work(ss, Xg, buf, T_obs, n_g, levels, J, n_groups is not None, stat, agg, mask)
    dist = np.empty((S, n_resamples))
    bad = 0
    for start, stop in dr.chunks(n_resamples, length, show, "bootstrap"):
        part = dist[:, start:stop]
        _chunk(start, stop, w, out=part)  # written in place: no chunk-sized copy
        bad += int(part.size - np.count_nonzero(np.isfinite(part)))

    if bad or not np.isfinite(estimate).all():
        raise DataError(
            f"the statistic is not finite on the observed table or in {bad} replicates; a function of summed "
            f"columns must be defined for every resampled sum (guard divisions with np.where), and the score "
            f"columns {cols} must be finite"
        )
    jack = _jackknife(X, T_obs, tab.offsets, levels, stat, agg, mask) if ci == "bca" else ()
    estimate.setflags(write=False)
    dist.setflags(write=False)
    import mixedeval  # noqa: PLC0415

    design = {"n_systems": S, "n_items": int(N), "n_items_per_group": dict(zip(map(str, tab.groups), n_g.tolist())),
              "n_seeds": K, "n_groups": G, "n_groups_drawn": J}
    prov = {"mixedeval": mixedeval.__version__, "numpy": np.__version__,
            "method": "hierarchical paired bootstrap (multi-stage, shared draws)", "resample": list(levels),
            "statistic": stat.name, "aggregate": agg, "ci": ci, "level": level, "n_resamples": n_resamples,
            "n_groups": n_groups, "random_state": dr.seed_record(ss), "chunk_size": length,
            "precision": precision, "columns": {"score": cols, "system": system, "item": item, "seed": seed,
                                                "group": group}}
    return BootstrapResult(
        systems=tuple(tab.systems), estimate=estimate, distribution=dist, ci=ci, level=level,
        n_resamples=n_resamples, resample=levels, statistic=stat.name, aggregate=agg,
        higher_is_better=bool(higher_is_better), design=design, provenance=prov, warnings=tab.warnings,
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


def _check_units(tab: _Table, levels: tuple[str, ...], n_groups: int | None, item: str, seed: str | None,
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
    if "seeds" in levels and len(tab.seeds) < 2:
        raise DataError(f"resampling seeds needs at least 2 levels of column {seed!r}, found {len(tab.seeds)}; "
                        "drop 'seeds' from resample")
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
    """Everything a block of replicates needs: the random seed, per-group data matrices, the
    reusable count-matrix buffer, the observed sums T_obs (S, Kw, G, m), items per group,
    the resampled levels, the number of group slots J, and the statistic."""

    ss: np.random.SeedSequence
    Xg: list
    buf: np.ndarray
    T_obs: np.ndarray
    n_g: np.ndarray
    levels: tuple[str, ...]
    J: int
    subsample: bool
    stat: dr.CellStatistic
    agg: str
    seed_mask: np.ndarray  # (S, Kw)


def _chunk(start: int, stop: int, w: _Work, out: np.ndarray | None = None) -> np.ndarray:
    """Statistic of every system in replicates [start, stop): (S, stop - start), written into
    ``out`` when given. Each block of replicates is computed on its own (same array shapes
    whatever the chunking, so the results are bitwise identical for any chunk size)."""
    if out is None:
        out = np.empty((w.T_obs.shape[0], stop - start))
    for blk, r in dr.block_sizes(start, stop):
        off = blk * dr.BLOCK - start
        # a whole block is always drawn (and the tail discarded), so the first B replicates of a
        # longer run are the replicates of a run with n_resamples = B
        out[:, off:off + r] = _block(dr.block_generator(w.ss, blk), dr.BLOCK, w)[:, :r]
    return out


def _block(rng: np.random.Generator, r: int, w: _Work) -> np.ndarray:
    """r replicates from one block's random stream, drawn in a fixed order: groups (stage 1),
    seeds (stage 3), then for each group and slot the items of the replicates that drew that
    group in that slot (stage 2)."""
    S, Kw, G, m = w.T_obs.shape
    J, levels, n_g = w.J, w.levels, w.n_g
    if "groups" in levels and w.subsample:  # J of the G groups without replacement
        gidx = np.argsort(rng.random((r, G)), axis=1)[:, :J]
    elif "groups" in levels:
        gidx = rng.integers(0, G, size=(r, J))
    else:
        gidx = np.broadcast_to(np.arange(J), (r, J))
    mask = w.seed_mask
    if "seeds" in levels and mask.all():  # seeds crossed with systems: one shared draw
        v = dr.index_counts(dr.draw_indices(rng, Kw, r), Kw)
    elif "seeds" in levels:  # runs nested in systems: each system redraws its own runs
        v = np.zeros((S, r, Kw))
        for s_ in range(S):
            own = np.flatnonzero(mask[s_])
            v[s_][:, own] = dr.index_counts(dr.draw_indices(rng, own.size, r), own.size)
    else:
        v = np.broadcast_to(mask[:, None, :].astype(float), (S, r, Kw)) if not mask.all() else np.ones((r, Kw))
    if "items" not in levels:
        T = w.T_obs[:, :, gidx.T, :]  # (S, Kw, J, r, m)
    else:
        T = np.empty((S, Kw, J, r, m))
        for g in range(G):
            slot, rep = np.nonzero((gidx == g).T)  # slot-major: the draw order of this group
            if slot.size == 0:
                continue
            mat, mu = w.Xg[g]
            ng = int(n_g[g])
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
    cells = w.stat(T, n_g[gidx.T][None, None])  # (S, Kw, J, r)
    return _combine(cells, v, w.agg, "in a bootstrap replicate", mask)


def _jackknife(X: np.ndarray, T_obs: np.ndarray, offsets: np.ndarray, levels: tuple[str, ...],
               stat: dr.CellStatistic, agg: str, seed_mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """Leave-one-out statistics (S, n_units) for every resampled level, for the BCa
    acceleration: one array for groups, one per group for its items (strata), one for seeds.
    Per-seed values are averaged over each system's own runs (``seed_mask``)."""
    S, Kw, G, m = T_obs.shape
    n_g = np.diff(offsets)
    cells = stat(T_obs, n_g[None, None, :])  # (S, Kw, G)
    group_scores = _seed_means(cells, seed_mask)[:, 0]  # (S, G)
    out: list[np.ndarray] = []
    if "groups" in levels:
        others = np.array([[h for h in range(G) if h != g] for g in range(G)], dtype=np.intp)  # (G, G-1)
        out.append(_aggregate(group_scores[:, others], agg, axis=2, during="leaving one group out"))
    if "items" in levels:
        for g in range(G):
            block = X[:, :, offsets[g]:offsets[g + 1], :]  # (S, Kw, n, m)
            loo = _seed_means(stat(T_obs[:, :, g, None, :] - block, n_g[g] - 1), seed_mask)[:, 0]  # (S, n)
            scores = np.repeat(group_scores[:, :, None], n_g[g], axis=2)  # (S, G, n)
            scores[:, g, :] = loo
            out.append(_aggregate(scores, agg, axis=1, during="leaving one item out"))
    if "seeds" in levels:
        keep = 1.0 - np.eye(Kw)  # row l leaves seed l out
        scores = np.einsum("skg,lk->sgl", cells, keep) / (Kw - 1)  # (S, G, Kw)
        out.append(_aggregate(scores, agg, axis=1, during="leaving one seed out"))
    return tuple(out)
