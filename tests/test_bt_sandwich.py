"""me.bradley_terry(interval="sandwich"): arena-rank's estimator and sandwich (against a numpy
re-derivation of arena-rank 0.1.1's formulas written here from its source), the clustered
sandwich (against R's sandwich::vcovCL), the Davidson scores (against finite differences), the
cluster bootstrap, and a small coverage simulation with voter and prompt effects."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit

import mixedeval as me
from mixedeval.errors import DataError
from mixedeval.inference import _bt_numpy, _bt_sandwich
from mixedeval.inference._bt_design import build_design

from bt_helpers import projected_strengths, simulate_voter_prompt

ALPHA = 400 / np.log(10)


def _battles(n=2400, k=6, seed=3, ties=0.1):
    """Battles with ties, unbalanced pairs (some under arena-rank's 50 battles), a style feature,
    prompts and judges."""
    rng = np.random.default_rng(seed)
    s = np.linspace(-1, 1, k)
    w = rng.random((k, k)) ** 3 + 0.02
    pairs = [(i, j) for i in range(k) for j in range(k) if i != j]
    pw = np.array([w[i, j] for i, j in pairs])
    idx = rng.choice(len(pairs), n, p=pw / pw.sum())
    a = np.array([pairs[i][0] for i in idx])
    b = np.array([pairs[i][1] for i in idx])
    style = rng.normal(0, 1, n) + 0.2
    p = expit(s[a] - s[b] + 0.4 * style)
    u = rng.random(n)
    win = np.where(u < p * (1 - ties), "model_a", np.where(u < 1 - ties, "model_b", "tie"))
    return pd.DataFrame({"model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b], "winner": win,
                         "style": style, "prompt": rng.integers(0, 150, n), "judge": rng.integers(0, 60, n)})


# ------------------------------------------------------------------ arena-rank's formulas, re-derived
def arena_numpy(df, reweighted, features=None, reg=1.0, hessian_reg=1e-5, level=0.95):
    """arena-rank 0.1.1 (models/bradley_terry.py, contextual_bradley_terry.py,
    utils/data_utils.py) written out with dense numpy: outcomes 1 / 0 / 0.5, the ratings of all
    models (mean 0, L-BFGS from 0), weights 1 / max(pair count, 50) (mean 1 with features),
    features standardised, ridge reg/2 |beta|^2 on the mean loss, the sandwich with hessian_reg."""
    comps = sorted(set(df.model_a) | set(df.model_b))
    ix = {c: i for i, c in enumerate(comps)}
    a, b = df.model_a.map(ix).to_numpy(), df.model_b.map(ix).to_numpy()
    y = df.winner.map({"model_a": 1.0, "model_b": 0.0}).fillna(0.5).to_numpy()
    n, k = len(df), len(comps)
    x = np.zeros((n, k))
    x[np.arange(n), a] = 1.0
    x[np.arange(n), b] = -1.0
    key = np.minimum(a, b) * k + np.maximum(a, b)
    _, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    w = 1.0 / np.maximum(cnt[inv], 50) if reweighted else np.ones(n)
    q = 0
    if features is not None:
        f = df[features].to_numpy(dtype=float)
        f = (f - f.mean(axis=0)) / f.std(axis=0)
        x = np.hstack([x, f])
        q = f.shape[1]
        if reweighted:
            w = w / w.mean()
    pen = np.r_[np.zeros(k), np.full(q, reg * n if q else 0.0)]
    th = np.zeros(k + q)
    for _ in range(100):
        p = expit(x @ th)
        g = x.T @ (w * (y - p)) - pen * th
        h = (x * (w * p * (1 - p))[:, None]).T @ x + np.diag(pen)
        step = np.linalg.lstsq(h, g, rcond=None)[0]
        th += step
        th[:k] -= th[:k].mean()
        if np.abs(step).max() < 1e-13:
            break
    p = expit(x @ th)
    r = w * (y - p)
    if q:  # contextual: mean-form Hessian and meat, hessian_reg on both blocks, ridge correction
        hess = (x * (w * p * (1 - p))[:, None]).T @ x / n
        c = hessian_reg
        bb = np.r_[np.zeros(k), th[k:]]
        meat = (x * (r ** 2)[:, None]).T @ x / n - reg ** 2 / n * np.outer(bb, bb)
    else:
        unweighted = np.allclose(w, 1.0)
        hess = (x * (w * p * (1 - p))[:, None]).T @ x
        c = hessian_reg * (n if unweighted else 1.0)
        meat = (x * (r ** 2)[:, None]).T @ x
    # (hess + c I)^-1 meat (hess + c I)^-1 in exact arithmetic: hess and meat vanish along the
    # ratings' common shift, where 1 / c would multiply the rounding of meat; by the eigenvectors
    lam, vec = np.linalg.eigh(hess)
    keep = np.abs(vec[:k].sum(axis=0)) / np.sqrt(k) < 1 - 1e-6  # drop the common shift
    lam, vec = lam[keep], vec[:, keep]
    half = vec / (lam + c)
    var = np.diag(half @ (vec.T @ meat @ vec) @ half.T)[:k] / (n if q else 1.0)
    z = stats.norm.ppf(0.5 + level / 2)
    se = np.sqrt(var)
    return pd.DataFrame({"rating": ALPHA * th[:k] + 1000, "lower": ALPHA * (th[:k] - z * se) + 1000,
                         "upper": ALPHA * (th[:k] + z * se) + 1000}, index=comps), th[k:]


@pytest.fixture(scope="module")
def battles():
    return _battles()


@pytest.mark.parametrize("reweight", [None, "pair"])
@pytest.mark.parametrize("features", [None, ["style"]])
def test_arena_rank_estimator_equals_its_formulas(battles, reweight, features):
    res = me.bradley_terry(battles, estimator="arena-rank", interval="sandwich", cluster="battle",
                           reweight=reweight, covariates=features)
    ref, coef = arena_numpy(battles, reweight == "pair", features)
    tab = res.table.set_index("model").loc[ref.index]
    np.testing.assert_allclose(tab["elo"], ref["rating"], atol=1e-6, rtol=0)
    np.testing.assert_allclose(tab["elo_conf_low"], ref["lower"], atol=1e-6, rtol=0)
    np.testing.assert_allclose(tab["elo_conf_high"], ref["upper"], atol=1e-6, rtol=0)
    if features:
        np.testing.assert_allclose(res.covariates["estimate"], coef, atol=1e-9)
    assert "arena-rank" in res.interval_method and "arena-rank" in res.answer.method
    assert res.provenance["estimator"] == "arena-rank" and res.ties == "half"


def test_reweighting_changes_the_ratings(battles):
    plain = me.bradley_terry(battles, estimator="arena-rank", interval="sandwich", cluster="battle")
    rew = me.bradley_terry(battles, estimator="arena-rank", interval="sandwich", cluster="battle", reweight="pair")
    assert np.abs(plain.table.set_index("model").elo - rew.table.set_index("model").elo).max() > 0.5


# ------------------------------------------------------------------ R's sandwich::vcovCL
def _ro():
    from mixedeval.engine import session

    session._start()
    import rpy2.robjects as ro

    return ro


def _vcovcl(df, tmp_path, cluster: str, ties: str) -> np.ndarray:
    ro = _ro()
    path = tmp_path / "bt.csv"
    df.to_csv(path, index=False)
    ro.r(f'bt <- read.csv("{path.as_posix()}", stringsAsFactors = FALSE)')
    ro.r(f'''suppressMessages(library(sandwich))
        d <- if ("{ties}" == "drop") bt[bt$winner != "tie", ] else bt
        lev <- sort(unique(c(d$model_a, d$model_b)), method = "radix")
        X <- outer(d$model_a, lev, "==") - outer(d$model_b, lev, "==")
        X <- X[, -1, drop = FALSE]
        y <- ifelse(d$winner == "model_a", 1, ifelse(d$winner == "model_b", 0, 0.5))
        ctl <- glm.control(epsilon = 1e-14, maxit = 100)
        fit0 <- suppressWarnings(glm(y ~ 0 + X, family = binomial, control = ctl))
        # refit from the maximum: glm's working weights (the bread) are those of the last iteration's
        # start, so they are then evaluated at the estimate itself
        fit <- suppressWarnings(glm(y ~ 0 + X, family = binomial, control = ctl, start = coef(fit0)))
        cl <- switch("{cluster}", prompt = d["prompt"], judge = d["judge"], both = d[c("prompt", "judge")])
        V <- vcovCL(fit, cluster = cl, type = "HC0", cadjust = TRUE, fix = TRUE)''')
    return np.array(ro.r("V"), dtype=float, copy=True)


@pytest.mark.parametrize("cluster,ties", [("prompt", "drop"), ("judge", "drop"), ("both", "drop"), ("prompt", "half"), ("both", "half")])
def test_clustered_sandwich_equals_r_vcovcl(battles, tmp_path, cluster, ties):
    arg = {"prompt": "prompt", "judge": "judge", "both": ("judge", "prompt")}[cluster]
    res = me.bradley_terry(battles, prompt="prompt", judge="judge", ties=ties, position_bias=False,
                           interval="sandwich", cluster=arg)
    v = res.vcov[:res.n_models - 1, :res.n_models - 1]
    r = _vcovcl(battles, tmp_path, cluster, ties)
    np.testing.assert_allclose(v, r, rtol=1e-8, atol=1e-12 * np.abs(r).max())
    # the strengths' standard errors and t intervals come from it
    tab = res.table.set_index("model").loc[[f"m{i}" for i in range(1, res.n_models)]]
    np.testing.assert_allclose(tab["std_error"], np.sqrt(np.diag(r)), rtol=1e-8)
    g = min(res.provenance["n_clusters"][c] for c in (["prompt", "judge"] if cluster == "both" else [cluster]))
    tq = stats.t.ppf(0.975, g - 1)
    np.testing.assert_allclose(tab["conf_high"] - tab["estimate"], tq * np.sqrt(np.diag(r)), rtol=1e-7)
    assert res.provenance["t_df"] == g - 1


def test_two_way_is_prompt_plus_judge_minus_intersection(battles):
    kw = dict(prompt="prompt", judge="judge", ties="half", position_bias=False, interval="sandwich")
    vs = {c: me.bradley_terry(battles, cluster=c, **kw).vcov for c in ("prompt", "judge", ("judge", "prompt"))}
    # the intersection term by hand: clusters = (prompt, judge) combinations
    df = battles.assign(pj=battles.prompt.astype(str) + "|" + battles.judge.astype(str))
    v_pj = me.bradley_terry(df, **{**kw, "prompt": "pj", "judge": None}, cluster="prompt").vcov
    # each one-way term carries its own G/(G-1) (CGM: V_p + V_j - V_pj)
    want = vs["prompt"] + vs["judge"] - v_pj
    if np.linalg.eigvalsh(want).min() > 0:
        np.testing.assert_allclose(vs[("judge", "prompt")], want, rtol=1e-9, atol=1e-14)
    else:
        pytest.skip("the two-way sum is not positive semi-definite here (fixed as R's fix=TRUE)")


# ------------------------------------------------------------------ Davidson scores
def test_score_rows_are_the_per_battle_gradients():
    df = _battles(n=600, k=4, seed=5, ties=0.25)
    d = build_design(df, "model_a", "model_b", "winner", prompt="prompt", judge="judge", ties="davidson",
                     position_bias=True, covariates=None, anchor=None, min_judge_battles=200,
                     cluster_by={"prompt": "prompt"})
    f = _bt_numpy.fit(d, d.counts[None])
    theta = f.theta[0] + 0.05  # away from the maximum: the scores are not zero
    s = _bt_sandwich.score_matrix(d, theta).toarray()
    ops = _bt_numpy._Ops(d)
    for cell in range(0, len(d.a), 3):
        for o in range(3):
            one = np.zeros((1, len(d.a), 3))
            one[0, cell, o] = 1.0
            h = 1e-6
            fd = [(_bt_numpy._loglik(ops, one, (theta + h * e)[None], "davidson")[0]
                   - _bt_numpy._loglik(ops, one, (theta - h * e)[None], "davidson")[0]) / (2 * h)
                  for e in np.eye(len(theta))]
            np.testing.assert_allclose(s[3 * cell + o], fd, atol=1e-7)
    # at the maximum the battles' scores sum to zero
    s0 = _bt_sandwich.score_matrix(d, f.theta[0])
    np.testing.assert_allclose(np.asarray(d.counts).ravel() @ s0.toarray(), 0.0, atol=1e-6)


def test_davidson_sandwich_without_clustering_near_model_se():
    df = _battles(n=3000, k=5, seed=6, ties=0.2)
    res = me.bradley_terry(df, interval="sandwich", position_bias=False)
    ratio = res.table["std_error"] / res.table["model_std_error"]
    ratio = ratio[np.isfinite(ratio) & (res.table["model_std_error"] > 0)]
    assert ratio.between(0.85, 1.15).all()  # a correct model: the sandwich estimates the same variance
    assert res.interval_method.startswith("sandwich (battles independent")


# ------------------------------------------------------------------ bootstrap by the same units
def test_judge_bootstrap_agrees_with_judge_sandwich():
    df = simulate_voter_prompt(strengths=[0, 0.4, -0.3, 0.8], n_prompts=300, per_prompt=6, n_judges=60,
                               sd_prompt=0.0, sd_judge=0.8, seed=2)
    kw = dict(prompt="prompt", judge="judge", ties="drop", position_bias=False, ranks=False)
    sw = me.bradley_terry(df, interval="sandwich", cluster="judge", **kw)
    bs = me.bradley_terry(df, cluster="judge", n_resamples=400, random_state=1, min_judge_battles=1000, **kw)
    assert bs.provenance["resample_units"] == ["judge"] and bs.interval_method.startswith("judge bootstrap")
    se_s = sw.table.set_index("model").std_error.drop("m0")
    se_b = bs.table.set_index("model").std_error.drop("m0")
    assert ((se_b / se_s).between(0.8, 1.25)).all(), (se_b / se_s)
    # and both: prompts and judges drawn independently
    both = me.bradley_terry(df, cluster=("judge", "prompt"), n_resamples=200, random_state=1, **kw)
    assert both.resample_units == ("judge", "prompt")
    assert (both.table.set_index("model").std_error.drop("m0") >= 0.9 * se_b).all()


# ------------------------------------------------------------------ coverage (small; benchmarks/ has the large one)
def test_clustered_sandwich_covers_with_voter_and_prompt_effects_small():
    s = np.array([0.0, 0.5, -0.4, 0.9])
    sd_p, sd_j = 0.5, 1.0
    truth = projected_strengths(s, np.hypot(sd_p, sd_j))
    hit_cgm, hit_arena = [], []
    for rep in range(30):
        df = simulate_voter_prompt(strengths=s, n_prompts=80, per_prompt=8, n_judges=25, sd_prompt=sd_p,
                                   sd_judge=sd_j, seed=500 + rep)
        kw = dict(ties="drop", position_bias=False, ranks=False, interval="sandwich", reference="m0")
        for out, extra in ((hit_cgm, dict(prompt="prompt", judge="judge", cluster=("judge", "prompt"))),
                           (hit_arena, dict(estimator="arena-rank", cluster="battle"))):
            kw2 = {**kw, **extra}
            if extra.get("estimator"):
                kw2.pop("ties"), kw2.pop("position_bias")
            t = me.bradley_terry(df, **kw2).table.set_index("model").loc[["m1", "m2", "m3"]]
            out.append(((t.conf_low <= truth[1:]) & (truth[1:] <= t.conf_high)).to_numpy())
    cgm, arena = np.mean(hit_cgm), np.mean(hit_arena)
    # 90 intervals (30 data sets x 3 strengths): Monte-Carlo SE about 0.025 at 95%
    assert cgm >= 0.85, cgm
    assert arena < cgm - 0.1, (arena, cgm)  # the unclustered sandwich under-covers when votes cluster


# ------------------------------------------------------------------ input checks
def test_bad_interval_and_cluster(battles):
    with pytest.raises(DataError, match="interval"):
        me.bradley_terry(battles, interval="jackknife")
    with pytest.raises(DataError, match="cluster"):
        me.bradley_terry(battles, interval="sandwich", cluster="model")
    with pytest.raises(DataError, match="judge column"):
        me.bradley_terry(battles, prompt="prompt", interval="sandwich", cluster="judge")
    with pytest.raises(DataError, match="reweight"):
        me.bradley_terry(battles, reweight="model")
    with pytest.raises(DataError, match="arena-rank"):
        me.bradley_terry(battles, estimator="arena-rank", ties="drop")
    with pytest.raises(DataError, match="single judge"):
        me.bradley_terry(battles.assign(judge="j"), judge="judge", interval="sandwich", cluster="judge",
                         position_bias=False, ties="half")
    with pytest.raises(DataError, match="penalises"):
        me.bradley_terry(battles, prompt="prompt", estimator="arena-rank", interval="sandwich", cluster="prompt",
                         covariates=["style"])
    with pytest.raises(DataError, match="unpenalised fits"):
        me.bradley_terry(battles, estimator="arena-rank", covariates=["style"])
    with pytest.raises(DataError, match="min_pair_battles"):
        me.bradley_terry(battles, reweight="pair", min_pair_battles=0)
    before = battles.copy()
    me.bradley_terry(battles, estimator="arena-rank", interval="sandwich", covariates=["style"], reweight="pair")
    pd.testing.assert_frame_equal(battles, before)  # the user's table is not modified


def test_voter_is_an_alias_of_judge(battles):
    a = me.bradley_terry(battles, prompt="prompt", judge="judge", interval="sandwich", cluster="voter,prompt",
                         position_bias=False, ties="half")
    b = me.bradley_terry(battles, prompt="prompt", judge="judge", interval="sandwich", cluster=("judge", "prompt"),
                         position_bias=False, ties="half")
    np.testing.assert_array_equal(a.vcov, b.vcov)
    assert "prompt and judge" in a.answer.method and "CGM" in a.answer.method


def test_arena_sandwich_is_the_exact_arithmetic_value():
    """Reweighted Bradley-Terry: arena-rank's (H + 1e-5 I)^-1 G (H + 1e-5 I)^-1 is ill-conditioned
    (plain float64 loses ~4e-7 of the variances); mixedeval's equals the value computed with 50
    significant digits (Python's decimal) to 1e-12."""
    from collections import Counter
    from decimal import Decimal as D, localcontext

    df = _battles(n=2000, k=6, seed=11)
    res = me.bradley_terry(df, estimator="arena-rank", interval="sandwich", cluster="battle", reweight="pair")
    tab = res.table.set_index("model")
    comps = sorted(set(df.model_a) | set(df.model_b))
    ix = {c: i for i, c in enumerate(comps)}
    k = len(comps)
    a, b = df.model_a.map(ix).to_numpy(), df.model_b.map(ix).to_numpy()
    y = df.winner.map({"model_a": 1.0, "model_b": 0.0}).fillna(0.5).to_numpy()
    key = np.minimum(a, b) * k + np.maximum(a, b)
    _, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    w = 1.0 / np.maximum(cnt[inv], 50)
    th = (tab.loc[comps, "elo"].to_numpy() - 1000) / ALPHA
    with localcontext() as ctx:
        ctx.prec = 50
        h = [[D(0)] * k for _ in range(k)]
        g = [[D(0)] * k for _ in range(k)]
        t = [D(float(v)) for v in th]
        for (i, j, yy, ww), c in Counter(zip(a, b, y, w)).items():
            p = 1 / (1 + (t[j] - t[i]).exp())
            hv, gv = c * D(float(ww)) * p * (1 - p), c * (D(float(ww)) * (D(float(yy)) - p)) ** 2
            for u, v, sg in ((i, i, 1), (j, j, 1), (i, j, -1), (j, i, -1)):
                h[u][v] += sg * hv
                g[u][v] += sg * gv
        for i in range(k):
            h[i][i] += D("1e-5")
        aug = [row[:] + [D(int(i == j)) for j in range(k)] for i, row in enumerate(h)]
        for c in range(k):  # Gauss-Jordan
            piv = max(range(c, k), key=lambda r: abs(aug[r][c]))
            aug[c], aug[piv] = aug[piv], aug[c]
            aug[c] = [x / aug[c][c] for x in aug[c]]
            for r in range(k):
                if r != c:
                    m = aug[r][c]
                    aug[r] = [x - m * yv for x, yv in zip(aug[r], aug[c])]
        hi = [row[k:] for row in aug]
        var = [float(sum(hi[i][u] * g[u][v] * hi[v][i] for u in range(k) for v in range(k))) for i in range(k)]
    z = stats.norm.ppf(0.975)
    ours = ((tab.loc[comps, "elo"] - tab.loc[comps, "elo_conf_low"]).to_numpy() / z / ALPHA) ** 2
    np.testing.assert_allclose(ours, var, rtol=1e-12)
