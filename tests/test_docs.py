"""The documentation site (issue 25): it builds with ``mkdocs build --strict``, every ```python block
of every page runs (one namespace per page, as a reader following that page would run it), every
``mixedeval`` command line parses with the real CLI parser, the CLI reference generated from argparse
lists every subcommand, the API reference documents every public name of ``mixedeval._LAZY`` at its
defining module, the benchmarks page cites every script in benchmarks/, and the published-numbers
page cites test files that exist.

A block is skipped only with the explicit marker ``<!-- docs-test: skip REASON -->`` on the line before
its fence (tests/doc_examples.py); there are at most ``MAX_SKIPPED`` of them.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from doc_examples import (ROOT, blocks, check_command_lines, mentioned_subcommands, prose, run_python_blocks,
                          subcommands)

DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if not any(part.startswith("_") or part == "changelog_fragments"
                                                        for part in p.relative_to(DOCS).parts))
MAX_SKIPPED = 5


def _rel(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "_hooks" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _all_docs_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in PAGES)


# ----------------------------------------------------------------------- (a) the site builds strictly
@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(out)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_site_builds_strictly_and_offline(site):
    assert (site / "index.html").is_file()
    for page in PAGES:
        assert (site / _rel(page)).with_suffix(".html").is_file(), f"{_rel(page)} was not built"
    # nothing at view time comes from the network: no Google Fonts, no analytics, no CDN scripts
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        for needle in ("fonts.googleapis", "fonts.gstatic", "googletagmanager", "cdn.jsdelivr", "unpkg.com"):
            assert needle not in text, f"{html.relative_to(site)} loads {needle}"


def test_cli_reference_lists_every_subcommand(site):
    html = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    for name, sub in subcommands().items():
        assert re.search(rf'<h2 id="mixedeval-{name}"><code>mixedeval {name}</code>', html), \
            f"the CLI reference has no section for 'mixedeval {name}'"
        assert f"usage: mixedeval {name}" in html
        for action in sub._actions:  # noqa: SLF001 - every option of every subcommand is listed
            if isinstance(action, argparse._HelpAction):  # noqa: SLF001 - --help is in the usage text
                continue
            for opt in action.option_strings:
                assert f"<code>{opt}</code>" in html, f"option {opt} of 'mixedeval {name}' missing from the CLI reference"


def test_api_reference_documents_every_public_name(site):
    """Every name of ``mixedeval._LAZY`` is documented at its defining module (modules: each public function)."""
    import mixedeval as me

    sources = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "reference" / "api").glob("*.md"))
    documented = set(re.findall(r"^::: ([\w.]+)", sources, re.MULTILINE))
    missing = []
    for name in me._LAZY:  # noqa: SLF001 - the package's own export table
        obj = getattr(me, name)
        if inspect.ismodule(obj):
            wanted = [f"{getattr(obj, n).__module__}.{n}" for n in getattr(obj, "__all__", [])
                      if inspect.isfunction(getattr(obj, n)) and not n.startswith(("plot_qq", "plot_residuals_vs",
                                                                                        "ks_", "test_categorical",
                                                                                        "classical_", "glmm_checks",
                                                                                        "bleu_", "chrf_", "f1_",
                                                                                        "precision_", "recall_"))]
            wanted = wanted or [obj.__name__]
        else:
            wanted = [f"{obj.__module__}.{obj.__qualname__}"]
        missing += [w for w in wanted if w not in documented]
    assert not missing, f"public names missing from docs/reference/api/*.md (add '::: <path>'): {missing}"
    html = "\n".join(p.read_text(encoding="utf-8") for p in (site / "reference" / "api").glob("*.html"))
    for name in ("lmm", "LMMFit", "bootstrap", "compare_logs", "power", "report"):
        assert f'id="{[d for d in documented if d.endswith("." + name)][0]}"' in html


# ----------------------------------------------------------------------- (b) every example runs
@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_python_examples_run(page, tmp_path, monkeypatch):
    text = page.read_text(encoding="utf-8")
    ns = run_python_blocks(text, f"docs/{_rel(page)}", tmp_path, monkeypatch)
    checks = PAGE_CHECKS.get(_rel(page))
    if checks:
        checks(ns, tmp_path)


def _check_mixed_models(ns, tmp_path):
    import mixedeval as me

    assert isinstance(ns["fit"], me.LMMFit)
    assert list(ns["fit"].fixed.columns) == ["term", "estimate", "std_error", "df", "t_value", "p_value",
                                             "conf_low", "conf_high"]


def _check_resampling(ns, tmp_path):
    assert list(ns["boot"].summary().columns) == ["system", "estimate", "boot_mean", "std_error", "conf_low",
                                                  "conf_high"]


def _check_report(ns, tmp_path):
    for name in ("ter-report.html", "annotation-vca.html", "study.html"):
        page = (tmp_path / name).read_text(encoding="utf-8")
        assert page.lstrip().lower().startswith("<!doctype html") and "data:image" in page


PAGE_CHECKS = {"guide/mixed-models.md": _check_mixed_models, "guide/resampling.md": _check_resampling,
               "guide/report.md": _check_report}


def test_pages_are_self_contained_and_skips_are_few():
    """Each page with examples imports mixedeval itself (it runs in its own namespace); skips say why."""
    skipped = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        py = blocks(text, "python", with_skipped=True)
        skipped += [(_rel(page), line, reason) for line, _, reason in py if reason]
        runnable = [code for _, code, reason in py if not reason]
        if runnable:
            assert "import mixedeval as me" in runnable[0], f"{_rel(page)}: the first example must import mixedeval as me"
    assert len(skipped) <= MAX_SKIPPED, f"too many skipped doc blocks: {skipped}"
    assert sum(len(blocks(p.read_text(encoding="utf-8"), "python")) for p in PAGES) >= 40


# ----------------------------------------------------------------------- command lines and cited files
def test_cli_command_lines_parse():
    n = sum(check_command_lines(p.read_text(encoding="utf-8"), f"docs/{_rel(p)}") for p in PAGES)
    assert n >= 10


def test_every_mentioned_subcommand_exists_and_every_subcommand_is_documented(capsys):
    from mixedeval.cli import main

    subs = subcommands()
    mentioned = mentioned_subcommands(_all_docs_text())
    unknown = sorted(mentioned - set(subs))
    assert not unknown, f"the docs mention subcommands the CLI does not have: {unknown}"
    # beside the generated reference, the prose or examples of the pages show every subcommand
    assert set(subs) <= mentioned, f"subcommands no docs page shows: {sorted(set(subs) - mentioned)}"
    for sub in sorted(subs):  # `mixedeval <sub> --help` works, as the docs say
        assert main([sub, "--help"]) == 0
        assert "usage: mixedeval " + sub in capsys.readouterr().out


def test_cli_reference_generator_is_robust_to_the_parser_name(monkeypatch):
    hooks = _hooks()
    text = hooks.cli_reference()
    for name in subcommands():
        assert f"## `mixedeval {name}`" in text
    import mixedeval.cli as cli

    parser = cli.build_parser()
    monkeypatch.delattr(cli, "build_parser")
    monkeypatch.setattr(cli, "_parser", lambda: parser, raising=False)
    assert hooks.cli_reference() == text


def test_reserved_pages_join_the_nav_only_when_present(tmp_path):
    hooks = _hooks()
    nav = [{"Home": "index.md"}, {"Tutorials": [{"LLM": "tutorials/llm-logs.md"}, {"Other": "tutorials/power.md"}]},
           {"Concepts": [{"Glossary": "concepts/glossary.md"}, {"Stats": "concepts/statistics.md"}]}]
    assert hooks.add_reserved([dict(d) for d in nav], tmp_path) == nav
    for path in ("tutorials/battles_formats.md", "concepts/rankings.md", "concepts/limits.md"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("# x\n")
    out = hooks.add_reserved([dict(d) for d in nav], tmp_path)
    assert [next(iter(e.values())) for e in out[1]["Tutorials"]] == [  # no preferences page: after llm-logs
        "tutorials/llm-logs.md", "tutorials/battles_formats.md", "tutorials/power.md"]
    assert [next(iter(e.values())) for e in out[2]["Concepts"]] == [
        "concepts/glossary.md", "concepts/statistics.md", "concepts/rankings.md", "concepts/limits.md"]
    (tmp_path / "tutorials/preferences.md").write_text("# x\n")
    out = hooks.add_reserved([{k: list(v) if isinstance(v, list) else v for k, v in d.items()} for d in nav], tmp_path)
    assert [next(iter(e.values())) for e in out[1]["Tutorials"]] == [
        "tutorials/llm-logs.md", "tutorials/preferences.md", "tutorials/battles_formats.md", "tutorials/power.md"]


def test_benchmarks_page_cites_every_script():
    text = (DOCS / "reference" / "benchmarks.md").read_text(encoding="utf-8")
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        assert f"benchmarks/{script.name}" in text or f"`{script.name}`" in text, \
            f"benchmarks/{script.name} is not described in docs/reference/benchmarks.md"


def test_published_numbers_page_cites_existing_tests():
    text = (DOCS / "reference" / "published.md").read_text(encoding="utf-8")
    cited = set(re.findall(r"tests/(test_\w+\.py)", text))
    assert cited, "docs/reference/published.md cites no test file"
    for name in cited:
        assert (ROOT / "tests" / name).is_file(), f"tests/{name} cited in docs/reference/published.md does not exist"
    for source in ("Hagmann", "Table 2.2", "Table 2.3", "Table 3.1", "Table 3.2", "Hu", "Krippendorff"):
        assert source in text


def test_cited_repository_files_exist():
    """Paths of the repository named in the docs' prose (benchmarks/, tests/, scripts/, docker/) exist."""
    missing = set()
    for page in PAGES:
        for path in re.findall(r"`((?:benchmarks|tests|scripts|docker)/[\w./-]+\.(?:py|sh|R|txt))", prose(
                page.read_text(encoding="utf-8"))):
            if not (ROOT / path).exists():
                missing.add((_rel(page), path))
    assert not missing, f"docs cite files that do not exist: {sorted(missing)}"
