"""Request values as plain JSON data, and the strict encoders that write what is staged (pure).

Shared by the line builders of both providers (``_requests.lines``, ``_requests.gemini_body``):
google-genai and pydantic values become their wire form, mappings dicts, tuples lists,
``str``/``int``/``float`` subclasses their plain values; what is not JSON data is left for the
caller to refuse.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from .importer_rules import MAX_DEPTH

__all__ = ["STRICT_COMPACT", "STRICT_SORTED", "cannot", "dump", "loaded"]

# What is staged is written strictly: NaN and Infinity are not JSON, and a line holding them
# would fail Vertex's import of the whole job.
STRICT_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
STRICT_SORTED = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
)


def loaded(module: str, name: str) -> Any:
    """``module.name`` if ``module`` is imported, else ``None``; never imports it.

    For ``isinstance`` checks against google-genai and pydantic types, which take a third of a
    second to import: a value of a type whose module was never imported cannot exist.
    """
    found = sys.modules.get(module)
    return None if found is None else getattr(found, name)


def dump(value: Any, depth: int = 0) -> Any:
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
    base_model = loaded("pydantic", "BaseModel")
    if base_model is not None and isinstance(value, base_model):
        try:
            return value.model_dump(mode="json", exclude_none=True, by_alias=True)
        except Exception:  # e.g. an object in an ``Any`` field: refused as not JSON data
            return value
    if isinstance(value, Mapping):
        return {
            (str.__str__(k) if type(k) is not str and isinstance(k, str) else k): dump(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [dump(v, depth + 1) for v in value]
    # The base methods give the plain value even when a subclass overrides them.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value


def cannot(rule: str) -> str:
    """How a refusal says why a value cannot be staged: the importer's rules, or JSON's."""
    return "cannot be imported by Vertex" if "importer" in rule else "cannot be written as JSON"
