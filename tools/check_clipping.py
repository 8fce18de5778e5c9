"""Check that no code block or table of the built docs is cut off in a 1280 px wide window.

    python -m tools.check_clipping [--site DIR [--built]] [--width 1280] [--page cli/ ...]

Builds the site (`mkdocs build --strict`, tools/check_diagrams.py) or, with --built, reads the
one already built in --site; serves it on 127.0.0.1 and opens every page in headless Chromium
(Debian's `chromium`), each in an iframe --width pixels wide of one page, so one run of Chromium
measures the site. A script added to each page as it is served measures, once the page's
fonts have loaded, every `<pre>` and `<table>` of the page's content: one is clipped when it,
its `<code>` or the box the theme wraps it in (`div.highlight`, `div.wy-table-responsive`) is
wider inside than it shows (`scrollWidth > clientWidth`: a reader must scroll sideways to see
the end of a line), or when its right edge is past the column's. Any other element of the
content wider than its box (a long address in a paragraph) is reported too.

Prints one line per page (`ok` or `FAIL`, with each clipped element: its kind, how many pixels
are hidden, and the start of its widest line or its header row) and exits 1 if any page has
one. tests/docs/test_docs_layout.py runs it with --built on the session's build.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools import check_diagrams

WIDTH = 1280
MARKER = "data-vb-clipped"

# Added before </body> of each page served with ?clipping: measures once the fonts are in, and
# writes what it found on <html> as JSON, which --dump-dom then prints.
_SCRIPT = """<script>(() => {
  const hidden = (e) => e.scrollWidth - e.clientWidth;
  const line = (s) => s.replace(/\\s+/g, " ").trim().slice(0, 70);
  const measure = () => {
    const found = [];
    const root = document.querySelector("[role=main]") || document.body;
    const edge = root.getBoundingClientRect().right;
    for (const e of root.querySelectorAll("pre, table")) {
      // The theme scrolls a code block in its <code> (or div.highlight), a table in its wrapper.
      const boxes = [e, ...e.querySelectorAll(":scope > code")];
      const box = e.parentElement;
      if (box && /^(wy-table-responsive|highlight)/.test(box.className)) boxes.push(box);
      const over = Math.max(...boxes.map(hidden), e.getBoundingClientRect().right - edge);
      if (over > 1) {
        const text = e.tagName === "PRE"
          ? e.innerText.split("\\n").reduce((a, b) => (b.length > a.length ? b : a), "")
          : (e.rows[0] ? e.rows[0].innerText : "");
        found.push({kind: e.tagName.toLowerCase(), hidden: Math.round(over), text: line(text)});
      }
    }
    // Anything else wider than its box (a long address, say): the innermost such element.
    const wide = Array.from(root.querySelectorAll("*")).filter(
      (e) => !e.closest("pre, table, .highlight, .mermaid, .wy-table-responsive") && hidden(e) > 1);
    for (const e of wide.filter((e) => !wide.some((d) => d !== e && e.contains(d)))) {
      found.push({kind: e.tagName.toLowerCase(), hidden: hidden(e), text: line(e.textContent)});
    }
    document.documentElement.setAttribute("@MARKER@", JSON.stringify(found));
    if (window.parent !== window) window.parent.postMessage([location.pathname, found], "*");
  };
  // Reading the sizes lays the page out: no frame needs to be drawn (frames of the pages'
  // iframes below the window are not).
  document.fonts.ready.then(measure);
})();</script></body>""".replace("@MARKER@", MARKER)


# The page that opens every page at once, each in an iframe ``width`` wide: one run of Chromium
# for the whole site. Each page's script posts what it found here, and once all have, this page
# writes them, by page, on its own <html>.
_ALL = """<!doctype html><html><body style="margin:0">@FRAMES@<script>
const found = {};
window.addEventListener("message", (e) => {
  found[e.data[0]] = e.data[1];
  if (Object.keys(found).length === @COUNT@) {
    document.documentElement.setAttribute("@MARKER@", JSON.stringify(found));
  }
});
</script></body></html>"""
_FRAME = (
    '<iframe src="/@PAGE@?clipping" width="@WIDTH@" height="900" style="display:block"></iframe>'
)

_FOUND = re.compile(MARKER + r"=\"([^\"]*)\"")


@dataclass(frozen=True)
class Clipped:
    page: str  # the page's path in the site: "" for the home page, "cli/" for docs/cli.md
    kind: str  # "pre" or "table"
    hidden: int  # pixels past the box (or the window)
    text: str  # the start of the widest line (a code block) or the header row (a table)


def pages(site: Path) -> list[str]:
    """Each page of the built site that comes from docs/*.md, as its path under the site."""
    found = []
    for md in sorted(check_diagrams.DOCS.glob("*.md")):
        path = "" if md.stem == "index" else f"{md.stem}/"
        if (site / path / "index.html").is_file():
            found.append(path)
    return found


def _all_pages(paths: list[str], width: int) -> str:
    frames = "".join(
        _FRAME.replace("@PAGE@", path).replace("@WIDTH@", str(width)) for path in paths
    )
    return (
        _ALL.replace("@FRAMES@", frames)
        .replace("@COUNT@", str(len(paths)))
        .replace("@MARKER@", MARKER)
    )


class _Handler(check_diagrams._QuietHandler):
    # Set by check() before the server starts: what /?all serves.
    all_pages = ""

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if query == "all":
            data = self.all_pages.encode()
        elif query == "clipping":
            page = Path(self.translate_path(path)) / "index.html"
            data = page.read_text().replace("</body>", _SCRIPT, 1).encode()
        else:
            super().do_GET()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def measured(dom: str, page: str) -> list[Clipped] | None:
    """What the page's script found, from Chromium's --dump-dom (None: the script did not run)."""
    match = _FOUND.search(dom)
    if match is None:
        return None
    return [Clipped(page, **item) for item in json.loads(html.unescape(match.group(1)))]


def measured_all(dom: str, paths: list[str]) -> dict[str, list[Clipped] | None]:
    """What each page's script found, from the --dump-dom of the page of all pages (None for
    a page that posted nothing)."""
    match = _FOUND.search(dom)
    by_path = json.loads(html.unescape(match.group(1))) if match else {}
    return {
        path: None
        if (items := by_path.get(f"/{path}")) is None
        else [Clipped(path, **item) for item in items]
        for path in paths
    }


def check(
    site: Path, binary: str, width: int = WIDTH, only: list[str] | None = None
) -> Iterator[tuple[str, list[Clipped] | None]]:
    """Each page (or those of ``only``, as "cli/") with what is clipped on it at ``width``
    (None: it could not be measured)."""
    paths = only or pages(site)
    handler = type("_Serving", (_Handler,), {"all_pages": _all_pages(paths, width)})
    with (
        check_diagrams.serving(site, handler) as base,
        tempfile.TemporaryDirectory() as tmp,
    ):
        done = check_diagrams._browser(
            binary,
            Path(tmp) / "profile",
            "--dump-dom",
            f"--window-size={width + 20},900",
            f"{base}?all",
        )
    found = measured_all(done.stdout, paths) if done.returncode == 0 else {}
    for path in paths:
        yield path, found.get(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.check_clipping", description=__doc__)
    parser.add_argument("--site", type=Path, help="build the site here (default: a temp dir)")
    parser.add_argument(
        "--built", action="store_true", help="--site is already built: check it, do not build"
    )
    parser.add_argument("--width", type=int, default=WIDTH, help="the window's width in pixels")
    parser.add_argument("--page", action="append", help="only this page (cli/), repeatable")
    parser.add_argument("--chromium", help="the Chromium binary (default: chromium on PATH)")
    args = parser.parse_args(argv)
    if args.built and args.site is None:
        parser.error("--built needs --site, the folder the site was built into")
    binary = check_diagrams.chromium(args.chromium)
    if binary is None:
        raise SystemExit("no Chromium on PATH (Debian's chromium package), nor --chromium given")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site or Path(tmp) / "site"
        if not args.built:
            check_diagrams.build(site)
        for page, clipped in check(site, binary, args.width, args.page):
            name = f"/{page}"
            if clipped is None:
                failed = True
                print(f"FAIL  {name}  not measured (Chromium failed or the script did not run)")
            elif clipped:
                failed = True
                print(f"FAIL  {name}  {len(clipped)} clipped at {args.width} px")
                for c in clipped:
                    print(f"      {c.kind} {c.hidden} px hidden: {c.text}")
            else:
                print(f"ok    {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
