"""Engine: lazy start, conversion rules, errors as exceptions, captured warnings, the lock."""
from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.engine import convert, session


def test_import_is_cheap_and_does_not_start_r():
    code = (
        "import time, sys; t = time.perf_counter(); import mixedeval; dt = time.perf_counter() - t; "
        "print(dt, 'rpy2' in sys.modules, 'pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert float(out[0]) < 0.5
    assert out[1] == "False", "import mixedeval must not import rpy2 / start R"
    assert out[2] == "False", "import mixedeval must not import pandas"


def test_r_round_trip_types(R):
    df = pd.DataFrame(
        {
            "x": [1.5, np.nan, 3.0],
            "i": pd.array([1, None, 3], dtype="Int64"),
            "b": [True, False, True],
            "s": ["b", None, "a"],
            "c": pd.Categorical(["lo", "hi", "lo"], categories=["zz", "lo", "hi"]),
            "col with space [1]": [1.0, 2.0, 3.0],
        }
    )
    before = df.copy()
    import rpy2.rinterface as ri

    ri.globalenv["conv_df"] = convert.to_r(df)
    assert list(R("is.na(conv_df$x)")) == [False, True, False]
    assert list(R("is.na(conv_df$i)")) == [False, True, False]
    assert list(R("conv_df$b")) == [True, False, True]
    assert list(R("levels(conv_df$s)")) == ["a", "b"]  # code-point order
    assert list(R("is.na(conv_df$s)")) == [False, True, False]
    assert list(R("levels(conv_df$c)")) == ["lo", "hi"]  # category order kept, unused dropped
    assert bool(R("is.factor(conv_df$c)")[0])
    assert list(R("names(conv_df)"))[-1] == "col with space [1]"
    assert int(R("nrow(conv_df)")[0]) == 3
    pd.testing.assert_frame_equal(df, before)  # caller's frame untouched
    back = convert.from_r(R("conv_df", raw=True))
    assert list(back["c"].cat.categories) == ["lo", "hi"]
    assert np.isnan(back["x"][1]) and back["s"].isna()[1]


def test_nan_becomes_real_na_not_nan(R):
    import rpy2.rinterface as ri

    ri.globalenv["v_na"] = convert.float_vector([np.nan, 1.0])
    # R distinguishes NA_real_ (is.na & !is.nan) from NaN
    assert list(R("is.nan(v_na)")) == [False, False]
    assert list(R("is.na(v_na)")) == [True, False]


def test_r_error_becomes_exception_and_session_survives(ter):
    with pytest.raises(me.RError) as info:  # passes the formula check; R refuses the NaN response
        me.lmm("log(ter - 2) ~ system + (1|sentence_id)", ter)
    assert "non-NA" in info.value.r_message  # log of negatives: NaN rows dropped, none left
    with pytest.raises(me.RError) as info:  # the escape hatch sends it to R, which fails
        me.lmm("ter ~ system + (1|sentence_id) + offset(nosuchfunction(src_length))", ter, allow_r_code=True)
    assert "nosuchfunction" in info.value.r_message
    fit = me.lmm("ter ~ system + (1|sentence_id)", ter)
    assert fit.nobs == 7287


def test_r_error_is_mixedeval_error():
    assert issubclass(me.RError, me.MixedEvalError)
    assert issubclass(me.DataError, me.MixedEvalError)
    with pytest.raises(me.RError, match="boom"):
        session.call("me_call_test_stop")


def test_warnings_and_messages_are_captured():
    res = session.call("me_call_test_conditions")
    assert res.warnings == ("first warning", "second warning")
    assert res.messages == ("a message",)
    assert res.value == 42


def test_lock_serialises_threads(ter):
    small = ter[ter["sentence_id"].isin(sorted(ter["sentence_id"].unique())[:80])]

    def work(i):
        f = me.lmm("ter ~ system + (1|sentence_id)", small)
        return f.loglik

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(work, range(8)))
    assert np.allclose(results, results[0], rtol=0, atol=0)


def test_million_row_conversion_is_fast():
    rng = np.random.default_rng(0)
    n = 1_000_000
    df = pd.DataFrame(
        {
            "score": rng.random(n),
            "system": pd.Categorical(rng.choice(["a", "b", "c"], n)),
            "item": pd.Categorical(rng.integers(0, 5000, n).astype(str)),
            "seed": rng.integers(0, 5, n),
            "length": rng.random(n),
        }
    )
    with session.lock:
        session._start()
        t = time.perf_counter()
        convert.to_r(df)
        dt = time.perf_counter() - t
    assert dt < 5.0  # generous for loaded CI machines; the benchmark measures the real target (< 1 s)


def test_zero_length_vectors_and_empty_frames(R):
    for code, dtype in (("numeric(0)", float), ("integer(0)", np.int64), ("logical(0)", bool), ("character(0)", object)):
        out = convert.from_r(R(code, raw=True))
        assert isinstance(out, np.ndarray) and out.size == 0 and out.dtype == dtype
    empty = convert.from_r(R("data.frame(a = numeric(0), f = factor(character(0), levels = 'x'))", raw=True))
    assert list(empty.columns) == ["a", "f"] and len(empty) == 0


def test_public_functions_not_shadowed_by_submodules():
    """No public function shares its name with a submodule (internals live in private modules),
    so importing any submodule leaves ``me.lmm`` / ``me.report`` the functions, and importing a
    submodule path keeps working as an attribute chain."""
    import importlib.util

    clash = [n for n, (_, attr) in me._LAZY.items()  # noqa: SLF001
             if attr is not None and importlib.util.find_spec(f"mixedeval.{n}") is not None]
    assert not clash, clash
    code = (
        "import types\nfrom mixedeval.inference._lmm import LMMFit\nimport mixedeval._report.blocks\n"
        "import mixedeval as me\nimport mixedeval.inference.anova\n"
        "assert callable(me.lmm) and not isinstance(me.lmm, types.ModuleType), me.lmm\n"
        "assert callable(me.report) and not isinstance(me.report, types.ModuleType), me.report\n"
        "assert callable(mixedeval._report.blocks.fmt_p)\nprint('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_many_factor_levels_round_trip(R):
    import rpy2.rinterface as ri

    labels = [f"item {i} é日本" for i in range(500)] + ["with\x1fsep"]
    df = pd.DataFrame({"f": pd.Categorical(labels[::-1], categories=labels), "g": [f"k{i}" for i in range(501)]})
    ri.globalenv["lv_df"] = convert.to_r(df)
    assert list(R("levels(lv_df$f)")) == labels  # not packed: one level holds the separator
    assert list(R("levels(lv_df$g)")) == sorted(df["g"])  # packed
    assert list(R("as.character(lv_df$g)")) == list(df["g"])
    assert list(R("as.character(lv_df$f)")) == labels[::-1]


def test_helpers_live_in_their_own_environment(R):
    """r/*.R is sourced into one environment (a child of the global one), not the workspace: no
    helper is in the global environment, a workspace object of a helper's name shadows nothing,
    and me_call runs only helpers of the library."""
    import rpy2.rinterface as ri

    env = session.helper_env()
    assert "me_fit_summary" in set(env.keys()) and "me_call" in set(env.keys())
    assert not [k for k in ri.globalenv.keys() if k.startswith("me_")]
    assert bool(ri.baseenv["identical"](ri.baseenv["parent.env"](env), ri.globalenv)[0])  # base R found via it
    ri.globalenv["me_call_test_stop"] = ri.baseenv["identity"]  # a user's object with a helper's name
    ri.globalenv["me_not_a_helper"] = ri.baseenv["identity"]
    try:
        with pytest.raises(me.RError, match="boom"):  # still the helper, not the workspace object
            session.call("me_call_test_stop")
        with pytest.raises(me.RError, match="no mixedeval R helper named 'me_not_a_helper'"):
            session.call("me_not_a_helper")
    finally:
        R("rm(me_call_test_stop, me_not_a_helper)")
    assert str(ri.baseenv["environmentName"](env)[0]) == session.HELPER_ENV_NAME


def test_one_classifier_of_r_conditions():
    from mixedeval.engine.conditions import classify, r_warnings

    assert classify("Model failed to converge with max|grad| = 0.01 (tol = 0.002, component 1)") == "convergence"
    assert classify("boundary (singular) fit: see help('isSingular')", "message") == "singular"
    assert classify("refitting model(s) with ML (instead of REML)", "message") == "refit_ml"
    assert classify("Note: D.f. calculations have been disabled because the number of observations exceeds 3000.",
                    "message") == "df_fallback"
    assert classify('Note: adjust = "tukey" was changed to "sidak"\nbecause "tukey" is only appropriate for one set of '
                    "pairwise comparisons", "message") == "adjust_changed"
    assert classify("NAs introduced by coercion") == "r_warning"
    assert classify("some note", "message") == "r_message"
    res = session.call("me_call_test_conditions")
    ws = r_warnings(res, "lme4")
    assert [(w.kind, w.message, w.source) for w in ws] == [
        ("r_warning", "first warning", "lme4"), ("r_warning", "second warning", "lme4"), ("r_message", "a message", "lme4")]


def test_bytes_round_trip_as_r_raw_vectors(R):
    """bytes <-> R raw vectors (serialized models travel to workers this way), checked against R's
    own view of the vector."""
    from mixedeval.engine import convert

    data = bytes(range(256)) + b"\x00tail"
    rv = convert.to_r(data)
    check = R("function(x) c(is.raw(x), length(x), as.integer(x[256]), as.integer(x[1]))", raw=True)
    assert [int(v) for v in check(rv)] == [1, 261, 255, 0]
    assert convert.from_r(rv) == data
    assert convert.from_r(R("raw(0)", raw=True)) == b""
