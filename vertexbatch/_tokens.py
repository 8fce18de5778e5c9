"""Exact input tokens through the providers' count-tokens APIs on Vertex, for ``plan_*``.

Claude: ``AnthropicVertex().messages.count_tokens`` (Vertex's
``publishers/anthropic/models/count-tokens:rawPredict``). Gemini: google-genai's
``models.count_tokens`` (``publishers/google/models/MODEL:countTokens``). The local stack answers
both. Calls run a few at a time, each retried under the client's ``RetryPolicy`` when it fails
transiently (429, 5xx, a dropped connection); a call that still fails raises (a plan with a
wrong count is worse than none): a 400 or 404 as ``InvalidRequestError(field="model")`` naming
the model and location, anything else as ``VertexBatchError`` with its status and type. Neither
quotes the provider's message, which may echo the request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ._cloud import Cloud
from ._errors import InvalidRequestError, VertexBatchError
from ._models import Provider
from ._online import claude_api, gemini_api
from ._sdk_logs import quiet_requests

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

        def counted(body: Mapping[str, Any]) -> int:
            try:
                return cloud.retry.call(f"count tokens with {model}", lambda: one(body))
            except Exception as exc:
                raise _count_error(exc, provider, model, cloud.location) from None

        try:
            with ThreadPoolExecutor(max_workers=_CONCURRENCY) as pool:
                return list(pool.map(counted, bodies))
        finally:
            api.close()

    return count


def _status(exc: BaseException) -> int | None:
    """The HTTP status of a failed SDK call (anthropic ``status_code``, google-genai ``code``)."""
    for attribute in ("status_code", "code"):
        value = getattr(exc, attribute, None)
        if type(value) is int:
            return value
    return None


def _count_error(exc: Exception, provider: Provider, model: str, location: str) -> VertexBatchError:
    """The error of a count that failed for good: what was refused, never the message."""
    status = _status(exc)
    what = f"{status} {type(exc).__name__}" if status else type(exc).__name__
    if status in (400, 404):
        return InvalidRequestError(
            f"counting tokens with {provider} model {model!r} in location {location!r} was "
            f"refused: {what} (is the model offered in this location, and named by its Vertex "
            "id?); plan without count_tokens to estimate instead",
            field="model",
        )
    return VertexBatchError(
        f"counting tokens with {provider} model {model!r} in location {location!r} failed: "
        f"{what}, after the client's retries; plan without count_tokens to estimate instead"
    )


def _claude(api: Any, model: str) -> Callable[[Mapping[str, Any]], int]:
    def one(body: Mapping[str, Any]) -> int:
        params = {k: v for k, v in body.items() if k in CLAUDE_COUNTED}
        with quiet_requests():
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
