"""Formulas are data, never code (mixedeval.data._formula).

Attack payloads must never reach R (no file is created, through the Python API, the workflows or
the CLI), legitimate lme4 formulas keep working and equal R's fit of the same formula, columns
named like numbers or operators change nothing, size limits give clean errors, and random token
strings never crash the parser (hypothesis), with every accepted formula checked independently
by R's own parser (``all.names``) for the functions it calls.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from conftest import assert_rel

import mixedeval as me
from mixedeval.cli import main
from mixedeval.data._formula import ALLOWED_FUNCTIONS, MAX_DEPTH, MAX_TERMS, parse_formula

BASE = "ter ~ system + (1|sentence_id)"


def _r_chars(path: str) -> str:
    """An R expression building ``path`` without a string literal: intToUtf8(c(...))."""
    return "intToUtf8(c(" + ",".join(str(ord(c)) for c in path) + "))"


def payloads(target: str) -> list[str]:
    """Formulas that would create ``target`` if R evaluated them."""
    p = _r_chars(target)
    cmd = _r_chars(f"touch {target}")
    return [
        f"ter ~ system + (1|sentence_id) + I(src_length*0 + 0*system({cmd}))",
        f"ter ~ system + I(0*system2({_r_chars('touch')}, {p}))",
        f"ter ~ system + I(0*file.create({p})) + (1|sentence_id)",
        f'ter ~ system + I(eval(parse(text = "file.create(\'{target}\')"))) + (1|sentence_id)',
        f"ter ~ system + I(eval(parse(text = {_r_chars(f'file.create({chr(39)}{target}{chr(39)})')})))",
        f'ter ~ system + I(get("file.create")({p}))',
        f"ter ~ system + I(get({_r_chars('file.create')})({p}))",
        f"ter ~ system + I(do.call({_r_chars('file.create')}, list({p})))",
        f"ter ~ system + I(match.fun({_r_chars('file.create')})({p}))",
        f"ter ~ system + I(Recall(file.create({p})))",
        f"ter ~ system + I(base::file.create({p}))",
        f"ter ~ system + I(base:::file.create({p}))",
        f"ter ~ system + I(0*`file.create`({p})) + (1|sentence_id)",
        f"ter ~ system + `file.create`({p})",
        f"ter ~ system + I(I(I(0*file.create({p}))))",
        f"ter ~ system + I(file.create(rawToChar(as.raw(c({','.join(str(ord(c)) for c in target)})))))",
        f"ter ~ system + I(file.create(chartr({_r_chars('abc')}, {_r_chars('abc')}, {p})))",
        f"ter ~ system + I(file.create(paste0({p})))",
        f"ter ~ system + (1 + I(0*file.create({p})) | sentence_id)",
        f"ter ~ system + (1 | sentence_id:I(file.create({p})))",
        f"I(ter + 0*file.create({p})) ~ system + (1|sentence_id)",
        f"log(ter + 1 + 0*file.create({p})) ~ system + (1|sentence_id)",
        f"ter ~ system + (1|sentence_id) + I({{file.create({p}); 0}})",
        f"ter ~ system; file.create({p})",
        f"ter ~ system + I(x <- file.create({p}))",
        f"ter ~ system + I(src_length %o% file.create({p}))",
        f"ter ~ system + I(sapply(1, function(i) file.create({p})))",
        f"ter ~ system + I((\\(x) file.create({p}))(1))",
        f"ter ~ system + I(environment()$file.create({p}))",
        f"ter ~ system\nfile.create({p})",
        f"ter ~ system # {p}",
    ]


@pytest.fixture()
def target(tmp_path):
    return str(tmp_path / "pwned")


def test_payloads_are_refused_by_the_parser_and_the_api(ter, target):
    before = ter.copy(deep=True)
    for f in payloads(target):
        with pytest.raises(me.FormulaError):
            parse_formula(f, ter.columns)
        with pytest.raises(me.FormulaError):
            me.lmm(f, ter)
        assert not (os.path.exists(target)), f
    pd.testing.assert_frame_equal(ter, before)
    # the session is fine afterwards
    assert me.lmm(BASE, ter).nobs == len(ter)


def test_the_escape_hatch_really_runs_r_code(ter, target):
    """allow_r_code=True sends the formula verbatim: the payload runs (so the payloads above are
    real attacks, refused only by the validator)."""
    f = f"ter ~ system + I(src_length*0 + 0*file.create({_r_chars(target)})) + (1|sentence_id)"
    me.lmm(f, ter, allow_r_code=True)
    assert os.path.exists(target)


def test_workflow_random_terms_and_cli_refuse_payloads(ter, target, capsys):
    p = _r_chars(target)
    with pytest.raises(me.DataError):
        me.compare_systems(ter, score="ter", system="system", item="sentence_id",
                           random=[f"file.create({p})"])
    for argv in (["fit", "kreutzer_ter", "--formula", payloads(target)[0]],
                 ["compare", "kreutzer_ter", "--formula", "ter ~ 1 + (1|sentence_id)", "--formula", payloads(target)[2]]):
        code = main([*argv, "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and "not allowed" in err, err
    # the CLI as a process, with the first payload
    out = subprocess.run([sys.executable, "-m", "mixedeval.cli", "fit", "kreutzer_ter", "--formula",
                          payloads(target)[2], "--quiet"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "not allowed" in out.stderr
    assert not os.path.exists(target)


@pytest.fixture(scope="module")
def sim(tmp_path_factory, R):
    """A small crossed design with counts and a positive covariate."""
    rng = np.random.default_rng(11)
    n_items, n_sys = 40, 3
    d = pd.DataFrame({"item": np.repeat([f"i{k:02d}" for k in range(n_items)], n_sys * 2),
                      "system": np.tile(np.repeat(["A", "B", "C"], 2), n_items),
                      "run": np.tile(["r1", "r2"], n_items * n_sys)})
    d["x"] = rng.uniform(1, 5, len(d))
    d["n"] = rng.integers(5, 50, len(d)).astype(float)
    u = rng.normal(0, 0.5, n_items)[np.repeat(np.arange(n_items), n_sys * 2)]
    d["y"] = np.exp(0.2 + 0.3 * (d["system"] == "B") + 0.1 * d["x"] + u + rng.normal(0, 0.3, len(d)))
    d["block"] = np.repeat([f"b{k}" for k in range(8)], len(d) // 8)
    path = tmp_path_factory.mktemp("fs") / "sim.csv"
    d.to_csv(path, index=False)
    R(f'fs_d <- read.csv("{path}", stringsAsFactors = FALSE); '
      'for (v in c("item", "system", "run", "block")) fs_d[[v]] <- factor(fs_d[[v]], '
      'levels = sort(unique(fs_d[[v]]), method = "radix"))')
    return d


LEGIT = [
    "log(y + 1) ~ system + (1|item)",
    "y ~ poly(x, 2) + system + (1|item)",
    "y ~ I(x^2) + x + system + (1|item)",
    "y ~ system + (x || item)",
    "y ~ system + (1 | block/item)",
    "y ~ system + offset(log(n)) + (1|item)",
    "sqrt(y) ~ system * scale(x) + (1|item) + (1|run)",
    "y ~ 0 + system + (1|item)",
    "y ~ system - 1 + x + (1 + x | item)",
]


@pytest.mark.parametrize("formula", LEGIT)
def test_legitimate_formulas_fit_as_in_r(formula, sim, R):
    fit = me.lmm(formula, sim, reml=True)
    R(f"fs_m <- lmerTest::lmer({formula}, data = fs_d)")
    assert_rel(fit.fixed["estimate"], R("lme4::fixef(fs_m)"))
    assert list(fit.fixed["term"]) == [str(x) for x in R("names(lme4::fixef(fs_m))")]
    assert_rel(fit.loglik, R("as.numeric(logLik(fs_m))"))


def test_columns_named_like_numbers_or_operators_change_nothing(ter):
    ref = me.lmm("ter ~ 1 + system + (1|sentence_id)", ter)
    rng = np.random.default_rng(0)
    junk = ter.assign(**{"1": rng.normal(size=len(ter)), "+": rng.normal(size=len(ter)),
                         "~": rng.normal(size=len(ter)), "(": rng.normal(size=len(ter)),
                         "0": rng.normal(size=len(ter)), "-1": rng.normal(size=len(ter))})
    fit = me.lmm("ter ~ 1 + system + (1|sentence_id)", junk)
    assert list(fit.fixed["term"]) == list(ref.fixed["term"])
    assert list(fit.random["term"]) == list(ref.random["term"])
    assert_rel(fit.fixed["estimate"], ref.fixed["estimate"])
    assert list(fit.data.columns) == ["ter", "system", "sentence_id"]
    # they are reachable when back-quoted
    p = parse_formula("ter ~ `1` + `+` + (1|sentence_id)", junk.columns)
    assert p.columns == ("ter", "1", "+", "sentence_id")


def test_unquoted_names_with_spaces_still_work(ter):
    df = ter.rename(columns={"sentence_id": "item id", "system": "my system"})
    fit = me.lmm("ter ~ my system + (1|item id)", df)
    ref = me.lmm(BASE, ter)
    assert_rel(fit.fixed["estimate"], ref.fixed["estimate"])
    assert fit.ngroups == {"item id": ref.ngroups["sentence_id"]}


def test_size_limits_give_clean_errors_and_linear_time(ter):
    many = "ter ~ " + " + ".join(f"I(src_length^{k})" for k in range(MAX_TERMS + 5)) + " + (1|sentence_id)"
    with pytest.raises(me.FormulaError, match="terms"):
        me.lmm(many, ter)
    for depth in (MAX_DEPTH + 1, 4_000):
        with pytest.raises(me.FormulaError, match="nested"):
            parse_formula("ter ~ " + "(" * depth + "system" + ")" * depth, ter.columns)
    with pytest.raises(me.FormulaError, match="characters long"):
        parse_formula("ter ~ " + "(" * 8_000 + "system" + ")" * 8_000, ter.columns)
    # the scanner itself (no length limit with allow_r_code): 50,000 nested parentheses took over
    # 120 s with the old quadratic scanner; now the parser stops at MAX_DEPTH after a linear scan
    t0 = time.perf_counter()
    deep = "ter ~ " + "(" * 50_000 + "system" + ")" * 50_000
    assert parse_formula(deep, ter.columns, allow_r_code=True).verbatim
    with pytest.raises(me.FormulaError, match="nested"):
        parse_formula("ter ~ " + "I(" * 3_000 + "src_length" + ")" * 3_000, ter.columns)
    assert time.perf_counter() - t0 < 2.0
    assert me.lmm(BASE, ter).converged  # the session still works


def test_thousand_terms_with_the_escape_hatch_do_not_crash_the_process(tmp_path):
    """~1,000 terms used to kill the process (R's C stack check is off under rpy2). With
    allow_r_code=True the formula reaches R: the process must survive with a clean error or a fit."""
    code = f"""
import numpy as np, pandas as pd, mixedeval as me
rng = np.random.default_rng(1)
d = pd.DataFrame(rng.normal(size=(300, 1000)), columns=[f"x{{k}}" for k in range(1000)])
d["y"] = rng.normal(size=300); d["g"] = [f"g{{k % 10}}" for k in range(300)]
f = "y ~ " + " + ".join(f"x{{k}}" for k in range(1000)) + " + (1|g)"
try:
    me.lmm(f, d)
except me.FormulaError as e:
    print("REFUSED", "terms" in str(e))
try:
    me.lmm(f, d, allow_r_code=True)
    print("FIT")
except me.MixedEvalError as e:
    print("CLEAN", type(e).__name__, str(e)[:80])
fit = me.lmm("y ~ x1 + (1|g)", d)
print("RECOVERED", fit.nobs)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "REFUSED True" in out.stdout and "RECOVERED 300" in out.stdout, out.stdout
    assert "CLEAN" in out.stdout or "FIT" in out.stdout


# ------------------------------------------------------------------------------ fuzzing
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

COLS = ["y", "system", "item", "x", "my col", "1", "+"]
TOKENS = ["y", "system", "item", "x", "my col", "`1`", "`+`", "1", "0", "2.5", "1e-3", "~", "+", "-", "*", "/", ":",
          "^", "|", "||", "%in%", "(", ")", ",", ".", "I(", "log(", "poly(", "offset(", "cbind(", "system(", "`I`(",
          "=", "<-", "::", "$", "[", "{", ";", '"a"', "'b'", "get(", "eval(", "@", "!", "&", "\\", "#", " ", "\n",
          "%o%", "`", "T", "NA", "function", "é", "x.y", "_x"]


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=25))
def test_random_token_strings_parse_or_raise_formula_error(tokens):
    text = " ".join(tokens) if len(tokens) % 2 else "".join(tokens)
    try:
        p = parse_formula(text, COLS)
    except me.FormulaError:
        return
    # accepted: only allowed function names are called, no code characters, and it is stable
    called = set(re.findall(r"([A-Za-z.][\w.]*)\s*\(", re.sub(r"`[^`]*`", "", p.r_formula)))
    assert called <= ALLOWED_FUNCTIONS, (text, p.r_formula)
    assert not set(p.r_formula) & set("\"';{}$@[]#\\!&=\n"), p.r_formula
    assert set(p.columns) <= set(COLS)
    again = parse_formula(p.r_formula, COLS)
    assert again.r_formula == p.r_formula


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), min_size=3, max_size=20))
def test_accepted_formulas_call_only_allowed_functions_by_r_parser(R, tokens):
    """Independent check: R's parser lists the functions an accepted formula calls."""
    text = " ".join(tokens)
    try:
        p = parse_formula(text, COLS)
    except me.FormulaError:
        return
    import rpy2.robjects as ro

    ro.globalenv["fs_text"] = ro.StrVector([p.r_formula])
    fun = set(str(x) for x in R("setdiff(all.names(str2lang(fs_text)), all.vars(str2lang(fs_text)))"))
    ops = {"~", "+", "-", "*", "/", ":", "^", "|", "||", "%in%", "(", "<", ">", "<=", ">=", "==", "!="}
    assert fun <= ALLOWED_FUNCTIONS | ops, (p.r_formula, fun)
    assert set(str(x) for x in R("all.vars(str2lang(fs_text))")) <= set(COLS) | {"pi"}
