"""The calibration atlas (issue 39): the --quick grid runs and every default answer covers 93-97%
within its Monte-Carlo error; the docs page is in sync with the CSV; the item-4 fixes (paired 0/1
differences near 0 or 1) reproduced and checked against an independent implementation."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
spec = importlib.util.spec_from_file_location("coverage_atlas", ROOT / "benchmarks" / "coverage_atlas.py")
atlas = importlib.util.module_from_spec(spec)
sys.modules["coverage_atlas"] = atlas
spec.loader.exec_module(atlas)

QUICK_REPS = 30


def discrete(r: dict) -> bool:
    """Scores in [0, 1] where n min(p, 1 - p) < 5 for system a, so only the lower limit applies:
    for 0/1 scores the coverage of any interval is a step function of the binomial count there (at
    30 questions and p = 0.98 every interval that covers 28 of 30 covers >= 97.8%; one that does
    not covers <= 88%); for continuous ones the default's Wilson interval is conservative by design
    (mixedeval/workflows/_bounded.py: the t interval covers 83-89% there)."""
    return (r["scores"] in ("binary", "bounded", "likert") and np.isfinite(r["p"])
            and r["n"] * min(r["p"], 1 - r["p"]) < 5)


def outside(cov: float, n: int, lower_only: bool) -> str | None:
    """One-sided exact binomial bounds at 1%: coverage significantly below 93% (or above 97%)."""
    if not np.isfinite(cov) or n < 1:
        return None
    k = int(round(cov * n))
    if stats.binom.cdf(k, n, 0.93) < 0.01:
        return f"{cov:.3f} below 93% (n={n})"
    if not lower_only and stats.binom.sf(k - 1, n, 0.97) < 0.01:
        return f"{cov:.3f} above 97% (n={n})"
    return None


#: designs of the committed full-grid CSV where the default is known to cover below 93% beyond its
#: Monte-Carlo error. The test fails when one of them is calibrated (remove it here) and when any
#: other design is not. (Likert at 0.98 / 0.02 with 30 questions covered 83-89% with the t interval;
#: the Wilson rule on the observed range fixes it -- see the high-rep CSV -- and the 40-rep rows of
#: the full grid were not below 93% beyond their Monte-Carlo error anyway.)
KNOWN_MISSES: set[str] = set()
#: the same for the high-rep run of the rules now (coverage_atlas_defaults.csv): none. (Two runs of two
#: systems, 100 questions, run SD 0.3 covered 85.5% of its first 200 data sets; on 1,000 -- the same
#: seed, extended -- 92.5%, within its Monte-Carlo error of 93%; 93.2% of 20,000 with --runs-rule.)
KNOWN_MISSES_HIGH: set[str] = set()


def check_defaults(tab: pd.DataFrame, known: set[str] = frozenset()) -> list[str]:
    bad = []
    d = tab[(tab["method"] == atlas.DEFAULT) & (tab["n"] >= 30) & tab["reps"].notna()]
    for r in d.to_dict("records"):
        assert r["errors"] == 0, f"{r['key']}: {r['errors']} data sets raised: {r['error_text']}"
        for col in ("cov_score", "cov_diff"):
            why = outside(float(r[col]), int(r["n_ok"]), discrete(r))
            if why and r["key"] not in known:
                bad.append(f"{r['key']} {col}: {why}")
    missed = {k for k in d["key"] for col in ("cov_score", "cov_diff")
              if outside(float(d.set_index("key").loc[k, col]), int(d.set_index("key").loc[k, "n_ok"]), True)}
    for k in set(known) & set(d["key"]):
        if k not in missed:
            bad.append(f"{k} is calibrated now: remove it from KNOWN_MISSES")
    return bad


def test_quick_grid_runs_and_defaults_are_calibrated(tmp_path):
    """The --quick grid end to end (resumable CSV; the default answer only: the alternatives are the
    peers' module's tests), each default row within 93-97% up to its Monte-Carlo error."""
    csv = tmp_path / "quick.csv"
    tab = atlas.main(["--quick", "--reps", str(QUICK_REPS), "--csv", str(csv), "--no-peers"])
    cells = atlas.grid(True)
    d = tab[(tab["method"] == atlas.DEFAULT) & tab["reps"].notna()]
    assert set(d["key"]) == {c.key for c in cells}
    assert (d["n_ok"] == QUICK_REPS).all()
    assert not check_defaults(tab), check_defaults(tab)
    # resumable: a second run skips every finished cell and adds nothing
    n = len(pd.read_csv(csv))
    atlas.main(["--quick", "--reps", str(QUICK_REPS), "--csv", str(csv), "--no-peers"])
    assert len(pd.read_csv(csv)) == n


def test_committed_csvs_defaults_calibrated():
    """The CSVs kept in the repository (full grid, --quick and the high-rep default run) pass the same
    bounds."""
    for path in (atlas.QUICK_CSV, atlas.FULL_CSV, atlas.DEFAULTS_CSV):
        if path.exists():
            tab = atlas.read_csv(path)
            assert list(tab.columns) == atlas.COLUMNS
            known = {atlas.FULL_CSV: KNOWN_MISSES, atlas.DEFAULTS_CSV: KNOWN_MISSES_HIGH}.get(path, frozenset())
            bad = check_defaults(tab, known)
            assert not bad, f"{path.name}: {bad}"


def test_page_in_sync_with_csv():
    """docs/concepts/calibration.md is what --page writes from the committed CSVs (format and numbers)."""
    csv = atlas.FULL_CSV if atlas.FULL_CSV.exists() else atlas.QUICK_CSV
    assert list(atlas.read_csv(csv).columns) == atlas.COLUMNS
    tab, source = atlas.page_tables(csv)
    if csv == atlas.FULL_CSV and atlas.DEFAULTS_CSV.exists():
        assert (tab["method"] == atlas.HIGH).any()  # the high-rep default column is on the page
    text = atlas.page_text(tab, atlas.image_names(tab), source)
    assert atlas.PAGE.read_text() == text, "run: python benchmarks/coverage_atlas.py --page"
    for im in atlas.image_names(tab):
        assert (atlas.IMG / im).exists()


def test_fast_default_route_is_summarize():
    """The atlas' default answer equals me.summarize's on the same data (leaderboard, differences)."""
    import mixedeval as me

    for c in (atlas.Cell("scores", "binary", 0.98, 30), atlas.Cell("clusters", "binary", 0.5, 40, cluster=4, epochs=2),
              atlas.Cell("runs", "bounded", 0.5, 30, systems=3, runs=3, sd_run=0.3)):
        data = atlas.simulate(c, False, np.random.default_rng(3), atlas._mu(c))
        fast = atlas.default_answer(data, bool(c.cluster))
        tab = data.rename(columns={"question": "item"})
        res = me.summarize(tab if c.cluster else tab.drop(columns="cluster"), epoch="epoch", run="run",
                           cluster="cluster" if c.cluster else None)
        ref = atlas.answer_dict(res.leaderboard, res.answer.differences, True, res.p_value, "")
        for x, v in ref["systems"].items():
            np.testing.assert_allclose(fast["systems"][x][:5], v[:5], rtol=1e-12)
        for k, v in ref["pairs"].items():
            np.testing.assert_allclose(fast["pairs"][k], v, rtol=1e-12)
    # a lower-is-better score (the TER plasmode cells): the same as summarize(higher_is_better=False),
    # ranks counted from the lowest (the rank-interval coverage compares them with the truth's ranks)
    c = atlas.Cell("scores", "unbounded", 0.5, 60, systems=3)
    data = atlas.simulate(c, False, np.random.default_rng(4), atlas._mu(c))
    fast = atlas.default_answer(data, False, higher=False)
    res = me.summarize(data.rename(columns={"question": "item"}).drop(columns="cluster"), epoch="epoch", run="run",
                       higher_is_better=False)
    ref = atlas.answer_dict(res.leaderboard, res.answer.differences, False, res.p_value, "")
    for x, v in ref["systems"].items():
        np.testing.assert_allclose(fast["systems"][x][:5], v[:5], rtol=1e-12)
    for k, v in ref["pairs"].items():
        np.testing.assert_allclose(fast["pairs"][k], v, rtol=1e-12)
    lowest = min(fast["systems"], key=lambda x: fast["systems"][x][0])
    assert fast["systems"][lowest][3] == 1  # rank 1 is the lowest mean


# ------------------------------------------------------------------------------ item 4
def test_newcombe_equals_evalstats():
    """_bounded.newcombe_paired against evalstats' own newcombe_mover_paired_ci (Fagerland et al. 2014,
    method 10) and the exact McNemar p against scipy's binomtest, on random and extreme tables."""
    res = pytest.importorskip("evalstats.core.resampling")
    from mixedeval.workflows._bounded import newcombe_paired

    rng = np.random.default_rng(5)
    cases = [(rng.random(n) < p1, rng.random(n) < p2) for n, p1, p2 in
             [(30, 0.98, 0.97), (30, 0.5, 0.4), (12, 0.9, 0.2), (200, 0.03, 0.02)]]
    cases += [(np.ones(30), np.ones(30)), (np.ones(30), np.r_[np.ones(29), 0.0]), (np.zeros(20), np.zeros(20))]
    for x, y in cases:
        x, y = np.asarray(x, float), np.asarray(y, float)
        lo, hi, p = newcombe_paired(x, y, 0.95)
        elo, ehi = res.newcombe_mover_paired_ci(x, y, 0.05)
        np.testing.assert_allclose([lo, hi], [elo, ehi], rtol=1e-10, atol=1e-12)
        b, c = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
        assert p == (stats.binomtest(b, b + c).pvalue if b + c else 1.0)


def _ceiling(rng: np.random.Generator, n: int = 30) -> tuple[np.ndarray, np.ndarray, float]:
    """One evaluation of the atlas' ceiling design: system a at 0.98, b 0.5 lower on the logit scale."""
    c = atlas.Cell("scores", "binary", 0.98, n)
    mu, t = atlas._mu(c), atlas.truth(c, False)
    q = rng.normal(0, atlas.SD_Q, n)
    eta = mu + np.array([0.0, -atlas.DELTA])[:, None] + q + rng.normal(0, atlas.SD_INT, (2, n))
    y = (rng.random((2, n)) < expit(eta)).astype(float)
    return y[0], y[1], t[0] - t[1]


def test_ceiling_pair_reproduced_and_fixed():
    """Item 4: 30 questions, a at 0.98: the paired t interval of a - b (the rule before) covers far
    below 93%; the default now (Newcombe hybrid score, exact McNemar) covers >= 93%, and says so."""
    from mixedeval.workflows._paired import NEWCOMBE_METHOD, SHORT, paired_differences

    rng = np.random.default_rng(11)
    reps, old, new, methods = 300, 0, 0, set()
    for _ in range(reps):
        x, y, th = _ceiling(rng)
        d = x - y
        se = d.std(ddof=1) / np.sqrt(d.size)
        h = stats.t.ppf(0.975, d.size - 1) * se
        old += (d.mean() - h <= th <= d.mean() + h)
        rows = pd.DataFrame({"system": ["a"] * 30 + ["b"] * 30, "task": "t", "item": list(map(str, range(30))) * 2,
                             "score": np.r_[x, y]})
        r = paired_differences(rows, ["a", "b"]).iloc[0]
        new += (r["conf_low"] <= th <= r["conf_high"])
        methods.add(r["method"])
    assert stats.binom.cdf(old, reps, 0.93) < 0.01, old / reps  # the paired t: significantly below 93%
    assert stats.binom.cdf(new, reps, 0.93) > 0.05, new / reps  # now not below 93%
    assert NEWCOMBE_METHOD in methods and SHORT[NEWCOMBE_METHOD] == "Newcombe hybrid score, exact McNemar"


def test_bounded_mean_near_ceiling_reproduced_and_fixed():
    """Item 4: continuous [0, 1] scores at mean 0.98, 30 questions: the t interval of a system's mean
    (the rule before, where it stayed inside (0, 1)) covers significantly below 93%; the default now
    (the Wilson interval where n min(p, 1 - p) < 5) covers >= 93% and names its family."""
    from mixedeval.workflows._paired import system_means

    c = atlas.Cell("scores", "bounded", 0.98, 30)
    mu, tr = atlas._mu(c), atlas.truth(c, False)[0]
    rng = np.random.default_rng(4)
    reps, old, new, fams = 250, 0, 0, set()
    for _ in range(reps):
        d = atlas.simulate(c, False, rng, mu)
        x = d.loc[d["system"] == "s00", "score"].to_numpy()
        h = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
        old += (x.mean() - h <= tr <= x.mean() + h)
        rows = pd.DataFrame({"system": d["system"], "task": "t", "item": d["question"], "score": d["score"]})
        m, _ = system_means(rows, ["s00", "s01"])
        r = m.set_index("system").loc["s00"]
        new += (r["conf_low"] <= tr <= r["conf_high"])
        fams.add(r["interval"])
    assert stats.binom.cdf(old, reps, 0.93) < 0.01, old / reps
    assert stats.binom.cdf(new, reps, 0.93) > 0.05, new / reps
    assert fams <= {"Wilson", "Wilson, modified"} and fams


def test_newcombe_rule_named_in_headline():
    """The headline names the rule that picked its method."""
    import mixedeval as me

    x = np.r_[np.ones(29), 0.0]
    y = np.r_[np.ones(27), 0.0, 0.0, 0.0]
    res = me.summarize(pd.DataFrame({"system": ["a"] * 30 + ["b"] * 30, "item": list(range(30)) * 2,
                                     "score": np.r_[x, y]}))
    assert "Newcombe hybrid score, exact McNemar" in res.headline_text()
    assert res.p_value == pytest.approx(stats.binomtest(2, 2).pvalue)
    # far from 0 and 1 the paired t stays
    rng = np.random.default_rng(2)
    z = (rng.random((2, 60)) < 0.5).astype(float)
    res = me.summarize(pd.DataFrame({"system": ["a"] * 60 + ["b"] * 60, "item": list(range(60)) * 2,
                                     "score": z.ravel()}))
    assert "[paired t]" in res.headline_text()


# ------------------------------------------------------------------------------ exact coverage (0/1 scores)
def test_exact_machinery_against_independent_computations(R):
    """The enumeration's pieces: the 2 x 2 cell probabilities' margins equal the truth of the
    simulation (1-D quadrature over the total SD); the vectorized Newcombe on counts equals
    _bounded.newcombe_paired (itself checked against evalstats) on every table of 12 questions;
    the exact coverage of the plain Wilson interval equals R's (prop.test limits, dbinom weights)."""
    from mixedeval.workflows._bounded import newcombe_paired

    for p in (0.02, 0.5, 0.98):
        c = atlas.Cell("scores", "binary", p, 30)
        P = atlas.pair_probabilities(c)
        np.testing.assert_allclose([P[0] + P[1], P[0] + P[2]], atlas.truth(c, False)[:2], rtol=1e-9)
        assert P.min() > 0 and P.sum() == pytest.approx(1.0)
    n = 12
    tabs = [(a, b, c, n - a - b - c) for a in range(n + 1) for b in range(n + 1 - a) for c in range(n + 1 - a - b)]
    lo, hi = atlas.newcombe_counts(*np.array(tabs).T)
    for (a, b, c, d), l_, h_ in zip(tabs, lo, hi):
        x = np.r_[np.ones(a), np.ones(b), np.zeros(c), np.zeros(d)]
        y = np.r_[np.ones(a), np.zeros(b), np.ones(c), np.zeros(d)]
        ref = newcombe_paired(x, y, 0.95)
        np.testing.assert_allclose([l_, h_], ref[:2], rtol=1e-10, atol=1e-12)
    ex = atlas.exact_coverage(atlas.Cell("scores", "binary", 0.02, 50))
    r_cov = float(np.asarray(R(f"""local({{n <- 50; p <- {float(ex['p_a']):.17g}
        cov <- sapply(0:n, function(k) {{ci <- prop.test(k, n, correct = FALSE)$conf.int; ci[1] <= p && p <= ci[2]}})
        sum(dbinom(0:n, n, p) * cov)}})"""))[0])
    assert ex["score_wilson"] == pytest.approx(r_cov, rel=1e-8)


def test_modified_wilson_lifts_the_exact_dip_at_50_questions():
    """0/1 scores at 0.02, 50 questions (exact, no Monte Carlo): the plain Wilson interval covers
    92.2% (the rule before); the default now (Brown-Cai-DasGupta's modified Wilson) >= 93%, and the
    paired differences (Newcombe) >= 93% at 30, 50 and 100 questions."""
    for n in (30, 50, 100):
        ex = atlas.exact_coverage(atlas.Cell("scores", "binary", 0.02, n))
        assert ex["score_default"] >= 0.93 and ex["diff_default"] >= 0.93, (n, ex)
        assert ex["total_probability"] == pytest.approx(1.0, abs=1e-9)
    ex = atlas.exact_coverage(atlas.Cell("scores", "binary", 0.02, 50))
    assert ex["score_wilson"] < 0.93 < ex["score_wilson_modified"]


# ------------------------------------------------------------------------------ rating scales
def test_score_scale_rule():
    from mixedeval.workflows._bounded import score_scale

    assert score_scale([0.0, 0.3, 1.0]) == (0.0, 1.0, False)
    assert score_scale([1.0, 5.0, 4.0, 5.0]) == (1.0, 5.0, True)
    assert score_scale([5.0, 5.0]) is None  # one value: no range
    assert score_scale([1.5, 2.0, 7.2]) is None  # not integers: the t interval
    assert score_scale([-3.0, 2.0]) == (-3.0, 2.0, True)


def test_rating_scale_interval_is_the_modified_wilson_on_the_observed_range(R):
    """A 1-5 rating scale at the ceiling: 27 of 30 questions at 5, the others 2, 3 and 4 (observed range
    2-5, mean rescaled p = (mean - 2) / 3): the system's interval is 2 + 3 x the modified Wilson interval
    of p with n = 30, computed in R (prop.test's Wilson limits; 1 - qchisq(0.025, 2 (n - x)) / (2n) for
    the upper limit, x = n p), and its family says so."""
    from mixedeval.workflows._paired import system_means

    a = np.r_[np.full(27, 5.0), 2.0, 3.0, 4.0]
    b = np.r_[np.full(20, 4.0), np.full(10, 3.0)]
    rows = pd.DataFrame({"system": ["a"] * 30 + ["b"] * 30, "task": "t", "item": list(map(str, range(30))) * 2,
                         "score": np.r_[a, b]})
    m, _ = system_means(rows, ["a", "b"])
    r = m.set_index("system").loc["a"]
    assert r["interval"] == "Wilson, modified (observed range)"
    x = 30 * (a.mean() - 2.0) / 3.0  # 27 + 1/3 + 2/3 = 28
    lo, hi = np.asarray(R(f"""local({{n <- 30; x <- {x:.12g}; p <- x / n; z <- qnorm(0.975)
        ci <- (p + z^2 / (2 * n) + c(-1, 1) * z * sqrt(p * (1 - p) / n + z^2 / (4 * n^2))) / (1 + z^2 / n)
        c(ci[1], max(ci[2], 1 - qchisq(0.025, 2 * (n - x)) / (2 * n)))}})"""))
    np.testing.assert_allclose([r["conf_low"], r["conf_high"]], [2 + 3 * lo, 2 + 3 * hi], rtol=1e-10)
    assert m.set_index("system").loc["b", "interval"] == "t"  # away from the bounds: the t interval


def test_likert_mean_near_ceiling_reproduced_and_fixed():
    """Issue 39 item 4: Likert 1-5 scores piling up at 5 (the atlas' likert cell at 0.98: mean 4.92),
    30 questions: the t interval of a system's mean (the rule before) covers significantly below 93%;
    the default now (the Wilson rule on the observed range) does not, and names its family."""
    from mixedeval.workflows._paired import system_means

    c = atlas.Cell("scores", "likert", 0.98, 30)
    mu, tr = atlas._mu(c), atlas.truth(c, False)[0]
    rng = np.random.default_rng(8)
    reps_old, old = 1500, 0  # the t interval alone: cheap, so more data sets
    for _ in range(reps_old):
        x = atlas.simulate(c, False, rng, mu).query("system == 's00'")["score"].to_numpy()
        h = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
        old += (x.mean() - h <= tr <= x.mean() + h)
    assert stats.binom.cdf(old, reps_old, 0.93) < 0.01, old / reps_old
    reps, new, fams = 250, 0, set()
    for _ in range(reps):
        d = atlas.simulate(c, False, rng, mu)
        rows = pd.DataFrame({"system": d["system"], "task": "t", "item": d["question"], "score": d["score"]})
        m, _ = system_means(rows, ["s00", "s01"])
        r = m.set_index("system").loc["s00"]
        new += (r["conf_low"] <= tr <= r["conf_high"])
        fams.add(r["interval"])
    assert stats.binom.cdf(new, reps, 0.93) > 0.05, new / reps
    assert any("(observed range)" in f for f in fams), fams
