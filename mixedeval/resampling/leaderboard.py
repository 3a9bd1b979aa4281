"""Variance decomposition and replicated-leaderboard simulation for multilingual / multitask
benchmarks, after Sälevä, Ataman & Lignos (2025), "From tests to effect sizes: quantifying
uncertainty and statistical variability in multilingual and multitask NLP evaluation
benchmarks" (toolkit ``reuben``).

Model of a leaderboard with M models and L languages (tasks)::

    x_{m,l,r,b} = mu_m + e_lang(m,l) + e_run(m,l,r) + e_boot(m,l,b)
    V[x] = nu_m^2 (between languages) + sigma_ml^2 (run to run) + tau_ml^2 (test set, bootstrap)

``decompose_variance`` estimates the components from a replicate table (one score per model,
language, run and bootstrap replicate of the test set, replicate 0 being the original test
set); ``decompose_variance_summary`` takes them from summary tables. ``simulate_leaderboard``
replicates the whole leaderboard: within-language noise (parametric N(0, eta^2) or drawn from
the cell's own replicates) with the languages fixed, or a new draw of languages (bootstrap, or
subsample without replacement) that is the SAME for all models in a replicate. It reports
aggregate scores (mean / geometric mean / median) with three intervals, per-language and
aggregate pairwise differences with their signal-to-noise ratios, and rank distributions.

Two defects of the published toolkit are avoided and covered by tests: pairwise differences
are taken on explicit (a, b) pair indices, never by ``np.triu`` on an (M, M, B) array (which
zeroes draws along the last two axes and inflates SD(delta)); languages are redrawn in every
replicate and shared by all models (never drawn once, never drawn per model). A third one is
avoided by default: with resampled languages, no per-cell noise is added on top of the spread
of the observed cell scores over languages, which already contains it (``add_noise``).

Everything is vectorized numpy, seeded and drawn block by block like the bootstrap (see
``_draws.py``): the result does not depend on ``chunk_size``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import _resources as res
from .._random import seed_sequence
from ..data import as_pandas, require_columns, require_finite, require_nonempty, require_unique
from ..errors import DataError
from ..results import ResultMixin, ResultWarning
from . import _checks as ck, _draws as dr, _stats as st

AGGREGATORS: tuple[str, ...] = ("mean", "geometric_mean", "median")
_FIX = "Use fewer n_resamples, fewer aggregators or fewer models."
#: working copies of the (n_resamples x models) draws of one aggregator that the summaries of
#: simulate_leaderboard make at their peak (the transposed draws, their sorted copy for the
#: quantiles, the rank matrix; pairwise differences taken M // 2 pairs at a time); measured with
#: tracemalloc at 2.6-3.1 for 2 to 50 models, with and without undefined geometric means
_LB_WORK_COPIES = 4


# --------------------------------------------------------------------------------------------
# variance decomposition
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Replicates:
    """The bootstrap-replicate scores (replicate >= 1) of every cell, flattened cell by cell
    (model-major, then language), each cell ordered by (run rank, replicate)."""

    values: np.ndarray          # (total,)
    offsets: np.ndarray         # (M, L) start of each cell in ``values``
    counts: np.ndarray          # (M, L) number of replicate scores of each cell (0 = missing)
    replicate_sets: tuple       # (M, L) tuples of replicate labels of each cell (None = missing)
    n_runs: np.ndarray          # (M, L)
    models: tuple               # row labels of the (M, L) arrays
    languages: tuple            # column labels


@dataclass(frozen=True, repr=False)
class VarianceDecomposition(ResultMixin):
    """Within- and between-language variance components of a multilingual leaderboard.

    ``cells`` (the main table, also ``table``) has one row per (model, language): ``n_runs``,
    ``n_replicates`` (bootstrap replicates of the test set), ``estimate`` (mean over runs on the
    original test set), ``std_error`` (its SE), ``sigma`` (run-to-run SD), ``sigma_se``, ``tau``
    (test-set bootstrap SD), ``tau_se``, ``eta`` = sqrt(sigma^2 + tau^2), ``eta_se``.
    ``models`` has one row per model: ``n_languages``, ``estimate`` (mean of the cell
    estimates), ``nu`` (SD of the cell estimates over languages, with ``ddof``), ``nu_se``, and
    the closed-form standard errors of the arithmetic-mean aggregate that
    :func:`simulate_leaderboard` reproduces: ``se_mean_fixed_languages`` = sqrt(sum_l eta_l^2) / L
    (languages fixed, a new run per cell) and ``se_mean_resampled_languages`` = nu_0 / sqrt(L)
    (languages bootstrapped, the default ``add_noise=False``; nu_0 is the SD over languages
    with ddof 0, the bootstrap's plug-in variance).
    """

    cells: Any
    models: Any
    ddof: int
    source: str
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    _replicates: _Replicates | None = field(default=None, repr=False, compare=False)

    _main_table = "table"
    _print_tables = ("models", "cells")
    _title = "Variance decomposition (Saleva, Ataman & Lignos 2025)"

    @property
    def table(self):
        """The main table: ``cells``."""
        return self.cells

    def _scalars(self) -> list[tuple[str, Any]]:
        return [("source", self.source), ("ddof of nu", self.ddof),
                ("models x languages", f"{len(self.models)} x {self.cells['language'].nunique()}")]

    def summary(self):
        """One row per (model, component) like the paper's Tables 1, 8 and 9: ``component``
        (nu, eta, sigma, tau) with ``average``, ``sd``, ``minimum``, ``maximum`` over languages
        (nu is one number per model: its sd/minimum/maximum are NaN)."""
        rows = []
        for _, mrow in self.models.iterrows():
            rows.append({"model": mrow["model"], "component": "nu", "average": mrow["nu"],
                         "sd": np.nan, "minimum": np.nan, "maximum": np.nan})
        stats = (self.cells.groupby("model", sort=False)[["eta", "sigma", "tau"]]
                 .agg(["mean", "std", "min", "max"]))
        for m in self.models["model"]:
            for comp in ("eta", "sigma", "tau"):
                s = stats.loc[m, comp]
                rows.append({"model": m, "component": comp, "average": s["mean"], "sd": s["std"],
                             "minimum": s["min"], "maximum": s["max"]})
        out = pd.DataFrame(rows)
        order = {"nu": 0, "eta": 1, "sigma": 2, "tau": 3}
        return (out.assign(_o=out["component"].map(order)).sort_values(["_o"], kind="stable")
                .drop(columns="_o").reset_index(drop=True))

    def simulate(self, **kwargs: Any) -> LeaderboardResult:
        """``simulate_leaderboard(self, **kwargs)``."""
        return simulate_leaderboard(self, **kwargs)


def _model_table(cells, models: list, ddof: int):
    """Per-model between-language SD and closed-form SEs of the arithmetic-mean aggregate."""
    rows = []
    for m in models:
        c = cells[cells["model"] == m]
        mu = c["estimate"].to_numpy(float)
        eta = c["eta"].to_numpy(float)
        L = len(mu)
        nu = float(np.std(mu, ddof=ddof)) if L > ddof else np.nan
        nu0 = float(np.std(mu, ddof=0))
        rows.append({
            "model": m,
            "n_languages": L,
            "estimate": float(mu.mean()),
            "nu": nu,
            # normal-theory SE of a sample SD: nu / sqrt(2 (L - 1))
            "nu_se": nu / np.sqrt(2.0 * (L - 1)) if L > 1 else np.nan,
            "se_mean_fixed_languages": float(np.sqrt(np.sum(eta**2)) / L),
            "se_mean_resampled_languages": nu0 / np.sqrt(L),
        })
    return pd.DataFrame(rows)


def _replicate_frame(data: Any, model: str, language: str, run: str, replicate: str, score: str):
    """The replicate table checked (columns, finite scores, labels, integer replicates, one row
    per key), with the replicate column as int64."""
    df = as_pandas(data)
    require_nonempty(df)
    require_columns(df, [model, language, run, replicate, score])
    require_finite(df, score)
    ck.check_labels(df, [model, language, run, replicate])
    rep = pd.to_numeric(df[replicate], errors="coerce")
    bad = rep.isna() | (rep < 0) | (rep != np.round(rep))
    if bad.any():
        raise DataError(
            f"replicate column {replicate!r} must hold integers >= 0 (0 = the original test set, 1..B = bootstrap "
            f"replicates); found e.g. {df.loc[bad, replicate].head(3).tolist()}"
        )
    df = df.assign(**{replicate: rep.astype(np.int64)})
    require_unique(df, [model, language, run, replicate], what="replicate table")
    return df


def _check_cells(df, keys: list[str], run: str, replicate: str):
    """Every cell has >= 2 runs, each with replicate 0, and >= 2 bootstrap replicates shared by
    all its runs. Returns the number of bootstrap replicates per cell."""
    orig, boot = df[df[replicate] == 0], df[df[replicate] >= 1]
    n_runs_all = df.groupby(keys, sort=False)[run].nunique()
    n_runs_orig = orig.groupby(keys, sort=False)[run].nunique().reindex(n_runs_all.index, fill_value=0)
    bad = n_runs_orig[n_runs_orig < n_runs_all]
    if len(bad):
        raise DataError(
            f"some runs have no row with {replicate}=0 (the original test set), in cells (model, language) "
            f"{', '.join(map(str, bad.index[:5]))}; add the original-test-set score of every run"
        )
    few = n_runs_all[n_runs_all < 2]
    if len(few):
        raise DataError(
            f"cells (model, language) {', '.join(map(str, few.index[:5]))} have fewer than 2 runs in column {run!r}; "
            "sigma (run-to-run SD) needs at least 2 runs per cell; with one run, use decompose_variance_summary(..., "
            "sd_total=...) with a known within-language SD"
        )
    nb = boot.groupby(keys, sort=False)[replicate].nunique().reindex(n_runs_all.index, fill_value=0)
    few = nb[nb < 2]
    if len(few):
        raise DataError(
            f"cells (model, language) {', '.join(map(str, few.index[:5]))} have fewer than 2 bootstrap replicates "
            f"({replicate} >= 1); tau (bootstrap SD) needs at least 2"
        )
    per_run = boot.groupby([*keys, run], sort=False)[replicate].nunique()
    need = nb.reindex(per_run.droplevel(run).index).to_numpy()
    if (per_run.to_numpy() != need).any():
        badc = per_run[per_run.to_numpy() != need].index
        raise DataError(
            f"bootstrap replicates are not shared by all runs in cells (model, language, run) "
            f"{', '.join(map(str, badc[:5]))}; every run of a cell needs the same replicates 1..B (the same "
            "resampled test sets)"
        )
    return nb


def _cell_components(df, keys: list[str], run: str, replicate: str, score: str, nb):
    """One row per (model, language) with the estimate, its SE, sigma, tau and their SEs."""
    orig, boot = df[df[replicate] == 0], df[df[replicate] >= 1]
    g0 = orig.groupby(keys, sort=False)[score]
    mean = g0.mean()
    sigma = g0.std(ddof=1)
    S = g0.count()
    tau_s = boot.groupby([*keys, run], sort=False)[score].std(ddof=1)
    tau = tau_s.groupby(level=[0, 1], sort=False).mean()
    tau_se = tau_s.groupby(level=[0, 1], sort=False).std(ddof=1) / np.sqrt(S)
    gb = boot.groupby([*keys, replicate], sort=False)[score]
    sigma_se = gb.std(ddof=1).groupby(level=[0, 1], sort=False).std(ddof=1)
    tau_bar = gb.mean().groupby(level=[0, 1], sort=False).std(ddof=1)
    idx = mean.index
    return pd.DataFrame({
        "model": idx.get_level_values(0),
        "language": idx.get_level_values(1),
        "n_runs": S.reindex(idx).to_numpy(np.int64),
        "n_replicates": nb.reindex(idx).to_numpy(np.int64),
        "estimate": mean.to_numpy(float),
        "std_error": np.sqrt(sigma.to_numpy(float) ** 2 / S.to_numpy(float)
                             + tau_bar.reindex(idx).to_numpy(float) ** 2),
        "sigma": sigma.to_numpy(float),
        "sigma_se": sigma_se.reindex(idx).to_numpy(float),
        "tau": tau.reindex(idx).to_numpy(float),
        "tau_se": tau_se.reindex(idx).to_numpy(float),
    })


def _replicate_store(df, models: list, languages: list, model: str, language: str, run: str, replicate: str,
                     score: str) -> _Replicates:
    """The replicate scores for nonparametric simulation, cell by cell, ordered by (run rank, b)."""
    boot = df[df[replicate] >= 1]
    mcode = pd.Categorical(boot[model], categories=models).codes.astype(np.int64)
    lcode = pd.Categorical(boot[language], categories=languages).codes.astype(np.int64)
    try:
        rcode, _ = pd.factorize(boot[run], sort=True)
    except TypeError:
        rcode, _ = pd.factorize(boot[run], sort=False)
    order = np.lexsort((boot[replicate].to_numpy(), rcode, lcode, mcode))
    values = boot[score].to_numpy(float)[order]
    M, L = len(models), len(languages)
    counts = np.zeros((M, L), np.int64)
    np.add.at(counts, (mcode, lcode), 1)
    offsets = (np.cumsum(counts.ravel()) - counts.ravel()).reshape(M, L)
    keys = [model, language]
    rep_sets = boot.groupby(keys, sort=False)[replicate].agg(lambda s: tuple(sorted(set(s))))
    n_runs = df[df[replicate] == 0].groupby(keys, sort=False)[run].nunique()
    sets = [[None] * L for _ in range(M)]
    nruns = np.zeros((M, L), np.int64)
    mpos = {m: i for i, m in enumerate(models)}
    lpos = {g: j for j, g in enumerate(languages)}
    for (m, g), t in rep_sets.items():
        sets[mpos[m]][lpos[g]] = t
    for (m, g), s in n_runs.items():
        nruns[mpos[m], lpos[g]] = s
    return _Replicates(values, offsets, counts, tuple(tuple(r) for r in sets), nruns, tuple(models), tuple(languages))


def decompose_variance(
    data: Any,
    *,
    model: str = "model",
    language: str = "language",
    run: str = "run",
    replicate: str = "replicate",
    score: str = "score",
    ddof: int = 1,
) -> VarianceDecomposition:
    """Run-to-run, test-set and between-language variance components from a replicate table.

    ``data`` has one row per (model, language, run, replicate) with a ``score``; replicate 0
    is the original test set and replicates 1..B are bootstrap resamples of it (the same
    replicates b for every run of a cell). Per (model, language) cell, with S runs
    (Sälevä et al. 2025, sec. 3):

    - ``estimate`` = mean over runs of the original-test-set scores (replicate 0);
    - ``sigma`` = SD (ddof 1) over runs on the original test set; ``sigma_se`` = SD over the
      bootstrap replicates b of the run SD computed on replicate b;
    - ``tau`` = mean over runs of tau_s, tau_s = SD (ddof 1) over the bootstrap replicates for
      run s; ``tau_se`` = SD_s(tau_s) / sqrt(S);
    - ``eta`` = sqrt(sigma^2 + tau^2); ``eta_se`` by the delta method,
      sqrt((sigma sigma_se)^2 + (tau tau_se)^2) / eta;
    - ``std_error`` (of ``estimate``) = sqrt(sigma^2 / S + tau_bar^2), tau_bar = SD over
      replicates of the run-averaged score (run noise averages over S runs, test-set noise
      does not).

    Per model: ``nu`` = SD over languages of the cell estimates with ``ddof`` (1 = sample SD as
    in the paper); see :class:`VarianceDecomposition` for the other columns.

    Raises DataError for missing columns, non-finite scores, duplicated rows, fewer than two
    runs or two bootstrap replicates in a cell, a run without replicate 0, or replicates not
    shared by all runs of a cell.
    """
    ddof = ck.check_ddof(ddof)
    df = _replicate_frame(data, model, language, run, replicate, score)
    keys = [model, language]
    models = list(pd.unique(df[model]))
    languages = list(pd.unique(df[language]))
    nb = _check_cells(df, keys, run, replicate)
    cells = _finish_cells(_cell_components(df, keys, run, replicate, score, nb), models, languages)
    reps = _replicate_store(df, models, languages, model, language, run, replicate, score)
    return VarianceDecomposition(
        cells=cells, models=_model_table(cells, models, ddof), ddof=ddof, source="replicates",
        provenance=ck.provenance("decompose_variance", None, ddof=ddof), _replicates=reps,
    )


def _finish_cells(cells, models: list, languages: list):
    """Add eta and its delta-method SE; order rows by model then language (first appearance)."""
    sig, tau = cells["sigma"].to_numpy(float), cells["tau"].to_numpy(float)
    eta = cells["eta"].to_numpy(float) if "eta" in cells else np.sqrt(sig**2 + tau**2)
    with np.errstate(invalid="ignore", divide="ignore"):
        eta_se = np.sqrt((sig * cells["sigma_se"].to_numpy(float)) ** 2
                         + (tau * cells["tau_se"].to_numpy(float)) ** 2) / eta
    cells = cells.assign(eta=eta, eta_se=np.where(eta > 0, eta_se, np.nan))
    cells["model"] = pd.Categorical(cells["model"], categories=models)
    cells["language"] = pd.Categorical(cells["language"], categories=languages)
    cells = cells.sort_values(["model", "language"]).reset_index(drop=True)
    cells["model"] = cells["model"].astype(object)
    cells["language"] = cells["language"].astype(object)
    return cells


def decompose_variance_summary(
    data: Any,
    *,
    model: str = "model",
    language: str = "language",
    mean: str = "mean",
    sd_run: str | None = "sd_run",
    sd_boot: str | None = "sd_boot",
    sd_total: str | None = None,
    n_runs: str | None = None,
    ddof: int = 1,
) -> VarianceDecomposition:
    """Variance components from a summary table with one row per (model, language).

    ``mean`` names the column of the cell scores. Either the two within-language SDs are given
    (``sd_run`` = sigma, the run-to-run SD; ``sd_boot`` = tau, the test-set bootstrap SD; then
    eta = sqrt(sigma^2 + tau^2)) or only the total (``sd_total`` = eta; sigma and tau are NaN).
    ``n_runs`` (optional column) gives ``std_error`` = sqrt(sigma^2 / S + tau^2); standard
    errors of the SDs are NaN (a summary table does not carry them). ``nu`` and the closed-form
    SEs per model are computed as in :func:`decompose_variance`. The result supports
    parametric simulation only (no replicate scores).
    """
    ddof = ck.check_ddof(ddof)
    df = as_pandas(data)
    require_nonempty(df)
    if sd_total is not None:
        sd_cols = [sd_total]
    elif sd_run is None or sd_boot is None:
        raise DataError("give both sd_run and sd_boot columns, or sd_total (the within-language SD eta)")
    else:
        sd_cols = [sd_run, sd_boot]
    require_columns(df, [model, language, mean, *sd_cols, n_runs])
    for c in [mean, *sd_cols] + ([n_runs] if n_runs else []):
        require_finite(df, c)
    for c in sd_cols:
        if (df[c] < 0).any():
            raise DataError(f"standard-deviation column {c!r} has negative values; SDs must be >= 0")
    if n_runs and (df[n_runs] < 1).any():
        raise DataError(f"column {n_runs!r} (number of runs) must be >= 1")
    ck.check_labels(df, [model, language])
    require_unique(df, [model, language], what="summary table")
    models = list(pd.unique(df[model]))
    languages = list(pd.unique(df[language]))
    nan = np.full(len(df), np.nan)
    if sd_total is not None:
        sig, tau, eta = nan, nan, df[sd_total].to_numpy(float)
    else:
        sig, tau = df[sd_run].to_numpy(float), df[sd_boot].to_numpy(float)
        eta = np.sqrt(sig**2 + tau**2)
    S = df[n_runs].to_numpy(float) if n_runs else nan
    cells = pd.DataFrame({
        "model": df[model].to_numpy(), "language": df[language].to_numpy(),
        "n_runs": S, "n_replicates": nan, "estimate": df[mean].to_numpy(float),
        "std_error": np.sqrt(sig**2 / S + tau**2), "sigma": sig, "sigma_se": nan,
        "tau": tau, "tau_se": nan, "eta": eta,
    })
    cells = _finish_cells(cells, models, languages)
    return VarianceDecomposition(
        cells=cells, models=_model_table(cells, models, ddof), ddof=ddof, source="summary",
        provenance=ck.provenance("decompose_variance_summary", None, ddof=ddof),
    )


# --------------------------------------------------------------------------------------------
# leaderboard simulation: result
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class LeaderboardResult(ResultMixin):
    """Replicated-leaderboard simulation (Sälevä, Ataman & Lignos 2025, secs. 4.2 and 6.2).

    Tables (tidy, snake_case):

    - ``aggregates`` (the main table, also ``table``): aggregator, model, estimate (aggregator
      of the observed cell estimates), boot_mean, std_error (SD of the draws), conf_low /
      conf_high (percentile interval), conf_low_se / conf_high_se (center +- se_multiplier *
      SE), conf_low_hw / conf_high_hw (center +- half the percentile width), n_draws (draws
      where the aggregator is defined).
    - ``pairwise``: aggregator, model_a, model_b, delta (observed a - b), boot_mean, std_error
      (SD of the simulated delta), snr (center / std_error: the signal-to-noise ratio of the
      difference, which the paper calls an effect size; its denominator is the simulated SD of
      delta), conf_low, conf_high (percentile), prob_a_better.
    - ``language_pairwise``: language, model_a, model_b, delta, boot_mean, std_error, snr
      (center / std_error), significant (|snr| >= snr_threshold); boot_mean and std_error are
      the exact moments of the per-language difference under the noise model.
    - ``ranks``: aggregator, model, observed_rank, p_rank_1 .. p_rank_M, expected_rank,
      rank_conf_low, rank_conf_high (rank 1 = best; **marginal** rank intervals, each model on its
      own: ``ranks.attrs['rank_kind']`` says so).

    ``draws`` is the (n_resamples, M, A) array of simulated aggregates (model and aggregator
    order as in ``models`` and ``aggregators``).
    """

    aggregates: Any
    pairwise: Any
    language_pairwise: Any
    ranks: Any
    models: tuple
    languages: tuple
    aggregators: tuple[str, ...]
    noise: str
    add_noise: bool
    language_sampling: str
    n_languages: int
    n_resamples: int
    level: float
    higher_is_better: bool
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    _draws: np.ndarray | None = field(default=None, repr=False, compare=False)

    _main_table = "table"
    _print_tables = ("aggregates", "pairwise", "ranks")
    _title = "Simulated leaderboard (Saleva, Ataman & Lignos 2025)"

    def _scalars(self) -> list[tuple[str, Any]]:
        noise = f"{self.noise} ({'added' if self.add_noise else 'not added: languages resampled'})"
        return [("noise", noise), ("languages", f"{self.language_sampling} ({self.n_languages} per replicate)"),
                ("n_resamples", self.n_resamples), ("level", self.level)]

    @property
    def table(self):
        """The main table: ``aggregates``."""
        return self.aggregates

    @property
    def draws(self) -> np.ndarray:
        return self._draws

    @res.memory_errors(_FIX)
    def p_beats(self, aggregator: str = "mean"):
        """M x M DataFrame: P(row model beats column model) under ``aggregator`` (ties count 1/2;
        replicates where the aggregator is undefined are left out)."""
        a = self.aggregators.index(ck.check_choice(aggregator, "aggregator", self.aggregators))
        B, M = self._draws.shape[:2]
        res.check_memory(
            8.0 * B * M * 3, "the pairwise comparisons of p_beats()",
            "Use fewer n_resamples or fewer models in simulate_leaderboard().",
            detail=f"n_resamples={res.format_count(B)} x {M} models x 8 bytes for the finite draws and masks")
        d = self._draws[:, :, a]
        d = d[np.isfinite(d).all(axis=1)]
        return pd.DataFrame(st.p_beats(np.ascontiguousarray(d.T), self.higher_is_better),
                            index=pd.Index(list(self.models), name="model_a"),
                            columns=pd.Index(list(self.models), name="model_b"))


# --------------------------------------------------------------------------------------------
# leaderboard simulation: arguments and cells
# --------------------------------------------------------------------------------------------

def _as_decomposition(components: Any) -> VarianceDecomposition:
    if isinstance(components, VarianceDecomposition):
        return components
    try:
        is_frame = isinstance(components, pd.DataFrame)
    except ImportError:  # pragma: no cover
        is_frame = False
    if is_frame:
        cols = set(components.columns)
        if {"model", "language", "mean"} <= cols and ({"sd_run", "sd_boot"} <= cols or "sd_total" in cols):
            if {"sd_run", "sd_boot"} <= cols:
                return decompose_variance_summary(components)
            return decompose_variance_summary(components, sd_total="sd_total")
        if {"model", "language", "run", "replicate", "score"} <= cols:
            return decompose_variance(components)
    raise DataError(
        "simulate_leaderboard needs the result of decompose_variance(...) or decompose_variance_summary(...) "
        f"(got {type(components).__name__}); a DataFrame is accepted when it has columns model, language, mean and "
        "sd_run + sd_boot or sd_total, or model, language, run, replicate, score"
    )


@dataclass(frozen=True)
class _Sim:
    """The checked settings of a simulation."""

    noise: str
    pair_noise: bool
    add_noise: bool
    languages: str
    k: int
    aggregators: tuple[str, ...]
    level: float
    B: int
    se_multiplier: float
    center: str
    snr_threshold: float
    higher_is_better: bool
    ss: np.random.SeedSequence


@dataclass(frozen=True)
class _Cells:
    """The (M, L) cell estimates and within-language SDs, with the replicate scores of every
    cell (nonparametric noise: flat values, offsets and counts) in the simulation's order."""

    models: list
    languages: list
    means: np.ndarray
    eta: np.ndarray
    values: np.ndarray | None = None
    offsets: np.ndarray | None = None
    counts: np.ndarray | None = None


def _check_simulation(L: int, noise: Any, languages: Any, n_languages: Any, add_noise: Any, aggregators: Any,
                      pair_noise: Any, n_resamples: Any, level: Any, se_multiplier: Any, center: Any,
                      snr_threshold: Any, higher_is_better: Any, random_state: Any) -> _Sim:
    noise = ck.check_choice(noise, "noise", ("parametric", "nonparametric"))
    lang_mode = ck.check_choice(languages, "languages", ("fixed", "bootstrap", "subsample"))
    center = ck.check_choice(center, "center", ("observed", "boot_mean"))
    level = ck.check_level(level)
    B = ck.check_n_resamples(n_resamples)
    aggs = (aggregators,) if isinstance(aggregators, str) else tuple(aggregators)
    if not aggs:
        raise DataError(f"aggregators must name at least one of {AGGREGATORS}")
    for a in aggs:
        ck.check_choice(a, "each aggregator", AGGREGATORS)
    if len(set(aggs)) != len(aggs):
        raise DataError(f"aggregators has duplicates: {aggs}")
    se_multiplier = ck.check_positive(se_multiplier, "se_multiplier", " (2 = the paper's +-2 SE)")
    if pair_noise and noise != "nonparametric":
        raise DataError("pair_noise applies to noise='nonparametric' (parametric noise is independent across models)")
    if add_noise is None:
        add_noise = lang_mode == "fixed"
    elif not isinstance(add_noise, (bool, np.bool_)):
        raise DataError(f"add_noise must be True, False or None (None: True with fixed languages, False with "
                        f"resampled ones), got {add_noise!r}")
    if lang_mode == "fixed" and not add_noise:
        raise DataError("languages='fixed' with add_noise=False leaves nothing random; resample the languages "
                        "(languages='bootstrap' or 'subsample') or add within-language noise")
    return _Sim(noise, bool(pair_noise), bool(add_noise), lang_mode, _n_drawn(lang_mode, n_languages, L), aggs,
                level, B, se_multiplier, center, float(snr_threshold), bool(higher_is_better),
                seed_sequence(random_state))


def _n_drawn(lang_mode: str, n_languages: Any, L: int) -> int:
    """Languages per replicate."""
    if lang_mode == "fixed":
        if n_languages not in (None, L):
            raise DataError(f"n_languages={n_languages} needs languages='bootstrap' or 'subsample'")
        return L
    if L < 2:
        raise DataError(f"resampling languages needs at least 2 languages; the table has {L}")
    if lang_mode == "bootstrap":
        k = L if n_languages is None else int(n_languages)
        if k < 1:
            raise DataError(f"n_languages must be >= 1, got {n_languages!r}")
        return k
    if n_languages is None or not (1 <= int(n_languages) < L):
        raise DataError(
            f"languages='subsample' needs n_languages between 1 and {L - 1} (languages drawn without "
            f"replacement out of {L}); got {n_languages!r}"
        )
    return int(n_languages)


def _cells(vd: VarianceDecomposition, noise: str, pair_noise: bool, aggregators: tuple[str, ...]) -> _Cells:
    """The complete (M, L) grid of cells, checked, with the replicate scores for nonparametric
    noise."""
    cells = vd.cells
    models, langs = list(pd.unique(cells["model"])), list(pd.unique(cells["language"]))
    M, L = len(models), len(langs)
    if M < 1:
        raise DataError("no models in the variance decomposition")
    full = pd.MultiIndex.from_product([models, langs])
    missing = full.difference(pd.MultiIndex.from_frame(cells[["model", "language"]]))
    if len(missing):
        raise DataError(
            f"{len(missing)} (model, language) cells are missing, e.g. {', '.join(map(str, list(missing)[:5]))}; "
            "every model needs a score on every language: drop the languages (or models) that are incomplete"
        )
    piv = cells.set_index(["model", "language"]).reindex(full)
    means = piv["estimate"].to_numpy(float).reshape(M, L)
    eta = piv["eta"].to_numpy(float).reshape(M, L)
    if not np.isfinite(means).all() or not np.isfinite(eta).all() or (eta < 0).any():
        raise DataError("cell estimates and within-language SDs (eta) must be finite and eta >= 0")
    if "geometric_mean" in aggregators and (means <= 0).any():
        bad = [(models[i], langs[j]) for i, j in zip(*np.nonzero(means <= 0))][:5]
        raise DataError(f"the geometric mean needs positive scores; cell estimates <= 0 in {bad}; drop "
                        "'geometric_mean' from aggregators or shift the scores")
    if noise == "parametric":
        return _Cells(models, langs, means, eta)
    reps = vd._replicates
    if reps is None:
        raise DataError(
            "noise='nonparametric' draws from the replicate scores of each cell: build the decomposition with "
            "decompose_variance(replicate_table), not decompose_variance_summary, or use noise='parametric'"
        )
    mi = [reps.models.index(m) for m in models]
    li = [reps.languages.index(g) for g in langs]
    counts = reps.counts[np.ix_(mi, li)]
    if (counts < 1).any():
        raise DataError("some cells have no bootstrap replicate scores; use noise='parametric'")
    if pair_noise:
        for j, g in enumerate(langs):
            if len({reps.replicate_sets[i][li[j]] for i in mi}) != 1 or len(set(reps.n_runs[mi, li[j]])) != 1:
                raise DataError(
                    f"pair_noise=True needs the same number of runs and bootstrap replicates for every model in "
                    f"language {g!r}; they differ (use pair_noise=False)"
                )
    return _Cells(models, langs, means, eta, reps.values, reps.offsets[np.ix_(mi, li)], counts)


# --------------------------------------------------------------------------------------------
# leaderboard simulation: draws
# --------------------------------------------------------------------------------------------

def _bytes_per_replicate(M: int, L: int, k: int) -> float:
    return 8.0 * (6 * M * max(k, L) + L)


def _scores(rng: np.random.Generator, rows: int, c: _Cells, cfg: _Sim) -> np.ndarray:
    """Simulated cell scores of ``rows`` replicates, (rows, M, k): first the languages (shared by
    all models), then the noise of every drawn (model, language) copy."""
    M, L = c.means.shape
    if cfg.languages == "fixed":
        cols = None
    elif cfg.languages == "bootstrap":
        cols = rng.integers(0, L, size=(rows, cfg.k))
    else:
        cols = dr.subsample_indices(rng, L, cfg.k, rows)

    def cell(arr: np.ndarray) -> np.ndarray:  # (M, L) -> broadcastable to (rows, M, n_cols)
        return arr[None] if cols is None else arr[:, cols].transpose(1, 0, 2)

    shape = (rows, M, L if cols is None else cfg.k)
    if not cfg.add_noise:
        return np.broadcast_to(cell(c.means), shape)
    if cfg.noise == "parametric":
        return cell(c.means) + cell(c.eta) * rng.standard_normal(shape)
    cnt = cell(c.counts)
    if cfg.pair_noise:  # the same (run position, replicate) for every model of a language
        j = rng.integers(0, cnt[:, :1], size=(rows, 1, shape[2]))
    else:
        j = rng.integers(0, cnt, size=shape)
    return c.values[cell(c.offsets) + j]


def _simulate(c: _Cells, cfg: _Sim, chunk_size: int | None, progress: bool, executor: Any = None) -> np.ndarray:
    """(B, M, A) simulated aggregates, block by block (rows of a block in batches)."""
    M, L = c.means.shape
    A = len(cfg.aggregators)
    rows = dr.batch_rows(_bytes_per_replicate(M, L, cfg.k))

    def one_batch(rng: np.random.Generator, k: int) -> np.ndarray:
        Y = _scores(rng, k, c, cfg)
        return np.stack([st.aggregate(Y, a, axis=-1, nonpositive="nan") for a in cfg.aggregators], axis=-1)

    def one_block(rng: np.random.Generator, b0: int, r: int) -> np.ndarray:
        return dr.batched(lambda k: one_batch(rng, k), rows)

    return dr.run_blocks(np.empty((cfg.B, M, A)), cfg.ss, one_block, chunk_size=chunk_size, progress=progress,
                         work=0.0, desc="leaderboard", executor=executor)


def _noise_moments(c: _Cells, cfg: _Sim) -> tuple[np.ndarray, np.ndarray]:
    """Covariance across models of the simulated score in each language, (L, M, M), and the
    mean of the simulated score minus the cell estimate, (M, L), under the noise model."""
    M, L = c.means.shape
    cov = np.zeros((L, M, M))
    if cfg.noise == "parametric":
        cov[:, np.arange(M), np.arange(M)] = (c.eta**2).T
        return cov, np.zeros((M, L))
    shift = np.zeros((M, L))
    for j in range(L):  # loop over languages (not resamples)
        V = [c.values[c.offsets[m, j]:c.offsets[m, j] + c.counts[m, j]] for m in range(M)]
        shift[:, j] = [v.mean() for v in V]
        if cfg.pair_noise:
            cov[j] = np.atleast_2d(np.cov(np.vstack(V), bias=True))
        else:
            cov[j, np.arange(M), np.arange(M)] = [v.var() for v in V]
    return cov, shift - c.means


# --------------------------------------------------------------------------------------------
# leaderboard simulation: tables
# --------------------------------------------------------------------------------------------

def _aggregate_table(draws: np.ndarray, obs: np.ndarray, c: _Cells, cfg: _Sim) -> tuple[Any, list[ResultWarning]]:
    alpha = 1.0 - cfg.level
    pieces, warnings = [], []
    for ai, a in enumerate(cfg.aggregators):
        d = np.ascontiguousarray(draws[:, :, ai].T)  # (M, B)
        n_ok = np.isfinite(d).sum(axis=1)
        if a == "geometric_mean" and (n_ok < cfg.B).any():
            warnings.append(ResultWarning(
                "undefined_draws",
                f"geometric mean undefined (a simulated score <= 0) in {int(cfg.B - n_ok.min())} of {cfg.B} replicates "
                "for some models; those replicates are left out of its summaries (see n_draws)"))
        bm, se, q = st.mean(d), st.sd(d), st.quantiles(d, [alpha / 2, 1 - alpha / 2])
        ctr = obs[:, ai] if cfg.center == "observed" else bm
        hw = (q[1] - q[0]) / 2
        pieces.append(pd.DataFrame({
            "aggregator": a, "model": np.array(c.models, dtype=object), "estimate": obs[:, ai], "boot_mean": bm,
            "std_error": se, "conf_low": q[0], "conf_high": q[1],
            "conf_low_se": ctr - cfg.se_multiplier * se, "conf_high_se": ctr + cfg.se_multiplier * se,
            "conf_low_hw": ctr - hw, "conf_high_hw": ctr + hw, "n_draws": n_ok.astype(np.int64),
        }))
    return pd.concat(pieces, ignore_index=True), warnings


def _pair_index(M: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (a, b), a < b, of every unordered pair of models (explicit pairs, no np.triu)."""
    ia, ib = np.triu_indices(M, k=1)
    return ia.astype(np.int64), ib.astype(np.int64)


def _pairwise_table(draws: np.ndarray, obs: np.ndarray, c: _Cells, cfg: _Sim):
    """Differences of aggregates on explicit pair indices (never np.triu on the draws)."""
    alpha = 1.0 - cfg.level
    M = len(c.models)
    ia, ib = _pair_index(M)
    model_arr = np.array(c.models, dtype=object)
    pieces = []
    step = max(1, M // 2)  # pairs at a time: their (pairs, B) differences stay below the (M, B) draws
    for ai, a in enumerate(cfg.aggregators):
        dt = np.ascontiguousarray(draws[:, :, ai].T)  # (M, B)
        for s0 in range(0, len(ia), step):
            pa, pb = ia[s0:s0 + step], ib[s0:s0 + step]
            dd = dt[pa] - dt[pb]  # (p, B)
            bm, se, q = st.mean(dd), st.sd(dd), st.quantiles(dd, [alpha / 2, 1 - alpha / 2])
            delta = obs[pa, ai] - obs[pb, ai]
            with np.errstate(invalid="ignore", divide="ignore"):
                snr = (delta if cfg.center == "observed" else bm) / se
            pieces.append(pd.DataFrame({
                "aggregator": a, "model_a": model_arr[pa], "model_b": model_arr[pb], "delta": delta,
                "boot_mean": bm, "std_error": se, "snr": snr, "conf_low": q[0], "conf_high": q[1],
                "prob_a_better": st.share_better(dd, cfg.higher_is_better, axis=1),
            }))
    if pieces:
        return pd.concat(pieces, ignore_index=True)
    return pd.DataFrame(columns=["aggregator", "model_a", "model_b", "delta", "boot_mean", "std_error", "snr",
                                 "conf_low", "conf_high", "prob_a_better"])


def _language_table(c: _Cells, cfg: _Sim):
    """Per-language differences with the exact moments of the noise model (the limit of the
    simulation as B -> infinity; no Monte-Carlo error)."""
    cov, shift = _noise_moments(c, cfg)  # (L, M, M), (M, L)
    ia, ib = _pair_index(len(c.models))
    var = cov[:, ia, ia] + cov[:, ib, ib] - 2 * cov[:, ia, ib]  # (L, P)
    sd = np.sqrt(np.maximum(var, 0.0))
    delta = (c.means[ia] - c.means[ib]).T
    bm = delta + (shift[ia] - shift[ib]).T
    ctr = delta if cfg.center == "observed" else bm
    with np.errstate(divide="ignore", invalid="ignore"):
        snr = np.where((sd == 0) & (ctr == 0), 0.0, ctr / sd)
    P, L = len(ia), len(c.languages)
    return pd.DataFrame({
        "language": np.repeat(np.array(c.languages, dtype=object), P),
        "model_a": np.tile(np.array(c.models, dtype=object)[ia], L),
        "model_b": np.tile(np.array(c.models, dtype=object)[ib], L),
        "delta": delta.ravel(), "boot_mean": bm.ravel(), "std_error": sd.ravel(), "snr": snr.ravel(),
        "significant": np.abs(snr.ravel()) >= cfg.snr_threshold,
    })


def _rank_table(draws: np.ndarray, obs: np.ndarray, c: _Cells, cfg: _Sim):
    """Rank distributions of the models in every replicate where the aggregator is defined."""
    pieces = []
    for ai, a in enumerate(cfg.aggregators):
        d = draws[:, :, ai]
        d = np.ascontiguousarray(d[np.isfinite(d).all(axis=1)].T)  # (M, B')
        observed = st.rank_matrix(obs[:, ai][:, None], cfg.higher_is_better)[:, 0]
        cols = st.rank_columns(st.rank_matrix(d, cfg.higher_is_better), cfg.level)
        pieces.append(pd.DataFrame({"aggregator": a, "model": np.array(c.models, dtype=object),
                                    "observed_rank": observed, **cols}))
    out = pd.concat(pieces, ignore_index=True)
    out.attrs["rank_kind"] = {"rank_conf_low": "marginal", "rank_conf_high": "marginal"}
    return out


# --------------------------------------------------------------------------------------------
# leaderboard simulation
# --------------------------------------------------------------------------------------------

@res.memory_errors(_FIX)
def simulate_leaderboard(
    components: Any,
    *,
    noise: Literal["parametric", "nonparametric"] = "parametric",
    languages: Literal["fixed", "bootstrap", "subsample"] = "fixed",
    n_languages: int | None = None,
    add_noise: bool | None = None,
    aggregators: Sequence[str] = AGGREGATORS,
    pair_noise: bool = False,
    n_resamples: int = 5000,
    level: float = 0.95,
    se_multiplier: float = 2.0,
    center: Literal["observed", "boot_mean"] = "observed",
    snr_threshold: float = 2.0,
    higher_is_better: bool = True,
    random_state: Any = None,
    chunk_size: int | None = None,
    progress: bool = True,
    executor: Any = None,
) -> LeaderboardResult:
    """Simulate replications of a multilingual leaderboard (Sälevä, Ataman & Lignos 2025).

    Each replicate draws the languages, then (when ``add_noise``) a score for every drawn
    (model, language) cell:

    - ``languages="fixed"``: all L languages; ``"bootstrap"``: ``n_languages`` (default L)
      languages drawn with replacement; ``"subsample"``: ``n_languages`` < L languages drawn
      without replacement. The language draw of a replicate is shared by all models (paired),
      and redrawn in every replicate.
    - ``noise="parametric"``: x_ml + e, e ~ N(0, eta_ml^2), independent across cells (the
      paper's sec. 4.2 procedure); ``"nonparametric"``: one of the cell's replicate scores
      (all runs x bootstrap replicates b >= 1) drawn uniformly (sec. 6.2; needs
      :func:`decompose_variance` input). With ``pair_noise=True`` the same (run position,
      replicate b) is drawn for every model of a language, which is right when replicate b is
      the same resampled test set for all models (paired bootstrap replicates).
    - ``add_noise`` (default: True with fixed languages, False with resampled languages): add
      the within-language noise to each drawn cell. With resampled languages the default does
      NOT add it, because the spread of the observed cell estimates over languages (nu) already
      contains their within-language noise: resampling the languages alone reproduces the
      sampling variance of the aggregate (the first-stage bootstrap of two-stage sampling,
      Davison & Hinkley 1997, sec. 3.8), and adding noise on top counts it twice and overstates
      every standard error. Closed form (tested): SE(mean over k bootstrapped languages) =
      nu_0 / sqrt(k), and SE(mean_a - mean_b) = SD_0 over languages of (x_al - x_bl) / sqrt(k),
      where the subscript 0 is the SD with ddof 0 (the plug-in variance of the bootstrap; ddof 1
      gives the classical SE, larger by sqrt(L / (L - 1))). ``add_noise=True`` with resampled
      languages is the published two-stage procedure (each drawn copy of a language gets its own
      noise; SE(mean) = sqrt((nu_0^2 + mean_l eta_l^2) / k)); it is kept for comparison and
      flagged by a ``double_counting`` warning.

    Aggregators over the drawn languages (``mean``, ``geometric_mean``, ``median``) are
    reported with the observed value (aggregator of the cell estimates over the original
    languages), the bootstrap mean and SD, and three intervals: percentile (``level``), center
    +- ``se_multiplier`` SE (the paper's +-2 SE), and center +- half the percentile width (as in
    sacreBLEU). ``center="boot_mean"`` centres the last two (and the signal-to-noise ratios) on
    the bootstrap mean as the paper's tables do; the default centres on the observed value.
    Pairwise differences of aggregates carry snr = delta / SD(delta) (the paper's "effect
    size"); per-language differences carry snr = delta / SD(delta) and the flag |snr| >=
    ``snr_threshold``, with the SD and mean of the per-language difference computed exactly from
    the noise model whether or not noise is added to the aggregates (sqrt(eta_a^2 + eta_b^2)
    for parametric noise; the replicates' moments for nonparametric noise, with their
    covariance when paired). Rank distributions rank the models in every replicate (rank 1 =
    best, ``higher_is_better``; ties share the lowest rank).

    The geometric mean needs positive scores: DataError if an observed cell estimate is <= 0;
    replicates where a simulated score is <= 0 give NaN, are left out of that aggregator's
    summaries and counted in ``n_draws``, with a warning.

    Other closed forms the simulation reproduces (tested): with fixed languages and parametric
    noise SD(mean) = sqrt(sum_l eta_l^2) / L and SD(mean_a - mean_b) = sqrt(sum_l (eta_al^2 +
    eta_bl^2)) / L. ``random_state`` seeds the block-wise draws: the result does not depend on
    ``chunk_size`` (the progress-bar step) nor on ``executor`` (None: this process; an int or
    ``"processes"``: local worker processes; a ``dask.distributed.Client``), which runs whole
    blocks of replicates on its workers.
    """
    vd = _as_decomposition(components)
    L = vd.cells["language"].nunique()
    cfg = _check_simulation(L, noise, languages, n_languages, add_noise, aggregators, pair_noise, n_resamples,
                            level, se_multiplier, center, snr_threshold, higher_is_better, random_state)
    c = _cells(vd, cfg.noise, cfg.pair_noise, cfg.aggregators)
    M, A = len(c.models), len(cfg.aggregators)
    batch = dr.batch_rows(_bytes_per_replicate(M, L, cfg.k)) * _bytes_per_replicate(M, L, cfg.k)
    ck.check_draw_memory("the simulated leaderboards and their working copies", 8.0 * cfg.B * M * A,
                         _LB_WORK_COPIES * 8.0 * cfg.B * M, batch, cfg.B, f"{M} models x {A} aggregators", _FIX)
    obs = np.stack([st.aggregate(c.means, a, axis=-1) for a in cfg.aggregators], axis=-1)  # (M, A)
    draws = _simulate(c, cfg, chunk_size, progress, executor)
    agg_table, warnings = _aggregate_table(draws, obs, c, cfg)
    if cfg.add_noise and cfg.languages != "fixed":
        warnings.insert(0, ResultWarning(
            "double_counting",
            f"add_noise=True with languages={cfg.languages!r}: within-language noise is added to cell estimates whose "
            "spread over languages already contains it, so the standard errors are overstated (the published "
            "two-stage procedure; add_noise=False, the default, resamples the languages alone)"))
    return LeaderboardResult(
        aggregates=agg_table, pairwise=_pairwise_table(draws, obs, c, cfg), language_pairwise=_language_table(c, cfg),
        ranks=_rank_table(draws, obs, c, cfg), models=tuple(c.models), languages=tuple(c.languages),
        aggregators=cfg.aggregators, noise=cfg.noise, add_noise=cfg.add_noise, language_sampling=cfg.languages,
        n_languages=cfg.k, n_resamples=cfg.B, level=cfg.level, higher_is_better=cfg.higher_is_better,
        warnings=tuple(warnings),
        provenance=ck.provenance(
            "simulate_leaderboard", cfg.ss, noise=cfg.noise, add_noise=cfg.add_noise, pair_noise=cfg.pair_noise,
            languages=cfg.languages, n_languages=cfg.k, n_resamples=cfg.B, center=cfg.center,
            se_multiplier=cfg.se_multiplier, source=vd.source),
        _draws=draws,
    )
