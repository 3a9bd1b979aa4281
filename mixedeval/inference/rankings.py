"""Rankings with uncertainty for every comparison result: simultaneous rank intervals (Mogstad,
Romano, Shaikh & Wilhelm 2024), the rank distribution and a compact letter display (multcomp's
insert-absorb).

``rank_intervals(estimates, vcov=...)`` ranks jointly normal estimates (EMMs of an LMM / GLMM,
Bradley-Terry strengths); ``rank_intervals(estimates, draws=...)`` ranks from bootstrap
replicates. ``EMMResult.ranks()`` and ``BootstrapResult.rank_intervals()`` call it. The
computation lives in :mod:`mixedeval._rankings` (beside the layers, so that the resampling
results use the same code); see its docstring for the method and docs/concepts/rankings.md.
"""
from __future__ import annotations

from .._rankings import RankIntervals, rank_intervals

__all__ = ["RankIntervals", "rank_intervals"]
