"""When a progress bar is drawn: asked for, and somewhere it can redraw itself.

A tqdm bar redraws one line with carriage returns; written to a file or a pipe (a CI log, ``2>
log.txt``) every redraw stays, and a bar closed with ``leave=False`` still leaves its blanked
line. So a bar is drawn only on a terminal or in a notebook (tqdm.auto's widget), unless
``MIXEDEVAL_PROGRESS=always``; ``MIXEDEVAL_QUIET`` turns every bar off.
"""
from __future__ import annotations

import os
import sys


def bar_disabled(progress: object) -> bool:
    """The ``disable=`` of a tqdm bar: True when ``progress`` is false, when ``MIXEDEVAL_QUIET`` is
    set, or when stderr is neither a terminal nor a notebook's output (unless
    ``MIXEDEVAL_PROGRESS=always``)."""
    if not progress or os.environ.get("MIXEDEVAL_QUIET"):
        return True
    if os.environ.get("MIXEDEVAL_PROGRESS", "").lower() == "always":
        return False
    if "ipykernel" in sys.modules:  # a notebook: tqdm.auto draws a widget
        return False
    try:
        return not sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stderr
        return True
