"""Issue 15: ``executor`` for the diagnostics simulations and for the parametric bootstrap of GLMMs.

* the block scheme of the diagnostics simulations against R itself: block 0 is R's
  ``simulate(m, nsim = 250, seed = s)``, block 1 R's ``simulate(m, nsim = 50, seed = s_1)`` with
  ``s_1`` computed here from the documented rule (``SeedSequence(s, spawn_key=(1,))``), and the
  diagnostics equal :func:`from_simulations` on R's matrices (the numpy part is unchanged);
* the whole :class:`Diagnostics` (simulations, residuals, tests, checks, provenance) of an LMM
  (sleepstudy, random slopes) and of a binomial GLMM (lme4's cbpp) in process, in two worker
  processes and on a Dask ``LocalCluster``;
* ``me.compare`` of two cbpp glmer fits with ``n_resamples=20``: the same tables on every
  executor, ``p_value_pb`` and the bootstrap statistics equal to
  ``set.seed(s); pbkrtest::PBmodcomp(m1, m0, nsim = 20)`` run in R on the same data.

Simulations and statistics from R fits rebuilt on a worker are the same fit's (same code, same
data) and agree here to the last bit, but two optimizer runs are never required to be
bit-identical (another CPU or BLAS on a worker moves last digits): they are compared at
OPTIMIZER_RTOL. Comparisons with R's own ``simulate()`` of the model fitted in the test keep 1e-8.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
import mixedeval.diagnostics as md
from conftest import OPTIMIZER_RTOL, assert_rel
from mixedeval.diagnostics import from_simulations
from mixedeval.engine import _bridge
from mixedeval.inference.compare import _pb_statistics

distributed = pytest.importorskip("distributed")

LMM_FORMULA = "Reaction ~ Days + (Days|Subject)"
GLMM_FORMULA = "cbind(incidence, size - incidence) ~ period + (1|herd)"
GLMM_NULL = "cbind(incidence, size - incidence) ~ 1 + (1|herd)"
R_SEED_MAX = 2**31 - 1


def block_seed(s: int, b: int) -> int:
    """The documented R seed of block b >= 1, computed here from numpy alone."""
    return int(np.random.SeedSequence(s, spawn_key=(b,)).generate_state(1, dtype=np.uint32)[0] % R_SEED_MAX)


def r_frame(name: str) -> pd.DataFrame:
    """The R data.frame ``name`` as pandas (factors as strings, in the test only)."""
    import rpy2.robjects as ro
    from rpy2.robjects import conversion, pandas2ri

    ro.r(f"..tmp <- as.data.frame(lapply({name}, function(x) if (is.factor(x)) as.character(x) else x))")
    with conversion.localconverter(ro.default_converter + pandas2ri.converter):
        df = conversion.get_conversion().rpy2py(ro.r("..tmp"))
    return df.reset_index(drop=True)


def radix_factors(R, name: str, cols: list[str]) -> None:
    """Factor levels sorted by code point in R too (mixedeval's order for string columns)."""
    for c in cols:
        R(f'{name}${c} <- factor(as.character({name}${c}), levels = sort(unique(as.character({name}${c})), '
          'method = "radix"))')


@pytest.fixture(scope="module")
def dask_client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


def executor_for(kind: str, client):
    return 2 if kind == "processes" else client


@pytest.fixture(scope="module")
def sleep_fit(R):
    R("xd_ss <- as.data.frame(lme4::sleepstudy)")
    radix_factors(R, "xd_ss", ["Subject"])
    R(f"xd_m_ss <- lmerTest::lmer({LMM_FORMULA}, data = xd_ss)")
    return me.lmm(LMM_FORMULA, r_frame("xd_ss"))


@pytest.fixture(scope="module")
def cbpp_fits(R):
    R('xd_cb <- as.data.frame(lme4::cbpp)')
    radix_factors(R, "xd_cb", ["herd", "period"])
    R("xd_ctl <- lme4::glmerControl();"
      f"xd_g0 <- lme4::glmer({GLMM_NULL}, data = xd_cb, family = binomial, control = xd_ctl);"
      f"xd_g1 <- lme4::glmer({GLMM_FORMULA}, data = xd_cb, family = binomial, control = xd_ctl)")
    df = r_frame("xd_cb")
    return me.glmm(GLMM_NULL, df), me.glmm(GLMM_FORMULA, df)


def same_diagnostics(a, b) -> None:
    """Equal diagnostics of simulations from two runs of the same fit (see the module docstring)."""
    np.testing.assert_allclose(a.simulated, b.simulated, rtol=OPTIMIZER_RTOL)
    np.testing.assert_allclose(a.residuals, b.residuals, rtol=OPTIMIZER_RTOL)
    np.testing.assert_allclose(a.observed, b.observed, rtol=OPTIMIZER_RTOL)
    np.testing.assert_allclose(a.predicted, b.predicted, rtol=OPTIMIZER_RTOL)
    for name in ("tests", "checks", "group_tests"):
        ta, tb = getattr(a, name), getattr(b, name)
        assert (ta is None) == (tb is None)
        if ta is not None:
            pd.testing.assert_frame_equal(ta, tb, check_exact=False, rtol=OPTIMIZER_RTOL, atol=0.0)
    assert a.random_state == b.random_state and a.n_sim == b.n_sim
    assert a.provenance == b.provenance  # the block seeds included


# ------------------------------------------------------------------ block scheme against R
def test_lmm_blocks_are_rs_simulate_with_documented_seeds(R, sleep_fit):
    d = sleep_fit.diagnose(n_sim=300, random_state=11)
    s1 = block_seed(11, 1)
    assert d.provenance["simulation_block_seeds"] == [[250, 11], [50, s1]]
    block0 = R("as.matrix(simulate(xd_m_ss, nsim = 250, seed = 11, re.form = NA))")
    block1 = R(f"as.matrix(simulate(xd_m_ss, nsim = 50, seed = {s1}, re.form = NA))")
    assert d.simulated.shape == (180, 300)
    assert_rel(d.simulated[:, :250], block0)
    assert_rel(d.simulated[:, 250:], block1)
    # the numpy part is unchanged: the diagnostics of R's two blocks, with the same random_state
    ref = from_simulations(np.hstack([block0, block1]), R("xd_ss$Reaction"),
                           R("unname(predict(xd_m_ss, re.form = NA))"), integer_response=False, random_state=11)
    np.testing.assert_allclose(d.residuals, ref.residuals, rtol=1e-8)
    pd.testing.assert_frame_equal(d.tests, ref.tests, check_exact=False, rtol=1e-8)
    # n_sim <= 250: one block, R's simulate(m, nsim = n_sim, seed = s) as before
    d40 = sleep_fit.diagnose(n_sim=40, random_state=11, re="conditional")
    assert d40.provenance["simulation_block_seeds"] == [[40, 11]]
    assert_rel(d40.simulated, R("as.matrix(simulate(xd_m_ss, nsim = 40, seed = 11, re.form = NULL))"))


def test_glmm_blocks_are_rs_simulate_with_documented_seeds(R, cbpp_fits):
    fit = cbpp_fits[1]
    d = fit.diagnose(n_sim=300, random_state=5)
    s1 = block_seed(5, 1)
    assert s1 != 5 and d.provenance["simulation_block_seeds"] == [[250, 5], [50, s1]]
    successes = "sapply(simulate(xd_g1, nsim = {n}, seed = {s}, re.form = NA), function(x) x[, 1])"
    np.testing.assert_array_equal(d.simulated[:, :250], R(successes.format(n=250, s=5)))
    np.testing.assert_array_equal(d.simulated[:, 250:], R(successes.format(n=50, s=s1)))
    np.testing.assert_array_equal(d.observed, R("xd_cb$incidence"))
    np.testing.assert_array_equal(d.trials, R("xd_cb$size"))


def test_block_seeds_do_not_depend_on_n_sim(sleep_fit):
    """Block b's seed depends on (s, b) only: the first 500 of 520 simulations are the 500."""
    a = sleep_fit.diagnose(n_sim=500, random_state=3)
    b = sleep_fit.diagnose(n_sim=520, random_state=3)
    assert b.provenance["simulation_block_seeds"] == [[250, 3], [250, block_seed(3, 1)], [20, block_seed(3, 2)]]
    np.testing.assert_array_equal(b.simulated[:, :500], a.simulated)


# ------------------------------------------------------------------ the same diagnostics everywhere
@pytest.fixture(scope="module")
def lmm_here(sleep_fit):
    return sleep_fit.diagnose(n_sim=520, random_state=3, group="Subject")


@pytest.fixture(scope="module")
def glmm_here(cbpp_fits):
    return cbpp_fits[1].diagnose(n_sim=520, random_state=4, group="period")


def no_r_here(monkeypatch, *wrappers: str) -> None:
    """Make the bridge wrappers fail in this process: the work must happen on the workers
    (separate processes, which keep the real wrappers)."""
    def refuse(*args, **kwargs):
        raise AssertionError("this was to run on a worker")
    for w in wrappers:
        monkeypatch.setattr(_bridge, w, refuse)


@pytest.mark.parametrize("kind", ["processes", "dask"])
def test_lmm_diagnostics_equal_on_every_executor(kind, sleep_fit, lmm_here, dask_client, monkeypatch):
    no_r_here(monkeypatch, "simulate")
    there = sleep_fit.diagnose(n_sim=520, random_state=3, group="Subject", executor=executor_for(kind, dask_client))
    same_diagnostics(there, lmm_here)
    assert len(there.provenance["simulation_block_seeds"]) == 3


@pytest.mark.parametrize("kind", ["processes", "dask"])
def test_glmm_diagnostics_equal_on_every_executor(kind, cbpp_fits, glmm_here, dask_client, monkeypatch):
    no_r_here(monkeypatch, "simulate_glmm")
    there = cbpp_fits[1].diagnose(n_sim=520, random_state=4, group="period", executor=executor_for(kind, dask_client))
    same_diagnostics(there, glmm_here)
    np.testing.assert_array_equal(there.trials, glmm_here.trials)


def test_executor_needs_a_rebuildable_fit(sleep_fit):
    class NoFormula:  # the LMMFit interface diagnose_fit needs, without what a worker rebuilds from
        def __getattr__(self, name):
            if name in ("formula", "family"):
                raise AttributeError(name)
            return getattr(sleep_fit, name)

    with pytest.raises(me.DataError, match="executor= needs a fit from mixedeval.lmm"):
        md.diagnose_fit(NoFormula(), n_sim=260, random_state=1, executor=2)
    here = md.diagnose_fit(NoFormula(), n_sim=260, random_state=1)  # in process: fit.simulate
    np.testing.assert_array_equal(here.simulated, sleep_fit.diagnose(n_sim=260, random_state=1).simulated)


# ------------------------------------------------------------------ GLMM parametric bootstrap
@pytest.fixture(scope="module")
def pb_here(cbpp_fits):
    return me.compare(*cbpp_fits, n_resamples=20, random_state=9, progress=False)


@pytest.fixture(scope="module")
def pbmodcomp(R, cbpp_fits):
    R("set.seed(9); xd_pb <- pbkrtest::PBmodcomp(xd_g1, xd_g0, nsim = 20)")
    return {"ref": R("xd_pb$ref"), "p_value": R("summary(xd_pb)$test['PBtest', 'p.value']")[0],
            "chisq": R("anova(xd_g0, xd_g1)$Chisq[2]")[0]}


def test_glmm_pb_in_process_equals_pbmodcomp(pb_here, pbmodcomp):
    assert_rel(pb_here.table["chisq"].iloc[1], pbmodcomp["chisq"])
    assert_rel(pb_here.table["p_value_pb"].iloc[1], pbmodcomp["p_value"])


@pytest.mark.parametrize("kind", ["processes", "dask"])
def test_glmm_pb_equal_on_every_executor(kind, cbpp_fits, pb_here, pbmodcomp, dask_client, monkeypatch):
    no_r_here(monkeypatch, "pb_chunk", "pb_refit")
    there = me.compare(*cbpp_fits, n_resamples=20, random_state=9, progress=False,
                       executor=executor_for(kind, dask_client))
    pd.testing.assert_frame_equal(there.table, pb_here.table, check_exact=False, rtol=OPTIMIZER_RTOL, atol=0.0)
    pd.testing.assert_frame_equal(there.pb, pb_here.pb, check_exact=False, rtol=OPTIMIZER_RTOL, atol=0.0)
    assert there.provenance == pb_here.provenance
    # PBmodcomp's p-value: (1 + #{ref >= observed}) / (1 + 20), from refits on the workers
    assert_rel(there.table["p_value_pb"].iloc[1], pbmodcomp["p_value"])


def test_glmm_pb_statistics_on_workers_equal_pbmodcomps(cbpp_fits, pbmodcomp):
    """Every replicate's statistic (two-column cbind responses shipped to the workers), not only
    the p-value that 20 replicates barely move."""
    small, large = cbpp_fits
    state = _bridge.pb_setup(large, small, n_resamples=20, r_seed=9)
    here, _ = _pb_statistics(state, small, large, 20, False, "", None)
    there, _ = _pb_statistics(state, small, large, 20, False, "", 2)
    assert here.shape == (20,) and np.all(np.isfinite(here))
    np.testing.assert_allclose(here, pbmodcomp["ref"], rtol=OPTIMIZER_RTOL)
    np.testing.assert_allclose(there, pbmodcomp["ref"], rtol=OPTIMIZER_RTOL)


def test_glmmtmb_fits_still_refuse_the_bootstrap_with_an_executor():
    rng = np.random.default_rng(1)
    item = np.repeat([f"i{k:02d}" for k in range(15)], 4)
    system = np.tile(["a", "b", "c", "d"], 15)
    eta = 0.3 * (system == "b") + np.repeat(rng.normal(0, 0.4, 15), 4)
    mu = 1 / (1 + np.exp(-eta))
    d = pd.DataFrame({"score": rng.beta(mu * 20, (1 - mu) * 20), "system": system, "item": item})
    f0 = me.glmm("score ~ 1 + (1|item)", d, family="beta")
    f1 = me.glmm("score ~ system + (1|item)", d, family="beta")
    with pytest.raises(me.DataError, match="needs lme4 fits; glmmTMB fits"):
        me.compare(f0, f1, n_resamples=5, executor=2)
    assert "p_value_pb" not in me.compare(f0, f1, executor=2).table.columns  # no bootstrap: nothing to run
