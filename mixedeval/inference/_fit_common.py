"""What the fitted-model results (:class:`LMMFit`, :class:`GLMMFit`, :class:`CLMMFit`) share: the
fixed-effects table as the main table, ``to_dict`` over the public fields each one lists, and the
dispatch of the public functions (:func:`mixedeval.anova`, :func:`mixedeval.emmeans`, ...) through
a method of the fit (:func:`fit_method`), so that those functions import no model family."""
from __future__ import annotations

from typing import Any

from ..errors import DataError
from ..results import ResultMixin, jsonable


class FitResultMixin(ResultMixin):
    """A fit whose main table is its ``fixed`` table; ``to_dict`` converts the attributes named in
    the class's ``_dict_keys`` (in that order) with :func:`mixedeval.results.jsonable`."""

    _main_table = "table"
    _dict_keys: tuple[str, ...] = ()

    @property
    def table(self):
        """The main table: the fixed effects (:attr:`fixed`)."""
        return self.fixed  # type: ignore[attr-defined]

    def to_dict(self) -> dict[str, Any]:
        return {k: jsonable(getattr(self, k)) for k in self._dict_keys}


def fit_method(fit: Any, name: str, function: str, fits: str) -> Any:
    """The method ``name`` (``"_anova"``, ``"_emmeans"``, ...) through which the public ``function``
    runs on ``fit``: each fit class implements it for its model family. ``fits`` names the fitting
    functions whose results have it (for the error raised for any other object)."""
    method = getattr(fit, name, None)
    if method is None:
        raise DataError(f"{function}() takes a model fitted by {fits}; got a {type(fit).__name__}")
    return method
