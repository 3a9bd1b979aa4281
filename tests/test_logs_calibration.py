"""CI-sized calibration of me.compare_logs' headline (the precise version with more repetitions:
benchmarks/calibration_logs.py, whose data model and exact estimand this file uses).

Per scenario, a few hundred simulated pairs of systems with a known difference in expected
accuracy theta (Gauss-Hermite quadrature; see the benchmark's docstring): the headline path
(``epoch_means`` then ``_paired.paired_differences``, every data set a "task" of one call) must

* cover theta with its 95% interval within 3 binomial Monte-Carlo SEs of 0.95,
* reject at 5% within 3 MC SEs of 0.05 when the systems are identical in distribution,
* report SEs whose mean is within 15% of the SD of the estimates across data sets.

The same criteria applied to the old mistake -- the items + runs bootstrap of the epoch-level
rows with the epochs counted as runs -- fail (its SE is about 1.35 times the truth), so this
test can fail.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.workflows._paired import paired_differences
from mixedeval.workflows.logs.design import reduce_epochs as epoch_means

_spec = importlib.util.spec_from_file_location(
    "calibration_logs", Path(__file__).resolve().parents[1] / "benchmarks" / "calibration_logs.py")
cal = importlib.util.module_from_spec(_spec)
sys.modules["calibration_logs"] = cal  # dataclasses look their module up
_spec.loader.exec_module(cal)

REPS = 400
SCENARIOS = ["a iid epochs", "b 3 iid runs", "b 3 runs, run effect", "c clustered", "d near 1", "e 30 questions"]


def _stacked(sc, delta: float, reps: int, rng: np.random.Generator) -> pd.DataFrame:
    """``reps`` simulated data sets, data set j as task ``j`` (its clusters nested in it)."""
    frames = []
    for j in range(reps):
        df = cal.simulate(sc, delta, rng)
        df["task"] = f"{j:04d}"
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _headline(sc, delta: float, reps: int, rng: np.random.Generator) -> pd.DataFrame:
    """One row per data set: the headline's delta, std_error, conf_low, conf_high, p_value."""
    avg = epoch_means(_stacked(sc, delta, reps, rng))
    return paired_differences(avg, ["a", "b"], cluster="cluster" if sc.clusters else None, runs=sc.runs > 1,
                              adjust="none")


def _calibrated(cover: np.ndarray, reject: np.ndarray, se: np.ndarray, est: np.ndarray) -> list[str]:
    """The failed criteria (empty: calibrated)."""
    fails = []
    c, r = float(np.mean(cover)), float(np.mean(reject))
    if abs(c - 0.95) > 3 * np.sqrt(0.95 * 0.05 / cover.size):
        fails.append(f"coverage {c:.3f}")
    if abs(r - 0.05) > 3 * np.sqrt(0.95 * 0.05 / reject.size):
        fails.append(f"type I error {r:.3f}")
    ratio = float(np.mean(se) / np.std(est, ddof=1))
    if abs(ratio - 1) > 0.15:
        fails.append(f"mean SE / SD {ratio:.2f}")
    return fails


@pytest.mark.parametrize("name", SCENARIOS)
def test_headline_is_calibrated(name):
    sc = cal.SCENARIOS[name]
    rng = np.random.default_rng(np.random.SeedSequence(2024, spawn_key=(SCENARIOS.index(name),)))
    theta = cal.truth(sc, cal.DELTA_ALT)
    alt = _headline(sc, cal.DELTA_ALT, REPS, rng)
    null = _headline(sc, 0.0, REPS, rng)
    assert alt["conf_low"].notna().all() and null["p_value"].notna().all()
    cover = ((alt["conf_low"] <= theta) & (theta <= alt["conf_high"])).to_numpy()
    fails = _calibrated(cover, (null["p_value"] < 0.05).to_numpy(), alt["std_error"].to_numpy(),
                        alt["delta"].to_numpy())
    assert not fails, f"{name}: {fails}"


def _boot_epochs_as_runs(df: pd.DataFrame, seed: int) -> tuple[float, float, float, float, float]:
    b = me.bootstrap(df.drop(columns="run").rename(columns={"epoch": "run"}), score="score", system="system",
                     item="item", run="run", n_resamples=300, random_state=seed, progress=False)
    r = b.pairwise(adjust="none").iloc[0]
    sign = 1.0 if r["system_a"] == "a" else -1.0
    lo, hi = sorted((sign * r["conf_low"], sign * r["conf_high"]))
    return sign * r["delta"], r["std_error"], lo, hi, r["p_value"]


def test_epochs_counted_as_runs_is_detected_as_miscalibrated():
    """The old mistake over-covers (SE about 1.35x the truth with 3 epochs): the criteria catch it,
    while the headline on the same data sets passes them."""
    sc = cal.SCENARIOS["a iid epochs"]
    rng = np.random.default_rng(np.random.SeedSequence(2025))
    theta = cal.truth(sc, cal.DELTA_ALT)
    n = 150
    alt = [cal.simulate(sc, cal.DELTA_ALT, rng) for _ in range(n)]
    null = [cal.simulate(sc, 0.0, rng) for _ in range(n)]
    old_alt = np.array([_boot_epochs_as_runs(d, i) for i, d in enumerate(alt)])
    old_null = np.array([_boot_epochs_as_runs(d, n + i) for i, d in enumerate(null)])
    fails = _calibrated((old_alt[:, 2] <= theta) & (theta <= old_alt[:, 3]), old_null[:, 4] < 0.05, old_alt[:, 1],
                        old_alt[:, 0])
    assert any(f.startswith("mean SE / SD") for f in fails), fails
    ratio = float(np.mean(old_alt[:, 1]) / np.std(old_alt[:, 0], ddof=1))
    assert ratio > 1.2
    stack = pd.concat([d.assign(task=f"{j:04d}") for j, d in enumerate(alt)], ignore_index=True)
    new = paired_differences(epoch_means(stack), ["a", "b"], adjust="none")
    assert np.allclose(np.sort(new["delta"].to_numpy()), np.sort(old_alt[:, 0]))  # same estimates, other SEs
    new_ratio = float(new["std_error"].mean() / new["delta"].std(ddof=1))
    assert abs(new_ratio - 1) < 0.15, new_ratio


def test_iid_runs_interval_is_not_inflated_unlike_the_previous_two_stage_se():
    """3 i.i.d. runs per system (issue 30), through the package's own path (``paired_differences``
    on 200 stacked data sets): the mean half-width / 1.96 of the headline's interval is 1.17 times
    the SD of the estimates in the benchmark's 20,000 data sets (the sometimes-pool rule; the
    target 1.10 is not met with 2 systems x 3 runs, see ``_paired``); with 200 data sets the SD has
    about 5% Monte-Carlo error, hence the bound 1.26; the previous per-system two-stage SE
    (Satterthwaite df of each difference of mean squares) on the same data sets is more than 0.1
    wider. The 8,000-data-set version: ``test_run_variance_rule_covers_with_strong_run_effects...``."""
    sc = cal.SCENARIOS["b 3 iid runs"]
    rng = np.random.default_rng(np.random.SeedSequence(2026))
    n = 200
    data = [cal.simulate(sc, cal.DELTA_ALT, rng) for _ in range(n)]
    stack = pd.concat([d.assign(task=f"{j:04d}") for j, d in enumerate(data)], ignore_index=True)
    new = paired_differences(epoch_means(stack), ["a", "b"], runs=True, adjust="none")
    old = np.array([cal.two_stage_old(d) for d in data])
    sd = float(np.std(new["delta"], ddof=1))
    np.testing.assert_allclose(old[:, 0], new["delta"], rtol=1e-12)
    ratio_new = float(np.mean((new["conf_high"] - new["conf_low"]) / 2) / 1.96 / sd)
    ratio_old = float(np.mean((old[:, 3] - old[:, 2]) / 2) / 1.96 / sd)
    assert ratio_new < 1.26, ratio_new
    assert ratio_old > 1.25 and ratio_old > ratio_new + 0.1, (ratio_old, ratio_new)


def _runs_case(sc, systems: int, reps: int, seed: int) -> dict[str, tuple[float, float]]:
    """Per method of the benchmark's vectorized runs analysis (its headline checked against
    ``paired_differences`` on the first data sets): coverage of theta and mean half-width / 1.96
    over the SD of the estimates, ``reps`` simulated data sets of ``systems`` systems."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    cal.check_runs_vectorized(sc, rng, k=3, systems=systems)
    out = cal.runs_methods(cal.simulate_runs(sc, cal.DELTA_ALT, rng, reps, systems))
    theta = cal.truth(sc, cal.DELTA_ALT)
    res = {}
    for m, r in out.items():
        sd = float(np.std(r[:, 0], ddof=1))
        cover = float(np.mean((r[:, 2] <= theta) & (theta <= r[:, 3])))
        res[m] = (cover, float(np.mean(r[:, 3] - r[:, 2]) / 2 / 1.96 / sd))
    return res


def test_run_variance_rule_covers_with_strong_run_effects_and_stays_tight_with_iid_runs():
    """Issue 30, item 3 (the precise figures: ``benchmarks/calibration_logs.py --runs-vectorized
    --systems 2 3``): with a strong run effect (run SD 1.0 on the logit scale, 2 systems x 3 runs)
    the headline covers 93-97% (Monte-Carlo tolerance 3 SE), where the rule before (the truncated
    estimate on the pooled run df) covered about 92%; with i.i.d. runs the mean half-width / 1.96 is
    within 1.10 of the true SD at 3 systems x 5 and x 3 runs and below 1.18 at 2 systems x 3 runs
    (about 1.14, at the bound of any rule deciding from the F statistic; the exact Satterthwaite df
    whenever the estimate is positive give 1.25, the old two-stage SE 1.35), with coverage 93-97%."""
    reps = 8000
    tol = 3 * np.sqrt(0.93 * 0.07 / reps)
    strong = cal.replace(cal.SCENARIOS["b 3 runs, strong run effect"], sd_run=1.0)
    r = _runs_case(strong, 2, reps, 3030)
    cover, _ = r["headline"]
    assert 0.93 - tol <= cover <= 0.97 + tol, r
    assert r["pooled, run df (before)"][0] < cover - 0.01, r  # the test can fail: the rule before under-covers
    iid5 = _runs_case(cal.SCENARIOS["b 5 iid runs"], 3, reps, 3031)
    cover, width = iid5["headline"]
    assert 0.93 - tol <= cover <= 0.97 + tol and width <= 1.10 * (1 + 3 / np.sqrt(2 * reps)), iid5
    iid3 = _runs_case(cal.SCENARIOS["b 3 iid runs"], 2, reps, 3032)
    cover, width = iid3["headline"]
    assert 0.93 - tol <= cover <= 0.97 + tol and width < 1.18, iid3
    assert iid3["two-stage (previous)"][1] > width + 0.1, iid3
    # 3 systems x 3 i.i.d. runs: within 1.10 (about 1.095), where truncating a negative run estimate
    # at 0 (the rule before) was about 1.12 and over-covered (96%)
    iid33 = _runs_case(cal.SCENARIOS["b 3 iid runs"], 3, reps, 3033)
    cover, width = iid33["headline"]
    assert 0.93 - tol <= cover <= 0.97 + tol and width <= 1.10 * (1 + 3 / np.sqrt(2 * reps)), iid33
    assert iid33["level 0.2, truncated (before)"][1] > width + 0.01, iid33


def test_frontier_bound_holds_the_headline_rule_and_tightens_with_a_lower_floor():
    """The bound of ``calibration_logs.py --frontier`` (the narrowest i.i.d. width of any rule deciding
    from the preliminary F statistic and the share w) is at most the headline's own width when asked
    for the headline's own coverages (the headline's rule is in the class: the optimizer must find it
    or better), above the oracle's ~1.0, and lower with a lower coverage floor (3 systems x 3 runs,
    6,000 data sets per run SD)."""
    sds = (0.0, 0.3, 0.6, 1.0)
    by_sd = [cal.run_statistics(cal.replace(cal.SCENARIOS["b 3 iid runs"], sd_run=sd), 3, 6000,
                                np.random.default_rng(7100 + j)) for j, sd in enumerate(sds)]
    cov = [float(np.mean(np.abs(s["delta"] - s["theta"]) <= s["half"])) for s in by_sd]
    width = float(np.mean(by_sd[0]["half"]) / 1.96 / np.std(by_sd[0]["delta"], ddof=1))
    bound, reached = cal.frontier(by_sd, floor_iid=cov[0], floor=min(cov[1:]))
    assert reached[0] >= cov[0] - 0.003 and reached[1:].min() >= min(cov[1:]) - 0.003, (reached, cov)
    assert 0.98 < bound <= width + 0.005, (bound, width)
    lower, _ = cal.frontier(by_sd, floor_iid=cov[0], floor=min(cov[1:]) - 0.01)
    assert lower < bound, (lower, bound)
