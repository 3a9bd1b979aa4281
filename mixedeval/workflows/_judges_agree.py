"""Agreement of a judge with people (placeholder, filled below)."""
from __future__ import annotations


def agreement_of(p, **kw):
    raise NotImplementedError
