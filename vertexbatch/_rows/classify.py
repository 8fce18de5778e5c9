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
    finished, but no text, no tool call and (Gemini)  LineError EMPTY_RESPONSE, transient
      no image, file, code or code-result part
      (``_rows.content.gemini_other_parts``; thoughts
      are never an answer)
    Gemini: no candidates and no block                LineError NO_CANDIDATES, transient
    no stop / finish reason yet                       LineError NOT_FINISHED, transient
    Claude pause_turn or an unknown stop_reason       LineError STOP_REASON_<value>, permanent
    a per-line provider failure                       LineError with code, status, transient
    a line Vertex never ran (cancelled job)           LineError NOT_RUN, transient
    processed, but no status and no response          LineError NO_RESPONSE, transient
    a response that is not a JSON object              LineError UNREADABLE_RESPONSE, permanent

An older prediction row (``{"instance", "predictions", "status"}``: the text-embedding models'
rows, ``_rows.embedding.prediction_response``) is read the same way, its first prediction as
its response; one with no prediction and no status is ``NO_RESPONSE``.

A failure's code and status name are read by ``_rows.failures``, which builds every ``LineError``
and decides which are transient. JSON in a line is read with ``_json.load_json`` and every walk over
row data here is bounded by ``_json.MAX_UNWRAP``, so one damaged line costs time in proportion to
its length and never exhausts the stack.

Every function here is pure: no I/O, no logging, and inputs are never modified (``Result.response``
may be the caller's own dict, or a dict decoded from a JSON string in the line).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from .._errors import InvalidRequestError, RefusedError, TruncatedError
from .._json import MAX_UNWRAP, is_number, load_json
from .._values import Provider, Refusal, Result, Usage
from .build import result_of, usage_of
from .chat import classify_chat_completion
from .content import claude_content, gemini_content, gemini_other_parts
from .embedding import prediction_response, read_embedding
from .failures import is_error_body, line_error_for, parse_error_object, parse_status, safe_name

__all__ = [
    "CLAUDE_ANSWERED",
    "READERS",
    "classify_claude_message",
    "classify_gemini_response",
    "classify_row",
    "claude_usage",
    "gemini_usage",
]

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

CLAUDE_ANSWERED: Final = frozenset({"end_turn", "stop_sequence", "tool_use"})
_CLAUDE_TRUNCATED: Final = frozenset({"max_tokens", "model_context_window_exceeded"})

# A token count above int64 is not a count (and would overflow a metrics exporter).
_MAX_COUNT: Final = 2**63 - 1

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
        provider: a key of ``READERS`` (``"anthropic"``, ``"google"``, ``"embeddings"``,
            ``"openmaas"``): how to read a successful response.

    Returns:
        The outcome; ``Result.response`` is the decoded response object whenever the line had one.

    Raises:
        InvalidRequestError: ``provider`` is no key of ``READERS``.
    """
    if not isinstance(provider, str) or provider not in READERS:
        raise InvalidRequestError(
            f"provider must be one of {', '.join(READERS)}, got {provider!r}", field="provider"
        )
    status = row.get("status")
    response = row.get("response")
    # An older prediction row (the text-embedding models': ``instance``, ``predictions``,
    # ``status``): its first prediction is its response, and a row without one ran.
    predicted = response is None and "predictions" in row
    if predicted:
        response = prediction_response(row["predictions"])
    # The usual row: no status, a response object with no wrapper: what the checks below come
    # to for it, without them.
    if (
        (status is None or (type(status) is str and not status))
        and type(response) is dict
        and response
        and "body" not in response
    ):
        return READERS[provider](response, key=key)
    response, unreadable = _decode_response(response)

    if (
        response is None
        and not unreadable
        and not predicted
        and _blank(status)
        and _blank(row.get("processed_time"))
    ):
        return Result(
            key=key,
            error=line_error_for(
                key, code=0, status="NOT_RUN", message_kind="not_run", transient=True
            ),
        )
    if not _blank(status):
        code, name = parse_status(status)
        if code == 0 and not name and response is not None and is_error_body(response):
            code, name = parse_error_object(response)
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
    return READERS[provider](response, key=key)


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
    if is_error_body(message):
        return _error_body_result(message, key=key)

    usage = claude_usage(message.get("usage"))
    stop = _enum_text(message.get("stop_reason"))
    text, calls = claude_content(message.get("content"))

    if not stop:
        return _unusable(key, "NOT_FINISHED", transient=True, usage=usage, response=message)
    if stop == "refusal":
        details = message.get("stop_details")
        details = details if isinstance(details, Mapping) else {}
        category = _text_or(details.get("category"), "refusal")
        detail = _text_or(details.get("explanation"), "")
        return _refused(key, category, detail, usage=usage, stop=stop, response=message)
    if stop in _CLAUDE_TRUNCATED:
        return _truncated(key, text, usage=usage, stop=stop, response=message)
    if stop in CLAUDE_ANSWERED:
        if text or calls:
            return result_of(key, text, usage, stop, None, None, message, calls)
        return _unusable(
            key, "EMPTY_RESPONSE", transient=True, usage=usage, stop=stop, response=message
        )
    return _unusable(
        key,
        f"STOP_REASON_{safe_name(stop) or 'UNKNOWN'}",
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
    if is_error_body(response):
        return _error_body_result(response, key=key)

    usage = gemini_usage(_get(response, "usageMetadata", "usage_metadata"))

    feedback = _get(response, "promptFeedback", "prompt_feedback")
    if feedback is not None and isinstance(feedback, Mapping):
        block = _enum_text(_get(feedback, "blockReason", "block_reason"))
        if block:
            detail = _text_or(_get(feedback, "blockReasonMessage", "block_reason_message"), "")
            return _refused(key, block, detail, usage=usage, stop=block, response=response)

    candidates = _get(response, "candidates", "candidates")
    if not isinstance(candidates, list) or not candidates:
        return _unusable(key, "NO_CANDIDATES", transient=True, usage=usage, response=response)
    candidate = candidates[0]
    if type(candidate) is not dict and not isinstance(candidate, Mapping):
        candidate = {}

    finish = _finish_reason(_get(candidate, "finishReason", "finish_reason"))
    if not finish:
        return _unusable(key, "NOT_FINISHED", transient=True, usage=usage, response=response)
    content = _get(candidate, "content", "content")
    text, calls = gemini_content(content)
    if finish == "STOP":
        if text or calls or gemini_other_parts(content):
            return result_of(key, text, usage, finish, None, None, response, calls)
        return _unusable(
            key, "EMPTY_RESPONSE", transient=True, usage=usage, stop=finish, response=response
        )
    if finish == "MAX_TOKENS":
        return _truncated(key, text, usage=usage, stop=finish, response=response)
    detail = _text_or(_get(candidate, "finishMessage", "finish_message"), "")
    return _refused(key, finish, detail, usage=usage, stop=finish, response=response)


# The reader of each provider's response: the ``read`` column of ``_providers.PROVIDERS``, which
# sits above this module (tests/test_providers.py holds the two equal).
READERS: Final[Mapping[Provider, Callable[..., Result]]] = MappingProxyType(
    {
        "anthropic": classify_claude_message,
        "google": classify_gemini_response,
        "embeddings": read_embedding,
        "openmaas": classify_chat_completion,
    }
)


def _error_body_result(body: Mapping[str, Any], *, key: str) -> Result:
    code, name = parse_error_object(body)
    return Result(key=key, error=line_error_for(key, code=code, status=name), response=body)


# --- reading answers -------------------------------------------------------------------------


def _decode_response(value: object) -> tuple[Mapping[str, Any] | None, bool]:
    """Decode ``response`` through JSON strings and ``{"body": ...}`` wrappers.

    Returns:
        (the response object or None when missing or empty, whether it was unreadable).
    """
    for _ in range(MAX_UNWRAP):
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


def _refused(
    key: str,
    category: str,
    detail: str,
    *,
    usage: Usage,
    stop: str,
    response: Mapping[str, Any],
) -> Result:
    """A refusal: no text, as online clients never accept partial content."""
    refusal = Refusal(category=category, detail=detail)
    error = RefusedError(_REFUSED, key=key)
    return Result(key=key, usage=usage, stop=stop, refusal=refusal, error=error, response=response)


def _truncated(
    key: str, text: str, *, usage: Usage, stop: str, response: Mapping[str, Any]
) -> Result:
    """A max-tokens stop: the partial text is kept."""
    error = TruncatedError(_TRUNCATED, key=key)
    return Result(key=key, text=text, usage=usage, stop=stop, error=error, response=response)


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


def claude_usage(usage: object) -> Usage:
    if type(usage) is not dict and not isinstance(usage, Mapping):
        return Usage()
    # _count's usual cases inline (a count in range; a cache count left out): once per row.
    read, written = usage.get("cache_read_input_tokens"), usage.get("cache_creation_input_tokens")
    input, output = usage.get("input_tokens"), usage.get("output_tokens")
    return usage_of(
        input if type(input) is int and 0 < input <= _MAX_COUNT else _count(input),
        output if type(output) is int and 0 < output <= _MAX_COUNT else _count(output),
        0 if read is None else _count(read),
        0 if written is None else _count(written),
    )


def gemini_usage(meta: object) -> Usage:
    """Usage with the online clients' meaning: prompt includes cached tokens, output thoughts."""
    if type(meta) is not dict and not isinstance(meta, Mapping):
        return Usage()
    return usage_of(
        _count(_get(meta, "promptTokenCount", "prompt_token_count"))
        + _count(_get(meta, "toolUsePromptTokenCount", "tool_use_prompt_token_count")),
        _count(_get(meta, "candidatesTokenCount", "candidates_token_count"))
        + _count(_get(meta, "thoughtsTokenCount", "thoughts_token_count")),
        _count(_get(meta, "cachedContentTokenCount", "cached_content_token_count")),
        0,
    )


def _finish_reason(value: object) -> str:
    if type(value) is str:  # the usual case, first
        return value
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
    if value is None:  # the next most usual: a count the provider left out
        return 0
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float) and value == value and 0 < value <= _MAX_COUNT:
        return int(value) if float(value).is_integer() else 0
    if isinstance(value, str) and is_number(value.strip()):
        return _count(int(value.strip()))
    return 0


def _blank(value: object, depth: int = 0) -> bool:
    """Whether a ``status``/``processed_time`` field says nothing (None, "", {}, {code: 0}).

    Objects nested past ``MAX_UNWRAP`` levels are taken to say something.
    """
    if type(value) is str:  # the usual case, first
        return not value.strip()
    if value is None or (isinstance(value, int) and value == 0):
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, Mapping):
        return depth < MAX_UNWRAP and all(_blank(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return not value
    return False
