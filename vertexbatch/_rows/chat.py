"""An open model's answer (an OpenAI chat completion) read into a ``Result`` (pure, fail closed).

Vertex's managed open models answer batch lines in the OpenAI response shape (docs/
platform-facts.md, "Open models"). The first choice decides::

    what came back                                   Result.error
    -----------------------------------------------  ------------------------------------------
    finish_reason "stop" (or "tool_calls",            None (text; tool calls as ``ToolCall``)
      "function_call") with text or a tool call
    the message's ``refusal``, or finish_reason      RefusedError (Result.refusal; no text)
      "content_filter"
    finish_reason "length"                           TruncatedError (partial text kept)
    finished, but no text and no tool call           LineError EMPTY_RESPONSE, transient
    no choices                                       LineError NO_CHOICES, transient
    no finish_reason yet                             LineError NOT_FINISHED, transient
    any other finish_reason                          LineError STOP_REASON_<value>, permanent
    an OpenAI error body ({"error": {type, code}})   LineError by its type and code
                                                     (``_rows.failures``: invalid_request_error
                                                     permanent, rate limits and server errors
                                                     transient)

Usage is OpenAI's: ``prompt_tokens`` (which include ``prompt_tokens_details.cached_tokens``,
the cache read) and ``completion_tokens`` (which include reasoning tokens). A row's status and
its wrappers are ``_rows.classify.classify_row``'s, as for every lane.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Final

from .._errors import RefusedError, TruncatedError
from .._json import load_json
from .._values import Refusal, Result, ToolCall, Usage
from .build import result_of, usage_of
from .failures import is_error_body, line_error_for, parse_error_object, safe_name

__all__ = ["CHAT_ANSWERED", "chat_usage", "classify_chat_completion", "read_usual_chat"]

CHAT_ANSWERED: Final = frozenset({"stop", "tool_calls", "function_call"})
_MAX_COUNT: Final = 2**63 - 1


def _count(value: object) -> int:
    if type(value) is int:
        return value if 0 < value <= _MAX_COUNT else 0
    if isinstance(value, float) and value.is_integer() and 0 < value <= _MAX_COUNT:
        return int(value)
    return 0


def chat_usage(usage: object) -> Usage:
    """OpenAI usage: input includes cached tokens (as Gemini's), output reasoning tokens."""
    if not isinstance(usage, Mapping):
        return Usage()
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    return usage_of(
        _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), cached, 0
    )


def _calls(message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return ()
    found = []
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        name = function.get("name")
        if not isinstance(name, str) or not name:
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):  # else kept as the model wrote it
                arguments = load_json(arguments)
        call_id = call.get("id")
        found.append(ToolCall(name, arguments, call_id if isinstance(call_id, str) else ""))
    return tuple(found)


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def _failure(
    key: str, status: str, transient: bool, usage: Usage, response: Mapping[str, Any], stop: str
) -> Result:
    error = line_error_for(key, code=0, status=status, message_kind="unusable", transient=transient)
    return Result(key=key, usage=usage, stop=stop, error=error, response=response)


def classify_chat_completion(response: Mapping[str, Any], *, key: str) -> Result:
    """Classify an OpenAI chat completion (the module's table); never raises on odd values.

    Args:
        response: the completion object (``{"choices": [...], "usage": {...}}``). Not modified.
        key: the caller's key.
    """
    if is_error_body(response) and "choices" not in response:
        code, name = parse_error_object(response)
        return Result(key=key, error=line_error_for(key, code=code, status=name), response=response)
    usage = chat_usage(response.get("usage"))
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        return _failure(key, "NO_CHOICES", True, usage, response, "")
    choice = choices[0] if isinstance(choices[0], Mapping) else {}
    message = choice.get("message")
    message = message if isinstance(message, Mapping) else {}
    finish = choice.get("finish_reason")
    finish = finish if isinstance(finish, str) else ""
    refusal = message.get("refusal")
    if (isinstance(refusal, str) and refusal) or finish == "content_filter":
        category = finish if finish == "content_filter" else "refusal"
        detail = refusal if isinstance(refusal, str) else ""
        return Result(
            key=key,
            usage=usage,
            stop=finish,
            refusal=Refusal(category=category, detail=detail),
            error=RefusedError("request refused by the provider", key=key),
            response=response,
        )
    if not finish:
        return _failure(key, "NOT_FINISHED", True, usage, response, "")
    text = _text(message)
    if finish == "length":
        error = TruncatedError("answer stopped at the token limit", key=key)
        return Result(key=key, text=text, usage=usage, stop=finish, error=error, response=response)
    if finish in CHAT_ANSWERED:
        calls = _calls(message)
        if text or calls:
            return result_of(key, text, usage, finish, None, None, response, calls)
        return _failure(key, "EMPTY_RESPONSE", True, usage, response, finish)
    status = f"STOP_REASON_{safe_name(finish) or 'UNKNOWN'}"
    return _failure(key, status, False, usage, response, finish)


def read_usual_chat(response: dict[str, Any], key: str) -> Result | None:
    """A completion of one choice that ends ``stop`` with text and no tool call or refusal;
    else ``None`` (``classify_chat_completion`` reads it)."""
    choices = response.get("choices")
    if type(choices) is not list or len(choices) != 1 or "body" in response:
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("finish_reason") != "stop":
        return None
    message = choice.get("message")
    if type(message) is not dict or message.get("tool_calls") or message.get("refusal"):
        return None
    text = message.get("content")
    if type(text) is not str or not text:
        return None
    return result_of(key, text, chat_usage(response.get("usage")), "stop", None, None, response)
