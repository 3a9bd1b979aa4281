"""Report sections of pass@k / pass^k and of time horizons (issue 41, items 2 and 3): written by
``mixedeval pass-k ... --report`` and ``mixedeval horizon ... --report``, opening with the answer
(the same headline as the command line's text and its ``--json``), a table per kind at k, the
success curves with the horizons marked on them, and user text (a system called ``<script>``)
shown as text."""
from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd
import pytest
from scipy import special

import mixedeval as me
from mixedeval._report.agentic import horizon_curve_plot
from mixedeval.cli import main

EVIL = "<script>alert(1)</script>"


def _attempts(seed=0, T=12, n=4):
    rng = np.random.default_rng(seed)
    rows = []
    for s, p in (("alpha", 0.75), (EVIL, 0.5), ("gamma", 0.35)):
        for t in range(T):
            pt = float(np.clip(p + rng.normal(0, 0.2), 0.02, 0.98))
            rows += [(s, f"t{t}", e, float(rng.random() < pt)) for e in range(n)]
    return pd.DataFrame(rows, columns=["system", "item", "epoch", "score"])


def _lengths(seed=1, T=30, n=3):
    rng = np.random.default_rng(seed)
    L = 2 ** rng.uniform(0, 9, T)
    rows = []
    for s, h50 in (("alpha", 40.0), (EVIL, 6.0)):
        for i in range(T):
            p = special.expit(-0.9 * (np.log2(L[i]) - np.log2(h50)))
            rows += [(s, f"t{i}", f"f{i % 6}", L[i], e, float(rng.random() < p)) for e in range(n)]
    return pd.DataFrame(rows, columns=["system", "item", "family", "human_minutes", "epoch", "score"])


def _run(capsys, argv):
    code = main(argv)
    cap = capsys.readouterr()
    assert code == 0, cap.err
    return cap.out


def _plain(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def _assert_escaped(page: str) -> None:
    assert "<script>alert" not in page  # no executable script from user text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def _sections(page: str) -> dict[str, str]:
    """Section id -> its HTML, in page order."""
    parts = re.split(r'<section id="', page)[1:]
    return {p[:p.index('"')]: p for p in parts}


def _check_report(page: str, headline: str, section_id: str) -> str:
    _assert_escaped(page)
    secs = _sections(page)
    # the answer opens the page, with the same sentence as the CLI and JSON; the details follow
    assert list(secs)[0] == "answer" and section_id in secs
    assert headline in _plain(secs["answer"])
    assert list(secs).index(section_id) > 0
    return _plain(secs[section_id])


def test_pass_k_report_from_the_cli(tmp_path, capsys):
    df = _attempts()
    path = tmp_path / "attempts.csv"
    df.to_csv(path, index=False)
    base = ["pass-k", str(path), "--k", "2", "--kind", "both", "--quiet"]
    js = json.loads(_run(capsys, [*base, "--json"]))
    text = _run(capsys, [*base, "--report", str(tmp_path / "r.html")])
    head = js["answer"]["headline"]["text"]
    assert text.splitlines()[0] == f"headline: {head}"
    api = me.pass_at_k(df, k=2, kind="both", random_state=0)
    assert head == api.headline_text()
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    plain = _check_report(page, head, "pass_at_k")
    # one table per kind at k, with the API's numbers (5 significant digits)
    for kind in ("pass@k", "pass^k"):
        assert f"{kind} at k = 2 (" in plain
        est = api.table[api.table["kind"] == kind]["estimate"]
        for v in est:
            assert f"{v:.5g}" in plain or f"{v:.4g}" in plain
    assert "Per system and task: attempts n, successes c" in plain


def test_horizon_report_from_the_cli(tmp_path, capsys):
    df = _lengths()
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    base = ["horizon", str(path), "--length", "human_minutes", "--family", "family", "--n-resamples", "60",
            "--no-glmm", "--quiet"]
    js = json.loads(_run(capsys, [*base, "--json"]))
    text = _run(capsys, [*base, "--report", str(tmp_path / "h.html")])
    head = js["answer"]["headline"]["text"]
    assert text.splitlines()[0] == f"headline: {head}"
    page = (tmp_path / "h.html").read_text(encoding="utf-8")
    plain = _check_report(page, head, "time_horizon")
    assert "Fitted success probability against log2(human_minutes)" in plain
    assert "Sensitivity: each system's horizon under each variant" in plain
    sec = page[page.index('id="time_horizon"'):]
    assert sec.count("data:image/svg+xml") >= 2  # the success curves and the horizon intervals


def test_the_horizons_are_marked_on_the_fitted_curves():
    df = _lengths(seed=4)
    res = me.time_horizon(df, family="family", n_resamples=0, hierarchical=False, levels=(0.5, 0.8))
    fig = horizon_curve_plot(res.fits, res.table, order=list(res.answer.leaderboard["name"]))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(res.answer.leaderboard["name"])
    fits = res.fits.set_index("system")
    marks = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    curves = [ln for ln in ax.get_lines() if ln.get_marker() in ("None", "", None) and ln.get_label() in fits.index]
    assert len(marks) == len(curves) == 2
    for curve, mark in zip(curves, marks):
        a, b = fits.loc[curve.get_label(), ["intercept", "slope"]]
        x, y = np.asarray(curve.get_xdata()), np.asarray(curve.get_ydata())
        np.testing.assert_allclose(y, special.expit(a + b * x), rtol=1e-12)
        mx, my = np.asarray(mark.get_xdata()), np.asarray(mark.get_ydata())
        np.testing.assert_allclose(my, [0.5, 0.8])
        # the mark is where the fitted curve crosses the level: the table's horizon, on the curve
        h = res.table[res.table["system"] == curve.get_label()].set_index("p_success")["horizon"]
        np.testing.assert_allclose(mx, np.log2(h.loc[[0.5, 0.8]].to_numpy()), rtol=1e-12)
        np.testing.assert_allclose(special.expit(a + b * mx), my, rtol=1e-9)


def test_the_api_report_of_both_results_keeps_each_section(tmp_path):
    """me.report of a pass_at_k and a time_horizon result: the answer of the lower priority
    (pass_at_k's) opens the page, and each result has its own section."""
    pk = me.pass_at_k(_attempts(), k=3, kind="pass^k", random_state=0, n_resamples=200)
    th = me.time_horizon(_lengths(), n_resamples=40, random_state=0, hierarchical=False)
    assert pk._answer_priority < th._answer_priority
    page = me.report(pk, th, path=tmp_path / "both.html", progress=False).read_text(encoding="utf-8")
    _assert_escaped(page)
    secs = _sections(page)
    assert list(secs)[0] == "answer" and pk.headline_text() in _plain(secs["answer"])
    assert "pass^k at k = 3 (" in _plain(secs["pass_at_k"])
    assert th.headline_text() in _plain(secs["time_horizon"])  # its own section states its headline
    with pytest.raises(me.DataError):
        me.report({"not": "a result"}, path=tmp_path / "bad.html", progress=False)
