"""Import validation and echo normalisation, as Vertex's BigQuery-style importer does them (pure).

Vertex loads a job's JSONL through an importer that infers one schema for the whole file. Inputs
it cannot store fail the whole job (`error.code` 3) before any row runs: a line that is not a JSON
object, an empty object, nesting deeper than 15 levels (lists and objects both count, the request
is level 1), a key that is not a valid column name, a `null` inside a list ("Only optional fields
can be set to NULL"), and a field whose JSON type differs from the type earlier lines gave it
("Repeated field must be imported as a JSON array"). The echoed `request` in the output is the
stored row, so a field present on any line appears as `null` on the lines that lack it, and key
order changes (here: keys sorted). Key spelling stays as written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "IMPORT_ERROR_MESSAGE",
    "MAX_BYTES",
    "MAX_DEPTH",
    "EMBEDDING_MAX_ROWS",
    "MAX_ROWS",
    "max_rows",
    "ImportFailure",
    "Schema",
    "check_size",
    "echo",
    "normalise",
    "parse_lines",
]

MAX_ROWS = 200_000
# A Gemini embedding job's rows ("Each batch job supports up to 1,000,000 rows and an input file
# size of up to 1 GB": Google's batch embeddings page,
# https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/embeddings/batch-prediction-genai-embeddings,
# read 2026-12-07).
EMBEDDING_MAX_ROWS = 1_000_000
MAX_BYTES = 1 << 30
# Levels of nested lists and objects below the line itself (the reference: "nesting deeper than
# 15 levels" fails; vertexbatch's own preflight counts the same way).
MAX_DEPTH = 15
IMPORT_ERROR_MESSAGE = (
    "Failed to import data. Please check 'Prepare input' section of the batch prediction "
    "documentation and make sure the input is valid."
)

Path = tuple[str, ...]


class _Field:
    """One path of the schema: its JSON type and the line that set it, its keys (an object's),
    its fields below (by key, "[]" for list items). The scan reaches a field from its parent by
    one dict lookup instead of building and hashing the path's tuple at every value."""

    __slots__ = ("below", "keys", "kind", "line", "order", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.kind: str | None = None
        self.line = 0
        self.keys: dict[str, None] | None = None
        self.below: dict[str, _Field] = {}
        self.order: list[tuple[str, _Field]] = []

    def at(self, step: str) -> _Field:
        found = self.below.get(step)
        if found is None:
            found = self.below[step] = _Field((*self.path, step))
        return found


@dataclass(slots=True)
class Schema:
    """What the importer learnt from the lines so far (list items add "[]" to a path)."""

    root: _Field = field(default_factory=lambda: _Field(()))

    @property
    def keys(self) -> dict[Path, dict[str, None]]:
        """For each path of an object, the keys seen there on any line."""
        return {node.path: node.keys for node in _walk(self.root) if node.keys is not None}

    @property
    def types(self) -> dict[Path, tuple[str, int]]:
        """For each path of a non-null value, its JSON type and the line that set it."""
        return {node.path: (node.kind, node.line) for node in _walk(self.root) if node.kind}


def _walk(node: _Field) -> list[_Field]:
    out, todo = [], [node]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(node.below.values())
    return out


# The JSON type the importer fixes for a field (an integer and a float are both numbers).
_TYPES: dict[type, str] = {
    dict: "record",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
}


class ImportFailure(Exception):
    """The input cannot be imported; `detail` names a line number or field path, never content."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    @property
    def message(self) -> str:
        """The job's error message."""
        return f"{IMPORT_ERROR_MESSAGE} {self.detail}"


def max_rows(model: str) -> int:
    """The most rows one job of ``model`` takes: a Gemini embedding model's 1,000,000, every
    other model's 200,000 (Gemini's batch limit, which the stack holds Claude's jobs to too)."""
    return EMBEDDING_MAX_ROWS if model.lower().startswith("gemini-embedding") else MAX_ROWS


def check_size(total_bytes: int) -> None:
    """Refuse an input larger than MAX_BYTES."""
    if total_bytes > MAX_BYTES:
        raise ImportFailure(f"The input is larger than {MAX_BYTES} bytes.")


def _bad_key(key: str) -> bool:
    return not key or key.startswith("$") or any(c.isspace() for c in key)


def _field(path: Path) -> str:
    """A path as the importer names a field: dotted, list items not marked."""
    return ".".join(step for step in path if step != "[]") or "<line>"


def _mismatch(was: str, now: str, path: Path) -> str:
    """The importer's complaint about a value of type `now` where earlier lines put `was`."""
    name = _field(path)
    if was == "array":
        return f"Repeated field must be imported as a JSON array. Field: {name}."
    if now == "array":
        return f"Array specified for non-repeated field: {name}."
    if now == "record":
        return f"JSON object specified for non-record field: {name}."
    if was == "record":
        return f"Expected a JSON object for record field: {name}."
    target = {"string": "string", "number": "double", "boolean": "boolean"}[was]
    return f"Could not convert value to {target}. Field: {name}."


def _type(value: Any, node: _Field, line: int) -> None:
    """Fix the field's type from its first non-null value; a different one fails the import."""
    kind = _TYPES.get(type(value))
    if kind is None or kind == node.kind:
        return
    if node.kind is None:
        node.kind, node.line = kind, line
        return
    raise ImportFailure(
        f"Line {line}: {_mismatch(node.kind, kind, node.path)} (its type was set by line "
        f"{node.line})"
    )


def _scan(value: Any, node: _Field, depth: int, line: int) -> None:
    if isinstance(value, dict):
        if not value:
            raise ImportFailure(
                f"Line {line}: cannot store struct '{_field(node.path)}' with no fields."
            )
        if depth > MAX_DEPTH:
            raise ImportFailure(f"Line {line}: nesting is deeper than {MAX_DEPTH} levels.")
        _type(value, node, line)
        keys = node.keys
        if keys is None:
            keys = node.keys = {}
        below = node.below
        for key, item in value.items():
            if key not in keys:
                if _bad_key(key):
                    raise ImportFailure(f"Line {line}: a field name is not a valid column name.")
                keys[key] = None
            child = below.get(key) or node.at(key)
            if isinstance(item, (dict, list)):
                _scan(item, child, depth + 1, line)
            elif child.kind is None or _TYPES.get(type(item), child.kind) != child.kind:
                _type(item, child, line)
    elif isinstance(value, list):
        if depth > MAX_DEPTH:
            raise ImportFailure(f"Line {line}: nesting is deeper than {MAX_DEPTH} levels.")
        _type(value, node, line)
        items = node.below.get("[]") or node.at("[]")
        for item in value:
            if item is None:
                raise ImportFailure(
                    f"Line {line}: Only optional fields can be set to NULL. Field: "
                    f"{_field(node.path)}."
                )
            if isinstance(item, (dict, list)):
                _scan(item, items, depth + 1, line)
            else:
                _type(item, items, line)


def parse_lines(
    data: bytes, schema: Schema | None = None, rows_before: int = 0, most: int = MAX_ROWS
) -> tuple[list[dict[str, Any]], Schema]:
    """Parse and validate one JSONL input; blank lines are ignored.

    For a job with several inputs, pass the schema and row count of the earlier ones; ``most``
    is the job's row limit (``max_rows`` of its model).

    Returns:
        The rows and the schema (keys per path) that `normalise` needs.

    Raises:
        ImportFailure: a non-JSON line, a line that is not an object, an empty object, nesting
            deeper than MAX_DEPTH, a key that is not a valid column name, a null inside a list,
            a field whose type differs from an earlier line's, more than ``most`` rows.
    """
    schema = Schema() if schema is None else schema
    lines = data.splitlines()
    # Counting first refuses an oversized input without parsing it.
    if rows_before + len(lines) > most and (
        rows_before + sum(1 for raw in lines if raw.strip()) > most
    ):
        raise ImportFailure(f"The input has more than {most} rows.")
    rows: list[dict[str, Any]] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except ValueError:
            raise ImportFailure(f"Line {number} is not valid JSON.") from None
        if not isinstance(row, dict):
            raise ImportFailure(f"Line {number} is not a JSON object.")
        _scan(row, schema.root, 0, number)
        rows.append(row)
    return rows, schema


def _orders(node: _Field) -> None:
    """Each object field's keys, sorted, with their fields: the order an echo's keys take."""
    for child in node.below.values():
        _orders(child)
    if node.keys is not None:
        node.order = [(key, node.at(key)) for key in sorted(node.keys)]


def _normalise(value: Any, node: _Field) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        get = value.get
        for key, child in node.order:
            item = get(key)
            out[key] = _normalise(item, child) if isinstance(item, (dict, list)) else item
        return out
    if isinstance(value, list):
        items = node.below.get("[]")
        return [
            _normalise(item, items)
            if items is not None and isinstance(item, (dict, list))
            else item
            for item in value
        ]
    return value


def echo(schema: Schema) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A row as Vertex echoes it (missing keys null, keys sorted; a new value), for a schema
    that has seen every row: a job builds each row's echo as it runs the row."""
    root = schema.root
    _orders(root)
    return lambda row: _normalise(row, root)


def normalise(rows: list[dict[str, Any]], schema: Schema) -> list[dict[str, Any]]:
    """The rows as Vertex echoes them: missing keys null, keys sorted; returns new values."""
    echoed = echo(schema)
    return [echoed(row) for row in rows]
