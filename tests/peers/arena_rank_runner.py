"""Run arena-rank (LMArena's ranking package, JAX) on battle tables: the peer side of
tests/test_arena_rank_parity.py and benchmarks/bench_bradley_terry.py --sandwich.

Runs in arena-rank's own interpreter (it pins numpy 2.3.3, so it lives in a separate venv:
scripts/setup_peers.sh). Reads a JSON list of jobs from argv[1] and writes a JSON list of
results to argv[2]. A job: {"csv": path, "features": [columns] or null (Bradley-Terry) /
the contextual model's feature columns, "reweighted": bool, "model_kw": {...} (e.g. ftol, gtol,
max_iter), "repeat": n (timings)}. A result: competitors, ratings, rating_lower, rating_upper,
variances, coeffs (contextual), seconds and cpu_seconds (each repeat's wall and CPU time of
all its threads; the first includes JAX's compilation), version.
"""
import json
import sys
import time
from importlib.metadata import version

import numpy as np
import pandas as pd
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
from arena_rank.utils.data_utils import ContextualPairDataset, PairDataset


def run(job):
    df = pd.read_csv(job["csv"])
    feats = job.get("features")
    kw = job.get("model_kw") or {}
    times, cpu = [], []
    for _ in range(int(job.get("repeat", 1))):
        t0, c0 = time.perf_counter(), time.process_time()
        if feats:
            ds = ContextualPairDataset.from_pandas(df, feats, reweighted=bool(job.get("reweighted", True)))
            model = ContextualBradleyTerry(len(ds.competitors), len(feats), **kw)
        else:
            ds = PairDataset.from_pandas(df, reweighted=bool(job.get("reweighted", False)))
            model = BradleyTerry(len(ds.competitors), **kw)
        out = model.compute_ratings_and_cis(ds, ci_method="sandwich")
        np.asarray(out["ratings"])
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    res = {"competitors": list(map(str, out["competitors"])), "seconds": times, "cpu_seconds": cpu,
           "version": version("arena-rank")}
    for key in ("ratings", "rating_lower", "rating_upper", "variances", "coeffs"):
        if out.get(key) is not None:
            res[key] = np.asarray(out[key], dtype=float).tolist()
    return res


if __name__ == "__main__":
    jobs = json.load(open(sys.argv[1]))
    json.dump([run(j) for j in jobs], open(sys.argv[2], "w"))
