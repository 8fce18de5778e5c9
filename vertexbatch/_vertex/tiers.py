"""The price tiers of the online fallback's calls: which a run may ask for, the header that asks,
and the tier Vertex says it billed (pure).

::

    standard   Standard PayGo: no header, as every online call before tiers
    flex       Flex PayGo: X-Vertex-AI-LLM-Shared-Request-Type: flex; 50% off Standard; the
               Gemini models its page lists (the catalogue's ``flex``), on the ``global``
               endpoint only; a request may take up to 30 minutes
    priority   Priority PayGo: X-Vertex-AI-LLM-Shared-Request-Type: priority; a higher rate than
               Standard; Gemini models, on the ``global``, ``us`` and ``eu`` endpoints (some
               models on fewer); spare priority capacity lacking, a request is served (and
               billed) at Standard

Which tier served an answer is the response's ``usageMetadata.trafficType`` (``TRAFFIC``):
Priority may be downgraded to Standard, and a project with Provisioned Throughput spends it
first (``PROVISIONED_THROUGHPUT``). Claude's answers carry no traffic type: Google documents
Flex and Priority for Gemini models only, so a Claude run's fallback is always Standard.

Sources (read 2026-12-07):

- https://docs.cloud.google.com/vertex-ai/generative-ai/docs/flex-paygo (50% off Standard;
  Gemini models, global endpoint only; the header; default timeout 20 minutes, at most 30)
- https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/flex-paygo.md.txt
  (Flex in select Gemini 3.8 Flash and earlier models only)
- https://docs.cloud.google.com/vertex-ai/generative-ai/docs/priority-paygo?no_redirect=true
  (a higher rate than Standard; global, us and eu; downgraded to Standard: trafficType
  ON_DEMAND; the header)
- https://docs.cloud.google.com/vertex-ai/generative-ai/docs/deploy/consumption-options
- google-genai 2.34.0 ``types.TrafficType`` (ON_DEMAND, ON_DEMAND_PRIORITY, ON_DEMAND_FLEX,
  ON_DEMAND_OFFPEAK, PROVISIONED_THROUGHPUT) and ``_api_client.populate_server_timeout_header``
  (the ``X-Server-Timeout`` header a timeout is sent as)
- https://github.com/googleapis/python-genai/issues/2847 (measured: the header gives
  ON_DEMAND_FLEX / ON_DEMAND_PRIORITY, no header ON_DEMAND)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

from .._catalogue import model_entry
from .._errors import InvalidRequestError

__all__ = [
    "FLEX_TIMEOUT",
    "HEADER",
    "TIERS",
    "TRAFFIC",
    "Tier",
    "billed_tier",
    "check_tier",
    "check_where",
    "tier_headers",
]

Tier = Literal["standard", "flex", "priority"]
TIERS: Final[tuple[Tier, ...]] = ("standard", "flex", "priority")
HEADER: Final = "X-Vertex-AI-LLM-Shared-Request-Type"
# The longest a Flex request may take (its page: 30 minutes), as the client waits and asks.
FLEX_TIMEOUT: Final = 1800.0
# Where each tier is served; None: wherever the model is.
_WHERE: Final[Mapping[str, frozenset[str] | None]] = MappingProxyType(
    {"standard": None, "flex": frozenset({"global"}), "priority": frozenset({"global", "us", "eu"})}
)
TRAFFIC: Final[Mapping[str, str]] = MappingProxyType(
    {
        "ON_DEMAND": "standard",
        "ON_DEMAND_FLEX": "flex",
        "ON_DEMAND_PRIORITY": "priority",
        "ON_DEMAND_OFFPEAK": "offpeak",
        "PROVISIONED_THROUGHPUT": "provisioned",
    }
)
"""``usageMetadata.trafficType`` -> the tier ``Result.tier`` names (another value: lowercased)."""


def check_tier(tier: object, model: str, location: str, offered: frozenset[str]) -> Tier:
    """``tier`` if a run of ``model`` may answer past its deadline at that tier from
    ``location``; ``offered``: the tiers the model's provider serves online (the provider
    table's ``tiers``).

    Raises:
        InvalidRequestError: not a tier; a tier the provider is not documented to serve; Flex
            for a model the catalogue does not mark ``flex`` (or does not hold: whether Vertex
            serves it at Flex is unknown); a location the tier is not served in
            (``field == "fallback_tier"``).
    """
    if tier not in TIERS:
        raise InvalidRequestError(
            f"fallback_tier must be one of {', '.join(map(repr, TIERS))}, got {tier!r}",
            field="fallback_tier",
        )
    if tier not in offered:
        raise InvalidRequestError(
            f"fallback_tier {tier!r} is not served for model {model!r}: Google documents Flex "
            "and Priority PayGo for Gemini models only (no page offers them for Claude on "
            "Vertex); use 'standard'",
            field="fallback_tier",
        )
    if tier == "flex":
        entry = model_entry(model)
        if entry is None or not entry.flex:
            why = (
                "is not in vertexbatch's model catalogue, so whether Vertex serves it at Flex "
                "PayGo is unknown"
                if entry is None
                else "is not one of the models Google's Flex PayGo page lists (the catalogue's "
                "flex = false)"
            )
            raise InvalidRequestError(
                f"fallback_tier 'flex': model {model!r} {why}; Flex serves only the Gemini "
                "models its page lists: use 'standard' or 'priority'",
                field="fallback_tier",
            )
    check_where(tier, location)
    return tier


def check_where(tier: str, location: str) -> None:
    """Raise unless ``tier`` is served in ``location`` (a run's step checks the location of the
    client that advances it: the tier is the run's, the client may be another).

    Raises:
        InvalidRequestError: the tier is not served there (``field == "fallback_tier"``).
    """
    where = _WHERE.get(tier)
    if where is not None and location not in where:
        raise InvalidRequestError(
            f"fallback_tier {tier!r} is served only on the {', '.join(sorted(where))} "
            f"endpoint(s), not in location {location!r}: use a client of location 'global' "
            "(or fallback_tier='standard')",
            field="fallback_tier",
        )


def tier_headers(tier: str) -> dict[str, str]:
    """The request headers of an online call at ``tier`` (none for Standard)."""
    if tier == "standard":
        return {}
    headers = {HEADER: tier}
    if tier == "flex":  # Flex's own default is 20 minutes: ask for its most
        headers["X-Server-Timeout"] = str(int(FLEX_TIMEOUT))
    return headers


def billed_tier(response: object, requested: str) -> str:
    """The tier an online answer was billed at: its ``usageMetadata.trafficType``
    (``TRAFFIC``), else ``requested`` (an answer that does not say: Claude's, a failed call)."""
    meta: Any = None
    if isinstance(response, Mapping):
        meta = response.get("usageMetadata", response.get("usage_metadata"))
    value = meta.get("trafficType", meta.get("traffic_type")) if isinstance(meta, Mapping) else None
    if not isinstance(value, str) or not value or value == "TRAFFIC_TYPE_UNSPECIFIED":
        return requested
    return TRAFFIC.get(value, value.lower())
