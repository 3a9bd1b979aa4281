"""What the fitted-model results (:class:`LMMFit`, :class:`GLMMFit`, :class:`CLMMFit`) share: the
fixed-effects table as the main table, and ``to_dict`` over the public fields each one lists."""
from __future__ import annotations

from typing import Any

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
