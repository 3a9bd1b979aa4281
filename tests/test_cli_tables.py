"""Issue 30, point 8: tables and names on the command line.

* a seeds table (rows repeating a question, one per training seed) read without saying so is an
  error that names the right option (``--run seed``), and one whose repeated column numbers
  samples names ``--epoch``; with ``--run`` / ``--epoch`` the CLI reads it, and its numbers equal
  :func:`mixedeval.summarize` on the same DataFrame with ``run=`` / ``epoch=`` (a separate reader:
  the DataFrame path of summarize, not the score-table reader the CLI uses);
* a DataFrame without a task column gets a task named after its metric, never ``<DataFrame>``;
* ``--system-from`` is accepted by ``summarize`` (the warnings of read_eval_logs name it).
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.cli import EXIT_USAGE, main

LOGS = str(me.datasets.path("llm_inspect_logs"))


def _table(kind: str) -> pd.DataFrame:
    """Two systems x 30 questions x 3 repeats (``seed``: runs with a run effect; ``sample``: epochs)."""
    rng = np.random.default_rng(7)
    rows = []
    for system, p in (("base", 0.55), ("tuned", 0.7)):
        shift = rng.normal(0, 0.08, 3) if kind == "seed" else np.zeros(3)
        for i in range(30):
            for k in range(3):
                rows.append({"system": system, "item": f"q{i:02d}", kind: k,
                             "score": float(rng.random() < np.clip(p + shift[k], 0, 1))})
    return pd.DataFrame(rows)


def _json(capsys, argv: list[str]) -> dict:
    code = main([*argv, "--json", "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def _error(capsys, argv: list[str]) -> str:
    code = main([*argv, "--quiet"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    return err


@pytest.mark.parametrize("command", ["summarize", "compare-logs"])
def test_a_seeds_table_without_run_names_run(tmp_path, capsys, command):
    path = tmp_path / "seeds.csv"
    _table("seed").to_csv(path, index=False)
    err = _error(capsys, [command, str(path), "--metric", "score"])
    assert "column 'seed' tells them apart and looks like runs" in err
    assert "--run seed" in err and err.index("--run seed") < err.index("--epoch seed")  # runs first


def test_a_samples_table_without_epoch_names_epoch(tmp_path, capsys):
    path = tmp_path / "samples.csv"
    _table("sample").to_csv(path, index=False)
    err = _error(capsys, ["summarize", str(path), "--metric", "score"])
    assert "looks like epochs" in err and err.index("--epoch sample") < err.index("--run sample")


def test_run_column_from_the_cli_equals_summarize_on_the_dataframe(tmp_path, capsys):
    df = _table("seed")
    path = tmp_path / "seeds.csv"
    df.to_csv(path, index=False)
    js = _json(capsys, ["summarize", str(path), "--metric", "score", "--run", "seed"])
    ref = me.summarize(df, score="score", system="system", item="item", run="seed")
    (pw,) = js["answer"]["differences"]  # the pair, best first (issue 38): delta is the better one's advantage
    r = ref.pairwise.iloc[0]
    assert {row["n_runs"] for row in js["table"]} == {3}
    assert pw["delta"] == pytest.approx(abs(float(r["delta"])), rel=1e-12) and pw["system_a"] == ref.headline.better
    for col in ("std_error", "df", "p_value"):
        assert pw[col] == pytest.approx(float(r[col]), rel=1e-12), col
    assert "runs" in pw["method"] or "run" in pw["test"]
    # compare-logs reads the same table the same way: its headline is that pair's test
    cl = _json(capsys, ["compare-logs", str(path), "--metric", "score", "--run", "seed", "--n-sim", "0",
                        "--n-resamples", "200"])
    (d,) = cl["answer"]["differences"]
    assert abs(d["p_value"] - float(r["p_value"])) < 1e-12 and abs(abs(d["delta"]) - abs(float(r["delta"]))) < 1e-12
    assert {row["n_runs"] for row in cl["accuracies"]} == {3}


def test_epoch_column_from_the_cli(tmp_path, capsys):
    df = _table("sample")
    path = tmp_path / "samples.parquet"
    df.to_parquet(path, index=False)
    js = _json(capsys, ["summarize", str(path), "--metric", "score", "--epoch", "sample"])
    ref = me.summarize(df, score="score", system="system", item="item", epoch="sample")
    assert {row["n_epochs"] for row in js["table"]} == {3} and {row["n_runs"] for row in js["table"]} == {1}
    assert js["answer"]["differences"][0]["p_value"] == pytest.approx(float(ref.pairwise["p_value"].iloc[0]), rel=1e-12)


def test_run_and_epoch_are_for_tables(capsys):
    err = _error(capsys, ["summarize", LOGS, "--metric", "match", "--format", "inspect", "--run", "seed"])
    assert "--run and --epoch name columns of a score table" in err


def test_a_dataframe_without_task_column_is_named_after_its_metric():
    df = _table("seed").rename(columns={"score": "accuracy"})
    logs = me.read_eval_logs(df, "table", metric="accuracy", columns={"run": "seed"})
    assert set(logs.table["task"]) == {"accuracy"}
    wide = df[df["seed"] == 0].drop(columns="seed")
    logs = me.read_eval_logs(wide, "table")
    assert "<DataFrame>" not in set(logs.table["task"]) and set(logs.table["task"]) == {"accuracy"}
    res = me.compare_logs(wide, metric="accuracy", model_check=False, plan=False, n_resamples=100, progress=False)
    assert set(res.table["task"]) == {"accuracy"} and "<DataFrame>" not in res.headline_text()


def test_summarize_takes_system_from(capsys):
    default = _json(capsys, ["summarize", LOGS, "--metric", "match"])
    assert {r["system"] for r in default["table"]} == {"mockllm/large", "mockllm/medium", "mockllm/small"}
    by_solver = _json(capsys, ["summarize", LOGS, "--metric", "match", "--system-from", "solver"])
    systems = {r["system"] for r in by_solver["table"]}
    assert len(systems) == 1 and "recorded_answers" in next(iter(systems))  # the three models joined by solver
    assert any("systems_merged" in w for w in by_solver["warnings"])
