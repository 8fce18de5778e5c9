"""The catalogue's seam and its job columns: ``catalogue_from`` reads a file of models.toml's
form, ``catalogue_of`` puts rows in place for a block, and every row's limits and schema form
are well formed (pure)."""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import replace
from pathlib import Path

import pytest

from vertexbatch._catalogue import (
    CATALOGUE_FILE,
    Model,
    Rates,
    Source,
    catalogue,
    catalogue_from,
    catalogue_of,
    closest,
    model_entry,
)
from vertexbatch._catalogue.entries import _model
from vertexbatch._plans.prices import PRICES, Price, price_of
from vertexbatch._schemas.check import schema_of
from vertexbatch._schemas.forms import claude_form, gemini_form

SOURCE = Source("https://example.com/models", "2026-12-07")
ROW = Model("gemini-test-seam", "google", True, frozenset({"global"}), None, True, (SOURCE,))
# The form each publisher's schema= is written in (vertexbatch/_schemas/forms.py).
FORMS = {"anthropic": "tool", "google": "responseSchema"}


def test_catalogue_from_reads_a_file_and_an_absent_column_is_unknown(tmp_path: Path) -> None:
    """A row written before the job columns (as rows other changes append) still loads: each
    missing column is unknown, never a guessed value."""
    path = tmp_path / "mine.toml"
    path.write_text(
        '[[model]]\nid = "gemini-test-file"\npublisher = "google"\nbatch = true\n'
        'sources = [{ url = "https://example.com/x", read = "2026-12-07" }]\n'
    )
    (row,) = catalogue_from(path)
    assert row.id == "gemini-test-file" and row.batch and not row.flex
    assert (row.job_rows, row.job_bytes, row.concurrent_jobs) == (None, None, None)
    assert row.structured_output == ""
    assert catalogue_from(CATALOGUE_FILE) == catalogue()


def test_a_bad_structured_output_is_refused_naming_the_row() -> None:
    with pytest.raises(ValueError, match=r"'gemini-x': structured_output 'json' is not one of"):
        _model({"id": "gemini-x", "publisher": "google", "structured_output": "json"})


def test_catalogue_of_holds_its_rows_for_the_block_only() -> None:
    assert model_entry("gemini-test-seam") is None
    with catalogue_of([ROW]) as rows:
        assert rows == (ROW,) and catalogue() == (ROW,)
        assert model_entry("gemini-test-seam@001") is ROW
        assert model_entry("gemini-2.5-flash") is None  # models.toml's rows are not in it
        assert closest("gemini-test-seem") == "gemini-test-seam"
        with catalogue_of(()):
            assert catalogue() == ()
        assert catalogue() == (ROW,)
    assert model_entry("gemini-test-seam") is None
    assert model_entry("gemini-2.5-flash") is not None


def test_catalogue_of_reaches_an_asyncio_task() -> None:
    async def found() -> Model | None:
        return await asyncio.create_task(asyncio.to_thread(model_entry, "gemini-test-seam"))

    with catalogue_of([ROW]):
        assert asyncio.run(found()) is ROW


@pytest.mark.parametrize("model", catalogue(), ids=lambda m: m.id)
def test_every_row_s_job_limits_and_schema_form_are_well_formed(model: Model) -> None:
    """Limits positive where given; the schema form the one vertexbatch writes for the
    model's publisher (or unknown)."""
    for value in (model.job_rows, model.job_bytes, model.concurrent_jobs):
        assert value is None or (type(value) is int and value > 0), model.id
    assert model.structured_output in ("", FORMS.get(model.publisher, "")), model.id


def test_the_schema_forms_are_what_the_client_writes() -> None:
    """``tool`` and ``responseSchema`` name what ``_schemas.forms`` puts in a request."""
    schema = schema_of({"type": "object", "properties": {"a": {"type": "string"}}})
    assert schema is not None
    claude = claude_form({"messages": [], "max_tokens": 8}, schema, "k")
    assert claude["tool_choice"]["type"] == FORMS["anthropic"]
    gemini = gemini_form({"contents": []}, schema, "k")
    assert FORMS["google"] in gemini["generationConfig"]


def test_catalogue_of_rows_are_what_prices_read() -> None:
    """A row's rates price its model within the block (a plan, a spend, a run's status read
    ``price_of``); outside it, models.toml's rows do, as ``PRICES`` holds them."""
    until = datetime.date(2026, 12, 31)
    priced = replace(ROW, rates=Rates(1.5, 7.5, cache_read=0.15, until=until))
    assert price_of("gemini-test-seam") is None
    with catalogue_of([priced]):
        assert price_of("gemini-test-seam@001") == Price(
            "gemini-test-seam", 1.5, 7.5, cache_read=0.15, until=until
        )
        assert price_of("claude-opus-5-5@default") is None  # not among the rows in place
    shipped = {price.match: price for price in PRICES}
    assert all(price_of(model.id) == shipped.get(model.id) for model in catalogue())
