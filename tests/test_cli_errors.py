"""Error paths of the ``mixedeval`` command line (issue 11, point 7): ``--n-sim`` below the
minimum with ``--report`` is a usage error; with ``--json`` every error, usage errors included,
puts ``{"error": <message>, "kind": <exception class>}`` on stdout beside the one stderr line,
with exit status 2 (1 for an internal error, 130 for Ctrl-C)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mixedeval import cli
from mixedeval.cli import EXIT_INTERNAL, EXIT_USAGE, main

TER = ["kreutzer_ter"]
FORMULA = ["--formula", "ter ~ system + (1|sentence_id)"]


def json_error(capsys, argv, status: int = EXIT_USAGE) -> dict:
    """Run a failing command with --json: exit ``status``, one stderr line, a JSON error object
    on stdout whose message is the stderr line's."""
    code = main([*argv, "--quiet"])
    out = capsys.readouterr()
    assert code == status, (code, out.err)
    lines = out.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mixedeval: "), out.err
    obj = json.loads(out.out)
    assert set(obj) == {"error", "kind"}
    assert lines[0].endswith(obj["error"])
    return obj


# ------------------------------------------------------------------------------ --n-sim
@pytest.mark.parametrize("argv", [
    ["fit", *TER, *FORMULA],
    ["compare", *TER, "--formula", "ter ~ 1 + (1|sentence_id)", *FORMULA],
])
@pytest.mark.parametrize("n_sim", ["0", "9", "-5"])
def test_n_sim_below_minimum_with_report_is_a_usage_error(capsys, tmp_path, argv, n_sim):
    report = tmp_path / "r.html"
    code = main([*argv, "--report", str(report), "--n-sim", n_sim, "--quiet"])
    out = capsys.readouterr()
    assert code == EXIT_USAGE and out.out == ""
    assert out.err.splitlines() == [out.err.strip()]
    assert f"--n-sim {n_sim}" in out.err and "at least 10 simulations" in out.err
    assert not report.exists()
    obj = json_error(capsys, [*argv, "--report", str(report), "--n-sim", n_sim, "--json"])
    assert obj["kind"] == "UsageError" and "at least 10" in obj["error"]


def test_demo_n_sim_is_checked_before_any_work(capsys, tmp_path):
    obj = json_error(capsys, ["demo", "--out", str(tmp_path / "d.html"), "--n-sim", "0", "--json"])
    assert obj["kind"] == "UsageError" and "--n-sim 0" in obj["error"]
    assert not (tmp_path / "d.html").exists()


def test_n_sim_without_report_is_not_used_so_not_checked(capsys):
    assert main(["fit", *TER, *FORMULA, "--n-sim", "0", "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fit"]


# ------------------------------------------------------------------------------ --json errors
@pytest.mark.parametrize("argv, kind, needle", [
    (["fit", "/no/such/file.csv", *FORMULA], "DataError", "does not exist"),
    (["fit", *TER, *FORMULA, "--where", "nope=1"], "DataError", "'nope'"),
    (["fit", *TER, "--formula", "ter ~ sytem + (1|sentence_id)"], None, "sytem"),
    (["compare", *TER, *FORMULA], "DataError", "at least two"),
    (["bootstrap", *TER, "--score", "tr", "--system", "system", "--item", "sentence_id"], "DataError", "'tr'"),
    (["vca", "kreutzer_annotation", "--score", "score", "--object", "sent", "--facet", "rater"], "DataError", "'sent'"),
    (["vca", "kreutzer_annotation", "--score", "score", "--object", "sentence", "--size", "rater"], "DataError",
     "FACET=N"),
    (["disparity", "hu2025_records"], "DataError", "aggregate"),
    (["demo", "--dataset", "nope"], None, "no demo"),
])
def test_json_error_object_for_data_errors(capsys, argv, kind, needle):
    obj = json_error(capsys, [*argv, "--json"])
    assert needle in obj["error"]
    if kind:
        assert obj["kind"] == kind
    else:  # a subclass of DataError (e.g. FormulaError) names itself
        assert obj["kind"].endswith("Error") and obj["kind"] not in ("RError", "UsageError")


@pytest.mark.parametrize("argv, needle", [
    (["fit", *TER], "--formula"),
    (["nonsense"], "invalid choice"),
    (["bootstrap", "x", "--score", "s", "--system", "s", "--item", "i", "--n-resamples", "many"], "invalid int"),
    (["check", "--bogus"], "unrecognized arguments"),
    (["vca", *TER, "--score", "ter", "--object", "sentence_id", "--optimizer", "fast"], "invalid choice"),
])
@pytest.mark.parametrize("where", ["end", "front", "abbreviated"])
def test_json_error_object_for_usage_errors(capsys, argv, needle, where):
    full = {"end": [*argv, "--json"], "front": ["--json", *argv], "abbreviated": [*argv, "--js"]}[where]
    obj = json_error(capsys, full)
    assert obj["kind"] == "UsageError" and needle in obj["error"] and "--help" in obj["error"]


def test_without_json_stdout_stays_empty(capsys):
    assert main(["fit", *TER, "--quiet"]) == EXIT_USAGE
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith("mixedeval: error: ") and len(out.err.splitlines()) == 1


def test_internal_error_and_interrupt_with_json(capsys, monkeypatch):
    def boom(args):
        raise RuntimeError("unexpected\nstate")

    def stop(args):
        raise KeyboardInterrupt

    monkeypatch.delenv("MIXEDEVAL_DEBUG", raising=False)
    monkeypatch.setattr(cli, "cmd_check", boom)
    obj = json_error(capsys, ["check", "--json"], status=EXIT_INTERNAL)
    assert obj["kind"] == "RuntimeError" and "internal error: RuntimeError: unexpected state" in obj["error"]
    monkeypatch.setattr(cli, "cmd_check", stop)
    assert main(["check", "--quiet"]) == 130
    out = capsys.readouterr()
    assert out.err == "mixedeval: interrupted\n" and out.out == ""
    obj = json_error(capsys, ["check", "--json"], status=130)
    assert obj == {"error": "interrupted", "kind": "KeyboardInterrupt"}


def test_json_error_in_a_real_process(tmp_path):
    report = tmp_path / "r.html"
    for argv, kind in ((["fit", "/no/such/file.csv", *FORMULA], "DataError"),
                       (["fit", *TER, *FORMULA, "--report", str(report), "--n-sim", "0"], "UsageError")):
        res = subprocess.run([sys.executable, "-m", "mixedeval.cli", *argv, "--json"], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 2, res.stderr
        assert json.loads(res.stdout)["kind"] == kind
        errors = [ln for ln in res.stderr.splitlines() if ln.startswith("mixedeval: error: ")]
        assert errors == res.stderr.splitlines()[-1:] and "Traceback" not in res.stderr
    assert not report.exists()
