"""Issue 13 point 6: GLMMs in the workflows, the report and the command line.

``compare_systems(family="binomial")`` is checked against the same glmer / anova / emmeans calls
written in R on the same table; the report and the CLI are checked end to end."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import OPTIMIZER_RTOL, assert_rel

import mixedeval as me
from mixedeval.engine import convert

RTOL = 1e-6  # quantities from one glmer fit (the tolerance for GLMMs)


@pytest.fixture(scope="module")
def binary():
    """Three LLMs answering 60 items right or wrong, 3 runs each (0/1 outcomes, item effects)."""
    rng = np.random.default_rng(42)
    rows = []
    for i in range(60):
        b = rng.normal(0, 1.0)
        for s, e in (("gpt", 0.5), ("llama", 0.0), ("mistral", -0.4)):
            for r in range(3):
                rows.append({"item": f"q{i:03d}", "system": s, "run": r,
                             "correct": int(rng.random() < 1 / (1 + np.exp(-(0.3 + b + e))))})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def r_reference(binary, R):
    import rpy2.robjects as ro

    ro.globalenv["bin_df"] = convert.to_r(binary[["correct", "system", "item"]])
    R("""
      bin_full <- lme4::glmer(correct ~ system + (1|item), data = bin_df, family = binomial)
      bin_null <- lme4::glmer(correct ~ 1 + (1|item), data = bin_df, family = binomial)
      bin_lrt <- anova(bin_null, bin_full)
      bin_emm <- emmeans::emmeans(bin_full, "system", type = "response")
      bin_emm_s <- as.data.frame(summary(bin_emm))
      bin_con <- as.data.frame(summary(emmeans::contrast(bin_emm, "pairwise", adjust = "holm"), infer = c(TRUE, TRUE)))
      bin_raw <- as.data.frame(summary(emmeans::contrast(bin_emm, "pairwise", adjust = "none"), infer = c(TRUE, TRUE)))
    """)
    return R


def test_compare_systems_binomial_equals_r(binary, r_reference):
    R = r_reference
    res = me.compare_systems(binary, score="correct", system="system", item="item", family="binomial")
    assert res.table["analysis"].iloc[0].startswith("all instances, binomial GLMM")
    assert_rel(res.glrt["chisq"].iloc[1], R("bin_lrt$Chisq[2]"), rtol=RTOL)
    assert_rel(res.glrt["p_value"].iloc[1], R('bin_lrt[["Pr(>Chisq)"]][2]'), rtol=RTOL)
    assert list(res.emmeans["system"]) == ["gpt", "llama", "mistral"]
    assert_rel(res.emmeans["emmean"], R("bin_emm_s$prob"), rtol=RTOL)       # accuracies
    assert_rel(res.emmeans["conf_low"], R("bin_emm_s$asymp.LCL"), rtol=RTOL)
    assert_rel(res.contrasts["estimate"], R("bin_con$odds.ratio"), rtol=RTOL)  # odds ratios
    assert_rel(res.contrasts["p_adj"], R("bin_con$p.value"), rtol=RTOL)
    assert_rel(res.contrasts["p_value"], R("bin_raw$p.value"), rtol=RTOL)
    assert res.contrast_result.estimate_label == "odds_ratio"
    assert res.averaged is None
    # the answer: "correct" is higher-is-better; the headline is a difference of probabilities (emmeans
    # regrid), best against runner-up, unadjusted, as R's emmeans gives it
    order = res.emmeans.sort_values("emmean", ascending=False)["system"].astype(str).tolist()
    assert res.direction.higher_is_better and list(res.leaderboard["name"]) == order
    h = res.headline
    assert (h.better, h.other) == tuple(order[:2]) and h.estimate > 0
    R("bin_diff <- as.data.frame(summary(pairs(emmeans::regrid(bin_emm), adjust = 'none'), infer = c(TRUE, TRUE)))")
    labels = list(R("as.character(bin_diff$contrast)"))
    fwd, rev = f"{h.better} - {h.other}", f"{h.other} - {h.better}"
    i, sign = (labels.index(fwd), 1.0) if fwd in labels else (labels.index(rev), -1.0)
    assert_rel(h.estimate, sign * R("bin_diff$estimate")[i], rtol=RTOL)
    assert_rel(h.p_value, R("bin_diff$p.value")[i], rtol=RTOL)
    res = me.compare_systems(binary, score="correct", system="system", item="item")
    assert any(w.kind == "response_type" and "binomial" in w.message for w in res.warnings)
    res_b = me.compare_systems(binary, score="correct", system="system", item="item", family="binomial")
    assert not any(w.kind == "response_type" for w in res_b.warnings)


def test_report_renders_a_glmm_fit(binary, tmp_path):
    fit = me.glmm("correct ~ system + (1|item)", binary, family="binomial")
    html = me.report(fit, path=tmp_path / "glmm.html", n_sim=40, progress=False).read_text(encoding="utf-8")
    assert "this section failed" not in html and "could not be computed" not in html
    for sid in ("model", "fixed", "random", "anova", "lrt", "emmeans", "contrasts", "r2_icc", "diagnostics"):
        assert f'id="{sid}"' in html
    assert "lme4::glmer, binomial family, logit link, Laplace" in html
    assert "Wald chi-square" in html and "odds ratio" in html


@pytest.fixture(scope="module")
def binary_csv(binary, tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "binary.csv"
    df = binary.assign(rating=np.clip(np.round(3 + np.random.default_rng(1).normal(0, 1, len(binary))
                                               + binary["correct"]), 1, 5).astype(int))
    df.to_csv(path, index=False)
    return path


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mixedeval.cli", *args], capture_output=True, text=True, timeout=600)


def test_cli_fit_family_binomial(binary_csv, binary):
    out = _cli("fit", str(binary_csv), "--formula", "correct ~ system + (1|item)", "--family", "binomial",
               "--emmeans", "system", "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    fit = me.glmm("correct ~ system + (1|item)", binary, family="binomial")
    assert_rel(res["fit"]["loglik"], fit.loglik, rtol=OPTIMIZER_RTOL)  # a fit in another process
    assert len(res["emmeans"]) == 3 and len(res["contrasts"]) == 3


def test_cli_fit_ordinal(binary_csv):
    out = _cli("fit", str(binary_csv), "--formula", "rating ~ system + (1|item)", "--ordinal", "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["fit"]["response"] == "rating" and res["fit"]["link"] == "logit"


def test_cli_fit_rejects_glmm_options_on_a_gaussian_fit(binary_csv):
    out = _cli("fit", str(binary_csv), "--formula", "correct ~ system + (1|item)", "--link", "probit", "--quiet")
    assert out.returncode != 0 and re.search(r"--link and --nagq apply to --family", out.stderr)


def test_report_flags_overdispersion_of_replicated_binary_cells(tmp_path):
    """Issue 13's "done when": 0/1 outcomes over runs with an item x system effect the model leaves
    out; the report's cell-summed dispersion test (conditional simulation) flags it, and does not
    when the data come from the fitted model's family without that effect."""
    def table(sd_cell, seed):
        rng = np.random.default_rng(seed)
        rows = []
        for i in range(60):
            b = rng.normal(0, 1)
            for s, e in (("A", 0.0), ("B", 0.6)):
                c = rng.normal(0, sd_cell)
                for r in range(5):
                    rows.append({"item": f"i{i}", "system": s, "run": r,
                                 "correct": int(rng.random() < 1 / (1 + np.exp(-(0.3 + b + e + c))))})
        return pd.DataFrame(rows)

    def cell_dispersion_p(df, path):
        fit = me.glmm("correct ~ system + (1|item)", df, family="binomial")
        html = me.report(fit, path=path, n_sim=100, progress=False).read_text(encoding="utf-8")
        assert "Responses summed within 120 cells" in html
        from mixedeval._report.compute import _cell_dispersion

        cells = _cell_dispersion(fit, "system", 100, 123)
        return float(cells.tests.set_index("test").loc["dispersion", "p_value"])

    assert cell_dispersion_p(table(1.2, 3), tmp_path / "over.html") < 0.01
    assert cell_dispersion_p(table(0.0, 4), tmp_path / "ok.html") > 0.01


def test_report_records_why_the_cell_dispersion_test_is_missing(tmp_path, monkeypatch):
    """The report's extra cell-summed dispersion check does not fail the report when it cannot be
    computed, but says why in the diagnostics section (it used to vanish without a trace)."""
    from mixedeval.inference._glmm import GLMMFit

    rng = np.random.default_rng(5)
    df = pd.DataFrame([{"item": f"i{i}", "system": s, "run": r, "correct": int(rng.random() < 0.6)}
                       for i in range(30) for s in ("A", "B") for r in range(3)])
    fit = me.glmm("correct ~ system + (1|item)", df, family="binomial")
    original = GLMMFit.diagnose

    def failing(self, *args, **kwargs):
        if kwargs.get("re") == "conditional":
            raise RuntimeError("simulated failure of the conditional simulation")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(GLMMFit, "diagnose", failing)
    html = me.report(fit, path=tmp_path / "r.html", n_sim=50, progress=False).read_text(encoding="utf-8")
    assert "Responses summed within" not in html
    assert "item x system cell could not be computed: RuntimeError: simulated failure" in html
    assert "Scaled residuals by DHARMa" in html  # the main diagnostics are still there
