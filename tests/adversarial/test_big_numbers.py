"""JSON numbers of any size in a ``schema=`` answer: validated exactly, never overflowing a float.

Issue 38, item 7: an answer holding a 400-digit integer came back failed/MALFORMED_ROW (a float
conversion in the schema checks overflowed), and ``failed`` is never retried. The stack tests
run real jobs and make their output rows hold a 400-digit integer, as a model may write one; the
pure tests hand answers straight to ``parsed_result``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import FINAL_OUTPUT, claude_request
from vertexbatch._schemas.check import schema_of, validate
from vertexbatch._schemas.parsed import parsed_result
from vertexbatch._values import Result
from vertexbatch.emulator import LocalStack

CLAUDE = "claude-opus-5-5@default"
GEMINI = "gemini-3.8-flash"
HUGE = 10**400
LARGE = int(sys.float_info.max)  # the largest bound a schema may hold (a 64-bit float)


def _schema(kind: str, **bounds: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"n": {"type": kind, **bounds}},
        "required": ["n"],
    }


def _with_huge_answer(row: dict[str, Any]) -> dict[str, Any]:
    """The output row with its answer's ``n`` made HUGE (Claude's tool input, Gemini's text)."""
    if "response" in row and "content" in row["response"]:
        for block in row["response"]["content"]:
            if block.get("type") == "tool_use":
                block["input"] = {"n": HUGE}
    else:
        for part in row["response"]["candidates"][0]["content"]["parts"]:
            if "text" in part and not part.get("thought"):
                part["text"] = json.dumps({"n": HUGE})
    return row


@pytest.mark.parametrize("kind", ["integer", "number"])
@pytest.mark.parametrize("provider", ["claude", "gemini"])
def test_a_400_digit_integer_answer_is_parsed(
    client: vb.Client, stack: LocalStack, bucket: str, provider: str, kind: str
) -> None:
    """An answer holding a 400-digit integer (Gemini's text, Claude's forced tool input), as a
    model may write one, is ok and parsed exactly: the job's output row is made to hold it."""
    schema = _schema(kind, minimum=0)
    if provider == "claude":
        job = client.submit_claude(
            f"big-{kind}", CLAUDE, [claude_request("k", "Count.")], schema=schema
        )
    else:
        job = client.submit_gemini(
            f"big-{kind}", GEMINI, [vb.GeminiRequest("k", "Count.")], schema=schema
        )
    directory = stack.wait_job(job.name)["outputInfo"]["gcsOutputDirectory"]
    blob = (
        stack.storage_client()
        .bucket(bucket)
        .blob(f"{directory.removeprefix(f'gs://{bucket}/')}/{FINAL_OUTPUT}")
    )
    rows = [_with_huge_answer(json.loads(line)) for line in blob.download_as_bytes().splitlines()]
    blob.upload_from_string(b"".join(json.dumps(row).encode() + b"\n" for row in rows))
    (result,) = client.results(job)
    assert (result.outcome, result.error) == ("ok", None)
    assert result.parsed == {"n": HUGE} and type(result.parsed["n"]) is int
    assert str(HUGE) in result.text


def _answer(text: str) -> Result:
    return Result(key="k", text=text, stop="STOP", response={})


# (answer text, bounds of "n", kind, the rule broken or None)
CASES = [
    ('{"n": 1e400}', {}, "number", None),
    ('{"n": 1e400}', {}, "integer", None),  # every number past a float's range is whole
    ('{"n": -1e400}', {"maximum": 0}, "number", None),
    ('{"n": 1.5e400}', {"minimum": LARGE}, "integer", None),
    ('{"n": 1e400}', {"maximum": LARGE}, "number", "maximum"),
    ('{"n": 1e300}', {"minimum": LARGE}, "number", "minimum"),
    (f'{{"n": {LARGE}}}', {"maximum": LARGE}, "number", None),  # exactly equal
    (f'{{"n": {HUGE}}}', {"maximum": 1e308}, "integer", "maximum"),
    (f'{{"n": {HUGE}}}', {"minimum": 1e308}, "integer", None),
    (f'{{"n": {-HUGE}}}', {"minimum": -1e308}, "number", "minimum"),
    (f'{{"n": {LARGE + 1}}}', {"maximum": LARGE}, "integer", "maximum"),
    (f'{{"n": {LARGE}.0}}', {"maximum": LARGE}, "integer", None),
    (f'{{"n": {LARGE}e-1}}', {"maximum": LARGE}, "integer", None),
    ('{"n": 1e4000}', {"maximum": LARGE}, "number", "maximum"),
    ('{"n": ' + "9" * 5000 + "}", {"maximum": LARGE}, "integer", "maximum"),
    ('{"n": -' + "9" * 5000 + "}", {}, "integer", None),
    ('{"n": 1e300}', {"maximum": LARGE}, "integer", None),
    ('{"n": 2.5}', {"maximum": LARGE}, "integer", "type"),
]


@pytest.mark.parametrize(("text", "bounds", "kind", "rule"), CASES, ids=range(len(CASES)))
def test_huge_numbers_validate_exactly(
    text: str, bounds: dict[str, Any], kind: str, rule: str | None
) -> None:
    """Numbers beyond a float's range in the answer, and bounds up to a float's largest, meet
    type, minimum and maximum as the exact numbers they are: no overflow, no MALFORMED_ROW."""
    result = parsed_result(_answer(text), schema_of(_schema(kind, **bounds)))  # type: ignore[arg-type]
    if rule is None:
        assert result.error is None, result.error
        assert result.parsed is not None and isinstance(result.parsed["n"], int | float)
    else:
        assert isinstance(result.error, vb.SchemaError)
        assert (result.error.rule, result.error.place) == (rule, "$.n")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("-1.5e400", -15 * 10**399),
        ("1e400", 10**400),
        (f"{HUGE}.0", HUGE),
        (f"{HUGE}", HUGE),
        ("1e4000", 10**4000),
        ("1e99999999", float("inf")),  # too long for an int's text: as json reads it
        (f"{HUGE}.5", float("inf")),  # not whole: as json reads it
        ("9" * 5000, float("inf")),
        ("-" + "9" * 5000, float("-inf")),
        ("2.5", 2.5),
    ],
    ids=range(10),
)
def test_a_number_past_a_float_is_read_as_its_exact_integer(text: str, value: object) -> None:
    """A whole number past a float's range in an answer's text is parsed as the exact integer
    it is; past an int's text limit, or not whole, it is an infinity, as json reads it."""
    result = parsed_result(_answer(f'{{"n": {text}}}'), schema_of(_schema("number")))  # type: ignore[arg-type]
    assert result.error is None, result.error
    assert result.parsed == {"n": value} and type(result.parsed["n"]) is type(value)


def test_a_claude_tool_input_number_past_a_float_is_a_number() -> None:
    """An out-of-range number in Claude's tool input arrives as an infinity (json's reading of
    the line): it is a number (and whole), checked against bounds as one, never a crash."""
    schema = _schema("integer", minimum=0)["properties"]["n"]
    assert validate(float("inf"), schema) is None
    found = validate(float("-inf"), schema)
    assert found is not None and found.rule == "minimum"
    assert validate(float("nan"), schema) is not None


@pytest.mark.parametrize("bound", [HUGE, -HUGE, 10**4000], ids=["huge", "-huge", "4001-digits"])
def test_a_schema_with_a_huge_bound_is_refused_clearly(bound: int) -> None:
    """A minimum or maximum past a float's range (no provider's schema number can hold it) is a
    clear InvalidRequestError naming the place (it was a bare OverflowError)."""
    for word in ("minimum", "maximum"):
        with pytest.raises(vb.InvalidRequestError, match=word):
            schema_of(_schema("integer", **{word: bound}))


@pytest.mark.parametrize("word", ["minimum", "maximum", "const", "enum"])
def test_a_schema_number_too_long_to_write_is_refused_clearly(word: str) -> None:
    """A number in a schema with more digits than Python writes as text (4,300) is a clear
    InvalidRequestError naming the place, never a bare ValueError."""
    value: Any = 10**5000
    with pytest.raises(vb.InvalidRequestError) as raised:
        schema_of(_schema("integer", **{word: [value] if word == "enum" else value}))
    assert f"schema.properties.n.{word}" in str(raised.value)
