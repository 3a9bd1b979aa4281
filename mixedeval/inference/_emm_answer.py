"""The one answer of a table of estimated marginal means (:class:`mixedeval.EMMResult` of an LMM,
:class:`mixedeval.inference._glmm_infer.GLMMEMMResult` of a GLMM): the means best first, the best
against the runner-up, every mean against the best, in :mod:`mixedeval._answer`'s terms.

A mixin (no instance state) of both result classes: it reads the result's ``table``,
``specs``, ``by``, ``level``, ``kind`` and R handles through the functions of
:mod:`mixedeval.inference.rankings`; a class says which contrast tables its headline and its
differences come from (:meth:`EMMAnswer._headline_contrasts`,
:meth:`EMMAnswer._difference_contrasts`).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

from .._answer import Answer, AnswerMixin, check_higher_is_better
from ..errors import DataError


def with_direction(res: Any, higher_is_better: Any) -> Any:
    """``res`` (means of a fit) with the score's direction declared once (its
    ``higher_is_better`` field, which :meth:`EMMAnswer.leaderboard`, :meth:`EMMAnswer.headline`,
    the report and the command line then follow); None leaves the direction to the response's
    name. Means that do not rank (an ordinal model's) refuse a declared direction."""
    if higher_is_better is None:
        return res
    hib = check_higher_is_better(higher_is_better)
    if "higher_is_better" not in getattr(type(res), "__dataclass_fields__", {}):
        raise DataError(f"higher_is_better does not apply to {type(res).__name__} (these means are not ranked)")
    return dataclasses.replace(res, higher_is_better=hib)


class EMMAnswer(AnswerMixin):
    """The one answer of a table of means: ``answer`` (:class:`mixedeval._answer.Answer`,
    computed once with the defaults: the direction declared with the means or taken from the
    response's name, no reference; None for means grouped ``by=``, which are not ranked together)
    and its views ``p_value``, ``checks`` (None: no second analysis), ``direction``; and, as
    methods taking the arguments of another question, ``leaderboard()``, ``headline()``,
    ``differences()``, ``headline_text()`` (with no arguments, the answer's)."""

    _no_headline_text = "a single mean: nothing to compare"
    _answer_priority = 45

    def _headline_contrasts(self) -> Any:
        """The pairwise contrast table the answer is read from, in emmeans' order (None: the
        unadjusted pairwise contrasts of the means, ``emm.contrasts(adjust="none")``)."""
        return None

    @functools.cached_property
    def answer(self) -> Answer | None:  # type: ignore[override]
        """The answer with the defaults (None for means grouped ``by=``)."""
        if getattr(self, "by", ()):
            return None
        return self._answer_for()

    def _answer_for(self, higher_is_better: bool | None = None, reference: Any = None, level: float | None = None,
                    random_state: Any = None) -> Answer:
        from .rankings import emm_answer  # noqa: PLC0415 - rankings imports the engine only when ranking

        return emm_answer(self, higher_is_better=higher_is_better, reference=reference, level=level,
                          random_state=random_state, contrasts=self._headline_contrasts())

    def _asked(self, higher_is_better: Any = None, reference: Any = None, level: Any = None,
               random_state: Any = None) -> Answer:
        """The default answer, or the answer of another question (direction, reference, level)."""
        if higher_is_better is None and reference is None and level is None and random_state is None \
                and not getattr(self, "by", ()):
            return self.answer  # type: ignore[return-value]
        return self._answer_for(higher_is_better, reference, level, random_state)

    @property
    def direction(self):  # type: ignore[override]
        """Which way the means are better: declared (``emmeans(..., higher_is_better=)``) or
        :func:`mixedeval._answer.direction` of the response's name (``ter`` lower, ``accuracy``
        higher, an unknown name higher, said in ``.note``); also for means grouped ``by=``."""
        from .rankings import emm_direction  # noqa: PLC0415 - rankings imports the engine only when ranking

        return emm_direction(self)

    def leaderboard(self, higher_is_better: bool | None = None, level: float | None = None,  # type: ignore[override]
                    random_state: Any = None):
        """The means best first: name, estimate, std_error, conf_low, conf_high (this table's),
        rank, rank_low, rank_high (simultaneous rank intervals from emmeans' covariance of the
        means, Mogstad et al. 2024) and letters. ``higher_is_better=None``: from the response's
        name (``ter ~ ...``: lower is better). With no arguments, ``answer.leaderboard``."""
        from .rankings import emm_leaderboard  # noqa: PLC0415 - rankings imports the engine only when ranking

        if higher_is_better is None and level is None and random_state is None and not getattr(self, "by", ()):
            return self.answer.leaderboard  # type: ignore[union-attr]
        return emm_leaderboard(self, higher_is_better=higher_is_better, level=level, random_state=random_state)

    def headline(self, higher_is_better: bool | None = None, reference: Any = None):  # type: ignore[override]
        """The best mean against the runner-up (or the best other against ``reference``): their
        emmeans contrast (unadjusted p-value and interval; for a GLMM's ``type="response"`` a
        difference of probabilities / rates), signed so that the better one's advantage is
        positive (:class:`mixedeval._answer.Headline`); None with one mean."""
        return self._asked(higher_is_better, reference).headline

    def differences(self, higher_is_better: bool | None = None, reference: Any = None):  # type: ignore[override]
        """Every pair of means best first (:func:`mixedeval._answer.best_first_pairs`):
        system_a above system_b on the leaderboard, delta = system_a's advantage in the better
        direction, std_error, conf_low, conf_high (unadjusted t / z interval), p_value
        (unadjusted), p_adj (of the contrasts read; unadjusted by default); for a GLMM's
        ``type="response"``, differences of probabilities / rates. emmeans' own contrast table
        (``contrasts()``) keeps emmeans' order and signs."""
        return self._asked(higher_is_better, reference).differences

    def headline_text(self, higher_is_better: bool | None = None, reference: Any = None) -> str:
        """:meth:`headline` in one line (for means grouped ``by=``, a sentence saying they are not
        ranked together)."""
        if higher_is_better is None and reference is None and getattr(self, "by", ()):
            return f"means grouped by {list(self.by)}: not ranked together, no single answer"  # type: ignore[attr-defined]
        return self._asked(higher_is_better, reference).headline_text()
