"""The R bridge in one place: the R helper library (``r/*.R``) and its Python wrappers
(``mixedeval/engine/_bridge.py``) correspond both ways.

* every helper Python names exists in ``r/``, and every helper in ``r/`` is called: from Python
  or from another helper that is (test-only helpers ``me_test_*`` / ``me_call_test_*`` are
  exempt, but the tests must use them);
* Python names helpers only inside the engine, each through one wrapper of ``_bridge.py``
  (``session.py`` runs ``me_call``; ``convert.py`` uses the conversion helpers), and every
  wrapper is used;
* no code outside the engine reaches a fit's R object (``._model``) or calls R by name
  (``._call``), and R's warnings are classified by one function
  (:func:`mixedeval.engine.conditions.r_warnings`).

Call sites that other modules have not switched yet are listed in ``PENDING`` (each entry must
still exist, so the list shrinks as they are switched). No R session is needed.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "mixedeval"
R_DIR = ROOT / "r"
BRIDGE = PKG / "engine" / "_bridge.py"

#: helpers the engine uses directly (the calling convention and the column-wise conversion)
ENGINE_INTERNAL = {"me_call": "engine/session.py", "me_as_df": "engine/convert.py", "me_factor": "engine/convert.py"}
#: call sites outside the engine still naming an R helper or reaching a fit's R object:
#: (file relative to mixedeval/, what) -> the _bridge wrapper that replaces it
PENDING: dict[tuple[str, str], str] = {}
_TEST_ONLY = re.compile(r"^me_(test|call_test)_")
_DEF = re.compile(r"^(me_\w+)\s*<-\s*function\b", re.M)
_HELPER_LITERAL = re.compile(r"^me_\w+$")


def _r_helpers() -> dict[str, str]:
    """helper -> its body (comments removed), over all r/*.R files."""
    out: dict[str, str] = {}
    for path in sorted(R_DIR.glob("*.R")):
        text = "\n".join(line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
                         for line in path.read_text(encoding="utf-8").splitlines())
        defs = list(_DEF.finditer(text))
        for i, m in enumerate(defs):
            name = m.group(1)
            assert name not in out, f"{name} is defined twice in r/"
            out[name] = text[m.end(): defs[i + 1].start() if i + 1 < len(defs) else len(text)]
    return out


def _py_files():
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(PKG).as_posix()


def _literals() -> list[tuple[str, int, str]]:
    """(file, line, helper) for every string constant of the package that names an R helper."""
    out = []
    for path in _py_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _HELPER_LITERAL.match(node.value):
                out.append((_rel(path), node.lineno, node.value))
    return out


def _bridge_wrappers() -> dict[str, list[str]]:
    """wrapper name -> the helpers whose names appear in it (module-level functions of _bridge.py)."""
    tree = ast.parse(BRIDGE.read_text(encoding="utf-8"))
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            out[node.name] = [n.value for n in ast.walk(node)
                              if isinstance(n, ast.Constant) and isinstance(n.value, str)
                              and _HELPER_LITERAL.match(n.value)]
    return out


def _wrapper_uses() -> dict[str, set[str]]:
    """wrapper name -> files (outside _bridge.py) that call ``_bridge.<name>``."""
    out: dict[str, set[str]] = {}
    for path in _py_files():
        if path == BRIDGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "_bridge"):
                out.setdefault(node.attr, set()).add(_rel(path))
    return out


def test_every_helper_python_names_exists_in_r():
    helpers = _r_helpers()
    missing = [f"mixedeval/{f}:{line} names {h}" for f, line, h in _literals() if h not in helpers]
    assert not missing, "R helpers named in Python but not defined in r/*.R:\n" + "\n".join(missing)


def test_every_helper_in_r_is_called():
    helpers = _r_helpers()
    reached = {h for _, _, h in _literals()}
    frontier = set(reached)
    while frontier:  # helpers called by reached helpers
        nxt = set()
        for h in frontier:
            for callee in re.findall(r"\b(me_\w+)\s*\(", helpers.get(h, "")):
                if callee in helpers and callee not in reached:
                    reached.add(callee)
                    nxt.add(callee)
        frontier = nxt
    unused = sorted(h for h in helpers if h not in reached and not _TEST_ONLY.match(h))
    assert not unused, f"R helpers nobody calls (remove them or call them through a _bridge wrapper): {unused}"


def test_test_only_helpers_are_used_by_the_tests():
    tests = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests").glob("*.py"))
                      if p.name != Path(__file__).name)
    test_only = [h for h in _r_helpers() if _TEST_ONLY.match(h)]
    assert test_only, "the calling-convention tests need their helpers"
    unused = [h for h in test_only if f'"{h}"' not in tests and f"'{h}'" not in tests]
    assert not unused, f"test-only R helpers no test uses: {unused}"


def test_helpers_are_named_only_inside_the_engine_through_one_wrapper_each():
    wrappers = _bridge_wrappers()
    by_helper: dict[str, list[str]] = {}
    for w, hs in wrappers.items():
        assert len(set(hs)) <= 1, f"_bridge.{w} calls several helpers {hs}: one wrapper per helper"
        for h in set(hs):
            by_helper.setdefault(h, []).append(w)
    dup = {h: ws for h, ws in by_helper.items() if len(ws) > 1}
    assert not dup, f"helpers with several wrappers: {dup}"
    outside, seen_pending = [], set()
    for f, line, h in _literals():
        if f == "engine/_bridge.py" or (h in ENGINE_INTERNAL and f == ENGINE_INTERNAL[h]):
            continue
        if (f, h) in PENDING:
            seen_pending.add((f, h))
            continue
        if f.startswith("engine/") and _TEST_ONLY.match(h):
            continue
        outside.append(f"mixedeval/{f}:{line}: {h!r} (use the _bridge wrapper)")
    assert not outside, "R helpers called by name outside engine/_bridge.py:\n" + "\n".join(outside)
    # every helper Python calls has its wrapper (besides the engine's own)
    helpers_called = {h for h in _r_helpers() if not _TEST_ONLY.match(h)} & {h for _, _, h in _literals()}
    no_wrapper = sorted(helpers_called - set(by_helper) - set(ENGINE_INTERNAL))
    assert not no_wrapper, f"helpers without a _bridge wrapper: {no_wrapper}"
    stale = sorted(k for k in PENDING if k[1].startswith("me_") and k not in seen_pending)
    assert not stale, f"switched call sites: remove {stale} from PENDING"


def test_every_wrapper_is_used():
    uses = _wrapper_uses()
    pending_wrappers = set(PENDING.values())
    unused = sorted(w for w in _bridge_wrappers() if w not in uses and w not in pending_wrappers)
    assert not unused, f"_bridge wrappers nobody calls: {unused}"
    # a wrapper waiting for its caller is listed only while that caller still uses the old path
    now_used = sorted(w for w in pending_wrappers if w in uses
                      and not any(k[0] in uses[w] for k, v in PENDING.items() if v == w))
    assert not now_used, f"wrappers now in use: remove their PENDING entries ({now_used})"


def test_no_fit_internals_reached_outside_the_engine():
    """``._model`` (a fit's R object) is read only by engine/_bridge.py (and set by lmm.py);
    ``._call`` (R by name) is used nowhere else."""
    bad, seen = [], set()
    for path in _py_files():
        f = _rel(path)
        if f.startswith("engine/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("_model", "_call"):
                if isinstance(node.value, ast.Name) and node.value.id == "self" and f == "lmm.py" \
                        and node.attr == "_model":
                    continue  # LMMFit's own field (_call's body)
                key = (f, "." + node.attr)
                if key in PENDING:
                    seen.add(key)
                    continue
                bad.append(f"mixedeval/{f}:{node.lineno}: .{node.attr}")
    assert not bad, "fit internals reached outside the engine (use engine._bridge):\n" + "\n".join(bad)
    stale = sorted(k for k in PENDING if k[1].startswith(".") and k not in seen)
    assert not stale, f"switched call sites: remove {stale} from PENDING"


def test_one_classifier_of_r_warnings():
    """Modules use :func:`mixedeval.engine.conditions.r_warnings`; the old
    ``results.r_condition_warnings`` stays only while a PENDING caller imports it."""
    users, seen = [], set()
    for path in _py_files():
        f = _rel(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and any(a.name == "r_condition_warnings" for a in node.names):
                if (f, "r_condition_warnings") in PENDING:
                    seen.add((f, "r_condition_warnings"))
                else:
                    users.append(f"mixedeval/{f}:{node.lineno}")
    assert not users, "use mixedeval.engine.conditions.r_warnings instead of results.r_condition_warnings:\n" + \
        "\n".join(users)
    stale = sorted(k for k in PENDING if k[1] == "r_condition_warnings" and k not in seen)
    assert not stale, f"no caller left: delete results.r_condition_warnings and remove {stale} from PENDING"
    if not any(k[1] == "r_condition_warnings" for k in PENDING):
        assert "def r_condition_warnings" not in (PKG / "results.py").read_text(encoding="utf-8")
