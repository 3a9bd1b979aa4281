"""The README is the newcomer's first page (issue 25): at most ``MAX_LINES`` lines; every ```python
block runs (in order, in one namespace, as a reader following it would run them); the two
set-up-free commands are there verbatim, before the examples, and are the only ones presented as
such; every ``mixedeval`` command line it shows parses with the real CLI parser; every subcommand it
names exists; and every link into the documentation points at a page that exists. The full guide
is the documentation site (docs/, tests/test_docs.py)."""
from __future__ import annotations

import re

from doc_examples import ROOT, blocks, check_command_lines, mentioned_subcommands, run_python_blocks, subcommands

README = ROOT / "README.md"
MAX_LINES = 300
COMMANDS = (
    "bash scripts/setup.sh && .venv/bin/mixedeval demo",
    "bash scripts/setup.sh && .venv/bin/python -m pytest",
)


def _text() -> str:
    return README.read_text(encoding="utf-8")


def test_short():
    n = len(_text().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines (at most {MAX_LINES}: the rest belongs in docs/)"


# ----------------------------------------------------------------------- the two commands
def test_two_setup_free_commands_verbatim():
    text = _text()
    bash_lines = [line.split("#", 1)[0].strip() for _, code, _ in blocks(text, "bash") for line in code.splitlines()]
    for cmd in COMMANDS:
        assert cmd in bash_lines, f"README lacks the command line {cmd!r} (verbatim, in a bash block)"
    # the set-up script chained with a command is how a set-up-free command looks: only these two
    chained = [line.split("#", 1)[0].strip().strip("`") for line in text.splitlines()
               if re.search(r"scripts/setup\.sh\s*&&", line)]
    assert sorted(set(chained)) == sorted(COMMANDS), f"set-up-free commands in README: {chained}"
    # they come first: before any example
    first_example = text.index("```python")
    assert text.index(COMMANDS[0]) < first_example and text.index(COMMANDS[1]) < first_example


# ----------------------------------------------------------------------- python examples
def test_python_examples_run(tmp_path, monkeypatch):
    """Every python block, in order, in one namespace; files they write land in a temp dir."""
    py = blocks(_text(), "python")
    assert len(py) >= 3, f"only {len(py)} python blocks found in README.md (three examples)"
    ns = run_python_blocks(_text(), "README.md", tmp_path, monkeypatch)
    import mixedeval as me

    page = (tmp_path / "llm-report.html").read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html") and "data:image" in page
    assert isinstance(ns["fit"], me.LMMFit)
    assert list(ns["fit"].fixed.columns) == ["term", "estimate", "std_error", "df", "t_value", "p_value",
                                             "conf_low", "conf_high"]
    assert ns["ss"].n_levels in (40, 80, 160)


# ----------------------------------------------------------------------- command lines and links
def test_cli_command_lines_parse():
    assert check_command_lines(_text(), "README.md") >= 4


def test_every_mentioned_subcommand_exists():
    unknown = sorted(mentioned_subcommands(_text()) - set(subcommands()))
    assert not unknown, f"README mentions subcommands the CLI does not have: {unknown}"


def test_links_into_the_documentation_exist():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", _text())
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert sum(link.startswith("docs/") for link in local) >= 15, "the README should link into the documentation"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"
    for tutorial in sorted((ROOT / "docs" / "tutorials").glob("*.md")):
        assert f"docs/tutorials/{tutorial.name}" in links, f"README does not link to docs/tutorials/{tutorial.name}"
