"""Corpus-level metrics from per-sentence sufficient statistics (DESIGN rule 7: recomputed from
resampled sums, never averaged).

:func:`sentence_stats` computes the per-sentence statistics of BLEU or chrF with sacrebleu
(the optional extra ``mixedeval[metrics]``); ``statistic="bleu"`` / ``"chrf"`` of
:func:`mixedeval.bootstrap`, :func:`mixedeval.paired_bootstrap_test` and
:func:`mixedeval.approximate_randomization` turn their (resampled) column sums into the corpus
score with sacrebleu's formulas (:func:`bleu_from_sums`, :func:`chrf_from_sums`), vectorized
over replicates. Counts-based statistics (accuracy, exact match, precision / recall / F1, micro
and macro) are listed in :data:`STATISTICS`.

Example::

    stats_a = me.metrics.sentence_stats(hyps_a, refs, metric="bleu")   # DataFrame, one row per sentence
    stats_b = me.metrics.sentence_stats(hyps_b, refs, metric="bleu")
    me.approximate_randomization(stats_a, stats_b, statistic="bleu", random_state=0)
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ._stats import (
    STATISTICS,
    bleu_from_sums,
    chrf_from_sums,
    f1_from_counts,
    precision_from_counts,
    recall_from_counts,
)

_INSTALL = ("me.metrics.sentence_stats computes n-gram statistics with sacrebleu, an optional dependency: "
            "pip install 'mixedeval[metrics]' (or pip install sacrebleu)")
BLEU_OPTIONS = ("tokenize", "lowercase", "max_ngram_order")
CHRF_OPTIONS = ("word_order", "lowercase", "whitespace")


def _metric_object(metric: str, options: dict[str, Any]):
    try:
        from sacrebleu.metrics import BLEU, CHRF  # noqa: PLC0415 - optional dependency, imported when used
    except ImportError as exc:
        raise DataError(_INSTALL) from exc
    allowed = BLEU_OPTIONS if metric == "bleu" else CHRF_OPTIONS
    bad = [k for k in options if k not in allowed]
    if bad:
        raise DataError(
            f"option(s) {bad} are not supported for metric={metric!r}: the statistics must be those "
            f"statistic={metric!r} turns into the corpus score (allowed: {', '.join(allowed)}; chrF uses "
            "char_order 6 and beta 2, BLEU sacrebleu's exp smoothing)"
        )
    return BLEU(**options) if metric == "bleu" else CHRF(**options)


def _columns(metric: str, obj: Any) -> list[str]:
    if metric == "bleu":
        n = obj.max_ngram_order
        return ["sys_len", "ref_len", *[f"correct_{k}" for k in range(1, n + 1)],
                *[f"total_{k}" for k in range(1, n + 1)]]
    cols = []
    for kind, order in (("char", obj.char_order), ("word", obj.word_order)):
        for k in range(1, order + 1):
            cols += [f"{kind}{k}_hyp", f"{kind}{k}_ref", f"{kind}{k}_match"]
    return cols


def _reference_streams(references: Any, n: int) -> list[list[str]]:
    """sacrebleu's reference layout: a list of streams, each with one reference per sentence."""
    if isinstance(references, str) or not isinstance(references, Sequence) and not hasattr(references, "__iter__"):
        raise DataError("references must be a list of reference strings (one per hypothesis) or a list of such "
                        "lists (several references per sentence)")
    refs = list(references)
    if refs and all(isinstance(r, str) for r in refs):
        refs = [refs]
    streams = [list(s) for s in refs]
    for i, s in enumerate(streams):
        if len(s) != n or not all(isinstance(r, str) for r in s):
            raise DataError(f"reference stream {i} has {len(s)} entries for {n} hypotheses (or non-strings); every "
                            "stream needs one reference string per hypothesis")
    return streams


def sentence_stats(hypotheses: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]],
                   metric: str = "bleu", **options: Any) -> pd.DataFrame:
    """Per-sentence sufficient statistics of corpus BLEU or chrF, computed by sacrebleu.

    ``hypotheses``: one system output per sentence; ``references``: one reference per sentence,
    or a list of reference streams (several references per sentence). ``metric="bleu"``:
    columns sys_len, ref_len, correct_1..N, total_1..N (``sacrebleu.metrics.BLEU``, options
    ``tokenize``, ``lowercase``, ``max_ngram_order``); ``"chrf"``: (hyp, ref, match) counts per
    character order 1..6, then per word order (``sacrebleu.metrics.CHRF``, options
    ``word_order`` (2 for chrF++), ``lowercase``, ``whitespace``). The statistics are the ones
    sacrebleu sums for ``corpus_score``, so ``statistic="bleu"`` / ``"chrf"`` of the column sums
    equals ``sacrebleu.corpus_bleu`` / ``corpus_chrf`` on the same corpus.

    Returns a DataFrame with one row per sentence (pass it, or its ``.to_numpy()``, as the x / y
    of the paired tests, or its columns as ``score=`` of :func:`mixedeval.bootstrap`).
    """
    if metric not in ("bleu", "chrf"):
        raise DataError(f"metric must be 'bleu' or 'chrf'; got {metric!r}")
    if isinstance(hypotheses, str) or not all(isinstance(h, str) for h in hypotheses):
        raise DataError("hypotheses must be a list of strings, one system output per sentence")
    hyps = list(hypotheses)
    if not hyps:
        raise DataError("hypotheses is empty")
    obj = _metric_object(metric, options)
    streams = _reference_streams(references, len(hyps))
    stats = obj._extract_corpus_statistics(hyps, streams)  # noqa: SLF001 - sacrebleu's per-sentence statistics
    return pd.DataFrame(np.asarray(stats, dtype=np.int64), columns=_columns(metric, obj))


__all__ = ["STATISTICS", "bleu_from_sums", "chrf_from_sums", "f1_from_counts", "precision_from_counts",
           "recall_from_counts", "sentence_stats"]
