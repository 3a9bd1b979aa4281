"""me.labels_needed: ppi-python's power analysis on independent designs (the PPI correlation and
the cheapest pair of sample sizes), and by simulation on a clustered one (the planned labels
give the target width); and the coverage of the corrected intervals by a small simulation
(benchmarks/calibration_judges.py is the precise version)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import mixedeval as me
from judges_helpers import fast_units, simulate, simulate_binary
from mixedeval.workflows import _judges_tables as T
from mixedeval.workflows._judges_budget import optimal_pair

ppi_py = pytest.importorskip("ppi_py")


@pytest.mark.parametrize(("rho", "ratio", "n0"), [(0.9, 20.0, 400), (0.6, 5.0, 250), (0.3, 2.0, 100),
                                                  (0.95, 100.0, 1000), (0.5, 1.0, 300)])
def test_optimal_pair_is_ppi_pythons(rho, ratio, n0):
    ours = optimal_pair(n0, rho, ratio)
    theirs = ppi_py.ppi_power(rho, 0.0, ratio, 1.0, effective_n=n0)
    assert ours == (theirs["n"], theirs["N"])


def test_ppi_correlation_and_plan_match_ppi_python_on_matched_labels():
    df = simulate(np.random.default_rng(3), mu=(0.6, 0.4), bias=(0.3, -0.1), n_items=500, n_labels=120,
                  same_items=True)
    pilot = me.judge_corrected(df)
    plan = me.labels_needed(pilot, width=0.1, cost_ratio=10)
    row = plan.table.iloc[0]
    wide = df.pivot_table(index="item", columns="system", values=["judge_score", "human_score"])
    dy = wide["human_score"]["s0"] - wide["human_score"]["s1"]
    dg = wide["judge_score"]["s0"] - wide["judge_score"]["s1"]
    lab = dy.notna()
    # the target variance of the interval judge_corrected will compute (Student's t with the planned
    # df, CR1 factor): ppi-python's rule for that target (it plans normal-quantile widths)
    assert row["target_std_error"] == pytest.approx(0.1 / (2 * stats.t.ppf(0.975, row["df"])), rel=1e-12)
    n0 = np.var(dy[lab]) / (row["target_std_error"] ** 2 / row["cr1_factor"])  # classical labels for the target
    theirs = ppi_py.ppi_mean_power(dy[lab].to_numpy(), dg[lab].to_numpy(), 10.0, 1.0, effective_n=n0)
    assert row["ppi_corr"] == pytest.approx(theirs["ppi_corr"], rel=1e-10)
    assert (row["labels_needed"], row["items_needed"] - row["labels_needed"]) == (theirs["n"], theirs["N"])
    assert row["classical_labels"] == np.ceil(n0)
    assert row["pilot_labels"] == 120 and row["pilot_items"] == 500


def test_fixed_items_plan_and_power_target():
    df = simulate(np.random.default_rng(4), mu=(0.6, 0.4), bias=(0.3, -0.1), n_items=2000, n_labels=100)
    pilot = me.judge_corrected(df)
    plan = pilot.labels_needed(width=0.15)
    row = plan.table.iloc[0]
    n0, r2, m = row["classical_labels"], row["ppi_corr"] ** 2, 2000
    assert row["reachable"] and row["items_needed"] == m
    assert abs(row["labels_needed"] - n0 * (1 - r2) / (1 - r2 * n0 / m)) <= 1.0 + 1e-9
    assert plan.labels == int(row["labels_needed"])
    p2 = me.labels_needed(pilot, power=0.8, delta=0.1)
    assert "power 0.8" in p2.target
    df2 = p2.table["df"].iloc[0]
    assert p2.table["target_std_error"].iloc[0] == pytest.approx(0.1 / (stats.t.ppf(0.975, df2) + stats.t.ppf(0.8, df2)))
    with pytest.raises(me.DataError, match="one target"):
        me.labels_needed(pilot)
    with pytest.raises(me.DataError, match="cost_ratio"):
        me.labels_needed(pilot, width=0.1, cost_ratio=-1)
    tiny = pilot.labels_needed(width=1e-4)
    assert not tiny.table["reachable"].iloc[0] and any(w.kind == "unreachable" for w in tiny.warnings)


def test_plan_on_a_clustered_design_reaches_the_target_width_by_simulation():
    """Pilot with 60 labels per system in 40 clusters; the planned labels, used on fresh data of
    the same design, give intervals of the difference whose mean width is the target (+-15%)."""
    rng = np.random.default_rng(5)
    kw = dict(mu=(0.6, 0.4), bias=(0.3, -0.1), n_items=800, epochs=2, n_clusters=40)
    pilot = me.judge_corrected(simulate(rng, n_labels=60, **kw), epoch="epoch", cluster="cluster")
    target = 0.25
    n = int(pilot.labels_needed(width=target).table["labels_needed"].iloc[0])
    assert 60 < n < 800
    widths = []
    for _ in range(40):
        u, systems = fast_units(simulate(rng, n_labels=n, **kw))
        pw = T.pairwise_rows(u, systems, "ppi++", 0.95, "none")
        widths.append(float(pw["conf_high"].iloc[0] - pw["conf_low"].iloc[0]))
    assert np.mean(widths) == pytest.approx(target, rel=0.15)


def _coverage(rng, reps, **kw):
    mu = np.array(kw["mu"])
    diffs = np.array([mu[a] - mu[b] for a in range(len(mu)) for b in range(a + 1, len(mu))])
    cov = {"ppi++": [], "judge": [], "width": []}
    for _ in range(reps):
        u, systems = fast_units(simulate(rng, **kw))
        pw = T.pairwise_rows(u, systems, "ppi++", 0.95, "none")
        tab, _ = T.system_rows(u, systems, "ppi++", 0.95)
        for t, truth in ((pw, diffs), (tab, mu)):
            cov["ppi++"].append((t["conf_low"] <= truth) & (truth <= t["conf_high"]))
            cov["judge"].append((t["judge_conf_low"] <= truth) & (truth <= t["judge_conf_high"]))
        cov["width"].append(((pw["conf_high"] - pw["conf_low"]) / (pw["classical_conf_high"] - pw["classical_conf_low"])))
    return {k: float(np.mean(np.concatenate([np.asarray(v) for v in vals]))) for k, vals in cov.items()}


def test_corrected_intervals_cover_where_the_biased_judge_does_not():
    """Judges biased differently per system, errors correlated within 40 clusters, 2 epochs,
    60 labels per system: the corrected intervals cover near 95%, the judge-only ones do not."""
    rng = np.random.default_rng(6)
    r = _coverage(rng, 120, mu=(0.6, 0.5, 0.45), bias=(0.3, 0.0, -0.1), n_items=400, n_labels=60, epochs=2,
                  n_clusters=40)
    assert 0.91 <= r["ppi++"] <= 0.99
    assert r["judge"] < 0.7
    assert r["width"] < 0.9  # narrower than people's labels alone


def test_rogan_gladen_covers_with_clusters():
    rng = np.random.default_rng(7)
    hits = []
    for _ in range(120):
        u, systems = fast_units(simulate_binary(rng, n_items=400, n_labels=150, n_clusters=40))
        tab, _ = T.system_rows(u, systems, "rogan-gladen", 0.95)
        truth = np.array([0.7, 0.6])
        hits.append((tab["conf_low"] <= truth) & (truth <= tab["conf_high"]))
    assert 0.91 <= np.mean(np.concatenate(hits)) <= 0.995


def test_labels_needed_accepts_a_table():
    df = simulate(np.random.default_rng(8), mu=(0.6, 0.4), bias=(0.3, -0.1), n_items=300, n_labels=80)
    plan = me.labels_needed(df, width=0.2)
    assert isinstance(plan.table, pd.DataFrame) and plan.table["system_a"].iloc[0] in ("s0", "s1")
    with pytest.raises(me.DataError, match="ppi"):
        me.labels_needed(me.judge_corrected(simulate_binary(np.random.default_rng(9)), method="rogan-gladen"),
                         width=0.1)
