"""Variance decomposition and replicated-leaderboard simulation for multilingual / multitask
benchmarks, after Sälevä, Ataman & Lignos (2025), "From tests to effect sizes: quantifying
uncertainty and statistical variability in multilingual and multitask NLP evaluation
benchmarks" (toolkit ``reuben``).

Model of a leaderboard with M models and L languages (tasks)::

    x_{m,l,s,b} = mu_m + e_lang(m,l) + e_seed(m,l,s) + e_boot(m,l,b)
    V[x] = nu_m^2 (between languages) + sigma_ml^2 (seed to seed) + tau_ml^2 (test set, bootstrap)

``decompose_variance`` estimates the components from a replicate table (one score per model,
language, seed and bootstrap replicate of the test set, replicate 0 being the original test
set); ``decompose_variance_summary`` takes them from summary tables. ``simulate_leaderboard``
replicates the whole leaderboard: within-language noise (parametric N(0, eta^2) or drawn from
the cell's own replicates), and optionally a new draw of languages (bootstrap, or subsample
without replacement) that is the SAME for all models in a replicate. It reports aggregate
scores (mean / geometric mean / median) with three intervals, per-language and aggregate
pairwise differences with effect sizes, and rank distributions.

Two defects of the published toolkit are avoided and covered by tests: pairwise differences
are taken on explicit (a, b) pair indices, never by ``np.triu`` on an (M, M, B) array (which
zeroes draws along the last two axes and inflates SD(delta)); languages are redrawn in every
replicate and shared by all models (never drawn once, never drawn per model).

Everything is vectorized numpy, processed in chunks of replicates, seeded by a
``numpy.random.Generator``; separate random streams for noise and language draws make the
result independent of the chunk size.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .. import _resources as res
from ..errors import DataError
from ..results import ResultMixin, ResultWarning

AGGREGATES: tuple[str, ...] = ("mean", "geometric_mean", "median")
_MEMORY_BUDGET = 64 * 2**20  # bytes of temporary arrays per chunk
_FIX = ("Use fewer n_resamples, fewer aggregates or fewer models, or a smaller chunk_size (chunk_size=None keeps "
        "each chunk near 64 MB).")
#: working copies of the (n_resamples x models) draws of one aggregate that the summaries of
#: simulate_leaderboard make at their peak (rank distributions: the finite rows, their negation,
#: scipy's rankdata and its integer copy; nan-aware moments and quantiles); measured with
#: tracemalloc at 9.8-11.4 for 2 to 50 models
_LB_WORK_COPIES = 12


# --------------------------------------------------------------------------------------------
# small shared helpers (also used by runs.py)
# --------------------------------------------------------------------------------------------

def _as_generator(random_state: Any) -> np.random.Generator:
    """``numpy.random.default_rng(random_state)`` with a DataError on nonsense."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"random_state must be None, an int, a numpy.random.SeedSequence or a numpy.random.Generator, "
            f"got {random_state!r}"
        ) from exc


def _spawn(rng: np.random.Generator, k: int) -> list[np.random.Generator]:
    """``k`` independent child generators: one random stream per kind of draw, so results do not
    depend on how the replicates are split into chunks."""
    seeds = rng.integers(0, 2**63 - 1, size=k, dtype=np.int64)
    return [np.random.default_rng(int(s)) for s in seeds]


def _uniform_index(rng: np.random.Generator, high: Any, size: tuple[int, ...]) -> np.ndarray:
    """Uniform integers in [0, high) from ``rng.random`` (one double per draw, so consecutive
    chunks reproduce one big draw exactly). ``high`` may be an array broadcasting to ``size``."""
    high = np.asarray(high, dtype=np.int64)
    j = (rng.random(size) * high).astype(np.int64)
    return np.minimum(j, high - 1)


def _chunk_len(n_total: int, per_item_bytes: float, chunk_size: int | None) -> int:
    """Resamples per chunk: ``chunk_size``, or by default as many as fit in _MEMORY_BUDGET."""
    if chunk_size is None:
        chunk_size = max(1, int(_MEMORY_BUDGET // max(per_item_bytes, 1.0)))
    else:
        try:
            ok = not isinstance(chunk_size, bool) and int(chunk_size) >= 1
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise DataError(f"chunk_size must be a positive integer or None, got {chunk_size!r}")
    return min(int(chunk_size), n_total)


def _chunk_bounds(n_total: int, per_item_bytes: float, chunk_size: int | None, progress: bool,
                  desc: str) -> Iterator[tuple[int, int]]:
    """(start, stop) of consecutive chunks of ``n_total`` resamples, with a tqdm bar."""
    from ._draws import chunks  # noqa: PLC0415

    yield from chunks(n_total, _chunk_len(n_total, per_item_bytes, chunk_size), progress, desc)


def _check_memory(what: str, kept: float, work: float, chunk: float, chunk_len: int, B: int, shape: str,
                  fix: str) -> None:
    """DataError before anything is drawn when ``kept`` (arrays kept in the result) + the larger
    of ``work`` (working copies of the summaries) and ``chunk`` (temporaries of one chunk of
    ``chunk_len`` resamples) exceed mixedeval's memory limit."""
    res.check_memory(
        kept + max(work, chunk), what, fix,
        detail=(f"n_resamples={res.format_count(B)}{' x ' + shape if shape else ''} x 8 bytes = "
                f"{res.format_bytes(kept)} kept in the result, plus {res.format_bytes(work)} of working copies for "
                f"the summaries or {res.format_bytes(chunk)} for one chunk of {res.format_count(chunk_len)} "
                f"resamples, whichever is larger"),
    )


def _quantiles(d: np.ndarray, probs: Sequence[float], axis: int = 0) -> np.ndarray:
    """np.quantile (linear), ignoring NaN; the fast path when every value is finite."""
    if np.isfinite(d).all():
        return np.quantile(d, probs, axis=axis)
    with np.errstate(invalid="ignore"):
        return np.nanquantile(d, probs, axis=axis)


def _check_level(level: float) -> float:
    if not (isinstance(level, (int, float)) and 0.0 < float(level) < 1.0):
        raise DataError(f"level must be a number strictly between 0 and 1 (e.g. 0.95), got {level!r}")
    return float(level)


def _check_n_resamples(n_resamples: int, minimum: int = 2) -> int:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < minimum:
        raise DataError(f"n_resamples must be an integer >= {minimum}, got {n_resamples!r}")
    return int(n_resamples)


def _choice(value: Any, name: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise DataError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}")
    return value


def _provenance(method: str, **extra: Any) -> dict[str, Any]:
    import mixedeval  # noqa: PLC0415

    seed = extra.pop("random_state", None)
    return {
        "mixedeval": mixedeval.__version__,
        "numpy": np.__version__,
        "method": method,
        "random_state": seed if isinstance(seed, (int, np.integer, type(None))) else repr(seed),
        **extra,
    }


def _check_factor_columns(df, columns: Sequence[str]) -> None:
    from ..data.validate import _rows_preview  # noqa: PLC0415

    for c in columns:
        if df[c].isna().any():
            raise DataError(
                f"column {c!r} has {int(df[c].isna().sum())} missing values in rows "
                f"{_rows_preview(df.index[df[c].isna()])}; drop those rows or fill in the label"
            )


# --------------------------------------------------------------------------------------------
# variance decomposition
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Replicates:
    """The bootstrap-replicate scores (replicate >= 1) of every cell, flattened cell by cell
    (model-major, then language), each cell ordered by (seed rank, replicate)."""

    values: np.ndarray          # (total,)
    offsets: np.ndarray         # (M, L) start of each cell in ``values``
    counts: np.ndarray          # (M, L) number of replicate scores of each cell (0 = missing)
    replicate_sets: tuple       # (M, L) tuples of replicate labels of each cell (None = missing)
    n_seeds: np.ndarray         # (M, L)
    models: tuple               # row labels of the (M, L) arrays
    languages: tuple            # column labels


@dataclass(frozen=True, repr=False)
class VarianceDecomposition(ResultMixin):
    """Within- and between-language variance components of a multilingual leaderboard.

    ``cells`` has one row per (model, language): ``n_seeds``, ``n_boot``, ``mean`` (mean over
    seeds on the original test set), ``mean_se``, ``sigma`` (seed SD), ``sigma_se``, ``tau``
    (bootstrap SD), ``tau_se``, ``eta`` = sqrt(sigma^2 + tau^2), ``eta_se``.
    ``models`` has one row per model: ``n_languages``, ``mean`` (mean of the cell means),
    ``nu`` (SD of the cell means over languages), ``nu_se``, and the closed-form standard
    errors of the arithmetic-mean aggregate with the languages fixed
    (``se_mean_fixed_languages`` = sqrt(sum_l eta_l^2) / L) and with the languages bootstrapped
    (``se_mean_resampled_languages`` = sqrt((nu_0^2 + mean_l eta_l^2) / L), nu_0 the SD with
    ddof 0).
    """

    cells: Any
    models: Any
    ddof: int
    source: str
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    _replicates: _Replicates | None = field(default=None, repr=False, compare=False)

    _main_table = "cells"
    _print_tables = ("models", "cells")
    _title = "Variance decomposition (Saleva, Ataman & Lignos 2025)"

    def _scalars(self) -> list[tuple[str, Any]]:
        return [("source", self.source), ("ddof of nu", self.ddof),
                ("models x languages", f"{len(self.models)} x {self.cells['language'].nunique()}")]

    def summary(self):
        """One row per (model, component) like the paper's Tables 1, 8 and 9: ``component``
        (nu, eta, sigma, tau) with ``mean``, ``sd``, ``min``, ``max`` over languages (nu is one
        number per model: its sd/min/max are NaN)."""
        import pandas as pd  # noqa: PLC0415

        rows = []
        for _, mrow in self.models.iterrows():
            rows.append({"model": mrow["model"], "component": "nu", "mean": mrow["nu"],
                         "sd": np.nan, "min": np.nan, "max": np.nan})
        stats = (self.cells.groupby("model", sort=False)[["eta", "sigma", "tau"]]
                 .agg(["mean", "std", "min", "max"]))
        for m in self.models["model"]:
            for comp in ("eta", "sigma", "tau"):
                s = stats.loc[m, comp]
                rows.append({"model": m, "component": comp, "mean": s["mean"], "sd": s["std"],
                             "min": s["min"], "max": s["max"]})
        out = pd.DataFrame(rows)
        order = {"nu": 0, "eta": 1, "sigma": 2, "tau": 3}
        return (out.assign(_o=out["component"].map(order)).sort_values(["_o"], kind="stable")
                .drop(columns="_o").reset_index(drop=True))

    def simulate(self, **kwargs: Any) -> LeaderboardResult:
        """``simulate_leaderboard(self, **kwargs)``."""
        return simulate_leaderboard(self, **kwargs)


def _model_table(cells, models: list, ddof: int):
    """Per-model between-language SD and closed-form SEs of the arithmetic-mean aggregate."""
    import pandas as pd  # noqa: PLC0415

    rows = []
    for m in models:
        c = cells[cells["model"] == m]
        mu = c["mean"].to_numpy(float)
        eta = c["eta"].to_numpy(float)
        L = len(mu)
        nu = float(np.std(mu, ddof=ddof)) if L > ddof else np.nan
        nu0 = float(np.std(mu, ddof=0))
        rows.append({
            "model": m,
            "n_languages": L,
            "mean": float(mu.mean()),
            "nu": nu,
            # normal-theory SE of a sample SD: nu / sqrt(2 (L - 1))
            "nu_se": nu / np.sqrt(2.0 * (L - 1)) if L > 1 else np.nan,
            "se_mean_fixed_languages": float(np.sqrt(np.sum(eta**2)) / L),
            "se_mean_resampled_languages": float(np.sqrt((nu0**2 + np.mean(eta**2)) / L)),
        })
    return pd.DataFrame(rows)


def _check_ddof(ddof: int) -> int:
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise DataError(f"ddof must be a non-negative integer (1 = sample SD, 0 = population SD), got {ddof!r}")
    return int(ddof)


def _cells_preview(frame, cols: Sequence[str], limit: int = 5) -> str:
    recs = [tuple(r) for r in frame[list(cols)].drop_duplicates().head(limit + 1).itertuples(index=False)]
    shown = ", ".join(str(r) for r in recs[:limit])
    return shown + (", ..." if len(recs) > limit else "")


def decompose_variance(
    data: Any,
    *,
    model: str = "model",
    language: str = "language",
    seed: str = "seed",
    replicate: str = "replicate",
    score: str = "score",
    ddof: int = 1,
) -> VarianceDecomposition:
    """Seed, test-set and between-language variance components from a replicate table.

    ``data`` has one row per (model, language, seed, replicate) with a ``score``; replicate 0
    is the original test set and replicates 1..B are bootstrap resamples of it (the same
    replicates b for every seed of a cell). Per (model, language) cell, with S seeds
    (Sälevä et al. 2025, sec. 3):

    - ``mean`` = mean over seeds of the original-test-set scores (replicate 0);
    - ``sigma`` = SD (ddof 1) over seeds on the original test set; ``sigma_se`` = SD over the
      bootstrap replicates b of the seed SD computed on replicate b;
    - ``tau`` = mean over seeds of tau_s, tau_s = SD (ddof 1) over the bootstrap replicates for
      seed s; ``tau_se`` = SD_s(tau_s) / sqrt(S);
    - ``eta`` = sqrt(sigma^2 + tau^2); ``eta_se`` by the delta method,
      sqrt((sigma sigma_se)^2 + (tau tau_se)^2) / eta;
    - ``mean_se`` = sqrt(sigma^2 / S + tau_bar^2), tau_bar = SD over replicates of the
      seed-averaged score (seed noise averages over S seeds, test-set noise does not).

    Per model: ``nu`` = SD over languages of the cell means with ``ddof`` (1 = sample SD as
    in the paper); see :class:`VarianceDecomposition` for the other columns.

    Raises DataError for missing columns, non-finite scores, duplicated rows, fewer than two
    seeds or two bootstrap replicates in a cell, a seed without replicate 0, or replicates not
    shared by all seeds of a cell.
    """
    import pandas as pd  # noqa: PLC0415

    from ..data import as_pandas, require_columns, require_finite, require_nonempty, require_unique  # noqa: PLC0415

    ddof = _check_ddof(ddof)
    df = as_pandas(data)
    require_nonempty(df)
    require_columns(df, [model, language, seed, replicate, score])
    require_finite(df, score)
    _check_factor_columns(df, [model, language, seed, replicate])
    rep = pd.to_numeric(df[replicate], errors="coerce")
    if rep.isna().any() or (rep != np.round(rep)).any() or (rep < 0).any():
        raise DataError(
            f"replicate column {replicate!r} must hold integers >= 0 (0 = the original test set, 1..B = bootstrap "
            f"replicates); found e.g. {df.loc[rep.isna() | (rep < 0) | (rep != np.round(rep)), replicate].head(3).tolist()}"
        )
    df = df.assign(**{replicate: rep.astype(np.int64)})
    require_unique(df, [model, language, seed, replicate], what="replicate table")
    keys = [model, language]
    models = list(pd.unique(df[model]))
    languages = list(pd.unique(df[language]))

    orig = df[df[replicate] == 0]
    boot = df[df[replicate] >= 1]
    n_seeds_all = df.groupby(keys, sort=False)[seed].nunique()
    n_seeds_orig = orig.groupby(keys, sort=False)[seed].nunique().reindex(n_seeds_all.index, fill_value=0)
    bad = n_seeds_orig[n_seeds_orig < n_seeds_all]
    if len(bad):
        raise DataError(
            f"some seeds have no row with {replicate}=0 (the original test set), in cells (model, language) "
            f"{', '.join(map(str, bad.index[:5]))}; add the original-test-set score of every seed"
        )
    few = n_seeds_all[n_seeds_all < 2]
    if len(few):
        raise DataError(
            f"cells (model, language) {', '.join(map(str, few.index[:5]))} have fewer than 2 seeds in column {seed!r}; "
            "sigma (seed SD) needs at least 2 runs per cell; with one run, use decompose_variance_summary(..., "
            "sd_total=...) with a known within-language SD"
        )
    nb = boot.groupby(keys, sort=False)[replicate].nunique().reindex(n_seeds_all.index, fill_value=0)
    few = nb[nb < 2]
    if len(few):
        raise DataError(
            f"cells (model, language) {', '.join(map(str, few.index[:5]))} have fewer than 2 bootstrap replicates "
            f"({replicate} >= 1); tau (bootstrap SD) needs at least 2"
        )
    per_seed = boot.groupby([*keys, seed], sort=False)[replicate].nunique()
    need = nb.reindex(per_seed.droplevel(seed).index).to_numpy()
    if (per_seed.to_numpy() != need).any():
        badc = per_seed[per_seed.to_numpy() != need].index
        raise DataError(
            f"bootstrap replicates are not shared by all seeds in cells (model, language, seed) "
            f"{', '.join(map(str, badc[:5]))}; every seed of a cell needs the same replicates 1..B (the same "
            "resampled test sets)"
        )

    g0 = orig.groupby(keys, sort=False)[score]
    mean = g0.mean()
    sigma = g0.std(ddof=1)
    S = g0.count()
    tau_s = boot.groupby([*keys, seed], sort=False)[score].std(ddof=1)
    tau = tau_s.groupby(level=[0, 1], sort=False).mean()
    tau_se = tau_s.groupby(level=[0, 1], sort=False).std(ddof=1) / np.sqrt(S)
    gb = boot.groupby([*keys, replicate], sort=False)[score]
    sigma_se = gb.std(ddof=1).groupby(level=[0, 1], sort=False).std(ddof=1)
    tau_bar = gb.mean().groupby(level=[0, 1], sort=False).std(ddof=1)

    idx = mean.index
    cells = pd.DataFrame({
        "model": idx.get_level_values(0),
        "language": idx.get_level_values(1),
        "n_seeds": S.reindex(idx).to_numpy(np.int64),
        "n_boot": nb.reindex(idx).to_numpy(np.int64),
        "mean": mean.to_numpy(float),
        "mean_se": np.sqrt(sigma.to_numpy(float) ** 2 / S.to_numpy(float) + tau_bar.reindex(idx).to_numpy(float) ** 2),
        "sigma": sigma.to_numpy(float),
        "sigma_se": sigma_se.reindex(idx).to_numpy(float),
        "tau": tau.reindex(idx).to_numpy(float),
        "tau_se": tau_se.reindex(idx).to_numpy(float),
    })
    cells = _finish_cells(cells, models, languages)

    # replicate scores for nonparametric simulation, cell by cell, ordered by (seed rank, b)
    mcode = pd.Categorical(boot[model], categories=models).codes.astype(np.int64)
    lcode = pd.Categorical(boot[language], categories=languages).codes.astype(np.int64)
    try:
        scode, _ = pd.factorize(boot[seed], sort=True)
    except TypeError:
        scode, _ = pd.factorize(boot[seed], sort=False)
    order = np.lexsort((boot[replicate].to_numpy(), scode, lcode, mcode))
    values = boot[score].to_numpy(float)[order]
    M, L = len(models), len(languages)
    counts = np.zeros((M, L), np.int64)
    np.add.at(counts, (mcode, lcode), 1)
    offsets = (np.cumsum(counts.ravel()) - counts.ravel()).reshape(M, L)
    rep_sets = boot.groupby(keys, sort=False)[replicate].agg(lambda s: tuple(sorted(set(s))))
    sets = [[None] * L for _ in range(M)]
    nseeds = np.zeros((M, L), np.int64)
    mpos = {m: i for i, m in enumerate(models)}
    lpos = {g: j for j, g in enumerate(languages)}
    for (m, g), t in rep_sets.items():
        sets[mpos[m]][lpos[g]] = t
    for (m, g), s in S.items():
        nseeds[mpos[m], lpos[g]] = s
    reps = _Replicates(values, offsets, counts, tuple(tuple(r) for r in sets), nseeds, tuple(models), tuple(languages))
    return VarianceDecomposition(
        cells=cells, models=_model_table(cells, models, ddof), ddof=ddof, source="replicates",
        provenance=_provenance("decompose_variance", ddof=ddof), _replicates=reps,
    )


def _finish_cells(cells, models: list, languages: list):
    """Add eta and its delta-method SE; order rows by model then language (first appearance)."""
    import pandas as pd  # noqa: PLC0415

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
    sd_seed: str | None = "sd_seed",
    sd_boot: str | None = "sd_boot",
    sd_total: str | None = None,
    n_seeds: str | None = None,
    ddof: int = 1,
) -> VarianceDecomposition:
    """Variance components from a summary table with one row per (model, language).

    Either the two within-language SDs are given (``sd_seed`` = sigma, ``sd_boot`` = tau; then
    eta = sqrt(sigma^2 + tau^2)) or only the total (``sd_total`` = eta; sigma and tau are NaN).
    ``n_seeds`` (optional column) gives ``mean_se`` = sqrt(sigma^2 / S + tau^2); standard
    errors of the SDs are NaN (a summary table does not carry them). ``nu`` and the closed-form
    SEs per model are computed as in :func:`decompose_variance`. The result supports
    parametric simulation only (no replicate scores).
    """
    import pandas as pd  # noqa: PLC0415

    from ..data import as_pandas, require_columns, require_finite, require_nonempty, require_unique  # noqa: PLC0415

    ddof = _check_ddof(ddof)
    df = as_pandas(data)
    require_nonempty(df)
    if sd_total is not None:
        sd_cols = [sd_total]
    elif sd_seed is None or sd_boot is None:
        raise DataError("give both sd_seed and sd_boot columns, or sd_total (the within-language SD eta)")
    else:
        sd_cols = [sd_seed, sd_boot]
    require_columns(df, [model, language, mean, *sd_cols, n_seeds])
    for c in [mean, *sd_cols] + ([n_seeds] if n_seeds else []):
        require_finite(df, c)
    for c in sd_cols:
        if (df[c] < 0).any():
            raise DataError(f"standard-deviation column {c!r} has negative values; SDs must be >= 0")
    if n_seeds and (df[n_seeds] < 1).any():
        raise DataError(f"column {n_seeds!r} (number of seeds) must be >= 1")
    _check_factor_columns(df, [model, language])
    require_unique(df, [model, language], what="summary table")
    models = list(pd.unique(df[model]))
    languages = list(pd.unique(df[language]))
    nan = np.full(len(df), np.nan)
    if sd_total is not None:
        sig, tau, eta = nan, nan, df[sd_total].to_numpy(float)
    else:
        sig, tau = df[sd_seed].to_numpy(float), df[sd_boot].to_numpy(float)
        eta = np.sqrt(sig**2 + tau**2)
    S = df[n_seeds].to_numpy(float) if n_seeds else nan
    cells = pd.DataFrame({
        "model": df[model].to_numpy(), "language": df[language].to_numpy(),
        "n_seeds": S, "n_boot": nan, "mean": df[mean].to_numpy(float),
        "mean_se": np.sqrt(sig**2 / S + tau**2), "sigma": sig, "sigma_se": nan,
        "tau": tau, "tau_se": nan, "eta": eta,
    })
    cells = _finish_cells(cells, models, languages)
    return VarianceDecomposition(
        cells=cells, models=_model_table(cells, models, ddof), ddof=ddof, source="summary",
        provenance=_provenance("decompose_variance_summary", ddof=ddof),
    )


# --------------------------------------------------------------------------------------------
# leaderboard simulation
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class LeaderboardResult(ResultMixin):
    """Replicated-leaderboard simulation (Sälevä, Ataman & Lignos 2025, secs. 4.2 and 6.2).

    Tables (tidy, snake_case):

    - ``aggregates``: aggregate, model, estimate (aggregate of the observed cell means),
      boot_mean, std_error (SD of the draws), conf_low / conf_high (percentile interval),
      conf_low_se / conf_high_se (center +- se_multiplier * SE), conf_low_hw / conf_high_hw
      (center +- half the percentile width), n_draws (draws where the aggregate is defined).
    - ``pairwise``: aggregate, model_a, model_b, delta (observed a - b), boot_mean, std_error
      (SD of the simulated delta), effect_size (center / std_error), conf_low, conf_high
      (percentile), prob_a_better.
    - ``language_pairwise``: language, model_a, model_b, delta, boot_mean, std_error, z
      (center / std_error), significant (|z| >= z_threshold); boot_mean and std_error are the
      exact moments of the simulated per-language difference under the noise model.
    - ``ranks``: aggregate, model, observed_rank, expected_rank, rank_conf_low, rank_conf_high,
      p_rank_1 .. p_rank_M (rank 1 = best).

    ``draws`` is the (n_resamples, M, A) array of simulated aggregates (model and aggregate
    order as in ``models`` and ``aggregate_names``).
    """

    aggregates: Any
    pairwise: Any
    language_pairwise: Any
    ranks: Any
    models: tuple
    languages: tuple
    aggregate_names: tuple[str, ...]
    noise: str
    language_sampling: str
    n_languages: int
    n_resamples: int
    level: float
    higher_is_better: bool
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    _draws: np.ndarray | None = field(default=None, repr=False, compare=False)

    _main_table = "aggregates"
    _print_tables = ("aggregates", "pairwise", "ranks")
    _title = "Simulated leaderboard (Saleva, Ataman & Lignos 2025)"

    def _scalars(self) -> list[tuple[str, Any]]:
        return [("noise", self.noise), ("languages", f"{self.language_sampling} ({self.n_languages} per replicate)"),
                ("n_resamples", self.n_resamples), ("level", self.level)]

    @property
    def draws(self) -> np.ndarray:
        return self._draws

    def summary(self):
        """The ``aggregates`` table."""
        return self.aggregates.copy()

    @res.memory_errors(_FIX)
    def beats(self, aggregate: str = "mean"):
        """M x M DataFrame: P(row model beats column model) under ``aggregate`` (ties count 1/2)."""
        import pandas as pd  # noqa: PLC0415

        a = self.aggregate_names.index(_choice(aggregate, "aggregate", self.aggregate_names))
        B, M = self._draws.shape[:2]
        res.check_memory(
            8.0 * B * M * (1.25 * M + 1), "the pairwise comparisons of beats()",
            "Use fewer n_resamples or fewer models in simulate_leaderboard().",
            detail=f"n_resamples={res.format_count(B)} x {M} x {M} models x 8 bytes for the differences, plus masks")
        d = self._draws[:, :, a]
        d = d[np.isfinite(d).all(axis=1)]
        sign = 1.0 if self.higher_is_better else -1.0
        diff = sign * (d[:, :, None] - d[:, None, :])
        p = (diff > 0).mean(0) + 0.5 * (diff == 0).mean(0)
        np.fill_diagonal(p, np.nan)
        return pd.DataFrame(p, index=list(self.models), columns=list(self.models))


def _aggregate(Y: np.ndarray, name: str) -> np.ndarray:
    """Aggregate over the last axis; the geometric mean is NaN where any value is <= 0."""
    if name == "mean":
        return Y.mean(axis=-1)
    if name == "median":
        return np.median(Y, axis=-1)
    ok = (Y > 0).all(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.exp(np.log(Y).mean(axis=-1))
    return np.where(ok, g, np.nan)


def _as_decomposition(components: Any) -> VarianceDecomposition:
    if isinstance(components, VarianceDecomposition):
        return components
    try:
        import pandas as pd  # noqa: PLC0415

        is_frame = isinstance(components, pd.DataFrame)
    except ImportError:  # pragma: no cover
        is_frame = False
    if is_frame:
        cols = set(components.columns)
        if {"model", "language", "mean"} <= cols and ({"sd_seed", "sd_boot"} <= cols or "sd_total" in cols):
            if {"sd_seed", "sd_boot"} <= cols:
                return decompose_variance_summary(components)
            return decompose_variance_summary(components, sd_total="sd_total")
        if {"model", "language", "seed", "replicate", "score"} <= cols:
            return decompose_variance(components)
    raise DataError(
        "simulate_leaderboard needs the result of decompose_variance(...) or decompose_variance_summary(...) "
        f"(got {type(components).__name__}); a DataFrame is accepted when it has columns model, language, mean and "
        "sd_seed + sd_boot or sd_total, or model, language, seed, replicate, score"
    )


def _noise_moments(noise: str, paired: bool, means: np.ndarray, eta: np.ndarray, reps: _Replicates | None,
                   offsets: np.ndarray | None, counts: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Covariance across models of the simulated score in each language, (L, M, M), and the
    mean of the simulated score minus the cell mean, (M, L), under the noise model."""
    M, L = means.shape
    if noise == "parametric":
        cov = np.zeros((L, M, M))
        cov[:, np.arange(M), np.arange(M)] = (eta**2).T
        return cov, np.zeros((M, L))
    cov = np.zeros((L, M, M))
    shift = np.zeros((M, L))
    for j in range(L):  # loop over languages (not resamples)
        V = [reps.values[offsets[m, j]:offsets[m, j] + counts[m, j]] for m in range(M)]
        shift[:, j] = [v.mean() for v in V]
        if paired:
            cov[j] = np.atleast_2d(np.cov(np.vstack(V), bias=True))
        else:
            cov[j, np.arange(M), np.arange(M)] = [v.var() for v in V]
    return cov, shift - means


def _pair_index(M: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (a, b), a < b, of every unordered pair of models (explicit pairs, no np.triu)."""
    ia, ib = np.triu_indices(M, k=1)
    return ia.astype(np.int64), ib.astype(np.int64)


@res.memory_errors(_FIX)
def simulate_leaderboard(
    components: Any,
    *,
    noise: Literal["parametric", "nonparametric"] = "parametric",
    languages: Literal["fixed", "bootstrap", "subsample"] = "fixed",
    n_languages: int | None = None,
    aggregates: Sequence[str] = AGGREGATES,
    pair_noise: bool = False,
    n_resamples: int = 5000,
    level: float = 0.95,
    se_multiplier: float = 2.0,
    center: Literal["observed", "boot_mean"] = "observed",
    z_threshold: float = 2.0,
    higher_is_better: bool = True,
    random_state: Any = None,
    chunk_size: int | None = None,
    progress: bool = True,
) -> LeaderboardResult:
    """Simulate replications of a multilingual leaderboard (Sälevä, Ataman & Lignos 2025).

    Each replicate r draws a score for every (model, language) cell and then the languages:

    - ``noise="parametric"``: x_ml + e, e ~ N(0, eta_ml^2), independent across cells (the
      paper's sec. 4.2 procedure); ``"nonparametric"``: one of the cell's replicate scores
      (all seeds x bootstrap replicates b >= 1) drawn uniformly (sec. 6.2; needs
      :func:`decompose_variance` input). With ``pair_noise=True`` the same (seed position,
      replicate b) is drawn for every model of a language, which is right when replicate b is
      the same resampled test set for all models (paired bootstrap replicates).
    - ``languages="fixed"``: all L languages; ``"bootstrap"``: ``n_languages`` (default L)
      languages drawn with replacement; ``"subsample"``: ``n_languages`` < L languages drawn
      without replacement. The language draw of a replicate is shared by all models
      (paired), and redrawn in every replicate. Each drawn language gets its own noise draw
      (a two-stage bootstrap: languages, then replication noise within each drawn language;
      reusing one noisy value for a language drawn twice would count the within-language
      variance (2 - 1/L) times).

    Aggregates over the drawn languages (``mean``, ``geometric_mean``, ``median``) are reported
    with the observed value (aggregate of the cell means over the original languages), the
    bootstrap mean and SD, and three intervals: percentile (``level``), center +-
    ``se_multiplier`` SE (the paper's +-2 SE), and center +- half the percentile width (as in
    sacreBLEU). ``center="boot_mean"`` centres the last two (and the effect sizes) on the
    bootstrap mean as the paper's tables do; the default centres on the observed value.
    Pairwise differences of aggregates carry effect_size = delta / SD(delta); per-language
    differences carry z = delta / SD(delta) and the flag |z| >= ``z_threshold``, with the SD
    and mean of the simulated per-language difference computed exactly from the noise model
    (sqrt(eta_a^2 + eta_b^2) for parametric noise; the replicates' moments for nonparametric
    noise, with their covariance when paired) — the B -> infinity limit of the simulation. Rank
    distributions rank the models in every replicate (rank 1 = best, ``higher_is_better``;
    ties share the lowest rank).

    The geometric mean needs positive scores: DataError if an observed cell mean is <= 0;
    replicates where a simulated score is <= 0 give NaN, are left out of that aggregate's
    summaries and counted in ``n_draws``, with a warning.

    Closed forms the simulation reproduces (tested): with fixed languages and parametric noise
    SD(mean) = sqrt(sum_l eta_l^2) / L and SD(mean_a - mean_b) = sqrt(sum_l (eta_al^2 +
    eta_bl^2)) / L; with bootstrapped languages SD(mean) = sqrt((nu_0^2 + mean_l eta_l^2) / L).
    """
    import pandas as pd  # noqa: PLC0415
    from scipy.stats import rankdata  # noqa: PLC0415

    vd = _as_decomposition(components)
    noise = _choice(noise, "noise", ("parametric", "nonparametric"))
    lang_mode = _choice(languages, "languages", ("fixed", "bootstrap", "subsample"))
    center = _choice(center, "center", ("observed", "boot_mean"))
    level = _check_level(level)
    B = _check_n_resamples(n_resamples)
    if isinstance(aggregates, str):
        aggregates = (aggregates,)
    aggs = tuple(aggregates)
    if not aggs:
        raise DataError(f"aggregates must name at least one of {AGGREGATES}")
    for a in aggs:
        _choice(a, "each aggregate", AGGREGATES)
    if len(set(aggs)) != len(aggs):
        raise DataError(f"aggregates has duplicates: {aggs}")
    if not (np.isfinite(se_multiplier) and se_multiplier > 0):
        raise DataError(f"se_multiplier must be a positive number (2 = the paper's +-2 SE), got {se_multiplier!r}")

    cells = vd.cells
    models = list(pd.unique(cells["model"]))
    langs = list(pd.unique(cells["language"]))
    M, L = len(models), len(langs)
    if M < 1:
        raise DataError("no models in the variance decomposition")
    full = pd.MultiIndex.from_product([models, langs])
    have = pd.MultiIndex.from_frame(cells[["model", "language"]])
    missing = full.difference(have)
    if len(missing):
        raise DataError(
            f"{len(missing)} (model, language) cells are missing, e.g. {', '.join(map(str, list(missing)[:5]))}; "
            "every model needs a score on every language: drop the languages (or models) that are incomplete"
        )
    piv = cells.set_index(["model", "language"]).reindex(full)
    means = piv["mean"].to_numpy(float).reshape(M, L)
    eta = piv["eta"].to_numpy(float).reshape(M, L)
    if not np.isfinite(means).all() or not np.isfinite(eta).all() or (eta < 0).any():
        raise DataError("cell means and within-language SDs (eta) must be finite and eta >= 0")

    if lang_mode == "fixed":
        if n_languages not in (None, L):
            raise DataError(f"n_languages={n_languages} needs languages='bootstrap' or 'subsample'")
        k = L
    else:
        if L < 2:
            raise DataError(f"resampling languages needs at least 2 languages; the table has {L}")
        if lang_mode == "bootstrap":
            k = L if n_languages is None else int(n_languages)
            if k < 1:
                raise DataError(f"n_languages must be >= 1, got {n_languages!r}")
        else:
            if n_languages is None or not (1 <= int(n_languages) < L):
                raise DataError(
                    f"languages='subsample' needs n_languages between 1 and {L - 1} (languages drawn without "
                    f"replacement out of {L}); got {n_languages!r}"
                )
            k = int(n_languages)

    reps = vd._replicates
    if noise == "nonparametric":
        if reps is None:
            raise DataError(
                "noise='nonparametric' draws from the replicate scores of each cell: build the decomposition with "
                "decompose_variance(replicate_table), not decompose_variance_summary, or use noise='parametric'"
            )
        mi = [reps.models.index(m) for m in models]
        li = [reps.languages.index(g) for g in langs]
        offsets = reps.offsets[np.ix_(mi, li)]
        counts = reps.counts[np.ix_(mi, li)]
        if (counts < 1).any():
            raise DataError("some cells have no bootstrap replicate scores; use noise='parametric'")
        if pair_noise:
            for j, g in enumerate(langs):
                sets = {reps.replicate_sets[i][li[j]] for i in mi}
                if len(sets) != 1 or len(set(reps.n_seeds[mi, li[j]])) != 1:
                    raise DataError(
                        f"pair_noise=True needs the same seeds count and bootstrap replicates for every model in "
                        f"language {g!r}; they differ (use pair_noise=False)"
                    )
    elif pair_noise:
        raise DataError("pair_noise applies to noise='nonparametric' (parametric noise is independent across models)")

    warnings: list[ResultWarning] = []
    if "geometric_mean" in aggs and (means <= 0).any():
        bad = [(models[i], langs[j]) for i, j in zip(*np.nonzero(means <= 0))][:5]
        raise DataError(
            f"the geometric mean needs positive scores; cell means <= 0 in {bad}; drop 'geometric_mean' from "
            "aggregates or shift the scores"
        )
    A = len(aggs)
    obs = np.stack([_aggregate(means, a) for a in aggs], axis=-1)  # (M, A)

    per_bytes = 8.0 * (6 * M * max(k, L) + L)
    c_len = _chunk_len(B, per_bytes, chunk_size)
    _check_memory("the simulated leaderboards and their working copies", 8.0 * B * M * A,
                  _LB_WORK_COPIES * 8.0 * B * M, c_len * per_bytes, c_len, B, f"{M} models x {A} aggregates", _FIX)
    rng = _as_generator(random_state)
    noise_rng, lang_rng = _spawn(rng, 2)
    draws = np.empty((B, M, A))

    def _noisy(gen: np.random.Generator, c: int, cols: np.ndarray | None) -> np.ndarray:
        """(c, M, n_cols) simulated scores of the cells in language columns ``cols`` ((c, n_cols)
        per replicate; None = all L languages in order)."""
        def cell(arr: np.ndarray) -> np.ndarray:  # (M, L) -> broadcastable to (c, M, n_cols)
            return arr[None] if cols is None else arr[:, cols].transpose(1, 0, 2)

        shape = (c, M, L) if cols is None else (c, M, cols.shape[1])
        if noise == "parametric":
            return cell(means) + cell(eta) * gen.standard_normal(shape)
        cnt = cell(counts)
        if pair_noise:  # same (seed position, replicate) for every model of a language
            j = _uniform_index(gen, cnt[:, :1], (c, 1, shape[2]))
        else:
            j = _uniform_index(gen, cnt, shape)
        return reps.values[cell(offsets) + j]

    for start, stop in _chunk_bounds(B, per_bytes, chunk_size, progress, "leaderboard"):
        c = stop - start
        if lang_mode == "fixed":
            Y = _noisy(noise_rng, c, None)
        else:
            # the same language draw for every model; each drawn copy gets its own noise
            # (two-stage bootstrap: languages, then replication noise within each drawn language)
            if lang_mode == "bootstrap":
                idx = _uniform_index(lang_rng, L, (c, k))
            else:
                idx = np.argsort(lang_rng.random((c, L)), axis=1)[:, :k]
            Y = _noisy(noise_rng, c, idx)
        for ai, a in enumerate(aggs):
            draws[start:stop, :, ai] = _aggregate(Y, a)

    alpha = 1.0 - level
    sign = 1.0 if higher_is_better else -1.0

    # ---- aggregates
    rows = []
    for ai, a in enumerate(aggs):
        d = draws[:, :, ai]
        n_ok = np.isfinite(d).sum(axis=0)
        if a == "geometric_mean" and (n_ok < B).any():
            warnings.append(ResultWarning(
                "undefined_draws",
                f"geometric mean undefined (a simulated score <= 0) in {int(B - n_ok.min())} of {B} replicates for some "
                "models; those replicates are left out of its summaries (see n_draws)",
            ))
        with np.errstate(invalid="ignore"):
            bm = np.nanmean(d, axis=0)
            se = np.nanstd(d, axis=0, ddof=1)
            q = _quantiles(d, [alpha / 2, 1 - alpha / 2])
        ctr = obs[:, ai] if center == "observed" else bm
        hw = (q[1] - q[0]) / 2
        for m in range(M):
            rows.append({
                "aggregate": a, "model": models[m], "estimate": obs[m, ai], "boot_mean": bm[m],
                "std_error": se[m], "conf_low": q[0, m], "conf_high": q[1, m],
                "conf_low_se": ctr[m] - se_multiplier * se[m], "conf_high_se": ctr[m] + se_multiplier * se[m],
                "conf_low_hw": ctr[m] - hw[m], "conf_high_hw": ctr[m] + hw[m], "n_draws": int(n_ok[m]),
            })
    agg_table = pd.DataFrame(rows)

    # ---- pairwise differences of aggregates (explicit pair indices; never np.triu on draws)
    ia, ib = _pair_index(M)
    model_arr = np.array(models, dtype=object)
    pieces = []
    block = max(1, int(4_000_000 // B))
    for ai, a in enumerate(aggs):
        for s0 in range(0, len(ia), block):
            pa, pb = ia[s0:s0 + block], ib[s0:s0 + block]
            dd = draws[:, pa, ai] - draws[:, pb, ai]  # (B, p)
            with np.errstate(invalid="ignore", divide="ignore"):
                bm = np.nanmean(dd, axis=0)
                se = np.nanstd(dd, axis=0, ddof=1)
                q = _quantiles(dd, [alpha / 2, 1 - alpha / 2])
                better = ((sign * dd > 0).sum(0) + 0.5 * (dd == 0).sum(0)) / np.isfinite(dd).sum(0)
                delta = obs[pa, ai] - obs[pb, ai]
                es = (delta if center == "observed" else bm) / se
            pieces.append(pd.DataFrame({
                "aggregate": a, "model_a": model_arr[pa], "model_b": model_arr[pb], "delta": delta,
                "boot_mean": bm, "std_error": se, "effect_size": es, "conf_low": q[0], "conf_high": q[1],
                "prob_a_better": better,
            }))
    pair_table = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame(
        columns=["aggregate", "model_a", "model_b", "delta", "boot_mean", "std_error", "effect_size",
                 "conf_low", "conf_high", "prob_a_better"])

    # ---- per-language pairwise differences: moments of the noise model, exact (the limit of the
    # simulation as B -> infinity; no Monte-Carlo error)
    cov, shift = _noise_moments(noise, pair_noise, means, eta, reps, offsets if noise != "parametric" else None,
                                counts if noise != "parametric" else None)  # (L, M, M), (M, L)
    var = cov[:, ia, ia] + cov[:, ib, ib] - 2 * cov[:, ia, ib]  # (L, P)
    sd = np.sqrt(np.maximum(var, 0.0))
    delta = (means[ia] - means[ib]).T
    bm = delta + (shift[ia] - shift[ib]).T
    ctr = delta if center == "observed" else bm
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where((sd == 0) & (ctr == 0), 0.0, ctr / sd)
    P = len(ia)
    lang_table = pd.DataFrame({
        "language": np.repeat(np.array(langs, dtype=object), P),
        "model_a": np.tile(np.array(models, dtype=object)[ia], L),
        "model_b": np.tile(np.array(models, dtype=object)[ib], L),
        "delta": delta.ravel(), "boot_mean": bm.ravel(), "std_error": sd.ravel(), "z": z.ravel(),
        "significant": np.abs(z.ravel()) >= z_threshold,
    })

    # ---- rank distributions
    rows = []
    for ai, a in enumerate(aggs):
        d = draws[:, :, ai]
        d = d[np.isfinite(d).all(axis=1)]
        rk = rankdata(-sign * d, axis=1, method="min").astype(np.int64)  # (B', M), 1 = best
        obs_rank = rankdata(-sign * obs[:, ai], method="min").astype(np.int64)
        probs = np.stack([(rk == r).mean(axis=0) for r in range(1, M + 1)], axis=1) if len(d) else np.full((M, M), np.nan)
        for m in range(M):
            r = rk[:, m]
            row = {"aggregate": a, "model": models[m], "observed_rank": int(obs_rank[m]),
                   "expected_rank": float(r.mean()) if len(r) else np.nan,
                   "rank_conf_low": float(np.quantile(r, alpha / 2, method="inverted_cdf")) if len(r) else np.nan,
                   "rank_conf_high": float(np.quantile(r, 1 - alpha / 2, method="inverted_cdf")) if len(r) else np.nan}
            row.update({f"p_rank_{r_ + 1}": probs[m, r_] for r_ in range(M)})
            rows.append(row)
    rank_table = pd.DataFrame(rows)

    return LeaderboardResult(
        aggregates=agg_table, pairwise=pair_table, language_pairwise=lang_table, ranks=rank_table,
        models=tuple(models), languages=tuple(langs), aggregate_names=aggs, noise=noise,
        language_sampling=lang_mode, n_languages=k, n_resamples=B, level=level,
        higher_is_better=bool(higher_is_better), warnings=tuple(warnings),
        provenance=_provenance(
            "simulate_leaderboard", random_state=random_state, noise=noise, pair_noise=bool(pair_noise),
            languages=lang_mode, n_languages=k, n_resamples=B, center=center, se_multiplier=float(se_multiplier),
            source=vd.source,
        ),
        _draws=draws,
    )
