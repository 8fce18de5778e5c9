"""The schema's pure parts, table-tested: checking, each provider's form, the classifier."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pydantic
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import vertexbatch as vb
from tests.helpers import examples
from vertexbatch._requests.lines import claude_line, gemini_line
from vertexbatch._rows.classify import classify_row
from vertexbatch._schemas.check import schema_of, validate
from vertexbatch._schemas.forms import SCHEMA_TOOL, gemini_schema
from vertexbatch._schemas.parsed import parsed_result
from vertexbatch.emulator._conform import breaking, conforming


class Item(pydantic.BaseModel):
    name: str
    price: float


class Order(pydantic.BaseModel):
    items: list[Item]
    note: str | None = None


OBJ = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("a string", "must be a pydantic model class or a JSON schema"),
        (int, "must be a pydantic model class"),
        ({"type": "string"}, "must describe an object"),
        ({"type": "object", "properties": {"a": {"oneOf": []}}}, "'oneOf'"),
        ({"type": "object", "properties": {"a": {"type": "date"}}}, "type must be one of"),
        ({"type": "object", "properties": {"a": {}}}, "names no type"),
        ({"type": "object", "properties": {"a": {"enum": ["x", None]}}}, "holds null"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}, "not a local $defs"),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/A"}},
                "$defs": {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/A"}}}},
            },
            "recursive",
        ),
    ],
)
def test_a_bad_schema_is_refused_naming_the_rule(value: Any, words: str) -> None:
    """A schema that is not one, or cannot be checked, is InvalidRequestError on `schema`."""
    with pytest.raises(vb.InvalidRequestError, match="schema") as caught:
        schema_of(value)
    assert caught.value.field == "schema" and words in str(caught.value)


def test_a_model_schema_has_its_refs_inlined() -> None:
    """A pydantic model's $defs are inlined (Vertex's importer refuses `$defs` keys)."""
    schema = schema_of(Order)
    assert schema is not None and schema.name == "Order"
    text = json.dumps(schema.json)
    assert "$defs" not in text and "$ref" not in text
    assert schema.json["properties"]["items"]["items"]["properties"]["price"]["type"] == "number"
    assert schema_of(Order) == schema  # the digest is stable
    assert schema_of(OBJ) != schema


def test_each_provider_form() -> None:
    """Claude gets a forced tool, Gemini responseMimeType and responseSchema (OpenAPI subset)."""
    schema = schema_of(Order)
    claude = json.loads(claude_line(vb.ClaudeRequest("k", _params()), None, schema).data)
    body = claude["request"]
    assert body["tool_choice"] == {"type": "tool", "name": SCHEMA_TOOL}
    assert body["tools"][-1]["input_schema"] == schema.json
    gemini = json.loads(gemini_line(vb.GeminiRequest("k", "hi"), None, schema).data)
    config = gemini["request"]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    wire = config["responseSchema"]
    assert wire["type"] == "OBJECT" and wire["propertyOrdering"] == ["items", "note"]
    note = {"type": "STRING", "nullable": True, "title": "Note", "default": None}
    assert wire["properties"]["note"] == note
    assert "responseJsonSchema" not in config


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "object", "properties": {"n": {"enum": [1, 2]}}}, "enum or const"),
        ({"type": "object", "properties": {"o": {"type": "object"}}}, "no declared properties"),
        ({"type": "object", "properties": {"z": {"type": "null"}}}, '"type": "null"'),
    ],
)
def test_what_the_openapi_subset_cannot_say_is_refused(schema: Any, words: str) -> None:
    """A JSON schema Gemini's responseSchema cannot say is refused, naming the keyword."""
    checked = schema_of(schema)
    assert checked is not None
    with pytest.raises(vb.InvalidRequestError, match="responseSchema") as caught:
        gemini_schema(checked.json)
    assert words in str(caught.value) and caught.value.field == "schema"


def _params(**more: Any) -> dict[str, Any]:
    return {"max_tokens": 64, "messages": [{"role": "user", "content": "hi"}], **more}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (_params(tool_choice={"type": "any"}), "tool_choice"),
        (
            _params(output_config={"format": {"type": "json_schema", "schema": OBJ}}),
            "output_config",
        ),
        (_params(thinking={"type": "enabled", "budget_tokens": 1024}), "thinking"),
        (_params(tools=[{"name": SCHEMA_TOOL, "input_schema": OBJ}]), SCHEMA_TOOL),
    ],
)
def test_a_claude_request_with_another_schema_is_refused(params: Any, field: str) -> None:
    """Claude params that set another tool choice, format or tool of the name are refused."""
    with pytest.raises(vb.InvalidRequestError, match=field):
        claude_line(vb.ClaudeRequest("k", params), None, schema_of(Order))


@pytest.mark.parametrize(
    "config",
    [
        {"response_mime_type": "text/plain"},
        {"response_schema": {"type": "STRING"}},
        {"response_json_schema": OBJ},
    ],
)
def test_a_gemini_request_with_another_schema_is_refused(config: Any) -> None:
    """A Gemini config that sets another response schema or type is refused."""
    with pytest.raises(vb.InvalidRequestError, match="response_"):
        gemini_line(vb.GeminiRequest("k", "hi", config), None, schema_of(Order))


def _claude_row(content: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {"status": "", "response": {"content": content, "stop_reason": stop}}


def _gemini_row(*parts: dict[str, Any], finish: str = "STOP") -> dict[str, Any]:
    candidate = {"content": {"parts": list(parts)}, "finishReason": finish}
    return {"status": "", "response": {"candidates": [candidate]}}


def _tool(name: str, value: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": value}


@pytest.mark.parametrize(
    ("provider", "row", "outcome", "parsed", "calls"),
    [
        (
            "anthropic",
            _claude_row([_tool(SCHEMA_TOOL, {"ok": True})], "tool_use"),
            "ok",
            {"ok": True},
            [],
        ),
        (
            "anthropic",
            _claude_row([_tool(SCHEMA_TOOL, {"ok": 1})], "tool_use"),
            "retryable",
            None,
            [],
        ),
        ("anthropic", _claude_row([{"type": "text", "text": "prose"}]), "retryable", None, []),
        ("anthropic", _claude_row([_tool("lookup", {"t": 1})], "tool_use"), "ok", None, ["lookup"]),
        (
            "anthropic",
            _claude_row([{"type": "text", "text": "{"}], "max_tokens"),
            "truncated",
            None,
            [],
        ),
        ("google", _gemini_row({"text": '{"ok": false}'}), "ok", {"ok": False}, []),
        ("google", _gemini_row({"text": "{}"}), "retryable", None, []),
        ("google", _gemini_row({"text": "not json"}), "retryable", None, []),
        ("google", _gemini_row({"functionCall": {"name": "f", "args": {}}}), "ok", None, ["f"]),
        ("google", _gemini_row({"text": '{"ok"'}, finish="MAX_TOKENS"), "truncated", None, []),
        ("google", _gemini_row({"text": "x"}, finish="SAFETY"), "refused", None, []),
    ],
)
def test_the_classifier_with_a_schema(
    provider: Any, row: Any, outcome: str, parsed: Any, calls: list[str]
) -> None:
    """Each row under a schema: parsed, a SchemaError, or the outcome it had without one."""
    schema = schema_of(OBJ)
    assert schema is not None
    result = parsed_result(classify_row(row, key="k", provider=provider), schema)
    assert result.outcome == outcome
    assert result.parsed == parsed
    assert [c.name for c in result.tool_calls] == calls
    if outcome == "retryable":
        assert isinstance(result.error, vb.SchemaError) and result.text
    assert f"parsed={'None' if parsed is None else '<dict>'})" in repr(result)  # no content


def test_tool_calls_without_a_schema_in_order() -> None:
    """Without a schema, every tool_use / functionCall is a ToolCall, in order, with its id."""
    row = _claude_row([_tool("a", {"x": 1}), {"type": "text", "text": "t"}, _tool("b", [])])
    result = classify_row(row, key="k", provider="anthropic")
    assert [(c.name, c.arguments, c.id) for c in result.tool_calls] == [
        ("a", {"x": 1}, "toolu_1"),
        ("b", [], "toolu_1"),
    ]
    assert "x" not in repr(result.tool_calls[0])
    row = _gemini_row({"functionCall": {"name": "f", "args": {"q": 2}, "id": "c1"}})
    (call,) = classify_row(row, key="k", provider="google").tool_calls
    assert call == vb.ToolCall("f", {"q": 2}, "c1")


def test_schema_error_pickles_and_says_nothing_of_the_answer() -> None:
    """A SchemaError keeps its fields through pickle; its message names schema places only."""
    schema = schema_of(OBJ)
    assert schema is not None
    row = _gemini_row({"text": '{"ok": "secret-answer"}'})
    result = parsed_result(classify_row(row, key="k", provider="google"), schema)
    error = result.error
    assert isinstance(error, vb.SchemaError)
    assert (error.place, error.rule, error.transient) == ("$.ok", "type", True)
    assert "secret" not in str(error) and "secret" not in repr(result)
    again = pickle.loads(pickle.dumps(error))
    assert (again.place, again.rule, again.status, again.key) == ("$.ok", "type", error.status, "k")


_SCHEMAS = st.deferred(
    lambda: st.one_of(
        st.sampled_from(
            [
                {"type": "string"},
                {"type": "string", "minLength": 3, "maxLength": 5},
                {"type": "integer", "minimum": 2},
                {"type": "number", "maximum": -1},
                {"type": "boolean"},
                {"enum": ["a", "b"]},
                {"anyOf": [{"type": "string"}, {"type": "null"}]},
            ]
        ),
        st.builds(
            lambda s, n: {"type": "array", "items": s, "minItems": n}, _SCHEMAS, st.integers(0, 3)
        ),
        _OBJECTS,
    )
)
_OBJECTS = st.dictionaries(st.sampled_from(["a", "b", "c"]), _SCHEMAS, min_size=1, max_size=3).map(
    lambda props: {"type": "object", "properties": props, "required": sorted(props)[:2]}
)


@settings(max_examples=examples(150), deadline=None)
@given(_OBJECTS)
def test_a_conforming_answer_always_parses(raw: dict[str, Any]) -> None:
    """The local model's conforming answer to any schema parses and validates; its breaking
    answer never does."""
    try:
        schema = schema_of(raw)
    except vb.InvalidRequestError:  # nested past what a line may hold: refused, not generated
        assume(False)
        return
    assert schema is not None
    for wire in (schema.json, gemini_schema(schema.json)):
        value = conforming(wire)
        assert validate(value, schema.json) is None
        row = _gemini_row({"text": json.dumps(value)})
        assert parsed_result(classify_row(row, key="k", provider="google"), schema).ok
        assert validate(breaking(wire), schema.json) is not None
