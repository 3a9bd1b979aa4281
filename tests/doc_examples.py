"""Shared machinery of the documentation tests (tests/test_readme.py, tests/test_docs.py): fenced
blocks of a Markdown file, running its ```python blocks in one namespace, and the ``mixedeval``
command lines of its ```bash blocks.

A block is skipped only when the line right before its fence is the explicit marker
``<!-- docs-test: skip REASON -->`` with a non-empty reason (for example a block that needs a
container runtime or a Dask cluster); tests/test_docs.py keeps the number of such blocks small.
"""
from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\b(.*?)-->\s*\n$")


def blocks(text: str, lang: str, *, with_skipped: bool = False) -> list[tuple[int, str, str | None]]:
    """(first line number, code, skip reason or None) of every fenced block in language ``lang``."""
    out = []
    for m in FENCE.finditer(text):
        if m.group(1) != lang:
            continue
        before = text[max(0, m.start() - 300):m.start()]
        skip = SKIP.search(before)
        reason = skip.group(1).strip() if skip else None
        if skip and not reason:
            raise AssertionError(f"a docs-test skip marker without a reason before line {text.count(chr(10), 0, m.start()) + 1}")
        if reason is None or with_skipped:
            out.append((text.count("\n", 0, m.start(2)) + 1, m.group(2), reason))
    return out


def prose(text: str) -> str:
    """The text without its fenced blocks."""
    return FENCE.sub("", text)


def run_python_blocks(text: str, name: str, tmp_path: Path, monkeypatch) -> dict:
    """Every python block of ``text``, in order, in one namespace; files they write land in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MIXEDEVAL_QUIET", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    ns: dict = {"__name__": "docs_examples"}
    for line, code, _ in blocks(text, "python"):
        try:
            exec(compile(code, f"{name} (block at line {line})", "exec"), ns)  # noqa: S102
        except Exception as exc:  # noqa: BLE001 - report which block failed
            pytest.fail(f"{name}: python block at line {line} failed: {type(exc).__name__}: {exc}")
    return ns


def subcommands() -> dict[str, argparse.ArgumentParser]:
    from mixedeval.cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    return dict(action.choices)


def command_lines(text: str) -> list[tuple[int, list[str]]]:
    """Argument lists after ``mixedeval`` in every bash line that runs the mixedeval command
    (continuation lines joined, comments dropped); lines where mixedeval is not the command
    (``docker build -t mixedeval .``, ``--entrypoint ... mixedeval -m pytest``) are skipped."""
    out = []
    for start, code, _ in blocks(text, "bash"):
        logical: list[tuple[int, str]] = []  # (line number, line with its continuations joined)
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


def mentioned_subcommands(text: str) -> set[str]:
    """Subcommands named in bash command lines and in inline code spans (`mixedeval fit ...`)."""
    mentioned = {argv[0] for _, argv in command_lines(text) if not argv[0].startswith("-")}
    for span in re.findall(r"`([^`\n]+)`", prose(text)):
        if re.search(r"\bimport\b", span):  # Python (`from mixedeval import diagnostics`), not a command
            continue
        for m in re.finditer(r"(?:^|[\s/])mixedeval\s+([a-z][\w|-]*)", span):
            mentioned.update(m.group(1).split("|"))
    return mentioned


def check_command_lines(text: str, name: str) -> int:
    """Every ``mixedeval`` command line of ``text`` names a subcommand and parses; returns how many."""
    from mixedeval.cli import build_parser

    subs = subcommands()
    lines = command_lines(text)
    for line, argv in lines:
        if argv[0] not in ("--help", "-h"):
            assert argv[0] in subs, f"{name} line {line}: 'mixedeval {argv[0]}' is not a subcommand ({sorted(subs)})"
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            assert exc.code == 0, f"{name} line {line}: 'mixedeval {' '.join(argv)}' does not parse"
    return len(lines)
