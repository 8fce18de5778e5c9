"""An open model's request (``ChatRequest``) checked before staging: an OpenAI chat-completions
body, as Vertex's batch prediction of managed open models takes it (pure).

Google's page for batch prediction of open models (docs/platform-facts.md, "Open models") gives
each input line in the OpenAI batch format, ``{"custom_id", "method": "POST", "url":
"/v1/chat/completions", "body": {...}}``, and says Vertex does not use ``custom_id``, ``method``,
``url`` or the body's ``model``: the job names the model. So a body that sets ``model`` is
refused (one job runs one model, as ``ClaudeRequest`` refuses it), as is ``stream`` (batch
answers whole) and ``n`` other than 1 (a result reads one choice). ``messages`` must be a
non-empty list of messages, each an object with a string ``role``; ``max_tokens`` and
``max_completion_tokens``, where given, whole numbers from 1.

``check_chat_fields`` refuses a top-level field the OpenAI chat-completions API does not
document (``CHAT_FIELDS``), by position with the closest documented name, never the caller's
own name; ``check_fields=False`` stages it all the same (a parameter a model takes beyond
OpenAI's). Every error names the request's key and the rule, never request content.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, Final

from .._errors import InvalidRequestError
from .._values import ChatRequest

__all__ = ["CHAT_FIELDS", "CHAT_URL", "MAX_TOKENS", "chat_body", "check_chat_fields"]

CHAT_URL: Final = "/v1/chat/completions"
# As ``_requests.lines.MAX_TOKENS``: far past what any model writes in one answer.
MAX_TOKENS: Final = 2**31 - 1

# The request fields of OpenAI's chat-completions API (its API reference, "Create chat
# completion", read 2026-12-07), the ones a batch line may carry.
CHAT_FIELDS: Final = frozenset(
    {
        "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
        "max_completion_tokens", "max_tokens", "messages", "metadata", "modalities", "model",
        "n", "parallel_tool_calls", "prediction", "presence_penalty", "reasoning_effort",
        "response_format", "seed", "service_tier", "stop", "store", "stream",
        "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p",
        "user", "web_search_options",
    }
)  # fmt: skip


def _bad(key: str, rule: str) -> InvalidRequestError:
    return InvalidRequestError(f"body of request {key!r} {rule}", field="body")


def _tokens(key: str, body: Mapping[str, Any], name: str) -> None:
    value = body.get(name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS:
        what = type(value).__name__
        if type(value) is int:
            what = repr(value) if value < 1 else f"a number past {MAX_TOKENS:,}"
        raise _bad(key, f"gives {name!r} as {what}: a whole number from 1 to {MAX_TOKENS:,}")


def chat_body(request: ChatRequest) -> dict[str, Any]:
    """The body to stage of ``request`` (a new dict), checked.

    Raises:
        InvalidRequestError (``field="body"``): not a mapping; ``model`` or ``stream`` set;
            ``n`` other than 1; ``messages`` missing, empty or not messages; a token limit
            that is not a whole number from 1.
    """
    key, given = request.key, request.body
    if not isinstance(given, Mapping):
        raise InvalidRequestError(
            f"body of request {key!r} must be a mapping of OpenAI chat-completions parameters, "
            f"got {type(given).__name__}",
            field="body",
        )
    body = dict(given)
    if "model" in body:
        raise _bad(
            key,
            "sets 'model': the job's model is given to submit_chat or run_chat (Vertex does "
            "not read a line's model), and one job runs one model; drop it from the body",
        )
    if body.get("stream", False) is not False:
        raise _bad(key, "sets 'stream': batch prediction answers each request whole; drop it")
    if body.get("n", 1) != 1 or isinstance(body.get("n"), bool):
        raise _bad(key, "sets 'n' other than 1: a result reads one choice; send n requests")
    messages = body.get("messages")
    if not isinstance(messages, list | tuple) or not messages:
        what = "an empty list" if isinstance(messages, list | tuple) else type(messages).__name__
        if messages is None:
            what = "nothing"
        raise _bad(key, f"gives 'messages' as {what}: a list of at least one message is needed")
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise _bad(
                key, f"gives messages[{position}] without a string 'role': each message is an "
                "object with a role ('system', 'user', 'assistant', 'tool')",
            )  # fmt: skip
    _tokens(key, body, "max_tokens")
    _tokens(key, body, "max_completion_tokens")
    return body


def check_chat_fields(request: ChatRequest) -> None:
    """Refuse a body with a top-level field OpenAI's chat-completions API does not document.

    Raises:
        InvalidRequestError (``field="body"``): naming the field by position and the closest
            documented name.
    """
    body = request.body
    if not isinstance(body, Mapping):
        return  # chat_body refuses it
    names = sorted(CHAT_FIELDS)
    for position, name in enumerate(body, start=1):
        if name in CHAT_FIELDS:
            continue
        near = difflib.get_close_matches(str(name), names, n=1, cutoff=0.75)
        meant = f" (did you mean {near[0]!r}?)" if near else ""
        raise _bad(
            request.key,
            f"sets a field OpenAI's chat-completions API does not document: body.<field "
            f"{position}>{meant}; fix its name, or, for a parameter the model takes beyond "
            "OpenAI's, submit with check_fields=False",
        )
