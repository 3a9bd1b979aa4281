"""Issue 38, the report's part: the report reads the Answer as a value.

* the answering result is chosen by the ``_answer_priority`` its class declares, from its
  ``answer`` (no list of result type names, no attribute sniffing: a structural test);
* compare_logs (with and without its model checks), bootstrap, Bradley-Terry, IRT (numpy
  engine), judge-corrected and subset-score results light up the answer section with the
  result's own ``headline_text()``, the rank-interval label, the sign convention and the
  differences best first (the headline pair positive);
* the answer's badge is never "ok" when a check differs ("checks differ", with the sentence of
  ``Answer.check_summary()``), and a severe warning still makes it "warning";
* numbers by one rule: estimates and intervals of one table share decimals, p-values by
  ``fmt_p``, checks and differences in the headline's units; no "nan" in the answer's tables.
"""
from __future__ import annotations

import ast
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval import _answer as A
from mixedeval._format import fmt_p
from mixedeval.results import ResultMixin, ResultWarning


# ------------------------------------------------------------------------------ page helpers
def _section(text: str, sid: str = "answer") -> str:
    return re.search(rf'<section id="{sid}"[^>]*>(.*?)</section>', text, flags=re.S).group(1)


def _status(text: str, sid: str = "answer") -> str:
    return re.search(rf'<section id="{sid}" class="status-([a-z_]+)"', text).group(1)


def _cell(v: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", v)).strip()


def _tables(sec: str) -> list[dict[str, Any]]:
    """The tables of a section: caption, header and rows of cell texts."""
    out = []
    for t in re.findall(r"<table>(.*?)</table>", sec, flags=re.S):
        cap = re.search(r"<caption>(.*?)</caption>", t, flags=re.S)
        heads = [_cell(h) for h in re.findall(r"<th>(.*?)</th>", t, flags=re.S)]
        rows = [[_cell(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S)]
                for r in re.findall(r"<tr>(.*?)</tr>", t.split("</thead>", 1)[-1], flags=re.S)]
        out.append({"caption": _cell(cap.group(1)) if cap else "", "columns": heads, "rows": rows})
    return out


def _table(sec: str, starts: str) -> dict[str, Any] | None:
    return next((t for t in _tables(sec) if t["caption"].startswith(starts)), None)


def _headline(sec: str) -> str:
    return _cell(re.search(r'<p class="answer-headline">(.*?)</p>', sec, flags=re.S).group(1))


_NUM = re.compile(r"[+-]?\d+\.(\d+)")
#: columns holding estimates or interval bounds (not ranks, p-values or counts)
_VALUE_COL = re.compile(r"^(estimate|delta|std_error|\d+% interval)")


def _decimals_of(table: dict[str, Any]) -> set[int]:
    """The numbers of decimals of every estimate and bound in a table."""
    cols = [i for i, c in enumerate(table["columns"]) if _VALUE_COL.match(c)]
    return {len(m) for row in table["rows"] for i in cols for m in _NUM.findall(row[i])}


def _assert_one_rule(sec: str) -> None:
    """Estimates and bounds of each answer table share decimals; p-values look like fmt_p's; no nan."""
    for t in _tables(sec):
        assert len(_decimals_of(t)) <= 1, (t["caption"], t["rows"][:3])
        for row in t["rows"]:
            assert not any(re.search(r"\b(nan|inf)\b", v, flags=re.I) for v in row), (t["caption"], row)
        for i, c in enumerate(t["columns"]):
            if c in ("p_value", "p_adj"):
                for row in t["rows"]:
                    v = row[i]
                    assert v == "" or re.fullmatch(r"\d\.\d{4}|\d\.\d\de-\d\d|<1e-300", v), v


def _assert_answer_of(res: Any, text: str) -> str:
    """The answer section shows the result's own answer: its headline sentence, its rank-interval
    label and (with differences) the sign convention; numbers by one rule."""
    ans = res.answer
    sec = _section(text)
    assert _headline(sec) == res.headline_text() == ans.headline_text()
    board = _table(sec, "Leaderboard")
    assert board is not None and ans.rank_label in board["caption"]
    assert f"rank interval ({ans.rank_kind})" in board["columns"]
    assert [r[board["columns"].index("name")] for r in board["rows"]] == list(ans.leaderboard["name"].astype(str))
    _assert_one_rule(sec)
    return sec


def _assert_differences(res: Any, text: str) -> None:
    """Every pair best first, the headline pair with a positive delta, under the convention."""
    ans = res.answer
    if ans.differences is None:
        pytest.xfail(f"{type(res).__name__} does not carry answer.differences yet (converted by the results helpers)")
    sec = _section(text)
    t = _table(sec, "Every pair, best first")
    assert t is not None and ans.convention in t["caption"]
    cols = t["columns"]
    order = list(ans.leaderboard["name"].astype(str))
    a, b = cols.index("system_a"), cols.index("system_b")
    delta = next(i for i, c in enumerate(cols) if c.startswith("delta"))
    for row in t["rows"]:
        assert order.index(row[a]) < order.index(row[b]), row  # best first
    h = ans.headline
    rows = t["rows"]
    if "task" in cols:  # the headline's question: its task, or the pooled rows
        task = cols.index("task")
        rows = [r for r in rows if r[task] == str(h.task if h.task is not None else "(all tasks)")] or rows
    head_rows = [r for r in rows if (r[a], r[b]) == (h.better, h.other)]
    assert head_rows and all(r[delta].startswith("+") for r in head_rows)
    assert "answer-figure" in sec  # the plot of every system's difference from the best


# ------------------------------------------------------------------------------ real results
def _scores(k: int = 4, n: int = 80, seed: int = 0, metric: str = "accuracy") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    item = rng.normal(0, 0.1, n)
    rows = [(f"system_{i}", f"q{j}", float(np.clip(0.5 + 0.04 * (k - i) + item[j] + rng.normal(0, 0.15), 0, 1)))
            for i in range(k) for j in range(n)]
    return pd.DataFrame(rows, columns=["system", "item", metric])


def _battles() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    strength = {"a": 1.0, "b": 0.5, "c": 0.4, "d": 0.0}
    rows = []
    for i in range(600):
        x, y = rng.choice(list(strength), 2, replace=False)
        p = 1 / (1 + np.exp(-(strength[x] - strength[y])))
        rows.append((x, y, "model_a" if rng.random() < p else "model_b", f"p{i % 120}"))
    return pd.DataFrame(rows, columns=["model_a", "model_b", "winner", "prompt"])


def _judged() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for s, b in zip("abc", (0.3, 0.0, -0.1)):
        y = rng.normal(0.5 + b, 1, 300)
        f = 0.8 * y + rng.normal(0, 0.6, 300)
        lab = np.zeros(300, bool)
        lab[rng.choice(300, 80, replace=False)] = True
        rows.append(pd.DataFrame({"system": s, "item": [f"i{i}" for i in range(300)], "judge_score": f,
                                  "human_score": np.where(lab, y, np.nan)}))
    return pd.concat(rows, ignore_index=True)


def _make(kind: str) -> Any:
    if kind == "compare_logs":
        return me.compare_logs(me.datasets.path("llm_inspect_logs"), metric="match", cluster="cluster",
                               model_check=False)
    if kind == "bootstrap":
        return me.bootstrap(_scores(metric="error_rate"), score="error_rate", system="system", item="item",
                            n_resamples=300, random_state=1, progress=False)
    if kind == "bradley_terry":
        return me.bradley_terry(_battles(), prompt="prompt", ties="davidson", position_bias=False, n_resamples=100,
                                random_state=1)
    if kind == "irt":
        from mixedeval.inference._irt_numpy import simulate_2pl, wide_frame

        Y, *_ = simulate_2pl(8, 40, random_state=4, rasch=True)
        return me.irt(wide_frame(Y).iloc[:5], "rasch_fixed", n_sim=0, engine="numpy")
    if kind == "judge_corrected":
        return me.judge_corrected(_judged())
    if kind == "subset_scores":
        from mixedeval.inference._irt_numpy import irt_numpy, simulate_2pl, wide_frame

        Y, *_ = simulate_2pl(60, 60, random_state=4)
        W = wide_frame(Y)
        cal = irt_numpy(W.iloc[:50], "2pl")
        sub = me.select_items(cal, 20, "stratified")
        return me.estimate_scores(cal, W.iloc[50:54][list(sub.anchors)], sub, n_folds=0)
    raise AssertionError(kind)


KINDS = ["compare_logs", "bootstrap", "bradley_terry", "irt", "judge_corrected", "subset_scores"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    d = tmp_path_factory.mktemp("issue38_report")
    out = {}
    for kind in KINDS:
        res = _make(kind)
        out[kind] = (res, me.report(res, path=d / f"{kind}.html", progress=False).read_text(encoding="utf-8"))
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_every_answering_result_lights_up_the_answer_section(reports, kind):
    res, text = reports[kind]
    assert list(re.findall(r'<section id="([a-z0-9_]+)"', text))[0] == "answer"
    _assert_answer_of(res, text)


@pytest.mark.parametrize("kind", KINDS)
def test_differences_best_first_with_the_headline_pair_positive(reports, kind):
    res, text = reports[kind]
    _assert_differences(res, text)


def test_checks_are_in_the_headline_units_with_its_decimals(reports):
    res, text = reports["compare_logs"]
    ans = res.answer
    assert ans.unit == "points" and ans.checks is not None and len(ans.checks)
    t = _table(_section(text), "Checks")
    assert "estimate (points)" in t["columns"]
    est = t["columns"].index("estimate (points)")
    p = t["columns"].index("p_value")
    head_decimals = len(_NUM.search(ans.headline_text().split(":", 1)[1]).group(1))
    for row, (_, chk) in zip(t["rows"], ans.checks.iterrows()):
        if np.isfinite(chk["estimate"]):
            assert float(row[est]) == pytest.approx(100 * chk["estimate"], abs=0.51 * 10 ** -head_decimals)
            assert len(_NUM.search(row[est]).group(1)) == head_decimals
        assert row[p] == (fmt_p(chk["p_value"]) if np.isfinite(chk["p_value"]) else "")


def test_compare_logs_with_its_model_checks(tmp_path):
    res = me.compare_logs(me.datasets.path("llm_inspect_logs"), metric="match", cluster="cluster")
    text = me.report(res, path=tmp_path / "cl.html", progress=False).read_text(encoding="utf-8")
    sec = _assert_answer_of(res, text)
    t = _table(sec, "Checks")
    assert len(t["rows"]) == len(res.answer.checks) >= 2  # the bootstrap and the model's checks
    verdicts = [r[t["columns"].index("verdict")] for r in t["rows"]]
    assert [v.split(":")[0].split()[0] for v in verdicts] == \
        [str(v).split(":")[0].split()[0] for v in res.answer.checks["verdict"]]
    differ = res.answer.check_summary() != ""
    assert (_status(text) != "ok") if differ else True
    assert _status(text) in (("differs", "warning") if differ else ("ok", "warning"))


# ------------------------------------------------------------------------------ fake answers
@dataclass(frozen=True, repr=False)
class Fake(A.AnswerMixin, ResultMixin):
    """A result that carries one answer (nothing else the report could look at)."""

    answer: Any
    warnings: tuple = ()
    provenance: dict = field(default_factory=dict)
    table: Any = field(default_factory=lambda: pd.DataFrame({"x": [1.0]}))

    _title = "Fake comparison"


@dataclass(frozen=True, repr=False)
class Early(Fake):
    _answer_priority = 10
    _title = "Early comparison"


@dataclass(frozen=True, repr=False)
class Late(Fake):
    _answer_priority = 90
    _title = "Late comparison"


def _fake_answer(*, higher_is_better: bool = True, reference: str | None = None, check_p: float = 0.003,
                 seed: int = 0, method: str = "paired t") -> A.Answer:
    """An answer of four systems: means with t intervals, every pair's paired difference best
    first, the headline (best vs runner-up, or the best other vs ``reference``) and two checks
    (one a bootstrap with p-value ``check_p``, one without a p-value)."""
    metric = "accuracy" if higher_is_better else "error_rate"
    df = _scores(seed=seed, metric=metric)
    wide = df.pivot(index="item", columns="system", values=metric)
    d = A.direction(metric)
    est = wide.mean()
    se = wide.std(ddof=1) / np.sqrt(len(wide))
    board = A.leaderboard(est, std_error=se, conf_low=est - 1.99 * se, conf_high=est + 1.99 * se,
                          higher_is_better=higher_is_better)
    rows = []
    cols = list(wide.columns)
    for i, a in enumerate(cols):
        for b in cols[i + 1:]:
            diff = wide[a] - wide[b]
            s = diff.std(ddof=1) / np.sqrt(len(diff))
            rows.append({"system_a": a, "system_b": b, "delta": diff.mean(), "std_error": s,
                         "conf_low": diff.mean() - 1.99 * s, "conf_high": diff.mean() + 1.99 * s, "p_value": 1e-5 * (i + 1)})
    pairs = pd.DataFrame(rows)
    better, other = A.choose_pair(board, reference)
    r, sign = A.pair_row(pairs, better, other)
    lo, hi = sorted((sign * r.conf_low, sign * r.conf_high))
    head = A.headline(better, other, sign * r.delta, r.std_error, lo, hi, 0.004, len(wide) - 1, method, d,
                      unit="points", scale=100, reference=reference)
    checks = A.checks_table([A.check_row("paired bootstrap", head, estimate=head.estimate * 0.9,
                                         conf_low=head.conf_low * 1.1, conf_high=head.conf_high * 0.9, p_value=check_p),
                             A.check_row("likelihood-ratio test", head, p_value=np.nan, why="not computed")])
    return A.Answer(direction=d, leaderboard=board, headline=head, checks=checks, method=method,
                    differences=A.best_first_pairs(pairs, list(board["name"]), higher_is_better))


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_fake_answer_differences_best_first_and_the_plot_from_the_best(tmp_path, higher_is_better):
    ans = _fake_answer(higher_is_better=higher_is_better)
    res = Fake(ans)
    text = me.report(res, path=tmp_path / "f.html", progress=False).read_text(encoding="utf-8")
    _assert_answer_of(res, text)
    _assert_differences(res, text)
    sec = _section(text)
    t = _table(sec, "Every pair, best first")
    assert len(t["rows"]) == 6 and "delta (points)" in t["columns"]
    # the delta cells are the answer's, in points, with one number of decimals
    cells = [float(r[t["columns"].index("delta (points)")]) for r in t["rows"]]
    np.testing.assert_allclose(cells, 100 * ans.differences["delta"].to_numpy(), atol=0.051)
    assert all(c > 0 for c in cells)  # every pair best first: the better system's advantage
    assert "best (" + ans.best + ")" in html.unescape(sec)


def test_the_plot_against_a_reference(tmp_path):
    board = _fake_answer().leaderboard
    worst = str(board["name"].iloc[-1])
    ans = _fake_answer(reference=worst)
    from mixedeval._report.answer import anchor_rows

    rows = anchor_rows(ans)
    assert (rows["versus"] == worst).all() and set(rows["name"]) == set(board["name"].iloc[:-1])
    assert (rows["estimate"] > 0).all()  # everyone beats the worst system
    text = me.report(Fake(ans), path=tmp_path / "r.html", progress=False).read_text(encoding="utf-8")
    assert f"difference from the reference ({worst})" in html.unescape(_section(text))


def test_badge_says_checks_differ_with_the_sentence(tmp_path):
    ans = _fake_answer(check_p=0.4)  # the bootstrap check is not significant: it differs
    assert ans.checks["verdict"].iloc[0].startswith("differs") and ans.check_summary()
    text = me.report(Fake(ans), path=tmp_path / "d.html", progress=False).read_text(encoding="utf-8")
    assert _status(text) == "differs"
    sec = _section(text)
    assert re.search(r'<span class="badge differs">checks differ</span>', sec)
    assert ans.check_summary() in html.unescape(sec)
    # the overview row says so too
    assert re.search(r'href="#answer">The answer</a></td><td><span class="badge differs">', text)


def test_badge_is_ok_when_every_check_agrees(tmp_path):
    ans = _fake_answer(check_p=0.003)
    assert not ans.check_summary()
    text = me.report(Fake(ans), path=tmp_path / "a.html", progress=False).read_text(encoding="utf-8")
    assert _status(text) == "ok" and "Checks differ" not in text


def test_a_severe_warning_is_never_under_an_ok_or_differs_badge(tmp_path):
    for p in (0.003, 0.4):
        res = Fake(_fake_answer(check_p=p), warnings=(ResultWarning("vcov_unstable", "unstable SEs", "mixedeval"),))
        text = me.report(res, path=tmp_path / f"s{p}.html", progress=False).read_text(encoding="utf-8")
        assert _status(text) == "warning" and 'id="read_first"' in text


def test_the_lowest_priority_answers_whatever_the_order(tmp_path):
    a, b = _fake_answer(seed=0, method="early method"), _fake_answer(seed=0, method="late method")
    for order in ((Early(a), Late(b)), (Late(b), Early(a))):
        text = me.report(*order, path=tmp_path / "p.html", progress=False).read_text(encoding="utf-8")
        sec = _section(text)
        assert "[early method]" in _headline(sec)
        checks = _table(sec, "Checks")
        # the other result answering the same pair is a check of the answer
        assert any(r[0].startswith("Late comparison (late method), also in this report") for r in checks["rows"])


def test_bootstrap_priority_follows_the_class_attribute(monkeypatch, tmp_path):
    """Two real results of one report: whichever class declares the lower priority answers."""
    df = _scores()
    boot = me.bootstrap(df, score="accuracy", system="system", item="item", n_resamples=200, random_state=1,
                        progress=False)
    fake = Fake(_fake_answer(method="fake method"))
    monkeypatch.setattr(type(boot), "_answer_priority", 5)
    text = me.report(fake, boot, path=tmp_path / "b1.html", progress=False).read_text(encoding="utf-8")
    assert _headline(_section(text)) == boot.headline_text()
    monkeypatch.setattr(type(boot), "_answer_priority", 95)
    text = me.report(fake, boot, path=tmp_path / "b2.html", progress=False).read_text(encoding="utf-8")
    assert "[fake method]" in _headline(_section(text))


def test_one_system_shows_its_no_headline_text(tmp_path):
    board = A.leaderboard(pd.Series({"only": 0.5}), std_error=[0.01], conf_low=[0.48], conf_high=[0.52])
    ans = A.Answer(direction=A.direction("accuracy"), leaderboard=board, headline=None,
                   no_headline_text="one system: no comparison")
    text = me.report(Fake(ans), path=tmp_path / "one.html", progress=False).read_text(encoding="utf-8")
    assert _headline(_section(text)) == "one system: no comparison"
    _assert_one_rule(_section(text))


# ------------------------------------------------------------------------------ structure
def test_the_report_finds_the_answer_without_type_names_or_sniffing():
    """The report's answer module holds no list of result type names and reads no answer part
    with getattr: the answer is a value, its priority a class attribute."""
    from mixedeval._report import answer as mod
    from mixedeval._report.dispatch import model_parts, result_kinds

    names = {t.__name__ for t in (*result_kinds(), *model_parts())} | {"EMM", "EMMResult", "GLMMEMMResult"}
    for path in (Path(mod.__file__), Path(mod.__file__).with_name("__init__.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not (strings & names), (path.name, strings & names)
        assert "ANSWER_PRIORITY" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        sniffed = [n.args[1].value for n in ast.walk(tree) if isinstance(n, ast.Call)
                   and getattr(n.func, "id", None) in ("getattr", "hasattr") and len(n.args) > 1
                   and isinstance(n.args[1], ast.Constant)
                   and n.args[1].value in ("headline", "leaderboard", "checks", "differences", "direction",
                                           "headline_text", "pairwise", "answer")]
        assert not sniffed, (path.name, sniffed)
    assert not hasattr(mod, "ANSWER_PRIORITY") and not hasattr(mod, "_value") and not hasattr(mod, "_pairs_table")


def test_rank_intervals_are_labelled_wherever_shown(reports):
    """The answer's leaderboard leads with its kind; the bootstrap's rank distribution says its
    intervals are marginal, its rank_intervals() table that they are simultaneous."""
    res, text = reports["bootstrap"]
    sec = html.unescape(_section(text, "bootstrap"))
    assert "rank_conf_low/rank_conf_high: marginal rank interval" in sec
    assert "Simultaneous 95% rank intervals" in sec
    assert f"rank interval ({res.answer.rank_kind})" in html.unescape(_section(text))
    irt, itext = reports["irt"]
    assert irt.answer.rank_label in html.unescape(_section(itext, "irt"))
    jc, jtext = reports["judge_corrected"]
    assert jc.answer.rank_label in html.unescape(_section(jtext, "judges"))


def test_differences_with_tasks_lead_with_the_headline_question(reports, tmp_path):
    """An answer whose differences hold every task's pairs and the pooled ones (as compare_logs'
    pair table does): the pooled rows, the headline's question, lead the table and make the plot."""
    import dataclasses

    res, _ = reports["compare_logs"]
    ans = res.answer
    order = list(ans.leaderboard["name"].astype(str))
    diffs = A.best_first_pairs(res.table, order, True)
    assert set(diffs["task"]) == {"arithmetic", "number_facts", "(all tasks)"}
    fake = Fake(dataclasses.replace(ans, differences=diffs))
    text = me.report(fake, path=tmp_path / "tasks.html", progress=False).read_text(encoding="utf-8")
    _assert_answer_of(fake, text)
    _assert_differences(fake, text)
    t = _table(_section(text), "Every pair, best first")
    assert [r[0] for r in t["rows"]][:3] == ["(all tasks)"] * 3 and len(t["rows"]) == len(diffs)
    from mixedeval._report.answer import anchor_rows

    rows = anchor_rows(fake.answer)
    pooled = diffs[diffs["task"] == "(all tasks)"]
    assert list(rows["name"]) == order[1:] and (rows["versus"] == order[0]).all()
    np.testing.assert_allclose(-rows["estimate"].to_numpy(), pooled["delta"].to_numpy()[:2], rtol=1e-12)


def test_the_models_means_answer_with_the_likelihood_ratio_test_as_a_check(tmp_path):
    """EMMs carry their answer (computed from the means); the report's model adds its
    likelihood-ratio test to the checks; numbers by one rule."""
    df = me.datasets.load("kreutzer_ter")
    fit = me.lmm("ter ~ system + (1|sentence_id)", data=df, reml=True)
    emm = fit.emmeans("system")
    text = me.report(fit, emm, path=tmp_path / "emm.html", n_sim=20, progress=False).read_text(encoding="utf-8")
    sec = _assert_answer_of(emm, text)
    checks = _table(sec, "Checks")
    assert any(r[0].startswith("likelihood-ratio test of the model's fixed effects") for r in checks["rows"])
    assert "lower ter is better" in _headline(sec)


def test_p_value_columns_of_any_name_use_the_one_format():
    """fit_p_adj (the IRT items' adjusted item-fit p) printed 1.8710e-05 beside fit_p_value's 1.87e-05."""
    from mixedeval._report.blocks import fmt_cell, is_p_column

    assert is_p_column("fit_p_adj") and is_p_column("fit_p_value") and not is_p_column("p_rank_1")
    assert fmt_cell(1.871e-05, "fit_p_adj") == fmt_cell(1.871e-05, "fit_p_value") == fmt_p(1.871e-05) == "1.87e-05"


def test_an_answer_that_cannot_be_computed_is_an_error_in_the_answer_section(tmp_path):
    @dataclass(frozen=True, repr=False)
    class Broken(A.AnswerMixin, ResultMixin):
        table: Any = field(default_factory=lambda: pd.DataFrame({"x": [1.0]}))

        @property
        def answer(self):
            raise ValueError("no answer here")

    text = me.report(Broken(), path=tmp_path / "broken.html", progress=False).read_text(encoding="utf-8")
    assert _status(text) == "error" and "no answer here" in _section(text)


def test_settings_that_hold_p_values_use_the_one_format():
    """compare_logs' settings wrote the likelihood-ratio p with 4 significant digits (1.871e-05)
    beside the tables' fmt_p (1.87e-05)."""
    from mixedeval._report.blocks import Section

    sec = Section("s", "S")
    sec.kv([("check: system effect, likelihood-ratio p-value (all systems at once)", f"{1.871e-05:.4g}"),
            ("omnibus GLRT p-value (check)", 0.012345), ("p-value adjustment", "holm"), ("n_items", 60)])
    vals = dict(sec.blocks[0]["pairs"])
    assert vals["check: system effect, likelihood-ratio p-value (all systems at once)"] == "1.87e-05"
    assert vals["omnibus GLRT p-value (check)"] == "0.0123"
    assert vals["p-value adjustment"] == "holm" and vals["n_items"] == "60"
