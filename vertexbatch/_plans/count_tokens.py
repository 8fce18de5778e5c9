"""Exact input tokens through the providers' count-tokens APIs on Vertex, for ``plan_*``.

Claude: ``AnthropicVertex.messages.count_tokens`` (Vertex's
``publishers/anthropic/models/count-tokens:rawPredict``). Gemini: the staged body's
``contents``, ``systemInstruction``, ``tools`` and ``generationConfig``, as staged, POSTed to
``publishers/google/models/MODEL:countTokens`` through an ``AuthorizedSession``. Both clients are
the ``Client``'s own (``OnlineClients``: the caller's, or built once and closed with the client),
the ones the online fallback uses. The local stack answers both. Each call is the provider's
row's ``counter`` (``_providers``; written in ``_vertex.online``, beside the online calls); this
module runs them.

Calls run a few at a time, each retried under the client's ``RetryPolicy`` when it fails
transiently (429, 5xx, a dropped connection); a call that still fails raises (a plan with a
wrong count is worse than none): a 400 or 404 as ``InvalidRequestError(field="model")`` naming
the model and location, anything else as ``VertexBatchError`` with its status and type. Neither
quotes the provider's message, which may echo the request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._cloud import Cloud
from .._errors import InvalidRequestError, VertexBatchError
from .._providers import PROVIDERS
from .._values import Provider
from .._vertex.online import status_code

__all__ = ["token_counter"]

_CONCURRENCY = 8


def token_counter(
    cloud: Cloud, provider: Provider, model: str
) -> Callable[[list[Mapping[str, Any]]], list[int]]:
    """A function from staged request bodies to their input tokens, as the provider counts."""

    def count(bodies: list[Mapping[str, Any]]) -> list[int]:
        one = PROVIDERS[provider].counter(cloud.online, model)

        def counted(body: Mapping[str, Any]) -> int:
            try:
                return cloud.retry.call(f"count tokens with {model}", lambda: one(body))
            except Exception as exc:
                raise _count_error(exc, provider, model, cloud.location) from None

        with ThreadPoolExecutor(max_workers=_CONCURRENCY) as pool:
            return list(pool.map(counted, bodies))

    return count


def _count_error(exc: Exception, provider: Provider, model: str, location: str) -> VertexBatchError:
    """The error of a count that failed for good: what was refused, never the message."""
    status = status_code(exc)  # 0: none (a transport failure)
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
