"""The numpy IRT engine (mixedeval.inference._irt_numpy): the Rasch marginal likelihood against
lme4 itself (``glmer(score ~ 0 + item + (1 | system), binomial, nAGQ = 25)`` run by R in the test
on the same data, read from a CSV), recovery of planted 2PL parameters, input shapes and bad input.

Tolerances: glmer maximizes the adaptive-quadrature likelihood with its own optimizer (bobyqa +
Nelder-Mead, default tolerances), our PX-EM stops at 1e-9 parameter change, so the estimates agree
to the optimizers' tolerance (1e-4 absolute asked by the issue for the engine; observed ~1e-6).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mixedeval.errors import DataError
from mixedeval.inference import _irt_numpy as E


def _r():
    from mixedeval.engine import session

    session._start()
    import rpy2.robjects as ro

    return ro


def R(code: str):
    return np.array(_r().r(code), copy=True)


@pytest.fixture(scope="module")
def rasch_case(tmp_path_factory):
    Y, theta, _, b = E.simulate_2pl(60, 10, random_state=11, rasch=True, sigma=1.2)
    wide = E.wide_frame(Y)
    long = wide.reset_index().melt(id_vars="system", var_name="item", value_name="score")
    path = tmp_path_factory.mktemp("irt") / "rasch.csv"
    long.to_csv(path, index=False)
    return wide, long, str(path)


def test_rasch_equals_glmer_adaptive_quadrature(rasch_case):
    wide, long, path = rasch_case
    fit = E.irt_numpy(long, "rasch", n_quadrature=25, tol=1e-10)
    assert fit.converged and fit.se_method == "louis_full"
    R(f'''irt_d <- read.csv("{path}", colClasses = c(system = "character", item = "character"))
          irt_d$item <- factor(irt_d$item, levels = sort(unique(irt_d$item), method = "radix"))
          irt_d$system <- factor(irt_d$system, levels = sort(unique(irt_d$system), method = "radix"))
          irt_m <- lme4::glmer(score ~ 0 + item + (1 | system), data = irt_d, family = binomial, nAGQ = 25,
                               control = lme4::glmerControl(optCtrl = list(ftol_abs = 1e-12, xtol_abs = 1e-10)))''')
    difficulty_r = -R("unname(lme4::fixef(irt_m))")
    sigma_r = R("attr(lme4::VarCorr(irt_m)$system, 'stddev')")[0]
    ll_r = R("as.numeric(logLik(irt_m))")[0]
    se_r = R("unname(sqrt(diag(as.matrix(vcov(irt_m)))))")
    modes_r = R("lme4::ranef(irt_m)$system[[1]]")
    cond_sd_r = R("sqrt(as.numeric(attr(lme4::ranef(irt_m, condVar = TRUE)$system, 'postVar')))")
    np.testing.assert_allclose(fit.items["difficulty"], difficulty_r, atol=1e-4)
    assert abs(fit.sigma - sigma_r) < 1e-4
    assert abs(fit.loglik - ll_r) < 1e-6 * abs(ll_r) + 1e-5
    np.testing.assert_allclose(fit.abilities["ability"], modes_r, atol=1e-4)
    np.testing.assert_allclose(fit.abilities["std_error"], cond_sd_r, rtol=1e-3)
    # glmer's vcov comes from a finite-difference Hessian of the deviance: close, not exact
    np.testing.assert_allclose(fit.items["difficulty_std_error"], se_r, rtol=2e-2)


def test_long_and_wide_inputs_give_the_same_fit(rasch_case):
    wide, long, _ = rasch_case
    a = E.irt_numpy(wide, "rasch")
    b = E.irt_numpy(long, "rasch")
    np.testing.assert_allclose(a.items["difficulty"], b.items["difficulty"], atol=1e-10)
    assert list(a.abilities["system"]) == list(b.abilities["system"])
    assert list(a.responses.columns) == ["system", "item", "score", "trials"]


def test_k_of_n_trials_equal_repeated_binary_rows():
    rng = np.random.default_rng(5)
    rows = [{"system": f"s{s}", "item": f"i{i}", "score": int(rng.random() < 0.3 + 0.05 * s - 0.04 * i)}
            for s in range(8) for i in range(6) for _ in range(3)]
    long = pd.DataFrame(rows)
    agg = long.groupby(["system", "item"], as_index=False).agg(score=("score", "sum"), n=("score", "size"))
    a = E.irt_numpy(long, "rasch")
    b = E.irt_numpy(agg, "rasch", trials="n")
    np.testing.assert_allclose(a.items["difficulty"], b.items["difficulty"], atol=1e-10)
    assert a.loglik == pytest.approx(b.loglik, abs=1e-8)  # both as binomial counts (with the choose constant)


def test_2pl_recovers_planted_parameters():
    Y, theta, a, b = E.simulate_2pl(300, 200, random_state=3)
    fit = E.irt_numpy(E.wide_frame(Y), "2pl")
    it = fit.items
    r_a = np.corrcoef(it["discrimination"], a)[0, 1]
    r_b = np.corrcoef(it["difficulty"], b)[0, 1]
    r_t = np.corrcoef(fit.abilities["ability"], theta)[0, 1]
    print(f"2PL recovery 300 x 200: r(discrimination) {r_a:.3f}, r(difficulty) {r_b:.3f}, r(ability) {r_t:.3f}")
    assert fit.converged and r_a >= 0.9 and r_b >= 0.95 and r_t >= 0.97
    # the abilities are on the N(0, 1) scale of the calibration systems
    assert abs(fit.abilities["ability_eap"].std() - 1) < 0.15


def test_rasch_recovery_and_scale():
    Y, theta, _, b = E.simulate_2pl(200, 60, random_state=8, rasch=True, sigma=1.5)
    fit = E.irt_numpy(E.wide_frame(Y), "rasch")
    assert abs(fit.sigma - 1.5) < 0.25
    assert np.corrcoef(fit.items["difficulty"], b)[0, 1] > 0.98
    assert np.all(fit.items["discrimination"] == 1)


def test_bad_input_is_a_data_error():
    with pytest.raises(DataError, match="0/1"):
        E.irt_numpy(pd.DataFrame({"system": ["a", "b"], "item": ["x", "y"], "score": [0.5, 1]}))
    with pytest.raises(DataError, match="model"):
        E.irt_numpy(pd.DataFrame({"system": ["a", "b"], "item": ["x", "y"], "score": [0, 1]}), model="3pl")
    with pytest.raises(DataError, match="at least 2"):
        E.irt_numpy(pd.DataFrame({"system": ["a", "b"], "item": ["x", "x"], "score": [0, 1]}))
