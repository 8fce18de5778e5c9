"""The docs read quickly (issue 43): a glossary whose links land, jargon linked where first
used, a short concepts page, and a section guide at the top of every long page.

Words are counted in the Markdown a reader reads as prose: fenced blocks (code, sample outputs,
diagrams) and HTML comments are left out, a link counts its text and not its address, a
table's rule row (`|---|---|`) counts nothing, and a word is a run of non-blank characters that
starts with a letter or digit (so `-`, `|` and `**` alone are not words). The site renders the
same prose; code blocks are reference a reader scans, not reads.

A page's section guide is a list before its first `##` heading holding, for every `##` heading of
the page in order, an item `- [Title](#anchor): what the section is for.`, the anchor being the
one the site gives the heading (Python-Markdown's toc extension, as mkdocs builds it).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
CONCEPTS_MAX_WORDS = 2_000
GUIDE_OVER_WORDS = 3_000

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.DOTALL | re.MULTILINE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_RULE_ROW = re.compile(r"^\|?[\s:|-]+\|?$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z0-9]\S*")
_H2 = re.compile(r"^## (.+?)\s*$", re.MULTILINE)
_GUIDE_ITEM = re.compile(r"^- \[(?P<title>[^\]]+)\]\(#(?P<anchor>[^)\s]+)\): \S.*$", re.MULTILINE)
_GLOSSARY_ENTRY = re.compile(
    r'^- <a id="(?P<id>[a-z0-9-]+)"></a>\*\*(?P<term>[^*]+)\*\*.*?'
    r"\[[^\]]+\]\((?P<target>[^)\s]+)\)\.?\n(?=- |\Z)",
    re.DOTALL | re.MULTILINE,
)
_LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
_CODE_SPAN = re.compile(r"(`+)[^`]*?\1")
_HEADING = re.compile(r"^#+ .*$", re.MULTILINE)
_DIRECTIVE_LINE = re.compile(r"^:::.*$", re.MULTILINE)

# Jargon a newcomer meets before it is explained (issue 43 named the first five): on every page
# but the one the glossary sends the term to (which defines it in place), its first use in prose
# is a link, to the glossary or to where it is explained.
JARGON = {
    "adopt": r"\badopt(?:s|ed|ing|ion)?\b",
    "claim": r"\bclaim(?:s|ed|ing)?\b",
    "twin": r"\btwins?\b",
    "create-only": r"\bcreate-only\b",
    "ledger": r"\bledgers?\b",
    "key-map": r"\bkey\s+maps?\b",
    "manifest": r"\bmanifests?\b",
    "shard": r"\bshards?\b",
    "nonce": r"\bnonces?\b",
    "derived-id": r"\bderived\s+ids?\b",
    "answer-cache": r"\banswer\s+cache\b",
    "fallback": r"\bonline\s+fallback\b",
    "directive": r"\bdirectives?\b",
}


def prose_words(text: str) -> int:
    """The words of a page's prose (the module's docstring says what counts)."""
    text = _FENCE.sub("", text)
    text = _COMMENT.sub("", text)
    text = _LINK_TARGET.sub("]", text)
    text = _RULE_ROW.sub("", text)
    return len(_WORD.findall(text))


def heading_anchors(text: str) -> dict[str, str]:
    """Each `##` heading's title and the anchor the site gives it (Python-Markdown's toc)."""
    import markdown

    md = markdown.Markdown(extensions=["toc", "tables", "pymdownx.superfences"])
    md.convert(text)
    found: dict[str, str] = {}

    def walk(tokens: list[dict]) -> None:
        for token in tokens:
            if token["level"] == 2:
                found[token["name"]] = token["id"]
            walk(token["children"])

    walk(md.toc_tokens)  # type: ignore[attr-defined]
    return found


@functools.cache
def all_anchors(page: str) -> frozenset[str]:
    """Every anchor of a page: its headings' (any level) and its `<a id="...">`s (each page
    rendered once a session: the glossary's entries link to the same few pages)."""
    import markdown

    text = (DOCS / page).read_text()
    md = markdown.Markdown(extensions=["toc", "tables", "pymdownx.superfences"])
    md.convert(text)
    found = set(re.findall(r'<a id="([^"]+)"', text))

    def walk(tokens: list[dict]) -> None:
        for token in tokens:
            found.add(token["id"])
            walk(token["children"])

    walk(md.toc_tokens)  # type: ignore[attr-defined]
    return frozenset(found)


def h2_titles(text: str) -> list[str]:
    """The page's `##` headings in order, as the site shows them (code spans without backticks)."""
    return [t.replace("`", "") for t in _H2.findall(_FENCE.sub("", text))]


def section_guide(text: str) -> list[tuple[str, str]]:
    """The (title, anchor) items of the list before the page's first `##` heading."""
    top = _FENCE.sub("", text).split("\n## ", 1)[0]
    return [(m["title"], m["anchor"]) for m in _GUIDE_ITEM.finditer(top)]


def glossary() -> dict[str, tuple[str, str]]:
    """Each glossary entry's anchor id: its term and the page (and anchor) it links to."""
    text = (DOCS / "glossary.md").read_text()
    return {m["id"]: (m["term"], m["target"]) for m in _GLOSSARY_ENTRY.finditer(text)}


def _masked(text: str) -> str:
    """The page with what is not prose (code, comments, headings, link addresses) blanked,
    keeping every other character where it was."""

    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    for pattern in (_FENCE, _COMMENT, _CODE_SPAN, _HEADING, _DIRECTIVE_LINE, _LINK_TARGET):
        text = pattern.sub(blank, text)
    return text


def first_unlinked_use(text: str, pattern: str) -> re.Match[str] | None:
    """The first use of a term in the page's prose, if it is not inside a link's text."""
    masked = _masked(text)
    first = re.search(pattern, masked, re.IGNORECASE)
    if first is None:
        return None
    original = _masked_links(text)
    for link in original:
        if link[0] <= first.start() and first.end() <= link[1]:
            return None
    return first


def _masked_links(text: str) -> list[tuple[int, int]]:
    """Where each link's text is in the page: (start, end) of the part between the brackets."""
    masked = text
    for pattern in (_FENCE, _COMMENT, _CODE_SPAN):
        masked = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), masked)
    return [(m.start("text"), m.end("text")) for m in _LINK.finditer(masked)]


def test_word_count_counts_prose_only() -> None:
    text = (
        "# Title\n\nOne two [three](x.md#a-long-anchor) `four`.\n\n"
        "| a | b |\n|---|---|\n| c | d |\n\n```python\nnot counted at all\n```\n<!-- nor this -->\n"
    )
    assert prose_words(text) == 9  # Title One two three `four`. a b c d


def test_concepts_is_at_most_2000_words() -> None:
    """Concepts is the overview: its detail lives on the pages it links to."""
    words = prose_words((DOCS / "concepts.md").read_text())
    assert words <= CONCEPTS_MAX_WORDS, f"docs/concepts.md has {words} words of prose"


def test_the_guide_check_reads_a_guide() -> None:
    page = (
        "# P\n\nIntro.\n\n- [One `x`](#one-x): why.\n- [Two](#two): why.\n\n## One `x`\n\n## Two\n"
    )
    assert section_guide(page) == [("One `x`", "one-x"), ("Two", "two")]
    assert h2_titles(page) == ["One x", "Two"]
    assert heading_anchors(page) == {"One x": "one-x", "Two": "two"}
    assert section_guide("# P\n\n## One\n\n- [One](#one): late.\n") == []


@pytest.mark.parametrize("page", PAGES)
def test_a_long_page_says_at_its_top_what_each_section_is_for(page: str) -> None:
    """A page over 3,000 words of prose opens with a section guide: every `##` heading, in
    order, linked by its anchor and followed by what it is for."""
    text = (DOCS / page).read_text()
    if prose_words(text) <= GUIDE_OVER_WORDS:
        return
    anchors = heading_anchors(text)
    guide = section_guide(text)
    expected = [(title, anchors[title]) for title in h2_titles(text)]
    assert [(t.replace("`", ""), a) for t, a in guide] == expected, (
        f"docs/{page} has {prose_words(text)} words: its top needs a list "
        "'- [Heading](#anchor): what it is for.' for each ## heading, in order"
    )


def test_the_glossary_is_in_the_nav_and_linked_from_the_home_page() -> None:
    assert "glossary.md" in (ROOT / "mkdocs.yml").read_text()
    assert "(glossary.md)" in (DOCS / "index.md").read_text()


def test_glossary_entries_are_alphabetical_and_each_links_to_an_existing_anchor() -> None:
    entries = glossary()
    assert len(entries) >= 40
    text = (DOCS / "glossary.md").read_text()
    assert text.count('<a id="') == len(entries), "an entry the check does not read"
    terms = [term.lower() for term, _ in entries.values()]
    assert terms == sorted(terms)
    for anchor, (term, target) in entries.items():
        page, _, fragment = target.partition("#")
        assert (DOCS / page).is_file(), f"glossary: {term} links to missing {page}"
        if fragment:
            assert fragment in all_anchors(page), f"glossary: {term} links to {target}: no anchor"
        assert anchor == re.sub(r"[^a-z0-9]+", "-", term.split(" (")[0].lower()).strip("-")


@pytest.mark.parametrize("page", PAGES)
def test_links_to_the_glossary_land_on_an_entry(page: str) -> None:
    ids = set(glossary())
    for link in _LINK.finditer((DOCS / page).read_text()):
        target = link["target"]
        if target.startswith("glossary.md#") or (page == "glossary.md" and target[0] == "#"):
            assert target.partition("#")[2] in ids, f"docs/{page} links to {target}"


def test_the_first_use_check_sees_links_and_code() -> None:
    assert (
        first_unlinked_use("A `shard` then a [shard](glossary.md#shard).", JARGON["shard"]) is None
    )
    found = first_unlinked_use(
        "The [run](runs.md) has a shard, then a [shard](x).", JARGON["shard"]
    )
    assert found is not None and found.group(0) == "shard"
    assert first_unlinked_use("[the key\nmap](x) then key map", JARGON["key-map"]) is None


@pytest.mark.parametrize("page", [p for p in PAGES if p != "glossary.md"])
def test_jargon_is_linked_where_first_used(page: str) -> None:
    """On each page, the first use of each term of JARGON is a link (to the glossary or to where
    it is explained), unless the page is the one the glossary sends the term to."""
    entries = glossary()
    text = (DOCS / page).read_text()
    unlinked = []
    for anchor, pattern in JARGON.items():
        home = entries[anchor][1].partition("#")[0]
        if home == page:
            continue
        found = first_unlinked_use(text, pattern)
        if found is not None:
            line = text.count("\n", 0, found.start()) + 1
            unlinked.append(f"{found.group(0)!r} (line {line}: link it to glossary.md#{anchor})")
    assert unlinked == [], f"docs/{page}: " + "; ".join(unlinked)
