"""A result's next turn (vertexbatch/_turns.py): the answer as the provider's own request message,
every block and part kept with its signature, and the tool results that answer its calls."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import vertexbatch as vb
from vertexbatch._rows.classify import classify_row
from vertexbatch._rows.fast_path import row_reader

# A Claude answer with extended thinking that calls two tools, as Vertex writes it.
CLAUDE_THINKING = {"type": "thinking", "thinking": "Two cities: look both up.", "signature": "EqQB"}
CLAUDE_REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgB"}
CLAUDE_MESSAGE: dict[str, Any] = {
    "id": "msg_vrtx_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        CLAUDE_THINKING,
        CLAUDE_REDACTED,
        {"type": "text", "text": "Looking both up."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
        {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Lima"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 40, "output_tokens": 90},
}

# A Gemini 3 answer with a thought and two parallel calls: only the first call is signed.
GEMINI_RESPONSE: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Two cities.", "thought": True},
                    {
                        "functionCall": {"name": "weather", "args": {"city": "Oslo"}},
                        "thoughtSignature": "CiQBcsjafG",
                    },
                    {"functionCall": {"name": "weather", "args": {"city": "Lima"}}},
                ],
            },
            "finishReason": "STOP",
        }
    ],
    "usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 12},
    "modelVersion": "gemini-3-pro-preview",
}


def _claude(message: dict[str, Any] = CLAUDE_MESSAGE) -> vb.Result:
    return classify_row({"response": message}, key="k", provider="anthropic")


def _gemini(response: dict[str, Any] = GEMINI_RESPONSE) -> vb.Result:
    return classify_row({"response": response}, key="k", provider="google")


def test_a_claude_turn_is_every_block_with_its_signature() -> None:
    """Thinking and redacted thinking (signature and data), text and tool_use, in order."""
    result = _claude()
    assert result.assistant_turn() == {"role": "assistant", "content": CLAUDE_MESSAGE["content"]}
    assert [c.id for c in result.tool_calls] == ["toolu_1", "toolu_2"]
    assert [c.signature for c in result.tool_calls] == [None, None]  # on the thinking blocks


def test_a_gemini_turn_is_every_part_with_its_thought_signature() -> None:
    """Thought parts and function calls, the first call's thoughtSignature on its part."""
    result = _gemini()
    parts = GEMINI_RESPONSE["candidates"][0]["content"]["parts"]
    assert result.assistant_turn() == {"role": "model", "parts": parts}
    assert [c.signature for c in result.tool_calls] == ["CiQBcsjafG", None]
    assert [c.arguments for c in result.tool_calls] == [{"city": "Oslo"}, {"city": "Lima"}]


def test_a_google_genai_dump_keeps_its_snake_case_signature() -> None:
    """A response dumped by google-genai (snake_case) gives the same call and the same parts."""
    snake = copy.deepcopy(GEMINI_RESPONSE)
    part = snake["candidates"][0]["content"]["parts"][1]
    part["function_call"] = part.pop("functionCall")
    part["thought_signature"] = part.pop("thoughtSignature")
    result = _gemini(snake)
    assert result.tool_calls[0].signature == "CiQBcsjafG"
    assert result.assistant_turn()["parts"][1] == part


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_the_turn_is_a_copy(provider: str) -> None:
    """Changing the turn (as a caller appending to it does) leaves the result's response alone."""
    result = _claude() if provider == "anthropic" else _gemini()
    before = copy.deepcopy(result.response)
    turn = result.assistant_turn()
    blocks = turn["content"] if provider == "anthropic" else turn["parts"]
    blocks[0]["changed"] = True
    blocks.append({"text": "more"})
    assert result.response == before
    assert result.assistant_turn() != turn


@pytest.mark.parametrize(
    ("provider", "response", "turn"),
    [
        (
            "anthropic",
            {**CLAUDE_MESSAGE, "content": [{"type": "text", "text": "Hi."}],
             "stop_reason": "end_turn"},
            {"role": "assistant", "content": [{"type": "text", "text": "Hi."}]},
        ),
        (
            "google",
            {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi."}]},
                             "finishReason": "STOP"}]},
            {"role": "model", "parts": [{"text": "Hi."}]},
        ),
    ],
)  # fmt: skip
def test_the_fast_path_keeps_the_response_the_turn_is_built_from(
    provider: vb.Provider, response: dict[str, Any], turn: dict[str, Any]
) -> None:
    """A usual answer read in one step (``row_reader``) gives the same turn as the plain path."""
    fast = row_reader(provider)({"response": response}, "k")
    assert fast.response is response
    assert fast.assistant_turn() == turn
    assert classify_row({"response": response}, key="k", provider=provider).assistant_turn() == turn


@pytest.mark.parametrize(
    "result",
    [
        _claude({**CLAUDE_MESSAGE, "content": [], "stop_reason": "refusal"}),
        _claude({**CLAUDE_MESSAGE, "stop_reason": "max_tokens"}),
        _gemini({"promptFeedback": {"blockReason": "SAFETY"}}),
        classify_row({"status": "Bad Request: {}", "response": None}, key="k", provider="google"),
        vb.Result("k", error=vb.MissingError("no line", key="k")),
    ],
    ids=["refused", "truncated", "blocked", "line error", "missing"],
)
def test_a_result_that_is_no_answer_has_no_turn(result: vb.Result) -> None:
    """Refused, truncated, failed or missing: a clear error naming the key and the outcome."""
    with pytest.raises(vb.InvalidRequestError, match=r"result 'k' has no turn to continue") as e:
        result.assistant_turn()
    assert repr(result.outcome) in str(e.value) and e.value.field == "result"
    with pytest.raises(vb.InvalidRequestError, match="no turn to continue"):
        result.tool_results(["x"])


def test_an_answer_without_a_response_of_a_known_shape_has_no_turn() -> None:
    """A hand-made result with no provider's response is refused, not guessed at."""
    with pytest.raises(vb.InvalidRequestError, match="neither a Claude message"):
        vb.Result("k", text="hi", response={"answer": "hi"}).assistant_turn()


def test_claude_tool_results_answer_each_call_by_its_id() -> None:
    """One user message, a tool_result block per call in order; an object goes as JSON text."""
    message = _claude().tool_results(["4 C", {"temp": 19}])
    assert message == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "4 C"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": '{"temp": 19}'},
        ],
    }


def test_gemini_tool_results_answer_each_call_by_its_name() -> None:
    """One user content, a functionResponse part per call in order: an object is the response,
    anything else goes under "output"; an id is kept when the call had one."""
    response = copy.deepcopy(GEMINI_RESPONSE)
    response["candidates"][0]["content"]["parts"][2]["functionCall"]["id"] = "c2"
    output = {"temp": 4}
    message = _gemini(response).tool_results([output, 19])
    assert message == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "weather", "response": {"temp": 4}}},
            {"functionResponse": {"name": "weather", "response": {"output": 19}, "id": "c2"}},
        ],
    }
    message["parts"][0]["functionResponse"]["response"]["temp"] = 5
    assert output == {"temp": 4}  # the caller's output is copied, never shared


@pytest.mark.parametrize("outputs", [["one"], ["a", "b", "c"], "ab", {"toolu_1": "x"}])
def test_tool_results_need_one_output_per_call(outputs: Any) -> None:
    """A count that is not the calls' (or a string or dict for the list) is refused by name."""
    with pytest.raises(vb.InvalidRequestError) as caught:
        _claude().tool_results(outputs)
    assert caught.value.field == "outputs"


def test_an_answer_with_no_call_has_no_tool_results() -> None:
    message = {**CLAUDE_MESSAGE, "content": [{"type": "text", "text": "Hi."}]}
    with pytest.raises(vb.InvalidRequestError, match="0 tool call"):
        _claude(message).tool_results([])


@pytest.mark.parametrize("bad", [float("nan"), object(), {1: b"x"}])
def test_an_output_that_is_not_json_is_refused_without_its_value(bad: Any) -> None:
    with pytest.raises(vb.InvalidRequestError, match="output 1 for result 'k' is not JSON") as e:
        _claude().tool_results(["ok", bad])
    assert "nan" not in str(e.value) and e.value.__cause__ is None


def test_a_tool_call_made_without_a_signature_is_as_before() -> None:
    """The constructor keeps its positions; the repr shows neither arguments nor signature."""
    call = vb.ToolCall("f", {"q": 2}, "c1")
    assert call.signature is None
    signed = vb.ToolCall("f", {"q": 2}, "c1", "SECRET-SIG")
    assert signed != call and "SECRET" not in repr(signed) and "q" not in repr(signed)
    assert json.dumps(_gemini().assistant_turn())  # JSON data, ready for a request line
