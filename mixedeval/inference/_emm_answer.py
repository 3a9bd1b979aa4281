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
from typing import Any

from .._answer import LegacyAnswerMixin, check_higher_is_better
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


class EMMAnswer(LegacyAnswerMixin):
    """``direction``, ``leaderboard()``, ``headline()``, ``differences()``, ``headline_text()``
    and ``p_value`` of a table of means."""

    _no_headline_text = "a single mean: nothing to compare"

    def _headline_contrasts(self) -> Any:
        """The pairwise contrast table the headline is read from (None: the unadjusted pairwise
        contrasts of the means, ``emm.contrasts(adjust="none")``)."""
        return None

    def _difference_contrasts(self) -> Any:
        """The pairwise contrast table :meth:`differences` is read from."""
        return self.contrasts(method="pairwise", adjust="none").table  # type: ignore[attr-defined]

    def _the_headline(self) -> Any:
        return self.headline()

    @property
    def direction(self):
        """Which way the means are better: declared (``emmeans(..., higher_is_better=)``) or
        :func:`mixedeval._answer.direction` of the response's name (``ter`` lower, ``accuracy``
        higher, an unknown name higher, said in ``.note``)."""
        from .rankings import emm_direction  # noqa: PLC0415 - rankings imports the engine only when ranking

        return emm_direction(self)

    def leaderboard(self, higher_is_better: bool | None = None, level: float | None = None,
                    random_state: Any = None):
        """The means best first: name, estimate, std_error, conf_low, conf_high (this table's),
        rank, rank_low, rank_high (simultaneous rank intervals from emmeans' covariance of the
        means, Mogstad et al. 2024) and letters. ``higher_is_better=None``: from the response's
        name (``ter ~ ...``: lower is better)."""
        from .rankings import emm_leaderboard  # noqa: PLC0415 - rankings imports the engine only when ranking

        return emm_leaderboard(self, higher_is_better=higher_is_better, level=level, random_state=random_state)

    def headline(self, higher_is_better: bool | None = None, reference: Any = None):
        """The best mean against the runner-up (or the best other against ``reference``): their
        emmeans contrast (unadjusted p-value and interval; for a GLMM's ``type="response"`` a
        difference of probabilities / rates), signed so that the better one's advantage is
        positive (:class:`mixedeval._answer.Headline`); None with one mean."""
        from .rankings import emm_headline  # noqa: PLC0415 - rankings imports the engine only when ranking

        return emm_headline(self, higher_is_better=higher_is_better, reference=reference,
                            contrasts=self._headline_contrasts())

    def differences(self, higher_is_better: bool | None = None, reference: Any = None):
        """Every mean's difference from the best (or from ``reference``) in the better direction
        (> 0: better than it), with unadjusted intervals and p-values of the emmeans contrasts
        (for a GLMM's ``type="response"``, differences of probabilities): name, versus, estimate,
        conf_low, conf_high, p_value."""
        from .rankings import emm_differences, emm_headline, emm_leaderboard  # noqa: PLC0415 - rankings imports the engine only when ranking

        board = emm_leaderboard(self, higher_is_better=higher_is_better)
        diff = self._difference_contrasts()
        head = emm_headline(self, higher_is_better=higher_is_better, reference=reference, board=board, contrasts=diff)
        return emm_differences(self, board, head, diff)

    def headline_text(self, higher_is_better: bool | None = None, reference: Any = None) -> str:
        """:meth:`headline` in one line."""
        h = self.headline(higher_is_better, reference)
        return self._no_headline_text if h is None else h.text()
