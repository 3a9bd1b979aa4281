"""Model formulas as data: a small, linear-time parser for the lme4 formula language.

A formula string from a user is never handed to R as it is. :func:`parse_formula` reads it into a
syntax tree on the Python side, checks every token against an allow-list, and writes the R text
that R will see from that tree (so only what was checked reaches R):

* names: data columns, bare (``system``) or back-quoted (```my system```); a column whose name
  is not a syntactic R name may also be written as it is (``my system``), except names that look
  like numbers or operators (a column named ``1`` or ``+`` is reachable only back-quoted, so
  ``(1|item)`` always means an intercept);
* numeric literals (``1``, ``0``, ``2.5``, ``1e-3``);
* the formula operators ``~ + - * / : ^ | || %in% ( )``, comparisons inside terms, and ``.`` (all
  other columns) as a fixed-effect term;
* calls of the functions in :data:`ALLOWED_FUNCTIONS` (``I``, ``log``, ``poly``, ``offset``,
  ``cbind``, ...), whose arguments are again columns, numbers and allowed calls.

Anything else — strings, ``{``, ``;``, ``<-``, ``=``, ``::``, ``$``, ``@``, ``[``, other ``%op%``,
unknown or back-quoted function names — raises :class:`mixedeval.FormulaError` naming the token.
Length (:data:`MAX_LENGTH`), nesting depth (:data:`MAX_DEPTH`) and the number of terms
(:data:`MAX_TERMS`) are bounded so that neither this parser nor R's recursive formula code can
exhaust a stack. ``allow_r_code=True`` (Python API only) skips all of this and sends the text
verbatim: it then runs arbitrary R code.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import FormulaError

#: functions a formula may call (each with column / number / allowed-call arguments)
ALLOWED_FUNCTIONS = frozenset({
    "I", "log", "log1p", "log2", "log10", "exp", "expm1", "sqrt", "abs", "scale", "poly", "offset",
    "factor", "as.factor", "as.numeric", "as.integer", "cbind", "plogis", "qlogis", "sin", "cos",
})
#: names R knows without a data column (allowed bare only where no column shadows them)
CONSTANTS = frozenset({"pi"})
MAX_LENGTH = 10_000
MAX_DEPTH = 100
MAX_TERMS = 300

_RESERVED = frozenset({
    "if", "else", "repeat", "while", "function", "for", "next", "break", "TRUE", "FALSE", "NULL",
    "Inf", "NaN", "NA", "NA_integer_", "NA_real_", "NA_character_", "NA_complex_", "in", "T", "F",
})
_SYNTACTIC = re.compile(r"^((([A-Za-z]|[.][A-Za-z._])[A-Za-z0-9._]*)|[.])$")
_IDENT = re.compile(r"(?:[^\W\d_]|\.(?![0-9]))[\w.]*")
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?L?")
_ID_CHAR = re.compile(r"[\w.]")
# longest first; the forbidden ones are recognised so that the error names them exactly
_OPERATORS = ("%in%", "<<-", "->>", ":::", "||", "|>", "&&", "<-", "->", "<=", ">=", "==", "!=", "::", "**",
              "[[", "~", "+", "-", "*", "/", "^", ":", "|", "<", ">", "=", "!", "&", "$", "@", "[", "]",
              "{", "}", ";", "?", "\\", "#")
_FORBIDDEN = {
    "<<-": "assignment", "->>": "assignment", "<-": "assignment", "->": "assignment", "=": "assignment or argument name",
    ":::": "namespace access", "::": "namespace access", "|>": "pipe", "&&": "logical operator",
    "&": "logical operator", "!": "logical operator", "$": "element access", "@": "slot access",
    "[": "indexing", "[[": "indexing", "]": "indexing", "{": "code block", "}": "code block", ";": "statement separator",
    "?": "help operator", "\\": "function literal", "#": "comment",
}
_BINARY_BP = {"|": 2, "||": 2, "<": 5, ">": 5, "<=": 5, ">=": 5, "==": 5, "!=": 5, "+": 6, "-": 6, "*": 7, "/": 7,
              "%in%": 8, ":": 9, "^": 11}
_UNARY_BP = 10
_TIGHT = frozenset({":", "/"})  # written without spaces, as R deparses them
_HINT = ("compute the value as a column first (e.g. df['log_x'] = np.log(df['x'])) and use that column, or pass "
         "allow_r_code=True (Python API only; it runs the formula as arbitrary R code)")


def is_syntactic(name: str) -> bool:
    """True for a syntactic R name that is not a reserved word (needs no back-quotes)."""
    return bool(_SYNTACTIC.match(name)) and name not in _RESERVED


def quote_name(name: str) -> str:
    """``name`` as R source: bare when syntactic, else back-quoted (names holding a back-quote or
    backslash are refused: they cannot be quoted safely)."""
    if is_syntactic(name):
        return name
    if "`" in name or "\\" in name or any(ord(ch) < 32 for ch in name):
        raise FormulaError(f"column name {name!r} contains a back-quote, backslash or control character and cannot be "
                           "used in a formula; rename the column (df.rename(columns={...}))")
    return f"`{name}`"


# ------------------------------------------------------------------------------- syntax tree
@dataclass(frozen=True)
class _Tok:
    kind: str  # name, qname, num, op, (, ), ",", end
    text: str
    pos: int


@dataclass
class _Node:
    kind: str  # name, num, dot, call, unary, binary, chain, paren
    text: str = ""  # name / number / function name / operator
    kids: list = field(default_factory=list)
    ops: list = field(default_factory=list)  # operators of a chain (len(kids) - 1)
    bp: int = 0  # precedence of a chain
    quoted: bool = False
    pos: int = 0


def _error(text: str, pos: int, what: str, hint: bool = False) -> FormulaError:
    near = text[max(0, pos - 20): pos + 20]
    return FormulaError(f"formula {_short(text)!r}: {what} at position {pos} (near {near!r})" + (f"; {_HINT}" if hint else ""))


def _short(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _tokenize(text: str, columns: Iterable[str]) -> list[_Tok]:
    """Tokens of ``text``, in one left-to-right pass (each position is looked at a bounded number
    of times; unquoted non-syntactic column names are matched longest first)."""
    by_first: dict[str, list[str]] = {}
    for c in columns:
        if not is_syntactic(c) and _unquoted_ok(c):
            by_first.setdefault(c[0], []).append(c)
    for lst in by_first.values():
        lst.sort(key=len, reverse=True)
    toks: list[_Tok] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch == "`":
            j = text.find("`", i + 1)
            if j < 0:
                raise _error(text, i, "unterminated back-quoted name")
            name = text[i + 1: j]
            if "\\" in name or not name:
                raise _error(text, i, "back-quoted names with a backslash (or empty) are not supported")
            toks.append(_Tok("qname", name, i))
            i = j + 1
            continue
        matched = None
        for cand in by_first.get(ch, ()):
            end = i + len(cand)
            if text.startswith(cand, i) and not (end < n and _ID_CHAR.match(text[end]) and _ID_CHAR.match(cand[-1])):
                matched = cand
                break
        if matched is not None:
            toks.append(_Tok("qname", matched, i))
            i += len(matched)
            continue
        if ch.isdigit() or (ch == "." and i + 1 < n and text[i + 1].isdigit()):
            m = _NUMBER.match(text, i)
            end = m.end()
            if end < n and _ID_CHAR.match(text[end]):
                raise _error(text, i, f"malformed number {text[i:end + 1]!r}")
            toks.append(_Tok("num", m.group(0), i))
            i = end
            continue
        m = _IDENT.match(text, i)
        if m:
            toks.append(_Tok("name", m.group(0), i))
            i = m.end()
            continue
        if ch in "\"'":
            raise _error(text, i, "string literal", hint=True)
        if ch in "(),":
            toks.append(_Tok(ch, ch, i))
            i += 1
            continue
        if ch == "%":
            j = text.find("%", i + 1)
            op = text[i: j + 1] if j > 0 else text[i:]
            if op != "%in%":
                raise _error(text, i, f"operator {op!r} (only %in% is allowed)", hint=True)
            toks.append(_Tok("op", op, i))
            i += len(op)
            continue
        for op in _OPERATORS:
            if text.startswith(op, i):
                if op in _FORBIDDEN:
                    raise _error(text, i, f"{_FORBIDDEN[op]} {op!r}", hint=True)
                toks.append(_Tok("op", "^" if op == "**" else op, i))
                i += len(op)
                break
        else:
            raise _error(text, i, f"character {ch!r}", hint=True)
    toks.append(_Tok("end", "", n))
    return toks


def _unquoted_ok(name: str) -> bool:
    """A non-syntactic column name may be written without back-quotes only when it cannot be read
    as a number or operators: it must hold a letter and must not start with a digit."""
    if not name or name[0].isdigit() or (name[0] == "." and len(name) > 1 and name[1].isdigit()):
        return False
    if "`" in name or "\\" in name:
        return False
    return any(ch.isalpha() or ch == "_" for ch in name)


class _Parser:
    """Pratt parser with R's operator precedence. Left-associative operators of one precedence
    become one ``chain`` node, so the tree's depth is the nesting depth, bounded by MAX_DEPTH."""

    def __init__(self, text: str, toks: list[_Tok]):
        self.text, self.toks, self.i, self.depth, self.terms = text, toks, 0, 0, 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, kind: str) -> _Tok:
        t = self.take()
        if t.kind != kind:
            raise _error(self.text, t.pos, f"expected {kind!r}, found {t.text or 'the end'!r}")
        return t

    def formula(self) -> tuple[_Node | None, _Node]:
        lhs = None
        if not (self.peek().kind == "op" and self.peek().text == "~"):
            lhs = self.expr(0)
        t = self.take()
        if not (t.kind == "op" and t.text == "~"):
            raise _error(self.text, t.pos, "a formula needs '~' (e.g. 'score ~ system + (1|item)')"
                         if t.kind == "end" else f"unexpected {t.text!r}")
        rhs = self.expr(0)
        t = self.take()
        if t.kind != "end":
            raise _error(self.text, t.pos, f"unexpected {t.text!r}")
        return lhs, rhs

    def expr(self, min_bp: int) -> _Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FormulaError(f"formula {_short(self.text)!r} is nested more than {MAX_DEPTH} levels deep; "
                               "simplify it")
        node = self.nud()
        while True:
            t = self.peek()
            if t.kind != "op" or t.text == "~":
                break
            bp = _BINARY_BP.get(t.text)
            if bp is None or bp < min_bp:
                break
            self.take()
            right_assoc = t.text == "^"
            rhs = self.expr(bp if right_assoc else bp + 1)
            self.terms += 1
            if self.terms > MAX_TERMS:
                raise FormulaError(f"formula {_short(self.text)!r} has more than {MAX_TERMS} terms; fit fewer "
                                   "terms (combine columns beforehand, or use a random effect for many levels)")
            if not right_assoc and node.kind == "chain" and node.bp == bp:
                node.kids.append(rhs)
                node.ops.append(t.text)
            elif right_assoc:
                node = _Node("binary", t.text, [node, rhs], pos=t.pos)
            else:
                node = _Node("chain", kids=[node, rhs], ops=[t.text], bp=bp, pos=t.pos)
        self.depth -= 1
        return node

    def nud(self) -> _Node:
        t = self.take()
        if t.kind == "name" and self.peek().kind == "(":
            return self.call(t)
        if t.kind == "qname" and self.peek().kind == "(":
            raise _error(self.text, t.pos, f"back-quoted function call `{t.text}`(...)", hint=True)
        if t.kind in ("name", "qname"):
            if t.kind == "name" and t.text == ".":
                return _Node("dot", ".", pos=t.pos)
            return _Node("name", t.text, quoted=t.kind == "qname", pos=t.pos)
        if t.kind == "num":
            return _Node("num", t.text, pos=t.pos)
        if t.kind == "(":
            inner = self.expr(0)
            self.expect(")")
            return _Node("paren", kids=[inner], pos=t.pos)
        if t.kind == "op" and t.text in ("+", "-"):
            return _Node("unary", t.text, [self.expr(_UNARY_BP)], pos=t.pos)
        what = "the end of the formula" if t.kind == "end" else repr(t.text)
        raise _error(self.text, t.pos, f"unexpected {what}")

    def call(self, name: _Tok) -> _Node:
        if name.text not in ALLOWED_FUNCTIONS:
            raise _error(self.text, name.pos, f"function {name.text!r} is not allowed in a formula (allowed: "
                         f"{', '.join(sorted(ALLOWED_FUNCTIONS))})", hint=True)
        self.expect("(")
        args: list[_Node] = []
        if self.peek().kind != ")":
            while True:
                args.append(self.expr(0))
                if self.peek().kind == ",":
                    self.take()
                    continue
                break
        self.expect(")")
        if not args:
            raise _error(self.text, name.pos, f"{name.text}() needs an argument")
        return _Node("call", name.text, args, pos=name.pos)


# ------------------------------------------------------------------------------- the result
@dataclass(frozen=True)
class ParsedFormula:
    """A checked formula.

    ``r_formula`` is the text R receives (written from the syntax tree, columns back-quoted where
    needed); ``text`` is what the user wrote. ``response`` is the response column when the left-hand
    side is a single column (else None); ``response_columns`` the columns of the left-hand side;
    ``columns`` every column used, in order of first appearance; ``grouping`` the columns on the
    right of ``|`` in random-effect terms; ``fixed_terms`` / ``random_terms`` the right-hand side's
    terms as R text (a removed term such as ``-1`` keeps its sign). ``fixed_expanded`` and
    ``intercept`` are R's expansion of the fixed part (``terms.formula``: each term a tuple of
    variables, i.e. column names or the R text of a call, ordered by degree); ``random_expanded``
    holds ``(terms, intercept, uncorrelated)`` of each random-effect term's left-hand side.
    """

    text: str
    r_formula: str
    lhs: str | None
    response: str | None
    response_columns: tuple[str, ...]
    columns: tuple[str, ...]
    grouping: tuple[str, ...]
    fixed_terms: tuple[str, ...]
    random_terms: tuple[str, ...]
    fixed_expanded: tuple[tuple[str, ...], ...] = ()
    intercept: bool = True
    random_expanded: tuple = ()
    has_dot: bool = False
    verbatim: bool = False


class _Checker:
    """Walks the tree (depth bounded by MAX_DEPTH): checks names against the columns and the
    placement of ``|``, ``.`` and ``~``, and writes the R text."""

    def __init__(self, text: str, columns: set[str]):
        self.text, self.columns = text, columns
        self.used: list[str] = []
        self.unknown: list[str] = []
        self.grouping: list[str] = []

    def use(self, name: str, node: _Node, ctx: str) -> str:
        if name in self.columns:
            if name not in self.used:
                self.used.append(name)
            if ctx == "group" and name not in self.grouping:
                self.grouping.append(name)
            return quote_name(name)
        if not node.quoted and name in CONSTANTS and ctx == "arg":
            return name
        if not node.quoted and name in _RESERVED:
            raise _error(self.text, node.pos, f"reserved word {name!r} (back-quote it if it is a column name)")
        if name not in self.unknown:
            self.unknown.append(name)
        return quote_name(name) if "`" not in name else name

    def emit(self, node: _Node, ctx: str) -> str:
        """R text of ``node``; ctx is 'term' (right-hand side), 'lhs', 'arg' (inside a call),
        'bar' (left of |) or 'group' (right of |)."""
        k = node.kind
        if k == "name":
            return self.use(node.text, node, ctx)
        if k == "num":
            if ctx == "group":
                raise _error(self.text, node.pos, "a number as grouping factor")
            return node.text
        if k == "dot":
            if ctx != "term":
                raise _error(self.text, node.pos, "'.' (all other columns) is allowed only as a fixed-effect term")
            return "."
        if k == "call":
            if ctx == "group":
                raise _error(self.text, node.pos, "a function call in a grouping factor (use a column)")
            return f"{node.text}({', '.join(self.emit(a, 'arg') for a in node.kids)})"
        if k == "unary":
            return node.text + self.emit(node.kids[0], ctx)
        if k == "paren":
            inner = node.kids[0]
            if _is_bar(inner):
                if ctx != "term":
                    raise _error(self.text, node.pos, "a random-effect term (x | g) inside another expression")
                return "(" + self.bar(inner) + ")"
            return "(" + self.emit(inner, ctx) + ")"
        if _is_bar(node):  # bars inside parentheses are handled above
            raise _error(self.text, node.pos, "a random-effect term must be in parentheses, e.g. (1 | item)")
        if k == "binary":  # ^
            return f"{self.emit(node.kids[0], ctx)}{node.text}{self.emit(node.kids[1], ctx)}"
        # chain
        if ctx == "group" and any(op not in (":", "/") for op in node.ops):
            raise _error(self.text, node.pos, f"operator {next(o for o in node.ops if o not in (':', '/'))!r} in a "
                         "grouping factor (use ':' or '/', e.g. (1 | school/class))")
        out = self.emit(node.kids[0], ctx)
        for op, kid in zip(node.ops, node.kids[1:]):
            out += (op if op in _TIGHT else f" {op} ") + self.emit(kid, ctx)
        return out

    def bar(self, node: _Node) -> str:
        if len(node.kids) != 2:
            raise _error(self.text, node.pos, "two '|' in one random-effect term")
        left, right = node.kids
        return f"{self.emit(left, 'bar')} {node.ops[0]} {self.emit(right, 'group')}"  # noqa: E501


def _is_bar(node: _Node) -> bool:
    return node.kind == "chain" and node.bp == _BINARY_BP["|"]


def _top_terms(rhs: _Node) -> list[tuple[str, _Node]]:
    """(sign, node) of the right-hand side's top-level ``+``/``-`` terms."""
    if rhs.kind == "chain" and rhs.bp == _BINARY_BP["+"]:
        return [("+", rhs.kids[0])] + list(zip(rhs.ops, rhs.kids[1:]))
    return [("+", rhs)]


# ------------------------------------------------------------------------------ term algebra
_ZERO = frozenset({"0"})  # "no intercept" marker


def _union(*parts: list) -> list:
    return list(dict.fromkeys(t for part in parts for t in part))


def _cross(a: list, b: list) -> list:
    return _union([x | y for x in a for y in b if x != _ZERO and y != _ZERO])


def _expand(node: _Node, emit) -> list:
    """R's expansion of a model term into its terms (``terms.formula``): each term a frozenset
    of variables (column names, or the R text of a call such as ``poly(x, 2)``); ``frozenset()``
    is the intercept and :data:`_ZERO` its removal."""
    k = node.kind
    if k == "name":
        return [frozenset({node.text})]
    if k == "num":
        return [frozenset()] if node.text in ("1", "1L") else [_ZERO] if node.text in ("0", "0L") else []
    if k == "dot":
        return [frozenset({"."})]
    if k == "call":
        return [] if node.text == "offset" else [frozenset({emit(node)})]
    if k == "paren":
        return _expand(node.kids[0], emit)
    if k == "unary":
        inner = _expand(node.kids[0], emit)
        return [_ZERO if t == frozenset() else t for t in inner] if node.text == "-" else inner
    if k == "binary":  # (a + b)^n: all interactions up to order n
        base = _expand(node.kids[0], emit)
        power = node.kids[1]
        n = int(float(power.text)) if power.kind == "num" else 1
        out = base
        for _ in range(max(n, 1) - 1):
            out = _union(out, _cross(out, base))
        return out
    if node.bp == _BINARY_BP["+"]:
        kept, removed = _expand(node.kids[0], emit), []
        for op, kid in zip(node.ops, node.kids[1:]):
            terms = _expand(kid, emit)
            if op == "+":
                kept = _union(kept, terms)
            else:
                removed = _union(removed, [frozenset() if t == _ZERO else t for t in terms])
        out = [t for t in kept if t not in removed]
        return out + ([_ZERO] if frozenset() in removed else [])
    if node.bp in (_BINARY_BP["*"], _BINARY_BP[":"], _BINARY_BP["%in%"]):
        out = _expand(node.kids[0], emit)
        for op, kid in zip(node.ops, node.kids[1:]):
            right = _expand(kid, emit)
            if op == "*":
                out = _union(out, right, _cross(out, right))
            elif op == "/":  # a/b = a + a:b, with a standing for all of a's variables
                everything = frozenset().union(*[t for t in out if t != _ZERO])
                out = _union(out, _cross([everything], right))
            else:
                out = _cross(out, right)
        return out
    return [frozenset({emit(node)})]  # a comparison: one logical variable


def _variable_order(node: _Node, emit, order: dict[str, int]) -> None:
    """Variables in order of first appearance (R orders a term's variables so)."""
    if node.kind in ("name", "dot") or (node.kind == "call" and node.text != "offset"):
        order.setdefault(node.text if node.kind != "call" else emit(node), len(order))
        return
    if node.kind == "chain" and node.bp == _BINARY_BP["<"]:
        order.setdefault(emit(node), len(order))
        return
    for kid in node.kids:
        _variable_order(kid, emit, order)


def _terms(node: _Node | None, emit, default_intercept: bool = True) -> tuple[tuple[tuple[str, ...], ...], bool]:
    """(terms ordered by degree as R orders them, intercept) of an expression."""
    if node is None:
        return (), default_intercept
    expanded = _expand(node, emit)
    intercept = default_intercept and _ZERO not in expanded
    order: dict[str, int] = {}
    _variable_order(node, emit, order)
    terms = [tuple(sorted(t, key=order.get)) for t in expanded if t and t != _ZERO]
    terms.sort(key=len)
    return tuple(terms), intercept


def parse_formula(text: str, columns: Iterable[str] | None, *, allow_r_code: bool = False) -> ParsedFormula:
    """Parse and check ``text`` against the data ``columns`` (see the module docstring).

    ``columns=None`` checks the syntax only: every bare or back-quoted name counts as a column
    (names with spaces must then be back-quoted).

    Raises :class:`mixedeval.FormulaError` (a :class:`mixedeval.DataError`) naming the offending
    token, or a formula that names columns not in the data. With ``allow_r_code=True`` a formula
    that does not pass is sent verbatim (arbitrary R code; Python API only).
    """
    if not isinstance(text, str):
        raise FormulaError(f"formula must be a string like 'score ~ system + (1|item)', not {type(text).__name__}")
    if not allow_r_code and len(text) > MAX_LENGTH:
        raise FormulaError(f"formula is {len(text):,} characters long, more than {MAX_LENGTH:,}; fit fewer terms")
    cols = [] if columns is None else [str(c) for c in columns]
    try:
        if columns is None:  # syntax only: every name that is not a function is a column
            toks = _tokenize(text, ())
            cols = list(dict.fromkeys(t.text for i, t in enumerate(toks) if t.kind == "qname" or (
                t.kind == "name" and t.text != "." and toks[i + 1].kind != "(" and t.text not in _RESERVED
                and t.text not in CONSTANTS)))
        colset = set(cols)
        toks = _tokenize(text, cols)
        lhs, rhs = _Parser(text, toks).formula()
        return _check(text, lhs, rhs, cols, colset)
    except FormulaError:
        if not allow_r_code:
            raise
        return _verbatim(text, cols)


def _check(text: str, lhs: _Node | None, rhs: _Node, cols: list[str], colset: set[str]) -> ParsedFormula:
    ch = _Checker(text, colset)
    lhs_r = ch.emit(lhs, "lhs") if lhs is not None else None
    resp_cols = tuple(ch.used)
    terms = _top_terms(rhs)
    fixed, random, pieces = [], [], []
    fixed_nodes, fixed_ops, random_parts = [], [], []

    def emit(n):
        return ch.emit(n, "term")

    has_dot = False
    for sign, node in terms:
        r = ch.emit(node, "term")
        pieces.append(f"{sign} {r}" if pieces else r)  # the first top-level term carries no sign
        if node.kind == "paren" and _is_bar(node.kids[0]):
            if sign == "-":
                raise _error(text, node.pos, "a random-effect term cannot be removed with '-'")
            random.append(r)
            bar = node.kids[0]
            random_parts.append((*_terms(bar.kids[0], emit), bar.ops[0] == "||"))
            continue
        if fixed_nodes:
            fixed_ops.append(sign)
        fixed_nodes.append(node if fixed_nodes or sign == "+" else _Node("unary", "-", [node]))
        has_dot = has_dot or node.kind == "dot"
        fixed.append(r if sign == "+" else f"-{r}")
    if ch.unknown:
        raise FormulaError(
            f"formula {_short(text)!r} names {', '.join(repr(u) for u in ch.unknown)}, not found among the data columns "
            f"({', '.join(cols[:20])}); fix the spelling or back-quote names with spaces or symbols")
    rhs_r = " ".join(pieces)
    used = list(ch.used)
    fixed_node = None
    if fixed_nodes:
        fixed_node = fixed_nodes[0] if len(fixed_nodes) == 1 else _Node(
            "chain", kids=fixed_nodes, ops=fixed_ops, bp=_BINARY_BP["+"])
    fixed_expanded, intercept = _terms(fixed_node, emit)
    if has_dot:  # `.` stands for every other column of the data
        others = [c for c in cols if c not in resp_cols]
        fixed_expanded = tuple(dict.fromkeys(u for t in fixed_expanded for u in ([(c,) for c in others]
                                                                                  if t == (".",) else [t])))
        used += [c for c in cols if c not in used]
    response = None
    if lhs is not None and lhs.kind == "name" and lhs.text in colset:
        response = lhs.text
    return ParsedFormula(
        text=text, r_formula=(f"{lhs_r} ~ {rhs_r}" if lhs_r is not None else f"~ {rhs_r}"), lhs=lhs_r,
        response=response, response_columns=resp_cols, columns=tuple(used), grouping=tuple(ch.grouping),
        fixed_terms=tuple(fixed), random_terms=tuple(random), fixed_expanded=fixed_expanded, intercept=intercept,
        random_expanded=tuple(random_parts), has_dot=has_dot,
    )


_LOOSE_NAME = re.compile(r"`([^`]+)`|((?:[^\W\d_]|\.(?![0-9]))[\w.]*)")


def _verbatim(text: str, cols: list[str]) -> ParsedFormula:
    """``allow_r_code=True`` and the formula did not pass: send it as written. The columns are
    those whose names appear in it (so that they are sent to R)."""
    colset = set(cols)
    used = []
    for m in _LOOSE_NAME.finditer(text):
        name = m.group(1) or m.group(2)
        if name in colset and name not in used:
            used.append(name)
    lhs = text.split("~", 1)[0].strip() if "~" in text else None
    bare = lhs[1:-1] if lhs and lhs.startswith("`") and lhs.endswith("`") else lhs
    response = bare if bare in colset else None
    return ParsedFormula(text=text, r_formula=text, lhs=lhs, response=response,
                         response_columns=(response,) if response else (), columns=tuple(used), grouping=(),
                         fixed_terms=(), random_terms=(), verbatim=True)
