"""Every model id a user meets is one the shipped price table prices (issue 29, item 5).

The docs, README, examples, the demo and the command's help texts and error hints name model
ids; a `--dry-run` of any of them must show a cost, not "no price known". The files are
scanned for Claude and Gemini model ids, and each is looked up with `price_of`
(vertexbatch/_plans/prices.py). An id that is unpriced (or fictional) on purpose is listed in
`UNPRICED_ON_PURPOSE` with the file that names it and the reason: anywhere else it fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vertexbatch._catalogue import catalogue
from vertexbatch._plans.prices import price_of

ROOT = Path(__file__).resolve().parents[2]

# What a user reads or runs: the docs (pages, included examples, generated samples), the README,
# the examples, and the command (its help texts, error hints and the demo).
SCANNED = (
    "README.md",
    "docs/**/*.md",
    "docs/**/*.py",
    "docs/samples/*.txt",
    "examples/**/*.py",
    "vertexbatch/_command/*.py",
    "vertexbatch/_checks/*.py",
    "vertexbatch/_rules.py",
    "vertexbatch/_values.py",
)

# A model id: a Claude family (opus, sonnet, haiku, fable, or a numbered generation such as
# claude-3-5-haiku) or a numbered Gemini generation, with an optional `@version`. Not words
# such as `claude-code` or a page name such as `claude-api-pricing`.
MODEL_ID = re.compile(
    r"(?<![\w.-])(?:claude-(?:opus|sonnet|haiku|fable|\d)|gemini-\d)[a-z0-9.-]*(?:@[a-z0-9]+)?"
)

UNPRICED_ON_PURPOSE: dict[tuple[str, str], str] = {
    ("docs/local-stack.md", "gemini-3"): "a family prefix (the stack's Gemini 3 rule), no model",
    ("docs/platform-facts.md", "gemini-3"): "a family prefix (Gemini 3's signature rule)",
    ("docs/platform-facts.md", "gemini-2.5"): "a family named in a quotation",
    (
        "docs/platform-facts.md",
        "gemini-3s-function-calling-has-a-signature-rule-that-only-bites-you-once-you-add-a-second"
        "-tool-call-31mm",
    ): "a source's URL, no id",
    ("docs/cost.md", "claude-fable-5-2"): "the prices= example: a catalogued model no page prices",
    ("docs/cli.md", "claude-opus-5-6@default"): "the example of a model outside the catalogue",
    ("docs/local-stack.md", "gemini-0.1-nowhere"): "the 404 of a model outside the catalogue",
    ("docs/testing.md", "claude-3-5-haiku"): "how to serve a model the catalogue lacks",
    ("docs/models.md", "gemini-3-8-flash"): "a source's URL (Google's 3.8 Flash guide), no id",
    ("docs/models.md", "gemini-3-1-pro-preview.md"): "a source's URL (a reseller's page), no id",
    ("docs/platform-facts.md", "gemini-3-1-pro-preview.md"): "the same URL, no id",
    # The models-and-prices page lists every catalogued model, priced or not (it says which).
    **{
        ("docs/models.md", model.id): "the catalogue lists it; no page we read prices it"
        for model in catalogue()
        # Embedding model ids (gemini-embedding-001, text-embedding-005) and open models'
        # PUBLISHER/MODEL ids are not ids the scan's pattern reads (Claude families, numbered
        # Gemini generations); no price is known for them, which docs/embeddings.md,
        # docs/open-models.md and docs/models.md say.
        if model.rates is None and MODEL_ID.fullmatch(model.id)
    },
}


def scanned_files() -> list[Path]:
    found = {path for pattern in SCANNED for path in ROOT.glob(pattern)}
    return sorted(path for path in found if path.is_file())


def model_ids(text: str) -> set[str]:
    """The model ids `text` names (a sentence's full stop or a trailing `-` is not part)."""
    return {match.rstrip(".-") for match in MODEL_ID.findall(text)}


def named_models() -> dict[tuple[str, str], str]:
    """(file, model id) for every model id each scanned file names, with its first line."""
    named: dict[tuple[str, str], str] = {}
    for path in scanned_files():
        name = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for model in model_ids(line):
                named.setdefault((name, model), f"{name}:{number}: {line.strip()}")
    return named


def test_the_scan_finds_the_documented_models() -> None:
    """The scan sees the ids the quickstart, the demo and the command's help use (it is not
    vacuous), and reads ids as a user would write them."""
    named = named_models()
    assert ("docs/examples/quickstart.py", "claude-sonnet-4-5") in named
    assert ("vertexbatch/_command/demo_data.py", "claude-sonnet-4-5") in named
    assert ("vertexbatch/_command/demo_data.py", "gemini-2.5-flash") in named
    assert ("docs/samples/cost-dry-run.txt", "claude-sonnet-4-5") in named
    assert ("vertexbatch/_command/cli.py", "claude-sonnet-4-5") in named
    assert len(named) > 40, len(named)
    assert model_ids("`claude-sonnet-4-5@20250929`, claude-opus-4-6. gemini-2.5-flash-001") == {
        "claude-sonnet-4-5@20250929",
        "claude-opus-4-6",
        "gemini-2.5-flash-001",
    }
    assert model_ids("claude-code, claude-api-pricing, gemini-model, my-gemini-2") == set()
    assert model_ids("publishers/anthropic/models/claude-sonnet-4-5") == {"claude-sonnet-4-5"}


def test_every_model_a_user_meets_is_priced() -> None:
    """Each id the docs, README, examples and the command name has a price in the table,
    except the ones listed with their reason (which must still be named where listed)."""
    named = named_models()
    unpriced = [
        where
        for (name, model), where in sorted(named.items())
        if price_of(model) is None and (name, model) not in UNPRICED_ON_PURPOSE
    ]
    assert not unpriced, "model ids the price table does not price:\n" + "\n".join(unpriced)
    stale = [entry for entry in UNPRICED_ON_PURPOSE if entry not in named]
    assert not stale, f"listed as unpriced on purpose but no longer named there: {stale}"
    priced_anyway = [entry for entry in UNPRICED_ON_PURPOSE if price_of(entry[1]) is not None]
    assert not priced_anyway, f"listed as unpriced on purpose but priced: {priced_anyway}"


@pytest.mark.parametrize(
    "model", ["claude-sonnet-4-5", "gemini-2.5-flash", "claude-sonnet-4-5@20250929"]
)
def test_the_demo_and_docs_models_are_served_by_the_local_stack(model: str) -> None:
    """The stack's default catalogue serves the models the docs and the demo submit to."""
    from vertexbatch.emulator._catalogue import Catalogue

    publisher = "google" if model.startswith("gemini-") else "anthropic"
    assert Catalogue().holds(publisher, model)
