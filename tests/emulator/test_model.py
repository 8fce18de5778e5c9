"""The deterministic local model and its directives (pure)."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from typing import Any

import anthropic
import pytest
from google.genai import types as genai_types

from vertexbatch.emulator._directives import DirectiveError, plan_directives
from vertexbatch.emulator._model import answer_claude, answer_gemini

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def claude(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "anthropic_version": "vertex-2023-10-16",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": text}],
        **extra,
    }


def gemini(text: str, **extra: Any) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": text}]}], **extra}


def gemini_response(text: str, **extra: Any) -> dict[str, Any]:
    answer = answer_gemini(gemini(text, **extra), "gemini-2.5-flash", NOW)
    assert answer.response is not None and answer.error is None
    return answer.response


def claude_message(text: str, **extra: Any) -> dict[str, Any]:
    answer = answer_claude(claude(text, **extra), "claude-sonnet-4-5")
    assert answer.response is not None and answer.error is None
    return answer.response


def test_claude_answer_is_a_valid_message_derived_from_a_hash() -> None:
    """A Claude answer parses as a Message, is deterministic and never echoes the prompt."""
    prompt = "Summarise the quarterly report in three bullet points please"
    first = claude_message(prompt)
    message = anthropic.types.Message.model_validate(first)
    assert first == claude_message(prompt)
    assert message.id.startswith("msg_vrtx_")
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert message.model == "claude-sonnet-4-5" and message.role == "assistant"
    text = message.content[0].text  # type: ignore[union-attr]
    assert text.startswith("Local model answer ") and prompt not in text
    assert message.usage.input_tokens == len(prompt) // 4 + 3
    assert message.usage.output_tokens == len(text.split())
    assert "cache_read_input_tokens" not in first["usage"]
    assert claude_message("another prompt")["content"] != first["content"]


def test_claude_system_and_text_blocks_are_read() -> None:
    """Directives count in `system` and in text blocks of message content."""
    in_system = claude_message("hello", system="[[vb:truncate]]")
    assert in_system["stop_reason"] == "max_tokens"
    blocks = [{"type": "text", "text": "hi"}, {"type": "text", "text": "[[vb:empty]]"}]
    in_block = answer_claude(
        {
            "anthropic_version": "v",
            "max_tokens": 5,
            "messages": [{"role": "user", "content": blocks}],
        },
        "claude-x",
    ).response
    assert in_block is not None and in_block["content"] == []


def test_gemini_answer_is_a_valid_generate_content_response() -> None:
    """A Gemini answer parses with google-genai and carries realistic usage and ids."""
    prompt = "Classify this ticket: the printer is on fire"
    raw = gemini_response(prompt)
    response = genai_types.GenerateContentResponse.model_validate(raw)
    assert raw == gemini_response(prompt)
    assert response.text is not None and response.text.startswith("Local model answer ")
    assert prompt not in response.text
    candidate = raw["candidates"][0]
    assert candidate["finishReason"] == "STOP" and candidate["content"]["role"] == "model"
    usage = raw["usageMetadata"]
    assert usage["promptTokenCount"] == len(prompt) // 4 + 3
    assert usage["candidatesTokenCount"] == len(response.text.split())
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"]
    assert "thoughtsTokenCount" not in usage and "cachedContentTokenCount" not in usage
    assert raw["modelVersion"] == "gemini-2.5-flash"
    assert raw["createTime"] == "2026-01-02T03:04:05.678901Z"
    assert raw["responseId"]


def test_gemini_system_instruction_is_read_in_either_casing() -> None:
    """Directives count in systemInstruction and system_instruction parts."""
    for key in ("systemInstruction", "system_instruction"):
        raw = gemini_response("hello", **{key: {"parts": [{"text": "[[vb:truncate]]"}]}})
        assert raw["candidates"][0]["finishReason"] == "MAX_TOKENS"


def test_refuse() -> None:
    """refuse: Claude refusal, stop_details, no content; Gemini blockReason, no candidates."""
    message = claude_message("x [[vb:refuse category=cyber detail=not_this_one]]")
    parsed = anthropic.types.Message.model_validate(message)
    assert parsed.stop_reason == "refusal" and parsed.content == []
    assert message["stop_details"] == {
        "type": "refusal",
        "category": "cyber",
        "explanation": "not this one",
    }
    plain = claude_message("x [[vb:refuse]]")
    assert plain["stop_details"] == {"type": "refusal", "category": None, "explanation": None}
    raw = gemini_response("x [[vb:refuse]]")
    assert "candidates" not in raw
    assert raw["promptFeedback"]["blockReason"] == "SAFETY"
    assert raw["promptFeedback"]["blockReasonMessage"]
    assert genai_types.GenerateContentResponse.model_validate(raw).text is None
    other = gemini_response("x [[vb:refuse block=PROHIBITED_CONTENT detail=nope]]")
    assert other["promptFeedback"] == {
        "blockReason": "PROHIBITED_CONTENT",
        "blockReasonMessage": "nope",
    }


def test_finish_with_known_and_unknown_reasons() -> None:
    """finish REASON: the reason verbatim with partial text, even one the SDKs do not know."""
    raw = gemini_response("x [[vb:finish NEW_REASON]]")
    candidate = raw["candidates"][0]
    assert candidate["finishReason"] == "NEW_REASON" and candidate["finishMessage"]
    full = gemini_response("x")["candidates"][0]["content"]["parts"][0]["text"]
    partial = candidate["content"]["parts"][0]["text"]
    assert full.startswith(partial) and partial != full
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        genai_types.GenerateContentResponse.model_validate(raw)
    assert gemini_response("x [[vb:finish SAFETY]]")["candidates"][0]["finishReason"] == "SAFETY"
    message = claude_message("x [[vb:finish pause_turn]]")
    assert anthropic.types.Message.model_validate(message).stop_reason == "pause_turn"
    unknown = claude_message("x [[vb:finish brand_new]]")
    assert anthropic.types.Message.construct(**unknown).stop_reason == "brand_new"
    stop = claude_message("x [[vb:finish stop_sequence]]", stop_sequences=["END"])
    assert stop["stop_sequence"] == "END"


def test_truncate() -> None:
    """truncate: a max-tokens stop with partial text; output tokens reach the request's limit."""
    message = claude_message("x [[vb:truncate]]")
    assert message["stop_reason"] == "max_tokens"
    assert message["content"][0]["text"] and message["usage"]["output_tokens"] == 100
    raw = gemini_response("x [[vb:truncate]]", generationConfig={"maxOutputTokens": 7})
    assert raw["candidates"][0]["finishReason"] == "MAX_TOKENS"
    assert raw["candidates"][0]["content"]["parts"][0]["text"]
    assert raw["usageMetadata"]["candidatesTokenCount"] == 7


def test_empty_and_no_candidates() -> None:
    """empty: finished with no text; no_candidates: Gemini without candidates or promptFeedback."""
    message = claude_message("x [[vb:empty]]")
    assert message["content"] == [] and message["stop_reason"] == "end_turn"
    raw = gemini_response("x [[vb:empty]]")
    assert raw["candidates"] == [
        {"content": {"role": "model", "parts": []}, "finishReason": "STOP"}
    ]
    assert "candidatesTokenCount" not in raw["usageMetadata"]
    bare = gemini_response("x [[vb:no_candidates]]")
    assert "candidates" not in bare and "promptFeedback" not in bare
    assert genai_types.GenerateContentResponse.model_validate(bare).text is None
    assert claude_message("x [[vb:no_candidates]]")["content"] == []


@pytest.mark.parametrize(
    ("code", "status", "etype"),
    [
        (400, "INVALID_ARGUMENT", "invalid_request_error"),
        (429, "RESOURCE_EXHAUSTED", "rate_limit_error"),
        (500, "INTERNAL", "api_error"),
        (503, "UNAVAILABLE", "api_error"),
        (504, "DEADLINE_EXCEEDED", "timeout_error"),
        (529, "UNAVAILABLE", "overloaded_error"),
    ],
)
def test_error(code: int, status: str, etype: str) -> None:
    """error CODE: a per-line error with that code, its status name and Anthropic error type."""
    for answer in (
        answer_claude(claude(f"[[vb:error {code}]]"), "claude-x"),
        answer_gemini(gemini(f"[[vb:error {code}]]"), "gemini-x", NOW),
    ):
        assert answer.response is None and answer.error is not None
        assert answer.error.code == code and answer.error.status == status
        assert answer.error.anthropic_type == etype and answer.error.message
    shaped = answer_claude(claude("[[vb:error 429 shape=status_object]]"), "claude-x")
    assert shaped.error is not None and shaped.error.shape == "status_object"


def test_drop() -> None:
    """drop: no answer at all."""
    assert answer_claude(claude("[[vb:drop]]"), "claude-x").dropped
    assert answer_gemini(gemini("[[vb:drop]]"), "gemini-x", NOW).dropped


def test_think() -> None:
    """think: a thinking block or thought part before the answer, counted as output."""
    message = claude_message("x [[vb:think tokens=40]]")
    assert [b["type"] for b in message["content"]] == ["thinking", "text"]
    assert message["content"][0]["signature"]
    plain = claude_message("x")
    assert message["usage"]["output_tokens"] == plain["usage"]["output_tokens"] + 40
    anthropic.types.Message.model_validate(message)
    raw = gemini_response("x [[vb:think tokens=40]]")
    parts = raw["candidates"][0]["content"]["parts"]
    assert parts[0]["thought"] is True and "thought" not in parts[1]
    usage = raw["usageMetadata"]
    assert usage["thoughtsTokenCount"] == 40
    total = usage["promptTokenCount"] + usage["candidatesTokenCount"] + 40
    assert usage["totalTokenCount"] == total
    response = genai_types.GenerateContentResponse.model_validate(raw)
    assert response.text == parts[1]["text"]
    default = gemini_response("x [[vb:think]]")["usageMetadata"]["thoughtsTokenCount"]
    assert (
        default > 0
        and default == gemini_response("x [[vb:think]]")["usageMetadata"]["thoughtsTokenCount"]
    )


def test_cached_and_cache_write_combine_with_think() -> None:
    """cached/cache_write set the cache counts; several directives combine."""
    message = claude_message("x [[vb:cached 1000]] [[vb:cache_write 50]] [[vb:think]]")
    usage = message["usage"]
    assert usage["cache_read_input_tokens"] == 1000
    assert usage["cache_creation_input_tokens"] == 50
    assert message["content"][0]["type"] == "thinking"
    text = "x [[vb:cached 1000]] [[vb:think]]"
    raw = gemini_response(text)
    gemini_usage = raw["usageMetadata"]
    assert gemini_usage["cachedContentTokenCount"] == 1000
    assert gemini_usage["promptTokenCount"] == len(text) // 4 + 3 + 1000
    genai_types.GenerateContentResponse.model_validate(raw)


def test_outcome_precedence() -> None:
    """When outcomes conflict, drop beats error beats refuse beats the rest."""
    assert plan_directives(["[[vb:error 500]] [[vb:drop]]"]).outcome == "drop"
    assert plan_directives(["[[vb:refuse]]", "[[vb:error 500]]"]).outcome == "error"
    assert plan_directives(["[[vb:truncate]] [[vb:refuse]]"]).outcome == "refuse"
    assert plan_directives(["no directives here"]).outcome == "answer"


@pytest.mark.parametrize(
    "text",
    [
        "[[vb:bogus]]",
        "[[vb:error]]",
        "[[vb:error abc]]",
        "[[vb:error 200]]",
        "[[vb:error 429 shape=weird]]",
        "[[vb:finish]]",
        "[[vb:cached]]",
        "[[vb:think tokens=x]]",
        "[[vb:drop now]]",
        "[[vb:refuse colour=red]]",
    ],
)
def test_bad_directives_fail_the_line(text: str) -> None:
    """An unknown or malformed directive answers the line with a 400 error."""
    with pytest.raises(DirectiveError):
        plan_directives([text])
    answer = answer_gemini(gemini(text), "gemini-x", NOW)
    assert answer.error is not None and answer.error.code == 400


@pytest.mark.parametrize(
    "request_body",
    [
        "not an object",
        {"max_tokens": 5, "anthropic_version": "v"},
        {"messages": [{"role": "user", "content": "x"}], "anthropic_version": "v"},
        {"messages": [{"role": "user", "content": "x"}], "max_tokens": 5},
    ],
)
def test_invalid_claude_requests_are_line_errors(request_body: Any) -> None:
    """A Claude request without messages, max_tokens or anthropic_version is a 400 line error."""
    answer = answer_claude(request_body, "claude-x")
    assert answer.error is not None and answer.error.code == 400


def test_invalid_gemini_request_is_a_line_error() -> None:
    """A Gemini request without contents is a 400 line error."""
    answer = answer_gemini({"generationConfig": {"temperature": 1}}, "gemini-x", NOW)
    assert answer.error is not None and answer.error.code == 400


def test_a_tiny_limit_truncates_as_a_real_model_would() -> None:
    """max_tokens / maxOutputTokens of 1 or 2 stops at the limit; 3 and more answer in full."""
    for limit in (1, 2):
        message = claude_message("Count to twenty.", max_tokens=limit)
        assert message["stop_reason"] == "max_tokens"
        assert message["usage"]["output_tokens"] == limit
        response = gemini_response("Count to twenty.", generationConfig={"maxOutputTokens": limit})
        assert response["candidates"][0]["finishReason"] == "MAX_TOKENS"
        assert response["usageMetadata"]["candidatesTokenCount"] == limit
    assert claude_message("Count to twenty.", max_tokens=3)["stop_reason"] == "end_turn"
    full = gemini_response("Count to twenty.", generationConfig={"maxOutputTokens": 3})
    assert full["candidates"][0]["finishReason"] == "STOP"


def test_max_tokens_zero_and_a_bad_gemini_role_are_line_errors() -> None:
    """The errors Anthropic and Gemini give these: 400, naming the rule."""
    zero = answer_claude(claude("hi", max_tokens=0), "claude-sonnet-4-5")
    assert zero.error is not None and zero.error.code == 400
    assert "max_tokens" in zero.error.message
    request = {"contents": [{"role": "critic", "parts": [{"text": "hi"}]}]}
    role = answer_gemini(request, "gemini-2.5-flash", NOW)
    assert role.error is not None and role.error.code == 400
    assert role.error.message == "Please use a valid role: user, model."
    assert answer_gemini(gemini("hi"), "gemini-2.5-flash", NOW).error is None
