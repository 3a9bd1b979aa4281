"""The report tells the truth: a section is "ok" only when none of its results carries a severe
warning (unstable standard errors, separation, a failed convergence check, a singular fit on the
tested term), and severe warnings open the report in plain words with the fix. Every case is
checked both ways: the same report without the severe warning has no "Read this first" box and
keeps its OK badges."""
from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

import mixedeval as me
from mixedeval.inference._glmm import glmm
from mixedeval.inference._lmm import lmm
from mixedeval.results import SEVERE_KINDS, ResultWarning, boundary_components, effective_kind, is_severe

N_SIM = 20
#: the sections of a fitted model whose numbers come from its standard errors
WALD = ("model", "fixed", "anova", "emmeans", "contrasts")


# ------------------------------------------------------------------------------- helpers
def _page(path) -> ET.Element:
    return ET.parse(path).getroot()  # the report is well-formed XML


def _statuses(root: ET.Element) -> dict[str, str]:
    """section id -> the status of its badge (the class of the badge in its heading)."""
    out = {}
    for sec in root.iter("section"):
        if sec.get("id") == "overview":
            continue
        badge = sec.find("h2/span")
        cls = badge.get("class").split()
        assert cls[0] == "badge" and sec.get("class") == f"status-{cls[1]}"
        out[sec.get("id")] = cls[1]
    return out


def _overview(root: ET.Element) -> dict[str, tuple[str, str]]:
    """section id -> (badge status, result text) of the overview table."""
    out = {}
    for tr in root.find(".//section[@id='overview']").iter("tr"):
        tds = tr.findall("td")
        if tds:
            out[tds[0].find("a").get("href")[1:]] = (tds[1].find("span").get("class").split()[1],
                                                     " ".join("".join(tds[2].itertext()).split()))
    return out


def _box(root: ET.Element) -> ET.Element | None:
    return root.find(".//div[@id='read_first']")


def _text(el: ET.Element) -> str:
    return " ".join("".join(el.itertext()).split())


def _box_items(root: ET.Element) -> dict[str, str]:
    """warning kind -> the text of its item in the "Read this first" box."""
    box = _box(root)
    return {li.get("class")[len("rf-"):]: _text(li) for li in box.iter("li")}


def _affected(root: ET.Element, kind: str) -> set[str]:
    li = _box(root).find(f".//li[@class='rf-{kind}']")
    return {a.get("href")[1:] for a in li.iter("a")}


def _assert_truthful(root: ET.Element, severe_sections) -> None:
    """No section showing a severe warning is "ok"; each says so in its note and the overview."""
    st, ov = _statuses(root), _overview(root)
    for sid in severe_sections:
        assert st[sid] != "ok", sid
        assert ov[sid][0] == st[sid]
        assert ov[sid][1].startswith("Severe, read this first:"), (sid, ov[sid])


def _assert_no_box(root: ET.Element) -> None:
    assert _box(root) is None
    assert "Read this first" not in _text(root)
    assert not any(t.startswith("Severe") for _, t in _overview(root).values())


# ------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def clean(ter):
    """A fit without warnings and the model parts computed from it (all "ok" in a report)."""
    fit = lmm("ter ~ system + (1|sentence_id)", ter)
    null = lmm("ter ~ 1 + (1|sentence_id)", ter)
    emm = fit.emmeans("system")
    assert not fit.warnings and not fit.singular and fit.converged
    return {"fit": fit, "anova": fit.anova(), "comparison": me.compare(null, fit), "emmeans": emm,
            "contrasts": emm.contrasts(method="pairwise", adjust="holm"), "r2": fit.r2(), "icc": fit.icc()}


def _parts(clean, fit=None):
    return [fit if fit is not None else clean["fit"], *(v for k, v in clean.items() if k != "fit")]


@pytest.fixture(scope="module")
def logs_result(tmp_path_factory):
    """me.compare_logs on a small table of continuous scores (LMM), without severe warnings."""
    rng = np.random.default_rng(0)
    rows = [(s, f"q{i}", float(np.clip(0.5 + (0.05 if s == "sys_b" else 0.0) + 0.1 * np.sin(i) + rng.normal(0, 0.1),
                                        0, 1))) for i in range(30) for s in ("sys_a", "sys_b")]
    path = tmp_path_factory.mktemp("logs") / "scores.csv"
    pd.DataFrame(rows, columns=["system", "item", "score"]).to_csv(path, index=False)
    res = me.compare_logs(path, metric="score", format="table", n_resamples=200, random_state=0, progress=False)
    assert not any(is_severe(w, ("system",), res.fit.random) for w in res.warnings)
    return res


# ------------------------------------------------------------------------------- the rule
def test_severe_kinds_and_the_singular_rule(ter):
    assert {"vcov_unstable", "separation", "convergence", "convergence_gradient", "convergence_hessian"} <= SEVERE_KINDS
    for kind in ("df_fallback", "refit_ml", "missing_rows", "response_type", "r_message", "averaging", "squeeze"):
        assert not is_severe(ResultWarning(kind, "x"), ("system",)), kind
    for kind in SEVERE_KINDS:
        assert is_severe(ResultWarning(kind, "x")), kind
    # lme4's own fallback warning (an unclassified R warning) is read as vcov_unstable
    rx = ResultWarning("r_warning", "variance-covariance matrix computed from finite-difference Hessian is not "
                       "positive definite or contains NA values: falling back to var-cov estimated from RX", "R")
    assert effective_kind(rx) == "vcov_unstable" and is_severe(rx)
    assert not is_severe(ResultWarning("r_warning", "some other R warning"))

    on_system = lmm("ter ~ system + (1|sentence_id) + (1|system:replication)", ter)
    nuisance = lmm("ter ~ system + (1|sentence_id) + (1|replication)", ter)
    (w1,), (w2,) = on_system.warnings, nuisance.warnings
    assert w1.kind == w2.kind == "singular"
    assert boundary_components(on_system.random, ("system",)) == ["system:replication: (Intercept)"]
    assert boundary_components(nuisance.random, ("system",)) == []
    assert boundary_components(nuisance.random, None) == ["replication: (Intercept)"]
    assert is_severe(w1, ("system",), on_system.random)
    assert not is_severe(w2, ("system",), nuisance.random)
    assert not is_severe(w1, (), on_system.random)  # nothing tested: a zero component is normal (rule 4)
    # a random slope of the tested factor at the boundary: a correlation of +-1 or a zero SD
    slope = pd.DataFrame({"group": ["item", "item", "item", "Residual"],
                          "term": ["(Intercept)", "(Intercept)", "systemB", None],
                          "term2": [None, "systemB", None, None], "variance": [1.0, 0.5, 0.25, 1.0],
                          "std_dev": [1.0, np.nan, 0.5, 1.0], "corr": [np.nan, 1.0, np.nan, np.nan]})
    assert boundary_components(slope, ("system",)) == ["item: (Intercept) ~ systemB"]
    assert boundary_components(slope, ("task",)) == []
    # without the random table the message decides
    assert is_severe(ResultWarning("singular", "the variance of system:item is zero"), ("system",))
    assert not is_severe(ResultWarning("singular", "the variance of item is zero"), ("system",))


# ------------------------------------------------------------------------------- model reports
def test_clean_model_report_has_no_box_and_ok_badges(tmp_path, clean):
    root = _page(me.report(*_parts(clean), path=tmp_path / "clean.html", compute_missing=False, progress=False))
    _assert_no_box(root)
    st = _statuses(root)
    for sid in (*WALD, "random", "lrt", "r2_icc"):
        assert st[sid] == "ok", sid


def test_singular_fit_on_the_tested_term_is_never_ok(tmp_path, ter):
    fit = lmm("ter ~ system + (1|sentence_id) + (1|system:replication)", ter)
    root = _page(me.report(fit, path=tmp_path / "sing.html", n_sim=N_SIM, random_state=1, progress=False))
    _assert_truthful(root, (*WALD, "random"))
    items = _box_items(root)
    assert list(items) == ["singular"]
    text = items["singular"]
    assert "effect being tested (system) as exactly zero" in text and "system:replication" in text
    assert "standard errors can be far too small" in text and "What to do: Simplify the random effects" in text
    # the fit's sections, and R² and the diagnostics, whose results carry the singular warning too
    # the fit's sections, and the answer (from the EMMs), R² and the diagnostics
    assert _affected(root, "singular") == {"answer", *WALD, "random", "r2_icc", "diagnostics"}
    assert _statuses(root)["lrt"] == "ok"  # the likelihood-ratio test does not rest on that variance
    # the answer rests on the fit, so the box opens the report: before the answer, first in the navigation
    main = root.find(".//main")
    assert [c.get("id") for c in main][:3] == ["read_first", "answer", "overview"]
    assert root.find(".//nav//a").get("href") == "#read_first"


def test_singular_fit_of_a_nuisance_component_keeps_ok_badges(tmp_path, ter):
    fit = lmm("ter ~ system + (1|sentence_id) + (1|replication)", ter)
    root = _page(me.report(fit, path=tmp_path / "nuisance.html", compute_missing=False, progress=False))
    _assert_no_box(root)
    st = _statuses(root)
    assert st["fixed"] == "ok"
    assert st["random"] == "warning"  # singular fits are still flagged where they are, as before
    assert "[singular] boundary (singular) fit" in _text(root.find(".//section[@id='model']"))


def test_unstable_standard_errors_mark_the_wald_sections(tmp_path, clean):
    bad = dataclasses.replace(clean["fit"], warnings=(ResultWarning(
        "vcov_unstable", "the Hessian-based variance-covariance matrix is not positive definite; standard errors "
        "from RX are used", "mixedeval"),))
    root = _page(me.report(*_parts(clean, bad), path=tmp_path / "vcov.html", compute_missing=False, progress=False))
    _assert_truthful(root, WALD)
    st = _statuses(root)
    assert st["lrt"] == st["random"] == st["r2_icc"] == "ok"  # they do not use the standard errors
    text = _box_items(root)["vcov_unstable"]
    assert "standard errors (from the curvature of the fit) was numerically unstable" in text and "z statistic in the hundreds" in text
    assert "likelihood-ratio test does not use these standard errors" in text and "What to do:" in text
    assert "[vcov_unstable] the Hessian-based" in text


def test_failed_convergence_marks_every_section_of_the_fit(tmp_path, clean):
    bad = dataclasses.replace(clean["fit"], warnings=(ResultWarning(
        "convergence", "Model failed to converge with max|grad| = 0.0123 (tol = 0.002, component 1)", "lme4"),))
    root = _page(me.report(*_parts(clean, bad), path=tmp_path / "conv.html", compute_missing=False, progress=False))
    _assert_truthful(root, (*WALD, "random", "lrt", "r2_icc"))
    text = _box_items(root)["convergence"]
    assert "did not converge cleanly" in text and "may change between runs" in text
    assert "check_optimizers()" in text


def test_binomial_glmm_with_a_system_always_right(tmp_path):
    rng = np.random.default_rng(1)
    rows = [(s, f"q{i}", r, int(s == "always" or rng.random() < 0.6))
            for i in range(30) for s in ("always", "other") for r in range(2)]
    fit = glmm("correct ~ system + (1|item)", pd.DataFrame(rows, columns=["system", "item", "run", "correct"]),
               family="binomial")
    assert any(is_severe(w) for w in fit.warnings)  # lme4's own checks fail on this fit
    sep = dataclasses.replace(fit, warnings=(*fit.warnings, ResultWarning(
        "separation", "system 'always' answered every question correctly: its odds ratios are infinite",
        "mixedeval")))
    root = _page(me.report(sep, path=tmp_path / "sep.html", compute_missing=False, progress=False))
    _assert_truthful(root, ("model", "fixed"))
    items = _box_items(root)
    assert "separation" in items and "convergence_hessian" in items
    text = items["separation"]
    assert "got every question right (or every question wrong)" in text
    assert "odds ratios for that system, and their p-values and intervals, are meaningless" in text
    assert "likelihood-ratio test of the system effect and the differences in accuracy points" in text
    assert "system 'always' answered every question correctly" in text


# ------------------------------------------------------------------------------- result sections
def test_compare_logs_section_with_and_without_severe_warnings(tmp_path, logs_result):
    root = _page(me.report(logs_result, path=tmp_path / "ok.html", progress=False))
    _assert_no_box(root)
    assert _statuses(root)["compare_logs"] == "ok"

    # separation breaks the GLMM's odds ratios, a check: the headline's paired differences stand (issue 30),
    # so the warning marks the section of the checks' warnings only and does not open the report
    sep = ResultWarning("separation", "sys_a got every question right in task score", "mixedeval")
    bad = dataclasses.replace(logs_result, warnings=(*logs_result.warnings, sep))
    root = _page(me.report(bad, path=tmp_path / "sep.html", progress=False))
    assert _box(root) is None
    st = _statuses(root)
    assert st["compare_logs"] == "ok" and st["check_warnings"] == "warning"
    assert "sys_a got every question right in task score" in _text(root.find(".//section[@id='check_warnings']"))


    # a singular fit whose zero component is the items (not the tested systems) stays ok
    zero_items = logs_result.fit.random.assign(variance=[0.0, 0.004], std_dev=[0.0, 0.063])
    nuisance = dataclasses.replace(
        logs_result, warnings=(*logs_result.warnings, ResultWarning("singular", "boundary (singular) fit", "lme4")),
        fit=dataclasses.replace(logs_result.fit, random=zero_items))
    root = _page(me.report(nuisance, path=tmp_path / "nuisance.html", progress=False))
    _assert_no_box(root)
    assert _statuses(root)["compare_logs"] == "ok"


def test_a_model_part_carrying_a_severe_warning_is_not_ok(tmp_path, clean):
    """The warning of a result (here R²) marks its own section, whatever the fit's scope rules say."""
    r2 = dataclasses.replace(clean["r2"], warnings=(ResultWarning(
        "separation", "R² on the latent scale is inflated under separation", "mixedeval"),))
    parts = [r2 if p is clean["r2"] else p for p in _parts(clean)]
    root = _page(me.report(*parts, path=tmp_path / "r2.html", compute_missing=False, progress=False))
    _assert_truthful(root, ("r2_icc",))
    assert _affected(root, "separation") == {"r2_icc"}
    st = _statuses(root)
    assert all(st[sid] == "ok" for sid in (*WALD, "random", "lrt")), st
