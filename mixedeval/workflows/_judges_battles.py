"""Judged battles with a few human verdicts: PPI++-corrected Bradley-Terry strengths
(:func:`bradley_terry_corrected`; the numerics in :mod:`mixedeval.inference._bt_ppi`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse, stats

from .. import _answer
from .. import _resources as res
from ..data._table_guard import guarded_table
from ..data.validate import require_columns, require_level
from ..errors import DataError
from ..inference._bt_ppi import PPIFit, ppi_bt
from ..padjust import adjust_pvalues
from ..results import ResultWarning
from ._common import _WorkflowResult

#: verdict labels (as me.bradley_terry reads them) -> a's share of the win
VERDICTS = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}


@dataclass(frozen=True, repr=False)
class JudgedBattlesResult(_answer.AnswerMixin, _WorkflowResult):
    """PPI++-corrected Bradley-Terry strengths (:func:`bradley_terry_corrected`).

    table : model, strength (log-odds, the reference model 0), std_error, conf_low, conf_high
        (corrected), classical_* (people's verdicts only) and judge_* (the judge's verdicts only,
        uncorrected), best first.
    answer : the one answer (:class:`mixedeval._answer.Answer`; views ``leaderboard``,
        ``headline``, ``checks``, ``direction``, ``differences``, ``p_value``); the headline is the
        strength difference of the best model and the runner-up (or reference); ``differences``
        every pair best first (corrected, Wald intervals and tests; ``p_adj`` Holm).
    """

    table: pd.DataFrame
    answer: _answer.Answer
    lam: float
    level: float
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _print_tables = ("leaderboard", "table", "checks")
    _title = "Judge-corrected Bradley-Terry strengths"
    _answer_priority = 35

    def _scalars(self):
        return [("headline", self.headline_text()), ("lambda (PPI++ weight)", round(self.lam, 4))]


def _verdicts(df: pd.DataFrame, col: str, allow_missing: bool) -> np.ndarray:
    v = df[col]
    miss = v.isna().to_numpy()
    if miss.any() and not allow_missing:
        raise DataError(f"column {col!r} (the judge's verdicts) has {int(miss.sum())} missing values; every battle "
                        "needs the judge's verdict")
    out = v.astype(str).str.lower().map(VERDICTS).to_numpy(dtype=float)
    bad = np.isnan(out) & ~miss
    if bad.any():
        raise DataError(f"column {col!r} has values {sorted(set(v[bad].astype(str)))[:6]} that are not verdicts; use "
                        f"{', '.join(map(repr, VERDICTS))}")
    return out


def _design(df: pd.DataFrame, model_a: str, model_b: str, anchor: Any) -> tuple[sparse.csr_matrix, list[str], str]:
    a, b = df[model_a].astype(str).to_numpy(), df[model_b].astype(str).to_numpy()
    if (a == b).any():
        raise DataError(f"{int((a == b).sum())} battles pit a model against itself; drop them")
    models = sorted(set(a) | set(b))
    ref = models[0] if anchor is None else str(anchor)
    if ref not in models:
        raise DataError(f"anchor={anchor!r} is not one of the models {models[:10]}")
    others = [m for m in models if m != ref]
    _check_size(len(df), len(models))
    idx = {m: i for i, m in enumerate(others)}
    rows = np.arange(len(df))
    ia = np.array([idx.get(m, -1) for m in a], dtype=np.int64)
    ib = np.array([idx.get(m, -1) for m in b], dtype=np.int64)
    r = np.concatenate([rows[ia >= 0], rows[ib >= 0]])
    c = np.concatenate([ia[ia >= 0], ib[ib >= 0]])
    v = np.concatenate([np.ones(int((ia >= 0).sum())), -np.ones(int((ib >= 0).sum()))])
    X = sparse.csr_matrix((v, (r, c)), shape=(len(df), len(others)))  # e_a - e_b, the reference's column dropped
    return X, [ref, *others], ref


#: models x models matrices of doubles the fit and its answer hold at their peak (Hessians, their
#: inverses, the covariances of three fits, the leaderboard's), and bytes per pair of models of the
#: differences table (eight numbers, two names, the best-first rewrite)
SQUARE_COPIES, PAIR_BYTES = 16, 250


def _check_size(n_battles: int, n_models: int) -> None:
    """Refuse (:class:`DataError`, the estimate and the fix) a fit whose models x models matrices
    and table of pairs exceed mixedeval's memory limit, before building anything (5,000 models
    raised a raw MemoryError on the dense battles x models design, which is now sparse)."""
    k = int(n_models)
    need = 8.0 * k * k * SQUARE_COPIES + PAIR_BYTES * k * (k - 1) / 2 + 200.0 * n_battles
    if need > 8 * 2**20:
        res.check_memory(need, f"bradley_terry_corrected with {res.format_count(k)} models would",
                         "Fit the models that matter (e.g. the top of a first leaderboard) or groups of models "
                         "with shared anchors, or raise the limit",
                         detail=(f"{SQUARE_COPIES} models x models matrices of doubles and "
                                 f"{res.format_count(k * (k - 1) // 2)} pairs of models"))


def _components(a: np.ndarray, b: np.ndarray, models: list[str]) -> list[list[str]]:
    """The connected components of the graph of battles (models as nodes)."""
    parent = {m: m for m in models}

    def find(m: str) -> str:
        while parent[m] != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m

    for x, y in zip(a, b):
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[rx] = ry
    groups: dict[str, list[str]] = {}
    for m in models:
        groups.setdefault(find(m), []).append(m)
    return sorted(groups.values(), key=lambda g: (-len(g), g))


def _check_labelled_design(df: pd.DataFrame, model_a: str, model_b: str, lab: np.ndarray, human_winner: str) -> None:
    """The corrected fit needs unlabelled battles (the judge's part), people's verdicts on every
    model's battles, and one connected graph of battles among the labelled ones and among all
    (strengths of models never compared, directly or through others, are not defined: the fit
    would stop on a singular matrix)."""
    a, b = df[model_a].astype(str).to_numpy(), df[model_b].astype(str).to_numpy()
    models = sorted(set(a) | set(b))
    if lab.all():
        raise DataError(f"every battle has a human verdict in {human_winner!r}: there are no judge-only battles to add; "
                        "fit the people's verdicts alone (me.bradley_terry on the human_winner column) or give the "
                        "judge's verdicts on more, unlabelled battles")
    seen = set(a[lab]) | set(b[lab])
    missing = [m for m in models if m not in seen]
    if missing:
        raise DataError(f"model(s) {missing[:10]} have no battle with a human verdict in {human_winner!r}: the "
                        "correction needs people's verdicts on every model's battles; label a random sample of "
                        "battles that includes them (or drop those models)")
    for rows, what in ((np.ones(len(a), dtype=bool), "battles"), (lab, "battles with a human verdict")):
        comps = _components(a[rows], b[rows], models)
        if len(comps) > 1:
            raise DataError(f"the {what} split the models into {len(comps)} groups never compared with each other "
                            f"({'; '.join(str(g[:4]) for g in comps[:3])}): strengths across groups are not defined; "
                            "add battles between the groups (or analyse each group alone)")


def _fit_all(X, y, yh, lab, cl, method):
    cl_l = None if cl is None else cl[lab]
    cl_u = None if cl is None else cl[~lab]
    dl = res.Deadline(f"bradley_terry_corrected's fits ({res.format_count(X.shape[1] + 1)} models, "
                      f"{res.format_count(X.shape[0])} battles)",
                      "Fit fewer models (e.g. the top of a first leaderboard), or raise the time limit")
    XL, XU = X[np.flatnonzero(lab)], X[np.flatnonzero(~lab)]
    try:
        fits = {"": ppi_bt(XL, y[lab], yh[lab], XU, yh[~lab], method=method, cl_l=cl_l, cl_u=cl_u, deadline=dl),
                "classical_": ppi_bt(XL, y[lab], yh[lab], XU, yh[~lab], method="classical", cl_l=cl_l,
                                     cl_u=cl_u, deadline=dl)}
        # the judge alone: a plain fit to its verdicts on every battle (people's verdicts ignored)
        fits["judge_"] = ppi_bt(X, yh, yh, X[:0], yh[:0], method="classical", cl_l=cl,
                                cl_u=None if cl is None else cl[:0], deadline=dl)
    except np.linalg.LinAlgError:
        raise DataError("the Bradley-Terry fit did not converge (its Hessian became singular): some models have too "
                        "few battles to pin their strengths -- a model that wins or loses (almost) all of its "
                        "judge-only or labelled battles, or whose people's and judge's verdicts differ more than its "
                        "judge-only battles can absorb, sends its strength to infinity; add battles of those models "
                        "(or drop them)") from None
    return fits


def _table(fits: dict[str, PPIFit], names: list[str], level: float) -> tuple[pd.DataFrame, np.ndarray]:
    out = pd.DataFrame({"model": names})
    V_full = None
    for prefix, f in fits.items():
        est = np.concatenate([[0.0], f.theta])
        V = np.zeros((len(names), len(names)))
        V[1:, 1:] = f.vcov
        se = np.sqrt(np.diag(V))
        q = _answer.z_quantile(level) if not np.isfinite(f.df) else stats.t.ppf(0.5 + level / 2, f.df)
        out[f"{prefix}strength"] = est
        out[f"{prefix}std_error"] = se
        out[f"{prefix}conf_low"], out[f"{prefix}conf_high"] = est - q * se, est + q * se
        if prefix == "":
            V_full = V
    return out, V_full


def _pair(fit: PPIFit, names: list[str], a: str, b: str, level: float) -> tuple[float, float, float, float, float]:
    est = np.concatenate([[0.0], fit.theta])
    V = np.zeros((len(names), len(names)))
    V[1:, 1:] = fit.vcov
    i, j = names.index(a), names.index(b)
    d = est[i] - est[j]
    se = float(np.sqrt(V[i, i] + V[j, j] - 2 * V[i, j]))
    q = _answer.z_quantile(level) if not np.isfinite(fit.df) else stats.t.ppf(0.5 + level / 2, fit.df)
    z = abs(d) / se if se > 0 else np.nan
    p = float(2 * (stats.norm.sf(z) if not np.isfinite(fit.df) else stats.t.sf(z, fit.df)))
    return d, se, d - q * se, d + q * se, p


def _pairs(fit: PPIFit, names: list[str], order: list[str], level: float) -> pd.DataFrame:
    """Every pair of models best first (:func:`mixedeval._answer.best_first_pairs`): the corrected
    strength difference, its interval and test (:func:`_pair`'s formulas, for all pairs at once),
    ``p_adj`` Holm over the pairs."""
    k = len(names)
    if k < 2:
        return pd.DataFrame(columns=list(_answer.PAIR_COLUMNS))
    est = np.concatenate([[0.0], fit.theta])
    V = np.zeros((k, k))
    V[1:, 1:] = fit.vcov
    i, j = np.triu_indices(k, 1)
    d = est[i] - est[j]
    se = np.sqrt(V[i, i] + V[j, j] - 2 * V[i, j])
    q = _answer.z_quantile(level) if not np.isfinite(fit.df) else stats.t.ppf(0.5 + level / 2, fit.df)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, np.abs(d) / np.where(se > 0, se, 1.0), np.nan)
    p = 2 * (stats.norm.sf(z) if not np.isfinite(fit.df) else stats.t.sf(z, fit.df))
    arr = np.asarray(names, dtype=object)
    pairs = pd.DataFrame({"system_a": arr[i], "system_b": arr[j], "delta": d, "std_error": se, "conf_low": d - q * se,
                          "conf_high": d + q * se, "p_value": p})
    pairs["p_adj"] = adjust_pvalues(pairs["p_value"].to_numpy(dtype=float), "holm")
    return _answer.best_first_pairs(pairs, order, True)


def bradley_terry_corrected(battles: Any, *, model_a: str = "model_a", model_b: str = "model_b",
                            winner: str = "winner", human_winner: str = "human_winner", cluster: str | None = None,
                            anchor: Any = None, method: str = "ppi++", level: float = 0.95, reference: Any = None,
                            random_state: Any = None) -> JudgedBattlesResult:
    """Bradley-Terry strengths from judge verdicts on all battles corrected by people's verdicts
    on a random subset (PPI++ for the Bradley-Terry coefficients; Boyeau, Angelopoulos et al.,
    ICML 2025, "AutoEval done right").

    ``winner`` holds the judge's verdict on every battle, ``human_winner`` people's verdict where
    they gave one (missing elsewhere); verdicts are ``"model_a"``, ``"model_b"``, ``"tie"`` or
    ``"tie (bothbad)"`` (a tie counts half a win each). Strengths are log-odds with the
    ``anchor`` model (default: the first name) at 0. ``method``: ``"ppi++"`` (power-tuned) or
    ``"ppi"``. The numbers are ppi-python's ``ppi_logistic_ci`` on the Bradley-Terry design (see
    :mod:`mixedeval.inference._bt_ppi`); ``cluster=`` (e.g. the prompt) makes the covariance
    cluster-robust. The people-only and judge-only fits are beside them (``classical_*``,
    ``judge_*``), and the judge-only headline difference is a check.
    """
    if method not in ("ppi++", "ppi"):
        raise DataError(f"method must be 'ppi++' or 'ppi', not {method!r}")
    level = require_level(level)
    df = guarded_table(battles, what="battles")
    require_columns(df, [model_a, model_b, winner, human_winner, cluster], "battles")
    yh = _verdicts(df, winner, allow_missing=False)
    y = _verdicts(df, human_winner, allow_missing=True)
    lab = ~np.isnan(y)
    if lab.sum() < 10:
        raise DataError(f"only {int(lab.sum())} battles have a human verdict in {human_winner!r}; PPI needs people's "
                        "verdicts on a random sample of battles (tens at least)")
    X, names, ref = _design(df, model_a, model_b, anchor)
    _check_labelled_design(df, model_a, model_b, lab, human_winner)
    cl = None if cluster is None else pd.factorize(df[cluster].astype(str))[0]
    fits = _fit_all(X, np.where(lab, y, 0.0), yh, lab, cl, method)
    table, V = _table(fits, names, level)
    d = _answer.direction("strength", True)
    board = _answer.leaderboard(pd.Series(table["strength"].to_numpy(), index=names),
                                std_error=table["std_error"].to_numpy(), conf_low=table["conf_low"].to_numpy(),
                                conf_high=table["conf_high"].to_numpy(), vcov=V + np.eye(len(names)) * 1e-12,
                                level=level, random_state=random_state)
    head, checks = None, None
    pair = _answer.choose_pair(board, reference)
    if pair is not None:
        a, b = pair
        dd, se, lo, hi, p = _pair(fits[""], names, a, b, level)
        head = _answer.headline(a, b, dd, se, lo, hi, p, fits[""].df,
                                f"{'PPI++' if method == 'ppi++' else 'PPI'} judge-corrected Bradley-Terry",
                                d, level=level, unit="log-odds", reference=reference)
        rows = []
        for prefix, name in (("classical_", "human verdicts only (classical)"), ("judge_", "judge verdicts only")):
            d2, _, lo2, hi2, p2 = _pair(fits[prefix], names, head.better, head.other, level)
            rows.append(_answer.check_row(name, head, estimate=d2, conf_low=lo2, conf_high=hi2, p_value=p2))
        checks = _answer.checks_table(rows)
    label = f"{'PPI++' if method == 'ppi++' else 'PPI'} judge-corrected Bradley-Terry"
    ans = _answer.Answer(direction=d, leaderboard=board, headline=head, checks=checks, method=label,
                         differences=_pairs(fits[""], names, list(board["name"]), level),
                         no_headline_text="one model: no comparison")
    order = table["strength"].to_numpy().argsort()[::-1]
    warns = ()
    if np.array_equal(y[lab], yh[lab]):
        warns = (ResultWarning("judge_never_corrected", f"people agree with the judge on all {int(lab.sum())} "
                               "labelled battles: the correction has nothing to correct, so the strengths and "
                               "intervals rest on the judge's verdicts (a judge that errs on a few percent of battles "
                               "can agree on a sample this size); label more battles to check the judge"),)
    prov = {"workflow": "bradley_terry_corrected", "method": method, "anchor": ref, "n_battles": len(df),
            "n_labels": int(lab.sum()), "cluster": cluster, "level": level}
    return JudgedBattlesResult(table=table.iloc[order].reset_index(drop=True), answer=ans, lam=fits[""].lam,
                               level=level, warnings=warns, provenance=prov)


__all__ = ["JudgedBattlesResult", "bradley_terry_corrected"]
