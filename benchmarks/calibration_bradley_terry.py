"""Coverage of me.bradley_terry's strength intervals when the battles of a prompt are correlated
(the precise version of tests/test_bradley_terry.py::test_prompt_bootstrap_covers_with_prompt_correlation_small).

Data (tests/bt_helpers.py): on prompt p model m has strength s_m + u_mp, u_mp ~ N(0, sd_prompt^2)
shared by the prompt's battles; pairs drawn uniformly, the first-shown side at random. The
estimand is the Bradley-Terry projection (the limit of the MLE as prompts grow), computed by
Gauss-Hermite quadrature (bt_helpers.projected_strengths). Per data set three 95% intervals of
each strength (reference m0):

* prompt bootstrap (percentile; mixedeval's default);
* row bootstrap (FastChat's unit: prompt=None);
* Wald from the likelihood (battles independent).

With R data sets the Monte-Carlo SE of a coverage near 95% is about sqrt(.95 * .05 / R) per
strength (the pooled figure's SE is smaller, less than by sqrt(3), the strengths share data).

    .venv/bin/python benchmarks/calibration_bradley_terry.py [--reps 400] [--n-resamples 1000]
        [--prompts 200] [--per-prompt 10] [--sd-prompt 0.6]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import mixedeval as me

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bt_helpers import projected_strengths, simulate_prompt_correlated  # noqa: E402  (the CI test's data model)

STRENGTHS = np.array([0.0, 0.4, -0.3, 0.8, 0.1])


def one(rep: int, a: argparse.Namespace, truth: np.ndarray) -> dict[str, np.ndarray]:
    df = simulate_prompt_correlated(strengths=STRENGTHS, n_prompts=a.prompts, per_prompt=a.per_prompt,
                                    sd_prompt=a.sd_prompt, seed=10_000 + rep)
    kw = dict(ties="drop", position_bias=False, n_resamples=a.n_resamples, random_state=rep, ranks=False)
    out = {}
    names = [f"m{i}" for i in range(1, len(STRENGTHS))]
    for label, prompt in (("prompt bootstrap", "prompt"), ("row bootstrap", None)):
        tab = me.bradley_terry(df, prompt=prompt, **kw).table.set_index("model").loc[names]
        out[label] = ((tab.conf_low <= truth[1:]) & (truth[1:] <= tab.conf_high)).to_numpy()
        if prompt:
            out["Wald (independent battles)"] = (np.abs(tab.estimate - truth[1:]) <= 1.959964 * tab.model_std_error
                                                 ).to_numpy()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--n-resamples", type=int, default=1000)
    ap.add_argument("--prompts", type=int, default=200)
    ap.add_argument("--per-prompt", type=int, default=10)
    ap.add_argument("--sd-prompt", type=float, default=0.6)
    a = ap.parse_args()
    truth = projected_strengths(STRENGTHS, a.sd_prompt)
    print(f"{a.reps} data sets of {a.prompts} prompts x {a.per_prompt} battles, 5 models, prompt SD {a.sd_prompt}; "
          f"{a.n_resamples} replicates; projected strengths {np.round(truth, 4).tolist()}")
    t0 = time.perf_counter()
    hits: dict[str, list[np.ndarray]] = {}
    for rep in range(a.reps):
        for k, v in one(rep, a, truth).items():
            hits.setdefault(k, []).append(v)
    se = np.sqrt(0.95 * 0.05 / a.reps)
    print(f"({time.perf_counter() - t0:.0f} s) coverage of nominal 95% intervals, per strength m1..m4 and pooled "
          f"(Monte-Carlo SE per strength {se:.3f}):")
    for k, v in hits.items():
        cov = np.mean(np.vstack(v), axis=0)
        print(f"  {k:28s} " + "  ".join(f"{c:.3f}" for c in cov) + f"   pooled {cov.mean():.3f}")


if __name__ == "__main__":
    main()
