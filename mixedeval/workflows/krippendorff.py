"""Krippendorff's alpha, for comparison with the variance-component reliability coefficients.

``alpha = 1 - D_o / D_e`` computed from the coincidence matrix (Krippendorff 2011, "Computing
Krippendorff's alpha-reliability"; Krippendorff 2004, *Content Analysis*, ch. 11):

* every unit with ``m_u >= 2`` pairable values contributes, for each ordered pair of values
  ``(c, k)`` from different coders, ``1 / (m_u - 1)`` to the coincidence ``o_ck``;
* ``n_c = sum_k o_ck``, ``n = sum_c n_c``;
* ``D_o = sum_ck o_ck delta2_ck / n``, ``D_e = sum_ck n_c n_k delta2_ck / (n (n - 1))``;
* ``delta2``: nominal ``[c != k]``; ordinal ``(sum_{g=c..k} n_g - (n_c + n_k)/2)^2``; interval
  ``(c - k)^2``; ratio ``((c - k)/(c + k))^2``.

Convention for data without variation (a single distinct value, ``D_e = 0``): alpha is 0/0;
Krippendorff (2004) sets it to 0 (as Hagmann 2023, ch. 3.3.1 discusses) and so do we, with a
``no_variation`` warning on the result. Units with fewer than two values are not pairable and are
ignored.

Hagmann (2023) explains why these descriptive chance-corrected coefficients are no substitute
for a model-based reliability analysis; use :func:`mixedeval.variance_components` for that.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..data.table import as_pandas
from ..data.validate import require_columns, require_unique
from ..errors import DataError
from ..results import ResultMixin, ResultWarning

LEVELS = ("nominal", "ordinal", "interval", "ratio")


@dataclass(frozen=True, repr=False)
class KrippendorffResult(ResultMixin):
    """Krippendorff's alpha with its ingredients.

    ``table`` (the main table): one row with alpha, level, observed_disagreement,
    expected_disagreement, n_pairable, n_units, n_coders. ``coincidences``: the coincidence
    matrix ``o_ck`` (values x values) as a DataFrame; ``n_pairable``: the number of pairable
    values ``n``; ``n_units``: units with at least two values.
    """

    alpha: float
    level: str
    observed_disagreement: float
    expected_disagreement: float
    n_pairable: float
    n_units: int
    n_coders: int
    coincidences: Any
    warnings: tuple[ResultWarning, ...] = ()

    _main_table = "table"
    _print_tables = ("coincidences",)

    @property
    def _title(self) -> str:  # type: ignore[override]
        return f"Krippendorff's alpha ({self.level}) = {self.alpha:.4f}"

    def _scalars(self):
        return [("D_o", f"{self.observed_disagreement:.6g}"), ("D_e", f"{self.expected_disagreement:.6g}"),
                ("pairable values", self.n_pairable), ("units", self.n_units), ("coders", self.n_coders)]

    @property
    def table(self):
        """The main table: alpha and its ingredients in one row."""
        return pd.DataFrame([{"alpha": self.alpha, "level": self.level, "observed_disagreement": self.observed_disagreement,
                              "expected_disagreement": self.expected_disagreement, "n_pairable": self.n_pairable,
                              "n_units": self.n_units, "n_coders": self.n_coders}])


def _reliability_matrix(ratings: Any, unit: str | None, coder: str | None, value: str | None):
    """(coders x units) object array with None for missing values."""
    if unit is not None or coder is not None or value is not None:
        if unit is None or coder is None or value is None:
            raise DataError("for long-format ratings give all of unit=, coder= and value= (column names)")

        df = as_pandas(ratings)
        require_columns(df, [unit, coder, value])
        df = df[df[value].notna()]
        require_unique(df, [unit, coder], "ratings")
        wide = df.pivot(index=coder, columns=unit, values=value)
        return wide.to_numpy(dtype=object)
    if isinstance(ratings, pd.DataFrame):
        arr = ratings.to_numpy(dtype=object)
    else:
        arr = np.asarray(ratings, dtype=object)
    if arr.ndim != 2:
        raise DataError("ratings must be a 2-D reliability data matrix (coders x units) or long data with unit=, coder=, value=")
    return arr


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(v != v)  # NaN, pd.NA raises -> handled below
    except TypeError:
        return True


def _value_codes(arr, level: str):
    """``(values, codes)``: the sorted distinct values and an integer array like ``arr`` with
    each value's index (-1 where missing); numeric values for all levels but nominal."""
    mask = np.vectorize(_is_missing, otypes=[bool])(arr) if arr.size else np.zeros(arr.shape, bool)
    present = arr[~mask]
    if present.size == 0:
        raise DataError("ratings contain no values")
    if level != "nominal":
        try:
            num = np.array([float(v) for v in present])
        except (TypeError, ValueError):
            raise DataError(f"{level} alpha needs numeric values; use level='nominal' for categories") from None
        if level == "ratio" and (num < 0).any():
            raise DataError("ratio alpha needs non-negative values")
        values = np.unique(num)
        lookup = {v: i for i, v in enumerate(values)}
        keys = [float(v) for v in present]
    else:
        labels = pd.unique(pd.Series(present, dtype=object))
        try:
            values = np.array(sorted(labels))
        except TypeError:
            values = np.array(sorted(labels, key=str), dtype=object)
        lookup = {v: i for i, v in enumerate(values.tolist())}
        keys = list(present)
    codes = np.full(arr.shape, -1)
    codes[~mask] = [lookup[k] for k in keys]
    return values, codes


def _delta2(level: str, values, n_c):
    """The squared difference function ``delta2_ck`` of the level (``n_c``: value totals, for
    ordinal)."""
    n_val = len(values)
    if level == "nominal":
        return 1.0 - np.eye(n_val)
    if level == "interval":
        v = values.astype(float)
        return (v[:, None] - v[None, :]) ** 2
    if level == "ratio":
        v = values.astype(float)
        s = v[:, None] + v[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(s == 0, 0.0, ((v[:, None] - v[None, :]) / np.where(s == 0, 1, s)) ** 2)
    # ordinal: (sum_{g between c and k} n_g - (n_c + n_k)/2)^2
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    i = np.arange(n_val)
    lo = np.minimum(i[:, None], i[None, :])
    hi = np.maximum(i[:, None], i[None, :])
    return (cum[hi + 1] - cum[lo] - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2


def krippendorff_alpha(
    ratings: Any,
    level: str = "nominal",
    *,
    unit: str | None = None,
    coder: str | None = None,
    value: str | None = None,
) -> KrippendorffResult:
    """Krippendorff's alpha for any number of coders, missing values and the four metrics.

    Parameters
    ----------
    ratings : a reliability data matrix, coders in rows and units in columns (array-like or
        DataFrame; NaN/None mark missing values), or a long table when ``unit``, ``coder`` and
        ``value`` name its columns.
    level : ``"nominal"``, ``"ordinal"``, ``"interval"`` or ``"ratio"`` (the difference
        function ``delta2``).

    Returns a :class:`KrippendorffResult` (``alpha``, ``observed_disagreement``,
    ``expected_disagreement``, ``coincidences``, ...).
    """
    if level not in LEVELS:
        raise DataError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    arr = _reliability_matrix(ratings, unit, coder, value)
    n_coders = arr.shape[0]
    values, codes_all = _value_codes(arr, level)
    n_val = len(values)
    # counts per unit and value: (units x values)
    counts = np.zeros((arr.shape[1], n_val))
    for j in range(arr.shape[1]):
        cj = codes_all[:, j]
        cj = cj[cj >= 0]
        if cj.size:
            counts[j] = np.bincount(cj, minlength=n_val)
    m_u = counts.sum(axis=1)
    pairable = m_u >= 2
    cp = counts[pairable]
    w = 1.0 / (m_u[pairable] - 1.0)
    # o_ck = sum_u (n_uc n_uk - [c == k] n_uc) / (m_u - 1)
    o = (cp * w[:, None]).T @ cp - np.diag((cp * w[:, None]).sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    warnings: list[ResultWarning] = []
    if n == 0:
        raise DataError("no unit has values from two or more coders, so nothing is pairable")
    d2 = _delta2(level, values, n_c)
    d_o = float((o * d2).sum() / n)
    d_e = float((np.outer(n_c, n_c) * d2).sum() / (n * (n - 1))) if n > 1 else 0.0
    if d_e == 0:
        alpha = 0.0
        warnings.append(ResultWarning(
            "no_variation",
            "the pairable values show no variation (expected disagreement 0): alpha is 0/0 and set to 0 by "
            "Krippendorff's (2004) convention, although observed agreement is perfect",
        ))
    else:
        alpha = 1.0 - d_o / d_e
    coinc = pd.DataFrame(o, columns=[str(v) for v in values.tolist()])
    coinc.insert(0, "value", values.tolist())
    return KrippendorffResult(
        alpha=float(alpha),
        level=level,
        observed_disagreement=d_o,
        expected_disagreement=d_e,
        n_pairable=float(n),
        n_units=int(pairable.sum()),
        n_coders=int(n_coders),
        coincidences=coinc,
        warnings=tuple(warnings),
    )


__all__ = ["KrippendorffResult", "krippendorff_alpha"]
