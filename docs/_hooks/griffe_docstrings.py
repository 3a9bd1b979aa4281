"""A griffe extension for the API reference (mkdocs.yml, mkdocstrings ``extensions``).

mixedeval's docstrings use numpy's ``Parameters`` layout with a description, not a type, after the
colon (``formula : lme4 formula, e.g. ...``), and often close with a free paragraph after the
parameters (``Returns a :class:`X` ...``). Read literally, numpy style puts those descriptions in
the *type* column and the closing paragraph into the parameter list. Before parsing, this
extension rewrites each docstring: ``name : text`` becomes ``name`` with ``text`` as the first
line of its description, and paragraphs that follow the parameter list without being parameters
move above it. Square brackets outside code spans that do not form a Markdown link (``[x run]``,
an optional part of a sentence) are escaped, so they are not read as cross-references. The source
Sphinx roles (``:class:`X` ``) become code spans. The source files are not changed.
"""
from __future__ import annotations

import re

import griffe

HEADER = re.compile(r"^(Parameters|Other Parameters)\s*$")
RULE = re.compile(r"^-{3,}\s*$")
PARAM = re.compile(r"^([\w*]+(?:\s*,\s*[\w*]+)*)\s*:\s*(.*)$")
SECTION = re.compile(r"^(Returns|Yields|Raises|Notes|Examples|See Also|References|Warns|Attributes|Methods)\s*$")


def _split_parameters(lines: list[str], start: int) -> tuple[list[str], list[str], int]:
    """From the first line after a Parameters rule: (rewritten parameter lines, moved paragraphs, end)."""
    params: list[str] = []
    moved: list[str] = []
    i = start
    while i < len(lines):
        line = lines[i]
        if SECTION.match(line) and i + 1 < len(lines) and RULE.match(lines[i + 1]):
            break
        m = PARAM.match(line) if line and not line[0].isspace() else None
        if m:
            params += [m.group(1)] + ([f"    {m.group(2)}"] if m.group(2) else [])
        elif line.strip() == "" or line[0].isspace():
            params.append(line)
        else:  # a paragraph that is not a parameter: move it, up to the next blank line
            while i < len(lines) and lines[i].strip():
                moved.append(lines[i])
                i += 1
            moved.append("")
            continue
        i += 1
    return params, moved, i


CODE = re.compile(r"(``.*?``|`[^`]*`)")
BRACKET = re.compile(r"\[(?![^\]]*\]\()")


ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj):`~?([^`]+)`")


def _escape_brackets(line: str) -> str:
    parts = CODE.split(ROLE.sub(r"``\1``", line))
    return "".join(p if i % 2 else BRACKET.sub(r"\\[", p) for i, p in enumerate(parts))


def rewrite(doc: str) -> str:
    lines = [_escape_brackets(line) for line in doc.splitlines()]
    for i in range(len(lines) - 1):
        if HEADER.match(lines[i]) and RULE.match(lines[i + 1]):
            params, moved, end = _split_parameters(lines, i + 2)
            head = lines[:i] + (moved if moved else [])
            return "\n".join(head + lines[i:i + 2] + params + lines[end:]).rstrip() + "\n"
    return "\n".join(lines)


class DescriptionsNotTypes(griffe.Extension):
    def on_object(self, *, obj, loader, **kwargs) -> None:  # noqa: ANN001, ANN003 - griffe's hook
        if obj.docstring is not None and not obj.is_alias:
            obj.docstring.value = rewrite(obj.docstring.value)
