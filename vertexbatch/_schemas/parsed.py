"""A usable answer checked against the submission's schema: ``Result.parsed`` or a
``SchemaError`` (pure, fail closed).

The answer is the input of the ``SCHEMA_TOOL`` call when there is one (Claude's forced tool,
taken out of ``tool_calls``; ``Result.text`` becomes its JSON text), else the text (Gemini's
JSON answer). An answer with no such call and no text but other tool calls is an answer that
is only tool calls: ``parsed`` stays ``None``. Anything that does not parse as JSON or breaks
the schema is a ``SchemaError``, its text kept on the result for inspection; refusals,
truncations and failures are left as they are.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .._errors import SchemaError
from .._json import load_exact
from .._values import Result
from .check import Schema, validate
from .forms import SCHEMA_TOOL

__all__ = ["parsed_result"]


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
