"""The Mermaid script the docs site serves itself: one pinned release, checked by its digest.

The site must render its diagrams offline (no CDN), so the built site carries
``js/mermaid.min.js``. It is not kept in the repository (5.5 MB of minified JavaScript that
would be rewritten on every upgrade): the build takes it from the npm package ``mermaid`` at
the pinned version, with ``npm pack``, once per machine, caches it, and checks its SHA-256
before copying it into the site. ``VERTEXBATCH_MERMAID_JS=PATH`` names a copy to use instead
(the same digest is required). To upgrade: change VERSION and SHA256 together.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

VERSION = "12.3.0"
SHA256 = "336df803d87a38b70a01e736e666c8f7601d2ce42f5e47c8fafe5d721074b9a3"
MEMBER = "package/dist/mermaid.min.js"
SITE_PATH = "js/mermaid.min.js"


class MermaidUnavailable(RuntimeError):
    """The pinned script could not be had, or a copy of it has the wrong digest."""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vertexbatch-docs"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _checked(path: Path, where: str) -> Path:
    found = _digest(path)
    if found != SHA256:
        raise MermaidUnavailable(
            f"{where} {path} has SHA-256 {found}, not mermaid {VERSION}'s {SHA256}"
        )
    return path


def _from_npm(dest: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise MermaidUnavailable(
            f"the docs need mermaid {VERSION}'s dist/mermaid.min.js and npm is not installed: "
            "install Node.js and npm, or set VERTEXBATCH_MERMAID_JS to a copy of that file"
        )
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [npm, "pack", f"mermaid@{VERSION}", "--pack-destination", tmp, "--silent"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        tarballs = list(Path(tmp).glob("mermaid-*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            raise MermaidUnavailable(
                f"npm pack mermaid@{VERSION} failed (exit {done.returncode}): "
                f"{done.stderr.strip()[-300:]}"
            )
        with tarfile.open(tarballs[0]) as archive:
            member = archive.extractfile(MEMBER)
            if member is None:
                raise MermaidUnavailable(f"mermaid@{VERSION}'s package has no {MEMBER}")
            partial = dest.with_suffix(".part")
            partial.write_bytes(member.read())
    _checked(partial, "the npm package's")
    partial.replace(dest)


def script() -> Path:
    """The pinned mermaid.min.js on this machine, fetched once from npm and verified."""
    given = os.environ.get("VERTEXBATCH_MERMAID_JS")
    if given:
        return _checked(Path(given), "VERTEXBATCH_MERMAID_JS")
    cached = _cache_dir() / f"mermaid-{VERSION}.min.js"
    if not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        _from_npm(cached)
    return _checked(cached, "the cached")
