"""Conditional ("a typical item") vs population-averaged ("accuracy") response-scale means of GLMMs.

* ``marginal=True`` / ``"bias_adj"`` is checked number for number against
  ``emmeans(m, ..., type = "response", bias.adj = TRUE, sigma = sqrt(sum of the random-intercept
  variances))`` called in R on **the same fitted model object** (so the comparison is
  deterministic: rtol 1e-8), and its risk differences against ``contrast(regrid(emm,
  bias.adjust = TRUE, sigma = ...))``.
* ``marginal="integrate"`` is checked against R's ``integrate()`` of ``plogis(eta + sigma z)
  dnorm(z)`` (eta: emmeans' link-scale means), its SEs against a central numerical derivative of
  that integral times the link-scale SE (rtol 1e-7: the derivative's truncation error), and against
  closed forms (probit: ``pnorm(eta / sqrt(1 + sigma^2))``; log: ``exp(eta + sigma^2 / 2)``).
* On balanced simulated 0/1 data (2 systems x 200 items, item SD 1.5 on the logit scale) the
  conditional means are clearly not the observed accuracies, the integrated ones are (see
  ``test_balanced_accuracy`` for the tolerances and why).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

import mixedeval as me

RTOL = 1e-8


def _ro():
    from mixedeval.engine import session

    session._start()
    import rpy2.robjects as ro

    return ro


def R(code: str):
    return np.array(_ro().r(code), copy=True)


def _to_r(name: str, fit) -> None:
    """The fit's own R model object under ``name`` in R's global environment."""
    ro = _ro()
    ro.globalenv[name] = fit._model  # noqa: SLF001 - the same fitted object, for deterministic parity
    ro.r(f"if (is.environment({name})) {name} <- {name}$model; {name}_sd <- sqrt(sum(as.data.frame(lme4::VarCorr({name}))$vcov))")


def _accuracy_data(seed: int = 20240611, n_items: int = 200, item_sd: float = 1.5, n_runs: int = 1,
                   systems: dict[str, float] | None = None) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    systems = systems or {"sys_a": 1.0, "sys_b": 1.6}
    b = rng.normal(0.0, item_sd, n_items)
    rows = []
    for i in range(n_items):
        for s, eta in systems.items():
            for r in range(n_runs):
                p = 1.0 / (1.0 + np.exp(-(eta + b[i])))
                rows.append((f"q{i:03d}", s, f"r{r}", int(rng.random() < p)))
    return pd.DataFrame(rows, columns=["item", "system", "run", "correct"])


@pytest.fixture(scope="module")
def acc():
    return _accuracy_data()


@pytest.fixture(scope="module")
def acc_fit(acc):
    return me.glmm("correct ~ system + (1|item)", acc, family="binomial")


@pytest.fixture(scope="module")
def three():
    d = _accuracy_data(seed=7, n_items=150, item_sd=1.2, n_runs=2, systems={"a": 0.2, "b": 0.9, "c": 1.0})
    return d, me.glmm("correct ~ system + (1|item) + (1|item:run)", d, family="binomial")


# ------------------------------------------------------------------ accuracy vs typical item
def test_balanced_accuracy(acc, acc_fit):
    """2 systems x 200 items, one 0/1 score each, item SD 1.5 (logit scale).

    Tolerances:
    * conditional: linkinv(emmean) is the probability for a typical item; with a large item SD it
      is far from the accuracy (here > 0.03 away; the gap grows with the SD).
    * integrate, adaptive Gauss-Hermite fit (nagq=25, ~exact ML): with 2 systems and one score per
      (item, system) the model (beta_a, beta_b, sigma) is saturated for the 4 response patterns of
      an item, so the ML fit reproduces the observed pattern frequencies and the exactly integrated
      means equal the observed accuracies up to the optimizer's tolerance (1e-5 asserted; ~1e-8
      seen). On unbalanced or larger designs the model mean differs from the observed mean by
      sampling noise (ML is not a method of moments).
    * integrate, Laplace fit (nagq=1, the default): Laplace's score equations equate the observed
      accuracy with the mean of the fitted probabilities at the conditional modes, not with the
      model's integral, and Laplace underestimates the item SD with two binary scores per item:
      within 0.015 (max 0.0098 over 20 simulated data sets with item SD 1.5).
    * bias_adj: a second-order Taylor approximation, E h(eta + u) ~ h(eta) + h''(eta) sigma^2 / 2;
      closer than the conditional mean but errs by ~0.02-0.05 at sigma 1.3-1.7 (0.06 asserted), and
      says so in a ``bias_adj_approximation`` warning.
    """
    observed = acc.groupby("system")["correct"].mean().to_numpy()
    cond = acc_fit.emmeans("system")
    ba = acc_fit.emmeans("system", marginal=True)
    ig = acc_fit.emmeans("system", marginal="integrate")
    assert list(cond.table["system"]) == list(ig.table["system"]) == ["sys_a", "sys_b"]
    gap_cond = np.abs(cond.table["emmean"].to_numpy() - observed)
    gap_ba = np.abs(ba.table["emmean"].to_numpy() - observed)
    gap_ig = np.abs(ig.table["emmean"].to_numpy() - observed)
    assert gap_cond.min() > 0.03, (cond.table, observed)
    assert gap_ig.max() < 0.015, (ig.table, observed)
    assert gap_ba.max() < 0.06 and np.all(gap_ba < gap_cond)
    assert any(w.kind == "bias_adj_approximation" for w in ba.warnings)
    assert_rel(ba.integrated, ig.table["emmean"], rtol=1e-10)
    # (nearly) exact ML: integrated means == observed accuracies
    fit25 = me.glmm("correct ~ system + (1|item)", acc, family="binomial", nagq=25)
    ig25 = fit25.emmeans("system", marginal="integrate")
    np.testing.assert_allclose(ig25.table["emmean"], observed, atol=1e-5)
    assert np.abs(fit25.emmeans("system").table["emmean"].to_numpy() - observed).min() > 0.03
    # the marginal risk difference is the difference of accuracies
    rd = ig25.contrasts(scale="difference")
    np.testing.assert_allclose(rd.table["estimate"], [observed[0] - observed[1]], atol=2e-5)


def test_labels_and_printing(acc_fit):
    cond = acc_fit.emmeans("system")
    assert cond.response_scale == "conditional" and cond.marginal is None and cond.re_sd is None
    assert "typical item" in cond.response_scale_note and "random effects at zero" in cond.response_scale_note
    assert "typical item" in repr(cond) and "typical item" in cond._repr_html_()
    d = cond.to_dict()
    assert d["response_scale"] == "conditional" and "typical item" in d["response_scale_note"]
    ig = acc_fit.emmeans("system", marginal="integrate")
    assert ig.response_scale == "marginal" and ig.marginal == "integrate" and ig.re_groups == ("item",)
    assert "population-averaged probability" in repr(ig)
    assert ig.to_dict()["response_scale"] == "marginal" and ig.to_dict()["marginal"] == "integrate"
    assert ig.provenance["marginal"] == "integrate" and ig.provenance["re_sd"] == ig.re_sd
    ba = acc_fit.emmeans("system", marginal="bias_adj")
    assert ba.marginal == "bias_adj" and ba.response_scale == "marginal"
    assert "bias adjustment" in ba.response_scale_note
    assert list(ba.table.columns) == ["system", "emmean", "std_error", "df", "conf_low", "conf_high"]
    lk = acc_fit.emmeans("system", type="link")
    assert lk.response_scale is None and lk.response_scale_note == ""
    # contrasts: odds ratios stay conditional, differences follow the means
    orr = ig.contrasts()
    assert orr.estimate_label == "odds_ratio" and orr.response_scale == "conditional"
    assert "the ratios are not" in orr.response_scale_note
    rd = ig.contrasts(scale="difference")
    assert rd.response_scale == "marginal" and "population-averaged" in rd.response_scale_note
    assert cond.contrasts(scale="difference").response_scale == "conditional"
    assert lk.contrasts().response_scale is None


def test_bad_marginal_arguments(acc, acc_fit):
    with pytest.raises(me.DataError, match="link scale"):
        acc_fit.emmeans("system", type="link", marginal=True)
    with pytest.raises(me.DataError, match="not one of"):
        acc_fit.emmeans("system", marginal="laplace")
    d = acc.assign(x=np.tile(np.linspace(-1, 1, 4), len(acc) // 4))
    slope = me.glmm("correct ~ system + x + (1 + x|item)", d, family="binomial")
    with pytest.raises(me.DataError, match="random slopes"):
        slope.emmeans("system", marginal="integrate")
    assert slope.emmeans("system").response_scale == "conditional"


# ------------------------------------------------------------------ parity: bias.adj = TRUE
def test_bias_adj_parity_with_emmeans(three):
    d, fit = three
    _to_r("m_mg3", fit)
    sd = float(R("m_mg3_sd")[0])
    emm = fit.emmeans("system", marginal=True)
    assert_rel(emm.re_sd, sd, rtol=1e-12)
    R("e_mg3 <- emmeans::emmeans(m_mg3, 'system', type = 'response', bias.adj = TRUE, sigma = m_mg3_sd);"
      "s_mg3 <- summary(e_mg3)")
    assert list(emm.table["system"]) == list(R("as.character(s_mg3$system)"))
    for ours, theirs in (("emmean", "prob"), ("std_error", "SE"), ("conf_low", "asymp.LCL"), ("conf_high", "asymp.UCL")):
        assert_rel(emm.table[ours], R(f"s_mg3${theirs}"), rtol=RTOL)
    assert any("Bias adjustment" in n for n in emm.notes)
    # population-averaged risk differences: regrid of the bias-adjusted grid
    R("e_mg3c <- emmeans::emmeans(m_mg3, 'system');"
      "r_mg3 <- emmeans::regrid(e_mg3c, transform = 'response', bias.adjust = TRUE, sigma = m_mg3_sd);"
      "d_mg3 <- summary(emmeans::contrast(r_mg3, 'pairwise', adjust = 'holm'), infer = c(TRUE, TRUE));"
      "dr_mg3 <- summary(emmeans::contrast(r_mg3, 'pairwise', adjust = 'none'), infer = c(TRUE, TRUE))")
    rd = emm.contrasts(scale="difference", adjust="holm")
    assert list(rd.table["contrast"]) == list(R("as.character(d_mg3$contrast)"))
    for ours, theirs in (("estimate", "estimate"), ("std_error", "SE"), ("z_value", "z.ratio"), ("p_adj", "p.value"),
                         ("conf_low", "asymp.LCL"), ("conf_high", "asymp.UCL")):
        assert_rel(rd.table[ours], R(f"d_mg3${theirs}"), rtol=RTOL)
    assert_rel(rd.table["p_value"], R("dr_mg3$p.value"), rtol=RTOL)
    # the differences of the bias-adjusted means
    prob = R("s_mg3$prob")
    assert_rel(rd.table["estimate"], [prob[0] - prob[1], prob[0] - prob[2], prob[1] - prob[2]], rtol=1e-6)
    # odds ratios: conditional, identical to those of the unadjusted grid
    R("o_mg3 <- summary(emmeans::contrast(e_mg3c, 'pairwise', adjust = 'holm'), type = 'response', infer = c(TRUE, TRUE))")
    orr = emm.contrasts(adjust="holm")
    for ours, theirs in (("estimate", "odds.ratio"), ("std_error", "SE"), ("p_adj", "p.value"), ("conf_low", "asymp.LCL")):
        assert_rel(orr.table[ours], R(f"o_mg3${theirs}"), rtol=RTOL)
    # by-groups and trt.vs.ctrl on the marginal grid
    rd2 = emm.contrasts(method="trt.vs.ctrl", ref="a", adjust="none", scale="difference")
    assert_rel(rd2.table["estimate"], R("summary(emmeans::contrast(r_mg3, 'trt.vs.ctrl', ref = 1))$estimate"), rtol=RTOL)


def test_bias_adj_cbpp_vignette():
    """Lenth's vignette example: cbpp with herd and observation-level random intercepts, sigma =
    the total SD (Pythagorean sum), compared with emmeans on the same fit object."""
    ro = _ro()
    from rpy2.robjects import conversion, pandas2ri

    ro.r('data(cbpp, package = "lme4"); cbpp_m <- transform(as.data.frame(cbpp), unit = sprintf("u%02d", 1:56),'
         'herd = as.character(herd), period = as.character(period))')
    with conversion.localconverter(ro.default_converter + pandas2ri.converter):
        cb = conversion.get_conversion().rpy2py(ro.r("cbpp_m")).reset_index(drop=True)
    fit = me.glmm("cbind(incidence, size - incidence) ~ period + (1|herd) + (1|unit)", cb, family="binomial")
    _to_r("m_cb", fit)
    emm = fit.emmeans("period", marginal=True)
    assert set(emm.re_groups) == {"herd", "unit"}
    R("s_cb <- summary(emmeans::emmeans(m_cb, 'period'), type = 'response', bias.adjust = TRUE, sigma = m_cb_sd)")
    assert_rel(emm.table["emmean"], R("s_cb$prob"), rtol=RTOL)
    assert_rel(emm.table["std_error"], R("s_cb$SE"), rtol=RTOL)
    assert_rel(emm.table["conf_low"], R("s_cb$asymp.LCL"), rtol=RTOL)
    assert_rel(emm.table["conf_high"], R("s_cb$asymp.UCL"), rtol=RTOL)


# ------------------------------------------------------------------ integrate: vs R's integrate()
def test_integrate_parity_with_r_integrate(three):
    d, fit = three
    _to_r("m_ig3", fit)
    emm = fit.emmeans("system", marginal="integrate")
    R("""
      e_ig3 <- emmeans::emmeans(m_ig3, 'system'); s_ig3 <- summary(e_ig3); V_ig3 <- vcov(e_ig3)
      H_ig3 <- function(eta, s = m_ig3_sd) integrate(function(z) plogis(eta + s * z) * dnorm(z), -Inf, Inf,
                                                     rel.tol = 1e-13, abs.tol = 0)$value
      D_ig3 <- function(eta, h = 1e-4) (H_ig3(eta + h) - H_ig3(eta - h)) / (2 * h)
      p_ig3 <- sapply(s_ig3$emmean, H_ig3); g_ig3 <- sapply(s_ig3$emmean, D_ig3)
      q_ig3 <- qnorm(0.975)
      lo_ig3 <- sapply(s_ig3$emmean - q_ig3 * s_ig3$SE, H_ig3); hi_ig3 <- sapply(s_ig3$emmean + q_ig3 * s_ig3$SE, H_ig3)
      C_ig3 <- rbind(c(1, -1, 0), c(1, 0, -1), c(0, 1, -1))
      rd_ig3 <- as.numeric(C_ig3 %*% p_ig3)
      rdse_ig3 <- sqrt(diag(C_ig3 %*% diag(g_ig3) %*% V_ig3 %*% diag(g_ig3) %*% t(C_ig3)))
    """)
    assert_rel(emm.table["emmean"], R("p_ig3"), rtol=1e-10)
    assert_rel(emm.table["std_error"], R("g_ig3 * s_ig3$SE"), rtol=1e-7)  # numerical derivative's error
    assert_rel(emm.table["conf_low"], R("lo_ig3"), rtol=1e-10)
    assert_rel(emm.table["conf_high"], R("hi_ig3"), rtol=1e-10)
    rd = emm.contrasts(scale="difference", adjust="none")
    assert_rel(rd.table["estimate"], R("rd_ig3"), rtol=1e-9)
    assert_rel(rd.table["std_error"], R("rdse_ig3"), rtol=1e-7)
    assert_rel(rd.table["p_value"], R("2 * pnorm(-abs(rd_ig3 / rdse_ig3))"), rtol=1e-6)


@pytest.mark.parametrize("family,link,expr", [
    ("binomial", "probit", "pnorm(eta / sqrt(1 + s^2))"),
    ("poisson", "log", "exp(eta + s^2 / 2)"),
])
def test_integrate_closed_forms(family, link, expr):
    rng = np.random.default_rng(3)
    n = 120
    b = rng.normal(0, 0.9, n)
    sys_eff = {"a": -0.2, "b": 0.4}
    rows = []
    for i in range(n):
        for s, e in sys_eff.items():
            for r in range(2):
                eta = e + b[i]
                y = int(rng.random() < 0.5 * (1 + np.tanh(eta / 1.7))) if family == "binomial" else int(
                    rng.poisson(np.exp(eta)))
                rows.append((f"i{i:03d}", s, r, y))
    d = pd.DataFrame(rows, columns=["item", "system", "run", "y"])
    fit = me.glmm("y ~ system + (1|item)", d, family=family, link=link)
    _to_r("m_cf", fit)
    emm = fit.emmeans("system", marginal="integrate")
    R(f"s_cf <- summary(emmeans::emmeans(m_cf, 'system')); s <- m_cf_sd; eta <- s_cf$emmean; p_cf <- {expr};"
      f"eta <- s_cf$emmean + 1e-5; p_up <- {expr}; eta <- s_cf$emmean - 1e-5; p_dn <- {expr}")
    assert_rel(emm.table["emmean"], R("p_cf"), rtol=1e-10)
    assert_rel(emm.table["std_error"], R("(p_up - p_dn) / 2e-5 * s_cf$SE"), rtol=1e-7)
    assert emm.estimate_label == ("prob" if family == "binomial" else "rate")
