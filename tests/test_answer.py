"""The shared answer pieces (mixedeval._answer): direction, leaderboard, headline, checks."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mixedeval import _answer as A
from mixedeval.errors import DataError


@pytest.mark.parametrize("metric,expected", [
    ("ter", False), ("TER", False), ("wer", False), ("word_perplexity", False), ("loss", False),
    ("error_rate", False), ("acc", True), ("acc,none", True), ("exact_match", True), ("bleu", True),
    ("chrF", True), ("match", True), ("f1", True), ("acc_norm", True), ("frobnication", None), (None, None),
])
def test_known_direction(metric, expected):
    assert A.known_direction(metric) is expected


def test_direction_sources():
    assert A.direction("ter").higher_is_better is False
    assert A.direction("ter").source == "known metric"
    d = A.direction("frob")
    assert d.higher_is_better is True and d.source == "assumed" and "not a known" in d.note
    assert A.direction("ter", higher_is_better=True).source == "declared"
    assert A.direction("acc", higher_is_better=np.bool_(False)).higher_is_better is False
    with pytest.raises(DataError, match="higher_is_better"):
        A.direction("acc", higher_is_better="yes")


def test_leaderboard_best_first_both_directions():
    est = pd.Series({"a": 0.30, "b": 0.50, "c": 0.10})
    se = pd.Series({"a": 0.01, "b": 0.01, "c": 0.01})
    up = A.leaderboard(est, std_error=se, conf_low=est - 0.02, conf_high=est + 0.02, higher_is_better=True)
    assert list(up.columns) == list(A.LEADERBOARD_COLUMNS)
    assert list(up["name"]) == ["b", "a", "c"] and list(up["rank"]) == [1, 2, 3]
    # well separated: rank intervals are points, letters all differ
    assert list(up["rank_low"]) == [1, 2, 3] and list(up["rank_high"]) == [1, 2, 3]
    assert up["letters"].nunique() == 3 and up["letters"].iloc[0] == "a"
    down = A.leaderboard(est, std_error=se, higher_is_better=False)
    assert list(down["name"]) == ["c", "a", "b"]


def test_leaderboard_overlapping_and_deterministic():
    est = pd.Series({"x": 0.50, "y": 0.49, "z": 0.20})
    se = pd.Series({"x": 0.05, "y": 0.05, "z": 0.01})
    b1 = A.leaderboard(est, std_error=se)
    b2 = A.leaderboard(est, std_error=se)
    pd.testing.assert_frame_equal(b1, b2)
    assert b1.loc[0, "rank_low"] == 1 and b1.loc[0, "rank_high"] == 2
    assert b1.loc[0, "letters"] == b1.loc[1, "letters"] == "a"
    assert b1.loc[2, "rank_low"] == 3


def test_leaderboard_single_system():
    b = A.leaderboard(pd.Series({"only": 1.0}), std_error=[0.1])
    assert list(b["rank_low"]) == [1] and list(b["letters"]) == ["a"]


def test_choose_pair_and_reference():
    board = pd.DataFrame({"name": ["top", "strong", "weak"]})
    assert A.choose_pair(board) == ("top", "strong")
    assert A.choose_pair(board, reference="weak") == ("top", "weak")
    assert A.choose_pair(board, reference="top") == ("strong", "top")
    with pytest.raises(DataError, match="reference"):
        A.choose_pair(board, reference="nope")


def test_headline_orientation():
    hib = A.direction("acc")
    h = A.headline("strong", "top", -0.089, 0.02, -0.13, -0.05, 0.004, 30, "paired t", hib, unit="points", scale=100)
    assert (h.better, h.other) == ("top", "strong")
    assert h.estimate == pytest.approx(0.089) and h.conf_low == pytest.approx(0.05) and h.conf_high == pytest.approx(0.13)
    assert h.text().startswith("top − strong: +8.9")
    lib = A.direction("ter")
    h2 = A.headline("Marking", "Baseline", -0.052, 0.01, -0.072, -0.032, 1e-5, 100, "lmm", lib, unit="TER points", scale=100)
    assert (h2.better, h2.other) == ("Marking", "Baseline")
    assert h2.estimate > 0 and h2.conf_low == pytest.approx(0.032) and "lower ter is better" in h2.text()
    assert h2.distinguishable


def test_check_rows():
    h = A.headline("a", "b", 0.05, 0.01, 0.03, 0.07, 0.001, 40, "t", A.direction("acc"))
    assert A.check_row("boot", h, estimate=0.05, p_value=0.002)["verdict"] == "agrees"
    v = A.check_row("lrt", h, p_value=0.2)["verdict"]
    assert v.startswith("differs: not significant")
    assert A.check_row("lrt", h, p_value=0.2, why="the LRT tests all systems at once")["verdict"].endswith("at once")
    assert A.check_row("x", h, estimate=-0.05, p_value=0.001)["verdict"] == "differs: the opposite sign"
    t = A.checks_table([A.check_row("boot", h, p_value=0.002)])
    assert list(t.columns) == list(A.CHECK_COLUMNS)


def test_differences_from_anchor_both_directions():
    pairs = pd.DataFrame({"a": ["x", "x", "y"], "b": ["y", "z", "z"], "delta": [0.1, 0.3, 0.2],
                          "conf_low": [0.05, 0.2, 0.1], "conf_high": [0.15, 0.4, 0.3], "p_value": [0.01, 0.001, 0.02]})
    d = A.differences(pairs, "x", ["x", "y", "z"], higher_is_better=True)
    assert list(d.columns) == list(A.DIFFERENCE_COLUMNS) and list(d["name"]) == ["y", "z"]
    assert d["estimate"].tolist() == pytest.approx([-0.1, -0.3])  # y - x, z - x: worse than the best
    assert d["conf_low"].tolist() == pytest.approx([-0.15, -0.4]) and d["conf_high"].tolist() == pytest.approx([-0.05, -0.2])
    # lower is better: z is best; y - z = 0.2 higher, so 0.2 worse
    d2 = A.differences(pairs, "z", ["z", "y", "x"], higher_is_better=False)
    assert list(d2["name"]) == ["y", "x"] and d2["estimate"].tolist() == pytest.approx([-0.2, -0.3])
    assert d2["conf_low"].tolist() == pytest.approx([-0.3, -0.4]) and d2["conf_high"].tolist() == pytest.approx([-0.1, -0.2])


def test_answer_sentence_lower_is_better():
    d = A.direction("ter")
    diffs = pd.DataFrame({"name": ["Marking", "PostEdit"], "versus": "Baseline", "estimate": [0.0123, 0.0096],
                          "conf_low": [0.0082, 0.0055], "conf_high": [0.0165, 0.0137], "p_value": [5e-9, 5e-6]})
    h = A.headline("Marking", "PostEdit", -0.0027, 0.0015, -0.0057, 0.0002, 0.068, np.inf, "lmm", d)
    s = A.answer_sentence(diffs, h, scale=100, unit="points")
    assert s.startswith("Marking and PostEdit lower TER by 1.2 and 1.0 points vs Baseline (p < 0.001 each)"), s
    assert "Marking vs PostEdit not distinguishable (+0.27 points, 95% CI -0.02 to +0.57" in s and "p = 0.068" in s
    h2 = A.headline("a", "b", 0.05, 0.01, 0.03, 0.07, 1e-4, 50, "t", A.direction("acc"))
    s2 = A.answer_sentence(diffs.iloc[:0], h2, scale=100, unit="points")
    assert s2.startswith("a higher ACC than b (+5 points, 95% CI +3 to +7"), s2


# ------------------------------------------------------------------------------ units, wald_headline, the mixin
@pytest.mark.parametrize("scores,metric,expected", [
    ([0.0, 0.5, 1.0], None, ("points", 100.0)),          # proportions / accuracies
    ([0, 1, 1, 0], "match", ("points", 100.0)),
    ([0.2, 0.6, 1.6], "ter", ("points", 100.0)),         # TER above 1 on a sentence, a fraction on average
    ([0.2, 0.6, 1.6], "ter_score", ("points", 100.0)),
    ([0.2, 0.6, 1.6], "rating", ("", 1.0)),              # not a rate: its own units
    ([20.0, 60.0, 160.0], "ter", ("", 1.0)),             # TER already in points
    ([12.0, 35.5], "bleu", ("", 1.0)),                   # sacrebleu's 0-100 BLEU
    ([-0.5, 0.5], None, ("", 1.0)),
    ([np.nan, 0.3], None, ("points", 100.0)),
    ([], None, ("", 1.0)),
])
def test_unit_scale(scores, metric, expected):
    assert A.unit_scale(scores, metric) == expected


def test_wald_headline_by_hand():
    from scipy import stats

    est = pd.Series({"a": 0.62, "b": 0.55, "c": 0.40})
    se = pd.Series({"a": 0.03, "b": 0.04, "c": 0.05})
    board = A.leaderboard(est, std_error=se)
    h = A.wald_headline(board, "m", A.direction("accuracy"), level=0.9, unit="points", scale=100.0)
    d, s = 0.62 - 0.55, np.sqrt(0.03 ** 2 + 0.04 ** 2)
    z = stats.norm.ppf(0.95)
    assert (h.better, h.other) == ("a", "b") and h.df == np.inf and h.level == 0.9
    np.testing.assert_allclose([h.estimate, h.std_error, h.conf_low, h.conf_high, h.p_value],
                               [d, s, d - z * s, d + z * s, 2 * stats.norm.sf(d / s)], rtol=1e-12)
    assert h.text().startswith("a − b: +7.0 points (90% CI")
    ref = A.wald_headline(board, "m", A.direction("accuracy"), reference="c")
    assert (ref.better, ref.other, ref.reference) == ("a", "c", "c")
    assert A.wald_headline(board.iloc[:1], "m", A.direction("accuracy")) is None


def test_answer_mixin_on_a_frozen_dataclass():
    """A result holds one field, ``answer``; headline, direction, p_value, headline_text() and
    to_dict() are views of it (no answer field declared on the result)."""
    from dataclasses import dataclass

    from mixedeval.results import ResultMixin

    @dataclass(frozen=True, repr=False)
    class R(A.AnswerMixin, ResultMixin):
        table: pd.DataFrame
        answer: A.Answer

    d = A.direction("acc")
    h = A.headline("x", "y", 0.1, 0.02, 0.06, 0.14, 0.001, 30.0, "t test", d, unit="points", scale=100.0)
    board = A.leaderboard(pd.Series({"x": 0.8, "y": 0.7}), std_error=[0.01, 0.01])
    r = R(table=pd.DataFrame({"v": [1.0]}), answer=A.Answer(d, board, h))
    assert r.headline_text() == h.text() and r.p_value == h.p_value
    assert r.headline is h and r.direction is d and r.leaderboard is board
    out = r.to_dict()
    assert list(out)[0] == "answer" and "headline" not in out  # the answer first, once
    assert out["answer"]["headline"] == h.to_dict() and out["answer"]["direction"] == d.to_dict()
    assert out["table"] == [{"v": 1.0}] and out["answer"]["rank_interval"] == "simultaneous"
    empty = R(table=pd.DataFrame(), answer=A.Answer(d, None, None, no_headline_text="nothing here"))
    assert empty.headline_text() == "nothing here" and np.isnan(empty.p_value)
    assert empty.to_dict()["answer"]["headline"] is None and "note" in empty.to_dict()["answer"]["direction"]
    with pytest.raises(ValueError):
        A.Answer(d, board, h, rank_kind="pointwise")


def test_best_first_pairs_signs_in_the_better_direction():
    pairs = pd.DataFrame({"system_a": ["a", "a", "b"], "system_b": ["b", "c", "c"], "delta": [0.1, -0.2, -0.3],
                          "conf_low": [0.0, -0.3, -0.4], "conf_high": [0.2, -0.1, -0.2], "p_value": [0.05, 0.01, 0.001]})
    # lower is better: b (lowest) is best, then a, then c
    t = A.best_first_pairs(pairs, ["b", "a", "c"], higher_is_better=False)
    assert list(zip(t["system_a"], t["system_b"])) == [("b", "a"), ("b", "c"), ("a", "c")]
    assert np.allclose(t["delta"], [0.1, 0.3, 0.2])  # a - b etc.: the better system's advantage, positive
    assert np.allclose(t["conf_low"], [0.0, 0.2, 0.1]) and np.allclose(t["conf_high"], [0.2, 0.4, 0.3])
    assert np.allclose(t["p_value"], [0.05, 0.001, 0.01])
    h = A.best_first_pairs(pairs, ["a", "b", "c"], higher_is_better=True)
    assert list(zip(h["system_a"], h["system_b"])) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert np.allclose(h["delta"], [0.1, -0.2, -0.3])  # higher is better, a above c on this (given) order
    row, sign = A.pair_row(pairs, "c", "a")
    assert sign == -1.0 and row["delta"] == -0.2 and A.pair_row(pairs, "a", "z") is None


def test_check_verdict_measures_the_width():
    h = A.headline("a", "b", 0.6, 0.3, 0.0, 1.2, 0.06, 40, "t", A.direction("acc"))
    v = A.check_row("boot", h, estimate=0.6, conf_low=0.06, conf_high=1.17, p_value=0.03)["verdict"]
    assert v.startswith("differs: significant") and "0.92x as wide" in v  # narrower, measured
    v = A.check_row("boot", h, estimate=0.6, conf_low=-0.2, conf_high=1.4, p_value=0.2)["verdict"]
    assert v == "agrees"


def test_emm_units_only_for_means_of_the_response_column():
    from types import SimpleNamespace as NS

    from mixedeval.inference.rankings import emm_units

    data = pd.DataFrame({"ter": [0.2, 0.7, 1.4], "y": [3.0, 8.0, 12.0], "grade": pd.Categorical(["a", "b", "a"])})
    fit = NS(response="ter", data=data)
    assert emm_units(NS(kind="emmeans", _fit=fit)) == ("points", 100.0)                 # an LMM's means of TER
    assert emm_units(NS(kind="emmeans", type="response", _fit=fit)) == ("points", 100.0)
    assert emm_units(NS(kind="emmeans", type="link", _fit=fit)) == ("", 1.0)            # log-odds: not points
    assert emm_units(NS(kind="emtrends", _fit=fit)) == ("", 1.0)                        # slopes
    assert emm_units(NS(kind="emmeans", _fit=NS(response="log(ter)", data=data))) == ("", 1.0)
    assert emm_units(NS(kind="emmeans", _fit=NS(response="y", data=data))) == ("", 1.0)
    assert emm_units(NS(kind="emmeans", _fit=NS(response="grade", data=data))) == ("", 1.0)  # ordinal
    assert emm_units(NS(kind="emmeans", _fit=None)) == ("", 1.0)


def test_pair_row_reads_emmeans_contrast_text():
    """The one pair-row helper also finds a pair in an emmeans contrast table (its ``contrast``
    text, names in parentheses when emmeans adds them), per task."""
    con = pd.DataFrame({"task": ["t1", "t1", "t2"], "contrast": ["a - b", "(gpt 4) - a", "a - b"],
                        "estimate": [0.1, 0.3, -0.2]})
    row, sign = A.pair_row(con, "b", "a", task="t2")
    assert sign == -1.0 and row["estimate"] == -0.2
    row, sign = A.pair_row(con, "gpt 4", "a", task="t1")
    assert sign == 1.0 and row["estimate"] == 0.3
    assert A.pair_row(con, "gpt 4", "b") is None
