"""Build the docs site and check that every Mermaid diagram renders, offline, in a real browser.

    python -m tools.check_diagrams [--site DIR [--built]] [--screenshots DIR] [--no-browser]

1. Builds the site (`mkdocs build --strict`) into --site (a temporary folder by default); with
   --built, checks the site already built there instead (the tests build it once a session).
2. Without a browser, checks what the built HTML can show: each ```mermaid block of
   docs/*.md is a `<div class="mermaid">` on its page carrying the block's source; every page
   with one loads the site's own `js/mermaid.min.js` (tools/mermaid_js.py) and
   `js/mermaid-init.js`; no page loads a script, style sheet, image or font from another host.
3. With Chromium (`/usr/bin/chromium`, or --chromium PATH; Debian's `chromium` package), serves
   the site on 127.0.0.1 and opens each diagram's page headless (one run of Chromium a diagram),
   with every host name but 127.0.0.1 made unresolvable, so a CDN could not be reached: each
   diagram must have become an SVG that is not Mermaid's syntax-error picture. A screenshot of
   each diagram's section is written to --screenshots (default: TMPDIR/vertexbatch-diagrams).

Prints one line per diagram and exits 1 if any check failed. tests/docs/test_docs_diagrams.py runs
it with --built on the session's build (the `docs_site` fixture of the root conftest.py, which
integration_tests/test_docs_build.py checks too), with the browser where Chromium is installed.
"""

from __future__ import annotations

import argparse
import functools
import html
import http.server
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")

_FENCE = re.compile(r"^```mermaid\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_DIV = re.compile(r'<div class="mermaid"[^>]*>(.*?)</div>\s*(?=<|$)', re.DOTALL)
_SCRIPT = re.compile(r'<script[^>]*\ssrc="([^"]+)"')
# What a page loads (not what it links to): scripts, style sheets, images, fonts, frames.
_LOADS = re.compile(
    r'<(?:script|img|iframe|source)[^>]*\ssrc="([^"]+)"'
    r'|<link[^>]*rel="(?:stylesheet|preload|icon|shortcut icon)"[^>]*href="([^"]+)"'
    r"|url\((['\"]?)(https?:)?//[^)]*\)"
)
# Each Mermaid div of a page's DOM, with the <svg ...> tag it begins with once drawn ('' if none).
_DRAWN = re.compile(r'<div class="mermaid"[^>]*>\s*(<svg[^>]*>)?', re.DOTALL)


@dataclass(frozen=True)
class Diagram:
    page: str  # docs/NAME.md
    index: int  # its position on the page, from 1
    source: str

    @property
    def url_path(self) -> str:
        stem = Path(self.page).stem
        return "" if stem == "index" else f"{stem}/"

    @property
    def name(self) -> str:
        return f"{self.page}#{self.index}"


def diagrams() -> list[Diagram]:
    """Every ```mermaid block of docs/*.md, in page order."""
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for i, match in enumerate(_FENCE.finditer(page.read_text()), start=1):
            found.append(Diagram(f"docs/{page.name}", i, match.group(1)))
    return found


@dataclass(frozen=True)
class Built:
    """What `mkdocs build --strict` left: the site's folder, its exit status and its log."""

    site: Path
    returncode: int
    log: str  # mkdocs' stdout then stderr


def build_site(site: Path, timeout: float = 300) -> Built:
    """`mkdocs build --strict` into site, in a process of its own (as a user runs it)."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Built(site, done.returncode, done.stdout + done.stderr)


def build(site: Path) -> None:
    """`mkdocs build --strict` into site; raises with mkdocs' output if it fails."""
    built = build_site(site)
    if built.returncode != 0:
        raise SystemExit(f"mkdocs build failed:\n{built.log}")


def _page_html(site: Path, diagram: Diagram) -> str:
    return (site / diagram.url_path / "index.html").read_text()


def _normalised(text: str) -> str:
    return " ".join(text.split())


def static_problems(site: Path, found: list[Diagram]) -> list[str]:
    """What the built HTML shows wrong, without a browser."""
    problems = []
    by_page: dict[str, list[Diagram]] = {}
    for diagram in found:
        by_page.setdefault(diagram.page, []).append(diagram)
    for page, on_page in by_page.items():
        text = _page_html(site, on_page[0])
        divs = [_normalised(html.unescape(d)) for d in _DIV.findall(text)]
        if len(divs) != len(on_page):
            problems.append(f"{page}: {len(on_page)} mermaid blocks, {len(divs)} on the page")
        for diagram, div in zip(on_page, divs, strict=False):
            if div != _normalised(diagram.source):
                problems.append(f"{diagram.name}: the page's diagram is not the block's source")
        scripts = [s.rsplit("/", 1)[-1] for s in _SCRIPT.findall(text) if "//" not in s]
        needed = ["mermaid.min.js", "mermaid-init.js"]
        if [s for s in scripts if s in needed] != needed:
            problems.append(f"{page}: does not load the site's js/{' then js/'.join(needed)}")
    if not (site / "js" / "mermaid.min.js").is_file():
        problems.append("the site has no js/mermaid.min.js")
    for built in sorted(site.rglob("*.html")):
        for match in _LOADS.finditer(built.read_text()):
            url = match.group(1) or match.group(2) or match.group(0)
            if "//" in url:
                problems.append(f"{built.relative_to(site)} loads {url} from another host")
    for css in sorted(site.rglob("*.css")):
        if re.search(r"url\(\s*['\"]?(?:https?:)?//", css.read_text(errors="replace")):
            problems.append(f"{css.relative_to(site)} loads a url() from another host")
    return problems


def chromium(given: str | None) -> str | None:
    """The Chromium to drive: the one given, else the first on PATH."""
    if given:
        return given
    return next((path for name in CHROMIUM if (path := shutil.which(name))), None)


@contextmanager
def serving(site: Path, handler_class: type[_QuietHandler] | None = None) -> Iterator[str]:
    """The site over HTTP on 127.0.0.1 (a free port) while the block runs; its base URL."""
    handler = functools.partial(handler_class or _QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# For a screenshot (`PAGE/?shot=N`): hide what comes before the section of the page's N-th
# diagram, so it is at the top of the window. Headless Chromium's --screenshot draws a blank
# window once the page is scrolled, by an anchor or a script, so the page is not scrolled.
_SHOT_SCRIPT = """<script>(() => {
  let e = document.querySelectorAll(".mermaid")[%d];
  while (e.previousElementSibling && !/^H[1-6]$/.test(e.tagName)) e = e.previousElementSibling;
  for (e = e.previousElementSibling; e; e = e.previousElementSibling) e.style.display = "none";
})();</script></body>"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if not query.startswith("shot="):
            super().do_GET()
            return
        page = Path(self.translate_path(path)) / "index.html"
        body = page.read_text().replace("</body>", _SHOT_SCRIPT % (int(query[5:]) - 1), 1)
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _browser(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            # No host but this machine's loopback resolves: a CDN load fails, and so would the
            # diagram that needed it.
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            "--virtual-time-budget=20000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def browser_problems(
    site: Path, found: list[Diagram], binary: str, shots: Path
) -> tuple[list[str], list[str]]:
    """Open each diagram's page in headless Chromium: (problems, one line per diagram).

    One run of Chromium per diagram both dumps the page's DOM (where Mermaid's SVG is read) and
    takes the screenshot of the diagram's section (`?shot=N`, which hides what comes before it).
    """
    problems: list[str] = []
    lines: list[str] = []
    shots.mkdir(parents=True, exist_ok=True)
    with serving(site) as base, tempfile.TemporaryDirectory() as tmp:
        for diagram in found:
            shot = shots / f"{Path(diagram.page).stem}-{diagram.index}.png"
            shot.unlink(missing_ok=True)
            done = _browser(
                binary,
                Path(tmp) / "profile",
                "--dump-dom",
                f"--screenshot={shot}",
                "--window-size=1280,1600",
                f"{base}{diagram.url_path}?shot={diagram.index}",
            )
            if done.returncode != 0:
                problems.append(f"{diagram.name}: chromium exited {done.returncode}")
            drawn = _DRAWN.findall(done.stdout)
            attributes = drawn[diagram.index - 1] if len(drawn) >= diagram.index else ""
            if not attributes:
                problems.append(f"{diagram.name}: not rendered as SVG")
                lines.append(f"FAIL  {diagram.name}  no SVG")
                continue
            if 'aria-roledescription="error"' in attributes:
                problems.append(f"{diagram.name}: Mermaid drew its syntax-error picture")
                lines.append(f"FAIL  {diagram.name}  syntax error")
                continue
            kind = re.search(r'aria-roledescription="([^"]+)"', attributes)
            box = re.search(r'viewBox="([^"]+)"', attributes)
            if not shot.is_file():
                problems.append(f"{diagram.name}: no screenshot written")
            lines.append(
                f"ok    {diagram.name}  SVG {kind.group(1) if kind else '?'}"
                f"  viewBox {box.group(1) if box else '?'}  screenshot {shot}"
            )
    return problems, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.check_diagrams", description=__doc__)
    parser.add_argument("--site", type=Path, help="build the site here (default: a temp dir)")
    parser.add_argument(
        "--built", action="store_true", help="--site is already built: check it, do not build"
    )
    parser.add_argument("--screenshots", type=Path, help="write the screenshots here")
    parser.add_argument("--chromium", help="the Chromium binary (default: chromium on PATH)")
    parser.add_argument("--no-browser", action="store_true", help="only the static checks")
    args = parser.parse_args(argv)
    if args.built and args.site is None:
        parser.error("--built needs --site, the folder the site was built into")
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site or Path(tmp) / "site"
        if args.built:
            if not (site / "index.html").is_file():
                raise SystemExit(f"--built: {site} holds no built site (no index.html)")
        else:
            build(site)
        found = diagrams()
        problems = static_problems(site, found)
        done = "checked" if args.built else "built"
        print(f"{done} {site}: {len(found)} diagrams on {len({d.page for d in found})} pages")
        binary = None if args.no_browser else chromium(args.chromium)
        if binary is None:
            print("no browser: checked the built HTML only (install Debian's chromium to render)")
            for diagram in found:
                print(f"html  {diagram.name}  source and local script present")
        else:
            shots = args.screenshots or Path(tempfile.gettempdir()) / "vertexbatch-diagrams"
            more, lines = browser_problems(site, found, binary, shots)
            problems += more
            print(f"rendered in {binary}, offline (only 127.0.0.1 resolves)")
            print("\n".join(lines))
    for problem in problems:
        print(f"FAIL  {problem}")
    if not found:
        print("FAIL  no ```mermaid block in docs/*.md")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
