"""Issue 42, item 7: the same parametric-bootstrap p on every executor, whichever worker refits
which replicate.

The defect, reproduced here first: on the Kreutzer annotation data (Marking mode),
``score ~ 1 + (1|sentence)`` against ``+ (1|rater)``, 40 replicates, ``random_state=1``: about
half of the bootstrap refits put the rater variance at 0, and their likelihood-ratio statistics
are 0 up to +-1e-10. Refitted in another process, the same replicates differ in their last bits
(4e-11), and the sign of one of those zeros flipped: pbkrtest counts ``ref > 0`` (the denominator
of its p-value), so ``executor=2`` gave p = 1/23 and the in-process call 1/22. Statistics within
rounding of 0 now count as 0 (:func:`mixedeval.inference.compare.boundary_zero`); the p-value is
pbkrtest's ``PBmodcomp(large, small, ref = ref)`` on those statistics, checked in R itself.
"""
from __future__ import annotations

import random
import time

import numpy as np
import pytest

import mixedeval as me
from mixedeval._executor import Runner
from mixedeval.engine import _bridge
from mixedeval.inference import compare as compare_mod

from conftest import assert_rel

SMALL = "score ~ 1 + (1|sentence)"
LARGE = "score ~ 1 + (1|sentence) + (1|rater)"
NSIM, SEED = 40, 1


@pytest.fixture(scope="module")
def marking(annotation):
    d = annotation[annotation["mode"] == "Marking"].reset_index(drop=True)
    return me.lmm(SMALL, data=d), me.lmm(LARGE, data=d)


def _p(fits, executor=None):
    r = me.compare(*fits, n_resamples=NSIM, random_state=SEED, progress=False, executor=executor)
    return r.table["p_value_pb"].iloc[1], r


class _ShuffledSlowRunner(Runner):
    """Runs the refit tasks in this process in a random order, each after a random delay, and
    now and then forgets the unserialized models (as a fresh worker would): which "worker" refits
    which replicate, and after which others, changes with the seed."""

    name = "shuffled"
    n_workers = 3

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def map(self, fn, tasks, *, shared=None, progress=False, desc=""):
        order = list(range(len(tasks)))
        self.rng.shuffle(order)
        out = [None] * len(tasks)
        for i in order:
            time.sleep(self.rng.random() * 0.02)
            if self.rng.random() < 0.5:
                compare_mod._WORKER_FITS.clear()
            out[i] = fn(*tasks[i]) if shared is None else fn(*tasks[i], shared)
        return out


def test_the_boundary_zeros_decided_p(marking):
    """The replicates with the rater variance at 0 have statistics of either sign near 0: the
    p-value counted their signs before the fix."""
    state = _bridge.pb_setup(marking[1], marking[0], n_resamples=NSIM, r_seed=SEED)
    ref = np.asarray(_bridge.pb_chunk(state, 1, NSIM).value, dtype=float)
    tiny = np.abs(ref) < 1e-8
    assert tiny.sum() >= 10 and (ref[tiny] > 0).any() and (ref[tiny] < 0).any()
    snapped = compare_mod.boundary_zero(ref, marking[1].loglik)
    assert np.all(snapped[tiny] == 0) and np.array_equal(snapped[~tiny], ref[~tiny])
    # flipping the sign of every near-zero statistic (what another process's last bits do)
    # changes pbkrtest's raw count, not the snapped one
    flipped = ref.copy()
    flipped[tiny] = -flipped[tiny]
    assert (flipped > 0).sum() != (ref > 0).sum()
    assert np.array_equal(compare_mod.boundary_zero(flipped, marking[1].loglik), snapped)


def test_the_same_p_in_process_on_workers_and_in_any_order(marking):
    p0, r0 = _p(marking)
    p2, r2 = _p(marking, executor=2)
    assert p2 == p0
    assert r2.pb["n_positive"].iloc[0] == r0.pb["n_positive"].iloc[0]
    for seed in range(3):
        ps, _ = _p(marking, executor=_ShuffledSlowRunner(seed))
        assert ps == p0


def test_p_equals_pbmodcomp_on_rs_own_replicates(R, marking):
    """R's own ``set.seed(1); PBrefdist(...)`` with the same rule for zeros, then
    ``PBmodcomp(large, small, ref = ref)``: the same p-value and tables."""
    p0, r0 = _p(marking)
    tol = compare_mod.BOUNDARY_ATOL + compare_mod.BOUNDARY_RTOL * abs(2 * marking[1].loglik)
    R(f"""
    pbm_d <- droplevels(ann_df[ann_df$mode == "Marking", ])
    pbm_s <- lmerTest::lmer({SMALL}, data = pbm_d, REML = FALSE)
    pbm_l <- lmerTest::lmer({LARGE}, data = pbm_d, REML = FALSE)
    set.seed({SEED}); pbm_ref <- pbkrtest::PBrefdist(pbm_l, pbm_s, nsim = {NSIM})
    pbm_ref[abs(pbm_ref) < {tol!r}] <- 0
    pbm_t <- summary(pbkrtest::PBmodcomp(pbm_l, pbm_s, ref = pbm_ref))$test
    """)
    assert p0 == pytest.approx(R('pbm_t["PBtest", "p.value"]')[0], rel=1e-12)
    assert int(r0.pb["n_positive"].iloc[0]) == int(R("sum(pbm_ref > 0)")[0])
    # the moment-based rows read the same positive statistics (optimizer runs: 1e-6 relative)
    for test in ("Gamma", "Bartlett"):
        row = r0.pb[r0.pb["test"] == test].iloc[0]
        assert_rel(row["p_value"], R(f'pbm_t["{test}", "p.value"]')[0], rtol=1e-5)
