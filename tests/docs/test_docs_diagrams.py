"""The docs' Mermaid diagrams render, offline, in the built site.

Runs `python -m tools.check_diagrams --built` (tools/check_diagrams.py says what it checks) on the
site the session built once with `mkdocs build --strict` (the `docs_site` fixture of the root
conftest.py, whose build integration_tests/test_docs_build.py checks too): in headless Chromium
when it is installed (Debian's `chromium`), else the checks the built HTML allows (each
diagram's source on its page, the site's own Mermaid script, nothing loaded from another host).
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
def test_every_diagram_renders(docs_site: check_diagrams.Built, tmp_path: Path) -> None:
    """Each ```mermaid block is on its built page with the site's own Mermaid script and, where
    Chromium is installed, renders offline as an SVG flowchart (not Mermaid's syntax-error
    picture) with a screenshot that is not blank."""
    assert docs_site.returncode == 0, docs_site.log  # the site the checks read was built
    browser = check_diagrams.chromium(None)
    shots = tmp_path / "shots"
    args = ["--site", str(docs_site.site), "--built", "--screenshots", str(shots)]
    args += [] if browser else ["--no-browser"]
    done = subprocess.run(
        [sys.executable, "-m", "tools.check_diagrams", *args],
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
        written = sorted(p.name for p in shots.glob("*.png"))
        assert written == ["cli-1.png", "concepts-1.png", "runs-1.png"]
        assert all((shots / s).stat().st_size > 20_000 for s in written)  # not blank
