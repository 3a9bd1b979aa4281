"""The checks of :func:`mixedeval.bayes_glmm`: sampler diagnostics, posterior predictive checks,
the loo comparison with and without task effects, and the frequentist GLMM on the same data.
Every verdict is computed from the check's own numbers ("agrees" when the check finds nothing
wrong, else "differs: <why>")."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ... import _answer
from ..._format import fmt_p
from ...errors import DataError
from ...results import ResultWarning
from ._bayes_draws import ppc_p

#: R-hat above this fails (Vehtari et al. 2021)
RHAT_MAX = 1.01
#: bulk / tail ESS below this per chain fails (Vehtari et al. 2021: 100 per chain)
ESS_PER_CHAIN = 100
#: a posterior predictive p-value below this fails
PPC_ALPHA = 0.05
#: Pareto k above this makes loo's estimate of that observation unreliable (loo's threshold)
PARETO_K = 0.7
#: elpd difference (in SEs) beyond which the other model is clearly better
LOO_SE = 2.0


def _row(check: str, estimate: float, verdict: str, *, conf_low: float = np.nan, conf_high: float = np.nan,
         p_value: float = np.nan, range_word: str = "replicated") -> dict[str, Any]:
    """A checks row of a diagnostic: its statistic goes into the check's text (``estimate`` and the
    interval columns hold the headline's advantage, on its scale, which a diagnostic does not
    estimate; the numbers are in ``result.diagnostics`` / ``ppc`` / ``loo``)."""
    lo_hi = f", {range_word} {conf_low:.3g} to {conf_high:.3g}" if np.isfinite(conf_low) else ""
    return {"check": f"{check}: {estimate:.4g}{lo_hi}", "estimate": np.nan, "conf_low": np.nan, "conf_high": np.nan,
            "p_value": float(p_value), "verdict": verdict}


# ------------------------------------------------------------------------------ sampler
def diagnostic_rows(diag: pd.DataFrame, divergences: tuple[int, ...], n_draws: int) -> list[dict[str, Any]]:
    """R-hat (max), bulk and tail ESS (min) over the parameters, divergent transitions (total)."""
    chains = max(1, len(divergences))
    rhat = diag["rhat"].to_numpy(dtype=float)
    worst = str(diag["parameter"].iloc[int(np.nanargmax(rhat))]) if np.isfinite(rhat).any() else "?"
    mx = float(np.nanmax(rhat)) if np.isfinite(rhat).any() else np.nan
    rows = [_row("R-hat (largest over parameters)", mx,
                 "agrees" if mx <= RHAT_MAX else f"differs: R-hat {mx:.3f} > {RHAT_MAX} for {worst}: the chains "
                 "have not mixed; run more iterations (iter=)")]
    need = ESS_PER_CHAIN * chains
    for col, what in (("ess_bulk", "bulk ESS"), ("ess_tail", "tail ESS")):
        v = diag[col].to_numpy(dtype=float)
        mn = float(np.nanmin(v)) if np.isfinite(v).any() else np.nan
        who = str(diag["parameter"].iloc[int(np.nanargmin(v))]) if np.isfinite(v).any() else "?"
        rows.append(_row(f"{what} (smallest over parameters)", mn,
                         "agrees" if mn >= need else f"differs: {what} {mn:.0f} < {need} ({ESS_PER_CHAIN} per chain) "
                         f"for {who}: too few effective draws; run more iterations"))
    nd = int(sum(divergences))
    rows.append(_row("divergent transitions after warm-up", nd,
                     "agrees" if nd == 0 else f"differs: {nd} divergent transitions of {n_draws} draws: the posterior "
                     "may be biased; raise adapt_delta (e.g. 0.99)"))
    return rows


# ------------------------------------------------------------------------------ posterior predictive
def ppc(model: Any, frame: pd.DataFrame, family: str, systems: list[str], seed: int,
        n_draws: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Posterior predictive checks from ``rstanarm::posterior_predict`` (seeded): the success rate
    (mean score) per system, per task, overall, and the SD of the tasks' rates (extra-binomial
    variation between tasks), observed against replicated; two-sided posterior predictive p-values."""
    from ...engine import _bridge  # noqa: PLC0415 - the engine module loads only when a check runs

    pp = _bridge.bayes_predict(model, n_draws=n_draws, seed=seed)
    yrep, y = pp["yrep"], pp["observed"]
    trials = (frame["successes"] + frame["failures"]).to_numpy(dtype=float) if family == "binomial" \
        else np.ones(len(frame))
    rows = []
    data: dict[str, Any] = {"system": [], "task": []}

    def rate(codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        n = np.bincount(codes, weights=trials, minlength=k)
        obs = np.bincount(codes, weights=y, minlength=k) / n
        rep = np.stack([np.bincount(codes, weights=r, minlength=k) for r in yrep]) / n
        return obs, rep

    for level, col in (("system", "system"), ("task", "item")):
        cat = frame[col].cat
        codes = cat.codes.to_numpy()
        names = [str(c) for c in cat.categories]
        obs, rep = rate(codes, len(names))
        lo, hi = np.quantile(rep, 0.025, axis=0), np.quantile(rep, 0.975, axis=0)
        ps = np.array([ppc_p(o, rep[:, j]) for j, o in enumerate(obs)])
        data[level] = pd.DataFrame({"name": names, "observed": obs, "rep_low": lo, "rep_high": hi,
                                    "rep_mean": rep.mean(axis=0)})
        for j, n in enumerate(names):
            rows.append({"level": level, "name": n, "statistic": "success rate", "observed": obs[j],
                         "replicated": rep[:, j].mean(), "rep_low": lo[j], "rep_high": hi[j], "p_value": ps[j]})
        if level == "task":
            sd_obs, sd_rep = obs.std(ddof=1), rep.std(axis=1, ddof=1)
            rows.append({"level": "all", "name": "(all tasks)", "statistic": "SD of task success rates",
                         "observed": sd_obs, "replicated": sd_rep.mean(), "rep_low": np.quantile(sd_rep, 0.025),
                         "rep_high": np.quantile(sd_rep, 0.975), "p_value": ppc_p(sd_obs, sd_rep)})
    tot = yrep.sum(axis=1) / trials.sum()
    o = float(y.sum() / trials.sum())
    rows.append({"level": "all", "name": "(all)", "statistic": "success rate", "observed": o, "replicated": tot.mean(),
                 "rep_low": np.quantile(tot, 0.025), "rep_high": np.quantile(tot, 0.975), "p_value": ppc_p(o, tot)})
    return pd.DataFrame(rows), data


def ppc_rows(tab: pd.DataFrame) -> list[dict[str, Any]]:
    """Check rows: the SD of task rates, and the smallest per-system and per-task p-values
    (Bonferroni over the systems / tasks)."""
    rows = []
    sd = tab[tab["statistic"] == "SD of task success rates"]
    if len(sd):
        r = sd.iloc[0]
        ok = r["p_value"] >= PPC_ALPHA
        rows.append(_row("posterior predictive check: SD of the tasks' success rates", r["observed"],
                         "agrees" if ok else f"differs: observed {r['observed']:.3f} outside what the model "
                         f"replicates ({r['rep_low']:.3f} to {r['rep_high']:.3f}, p = {fmt_p(r['p_value'])}): the "
                         "tasks vary more (or less) than the model allows; add task effects or a cluster",
                         conf_low=r["rep_low"], conf_high=r["rep_high"], p_value=r["p_value"]))
    for level, word in (("system", "systems"), ("task", "tasks")):
        t = tab[(tab["level"] == level) & (tab["statistic"] == "success rate")]
        if not len(t):
            continue
        j = int(np.argmin(t["p_value"].to_numpy()))
        p = float(min(1.0, t["p_value"].iloc[j] * len(t)))
        name = str(t["name"].iloc[j])
        rows.append(_row(f"posterior predictive check: success rate per {level} (Bonferroni over {len(t)} {word})",
                         t["observed"].iloc[j],
                         "agrees" if p >= PPC_ALPHA else f"differs: {name}'s observed rate "
                         f"{t['observed'].iloc[j]:.3f} is outside its replicated range "
                         f"({t['rep_low'].iloc[j]:.3f} to {t['rep_high'].iloc[j]:.3f}; adjusted p = {fmt_p(p)})",
                         conf_low=t["rep_low"].iloc[j], conf_high=t["rep_high"].iloc[j], p_value=p))
    return rows


def ppc_figure(data: dict[str, Any] | None, path: Any = None):
    """Observed rates (points) against the replicated 95% intervals (bars), per system and per task."""
    if data is None:
        raise DataError("no posterior predictive check was computed (ppc=False)")
    from matplotlib.figure import Figure  # noqa: PLC0415 - matplotlib loads only when a figure is drawn

    fig = Figure(figsize=(10, 4), layout="constrained")
    axes = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 2]})
    for ax, level in zip(axes, ("system", "task")):
        d = data[level]
        if level == "task":
            d = d.sort_values("observed", kind="stable").reset_index(drop=True)
        x = np.arange(len(d))
        ax.vlines(x, d["rep_low"], d["rep_high"], color="0.6", lw=4, label="replicated 95%")
        inside = (d["observed"] >= d["rep_low"]) & (d["observed"] <= d["rep_high"])
        ax.plot(x[inside], d["observed"][inside], "o", color="C0", label="observed")
        ax.plot(x[~inside], d["observed"][~inside], "o", color="C3", label="observed (outside)")
        ax.set_title(f"per {level}")
        ax.set_ylabel("success rate")
        if level == "system" or len(d) <= 30:
            ax.set_xticks(x, [str(n) for n in d["name"]], rotation=60, ha="right", fontsize=7)
        else:
            ax.set_xticks([])
            ax.set_xlabel("tasks (sorted by observed rate)")
    axes[0].legend(fontsize=7)
    if path is not None:
        fig.savefig(path, format="png", dpi=100)
    return fig


# ------------------------------------------------------------------------------ loo
def loo_table(frame: pd.DataFrame, family: str, clustered: bool, items: bool, model: Any, chains: int, iter: int,  # noqa: A002
              seed: int, cores: int) -> tuple[pd.DataFrame, list[ResultWarning]]:
    """``loo`` of the fitted model and of the same model with task effects removed (or added,
    when the fit has none), compared by ``loo::loo_compare``."""
    from ...engine import _bridge  # noqa: PLC0415 - the engine module loads only when a check runs

    other = _bridge.bayes_fit(frame, family=family, items=not items, cluster=clustered, chains=chains, iter=iter,
                              seed=seed, refresh=0, cores=cores)
    names = ("with task effects", "without task effects") if items else ("without task effects", "with task effects")
    res = _bridge.bayes_loo(model, other.value["model"], model_names=list(names))
    v = res.value
    cmp = v["compare"]
    elpd = dict(zip(names, np.atleast_1d(v["elpd"]).astype(float)))
    se = dict(zip(names, np.atleast_1d(v["elpd_se"]).astype(float)))
    kb = dict(zip(names, np.atleast_1d(v["k_bad"]).astype(int)))
    km = dict(zip(names, np.atleast_1d(v["k_max"]).astype(float)))
    rows = [{"model": str(m), "fitted": str(m) == names[0], "elpd": elpd[str(m)], "elpd_se": se[str(m)],
             "elpd_diff": float(d), "se_diff": float(s), "pareto_k_bad": kb[str(m)], "pareto_k_max": km[str(m)]}
            for m, d, s in zip(cmp["model"], cmp["elpd_diff"], cmp["se_diff"])]
    warns = [ResultWarning("pareto_k", f"loo: {kb[n]} observations of the model {n} have Pareto k > {PARETO_K}; its "
                           "elpd estimate is unreliable") for n in names if kb[n] > 0]
    return pd.DataFrame(rows), warns


def loo_rows(tab: pd.DataFrame) -> list[dict[str, Any]]:
    """One check row: the fitted model's elpd minus the other's, +- 2 SE; it differs when the other
    model predicts better by more than :data:`LOO_SE` standard errors, or when some Pareto k exceeds
    :data:`PARETO_K` and the difference is not beyond ``2 LOO_SE`` standard errors (loo cannot decide)."""
    fitted = tab[tab["fitted"]].iloc[0]
    other = tab[~tab["fitted"]].iloc[0]
    d = float(fitted["elpd"] - other["elpd"])
    se = float(max(tab["se_diff"]))
    k = int(tab["pareto_k_bad"].sum())
    knote = f"; {k} Pareto k > {PARETO_K} (loo unreliable for those observations)" if k else ""
    if d < -LOO_SE * se:
        verdict = f"differs: the model {other['model']} predicts better (elpd {d:+.1f}, SE {se:.1f}){knote}"
    elif k and d < 2 * LOO_SE * se:  # unreliable and not clear-cut
        verdict = f"differs: {knote[2:]}, and the difference is within {2 * LOO_SE:g} SE"
    else:
        verdict = "agrees" + (f" (note: {knote[2:]}; the difference exceeds {2 * LOO_SE:g} SE)" if k else "")
    return [_row(f"loo: elpd of the fitted model ({fitted['model']}) minus the model {other['model']}", d, verdict,
                 conf_low=d - LOO_SE * se, conf_high=d + LOO_SE * se, range_word="+-2 SE")]


# ------------------------------------------------------------------------------ frequentist
def frequentist_row(design: Any, head: _answer.Headline) -> dict[str, Any]:
    """The headline pair in the frequentist binomial GLMM (:func:`mixedeval.compare_systems`,
    ``family="binomial"``, attempts as rows, ``score ~ system + (1|item)``), as a check row."""
    from ..compare_systems import compare_systems  # noqa: PLC0415 - lme4's check loads only when it runs

    r = design.rows
    several = r["task"].nunique() > 1
    rows = pd.DataFrame({"system": r["system"].astype(str).to_numpy(),
                         "item": ((r["task"].astype(str) + "::" + r["item"].astype(str)) if several
                                  else r["item"].astype(str)).to_numpy(),
                         "score": r["score"].to_numpy(dtype=float)})
    name = "frequentist binomial GLMM (lme4::glmer, compare_systems)"
    try:
        res = compare_systems(rows, score="score", system="system", item="item", family="binomial",
                              higher_is_better=head.direction.higher_is_better if head.direction else True,
                              progress=False)
    except Exception as exc:  # noqa: BLE001 - a failed fit is itself the finding
        return _answer.check_row(name, head, why=f"the GLMM could not be fitted ({exc})")
    diffs = res.answer.differences
    hit = _answer.pair_row(diffs, head.better, head.other) if diffs is not None else None
    if hit is None:
        return _answer.check_row(name, head, why="the headline pair is not among the GLMM's comparisons")
    row, sign = hit
    est = sign * float(row["delta"])
    lo, hi = (row["conf_low"], row["conf_high"]) if sign > 0 else (-row["conf_high"], -row["conf_low"])
    why = None
    sep = [w for w in res.warnings if getattr(w, "kind", "") == "separation"]
    if sep:
        why = "the GLMM has separation (a system always right or wrong), so its Wald test is unreliable"
    return _answer.check_row(name, head, estimate=est, conf_low=float(lo), conf_high=float(hi),
                             p_value=float(row["p_value"]), why=why)
