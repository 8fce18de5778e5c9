"""Vertex's online price tiers as the local stack serves them: the tier a ``generateContent``
call asks for by its ``X-Vertex-AI-LLM-Shared-Request-Type`` header, where each is served, and
the ``usageMetadata.trafficType`` its answer reports.

Vertex's documentation (read 2026-12-07): Flex PayGo is served on the ``global`` endpoint only
(https://docs.cloud.google.com/vertex-ai/generative-ai/docs/flex-paygo), Priority PayGo on the
``global``, ``us`` and ``eu`` endpoints
(https://docs.cloud.google.com/vertex-ai/generative-ai/docs/priority-paygo?no_redirect=true);
an answer reports ``ON_DEMAND_FLEX`` / ``ON_DEMAND_PRIORITY`` for them and ``ON_DEMAND``
without the header (google-genai's ``TrafficType``; measured in
https://github.com/googleapis/python-genai/issues/2847). Vertex's own error for a tier asked
off its endpoints is not documented: the stack answers 400 ``INVALID_ARGUMENT`` saying so.
The stack serves every tier from the same local model (no throttling, no downgrade of
Priority to Standard) and takes no header on Claude's ``rawPredict``: Google documents the
tiers for Gemini models only.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from vertexbatch.emulator._errors import ApiError

__all__ = ["HEADER", "traffic_type"]

HEADER: Final = "X-Vertex-AI-LLM-Shared-Request-Type"
# The header's value -> (the endpoints it is served on, the traffic type an answer reports).
_TIERS: Final = MappingProxyType(
    {
        "flex": (frozenset({"global"}), "ON_DEMAND_FLEX"),
        "priority": (frozenset({"global", "us", "eu"}), "ON_DEMAND_PRIORITY"),
    }
)


def traffic_type(asked: str | None, location: str) -> str:
    """The ``trafficType`` of an online Gemini answer in ``location`` asked at tier ``asked``
    (the header's value; ``None``: no header, Standard PayGo).

    Raises:
        ApiError: 400, a value Google documents no tier for, or a tier not served in
            ``location``.
    """
    if asked is None:
        return "ON_DEMAND"
    tier = _TIERS.get(asked.strip().lower())
    if tier is None:
        raise ApiError(
            400,
            f"{HEADER} {asked!r} is not a tier Google documents (flex, priority): the local "
            "stack serves no other",
            "INVALID_ARGUMENT",
        )
    where, traffic = tier
    if location not in where:
        raise ApiError(
            400,
            f"{asked.strip().lower().title()} PayGo is served only on the "
            f"{', '.join(sorted(where))} endpoint(s), not in location {location!r} (the local "
            "stack's words: Vertex's own error for this is not documented)",
            "INVALID_ARGUMENT",
        )
    return traffic
