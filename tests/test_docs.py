"""The docs' code is copied from code the tests run (the build: integration_tests/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vertexbatch._cli import ExitCode

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# The pages of this suite's docs that show Python (local-stack.md and performance.md have their
# own owners).
PAGES = ("quickstart", "concepts", "runs", "testing", "telemetry")
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _tested_lines() -> set[str]:
    files = [ROOT / "README.md", ROOT / "conftest.py"]
    for folder in ("tests", "integration_tests", "examples", "vertexbatch"):
        files.extend((ROOT / folder).rglob("*.py"))
    return {line.strip() for f in files for line in f.read_text().splitlines()}


@pytest.mark.parametrize("page", PAGES)
def test_python_examples_are_copied_from_tested_code(page: str) -> None:
    """Every line of a Python example in the docs is a line of the tests, examples or library."""
    known = _tested_lines()
    blocks = _PYTHON_BLOCK.findall((DOCS / f"{page}.md").read_text())
    assert blocks, f"docs/{page}.md shows no Python: drop it from PAGES"
    for block in blocks:
        for line in block.splitlines():
            if line.strip():
                assert line.strip() in known, f"docs/{page}.md: {line.strip()!r} is not tested"


def test_cli_page_lists_every_exit_code() -> None:
    """docs/cli.md documents each exit code of the command."""
    page = (DOCS / "cli.md").read_text()
    for code in ExitCode:
        assert f"\n| {int(code)} |" in page, code
