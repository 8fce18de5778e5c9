"""A usable answer checked against the submission's schema: ``Result.parsed`` or a
``SchemaError`` (pure, fail closed); and built as the reader's class (``typed_result``).

The answer is the input of the ``SCHEMA_TOOL`` call when there is one (Claude's forced tool,
taken out of ``tool_calls``; ``Result.text`` becomes its JSON text), else the text (Gemini's
JSON answer). An answer with no such call and no text but other tool calls is an answer that
is only tool calls: ``parsed`` stays ``None``. Anything that does not parse as JSON or breaks
the schema is a ``SchemaError``, its text kept on the result for inspection; refusals,
truncations and failures are left as they are.

Typed results. A results pass given ``schema=`` (``reader_schema``) checks it against the schema
the job's manifest records before any answer is read (``schema_for``: the same digest, or
``InvalidRequestError``), then builds each ``parsed`` value as the given pydantic class by
``Result.parsed_as`` (``typed_result``). A value the class refuses (a validator its JSON schema
cannot state) is what a value that breaks the JSON schema is: a ``SchemaError``
(``SCHEMA_MISMATCH``, the class's rule), ``parsed`` ``None``, the text kept; the pass goes on to
the other keys. An exception of the class's own code other than a validation error propagates,
as from ``parsed_as``: it is the caller's bug, never an answer's outcome.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .._errors import InvalidRequestError, SchemaError
from .._json import load_exact
from .._values import Result
from .check import Schema, schema_of, validate
from .forms import SCHEMA_TOOL

__all__ = ["parsed_result", "reader_schema", "schema_for", "typed_result"]


def parsed_result(result: Result, schema: Schema) -> Result:
    """``result`` with its answer parsed and validated against ``schema``."""
    if result.error is not None:
        return result
    text = result.text
    calls = result.tool_calls
    answer = next((call for call in calls if call.name == SCHEMA_TOOL), None)
    value: Any
    if answer is not None:
        calls = tuple(call for call in calls if call is not answer)
        value = answer.arguments
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):  # not JSON data: cannot be (a loose row, say)
            text = ""
    elif not text.strip():
        if calls:  # only the caller's own tool calls: an answer, nothing to parse
            return result
        return _refused(result, text, calls, "", "not_json", "answer holds no JSON")
    else:
        try:
            value = load_exact(text.strip())
        except ValueError:
            return _refused(result, text, calls, "", "not_json", "answer is not JSON")
    found = validate(value, schema.json)
    if found is not None:
        return _refused(
            result,
            text,
            calls,
            found.place,
            found.rule,
            f"answer does not match the schema at {found.place} ({found.rule})",
        )
    return dataclasses.replace(result, text=text, tool_calls=calls, parsed=value)


def _refused(result: Result, text: str, calls: Any, place: str, rule: str, message: str) -> Result:
    status = "NOT_JSON" if rule == "not_json" else "SCHEMA_MISMATCH"
    error = SchemaError(message, key=result.key, status=status, place=place, rule=rule)
    return dataclasses.replace(result, text=text, tool_calls=calls, error=error)


def reader_schema(value: object) -> Schema | None:
    """A results pass's ``schema=``, checked as a submission's is (``schema_of``); a pydantic
    class is kept as the schema's ``model``, which ``typed_result`` builds answers as.

    Raises:
        InvalidRequestError (``field="schema"``): what ``schema_of`` refuses.
    """
    schema = schema_of(value)
    if schema is not None and isinstance(value, type):
        return dataclasses.replace(schema, model=value)
    return schema


def schema_for(stored: Schema | None, given: Schema | None, job: str) -> Schema | None:
    """The schema a results pass of ``job`` checks answers against: the one its manifest
    records (``stored``), or ``given`` (the reader's, with its class) when they are the same.

    Raises:
        InvalidRequestError (``field="schema"``): ``given`` is not the schema ``job`` was
            submitted with (another digest, or the job had none).
    """
    if given is None or (stored is not None and stored.digest == given.digest):
        return stored if given is None else given
    was = "no schema" if stored is None else _named(stored)
    raise InvalidRequestError(
        f"schema= is {_named(given)}, but job {job} was submitted with {was}: a results pass "
        "takes only the schema a job was submitted with (the same JSON schema, by its digest), "
        "to build its answers as that class; pass that one, or no schema= for JSON data",
        field="schema",
    )


def _named(schema: Schema) -> str:
    return f"{schema.name or 'a JSON schema'} (schema digest {schema.digest[:12]})"


def typed_result(result: Result, schema: Schema | None) -> Result:
    """``result`` with ``parsed`` built as ``schema.model`` by ``Result.parsed_as``, when the
    pass was given a class; a value the class refuses makes the result a ``SchemaError``
    (module docstring). Without a class, or without a parsed answer, ``result`` as it is.
    Called outside any handler that would take the class's own exception for a bad row."""
    model = None if schema is None else schema.model
    if model is None or result.parsed is None:
        return result
    try:
        return dataclasses.replace(result, parsed=result.parsed_as(model))
    except SchemaError as error:  # the class's rule, by name: its message never quotes the value
        return dataclasses.replace(result, parsed=None, error=error.with_traceback(None))
