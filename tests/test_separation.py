"""Separation in binomial GLMMs (mixedeval.inference._separation, r/separation.R), against R.

Data are built here (numpy, seeded) and handed to R through a CSV file, so R reads exactly the
rows mixedeval fits. Expected values come from independent R code in the test:

* cells: ``aggregate()`` of the response by the fixed part's factors;
* separation and infinite coefficients: (i) Konis' linear program in its own formulation (the
  one brglm2 / detectseparation solve: maximise ``-colSums(xbar) . beta`` subject to
  ``xbar beta <= 0`` and ``-1 <= beta <= 1``) solved by ``boot::simplex``, a different program
  from ours and another solver; (ii) the divergence check of detectseparation's
  ``check_infinite_estimates``: the standard errors of ``glm()`` after 1..25 IRLS iterations, which
  grow without bound exactly for infinite estimates;
* the penalised refit: ``blme::bglmer`` called directly, with blme's default prior spelled as blme
  spells it (``fixef.prior = normal``) -- fixed effects, standard errors, z, p, variance and
  logLik at ``OPTIMIZER_RTOL``;
* the Hauck-Donner effect: glmer's own Wald p and ``anova(m0, m1)``'s likelihood-ratio p.

Fitting the ML model of separated data makes ``_glmm._fixed_frame`` overflow in ``np.exp`` of the
Wald interval's upper end (exp(20 + 1.96 * 360)): that call is the integrator's (the GLMM module);
the fixtures silence it there, and every call of this module runs under
``warnings.simplefilter("error")``.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import OPTIMIZER_RTOL, assert_rel

import mixedeval as me
from mixedeval.errors import DataError
from mixedeval.inference._separation import (
    PRIOR_SD,
    check_separation,
    detect_separation,
    penalized_refit,
    r2_note,
)
from mixedeval.results import ResultWarning

SYSTEMS = ("base", "mid", "strong")
TASKS = ("arith", "read")
N_ITEMS = 40


def _frame(seed: int) -> pd.DataFrame:
    """3 systems x 2 tasks x 40 items, item effects (sd 1), system effects 0 / 0.5 / 1."""
    rng = np.random.default_rng(seed)
    items = [f"i{j:02d}" for j in range(N_ITEMS)]
    item_eff = dict(zip(items, rng.normal(0.0, 1.0, N_ITEMS)))
    rows = [(s, t, i) for s in SYSTEMS for t in TASKS for i in items]
    d = pd.DataFrame(rows, columns=["system", "task", "item"])
    eta = 0.2 + d["item"].map(item_eff) + d["system"].map({"base": 0.0, "mid": 0.5, "strong": 1.0})
    d["correct"] = rng.binomial(1, 1.0 / (1.0 + np.exp(-eta.to_numpy())))
    return d


def _to_r(R, d: pd.DataFrame, name: str, path) -> None:
    d.to_csv(path, index=False)
    R(f'{name} <- read.csv("{path}", colClasses = c(system = "character", task = "character", '
      f'item = "character"))')
    for c in ("system", "task", "item"):
        R(f'{name}${c} <- factor({name}${c}, levels = sort(unique({name}${c}), method = "radix"))')


def _glmm(formula: str, d: pd.DataFrame):
    with np.errstate(over="ignore"):  # _glmm._fixed_frame: exp of the separated Wald interval (module docstring)
        return me.glmm(formula, d)


@pytest.fixture(scope="module")
def data(R, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("separation")
    base = _frame(2024)
    # one system always correct: quasi-complete separation of systemstrong in correct ~ system
    strong = base.assign(correct=np.where(base["system"] == "strong", 1, base["correct"]))
    # one system x task cell all 1, the other task mixed
    cell = base.assign(correct=np.where((base["system"] == "strong") & (base["task"] == "arith"), 1,
                                        base["correct"]))
    # two systems, one always right, one always wrong: complete separation
    comp = base[base["system"] != "mid"].assign(correct=lambda x: (x["system"] == "strong").astype(int))
    out = {"base": base, "strong": strong, "cell": cell, "complete": comp.reset_index(drop=True)}
    for name, d in out.items():
        _to_r(R, d, f"sep_{name}", tmp / f"{name}.csv")
    # the same "strong" data as counts: 5 attempts per (system, task, item), cbind(successes, failures)
    rng = np.random.default_rng(7)
    counts = base[["system", "task", "item"]].copy()
    counts["successes"] = np.where(counts["system"] == "strong", 5, rng.binomial(5, 0.6, len(counts)))
    counts["failures"] = 5 - counts["successes"]
    out["counts"] = counts
    _to_r(R, counts, "sep_counts", tmp / "counts.csv")
    return out


# ---------------------------------------------------------------------------- R references
def _r_cells(R, name: str, response: str, factors: str) -> pd.DataFrame:
    """aggregate() of trials and successes per cell of ``factors`` (R, in the test)."""
    if response.startswith("cbind"):
        R(f"..agg <- aggregate(cbind(s = successes, n = successes + failures) ~ {factors}, data = {name}, FUN = sum)")
    else:
        R(f"..agg <- aggregate(cbind(s = {response}, n = 1) ~ {factors}, data = {name}, FUN = sum)")
    cols = [f.strip() for f in factors.split("+")]
    out = {c: [str(x) for x in R(f"as.character(..agg${c})")] for c in cols}
    out["n"] = R("..agg$n").astype(float)
    out["successes"] = R("..agg$s").astype(float)
    return pd.DataFrame(out).sort_values(cols).reset_index(drop=True)


def _r_konis_simplex(R, name: str, fixed: str, response: str) -> dict[str, float]:
    """Konis' primal 'find' program (detectseparation's formulation) solved by boot::simplex:
    beta at the optimum by coefficient; all zero when there is no separation."""
    R(f"""
      ..X <- model.matrix({fixed}, {name}); ..y <- {name}${response}
      ..xb <- -sign(..y - 0.5) * ..X
      ..xb <- ..xb[!duplicated(..xb), , drop = FALSE]
      ..p <- ncol(..X); ..obj <- -colSums(-sign(..y - 0.5) * ..X)
      ..lp <- boot::simplex(a = c(..obj, -..obj), A1 = rbind(cbind(..xb, -..xb), diag(2 * ..p)),
                            b1 = c(rep(0, nrow(..xb)), rep(1, 2 * ..p)), maxi = TRUE)
      ..beta <- ..lp$soln[seq_len(..p)] - ..lp$soln[..p + seq_len(..p)]
    """)
    assert int(R("..lp$solved")[0]) == 1
    return dict(zip([str(x) for x in R("colnames(..X)")], R("..beta").astype(float)))


def _r_diverging(R, name: str, formula: str) -> dict[str, float]:
    """detectseparation's check_infinite_estimates idea: SE after k IRLS steps / SE after 1 step,
    k = 25, for glm(formula, binomial) (R, in the test)."""
    R(f"""
      ..se <- sapply(1:25, function(k) suppressWarnings(sqrt(diag(vcov(glm({formula}, family = binomial,
                     data = {name}, control = glm.control(epsilon = 1e-300, maxit = k)))))))
    """)
    return dict(zip([str(x) for x in R("rownames(..se)")], R("..se[, 25] / ..se[, 1]").astype(float)))


# ---------------------------------------------------------------------------- detection
CASES = [
    # (data, formula, fixed part, factors, separated, complete)
    ("strong", "correct ~ system + (1|item)", "correct ~ system", "system", True, False),
    ("cell", "correct ~ system * task + (1|item)", "correct ~ system * task", "system + task", True, False),
    ("cell", "correct ~ system + task + (1|item)", "correct ~ system + task", "system + task", False, False),
    ("complete", "correct ~ system + (1|item)", "correct ~ system", "system", True, True),
    ("base", "correct ~ system * task + (1|item)", "correct ~ system * task", "system + task", False, False),
]


@pytest.mark.parametrize(("key", "formula", "fixed", "factors", "separated", "complete"), CASES)
def test_detection_matches_r(R, data, key, formula, fixed, factors, separated, complete):
    fit = _glmm(formula, data[key])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sep = detect_separation(fit)
        ws, cells = check_separation(fit)
    name = f"sep_{key}"
    # cells: R's aggregate(); boundary = all 0 or all 1
    r_cells = _r_cells(R, name, "correct", factors)
    ours = sep.cells.sort_values(list(sep.factors)).reset_index(drop=True)
    assert list(sep.factors) == [f.strip() for f in factors.split("+")]
    pd.testing.assert_frame_equal(ours[r_cells.columns.tolist()], r_cells, check_dtype=False)
    r_boundary = (r_cells["successes"] == 0) | (r_cells["successes"] == r_cells["n"])
    assert ours["boundary"].tolist() == r_boundary.tolist()
    # separation: Konis' program in detectseparation's form, solved by boot::simplex
    beta = _r_konis_simplex(R, name, fixed, "correct")
    assert sep.separated is separated
    assert sep.separated == any(abs(b) > 1e-3 for b in beta.values())
    assert sep.complete is complete
    # infinite estimates: exactly the coefficients whose glm SE diverges with the IRLS iterations
    ratio = _r_diverging(R, name, fixed)
    inf = dict(zip(sep.terms["term"], sep.terms["infinite"]))
    assert set(inf) == set(ratio)
    assert {t for t, r in ratio.items() if r > 100} == {t for t, v in inf.items() if v}
    assert all(r < 2 for t, r in ratio.items() if not inf[t])
    # the simplex's direction moves only coefficients we call infinite
    assert {t for t, b in beta.items() if abs(b) > 1e-3} <= {t for t, v in inf.items() if v}
    # the warning names exactly the separated cells
    if separated:
        assert [w.kind for w in ws] == ["separation"] and ws[0].source == "mixedeval"
        assert len(cells) == int(sep.cells["separated"].sum()) > 0
        for _, row in cells.iterrows():
            assert all(f"{f} '{row[f]}'" in ws[0].message for f in sep.factors)
            assert f"({int(row['successes'])} of {int(row['n'])})" in ws[0].message or \
                f"(0 of {int(row['n'])})" in ws[0].message
        assert ws[0].message.startswith("complete separation" if complete else "quasi-complete separation")
        assert "Hauck-Donner" in ws[0].message and "likelihood-ratio" in ws[0].message
        for t in sep.infinite_terms:
            assert t in ws[0].message
    else:
        assert ws == [] and len(cells) == 0 and not sep.terms["infinite"].any()


def test_single_boundary_cell_of_an_additive_model_is_not_separation(R, data):
    """system + task with the strong x arith cell all 1: the cell is listed as boundary, but the
    additive model fits it with finite estimates (R's glm converges), so no warning."""
    fit = _glmm("correct ~ system + task + (1|item)", data["cell"])
    sep = detect_separation(fit)
    row = sep.cells[(sep.cells["system"] == "strong") & (sep.cells["task"] == "arith")].iloc[0]
    assert bool(row["boundary"]) and not bool(row["separated"])
    assert bool(R("glm(correct ~ system + task, family = binomial, data = sep_cell)$converged")[0])


def test_cbind_counts(R, data):
    fit = _glmm("cbind(successes, failures) ~ system + (1|item)", data["counts"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sep = detect_separation(fit)
        ws, cells = check_separation(fit)
    r_cells = _r_cells(R, "sep_counts", "cbind", "system")
    pd.testing.assert_frame_equal(sep.cells[r_cells.columns.tolist()], r_cells, check_dtype=False)
    assert sep.separated and not sep.complete and sep.infinite_terms == ["systemstrong"]
    assert cells["system"].tolist() == ["strong"] and cells["n"].tolist() == [float(5 * 2 * N_ITEMS)]
    ratio = _r_diverging(R, "sep_counts", "cbind(successes, failures) ~ system")
    assert {t for t, r in ratio.items() if r > 100} == {"systemstrong"}
    assert "(400 of 400)" in ws[0].message


# ---------------------------------------------------------------------------- Hauck-Donner
def test_hauck_donner_wald_vs_likelihood_ratio(R, data):
    """One system always correct: the Wald z p of systemstrong is near 1 (glmer's own summary
    says the same) while the likelihood-ratio p of system is tiny (R's anova(m0, m1))."""
    full = _glmm("correct ~ system + (1|item)", data["strong"])
    null = _glmm("correct ~ 1 + (1|item)", data["strong"])
    p_wald = float(full.fixed.set_index("term").loc["systemstrong", "p_value"])
    R("..m1 <- lme4::glmer(correct ~ system + (1|item), data = sep_strong, family = binomial)")
    R("..m0 <- lme4::glmer(correct ~ 1 + (1|item), data = sep_strong, family = binomial)")
    assert p_wald > 0.5 and float(R('summary(..m1)$coefficients["systemstrong", 4]')[0]) > 0.5
    # Type III Wald chi-square of system (contr.sum refit): large too, in ours and in car::Anova
    p_type3 = float(full.anova().table.set_index("term").loc["system", "p_value"])
    R("..m1s <- lme4::glmer(correct ~ system + (1|item), data = sep_strong, family = binomial, "
      "contrasts = list(system = 'contr.sum'))")
    assert p_type3 > 0.5 and float(R('car::Anova(..m1s, type = 3)["system", "Pr(>Chisq)"]')[0]) > 0.5
    lrt = me.compare(null, full).table
    r_chisq = float(R("anova(..m0, ..m1)$Chisq[2]")[0])
    r_p = float(R('anova(..m0, ..m1)[["Pr(>Chisq)"]][2]')[0])
    assert_rel(lrt["chisq"].iloc[-1], r_chisq, rtol=1e-5)
    assert_rel(lrt["p_value"].iloc[-1], r_p, rtol=1e-4)
    assert r_p < 1e-6
    # the penalised refit's Wald test sees the effect
    pen = penalized_refit(full)
    assert float(pen.fixed.set_index("term").loc["systemstrong", "p_value"]) < 0.01


# ---------------------------------------------------------------------------- penalised refit
def _r_bglmer_check(R, fit, r_call: str) -> None:
    R(f"..b <- {r_call}")
    cf = R("summary(..b)$coefficients")
    assert list(fit.fixed["term"]) == [str(x) for x in R("rownames(summary(..b)$coefficients)")]
    assert_rel(fit.fixed["estimate"], cf[:, 0], rtol=OPTIMIZER_RTOL)
    assert_rel(fit.fixed["std_error"], cf[:, 1], rtol=OPTIMIZER_RTOL)
    assert_rel(fit.fixed["z_value"], cf[:, 2], rtol=OPTIMIZER_RTOL)
    assert_rel(fit.fixed["p_value"], cf[:, 3], rtol=10 * OPTIMIZER_RTOL)
    assert_rel(fit.loglik, R("as.numeric(logLik(..b))")[0], rtol=OPTIMIZER_RTOL)
    assert_rel(fit.random["variance"], R("as.data.frame(lme4::VarCorr(..b))$vcov"), rtol=2 * OPTIMIZER_RTOL)
    assert_rel(fit.aic, R("AIC(..b)")[0], rtol=OPTIMIZER_RTOL)


def test_penalized_refit_equals_bglmer(R, data):
    fit = _glmm("correct ~ system + (1|item)", data["strong"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pen = penalized_refit(fit)
    # blme's default normal prior (sd 10 intercept, 2.5 otherwise) spelled as blme spells it
    _r_bglmer_check(R, pen, "blme::bglmer(correct ~ system + (1|item), data = sep_strong, family = binomial, "
                            "cov.prior = NULL, fixef.prior = normal)")
    assert pen.provenance["r_function"] == "blme::bglmer"
    assert pen.provenance["fixef_prior"]["family"] == "normal"
    assert pen.provenance["fixef_prior"]["sd"] == pytest.approx({"(Intercept)": 10.0, "systemmid": 2.5,
                                                                 "systemstrong": 2.5}, rel=1e-12)
    assert pen.provenance["cov_prior"] is None and pen.provenance["blme"]
    assert any(w.kind == "penalized" for w in pen.warnings)
    assert all(isinstance(w, ResultWarning) for w in pen.warnings)
    est = pen.fixed.set_index("term")
    assert np.isfinite(est["exp_conf_high"]).all() and 1 < est.loc["systemstrong", "estimate"] < 10


def test_penalized_refit_interaction_and_counts(R, data):
    fit = _glmm("correct ~ system * task + (1|item)", data["cell"])
    pen = penalized_refit(fit, slope_sd=1.5)
    _r_bglmer_check(R, pen, "blme::bglmer(correct ~ system * task + (1|item), data = sep_cell, family = binomial, "
                            "cov.prior = NULL, fixef.prior = normal(sd = c(10, 1.5)))")
    cfit = _glmm("cbind(successes, failures) ~ system + (1|item)", data["counts"])
    cpen = penalized_refit(cfit)
    _r_bglmer_check(R, cpen, "blme::bglmer(cbind(successes, failures) ~ system + (1|item), data = sep_counts, "
                             "family = binomial, cov.prior = NULL, fixef.prior = normal)")


def test_prior_sd_defaults_are_blmes():
    assert PRIOR_SD == (10.0, 2.5)


def test_penalized_refit_without_intercept_and_its_r2(R, data):
    """Without an intercept every coefficient gets slope_sd (blme's normal(sd = 2.5)); the prior is
    an expression of blme's p, so the intercept-only null model of R² refits without error."""
    fit = _glmm("correct ~ 0 + system + (1|item)", data["strong"])
    pen = penalized_refit(fit)
    _r_bglmer_check(R, pen, "blme::bglmer(correct ~ 0 + system + (1|item), data = sep_strong, family = binomial, "
                            "cov.prior = NULL, fixef.prior = normal(sd = 2.5))")
    assert pen.provenance["fixef_prior"]["sd"] == pytest.approx(dict.fromkeys(pen.fixed["term"], 2.5), rel=1e-12)
    full = penalized_refit(_glmm("correct ~ system + (1|item)", data["strong"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r2 = full.r2()
    assert 0 < r2.r2_marginal < r2.r2_conditional < 1


# ---------------------------------------------------------------------------- R² note, misuse
def test_r2_note(data):
    fit = _glmm("correct ~ system + (1|item)", data["strong"])
    _, cells = check_separation(fit)
    note = r2_note(cells)
    assert isinstance(note, ResultWarning) and note.kind == "separation"
    assert "R² is not meaningful under separation" in note.message
    assert "grows without bound" in note.message
    assert r2_note(cells.iloc[:0]) is None and r2_note(None) is None


def test_misuse_is_a_data_error(data):
    d = data["counts"]
    pois = me.glmm("successes ~ system + (1|item)", d, family="poisson")
    with pytest.raises(DataError, match="binomial"):
        check_separation(pois)
    with pytest.raises(DataError, match="binomial"):
        penalized_refit(pois)
    with pytest.raises(DataError, match="GLMM"):
        detect_separation(me.lmm("successes ~ system + (1|item)", d))
    fit = _glmm("correct ~ system + (1|item)", data["strong"])
    with pytest.raises(DataError, match="slope_sd"):
        penalized_refit(fit, slope_sd=0.0)
