"""Typed results, the pure parts: a reader's ``schema=`` checked and matched against the job's,
and a parsed answer built as the reader's class (``vertexbatch._schemas.parsed``)."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest

import vertexbatch as vb
from vertexbatch._rows.classify import classify_row
from vertexbatch._schemas.check import schema_of
from vertexbatch._schemas.parsed import parsed_result, reader_schema, schema_for, typed_result
from vertexbatch._staged.manifest import Manifest


class Verdict(pydantic.BaseModel):
    """What a reviewer decides."""

    approve: bool
    score: int = pydantic.Field(ge=1, le=5)


class Other(pydantic.BaseModel):
    ok: bool


def _strict(refused: int) -> type[pydantic.BaseModel]:
    """A class with Verdict's JSON schema (name, docstring, fields) and a validator its JSON
    schema cannot state: it refuses one score."""

    class Verdict(pydantic.BaseModel):
        """What a reviewer decides."""

        approve: bool
        score: int = pydantic.Field(ge=1, le=5)

        @pydantic.field_validator("score")
        @classmethod
        def _not_refused(cls, value: int) -> int:
            if value == refused:
                raise ValueError(f"score {value} is refused")
            return value

    return Verdict


def _answer(value: Any, key: str = "k") -> vb.Result:
    """A Gemini answer of ``value`` as JSON text, validated against Verdict's JSON schema."""
    text = json.dumps(value)
    candidate = {"content": {"parts": [{"text": text}]}, "finishReason": "STOP"}
    row = {"status": "", "response": {"candidates": [candidate]}}
    schema = schema_of(Verdict)
    assert schema is not None
    return parsed_result(classify_row(row, key=key, provider="google"), schema)


def test_a_reader_schema_keeps_its_class_and_digests_as_at_submit() -> None:
    """The reader's schema is the submission's (same digest), its class kept; a dict has none."""
    given = reader_schema(Verdict)
    submitted = schema_of(Verdict)
    assert given is not None and submitted is not None
    assert given.model is Verdict and submitted.model is None
    assert given.digest == submitted.digest and given == submitted
    as_dict = reader_schema(Verdict.model_json_schema())
    assert as_dict is not None and as_dict.model is None and as_dict.digest == given.digest
    assert reader_schema(None) is None


@pytest.mark.parametrize("value", [Verdict(approve=True, score=1), 42, "Verdict", int])
def test_a_reader_schema_that_schema_does_not_take_is_refused(value: object) -> None:
    """What ``schema=`` refuses at submission, a results pass refuses (before any call)."""
    with pytest.raises(vb.InvalidRequestError) as caught:
        reader_schema(value)
    assert caught.value.field == "schema"


def test_the_jobs_schema_or_a_refusal_naming_the_rule() -> None:
    """The same schema (by digest) is taken; another, or one for a job without, is refused."""
    stored = schema_of(Verdict)
    given = reader_schema(Verdict)
    assert schema_for(stored, None, "jobs/1") is stored  # no schema=: the job's, JSON data
    assert schema_for(None, None, "jobs/1") is None
    assert schema_for(stored, given, "jobs/1") is given  # the same: with its class
    for job_schema, words in [
        (stored, "was submitted with Verdict (schema digest"),
        (None, "was submitted with no schema"),
    ]:
        with pytest.raises(vb.InvalidRequestError) as caught:
            schema_for(job_schema, reader_schema(Other), "jobs/1")
        assert caught.value.field == "schema"
        message = str(caught.value)
        assert words in message and "schema= is Other (schema digest" in message
        assert "takes only the schema a job was submitted with" in message
    # A class of the same name whose JSON schema differs is another schema.
    renamed = type("Verdict", (pydantic.BaseModel,), {"__annotations__": {"approve": bool}})
    with pytest.raises(vb.InvalidRequestError, match=r"is Verdict .* submitted with Verdict"):
        schema_for(stored, reader_schema(renamed), "jobs/1")


def test_a_parsed_answer_is_built_as_the_class() -> None:
    """``parsed`` becomes the class's instance, as ``parsed_as`` builds it; the rest stays."""
    result = _answer({"approve": True, "score": 4})
    typed = typed_result(result, reader_schema(Verdict))
    assert isinstance(typed.parsed, Verdict) and typed.parsed == Verdict(approve=True, score=4)
    assert typed.ok and typed.text == result.text and typed.usage == result.usage
    assert typed.parsed_as(Verdict) is typed.parsed  # parsed_as stays, and gives it back
    # No class (no schema=, or a JSON schema given): JSON data, the result as it was.
    assert typed_result(result, None) is result
    assert typed_result(result, schema_of(Verdict)) is result


def test_a_value_the_class_refuses_is_a_schema_error() -> None:
    """A validator the JSON schema cannot state refuses the value: a SchemaError on the result
    (SCHEMA_MISMATCH, the class's rule), parsed None, the text kept; nothing raised."""
    strict = _strict(refused=3)
    result = _answer({"approve": False, "score": 3}, key="k3")
    typed = typed_result(result, reader_schema(strict))
    assert isinstance(typed.error, vb.SchemaError)
    assert typed.error.status == "SCHEMA_MISMATCH" and typed.error.rule == "value_error"
    assert typed.error.key == "k3" and typed.outcome == "retryable"
    assert typed.parsed is None and typed.text == result.text
    assert "score 3" not in str(typed.error) and typed.text not in str(typed.error)
    assert typed.error.__traceback__ is None
    assert isinstance(
        typed_result(_answer({"approve": False, "score": 2}), reader_schema(strict)).parsed, strict
    )


def test_results_without_a_parsed_answer_are_left_alone() -> None:
    """An error, or an answer that is only tool calls, has no parsed value to build."""
    given = reader_schema(Verdict)
    broken = _answer({"approve": "yes"})
    assert isinstance(broken.error, vb.SchemaError)
    assert typed_result(broken, given) is broken
    calls = vb.Result(key="k", tool_calls=(vb.ToolCall("lookup", {"x": 1}),))
    assert typed_result(calls, given) is calls


def test_an_exception_of_the_class_itself_propagates() -> None:
    """Not a validation error: the caller's own code raised, as it would from parsed_as."""

    class Boom(pydantic.BaseModel):
        """What a reviewer decides."""

        approve: bool
        score: int = pydantic.Field(ge=1, le=5)

        @pydantic.model_validator(mode="after")
        def _boom(self) -> Boom:
            raise RuntimeError("a bug in the caller's validator")

    result = _answer({"approve": True, "score": 1})
    with pytest.raises(RuntimeError, match="caller's validator"):
        result.parsed_as(Boom)
    with pytest.raises(RuntimeError, match="caller's validator"):
        typed_result(result, reader_schema(Boom))


def test_a_manifest_never_holds_the_class() -> None:
    """The manifest's JSON is the same whether its schema came with a class or without."""
    with_class = Manifest("google", "gemini-x", 1, 10, "0" * 32, schema=reader_schema(Verdict))
    without = Manifest("google", "gemini-x", 1, 10, "0" * 32, schema=schema_of(Verdict))
    assert with_class.to_json() == without.to_json()
    assert set(with_class.to_json()["schema"]) == {"json", "digest", "name"}
    json.dumps(with_class.to_json())
