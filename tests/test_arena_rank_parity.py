"""me.bradley_terry(estimator="arena-rank", interval="sandwich", cluster="battle") against the
installed arena-rank 0.1.1 itself, run in its own interpreter (it pins numpy 2.3.3): the
interpreter is $MIXEDEVAL_ARENA_PYTHON, else .venv-peers/bin/python in the repository
(scripts/setup_peers.sh makes it), else /work/venv-arena/bin/python; the test is skipped when
none exists. Data go out as CSV, results come back as JSON (tests/peers/arena_rank_runner.py).

arena-rank stops its L-BFGS when the loss changes by less than ftol = 1e-9 (relative): its
ratings are then 1e-4 to 3e-3 rating points from the maximum. Run to convergence (ftol=0,
gtol=1e-13) its ratings equal mixedeval's to 1e-10 and its intervals to 1e-7 (reweighted
Bradley-Terry: 6e-6, arena-rank's own rounding, see the test); at its default tolerances the
difference is its optimizer's (asserted below 1e-2 and printed).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mixedeval as me

sys.path.insert(0, str(Path(__file__).parent))
from test_bt_sandwich import _battles  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).parent / "peers" / "arena_rank_runner.py"
TIGHT = {"ftol": 0.0, "gtol": 1e-13, "max_iter": 20000}


def arena_python() -> str | None:
    """The interpreter with arena-rank (see the module docstring), None when there is none."""
    env = os.environ.get("MIXEDEVAL_ARENA_PYTHON")
    if env:
        return env
    for cand in (ROOT / ".venv-peers" / "bin" / "python", Path("/work/venv-arena/bin/python")):
        if cand.exists():
            return str(cand)
    return None


def run_arena(jobs: list[dict], tmp: Path, python: str | None = None, timeout: float = 1800) -> list[dict]:
    """The arena-rank results of ``jobs`` (tests/peers/arena_rank_runner.py)."""
    python = python or arena_python()
    src, dst = tmp / "jobs.json", tmp / "out.json"
    src.write_text(json.dumps(jobs))
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([python, str(RUNNER), str(src), str(dst)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    if proc.returncode:
        raise RuntimeError(f"arena-rank failed:\n{proc.stderr[-3000:]}")
    return json.loads(dst.read_text())


CASES = [(None, False), (None, True), (["style"], True), (["style"], False)]


@pytest.fixture(scope="module")
def arena_results(tmp_path_factory):
    if arena_python() is None:
        pytest.skip("no interpreter with arena-rank (scripts/setup_peers.sh, or MIXEDEVAL_ARENA_PYTHON)")
    tmp = tmp_path_factory.mktemp("arena")
    df = _battles(n=2000, k=6, seed=11)
    df.to_csv(tmp / "b.csv", index=False)
    jobs = [{"csv": str(tmp / "b.csv"), "features": f, "reweighted": r, "model_kw": TIGHT} for f, r in CASES]
    jobs += [{"csv": str(tmp / "b.csv"), "features": f, "reweighted": r} for f, r in CASES[1:3]]
    return df, run_arena(jobs, tmp)


def _ours(df, features, reweighted):
    res = me.bradley_terry(df, estimator="arena-rank", interval="sandwich", cluster="battle",
                           covariates=features, reweight="pair" if reweighted else None)
    return res


def _diffs(res, out) -> dict[str, float]:
    tab = res.table.set_index("model").loc[out["competitors"]]
    d = {"ratings": np.abs(tab["elo"] - out["ratings"]).max(),
         "rating_lower": np.abs(tab["elo_conf_low"] - out["rating_lower"]).max(),
         "rating_upper": np.abs(tab["elo_conf_high"] - out["rating_upper"]).max(),
         "variances": np.abs((tab["elo"] - tab["elo_conf_low"]) ** 2 / 1.959963984540054 ** 2 - out["variances"]).max()}
    if "coeffs" in out and res.covariates is not None:
        d["coeffs"] = np.abs(res.covariates["estimate"].to_numpy() - out["coeffs"]).max()
    return {k: float(v) for k, v in d.items()}


@pytest.mark.parametrize("case", range(len(CASES)))
def test_equals_arena_rank_run_to_convergence(arena_results, case):
    df, outs = arena_results
    features, reweighted = CASES[case]
    d = _diffs(_ours(df, features, reweighted), outs[case])
    print(f"arena-rank (ftol=0, gtol=1e-13), features={features}, reweighted={reweighted}: max abs diff {d}")
    assert d["ratings"] < 1e-6, d
    # reweighted Bradley-Terry: arena-rank adds hessian_reg = 1e-5 (not scaled by the battles) to a
    # Hessian summed over battles weighing 1 / max(pair count, 50): H + 1e-5 I has condition number
    # ~1e5 along the ratings' common shift, and the rounding of its gradient covariance along that
    # direction enters multiplied by 1e10; arena-rank's float64 variances carry ~1e-7..1e-6 relative
    # error there (a plain numpy inv(H + cI) @ G @ inv(H + cI) differs from the exact value by as
    # much); mixedeval computes the exact-arithmetic value (_bt_sandwich.arena_rank_vcov)
    tol = 2e-5 if (reweighted and not features) else 1e-6
    for k in ("rating_lower", "rating_upper"):
        assert d[k] < tol, (k, d)
    assert d["variances"] < 1e-4  # rating points squared (variances near 100-1000)
    assert d.get("coeffs", 0.0) < 1e-8


@pytest.mark.parametrize("case", [1, 2])
def test_near_arena_rank_at_its_default_tolerances(arena_results, case):
    df, outs = arena_results
    features, reweighted = CASES[case]
    d = _diffs(_ours(df, features, reweighted), outs[len(CASES) + case - 1])
    print(f"arena-rank (its defaults ftol=gtol=1e-9), features={features}, reweighted={reweighted}: max abs diff {d}")
    assert max(d["ratings"], d["rating_lower"], d["rating_upper"]) < 1e-2, d
