"""What the local model checks of a follow-up turn, and the signatures it gives (pure).

A conversation's next request carries the model's last answer back. Vertex refuses two kinds of
follow-up that drop what the answer carried, and the local model refuses them as it does (a 400
line error, in the service's words; docs/platform-facts.md, "The next turn"):

- **Claude, thinking enabled** (``thinking.type`` ``enabled``) and the request
  ending in ``tool_result`` blocks: the last ``assistant`` message must start with a
  ``thinking`` or ``redacted_thinking`` block. Message as Vertex returns it (req_vrtx ids in
  Kilo-Org/kilocode#5219, 2026-01-20; anomalyco/opencode#3077).
- **Gemini 3** (a model id starting ``gemini-3``): in the current turn (the contents after the
  last ``user`` content with a text part), the first ``functionCall`` part of each ``model``
  content must carry its ``thoughtSignature``. Message as Vertex returns it
  (GewoonJaap/gemini-cli-openai#156, 2025-12-20; google-gemini/gemini-cli#14437), without the
  function's name (the local model's messages quote no request content).

The local model's answers carry what these rules check: a ``thinking`` block (with a
``signature``) before a Claude answer when thinking is on, and a ``thoughtSignature`` on the
first ``functionCall`` part of a Gemini 3 answer (or of any Gemini answer asked to think). A
request that answers tool calls (its last turn holds ``tool_result`` blocks or
``functionResponse`` parts) is answered with text: the ``tool_call`` directive is for the turn
that asks, as a real model answers once it has its tools' results.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "answers_tools",
    "claude_followup_problem",
    "claude_thinks",
    "gemini_followup_problem",
    "signature_of",
    "signs_calls",
]

CLAUDE_THINKING_SOURCE: Final = (
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
GEMINI_SIGNATURES_SOURCE: Final = (
    "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"
)


def signature_of(text: str) -> str:
    """The local model's signature of a thought (opaque to callers, as the services' are)."""
    digest = hashlib.sha256(b"vertexbatch local model thought\n" + text.encode("utf-8"))
    return base64.b64encode(digest.digest()).decode("ascii")


def _last(items: Any) -> Any:
    return items[-1] if isinstance(items, list) and items else None


def answers_tools(request: Mapping[str, Any]) -> bool:
    """Whether the request's last turn holds tool results (Claude or Gemini shape)."""
    message = _last(request.get("messages"))
    if isinstance(message, Mapping) and isinstance(message.get("content"), list):
        return any(
            isinstance(b, Mapping) and b.get("type") == "tool_result" for b in message["content"]
        )
    content = _last(request.get("contents"))
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return isinstance(parts, list) and any(
        isinstance(p, Mapping) and ("functionResponse" in p or "function_response" in p)
        for p in parts
    )


def claude_thinks(request: Mapping[str, Any]) -> bool:
    """Whether a Claude request turns extended thinking on."""
    thinking = request.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") == "enabled"


def claude_followup_problem(request: Mapping[str, Any]) -> str | None:
    """The message Vertex refuses a Claude follow-up with, or ``None``."""
    messages = request.get("messages")
    if not claude_thinks(request) or not answers_tools(request) or not isinstance(messages, list):
        return None
    index = next(
        (
            i
            for i in range(len(messages) - 1, -1, -1)
            if isinstance(messages[i], Mapping) and messages[i].get("role") == "assistant"
        ),
        None,
    )
    content = messages[index].get("content") if index is not None else None
    first = content[0] if isinstance(content, list) and content else None
    kind = first.get("type") if isinstance(first, Mapping) else None
    if index is None or kind in ("thinking", "redacted_thinking"):
        return None
    return (
        f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        f"`{kind}`. When `thinking` is enabled, a final `assistant` message must start with a "
        "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
        "recommend you include thinking blocks from previous turns. To avoid this requirement, "
        f"disable `thinking`. Please consult our documentation at {CLAUDE_THINKING_SOURCE}"
    )


def signs_calls(model: str) -> bool:
    """Whether a Gemini model signs its function calls and wants them back signed (Gemini 3)."""
    return model.lower().startswith("gemini-3")


def _call(part: Any) -> Mapping[str, Any] | None:
    if not isinstance(part, Mapping):
        return None
    call = part.get("functionCall") or part.get("function_call")
    return call if isinstance(call, Mapping) else None


def gemini_followup_problem(request: Mapping[str, Any], model: str) -> str | None:
    """The message Vertex refuses a Gemini 3 follow-up with, or ``None``."""
    contents = request.get("contents")
    if not signs_calls(model) or not isinstance(contents, list):
        return None
    start = 0
    for index, content in enumerate(contents):
        parts = content.get("parts") if isinstance(content, Mapping) else None
        if (
            isinstance(content, Mapping)
            and content.get("role", "user") == "user"
            and isinstance(parts, list)
            and any(isinstance(p, Mapping) and "text" in p for p in parts)
        ):
            start = index + 1
    for index in range(start, len(contents)):
        content = contents[index]
        if not isinstance(content, Mapping) or content.get("role") != "model":
            continue
        parts = content.get("parts")
        calls = [p for p in parts if _call(p) is not None] if isinstance(parts, list) else []
        first = calls[0] if calls else None
        if first is None or first.get("thoughtSignature") or first.get("thought_signature"):
            continue
        # Vertex names the function (`weather`) after "function call"; the local model's
        # messages carry no request content (``LineFailure``), so it leaves the name out.
        return (
            f"Unable to submit request because function call in the {index + 1}. "
            f"content block is missing a `thought_signature`. Learn more: "
            f"{GEMINI_SIGNATURES_SOURCE}"
        )
    return None
