"""Names of the denominator-df methods and optimizers accepted by the model functions, and their
normalization (a module of its own so that :mod:`._lmm` and the modules it delegates to --
:mod:`.anova`, :mod:`.emmeans`, :mod:`.optimizers` -- import it without an import cycle)."""
from __future__ import annotations

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
