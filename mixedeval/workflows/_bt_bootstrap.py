"""The unit bootstrap of a Bradley-Terry fit: prompts (and optionally judges) resampled, never rows.

The battle counts are aggregated once per unit (:class:`mixedeval.inference._bt_design.BTDesign`:
a sparse units x (3 cells) matrix). A block of 64 replicates draws unit weights
(64 x units: how often each unit occurs among n_units units drawn with replacement, i.e. a
multinomial count vector), forms the
replicates' cell counts with one sparse product, multiplies the cells of each judge by that
judge's weight when judges are resampled too (a two-way bootstrap: prompts and judges drawn
independently, a battle weighted by the product), and fits all 64 replicates at once
(:mod:`mixedeval.inference._bt_numpy`), started at the full-data estimate: by the chord iteration
(Newton's step with the full data's information, inverted once for the whole bootstrap,
accelerated by Anderson mixing; each step one score of all replicates, laid out cells x
replicates) and, for the replicates it hands on (a model or judge without battles, a model that
won or lost all its battles, an iteration that does not settle), by the vectorized Newton
iteration with step halving. Both stop at the replicate's maximum (within about 1e-9; the tests
refit replicates from their resampled counts). Blocks draw from their own random streams
(:mod:`mixedeval.resampling._draws`), so the replicates are identical whatever the ``executor``
and the number of workers.

Guards (:mod:`mixedeval._resources`): before anything is drawn, the memory of everything the
replicates become (the parameter replicates, the strengths and Elo ratings mapped from them, the
percentile copies, the rank intervals' pairwise differences) is checked against the memory
limit; the first block is run alone and timed, and the whole run refused when its extrapolation
(over the executor's workers) exceeds the time limit (``set_time_limit``, ``MIXEDEVAL_TIME_LIMIT``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _resources as res
from .._executor import resolve_executor
from ..inference import _bt_numpy
from ..inference._bt_design import BTDesign
from ..resampling import _draws as dr

#: Newton's stopping step for a replicate: the estimate is then within about 1e-10 of the
#: replicate's maximum (quadratic convergence), far below the intervals' Monte-Carlo error
BOOT_TOL = 1e-5
#: the chord iteration's stopping step (it converges linearly: the estimate is then within a few
#: times 1e-9 of the replicate's maximum, as close as the intervals need and the tests check)
CHORD_TOL = 1e-9
#: budget for the chord iteration's (cells x replicates) arrays
_CHORD_BYTES = 128 * 2**20
#: budget for the cell-count temporaries of one Newton batch (replicates fitted together)
_BATCH_BYTES = 64 * 2**20


def _batch(d: BTDesign) -> int:
    """Replicates fitted together, so that (replicates x cells x parameters) temporaries stay bounded."""
    per = 8.0 * len(d.a) * (3 + 2 * max(d.n_params - d.k + 1, 1)) + 8.0 * (d.k ** 2 + d.n_params ** 2)
    return int(max(1, min(dr.BLOCK, _BATCH_BYTES // max(per, 1.0))))


def _start_inverse(d: BTDesign, theta_hat: np.ndarray) -> np.ndarray | None:
    """The inverse of the full data's information at its estimate (the chord iteration's fixed
    matrix), None when the information is not finite and positive definite (then every replicate
    is fitted by Newton's method)."""
    if not np.isfinite(theta_hat).all():
        return None
    info = _bt_numpy._score_info(_bt_numpy._Ops(d), d.counts[None], theta_hat[None], d.ties)[2][0]
    if not np.isfinite(info).all():
        return None
    try:
        low = np.linalg.cholesky(info)
    except np.linalg.LinAlgError:
        return None
    inv_low = np.linalg.inv(low)
    return inv_low.T @ inv_low


def _chord_batch(d: BTDesign) -> int:
    """Replicates fitted together by the chord iteration: their cell counts and the score's
    (cells x replicates) arrays (about nine per replicate) within :data:`_CHORD_BYTES`."""
    return int(max(1, min(dr.BLOCK, _CHORD_BYTES // max(72.0 * len(d.a), 1.0))))


def _cluster_units(d: BTDesign, cluster: tuple[str, ...] | None):
    """(units x 3 cells matrix, parents): the units resampled -- the design's (prompts or rows),
    the raw judges' ("judge",) or the (prompt, judge) intersections (("judge", "prompt"): each
    weighted by the product of its prompt's and its judge's draws; parents = their indices)."""
    if cluster is None or cluster == ("prompt",):
        return d.units, None
    if cluster == ("judge",):
        return d.clusters["judge"], None
    return d.clusters["prompt:judge"], d.cluster_parents


def _one_block(d: BTDesign, theta_hat: np.ndarray, resample_judges: bool, cluster: tuple[str, ...] | None = None):
    """The closure computing one block: (BLOCK, p + 1) rows of estimates and a converged flag."""
    units, parents = _cluster_units(d, cluster)
    units_t = units.T.tocsr()
    # whole counts below 2**24 sum exactly in float32, whose product reads half the memory (0.09 s
    # instead of 0.21 s per block of 64 at 1,000,000 battles on 50,000 prompts)
    exact32 = bool(np.all(units_t.data == np.round(units_t.data)) and units_t.data.sum() < 2**24)
    if exact32:
        units_t = units_t.astype(np.float32)
    n_units, n_judges = units.shape[0], len(d.judges)
    theta_hat = np.asarray(theta_hat, dtype=float)
    inv0 = _start_inverse(d, theta_hat)
    cells = _bt_numpy.CellDesign(d) if inv0 is not None else None
    rows = _chord_batch(d) if cells is not None else _batch(d)
    newton_rows = _batch(d)

    def _newton(counts: np.ndarray, todo: np.ndarray, theta: np.ndarray, conv: np.ndarray) -> None:
        """Newton's method for the replicates ``todo`` of counts (C, 3, B), from the full-data
        estimate, in batches of :func:`_batch` replicates."""
        for s in range(0, len(todo), newton_rows):
            part = todo[s:s + newton_rows]
            f = _bt_numpy.fit(d, counts[:, :, part].transpose(2, 0, 1), np.repeat(theta_hat[None], len(part), axis=0),
                              tol=BOOT_TOL)
            theta[part], conv[part] = f.theta, f.converged

    def _fit(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Estimates (B, p) and convergence flags of the count tables (C, 3, B): the chord
        iteration, then Newton's method for the replicates it hands on."""
        nb = counts.shape[2]
        if cells is None:
            theta, conv = np.empty((nb, d.n_params)), np.zeros(nb, dtype=bool)
        else:
            theta, conv = _bt_numpy.chord_fit(cells, counts, theta_hat, inv0, CHORD_TOL)
        _newton(counts, np.flatnonzero(~conv), theta, conv)
        return theta, conv

    def one_block(rng: np.random.Generator, b0: int, r: int) -> np.ndarray:
        with _bt_numpy.one_blas_thread():
            return _block(rng)

    def _block(rng: np.random.Generator) -> np.ndarray:
        if parents is None:
            w = dr.resample_counts(rng, n_units, dr.BLOCK)  # n_units units drawn with replacement, counted
        else:  # two-way: prompts and judges drawn independently, a battle weighted by the product
            wp = dr.resample_counts(rng, d.clusters["prompt"].shape[0], dr.BLOCK)
            wjr = dr.resample_counts(rng, d.clusters["judge"].shape[0], dr.BLOCK)
            w = wp[:, parents[0]] * wjr[:, parents[1]]
        wj = dr.resample_counts(rng, n_judges, dr.BLOCK) if resample_judges else None
        out = np.empty((dr.BLOCK, d.n_params + 1))
        for s in range(0, dr.BLOCK, rows):
            e = min(dr.BLOCK, s + rows)
            ws = w[s:e].T.astype(np.float32) if exact32 else w[s:e].T
            counts = np.asarray(units_t @ ws, dtype=float).reshape(len(d.a), 3, e - s)
            if wj is not None:
                counts *= wj[s:e][:, d.judge].T[:, None, :]
            out[s:e, :-1], out[s:e, -1] = _fit(counts)
        return out

    return one_block


def replicate_bytes(d: BTDesign, n_resamples: int, ranks: bool) -> float:
    """Peak bytes of what ``n_resamples`` replicates become: the parameter replicates (p + 1
    columns), the strengths and Elo centre-differences mapped from them with the percentiles'
    sorted copies (about 4 k columns at once), and with ``ranks`` the rank intervals' pairwise
    differences of the strengths (k (k - 1) / 2 columns, twice)."""
    per = d.n_params + 1 + 4 * d.k + (d.k * (d.k - 1) if ranks else 0)
    return 8.0 * n_resamples * per


def check_memory(d: BTDesign, n_resamples: int, ranks: bool = True) -> None:
    """DataError before anything is drawn when all that the replicates become
    (:func:`replicate_bytes`) and one block's temporaries exceed mixedeval's memory limit."""
    kept = replicate_bytes(d, n_resamples, ranks)
    block = 8.0 * dr.BLOCK * d.n_units + 72.0 * len(d.a) * _chord_batch(d) + _BATCH_BYTES
    res.check_memory(kept + block, "the Bradley-Terry bootstrap's replicates",
                     "lower n_resamples (1,000 to 10,000 replicates are plenty for 95% percentile intervals)"
                     + (", or pass ranks=False" if ranks else ""),
                     detail=(f"n_resamples={res.format_count(n_resamples)} x {res.format_bytes(kept / n_resamples)} "
                             f"per replicate (parameters, strengths, Elo, percentiles"
                             f"{', rank intervals' if ranks else ''}) = {res.format_bytes(kept)}, plus "
                             f"{res.format_bytes(block)} per block"))


def bt_bootstrap(d: BTDesign, theta_hat: np.ndarray, *, n_resamples: int, ss: np.random.SeedSequence,
                 resample_judges: bool, executor: Any = None, progress: bool | None = None,
                 ranks: bool = True, cluster: tuple[str, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Replicates of the parameter vector (n_resamples, p) and their convergence flags;
    ``cluster``: the units resampled (:func:`_cluster_units`; None: the design's)."""
    check_memory(d, n_resamples, ranks)
    runner = resolve_executor(executor)
    out = np.empty((n_resamples, d.n_params + 1))
    work = float(n_resamples) * 10 * (d.units.nnz + len(d.a) * d.n_params + d.n_params ** 3)
    one = _one_block(d, np.asarray(theta_hat, dtype=float), resample_judges, cluster)
    guard = res.LoopGuard("the Bradley-Terry bootstrap", n_resamples,
                          count=f"n_resamples={res.format_count(n_resamples)}",
                          unit="replicates", workers=runner.n_workers,
                          fix="Lower n_resamples (1,000 replicates give 95% percentile intervals), pass an executor, "
                              "or raise the limit.")
    r0 = min(dr.BLOCK, n_resamples)
    first = one(dr.block_generator(ss, 0), 0, r0)  # run alone and timed: the guard judges it
    guard.block_done(r0)

    def one_block(rng: np.random.Generator, b0: int, r: int) -> np.ndarray:
        return first if b0 == 0 else one(rng, b0, r)

    dr.run_blocks(out, ss, one_block, chunk_size=None, progress=progress, work=work, desc="Bradley-Terry bootstrap",
                  executor=runner)
    return out[:, :-1], out[:, -1].astype(bool)
