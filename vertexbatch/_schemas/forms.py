"""An answer schema written into a request, in the form each provider's batch takes (pure).

- Claude: a forced tool. ``tools`` gains ``{"name": SCHEMA_TOOL, "input_schema": schema}`` and
  ``tool_choice`` is ``{"type": "tool", "name": SCHEMA_TOOL}``: the form every Claude model on
  Vertex takes. ``output_config.format`` is not used: on Vertex it serves a few models only and
  is off unless an organization policy allows it (docs/structured-outputs.md has the sources).
- Gemini: ``generationConfig.responseMimeType: "application/json"`` and ``responseSchema``, the
  OpenAPI subset, converted here from the JSON schema. Not ``responseJsonSchema``: answers to it
  were reported degenerate in batch where ``responseSchema`` worked (crmne/ruby_llm#894).
- Open models (the ``openmaas`` lane): OpenAI's ``response_format: {"type": "json_schema",
  "json_schema": {"name": ..., "schema": ...}}`` in the chat-completions body. Whether every
  managed open model honours it in batch is not documented (docs/platform-facts.md, "Open
  models"); an answer that does not follow it is caught when results are read with ``schema=``.

A request that already sets another schema, tool choice or response type is refused before
anything is staged, naming its key and the rule. Bodies given are never modified.

Claude's property names. Anthropic refuses a tool whose ``input_schema.properties`` has a key
outside ``^[a-zA-Z0-9_.-]{1,64}$``: 400 ``invalid_request_error``, "tools.0.custom.input_schema
.properties: Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'", in a batch one line
at a time, hours after submitting. So ``claude_form`` refuses such a schema before anything is
staged (``check_claude_schema``), and the local stack fails such a line as Anthropic does.
Sources (read 2026-12-07): Anthropic's documentation states no rule for property names (its
API reference documents only the tool ``name``, ``^[a-zA-Z0-9_-]{1,64}$``); the rule is the
API's own error message as reported publicly, e.g. anthropics/claude-code#79418 (2026-07),
n8n-io/n8n#30590 (2026-05), ComposioHQ/composio#2330 (2026-01, the 64-character limit) and
#3500 (2026-06, ``$`` and ``@``), and the same message from Bedrock in
aws-solutions-library-samples/accelerated-intelligent-document-processing-on-aws#709
(2026-08), which also reports that the check is on the top level only: a nested object's
property names, ``items`` and ``$defs`` are not checked. The error names
``input_schema.properties``, so only the top-level names are held to it here (after ``$ref``s
are inlined, the form Anthropic reads). Gemini's ``responseSchema`` documents no rule for
property names (``properties`` is a ``map<string, Schema>``) and keeps taking them; the
importer's column rules (``_requests.importer_rules``) hold for both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from .._errors import InvalidRequestError
from .check import Schema

__all__ = [
    "CLAUDE_PROPERTY_NAME",
    "SCHEMA_TOOL",
    "check_claude_schema",
    "claude_form",
    "gemini_form",
    "gemini_schema",
    "openai_form",
]

# The tool a Claude answer in a schema is given as: its input is the answer.
SCHEMA_TOOL: Final = "vertexbatch_answer"
_TOOL_WORDS: Final = "Give your answer as this tool's input."
_JSON: Final = "application/json"
# Each schema's Gemini form by its digest: converted once per submission, not once per line.
_WIRE: dict[str, dict[str, Any]] = {}
# The names Anthropic takes as keys of a tool's ``input_schema.properties`` (module docstring).
CLAUDE_PROPERTY_NAME: Final = "^[a-zA-Z0-9_.-]{1,64}$"
_CLAUDE_NAME: Final = re.compile(CLAUDE_PROPERTY_NAME.strip("^$")).fullmatch
# The digests of the schemas that passed ``check_claude_schema``: checked once per submission.
_CLAUDE_OK: set[str] = set()


def check_claude_schema(schema: Schema) -> None:
    """Refuse a schema whose top-level property names Claude refuses (module docstring).

    Raises:
        InvalidRequestError (``field="schema"``): naming the first such property, its position
            and the rule.
    """
    if schema.digest in _CLAUDE_OK:
        return
    properties = schema.json.get("properties") or {}
    for position, name in enumerate(properties, start=1):
        if not _CLAUDE_NAME(name):
            raise InvalidRequestError(
                f"schema.properties has a name Claude refuses: property {position}, {name!r}: "
                f"Anthropic takes only property names matching {CLAUDE_PROPERTY_NAME} (letters, "
                "digits, '_', '.', '-'; 1 to 64 of them) in a tool's input_schema, which is "
                "how schema= reaches Claude; rename it (a pydantic field's alias= sets it)",
                field="schema",
            )
    if len(_CLAUDE_OK) >= 16:
        _CLAUDE_OK.clear()
    _CLAUDE_OK.add(schema.digest)


def _refused(key: str, field: str, what: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"{field} of request {key!r} {what}: schema= sets it for every request; drop it from "
        "the request or submit without schema=",
        field=field,
    )


# The name OpenAI's ``json_schema.name`` takes (OpenAI's chat-completions reference).
_OPENAI_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}").fullmatch


def openai_form(body: Mapping[str, Any], schema: Schema, key: str) -> dict[str, Any]:
    """An OpenAI chat-completions body with the schema as ``response_format`` (a new dict):
    ``{"type": "json_schema", "json_schema": {"name": NAME, "schema": schema}}``, ``NAME`` the
    model class's name when OpenAI takes it, else ``SCHEMA_TOOL``.

    Raises:
        InvalidRequestError: the body sets another ``response_format``.
    """
    name = schema.name if schema.name and _OPENAI_NAME(schema.name) else SCHEMA_TOOL
    wanted = {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema.json)}}
    given = body.get("response_format")
    if given is not None and (not isinstance(given, Mapping) or dict(given) != wanted):
        raise _refused(key, "body", "set 'response_format'")
    out = dict(body)
    out["response_format"] = wanted
    return out


def claude_form(body: Mapping[str, Any], schema: Schema, key: str) -> dict[str, Any]:
    """Claude params with the schema as a forced tool (a new dict).

    Raises:
        InvalidRequestError: the params set another ``tool_choice``, ``output_config.format``,
            extended thinking (Anthropic refuses it with a forced tool), or a tool of the name;
            or the schema has a property name Claude refuses (``check_claude_schema``).
    """
    check_claude_schema(schema)
    tool = {"name": SCHEMA_TOOL, "description": _TOOL_WORDS, "input_schema": dict(schema.json)}
    choice = {"type": "tool", "name": SCHEMA_TOOL}
    out = dict(body)
    given_choice = out.get("tool_choice")
    if given_choice is not None and (
        not isinstance(given_choice, Mapping) or dict(given_choice) != choice
    ):
        raise _refused(key, "params", "set 'tool_choice'")
    config = out.get("output_config")
    if isinstance(config, Mapping) and config.get("format") is not None:
        raise _refused(key, "params", "set 'output_config.format' (another answer schema)")
    thinking = out.get("thinking")
    if isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled"):
        raise InvalidRequestError(
            f"params of request {key!r} enable 'thinking': Claude refuses extended thinking "
            "with a forced tool, which is how schema= asks Claude for its answer",
            field="params",
        )
    tools = list(out.get("tools") or ())
    for given in tools:
        if isinstance(given, Mapping) and given.get("name") == SCHEMA_TOOL:
            if dict(given) != tool:
                raise _refused(key, "params", f"declare a tool named {SCHEMA_TOOL!r}")
            break
    else:
        tools.append(tool)
    out["tools"] = tools
    out["tool_choice"] = choice
    return out


def gemini_form(body: Mapping[str, Any], schema: Schema, key: str) -> dict[str, Any]:
    """A ``GenerateContentRequest`` body with the schema in ``generationConfig`` (a new dict).

    Raises:
        InvalidRequestError: the config sets another ``responseSchema``, a
            ``responseJsonSchema`` or a response type other than JSON; or the schema uses what
            the OpenAPI subset cannot say (``gemini_schema``).
    """
    wire = _WIRE.get(schema.digest)
    if wire is None:
        if len(_WIRE) >= 16:
            _WIRE.clear()
        wire = _WIRE[schema.digest] = gemini_schema(schema.json)
    out = dict(body)
    config = dict(out.get("generationConfig") or {})
    if config.get("responseJsonSchema") is not None:
        raise _refused(key, "config", "set 'response_json_schema'")
    given = config.get("responseSchema")
    if given is not None and given != wire:
        raise _refused(key, "config", "set 'response_schema'")
    mime = config.get("responseMimeType")
    if mime is not None and mime != _JSON:
        raise _refused(key, "config", f"set 'response_mime_type' to something other than {_JSON}")
    config["responseMimeType"] = _JSON
    config["responseSchema"] = wire
    out["generationConfig"] = config
    return out


_GEMINI_TYPES: Final = {
    "object": "OBJECT",
    "array": "ARRAY",
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
}
_SAME: Final = (
    "title",
    "description",
    "default",
    "required",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
)
# Formats Vertex's Schema documents; any other is a hint the model need not see (the reader
# never checks formats).
_FORMATS: Final = frozenset({"float", "double", "int32", "int64", "date-time", "enum"})


def gemini_schema(schema: Mapping[str, Any], place: str = "schema") -> dict[str, Any]:
    """A normalised JSON schema as Vertex's ``Schema`` (the OpenAPI subset), in proto JSON.

    ``["T", "null"]`` and ``anyOf`` with ``{"type": "null"}`` become ``nullable``; ``const``
    an enum of one; ``additionalProperties: false`` is left out (the subset generates declared
    properties only, and the reader still checks it); ``propertyOrdering`` defaults to the
    declared order, as the model otherwise orders properties its own way.

    Raises:
        InvalidRequestError: an enum or const of non-strings, a bare ``null`` type, or an
            object with no declared properties, which the subset cannot say.
    """
    out: dict[str, Any] = {}
    kinds = schema.get("type")
    nullable = False
    if isinstance(kinds, list):
        nullable = "null" in kinds
        kinds = [k for k in kinds if k != "null"]
        if len(kinds) > 1:
            out["anyOf"] = [{"type": _GEMINI_TYPES[k]} for k in kinds]
            kinds = None
        else:
            kinds = kinds[0] if kinds else "null"
    if kinds == "null":
        raise _subset(place, '"type": "null" on its own')
    if isinstance(kinds, str):
        out["type"] = _GEMINI_TYPES[kinds]
    branches = schema.get("anyOf")
    if branches is not None:
        rest = [b for b in branches if b.get("type") != "null"]
        nullable = nullable or len(rest) < len(branches)
        if len(rest) == 1 and not (out.keys() & {"type", "anyOf"}):
            out.update(gemini_schema(rest[0], f"{place}.anyOf[0]"))
        else:
            out["anyOf"] = [gemini_schema(b, f"{place}.anyOf[{i}]") for i, b in enumerate(rest)]
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if not all(isinstance(v, str) for v in values):
            raise _subset(place, "an enum or const of values other than strings")
        out["enum"] = list(values)
        out.setdefault("type", "STRING")
    for word in _SAME:
        if word in schema:
            out[word] = schema[word]
    if schema.get("format") in _FORMATS:
        out["format"] = schema["format"]
    if "items" in schema:
        out["items"] = gemini_schema(schema["items"], f"{place}.items")
    properties = schema.get("properties")
    if properties:
        out["properties"] = {
            name: gemini_schema(sub, f"{place}.properties.{name}")
            for name, sub in properties.items()
        }
        out["propertyOrdering"] = list(schema.get("propertyOrdering") or properties)
    elif out.get("type") == "OBJECT":
        raise _subset(place, "an object with no declared properties")
    if nullable:
        out["nullable"] = True
    return out


def _subset(place: str, what: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"schema at {place} uses {what}, which Gemini's responseSchema (Vertex's OpenAPI "
        "subset) cannot say",
        field="schema",
    )
