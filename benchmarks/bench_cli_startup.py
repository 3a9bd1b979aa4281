"""Issue 25, point 3: start-up time of the command line, against a bare interpreter.

Each command runs in a fresh ``python`` process (the interpreter this script runs under, with this
checkout first on ``PYTHONPATH``); the table gives the best and the median wall time of ``--repeat``
runs, the CPU time (user + system) of the best run, and the ratio of the best wall time to that
of the baseline ``python -c pass`` measured in the same run. For reference it also times what the
command line cost before its handlers were imported lazily: ``import mixedeval._cli_commands``
(pandas, numpy, scipy, matplotlib and every analysis module, but not R).

Target (the issue): ``mixedeval --help`` and every ``mixedeval COMMAND --help`` in under 0.3 s on
this class of machine. On a machine shared with other jobs the wall times grow with the load
(``python -c pass`` included); the CPU times and the ratios move less.

Issue 30, point 7: ``mixedeval compare-logs`` on the bundled Inspect logs (``--metric match
--cluster cluster``) within 3x the time R needs to start and load lme4 (``Rscript -e
'library(lme4)'``), both timed here in the same run (best and median of ``--logs-repeat`` runs
after a warm-up; the ratio is of the best wall times, and of the CPU times). For reference it also
times ``compare-logs --checks`` (the model-based check: three binomial GLMM fits through R).

Run: .venv/bin/python benchmarks/bench_cli_startup.py [--repeat 7] [--logs-repeat 5] [--no-help]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mixedeval import cli  # noqa: E402 - this checkout, not an installed copy


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_once(argv: list[str], program: str | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one ``python argv`` (or ``program argv``)."""
    before = os.times()
    t = time.perf_counter()
    subprocess.run([program or sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=_env(), check=True, timeout=300)
    wall = time.perf_counter() - t
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def measure(argv: list[str], repeat: int, program: str | None = None) -> tuple[float, float, float]:
    """(best wall, median wall, CPU of the best run) over ``repeat`` runs after one warm-up run."""
    run_once(argv, program)  # warm the file system cache and the bytecode cache
    runs = [run_once(argv, program) for _ in range(repeat)]
    best = min(runs)
    return best[0], statistics.median(w for w, _ in runs), best[1]


def bench_compare_logs(repeat: int) -> None:
    """compare-logs on the bundled logs against R's start with lme4, in the same run (issue 30, point 7)."""
    logs = str(ROOT / "mixedeval" / "datasets_files" / "llm_inspect_logs")
    argv = ["-m", "mixedeval.cli", "--quiet", "compare-logs", logs, "--metric", "match", "--cluster", "cluster"]
    rscript = shutil.which("Rscript")
    if rscript is None:
        print("Rscript not found: the compare-logs bound needs R")
        return
    cases = [("Rscript -e 'library(lme4)' (baseline)", ["-e", "suppressMessages(library(lme4))"], rscript),
             ("mixedeval compare-logs (default)", argv, None),
             ("mixedeval compare-logs --checks", [*argv, "--checks"], None)]
    print(f"\ncompare-logs on the bundled Inspect logs (--metric match --cluster cluster), best of {repeat} runs")
    print(f"{'command':<44} {'best s':>8} {'median s':>9} {'cpu s':>7} {'x R wall':>9} {'x R cpu':>8}")
    base = None
    for label, args, program in cases:
        best, med, cpu = measure(args, repeat, program)
        base = (best, cpu) if base is None else base
        print(f"{label:<44} {best:8.3f} {med:9.3f} {cpu:7.3f} {best / base[0]:9.2f} {cpu / base[1]:8.2f}")
        if label.endswith("(default)"):
            default = (best, cpu)
    print(f"compare-logs / R with lme4: {default[0] / base[0]:.2f}x wall, {default[1] / base[1]:.2f}x CPU "
          "(issue 30's bound: 3x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="runs of each --help command")
    ap.add_argument("--logs-repeat", type=int, default=5, help="runs of compare-logs and of Rscript")
    ap.add_argument("--no-help", action="store_true", help="only the compare-logs timing")
    args = ap.parse_args()
    if args.no_help:
        bench_compare_logs(args.logs_repeat)
        return
    parser = cli.build_parser()
    subcommands = sorted(next(a for a in parser._actions  # noqa: SLF001
                              if isinstance(a, argparse._SubParsersAction)).choices)  # noqa: SLF001
    cases = [("python -c pass (baseline)", ["-c", "pass"]),
             ("python -c 'import mixedeval'", ["-c", "import mixedeval"]),
             ("mixedeval --help", ["-m", "mixedeval.cli", "--help"]),
             *[(f"mixedeval {c} --help", ["-m", "mixedeval.cli", c, "--help"]) for c in subcommands],
             ("import mixedeval._cli_commands (before)", ["-c", "import mixedeval._cli_commands"])]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
          f"best of {args.repeat} runs")
    print(f"{'command':<44} {'best s':>8} {'median s':>9} {'cpu s':>7} {'x baseline':>11}")
    base = None
    worst_help = 0.0
    for label, argv in cases:
        best, med, cpu = measure(argv, args.repeat)
        base = best if base is None else base
        if label.endswith("--help"):
            worst_help = max(worst_help, best)
        print(f"{label:<44} {best:8.3f} {med:9.3f} {cpu:7.3f} {best / base:11.2f}")
    print(f"slowest --help: {worst_help:.3f} s (target < 0.3 s); its start-up beyond the bare interpreter: "
          f"{worst_help - base:.3f} s")
    bench_compare_logs(args.logs_repeat)


if __name__ == "__main__":
    main()
