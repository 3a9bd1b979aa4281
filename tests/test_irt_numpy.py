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


# ----------------------------------------------------------------------------- session 8: bounds, Laplace, prior
def _profile_loglik(Y, N, alpha, beta, j, a_j, b_j, nodes=21):
    """Marginal log-likelihood (adaptive quadrature, modes re-centred) with item j's slope and
    difficulty replaced."""
    al, be = alpha.copy(), beta.copy()
    al[j], be[j] = a_j, -a_j * b_j
    mode, curv = E.posterior_modes(Y, N, al, be)
    return E.adaptive_nodes(Y, N, al, be, mode, curv, nodes).loglik


def test_separated_item_stops_at_the_bound_without_cycling():
    """Regression (session 8): an item answered correctly exactly by the systems above an ability
    cut has no finite ML slope. The old EM clipped the slope alone after each step, which moved
    the item's threshold, and cycled for max_iter iterations (not converged; log-likelihood
    -1270.285 here against -1269.945 now); and the posterior modes' Newton steps cycled around
    the steep item's threshold (misplaced adaptive nodes, a log-likelihood off by 0.02). Now the
    slope stops at the bound with the threshold kept, and the EM converges to the point where
    moving the item's difficulty either way lowers the (independently recomputed) likelihood."""
    Y, theta, _, _ = E.simulate_2pl(60, 40, random_state=4)
    Y[:, 0] = (theta > -1.3).astype(float)
    fit = E.irt_numpy(E.wide_frame(Y), "2pl", n_quadrature=21, max_iter=1000)
    assert fit.converged and fit.n_iter < 200
    it = fit.items
    assert it["discrimination"].iloc[0] >= E.BOUND_FLAG * E.ALPHA_MAX
    assert any(w.kind == "discrimination_bound" for w in fit.warnings)
    N = np.ones_like(Y)
    alpha, beta = it["discrimination"].to_numpy(), it["intercept"].to_numpy()
    a0, b0 = alpha[0], it["difficulty"].iloc[0]
    at = _profile_loglik(Y, N, alpha, beta, 0, a0, b0)
    assert fit.loglik - E._binomial_const(Y, N) == pytest.approx(at, abs=1e-6)
    assert at > -1270.0  # the cycling EM's -1270.285 is 0.34 below
    for shift in (-0.03, 0.03):
        assert _profile_loglik(Y, N, alpha, beta, 0, a0, b0 + shift) < at


def test_posterior_modes_reach_the_mode_beside_a_steep_item():
    """The modes solve the score equation (checked by bisection on its sign, independently of
    Newton) for systems near the threshold of an item with slope 20."""
    Y, theta, a, b = E.simulate_2pl(60, 40, random_state=4)
    Y[:, 0] = (theta > -1.3).astype(float)
    N = np.ones_like(Y)
    al, be = a.copy(), -a * b
    al[0], be[0] = 20.0, 20.0 * 1.18
    z, _ = E.posterior_modes(Y, N, al, be)
    from scipy import optimize, special

    for s in range(60):
        def score(x, s=s):
            return float((Y[s] - special.expit(x * al + be)) @ al - x)
        ref = optimize.brentq(score, -8, 8, xtol=1e-12)
        assert z[s] == pytest.approx(ref, abs=1e-7)


def test_laplace_gradient_equals_finite_differences():
    laplace_terms = E.laplace_terms

    Y, _, a, b = E.simulate_2pl(30, 8, random_state=2)
    N = np.ones_like(Y)
    N[0, 1] = Y[0, 1] = 0  # a missing cell
    Y[1, 2], N[1, 2] = 2, 3  # a k-of-n cell
    al, be = 0.9 * a, -a * b + 0.1
    _, g_a, g_b, _, _ = laplace_terms(Y, N, al, be)
    eps = 1e-6
    for j in range(8):
        d = np.zeros(8)
        d[j] = eps
        fa = (laplace_terms(Y, N, al + d, be)[0] - laplace_terms(Y, N, al - d, be)[0]) / (2 * eps)
        fb = (laplace_terms(Y, N, al, be + d)[0] - laplace_terms(Y, N, al, be - d)[0]) / (2 * eps)
        assert g_a[j] == pytest.approx(fa, abs=1e-6) and g_b[j] == pytest.approx(fb, abs=1e-6)


def test_laplace_loglik_is_the_laplace_approximation_of_the_integral():
    """The Laplace log-likelihood against scipy's quad of each system's integral: close (the
    Laplace error) but not equal, and the adaptive 31-node value equals quad."""
    from scipy import integrate

    laplace_terms = E.laplace_terms

    Y, _, a, b = E.simulate_2pl(20, 30, random_state=3)
    N = np.ones_like(Y)
    al, be = a, -a * b
    exact = 0.0
    for s in range(20):
        def f(z, s=s):
            eta = al * z + be
            return np.exp(np.sum(Y[s] * eta - np.logaddexp(0, eta)) - z * z / 2) / np.sqrt(2 * np.pi)
        exact += np.log(integrate.quad(f, -12, 12, epsabs=0, epsrel=1e-12, limit=200)[0])
    lap = laplace_terms(Y, N, al, be)[0]
    mode, curv = E.posterior_modes(Y, N, al, be)
    agq = E.adaptive_nodes(Y, N, al, be, mode, curv, 31).loglik
    assert agq == pytest.approx(exact, abs=1e-8)
    assert 1e-4 < abs(lap - exact) < 0.05 * 20


def test_discrimination_prior_gives_the_posterior_mode():
    """MAP with a lognormal(0, 0.5) slope prior: the log posterior (adaptive-quadrature marginal
    log-likelihood + log prior, computed here from scratch) is stationary at the estimate in
    every item's slope and intercept and along the common scale of all slopes (the direction the
    prior-aware expansion step handles); the slopes are positive and finite where ML's hit the bound."""
    from scipy import stats

    Y, theta, _, _ = E.simulate_2pl(60, 40, random_state=4)
    Y[:, 0] = (theta > -1.3).astype(float)
    N = np.ones_like(Y)
    fit = E.irt_numpy(E.wide_frame(Y), "2pl", n_quadrature=21, discrimination_prior=(0.0, 0.5), tol=1e-10)
    assert fit.converged and "MAP" in fit.provenance["estimator"]
    alpha, beta = fit.items["discrimination"].to_numpy(), fit.items["intercept"].to_numpy()
    assert np.all(alpha > 0) and alpha[0] < E.ALPHA_MAX / 2

    def log_post(al, be):
        mode, curv = E.posterior_modes(Y, N, al, be)
        ll = E.adaptive_nodes(Y, N, al, be, mode, curv, 21).loglik
        return ll + np.sum(stats.lognorm.logpdf(al, s=0.5, scale=1.0))

    eps = 1e-5
    for j in (0, 1, 7, 23):
        d = np.zeros_like(alpha)
        d[j] = eps
        ga = (log_post(alpha + d, beta) - log_post(alpha - d, beta)) / (2 * eps)
        gb = (log_post(alpha, beta + d) - log_post(alpha, beta - d)) / (2 * eps)
        assert abs(ga) < 2e-3 and abs(gb) < 2e-3, (j, ga, gb)
    g_scale = (log_post(alpha * (1 + eps), beta) - log_post(alpha * (1 - eps), beta)) / (2 * eps)
    assert abs(g_scale) < 2e-3
    # the same data without the prior: the slope of item 0 runs to the bound
    assert E.irt_numpy(E.wide_frame(Y), "2pl", n_quadrature=21).items["discrimination"].iloc[0] >= E.BOUND_FLAG * E.ALPHA_MAX


def test_discrimination_prior_bad_input():
    Y, *_ = E.simulate_2pl(20, 6, random_state=1)
    with pytest.raises(DataError, match="2pl"):
        E.irt_numpy(E.wide_frame(Y), "rasch", discrimination_prior=(0, 0.5))
    with pytest.raises(DataError, match="sd > 0"):
        E.irt_numpy(E.wide_frame(Y), "2pl", discrimination_prior=(0, -1))
    with pytest.raises(DataError, match="lognormal"):
        E.irt_numpy(E.wide_frame(Y), "2pl", discrimination_prior="flat")
