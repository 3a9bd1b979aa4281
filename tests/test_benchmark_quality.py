"""me.benchmark_quality: signal, noise and SNR as Heineman et al. (2025) define them, decision
accuracy, and the G coefficient with the items needed, against hand computations (numpy on the
same table) and the variance components of lme4::lmer run by R in the test."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.errors import DataError


def _checkpoints(random_state=0):
    rng = np.random.default_rng(random_state)
    rows = []
    for j, base in enumerate([0.40, 0.50, 0.62]):
        for step in range(1, 9):
            rows.append({"system": f"m{j}", "step": step * 1000, "acc": base + 0.01 * step + rng.normal(0, 0.01)})
    return pd.DataFrame(rows)


def test_signal_noise_and_snr_by_hand():
    df = _checkpoints()
    q = me.benchmark_quality(df, score="acc", checkpoint="step", last_n=5)
    final = df[df["step"] == 8000].set_index("system")["acc"]
    signal = (final.max() - final.min()) / final.mean()
    rel = [g.sort_values("step")["acc"].tail(5).std(ddof=1) / g.sort_values("step")["acc"].tail(5).mean()
           for _, g in df.groupby("system")]
    row = q.table.iloc[0]
    assert row["signal"] == pytest.approx(signal, rel=1e-12)
    assert row["noise"] == pytest.approx(np.mean(rel), rel=1e-12)
    assert row["snr"] == pytest.approx(signal / np.mean(rel), rel=1e-12)
    assert list(q.leaderboard["name"]) == ["m2", "m1", "m0"]
    assert "signal-to-noise" in q.headline_text()


def test_checkpoints_sort_numerically():
    df = _checkpoints()
    df["step"] = df["step"].astype(str)  # "8000" < "1000"? string order would pick the wrong final checkpoint
    q = me.benchmark_quality(df, score="acc", checkpoint="step")
    final = df[df["step"] == "8000"].set_index("system")["acc"]
    assert q.table["mean_score"].iloc[0] == pytest.approx(final.mean())


def test_noise_from_runs_without_checkpoints():
    df = pd.DataFrame({"system": ["a"] * 3 + ["b"] * 3, "run": [1, 2, 3] * 2, "score": [0.5, 0.52, 0.49, 0.7, 0.69, 0.73]})
    q = me.benchmark_quality(df, run="run")
    g = df.groupby("system")["score"]
    assert q.table["noise"].iloc[0] == pytest.approx(np.mean(g.std(ddof=1) / g.mean()))
    assert q.table["noise_source"].iloc[0].startswith("runs")
    np.testing.assert_allclose(q.leaderboard.set_index("name").loc[["a", "b"], "std_error"],
                               g.std(ddof=1) / math.sqrt(3))


def test_decision_accuracy_counts_pairs_in_the_same_order():
    small = {"r1": 0.30, "r2": 0.31, "r3": 0.35, "r4": 0.40}
    large = {"r1": 0.50, "r2": 0.58, "r3": 0.55, "r4": 0.70}  # r2/r3 swap: 5 of 6 pairs agree
    df = pd.DataFrame([{"system": k, "scale": "150M", "score": v} for k, v in small.items()]
                      + [{"system": k, "scale": "1B", "score": v} for k, v in large.items()])
    q = me.benchmark_quality(df, scale="scale", small="150M", large="1B")
    assert q.decision_accuracy == pytest.approx(5 / 6) and q.n_pairs == 6
    assert list(q.table["scale"]) == ["150M", "1B"]
    with pytest.raises(DataError, match="small=..., large="):
        me.benchmark_quality(df, scale="scale")


def _r():
    from mixedeval.engine import session

    session._start()
    import rpy2.robjects as ro

    return ro


def test_g_coefficient_and_items_needed_from_lmer(tmp_path):
    rng = np.random.default_rng(7)
    ability = rng.normal(0, 0.8, 12)
    difficulty = rng.normal(0, 1.0, 40)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    y = (rng.random(p.shape) < p).astype(float)
    df = pd.DataFrame([{"system": f"s{i:02d}", "item": f"q{j:02d}", "correct": y[i, j]}
                       for i in range(12) for j in range(40)])
    q = me.benchmark_quality(df, score="correct", item="item", target_reliability=0.95)
    path = tmp_path / "g.csv"
    df.to_csv(path, index=False)
    ro = _r()
    vc = np.array(ro.r(f'''local({{d <- read.csv("{path}"); m <- lme4::lmer(correct ~ 1 + (1|system) + (1|item), data = d)
                         v <- as.data.frame(lme4::VarCorr(m)); c(v$vcov[v$grp == "system"], v$vcov[v$grp == "Residual"])}})'''),
                   copy=True)
    s2, res = vc
    g = s2 / (s2 + res / 40)
    rel = q.reliability.set_index("coefficient")
    assert rel.loc["g_coefficient", "value"] == pytest.approx(g, rel=1e-5)
    assert q.items_needed == math.ceil(0.95 / 0.05 * res / s2 - 1e-9)
    assert rel.loc["g_coefficient", "n_items"] == 40


def test_bad_input():
    df = _checkpoints()
    with pytest.raises(DataError, match="last_n"):
        me.benchmark_quality(df, score="acc", checkpoint="step", last_n=1)
    with pytest.raises(DataError, match="repeat"):
        me.benchmark_quality(df, score="acc")
    with pytest.raises(DataError, match="target_reliability"):
        me.benchmark_quality(df, score="acc", checkpoint="step", target_reliability=1.5)
