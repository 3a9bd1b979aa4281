"""The HTML report: well-formed, self-contained, every section of a full analysis present with the
numbers of the results it shows, every result type dispatched to its section, failures recorded
in their section, and rendered by headless Chromium."""
from __future__ import annotations

import base64
import html.parser
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.inference._lmm import lmm
from mixedeval._report import SECTION_TITLES
from mixedeval._report.blocks import fmt_cell, fmt_number, fmt_p
from mixedeval._report.compute import first_factor, null_formula, split_formula
from mixedeval._report.dispatch import model_parts, result_kinds

N_SIM = 50
#: the sections of the full analysis, in report order
FULL = ["design", "model", "fixed", "random", "anova", "lrt", "emmeans", "contrasts", "r2_icc", "diagnostics",
        "bootstrap", "vca", "disparity", "disparity_bootstrap", "disparity_robustness", "extra", "provenance"]
VOID = {"meta", "img", "br", "hr", "input", "link", "source", "wbr", "col", "area", "base", "embed", "param", "track"}


# ------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def analysis(ter, annotation):
    fit = lmm("ter ~ system + (1|sentence_id)", ter)
    null = lmm("ter ~ 1 + (1|sentence_id)", ter)
    emm = fit.emmeans("system")
    per_sentence = ter.groupby(["system", "sentence_id"], as_index=False, observed=True)["ter"].mean()
    marking = annotation[annotation["mode"] == "Marking"]
    disp = me.language_disparity(me.datasets.load("hu2025_records"), drop_aggregates=True)
    return {
        "fit": fit, "data": ter, "anova": fit.anova(), "comparison": me.compare(null, fit), "emmeans": emm,
        "contrasts": emm.contrasts(method="pairwise", adjust="holm"), "r2": fit.r2(), "icc": fit.icc(),
        "diagnostics": fit.diagnose(n_sim=N_SIM, random_state=7, group="system"),
        "bootstrap": me.bootstrap(per_sentence, score="ter", system="system", item="sentence_id", n_resamples=200,
                                  random_state=1, higher_is_better=False, progress=False),
        "vca": me.variance_components(marking, score="score", object="sentence", facets=["rater", "occasion"],
                                      interactions="all"),
        "disparity": [disp, disp.bootstrap(n_resamples=5, random_state=1, progress=False), disp.robustness(k=5)],
    }


def _results(analysis, drop=()):
    """The analysis' result objects, in an arbitrary order (the report sorts them by type)."""
    return [v for k, v in reversed(analysis.items()) if k != "data" and k not in drop]


@pytest.fixture(scope="module")
def full_report(analysis, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "full.html"
    data_before = analysis["data"].copy()
    out = me.report(*_results(analysis), path=path, data=analysis["data"],
                    design_factors=["system", "sentence_id", "replication"],
                    d_study_grid={"rater": [1, 2, 4], "occasion": [1, 2]},
                    input_file=Path(me.__file__).parent / "datasets_files" / "kreutzer_ter.csv",
                    extra_tables={"A user table": pd.DataFrame({"x": [1, 2], "y": [0.5, 1e-12]})}, progress=False)
    pd.testing.assert_frame_equal(analysis["data"], data_before)  # the caller's data is never modified
    return out


def _sections(text: str) -> dict[str, str]:
    """section id -> its HTML."""
    return dict(re.findall(r'<section id="([a-z0-9_]+)"[^>]*>(.*?)</section>', text, flags=re.S))


def _status(text: str, sid: str) -> str:
    return re.search(rf'<section id="{sid}" class="status-([a-z_]+)"', text).group(1)


def _tables(section_html: str) -> list[pd.DataFrame]:
    root = ET.fromstring(f"<div>{section_html}</div>")
    out = []
    for t in root.iter("table"):
        head = [th.text or "" for th in t.find("thead").iter("th")]
        rows = [["".join(td.itertext()) for td in tr.iter("td")] for tr in t.find("tbody").iter("tr")]
        out.append(pd.DataFrame(rows, columns=head))
    return out


class _TagBalance(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        if tag not in VOID:
            self.errors.append(f"<{tag} /> is not a void element")

    def handle_endtag(self, tag):
        if tag in VOID:
            self.errors.append(f"</{tag}> closes a void element")
        elif not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()


# ----------------------------------------------------------------------------------- tests
def test_html_is_well_formed(full_report):
    text = full_report.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    root = ET.parse(full_report).getroot()  # strict XML parse: every element closed, attributes quoted
    assert root.tag == "html"
    p = _TagBalance()
    p.feed(text)
    p.close()
    assert p.errors == [] and p.stack == []


def test_every_section_of_a_full_analysis_is_present(full_report):
    text = full_report.read_text(encoding="utf-8")
    secs = _sections(text)
    assert list(secs) == ["answer", "overview", *FULL]  # the answer first (issue 30), then the sections
    assert [s for s in SECTION_TITLES if s in FULL] == FULL  # SECTION_TITLES is the report order
    for sid in FULL:
        title = SECTION_TITLES[sid]
        assert f"<h2>{title} <span" in secs[sid].replace("&#39;", "'").replace("&amp;", "&"), sid
        # a full analysis has no failed or missing section (warnings are verdicts, not failures)
        assert _status(text, sid) in ("ok", "warning"), (sid, _status(text, sid))
    assert 'class="error-block"' not in text


def test_tables_show_the_results(full_report, analysis):
    secs = _sections(full_report.read_text(encoding="utf-8"))
    anova = _tables(secs["anova"])[0]
    exp = analysis["anova"].table
    assert list(anova.columns) == list(exp.columns)
    for col in ("f_value", "eta2_partial", "eta2_partial_ci_low", "den_df"):
        assert anova[col].tolist() == [fmt_number(v) for v in exp[col]]
    assert anova["p_value"].tolist() == [fmt_p(v) for v in exp["p_value"]]
    con = _tables(secs["contrasts"])[0]
    assert con["contrast"].tolist() == list(analysis["contrasts"].table["contrast"])
    assert con["p_value"].tolist() == [fmt_p(v) for v in analysis["contrasts"].table["p_value"]]
    assert con["p_adj"].tolist() == [fmt_p(v) for v in analysis["contrasts"].table["p_adj"]]
    assert "p_adj adjusted by holm" in secs["contrasts"]
    assert "effect_size" in con.columns
    lrt = _tables(secs["lrt"])[0]
    assert lrt["chisq"].iloc[-1] == fmt_number(analysis["comparison"].table["chisq"].iloc[-1])
    assert "chi-square by ML" in secs["lrt"]
    r2 = analysis["r2"]
    assert fmt_number(r2.r2_marginal) in secs["r2_icc"] and fmt_number(analysis["icc"].icc_adjusted) in secs["r2_icc"]
    diag = _tables(secs["diagnostics"])[0]
    assert set(diag["verdict"]) <= {"ok", "warning", "not_applicable"}
    assert diag["name"].tolist()[: len(analysis["diagnostics"].tests)] == list(analysis["diagnostics"].tests["test"])
    ranks = [t for t in _tables(secs["bootstrap"]) if "p_rank_1" in t.columns][0]
    assert ranks["system"].tolist() == ["Marking", "PostEdit", "Baseline"]  # best first (lower TER; issue 38)
    vca = _tables(secs["vca"])[0]
    assert vca["component"].tolist() == list(analysis["vca"].table["component"])
    ds = [t for t in _tables(secs["vca"]) if "n_rater" in t.columns][0]
    assert len(ds) == 6  # the 3 x 2 grid
    lp = [t for t in _tables(secs["disparity"]) if "rank_potential" in t.columns][0]
    assert lp["language"].iloc[0] == analysis["disparity"][0].language_potential["language"].iloc[0]
    boot_lp = [t for t in _tables(secs["disparity_bootstrap"]) if "rank_conf_low" in t.columns][-1]
    assert boot_lp["conf_low"].tolist() == [fmt_number(v) for v in analysis["disparity"][1].languages["conf_low"]]
    agree = _tables(secs["disparity_robustness"])[0]
    assert agree["ranking"].tolist() == analysis["disparity"][2].table["ranking"].tolist()


def test_design_section_describes_crossing_and_balance(full_report):
    sec = _sections(full_report.read_text(encoding="utf-8"))["design"]
    rel = _tables(sec)[1]
    row = rel[(rel["factor_a"] == "system") & (rel["factor_b"] == "sentence_id")].iloc[0]
    assert row["relation"] == "crossed" and row["cells_observed"] == "3123"
    assert "<dt>balanced</dt><dd>no</dd>" in sec  # Baseline has one replication, the others three
    cross = [t for t in _tables(sec) if "system" in t.columns and "1" in t.columns][0]
    assert cross.set_index("system").loc["Baseline"].tolist() == ["1041", "0", "0"]


def test_figures_are_embedded_and_nothing_is_fetched(full_report):
    text = full_report.read_text(encoding="utf-8")
    root = ET.parse(full_report).getroot()
    imgs = [el.get("src") for el in root.iter("img")]
    # EMMs, contrasts, 5 diagnostics plots, bootstrap intervals, rank heatmap, D-study, language potential
    # (with and without bootstrap intervals)
    assert len(imgs) >= 12
    for src in imgs:
        head, _, payload = src.partition(",")
        assert head in ("data:image/png;base64", "data:image/svg+xml;base64"), head
        raw = base64.b64decode(payload, validate=True)
        assert raw.startswith(b"\x89PNG") if "png" in head else b"<svg" in raw[:2000]
    for el in root.iter():
        for attr in ("src", "href"):
            v = el.get(attr)
            assert v is None or v.startswith(("data:", "#")), v
    assert root.find(".//script") is None and root.find(".//link") is None
    assert not re.search(r"https?://", re.sub(r'src="data:[^"]*"', "", text))
    assert "@import" not in text and "url(" not in text


def test_provenance_records_versions_seeds_and_hashes(full_report, analysis):
    import hashlib

    sec = _sections(full_report.read_text(encoding="utf-8"))["provenance"]
    csv = Path(me.__file__).parent / "datasets_files" / "kreutzer_ter.csv"
    assert hashlib.sha256(csv.read_bytes()).hexdigest() in sec
    prov = analysis["fit"].provenance
    for key in ("lme4", "lmerTest", "emmeans"):
        assert f"<dt>{key}</dt><dd>{prov[key]}</dd>" in sec
    assert f"<dt>R</dt><dd>{prov['r']}</dd>" in sec
    assert f"<dt>mixedeval</dt><dd>{me.__version__}</dd>" in sec
    assert "<dt>diagnostics: random_state</dt><dd>7</dd>" in sec
    assert f"<dt>diagnostics: n_sim</dt><dd>{N_SIM}</dd>" in sec
    assert "<dt>disparity_bootstrap: random_state</dt><dd>1</dd>" in sec
    assert "<dt>disparity_bootstrap: n_resamples</dt><dd>5</dd>" in sec
    assert "<dt>bootstrap: n_resamples</dt><dd>200</dd>" in sec
    assert "SHA-256 of the table" in sec


def test_user_text_is_escaped(tmp_path, analysis):
    nasty = "<script>alert('x')</script> & <b>"
    path = me.report(path=tmp_path / "esc.html", data=pd.DataFrame({"sys": [nasty, "b", nasty, "b"], "s": [1.0, 2, 3, 4]}),
                     extra_tables={nasty: pd.DataFrame({nasty: [nasty]})}, title=nasty, progress=False)
    text = path.read_text(encoding="utf-8")
    assert "<script>" not in text and "<b>" not in text
    assert "&lt;script&gt;" in text
    ET.parse(path)


def test_a_failing_section_is_recorded_and_the_rest_is_written(tmp_path, analysis, monkeypatch):
    anova = analysis["anova"]

    def boom(self):
        raise RuntimeError("boom in the anova object")

    monkeypatch.setattr(type(anova), "table", property(boom), raising=False)
    path = me.report(*_results(analysis, drop=("bootstrap", "vca", "disparity")), path=tmp_path / "broken.html",
                     progress=False)
    text = path.read_text(encoding="utf-8")
    secs = _sections(text)
    assert _status(text, "anova") == "error"
    assert "this section failed: RuntimeError: boom in the anova object" in secs["anova"]
    assert _status(text, "contrasts") == "ok" and _status(text, "diagnostics") in ("ok", "warning")
    ET.parse(path)


def test_missing_module_and_failed_computation_are_reported(tmp_path, analysis, monkeypatch):
    fit = analysis["fit"]

    def no_module(self, *a, **k):
        raise ImportError("No module named 'mixedeval.inference.anova'")

    def fails(self, *a, **k):
        raise ValueError("R2 went wrong")

    monkeypatch.setattr(type(fit), "anova", no_module)
    monkeypatch.setattr(type(fit), "r2", fails)
    monkeypatch.setattr(type(fit), "icc", fails)
    path = me.report(fit, analysis["comparison"], analysis["emmeans"], analysis["contrasts"], analysis["diagnostics"],
                     path=tmp_path / "partial.html", progress=False)
    text = path.read_text(encoding="utf-8")
    secs = _sections(text)
    assert _status(text, "anova") == "not_available"
    assert "the module needed for it is missing" in secs["anova"] and "mixedeval.inference.anova" in secs["anova"]
    assert _status(text, "r2_icc") == "error" and "ValueError: R2 went wrong" in secs["r2_icc"]
    assert _status(text, "emmeans") == "ok"


def test_fit_report_computes_the_missing_parts(tmp_path, analysis, capsys):
    fit = analysis["fit"]
    path = me.report(fit, path=tmp_path / "auto.html", n_sim=20, random_state=3)
    assert path == tmp_path / "auto.html"
    err = capsys.readouterr().err
    assert "likelihood-ratio test against ter ~ 1 + (1 | sentence_id)" in err  # progress on stderr
    text = path.read_text(encoding="utf-8")
    secs = _sections(text)
    for sid in ("anova", "lrt", "emmeans", "contrasts", "r2_icc", "diagnostics"):
        assert _status(text, sid) in ("ok", "warning"), sid
        assert "Computed for this report" in secs[sid] or sid == "r2_icc"
    # the automatic LRT equals compare() of the same models
    lrt = _tables(secs["lrt"])[0]
    assert lrt["chisq"].iloc[-1] == fmt_number(analysis["comparison"].table["chisq"].iloc[-1])
    assert "bootstrap" not in secs and "vca" not in secs  # optional sections only when given
    assert "<dt>diagnostics: n_sim</dt><dd>20</dd>" in secs["provenance"]
    assert "<dt>diagnostics: random_state</dt><dd>3</dd>" in secs["provenance"]


def test_report_without_a_model(tmp_path, analysis):
    path = me.report(analysis["bootstrap"], path=tmp_path / "boot.html", progress=False)
    secs = _sections(path.read_text(encoding="utf-8"))
    assert list(secs) == ["answer", "overview", "design", "bootstrap", "provenance"]  # the bootstrap answers
    assert "Not available: no data" in secs["design"]


def test_given_parts_without_a_fit_and_compute_missing_off(tmp_path, analysis):
    path = me.report(analysis["contrasts"], analysis["comparison"], analysis["comparison"], path=tmp_path / "c.html",
                     progress=False)
    text = path.read_text(encoding="utf-8")
    secs = _sections(text)
    assert list(secs) == ["overview", "design", "lrt", "contrasts", "provenance"]
    assert len(_tables(secs["lrt"])) == 2 and "Comparison 2" in secs["lrt"]
    off = me.report(analysis["fit"], path=tmp_path / "off.html", compute_missing=False, progress=False)
    text = off.read_text(encoding="utf-8")
    assert _status(text, "anova") == "not_available" and "compute_missing=False" in _sections(text)["anova"]


def test_one_fit_per_report_and_only_results(tmp_path, analysis, ter):
    other = lmm("ter ~ 1 + (1|sentence_id)", ter)
    with pytest.raises(me.DataError, match="one fitted model"):
        me.report(analysis["fit"], other, path=tmp_path / "two.html", progress=False)
    with pytest.raises(me.DataError, match="takes mixedeval result objects"):
        me.report({"not": "a result"}, path=tmp_path / "bad.html", progress=False)
    assert not (tmp_path / "two.html").exists() and not (tmp_path / "bad.html").exists()


def test_every_registered_type_is_a_result_class():
    from mixedeval.results import ResultMixin

    parts, kinds = model_parts(), result_kinds()
    assert set(parts.values()) == {"fit", "anova", "comparison", "emmeans", "contrasts", "r2", "icc", "diagnostics"}
    for cls in [*parts, *kinds]:
        assert issubclass(cls, ResultMixin), cls
    ids = [k.id for k in kinds.values()]
    assert len(set(ids)) == len(ids) and set(ids) <= set(SECTION_TITLES)
    names = {c.__name__ for c in kinds}
    assert {"BootstrapResult", "PairedTestResult", "VarianceDecomposition", "LeaderboardResult", "RunIntervalsResult",
            "PooledRunBootstrapResult", "CompareSystemsResult", "ConditionalCompareResult", "VCAResult",
            "MetaParameterImportance", "MetaParameterAssessment", "ReproducibilityResult", "KrippendorffResult",
            "LanguageDisparityResult", "PotentialIntervals", "DisparityBootstrap", "DisparityRobustness"} <= names


def _resampling_results():
    rng = np.random.default_rng(0)
    x, y = rng.normal(0.5, 0.1, 60), rng.normal(0.45, 0.1, 60)
    rows = [(m, lang, s, b, mu + shift + rng.normal(0, 1.0) + (0.0 if b == 0 else rng.normal(0, 1.5)))
            for m, mu in [("model_a", 70.0), ("model_b", 68.0)] for lang, shift in [("de", 5.0), ("sw", -8.0)]
            for s in range(3) for b in range(4)]
    vd = me.decompose_variance(pd.DataFrame(rows, columns=["model", "language", "run", "replicate", "score"]))
    y_true = rng.integers(0, 2, 80)
    y_pred = np.where(rng.random((4, 80)) < 0.8, y_true, 1 - y_true)
    return [me.paired_bootstrap_test(x, y, n_resamples=200, random_state=1, progress=False),
            me.approximate_randomization(x, y, n_resamples=200, random_state=1, progress=False), vd,
            me.simulate_leaderboard(vd, n_resamples=100, random_state=0, progress=False),
            me.run_intervals(y_true=y_true, y_pred=y_pred, n_resamples=200, random_state=0, progress=False),
            me.pooled_run_bootstrap(y_true=y_true, y_pred=y_pred, n_resamples=200, random_state=0, progress=False)]


def test_every_resampling_and_workflow_result_gets_its_section(tmp_path, ter, annotation):
    sub = ter[ter["sentence_id"].isin(sorted(ter["sentence_id"].unique())[:80])]
    cs = me.compare_systems(sub, "ter", "system", "sentence_id")
    disp = me.language_disparity(me.datasets.load("hu2025_records"), drop_aggregates=True)
    k = me.krippendorff_alpha([[1, 2, 3, 3], [1, 2, 3, 4]], level="ordinal")
    results = [*_resampling_results(), cs, k, disp.potential_intervals()]
    path = me.report(*results, path=tmp_path / "all.html", progress=False)
    text = path.read_text(encoding="utf-8")
    secs = _sections(text)
    expected = ["paired_test", "paired_test_2", "variance_decomposition", "leaderboard", "run_intervals",
                "pooled_run_bootstrap", "compare_systems", "krippendorff", "potential_intervals"]
    # compare_systems answers; its run-averaging note is a check's warning, in a section of its own
    assert list(secs) == ["answer", "overview", "design", *expected, "check_warnings", "provenance"]
    for sid in expected:
        assert _status(text, sid) in ("ok", "warning"), (sid, secs[sid][:500])
        assert _tables(secs[sid]), sid  # every result shows its main table
    assert "Paired two-system test (2)" in secs["paired_test_2"]
    main = _tables(secs["compare_systems"])[0]
    assert main["analysis"].tolist() == cs.table["analysis"].tolist()
    assert _tables(secs["krippendorff"])[0]["alpha"].tolist() == [fmt_number(k.alpha)]
    assert "<img" in secs["potential_intervals"]
    ET.parse(path)


def test_helpers():
    assert split_formula("y ~ a + b:c + (1 + x | g) + (1|h)") == ("y", ["a", "b:c"], ["(1 + x | g)", "(1 | h)"])
    assert null_formula("ter ~ system + (1|sentence_id)") == "ter ~ 1 + (1 | sentence_id)"
    assert null_formula("ter ~ 1 + (1|sentence_id)") is None
    assert fmt_p(0.0) == "<1e-300" and fmt_p(3.2e-12) == "3.20e-12" and fmt_p(0.04567) == "0.0457"
    assert fmt_cell(np.nan, "x") == "" and fmt_cell(True) == "yes" and fmt_cell(np.int64(3)) == "3"
    assert fmt_cell(("items", "seeds")) == "items, seeds"
    assert fmt_number(-0.0123456) == "-0.012346" and fmt_number(1.5e-7) == "1.5000e-07"


def test_first_factor(analysis):
    assert first_factor(analysis["fit"]) == "system"


# ------------------------------------------------------------------------------- chromium
def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _chromium_args(exe: str, profile: Path) -> list[str]:
    return [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}"]


@pytest.mark.browser
def test_renders_in_headless_chromium(full_report, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium, or run scripts/setup.sh)")
    from PIL import Image

    url = full_report.resolve().as_uri()
    dom = subprocess.run([*_chromium_args(exe, tmp_path / "p1"), "--dump-dom", url], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for sid in FULL:
        assert f"{SECTION_TITLES[sid]} <span" in dom.stdout.replace("&amp;", "&"), sid
    assert dom.stdout.count("<img") >= 12
    shot = tmp_path / "report.png"
    # the whole page (about 14,000 CSS pixels high) at half resolution
    res = subprocess.run([*_chromium_args(exe, tmp_path / "p2"), f"--screenshot={shot}", "--window-size=1280,16000",
                          "--force-device-scale-factor=0.5", "--hide-scrollbars", url],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
    px = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert px.shape[:2] == (8000, 640)
    # the page is drawn: header band in the accent colour, and far from blank overall
    assert np.abs(px[10, 300] - [0x1F, 0x5F, 0x99]).max() <= 3
    non_white = (px < 245).any(axis=2)
    assert non_white.mean() > 0.05
    # the figures are drawn: colours that appear only inside embedded images -- the rank heatmap's
    # dark blue (P(rank 3) of Baseline is about 1) and matplotlib's orange (boxplot medians and
    # the D-study lines)
    def has_colour(rgb, tol=16):
        return int((np.abs(px - rgb).max(axis=2) <= tol).sum())

    assert has_colour([0x08, 0x30, 0x6B]) > 100
    assert has_colour([0xFF, 0x7F, 0x0E]) > 20
