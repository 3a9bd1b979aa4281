"""The labelling budget of a judged evaluation (:func:`mixedeval.labels_needed`).

The plan uses the variance, quantile and degrees of freedom that :func:`mixedeval.judge_corrected`
will use for the interval of the difference (:mod:`mixedeval.workflows._judges_core`): the
cluster-robust PPI++ variance with its CR1 factor ``G / (G - k)`` and Student's t with the
Satterthwaite df of the planned design. Its variance model, per pair of systems (``n`` labelled
items per system, the same items on both, out of ``n + N`` judge-scored ones):

    V(n, N) = G / (G - k) * [ B + s_w^2 / n * (1 - rho_w^2 N / (n + N)) ]

* ``s_w^2 / n (1 - rho_w^2 N / (n + N))`` is the PPI++ variance of Broska, Howes & van Loon
  (2024, "The mixed subjects design"; the model of ppi-python's ``ppi_power``) for the part of the
  variation that lies *within* clusters: ``s_w^2`` the people's within-cluster variance of the
  difference per label and ``rho_w`` the within-cluster correlation of the people's and the
  judge's differences (pooled over clusters with two or more labelled items);
* ``B`` the *between-cluster* part: what the pilot's own cluster-robust PPI++ variance holds
  beyond its within part (a pilot variance below its within part scales ``s_w^2`` down instead,
  so that the model reproduces the pilot's own variance at the pilot's size). More labels in the same clusters do not shrink it (items of a cluster
  share their cluster's effect on the difference), so a target below ``G / (G - k) * B`` needs
  more clusters, not more labels.

On designs without clusters (every cluster one item: ``B = 0`` and ``s_w^2``, ``rho_w`` are the
people's variance of the difference and ppi-python's ``ppi_corr`` before its cap at ``1 - 1/n``),
the rules are ppi-python's ``ppi_mean_power`` for the target variance ``T' = T / (G / (G - k)) - B``
(``n0 = s_w^2 / T'`` human labels):

* without a cost ratio, the pilot's number of items stays (``M = n + N``) and
  ``n = n0 (1 - rho^2) / (1 - rho^2 n0 / M)`` (unreachable when ``n0 > M``: more items are needed);
* with ``cost_ratio`` (a human label costs ``cost_ratio`` judge calls) the cheapest pair
  ``(n, N)`` is ppi-python's ``_optimal_pair``: ``n = n0 (1 - rho^2 + sqrt(gamma rho^2 (1 -
  rho^2)))`` with ``gamma = 1 / cost_ratio``, ``N = n (n0 - n) / (n - (1 - rho^2) n0)``; when
  PPI is dearer than labelling alone (``N < 0`` or the classical cost is lower) every item is
  labelled.

The CR1 factor and the df depend on the plan (``G``: the clusters holding labels, the labelled
items when items are the clusters; ``k = 1 +`` the tuned weights; Satterthwaite's df
``min(G, (sum a)^2 / sum a^2) - k`` with the clusters' expected shares ``a_c`` of the planned
design, labels spread over the pilot's clusters in proportion to their items; with ``cost_ratio``
the planned items come from the same clusters, so ``B`` stays). Without a cost ratio the plan is
the fewest labels whose planned interval reaches the target (bisection); with one, a fixed
point: quantile and factor at the planned ``(n, N)``, ppi-python's pair from them, until it
repeats (the larger ``n`` of a 2-cycle). The target: ``width = 2 t_{1-alpha/2, df} SE`` or, for ``power``,
``|delta| / SE = t_{1-alpha/2, df} + t_{power, df}``.

Validated by simulation (benchmarks/calibration_label_budget.py): fresh data of the planned size
realise the target width to within 5% on clustered and on i.i.d. pilots.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..errors import DataError
from ..results import ResultMixin, ResultWarning
from ._judges_core import Estimate, Units, cluster_sum, estimate, is_clustered
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
        cost (per system, in judge calls, with ``cost_ratio``), reachable, df (Student's t df
        the planned interval will have; inf: normal), cr1_factor (its CR1 factor G / (G - k)),
        planned_std_error (the standard error the plan gives, at most target_std_error), and
        floor_std_error (the standard error with every item of the pilot's clusters labelled:
        the between-cluster part labels cannot remove).
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


def _unit_influence(u: Units) -> tuple[np.ndarray, np.ndarray]:
    """Per unit, the influence of the people's mean and of the judge's mean over the labelled
    units (judges averaged; zero on unlabelled units)."""
    lab = u.labelled
    n = int(lab.sum())
    g = u.g[:, 0] if u.g.shape[1] == 1 else u.g.mean(axis=1)
    py, pg = np.zeros(len(u.y)), np.zeros(len(u.y))
    py[lab] = (u.y[lab] - u.y[lab].mean()) / n
    pg[lab] = (g[lab] - g[lab].mean()) / n
    return py, pg


def _class_spread(u: Units, e: Estimate) -> tuple[float, float]:
    """(labelled, unlabelled): a system's variance of the rectifier ``y - lambda' g`` over its
    labelled units and of ``lambda' f`` over the others (the two classes' squared influence
    per unit times their count squared: the weights of Satterthwaite's df)."""
    lab = u.labelled
    lam = e.lam if len(e.lam) == u.f.shape[1] and np.all(np.isfinite(e.lam)) else np.zeros(u.f.shape[1])
    r = u.y[lab] - u.g[lab] @ lam
    h = u.f[~lab] @ lam
    return float(np.var(r)) if len(r) else 0.0, float(np.var(h)) if len(h) > 0 else 0.0


def _within(x: np.ndarray, z: np.ndarray, cl: np.ndarray) -> tuple[float, float, float, int]:
    """Pooled within-cluster (co)variances of x and z (clusters with two or more values) and
    their degrees of freedom."""
    _, c = np.unique(cl, return_inverse=True)
    cnt = np.bincount(c)
    xc = x - (np.bincount(c, weights=x) / cnt)[c]
    zc = z - (np.bincount(c, weights=z) / cnt)[c]
    dfw = int(np.sum(cnt[cnt > 1] - 1))
    if dfw < 1:
        return np.nan, np.nan, np.nan, 0
    return float(xc @ xc / dfw), float(xc @ zc / dfw), float(zc @ zc / dfw), dfw


def pair_inputs(units: Units, a: int, b: int, method: str = "ppi++") -> dict[str, Any]:
    """The pilot's variance components of the difference a - b (module docstring): ``s2``
    (within-cluster people's variance per label), ``rho`` (within-cluster PPI correlation),
    ``B`` and ``B_classical`` (between-cluster parts of the PPI++ and the human-only variance),
    the labels ``n``, items ``m``, and the design facts the planned quantile and CR1 factor
    need (paired, item clusters or cluster sizes, tuned weights, the classes' spreads)."""
    ua, ub, n_shared = pair_units(units, a, b)
    ea, eb = estimate(ua, method), estimate(ub, method)
    (pya, pga), (pyb, pgb) = _unit_influence(ua), _unit_influence(ub)
    item = np.concatenate([ua.item, ub.item])
    n_it = int(item.max()) + 1 if len(item) else 0
    x = np.bincount(item, weights=np.concatenate([pya, -pyb]), minlength=n_it)
    z = np.bincount(item, weights=np.concatenate([pga, -pgb]), minlength=n_it)
    present = np.bincount(item, minlength=n_it) > 0
    n_lab = np.bincount(item, weights=np.concatenate([ua.labelled, ub.labelled]).astype(float), minlength=n_it)
    lab_item = n_lab > 0
    same_items = bool(np.all(n_lab[lab_item] == 2))
    cl_item = np.zeros(n_it, int)
    cl_item[item] = np.concatenate([ua.cluster, ub.cluster])
    sizes = np.bincount(cl_item[present])
    sizes = sizes[sizes > 0]
    n = (ua.labelled.sum() + ub.labelled.sum()) / 2
    m = n_shared or (len(ua.y) + len(ub.y)) / 2
    psi_y = cluster_sum(np.concatenate([pya, -pyb]), np.concatenate([ua.cluster, ub.cluster]), units.n_clusters)
    psi_g = cluster_sum(np.concatenate([pga, -pgb]), np.concatenate([ua.cluster, ub.cluster]), units.n_clusters)
    v_cl = float(psi_y @ psi_y)
    v_ppi = float(np.sum((ea.psi - eb.psi) ** 2))
    clustered_items = bool(len(sizes) and sizes.max() > 1)
    out: dict[str, Any] = {"n": float(n), "m": m, "v_classical": v_cl, "B": 0.0, "B_classical": 0.0,
                           "paired": is_clustered(np.concatenate([ua.cluster, ub.cluster])),
                           "cluster_sizes": sizes if clustered_items else None, "between_ok": True,
                           "n_tuned": int(ea.n_tuned + eb.n_tuned)}
    sa, sb = _class_spread(ua, ea), _class_spread(ub, eb)
    out["spread_labelled"], out["spread_unlabelled"] = sa[0] + sb[0], sa[1] + sb[1]
    rho_all = float(psi_y @ psi_g / np.sqrt((psi_y @ psi_y) * (psi_g @ psi_g)))
    out["rho_clusters"] = rho_all  # the correlation of the cluster totals (the plan before issue 42 used it)
    if clustered_items and same_items:
        lab = lab_item & present
        vx, cxz, vz, dfw = _within(x[lab], z[lab], cl_item[lab])
        if dfw >= 2 and vx > 0 and vz > 0:
            w_y = int(lab.sum()) * vx
            rho = cxz / np.sqrt(vx * vz)
            w_ppi = w_y * (1 - min(rho, 1 - 1 / n) ** 2 * (m - n) / m)
            # the pilot's own PPI++ variance anchors the model: its excess over the within part is
            # the between part; a pilot variance below the within part scales the within part down
            shrink = min(1.0, v_ppi / w_ppi) if w_ppi > 0 else 1.0
            out.update(s2=w_y * n * shrink, rho=float(rho), B=max(0.0, v_ppi - w_ppi),
                       B_classical=max(0.0, v_cl - w_y))
            return out
    if clustered_items:  # within and between cannot be told apart: no cluster with two labelled items, or
        out["between_ok"] = False  # the systems' labels on different items
    out.update(s2=v_cl * n, rho=rho_all)
    return out


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


def _design(inp: dict[str, Any], n: float, N: float) -> tuple[float, float]:
    """(CR1 factor, df) of the planned design's interval, as :func:`~._judges_core.variance`
    computes them: ``G / (G - k)`` and Satterthwaite's ``min(G, (sum a)^2 / sum a^2) - k``
    with the expected ``G`` and cluster weights ``a_c`` (labelled items spread at random over
    the pilot's clusters in proportion to their sizes); ``(1, inf)`` for unpaired samples."""
    if not inp["paired"] or n <= 0:
        return 1.0, np.inf
    k = 1 + (inp["n_tuned"] if N > 0 else 0)
    qa = inp["spread_labelled"] / n ** 2
    qu = inp["spread_unlabelled"] / N ** 2 if N > 0 else 0.0
    sizes = inp["cluster_sizes"]
    if sizes is None:  # items are the clusters: n labelled clusters, N others
        G = n
        s1, s2 = n * qa + N * qu, n * qa ** 2 + N * qu ** 2
    else:
        mc = sizes * (n + N) / sizes.sum()
        p = n / (n + N)
        G = float(np.sum(1 - (1 - p) ** mc))
        mean_a = mc * (p * qa + (1 - p) * qu)
        s1, s2 = float(mean_a.sum()), float(np.sum(mean_a ** 2 + mc * p * (1 - p) * (qa - qu) ** 2))
    if G <= k:
        return np.inf, np.nan
    eff = s1 ** 2 / s2 if s2 > 0 else G
    return G / (G - k), float(max(1.0, min(G, eff) - k))


def _target_at(df: float, width: float | None, power: float | None, delta: float, alpha: float) -> float:
    """The target variance with the quantile of the interval (Student's t with ``df``; normal
    for infinite df)."""
    q = (lambda x: stats.norm.ppf(x)) if not np.isfinite(df) else (lambda x: stats.t.ppf(x, df))
    if width is not None:
        return (width / (2 * q(1 - alpha / 2))) ** 2
    return (abs(delta) / (q(1 - alpha / 2) + q(power))) ** 2


def _excess(inp: dict[str, Any], rho: float, target: dict[str, Any], n: float) -> float:
    """Planned variance minus target variance with ``n`` of the pilot's items labelled."""
    m = float(inp["m"])
    kappa, df = _design(inp, n, m - n)
    if not np.isfinite(kappa):
        return np.inf
    return kappa * (inp["B"] + inp["s2"] / n * (1 - rho ** 2 * (m - n) / m)) - _target_at(df, **target)


def _smallest_n(inp: dict[str, Any], rho: float, target: dict[str, Any]) -> tuple[float, bool, str]:
    """The fewest labels among the pilot's items whose planned interval reaches the target
    (bisection: the planned variance falls and the target variance rises with ``n``); for a
    fixed quantile and factor it is the closed form of :func:`_fixed_items`."""
    m = int(round(inp["m"]))
    if _excess(inp, rho, target, float(m)) > 0:
        kappa, df = _design(inp, float(m), 0.0)
        floor = np.isfinite(kappa) and _target_at(df, **target) / kappa <= inp["B"]
        return np.nan, False, "clusters" if floor else "items"
    lo, hi = 0, m  # excess(lo) > 0 (or lo = 0), excess(hi) <= 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _excess(inp, rho, target, float(mid)) > 0:
            lo = mid
        else:
            hi = mid
    return float(hi), True, ""


def _row(inp: dict[str, Any], target: dict[str, Any], cost_ratio: float | None, per_unit_calls: int) -> dict[str, Any]:
    """The plan of one pair: the fewest labels among the pilot's items whose planned interval
    reaches the target; with ``cost_ratio`` the fixed point of (quantile, CR1 factor) -> (n, N)
    -> (quantile, factor) (module docstring)."""
    rho = min(inp["rho"], 1 - 1 / inp["n"])
    m, s2, B = float(inp["m"]), inp["s2"], inp["B"]
    n, N = inp["n"], float(inp["m"]) - inp["n"]
    seen: list[tuple[float, float]] = []
    if cost_ratio is None:
        n_new, ok, why = _smallest_n(inp, rho, target)
        N_new = m - n_new if ok else np.nan
        kappa, df = _design(inp, n_new if ok else m, N_new if ok else 0.0)
        T = _target_at(df, **target)
    for _ in range(60 if cost_ratio is not None else 0):
        kappa, df = _design(inp, n, N)
        T = _target_at(df, **target)
        Tw = T / kappa - B if np.isfinite(kappa) else np.nan
        if not (Tw > 0):
            n_new, N_new, ok, why = np.nan, np.nan, False, "clusters"
        else:
            n_l, n_u = optimal_pair(s2 / Tw, rho, cost_ratio)
            n_new, N_new, ok, why = float(n_l), float(n_u), True, ""
        if not ok or (n_new, N_new) in seen:
            if ok:
                cyc = seen[seen.index((n_new, N_new)):]
                n_new, N_new = max(cyc)
            break
        seen.append((n_new, N_new))
        n, N = n_new, N_new
    if ok:
        kappa, df = _design(inp, n_new, N_new)
        T = _target_at(df, **target)
    n0 = s2 / (T / kappa - B) if ok else np.nan
    n_cl = s2 / (T / kappa - inp["B_classical"]) if np.isfinite(kappa) and T / kappa > inp["B_classical"] else np.nan
    items = (m if cost_ratio is None else n_new + N_new) if ok else (m if cost_ratio is None else np.nan)
    cost = n_new * cost_ratio + items * per_unit_calls if (cost_ratio is not None and ok) else np.nan
    planned = (kappa * (B + s2 / n_new * (1 - rho ** 2 * N_new / (n_new + N_new)))) if ok else np.nan
    return {"ppi_corr": rho, "pilot_labels": inp["n"], "pilot_items": inp["m"], "target_std_error": float(np.sqrt(T)),
            "labels_needed": n_new if ok else np.nan, "items_needed": items, "judge_calls": items * per_unit_calls,
            "classical_labels": float(np.ceil(n_cl - 1e-9)) if np.isfinite(n_cl) else np.nan, "cost": cost,
            "reachable": ok, "df": df, "cr1_factor": kappa, "planned_std_error": float(np.sqrt(planned)),
            "floor_std_error": float(np.sqrt(kappa * B)) if np.isfinite(kappa) else np.nan,
            "_n0": n0, "_why": why}


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
    _, words = target_variance(width, power, d, a_)
    target = {"width": width, "power": power, "delta": d, "alpha": a_}
    calls = p.n_epochs * len(p.judges)
    order = [(p.systems.index(h.better), p.systems.index(h.other))]
    order += [(a, b) for a in range(len(p.systems)) for b in range(a + 1, len(p.systems))
              if (a, b) not in order and (b, a) not in order]
    inputs = [pair_inputs(p.units, a, b, pilot.method) for a, b in order]
    rows = [{"system_a": p.systems[a], "system_b": p.systems[b], **_row(inp, target, cost_ratio, calls)}
            for (a, b), inp in zip(order, inputs)]
    table = pd.DataFrame(rows)
    why = table.pop("_why").iloc[0]
    table = table.drop(columns="_n0")
    warns = []
    if why == "items":
        warns.append(ResultWarning("unreachable", "the target needs more items than the pilot judged, even with "
                                   "every item labelled; judge more items (give cost_ratio= to plan both)"))
    elif why == "clusters":
        warns.append(ResultWarning("unreachable", "the target is below what the pilot's clusters allow "
                                   f"(standard error {table['floor_std_error'].iloc[0]:.4g} with every item of "
                                   "them labelled): the difference varies between clusters, so label items from "
                                   "more clusters"))
    if not inputs[0]["between_ok"]:
        warns.append(ResultWarning("clusters_unresolved", "the pilot cannot tell variation within clusters from "
                                   "variation between them (its systems' labels are on different items, or no cluster "
                                   "holds two labelled items); the plan scales all of the pilot's variance with the "
                                   "labels (optimistic when the difference varies between clusters): label the same "
                                   "items on every system, two or more per cluster"))
    prov = {"model": "cluster-robust PPI++ variance: within clusters Broska et al. 2024 (ppi-python's "
                     "ppi_power), between clusters the pilot's; CR1 factor and Student's t with the planned df",
            "alpha": a_,
            "delta": d if power is not None else None, "judge_calls_per_item": calls}
    return LabelsNeeded(table=table, target=words, cost_ratio=cost_ratio, warnings=tuple(warns), provenance=prov)
