"""The local model's answers to open-model lines (vertexbatch/emulator/_openmaas.py): OpenAI
chat completions, deterministic, shaped by the directives."""

from __future__ import annotations

import json
from typing import Any

from vertexbatch.emulator._openmaas import answer_chat

MODEL = "llama-3.3-70b-instruct-maas"


def body(text: str, **fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], **fields}


def test_the_same_body_gets_the_same_completion() -> None:
    first, second = answer_chat(body("hi"), MODEL), answer_chat(body("hi"), MODEL)
    assert first == second and first.response is not None
    choice = first.response["choices"][0]
    assert (choice["finish_reason"], choice["message"]["role"]) == ("stop", "assistant")
    assert first.response["usage"]["prompt_tokens"] > 0
    assert answer_chat(body("other"), MODEL).response != first.response


def test_a_tiny_limit_truncates_and_a_schema_is_followed() -> None:
    short = answer_chat(body("hi", max_tokens=1), MODEL).response
    assert short is not None and short["choices"][0]["finish_reason"] == "length"
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    form = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    answered = answer_chat(body("count", response_format=form), MODEL).response
    assert answered is not None
    assert isinstance(json.loads(answered["choices"][0]["message"]["content"])["n"], int)


def test_bad_bodies_and_directives_are_line_errors() -> None:
    for bad in ("text", {"messages": []}, body("hi", stream=True), body("[[vb:parts thought]]")):
        answer = answer_chat(bad, MODEL)
        assert answer.error is not None and answer.error.code == 400
    assert answer_chat(body("[[vb:error 429]]"), MODEL).error.code == 429  # type: ignore[union-attr]
    assert answer_chat(body("[[vb:drop]]"), MODEL).dropped
    assert answer_chat(body("[[vb:tool_call]]"), MODEL).error is not None  # no tool declared
