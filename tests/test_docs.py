"""The docs build without a warning, and their code is copied from code the tests run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from vertexbatch._cli import ExitCode

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# The pages of this suite's docs (local-stack.md and performance.md have their own owners).
PAGES = (
    "index",
    "quickstart",
    "concepts",
    "runs",
    "cli",
    "operations",
    "testing",
    "telemetry",
    "troubleshooting",
    "api",
)
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


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


def _tested_lines() -> set[str]:
    files = [ROOT / "README.md"]
    for folder in ("tests", "examples", "vertexbatch"):
        files.extend((ROOT / folder).rglob("*.py"))
    return {line.strip() for f in files for line in f.read_text().splitlines()}


@pytest.mark.parametrize("page", PAGES)
def test_python_examples_are_copied_from_tested_code(page: str) -> None:
    """Every line of a Python example in the docs is a line of the tests, examples or library."""
    known = _tested_lines()
    for block in _PYTHON_BLOCK.findall((DOCS / f"{page}.md").read_text()):
        for line in block.splitlines():
            if line.strip():
                assert line.strip() in known, f"docs/{page}.md: {line.strip()!r} is not tested"


def test_cli_page_lists_every_exit_code() -> None:
    """docs/cli.md documents each exit code of the command."""
    page = (DOCS / "cli.md").read_text()
    for code in ExitCode:
        assert f"\n| {int(code)} |" in page, code
