"""The tables of :func:`mixedeval.judge_corrected`: per system, per pair of systems, the
covariance of the systems' estimates, and the leaderboard / headline / checks built from them
with :mod:`mixedeval._answer`."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .. import _answer
from ..padjust import adjust_pvalues
from ._judges_core import Estimate, Units, classical_mean, estimate, is_clustered, judge_mean, variance

METHOD_LABEL = {"ppi++": "PPI++", "ppi": "PPI", "rogan-gladen": "Rogan-Gladen"}


def interval(est: float, var: float, df: float, level: float) -> tuple[float, float, float]:
    """(std_error, conf_low, conf_high): normal quantile for infinite df, Student's t otherwise."""
    se = float(np.sqrt(var)) if np.isfinite(var) and var >= 0 else np.nan
    q = _answer.z_quantile(level) if not np.isfinite(df) else stats.t.ppf(0.5 + level / 2, df)
    return se, est - q * se, est + q * se


def p_two_sided(est: float, se: float, df: float) -> float:
    """Two-sided p-value of ``est / se`` against 0 (survival functions: tiny p stay positive)."""
    if not (np.isfinite(se) and se > 0):
        return np.nan
    z = abs(est) / se
    return float(2 * (stats.norm.sf(z) if not np.isfinite(df) else stats.t.sf(z, df)))


def _summary(e: Estimate, clustered: bool, level: float, prefix: str = "") -> dict[str, float]:
    var, df = variance(e.psi, clustered, e.lab_clusters, e.n_tuned, e.dfw)
    se, lo, hi = interval(e.estimate, var, df, level)
    return {f"{prefix}estimate": e.estimate, f"{prefix}std_error": se, f"{prefix}df": df,
            f"{prefix}conf_low": lo, f"{prefix}conf_high": hi}


def system_rows(units: Units, systems: list[str], method: str, level: float) -> tuple[pd.DataFrame, list[Estimate]]:
    """One row per system: the corrected mean, the classical and the judge-only means, the
    weight, the labels and the effective number of labels ``n * var_classical / var_corrected``."""
    rows, ests = [], []
    for s, name in enumerate(systems):
        u = units.subset(units.system == s)
        clustered = is_clustered(u.cluster)
        e, c, j = estimate(u, method), classical_mean(u), judge_mean(u)
        ests.append(e)
        row: dict[str, Any] = {"system": name, **_summary(e, clustered, level)}
        row["n_items"], row["n_labels"] = e.n_units, e.n_labels
        row.update(_summary(c, clustered, level, "classical_"))
        row.update(_summary(j, clustered, level, "judge_"))
        row["lam"] = float(e.lam[0]) if len(e.lam) == 1 else np.nan
        row["n_eff_labels"] = e.n_labels * (row["classical_std_error"] / row["std_error"]) ** 2
        for k in ("sensitivity", "specificity"):
            if k in e.extra:
                row[k] = e.extra[k]
        rows.append(row)
    cols = ["system", "estimate", "std_error", "df", "conf_low", "conf_high", "n_items", "n_labels", "n_eff_labels",
            "lam", "classical_estimate", "classical_std_error", "classical_conf_low", "classical_conf_high",
            "judge_estimate", "judge_std_error", "judge_conf_low", "judge_conf_high"]
    cols += [k for k in ("sensitivity", "specificity") if k in rows[0]]
    return pd.DataFrame(rows)[cols], ests


def vcov(ests: list[Estimate], table: pd.DataFrame) -> np.ndarray:
    """The covariance of the systems' estimates: the influence functions' cross products
    (shared clusters: the same items), rescaled so the diagonal is each system's variance."""
    P = np.stack([e.psi for e in ests])
    V = P @ P.T
    d = np.sqrt(np.diag(V))
    with np.errstate(invalid="ignore", divide="ignore"):
        R = V / np.outer(d, d)
    se = table["std_error"].to_numpy(dtype=float)
    return np.nan_to_num(R) * np.outer(se, se) + np.diag(np.where(d == 0, se ** 2, 0.0))


def pair_units(units: Units, a: int, b: int) -> tuple[Units, Units, int]:
    """The units of systems a and b on the items both answered (two or more shared items), else
    all their units (no shared items: two independent samples, an unpaired difference)."""
    ia = set(units.item[units.system == a].tolist())
    ib = set(units.item[units.system == b].tolist())
    both = sorted(ia & ib)
    shared = np.isin(units.item, both) if len(both) >= 2 else np.ones(len(units.item), bool)
    return (units.subset((units.system == a) & shared), units.subset((units.system == b) & shared),
            len(both) if len(both) >= 2 else 0)


def _pair_row(units: Units, systems: list[str], a: int, b: int, method: str, level: float) -> dict[str, Any]:
    """The paired difference a - b on the items both systems have (cluster-robust, CR1, t)."""
    ua, ub, n_shared = pair_units(units, a, b)
    row: dict[str, Any] = {"system_a": systems[a], "system_b": systems[b], "n_items": n_shared}
    for prefix, fn in (("", lambda u: estimate(u, method)), ("classical_", classical_mean), ("judge_", judge_mean)):
        ea, eb = fn(ua), fn(ub)
        lc = None if ea.lab_clusters is None else ea.lab_clusters | eb.lab_clusters
        d = Estimate(ea.estimate - eb.estimate, ea.psi - eb.psi, ea.lam, ea.n_labels + eb.n_labels, 0, {}, lc,
                     ea.n_tuned + eb.n_tuned, None if ea.dfw is None or eb.dfw is None else ea.dfw + eb.dfw)
        s = _summary(d, is_clustered(np.concatenate([ua.cluster, ub.cluster])), level, prefix)
        s[f"{prefix}p_value"] = p_two_sided(d.estimate, s[f"{prefix}std_error"], s[f"{prefix}df"])
        row.update(s)
        if prefix == "":
            row["n_labels"] = d.n_labels
    row["n_eff_labels"] = row["n_labels"] * (row["classical_std_error"] / row["std_error"]) ** 2
    return row


def pairwise_rows(units: Units, systems: list[str], method: str, level: float, adjust: str) -> pd.DataFrame:
    """Every pair of systems: the corrected paired difference, its classical and judge-only
    counterparts, ``p_adj`` (``adjust`` over the pairs)."""
    rows = [_pair_row(units, systems, a, b, method, level)
            for a in range(len(systems)) for b in range(a + 1, len(systems))]
    cols = ["system_a", "system_b", "estimate", "std_error", "df", "conf_low", "conf_high", "p_value", "p_adj",
            "n_items", "n_labels", "n_eff_labels", "classical_estimate", "classical_std_error", "classical_conf_low",
            "classical_conf_high", "classical_p_value", "judge_estimate", "judge_std_error", "judge_conf_low",
            "judge_conf_high", "judge_p_value"]
    if not rows:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame(rows)
    out["p_adj"] = adjust_pvalues(out["p_value"].to_numpy(dtype=float), adjust)
    return out[cols]


def _pair_lookup(pw: pd.DataFrame, a: str, b: str, prefix: str = "") -> tuple[float, float, float, float, float, float]:
    """(delta a - b, se, low, high, p, df) of the pair from the pairwise table (either order; the
    row by :func:`mixedeval._answer.pair_row`)."""
    r, sign = _answer.pair_row(pw, a, b)
    lo, hi = sign * r[f"{prefix}conf_low"], sign * r[f"{prefix}conf_high"]
    df = r.get(f"{prefix}df", r["df"])
    return (sign * r[f"{prefix}estimate"], r[f"{prefix}std_error"], min(lo, hi), max(lo, hi),
            r[f"{prefix}p_value"], df)


def best_first(pw: pd.DataFrame, order: list[str], higher_is_better: bool) -> pd.DataFrame:
    """The pairwise table best first (the glossary's pair-table rule, as
    :func:`mixedeval._answer.best_first_pairs`): ``system_a`` above ``system_b`` on the leaderboard
    (``order``), and every estimate (corrected, ``classical_``, ``judge_``) and its interval the
    advantage of system_a in the better direction; p-values, df and counts unchanged."""
    if not len(pw):
        return pw
    pos = {str(n): i for i, n in enumerate(order)}
    sign = 1.0 if higher_is_better else -1.0
    out = pw.copy()
    a, b = out["system_a"].astype(str), out["system_b"].astype(str)
    flip = (b.map(pos) < a.map(pos)).to_numpy()
    s = np.where(flip, -1.0, 1.0) * sign
    out["system_a"], out["system_b"] = np.where(flip, b, a), np.where(flip, a, b)
    for prefix in ("", "classical_", "judge_"):
        lo, hi = out[f"{prefix}conf_low"].to_numpy(dtype=float), out[f"{prefix}conf_high"].to_numpy(dtype=float)
        out[f"{prefix}estimate"] = s * out[f"{prefix}estimate"].to_numpy(dtype=float)
        out[f"{prefix}conf_low"] = np.where(s > 0, lo, -hi)
        out[f"{prefix}conf_high"] = np.where(s > 0, hi, -lo)
    key = np.lexsort((out["system_b"].map(pos).to_numpy(), out["system_a"].map(pos).to_numpy()))
    out = out.iloc[key].reset_index(drop=True)
    out.attrs["convention"] = _answer.convention(_answer.Direction(bool(higher_is_better), "declared"))
    return out


def answer(table: pd.DataFrame, pw: pd.DataFrame, V: np.ndarray, method: str, direction: _answer.Direction,
           level: float, reference: Any, random_state: Any) -> _answer.Answer:
    """The one answer: the corrected leaderboard; the headline pair's corrected difference; every
    pair best first (:func:`mixedeval._answer.best_first_pairs` of the corrected differences);
    the human-only and judge-only differences of the headline pair as checks."""
    est = pd.Series(table["estimate"].to_numpy(dtype=float), index=table["system"].tolist())
    board = _answer.leaderboard(est, std_error=table["std_error"].to_numpy(), conf_low=table["conf_low"].to_numpy(),
                                conf_high=table["conf_high"].to_numpy(), vcov=V,
                                higher_is_better=direction.higher_is_better, level=level, random_state=random_state)
    label = f"{METHOD_LABEL[method]} judge-corrected paired difference"
    pair = _answer.choose_pair(board, reference)
    if pair is None:
        return _answer.Answer(direction=direction, leaderboard=board, headline=None, method=label)
    a, b = pair
    d, se, lo, hi, p, df = _pair_lookup(pw, a, b)
    head = _answer.headline(a, b, d, se, lo, hi, p, df, label, direction, level=level, reference=reference)
    rows = []
    sign = 1.0 if head.better == a else -1.0
    sign *= 1.0 if direction.higher_is_better else -1.0
    for prefix, name in (("classical_", "human labels only (classical)"),
                         ("judge_", "judge scores only (uncorrected for the judge's bias)")):
        d2, _, lo2, hi2, p2, _ = _pair_lookup(pw, a, b, prefix)
        lo2, hi2 = sorted((sign * lo2, sign * hi2))
        rows.append(_answer.check_row(name, head, estimate=sign * d2, conf_low=lo2, conf_high=hi2, p_value=p2))
    diffs = _answer.best_first_pairs(pw.rename(columns={"estimate": "delta"}), list(board["name"]),
                                     direction.higher_is_better)
    return _answer.Answer(direction=direction, leaderboard=board, headline=head, differences=diffs,
                          checks=_answer.checks_table(rows), method=label)
