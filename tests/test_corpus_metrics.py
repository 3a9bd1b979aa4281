"""Corpus metrics as built-in statistics of the resampling functions: BLEU and chrF from sacrebleu's
per-sentence statistics (equal to sacrebleu's corpus scores to 1e-12, on the observed corpus and on
resampled sums; p-values against sacrebleu's own paired approximate randomization), and accuracy,
exact match, precision / recall / F1 (micro and macro) from counts against hand-derived values."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.resampling import _stats as st

sacrebleu = pytest.importorskip("sacrebleu", reason="the optional extra mixedeval[metrics] is not installed")
from sacrebleu.metrics import BLEU, CHRF  # noqa: E402

WORDS = ("the a cat dog sat on mat big small red house tree ran over under it is was "
         "this that blue green with without near far").split()


def _corpus(n: int, seed: int, p_a: float, p_b: float):
    """References and two systems' outputs that replace / drop words with probabilities p_a, p_b."""
    rng = np.random.default_rng(seed)
    refs = [" ".join(rng.choice(WORDS, rng.integers(2, 18))) + "." for _ in range(n)]

    def noisy(s: str, p: float) -> str:
        w = s.split()
        w = w[: max(1, len(w) - int(rng.integers(0, 3)))]
        return " ".join(x if rng.random() > p else str(rng.choice(WORDS)) for x in w)

    return refs, [noisy(r, p_a) for r in refs], [noisy(r, p_b) for r in refs]


REFS, HYP_A, HYP_B = _corpus(300, 1, 0.25, 0.32)


@pytest.mark.parametrize("kw", [{}, {"tokenize": "none"}, {"lowercase": True}, {"max_ngram_order": 2}])
def test_bleu_equals_sacrebleu_corpus_bleu(kw):
    for hyps in (HYP_A, HYP_B, HYP_A[:7], ["", "x"] + HYP_B[:5]):
        refs = REFS[: len(hyps)]
        stats = me.metrics.sentence_stats(hyps, refs, metric="bleu", **kw)
        assert list(stats.columns[:2]) == ["sys_len", "ref_len"] and len(stats) == len(hyps)
        got = float(st.bleu(*stats.sum().to_numpy()))
        expected = BLEU(**kw).corpus_score(hyps, [refs]).score
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)
    if not kw:  # the documented top-level API too, and several references per sentence
        assert got == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score, rel=1e-12, abs=1e-12)
        refs2 = [r.upper() for r in REFS]
        stats = me.metrics.sentence_stats(HYP_A, [REFS, refs2], metric="bleu")
        expected = sacrebleu.corpus_bleu(HYP_A, [REFS, refs2]).score
        assert float(st.bleu(*stats.sum().to_numpy())) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("kw", [{}, {"word_order": 2}, {"lowercase": True, "whitespace": True}])
def test_chrf_equals_sacrebleu_corpus_chrf(kw):
    for hyps in (HYP_A, HYP_B, HYP_A[:3], ["", "a"] + HYP_B[:4]):
        refs = REFS[: len(hyps)]
        stats = me.metrics.sentence_stats(hyps, refs, metric="chrf", **kw)
        assert stats.shape[1] == 3 * (6 + kw.get("word_order", 0))
        got = float(st.chrf(*stats.sum().to_numpy()))
        expected = (sacrebleu.corpus_chrf(hyps, [refs], **kw) if "lowercase" not in kw
                    else CHRF(**kw).corpus_score(hyps, [refs])).score
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_vectorized_scores_equal_sacrebleu_on_resampled_sums():
    """The vectorized formulas equal sacrebleu's _compute_score_from_stats replicate by replicate,
    including degenerate sums (no match, zero length, an order with no n-gram)."""
    rng = np.random.default_rng(3)
    for metric, obj in (("bleu", BLEU()), ("chrf", CHRF()), ("chrf", CHRF(word_order=2))):
        opts = {"word_order": obj.word_order} if metric == "chrf" else {}
        X = me.metrics.sentence_stats(HYP_A[:40], REFS[:40], metric=metric, **opts).to_numpy()
        counts = rng.multinomial(40, np.full(40, 1 / 40), size=300).astype(float)
        counts[:20] = 0
        counts[:20, rng.integers(0, 40, 20)] = 1  # one (short) sentence only
        sums = counts @ X
        sums[0] = 0  # empty corpus
        got = st.bleu(*sums.T) if metric == "bleu" else st.chrf(*sums.T)
        expected = np.array([obj._compute_score_from_stats(list(s)).score for s in sums])
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # BLEU with smoothing "none" and a break at an order with total = 0
    s = np.array([[5, 7, 3, 1, 0, 0, 5, 4, 0, 0], [9, 8, 5, 2, 0, 1, 9, 8, 7, 6]], dtype=float)
    for row in s:
        exp = BLEU.compute_bleu(list(row[2:6]), list(row[6:]), int(row[0]), int(row[1]), smooth_method="none").score
        assert float(st.bleu_from_sums(*row, smooth_method="none")) == pytest.approx(exp, rel=1e-12, abs=1e-12)
        exp = BLEU.compute_bleu(list(row[2:6]), list(row[6:]), int(row[0]), int(row[1]), smooth_method="exp").score
        assert float(st.bleu_from_sums(*row)) == pytest.approx(exp, rel=1e-12, abs=1e-12)


def _table(stats_by_system: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat([s.assign(system=k, item=np.arange(len(s))) for k, s in stats_by_system.items()],
                     ignore_index=True)


def test_bootstrap_and_paired_tests_take_bleu_and_chrf():
    for metric in ("bleu", "chrf"):
        sa = me.metrics.sentence_stats(HYP_A, REFS, metric=metric)
        sb = me.metrics.sentence_stats(HYP_B, REFS, metric=metric)
        corpus = sacrebleu.corpus_bleu if metric == "bleu" else sacrebleu.corpus_chrf
        ea, eb = corpus(HYP_A, [REFS]).score, corpus(HYP_B, [REFS]).score
        boot = me.bootstrap(_table({"a": sa, "b": sb}), score=list(sa.columns), system="system", item="item",
                            statistic=metric, n_resamples=300, random_state=0, progress=False)
        assert boot.statistic == metric
        np.testing.assert_allclose(boot.estimate, [ea, eb], rtol=1e-12)
        for test in (me.paired_bootstrap_test, me.approximate_randomization):
            r = test(sa, sb, statistic=metric, n_resamples=300, random_state=0)
            assert r.statistic_name == metric
            assert r.estimate_x == pytest.approx(ea, rel=1e-12) and r.estimate_y == pytest.approx(eb, rel=1e-12)
            assert r.statistic == pytest.approx(ea - eb, rel=1e-10)
    with pytest.raises(me.DataError, match="statistic='bleu'.*2 \\+ 2 N columns"):
        me.approximate_randomization(np.ones((5, 3)), np.ones((5, 3)), statistic="bleu")
    with pytest.raises(me.DataError, match="statistic='chrf'.*3 columns"):
        me.paired_bootstrap_test(np.ones((5, 4)), np.ones((5, 4)), statistic="chrf")


def _sacrebleu_paired(test_type: str, n_samples: int, metric: str, hyp_a, hyp_b, refs):
    from sacrebleu.significance import PairedTest

    m = BLEU(references=[refs]) if metric == "bleu" else CHRF(references=[refs])
    pt = PairedTest([("baseline", hyp_b), ("system", hyp_a)], {metric: m}, references=None, test_type=test_type,
                    n_samples=n_samples)
    _, scores = pt()
    (name,) = [k for k in scores if k != "System"]
    return scores[name][1]


@pytest.mark.parametrize("metric", ["bleu", "chrf"])
def test_p_values_match_sacrebleu_paired_ar(metric):
    """sacrebleu --paired-ar (its Python API) and approximate_randomization estimate the same
    p-value: equal within Monte-Carlo error (B = 10,000 each; 5 standard errors of the
    difference of two independent estimates)."""
    refs, hyp_a, hyp_b = _corpus(250, 11, 0.27, 0.31)
    B = 10_000
    ours = me.approximate_randomization(me.metrics.sentence_stats(hyp_a, refs, metric=metric),
                                        me.metrics.sentence_stats(hyp_b, refs, metric=metric),
                                        statistic=metric, n_resamples=B, random_state=1)
    theirs = _sacrebleu_paired("ar", B, metric, hyp_a, hyp_b, refs)
    assert abs(theirs.score - ours.estimate_x) < 1e-9
    p = (ours.p_value + theirs.p_value) / 2
    se = np.sqrt(2 * p * (1 - p) / B)
    assert 0.005 < p < 0.6  # a comparison where the p-value is neither 0 nor 1
    assert abs(ours.p_value - theirs.p_value) < 5 * se + 2 / B


def test_sacrebleu_paired_bootstrap_p_is_a_different_quantity():
    """sacrebleu's --paired-bs p-value is (1 + #{|d*| - mean|d*| > |d|}) / (B + 1): it centres
    the ABSOLUTE replicate differences (Moses' bootstrap-hypothesis-difference-significance.pl),
    whose mean is inflated by folding, while the shift method centres the signed differences:
    (1 + #{|d* - mean d*| >= |d|}) / (B + 1). Reproduced here on sacrebleu's own draws."""
    refs, hyp_a, hyp_b = _corpus(150, 5, 0.28, 0.30)
    B = 1000
    theirs = _sacrebleu_paired("bs", B, "bleu", hyp_a, hyp_b, refs)
    sa = me.metrics.sentence_stats(hyp_a, refs).to_numpy()
    sb = me.metrics.sentence_stats(hyp_b, refs).to_numpy()
    idx = np.random.default_rng(12345).choice(len(refs), size=(B, len(refs)), replace=True)  # SACREBLEU_SEED
    da = st.bleu(*sa[idx].sum(axis=1).T)
    db = st.bleu(*sb[idx].sum(axis=1).T)
    d = abs(float(st.bleu(*sa.sum(axis=0))) - float(st.bleu(*sb.sum(axis=0))))
    folded = np.abs(da - db) - np.abs(da - db).mean()
    assert theirs.p_value == pytest.approx((1 + (folded > d).sum()) / (B + 1), abs=1e-12)
    shift = (1 + (np.abs((da - db) - (da - db).mean()) >= d).sum()) / (B + 1)
    assert shift != pytest.approx(theirs.p_value)  # not the same quantity


# ------------------------------------------------------------------------------ counts
Y_TRUE = np.array([0, 0, 1, 1, 2, 2, 2, 0, 1, 2, 2, 0])
Y_PRED = np.array([0, 1, 1, 1, 2, 0, 2, 0, 2, 2, 1, 0])


def _per_item_counts(y_true, y_pred, k: int) -> np.ndarray:
    """Per item and class: tp, fp, fn (a 0/1 indicator each), columns tp_1, fp_1, fn_1, tp_2, ..."""
    cols = []
    for c in range(k):
        cols += [(y_true == c) & (y_pred == c), (y_true != c) & (y_pred == c), (y_true == c) & (y_pred != c)]
    return np.column_stack(cols).astype(float)


def test_precision_recall_f1_micro_and_macro_by_hand():
    X = _per_item_counts(Y_TRUE, Y_PRED, 3)
    S = X.sum(axis=0)
    # by hand: class 0: tp 3, fp 1, fn 1; class 1: tp 2, fp 2, fn 1; class 2: tp 3, fp 1, fn 2
    np.testing.assert_array_equal(S, [3, 1, 1, 2, 2, 1, 3, 1, 2])
    p = np.array([3 / 4, 2 / 4, 3 / 4])
    r = np.array([3 / 4, 2 / 3, 3 / 5])
    f = 2 * p * r / (p + r)
    assert float(st.precision_macro(*S)) == pytest.approx(p.mean(), rel=1e-15)
    assert float(st.recall_macro(*S)) == pytest.approx(r.mean(), rel=1e-15)
    assert float(st.f1_macro(*S)) == pytest.approx(f.mean(), rel=1e-15)
    micro = np.array([S[0::3].sum(), S[1::3].sum(), S[2::3].sum()])  # tp 8, fp 4, fn 4
    np.testing.assert_array_equal(micro, [8, 4, 4])
    assert float(st.precision_micro(*micro)) == pytest.approx(8 / 12, rel=1e-15)
    assert float(st.recall_micro(*micro)) == pytest.approx(8 / 12, rel=1e-15)
    assert float(st.f1_micro(*micro)) == pytest.approx(8 / 12, rel=1e-15)  # = accuracy for single-label
    assert (Y_TRUE == Y_PRED).mean() == 8 / 12
    # zero division: a class never predicted and never present scores 0 (scikit-learn's default)
    assert float(st.precision_macro(0, 0, 0, 1, 0, 0)) == 0.5


def test_count_statistics_in_the_resampling_functions():
    X = _per_item_counts(Y_TRUE, Y_PRED, 3)
    Xb = _per_item_counts(Y_TRUE, np.roll(Y_PRED, 1), 3)
    micro = np.column_stack([X[:, 0::3].sum(1), X[:, 1::3].sum(1), X[:, 2::3].sum(1)])
    microb = np.column_stack([Xb[:, 0::3].sum(1), Xb[:, 1::3].sum(1), Xb[:, 2::3].sum(1)])
    for name in ("precision", "recall", "f1_micro", "precision_micro", "recall_micro"):
        r = me.approximate_randomization(micro, microb, statistic=name, n_resamples=200, random_state=0)
        assert r.statistic_name == name and r.estimate_x == pytest.approx(8 / 12, rel=1e-15)
    for name in ("f1_macro", "precision_macro", "recall_macro"):
        r = me.paired_bootstrap_test(X, Xb, statistic=name, n_resamples=200, random_state=0)
        assert r.estimate_x == pytest.approx(float(getattr(st, name)(*X.sum(0))), rel=1e-15)
    correct = (Y_TRUE == Y_PRED).astype(float)
    r = me.approximate_randomization(correct, (Y_TRUE == np.roll(Y_PRED, 1)).astype(float), statistic="accuracy",
                                     n_resamples=200, random_state=0)
    r2 = me.approximate_randomization(correct, (Y_TRUE == np.roll(Y_PRED, 1)).astype(float), statistic="mean",
                                      n_resamples=200, random_state=0)
    assert r.statistic_name == "accuracy" and r.p_value == r2.p_value and r.estimate_x == 8 / 12
    # k-of-n accuracy: (correct, total) per item -> sum(correct) / sum(total)
    k_of_n = np.array([[2, 3], [0, 3], [3, 3], [1, 3]], dtype=float)
    r = me.paired_bootstrap_test(k_of_n, k_of_n[::-1], statistic="accuracy", n_resamples=100, random_state=0)
    assert r.estimate_x == pytest.approx(6 / 12, rel=1e-15)
    df = pd.DataFrame({"system": np.repeat(["a", "b"], 12), "item": np.tile(np.arange(12), 2),
                       "em": np.r_[correct, correct[::-1]]})
    for name in ("exact_match", "accuracy"):
        boot = me.bootstrap(df, score="em", system="system", item="item", statistic=name, n_resamples=200,
                            random_state=0, progress=False)
        ref = me.bootstrap(df, score="em", system="system", item="item", statistic="mean", n_resamples=200,
                           random_state=0, progress=False)
        assert boot.statistic == name
        np.testing.assert_array_equal(boot.distribution, ref.distribution)
    with pytest.raises(me.DataError, match="statistic='exact_match' takes one per-item 0/1 column"):
        me.bootstrap(df.assign(x=1.0), score=["em", "x"], system="system", item="item", statistic="exact_match")
    with pytest.raises(me.DataError, match="statistic must be one of"):
        me.approximate_randomization(correct, correct, statistic="bleurt")


def test_sentence_stats_checks_its_input():
    with pytest.raises(me.DataError, match="metric must be 'bleu' or 'chrf'"):
        me.metrics.sentence_stats(["a"], ["a"], metric="ter")
    with pytest.raises(me.DataError, match="reference stream 0 has 1 entries for 2 hypotheses"):
        me.metrics.sentence_stats(["a", "b"], ["a"])
    with pytest.raises(me.DataError, match="not supported for metric='chrf'"):
        me.metrics.sentence_stats(["a"], ["a"], metric="chrf", char_order=4)
    with pytest.raises(me.DataError, match="hypotheses must be a list of strings"):
        me.metrics.sentence_stats("a b", ["a b"])
