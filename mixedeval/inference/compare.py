"""Likelihood-ratio tests between nested linear mixed models.

The table is lme4's ``anova(m0, m1, ...)`` (Bates et al. 2015): models ordered by their number
of parameters, ``chisq = 2 * (loglik_k - loglik_{k-1})`` (floored at 0), ``df`` the difference
in parameters and ``p_value = pchisq(chisq, df, lower.tail = FALSE)``.

Which likelihood is compared (statistical rule 1 of the design):

* the fixed-effect design differs (any column of ``getME(m, "X")``): every model is refitted by
  ML (``anova(m0, m1)``, lme4's ``refitML``), and a ``refit_ml`` warning says so, because REML
  likelihoods of different fixed effects are not comparable;
* only the random effects differ and every model is REML: REML is kept
  (``anova(m0, m1, refit = FALSE)``), the better test for variance components (Pinheiro &
  Bates 2000, sec. 2.4).

The ``estimator`` column says which likelihood each row holds; a REML log-likelihood is never
printed beside an ML chi-square.

A variance tested against zero sits on the boundary of its parameter space, where the
chi-square reference is conservative. When a model adds exactly one variance (with its
covariances in the same random-effect block) and nothing else, ``p_value_mixture`` is the
50:50 mixture ``0.5 * P(chi2_df > chisq) + 0.5 * P(chi2_{df-1} > chisq)`` (Self & Liang 1987;
Stram & Lee 1994). On request, ``p_value_pb`` is pbkrtest's parametric-bootstrap p-value
(Halekoh & Højsgaard 2014): ``(1 + #{ref > chisq_ML}) / (1 + #{ref > 0})`` over ``pb_nsim``
likelihood-ratio statistics of data simulated from the smaller model, both models refitted by
ML; seeded so that it equals ``set.seed(seed); pbkrtest::PBmodcomp(large, small, nsim)``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine import names as rnames
from ..errors import DataError
from ..results import ResultMixin, ResultWarning, r_condition_warnings

COLUMNS = ("model", "formula", "npar", "aic", "bic", "loglik", "deviance", "chisq", "df", "p_value", "estimator")


@dataclass(frozen=True, repr=False)
class CompareResult(ResultMixin):
    """Likelihood-ratio tests between nested mixed models (lme4's ``anova(m0, m1, ...)``).

    ``table``: model, formula, npar, aic, bic, loglik, deviance, chisq, df, p_value, estimator
    (``"ML"`` or ``"REML"``: the likelihood in loglik/aic/bic/deviance/chisq), plus
    ``p_value_mixture`` (50:50 chi-square mixture; NaN where it does not apply) when a model
    adds exactly one variance component to the previous one, and ``p_value_pb`` (parametric
    bootstrap) when ``pb_nsim`` was given. ``pb``: pbkrtest's summary table per comparison
    (test LRT / PBtest / Gamma / Bartlett / F; stat, df, ddf, p_value) or None.
    """

    table: Any
    estimator: str
    refitted: bool
    pb: Any
    warnings: tuple[ResultWarning, ...]
    provenance: dict[str, Any]

    _main_table = "table"
    _print_tables = ("table", "pb")

    @property
    def _title(self) -> str:  # type: ignore[override]
        how = "refitted by ML" if self.refitted else f"{self.estimator} as fitted"
        return f"Likelihood-ratio tests (lme4 anova), models {how}"


def _default_names(k: int) -> list[str]:
    return [f"model_{i + 1}" for i in range(k)]


def _check_fits(fits: Sequence[Any], names_: Sequence[str] | None) -> list[str]:
    from ..lmm import LMMFit  # noqa: PLC0415

    if len(fits) < 2:
        raise DataError("compare() needs at least two fitted models, e.g. me.compare(null_fit, full_fit)")
    for i, f in enumerate(fits):
        if not isinstance(f, LMMFit):
            raise DataError(f"argument {i + 1} is a {type(f).__name__}, not a fit from mixedeval.lmm()")
    labels = _default_names(len(fits)) if names_ is None else [str(n) for n in names_]
    if len(labels) != len(fits):
        raise DataError(f"names has {len(labels)} entries for {len(fits)} models; give one name per model")
    if len(set(labels)) != len(labels):
        raise DataError(f"names must be distinct, got {labels}")
    nobs = [f.nobs for f in fits]
    if len(set(nobs)) > 1:
        detail = ", ".join(f"{n}: {k} rows" for n, k in zip(labels, nobs))
        raise DataError(
            f"the models were fitted to different data ({detail}); likelihood-ratio tests need the same rows. "
            "Drop rows with missing values in any model's variables before fitting all models"
        )
    return labels


def _decide_refit(refit: bool | None, fixed_equal: bool, reml: list[bool], labels: list[str]):
    """(refit_flag, warnings) following the module docstring's rules."""
    any_reml = any(reml)
    mixed = any_reml and not all(reml)
    if refit is None:
        do_refit = (not fixed_equal) or mixed
    elif refit:
        do_refit = True
    else:
        if not fixed_equal and any_reml:
            raise DataError("refit=False with different fixed effects would compare REML likelihoods, which are not "
                            "comparable across fixed-effect structures; use refit=None (automatic ML refit)")
        if mixed:
            raise DataError("refit=False with some models fitted by REML and some by ML compares likelihoods of "
                            "different kinds; refit the models alike or use refit=None")
        do_refit = False
    ws: list[ResultWarning] = []
    if do_refit and any_reml:
        which = ", ".join(n for n, r in zip(labels, reml) if r)
        why = ("the fixed effects differ and REML likelihoods are not comparable across fixed effects"
               if not fixed_equal else "ML refit requested" if refit else "the models mix REML and ML fits")
        ws.append(ResultWarning("refit_ml", f"refitted by ML for the likelihood-ratio test ({which}): {why} "
                                "(as lme4's anova(m0, m1) does)", "mixedeval"))
    return do_refit, ws


def compare(
    *fits: Any,
    refit: bool | None = None,
    pb_nsim: int | None = None,
    seed: int | None = None,
    progress: bool = True,
    names: Sequence[str] | None = None,
) -> CompareResult:
    """Likelihood-ratio tests between nested fits (see the module docstring for the rules).

    Parameters
    ----------
    *fits : two or more :class:`mixedeval.LMMFit` on the same rows, in any order (rows are
        ordered by number of parameters, as lme4 does; each row is tested against the one above).
    refit : None (automatic: ML when the fixed effects differ or estimators are mixed, REML kept
        when only random effects differ), True (always ML), False (keep the fits; an error when
        that would compare REML likelihoods of different fixed effects).
    pb_nsim : number of parametric-bootstrap samples (pbkrtest's PBmodcomp); None for none.
    seed : R's ``set.seed`` value for the bootstrap; None draws one (recorded in provenance).
    progress : show a tqdm bar during the bootstrap.
    names : row labels of the models (default ``model_1``, ``model_2``, ... in argument order).
    """
    import pandas as pd  # noqa: PLC0415

    from ..engine import session  # noqa: PLC0415

    labels = _check_fits(fits, names)
    if pb_nsim is not None:
        if isinstance(pb_nsim, bool) or not isinstance(pb_nsim, (int, np.integer)) or pb_nsim < 1:
            raise DataError(f"pb_nsim must be a positive integer number of bootstrap samples (e.g. 1000), not {pb_nsim!r}")
        seed = _resolve_seed(seed)
    models = [f._model for f in fits]
    chk = session.call("me_compare_check", models=models).value
    if not bool(chk["response_equal"]):
        raise DataError("the models were fitted to different response values (or rows in a different order); "
                        "fit all models to the same data frame")
    fixed_equal = bool(chk["fixed_equal"])
    reml = [bool(r) for r in np.atleast_1d(chk["reml"])]
    do_refit, ws = _decide_refit(refit, fixed_equal, reml, labels)
    res = session.call("me_compare", models=models, model_names=labels, refit=do_refit, mixture=fixed_equal)
    ws += [w for w in r_condition_warnings(res) if "refitting model(s) with ML" not in w.message]
    tab = _rename_lrt(res.value["table"])
    order = [labels.index(str(m)) for m in tab["model"]]
    tab["model"] = [labels[i] for i in order]
    tab.insert(1, "formula", [fits[i].formula for i in order])
    tab["npar"] = tab["npar"].astype(int)
    for c in ("aic", "bic", "loglik", "deviance", "chisq", "df", "p_value"):
        tab[c] = pd.to_numeric(tab[c]).astype(float)
    estimator = "ML" if (do_refit or not any(reml)) else "REML"
    tab["estimator"] = estimator
    tab = tab.reindex(columns=list(COLUMNS))
    pmix = np.atleast_1d(np.asarray(res.value["p_mixture"], dtype=float))
    if fixed_equal and np.isfinite(pmix).any():
        tab["p_value_mixture"] = pmix
    pb = None
    prov = dict(fits[0].provenance)
    prov.update({"r_function": "lme4::anova.merMod", "estimator": estimator, "refit_ml": bool(do_refit)})
    if pb_nsim is not None:
        pvals, pb, pb_ws = _parametric_bootstrap([fits[i] for i in order], list(tab["model"]), int(pb_nsim), seed,
                                                 progress)
        tab["p_value_pb"] = pvals
        ws += pb_ws
        prov.update({"pb_nsim": int(pb_nsim), "seed": seed, "pb_function": "pbkrtest::PBmodcomp"})
    return CompareResult(table=tab, estimator=estimator, refitted=bool(do_refit and any(reml)), pb=pb,
                         warnings=tuple(ws), provenance=prov)


def _rename_lrt(raw):
    """lme4's LRT table with mixedeval's column names (either lme4 naming generation)."""
    return rnames.rename(raw, rnames.LRT, legacy=rnames.LRT_LEGACY)


def _resolve_seed(seed: int | None) -> int:
    if seed is None:
        return int(np.random.default_rng().integers(1, 2**31 - 1))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise DataError(f"seed must be an integer (R's set.seed value), not {seed!r}")
    return int(seed)


def _parametric_bootstrap(ordered_fits, labels, nsim: int, seed: int, progress: bool):
    """p_value_pb per row (NaN for the first) and pbkrtest's summary tables."""
    import pandas as pd  # noqa: PLC0415

    from ..engine import session  # noqa: PLC0415
    from ..resampling._draws import chunks  # noqa: PLC0415

    pvals = [np.nan]
    tables = []
    ws: list[ResultWarning] = []
    for k in range(1, len(ordered_fits)):
        small, large = ordered_fits[k - 1]._model, ordered_fits[k]._model
        # every comparison restarts from the seed, as a fresh set.seed(seed); PBmodcomp(...) would
        setup = session.call("me_pb_setup", large=large, small=small, nsim=nsim, seed=seed)
        state = setup.value
        ref = []
        n_warn = 0
        first_warning = None
        desc = f"parametric bootstrap {labels[k]} vs {labels[k - 1]}"
        for a, b in chunks(nsim, max(1, min(25, nsim // 20)), progress, desc):
            out = session.call("me_pb_chunk", state=state, first=a + 1, last=b)
            ref.append(np.atleast_1d(np.asarray(out.value, dtype=float)))
            n_warn += len(out.warnings)
            first_warning = first_warning or (out.warnings[0] if out.warnings else None)
        ref_arr = np.concatenate(ref)
        fin = session.call("me_pb_finish", large=large, small=small, ref=ref_arr)
        t = rnames.rename(fin.value["test"], rnames.PBMODCOMP)
        t.insert(0, "comparison", f"{labels[k]} vs {labels[k - 1]}")
        t["nsim"] = int(fin.value["nsim"])
        t["npos"] = int(fin.value["npos"])
        tables.append(t)
        pvals.append(float(t.loc[t["test"] == "PBtest", "p_value"].iloc[0]))
        if n_warn:
            ws.append(ResultWarning("pb_refit", f"{n_warn} of the {2 * nsim} bootstrap refits warned (first: {first_warning})",
                                    "R"))
    pb = pd.concat(tables, ignore_index=True)
    return np.asarray(pvals, dtype=float), pb, ws
