"""The one classifier of R's warnings and messages.

Every R helper runs inside ``me_call`` (``r/engine.R``), which captures the warnings and
messages R raised; :func:`r_warnings` turns them into :class:`mixedeval.results.ResultWarning`
objects with a ``kind`` from :data:`RULES` (first matching rule wins; text compared
case-insensitively after collapsing white space):

=========  =============================================  ==================
condition  text contains                                  kind
=========  =============================================  ==================
message    ``d.f. calculations have been disabled``       ``df_fallback``
message    ``adjust`` ... ``was changed to``              ``adjust_changed``
message    ``refitting model(s) with ML``                 ``refit_ml``
message    ``singular``                                   ``singular``
warning    ``converge``                                   ``convergence``
warning    (anything else)                                ``r_warning``
message    (anything else)                                ``r_message``
=========  =============================================  ==================

(emmeans' notes that it disabled the df calculation or changed an adjustment method; lme4's
note that it refits REML models by ML for ``anova``; lme4's "boundary (singular) fit" note;
lme4's and the optimizers' convergence warnings.) Identical warnings are kept once.
"""
from __future__ import annotations

import re
from typing import Any

from ..results import ResultWarning

#: (condition, pattern, kind): condition is "warning", "message" or "any"
RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("message", re.compile(r"d\.f\. calculations have been disabled"), "df_fallback"),
    ("message", re.compile(r"\badjust\b.*\bwas changed to\b"), "adjust_changed"),
    ("message", re.compile(r"refitting model\(s\) with ml"), "refit_ml"),
    ("message", re.compile(r"singular"), "singular"),
    ("warning", re.compile(r"converge"), "convergence"),
)
_FALLBACK = {"warning": "r_warning", "message": "r_message"}


def normalize(text: str) -> str:
    """R's condition text on one line (R wraps long messages)."""
    return " ".join(str(text).split())


def classify(text: str, condition: str = "warning") -> str:
    """The ``kind`` of one R warning (``condition="warning"``) or message (``"message"``)."""
    if condition not in _FALLBACK:
        raise ValueError(f"condition must be 'warning' or 'message', not {condition!r}")
    low = normalize(text).lower()
    for cond, pattern, kind in RULES:
        if cond in (condition, "any") and pattern.search(low):
            return kind
    return _FALLBACK[condition]


def r_warnings(res: Any, source: str = "R") -> list[ResultWarning]:
    """The warnings and messages captured by one R call (an :class:`RCallResult`, or anything
    with ``warnings`` and ``messages`` sequences of strings) as classified
    :class:`ResultWarning` objects attributed to ``source``."""
    out: list[ResultWarning] = []
    for condition, texts in (("warning", getattr(res, "warnings", ())), ("message", getattr(res, "messages", ()))):
        for text in texts or ():
            w = ResultWarning(classify(text, condition), normalize(text), source)
            if w not in out:
                out.append(w)
    return out
