"""Rankings with uncertainty for every comparison result: simultaneous rank intervals (Mogstad,
Romano, Shaikh & Wilhelm 2024), the rank distribution and a compact letter display (multcomp's
insert-absorb).

``rank_intervals(estimates, vcov=...)`` ranks jointly normal estimates (EMMs of an LMM / GLMM,
Bradley-Terry strengths); ``rank_intervals(estimates, draws=...)`` ranks from bootstrap
replicates. ``EMMResult.ranks()``, ``GLMMEMMResult.ranks()`` and
``BootstrapResult.rank_intervals()`` call it. The computation lives in
:mod:`mixedeval._rankings` (beside the layers, so that the resampling results use the same
code); see its docstring for the method and docs/concepts/rankings.md.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from .._rankings import RankIntervals, rank_intervals
from ..engine import _bridge
from ..errors import DataError

__all__ = ["RankIntervals", "rank_intervals"]


def _emm_ranks(emm: Any, *, level: float, higher_is_better: bool, random_state: Any, n_sim: int,
               scale: str) -> RankIntervals:
    """Rank intervals of estimated marginal means from the joint normal of emmeans: the grid's
    estimates on its link scale and ``vcov(grid)`` (R's emmeans, through the engine)."""
    if emm.by:
        raise DataError(f"ranks() ranks all the means of one table; these are grouped by {list(emm.by)}: "
                        f"compute the means without by= (e.g. fit.emmeans({list(emm.specs)!r})) or one group at a time")
    v = _bridge.emm_vcov(emm._grid)  # noqa: SLF001 - the result's own R handle
    t = emm.table
    labels = [":".join(str(x) for x in row) for row in t[list(emm.specs)].itertuples(index=False, name=None)]
    est = pd.Series(v["estimate"], index=labels)
    res = rank_intervals(est, vcov=v["vcov"], level=level, higher_is_better=higher_is_better,
                         method="normal", random_state=random_state, n_sim=n_sim)
    return dataclasses.replace(res, estimate_scale=scale)
