"""Names of the denominator-df methods, optimizers and GLMM families accepted by the model
functions, and their normalization. Standard library only, below every model family: the
families, the modules they delegate to (:mod:`.anova`, :mod:`.emmeans`, :mod:`.optimizers`,
:mod:`._glmm_infer`) and the command line (its ``--family`` / ``--optimizer`` choices) import it
without importing each other."""
from __future__ import annotations

from typing import Any

from ..errors import DataError

DF_METHODS = {"satterthwaite": "Satterthwaite", "kenward-roger": "Kenward-Roger", "asymptotic": "asymptotic"}
OPTIMIZERS = ("nloptwrap", "bobyqa", "Nelder_Mead")
_OPTIMIZER_ALIASES = {"nelder-mead": "Nelder_Mead", "nelder_mead": "Nelder_Mead", "neldermead": "Nelder_Mead"}


def normalize_df_method(df_method: str) -> str:
    key = str(df_method).lower().replace("_", "-").replace(" ", "-")
    key = {"kr": "kenward-roger", "kenwardroger": "kenward-roger", "satt": "satterthwaite", "z": "asymptotic",
           "inf": "asymptotic", "none": "asymptotic"}.get(key, key)
    if key not in DF_METHODS:
        raise DataError(f"df_method {df_method!r} is not one of {', '.join(DF_METHODS)}")
    return key


def normalize_optimizer(optimizer: str) -> str:
    opt = _OPTIMIZER_ALIASES.get(str(optimizer).lower(), optimizer)
    if opt not in OPTIMIZERS:
        raise DataError(f"optimizer {optimizer!r} is not one of {', '.join(OPTIMIZERS)} (lme4's lmerControl names)")
    return opt


# ------------------------------------------------------------------ GLMM families and optimizers
#: family name -> the R function that fits it
FAMILIES = {
    "binomial": "lme4::glmer",
    "poisson": "lme4::glmer",
    "negative_binomial": "lme4::glmer.nb",
    "beta": "glmmTMB::glmmTMB",
    "betabinomial": "glmmTMB::glmmTMB",
}
#: lme4 optimizers for glmer / glmer.nb (one name: both stages); check_optimizers' default set
GLMM_OPTIMIZERS = ("bobyqa", "Nelder_Mead", "nloptwrap")
#: every optimizer name glmerControl accepts without extra packages
LME4_OPTIMIZERS = ("bobyqa", "Nelder_Mead", "nloptwrap", "nlminbwrap")
#: glmer's own default (glmerControl()$optimizer in lme4 1.1): bobyqa, then Nelder-Mead
DEFAULT_GLMM_OPTIMIZER = "bobyqa+Nelder_Mead"


def _one_optimizer(name: Any, given: Any) -> str:
    low = str(name).strip().lower().replace("-", "_")
    opt = {"nelder_mead": "Nelder_Mead", "neldermead": "Nelder_Mead"}.get(low, str(name).strip())
    if opt not in LME4_OPTIMIZERS:
        raise DataError(f"optimizer {given!r} is not one of {', '.join(LME4_OPTIMIZERS)} or a pair of them (lme4's "
                        "glmerControl names; a pair sets glmer's two stages, e.g. ('bobyqa', 'Nelder_Mead'))")
    return opt


def normalize_glmm_optimizer(optimizer: Any) -> str:
    """mixedeval's name of a glmer optimizer: None -> lme4's default ``"bobyqa+Nelder_Mead"``; a
    name -> that name (both stages); a pair or ``"a+b"`` -> ``"a+b"`` (stage 1, stage 2)."""
    if optimizer is None:
        return DEFAULT_GLMM_OPTIMIZER
    parts = list(optimizer) if isinstance(optimizer, (list, tuple)) else str(optimizer).split("+")
    if not 1 <= len(parts) <= 2:
        raise DataError(f"optimizer {optimizer!r}: give one optimizer name or a pair (stage 1, stage 2)")
    names = [_one_optimizer(p, optimizer) for p in parts]
    if len(names) == 2 and names[0] == names[1]:
        names = names[:1]
    return "+".join(names)
