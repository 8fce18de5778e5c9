"""The answer cache's entry format (pure): one line per cached answer, checked on read.

Each line of a cache object is::

    {"d": DIGEST, "m": MODEL, "t": UNIX_TIME, "h": HASH_OF_RESPONSE, "r": RESPONSE}

written with sorted keys and compact separators in ASCII (an answer may hold an escaped lone
surrogate), so a reader finds each field in a fixed place and checks the answer's hash on its
bytes without parsing it (``parse_entry``). The layout of the objects in GCS is ``_cache``'s.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Entry",
    "encode_response",
    "entry_line",
    "entry_text",
    "header_line",
    "parse_entry",
    "response_hash",
    "text_hash",
]

# ASCII only: an answer may hold an escaped lone surrogate (JSON allows it, UTF-8 cannot hold
# it), and every answer must be writable.
_SORTED = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), sort_keys=True)
# An entry line as ``entry_line`` writes it: sorted keys d, h, m, r, t, compact separators.
_LINE = re.compile(
    rb'\{"d":"(?P<d>[0-9a-f]{32})","h":"(?P<h>[0-9a-f]{32})","m":(?P<m>"[^"\\]*"),'
    rb'"r":(?P<r>.*),"t":(?P<t>[0-9]{1,12})\}',
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Entry:
    """One cached answer: the request's exact digest, the response as its JSON text (as
    written, never parsed by a lookup), and when it was written."""

    digest: str
    response: bytes
    created: int


def response_hash(response: Mapping[str, Any]) -> str:
    return text_hash(_SORTED.encode(response).encode("ascii"))


def text_hash(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()[:32]


def encode_response(response: Mapping[str, Any]) -> bytes:
    """An answer's JSON text as an entry holds it (sorted keys, compact, ASCII)."""
    return _SORTED.encode(response).encode("ascii")


def entry_text(digest: str, model: str, text: bytes, created: int) -> bytes:
    """The JSONL line of one entry whose answer is ``text`` (``encode_response``'s): the line
    ``_SORTED`` writes for the record, built around the text as it is."""
    return (
        b'{"d":"'
        + digest.encode("ascii")
        + b'","h":"'
        + text_hash(text).encode("ascii")
        + b'","m":'
        + _SORTED.encode(model).encode("ascii")
        + b',"r":'
        + text
        + b',"t":'
        + str(created).encode("ascii")
        + b"}\n"
    )


def entry_line(digest: str, model: str, response: Mapping[str, Any], created: int) -> bytes:
    """The JSONL line of one entry."""
    return entry_text(digest, model, encode_response(response), created)


def parse_entry(raw: bytes, model: str, shard: str) -> Entry | None:
    """The entry of one line, or ``None`` if it is damaged (any field off, hash included).

    Read without parsing the answer: a line is written with sorted keys and compact
    separators, so its fields sit in a fixed order, and the answer's hash is checked on the
    bytes between ``"r":`` and ``,"t":`` — the very text it was taken of when written.
    """
    match = _LINE.fullmatch(raw.rstrip(b"\r\n"))
    if match is None or match["m"] != json.dumps(model).encode("utf-8"):
        return None
    digest = match["d"].decode("ascii")
    response = match["r"]
    if not digest.startswith(shard) or match["h"].decode("ascii") != text_hash(response):
        return None
    if not response.startswith(b"{"):
        return None
    return Entry(digest, response, int(match["t"]))


def header_line(count: int, replaces: list[str]) -> bytes:
    """A merged object's first line: how many entries follow, and the objects it replaces."""
    return _SORTED.encode({"n": count, "replaces": replaces}).encode("ascii") + b"\n"
