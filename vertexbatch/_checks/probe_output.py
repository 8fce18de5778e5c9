"""What one probe output row shows of its lane, and whether it has the shape vertexbatch's reader
assumes (pure).

Two lanes read rows no Google page shows (docs/platform-facts.md, "Embeddings" and "Open
models"): a Gemini embedding row and an open model's (OpenAI-format) row. For them the reader
and the local stack agree on an assumed answer row, written here as dotted field paths and
their JSON types (``EMBEDDING_ROW``, ``CHAT_ROW``). ``output_facts`` checks each answered row
of a probe against it and condenses them into four facts: ``output_row`` (``matches`` or
``differs``), ``missing_fields`` (each assumed ``path: type`` some answered row lacked),
``output_fields`` (every dotted field name the answered rows had: names, never values) and
``reader_reads`` (whether vertexbatch's own reader, ``_rows.classify.classify_row``, read every
answered row as an answer: a row of another shape may still be read).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from .._errors import TruncatedError
from .._rows.classify import classify_row
from .._values import Provider

__all__ = [
    "CHAT_ROW",
    "EMBEDDING_ROW",
    "MAPS",
    "chat_row_facts",
    "claude_row_facts",
    "embedding_row_facts",
    "gemini_row_facts",
    "json_type",
    "output_facts",
    "response_shape",
    "typed_paths",
]

# The answered Gemini embedding row the reader assumes (``_rows.embedding``) and the local stack
# writes: the line's ``key`` echoed, the vector in ``response.embedding.values``, the tokens in
# ``response.usageMetadata.promptTokenCount``. UNCONFIRMED: Google's page shows input rows only.
EMBEDDING_ROW: Final[Mapping[str, str]] = MappingProxyType(
    {
        "key": "string",
        "response.embedding.values": "array",
        "response.embedding.values[]": "number",
        "response.usageMetadata.promptTokenCount": "number",
    }
)
# The answered open-model row the reader assumes (``_rows.chat``) and the local stack writes:
# the line's ``custom_id`` echoed and the OpenAI chat completion itself in ``response``.
# UNCONFIRMED: Google's page shows input lines only.
CHAT_ROW: Final[Mapping[str, str]] = MappingProxyType(
    {
        "custom_id": "string",
        "response.choices": "array",
        "response.choices[].message": "object",
        "response.choices[].message.content": "string",
        "response.choices[].finish_reason": "string",
        "response.usage.prompt_tokens": "number",
        "response.usage.completion_tokens": "number",
    }
)
MAPS: Final = frozenset({"labels"})  # map fields: their keys are ours, named as the map alone


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value (``null``, ``boolean``, ``number``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def typed_paths(value: Any, prefix: str = "") -> dict[str, set[str]]:
    """Each dotted field path of a JSON object (``a.b``, an array's elements as ``a[]``) and the
    JSON types seen there; a map field (``labels``) is one path."""
    paths: dict[str, set[str]] = {}

    def walk(item: Any, path: str) -> None:
        paths.setdefault(path, set()).add(json_type(item))
        key = path.rsplit(".", 1)[-1]
        if isinstance(item, dict) and key not in MAPS:
            for name, inner in item.items():
                walk(inner, f"{path}.{name}")
        elif isinstance(item, list):
            for element in item:
                walk(element, f"{path}[]")

    if isinstance(value, dict):
        for name, item in value.items():
            walk(item, f"{prefix}{name}")
    return paths


def response_shape(response: Any) -> str:
    """How a row holds its response: ``string``, ``body`` (a wrapper), ``object``, ``absent``."""
    if isinstance(response, str):
        return "string"
    if isinstance(response, dict) and isinstance(response.get("body"), dict):
        return "body"
    if isinstance(response, dict) and response:
        return "object"
    return "absent"


def _assumed(
    provider: Provider, assumed: Mapping[str, str], row: Mapping[str, Any]
) -> dict[str, Any]:
    """The row's field names, the assumed fields it lacks, and whether the reader read it."""
    paths = typed_paths(row)
    missing = [f"{p}: {t}" for p, t in assumed.items() if paths.get(p) != {t}]
    result = classify_row(row, key="probe", provider=provider)
    read = result.error is None or isinstance(result.error, TruncatedError)
    return {"output_fields": sorted(paths), "missing_fields": missing, "reader_reads": read}


def claude_row_facts(row: Mapping[str, Any], request: Any, failed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"custom_id_echoed": "custom_id" in row}
    if not failed:
        out["response"] = response_shape(row.get("response"))
    return out


def gemini_row_facts(row: Mapping[str, Any], request: Any, failed: bool) -> dict[str, Any]:
    labels = isinstance(request, dict) and isinstance(request.get("labels"), dict)
    return {"labels_echoed": labels, "sibling_echoed": "vb_key" in row}


def embedding_row_facts(row: Mapping[str, Any], request: Any, failed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"key_echoed": "key" in row}
    if not failed:
        out["response"] = response_shape(row.get("response"))
        out.update(_assumed("embeddings", EMBEDDING_ROW, row))
    return out


def chat_row_facts(row: Mapping[str, Any], request: Any, failed: bool) -> dict[str, Any]:
    out = claude_row_facts(row, request, failed)  # an id in custom_id, the response's form
    if not failed:
        out.update(_assumed("openmaas", CHAT_ROW, row))
    return out


def _union(lists: Iterable[Sequence[str]]) -> list[str]:
    return sorted({item for items in lists for item in items})


def output_facts(name: str, answered: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A lane's assumed-shape facts over its answered rows (``*_row_facts`` dicts); each None
    when no row was answered (the shape was not seen)."""
    if not answered:
        keys = ("output_row", "missing_fields", "output_fields", "reader_reads")
        return {f"{name}.{key}": None for key in keys}
    missing = _union(r["missing_fields"] for r in answered)
    return {
        f"{name}.output_row": "differs" if missing else "matches",
        f"{name}.missing_fields": missing,
        f"{name}.output_fields": _union(r["output_fields"] for r in answered),
        f"{name}.reader_reads": all(r["reader_reads"] for r in answered),
    }
