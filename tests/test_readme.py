"""The README's examples work: every ```python block runs (in order, in one namespace, as a
reader following the guide would run them), the two set-up-free commands are there verbatim and
are the only ones presented as such, every ``mixedeval`` command line it shows parses with the
real CLI parser (so subcommands and options exist), every subcommand of the parser is documented,
and the benchmark scripts and test files it cites exist."""
from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COMMANDS = (
    "bash scripts/setup.sh && .venv/bin/mixedeval demo",
    "bash scripts/setup.sh && .venv/bin/python -m pytest",
)
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _blocks(lang: str) -> list[tuple[int, str]]:
    """(first line number, code) of every fenced block in language ``lang``."""
    text = _text()
    return [(text.count("\n", 0, m.start(2)) + 1, m.group(2)) for m in FENCE.finditer(text) if m.group(1) == lang]


def _prose() -> str:
    """The README without its fenced blocks."""
    return FENCE.sub("", _text())


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from mixedeval.cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    return dict(action.choices)


# ----------------------------------------------------------------------- the two commands
def test_two_setup_free_commands_verbatim():
    text = _text()
    bash_lines = [line.split("#", 1)[0].strip() for _, code in _blocks("bash") for line in code.splitlines()]
    for cmd in COMMANDS:
        assert cmd in bash_lines, f"README lacks the command line {cmd!r} (verbatim, in a bash block)"
    # the set-up script chained with a command is how a set-up-free command looks: only these two
    chained = [line.split("#", 1)[0].strip().strip("`") for line in text.splitlines()
               if re.search(r"scripts/setup\.sh\s*&&", line)]
    assert sorted(set(chained)) == sorted(COMMANDS), f"set-up-free commands in README: {chained}"
    # they come first: before the user guide
    assert text.index(COMMANDS[0]) < text.index("## User guide")
    assert text.index(COMMANDS[1]) < text.index("## User guide")


# ----------------------------------------------------------------------- python examples
def test_python_examples_run(tmp_path, monkeypatch):
    """Every python block, in order, in one namespace; files they write land in a temp dir."""
    blocks = _blocks("python")
    assert len(blocks) >= 20, f"only {len(blocks)} python blocks found in README.md"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MIXEDEVAL_QUIET", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    ns: dict = {"__name__": "readme_examples"}
    for line, code in blocks:
        try:
            exec(compile(code, f"README.md (block at line {line})", "exec"), ns)  # noqa: S102
        except Exception as exc:  # noqa: BLE001 - report which block failed
            pytest.fail(f"README python block at line {line} failed: {type(exc).__name__}: {exc}")
    # the report examples wrote self-contained HTML files
    for name in ("ter-report.html", "annotation-vca.html"):
        page = (tmp_path / name).read_text(encoding="utf-8")
        assert page.lstrip().lower().startswith("<!doctype html") and "data:image" in page
    # the objects the guide talks about are what it says they are
    import mixedeval as me

    assert isinstance(ns["fit"], me.LMMFit)
    assert list(ns["fit"].fixed.columns) == ["term", "estimate", "std_error", "df", "t_value", "p_value",
                                             "conf_low", "conf_high"]
    assert list(ns["boot"].summary().columns) == ["system", "estimate", "boot_mean", "std_error", "conf_low",
                                                  "conf_high"]


# ----------------------------------------------------------------------- command lines
def _command_lines() -> list[tuple[int, list[str]]]:
    """Argument lists after ``mixedeval`` in every bash line that runs the mixedeval command
    (continuation lines joined, comments dropped); lines where mixedeval is not the command
    (``docker build -t mixedeval .``, ``--entrypoint ... mixedeval -m pytest``) are skipped."""
    out = []
    for start, code in _blocks("bash"):
        logical: list[tuple[int, str]] = []  # (README line number, line with its continuations joined)
        pending = None
        for offset, raw in enumerate(code.splitlines()):
            pending = (start + offset, raw) if pending is None else (pending[0], pending[1] + " " + raw)
            if raw.endswith("\\"):
                pending = (pending[0], pending[1][:-1])
                continue
            logical.append(pending)
            pending = None
        for line_no, line in logical:
            tokens = shlex.split(line, comments=True)
            for i, tok in enumerate(tokens):
                if (tok == "mixedeval" or tok.endswith("/mixedeval")) and i + 1 < len(tokens):
                    nxt = tokens[i + 1]
                    if re.match(r"[a-z]", nxt) or nxt in ("--help", "-h"):
                        out.append((line_no, tokens[i + 1:]))
                    break
    return out


def test_cli_command_lines_parse():
    from mixedeval.cli import build_parser

    lines = _command_lines()
    subs = _subcommands()
    assert len(lines) >= 8
    for line, argv in lines:
        if argv[0] not in ("--help", "-h"):
            assert argv[0] in subs, f"README line {line}: 'mixedeval {argv[0]}' is not a subcommand ({sorted(subs)})"
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            assert exc.code == 0, f"README line {line}: 'mixedeval {' '.join(argv)}' does not parse"


def test_every_mentioned_subcommand_exists_and_every_subcommand_is_documented(capsys):
    from mixedeval.cli import main

    subs = _subcommands()
    spans = re.findall(r"`([^`\n]+)`", _prose())
    mentioned: set[str] = {argv[0] for _, argv in _command_lines() if not argv[0].startswith("-")}
    for span in spans:
        for m in re.finditer(r"(?:^|[\s/])mixedeval\s+([a-z][\w|-]*)", span):
            mentioned.update(m.group(1).split("|"))
    unknown = sorted(mentioned - set(subs))
    assert not unknown, f"README mentions subcommands the CLI does not have: {unknown}"
    assert set(subs) <= mentioned, f"subcommands missing from the README: {sorted(set(subs) - mentioned)}"
    for sub in sorted(subs):  # `mixedeval <sub> --help` works, as the README says
        assert main([sub, "--help"]) == 0
        assert "usage: mixedeval " + sub in capsys.readouterr().out


# ----------------------------------------------------------------------- cited files
def test_benchmarks_and_published_value_tests_are_cited():
    text = _text()
    bench = text[text.index("## Benchmarks"):text.index("## Reproducing published numbers")]
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        assert f"benchmarks/{script.name}" in bench or f"`{script.name}`" in bench, \
            f"benchmarks/{script.name} is not described in the Benchmarks section"
    published = text[text.index("## Reproducing published numbers"):text.index("## Testing")]
    cited = set(re.findall(r"tests/(test_\w+\.py)", published))
    assert cited, "the Reproducing published numbers section cites no test file"
    for name in cited:
        assert (ROOT / "tests" / name).is_file(), f"tests/{name} cited in README does not exist"
    for source in ("Hagmann", "Table 2.2", "Table 2.3", "Table 3.1", "Table 3.2", "Hu", "Krippendorff"):
        assert source in published
