"""An open model's request line (vertexbatch/_requests/chat_body.py, lines.chat_line): the OpenAI
batch format, the body checked before staging with errors naming the key and the rule and never
content, and schema= as OpenAI's response_format."""

from __future__ import annotations

import json
from typing import Any

import pytest

import vertexbatch as vb
from vertexbatch._requests.chat_body import check_chat_fields
from vertexbatch._requests.digests import key_digest
from vertexbatch._requests.lines import chat_line
from vertexbatch._schemas.check import schema_of

SECRET = "the secret question"


def body(**fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": SECRET}], **fields}


def test_a_line_is_the_openai_batch_format_with_the_key_digest_as_custom_id() -> None:
    line = chat_line(vb.ChatRequest("doc-1", body(max_tokens=50)))
    row = json.loads(line.data)
    assert list(row) == ["custom_id", "method", "url", "body"]
    assert row["custom_id"] == key_digest("doc-1") == line.digest
    assert (row["method"], row["url"]) == ("POST", "/v1/chat/completions")
    assert row["body"] == body(max_tokens=50)
    assert line.data.endswith(b"}\n") and line.key == "doc-1"


@pytest.mark.parametrize(
    ("given", "rule"),
    [
        ("not a body", "must be a mapping"),
        (body(model="meta/llama-3.3-70b-instruct-maas"), "sets 'model'"),
        (body(stream=True), "sets 'stream'"),
        (body(n=2), "sets 'n' other than 1"),
        ({"max_tokens": 5}, "gives 'messages' as nothing"),
        ({"messages": []}, "gives 'messages' as an empty list"),
        ({"messages": [SECRET]}, "messages[0] without a string 'role'"),
        (body(max_tokens=0), "gives 'max_tokens' as 0"),
        (body(max_completion_tokens=True), "gives 'max_completion_tokens' as bool"),
        (body(temperature=float("nan")), "body.temperature"),
    ],
)
def test_a_bad_body_is_refused_naming_the_key_and_the_rule(given: Any, rule: str) -> None:
    with pytest.raises(vb.InvalidRequestError) as caught:
        chat_line(vb.ChatRequest("doc-7", given))
    assert "'doc-7'" in str(caught.value) and rule in str(caught.value)
    assert caught.value.field == "body"
    assert SECRET not in str(caught.value)


def test_an_unknown_field_is_refused_by_position_with_the_nearest_name() -> None:
    check_chat_fields(vb.ChatRequest("k", body(temperature=0.2, seed=1)))
    with pytest.raises(vb.InvalidRequestError) as caught:
        check_chat_fields(vb.ChatRequest("k", {**body(), "temprature": 0.2, SECRET: 1}))
    message = str(caught.value)
    assert "body.<field 2> (did you mean 'temperature'?)" in message
    assert "check_fields=False" in message and SECRET not in message


def test_a_schema_is_written_as_openai_response_format() -> None:
    schema = schema_of({"type": "object", "properties": {"city": {"type": "string"}}})
    assert schema is not None
    row = json.loads(chat_line(vb.ChatRequest("k", body()), schema=schema).data)
    assert row["body"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "vertexbatch_answer", "schema": dict(schema.json)},
    }
    with pytest.raises(vb.InvalidRequestError, match="set 'response_format'"):
        chat_line(vb.ChatRequest("k", body(response_format={"type": "json_object"})), schema=schema)


def test_the_repr_shows_the_key_only() -> None:
    assert SECRET not in repr(vb.ChatRequest("k", body()))


def test_an_open_model_is_named_publisher_slash_model() -> None:
    """The lane's model check: PUBLISHER/MODEL taken, a bare id or a path refused by the rule;
    the job's Vertex model path and the catalogue read the publisher from the id."""
    from vertexbatch._catalogue import model_entry
    from vertexbatch._providers import checked_model
    from vertexbatch._rules import model_of_job, publisher_path

    model = "meta/llama-3.3-70b-instruct-maas"
    assert checked_model(model, "openmaas", "us-central1") == model
    for bad in ("llama-3.3-70b-instruct-maas", "publishers/meta/models/llama-x", "meta/"):
        with pytest.raises(vb.InvalidRequestError, match="must be PUBLISHER/MODEL"):
            checked_model(bad, "openmaas", "us-central1")
    with pytest.raises(vb.InvalidRequestError, match="global"):
        checked_model(model, "openmaas", "global")
    assert publisher_path(model, "openmaas") == "publishers/meta/models/llama-3.3-70b-instruct-maas"
    vertex = "projects/p/locations/l/publishers/meta/models/llama-3.3-70b-instruct-maas"
    assert model_of_job(vertex, model) == model
    assert model_of_job(vertex.replace("models/", "models/x"), model).startswith("xllama")
    entry = model_entry("publishers/meta/models/llama-3.3-70b-instruct-maas@001")
    assert entry is not None and entry.id == model and entry.publisher == "meta"
