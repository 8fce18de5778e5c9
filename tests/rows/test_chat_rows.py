"""An open model's output row (an OpenAI chat completion) read into a Result: every outcome,
usage, tool calls, errors classified retryable or not, and the fast path equal to the checked
one (vertexbatch/_rows/chat.py)."""

from __future__ import annotations

import copy
import json
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vertexbatch as vb
from tests.helpers import examples
from tests.rows.test_result_paths import _same
from vertexbatch._rows.classify import classify_row
from vertexbatch._rows.fast_path import row_reader


def completion(
    content: Any = "Paris.",
    finish: Any = "stop",
    *,
    usage: Any = None,
    **message: Any,
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "meta/llama-3.3-70b-instruct-maas",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": finish,
            }
        ],
        "usage": usage if usage is not None else {"prompt_tokens": 12, "completion_tokens": 3},
    }


def read(response: Any, status: Any = "") -> vb.Result:
    row = {"custom_id": "k0", "status": status, "processed_time": "t", "response": response}
    result = classify_row(row, key="k", provider="openmaas")
    _same(row_reader("openmaas")(row, "k"), result)
    return result


def test_an_answer_is_ok_with_its_text_and_usage() -> None:
    result = read(completion())
    assert (result.outcome, result.text, result.stop) == ("ok", "Paris.", "stop")
    assert result.usage == vb.Usage(input=12, output=3)
    assert result.response is not None and result.response["object"] == "chat.completion"


def test_cached_prompt_tokens_are_the_cache_read() -> None:
    usage = {
        "prompt_tokens": 40,
        "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 32},
    }
    assert read(completion(usage=usage)).usage == vb.Usage(input=40, output=2, cache_read=32)


def test_length_is_truncated_with_the_partial_text() -> None:
    result = read(completion("Par", "length"))
    assert (result.outcome, result.text, result.stop) == ("truncated", "Par", "length")
    assert isinstance(result.error, vb.TruncatedError)


@pytest.mark.parametrize(
    ("response", "category"),
    [
        (completion(None, "content_filter"), "content_filter"),
        (completion(None, "stop", refusal="I can't help with that."), "refusal"),
    ],
)
def test_a_content_filter_or_a_refusal_is_refused_without_text(
    response: dict[str, Any], category: str
) -> None:
    result = read(response)
    assert result.outcome == "refused" and result.text == ""
    assert result.refusal is not None and result.refusal.category == category
    assert isinstance(result.error, vb.RefusedError)


def test_tool_calls_are_read_with_their_parsed_arguments() -> None:
    calls = [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
        {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": "{not json"}},
        {"id": "call_3", "type": "function", "function": {"name": ""}},
    ]
    result = read(completion(None, "tool_calls", tool_calls=calls))
    assert result.outcome == "ok"
    assert [(c.name, c.arguments, c.id) for c in result.tool_calls] == [
        ("f", {"x": 1}, "call_1"),
        ("g", "{not json", "call_2"),
    ]
    turn = result.assistant_turn()
    assert turn["role"] == "assistant" and turn["tool_calls"] == calls
    with pytest.raises(vb.InvalidRequestError, match="its own"):
        result.tool_results([{"y": 2}, "done"])


@pytest.mark.parametrize(
    ("response", "status", "transient"),
    [
        (completion("", "stop"), "EMPTY_RESPONSE", True),
        ({"choices": [], "usage": {}}, "NO_CHOICES", True),
        (completion("Par", None), "NOT_FINISHED", True),
        (completion("Par", "eos_token"), "STOP_REASON_eos_token", False),
        (completion("Par", "two words"), "STOP_REASON_UNKNOWN", False),
    ],
)
def test_unusable_answers_are_line_errors(
    response: dict[str, Any], status: str, transient: bool
) -> None:
    result = read(response)
    assert isinstance(result.error, vb.LineError)
    assert (result.error.status, result.error.transient) == (status, transient)
    assert result.outcome == ("retryable" if transient else "failed")


@pytest.mark.parametrize(
    ("error", "code", "status", "transient"),
    [
        ({"type": "invalid_request_error", "code": "context_length_exceeded"}, 400,
         "invalid_request_error", False),
        ({"type": "rate_limit_error", "message": "slow down"}, 429, "rate_limit_error", True),
        ({"type": "server_error"}, 0, "server_error", True),
        ({"code": 429, "status": "RESOURCE_EXHAUSTED"}, 429, "RESOURCE_EXHAUSTED", True),
        ({"code": 400, "status": "INVALID_ARGUMENT"}, 400, "INVALID_ARGUMENT", False),
    ],
)  # fmt: skip
def test_an_error_body_is_classified_retryable_or_not(
    error: dict[str, Any], code: int, status: str, transient: bool
) -> None:
    for response in ({"error": error}, {"status_code": code or 500, "body": {"error": error}}):
        result = read(response)
        assert isinstance(result.error, vb.LineError)
        assert (result.error.code, result.error.status) == (code, status)
        assert result.error.transient is transient
        assert "slow down" not in str(result.error)  # an error's message is never shown


def test_a_row_status_is_a_line_error_as_in_every_lane() -> None:
    status = 'Bad Request: {"error": {"code": 400, "status": "INVALID_ARGUMENT"}}'
    result = read(None, status)
    assert isinstance(result.error, vb.LineError) and not result.error.transient
    assert read(json.dumps(completion())).outcome == "ok"  # a response as a JSON string


_ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2**64), st.text(max_size=4), st.just([]),
    st.just({}), st.floats(allow_nan=False),
)  # fmt: skip


@settings(max_examples=examples(800), deadline=None)
@given(
    content=_ODD | st.just("text") | st.just([{"type": "text", "text": "t"}]),
    finish=st.sampled_from(["stop", "length", "tool_calls", "content_filter", None, 3, ""]),
    refusal=_ODD,
    calls=st.sampled_from([None, [], [{"function": {"name": "f", "arguments": "{}"}}], [3]]),
    counts=st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens"]), _ODD),
    extra_choice=st.booleans(),
)
def test_any_completion_reads_as_the_checked_path_reads_it(
    content: Any, finish: Any, refusal: Any, calls: Any, counts: Any, extra_choice: bool
) -> None:
    """Completions near the usual one and far from it: the fast path's Result is the one the
    checked path gives (a mapping that is no dict takes the checked path)."""
    response = completion(content, finish, usage=counts, refusal=refusal, tool_calls=calls)
    if extra_choice:
        response["choices"].append(copy.deepcopy(response["choices"][0]))
    row = {"custom_id": "k0", "status": "", "response": response}
    checked = classify_row(
        {**row, "response": MappingProxyType(response)}, key="k", provider="openmaas"
    )
    _same(row_reader("openmaas")(row, "k"), checked)
    _same(classify_row(row, key="k", provider="openmaas"), checked)
