"""The count-tokens endpoints of Vertex, answered with the local model's own token count.

Routes (under `/v1/` and `/v1beta1/`), matched before the online prediction routes:

    POST projects/{p}/locations/{l}/publishers/google/models/{m}:countTokens
         (google-genai `models.count_tokens`)   -> {"totalTokens": N}
    POST projects/{p}/locations/{l}/publishers/anthropic/models/count-tokens:rawPredict
         (anthropic `AnthropicVertex().messages.count_tokens`, model in the body)
                                                -> {"input_tokens": N}

N is what a batch or online answer of the same request reports as its input tokens: the local
model counts a quarter token per character of the request's texts (system and messages), plus 3.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vertexbatch.emulator._directives import claude_texts, gemini_texts
from vertexbatch.emulator._errors import ApiError

__all__ = ["COUNT_OPS", "COUNT_ROUTES", "count_tokens", "prompt_tokens"]

_PREFIX = r"^/(?P<version>v1|v1beta1)/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/"
COUNT_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    (
        "POST",
        re.compile(_PREFIX + r"publishers/(?P<pub>google)/models/(?P<model>[^/:]+):countTokens$"),
        "countTokens",
    ),
    (
        "POST",
        re.compile(_PREFIX + r"publishers/(?P<pub>anthropic)/models/count-tokens:rawPredict$"),
        "countTokensClaude",
    ),
]
COUNT_OPS = frozenset(op for _, _, op in COUNT_ROUTES)


def prompt_tokens(texts: list[str]) -> int:
    """The local model's input tokens for a request of these texts (as its answers report)."""
    return len("\n".join(texts)) // 4 + 3


def count_tokens(
    op: str, params: Mapping[str, str], request: Any, catalogue: Any, number: str
) -> dict[str, Any]:
    """Answer a count-tokens call; ``catalogue`` checks the model as prediction does."""
    if not isinstance(request, Mapping):
        raise ApiError(400, "Invalid JSON payload received: the body must be an object.")
    if op == "countTokens":
        contents = request.get("contents")
        if not isinstance(contents, list) or not contents:
            raise ApiError(400, "Unable to count tokens because contents is empty.")
        catalogue.check(number, params["location"], "google", params["model"])
        return {"totalTokens": prompt_tokens(gemini_texts(request))}
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError(400, "model: Field required")
    if not isinstance(request.get("messages"), list):
        raise ApiError(400, "messages: Field required")
    catalogue.check(number, params["location"], "anthropic", model)
    return {"input_tokens": prompt_tokens(claude_texts(request))}
