"""Input lines: what each request becomes on the wire, checked before anything is staged.

Pure functions only. Claude lines carry a digest of the key as ``custom_id``; Gemini lines carry it
as a request label and as a sibling field (see ``_keymap`` for how output finds its key again).
Every line is checked against the rules of Vertex's importer and written as strict JSON.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ._errors import InvalidRequestError
from ._importer import (
    MAX_DEPTH,
    FieldTypes,
    Problem,
    documented_names,
    keys_are_strings,
    problem,
    scan,
)
from ._keymap import KEY_FIELD, canonical_digest, key_digest
from ._models import ClaudeRequest, GeminiRequest

if TYPE_CHECKING:
    from google.genai import types as genai_types

__all__ = [
    "ANTHROPIC_VERSION",
    "StagedLine",
    "claude_line",
    "gemini_line",
    "gemini_request_body",
    "one_shape",
]

# The version Vertex documents for Claude batch input lines.
ANTHROPIC_VERSION = "vertex-2023-10-16"

# GenerateContentConfig fields (by JSON alias) that go on the request itself, not in
# generationConfig; the rest of the config is generation settings. What only the client uses is
# refused: it would have no effect in batch.
_REQUEST_LEVEL = {
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
_CLIENT_SIDE = {
    "httpOptions",
    "shouldReturnHttpResponse",
    "automaticFunctionCalling",
    "automaticContinuation",
}
_NOT_ON_VERTEX = {"enableEnhancedCivicAnswers", "store"}
# Compact JSON as staged; the sorted encoder also gives the canonical text.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_SORTED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)
# A string as a JSON string, as _COMPACT writes it (json's own C function).
_quoted = json.encoder.encode_basestring
# What is staged is written strictly: NaN and Infinity are not JSON, and a line holding them
# would fail Vertex's import of the whole job.
_STRICT_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_STRICT_SORTED = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
)


def _loaded(module: str, name: str) -> Any:
    """``module.name`` if ``module`` is imported, else ``None``; never imports it.

    For ``isinstance`` checks against google-genai and pydantic types, which take a third of a
    second to import: a value of a type whose module was never imported cannot exist.
    """
    found = sys.modules.get(module)
    return None if found is None else getattr(found, name)


@dataclass(frozen=True, slots=True)
class StagedLine:
    """One request as staged: its key, digests and the JSONL bytes (newline included)."""

    key: str
    digest: str
    canonical: str
    data: bytes

    def key_record(self) -> bytes:
        """This line's entry in the staged key map."""
        # What _COMPACT.encode([key, digest, canonical]) writes (the digests are hex), built
        # directly: one of these per request.
        return f'[{_quoted(self.key)},"{self.digest}","{self.canonical}"]\n'.encode()


def _line(
    key: str,
    digest: str,
    id_field: str,
    request: dict[str, Any],
    types: FieldTypes | None = None,
    shared: tuple[str, ...] = (),
) -> StagedLine:
    """Check and serialise one request into its line, with the canonical digest on the way.

    The request is serialised once, keys sorted: when it is already canonical (the usual case)
    that text is also the one its canonical digest is taken of. Labels are left out of the
    digest and appended to the line's request. With ``types`` (the field types of the earlier
    lines of the same input), a field whose type differs from an earlier line's is refused;
    ``shared``: fields whose values are shared between lines and never modified (see
    ``FieldTypes.check``).

    Raises:
        InvalidRequestError: the line breaks an importer rule or is not JSON data (NaN, a key
            that is not a string, a set, ...); the message names the place by documented field
            names and positions only, and no exception is chained to it.
    """
    # The importer's rules and the field types across lines in one walk (``FieldTypes.check``).
    check = types.check if types is not None else _unchecked_types
    bad, canonical, plain, fixed, clash = check(request, key, shared)
    if not bad and not plain:
        request = _dump(request)  # copies: shares nothing
        bad, canonical, plain, fixed, clash = check(request, key, ())
        bad = bad or not plain  # still not plain once converted: not JSON data
    if not bad:
        labels = request.get("labels")
        body = request
        if labels is not None:
            body = request.copy()
            del body["labels"]
        try:
            sorted_body = _sorted_json(body, fixed)
            if labels is None:
                text = sorted_body
            else:
                rest = sorted_body[1:-1]
                labelled = _compact_json(labels, fixed)
                text = b'{%b%b"labels":%b}' % (rest, b"," if rest else b"", labelled)
            line = StagedLine(  # by position: a third faster than by keyword, once a line
                key,
                digest,
                # As digest_text(text) has it, of the UTF-8 bytes at hand.
                (
                    hashlib.sha256(sorted_body).hexdigest()[:32]
                    if canonical
                    else canonical_digest(request)
                ),
                b'{"%b":"%b","request":%b}\n' % (id_field.encode(), digest.encode(), text),
            )
        except (TypeError, ValueError, RecursionError):  # NaN, not UTF-8, not JSON data
            if types is not None:
                types.undo()
        else:
            if clash is None:
                return line
            raise _refused(key, id_field, clash)
    # Raised outside the except block: nothing that holds request content is chained to it.
    raise _refused(key, id_field, problem(_dump(request)))


def _unchecked_types(
    request: Any, key: str, shared: tuple[str, ...]
) -> tuple[bool, bool, bool, bool, Problem | None]:
    """``FieldTypes.check``'s answers with no types to check across lines: ``scan``'s."""
    return (*scan(request), None)


def _sorted_json(body: dict[str, Any], fixed: bool) -> bytes:
    """``_STRICT_SORTED.encode(body)`` in UTF-8, byte for byte; by orjson when that is the same.

    orjson writes the same text for plain JSON data (exact built-in types, string keys: what
    ``scan`` calls plain) in five to ten times less time, except floats below 1e-4 or from 1e16
    in size (``fixed`` says there are none), integers past 64 bits and strings that are not UTF-8
    (it refuses those): then json writes it, or refuses it as before. docs/architecture.md has
    the decision; tests/test_fast_paths.py the proof.
    """
    if fixed:
        try:
            return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass
    return _STRICT_SORTED.encode(body).encode()


def _compact_json(value: Any, fixed: bool) -> bytes:
    """``_STRICT_COMPACT.encode(value)`` in UTF-8, byte for byte; by orjson when that is the
    same (as ``_sorted_json``, keys in their own order)."""
    if fixed:
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass
    return _STRICT_COMPACT.encode(value).encode()


def _refused(key: str, id_field: str, found: Problem | None) -> InvalidRequestError:
    """The error for a line that cannot be staged, in the terms of the caller's request."""
    top, place, rule = found or ("", "", "not JSON data")
    if id_field == "custom_id":  # a Claude line: the request is the params
        field, place = "params", f"params.{place}" if place else "params"
    else:
        field, place = ("contents" if top == "contents" else "config"), place or "the request"
    return InvalidRequestError(f"request {key!r} {_cannot(rule)}: {place} is {rule}", field=field)


def _cannot(rule: str) -> str:
    # The importer's rules say so; the others are JSON's.
    return "cannot be imported by Vertex" if "importer" in rule else "cannot be written as JSON"


def claude_line(request: ClaudeRequest, types: FieldTypes | None = None) -> StagedLine:
    """The Vertex batch line of a Claude request: ``{"custom_id": digest, "request": params}``.

    ``system``, each message's ``content`` and each ``tool_result`` block's ``content`` are
    staged as lists of content blocks, a string becoming one text block: Anthropic reads both
    shapes alike, and Vertex's importer fails a job whose lines mix them (see ``one_shape``).
    ``types``: the field types of the earlier lines of the same input (``FieldTypes``).
    """
    params = request.params
    if type(params) is not dict and not isinstance(params, Mapping):
        raise InvalidRequestError(
            f"params of request {request.key!r} must be a mapping of Anthropic Messages "
            f"parameters, got {type(params).__name__}",
            field="params",
        )
    body = dict(params)
    if "model" in body:
        raise InvalidRequestError(
            f"params of request {request.key!r} set 'model': the job's model is given to "
            "submit_claude or run_claude, and one job runs one model; drop it from params",
            field="params",
        )
    if body.get("stream", False) is not False:
        raise InvalidRequestError(
            f"params of request {request.key!r} set 'stream': batch prediction answers each "
            "request whole and does not stream; drop it",
            field="params",
        )
    for required in ("max_tokens", "messages"):
        if required not in body:
            raise InvalidRequestError(
                f"params of request {request.key!r} lack {required!r}, which Claude requires",
                field="params",
            )
    # What the Messages API refuses line by line, refused here before anything is staged.
    messages, max_tokens = body["messages"], body["max_tokens"]
    if not isinstance(messages, list | tuple) or not messages:
        what = "an empty list" if isinstance(messages, list | tuple) else type(messages).__name__
        raise InvalidRequestError(
            f"params of request {request.key!r} give 'messages' as {what}: Claude needs a list "
            "of at least one message",
            field="params",
        )
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        what = repr(max_tokens) if type(max_tokens) is int else type(max_tokens).__name__
        raise InvalidRequestError(
            f"params of request {request.key!r} give 'max_tokens' as {what}: Claude needs a "
            "whole number of at least 1",
            field="params",
        )
    body.setdefault("anthropic_version", ANTHROPIC_VERSION)
    try:
        # A system string's blocks are shared (``_system_blocks``): walked once per input.
        shared = ("system",) if type(body.get("system")) is str else ()
        return _line(
            request.key, key_digest(request.key), "custom_id", one_shape(body), types, shared
        )
    except InvalidRequestError as exc:
        refused = exc
    body = dict(params)  # as the caller gave it: one_shape changed the copy above
    body.setdefault("anthropic_version", ANTHROPIC_VERSION)
    # Outside the except block, so nothing is chained: a place inside the line is named in the
    # caller's own shape (``system``, not ``system[0].text``); a type clash as staged.
    found = problem(_dump(body))
    raise refused if found is None else _refused(request.key, "custom_id", found)


def _text_blocks(value: Any) -> Any:
    """A string as a list of one text block; anything else as it is."""
    if isinstance(value, str):
        return [{"type": "text", "text": str.__str__(value)}]
    return value


# The blocks of a system string (``_system_blocks``), by the string: a few, as prompts may be
# long and are held until cleared.
_SYSTEM_BLOCKS: dict[str, list[dict[str, str]]] = {}
_SYSTEM_HELD = 16


def _system_blocks(system: str) -> list[dict[str, str]]:
    """``_text_blocks`` of a ``str``, one list for equal strings: a job's requests usually
    share one system prompt, and its blocks are then walked once per input (``shared``)."""
    found = _SYSTEM_BLOCKS.get(system)
    if found is None:
        if len(_SYSTEM_BLOCKS) >= _SYSTEM_HELD:
            _SYSTEM_BLOCKS.clear()  # many prompts: each is used by few lines
        found = _SYSTEM_BLOCKS[system] = [{"type": "text", "text": system}]
    return found


def _blocks_of(content: Any) -> Any:
    """Message content as a list of blocks, a ``tool_result``'s own content too (copied when
    changed, never modified)."""
    if isinstance(content, str):
        return _text_blocks(content)
    if type(content) is not list:
        return content
    out: list[Any] | None = None
    for i, block in enumerate(content):
        if (
            isinstance(block, Mapping)
            and block.get("type") == "tool_result"
            and isinstance(block.get("content"), str)
        ):
            if out is None:
                out = list(content)
            out[i] = {**block, "content": _text_blocks(block["content"])}
    return content if out is None else out


def one_shape(body: dict[str, Any]) -> dict[str, Any]:
    """Claude params with every field Anthropic takes as a string or as blocks in block form.

    ``system`` and message (and ``tool_result``) ``content`` may be a string or a list of content
    blocks; Vertex's importer fixes each field's type from the lines it reads, so a job mixing
    the two would fail whole. A string becomes ``[{"type": "text", "text": ...}]``, which
    Anthropic reads the same. ``body`` is a fresh dict and is updated; nothing below it is
    modified (changed messages are copies). A ``system`` string's blocks are shared between
    the bodies of equal strings: never modify them.
    """
    if "system" in body:
        system = body["system"]
        body["system"] = _system_blocks(system) if type(system) is str else _text_blocks(system)
    messages = body.get("messages")
    if type(messages) is list:
        out: list[Any] | None = None
        for i, message in enumerate(messages):
            if (type(message) is dict or isinstance(message, Mapping)) and "content" in message:
                content = message["content"]
                blocks = _blocks_of(content)
                if blocks is not content:
                    if out is None:
                        out = list(messages)
                    out[i] = {**message, "content": blocks}
        if out is not None:
            body["messages"] = out
    return body


def _dump(value: Any, depth: int = 0) -> Any:
    """Plain JSON data of a request value, as far as it is JSON data at all.

    google-genai values become their wire form (pydantic models by their aliases), mappings
    dicts, tuples lists, and ``str``, ``int`` and ``float`` subclasses (enums) the plain value
    JSON writes for them; keys that are ``str`` subclasses become ``str``. Anything else (a set,
    bytes, an object, a key that is not a string) is left as it is, for the caller to refuse.
    Conversion stops below the depth the importer allows, so a cyclic or very deep value costs
    a bounded walk (the line is refused for its depth).
    """
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if depth > MAX_DEPTH + 1:
        return value
    base_model = _loaded("pydantic", "BaseModel")
    if base_model is not None and isinstance(value, base_model):
        try:
            return value.model_dump(mode="json", exclude_none=True, by_alias=True)
        except Exception:  # e.g. an object in an ``Any`` field: refused as not JSON data
            return value
    if isinstance(value, Mapping):
        return {
            (str.__str__(k) if type(k) is not str and isinstance(k, str) else k): _dump(
                v, depth + 1
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_dump(v, depth + 1) for v in value]
    # The base methods give the plain value even when a subclass overrides them.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value


def _contents(key: str, contents: Any) -> list[Any]:
    # Fast path for the common forms; google-genai's own transformer handles the rest.
    if isinstance(contents, str):
        return [{"role": "user", "parts": [{"text": contents}]}]
    if type(contents) is list and contents and all(type(c) is dict for c in contents):
        return list(contents)  # the usual form: plain dicts go as they are (never modified)
    if contents is None or (isinstance(contents, list | tuple) and not contents):
        what = "None" if contents is None else "empty"
        raise InvalidRequestError(
            f"contents of request {key!r} are {what}: a Gemini request needs at least one turn",
            field="contents",
        )
    content = _loaded("google.genai.types", "Content")
    kinds = (Mapping,) if content is None else (content, Mapping)
    if isinstance(contents, list) and all(isinstance(c, kinds) for c in contents):
        # Plain dicts go as they are (never modified); anything else in them is converted
        # when the line is scanned.
        return [c if type(c) is dict else _dump(c) for c in contents]
    from google.genai import _transformers

    try:
        return [_dump(c) for c in _transformers.t_contents(contents)]
    except Exception as exc:  # whatever google-genai raises for a value it cannot read
        kind = type(exc).__name__
    # Raised outside the except block: google-genai's error may quote the contents.
    raise InvalidRequestError(
        f"contents of request {key!r} are not google-genai contents ({kind}): give a string, "
        "Content values or their dict form",
        field="contents",
    )


def _config(key: str, config: Any) -> dict[str, Any]:
    """The config's fields by their wire names (shared between calls: never modify it).

    Errors name config fields by their documented names and positions only; none is chained
    (a pydantic error quotes the value it refused).
    """
    if config is None:
        return {}
    config_type = _loaded("google.genai.types", "GenerateContentConfig")
    if config_type is not None and isinstance(config, config_type):
        try:
            return _dump_config(config)
        except _NotForBatch as exc:
            reason = str(exc)
        except Exception as exc:  # a value in an ``Any`` field pydantic cannot serialise
            reason = f"cannot be written as JSON ({type(exc).__name__})"
        raise InvalidRequestError(f"config of request {key!r} {reason}", field="config")
    if not isinstance(config, Mapping):
        raise InvalidRequestError(
            f"config of request {key!r} must be a GenerateContentConfig or its dict form, "
            f"got {type(config).__name__}",
            field="config",
        )
    text = None
    # json.dumps would write an int key as a string, NaN as a bare token: checked first.
    if type(config) is dict and keys_are_strings(config):
        # Failing: google-genai values in it (converted below), or not JSON data.
        with contextlib.suppress(TypeError, ValueError):
            text = _STRICT_SORTED.encode(config)
    if text is None:
        dumped = _dump(config)
        found = problem(dumped, importer=False)
        if found is not None:
            raise _config_refused(key, found)
        text = _STRICT_SORTED.encode(dumped)
    errors: list[Any] = []
    reason = ""
    try:
        return _config_of_json(text)
    except _NotForBatch as exc:
        reason = str(exc)
    except _Invalid as exc:
        errors = exc.errors
    if errors:
        dumped = _dump(config)
        found = problem(dumped, importer=False)  # a string that is not UTF-8, say
        if found is not None:
            raise _config_refused(key, found)
        reason = _bad_fields(errors, dumped)
    raise InvalidRequestError(f"config of request {key!r} {reason}", field="config")


def _config_refused(key: str, found: Problem | None) -> InvalidRequestError:
    _, place, rule = found or ("", "", "not JSON data")
    return InvalidRequestError(
        f"config of request {key!r} {_cannot(rule)}: "
        f"{'config.' + place if place else 'config'} is {rule}",
        field="config",
    )


# pydantic error types, in words.
_ERROR_WORDS = {"extra_forbidden": "unknown field", "missing": "missing"}


def _bad_fields(errors: Iterable[Mapping[str, Any]], config: Any) -> str:
    """What pydantic refused in a config, by place and error type, never by value."""
    places = {
        f"{_place(config, e['loc'])} ({_ERROR_WORDS.get(e['type'], e['type'])})": None
        for e in errors
    }
    shown = list(places)[:5]
    more = f" and {len(places) - 5} more" if len(places) > 5 else ""
    return f"is not a GenerateContentConfig: {'; '.join(shown)}{more}"


def _place(value: Any, loc: Iterable[Any]) -> str:
    """A pydantic error location in a config, by documented field names and positions only."""
    known = documented_names()
    path = "config"
    node = value
    for item in loc:
        if isinstance(node, dict) and isinstance(item, str) and item in node:
            path += f".{item}" if item in known else f".<field {list(node).index(item) + 1}>"
            node = node[item]
        elif type(item) is int:
            path += f"[{item}]"
            node = node[item] if isinstance(node, list) and 0 <= item < len(node) else None
        elif isinstance(item, str) and item in known:  # a missing field, say
            path += f".{item}"
            node = None
        # Anything else is pydantic's own marker (a union member, "[key]"): not a place.
    return path


class _NotForBatch(Exception):
    """A config the batch API cannot take; the message (no content) follows the request key."""


class _Invalid(Exception):
    """pydantic refused a dict config: its errors, without the values they refused."""

    def __init__(self, errors: list[Any]) -> None:
        super().__init__("invalid config")
        self.errors = errors


def _dump_config(config: genai_types.GenerateContentConfig) -> dict[str, Any]:
    dumped: dict[str, Any] = config.model_dump(mode="json", exclude_none=True, by_alias=True)
    refused = sorted(_NOT_ON_VERTEX & dumped.keys())
    if refused:
        raise _NotForBatch(f"sets {refused}, which Vertex does not support")
    client_side = sorted(_CLIENT_SIDE & dumped.keys())
    if client_side:
        raise _NotForBatch(
            f"sets {client_side}, which only the google-genai client uses: they have no effect "
            "in batch prediction; drop them"
        )
    return dumped


@functools.lru_cache(maxsize=64)
def _config_of_json(text: str) -> dict[str, Any]:
    """Validate a dict config once per distinct config: a job's requests usually share one.

    Raises:
        _Invalid: pydantic's errors, when the config is not a ``GenerateContentConfig``.
        _NotForBatch: the config sets fields batch prediction cannot take.
    """
    # Imported here, once per distinct config, not per line: google-genai's types are needed
    # only to validate a config.
    import pydantic
    from google.genai import types as genai_types

    try:
        config = genai_types.GenerateContentConfig.model_validate_json(text)
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
    else:
        return _dump_config(config)
    # Raised outside the except block: pydantic's error quotes the values it refused.
    raise _Invalid(errors)


def gemini_request_body(key: str, contents: Any, config: Any) -> dict[str, Any]:
    """The ``GenerateContentRequest`` JSON of one Gemini request (pure).

    What comes from the config is shared between the requests of one config: never modify it.
    """
    return _gemini_body(key, contents, config)[0]


def _gemini_body(key: str, contents: Any, config: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``gemini_request_body``, and the fields whose values are shared with other requests of
    an equal dict config (for ``FieldTypes.check``; labels aside, which the line replaces)."""
    request: dict[str, Any] = {"contents": _contents(key, contents)}
    fields, generation, shared = _config_parts(key, config)
    request.update(fields)
    if generation:
        request["generationConfig"] = generation
    return request, shared


# A config's parts (``_config_parts``) by the exact text of the config (``_config_key``).
_PARTS: dict[bytes, tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]] = {}
_PARTS_HELD = 64


def _config_parts(key: str, config: Any) -> tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]:
    """The request's fields from a config (wire names, in the config's order), its
    ``generationConfig`` and the names of those shared between requests (none when the config
    is not remembered): validated once per distinct dict config, not once per line.

    A job's requests usually share one config: the same dict, or equal dicts built per request.
    Remembered by the config's exact text (``_config_key``), not by identity: a caller may change
    a dict between requests, and an equal dict is as good as the same one.
    """
    text = _config_key(config)
    if text is not None:
        found = _PARTS.get(text)
        if found is not None:
            return found
    fields: dict[str, Any] = {}
    generation: dict[str, Any] = {}
    for name, value in _config(key, config).items():
        if name in _REQUEST_LEVEL:
            fields[_REQUEST_LEVEL[name]] = value
        else:
            generation[name] = value
    system = fields.get("systemInstruction")
    if isinstance(system, str):
        fields["systemInstruction"] = {"role": "user", "parts": [{"text": system}]}
    if text is None:
        return fields, generation, ()
    shared = (*(name for name in fields if name != "labels"), "generationConfig")
    if len(_PARTS) >= _PARTS_HELD:
        _PARTS.clear()  # a job's configs are few: more means each is used by few lines
    _PARTS[text] = fields, generation, shared
    return fields, generation, shared


def _config_key(config: Any) -> bytes | None:
    """A dict config's text, equal for two configs exactly when ``_config`` gives them one
    answer; ``None`` for any other config (validated each time).

    orjson's sorted text of plain JSON data (``scan``: exact built-in types, string keys) with
    no NaN or Infinity (``fixed``) tells every value apart: ``1``, ``1.0`` and ``true``, ``0.0``
    and ``-0.0``, a string and a number. Anything else (a str subclass or an enum, which orjson
    writes as their value; NaN, which it writes as ``null``; a tuple; integers past 64 bits) is
    left to ``_config``. ``scan``'s rules for lines (no empty object, key names) do not apply
    to a config: a config that breaks them is only not remembered.
    """
    if type(config) is not dict:
        return None
    bad, _, plain, fixed = scan(config)
    if bad or not plain or not fixed:
        return None
    try:
        return orjson.dumps(config, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # an integer past 64 bits, a string that is not UTF-8
        return None


def gemini_line(request: GeminiRequest, types: FieldTypes | None = None) -> StagedLine:
    """The Vertex batch line of a Gemini request, its key digest in a label and a sibling field.

    ``types``: the field types of the earlier lines of the same input (``FieldTypes``).
    """
    body, shared = _gemini_body(request.key, request.contents, request.config)
    digest = key_digest(request.key)
    labels = dict(body.get("labels") or {})
    if KEY_FIELD in labels:
        raise InvalidRequestError(
            f"config.labels of request {request.key!r} uses {KEY_FIELD!r}, which vertexbatch "
            "reserves for correlation",
            field="config",
        )
    labels[KEY_FIELD] = digest
    body["labels"] = labels
    return _line(request.key, digest, KEY_FIELD, body, types, shared)
