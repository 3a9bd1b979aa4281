"""The calibration atlas (issue 39): coverage, width and error rates of mixedeval's default answer,
beside the peers' and textbook alternatives, on simulated and plasmode evaluations.

One cell = one design (its key: family, scores, accuracy, questions, systems, cluster size, epochs,
runs, run SD). Per cell ``reps`` data sets are simulated under the alternative (systems differ) and
``reps`` under the null (systems identical); each data set is analysed by

* ``mixedeval default``: what ``me.summarize`` (and ``me.compare_logs``: the same answer,
  :mod:`mixedeval.workflows._logs_answer`) gives by default -- the leaderboard's intervals of the
  systems' mean scores, the best-first paired differences, the headline p, the simultaneous rank
  intervals and letters. The harness calls ``me.summarize`` itself on every data set;
* each alternative of ``benchmarks/atlas_peers.py`` (``alternatives(data)``: Inspect's stderr /
  ci(), evalstats ``auto`` and named methods, Wald, t, McNemar, paired bootstrap, ...), when that
  module is importable (else the cell's rows say ``peers: not available``).

Data model (systems s, questions i, clusters k, runs r, epochs e), on the logit scale
``eta = mu + beta_s + q_i + c_k + g_{s,k} + u_{s,i} + rho_{s,r}`` with q ~ N(0, 1), u ~ N(0,
0.5^2), with clusters c ~ N(0, 0.8^2) and the system x cluster effect g ~ N(0, 0.6^2), with run
effects rho ~ N(0, sd_run^2); epochs are independent draws given eta. Scores: ``binary`` Bernoulli
(expit eta); ``bounded`` Beta with mean expit(eta) and precision 8; ``likert`` 1 + Binomial(4,
expit eta) (a 1-5 scale); ``unbounded`` eta + N(0, 1). ``mu`` is solved so that system a's
expected score is the design's accuracy ``p``; under the alternative ``beta_s = -+ 0.5 s`` (the
others move towards 0.5), under the null ``beta = 0``. Truth: the expected score over the
population of questions, clusters and runs, ``E[g(mu + beta_s + Z)]``, Z ~ N(0, total variance)
by 200-node Gauss-Hermite quadrature (exact for the unbounded scores: ``mu + beta_s``).
Plasmode cells resample the questions (with replacement) of the bundled Inspect logs
(``llm_inspect_logs``: 3 systems x 2 tasks x 60 questions x 3 epochs; task ``arithmetic``) and
of the Kreutzer TER table (3 systems x 1,041 sentences x 3 runs); the full data's means are the
truth (under the null the systems' labels are permuted within each question, so they are equal).

Recorded per (cell, method): ``cov_score`` (coverage of the 95% intervals of every system's
mean, averaged over systems), ``cov_score_a`` (system a's, the one at accuracy ``p``),
``cov_diff`` (of every pair's difference, averaged over pairs), their Monte-Carlo SEs (from the
spread of the per-data-set proportions over ``reps``), ``width_score`` / ``width_diff`` (mean
half-width / 1.96 over the SD of the method's estimates across the data sets: 1 is the width of
an interval with the true SE), ``type_i`` and ``power`` (rejection at 5% of the pair a - b;
for the default also ``headline_type_i`` / ``headline_power``: its headline pair, best against
runner-up), ``rank_cov`` (all systems' true ranks inside their simultaneous rank intervals,
alternative), ``letters_cov`` (no two systems separated by the letters under the null),
``errors`` (data sets that raised instead of answering, with the first message) and
``intervals`` (the families the default named: ``t``, ``Wilson``, ...). The Bradley-Terry,
judge-corrected and IRT-subset families are recorded from their own benchmarks' runs
(``source`` names them).

Each cell's seed is derived from its key (SHA-256), so a cell's numbers do not depend on which
others run; rows are appended to the CSV after each batch of cells and re-running skips the
cells already there (resumable). ``--page`` writes docs/concepts/calibration.md and its plots
from the CSV.

    .venv/bin/python benchmarks/coverage_atlas.py --quick            # CI grid -> results/coverage_atlas_quick.csv
    .venv/bin/python benchmarks/coverage_atlas.py [--reps 400] [--executor 2]   # full grid
    .venv/bin/python benchmarks/coverage_atlas.py --page             # the docs page from the CSVs
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import sys
import time
import warnings
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import expit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

RESULTS = ROOT / "benchmarks" / "results"
FULL_CSV, QUICK_CSV = RESULTS / "coverage_atlas.csv", RESULTS / "coverage_atlas_quick.csv"
DEFAULTS_CSV, BEFORE_CSV = RESULTS / "coverage_atlas_defaults.csv", RESULTS / "coverage_atlas_defaults_before.csv"
PAGE = ROOT / "docs" / "concepts" / "calibration.md"
IMG = ROOT / "docs" / "concepts" / "img"
DEFAULT = "mixedeval default"
#: the default answer's rows of the high-repetition run (benchmarks/results/coverage_atlas_defaults.csv)
HIGH = "mixedeval default, high-rep"
LEVEL = 0.95
SD_Q, SD_INT, SD_C, SD_G = 1.0, 0.5, 0.8, 0.6
DELTA = 0.5
PHI = 8.0  # Beta precision of the bounded scores
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(200)
SYSTEMS = [f"s{j:02d}" for j in range(12)]


@dataclass(frozen=True)
class Cell:
    """One design of the atlas (module docstring); ``key`` identifies it in the CSV."""

    family: str
    scores: str = "binary"  # binary, bounded, likert, unbounded, inspect, ter
    p: float = 0.5
    n: int = 50
    systems: int = 2
    cluster: int = 0  # questions per cluster; 0: i.i.d. questions
    epochs: int = 1
    runs: int = 1
    sd_run: float = 0.0

    @property
    def key(self) -> str:
        return "|".join(str(getattr(self, f.name)) for f in fields(self))

    def seed(self, random_state: int) -> np.random.SeedSequence:
        h = int.from_bytes(hashlib.sha256(self.key.encode()).digest()[:8], "little")
        return np.random.SeedSequence([random_state, h])


KEY_COLUMNS = [f.name for f in fields(Cell)]
METRICS = ["reps", "n_ok", "errors", "error_text", "cov_score", "cov_score_se", "cov_score_a", "cov_score_a_se",
           "cov_diff", "cov_diff_se", "width_score", "width_diff", "type_i", "type_i_se", "power",
           "headline_type_i", "headline_power", "rank_cov", "rank_cov_se", "letters_cov", "intervals", "source",
           "seconds"]
COLUMNS = ["key", *KEY_COLUMNS, "method", *METRICS]


# ------------------------------------------------------------------------------ the grids
def grid(quick: bool) -> list[Cell]:
    """The cells: ``--quick`` (CI-sized) or the full grid (one-factor-at-a-time around a base
    design, plus the crossed scores x accuracy x questions block)."""
    if quick:
        return [Cell("scores", "binary", 0.5, 30), Cell("scores", "binary", 0.98, 30),
                Cell("systems", "bounded", 0.5, 30, systems=3),
                Cell("clusters", "binary", 0.5, 40, cluster=4, epochs=2),
                Cell("runs", "binary", 0.5, 50, runs=3, sd_run=0.3)]
    cells = []
    for sc in ("binary", "bounded", "likert", "unbounded"):
        for p in ((0.02, 0.5, 0.98) if sc != "unbounded" else (0.5,)):
            for n in (10, 20, 30, 50, 100, 500, 2000):
                cells.append(Cell("scores", sc, p, n))
    for S in (3, 5, 12):
        for n in (30, 100, 500):
            cells.append(Cell("systems", "binary", 0.5, n, systems=S))
    for m in (3, 5, 10, 20):
        for n in (60, 200, 1000):
            cells.append(Cell("clusters", "binary", 0.5, n, cluster=m, epochs=2))
    for E in (2, 3, 5):
        for p in (0.5, 0.98):
            for n in (30, 100):
                cells.append(Cell("epochs", "binary", p, n, epochs=E))
    for R in (2, 3, 5, 10):
        for sd in (0.0, 0.3, 0.6):
            for n in (30, 100):
                cells.append(Cell("runs", "binary", 0.5, n, runs=R, sd_run=sd))
    for n in (10, 20, 30, 60):
        cells.append(Cell("plasmode", "inspect", np.nan, n, systems=3, epochs=3))
    for n in (30, 100, 500):
        cells.append(Cell("plasmode", "ter", np.nan, n, systems=3, runs=3))
    # the order cells run in (the CSV is appended as they finish): the designs users have most
    # (30-100 questions) first, then the small ones, then the large
    return sorted(cells, key=lambda c: (0 if 30 <= c.n <= 100 else 1 if c.n < 30 else 2, c.n, c.family != "scores"))


# ------------------------------------------------------------------------------ simulation
def _expect(g: Any, mu: float, sd: float) -> float:
    return float(np.sum(_GH_W * g(mu + sd * _GH_X)) / np.sqrt(2 * np.pi))


def _link(scores: str) -> Any:
    if scores == "likert":
        return lambda x: 1.0 + 4.0 * expit(x)
    if scores == "unbounded":
        return lambda x: x
    return expit


def _sd_total(c: Cell) -> float:
    extra = (SD_C**2 + SD_G**2) if c.cluster else 0.0
    return float(np.sqrt(SD_Q**2 + SD_INT**2 + extra + c.sd_run**2))


def _mu(c: Cell) -> float:
    if c.scores == "unbounded" or c.p == 0.5:
        return 0.0
    return float(optimize.brentq(lambda m: _expect(expit, m, _sd_total(c)) - c.p, -15, 15))


def effects(c: Cell, null: bool) -> np.ndarray:
    """beta_s: 0 under the null; else system a at accuracy p and the others moving towards 0.5."""
    sign = 1.0 if (c.p < 0.5 and c.scores != "unbounded") else -1.0
    return np.zeros(c.systems) if null else sign * DELTA * np.arange(c.systems)


def truth(c: Cell, null: bool) -> np.ndarray:
    """Expected score of each system (module docstring)."""
    mu, sd, g = _mu(c), _sd_total(c), _link(c.scores)
    return np.array([_expect(g, mu + b, sd) for b in effects(c, null)])


def simulate(c: Cell, null: bool, rng: np.random.Generator, mu: float) -> pd.DataFrame:
    """One data set of a simulated cell, in atlas_peers' columns (system, question, cluster, epoch,
    run, score)."""
    S, n, R, E = c.systems, c.n, c.runs, c.epochs
    beta = effects(c, null)[:, None, None]
    q = rng.normal(0, SD_Q, n)
    eta = mu + beta + q[None, None, :] + rng.normal(0, SD_INT, (S, 1, n)) + rng.normal(0, c.sd_run, (S, R, 1))
    clusters = None
    if c.cluster:
        G = max(n // c.cluster, 2)
        k = np.arange(n) % G
        eta = eta + rng.normal(0, SD_C, G)[k][None, None, :] + rng.normal(0, SD_G, (S, 1, G))[:, :, k]
        clusters = k
    eta = np.broadcast_to(eta[..., None], (S, R, n, E))
    if c.scores == "binary":
        y = (rng.random(eta.shape) < expit(eta)).astype(float)
    elif c.scores == "bounded":
        m = np.clip(expit(eta), 1e-6, 1 - 1e-6)
        y = rng.beta(m * PHI, (1 - m) * PHI)
    elif c.scores == "likert":
        y = 1.0 + rng.binomial(4, expit(eta)).astype(float)
    else:
        y = eta + rng.normal(0, 1.0, eta.shape)
    s, r, i, e = np.indices(y.shape).reshape(4, -1)
    return pd.DataFrame({"system": np.array(SYSTEMS[:S])[s], "question": i.astype(str),
                         "cluster": None if clusters is None else clusters[i].astype(str),
                         "epoch": e + 1, "run": r + 1, "score": y.ravel()})


_PLASMODE: dict[str, pd.DataFrame] = {}


def plasmode_source(kind: str) -> pd.DataFrame:
    """The full real data of a plasmode cell in atlas_peers' columns (systems renamed s00..)."""
    if kind not in _PLASMODE:
        import mixedeval as me

        if kind == "inspect":
            logs = me.read_eval_logs(str(ROOT / "mixedeval" / "datasets_files" / "llm_inspect_logs"))
            t = logs.table
            t = t[t["task"].astype(str) == "arithmetic"]
            ep = t["epoch"] if "epoch" in t.columns else 1
            df = pd.DataFrame({"system": t["system"].astype(str), "question": t["item"].astype(str), "cluster": None,
                               "epoch": pd.Series(ep, index=t.index).astype(int), "run": 1,
                               "score": t["score"].astype(float)})
        else:
            t = me.datasets.load("kreutzer_ter")
            df = pd.DataFrame({"system": t["system"].astype(str), "question": t["sentence_id"].astype(str),
                               "cluster": None, "epoch": 1, "run": t["replication"].astype(int),
                               "score": t["ter"].astype(float)})
        names = sorted(df["system"].unique())
        df["system"] = df["system"].map({x: SYSTEMS[j] for j, x in enumerate(names)})
        _PLASMODE[kind] = df.reset_index(drop=True)
    return _PLASMODE[kind]


def plasmode(c: Cell, null: bool, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    """Questions drawn with replacement from the full data (renamed q0..); under the null the
    systems' labels permuted within each drawn question. Truth: the full data's system means
    (their average under the null)."""
    full = plasmode_source(c.scores)
    qs = np.array(sorted(full["question"].unique()))
    by_q = full.groupby("question", sort=True).indices
    pick = rng.choice(len(qs), c.n, replace=True)
    parts = []
    for j, qi in enumerate(pick):
        blk = full.iloc[by_q[qs[qi]]].copy()
        blk["question"] = f"q{j}"
        if null:
            names = np.array(sorted(blk["system"].unique()))
            perm = dict(zip(names, rng.permutation(names)))
            blk["system"] = blk["system"].map(perm)
        parts.append(blk)
    data = pd.concat(parts, ignore_index=True)
    means = full.groupby(["system", "question"])["score"].mean().groupby("system").mean()
    tr = means.reindex(SYSTEMS[:c.systems]).to_numpy()
    return data, (np.full(c.systems, tr.mean()) if null else tr)


# ------------------------------------------------------------------------------ the default answer
def default_answer(data: pd.DataFrame, clustered: bool, higher: bool = True) -> dict[str, Any]:
    """mixedeval's default answer on one data set: the answer ``me.summarize`` and
    ``me.compare_logs`` hold (the call's design, then :func:`~mixedeval.workflows._logs_answer.logs_answer`
    with the defaults: level 0.95, Holm; ``higher``: the score's direction, as ``me.summarize(...,
    higher_is_better=)`` -- False for TER, whose truth ranks lower first), without the
    Inspect-style side tables (tests/test_coverage_atlas.py checks it equals ``me.summarize``'s
    answer). Per system estimate / interval / rank interval / letters, per pair (a - b) estimate /
    interval / p, the headline p and the interval families named."""
    from mixedeval import _answer
    from mixedeval.workflows._logs_answer import logs_answer
    from mixedeval.workflows._paired import SHORT
    from mixedeval.workflows.logs.design import build_design

    rows = pd.DataFrame({"system": data["system"].astype(str).to_numpy(), "task": "score",
                         "item": data["question"].astype(str).to_numpy(), "run": data["run"].astype(str).to_numpy(),
                         "epoch": data["epoch"].astype(str).to_numpy(), "score": data["score"].to_numpy(dtype=float)})
    if clustered:
        rows["cluster"] = data["cluster"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        design = build_design(rows, cluster="cluster" if clustered else None)
        direction = _answer.direction("score", higher)
        ans = logs_answer(design, direction, level=LEVEL, adjust="holm", pooled_label="(all tasks)")
    return answer_dict(ans.leaderboard, ans.table, direction.higher_is_better,
                       ans.headline.p_value if ans.headline is not None else np.nan,
                       "; ".join(sorted(set(map(str, ans.means["interval"])))) + " | "
                       + "; ".join(sorted({SHORT.get(str(m), str(m)) for m in ans.table["method"]})))


def answer_dict(board: pd.DataFrame, diffs: pd.DataFrame, higher: bool, p: float, inter: str) -> dict[str, Any]:
    """The atlas' view of an answer (leaderboard and best-first differences)."""
    lb = board.set_index("name")
    sign = 1.0 if higher else -1.0
    pairs = {}
    for r in diffs.itertuples():
        # delta is system_a's advantage in the better direction: sign * (mean_a - mean_b)
        pairs[(r.system_a, r.system_b)] = (sign * r.delta, *sorted((sign * r.conf_low, sign * r.conf_high)),
                                           r.p_value)
    return {"systems": {x: (lb.loc[x, "estimate"], lb.loc[x, "conf_low"], lb.loc[x, "conf_high"],
                            lb.loc[x, "rank_low"], lb.loc[x, "rank_high"], str(lb.loc[x, "letters"]))
                        for x in lb.index},
            "pairs": pairs, "headline_p": float(p) if p is not None else np.nan, "intervals": inter}


def _pair(pairs: dict, a: str, b: str) -> tuple[float, float, float, float] | None:
    if (a, b) in pairs:
        return pairs[(a, b)]
    if (b, a) in pairs:
        e, lo, hi, p = pairs[(b, a)]
        return -e, -hi, -lo, p
    return None


#: resamples of the bootstrap alternatives in the atlas (their packages' defaults are 2,000 / 1,000 and
#: lm-eval's 100,000 iterations: smaller here to keep the grid's cost sane; the page says so)
PEER_RESAMPLES, PEER_LM_EVAL_ITERS = 1000, 10_000


def peer_answers(data: pd.DataFrame, peers: Any) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Per alternative method the same shape as :func:`default_answer` (no ranks / letters), and per
    method that raised on this data set its message (its NaN rows are left out: a recorded failure)."""
    tab = peers.alternatives(data, level=LEVEL, random_state=0, n_resamples=PEER_RESAMPLES,
                             lm_eval_iters=PEER_LM_EVAL_ITERS)
    failed = {str(e["method"]): str(e["error"])[:160] for e in tab.attrs.get("errors", [])
              if not str(e["error"]).startswith("not installed")}
    out: dict[str, dict[str, Any]] = {}
    for m, blk in tab[~tab["method"].astype(str).isin(failed)].groupby("method", sort=False):
        d = out.setdefault(str(m), {"systems": {}, "pairs": {}, "headline_p": np.nan, "intervals": str(m)})
        for r in blk.itertuples():
            if r.target == "score":
                d["systems"][str(r.system)] = (r.estimate, r.conf_low, r.conf_high, np.nan, np.nan, "")
            else:
                d["pairs"][(str(r.system_a), str(r.system_b))] = (r.estimate, r.conf_low, r.conf_high,
                                                                  getattr(r, "p_value", np.nan))
    return out, failed


def load_peers() -> tuple[Any, str]:
    """``benchmarks/atlas_peers.py`` when importable, else (None, the reason)."""
    try:
        return importlib.import_module("atlas_peers"), ""
    except Exception as e:  # noqa: BLE001 - the alternatives are optional
        return None, f"peers: not available ({type(e).__name__}: {e})"


# ------------------------------------------------------------------------------ one cell
def _letters_separated(letters: dict[str, str]) -> bool:
    names = list(letters)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if not set(letters[a]) & set(letters[b]):
                return True
    return False


def _true_ranks(t: np.ndarray, higher: bool) -> np.ndarray:
    order = np.argsort(-t if higher else t, kind="stable")
    r = np.empty(len(t))
    r[order] = np.arange(1, len(t) + 1)
    return r


def run_cell(c: Cell, reps: int, random_state: int, with_peers: bool = True) -> list[dict[str, Any]]:
    """The rows of one cell (the default first, then each alternative); a task of the executor."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(c.seed(random_state))
    peers, why = load_peers() if with_peers else (None, "peers: not run")
    names = SYSTEMS[:c.systems]
    plas = c.family == "plasmode"
    mu = 0.0 if plas else _mu(c)
    truths = {} if plas else {null: truth(c, null) for null in (False, True)}
    rec: dict[str, dict[str, list]] = {}
    errors: dict[str, list[str]] = {}
    higher = c.scores != "ter"

    def note(method: str, null: bool, ans: dict[str, Any] | None, tr: np.ndarray, err: str | None) -> None:
        r = rec.setdefault(method, {k: [] for k in ("cs", "ca", "cd", "ws", "wd", "es", "ed", "pab", "ph", "rk",
                                                    "lt", "int")})
        if err is not None:
            errors.setdefault(method, []).append(err)
            return
        if not null:
            cs, ws, es = [], [], []
            for j, x in enumerate(names):
                v = ans["systems"].get(x)
                if v is None or not np.isfinite(v[1]) or not np.isfinite(v[2]):
                    continue
                cs.append(v[1] <= tr[j] <= v[2])
                ws.append((v[2] - v[1]) / 2 / 1.959964)
                es.append(v[0])
            a = ans["systems"].get(names[0])
            r["cs"].append(np.mean(cs) if cs else np.nan)
            r["ca"].append(float(a[1] <= tr[0] <= a[2]) if a is not None and np.isfinite(a[1]) else np.nan)
            r["ws"].append(ws if len(ws) == len(names) else [np.nan] * len(names))
            r["es"].append(es if len(es) == len(names) else [np.nan] * len(names))
            cd, wd, ed = [], [], []
            for i, a_ in enumerate(names):
                for j, b_ in enumerate(names[i + 1:], start=i + 1):
                    v = _pair(ans["pairs"], a_, b_)
                    th = tr[i] - tr[j]
                    if v is None or not np.isfinite(v[1]):
                        cd.append(np.nan), wd.append(np.nan), ed.append(np.nan)
                        continue
                    cd.append(float(v[1] <= th <= v[2]))
                    wd.append((v[2] - v[1]) / 2 / 1.959964)
                    ed.append(v[0])
            r["cd"].append(np.nanmean(cd) if np.isfinite(cd).any() else np.nan)
            r["wd"].append(wd)
            r["ed"].append(ed)
            if method == DEFAULT:
                tru = _true_ranks(tr, higher)
                ok = all(ans["systems"][x][3] <= tru[j] <= ans["systems"][x][4] for j, x in enumerate(names))
                r["rk"].append(float(ok))
                r["int"].append(ans["intervals"])
        v = _pair(ans["pairs"], names[0], names[1])
        r["pab"].append((null, v[3] if v is not None else np.nan))
        if method == DEFAULT:
            r["ph"].append((null, ans["headline_p"]))
            if null:
                r["lt"].append(0.0 if _letters_separated({x: ans["systems"][x][5] for x in names}) else 1.0)

    for i in range(reps):
        for null in (False, True):
            if plas:
                data, tr = plasmode(c, null, rng)
            else:
                data, tr = simulate(c, null, rng, mu), truths[null]
            try:
                note(DEFAULT, null, default_answer(data, bool(c.cluster), higher), tr, None)
            except Exception as e:  # noqa: BLE001 - a data set that raises is a recorded failure
                note(DEFAULT, null, None, tr, f"{type(e).__name__}: {str(e)[:160]}")
            if peers is not None:
                try:
                    answers, failed = peer_answers(data, peers)
                    for m, ans in answers.items():
                        note(m, null, ans, tr, None)
                    for m, err in failed.items():
                        note(m, null, None, tr, err)
                except Exception as e:  # noqa: BLE001
                    note("alternatives (all)", null, None, tr, f"{type(e).__name__}: {str(e)[:160]}")
    secs = time.perf_counter() - t0
    rows = [summarize_method(c, m, r, errors.get(m, []), reps, secs) for m, r in rec.items()]
    if peers is None:
        rows.append({"key": c.key, **asdict(c), "method": "alternatives", "reps": 0, "source": why})
    return rows


def _prop(x: list) -> tuple[float, float]:
    a = np.asarray([v for v in x if v is not None and np.isfinite(v)], dtype=float)
    if not a.size:
        return np.nan, np.nan
    m = float(a.mean())
    se = float(a.std(ddof=1) / np.sqrt(a.size)) if a.size > 1 else np.nan
    if a.size > 1 and se == 0.0:  # all 0 or all 1: the binomial SE at the observed rate is 0 too
        se = float(np.sqrt(max(m * (1 - m), 0.5 / a.size) / a.size))
    return m, se


def _width(w: list, e: list) -> float:
    W, E = np.asarray(w, dtype=float), np.asarray(e, dtype=float)
    if W.size == 0 or W.ndim != 2:
        return np.nan
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sd = np.nanstd(E, axis=0, ddof=1)
        rel = np.nanmean(W, axis=0) / sd
    rel = rel[np.isfinite(rel)]
    return float(rel.mean()) if rel.size else np.nan


def summarize_method(c: Cell, m: str, r: dict[str, list], errs: list[str], reps: int, secs: float) -> dict[str, Any]:
    cs, cs_se = _prop(r["cs"])
    ca, ca_se = _prop(r["ca"])
    cd, cd_se = _prop(r["cd"])
    p_null = [p for nl, p in r["pab"] if nl]
    p_alt = [p for nl, p in r["pab"] if not nl]
    ti, ti_se = _prop([float(p < 0.05) if np.isfinite(p) else np.nan for p in p_null])
    pw, _ = _prop([float(p < 0.05) if np.isfinite(p) else np.nan for p in p_alt])
    hti, _ = _prop([float(p < 0.05) if np.isfinite(p) else np.nan for nl, p in r["ph"] if nl])
    hpw, _ = _prop([float(p < 0.05) if np.isfinite(p) else np.nan for nl, p in r["ph"] if not nl])
    rk, rk_se = _prop(r["rk"])
    lt, _ = _prop(r["lt"])
    fams = sorted({x for s in r["int"] for x in [s]})
    return {"key": c.key, **asdict(c), "method": m, "reps": reps, "n_ok": len(r["cs"]), "errors": len(errs),
            "error_text": errs[0] if errs else "", "cov_score": cs, "cov_score_se": cs_se, "cov_score_a": ca,
            "cov_score_a_se": ca_se, "cov_diff": cd, "cov_diff_se": cd_se,
            "width_score": _width(r["ws"], r["es"]), "width_diff": _width(r["wd"], r["ed"]),
            "type_i": ti, "type_i_se": ti_se, "power": pw, "headline_type_i": hti, "headline_power": hpw,
            "rank_cov": rk, "rank_cov_se": rk_se, "letters_cov": lt, "intervals": " / ".join(fams)[:300],
            "source": "simulated here" if c.family != "plasmode" else "plasmode (bundled data)",
            "seconds": round(secs, 2)}


# ------------------------------------------------------------------------------ the runs rule, vectorized
RUNS_RULE_CSV = RESULTS / "coverage_atlas_runs_rule.csv"


def runs_rule_before(vq: Any, ms_run: Any, ms_res: Any, df_run: float, df_res: float, k: float,
                     n: int) -> tuple[np.ndarray, np.ndarray]:
    """The run rule before issue 39's change (:func:`mixedeval.workflows._paired.balanced_run_se` with
    the preliminary test at 0.25 and 0.45 of a negative estimate at every df_run), for the table."""
    from scipy import stats

    vq, ms_run, ms_res = (np.asarray(a, dtype=float) for a in (vq, ms_run, ms_res))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_run = np.where(ms_res > 0, stats.f.sf(ms_run / ms_res, df_run, df_res), np.where(ms_run > 0, 0.0, np.nan))
        kept = (p_run < 0.25) & (ms_run > ms_res)
        shrink = np.where(~kept & (ms_run < ms_res), 0.45 * k * (ms_run - ms_res), 0.0)
        v = np.where(kept, vq + k * (ms_run - ms_res), np.maximum(vq + shrink, 0.25 * vq))
        den = np.where(kept, vq**2 / (n - 1) + (k * ms_run) ** 2 / df_run + (k * ms_res) ** 2 / df_res,
                       v**2 / (n - 1))
        return v, np.where(den > 0, v**2 / den, n - 1.0)


def simulate_runs_binary(S: int, R: int, n: int, sd_run: float, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``reps`` data sets of a runs cell at once (the data model of :func:`simulate`: 0/1 scores,
    one epoch, system a at 0.5, the others 0.5 logits apart), shape (reps, S, R, n)."""
    beta = -DELTA * np.arange(S)
    eta = (beta[None, :, None, None] + rng.normal(0, SD_Q, (reps, 1, 1, n)) + rng.normal(0, SD_INT, (reps, S, 1, n))
           + rng.normal(0, sd_run, (reps, S, R, 1)))
    return (rng.random(eta.shape) < expit(eta)).astype(float)


def runs_rule_table(reps: int = 20000, random_state: int = 20261128,
                    designs: tuple[tuple[int, int], ...] = ((2, 2), (3, 2), (2, 3), (3, 3)),
                    ns: tuple[int, ...] = (30, 100),
                    sds: tuple[float, ...] = (0.0, 0.15, 0.3, 0.45, 0.6, 1.0)) -> pd.DataFrame:
    """The difference a - b of the runs cells on ``reps`` data sets per row at once: coverage and mean /
    median half-width over 1.96 times the true SD of the estimate, for the rule now
    (:func:`~mixedeval.workflows._paired.balanced_run_se`, checked against ``me.summarize``'s answer in
    tests/test_coverage_atlas.py), the rule before (:func:`runs_rule_before`) and the t interval that
    ignores the runs (what evalstats' ``auto`` and Inspect's ``stderr()`` give on run-averaged
    scores). Pooled ANOVA over the S systems as in :mod:`mixedeval.workflows._paired`."""
    from scipy import stats

    from mixedeval.workflows._paired import balanced_run_se

    rows = []
    for S, R in designs:
        for n in ns:
            for sd in sds:
                rng = np.random.default_rng(np.random.SeedSequence([random_state, S, R, n, int(round(sd * 100))]))
                y = simulate_runs_binary(S, R, n, sd, reps, rng)
                c = Cell("runs", "binary", 0.5, n, systems=S, runs=R, sd_run=sd)
                tr = truth(c, False)
                d = y[:, 0].mean(axis=1) - y[:, 1].mean(axis=1)
                dh, vq = d.mean(axis=1), d.var(axis=1, ddof=1) / n
                col = y.mean(axis=3)
                resid = y - y.mean(axis=2, keepdims=True) - col[..., None] + y.mean(axis=(2, 3), keepdims=True)
                df_run, df_res = S * (R - 1), S * (n - 1) * (R - 1)
                ms_run = (n * ((col - col.mean(axis=2, keepdims=True)) ** 2).sum(axis=2)).sum(axis=1) / df_run
                ms_res = (resid**2).sum(axis=(1, 2, 3)) / df_res
                k = 2.0 / R / n
                sd_true = dh.std(ddof=1)
                for rule, (v, df) in (("now", balanced_run_se(vq, ms_run, ms_res, df_run, df_res, k, n)),
                                      ("before", runs_rule_before(vq, ms_run, ms_res, df_run, df_res, k, n)),
                                      ("t, runs ignored", (vq, np.full(reps, n - 1.0)))):
                    h = stats.t.ppf(0.5 + LEVEL / 2, df) * np.sqrt(v)
                    cov = float(np.mean(np.abs(dh - (tr[0] - tr[1])) <= h))
                    rows.append({"systems": S, "runs": R, "n": n, "sd_run": sd, "rule": rule, "reps": reps,
                                 "coverage": cov, "coverage_se": float(np.sqrt(cov * (1 - cov) / reps)),
                                 "width_mean": float(np.mean(h) / 1.959964 / sd_true),
                                 "width_median": float(np.median(h) / 1.959964 / sd_true)})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ exact coverage, 0/1 scores
EXACT_CSV = RESULTS / "coverage_atlas_exact.csv"


def pair_probabilities(c: Cell) -> np.ndarray:
    """(p11, p10, p01, p00) of one question's 0/1 scores of systems a and b in a 'scores' cell of
    two systems: ``P(a = 1 | q) = E_u expit(mu + beta_a + q + u)`` (u ~ N(0, SD_INT^2)), the two
    independent given the question effect q ~ N(0, SD_Q^2), integrated by Gauss-Hermite
    quadrature. Questions are i.i.d., so n questions give a multinomial (n; these) table."""
    mu, (ba, bb) = _mu(c), effects(c, False)[:2]
    w = _GH_W / np.sqrt(2 * np.pi)
    q = SD_Q * _GH_X

    def g(b: float) -> np.ndarray:
        return (w[None, :] * expit(mu + b + q[:, None] + SD_INT * _GH_X[None, :])).sum(axis=1)

    ga, gb = g(ba), g(bb)
    p11, p10, p01 = np.sum(w * ga * gb), np.sum(w * ga * (1 - gb)), np.sum(w * (1 - ga) * gb)
    return np.array([p11, p10, p01, 1.0 - p11 - p10 - p01])


def newcombe_counts(a: Any, b: Any, c: Any, d: Any, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval of p1 - p2 (the formula of
    :func:`mixedeval.workflows._bounded.newcombe_paired`) on arrays of 2 x 2 counts at once
    (tests/test_coverage_atlas.py checks the two agree)."""
    from mixedeval._answer import z_quantile
    from mixedeval.workflows._bounded import wilson

    a, b, c, d = (np.asarray(x, dtype=float) for x in (a, b, c, d))
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    z = z_quantile(level)
    l1, u1 = wilson(p1, n, z)
    l2, u2 = wilson(p2, n, z)
    den = (a + b) * (c + d) * (a + c) * (b + d)
    det = a * d - b * c
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.sqrt(np.where(den > 0, den, 1.0))
        phi = np.where(den <= 0, 0.0, np.where(det > n / 2, (det - n / 2) / root, np.where(det < 0, det / root, 0.0)))
    delta = p1 - p2
    lo = delta - np.sqrt(np.maximum((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    hi = delta + np.sqrt(np.maximum((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return lo, hi


def exact_coverage(c: Cell) -> dict[str, float]:
    """Exact coverage (no Monte Carlo) of a two-system 'scores' cell with 0/1 scores: every table of
    counts of the n questions weighted by its multinomial probability (:func:`pair_probabilities`).
    System a's mean: ``default`` (the leaderboard's rule, :func:`mixedeval.workflows._bounded.bounded_intervals`:
    t on n - 1 df, Wilson -- modified near 0 and n -- where it reaches 0 or 1 or n min(p, 1 - p) < 5),
    ``t``, ``wilson`` and ``wilson_modified`` alone;
    the difference a - b: ``default`` (paired t; Newcombe's hybrid score interval where some system
    has n min(p, 1 - p) < 5, :func:`mixedeval.workflows._bounded.use_newcombe`), ``paired t`` and
    ``newcombe`` alone; and each one's mean half-width / 1.96 over the true SD of the estimate."""
    from scipy import stats

    from mixedeval.workflows._bounded import MIN_EXPECTED, bounded_intervals, modified_wilson, wilson

    n = c.n
    P = pair_probabilities(c)
    pa, pb = P[0] + P[1], P[0] + P[2]
    out: dict[str, float] = {"p_a": pa, "p_b": pb}
    # system a's mean: k ~ Binomial(n, pa)
    k = np.arange(n + 1)
    w = stats.binom.pmf(k, n, pa)
    est = k / n
    se = np.sqrt(est * (1 - est) / (n - 1))
    sd_true = np.sqrt(pa * (1 - pa) / n)
    q = stats.t.ppf(0.5 + LEVEL / 2, n - 1)
    lo_d, hi_d, _ = bounded_intervals(est, se, np.full(n + 1, n - 1.0), np.full(n + 1, float(n)), LEVEL,
                                      np.ones(n + 1, dtype=bool))
    z = stats.norm.ppf(0.5 + LEVEL / 2)
    for name, (lo, hi) in (("default", (lo_d, hi_d)), ("t", (est - q * se, est + q * se)),
                           ("wilson", wilson(est, float(n), z)), ("wilson_modified", modified_wilson(est, n, LEVEL)[:2])):
        out[f"score_{name}"] = float(np.sum(w * ((lo <= pa) & (pa <= hi))))
        out[f"score_{name}_width"] = float(np.sum(w * (hi - lo)) / 2 / 1.959964 / sd_true)
    # the difference: every (a, b, c, d) with a + b + c + d = n
    A, B, C = (x.ravel() for x in np.meshgrid(k, k, k, indexing="ij"))
    keep = A + B + C <= n
    A, B, C = A[keep], B[keep], C[keep]
    D = n - A - B - C
    logw = (stats.multinomial.logpmf(np.column_stack([A, B, C, D]), n, P) if n <= 60 else
            _log_multinomial(A, B, C, D, P))
    wt = np.exp(logw)
    th = pa - pb
    dm = (B - C) / n
    var = np.maximum((B + C - n * dm**2) / (n - 1), 0.0)
    sed = np.sqrt(var / n)
    t_lo, t_hi = dm - q * sed, dm + q * sed
    n_lo, n_hi = newcombe_counts(A, B, C, D)
    p1, p2 = (A + B) / n, (A + C) / n
    near = np.minimum(n * np.minimum(p1, 1 - p1), n * np.minimum(p2, 1 - p2)) < MIN_EXPECTED
    d_lo, d_hi = np.where(near, n_lo, t_lo), np.where(near, n_hi, t_hi)
    sd_d = np.sqrt((P[1] + P[2] - th**2) / n)
    for name, (lo, hi) in (("default", (d_lo, d_hi)), ("paired_t", (t_lo, t_hi)), ("newcombe", (n_lo, n_hi))):
        out[f"diff_{name}"] = float(np.sum(wt * ((lo <= th) & (th <= hi))))
        out[f"diff_{name}_width"] = float(np.sum(wt * (hi - lo)) / 2 / 1.959964 / sd_d)
    out["total_probability"] = float(wt.sum())
    return out


def _log_multinomial(A: np.ndarray, B: np.ndarray, C: np.ndarray, D: np.ndarray, P: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln, xlogy

    n = A + B + C + D
    return (gammaln(n + 1) - gammaln(A + 1) - gammaln(B + 1) - gammaln(C + 1) - gammaln(D + 1)
            + xlogy(A, P[0]) + xlogy(B, P[1]) + xlogy(C, P[2]) + xlogy(D, P[3]))


def exact_table(ns: tuple[int, ...] = (10, 20, 30, 50, 100), ps: tuple[float, ...] = (0.02, 0.98)) -> pd.DataFrame:
    """:func:`exact_coverage` of the binary 'scores' cells near 0 and 1."""
    return pd.DataFrame([{"p": p, "n": n, **exact_coverage(Cell("scores", "binary", p, n))} for p in ps for n in ns])


# ------------------------------------------------------------------------------ recorded families
#: figures of the families with their own calibration benchmarks (their runs, their source named)
RECORDED = [
    (Cell("bradley-terry", "pairwise", np.nan, 0, systems=4), "mixedeval default",
     {"cov_score": 0.941}, "benchmarks/calibration_bradley_terry.py (prompt and voter effects; issue 39's record)"),
    (Cell("judge-corrected", "judge", np.nan, 0), "mixedeval default",
     {"cov_score": 0.95}, "benchmarks/calibration_judges.py (few labels, biased judge, clusters: 0.94-0.96; "
                          "issue 39's record, midpoint)"),
    (Cell("irt-subsets", "irt", np.nan, 100), "mixedeval default",
     {"cov_score": 0.945}, "benchmarks/calibration_irt_subsets.py (100 anchors of 2,000: 0.93-0.96; issue 39's "
                           "record, midpoint)"),
]


def recorded_rows() -> list[dict[str, Any]]:
    out = []
    for c, m, vals, src in RECORDED:
        out.append({"key": c.key, **asdict(c), "method": m, "reps": np.nan, **vals, "source": src})
    return out


# ------------------------------------------------------------------------------ driver
def read_csv(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    return pd.read_csv(path, keep_default_na=True)


def append(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows).reindex(columns=COLUMNS)
    df.to_csv(path, mode="a", header=not path.exists(), index=False, float_format="%.6g")


def run(cells: list[Cell], reps: int, path: Path, executor: Any = None, random_state: int = 20261128,
        batch: int = 4, with_peers: bool = True, progress: bool = True) -> pd.DataFrame:
    """Run the cells not yet in ``path`` (resumable), appending each batch's rows."""
    from mixedeval._executor import resolve_executor

    done = set(read_csv(path)["key"].astype(str))
    todo = [c for c in cells if c.key not in done]
    runner = resolve_executor(executor)
    for s in range(0, len(todo), batch):
        part = todo[s:s + batch]
        res = runner.map(run_cell, [(c, reps, random_state, with_peers) for c in part], progress=False,
                         desc="atlas")
        append(path, [row for rows in res for row in rows])
        if progress:
            print(f"  {min(s + batch, len(todo))}/{len(todo)} cells", flush=True)
    if not (read_csv(path)["family"].astype(str) == "bradley-terry").any():
        append(path, recorded_rows())
    return read_csv(path)


# ------------------------------------------------------------------------------ the docs page
PAGE_COLUMNS = ["scores", "p", "n", "systems", "cluster", "epochs", "runs", "sd_run", "method", "reps", "cov_score",
                "cov_score_a", "cov_diff", "width_score", "width_diff", "type_i", "power", "rank_cov",
                "letters_cov", "errors"]
FAMILY_TEXT = {
    "scores": "Two systems, i.i.d. questions, one epoch, one run: each kind of score and accuracy.",
    "systems": "More systems (binary scores, accuracy 0.5 for system a): leaderboards, rank intervals, letters.",
    "clusters": "Clustered questions (cluster and system x cluster effects), 2 epochs, `cluster=` given.",
    "epochs": "Several epochs per question (averaged within the question).",
    "runs": "Several runs per system, with and without run effects (run SD on the logit scale). Two runs of two "
            "systems, 100 questions, run SD 0.3: the high-rep row ran 1,000 data sets (its first 200 had covered "
            "85.5%; all 1,000: 92.5%, within the Monte-Carlo error of 93%; the runs-rule table's 20,000: 93.2%). "
            "Two run df leave any rule at the edge of the band with two systems: 92.2-93.0% at run SD 0.45-1.0 on "
            "20,000 data sets (the runs-rule table), the one design with >= 30 questions where the default stays "
            "just below 93% -- no rule deciding from the data reaches it (the module docstring of "
            "mixedeval/workflows/_paired.py); three runs or more are the remedy.",
    "plasmode": "Questions resampled from bundled real data; the full data's means are the truth. On the Kreutzer "
                "TER cells the alternatives raised on every data set (atlas_peers' `DataError: data is not complete: "
                "every system must answer every question in every run`; row `alternatives (all)`): only the default "
                "is shown there (not fixed yet).",
    "bradley-terry": "Recorded from its own benchmark (source column).",
    "judge-corrected": "Recorded from its own benchmark (source column).",
    "irt-subsets": "Recorded from its own benchmark (source column).",
}


def _fmt(v: Any, pct: bool = True, se: Any = None) -> str:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return ""
    if not np.isfinite(v):
        return ""
    s = f"{100 * v:.1f}%" if pct else f"{v:.2f}"
    try:
        if se is not None and np.isfinite(float(se)):
            s += f" ({100 * float(se):.1f})"
    except (TypeError, ValueError):
        pass
    return s


def below(row: Any) -> bool:
    """A row covering less than 93% (scores, system a's score or differences)."""
    vals = [row.get(k) for k in ("cov_score", "cov_score_a", "cov_diff")]
    return any(isinstance(v, (int, float)) and np.isfinite(v) and v < 0.93 for v in vals)


def off_band(r: dict) -> list[str]:
    """The coverages of a default row (scores, differences) outside 93-97% beyond their Monte-Carlo
    error: exact one-sided binomial tests at 1% on ``n_ok`` data sets; near 0 or 1 (scores in [0, 1],
    n min(p, 1 - p) < 5) only the lower limit (discrete or deliberately conservative there)."""
    from scipy import stats

    out = []
    if pd.isna(r.get("reps")) or not r.get("n_ok"):
        return out
    n = int(r["n_ok"])
    lower_only = (r["scores"] in ("binary", "bounded", "likert") and np.isfinite(r["p"])
                  and r["n"] * min(r["p"], 1 - r["p"]) < 5)
    for col in ("cov_score", "cov_diff"):
        v = float(r[col])
        if not np.isfinite(v):
            continue
        k = int(round(v * n))
        if stats.binom.cdf(k, n, 0.93) < 0.01 or (not lower_only and stats.binom.sf(k - 1, n, 0.97) < 0.01):
            out.append(f"{col} {_fmt(v)}")
    return out


#: the alternatives the page's comparison tables show beside the default (the ones users reach for first)
PEERS_SHOWN = ["t", "wald", "wilson", "paired_bootstrap", "newcombe_midp", "inspect_stderr", "inspect_ci_t",
               "lm_eval_bootstrap", "evalstats_auto"]


def clearly_below(v: Any, n: Any) -> bool:
    """A coverage below 93% beyond its Monte-Carlo error (exact one-sided binomial test at 1% on n data sets)."""
    from scipy import stats

    try:
        v, n = float(v), int(n)
    except (TypeError, ValueError):
        return False
    return bool(np.isfinite(v) and n > 0 and stats.binom.cdf(int(round(v * n)), n, 0.93) < 0.01)


def _group(r: dict) -> str:
    if r["family"] == "scores":
        return f"scores: {r['scores']} at {r['p']:g}"
    if r["family"] == "plasmode":
        return f"plasmode: {r['scores']}"
    return str(r["family"])


def _med(x: pd.Series, pct: bool = True) -> str:
    x = pd.to_numeric(x, errors="coerce").dropna()
    if not len(x):
        return ""
    return _fmt(x.median(), pct) + (f" ({_fmt(x.min(), pct)})" if pct else "")


def comparison_table(tab: pd.DataFrame) -> str:
    """Per group of designs (family; scores by kind and accuracy) the default beside the alternatives of
    :data:`PEERS_SHOWN`: median (lowest) coverage of the scores' and differences' intervals, median
    relative widths, and on how many designs the method covers below 93% beyond its Monte-Carlo error."""
    sim = tab[tab["reps"].notna()].copy()
    sim = sim[sim["key"].isin(set(sim.loc[sim["method"] != DEFAULT, "key"]))]
    if not len(sim):
        return "(no design run with the alternatives)"
    sim["group"] = [_group(r) for r in sim.to_dict("records")]
    head = ["designs", "n", "method", "cover score: median (lowest)", "cover diff: median (lowest)",
            "width score", "width diff", "below 93%"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for g, blk in sim.groupby("group", sort=True):
        ns = sorted(blk["n"].astype(int).unique())
        for m in [DEFAULT, HIGH, *PEERS_SHOWN]:
            b = blk[blk["method"] == m]
            if not len(b):
                continue
            low = sum(clearly_below(r["cov_score"], r["n_ok"]) or clearly_below(r["cov_diff"], r["n_ok"])
                      for r in b.to_dict("records"))
            lines.append("| " + " | ".join([
                g, f"{ns[0]}-{ns[-1]}" if len(ns) > 1 else str(ns[0]),
                f"**{m}**" if m in (DEFAULT, HIGH) else m, _med(b["cov_score"]), _med(b["cov_diff"]),
                _med(b["width_score"], False), _med(b["width_diff"], False), f"{low} of {len(b)}"]) + " |")
    return "\n".join(lines)


def who_is_calibrated(tab: pd.DataFrame) -> tuple[list[str], list[str], list[str]]:
    """Designs (and targets) where an alternative covers 93% or more and the default covers below 93%
    beyond its Monte-Carlo error; the per-alternative counts of the reverse; and the designs where the
    default is more than 10% wider than an alternative covering 93-97% (issue 39, item 4)."""
    sim = tab[tab["reps"].notna()]
    peer_ok, reverse, wider = [], {}, []
    for k, blk in sim.groupby("key", sort=False):
        d = blk[blk["method"] == HIGH]
        d = d if len(d) else blk[blk["method"] == DEFAULT]
        blk = blk[~blk["method"].isin([DEFAULT, HIGH]) | blk.index.isin(d.index)]
        if not len(d) or len(blk) < 2:
            continue
        d = d.iloc[0]
        for col, what in (("cov_score", "scores"), ("cov_diff", "differences")):
            dv = d[col]
            if not np.isfinite(dv):
                continue
            others = blk[~blk["method"].isin([DEFAULT, HIGH]) & blk[col].notna()]
            if clearly_below(dv, d["n_ok"]):
                good = others[(others[col] >= 0.93)]
                if len(good):
                    peer_ok.append(f"{k} ({what}): default {_fmt(dv)}; " + ", ".join(
                        f"{m} {_fmt(v)}" for m, v in zip(good["method"], good[col])))
            elif dv >= 0.93:
                for r in others.to_dict("records"):
                    if clearly_below(r[col], r["n_ok"]):
                        reverse.setdefault(r["method"], []).append(f"{k} ({what})")
            wcol = col.replace("cov", "width")
            cal = others[others[col].between(0.93, 0.97) & (others[wcol] * 1.1 < d[wcol])]
            if len(cal) and np.isfinite(d[wcol]):
                best = cal.loc[cal[wcol].idxmin()]
                wider.append(f"{k} ({what}): default width {_fmt(d[wcol], False)} at {_fmt(dv)}; "
                             f"{best['method']} {_fmt(best[wcol], False)} at {_fmt(best[col])}")
    rev = [f"* {m}: {len(v)} (e.g. {v[0]})" for m, v in sorted(reverse.items(), key=lambda kv: -len(kv[1]))]
    return peer_ok, rev, wider


def family_table(blk: pd.DataFrame) -> str:
    head = ["scores", "p", "n", "S", "cl", "E", "R", "run SD", "method", "reps", "cover score (MC SE)",
            "cover a", "cover diff (MC SE)", "width score", "width diff", "type I", "power", "ranks", "letters",
            "errors", ""]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    n_below = blk.assign(b=[below(r) for r in blk.to_dict("records")]).groupby("key")["b"].sum()
    for r in blk.to_dict("records"):
        mark = "⚠ below 93%" if below(r) else ""
        if r["method"] == HIGH:
            off = off_band(r)
            mark = ("⚠ outside 93-97% beyond MC error: " + ", ".join(off)) if off else ""
        if r["method"] == DEFAULT and n_below.get(r["key"], 0):
            mark = (mark + "; " if mark else "") + f"design: {int(n_below[r['key']])} method(s) below 93%"
        cells = [str(r["scores"]), "" if pd.isna(r["p"]) else f"{r['p']:g}", str(int(r["n"])), str(int(r["systems"])),
                 str(int(r["cluster"])), str(int(r["epochs"])), str(int(r["runs"])), f"{r['sd_run']:g}",
                 ("**" + r["method"] + "**") if r["method"] in (DEFAULT, HIGH) else str(r["method"]),
                 "" if pd.isna(r["reps"]) else str(int(r["reps"])), _fmt(r["cov_score"], se=r.get("cov_score_se")),
                 _fmt(r["cov_score_a"]), _fmt(r["cov_diff"], se=r.get("cov_diff_se")),
                 _fmt(r["width_score"], False), _fmt(r["width_diff"], False), _fmt(r["type_i"]), _fmt(r["power"]),
                 _fmt(r["rank_cov"]), _fmt(r["letters_cov"]),
                 "" if pd.isna(r["errors"]) else str(int(r["errors"])), mark]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _plot_blocks(tab: pd.DataFrame) -> list[tuple[tuple[str, float], pd.DataFrame, str]]:
    sc = tab[(tab["family"] == "scores") & tab["cov_diff"].notna()]
    return [((kind, p), blk, f"calibration_{kind}_{str(p).replace('.', '')}.png")
            for (kind, p), blk in sc.groupby(["scores", "p"], sort=True) if blk["n"].nunique() >= 2]


def image_names(tab: pd.DataFrame) -> list[str]:
    """The PNG files :func:`plots` writes for ``tab``."""
    return [name for _, _, name in _plot_blocks(tab)]


def plots(tab: pd.DataFrame, img: Path) -> list[str]:
    """coverage and relative width against the number of questions, one PNG per score kind of the
    'scores' family (each method a line; the default bold)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img.mkdir(parents=True, exist_ok=True)
    out = []
    for (kind, p), blk, name in _plot_blocks(tab):
        fig, ax = plt.subplots(1, 2, figsize=(9, 3.4))
        for m, g in blk.groupby("method", sort=False):
            g = g.sort_values("n")
            kw = ({"lw": 2.5, "color": "k", "zorder": 5} if m == DEFAULT else
                  {"lw": 2.5, "color": "tab:red", "zorder": 6} if m == HIGH else {"lw": 1, "alpha": 0.7})
            ax[0].plot(g["n"], g["cov_diff"], marker="o", label=m, **kw)
            ax[1].plot(g["n"], g["width_diff"], marker="o", label=m, **kw)
        ax[0].axhspan(0.93, 0.97, color="g", alpha=0.1)
        ax[0].set_ylabel("coverage of a - b (95%)")
        ax[1].axhline(1.0, color="g", lw=0.8)
        ax[1].set_ylabel("half-width / 1.96 / true SD")
        for a in ax:
            a.set_xscale("log")
            a.set_xlabel("questions")
        ax[1].legend(fontsize=7, loc="best")
        fig.suptitle(f"{kind} scores, accuracy {p:g}")
        fig.tight_layout()
        fig.savefig(img / name, dpi=80)
        plt.close(fig)
        out.append(name)
    return out


def current_defaults(tab: pd.DataFrame) -> pd.DataFrame:
    """Per design the default's row of the rules now: the high-rep run's (:data:`HIGH`) where it ran
    the design, else the run with the alternatives'."""
    h = tab[tab["method"] == HIGH]
    d = tab[(tab["method"] == DEFAULT) & ~tab["key"].isin(set(h["key"]))]
    return pd.concat([h, d], ignore_index=True)


def _design(r: dict) -> str:
    return (f"{r['family']}: {r['scores']} p={r['p']:g} n={int(r['n'])} S={int(r['systems'])} cl={int(r['cluster'])} "
            f"E={int(r['epochs'])} R={int(r['runs'])} run SD {r['sd_run']:g}")


def _opt_csv(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path) if path.exists() else None


def exact_section(ex: pd.DataFrame | None) -> list[str]:
    if ex is None or not len(ex):
        return []
    head = ["p", "n", "mean: default", "t", "Wilson", "Wilson, modified", "width default", "a - b: default",
            "paired t", "Newcombe", "width default"]
    lines = ["## Exact coverage of 0/1 scores near 0 and 1", "",
             "Near 0 and 1 the number of correct answers is a binomial (a multinomial for a pair) count, so the "
             "coverage of any interval at one true accuracy is a sum over the possible counts -- computed here "
             "exactly, without Monte Carlo (`python benchmarks/coverage_atlas.py --exact`, "
             "`benchmarks/results/coverage_atlas_exact.csv`; the atlas' data model: questions i.i.d., so each "
             "question's pair of scores is one draw of the 2 x 2 cell probabilities). Coverage is a step "
             "function of the true accuracy there: at 0.02 with 30 questions an interval either covers the "
             "truth for 2 correct answers of 30 or it does not, and nothing lands exactly on 95%. The default's "
             "98-100% for differences and 98-99.9% for means at 30-100 questions is the attainable coverage of "
             "intervals that do not fall below 93% at nearby accuracies, not a rule to tune; the plain Wilson "
             "interval dips to 92.2% at 50 questions (a count of 3 has its lower limit just above 0.02), the "
             "reason for the modified limits (below).", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in ex.to_dict("records"):
        lines.append("| " + " | ".join([f"{r['p']:g}", str(int(r["n"])), _fmt(r["score_default"]), _fmt(r["score_t"]),
                                        _fmt(r["score_wilson"]), _fmt(r["score_wilson_modified"]),
                                        _fmt(r["score_default_width"], False), _fmt(r["diff_default"]),
                                        _fmt(r["diff_paired_t"]), _fmt(r["diff_newcombe"]),
                                        _fmt(r["diff_default_width"], False)]) + " |")
    return lines + [""]


def runs_section(rr: pd.DataFrame | None) -> list[str]:
    if rr is None or not len(rr):
        return []
    lines = ["## Several runs: the run rule on 20,000 data sets per design", "",
             "The difference a - b of the `runs` cells (0/1 scores, one epoch, a at 0.5, b 0.5 logits lower), "
             "vectorized (`python benchmarks/coverage_atlas.py --runs-rule`, "
             "`benchmarks/results/coverage_atlas_runs_rule.csv`; Monte-Carlo SE of a coverage about 0.15 points): "
             "the rule now, the rule before this change (preliminary test at 0.25 with 0.45 of a negative "
             "estimate at every number of runs) and the t interval that ignores the runs (what evalstats' "
             "`auto` and Inspect's `stderr()` give on run-averaged scores). Width: half-width / 1.96 over the "
             "true SD, mean (median).", "",
             "| S x R | n | run SD | now | before | runs ignored |", "|---|---|---|---|---|---|"]
    for (S, R, n, sd), blk in rr.groupby(["systems", "runs", "n", "sd_run"], sort=True):
        b = blk.set_index("rule")
        cells = [f"{_fmt(b.loc[m, 'coverage'])}, {_fmt(b.loc[m, 'width_mean'], False)} "
                 f"({_fmt(b.loc[m, 'width_median'], False)})" for m in ("now", "before", "t, runs ignored")]
        lines.append(f"| {int(S)} x {int(R)} | {int(n)} | {sd:g} | " + " | ".join(cells) + " |")
    return lines + [""]


#: the continuous-scores-near-a-bound comparison of ``benchmarks/bounded_near_bounds.py``
BOUNDED_CSV = RESULTS / "bounded_near_bounds.csv"


def bounded_section(bt: pd.DataFrame | None) -> list[str]:
    """Why continuous [0, 1] means near a bound keep the Wilson interval: per method, the lowest and
    median coverage and the median width over the rows in the rule's zone, on the atlas' data model and
    on all data models of ``bounded_near_bounds.py``."""
    if bt is None or not len(bt):
        return []
    z = bt[bt["in_zone"] >= 0.5]
    atlas = z[(z["model"] == "beta") & (z["parameter"] == 8.0) & (z["logit_sd"].round(3) == 1.118)]
    lines = ["## Continuous scores near 0 or 1: why the Wilson interval stays", "",
             "One system's mean of continuous [0, 1] scores where the interval rule's zone applies (accuracy "
             "0.02 / 0.05 / 0.1 / 0.98, 30 / 50 / 100 questions; `python benchmarks/bounded_near_bounds.py`, "
             f"`benchmarks/results/bounded_near_bounds.csv`, {int(bt['reps'].iloc[0]):,} data sets per row). "
             "Data models: Beta scores of precision 0.5-50 around a logit-normal question mean (SD 0.5-3) and "
             "means of 2-5 epochs of 0/1 answers; the atlas' `bounded` cells are Beta precision 8, SD 1.12. "
             "Coverage lowest / median, median width (half-width / 1.96 over the true SD), rows below 93%.", "",
             "| method | atlas' model | all models | rows below 93% |", "|---|---|---|---|"]
    for meth in dict.fromkeys(bt["method"].astype(str)):
        a, b = atlas[atlas["method"] == meth], z[z["method"] == meth]
        lines.append(f"| {meth} | {_fmt(a['coverage'].min())} / {_fmt(a['coverage'].median())}, "
                     f"{_fmt(a['width'].median(), False)} | {_fmt(b['coverage'].min())} / "
                     f"{_fmt(b['coverage'].median())}, {_fmt(b['width'].median(), False)} | "
                     f"{int((b['coverage'] < 0.93).sum())} of {len(b)} |")
    return lines + ["", "A rule that reads the data's spread cannot see skew the sample has not caught: with 30 "
                    "questions at a mean of 0.02 the few high questions that carry the variance are often "
                    "absent. Only the bound of the variance a [0, 1] score can have, p (1 - p), holds on every "
                    "model; its over-coverage on well-behaved scores is the price.", ""]


def touched(r: dict) -> bool:
    """A design whose default changed in issue 39's later rounds: several runs (two runs of 2-3
    systems: the few-df rule; three or more: the preliminary test at 0.30), Likert means near a
    bound, 0/1 or bounded means near 0 or 1 with at most 100 questions (the modified Wilson limits)."""
    if r["family"] == "runs":
        return int(r["runs"]) >= 2
    return (r["family"] == "scores" and r["scores"] in ("likert", "binary", "bounded") and r["p"] in (0.02, 0.98)
            and r["n"] <= 100)


def changed_section(tab: pd.DataFrame, before: pd.DataFrame | None) -> list[str]:
    """Before / after rows of the designs whose rule changed: after, the high-rep row; before, the
    high-rep run of the old rules where kept (``before``), else the run with the alternatives."""
    lines = []
    old = tab[tab["method"] == DEFAULT].set_index("key")
    if before is not None:
        b = before[before["method"] == DEFAULT].set_index("key")
        old = pd.concat([b, old[~old.index.isin(b.index)]])
    for r in tab[tab["method"] == HIGH].to_dict("records"):
        if not touched(r) or r["key"] not in old.index:
            continue
        o = old.loc[r["key"]]
        lines.append(f"* {_design(r)}: scores {_fmt(o['cov_score'], se=o['cov_score_se'])} -> "
                     f"{_fmt(r['cov_score'], se=r['cov_score_se'])}, width {_fmt(o['width_score'], False)} -> "
                     f"{_fmt(r['width_score'], False)}; differences {_fmt(o['cov_diff'], se=o['cov_diff_se'])} -> "
                     f"{_fmt(r['cov_diff'], se=r['cov_diff_se'])}, width {_fmt(o['width_diff'], False)} -> "
                     f"{_fmt(r['width_diff'], False)} ({int(o['reps'])} / {int(r['reps'])} data sets)")
    return lines


def page_text(tab: pd.DataFrame, images: list[str], source: str) -> str:
    d = tab[tab["method"] == DEFAULT]
    cur = current_defaults(tab)
    big = cur[cur["n"] >= 30]
    bad = big[np.array([bool(off_band(r)) for r in big.to_dict("records")], dtype=bool)]
    small = cur[cur["n"] < 30]
    small_bad = small[np.array([below(r) for r in small.to_dict("records")], dtype=bool)]
    sim = d[d["reps"].notna()]
    hi = tab[tab["method"] == HIGH]
    done, total = sim["key"].nunique(), len(grid("quick" in source))
    reps_text = "/".join(str(int(x)) for x in sorted(sim["reps"].unique())) or "no"
    hi_reps = "/".join(str(int(x)) for x in sorted(hi["reps"].dropna().unique()))
    before = _opt_csv(BEFORE_CSV) if "quick" not in source else None
    parts = ["# How well calibrated is the answer?", "",
             "<!-- generated by `python benchmarks/coverage_atlas.py --page` from "
             f"`{source}`; do not edit by hand -->", "",
             "mixedeval's default answer (what `me.summarize` and `me.compare_logs` give without options: the "
             "leaderboard's intervals of each system's mean score, the best-first paired differences, the headline "
             "p-value, the simultaneous rank intervals and letters) was run on simulated evaluations and on "
             "resamples of real ones, beside the intervals users would compute otherwise (Inspect's `stderr()` / "
             "`ci()`, lm-eval's stderrs, evalstats' `auto` and named methods, Wald, t, Wilson, McNemar, Newcombe, "
             "paired bootstrap: `benchmarks/atlas_peers.py`, each method's source in its `METHODS`), computed on "
             "the same data sets. The designs, the data model and the columns are described in "
             "`benchmarks/coverage_atlas.py`.", "",
             f"The bootstrap alternatives run with fewer resamples than their packages' defaults to keep the grid's "
             f"cost sane: {PEER_RESAMPLES:,} (paired bootstrap, evalstats' bootstrap; defaults 2,000 / 1,000; "
             f"Inspect's `ci(method='bootstrap')` keeps its 1,000) and lm-eval's bootstrap stderr "
             f"{PEER_LM_EVAL_ITERS:,} iterations (its default 100,000); their intervals are then a little noisier, "
             "which moves coverage by well under the Monte-Carlo error of a cell. evalstats' Wilcoxon signed-rank "
             "p-values (its p for non-binary pairs) ran uncapped: at 10-20 questions they took 0.1 s per data set "
             "here.", "",
             "Columns: coverage of the 95% intervals of the systems' mean scores (averaged over systems; *cover a*: "
             "system a, the one at accuracy *p*) and of the pairwise differences, with Monte-Carlo SEs in "
             "parentheses (percentage points); *width*: mean half-width / 1.96 over the true SD of the estimate "
             "(1 = an interval with the true SE); *type I* / *power*: rejections at 5% of a - b under the null / "
             "the alternative; *ranks*: simultaneous coverage of the true ranks (alternative); *letters*: no two "
             "systems separated under the null; *errors*: data sets (of 2 x reps) that raised instead of "
             "answering. S systems, cl questions per cluster (0: i.i.d.), E epochs, R runs. Rows covering less "
             "than 93% are marked ⚠.", "",
             f"This page reads `{source}`: {done} of the {total} cells of its grid "
             f"({'--quick' if 'quick' in source else 'the full grid'}; families run: "
             f"{', '.join(dict.fromkeys(sim['family'].astype(str))) or 'none'}), {reps_text} simulated evaluations "
             f"per cell under the alternative and as many under the null (Monte-Carlo SE of a 95% coverage: about "
             f"{_fmt(np.sqrt(0.95 * 0.05 / max(sim['reps'].min(), 1)) if len(sim) else np.nan)}); "
             "`python benchmarks/coverage_atlas.py` resumes the grid where the CSV stops. "
             "`benchmarks/results/coverage_atlas_no_peers.csv` keeps the earlier run of the whole full grid "
             "(134 cells x 60 reps) with the default answer only."]
    if len(hi):
        parts += ["", f"**{HIGH}** rows: the default answer alone with the rules as they are now, "
                  f"{hi_reps} data sets per cell (Monte-Carlo SE of a 95% coverage about "
                  f"{_fmt(np.sqrt(0.95 * 0.05 / hi['reps'].max()))}-{_fmt(np.sqrt(0.95 * 0.05 / hi['reps'].min()))}), "
                  f"`benchmarks/results/coverage_atlas_defaults.csv`, {hi['key'].nunique()} designs with at least 30 "
                  "questions: every simulated and plasmode design of the grid with >= 30 questions (`python "
                  "benchmarks/coverage_atlas.py --no-peers --reps 400 --min-n 30 --executor 2 --csv "
                  "benchmarks/results/coverage_atlas_defaults.csv`, resumable; the filters `--families`, `--scores`, "
                  "`--p`, `--runs`, `--max-n` pick the cells; measured 2026-11-29 on 2 cores with other jobs: about "
                  "40-200 s per cell, the 112 cells about 2 hours; the early two-run cells ran 200 data sets, one of "
                  "them 1,000). The 'mixedeval default' rows beside them are from the run with the alternatives "
                  "(40 data sets) and predate the changes below on the designs they touch (Likert means near a "
                  "bound, runs, 0/1 means with 1-3 answers from 0 or n)."]
    parts += ["", "## The rule of each default", "",
              "* differences: the paired question-level t (`paired t`); for 0/1 scores (one epoch, one run, no "
              "clusters) where some system of the pair has n min(p, 1 - p) < 5, Newcombe's hybrid score interval "
              "and the exact McNemar test (`Newcombe hybrid score, exact McNemar`); with `cluster=` the "
              "cluster-robust SE on clusters - 1 df (`paired t, cluster-robust`); with several runs the run "
              "variance by Bancroft's sometimes-pool rule (`paired t, run variance`; with at most 3 run df -- two "
              "runs of 2 or 3 systems -- the preliminary test at 0.5 and no share of a negative estimate, df at "
              "least 1). The `method` column of the differences names it (mixedeval/workflows/_paired.py).",
              "* a system's mean score: the t interval of the paired analysis, except where every score lies in "
              "[0, 1] -- or every score is an integer (a rating scale), on the observed range of the scores -- and "
              "the t interval reaches a bound or n min(p, 1 - p) < 5 for the mean rescaled to the range "
              "(mixedeval/workflows/_bounded.py): a Wilson score interval (`Wilson`; `Wilson, modified` -- Brown, "
              "Cai & DasGupta's Poisson limits -- for counts 1-3 from 0 or n; `Wilson, effective n` with clusters "
              "or runs; ` (observed range)` appended on a rating scale). The `interval` column of the means names "
              "it.", "",
              "## What changed (issue 39)", "",
              "* 0/1 scores near 0 or 1: the paired t interval of a difference collapses with few discordant "
              "questions (30 questions, a at 0.98 and b at 0.97: it covered 81% of 300 simulated evaluations); "
              "Newcombe's hybrid score interval with the exact McNemar test now covers 99-100% there "
              "(conservative: the binomial count is discrete; exact figures below).",
              "* means of [0, 1] scores near 0 or 1 (n min(p, 1 - p) < 5): the t interval of a skewed mean "
              "covered 83-89% (continuous scores at 0.98 / 0.02 with 30 questions; 0/1 scores at 0.98 with "
              "100 questions: 87%); the Wilson interval now covers >= 97% there (wide for continuous scores: "
              "it assumes the largest variance a [0, 1] score can have).",
              "* 0/1 means with 1-3 answers from 0 or from n: the plain Wilson interval covered 92.2% (exact) at "
              "0.02 / 0.98 with 50 questions; the modified limits of Brown, Cai & DasGupta (2001) 98.2%, about 3% "
              "wider (table below).",
              "* Likert-type integer scores piling up at a bound (the `likert` cells at 0.02 / 0.98: means 1.08 / "
              "4.92 on 1-5): the t interval of a mean covered 88-90%; the Wilson rule on the observed range of "
              "the scores now covers 97-99% (1,500 evaluations per design in the module's docstring; the "
              "high-rep rows below). mixedeval is not told a scale's bounds: the observed range is the data's "
              "evidence of them.",
              "* two runs per system (the run variance on 2-3 df): the rule covered 89.1-92.8% with run effects "
              "(2 systems x 2 runs); with the preliminary test at 0.5 and no negative share 92.6-94.8%, at a "
              "width 1.65-1.77x the true SD with i.i.d. runs (was 1.42-1.49; median 1.06-1.14). No rule that "
              "decides from the data reaches 93% at every run SD with two runs of two systems (table below); "
              "the t that ignores the runs (evalstats' `auto`, 1.03x) covers 54-76% with a run SD of 0.6. "
              "Three or more runs: see the next point.",
              "* three or more runs (the run variance on 4 or more df): the preliminary test's level is 0.30 (was "
              "0.25). At 0.25, 2 systems x 3 runs of 0/1 scores covered 92.5-93.0% at run SD 0.3-0.6 on 20,000 "
              "data sets per design (the high-rep cell 90.0%); of the levels 0.2-0.6 and negative shares 0-0.7 "
              "tried on 30 and 100 questions, 0.30 (share 0.45 kept) is the narrowest that keeps every run SD at "
              "93% or more: 93.1% lowest, i.i.d. width 1.20x the true SD (was 1.17x; the issue's target 1.15x is "
              "missed by 4% to keep the coverage), 3 x 3 93.8% / 1.13x, 2 x 5 94.4% / 1.10x, 2 x 10 94.8% / 1.06x "
              "(mixedeval/workflows/_paired.py; the runs-rule table below).",
              "* not changed, with the evidence: continuous [0, 1] scores near 0 or 1 keep the Wilson interval, "
              "which covers 100% at 2.9-3.5x the true SD on the atlas' `bounded` cells. Narrower rules calibrated "
              "there (the Wilson interval with an upper bound of the observed dispersion: 94-100% at 1.25-1.4x) "
              "cover 65-68% on skewed scores (the next section), as do the t, the logit-t (evalstats' `auto`) and "
              "the effective-n Wilson intervals; the Wilson interval covers 97.2-100% on every data model tried."]
    chg = changed_section(tab, before)
    if chg:
        parts += ["", "Before / after on the designs the changes touch (after: the high-rep rows; before: the rules "
                  "as they were, from `benchmarks/results/coverage_atlas_defaults_before.csv` where kept -- the "
                  "Likert cells at 400 data sets -- else the 40-rep run with the alternatives, so within a "
                  "Monte-Carlo error of about 3.5 points):", "", *chg]
    parts += ["", "## Summary", ""]
    if len(big):
        parts.append(f"On the {len(big)} simulated and plasmode designs with at least 30 questions, the default "
                     f"(the high-rep row where it ran: {big['method'].eq(HIGH).sum()} designs) covered "
                     f"{_fmt(big[['cov_score', 'cov_diff']].min().min())} to "
                     f"{_fmt(big[['cov_score', 'cov_diff']].max().max())} (scores and differences; single rows vary "
                     "by their Monte-Carlo error); "
                     f"{len(bad)} of them outside 93-97% beyond it (exact one-sided binomial test at 1%; near 0 or 1 "
                     "only the lower limit counts: there no interval can hit 95%, see the exact coverage below)"
                     + (":" if len(bad) else "."))
        for r in bad.to_dict("records"):
            parts.append(f"* {_design(r)} ({r['method']}, {int(r['reps'])} data sets): " + ", ".join(off_band(r)))
        parts.append("")
    clear = small[np.array([clearly_below(r["cov_score"], r["n_ok"]) or clearly_below(r["cov_diff"], r["n_ok"])
                            for r in small.to_dict("records")], dtype=bool)]
    parts += ["Below 30 questions (10 and 20; the run with the alternatives): " + (
        f"{len(small_bad)} of {len(small)} default rows cover less than 93% (marked ⚠ in the tables), "
        f"{len(clear)} of them beyond their Monte-Carlo error"
        + (" (" + "; ".join(f"{r['scores']} p={r['p']:g} n={int(r['n'])}" for r in clear.to_dict("records")) + ")"
           if len(clear) else "")
        + ". Intervals there rest on 10-20 questions: neither the t quantile nor a score interval makes up for "
        "skewed or discrete scores, and the exact coverage of 0/1 scores near 0 or 1 (below) jumps with every "
        "count. Plan for 30 questions or more." if len(small_bad) else "no default row covers less than 93%."), ""]
    errs = d[d["errors"].fillna(0) > 0]
    if len(errs):
        parts += [f"Data sets that raised: {int(errs['errors'].sum())} in {len(errs)} designs (first message in the "
                  "CSV's `error_text`).", ""]
    peer_ok, rev, wider = who_is_calibrated(tab)
    parts += ["## The default beside the alternatives", "",
              "Per group of designs the default and the alternatives users reach for first (all of them are in the "
              "family tables below): median and lowest coverage over the group's designs, median relative width "
              "(half-width / 1.96 over the true SD of the method's estimate; 1 is ideal), and on how many designs "
              "the method covers below 93% beyond its Monte-Carlo error (exact one-sided binomial test at 1%). "
              "Inspect's and lm-eval's metrics give single-system intervals only; Wald, Wilson, Newcombe give "
              "what their formula covers.", "", comparison_table(tab), "",
              "Designs where an alternative covers 93% or more and the default (the high-rep row where it ran) "
              "covers below 93% beyond its Monte-Carlo error: " + (f"{len(peer_ok)}:" if peer_ok else "none."), ""]
    parts += [f"* {x}" for x in peer_ok] + ([""] if peer_ok else [])
    parts += ["Designs x targets (scores, differences) where the default covers 93% or more and an alternative "
              "below 93% beyond its Monte-Carlo error, per alternative: " + ("" if rev else "none."), ""]
    parts += rev + ([""] if rev else [])
    parts += ["Designs x targets where the default is more than 10% wider than an alternative covering 93-97% "
              "(the narrowest such alternative named; single cells, so within Monte-Carlo error of the band): "
              + (f"{len(wider)}:" if wider else "none."), ""]
    parts += [f"* {x}" for x in wider] + ([""] if wider else [])
    if "quick" not in source:
        parts += (exact_section(_opt_csv(EXACT_CSV)) + runs_section(_opt_csv(RUNS_RULE_CSV))
                  + bounded_section(_opt_csv(BOUNDED_CSV)))
    for fam in dict.fromkeys(tab["family"].astype(str)):
        blk = tab[tab["family"] == fam].sort_values(["scores", "p", "n", "systems", "cluster", "epochs", "runs",
                                                     "sd_run"], kind="stable")
        parts += [f"## {fam}", "", FAMILY_TEXT.get(fam, ""), "", family_table(blk), ""]
        srcs = sorted(set(blk["source"].dropna().astype(str)) - {"simulated here", "plasmode (bundled data)"})
        if srcs:
            parts += ["Source: " + "; ".join(srcs), ""]
    if images:
        parts += ["## Coverage and width against the number of questions", ""]
        parts += [f"![{im}](img/{im})" for im in images] + [""]
    return "\n".join(parts)


def page_tables(csv: Path = FULL_CSV) -> tuple[pd.DataFrame, str]:
    """The page's table: the CSV's rows (without the 'alternatives' markers) and, when ``csv`` is the
    full grid, the high-rep run's default rows as method :data:`HIGH`; and the source's name."""
    src = csv if csv.exists() else QUICK_CSV
    tab = read_csv(src)
    if src == FULL_CSV and DEFAULTS_CSV.exists():
        hi = read_csv(DEFAULTS_CSV)
        hi = hi[(hi["method"] == DEFAULT) & hi["reps"].notna()].assign(method=HIGH)  # not the recorded families
        tab = pd.concat([tab, hi], ignore_index=True) if len(hi) else tab
    return tab[tab["method"].astype(str) != "alternatives"].reset_index(drop=True), str(src.relative_to(ROOT))


def write_page(csv: Path = FULL_CSV, page: Path = PAGE, img: Path = IMG) -> str:
    tab, source = page_tables(csv)
    images = plots(tab, img)
    text = page_text(tab, images, source)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    return text


def main(argv: list[str] | None = None) -> pd.DataFrame | None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the CI grid (5 cells) -> results/coverage_atlas_quick.csv")
    ap.add_argument("--reps", type=int, default=None, help="data sets per cell, each under the alternative and the "
                    "null (default 400; --quick 40)")
    ap.add_argument("--executor", default=None, help="None, an int (processes) or 'processes'")
    ap.add_argument("--csv", default=None, help="the results CSV (default: results/coverage_atlas[_quick].csv)")
    ap.add_argument("--random-state", type=int, default=20261128)
    ap.add_argument("--no-peers", action="store_true", help="the default answer only")
    ap.add_argument("--families", nargs="*", default=None, help="only these families of the grid")
    ap.add_argument("--scores", nargs="*", default=None, help="only these kinds of scores (binary, bounded, ...)")
    ap.add_argument("--min-n", type=int, default=0, help="only cells with at least this many questions")
    ap.add_argument("--max-n", type=int, default=None, help="only cells with at most this many questions")
    ap.add_argument("--p", type=float, nargs="*", default=None, help="only cells at these accuracies")
    ap.add_argument("--runs", type=int, nargs="*", default=None, help="only cells with these numbers of runs")
    ap.add_argument("--exact", action="store_true", help="exact coverage (enumeration, no Monte Carlo) of the "
                    "binary cells near 0 and 1 -> results/coverage_atlas_exact.csv")
    ap.add_argument("--runs-rule", action="store_true", help="the runs rule now / before / runs ignored, "
                    "vectorized (--reps data sets per row, default 20,000) -> results/coverage_atlas_runs_rule.csv")
    ap.add_argument("--page", action="store_true", help="write docs/concepts/calibration.md from the CSV")
    a = ap.parse_args(argv)
    if a.page:
        write_page()
        print(f"wrote {PAGE.relative_to(ROOT)}")
        return None
    if a.exact:
        tab = exact_table()
        tab.to_csv(EXACT_CSV, index=False, float_format="%.6g")
        print(tab.round(4).to_string(index=False))
        return tab
    if a.runs_rule:
        tab = runs_rule_table(a.reps or 20000, a.random_state)
        tab.to_csv(RUNS_RULE_CSV, index=False, float_format="%.6g")
        print(tab.round(3).to_string(index=False))
        return tab
    reps = a.reps or (40 if a.quick else 400)
    path = Path(a.csv) if a.csv else (QUICK_CSV if a.quick else FULL_CSV)
    ex = a.executor if a.executor in (None, "processes") else int(a.executor)
    cells = [c for c in grid(a.quick) if (a.families is None or c.family in a.families)
             and (a.scores is None or c.scores in a.scores) and c.n >= a.min_n
             and (a.max_n is None or c.n <= a.max_n) and (a.p is None or c.p in a.p)
             and (a.runs is None or c.runs in a.runs)]
    t0 = time.perf_counter()
    tab = run(cells, reps, path, ex, a.random_state, batch=4 if ex else 1, with_peers=not a.no_peers)
    d = tab[tab["method"] == DEFAULT]
    with pd.option_context("display.width", 220, "display.max_columns", 30):
        print(d[["family", "scores", "p", "n", "systems", "cluster", "epochs", "runs", "sd_run", "cov_score",
                 "cov_score_a", "cov_diff", "width_diff", "type_i", "rank_cov", "errors"]].round(3).to_string(index=False))
    print(f"{len(cells)} cells, {reps} reps, {time.perf_counter() - t0:.0f} s (machine shared: see the note)")
    return tab


if __name__ == "__main__":
    main()
