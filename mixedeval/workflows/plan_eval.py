"""How many questions (and epochs) an evaluation needs: Miller's closed form beside a simulation.

:func:`questions_needed` answers "how many questions do I need to detect a difference of X
points between two systems at a given power?" from a pilot log (or from a mean, an SD and the
correlation between the systems, by hand), for each number of epochs K (repeated samples of a
question within one evaluation).

**Closed form** (Miller 2024, "Adding Error Bars to Evals", arXiv:2411.00640, section 5). The
headline analysis (:mod:`mixedeval.workflows._paired`) averages the K epochs of each question
and runs the paired t test on the n question differences ``d_i = xbar_{A,i} - xbar_{B,i}``.
With mu_{s,i} a question's expected score and sigma2_{s,i} its within-question (epoch) variance
(for 0/1 scores ``p_i (1 - p_i)``),

    Var(dbar) = [ Var_q(mu_A - mu_B) + (E sigma2_A + E sigma2_B) / K ] / n,

power to detect delta at two-sided alpha is ``Phi(|delta| / SE - z) + Phi(-|delta| / SE - z)``
(``z = z_{1 - alpha/2}``; the second term is the negligible other tail) and the number of
questions is

    n = (z_{1 - alpha/2} + z_{power})^2 [ Var_q(mu_A - mu_B) + (E sigma2_A + E sigma2_B) / K ] / delta^2

(rounded up). From a pilot with K_0 epochs: ``E sigma2_s`` is the mean over questions of the
sample variance over epochs (ddof = 1, unbiased); ``Var_q(mu_A - mu_B)`` is the variance of the
per-question mean differences minus the within part ``mean_i(sigma2_A / K_{A,i} + sigma2_B /
K_{B,i})`` (truncated at 0, with a warning). By hand: ``sd`` (the SD of one system's score on a
question with one epoch; for 0/1 scores ``sqrt(p (1 - p))`` from ``mean``), ``correlation``
between the systems' scores on the same question (Miller's paired formula; 0 gives his unpaired
one, ``Var = sd_A^2 + sd_B^2``) and, for K > 1, ``within_variance`` (``E sigma2`` per system).

**Runs** (a pilot with several runs per system: seeds, separate evaluations). The plan sees them as
the headline does (:mod:`mixedeval.workflows._paired`): the between-run variance ``sigma2_run`` is
the method-of-moments estimate of the run ANOVA pooled over the pilot's systems (questions task x
item), kept only when the preliminary F test finds it (Bancroft's sometimes-pool rule at
``RUN_PRETEST_LEVEL``). Not found: the runs' samples of a question are pooled as epochs (warning
``runs_pooled``). Found: K samples of a question come from ``R = K / E`` runs per system (E epochs
per run), the within-question variance is the within-run part (the samples' variance less
``sigma2_run (N - E) / (N - 1)``, N samples of which E per run), and a part that more questions do
not shrink is added,

    Var(dbar) = [ Var_q(mu_A - mu_B) + (E sigma2_A + E sigma2_B) / K ] / n + 2 sigma2_run / R,

so ``n = z^2 [ ... ] / (delta^2 - z^2 2 sigma2_run / R)``; where ``delta^2 <= z^2 2 sigma2_run /
R`` no number of questions reaches the power with R runs (the row has no n, warning ``runs_limit``
with the fewest runs that would), and the default plan adds a row with twice that many runs. The
closed form is a normal approximation, optimistic with few runs (the headline's t then has few
Satterthwaite df: with 3 runs of 2-3 systems about 5-7); the simulation (below) draws the runs and
runs the headline's own test, and leads where the two differ by more than 10%. The smallest
difference the pilot's own design detects is ``(z_{1-alpha/2} + z_power) x`` the headline's SE
(the observed variance of its question differences, its run part, and the share of a negative run
estimate the headline adds).

**Simulation** (the check, R-free numpy Monte-Carlo). From a pilot: the questions' epoch means
are moved towards the systems' means by the 2 x 2 matrix ``L = Sigma_mu^{1/2} S^{-1/2}`` (S the
covariance of the pilot's question means, ``Sigma_mu = S - diag(within part)``), so that the
simulated questions have the estimated between-question covariance (plug-in epoch means carry
the pilot's epoch noise and would overstate it) and -- for 0/1 scores, where ``E p (1 - p) =
m (1 - m) - Var(p)`` -- the estimated within variance; the two systems are then shifted apart
(half each way, clipped to [0, 1] for 0/1 scores) until their mean difference is the effect.
Each simulated evaluation draws n questions with replacement, K epochs per system (Bernoulli for
0/1 scores; normal with the system's within variance otherwise), averages the epochs and runs
the paired question-level t test at alpha. By hand the question differences are normal with the
closed form's variance (this checks the normal approximation against the t test only). The
power at the closed-form n is estimated, and the smallest n whose simulated power reaches the
target is searched (doubling or halving from the closed-form n, then bisection to within 1%);
every n uses the same seed (from ``random_state`` and K), ``n_sim`` simulations, and power comes
with its Clopper-Pearson interval. With a between-run variance in the plan each simulated
evaluation gives both systems R runs, each shifted by N(0, sigma2_run) for all its questions
(clipped to [0, 1] for 0/1 scores), E epochs per run, and runs the headline's runs test (the run
ANOVA of the two systems, its preliminary F test, Satterthwaite df); one run per system is not
simulated (the headline cannot estimate a run variance from it).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .. import _resources as res
from .._random import seed_sequence
from ..data._logs import EvalLogs, read_eval_logs
from ..errors import DataError
from ..results import ResultWarning
from ._common import _WorkflowResult, dedupe_warnings
from ._paired import balanced_run_se
from .logs.design import EvalDesign, design_from_logs


def _clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of k / n, as :func:`mixedeval.workflows.power.clopper_pearson`
    computes it (scipy's ``binomtest(...).proportion_ci(method="exact")``), without importing that
    module: it loads the R-backed power simulation, which the plan from logs does not need (the
    command line's ``compare-logs`` starts faster)."""
    if n == 0:
        return math.nan, math.nan
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


TABLE_COLUMNS = ["epochs", "runs", "method", "n_questions", "n_samples", "power", "conf_low", "conf_high",
                 "power_at_closed_form_n", "std_error", "effect", "alpha", "target", "n_sim"]
CLOSED_FORM = "closed_form"
SIMULATION = "simulation"
_CHUNK = 2_000_000  # simulated question differences held in memory at once
#: more questions than this per system is no evaluation: an effect that needs them is refused
MAX_QUESTIONS = 10**8


class _RunLimited(DataError):
    """No number of questions detects the effect with this many runs: the between-run variance
    alone keeps the SE too large (a row of the plan, not an error)."""


class _Refused(DataError):
    """A plan that cannot be made as asked (an effect too small to plan for, a simulation that
    would exceed the loop guard): the caller's arguments, never a reason to skip a plan quietly
    (:func:`mixedeval.compare_logs` turns other pilot problems into a ``no_plan`` warning)."""


@dataclass(frozen=True, repr=False, eq=False)
class QuestionsNeededResult(_WorkflowResult):
    """Questions needed to detect ``effect`` at power ``target`` (see :func:`questions_needed`).

    table : one row per (epochs, method): epochs (K, samples of a question per system), runs (the
        runs per system those K samples come from: K / epochs per run of a pilot with runs, else
        1), method (``"closed_form"``: Miller 2024
        section 5, normal approximation; ``"simulation"``: the Monte-Carlo paired t test),
        n_questions, n_samples (questions x epochs: generations per system), power (at
        n_questions: the formula's, or the simulated share of rejections), conf_low / conf_high
        (its Clopper-Pearson interval; NaN for the formula), power_at_closed_form_n (the
        formula's, or the simulated power at the closed-form n), std_error (the formula's SE of
        the mean difference at n_questions), effect, alpha, target, n_sim.
    estimates : the variance pieces and what they came from: quantity, value.
    searched : every simulated size: epochs, n_questions, n_rejected, n_sim, power, conf_low, conf_high.
    """

    table: Any
    estimates: Any
    searched: Any
    effect: float
    target: float
    alpha: float
    systems: tuple[str, str]
    metric: str | None
    source: str
    n_sim: int
    warnings: tuple[ResultWarning, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)

    _print_tables = ("table", "estimates")
    _title = "Questions needed (closed form and simulation)"

    def _scalars(self):
        return [("systems", " - ".join(self.systems)), ("effect", f"{self.effect:g} ({100 * self.effect:g} points)"),
                ("target power", self.target), ("alpha", self.alpha), ("from", self.source)]

    def power_at(self, n_questions: int, epochs: int = 1) -> float:
        """The closed-form power at ``n_questions`` questions with ``epochs`` epochs each (and, for
        a pilot with a between-run variance, its run part with ``epochs`` samples per question)."""
        est = self.estimates.set_index("quantity")["value"]
        var_d = _var_d(float(est["var_between"]), float(est["within_a"]), float(est["within_b"]), int(epochs))
        return closed_form_power(int(n_questions), self.effect, var_d, self.alpha,
                                 run_variance=run_variance_part(est, int(epochs)))


def runs_for(estimates: pd.Series, epochs: int) -> int:
    """Runs per system that ``epochs`` samples of a question come from: ``round(K / epochs per
    run)`` (at least 1) for a pilot with runs, else 1."""
    per_run = float(estimates.get("epochs_per_run", math.nan))
    return max(1, int(round(epochs / per_run))) if math.isfinite(per_run) and per_run > 0 else 1


def run_variance_part(estimates: pd.Series, epochs: int) -> float:
    """The part of the variance of the mean difference that more questions do not shrink:
    ``sigma2_run (1/R + 1/R) = 2 sigma2_run / R`` with R = :func:`runs_for` (0 without a
    between-run variance in the plan)."""
    s2 = float(estimates.get("sigma2_run", 0.0))
    return 2.0 * s2 / runs_for(estimates, epochs) if math.isfinite(s2) and s2 > 0 else 0.0


# ------------------------------------------------------------------------------ closed form
def _var_d(var_between: float, within_a: float, within_b: float, epochs: int) -> float:
    """Variance of one question's epoch-averaged difference with K epochs."""
    return var_between + (within_a + within_b) / epochs


def closed_form_questions(effect: float, var_d: float, target: float = 0.8, alpha: float = 0.05, *,
                          run_variance: float = 0.0) -> int:
    """Miller's (2024) n: ``ceil((z_{1-alpha/2} + z_target)^2 var_d / effect^2)``, ``var_d`` the
    variance of one question's (epoch-averaged) difference of the two systems. With
    ``run_variance`` (the part of the variance of the mean difference that does not shrink with
    n, ``sigma2_run (1/R_a + 1/R_b)``): ``n = z^2 var_d / (effect^2 - z^2 run_variance)``; an
    effect with ``effect^2 <= z^2 run_variance`` cannot be detected with these runs (no n)."""
    z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(target))
    room = 1.0
    if run_variance > 0:
        room = 1.0 - (z * math.sqrt(run_variance) / abs(effect)) ** 2  # the share of effect^2 left for questions
        if not room > 0:
            raise _RunLimited(f"the between-run variance alone ({run_variance:.4g} of the mean difference) keeps "
                              f"the SE above what detecting {effect:g} needs")
    ratio = z * math.sqrt(var_d / room) / abs(effect) if var_d > 0 else 0.0  # not effect**2: 1e-200**2 is 0
    n = ratio * ratio  # inf, never OverflowError
    if not n <= MAX_QUESTIONS:  # inf too
        raise _Refused(_too_many(n, effect, var_d, z, target))
    return max(2, int(math.ceil(n - 1e-9)))


def _too_many(n: float, effect: float, var_d: float, z: float, target: float) -> str:
    """The refusal of an effect too small to plan for: how many questions it would take."""
    size = f"about {n:.3g}" if math.isfinite(n) else "more than 1e308"
    one_point = max(2, math.ceil((z * math.sqrt(var_d) / 0.01) ** 2))
    return (f"detecting a difference of effect={effect:g} at power {target:g} would take {size} questions per "
            f"system (Miller's closed form; variance of one question's difference {var_d:.4g}), more than the "
            f"{MAX_QUESTIONS:,} any evaluation has: no plan is made for it. Plan for a difference you care about, "
            f"in score units: effect=0.01 (one point) takes about {one_point:,} questions")


def closed_form_power(n_questions: int, effect: float, var_d: float, alpha: float = 0.05, *,
                      run_variance: float = 0.0) -> float:
    """Normal-approximation power of the two-sided paired test at ``n_questions``:
    ``Phi(|effect| / SE - z) + Phi(-|effect| / SE - z)``, ``SE = sqrt(var_d / n + run_variance)``
    (``run_variance``: see :func:`closed_form_questions`)."""
    if var_d <= 0 and run_variance <= 0:
        return 1.0 if effect != 0 else alpha
    z = stats.norm.ppf(1 - alpha / 2)
    r = abs(effect) / math.sqrt(max(var_d, 0.0) / n_questions + run_variance)
    return float(stats.norm.cdf(r - z) + stats.norm.cdf(-r - z))


# ------------------------------------------------------------------------------ the pilot
@dataclass(frozen=True)
class _Pieces:
    var_between: float
    within_a: float
    within_b: float
    mean_a: float
    mean_b: float
    pilot: dict[str, float]
    binary: bool
    pool: np.ndarray | None  # n0 x 2 moment-matched question means (None: normal model)
    warnings: tuple[ResultWarning, ...] = ()
    runs: _Runs | None = None  # a pilot with several runs per system


@dataclass(frozen=True)
class _Runs:
    """A pilot's runs as the headline sees them (:mod:`mixedeval.workflows._paired`): the
    between-run variance pooled over the pilot's systems, kept (``sigma2`` > 0) only when the
    preliminary F test finds it (``p_value`` < ``RUN_PRETEST_LEVEL``), the pair's runs per
    system and the epochs per run."""

    sigma2: float
    p_value: float
    runs_a: float
    runs_b: float
    epochs_per_run: float
    n_systems: int
    shrink: float = 0.0  # the headline's share of a negative estimate for the pair (pooled case)


def _pair(name: str, x: Any) -> tuple[float, float] | None:
    if x is None:
        return None
    try:
        vals = np.atleast_1d(np.asarray(x, dtype=float))
    except (TypeError, ValueError):
        raise DataError(f"{name} must be a number or a pair of numbers (system a, system b), got {x!r}") from None
    if vals.size == 1:
        vals = np.repeat(vals, 2)
    if vals.size != 2 or not np.isfinite(vals).all():
        raise DataError(f"{name} must be a number or a pair (system a, system b), got {x!r}")
    return float(vals[0]), float(vals[1])


def _pilot_design(pilot: Any, metric: str, fmt: str) -> EvalDesign:
    """The pilot's :class:`EvalDesign`: the design given (:func:`mixedeval.compare_logs` passes
    its own), or the one of the logs (read once when ``pilot`` is a path or a table)."""
    if isinstance(pilot, EvalDesign):
        return pilot
    logs = pilot if isinstance(pilot, EvalLogs) else read_eval_logs(pilot, fmt, metric=metric)
    if metric not in set(logs.table["metric"]):
        logs.scores(metric)  # its DataError names the metrics available
    return design_from_logs(logs, metric)


def _pilot_scores(pilot: Any, metric: str, systems: Sequence[str] | None,
                  fmt: str) -> tuple[EvalDesign, tuple[str, str], list[ResultWarning], _Runs | None]:
    """The pilot's design, its two systems, the warnings and its runs (:class:`_Runs`)."""
    design = _pilot_design(pilot, metric, fmt)
    names = design.systems
    if systems is None:
        if len(names) != 2:
            raise DataError(f"the pilot has {len(names)} systems ({', '.join(names)}); name the two to plan with "
                            "systems=(a, b)")
        systems = names
    systems = tuple(str(x) for x in systems)
    if len(systems) != 2 or systems[0] == systems[1] or any(x not in names for x in systems):
        raise DataError(f"systems must be two different systems of the pilot ({', '.join(names)}), got {systems!r}")
    runs = _pilot_runs(design, systems)
    logs = design.logs
    warns = list(design.warnings) + (_reduced_pilot(logs, metric, systems) if logs is not None else [])
    if runs is not None and runs.sigma2 > 0:
        warns.append(ResultWarning("runs_in_plan", f"the pilot has several runs per system and the preliminary F test "
                                   f"finds a between-run variance (p = {runs.p_value:.3g}; pooled over the pilot's "
                                   f"{runs.n_systems} systems, as in the headline's SE): it is part of the plan, where "
                                   f"K samples of a question come from K / {runs.epochs_per_run:g} runs per system and "
                                   "more questions do not shrink the run part 2 sigma2_run / runs; the simulation does "
                                   "not model runs (closed form only)"))
    elif runs is not None:
        warns.append(ResultWarning("runs_pooled", "the pilot has several runs of a system and the preliminary F test "
                                   "does not find a between-run variance"
                                   + (f" (p = {runs.p_value:.3g})" if math.isfinite(runs.p_value) else "")
                                   + ": their samples of a question are pooled as epochs, as the headline pools them"))
    return design, systems, warns, runs


#: the kind of the warning that a pilot's epochs were reduced by the log's reducer (it replaces ``one_epoch_pilot``)
REDUCED_PILOT = "reduced_epochs_pilot"


def _reduced_pilot(logs: EvalLogs, metric: str, systems: Sequence[str]) -> list[ResultWarning]:
    """A note when the log's own reducer reduced the pilot's epochs (``Epochs(3, "max")``): each
    question has one reduced score, which the plan takes as one score per question."""
    text = logs.reduction_text(metric, systems) if hasattr(logs, "reduction_text") else None
    if text is None:
        return []
    return [ResultWarning(REDUCED_PILOT, f"the pilot's scores are each question's {text} (the log's epoch reducer), "
                          "taken as one score per question: a reduced score is one draw of the question's score, so "
                          "the plan's epochs=1 means each question run with the same epochs and reducer; to plan "
                          "other numbers of epochs, run the pilot with Inspect's mean reducer, whose epochs stay "
                          "separate")]


def _pilot_runs(design: EvalDesign, systems: tuple[str, str]) -> _Runs | None:
    """The pilot's :class:`_Runs` (None when no system has two runs): the design's run verdict
    over all its systems, questions being task x item (:attr:`EvalDesign.run_verdict_all`)."""
    verdict = design.run_verdict_all
    if verdict is None:
        return None
    anova = verdict.anova
    per_run = float(design.rows.groupby(["system", "task", "item", "run"], observed=True).size().median())
    p = anova.p_value if anova is not None else math.nan
    ra, rb = float(verdict.n_runs[systems[0]]), float(verdict.n_runs[systems[1]])
    return _Runs(sigma2=anova.sigma2 if anova is not None and anova.kept else 0.0, p_value=p, runs_a=ra, runs_b=rb,
                 epochs_per_run=per_run, n_systems=len(verdict.n_runs),
                 shrink=anova.shrink(1.0 / ra + 1.0 / rb) if anova is not None else 0.0)


def _pieces_from_pilot(design: EvalDesign, systems: tuple[str, str], warns: list[ResultWarning],
                       runs: _Runs | None = None) -> _Pieces:
    m, v, k = design.sample_stats(systems)  # per question and system: mean, variance and count of its samples
    two = design.rows["score"].to_numpy(float)[design.rows["system"].astype(str).isin(systems).to_numpy()]
    binary = bool(np.isin(two, (0.0, 1.0)).all())
    d = m[:, 0] - m[:, 1]
    var_dbar = float(d.var(ddof=1))
    has_epochs = bool((k >= 2).any(axis=0).all())
    within = np.nanmean(np.where(k >= 2, v, np.nan), axis=0) if has_epochs else np.array([np.nan, np.nan])
    if has_epochs and runs is not None and runs.sigma2 > 0:  # the question's samples span runs: their
        # variance holds sigma2_run (N - E) / (N - 1) (N samples, E per run); the within-run part is the rest
        kk = float(np.median(k))
        within = np.maximum(0.0, within - runs.sigma2 * (kk - runs.epochs_per_run) / (kk - 1.0))
    part = float(np.sum(within * np.mean(1.0 / k, axis=0))) if has_epochs else np.nan
    vb_raw = var_dbar - part if has_epochs else np.nan
    vb = max(0.0, vb_raw) if has_epochs else np.nan
    if has_epochs and vb_raw < 0:
        warns.append(ResultWarning("between_truncated", f"the variance of the question differences ({var_dbar:.4g}) "
                                   f"is below its within-question part ({part:.4g}): Var_q(mu_A - mu_B) is set to 0"))
    if not has_epochs and not any(w.kind == REDUCED_PILOT for w in warns):  # a reduced pilot says why instead
        warns.append(ResultWarning("one_epoch_pilot", "the pilot has one epoch per question: the within-question "
                                   "variance cannot be separated from the between-question variance, so only epochs=1 "
                                   "is planned (run the pilot with epochs >= 2 to plan more epochs)"))
    pool = _matched_pool(m, within, k, binary) if has_epochs else m
    pilot = {"n_questions_pilot": float(len(d)), "epochs_pilot": float(np.median(k)),
             "delta_pilot": float(d.mean()), "var_question_differences": var_dbar,
             "correlation_pilot": float(np.corrcoef(m.T)[0, 1]) if np.all(m.std(axis=0) > 0) else np.nan,
             "var_one_epoch_difference": var_dbar if not has_epochs else np.nan}
    return _Pieces(var_between=vb, within_a=float(within[0]), within_b=float(within[1]), mean_a=float(m[:, 0].mean()),
                   mean_b=float(m[:, 1].mean()), pilot=pilot, binary=binary, pool=pool, warnings=tuple(warns),
                   runs=runs)


def _psd_sqrt(a: np.ndarray, inverse: bool = False) -> np.ndarray:
    w, q = np.linalg.eigh((a + a.T) / 2)
    w = np.clip(w, 0.0, None)
    if inverse:
        w = np.where(w > 1e-12 * max(w.max(), 1e-300), 1.0 / np.sqrt(np.where(w > 0, w, 1.0)), 0.0)
    else:
        w = np.sqrt(w)
    return (q * w) @ q.T


def _matched_pool(m: np.ndarray, within: np.ndarray, k: np.ndarray, binary: bool) -> np.ndarray:
    """The pilot's question means moved towards the systems' means so that their covariance is
    the estimated between-question covariance ``S - diag(within part)`` (see the module docstring)."""
    S = np.cov(m.T, ddof=1)
    target = S - np.diag(within * np.mean(1.0 / k, axis=0))
    L = _psd_sqrt(target) @ _psd_sqrt(S, inverse=True)
    mu = m.mean(axis=0)
    out = mu + (m - mu) @ L.T
    return np.clip(out, 0.0, 1.0) if binary else out


def _pieces_by_hand(mean: Any, sd: Any, correlation: Any, within_variance: Any, epochs: Sequence[int]) -> _Pieces:
    means = _pair("mean", mean)
    sds = _pair("sd", sd)
    if sds is None:
        if means is None or not all(0 < p < 1 for p in means):
            raise DataError("by hand, give sd= (the SD of one system's score on a question, one epoch) or mean= "
                            "(accuracies strictly between 0 and 1: sd = sqrt(p (1 - p)))")
        sds = tuple(math.sqrt(p * (1 - p)) for p in means)
    rho = 0.0 if correlation is None else float(correlation)
    if not -1.0 <= rho <= 1.0:
        raise DataError(f"correlation must be between -1 and 1, got {correlation!r}")
    var1 = sds[0] ** 2 + sds[1] ** 2 - 2 * rho * sds[0] * sds[1]
    w = _pair("within_variance", within_variance)
    if w is None and any(e > 1 for e in epochs):
        raise DataError("planning epochs > 1 by hand needs within_variance= (E sigma2_i: the average variance of a "
                        "question's score across epochs, per system; for 0/1 scores the mean of p_i (1 - p_i))")
    w = w or (0.0, 0.0)
    if any(x < 0 for x in w) or any(x < 0 for x in sds):
        raise DataError("sd and within_variance must be non-negative")
    vb = var1 - w[0] - w[1]
    warns = []
    if vb < 0:
        warns.append(ResultWarning("between_truncated", f"within_variance exceeds the one-epoch variance of the "
                                   f"difference ({var1:.4g}): Var_q(mu_A - mu_B) is set to 0"))
    mm = means or (math.nan, math.nan)
    pilot = {"sd_a": sds[0], "sd_b": sds[1], "correlation": rho, "var_one_epoch_difference": var1}
    return _Pieces(var_between=max(0.0, vb), within_a=w[0], within_b=w[1], mean_a=mm[0], mean_b=mm[1], pilot=pilot,
                   binary=False, pool=None, warnings=tuple(warns))


def _var_for(p: _Pieces, epochs: int) -> float:
    """``Var(d_i)`` with ``epochs`` epochs (NaN where the pilot cannot tell: one epoch, K > 1)."""
    if math.isnan(p.var_between):
        return p.pilot["var_one_epoch_difference"] if epochs == 1 else math.nan
    return _var_d(p.var_between, p.within_a, p.within_b, epochs)


# ------------------------------------------------------------------------------ simulation
def _shifted(p: _Pieces, effect: float) -> np.ndarray | None:
    """The simulation's question means, the systems moved apart (half each way) to ``effect``."""
    if p.pool is None:
        return None
    a, b = p.pool[:, 0], p.pool[:, 1]
    if not p.binary:
        c = effect - (a.mean() - b.mean())
        return np.column_stack([a + c / 2, b - c / 2])

    def gap(c: float) -> float:
        return float(np.clip(a + c / 2, 0, 1).mean() - np.clip(b - c / 2, 0, 1).mean())

    lo, hi = -2.0, 2.0
    if not gap(lo) <= effect <= gap(hi):
        raise DataError(f"an effect of {effect:g} cannot be reached by shifting the pilot's accuracies within [0, 1]")
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) < effect else (lo, mid)
    c = (lo + hi) / 2
    return np.column_stack([np.clip(a + c / 2, 0, 1), np.clip(b - c / 2, 0, 1)])


def _t_rejections(d: np.ndarray, crit: float) -> int:
    """Rows of ``d`` (simulations x questions) whose paired t test rejects (|t| >= crit; a zero
    SD rejects when the mean is not 0, as the headline's test)."""
    n = d.shape[1]
    mu = d.mean(axis=1)
    se = d.std(axis=1, ddof=1) / math.sqrt(n)
    if not (np.isfinite(mu).all() and np.isfinite(se).all()):  # a NaN would count as a rejection below
        raise RuntimeError("questions_needed's simulation produced non-finite question differences")
    with np.errstate(divide="ignore", invalid="ignore"):
        rej = np.where(se > 0, np.abs(mu / se) >= crit, mu != 0)
    return int(rej.sum())


def _simulate(p: _Pieces, pool: np.ndarray | None, n: int, epochs: int, effect: float, alpha: float, n_sim: int,
              seed: np.random.SeedSequence) -> int:
    """Rejections of the paired question-level t test in ``n_sim`` simulated evaluations."""
    rng = np.random.default_rng(seed)
    crit = float(stats.t.ppf(1 - alpha / 2, n - 1))
    rows, k = max(1, _CHUNK // n), 0
    sd_d = math.sqrt(max(_var_for(p, epochs), 0.0))
    # a one-epoch pilot has no within-question variance (NaN): its question "means" are single
    # scores that already carry the epoch noise, and only epochs=1 is planned, so the resampled
    # questions get no extra noise (the NaN once made every simulated test "reject" at n = 2)
    within = np.array([p.within_a, p.within_b])
    sd_w = np.sqrt(np.where(np.isfinite(within), within, 0.0) / epochs)
    g = res.LoopGuard(f"questions_needed's simulation at {n} questions", n_sim, count=f"n_sim={res.format_count(n_sim)}",
                      unit="simulated evaluations",
                      fix="Use a smaller n_sim (2,000 gives the power to +-0.02), n_sim=0 for the closed form only, or "
                          "raise the limit.")
    for start in range(0, n_sim, rows):
        r = min(rows, n_sim - start)
        if pool is None:
            d = rng.normal(effect, sd_d, size=(r, n))
        else:
            q = pool[rng.integers(0, pool.shape[0], size=(r, n))]
            x = rng.binomial(epochs, q) / epochs if p.binary else q + rng.standard_normal(q.shape) * sd_w
            d = x[..., 0] - x[..., 1]
        k += _t_rejections(d, crit)
        try:
            g.block_done(start + r)
        except DataError as exc:  # the loop guard's refusal (time): the caller's n_sim, not the pilot's fault
            raise _Refused(str(exc)) from None
    return k


def _runs_test(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The headline's runs test on each row of ``x`` (simulations x 2 systems x R runs x n
    questions, run-level scores): delta, SE and df of the paired t of the run-averaged question
    differences with the run ANOVA of the two systems, the run variance added when the preliminary
    F test keeps it (a share of a negative estimate when it pools it), Satterthwaite's df
    (:mod:`mixedeval.workflows._paired`; equal to its
    ``paired_differences`` in the tests)."""
    _, _, R, n = x.shape
    qm = x.mean(axis=2)  # sims x 2 x n: question means over runs
    d = qm[:, 0] - qm[:, 1]
    delta, vq = d.mean(axis=1), d.var(axis=1, ddof=1) / n
    col = x.mean(axis=3)  # run means
    resid = x - qm[:, :, None, :] - col[..., None] + x.mean(axis=(2, 3))[..., None, None]
    df_run, df_res = 2.0 * (R - 1), 2.0 * (n - 1) * (R - 1)
    ms_run = n * ((col - col.mean(axis=2, keepdims=True)) ** 2).sum(axis=(1, 2)) / df_run
    ms_res = (resid**2).sum(axis=(1, 2, 3)) / df_res
    v, df = balanced_run_se(vq, ms_run, ms_res, df_run, df_res, 2.0 / (R * n), n)
    return delta, np.sqrt(v), df


def _runs_rejections(x: np.ndarray, alpha: float) -> int:
    """Rows of ``x`` (see :func:`_runs_test`) whose headline test rejects at ``alpha`` (a zero SE
    rejects when the difference is not 0, as the headline's test)."""
    delta, se, df = _runs_test(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        rej = np.where(se > 0, np.abs(delta) / se >= stats.t.ppf(1 - alpha / 2, df), delta != 0)
    return int(rej.sum())


def _simulate_runs(p: _Pieces, pool: np.ndarray, n: int, epochs: int, alpha: float, n_sim: int,
                   seed: np.random.SeedSequence) -> int:
    """Rejections of the headline's runs test in ``n_sim`` simulated evaluations of R = K / E runs
    per system: questions drawn from ``pool``, a shift N(0, sigma2_run) per system and run added
    to all its questions (clipped to [0, 1] for 0/1 scores), E epochs per run (Bernoulli, or
    normal with the within-run variance)."""
    rng = np.random.default_rng(seed)
    E = max(1, int(round(p.runs.epochs_per_run)))
    R = max(1, int(round(epochs / E)))
    sd_run = math.sqrt(p.runs.sigma2)
    sd_w = np.sqrt(np.maximum(np.array([p.within_a, p.within_b]), 0.0) / E)[None, :, None, None]
    rows, k = max(1, _CHUNK // (2 * R * n)), 0
    g = res.LoopGuard(f"questions_needed's simulation at {n} questions x {R} runs", n_sim,
                      count=f"n_sim={res.format_count(n_sim)}", unit="simulated evaluations",
                      fix="Use a smaller n_sim, n_sim=0 for the closed form only, or raise the limit.")
    for start in range(0, n_sim, rows):
        r = min(rows, n_sim - start)
        q = np.moveaxis(pool[rng.integers(0, pool.shape[0], size=(r, n))], 2, 1)[:, :, None, :]  # r x 2 x 1 x n
        mu = q + rng.normal(0.0, sd_run, size=(r, 2, R, 1))
        if p.binary:
            x = rng.binomial(E, np.clip(mu, 0.0, 1.0)) / E
        else:
            x = mu + rng.standard_normal((r, 2, R, n)) * sd_w
        k += _runs_rejections(x, alpha)
        try:
            g.block_done(start + r)
        except DataError as exc:
            raise _Refused(str(exc)) from None
    return k


def _search(power_at: Any, n_start: int, target: float, cap: int) -> int | None:
    """Smallest n with simulated power >= target: doubling or halving from ``n_start``, then
    bisection to within 1% (None when ``cap`` questions do not reach it)."""
    if power_at(n_start) >= target:
        hi, lo = n_start, n_start // 2
        while lo >= 2 and power_at(lo) >= target:
            hi, lo = lo, lo // 2
        lo = max(lo, 1)
    else:
        lo, hi = n_start, min(2 * n_start, cap)
        while power_at(hi) < target and hi < cap:
            lo, hi = hi, min(2 * hi, cap)
        if power_at(hi) < target:
            return None
    while hi - lo > max(1, hi // 100):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_at(mid) >= target else (mid, hi)
    return hi


def _rows_for(p: _Pieces, epochs: int, effect: float, target: float, alpha: float, n_sim: int,
              ss: np.random.SeedSequence, simulate: bool) -> tuple[list[dict], list[dict]]:
    """The closed-form and simulation rows of one number of epochs, and the sizes simulated (a
    between-run variance in the plan: closed form only, the simulation row NaN with n_sim 0)."""
    var_d = _var_for(p, epochs)
    est = _estimates(p).set_index("quantity")["value"]
    rv = run_variance_part(est, epochs)
    base = {"epochs": epochs, "runs": runs_for(est, epochs), "effect": effect, "alpha": alpha, "target": target}
    nan = dict.fromkeys(["n_questions", "n_samples", "power", "conf_low", "conf_high", "power_at_closed_form_n",
                         "std_error"], math.nan)
    if not math.isfinite(var_d):
        return [{**base, "method": m, **nan, "n_sim": n_sim if m == SIMULATION else 0}
                for m in (CLOSED_FORM, SIMULATION) if simulate or m == CLOSED_FORM], []
    try:
        n_cf = closed_form_questions(effect, var_d, target, alpha, run_variance=rv)
    except _RunLimited:
        rows = [{**base, "method": CLOSED_FORM, **nan, "n_sim": 0}]
        return rows + ([{**base, "method": SIMULATION, **nan, "n_sim": 0}] if simulate else []), []
    pw_cf = closed_form_power(n_cf, effect, var_d, alpha, run_variance=rv)
    rows = [{**base, "method": CLOSED_FORM, "n_questions": n_cf, "n_samples": n_cf * epochs, "power": pw_cf,
             "conf_low": math.nan, "conf_high": math.nan, "power_at_closed_form_n": pw_cf,
             "std_error": math.sqrt(var_d / n_cf + rv), "n_sim": 0}]
    if rv > 0 and simulate and (base["runs"] < 2 or p.pool is None):  # one run: no run variance to estimate
        return rows + [{**base, "method": SIMULATION, **nan, "n_sim": 0}], []
    if not simulate:
        return rows, []
    pool = _shifted(p, effect)
    seed = np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, int(epochs)))
    done: dict[int, int] = {}

    def power_at(n: int) -> float:
        if n not in done:
            done[n] = (_simulate_runs(p, pool, n, epochs, alpha, n_sim, seed) if rv > 0 else
                       _simulate(p, pool, n, epochs, effect, alpha, n_sim, seed))
        return done[n] / n_sim

    n_s = _search(power_at, n_cf, target, max(1000, 16 * n_cf))
    lo, hi = _clopper_pearson(done[n_s], n_sim, 0.95) if n_s else (math.nan, math.nan)
    rows.append({**base, "method": SIMULATION, "n_questions": n_s if n_s else math.nan,
                 "n_samples": n_s * epochs if n_s else math.nan, "power": power_at(n_s) if n_s else math.nan,
                 "conf_low": lo, "conf_high": hi, "power_at_closed_form_n": power_at(n_cf),
                 "std_error": math.sqrt(var_d / n_s) if n_s else math.nan, "n_sim": n_sim})
    searched = [{"epochs": epochs, "n_questions": n, "n_rejected": k, "n_sim": n_sim, "power": k / n_sim,
                 **dict(zip(("conf_low", "conf_high"), _clopper_pearson(k, n_sim, 0.95)))} for n, k in sorted(done.items())]
    return rows, searched


# ------------------------------------------------------------------------------ the workflow
def _check_args(effect: Any, target: Any, alpha: Any, epochs: Any, n_sim: Any) -> tuple[float, float, float, list[int] | None, int]:
    try:
        eff = float(effect)
    except (TypeError, ValueError) as exc:
        raise DataError(f"effect must be a non-zero number in score units (0.03 = 3 points), got {effect!r}") from exc
    if not math.isfinite(eff) or eff == 0:
        raise DataError(f"effect must be a non-zero number in score units (0.03 = 3 points), got {effect!r}")
    probs = []
    for name, x in (("target", target), ("alpha", alpha)):
        v = float(x) if isinstance(x, (int, float, np.floating)) and not isinstance(x, bool) else math.nan
        if not 0 < v < 1:
            raise DataError(f"{name} must be strictly between 0 and 1, got {x!r}")
        probs.append(v)
    ks = None
    if epochs is not None:
        if isinstance(epochs, (int, np.integer)):
            vals = [epochs]
        elif isinstance(epochs, (list, tuple, np.ndarray, range)):
            vals = list(np.ravel(epochs)) if isinstance(epochs, np.ndarray) else list(epochs)
        else:  # 2.5, "3": not a count of epochs
            raise DataError(f"epochs must be a positive integer or a list of them, got {epochs!r}")
        if not vals or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in vals):
            raise DataError(f"epochs must be a positive integer or a list of them, got {epochs!r}")
        ks = sorted({int(k) for k in vals})
    if isinstance(n_sim, bool) or not isinstance(n_sim, (int, np.integer)) or n_sim < 0:
        raise DataError(f"n_sim must be an integer >= 0 (0: no simulation), got {n_sim!r}")
    return eff, probs[0], probs[1], ks, int(n_sim)


def _runs_needed(p: _Pieces, effect: float, target: float, alpha: float) -> int:
    """The fewest runs per system with which some number of questions detects ``effect``:
    the smallest R with ``2 z^2 sigma2_run / R < effect^2``."""
    z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(target))
    return math.floor(2 * z * z * p.runs.sigma2 / effect**2) + 1


def _enough_runs(p: _Pieces, effect: float, target: float, alpha: float) -> list[int]:
    """With a between-run variance in the plan that the pilot's runs cannot overcome: K for twice
    the fewest runs that can (the run part then takes half of effect^2, so the questions needed are
    twice those without runs), as one more default row."""
    if p.runs is None or not p.runs.sigma2 > 0:
        return []
    need = _runs_needed(p, effect, target, alpha)
    if need <= min(p.runs.runs_a, p.runs.runs_b) or 2 * need > 10_000:
        return []
    return [int(round(2 * need * p.runs.epochs_per_run))]


def _runs_limit_warning(p: _Pieces, rows: list[dict], effect: float, target: float, alpha: float) -> ResultWarning:
    """Rows no number of questions reaches: the runs per system that would (``2 z^2 sigma2_run /
    effect^2 < R``)."""
    need = _runs_needed(p, effect, target, alpha)
    per_run = p.runs.epochs_per_run
    return ResultWarning("runs_limit", f"with {', '.join(str(r['runs']) for r in rows)} run(s) per system no number of "
                         f"questions detects {effect:g} at power {target:g}: the between-run variance alone "
                         f"(sigma2_run = {p.runs.sigma2:.3g}) keeps the SE too large; it takes at least {need} runs per "
                         f"system (epochs={int(need * per_run)} in questions_needed)")


def _estimates(p: _Pieces) -> pd.DataFrame:
    rows = [("mean_a", p.mean_a), ("mean_b", p.mean_b), ("var_between", p.var_between), ("within_a", p.within_a),
            ("within_b", p.within_b), *p.pilot.items()]
    if p.runs is not None:
        r = p.runs
        rows += [("sigma2_run", r.sigma2), ("run_pretest_p", r.p_value), ("runs_a", r.runs_a), ("runs_b", r.runs_b),
                 ("epochs_per_run", r.epochs_per_run), ("run_shrink", r.shrink)]
    return pd.DataFrame(rows, columns=["quantity", "value"])


def questions_needed(
    pilot: Any = None,
    effect: float = 0.03,
    *,
    target: float = 0.8,
    alpha: float = 0.05,
    epochs: int | Sequence[int] | None = None,
    metric: str = "acc",
    systems: Sequence[str] | None = None,
    format: str = "auto",  # noqa: A002 - read_eval_logs' name
    mean: float | Sequence[float] | None = None,
    sd: float | Sequence[float] | None = None,
    correlation: float | None = None,
    within_variance: float | Sequence[float] | None = None,
    n_sim: int = 1000,
    random_state: Any = None,
) -> QuestionsNeededResult:
    """Questions (and epochs) needed to detect a difference of ``effect`` between two systems.

    Parameters
    ----------
    pilot : a pilot evaluation of the two systems: what :func:`mixedeval.read_eval_logs` reads
        (log paths, directories, a ``{system: path}`` dict, a long score table), an
        :class:`~mixedeval.EvalLogs`, or an evaluation design
        (:class:`~mixedeval.workflows.logs.design.EvalDesign`, e.g. ``compare_logs(...).design``). Omit it to give the inputs by hand (``mean``, ``sd``,
        ``correlation``, ``within_variance``).
    effect : the difference to detect, in score units (0.03 is 3 accuracy points).
    target : the power wanted; ``alpha``: the two-sided test level.
    epochs : numbers of epochs K (samples of a question per system) to plan for (default: 1 and
        the pilot's epochs; by hand 1). With a pilot whose runs carry a between-run variance, K
        samples come from K / E runs per system (E epochs per run; see the module docstring).
    metric, systems, format : the pilot's metric, its two systems ``(a, b)`` (needed when it has
        more than two) and format (as :func:`mixedeval.read_eval_logs`).
    mean : by hand, the systems' mean scores (one number for both, or a pair); for 0/1 scores
        it gives ``sd = sqrt(p (1 - p))``.
    sd : by hand, the SD of one system's score on a question with one epoch (number or pair).
    correlation : by hand, the correlation of the two systems' scores on the same question
        (default 0: Miller's unpaired formula).
    within_variance : by hand, ``E sigma2_i`` per system (the average variance of a question's
        score across epochs), needed for epochs > 1.
    n_sim, random_state : simulations per size in the Monte-Carlo check (0: closed form only)
        and their seed (the same draws for every size of one K).

    Returns a :class:`QuestionsNeededResult` whose ``table`` has, per number of epochs, the
    closed form's n (Miller 2024, section 5) and the simulation's n side by side (see the
    module docstring for both).
    """
    eff, target, alpha, ks, n_sim = _check_args(effect, target, alpha, epochs, n_sim)
    hand = any(x is not None for x in (mean, sd, correlation, within_variance))
    if pilot is not None and hand:
        raise DataError("give a pilot or the inputs by hand (mean, sd, correlation, within_variance), not both")
    if pilot is None:
        ks = ks or [1]
        pieces, names, source = _pieces_by_hand(mean, sd, correlation, within_variance, ks), ("a", "b"), "by hand"
    else:
        s, names, warns, runs = _pilot_scores(pilot, metric, systems, format)
        pieces, source = _pieces_from_pilot(s, names, warns, runs), "pilot"
        one_epoch = not math.isfinite(pieces.within_a)  # no within-question variance: only K = 1 can be planned
        ks = ks or sorted({1} if one_epoch else {1, int(round(pieces.pilot["epochs_pilot"])),
                                                 *_enough_runs(pieces, eff, target, alpha)})
    ss = seed_sequence(random_state)
    rows, searched = [], []
    for k in ks:
        r, sr = _rows_for(pieces, k, eff, target, alpha, n_sim, ss, n_sim > 0)
        rows += r
        searched += sr
    ws = list(pieces.warnings)
    missing = [r["epochs"] for r in rows if r["method"] == SIMULATION and math.isnan(r["n_questions"])
               and not math.isnan(r["power_at_closed_form_n"])]
    limited = [r for r in rows if r["method"] == CLOSED_FORM and math.isnan(r["n_questions"])
               and math.isfinite(_var_for(pieces, r["epochs"]))]
    if limited:
        ws.append(_runs_limit_warning(pieces, limited, eff, target, alpha))
    if missing:
        ws.append(ResultWarning("target_not_reached", f"the simulation did not reach power {target:g} with up to 16 "
                                f"times the closed-form n (epochs {missing})"))
    if 0 < n_sim < 100:
        ws.append(ResultWarning("few_simulations", f"only {n_sim} simulations per size: the simulated power is rough"))
    prov = {"function": "questions_needed", "closed_form": "Miller (2024) arXiv:2411.00640 section 5",
            "simulation": "numpy Monte-Carlo of the paired question-level t test", "n_sim": n_sim,
            "random_state": random_state if isinstance(random_state, int) else None,
            "seed_entropy": str(ss.entropy), "metric": metric if pilot is not None else None}
    return QuestionsNeededResult(
        table=pd.DataFrame(rows, columns=TABLE_COLUMNS),
        searched=pd.DataFrame(searched, columns=["epochs", "n_questions", "n_rejected", "n_sim", "power", "conf_low",
                                                 "conf_high"]),
        estimates=_estimates(pieces), effect=eff, target=target, alpha=alpha, systems=tuple(names),
        metric=metric if pilot is not None else None, source=source, n_sim=n_sim,
        warnings=dedupe_warnings(ws), provenance=prov)


__all__ = ["QuestionsNeededResult", "closed_form_power", "closed_form_questions", "questions_needed"]
