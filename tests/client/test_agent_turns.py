"""A tool loop in batches on the local stack: turn 1 of many conversations as one batch, the
tools run, turn 2 built only from the results (parked as JSON in between) as the next batch,
answered; a follow-up that drops the signatures is refused as Vertex refuses it."""

from __future__ import annotations

import json
from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import read_to_end
from vertexbatch.emulator import LocalStack

CLAUDE = "claude-opus-5-5@default"
GEMINI = "gemini-3.8-flash"  # a Gemini 3 model: it signs its calls and wants them back
CITIES = ("Oslo", "Lima", "Pune")
THINKING = {"type": "enabled", "budget_tokens": 1024}

CLAUDE_TOOL = {
    "name": "weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
GEMINI_TOOL = {
    "function_declarations": [
        {
            "name": "weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "OBJECT",
                "properties": {"city": {"type": "STRING"}},
                "required": ["city"],
            },
        }
    ]
}


def weather(arguments: Any) -> dict[str, Any]:
    """The tool: what an executor computes between the two batches."""
    return {"city": arguments["city"], "celsius": len(arguments["city"]) * 3}


def _claude_turn1() -> dict[str, list[dict[str, Any]]]:
    return {
        f"c-{city}": [
            {"role": "user", "content": f"Weather in {city}? [[vb:tool_call name=weather]]"}
        ]
        for city in CITIES
    }


def _claude_requests(conversations: dict[str, list[dict[str, Any]]]) -> list[vb.ClaudeRequest]:
    params = {"max_tokens": 2048, "thinking": THINKING, "tools": [CLAUDE_TOOL]}
    return [vb.ClaudeRequest(key, {**params, "messages": m}) for key, m in conversations.items()]


def _gemini_turn1() -> dict[str, list[dict[str, Any]]]:
    return {
        f"g-{city}": [{"role": "user", "parts": [{"text": f"Weather in {city}? [[vb:tool_call]]"}]}]
        for city in CITIES
    }


def _gemini_requests(conversations: dict[str, list[dict[str, Any]]]) -> list[vb.GeminiRequest]:
    return [vb.GeminiRequest(key, m, {"tools": [GEMINI_TOOL]}) for key, m in conversations.items()]


def _next_turn(
    conversations: dict[str, list[dict[str, Any]]], results: dict[str, vb.Result]
) -> dict[str, list[dict[str, Any]]]:
    """Each conversation with its answer and its tools' results appended, parked as JSON."""
    following = {}
    for key, messages in conversations.items():
        result = results[key]
        outputs = [weather(call.arguments) for call in result.tool_calls]
        following[key] = [*messages, result.assistant_turn(), result.tool_results(outputs)]
    return json.loads(json.dumps(following))  # parked in GCS between the batches, as JSON


@pytest.mark.parametrize("provider", ["claude", "gemini"])
def test_a_tool_loop_runs_as_two_batches(
    client: vb.Client, stack: LocalStack, provider: str
) -> None:
    """Turn 1 calls the tool with its signatures; turn 2, built only from the results, is
    answered with text."""
    if provider == "claude":
        conversations = _claude_turn1()
        job = client.submit_claude("turn-1", CLAUDE, _claude_requests(conversations))
    else:
        conversations = _gemini_turn1()
        job = client.submit_gemini("turn-1", GEMINI, _gemini_requests(conversations))
    # Another process reads the results with only the Job, as an executor resumed later does.
    results = read_to_end(client, stack, vb.Job.from_dict(json.loads(json.dumps(job.to_dict()))))
    assert set(results) == set(conversations)
    for result in results.values():
        assert result.ok and [c.name for c in result.tool_calls] == ["weather"]
        turn = result.assistant_turn()
        if provider == "claude":
            assert [b["type"] for b in turn["content"]] == ["thinking", "tool_use"]
            assert turn["content"][0]["signature"]
        else:
            assert result.tool_calls[0].signature
            assert turn["parts"][0]["thoughtSignature"] == result.tool_calls[0].signature

    following = _next_turn(conversations, results)
    if provider == "claude":
        job = client.submit_claude("turn-2", CLAUDE, _claude_requests(following))
    else:
        job = client.submit_gemini("turn-2", GEMINI, _gemini_requests(following))
    answers = read_to_end(client, stack, job)
    assert set(answers) == set(conversations)
    for answer in answers.values():
        assert answer.ok, answer
        assert answer.text and answer.tool_calls == ()


def _unsigned(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The follow-up an executor builds from the calls alone: signatures and thinking dropped."""
    rebuilt = []
    for message in messages:
        if message["role"] == "assistant":
            content = [b for b in message["content"] if b["type"] == "tool_use"]
            message = {**message, "content": content}
        elif message["role"] == "model":
            message = {
                **message,
                "parts": [{"functionCall": p["functionCall"]} for p in message["parts"]],
            }
        rebuilt.append(message)
    return rebuilt


@pytest.mark.parametrize("provider", ["claude", "gemini"])
def test_a_follow_up_without_the_signatures_is_refused(
    client: vb.Client, stack: LocalStack, provider: str
) -> None:
    """Rebuilt from name and arguments only, the follow-up fails on every line with a permanent
    400 (its message, in Vertex's words: tests/emulator/test_followups.py)."""
    if provider == "claude":
        conversations = _claude_turn1()
        job = client.submit_claude("bare-1", CLAUDE, _claude_requests(conversations))
    else:
        conversations = _gemini_turn1()
        job = client.submit_gemini("bare-1", GEMINI, _gemini_requests(conversations))
    following = _next_turn(conversations, read_to_end(client, stack, job))
    bare = {key: _unsigned(messages) for key, messages in following.items()}
    if provider == "claude":
        job = client.submit_claude("bare-2", CLAUDE, _claude_requests(bare))
    else:
        job = client.submit_gemini("bare-2", GEMINI, _gemini_requests(bare))
    failed = read_to_end(client, stack, job)
    assert len(failed) == len(CITIES)
    for result in failed.values():
        assert isinstance(result.error, vb.LineError), result
        assert result.error.code == 400 and not result.error.transient
