"""Output row formatting (pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from vertexbatch.emulator import JobOptions
from vertexbatch.emulator._errors import LineFailure
from vertexbatch.emulator._model import Answer
from vertexbatch.emulator._rows import format_row, processed_time


@pytest.mark.parametrize(
    ("micros", "expected"),
    [
        (123456, "2026-08-14T16:29:54.123+00:00"),
        (110000, "2026-08-14T16:29:54.11+00:00"),
        (100999, "2026-08-14T16:29:54.1+00:00"),
        (999, "2026-08-14T16:29:54+00:00"),
    ],
)
def test_processed_time(micros: int, expected: str) -> None:
    """Milliseconds with trailing zeros trimmed and a +00:00 offset, parseable by fromisoformat."""
    moment = datetime(2026, 8, 14, 16, 29, 54, micros, tzinfo=UTC)
    assert processed_time(moment) == expected
    assert datetime.fromisoformat(expected).tzinfo is not None


MOMENT = datetime(2026, 1, 1, tzinfo=UTC)
LINE = {"custom_id": "c1", "request": {"labels": {"k": "v"}, "contents": []}, "extra": None}


def test_success_row_keeps_siblings_and_orders_keys() -> None:
    """status, processed_time, siblings, request, response — in that order."""
    row = format_row(
        provider="google",
        line=LINE,
        answer=Answer(response={"candidates": []}),
        moment=MOMENT,
        options=JobOptions(),
    )
    assert row is not None
    assert list(row) == ["status", "processed_time", "custom_id", "extra", "request", "response"]
    assert row["request"] == LINE["request"] and row["status"] == ""


def test_gemini_error_shape_is_its_own() -> None:
    """A Gemini per-line error follows gemini_error_shape, never the Claude shape option; a
    directive's shape applies when Gemini rows can take it (not the Anthropic envelope)."""
    row = format_row(
        provider="google",
        line=LINE,
        answer=Answer(error=LineFailure(400, "bad", shape="error_envelope")),
        moment=MOMENT,
        options=JobOptions(claude_error_shape="error_envelope"),
    )
    assert row is not None and "response" not in row
    prefix, _, body = row["status"].partition(": ")
    assert prefix == "Bad Request"
    assert json.loads(body) == {
        "error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}
    }
    by_option = format_row(
        provider="google",
        line=LINE,
        answer=Answer(error=LineFailure(504, "Deadline exceeded.")),
        moment=MOMENT,
        options=JobOptions(gemini_error_shape="status_object"),
    )
    assert by_option is not None and by_option["status"] == {
        "code": 504,
        "message": "Deadline exceeded.",
    }
    by_directive = format_row(
        provider="google",
        line=LINE,
        answer=Answer(error=LineFailure(504, "Deadline exceeded.", shape="status_text")),
        moment=MOMENT,
        options=JobOptions(),
    )
    assert by_directive is not None and "response" not in by_directive
    assert by_directive["status"] == "The request timed out before the model answered."


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_status_text_is_a_sentence_without_json_or_code(provider: str) -> None:
    """The status_text shape writes a plain sentence: no JSON, no number; `text` replaces it."""
    options = JobOptions(claude_error_shape="status_text", gemini_error_shape="status_text")
    for code in (400, 403, 404, 429, 500, 503, 504, 529, 418):
        row = format_row(
            provider=provider,  # type: ignore[arg-type]
            line=LINE,
            answer=Answer(error=LineFailure(code, "message")),
            moment=MOMENT,
            options=options,
        )
        assert row is not None and "response" not in row
        status = row["status"]
        assert isinstance(status, str) and status.endswith(".")
        assert "{" not in status and not any(c.isdigit() for c in status)
    custom = format_row(
        provider=provider,  # type: ignore[arg-type]
        line=LINE,
        answer=Answer(error=LineFailure(503, "m", text="Something odd happened")),
        moment=MOMENT,
        options=options,
    )
    assert custom is not None and custom["status"] == "Something odd happened"


def test_dropped_rows_and_echo_labels() -> None:
    """A dropped answer has no row; echo_labels=False strips only Gemini request labels."""
    assert (
        format_row(
            provider="google",
            line=LINE,
            answer=Answer(dropped=True),
            moment=MOMENT,
            options=JobOptions(),
        )
        is None
    )
    options = JobOptions(echo_labels=False)
    gemini = format_row(
        provider="google", line=LINE, answer=Answer(response={}), moment=MOMENT, options=options
    )
    claude = format_row(
        provider="anthropic", line=LINE, answer=Answer(response={}), moment=MOMENT, options=options
    )
    assert gemini is not None and "labels" not in gemini["request"]
    assert claude is not None and "labels" in claude["request"]


def test_options_are_validated() -> None:
    """Unknown shapes are refused when the options are built."""
    with pytest.raises(ValueError):
        JobOptions(claude_success_shape="xml")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        JobOptions(claude_error_shape="xml")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        JobOptions(gemini_error_shape="error_envelope")  # type: ignore[arg-type]


def test_rows_without_siblings_and_with_a_string_echo() -> None:
    """echo_siblings=False drops custom_id and every other sibling; request_echo="string" writes
    the echoed request as a JSON string."""
    options = JobOptions(echo_siblings=False, request_echo="string")
    for provider in ("anthropic", "google"):
        row = format_row(
            provider=provider,
            line=LINE,
            answer=Answer(response={"x": 1}),
            moment=MOMENT,
            options=options,
        )
        assert row is not None
        assert list(row) == ["status", "processed_time", "request", "response"]
        assert isinstance(row["request"], str) and json.loads(row["request"]) == LINE["request"]
    with pytest.raises(ValueError):
        JobOptions(request_echo="xml")  # type: ignore[arg-type]
