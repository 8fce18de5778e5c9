"""A row's ``Result`` and ``Usage`` built fast: ``result_of`` and ``usage_of`` (pure).

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; one result per
output row is built here instead through the fields' slot descriptors, which is about twice as
fast. ``tests/rows/test_result_paths.py`` holds these equal to the plain constructors, field by
field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .._errors import ResultError
from .._values import Refusal, Result, ToolCall, Usage

__all__ = ["result_of", "usage_of"]

_new = object.__new__


def _setters(cls: type, names: tuple[str, ...]) -> tuple[Any, ...]:
    """The slot setters of ``cls``'s fields, which must be exactly ``names`` (a field added to
    the class and not to its builder fails here, at import)."""
    fields = tuple(f.name for f in dataclasses.fields(cls))
    if sorted(fields) != sorted(names):  # pragma: no cover - a guard for whoever edits the class
        raise TypeError(f"{cls.__name__} has fields {fields}, its builder sets {names}")
    return tuple(cls.__dict__[name].__set__ for name in names)


_set_input, _set_output, _set_cache_read, _set_cache_write = _setters(
    Usage, ("input", "output", "cache_read", "cache_write")
)
(
    _set_key,
    _set_text,
    _set_usage,
    _set_stop,
    _set_refusal,
    _set_error,
    _set_response,
    _set_shared,
    _set_cached,
    _set_tool_calls,
    _set_parsed,
    _set_tier,
    _set_embedding,
) = _setters(
    Result,
    (
        "key",
        "text",
        "usage",
        "stop",
        "refusal",
        "error",
        "response",
        "shared",
        "cached",
        "tool_calls",
        "parsed",
        "tier",
        "embedding",
    ),
)


def usage_of(input: int, output: int, cache_read: int, cache_write: int) -> Usage:
    """``Usage(input, output, cache_read, cache_write)``, built faster."""
    usage = _new(Usage)
    _set_input(usage, input)
    _set_output(usage, output)
    _set_cache_read(usage, cache_read)
    _set_cache_write(usage, cache_write)
    return usage


def result_of(
    key: str,
    text: str,
    usage: Usage,
    stop: str,
    refusal: Refusal | None,
    error: ResultError | None,
    response: Mapping[str, Any] | None,
    tool_calls: tuple[ToolCall, ...] = (),
) -> Result:
    """``Result(key, text, usage, stop, refusal, error, response, tool_calls=...)``, built
    faster (not shared, not cached, nothing parsed)."""
    result = _new(Result)
    _set_key(result, key)
    _set_text(result, text)
    _set_usage(result, usage)
    _set_stop(result, stop)
    _set_refusal(result, refusal)
    _set_error(result, error)
    _set_response(result, response)
    _set_shared(result, False)
    _set_cached(result, False)
    _set_tool_calls(result, tool_calls)
    _set_parsed(result, None)
    _set_tier(result, "batch")
    _set_embedding(result, None)
    return result
