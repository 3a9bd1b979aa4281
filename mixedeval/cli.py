"""The ``mixedeval`` command line.

Subcommands: ``check`` (environment), ``demo`` (full analysis of a bundled data set, writes the
HTML report), ``fit`` (a mixed model over a CSV/Parquet/JSON file). Errors print one line to
stderr and exit with status 2; progress bars go to stderr and ``--quiet`` silences them.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

EXIT_USAGE = 2


def _print_json(obj: Any) -> None:
    from .results import jsonable  # noqa: PLC0415

    json.dump(jsonable(obj), sys.stdout, indent=2)
    sys.stdout.write("\n")


def _table(title: str, df) -> None:
    import pandas as pd  # noqa: PLC0415

    with pd.option_context("display.max_columns", 30, "display.width", 160, "display.max_rows", 100):
        print(f"\n== {title} ==")
        print(df.to_string(index=False))


def cmd_check(args: argparse.Namespace) -> int:
    from .engine.check import check_r  # noqa: PLC0415

    res = check_r()
    if args.json:
        _print_json(res.to_dict())
    else:
        print(res)
    return 0 if res.ok else 1


def _load_data(path: str):
    from . import datasets  # noqa: PLC0415
    from .data.table import as_pandas  # noqa: PLC0415

    if path in datasets.DATASETS:
        return datasets.load(path)
    return as_pandas(path)


def cmd_fit(args: argparse.Namespace) -> int:
    from .lmm import lmm  # noqa: PLC0415

    data = _load_data(args.data)
    fit = lmm(args.formula, data, reml=not args.ml, optimizer=args.optimizer, df_method=args.df_method,
              factors=tuple(args.factor or ()))
    out: dict[str, Any] = {"fit": fit.to_dict()}
    anova = fit.anova(type=args.anova_type) if args.anova else None
    if anova is not None:
        out["anova"] = anova.table
    emm = None
    if args.emmeans:
        emm = fit.emmeans(args.emmeans, df_method=args.df_method)
        out["emmeans"] = emm.table
        out["contrasts"] = emm.contrasts(method="pairwise", adjust=args.adjust).table
    if args.report:
        fit.report(args.report, quiet=args.quiet)
        out["report"] = args.report
    if args.json:
        _print_json(out)
        return 0
    print(fit)
    for key in ("anova", "emmeans", "contrasts"):
        if key in out:
            _table(key, out[key])
    if args.report:
        print(f"\nreport written to {args.report}", file=sys.stderr)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo  # noqa: PLC0415

    return run_demo(dataset=args.dataset, out=args.out, n_sim=args.n_sim, n_boot=args.n_boot,
                    quiet=args.quiet, as_json=args.json)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mixedeval", description=__doc__.split("\n\n")[0])
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("check", help="R, rpy2 and R package versions; what is missing and how to install it")
    c.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    c.set_defaults(func=cmd_check)

    d = sub.add_parser("demo", help="full analysis of a bundled data set; writes the HTML report")
    d.add_argument("--dataset", default="kreutzer_ter", help="bundled data set (default: kreutzer_ter)")
    d.add_argument("--out", default="mixedeval-report.html", help="report path (default: mixedeval-report.html)")
    d.add_argument("--n-sim", type=int, default=250, help="simulations for the residual diagnostics")
    d.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples")
    d.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    d.add_argument("--quiet", action="store_true", help="no progress bars")
    d.set_defaults(func=cmd_demo)

    f = sub.add_parser("fit", help="fit a linear mixed model to a CSV/Parquet/JSON file")
    f.add_argument("data", help="data file (.csv, .tsv, .parquet, .json) or a bundled data set name")
    f.add_argument("--formula", required=True, help='lme4 formula, e.g. "ter ~ system + (1|sentence_id)"')
    f.add_argument("--ml", action="store_true", help="fit by maximum likelihood (default REML)")
    f.add_argument("--optimizer", default="nloptwrap", choices=["nloptwrap", "bobyqa", "Nelder_Mead"])
    f.add_argument("--df-method", default="satterthwaite", choices=["satterthwaite", "kenward-roger", "asymptotic"])
    f.add_argument("--factor", action="append", help="numeric column to treat as a factor (repeatable)")
    f.add_argument("--anova", action="store_true", help="add the F-test table with partial eta-squared")
    f.add_argument("--anova-type", type=int, default=3, choices=[1, 2, 3])
    f.add_argument("--emmeans", help="factor for estimated marginal means and pairwise contrasts")
    f.add_argument("--adjust", default="holm", help="p-value adjustment for contrasts (default holm)")
    f.add_argument("--report", help="also write an HTML report to this path")
    f.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    f.add_argument("--quiet", action="store_true", help="no progress bars")
    f.set_defaults(func=cmd_fit)
    return p


_EXTRA_COMMANDS: list[Any] = []


def main(argv: Sequence[str] | None = None) -> int:
    from .errors import MixedEvalError  # noqa: PLC0415

    parser = build_parser()
    for register in _EXTRA_COMMANDS:
        register(parser)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    if getattr(args, "quiet", False):
        import os  # noqa: PLC0415

        os.environ["MIXEDEVAL_QUIET"] = "1"
    try:
        return int(args.func(args) or 0)
    except MixedEvalError as exc:
        print(f"mixedeval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (FileNotFoundError, PermissionError) as exc:
        print(f"mixedeval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # pragma: no cover
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
