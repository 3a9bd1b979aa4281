"""Simulations of a fitted mixed model for the diagnostics, in blocks, here or on an ``executor``.

**Block scheme** (recorded as ``provenance["simulation_block_seeds"]``, one ``[size, R seed]`` per block):
the ``n_sim`` simulations are drawn in blocks of :data:`SIM_BLOCK` = 250 (DHARMa's default
``n_sim``), in column order.

* Block 0 (the first ``min(n_sim, 250)`` columns) is ``simulate(m, nsim = <its size>, seed = s)``,
  ``s`` being the R seed of ``random_state`` (:func:`mixedeval._random.r_seed`; an int is kept as it
  is). For ``n_sim <= 250`` the matrix is therefore R's ``simulate(m, nsim = n_sim, seed = s)``.
* Block ``b >= 1`` is ``simulate(m, nsim = <its size>, seed = s_b)`` with
  ``s_b = r_seed(numpy.random.SeedSequence(s, spawn_key=(b,)))``, i.e.
  ``SeedSequence(s, spawn_key=(b,)).generate_state(1, numpy.uint32)[0] % (2**31 - 1)``.

A block's seed depends on ``(s, b)`` only, never on where or in which order blocks run, so the
matrix is the same in this process, in worker processes or on Dask, with any number of workers.

**Where blocks run.** In this process (``executor=None``, or a single block: with ``n_sim <= 250``
there is nothing to spread) the fit simulates its blocks itself. Otherwise every block is a task of
the executor (:mod:`mixedeval._executor`): each worker rebuilds the R model once per call from the
fit's formula (checked by the allow-list parser), model frame and options -- ``lmerTest::lmer``
with the same REML flag and optimizer, or ``lme4::glmer`` / ``glmer.nb`` / ``glmmTMB`` with the
same family, link, nAGQ, optimizer and weights -- cached by a token, and simulates through
:func:`mixedeval.engine._bridge.simulate` / :func:`~mixedeval.engine._bridge.simulate_glmm`. The
rebuilt model is the same fit (same code, same data): on one machine the simulations agree with
this process's to the last bit; across machines like any two optimizer runs (about 1e-8 in the
parameters). ``calc.derivs`` is off on the workers: lme4 computes the derivatives after the
optimizer stops, for the convergence checks only, so the estimates do not change.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _resources as res
from .._executor import resolve_executor
from .._random import r_seed
from ..data._formula import parse_formula
from ..engine import _bridge
from ..errors import DataError, FormulaError

#: simulations per block (DHARMa's default n_sim)
SIM_BLOCK = 250
#: lme4 optimizers of glmer (a glmmTMB fit records "nlminb" and ignores the name)
#: in a worker: the model rebuilt for one diagnose call (token -> model), made once per worker
_WORKER_MODELS: dict[str, Any] = {}


def block_plan(state: int, n_sim: int) -> list[tuple[int, int]]:
    """``(size, R seed)`` of every block of ``n_sim`` simulations from R seed ``state`` (module docstring)."""
    plan = []
    for b, start in enumerate(range(0, int(n_sim), SIM_BLOCK)):
        size = min(SIM_BLOCK, int(n_sim) - start)
        seed = int(state) if b == 0 else r_seed(np.random.SeedSequence(int(state), spawn_key=(b,)))
        plan.append((size, seed))
    return plan


def plan_record(plan: list[tuple[int, int]]) -> list[list[int]]:
    """The block scheme as provenance records it: ``[[size, R seed], ...]``."""
    return [[int(n), int(s)] for n, s in plan]


@dataclass(frozen=True)
class _Spec:
    """What a worker needs to rebuild the R model: ``kind`` ("lmm" or "glmm"), the R formula text,
    the model frame, the number of observations and the fitting options."""

    kind: str
    r_formula: str
    data: Any = field(repr=False)
    nobs: int
    options: dict[str, Any]


@dataclass(frozen=True)
class _Model:
    """A rebuilt R model in the shape the bridge's simulate wrappers read (``nobs`` and the R object)."""

    nobs: int
    _model: Any = field(repr=False)


def _r_formula(fit: Any) -> str:
    try:
        return parse_formula(fit.formula, [str(c) for c in fit.data.columns]).r_formula
    except FormulaError as exc:
        raise DataError(f"executor= rebuilds the model on the workers from its formula, which must pass mixedeval's "
                        f"formula allow-list ({exc}); fits made with allow_r_code=True simulate in this process: "
                        "use executor=None") from None


def worker_spec(fit: Any, kind: str) -> _Spec:
    """The rebuild spec of ``fit`` (an LMMFit for ``kind="lmm"``, a GLMMFit for ``"glmm"``)."""
    needed = ("formula", "data", "nobs", "optimizer") + (("reml",) if kind == "lmm" else ("family", "link", "nagq"))
    missing = [a for a in needed if not hasattr(fit, a)]
    if missing or not hasattr(getattr(fit, "data", None), "columns"):
        raise DataError(f"executor= needs a fit from mixedeval.lmm() or mixedeval.glmm() (the workers rebuild it from "
                        f"its formula, data and options); this {type(fit).__name__} lacks {missing or ['data']}: "
                        "use executor=None")
    if kind == "lmm":
        options = {"reml": bool(fit.reml), "optimizer": str(fit.optimizer)}
    else:
        weights = getattr(fit, "weights", None)
        options = {"family": fit.family, "link": None if fit.family == "negative_binomial" else fit.link,
                   "nagq": int(fit.nagq),
                   "optimizer": str(fit.optimizer),  # mixedeval's name ("bobyqa+Nelder_Mead"; glmmTMB: nlminb)
                   "weights": None if weights is None else np.asarray(weights, dtype=float)}
    return _Spec(kind=kind, r_formula=_r_formula(fit), data=fit.data, nobs=int(fit.nobs), options=options)


def _rebuild(spec: _Spec) -> _Model:
    """In a worker: the R model of ``spec``, fitted as :func:`mixedeval.lmm` / :func:`mixedeval.glmm` fit it."""
    o = spec.options
    if spec.kind == "lmm":
        res = _bridge.fit_and_summarise(spec.r_formula, spec.data, reml=o["reml"], optimizer=o["optimizer"],
                                        ddf="asymptotic", level=0.95, calc_derivs=False)
    else:
        res = _bridge.glmm_fit_and_summarise(spec.r_formula, spec.data, family=o["family"], link=o["link"],
                                             nagq=o["nagq"], optimizer=o["optimizer"], weights=o["weights"],
                                             level=0.95, calc_derivs=False)
    return _Model(nobs=spec.nobs, _model=res.value["model"])


def _block_task(token: str, size: int, seed: int, conditional: bool, spec: _Spec) -> np.ndarray:
    """In a worker: one block of simulations (nobs x size) from the model of ``spec`` (rebuilt once per token)."""
    model = _WORKER_MODELS.get(token)
    if model is None:
        model = _rebuild(spec)
        _WORKER_MODELS.clear()
        _WORKER_MODELS[token] = model
    if spec.kind == "lmm":
        return _bridge.simulate(model, n_sim=size, r_seed=seed, conditional=conditional)
    return _bridge.simulate_glmm(model, n_sim=size, r_seed=seed, conditional=conditional)["simulated"]


#: bytes per simulated value at the peak of a diagnosis: the blocks, their concatenation and the
#: working copies of the PIT residuals and the tests (float64 each)
SIM_VALUE_BYTES = 32


def guard(n_obs: int, n_sim: int, runner: Any) -> res.LoopGuard:
    """The loop guard of a diagnosis (:class:`mixedeval._resources.LoopGuard`): memory (n_obs x n_sim
    values) is checked at once, before any block is drawn; time after block 0."""
    workers = runner.n_workers if runner.name != "in-process" else 1
    g = res.LoopGuard("the simulated-residual diagnostics", n_sim, count=f"n_sim={res.format_count(n_sim)}",
                      unit="simulations", workers=workers,
                      fix="Use a smaller n_sim (250, DHARMa's default, is enough for the tests; 1,000 for smoother "
                          "plots), or raise the limit.")
    g.check_matrix(n_obs, SIM_VALUE_BYTES // 8, "simulations")
    return g


def _blocks(draw: Any, fit: Any, kind: str, plan: list, conditional: bool, runner: Any,
            g: res.LoopGuard) -> np.ndarray:
    """Every block, here (``draw(size, seed)``) or on the runner's workers, concatenated in column
    order. Block 0 is drawn first and timed by ``g`` (on the workers it includes their rebuilding
    the model, so the estimate errs on the long side)."""
    g.start()
    if runner.name == "in-process":
        blocks = [draw(*plan[0])]
        g.block_done(plan[0][0])
        blocks += [draw(size, seed) for size, seed in plan[1:]]
    else:
        token = uuid.uuid4().hex
        tasks = [(token, size, seed, bool(conditional)) for size, seed in plan]
        blocks = g.map(runner, _block_task, tasks, first_units=plan[0][0], shared=worker_spec(fit, kind),
                       desc="simulations")
    return np.concatenate(blocks, axis=1)


def simulate_lmm(fit: Any, n_sim: int, state: int, re: str, executor: Any = None) -> tuple[np.ndarray, list]:
    """The (nobs, n_sim) simulations of an LMM by the block scheme, and the plan.

    In this process each block is ``fit.simulate(size, random_state=seed, re=re)`` (any object with
    the LMMFit interface); on an executor's workers see the module docstring. Block 0 times the
    loop for the guard (:func:`guard`)."""
    runner = resolve_executor(executor)
    n_obs = getattr(fit, "nobs", None)
    g = guard(int(n_obs if n_obs is not None else len(fit.response_values())), int(n_sim), runner)
    plan = block_plan(state, n_sim)

    def draw(size: int, seed: int) -> np.ndarray:
        return np.asarray(fit.simulate(size, random_state=seed, re=re), dtype=float)

    return _blocks(draw, fit, "lmm", plan, re == "conditional", runner, g), plan


def simulate_glmm(fit: Any, n_sim: int, state: int, conditional: bool, executor: Any = None) -> tuple[dict, list]:
    """:func:`mixedeval.engine._bridge.simulate_glmm`'s dict for ``n_sim`` simulations by the block
    scheme, and the plan. ``observed``, ``predicted``, ``trials`` and ``family`` always come from
    ``fit`` itself (``me_glmm_observed``)."""
    runner = resolve_executor(executor)
    g = guard(int(fit.nobs), int(n_sim), runner)
    plan = block_plan(state, n_sim)

    def draw(size: int, seed: int) -> np.ndarray:
        return _bridge.simulate_glmm(fit, n_sim=size, r_seed=seed, conditional=conditional)["simulated"]

    sims = _blocks(draw, fit, "glmm", plan, conditional, runner, g)
    return {**_bridge.glmm_observed(fit), "simulated": sims}, plan
