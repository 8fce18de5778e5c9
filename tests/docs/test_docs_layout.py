"""No code block or table of the built docs is cut off in a 1280 px wide window (issue 43).

Runs `python -m tools.check_clipping --built` (tools/check_clipping.py says what it measures)
on the site the session built once with `mkdocs build --strict` (the `docs_site` fixture of the
root conftest.py), in headless Chromium. Without Chromium (Debian's `chromium`; the CI image
may have none) the test is skipped, saying so: the measure needs a browser's layout. The site's
own rules that keep lines, links and tables inside the column are docs/css/layout.css.
"""

from __future__ import annotations

import html
import subprocess
import sys
from pathlib import Path

import pytest

from tools import check_clipping, check_diagrams

ROOT = Path(__file__).resolve().parents[2]


def test_the_measure_reads_what_the_page_script_wrote() -> None:
    """The script's JSON on <html>, as --dump-dom prints it, becomes one Clipped per element."""
    dom = (
        f'<html {check_clipping.MARKER}="[{{&quot;kind&quot;:&quot;pre&quot;,'
        '&quot;hidden&quot;:12,&quot;text&quot;:&quot;a &amp; b&quot;}]"><body></body></html>'
    )
    assert check_clipping.measured(dom, "cli/") == [
        check_clipping.Clipped("cli/", "pre", 12, "a & b")
    ]
    assert check_clipping.measured("<html><body></body></html>", "cli/") is None


def test_the_page_of_all_pages_reads_each_page_and_notes_one_that_posted_nothing() -> None:
    """The one Chromium run's page gathers each page's findings by path; a page whose script
    posted nothing is None (not measured), never taken for a page with nothing clipped."""
    posted = '{"/cli/": [{"kind": "table", "hidden": 3, "text": "a"}], "/": []}'
    dom = f'<html {check_clipping.MARKER}="{html.escape(posted)}"><body></body></html>'
    assert check_clipping.measured_all(dom, ["cli/", "", "runs/"]) == {
        "cli/": [check_clipping.Clipped("cli/", "table", 3, "a")],
        "": [],
        "runs/": None,
    }
    assert check_clipping.measured_all("<html></html>", ["cli/"]) == {"cli/": None}


def test_the_site_loads_its_layout_rules() -> None:
    """The check measures at 1280 px; the site loads the rules that keep things in the column."""
    assert check_clipping.WIDTH == 1280
    assert "css/layout.css" in (ROOT / "mkdocs.yml").read_text()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_no_code_block_or_table_is_clipped_at_1280_px(docs_site: check_diagrams.Built) -> None:
    """Every page, in headless Chromium 1280 px wide: no <pre> or <table> (nor any other element
    of the content) is wider than the box that shows it or runs past the column."""
    if check_diagrams.chromium(None) is None:
        pytest.skip("no Chromium on PATH (Debian's chromium): the layout needs a browser")
    assert docs_site.returncode == 0, docs_site.log
    done = subprocess.run(
        [sys.executable, "-m", "tools.check_clipping", "--site", str(docs_site.site), "--built"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=880,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    pages = [line for line in done.stdout.splitlines() if line.startswith(("ok ", "FAIL "))]
    assert len(pages) == len(list((ROOT / "docs").glob("*.md"))), done.stdout
    assert all(line.startswith("ok ") for line in pages), done.stdout
