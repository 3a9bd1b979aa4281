"""Shared fixtures. Expected values of R-computed quantities are computed here by R itself
(independent R code reading the bundled files with read.csv), never copied from our output."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

DATA_DIR = Path(__file__).resolve().parents[1] / "mixedeval" / "datasets_files"


def _r():
    from mixedeval.engine import session

    session._start()  # same embedded R; starts it if needed
    import rpy2.robjects as ro

    return ro


@pytest.fixture(scope="session")
def R():
    """Evaluate R code and return a numpy array (or the raw rpy2 object with raw=True).

    Example: ``R('fixef(lme4::lmer(ter ~ system + (1|sentence_id), data = ter_df))')``.
    """
    ro = _r()
    ro.r(
        f"""
        ter_df <- read.csv("{DATA_DIR / 'kreutzer_ter.csv'}", colClasses = c(sentence_id = "character",
                           system = "character", replication = "character"))
        ter_df$sentence_id <- factor(ter_df$sentence_id, levels = sort(unique(ter_df$sentence_id), method = "radix"))
        ter_df$system <- factor(ter_df$system, levels = sort(unique(ter_df$system), method = "radix"))
        ter_df$replication <- factor(ter_df$replication)
        ann_df <- read.csv("{DATA_DIR / 'kreutzer_annotation.csv'}", colClasses = c(mode = "character",
                           occasion = "character", sentence = "character", rater = "character"))
        for (v in c("mode", "occasion", "sentence", "rater"))
          ann_df[[v]] <- factor(ann_df[[v]], levels = sort(unique(ann_df[[v]]), method = "radix"))
        """
    )

    def run(code: str, raw: bool = False):
        out = ro.r(code)
        if raw:
            return out
        try:
            return np.array(out, copy=True)
        except Exception:  # noqa: BLE001
            return out

    return run


@pytest.fixture(scope="session")
def ter():
    import mixedeval as me

    return me.datasets.load("kreutzer_ter")


@pytest.fixture(scope="session")
def annotation():
    import mixedeval as me

    return me.datasets.load("kreutzer_annotation")


def assert_rel(actual, expected, rtol=1e-8, atol=0.0):
    """Relative closeness with NaN==NaN and inf==inf."""
    a = np.asarray(actual, dtype=float)
    e = np.asarray(expected, dtype=float)
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)


OPTIMIZER_RTOL = 1e-6
"""Relative tolerance for theta (and standard deviations, fixed effects, predictions) of two optimizer
runs that take different paths to the same optimum: other start values, another contrast coding,
another optimizer, a row order or a refit path (``refitML`` vs a fresh ML fit). lme4's default
optimizer (nloptwrap: ``ftol_abs = xtol_abs = 1e-8``) stops anywhere within its tolerance, and where
exactly depends on rounding, so the same comparison gave 1e-12 on one machine and 1.1e-8 on another.
Perturbing the start values by 1e-12..1e-4 moved theta of the Kreutzer TER model by up to 3.6e-7.
Variances, sums of squares and F are quadratic in theta: use ``2 * OPTIMIZER_RTOL`` for them.
Quantities R computes deterministically from *one* fit (SEs, df, F, p, EMMs, contrasts, ...) keep
``assert_rel``'s default 1e-8, and so do comparisons of two fits that get identical input (ours and
the R fit written in the test): they follow the same path on any machine."""
