"""The report answers on its first screen (issue 30): the headline sentence, the best-first
leaderboard, the plot of every system's difference from the best (or the reference) and the
checks come first; warnings of the checks have their own section and never set the answer's
badge; R's notes are notes; empty columns are left out; balanced designs are called balanced;
DHARMa's residual-vs-predicted panel is drawn as boxplots for few distinct predictions; progress
bars stay off without a terminal. The browser tests measure the page in headless Chromium at
1280 x 800 with 2, 3, 5 and 12 systems."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval import _answer as A
from mixedeval._progress import bar_disabled
from mixedeval.results import ResultMixin, ResultWarning


# ------------------------------------------------------------------------------- stubs
@dataclass(frozen=True, repr=False)
class StubComparison(A.AnswerMixin, ResultMixin):
    """A result carrying one ``answer`` (as every comparing result does): its pairwise table,
    warnings of which some belong to a check."""

    table: Any
    answer: Any
    warnings: tuple = ()
    provenance: dict = field(default_factory=dict)

    _title = "Stub comparison"


def _scores(k: int, n: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    names = [f"system_{i:02d}" for i in range(k)]
    item = rng.normal(0, 0.1, n)
    rows = [(s, f"q{j}", float(np.clip(0.5 + 0.03 * (k - i) + item[j] + rng.normal(0, 0.15), 0, 1)))
            for i, s in enumerate(names) for j in range(n)]
    return pd.DataFrame(rows, columns=["system", "item", "accuracy"])


def _stub(k: int, *, secondary: bool = True) -> StubComparison:
    """A k-system comparison from its scores: per-system means with t intervals, paired
    differences of every pair, the leaderboard and headline of mixedeval._answer."""
    df = _scores(k)
    wide = df.pivot(index="item", columns="system", values="accuracy")
    d = A.direction("accuracy")
    est = wide.mean()
    se = wide.std(ddof=1) / np.sqrt(len(wide))
    board = A.leaderboard(est, std_error=se, conf_low=est - 1.98 * se, conf_high=est + 1.98 * se)
    rows = []
    cols = list(wide.columns)
    for i, a in enumerate(cols):
        for b in cols[i + 1:]:
            diff = wide[a] - wide[b]
            s = diff.std(ddof=1) / np.sqrt(len(diff))
            rows.append({"task": "(all tasks)", "system_a": a, "system_b": b, "delta": diff.mean(), "std_error": s,
                         "conf_low": diff.mean() - 1.98 * s, "conf_high": diff.mean() + 1.98 * s,
                         "p_value": 0.01, "empty": np.nan})
    table = pd.DataFrame(rows)
    best, second = A.choose_pair(board)
    r = table[((table.system_a == best) & (table.system_b == second)) | ((table.system_a == second) &
                                                                          (table.system_b == best))].iloc[0]
    head = A.headline(r.system_a, r.system_b, r.delta, r.std_error, r.conf_low, r.conf_high, 0.004, len(wide) - 1,
                      "paired t", d, unit="points", scale=100)
    checks = A.checks_table([A.check_row("likelihood-ratio test (GLMM)", head, p_value=1e-6),
                             A.check_row("paired bootstrap", head, estimate=head.estimate, p_value=0.2)])
    ws = (ResultWarning("few_items", "only 120 questions per system", "mixedeval"),
          ResultWarning("r_message", "NOTE: Results may be misleading due to involvement in interactions", "emmeans"))
    if secondary:
        ws += (ResultWarning("vcov_unstable", "the intercept's standard error is unstable", "check: GLMM"),)
    diffs = A.best_first_pairs(table, list(board["name"]), True)
    answer = A.Answer(direction=d, leaderboard=board, headline=head, differences=diffs, checks=checks,
                      method="paired t")
    return StubComparison(table=table, answer=answer, warnings=ws)


def _from_anchor(res: Any) -> pd.DataFrame:
    """Every system's difference from the best (or the reference): name, versus, estimate (> 0:
    better than it), as the report's plot reads them from ``answer.differences``; a result not
    yet carrying them in its answer (transition) gives its own table of that shape."""
    from mixedeval._report.answer import anchor_rows

    if res.answer.differences is not None:
        return anchor_rows(res.answer)
    return res.differences


def _sections(text: str) -> dict[str, str]:
    return dict(re.findall(r'<section id="([a-z0-9_]+)"[^>]*>(.*?)</section>', text, flags=re.S))


def _status(text: str, sid: str) -> str:
    return re.search(rf'<section id="{sid}" class="status-([a-z_]+)"', text).group(1)


@pytest.fixture(scope="module")
def stub_reports(tmp_path_factory):
    d = tmp_path_factory.mktemp("answer")
    return {k: me.report(_stub(k), path=d / f"stub{k}.html", progress=False) for k in (2, 3, 5, 12)}


# ------------------------------------------------------------------------------- content
def test_the_answer_comes_first(stub_reports):
    text = stub_reports[3].read_text(encoding="utf-8")
    ET.fromstring(text.split("\n", 1)[1])  # well formed
    ids = list(_sections(text))
    assert ids[0] == "answer" and ids[1] == "overview"
    assert ids.index("answer") < ids.index("design") < ids.index("result") < ids.index("provenance")
    ans = _sections(text)["answer"]
    stub = _stub(3)
    # the headline sentence, signed so the better system leads (+), is the answer's first line
    first = re.search(r'<p class="answer-headline">(.*?)</p>', ans).group(1).replace("&#43;", "+")
    assert first == stub.headline.text().replace("'", "&#39;") and first.startswith(f"{stub.headline.better} − ")
    assert re.search(r": \+\d", first)
    # the leaderboard best first, then the difference plot, then the checks with their verdicts
    names = re.findall(r"<td>(system_\d\d)</td>", ans)[:3]
    assert names == list(stub.leaderboard["name"])
    assert ans.index("answer-board") < ans.index("answer-figure") < ans.index("answer-checks")
    assert "data:image/svg+xml;base64," in ans
    assert "differs" in ans and "agrees" in ans
    # the navigation opens with the answer
    nav = re.search(r"<nav.*?</nav>", text, flags=re.S).group(0)
    assert re.findall(r'href="#([a-z_]+)"', nav)[:2] == ["answer", "overview"]


def test_check_warnings_have_their_own_section_and_never_set_the_answer_badge(stub_reports):
    text = stub_reports[2].read_text(encoding="utf-8")
    secs = _sections(text)
    assert 'id="read_first"' not in text and "Severe, read this first" not in text
    # the answer's badge: its paired-bootstrap check differs (never "ok" then), not the checks' warnings
    assert _status(text, "answer") == "differs" and _status(text, "result") == "ok"
    assert _status(text, "check_warnings") == "warning"
    assert "intercept&#39;s standard error is unstable" in secs["check_warnings"]
    assert "standard error is unstable" not in secs["result"] and "standard error is unstable" not in secs["answer"]
    # R's note is a note, not a warning
    assert '<ul class="notes">' in secs["result"] and "involvement in interactions" in secs["result"]
    warned = re.findall(r'<ul class="warnings">(.*?)</ul>', secs["result"], flags=re.S)
    assert warned and all("involvement in interactions" not in w for w in warned)
    assert "only 120 questions" in warned[0]


def test_no_all_empty_columns(stub_reports):
    secs = _sections(stub_reports[3].read_text(encoding="utf-8"))
    heads = re.findall(r"<th>([^<]*)</th>", secs["result"])
    assert "delta" in heads and "empty" not in heads


def test_the_answer_of_a_bootstrap_follows_the_direction(tmp_path):
    df = _scores(4).rename(columns={"accuracy": "error_rate"})
    b = me.bootstrap(df, score="error_rate", system="system", item="item", n_resamples=300, random_state=1,
                     progress=False)
    assert b.direction.higher_is_better is False and b.direction.source == "known metric"
    means = df.groupby("system")["error_rate"].mean().sort_values()
    assert list(b.leaderboard["name"]) == list(means.index)  # lowest error first
    assert b.headline.better == means.index[0] and b.headline.estimate > 0
    assert (b.differences["delta"] > 0).all()  # every pair best first, + = system_a has the lower error
    d = A.versus(b.differences, means.index[0], order=list(b.leaderboard["name"]))  # issue 38: vs the best
    assert list(d["name"]) == list(means.index[1:]) and (d["estimate"] < 0).all() and (d["versus"] == means.index[0]).all()
    np.testing.assert_allclose(-d["estimate"].to_numpy(), (means.iloc[1:] - means.iloc[0]).to_numpy(), rtol=1e-12)
    ref = me.bootstrap(df, score="error_rate", system="system", item="item", n_resamples=300, random_state=1,
                       progress=False, reference="system_00")  # the worst (highest error): the best against it
    assert (ref.headline.better, ref.headline.other) == (means.index[0], "system_00")
    assert ref.headline.reference == "system_00"
    assert (A.versus(ref.differences, "system_00")["versus"] == "system_00").all()
    with pytest.raises(me.DataError, match="reference"):
        me.bootstrap(df, score="error_rate", system="system", item="item", n_resamples=50, reference="nope")
    text = me.report(b, path=tmp_path / "b.html", progress=False).read_text(encoding="utf-8")
    ans = _sections(text)["answer"]
    assert "lower error_rate is better" in ans and means.index[0] in re.search(r'answer-headline">(.*?)<', ans).group(1)


# ------------------------------------------------------------------------------- details
def test_balanced_logs_are_called_balanced():
    rows = [(s, t, f"{t}-{i}", e) for s in "ab" for t in "xy" for i in range(5) for e in range(3)]
    df = pd.DataFrame(rows, columns=["system", "task", "item", "epoch"])
    assert me.describe_design(df, ["system", "task", "item", "epoch"]).balanced
    assert not me.describe_design(df.iloc[1:], ["system", "task", "item", "epoch"]).balanced
    seeds = pd.DataFrame([(s, f"{s}{r}", i) for s in "ab" for r in range(3) for i in range(4)],
                         columns=["system", "run", "item"])  # runs nested in systems, complete
    assert me.describe_design(seeds, ["system", "run", "item"]).balanced


def test_residuals_against_few_predictions_are_boxplots():
    from mixedeval.diagnostics.plots import plot_residuals_vs_predicted

    rng = np.random.default_rng(0)
    pred = np.repeat([0.2, 0.5, 0.7], 100)
    few = SimpleNamespace(predicted=pred, residuals=rng.random(300))
    ax = plot_residuals_vs_predicted(few).axes[0]
    assert "3 distinct values" in ax.get_xlabel()
    assert len(ax.patches) == 3 and not ax.collections  # three boxes, no scatter
    many = SimpleNamespace(predicted=rng.normal(size=300), residuals=rng.random(300))
    ax2 = plot_residuals_vs_predicted(many).axes[0]
    assert "rank transformed" in ax2.get_xlabel() and ax2.collections  # a scatter, as before
    assert len(plot_residuals_vs_predicted(few, as_factor=False).axes[0].collections) == 1


def test_progress_bars_stay_off_without_a_terminal(monkeypatch):
    import io
    import sys

    monkeypatch.delenv("MIXEDEVAL_QUIET", raising=False)
    monkeypatch.delenv("MIXEDEVAL_PROGRESS", raising=False)
    monkeypatch.setitem(sys.modules, "ipykernel", None)
    monkeypatch.delitem(sys.modules, "ipykernel")
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert bar_disabled(True) and bar_disabled(False)
    monkeypatch.setenv("MIXEDEVAL_PROGRESS", "always")
    assert not bar_disabled(True) and bar_disabled(False)

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("MIXEDEVAL_PROGRESS")
    monkeypatch.setattr(sys, "stderr", Tty())
    assert not bar_disabled(True)
    monkeypatch.setenv("MIXEDEVAL_QUIET", "1")
    assert bar_disabled(True)


# ------------------------------------------------------------------------------- chromium
def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


MEASURE = """<script>window.addEventListener('load', function () {
  function top(sel) { var e = document.querySelector(sel); return e ? e.getBoundingClientRect().top : -1; }
  function bottom(sel) { var e = document.querySelector(sel); return e ? e.getBoundingClientRect().bottom : -1; }
  var wide = [];
  document.querySelectorAll('main *').forEach(function (e) {
    var r = e.getBoundingClientRect(); if (r.right > window.innerWidth + 1 && !e.closest('.table-wrap')) wide.push(e.tagName);
  });
  document.body.setAttribute('data-measure', JSON.stringify({
    scroll_width: document.documentElement.scrollWidth, inner_width: window.innerWidth,
    headline: top('.answer-headline'), board: top('.answer-board table'), board_bottom: bottom('.answer-board table'),
    figure: top('.answer-figure img'), checks: top('.answer-checks table'), wide: wide.slice(0, 5)}));
});</script>"""


def measure(html: Path, tmp_path: Path, width: int = 1280, height: int = 800) -> dict[str, Any]:
    """Layout figures of a report page in headless Chromium (a copy with a measuring script; the
    report itself has no scripts)."""
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium, or run scripts/setup.sh)")
    page = tmp_path / f"measure_{html.stem}.html"
    page.write_text(html.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    res = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / ('prof_' + html.stem)}",
                          f"--window-size={width},{height}", "--virtual-time-budget=3000", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    m = re.search(r"data-measure=\"([^\"]*)\"", res.stdout)
    assert m, res.stdout[:500]
    return json.loads(m.group(1).replace("&quot;", '"'))


@pytest.mark.browser
@pytest.mark.parametrize("k", [2, 3, 5, 12])
def test_first_screen_holds_the_answer(stub_reports, tmp_path, k):
    m = measure(stub_reports[k], tmp_path)
    assert m["scroll_width"] <= 1280, m  # no horizontal overflow at 1280 px
    assert m["wide"] == [], m
    assert 0 < m["headline"] < 200, m
    assert 0 < m["board"] < 800 and 0 < m["figure"] < 800, m
    if k <= 5:  # the whole leaderboard and the checks are on the first screen
        assert m["board_bottom"] < 800 and 0 < m["checks"] < 800, m


@pytest.mark.browser
def test_a_report_with_a_model_and_long_tables_does_not_overflow(tmp_path):
    """A report whose tables are wider than the page (the run-averaged analyses, contrasts with
    effect sizes): the tables scroll inside their own box."""
    df = _scores(3, n=40)
    wide = pd.DataFrame({f"a_rather_long_column_name_{i}": np.arange(3) * 1.5 for i in range(18)})
    b = me.bootstrap(df, score="accuracy", system="system", item="item", n_resamples=200, random_state=1,
                     progress=False)
    path = me.report(b, extra_tables={"wide": wide}, path=tmp_path / "wide.html", progress=False)
    m = measure(path, tmp_path)
    assert m["scroll_width"] <= 1280 and m["wide"] == [], m


def test_bradley_terry_answers(tmp_path):
    from scipy import stats

    rng = np.random.default_rng(3)
    strength = {"a": 1.0, "b": 0.5, "c": 0.4, "d": 0.0}
    rows = []
    for i in range(800):
        x, y = rng.choice(list(strength), 2, replace=False)
        p = 1 / (1 + np.exp(-(strength[x] - strength[y])))
        rows.append((x, y, "model_a" if rng.random() < p else "model_b", f"p{i % 150}"))
    battles = pd.DataFrame(rows, columns=["model_a", "model_b", "winner", "prompt"])
    res = me.bradley_terry(battles, prompt="prompt", ties="davidson", position_bias=False, n_resamples=100,
                           random_state=1)
    board = res.leaderboard
    assert list(board["name"]) == list(res.table["model"].astype(str)) and res.direction.higher_is_better
    assert list(board["rank_low"]) == list(res.ranks["rank_low"])
    h = res.headline
    t = res.table.set_index("model")["estimate"]
    assert (h.better, h.other) == (board["name"][0], board["name"][1])
    assert h.estimate == pytest.approx(t[h.better] - t[h.other], rel=1e-12)
    pw = res.rank_result.pairwise
    se = float(pw[(pw.name_a.isin([h.better, h.other])) & (pw.name_b.isin([h.better, h.other]))]["std_error"].iloc[0])
    assert h.std_error == pytest.approx(se) and h.p_value == pytest.approx(2 * stats.norm.sf(h.estimate / se))
    assert res.p_value == h.p_value and res.headline_text().startswith(f"{h.better} − {h.other}: +")
    vs = A.versus(res.differences, h.better, order=list(board["name"]))  # issue 38: pairs best first
    assert list(vs["name"]) == list(board["name"][1:]) and (vs["versus"] == h.better).all()
    assert (res.differences["system_a"].iloc[0], res.differences["system_b"].iloc[0]) == (h.better, h.other)
    text = me.report(res, path=tmp_path / "bt.html", progress=False).read_text(encoding="utf-8")
    assert list(_sections(text))[0] == "answer" and "Bradley-Terry strength difference" in _sections(text)["answer"]
