"""The local model's rules for a follow-up turn (vertexbatch/emulator/_followups.py): thinking
and thought signatures given, and a follow-up that drops them refused as Vertex refuses it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anthropic
import pytest

from vertexbatch.emulator._model import answer_claude, answer_gemini

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
TOOL = {"name": "weather", "input_schema": {"type": "object", "properties": {}}}
DECLARATIONS = [{"functionDeclarations": [{"name": "weather", "parameters": {"type": "OBJECT"}}]}]
ASK = "Weather in Oslo? [[vb:tool_call]]"


def claude(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "anthropic_version": "vertex-2023-10-16",
        "max_tokens": 2048,
        "tools": [TOOL],
        "messages": messages,
        **extra,
    }


def gemini(contents: list[dict[str, Any]]) -> dict[str, Any]:
    return {"contents": contents, "tools": DECLARATIONS}


THINKING = {"thinking": {"type": "enabled", "budget_tokens": 1024}}


def test_a_claude_tool_call_with_thinking_on_starts_with_a_signed_thinking_block() -> None:
    answer = answer_claude(claude([{"role": "user", "content": ASK}], **THINKING), "claude-x")
    assert answer.response is not None
    content = answer.response["content"]
    assert [b["type"] for b in content] == ["thinking", "tool_use"]
    assert content[0]["signature"]
    anthropic.types.Message.model_validate(answer.response)
    plain = answer_claude(claude([{"role": "user", "content": ASK}]), "claude-x")
    assert plain.response is not None
    assert [b["type"] for b in plain.response["content"]] == ["tool_use"]


def _claude_follow_up(assistant: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": ASK},
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "4"}]},
    ]


def test_a_claude_follow_up_is_answered_with_text_when_it_keeps_the_thinking() -> None:
    turn1 = answer_claude(claude([{"role": "user", "content": ASK}], **THINKING), "claude-x")
    assert turn1.response is not None
    messages = _claude_follow_up(turn1.response["content"])
    answer = answer_claude(claude(messages, **THINKING), "claude-x")
    assert answer.response is not None, answer.error
    assert [b["type"] for b in answer.response["content"]] == ["thinking", "text"]


def test_a_claude_follow_up_without_the_thinking_is_refused_in_vertex_words() -> None:
    tool_use = {"type": "tool_use", "id": "t1", "name": "weather", "input": {}}
    answer = answer_claude(claude(_claude_follow_up([tool_use]), **THINKING), "claude-x")
    assert answer.error is not None and answer.error.code == 400
    assert answer.error.message.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with a "
        "thinking block"
    )
    # Thinking off: nothing to keep, and the follow-up is answered.
    assert answer_claude(claude(_claude_follow_up([tool_use])), "claude-x").error is None


@pytest.mark.parametrize(
    ("model", "signed"), [("gemini-3-pro-preview", True), ("gemini-2.5-flash", False)]
)
def test_a_gemini_3_call_carries_a_thought_signature(model: str, signed: bool) -> None:
    answer = answer_gemini(gemini([{"role": "user", "parts": [{"text": ASK}]}]), model, NOW)
    assert answer.response is not None
    (part,) = answer.response["candidates"][0]["content"]["parts"]
    assert part["functionCall"]["name"] == "weather"
    assert bool(part.get("thoughtSignature")) is signed


def _gemini_follow_up(call: dict[str, Any]) -> list[dict[str, Any]]:
    response = {"functionResponse": {"name": "weather", "response": {"output": 4}}}
    return [
        {"role": "user", "parts": [{"text": ASK}]},
        {"role": "model", "parts": [call]},
        {"role": "user", "parts": [response]},
    ]


def test_a_gemini_3_follow_up_without_the_signature_is_refused_in_vertex_words() -> None:
    model = "gemini-3-pro-preview"
    turn1 = answer_gemini(gemini([{"role": "user", "parts": [{"text": ASK}]}]), model, NOW)
    assert turn1.response is not None
    (call,) = turn1.response["candidates"][0]["content"]["parts"]
    kept = answer_gemini(gemini(_gemini_follow_up(call)), model, NOW)
    assert kept.response is not None, kept.error
    (text,) = kept.response["candidates"][0]["content"]["parts"]
    assert text["text"]  # the request answers the call: text, no second call
    bare = {"functionCall": call["functionCall"]}
    refused = answer_gemini(gemini(_gemini_follow_up(bare)), model, NOW)
    assert refused.error is not None and refused.error.code == 400
    assert refused.error.message.startswith(
        "Unable to submit request because function call in the 2. content block is missing a "
        "`thought_signature`."
    )
    # Gemini 2.5 does not enforce it; a call from an earlier turn is not checked.
    assert answer_gemini(gemini(_gemini_follow_up(bare)), "gemini-2.5-flash", NOW).error is None
    later = [*_gemini_follow_up(bare), {"role": "user", "parts": [{"text": "And now?"}]}]
    assert answer_gemini(gemini(later), model, NOW).error is None
