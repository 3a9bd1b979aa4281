"""Benchmark: bradley_terry_corrected's three PPI fits on many models, sparse vs dense (issue 42, item 1).

The battles x models design has two non-zero entries per battle; the fits now sum over battles on
its sparse form (mixedeval/inference/_bt_ppi.py). Baseline, timed in the same run: the dense fits
before issue 42, copied verbatim into benchmarks/baseline_bt_ppi.py, on the same design (the PPI++
fit, the people-only fit and the judge-only fit, as ``_judges_battles._fit_all`` runs them). The
largest relative difference of the strengths and covariances is printed (rounding only).

    .venv/bin/python benchmarks/bench_bt_corrected.py [n_models n_battles]   (default 300 20000)
"""
from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

from mixedeval.inference._bt_ppi import ppi_bt
from mixedeval.workflows._judges_battles import _design, _verdicts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_issue42_guards import _many_battles  # noqa: E402

_spec = importlib.util.spec_from_file_location("baseline_bt_ppi", Path(__file__).with_name("baseline_bt_ppi.py"))
base = importlib.util.module_from_spec(_spec)
sys.modules["baseline_bt_ppi"] = base
_spec.loader.exec_module(base)


def fits(fit, X, y, yh, lab):
    return [fit(X[lab], y[lab], yh[lab], X[~lab], yh[~lab], method="ppi++"),
            fit(X[lab], y[lab], yh[lab], X[~lab], yh[~lab], method="classical"),
            fit(X, yh, yh, X[:0], yh[:0], method="classical")]


def main(k: int = 300, n: int = 20000) -> None:
    df = _many_battles(k, n)
    Xs, _, _ = _design(df, "model_a", "model_b", None)
    yh = _verdicts(df, "winner", False)
    y = _verdicts(df, "human_winner", True)
    lab = ~np.isnan(y)
    y = np.where(lab, y, 0.0)
    t0 = time.perf_counter()
    new = fits(ppi_bt, Xs, y, yh, lab)
    t_new = time.perf_counter() - t0
    Xd = Xs.toarray()
    t0 = time.perf_counter()
    old = fits(base.ppi_bt, Xd, y, yh, lab)
    t_old = time.perf_counter() - t0
    rel = max(float(np.max(np.abs(a.theta - b.theta) / np.maximum(np.abs(b.theta), 1e-12))) for a, b in zip(new, old))
    relv = max(float(np.max(np.abs(a.vcov - b.vcov)) / np.max(np.abs(b.vcov))) for a, b in zip(new, old))
    print(f"{k} models, {n} battles ({int(lab.sum())} labelled): sparse {t_new:.2f} s, dense {t_old:.2f} s "
          f"({t_old / t_new:.1f}x); max relative difference: strengths {rel:.1e}, covariances {relv:.1e}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
