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


@pytest.mark.parametrize(
    ("rows", "detail"),
    [
        (
            [{"request": {"stop_sequences": ["a", None]}}],
            "Line 1: Only optional fields can be set to NULL. Field: request.stop_sequences.",
        ),
        (
            [{"request": {"m": [{"c": "x"}]}}, {"request": {"m": [{"c": [{"t": "y"}]}]}}],
            "Line 2: Array specified for non-repeated field: request.m.c. (its type was set by "
            "line 1)",
        ),
        (
            [{"request": {"m": [{"c": [{"t": "y"}]}]}}, {"request": {"m": [{"c": "x"}]}}],
            "Line 2: Repeated field must be imported as a JSON array. Field: request.m.c.",
        ),
        (
            [{"request": {"n": 1}}, {"request": {"n": 2.5}}, {"request": {"n": "3"}}],
            "Line 3: Could not convert value to double. Field: request.n.",
        ),
        (
            [{"request": {"n": {"a": 1}}}, {"request": {"n": True}}],
            "Line 2: Expected a JSON object for record field: request.n.",
        ),
        (
            [{"request": {"n": False}}, {"request": {"n": {"a": 1}}}],
            "Line 2: JSON object specified for non-record field: request.n.",
        ),
        ([{"request": {"e": ["a", 1]}}], "Line 1: Could not convert value to string."),
    ],
    ids=["null-in-list", "string-then-list", "list-then-string", "number-then-string",
         "record-then-boolean", "boolean-then-record", "mixed-list-items"],
)  # fmt: skip
def test_whole_file_schema_failures(rows: list[Any], detail: str) -> None:
    """A null inside a list, and a field whose type differs from the type earlier lines gave
    it, fail the import; the detail names the field and the lines, never a value."""
    with pytest.raises(ImportFailure) as info:
        parse_lines(jsonl(*rows))
    assert info.value.detail.startswith(detail), info.value.detail


def test_nulls_fit_any_type_and_numbers_mix() -> None:
    """A null field (not in a list) fits any type; integers and floats are both numbers; the
    schema carries over to a job's next input object."""
    rows, schema = parse_lines(
        jsonl({"request": {"n": 1, "s": None}}, {"request": {"n": 0.5, "s": "x"}})
    )
    assert len(rows) == 2
    with pytest.raises(ImportFailure, match="Line 1: Could not convert value to string"):
        parse_lines(jsonl({"request": {"s": 5}}), schema, len(rows))


def test_lists_count_toward_depth() -> None:
    """Lists are levels too: 15 levels (the request included) pass, 16 fail."""
    fifteen = {"request": {"a": json.loads("[" * 14 + "1" + "]" * 14)}}
    assert len(parse_lines(jsonl(fifteen))[0]) == 1
    with pytest.raises(ImportFailure, match="deeper than 15"):
        parse_lines(jsonl({"request": {"a": json.loads("[" * 15 + "1" + "]" * 15)}}))


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
