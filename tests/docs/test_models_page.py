"""docs/models.md is generated from the model catalogue (`python -m tools.models_page`): it
fails here when the catalogue changed and the page was not regenerated."""

from __future__ import annotations

from tools.models_page import PAGE, main, render


def test_the_models_page_is_the_catalogue_s() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/models.md is stale: run `python -m tools.models_page`"
    )
    assert main(["--check"]) == 0


def test_the_page_lists_every_model_and_its_sources() -> None:
    page = render()
    assert "| `claude-opus-5-5` | Claude Opus 5.5 | anthropic | yes |" in page
    assert "## Sources" in page and "(2026-12-07)" in page
