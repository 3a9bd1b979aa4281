"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks:``).

* ``reference/cli.md``: the marker ``<!-- cli-reference -->`` is replaced by the reference of every
  ``mixedeval`` subcommand, generated from the argparse parser itself at build time (so it can never
  disagree with the CLI). The parser is looked up by name in ``mixedeval.cli`` (``build_parser``, or
  ``_parser`` / ``parser``), which starts no R.
* Pages that other work adds (``RESERVED``) are joined to the nav when their files exist, so the
  site builds strictly with or without them.

* griffe's "Could not parse line" messages (a docstring's closing ``Returns a ...`` paragraph read as a
  parameter line of the numpy-style section above it) are shown as INFO, not warnings: they are a
  docstring-layout nit, not a documentation error, and must not fail the strict build. Every other
  griffe or mkdocs warning still does.

Nothing here downloads anything.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI_MARKER = "<!-- cli-reference -->"
PARSER_NAMES = ("build_parser", "_parser", "parser", "make_parser")

# docs path -> (nav section, title, the pages it may follow in that section, first present wins; () at the end)
RESERVED: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "tutorials/preferences.md": ("Tutorials", "Preferences and judges", ("tutorials/llm-logs.md",)),
    "tutorials/battles_formats.md": ("Tutorials", "Judged comparisons (battles)",
                                     ("tutorials/preferences.md", "tutorials/llm-logs.md")),
    "concepts/rankings.md": ("Concepts", "Rankings", ("concepts/statistics.md",)),
    "concepts/executor.md": ("Concepts", "Executors", ()),
    "concepts/log_formats.md": ("Concepts", "Log formats", ()),
    "concepts/limits.md": ("Concepts", "Limits", ()),
    "concepts/architecture.md": ("Concepts", "Architecture", ()),
}


class _DocstringLayoutNits(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and "Could not parse line" in record.getMessage():
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


logging.getLogger("mkdocs.plugins.griffe").addFilter(_DocstringLayoutNits())


# ----------------------------------------------------------------------------- the CLI reference
def get_parser() -> argparse.ArgumentParser:
    """The ``mixedeval`` command's parser, found by name in ``mixedeval.cli``."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    cli = importlib.import_module("mixedeval.cli")
    for name in PARSER_NAMES:
        obj = getattr(cli, name, None)
        if isinstance(obj, argparse.ArgumentParser):
            return obj
        if callable(obj):
            parser = obj()
            if isinstance(parser, argparse.ArgumentParser):
                return parser
    raise RuntimeError(f"mixedeval.cli has none of {PARSER_NAMES} returning an argparse.ArgumentParser")


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Subcommand name -> its parser, in the order the CLI defines them."""
    for action in parser._actions:  # noqa: SLF001 - argparse keeps subparsers here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return dict(action.choices)
    return {}


def _helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return {a.dest: a.help or "" for a in action._choices_actions}  # noqa: SLF001
    return {}


def _help_text(parser: argparse.ArgumentParser) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "88"  # argparse wraps at the terminal width: the page's code block width
    try:
        return parser.format_help()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def _options_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| option | default | meaning |", "|---|---|---|"]
    for a in parser._actions:  # noqa: SLF001
        if isinstance(a, argparse._HelpAction):  # noqa: SLF001
            continue
        if a.option_strings:
            name = ", ".join(f"`{o}`" for o in a.option_strings)
            if a.nargs != 0:
                name += f" `{a.metavar or a.dest.upper()}`"
        else:
            name = f"`{a.metavar or a.dest}` (positional)"
        default = "" if a.default in (None, False, argparse.SUPPRESS) else f"`{a.default}`"
        meaning = (a.help or "").replace("|", "\\|").replace("\n", " ")
        if a.choices and not isinstance(a.choices, dict):
            meaning += " (one of: " + ", ".join(f"`{c}`" for c in a.choices) + ")"
        rows.append(f"| {name} | {default} | {meaning} |")
    return rows


def cli_reference() -> str:
    """Markdown reference of every subcommand: its purpose, usage and options, from argparse."""
    parser = get_parser()
    subs = subcommands(parser)
    helps = _helps(parser)
    out = ["## `mixedeval`", "", "```text", _help_text(parser).rstrip(), "```", ""]
    for name, sub in subs.items():
        lead = helps.get(name, "").rstrip(".")
        out += [f"## `mixedeval {name}`", "", lead[:1].upper() + lead[1:] + ".", ""]
        out += ["```text", _help_text(sub).rstrip(), "```", ""]
        out += _options_table(sub) + [""]
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 - mkdocs hook signature
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return markdown


# ----------------------------------------------------------------------------- reserved pages
def _paths(items: list) -> list[str]:
    out = []
    for item in items:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out += _paths(value)
    return out


def add_reserved(nav: list, docs_dir: Path) -> list:
    """Insert the reserved pages whose files exist (and that the nav does not list yet)."""
    present = set(_paths(nav))
    for path, (section, title, after) in RESERVED.items():
        if path in present or not (docs_dir / path).is_file():
            continue
        entries = next((next(iter(s.values())) for s in nav if isinstance(s, dict) and section in s), None)
        if entries is None:
            entries = []
            nav.append({section: entries})
        where = next(([i for i, e in enumerate(entries) if a in _paths([e])] for a in after
                      if any(a in _paths([e]) for e in entries)), [])
        entries.insert(where[0] + 1 if where else len(entries), {title: path})
        present.add(path)
    return nav


def on_config(config):  # noqa: ANN001, ANN201 - mkdocs hook signature
    if config.get("nav"):
        config["nav"] = add_reserved(config["nav"], Path(config["docs_dir"]))
    return config
