"""The docs build without a warning, showing the code they include.

The site is built once a session (the `docs_site` fixture of the root conftest.py runs `mkdocs
build --strict`); tests/docs/test_docs_diagrams.py checks the diagrams of the same build. Which
files the pages include is checked by tests/docs/test_docs.py; the files run in
integration_tests/test_docs_examples.py and the tests named there.
"""

from __future__ import annotations

import pytest

from tools.check_diagrams import Built


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_mkdocs_build_strict(docs_site: Built) -> None:
    """`mkdocs build --strict` succeeds and logs no warning (API pages come from docstrings)."""
    assert docs_site.returncode == 0, docs_site.log
    assert "WARNING" not in docs_site.log, docs_site.log
    site = docs_site.site
    api = (site / "api" / "index.html").read_text()
    assert "submit_claude" in api and "LocalStack" in api
    # Includes are expanded at build time: the page shows the file, not the include line.
    pages = "".join(p.read_text() for p in site.rglob("*.html"))
    assert "--8&lt;--" not in pages and "--8<--" not in pages
    quickstart = (site / "quickstart" / "index.html").read_text()
    assert "skill-a" in quickstart  # only in the included file
