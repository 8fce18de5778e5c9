"""Classify one output line of a batch job into a ``Result`` (pure logic, fail closed).

A line of Vertex's ``predictions.jsonl`` is a failure when its ``status`` is non-empty or its
``response`` is missing, ``null`` or ``{}``. Otherwise the response body decides::

    what came back                                    Result.error
    ------------------------------------------------  ----------------------------------------
    a usable answer                                   None
    Claude stop_reason "refusal"                      RefusedError  (Result.refusal; no text)
    Gemini promptFeedback.blockReason                 RefusedError  (Result.refusal; no text)
    Gemini finishReason not STOP / MAX_TOKENS         RefusedError  (Result.refusal; no text)
    Claude max_tokens / model_context_window_exceeded TruncatedError (partial text kept)
    Gemini MAX_TOKENS                                 TruncatedError (partial text kept)
    finished, but no text and no tool call            LineError EMPTY_RESPONSE, transient
    Gemini: no candidates and no block                LineError NO_CANDIDATES, transient
    no stop / finish reason yet                       LineError NOT_FINISHED, transient
    Claude pause_turn or an unknown stop_reason       LineError STOP_REASON_<value>, permanent
    a per-line provider failure                       LineError with code, status, transient
    a line Vertex never ran (cancelled job)           LineError NOT_RUN, transient
    processed, but no status and no response          LineError NO_RESPONSE, transient
    a response that is not a JSON object              LineError UNREADABLE_RESPONSE, permanent

Errors never carry provider text: messages are built from codes and status names only, and a
status name is kept only when it looks like an identifier.

JSON in a line is read with ``load_json``, which refuses nesting deeper than ``MAX_DEPTH``, and
every walk over row data here is bounded, so one damaged line costs time in proportion to its
length and never exhausts the stack.

Every function here is pure: no I/O, no logging, and inputs are never modified (``Result.response``
may be the caller's own dict, or a dict decoded from a JSON string in the line).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from itertools import accumulate, takewhile
from typing import Any, Final, Literal

from ._errors import InvalidRequestError, LineError, RefusedError, TruncatedError
from ._models import Provider, Refusal, Result, Usage
from ._retry import TRANSIENT_HTTP

__all__ = [
    "MAX_DEPTH",
    "MessageKind",
    "TRANSIENT_CODES",
    "TRANSIENT_STATUSES",
    "classify_claude_message",
    "classify_gemini_response",
    "classify_row",
    "line_error_for",
    "load_json",
]

MAX_DEPTH: Final = 128
"""The deepest nesting of arrays and objects read from an output line or a JSON string in it.

Vertex's importer refuses requests nested deeper than 15 levels; responses may nest deeper (tool
input is the model's own JSON), but nothing legitimate comes near this.
"""

TRANSIENT_CODES: Final[frozenset[int]] = TRANSIENT_HTTP
"""HTTP-style codes after which the same request may succeed (529 is Anthropic's overload)."""

_TRANSIENT_GRPC: Final = frozenset(
    {"RESOURCE_EXHAUSTED", "UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL", "ABORTED"}
)
_TRANSIENT_ANTHROPIC: Final = frozenset(
    {"rate_limit_error", "overloaded_error", "api_error", "timeout_error"}
)

TRANSIENT_STATUSES: Final[frozenset[str]] = _TRANSIENT_GRPC | _TRANSIENT_ANTHROPIC
"""gRPC status names and Anthropic error types after which the same request may succeed."""

MessageKind = Literal["failed", "unusable", "not_run"]

# Anthropic error types and the HTTP status Anthropic's API sends with them.
_ANTHROPIC_ERROR_CODES: Final[Mapping[str, int]] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

# google.rpc.Code numbers, for a status object that carries a gRPC code instead of an HTTP one.
_GRPC_NAMES: Final[Mapping[int, str]] = {
    1: "CANCELLED",
    2: "UNKNOWN",
    3: "INVALID_ARGUMENT",
    4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND",
    6: "ALREADY_EXISTS",
    7: "PERMISSION_DENIED",
    8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION",
    10: "ABORTED",
    11: "OUT_OF_RANGE",
    12: "UNIMPLEMENTED",
    13: "INTERNAL",
    14: "UNAVAILABLE",
    15: "DATA_LOSS",
    16: "UNAUTHENTICATED",
}
_GRPC_NAME_SET: Final = frozenset(_GRPC_NAMES.values())

# Reason phrases that may prefix a status string ("Bad Request: {...}"); longest first so that
# "request timeout" is not shadowed by a shorter phrase.
_HTTP_PHRASES: Final[tuple[tuple[str, int], ...]] = (
    ("request entity too large", 413),
    ("internal server error", 500),
    ("unprocessable entity", 422),
    ("service unavailable", 503),
    ("too many requests", 429),
    ("payload too large", 413),
    ("payment required", 402),
    ("request timeout", 408),
    ("gateway timeout", 504),
    ("unauthorized", 401),
    ("bad request", 400),
    ("bad gateway", 502),
    ("overloaded", 529),
    ("forbidden", 403),
    ("not found", 404),
    ("conflict", 409),
)

# v1 proto numbers of Candidate.FinishReason, for dumps that wrote the enum as a number.
_FINISH_REASONS: Final[Mapping[int, str]] = {
    0: "FINISH_REASON_UNSPECIFIED",
    1: "STOP",
    2: "MAX_TOKENS",
    3: "SAFETY",
    4: "RECITATION",
    5: "OTHER",
    6: "BLOCKLIST",
    7: "PROHIBITED_CONTENT",
    8: "SPII",
    9: "MALFORMED_FUNCTION_CALL",
    10: "MODEL_ARMOR",
}

# A status name goes into an error only when it looks like an enum name, never like prose.
_SAFE_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_LEADING_CODE: Final = re.compile(r"(?:http\s*)?([1-5]\d\d)(?!\d)", re.IGNORECASE)
_LEADING_WORD: Final = re.compile(r"[A-Za-z_]+")

_CLAUDE_ANSWERED: Final = frozenset({"end_turn", "stop_sequence", "tool_use"})
_CLAUDE_TRUNCATED: Final = frozenset({"max_tokens", "model_context_window_exceeded"})

# The largest nesting of wrappers looked through: response → JSON string → body → JSON string.
_MAX_UNWRAP: Final = 6
_MAX_JSON_TAIL_TRIES: Final = 8

# A token count above int64 is not a count (and would overflow a metrics exporter).
_MAX_COUNT: Final = 2**63 - 1
# A string read as a number has at most this many digits (int() refuses past 4,300).
_MAX_DIGITS: Final = 19

# For measuring nesting: a JSON string (to its closing quote, or to the end of an unterminated
# one) once escaped backslashes and quotes are gone, then +1 per opening and -1 per closing bracket.
_JSON_STRING: Final = re.compile(rb'"[^"]*"?')
_BRACKET_STEPS: Final = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")

_REFUSED: Final = "request refused by the provider"
_TRUNCATED: Final = "answer stopped at the token limit"


def classify_row(row: Mapping[str, Any], *, key: str, provider: Provider) -> Result:
    """Turn one parsed line of ``predictions.jsonl`` into the ``Result`` for ``key``.

    Accepts ``status`` as a string (``"Bad Request: {json}"``), an object (``{code, message}``)
    or an Anthropic error envelope, and ``response`` as an object, a JSON string, or either
    wrapped in ``{"body": ...}``.

    Args:
        row: one JSON line, already parsed. Not modified.
        key: the caller's key the line was matched to.
        provider: ``"anthropic"`` or ``"google"``: how to read a successful response.

    Returns:
        The outcome; ``Result.response`` is the decoded response object whenever the line had one.

    Raises:
        InvalidRequestError: ``provider`` is neither ``"anthropic"`` nor ``"google"``.
    """
    if provider not in ("anthropic", "google"):
        raise InvalidRequestError(
            f"provider must be 'anthropic' or 'google', got {provider!r}", field="provider"
        )
    status = row.get("status")
    response, unreadable = _decode_response(row.get("response"))

    if response is None and not unreadable and _blank(status) and _blank(row.get("processed_time")):
        return Result(
            key=key,
            error=line_error_for(
                key, code=0, status="NOT_RUN", message_kind="not_run", transient=True
            ),
        )
    if not _blank(status):
        code, name = _parse_status(status)
        if code == 0 and not name and response is not None and _is_error_body(response):
            code, name = _parse_error_object(response)
        return Result(key=key, error=line_error_for(key, code=code, status=name), response=response)
    if unreadable:
        # Something we cannot read at all: sending it again is not known to help.
        return Result(
            key=key,
            error=line_error_for(
                key,
                code=0,
                status="UNREADABLE_RESPONSE",
                message_kind="unusable",
                transient=False,
            ),
        )
    if response is None:
        # Processed, yet neither a status nor a response: treated like a line that did not run.
        return Result(
            key=key,
            error=line_error_for(
                key, code=0, status="NO_RESPONSE", message_kind="unusable", transient=True
            ),
        )
    if provider == "anthropic":
        return classify_claude_message(response, key=key)
    return classify_gemini_response(response, key=key)


def classify_claude_message(message: Mapping[str, Any], *, key: str) -> Result:
    """Classify an Anthropic Messages response body, read loosely (unknown values never raise).

    ``pause_turn`` and any ``stop_reason`` this package does not know are not answers: they give
    a permanent ``LineError`` with status ``STOP_REASON_<value>`` and no text, since accepting a
    stop we cannot interpret would count an unfinished or unknown outcome as a success, and
    sending the same request again is not known to end differently. An Anthropic error envelope
    (``{"type": "error", ...}``) gives the ``LineError`` it describes.

    Args:
        message: the response body (``{"type": "message", "content": [...], ...}``). Not modified.
        key: the caller's key.
    """
    if _is_error_body(message):
        return _error_body_result(message, key=key)

    usage = _claude_usage(message.get("usage"))
    stop = _enum_text(message.get("stop_reason"))
    text, tool_use = _claude_content(message.get("content"))

    if not stop:
        return _unusable(key, "NOT_FINISHED", transient=True, usage=usage, response=message)
    if stop == "refusal":
        details = message.get("stop_details")
        details = details if isinstance(details, Mapping) else {}
        return Result(
            key=key,
            usage=usage,
            stop=stop,
            refusal=Refusal(
                category=_text_or(details.get("category"), "refusal"),
                detail=_text_or(details.get("explanation"), ""),
            ),
            error=RefusedError(_REFUSED, key=key),
            response=message,
        )
    if stop in _CLAUDE_TRUNCATED:
        return Result(
            key=key,
            text=text,
            usage=usage,
            stop=stop,
            error=TruncatedError(_TRUNCATED, key=key),
            response=message,
        )
    if stop in _CLAUDE_ANSWERED:
        if text or tool_use:
            return Result(key=key, text=text, usage=usage, stop=stop, response=message)
        return _unusable(
            key, "EMPTY_RESPONSE", transient=True, usage=usage, stop=stop, response=message
        )
    return _unusable(
        key,
        f"STOP_REASON_{_safe_name(stop) or 'UNKNOWN'}",
        transient=False,
        usage=usage,
        stop=stop,
        response=message,
    )


def classify_gemini_response(response: Mapping[str, Any], *, key: str) -> Result:
    """Classify a Gemini ``GenerateContentResponse`` (camelCase or snake_case keys).

    Only the first candidate is read. Any ``finishReason`` other than ``STOP`` or ``MAX_TOKENS``,
    including values nobody knows yet, is a refusal with no text, as online clients never
    accept partial content.

    Args:
        response: the response object. Not modified.
        key: the caller's key.
    """
    if _is_error_body(response):
        return _error_body_result(response, key=key)

    usage = _gemini_usage(_get(response, "usageMetadata", "usage_metadata"))

    feedback = _get(response, "promptFeedback", "prompt_feedback")
    if isinstance(feedback, Mapping):
        block = _enum_text(_get(feedback, "blockReason", "block_reason"))
        if block:
            return Result(
                key=key,
                usage=usage,
                stop=block,
                refusal=Refusal(
                    category=block,
                    detail=_text_or(
                        _get(feedback, "blockReasonMessage", "block_reason_message"), ""
                    ),
                ),
                error=RefusedError(_REFUSED, key=key),
                response=response,
            )

    candidates = _get(response, "candidates", "candidates")
    if not isinstance(candidates, list) or not candidates:
        return _unusable(key, "NO_CANDIDATES", transient=True, usage=usage, response=response)
    candidate = candidates[0] if isinstance(candidates[0], Mapping) else {}

    finish = _finish_reason(_get(candidate, "finishReason", "finish_reason"))
    if not finish:
        return _unusable(key, "NOT_FINISHED", transient=True, usage=usage, response=response)
    text, function_call = _gemini_content(_get(candidate, "content", "content"))
    if finish == "STOP":
        if text or function_call:
            return Result(key=key, text=text, usage=usage, stop=finish, response=response)
        return _unusable(
            key, "EMPTY_RESPONSE", transient=True, usage=usage, stop=finish, response=response
        )
    if finish == "MAX_TOKENS":
        return Result(
            key=key,
            text=text,
            usage=usage,
            stop=finish,
            error=TruncatedError(_TRUNCATED, key=key),
            response=response,
        )
    return Result(
        key=key,
        usage=usage,
        stop=finish,
        refusal=Refusal(
            category=finish,
            detail=_text_or(_get(candidate, "finishMessage", "finish_message"), ""),
        ),
        error=RefusedError(_REFUSED, key=key),
        response=response,
    )


def line_error_for(
    key: str,
    *,
    code: int,
    status: str,
    message_kind: MessageKind = "failed",
    transient: bool | None = None,
) -> LineError:
    """Build a ``LineError`` whose message holds only the code and status name.

    Args:
        key: the caller's key.
        code: HTTP-style code, 0 when unknown.
        status: gRPC status name, Anthropic error type or one of this module's names.
        message_kind: ``"failed"`` for a provider failure, ``"unusable"`` for an answer that
            cannot be used, ``"not_run"`` for a line the job never processed.
        transient: whether a retry may succeed; by default, whether ``code`` is in
            ``TRANSIENT_CODES`` or ``status`` in ``TRANSIENT_STATUSES``.
    """
    if transient is None:
        transient = code in TRANSIENT_CODES or status in TRANSIENT_STATUSES
    if message_kind == "not_run":
        message = "line was not run"
    elif message_kind == "unusable":
        message = f"provider returned no usable answer ({status})"
    elif code and status:
        message = f"line failed with HTTP {code} {status}"
    elif code:
        message = f"line failed with HTTP {code}"
    elif status:
        message = f"line failed with status {status}"
    else:
        message = "line failed without a status code"
    return LineError(message, key=key, code=code, status=status, transient=transient)


def load_json(text: str | bytes) -> Any:
    """``json.loads``, refusing text nested deeper than ``MAX_DEPTH`` before parsing it.

    Bytes must be UTF-8 (a leading byte-order mark is allowed). Counting brackets is the only
    extra cost for usual text; the nesting is measured only when there are more opening brackets
    than ``MAX_DEPTH``, in time linear in the text's length.

    Raises:
        ValueError: the text is not UTF-8, is not JSON, or nests too deeply.
    """
    if isinstance(text, str):
        too_deep = _too_deep(text)
    else:
        # One pass that drops the opening brackets: a little cheaper than counting each kind.
        too_deep = len(text) - len(text.translate(None, b"[{")) > MAX_DEPTH
        too_deep = too_deep and _nesting(text) > MAX_DEPTH
        text = text.decode("utf-8", "surrogatepass")  # as json.loads does, but UTF-8 only
        if text[:1] == "\ufeff":
            text = text[1:]
    if too_deep:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return json.loads(text)


def _too_deep(text: str, start: int = 0) -> bool:
    """Whether the JSON value at ``start`` could nest deeper than ``MAX_DEPTH`` (cheap when not)."""
    if text.count("{", start) + text.count("[", start) <= MAX_DEPTH:
        return False
    return _nesting(text[start:].encode("utf-8", "surrogatepass")) > MAX_DEPTH


def _nesting(data: bytes) -> int:
    """How deep the first JSON value in ``data`` nests, as a JSON parser would count it.

    Escaped backslashes and quotes go first, so what is left of a string runs from one quote to
    the next. Past the first error a parser stops, so measuring what follows only overcounts.
    """
    plain = _JSON_STRING.sub(b"", data.replace(b"\\\\", b"").replace(b'\\"', b""))
    steps = memoryview(plain.translate(_BRACKET_STEPS, _NOT_BRACKETS)).cast("b")
    # Up to the value's last closing bracket, when the depth first comes back to zero.
    return max(takewhile(bool, accumulate(steps)), default=0)


# --- reading failures ------------------------------------------------------------------------


def _parse_status(status: object) -> tuple[int, str]:
    """Return (HTTP code, status name) from a row's non-empty ``status``, (0, "") if unknown."""
    if isinstance(status, Mapping):
        return _parse_error_object(status)
    if isinstance(status, str):
        return _parse_status_text(status)
    return _code_and_name(status)


def _parse_status_text(text: str, depth: int = 0) -> tuple[int, str]:
    """Read ``"Bad Request: {json}"``-like text: the JSON tail first, then the words before it."""
    text = text.strip()
    obj, start = _json_tail(text) if depth < _MAX_UNWRAP else (None, len(text))
    code, name = _parse_error_object(obj, depth + 1) if obj is not None else (0, "")
    prefix_code, prefix_name = _parse_prefix(text[:start])
    return code or prefix_code, name or prefix_name


def _json_tail(text: str) -> tuple[Mapping[str, Any] | None, int]:
    """Find the first ``{...}`` in ``text`` that decodes to an object; return it and its start."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    for _ in range(_MAX_JSON_TAIL_TRIES):
        if start < 0:
            break
        try:
            value = None if _too_deep(text, start) else decoder.raw_decode(text, start)[0]
        except ValueError:
            pass
        else:
            if isinstance(value, Mapping):
                return value, start
        start = text.find("{", start + 1)
    return None, len(text)


def _parse_prefix(prefix: str) -> tuple[int, str]:
    """Map the words before a status's JSON (or the whole status) to a code and name."""
    words = prefix.strip().rstrip(":-").strip()
    code, name = 0, ""
    number = _LEADING_CODE.match(words)
    if number:
        code = int(number.group(1))
        words = words[number.end() :].strip().lstrip(":-").strip()
    word = _LEADING_WORD.match(words)
    if word:
        token = word.group(0)
        if token in _GRPC_NAME_SET:
            name = token
        elif token in _ANTHROPIC_ERROR_CODES:
            name = token
            code = code or _ANTHROPIC_ERROR_CODES[token]
    if not code:
        normal = " ".join(words.lower().split())
        for phrase, phrase_code in _HTTP_PHRASES:
            if normal.startswith(phrase) and not normal[len(phrase) : len(phrase) + 1].isalnum():
                code = phrase_code
                break
    return code, name


def _parse_error_object(obj: Mapping[str, Any], depth: int = 0) -> tuple[int, str]:
    """Read a Google error (``{error: {code, status}}``), a status object or an Anthropic envelope.

    An explicit HTTP code wins over one implied by an Anthropic error type. A number below 100 is
    taken as a gRPC code and gives only a status name.
    """
    inner_code, inner_name = 0, ""
    inner = obj.get("error")
    if isinstance(inner, Mapping) and depth < _MAX_UNWRAP:
        inner_code, inner_name = _parse_error_object(inner, depth + 1)
    field_codes: list[int] = []
    field_names: list[str] = []
    for field in ("code", "status_code", "statusCode"):
        field_code, field_name = _code_and_name(obj.get(field))
        field_codes.append(field_code)
        field_names.append(field_name)
    status_code, status_name = _code_and_name(obj.get("status"))
    kind = obj.get("type")
    type_name = _safe_name(kind) if isinstance(kind, str) and kind != "error" else ""

    # The innermost error speaks first; a named status beats a name implied by a gRPC number.
    code = next((c for c in (inner_code, *field_codes, status_code) if c), 0)
    name = next((n for n in (inner_name, status_name, type_name, *field_names) if n), "")
    if not code and name in _ANTHROPIC_ERROR_CODES:
        code = _ANTHROPIC_ERROR_CODES[name]
    if not code and not name:
        message = obj.get("message")
        if isinstance(message, str):
            # A status object may wrap the status string itself; only codes and names are kept.
            code, name = _parse_status_text(message, depth + 1)
    return code, name


def _code_and_name(value: object) -> tuple[int, str]:
    """Read a ``code``/``status`` field: an HTTP code, a numeric string, a gRPC code or a name."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        return 0, ""
    if isinstance(value, str):
        value = value.strip()
        if not _is_number(value):
            return 0, _safe_name(value)
        value = int(value)
    if isinstance(value, int):
        if 100 <= value <= 599:
            return value, ""
        return 0, _GRPC_NAMES.get(value, "")
    return 0, ""


def _is_error_body(body: Mapping[str, Any]) -> bool:
    """Whether a response object is an error (Anthropic envelope or ``{"error": {...}}``)."""
    if body.get("type") == "error":
        return True
    error = body.get("error")
    if error is None or not isinstance(error, Mapping):
        return False
    answer_keys = ("content", "candidates", "promptFeedback", "prompt_feedback", "stop_reason")
    return not any(k in body for k in answer_keys)


def _error_body_result(body: Mapping[str, Any], *, key: str) -> Result:
    code, name = _parse_error_object(body)
    return Result(key=key, error=line_error_for(key, code=code, status=name), response=body)


# --- reading answers -------------------------------------------------------------------------


def _decode_response(value: object) -> tuple[Mapping[str, Any] | None, bool]:
    """Decode ``response`` through JSON strings and ``{"body": ...}`` wrappers.

    Returns:
        (the response object or None when missing or empty, whether it was unreadable).
    """
    for _ in range(_MAX_UNWRAP):
        if value is None:
            return None, False
        if type(value) is dict and value and "body" not in value:  # the usual case, first
            return value, False
        if isinstance(value, str):
            if not value.strip():
                return None, False
            try:
                value = load_json(value)
            except ValueError:
                return None, True
            continue
        if isinstance(value, Mapping):
            if not value:
                return None, False
            if "body" in value:
                value = value["body"]
                continue
            return value, False
        return None, True
    return None, True


def _unusable(
    key: str,
    status: str,
    *,
    transient: bool,
    usage: Usage,
    response: Mapping[str, Any],
    stop: str = "",
) -> Result:
    error = line_error_for(key, code=0, status=status, message_kind="unusable", transient=transient)
    return Result(key=key, usage=usage, stop=stop, error=error, response=response)


def _claude_content(content: object) -> tuple[str, bool]:
    """Return (the text blocks joined in order, whether there is a tool_use block)."""
    if isinstance(content, str):
        return content, False
    if not isinstance(content, list):
        return "", False
    texts: list[str] = []
    tool_use = False
    for block in content:
        if type(block) is not dict and not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
        elif kind == "tool_use":
            tool_use = True
    return "".join(texts), tool_use


def _claude_usage(usage: object) -> Usage:
    if type(usage) is not dict and not isinstance(usage, Mapping):
        return Usage()
    return Usage(
        input=_count(usage.get("input_tokens")),
        output=_count(usage.get("output_tokens")),
        cache_read=_count(usage.get("cache_read_input_tokens")),
        cache_write=_count(usage.get("cache_creation_input_tokens")),
    )


def _gemini_content(content: object) -> tuple[str, bool]:
    """Return (the non-thought text parts joined in order, whether a part is a function call)."""
    if not isinstance(content, Mapping):
        return "", False
    parts = _get(content, "parts", "parts")
    if not isinstance(parts, list):
        return "", False
    texts: list[str] = []
    function_call = False
    for part in parts:
        if not isinstance(part, Mapping) or part.get("thought") is True:
            continue
        text = part.get("text")
        if isinstance(text, str):
            texts.append(text)
        if _get(part, "functionCall", "function_call") is not None:
            function_call = True
    return "".join(texts), function_call


def _gemini_usage(meta: object) -> Usage:
    """Usage with the online clients' meaning: prompt includes cached tokens, output thoughts."""
    if not isinstance(meta, Mapping):
        return Usage()

    def count(camel: str, snake: str) -> int:
        return _count(_get(meta, camel, snake))

    return Usage(
        input=count("promptTokenCount", "prompt_token_count")
        + count("toolUsePromptTokenCount", "tool_use_prompt_token_count"),
        output=count("candidatesTokenCount", "candidates_token_count")
        + count("thoughtsTokenCount", "thoughts_token_count"),
        cache_read=count("cachedContentTokenCount", "cached_content_token_count"),
    )


def _finish_reason(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool | enum.Enum):
        return _FINISH_REASONS.get(value, str(value))
    return _enum_text(value)


# --- small readers ---------------------------------------------------------------------------


def _get(mapping: Mapping[str, Any], camel: str, snake: str) -> Any:
    """Read a field written in camelCase (proto JSON) or snake_case (a google-genai dump)."""
    value = mapping.get(camel)
    return mapping.get(snake) if value is None else value


def _enum_text(value: object) -> str:
    """An enum field as text, verbatim; ``""`` when absent. Enum members give their value."""
    if type(value) is str:  # the usual case, first
        return value
    if value is None:
        return ""
    if isinstance(value, enum.Enum):
        return _enum_text(value.value)
    return value if isinstance(value, str) else str(value)


def _text_or(value: object, default: str) -> str:
    return value if isinstance(value, str) and value else default


def _count(value: object) -> int:
    """A token count; anything missing, null or not a count is 0."""
    if type(value) is int:  # the usual case, first: every row has several counts
        return value if 0 < value <= _MAX_COUNT else 0
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float) and value == value and 0 < value <= _MAX_COUNT:
        return int(value) if float(value).is_integer() else 0
    if isinstance(value, str) and _is_number(value.strip()):
        return _count(int(value.strip()))
    return 0


def _is_number(text: str) -> bool:
    """Whether ``text`` is a plain decimal number that ``int()`` reads (ASCII digits only)."""
    return 0 < len(text) <= _MAX_DIGITS and text.isascii() and text.isdigit()


def _safe_name(value: str) -> str:
    """``value`` if it looks like an enum or error-type name, else ``""`` (never prose)."""
    return value if _SAFE_NAME.fullmatch(value) else ""


def _blank(value: object, depth: int = 0) -> bool:
    """Whether a ``status``/``processed_time`` field says nothing (None, "", {}, {code: 0}).

    Objects nested past ``_MAX_UNWRAP`` levels are taken to say something.
    """
    if type(value) is str:  # the usual case, first
        return not value.strip()
    if value is None or (isinstance(value, int) and value == 0):
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, Mapping):
        return depth < _MAX_UNWRAP and all(_blank(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return not value
    return False
