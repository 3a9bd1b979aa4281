"""Calibration of the simulated-residual tests for integer responses (the bigger version of
tests/test_diagnostics_glmm.py::test_level_under_the_true_model and
::test_dispersion_detects_beta_binomial_overdispersion).

The data and the ``simulated`` matrix are drawn in numpy from a known model, so no refit is
needed and the tests' behaviour is seen without estimation error:

  binomial      k of 10 trials, logit p ~ N(0, 0.8^2) per observation       (true model)
  bernoulli     0/1, the same p                                             (true model)
  poisson       log mu ~ N(0.3, 0.5^2)                                      (true model)
  betabinom     data beta-binomial (10 trials, intra-class correlation rho), simulations binomial
  zip           Poisson data with an extra 15% of zeros, simulations Poisson

For each scenario and replicate, ``from_simulations`` (randomized PIT residuals, DHARMa 0.4.7
rules) gives p-values of uniformity (KS), dispersion (two-sided and 'greater'), zero-inflation and
outliers; the table prints the rejection rate at 5% with its Monte-Carlo SE sqrt(.05 * .95 / reps).
Under the true model the rates should be near 0.05 (at most: the dispersion and zero-inflation
p-values are discrete in steps of 1 / n_sim and two-sided by doubling); under the alternatives
they are the power.

    .venv/bin/python benchmarks/calibration_diagnostics_glmm.py [--reps 1000] [--n 200] [--n-sim 250]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mixedeval import diagnostics as dg


def draw(scenario: str, rng: np.random.Generator, n: int, n_sim: int, rho: float):
    """(simulated, observed, predicted, trials) for one replicate of a scenario."""
    if scenario in ("binomial", "bernoulli", "betabinom"):
        trials = 1 if scenario == "bernoulli" else 10
        p = 1 / (1 + np.exp(-rng.normal(scale=0.8, size=n)))
        sims = rng.binomial(trials, p[:, None], size=(n, n_sim)).astype(float)
        if scenario == "betabinom":
            a, b = p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho
            y = rng.binomial(trials, rng.beta(a, b)).astype(float)
        else:
            y = rng.binomial(trials, p).astype(float)
        return sims, y, p, np.full(n, float(trials))
    mu = np.exp(0.3 + rng.normal(scale=0.5, size=n))
    sims = rng.poisson(mu[:, None], size=(n, n_sim)).astype(float)
    y = rng.poisson(mu).astype(float)
    if scenario == "zip":
        y[rng.random(n) < 0.15] = 0.0
    return sims, y, mu, None


def run(scenario: str, reps: int, n: int, n_sim: int, rho: float) -> dict[str, float]:
    rng = np.random.default_rng([2026, sum(map(ord, scenario))])
    names = ("uniformity", "dispersion", "dispersion_greater", "zero_inflation", "outliers")
    pv = {k: np.empty(reps) for k in names}
    for i in range(reps):
        sims, y, pred, trials = draw(scenario, rng, n, n_sim, rho)
        d = dg.from_simulations(sims, y, pred, trials=trials, integer_response=True, random_state=rng)
        t = d.tests.set_index("test")["p_value"]
        for k in ("uniformity", "dispersion", "zero_inflation", "outliers"):
            pv[k][i] = t[k]
        pv["dispersion_greater"][i] = dg.test_dispersion(d, alternative="greater").p_value
    return {k: float(np.mean(v < 0.05)) for k, v in pv.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--n-sim", type=int, default=250)
    ap.add_argument("--rho", type=float, default=0.1, help="intra-class correlation of the beta-binomial data")
    args = ap.parse_args()
    se = np.sqrt(0.05 * 0.95 / args.reps)
    print(f"reps={args.reps} n={args.n} n_sim={args.n_sim} rho={args.rho}; Monte-Carlo SE of a 5% rate: {se:.4f}")
    cols = ("uniformity", "dispersion", "dispersion_greater", "zero_inflation", "outliers")
    print(f"{'scenario':<11}" + "".join(f"{c:>20}" for c in cols) + f"{'seconds':>10}")
    for scenario in ("binomial", "bernoulli", "poisson", "betabinom", "zip"):
        t0 = time.perf_counter()
        rates = run(scenario, args.reps, args.n, args.n_sim, args.rho)
        print(f"{scenario:<11}" + "".join(f"{rates[c]:>20.3f}" for c in cols) + f"{time.perf_counter() - t0:>10.1f}")


if __name__ == "__main__":
    main()
