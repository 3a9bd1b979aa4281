"""me.irt(engine="numpy"): the faster engine for large item banks against the R fits.

* fixed-item Rasch: the numpy engine maximises the marginal likelihood by adaptive Gauss-Hermite
  quadrature (21 nodes); R's ``lme4::glmer(score ~ 0 + item + (1 | system), binomial, nAGQ = 21)``
  maximises the same likelihood, run by R in the test: the item parameters agree within 1e-3.
  (Against glmer's Laplace fit, me.irt's R engine, they differ by the Laplace error, ~1e-3.)
* 2PL: glmmTMB has only the Laplace approximation, so the engines maximise slightly different
  likelihoods; on a bank with many items per system they agree closely (median |diff| < 0.02).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.inference._irt_numpy import simulate_2pl, wide_frame


def _r():
    from mixedeval.engine import session

    session._start()
    import rpy2.robjects as ro

    return ro


def test_rasch_fixed_numpy_engine_equals_glmer_agq(tmp_path):
    Y, *_ = simulate_2pl(40, 25, random_state=11, rasch=True)
    w = wide_frame(Y)
    res = me.irt(w, "rasch_fixed", n_sim=0, engine="numpy")
    assert res.engine.startswith("numpy")
    long = res.responses.stack().rename("score").reset_index()
    path = tmp_path / "irt.csv"
    long.to_csv(path, index=False)
    ro = _r()
    ro.r(f"""
      irt_e <- read.csv("{path}", colClasses = c(system = "character", item = "character"))
      irt_e$item <- factor(irt_e$item, levels = sort(unique(irt_e$item), method = "radix"))
      irt_e$system <- factor(irt_e$system)
      irt_em <- lme4::glmer(score ~ 0 + item + (1 | system), data = irt_e, family = binomial, nAGQ = 21,
                            control = lme4::glmerControl(optCtrl = list(maxfun = 1e5)))
    """)
    beta = np.array(ro.r("unname(lme4::fixef(irt_em))"), dtype=float)
    items = [str(x) for x in ro.r("levels(irt_e$item)")]
    ours = res.items.set_index("item").loc[items, "difficulty"].to_numpy()
    np.testing.assert_allclose(ours, -beta, atol=1e-3)
    sd = float(ro.r("as.numeric(attr(lme4::VarCorr(irt_em)$system, 'stddev'))")[0])
    np.testing.assert_allclose(res.variance["system_sd"], sd, rtol=1e-3)


def test_2pl_numpy_engine_close_to_glmmtmb():
    Y, *_ = simulate_2pl(80, 20, random_state=5)
    w = wide_frame(Y)
    rn = me.irt(w, "2pl", n_sim=0, engine="numpy")
    rr = me.irt(w, "2pl", n_sim=0)
    for col in ("difficulty", "discrimination"):
        d = np.abs(rn.items[col].to_numpy() - rr.items[col].to_numpy())
        assert np.median(d) < 0.02, (col, d)
    assert np.corrcoef(rn.abilities["ability"], rr.abilities["ability"])[0, 1] > 0.999
    assert list(rn.leaderboard.columns) == list(rr.leaderboard.columns)


def test_numpy_engine_refuses_random_items_and_unknown_engines():
    Y, *_ = simulate_2pl(10, 8, random_state=1)
    with pytest.raises(me.DataError, match="rasch_fixed"):
        me.irt(wide_frame(Y), "rasch", engine="numpy")
    with pytest.raises(me.DataError, match="engine"):
        me.irt(wide_frame(Y), "2pl", engine="stan")
