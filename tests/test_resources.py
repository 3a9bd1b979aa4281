"""Resource guards (mixedeval._resources): memory estimates are checked against a limit before
anything large is allocated; the limit's default, setter, environment variable and parsing; the
fixed-effect model-matrix column count against R's own ``model.matrix``; the CLI's exit status."""
from __future__ import annotations

import math
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval import _resources as rs
from mixedeval.errors import DataError


def _p(formula: str, frame):
    """The parsed formula (the memory guard sits below the data layer and takes it parsed)."""
    return me.parse_formula(formula, [str(c) for c in frame.columns])

TER_CSV = Path(me.__file__).resolve().parent / "datasets_files" / "kreutzer_ter.csv"
BOOT_KW = dict(score="ter", system="system", item="sentence_id", run="replication")


@pytest.fixture(autouse=True)
def default_limit(monkeypatch):
    """Every test starts from the default limit (no setting, no environment variable)."""
    monkeypatch.delenv(rs.ENV_VAR, raising=False)
    me.set_memory_limit(None)
    yield
    me.set_memory_limit(None)


# ------------------------------------------------------------------------------ bootstrap guard
def test_billion_resamples_refused_at_once_without_allocating(ter):
    need = 3 * 8 * 10**9 * 3  # 3 systems x 8 bytes x 1e9 resamples, kept + 2x working copies
    limit = me.get_memory_limit()
    assert limit is not None and need > limit, "this machine has more memory than the test assumes"
    me.bootstrap(ter, n_resamples=2, random_state=0, **BOOT_KW)  # imports done
    t0 = time.perf_counter()
    with pytest.raises(DataError) as exc:
        me.bootstrap(ter, n_resamples=10**9, random_state=0, **BOOT_KW)
    assert time.perf_counter() - t0 < 1.0
    tracemalloc.start()
    with pytest.raises(DataError):
        me.bootstrap(ter, n_resamples=10**9, random_state=0, **BOOT_KW)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 * 2**20  # the pivoted table only, nothing of size n_resamples
    msg = str(exc.value)
    assert "n_resamples=1,000,000,000 x 3 systems x 8 bytes = 22.4 GiB" in msg
    assert "need about 67.1 GiB" in msg
    assert "memory limit of" in msg and "half of the" in msg and "available now, the default" in msg
    assert "change it with me.set_memory_limit or MIXEDEVAL_MEMORY_LIMIT" in msg
    assert "fewer n_resamples" in msg


def test_tight_limit_refuses_a_moderate_bootstrap_and_none_restores(ter):
    first = ter[ter["replication"].astype(str) == "1"]
    kw = dict(score="ter", system="system", item="sentence_id", random_state=0)
    me.set_memory_limit("1MB")
    assert me.get_memory_limit() == 10**6
    limit_msg = r"above mixedeval's memory limit of 976\.6 KiB \(given to me\.set_memory_limit; "
    with pytest.raises(DataError, match=limit_msg):
        me.bootstrap(first, n_resamples=20_000, **kw)  # 3 x 8 x 20,000 x 3 = 1.4 MB
    me.set_memory_limit(None)
    res = me.bootstrap(first, n_resamples=20_000, **kw)
    assert res.distribution.shape == (3, 20_000)
    # a run under the limit goes through, with the same draws
    me.set_memory_limit("2MB")
    small = me.bootstrap(first, n_resamples=2_000, **kw)
    np.testing.assert_array_equal(small.distribution, res.distribution[:, :2_000])


def test_bca_is_guarded_too(ter):
    first = ter[ter["replication"].astype(str) == "1"]
    me.set_memory_limit(10**9)
    with pytest.raises(DataError, match=r"n_resamples=20,000,000 x 3 systems .* fewer n_resamples"):
        me.bootstrap(first, "ter", "system", "sentence_id", n_resamples=20_000_000, ci="bca", random_state=0)
    assert me.bootstrap(first, "ter", "system", "sentence_id", n_resamples=500, ci="bca", random_state=0).ci == "bca"


def test_memory_error_becomes_data_error(ter, monkeypatch):
    bmod = sys.modules["mixedeval.resampling._bootstrap"]

    def boom(*args, **kwargs):
        raise MemoryError("Unable to allocate 7.45 GiB for an array with shape (1000000000,) and data type float64")

    monkeypatch.setattr(bmod, "_block", boom)
    with pytest.raises(DataError) as exc:
        me.bootstrap(ter, n_resamples=200, random_state=0, **BOOT_KW)
    assert "bootstrap ran out of memory (Unable to allocate 7.45 GiB" in str(exc.value)
    assert "fewer n_resamples" in str(exc.value)
    assert isinstance(exc.value.__cause__, MemoryError)


def test_pairwise_batches_give_the_numbers_of_one_batch(ter):
    """pairwise() works on S // 2 pairs at a time; every row equals the unbatched computation."""
    from mixedeval.resampling import _stats as st

    res = me.bootstrap(ter, n_resamples=500, random_state=1, **BOOT_KW)
    pw = res.pairwise(adjust="none")  # best first (issue 38): system_a above system_b, delta in the better direction
    names = [str(x) for x in res.systems]
    a = np.array([names.index(str(x)) for x in pw["system_a"]])
    b = np.array([names.index(str(x)) for x in pw["system_b"]])
    sign = 1.0 if res.higher_is_better else -1.0
    dist = sign * (res.distribution[a] - res.distribution[b])
    est = sign * (res.estimate[a] - res.estimate[b])
    lo, hi = st.intervals(est, dist, "percentile", 0.95)
    null = dist - dist.mean(axis=1, keepdims=True)
    p = st.p_from_count(st.count_extreme(null, est, "two-sided"), 500, "plus_one")
    np.testing.assert_array_equal(pw["conf_low"], lo)
    np.testing.assert_array_equal(pw["conf_high"], hi)
    np.testing.assert_array_equal(pw["p_value"], p)
    np.testing.assert_array_equal(pw["std_error"], dist.std(axis=1, ddof=1))


def test_ranks_row_by_row_equal_numpy_over_axis(ter):
    res = me.bootstrap(ter, n_resamples=777, random_state=2, **BOOT_KW)
    for hib in (True, False):
        rk = res._rank_matrix(hib)
        x = res.distribution if hib else -res.distribution
        ref = 1 + (x[None, :, :] > x[:, None, :]).sum(axis=1)
        np.testing.assert_array_equal(rk, ref)
        tab = res.ranks(higher_is_better=hib).set_index("system").loc[list(res.systems)]  # (rows best first)
        np.testing.assert_array_equal(tab["rank_conf_low"], np.quantile(ref, 0.025, axis=1, method="inverted_cdf"))
        np.testing.assert_array_equal(tab["rank_conf_high"], np.quantile(ref, 0.975, axis=1, method="inverted_cdf"))


# ------------------------------------------------------------------ other resampling functions
def test_paired_tests_refused(monkeypatch):
    me.set_memory_limit("1GB")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    for f in (me.paired_bootstrap_test, me.approximate_randomization, me.sign_flip_test):
        t0 = time.perf_counter()
        with pytest.raises(DataError, match=r"n_resamples=1,000,000,000 x 8 bytes = 7\.5 GiB per copy") as exc:
            f(x, y, n_resamples=10**9, random_state=0)
        assert time.perf_counter() - t0 < 1.0
        assert "fewer n_resamples" in str(exc.value)
    assert me.paired_bootstrap_test(x, y, n_resamples=1000, random_state=0).n_resamples == 1000


def test_leaderboard_refused_whatever_the_chunk_size():
    from mixedeval.resampling import decompose_variance_summary, simulate_leaderboard

    t = pd.DataFrame({"model": np.repeat(["a", "b", "c"], 4), "language": np.tile(list("wxyz"), 3),
                      "mean": np.linspace(1, 2, 12), "sd_total": 0.1})
    vd = decompose_variance_summary(t, sd_total="sd_total")
    me.set_memory_limit("1GB")
    with pytest.raises(DataError, match=r"n_resamples=100,000,000 x 3 models x 3 aggregators") as exc:
        simulate_leaderboard(vd, n_resamples=10**8, progress=False)
    assert "fewer n_resamples" in str(exc.value) and "one block of resamples" in str(exc.value)
    # the draws are made block by block (64 resamples, rows batched within ~96 MB): chunk_size is the
    # progress step only and does not enter the estimate
    with pytest.raises(DataError) as same:
        simulate_leaderboard(vd, n_resamples=10**8, chunk_size=10**8, progress=False)
    assert str(same.value) == str(exc.value)
    ok = simulate_leaderboard(vd, n_resamples=2_000, chunk_size=500, progress=False, random_state=0)
    assert ok.draws.shape == (2_000, 3, 3)
    me.set_memory_limit("100kB")
    with pytest.raises(DataError, match="p_beats"):
        ok.p_beats()


def test_runs_refused():
    from mixedeval.resampling import pooled_run_bootstrap, run_intervals

    rng = np.random.default_rng(0)
    yt = rng.integers(0, 2, 40)
    yp = np.where(rng.random((3, 40)) < 0.8, yt, 1 - yt)
    me.set_memory_limit("1GB")
    with pytest.raises(DataError, match=r"n_resamples=100,000,000 x \(3 runs \+ 2\)"):
        run_intervals(y_true=yt, y_pred=yp, n_resamples=10**8, progress=False)
    with pytest.raises(DataError, match=r"n_resamples=1,000,000,000 x 8 bytes") as exc:
        pooled_run_bootstrap(y_true=yt, y_pred=yp, n_resamples=10**9, progress=False)
    with pytest.raises(DataError) as same:  # chunk_size is the progress step only
        pooled_run_bootstrap(y_true=yt, y_pred=yp, n_resamples=10**9, chunk_size=10**9, progress=False)
    assert str(same.value) == str(exc.value)
    assert pooled_run_bootstrap(y_true=yt, y_pred=yp, n_resamples=10**4, progress=False).n_resamples == 10**4


# ------------------------------------------------------------------------------------ the limit
def test_default_limit_is_half_the_available_memory():
    avail = rs.available_memory()
    assert avail > 0
    limit = me.get_memory_limit()
    assert math.isclose(limit, avail / 2, rel_tol=0.1)  # memory use of other programs moves between calls
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kb = int(next(line for line in meminfo.read_text().splitlines() if line.startswith("MemAvailable")).split()[1])
        assert avail <= kb * 1024 * 1.1


@pytest.mark.parametrize(("value", "expected"), [
    ("8GB", 8 * 10**9), ("8 GB", 8 * 10**9), ("512MiB", 512 * 2**20), ("1.5G", int(1.5 * 2**30)),
    ("100kB", 100_000), ("2TiB", 2 * 2**40), ("123456789", 123_456_789), ("4e9", 4 * 10**9),
    (10**9, 10**9), (np.int64(10**9), 10**9), (2.5e9, 2_500_000_000),
])
def test_limit_forms(value, expected):
    me.set_memory_limit(value)
    assert me.get_memory_limit() == expected


@pytest.mark.parametrize("value", ["none", "off", "unlimited", math.inf])
def test_limit_off(value):
    me.set_memory_limit(value)
    assert me.get_memory_limit() is None
    rs.check_memory(10**18, "anything", "no fix needed")  # no error


@pytest.mark.parametrize("value", ["8 parsecs", "", "-5GB", "0", 0, -1, "150%", "0%", True, [1], "GB", 0.5])
def test_bad_limits(value):
    with pytest.raises(DataError, match="memory limit"):
        me.set_memory_limit(value)


def test_percent_is_of_the_memory_available_at_the_check():
    me.set_memory_limit("25%")
    assert math.isclose(me.get_memory_limit(), rs.available_memory() / 4, rel_tol=0.1)


def test_environment_variable(monkeypatch):
    monkeypatch.setenv(rs.ENV_VAR, "8GB")
    assert me.get_memory_limit() == 8 * 10**9
    monkeypatch.setenv(rs.ENV_VAR, "512MiB")
    assert me.get_memory_limit() == 512 * 2**20
    monkeypatch.setenv(rs.ENV_VAR, " 10% ")
    assert math.isclose(me.get_memory_limit(), rs.available_memory() / 10, rel_tol=0.1)
    monkeypatch.setenv(rs.ENV_VAR, "none")
    assert me.get_memory_limit() is None
    monkeypatch.setenv(rs.ENV_VAR, "1MB")
    with pytest.raises(DataError, match=r"from MIXEDEVAL_MEMORY_LIMIT='1MB'"):
        rs.check_memory(2 * 10**6, "test arrays", "Use less.")
    me.set_memory_limit("3MB")  # the setter wins over the variable
    assert me.get_memory_limit() == 3 * 10**6
    rs.check_memory(2 * 10**6, "test arrays", "Use less.")
    me.set_memory_limit(None)  # back to the variable
    assert me.get_memory_limit() == 10**6
    monkeypatch.setenv(rs.ENV_VAR, "lots")
    with pytest.raises(DataError, match=r"the environment variable MIXEDEVAL_MEMORY_LIMIT must be .*'50%'"):
        me.get_memory_limit()


def test_message_and_sizes():
    me.set_memory_limit("8GiB")
    with pytest.raises(DataError) as exc:
        rs.check_memory(16 * 10**9, "bootstrap output arrays", "Use fewer n_resamples.",
                        detail="n_resamples=1,000,000,000 x 2 systems x 8 bytes")
    assert str(exc.value) == (
        "bootstrap output arrays need about 14.9 GiB (n_resamples=1,000,000,000 x 2 systems x 8 bytes), above "
        "mixedeval's memory limit of 8.0 GiB (given to me.set_memory_limit; change it with me.set_memory_limit or "
        "MIXEDEVAL_MEMORY_LIMIT). Use fewer n_resamples.")
    assert [rs.format_bytes(b) for b in (0, 900, 1024, 1536 * 2**20, 3 * 2**50, 2**70)] == [
        "0 B", "900 B", "1.0 KiB", "1.5 GiB", "3.0 PiB", "1048576.0 PiB"]
    rs.check_memory(8 * 2**30, "exactly the limit", "none")  # <= limit passes


def test_import_stays_light():
    code = ("import sys, mixedeval as me; me.get_memory_limit(); me.set_memory_limit('1GB'); "
            "print(sorted(m for m in ('numpy', 'pandas', 'rpy2', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert {"set_memory_limit", "get_memory_limit"} <= set(me.__all__)


# ------------------------------------------------------------------- fixed-effect model matrix
DESIGNS = [
    "system", "system + src_length", "system * src_length", "system * replication", "system:replication",
    "0 + system + replication", "system + system:src_length", "src_length:system",
    "(system + replication + src_length)^2", "system/replication", "replication %in% system",
    "log(src_length) + factor(src_length)", "poly(src_length, 3) * system", "- 1 + system:replication",
    "system * replication - system", "sentence_id",
]


@pytest.mark.parametrize("rhs", DESIGNS)
def test_model_matrix_columns_equal_r(R, ter, rhs):
    """The column count equals R's ncol(model.matrix(~ rhs, data)) on the same table."""
    frame = ter.assign(replication=ter["replication"].astype("category"))
    terms, intercept = rs.fixed_terms(_p(f"ter ~ {rhs} + (1|sentence_id)", frame), frame)
    assert rs.fixed_effect_columns(frame, terms, intercept) == int(R(f"ncol(model.matrix(~ {rhs}, ter_df))")[0])


def test_model_matrix_columns_from_term_lists(R, ter):
    assert rs.fixed_effect_columns(ter, [["system"], ["system", "src_length"]]) == int(
        R("ncol(model.matrix(~ system + system:src_length, ter_df))")[0]) == 6
    assert rs.fixed_effect_columns(ter, [["system"], ["replication"], ["system", "replication"]]) == 9
    assert rs.fixed_effect_columns(ter, [["sentence_id"]]) == 1041


def test_variance_parameters(ter):
    assert rs.variance_parameters(_p("ter ~ system + (1|sentence_id)", ter), ter) == 2
    assert rs.variance_parameters(_p("ter ~ system + (1 + src_length|sentence_id)", ter), ter) == 4
    assert rs.variance_parameters(_p("ter ~ system + (1|sentence_id) + (1|replication)", ter), ter) == 3
    assert rs.variance_parameters(_p("ter ~ system + (src_length || sentence_id)", ter), ter) == 3
    assert rs.variance_parameters(_p("ter ~ (0 + system | sentence_id)", ter), ter) == 7


def test_fifty_thousand_level_factor_refused_under_the_default_limit():
    n, levels = 100_000, 50_000
    rng = np.random.default_rng(0)
    codes = np.concatenate([np.arange(levels), rng.integers(0, levels, n - levels)])
    frame = pd.DataFrame({"y": rng.normal(size=n),
                          "item": pd.Categorical.from_codes(codes, [f"i{i}" for i in range(levels)]),
                          "g": pd.Categorical.from_codes(rng.integers(0, 20, n), [f"g{i}" for i in range(20)])})
    one_copy = n * levels * 8  # 100,000 x 50,000 x 8 bytes = 40 GB for X alone
    need = rs.model_matrix_bytes(n, levels)
    assert need == 8 * (6 * n * levels + 32 * levels**2) and need > 5 * one_copy
    limit = me.get_memory_limit()  # default: half the available memory
    assert limit is not None and need > limit, "this machine has more memory than the test assumes"
    t0 = time.perf_counter()
    with pytest.raises(DataError) as exc:
        rs.check_fixed_effects_memory(frame, [["item"]])
    assert time.perf_counter() - t0 < 1.0
    msg = str(exc.value)
    assert "100,000 rows x 50,000 columns x 8 bytes = 37.3 GiB per copy" in msg
    assert f"need about {rs.format_bytes(need)}" in msg
    assert "item has 50,000 levels" in msg
    assert "use a random effect instead of a fixed one" in msg.lower() and "(1|item) instead of item" in msg
    assert "fit fewer rows" in msg
    # the same from the formula (terms and variance parameters read from it)
    with pytest.raises(DataError, match=r"\(1\|item\) instead of item"):
        rs.check_fixed_effects_memory(frame, _p("y ~ item + (1|g)", frame))
    # as a random effect the factor costs nothing in the fixed-effect matrix
    rs.check_fixed_effects_memory(frame, _p("y ~ 1 + (1|item)", frame))


def test_fixed_effects_check_passes_small_models_and_respects_the_limit(ter):
    rs.check_fixed_effects_memory(ter, _p("ter ~ system + (1|sentence_id)", ter))
    rs.check_fixed_effects_memory(ter, _p("ter ~ sentence_id + (1|system)", ter))  # 8,262 x 1,041: ~0.7 GB
    me.set_memory_limit("100MB")
    with pytest.raises(DataError, match=r"sentence_id has 1,041 levels.*\(1\|sentence_id\) instead of sentence_id"):
        rs.check_fixed_effects_memory(ter, _p("ter ~ sentence_id + (1|system)", ter))
    rs.check_fixed_effects_memory(ter, _p("ter ~ system + (1|sentence_id)", ter))


# ----------------------------------------------------------------------------------------- CLI
def test_cli_billion_resamples_exits_2_with_the_estimate():
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "mixedeval.cli", "bootstrap", str(TER_CSV), "--score", "ter", "--system", "system",
         "--item", "sentence_id", "--run", "replication", "--n-resamples", "1000000000", "--quiet"],
        capture_output=True, text=True, env={**__import__("os").environ, rs.ENV_VAR: "50%"}, timeout=120)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mixedeval: error: ") and "internal error" not in lines[0]
    assert "--n-resamples 1,000,000,000 x 3 systems x 8 bytes" in lines[0]  # in the command's flags (issue 38)
    assert "memory limit of" in lines[0] and "fewer n_resamples" in lines[0]
    assert out.stdout == ""
    assert time.perf_counter() - t0 < 60
