"""benchmarks/calibration_bayes.py (issue 41, item 4): the design's true rates (Gauss-Hermite
quadrature, an independent computation), the data it simulates, the zero-width rule and the
pooled coverage (hand-counted). The simulation itself is the benchmark (Stan fits take seconds)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit


def _mod():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "calibration_bayes.py"
    spec = importlib.util.spec_from_file_location("calibration_bayes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_true_rates_by_gauss_hermite_and_the_documented_b_rates():
    cb = _mod()
    z, w = np.polynomial.hermite_e.hermegauss(80)
    for rate in cb.RATES:
        mu_a, mu_b = cb.mus_of(rate)
        gh = float(np.sum(w * expit(mu_a + z)) / np.sqrt(2 * np.pi))
        assert gh == pytest.approx(rate, abs=1e-9)
        assert abs(mu_b - mu_a) == cb.SHIFT and (mu_b > mu_a) == (rate <= 0.5)
    documented = {0.02: 0.032, 0.2: 0.277, 0.5: 0.602, 0.8: 0.723, 0.98: 0.968}
    for rate, b in documented.items():
        assert cb.pop_rate(cb.mus_of(rate)[1]) == pytest.approx(b, abs=5e-4)


def test_simulated_data_and_the_zero_width_rule():
    cb = _mod()
    df = cb.simulate(np.random.default_rng(1), 7, 3, (0.0, 0.5))
    assert len(df) == 2 * 7 * 3 and set(df["score"]) <= {0.0, 1.0}
    assert df.groupby(["system", "item"]).size().eq(3).all()
    assert not cb.covers(0.0, 0.0, 0.0) and cb.covers(0.0, 0.1, 0.05) and not cb.covers(0.0, 0.1, 0.2)


def test_pooled_coverage_counts_every_data_set_once():
    cb = _mod()
    rows = []
    for tasks, rate, hits in ((5, 0.02, [1, 1, 0, 1]), (5, 0.5, [1, 0, 1, 1]), (10, 0.98, [1, 1, 1, 1])):
        for rep, h in enumerate(hits):
            r = {c: 0.0 for c in cb.COLUMNS}
            r.update(tasks=tasks, attempts=1, rate=rate, rep=rep, bayes_hit_a=h, freq_hit_a=1, t_hit_a=0,
                     bayes_hit_diff=1, freq_hit_diff=h, t_hit_diff=0)
            rows.append(r)
    p = cb.pooled(pd.DataFrame(rows)).set_index(["tasks", "rates"])
    assert p.loc[("all", "all"), "bayes_rate"] == pytest.approx(10 / 12)
    assert p.loc[(5, "all"), "bayes_rate"] == pytest.approx(6 / 8)
    assert p.loc[(5, "extreme"), "freq_diff"] == pytest.approx(3 / 4)
    assert p.loc[(10, "extreme"), "n"] == 4 and p.loc[(5, "all"), "designs"] == 2
    assert p.loc[("all", "all"), "mc_se"] == pytest.approx(np.sqrt((10 / 12) * (2 / 12) / 12))
