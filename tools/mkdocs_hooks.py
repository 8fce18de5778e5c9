"""mkdocs hooks (mkdocs.yml `hooks:`): what the built site serves itself, so it loads no CDN.

The readthedocs theme would load highlight.js and its style from a CDN; mkdocs.yml turns that
off (`highlightjs: false`) and code is coloured at build time by Pygments (pymdownx.highlight),
whose style sheet is written here. Mermaid's script is the pinned one of tools/mermaid_js.py.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from pygments.formatters import HtmlFormatter

# mkdocs loads a hook from its file: `mkdocs build` (unlike `python -m mkdocs`) has no
# repository root on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tools import mermaid_js

PYGMENTS_CSS = "css/pygments.css"


def on_post_build(config: Any, **_: Any) -> None:
    """Write SITE/css/pygments.css, and copy mermaid.min.js to SITE/js/ (mkdocs.yml loads both)."""
    css = Path(config["site_dir"]) / PYGMENTS_CSS
    css.parent.mkdir(parents=True, exist_ok=True)
    css.write_text(HtmlFormatter(style="default").get_style_defs(".highlight"))
    try:
        source = mermaid_js.script()
    except mermaid_js.MermaidUnavailable as exc:
        raise PluginError(str(exc)) from exc
    dest = Path(config["site_dir"]) / mermaid_js.SITE_PATH
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
