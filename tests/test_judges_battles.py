"""me.bradley_terry_corrected: PPI / PPI++ Bradley-Terry strengths equal to ppi-python's
ppi_logistic_ci on the Bradley-Terry design (up to its L-BFGS tolerance; the covariance at the
same estimate to 1e-10), the answer, and coverage where a biased judge's strengths do not cover."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.inference._bt_ppi import _stats, ppi_bt

ppi_py = pytest.importorskip("ppi_py")
S = {"m0": 0.0, "m1": 0.5, "m2": 1.0, "m3": -0.3}


def _battles(rng, n=3000, frac=0.2, favour="m2", flip=0.2, lean=0.3):
    names = list(S)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    s = np.array(list(S.values()))
    y = rng.random(n) < 1 / (1 + np.exp(-(s[a] - s[b])))
    yh = np.where(rng.random(n) < 1 - flip, y, ~y)
    fav = np.array(names)[a] == favour
    yh = np.where(fav & (rng.random(n) < lean), True, yh)  # the judge favours its own family
    word = lambda v: np.where(v, "model_a", "model_b")  # noqa: E731
    lab = rng.random(n) < frac
    return pd.DataFrame({"model_a": np.array(names)[a], "model_b": np.array(names)[b], "winner": word(yh),
                         "human_winner": np.where(lab, word(y), None), "prompt": rng.integers(0, 300, n)})


def _arrays(df):
    names = sorted(set(df.model_a) | set(df.model_b))
    X = np.zeros((len(df), 4))
    X[np.arange(len(df)), [names.index(m) for m in df.model_a]] += 1
    X[np.arange(len(df)), [names.index(m) for m in df.model_b]] -= 1
    X = X[:, 1:]
    yh = (df.winner == "model_a").to_numpy(float)
    lab = df.human_winner.notna().to_numpy()
    y = (df.human_winner == "model_a").to_numpy(float)
    return X, y, yh, lab


@pytest.mark.parametrize(("method", "lam"), [("ppi++", None), ("ppi", 1.0)])
def test_strengths_equal_ppi_logistic_ci(method, lam):
    df = _battles(np.random.default_rng(1))
    res = me.bradley_terry_corrected(df, method=method)
    X, y, yh, lab = _arrays(df)
    est = ppi_py.ppi_logistic_pointestimate(X[lab], y[lab], yh[lab], X[~lab], yh[~lab], lam=lam)
    lo, hi = ppi_py.ppi_logistic_ci(X[lab], y[lab], yh[lab], X[~lab], yh[~lab], alpha=0.05, lam=lam)
    t = res.table.set_index("model").loc[["m1", "m2", "m3"]]
    np.testing.assert_allclose(t["strength"], (lo + hi) / 2, rtol=1e-6, atol=1e-7)  # ppi-python's L-BFGS tolerance
    np.testing.assert_allclose(t["conf_high"] - t["conf_low"], hi - lo, rtol=1e-5)
    if method == "ppi":  # (ppi_logistic_pointestimate tunes lambda once, ppi_logistic_ci twice)
        np.testing.assert_allclose(t["strength"], est, rtol=1e-5, atol=1e-6)
    # the covariance at ppi-python's own estimate: exactly its formula
    fit = ppi_bt(X[lab], y[lab], yh[lab], X[~lab], yh[~lab], method=method)
    g, gh, ghu, inv_h = _stats((lo + hi) / 2, X[lab], y[lab], yh[lab], X[~lab], yh[~lab])
    n, N = lab.sum(), (~lab).sum()
    V = inv_h @ (n / N * np.cov((fit.lam * ghu).T) + np.cov((g - fit.lam * gh).T)) @ inv_h / n
    np.testing.assert_allclose(np.sqrt(np.diag(V)) * 2 * 1.959963984540054, hi - lo, rtol=1e-10)


def test_answer_checks_and_errors():
    df = _battles(np.random.default_rng(2), lean=0.5)
    res = me.bradley_terry_corrected(df, cluster="prompt", random_state=0)
    assert res.leaderboard["name"].iloc[0] == "m2" and res.headline.better == "m2"
    assert np.isfinite(res.table["std_error"]).all() and res.table.set_index("model").loc["m0", "std_error"] == 0
    assert list(res.checks["check"]) == ["human verdicts only (classical)", "judge verdicts only"]
    assert "Bradley-Terry" in res.headline_text() and res.p_value == res.headline.p_value
    with pytest.raises(me.DataError, match="not verdicts"):
        me.bradley_terry_corrected(df.assign(winner="a"))
    with pytest.raises(me.DataError, match="human verdict"):
        me.bradley_terry_corrected(df.assign(human_winner=None))


def test_corrected_strengths_cover_where_the_self_preferring_judge_does_not():
    rng = np.random.default_rng(3)
    hits, judge_hits = [], []
    for _ in range(60):
        t = me.bradley_terry_corrected(_battles(rng, n=2000, frac=0.25)).table.set_index("model").loc[["m1", "m2", "m3"]]
        truth = np.array([S["m1"], S["m2"], S["m3"]])
        hits.append((t["conf_low"] <= truth) & (truth <= t["conf_high"]))
        judge_hits.append((t["judge_conf_low"] <= truth) & (truth <= t["judge_conf_high"]))
    assert 0.9 <= np.mean(np.concatenate(hits)) <= 0.99
    assert np.mean(np.concatenate(judge_hits)) < 0.5


def test_report_has_a_judged_battles_section(tmp_path):
    res = me.bradley_terry_corrected(_battles(np.random.default_rng(4)), random_state=0)
    me.report(res, path=tmp_path / "bt.html", progress=False)
    page = (tmp_path / "bt.html").read_text(encoding="utf-8")
    assert "Judged battles corrected with human verdicts" in page and "failed:" not in page
