"""Resampling in vectorized numpy (no R): hierarchical paired bootstrap, paired significance
tests, rank distributions, multilingual leaderboard variance decomposition and simulation,
and intervals for multiple stochastic runs.

Names are resolved lazily so that importing this package stays cheap.
"""
from __future__ import annotations

_LAZY: dict[str, str] = {
    # hierarchical paired bootstrap (mixedeval/resampling/_bootstrap.py)
    "bootstrap": "_bootstrap",
    "BootstrapResult": "_bootstrap",
    # paired two-system tests (mixedeval/resampling/paired_tests.py)
    "paired_bootstrap_test": "paired_tests",
    "approximate_randomization": "paired_tests",
    "sign_flip_test": "paired_tests",
    "PairedTestResult": "paired_tests",
    # multilingual leaderboards, Saleva, Ataman & Lignos 2025 (mixedeval/resampling/leaderboard.py)
    "decompose_variance": "leaderboard",
    "decompose_variance_summary": "leaderboard",
    "simulate_leaderboard": "leaderboard",
    "LeaderboardResult": "leaderboard",
    "VarianceDecomposition": "leaderboard",
    # multiple stochastic runs, Fraile-Hernandez & Penas 2025 (mixedeval/resampling/runs.py)
    "run_intervals": "runs",
    "pooled_run_bootstrap": "runs",
    "RunIntervalsResult": "runs",
    "PooledRunBootstrapResult": "runs",
}

from .. import _lazy  # noqa: E402

_lazy.install(__name__, {name: (f".{mod}", name) for name, mod in _LAZY.items()})
