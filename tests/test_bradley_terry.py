"""me.bradley_terry: parity with R on the same data (BradleyTerry2::BTm, glm on the +1/-1 design,
lme4::glmer, an nlminb maximisation of Davidson's likelihood written here), FastChat's
compute_mle_elo convention re-implemented from its published source, the prompt as the unit of
the bootstrap, executor equality, a small coverage simulation, and bad input.

Tolerances: 1e-6 relative for the strengths (the issue's tolerance); Monte-Carlo ones for
coverage. The R fits run inside the tests on the battle table written to a CSV file.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from bt_helpers import projected_strengths, simulate_battles, simulate_prompt_correlated

import mixedeval as me
from mixedeval.errors import DataError
from mixedeval.inference import _bradley_terry

RTOL = 1e-6


def _ro():
    from mixedeval.engine import session

    session._start()
    import rpy2.robjects as ro

    return ro


def R(code: str) -> np.ndarray:
    return np.array(_ro().r(code), dtype=float, copy=True)


def _to_r(df: pd.DataFrame, tmp_path, name: str = "bt") -> None:
    path = tmp_path / f"{name}.csv"
    df.to_csv(path, index=False)
    _ro().r(f'{name} <- read.csv("{path.as_posix()}", stringsAsFactors = FALSE)')


def _by_model(res, col: str = "estimate") -> pd.Series:
    return res.table.set_index("model")[col].sort_index()


@pytest.fixture(scope="module")
def battles():
    df, _ = simulate_battles(k=6, n=3000, n_prompts=300, judges=["j1", "j2"], seed=1)
    return df


# ------------------------------------------------------------------------------- R parity
def test_strengths_equal_bradleyterry2_btm(battles, tmp_path):
    res = me.bradley_terry(battles, ties="drop", position_bias=False, n_resamples=0)
    _to_r(battles, tmp_path)
    R('''d <- bt[bt$winner != "tie", ]
         lev <- sort(unique(c(d$model_a, d$model_b)), method = "radix")
         agg <- aggregate(cbind(wa = d$winner == "model_a", wb = d$winner == "model_b") ~ model_a + model_b,
                          data = d, FUN = sum)
         agg$p1 <- factor(agg$model_a, levels = lev); agg$p2 <- factor(agg$model_b, levels = lev)
         fit <- BradleyTerry2::BTm(cbind(wa, wb), p1, p2, data = agg, refcat = lev[1])
         btm <- summary(fit)$coefficients''')
    est, se = R("unname(btm[, 1])"), R("unname(btm[, 2])")
    names = list(np.array(_ro().r('sub("^\\\\.\\\\.", "", rownames(btm))')))
    ours = res.table.set_index("model").loc[names]
    np.testing.assert_allclose(ours["estimate"], est, rtol=RTOL)
    np.testing.assert_allclose(ours["model_std_error"], se, rtol=RTOL)
    assert res.table.set_index("model").loc[res.reference, "estimate"] == 0.0


def _r_design(position: bool) -> None:
    """X (+1/-1 strengths, reference = first model; judge indicators) built in R from the rows."""
    R(f'''lev <- sort(unique(c(bt$model_a, bt$model_b)), method = "radix")
          X <- sapply(lev[-1], function(m) (bt$model_a == m) - (bt$model_b == m))
          if ({"TRUE" if position else "FALSE"}) X <- cbind(X, model.matrix(~ 0 + factor(bt$judge)))
          0''')


def test_position_bias_equals_glm_on_the_rows_half_ties(battles, tmp_path, monkeypatch):
    _to_r(battles, tmp_path)
    _r_design(position=True)
    R('''y <- ifelse(bt$winner == "model_a", 1, ifelse(bt$winner == "model_b", 0, 0.5))
         g <- suppressWarnings(glm(y ~ 0 + X, family = binomial, control = glm.control(epsilon = 1e-14, maxit = 100)))
         0''')
    est, se = R("unname(coef(g))"), R("unname(sqrt(diag(vcov(g))))")
    k = 6
    for limit in (_bradley_terry.R_DESIGN_LIMIT, 0):  # R's glm, then the numpy Newton path
        monkeypatch.setattr(_bradley_terry, "R_DESIGN_LIMIT", limit)
        res = me.bradley_terry(battles, judge="judge", ties="half", n_resamples=0)
        tab = res.table.set_index("model").sort_index()
        np.testing.assert_allclose(tab["estimate"].to_numpy()[1:], est[:k - 1], rtol=RTOL)
        np.testing.assert_allclose(tab["model_std_error"].to_numpy()[1:], se[:k - 1], rtol=RTOL)
        pos = res.judges[res.judges["parameter"] == "position_bias"]
        np.testing.assert_allclose(pos["estimate"], est[k - 1:], rtol=RTOL)
        np.testing.assert_allclose(pos["std_error"], se[k - 1:], rtol=RTOL)
    assert "numpy" in res.provenance["engine"]


_DAVIDSON_R = '''
ll_dav <- function(par, X, J, na, nb, nt) {
  p <- ncol(X); eta <- drop(X %*% par[1:p]); tau <- drop(J %*% par[-(1:p)])
  den <- exp(eta / 2) + exp(-eta / 2) + exp(tau)
  sum(na * eta / 2 - nb * eta / 2 + nt * tau - log(den))
}
gr_dav <- function(par, X, J, na, nb, nt) {
  p <- ncol(X); eta <- drop(X %*% par[1:p]); tau <- drop(J %*% par[-(1:p)])
  den <- exp(eta / 2) + exp(-eta / 2) + exp(tau)
  de <- (na - nb) / 2 - (exp(eta / 2) - exp(-eta / 2)) / (2 * den)
  dt <- nt - exp(tau) / den
  c(crossprod(X, de), crossprod(J, dt))
}
'''


def test_davidson_equals_a_direct_maximisation_in_r(battles, tmp_path):
    res = me.bradley_terry(battles, judge="judge", ties="davidson", n_resamples=0)
    _to_r(battles, tmp_path)
    _r_design(position=True)
    _ro().r(_DAVIDSON_R)
    R('''J <- model.matrix(~ 0 + factor(bt$judge))
         na <- as.numeric(bt$winner == "model_a"); nb <- as.numeric(bt$winner == "model_b")
         nt <- as.numeric(bt$winner == "tie")
         start <- rep(0, ncol(X) + ncol(J))
         o <- nlminb(start, function(p) -ll_dav(p, X, J, na, nb, nt), function(p) -gr_dav(p, X, J, na, nb, nt),
                     control = list(rel.tol = 1e-15, x.tol = 1e-12, iter.max = 1000, eval.max = 2000))
         H <- numDeriv::hessian(function(p) ll_dav(p, X, J, na, nb, nt), o$par)
         0''')
    par, se = R("o$par"), R("sqrt(diag(solve(-H)))")
    # nlminb stops with "false convergence" at such tight tolerances; the gradient says it is at the optimum
    assert R("max(abs(gr_dav(o$par, X, J, na, nb, nt)))")[()] < 1e-4
    k = 6
    tab = res.table.set_index("model").sort_index()
    np.testing.assert_allclose(tab["estimate"].to_numpy()[1:], par[:k - 1], rtol=RTOL, atol=1e-8)
    judges = res.judges.set_index(["parameter", "judge"]).sort_index()
    np.testing.assert_allclose(judges.loc["position_bias", "estimate"], par[k - 1:k + 1], rtol=RTOL)
    np.testing.assert_allclose(judges.loc["leniency", "estimate"], par[k + 1:], rtol=RTOL)
    np.testing.assert_allclose(res.loglik, -R("o$objective")[()], rtol=1e-10)
    # numerical Hessian: agreement to its own accuracy
    np.testing.assert_allclose(tab["model_std_error"].to_numpy()[1:], se[:k - 1], rtol=1e-5)


def test_prompt_random_effect_equals_glmer(battles, tmp_path):
    res = me.bradley_terry(battles, prompt="prompt", ties="drop", position_bias=True, prompt_effect="random",
                           n_resamples=0)
    _to_r(battles, tmp_path)
    R('''bt <- bt[bt$winner != "tie", ]
         lev <- sort(unique(c(bt$model_a, bt$model_b)), method = "radix")
         X <- sapply(lev[-1], function(m) (bt$model_a == m) - (bt$model_b == m))
         y <- as.numeric(bt$winner == "model_a")
         gm <- lme4::glmer(y ~ 0 + X + 1 + (1 | prompt), data = data.frame(y = y, prompt = bt$prompt),
                           family = binomial)
         0''')
    fe, sd = R("unname(lme4::fixef(gm))"), R("attr(lme4::VarCorr(gm)$prompt, 'stddev')")
    # R puts the intercept (the position bias) first
    tab = res.table.set_index("model").sort_index()
    np.testing.assert_allclose(tab["estimate"].to_numpy()[1:], fe[1:], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(res.judges["estimate"].iloc[0], fe[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(res.prompt_sd, sd[0], rtol=1e-3, atol=1e-4)
    assert "glmer" in res.provenance["engine"]


# ------------------------------------------------------------------------- FastChat's Elo
def fastchat_compute_mle_elo(df: pd.DataFrame, scale=400, base=10, init_rating=1000) -> pd.Series:
    """FastChat's compute_mle_elo (fastchat/serve/monitor/elo_analysis.py), re-implemented from its
    published source: pivot tables of a-wins, b-wins and ties (ties symmetrised), win counts
    2 * a-wins + 2 * b-wins(transposed) + ties, two weighted rows per ordered pair on the
    +-log(BASE) design (Y = 1 with weight win[a, b], Y = 0 with weight win[b, a]), a logistic
    regression without intercept or penalty (sklearn's lbfgs from 0: the minimum-norm optimum,
    found here by Newton steps with the pseudo-inverse), elo = SCALE * coef + INIT_RATING, shifted
    so mixtral-8x7b-instruct-v0.1 rates 1114 when present."""
    models = sorted(set(df.model_a) | set(df.model_b))
    ix = {m: i for i, m in enumerate(models)}
    k = len(models)
    win = np.zeros((k, k))
    for a, b, w in zip(df.model_a, df.model_b, df.winner):
        if w == "model_a":
            win[ix[a], ix[b]] += 2
        elif w == "model_b":
            win[ix[b], ix[a]] += 2
        else:
            win[ix[a], ix[b]] += 1
            win[ix[b], ix[a]] += 1
    rows, y, wts = [], [], []
    for i in range(k):
        for j in range(k):
            if i != j:
                x = np.zeros(k)
                x[i], x[j] = np.log(base), -np.log(base)
                rows += [x, x]
                y += [1.0, 0.0]
                wts += [win[i, j], win[j, i]]
    X, y, wts = np.array(rows), np.array(y), np.array(wts)
    coef = np.zeros(k)
    for _ in range(100):
        mu = 1 / (1 + np.exp(-X @ coef))
        step = np.linalg.pinv(X.T @ (X * (wts * mu * (1 - mu))[:, None])) @ (X.T @ (wts * (y - mu)))
        coef += step
        if np.abs(step).max() < 1e-14:
            break
    elo = scale * coef + init_rating
    if "mixtral-8x7b-instruct-v0.1" in ix:
        elo += 1114 - elo[ix["mixtral-8x7b-instruct-v0.1"]]
    return pd.Series(elo, index=models)


def test_elo_scale_equals_fastchat_compute_mle_elo(battles):
    df = battles.copy()
    fc = fastchat_compute_mle_elo(df)
    res = me.bradley_terry(df, ties="half", position_bias=False, n_resamples=0)
    np.testing.assert_allclose(_by_model(res, "elo"), fc.sort_index(), rtol=1e-8)
    df["model_a"] = df["model_a"].replace("m3", "mixtral-8x7b-instruct-v0.1")
    df["model_b"] = df["model_b"].replace("m3", "mixtral-8x7b-instruct-v0.1")
    fc = fastchat_compute_mle_elo(df)
    res = me.bradley_terry(df, ties="half", position_bias=False, n_resamples=0,
                           anchor="mixtral-8x7b-instruct-v0.1", anchor_rating=1114)
    np.testing.assert_allclose(_by_model(res, "elo"), fc.sort_index(), rtol=1e-8)
    assert _by_model(res, "elo")["mixtral-8x7b-instruct-v0.1"] == pytest.approx(1114, abs=1e-9)


# ---------------------------------------------------------------------- the unit: prompts
def test_duplicated_judgments_do_not_narrow_the_prompt_bootstrap(battles):
    """Every judgment recorded twice: the prompt bootstrap resamples prompts, whose counts double,
    so every replicate's MLE -- and the intervals -- are unchanged; a row bootstrap (FastChat's)
    counts the copies as new evidence and narrows its intervals by about 1/sqrt(2)."""
    twice = pd.concat([battles, battles], ignore_index=True)
    kw = dict(ties="half", position_bias=False, n_resamples=400, random_state=7)
    one = me.bradley_terry(battles, prompt="prompt", **kw).table.set_index("model").sort_index()
    two = me.bradley_terry(twice, prompt="prompt", **kw).table.set_index("model").sort_index()
    np.testing.assert_allclose(two[["conf_low", "conf_high", "std_error"]], one[["conf_low", "conf_high",
                                                                                  "std_error"]], rtol=1e-8, atol=1e-10)
    rows1 = me.bradley_terry(battles, **kw)
    rows2 = me.bradley_terry(twice, **kw)
    assert any(w.kind == "unit_rows" for w in rows1.warnings)
    ratio = (_by_model(rows2, "std_error") / _by_model(rows1, "std_error")).drop(rows1.reference)
    assert 0.6 < ratio.mean() < 0.82  # 1/sqrt(2) = 0.707, Monte-Carlo SE of the mean ratio ~0.02


def test_same_numbers_with_every_executor(battles):
    kw = dict(prompt="prompt", judge="judge", n_resamples=130, random_state=3, resample_judges=True)
    a = me.bradley_terry(battles, **kw)
    b = me.bradley_terry(battles, executor=2, **kw)
    np.testing.assert_array_equal(a.draws, b.draws)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert a.resample_units == ("prompt", "judge")


def test_bootstrap_replicates_equal_the_full_fit_of_their_counts(battles):
    """A replicate is the ML fit of its resampled counts: the numpy Newton of the block, refitted
    through R's glm on the same counts (recomputed from the block's multinomial weights)."""
    from mixedeval._random import seed_sequence
    from mixedeval.inference._bt_design import build_design
    from mixedeval.resampling import _draws as dr

    res = me.bradley_terry(battles, prompt="prompt", ties="half", position_bias=False, n_resamples=64,
                           random_state=11)
    d = build_design(battles, "model_a", "model_b", "winner", prompt="prompt", judge=None, ties="half",
                     position_bias=False, covariates=None, anchor=None)
    rng = dr.block_generator(seed_sequence(11), 0)
    idx = rng.integers(0, d.n_units, size=(dr.BLOCK, d.n_units), dtype=np.int32)  # prompts drawn with replacement
    w = np.stack([np.bincount(row, minlength=d.n_units) for row in idx]).astype(float)
    counts = np.asarray(d.units.T @ w[5]).reshape(-1, 3)
    sub = pd.DataFrame({"model_a": np.array(d.models)[d.a], "model_b": np.array(d.models)[d.b]})
    rows = []
    for o, label in enumerate(("model_a", "model_b", "tie")):
        for c in np.flatnonzero(counts[:, o]):
            rows += [(sub.model_a[c], sub.model_b[c], label)] * int(counts[c, o])
    refit = me.bradley_terry(pd.DataFrame(rows, columns=["model_a", "model_b", "winner"]), ties="half",
                             position_bias=False, n_resamples=0)
    np.testing.assert_allclose(res.draws[5], _by_model(refit).to_numpy()[1:], rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------------------- coverage
def test_prompt_bootstrap_covers_with_prompt_correlation_small():
    """CI-sized version of benchmarks/calibration_bradley_terry.py: prompts carry model effects
    (sd 0.8), 30 data sets; the prompt bootstrap's 90% intervals must cover the projected
    strengths at least 78% of the time (binomial SD of 90 correlated intervals ~ 4-6 points),
    and clearly more often than the Wald intervals that take battles as independent."""
    s = np.array([0.0, 0.4, -0.3, 0.8])
    truth = projected_strengths(s, 0.8)
    cover_boot, cover_wald = [], []
    for rep in range(30):
        df = simulate_prompt_correlated(strengths=s, n_prompts=60, per_prompt=12, sd_prompt=0.8, seed=100 + rep)
        res = me.bradley_terry(df, prompt="prompt", ties="drop", position_bias=False, n_resamples=200,
                               random_state=rep, level=0.9)
        tab = res.table.set_index("model").loc[["m1", "m2", "m3"]]
        cover_boot += list((tab.conf_low <= truth[1:]) & (truth[1:] <= tab.conf_high))
        z = 1.6448536269514722
        cover_wald += list(np.abs(tab.estimate - truth[1:]) <= z * tab.model_std_error)
    assert np.mean(cover_boot) >= 0.78
    assert np.mean(cover_boot) > np.mean(cover_wald) + 0.05


# --------------------------------------------------------------------------- bad input
def test_bad_input_is_named():
    df, _ = simulate_battles(k=4, n=400, seed=2)
    with pytest.raises(DataError, match="winner"):
        me.bradley_terry(df.assign(winner=df.winner.replace("tie", "draw")), n_resamples=0)
    with pytest.raises(DataError, match="missing"):
        me.bradley_terry(df.assign(model_a=df.model_a.where(df.index != 3)), n_resamples=0)
    selfie = df.copy()
    selfie.loc[5, "model_b"] = selfie.loc[5, "model_a"]
    with pytest.raises(DataError, match="cannot battle itself"):
        me.bradley_terry(selfie, n_resamples=0)
    with pytest.raises(DataError, match="anchor"):
        me.bradley_terry(df, anchor="nope", n_resamples=0)
    with pytest.raises(DataError, match="memory limit"):
        me.bradley_terry(df, n_resamples=10**12)
    with pytest.raises(DataError, match="never battled"):
        two = pd.DataFrame({"model_a": ["a", "b", "c", "d"] * 3, "model_b": ["b", "a", "d", "c"] * 3,
                            "winner": ["model_a", "model_b", "tie", "model_a"] * 3})
        me.bradley_terry(two, n_resamples=0)


def test_a_model_that_never_loses_is_flagged_separation():
    df, _ = simulate_battles(k=4, n=600, seed=3)
    star = pd.DataFrame({"model_a": ["star"] * 30, "model_b": ["m0", "m1", "m2"] * 10, "winner": "model_a",
                         "prompt": [f"q{i}" for i in range(30)]})
    res = me.bradley_terry(pd.concat([df, star], ignore_index=True), ties="drop", position_bias=False,
                           n_resamples=0)
    kinds = [w.kind for w in res.warnings]
    assert "separation" in kinds
    assert "star" in next(w.message for w in res.warnings if w.kind == "separation")


def test_confounded_position_effect_is_an_error():
    """Two models, a always shown first: a's advantage and the position bias are one number."""
    df = pd.DataFrame({"model_a": ["a"] * 6, "model_b": ["b"] * 6, "winner": ["model_a", "model_b"] * 3})
    with pytest.raises(DataError, match="cannot be separated"):
        me.bradley_terry(df, ties="drop", n_resamples=0)
    assert me.bradley_terry(df, ties="drop", position_bias=False, n_resamples=0).table["estimate"].abs().max() < 1e-9


def test_swapped_positions_and_a_style_covariate_equal_glm(tmp_path):
    """position="b_first" battles enter the position bias with -1 (the answer of b was shown
    first); a covariate (answer-length difference) is one more column of the design."""
    df, _ = simulate_battles(k=5, n=2500, judges=["j1", "j2"], seed=4)
    rng = np.random.default_rng(4)
    df["position"] = np.where(rng.random(len(df)) < 0.5, "a_first", "b_first")
    df.loc[df.index % 17 == 0, "position"] = None
    df["len_diff"] = rng.normal(size=len(df)) + (df.winner == "model_a") * 0.3
    res = me.bradley_terry(df, judge="judge", position="position", covariates=["len_diff"], ties="drop",
                           n_resamples=0)
    _to_r(df, tmp_path)
    R('''bt <- bt[bt$winner != "tie", ]
         lev <- sort(unique(c(bt$model_a, bt$model_b)), method = "radix")
         X <- sapply(lev[-1], function(m) (bt$model_a == m) - (bt$model_b == m))
         unknown <- is.na(bt$position) | bt$position == ""  # read.csv reads the missing ones as ""
         first <- ifelse(unknown, 0, ifelse(bt$position == "a_first", 1, -1))
         X <- cbind(X, model.matrix(~ 0 + factor(bt$judge)) * first, bt$len_diff)
         y <- as.numeric(bt$winner == "model_a")
         g <- glm(y ~ 0 + X, family = binomial, control = glm.control(epsilon = 1e-14, maxit = 100))
         0''')
    est, se = R("unname(coef(g))"), R("unname(sqrt(diag(vcov(g))))")
    tab = res.table.set_index("model").sort_index()
    np.testing.assert_allclose(tab["estimate"].to_numpy()[1:], est[:4], rtol=RTOL)
    np.testing.assert_allclose(res.judges["estimate"], est[4:6], rtol=RTOL)
    np.testing.assert_allclose(res.covariates["estimate"], est[6:], rtol=RTOL)
    np.testing.assert_allclose(res.covariates["std_error"], se[6:], rtol=RTOL)


def test_rank_intervals_come_from_the_prompt_bootstrap(battles):
    res = me.bradley_terry(battles, prompt="prompt", judge="judge", n_resamples=200, random_state=5)
    ranks = res.ranks.set_index("name")
    assert set(ranks.index) == set(res.table["model"])
    assert (ranks["rank_low"] <= ranks["rank"]).all() and (ranks["rank"] <= ranks["rank_high"]).all()
    assert res.rank_result.method == "bootstrap" and res.rank_result.n_draws == 200
    best = res.table["model"].iloc[0]
    assert ranks.loc[best, "rank"] == 1
    wm = res.win_matrix()
    np.testing.assert_allclose(wm.to_numpy() + wm.to_numpy().T, np.where(np.eye(len(wm)), np.nan, 1.0))


def test_covariate_bootstrap_is_the_fit_of_each_replicate():
    """With covariates every battle is a cell; a replicate's covariate estimate equals the fit of the
    battles of the drawn prompts (each battle repeated as often as its prompt was drawn)."""
    from mixedeval._random import seed_sequence
    from mixedeval.resampling import _draws as dr

    df, _ = simulate_battles(k=4, n=600, n_prompts=60, seed=6)
    df["len_diff"] = np.random.default_rng(6).normal(size=len(df)) + (df.winner == "model_a") * 0.5
    res = me.bradley_terry(df, prompt="prompt", covariates=["len_diff"], ties="drop", n_resamples=64,
                           random_state=2, ranks=False)
    assert res.ranks is None and res.rank_result is None
    rng = dr.block_generator(seed_sequence(2), 0)
    units = pd.factorize(df.loc[df.winner != "tie", "prompt"])[1]
    idx = rng.integers(0, len(units), size=(dr.BLOCK, len(units)), dtype=np.int32)  # prompts drawn with replacement
    w = np.bincount(idx[3], minlength=len(units))
    times = dict(zip(units, w))
    rep = df[df.winner != "tie"].loc[lambda x: x.index.repeat(x.prompt.map(times))]
    refit = me.bradley_terry(rep, covariates=["len_diff"], ties="drop", n_resamples=0, ranks=False)
    np.testing.assert_allclose(res.draws[3, -1], refit.covariates["estimate"].iloc[0], rtol=1e-7)
    assert np.isfinite(res.covariates[["conf_low", "conf_high"]].to_numpy()).all()


def test_random_judge_position_bias_equals_glmer(tmp_path):
    """judge_effect="random": first + (0 + first | judge) with (1 | prompt), against lme4::glmer on the
    rows; a judge's position bias is the mean plus its conditional mode."""
    df, _ = simulate_battles(k=4, n=2400, n_prompts=200, judges=["j1", "j2", "j3", "j4", "j5"], seed=8,
                             positions=True)
    res = me.bradley_terry(df, prompt="prompt", judge="judge", position="position", ties="drop",
                           prompt_effect="random", judge_effect="random")
    assert any(w.kind == "no_bootstrap" for w in res.warnings) and res.n_resamples == 0
    _to_r(df, tmp_path)
    R('''bt <- bt[bt$winner != "tie", ]
         lev <- sort(unique(c(bt$model_a, bt$model_b)), method = "radix")
         X <- sapply(lev[-1], function(m) (bt$model_a == m) - (bt$model_b == m))
         d <- data.frame(y = as.numeric(bt$winner == "model_a"), prompt = bt$prompt, judge = bt$judge,
                         first = ifelse(bt$position == "a_first", 1, -1))
         gm <- lme4::glmer(y ~ 0 + X + first + (1 | prompt) + (0 + first | judge), data = d, family = binomial)
         re <- lme4::ranef(gm)$judge
         0''')
    fe = R("unname(lme4::fixef(gm))")
    tab = res.table.set_index("model").sort_index()
    np.testing.assert_allclose(tab["estimate"].to_numpy()[1:], fe[:-1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(res.provenance["position_bias_mean"], fe[-1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(res.provenance["judge_sd"], R("attr(lme4::VarCorr(gm)$judge, 'stddev')")[0],
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(res.judges.sort_values("judge")["estimate"],
                               fe[-1] + R("re[order(rownames(re)), 1]"), rtol=1e-3, atol=1e-4)
    assert res.judges["estimate"].std() > 0.05  # the simulated biases differ by judge (0.3 .. 1.5)


def _one_battle_per_prompt(seed: int, n: int = 240) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = ["m0", "m1", "m2", "m3"]
    s = np.array([0.0, 0.4, 0.8, 1.2])
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    eta = s[a] - s[b] + rng.normal(0, 1.0, n)
    win = rng.random(n) < 1 / (1 + np.exp(-eta))
    return pd.DataFrame({"model_a": np.array(models)[a], "model_b": np.array(models)[b],
                         "winner": np.where(win, "model_a", "model_b"), "prompt": [f"p{i}" for i in range(n)]})


def test_model_by_prompt_effect_with_one_battle_per_prompt_is_glmers_prompt_intercept(tmp_path):
    """With one battle per prompt, + u[a, p] - u[b, p] (u ~ N(0, s^2)) is a normal shift of SD
    sqrt(2) s of that battle's log-odds: the same likelihood (Laplace is invariant under the linear
    map, the other direction integrates exactly) as lme4::glmer's (1 | prompt) -- an independent
    R fit of the same data."""
    battles = _one_battle_per_prompt(7)
    res = me.bradley_terry(battles, prompt="prompt", ties="drop", position_bias=False, prompt_effect="model",
                           n_resamples=0, ranks=False)
    _to_r(battles, tmp_path)
    R('''lev <- sort(unique(c(bt$model_a, bt$model_b)), method = "radix")
         X <- sapply(lev[-1], function(m) (bt$model_a == m) - (bt$model_b == m))
         y <- as.numeric(bt$winner == "model_a")
         gm <- lme4::glmer(y ~ 0 + X + (1 | prompt), data = data.frame(y = y, prompt = bt$prompt),
                           family = binomial)
         0''')
    fe, se = R("unname(lme4::fixef(gm))"), R("unname(sqrt(diag(as.matrix(vcov(gm)))))")
    sd, ll = R("attr(lme4::VarCorr(gm)$prompt, 'stddev')")[0], R("as.numeric(logLik(gm))")[0]
    tab = res.table.set_index("model").sort_index()
    np.testing.assert_allclose(tab["estimate"].to_numpy()[1:], fe, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tab["model_std_error"].to_numpy()[1:], se, rtol=1e-3)
    np.testing.assert_allclose(res.prompt_sd * np.sqrt(2), sd, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(res.loglik, ll, rtol=1e-6)
    assert "u[model_a, prompt] - u[model_b, prompt]" in res.provenance["engine"]


def test_model_by_prompt_effect_widens_the_intervals_when_prompts_move_models():
    """Several battles per prompt whose models gain or lose on the prompt: the model x prompt SD is
    found and the strengths' standard errors exceed the independent-battles GLM's."""
    rng = np.random.default_rng(3)
    s = np.array([0.0, 0.4, 0.8, 1.2])
    rows = []
    for p in range(150):
        u = rng.normal(0, 0.9, 4)
        for _ in range(6):
            a = rng.integers(0, 4)
            b = (a + rng.integers(1, 4)) % 4
            win = rng.random() < 1 / (1 + np.exp(-(s[a] - s[b] + u[a] - u[b])))
            rows.append((f"m{a}", f"m{b}", "model_a" if win else "model_b", f"p{p}"))
    battles = pd.DataFrame(rows, columns=["model_a", "model_b", "winner", "prompt"])
    kw = dict(prompt="prompt", ties="drop", position_bias=False, n_resamples=0, ranks=False)
    mixed = me.bradley_terry(battles, prompt_effect="model", **kw)
    plain = me.bradley_terry(battles, **kw)
    assert 0.3 < mixed.prompt_sd < 1.5
    se_m = mixed.table.set_index("model")["model_std_error"].drop("m0")
    se_p = plain.table.set_index("model")["model_std_error"].drop("m0")
    assert (se_m > 1.1 * se_p).all()
    with pytest.raises(me.DataError, match="ties='drop'"):  # (no battle is a tie: Davidson's default fits as drop)
        me.bradley_terry(battles, prompt="prompt", prompt_effect="model", ties="half", n_resamples=0)


def test_default_bootstrap_replicates_equal_the_fit_of_their_counts():
    """mixedeval's defaults (Davidson ties, a position bias and a leniency per judge) with weights
    and a model that some replicates leave out: each replicate (the chord iteration, or Newton's
    method for the replicates it hands on) equals the fit of its battles -- those of the drawn
    prompts, each repeated as often as its prompt was drawn -- by the full-data Newton fit."""
    from mixedeval._random import seed_sequence
    from mixedeval.resampling import _draws as dr

    df, _ = simulate_battles(k=5, n=1500, n_prompts=150, judges=["j1", "j2"], seed=8, positions=True)
    rare = pd.DataFrame({"model_a": ["zz"] * 3, "model_b": ["m1", "m2", "m3"], "winner": ["model_a", "model_b", "tie"],
                         "prompt": ["r1", "r2", "r3"], "judge": ["j1", "j2", "j1"],
                         "position": ["a_first", "b_first", "a_first"]})
    df = pd.concat([df, rare], ignore_index=True)
    df["weight"] = np.where(np.arange(len(df)) % 7 == 0, 3.0, 1.0)
    kw = dict(judge="judge", position="position", min_judge_battles=0, ranks=False)
    res = me.bradley_terry(df, prompt="prompt", n_resamples=64, random_state=4, **kw)
    units = pd.factorize(df["prompt"])[1]
    idx = dr.block_generator(seed_sequence(4), 0).integers(0, len(units), size=(dr.BLOCK, len(units)), dtype=np.int32)
    w = np.stack([np.bincount(row, minlength=len(units)) for row in idx])
    rare_drawn = w[:, [units.get_loc(p) for p in ("r1", "r2", "r3")]].min(axis=1)
    with_rare, without = np.flatnonzero(rare_drawn > 0)[:2], np.flatnonzero(w[:, units.get_loc("r1")] == 0)[:1]
    assert len(with_rare) == 2 and len(without) == 1
    names = sorted(set(df.model_a) | set(df.model_b))[1:]  # the strengths' order (reference m0 first by name)
    for r in [*with_rare, *without]:
        times = dict(zip(units, w[r]))
        rep = df.loc[df.index.repeat(df.prompt.map(times))]
        refit = me.bradley_terry(rep, n_resamples=0, **kw)
        strengths = _by_model(refit).reindex(names).to_numpy()
        judges = refit.judges.set_index(["parameter", "judge"])["estimate"]
        expect = np.r_[strengths, judges.loc["position_bias"].loc[["j1", "j2"]], judges.loc["leniency"].loc[["j1", "j2"]]]
        np.testing.assert_allclose(res.draws[r], expect, rtol=1e-7, atol=1e-9)  # NaN (zz absent) in both or neither


def test_chord_iteration_equals_newton_and_hands_on_what_it_cannot_fit():
    """The chord iteration (_bt_numpy.chord_fit) against Newton's method on the same count tables:
    equal estimates where it converges; a replicate without a model's battles or with a model that
    won all its battles (no finite maximum) is flagged for Newton."""
    from mixedeval.inference import _bt_numpy as bn
    from mixedeval.inference._bt_design import build_design

    df, _ = simulate_battles(k=6, n=2000, n_prompts=200, judges=["j1", "j2"], seed=9)
    for ties in ("davidson", "half", "drop"):
        d = build_design(df, "model_a", "model_b", "winner", prompt="prompt", judge="judge", ties=ties,
                         position_bias=True, covariates=None, anchor=None)
        full = bn.fit(d, d.counts[None])
        rng = np.random.default_rng(1)
        w = rng.multinomial(d.n_units, np.full(d.n_units, 1 / d.n_units), size=12).astype(float)
        counts = np.asarray(d.units.T @ w.T).reshape(len(d.a), 3, 12)
        counts[(d.a == 5) | (d.b == 5), :, 0] = 0  # replicate 0: model m5 without battles
        counts[d.a == 4, 1, 1], counts[d.b == 4, 0, 1] = 0, 0  # replicate 1: m4 never loses
        counts[d.a == 4, 2, 1], counts[d.b == 4, 2, 1] = 0, 0
        theta, ok = bn.chord_fit(bn.CellDesign(d), counts, full.theta[0], np.linalg.inv(full.information[0]), 1e-9)
        newton = bn.fit(d, counts.transpose(2, 0, 1), np.repeat(full.theta, 12, axis=0), tol=1e-12)
        assert not ok[0] and not ok[1] and ok[2:].all(), ties
        np.testing.assert_allclose(theta[2:], newton.theta[2:], rtol=1e-8, atol=1e-9)
