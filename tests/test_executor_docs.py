"""Issue 15 point 7: the documentation's list of what takes ``executor`` is the package's.

The paragraph "`executor` is accepted by ..." of the documentation (docs/tutorials/dask.md, "Scaling
out with Dask"; whichever single page of docs/ holds it) names every public
function (``me.name``, and functions of the exported subpackages such as ``dg.diagnose_fit``) and
every method of a public result class that has an ``executor`` parameter, and no ``me.name``
without one; each of them takes ``executor`` as a keyword defaulting to ``None`` (in process,
the behaviour without Dask) and documents it in its docstring, or says which function's
parameters it shares. Signatures are inspected, so a loop that gains ``executor`` without the
documentation saying so fails here.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import mixedeval as me
from mixedeval.results import ResultMixin

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _paragraph() -> str:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        m = re.search(r"`executor` is accepted by(.*?)\n\s*\n", page.read_text(encoding="utf-8"), re.DOTALL)
        if m:
            found.append((page, m.group(1)))
    assert found, "no page of docs/ has the paragraph '`executor` is accepted by ...' listing the functions"
    assert len(found) == 1, f"several pages list what takes executor (keep one list): {[str(p) for p, _ in found]}"
    return found[0][1]


def _listed() -> tuple[set[str], set[str], set[str]]:
    """(``me.name`` functions, last parts of dotted names such as ``dg.diagnose_fit``,
    ``.method(executor=...)`` methods) the paragraph names."""
    par = _paragraph()
    functions = set(re.findall(r"`me\.(\w+)`", par))
    dotted = set(re.findall(r"`(?:\w+\.)+(\w+)`", par))
    methods = set(re.findall(r"\.(\w+)\(executor=", par))
    return functions, dotted, methods


def _functions_with_executor() -> dict[str, object]:
    out = {}
    for name in me._LAZY:  # noqa: SLF001 - the package's own export table
        obj = getattr(me, name)
        if inspect.isfunction(obj) and "executor" in inspect.signature(obj).parameters:
            out[name] = obj
    return out


def _module_functions_with_executor() -> dict[str, object]:
    """Functions of the subpackages ``import mixedeval`` exports (``me.diagnostics``, ...) taking
    ``executor``, other than the ones exported as ``me.name`` themselves."""
    top = {id(f) for f in _functions_with_executor().values()}
    out = {}
    for name in me._LAZY:  # noqa: SLF001 - the package's own export table
        mod = getattr(me, name)
        if not inspect.ismodule(mod):
            continue
        for fname in dir(mod):
            fn = getattr(mod, fname)
            if not fname.startswith("_") and inspect.isfunction(fn) and id(fn) not in top \
                    and "executor" in inspect.signature(fn).parameters:
                out[f"{name}.{fname}"] = fn
    return out


def _methods_with_executor() -> dict[str, object]:
    """``Class.method`` of public result classes (any module of the package) taking ``executor``."""
    out = {}
    for info in pkgutil.walk_packages(me.__path__, "mixedeval."):
        if info.name.endswith("__main__"):
            continue
        mod = importlib.import_module(info.name)
        for cname, cls in vars(mod).items():
            if cname.startswith("_") or not inspect.isclass(cls) or not issubclass(cls, ResultMixin) \
                    or cls.__module__ != mod.__name__:
                continue
            for mname, meth in vars(cls).items():
                if not mname.startswith("_") and inspect.isfunction(meth) \
                        and "executor" in inspect.signature(meth).parameters:
                    out[f"{cname}.{mname}"] = meth
    return out


def _documents_executor(doc: str) -> bool:
    """The docstring documents ``executor``, or delegates its parameters to a public function
    that does ("Parameters are as in :func:`f`", or a docstring that starts ":func:`f` at ...")."""
    if "executor" in doc:
        return True
    m = re.search(r"Parameters are as in :func:`(\w+)`", doc) or re.match(r":func:`(\w+)`", doc)
    target = getattr(me, m.group(1), None) if m else None
    return target is not None and "executor" in (inspect.getdoc(target) or "")


def test_readme_lists_exactly_the_functions_that_take_executor():
    functions, dotted, _ = _listed()
    have = set(_functions_with_executor())
    assert not functions - have, f"the docs list functions without an executor parameter: {sorted(functions - have)}"
    assert not have - functions, f"functions with executor missing from the docs list: {sorted(have - functions)}"
    missing = sorted(k for k in _module_functions_with_executor() if k.split(".")[-1] not in dotted)
    assert not missing, f"subpackage functions with executor missing from the docs list: {missing}"


def test_readme_names_every_method_that_takes_executor():
    _, _, methods = _listed()
    have = _methods_with_executor()
    assert have, "no result method takes executor (the language-disparity bootstrap does)"
    missing = sorted(k for k in have if k.split(".")[1] not in methods)
    assert not missing, f"result methods with executor missing from the docs list: {missing}"
    named = {k.split(".")[1] for k in have}
    assert methods <= named, f"the docs name .{sorted(methods - named)}(executor=...), which no result method has"


def test_executor_is_a_keyword_defaulting_to_in_process_and_documented():
    everything = {**{f"me.{k}": v for k, v in _functions_with_executor().items()},
                  **{f"me.{k}": v for k, v in _module_functions_with_executor().items()}, **_methods_with_executor()}
    undocumented = []
    for name, fn in everything.items():
        p = inspect.signature(fn).parameters["executor"]
        assert p.default is None, f"{name}: executor defaults to {p.default!r}, not None (in process)"
        assert p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD), f"{name}: executor is {p.kind}"
        if not _documents_executor(inspect.getdoc(fn) or ""):
            undocumented.append(name)
    assert not undocumented, ("docstrings that neither document executor nor refer to a function that does: "
                              f"{undocumented}")
