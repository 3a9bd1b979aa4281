"""R's column labels mapped to mixedeval's stable snake_case column names.

R packages rename their output columns between versions (lme4's likelihood-ratio table had
``Df`` for the number of parameters and ``Chi Df`` for the test's df; it now has ``npar`` and
``Df``). Every R-to-mixedeval column name lives here, one dict per R function, so a change
in R touches this module only. Columns not listed keep R's name.
"""
from __future__ import annotations

from typing import Any

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

#: summary(pbkrtest::PBmodcomp(...))$test
PBMODCOMP: dict[str, str] = {"stat": "stat", "df": "df", "ddf": "ddf", "p.value": "p_value"}


def rename(frame: Any, mapping: dict[str, str], legacy: dict[str, str] | None = None):
    """``frame`` with R's column names replaced by ours (a new DataFrame).

    ``legacy`` entries override ``mapping`` when any legacy-only name (one that is not a key
    of ``mapping``) is among the columns.
    """
    cols = set(map(str, frame.columns))
    if legacy and any(k in cols and k not in mapping for k in legacy):
        mapping = {**mapping, **legacy}
    return frame.rename(columns={c: mapping[c] for c in frame.columns if c in mapping})
