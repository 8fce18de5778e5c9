"""The digests a key and its request travel under (pure).

A key travels as ``key_digest(key)`` (Claude ``custom_id``, Gemini label and sibling field). Every
staged line also gets a *canonical digest* of its request, which survives Vertex's importer
normalisation (nulls injected, key order changed), so an echoed request can be matched when no id
came back (``KeyMap``, ``_requests.keymap``). A key answered from the answer cache has no line: its
record carries ``cache_digest(key)``, which no output row can name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["cache_digest", "canonical_digest", "digest_text", "key_digest"]


def cache_digest(key: str) -> str:
    """The digest in the key record of a key answered from the answer cache (no input line)."""
    return "c" + key_digest(key)[1:]


def key_digest(key: str) -> str:
    """The id a key travels under: ``k`` + 32 hex digits of its SHA-256.

    It fits Claude's ``custom_id`` (``[A-Za-z0-9_-]{1,64}``) and Gemini label values
    (lowercase, 63 characters), and starts with a letter so the importer never reads it as a number.
    """
    return "k" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


# Deeper than anything staged (the importer stops at 15) or read back (``_json.MAX_DEPTH``).
_CANONICAL_DEPTH = 128


def _canonical(value: Any, depth: int = 0) -> Any:
    """Drop nulls and what becomes empty without them; integral floats become ints.

    Raises:
        ValueError: arrays and objects nest deeper than ``_CANONICAL_DEPTH``.
    """
    if isinstance(value, dict):
        if depth >= _CANONICAL_DEPTH:
            raise ValueError(f"nested deeper than {_CANONICAL_DEPTH} levels")
        out = {}
        for k, v in value.items():
            c = _canonical(v, depth + 1)
            if c is not None and c != {} and c != []:
                out[k] = c
        return out
    if isinstance(value, list):
        if depth >= _CANONICAL_DEPTH:
            raise ValueError(f"nested deeper than {_CANONICAL_DEPTH} levels")
        return [_canonical(v, depth + 1) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


_SORTED = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def digest_text(text: str) -> str:
    """32 hex digits of the SHA-256 of a canonical text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def canonical_digest(request: Mapping[str, Any]) -> str:
    """A digest of a request that is the same for the staged request and Vertex's echo of it.

    Labels are left out: Vertex may or may not echo them.

    Raises:
        ValueError: the request nests deeper than any request can.
    """
    body = {k: v for k, v in request.items() if k != "labels"}
    return digest_text(_SORTED.encode(_canonical(body)))
