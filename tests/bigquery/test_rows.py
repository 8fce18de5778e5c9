"""An output table row as the parsed GCS line it stands for (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from vertexbatch._bigquery.read import output_row

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("cells", "row"),
    [
        (  # a Claude row from JSONL input: custom_id is a JSON column, so its value is quoted
            {"custom_id": '"kabc"', "request": '{"a":1}', "response": '{"b":2}', "status": ""},
            {"custom_id": "kabc", "request": {"a": 1}, "response": {"b": 2}, "status": ""},
        ),
        (  # a STRING custom_id is taken as it is
            {"custom_id": "kabc", "request": None, "response": None, "status": "429 x"},
            {"custom_id": "kabc", "request": None, "response": None, "status": "429 x"},
        ),
        (  # text that is not JSON stays text: classify reads it as unreadable
            {"request": "{", "response": "not json", "processed_time": WHEN},
            {"request": "{", "response": "not json", "processed_time": WHEN.isoformat()},
        ),
        (  # Gemini's copied columns pass through
            {"request": '{"labels":{"vb_key":"k1"}}', "note": "n", "response": '{"c":[]}'},
            {"request": {"labels": {"vb_key": "k1"}}, "note": "n", "response": {"c": []}},
        ),
    ],
)
def test_a_row_reads_as_its_line(cells: dict[str, Any], row: dict[str, Any]) -> None:
    assert output_row(cells, 10_000) == (row, b"")


def test_a_row_past_the_longest_line_keeps_only_its_id() -> None:
    """As a GCS line cut at ``Limits.output_line``: no parse, only what names its key."""
    long = '"' + "x" * 100 + '"'
    assert output_row({"custom_id": '"kabc"', "response": long}, 50) == (
        None,
        b'{"custom_id": "kabc"}',
    )
    gemini = '{"labels":{"vb_key":"k1"},"contents":' + long + "}"
    assert output_row({"request": gemini}, 50) == (None, gemini.encode()[:50])
