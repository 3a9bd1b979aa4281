"""Issue 13 point 8: the LMM path says when it is the wrong model (0/1 outcomes, counts)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.inference._lmm import response_type_warning


def _table(y_fn, n_items=40, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(n_items):
        b = rng.normal(0, 1)
        for system, eff in (("A", 0.0), ("B", 0.5), ("C", -0.3)):
            for run in range(2):
                rows.append({"item": f"i{item:03d}", "system": system, "run": run, "y": y_fn(rng, b + eff)})
    return pd.DataFrame(rows)


def _kinds(ws):
    return [w.kind for w in ws]


def test_binary_response_names_binomial_glmm():
    df = _table(lambda rng, eta: int(rng.random() < 1 / (1 + np.exp(-eta))))
    fit = me.lmm("y ~ system + (1|item)", df)
    ws = [w for w in fit.warnings if w.kind == "response_type"]
    assert len(ws) == 1
    assert "me.glmm" in ws[0].message and "family='binomial'" in ws[0].message and "'y'" in ws[0].message


def test_count_response_names_poisson_and_clmm_for_few_levels():
    df = _table(lambda rng, eta: int(rng.poisson(np.exp(1.0 + 0.3 * eta))))
    fit = me.lmm("y ~ system + (1|item)", df)
    (w,) = [w for w in fit.warnings if w.kind == "response_type"]
    assert "family='poisson'" in w.message and "negative_binomial" in w.message
    assert ("me.clmm" in w.message) == (df["y"].nunique() <= 10)


def test_many_level_counts_do_not_suggest_clmm():
    w = response_type_warning(pd.Series(np.arange(50) % 25, name="errors"))
    assert w is not None and "me.clmm" not in w.message and "poisson" in w.message


@pytest.mark.parametrize("values", [
    np.linspace(0.1, 0.9, 30),            # continuous
    np.array([-1, 0, 1, 2, 3] * 6),       # integers with negatives: not counts
    np.array([1.5, 2.5, 3.5] * 10),       # three non-integer values
    np.array([4.0] * 30),                 # constant: fails elsewhere, no warning here
])
def test_no_warning_for_other_responses(values):
    assert response_type_warning(pd.Series(values, name="y")) is None


def test_continuous_response_has_no_response_type_warning():
    ter = me.datasets.load("kreutzer_ter")
    fit = me.lmm("ter ~ system + (1|sentence_id)", ter)
    assert "response_type" not in _kinds(fit.warnings)


def test_two_valued_non_01_response_is_flagged_and_data_untouched():
    df = _table(lambda rng, eta: 5 if rng.random() < 0.5 else 7)
    before = df.copy()
    fit = me.lmm("y ~ system + (1|item)", df)
    assert "response_type" in _kinds(fit.warnings)
    pd.testing.assert_frame_equal(df, before)


def test_workflow_on_binary_outcomes_carries_the_warning():
    df = _table(lambda rng, eta: int(rng.random() < 1 / (1 + np.exp(-eta))))
    res = me.compare_systems(df, score="y", system="system", item="item")
    texts = [w.kind for w in res.warnings]
    assert "response_type" in texts


def test_report_shows_model_choice_first(tmp_path):
    df = _table(lambda rng, eta: int(rng.random() < 1 / (1 + np.exp(-eta))))
    fit = me.lmm("y ~ system + (1|item)", df)
    out = me.report(fit, path=tmp_path / "r.html", compute_missing=False, progress=False)
    html = out.read_text(encoding="utf-8")
    first = html.index('id="model_check"')
    assert first < html.index('id="design"')
    assert "family=&#39;binomial&#39;" in html or "family='binomial'" in html


def test_report_without_problem_has_no_model_choice_section(tmp_path):
    ter = me.datasets.load("kreutzer_ter")
    fit = me.lmm("ter ~ system + (1|sentence_id)", ter)
    html = me.report(fit, path=tmp_path / "r.html", compute_missing=False, progress=False).read_text(encoding="utf-8")
    assert 'id="model_check"' not in html
