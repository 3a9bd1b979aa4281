"""Issue 23 point 6: how many questions (and epochs) an evaluation needs, ``me.questions_needed``.

The closed form (Miller 2024, arXiv:2411.00640, section 5) against a hand computation and R's
``power.t.test(type = "paired")``; the variance pieces estimated from a simulated pilot against
the truth it was drawn from; the Monte-Carlo check at the closed-form n; a pilot from Inspect AI
logs (epochs = 3) against a hand computation; the ``mixedeval power --from-logs`` command.
"""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import mixedeval as me
from inspect_helpers import answer_solver
from mixedeval.errors import DataError
from mixedeval.workflows.plan_eval import closed_form_power, closed_form_questions

Z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)  # 2.801585...


def _pilot_table(n0: int, k0: int, seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """A long score table of two systems (0/1 scores, k0 epochs) and their true probabilities."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n0)
    pa = 1 / (1 + np.exp(-(1.0 + 1.5 * z + rng.normal(0, 0.7, n0))))
    pb = 1 / (1 + np.exp(-(0.8 + 1.5 * z + rng.normal(0, 0.7, n0))))
    frames = []
    for name, p in (("A", pa), ("B", pb)):
        y = (rng.random((n0, k0)) < p[:, None]).astype(float)
        frames.append(pd.DataFrame({"system": name, "task": "t", "item": np.repeat([f"q{i}" for i in range(n0)], k0),
                                    "run": "r1", "epoch": np.tile(np.arange(k0), n0), "score": y.ravel()}))
    df = pd.concat(frames, ignore_index=True)
    df["metric"] = "acc"
    return df, pa, pb


# ------------------------------------------------------------------------------ closed form
def test_closed_form_matches_a_hand_computation():
    # Miller's n = (z_.975 + z_.8)^2 Var(d) / delta^2; Var(d) = sd_a^2 + sd_b^2 - 2 rho sd_a sd_b
    sd2 = 0.7 * 0.3
    var_d = 2 * sd2 - 2 * 0.5 * sd2  # 0.21
    n = math.ceil(Z**2 * var_d / 0.05**2)
    assert n == 660  # 7.848879 * 0.21 / 0.0025 = 659.31
    assert closed_form_questions(0.05, var_d) == n
    res = me.questions_needed(effect=0.05, mean=0.7, correlation=0.5, n_sim=0)
    row = res.table.iloc[0]
    assert row["method"] == "closed_form" and row["n_questions"] == n and row["epochs"] == 1
    se = math.sqrt(var_d / n)
    assert row["power"] == pytest.approx(stats.norm.cdf(0.05 / se - 1.959964) + stats.norm.cdf(-0.05 / se - 1.959964),
                                         rel=1e-6)
    # correlation 0 is Miller's unpaired formula: (sd_a^2 + sd_b^2)
    assert me.questions_needed(effect=0.05, mean=0.7, n_sim=0).table["n_questions"].iloc[0] == math.ceil(
        Z**2 * 2 * sd2 / 0.05**2)
    # epochs: Var = Var_q(mu_a - mu_b) + (w_a + w_b) / K, with Var_q = one-epoch Var - (w_a + w_b)
    r = me.questions_needed(effect=0.05, sd=0.45, correlation=0.4, within_variance=(0.12, 0.1), epochs=(1, 4), n_sim=0)
    vq = 2 * 0.45**2 * (1 - 0.4) - 0.22
    assert r.table["n_questions"].tolist() == [math.ceil(Z**2 * (vq + 0.22 / k) / 0.0025) for k in (1, 4)]
    assert r.power_at(500, epochs=4) == pytest.approx(closed_form_power(500, 0.05, vq + 0.055), rel=1e-12)


def test_closed_form_agrees_with_r_power_t_test_for_large_n(R):
    """R's power.t.test(type = "paired") is the noncentral t; the closed form the normal
    approximation. Their powers differ by O(1/n) and R's n exceeds the normal one by about
    z_{1-alpha/2}^2 / 2 = 1.9 questions: at n ~ 1,000-3,000 the powers agree to 2e-3 and the n to
    0..3 questions (the tolerance is the t-vs-normal gap, not numerical error)."""
    for delta, sd in ((0.03, 0.35), (0.05, 0.6), (0.02, 0.25)):
        n = closed_form_questions(delta, sd**2)
        assert n > 900
        r_power = float(R(f"power.t.test(n = {n}, delta = {delta}, sd = {sd}, sig.level = 0.05, "
                          "type = 'paired')$power")[0])
        assert closed_form_power(n, delta, sd**2) == pytest.approx(r_power, abs=2e-3)
        r_n = float(R(f"power.t.test(power = 0.8, delta = {delta}, sd = {sd}, sig.level = 0.05, "
                      "type = 'paired')$n")[0])
        assert 0 <= math.ceil(r_n) - n <= 3


# ------------------------------------------------------------------------------ the pilot
def test_variance_pieces_from_a_simulated_pilot_match_the_truth():
    """Unbiased estimates (conditional on the questions' true probabilities): E sigma2 is the
    mean of p_i (1 - p_i); Var_q(mu_a - mu_b) the variance of p_a - p_b over questions. The
    tolerance, 4 Monte-Carlo SEs, is computed from the per-question pieces of the pilot."""
    df, pa, pb = _pilot_table(1500, 4, seed=11)
    res = me.questions_needed(df, effect=0.03, epochs=(1, 4), n_sim=0)
    est = res.estimates.set_index("quantity")["value"]
    for w, p in (("within_a", pa), ("within_b", pb)):
        truth = float(np.mean(p * (1 - p)))
        se = math.sqrt(np.var(p * (1 - p)) / len(p) + truth / (4 * 3) / len(p))  # question spread + epoch noise
        assert est[w] == pytest.approx(truth, abs=4 * se)
    truth_vq = float(np.var(pa - pb, ddof=1))
    se_vq = math.sqrt(2 / len(pa)) * est["var_question_differences"]
    assert est["var_between"] == pytest.approx(truth_vq, abs=4 * se_vq)
    assert est["epochs_pilot"] == 4 and est["n_questions_pilot"] == 1500
    assert res.table["epochs"].tolist() == [1, 4] and (res.table["method"] == "closed_form").all()


def test_simulated_power_at_the_closed_form_n_is_near_target():
    """At the closed-form n the simulated paired t test rejects about ``target`` of the time:
    within 4 Monte-Carlo SEs (sqrt(.8 .2 / n_sim)) plus 0.02 for the moment-matched pilot model."""
    df, _, _ = _pilot_table(300, 3, seed=3)
    res = me.questions_needed(df, effect=0.06, epochs=(1, 3), n_sim=800, random_state=7)
    t = res.table
    sim = t[t["method"] == "simulation"].set_index("epochs")
    cf = t[t["method"] == "closed_form"].set_index("epochs")
    tol = 4 * math.sqrt(0.16 / 800) + 0.02
    for k in (1, 3):
        assert sim.loc[k, "power_at_closed_form_n"] == pytest.approx(0.8, abs=tol)
        assert abs(sim.loc[k, "n_questions"] / cf.loc[k, "n_questions"] - 1) < 0.2
        assert sim.loc[k, "conf_low"] <= sim.loc[k, "power"] <= sim.loc[k, "conf_high"]
        assert sim.loc[k, "power"] >= 0.8
    assert cf.loc[3, "n_questions"] < cf.loc[1, "n_questions"]  # epochs buy questions...
    assert cf.loc[3, "n_samples"] > cf.loc[1, "n_samples"]  # ...at a price in generations
    again = me.questions_needed(df, effect=0.06, epochs=(1, 3), n_sim=800, random_state=7)
    pd.testing.assert_frame_equal(res.table, again.table)  # random_state reproduces it
    by_hand = me.questions_needed(effect=0.05, mean=0.7, correlation=0.5, n_sim=2000, random_state=1).table
    assert by_hand.iloc[1]["power_at_closed_form_n"] == pytest.approx(0.8, abs=4 * math.sqrt(0.16 / 2000))


def test_bad_input_is_a_data_error():
    with pytest.raises(DataError, match="effect"):
        me.questions_needed(effect=0, mean=0.5)
    with pytest.raises(DataError, match="within_variance"):
        me.questions_needed(effect=0.05, mean=0.5, epochs=3)
    with pytest.raises(DataError, match="not both"):
        me.questions_needed(pd.DataFrame(), effect=0.05, mean=0.5)
    df, _, _ = _pilot_table(20, 1, seed=1)
    res = me.questions_needed(df, effect=0.2, epochs=(1, 2), n_sim=0)
    assert any(w.kind == "one_epoch_pilot" for w in res.warnings)
    assert math.isnan(res.table.set_index("epochs").loc[2, "n_questions"])


# ------------------------------------------------------------------------------ Inspect logs
@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    if importlib.util.find_spec("inspect_ai") is None:
        pytest.skip("mixedeval[logs] not installed")
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    rng = np.random.default_rng(23)
    n = 40
    p = {"mockllm/strong": rng.uniform(0.4, 1.0, n), "mockllm/weak": rng.uniform(0.1, 0.9, n)}
    answers = {m: {f"q{i}": [str(2 * i) if rng.random() < p[m][i] else "?" for _ in range(3)] for i in range(n)}
               for m in p}

    fixed_output = answer_solver()

    ds = [Sample(id=f"q{i}", input=f"{i}+{i}?", target=str(2 * i)) for i in range(n)]
    out = tmp_path_factory.mktemp("pilot") / "logs"
    for model in p:
        inspect_eval(Task(dataset=ds, solver=fixed_output(answers[model]), scorer=match(), epochs=3, name="arith"),
                     model=model, log_dir=str(out), display="none")
    right = {m: np.array([[a == str(2 * i) for a in answers[m][f"q{i}"]] for i in range(n)], dtype=float) for m in p}
    return out, right


def test_pilot_from_inspect_logs_matches_a_hand_computation(inspect_logs):
    path, right = inspect_logs
    res = me.questions_needed(path, effect=0.1, metric="match", n_sim=0)
    a, b = res.systems
    ya, yb = right[a], right[b]
    wa, wb = ya.var(axis=1, ddof=1).mean(), yb.var(axis=1, ddof=1).mean()
    d = ya.mean(axis=1) - yb.mean(axis=1)
    vq = max(0.0, d.var(ddof=1) - (wa + wb) / 3)
    est = res.estimates.set_index("quantity")["value"]
    assert est["within_a"] == pytest.approx(wa, rel=1e-12) and est["within_b"] == pytest.approx(wb, rel=1e-12)
    assert est["var_between"] == pytest.approx(vq, rel=1e-12, abs=1e-15)
    assert est["epochs_pilot"] == 3 and res.table["epochs"].tolist() == [1, 3]  # default: 1 and the pilot's
    expected = [math.ceil(Z**2 * (vq + (wa + wb) / k) / 0.01 - 1e-9) for k in (1, 3)]
    assert res.table["n_questions"].tolist() == expected


def test_cli_power_from_logs(inspect_logs):
    path, _ = inspect_logs
    cmd = [sys.executable, "-m", "mixedeval.cli", "--json", "power", "--from-logs", str(path), "--metric", "match",
           "--points", "10", "--epochs", "1,3,5", "--power", "0.9", "--n-sim", "200", "--random-state", "1", "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    js = json.loads(p.stdout)
    t = pd.DataFrame(js["questions_needed"])
    assert t["epochs"].tolist() == [1, 1, 3, 3, 5, 5]
    assert t["method"].tolist() == ["closed_form", "simulation"] * 3
    assert (t["target"] == 0.9).all() and np.allclose(t["effect"], 0.1)
    api = me.questions_needed(path, effect=0.1, metric="match", target=0.9, epochs=(1, 3, 5), n_sim=0).table
    assert t.loc[t["method"] == "closed_form", "n_questions"].tolist() == api["n_questions"].tolist()
    bad = subprocess.run([sys.executable, "-m", "mixedeval.cli", "power", "--from-logs", str(path), "--metric",
                          "match", "--quiet"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--points" in bad.stderr


# ------------------------------------------------------------------------------ runs (issue 30: one answer)
def _seeds_table(run_sd: float, seed: int, runs: int = 3, n0: int = 50) -> pd.DataFrame:
    """3 systems x ``runs`` runs (seeds) x n0 questions of 0/1 scores, one task; each run shifts
    all its questions by N(0, run_sd) on the probability scale."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.9, n0)
    rows = []
    for name, eff in (("base", 0.0), ("mid", 0.03), ("top", 0.12)):
        for r in range(runs):
            p = np.clip(base + eff + rng.normal(0, run_sd), 0.01, 0.99)
            y = (rng.random(n0) < p).astype(float)
            rows.append(pd.DataFrame({"system": name, "seed": f"s{r}", "item": [f"q{i}" for i in range(n0)],
                                      "correct": y}))
    return pd.concat(rows, ignore_index=True)


def test_a_plan_with_a_run_variance_says_what_the_headline_says():
    """With seeds that carry a run effect (the preliminary F test keeps it), the plan adds the
    between-run part that more questions cannot shrink: the smallest difference the current design
    detects is (z_{0.975} + z_{0.8}) x the headline's own SE (the same pooled run variance), the
    closed-form n solves z^2 (var_d / n + 2 sigma2_run / R) = effect^2 by hand, designs whose run
    part alone is too large get no n (and a warning naming the runs needed), and the default plan
    adds a row with twice that many runs."""
    from mixedeval.workflows._next_run import detectable_now

    logs = me.read_eval_logs(_seeds_table(0.08, 12), "table", columns={"run": "seed"})  # F test p = 0.009
    res = me.compare_logs(logs, metric="correct", random_state=0, model_check=False, n_sim=0)
    est = res.plan.estimates.set_index("quantity")["value"]
    s2 = est["sigma2_run"]
    assert s2 > 0 and est["run_pretest_p"] < 0.2 and "runs_in_plan" in {w.kind for w in res.warnings}
    h = res.headline
    assert detectable_now(res.plan, 50, 3) == pytest.approx(Z * h.std_error, rel=1e-10)
    effect = res.plan.effect
    assert effect == pytest.approx(h.estimate, rel=1e-12)
    need = math.floor(2 * Z**2 * s2 / effect**2) + 1
    tab = res.plan.table[res.plan.table["method"] == "closed_form"].set_index("runs")
    var_d = est["var_question_differences"]  # every question has 3 samples: var_d(K = 3) is the pilot's
    for R in (1, 3, 2 * need):
        row = tab.loc[R]
        if 2 * Z**2 * s2 / R >= effect**2:
            assert math.isnan(row["n_questions"]), row
            continue
        vd = var_d if R == 3 else est["var_between"] + (est["within_a"] + est["within_b"]) / R
        n = math.ceil(Z**2 * vd / (effect**2 - Z**2 * 2 * s2 / R))
        assert row["n_questions"] == n and row["std_error"] == pytest.approx(math.sqrt(vd / n + 2 * s2 / R))
        assert row["power"] >= 0.8 > closed_form_power(n - 1, effect, vd, run_variance=2 * s2 / R)
    assert 2 * need in tab.index and not math.isnan(tab.loc[2 * need, "n_questions"])
    if math.isnan(tab.loc[3, "n_questions"]):
        assert f"at least {need} runs per system" in next(w.message for w in res.warnings if w.kind == "runs_limit")
        assert "not reachable with 1 run or 3 runs per system" in res.plan_text()
    assert "x 3 runs the smallest difference" in res.plan_text() and "epochs" not in res.plan_text()


def test_a_plan_with_iid_runs_pools_them_as_the_headline_does():
    """Runs without a run effect the preliminary F test does not find: their samples are pooled
    as epochs (no run part), as the headline pools them, and the plan says so."""
    from mixedeval.workflows._next_run import detectable_now

    for seed in range(20):  # the first table whose F test does not reject at 0.2 (about 4 in 5 do not)
        logs = me.read_eval_logs(_seeds_table(0.0, 100 + seed), "table", columns={"run": "seed"})
        res = me.compare_logs(logs, metric="correct", random_state=0, model_check=False, n_sim=0)
        est = res.plan.estimates.set_index("quantity")["value"]
        if est["run_pretest_p"] >= 0.2:
            break
    assert est["sigma2_run"] == 0 and "runs_pooled" in {w.kind for w in res.warnings}
    assert res.headline.method == "paired t, run variance" and res.headline.df == 49
    assert detectable_now(res.plan, 50, 3) == pytest.approx(Z * res.headline.std_error, rel=1e-10)
    cf = res.plan.table[res.plan.table["method"] == "closed_form"].set_index("epochs")
    vd = est["var_between"] + (est["within_a"] + est["within_b"]) / 3
    assert cf.loc[3, "n_questions"] == closed_form_questions(res.plan.effect, vd)


def test_closed_form_with_a_run_part_by_hand():
    """n = ceil(z^2 var_d / (effect^2 - z^2 run_variance)); power uses SE^2 = var_d / n + run_variance;
    an effect below the run part's reach is refused by closed_form_questions (a plan row, not n)."""
    from mixedeval.workflows.plan_eval import _RunLimited

    n = closed_form_questions(0.05, 0.3, run_variance=0.0001)
    assert n == math.ceil(Z**2 * 0.3 / (0.05**2 - Z**2 * 0.0001))
    se = math.sqrt(0.3 / n + 0.0001)
    assert closed_form_power(n, 0.05, 0.3, run_variance=0.0001) == pytest.approx(
        stats.norm.cdf(0.05 / se - stats.norm.ppf(0.975)) + stats.norm.cdf(-0.05 / se - stats.norm.ppf(0.975)))
    with pytest.raises(_RunLimited):
        closed_form_questions(0.05, 0.3, run_variance=0.05**2 / Z**2)


def test_the_plans_runs_simulation_runs_the_headlines_test():
    """The simulation's vectorized runs test (delta, SE, df) equals the headline's
    ``paired_differences(..., runs=True)`` on simulated data sets with and without a run effect
    (pooled and kept by the preliminary F test), and with runs in the plan the simulated n is
    given beside the closed form's."""
    from mixedeval.workflows._paired import paired_differences
    from mixedeval.workflows.plan_eval import _runs_test

    rng = np.random.default_rng(5)
    kinds = set()
    for j in range(12):
        R, n = (3, 40) if j % 2 else (5, 25)
        p = np.clip(rng.uniform(0.2, 0.9, n)[None, None, :] + np.array([0.1, 0.0])[None, :, None, None][0]
                    + rng.normal(0, 0.1 * (j % 3), (2, R, 1)), 0, 1)
        x = (rng.random((2, R, n)) < p).astype(float)
        s_, r_, i_ = np.indices(x.shape).reshape(3, -1)
        frame = pd.DataFrame({"system": np.array(["a", "b"])[s_], "task": "t", "item": i_.astype(str),
                              "run": r_.astype(str), "score": x.ravel()})
        row = paired_differences(frame, ["a", "b"], runs=True).iloc[0]
        delta, se, df = (v[0] for v in _runs_test(x[None]))
        np.testing.assert_allclose([delta, se, df], [row["delta"], row["std_error"], row["df"]], rtol=1e-10)
        d = x[0].mean(axis=0) - x[1].mean(axis=0)
        kinds.add("kept" if row["df"] != n - 1 else "shrunk" if se < d.std(ddof=1) / np.sqrt(n) - 1e-12 else "pooled")
    assert kinds == {"kept", "shrunk", "pooled"}  # every branch of the headline's runs rule was compared
    logs = me.read_eval_logs(_seeds_table(0.08, 12), "table", columns={"run": "seed"})
    res = me.compare_logs(logs, metric="correct", random_state=0, model_check=False, n_sim=300)
    sim = res.plan.table[(res.plan.table["method"] == "simulation") & (res.plan.table["n_sim"] > 0)]
    assert len(sim) and (sim["runs"] > 3).all() and (sim["power"] >= 0.8).all()


def test_plan_text_with_runs_says_what_was_simulated():
    """With runs in the plan the text says the simulation's n where it ran ("beside N simulations")
    and, where no design can be simulated (every design unreachable with its runs), says so rather
    than claiming a simulation."""
    from mixedeval.workflows._next_run import plan_text

    logs = me.read_eval_logs(_seeds_table(0.08, 12), "table", columns={"run": "seed"})
    none = me.questions_needed(logs, 0.11, epochs=[1, 3], metric="correct", systems=("top", "base"), n_sim=50,
                               random_state=1)
    assert none.table["n_questions"].isna().all()
    text = plan_text(none, 50, 3, observed=False)
    assert "nothing to simulate" in text and "beside 50 simulations" not in text
    some = me.questions_needed(logs, 0.11, epochs=[20], metric="correct", systems=("top", "base"), n_sim=50,
                               random_state=1)
    sim = some.table.set_index("method").loc["simulation"]
    assert sim["n_sim"] == 50 and sim["runs"] == 20 and sim["n_questions"] > 0
    assert "beside 50 simulations" in plan_text(some, 50, 3, observed=False)
