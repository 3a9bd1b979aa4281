"""Coverage of me.bradley_terry's sandwich intervals when votes cluster by voter and by prompt
(issue 40; the precise version of
tests/test_bt_sandwich.py::test_clustered_sandwich_covers_with_voter_and_prompt_effects_small).

Data (tests/bt_helpers.simulate_voter_prompt): on prompt p judged by voter j model m has
strength ``s_m + u_mp + v_mj``, ``u ~ N(0, sd_prompt^2)``, ``v ~ N(0, sd_judge^2)``; pairs drawn
uniformly, each battle's voter drawn uniformly (voters and prompts crossed), no ties. The
estimand is the Bradley-Terry projection (the limit of the MLE as prompts and voters grow;
bt_helpers.projected_strengths with sd = sqrt(sd_prompt^2 + sd_judge^2)). Per data set, nominal
95% intervals of

* the ratings (Elo, 1000 + 400/ln 10 (s - mean s): arena-rank's scale and anchor), and
* every pairwise difference of strengths (the answer's ``differences``),

from: the two-way clustered sandwich (CGM, ``cluster=("judge", "prompt")``), the one-way
sandwiches (prompt; judge), and arena-rank's unclustered sandwich (``estimator="arena-rank",
cluster="battle"``: mixedeval's exact equal of arena-rank 0.1.1's intervals), all on the same
data sets; with ``--bootstrap N`` also the two-way bootstrap (prompts and voters drawn
independently, N replicates). A second scenario without voter or prompt effects checks that the
clustered intervals are not conservative where nothing clusters.

With R data sets the Monte-Carlo SE of a coverage near 95% is about sqrt(.95 * .05 / R) per
quantity (the pooled figures' SE is smaller, less than by sqrt(number of quantities)).

    .venv/bin/python benchmarks/calibration_bt_sandwich.py [--reps 400] [--prompts 300]
        [--per-prompt 8] [--judges 150] [--sd-prompt 0.5] [--sd-judge 0.7] [--bootstrap 0]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import mixedeval as me

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bt_helpers import projected_strengths, simulate_voter_prompt  # noqa: E402  (the CI test's data model)

STRENGTHS = np.array([0.0, 0.4, -0.3, 0.8, 0.1])
ALPHA = 400 / np.log(10)
METHODS = {
    "two-way sandwich (judge, prompt)": dict(cluster=("judge", "prompt")),
    "sandwich by prompt": dict(cluster="prompt"),
    "sandwich by judge": dict(cluster="judge"),
    "arena-rank sandwich (unclustered)": dict(estimator="arena-rank", cluster="battle"),
}


def _hits(res, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ratings covered, pairwise differences covered) of one result."""
    names = [f"m{i}" for i in range(len(truth))]
    t = res.table.set_index("model").loc[names]
    elo = 1000 + ALPHA * (truth - truth.mean())
    rat = ((t.elo_conf_low <= elo) & (elo <= t.elo_conf_high)).to_numpy()
    d = res.answer.differences
    ia = d["system_a"].map(lambda s: int(s[1:])).to_numpy()
    ib = d["system_b"].map(lambda s: int(s[1:])).to_numpy()
    true = truth[ia] - truth[ib]
    pairs = ((d.conf_low <= true) & (true <= d.conf_high)).to_numpy()
    return rat, pairs


def one(rep: int, a: argparse.Namespace, sd_p: float, sd_j: float, truth: np.ndarray) -> dict:
    df = simulate_voter_prompt(strengths=STRENGTHS, n_prompts=a.prompts, per_prompt=a.per_prompt, n_judges=a.judges,
                               sd_prompt=sd_p, sd_judge=sd_j, seed=20_000 + rep)
    out = {}
    base = dict(prompt="prompt", judge="judge", ranks=False, interval="sandwich", reference="m0")
    for label, extra in METHODS.items():
        kw = {**base, **extra}
        if "estimator" not in extra:
            kw.update(ties="drop", position_bias=False)
        out[label] = _hits(me.bradley_terry(df, **kw), truth)
    if a.bootstrap:
        res = me.bradley_terry(df, prompt="prompt", judge="judge", ties="drop", position_bias=False,
                               cluster=("judge", "prompt"), n_resamples=a.bootstrap, random_state=rep)
        out["two-way bootstrap (judge, prompt)"] = _hits(res, truth)
    return out


def scenario(a: argparse.Namespace, sd_p: float, sd_j: float) -> None:
    truth = projected_strengths(STRENGTHS, float(np.hypot(sd_p, sd_j)))
    print(f"\n{a.reps} data sets: {a.prompts} prompts x {a.per_prompt} battles, {a.judges} voters, 5 models; "
          f"prompt SD {sd_p}, voter SD {sd_j}")
    t0 = time.perf_counter()
    hits: dict[str, list] = {}
    for rep in range(a.reps):
        for k, v in one(rep, a, sd_p, sd_j, truth).items():
            hits.setdefault(k, []).append(v)
    se = np.sqrt(0.95 * 0.05 / a.reps)
    print(f"({time.perf_counter() - t0:.0f} s) coverage of nominal 95% intervals (Monte-Carlo SE per quantity "
          f"{se:.3f}): ratings m0..m4 and pooled; the 10 pairwise differences pooled (min, max)")
    for k, v in hits.items():
        rat = np.mean(np.vstack([x[0] for x in v]), axis=0)
        pairs = np.mean(np.vstack([x[1] for x in v]), axis=0)
        print(f"  {k:36s} ratings " + " ".join(f"{c:.3f}" for c in rat) + f"  pooled {rat.mean():.3f} | "
              f"pairs pooled {pairs.mean():.3f} ({pairs.min():.3f}, {pairs.max():.3f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--prompts", type=int, default=300)
    ap.add_argument("--per-prompt", type=int, default=8)
    ap.add_argument("--judges", type=int, default=150)
    ap.add_argument("--sd-prompt", type=float, default=0.5)
    ap.add_argument("--sd-judge", type=float, default=0.7)
    ap.add_argument("--bootstrap", type=int, default=0, help="also the two-way bootstrap with this many replicates")
    ap.add_argument("--no-null", action="store_true", help="skip the scenario without voter or prompt effects")
    a = ap.parse_args()
    scenario(a, a.sd_prompt, a.sd_judge)
    if not a.no_null:
        scenario(a, 0.0, 0.0)


if __name__ == "__main__":
    main()
