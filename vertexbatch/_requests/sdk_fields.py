"""Which fields a request may carry, read from the SDKs' own request types (pure).

The Anthropic API refuses a field it does not know (``invalid_request_error``, ``"temprature:
Extra inputs are not permitted"``), and so does Vertex's JSON parser for Gemini (400
``INVALID_ARGUMENT``, ``Invalid JSON payload received. Unknown name "temprature" at
'generation_config': Cannot find field.``). Which fields exist is not written here: it is read
from the installed SDKs, so the check follows their upgrades.

- Claude: ``anthropic.types.MessageCreateParams`` and every ``TypedDict`` its annotations reach
  (messages, content blocks, tools, ``tool_choice``, ``thinking``, ``metadata``, ...), plus the
  fields Vertex takes that the SDK does not model (``VERTEX_CLAUDE_FIELDS``). ``model`` is not a
  field of a Vertex batch line (the job names the model; wire reference §2.1).
- Gemini: google-genai's types by their JSON names (pydantic aliases, camelCase; the proto
  names, snake_case, are accepted too, as Google's JSON parser does): ``contents`` as
  ``Content``, ``generationConfig`` as ``GenerationConfig`` with the generation fields of
  ``GenerateContentConfig``, and the request-level fields of ``GenerateContentConfig``
  (``GEMINI_REQUEST_LEVEL``: ``systemInstruction``, ``tools``, ``toolConfig``, ...).

A union (a content block, a tool) is matched by its members' ``Literal`` fields (``type``);
the value is accepted when one matching member knows all its fields. A field typed as free JSON
(``Any``, ``Dict[str, object]``: a tool's ``input_schema``, ``responseJsonSchema``) is not
looked into. Only unknown *names* are found here; types and values are the provider's to judge.

``claude_unknown`` and ``gemini_unknown`` answer the first unknown field as an ``Unknown``: the
place (``messages[0].contnet``) and the provider's own message for it, never a value. The local
stack refuses such lines with those messages; the client refuses them before staging, naming
undocumented names by position only (a mapping's keys may be content).

A Claude request of the Messages API's first fields only (``plain_claude``) is known without
the SDK, so text requests never import anthropic; so is a Gemini request of text contents and
the generation fields of ``PLAIN_GEMINI_CONFIG`` (``plain_gemini``), so such requests never
import google-genai's types.

The local stack imports ``claude_unknown`` and ``gemini_unknown`` from here
(``vertexbatch/emulator/_model.py``; ``SHARED_WITH_STACK`` in tests/guards/test_layers.py), so
the client and the stack cannot disagree about which fields exist. So this module imports
nothing of vertexbatch but its walk (``_requests.type_walk``), which imports nothing at all;
a guard test holds both, and ``tests/requests/test_request_fields.py`` holds the table to the
SDK types (a mistake in it would be made on both sides).
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping
from typing import Any

from .type_walk import FREE, LEAF, Compiler, ListOf, Record, Unknown, Walk

__all__ = [
    "GEMINI_REQUEST_LEVEL",
    "PLAIN_GEMINI_CONFIG",
    "VERTEX_CLAUDE_FIELDS",
    "claude_unknown",
    "gemini_unknown",
    "plain_claude",
    "plain_gemini",
]

VERTEX_CLAUDE_FIELDS: frozenset[str] = frozenset(
    {"anthropic_version", "anthropic_beta", "temperature", "top_p", "top_k"}
)
"""Top-level fields of a Claude line on Vertex that the installed SDK's ``MessageCreateParams``
may not model: ``anthropic_version`` (Vertex's own, required), ``anthropic_beta`` (Vertex reads
beta flags from the body, as the SDK's Bedrock client writes them), and the sampling
parameters, which Anthropic's API takes under the ``vertex-2023-10-16`` version batch lines
carry and which anthropic 2.10+ dropped with API version 2026-10-21."""

GEMINI_REQUEST_LEVEL: Mapping[str, str] = {
    "systemInstruction": "systemInstruction",
    "safetySettings": "safetySettings",
    "tools": "tools",
    "toolConfig": "toolConfig",
    "labels": "labels",
    "cachedContent": "cachedContent",
    "modelArmorConfig": "modelArmorConfig",
    "serviceTier": "serviceTier",
    "continuationToken": "continuationToken",
    "generationOutputConfig": "outputConfig",
}
"""``GenerateContentConfig`` fields (by JSON alias) that sit on the request itself, each with
its wire name; the config's other fields are ``generationConfig``'s. The one table: the client
splits a config by it (``_requests.gemini_body``), and reads a table's requests by it
(``_bigquery.source``)."""

_GEMINI_CLIENT_SIDE = frozenset(
    {
        "httpOptions",
        "shouldReturnHttpResponse",
        "automaticFunctionCalling",
        "automaticContinuation",
        "enableEnhancedCivicAnswers",
        "store",
    }
)


# The two providers.


@functools.lru_cache(maxsize=8)
def _claude_root(params_type: Any) -> tuple[Record, Compiler]:
    compiler = Compiler()
    types = typing.get_args(params_type) if typing.get_origin(params_type) else (params_type,)
    root = Record(source=None, resolved=True)
    for member in types:
        record = compiler.resolve(compiler.record(member))
        root.fields.update(record.fields)
    root.fields.pop("model", None)  # the job names the model (wire reference §2.1)
    for name in VERTEX_CLAUDE_FIELDS:
        root.fields.setdefault(name, (FREE, name))
    return root, compiler


@functools.cache
def _default_claude() -> tuple[Record, Compiler]:
    from anthropic.types import MessageCreateParams

    return _claude_root(MessageCreateParams)


def claude_unknown(body: Any, params_type: Any = None) -> Unknown | None:
    """The first field of a Claude line's ``request`` that the API would refuse as unknown.

    ``params_type``: the request type (default ``anthropic.types.MessageCreateParams``, the
    union of its non-streaming and streaming forms).
    """
    if params_type is None:
        if plain_claude(body):  # known without the SDK: no import of anthropic for it
            return None
        root, compiler = _default_claude()
    else:
        root, compiler = _claude_root(params_type)
    return Walk(compiler, tags=True).find(body, root)


# A Claude request of the Messages API's first fields only, known without the SDK. Importing
# anthropic to compile its types costs a process about 1.3 s of CPU and 50 MB
# (``python -m benchmarks.cold_start``); a request of these fields only cannot name an unknown
# field in any SDK that has them (tests/requests/test_plain_claude.py holds each name against the
# installed SDK's types), so it needs none. Any other field, or another shape, is the SDK
# walk's to judge.
# Fields whose values the walk never looks into (numbers, strings, lists of strings, free JSON).
_PLAIN_LEAVES: frozenset[str] = frozenset({"max_tokens", "stop_sequences"} | VERTEX_CLAUDE_FIELDS)
_PLAIN_TOP: frozenset[str] = _PLAIN_LEAVES | {"messages", "system", "metadata"}
_PLAIN_MESSAGE: frozenset[str] = frozenset({"role", "content"})
_PLAIN_ROLES: frozenset[str] = frozenset({"user", "assistant"})
_PLAIN_TEXT: frozenset[str] = frozenset({"type", "text", "cache_control"})
_PLAIN_CACHE: frozenset[str] = frozenset({"type", "ttl"})
_PLAIN_METADATA: frozenset[str] = frozenset({"user_id"})


def plain_claude(body: Any) -> bool:
    """Whether a Claude request's params use only the Messages API's first fields (``True``:
    none is unknown): ``max_tokens``, ``stop_sequences``, ``VERTEX_CLAUDE_FIELDS``,
    ``metadata.user_id``, ``system`` and ``messages`` of ``user`` and ``assistant`` turns, as
    text or text blocks (``type``, ``text``, ``cache_control`` of ``type`` and ``ttl``).
    ``False`` says only that the SDK's types must judge it."""
    if type(body) is not dict or not _PLAIN_TOP.issuperset(body):
        return False
    metadata = body.get("metadata")
    if metadata is not None and (
        type(metadata) is not dict or not _PLAIN_METADATA.issuperset(metadata)
    ):
        return False
    system = body.get("system")
    if system is not None and type(system) is not str and not _plain_blocks(system):
        return False
    messages = body.get("messages")
    if messages is None:
        return True
    if type(messages) is not list:
        return False
    for message in messages:
        if type(message) is not dict or not _PLAIN_MESSAGE.issuperset(message):
            return False
        role = message.get("role")
        if type(role) is not str or role not in _PLAIN_ROLES:  # a list is unhashable
            return False
        content = message.get("content")
        if content is not None and type(content) is not str and not _plain_blocks(content):
            return False
    return True


def _plain_blocks(blocks: Any) -> bool:
    """Whether ``blocks`` is a list of text blocks of the first fields only."""
    if type(blocks) is not list:
        return False
    for block in blocks:
        if type(block) is not dict or block.get("type") != "text":
            return False
        if not _PLAIN_TEXT.issuperset(block):
            return False
        cache = block.get("cache_control")
        if cache is not None and (type(cache) is not dict or not _PLAIN_CACHE.issuperset(cache)):
            return False
    return True


@functools.lru_cache(maxsize=8)
def _gemini_root(
    config_type: Any, generation_type: Any, content_type: Any
) -> tuple[Record, Compiler]:
    compiler = Compiler()
    config = compiler.resolve(compiler.record(config_type))
    generation = Record(source=None, resolved=True)
    generation.fields.update(compiler.resolve(compiler.record(generation_type)).fields)
    root = Record(source=None, resolved=True)
    content = compiler.record(content_type)
    root.fields["contents"] = (ListOf(content), "contents")
    root.fields["model"] = (LEAF, "model")  # a field of the REST request (the URL's, in batch)
    for alias, info in config_type.model_fields.items():
        wire = info.alias or alias
        node, _ = config.fields[wire]
        if wire in GEMINI_REQUEST_LEVEL:
            name = GEMINI_REQUEST_LEVEL[wire]
            # What the config takes in more forms than the wire: a ContentUnion, any list.
            if name == "systemInstruction":
                node = content
            elif name == "tools":
                node = ListOf(compiler.record(_module_of(config_type).Tool))
            proto = _snake(name)
            root.fields[name] = root.fields[proto] = (node, proto)
        elif wire not in _GEMINI_CLIENT_SIDE:
            generation.fields.setdefault(wire, (node, alias))
            generation.fields.setdefault(alias, (node, alias))
    root.fields["generationConfig"] = root.fields["generation_config"] = (
        generation,
        "generation_config",
    )
    return root, compiler


def _module_of(kind: Any) -> Any:
    """The module of google-genai's types that ``kind`` (or what it subclasses) is from."""
    import sys

    for base in kind.__mro__:
        module = sys.modules.get(base.__module__)
        if module is not None and hasattr(module, "Tool"):
            return module
    from google.genai import types

    return types


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def gemini_unknown(
    body: Any, config_type: Any = None, generation_type: Any = None, content_type: Any = None
) -> Unknown | None:
    """The first field of a Gemini line's ``request`` (a ``GenerateContentRequest``) that
    Vertex would refuse as unknown.

    The types default to google-genai's ``GenerateContentConfig``, ``GenerationConfig`` and
    ``Content``.
    """
    defaults = config_type is None and generation_type is None and content_type is None
    if defaults and plain_gemini(body):  # known without the SDK: no import of google-genai
        return None
    if config_type is None or generation_type is None or content_type is None:
        from google.genai import types

        config_type = config_type or types.GenerateContentConfig
        generation_type = generation_type or types.GenerationConfig
        content_type = content_type or types.Content
    root, compiler = _gemini_root(config_type, generation_type, content_type)
    return Walk(compiler, tags=False).find(body, root)


# A Gemini request of text contents and the first generation fields only, known without the SDK.
# Importing google-genai's types (with pydantic) costs a cold process about a second of CPU
# (``python -m benchmarks.run --only cold``); a request of these fields only cannot name an
# unknown field in a google-genai that has them (tests/requests/test_plain_gemini.py holds each
# name, alias and type against the installed SDK's types). Any other field, or another shape, is
# the SDK walk's to judge.
PLAIN_GEMINI_CONFIG: tuple[tuple[str, str, str], ...] = (
    ("system_instruction", "systemInstruction", "text"),
    ("temperature", "temperature", "float"),
    ("top_p", "topP", "float"),
    ("top_k", "topK", "float"),
    ("candidate_count", "candidateCount", "int"),
    ("max_output_tokens", "maxOutputTokens", "int"),
    ("stop_sequences", "stopSequences", "texts"),
    ("response_logprobs", "responseLogprobs", "bool"),
    ("logprobs", "logprobs", "int"),
    ("presence_penalty", "presencePenalty", "float"),
    ("frequency_penalty", "frequencyPenalty", "float"),
    ("seed", "seed", "int"),
    ("response_mime_type", "responseMimeType", "text"),
    ("labels", "labels", "labels"),
    ("response_modalities", "responseModalities", "texts"),
)
"""Fields of google-genai's ``GenerateContentConfig`` a config may use and still be read without
google-genai (``_requests.plain_config``): (field name, JSON alias, kind of value), in the
model's field order. A kind is what the plain path takes (anything else goes to the SDK):
``float`` (an int or a float), ``int``, ``bool``, ``text`` (a string: ``systemInstruction`` as
one string only), ``texts`` (a list of strings), ``labels`` (string to string)."""

_PLAIN_GENERATION: frozenset[str] = frozenset(
    name
    for entry in PLAIN_GEMINI_CONFIG
    if entry[1] not in GEMINI_REQUEST_LEVEL
    for name in entry[:2]
)
_PLAIN_REQUEST: frozenset[str] = frozenset(
    {"contents", "systemInstruction", "generationConfig", "labels"}
)
_PLAIN_CONTENT: frozenset[str] = frozenset({"role", "parts"})
_PLAIN_PART: frozenset[str] = frozenset({"text"})


def plain_gemini(body: Any) -> bool:
    """Whether a Gemini request (``GenerateContentRequest`` JSON) uses only text contents
    (``role``, ``parts`` of ``text``), a ``systemInstruction`` of the same, a
    ``generationConfig`` of ``PLAIN_GEMINI_CONFIG``'s generation fields (by alias or name) and
    ``labels`` (``True``: none is unknown). ``False`` says only that the SDK's types must judge
    it."""
    if type(body) is not dict or not _PLAIN_REQUEST.issuperset(body):
        return False
    contents = body.get("contents")
    if contents is not None:
        if type(contents) is not list:
            return False
        if not all(_plain_content(content) for content in contents):
            return False
    system = body.get("systemInstruction")
    if system is not None and not _plain_content(system):
        return False
    generation = body.get("generationConfig")
    return generation is None or (
        type(generation) is dict and _PLAIN_GENERATION.issuperset(generation)
    )


def _plain_content(content: Any) -> bool:
    """Whether ``content`` is a ``Content`` of text parts only."""
    if type(content) is not dict or not _PLAIN_CONTENT.issuperset(content):
        return False
    parts = content.get("parts")
    if parts is None:
        return True
    if type(parts) is not list:
        return False
    return all(type(part) is dict and _PLAIN_PART.issuperset(part) for part in parts)
