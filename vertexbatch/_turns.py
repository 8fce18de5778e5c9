"""The next turn of a conversation, built from an answer: each provider's own message shapes (pure).

An agent's tool loop appends the model's answer to the conversation as the provider's own
request message, then the results of its tool calls, and sends the whole again. Both services
refuse or degrade a follow-up rebuilt from the answer's text and calls alone:

- Claude, with extended thinking and tool use: the ``thinking`` / ``redacted_thinking`` blocks
  of the turn that called a tool go back, unmodified and with their ``signature``, before the
  ``tool_result`` (a ``tool_use`` block has no signature of its own).
- Gemini 3: a ``functionCall`` part goes back with the ``thoughtSignature`` it came with, on
  the same part; a missing one in the current turn is a 400 ("Function call is missing a
  thought_signature in functionCall parts").

So a turn here is a copy of every block (Claude) or every part of the first candidate (Gemini),
in order, nothing dropped or rebuilt (docs/agents.md and docs/platform-facts.md give the rules
with their sources). ``TURNS`` holds each provider's shapes, one row per provider: the
``turns`` column of ``_providers.PROVIDERS``, which sits above ``_values`` where
``Result.assistant_turn`` reads it (tests/test_providers.py holds the two equal). A ``Result``
does not carry its provider, so the row is found by the response's shape (``owns``): a Claude
Messages response has ``content``, a Gemini response ``candidates``.

Every function is pure: inputs are never modified, and what they return shares nothing with them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from ._errors import InvalidRequestError

__all__ = ["TURNS", "Call", "Turns", "assistant_turn", "tool_results"]

Call = tuple[str, str, Any]
"""One tool call answered: (its name, its id, the tool's output)."""


def _get(mapping: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = mapping.get(camel)
    return mapping.get(snake) if value is None else value


def claude_owns(response: Mapping[str, Any]) -> bool:
    """Whether ``response`` is a Claude Messages response (its ``content`` holds the turn)."""
    return "content" in response and "candidates" not in response


def gemini_owns(response: Mapping[str, Any]) -> bool:
    """Whether ``response`` is a Gemini ``GenerateContentResponse`` (``candidates``)."""
    return "candidates" in response


def claude_turn(response: Mapping[str, Any]) -> dict[str, Any]:
    """The ``assistant`` message of a Messages response: every content block, copied."""
    content = response.get("content")
    blocks = copy.deepcopy(content) if isinstance(content, str | list) else []
    return {"role": "assistant", "content": blocks}


def gemini_turn(response: Mapping[str, Any]) -> dict[str, Any]:
    """The ``model`` content of a response's first candidate: every part, copied."""
    candidates = response.get("candidates")
    candidate = candidates[0] if isinstance(candidates, list) and candidates else {}
    content = candidate.get("content") if isinstance(candidate, Mapping) else None
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return {"role": "model", "parts": copy.deepcopy(parts) if isinstance(parts, list) else []}


def claude_tool_results(calls: Sequence[Call]) -> dict[str, Any]:
    """The ``user`` message of one ``tool_result`` block per call, in order: an output that
    is a string goes as it is, anything else as its JSON text."""
    blocks = [
        {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": output if isinstance(output, str) else json.dumps(output, allow_nan=False),
        }
        for _, call_id, output in calls
    ]
    return {"role": "user", "content": blocks}


def gemini_tool_results(calls: Sequence[Call]) -> dict[str, Any]:
    """The ``user`` content of one ``functionResponse`` part per call, in order: an output
    that is a JSON object is the ``response``, anything else goes as ``{"output": value}``
    ("Use "output" key to specify function output": Vertex's ``FunctionResponse`` reference,
    https://docs.cloud.google.com/python/docs/reference/aiplatform/latest/google.cloud.aiplatform_v1.types.FunctionResponse,
    read 2026-12-07); the call's ``id`` is kept when it had one."""
    parts = []
    for name, call_id, output in calls:
        value = copy.deepcopy(output) if isinstance(output, Mapping) else {"output": output}
        answer: dict[str, Any] = {"name": name, "response": value}
        if call_id:
            answer["id"] = call_id
        parts.append({"functionResponse": answer})
    return {"role": "user", "parts": parts}


def chat_owns(response: Mapping[str, Any]) -> bool:
    """Whether ``response`` is an OpenAI chat completion (an open model's: ``choices``)."""
    return "choices" in response


def chat_turn(response: Mapping[str, Any]) -> dict[str, Any]:
    """The ``assistant`` message of a completion's first choice: content and tool calls, copied."""
    choices = response.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else {}
    message = choice.get("message") if isinstance(choice, Mapping) else None
    message = message if isinstance(message, Mapping) else {}
    turn: dict[str, Any] = {"role": "assistant", "content": copy.deepcopy(message.get("content"))}
    if message.get("tool_calls"):
        turn["tool_calls"] = copy.deepcopy(message["tool_calls"])
    return turn


def chat_tool_results(calls: Sequence[Call]) -> dict[str, Any]:
    """Refused: OpenAI answers each tool call with a message of its own (``role: "tool"``), more
    than the one message this builds; write them in the next request's ``messages``."""
    raise InvalidRequestError(
        "tool_results is not available for open-model (chat) results: OpenAI's format answers "
        'each call with its own {"role": "tool", "tool_call_id": ..., "content": ...} message; '
        "add one per call to the next request's messages",
        field="calls",
    )


@dataclass(frozen=True, slots=True)
class Turns:
    """One provider's message shapes for the next turn of a conversation."""

    owns: Callable[[Mapping[str, Any]], bool]  # whether a response is this provider's
    turn: Callable[[Mapping[str, Any]], dict[str, Any]]  # response -> the assistant's message
    tool_results: Callable[[Sequence[Call]], dict[str, Any]]  # calls -> the user's message


def _no_response(response: Mapping[str, Any]) -> bool:
    """An embedding is no turn of a conversation: no response is the embeddings lane's."""
    return False


def _no_turn(value: Any) -> dict[str, Any]:
    raise InvalidRequestError(
        "an embedding is no turn of a conversation: the embeddings lane has no next turn",
        field="result",
    )


TURNS: Final[Mapping[str, Turns]] = MappingProxyType(
    {
        "anthropic": Turns(claude_owns, claude_turn, claude_tool_results),
        "google": Turns(gemini_owns, gemini_turn, gemini_tool_results),
        "embeddings": Turns(_no_response, _no_turn, _no_turn),
        "openmaas": Turns(chat_owns, chat_turn, chat_tool_results),
    }
)
"""Each provider's shapes, by its publisher name, in the provider table's order."""


def _turns_of(key: str, outcome: str, response: Mapping[str, Any] | None) -> Turns:
    """The shapes of the provider that wrote ``response``, for a result that is an answer."""
    if outcome != "ok" or response is None:
        raise InvalidRequestError(
            f"result {key!r} has no turn to continue: its outcome is {outcome!r} (only an "
            "answer, outcome 'ok', can be appended to a conversation)",
            field="result",
        )
    for turns in TURNS.values():
        if turns.owns(response):
            return turns
    raise InvalidRequestError(
        f"result {key!r} has no turn to continue: its response is neither a Claude message "
        "(content) nor a Gemini response (candidates)",
        field="result",
    )


def assistant_turn(key: str, outcome: str, response: Mapping[str, Any] | None) -> dict[str, Any]:
    """``Result.assistant_turn``: the answer's own request message (a copy).

    Raises:
        InvalidRequestError: the result is no answer, or its response is of no known shape.
    """
    return _turns_of(key, outcome, response).turn(response or {})


def tool_results(
    key: str,
    outcome: str,
    response: Mapping[str, Any] | None,
    calls: Sequence[tuple[str, str]],
    outputs: Sequence[Any],
) -> dict[str, Any]:
    """``Result.tool_results``: the message answering ``calls`` (name, id) with ``outputs``.

    Raises:
        InvalidRequestError: not one output per call, no call, or no turn to continue.
    """
    turns = _turns_of(key, outcome, response)
    if isinstance(outputs, str | bytes) or not isinstance(outputs, Sequence):
        raise InvalidRequestError(
            f"outputs for result {key!r} must be a list with one output per tool call, "
            f"got {type(outputs).__name__}",
            field="outputs",
        )
    if not calls or len(outputs) != len(calls):
        raise InvalidRequestError(
            f"result {key!r} has {len(calls)} tool call(s), given {len(outputs)} output(s): "
            "give one output per call, in the order of Result.tool_calls",
            field="outputs",
        )
    for position, output in enumerate(outputs):
        try:
            json.dumps(output, allow_nan=False)
            continue
        except (TypeError, ValueError):
            pass
        # Raised outside the except block: json's error may quote the value (a float's).
        raise InvalidRequestError(
            f"output {position} for result {key!r} is not JSON data "
            f"({type(output).__name__}): a tool's output goes into the next request",
            field="outputs",
        )
    return turns.tool_results([(n, i, o) for (n, i), o in zip(calls, outputs, strict=True)])
