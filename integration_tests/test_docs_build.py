"""The docs build without a warning, showing the code they include.

Which files the pages include is checked by tests/docs/test_docs.py; the files run in
integration_tests/test_docs_examples.py and the tests named there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    """`mkdocs build --strict` succeeds and logs no warning (API pages come from docstrings)."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    assert "WARNING" not in log, log
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "submit_claude" in api and "LocalStack" in api
    # Includes are expanded at build time: the page shows the file, not the include line.
    pages = "".join(p.read_text() for p in (tmp_path / "site").rglob("*.html"))
    assert "--8&lt;--" not in pages and "--8<--" not in pages
    quickstart = (tmp_path / "site" / "quickstart" / "index.html").read_text()
    assert "skill-a" in quickstart  # only in the included file
