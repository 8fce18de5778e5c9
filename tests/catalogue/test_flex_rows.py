"""The catalogue's Flex PayGo rows (models.toml's ``flex``, from Google's Flex PayGo page as its
copy of 2026-08-20 lists them): exactly those rows are marked, ``fallback_tier="flex"`` takes
each of them on the ``global`` endpoint, and a run of one answers at Flex past its deadline on
the local stack, with the shipped catalogue (no test rows)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import gemini_requests, global_client, past, shard_object
from vertexbatch import InvalidRequestError
from vertexbatch._catalogue import catalogue, model_entry
from vertexbatch._providers import PROVIDERS
from vertexbatch._vertex.tiers import check_tier
from vertexbatch.emulator import LocalStack

GEMINI_TIERS = PROVIDERS["google"].tiers

# The catalogued models on the page's list ("The following preview Gemini models support Flex
# PayGo in the global endpoint only"); its image and preview-only ids are not catalogued.
LISTED = frozenset(
    {
        "gemini-3.7-flash",
        "gemini-3.6-flash",
        "gemini-3.5-flash-lite",
        "gemini-3.5-flash",
        "gemini-3.1-flash-lite",
        "gemini-3.1-pro-preview",
    }
)


def test_the_flex_rows_are_the_models_the_flex_page_lists() -> None:
    """Every flex row is a Gemini model the page lists, served on ``global``, with the page
    among its sources; no other row is flex (3.8 Flash and the 2.5 models are not listed)."""
    flex = {model.id for model in catalogue() if model.flex}
    assert flex == LISTED
    for model in catalogue():
        if model.flex:
            assert model.publisher == "google" and "global" in model.locations, model.id
            assert any(s.url.endswith("/models/flex-paygo.md") for s in model.sources), model.id
    for model in ("gemini-3.8-flash", "gemini-2.5-flash", "gemini-2.5-pro"):
        entry = model_entry(model)
        assert entry is not None and not entry.flex, model


@pytest.mark.parametrize("model", sorted(LISTED))
def test_fallback_tier_flex_takes_each_listed_model_on_global(model: str) -> None:
    assert check_tier("flex", model, "global", GEMINI_TIERS) == "flex"
    assert check_tier("flex", f"{model}@001", "global", GEMINI_TIERS) == "flex"
    with pytest.raises(InvalidRequestError, match="served only on the global endpoint"):
        check_tier("flex", model, "us", GEMINI_TIERS)


@pytest.mark.parametrize("model", ["gemini-3.8-flash", "gemini-2.5-flash"])
def test_fallback_tier_flex_refuses_a_model_the_page_does_not_list(model: str) -> None:
    with pytest.raises(InvalidRequestError, match="is not one of the models Google's Flex"):
        check_tier("flex", model, "global", GEMINI_TIERS)


def test_a_run_of_a_listed_model_answers_at_flex_past_its_deadline(
    stack: LocalStack, bucket: str
) -> None:
    """gemini-3.6-flash, served by the stack where the catalogue lists it (global, us, eu):
    its run with ``fallback_tier="flex"`` in ``global`` asks each late key online at Flex, and
    each answer says it was billed at Flex (``ON_DEMAND_FLEX``)."""
    model = "gemini-3.6-flash"
    stack.create_bucket(bucket)
    client = global_client(stack, bucket)
    stack.faults.hold(display_name="flex-listed.s0", state="PENDING")
    run = client.run_gemini("flex-listed", model, gemini_requests(3), fallback_tier="flex")
    assert run.fallback_tier == "flex"
    summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 3}
    data = shard_object(stack, bucket, "flex-listed", "online.jsonl").download_as_bytes()
    rows = [json.loads(line) for line in data.splitlines()]
    assert [row["tier"] for row in rows] == ["flex"] * 3
    assert {row["response"]["usageMetadata"]["trafficType"] for row in rows} == {"ON_DEMAND_FLEX"}
    assert {result.tier for result in run.results()} == {"flex"}
