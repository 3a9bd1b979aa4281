"""The one table of R's column labels mapped to mixedeval's stable snake_case column names.

R packages rename their output columns between versions (lme4's likelihood-ratio table had
``Df`` for the number of parameters and ``Chi Df`` for the test's df; it now has ``npar`` and
``Df``). Every R-to-mixedeval column name lives here, one dict per R function, so a change
in R touches this module only. The R helpers (``r/*.R``) return R's own labels; the wrappers
of :mod:`mixedeval.engine._bridge` apply these dicts, so nothing above the engine sees an R
label. Columns not listed keep their name (the helpers give computed columns, such as the
labels ``term`` or ``model``, their mixedeval names directly).

The test-statistic column is named after the statistic's reference distribution (the rule of
every mixedeval table): ``t_value`` (t with finite df), ``z_value`` (standard normal: the
asymptotic df method, df = Inf), ``f_value`` (F) and ``chisq`` (chi-square). A table whose
rows are tests with different reference distributions (pbkrtest's PBmodcomp: LRT, PBtest,
Gamma, Bartlett, F) has ``statistic`` beside the ``test`` column that names each row's test.
"""
from __future__ import annotations

from typing import Any

#: summary(m, ddf = ...)$coefficients of lmerTest (t tests; z tests for the asymptotic df
#: method, labelled as lme4 labels z tests), with the Wald interval bounds ``lower``/``upper``
#: the helper adds (as lmerTest's contest() labels them)
COEFFICIENTS: dict[str, str] = {
    "Estimate": "estimate",
    "Std. Error": "std_error",
    "df": "df",
    "t value": "t_value",
    "z value": "z_value",
    "Pr(>|t|)": "p_value",
    "Pr(>|z|)": "p_value",
    "lower": "conf_low",
    "upper": "conf_high",
}

#: as.data.frame(lme4::VarCorr(m), order = "lower.tri"); ``sdcor`` is split by the bridge into
#: ``std_dev`` (variance rows) and ``corr`` (covariance rows, where ``var2`` is set)
VARCORR: dict[str, str] = {
    "grp": "group",
    "var1": "term",
    "var2": "term2",
    "vcov": "variance",
}

#: lmerTest::anova(m, type =, ddf =) (single-model F tests)
ANOVA: dict[str, str] = {
    "Sum Sq": "sum_sq",
    "Mean Sq": "mean_sq",
    "NumDF": "num_df",
    "DenDF": "den_df",
    "F value": "f_value",
    "Pr(>F)": "p_value",
}

#: effectsize::F_to_eta2 / eta_squared(partial = TRUE)
ETA2_PARTIAL: dict[str, str] = {
    "Eta2_partial": "eta2_partial",
    "CI_low": "eta2_partial_ci_low",
    "CI_high": "eta2_partial_ci_high",
}

#: lme4's anova(m0, m1, ...) likelihood-ratio table (current names)
LRT: dict[str, str] = {
    "npar": "npar",
    "AIC": "aic",
    "BIC": "bic",
    "logLik": "loglik",
    "deviance": "deviance",
    "Chisq": "chisq",
    "Df": "df",
    "Pr(>Chisq)": "p_value",
}

#: older lme4 versions: ``Df`` was the number of parameters and ``Chi Df`` the test's df; used
#: instead of the matching LRT entries when a ``Chi Df`` column is present
LRT_LEGACY: dict[str, str] = {"Df": "npar", "Chi Df": "df"}

#: summary(pbkrtest::PBmodcomp(...))$test (rows: LRT, PBtest, Gamma, Bartlett, F)
PBMODCOMP: dict[str, str] = {"stat": "statistic", "df": "df", "ddf": "ddf", "p.value": "p_value"}

#: summary() of an emmGrid from emmeans::emmeans / emtrends / contrast. The estimate column is
#: named by emmeans' ``estName`` attribute (``emmean``, ``estimate``, ``<var>.trend``): the
#: inference layer names it (``emmean``, ``trend``, ``estimate``)
EMMEANS: dict[str, str] = {
    "SE": "std_error",
    "df": "df",
    "lower.CL": "conf_low",
    "upper.CL": "conf_high",
    "asymp.LCL": "conf_low",
    "asymp.UCL": "conf_high",
    "t.ratio": "t_value",
    "z.ratio": "z_value",
    "p.value": "p_value",
}

#: summary(emmeans::eff_size(grid, sigma = sigma(m), edf = df.residual(m), ...)): the effect
#: size and its (unadjusted) interval, as columns beside the contrasts
EFF_SIZE: dict[str, str] = {
    "effect.size": "effect_size",
    "SE": "effect_size_std_error",
    "df": "effect_size_df",
    "lower.CL": "effect_size_conf_low",
    "upper.CL": "effect_size_conf_high",
    "asymp.LCL": "effect_size_conf_low",
    "asymp.UCL": "effect_size_conf_high",
}


#: likelihood-ratio tests between clmm fits (``me_clmm_compare``, laid out as ordinal's
#: ``anova(m0, m1)`` labels them)
CLMM_LRT: dict[str, str] = {
    "no.par": "npar",
    "AIC": "aic",
    "BIC": "bic",
    "logLik": "loglik",
    "LR.stat": "chisq",
    "df": "df",
    "Pr(>Chisq)": "p_value",
}

#: car::Anova(m, type = 3) of a GLMM (Wald chi-square tests)
WALD_CHISQ: dict[str, str] = {"Chisq": "chisq", "Df": "df", "Pr(>Chisq)": "p_value"}


def rename(frame: Any, mapping: dict[str, str], legacy: dict[str, str] | None = None):
    """``frame`` with R's column names replaced by ours.

    The frame is one the engine has just converted from R (nobody else holds it), so its column
    labels are replaced in place (``DataFrame.rename`` would copy every column: about a
    millisecond per table, on every R call). ``legacy`` entries override ``mapping`` when any
    legacy-only name (one that is not a key of ``mapping``) is among the columns.
    """
    cols = [str(c) for c in frame.columns]
    if legacy and any(k in cols and k not in mapping for k in legacy):
        mapping = {**mapping, **legacy}
    frame.columns = [mapping.get(c, c) for c in cols]
    return frame
