"""Reading a per-line failure: its code, its status name and whether a retry may succeed (pure).

A failed line of Vertex's ``predictions.jsonl`` carries its failure in one of many shapes, each
read here into an HTTP-style code and a status name (a gRPC status or an Anthropic error type):

- ``status`` as text: ``"Bad Request: {json}"``, ``"429 Too Many Requests"``, ``"UNAVAILABLE"``,
  or a plain sentence with no code at all (``"The request timed out."``), read by its words
  (``STATUS_WORDS``);
- ``status`` as an object: ``{code, message}``, ``{error: {code, status}}``, a gRPC number;
- an error body in place of the answer: Anthropic's envelope ``{"type": "error", "error": {...}}``
  or ``{"error": {...}}`` (``is_error_body``).

``line_error_for`` turns a code and a name into a key's ``LineError``: transient when the code is
in ``_retry.TRANSIENT_HTTP`` (408, 429, 500, 502, 503, 504, 529) or the name in
``TRANSIENT_STATUSES``, unless told otherwise. A failure that says nothing this module recognises
(no code, and no name it knows) is transient too: a transient failure must never be dropped as
permanent, and runs bound the attempts a key gets.

Errors never carry provider text: messages are built from codes and status names only, and a
status name is kept only when it looks like an identifier (``safe_name``). Every walk is bounded
by ``_json.MAX_UNWRAP`` and ``_json.MAX_DEPTH``.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from .._errors import LineError
from .._json import MAX_UNWRAP, is_number, too_deep
from .._retry import TRANSIENT_HTTP

__all__ = [
    "MessageKind",
    "STATUS_WORDS",
    "TRANSIENT_STATUSES",
    "is_error_body",
    "line_error_for",
    "parse_error_object",
    "parse_status",
    "safe_name",
]

_TRANSIENT_GRPC: Final = frozenset(
    {"RESOURCE_EXHAUSTED", "UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL", "ABORTED", "UNKNOWN"}
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

STATUS_WORDS: Final[tuple[tuple[str, str, bool], ...]] = (
    # (pattern, status name, transient), tried in this order on a status with no code and no
    # name: the transient causes first, so that a sentence naming both is retried.
    (r"time[sd]?[ -]?out|deadline", "DEADLINE_EXCEEDED", True),
    (r"quota|rate[ _-]?limit|too many requests|exhausted", "RESOURCE_EXHAUSTED", True),
    (r"overload|unavailable|capacity|try again|temporar", "UNAVAILABLE", True),
    (r"internal", "INTERNAL", True),
    (r"invalid[ _]argument|invalid[ _]request", "INVALID_ARGUMENT", False),
    (r"permission[ _]denied", "PERMISSION_DENIED", False),
    (r"not[ _]found", "NOT_FOUND", False),
)
"""How a plain-text status is read by its words (matched from the start of a word, in any case):
the name it is given and whether a retry may succeed (which the name implies). A sentence that
matches none is unrecognised, and transient."""

_WORDS: Final = tuple(
    (re.compile(rf"\b(?:{pattern})", re.IGNORECASE), name) for pattern, name, _ in STATUS_WORDS
)
# Only the start of a long status is read for words: a cause is named early.
_MAX_WORDS_READ: Final = 2048

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


# A status name goes into an error only when it looks like an enum name, never like prose.
_SAFE_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_LEADING_CODE: Final = re.compile(r"(?:http\s*)?([1-5]\d\d)(?!\d)", re.IGNORECASE)
_LEADING_WORD: Final = re.compile(r"[A-Za-z_]+")

_MAX_JSON_TAIL_TRIES: Final = 8


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
        status: gRPC status name, Anthropic error type, or a name of ``_rows.classify``'s own
            (``EMPTY_RESPONSE``, ``NOT_RUN``, ...).
        message_kind: ``"failed"`` for a provider failure, ``"unusable"`` for an answer that
            cannot be used, ``"not_run"`` for a line the job never processed.
        transient: whether a retry may succeed; by default, whether ``code`` is in
            ``_retry.TRANSIENT_HTTP`` or ``status`` in ``TRANSIENT_STATUSES``.
    """
    if transient is None:
        transient = (
            code in TRANSIENT_HTTP
            or status in TRANSIENT_STATUSES
            or (not code and status not in _KNOWN_NAMES)  # unrecognised: never dropped
        )
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


def parse_status(status: object) -> tuple[int, str]:
    """Return (HTTP code, status name) from a row's non-empty ``status``, (0, "") if unknown."""
    if isinstance(status, Mapping):
        return parse_error_object(status)
    if isinstance(status, str):
        return _parse_status_text(status)
    return _code_and_name(status)


def _parse_status_text(text: str, depth: int = 0) -> tuple[int, str]:
    """Read ``"Bad Request: {json}"``-like text: the JSON tail first, then the words before it;
    with neither a code nor a name, the status's words (``STATUS_WORDS``)."""
    text = text.strip()
    obj, start = _json_tail(text) if depth < MAX_UNWRAP else (None, len(text))
    code, name = parse_error_object(obj, depth + 1) if obj is not None else (0, "")
    prefix_code, prefix_name = _parse_prefix(text[:start])
    code, name = code or prefix_code, name or prefix_name
    if not code and not name:
        name = _name_of_words(text)
    return code, name


def _name_of_words(text: str) -> str:
    """The status name ``STATUS_WORDS`` gives a sentence, ``""`` when no pattern matches."""
    return next((name for words, name in _WORDS if words.search(text, 0, _MAX_WORDS_READ)), "")


def _json_tail(text: str) -> tuple[Mapping[str, Any] | None, int]:
    """Find the first ``{...}`` in ``text`` that decodes to an object; return it and its start."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    for _ in range(_MAX_JSON_TAIL_TRIES):
        if start < 0:
            break
        try:
            value = None if too_deep(text, start) else decoder.raw_decode(text, start)[0]
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


def parse_error_object(obj: Mapping[str, Any], depth: int = 0) -> tuple[int, str]:
    """Read a Google error (``{error: {code, status}}``), a status object or an Anthropic envelope.

    An explicit HTTP code wins over one implied by an Anthropic error type. A number below 100 is
    taken as a gRPC code and gives only a status name.
    """
    inner_code, inner_name = 0, ""
    inner = obj.get("error")
    if isinstance(inner, Mapping) and depth < MAX_UNWRAP:
        inner_code, inner_name = parse_error_object(inner, depth + 1)
    field_codes: list[int] = []
    field_names: list[str] = []
    for field in ("code", "status_code", "statusCode"):
        field_code, field_name = _code_and_name(obj.get(field))
        field_codes.append(field_code)
        field_names.append(field_name)
    status_code, status_name = _code_and_name(obj.get("status"))
    kind = obj.get("type")
    type_name = safe_name(kind) if isinstance(kind, str) and kind != "error" else ""

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


# The names whose meaning is known; a failure with no code and any other name is unrecognised.
_KNOWN_NAMES: Final = _GRPC_NAME_SET | frozenset(_ANTHROPIC_ERROR_CODES)


def _code_and_name(value: object) -> tuple[int, str]:
    """Read a ``code``/``status`` field: an HTTP code, a numeric string, a gRPC code or a name."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        return 0, ""
    if isinstance(value, str):
        value = value.strip()
        if not is_number(value):
            return 0, safe_name(value)
        value = int(value)
    if isinstance(value, int):
        if 100 <= value <= 599:
            return value, ""
        return 0, _GRPC_NAMES.get(value, "")
    return 0, ""


def is_error_body(body: Mapping[str, Any]) -> bool:
    """Whether a response object is an error (Anthropic envelope or ``{"error": {...}}``)."""
    if body.get("type") == "error":
        return True
    error = body.get("error")
    if error is None or not isinstance(error, Mapping):
        return False
    answer_keys = ("content", "candidates", "promptFeedback", "prompt_feedback", "stop_reason")
    return not any(k in body for k in answer_keys)


def safe_name(value: str) -> str:
    """``value`` if it looks like an enum or error-type name, else ``""`` (never prose)."""
    return value if _SAFE_NAME.fullmatch(value) else ""
