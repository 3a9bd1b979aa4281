"""``random_state``: the one parameter for randomness (glossary in the README, "Conventions").

Every function that draws takes ``random_state``: None (fresh entropy), a non-negative int, a
``numpy.random.SeedSequence`` or a ``numpy.random.Generator``. Numpy draws derive one
``SeedSequence`` from it (:func:`seed_sequence`). Where R draws (lme4 ``simulate``, pbkrtest's
``PBmodcomp``, emmeans' ``mvt`` adjustment), an int is R's ``set.seed`` value exactly, and a
``SeedSequence``/``Generator`` is turned into one reproducible int (:func:`r_seed`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import DataError

_R_SEED_MAX = 2**31 - 1  # set.seed takes a 32-bit signed integer


def _bad(random_state: Any) -> DataError:
    return DataError(f"random_state must be None, a non-negative int, a numpy.random.SeedSequence or a "
                     f"numpy.random.Generator, not {random_state!r}")


def seed_sequence(random_state: Any):
    """One ``numpy.random.SeedSequence`` from ``random_state`` (a Generator is advanced)."""
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(random_state.integers(0, 2**63 - 1, size=4, dtype=np.int64).tolist())
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) or random_state < 0:
        raise _bad(random_state)
    return np.random.SeedSequence(int(random_state))


def as_generator(random_state: Any):
    """``numpy.random.Generator`` for ``random_state`` (a Generator is returned as it is)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(seed_sequence(random_state))


def r_seed(random_state: Any) -> int:
    """The integer R's ``set.seed`` receives: an int as it is (so ``random_state=1`` equals
    ``set.seed(1)`` in R); otherwise one int drawn from the SeedSequence/Generator (None: fresh)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if not 0 <= int(random_state) <= _R_SEED_MAX:
            raise DataError(f"random_state {random_state!r} is outside R's set.seed range 0..{_R_SEED_MAX}")
        return int(random_state)
    ss = seed_sequence(random_state)
    return int(ss.generate_state(1, dtype=np.uint32)[0] % _R_SEED_MAX)
