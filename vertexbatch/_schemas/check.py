"""A submission's answer schema: checked, normalised, digested, and answers validated (pure).

``schema=`` takes a pydantic model class or a JSON schema (a dict). Either becomes one
``Schema``: its JSON schema with local ``$ref``s inlined and ``$defs`` / ``$schema`` dropped
(Vertex's importer refuses keys such as ``$defs`` in a line), every keyword one this module can
check. A
keyword outside that set is refused, naming it: the reader must check every rule the schema
states, or an answer that breaks one would be taken for a valid one (fail closed). The same
``Schema`` goes into each request (``_schemas.forms``), into the manifest, and validates each
answer (``validate``); pydantic is imported only when a model class is given.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .._errors import InvalidRequestError

__all__ = ["MAX_SCHEMA_BYTES", "Schema", "Violation", "schema_of", "stored_schema", "validate"]

# A schema is written into every request and into the manifest: kept far below a line's size.
MAX_SCHEMA_BYTES: Final = 64 * 1024
# The largest number a bound may be: the largest 64-bit float (Vertex's Schema holds doubles).
_LARGEST: Final = int(sys.float_info.max)
_MAX_DEPTH: Final = 12  # Vertex's importer fails a line nested past 15 levels

_TYPES: Final = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
# Every keyword a schema may use: what ``validate`` checks, and words for the model only.
_CHECKED: Final = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "pattern",
    }
)
_WORDS: Final = frozenset({"title", "description", "default", "format", "propertyOrdering"})
_DROPPED: Final = frozenset({"$schema", "$id", "$comment", "$defs", "definitions"})
_SCHEMA_MAPS: Final = frozenset({"properties"})
_SCHEMA_LISTS: Final = frozenset({"anyOf"})


@dataclass(frozen=True, slots=True, repr=False)
class Schema:
    """A checked answer schema: ``json`` (normalised JSON schema), its ``digest``, ``name``
    (the model class's name, ``""`` for a dict), and ``model``: for a results pass given
    ``schema=Model`` only (``_schemas.parsed.reader_schema``), the class ``Result.parsed`` is
    built as; never written anywhere. The repr shows the name and digest only."""

    json: Mapping[str, Any]
    digest: str
    name: str = ""
    model: Any = field(default=None, compare=False)

    def __repr__(self) -> str:
        return f"Schema(name={self.name!r}, digest={self.digest[:12]!r})"


def _bad(rule: str) -> InvalidRequestError:
    return InvalidRequestError(f"schema {rule}", field="schema")


def schema_of(value: object) -> Schema | None:
    """The ``Schema`` of a ``schema=`` keyword (``None`` for none), checked before any cloud call.

    Raises:
        InvalidRequestError (``field="schema"``): not a pydantic model class nor a dict; a
            model class that cannot give a JSON schema; a dict that is not a JSON Schema
            object, or uses a keyword, a ``$ref`` or a depth that cannot be checked or staged.
    """
    if value is None or isinstance(value, Schema):  # None, or checked already
        return value
    name = ""
    if isinstance(value, type):
        pydantic = sys.modules.get("pydantic")  # a model class cannot exist unless it is loaded
        if pydantic is None or not issubclass(value, pydantic.BaseModel):
            raise _bad(f"must be a pydantic model class or a JSON schema, got class {value!r}")
        name = value.__name__
        try:
            model: Any = value
            raw: object = model.model_json_schema()
        except Exception as exc:  # whatever pydantic raises for a type it cannot describe
            kind = type(exc).__name__
        else:
            kind = ""
        if kind:  # raised outside the except block: pydantic's message may quote defaults
            raise _bad(f"model class {name} cannot give a JSON schema ({kind})")
    elif isinstance(value, Mapping):
        raw = value
    else:
        raise _bad(f"must be a pydantic model class or a JSON schema, got {type(value).__name__}")
    return _checked(raw, name)


def stored_schema(data: object) -> Schema:
    """A schema read back from a manifest: checked again, as the caller's own would be."""
    if not isinstance(data, Mapping):
        raise _bad("in the manifest is not an object")
    name = data.get("name", "")
    return _checked(data.get("json"), name if isinstance(name, str) else "")


def _checked(raw: object, name: str) -> Schema:
    if not isinstance(raw, Mapping):
        raise _bad(f"must be a JSON Schema object, got {type(raw).__name__}")
    defs: dict[str, Any] = {}
    for holder in ("$defs", "definitions"):
        found = raw.get(holder, {})
        if not isinstance(found, Mapping):
            raise _bad(f"{holder} must be an object")
        defs.update({f"#/{holder}/{k}": v for k, v in found.items()})
    normal = _normal(raw, defs, "schema", (), 0)
    if normal.get("type") != "object":
        raise _bad(
            'must describe an object (top-level "type": "object"): Claude takes an answer '
            "schema as a tool's input, which is an object"
        )
    text = json.dumps(normal, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode()) > MAX_SCHEMA_BYTES:
        raise _bad(f"is over {MAX_SCHEMA_BYTES:,} bytes as JSON: it is written into every request")
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    return Schema(json=json.loads(text), digest=digest, name=name)


def _normal(
    node: object, defs: Mapping[str, Any], place: str, seen: tuple[str, ...], depth: int
) -> dict[str, Any]:
    """One subschema with its ``$ref`` inlined and every keyword checked (a new dict)."""
    if depth > _MAX_DEPTH:
        raise _bad(f"nests deeper than {_MAX_DEPTH} levels at {place}")
    if not isinstance(node, Mapping):
        raise _bad(f"at {place} must be an object, got {type(node).__name__}")
    node = dict(node)
    ref = node.pop("$ref", None)
    if ref is not None:
        if not isinstance(ref, str) or ref not in defs:
            raise _bad(f"at {place} has a $ref that is not a local $defs entry")
        if ref in seen:
            raise _bad(f"at {place} refers to itself ($ref {ref}): a recursive schema")
        target = _normal(defs[ref], defs, place, (*seen, ref), depth)
        node = {**target, **{k: v for k, v in node.items() if k not in _DROPPED}}
    out: dict[str, Any] = {}
    for word, value in node.items():
        if not isinstance(word, str):
            raise _bad(f"at {place} has a key that is not a string")
        if word in _DROPPED:
            continue
        if word not in _CHECKED and word not in _WORDS:
            raise _bad(
                f"at {place} uses {word!r}, which vertexbatch cannot check in an answer: use "
                f"only {', '.join(sorted(_CHECKED | _WORDS))}"
            )
        out[word] = _keyword(word, value, defs, f"{place}.{word}", seen, depth)
    if not ({"type", "anyOf", "enum", "const"} & out.keys()):
        raise _bad(f"at {place} names no type (type, anyOf, enum or const)")
    return out


def _keyword(
    word: str, value: Any, defs: Mapping[str, Any], place: str, seen: tuple[str, ...], depth: int
) -> Any:
    if word in _SCHEMA_MAPS:
        if not isinstance(value, Mapping):
            raise _bad(f"{place} must be an object")
        return {str(k): _normal(v, defs, f"{place}.{k}", seen, depth + 1) for k, v in value.items()}
    if word in _SCHEMA_LISTS:
        if not isinstance(value, list) or not value:
            raise _bad(f"{place} must be a non-empty list")
        return [_normal(v, defs, f"{place}[{i}]", seen, depth + 1) for i, v in enumerate(value)]
    if word == "items":
        return _normal(value, defs, place, seen, depth + 1)
    if word == "additionalProperties":
        if not isinstance(value, bool):
            raise _bad(f"{place} must be true or false")
        return value
    if word == "type":
        kinds = value if isinstance(value, list) else [value]
        if not kinds or not all(isinstance(k, str) and k in _TYPES for k in kinds):
            raise _bad(f"{place} must be one of {', '.join(sorted(_TYPES))} (or a list of them)")
        return value
    if word in ("required", "propertyOrdering"):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _bad(f"{place} must be a list of property names")
        return list(value)
    if word == "enum":
        if not isinstance(value, list) or not value:
            raise _bad(f"{place} must be a non-empty list")
        if any(v is None for v in value):
            # Vertex's importer fails a whole job on a null in an enum.
            raise _bad(f'{place} holds null: use anyOf with {{"type": "null"}} instead')
        return _plain(value, place)
    if word == "pattern":
        if not isinstance(value, str):
            raise _bad(f"{place} must be a string")
        try:
            re.compile(value)
        except re.error:
            raise _bad(f"{place} is not a regular expression") from None
        return value
    if word in ("minimum", "maximum"):
        if not _is_number(value) or not -_LARGEST <= value <= _LARGEST:
            raise _bad(f"{place} must be a number no larger in size than 1.8e308 (a 64-bit float)")
        return _plain(value, place)
    if word in ("minLength", "maxLength", "minItems", "maxItems"):
        if type(value) is not int or value < 0:
            raise _bad(f"{place} must be a whole number")
        return value
    if word in ("title", "description", "format"):
        if not isinstance(value, str):
            raise _bad(f"{place} must be a string")
        return value
    return _plain(value, place)  # const, default: any JSON value


def _plain(value: Any, place: str) -> Any:
    try:
        text = json.dumps(value, allow_nan=False)
    except ValueError as exc:
        # An int past the interpreter's int-string limit (4,300 digits by default) is a
        # ValueError too: say which, not only "not JSON data".
        if "digits" in str(exc):
            raise _bad(f"{place} holds a number too long to write as JSON text") from None
        raise _bad(f"{place} is not JSON data") from None
    except TypeError:
        raise _bad(f"{place} is not JSON data") from None
    return json.loads(text)


def _is_number(value: object) -> bool:
    """Whether ``value`` is a JSON number: an int of any size (compared exactly, never made a
    float), a float but NaN. An infinity is a number past a float's range: json's reading of
    one in a line (``_json.load_json``; ``load_exact`` reads a whole one exactly)."""
    if type(value) is int:
        return True
    if isinstance(value, float):
        return not math.isnan(value)
    return isinstance(value, int) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
    """Whether ``value`` is a whole JSON number (``2.0`` is; an infinity, a number past a float's
    range, is taken as one: every float that large is whole)."""
    if type(value) is int:
        return True
    if isinstance(value, float):
        return not math.isnan(value) and (math.isinf(value) or value.is_integer())
    return isinstance(value, int) and not isinstance(value, bool)


# --- validating an answer --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Violation:
    """Where an answer breaks its schema: the place by the schema's own names and positions
    (``$.items[2].price``; an undeclared property is never named) and the rule's keyword."""

    place: str
    rule: str


def validate(value: Any, schema: Mapping[str, Any], place: str = "$") -> Violation | None:
    """The first place ``value`` breaks ``schema`` (a normalised ``Schema.json``), or ``None``."""
    if "type" in schema and not _of_type(value, schema["type"]):
        return Violation(place, "type")
    if "const" in schema and not _equal(value, schema["const"]):
        return Violation(place, "const")
    if "enum" in schema and not any(_equal(value, v) for v in schema["enum"]):
        return Violation(place, "enum")
    if "anyOf" in schema and all(validate(value, s, place) for s in schema["anyOf"]):
        return Violation(place, "anyOf")
    if isinstance(value, dict):
        return _object(value, schema, place)
    if isinstance(value, list):
        return _array(value, schema, place)
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return Violation(place, "minLength")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return Violation(place, "maxLength")
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            return Violation(place, "pattern")
    elif _is_number(value):
        if "minimum" in schema and value < schema["minimum"]:
            return Violation(place, "minimum")
        if "maximum" in schema and value > schema["maximum"]:
            return Violation(place, "maximum")
    return None


def _object(value: dict[str, Any], schema: Mapping[str, Any], place: str) -> Violation | None:
    properties = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in value:
            return Violation(f"{place}.{name}", "required")
    for name, sub in properties.items():
        if name in value:
            found = validate(value[name], sub, f"{place}.{name}")
            if found is not None:
                return found
    if schema.get("additionalProperties") is False and not value.keys() <= properties.keys():
        return Violation(place, "additionalProperties")
    return None


def _array(value: list[Any], schema: Mapping[str, Any], place: str) -> Violation | None:
    if len(value) < schema.get("minItems", 0):
        return Violation(place, "minItems")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        return Violation(place, "maxItems")
    items = schema.get("items")
    if items is not None:
        for index, item in enumerate(value):
            found = validate(item, items, f"{place}[{index}]")
            if found is not None:
                return found
    return None


def _of_type(value: Any, kinds: str | list[str]) -> bool:
    for kind in kinds if isinstance(kinds, list) else (kinds,):
        if kind == "null" and value is None:
            return True
        if kind == "boolean" and isinstance(value, bool):
            return True
        if kind == "string" and isinstance(value, str):
            return True
        if kind == "object" and isinstance(value, dict):
            return True
        if kind == "array" and isinstance(value, list):
            return True
        if kind == "number" and _is_number(value):
            return True
        if kind == "integer" and _is_integer(value):
            return True
    return False


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: ``True`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)
