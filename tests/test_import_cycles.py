"""No import cycles anywhere in mixedeval (issue 25, point 4).

The import graph of the package, as grimp (import-linter's graph builder) records it, function-level
imports included, has no strongly connected component of more than one module: every model family
owns its fit class and its R calls, the EMM/contrast table building they share is in
``inference/_emm_tables.py`` (which imports no family), and the public ``anova`` / ``emmeans`` /
``emtrends`` / ``check_optimizers`` dispatch through methods of the fit classes. The
``acyclic_siblings`` contract of ``pyproject.toml`` says the same to ``lint-imports``
(tests/test_layers.py runs it); both checks are shown to fail on a small package with a cycle.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components with more than one module
    (Tarjan's algorithm, iterative so that deep chains need no recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _describe(graph: grimp.ImportGraph, cycles: list[list[str]]) -> str:
    lines = []
    for comp in cycles:
        lines.append("cycle: " + ", ".join(comp))
        for a in comp:
            for b in sorted(graph.find_modules_directly_imported_by(a)):
                if b in comp:
                    for d in graph.get_import_details(importer=a, imported=b):
                        lines.append(f"    {a}:{d['line_number']} -> {b}: {d['line_contents']}")
    return "\n".join(lines)


def test_the_package_import_graph_is_acyclic():
    graph = grimp.build_graph("mixedeval")  # function-level imports are edges too
    assert len(graph.modules) > 90
    cycles = strongly_connected(graph)
    assert not cycles, "import cycles (break them as docs/concepts/architecture.md says):\n" + _describe(graph, cycles)


def test_no_function_level_import_is_kept_for_a_cycle():
    """The reasons given for function-level imports (tests/test_layers.py) no longer name a cycle."""
    bad = []
    for path in sorted((ROOT / "mixedeval").rglob("*.py")):
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = re.search(r"#\s*noqa: PLC0415 - (.*)", line)
            if m and re.search(r"cycle(?!-free)|^[\w.]+ imports (this module|[\w.]+, which imports this module)$"
                               r"|builds \w+ objects", m.group(1).strip(), re.I):
                bad.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not bad, "function-level imports kept for an import cycle:\n" + "\n".join(bad)


@pytest.fixture()
def cyclic_package(tmp_path, monkeypatch):
    """A package whose modules a and b import each other, b only inside a function."""
    pkg = tmp_path / "cyc_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n\nX = 1\n")
    (pkg / "b.py").write_text("def f():\n    from .a import X  # noqa: PLC0415 - a test of the check\n\n    return X\n")
    (pkg / "c.py").write_text("from . import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_the_cycle_check_finds_a_function_level_cycle(cyclic_package):
    graph = grimp.build_graph("cyc_demo")
    assert strongly_connected(graph) == [["cyc_demo.a", "cyc_demo.b"]]
    assert "cyc_demo.b:2 -> cyc_demo.a" in _describe(graph, strongly_connected(graph))


def test_the_acyclic_contract_breaks_on_a_cycle(cyclic_package):
    """pyproject.toml's contract type and options, run by lint-imports on the cyclic package."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is not installed (it is in the [test] extra)"
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r'\[\[tool\.importlinter\.contracts\]\]\nid = "acyclic"\n(.*?)(?:\n\n|\Z)', text, re.S)
    assert block, "pyproject.toml has no contract with id 'acyclic'"
    assert 'type = "acyclic_siblings"' in block.group(1) and 'ancestors = ["mixedeval"]' in block.group(1)
    contract = block.group(1).replace('ancestors = ["mixedeval"]', 'ancestors = ["cyc_demo"]')
    cfg = cyclic_package / "importlinter.toml"
    cfg.write_text('[tool.importlinter]\nroot_package = "cyc_demo"\n\n[[tool.importlinter.contracts]]\n'
                   'id = "acyclic"\n' + textwrap.dedent(contract) + "\n")
    out = subprocess.run([exe, "--no-cache", "--config", str(cfg)], cwd=cyclic_package, capture_output=True,
                         text=True, timeout=120, env={"PYTHONPATH": str(cyclic_package), "PATH": "/usr/bin:/bin"})
    assert out.returncode != 0 and "BROKEN" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]
    assert ".b -> .a" in out.stdout or ".a -> .b" in out.stdout


def test_public_functions_dispatch_through_the_fit():
    """me.anova / emmeans / emtrends / check_optimizers import no model family: they call the fit's
    own method, with every argument by name (the R parity of each family is in its own tests)."""
    import mixedeval as me
    from mixedeval.errors import DataError
    from mixedeval.inference._clmm import CLMMFit
    from mixedeval.inference._glmm import GLMMFit
    from mixedeval.inference._lmm import LMMFit

    methods = ("_anova", "_emmeans", "_emtrends", "_check_optimizers")
    for cls in (LMMFit, GLMMFit):
        assert all(callable(getattr(cls, m, None)) for m in methods), cls
    assert callable(CLMMFit._emmeans) and not hasattr(CLMMFit, "_anova") and not hasattr(CLMMFit, "_emtrends")

    class Fake:
        def __getattr__(self, name):
            if name not in methods:
                raise AttributeError(name)
            return lambda *args, **kwargs: (name, args, kwargs)

    fit = Fake()
    assert me.anova(fit, type=2) == ("_anova", (), {"type": 2, "ddf": "satterthwaite", "level": 0.95})
    assert me.emmeans(fit, "system", by="task", at={"x": 1}) == (
        "_emmeans", ("system",), {"by": "task", "df_method": "satterthwaite", "level": 0.95, "at": {"x": 1},
                                  "type": None})
    assert me.emtrends(fit, "system", var="x", type="link")[2]["var"] == "x"
    assert me.check_optimizers(fit, rtol=0.1) == (
        "_check_optimizers", (), {"optimizers": ("nloptwrap", "bobyqa", "Nelder_Mead"), "rtol": 0.1, "loglik_tol": 1e-3})
    for call, fits in ((lambda o: me.anova(o), "mixedeval.lmm or mixedeval.glmm"),
                       (lambda o: me.emmeans(o, "system"), "mixedeval.lmm, mixedeval.glmm or mixedeval.clmm"),
                       (lambda o: me.emtrends(o, "system", var="x"), "mixedeval.lmm or mixedeval.glmm"),
                       (lambda o: me.check_optimizers(o), "mixedeval.lmm or mixedeval.glmm")):
        with pytest.raises(DataError, match=f"takes a model fitted by {re.escape(fits)}; got a dict"):
            call({})
