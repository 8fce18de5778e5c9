"""One job's rows are the model's everywhere a row count is checked: a Gemini embedding job takes
1,000,000 rows (the catalogue's ``job_rows``, Google's batch embeddings page), a Gemini or Claude
job 200,000 (``_rules.MAX_ROWS``); runs cut, ledgers and task records validate, and the local
stack's importer refuses, at the model's number."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import vertexbatch as vb
from vertexbatch._providers import job_limits, job_rows
from vertexbatch._requests.lines import StagedLine
from vertexbatch._rules import DEFAULT_LIMITS, MAX_ROWS, Limits
from vertexbatch._runs.ledger import Ledger, Shard
from vertexbatch._runs.registry import TaskRecord
from vertexbatch._runs.shards import Shards
from vertexbatch._vertex.controls import NO_CONTROLS
from vertexbatch.emulator._importer import EMBEDDING_MAX_ROWS, ImportFailure, max_rows, parse_lines

EMBEDDING = "gemini-embedding-001"
EMBEDDING_ROWS = 1_000_000
GEMINI = "gemini-2.5-flash"
CLAUDE = "claude-sonnet-4-5"


@pytest.mark.parametrize(
    ("model", "rows"),
    [
        (EMBEDDING, EMBEDDING_ROWS),
        ("gemini-embedding-2", EMBEDDING_ROWS),
        (f"{EMBEDDING}@001", EMBEDDING_ROWS),
        (GEMINI, MAX_ROWS),
        (CLAUDE, MAX_ROWS),  # no job_rows in the catalogue: vertexbatch's default
        ("gemini-9-uncatalogued", MAX_ROWS),
    ],
)
def test_one_job_s_rows_are_the_model_s(model: str, rows: int) -> None:
    assert job_rows(model) == job_limits(model, DEFAULT_LIMITS).rows == rows
    assert job_limits(model, DEFAULT_LIMITS).input_bytes == 1_000_000_000


def test_a_limit_given_below_the_default_stays_a_ceiling() -> None:
    """Tests reach the limits with small inputs: a smaller given limit is kept for any model."""
    assert job_limits(EMBEDDING, Limits(rows=2)).rows == 2
    assert job_limits(EMBEDDING, Limits(input_bytes=10)) == Limits(
        rows=EMBEDDING_ROWS, input_bytes=10
    )


def _lines(n: int) -> Iterator[StagedLine]:
    line = StagedLine("k", "d", "c", b"x\n")
    return (line for _ in range(n))


def _cut(model: str, shard_size: int, n: int) -> list[int]:
    shards = Shards(_lines(n), shard_size, job_limits(model, DEFAULT_LIMITS))
    counts = []
    while shards.more():
        counts.append(sum(1 for _ in shards.take()))
    return counts


def test_600000_embeddings_are_one_shard_and_gemini_still_shards_at_200000() -> None:
    assert _cut(EMBEDDING, 600_000, 600_000) == [600_000]
    assert _cut(GEMINI, 600_000, 600_000) == [MAX_ROWS] * 3
    assert _cut(CLAUDE, 600_000, MAX_ROWS + 1) == [MAX_ROWS, 1]


def _ledger(model: str, keys: int) -> dict[str, object]:
    return Ledger("r", "embeddings" if "embedding" in model else "google", model, 3,
                  (Shard("r.s0", keys),)).to_json()  # fmt: skip


def _record(model: str, keys: int) -> dict[str, object]:
    provider = "embeddings" if "embedding" in model else "google"
    return TaskRecord("r", 0, 1, provider, model, 3, keys, False, NO_CONTROLS,
                      (Shard("r.s0", keys),), "0" * 32).to_json()  # fmt: skip


@pytest.mark.parametrize("read", [_ledger, _record], ids=["ledger", "task record"])
def test_a_shard_of_the_model_s_rows_is_read_back_and_one_more_is_refused(read: object) -> None:
    def parse(model: str, keys: int) -> object:
        data = read(model, keys)  # type: ignore[operator]
        if read is _ledger:
            return Ledger.from_json(data, "r", "gs://b/r/ledger.json")
        return TaskRecord.from_json(data, "r", 0, "gs://b/r/tasks/t0.json")

    assert parse(EMBEDDING, EMBEDDING_ROWS) is not None
    assert parse(GEMINI, MAX_ROWS) is not None
    with pytest.raises(vb.InvalidRequestError, match=f"'keys': 1-{EMBEDDING_ROWS}"):
        parse(EMBEDDING, EMBEDDING_ROWS + 1)
    with pytest.raises(vb.InvalidRequestError, match=f"'keys': 1-{MAX_ROWS}"):
        parse(GEMINI, MAX_ROWS + 1)


def test_the_stack_s_importer_holds_each_model_to_its_own_rows() -> None:
    assert max_rows(EMBEDDING) == max_rows("gemini-embedding-2") == EMBEDDING_MAX_ROWS
    assert EMBEDDING_MAX_ROWS == EMBEDDING_ROWS
    assert max_rows(GEMINI) == max_rows(CLAUDE) == MAX_ROWS
    line = b'{"key": "k", "request": {"content": {"parts": [{"text": "x"}]}}}\n'
    rows, _ = parse_lines(line * 3, most=3)
    assert len(rows) == 3
    with pytest.raises(ImportFailure, match="more than 3 rows"):
        parse_lines(line * 2, rows_before=2, most=3)
