"""What goes into a resampling function and what its result records: argument checks (level,
number of resamples, choices, alternative, p-value convention, ddof), label columns without
missing values, the memory guard of simulated draws, and provenance.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import mixedeval

from .. import _resources as res
from ..data.validate import require_level
from ..errors import DataError
from ._stats import P_CONVENTIONS

ALTERNATIVES = ("two-sided", "greater", "less")


# ---------------------------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------------------------

def check_level(level: Any) -> float:
    """A confidence level strictly between 0 and 1 (the package's one check, in the data layer)."""
    return require_level(level)


def check_n_resamples(n_resamples: Any, minimum: int = 2) -> int:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise DataError(f"n_resamples must be {what}, got {n_resamples!r}")
    return int(n_resamples)


def check_choice(value: Any, name: str, allowed: Sequence[Any]) -> Any:
    if not any(value is a or (isinstance(value, str) and value == a) for a in allowed):
        raise DataError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {value!r}")
    return value


def check_alternative(alternative: Any) -> str:
    if alternative not in ALTERNATIVES:
        raise DataError(f"alternative must be 'two-sided', 'greater' or 'less'; got {alternative!r}")
    return alternative


def check_p_convention(convention: Any) -> str:
    if convention not in P_CONVENTIONS:
        raise DataError(f"p_value_convention must be 'plus_one' ((c+1)/(B+1)) or 'c_over_b' (c/B); "
                        f"got {convention!r}")
    return convention


def check_ddof(ddof: Any) -> int:
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise DataError(f"ddof must be a non-negative integer (1 = sample SD, 0 = population SD), got {ddof!r}")
    return int(ddof)


def check_positive(value: Any, name: str, hint: str = "") -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = np.nan
    if isinstance(value, bool) or not (np.isfinite(v) and v > 0):
        raise DataError(f"{name} must be a positive number{hint}, got {value!r}")
    return v


# ---------------------------------------------------------------------------------------------
# label columns
# ---------------------------------------------------------------------------------------------

def check_labels(df: Any, columns: Sequence[str]) -> None:
    """Label columns (systems, items, runs, languages, ...) may not have missing values."""
    for c in columns:
        miss = df[c].isna()
        if miss.any():
            rows = [str(i) for i in df.index[miss]]
            shown = ", ".join(rows[:5]) + (f", ... ({len(rows) - 5} more)" if len(rows) > 5 else "")
            raise DataError(f"column {c!r} has {len(rows)} missing values in rows {shown}; drop those rows or fill "
                            f"in the {c!r} label")


# ---------------------------------------------------------------------------------------------
# memory of simulated draws
# ---------------------------------------------------------------------------------------------

def check_draw_memory(what: str, kept: float, work: float, batch: float, B: int, shape: str, fix: str) -> None:
    """DataError before anything is drawn when ``kept`` (arrays kept in the result) + the larger
    of ``work`` (working copies of the summaries) and ``batch`` (temporaries of one batch of
    rows of a block) exceed mixedeval's memory limit. ``chunk_size`` does not enter: the draws
    are made block by block whatever it is."""
    res.check_memory(
        kept + max(work, batch), what, fix,
        detail=(f"n_resamples={res.format_count(B)}{' x ' + shape if shape else ''} x 8 bytes = "
                f"{res.format_bytes(kept)} kept in the result, plus {res.format_bytes(work)} of working copies for "
                f"the summaries or {res.format_bytes(batch)} for the temporaries of one block of resamples, "
                f"whichever is larger"),
    )


# ---------------------------------------------------------------------------------------------
# provenance
# ---------------------------------------------------------------------------------------------

def seed_record(ss: np.random.SeedSequence | None) -> Any:
    """What to store in provenance to reproduce the run (the SeedSequence entropy; with its
    spawn key when it was a child)."""
    if ss is None:
        return None
    return ss.entropy if not ss.spawn_key else {"entropy": ss.entropy, "spawn_key": list(ss.spawn_key)}


def provenance(method: str, ss: np.random.SeedSequence | None, **extra: Any) -> dict[str, Any]:
    """Versions, the method, the seed that reproduces the draws (``random_state``: the
    SeedSequence entropy, equal to the int given) and the settings in ``extra``."""
    return {"mixedeval": mixedeval.__version__, "numpy": np.__version__, "method": method,
            "random_state": seed_record(ss), **extra}
