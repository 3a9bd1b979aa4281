"""Write tests/data/resampling_v01.json: outputs of representative calls of every public
resampling function as mixedeval 0.1.0 computed them (commit 7e913ec, numpy 2.4).

Run once, against 0.1.0, BEFORE the 0.2.0 refactoring of mixedeval/resampling (one resampling
core, glossary names); tests/test_resampling_v01.py reruns the same calls with the 0.2.0 names
and checks

* bootstrap, the paired tests and the variance decomposition: the same numbers (their seeding
  scheme and methods did not change);
* simulate_leaderboard, pooled_run_bootstrap, run_intervals: the same deterministic parts
  (observed values, exact per-language moments, variance split, t and prediction intervals) and
  agreement of the Monte-Carlo parts within Monte-Carlo error (0.2.0 draws them with the
  block-seeded, chunk-invariant scheme of the bootstrap, so the draws differ by design).

The script uses the 0.1.0 names (``seed=``, ``aggregates=``, ``.table()``...), so it does not
run against 0.2.0; it is kept as the record of how the file was made.

    .venv/bin/python tests/make_resampling_v01.py
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

import mixedeval as me

OUT = Path(__file__).resolve().parent / "data" / "resampling_v01.json"


def frame(df: pd.DataFrame) -> dict:
    """A DataFrame as {columns, data} with exact floats (json writes repr) and NaN kept."""
    data = []
    for row in df.itertuples(index=False):
        data.append([v.item() if isinstance(v, np.generic) else v for v in row])
    return {"columns": [str(c) for c in df.columns], "data": data}


def arr(x) -> list:
    return np.asarray(x).tolist()


# ------------------------------------------------------------------------------ inputs
def crossed_table() -> pd.DataFrame:
    rng = np.random.default_rng(101)
    S, K, G, n = 3, 3, 3, 15
    s, k, g, i = np.indices((S, K, G, n))
    return pd.DataFrame({"system": [f"s{v}" for v in s.ravel()], "run": k.ravel(),
                         "lang": np.array(["de", "fr", "ja"])[g.ravel()], "item": i.ravel(),
                         "tp": rng.poisson(3, s.size) + 1, "fp": rng.poisson(1, s.size),
                         "fn": rng.poisson(2, s.size), "score": rng.normal(60, 5, s.size) + s.ravel()})


def paired_inputs():
    rng = np.random.default_rng(102)
    x, y = rng.normal(0.3, 1, 40), rng.normal(0, 1, 40)
    cx = np.column_stack([rng.poisson(3, 60), rng.poisson(1, 60), rng.poisson(1, 60)])
    cy = np.column_stack([rng.poisson(3, 60), rng.poisson(2, 60), rng.poisson(1, 60)])
    small_x, small_y = rng.normal(0.5, 1, 10), rng.normal(0, 1, 10)
    return x, y, cx, cy, small_x, small_y


def replicate_table() -> pd.DataFrame:
    """The README's simulated replicate table (section 11)."""
    rng = np.random.default_rng(7)
    rows = [(m, lang, s, b, mu + shift + run_noise + (0.0 if b == 0 else rng.normal(0, 1.5)))
            for m, mu in [("model_a", 70.0), ("model_b", 68.0), ("model_c", 60.0)]
            for lang, shift in [("de", 5.0), ("fi", 0.0), ("sw", -8.0), ("yo", -15.0)]
            for s, run_noise in enumerate(rng.normal(0, 1.0, 3))
            for b in range(21)]
    return pd.DataFrame(rows, columns=["model", "language", "seed", "replicate", "score"])


def summary_input() -> pd.DataFrame:
    rng = np.random.default_rng(103)
    M, L = 4, 6
    means = rng.normal(60, 6, (M, L)) + np.arange(M)[:, None]
    return pd.DataFrame({"model": np.repeat([f"m{m}" for m in range(M)], L),
                         "language": np.tile([f"l{j}" for j in range(L)], M),
                         "mean": means.ravel(), "sd_seed": rng.uniform(0.3, 1.0, M * L),
                         "sd_boot": rng.uniform(0.5, 1.5, M * L), "n_seeds": 5})


def runs_inputs():
    rng = np.random.default_rng(104)
    l, n = 300, 5
    p = rng.beta(4, 2, l)
    y = rng.integers(0, 3, l)
    correct = rng.random((n, l)) < p
    wrong = (y + rng.integers(1, 3, (n, l))) % 3
    return y, np.where(correct, y, wrong)


# ------------------------------------------------------------------------------ calls
def bootstrap_outputs() -> dict:
    out = {}
    ter = me.datasets.load("kreutzer_ter")
    b = me.bootstrap(ter, score="ter", system="system", item="sentence_id", seed="replication", n_resamples=300,
                     random_state=0, higher_is_better=False)
    out["kreutzer_nested_runs"] = {
        "call": "bootstrap(kreutzer_ter, ter, system, sentence_id, run=replication, n_resamples=300, random_state=0, "
                "higher_is_better=False)",
        "resample": list(b.resample), "estimate": arr(b.estimate), "distribution": arr(b.distribution),
        "summary": frame(b.summary()), "summary_basic": frame(b.summary(ci="basic")),
        "summary_se": frame(b.summary(ci="se", level=0.9)), "pairwise": frame(b.pairwise()),
        "pairwise_reference": frame(b.pairwise(reference="Baseline", adjust="BH")), "ranks": frame(b.ranks()),
        "p_beats": arr(b.p_beats()), "warnings": [w.kind for w in b.warnings], "design": b.design,
    }
    df = crossed_table()
    b = me.bootstrap(df, ["tp", "fp", "fn"], "system", "item", seed="run", group="lang",
                     resample=["groups", "items", "seeds"], statistic="f1", aggregate="median", n_resamples=200,
                     ci="bca", random_state=11)
    out["crossed_f1_median_bca"] = {
        "call": "bootstrap(crossed, [tp, fp, fn], system, item, run=run, group=lang, resample=[groups, items, runs], "
                "statistic=f1, aggregator=median, n_resamples=200, ci=bca, random_state=11)",
        "estimate": arr(b.estimate), "distribution": arr(b.distribution), "summary": frame(b.summary()),
        "pairwise": frame(b.pairwise()), "ranks": frame(b.ranks(level=0.8)),
    }
    b = me.bootstrap(df, "score", "system", "item", seed="run", group="lang", n_groups=2, aggregate="geometric_mean",
                     n_resamples=130, random_state=5)
    out["subsample_geometric"] = {
        "call": "bootstrap(crossed, score, system, item, run=run, group=lang, n_groups=2, aggregator=geometric_mean, "
                "n_resamples=130, random_state=5)",
        "resample": list(b.resample), "distribution": arr(b.distribution), "summary": frame(b.summary()),
    }
    b = me.bootstrap(df, "score", "system", "item", seed="run", group="lang", n_resamples=256, random_state=1,
                     precision="float32")
    out["float32"] = {"call": "bootstrap(crossed, score, system, item, run=run, group=lang, n_resamples=256, "
                              "random_state=1, precision=float32)",
                      "distribution": arr(b.distribution)}
    avg = ter.groupby(["system", "sentence_id"], as_index=False)["ter"].mean()
    b = me.bootstrap(avg, score="ter", system="system", item="sentence_id", n_resamples=500, ci="bca",
                     random_state=0, higher_is_better=False)
    out["kreutzer_avg_bca"] = {
        "call": "bootstrap(kreutzer averaged per sentence, n_resamples=500, ci=bca, random_state=0)",
        "summary": frame(b.summary()), "pairwise": frame(b.pairwise(reference="Baseline", adjust="holm")),
    }
    return out


def paired_outputs() -> dict:
    x, y, cx, cy, sx, sy = paired_inputs()
    out = {}

    def rec(res, keep_null=True):
        d = {"table": frame(res.table()), "count": res.count}
        if keep_null:
            d["null_distribution"] = arr(res.null_distribution)
        return d

    out["bootstrap_mean"] = rec(me.paired_bootstrap_test(x, y, n_resamples=999, random_state=3))
    out["bootstrap_mean_greater_c_over_b"] = rec(me.paired_bootstrap_test(
        x, y, n_resamples=999, alternative="greater", p_value_convention="c_over_b", level=0.9, random_state=3),
        keep_null=False)
    out["bootstrap_f1"] = rec(me.paired_bootstrap_test(cx, cy, statistic="f1", n_resamples=500, random_state=4))
    out["ar_mean"] = rec(me.approximate_randomization(x, y, n_resamples=999, random_state=5))
    out["ar_f1_exact"] = rec(me.approximate_randomization(cx[:9], cy[:9], statistic="f1", exact=True), keep_null=False)
    out["sign_flip_mc"] = rec(me.sign_flip_test(x, y, n_resamples=999, alternative="less", random_state=6))
    out["sign_flip_exact"] = rec(me.sign_flip_test(sx, sy), keep_null=False)
    return out


def leaderboard_outputs() -> dict:
    out = {}
    reps = replicate_table()
    vd = me.decompose_variance(reps)
    out["decompose_variance"] = {"cells": frame(vd.cells), "models": frame(vd.models), "summary": frame(vd.summary())}
    summ = summary_input()
    vs = me.decompose_variance_summary(summ, n_seeds="n_seeds")
    out["decompose_variance_summary"] = {"cells": frame(vs.cells), "models": frame(vs.models)}
    B = 4000
    configs = {
        "fixed_parametric": (vs, dict()),
        "fixed_nonparametric": (vd, dict(noise="nonparametric")),
        "fixed_nonparametric_paired": (vd, dict(noise="nonparametric", pair_noise=True, aggregates=("mean",))),
        "bootstrap_parametric": (vs, dict(languages="bootstrap")),
        "subsample_parametric": (vs, dict(languages="subsample", n_languages=3)),
        "bootstrap_nonparametric_paired": (vd, dict(noise="nonparametric", pair_noise=True, languages="bootstrap",
                                                    aggregates=("mean", "median"))),
    }
    for name, (comp, kw) in configs.items():
        lb = me.simulate_leaderboard(comp, n_resamples=B, random_state=0, progress=False, **kw)
        out[f"simulate_{name}"] = {
            "components": "decompose_variance(readme replicate table)" if comp is vd else
                          "decompose_variance_summary(summary input)",
            "kwargs": {k: list(v) if isinstance(v, tuple) else v for k, v in kw.items()}, "n_resamples": B,
            "aggregates": frame(lb.aggregates), "pairwise": frame(lb.pairwise),
            "language_pairwise": frame(lb.language_pairwise), "ranks": frame(lb.ranks),
        }
    return out


def runs_outputs() -> dict:
    y, pred = runs_inputs()
    out = {}
    B = 4000
    for metric in ("accuracy", "macro_f1"):
        p = me.pooled_run_bootstrap(y_true=y, y_pred=pred, metric=metric, n_resamples=B, random_state=0,
                                    progress=False)
        out[f"pooled_{metric}"] = {"table": frame(p.table()), "order_statistics": list(p.order_statistics)}
        for rr in (False, True):
            r = me.run_intervals(y_true=y, y_pred=pred, metric=metric, n_resamples=B, resample_runs=rr,
                                 random_state=0, progress=False)
            out[f"run_intervals_{metric}{'_resample_runs' if rr else ''}"] = {
                "intervals": frame(r.intervals), "runs": frame(r.runs), "variance": frame(r.variance),
                "estimate": r.estimate, "warnings": [w.kind for w in r.warnings],
            }
    return out


def main() -> None:
    import scipy

    out = {
        "made_by": "tests/make_resampling_v01.py",
        "versions": {"mixedeval": me.__version__, "numpy": np.__version__, "scipy": scipy.__version__,
                     "pandas": pd.__version__},
        "bootstrap": bootstrap_outputs(),
        "paired_tests": paired_outputs(),
        "leaderboard": leaderboard_outputs(),
        "runs": runs_outputs(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
