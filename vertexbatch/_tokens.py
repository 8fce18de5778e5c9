"""Exact input tokens through the providers' count-tokens APIs on Vertex, for ``plan_*``.

Claude: ``AnthropicVertex().messages.count_tokens`` (Vertex's
``publishers/anthropic/models/count-tokens:rawPredict``). Gemini: google-genai's
``models.count_tokens`` (``publishers/google/models/MODEL:countTokens``). The local stack answers
both. Calls run a few at a time; a failing call raises (a plan with a wrong count is worse than
none).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ._cloud import Cloud
from ._models import Provider
from ._online import claude_api, gemini_api

__all__ = ["CLAUDE_COUNTED", "token_counter"]

# The Messages parameters count_tokens takes; the others (max_tokens, temperature, ...) do not
# change the input.
CLAUDE_COUNTED = ("messages", "system", "tools", "tool_choice", "thinking")
_CONCURRENCY = 8


def token_counter(
    cloud: Cloud, provider: Provider, model: str
) -> Callable[[list[Mapping[str, Any]]], list[int]]:
    """A function from staged request bodies to their input tokens, as the provider counts."""

    def count(bodies: list[Mapping[str, Any]]) -> list[int]:
        api = claude_api(cloud) if provider == "anthropic" else gemini_api(cloud)
        one = _claude(api, model) if provider == "anthropic" else _gemini(api, model)
        try:
            with ThreadPoolExecutor(max_workers=_CONCURRENCY) as pool:
                return list(pool.map(one, bodies))
        finally:
            api.close()

    return count


def _claude(api: Any, model: str) -> Callable[[Mapping[str, Any]], int]:
    def one(body: Mapping[str, Any]) -> int:
        params = {k: v for k, v in body.items() if k in CLAUDE_COUNTED}
        return int(api.messages.count_tokens(model=model, **params).input_tokens)

    return one


def _gemini(api: Any, model: str) -> Callable[[Mapping[str, Any]], int]:
    from google.genai import types

    def one(body: Mapping[str, Any]) -> int:
        config = types.CountTokensConfig(
            system_instruction=body.get("systemInstruction"),
            tools=body.get("tools"),
            generation_config=body.get("generationConfig"),
        )
        response = api.models.count_tokens(
            model=model,
            contents=[types.Content.model_validate(c) for c in body["contents"]],
            config=config,
        )
        return int(response.total_tokens or 0)

    return one
