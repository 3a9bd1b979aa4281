"""The grouping variable of the categorical residual tests, validated (used by :mod:`.core`,
:mod:`.simtests` and the plots; a module of its own below them)."""
from __future__ import annotations

from typing import Any

import pandas as pd

from ..errors import DataError


def as_group(group: Any, n: int, label: str = "group"):
    """A grouping variable as a pandas Categorical without unused levels (levels of a Categorical
    keep their order, other values are sorted); missing values or a wrong length raise DataError."""
    if group is None:
        return None
    values = group.array if isinstance(group, (pd.Series, pd.Index)) else group
    cat = values if isinstance(values, pd.Categorical) else pd.Categorical(values)
    if len(cat) != n:
        raise DataError(f"grouping variable `{label}` has {len(cat)} values but there are {n} observations.")
    if cat.isna().any():
        raise DataError(
            f"grouping variable `{label}` has {int(cat.isna().sum())} missing values; fill or drop them "
            "(the same rows must be dropped from the simulations)."
        )
    return cat.remove_unused_categories()
