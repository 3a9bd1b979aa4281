"""Issue 42 (hardening IV), items 1-3: guards before work, clear errors for bad values, the CLI.

Guards are tested without allocating anything large: a small ``MIXEDEVAL_MEMORY_LIMIT`` or time
limit, sparse files made with ``truncate`` (no disk blocks), and the resident size of the process
checked where a guard must refuse before reading. Ctrl-C is SIGINT sent from a timer thread
(``_thread.interrupt_main``) or to a subprocess; it must stop the loop within 2 s.
"""
from __future__ import annotations

import _thread
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval import cli
from mixedeval.errors import DataError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from judges_helpers import simulate  # noqa: E402

LOGS = me.datasets.path("llm_inspect_logs")


def _run_cli(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


# ------------------------------------------------------------------------------- item 3: the CLI
def test_cli_irt_on_a_folder_honours_where(capsys):
    """`mixedeval irt FOLDER --where task=arithmetic` fits the arithmetic items only (it ignored --where)."""
    code, out, err = _run_cli(["--json", "--quiet", "irt", str(LOGS), "--where", "task=arithmetic", "--n-sim", "0"],
                              capsys)
    assert code == 0, err
    import json
    items = [r["item"] for r in json.loads(out)["items"]]
    logs = me.read_eval_logs(LOGS)
    want = sorted(set(logs.table.loc[logs.table["task"] == "arithmetic", "item"].astype(str)))
    assert sorted(items) == want
    code, out, err = _run_cli(["--quiet", "irt", str(LOGS), "--where", "task=nosuchtask", "--n-sim", "0"], capsys)
    assert code == 2 and "--where 'task=nosuchtask' selects no rows" in err
