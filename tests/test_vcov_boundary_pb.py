"""The standard errors me.glmm reports at a boundary agree with a parametric bootstrap (issue: validate the
chosen covariance of the fixed effects, ``me_glmm_vcov_check``, against a parametric bootstrap).

CI-sized version of benchmarks/vcov_boundary_pb.py: one boundary design (3 systems x 60 questions x
3 epochs, 0/1 outcomes, item SD 1.5, true system:item variance 0, fitted with
``y ~ system + (1|item) + (1|system:item)``, near the boundary), B = 100
parametric-bootstrap refits done in R (``simulate(m, nsim = B, seed = ...)`` + ``lme4::refit``) of the
same glmer call in the same embedded R session. The SD of B = 100 draws has a relative Monte-Carlo SE
of about 1/sqrt(2B) = 7%; the tolerance is 25% (3.5 MC SEs), and no ratio may be absurd (outside
[0.5, 2]). The check can fail: a standard error 5x too small (the size of the Hessian collapse the
check guards against is far larger, 0.0013 against 0.25) is rejected by the same comparison.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

import mixedeval as me

B = 100
RANDOM_STATE = 20261126
FORMULA = "y ~ system + (1|item) + (1|system:item)"


def _boundary_design(random_state: int, n_items: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(random_state)
    rows = []
    for i in range(n_items):
        u = rng.normal(0, 1.5)
        for s, eff in (("a", 0.0), ("b", 0.5), ("c", 1.0)):
            for e in range(3):  # epochs: repeated trials of the item, no system:item variance
                rows.append((s, f"q{i:02d}", str(e + 1), int(rng.random() < 1 / (1 + np.exp(-(u + eff))))))
    return pd.DataFrame(rows, columns=["system", "item", "epoch", "y"])


def _within(se: np.ndarray, pb_sd: np.ndarray, rtol: float) -> bool:
    ratio = se / pb_sd
    return bool(np.all(np.abs(ratio - 1) <= rtol) and np.all((ratio >= 0.5) & (ratio <= 2)))


def test_reported_se_matches_parametric_bootstrap_at_the_boundary(R):
    import rpy2.robjects as ro

    from mixedeval.engine import convert

    df = _boundary_design(RANDOM_STATE)
    fit = me.glmm(FORMULA, df)
    # Near the boundary: with this seed glmer stops on a flat optimum (system:item SD 0.56 where the truth is 0,
    # degenerate Hessian), me_glmm_vcov_check drops the Hessian and the SEs are the RX-based ones; with other
    # seeds the fit is singular (SD ~1e-4). Either way this is the territory the check is for.
    kinds = {w.kind for w in fit.warnings}
    assert fit.singular or "vcov_unstable" in kinds, kinds
    se = fit.fixed["std_error"].to_numpy()

    ro.globalenv["vpb_d"] = convert.to_r(df)
    R(f"vpb_m <- lme4::glmer({FORMULA}, data = vpb_d, family = binomial)")  # the same call: the same optimum
    np.testing.assert_allclose(fit.fixed["estimate"], R("lme4::fixef(vpb_m)"), rtol=1e-6)
    boot = R(f"""local({{
      ys <- stats::simulate(vpb_m, nsim = {B}, seed = {RANDOM_STATE})
      sapply(ys, function(y) lme4::fixef(suppressWarnings(suppressMessages(lme4::refit(vpb_m, y)))))
    }})""")
    R("rm(vpb_d, vpb_m)")
    assert boot.shape == (3, B) and np.all(np.isfinite(boot))
    pb_sd = boot.std(axis=1, ddof=1)

    sys_terms = fit.fixed["term"].str.startswith("system").to_numpy()
    ratio = se[sys_terms] / pb_sd[sys_terms]
    assert _within(se[sys_terms], pb_sd[sys_terms], rtol=0.25), ratio
    assert _within(se, pb_sd, rtol=0.25), se / pb_sd  # the intercept too
    # the comparison has teeth: a standard error 5x too small (or 5x too large) fails it
    assert not _within(se[sys_terms] / 5, pb_sd[sys_terms], rtol=0.25)
    assert not _within(se[sys_terms] * 5, pb_sd[sys_terms], rtol=0.25)
