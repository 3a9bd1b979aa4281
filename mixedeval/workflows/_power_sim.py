"""The simulation engine behind :mod:`mixedeval.workflows.power`: the model to simulate from
(a :class:`~mixedeval.data._design_spec.Design` or a pilot fit), the seeds, and the batches.

Seeding. ``random_state`` becomes one ``numpy.random.SeedSequence`` ``ss``. Simulation ``i``
(0-based) draws its response after R's ``set.seed(s_i)``, ``s_i = r_seed(stream(stream(ss, 0),
i))`` (:func:`mixedeval._random.r_seed` of its own child sequence); a paired resampling test of
simulation ``i`` draws from ``stream(stream(ss, 1), i)``. So a simulation's result depends on its
index only -- never on the batch size -- the first ``n`` simulations of a longer run are those of
a run of ``n``, and two power evaluations with the same ``random_state`` share their random
draws (common random numbers: along an effect grid the responses differ only by the effect).

Batches. The R tests (likelihood-ratio, Satterthwaite / Kenward-Roger F, GLMM Wald z) run
``batch_size`` simulations per R call (``me_power_batch`` in ``r/power.R``: simulate, refit,
test), the resampling tests fetch ``batch_size`` simulated responses per R call and test them in
numpy.
"""
from __future__ import annotations

import uuid

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .._progress import bar_disabled
from .. import _resources as res
from .._random import r_seed
from ..data._design_spec import Design, extend_levels, factor_name, with_sizes
from ..data._formula import parse_formula, quote_name
from ..engine import _bridge
from ..errors import DataError
from ..inference._glmm import GLMMFit
from ..inference._lmm import LMMFit
from ..resampling import approximate_randomization, paired_bootstrap_test, sign_flip_test
from ..resampling import _draws as dr

#: test name -> (R test code, statistic column of the simulations table)
R_TESTS: dict[str, tuple[str, str]] = {
    "lrt": ("lrt", "chisq"),
    "satterthwaite": ("Satterthwaite", "f_value"),
    "kenward-roger": ("Kenward-Roger", "f_value"),
    "wald_z": ("wald_z", "z_value"),
}
#: paired resampling tests of the two systems' per-item means
RESAMPLING_TESTS: dict[str, Callable[..., Any]] = {
    "sign_flip": sign_flip_test,
    "approximate_randomization": approximate_randomization,
    "paired_bootstrap": paired_bootstrap_test,
}
TESTS = (*R_TESTS, *RESAMPLING_TESTS)


@dataclass(frozen=True)
class Model:
    """What a power simulation draws from: the analysis formula (R text), the design data (the
    response column holds placeholders, or the pilot's scores), the parameters, the tested term,
    and the columns of the paired tests."""

    formula: str
    data: Any
    beta: Any  # {name: value} (pilot) or a list in the model's order (design)
    theta: dict[str, float] | None
    sigma: float
    variances: dict[str, float] | None
    family: str
    term: str
    system: str | None
    item: str | None
    source: str  # "design" or "fit"
    design: Design | None = None
    scale: float = 1.0  # SD of one observation around the fixed effects (sets the effect grid of the MDE)
    info: dict[str, Any] = field(default_factory=dict)


def from_design(d: Design) -> Model:
    """The model of a :class:`Design`: ``system`` tested, coefficients (intercept, 0, ..., 0)."""
    k = d.sizes["systems"]
    total = sum(d.variances.values())
    return Model(formula=d.formula, data=d.table, beta=[d.intercept] + [0.0] * (k - 1), theta=None, sigma=d.sigma,
                 variances=d.group_variances(), family=d.family, term="system", system="system", item="item",
                 source="design", design=d, scale=float(np.sqrt(total)) if total > 0 else 1.0)


def _r_term(term: Any, terms: list[tuple[str, ...]]) -> str | None:
    """R's label (``term.labels``) of ``term`` among the formula's fixed ``terms`` (tuples of
    column names), or None: a column that needs back-quotes is matched with or without them
    (``my system`` or ```my system```) and labelled with them, as R does."""
    if not isinstance(term, str):
        return None
    want = tuple(p.strip().strip("`") for p in term.split(":"))
    for t in terms:
        if t == want or ":".join(t) == term:
            return ":".join(quote_name(v) for v in t)
    return None


def from_fit(fit: Any, term: str, system: str | None, item: str | None) -> Model:
    """The model of a pilot fit: its fixed effects, theta and sigma as estimated (the term's
    coefficients are replaced by the effect at setup), its data and formula."""
    if isinstance(fit, GLMMFit):
        family = str(getattr(fit, "family", ""))
        if family != "binomial" or fit.link != "logit" or fit.weights is not None or int(fit.nagq) != 1:
            raise DataError("power from a GLMM fit supports binomial fits of 0/1 scores with the logit link, "
                            f"no weights and nagq=1 (this fit: {family!r}, link {fit.link!r}, nagq {fit.nagq})")
    elif not isinstance(fit, LMMFit):
        raise DataError(f"power needs an LMMFit, a binomial GLMMFit or a me.design(...), not {type(fit).__name__}")
    else:
        family = "gaussian"
    cols = [str(c) for c in fit.data.columns]
    try:
        parsed = parse_formula(fit.formula, cols)
    except DataError as exc:
        raise DataError(f"power simulation needs a formula that passes mixedeval's checks: {exc}") from exc
    if parsed.response not in cols:
        raise DataError(f"the response of {fit.formula!r} must be a data column for a power simulation; compute "
                        "the transformed response as a column and fit that")
    terms = [":".join(t) for t in parsed.fixed_expanded]
    r_term = _r_term(term, [tuple(t) for t in parsed.fixed_expanded])
    if r_term is None:
        raise DataError(f"term {term!r} is not a fixed-effect term of {fit.formula!r} (terms: {', '.join(terms)}); "
                        "pass term='<the term to test>'")
    data = fit.data.dropna().reset_index(drop=True)
    par = _bridge.power_pilot(fit)
    variance = fit.random.loc[fit.random["term2"].isna(), "variance"].sum() if family == "gaussian" else 1.0
    return Model(formula=parsed.r_formula, data=data, beta=par["beta"], theta=par["theta"], sigma=par["sigma"],
                 variances=None, family=family, term=r_term, system=system, item=item, source="fit",
                 scale=float(np.sqrt(variance)) if variance > 0 else 1.0)


def as_model(model: Any, term: str | None, system: str | None, item: str | None) -> Model:
    if isinstance(model, Model):
        return model
    if isinstance(model, Design):
        if term not in (None, "system"):
            raise DataError(f"a design tests its 'system' term, not {term!r}")
        return from_design(model)
    return from_fit(model, term or "system", system if system is not None else (term or "system").strip("`"), item)


def extend(m: Model, along: str, n: int) -> Model:
    """``m`` with ``n`` levels of ``along`` (a design factor, or a column of the pilot data)."""
    if m.design is not None:
        return from_design(with_sizes(m.design, **{factor_name(along): int(n)}))
    if along == m.term or quote_name(str(along)) == m.term:
        raise DataError(f"cannot extend along the tested term {along!r}")
    return replace(m, data=extend_levels(m.data, along, int(n)))


def size_of(m: Model, along: str) -> int:
    """The current number of levels of ``along``."""
    if m.design is not None:
        return int(m.design.sizes[factor_name(along)])
    if along not in m.data.columns:
        raise DataError(f"{along!r} is not a column of the pilot data ({', '.join(map(str, m.data.columns))})")
    return int(m.data[along].nunique())


def check_test(m: Model, test: str) -> None:
    if test not in TESTS:
        raise DataError(f"test must be one of {', '.join(TESTS)}, not {test!r}")
    if m.family == "binomial" and test in ("lrt", "satterthwaite", "kenward-roger"):
        raise DataError(f"test {test!r} analyses Gaussian scores with an LMM; for a binomial design use "
                        f"'wald_z' (a binomial GLMM, as me.glmm fits it) or a paired resampling test "
                        f"({', '.join(RESAMPLING_TESTS)})")
    if m.family == "gaussian" and test == "wald_z":
        raise DataError("test 'wald_z' is the binomial GLMM's Wald z test; for Gaussian scores use 'lrt', "
                        "'satterthwaite' or 'kenward-roger'")
    if test in RESAMPLING_TESTS:
        for what, col in (("system", m.system), ("item", m.item)):
            if col is None or col not in m.data.columns:
                raise DataError(f"the paired test {test!r} needs the {what} column: pass {what}='<column>' "
                                f"(columns: {', '.join(map(str, m.data.columns))})")


# ------------------------------------------------------------------------------------- seeds
def sim_seeds(ss: np.random.SeedSequence, start: int, stop: int) -> list[int]:
    """R ``set.seed`` values of simulations ``start .. stop - 1`` (one child sequence each)."""
    base = dr.stream(ss, 0)
    return [r_seed(dr.stream(base, i)) for i in range(start, stop)]


def resample_state(ss: np.random.SeedSequence, i: int) -> np.random.SeedSequence:
    """The SeedSequence of simulation ``i``'s paired resampling test."""
    return dr.stream(dr.stream(ss, 1), i)


# ------------------------------------------------------------------------------------ setup
def setup(m: Model, effect: Sequence[float], test: str) -> Any:
    """The R state: templates fitted once, the term's coefficients set to ``effect``."""
    r_test = R_TESTS[test][0] if test in R_TESTS else "none"
    return _bridge.power_setup(m.formula, m.data, beta=m.beta, theta=m.theta, sigma=m.sigma, variances=m.variances,
                               family=m.family, term=m.term, effect=effect, test=r_test)


def _pair_codes(m: Model) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Per row: the cell index (system 0 or 1) * n_items + item, and which rows are in the pair."""
    sys = pd.Categorical(m.data[m.system])
    if len(sys.categories) != 2:
        raise DataError(f"the paired resampling tests compare two systems; {m.system!r} has "
                        f"{len(sys.categories)} levels (use an LMM test, or keep two systems)")
    item = pd.Categorical(m.data[m.item])
    n_items = len(item.categories)
    return sys.codes.astype(np.int64), item.codes.astype(np.int64), n_items, 2


def paired_means(Y: np.ndarray, sys_codes: np.ndarray, item_codes: np.ndarray, n_items: int):
    """Per simulation (columns of ``Y``) the per-item means of the second system and of the
    reference (items observed for both systems only): two (n_items', n_sim) arrays."""
    cell = sys_codes * n_items + item_codes
    counts = np.bincount(cell, minlength=2 * n_items).astype(float)
    onehot = np.zeros((2 * n_items, Y.shape[0]))
    onehot[cell, np.arange(Y.shape[0])] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (onehot @ Y) / counts[:, None]
    ref, other = means[:n_items], means[n_items:]
    keep = (counts[:n_items] > 0) & (counts[n_items:] > 0)
    return other[keep], ref[keep]


def _resampling_batch(m: Model, state: Any, test: str, ss: np.random.SeedSequence, start: int, stop: int,
                      n_resamples: int) -> dict[str, np.ndarray]:
    seeds = sim_seeds(ss, start, stop)
    Y = _bridge.power_responses(state, seeds)
    sc, ic, n_items, _ = _pair_codes(m)
    X1, X0 = paired_means(Y, sc, ic, n_items)
    func = RESAMPLING_TESTS[test]
    est, pv = np.empty(len(seeds)), np.empty(len(seeds))
    for j in range(len(seeds)):
        r = func(X1[:, j], X0[:, j], n_resamples=n_resamples, random_state=resample_state(ss, start + j),
                 progress=False)
        est[j], pv[j] = r.statistic, r.p_value
    n = len(seeds)
    return {"r_seed": np.asarray(seeds), "estimate": est, "statistic": est.copy(), "ddf": np.full(n, np.nan),
            "p_value": pv, "singular": np.full(n, None, dtype=object), "problem": np.full(n, "", dtype=object)}


#: in a worker process: the R simulation state of each run (token -> state), set up once per worker
_WORKER_STATES: dict[str, Any] = {}


def _batch(m: Model, state: Any, test: str, ss: np.random.SeedSequence, start: int, stop: int,
           n_resamples: int) -> dict[str, np.ndarray]:
    """Simulations start .. stop - 1 (their seeds come from their indices)."""
    if test in R_TESTS:
        seeds = sim_seeds(ss, start, stop)
        part = _bridge.power_batch(state, seeds)
        part["r_seed"] = np.asarray(seeds)
        return part
    return _resampling_batch(m, state, test, ss, start, stop, n_resamples)


def _batch_task(token: str, start: int, stop: int, shared: tuple) -> dict[str, np.ndarray]:
    """In a worker: one batch, from the state this worker set up for the run ``token``."""
    m, effect, test, ss, n_resamples = shared
    if token not in _WORKER_STATES:
        _WORKER_STATES.clear()  # one run at a time per worker
        _WORKER_STATES[token] = setup(m, effect, test)
    return _batch(m, _WORKER_STATES[token], test, ss, start, stop, n_resamples)


#: bytes per simulation of the simulations table (9 columns, two of them Python objects) and its parts
SIM_ROW_BYTES = 200


def guard(test: str, n_sim: int, workers: int, repeats: int) -> res.LoopGuard:
    """The loop guard of ``n_sim`` simulations (:class:`mixedeval._resources.LoopGuard`); memory is
    checked at once (the per-simulation table), time after the first batch."""
    g = res.LoopGuard(f"power ({test})", n_sim, count=f"n_sim={res.format_count(n_sim)}", unit="simulations",
                      fix="Use a smaller n_sim (the Monte-Carlo SE of a power p is sqrt(p (1 - p) / n_sim): 1,000 "
                          "simulations give +-0.016 at p = 0.8), or raise the limit.",
                      workers=workers, repeats=repeats)
    g.check_memory(SIM_ROW_BYTES)
    return g


def run(m: Model, effect: Sequence[float], test: str, *, n_sim: int, ss: np.random.SeedSequence, batch_size: int,
        n_resamples: int, progress: bool, executor: Any = None,
        repeats: int = 1) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Simulations 0 .. n_sim - 1 in batches: the per-simulation table and the setup's info. With a
    worker ``executor`` (a :class:`mixedeval._executor.Runner`) the batches after the first run on
    its workers. The first batch always runs here and is timed: the whole run (``repeats`` times,
    e.g. the remaining sizes of a power curve) is refused when it would exceed the time limit."""
    workers = executor.n_workers if executor is not None and executor.name != "in-process" else 1
    g = guard(test, n_sim, workers, repeats)
    state = setup(m, effect, test)
    info = _bridge.power_info(state)
    g.start()
    first = min(n_sim, batch_size)
    parts: list[dict[str, np.ndarray]] = [_batch(m, state, test, ss, 0, first, n_resamples)]
    g.block_done(first)
    if executor is not None and executor.name != "in-process":
        token = uuid.uuid4().hex
        tasks = [(token, a, min(n_sim, a + batch_size)) for a in range(first, n_sim, batch_size)]
        parts += executor.map(_batch_task, tasks, shared=(m, tuple(effect), test, ss, n_resamples),
                              progress=progress, desc=f"power ({test})") if tasks else []
        return _simulations_table(parts, test), info
    bar = tqdm(total=n_sim, initial=first, desc=f"power ({test})", unit="sim", leave=False, disable=bar_disabled(progress))
    try:
        for start in range(first, n_sim, batch_size):
            stop = min(n_sim, start + batch_size)
            parts.append(_batch(m, state, test, ss, start, stop, n_resamples))
            bar.update(stop - start)
    finally:
        bar.close()
    return _simulations_table(parts, test), info


def _simulations_table(parts: list[Mapping[str, np.ndarray]], test: str) -> pd.DataFrame:
    stat_col = R_TESTS[test][1] if test in R_TESTS else "statistic"
    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    n = len(cat["p_value"])
    p = cat["p_value"].astype(float)
    return pd.DataFrame({
        "sim": np.arange(n), "r_seed": cat["r_seed"].astype(np.int64), "estimate": cat["estimate"],
        stat_col: cat["statistic"], "den_df": cat["ddf"], "p_value": p,
        "singular": pd.array([None if v is None else bool(v) for v in cat["singular"]], dtype="boolean"),
        "failed": ~np.isfinite(p), "problem": [str(v) for v in cat["problem"]],
    })
