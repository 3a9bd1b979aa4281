"""Issue 16 point 6: ``mixedeval power`` gives the numbers of the Python API with the same options."""
from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

import mixedeval as me


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mixedeval.cli", "power", *args, "--json", "--quiet"],
                          capture_output=True, text=True, timeout=900)


def test_power_of_a_design_equals_the_api():
    out = _cli("--items", "40", "--variance", "item=1", "--variance", "residual=1", "--effect", "0.4",
               "--n-sim", "30", "--random-state", "3")
    assert out.returncode == 0, out.stderr
    got = pd.DataFrame(json.loads(out.stdout)["power"])
    d = me.design(items=40, variances={"item": 1, "residual": 1})
    exp = me.power(d, 0.4, n_sim=30, random_state=3).table
    assert got["n_rejected"].tolist() == exp["n_rejected"].tolist()
    assert got["power"].tolist() == pytest.approx(exp["power"].tolist(), rel=1e-12)


def test_power_curve_from_the_cli():
    out = _cli("--items", "20", "--effect", "0.5", "--values", "10,30", "--n-sim", "20", "--random-state", "1",
               "--test", "sign_flip")
    assert out.returncode == 0, out.stderr
    got = pd.DataFrame(json.loads(out.stdout)["power"])
    exp = me.power_curve(me.design(items=20), 0.5, values=[10, 30], n_sim=20, random_state=1, test="sign_flip").table
    assert got["n_levels"].tolist() == [10, 30]
    assert got["power"].tolist() == pytest.approx(exp["power"].tolist(), rel=1e-12)


@pytest.mark.parametrize("args, message", [
    ((), "needs --effect"),
    (("--formula", "y ~ system + (1|item)", "--effect", "1"), "needs pilot DATA"),
    (("--effect", "1", "--values", "10,x"), "comma-separated integers"),
])
def test_power_cli_errors_are_clear(args, message):
    out = _cli(*args)
    assert out.returncode == 2 and message in out.stderr
