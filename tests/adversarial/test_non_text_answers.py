"""Answers with no text: an image, a file, code or its result is an answer, a thought is not.

Issue 38, item 5: a Gemini candidate of only ``inlineData`` parts with ``finishReason: STOP`` was
classified EMPTY_RESPONSE (retryable), so runs paid for it again. Each test runs real jobs on the
local stack (the local model's ``[[vb:parts ...]]`` directive writes such answers) or reads rows
through both classifiers (``classify_row`` and ``row_reader``'s fast path).
"""

from __future__ import annotations

from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import jobs_in
from vertexbatch._rows.classify import classify_row
from vertexbatch._rows.fast_path import row_reader
from vertexbatch.emulator import LocalStack

GEMINI = "gemini-3.8-flash"
CLAUDE = "claude-opus-5-5@default"

# The directive's part kind, and the field the answer's part carries.
KINDS = {
    "inline_data": "inlineData",
    "file_data": "fileData",
    "executable_code": "executableCode",
    "code_execution_result": "codeExecutionResult",
}


def _parts(result: vb.Result) -> list[dict[str, Any]]:
    assert result.response is not None
    parts: list[dict[str, Any]] = result.response["candidates"][0]["content"]["parts"]
    return parts


def test_gemini_answers_of_only_non_text_parts_are_answers(
    client: vb.Client, stack: LocalStack
) -> None:
    """Each non-text part kind alone (and after a thought) is an ok answer, its parts on the
    Result's response; thought parts alone are still an empty, retryable answer."""
    requests = [vb.GeminiRequest(kind, f"Draw it [[vb:parts {kind}]]") for kind in KINDS]
    requests += [
        vb.GeminiRequest("thought-image", "Draw it [[vb:parts thought,inline_data]]"),
        vb.GeminiRequest(
            "code-and-result", "Run [[vb:parts executable_code,code_execution_result]]"
        ),
        vb.GeminiRequest("thought-only", "Think [[vb:parts thought,thought]]"),
    ]
    job = client.submit_gemini("non-text", GEMINI, requests)
    stack.wait_job(job.name)
    results = {r.key: r for r in client.results(job)}

    for kind, field in KINDS.items():
        result = results[kind]
        assert (result.outcome, result.error, result.stop, result.text) == ("ok", None, "STOP", "")
        assert [list(part) for part in _parts(result)] == [[field]]
    image = results["thought-image"]
    assert image.ok and image.text == ""  # the thought's text is not the answer's
    assert [part.get("thought") for part in _parts(image)] == [True, None]
    assert "inlineData" in _parts(image)[1]
    assert results["code-and-result"].ok
    thought = results["thought-only"]
    assert thought.outcome == "retryable"
    assert isinstance(thought.error, vb.LineError) and thought.error.status == "EMPTY_RESPONSE"


def test_a_run_pays_once_for_an_image_answer(client: vb.Client, stack: LocalStack) -> None:
    """A run whose key is answered with only an image settles it ok on the first attempt: no
    second job is created for it."""
    run = client.run_gemini(
        "image-run",
        GEMINI,
        [vb.GeminiRequest("img", "Draw a cat [[vb:parts inline_data]]")],
        max_attempts=3,
    )
    for _ in range(6):
        stack.settle()
        summary = run.advance()
        if summary.done:
            break
    assert summary.done and summary.outcomes == {"ok": 1}
    assert [j["displayName"] for j in jobs_in(stack, client.bucket)] == ["image-run.s0"]
    (result,) = run.results()
    assert result.ok and "inlineData" in _parts(result)[0]


def test_claude_answer_of_only_a_tool_call_is_an_answer(
    client: vb.Client, stack: LocalStack
) -> None:
    """A Claude message whose only block is tool_use is an ok answer with its call; Claude has
    no image parts, and the local model refuses the directive with a 400 line error."""
    tool = {
        "name": "lookup",
        "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}},
    }
    body = {"max_tokens": 64, "tools": [tool]}
    job = client.submit_claude(
        "claude-non-text",
        CLAUDE,
        [
            vb.ClaudeRequest(
                "call", {**body, "messages": [{"role": "user", "content": "x [[vb:tool_call]]"}]}
            ),
            vb.ClaudeRequest(
                "parts",
                {**body, "messages": [{"role": "user", "content": "x [[vb:parts inline_data]]"}]},
            ),
        ],
    )
    stack.wait_job(job.name)
    results = {r.key: r for r in client.results(job)}
    call = results["call"]
    assert (call.outcome, call.text, [c.name for c in call.tool_calls]) == ("ok", "", ["lookup"])
    assert call.response is not None
    assert [block["type"] for block in call.response["content"]] == ["tool_use"]
    parts = results["parts"]
    assert isinstance(parts.error, vb.LineError) and parts.error.code == 400


def _gemini(parts: list[Any], finish: str = "STOP") -> dict[str, Any]:
    return {
        "status": "",
        "response": {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 258},
        },
    }


IMAGE = {"mimeType": "image/png", "data": "iVBORw0KGgo="}


@pytest.mark.parametrize(
    ("parts", "answered"),
    [
        ([{"inlineData": IMAGE}], True),
        ([{"inline_data": {"mime_type": "image/png", "data": "iVBO"}}], True),
        ([{"fileData": {"mimeType": "image/png", "fileUri": "gs://b/o.png"}}], True),
        ([{"file_data": {"file_uri": "gs://b/o.png"}}], True),
        ([{"executableCode": {"language": "PYTHON", "code": "1"}}], True),
        ([{"executable_code": {"code": "1"}}], True),
        ([{"codeExecutionResult": {"outcome": "OUTCOME_OK"}}], True),
        ([{"code_execution_result": {"output": "1"}}], True),
        ([{"text": ""}, {"inlineData": IMAGE}], True),
        ([{"text": "", "thoughtSignature": "c2ln"}, {"inlineData": IMAGE}], True),
        ([{"text": "thinking", "thought": True}, {"inlineData": IMAGE}], True),
        ([{"inlineData": IMAGE, "thought": True}], False),  # a thought image is a thought
        ([{"text": "thinking", "thought": True}], False),
        ([{"text": "", "thoughtSignature": "c2ln"}], False),
        ([{"inlineData": {}}], False),
        ([{"inlineData": None}], False),
        ([{"inlineData": "iVBO"}], False),
        ([{"videoMetadata": {"fps": 1}}], False),  # a request-only kind: unknown, not answered
        ([], False),
    ],
)
def test_gemini_rows_with_non_text_parts_classify_alike_on_both_paths(
    parts: list[Any], answered: bool
) -> None:
    """A STOP candidate with an image, file, code or code-result part that is no thought is an
    answer, on the general classifier and on the row reader alike; anything else is empty."""
    row = _gemini(parts)
    for result in (classify_row(row, key="k", provider="google"), row_reader("google")(row, "k")):
        if answered:
            assert (result.outcome, result.text, result.usage.output) == ("ok", "", 258)
            assert result.response is row["response"]
        else:
            assert isinstance(result.error, vb.LineError), parts
            assert (result.error.status, vb.is_retryable(result.error)) == ("EMPTY_RESPONSE", True)


def test_a_truncated_image_answer_stays_truncated() -> None:
    """MAX_TOKENS with only an image is still a truncation (no text kept), not an answer."""
    result = classify_row(
        _gemini([{"inlineData": IMAGE}], "MAX_TOKENS"), key="k", provider="google"
    )
    assert isinstance(result.error, vb.TruncatedError) and result.text == ""
