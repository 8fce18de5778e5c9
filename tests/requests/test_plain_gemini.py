"""A Gemini request of text contents and the first generation fields is read and checked without
importing google-genai (``_requests.sdk_fields.plain_gemini``, ``_requests.plain_config``); both
fast paths are held here against the installed SDK's own types, which judge everything else, and
a request the SDK refuses is still refused before any cloud call."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import typing
from typing import Any

import pytest
from google.genai import types
from hypothesis import given, settings
from hypothesis import strategies as st

import vertexbatch as vb
from tests.helpers import GEMINI, examples, object_names
from vertexbatch._requests import sdk_fields as fields
from vertexbatch._requests.gemini_body import _dump_config, gemini_request_body
from vertexbatch._requests.plain_config import plain_config
from vertexbatch._requests.plain_json import STRICT_SORTED
from vertexbatch._requests.sdk_fields import (
    GEMINI_REQUEST_LEVEL,
    PLAIN_GEMINI_CONFIG,
    _gemini_root,
    gemini_unknown,
    plain_gemini,
)
from vertexbatch._requests.type_walk import FREE, LEAF, ListOf, MapOf, Record
from vertexbatch.emulator import LocalStack

CONFIG = types.GenerateContentConfig
_ROOT, _COMPILER = _gemini_root(CONFIG, types.GenerationConfig, types.Content)
_KIND_TYPES = {
    "float": float, "int": int, "bool": bool, "text": str, "texts": list[str],
    "labels": dict[str, str],
}  # fmt: skip


def test_each_plain_config_field_is_the_installed_sdks_with_that_alias_and_type() -> None:
    """The table names GenerateContentConfig's fields by their aliases, in the model's order,
    each of the type its kind takes (systemInstruction: a union that takes a string)."""
    order = list(CONFIG.model_fields)
    positions = []
    for name, alias, kind in PLAIN_GEMINI_CONFIG:
        info = CONFIG.model_fields[name]
        assert info.alias == alias, name
        members = typing.get_args(info.annotation)
        if name == "system_instruction":
            assert kind == "text" and str in members
        else:
            assert set(members) == {_KIND_TYPES[kind], type(None)}, (name, info.annotation)
        positions.append(order.index(name))
    assert positions == sorted(positions)


def _not_looked_into(node: Any) -> bool:
    """Whether the walk takes any value at this node (a leaf, free JSON, a list or map of one)."""
    if node is LEAF or node is FREE:
        return True
    inner = node.item if type(node) is ListOf else node.value if type(node) is MapOf else None
    return inner is LEAF or inner is FREE


def test_each_plain_request_name_is_a_field_of_the_installed_sdk_where_plain_takes_it() -> None:
    generation = _ROOT.fields["generationConfig"][0]
    for name in fields._PLAIN_GENERATION:
        assert _not_looked_into(generation.fields[name][0]), name
    assert _ROOT.fields.keys() >= fields._PLAIN_REQUEST
    assert _not_looked_into(_ROOT.fields["labels"][0])
    contents = _ROOT.fields["contents"][0]
    assert type(contents) is ListOf and contents.item is _ROOT.fields["systemInstruction"][0]
    content = _COMPILER.resolve(contents.item)
    assert content.fields.keys() >= fields._PLAIN_CONTENT
    assert _not_looked_into(content.fields["role"][0])
    parts = content.fields["parts"][0]
    assert type(parts) is ListOf
    part = _COMPILER.resolve(parts.item)
    assert type(part) is Record and part.fields.keys() >= fields._PLAIN_PART
    assert _not_looked_into(part.fields["text"][0])
    # The config's request-level fields are the request's, its others generationConfig's.
    for _, alias, _ in PLAIN_GEMINI_CONFIG:
        assert (alias in GEMINI_REQUEST_LEVEL) is (alias not in fields._PLAIN_GENERATION)


# Bodies over the plain names and their near misses, nested the ways a request nests.
_NAMES = st.sampled_from(
    [
        "contents", "systemInstruction", "generationConfig", "labels", "role", "parts", "text",
        "temperature", "topP", "top_p", "maxOutputTokens", "seed", "stopSequences", "thought",
        "inlineData", "temprature", "txt", "rol", "tools", "thinkingConfig", "system_instruction",
    ]
)  # fmt: skip
_SCALARS = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["user", "model", "x"]))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_NAMES, inner, max_size=4)
    ),
    max_leaves=12,
)
_PART = st.one_of(st.dictionaries(_NAMES, _SCALARS, max_size=2), _VALUES)
_CONTENT = st.fixed_dictionaries(
    {"role": _SCALARS, "parts": st.one_of(st.lists(_PART, max_size=3), _VALUES)},
    optional={"txt": _VALUES},
)
_GENERATION = st.dictionaries(
    st.sampled_from([n for e in PLAIN_GEMINI_CONFIG for n in e[:2]] + ["temprature", "tools"]),
    _VALUES,
    max_size=4,
)
_BODIES = st.fixed_dictionaries(
    {"contents": st.one_of(st.lists(_CONTENT, max_size=3), _VALUES)},
    optional={
        "systemInstruction": st.one_of(_CONTENT, _VALUES),
        "generationConfig": st.one_of(_GENERATION, _VALUES),
        "labels": _VALUES,
        "tools": _VALUES,
        "temprature": _VALUES,
    },
)


def _sdk(body: Any) -> Any:
    """The SDK walk alone (explicit types never take the plain path)."""
    return gemini_unknown(body, CONFIG, types.GenerationConfig, types.Content)


@settings(max_examples=examples(400), deadline=None)
@given(_BODIES)
def test_a_request_plain_takes_has_no_unknown_field_by_the_sdk(body: dict[str, Any]) -> None:
    if plain_gemini(body):
        assert _sdk(body) is None
    assert gemini_unknown(body) == _sdk(body)  # the answer never depends on the path


# Configs over the table's fields, both spellings, near misses, and values of every kind.
_CONFIG_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
    st.lists(st.text(max_size=3), max_size=2),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(0, 2), max_size=2),
)
_CONFIG_NAMES = st.sampled_from(
    [n for e in PLAIN_GEMINI_CONFIG for n in e[:2]]
    + ["temprature", "thinking_config", "tools", "httpOptions", "store", "cachedContent"]
)


def _validated(config: dict[str, Any]) -> dict[str, Any]:
    """What google-genai's validation gives, as ``_requests.gemini_body`` reads a dict config."""
    return _dump_config(CONFIG.model_validate_json(STRICT_SORTED.encode(config)))


@settings(max_examples=examples(600), deadline=None)
@given(st.dictionaries(_CONFIG_NAMES, _CONFIG_VALUES, max_size=5))
def test_a_plain_config_is_read_as_the_sdk_reads_it(config: dict[str, Any]) -> None:
    """Where the plain path answers, google-genai takes the config and gives the same fields
    and values (types, order and all); anything else is left to google-genai."""
    read = plain_config(config)
    if read is not None:
        validated = _validated(config)
        assert read == validated
        assert list(read) == list(validated)
        assert [type(v) for v in read.values()] == [type(v) for v in validated.values()]


@pytest.mark.parametrize(
    "config",
    [
        {"temperature": 0.2, "max_output_tokens": 1024, "system_instruction": "Be brief."},
        {"temperature": 1, "topK": 3, "seed": -0, "stopSequences": ["END"], "labels": {"a": "b"}},
        {"response_mime_type": "application/json", "responseLogprobs": True, "logprobs": 2},
    ],
)
def test_first_generation_fields_are_plain(config: dict[str, Any]) -> None:
    assert plain_config(config) == _validated(config)


@pytest.mark.parametrize(
    "config",
    [
        {"temprature": 0.2},  # misspelt: google-genai refuses it
        {"temperature": 0.2, "thinking_config": {"thinking_budget": 0}},  # not in the table
        {"temperature": "0.2"},  # a string pydantic converts
        {"max_output_tokens": 1.0},  # a float pydantic converts
        {"temperature": True},
        {"temperature": None},
        {"top_p": 0.5, "topP": 0.5},  # one field twice
        {"system_instruction": {"parts": [{"text": "x"}]}},  # a Content, not a string
        {"stop_sequences": ["a", 1]},
        {"labels": {"a": 1}},
        {"temperature": 2**60},  # past 2**53: pydantic's conversion
    ],
)
def test_anything_else_is_the_sdks_to_read(config: dict[str, Any]) -> None:
    assert plain_config(config) is None


@pytest.mark.parametrize(
    ("contents", "config", "field", "place"),
    [
        ([{"role": "user", "parts": [{"text": "Hi"}]}], {"temprature": 0.2}, "config", "config"),
        ([{"role": "user", "parts": [{"txt": "Hi"}]}], {"temperature": 0.2}, "contents", "parts"),
        ([{"rol": "user", "parts": [{"text": "Hi"}]}], None, "contents", "contents[0]"),
    ],
)
def test_a_misspelt_field_is_still_refused_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]],
    stack: LocalStack,
    bucket: str,
    contents: list[Any],
    config: dict[str, Any] | None,
    field: str,
    place: str,
) -> None:
    """A request the SDK would refuse is refused by submit_gemini: nothing reaches GCS or
    Vertex, and nothing is staged."""
    client, seen = counted
    requests = [vb.GeminiRequest("typo", contents, config)]
    with pytest.raises(vb.InvalidRequestError) as info:
        client.submit_gemini("misspelt-plain", GEMINI, requests)
    assert "request 'typo'" in str(info.value) and place in str(info.value)
    assert info.value.field == field
    assert seen == [] and sum(stack.calls().values()) == 0
    assert object_names(stack, bucket, "") == []


def test_a_plain_config_stages_the_body_the_sdk_path_stages() -> None:
    config = {"system_instruction": "Be brief.", "temperature": 1, "max_output_tokens": 64}
    body = gemini_request_body("k", [{"role": "user", "parts": [{"text": "Hi"}]}], config)
    assert body == {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}]},
        "generationConfig": {"temperature": 1.0, "maxOutputTokens": 64},
    }
    assert type(body["generationConfig"]["temperature"]) is float


def _imports_genai(requests: str) -> bool:
    """Whether building and checking these (contents, config) requests' lines imports
    google-genai's types, in a fresh interpreter."""
    code = textwrap.dedent(
        f"""
        import sys
        from vertexbatch import GeminiRequest
        from vertexbatch._requests.field_check import check_gemini_fields
        from vertexbatch._requests.lines import gemini_line
        for contents, config in {requests}:
            request = GeminiRequest("k", contents, config)
            gemini_line(request)
            check_gemini_fields(request)
        print("google.genai.types" in sys.modules or "pydantic" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


@pytest.mark.processes
def test_plain_requests_never_import_google_genai_and_others_do() -> None:
    contents = '[{"role": "user", "parts": [{"text": "Hi"}]}]'
    plain = f'[({contents}, {{"temperature": 0.2, "system_instruction": "Be brief."}})]'
    assert not _imports_genai(plain)
    thinking = f'[({contents}, {{"thinking_config": {{"thinking_budget": 0}}}})]'
    assert _imports_genai(thinking)
    inline = '[([{"role": "user", "parts": [{"inlineData": {"mimeType": "a/b"}}]}], None)]'
    assert _imports_genai(inline)
