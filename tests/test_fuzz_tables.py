"""Property-based tests (hypothesis) of table validation (issue 11).

Random tables -- column names with unicode, spaces, quotes, back-quotes, brackets, empty strings,
numbers and duplicates; int / float / bool / object / str / category / datetime / timedelta /
complex / nullable Int64, Float64 and boolean / mixed-object columns; NaN, None, pd.NA, NaT and
inf; 0-30 rows -- go through the data layer (``as_pandas``, the validators,
``describe_design``), ``me.bootstrap`` (numpy only) and ``me.lmm`` (a formula built from the
table's own columns). The properties:

* every call ends in success or a :class:`mixedeval.MixedEvalError` (any other exception is a
  bug);
* the caller's DataFrame is unchanged (values, dtypes, column names, index);
* the process survives (R included).

The runs are reproducible: ``derandomize=True`` and no example database, so CI sees the same
examples every time.
"""
from __future__ import annotations

import math
import string

import numpy as np
import pandas as pd
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import mixedeval as me  # noqa: E402
from mixedeval.data import table as _table  # noqa: E402
from mixedeval.data import validate as V  # noqa: E402
from mixedeval.results import ResultWarning  # noqa: E402

FAST = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
R_CALLS = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])

# ----------------------------------------------------------------------------- strategies
ODD_NAMES = ["", " ", "a b", "it's", 'say "x"', "`", "a`b", "x[1]", "(y)", "0", "1", "ñandú", "日本語", "score",
             "system", "item", "a:b", "a|b", "a~b", "a+b", "-", ".", "..1", "TRUE", "NA", "if", "\t", "x\ny"]
_name_text = st.text(alphabet=st.sampled_from(string.ascii_letters + string.digits + " _.'\"`[]()|~:+-ñ日€\t"),
                     max_size=6)
names = st.one_of(st.sampled_from(ODD_NAMES), _name_text, st.integers(-2, 12))

_MISSING = [None, np.nan, pd.NA]
LABELS = ["a", "b", "c", "A B", "it's", "1", "10", "2", "", "ñ"]


def _with_missing(values: st.SearchStrategy, missing=tuple(_MISSING)) -> st.SearchStrategy:
    return st.one_of(values, values, values, st.sampled_from(list(missing)))


def _column(kind: str, n: int) -> st.SearchStrategy:
    """A pandas Series of ``n`` values of one kind."""
    fin = st.floats(-1e6, 1e6, allow_nan=False)
    if kind == "int":
        return st.lists(st.integers(-5, 5), min_size=n, max_size=n).map(lambda v: pd.Series(v, dtype="int64"))
    if kind == "float":
        vals = st.one_of(fin, fin, st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 1.5]))
        return st.lists(vals, min_size=n, max_size=n).map(lambda v: pd.Series(v, dtype="float64"))
    if kind == "bool":
        return st.lists(st.booleans(), min_size=n, max_size=n).map(lambda v: pd.Series(v, dtype=bool))
    if kind == "object_str":
        return st.lists(_with_missing(st.sampled_from(LABELS)), min_size=n, max_size=n).map(
            lambda v: pd.Series(v, dtype=object))
    if kind == "str":
        return st.lists(st.one_of(st.sampled_from(LABELS), st.none()), min_size=n, max_size=n).map(
            lambda v: pd.Series(v, dtype="str"))
    if kind == "category":
        return st.lists(st.one_of(st.sampled_from(LABELS[:4]), st.none()), min_size=n, max_size=n).map(
            lambda v: pd.Series(v, dtype="category"))
    if kind == "datetime":
        return st.lists(st.one_of(st.integers(0, 10**6), st.none()), min_size=n, max_size=n).map(
            lambda v: pd.Series(pd.to_datetime(v, unit="s")))
    if kind == "timedelta":
        return st.lists(st.one_of(st.integers(0, 10**4), st.none()), min_size=n, max_size=n).map(
            lambda v: pd.Series(pd.to_timedelta(v, unit="s")))
    if kind == "complex":
        return st.lists(st.one_of(st.complex_numbers(max_magnitude=1e3, allow_nan=False, allow_infinity=False), st.just(complex(np.nan, 0))), min_size=n,
                        max_size=n).map(lambda v: pd.Series(v, dtype=complex))
    if kind == "Int64":
        return st.lists(st.one_of(st.integers(-5, 5), st.none()), min_size=n, max_size=n).map(
            lambda v: pd.Series(v, dtype="Int64"))
    if kind == "Float64":
        return st.lists(st.one_of(fin, st.none()), min_size=n, max_size=n).map(lambda v: pd.Series(v, dtype="Float64"))
    if kind == "boolean":
        return st.lists(st.one_of(st.booleans(), st.none()), min_size=n, max_size=n).map(
            lambda v: pd.Series(v, dtype="boolean"))
    if kind == "mixed":
        vals = st.one_of(st.integers(-3, 3), fin, st.sampled_from(LABELS), st.booleans(), st.sampled_from(_MISSING),
                         st.just(1 + 2j), st.just(pd.Timestamp("2024-01-01")), st.just(float("inf")),
                         st.lists(st.integers(0, 2), max_size=2), st.just({"k": 1}))
        return st.lists(vals, min_size=n, max_size=n).map(lambda v: pd.Series(v, dtype=object))
    raise AssertionError(kind)


KINDS = ["int", "float", "bool", "object_str", "str", "category", "datetime", "timedelta", "complex", "Int64",
         "Float64", "boolean", "mixed"]


@st.composite
def tables(draw, max_rows: int = 30, max_cols: int = 6) -> pd.DataFrame:
    """Random tables: random names (duplicates allowed), dtypes and missing values."""
    n = draw(st.integers(0, max_rows))
    k = draw(st.integers(1, max_cols))
    cols = [draw(_column(draw(st.sampled_from(KINDS)), n)) for _ in range(k)]
    col_names = draw(st.lists(names, min_size=k, max_size=k))
    df = pd.concat(cols, axis=1, ignore_index=True) if cols else pd.DataFrame(index=range(n))
    df.columns = pd.Index(col_names, dtype=object)
    return df


@st.composite
def score_tables(draw, max_rows: int = 30) -> tuple[pd.DataFrame, dict[str, str]]:
    """Tables shaped like score tables (a score, a system, an item column, with random names and
    dtypes that are usually right), plus random extra columns: success is reachable."""
    n = draw(st.integers(0, max_rows))
    n_sys = draw(st.integers(1, 3))
    n_items = draw(st.integers(1, 6))
    systems = [LABELS[i] for i in range(n_sys)]
    sys_vals = [systems[i % n_sys] for i in range(n)]
    item_vals = [f"i{(i // n_sys) % n_items}" for i in range(n)]
    score_kind = draw(st.sampled_from(["float", "float", "float", "int", "Float64", "object_str", "complex",
                                       "bool", "mixed", "datetime"]))
    score = draw(_column(score_kind, n))
    if score_kind == "float" and n:  # mostly finite, with a few special values
        base = draw(st.lists(st.floats(0, 100, allow_nan=False), min_size=n, max_size=n))
        special = draw(st.lists(st.sampled_from([None, np.nan, np.inf]), max_size=2))
        vals = base[:]
        for s in special:
            vals[draw(st.integers(0, n - 1))] = s
        score = pd.Series(vals, dtype="float64")
    sys_kind = draw(st.sampled_from(["str", "object", "category", "int", "datetime", "complex", "mixed"]))
    sys = pd.Series(sys_vals, dtype=object)
    if sys_kind == "str":
        sys = sys.astype("str")
    elif sys_kind == "category":
        sys = sys.astype("category")
    elif sys_kind == "int":
        sys = pd.Series([systems.index(v) for v in sys_vals], dtype="int64")
    elif sys_kind == "datetime":
        sys = pd.Series(pd.to_datetime([systems.index(v) for v in sys_vals], unit="D"))
    elif sys_kind == "complex":
        sys = pd.Series([complex(systems.index(v), 1) for v in sys_vals], dtype=complex)
    elif sys_kind == "mixed" and n:
        sys.iloc[0] = draw(st.sampled_from([None, pd.NA, 1, 2.5, (1,), "x"]))
    item = pd.Series(item_vals, dtype=draw(st.sampled_from(["str", object, "category"])))
    if n and draw(st.booleans()):
        item.iloc[draw(st.integers(0, n - 1))] = draw(st.sampled_from([None, np.nan, pd.NA]))
    extra = [draw(_column(draw(st.sampled_from(KINDS)), n)) for _ in range(draw(st.integers(0, 2)))]
    role_names = draw(st.lists(names, min_size=3 + len(extra), max_size=3 + len(extra)))
    df = pd.concat([score, sys, item, *extra], axis=1, ignore_index=True)
    if n and draw(st.booleans()):  # repeat some rows exactly
        df = pd.concat([df, df.iloc[: draw(st.integers(1, n))]], ignore_index=True)
    df.columns = pd.Index(role_names, dtype=object)
    return df, {"score": role_names[0], "system": role_names[1], "item": role_names[2]}


# ----------------------------------------------------------------------------- the properties
class _Snapshot:
    def __init__(self, df: pd.DataFrame):
        self.df = df
        self.copy = df.copy(deep=True)
        self.columns = list(df.columns)
        self.dtypes = [str(t) for t in df.dtypes]
        self.index = df.index.copy()

    def check(self) -> None:
        df = self.df
        assert list(df.columns) == self.columns
        assert [str(t) for t in df.dtypes] == self.dtypes
        pd.testing.assert_index_equal(df.index, self.index)
        pd.testing.assert_frame_equal(df, self.copy, check_exact=True)


def _contract(df: pd.DataFrame, call):
    """Run ``call``; it must succeed or raise a MixedEvalError, and leave ``df`` unchanged."""
    snap = _Snapshot(df)
    try:
        out = call()
    except me.MixedEvalError as exc:
        assert str(exc), "an error without a message"
        out = exc
    snap.check()
    return out


def _str_names(df: pd.DataFrame) -> list[str]:
    return [str(c) for c in df.columns]


@FAST
@given(tables(), st.data())
def test_data_layer_validators(df, data):
    cols = list(df.columns)
    pick = data.draw(st.lists(st.sampled_from(cols), max_size=3)) if cols else []
    score = data.draw(st.sampled_from(cols)) if cols else "score"
    _contract(df, lambda: _table.as_pandas(df))
    _contract(df, lambda: V.require_unique_columns(df))
    _contract(df, lambda: V.require_nonempty(df))
    _contract(df, lambda: V.require_columns(df, pick))
    _contract(df, lambda: V.require_supported_dtypes(df, pick, score=score))
    _contract(df, lambda: V.validate_score_table(df, score, pick))
    _contract(df, lambda: V.validate_score_table(df, score, pick, unique_keys=pick))
    if len(set(map(str, cols))) == len(cols):
        _contract(df, lambda: V.require_finite(df, score))
        for c in pick:
            _contract(df, lambda c=c: V.require_levels(df, c))
        w = _contract(df, lambda: V.duplicated_rows_warning(df, score))
        assert w is None or isinstance(w, (ResultWarning, me.MixedEvalError))
    for bad_level in (data.draw(st.one_of(st.floats(allow_nan=True), st.integers(), st.text(max_size=2),
                                          st.none(), st.booleans())),):
        try:
            v = V.require_level(bad_level)
            assert 0 < v < 1 and not math.isnan(v)
        except me.DataError:
            pass


@FAST
@given(tables(), st.data())
def test_describe_design(df, data):
    cols = list(df.columns)
    factors = data.draw(st.lists(st.sampled_from(cols), max_size=3)) if cols else []
    out = _contract(df, lambda: me.describe_design(df, factors))
    if not isinstance(out, Exception):
        assert out.n_rows == len(df)
        assert len(out.factors) == len(factors)


@FAST
@given(score_tables())
def test_describe_design_score_tables(table):
    df, roles = table
    out = _contract(df, lambda: me.describe_design(df, [roles["system"], roles["item"]]))
    if not isinstance(out, Exception):
        assert out.n_rows == len(df)


def _bootstrap(df, roles):
    return me.bootstrap(df, score=roles["score"], system=roles["system"], item=roles["item"], n_resamples=20,
                        random_state=0, progress=False)


@FAST
@given(score_tables())
def test_bootstrap_score_tables(table):
    df, roles = table
    _contract(df, lambda: _bootstrap(df, roles))


@FAST
@given(tables(), st.data())
def test_bootstrap_random_tables(df, data):
    cols = list(df.columns)
    roles = dict(zip(["score", "system", "item"], data.draw(st.lists(st.sampled_from(cols), min_size=3,
                                                                      max_size=3))))
    _contract(df, lambda: _bootstrap(df, roles))


def _formula(resp: str, fixed: list[str], group: str | None) -> str:
    rhs = " + ".join(fixed) or "1"
    return f"{resp} ~ {rhs}" + (f" + (1|{group})" if group is not None else "")


@R_CALLS
@given(score_tables(max_rows=24), st.data())
def test_lmm_score_tables(table, data):
    df, roles = table
    fixed = [roles["system"]] if data.draw(st.booleans()) else []
    f = _formula(str(roles["score"]), [str(c) for c in fixed], str(roles["item"]))
    _contract(df, lambda: me.lmm(f, df))


@R_CALLS
@given(tables(max_rows=20, max_cols=4), st.data())
def test_lmm_random_tables(df, data):
    names_ = _str_names(df)
    if not names_:
        return
    resp = data.draw(st.sampled_from(names_))
    fixed = data.draw(st.lists(st.sampled_from(names_), max_size=2))
    group = data.draw(st.one_of(st.none(), st.sampled_from(names_)))
    _contract(df, lambda: me.lmm(_formula(resp, fixed, group), df))


def test_r_session_survives_the_fuzzing():
    """After all of the above, R still answers."""
    fit = me.lmm("ter ~ system + (1|sentence_id)", me.datasets.load("kreutzer_ter"))
    assert fit.nobs == 7287
