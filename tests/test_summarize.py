"""me.summarize / ``mixedeval summarize``: Inspect-style per-system summaries and paired tests.

Expected values come from Inspect AI's own metric functions (``mean``, ``stderr``, ``ci``,
``ci_wilson``, with and without ``cluster=``) applied to the epoch-reduced scores Inspect wrote
into its logs, and from R (sandwich::vcovCL, clubSandwich::vcovCR, prop.test, binom.test,
t.test, p.adjust) on the same question scores, never from our own output."""
from __future__ import annotations

import importlib.util
import itertools
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from inspect_helpers import reduced_scores, write_match_logs

pytestmark = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None, reason="mixedeval[logs] not installed")

N = 24
#: unbalanced clusters (sizes 1..5): CR2 differs from the CR1-type SE of Inspect
PASSAGE = [f"p{c}" for c in np.repeat(np.arange(8), [1, 2, 3, 4, 2, 5, 3, 4])]
RTOL = 1e-10


def _meta(i: int) -> dict:
    return {"passage": PASSAGE[i]}


def _write_logs(path, right: dict[str, float], epochs: int, seed: int, task: str = "arith") -> dict:
    """Inspect logs of ``right`` (model -> P(correct)) on N questions (tests/inspect_helpers.py)."""
    return write_match_logs(path, right, epochs, seed, N, metadata=_meta, task=task)


@pytest.fixture(scope="module")
def epoch_logs(tmp_path_factory):
    path = tmp_path_factory.mktemp("summ") / "logs"
    _write_logs(path, {"mockllm/a": 0.75, "mockllm/b": 0.5}, epochs=3, seed=4)
    return path


@pytest.fixture(scope="module")
def one_epoch_logs(tmp_path_factory):
    path = tmp_path_factory.mktemp("summ1") / "logs"
    _write_logs(path, {"mockllm/a": 0.8, "mockllm/b": 0.55, "mockllm/c": 0.45}, epochs=1, seed=11)
    return path


def _reduced(path) -> dict[str, list]:
    """Per model, Inspect's own epoch-reduced sample scores and its logged stderr."""
    return reduced_scores(path, metadata=_meta)


def _r_vec(R, name, values, kind="float"):
    import rpy2.robjects as ro

    R("invisible(NULL)")  # the session is up
    ro.globalenv[name] = ro.FloatVector([float(v) for v in values]) if kind == "float" else ro.StrVector(
        [str(v) for v in values])


def test_table_equals_inspects_own_metrics_on_its_reduced_scores(epoch_logs):
    from inspect_ai.scorer import ci, ci_wilson, mean, stderr

    res = me.summarize(epoch_logs, metric="match", cluster="passage")
    reduced = _reduced(epoch_logs)
    assert sorted(res.table["system"]) == sorted(reduced)
    for _, row in res.table.iterrows():
        scores, logged = reduced[row["system"]]
        assert row["n_items"] == N and row["n_epochs"] == 3 and row["n_clusters"] == 8
        assert row["mean_score"] == pytest.approx(mean()(scores), rel=RTOL)
        assert row["std_error"] == pytest.approx(stderr()(scores), rel=RTOL)
        assert row["std_error"] == pytest.approx(logged, rel=RTOL)  # what Inspect wrote into the log
        lo_hi = ci()(scores)
        assert (row["conf_low"], row["conf_high"]) == pytest.approx((lo_hi["lower"], lo_hi["upper"]), rel=RTOL)
        assert row["std_error_cluster"] == pytest.approx(stderr(cluster="passage")(scores), rel=RTOL)
        c = ci(cluster="passage")(scores)
        assert (row["conf_low_cluster"], row["conf_high_cluster"]) == pytest.approx((c["lower"], c["upper"]),
                                                                                    rel=RTOL)
        w = ci_wilson()(scores)
        assert (row["wilson_low"], row["wilson_high"]) == pytest.approx((w["lower"], w["upper"]), rel=RTOL)
        wc = ci_wilson(cluster="passage")(scores)
        assert (row["wilson_low_cluster"], row["wilson_high_cluster"]) == pytest.approx((wc["lower"], wc["upper"]),
                                                                                        rel=RTOL)


def test_clustered_cr2_wilson_and_pairs_equal_r(R, epoch_logs):
    res = me.summarize(epoch_logs, metric="match", cluster="passage", cluster_se="CR2")
    reduced = _reduced(epoch_logs)
    _r_vec(R, "sm_cl", PASSAGE, "str")
    for _, row in res.table.iterrows():
        x = [float(s.score.value) for s in reduced[row["system"]][0]]
        _r_vec(R, "sm_x", x)
        R("sm_fit <- lm(sm_x ~ 1)")
        se_cl = R('sqrt(sandwich::vcovCL(sm_fit, cluster = ~sm_cl, type = "HC0", cadjust = TRUE)[1, 1])')[0]
        se_cr2 = R('sqrt(as.matrix(clubSandwich::vcovCR(sm_fit, cluster = sm_cl, type = "CR2"))[1, 1])')[0]
        wil = R("prop.test(sum(sm_x), length(sm_x), correct = FALSE)$conf.int")
        assert row["std_error_cluster"] == pytest.approx(se_cl, rel=RTOL)
        assert row["std_error_cr2"] == pytest.approx(se_cr2, rel=RTOL)
        assert row["std_error_cr2"] != pytest.approx(row["std_error_cluster"], rel=1e-6)  # unbalanced clusters
        assert (row["wilson_low"], row["wilson_high"]) == pytest.approx(tuple(wil), rel=RTOL)
    (pair,) = res.pairwise.itertuples(index=False)
    xa = [float(s.score.value) for s in reduced[pair.system_a][0]]
    xb = [float(s.score.value) for s in reduced[pair.system_b][0]]
    _r_vec(R, "sm_d", np.subtract(xa, xb))
    se_d = R('sqrt(sandwich::vcovCL(lm(sm_d ~ 1), cluster = ~sm_cl, type = "HC0", cadjust = TRUE)[1, 1])')[0]
    assert pair.delta == pytest.approx(np.mean(np.subtract(xa, xb)), rel=RTOL)
    assert pair.std_error == pytest.approx(se_d, rel=RTOL) and pair.df == 7
    assert pair.test == "paired t, cluster-robust"
    p = R(f"2 * pt(-abs({float(pair.delta)!r} / {float(se_d)!r}), 7)")[0]
    assert pair.p_value == pytest.approx(p, rel=RTOL)
    # without cluster=: the paired t test of R's t.test on the epoch-averaged question scores
    plain = me.summarize(epoch_logs, metric="match").pairwise.iloc[0]
    _r_vec(R, "sm_a", xa)
    _r_vec(R, "sm_b", xb)
    tt = R("unlist(t.test(sm_a, sm_b, paired = TRUE)[c('p.value', 'conf.int')])")
    assert plain["test"] == "paired t" and plain["df"] == N - 1
    assert (plain["p_value"], plain["conf_low"], plain["conf_high"]) == pytest.approx(tuple(tt), rel=RTOL)


def test_binary_one_epoch_pairs_get_the_paired_t_and_the_exact_mcnemar_check_equal_to_r(R, one_epoch_logs):
    res = me.summarize(one_epoch_logs, metric="match")
    logs = me.read_eval_logs(one_epoch_logs)
    wide = logs.table.pivot(index="item", columns="system", values="score")
    # the same test as compare_logs (paired t; near 0 or 1, n min(p, 1 - p) < 5, Newcombe's interval
    # with the exact McNemar p: issue 39); McNemar is a labelled extra column and a check
    from mixedeval.workflows._bounded import use_newcombe

    assert len(res.pairwise) == 3
    expected, tp = [], []
    for _, r in res.pairwise.iterrows():
        d = wide[r["system_a"]] - wide[r["system_b"]]
        b, c = int((d > 0).sum()), int((d < 0).sum())
        assert (r["n_a_better"], r["n_b_better"]) == (b, c)
        expected.append(R(f"binom.test({b}, {b + c})$p.value")[0] if b + c else 1.0)
        _r_vec(R, "sm_a", wide[r["system_a"]].to_numpy())
        _r_vec(R, "sm_b", wide[r["system_b"]].to_numpy())
        near = use_newcombe(wide[r["system_a"]].to_numpy(), wide[r["system_b"]].to_numpy())
        assert r["test"] == ("Newcombe hybrid score, exact McNemar" if near else "paired t")
        tp.append(expected[-1] if near else R("t.test(sm_a, sm_b, paired = TRUE)$p.value")[0])
    np.testing.assert_allclose(res.pairwise["p_mcnemar"], expected, rtol=RTOL)
    np.testing.assert_allclose(res.pairwise["p_value"], tp, rtol=RTOL)
    _r_vec(R, "sm_p", tp)
    np.testing.assert_allclose(res.pairwise["p_adj"], R('p.adjust(sm_p, "holm")'), rtol=RTOL)
    assert res.table["wilson_low"].notna().all() and (res.table["n_epochs"] == 1).all()
    # the headline: the best against the runner-up, its p the paired t's; McNemar is a check
    board = res.leaderboard
    assert list(board["estimate"]) == sorted(board["estimate"], reverse=True)
    h = res.headline
    assert (h.better, h.other) == (board["name"].iloc[0], board["name"].iloc[1]) and h.estimate >= 0
    assert res.p_value == h.p_value and res.headline_text().startswith(f"{h.better} − {h.other}")
    assert res.checks["check"].iloc[0].startswith("exact McNemar")


def test_sign_flip_column_is_the_exact_permutation_p_and_reproducible():
    rng = np.random.default_rng(3)
    n = 10
    df = pd.DataFrame({"model": np.repeat(["x", "y"], n), "doc": np.tile([f"d{i}" for i in range(n)], 2),
                       "value": np.r_[rng.normal(0.6, 0.2, n), rng.normal(0.5, 0.2, n)]})
    res = me.summarize(df, score="value", system="model", item="doc", sign_flip=True, n_resamples=5000,
                       random_state=7)
    d = df["value"].to_numpy()[:n] - df["value"].to_numpy()[n:]
    null = np.array([np.mean(np.array(s) * d) for s in itertools.product((-1.0, 1.0), repeat=n)])
    p_exact = np.mean(np.abs(null) >= abs(d.mean()) * (1 - 1e-13))
    assert res.pairwise["p_sign_flip"].iloc[0] == pytest.approx(p_exact, rel=1e-12)
    assert res.pairwise["test"].iloc[0] == "paired t" and np.isnan(res.table["wilson_low"]).all()  # continuous
    again = me.summarize(df, score="value", system="model", item="doc", sign_flip=True, n_resamples=300,
                         random_state=7)
    third = me.summarize(df, score="value", system="model", item="doc", sign_flip=True, n_resamples=300,
                         random_state=7)
    assert again.pairwise["p_sign_flip"].iloc[0] == third.pairwise["p_sign_flip"].iloc[0]


def test_a_score_table_with_its_own_column_names_gives_the_log_numbers(epoch_logs):
    logs = me.read_eval_logs(epoch_logs)
    t = logs.table.rename(columns={"system": "model", "item": "id", "score": "correct", "epoch": "rep",
                                   "passage": "doc"})[["model", "task", "id", "rep", "correct", "doc"]]
    a = me.summarize(t, score="correct", system="model", item="id", epoch="rep", cluster="doc")
    b = me.summarize(logs, metric="match", cluster="passage")
    pd.testing.assert_frame_equal(a.table, b.table)
    pd.testing.assert_frame_equal(a.pairwise, b.pairwise)
    assert a.to_frame().equals(a.table) and {"table", "pairwise", "warnings", "provenance"} <= set(a.to_dict())
    assert not [c for c in [*a.table.columns, *a.pairwise.columns] if hasattr(pd.DataFrame, c)]  # glossary


def test_one_system_and_several_runs():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"system": "only", "item": [f"q{i}" for i in range(12)], "score": rng.random(12)})
    res = me.summarize(df)
    assert len(res.table) == 1 and res.pairwise.empty and "p_adj" in res.pairwise.columns
    assert res.table["std_error"].iloc[0] == pytest.approx(df["score"].std(ddof=1) / np.sqrt(12), rel=1e-12)
    one = me.summarize(df.iloc[:1])
    assert np.isnan(one.table["std_error"].iloc[0]) and one.table["n_items"].iloc[0] == 1
    runs = pd.DataFrame([(s, f"q{i}", r, rng.normal(m)) for s, m in (("a", 0.3), ("b", 0.0)) for i in range(15)
                         for r in ("r1", "r2", "r3")], columns=["system", "item", "run", "score"])
    rr = me.summarize(runs)
    assert "several_runs" in [w.kind for w in rr.warnings] and rr.pairwise["test"].iloc[0] == "paired t, run variance"
    assert (rr.table["n_runs"] == 3).all()


def test_bad_input_is_a_clear_data_error(epoch_logs):
    df = pd.DataFrame({"system": ["a", "a", "b", "b"], "item": ["1", "2", "1", "2"], "score": [1.0, 0.0, 1.0, 1.0],
                       "cl": ["x", "y", "x", "z"]})
    with pytest.raises(me.DataError, match="'points'"):
        me.summarize(df, score="points")
    with pytest.raises(me.DataError, match="NaN|missing"):
        me.summarize(df.assign(score=[1.0, np.nan, 0.0, 1.0]))
    with pytest.raises(me.DataError, match="different clusters"):
        me.summarize(df, cluster="cl")
    with pytest.raises(me.DataError, match="cluster_se"):
        me.summarize(df, cluster_se="CR3")
    with pytest.raises(me.DataError, match="needs cluster="):
        me.summarize(df, cluster_se="CR2")
    with pytest.raises(me.DataError, match="accuracy"):
        me.summarize(epoch_logs, metric="accuracy")
    with pytest.raises(me.DataError, match="metric"):
        me.summarize(df, metric="acc")  # no metric column to select from
    with pytest.raises(me.DataError, match="'nope' is not a column"):
        me.summarize(epoch_logs, metric="match", cluster="nope")


def test_cli_summarize_json(epoch_logs):
    cmd = [sys.executable, "-m", "mixedeval.cli", "summarize", str(epoch_logs), "--metric", "match",
           "--cluster", "passage", "--cluster-se", "CR2", "--json", "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    js = json.loads(p.stdout)
    assert {"answer", "metric", "table", "warnings"} <= set(js) and js["metric"] == "match"
    pairs = js["answer"]["differences"]  # the pairs, best first (issue 38)
    assert len(js["table"]) == 2 and len(pairs) == 1
    assert {"mean_score", "std_error", "std_error_cluster", "std_error_cr2", "wilson_low"} <= set(js["table"][0])
    assert {"delta", "std_error", "p_value", "p_adj"} <= set(pairs[0]) and js["answer"]["headline"]["method"]
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "summarize", str(epoch_logs), "--metric", "acc"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and "not found" in p.stderr


def test_report_section_shows_the_table_the_interval_plot_and_the_pairs(epoch_logs, tmp_path):
    res = me.summarize(epoch_logs, metric="match", cluster="passage")
    html = me.report(res, path=tmp_path / "s.html", progress=False).read_text()
    assert "Summary of scores per task and system" in html and "Mean score per task and system" in html
    assert "Paired differences on shared questions" in html and ("<svg" in html or "data:image" in html)
    cmd = [sys.executable, "-m", "mixedeval.cli", "summarize", str(epoch_logs), "--metric", "match", "--quiet",
           "--report", str(tmp_path / "cli.html")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "mean_score" in p.stdout and "Summary of scores" in (tmp_path / "cli.html").read_text()
