"""Issue 38 ("one design in, one answer out"), the results that compare or rank: each carries ONE
``answer`` (:class:`mixedeval._answer.Answer`) and reads its headline, leaderboard, checks,
direction, differences and p-value from it; pair tables are best first and signed in the better
direction; rank intervals say whether they are simultaneous or marginal."""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pkgutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval import _answer as A

ROOT = Path(__file__).resolve().parents[1] / "mixedeval"
ANSWER_FIELDS = ("headline", "leaderboard", "checks", "direction", "differences")


def _answer_classes() -> list[type]:
    """Every dataclass in mixedeval that subclasses AnswerMixin (all modules imported; none
    starts R on import)."""
    for m in pkgutil.walk_packages([str(ROOT)], "mixedeval."):
        try:
            importlib.import_module(m.name)
        except ImportError:  # an optional dependency (e.g. dask) missing: its classes are not ours to check
            continue
    out = {}
    for mod in list(__import__("sys").modules.values()):
        if not getattr(mod, "__name__", "").startswith("mixedeval"):
            continue
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__.startswith("mixedeval") and issubclass(cls, A.AnswerMixin) \
                    and dataclasses.is_dataclass(cls):
                out[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [out[k] for k in sorted(out)]


def test_every_answering_result_holds_one_answer_and_no_answer_fields():
    """Structural: every dataclass subclassing AnswerMixin (whoever wrote it) has ``answer`` (a
    field, or the EMMs' cached property) and declares none of headline / leaderboard / checks /
    direction / differences as a field of its own; its ``_answer_priority`` is its own (not the
    mixin's default)."""
    classes = _answer_classes()
    names = {c.__name__ for c in classes}
    assert {"BootstrapResult", "CompareSystemsResult", "EMMResult", "GLMMEMMResult", "BradleyTerryResult",
            "JudgeCorrected", "JudgedBattlesResult", "SubsetScores", "IrtResult", "BenchmarkQuality"} <= names
    for cls in classes:
        fields = {f.name for f in dataclasses.fields(cls)}
        assert not fields & set(ANSWER_FIELDS), (cls.__name__, fields & set(ANSWER_FIELDS))
        assert "answer" in fields or isinstance(inspect.getattr_static(cls, "answer", None),
                                                 __import__("functools").cached_property), cls.__name__
        owner = next(k for k in cls.__mro__ if "_answer_priority" in vars(k))
        assert owner is not A.AnswerMixin, f"{cls.__name__} does not declare _answer_priority"
        assert not issubclass(cls, A.LegacyAnswerMixin) if hasattr(A, "LegacyAnswerMixin") else True


def test_priorities_declared_as_issue_38_orders_them():
    from mixedeval.inference.emmeans import EMMResult
    from mixedeval.inference._irt import IrtResult
    from mixedeval.workflows._judges_battles import JudgedBattlesResult
    from mixedeval.workflows.benchmark_quality import BenchmarkQuality
    from mixedeval.workflows.compare_systems import CompareSystemsResult
    from mixedeval.workflows.item_subsets import SubsetScores
    from mixedeval.workflows.judges import JudgeCorrected
    from mixedeval.workflows.preferences import BradleyTerryResult

    got = {c.__name__: c._answer_priority for c in (
        CompareSystemsResult, JudgeCorrected, JudgedBattlesResult, BradleyTerryResult, EMMResult,
        me.BootstrapResult if hasattr(me, "BootstrapResult") else __import__(
            "mixedeval.resampling._bootstrap", fromlist=["x"]).BootstrapResult,
        IrtResult, SubsetScores, BenchmarkQuality)}
    assert got == {"CompareSystemsResult": 30, "JudgeCorrected": 35, "JudgedBattlesResult": 35,
                   "BradleyTerryResult": 40, "EMMResult": 45, "BootstrapResult": 50, "IrtResult": 55,
                   "SubsetScores": 60, "BenchmarkQuality": 70}


def test_my_files_do_not_use_the_legacy_mixin():
    files = ["resampling/_bootstrap.py", "workflows/compare_systems.py", "inference/_emm_answer.py",
             "inference/emmeans.py", "inference/rankings.py", "workflows/_bt_answer.py", "workflows/preferences.py",
             "workflows/judges.py", "workflows/_judges_battles.py", "workflows/_judges_tables.py",
             "workflows/item_subsets.py", "workflows/benchmark_quality.py", "inference/_irt.py"]
    for f in files:
        text = (ROOT / f).read_text(encoding="utf-8")
        assert "LegacyAnswerMixin" not in text, f
        assert "norm.ppf(0.5 + level" not in text, f  # one z quantile: _answer.z_quantile
    assert "def pair_row" not in (ROOT / "inference/rankings.py").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------ bootstrap, lower is better
def _wer_table(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    means = {"alpha": 0.31, "beta": 0.30, "gamma": 0.36, "zeta": 0.295}
    rows = [(s, i, r, max(0.0, rng.normal(m, 0.08))) for s, m in means.items() for i in range(80) for r in range(3)]
    return pd.DataFrame(rows, columns=["system", "item", "run", "wer"])


@pytest.mark.parametrize("case", ["kreutzer_ter", "simulated_wer"])
def test_bootstrap_pairwise_best_first_for_a_lower_is_better_score(case):
    """Issue 38: ``me.bootstrap(...).pairwise()`` listed pairs alphabetically with mixed signs under
    a best-first leaderboard. Now system_a is above system_b on the leaderboard, delta is
    system_a's advantage (> 0: lower TER / WER), and the top row is the headline's pair with the
    headline's estimate, interval and p-value."""
    if case == "kreutzer_ter":
        df = me.datasets.load("kreutzer_ter")
        b = me.bootstrap(df, score="ter", system="system", item="sentence_id", run="replication", n_resamples=999,
                         random_state=0, progress=False)
    else:
        b = me.bootstrap(_wer_table(), score="wer", system="system", item="item", run="run", n_resamples=999,
                         random_state=0, progress=False)
    assert b.direction.higher_is_better is False and b.direction.source == "known metric"
    order = list(b.leaderboard["name"])
    pw = b.pairwise()
    pos = {n: i for i, n in enumerate(order)}
    assert all(pos[str(a)] < pos[str(c)] for a, c in zip(pw["system_a"], pw["system_b"]))
    assert (pw["delta"] >= 0).all()
    keys = [(pos[str(a)], pos[str(c)]) for a, c in zip(pw["system_a"], pw["system_b"])]
    assert keys == sorted(keys)
    est = dict(zip(map(str, b.systems), b.estimate))
    np.testing.assert_allclose(pw["delta"], [est[str(c)] - est[str(a)] for a, c in zip(pw["system_a"], pw["system_b"])],
                               rtol=1e-12)  # lower is better: b - a on the score's scale
    h = b.headline
    top = pw.iloc[0]
    assert (str(top["system_a"]), str(top["system_b"])) == (h.better, h.other) == (order[0], order[1])
    assert top["delta"] > 0 and top["delta"] == pytest.approx(h.estimate, rel=1e-12)
    assert (top["conf_low"], top["conf_high"]) == pytest.approx((h.conf_low, h.conf_high), rel=1e-12)
    assert b.p_value == pytest.approx(top["p_value"], rel=1e-12)
    assert "lower" in pw.attrs["convention"]
    # the answer's differences are the same table (PAIR_COLUMNS), as best_first_pairs would write it
    d = b.differences
    assert list(d.columns) == [c for c in A.PAIR_COLUMNS if c in d.columns]  # in that order, those it has
    assert {"system_a", "system_b", "delta", "std_error", "conf_low", "conf_high", "p_value", "p_adj"} <= set(d.columns)
    np.testing.assert_allclose(d["delta"], pw["delta"], rtol=1e-12)
    # the same pairs written the other way round (a - b on the score's scale, a the worse system):
    # best_first_pairs turns them into this very table
    raw = pd.DataFrame({"system_a": [str(x) for x in pw["system_b"]], "system_b": [str(x) for x in pw["system_a"]]})
    raw["delta"] = [est[a] - est[c] for a, c in zip(raw["system_a"], raw["system_b"])]
    raw["conf_low"], raw["conf_high"] = pw["conf_low"].to_numpy(), pw["conf_high"].to_numpy()
    again = A.best_first_pairs(raw, order, False)
    assert list(zip(again["system_a"], again["system_b"])) == [(str(a), str(c)) for a, c in
                                                                zip(pw["system_a"], pw["system_b"])]
    np.testing.assert_allclose(again["delta"], pw["delta"], rtol=1e-12)
    # ranks(): best first, marginal intervals labelled; the leaderboard's are simultaneous
    rk = b.ranks(simultaneous=True)
    assert [str(x) for x in rk["system"]] == order
    assert rk.attrs["rank_kind"]["rank_conf_low"] == "marginal" and rk.attrs["rank_kind"]["rank_low"] == "simultaneous"
    assert b.answer.rank_kind == "simultaneous"
    assert b.answer.to_dict()["rank_interval"] == "simultaneous"
    # to_dict: the answer first, JSON
    dd = b.to_dict()
    assert list(dd)[0] == "answer" and dd["answer"]["headline"]["better"] == h.better
    json.dumps(dd)


def test_bootstrap_pairwise_with_a_reference_is_best_first_too():
    b = me.bootstrap(_wer_table(), score="wer", system="system", item="item", run="run", n_resamples=499,
                     random_state=1, progress=False, reference="gamma")
    assert (b.headline.better, b.headline.other) == (b.leaderboard["name"].iloc[0], "gamma")
    pw = b.pairwise(reference="gamma")
    assert len(pw) == 3 and (pw["system_b"] == "gamma").all() and (pw["delta"] > 0).all()
    assert pw["delta"].iloc[0] == pytest.approx(b.headline.estimate, rel=1e-12)


def test_bootstrap_higher_is_better_pairs_are_a_minus_b():
    df = _wer_table().rename(columns={"wer": "accuracy"})
    b = me.bootstrap(df, score="accuracy", system="system", item="item", run="run", n_resamples=299,
                     random_state=2, progress=False)
    pw = b.pairwise()
    est = dict(zip(map(str, b.systems), b.estimate))
    np.testing.assert_allclose(pw["delta"], [est[str(a)] - est[str(c)] for a, c in zip(pw["system_a"], pw["system_b"])],
                               rtol=1e-12)
    assert str(pw["system_a"].iloc[0]) == "gamma" and (pw["delta"] >= 0).all()
    np.testing.assert_allclose(pw["snr"], pw["delta"] / pw["std_error"], rtol=1e-12)


def test_one_system_bootstrap_has_an_answer_without_headline():
    df = _wer_table()
    b = me.bootstrap(df[df.system == "alpha"], score="wer", system="system", item="item", run="run",
                     n_resamples=99, random_state=0, progress=False)
    assert b.answer is not None and b.headline is None and np.isnan(b.p_value)
    assert len(b.leaderboard) == 1 and b.differences is None
    json.dumps(b.to_dict())


# ------------------------------------------------------------------------------ small additive helpers
def test_wald_pairs_and_versus():
    board = A.leaderboard(pd.Series({"x": 0.2, "y": 0.5, "z": 0.3}), std_error=[0.01, 0.02, 0.03],
                          higher_is_better=False, letters=False)
    assert list(board["name"]) == ["x", "z", "y"]
    w = A.wald_pairs(board, level=0.9, higher_is_better=False)
    assert list(zip(w["system_a"], w["system_b"])) == [("x", "z"), ("x", "y"), ("z", "y")]
    np.testing.assert_allclose(w["delta"], [0.1, 0.3, 0.2], rtol=1e-12)
    np.testing.assert_allclose(w["std_error"], np.hypot([0.01, 0.01, 0.03], [0.03, 0.02, 0.02]), rtol=1e-12)
    from scipy import stats
    z = stats.norm.ppf(0.95)
    np.testing.assert_allclose(w["conf_low"], w["delta"] - z * w["std_error"], rtol=1e-12)
    np.testing.assert_allclose(w["p_value"], 2 * stats.norm.sf(w["delta"] / w["std_error"]), rtol=1e-12)
    v = A.versus(w, "z", order=["x", "z", "y"])
    assert list(v["name"]) == ["x", "y"] and list(v.columns) == list(A.DIFFERENCE_COLUMNS)
    np.testing.assert_allclose(v["estimate"], [0.1, -0.2], rtol=1e-12)  # x better than z, y worse
    assert v["conf_low"].iloc[1] == pytest.approx(-w["conf_high"].iloc[2], rel=1e-12)


# ------------------------------------------------------------------------------ judges and battles
def test_judged_battles_differences_best_first():
    rng = np.random.default_rng(5)
    models = ["m0", "m1", "m2"]
    strength = {"m0": 0.8, "m1": 0.0, "m2": -0.5}
    rows = []
    for _ in range(600):
        a, b = rng.choice(models, 2, replace=False)
        p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
        w = "model_a" if rng.random() < p else "model_b"
        judge = w if rng.random() < 0.8 else ("model_b" if w == "model_a" else "model_a")
        rows.append((a, b, judge, w if rng.random() < 0.3 else None))
    df = pd.DataFrame(rows, columns=["model_a", "model_b", "winner", "human_winner"])
    res = me.bradley_terry_corrected(df)
    d = res.differences
    order = list(res.leaderboard["name"])
    assert list(zip(d["system_a"], d["system_b"])) == [(order[0], order[1]), (order[0], order[2]),
                                                        (order[1], order[2])]
    assert d["delta"].iloc[0] == pytest.approx(res.headline.estimate, rel=1e-12)
    assert d["conf_low"].iloc[0] == pytest.approx(res.headline.conf_low, rel=1e-12)
    assert list(res.to_dict())[0] == "answer"


def test_bradley_terry_answer_and_differences():
    rng = np.random.default_rng(7)
    models = ["a", "b", "c", "d"]
    strength = {"a": -0.2, "b": 0.9, "c": 0.1, "d": 0.0}
    rows = []
    for k in range(800):
        x, y = rng.choice(models, 2, replace=False)
        p = 1 / (1 + np.exp(-(strength[x] - strength[y])))
        rows.append((x, y, "model_a" if rng.random() < p else "model_b", f"p{k % 200}"))
    df = pd.DataFrame(rows, columns=["model_a", "model_b", "winner", "prompt"])
    res = me.bradley_terry(df, n_resamples=0)
    assert res.answer is not None and res.leaderboard["name"].iloc[0] == "b"
    d = res.differences
    order = list(res.leaderboard["name"])
    pos = {n: i for i, n in enumerate(order)}
    assert all(pos[a] < pos[b] for a, b in zip(d["system_a"], d["system_b"])) and (d["delta"] >= 0).all()
    h = res.headline
    assert (d["system_a"].iloc[0], d["system_b"].iloc[0]) == (h.better, h.other)
    assert d["delta"].iloc[0] == pytest.approx(h.estimate, rel=1e-12) and res.p_value == h.p_value
    t = res.table.set_index("model")
    np.testing.assert_allclose(d["delta"], [t.loc[a, "estimate"] - t.loc[b, "estimate"]
                                            for a, b in zip(d["system_a"], d["system_b"])], rtol=1e-12)
    assert list(res.to_dict())[0] == "answer"
    json.dumps(res.to_dict())


# ------------------------------------------------------------------------------ R: EMMs and compare_systems
def test_emm_answer_is_computed_once_and_methods_with_arguments_build_their_own(R, ter):
    fit = me.lmm("ter ~ system + (1|sentence_id)", data=ter)
    emm = fit.emmeans("system")
    ans = emm.answer
    assert ans is emm.answer  # cached: computed once with the defaults
    assert emm.headline() is ans.headline and emm.leaderboard() is ans.leaderboard
    assert emm.differences() is ans.differences and emm.headline_text() == ans.headline_text()
    assert emm.p_value == ans.p_value and emm.checks is None and emm.direction.higher_is_better is False
    h = ans.headline
    assert (h.better, h.other) == ("Marking", "PostEdit") and h.estimate > 0
    # emmeans' own contrast table keeps emmeans' order and signs (R parity)
    con = emm.contrasts(adjust="none").table
    assert list(con["contrast"]) == ["Baseline - Marking", "Baseline - PostEdit", "Marking - PostEdit"]
    R("i38_m <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = ter_df)")
    R("i38_p <- as.data.frame(summary(pairs(emmeans::emmeans(i38_m, 'system', lmer.df = 'satterthwaite', "
      "lmerTest.limit = 1e7), "
      "adjust = 'none'), infer = c(TRUE, TRUE)))")
    # the answer's differences: best first, signed in the better direction (lower TER)
    d = ans.differences
    assert list(zip(d["system_a"], d["system_b"])) == [("Marking", "PostEdit"), ("Marking", "Baseline"),
                                                       ("PostEdit", "Baseline")]
    def r(col: str, contrast: str) -> float:
        return float(R(f"i38_p${col}[as.character(i38_p$contrast) == '{contrast}']")[0])

    r_est = {c: r("estimate", c) for c in ("Marking - PostEdit", "Baseline - Marking", "Baseline - PostEdit")}
    r_lo = {c: r("lower.CL", c) for c in r_est}
    r_hi = {c: r("upper.CL", c) for c in r_est}
    # Marking - PostEdit < 0 in R: Marking's advantage (lower TER) is its negation
    np.testing.assert_allclose(d["delta"], [-r_est["Marking - PostEdit"], r_est["Baseline - Marking"],
                                            r_est["Baseline - PostEdit"]], rtol=1e-8)
    np.testing.assert_allclose(d["conf_low"], [-r_hi["Marking - PostEdit"], r_lo["Baseline - Marking"],
                                               r_lo["Baseline - PostEdit"]], rtol=1e-8)
    assert d["delta"].iloc[0] == pytest.approx(h.estimate, rel=1e-12)
    # another question: its own answer, the cached one untouched
    hr = emm.headline(reference="Baseline")
    assert (hr.better, hr.other) == ("Marking", "Baseline") and emm.answer is ans
    up = emm.leaderboard(higher_is_better=True)
    assert up["name"].iloc[0] == "Baseline"
    assert list(emm.to_dict())[0] == "answer"
    json.dumps(emm.to_dict())


def test_emm_answer_of_grouped_means_is_none(ter):
    fit = me.lmm("ter ~ system * replication + (1|sentence_id)", data=ter.assign(replication=ter["replication"]
                                                                                  .astype(str)))
    emm = fit.emmeans("system", by="replication")
    assert emm.answer is None and np.isnan(emm.p_value) and "not ranked together" in emm.headline_text()
    d = emm.to_dict()
    assert d["answer"] is None


def test_compare_systems_headline_says_why_the_df_are_asymptotic(R, ter):
    """Issue 38: compare_systems' default headline said "df = Inf: asymptotic df were asked for"
    when nothing was asked: the z test is its default without run=."""
    res = me.compare_systems(ter, "ter", "system", "sentence_id", average=False)
    assert "df = Inf: asymptotic, compare_systems' default without run=" in res.headline_text()
    assert "asked for" not in res.headline_text()
    asked = me.compare_systems(ter, "ter", "system", "sentence_id", average=False, posthoc_df="asymptotic")
    assert "asymptotic df were asked for" in asked.headline_text()
    # the contrasts stay emmeans' own; the answer's differences are the best-first view of them
    assert list(res.contrasts["contrast"]) == ["Baseline - Marking", "Baseline - PostEdit", "Marking - PostEdit"]
    d = res.differences
    assert (d["system_a"].iloc[0], d["system_b"].iloc[0]) == ("Marking", "PostEdit") and (d["delta"] > 0).all()
    np.testing.assert_allclose(d["p_adj"], res.contrasts.set_index("contrast").loc[
        ["Marking - PostEdit", "Baseline - Marking", "Baseline - PostEdit"], "p_adj"], rtol=1e-12)
    assert list(res.to_dict())[0] == "answer"


def test_compare_logs_bootstrap_check_has_the_headlines_sign_for_a_lower_is_better_score():
    """Guard for the merge with helper "logs": ``bootstrap(...).pairwise()`` now signs delta in the
    better direction, so the bootstrap check of compare_logs must not turn it again (on this
    branch alone compare_logs still multiplies by the direction and the check's estimate comes out
    with the opposite sign: -0.017 under a +0.0172 headline)."""
    rng = np.random.default_rng(3)
    means = {"alpha": 0.31, "beta": 0.30, "gamma": 0.36, "zeta": 0.295}
    df = pd.DataFrame([(s, i, r, max(0.0, rng.normal(m, 0.08))) for s, m in means.items() for i in range(80)
                       for r in range(3)], columns=["system", "item", "run", "wer"])
    logs = me.read_eval_logs(df.assign(task="t"), format="table", metric="wer", columns={"run": "run"})
    res = me.compare_logs(logs, metric="wer", model_check=False, plan=False, n_resamples=999, random_state=0)
    h = res.headline
    assert h.estimate > 0
    c = res.checks.set_index("check").loc["paired bootstrap"]
    assert c["estimate"] > 0 and c["estimate"] == pytest.approx(h.estimate, rel=0.2)


def test_simulated_leaderboard_rank_intervals_are_labelled_marginal():
    cells = pd.DataFrame({"model": np.repeat(["m0", "m1", "m2"], 4), "language": np.tile(["a", "b", "c", "d"], 3),
                          "mean": [0.5, 0.6, 0.55, 0.52, 0.4, 0.45, 0.5, 0.41, 0.7, 0.66, 0.69, 0.71],
                          "sd_run": 0.01, "sd_boot": 0.02, "n_runs": 3})
    vd = me.decompose_variance_summary(cells, n_runs="n_runs")
    lb = me.simulate_leaderboard(vd, n_resamples=200, random_state=0, progress=False)
    assert lb.ranks.attrs["rank_kind"] == {"rank_conf_low": "marginal", "rank_conf_high": "marginal"}


def test_bootstrap_of_many_systems_computes_the_headline_pair_only():
    from mixedeval.resampling._bootstrap import MAX_PAIR_SYSTEMS

    rng = np.random.default_rng(9)
    k = MAX_PAIR_SYSTEMS + 1
    df = pd.DataFrame({"system": np.repeat([f"s{i:03d}" for i in range(k)], 20), "item": np.tile(np.arange(20), k)})
    df["accuracy"] = rng.normal(np.repeat(np.linspace(0, 1, k), 20), 0.3)
    b = me.bootstrap(df, score="accuracy", system="system", item="item", n_resamples=99, random_state=0,
                     progress=False)
    assert b.differences is None and b.headline is not None
    h = b.headline
    pw = b.pairwise(reference=h.other)
    row = pw[(pw["system_a"] == h.better) & (pw["system_b"] == h.other)].iloc[0]
    assert row["delta"] == pytest.approx(h.estimate, rel=1e-12) and row["p_value"] == pytest.approx(h.p_value)
