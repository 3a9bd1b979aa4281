"""The mixedeval command line.

Subcommands: check (R, rpy2 and the R packages), demo (the full analysis of a bundled data set,
written as an HTML report; demo llm: three LLMs compared from bundled Inspect logs), fit (a mixed
model over a CSV, Parquet or JSON file), compare (likelihood-ratio tests of nested models), power
(power by simulation), bootstrap (hierarchical paired bootstrap), vca (variance components and
reliability), disparity (language disparity metrics), compare-logs (systems compared from
evaluation-harness logs), summarize (Inspect-style means, standard errors and intervals per task
and system, paired tests of every two systems), preferences (Bradley-Terry strengths of models
from pairwise judgments: arena battles, LLM judges), irt (item response theory: item difficulty and
discrimination with flags, abilities with intervals). DATA is a file (.csv, .tsv, .parquet, .json) or the
name of a bundled data set. Tables go to stdout (--json: machine-readable), progress to stderr
(--quiet silences it). Errors print one line "mixedeval: error: ..." to stderr and exit with status
2 (1 for an internal error); with --json stdout then holds {"error": <message>, "kind": <exception
class>}. Ctrl-C stops a computation, R's included, and exits with status 130.

The first two paragraphs above are the help text of ``mixedeval --help``. This module imports
only the standard library and mixedeval's light modules (the error classes, the option names of
:mod:`mixedeval.inference._options`): the parser and the help print at once. Each subcommand's
handler lives in :mod:`mixedeval._cli_commands` (pandas, numpy, R), imported when that
subcommand runs (``tests/test_cli_startup.py``, ``benchmarks/bench_cli_startup.py``).

Every answer is printed by :mod:`mixedeval._cli_answer` (one printer), and every message the
command line prints -- warnings, errors, notes, verdicts -- passes through :func:`in_cli_terms`,
which writes the library's Python-argument advice (``higher_is_better=False``, ``run=``,
``columns={'run': ...}``, ``df.groupby(...)``) as the subcommand's flags.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from .errors import MixedEvalError, UsageError
from .inference._options import FAMILIES, GLMM_OPTIMIZERS

EXIT_USAGE = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a process stopped by Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM
OPTIMIZERS = ["nloptwrap", "bobyqa", "Nelder_Mead"]
#: the statistics of ``bootstrap --statistic`` (the names of mixedeval.resampling._stats.STATISTICS, which
#: imports numpy; tests/test_cli_startup.py checks that the two agree)
BOOTSTRAP_STATISTICS = ("mean", "accuracy", "exact_match", "f1", "bleu", "chrf", "precision", "recall",
                        "precision_micro", "recall_micro", "f1_micro", "precision_macro", "recall_macro", "f1_macro")


class _Parser(argparse.ArgumentParser):
    """argparse whose errors raise :class:`UsageError` (with a ``--help`` hint) instead of
    exiting, so that :func:`main` reports them like every other error (one stderr line, exit 2,
    the JSON error object with ``--json``)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _fail(exc: BaseException, message: str, as_json: bool, label: str = "error: ") -> None:
    """Report an error: one line on stderr; with ``--json`` also ``{"error", "kind"}`` on stdout
    (so a machine reader never gets an empty stdout)."""
    print(f"mixedeval: {label}{message}", file=sys.stderr)
    if as_json:
        json.dump({"error": message, "kind": type(exc).__name__}, sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()


def _wants_json(argv: Sequence[str]) -> bool:
    """Whether ``--json`` (or an abbreviation argparse accepts) is among the options, for errors
    raised before the arguments are parsed."""
    opts = list(argv)[: list(argv).index("--")] if "--" in argv else list(argv)
    return any(len(a) >= 3 and "--json".startswith(a) for a in opts)


def _check_args(args: argparse.Namespace) -> None:
    """Combinations argparse cannot express; raises :class:`UsageError`.

    ``--n-sim`` feeds the report's residual diagnostics (``demo`` always writes the report): a
    count below the diagnostics' minimum would silently leave that part out, so it is refused
    before any data is read.
    """
    n_sim = getattr(args, "n_sim", None)
    if n_sim is None or not (getattr(args, "report", None) or args.command == "demo"):
        return
    from .diagnostics.core import MIN_SIMULATIONS  # noqa: PLC0415 - numpy and pandas: only when a report is asked for

    if n_sim < MIN_SIMULATIONS:
        raise UsageError(f"--n-sim {n_sim}: the report's residual diagnostics need at least {MIN_SIMULATIONS} "
                         f"simulations (250 recommended) (see 'mixedeval {args.command} --help')")


# ------------------------------------------------------------------------- the CLI's words
#: a Python form followed by its command-line form in parentheses: "columns={'run': 'seed'} (CLI --run seed)"
_PY_THEN_CLI = re.compile(r"(?:``)?[A-Za-z_][\w.]*=(?:\{[^{}]*\}|'[^']*'|\"[^\"]*\"|[^\s,;)]+)?(?:``)? "
                          r"\((?:CLI|on the command line):? ([^)]*)\)")
#: pandas advice ("average the duplicates first (df.groupby([...]).mean())"): the CLI reads a file
_GROUPBY = re.compile(r" ?\(?df\.groupby\([^()]*\)(?:\.mean\(\))?\)?")
#: "columns={'run': 'seed'}" / "columns={'item': '<your column>'}" / "columns={'epoch': ...}"
_COLUMNS = re.compile(r"(?:``)?columns=\{\s*['\"](\w+)['\"]\s*:\s*('[^']*'|\"[^\"]*\"|\.\.\.)\s*\}(?:``)?")
#: a Python keyword argument in a message: name=value, name= (value optional), in back-quotes or not
_KWARG = re.compile(r"(?<![\w.\-=])(?:``)?([a-z_][a-z0-9_]*)=(True|False|None|'[^']*'|\"[^\"]*\"|<[^>]*>|"
                    r"[A-Za-z0-9_.\-]+)?(?:``)?")
#: Python arguments whose command-line option has another name, per subcommand ("" = every subcommand)
_RENAMED = {"compare-logs": {"system": "system_from"}, "": {"columns": ""}}


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The subcommand's options by destination (``run`` -> the ``--run`` action)."""
    return {a.dest: a for a in parser._actions if a.option_strings and a.dest != "help"}  # noqa: SLF001


def _flag(action: argparse.Action) -> str:
    longs = [o for o in action.option_strings if o.startswith("--")]
    return (longs or action.option_strings)[0]


def _kwarg_words(m: re.Match, opts: dict[str, argparse.Action], command: str) -> str:
    name, value = m.group(1), m.group(2)
    if name == "higher_is_better":
        if "higher_is_better" not in opts:
            return "(the direction is fixed for this command)"
        return {"True": "--higher-is-better", "False": "--lower-is-better"}.get(
            str(value), "--higher-is-better / --lower-is-better")
    dest = {**_RENAMED[""], **_RENAMED.get(command, {})}.get(name, name)
    action = opts.get(dest)
    if action is None:  # no such option here: the text stays (it is not a Python argument of this command)
        return m.group(0)
    flag = _flag(action)
    if action.nargs == 0:  # a switch (store_true)
        return f"without {flag}" if value == "False" else flag
    plain = (value or "").strip("'\"")
    if value in (None, "None") or plain.startswith("<") or plain == "...":
        return f"{flag} {action.metavar or dest.upper()}"
    return f"{flag} {plain}"


def in_cli_terms(message: str, parser: argparse.ArgumentParser | None, command: str = "") -> str:
    """``message`` (a warning, error, note or verdict written for the Python API) in the command
    line's words: a Python form followed by its command-line form in parentheses keeps the
    latter; ``columns={'run': 'seed'}`` becomes ``--run seed``; ``higher_is_better=False``
    ``--lower-is-better``; ``df.groupby(...).mean()`` advice says to average the duplicates in
    the file; any ``name=value`` whose ``name`` is an option of the subcommand (``run=`` ->
    ``--run COLUMN``, ``drop_missing=True`` -> ``--drop-missing``) becomes that option. Other
    text is left as it is."""
    if not message or parser is None:
        return message
    opts = _options(parser)
    text = _PY_THEN_CLI.sub(lambda m: m.group(1), message)
    text = _GROUPBY.sub(" in the file", text)

    def columns(m: re.Match) -> str:
        key, value = m.group(1), m.group(2)
        action = opts.get(key)
        if action is None:
            return f"a column called {key}"
        shown = action.metavar or key.upper() if value == "..." or value.strip("'\"").startswith("<") \
            else value.strip("'\"")
        return f"{_flag(action)} {shown}"

    text = _COLUMNS.sub(columns, text)
    return _KWARG.sub(lambda m: _kwarg_words(m, opts, command), text)


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser | None:
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)  # noqa: SLF001
    return None if sub is None or command is None else sub.choices.get(command)


def cli_words(parser: argparse.ArgumentParser, command: str | None) -> Callable[[str], str]:
    """The translation step of ``command``'s output (:func:`in_cli_terms` with its options),
    handed to the handler as ``args.cli_words`` and applied to every message it prints."""
    sub = _subparser(parser, command)
    return lambda text: in_cli_terms(text, sub, command or "")


# ---------------------------------------------------------------------------------- commands
def _command(name: str) -> Callable[[argparse.Namespace], int]:
    """The subcommand handler ``name`` of :mod:`mixedeval._cli_commands`, imported when it runs:
    that module loads pandas, numpy and the R-backed analysis, which ``--help`` never needs."""

    def run(args: argparse.Namespace) -> int:
        from . import _cli_commands  # noqa: PLC0415 - pandas, numpy, R: only for the subcommand that runs

        return getattr(_cli_commands, name)(args)

    run.__name__ = run.__qualname__ = name
    return run


cmd_check = _command("cmd_check")
cmd_fit = _command("cmd_fit")
cmd_power = _command("cmd_power")
cmd_compare = _command("cmd_compare")
cmd_bootstrap = _command("cmd_bootstrap")
cmd_compare_logs = _command("cmd_compare_logs")
cmd_summarize = _command("cmd_summarize")
cmd_vca = _command("cmd_vca")
cmd_disparity = _command("cmd_disparity")
cmd_demo = _command("cmd_demo")
cmd_preferences = _command("cmd_preferences")
cmd_judge = _command("cmd_judge")
cmd_pass_k = _command("cmd_pass_k")
cmd_horizon = _command("cmd_horizon")
cmd_bayes = _command("cmd_bayes")


# ------------------------------------------------------------------------------- judges
def _add_judge(sub: Any) -> None:
    g = sub.add_parser("judge", parents=[_common(data=False)],
                       help="LLM-judge scores corrected with a few human labels (PPI++), judge agreement and bias, "
                            "labelling budget",
                       description="Read judge scores (a score table, or evaluation logs such as Inspect AI's "
                                   "model_graded_qa / model_graded_fact) and people's labels on a random subset, and "
                                   "print the judge-corrected leaderboard and headline (prediction-powered inference: "
                                   "PPI++, PPI or Rogan-Gladen), the human-only and judge-only estimates beside them, "
                                   "the judge's agreement with people and its bias by system, and how many labels a "
                                   "target interval width or power needs.")
    g.add_argument("scores", nargs="+", help="score table (.csv, .parquet) with judge and human scores, or log files, "
                                             "directories or globs")
    g.add_argument("--labels", help="table of people's labels joined by sample id (with --label-* columns)")
    g.add_argument("--metric", help="the judge's metric in the logs (e.g. model_graded_qa)")
    g.add_argument("--format", default="auto", choices=["auto", "lm-eval", "inspect", "helm", "table"],
                   help="format of the scores (default auto: from the files)")
    for opt, default in (("--judge-score", "judge_score"), ("--human-score", "human_score"), ("--system", "system"),
                         ("--item", "item")):
        g.add_argument(opt, default=default, help=f"column name (default {default})")
    for opt in ("--epoch", "--judge", "--cluster", "--task"):
        g.add_argument(opt, help="column name (optional)")
    g.add_argument("--label-id", default="id", help="sample-id column of --labels (default id)")
    g.add_argument("--label-system", help="system column of --labels")
    g.add_argument("--label-epoch", help="epoch column of --labels")
    g.add_argument("--label-task", help="task column of --labels")
    g.add_argument("--method", default="ppi++", choices=["ppi++", "ppi", "rogan-gladen"],
                   help="ppi++ (default: power-tuned prediction-powered inference), ppi, or rogan-gladen (0/1 judge)")
    g.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    g.add_argument("--reference", help="reference system of the headline")
    _direction_args(g)
    g.add_argument("--width", type=float, help="labelling budget: the interval width wanted for the headline difference")
    g.add_argument("--power", type=float, help="labelling budget: the power wanted (with --delta)")
    g.add_argument("--delta", type=float, help="the difference to detect (default: the headline's)")
    g.add_argument("--cost-ratio", type=float, help="cost of a human label / cost of a judge call (plans both)")
    g.add_argument("--no-agreement", action="store_true", help="skip the agreement and bias tables")
    g.add_argument("--n-resamples", type=int, default=1000, help="cluster-bootstrap replicates of the agreement "
                                                                  "intervals (default 1000)")
    g.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    g.set_defaults(func=cmd_judge)
cmd_irt = _command("cmd_irt")


# --------------------------------------------------------------------------------------- irt
def _add_irt(sub: Any) -> None:
    g = sub.add_parser("irt", parents=[_common()],
                       help="item response theory: item difficulty and discrimination with flags, abilities",
                       description="Fit a Rasch (lme4::glmer) or 2PL (glmmTMB reduced rank) item response model to "
                                   "the 0/1 answers of several systems and print the items (difficulty, "
                                   "discrimination, intervals, flags: no information, mis-keyed, misfit, DIF) and "
                                   "the systems' abilities with intervals and rank intervals.")
    g.add_argument("data", help="a long score table (system, item, score columns), a wide table (one row per "
                                "system, one 0/1 column per item) or a folder of evaluation logs")
    g.add_argument("--model", default="rasch", choices=["rasch", "rasch_fixed", "2pl"],
                   help="rasch (default: random items, glmer), rasch_fixed (fixed items) or 2pl (glmmTMB)")
    g.add_argument("--score", default="score", help="score column (0/1; default 'score')")
    g.add_argument("--system", default="system", help="system column (default 'system')")
    g.add_argument("--item", default="item", help="item column (default 'item')")
    g.add_argument("--trials", help="column of the number of trials when the score counts correct answers")
    g.add_argument("--metric", help="the metric to use from logs holding several")
    g.add_argument("--dif", help="column of groups (e.g. language) for per-item DIF tests")
    _direction_args(g)
    g.add_argument("--reference", help="system the headline compares the best other system with")
    g.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    g.add_argument("--n-sim", type=int, default=200, help="simulations of the item-fit test (default 200; 0 skips)")
    g.add_argument("--random-state", type=int, default=0, help="seed of the item-fit simulations (default 0)")
    g.add_argument("--flagged", action="store_true", help="print only the flagged items")
    g.set_defaults(func=cmd_irt)


# ------------------------------------------------------------------------------- preferences
def _add_preferences(sub: Any) -> None:
    g = sub.add_parser("preferences", parents=[_common(data=False)],
                       help="Bradley-Terry strengths and Elo ratings from pairwise judgments (arena battles)",
                       description="Read judged pairwise comparisons (a Chatbot Arena table, AlpacaEval "
                                   "annotations, MT-Bench or Arena-Hard judgments) and print each model's strength "
                                   "and Elo rating with intervals from a bootstrap over prompts, each judge's "
                                   "position bias, and rank intervals with tie groups.")
    g.add_argument("battles", help="battle file (.csv, .json, .jsonl, .parquet) or a folder of judgment files "
                                   "(arena-hard-auto's model_judgment/<judge>/: one .jsonl per model)")
    g.add_argument("--format", default=None, choices=["arena", "alpacaeval", "mtbench", "arenahard"],
                   help="file format (default: recognised from the fields)")
    g.add_argument("--drop-failed", action="store_true",
                   help="leave out judgments the judge did not give (MT-Bench 'error', null Arena-Hard scores, null "
                        "AlpacaEval preferences) instead of stopping")
    g.add_argument("--baseline", help="the baseline model of Arena-Hard v0.1 judgments (their records name none: "
                                      "the config's baseline_model, e.g. gpt-4-0314)")
    g.add_argument("--strong-weight", type=float, default=3.0,
                   help="weight of an Arena-Hard '>>' verdict (default 3, Arena-Hard's own scoring)")
    g.add_argument("--prompt", help="column naming the prompt (default: 'prompt' when the file has one)")
    g.add_argument("--judge", help="column naming the judge (default: 'judge' when the file has one; '' = no "
                                   "judge column)")
    g.add_argument("--no-judge", action="store_true", help="ignore the judge column (one set of judge parameters)")
    g.add_argument("--min-judge-battles", type=float, default=50,
                   help="judges with fewer battles share one set of judge parameters (default 50; 0: every judge "
                        "its own)")
    g.add_argument("--weight", help="column of battle weights (default: 'weight' when the file has one, as the "
                                    "reader writes it; '' = every row counts once)")
    g.add_argument("--style", action="store_true",
                   help="style control: add the Chatbot Arena conv_metadata covariates (style_length, "
                        "style_headers, style_lists, style_bold) that the file has")
    g.add_argument("--reference", help="model at strength 0 (default: the benchmark's baseline when the file "
                                       "names one, else the first model by name)")
    g.add_argument("--position", help="column saying which answer was shown first (a_first / b_first); default: "
                                      "'position' when the file has one, else model_a was shown first")
    g.add_argument("--ties", default="davidson", choices=["davidson", "half", "drop"],
                   help="davidson (default): a tie model with a leniency per judge; half: half a win each "
                        "(FastChat); drop: leave ties out")
    g.add_argument("--no-position-bias", action="store_true", help="do not estimate the judges' position bias")
    g.add_argument("--covariate", action="append", help="column of a per-battle difference a - b, e.g. answer "
                                                         "length (style control; repeatable)")
    g.add_argument("--anchor", help="model whose Elo rating is --anchor-rating (default: the mean rating is)")
    g.add_argument("--anchor-rating", type=float, default=1000.0, help="Elo of the anchor (default 1000)")
    g.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    g.add_argument("--n-resamples", type=int, default=1000, help="bootstrap replicates over prompts (default 1000; "
                                                                  "0: intervals from the likelihood alone)")
    g.add_argument("--resample-judges", action="store_true", help="resample the judges too")
    _add_arena_intervals(g)
    g.add_argument("--prompt-effect", default=None, choices=["model", "random"],
                   help="model: a random effect per model and prompt (each model's own advantage on a prompt); "
                        "random: a prompt random intercept (lme4; both need --ties drop)")
    g.add_argument("--judge-effect", default="fixed", choices=["fixed", "random"],
                   help="random: the judges' position bias as a random effect (lme4::glmer; needs --ties drop)")
    g.add_argument("--random-state", type=int, default=0, help="seed of the bootstrap (default 0)")
    g.add_argument("--executor", type=int, default=None, metavar="N",
                   help="run the bootstrap on N local worker processes (the same numbers as in one process)")
    g.add_argument("--win-probabilities", action="store_true", help="also print every pair's win probability")
    g.add_argument("--no-ranks", action="store_true", help="skip the simultaneous rank intervals")
    g.add_argument("--ranks", action="store_true", help="compute the rank intervals even beyond 500 models (skipped "
                                                       "there by default: their cost grows with the pairs)")
    g.add_argument("--letters", default="auto", choices=["auto", "yes", "no"],
                   help="compact letter display of the rank intervals (auto: up to 100 models)")
    _add_arena_audit(g)
    g.set_defaults(func=cmd_preferences)


def _add_arena_intervals(g: Any) -> None:
    """``preferences``: LMArena's sandwich intervals, clustering and reweighting (issue 40)."""
    g.add_argument("--interval", default="bootstrap", choices=["bootstrap", "sandwich"],
                   help="bootstrap (default: --n-resamples replicates) or sandwich (the CLT for M-estimators, no "
                        "resampling; clustered by --cluster)")
    g.add_argument("--cluster", default=None,
                   help="units the intervals treat as independent, comma-separated: prompt, judge (voter is an "
                        "alias: LMArena's word for the judge), judge,prompt (both: Cameron-Gelbach-Miller two-way "
                        "sandwich, or prompts and judges drawn independently), battle (sandwich only: every battle "
                        "independent, arena-rank's). Default: prompt when there is a prompt column")
    g.add_argument("--reweight", default=None, choices=["pair"],
                   help="pair: each battle weighs 1 / max(battles of its pair, --min-pair-battles) (LMArena's "
                        "inverse pair frequency)")
    g.add_argument("--min-pair-battles", type=float, default=50, help="floor of the pair counts of --reweight pair "
                                                                       "(default 50, arena-rank's)")
    g.add_argument("--estimator", default="ml", choices=["ml", "arena-rank"],
                   help="ml (default) or arena-rank: arena-rank 0.1.1's model exactly (ties half, no judge terms, "
                        "standardised ridge-penalised covariates, its sandwich with --cluster battle)")


def _add_arena_audit(g: Any) -> None:
    """``preferences --robustness``: votes to flip and the audit's probes (issue 40)."""
    g.add_argument("--robustness", action="store_true",
                   help="audit the leaderboard (mixedeval.arena_audit): the fewest votes whose removal flips the #1 "
                        "and each pair of neighbours (influence approximation confirmed by exact refits) and the "
                        "probes' verdicts (connectivity, coverage, intransitivity, position bias, tie convention, "
                        "annotator influence, separation of neighbours)")
    g.add_argument("--pair", nargs=2, action="append", metavar=("MODEL_A", "MODEL_B"),
                   help="with --robustness: also the votes that flip this pair (repeatable)")
    g.add_argument("--n-sim", type=int, default=200,
                   help="with --robustness: simulations of the intransitivity probe (default 200)")


# ------------------------------------------------------------------------------------ parser
def _common(json_report: bool = True, data: bool = True) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output on stdout")
    p.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress messages or bars")
    if data:
        p.add_argument("--where", action="append", metavar="COL=VALUE",
                       help="keep only rows where COL equals VALUE (repeatable)")
    if json_report:
        p.add_argument("--report", metavar="HTML", help="also write the self-contained HTML report to this path")
    return p


def _data_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="data file (.csv, .tsv, .parquet, .json) or a bundled data set name "
                                "(kreutzer_ter, kreutzer_annotation, kreutzer_hyperparameters, hu2025_records)")


def _model_options(p: argparse.ArgumentParser, ml_help: str) -> None:
    """Options of the commands that fit mixed models (``fit``, ``compare``)."""
    p.add_argument("--ml", action="store_true", help=ml_help)
    p.add_argument("--optimizer", default=None, choices=sorted({*OPTIMIZERS, *GLMM_OPTIMIZERS}),
                   help="default: nloptwrap for linear mixed models, bobyqa for GLMMs")
    p.add_argument("--factor", action="append", help="numeric column to treat as a factor (repeatable)")
    p.add_argument("--n-sim", type=int, default=250, help="simulations for the report's residual diagnostics")
    p.add_argument("--random-state", type=int, default=None, metavar="INT",
                   help="R's set.seed for the draws (the report's simulated residuals; compare's parametric "
                        "bootstrap); default: the Python API's defaults")


def _add_demo(sub: Any) -> None:
    d = sub.add_parser("demo", parents=[_common(json_report=False, data=False)],
                       help="full analysis of a bundled data set; writes the HTML report",
                       description="The complete mixed-model analysis of the bundled Kreutzer TER data: design, "
                                   "REML fit, likelihood-ratio test, ANOVA with partial eta-squared, EMMs and Holm "
                                   "contrasts, R2, ICC, residual diagnostics, paired bootstrap and the variance "
                                   "components of the annotation study, printed as tables and written as an HTML "
                                   "report. 'mixedeval demo llm': three mock LLMs compared from the bundled Inspect "
                                   "AI logs (two tasks of 60 questions in clusters of 3, 3 epochs; "
                                   "scripts/make_llm_example.py) with me.compare_logs(..., cluster='cluster'): the "
                                   "headline difference with its interval, all pairs, and the HTML report.")
    # no choices=: after an unknown option (demo --n-boot 5) argparse must say "unrecognized arguments", not
    # "invalid choice: '5'"; cmd_demo checks the value
    d.add_argument("example", nargs="?", default="mt", metavar="{mt,llm}",
                   help="mt: machine translation, the bundled Kreutzer TER data (default); llm: LLMs compared from "
                        "the bundled Inspect AI logs")
    d.add_argument("--dataset", default=None, help="bundled data set of the mt demo (default: kreutzer_ter)")
    d.add_argument("--out", "--report", dest="out", default=None, metavar="HTML",
                   help="report path (default: mixedeval-report.html; mixedeval-llm-report.html for llm)")
    d.add_argument("--n-sim", type=int, default=250, help="simulations for the residual diagnostics (default 250)")
    d.add_argument("--n-resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    d.add_argument("--random-state", type=int, default=123, metavar="INT",
                   help="random state of the bootstrap and of the diagnostics' simulations (R's set.seed; "
                        "default 123)")
    d.set_defaults(func=cmd_demo)


def _add_fit(sub: Any, common: argparse.ArgumentParser) -> None:
    f = sub.add_parser("fit", parents=[common], help="fit a mixed model: linear (lmerTest), GLMM (--family), "
                       "ordinal (--ordinal)",
                       description="Fit a linear mixed model and print the fixed and random effects; optional F "
                                   "tests, EMMs with pairwise contrasts, and the HTML report.")
    _data_arg(f)
    f.add_argument("--formula", required=True, help='lme4 formula, e.g. "ter ~ system + (1|sentence_id)"')
    _model_options(f, "fit by maximum likelihood (default REML)")
    f.add_argument("--family", default="gaussian", choices=["gaussian", *FAMILIES],
                   help="response family: gaussian (lmerTest::lmer, default) or a GLMM family (lme4::glmer, "
                        "glmer.nb, glmmTMB), e.g. binomial for 0/1 outcomes")
    f.add_argument("--ordinal", action="store_true",
                   help="ordered ratings: a cumulative link mixed model (ordinal::clmm)")
    f.add_argument("--link", default=None, help="link function of --family / --ordinal (default: the canonical one)")
    f.add_argument("--nagq", type=int, default=1, help="quadrature points of a GLMM / clmm (1 = Laplace; 0 = fast)")
    f.add_argument("--df-method", default="satterthwaite", choices=["satterthwaite", "kenward-roger", "asymptotic"],
                   help="denominator df of the t and F tests and of the EMMs (default satterthwaite; asymptotic: z)")
    f.add_argument("--anova", action="store_true", help="add the F-test table with partial eta-squared")
    f.add_argument("--anova-type", type=int, default=3, choices=[1, 2, 3],
                   help="sums of squares of --anova: type 1, 2 or 3 (default 3)")
    f.add_argument("--emmeans", metavar="FACTOR", help="factor for estimated marginal means and pairwise contrasts")
    f.add_argument("--adjust", default="holm", help="p-value adjustment for contrasts (default holm)")
    _direction_args(f)  # the means' leaderboard and headline (and the report's answer) follow it
    f.set_defaults(func=cmd_fit)


def _add_power(sub: Any) -> None:
    w = sub.add_parser("power", parents=[_common()], help="power, power curves, sample size, minimum detectable effect",
                       description="Power of a test by simulation, from a design (--systems, --items, ...) or a "
                                   "pilot fit (DATA --formula): one power (--effect), a curve (--values), the "
                                   "sample size (--sample-size) or the minimum detectable effect (--mde).")
    w.add_argument("data", nargs="?", help="pilot data (file or bundled data set); omit to describe a design")
    w.add_argument("--formula", help="pilot model formula (with DATA)")
    for name, default, what in (("systems", 2, "systems"), ("items", 100, "items (per language)"),
                                ("runs", 1, "runs per system"), ("raters", 0, "raters"), ("languages", 0, "languages")):
        w.add_argument(f"--{name}", type=int, default=default, help=f"design: number of {what} (default {default})")
    w.add_argument("--variance", action="append", metavar="COMPONENT=V",
                   help="design: a variance component, e.g. item=0.04 residual=0.01 (repeatable)")
    w.add_argument("--family", default="gaussian", choices=["gaussian", "binomial"],
                   help="response: gaussian (linear mixed model, default) or binomial (0/1 scores, GLMM)")
    w.add_argument("--intercept", type=float, default=0.0, help="design: the reference system's mean (binomial: log-odds)")
    w.add_argument("--effect", type=float, action="append",
                   help="the tested coefficient (repeat: one per non-reference system)")
    w.add_argument("--term", default=None, help="tested fixed-effect term of a pilot fit (default system)")
    w.add_argument("--test", default="lrt", choices=["lrt", "satterthwaite", "kenward-roger", "wald_z", "sign_flip",
                                                     "approximate_randomization", "paired_bootstrap"],
                   help="the test whose power is simulated (default lrt: likelihood-ratio test of the term)")
    w.add_argument("--alpha", type=float, default=0.05, help="significance level of the test (default 0.05)")
    w.add_argument("--n-sim", type=int, default=200, help="simulations per power estimate (default 200)")
    w.add_argument("--random-state", type=int, default=None, metavar="INT",
                   help="seed of the simulations (R's set.seed; default: a fresh one, recorded in the output)")
    w.add_argument("--along", default="items", help="factor extended by --values / --sample-size (default items)")
    w.add_argument("--values", metavar="N1,N2,...", help="power curve at these sizes of --along")
    w.add_argument("--target", "--power", dest="target", type=float, default=0.8, help="target power (default 0.8)")
    w.add_argument("--sample-size", action="store_true", help="smallest size of --along reaching --target")
    w.add_argument("--mde", action="store_true", help="minimum detectable effect at --target")
    w.add_argument("--from-logs", nargs="+", metavar="PATH",
                   help="questions needed from pilot logs: Miller's closed form beside a simulation, per --epochs")
    w.add_argument("--metric", default="acc", help="--from-logs: the metric (default acc; Inspect: the scorer name)")
    w.add_argument("--points", type=float, help="--from-logs: the difference to detect in points (3 = 0.03)")
    w.add_argument("--epochs", metavar="K1,K2,...", help="--from-logs: epochs to plan for (default 1 and the pilot's)")
    w.add_argument("--pair", metavar="A,B", help="--from-logs: the two systems (needed when the logs have more)")
    w.add_argument("--system-from", action="append", metavar="FIELD",
                   help="--from-logs: a log field that defines the systems (repeatable), as in compare-logs")
    w.set_defaults(func=cmd_power)


def _add_compare(sub: Any, common: argparse.ArgumentParser) -> None:
    m = sub.add_parser("compare", parents=[common], help="likelihood-ratio tests of nested mixed models",
                       description="Fit two or more nested models and compare them by likelihood-ratio tests "
                                   "(mixedeval.compare: ML refits when the fixed effects differ).")
    _data_arg(m)
    m.add_argument("--formula", action="append", required=True,
                   help="model formula; give two or more, smallest model first")
    _model_options(m, "fit by maximum likelihood (default REML; refits are automatic)")
    m.add_argument("--name", action="append", help="row label of each model, in --formula order (repeatable)")
    m.add_argument("--refit", default="auto", choices=["auto", "ml", "keep"],
                   help="auto: ML when the fixed effects differ, REML kept when only random effects differ "
                        "(default); ml: always ML; keep: compare the fits as they are")
    m.add_argument("--n-resamples", type=int, default=0, metavar="N",
                   help="add a parametric-bootstrap p-value (pbkrtest::PBmodcomp) with N samples")
    m.set_defaults(func=cmd_compare)


def _add_vca(sub: Any, common: argparse.ArgumentParser) -> None:
    v = sub.add_parser("vca", parents=[common], help="variance components and reliability (G theory)",
                       description="Random-effects-only model (REML) with one intercept per facet; components, "
                                   "phi and G coefficients, D study.")
    _data_arg(v)
    v.add_argument("--score", required=True, help="numeric response column")
    v.add_argument("--object", required=True, help="objects of measurement (e.g. sentence_id)")
    v.add_argument("--facet", action="append", help="facet column (repeatable), e.g. rater, occasion")
    v.add_argument("--interaction", action="append", metavar="A:B", help="extra interaction term (repeatable)")
    v.add_argument("--all-interactions", action="store_true", help="every two-way interaction of object and facets")
    v.add_argument("--nested", metavar="A/B", help="nested term, expanded as (1|A) + (1|A:B)")
    v.add_argument("--ml", action="store_true", help="fit by ML (default REML)")
    v.add_argument("--optimizer", default="nloptwrap", choices=OPTIMIZERS, help="lme4's optimizer (default nloptwrap)")
    v.add_argument("--size", action="append", metavar="FACET=N",
                   help="levels averaged over for the reliability coefficients (repeatable; default 1)")
    v.add_argument("--d-study", action="append", metavar="FACET=N1,N2,..",
                   help="D-study grid: sizes per facet (repeatable)")
    v.set_defaults(func=cmd_vca)


def _direction_args(g: Any) -> None:
    """--higher-is-better / --lower-is-better (default: from the metric's name)."""
    d = g.add_mutually_exclusive_group()
    d.add_argument("--higher-is-better", dest="higher_is_better", action="store_const", const=True, default=None,
                   help="higher scores are better (default: decided from the metric's name; unknown: higher, said "
                        "in the output)")
    d.add_argument("--lower-is-better", dest="higher_is_better", action="store_const", const=False,
                   help="lower scores are better (error rates, TER, loss)")


def _log_options(g: argparse.ArgumentParser) -> None:
    """The options of the commands that read evaluation logs and score tables: which fields define
    the systems, and a table's item, task, run and epoch columns."""
    g.add_argument("--system-from", action="append", metavar="FIELD",
                   help="a log field that defines the systems (repeatable; their values join into the name): model, "
                        "task_args or task_args.KEY, solver, plan, model_args[.KEY], tags, generation_config[.KEY]; "
                        "e.g. --system-from model --system-from task_args.cot. Default: the model name, split by the "
                        "fields its logs differ in, with a warning")
    g.add_argument("--item", metavar="COLUMN",
                   help="a score table's column naming the questions (items), when it is not called item, e.g. "
                        "--item sentence_id")
    g.add_argument("--task", metavar="COLUMN",
                   help="a score table's column naming the tasks (default: a column called task, else the file name)")
    g.add_argument("--run", metavar="COLUMN",
                   help="a score table's column naming the runs of a system (training seeds, repeated evaluations: "
                        "their variance enters the intervals), e.g. --run seed")
    g.add_argument("--epoch", metavar="COLUMN",
                   help="a score table's column numbering repeated samples of a question within one evaluation "
                        "(epochs: averaged within the question, never counted as runs)")


def _add_compare_logs(sub: Any) -> None:
    g = sub.add_parser("compare-logs", parents=[_common(data=False)],
                       help="compare systems from evaluation-harness logs (lm-eval, Inspect AI, HELM)",
                       description="Read evaluation logs (lm-evaluation-harness --log_samples output, Inspect AI "
                                   ".eval/.json logs, HELM run directories, or score tables), fit the binomial GLMM "
                                   "(0/1 scores) or the LMM (continuous scores) with an item random intercept, and "
                                   "add per-task and pooled contrasts and the paired bootstrap of the mean. The output "
                                   "opens with the paired difference in points, the accuracies with Inspect's "
                                   "intervals and how many questions the next run needs.")
    g.add_argument("paths", nargs="*", help="log files, directories (searched recursively) or globs")
    g.add_argument("--system", action="append", metavar="NAME=PATH",
                   help="name a system explicitly (repeatable; instead of PATH arguments)")
    _log_options(g)
    g.add_argument("--metric", required=True, help="metric to compare (e.g. acc, exact_match, an Inspect scorer)")
    g.add_argument("--format", default="auto", choices=["auto", "lm-eval", "inspect", "helm", "table"],
                   help="log format (default: recognised from the files)")
    g.add_argument("--analysis", default="auto", choices=["auto", "glmm", "lmm"],
                   help="the model-based check: auto (binomial GLMM for 0/1 scores, LMM otherwise), glmm or lmm; "
                        "implies --checks")
    g.add_argument("--trials", type=int, help="scores are proportions of this many attempts (k of n): binomial GLMM")
    g.add_argument("--reference", help="reference system: the headline is the best other system against it")
    _direction_args(g)
    g.add_argument("--cluster", help="column of the logs naming each question's cluster (e.g. an Inspect sample "
                                     "metadata field such as passage_id): clustered standard errors")
    g.add_argument("--adjust", default="holm", help="p-value adjustment (default holm)")
    g.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap replicates (default 10000)")
    g.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    g.add_argument("--random-state", type=int, default=0, help="seed of the bootstrap (default 0)")
    g.add_argument("--drop-missing", action="store_true", help="drop items missing for some system (with a warning)")
    g.add_argument("--effect", type=float, help="the next run's plan: the difference to detect, in score units "
                                               "(0.03 is 3 points; default: the size observed)")
    g.add_argument("--target", type=float, default=0.8, help="the next run's plan: the power wanted (default 0.8)")
    g.add_argument("--n-sim", type=int, default=1000, help="the next run's plan: simulations per size beside Miller's "
                                                           "closed form (0: closed form only; default 1000)")
    g.add_argument("--no-plan", action="store_true", help="skip the sample-size plan for the next run")
    g.add_argument("--checks", action="store_true",
                   help="also fit the mixed model (the model-based check: binomial GLMM or LMM, its likelihood-ratio "
                        "test, contrasts and estimated marginal means; starts R and takes seconds). Without it the "
                        "output is the headline, the accuracies, the paired bootstrap and the plan, which need no "
                        "model; --report, --analysis glmm/lmm and --trials imply it")
    g.set_defaults(func=cmd_compare_logs)


def _add_summarize(sub: Any) -> None:
    g = sub.add_parser("summarize", parents=[_common(data=False)],
                       help="per task and system: mean, stderr and intervals as Inspect AI computes them, and "
                            "paired tests of every two systems",
                       description="Read evaluation logs (Inspect AI, lm-eval, HELM, score tables) and print per "
                                   "task x system the mean of the epoch-averaged question scores, Inspect's "
                                   "stderr() and ci(), a Wilson interval for 0/1 scores (with --cluster also "
                                   "Inspect's clustered stderr), and per pair of systems the paired difference "
                                   "(Miller 2024) with the paired t test (the exact McNemar test beside it for 0/1 "
                                   "scores) and Holm-adjusted p. The output opens with the headline: the best system "
                                   "against the runner-up.")
    g.add_argument("paths", nargs="+", help="log files, directories (searched recursively) or globs")
    _log_options(g)
    g.add_argument("--metric", required=True, help="metric to summarize (an Inspect scorer, lm-eval acc, ...)")
    g.add_argument("--format", default="auto", choices=["auto", "lm-eval", "inspect", "helm", "table"],
                   help="log format (default: recognised from the files)")
    g.add_argument("--cluster", help="column of the logs naming each question's cluster (an Inspect sample "
                                     "metadata field): Inspect's clustered stderr(cluster=)")
    g.add_argument("--cluster-se", default=None, choices=["CR2"], help="also clubSandwich's CR2 clustered SE")
    g.add_argument("--reference", help="reference system: the headline is the best other system against it")
    _direction_args(g)
    g.add_argument("--adjust", default="holm", help="p-value adjustment over pairs x tasks (default holm)")
    g.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    g.add_argument("--sign-flip", action="store_true", help="add the sign-flip permutation p-value of each pair")
    g.add_argument("--n-resamples", type=int, default=10_000, help="sign-flip replicates (default 10000)")
    g.add_argument("--random-state", type=int, default=0, help="seed of the sign-flip test (default 0)")
    g.add_argument("--drop-missing", action="store_true", help="drop items missing for some system (with a warning)")
    g.set_defaults(func=cmd_summarize)


def _add_agentic(sub: Any) -> None:
    """``pass-k`` and ``horizon``: small agentic evaluations (:mod:`mixedeval.workflows.agentic`)."""
    g = sub.add_parser("pass-k", parents=[_common(data=False)],
                       help="pass@k and pass^k per system with intervals and paired differences",
                       description="Read attempts (Inspect AI logs: every epoch is an attempt, whatever the log's "
                                   "reducer; or a table with one row per system x task x attempt) and print pass@k "
                                   "(at least one of k attempts succeeds; Chen et al. 2021) or pass^k (all k succeed; "
                                   "tau-bench) per system, unbiased per task, with task-level t intervals "
                                   "(cluster-robust with --cluster), and the paired differences between systems.")
    g.add_argument("paths", nargs="+", help="log files, directories or globs, or one table (.csv, .parquet, .json)")
    g.add_argument("--k", type=int, required=True, help="the attempts of pass@k / pass^k (every task needs >= k)")
    g.add_argument("--kind", default="pass@k", choices=["pass@k", "pass^k", "both"], help="default pass@k")
    g.add_argument("--metric", help="the logs' scorer (or a long table's metric) to use")
    for opt, default in (("--score", "score"), ("--system", "system"), ("--item", "item")):
        g.add_argument(opt, default=default, help=f"a table's column (default {default})")
    for opt in ("--epoch", "--task", "--cluster"):
        g.add_argument(opt, metavar="COLUMN", help="a table's (or the logs') column (optional)")
    g.add_argument("--value", type=float, help="a score >= VALUE is a success (default: scores must be 0/1)")
    g.add_argument("--reference", help="reference system: the headline is the best other system against it")
    g.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    g.add_argument("--random-state", type=int, default=0, help="seed of the sign-flip check (default 0)")
    g.set_defaults(func=cmd_pass_k)
    h = sub.add_parser("horizon", parents=[_common()],
                       help="task-length time horizons (METR): 50%% / 80%% horizons per system with intervals",
                       description="Fit per system a logistic regression of success on log2 task length (METR, "
                                   "Kwa et al. 2025) and print the lengths at which the success probability is 50%% "
                                   "and 80%%, with hierarchical-bootstrap intervals (families, tasks, attempts), the "
                                   "ratios between systems and the sensitivity to regularisation and weighting.")
    h.add_argument("data", help="table with one row per system x task x attempt (.csv, .parquet, .json)")
    h.add_argument("--length", required=True, metavar="COLUMN", help="the task length column (e.g. human_minutes)")
    for opt, default in (("--success", "score"), ("--system", "system"), ("--item", "item")):
        h.add_argument(opt, default=default, help=f"column (default {default})")
    h.add_argument("--family", metavar="COLUMN", help="the task family column (bootstrapped first)")
    h.add_argument("--levels", type=float, nargs="+", default=[0.5, 0.8], help="success probabilities (default 0.5 0.8)")
    h.add_argument("--regularization", type=float, help="L2 penalty on the slope (METR: 0.1; default none: R's glm)")
    h.add_argument("--weighting", choices=["task", "family"], help="weights: each task 1, or METR's 1/sqrt(family size)")
    h.add_argument("--n-resamples", type=int, default=1000, help="bootstrap replicates (default 1000)")
    h.add_argument("--random-state", type=int, default=0, help="seed of the bootstrap (default 0)")
    h.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    h.add_argument("--reference", help="reference system: the headline is the best other system against it")
    h.add_argument("--interval", choices=["union", "profile", "bootstrap"], default="union",
                   help="the horizons' intervals: profile likelihood and bootstrap together (default), the profile "
                        "likelihood alone, or METR's bootstrap percentile interval")
    h.add_argument("--no-glmm", action="store_true", help="skip the lme4 glmer check (no R)")
    h.set_defaults(func=cmd_horizon)
def _add_bayes(sub: Any) -> None:
    g = sub.add_parser("bayes", parents=[_common(data=False)],
                       help="Bayesian hierarchical model of a small (agent) evaluation: posterior success rates, "
                            "P(A > B), P(best), with diagnostics and posterior predictive checks",
                       description="Read evaluation logs or a score table (epochs become attempts) and fit "
                                   "rstanarm::stan_glmer with systems fixed and tasks (and --cluster) random; print the "
                                   "posterior leaderboard of success rates on the population of tasks with 95% "
                                   "credible intervals, every pair's difference and P(A > B), P(best), and the checks: "
                                   "R-hat, ESS, divergences, posterior predictive checks, loo against a model without "
                                   "task effects, and the frequentist GLMM.")
    g.add_argument("paths", nargs="+", help="log files, directories (searched recursively), globs or a score table")
    _log_options(g)
    g.add_argument("--metric", help="metric to model (needed when the logs hold several)")
    g.add_argument("--score", default="score", help="a score table's score column (default score)")
    g.add_argument("--format", default="auto", choices=["auto", "lm-eval", "inspect", "helm", "table"],
                   help="log format (default: recognised from the files)")
    g.add_argument("--cluster", help="column naming each task's cluster (a second random intercept)")
    g.add_argument("--family", default="binomial", choices=["binomial", "gaussian", "beta"],
                   help="binomial (0/1 scores, default), gaussian or beta (continuous scores)")
    g.add_argument("--chains", type=int, default=4, help="Markov chains (default 4)")
    g.add_argument("--iter", type=int, default=2000, help="iterations per chain, warm-up included (default 2000)")
    g.add_argument("--cores", type=int, help="chains in parallel (default: automatic)")
    g.add_argument("--rope", type=float, help="half-width of the region of practical equivalence (e.g. 0.02)")
    g.add_argument("--reference", help="reference system: the headline is the best other system against it")
    _direction_args(g)
    g.add_argument("--level", type=float, default=0.95, help="credible level (default 0.95)")
    g.add_argument("--random-state", type=int, default=1, help="Stan's seed (default 1)")
    g.add_argument("--no-loo", action="store_true", help="skip the loo comparison (it fits a second model)")
    g.add_argument("--no-frequentist", action="store_true", help="skip the frequentist GLMM check")
    g.add_argument("--ppc-plot", metavar="PNG", help="write the posterior predictive check plot to this file")
    g.add_argument("--drop-missing", action="store_true", help="drop items missing for some system (with a warning)")
    g.set_defaults(func=cmd_bayes)


def _add_disparity(sub: Any, common: argparse.ArgumentParser) -> None:
    g = sub.add_parser("disparity", parents=[common], help="language disparity metrics (Hu, Vulic & Korhonen 2025)",
                       description="Performance potential, realisation ratio (mean, SD, CV per model) and language "
                                   "potential from score ~ language + task + (1|model) by ML.")
    _data_arg(g)
    g.add_argument("--score", default="score", help="score column (default score)")
    g.add_argument("--model", default="model", help="model column (default model)")
    g.add_argument("--language", default="language", help="language column (default language)")
    g.add_argument("--task", action="append", help="task column (repeat to join several, e.g. dataset and metric)")
    g.add_argument("--reference", action="append", metavar="FACTOR=LEVEL", help="reference level, e.g. language=en")
    g.add_argument("--lp-convention", default="published", choices=["published", "all_tasks"],
                   help="language potential: published (mean over the non-reference task effects, the authors' Table 2; "
                        "default) or all_tasks (all tasks with the reference's zero)")
    g.add_argument("--drop-aggregates", action="store_true", help="drop records whose language is an aggregate (avg)")
    g.add_argument("--pp-threshold", type=float, default=0.0,
                   help="records whose performance potential is at or below this get no realisation ratio (NaN, with a "
                        "warning); default 0")
    g.add_argument("--optimizer", default="nloptwrap", choices=OPTIMIZERS, help="lme4's optimizer (default nloptwrap)")
    g.add_argument("--n-resamples", type=int, default=0, help="parametric-bootstrap refits for intervals (default none)")
    g.add_argument("--random-state", type=int, default=1, metavar="INT",
                   help="R's set.seed for the parametric bootstrap (default 1)")
    g.add_argument("--robustness", type=int, default=0, metavar="K", help="refit without the K largest residuals")
    g.add_argument("--records", action="store_true", help="also output the per-record table")
    g.set_defaults(func=cmd_disparity, task=None)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mixedeval", description=__doc__.split("\n\n")[0] + " " + __doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--quiet", action="store_true", help="no progress messages or bars")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = _common()

    c = sub.add_parser("check", parents=[_common(json_report=False, data=False)],
                       help="R, rpy2 and R package versions; what is missing and how to install it")
    c.set_defaults(func=cmd_check)

    _add_demo(sub)
    _add_fit(sub, common)
    _add_compare(sub, common)
    _add_power(sub)

    b = sub.add_parser("bootstrap", parents=[common], help="hierarchical paired bootstrap of system scores",
                       description="Paired (shared-draw) bootstrap of per-system scores over items, runs and "
                                   "groups; prints the summary, pairwise differences and rank distribution.")
    _data_arg(b)
    b.add_argument("--score", action="append", required=True,
                   help="score column (repeat for sufficient statistics, e.g. tp, fp, fn with --statistic f1)")
    b.add_argument("--system", required=True, help="system column")
    b.add_argument("--item", required=True, help="item column")
    b.add_argument("--run", help="run column (training seeds, sampling runs)")
    b.add_argument("--group", help="language/task column")
    b.add_argument("--resample", help="comma-separated levels to redraw: items, runs, groups")
    b.add_argument("--statistic", default="mean", choices=list(BOOTSTRAP_STATISTICS),
                   help="mean (default), accuracy, exact_match, f1 (tp, fp, fn), bleu / chrf (sentence statistics "
                        "of me.metrics.sentence_stats), precision/recall/f1 micro and macro")
    b.add_argument("--aggregator", default="mean", choices=["mean", "median", "geometric_mean"],
                   help="how per-group scores combine into a system score (default mean)")
    b.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap replicates (default 10000)")
    b.add_argument("--ci", default="percentile", choices=["percentile", "basic", "bca", "se"],
                   help="bootstrap interval: percentile (default), basic, bca (bias-corrected and accelerated) or se "
                        "(normal, from the bootstrap SE)")
    b.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    b.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    b.add_argument("--n-groups", type=int, help="draw this many groups without replacement per replicate")
    b.add_argument("--reference", help="reference system: the headline is the best other system against it")
    _direction_args(b)
    b.add_argument("--drop-missing", action="store_true", help="drop incomplete items instead of failing")
    b.add_argument("--adjust", default="holm", help="p-value adjustment of the pairwise tests (default holm)")
    b.set_defaults(func=cmd_bootstrap)

    _add_vca(sub, common)
    _add_disparity(sub, common)
    _add_compare_logs(sub)
    _add_summarize(sub)
    _add_bayes(sub)
    _add_preferences(sub)
    _add_judge(sub)
    _add_irt(sub)
    _add_agentic(sub)
    return p


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Any:
    """While a command runs, SIGTERM stops it as Ctrl-C does (yields a flag list, ``[True]`` once
    SIGTERM came): the handler calls SIGINT's current one -- the engine's, which interrupts R at
    its next check, during an R call; Python's, which raises KeyboardInterrupt, otherwise -- so the
    command unwinds, Python exits normally and R's exit handler removes its session folder
    (``Rtmp*`` in TMPDIR), which the default SIGTERM (the process killed at once) left behind.
    Installed from the main thread only, and only over the default action; restored afterwards."""
    fired = [False]
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield fired
        return

    def handler(signum: int, frame: Any) -> None:
        fired[0] = True
        on_int = signal.getsignal(signal.SIGINT)
        if callable(on_int):
            on_int(signal.SIGINT, frame)
        else:  # SIGINT ignored or at its default: still stop the command
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    try:
        yield fired
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 internal error, 2 usage or data
    error, 130 interrupted, 143 terminated by SIGTERM)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if getattr(args, "command", None):
            _check_args(args)
    except SystemExit as exc:  # --help or --version: already printed
        return int(exc.code or 0)
    except UsageError as exc:
        _fail(exc, " ".join(str(exc).split()), _wants_json(argv))
        return EXIT_USAGE
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.command == "disparity" and not args.task:
        args.task = ["task"]
    words = args.cli_words = cli_words(parser, args.command)
    previous = os.environ.get("MIXEDEVAL_QUIET")
    if args.quiet:
        os.environ["MIXEDEVAL_QUIET"] = "1"
    terminated = [False]
    try:
        with _sigterm_as_interrupt() as terminated:
            return int(args.func(args) or 0)
    except (MixedEvalError, FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError) as exc:
        _fail(exc, words(" ".join(str(exc).split())), args.json)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:  # Ctrl-C (or SIGTERM), in Python or in R (the engine turns R's interrupt into this)
        _fail(exc, "terminated" if terminated[0] else "interrupted", args.json, label="")
        return EXIT_TERMINATED if terminated[0] else EXIT_INTERRUPTED
    except BrokenPipeError:  # stdout closed early (e.g. piped into head): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_INTERNAL
    except Exception as exc:  # noqa: BLE001 - an internal error still prints one line
        if os.environ.get("MIXEDEVAL_DEBUG"):
            raise
        _fail(exc, f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
                   "(set MIXEDEVAL_DEBUG=1 for the traceback)", args.json)
        return EXIT_INTERNAL
    finally:  # main() may be called in-process: do not leak the setting
        if previous is None:
            os.environ.pop("MIXEDEVAL_QUIET", None)
        else:
            os.environ["MIXEDEVAL_QUIET"] = previous


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
