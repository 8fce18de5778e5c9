"""Values for a response schema, as the local model writes them (pure).

``conforming`` is a small value that follows a schema: a JSON schema (a Claude tool's
``input_schema``, ``output_config.format.schema``, Gemini's ``responseJsonSchema``) or Vertex's
``Schema`` (Gemini's ``responseSchema``: upper-case types, ``nullable``). Required properties
only, the first of an ``enum`` or ``anyOf``, the least an array, number or string may be;
string words come from the answer's digest. A ``pattern`` is not generated for. ``breaking``
is a value that does not follow it: a required property left out, else a property of the wrong
type, else something that is not an object.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["breaking", "conforming"]

_MAX_DEPTH = 20


def _int(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():  # proto JSON writes int64 as a string
        return int(value)
    return default


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    return str(kind).lower() if kind is not None else ""


def conforming(schema: object, word: str = "amber", depth: int = 0) -> Any:
    """A small value that follows ``schema``."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return None
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    branches = schema.get("anyOf") or schema.get("any_of") or schema.get("oneOf")
    if isinstance(branches, list) and branches and "type" not in schema:
        return conforming(branches[0], word, depth + 1)
    kind = _kind(schema)
    if kind == "object":
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        names = required if isinstance(required, list) else []
        return {
            name: conforming(properties.get(name), word, depth + 1)
            for name in names
            if isinstance(name, str)
        }
    if kind == "array":
        count = _int(schema.get("minItems", schema.get("min_items")), 0)
        return [conforming(schema.get("items"), word, depth + 1) for _ in range(count)]
    if kind == "string":
        low = _int(schema.get("minLength", schema.get("min_length")), 0)
        high = _int(schema.get("maxLength", schema.get("max_length")), len(word) + low)
        text = (word * (1 + low // max(1, len(word))))[: max(low, min(high, len(word)))]
        return text
    if kind in ("number", "integer"):
        floor, ceiling = schema.get("minimum"), schema.get("maximum")
        value: float = 0
        up = True  # the least whole number above a floor, the greatest below a ceiling
        if isinstance(floor, int | float) and not isinstance(floor, bool):
            value = floor
        elif isinstance(ceiling, int | float) and not isinstance(ceiling, bool) and ceiling < 0:
            value, up = ceiling, False
        if kind == "integer":  # an int is never made a float: exact at any size
            if isinstance(value, int):
                return value
            return math.ceil(value) if up else math.floor(value)
        return value
    if kind == "boolean":
        return False
    return None


def breaking(schema: object, word: str = "amber") -> Any:
    """A value that does not follow ``schema`` (an object where one can be)."""
    value = conforming(schema, word)
    if not isinstance(schema, Mapping) or not isinstance(value, dict):
        return [value]
    required = schema.get("required")
    if isinstance(required, list) and required:
        value.pop(required[0], None)
        return value
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and properties:
        name, sub = next(iter(properties.items()))
        wrong = 12345 if isinstance(sub, Mapping) and _kind(sub) == "string" else "wrong type"
        value[name] = wrong
        return value
    return [value]
