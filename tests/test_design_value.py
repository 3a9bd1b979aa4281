"""Issue 38, the logs workflows: one evaluation design per call (read once, reduced once, the
cluster identity and the run verdict decided once) and one answer whose pair tables are best
first and signed in the better direction. Numbers are checked against the formulas written out
here (Miller 2024's paired t; the pooled questions x runs ANOVA and the sometimes-pool rule of
:mod:`mixedeval.workflows._paired`), not against our own earlier output."""
from __future__ import annotations

import inspect
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import mixedeval as me
from mixedeval import _answer
from mixedeval.workflows import _paired, compare_logs as cl_mod, plan_eval, summarize as sum_mod
from mixedeval.workflows.logs import design as design_mod
from mixedeval.workflows.logs.design import EvalDesign, build_design

WORKFLOWS = Path(me.__file__).resolve().parent / "workflows"


def _seeds(rng, n=40, runs=3, means=(("alpha", 0.30), ("beta", 0.33), ("zeta", 0.25)), sd_run=0.01):
    """A seeds table with a lower-is-better ``wer`` column: 3 systems x runs x n questions."""
    rows = []
    diff = rng.normal(0, 0.08, n)
    for s, m in means:
        for r in range(runs):
            shift = rng.normal(0, sd_run)
            rows += [(s, f"q{i}", f"seed{r}", m + diff[i] + shift + rng.normal(0, 0.05)) for i in range(n)]
    return pd.DataFrame(rows, columns=["system", "item", "run", "wer"])


# ------------------------------------------------------------------------------ read once, reduce once
def test_compare_logs_reads_the_logs_once(monkeypatch):
    """The walk of a path through compare_logs (answer, accuracies, bootstrap, plan) enters the
    log reader once (it was entered once per consumer)."""
    from mixedeval.data import _logs

    calls = []
    real = _logs.read_eval_logs

    def counting(*a, **k):
        calls.append(a[0] if a else k.get("source"))
        return real(*a, **k)

    for mod in (_logs, cl_mod, sum_mod, plan_eval):
        if hasattr(mod, "read_eval_logs"):
            monkeypatch.setattr(mod, "read_eval_logs", counting)
    res = me.compare_logs(me.datasets.path("llm_inspect_logs"), "match", cluster="cluster", model_check=False,
                          n_resamples=200, n_sim=20, random_state=1)
    assert len(calls) == 1
    assert res.plan is not None and res.accuracies is not None and isinstance(res.design, EvalDesign)
    assert res.design.logs is res.logs and res.design.n_clusters == res.design.rows["cluster"].nunique()


def test_the_design_is_the_one_reduction_site():
    """The nine reductions of epochs and runs are gone from the workflows: the functions that did
    them were removed, and no workflow module but the design computes a mean of the score by group."""
    removed = {cl_mod: ("epoch_means", "_pooled_input", "_epochs_vary", "_runs_vary", "_scores"),
               sum_mod: ("_prepare", "_logs_scores", "_system_table"),
               _paired: ("question_means", "_run_info", "_run_part", "_run_shrink"),
               plan_eval: ("_question_stats",)}
    for mod, names in removed.items():
        for name in names:
            assert not hasattr(mod, name), f"{mod.__name__}.{name} still exists"
    # the run ANOVA and its tables live in the design (re-exported by _paired for its users)
    assert _paired.run_tables is design_mod.run_tables and _paired.RunAnova is design_mod.RunAnova
    pattern = re.compile(r"""\[\s*["']score["']\s*\]\s*\.(mean|agg)\(|aggfunc\s*=\s*["']mean["']""")
    offenders = []
    for f in ("compare_logs.py", "summarize.py", "_paired.py", "plan_eval.py", "_logs_answer.py", "_next_run.py"):
        for i, line in enumerate((WORKFLOWS / f).read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{f}:{i}: {line.strip()}")
    assert not offenders, offenders
    assert pattern.search(inspect.getsource(design_mod))  # the design does reduce


def test_both_doors_read_the_cluster_alike():
    """A table with a cluster column under another name (compare_logs' table door) and the same
    rows read as logs (summarize's logs door) give the same cluster identity and the same SE."""
    df = me.read_eval_logs(me.datasets.path("llm_inspect_logs")).table
    df = df[df["metric"] == "match"][["system", "task", "item", "epoch", "score", "cluster"]]
    via_table = me.compare_logs(df.rename(columns={"cluster": "passage"}), "score", cluster="passage",
                                model_check=False, plan=False, n_resamples=100, random_state=0)
    via_logs = me.summarize(me.datasets.path("llm_inspect_logs"), "match", cluster="cluster")
    assert via_table.design.n_clusters == via_logs.design.n_clusters
    assert via_table.headline.std_error == pytest.approx(via_logs.headline.std_error, rel=1e-12)
    assert set(via_table.design.rows["cluster"].str.split("::").str[0]) == set(df["task"])


# ------------------------------------------------------------------------------ numbers by formula
def _run_rule(y_by_system: dict[str, np.ndarray], a: str, b: str) -> tuple[float, float]:
    """The SE and df of the pair (a, b) by the module's rule, written out: d from the questions'
    means over runs; the two-way ANOVA of every system's questions x runs table pooled; the run
    variance added when the F test rejects at 0.25, else 0.45 of a negative estimate (floored)."""
    ya, yb = y_by_system[a], y_by_system[b]
    d = ya.mean(axis=1) - yb.mean(axis=1)
    n = d.size
    vq = d.var(ddof=1) / n
    ss_run = ss_res = df_run = df_res = w = 0.0
    for y in y_by_system.values():
        nq, R = y.shape
        col = y.mean(axis=0)
        resid = y - y.mean(axis=1, keepdims=True) - col[None, :] + y.mean()
        ss_run += nq * np.sum((col - col.mean()) ** 2)
        ss_res += np.sum(resid**2)
        df_run += R - 1
        df_res += (nq - 1) * (R - 1)
        w += (R - 1) * nq
    ms_run, ms_res = ss_run / df_run, ss_res / df_res
    p = stats.f.sf(ms_run / ms_res, df_run, df_res)
    k = (1 / ya.shape[1] + 1 / yb.shape[1]) * df_run / w
    if p < 0.25 and ms_run > ms_res:
        v = vq + k * (ms_run - ms_res)
        df = v**2 / (vq**2 / (n - 1) + (k * ms_run) ** 2 / df_run + (k * ms_res) ** 2 / df_res)
        return float(np.sqrt(v)), float(df)
    shrink = 0.45 * k * (ms_run - ms_res) if ms_run < ms_res else 0.0
    return float(np.sqrt(max(vq + shrink, 0.25 * vq))), float(n - 1)


@pytest.mark.parametrize("sd_run", [0.0, 0.05])
def test_lower_is_better_pair_tables_agree_with_the_headline(sd_run):
    """For ``wer`` (lower is better) the headline, ``res.table``, ``summarize().pairwise``,
    ``res.bootstrap`` and ``answer.differences`` list each pair best first with the same positive
    advantage (issue 38: the tables gave -0.006081 where the headline said +0.61 points), and the
    numbers are the formulas'."""
    df = _seeds(np.random.default_rng(7), sd_run=sd_run)
    res = me.compare_logs(df, "wer", model_check=False, plan=False, n_resamples=400, random_state=2)
    summ = me.summarize(df, score="wer", run="run")
    h = res.headline
    order = list(res.leaderboard["name"])
    assert not res.direction.higher_is_better and h.estimate > 0 and (h.better, h.other) == tuple(order[:2])
    y = {s: g.pivot(index="item", columns="run", values="wer").to_numpy() for s, g in df.groupby("system")}
    for tab in (res.table, summ.pairwise, res.bootstrap, res.answer.differences):
        assert len(tab) == 3
        for r in tab.itertuples(index=False):
            assert order.index(r.system_a) < order.index(r.system_b)  # best first
            by_hand = y[r.system_b].mean() - y[r.system_a].mean()  # lower is better: b - a
            assert r.delta == pytest.approx(by_hand, rel=1e-10)
            assert r.conf_low <= r.delta <= r.conf_high
    for tab in (res.table, summ.pairwise):
        for r in tab.itertuples(index=False):
            se, dfree = _run_rule(y, r.system_a, r.system_b)
            assert r.std_error == pytest.approx(se, rel=1e-10) and r.df == pytest.approx(dfree, rel=1e-10)
            assert np.sign(r.t_value) == np.sign(r.delta)
            q = stats.t.ppf(0.975, dfree)
            assert (r.conf_low, r.conf_high) == pytest.approx((r.delta - q * se, r.delta + q * se), rel=1e-10)
    top = res.table.iloc[0]
    assert (top.system_a, top.system_b) == (h.better, h.other) and top.delta == pytest.approx(h.estimate, rel=1e-12)
    assert res.p_value == top.p_value == summ.p_value
    assert "lower wer is better" in res.answer.convention
    # n_a_better counts questions where system_a is better (lower wer)
    r0 = summ.pairwise.iloc[0]
    qa = df[df.system == r0.system_a].groupby("item")["wer"].mean()
    qb = df[df.system == r0.system_b].groupby("item")["wer"].mean()
    assert r0.n_a_better == int((qa < qb).sum()) and r0.n_b_better == int((qa > qb).sum())


def test_cluster_headline_equals_the_cluster_robust_formula():
    """On the bundled logs (two tasks, clusters): per task Inspect's stderr(cluster=) of the
    question differences (epochs averaged) on G - 1 df; the headline pools the tasks as the mean
    of the task means, SE sqrt(sum SE_t^2) / T, Welch-Satterthwaite df -- written out here."""
    res = me.compare_logs(me.datasets.path("llm_inspect_logs"), "match", cluster="cluster", model_check=False,
                          plan=False, n_resamples=100, random_state=0)
    h = res.headline
    t = me.read_eval_logs(me.datasets.path("llm_inspect_logs")).table
    t = t[t["metric"] == "match"]
    q = t.groupby(["system", "task", "item", "cluster"])["score"].mean().reset_index()
    deltas, ses, dfs = [], [], []
    for _, g in q.groupby("task"):
        w = g.pivot_table(index=["item", "cluster"], columns="system", values="score").dropna().reset_index()
        d = (w[h.better] - w[h.other]).to_numpy()
        cl = w["cluster"].astype(str).to_numpy()
        G = len(set(cl))
        sums = pd.Series(d - d.mean()).groupby(cl).sum().to_numpy()
        deltas.append(d.mean())
        ses.append(np.sqrt(G / (G - 1) * np.sum(sums**2)) / d.size)
        dfs.append(G - 1.0)
    T = len(deltas)
    v = np.array(ses) ** 2 / T**2
    se = np.sqrt(v.sum())
    df = se**4 / np.sum(v**2 / np.array(dfs))
    assert h.estimate == pytest.approx(np.mean(deltas), rel=1e-10)
    assert h.std_error == pytest.approx(se, rel=1e-10) and h.df == pytest.approx(df, rel=1e-10)


def test_summarize_table_on_lm_eval_fixture_equals_the_raw_means():
    lm = Path(__file__).resolve().parent / "fixtures" / "lm_eval" / "output"
    s = me.summarize(lm, "acc")
    raw = s.design.rows
    for r in s.table.itertuples(index=False):
        g = raw[(raw.task == r.task) & (raw.system == r.system)]
        x = g.groupby(["item", "run"])["score"].mean().groupby("item").mean()
        assert r.mean_score == pytest.approx(x.mean(), rel=1e-12) and r.n_items == len(x)
        assert r.std_error == pytest.approx(x.std(ddof=1) / np.sqrt(len(x)), rel=1e-12)


def test_log_reducer_is_recorded():
    """Scores Inspect already reduced (``Epochs(3, "max")``; ``EvalLogs.reduction``) are one row
    per question: the design says "max over 3 epochs" and the table counts the 3 epochs."""
    rows = pd.DataFrame({"system": np.repeat(["a", "b"], 5), "task": "t", "item": [f"q{i}" for i in range(5)] * 2,
                         "run": "1", "score": [1, 1, 0, 1, 0, 1, 0, 0, 1, 0.0]})
    red = pd.DataFrame({"system": ["a", "b", "a"], "task": ["t", "t", "t"], "metric": ["acc", "acc", "other"],
                        "reducer": ["max", "max", "mode"], "n_epochs": [3, 3, 5]})  # EvalLogs.reduction's columns
    d = build_design(rows, metric="acc", logs=SimpleNamespace(reduction=red, warnings=()))
    assert "max over 3 epochs" in d.epochs_text and "mode" not in d.epochs_text and d.n_epochs == 1
    assert list(sum_mod.system_table(d, 0.95)["n_epochs"]) == [3, 3]
    plain = build_design(rows, metric="acc")
    assert plain.epochs_text == "one per question" and plain.reduction is None


# ------------------------------------------------------------------------------ checks that are true
def test_check_rows_carry_only_their_own_reason():
    direction = _answer.direction("acc")
    head = _answer.headline("a", "b", 0.05, 0.02, 0.01, 0.09, 0.02, 99, "paired t", direction, scale=100)
    glrt = pd.DataFrame({"p_value": [np.nan, 0.03]})
    boot = pd.DataFrame({"task": ["t"], "system_a": ["a"], "system_b": ["b"], "delta": [0.05], "std_error": [0.01],
                         "conf_low": [0.04], "conf_high": [0.06], "p_value": [0.2], "p_adj": [0.2]})
    con = pd.DataFrame({"task": ["t"], "contrast": ["a - b"], "estimate": [0.05], "std_error": [0.02],
                        "df": [np.inf], "p_value": [0.3]})
    checks = cl_mod._checks(head, "t", glrt, con, None, boot, "LMM (lmerTest::lmer, REML)", "asymptotic",
                            n_systems=2, runs=True, cluster=False, n_resamples=1000)
    lrt = checks.loc[checks["check"].str.contains("likelihood-ratio"), "verdict"].iloc[0]
    assert "df = Inf" not in lrt and "sysrun" not in lrt  # the model contrast's reasons are not the LRT's
    bt = checks.loc[checks["check"].str.startswith("paired bootstrap"), "verdict"].iloc[0]
    assert bt.startswith("differs") and "(wider)" not in bt and "0.25x as wide" in bt  # measured: narrower


# ------------------------------------------------------------------------------ the crash and its kin
def _binary_runs(rng, probs, runs=3, n=30, epochs=1):
    rows = []
    for s, p in probs:
        for r in range(runs):
            for i in range(n):
                for e in range(epochs):
                    rows.append((s, f"q{i}", f"r{r}", str(e), 1.0 if p == 1 else float(rng.random() < p),
                                 f"c{i // 3}"))
    return pd.DataFrame(rows, columns=["system", "item", "run", "epoch", "score", "cluster"])


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_perfect_system_with_runs_gives_an_answer(seed):
    """One system right on every question, 3 runs: the runs rule's share of a negative run
    estimate made its variance negative (sqrt of a negative number) and the leaderboard's
    covariance not PSD (``DataError: vcov must be positive semi-definite``)."""
    df = _binary_runs(np.random.default_rng(seed), (("perfect", 1.0), ("b", 0.8)))[["system", "item", "run", "score"]]
    res = me.compare_logs(df, "score", model_check=False, n_resamples=200, n_sim=20, random_state=0)
    assert res.headline.better == "perfect" and res.headline.estimate > 0
    board = res.leaderboard.set_index("name")
    assert board.loc["perfect", "std_error"] >= 0 and np.isfinite(board["std_error"]).all()
    means, V = _paired.system_means(res.design, res.design.systems)
    for v in V.values():
        assert np.linalg.eigvalsh(v.to_numpy()).min() >= -1e-12
    assert (means["std_error"] >= 0).all()


CASES = {"perfect": (("perfect", 1.0), ("b", 0.8), ("c", 0.7)),
         "all equal": (("a", 0.7), ("b", 0.7), ("c", 0.7))}


@pytest.mark.parametrize("case", ["perfect", "constant", "all equal"])
@pytest.mark.parametrize("shape", ["runs", "epochs", "clusters", "runs+epochs+clusters"])
def test_degenerate_systems_give_an_answer_or_a_clear_error(case, shape):
    rng = np.random.default_rng(11)
    runs = 3 if "runs" in shape else 1
    epochs = 2 if "epochs" in shape else 1
    if case == "constant":
        df = _binary_runs(rng, (("b", 0.8), ("c", 0.6)), runs=runs, epochs=epochs)
        const = df[df.system == "b"].assign(system="const", score=0.5)
        df = pd.concat([df, const], ignore_index=True)
    elif case == "all equal":
        one = _binary_runs(rng, (("a", 0.7),), runs=runs, epochs=epochs)
        df = pd.concat([one.assign(system=s) for s in ("a", "b", "c")], ignore_index=True)
    else:
        df = _binary_runs(rng, CASES[case], runs=runs, epochs=epochs)
    cluster = "cluster" if "clusters" in shape else None
    if cluster is None:
        df = df.drop(columns="cluster")
    if epochs == 1:
        df = df.drop(columns="epoch")
    try:
        res = me.compare_logs(df, "score", cluster=cluster, model_check=False, n_resamples=100, n_sim=10,
                              random_state=0)
    except me.DataError as e:  # a clear error names what to change
        assert str(e) and "positive semi-definite" not in str(e)
        return
    board = res.leaderboard
    assert len(board) == 3 and (board["std_error"].dropna() >= 0).all()
    if case == "all equal":
        h = res.headline
        assert h.estimate == 0 and h.p_value == 1.0
        assert (res.table["delta"] == 0).all()
    else:
        assert res.headline.estimate > 0 and np.isfinite(res.headline.p_value)
    s = me.summarize(df, score="score", run="run" if runs > 1 else None, epoch="epoch" if epochs > 1 else None,
                     cluster=cluster)
    assert s.headline_text() == res.headline_text()


def test_results_hold_one_answer_field():
    """CompareLogsResult and SummarizeResult declare ``answer`` and none of its parts."""
    import dataclasses

    for cls, prio in ((cl_mod.CompareLogsResult, 10), (sum_mod.SummarizeResult, 20)):
        names = {f.name for f in dataclasses.fields(cls)}
        assert "answer" in names and not names & {"headline", "leaderboard", "checks", "direction"}
        assert cls._answer_priority == prio and issubclass(cls, _answer.AnswerMixin)


def test_questions_needed_takes_the_design_as_its_pilot():
    """compare_logs hands its design to the plan; the plan from the design equals the plan from
    the logs read anew (same estimates and table)."""
    path = me.datasets.path("llm_inspect_logs")
    res = me.compare_logs(path, "match", model_check=False, plan=False, n_resamples=100, random_state=0)
    pair = (res.headline.better, res.headline.other)
    a = me.questions_needed(res.design, 0.05, metric="match", systems=pair, n_sim=0)
    b = me.questions_needed(path, 0.05, metric="match", systems=pair, n_sim=0)
    pd.testing.assert_frame_equal(a.estimates, b.estimates)
    pd.testing.assert_frame_equal(a.table, b.table)


def test_summarize_reads_a_table_file_with_its_run_column(tmp_path):
    """``me.summarize(path, run="seed")`` reads the file's seed column as the runs (it ignored
    run= for a path and the reader's error advised ``columns=``, which summarize does not take)."""
    df = _seeds(np.random.default_rng(3)).rename(columns={"run": "seed"})
    path = tmp_path / "seeds.csv"
    df.to_csv(path, index=False)
    from_file = me.summarize(path, "wer", run="seed")
    from_frame = me.summarize(df, score="wer", run="seed")
    assert from_file.design.runs and from_file.headline_text() == from_frame.headline_text()
    assert from_file.p_value == pytest.approx(from_frame.p_value, rel=1e-12)


def test_assumed_direction_is_in_the_warnings():
    """An unknown metric is assumed higher-is-better; res.warnings says so in Python as the
    printout does (it was missing)."""
    df = _seeds(np.random.default_rng(4)).rename(columns={"wer": "points"})
    for res in (me.summarize(df, score="points", run="run"),
                me.compare_logs(df, "points", model_check=False, plan=False, n_resamples=100, random_state=0)):
        w = [x for x in res.warnings if x.kind == "direction_assumed"]
        assert len(w) == 1 and "assumed" in w[0].message and res.direction.source == "assumed"
    declared = me.summarize(df, score="points", run="run", higher_is_better=False)
    assert not [x for x in declared.warnings if x.kind == "direction_assumed"]


def test_plan_says_the_size_observed_only_when_it_plans_for_it():
    """A lower-is-better difference of 0.6 points is planned at the smallest effect (1 point):
    the plan's sentence no longer calls that "the size observed"."""
    rng = np.random.default_rng(2)
    df = _seeds(rng, means=(("alpha", 0.300), ("zeta", 0.297)), sd_run=0.0)
    res = me.compare_logs(df, "wer", model_check=False, n_resamples=100, n_sim=0, random_state=0)
    assert abs(res.headline.estimate) < 0.01 and res.plan.effect == 0.01
    assert "(the size observed)" not in res.plan_text()
    big = me.compare_logs(_seeds(rng, means=(("alpha", 0.30), ("zeta", 0.25))), "wer", model_check=False,
                          n_resamples=100, n_sim=0, random_state=0)
    assert big.plan.effect == pytest.approx(big.headline.estimate) and "(the size observed)" in big.plan_text()
