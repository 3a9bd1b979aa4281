"""Acceptance audit of issue 30's "Done when" (the bundled logs, the MT demo, a 5-system Inspect
run and a seeds table: one headline for the best pair, a best-first leaderboard and checks with
verdicts in the API, the CLI and the report): the defects the audit found, each pinned here."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval import _answer


def _ter_table(seed: int = 3) -> pd.DataFrame:
    """A TER-like table (3 systems x 40 sentences x 2 runs): rates >= 0, some above 1, mean < 1."""
    rng = np.random.default_rng(seed)
    sent = rng.gamma(2.0, 0.25, 40)
    rows = [{"system": s, "item": f"s{i}", "run": r, "ter": float(max(0.0, sent[i] + m + rng.normal(0, 0.05)))}
            for s, m in (("A", 0.0), ("B", 0.03), ("C", 0.08)) for r in range(2) for i in range(40)]
    df = pd.DataFrame(rows)
    assert df["ter"].max() > 1 and df["ter"].mean() < 1
    return df


def test_compare_logs_and_summarize_write_ter_in_points_as_the_other_entry_points():
    """TER (an edit rate that can exceed 1) is written in TER points by every headline: the EMMs,
    compare_systems and the bootstrap did, compare_logs and summarize wrote raw fractions."""
    df = _ter_table()
    cl = me.compare_logs(df, metric="ter", model_check=False, plan=False, n_resamples=200, random_state=0,
                         progress=False)
    su = me.summarize(df, score="ter", run="run")
    per = df.groupby(["system", "item"], as_index=False)["ter"].mean()
    bo = me.bootstrap(per, score="ter", system="system", item="item", n_resamples=200, random_state=0, progress=False)
    assert bo.headline.unit == "points"
    for res in (cl, su):
        assert (res.headline.unit, res.headline.scale) == ("points", 100.0), res.headline_text()
        assert " points (95% CI" in res.headline_text()
        # the numbers themselves stay in TER units
        assert res.headline.estimate == pytest.approx(bo.headline.estimate)
    assert cl.headline_text() == su.headline_text()


def test_answer_sentence_never_writes_a_bound_rounded_to_minus_zero():
    """The MT demo's sentence said "95% CI -0.0 to +0.6": a bound that rounds to zero gets the
    digits it needs (as the headline writes it: -0.02)."""
    d = _answer.direction("ter")
    diffs = pd.DataFrame({"name": ["Marking", "PostEdit"], "versus": "Baseline", "estimate": [0.0123, 0.0096],
                          "conf_low": [0.0082, 0.0055], "conf_high": [0.0165, 0.0137], "p_value": [5e-9, 5e-6]})
    h = _answer.headline("Marking", "PostEdit", -0.0027, 0.0015, -0.0057, 0.0002, 0.068, np.inf, "lmm", d)
    s = _answer.answer_sentence(diffs, h, scale=100, unit="points")
    assert "-0.0 " not in s and "+0.0 " not in s and "-0.0," not in s, s
    assert "not distinguishable (+0.27 points, 95% CI -0.02 to +0.57" in s, s
    # bounds far from zero keep the short form
    h2 = _answer.headline("a", "b", 0.05, 0.01, 0.03, 0.07, 1e-4, 50, "t", _answer.direction("acc"))
    assert "(+5 points, 95% CI +3 to +7" in _answer.answer_sentence(diffs.iloc[:0], h2, scale=100, unit="points")


@pytest.fixture(scope="module")
def llm_res():
    logs = me.datasets.path("llm_inspect_logs")
    return logs, me.compare_logs(logs, metric="match", cluster="cluster", random_state=0, n_resamples=300, n_sim=0,
                                 progress=False)


def test_llm_demo_text_shows_leaderboard_checks_and_the_lrt_p_not_the_headline_p(llm_res, capsys):
    """`mixedeval demo llm` printed "likelihood-ratio p = 0.005" -- the headline's p (res.p_value),
    not the GLMM's likelihood-ratio p (6e-16) -- and neither the leaderboard nor the checks."""
    from mixedeval.demo import _print_llm

    logs, res = llm_res
    _print_llm(res, res.answer, logs, lambda text: text)
    out = capsys.readouterr().out
    lines = out.splitlines()
    head_line = next(i for i, s in enumerate(lines) if s.startswith("headline: "))
    assert lines[head_line] == f"headline: {res.headline_text()}"
    assert "leaderboard" in out and "checks" in out
    board_at = out.index("leaderboard")
    assert out.index("mockllm/large", board_at) < out.index("mockllm/medium", board_at) < \
        out.index("mockllm/small", board_at)
    for check, verdict in zip(res.checks["check"], res.checks["verdict"]):
        assert check in out and verdict[:30] in out
    lrt_p = float(res.glrt["p_value"].dropna().iloc[-1])
    assert f"likelihood-ratio p = {res.p_value:.3g}" not in out
    if any(getattr(w, "kind", None) == "r_message" for w in res.warnings):  # R's notes as notes
        assert "[r_message]" not in out and "note from R (a check): NOTE:" in out
    assert f"{lrt_p:.3g}" in out or f"{lrt_p:.2g}" in out


def test_llm_demo_json_has_the_answer(llm_res):
    from mixedeval._cli_answer import answer_record

    _, res = llm_res
    a = json.loads(json.dumps(answer_record(res.answer)))  # the demo's --json opens with it (issue 38)
    assert a["headline"]["text"] == res.headline_text() and a["headline"]["p_value"] == res.p_value
    assert [r["name"] for r in a["leaderboard"]] == list(res.leaderboard["name"])
    assert [c["verdict"] for c in a["checks"]] == list(res.checks["verdict"])
    assert "higher is better" in a["direction"]["note"]


def test_mt_demo_text_and_json_carry_the_checks_with_verdicts(tmp_path):
    """The MT demo's report had a checks table with verdicts; its text and --json did not."""
    cmd = [sys.executable, "-m", "mixedeval.cli", "demo", "mt", "--quiet", "--n-sim", "10", "--n-resamples", "200",
           "--out", str(tmp_path / "mt.html")]
    j = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=600)
    assert j.returncode == 0, j.stderr
    out = json.loads(j.stdout)["answer"]  # the answer record first (issue 38)
    assert out["headline"]["better"] == "Marking" and out["headline"]["text"] == out["headline_text"]
    checks = out["checks"]
    assert len(checks) >= 2 and all(c["verdict"] == "agrees" or c["verdict"].startswith("differs: ") for c in checks)
    assert any("likelihood-ratio" in c["check"] for c in checks)
    assert any("bootstrap" in c["check"] for c in checks)
    t = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert t.returncode == 0, t.stderr
    assert "== checks" in t.stdout and f"headline: {out['headline']['text']}" in t.stdout
    for c in checks:
        assert c["verdict"][:30] in t.stdout
    html = (tmp_path / "mt.html").read_text()
    for c in checks:
        assert c["verdict"].split(":")[0] in html


def test_a_generic_score_column_has_an_assumed_direction_said_in_the_output(tmp_path):
    """A table's generic ``score`` column says nothing about its direction (it may hold error
    rates): the direction is assumed (higher) and the output says so, not "known metric score"."""
    assert _answer.known_direction("score") is None and _answer.known_direction("mean_score") is None
    assert _answer.known_direction("f1_score") is True and _answer.known_direction("ter_score") is False
    df = _ter_table().rename(columns={"ter": "score"})
    res = me.summarize(df, run="run")
    assert res.direction.source == "assumed" and "higher_is_better=False" in res.direction.note
    csv = tmp_path / "errors.csv"
    df.to_csv(csv, index=False)
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "compare-logs", str(csv), "--metric", "score",
                        "--quiet", "--no-plan", "--n-resamples", "100"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "direction: higher is better (assumed" in p.stdout


def test_every_answering_result_has_the_answer_keys_in_to_dict():
    """headline, leaderboard, checks and direction in to_dict() of compare_logs, summarize,
    compare_systems and bootstrap alike (the bootstrap's lacked checks and direction)."""
    df = _ter_table()
    per = df.groupby(["system", "item"], as_index=False)["ter"].mean()
    bo = me.bootstrap(per, score="ter", system="system", item="item", n_resamples=200, random_state=0, progress=False)
    su = me.summarize(df, score="ter", run="run")
    for res in (bo, su):
        d = res.to_dict()
        a = d.get("answer", d)  # a result holding one Answer puts it first under "answer" (issue 38)
        assert {"headline", "leaderboard", "checks", "direction"} <= set(a), type(res).__name__
        assert a["headline"]["p_value"] == res.p_value
        json.dumps(d)
    assert list(su.to_dict())[0] == "answer" and list(bo.to_dict())[0] == "answer"
    for res in (bo, su):
        d = res.to_dict()
        assert d.get("answer", d)["direction"]["higher_is_better"] is False


def test_cli_bootstrap_takes_reference_as_the_api_does(tmp_path):
    """Every entry point that names a best takes the reference (me.bootstrap(reference=) did,
    `mixedeval bootstrap` had no --reference)."""
    df = _ter_table()
    csv = tmp_path / "ter.csv"
    df.to_csv(csv, index=False)
    api = me.bootstrap(df, score="ter", system="system", item="item", run="run", n_resamples=200, random_state=0,
                       progress=False, reference="C")
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "bootstrap", str(csv), "--score", "ter", "--system",
                        "system", "--item", "item", "--run", "run", "--n-resamples", "200", "--random-state", "0",
                        "--reference", "C", "--quiet", "--json"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)["answer"]  # the answer record first (issue 38)
    assert out["headline"]["text"] == api.headline_text() and (api.headline.other, api.headline.better) == ("C", "A")
    assert out["headline"]["reference"] == "C"
    assert out["headline"]["p_value"] == pytest.approx(api.p_value)


def test_cli_prints_r_notes_as_notes_not_warnings(capsys):
    """R's notes are notes (the report lists them apart); the command line printed
    "check warning: [r_message] NOTE: ..."."""
    import argparse

    from mixedeval._cli_commands import _emit

    args = argparse.Namespace(json=False)
    _emit(args, {"headline": "a − b: +1", "warnings": ["[plan_ignores_clusters] the plan ...",
                                                       "[r_message] NOTE: Results may be misleading"],
                 "check_warnings": ["[ci_adjust] emmeans has no holm intervals",
                                    "[r_message] NOTE: Results may be misleading due to interactions"]})
    out = capsys.readouterr().out
    assert "r_message" not in out and "warning: [r_message]" not in out
    assert "note from R: NOTE: Results may be misleading\n" in out
    assert "note from R (a check): NOTE: Results may be misleading due to interactions" in out
    assert "warning: [plan_ignores_clusters]" in out and "check warning: [ci_adjust]" in out


@pytest.mark.parametrize("command", ["compare-logs", "summarize"])
def test_cli_names_a_tables_item_and_task_columns(tmp_path, command):
    """A score table whose item column has another name (the MT data's sentence_id) could not be
    read on the command line: the error said columns={'item': ...}, an API argument. --item and
    --task name them, as --run and --epoch do, and the error says so."""
    df = _ter_table().rename(columns={"item": "sentence_id"}).assign(lang="de")
    csv = tmp_path / "ter.csv"
    df.to_csv(csv, index=False)
    base = [sys.executable, "-m", "mixedeval.cli", command, str(csv), "--metric", "ter", "--quiet", "--json"]
    extra = ["--no-plan", "--n-resamples", "100"] if command == "compare-logs" else []
    bad = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "--item" in json.loads(bad.stdout)["error"]
    p = subprocess.run([*base, *extra, "--item", "sentence_id", "--run", "run", "--task", "lang"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)["answer"]  # the answer record first (issue 38)
    api = me.summarize(df, score="ter", item="sentence_id", run="run", task="lang")
    assert out["headline"]["text"] == api.headline_text()
    assert out["headline"]["p_value"] == pytest.approx(api.p_value, rel=1e-12)
    assert [r["name"] for r in out["leaderboard"]] == list(api.leaderboard["name"])


def test_every_json_headline_is_the_headline_record(tmp_path, llm_res):
    """--json gives the headline as the same record everywhere (better, other, estimate, ...,
    p_value, text): compare-logs, summarize, judge and irt did; bootstrap and the demos gave a
    string."""
    from mixedeval._cli_answer import answer_record

    df = _ter_table()
    csv = tmp_path / "ter.csv"
    df.to_csv(csv, index=False)
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "bootstrap", str(csv), "--score", "ter", "--system",
                        "system", "--item", "item", "--run", "run", "--n-resamples", "200", "--quiet", "--json"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)["answer"]  # the answer record first (issue 38)
    api = me.bootstrap(df, score="ter", system="system", item="item", run="run", n_resamples=200, random_state=0,
                       progress=False)
    assert out["headline"]["text"] == api.headline_text() and out["headline"]["p_value"] == api.p_value
    assert out["headline"]["better"] == api.headline.better
    _, res = llm_res
    h = json.loads(json.dumps(answer_record(res.answer)["headline"]))
    assert h["text"] == res.headline_text() and h["p_value"] == res.p_value


def test_cli_fit_emmeans_opens_with_the_answer_of_its_report(capsys):
    """`mixedeval fit ... --emmeans system` printed the means and contrasts but not the answer its
    report opens with (the EMMs' headline, direction and best-first leaderboard)."""
    from mixedeval.cli import main

    argv = ["fit", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)", "--emmeans", "system", "--quiet"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    fit = me.lmm("ter ~ system + (1|sentence_id)", data=me.datasets.load("kreutzer_ter"), reml=True)
    emm = fit.emmeans("system")
    assert list(out)[0] == "answer"  # the answer record first (issue 38)
    out = out["answer"]
    assert out["headline"]["text"] == emm.headline_text()
    assert out["headline"]["p_value"] == pytest.approx(emm.p_value, rel=1e-10)
    assert [r["name"] for r in out["leaderboard"]] == ["Marking", "PostEdit", "Baseline"]
    assert "lower is better" in out["direction"]["note"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"headline: {emm.headline_text()}\n")


def test_emmeans_take_the_direction_once_and_the_report_and_cli_follow_it(tmp_path):
    """The EMMs' direction came only from the response's name, or per call of leaderboard()/
    headline(): a report of a fit and its means (``me.report(fit, emm)``, ``mixedeval fit
    --emmeans --report``) of an error rate called anything else ranked it the wrong way.
    ``emmeans(..., higher_is_better=False)`` declares it once; --lower-is-better on the CLI."""
    df = me.datasets.load("kreutzer_ter").rename(columns={"ter": "points"})
    fit = me.lmm("points ~ system + (1|sentence_id)", data=df, reml=True)
    assumed = fit.emmeans("system")
    assert assumed.direction.source == "assumed" and assumed.leaderboard()["name"].iloc[0] == "Baseline"
    emm = fit.emmeans("system", higher_is_better=False)
    assert emm.direction.source == "declared" and not emm.direction.higher_is_better
    assert list(emm.leaderboard()["name"]) == ["Marking", "PostEdit", "Baseline"]
    head = emm.headline()
    assert (head.better, head.other) == ("Marking", "PostEdit") and head.estimate > 0
    assert emm.p_value == head.p_value
    assert emm.leaderboard(higher_is_better=True)["name"].iloc[0] == "Baseline"  # a call's own choice wins
    path = me.report(fit, emm, path=tmp_path / "r.html", compute_missing=False, progress=False)
    html = path.read_text(encoding="utf-8")
    assert head.text().split(" [")[0].replace("−", "&minus;") in html or head.text().split(" [")[0] in html
    assert json.loads(json.dumps(emm.to_dict()))["higher_is_better"] is False
    csv = tmp_path / "ter.csv"
    df.to_csv(csv, index=False)
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "fit", str(csv), "--formula",
                        "points ~ system + (1|sentence_id)", "--emmeans", "system", "--lower-is-better", "--quiet",
                        "--json"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)["answer"]  # the answer record first (issue 38)
    assert out["headline"]["better"] == "Marking" and "declared" in out["direction"]["note"]
    assert out["headline"]["p_value"] == pytest.approx(head.p_value, rel=1e-8)


def test_cli_text_tables_leave_out_all_missing_columns(capsys):
    """Issue 30 item 6 ("no all-NaN columns"), on the command line as in the report: a text table
    drops a column that is missing in every row (e.g. Wilson bounds of a continuous score); a column
    with one value stays."""
    import pandas as pd

    from mixedeval._console import print_table

    print_table("accuracies", pd.DataFrame({"system": ["a", "b"], "mean_score": [0.5, 0.6],
                                            "wilson_low": [float("nan")] * 2, "note": [None, "x"]}))
    out = capsys.readouterr().out
    assert "mean_score" in out and "note" in out and "wilson_low" not in out


def test_summarize_and_compare_logs_name_a_taskless_table_alike():
    """A DataFrame without a task column: both entry points name its task after the score (as
    read_eval_logs does), so their pairwise tables label the same rows alike (the audit found
    "error" in one and "(all items)" in the other)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(9)
    df = pd.DataFrame([(s, f"q{i}", float(rng.random() < p)) for s, p in (("a", 0.3), ("b", 0.4)) for i in range(40)],
                      columns=["system", "item", "error"])
    s = me.summarize(df, score="error")
    c = me.compare_logs(me.read_eval_logs(df, "table"), metric="error", model_check=False, plan=False)
    assert set(s.pairwise["task"]) == set(c.table["task"]) == {"error"}
    assert s.p_value == pytest.approx(c.p_value, rel=1e-12)
