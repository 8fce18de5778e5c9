"""No page, example or error message tells a user to install vertexbatch from a package index:
none serves it.

They install from a clone (``pip install '.[local]'``) or from a wheel built from one
(``pip install 'dist/vertexbatch-0.1.0-py3-none-any.whl[cli]'``, docs/cloud-run.md). A
``pip install`` naming the project (``vertexbatch``, ``'vertexbatch[local]'``,
``vertexbatch==0.1``) would fetch whatever an index serves under that name, if anything. The
messages vertexbatch prints when an extra is missing say ``from a checkout of vertexbatch: pip
install '.[bigquery]' (or 'WHEEL[bigquery]' for a wheel built from it)``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    {
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "Dockerfile",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "docs").rglob("*.py"),
        *(ROOT / "examples").rglob("*.py"),
        *(ROOT / "vertexbatch").rglob("*.py"),
    }
)
_PIP_INSTALL = re.compile(r"pip install ([^`\n)&;]*)")
_BY_NAME = re.compile(r"vertexbatch(\[[^\]]*\])?([<>=!~@].*)?")


def from_an_index(text: str) -> list[str]:
    """Each ``pip install`` in the text that names the project, not a path to it."""
    found = []
    for match in _PIP_INSTALL.finditer(text):
        for word in match.group(1).split():
            if _BY_NAME.fullmatch(word.strip("'\"")):
                found.append(match.group(0).strip())
    return found


def test_the_check_tells_a_name_from_a_path() -> None:
    named = "pip install vertexbatch; `pip install 'vertexbatch[local]' pytest`, pip install x"
    assert from_an_index(named) == [
        "pip install vertexbatch",
        "pip install 'vertexbatch[local]' pytest",
    ]
    assert from_an_index("pip install vertexbatch==0.1.0") == ["pip install vertexbatch==0.1.0"]
    paths = (
        "pip install '.[local]' pytest; pip install . functions-framework; "
        "pip install 'dist/vertexbatch-0.1.0-py3-none-any.whl[cli]'; pip install -e '.[dev]'; "
        'pip install "${wheel}[cli]"; pip install opentelemetry-sdk'
    )
    assert from_an_index(paths) == []


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_install_from_an_index(path: Path) -> None:
    name = path.relative_to(ROOT).as_posix()
    found = from_an_index(path.read_text())
    assert found == [], (
        f"{name} installs vertexbatch by name, which no package index serves: {found}; "
        "install from the checkout (pip install '.[extra]') or a wheel built from it"
    )
