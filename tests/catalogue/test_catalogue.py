"""The model catalogue's data: every row sourced and well-formed, and its lookups (pure)."""

from __future__ import annotations

import datetime
import math
import re
import tomllib

import pytest

import vertexbatch as vb
from vertexbatch._catalogue import (
    CATALOGUE_FILE,
    Model,
    catalogue,
    closest,
    model_entry,
    uncatalogued,
)
from vertexbatch._catalogue.entries import _model
from vertexbatch._plans.estimate import cache_said
from vertexbatch._plans.prices import price_of
from vertexbatch._providers import of_model
from vertexbatch._rules import check_model

# A region as Google names them (us-east5, europe-west1, northamerica-northeast1), the
# multi-regions and the global endpoint.
REGION = re.compile(r"[a-z]+-[a-z]+\d{1,2}")
MULTI = {"global", "us", "eu"}
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def test_the_file_parses_and_holds_every_row() -> None:
    """models.toml is TOML, every [[model]] table becomes a row, in the file's order."""
    with CATALOGUE_FILE.open("rb") as file:
        tables = tomllib.load(file)["model"]
    assert [row["id"] for row in tables] == [model.id for model in catalogue()]
    assert len(catalogue()) >= 20


@pytest.mark.parametrize("model", catalogue(), ids=lambda m: m.id)
def test_every_row_is_sourced_and_well_formed(model: Model) -> None:
    """At least one https source with a real YYYY-MM-DD date; a bare id of its publisher's
    family; rates finite and non-negative; locations named as Google names them."""
    assert model.sources, f"{model.id}: no source"
    for source in model.sources:
        assert source.url.startswith("https://"), (model.id, source.url)
        assert DATE.fullmatch(source.read), (model.id, source.read)
        assert datetime.date.fromisoformat(source.read) <= datetime.date(2026, 12, 31)
    row = of_model(model.id)  # its lane: the publisher's family, embeddings, or open models
    assert row is not None, model.id
    assert check_model(model.id, row.provider) == model.id  # no @, no path
    if row.publisher is None:  # an open model: PUBLISHER/MODEL, its publisher named in its id
        assert model.id.partition("/")[0] == model.publisher, (model.id, model.publisher)
    else:
        assert row.publisher == model.publisher, (model.id, model.publisher)
        assert model.id.startswith(tuple(f"{prefix}-" for prefix in row.prefixes))
    assert model.name
    if model.rates is not None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(model.rates, name)
            assert value is None or (math.isfinite(value) and value >= 0), (model.id, name)
    for place in model.locations:
        assert place in MULTI or REGION.fullmatch(place), (model.id, place)
    assert model.concurrent_jobs is None or model.concurrent_jobs > 0


def test_ids_are_unique() -> None:
    ids = [model.id for model in catalogue()]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_a_misspelt_key_is_refused_not_dropped() -> None:
    """A fact under a wrong key would vanish silently: the row is refused, naming it."""
    with pytest.raises(ValueError, match=r"'claude-x': unknown keys \['rate'\]"):
        _model({"id": "claude-x", "publisher": "anthropic", "rate": {"input": 1, "output": 2}})


def test_a_model_is_found_as_callers_write_it() -> None:
    """Bare, @version, a publisher path, Gemini's -001: the row; a neighbour id: none."""
    assert model_entry("claude-opus-5-5@default").id == "claude-opus-5-5"
    assert model_entry("publishers/anthropic/models/claude-sonnet-4-5@20250929").id == (
        "claude-sonnet-4-5"
    )
    assert model_entry("gemini-2.5-flash-001").id == "gemini-2.5-flash"
    for other in ("claude-opus-5-50", "claude-opus-5-6", "gemini-2.5-flash-preview", "llama-4"):
        assert model_entry(other) is None, other
    assert closest("claude-opus-5-6@default") == "claude-opus-5-5"
    assert closest("zzzz") is None


def test_the_issue_s_models_are_catalogued_and_opus_5_5_is_priced() -> None:
    """Google's Claude batch page's models and the current Gemini ones are rows;
    claude-opus-5-5@default, the design notes' id, has a price with its cache rates."""
    for model in (
        "claude-sonnet-5",
        "claude-sonnet-5-5",
        "claude-opus-5",
        "claude-opus-5-5",
        "claude-fable-5",
        "claude-fable-5-1",
        "claude-fable-5-2",
        "gemini-3.8-flash",
        "gemini-2.5-flash",
    ):
        entry = model_entry(model)
        assert entry is not None and entry.batch, model
    assert price_of("claude-opus-5-5@default") == vb.Price("claude-opus-5-5", 4.0, 20.0, 0.2, 5.0)


def test_the_price_table_is_the_catalogue_s_rates() -> None:
    """PRICES holds exactly the priced rows, at their rates, dated by the newest source."""
    priced = [model for model in catalogue() if model.rates is not None]
    assert [p.match for p in vb.PRICES] == [model.id for model in priced]
    for model, price in zip(priced, vb.PRICES, strict=True):
        assert model.rates is not None
        assert (price.input, price.output, price.cache_read, price.cache_write) == (
            model.rates.input,
            model.rates.output,
            model.rates.cache_read,
            model.rates.cache_write,
        )
    newest = max(source.read for model in priced for source in model.sources)
    assert vb.PRICES.date == newest


def test_the_warning_names_the_closest_catalogued_id() -> None:
    said = uncatalogued("claude-opus-5-6@default")
    assert said is not None and "'claude-opus-5-5'" in said and "vertexbatch models" in said
    assert "no catalogued id is close" in (uncatalogued("claude-zzzzzzzzzzzz") or "")
    assert uncatalogued("claude-opus-5-5@default") is None


def test_a_plan_says_what_cached_input_costs_and_why_it_cannot_count_it() -> None:
    """Gemini: the implicit-cache rate, taking precedence over the batch discount; Claude: the
    cache write and read rates; each saying the tokens are decided while the job runs."""
    gemini = price_of("gemini-2.5-flash")
    claude = price_of("claude-opus-5-5@default")
    assert gemini is not None and claude is not None
    said = cache_said("google", gemini)
    assert "read $0.03" in said and "takes precedence over the batch discount" in said
    assert "decided while the job runs" in said
    said = cache_said("anthropic", claude)
    assert "write $5, read $0.2" in said and "decided while the job runs" in said
    assert "not known for this model" in cache_said("anthropic", vb.Price("claude-x", 1, 2))
