"""A dict Gemini config of the first generation fields, read without google-genai (pure).

A dict config is validated by google-genai's ``GenerateContentConfig`` (``_requests.gemini_body``),
which costs a cold process about a second of CPU to import (with pydantic). A config whose fields
are all in ``PLAIN_GEMINI_CONFIG`` (``_requests.sdk_fields``), each with a value of the plain
kind, gives what that validation gives without it: the fields by their JSON aliases, in the
model's order, ints in float fields as floats. Anything else (another field, a misspelled one, a
value of another type, ``None``, a field given both by name and by alias) answers ``None``: the
SDK validates it, and refuses what it refuses, as before.

``tests/requests/test_plain_gemini.py`` holds the answer to the SDK's own (hypothesis over the
table's fields and their near misses).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .sdk_fields import PLAIN_GEMINI_CONFIG

__all__ = ["plain_config"]

# Beyond 2**53 an int is not always one float exactly: left to pydantic's own conversion.
_EXACT = 2**53
_INT64 = 2**63


def _utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (a lone surrogate cannot): left to pydantic."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _float(value: Any) -> tuple[bool, Any]:
    if type(value) is float:
        return True, value
    if type(value) is int and -_EXACT <= value <= _EXACT:
        return True, float(value)
    return False, None


def _int(value: Any) -> tuple[bool, Any]:
    return type(value) is int and -_INT64 <= value < _INT64, value


def _bool(value: Any) -> tuple[bool, Any]:
    return type(value) is bool, value


def _text(value: Any) -> tuple[bool, Any]:
    return type(value) is str and _utf8(value), value


def _texts(value: Any) -> tuple[bool, Any]:
    ok = type(value) is list and all(type(v) is str and _utf8(v) for v in value)
    return ok, list(value) if ok else None


def _labels(value: Any) -> tuple[bool, Any]:
    ok = type(value) is dict and all(
        type(k) is str and type(v) is str and _utf8(k) and _utf8(v) for k, v in value.items()
    )
    return ok, dict(value) if ok else None


_KINDS: dict[str, Callable[[Any], tuple[bool, Any]]] = {
    "float": _float,
    "int": _int,
    "bool": _bool,
    "text": _text,
    "texts": _texts,
    "labels": _labels,
}
# Field name and alias -> (position in the model's order, alias, kind).
_BY_NAME: dict[str, tuple[int, str, Callable[[Any], tuple[bool, Any]]]] = {
    name: (i, alias, _KINDS[kind])
    for i, (field, alias, kind) in enumerate(PLAIN_GEMINI_CONFIG)
    for name in (field, alias)
}


def plain_config(config: dict[str, Any]) -> dict[str, Any] | None:
    """What ``GenerateContentConfig`` validation and ``model_dump(mode="json", by_alias=True,
    exclude_none=True)`` give for ``config``, when every field is plain; else ``None``."""
    found: dict[int, tuple[str, Any]] = {}
    for name, value in config.items():
        entry = _BY_NAME.get(name) if type(name) is str else None
        if entry is None:
            return None
        position, alias, kind = entry
        ok, read = kind(value)
        if not ok or position in found:
            return None
        found[position] = (alias, read)
    return dict(found[position] for position in sorted(found))
