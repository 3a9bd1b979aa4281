"""The ``mixedeval`` command line: every subcommand on bundled data, ``--json`` output that parses
and equals R computed in the test, ``--help`` everywhere, and one-line errors with exit status 2."""
from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

from mixedeval.cli import EXIT_USAGE, build_parser, main

TER_FIT = ["fit", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)"]
CLI = [sys.executable, "-m", "mixedeval.cli"]


def run_json(capsys, argv):
    code = main([*argv, "--json", "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.err == ""  # --quiet: nothing on stderr
    return json.loads(out.out)


def error_line(capsys, argv) -> str:
    """Run a failing command; it must exit 2 and print exactly one line on stderr."""
    code = main([*argv, "--quiet"])
    out = capsys.readouterr()
    assert code == EXIT_USAGE, (code, out.err)
    lines = out.err.splitlines()
    assert len(lines) == 1, out.err
    assert lines[0].startswith("mixedeval: error: ")
    assert out.out == ""
    return lines[0]


# --------------------------------------------------------------------------------------- help
def _subcommands():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return list(sub.choices)


def test_every_subcommand_exists():
    assert set(_subcommands()) == {"check", "demo", "fit", "compare", "power", "bootstrap", "vca", "disparity",
                                   "compare-logs", "summarize", "preferences", "judge", "irt", "bayes", "pass-k",
                                   "horizon"}


@pytest.mark.parametrize("cmd", [[], *[[c] for c in ["check", "demo", "fit", "compare", "bootstrap", "vca",
                                                      "disparity"]]])
def test_help_everywhere(cmd, capsys):
    assert main([*cmd, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: mixedeval") and "--quiet" in out


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == EXIT_USAGE
    assert "usage: mixedeval" in capsys.readouterr().err


# --------------------------------------------------------------------------------------- fit
def test_fit_json_equals_r(capsys, R):
    out = run_json(capsys, [*TER_FIT, "--anova", "--emmeans", "system"])
    fixed = pd.DataFrame(out["fit"]["fixed"])
    R("cli_m <- lmerTest::lmer(ter ~ system + (1|sentence_id), data = ter_df)")
    assert fixed["term"].tolist() == list(R("names(lme4::fixef(cli_m))"))
    assert_rel(fixed["estimate"], R("unname(lme4::fixef(cli_m))"))
    assert_rel(fixed["df"], R("unname(summary(cli_m)$coefficients[, 'df'])"))
    assert_rel(out["anova"][0]["f_value"], R("anova(cli_m, type = 3)[['F value']]")[0])
    con = pd.DataFrame(out["contrasts"])
    R("cli_emm <- emmeans::emmeans(cli_m, 'system', lmer.df = 'satterthwaite', lmerTest.limit = 1e5, "
      "pbkrtest.limit = 1e5)")
    assert_rel(con["p_adj"], R("summary(pairs(cli_emm, adjust = 'holm'))$p.value"), rtol=1e-8)
    assert_rel(con["p_value"], R("summary(pairs(cli_emm, adjust = 'none'))$p.value"), rtol=1e-8)
    assert out["fit"]["reml"] is True and out["fit"]["provenance"]["estimator"] == "REML"


def test_fit_text_tables_and_report(capsys, tmp_path):
    path = tmp_path / "fit.html"
    assert main([*TER_FIT, "--anova", "--report", str(path), "--n-sim", "20"]) == 0
    out = capsys.readouterr()
    assert "Linear mixed model fit by REML" in out.out and "== anova ==" in out.out
    assert "report written to" in out.err  # progress and notes go to stderr
    root = ET.parse(path).getroot()
    ids = {el.get("id") for el in root.iter("section")}
    assert {"design", "model", "anova", "lrt", "emmeans", "contrasts", "diagnostics", "provenance"} <= ids


def test_fit_json_is_the_only_stdout_of_a_fresh_process():
    res = subprocess.run([*CLI, *TER_FIT, "--json", "--quiet"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["fit"]["nobs"] == 7287
    assert res.stderr == ""


# ------------------------------------------------------------------------------------ compare
def test_compare_json_equals_r(capsys, R):
    out = run_json(capsys, ["compare", "kreutzer_ter", "--formula", "ter ~ 1 + (1|sentence_id)",
                            "--formula", "ter ~ system + (1|sentence_id)", "--name", "null", "--name", "full"])
    tab = pd.DataFrame(out["comparison"])
    R("cli_m1 <- lme4::lmer(ter ~ system + (1|sentence_id), data = ter_df)")
    R("cli_m0 <- lme4::lmer(ter ~ 1 + (1|sentence_id), data = ter_df)")
    R("cli_lrt <- anova(cli_m0, cli_m1)")
    assert tab["model"].tolist() == ["null", "full"]
    assert_rel(tab["chisq"].iloc[1], R("cli_lrt[2, 'Chisq']")[0])
    assert_rel(tab["p_value"].iloc[1], R("cli_lrt[2, 'Pr(>Chisq)']")[0])
    assert_rel(tab["loglik"], R("cli_lrt$logLik"))
    assert out["estimator"] == "ML" and set(tab["estimator"]) == {"ML"}
    assert any("refit" in w for w in out["warnings"])


# ---------------------------------------------------------------------------------- bootstrap
BOOT = ["bootstrap", "kreutzer_ter", "--where", "replication=1", "--score", "ter", "--system", "system",
        "--item", "sentence_id", "--lower-is-better", "--n-resamples", "300", "--random-state", "5"]


def test_bootstrap_json(capsys, ter):
    out = run_json(capsys, BOOT)
    summ = pd.DataFrame(out["summary"])
    first = ter[ter["replication"].astype(str) == "1"]
    assert_rel(summ.set_index("system")["estimate"], first.groupby("system")["ter"].mean().loc[summ["system"]])
    ranks = pd.DataFrame(out["ranks"])
    assert_rel(ranks[["p_rank_1", "p_rank_2", "p_rank_3"]].sum(axis=1), np.ones(3))
    ans = out["answer"]  # the answer record first (issue 38)
    assert list(out)[0] == "answer"
    pw = pd.DataFrame(ans["differences"])  # every pair best first, Holm-adjusted beside the raw p
    assert len(pw) == 3 and (pw["p_adj"] >= pw["p_value"]).all() and (pw["delta"].iloc[0] > 0)
    # the answer first: lowest TER first, the headline is the best against the runner-up, p is its p
    board = pd.DataFrame(ans["leaderboard"])
    assert list(board["name"]) == list(summ.sort_values("estimate")["system"])
    assert ans["headline"]["text"].startswith(f"{board['name'][0]} − {board['name'][1]}: +")
    assert ans["headline"]["p_value"] == pytest.approx(float(pw["p_value"].iloc[0]), rel=1e-12)
    assert "lower is better" in ans["direction"]["note"] and 0 < ans["headline"]["p_value"] <= 1
    # same random_state, same numbers
    assert run_json(capsys, BOOT) == out


def test_bootstrap_report(capsys, tmp_path):
    path = tmp_path / "boot.html"
    assert main([*BOOT, "--quiet", "--report", str(path)]) == 0
    assert "== ranks ==\nbest first; marginal rank" in capsys.readouterr().out
    ids = {el.get("id") for el in ET.parse(path).getroot().iter("section")}
    assert ids == {"answer", "overview", "design", "bootstrap", "provenance"}


# ---------------------------------------------------------------------------------------- vca
def test_vca_json_equals_r(capsys, R):
    out = run_json(capsys, ["vca", "kreutzer_annotation", "--where", "mode=Marking", "--score", "score",
                            "--object", "sentence", "--facet", "rater", "--facet", "occasion", "--all-interactions",
                            "--size", "rater=3", "--d-study", "rater=1,2,3", "--d-study", "occasion=1,2"])
    comp = pd.DataFrame(out["components"]).set_index("component")
    R("cli_vc <- as.data.frame(lme4::VarCorr(lme4::lmer(score ~ 1 + (1|sentence) + (1|rater) + (1|occasion) + "
      "(1|sentence:rater) + (1|sentence:occasion) + (1|rater:occasion), data = subset(ann_df, mode == 'Marking'))))")
    exp = dict(zip(R("cli_vc$grp"), R("cli_vc$vcov")))
    for name in ("sentence", "rater", "sentence:rater", "Residual"):
        assert_rel(comp.loc[name, "variance"], exp[name], rtol=1e-8)
    assert round(comp.loc["sentence", "percent"], 1) == 12.0  # Hagmann 2023, Table 3.1
    assert out["singular"] is True and "occasion" in out["zero_components"]
    assert len(out["d_study"]) == 6
    rel = {r["coefficient"]: r["value"] for r in out["reliability"]}
    assert rel["phi"] == pytest.approx(out["d_study"][4]["phi"])  # rater=3, occasion=1


# ---------------------------------------------------------------------------------- disparity
def test_disparity_json(capsys):
    out = run_json(capsys, ["disparity", "hu2025_records", "--drop-aggregates", "--robustness", "5"])
    by_model = pd.DataFrame(out["by_model"]).set_index("model")
    # published values (Hu, Vulic & Korhonen 2025, Table 1 and Table 2)
    assert round(by_model.loc["MuRIL", "mean_prr"], 2) == 1.21 and round(by_model.loc["MuRIL", "cv_prr"], 2) == 0.08
    lp = pd.DataFrame(out["language_potential"])
    assert lp["language"].iloc[0] == "nl" and round(lp["potential"].iloc[0], 2) == 79.96
    assert {"ranking", "spearman_rho"} <= set(out["robustness_agreement"][0])


def test_disparity_parametric_bootstrap_and_report(capsys, tmp_path):
    path = tmp_path / "disp.html"
    argv = ["disparity", "hu2025_records", "--drop-aggregates", "--n-resamples", "3", "--random-state", "4",
            "--report", str(path)]
    out = run_json(capsys, argv)
    assert len(out["bootstrap_models"]) == 26 and len(out["bootstrap_languages"]) == 53
    assert run_json(capsys, argv)["bootstrap_languages"] == out["bootstrap_languages"]  # same random_state
    ids = {el.get("id") for el in ET.parse(path).getroot().iter("section")}
    assert {"disparity", "disparity_bootstrap"} <= ids
    assert "<dt>disparity_bootstrap: random_state</dt><dd>4</dd>" in path.read_text(encoding="utf-8")


def test_glossary_options():
    """Randomness is --random-state, draw counts --n-resamples (no --seed, --pb, --n-boot)."""
    p = build_parser()
    args = p.parse_args(["compare", "x.csv", "--formula", "a ~ 1 + (1|g)", "--n-resamples", "50",
                         "--random-state", "3"])
    assert (args.n_resamples, args.random_state) == (50, 3)
    args = p.parse_args(["demo", "--n-resamples", "10", "--random-state", "5"])
    assert (args.n_resamples, args.random_state) == (10, 5)
    args = p.parse_args(["fit", "x.csv", "--formula", "a ~ 1 + (1|g)", "--random-state", "9"])
    assert args.random_state == 9
    for argv in (["compare", "x.csv", "--formula", "f", "--pb", "5"],
                 ["compare", "x.csv", "--formula", "f", "--seed", "1"],
                 ["disparity", "x.csv", "--n-boot", "5"], ["disparity", "x.csv", "--seed", "1"],
                 ["demo", "--n-boot", "5"]):
        with pytest.raises(Exception, match="unrecognized arguments"):
            p.parse_args(argv)


def test_disparity_refuses_aggregates_without_the_flag(capsys):
    line = error_line(capsys, ["disparity", "hu2025_records"])
    assert "avg" in line


# --------------------------------------------------------------------------------------- demo
def test_demo_json_writes_the_report(capsys, tmp_path, R):
    path = tmp_path / "demo.html"
    out = run_json(capsys, ["demo", "--out", str(path), "--n-sim", "20", "--n-resamples", "100"])
    assert out["failures"] == {}
    assert out["report"] == str(path) and path.exists()
    lrt = pd.DataFrame(out["tables"]["likelihood_ratio_test"])
    R("demo_lrt <- anova(lme4::lmer(ter ~ 1 + (1|sentence_id), data = ter_df), "
      "lme4::lmer(ter ~ system + (1|sentence_id), data = ter_df))")
    assert_rel(lrt["chisq"].iloc[1], R("demo_lrt[2, 'Chisq']")[0])
    for key in ("anova", "emmeans", "contrasts", "r2_icc", "diagnostics", "bootstrap_ranks", "variance_components",
                "reliability", "d_study"):
        assert out["tables"][key], key
    ids = {el.get("id") for el in ET.parse(path).getroot().iter("section")}
    assert {"design", "model", "lrt", "anova", "emmeans", "contrasts", "r2_icc", "diagnostics", "bootstrap",
            "vca", "provenance"} <= ids


# ------------------------------------------------------------------------------------- errors
def test_bad_file(capsys, tmp_path):
    assert "does not exist" in error_line(capsys, ["fit", str(tmp_path / "missing.csv"), "--formula", "y ~ x + (1|g)"])
    bad = tmp_path / "scores.xlsx"
    bad.write_text("x")
    assert "unknown file type" in error_line(capsys, ["fit", str(bad), "--formula", "y ~ x + (1|g)"])


def test_bad_column(capsys, tmp_path):
    line = error_line(capsys, ["fit", "kreutzer_ter", "--formula", "ter ~ sytem + (1|sentence_id)"])
    assert "'sytem'" in line and "system" in line
    assert "'tr'" in error_line(capsys, ["bootstrap", "kreutzer_ter", "--score", "tr", "--system", "system",
                                         "--item", "sentence_id"])
    assert "'sent'" in error_line(capsys, ["vca", "kreutzer_annotation", "--score", "score", "--object", "sent",
                                           "--facet", "rater"])
    assert "'lang'" in error_line(capsys, ["disparity", "hu2025_records", "--language", "lang", "--drop-aggregates"])
    assert "'nope'" in error_line(capsys, ["fit", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)",
                                           "--where", "nope=1"])
    csv = tmp_path / "t.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.normal(size=40), "g": list("wxyz") * 10}).to_csv(csv, index=False)
    assert "'b'" in error_line(capsys, ["compare", str(csv), "--formula", "a ~ 1 + (1|g)", "--formula", "a ~ b + (1|g)"])


def test_bad_formula(capsys):
    assert "must be a string like" in error_line(capsys, ["fit", "kreutzer_ter", "--formula", "ter system"])
    line = error_line(capsys, ["fit", "kreutzer_ter", "--formula", "ter ~ system + (1|"])
    assert "unexpected" in line  # R's parser message, on one line
    assert "at least two" in error_line(capsys, ["compare", "kreutzer_ter", "--formula", "ter ~ 1 + (1|sentence_id)"])
    # the R session survives an R error
    assert main([*TER_FIT, "--quiet"]) == 0


def test_usage_errors_are_one_line(capsys):
    assert "--formula" in error_line(capsys, ["fit", "kreutzer_ter"])
    assert "invalid choice" in error_line(capsys, ["nonsense"])
    assert "invalid int value" in error_line(capsys, ["bootstrap", "x", "--score", "s", "--system", "s", "--item", "i",
                                                      "--n-resamples", "many"])
    assert "no demo" in error_line(capsys, ["demo", "--dataset", "nope"])
    assert "FACET=N" in error_line(capsys, ["vca", "kreutzer_annotation", "--score", "score", "--object", "sentence",
                                            "--facet", "rater", "--size", "rater"])


@pytest.mark.parametrize("argv, needle", [
    (["fit", "/no/such/file.csv", "--formula", "y ~ x + (1|g)"], "does not exist"),
    (["fit", "kreutzer_ter"], "--formula"),
])
def test_errors_in_a_real_process(argv, needle):
    res = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    lines = res.stderr.splitlines()  # progress lines may come first; the error is one line, the last
    assert [ln for ln in lines if ln.startswith("mixedeval: error: ")] == lines[-1:]
    assert needle in lines[-1] and "Traceback" not in res.stderr and res.stdout == ""
    quiet = subprocess.run([*CLI, *argv, "--quiet"], capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 2 and quiet.stderr.splitlines() == lines[-1:]
