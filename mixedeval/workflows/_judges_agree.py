"""How good is the judge: agreement with people and bias by system (:func:`mixedeval.judge_agreement`).

On the labelled rows (one row per labelled epoch; with several judges, per judge):

* Cohen's kappa and weighted kappa (categorical scores): ``kappa = (p_o - p_c) / (1 - p_c)``
  from the judge x people table, weighted with agreement weights ``w_ij = 1 - (i - j)^2 /
  (k - 1)^2`` (quadratic, psych's default) and ``1 - |i - j| / (k - 1)`` (linear), categories
  indexed in sorted order. Intervals: the large-sample variances of Fleiss, Cohen & Everitt
  (1969, *Psychol. Bull.* 72:323), normal quantiles (R's ``psych::cohen.kappa`` for the
  unweighted kappa; for weighted kappas the FCE formula with ``wbar_i. = sum_j p_.j w_ij`` and
  ``wbar_.j = sum_i p_i. w_ij``, which is what R's ``vcd::Kappa`` computes; ``psych::cohen.kappa``
  uses another variance for weighted kappas and its intervals differ from these by up to about
  0.005).
* Krippendorff's alpha (:func:`mixedeval.krippendorff_alpha`, judge and people as two coders;
  nominal for 0/1, ordinal for grades, interval for continuous scores), Pearson's and
  Spearman's correlations: percentile intervals from a bootstrap of clusters (items, or
  ``cluster=``), so epochs of an item and items of a cluster move together.
* The confusion matrix (categorical scores), as counts in long form.
* Bias by system: per labelled unit (system x item, epochs averaged) the judge's score minus the
  people's; per system its mean with a cluster-robust standard error (items shared across
  systems are clusters), its excess over the mean bias of the other systems (a self-preferring
  judge shows a positive excess on its own family) with Holm-adjusted p-values, and a Wald
  chi-square test that all systems share one bias.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._random import as_generator
from ..errors import DataError
from ..padjust import adjust_pvalues
from ..results import ResultMixin, ResultWarning
from ._judges_core import cluster_sum, is_clustered
from .krippendorff import krippendorff_alpha

SCALES = ("auto", "binary", "ordinal", "interval")


@dataclass(frozen=True, repr=False)
class JudgeAgreement(ResultMixin):
    """The judge's agreement with people and its bias by system (:func:`mixedeval.judge_agreement`).

    table : judge, statistic (cohen_kappa, weighted_kappa_linear, weighted_kappa_quadratic,
        krippendorff_alpha, pearson, spearman, exact_agreement), estimate, conf_low, conf_high,
        n_labels, method (of the interval).
    confusion : judge, judge_value, human_value, n (categorical scales).
    bias : judge, system, n_labels, judge_mean, human_mean, bias (judge - people), std_error,
        conf_low, conf_high, p_value, excess (bias minus the other systems' mean bias),
        excess_std_error, excess_p_value, excess_p_adj (Holm over the systems).
    bias_test : judge, chisq, df, p_value (Wald test that every system has the same bias).
    """

    table: pd.DataFrame
    confusion: pd.DataFrame
    bias: pd.DataFrame
    bias_test: pd.DataFrame
    scale: str
    level: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _print_tables = ("table", "bias", "bias_test")
    _title = "Judge agreement with people"

    def _scalars(self):
        return [("scale", self.scale), ("level", self.level)]

    def confusion_matrix(self, judge: Any = None) -> pd.DataFrame:
        """The judge x people counts as a wide table (rows: the judge's values)."""
        c = self.confusion
        if judge is not None:
            c = c[c["judge"] == str(judge)]
        return c.pivot_table(index="judge_value", columns="human_value", values="n", aggfunc="sum", fill_value=0)


# ------------------------------------------------------------------------------ kappa
def kappa_fce(table: np.ndarray, weights: np.ndarray | None = None) -> tuple[float, float]:
    """(kappa, its large-sample variance) of a k x k count table (Fleiss, Cohen & Everitt 1969);
    ``weights`` are agreement weights (None: unweighted)."""
    n = table.sum()
    x = table / n
    rs, cs = x.sum(axis=1), x.sum(axis=0)
    w = np.eye(len(x)) if weights is None else weights
    po = float((w * x).sum())
    pc = float((w * np.outer(rs, cs)).sum())
    if pc >= 1:
        return np.nan, np.nan
    kappa = (po - pc) / (1 - pc)
    wbar_i = w @ cs  # wbar_i. = sum_j p_.j w_ij
    wbar_j = w.T @ rs  # wbar_.j = sum_i p_i. w_ij
    inner = (w * (1 - pc) - (wbar_i[:, None] + wbar_j[None, :]) * (1 - po)) ** 2
    var = ((x * inner).sum() - (po * pc - 2 * pc + po) ** 2) / (n * (1 - pc) ** 4)
    return float(kappa), float(max(var, 0.0))


def agreement_weights(k: int, kind: str) -> np.ndarray:
    """Agreement weights of k ordered categories: ``"linear"`` or ``"quadratic"``."""
    if k < 2:
        return np.ones((k, k))
    d = np.abs(np.subtract.outer(np.arange(k), np.arange(k))) / (k - 1)
    return 1 - (d if kind == "linear" else d ** 2)


def _alpha_2coders(tabs: np.ndarray, d2: np.ndarray) -> np.ndarray:
    """Krippendorff's alpha of two coders from (draws x k x k) judge x people count tables."""
    o = tabs + np.swapaxes(tabs, 1, 2)
    n_c = o.sum(axis=2)
    n = n_c.sum(axis=1)
    d_o = (o * d2).sum(axis=(1, 2)) / n
    d_e = np.einsum("bi,bj,ij->b", n_c, n_c, d2) / (n * (n - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d_e > 0, 1 - d_o / d_e, 0.0)


def _ordinal_d2(n_c: np.ndarray) -> np.ndarray:
    k = len(n_c)
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    i = np.arange(k)
    lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
    return (cum[hi + 1] - cum[lo] - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2


# ------------------------------------------------------------------------------ scale and rows
def _require_binary(j: np.ndarray, h: np.ndarray) -> None:
    """scale='binary' reads 0/1 scores: other values would be counted as neither class (kappa 0
    with the interval [0, 0], an estimate outside its own interval)."""
    for what, v in (("judge_score", j), ("human_score", h)):
        bad = np.unique(v[~np.isin(v, (0.0, 1.0))])
        if bad.size:
            raise DataError(f"scale='binary' needs 0/1 scores; {what} has other values (e.g. {', '.join(f'{x:.3g}' for x in bad[:3])}): "
                            "use scale='interval' for continuous scores, 'ordinal' for grades, or 'auto'")


def _constant_judge_warnings(lab: pd.DataFrame, jcols: list[str], judges: list[str]) -> list[ResultWarning]:
    """A judge that gives every labelled answer the same score agrees by chance only: its kappa
    and alpha say nothing about it (alpha comes out slightly negative)."""
    out = []
    for col, judge in zip(jcols, judges):
        v = lab[col].to_numpy(dtype=float)
        if v.size and np.all(v == v[0]):
            out.append(ResultWarning("constant_judge", f"judge {judge!r} gives every labelled answer the same score "
                                     f"({v[0]:g}): its agreement statistics measure nothing; check the judge_score "
                                     "column or the judge's prompt"))
    return out


def _scale(j: np.ndarray, h: np.ndarray, scale: str) -> str:
    if scale not in SCALES:
        raise DataError(f"scale must be one of {list(SCALES)}, not {scale!r}")
    if scale == "binary":
        _require_binary(j, h)
    if scale != "auto":
        return scale
    v = np.concatenate([j, h])
    if np.isin(v, (0.0, 1.0)).all():
        return "binary"
    if np.all(v == np.round(v)) and len(np.unique(v)) <= 11:
        return "ordinal"
    return "interval"


_BOOT_CHUNK = 2_000  # resamples drawn and summarised at a time (memory; Ctrl-C between chunks)


def _boot_stats(j: np.ndarray, h: np.ndarray, cl: np.ndarray, scale: str, n_resamples: int, rng) -> dict:
    """Bootstrap replicates (clusters resampled) of alpha, Pearson and Spearman, drawn in chunks
    of :data:`_BOOT_CHUNK` resamples (numpy's multinomial rows come one after another from the
    stream, so the replicates are those of one draw of all of them)."""
    parts = []
    for start in range(0, n_resamples, _BOOT_CHUNK):
        parts.append(_boot_chunk(j, h, cl, scale, min(_BOOT_CHUNK, n_resamples - start), rng))
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def _boot_chunk(j: np.ndarray, h: np.ndarray, cl: np.ndarray, scale: str, n_resamples: int, rng) -> dict:
    """:func:`_boot_stats` of ``n_resamples`` resamples at once."""
    G = int(cl.max()) + 1
    counts = rng.multinomial(G, np.full(G, 1.0 / G), size=n_resamples)  # draws x clusters
    w = counts[:, cl].astype(float)  # draws x rows
    out = {}
    for name, (a, b) in (("pearson", (j, h)), ("spearman", (stats.rankdata(j), stats.rankdata(h)))):
        if name == "spearman":  # ranks within each replicate's rows
            out[name] = np.array([_wcorr(stats.rankdata(np.repeat(j, c.astype(int))),
                                         stats.rankdata(np.repeat(h, c.astype(int))), None) for c in w])
        else:
            out[name] = _wcorr(a, b, w)
    if scale != "interval":
        cats = np.unique(np.concatenate([j, h]))
        ji, hi_ = np.searchsorted(cats, j), np.searchsorted(cats, h)
        k = len(cats)
        cell = ji * k + hi_
        tabs = np.stack([np.bincount(cell, weights=row, minlength=k * k) for row in w]).reshape(-1, k, k)
        if scale == "binary":
            d2 = 1 - np.eye(k)
            out["krippendorff_alpha"] = _alpha_2coders(tabs, d2)
        else:
            out["krippendorff_alpha"] = np.array([_alpha_2coders(t[None], _ordinal_d2((t + t.T).sum(axis=1)))[0]
                                                  for t in tabs])
    else:
        d2v = (j - h) ** 2
        out["krippendorff_alpha"] = _alpha_interval(j, h, w, d2v)
    return out


def _alpha_interval(j: np.ndarray, h: np.ndarray, w: np.ndarray, d2v: np.ndarray) -> np.ndarray:
    """Interval alpha of two coders with row weights (draws x rows): ``1 - (n - 1) D_o / D_e``
    with ``D_o = sum w (j - h)^2`` and pairwise differences over the 2n pooled values."""
    n = 2 * w.sum(axis=1)
    s1 = w @ (j + h)
    s2 = w @ (j ** 2 + h ** 2)
    d_o = 2 * (w @ d2v) / n  # o has both orders: sum_ck o d2 = 2 sum_u (j - h)^2
    sum_pairs = 2 * (n * s2 - s1 ** 2)  # sum over ordered pairs of pooled values of (v - v')^2
    d_e = sum_pairs / (n * (n - 1))
    return 1 - d_o / d_e


def _wcorr(a: np.ndarray, b: np.ndarray, w: np.ndarray | None) -> np.ndarray | float:
    if w is None:
        return float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else np.nan
    sw = w.sum(axis=1, keepdims=True)
    ma, mb = (w @ a)[:, None] / sw, (w @ b)[:, None] / sw
    ca = a[None, :] - ma
    cb = b[None, :] - mb
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w * ca * cb).sum(axis=1) / np.sqrt((w * ca ** 2).sum(axis=1) * (w * cb ** 2).sum(axis=1))


def _interval_row(judge: str, name: str, est: float, draws: np.ndarray, level: float, n: int) -> dict[str, Any]:
    d = np.asarray(draws, dtype=float)
    d = d[np.isfinite(d)]
    a = (1 - level) / 2
    lo, hi = (np.quantile(d, a), np.quantile(d, 1 - a)) if len(d) > 10 else (np.nan, np.nan)
    return {"judge": judge, "statistic": name, "estimate": est, "conf_low": float(lo), "conf_high": float(hi),
            "n_labels": n, "method": "cluster bootstrap (percentile)"}


def _kappa_rows(judge: str, j: np.ndarray, h: np.ndarray, scale: str, level: float) -> list[dict[str, Any]]:
    cats = np.unique(np.concatenate([j, h]))
    k = len(cats)
    tab = np.zeros((k, k))
    np.add.at(tab, (np.searchsorted(cats, j), np.searchsorted(cats, h)), 1.0)
    q = stats.norm.ppf(0.5 + level / 2)
    kinds = [("cohen_kappa", None)]
    if scale == "ordinal":
        kinds += [("weighted_kappa_linear", agreement_weights(k, "linear")),
                  ("weighted_kappa_quadratic", agreement_weights(k, "quadratic"))]
    rows = []
    for name, w in kinds:
        kap, var = kappa_fce(tab, w)
        se = np.sqrt(var)
        rows.append({"judge": judge, "statistic": name, "estimate": kap, "conf_low": max(-1.0, kap - q * se),
                     "conf_high": min(1.0, kap + q * se), "n_labels": len(j),
                     "method": "large-sample (Fleiss, Cohen & Everitt 1969)"})
    return rows


def _confusion(judge: str, j: np.ndarray, h: np.ndarray) -> pd.DataFrame:
    c = pd.DataFrame({"judge_value": j, "human_value": h}).value_counts().rename("n").reset_index()
    c.insert(0, "judge", judge)
    return c.sort_values(["judge_value", "human_value"]).reset_index(drop=True)


def _one_judge(judge: str, lab: pd.DataFrame, scale: str, level: float, n_resamples: int, rng) -> tuple:
    j = lab[f"j::{judge}"].to_numpy(dtype=float)
    h = lab["human_score"].to_numpy(dtype=float)
    cl = pd.factorize(lab["cluster"])[0]
    rows = []
    if scale != "interval":
        rows += _kappa_rows(judge, j, h, scale, level)
    lvl = {"binary": "nominal", "ordinal": "ordinal", "interval": "interval"}[scale]
    alpha = krippendorff_alpha(np.vstack([j, h]), level=lvl).alpha
    boot = _boot_stats(j, h, cl, scale, n_resamples, rng)
    rows.append(_interval_row(judge, "krippendorff_alpha", alpha, boot["krippendorff_alpha"], level, len(j)))
    for name in ("pearson", "spearman"):
        est = _wcorr(j, h, None) if name == "pearson" else _wcorr(stats.rankdata(j), stats.rankdata(h), None)
        rows.append(_interval_row(judge, name, est, boot[name], level, len(j)))
    if scale != "interval":
        agree = (j == h).astype(float)
        rows.append(_interval_row(judge, "exact_agreement", float(agree.mean()),
                                  _wcorr_mean(agree, cl, rng, n_resamples), level, len(j)))
    conf = _confusion(judge, j, h) if scale != "interval" else pd.DataFrame(columns=["judge", "judge_value",
                                                                                        "human_value", "n"])
    return rows, conf


def _wcorr_mean(v: np.ndarray, cl: np.ndarray, rng, n_resamples: int) -> np.ndarray:
    G = int(cl.max()) + 1
    out = []
    for start in range(0, n_resamples, _BOOT_CHUNK):  # chunks: the same draws (see _boot_stats)
        counts = rng.multinomial(G, np.full(G, 1.0 / G), size=min(_BOOT_CHUNK, n_resamples - start))
        sums = counts @ np.bincount(cl, weights=v, minlength=G)
        ns = counts @ np.bincount(cl, minlength=G)
        out.append(sums / ns)
    return np.concatenate(out)


def _guard_resamples(p: Any, n_resamples: int) -> None:
    """Refuse before drawing when the bootstrap's arrays do not fit mixedeval's memory limit
    (``me.set_memory_limit`` / ``MIXEDEVAL_MEMORY_LIMIT``): the replicates kept (a few
    statistics per judge) for all resamples, and one chunk's draws x labelled rows."""
    from .._resources import check_memory, format_count  # noqa: PLC0415 - the guard's only use here
    rows = int(p.units.labelled.sum()) * max(1, p.n_epochs) * len(p.judges)
    n = int(n_resamples)
    need = 8.0 * n * 8 * len(p.judges) + 8.0 * min(n, _BOOT_CHUNK) * (3 * rows + len(p.clusters))
    check_memory(need, f"the cluster bootstrap of judge_agreement (n_resamples={format_count(n)})",
                 "Use fewer n_resamples (the default 1,000 is plenty for 95% intervals), or raise the limit.",
                 f"{format_count(n)} resamples of {8 * len(p.judges)} statistics, and {min(n, _BOOT_CHUNK):,} "
                 f"resamples x {rows:,} labelled rows at a time")


# ------------------------------------------------------------------------------ bias by system
def _bias(p: Any, k: int, judge: str, level: float) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per system the mean judge - people difference on its labelled units, its excess over the
    other systems, and the Wald test of one common bias."""
    u = p.units
    lab = u.labelled
    S = len(p.systems)
    d = np.where(lab, u.g[:, k] - np.where(lab, u.y, 0.0), 0.0)
    psis, est, rows = [], np.zeros(S), []
    for s in range(S):
        m = lab & (u.system == s)
        n = int(m.sum())
        est[s] = d[m].mean()
        psi = np.where(m, (d - est[s]) / n, 0.0)
        psis.append(cluster_sum(psi, u.cluster, u.n_clusters))
    P = np.stack(psis)
    clustered = is_clustered(u.cluster[lab])
    G = int(np.count_nonzero(np.abs(P).sum(axis=0)))
    c = G / (G - 1) if clustered and G > 1 else 1.0
    V = c * (P @ P.T)
    df = G - 1 if clustered else np.inf
    q = stats.norm.ppf(0.5 + level / 2) if not np.isfinite(df) else stats.t.ppf(0.5 + level / 2, df)
    for s in range(S):
        m = lab & (u.system == s)
        se = float(np.sqrt(V[s, s]))
        cvec = -np.full(S, 1.0 / (S - 1)) if S > 1 else np.zeros(S)
        cvec[s] = 1.0
        ex, ex_se = float(cvec @ est), float(np.sqrt(cvec @ V @ cvec)) if S > 1 else np.nan
        rows.append({"judge": judge, "system": p.systems[s], "n_labels": int(m.sum()),
                     "judge_mean": float(u.g[m, k].mean()), "human_mean": float(u.y[m].mean()), "bias": est[s],
                     "std_error": se, "conf_low": est[s] - q * se, "conf_high": est[s] + q * se,
                     "p_value": _p(est[s], se, df), "excess": ex, "excess_std_error": ex_se,
                     "excess_p_value": _p(ex, ex_se, df)})
    test = {"judge": judge, "chisq": np.nan, "df": S - 1, "p_value": np.nan}
    if S > 1:
        C = np.hstack([-np.ones((S - 1, 1)), np.eye(S - 1)])
        cb = C @ est
        chisq = float(cb @ np.linalg.pinv(C @ V @ C.T) @ cb)
        test.update(chisq=chisq, p_value=float(stats.chi2.sf(chisq, S - 1)))
    return rows, test


def _p(est: float, se: float, df: float) -> float:
    if not (np.isfinite(se) and se > 0):
        return np.nan
    z = abs(est) / se
    return float(2 * (stats.norm.sf(z) if not np.isfinite(df) else stats.t.sf(z, df)))


def _labelled_rows(p: Any) -> pd.DataFrame:
    lab = p.rows.loc[p.rows["human_score"].notna()]
    w = lab.pivot_table(index=["system", "item", "epoch", "cluster"], columns="judge", values="judge_score",
                        aggfunc="first", observed=True)
    h = lab.groupby(["system", "item", "epoch", "cluster"], observed=True)["human_score"].first()
    out = w.rename(columns=lambda c: f"j::{c}").reset_index()
    out["human_score"] = h.reindex(w.index).to_numpy()
    return out


def agreement_of(p: Any, *, scale: str, level: float, n_resamples: int, random_state: Any) -> JudgeAgreement:
    """:class:`JudgeAgreement` of prepared units (see the module docstring)."""
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 50:
        raise DataError(f"n_resamples must be an integer of at least 50, not {n_resamples!r}")
    _guard_resamples(p, n_resamples)
    lab = _labelled_rows(p)
    if len(lab) < 3:
        raise DataError(f"only {len(lab)} labelled rows: agreement needs human_score on at least three rows")
    jcols = [f"j::{j}" for j in p.judges]
    sc = _scale(lab[jcols].to_numpy(dtype=float).ravel(), lab["human_score"].to_numpy(dtype=float), scale)
    rng = as_generator(random_state)
    rows, confs, bias, tests = [], [], [], []
    for k, judge in enumerate(p.judges):
        r, c = _one_judge(judge, lab, sc, level, int(n_resamples), rng)
        rows += r
        confs.append(c)
        b, t = _bias(p, k, judge, level)
        bias += b
        tests.append(t)
    bias_df = pd.DataFrame(bias)
    bias_df["excess_p_adj"] = np.concatenate([adjust_pvalues(g["excess_p_value"].to_numpy(dtype=float), "holm")
                                              for _, g in bias_df.groupby("judge", sort=False)])
    tests_df = pd.DataFrame(tests)
    warns = _constant_judge_warnings(lab, jcols, list(p.judges)) + _bias_warnings(bias_df, tests_df, 1 - level)
    prov = {"scale": sc, "level": level, "n_resamples": int(n_resamples), "clusters": len(p.clusters),
            "bias": "judge - people on labelled units (epochs averaged), cluster-robust by item / cluster"}
    return JudgeAgreement(table=pd.DataFrame(rows), confusion=pd.concat(confs, ignore_index=True), bias=bias_df,
                          bias_test=tests_df, scale=sc, level=level, warnings=tuple(warns), provenance=prov)


def _bias_warnings(bias: pd.DataFrame, tests: pd.DataFrame, alpha: float) -> list[ResultWarning]:
    out = []
    for _, t in tests.iterrows():
        if np.isfinite(t["p_value"]) and t["p_value"] < alpha:
            b = bias[bias["judge"] == t["judge"]]
            fav = b.loc[(b["excess_p_adj"] < alpha) & (b["excess"] > 0), "system"].tolist()
            unf = b.loc[(b["excess_p_adj"] < alpha) & (b["excess"] < 0), "system"].tolist()
            who = (f"; it favours {fav}" if fav else "") + (f"; it disfavours {unf}" if unf else "")
            out.append(ResultWarning("judge_bias_by_system", f"judge {t['judge']!r} is biased differently for "
                                     f"different systems (Wald chi-square {t['chisq']:.3g} on {int(t['df'])} df, "
                                     f"p = {t['p_value']:.3g}){who}: its uncorrected scores misrank systems; use "
                                     "the judge-corrected estimates"))
    return out
