"""Issue 12 point 5: functions a reader can hold in their head.

Every function and method of the package has a body (its docstring excluded) of at most
``MAX_BODY_LINES`` lines: the scipy pattern of a validation function, the computation and
private table builders. Long docstrings are welcome; long code is split.
"""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mixedeval"
MAX_BODY_LINES = 80


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    first = body[0]
    has_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    start = body[1].lineno if has_doc and len(body) > 1 else first.lineno
    return node.end_lineno - start + 1


def _functions():
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path.relative_to(PKG).as_posix(), node


def test_function_bodies_are_short():
    long = [f"{rel}:{node.lineno} {node.name} ({_body_lines(node)} lines)"
            for rel, node in _functions() if _body_lines(node) > MAX_BODY_LINES]
    assert not long, f"functions longer than {MAX_BODY_LINES} lines (split them): " + "; ".join(long)


def test_the_measure_counts_code_not_docstrings():
    src = 'def f():\n    """doc\n\n    more doc\n    """\n    a = 1\n    return a\n'
    (node,) = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef)]
    assert _body_lines(node) == 2
