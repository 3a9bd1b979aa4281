"""Issue 33, part 5 (CLI polish) and issue 30, point 6 (folders in provenance).

* ``mixedeval fit --emmeans`` keeps the contrasts' warning that the confidence intervals are
  Bonferroni-adjusted while the p-values are Holm-adjusted (emmeans has no Holm intervals), in
  the text output and in ``--json``;
* the report's provenance shows a folder of logs as a folder (its files, bytes and one SHA-256
  over them, computed here independently), a missing path as "not found", and no Python reprs
  (dicts, lists, None, numpy scalars, seed sequences) among the settings;
* the command line's text output prints lists and dicts as plain words.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval._format import plain
from mixedeval._report.provenance import collect
from mixedeval._report.sections import Context
from mixedeval.cli import main

LOGS = Path(me.datasets.path("llm_inspect_logs"))
FIT = ["fit", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)", "--emmeans", "system", "--quiet"]
#: what a Python repr looks like in a table cell
REPR = re.compile(r"[{}\[\]]|\bNone\b|np\.|numpy\.|SeedSequence\(|Generator\(|PosixPath|<[a-z_.]+ object")


def test_fit_emmeans_keeps_the_bonferroni_interval_warning(capsys):
    assert main(FIT) == 0
    text = capsys.readouterr().out
    line = next(ln for ln in text.splitlines() if ln.startswith("warning: [ci_adjust]"))
    assert "bonferroni" in line and "holm" in line
    assert main([*FIT, "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    (w,) = [w for w in js["warnings"] if "ci_adjust" in w]
    assert "conf_low/conf_high use the bonferroni adjustment, p_adj the holm adjustment" in w
    assert {r["p_adj"] >= r["p_value"] for r in js["contrasts"]} == {True}  # Holm p beside them


def _folder_digest(root: Path) -> tuple[int, int, str]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    lines = "".join(f"{p.relative_to(root).as_posix()}\t{hashlib.sha256(p.read_bytes()).hexdigest()}\n"
                    for p in files)
    return len(files), sum(p.stat().st_size for p in files), hashlib.sha256(lines.encode()).hexdigest()


def test_provenance_shows_a_folder_as_a_folder(tmp_path):
    one = LOGS / "large_arithmetic.eval"
    ctx = Context(input_files=[str(LOGS), str(one), str(tmp_path / "gone.csv")])
    inputs = collect(ctx)["inputs"]
    folder, file, missing = (inputs.iloc[i] for i in range(3))
    n, size, digest = _folder_digest(LOGS)
    assert n == 6
    assert folder["file"] == f"{LOGS}/ (folder of 6 files)" and folder["bytes"] == size and folder["sha256"] == digest
    assert file["sha256"] == hashlib.sha256(one.read_bytes()).hexdigest() and file["bytes"] == one.stat().st_size
    assert missing["sha256"] == "not found"
    assert not (inputs["sha256"] == "file not found").any()


@dataclass(frozen=True)
class _Result:
    provenance: dict[str, Any] = field(default_factory=dict)


def test_provenance_settings_have_no_python_reprs():
    prov = {"options": {"adjust": "holm", "levels": ["a", "b"]}, "systems": ("x", "y"), "cluster": None,
            "level": np.float64(0.95), "count": np.int64(3), "flag": True, "path": Path("/data/logs"),
            "random_state": np.random.SeedSequence(12345), "generator_seed": np.random.default_rng(1),
            "table": pd.DataFrame({"a": [1, 2]}), "estimator": "REML"}
    ctx = Context(items=[(SimpleNamespace(id="custom"), _Result(prov))])
    info = collect(ctx)
    cells = [*info["settings"]["value"].astype(str), *(str(v) for _, v in info["random_states"])]
    assert len(cells) == len(prov)
    bad = [c for c in cells if REPR.search(c)]
    assert bad == []
    settings = dict(zip(info["settings"]["setting"], info["settings"]["value"]))
    assert settings["options"] == "adjust: holm, levels: (a, b)" and settings["cluster"] == "none"
    assert settings["flag"] == "yes" and settings["level"] == "0.95" and settings["table"] == "table of 2 rows"
    assert dict(info["random_states"])["custom: random_state"] == "SeedSequence, entropy 12345"


def test_the_probe_sees_a_repr():
    """The repr check above can fail: it flags what str() of those values gives."""
    for v in ({"a": 1}, [1], None, np.random.SeedSequence(1)):
        assert REPR.search(str(v)), v
        assert not REPR.search(plain(v)), v


def test_cli_report_records_the_log_folder(tmp_path, capsys):
    out = tmp_path / "summary.html"
    assert main(["summarize", str(LOGS), "--metric", "match", "--report", str(out), "--quiet"]) == 0
    capsys.readouterr()
    page = out.read_text()
    assert f"{LOGS}/ (folder of 6 files)" in page and "file not found" not in page
    assert _folder_digest(LOGS)[2] in page


def test_cli_text_output_prints_lists_in_plain_words(capsys):
    code = main(["power", "--from-logs", str(LOGS), "--metric", "match", "--points", "10", "--pair",
                 "mockllm/large,mockllm/small", "--n-sim", "0", "--quiet"])
    text = capsys.readouterr().out
    assert code == 0
    line = next(ln for ln in text.splitlines() if ln.startswith("systems: "))
    assert line == "systems: mockllm/large, mockllm/small"
