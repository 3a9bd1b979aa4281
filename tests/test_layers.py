"""The layer contract (pyproject.toml, [tool.importlinter]) holds: imports go down the layers
data -> engine -> inference/resampling/diagnostics -> workflows -> report/cli only, checked by
import-linter on the package's import graph (function-level imports included)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_layer_contract_is_kept():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is not installed (it is in the [test] extra)"
    out = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "1 kept, 0 broken" in out.stdout


def test_import_mixedeval_starts_neither_r_nor_pandas():
    code = ("import sys, time; t = time.perf_counter(); import mixedeval; dt = time.perf_counter() - t; "
            "print(dt, 'rpy2' in sys.modules, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    dt, rpy2, pandas = out.stdout.split()
    assert rpy2 == "False" and pandas == "False"
    assert float(dt) < 0.5
