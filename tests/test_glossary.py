"""The glossary (docs/concepts/glossary.md) enforced on every public callable by inspecting signatures.

* randomness: one parameter, ``random_state``; no ``seed``/``rng``/``nsim``-style synonyms;
* runs of a stochastic system: the column parameter is ``run``;
* draws: ``n_resamples`` for resampling and parametric bootstraps, ``n_sim`` for simulations
  from a fitted model (never ``n_boot``, ``pb_nsim``, ``nsim``, ``B``);
* ``alternative`` takes ``"two-sided" | "less" | "greater"``;
* every result object has its main table as ``.table``; no table column shadows a pandas
  DataFrame method.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.results import ResultMixin

FORBIDDEN = {
    "seed": "random_state (randomness) or run (the column of runs)",
    "seeds": "run", "rng": "random_state", "random_seed": "random_state", "nsim": "n_sim or n_resamples",
    "n_boot": "n_resamples", "pb_nsim": "n_resamples", "n_bootstrap": "n_resamples", "B": "n_resamples",
    "n_perm": "n_resamples", "n_permutations": "n_resamples", "conf_level": "level", "confidence_level": "level",
}
ALTERNATIVES = {"two-sided", "less", "greater"}


def _modules():
    out = []
    for info in pkgutil.walk_packages(me.__path__, "mixedeval."):
        if info.name.endswith("__main__"):
            continue
        out.append(importlib.import_module(info.name))
    return out


def _public_callables():
    seen, out = set(), []
    for name in me._LAZY:  # noqa: SLF001 - the package's own export table
        obj = getattr(me, name)
        if inspect.ismodule(obj):
            continue
        out.append((f"me.{name}", obj))
    for mod in _modules():
        if any(part.startswith("_") for part in mod.__name__.split(".")):
            continue  # private modules hold internals
        for name, obj in vars(mod).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            if inspect.isfunction(obj):
                out.append((f"{mod.__name__}.{name}", obj))
            if inspect.isclass(obj) and issubclass(obj, ResultMixin):
                for mname, meth in vars(obj).items():
                    if not mname.startswith("_") and callable(meth):
                        out.append((f"{mod.__name__}.{name}.{mname}", meth))
    result = []
    for label, obj in out:
        if id(obj) not in seen:
            seen.add(id(obj))
            result.append((label, obj))
    return result


def _params(obj):
    try:
        return inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return {}


def test_no_synonyms_in_any_public_signature():
    bad = []
    for label, obj in _public_callables():
        for p in _params(obj):
            if p in FORBIDDEN:
                bad.append(f"{label}({p}=...): use {FORBIDDEN[p]}")
    assert not bad, "\n".join(bad)


def test_alternative_takes_the_glossary_values():
    bad = []
    for label, obj in _public_callables():
        p = _params(obj).get("alternative")
        if p is not None and p.default is not inspect.Parameter.empty and p.default not in ALTERNATIVES:
            bad.append(f"{label}(alternative={p.default!r})")
    assert not bad, "\n".join(bad)


def test_randomness_is_random_state_and_draws_are_named_consistently():
    """A callable that draws takes ``random_state``; its count is ``n_resamples`` or ``n_sim``."""
    bad = []
    for label, obj in _public_callables():
        ps = _params(obj)
        if ("n_resamples" in ps or "n_sim" in ps) and "random_state" not in ps:
            bad.append(f"{label}: draws ({'n_resamples' if 'n_resamples' in ps else 'n_sim'}) without random_state")
    assert not bad, "\n".join(bad)


def test_every_result_class_has_a_table():
    missing = []
    for mod in _modules():
        for name, obj in vars(mod).items():
            if (inspect.isclass(obj) and issubclass(obj, ResultMixin) and obj is not ResultMixin
                    and not name.startswith("_") and obj.__module__ == mod.__name__):
                fields = getattr(obj, "__dataclass_fields__", {})
                if "table" not in fields and not hasattr(obj, "table"):
                    missing.append(f"{mod.__name__}.{name}")
    assert not missing, missing


def _no_shadowing(df: pd.DataFrame, label: str):
    shadow = [c for c in df.columns if isinstance(c, str) and hasattr(pd.DataFrame, c)]
    assert not shadow, f"{label}: columns {shadow} shadow pandas DataFrame methods"


def test_resampling_tables_do_not_shadow_pandas_methods():
    rng = np.random.default_rng(0)
    items, systems = 30, ["a", "b", "c"]
    df = pd.DataFrame([(s, i, r, rng.normal()) for s in systems for i in range(items) for r in ("r1", "r2")],
                      columns=["system", "item", "run", "score"])
    boot = me.bootstrap(df, score="score", system="system", item="item", run="run", n_resamples=200,
                        random_state=0)
    _no_shadowing(boot.table, "bootstrap.table")
    _no_shadowing(boot.pairwise(), "bootstrap.pairwise()")
    _no_shadowing(boot.ranks(), "bootstrap.ranks()")
    rows = [(m, lang, s, b, mu + shift + rng.normal(0, 1.0) + (0.0 if b == 0 else rng.normal(0, 1.5)))
            for m, mu in [("model_a", 70.0), ("model_b", 68.0)] for lang, shift in [("de", 5.0), ("sw", -8.0), ("yo", 1.0)]
            for s in range(3) for b in range(6)]
    reps = pd.DataFrame(rows, columns=["model", "language", "run", "replicate", "score"])
    vd = me.decompose_variance(reps, run="run")
    for name in ("table", "cells", "models"):
        if hasattr(vd, name):
            _no_shadowing(getattr(vd, name), f"decompose_variance.{name}")
    lb = me.simulate_leaderboard(vd, languages="bootstrap", n_resamples=100, random_state=0, progress=False)
    for name, tab in vars(lb).items():
        if isinstance(tab, pd.DataFrame):
            _no_shadowing(tab, f"simulate_leaderboard.{name}")


@pytest.mark.parametrize("forbidden", sorted(FORBIDDEN))
def test_the_check_would_catch_a_synonym(forbidden):
    """The signature check is not vacuous: a function with a forbidden name is reported."""
    ns: dict = {}
    exec(f"def f(x, {forbidden}=None):\n    return x", ns)  # noqa: S102 - a test-local function
    assert forbidden in _params(ns["f"])
