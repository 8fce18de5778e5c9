"""The fallback's price tiers (``vertexbatch._vertex.tiers``): which a run may ask for, the
header that asks, and the tier an answer was billed at."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from vertexbatch import InvalidRequestError
from vertexbatch._catalogue import Model, Source, catalogue_of
from vertexbatch._providers import PROVIDERS
from vertexbatch._vertex.tiers import HEADER, billed_tier, check_tier, check_where, tier_headers

GEMINI_TIERS = PROVIDERS["google"].tiers
CLAUDE_TIERS = PROVIDERS["anthropic"].tiers
_SOURCE = (Source("https://docs.cloud.google.com/vertex-ai/generative-ai/docs/flex-paygo", "x"),)


def _row(model: str, publisher: str, *, flex: bool) -> Model:
    return Model(
        id=model,
        publisher=publisher,
        batch=True,
        locations=frozenset({"global", "us-central1"}),
        rates=None,
        flex=flex,
        sources=_SOURCE,
    )


@pytest.fixture
def catalogue() -> Iterator[None]:
    """Catalogue rows of a model served at Flex and one that is not (the file is data another
    change fills)."""
    rows = (
        _row("gemini-flexible", "google", flex=True),
        _row("gemini-rigid", "google", flex=False),
        _row("claude-sonnet-4-5", "anthropic", flex=False),
    )
    with catalogue_of(rows):
        yield


@pytest.mark.parametrize(
    ("tier", "model", "location", "offered"),
    [
        ("standard", "claude-sonnet-4-5@20250929", "us-east5", CLAUDE_TIERS),
        ("standard", "gemini-anything", "europe-west4", GEMINI_TIERS),
        ("flex", "gemini-flexible", "global", GEMINI_TIERS),
        ("flex", "gemini-flexible@001", "global", GEMINI_TIERS),
        ("priority", "gemini-rigid", "global", GEMINI_TIERS),
        ("priority", "gemini-not-catalogued", "us", GEMINI_TIERS),
        ("priority", "gemini-rigid", "eu", GEMINI_TIERS),
    ],
)
def test_a_tier_served_there_is_taken(
    catalogue: None, tier: str, model: str, location: str, offered: frozenset[str]
) -> None:
    assert check_tier(tier, model, location, offered) == tier


@pytest.mark.parametrize(
    ("tier", "model", "location", "offered", "said"),
    [
        ("cheap", "gemini-flexible", "global", GEMINI_TIERS, "must be one of 'standard'"),
        (None, "gemini-flexible", "global", GEMINI_TIERS, "got None"),
        ("flex", "claude-sonnet-4-5", "global", CLAUDE_TIERS, "Gemini models only"),
        ("priority", "claude-sonnet-4-5", "global", CLAUDE_TIERS, "no page offers them for Claude"),
        ("flex", "gemini-rigid", "global", GEMINI_TIERS, "is not one of the models Google's Flex"),
        (
            "flex",
            "gemini-unknown",
            "global",
            GEMINI_TIERS,
            "is not in vertexbatch's model catalogue",
        ),
        ("flex", "gemini-flexible", "us-central1", GEMINI_TIERS, "only on the global endpoint"),
        ("flex", "gemini-flexible", "us", GEMINI_TIERS, "not in location 'us'"),
        ("priority", "gemini-rigid", "us-central1", GEMINI_TIERS, "the eu, global, us endpoint(s)"),
    ],
)
def test_a_tier_not_served_is_refused_naming_the_rule(
    catalogue: None, tier: Any, model: str, location: str, offered: frozenset[str], said: str
) -> None:
    with pytest.raises(InvalidRequestError) as info:
        check_tier(tier, model, location, offered)
    assert info.value.field == "fallback_tier"
    assert said in str(info.value)
    if tier in ("flex", "priority") and "model" in said:
        assert repr(model) in str(info.value)


def test_a_step_checks_only_where_the_tier_is_served() -> None:
    check_where("standard", "asia-south1")
    check_where("flex", "global")
    with pytest.raises(InvalidRequestError, match="'flex' is served only on the global"):
        check_where("flex", "europe-west1")


def test_each_tier_s_headers() -> None:
    assert tier_headers("standard") == {}
    assert tier_headers("priority") == {HEADER: "priority"}
    assert tier_headers("flex") == {HEADER: "flex", "X-Server-Timeout": "1800"}
    assert HEADER == "X-Vertex-AI-LLM-Shared-Request-Type"


@pytest.mark.parametrize(
    ("response", "requested", "billed"),
    [
        ({"usageMetadata": {"trafficType": "ON_DEMAND_FLEX"}}, "flex", "flex"),
        ({"usageMetadata": {"trafficType": "ON_DEMAND_PRIORITY"}}, "priority", "priority"),
        # Priority without spare capacity is served, and billed, at Standard.
        ({"usageMetadata": {"trafficType": "ON_DEMAND"}}, "priority", "standard"),
        ({"usageMetadata": {"trafficType": "PROVISIONED_THROUGHPUT"}}, "flex", "provisioned"),
        ({"usage_metadata": {"traffic_type": "ON_DEMAND_FLEX"}}, "standard", "flex"),
        ({"usageMetadata": {"trafficType": "SOMETHING_NEW"}}, "flex", "something_new"),
        ({"usageMetadata": {"trafficType": "TRAFFIC_TYPE_UNSPECIFIED"}}, "flex", "flex"),
        ({"usageMetadata": {"promptTokenCount": 3}}, "priority", "priority"),
        ({"content": [], "usage": {"input_tokens": 3}}, "standard", "standard"),  # Claude's
        (None, "flex", "flex"),  # a failed call
        ({"usageMetadata": ["ON_DEMAND"]}, "flex", "flex"),
    ],
)
def test_the_billed_tier_is_the_answers_traffic_type(
    response: Any, requested: str, billed: str
) -> None:
    assert billed_tier(response, requested) == billed
