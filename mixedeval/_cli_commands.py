"""The handlers of the ``mixedeval`` subcommands (:mod:`mixedeval.cli` builds the parser and
runs :func:`mixedeval.cli.main`).

This module imports pandas, numpy and the R-backed analysis modules; :mod:`mixedeval.cli` imports
it only when a subcommand runs, so that ``mixedeval --help`` and every ``mixedeval COMMAND --help``
print at once (``benchmarks/bench_cli_startup.py``). Each ``cmd_*`` takes the parsed arguments and
returns the exit status; errors are raised (``main`` reports them).
"""
from __future__ import annotations

import argparse
import glob
import importlib
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from . import datasets
from ._answer import Answer
from ._cli_answer import answer_record, best_first, emm_answer, pairs_table, ranks_table, render_answer
from ._console import print_json, print_table
from ._format import plain
from .data._logs import read_eval_logs
from .data._table_guard import guarded_table
from .errors import DataError, MixedEvalError, UsageError
from .workflows.compare_logs import compare_logs
from .workflows.plan_eval import questions_needed
from .workflows.summarize import summarize


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported when first called: the report (matplotlib, jinja2), the models (R)
    and the other workflows load only for the subcommand that uses them, so that ``compare-logs``
    and ``summarize`` (numpy, no R by default) start fast (``benchmarks/bench_cli_startup.py``)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module, __package__), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


report = _lazy("._report", "report")
read_battles = _lazy(".data._battles", "read_battles")
design = _lazy(".data._design_spec", "design")
run_demo = _lazy(".demo", "run_demo")
run_llm_demo = _lazy(".demo", "run_llm_demo")
check_r = _lazy(".engine.check", "check_r")
clmm = _lazy(".inference._clmm", "clmm")
glmm = _lazy(".inference._glmm", "glmm")
lmm = _lazy(".inference._lmm", "lmm")
compare = _lazy(".inference.compare", "compare")
bootstrap = _lazy(".resampling", "bootstrap")
bradley_terry = _lazy(".workflows.preferences", "bradley_terry")
arena_audit = _lazy(".workflows.arena.audit", "arena_audit")
arena_audit_guard = _lazy(".workflows.arena.audit", "_audit_guard")
minimum_detectable_effect = _lazy(".workflows.power", "minimum_detectable_effect")
power = _lazy(".workflows.power", "power")
power_curve = _lazy(".workflows.power", "power_curve")
sample_size = _lazy(".workflows.power", "sample_size")
language_disparity = _lazy(".workflows.language_disparity", "language_disparity")
variance_components = _lazy(".workflows.variance_components", "variance_components")
judge_corrected = _lazy(".workflows.judges", "judge_corrected")
labels_needed = _lazy(".workflows.judges", "labels_needed")
read_judge_scores = _lazy(".data._judge_labels", "read_judge_scores")
irt = _lazy(".inference._irt", "irt")
pass_at_k = _lazy(".workflows.agentic.pass_k", "pass_at_k")
time_horizon = _lazy(".workflows.agentic.time_horizon", "time_horizon")
bayes_glmm = _lazy(".workflows.agentic.bayes", "bayes_glmm")


def _words(args: argparse.Namespace) -> Callable[[str], str]:
    """The command line's translation of Python-argument advice into its flags
    (:func:`mixedeval.cli.cli_words`, set by :func:`mixedeval.cli.main`); the identity when a
    handler is called without it."""
    return getattr(args, "cli_words", None) or (lambda text: text)


def _emit(args: argparse.Namespace, tables: dict[str, Any], text: str | None = None, *, answer: Answer | None = None,
          texts: dict[str, str] | None = None) -> int:
    """Print the result: with ``--json`` one object, the answer's record first
    (:func:`mixedeval._cli_answer.answer_record`), then ``tables``; as text the answer first
    (:func:`mixedeval._cli_answer.render_answer`, the command line's one printer of answers), then
    ``text``, then ``tables`` as titled text tables (``texts``: tables already rendered, by key),
    then the warnings. Every sentence goes through the command line's words (:func:`_words`).
    Then the ``--report`` queued by the command is written (:func:`_report_after_answer`, whose
    exit status this returns)."""
    words = _words(args)
    tables = {k: ([words(str(w)) for w in v] if k in ("warnings", "check_warnings") else
                  words(v) if isinstance(v, str) and k not in ("report", "formula") else v) for k, v in tables.items()}
    if args.json:
        print_json({"answer": answer_record(answer, words=words), **tables} if answer is not None else tables)
        return _report_after_answer(args)
    if answer is not None:
        print(render_answer(answer, words=words))
    if text:
        print(text)
    for key, val in tables.items():
        if texts and key in texts:
            if texts[key]:
                print(texts[key])
        elif isinstance(val, pd.DataFrame):
            print_table(key, val)
        elif key not in ("fit", "warnings", "check_warnings", "report") and val is not None:  # None: not computed
            print(f"{key}: {words(plain(val))}")  # plain words, not Python reprs of lists and dicts
    for w in tables.get("warnings", ()):
        print(_warning_line("warning", w))
    for w in tables.get("check_warnings", ()):
        print(_warning_line("check warning", w))
    return _report_after_answer(args)


R_NOTE = "[r_message]"
#: a NaN cell of a printed table (pandas' to_string writes missing values so)
_NAN_CELL = re.compile(r"(?<=\s)NaN(?=\s|$)", re.MULTILINE)


def _warning_line(label: str, w: Any) -> str:
    """A warning's line; R's notes (kind ``r_message``: R's messages, not warnings) as notes, as
    the report lists them."""
    s = str(w)
    if s.startswith(R_NOTE):
        return f"note from R{' (a check)' if label.startswith('check') else ''}: {s[len(R_NOTE):].strip()}"
    return f"{label}: {s}"


def _progress(args: argparse.Namespace, msg: str) -> None:
    if not args.quiet:
        print(f"mixedeval: {_words(args)(msg)}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ data options
def _where(df: Any, conditions: Sequence[str] | None) -> Any:
    for cond in conditions or ():
        col, sep, value = cond.partition("=")
        if not sep or not col:
            raise DataError(f"--where {cond!r} must look like COLUMN=VALUE")
        if col not in df.columns:
            raise DataError(f"--where: column {col!r} is not in the data; available: {', '.join(map(str, df.columns))}")
        keep = df[col].astype(str) == value
        if not keep.any():
            sample = ", ".join(map(str, list(dict.fromkeys(df[col].astype(str)))[:10]))
            raise DataError(f"--where {cond!r} selects no rows; values of {col!r} include {sample}")
        df = df.loc[keep].reset_index(drop=True)
    return df


def _load_data(path: str, where: Sequence[str] | None = None):
    df = datasets.load(path) if path in datasets.DATASETS else guarded_table(path)
    return _where(df, where)


def _input_file(path: str) -> str | None:
    if path in datasets.DATASETS:
        return str(datasets._path(datasets.DATASETS[path]))
    return path


def _sizes(specs: Sequence[str] | None, multi: bool) -> dict[str, Any]:
    """``facet=n`` (or ``facet=1,2,3`` with ``multi``) options as a dict."""
    out: dict[str, Any] = {}
    for spec in specs or ():
        name, sep, val = spec.partition("=")
        try:
            nums = [float(v) for v in val.split(",")] if sep else []
        except ValueError:
            nums = []
        if not name or not nums or (not multi and len(nums) != 1):
            form = "FACET=N1,N2,..." if multi else "FACET=N"
            raise DataError(f"{spec!r} must look like {form}")
        out[name] = [int(v) if v.is_integer() else v for v in nums] if multi else nums[0]
    return out


def _pairs(specs: Sequence[str] | None, what: str) -> dict[str, str]:
    out = {}
    for spec in specs or ():
        k, sep, v = spec.partition("=")
        if not sep or not k:
            raise DataError(f"{what} {spec!r} must look like FACTOR=LEVEL")
        out[k] = v
    return out


def _queue_report(args: argparse.Namespace, out: dict[str, Any], *results: Any, **kwargs: Any) -> None:
    """The HTML report of ``results`` for ``--report`` (``kwargs``: options of
    :func:`mixedeval.report`), written by :func:`_emit` once the answer is printed
    (:func:`_report_after_answer`): a report that cannot be written no longer hides the results."""
    out["report"] = args.report
    kwargs.setdefault("progress", not args.quiet)
    args.report_job = (results, kwargs)


def _write_report(args: argparse.Namespace, out: dict[str, Any], *results: Any, **kwargs: Any) -> None:
    """:func:`_queue_report` for the commands reading DATA (the input file and the seed recorded)."""
    if getattr(args, "random_state", None) is not None:
        kwargs.setdefault("random_state", args.random_state)
    _queue_report(args, out, *results, input_file=_input_file(args.data), **kwargs)


def _report_after_answer(args: argparse.Namespace) -> int:
    """Write the queued report (:func:`_queue_report`), after the answer was printed; the exit
    status: 0, or 2 with one line saying why the report could not be written (a full disk, a
    missing folder, no permission) -- the results printed above stand."""
    job = getattr(args, "report_job", None)
    if job is None:
        return 0
    results, kwargs = job
    args.report_job = None
    try:
        path = report(*results, path=args.report, **kwargs)
    except (OSError, MixedEvalError) as exc:
        reason = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
        sys.stdout.flush()
        print(f"mixedeval: error: the report could not be written to {str(args.report)!r} "
              f"({_words(args)(' '.join(reason.split()))}); the results above are complete", file=sys.stderr)
        return 2
    _progress(args, f"report written to {path}")
    return 0


# ---------------------------------------------------------------------------------- commands
def cmd_check(args: argparse.Namespace) -> int:
    res = check_r()
    if args.json:
        print_json(res.to_dict())
    else:
        print(res)
    return 0 if res.ok else 1


def _fit_model(args: argparse.Namespace, data: Any) -> Any:
    """``fit``'s model: clmm with ``--ordinal``, glmm with a ``--family`` other than gaussian, else lmm."""
    factors = tuple(args.factor or ())
    if args.ordinal:
        if args.family != "gaussian":
            raise DataError("--ordinal fits a cumulative link mixed model; it takes no --family")
        return clmm(args.formula, data, link=args.link or "logit", nagq=args.nagq, factors=factors)
    if args.family != "gaussian":
        return glmm(args.formula, data, family=args.family, link=args.link, nagq=args.nagq,
                    optimizer=args.optimizer, factors=factors)
    if args.link or args.nagq != 1:
        raise DataError("--link and --nagq apply to --family (GLMM) and --ordinal fits")
    return lmm(args.formula, data, reml=not args.ml, optimizer=args.optimizer or "nloptwrap",
               df_method=args.df_method, factors=factors)


def cmd_fit(args: argparse.Namespace) -> int:
    data = _load_data(args.data, args.where)
    _progress(args, f"fitting {args.formula}")
    fit = _fit_model(args, data)
    out: dict[str, Any] = {"fit": fit.to_dict()}
    text = _NAN_CELL.sub("NA", str(fit))  # the command line's tables write a missing cell as NA
    anova = fit.anova(type=args.anova_type) if args.anova and hasattr(fit, "anova") else None
    if anova is not None:
        out["anova"] = anova.table
    emm = con = answer = None
    if args.emmeans:
        from .inference._lmm import LMMFit  # noqa: PLC0415 - loaded by the fit already

        hib = getattr(args, "higher_is_better", None)
        if hib is not None and getattr(args, "ordinal", False):
            raise DataError("--higher-is-better / --lower-is-better rank the means; an ordinal model's (clmm) are "
                            "not ranked")
        kw = {} if hib is None else {"higher_is_better": hib}
        emm = fit.emmeans(args.emmeans, df_method=args.df_method, **kw) if isinstance(fit, LMMFit) \
            else fit.emmeans(args.emmeans, **kw)
        con = emm.contrasts(method="pairwise", adjust=args.adjust)
        answer = emm_answer(emm)
        out["emmeans"] = emm.table
        out["contrasts"] = con.table
    # every part's warnings, e.g. the contrasts' ci_adjust: emmeans has no Holm intervals, so conf_low/conf_high
    # are Bonferroni-adjusted while p_adj is Holm (text: "warning: ..." lines; --json: the "warnings" list)
    out["warnings"] = _warning_texts(fit, anova, emm, con)
    if args.report:
        _write_report(args, out, fit, anova, emm, con, data=data, n_sim=args.n_sim)
    return _emit(args, out, text=text, answer=answer)


def _warning_texts(*results: Any) -> list[str]:
    """The warnings of ``results`` (None skipped) as text, each once, in order."""
    return list(dict.fromkeys(str(w) for r in results if r is not None for w in (getattr(r, "warnings", ()) or ())))


def _power_model(args: argparse.Namespace) -> Any:
    """``power``'s model: a pilot fit of ``--formula`` on DATA, or a design from the size options."""
    if args.data:
        if not args.formula:
            raise DataError("power with pilot DATA needs --formula (the model to simulate from)")
        data = _load_data(args.data, args.where)
        if args.family == "binomial":
            return glmm(args.formula, data, family="binomial")
        return lmm(args.formula, data, reml=True)
    if args.formula:
        raise DataError("--formula needs pilot DATA; without data, describe the design with --systems, --items, ...")
    variances = {k: float(v) for k, v in _pairs(args.variance, "--variance").items()} or None
    return design(systems=args.systems, items=args.items, runs=args.runs, raters=args.raters,
                  languages=args.languages, variances=variances, family=args.family, intercept=args.intercept)


def _cmd_questions_needed(args: argparse.Namespace) -> int:
    """``power --from-logs``: questions needed from a pilot log (closed form and simulation)."""
    if args.points is not None and args.effect:
        raise DataError("give --effect (score units) or --points, not both")
    if args.points is None and (not args.effect or len(args.effect) != 1):
        raise DataError("power --from-logs needs one --effect (score units, 0.03) or --points (3)")
    effect = args.points / 100.0 if args.points is not None else args.effect[0]
    pair = [x.strip() for x in args.pair.split(",")] if args.pair else None
    try:
        epochs = [int(k) for k in args.epochs.split(",") if k.strip()] if args.epochs else None
    except ValueError:
        raise DataError(f"--epochs {args.epochs!r} must be comma-separated integers, e.g. 1,3,5") from None
    _progress(args, f"questions needed to detect {effect:g} at power {args.target} ({args.n_sim} simulations)")
    pilot: Any = args.from_logs
    if args.system_from:  # the fields that define the systems: read here (questions_needed reads plain paths)
        pilot = read_eval_logs(pilot, metric=args.metric, system=args.system_from)
    res = questions_needed(pilot, effect, target=args.target, alpha=args.alpha,
                           epochs=epochs, metric=args.metric, systems=pair, n_sim=args.n_sim,
                           random_state=args.random_state)
    out: dict[str, Any] = {"questions_needed": res.table, "estimates": res.estimates,
                           "systems": list(res.systems), "warnings": [str(w) for w in res.warnings]}
    return _emit(args, out)


def cmd_power(args: argparse.Namespace) -> int:
    if getattr(args, "from_logs", None):
        return _cmd_questions_needed(args)
    model = _power_model(args)
    kw: dict[str, Any] = {"test": args.test, "alpha": args.alpha, "n_sim": args.n_sim,
                          "random_state": args.random_state, "progress": not args.quiet, "term": args.term}
    if args.mde:
        _progress(args, f"minimum detectable effect ({args.test}, target power {args.target})")
        res = minimum_detectable_effect(model, target=args.target, **kw)
    elif args.effect is None:
        raise DataError("power needs --effect (or --mde for the minimum detectable effect)")
    elif args.sample_size:
        _progress(args, f"sample size along {args.along} for power {args.target}")
        res = sample_size(model, args.effect, along=args.along, target=args.target,
                          values=_int_list(args.values), **kw)
    elif args.values:
        _progress(args, f"power curve along {args.along}")
        res = power_curve(model, args.effect, along=args.along, values=_int_list(args.values), target=args.target,
                          **kw)
    else:
        _progress(args, f"power of {args.test} at effect {args.effect} ({args.n_sim} simulations)")
        res = power(model, args.effect, **kw)
    out: dict[str, Any] = {"power": res.table, "warnings": [str(w) for w in res.warnings]}
    if args.report:
        _queue_report(args, out, res)
    return _emit(args, out)


def _int_list(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise DataError(f"--values {text!r} must be comma-separated integers, e.g. 100,200,500") from None


def cmd_compare(args: argparse.Namespace) -> int:
    data = _load_data(args.data, args.where)
    if len(args.formula) < 2:
        raise DataError("compare needs at least two --formula options (nested models, smallest first)")
    fits = []
    for f in args.formula:
        _progress(args, f"fitting {f}")
        fits.append(lmm(f, data, reml=not args.ml, optimizer=args.optimizer or "nloptwrap",
                        factors=tuple(args.factor or ())))
    _progress(args, "likelihood-ratio test" + (f" with {args.n_resamples} parametric-bootstrap samples"
                                               if args.n_resamples else ""))
    refit = {"auto": None, "ml": True, "keep": False}[args.refit]
    pb: dict[str, Any] = {"n_resamples": args.n_resamples} if args.n_resamples else {}
    if args.random_state is not None:
        pb["random_state"] = args.random_state
    res = compare(*fits, refit=refit, progress=not args.quiet, names=args.name, **pb)
    out: dict[str, Any] = {"comparison": res.table, "estimator": res.estimator}
    if res.pb is not None:
        out["parametric_bootstrap"] = res.pb
    out["warnings"] = [str(w) for w in getattr(res, "warnings", ()) or ()]
    if args.report:
        _write_report(args, out, fits[-1], res, data=data, n_sim=args.n_sim)
    return _emit(args, out)


def cmd_bootstrap(args: argparse.Namespace) -> int:
    data = _load_data(args.data, args.where)
    score = args.score[0] if len(args.score) == 1 else list(args.score)
    resample = [r.strip() for r in args.resample.split(",")] if args.resample else None
    _progress(args, f"bootstrap with {args.n_resamples} resamples")
    res = bootstrap(data, score=score, system=args.system, item=args.item, run=args.run, group=args.group,
                    resample=resample, statistic=args.statistic, aggregator=args.aggregator,
                    n_resamples=args.n_resamples, ci=args.ci, level=args.level, random_state=args.random_state,
                    n_groups=args.n_groups, higher_is_better=args.higher_is_better, reference=args.reference,
                    drop_missing=args.drop_missing, progress=not args.quiet)
    answer = res.answer
    ranks = res.ranks()
    out: dict[str, Any] = {"summary": res.summary(), "ranks": ranks, "warnings": [str(w) for w in res.warnings]}
    if args.report:
        _write_report(args, out, res, data=data,
                      design_factors=[c for c in (args.system, args.item, args.run, args.group) if c])
    return _emit(args, out, answer=answer, texts={"ranks": ranks_table(answer, ranks, kind="marginal")})


def _of_check(w: Any) -> bool:
    """A warning of a check (``source="check:..."``), printed apart from the answer's."""
    return str(getattr(w, "source", "")).startswith("check:")


def _read_logs(args: argparse.Namespace, source: Any, pre_read_systems: bool) -> tuple[Any, str | None, Any]:
    """``(source, cluster, system_from)`` for ``compare-logs`` / ``summarize``.

    With ``--run`` / ``--epoch`` (a score table's columns; ``--cluster`` then names the table's
    cluster column too) the table is read here by :func:`mixedeval.read_eval_logs` with
    ``columns=`` and handed over as :class:`~mixedeval.EvalLogs`; so it is for ``--system-from``
    when the workflow takes no ``system=`` (``pre_read_systems``: ``summarize``, whose ``system=``
    is a table's column). Otherwise the paths go to the workflow as they are."""
    columns = {k: v for k, v in (("item", args.item), ("task", args.task), ("run", args.run), ("epoch", args.epoch))
               if v}
    system_from = args.system_from or None
    if not columns and not (pre_read_systems and system_from):
        return source, args.cluster, system_from
    fmt, cluster, meta = args.format, args.cluster, [args.cluster] if args.cluster else []
    if columns:
        if fmt not in ("auto", "table"):
            raise UsageError(f"--run and --epoch name columns of a score table (so do --item and --task); "
                             f"--format {fmt} logs carry their runs, epochs, items and tasks themselves "
                             f"(see 'mixedeval {args.command} --help')")
        fmt, meta = "table", []
        if args.cluster:  # the table's cluster column, carried as the canonical 'cluster'
            columns["cluster"], cluster = args.cluster, "cluster"
    logs = read_eval_logs(source, fmt, metric=args.metric, columns=columns or None, drop_missing=args.drop_missing,
                          system=system_from, metadata=meta)
    return logs, cluster, None


def _log_inputs(args: argparse.Namespace) -> list[str]:
    """The log paths given on the command line (files and folders; globs expanded) for the report's
    provenance, which hashes a file and shows a folder as a folder."""
    given = [*getattr(args, "paths", ()), *(a.partition("=")[2] for a in getattr(args, "system", None) or ())]
    out: list[str] = []
    for p in given:
        out += sorted(glob.glob(p, recursive=True)) if any(c in p for c in "*?[") else [p]
    return out


#: what ``compare-logs`` says in place of the model-based check when it was not run
NO_MODEL_CHECK = ("model-based check not run (add --checks for the mixed model: likelihood-ratio test, contrasts "
                  "and estimated marginal means)")


def _wants_model_check(args: argparse.Namespace) -> bool:
    """Whether ``compare-logs`` fits the mixed model (the model-based check, seconds of R): when
    asked with ``--checks``, or implied by ``--report`` (the report shows it), ``--analysis glmm``
    / ``lmm`` or ``--trials`` (options of the model)."""
    return bool(args.checks or args.report or args.analysis != "auto" or args.trials is not None)


def cmd_compare_logs(args: argparse.Namespace) -> int:
    source: Any = list(args.paths)
    if args.system:  # NAME=PATH pairs name the systems explicitly
        pairs = [a.partition("=") for a in args.system]
        if any(not sep or not name for name, sep, _ in pairs):
            raise DataError("--system must look like NAME=PATH (repeatable)")
        source = {}
        for name, _, path in pairs:
            source.setdefault(name, []).append(path)
        if args.paths:
            raise DataError("give log paths either as arguments or as --system NAME=PATH, not both")
    elif not args.paths:
        raise UsageError("give one or more log paths (or --system NAME=PATH) (see 'mixedeval compare-logs --help')")
    _progress(args, f"reading the logs and comparing the systems on {args.metric!r}")
    source, cluster, system_from = _read_logs(args, source, pre_read_systems=False)
    res = compare_logs(source, metric=args.metric, format=args.format, drop_missing=args.drop_missing,
                       analysis=args.analysis, trials=args.trials, reference=args.reference, cluster=cluster,
                       adjust=args.adjust, system=system_from,
                       n_resamples=args.n_resamples, level=args.level, random_state=args.random_state,
                       progress=not args.quiet, plan=not args.no_plan, effect=args.effect, target=args.target,
                       n_sim=args.n_sim, model_check=_wants_model_check(args),
                       higher_is_better=getattr(args, "higher_is_better", None))
    answer = res.answer
    boot = best_first(answer, res.bootstrap)
    out: dict[str, Any] = {"next_run": res.plan_text(),
                           "accuracies": res.accuracies, "plan": None if res.plan is None else res.plan.table,
                           "analysis": res.analysis, "formula": res.formula, "glrt": res.glrt, "contrasts": res.contrasts,
                           "bootstrap": boot, "means": res.means,
                           "warnings": [str(w) for w in res.warnings if not _of_check(w)],
                           "check_warnings": [str(w) for w in res.warnings if _of_check(w)]}
    if res.glrt is None:  # the model-based check was not asked for
        out["analysis"] = NO_MODEL_CHECK
    if args.report:
        _queue_report(args, out, res, title=f"mixedeval: {args.metric} from evaluation logs",
                      input_file=_log_inputs(args))
    texts = {"bootstrap": pairs_table(answer, boot, "bootstrap", words=_words(args),
                                      what="the paired bootstrap (a check), every pair best first")}
    return _emit(args, out, answer=answer, texts=texts)


def cmd_summarize(args: argparse.Namespace) -> int:
    source: Any = list(args.paths)
    if not source:
        raise UsageError("give one or more log paths (see 'mixedeval summarize --help')")
    _progress(args, f"reading the logs and summarizing {args.metric!r}")
    source, cluster, _ = _read_logs(args, source, pre_read_systems=True)
    res = summarize(source, metric=args.metric, format=args.format, drop_missing=args.drop_missing,
                    cluster=cluster, cluster_se=args.cluster_se, level=args.level, adjust=args.adjust,
                    sign_flip=args.sign_flip, n_resamples=args.n_resamples, random_state=args.random_state,
                    reference=getattr(args, "reference", None), higher_is_better=getattr(args, "higher_is_better", None))
    answer = res.answer
    out: dict[str, Any] = {"metric": res.metric, "table": res.table, "warnings": [str(w) for w in res.warnings]}
    if args.report:
        _queue_report(args, out, res, title=f"mixedeval: {args.metric} summary", input_file=_log_inputs(args))
    return _emit(args, out, answer=answer)


def cmd_bayes(args: argparse.Namespace) -> int:
    source: Any = list(args.paths)
    if not source:
        raise UsageError("give log paths or a score table (see 'mixedeval bayes --help')")
    _progress(args, "reading the logs and fitting the Bayesian hierarchical model (rstanarm::stan_glmer)")
    source, cluster, _ = _read_logs(args, source, pre_read_systems=True)
    res = bayes_glmm(source, metric=args.metric, score=args.score, format=args.format, cluster=cluster,
                     family=args.family, chains=args.chains, iter=args.iter, cores=args.cores, rope=args.rope,
                     level=args.level, reference=args.reference, random_state=args.random_state,
                     loo=not args.no_loo, frequentist=not args.no_frequentist, progress=not args.quiet,
                     higher_is_better=getattr(args, "higher_is_better", None))
    out: dict[str, Any] = {"formula": res.provenance["formula"], "posterior": res.table, "pairs": res.pairwise,
                           "p_better": res.p_better.reset_index(), "ppc": res.ppc, "loo": res.loo, "prior": res.prior,
                           "divergences": sum(res.divergences), "draws": res.provenance["n_draws"],
                           "seed": res.provenance["seed"], "warnings": [str(w) for w in res.warnings]}
    if args.ppc_plot:
        res.ppc_plot(args.ppc_plot)
        out["ppc_plot"] = args.ppc_plot
    if args.report:
        _queue_report(args, out, res, title="mixedeval: Bayesian hierarchical model", input_file=_log_inputs(args))
    return _emit(args, out, answer=res.answer)


def cmd_vca(args: argparse.Namespace) -> int:
    data = _load_data(args.data, args.where)
    interactions: Any = "all" if args.all_interactions else list(args.interaction or ())
    sizes = _sizes(args.size, multi=False)
    grid = _sizes(args.d_study, multi=True)
    _progress(args, "fitting the variance-component model (REML)" if not args.ml else "fitting by ML")
    res = variance_components(data, score=args.score, object=args.object, facets=list(args.facet or ()),
                              interactions=interactions, nested=args.nested, reml=not args.ml,
                              optimizer=args.optimizer)
    out: dict[str, Any] = {"components": res.table, "reliability": res.reliability(**sizes),
                           "singular": res.singular, "zero_components": list(res.zero_components),
                           "formula": res.formula}
    if grid:
        out["d_study"] = res.d_study(grid)
    if res.anova_check is not None:
        out["anova_check"] = res.anova_check
    out["warnings"] = [str(w) for w in res.warnings]
    if args.report:
        _write_report(args, out, res, data=data, d_study_grid=grid or None,
                      design_factors=[args.object, *(args.facet or ())])
    return _emit(args, out)


def cmd_disparity(args: argparse.Namespace) -> int:
    data = _load_data(args.data, args.where)
    task: Any = args.task[0] if len(args.task) == 1 else list(args.task)
    _progress(args, "fitting score ~ language + task + (1|model) by ML")
    res = language_disparity(data, score=args.score, model=args.model, language=args.language, task=task,
                             reference=_pairs(args.reference, "--reference") or None,
                             lp_convention=args.lp_convention, drop_aggregates=args.drop_aggregates,
                             pp_threshold=args.pp_threshold, optimizer=args.optimizer)
    out: dict[str, Any] = {"by_model": res.by_model, "language_potential": res.language_potential,
                           "diagnostics": res.diagnostics, "reference": res.reference}
    parts: list[Any] = [res]
    if args.n_resamples:
        _progress(args, f"parametric bootstrap with {args.n_resamples} ML refits")
        boot = res.bootstrap(n_resamples=args.n_resamples, random_state=args.random_state, progress=not args.quiet)
        out["bootstrap_models"] = boot.models
        out["bootstrap_languages"] = boot.languages
        parts.append(boot)
    if args.robustness:
        rob = res.robustness(k=args.robustness)
        out["robustness_agreement"] = rob.agreement
        out["robustness_changes"] = rob.changes
        parts.append(rob)
    if args.records:
        out["records"] = res.records
    warnings = [str(w) for p in parts for w in (getattr(p, "warnings", ()) or ())]
    out["warnings"] = warnings
    if args.report:
        _write_report(args, out, *parts, data=data, design_factors=[args.model, args.language, *args.task])
    return _emit(args, out)


def cmd_demo(args: argparse.Namespace) -> int:
    if args.example not in ("mt", "llm"):
        raise UsageError(f"no demo {args.example!r}: 'mixedeval demo' (machine translation) or 'mixedeval demo llm'")
    if args.example == "llm":  # three mock LLMs compared from the bundled Inspect AI logs
        if args.dataset is not None:
            raise UsageError("--dataset chooses the data of the machine-translation demo; 'demo llm' reads the "
                             "bundled Inspect logs (see 'mixedeval demo --help')")
        return run_llm_demo(out=args.out or "mixedeval-llm-report.html", n_sim=args.n_sim,
                            n_resamples=args.n_resamples, random_state=args.random_state, progress=not args.quiet,
                            as_json=args.json, words=_words(args))
    return run_demo(dataset=args.dataset or "kreutzer_ter", out=args.out or "mixedeval-report.html", n_sim=args.n_sim,
                    n_resamples=args.n_resamples, random_state=args.random_state, progress=not args.quiet,
                    as_json=args.json, words=_words(args))


# ------------------------------------------------------------------------------- preferences
def _battle_column(df: Any, name: str | None, default: str) -> str | None:
    """The column to use: the one named on the command line ('' = none), else ``default`` when the
    table has it with values (read_battles writes prompt/judge/position even where a format lacks them)."""
    if name is not None:
        return name or None
    return default if default in df.columns and df[default].notna().any() else None


def _style_columns(df: Any, wanted: bool) -> list[str]:
    if not wanted:
        return []
    from .data._battles import STYLE_FIELDS  # noqa: PLC0415 - the battle reader loads with its subcommand only

    cols = [c for c in STYLE_FIELDS if c in df.columns]
    if not cols:
        raise DataError("--style: the battle file has no conv_metadata style fields (sum_assistant_a_tokens, "
                        "header_count_a, ...; Chatbot Arena's clean_battle files with conv_metadata have them); "
                        "name your own columns with --covariate")
    return cols


def _preference_tables(args: argparse.Namespace, res: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"strengths": res.table, "judges": res.judges, "covariates": res.covariates,
                           "ranks": res.ranks, "reference": res.reference, "intervals": res.interval_method,
                           "warnings": [str(w) for w in res.warnings]}
    if args.win_probabilities:
        out["win_probabilities"] = res.win_probabilities
    return {k: v for k, v in out.items() if v is not None}


def cmd_preferences(args: argparse.Namespace) -> int:
    """``mixedeval preferences BATTLES``: Bradley-Terry strengths from pairwise judgments."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = read_battles(args.battles, format=args.format, drop_failed=args.drop_failed, baseline=args.baseline,
                          strong_weight=args.strong_weight)
    for w in caught:
        _progress(args, str(w.message))
    cols = {k: _battle_column(df, getattr(args, k), k) for k in ("prompt", "judge", "position")}
    if args.position is None and "position" in df.columns:
        cols["position"] = "position"  # all missing (AlpacaEval): the order is unknown, not "model_a first"
    if args.no_judge:
        cols["judge"] = None
    covariates = list(args.covariate or []) + _style_columns(df, args.style)
    if args.robustness:  # the audit's n_sim refused before the fit when it cannot fit in memory
        arena_audit_guard(df, n_sim=args.n_sim)
    _progress(args, f"fitting the Bradley-Terry model to {len(df)} battles"
                    + (", sandwich intervals" if args.interval == "sandwich" else
                       f", {args.n_resamples} bootstrap replicates" if args.n_resamples else ""))
    res = bradley_terry(df, ties=args.ties, position_bias=not args.no_position_bias, covariates=covariates or None,
                        anchor=args.anchor, anchor_rating=args.anchor_rating, level=args.level,
                        prompt_effect=args.prompt_effect, judge_effect=args.judge_effect,
                        n_resamples=args.n_resamples, resample_judges=args.resample_judges,
                        random_state=args.random_state, executor=args.executor,
                        weight=False if args.weight == "" else args.weight, min_judge_battles=args.min_judge_battles,
                        reference=args.reference, ranks=False if args.no_ranks else (True if args.ranks else None),
                        letters={"auto": None, "yes": True, "no": False}[args.letters],
                        progress=False if args.quiet else None, interval=args.interval, cluster=args.cluster,
                        reweight=args.reweight, min_pair_battles=args.min_pair_battles, estimator=args.estimator,
                        **cols)
    out = _preference_tables(args, res)
    audit = None
    if args.robustness:
        _progress(args, "auditing the leaderboard: votes to flip, probes")
        audit = arena_audit(df, fit=res, prompt=cols["prompt"], judge=cols["judge"], position=cols["position"],
                            covariates=covariates or None, pairs=[tuple(p) for p in args.pair or []],
                            n_sim=args.n_sim, level=args.level, random_state=args.random_state,
                            progress=False if args.quiet else None)
        out.update(_robustness_tables(audit))
    if args.report:
        _queue_report(args, out, *((res, audit) if audit is not None else (res,)),
                      title="mixedeval: pairwise preferences",
                      input_file=df.attrs.get("files") or args.battles)
    # the ranks' intervals are the leaderboard's (simultaneous): printed there, in --json also as the table
    return _emit(args, out, answer=(audit or res).answer, texts={"ranks": ""})


def _robustness_tables(audit: Any) -> dict[str, Any]:
    """--robustness: the sentence on the #1, the votes to flip each neighbour and the top rank, the
    probes' verdicts and the votes that change the #1."""
    votes = audit.flips.votes
    return {"robustness": audit.robustness_text(),
            "votes_to_flip": audit.flips.table.drop(columns=["approx_share"]),
            "probes": audit.probes[["check", "verdict"]],
            "votes_changing_top": votes[votes["target"] == "top rank"].drop(columns=["target"])}


def _judge_data(args: argparse.Namespace) -> tuple[Any, str | None]:
    """(the table judge_corrected reads, its epoch column)."""
    one = args.scores[0] if len(args.scores) == 1 else None
    is_table = one is not None and str(one).lower().endswith((".csv", ".tsv", ".parquet", ".pq"))
    if is_table and not args.labels:
        return _load_data(one), args.epoch
    df = read_judge_scores(one if is_table else list(args.scores), args.labels, metric=args.metric, format=args.format,
                           system=args.system, item=args.item, epoch=args.epoch, task=args.task,
                           judge_score=args.judge_score, label_id=args.label_id, label_system=args.label_system,
                           label_epoch=args.label_epoch, label_task=args.label_task, human_score=args.human_score)
    return df, "epoch"


def cmd_judge(args: argparse.Namespace) -> int:
    """``mixedeval judge SCORES``: judge-corrected leaderboard, agreement, bias and budget."""
    data, epoch = _judge_data(args)
    canonical = epoch == "epoch" and "judge_score" in data.columns and args.labels is not None
    cols = ({"judge_score": "judge_score", "human_score": "human_score", "system": "system", "item": "item"}
            if canonical else {"judge_score": args.judge_score, "human_score": args.human_score,
                               "system": args.system, "item": args.item})
    _progress(args, f"correcting the judge's scores with {args.method}")
    res = judge_corrected(data, cols["judge_score"], cols["human_score"], system=cols["system"], item=cols["item"],
                          epoch=epoch, judge=args.judge, cluster=args.cluster, method=args.method, level=args.level,
                          higher_is_better=args.higher_is_better, reference=args.reference,
                          random_state=args.random_state)
    answer = res.answer
    out: dict[str, Any] = {"systems": res.table}
    agreement = budget = None
    if not args.no_agreement:
        agreement = res.agreement(n_resamples=args.n_resamples, random_state=args.random_state)
        out.update(agreement=agreement.table, bias=agreement.bias, bias_test=agreement.bias_test)
    if args.width is not None or args.power is not None:
        budget = labels_needed(res, width=args.width, power=args.power, delta=args.delta, cost_ratio=args.cost_ratio)
        out["labels_needed"] = budget.table
    warns = list(res.warnings) + (list(agreement.warnings) if agreement else []) + (list(budget.warnings) if budget else [])
    out["warnings"] = [str(w) for w in warns]
    out = {k: v for k, v in out.items() if v is not None}
    if args.report:
        _queue_report(args, out, res, title="mixedeval: judge-corrected evaluation")
    return _emit(args, out, answer=answer)


def _irt_data(args: argparse.Namespace) -> Any:
    """``irt``'s input: a folder of logs (read here when ``--where`` filters its rows: the logs'
    canonical columns system, task, item, run, epoch, metric, ...), else a table read and filtered
    as every command reads DATA."""
    if not Path(args.data).is_dir():
        return _load_data(args.data, args.where)
    if not args.where:
        return args.data
    import dataclasses  # noqa: PLC0415 - only here

    logs = read_eval_logs(args.data, metric=args.metric)
    return dataclasses.replace(logs, table=_where(logs.table, args.where))


def cmd_irt(args: argparse.Namespace) -> int:
    """``mixedeval irt DATA``: item parameters with flags and abilities with intervals."""
    data = _irt_data(args)
    _progress(args, f"fitting the {args.model} item response model")
    res = irt(data, args.model, score=args.score, system=args.system, item=args.item, trials=args.trials,
              metric=args.metric, dif=args.dif, higher_is_better=args.higher_is_better,
              reference=args.reference, level=args.level, n_sim=args.n_sim, random_state=args.random_state,
              progress=not args.quiet)
    items = res.flagged if args.flagged else res.items
    out: dict[str, Any] = {"engine": res.engine, "items": items, "flagged": int(len(res.flagged)),
                           "warnings": [str(w) for w in res.warnings]}
    if args.report:
        _queue_report(args, out, res, title="mixedeval: item response theory")
    return _emit(args, out, answer=res.answer)


def cmd_pass_k(args: argparse.Namespace) -> int:
    """``mixedeval pass-k LOGS --k K [--kind pass^k]``: pass@k / pass^k with intervals."""
    paths = list(args.paths)
    table = len(paths) == 1 and Path(paths[0]).is_file() and Path(paths[0]).suffix.lower() in (
        ".csv", ".tsv", ".parquet", ".json", ".jsonl")
    data: Any = _load_data(paths[0]) if table else paths
    _progress(args, f"computing {args.kind} at k = {args.k}")
    res = pass_at_k(data, k=args.k, kind=args.kind, metric=args.metric, score=args.score, system=args.system,
                    item=args.item, epoch=args.epoch, task=args.task, cluster=args.cluster, value=args.value,
                    level=args.level, reference=args.reference, random_state=args.random_state)
    out: dict[str, Any] = {"k": res.k, "table": res.table, "pairwise": res.pairwise,
                           "attempts": res.provenance["attempts"], "warnings": [str(w) for w in res.warnings]}
    if args.report:
        _queue_report(args, out, res, title="mixedeval: pass@k and pass^k",
                      input_file=_log_inputs(argparse.Namespace(paths=paths)))
    return _emit(args, out, answer=res.answer)


def cmd_horizon(args: argparse.Namespace) -> int:
    """``mixedeval horizon TABLE --length COL``: METR's time horizons with intervals and checks."""
    data = _load_data(args.data, args.where)
    _progress(args, f"fitting the horizons and {args.n_resamples} bootstrap replicates")
    res = time_horizon(data, success=args.success, length=args.length, system=args.system, item=args.item,
                       family=args.family, levels=tuple(args.levels), n_resamples=args.n_resamples,
                       random_state=args.random_state, regularization=args.regularization, weighting=args.weighting,
                       level=args.level, reference=args.reference, hierarchical=not args.no_glmm,
                       interval=args.interval)
    out: dict[str, Any] = {"model": res.provenance["fit"], "table": res.table, "ratios": res.ratios,
                           "warnings": [str(w) for w in res.warnings]}
    if args.report:
        _write_report(args, out, res, title="mixedeval: task-length time horizons")
    return _emit(args, out, answer=res.answer)
