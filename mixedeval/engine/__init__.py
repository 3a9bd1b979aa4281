"""R bridge: one lazily started R session, the R helper library in ``r/`` (sourced into its own
R environment), column-wise conversion, warnings/messages/errors as data, one table of R column
names (:mod:`.names`), one classifier of R's warnings (:mod:`.conditions`) and one typed Python
wrapper per R helper (:mod:`._bridge`). Nothing above this layer touches rpy2."""
from __future__ import annotations

from ._bridge import versions
from .session import RCallResult, call, lock, r_available

__all__ = ["RCallResult", "call", "lock", "r_available", "versions"]
