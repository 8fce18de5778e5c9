"""Import validation and echo normalisation, as Vertex's BigQuery-style importer does them (pure).

Vertex loads a job's JSONL through an importer that infers one schema for the whole file. Inputs
it cannot store fail the whole job (`error.code` 3) before any row runs; the echoed `request` in
the output is the stored row, so a field present on any line appears as `null` on the lines
that lack it, and key order changes (here: keys sorted). Key spelling stays as written.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "IMPORT_ERROR_MESSAGE",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_ROWS",
    "ImportFailure",
    "Schema",
    "check_size",
    "normalise",
    "parse_lines",
]

MAX_ROWS = 200_000
MAX_BYTES = 1 << 30
# Levels of nested objects below the line itself (BigQuery allows 15 levels of RECORD).
MAX_DEPTH = 15
IMPORT_ERROR_MESSAGE = (
    "Failed to import data. Please check 'Prepare input' section of the batch prediction "
    "documentation and make sure the input is valid."
)

Path = tuple[str, ...]
# For each path of an object (list items add "[]"), the keys seen there on any line.
Schema = dict[Path, dict[str, None]]


class ImportFailure(Exception):
    """The input cannot be imported; `detail` names a line number or field path, never content."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    @property
    def message(self) -> str:
        """The job's error message."""
        return f"{IMPORT_ERROR_MESSAGE} {self.detail}"


def check_size(total_bytes: int) -> None:
    """Refuse an input larger than MAX_BYTES."""
    if total_bytes > MAX_BYTES:
        raise ImportFailure(f"The input is larger than {MAX_BYTES} bytes.")


def _bad_key(key: str) -> bool:
    return not key or key.startswith("$") or any(c.isspace() for c in key)


def _scan(value: Any, path: Path, depth: int, schema: Schema, line: int) -> None:
    if isinstance(value, dict):
        if not value:
            raise ImportFailure(
                f"Line {line}: cannot store struct '{'.'.join(path) or '<line>'}' with no fields."
            )
        if depth > MAX_DEPTH:
            raise ImportFailure(f"Line {line}: nesting is deeper than {MAX_DEPTH} levels.")
        keys = schema.get(path)
        if keys is None:
            keys = schema[path] = {}
        for key, item in value.items():
            if _bad_key(key):
                raise ImportFailure(f"Line {line}: a field name is not a valid column name.")
            keys[key] = None
            if isinstance(item, (dict, list)):
                _scan(item, (*path, key), depth + 1, schema, line)
    elif isinstance(value, list):
        item_path = (*path, "[]")
        for item in value:
            if isinstance(item, (dict, list)):
                _scan(item, item_path, depth, schema, line)


def parse_lines(
    data: bytes, schema: Schema | None = None, rows_before: int = 0
) -> tuple[list[dict[str, Any]], Schema]:
    """Parse and validate one JSONL input; blank lines are ignored.

    For a job with several inputs, pass the schema and row count of the earlier ones.

    Returns:
        The rows and the schema (keys per path) that `normalise` needs.

    Raises:
        ImportFailure: a non-JSON line, a line that is not an object, an empty object, nesting
            deeper than MAX_DEPTH, a key that is not a valid column name, more than MAX_ROWS rows.
    """
    schema = {} if schema is None else schema
    lines = data.splitlines()
    # Counting first refuses an oversized input without parsing it.
    if rows_before + len(lines) > MAX_ROWS and (
        rows_before + sum(1 for raw in lines if raw.strip()) > MAX_ROWS
    ):
        raise ImportFailure(f"The input has more than {MAX_ROWS} rows.")
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
        _scan(row, (), 0, schema, number)
        rows.append(row)
    return rows, schema


def _sorted_schema(schema: Schema) -> dict[Path, list[str]]:
    return {path: sorted(keys) for path, keys in schema.items()}


def _normalise(value: Any, path: Path, order: dict[Path, list[str]]) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key in order.get(path, ()):
            item = value.get(key)
            out[key] = (
                _normalise(item, (*path, key), order) if isinstance(item, (dict, list)) else item
            )
        return out
    if isinstance(value, list):
        item_path = (*path, "[]")
        return [
            _normalise(item, item_path, order) if isinstance(item, (dict, list)) else item
            for item in value
        ]
    return value


def normalise(rows: list[dict[str, Any]], schema: Schema) -> list[dict[str, Any]]:
    """The rows as Vertex echoes them: missing keys null, keys sorted; returns new values."""
    order = _sorted_schema(schema)
    return [_normalise(row, (), order) for row in rows]
