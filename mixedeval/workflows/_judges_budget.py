"""The labelling budget of a judged evaluation (:func:`mixedeval.labels_needed`).

Variance model (Broska, Howes & van Loon 2024, "The mixed subjects design", the model of
ppi-python's ``ppi_power``): with ``n`` labelled units out of ``n + N`` judge-scored ones, the
power-tuned PPI++ estimate has the variance of a human-only estimate from ``n`` labels times
``1 - rho^2 N / (n + N)``, where ``rho`` is the "PPI correlation" between the people's and the
judge's scores. A human-only estimate from ``n0 = (pilot's classical variance x pilot labels) /
target variance`` labels reaches the target, and

* without a cost ratio, the pilot's number of units stays (``M = n + N``) and ``n`` solves
  ``n0 / n * (1 - rho^2 + rho^2 n / M) = 1``, i.e. ``n = n0 (1 - rho^2) / (1 - rho^2 n0 / M)``
  (unreachable when ``n0 > M``: more items are needed);
* with ``cost_ratio`` (a human label costs ``cost_ratio`` judge calls) the cheapest pair
  ``(n, N)`` is ppi-python's ``_optimal_pair``: ``n = n0 (1 - rho^2 + sqrt(gamma rho^2 (1 -
  rho^2)))`` with ``gamma = 1 / cost_ratio``, ``N = n (n0 - n) / (n - (1 - rho^2) n0)``; when
  PPI is dearer than labelling alone (``N < 0`` or the classical cost is lower) every item is
  labelled.

Designs: ``rho`` and the classical variance come from the pilot's influence functions summed
within clusters (items shared by the systems of a difference, ``cluster=``), so a clustered
pilot carries its design effect into the plan: ``rho`` is the cluster-robust correlation of the
people's and the judge's means over the labelled units (Pearson's correlation on independent
units, ppi-python's ``ppi_corr`` before its cap at ``1 - 1/n``; with several judges their average).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import DataError
from ..results import ResultMixin, ResultWarning
from ._judges_core import Estimate, Units, classical_mean, cluster_sum, variance
from ._judges_tables import pair_units


@dataclass(frozen=True, repr=False)
class LabelsNeeded(ResultMixin):
    """The labelling plan (:func:`mixedeval.labels_needed`).

    table : per pair of systems (the headline pair first): system_a, system_b, ppi_corr,
        pilot_labels (labelled items per system, the mean of the two), pilot_items (items both
        systems answered), target_std_error, labels_needed (human-labelled items per system;
        labelling the same items on every system is the efficient plan), items_needed
        (judge-scored items per system), judge_calls (per system: items_needed x the pilot's
        epochs x judges), classical_labels (labels per system a human-only estimate needs),
        cost (per system, in judge calls, with ``cost_ratio``), reachable.
    """

    table: pd.DataFrame
    target: str
    cost_ratio: float | None
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _title = "Human labels needed"

    def _scalars(self):
        return [("target", self.target), ("cost ratio (label / judge call)", self.cost_ratio)]

    @property
    def labels(self) -> int:
        """Human labels the headline pair needs (first row)."""
        v = self.table["labels_needed"].iloc[0]
        return int(v) if np.isfinite(v) else -1


def _labelled_judge_mean(u: Units) -> Estimate:
    """The judge's mean over the labelled units (same epochs as the people's)."""
    lab = u.labelled
    n = int(lab.sum())
    g = u.g[:, 0] if u.g.shape[1] == 1 else u.g.mean(axis=1)
    m = float(g[lab].mean())
    psi = np.zeros(len(g))
    psi[lab] = (g[lab] - m) / n
    return Estimate(m, cluster_sum(psi, u.cluster, u.n_clusters), np.zeros(1), n, len(g), {})


def pair_inputs(units: Units, a: int, b: int) -> dict[str, float]:
    """The pilot's classical variance, labels, units and PPI correlation of the difference a - b."""
    ua, ub, n_shared = pair_units(units, a, b)
    psi_y = classical_mean(ua).psi - classical_mean(ub).psi
    psi_g = _labelled_judge_mean(ua).psi - _labelled_judge_mean(ub).psi
    v_cl, _ = variance(psi_y, False)
    rho = float(psi_y @ psi_g / np.sqrt((psi_y @ psi_y) * (psi_g @ psi_g)))
    n = (ua.labelled.sum() + ub.labelled.sum()) / 2
    return {"v_classical": v_cl, "n": float(n), "m": n_shared or (len(ua.y) + len(ub.y)) / 2, "rho": rho}


def optimal_pair(n0: float, rho: float, cost_ratio: float) -> tuple[int, int]:
    """The cheapest (labelled, unlabelled) pair reaching the variance of ``n0`` human labels
    (costs: a label ``cost_ratio``, a judge call 1, on every unit); ppi-python's rule."""
    r2 = rho ** 2
    gamma = 1.0 / cost_ratio
    ppi_cost = cost_ratio * (1 - r2 + gamma * r2 + 2 * np.sqrt(gamma * r2 * (1 - r2)))
    classical_cost = cost_ratio
    n = n0 * (1 - r2 + np.sqrt(gamma * r2 * (1 - r2)))
    N = n * (n0 - n) / (n - (1 - r2) * n0) if rho != 0 else 0.0
    if classical_cost < ppi_cost or round(N) < 0:
        return int(round(n0)), 0
    return int(round(n)), int(round(N))


def _fixed_items(n0: float, rho: float, m: int) -> tuple[float, bool]:
    """Labels among ``m`` judged units reaching the variance of ``n0`` human labels."""
    r2 = rho ** 2
    if n0 > m:
        return np.nan, False
    return float(np.ceil(n0 * (1 - r2) / (1 - r2 * n0 / m) - 1e-9)), True


def target_variance(width: float | None, power: float | None, delta: float, alpha: float) -> tuple[float, str]:
    """The variance a difference's estimate must reach, and the target in words."""
    if (width is None) == (power is None):
        raise DataError("give one target: width= (the full width of the interval of the difference) or power= "
                        "(with delta=, the difference to detect)")
    if width is not None:
        if not (isinstance(width, (int, float)) and width > 0):
            raise DataError(f"width must be a positive number (the interval's full width), not {width!r}")
        q = stats.norm.ppf(1 - alpha / 2)
        return (width / (2 * q)) ** 2, f"interval width {width:g} at level {1 - alpha:g}"
    if not (isinstance(power, (int, float)) and 0 < power < 1):
        raise DataError(f"power must lie strictly between 0 and 1, not {power!r}")
    if not (np.isfinite(delta) and delta != 0):
        raise DataError(f"delta must be a non-zero difference to detect, not {delta!r}")
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return (abs(delta) / z) ** 2, f"power {power:g} to detect a difference of {abs(delta):g} at alpha {alpha:g}"


def _row(inp: dict[str, float], T: float, cost_ratio: float | None, per_unit_calls: int) -> dict[str, Any]:
    n0 = inp["v_classical"] * inp["n"] / T
    rho = min(inp["rho"], 1 - 1 / inp["n"])
    if cost_ratio is None:
        n, ok = _fixed_items(n0, rho, inp["m"])
        items = float(inp["m"])
    else:
        n_l, n_u = optimal_pair(n0, rho, cost_ratio)
        n, ok, items = float(n_l), True, float(n_l + n_u)
    cost = n * cost_ratio + items * per_unit_calls if cost_ratio is not None else np.nan
    return {"ppi_corr": rho, "pilot_labels": inp["n"], "pilot_items": inp["m"], "target_std_error": float(np.sqrt(T)),
            "labels_needed": n, "items_needed": items, "judge_calls": items * per_unit_calls,
            "classical_labels": float(np.ceil(n0)), "cost": cost, "reachable": ok}


def _check_plan_args(cost_ratio: Any, alpha: Any, delta: Any, width: Any) -> None:
    """The plan's numbers must be finite (an infinite cost ratio overflowed into a raw
    OverflowError; alpha 0, 1 or NaN gave plans for impossible tests)."""
    def number(x: Any) -> bool:
        return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)

    if cost_ratio is not None and not (number(cost_ratio) and np.isfinite(cost_ratio) and cost_ratio > 0):
        raise DataError(f"cost_ratio must be a positive finite number (cost of a human label / cost of a judge call), "
                        f"not {cost_ratio!r}")
    if alpha is not None and not (number(alpha) and 0 < alpha < 1):
        raise DataError(f"alpha must lie strictly between 0 and 1 (e.g. 0.05), not {alpha!r}")
    if delta is not None and not (number(delta) and np.isfinite(delta) and delta != 0):
        raise DataError(f"delta must be a finite non-zero difference to detect, not {delta!r}")
    if width is not None and not (number(width) and np.isfinite(width) and width > 0):
        raise DataError(f"width must be a positive finite number (the interval's full width), not {width!r}")


def plan(pilot: Any, *, width: float | None, power: float | None, delta: float | None, cost_ratio: float | None,
         alpha: float | None) -> LabelsNeeded:
    """The plan for every pair of the pilot's systems (headline pair first)."""
    p = pilot._prepared  # noqa: SLF001 - the pilot result's own data
    _check_plan_args(cost_ratio, alpha, delta, width)
    if len(p.systems) < 2:
        raise DataError("labels_needed plans a difference between systems; the pilot has one system")
    a_ = 1 - pilot.level if alpha is None else float(alpha)
    h = pilot.headline
    d = h.estimate if delta is None else float(delta)
    T, words = target_variance(width, power, d, a_)
    calls = p.n_epochs * len(p.judges)
    order = [(p.systems.index(h.better), p.systems.index(h.other))]
    order += [(a, b) for a in range(len(p.systems)) for b in range(a + 1, len(p.systems))
              if (a, b) not in order and (b, a) not in order]
    rows = [{"system_a": p.systems[a], "system_b": p.systems[b], **_row(pair_inputs(p.units, a, b), T, cost_ratio,
                                                                         calls)} for a, b in order]
    table = pd.DataFrame(rows)
    warns = []
    if not table["reachable"].iloc[0]:
        warns.append(ResultWarning("unreachable", "the target needs more items than the pilot judged, even with "
                                   "every item labelled; judge more items (give cost_ratio= to plan both)"))
    prov = {"model": "PPI++ variance (Broska et al. 2024; ppi-python's ppi_power)", "alpha": a_,
            "delta": d if power is not None else None, "judge_calls_per_item": calls}
    return LabelsNeeded(table=table, target=words, cost_ratio=cost_ratio, warnings=tuple(warns), provenance=prov)
