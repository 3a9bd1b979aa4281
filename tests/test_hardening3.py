"""Issue 33 (hardening III): busy machines, the executor's threads, the guards, summarize /
compare_logs arguments, questions_needed's one-epoch simulation, and the schema validation's fast path.

Each case of the issue that belongs here is one test: a clear :class:`mixedeval.DataError` naming
the argument and the fix, or a right answer checked against an independent computation.
(Bradley-Terry, read_battles and their guards: tests of their own; the image cache lock:
tests/test_image.py.)
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from threadpoolctl import threadpool_info

import mixedeval as me
from mixedeval import _executor
from mixedeval._executor import one_blas_thread, resolve_executor
from mixedeval.data import _logs_schema as sch
from mixedeval.resampling import _draws as dr

ROOT = Path(__file__).resolve().parents[1]


def _blas() -> int | None:
    counts = [d["num_threads"] for d in threadpool_info() if d.get("user_api") == "blas"]
    return max(counts) if counts else None


needs_blas = pytest.mark.skipif(_blas() is None, reason="no BLAS found by threadpoolctl")


# ------------------------------------------------------------------------------ busy machines (part 2)
def test_index_counts_equal_a_bincount_per_row():
    """The count matrix counted a few rows at a time (the rows per pass chosen for speed) equals
    np.bincount of each row on its own, for row counts that are and are not multiples of it."""
    rng = np.random.default_rng(3)
    for rows, n in [(1, 7), (8, 5), (9, 1000), (64, 5000), (67, 3)]:
        idx = rng.integers(0, n, (rows, n), dtype=np.int32)
        ref = np.array([np.bincount(row, minlength=n) for row in idx], dtype=float)
        assert np.array_equal(dr.index_counts(idx, n), ref)


@needs_blas
def test_block_loops_run_with_one_blas_thread_and_restore_the_count():
    before = _blas()
    seen = []

    def one_block(rng, b0, r):
        seen.append(_blas())
        return rng.random((dr.BLOCK, 1))

    dr.run_blocks(np.empty((3 * dr.BLOCK, 1)), np.random.SeedSequence(1), one_block, chunk_size=None,
                  progress=False, work=0.0, desc="t")
    dr.run_block_groups(np.empty((2 * dr.BLOCK, 1)), np.random.SeedSequence(2),
                        lambda rng: rng.random((dr.BLOCK, 3)),
                        lambda x: (seen.append(_blas()), x[:, :1])[1], blocks=2, chunk_size=None, progress=False,
                        desc="t")
    assert seen and set(seen) == {1}
    assert _blas() == before


@needs_blas
def test_one_blas_thread_is_shared_by_concurrent_threads():
    """OpenBLAS has one thread count per process: two threads inside one_blas_thread in crossed
    order (A in, B in, A out, B out) leave the original count, and B still runs with one thread
    after A left (threadpoolctl's own limiter would restore 1 or the original too early)."""
    before = _blas()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, int | None] = {}

    def a():
        with one_blas_thread():
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def b():
        a_in.wait(10)
        with one_blas_thread():
            b_in.set()
            a_out.wait(10)
            seen["b_after_a_left"] = _blas()

    ts = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert seen["b_after_a_left"] == 1
    assert _blas() == before


def _worker_blas() -> int | None:
    """In a worker: numpy loaded, the BLAS thread count its tasks run with."""
    import numpy  # noqa: F401, PLC0415 - loads OpenBLAS in the worker

    return _blas()


@needs_blas
def test_executor_workers_run_with_one_blas_thread():
    assert resolve_executor(2).map(_worker_blas, [()] * 4) == [1, 1, 1, 1]


@needs_blas
def test_one_blas_thread_also_limits_a_blas_library_loaded_after_the_first_call():
    """scipy.linalg loads scipy's own OpenBLAS; imported after the controller was first made (as in
    an executor worker whose first task did not need scipy), it must be limited too (it was not:
    workers ran Bradley-Terry blocks with one thread per core)."""
    code = ("import numpy\n"
            "from threadpoolctl import threadpool_info\n"
            "from mixedeval._executor import _controller, one_blas_thread\n"
            "_controller()\n"
            "import scipy.linalg\n"
            "with one_blas_thread():\n"
            "    print(max(d['num_threads'] for d in threadpool_info() if d['user_api'] == 'blas'))\n")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"


def test_bootstrap_with_one_blas_thread_equals_an_independent_loop():
    """The busy-machine path computes the same numbers: the items bootstrap's replicate means
    equal a direct recomputation from the same index draws (numpy, no count matrices)."""
    rng = np.random.default_rng(3)
    S, N, B = 4, 300, 128
    X = rng.normal(size=(S, N))
    df = pd.DataFrame({"system": np.repeat([f"s{i}" for i in range(S)], N), "item": np.tile(np.arange(N), S),
                       "score": X.ravel()})
    res = me.bootstrap(df, "score", "system", "item", n_resamples=B, random_state=5, progress=False)
    from mixedeval._random import seed_sequence

    ss = seed_sequence(5)
    want = np.empty((S, B))
    for blk in range(B // dr.BLOCK):
        idx = dr.draw_indices(dr.block_generator(ss, blk), N, dr.BLOCK)
        want[:, blk * dr.BLOCK:(blk + 1) * dr.BLOCK] = X[:, idx].mean(axis=2)
    np.testing.assert_allclose(res.distribution, want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------ threads and the pool
def test_a_failing_call_in_one_thread_does_not_kill_another_threads_workers():
    """Two executor=2 calls in two threads; one's task raises while its other tasks still run:
    it stops (its pool is killed), the other call keeps its workers and returns every result."""
    runner = resolve_executor(2)
    runner.map(abs, [(-1,), (-2,)])  # a kept pool exists
    out: dict[str, object] = {}

    def guilty():
        try:
            out["guilty"] = runner.map(time.sleep, [(0.3,), ("not a number",), (3.0,), (3.0,)])
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            out["guilty"] = exc

    def innocent():
        try:
            out["innocent"] = runner.map(time.sleep, [(1.0,)] * 4)
        except Exception as exc:  # noqa: BLE001
            out["innocent"] = exc

    t1 = threading.Thread(target=guilty)
    t1.start()
    time.sleep(0.1)
    t2 = threading.Thread(target=innocent)
    t2.start()
    t1.join(120)
    t2.join(120)
    assert isinstance(out["guilty"], TypeError)
    assert out["innocent"] == [None] * 4, out["innocent"]
    assert runner.map(abs, [(-3,)]) == [3]  # and the next call has a pool
    assert not _executor._EXTRA_POOLS  # the extra pools are gone (shut down or kept as the pool)


# ------------------------------------------------------------------------------ guards
@pytest.mark.parametrize("value", [10**400, 1e300, "1e400", "1e400GB", "1e999h", "99999999999999999999999999d",
                                   "1e30TB"])
def test_absurd_limits_are_clear_errors(value):
    from mixedeval import _resources

    for setter in (me.set_time_limit, me.set_memory_limit):
        try:
            setter(None)
            with pytest.raises(me.DataError, match="too large|must be"):
                setter(value)
            assert _resources._setting is None and _resources._time_setting is None  # unchanged  # noqa: SLF001
        finally:
            setter(None)


def test_absurd_limit_in_the_environment_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("MIXEDEVAL_TIME_LIMIT", "1e400")
    me.set_time_limit(None)
    with pytest.raises(me.DataError, match="MIXEDEVAL_TIME_LIMIT.*too large.*'none'"):
        me.get_time_limit()
    monkeypatch.setenv("MIXEDEVAL_MEMORY_LIMIT", "1e400GB")
    me.set_memory_limit(None)
    with pytest.raises(me.DataError, match="MIXEDEVAL_MEMORY_LIMIT.*too large"):
        me.get_memory_limit()


def test_ordinary_limits_still_work():
    try:
        me.set_time_limit("2h")
        assert me.get_time_limit() == 7200
        me.set_time_limit(float("inf"))
        assert me.get_time_limit() is None
        me.set_memory_limit("1.5GB")
        assert me.get_memory_limit() == 1_500_000_000
        me.set_memory_limit(10**12)
        assert me.get_memory_limit() == 10**12
    finally:
        me.set_time_limit(None)
        me.set_memory_limit(None)


def test_rank_intervals_of_many_draws_is_the_guards_refusal_not_a_memory_error():
    rng = np.random.default_rng(0)
    k, n = 300, 20_000
    names = [f"m{i}" for i in range(k)]
    est = pd.Series(np.linspace(0, 3, k), index=names)
    draws = est.to_numpy() + rng.normal(0, 0.3, (n, k))
    try:
        me.set_memory_limit("64MB")
        with pytest.raises(me.DataError, match=r"rank intervals.*20,000 draws.*memory limit"):
            me.rank_intervals(est, draws=draws)
    finally:
        me.set_memory_limit(None)


def test_pair_sds_one_name_at_a_time_equal_the_explicit_differences():
    from mixedeval._rankings import _pair_index, _pair_sd

    D = np.random.default_rng(1).normal(size=(50, 7)) @ np.diag(np.arange(1.0, 8.0))
    a, b = _pair_index(7)
    want = np.array([np.std(D[:, j] - D[:, i], ddof=1) for i, j in zip(a, b)])
    np.testing.assert_allclose(_pair_sd(D), want, rtol=1e-13)


# ------------------------------------------------------------------------------ summarize / compare_logs
@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 40
    return pd.DataFrame({"system": ["A"] * n + ["B"] * n, "item": list(range(n)) * 2,
                         "score": np.r_[rng.normal(0.6, 0.2, n), rng.normal(0.5, 0.2, n)],
                         "grp": [i // 4 for i in range(n)] * 2})


def test_summarize_cluster_values_that_are_lists_are_refused(table):
    bad = table.assign(grp=[[i % 3, 1] for i in range(len(table))])
    with pytest.raises(me.DataError, match=r"cluster.*lists.*one label per question"):
        me.summarize(bad, cluster="grp")
    assert isinstance(table["grp"].iloc[0], (int, np.integer))  # the user's frame is untouched


def test_compare_logs_cluster_values_that_are_lists_are_refused(table):
    bad = table.assign(grp=[[i % 3, 1] for i in range(len(table))])
    with pytest.raises(me.DataError, match="cluster"):
        me.compare_logs(bad, metric="score", cluster="grp", n_resamples=100, plan=False)


@pytest.mark.parametrize("kw", [{"system": 5}, {"item": 3.0}, {"score": ["score"]}])
def test_summarize_column_arguments_that_are_not_names_are_refused(table, kw):
    with pytest.raises(me.DataError, match=f"{next(iter(kw))}= must name a column"):
        me.summarize(table, **kw)


def test_system_fields_that_are_not_strings_are_refused_for_logs():
    logs = sorted((ROOT / "mixedeval" / "datasets_files" / "llm_inspect_logs").glob("*.eval"))
    for bad in (5, ["model", 5]):
        with pytest.raises(me.DataError, match="system= names one or more log fields as strings"):
            me.read_eval_logs(logs, system=bad)
        with pytest.raises(me.DataError, match="system= names one or more log fields as strings"):
            me.compare_logs(logs, system=bad, metric="match", n_resamples=100)
    with pytest.raises(me.DataError, match="system= must name a column"):
        me.summarize(logs, system=5, metric="match")


def test_summarize_refuses_repeated_questions_without_an_epoch_column(table):
    dup = pd.concat([table, table.iloc[:3]], ignore_index=True)
    with pytest.raises(me.DataError, match=r"6 rows repeat a question.*drop_duplicates.*epoch="):  # 3 x 2 copies
        me.summarize(dup)
    with pytest.raises(me.DataError, match=r"repeat a \(system, item\)"):  # compare_logs reads tables the same way
        me.compare_logs(dup, metric="score", n_resamples=100)
    ok = pd.concat([table.assign(epoch=1), table.assign(epoch=2)], ignore_index=True)
    assert me.summarize(ok, epoch="epoch").table["n_epochs"].max() == 2  # named epochs are fine


@pytest.mark.parametrize("systems", [{"A": "x", "B": "y"}, ["A", "B"]])
def test_summarize_refuses_systems_on_a_table(table, systems):
    with pytest.raises(me.DataError, match="systems= is refused for a table"):
        me.summarize(table, systems=systems)


# ------------------------------------------------------------------------------ questions_needed
Z80 = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)


@pytest.fixture(scope="module")
def one_epoch_pilot():
    """400 questions, one epoch, continuous scores: d_i = A_i - B_i has variance 2 x 0.15^2 = 0.045."""
    rng = np.random.default_rng(0)
    n0 = 400
    mu = rng.normal(0.5, 0.2, n0)
    a = mu + 0.02 + rng.normal(0, 0.15, n0)
    b = mu + rng.normal(0, 0.15, n0)
    return pd.DataFrame({"system": ["A"] * n0 + ["B"] * n0, "item": list(range(n0)) * 2, "score": np.r_[a, b]})


def test_one_epoch_continuous_pilot_closed_form_and_simulation_agree_with_independent_computations(one_epoch_pilot):
    """The simulation answered 2 questions where the closed form answered 260: the simulation was
    wrong (a one-epoch pilot has no within-question variance, NaN, and NaN question differences
    counted as rejections). Both are checked against computations made here: Miller's formula by
    hand from the pilot's question differences, and a brute-force simulation of the paired t test
    (scipy) from the normal model those differences estimate."""
    effect = 0.03
    res = me.questions_needed(one_epoch_pilot, effect, metric="score", n_sim=400, random_state=2)
    tab = res.table.set_index("method")
    wide = one_epoch_pilot.pivot(index="item", columns="system", values="score")
    var_d = float((wide["A"] - wide["B"]).var(ddof=1))
    n_hand = math.ceil(Z80**2 * var_d / effect**2)
    assert tab.loc["closed_form", "n_questions"] == n_hand
    n_sim = int(tab.loc["simulation", "n_questions"])
    assert abs(n_sim / n_hand - 1) < 0.15, (n_sim, n_hand)  # not 2

    # brute force: paired t tests of n questions whose differences are N(effect, var_d), at the
    # simulation's n and at half of it
    rng = np.random.default_rng(11)

    def power(n: int, reps: int = 3000) -> float:
        d = rng.normal(effect, math.sqrt(var_d), size=(reps, n))
        return float(np.mean(stats.ttest_1samp(d, 0.0, axis=1).pvalue < 0.05))

    assert abs(power(n_sim) - 0.8) < 0.05
    assert power(n_sim // 2) < 0.6
    assert abs(power(n_hand) - 0.8) < 0.05


def test_one_epoch_binary_pilot_simulation_is_near_the_closed_form():
    rng = np.random.default_rng(4)
    n0 = 300
    p = rng.uniform(0.2, 0.9, n0)
    a, b = rng.random(n0) < np.clip(p + 0.05, 0, 1), rng.random(n0) < p
    df = pd.DataFrame({"system": ["A"] * n0 + ["B"] * n0, "item": list(range(n0)) * 2,
                       "score": np.r_[a, b].astype(float)})
    tab = me.questions_needed(df, 0.05, metric="score", n_sim=400, random_state=1).table.set_index("method")
    assert abs(tab.loc["simulation", "n_questions"] / tab.loc["closed_form", "n_questions"] - 1) < 0.2


@pytest.mark.parametrize("effect", [1e-9, 1e-6, 1e-200])
def test_absurdly_small_effects_are_refused_with_the_number_of_questions(one_epoch_pilot, effect):
    wide = one_epoch_pilot.pivot(index="item", columns="system", values="score")
    var_d = float((wide["A"] - wide["B"]).var(ddof=1))
    ratio = Z80 * math.sqrt(var_d) / effect
    n = ratio * ratio  # Miller's n by hand (inf for 1e-200)
    size = re.escape(f"about {n:.3g}" if math.isfinite(n) else "more than 1e308")
    with pytest.raises(me.DataError, match=rf"effect={effect:g}.*would take {size} questions.*effect=0.01"):
        me.questions_needed(one_epoch_pilot, effect, metric="score", n_sim=0)
    with pytest.raises(me.DataError, match="would take"):
        me.questions_needed(effect=effect, sd=0.3)


@pytest.mark.parametrize("kw, match", [({"epochs": 2.5}, "epochs must be a positive integer"),
                                       ({"epochs": "3"}, "epochs must be a positive integer"),
                                       ({"sd": "x"}, "sd must be a number"),
                                       ({"mean": "x"}, "mean must be a number"),
                                       ({"sd": 0.3, "within_variance": "big"}, "within_variance must be a number")])
def test_questions_needed_bad_arguments_are_clear_errors(kw, match):
    with pytest.raises(me.DataError, match=match):
        me.questions_needed(effect=0.03, **({"sd": 0.3} | kw if "mean" not in kw else kw))


def test_compare_logs_refuses_an_unplannable_effect_or_n_sim_instead_of_a_quiet_no_plan(table):
    with pytest.raises(me.DataError, match="would take about .* questions"):
        me.compare_logs(table, metric="score", effect=1e-9, n_resamples=100)
    with pytest.raises(me.DataError, match=r"n_sim=1,000,000,000,000.*time limit"):
        me.compare_logs(table, metric="score", n_sim=10**12, n_resamples=100)


def test_power_from_logs_cli_refuses_a_tiny_effect_without_an_internal_error(tmp_path, one_epoch_pilot):
    path = tmp_path / "pilot.csv"
    one_epoch_pilot.to_csv(path, index=False)
    out = subprocess.run([sys.executable, "-m", "mixedeval.cli", "power", "--from-logs", str(path), "--metric",
                          "score", "--points", "1e-7", "--n-sim", "0", "--json"], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 2, out.stdout + out.stderr
    assert "internal error" not in out.stdout + out.stderr
    assert "questions per system" in json.loads(out.stdout)["error"]


# ------------------------------------------------------------------------------ schema fast path
_VALUES = [None, True, False, 0, 1, -2, 1.5, float("nan"), "", "x", [], [1], ["a", "b"], ["a", 1], {}, {"a": 1},
           {"doc_id": 1, "metrics": ["acc"]}, {"doc_id": "7", "metrics": []}, {"doc_id": True, "metrics": ["acc"]},
           {"doc_id": 1, "metrics": "acc"}, {"doc_id": 1.0, "metrics": ["acc"]}, {"metrics": ["acc"]},
           {"doc_id": 1, "metrics": ["acc"], "filter": None}, {"doc_id": 1, "metrics": ["acc"], "filter": 3},
           {"doc_id": 1, "metrics": [None]}, [{"instance_id": "i", "stats": []}],
           [{"instance_id": "i", "stats": [{"name": {"name": "em"}, "mean": 1}]}],
           [{"instance_id": "i", "stats": [{"name": {"name": 3}}]}], [{"instance_id": None, "stats": []}],
           {"model_name": "m", "config": {"model_args": "a=1"}}, {"model_name": ["m"]},
           {"config": {"model_args": {"a": 1}}}, {"config": {"model_args": 3}}, {"versions": {"t": 1}},
           {"versions": []}, {"configs": {"t": None}}, {"configs": {"t": 3}}]
_SPECS = [sch.LMEVAL_SAMPLE, sch.LMEVAL_RESULTS, sch.HELM_STATS, sch.HELM_RUN_SPEC, sch.HELM_INSTANCES, sch.STR,
          sch.NUM, sch.INT, sch.BOOL, sch.optional(sch.NUM), sch.ListOf(sch.OneOf((sch.INT, sch.STR)))]


@pytest.mark.parametrize("spec", _SPECS, ids=lambda s: s.describe()[:30])
def test_compiled_shape_predicates_agree_with_first_error(spec):
    """The fast path answers exactly as the path-building check: valid where first_error finds
    nothing, and validate() raises first_error's message otherwise."""
    for v in _VALUES:
        err = spec.first_error(v, "$")
        if sch._predicate(spec)(v):  # noqa: SLF001
            assert err is None, (spec, v)
        if err is None:
            assert sch.validate(v, spec, "f") is v
        else:
            with pytest.raises(me.DataError, match=r"f: at "):
                sch.validate(v, spec, "f")
