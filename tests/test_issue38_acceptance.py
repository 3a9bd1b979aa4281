"""Issue 38's "done when": on the bundled logs, the MT data, a 5-system Inspect run, max-reduced
Inspect logs and a seeds table with a lower-is-better column, the API, the CLI text, ``--json``
and the report say the same headline, the same best-first differences with the same signs,
labelled rank intervals, and checks whose verdicts match their own numbers.

Every route is run here on the same data; nothing is compared with a stored copy of an output."""
from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval import _answer as A

pytest.importorskip("inspect_ai")

FAST = ["--n-resamples", "200", "--random-state", "0", "--n-sim", "0", "--quiet"]


def _inspect(path, models, *, epochs, reducer="mean", n=30, seed=0):
    from inspect_ai import Epochs, Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    from inspect_helpers import answer_solver

    rng = np.random.default_rng(seed)
    fixed_output = answer_solver()
    ds = [Sample(id=f"q{i}", input=f"{i}+{i}?", target=str(2 * i)) for i in range(n)]
    ease = rng.normal(0, 1.0, n)  # question difficulty shared by the models (paired design)
    for model, logit in models.items():
        p = 1 / (1 + np.exp(-(logit + ease)))
        ans = {f"q{i}": [str(2 * i) if rng.random() < p[i] else "?" for _ in range(epochs)] for i in range(n)}
        inspect_eval(Task(dataset=ds, solver=fixed_output(ans), scorer=match(), epochs=Epochs(epochs, reducer),
                          name="arith"), model=model, log_dir=str(path), display="none")
    return path


def _seeds_wer(path):
    rng = np.random.default_rng(5)
    rows = []
    ease = rng.normal(0.3, 0.08, 60)
    for s, shift in (("alpha", 0.0), ("beta", -0.02), ("zeta", -0.006)):
        for seed in range(3):
            run = rng.normal(0, 0.004)
            for i in range(60):
                rows.append({"system": s, "item": f"u{i}", "seed": seed,
                             "wer": float(np.clip(ease[i] + shift + run + rng.normal(0, 0.03), 0, None))})
    f = path / "seeds.csv"
    pd.DataFrame(rows).to_csv(f, index=False)
    return f


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """name -> (API kwargs, CLI arguments)."""
    base = tmp_path_factory.mktemp("acceptance")
    five = _inspect(base / "five", {f"mockllm/m{j}": 1.2 - 0.35 * j for j in range(5)}, epochs=2, seed=1)
    mx = _inspect(base / "max", {"mockllm/a": -1.0, "mockllm/b": 0.9, "mockllm/c": -0.2}, epochs=3, reducer="max",
                  seed=2)
    seeds = _seeds_wer(base)
    ter = base / "ter.csv"
    me.datasets.load("kreutzer_ter").to_csv(ter, index=False)
    logs = me.datasets.path("llm_inspect_logs")
    return {
        "bundled logs": (dict(source=logs, metric="match", cluster="cluster"),
                         [str(logs), "--metric", "match", "--cluster", "cluster"]),
        "MT (Kreutzer TER)": (dict(source=me.read_eval_logs(ter, "table", metric="ter",
                                                             columns={"item": "sentence_id", "run": "replication"}),
                                   metric="ter"),
                              [str(ter), "--metric", "ter", "--item", "sentence_id", "--run", "replication"]),
        "five Inspect systems": (dict(source=five, metric="match"), [str(five), "--metric", "match"]),
        "max-reduced Inspect logs": (dict(source=mx, metric="match"), [str(mx), "--metric", "match"]),
        "seeds table, lower-is-better wer": (
            dict(source=me.read_eval_logs(seeds, "table", metric="wer", columns={"run": "seed"}), metric="wer"),
            [str(seeds), "--metric", "wer", "--run", "seed"]),
    }


def _api(kw):
    kw = dict(kw)
    return me.compare_logs(kw.pop("source"), **kw, n_resamples=200, random_state=0, n_sim=0, model_check=False)


def _cli(args, *extra):
    p = subprocess.run([sys.executable, "-m", "mixedeval.cli", "compare-logs", *args, *FAST, *extra],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _check_verdicts_match_their_numbers(answer: A.Answer):
    head = answer.headline
    for r in answer.checks.itertuples(index=False):
        v = str(r.verdict)
        if not np.isfinite(r.p_value):
            assert v.startswith("not available")
            continue
        sig, head_sig = r.p_value < 1 - head.level, head.p_value < 1 - head.level
        opposite = np.isfinite(r.estimate) and r.estimate < 0 and sig
        assert v.startswith("agrees") == (sig == head_sig and not opposite), v
        m = re.search(r"its interval is ([0-9.]+)x as wide", v)
        if m:
            assert float(m.group(1)) == pytest.approx(A.width_ratio(head, r.conf_low, r.conf_high), abs=0.006)
        assert "(wider)" not in v and "(narrower)" not in v  # widths are measured, never claimed


@pytest.mark.parametrize("name", ["bundled logs", "MT (Kreutzer TER)", "five Inspect systems",
                                  "max-reduced Inspect logs", "seeds table, lower-is-better wer"])
def test_every_route_says_the_same_thing(cases, name, tmp_path):
    kw, args = cases[name]
    res = _api(kw)
    a = res.answer
    head = a.headline
    # the API: one answer, the headline pair leads the best-first differences with a positive advantage
    assert res.headline is head and res.p_value == head.p_value and res.leaderboard is a.leaderboard
    d = a.differences
    assert (d["system_a"].iloc[0], d["system_b"].iloc[0]) == (head.better, head.other)
    assert d["delta"].iloc[0] == pytest.approx(head.estimate, rel=1e-12) and head.estimate >= 0
    pos = {n: i for i, n in enumerate(a.leaderboard["name"])}
    assert all(pos[x] < pos[y] for x, y in zip(d["system_a"], d["system_b"]))  # best first, every row
    for tab in (res.table, res.bootstrap):  # the result's other pair tables follow the same rule
        pooled = tab[tab["task"] == tab["task"].iloc[-1]] if "task" in tab.columns else tab
        row, sign = A.pair_row(pooled, head.better, head.other)
        assert sign == 1.0 and row["delta"] > 0
    assert a.rank_kind == "simultaneous" and "simultaneous" in a.rank_label
    if name == "max-reduced Inspect logs":
        assert "max over 3 epochs" in res.design.epochs_text
        assert "averaged" not in str(res.provenance.get("epochs", ""))
    if name == "seeds table, lower-is-better wer":
        assert not a.direction.higher_is_better and "lower wer is better" in res.headline_text()
    # --json: the same answer record first
    js = json.loads(_cli(args, "--json"))
    assert list(js)[0] == "answer"
    rec = js["answer"]
    assert rec["headline"]["text"] == res.headline_text()
    jd = pd.DataFrame(rec["differences"])
    assert list(zip(jd["system_a"], jd["system_b"])) == list(zip(d["system_a"], d["system_b"]))
    np.testing.assert_allclose(jd["delta"].to_numpy(float), d["delta"].to_numpy(float), rtol=1e-9)
    assert rec["rank_interval"] == "simultaneous" and rec["convention"] == a.convention
    # the text: the same headline first, labelled rank intervals, the convention above the pairs
    text = _cli(args)
    assert text.splitlines()[0] == f"headline: {res.headline_text()}"
    assert "simultaneous rank" in text and a.convention in text
    assert not re.search(r"\bnan\b", text, re.I)
    # the report: opens with the same headline, the pairs best first, the rank intervals labelled
    page = me.report(res, path=tmp_path / "r.html", progress=False).read_text(encoding="utf-8")
    plain = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert res.headline_text() in plain and "simultaneous" in plain


def test_checks_verdicts_match_their_numbers_with_the_model_check(cases):
    kw, _ = cases["bundled logs"]
    res = me.compare_logs(kw["source"], metric="match", cluster="cluster", n_resamples=500, random_state=0, n_sim=0)
    assert len(res.checks) == 3
    _check_verdicts_match_their_numbers(res.answer)
    lrt = res.checks[res.checks["check"].str.contains("likelihood-ratio")]["verdict"].iloc[0]
    assert "df = Inf" not in lrt  # the contrast's explanation stays on the contrast's row


def test_checks_verdicts_on_a_seeds_table(cases):
    kw, _ = cases["seeds table, lower-is-better wer"]
    res = me.compare_logs(kw["source"], metric="wer", n_resamples=500, random_state=0, n_sim=0)
    _check_verdicts_match_their_numbers(res.answer)
    boot = res.checks[res.checks["check"].str.startswith("paired bootstrap")]
    assert len(boot) == 1 and boot["estimate"].iloc[0] > 0  # the headline's sign, not the alphabetical one
