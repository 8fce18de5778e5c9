"""Which fields a request may carry comes from the installed SDKs' request types, and the first
unknown one is named in each provider's own words (vertexbatch/_requests/sdk_fields.py)."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from anthropic.types import MessageCreateParams, TextBlockParam, message_create_params
from google.genai import types as genai_types

from vertexbatch._requests.importer_rules import documented_names
from vertexbatch._requests.sdk_fields import (
    GEMINI_REQUEST_LEVEL,
    VERTEX_CLAUDE_FIELDS,
    claude_unknown,
    gemini_unknown,
)

_USER = {"role": "user", "content": "Hi"}


def _claude(**fields: Any) -> dict[str, Any]:
    return {
        "max_tokens": 16,
        "messages": [_USER],
        "anthropic_version": "vertex-2023-10-16",
        **fields,
    }


def _gemini(**fields: Any) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}], **fields}


# Claude.


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        (_claude(temprature=0.2), "temprature", "temprature: Extra inputs are not permitted"),
        (
            {"max_tokens": 16, "messages": [{"role": "user", "contnet": "Hi"}]},
            "messages[0].contnet",
            "messages.0.contnet: Extra inputs are not permitted",
        ),
        (
            _claude(messages=[{"role": "user", "content": [{"type": "text", "txt": "Hi"}]}]),
            "messages[0].content[0].txt",
            "messages.0.content.0.text.txt: Extra inputs are not permitted",
        ),
        (
            _claude(
                messages=[
                    _USER,
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "t1", "name": "f", "input": {}, "text": "x"}
                        ],
                    },
                ]
            ),
            "messages[1].content[0].text",
            "messages.1.content.0.tool_use.text: Extra inputs are not permitted",
        ),
        (
            _claude(tools=[{"name": "f", "input_schema": {"type": "object"}, "defer_loadin": 1}]),
            "tools[0].defer_loadin",
            "tools.0.custom.defer_loadin: Extra inputs are not permitted",
        ),
        (
            _claude(tool_choice={"type": "tool", "name": "f", "disable_parallel": True}),
            "tool_choice.disable_parallel",
            "tool_choice.tool.disable_parallel: Extra inputs are not permitted",
        ),
        (
            _claude(thinking={"type": "enabled", "budget": 1024}),
            "thinking.budget",
            "thinking.enabled.budget: Extra inputs are not permitted",
        ),
        (
            _claude(metadata={"user": "u-1"}),
            "metadata.user",
            "metadata.user: Extra inputs are not permitted",
        ),
        (
            _claude(system=[{"type": "text", "text": "Be brief", "cache": {"type": "ephemeral"}}]),
            "system[0].cache",
            "system.0.cache: Extra inputs are not permitted",
        ),
        (_claude(model="claude-opus-5-5"), "model", "model: Extra inputs are not permitted"),
    ],
    ids=[
        "top level",
        "message",
        "text block",
        "tool_use block",
        "custom tool",
        "tool_choice",
        "thinking",
        "metadata",
        "system block",
        "model (the job's)",
    ],
)
def test_a_claude_unknown_field_is_named_as_anthropic_names_it(
    body: dict[str, Any], path: str, message: str
) -> None:
    unknown = claude_unknown(body)
    assert unknown is not None
    assert (unknown.path, unknown.anthropic_message) == (path, message)


def test_every_field_of_the_installed_message_create_params_is_taken() -> None:
    """Each top-level field the installed SDK names (model aside) is known: read from the
    SDK, not listed here, so a new SDK's fields are taken as they come."""
    names = set()
    for member in typing.get_args(MessageCreateParams):
        names |= set(typing.get_type_hints(member))
    assert {"max_tokens", "messages", "system", "tools", "thinking"} <= names
    for name in names - {"model"}:
        assert claude_unknown(_claude(**{name: None})) is None, name


def test_vertex_fields_the_sdk_may_not_model_are_taken() -> None:
    """anthropic_version (Vertex's own), anthropic_beta and the sampling parameters."""
    body = _claude(anthropic_beta=["b"], temperature=0.2, top_p=0.9, top_k=5)
    assert {"anthropic_version", "anthropic_beta", "temperature"} <= VERTEX_CLAUDE_FIELDS
    assert claude_unknown(body) is None


def test_a_full_claude_request_is_taken_and_free_json_is_not_looked_into() -> None:
    """Blocks of every common kind, a tool's input_schema with any keywords, tool results."""
    body = _claude(
        system=[{"type": "text", "text": "Be brief", "cache_control": {"type": "ephemeral"}}],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "...", "signature": "s"},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {"any": {"x": 1}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "ok"}],
                    }
                ],
            },
        ],
        tools=[
            {
                "name": "f",
                "description": "d",
                "input_schema": {"type": "object", "$defs": {}, "additionalProperties": False},
            },
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
        ],
        tool_choice={"type": "auto"},
        thinking={"type": "enabled", "budget_tokens": 1024},
        metadata={"user_id": "u-1"},
        stop_sequences=["###"],
    )
    assert claude_unknown(body) is None
    assert claude_unknown({"messages": "not a list", "max_tokens": "x"}) is None  # types: not ours


def test_a_field_added_to_the_claude_sdk_type_is_taken_without_a_code_change() -> None:
    """The table is read from the type it is given: a subclass naming one more field (as an
    SDK upgrade would) takes that field, where the installed type refuses it."""

    class Upgraded(message_create_params.MessageCreateParamsNonStreaming, total=False):
        brand_new_knob: int

    body = _claude(brand_new_knob=3)
    assert claude_unknown(body) is not None
    assert claude_unknown(body, Upgraded) is None
    assert claude_unknown(_claude(brand_new_knb=3), Upgraded) is not None


class NewText(TextBlockParam, total=False):
    """A text block of an SDK that names one more field."""

    emphasis: str


class NewTextParams(message_create_params.MessageCreateParamsNonStreaming, total=False):
    """Params whose system blocks are NewText."""

    system: list[NewText]  # type: ignore[misc]


def test_a_nested_field_added_to_the_sdk_is_taken_without_a_code_change() -> None:
    """A nested type's new field counts too: the annotations are followed, not copied."""
    body = _claude(system=[{"type": "text", "text": "Be brief", "emphasis": "strong"}])
    assert claude_unknown(body) is not None
    assert claude_unknown(body, NewTextParams) is None


# Gemini.


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        (
            _gemini(temprature=0.2),
            "temprature",
            'Invalid JSON payload received. Unknown name "temprature": Cannot find field.',
        ),
        (
            _gemini(generationConfig={"temprature": 0.2}),
            "generationConfig.temprature",
            'Invalid JSON payload received. Unknown name "temprature" at '
            "'generation_config': Cannot find field.",
        ),
        (
            {"contents": [{"role": "user", "parts": [{"txt": "Hi"}]}]},
            "contents[0].parts[0].txt",
            "Invalid JSON payload received. Unknown name \"txt\" at 'contents[0].parts[0]': "
            "Cannot find field.",
        ),
        (
            _gemini(systemInstruction={"parts": [{"text": "x"}], "rol": "user"}),
            "systemInstruction.rol",
            'Invalid JSON payload received. Unknown name "rol" at '
            "'system_instruction': Cannot find field.",
        ),
        (
            _gemini(
                generationConfig={
                    "responseMimeType": "application/json",
                    "responseSchema": {
                        "type": "OBJECT",
                        "properties": {"a": {"type": "STRING"}, "b": {"type": "STRING", "x": 1}},
                    },
                }
            ),
            "generationConfig.responseSchema.properties[1].x",
            'Invalid JSON payload received. Unknown name "x" at '
            "'generation_config.response_schema.properties[1].value': Cannot find field.",
        ),
        (
            _gemini(tools=[{"functionDeclarations": [{"name": "f", "params": {}}]}]),
            "tools[0].functionDeclarations[0].params",
            'Invalid JSON payload received. Unknown name "params" at '
            "'tools[0].function_declarations[0]': Cannot find field.",
        ),
    ],
    ids=["top level", "generationConfig", "part", "systemInstruction", "schema map", "tool"],
)
def test_a_gemini_unknown_field_is_named_as_google_names_it(
    body: dict[str, Any], path: str, message: str
) -> None:
    unknown = gemini_unknown(body)
    assert unknown is not None
    assert (unknown.path, unknown.google_message) == (path, message)


def test_every_generation_and_request_field_of_the_installed_sdk_is_taken() -> None:
    """Each GenerateContentConfig field lands where the client stages it, by JSON name and
    by proto name; GenerationConfig's own fields are generationConfig's."""
    config = genai_types.GenerateContentConfig.model_fields
    client_side = {"httpOptions", "shouldReturnHttpResponse", "automaticFunctionCalling"}
    client_side |= {"automaticContinuation", "enableEnhancedCivicAnswers", "store"}
    for name, info in config.items():
        alias = info.alias or name
        if alias in client_side:
            continue
        if alias in GEMINI_REQUEST_LEVEL:
            wire = GEMINI_REQUEST_LEVEL[alias]
            assert gemini_unknown(_gemini(**{wire: None})) is None, wire
        else:
            for written in {alias, name}:
                body = _gemini(generationConfig={written: None})
                assert gemini_unknown(body) is None, written
                assert gemini_unknown(_gemini(generation_config={written: None})) is None
    for name, info in genai_types.GenerationConfig.model_fields.items():
        assert gemini_unknown(_gemini(generationConfig={info.alias or name: None})) is None


def test_a_full_gemini_request_is_taken_snake_case_too() -> None:
    body = _gemini(
        system_instruction={"role": "user", "parts": [{"text": "Be brief"}]},
        generation_config={"temperature": 0.2, "max_output_tokens": 64},
        safetySettings=[{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}],
        tools=[{"functionDeclarations": [{"name": "f", "parametersJsonSchema": {"$any": 1}}]}],
        toolConfig={"functionCallingConfig": {"mode": "ANY"}},
        labels={"anything-goes": "x"},
    )
    body["contents"].append(
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"free": {"x": 1}}}}]}
    )
    assert gemini_unknown(body) is None


def test_a_field_added_to_the_gemini_sdk_types_is_taken_without_a_code_change() -> None:
    """Subclassed types naming one more field (as an SDK upgrade would) take it."""

    class NewGeneration(genai_types.GenerationConfig):
        brand_new_knob: int | None = None

    class NewPart(genai_types.Part):
        brand_new_part: str | None = None

    class NewContent(genai_types.Content):
        parts: list[NewPart] | None = None  # type: ignore[assignment]

    body = _gemini(generationConfig={"brandNewKnob": 1})
    assert gemini_unknown(body) is not None
    assert gemini_unknown(body, generation_type=NewGeneration) is None
    body = {"contents": [{"role": "user", "parts": [{"brandNewPart": "x"}]}]}
    assert gemini_unknown(body) is not None
    assert gemini_unknown(body, content_type=NewContent) is None


def test_a_safe_path_names_only_documented_fields() -> None:
    """A name no SDK type documents is written by position: a mapping's keys may be content."""
    unknown = claude_unknown(
        _claude(messages=[{"role": "user", "content": "Hi", "secret words": 1}])
    )
    assert unknown is not None
    assert unknown.safe_path(documented_names().__contains__) == "messages[0].<field 3>"
    unknown = claude_unknown(_claude(max_token=1))
    assert unknown is not None
    assert unknown.safe_path(lambda name: name != "max_token") == "<field 4>"
