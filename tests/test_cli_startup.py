"""An instant command line (issue 25, point 3).

* importing :mod:`mixedeval.cli` loads no numpy, pandas, rpy2, scipy or matplotlib (checked in a
  fresh interpreter: ``sys.modules`` after the import); the handlers' module
  (:mod:`mixedeval._cli_commands`) is imported only when a subcommand runs;
* ``mixedeval --help`` and every ``mixedeval COMMAND --help`` print within 0.3 s of CPU time (the
  best of 5 runs; CPU time of the child process, so that the load of a shared machine does not
  count; ``benchmarks/bench_cli_startup.py`` prints the wall times against ``python -c pass``);
* the help texts are plain words: no reStructuredText markup (double back-quotes, ``:func:``
  roles);
* the option choices the parser spells out itself agree with the library's own lists.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mixedeval import cli

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "pandas", "rpy2", "scipy", "matplotlib", "mixedeval._cli_commands", "mixedeval.engine",
         "mixedeval.inference._lmm", "mixedeval.workflows", "mixedeval._report")
#: the issue's bound for printing the help
HELP_SECONDS = 0.3


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _subcommands() -> list[str]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    return sorted(sub.choices)


def _loaded_after(code: str) -> list[str]:
    probe = (f"import sys\n{code}\n"
             f"print('\\n'.join(m for m in sys.modules if m.split('.')[0] in {tuple(h.split('.')[0] for h in HEAVY)!r} "
             f"and any(m == h or m.startswith(h + '.') for h in {HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=_env(),
                         check=True)
    return [m for m in out.stdout.split() if m]


def test_importing_the_cli_loads_no_heavy_module():
    assert _loaded_after("import mixedeval.cli") == []


def test_building_the_parser_and_help_load_no_heavy_module():
    code = ("import contextlib, io, mixedeval.cli as c\n"
            "p = c.build_parser()\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    for argv in (['--help'], ['fit', '--help'], ['bootstrap', '--help']):\n"
            "        assert c.main(argv) == 0")
    assert _loaded_after(code) == []


def test_the_probe_sees_a_heavy_import():
    """The check above can fail: the same probe reports pandas once something imports it."""
    assert "pandas" in _loaded_after("import mixedeval.cli, mixedeval._cli_commands")


def _cpu_seconds(argv: list[str]) -> float:
    """CPU time (user + system) of one run of ``python argv`` in a child process."""
    before = os.times()
    subprocess.run([sys.executable, *argv], capture_output=True, timeout=120, env=_env(), check=True)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


@pytest.mark.parametrize("command", [None, *_subcommands()])  # every subcommand the parser has
def test_help_prints_at_once(command):
    argv = ["-m", "mixedeval.cli", *([command] if command else []), "--help"]
    best = min(_cpu_seconds(argv) for _ in range(5))
    assert best < HELP_SECONDS, f"mixedeval {command or ''} --help took {best:.3f} s of CPU time"


def test_the_timing_can_fail():
    """The same measurement sees an import that takes half a second."""
    slow = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"
    assert min(_cpu_seconds(["-c", slow]) for _ in range(2)) > HELP_SECONDS


def _help_texts() -> dict[str, str]:
    parser = cli.build_parser()
    out = {"mixedeval": parser.format_help()}
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    for name, p in sub.choices.items():
        out[name] = p.format_help()
    return out


def test_help_texts_are_plain_words():
    texts = _help_texts()
    assert set(texts) == {"mixedeval", *_subcommands()}
    markup = re.compile(r"``|:(func|class|mod|meth|data|attr):`|`[^`\s][^`]*`_")
    bad = {name: markup.findall(text) for name, text in texts.items() if markup.search(text)}
    assert not bad, f"help texts with reStructuredText markup: {bad}"
    top = " ".join(texts["mixedeval"].split())
    assert "compare-logs (systems compared" in top and "DATA is a file" in top and "exits with status 130" in top


def test_the_markup_check_can_fail():
    assert re.search(r"``|:(func|class|mod|meth|data|attr):`", "see :func:`mixedeval.lmm` and ``check``")


def test_choices_agree_with_the_library():
    from mixedeval.inference._glmm import FAMILIES, GLMM_OPTIMIZERS
    from mixedeval.inference._options import OPTIMIZERS
    from mixedeval.resampling._stats import STATISTICS

    assert tuple(cli.BOOTSTRAP_STATISTICS) == tuple(STATISTICS)
    assert tuple(cli.OPTIMIZERS) == tuple(OPTIMIZERS)
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    fit = {a.dest: a for a in sub.choices["fit"]._actions}  # noqa: SLF001
    assert fit["family"].choices == ["gaussian", *FAMILIES]
    assert set(fit["optimizer"].choices) == {*OPTIMIZERS, *GLMM_OPTIMIZERS}


def test_a_subcommand_imports_its_handlers_when_it_runs():
    """main() runs the handler of mixedeval._cli_commands through the lazy cmd_* of mixedeval.cli,
    importing that module only then (a fresh interpreter)."""
    assert cli.cmd_summarize.__name__ == "cmd_summarize"
    code = ("import sys, mixedeval.cli as c\n"
            "before = 'mixedeval._cli_commands' in sys.modules\n"
            "rc = c.main(['summarize', 'no_such_log.json', '--metric', 'acc', '--quiet'])\n"
            "print(before, rc, 'mixedeval._cli_commands' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=_env(),
                         cwd=ROOT / "tests")
    assert out.stdout.split() == ["False", str(cli.EXIT_USAGE), "True"], out.stdout + out.stderr
    assert out.stderr.startswith("mixedeval: error: ") and "does not exist" in out.stderr
