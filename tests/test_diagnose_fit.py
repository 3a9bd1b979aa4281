"""fit.diagnose() on real lme4 fits: R-side simulations feed the numpy DHARMa algorithm."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_rel

import mixedeval as me
from mixedeval.diagnostics import from_simulations


@pytest.fixture(scope="module")
def ter_fit(ter):
    return me.lmm("ter ~ system + (1|sentence_id)", ter)


def test_verdicts_stable_across_seeds(ter_fit):
    verdicts = []
    for seed in (11, 12, 13):
        d = ter_fit.diagnose(n_sim=100, random_state=seed)
        t = d.tests.set_index("test")
        verdicts.append((t.loc["uniformity", "verdict"], t.loc["dispersion", "verdict"]))
    assert len(set(verdicts)) == 1, verdicts
    # TER is bounded and skewed: the Gaussian model's residuals are not uniform, dispersion is fine
    assert verdicts[0] == ("warning", "ok")


def test_diagnose_uses_lme4_simulations(R, ter_fit):
    d = ter_fit.diagnose(n_sim=50, random_state=5)
    R("m_diag <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = ter_df)")
    sims = R("as.matrix(simulate(m_diag, nsim = 50, seed = 5, re.form = NA))")
    y = R("ter_df$ter")
    ref = from_simulations(sims, y, predicted=R("unname(predict(m_diag, re.form = NA))"), random_state=5)
    # an int random_state is R's set.seed: same simulation matrix, same tie-breaking, same tests
    assert_rel(ter_fit.simulate(50, random_state=5), sims)
    assert_rel(d.residuals, ref.residuals)
    assert_rel(d.tests["statistic"].to_numpy(dtype=float), ref.tests["statistic"].to_numpy(dtype=float))
    assert d.random_state == 5 and d.provenance["random_state"] == 5


def test_simulate_random_state(R, ter_fit):
    """Default 123 (DHARMa's seed) is reproducible; other forms become one set.seed int."""
    a = ter_fit.simulate(3)
    R("m_sim <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = ter_df)")
    assert_rel(a, R("as.matrix(simulate(m_sim, nsim = 3, seed = 123, re.form = NA))"))
    b = ter_fit.simulate(3, random_state=np.random.SeedSequence(4))
    c = ter_fit.simulate(3, random_state=np.random.SeedSequence(4))
    assert_rel(b, c)
    assert not np.allclose(a, b)
    assert ter_fit.simulate(3, random_state=None).shape == (ter_fit.nobs, 3)
    with pytest.raises(me.DataError, match="random_state"):
        ter_fit.simulate(3, random_state=2**31)
    with pytest.raises(TypeError):
        ter_fit.diagnose(n_sim=20, seed=1)  # the 0.1 keyword is gone


def test_type_one_error_on_model_consistent_data(R):
    """Data simulated from a fitted model's own assumptions: uniformity rejects about 5%."""
    R("set.seed(2024); g <- factor(rep(1:30, each = 6)); x <- rep(c('a', 'b', 'c'), 60)")
    pvals = []
    import pandas as pd

    for rep in range(40):
        R(f"set.seed({rep}); yy <- 1 + (x == 'b') * 0.5 + rnorm(30)[as.integer(g)] + rnorm(180)")
        df = pd.DataFrame({"y": R("yy"), "x": list(R("x")), "g": [str(v) for v in R("as.integer(g)")]})
        fit = me.lmm("y ~ x + (1|g)", df)
        p = fit.diagnose(n_sim=100, random_state=rep).tests.set_index("test").loc["uniformity", "p_value"]
        pvals.append(p)
    rate = np.mean(np.asarray(pvals) < 0.05)
    assert rate <= 0.15, rate  # binomial(40, 0.05): P(>= 7 rejections) < 0.5%


def test_optimizer_comparison_in_checks(ter_fit):
    d = ter_fit.diagnose(n_sim=20, random_state=1, check_optimizers=True)
    row = d.checks.set_index("check").loc["optimizers"]
    oc = ter_fit.check_optimizers()
    assert row["verdict"] == ("ok" if oc.agree else "warning")
    assert row["statistic"] == float(abs(oc.table["loglik_diff"]).max())
