"""Issue 38, point 3 (the command line): one printer for every answer, in the CLI's own words.

On the bundled Inspect logs (``compare-logs``, ``summarize``), a seeds table with a
lower-is-better ``wer`` column (``compare-logs --run seed``, ``bootstrap``) and judged battles
(``preferences``, which printed no answer before):

* the text opens with the answer and ``--json`` with its record, and both say the same headline;
* the differences are every pair best first (``system_a`` above ``system_b`` on the
  leaderboard), the headline pair's difference positive, under the printed sign convention;
* rank intervals are labelled (the leaderboard's simultaneous; the bootstrap's rank distribution
  marginal, beside it, not unlabelled);
* no ``nan``/``NaN`` cell in a text table;
* checks in the headline's units (points, not fractions);
* no Python-argument advice (``higher_is_better=``, ``df.groupby(...)``, ``run=``, ``columns=``):
  the command's flags instead;
* structure: only :mod:`mixedeval._cli_answer` renders answers.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from bt_helpers import simulate_battles

import mixedeval as me
from mixedeval import cli
from mixedeval.cli import main

ROOT = Path(__file__).resolve().parents[1]
LOGS = str(me.datasets.path("llm_inspect_logs"))
#: Python-argument advice that must not reach the command line's output
PYTHON_ADVICE = re.compile(r"higher_is_better|groupby\(|columns=|(?<![\w-])run=|drop_missing=|(?<![\w-])system=")
NAN = re.compile(r"\bnan\b", re.IGNORECASE)


# ---------------------------------------------------------------------------------- helpers
def _run(capsys, argv: list[str], *, ok: bool = True) -> tuple[str, str]:
    code = main([*argv, "--quiet"])
    out, err = capsys.readouterr()
    assert (code == 0) == ok, err
    return out, err


def _json(capsys, argv: list[str]) -> dict:
    out, _ = _run(capsys, [*argv, "--json"])
    return json.loads(out)


def _section(text: str, title: str) -> list[str]:
    """The lines of the text table titled ``== title... ==`` (notes and header included)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"== {title}"))
    body = []
    for line in lines[start + 1:]:
        if not line.strip() or line.startswith("=="):
            break
        body.append(line)
    return body


def _rows(section: list[str]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a section whose header is the first line starting like a table's (after
    the note lines, which hold ':' or ';')."""
    i = next(i for i, line in enumerate(section) if not line.startswith(("sign:", "every pair")) and ";" not in line)
    return section[i].split(), [r.split() for r in section[i + 1:] if not r.startswith("what the checks")]


def _common_answer_checks(text: str, js: dict) -> dict:
    """What every command with an answer prints: the answer first, the same headline in text
    and JSON, the rank interval labelled, no NaN cell, no Python advice."""
    ans = js["answer"]
    assert list(js)[0] == "answer"
    first = text.splitlines()[0]
    assert first == f"headline: {ans['headline_text']}"
    assert ans["headline"]["text"] == ans["headline_text"]
    board = _section(text, "leaderboard")
    kind = ans["rank_interval"]
    assert any(f"{kind} rank interval" in line for line in board)  # labelled
    assert f"{kind} rank" in next(line for line in board if line.lstrip().startswith("rank"))
    assert not NAN.search(text), [line for line in text.splitlines() if NAN.search(line)]
    assert not PYTHON_ADVICE.search(text), PYTHON_ADVICE.search(text)
    return ans


def _differences_best_first(text: str, ans: dict) -> None:
    """Every pair best first, the headline pair positive, the convention printed above them."""
    order = [r["name"] for r in ans["leaderboard"]]
    diffs = pd.DataFrame(ans["differences"])
    assert len(diffs)
    assert all(order.index(a) < order.index(b) for a, b in zip(diffs["system_a"], diffs["system_b"]))
    head = ans["headline"]
    task = head["task"] if head["task"] is not None else None
    rows = diffs[(diffs["system_a"] == head["better"]) & (diffs["system_b"] == head["other"])]
    if "task" in diffs.columns and len(rows) > 1:
        rows = rows[rows["task"] == (task or rows["task"].iloc[-1])]  # the pooled row comes last
    assert len(rows) >= 1 and rows["delta"].iloc[-1] == pytest.approx(head["estimate"], rel=1e-9)
    assert rows["delta"].iloc[-1] > 0
    sec = _section(text, "differences")
    assert sec[0] == "every pair, best first" and sec[1] == f"sign: {ans['convention']}"
    unit = f" ({head['unit']})" if head["unit"] else ""
    assert f"delta{unit}" in sec[2]  # the header, under the convention
    pair = re.compile(rf"{re.escape(head['better'])}\s+{re.escape(head['other'])}\s+([-+]\S+)")
    shown = [m.group(1) for m in map(pair.search, sec) if m]
    assert shown and shown[-1].startswith("+")  # the pooled row last
    cell = shown[-1]
    assert float(cell) == pytest.approx(head["scale"] * head["estimate"], abs=0.51 * 10 ** -_decimals(cell))


def _decimals(cell: str) -> int:
    return len(cell.split(".")[1]) if "." in cell else 0


def _checks_in_units(text: str, ans: dict) -> None:
    """The checks' estimates and bounds in the headline's units (x scale), their decimals the
    headline's."""
    checks = [c for c in ans["checks"] or [] if c["estimate"] is not None]
    if not checks:
        return
    sec = _section(text, "checks")
    unit = ans["headline"]["unit"]
    assert f"estimate ({unit})" in sec[1] if unit else "estimate" in sec[1]
    for c in checks:
        line = next(line for line in sec if line.startswith(c["check"]))
        nums = line[len(c["check"]):].split()[:3]
        for cell, v in zip(nums, (c["estimate"], c["conf_low"], c["conf_high"])):
            assert float(cell) == pytest.approx(ans["headline"]["scale"] * v, abs=0.51 * 10 ** -_decimals(cell))


# ---------------------------------------------------------------------------------- data
@pytest.fixture(scope="module")
def seeds_csv(tmp_path_factory) -> Path:
    """3 systems x 4 seeds x 40 questions of a lower-is-better WER: zeta best, then alpha, beta."""
    rng = np.random.default_rng(38)
    rows = []
    for system, base in (("alpha", 0.300), ("beta", 0.320), ("zeta", 0.290)):
        for seed in range(4):
            shift = rng.normal(0, 0.002)
            for i in range(40):
                wer = base + shift + 0.05 * np.sin(i) + rng.normal(0, 0.02)
                rows.append({"system": system, "seed": seed, "item": f"q{i}", "wer": max(wer, 0.0)})
    path = tmp_path_factory.mktemp("seeds") / "seeds.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def battles_csv(tmp_path_factory) -> Path:
    df, _ = simulate_battles(k=3, n=600, n_prompts=60, judges=["j1"], seed=9)
    path = tmp_path_factory.mktemp("battles") / "battles.csv"
    df.rename(columns={"prompt": "question_id"}).to_csv(path, index=False)
    return path


# ---------------------------------------------------------------------------------- commands
def test_compare_logs_bundled_logs(capsys):
    argv = ["compare-logs", LOGS, "--metric", "match", "--cluster", "cluster", "--n-resamples", "500", "--n-sim", "0"]
    text, err = _run(capsys, argv)
    js = _json(capsys, argv)
    ans = _common_answer_checks(text, js)
    _differences_best_first(text, ans)
    _checks_in_units(text, ans)
    assert "differences" not in js  # the pairs are the answer's, printed once
    assert not PYTHON_ADVICE.search(err)
    # the bootstrap's pairs (a check) in the same order and sign convention
    boot = pd.DataFrame(js["bootstrap"])
    order = [r["name"] for r in ans["leaderboard"]]
    assert all(order.index(a) < order.index(b) for a, b in zip(boot["system_a"], boot["system_b"]))
    assert _section(text, "bootstrap")[1] == f"sign: {ans['convention']}"


def test_compare_logs_seeds_table_lower_is_better(capsys, seeds_csv):
    argv = ["compare-logs", str(seeds_csv), "--metric", "wer", "--run", "seed", "--n-resamples", "500",
            "--n-sim", "0"]
    text, err = _run(capsys, argv)
    js = _json(capsys, argv)
    ans = _common_answer_checks(text, js)
    assert ans["direction"]["higher_is_better"] is False and ans["leaderboard"][0]["name"] == "zeta"
    assert "lower wer is better, so + means system_a scores lower" in ans["convention"]
    _differences_best_first(text, ans)
    _checks_in_units(text, ans)
    # the check's estimate was printed as a fraction (0.002...) under a headline in points
    assert ans["headline"]["unit"] == "points"
    assert not PYTHON_ADVICE.search(err)


def test_summarize_bundled_logs(capsys):
    argv = ["summarize", LOGS, "--metric", "match", "--cluster", "cluster"]
    text, _ = _run(capsys, argv)
    js = _json(capsys, argv)
    ans = _common_answer_checks(text, js)
    _differences_best_first(text, ans)
    assert "pairwise" not in js


def test_bootstrap_labels_both_rank_intervals(capsys, seeds_csv):
    argv = ["bootstrap", str(seeds_csv), "--score", "wer", "--system", "system", "--item", "item", "--run", "seed",
            "--n-resamples", "1000"]
    text, _ = _run(capsys, argv)
    js = _json(capsys, argv)
    ans = _common_answer_checks(text, js)
    _differences_best_first(text, ans)
    assert ans["rank_interval"] == "simultaneous"
    ranks = _section(text, "ranks")
    assert ranks[0].startswith("best first; marginal rank: the marginal rank interval")
    assert "the leaderboard's simultaneous rank interval leads" in ranks[0]
    header, rows = _rows(ranks)
    assert header[-2:] == ["marginal", "rank"]
    assert [r[0] for r in rows] == [r["name"] for r in ans["leaderboard"]]  # best first, as the leaderboard
    # the leaderboard (simultaneous) comes first, the marginal one after it
    assert text.index("== leaderboard") < text.index("== ranks")
    assert "p_value" not in js and "pairwise" not in js


def test_preferences_prints_its_answer(capsys, battles_csv):
    argv = ["preferences", str(battles_csv), "--n-resamples", "50"]
    text, _ = _run(capsys, argv)
    js = _json(capsys, argv)
    ans = _common_answer_checks(text, js)
    assert ans["headline"]["better"] == ans["leaderboard"][0]["name"]
    _differences_best_first(text, ans)
    assert "ranks" in js and text.index("== leaderboard") < text.index("== strengths")


def test_fit_emmeans_prints_the_answer_first(capsys):
    """``fit --emmeans``: the means' answer before the fit (TER: lower is better), every pair of
    means best first, positive."""
    argv = ["fit", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)", "--emmeans", "system"]
    text, _ = _run(capsys, argv)
    js = _json(capsys, argv)
    ans = _common_answer_checks(text, js)
    assert ans["leaderboard"][0]["name"] == "Marking" and ans["direction"]["higher_is_better"] is False
    _differences_best_first(text, ans)
    assert (pd.DataFrame(ans["differences"])["delta"] > 0).all()  # Marking < PostEdit < Baseline in TER
    assert text.index("headline:") < text.index("Linear mixed model fit")


def test_demo_llm_prints_the_answer_first(capsys, tmp_path):
    from mixedeval.demo import run_llm_demo

    assert run_llm_demo(out=str(tmp_path / "llm.html"), n_sim=20, n_resamples=200, progress=False) == 0
    text = capsys.readouterr().out
    assert text.startswith("headline: mockllm/large − mockllm/medium: +")
    assert "== differences ==\nevery pair, best first\nsign: " in text and "simultaneous rank" in text
    assert not NAN.search(text) and not PYTHON_ADVICE.search(text)
    assert run_llm_demo(out=str(tmp_path / "llm2.html"), n_sim=20, n_resamples=200, progress=False, as_json=True) == 0
    js = json.loads(capsys.readouterr().out)
    assert list(js)[0] == "answer" and text.splitlines()[0] == f"headline: {js['answer']['headline_text']}"


# ---------------------------------------------------------------------------------- the CLI's words
def test_direction_advice_names_the_flag(capsys, seeds_csv, tmp_path):
    """An unknown metric ("score") is assumed higher-is-better; the note says --lower-is-better,
    not higher_is_better=False; a declared direction names the flag too."""
    df = pd.read_csv(seeds_csv).rename(columns={"wer": "score"})
    path = tmp_path / "scores.csv"
    df.to_csv(path, index=False)
    text, _ = _run(capsys, ["summarize", str(path), "--metric", "score", "--run", "seed"])
    direction = next(line for line in text.splitlines() if line.startswith("direction:"))
    assert "--lower-is-better" in direction and "higher_is_better" not in text
    js = _json(capsys, ["summarize", str(path), "--metric", "score", "--run", "seed"])
    assert "--lower-is-better" in js["answer"]["direction"]["note"]
    text, _ = _run(capsys, ["summarize", str(path), "--metric", "score", "--run", "seed", "--lower-is-better"])
    assert "declared: --lower-is-better" in text and "higher_is_better" not in text


def test_duplicate_rows_advice_names_the_flags(capsys, seeds_csv):
    """The bootstrap's duplicate-cell error said "(df.groupby([...]).mean()) ... as run= or
    group="; compare-logs' said "columns={'run': 'seed'} (CLI --run seed)"."""
    _, err = _run(capsys, ["bootstrap", str(seeds_csv), "--score", "wer", "--system", "system", "--item", "item"],
                  ok=False)
    assert "--run" in err and "--group" in err and not PYTHON_ADVICE.search(err), err
    _, err = _run(capsys, ["compare-logs", str(seeds_csv), "--metric", "wer"], ok=False)
    assert "--run seed" in err and not PYTHON_ADVICE.search(err), err
    code = main(["compare-logs", str(seeds_csv), "--metric", "wer", "--json", "--quiet"])
    out, _ = capsys.readouterr()
    assert code == 2 and "--run seed" in json.loads(out)["error"]


@pytest.mark.parametrize(("command", "message", "expected"), [
    ("bootstrap", "average the duplicates first (df.groupby([...]).mean()) or name the column that tells them apart "
                  "as run= or group=", "average the duplicates first in the file or name the column that tells them "
                                      "apart as --run RUN or --group GROUP"),
    ("bootstrap", "resample includes 'runs' but no run column was given; pass run='<run column>'",
     "resample includes 'runs' but no run column was given; pass --run RUN"),
    ("summarize", "higher is better (assumed: the metric score is not a known one; pass higher_is_better=False if "
                  "lower scores are better)",
     "higher is better (assumed: the metric score is not a known one; pass --lower-is-better if lower scores are "
     "better)"),
    ("compare-logs", "read the table with columns={'run': 'seed'} (CLI --run seed)", "read the table with --run seed"),
    ("compare-logs", "an epoch column: columns={'epoch': ...}); otherwise", "an epoch column: --epoch COLUMN); otherwise"),
    ("compare-logs", "pass drop_missing=True to drop them", "pass --drop-missing to drop them"),
    ("compare-logs", "name them with system= fields", "name them with --system-from FIELD fields"),
    ("fit", "aggregate duplicates (df.groupby(keys).mean()) or add the column",
     "aggregate duplicates in the file or add the column"),
    ("summarize", "p = 0.05, df = Inf, mean_a=0.3", "p = 0.05, df = Inf, mean_a=0.3"),  # not an option: kept
])
def test_in_cli_terms(command, message, expected):
    words = cli.cli_words(cli.build_parser(), command)
    assert words(message) == expected


# ---------------------------------------------------------------------------------- structure
def test_only_the_printer_renders_answers():
    """The answer is rendered in one place: the handlers and the demos call
    :func:`mixedeval._cli_answer.render_answer` / :func:`answer_record` and print no headline,
    leaderboard, differences or checks of their own."""
    forbidden = re.compile(r"headline_text\(|\.headline\.(text|to_dict)\(|\.headline\(\)|answer_sentence|"
                           r"print_table\([^)]*(leaderboard|checks|differences)|\[\"(rank_low|rank_high|letters)\"\]|"
                           r"(?<!args)\.leaderboard\b|(?<!args)\.checks\b|check_summary|\.convention\b")
    for name in ("_cli_commands.py", "demo.py", "cli.py"):
        src = (ROOT / "mixedeval" / name).read_text(encoding="utf-8")
        hits = [line.strip() for line in src.splitlines() if forbidden.search(line)
                and "answer_of(" not in line]  # the demo takes the report's checks of its headline
        assert hits == [], (name, hits)
    printer = (ROOT / "mixedeval" / "_cli_answer.py").read_text(encoding="utf-8")
    assert "def render_answer(" in printer and "def answer_record(" in printer
    for name in ("_cli_commands.py", "demo.py"):
        src = (ROOT / "mixedeval" / name).read_text(encoding="utf-8")
        assert "render_answer(" in src and "answer_record(" in src or "_emit(" in src


# ---------------------------------------------------------------------------------- the printer
def _wer_answer(checks: bool = True):
    from mixedeval import _answer as A

    d = A.direction("wer")
    board = A.leaderboard(pd.Series({"zeta": 0.29, "alpha": 0.30, "beta": 0.32}), std_error=[0.004, 0.004, 0.004],
                          higher_is_better=False)
    head = A.headline("zeta", "alpha", -0.0061, 0.0028, -0.0116, -0.0006, 0.032, 39.0, "paired t", d,
                      unit="points", scale=100.0)
    rows = [A.check_row("paired bootstrap", head, estimate=0.002722, conf_low=-0.001, conf_high=0.0066, p_value=0.16),
            A.check_row("likelihood-ratio test", head, p_value=0.01, why="it asks whether any system differs")]
    return A.Answer(direction=d, leaderboard=board, headline=head, checks=A.checks_table(rows) if checks else None)


def test_printer_checks_in_points_and_no_nan():
    """Checks printed 0.002722 under a headline in points and NaN for a test without an estimate;
    now +0.27 points (the headline's decimals) and NA, and the check summary when one differs."""
    from mixedeval._cli_answer import render_answer

    ans = _wer_answer()
    text = render_answer(ans)
    checks = _section(text, "checks")
    assert "estimate (points)" in checks[1]
    boot = next(line for line in checks if line.startswith("paired bootstrap"))
    assert boot.split()[2:5] == ["+0.27", "-0.10", "+0.66"]  # 100 x, two decimals as the headline's +0.61
    lrt = next(line for line in checks if line.startswith("likelihood-ratio test"))
    assert lrt.split()[2:6] == ["NA", "NA", "NA", "0.0100"] and not NAN.search(text)
    assert f"what the checks mean: {ans.check_summary()}" in text and ans.check_summary()
    assert text.splitlines()[0] == f"headline: {ans.headline_text()}" and "+0.61 points" in text.splitlines()[0]
    # a column missing in every row is left out
    import dataclasses

    bare = _wer_answer(checks=False)
    bare = dataclasses.replace(bare, leaderboard=bare.leaderboard.assign(std_error=np.nan))
    board = _section(render_answer(bare), "leaderboard")
    assert "std_error" not in board[1] and "simultaneous rank" in board[1] and "== checks ==" not in render_answer(bare)
