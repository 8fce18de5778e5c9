"""Import validation and echo normalisation (pure)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from vertexbatch.emulator._importer import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_ROWS,
    ImportFailure,
    check_size,
    normalise,
    parse_lines,
)


def jsonl(*rows: Any) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows).encode()


def nested(levels: int) -> dict[str, Any]:
    """A line whose request holds `levels` objects in a chain (request itself included)."""
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"n": value}
    return {"request": value}


def test_blank_lines_are_ignored() -> None:
    """Blank and whitespace-only lines are skipped."""
    rows, _ = parse_lines(b'\n{"request": {"a": 1}}\n   \n\n{"request": {"a": 2}}\n')
    assert [r["request"]["a"] for r in rows] == [1, 2]


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (jsonl({"request": {"a": 1}}, "{not json"), "Line 2 is not valid JSON"),
        (jsonl("[1, 2]"), "not a JSON object"),
        (jsonl({"request": {"tools": [{"google_search": {}}]}}), "with no fields"),
        (jsonl({}), "with no fields"),
        (jsonl({"request": {"a": {}}}), "request.a"),
        (jsonl({"request": {"$defs": 1}}), "column name"),
        (jsonl({"request": {"a b": 1}}), "column name"),
        (jsonl({"request": {"x": [{"": 1}]}}), "column name"),
        (jsonl(nested(MAX_DEPTH + 1)), "deeper"),
    ],
)
def test_import_failures(data: bytes, detail: str) -> None:
    """Inputs the importer cannot store fail the whole import with a content-free detail."""
    with pytest.raises(ImportFailure) as info:
        parse_lines(data)
    assert detail in info.value.detail
    assert info.value.message.startswith("Failed to import data. Please check 'Prepare input'")


def test_depth_limit_is_inclusive() -> None:
    """Exactly MAX_DEPTH levels of objects below the line is accepted."""
    rows, _ = parse_lines(jsonl(nested(MAX_DEPTH)))
    assert len(rows) == 1


def test_more_than_max_rows_fails() -> None:
    """One row more than MAX_ROWS fails, also counted across a job's inputs; blanks don't count."""
    line = b'{"request": {"a": 1}}\n'
    with pytest.raises(ImportFailure, match="more than"):
        parse_lines(line * (MAX_ROWS + 1))
    with pytest.raises(ImportFailure, match="more than"):
        parse_lines(line * 2, rows_before=MAX_ROWS - 1)
    rows, _ = parse_lines(line + b"\n" * MAX_ROWS, rows_before=MAX_ROWS - 1)
    assert len(rows) == 1


def test_size_limit() -> None:
    """An input over MAX_BYTES fails; MAX_BYTES passes."""
    check_size(MAX_BYTES)
    with pytest.raises(ImportFailure):
        check_size(MAX_BYTES + 1)


def test_normalise_injects_nulls_and_sorts_keys_without_mutating() -> None:
    """Fields seen on any line appear as null where missing, at every path, keys sorted."""
    lines = [
        {
            "request": {
                "contents": [{"role": "user", "parts": [{"text": "a"}]}],
                "generationConfig": {"temperature": 1},
            },
            "vb_id": "x",
        },
        {
            "request": {
                "contents": [{"parts": [{"file_data": {"uri": "gs://b/f"}}], "role": "user"}],
                "system_instruction": {"parts": [{"text": "s"}]},
            }
        },
    ]
    original = copy.deepcopy(lines)
    rows, schema = parse_lines(jsonl(*lines))
    out = normalise(rows, schema)
    assert rows == original
    first, second = out
    assert list(first) == ["request", "vb_id"] and second["vb_id"] is None
    assert first["request"]["contents"][0]["parts"][0] == {"file_data": None, "text": "a"}
    assert second["request"]["contents"][0]["parts"][0] == {
        "file_data": {"uri": "gs://b/f"},
        "text": None,
    }
    assert first["request"]["system_instruction"] is None
    assert second["request"]["generationConfig"] is None
    assert list(first["request"]) == sorted(first["request"])
    assert "system_instruction" in second["request"]  # casing kept as written
