"""The docs' Mermaid diagrams render, offline, in the built site.

Runs `python -m tools.check_diagrams` (tools/check_diagrams.py says what it checks): in headless
Chromium when it is installed (Debian's `chromium`), else the checks the built HTML allows
(each diagram's source on its page, the site's own Mermaid script, nothing loaded from another
host).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools import check_diagrams

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_have_their_diagrams() -> None:
    """The three diagrams issue 29 asked for are on their pages, as ```mermaid text."""
    pages = sorted(d.page for d in check_diagrams.diagrams())
    assert pages == ["docs/cli.md", "docs/concepts.md", "docs/runs.md"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_every_diagram_renders(tmp_path: Path) -> None:
    browser = check_diagrams.chromium(None)
    args = ["--screenshots", str(tmp_path / "shots")] + ([] if browser else ["--no-browser"])
    done = subprocess.run(
        [sys.executable, "-m", "tools.check_diagrams", "--site", str(tmp_path / "site"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAIL" not in done.stdout
    lines = [line for line in done.stdout.splitlines() if line.startswith(("ok ", "html "))]
    assert len(lines) == len(check_diagrams.diagrams())
    if browser:
        assert all(" SVG flowchart" in line for line in lines), done.stdout
        shots = sorted(p.name for p in (tmp_path / "shots").glob("*.png"))
        assert shots == ["cli-1.png", "concepts-1.png", "runs-1.png"]
        assert all((tmp_path / "shots" / s).stat().st_size > 20_000 for s in shots)  # not blank
