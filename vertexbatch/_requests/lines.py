"""Input lines: what each request becomes on the wire, checked before anything is staged.

Pure functions only. Claude lines carry a digest of the key as ``custom_id``; Gemini lines carry it
as a request label and as a sibling field (see ``_requests.keymap`` for how output finds its key
again). Every line is checked against the rules of Vertex's importer and written as strict JSON.
What each provider's body is before it becomes a line is its own module's:
``_requests.claude_shape`` (Claude params in one shape), ``_requests.gemini_body`` (a Gemini
request's body from contents and config).

Staged bytes are json's exactly (compact, keys sorted, non-ASCII as UTF-8, NaN and Infinity
refused); orjson writes a line (``_sorted_json``, ``_compact_json``) only where it gives json's
bytes, json everywhere else: docs/performance.md, "JSON: orjson where it gives json's bytes";
``tests/requests/test_fast_paths.py`` holds the bytes equal.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from .._errors import InvalidRequestError
from .._schemas.check import Schema
from .._schemas.forms import claude_form, gemini_form, openai_form
from .._values import ChatRequest, ClaudeRequest, GeminiRequest
from .chat_body import CHAT_URL, chat_body
from .claude_shape import one_shape
from .digests import canonical_digest, key_digest
from .gemini_body import gemini_body
from .importer_rules import Problem, has_huge_int, problem, scan
from .importer_types import FieldTypes
from .keymap import KEY_FIELD
from .plain_json import STRICT_COMPACT, STRICT_SORTED, cannot, dump

__all__ = [
    "ANTHROPIC_VERSION",
    "MAX_TOKENS",
    "StagedLine",
    "chat_line",
    "claude_line",
    "gemini_line",
    "staged_body",
    "staged_line",
]

# The most ``max_tokens`` a line may ask: the int32 bound of Gemini's ``maxOutputTokens``, far
# past what any model writes in one answer (Claude's largest is 128,000 tokens in 2026), so a
# plan's ceiling and cost stay numbers and a line no model takes is refused before staging.
MAX_TOKENS = 2**31 - 1

# The version Vertex documents for Claude batch input lines.
ANTHROPIC_VERSION = "vertex-2023-10-16"

# Compact JSON as staged; the sorted encoder also gives the canonical text.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_SORTED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)
# A string as a JSON string, as _COMPACT writes it (json's own C function).
_quoted = json.encoder.encode_basestring


def staged_body(line: Mapping[str, Any]) -> Any:
    """The request of a staged line read back: its ``request`` (Claude, Gemini), the OpenAI
    batch format's ``body`` (open models), or the line itself, an instance with neither (a
    text-embedding model's, ``_requests.embedding_text``)."""
    if "request" in line:
        return line["request"]
    return line.get("body", line)


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
    envelope: bytes = b"",
    body_field: str = "request",
) -> StagedLine:
    """Check and serialise one request into its line, with the canonical digest on the way.

    The line is ``{ID_FIELD: digest, ENVELOPE BODY_FIELD: request}``: ``envelope`` is the
    fields between (the OpenAI batch format's ``"method":"POST","url":...,``), ``body_field``
    the request's (``request``; ``body`` for the OpenAI format).

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
        request = dump(request)  # copies: shares nothing
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
                b'{"%b":"%b",%b"%b":%b}\n'
                % (id_field.encode(), digest.encode(), envelope, body_field.encode(), text),
            )
        except (TypeError, ValueError, RecursionError):  # NaN, not UTF-8, not JSON data
            if types is not None:
                types.undo()
        else:
            if clash is None:
                return line
            raise _refused(key, id_field, clash, body_field)
    # Raised outside the except block: nothing that holds request content is chained to it.
    raise _refused(key, id_field, problem(dump(request)), body_field)


staged_line = _line
"""A request body's checked line (``_line``): for the lanes whose builders live beside this one."""


def _unchecked_types(
    request: Any, key: str, shared: tuple[str, ...]
) -> tuple[bool, bool, bool, bool, Problem | None]:
    """``FieldTypes.check``'s answers with no types to check across lines: ``scan``'s."""
    return (*scan(request), None)


def _sorted_json(body: dict[str, Any], fixed: bool) -> bytes:
    """``STRICT_SORTED.encode(body)`` in UTF-8, byte for byte; by orjson when that is the same.

    orjson writes the same text for plain JSON data (exact built-in types, string keys: what
    ``scan`` calls plain) in five to ten times less time, except floats below 1e-4 or from 1e16
    in size (``fixed`` says there are none), integers past 64 bits and strings that are not UTF-8
    (it refuses those): then json writes it, or refuses it as before, and an integer past
    ``_requests.importer_rules.LARGEST`` is refused too. docs/performance.md has the decision;
    tests/requests/test_fast_paths.py the proof.
    """
    if fixed:
        try:
            return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass
    text = STRICT_SORTED.encode(body)
    if has_huge_int(body):  # json writes any integer; past LARGEST no reader takes it
        raise ValueError("an integer past the largest 64-bit float")  # problem() names it
    return text.encode()


def _compact_json(value: Any, fixed: bool) -> bytes:
    """``STRICT_COMPACT.encode(value)`` in UTF-8, byte for byte; by orjson when that is the
    same (as ``_sorted_json``, keys in their own order)."""
    if fixed:
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass
    return STRICT_COMPACT.encode(value).encode()


def _refused(
    key: str, id_field: str, found: Problem | None, body_field: str = "request"
) -> InvalidRequestError:
    """The error for a line that cannot be staged, in the terms of the caller's request."""
    top, place, rule = found or ("", "", "not JSON data")
    if body_field == "body":  # an OpenAI-format line: the request is the body
        field, place = "body", f"body.{place}" if place else "body"
    elif id_field == "custom_id":  # a Claude line: the request is the params
        field, place = "params", f"params.{place}" if place else "params"
    else:
        field, place = ("contents" if top == "contents" else "config"), place or "the request"
    return InvalidRequestError(f"request {key!r} {cannot(rule)}: {place} is {rule}", field=field)


def claude_line(
    request: ClaudeRequest, types: FieldTypes | None = None, schema: Schema | None = None
) -> StagedLine:
    """The Vertex batch line of a Claude request: ``{"custom_id": digest, "request": params}``.

    ``system``, each message's ``content`` and each ``tool_result`` block's ``content`` are
    staged as lists of content blocks, a string becoming one text block: Anthropic reads both
    shapes alike, and Vertex's importer fails a job whose lines mix them (see ``one_shape``).
    ``types``: the field types of the earlier lines of the same input (``FieldTypes``);
    ``schema``: the submission's answer schema, as a forced tool (``_schemas.forms``).
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
    if (
        isinstance(max_tokens, bool)
        or not isinstance(max_tokens, int)
        or not 1 <= max_tokens <= MAX_TOKENS
    ):
        what = type(max_tokens).__name__
        if type(max_tokens) is int:
            what = repr(max_tokens) if max_tokens < 1 else f"a number past {MAX_TOKENS:,}"
        raise InvalidRequestError(
            f"params of request {request.key!r} give 'max_tokens' as {what}: Claude needs a "
            f"whole number from 1 to {MAX_TOKENS:,} (no model writes more)",
            field="params",
        )
    if schema is not None:
        body = claude_form(body, schema, request.key)
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
    found = problem(dump(body))
    raise refused if found is None else _refused(request.key, "custom_id", found)


def gemini_line(
    request: GeminiRequest, types: FieldTypes | None = None, schema: Schema | None = None
) -> StagedLine:
    """The Vertex batch line of a Gemini request, its key digest in a label and a sibling field.

    ``types``: the field types of the earlier lines of the same input (``FieldTypes``);
    ``schema``: the submission's answer schema, in ``generationConfig`` (``_schemas.forms``).
    """
    body, shared = gemini_body(request.key, request.contents, request.config)
    if schema is not None:
        body = gemini_form(body, schema, request.key)
        shared = tuple(name for name in shared if name != "generationConfig")
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


# The fields of an OpenAI batch line between its id and its body (Google's open-model batch page).
_CHAT_ENVELOPE = b'"method":"POST","url":"%b",' % CHAT_URL.encode()


def chat_line(
    request: ChatRequest, types: FieldTypes | None = None, schema: Schema | None = None
) -> StagedLine:
    """The Vertex batch line of an open model's request, in the OpenAI batch format:
    ``{"custom_id": digest, "method": "POST", "url": "/v1/chat/completions", "body": body}``.

    ``types``: the field types of the earlier lines of the same input (``FieldTypes``);
    ``schema``: the submission's answer schema, as ``response_format`` (``_schemas.forms``).
    """
    body = chat_body(request)
    if schema is not None:
        body = openai_form(body, schema, request.key)
    digest = key_digest(request.key)
    return _line(
        request.key, digest, "custom_id", body, types, envelope=_CHAT_ENVELOPE, body_field="body"
    )
