"""R bridge: one lazily started R session, the R helper library in ``r/``, column-wise
conversion, and warnings/messages/errors as data. Nothing above this layer touches rpy2."""
from __future__ import annotations

from .session import RCallResult, call, lock, r_available, versions

__all__ = ["RCallResult", "call", "lock", "r_available", "versions"]
