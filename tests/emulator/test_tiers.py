"""The stack's online Gemini calls honour the price tier header as Vertex does: through
google-genai's own client, as Google's Flex and Priority PayGo pages show it."""

from __future__ import annotations

import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from google.oauth2.credentials import Credentials

from vertexbatch.emulator import LocalStack

MODEL = "gemini-2.5-flash"
HEADER = "X-Vertex-AI-LLM-Shared-Request-Type"


def _client(stack: LocalStack, location: str, tier: str | None) -> genai.Client:
    """A genai client of the stack at ``location``, asking for ``tier`` as the pages do."""
    headers = {} if tier is None else {HEADER: tier}
    return genai.Client(
        vertexai=True,
        project=stack.project,
        location=location,
        credentials=Credentials(token="x"),  # type: ignore[no-untyped-call]
        http_options=types.HttpOptions(
            base_url=stack.vertex_endpoint, api_version="v1", headers=headers
        ),
    )


@pytest.mark.parametrize(
    ("location", "tier", "traffic"),
    [
        ("global", None, types.TrafficType.ON_DEMAND),
        ("us-central1", None, types.TrafficType.ON_DEMAND),
        ("global", "flex", types.TrafficType.ON_DEMAND_FLEX),
        ("global", "priority", types.TrafficType.ON_DEMAND_PRIORITY),
        ("us", "priority", types.TrafficType.ON_DEMAND_PRIORITY),
        ("eu", "priority", types.TrafficType.ON_DEMAND_PRIORITY),
    ],
)
def test_the_answer_reports_the_tier_that_served_it(
    stack: LocalStack, location: str, tier: str | None, traffic: types.TrafficType
) -> None:
    client = _client(stack, location, tier)  # kept: a genai client dropped closes its pool
    response = client.models.generate_content(model=MODEL, contents="Say hello")
    assert response.text
    assert response.usage_metadata is not None
    assert response.usage_metadata.traffic_type == traffic


@pytest.mark.parametrize(
    ("location", "tier", "said"),
    [
        ("us-central1", "flex", "Flex PayGo is served only on the global endpoint"),
        ("us", "flex", "not in location 'us'"),
        ("europe-west4", "priority", "Priority PayGo is served only on the eu, global, us"),
        ("global", "cheapest", "is not a tier Google documents"),
    ],
)
def test_a_tier_off_its_endpoints_is_refused(
    stack: LocalStack, location: str, tier: str, said: str
) -> None:
    client = _client(stack, location, tier)
    with pytest.raises(genai_errors.ClientError) as info:
        client.models.generate_content(model=MODEL, contents="Say hi")
    assert info.value.code == 400 and info.value.status == "INVALID_ARGUMENT"
    assert said in str(info.value.message)
