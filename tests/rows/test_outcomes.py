"""Tests of vertexbatch._rows.classify: one output line in, one Result out."""

from __future__ import annotations

import copy
import json
import pickle
from dataclasses import dataclass
from typing import Any

import pytest
from google.genai import types as genai_types

from vertexbatch._errors import (
    InvalidRequestError,
    LineError,
    RefusedError,
    ResultError,
    TruncatedError,
)
from vertexbatch._retry import TRANSIENT_HTTP
from vertexbatch._rows.classify import (
    classify_claude_message,
    classify_gemini_response,
    classify_row,
)
from vertexbatch._rows.failures import line_error_for
from vertexbatch._values import Provider, Refusal, Result, Usage

KEY = "key-1"
# Stands for provider text (messages, explanations) that may echo content: it must never reach
# an error. Every table below puts it wherever a provider could write prose.
SECRET = "SECRET-echoed-content-7f3a"
PROCESSED = "2025-08-14T16:29:54.123+00:00"
PROVIDERS: tuple[Provider, ...] = ("anthropic", "google")


@dataclass(frozen=True)
class Expect:
    """What a Result must look like; ``code``/``status``/``transient`` apply to a LineError."""

    error: type[ResultError] | None = None
    text: str = ""
    stop: str = ""
    refusal: Refusal | None = None
    code: int = 0
    status: str = ""
    transient: bool = False


OK = Expect()


def line_error(status: str = "", code: int = 0, *, transient: bool, stop: str = "") -> Expect:
    return Expect(LineError, code=code, status=status, transient=transient, stop=stop)


def check(result: Result, expect: Expect) -> None:
    assert result.key == KEY
    assert result.text == expect.text
    assert result.stop == expect.stop
    assert result.refusal == expect.refusal
    if expect.error is None:
        assert result.error is None
        assert result.ok
        return
    assert type(result.error) is expect.error
    assert result.error.key == KEY
    assert not result.ok
    if isinstance(result.error, LineError):
        got = (result.error.code, result.error.status, result.error.transient)
        assert got == (expect.code, expect.status, expect.transient)


def row(response: Any = None, status: Any = "", **extra: Any) -> dict[str, Any]:
    """A processed output line, as Vertex writes it (``response`` omitted when None)."""
    line: dict[str, Any] = {"status": status, "processed_time": PROCESSED, "request": {"x": 1}}
    if response is not None:
        line["response"] = response
    line.update(extra)
    return line


def claude(content: Any = None, stop: Any = "end_turn", **fields: Any) -> dict[str, Any]:
    """An Anthropic Messages response body."""
    body: dict[str, Any] = {
        "id": "msg_vrtx_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-5-5",
        "content": [{"type": "text", "text": "Hi!"}] if content is None else content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }
    body.update(fields)
    return body


def gemini_candidate(parts: Any = None, finish: Any = "STOP", **fields: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"parts": [{"text": "Hello"}] if parts is None else parts, "role": "model"},
        "index": 0,
    }
    if finish is not None:
        candidate["finishReason"] = finish
    candidate.update(fields)
    return candidate


def gemini(parts: Any = None, finish: Any = "STOP", **fields: Any) -> dict[str, Any]:
    """A Gemini GenerateContentResponse in proto3 JSON (camelCase)."""
    body: dict[str, Any] = {
        "candidates": [gemini_candidate(parts, finish)],
        "modelVersion": "gemini-3.8-flash",
        "responseId": "Ag-eaO_TDr6KqsMPztDW8AY",
        "usageMetadata": {"promptTokenCount": 14, "candidatesTokenCount": 17},
    }
    body.update(fields)
    return body


def envelope(kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": SECRET}, "request_id": "req_1"}


def google_error(code: int, status: str) -> str:
    return json.dumps({"error": {"code": code, "message": SECRET, "status": status}})


# --- per-line failures: the same for both providers -------------------------------------------

FAILURES = [
    pytest.param(
        row(status=f"Bad Request: {google_error(400, 'INVALID_ARGUMENT')}"),
        line_error("INVALID_ARGUMENT", 400, transient=False),
        id="status-string-bad-request",
    ),
    pytest.param(
        row(status=f"Bad Request: {google_error(429, 'RESOURCE_EXHAUSTED')}"),
        line_error("RESOURCE_EXHAUSTED", 429, transient=True),
        id="status-string-json-code-beats-prefix",
    ),
    pytest.param(
        row(status=f"Service Unavailable: {google_error(503, 'UNAVAILABLE')} trailing words"),
        line_error("UNAVAILABLE", 503, transient=True),
        id="status-string-json-then-trailing-text",
    ),
    pytest.param(
        row(
            status='Error: {"error": {"message": "' + SECRET + '", "status": "DEADLINE_EXCEEDED"}}'
        ),
        line_error("DEADLINE_EXCEEDED", transient=True),
        id="status-string-json-name-only",
    ),
    pytest.param(
        row(status=google_error(500, "INTERNAL")),
        line_error("INTERNAL", 500, transient=True),
        id="status-string-json-only",
    ),
    pytest.param(
        row(status=f"Too Many Requests: {SECRET}"),
        line_error(code=429, transient=True),
        id="prefix-too-many-requests",
    ),
    pytest.param(
        row(status="Service Unavailable"),
        line_error(code=503, transient=True),
        id="prefix-service-unavailable",
    ),
    pytest.param(
        row(status=f"Internal Server Error: {SECRET}"),
        line_error(code=500, transient=True),
        id="prefix-internal-server-error",
    ),
    pytest.param(
        row(status="Gateway Timeout"),
        line_error(code=504, transient=True),
        id="prefix-gateway-timeout",
    ),
    pytest.param(
        row(status="Overloaded"), line_error(code=529, transient=True), id="prefix-overloaded"
    ),
    pytest.param(
        row(status=f"Bad Request: {SECRET} {{not json"),
        line_error(code=400, transient=False),
        id="prefix-bad-request-broken-json",
    ),
    pytest.param(
        row(status=f"429 Too Many Requests: {SECRET}"),
        line_error(code=429, transient=True),
        id="prefix-leading-number",
    ),
    pytest.param(
        row(status=f"UNAVAILABLE: {SECRET}"),
        line_error("UNAVAILABLE", transient=True),
        id="prefix-grpc-name-transient",
    ),
    pytest.param(
        row(status=f"CANCELLED: {SECRET}"),
        line_error("CANCELLED", transient=False),
        id="prefix-grpc-name-permanent",
    ),
    pytest.param(
        row(status=f"rate_limit_error: {SECRET}"),
        line_error("rate_limit_error", 429, transient=True),
        id="prefix-anthropic-error-type",
    ),
    pytest.param(
        row(status=f"{SECRET} happened"),
        line_error(transient=True),
        id="status-string-nothing-parseable-is-retryable",
    ),
    pytest.param(
        row(status="The request timed out before the model answered."),
        line_error("DEADLINE_EXCEEDED", transient=True),
        id="text-timed-out",
    ),
    pytest.param(
        row(status="Worker TIMEOUT while waiting for a slot"),
        line_error("DEADLINE_EXCEEDED", transient=True),
        id="text-timeout-any-case",
    ),
    pytest.param(
        row(status="Deadline exceeded."),
        line_error("DEADLINE_EXCEEDED", transient=True),
        id="text-deadline",
    ),
    pytest.param(
        row(status="Quota exceeded for requests per minute."),
        line_error("RESOURCE_EXHAUSTED", transient=True),
        id="text-quota",
    ),
    pytest.param(
        row(status="Resource has been exhausted (e.g. check quota)."),
        line_error("RESOURCE_EXHAUSTED", transient=True),
        id="text-exhausted",
    ),
    pytest.param(
        row(status="The model is overloaded. Please try again later."),
        line_error("UNAVAILABLE", transient=True),
        id="text-overloaded",
    ),
    pytest.param(
        row(status="The service is currently unavailable."),
        line_error("UNAVAILABLE", transient=True),
        id="text-unavailable",
    ),
    pytest.param(
        row(status="Internal error encountered."),
        line_error("INTERNAL", transient=True),
        id="text-internal",
    ),
    pytest.param(
        row(status="Request contains an invalid argument."),
        line_error("INVALID_ARGUMENT", transient=False),
        id="text-invalid-argument",
    ),
    pytest.param(
        row(status="Permission denied on the model."),
        line_error("PERMISSION_DENIED", transient=False),
        id="text-permission-denied",
    ),
    pytest.param(
        row(status="Requested entity was not found."),
        line_error("NOT_FOUND", transient=False),
        id="text-not-found",
    ),
    pytest.param(
        row(status="Invalid argument: the request timed out"),
        line_error("DEADLINE_EXCEEDED", transient=True),
        id="text-transient-words-win",
    ),
    pytest.param(
        row(status="International characters are fine; nothing else is said"),
        line_error(transient=True),
        id="text-word-inside-another-word-is-not-read",
    ),
    pytest.param(
        row(status="x" * 5000 + " timed out"),
        line_error(transient=True),
        id="text-words-read-only-at-the-start",
    ),
    pytest.param(
        row(status={"code": 0, "message": "The request timed out."}),
        line_error("DEADLINE_EXCEEDED", transient=True),
        id="status-object-message-sentence",
    ),
    pytest.param(
        row(status={"status": "SOMETHING_NEW", "message": SECRET}),
        line_error("SOMETHING_NEW", transient=True),
        id="status-object-unknown-name-is-retryable",
    ),
    pytest.param(
        row(status={"code": 2, "message": SECRET}),
        line_error("UNKNOWN", transient=True),
        id="status-object-grpc-unknown-is-retryable",
    ),
    pytest.param(
        row(status='Bad Request: {"error": {"code": 400, "status": "' + SECRET + ' prose"}}'),
        line_error(code=400, transient=False),
        id="status-name-that-is-prose-is-dropped",
    ),
    pytest.param(
        row(status=f"Bad Request: {json.dumps(envelope('overloaded_error'))}"),
        line_error("overloaded_error", 529, transient=True),
        id="status-string-anthropic-envelope",
    ),
    pytest.param(
        row(status=json.dumps(envelope("rate_limit_error"))),
        line_error("rate_limit_error", 429, transient=True),
        id="status-json-string-anthropic-envelope",
    ),
    pytest.param(
        row(status=envelope("invalid_request_error")),
        line_error("invalid_request_error", 400, transient=False),
        id="status-object-anthropic-envelope",
    ),
    pytest.param(
        row(status={"code": 503, "message": SECRET}),
        line_error(code=503, transient=True),
        id="status-object-int-code",
    ),
    pytest.param(
        row(status={"code": "429", "message": SECRET}),
        line_error(code=429, transient=True),
        id="status-object-numeric-string-code",
    ),
    pytest.param(
        row(status={"code": "UNAVAILABLE", "message": SECRET}),
        line_error("UNAVAILABLE", transient=True),
        id="status-object-grpc-name-in-code",
    ),
    pytest.param(
        row(status={"status": "RESOURCE_EXHAUSTED", "message": SECRET}),
        line_error("RESOURCE_EXHAUSTED", transient=True),
        id="status-object-grpc-name-in-status",
    ),
    pytest.param(
        row(status={"code": 14, "message": SECRET}),
        line_error("UNAVAILABLE", transient=True),
        id="status-object-grpc-number",
    ),
    pytest.param(
        row(status={"code": 3, "status": "INVALID_ARGUMENT", "message": SECRET}),
        line_error("INVALID_ARGUMENT", transient=False),
        id="status-object-grpc-number-and-name",
    ),
    pytest.param(
        row(status={"code": 400, "status": "INVALID_ARGUMENT", "message": SECRET}),
        line_error("INVALID_ARGUMENT", 400, transient=False),
        id="status-object-permanent",
    ),
    pytest.param(
        row(status={"code": 400, "status": "UNAVAILABLE"}),
        line_error("UNAVAILABLE", 400, transient=True),
        id="status-object-transient-name-wins",
    ),
    pytest.param(
        row(status={"message": SECRET}),
        line_error(transient=True),
        id="status-object-message-only-is-retryable",
    ),
    pytest.param(
        row(status={"message": f"Service Unavailable: {SECRET}"}),
        line_error(code=503, transient=True),
        id="status-object-wrapping-status-text",
    ),
    pytest.param(
        row(status={"error": {"code": 500, "message": SECRET, "status": "INTERNAL"}}),
        line_error("INTERNAL", 500, transient=True),
        id="status-object-google-error",
    ),
    pytest.param(row(status=503), line_error(code=503, transient=True), id="status-bare-int"),
    pytest.param(
        row(response=envelope("overloaded_error")),
        line_error("overloaded_error", 529, transient=True),
        id="envelope-in-response",
    ),
    pytest.param(
        row(response=json.dumps(envelope("api_error"))),
        line_error("api_error", 500, transient=True),
        id="envelope-in-response-string",
    ),
    pytest.param(
        row(response={"body": envelope("timeout_error")}),
        line_error("timeout_error", 504, transient=True),
        id="envelope-in-response-body",
    ),
    pytest.param(
        row(response={"body": json.dumps(envelope("not_found_error"))}),
        line_error("not_found_error", 404, transient=False),
        id="envelope-in-response-body-string",
    ),
    pytest.param(
        row(response=json.dumps({"body": json.dumps(envelope("billing_error"))})),
        line_error("billing_error", 402, transient=False),
        id="envelope-in-string-body-string",
    ),
    pytest.param(
        row(response={"error": {"code": 503, "message": SECRET, "status": "UNAVAILABLE"}}),
        line_error("UNAVAILABLE", 503, transient=True),
        id="google-error-in-response",
    ),
    pytest.param(
        row(response=envelope("overloaded_error"), status=f"{SECRET}"),
        line_error("overloaded_error", 529, transient=True),
        id="unparseable-status-falls-back-to-response-envelope",
    ),
    pytest.param(
        row(response=envelope("overloaded_error"), status="Bad Request"),
        line_error(code=400, transient=False),
        id="parseable-status-wins-over-response",
    ),
    pytest.param(
        row(response=claude(), status=f"Bad Request: {google_error(400, 'INVALID_ARGUMENT')}"),
        line_error("INVALID_ARGUMENT", 400, transient=False),
        id="status-fails-even-with-claude-answer",
    ),
    pytest.param(
        row(response=gemini(), status={"code": 429}),
        line_error(code=429, transient=True),
        id="status-fails-even-with-gemini-answer",
    ),
    pytest.param(
        {"request": {"contents": []}},
        line_error("NOT_RUN", transient=True),
        id="never-run",
    ),
    pytest.param(
        {"request": {}, "status": "", "response": {}, "processed_time": None},
        line_error("NOT_RUN", transient=True),
        id="never-run-with-empty-fields",
    ),
    pytest.param({}, line_error("NOT_RUN", transient=True), id="never-run-empty-row"),
    pytest.param(
        row(response={}),
        line_error("NO_RESPONSE", transient=True),
        id="response-empty-object",
    ),
    pytest.param(
        {"status": "", "processed_time": PROCESSED, "response": None},
        line_error("NO_RESPONSE", transient=True),
        id="response-null",
    ),
    pytest.param(row(), line_error("NO_RESPONSE", transient=True), id="response-missing"),
    pytest.param(
        row(response="  "), line_error("NO_RESPONSE", transient=True), id="response-blank"
    ),
    pytest.param(
        row(response={"body": None}),
        line_error("NO_RESPONSE", transient=True),
        id="response-body-null",
    ),
    pytest.param(
        row(response="null"), line_error("NO_RESPONSE", transient=True), id="response-json-null"
    ),
    pytest.param(
        row(response=f"{SECRET} not json"),
        line_error("UNREADABLE_RESPONSE", transient=False),
        id="response-not-json",
    ),
    pytest.param(
        row(response=[1, 2]),
        line_error("UNREADABLE_RESPONSE", transient=False),
        id="response-a-list",
    ),
    pytest.param(
        row(response="[1, 2]"),
        line_error("UNREADABLE_RESPONSE", transient=False),
        id="response-string-a-list",
    ),
]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("line", "expect"), FAILURES)
def test_failure_rows(line: dict[str, Any], expect: Expect, provider: Provider) -> None:
    """Every failure shape gives a LineError with the right code, status and transience."""
    check(classify_row(line, key=KEY, provider=provider), expect)


ANTHROPIC_TYPES = [
    ("rate_limit_error", 429, True),
    ("overloaded_error", 529, True),
    ("api_error", 500, True),
    ("timeout_error", 504, True),
    ("invalid_request_error", 400, False),
    ("authentication_error", 401, False),
    ("permission_error", 403, False),
    ("not_found_error", 404, False),
    ("billing_error", 402, False),
    ("request_too_large", 413, False),
    ("brand_new_error", 0, True),  # unrecognised: retryable (runs bound the attempts)
]


@pytest.mark.parametrize(("kind", "code", "transient"), ANTHROPIC_TYPES)
@pytest.mark.parametrize(
    "where", ["response", "response-string", "status", "status-string", "message"]
)
def test_anthropic_error_types(kind: str, code: int, transient: bool, where: str) -> None:
    """Each Anthropic error type maps to its HTTP code and transience wherever the envelope is."""
    env = envelope(kind)
    if where == "message":
        result = classify_claude_message(env, key=KEY)
    else:
        line = {
            "response": row(response=env),
            "response-string": row(response=json.dumps(env)),
            "status": row(status=env),
            "status-string": row(status=json.dumps(env)),
        }[where]
        result = classify_row(line, key=KEY, provider="anthropic")
    check(result, line_error(kind, code, transient=transient))


# --- Claude answers ---------------------------------------------------------------------------

TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": SECRET}}
THINKING = {"type": "thinking", "thinking": SECRET, "signature": "sig"}

CLAUDE = [
    pytest.param(claude(), Expect(text="Hi!", stop="end_turn"), id="end-turn"),
    pytest.param(
        claude(stop="stop_sequence", stop_sequence="###"),
        Expect(text="Hi!", stop="stop_sequence"),
        id="stop-sequence",
    ),
    pytest.param(
        claude([TOOL_USE], stop="tool_use"), Expect(stop="tool_use"), id="tool-use-without-text"
    ),
    pytest.param(
        claude([{"type": "text", "text": "Let me look."}, TOOL_USE], stop="tool_use"),
        Expect(text="Let me look.", stop="tool_use"),
        id="tool-use-with-text",
    ),
    pytest.param(
        claude([TOOL_USE], stop="end_turn"), Expect(stop="end_turn"), id="end-turn-with-tool-use"
    ),
    pytest.param(
        claude(
            [
                THINKING,
                {"type": "text", "text": "A"},
                {"type": "redacted_thinking", "data": "xx"},
                {"type": "text", "text": "B"},
                {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}},
                {"type": "text", "text": "C"},
            ]
        ),
        Expect(text="ABC", stop="end_turn"),
        id="text-blocks-joined-in-order-without-thinking",
    ),
    pytest.param(
        claude([{"type": "some_future_block", "x": 1}, {"type": "text", "text": "ok"}]),
        Expect(text="ok", stop="end_turn"),
        id="unknown-block-type-ignored",
    ),
    pytest.param(
        claude([THINKING]),
        line_error("EMPTY_RESPONSE", transient=True, stop="end_turn"),
        id="only-thinking-is-empty",
    ),
    pytest.param(
        claude([]),
        line_error("EMPTY_RESPONSE", transient=True, stop="end_turn"),
        id="no-content-is-empty",
    ),
    pytest.param(
        claude([{"type": "text", "text": ""}], stop="stop_sequence"),
        line_error("EMPTY_RESPONSE", transient=True, stop="stop_sequence"),
        id="empty-text-is-empty",
    ),
    pytest.param(
        claude(stop="tool_use") | {"content": None},
        line_error("EMPTY_RESPONSE", transient=True, stop="tool_use"),
        id="null-content-is-empty",
    ),
    pytest.param(
        claude(
            [{"type": "text", "text": f"partial {SECRET}"}],
            stop="refusal",
            stop_details={"type": "refusal", "category": "cyber", "explanation": SECRET},
        ),
        Expect(RefusedError, stop="refusal", refusal=Refusal("cyber", SECRET)),
        id="refusal-with-details-drops-text",
    ),
    pytest.param(
        claude(stop="refusal"),
        Expect(RefusedError, stop="refusal", refusal=Refusal("refusal", "")),
        id="refusal-without-details",
    ),
    pytest.param(
        claude(stop="refusal", stop_details={"type": "refusal", "category": None}),
        Expect(RefusedError, stop="refusal", refusal=Refusal("refusal", "")),
        id="refusal-null-category",
    ),
    pytest.param(
        claude(stop="refusal", stop_details={"category": "some_new_category"}),
        Expect(RefusedError, stop="refusal", refusal=Refusal("some_new_category", "")),
        id="refusal-unknown-category",
    ),
    pytest.param(
        claude([{"type": "text", "text": "half an ans"}], stop="max_tokens"),
        Expect(TruncatedError, text="half an ans", stop="max_tokens"),
        id="max-tokens-keeps-partial-text",
    ),
    pytest.param(
        claude([THINKING], stop="max_tokens"),
        Expect(TruncatedError, stop="max_tokens"),
        id="max-tokens-while-thinking",
    ),
    pytest.param(
        claude(stop="model_context_window_exceeded"),
        Expect(TruncatedError, text="Hi!", stop="model_context_window_exceeded"),
        id="context-window-exceeded",
    ),
    pytest.param(
        claude(stop="pause_turn"),
        line_error("STOP_REASON_pause_turn", transient=False, stop="pause_turn"),
        id="pause-turn-is-not-an-answer",
    ),
    pytest.param(
        claude(stop="brand_new_reason"),
        line_error("STOP_REASON_brand_new_reason", transient=False, stop="brand_new_reason"),
        id="unknown-stop-reason",
    ),
    pytest.param(
        claude(stop=f"{SECRET} words"),
        line_error("STOP_REASON_UNKNOWN", transient=False, stop=f"{SECRET} words"),
        id="unknown-stop-reason-that-is-prose",
    ),
    pytest.param(
        claude(stop=None), line_error("NOT_FINISHED", transient=True), id="stop-reason-null"
    ),
    pytest.param(
        claude(stop=""), line_error("NOT_FINISHED", transient=True), id="stop-reason-empty"
    ),
    pytest.param(
        {k: v for k, v in claude().items() if k != "stop_reason"},
        line_error("NOT_FINISHED", transient=True),
        id="stop-reason-missing",
    ),
]


@pytest.mark.parametrize(("message", "expect"), CLAUDE)
def test_claude_messages(message: dict[str, Any], expect: Expect) -> None:
    """Each stop reason and content mix of a Claude answer gives its outcome, in a row or alone."""
    check(classify_row(row(response=message), key=KEY, provider="anthropic"), expect)
    check(classify_claude_message(message, key=KEY), expect)


@pytest.mark.parametrize(
    "wrap",
    [
        pytest.param(lambda m: m, id="dict"),
        pytest.param(json.dumps, id="json-string"),
        pytest.param(lambda m: {"body": m}, id="body-dict"),
        pytest.param(lambda m: {"body": json.dumps(m)}, id="body-string"),
        pytest.param(lambda m: json.dumps({"body": m}), id="string-with-body"),
    ],
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_success_response_shapes(wrap: Any, provider: Provider) -> None:
    """A usable answer is found whether ``response`` is a dict, a JSON string or has a body."""
    body = claude() if provider == "anthropic" else gemini()
    result = classify_row(row(response=wrap(body)), key=KEY, provider=provider)
    expected = "Hi!" if provider == "anthropic" else "Hello"
    check(result, Expect(text=expected, stop="end_turn" if provider == "anthropic" else "STOP"))
    assert result.response == body


@pytest.mark.parametrize("status", ["", None, {}, {"code": 0, "message": ""}, "   "])
def test_blank_status_is_success(status: Any) -> None:
    """A status that says nothing does not turn an answer into a failure."""
    result = classify_row(row(response=claude(), status=status), key=KEY, provider="anthropic")
    check(result, Expect(text="Hi!", stop="end_turn"))


def test_claude_row_with_echoed_fields() -> None:
    """A Claude row with custom_id, the echoed request and unknown top-level keys is read."""
    line = row(response=claude(), custom_id="k-abc", future_field={"x": 1})
    check(classify_row(line, key=KEY, provider="anthropic"), Expect(text="Hi!", stop="end_turn"))


# --- Gemini answers ---------------------------------------------------------------------------

FUNCTION_CALL = {"functionCall": {"name": "lookup", "args": {"q": SECRET}}}
THOUGHT = {"text": SECRET, "thought": True, "thoughtSignature": "c2ln"}
REFUSING_FINISH_REASONS = [
    "SAFETY",
    "RECITATION",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "LANGUAGE",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_OTHER",
    "NO_IMAGE",
    "IMAGE_RECITATION",
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "MODEL_ARMOR",
    "FINISH_REASON_UNSPECIFIED",
    "A_REASON_FROM_2027",
]

GEMINI = [
    pytest.param(gemini(), Expect(text="Hello", stop="STOP"), id="stop"),
    pytest.param(
        gemini([THOUGHT, {"text": "A"}, {"text": "B", "thought": False}, {"text": "C"}]),
        Expect(text="ABC", stop="STOP"),
        id="text-parts-joined-without-thoughts",
    ),
    pytest.param(gemini([FUNCTION_CALL]), Expect(stop="STOP"), id="function-call-is-an-answer"),
    pytest.param(
        gemini([{"text": "Calling."}, FUNCTION_CALL]),
        Expect(text="Calling.", stop="STOP"),
        id="function-call-with-text",
    ),
    pytest.param(
        gemini([THOUGHT]),
        line_error("EMPTY_RESPONSE", transient=True, stop="STOP"),
        id="only-thoughts-is-empty",
    ),
    pytest.param(
        gemini([]), line_error("EMPTY_RESPONSE", transient=True, stop="STOP"), id="no-parts"
    ),
    pytest.param(
        gemini([{"text": ""}]),
        line_error("EMPTY_RESPONSE", transient=True, stop="STOP"),
        id="empty-text",
    ),
    pytest.param(
        {"candidates": [{"finishReason": "STOP"}]},
        line_error("EMPTY_RESPONSE", transient=True, stop="STOP"),
        id="no-content",
    ),
    pytest.param(
        gemini([{"text": "half an ans"}], finish="MAX_TOKENS"),
        Expect(TruncatedError, text="half an ans", stop="MAX_TOKENS"),
        id="max-tokens-keeps-partial-text",
    ),
    pytest.param(
        gemini([THOUGHT], finish="MAX_TOKENS"),
        Expect(TruncatedError, stop="MAX_TOKENS"),
        id="max-tokens-while-thinking",
    ),
    pytest.param(
        gemini(finish=None), line_error("NOT_FINISHED", transient=True), id="finish-missing"
    ),
    pytest.param(gemini(finish=""), line_error("NOT_FINISHED", transient=True), id="finish-empty"),
    pytest.param(gemini(finish=1), Expect(text="Hello", stop="STOP"), id="finish-as-number"),
    pytest.param(
        gemini([{"text": f"unsafe {SECRET}"}], finish="SAFETY", usageMetadata={}),
        Expect(RefusedError, stop="SAFETY", refusal=Refusal("SAFETY", "")),
        id="safety-drops-text",
    ),
    pytest.param(
        {"candidates": [gemini_candidate(finish="RECITATION", finishMessage=SECRET)]},
        Expect(RefusedError, stop="RECITATION", refusal=Refusal("RECITATION", SECRET)),
        id="finish-message-is-the-detail",
    ),
    pytest.param(
        {
            "promptFeedback": {
                "blockReason": "PROHIBITED_CONTENT",
                "blockReasonMessage": SECRET,
                "safetyRatings": [],
            },
            "usageMetadata": {"promptTokenCount": 9},
        },
        Expect(
            RefusedError, stop="PROHIBITED_CONTENT", refusal=Refusal("PROHIBITED_CONTENT", SECRET)
        ),
        id="blocked-prompt",
    ),
    pytest.param(
        {"promptFeedback": {"blockReason": "JAILBREAK"}},
        Expect(RefusedError, stop="JAILBREAK", refusal=Refusal("JAILBREAK", "")),
        id="blocked-prompt-without-message",
    ),
    pytest.param(
        {"promptFeedback": {"blockReason": "A_BLOCK_FROM_2027"}, "candidates": []},
        Expect(RefusedError, stop="A_BLOCK_FROM_2027", refusal=Refusal("A_BLOCK_FROM_2027", "")),
        id="unknown-block-reason",
    ),
    pytest.param(
        gemini(promptFeedback={"blockReason": "SAFETY"}),
        Expect(RefusedError, stop="SAFETY", refusal=Refusal("SAFETY", "")),
        id="block-beats-candidates",
    ),
    pytest.param(
        gemini(promptFeedback={"safetyRatings": [{"category": "X", "probability": "LOW"}]}),
        Expect(text="Hello", stop="STOP"),
        id="feedback-without-block",
    ),
    pytest.param(
        gemini(promptFeedback={"blockReason": ""}),
        Expect(text="Hello", stop="STOP"),
        id="empty-block-reason",
    ),
    pytest.param(
        {"usageMetadata": {"promptTokenCount": 3}},
        line_error("NO_CANDIDATES", transient=True),
        id="no-candidates",
    ),
    pytest.param(
        {"candidates": [], "modelVersion": "m"},
        line_error("NO_CANDIDATES", transient=True),
        id="empty-candidates",
    ),
    pytest.param(
        {"candidates": ["not an object"]},
        line_error("NOT_FINISHED", transient=True),
        id="candidate-not-an-object",
    ),
    pytest.param(
        {
            "candidates": [
                {"content": {"parts": [{"text": "snake"}]}, "finish_reason": "STOP"},
            ],
            "usage_metadata": {"prompt_token_count": 1},
        },
        Expect(text="snake", stop="STOP"),
        id="snake-case",
    ),
    pytest.param(
        {
            "candidates": [{"content": {"parts": [{"function_call": {"name": "f"}}]}}],
        },
        line_error("NOT_FINISHED", transient=True),
        id="snake-case-function-call-unfinished",
    ),
    pytest.param(
        {
            "candidates": [
                {"content": {"parts": [{"function_call": {"name": "f"}}]}, "finish_reason": "STOP"}
            ],
        },
        Expect(stop="STOP"),
        id="snake-case-function-call",
    ),
    pytest.param(
        {"prompt_feedback": {"block_reason": "SAFETY", "block_reason_message": SECRET}},
        Expect(RefusedError, stop="SAFETY", refusal=Refusal("SAFETY", SECRET)),
        id="snake-case-block",
    ),
    pytest.param(
        {"candidates": [{"finish_reason": "SAFETY", "finish_message": SECRET}]},
        Expect(RefusedError, stop="SAFETY", refusal=Refusal("SAFETY", SECRET)),
        id="snake-case-refusal",
    ),
] + [
    pytest.param(
        gemini(finish=reason),
        Expect(RefusedError, stop=reason, refusal=Refusal(reason, "")),
        id=f"refused-{reason}",
    )
    for reason in REFUSING_FINISH_REASONS
]


@pytest.mark.parametrize(("response", "expect"), GEMINI)
def test_gemini_responses(response: dict[str, Any], expect: Expect) -> None:
    """Each block, finish reason and part mix of a Gemini answer gives its outcome."""
    check(classify_row(row(response=response), key=KEY, provider="google"), expect)
    check(classify_gemini_response(response, key=KEY), expect)


def test_gemini_enum_members_are_read_as_their_values() -> None:
    """A python-mode google-genai dump (enum members, not strings) classifies like JSON."""
    response = gemini(finish=genai_types.FinishReason.MAX_TOKENS)
    check(
        classify_gemini_response(response, key=KEY),
        Expect(TruncatedError, text="Hello", stop="MAX_TOKENS"),
    )


# --- usage ------------------------------------------------------------------------------------

USAGE = [
    pytest.param(
        claude(
            usage={
                "input_tokens": 10,
                "output_tokens": 3,
                "cache_read_input_tokens": 5,
                "cache_creation_input_tokens": 7,
                "service_tier": "batch",
            }
        ),
        "anthropic",
        Usage(input=10, output=3, cache_read=5, cache_write=7),
        id="claude-with-cache",
    ),
    pytest.param(
        claude(
            usage={
                "input_tokens": 10,
                "output_tokens": 3,
                "cache_read_input_tokens": None,
                "cache_creation_input_tokens": None,
            }
        ),
        "anthropic",
        Usage(input=10, output=3),
        id="claude-null-cache",
    ),
    pytest.param(claude(usage=None), "anthropic", Usage(), id="claude-null-usage"),
    pytest.param(
        claude(stop="refusal", usage={"input_tokens": 4, "output_tokens": 1}),
        "anthropic",
        Usage(input=4, output=1),
        id="claude-refusal-keeps-usage",
    ),
    pytest.param(
        claude(stop="max_tokens", usage={"input_tokens": "4", "output_tokens": 8.0}),
        "anthropic",
        Usage(input=4, output=8),
        id="claude-numeric-strings-and-floats",
    ),
    pytest.param(
        claude(usage={"input_tokens": True, "output_tokens": "many"}),
        "anthropic",
        Usage(),
        id="claude-nonsense-counts-are-zero",
    ),
    pytest.param(
        gemini(
            usageMetadata={
                "promptTokenCount": 14,
                "candidatesTokenCount": 17,
                "thoughtsTokenCount": 346,
                "toolUsePromptTokenCount": 41,
                "cachedContentTokenCount": 4,
                "totalTokenCount": 422,
                "trafficType": "ON_DEMAND",
            }
        ),
        "google",
        Usage(input=14 + 41, output=17 + 346, cache_read=4),
        id="gemini-thoughts-tools-cache",
    ),
    pytest.param(
        gemini(usageMetadata={"promptTokenCount": 14}),
        "google",
        Usage(input=14),
        id="gemini-zero-counts-omitted",
    ),
    pytest.param(gemini(usageMetadata=None), "google", Usage(), id="gemini-no-usage"),
    pytest.param(
        {
            "candidates": [{"content": {"parts": [{"text": "x"}]}, "finish_reason": "STOP"}],
            "usage_metadata": {
                "prompt_token_count": 2,
                "candidates_token_count": 3,
                "thoughts_token_count": 5,
                "tool_use_prompt_token_count": 7,
                "cached_content_token_count": 1,
            },
        },
        "google",
        Usage(input=9, output=8, cache_read=1),
        id="gemini-snake-case",
    ),
    pytest.param(
        {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}},
        "google",
        Usage(input=9),
        id="gemini-block-keeps-usage",
    ),
    pytest.param(
        {"usageMetadata": {"promptTokenCount": 6}},
        "google",
        Usage(input=6),
        id="gemini-no-candidates-keeps-usage",
    ),
]


@pytest.mark.parametrize(("response", "provider", "usage"), USAGE)
def test_usage(response: dict[str, Any], provider: Provider, usage: Usage) -> None:
    """Token counts follow the online clients: Gemini input has cache and tools, output thoughts."""
    assert classify_row(row(response=response), key=KEY, provider=provider).usage == usage


def test_failed_line_has_zero_usage() -> None:
    """A per-line failure reports no tokens."""
    line = row(status=f"Bad Request: {google_error(400, 'INVALID_ARGUMENT')}")
    assert classify_row(line, key=KEY, provider="google").usage == Usage()


# --- properties over every table --------------------------------------------------------------


def _all_rows() -> list[Any]:
    rows: list[Any] = []
    for provider in PROVIDERS:
        rows += [pytest.param(p.values[0], provider, id=f"{provider}-{p.id}") for p in FAILURES]
    rows += [pytest.param(row(response=p.values[0]), "anthropic", id=p.id) for p in CLAUDE]
    rows += [pytest.param(row(response=p.values[0]), "google", id=p.id) for p in GEMINI]
    rows += [pytest.param(row(response=p.values[0]), p.values[1], id=p.id) for p in USAGE]
    return rows


ALL_ROWS = _all_rows()
# The rows of the tables whose expected Result carries an error.
ERROR_ROWS = [
    *(pytest.param(p.values[0], v, id=f"{v}-{p.id}") for v in PROVIDERS for p in FAILURES),
    *(
        pytest.param(row(response=p.values[0]), "anthropic", id=p.id)
        for p in CLAUDE
        if p.values[1].error
    ),
    *(
        pytest.param(row(response=p.values[0]), "google", id=p.id)
        for p in GEMINI
        if p.values[1].error
    ),
]


@pytest.mark.parametrize(("line", "provider"), ALL_ROWS)
def test_input_is_not_mutated(line: dict[str, Any], provider: Provider) -> None:
    """Classifying a row leaves the row exactly as it was."""
    before = copy.deepcopy(line)
    classify_row(line, key=KEY, provider=provider)
    assert line == before


@pytest.mark.parametrize(("line", "provider"), ERROR_ROWS)
def test_no_provider_text_in_errors(line: dict[str, Any], provider: Provider) -> None:
    """No provider message, explanation or content reaches an error, and errors pickle."""
    error = classify_row(line, key=KEY, provider=provider).error
    assert error is not None
    for text in (str(error), repr(error), repr(error.__dict__)):
        assert SECRET not in text
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error)
    assert again.__dict__ == error.__dict__
    assert str(again) == str(error)


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(claude(), id="claude-answer"),
        pytest.param(claude(stop="refusal"), id="claude-refusal"),
        pytest.param(claude(stop="max_tokens"), id="claude-truncation"),
        pytest.param(claude([]), id="claude-empty"),
        pytest.param(envelope("api_error"), id="claude-error-envelope"),
    ],
)
def test_claude_result_keeps_response(response: dict[str, Any]) -> None:
    """Result.response is the row's own response object, also on refusals and errors."""
    result = classify_row(row(response=response), key=KEY, provider="anthropic")
    assert result.response is response


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(gemini(), id="gemini-answer"),
        pytest.param(gemini(finish="SAFETY"), id="gemini-refusal"),
        pytest.param({"promptFeedback": {"blockReason": "SAFETY"}}, id="gemini-block"),
        pytest.param(gemini(finish="MAX_TOKENS"), id="gemini-truncation"),
        pytest.param({"candidates": []}, id="gemini-no-candidates"),
    ],
)
def test_gemini_result_keeps_response(response: dict[str, Any]) -> None:
    """Result.response is the row's own response object, also on refusals and truncations."""
    result = classify_row(row(response=response), key=KEY, provider="google")
    assert result.response is response


def test_never_run_row_has_no_response() -> None:
    """A line that never ran carries no response."""
    assert classify_row({"request": {}}, key=KEY, provider="google").response is None


# --- agreement with the SDK types -------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(gemini(), id="plain"),
        pytest.param(
            gemini([{"text": "plan", "thought": True}, {"text": "Hello, "}, {"text": "world"}])
            | {"createTime": "2025-08-14T16:29:54.240111Z"},
            id="thoughts-and-several-parts",
        ),
        pytest.param(
            {
                "candidates": [
                    {
                        "content": {"parts": [{"text": "snake"}], "role": "model"},
                        "finish_reason": "STOP",
                    }
                ],
                "usage_metadata": {"prompt_token_count": 3, "thoughts_token_count": 2},
            },
            id="snake-case",
        ),
    ],
)
def test_text_agrees_with_google_genai(response: dict[str, Any]) -> None:
    """Our text equals google-genai's ``GenerateContentResponse.text`` for a normal answer."""
    sdk = genai_types.GenerateContentResponse.model_validate(copy.deepcopy(response))
    ours = classify_gemini_response(response, key=KEY)
    assert ours.ok
    assert ours.text == sdk.text


# --- helpers and constants --------------------------------------------------------------------


def test_transient_codes() -> None:
    """The transient codes are the Google retry set plus Anthropic's 529."""
    assert frozenset({408, 429, 500, 502, 503, 504, 529}) == TRANSIENT_HTTP


@pytest.mark.parametrize(
    ("code", "status", "transient"),
    [
        (429, "", True),
        (529, "", True),
        (400, "", False),
        (0, "", True),  # says nothing: unrecognised, retryable
        (0, "SOMETHING_NEW", True),  # a name nobody knows: unrecognised, retryable
        (418, "", False),  # an explicit permanent code
        (0, "RESOURCE_EXHAUSTED", True),
        (0, "UNAVAILABLE", True),
        (0, "DEADLINE_EXCEEDED", True),
        (0, "INTERNAL", True),
        (0, "ABORTED", True),
        (0, "UNKNOWN", True),
        (0, "CANCELLED", False),
        (0, "INVALID_ARGUMENT", False),
        (0, "overloaded_error", True),
        (0, "invalid_request_error", False),
        (409, "ABORTED", True),
    ],
)
def test_line_error_for_derives_transience(code: int, status: str, transient: bool) -> None:
    """Without an explicit flag, a line error is transient by its code or its status name."""
    error = line_error_for(KEY, code=code, status=status)
    assert (error.key, error.code, error.status, error.transient) == (KEY, code, status, transient)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"code": 429, "status": "RESOURCE_EXHAUSTED"},
            "line failed with HTTP 429 RESOURCE_EXHAUSTED",
        ),
        ({"code": 503, "status": ""}, "line failed with HTTP 503"),
        ({"code": 0, "status": "UNAVAILABLE"}, "line failed with status UNAVAILABLE"),
        ({"code": 0, "status": ""}, "line failed without a status code"),
        (
            {"code": 0, "status": "EMPTY_RESPONSE", "message_kind": "unusable"},
            "provider returned no usable answer (EMPTY_RESPONSE)",
        ),
        ({"code": 0, "status": "NOT_RUN", "message_kind": "not_run"}, "line was not run"),
    ],
)
def test_line_error_messages(kwargs: dict[str, Any], message: str) -> None:
    """Messages are built from the code and status name only."""
    assert str(line_error_for(KEY, **kwargs)) == message


def test_line_error_for_explicit_transience_wins() -> None:
    """An explicit transient flag overrides what the code would say."""
    assert line_error_for(KEY, code=429, status="", transient=False).transient is False
    assert line_error_for(KEY, code=0, status="X", transient=True).transient is True


def test_unknown_provider_is_rejected() -> None:
    """A provider other than anthropic or google is a caller error, not a line outcome."""
    with pytest.raises(InvalidRequestError) as info:
        classify_row(row(response=claude()), key=KEY, provider="openai")  # type: ignore[arg-type]
    assert info.value.field == "provider"
