"""The usual output row, read and classified in one step: the fast paths of ``load_json`` and
``_rows.classify.classify_row``.

Nearly every row of a job's output is the same shape: an id, no status, and a response that is a
plain answer (Claude: one text block and a stop that answers; Gemini: one candidate, one text
part, ``STOP``). Read whole, 60% of each is its echoed request, which a row matched by its id
never uses; and ``classify_row``'s general path spends most of its time in the calls between its
readers.

- ``row_fields`` reads from a line only the fields a pass reads of a row its id matches: the
  echoed request, 60% of a usual line, is checked and passed over, never built. ``load_json``
  reads every other line whole. ``tests/rows/test_row_fields.py`` holds the fields equal to
  ``load_json``'s, value and type, and every line refused when ``load_json`` refuses it.
- ``row_reader`` reads the usual answer in one function and gives every other row to
  ``classify_row``; the ``Result`` is the same field by field (``tests/rows/test_result_paths.py``
  holds the two paths equal on every row kind and on responses of any shape).

Pure: no I/O, inputs never modified.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypedDict, cast

import msgspec

from .._errors import InvalidRequestError
from .._json import MAX_DEPTH
from .._requests.keymap import KEY_FIELD
from .._values import Provider, Result
from .build import result_of
from .chat import read_usual_chat
from .classify import CLAUDE_ANSWERED, READERS, classify_row, claude_usage, gemini_usage
from .embedding import EMBEDDING_ID, read_usual_embedding

__all__ = [
    "ROW_FIELDS",
    "USUAL_READERS",
    "UsualReader",
    "read_usual_claude",
    "read_usual_gemini",
    "row_fields",
    "row_reader",
    "shallow",
]

ROW_FIELDS: Final = ("custom_id", KEY_FIELD, EMBEDDING_ID, "status", "response", "processed_time")
"""What a results pass reads of a row its id matches (``KeyMap.match_id``, ``classify_row``)."""


class _Fields(TypedDict, total=False):
    """The fields of ``ROW_FIELDS``, those the line has; msgspec checks every other field of the
    line and builds none of them."""

    custom_id: Any
    vb_key: Any
    key: Any
    status: Any
    response: Any
    processed_time: Any


assert tuple(_Fields.__annotations__) == ROW_FIELDS  # one list of names, kept in step

_decode_fields = msgspec.json.Decoder(_Fields).decode
_REFUSED: Final = (msgspec.DecodeError, RecursionError)


def shallow(data: bytes) -> bool:
    """Whether no line of ``data`` (no piece between newlines) has more than ``MAX_DEPTH``
    opening brackets: then ``row_fields`` need not count them line by line (one pass over a
    range is cheaper than a pass over each line: docs/performance.md)."""
    brackets = data.translate(None, _NOT_BRACKETS_OR_NEWLINES)
    return max(map(len, brackets.split(b"\n")), default=0) <= MAX_DEPTH


_NOT_BRACKETS_OR_NEWLINES: Final = bytes(b for b in range(256) if b not in b"[{\n")


def row_fields(raw: bytes, *, counted: bool = False) -> dict[str, Any] | None:
    """The ``ROW_FIELDS`` that the JSON object in ``raw`` has, each as ``load_json(raw)`` reads
    it; ``None`` when ``load_json`` must read the line whole (and refuse it, or read what this
    does not).

    The line must be what ``load_json`` reads without a second look: valid UTF-8, no more than
    ``MAX_DEPTH`` opening brackets (``counted``: it is a line of data found ``shallow``), and
    JSON that msgspec reads (it refuses NaN, a byte-order mark, a lone surrogate and a number
    past a float's range, which json takes).
    """
    # UTF-8: msgspec checks the strings it builds, not those it passes over.
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    # Nesting: no deeper than load_json allows (counting brackets is its cheap first test too).
    if not counted and len(raw) - len(raw.translate(None, b"[{")) > MAX_DEPTH:
        return None
    try:
        fields = _decode_fields(raw)
    except _REFUSED:
        return None
    return cast("dict[str, Any]", fields)


RowReader = Callable[[Mapping[str, Any], str], Result]


def row_reader(provider: Provider) -> RowReader:
    """``classify_row`` for rows of ``provider``'s jobs: ``read(row, key)``.

    Raises:
        InvalidRequestError: ``provider`` is neither ``"anthropic"`` nor ``"google"`` (as
            ``classify_row`` does, but once, here).
    """
    if not isinstance(provider, str) or provider not in READERS:
        raise InvalidRequestError(
            f"provider must be one of {', '.join(READERS)}, got {provider!r}", field="provider"
        )
    usual = USUAL_READERS[provider]

    def read(row: Mapping[str, Any], key: str) -> Result:
        status = row.get("status")
        response = row.get("response")
        if (status is None or (type(status) is str and not status)) and type(response) is dict:
            result = usual(response, key)
            if result is not None:
                return result
        return classify_row(row, key=key, provider=provider)

    return read


def read_usual_claude(message: dict[str, Any], key: str) -> Result | None:
    """A Messages answer of one text block with text and a stop that answers; else ``None``."""
    stop = message.get("stop_reason")
    content = message.get("content")
    usage = message.get("usage")
    if (
        type(stop) is not str
        or stop not in CLAUDE_ANSWERED
        or type(content) is not list
        or len(content) != 1
        or type(usage) is not dict
        or "body" in message
        or message.get("type") == "error"  # an error envelope; with content it is no error body
    ):
        return None
    block = content[0]
    if type(block) is not dict or block.get("type") != "text":
        return None
    text = block.get("text")
    if type(text) is not str or not text:
        return None
    return result_of(key, text, claude_usage(usage), stop, None, None, message, ())


def read_usual_gemini(response: dict[str, Any], key: str) -> Result | None:
    """A response of one candidate that ends ``STOP`` with one text part, no prompt feedback;
    else ``None``."""
    candidates = response.get("candidates")
    if (
        type(candidates) is not list
        or not candidates
        or "body" in response
        or response.get("type") == "error"
        or response.get("promptFeedback") is not None
        or response.get("prompt_feedback") is not None
    ):
        return None
    candidate = candidates[0]
    if type(candidate) is not dict:
        return None
    finish = candidate.get("finishReason")
    if finish is None:
        finish = candidate.get("finish_reason")
    content = candidate.get("content")
    if type(finish) is not str or finish != "STOP" or type(content) is not dict:
        return None
    parts = content.get("parts")
    if type(parts) is not list or len(parts) != 1:
        return None
    part = parts[0]
    if (
        type(part) is not dict
        or part.get("thought") is True
        or part.get("functionCall") is not None
        or part.get("function_call") is not None
    ):
        return None
    text = part.get("text")
    if type(text) is not str or not text:
        return None
    meta = response.get("usageMetadata")
    tokens = gemini_usage(response.get("usage_metadata") if meta is None else meta)
    return result_of(key, text, tokens, finish, None, None, response, ())


UsualReader = Callable[[dict[str, Any], str], "Result | None"]

# The usual answer's reader of each provider: the ``usual`` column of ``_providers.PROVIDERS``,
# which sits above this module (tests/test_providers.py holds the two equal).
USUAL_READERS: Final[Mapping[Provider, UsualReader]] = MappingProxyType(
    {
        "anthropic": read_usual_claude,
        "google": read_usual_gemini,
        "embeddings": read_usual_embedding,
        "openmaas": read_usual_chat,
    }
)
