"""The unit bootstrap of a Bradley-Terry fit: prompts (and optionally judges) resampled, never rows.

The battle counts are aggregated once per unit (:class:`mixedeval.inference._bt_design.BTDesign`:
a sparse units x (3 cells) matrix). A block of 64 replicates draws multinomial unit weights
(64 x units; each row sums to the number of units: a bootstrap sample of the units), forms the
replicates' cell counts with one sparse product, multiplies the cells of each judge by that
judge's weight when judges are resampled too (a two-way bootstrap: prompts and judges drawn
independently, a battle weighted by the product), and fits all 64 replicates at once with the
vectorized Newton iteration of :mod:`mixedeval.inference._bt_numpy`, started at the full-data
estimate. Blocks draw from their own random streams (:mod:`mixedeval.resampling._draws`), so the replicates are
identical whatever the ``executor`` and the number of workers.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _resources as res
from ..inference import _bt_numpy
from ..inference._bt_design import BTDesign
from ..resampling import _draws as dr

#: budget for the cell-count temporaries of one Newton batch (replicates fitted together)
_BATCH_BYTES = 64 * 2**20


def _batch(d: BTDesign) -> int:
    """Replicates fitted together, so that (replicates x cells x parameters) temporaries stay bounded."""
    per = 8.0 * len(d.a) * (3 + 2 * max(d.n_params - d.k + 1, 1)) + 8.0 * (d.k ** 2 + d.n_params ** 2)
    return int(max(1, min(dr.BLOCK, _BATCH_BYTES // max(per, 1.0))))


def _one_block(d: BTDesign, theta_hat: np.ndarray, resample_judges: bool):
    """The closure computing one block: (BLOCK, p + 1) rows of estimates and a converged flag."""
    units_t = d.units.T.tocsr()
    n_units, n_judges = d.n_units, len(d.judges)
    rows = _batch(d)

    def one_block(rng: np.random.Generator, b0: int, r: int) -> np.ndarray:
        w = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=dr.BLOCK).astype(float)
        wj = rng.multinomial(n_judges, np.full(n_judges, 1.0 / n_judges), size=dr.BLOCK).astype(float) \
            if resample_judges else None
        out = np.empty((dr.BLOCK, d.n_params + 1))
        for s in range(0, dr.BLOCK, rows):
            e = min(dr.BLOCK, s + rows)
            counts = np.asarray(units_t @ w[s:e].T).T.reshape(e - s, len(d.a), 3)
            if wj is not None:
                counts *= wj[s:e][:, d.judge][:, :, None]
            f = _bt_numpy.fit(d, counts, np.repeat(theta_hat[None], e - s, axis=0))
            out[s:e, :-1] = f.theta
            out[s:e, -1] = f.converged
        return out

    return one_block


def check_memory(d: BTDesign, n_resamples: int) -> None:
    """DataError before anything is drawn when the replicates (n_resamples x parameters) and
    one block's temporaries exceed mixedeval's memory limit (e.g. n_resamples=1e12)."""
    kept = 8.0 * n_resamples * (d.n_params + 1 + d.k)
    block = 8.0 * (dr.BLOCK * d.n_units + _batch(d) * 3 * len(d.a)) + _BATCH_BYTES
    res.check_memory(kept + block, "the Bradley-Terry bootstrap's replicates",
                     "lower n_resamples (1,000 to 10,000 replicates are plenty for 95% percentile intervals)",
                     detail=(f"n_resamples={res.format_count(n_resamples)} x {d.n_params + 1 + d.k} values x 8 bytes "
                             f"= {res.format_bytes(kept)} kept, plus {res.format_bytes(block)} per block"))


def bt_bootstrap(d: BTDesign, theta_hat: np.ndarray, *, n_resamples: int, ss: np.random.SeedSequence,
                 resample_judges: bool, executor: Any = None, progress: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Replicates of the parameter vector (n_resamples, p) and their convergence flags."""
    check_memory(d, n_resamples)
    out = np.empty((n_resamples, d.n_params + 1))
    work = float(n_resamples) * 10 * (d.units.nnz + len(d.a) * d.n_params + d.n_params ** 3)
    dr.run_blocks(out, ss, _one_block(d, np.asarray(theta_hat, dtype=float), resample_judges), chunk_size=None,
                  progress=progress, work=work, desc="Bradley-Terry bootstrap", executor=executor)
    return out[:, :-1], out[:, -1].astype(bool)
