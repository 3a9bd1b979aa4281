"""Issue 30, point 8: the documentation site's search works when the site is opened from disk.

Material's ``offline`` plugin (mkdocs.yml) inlines the search index as ``search/search_index.js``;
browsers refuse to start the search's Web Worker from ``file://``, so the site bundles a Worker
polyfill that runs it in an iframe (``docs/javascripts/iframe-worker.js``; the plugin would
otherwise load one from unpkg.com). Checked here: the built site has the inlined index, every page
loads the bundled polyfill and nothing from unpkg, and -- where Chromium is installed -- a search
typed into the URL (``index.html?q=bootstrap``) of the site opened from disk lists results, which
it does not without the polyfill.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(out)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_the_search_index_is_inlined_and_the_polyfill_bundled(site):
    index = (site / "search" / "search_index.js").read_text(encoding="utf-8")
    assert index.startswith("var __index = {") and '"location":"guide/which-analysis.html' in index
    assert (site / "javascripts" / "iframe-worker.js").is_file()
    pages = list(site.rglob("*.html"))
    assert len(pages) > 20
    for html in pages:
        text = html.read_text(encoding="utf-8")
        if "md-search" not in text:
            continue
        assert "unpkg.com" not in text, html
        assert 'javascripts/iframe-worker.js"' in text, f"{html.relative_to(site)} does not load the polyfill"


def _search(page: Path, query: str) -> str:
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                           "--dump-dom", f"{page.as_uri()}?q={query}"], capture_output=True, text=True, timeout=120)
    return proc.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")
def test_search_lists_results_from_disk(site, tmp_path):
    dom = _search(site / "index.html", "bootstrap")
    assert "matching document" in dom and dom.count("md-search-result__item") >= 1
    # without the polyfill the same search finds nothing: the check above can fail
    bare = tmp_path / "bare"
    shutil.copytree(site, bare)
    (bare / "javascripts" / "iframe-worker.js").write_text("", encoding="utf-8")
    dom = _search(bare / "index.html", "bootstrap")
    assert "md-search-result__item" not in dom
