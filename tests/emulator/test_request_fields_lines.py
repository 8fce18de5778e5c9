"""The local model refuses, line by line, a request field the provider would refuse as unknown,
in the provider's own words and in the row shapes the local Vertex writes for failed rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import CLAUDE, GEMINI
from tests.lab import Lab
from vertexbatch.emulator import JobOptions, LocalStack


def _status_body(row: dict[str, Any]) -> dict[str, Any]:
    """The JSON tail of a ``"Bad Request: {json}"`` status."""
    prefix, _, tail = row["status"].partition(": ")
    assert prefix == "Bad Request"
    return json.loads(tail)["error"]


def _by_id(rows: list[dict[str, Any]], field: str) -> dict[str, dict[str, Any]]:
    return {row[field]: row for row in rows}


def test_a_misspelt_claude_parameter_fails_its_row_only(lab: Lab) -> None:
    """Anthropic's invalid_request_error message, in the default status shape; no response."""
    lines = [
        lab.claude_line("First", key="a"),
        lab.claude_line("Second", key="typo", temprature=0.2),
        lab.claude_line("Third", key="c"),
    ]
    job, rows = lab.run(lines, model=lab.CLAUDE)
    assert job["completionStats"] == {"successfulCount": "2", "failedCount": "1"}
    rows_by_id = _by_id(rows, "custom_id")
    failed = rows_by_id["typo"]
    assert "response" not in failed
    assert _status_body(failed) == {
        "code": 400,
        "message": "temprature: Extra inputs are not permitted",
        "status": "INVALID_ARGUMENT",
    }
    assert rows_by_id["a"]["status"] == "" and rows_by_id["a"]["response"]["content"]


def test_a_nested_unknown_claude_field_in_the_error_envelope_shape(
    lab: Lab, stack: LocalStack
) -> None:
    """The Anthropic error object itself: {"type": "error", "error": {"type":
    "invalid_request_error", "message": "messages.0.content.0.text.txt: ..."}}."""
    stack.set_job_options(JobOptions(claude_error_shape="error_envelope"))
    line = lab.claude_line("x", key="typo")
    line["request"]["messages"] = [{"role": "user", "content": [{"type": "text", "txt": "Hi"}]}]
    _, rows = lab.run([line], model=lab.CLAUDE)
    assert rows[0]["status"] == "Bad Request"
    assert rows[0]["response"] == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "messages.0.content.0.text.txt: Extra inputs are not permitted",
        },
    }


def test_an_unknown_gemini_field_fails_its_row_with_googles_message(lab: Lab) -> None:
    """400 INVALID_ARGUMENT, "Invalid JSON payload received. Unknown name ... at '<proto
    path>': Cannot find field.", in the status string; the other row is answered."""
    good = lab.gemini_line("Classify", key="a")
    bad = lab.gemini_line("Classify", key="typo", generationConfig={"temprature": 0.2})
    job, rows = lab.run([good, bad])
    assert job["completionStats"] == {"successfulCount": "1", "failedCount": "1"}
    failed = next(row for row in rows if row["status"])
    assert "response" not in failed
    assert _status_body(failed) == {
        "code": 400,
        "message": 'Invalid JSON payload received. Unknown name "temprature" at '
        "'generation_config': Cannot find field.",
        "status": "INVALID_ARGUMENT",
    }


def test_snake_case_gemini_requests_are_taken(lab: Lab) -> None:
    """Google's JSON parser takes proto names as well as JSON names: so does the stack."""
    line = lab.gemini_line(
        "Classify",
        system_instruction={"parts": [{"text": "Be brief"}]},
        generation_config={"max_output_tokens": 64, "temperature": 0.2},
    )
    _, rows = lab.run([line])
    assert rows[0]["status"] == "" and rows[0]["response"]["candidates"]


@pytest.mark.parametrize("model", [Lab.CLAUDE, Lab.GEMINI])
def test_check_fields_off_takes_any_field(lab: Lab, stack: LocalStack, model: str) -> None:
    """JobOptions(check_fields=False): a field the installed SDK does not know is answered."""
    stack.set_job_options(JobOptions(check_fields=False))
    if model == Lab.CLAUDE:
        line = lab.claude_line("Hi", brand_new_knob=1)
    else:
        line = lab.gemini_line("Hi", brandNewKnob=1)
    _, rows = lab.run([line], model=model)
    assert rows[0]["status"] == "" and rows[0]["response"]


def test_online_calls_refuse_an_unknown_field_too(lab: Lab) -> None:
    """rawPredict and generateContent answer the same 400, as the providers do online."""
    base = f"/v1/projects/{lab.stack.project}/locations/{lab.stack.location}/publishers"
    claude = lab.claude_line("Hi", temprature=0.2)["request"]
    status, body = lab.raw("POST", f"{base}/anthropic/models/{CLAUDE}:rawPredict", claude)
    assert (status, body["error"]["message"]) == (
        400,
        "temprature: Extra inputs are not permitted",
    )
    gemini = lab.gemini_line("Hi", temprature=0.2)["request"]
    status, body = lab.raw("POST", f"{base}/google/models/{GEMINI}:generateContent", gemini)
    assert status == 400
    assert body["error"] == {
        "code": 400,
        "message": 'Invalid JSON payload received. Unknown name "temprature": Cannot find field.',
        "status": "INVALID_ARGUMENT",
    }
