"""Light-weight reading of lme4 model formulas on the Python side.

mixedeval does not re-implement R's formula parser. It only needs to know which data columns a
formula mentions (to validate and send just those columns), which of them are grouping factors
(the right-hand side of ``|``), and to back-quote column names that are not syntactic R names
(spaces, brackets, ...), so ``"score ~ my system + (1|item id)"`` just works.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

_SYNTACTIC = re.compile(r"^((([A-Za-z]|[.][A-Za-z._])[A-Za-z0-9._]*)|[.])$")
_RESERVED = {
    "if", "else", "repeat", "while", "function", "for", "next", "break", "TRUE", "FALSE", "NULL",
    "Inf", "NaN", "NA", "NA_integer_", "NA_real_", "NA_character_", "in",
}
_IDENT = re.compile(r"`([^`]+)`|([A-Za-z.][A-Za-z0-9._]*)")
_ID_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._")


def is_syntactic(name: str) -> bool:
    return bool(_SYNTACTIC.match(name)) and name not in _RESERVED


def quote_columns(formula: str, columns: Iterable[str]) -> str:
    """Back-quote every non-syntactic column name that appears verbatim (outside back-quotes)."""
    names = sorted((c for c in map(str, columns) if not is_syntactic(c)), key=len, reverse=True)
    if not names:
        return formula
    out: list[str] = []
    i, n = 0, len(formula)
    while i < n:
        ch = formula[i]
        if ch == "`":
            j = formula.find("`", i + 1)
            j = n - 1 if j < 0 else j
            out.append(formula[i : j + 1])
            i = j + 1
            continue
        matched = None
        if i == 0 or formula[i - 1] not in _ID_CHARS:
            for name in names:
                end = i + len(name)
                if formula.startswith(name, i) and (end >= n or formula[end] not in _ID_CHARS or not name[-1:] in _ID_CHARS):
                    matched = name
                    break
        if matched:
            out.append(f"`{matched}`")
            i += len(matched)
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _tokens(formula: str) -> list[tuple[str, int, int]]:
    """(name, start, end) of identifiers and back-quoted names, skipping function names."""
    toks = []
    for m in _IDENT.finditer(formula):
        name = m.group(1) if m.group(1) is not None else m.group(2)
        rest = formula[m.end() :].lstrip()
        if m.group(2) is not None and rest.startswith("("):
            continue  # a function call such as log( or poly(
        if m.group(2) is not None and name in _RESERVED:
            continue
        toks.append((name, m.start(), m.end()))
    return toks


def referenced_columns(formula: str, columns: Iterable[str]) -> list[str]:
    """Data columns the formula mentions, in the order of first appearance."""
    cols = set(map(str, columns))
    q = quote_columns(formula, cols)
    seen: list[str] = []
    for name, _, _ in _tokens(q):
        if name in cols and name not in seen:
            seen.append(name)
    return seen


def unknown_variables(formula: str, columns: Iterable[str]) -> list[str]:
    """Names in the formula that are neither data columns nor known constants/functions."""
    cols = set(map(str, columns))
    q = quote_columns(formula, cols)
    out = []
    for name, _, _ in _tokens(q):
        if name not in cols and name not in out and name not in ("pi",):
            out.append(name)
    return out


def response(formula: str) -> str | None:
    """The response (left of ``~``) with back-quotes removed, or None."""
    if "~" not in formula:
        return None
    lhs = formula.split("~", 1)[0].strip()
    return lhs[1:-1] if lhs.startswith("`") and lhs.endswith("`") else lhs or None


def grouping_columns(formula: str, columns: Iterable[str]) -> list[str]:
    """Columns that appear on the right of ``|`` inside a random-effect bar term."""
    cols = set(map(str, columns))
    q = quote_columns(formula, cols)
    out: list[str] = []
    depth_start = [m.start() for m in re.finditer(r"\(", q)]
    for start in depth_start:
        # find the matching parenthesis
        depth, j = 0, start
        while j < len(q):
            if q[j] == "(":
                depth += 1
            elif q[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        inner = q[start + 1 : j]
        if "|" in inner and inner.count("(") == 0:
            rhs = inner.split("|")[-1]
            for name, _, _ in _tokens(rhs):
                if name in cols and name not in out:
                    out.append(name)
    return out
