"""One job's limits per model: the catalogue's ``job_rows`` / ``job_bytes`` where it gives them,
vertexbatch's defaults where it does not; runs cut their shards at them, plans count the same
jobs, a single submission is held to them (the catalogue: this file's rows, ``catalogue_of``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import vertexbatch as vb
from tests.helpers import gemini_requests
from vertexbatch._catalogue import Model, Source, catalogue_of
from vertexbatch._providers import job_limits
from vertexbatch._requests.lines import StagedLine
from vertexbatch._rules import DEFAULT_LIMITS, MAX_INPUT_BYTES, MAX_ROWS, Limits
from vertexbatch._runs.shards import Shards

SOURCE = (Source("https://example.com/limits", "2026-12-07"),)
SMALL = "gemini-2.5-flash"  # served by the stack; this file's row gives it two rows a job
BYTES = "gemini-test-bytes"
UNKNOWN = "gemini-test-unknown"


def _row(model: str, rows: int | None = None, size: int | None = None) -> Model:
    return Model(
        model, "google", True, frozenset({"us-central1"}), None, False, SOURCE,
        job_rows=rows, job_bytes=size,
    )  # fmt: skip


@pytest.fixture(autouse=True)
def own_catalogue() -> Iterator[None]:
    with catalogue_of((_row(SMALL, rows=2), _row(BYTES, size=10), _row(UNKNOWN))):
        yield


def test_the_catalogue_s_limits_replace_the_defaults_where_given() -> None:
    assert job_limits(SMALL, DEFAULT_LIMITS) == Limits(rows=2)
    assert job_limits(f"{SMALL}@001", DEFAULT_LIMITS).rows == 2
    assert job_limits(BYTES, DEFAULT_LIMITS) == Limits(input_bytes=10)


def test_an_unknown_limit_or_an_uncatalogued_model_keeps_the_defaults() -> None:
    assert job_limits(UNKNOWN, DEFAULT_LIMITS) is DEFAULT_LIMITS
    assert job_limits("gemini-9-new", DEFAULT_LIMITS) is DEFAULT_LIMITS
    assert (DEFAULT_LIMITS.rows, DEFAULT_LIMITS.input_bytes) == (MAX_ROWS, MAX_INPUT_BYTES)


def test_a_smaller_limit_given_stays() -> None:
    assert job_limits(SMALL, Limits(rows=1, input_bytes=5)) == Limits(rows=1, input_bytes=5)


def _lines(n: int, size: int = 4) -> list[StagedLine]:
    return [StagedLine(f"k{i}", f"d{i}", f"c{i}", b"x" * size) for i in range(n)]


def test_shards_are_cut_at_the_shard_size_and_the_job_s_rows_and_bytes() -> None:
    def cut(size: int, limits: Limits, n: int = 5) -> list[int]:
        shards = Shards(_lines(n), size, limits)
        counts = []
        while shards.more():
            counts.append(sum(1 for _ in shards.take()))
        return counts

    assert cut(10, DEFAULT_LIMITS) == [5]
    assert cut(2, DEFAULT_LIMITS) == [2, 2, 1]
    assert cut(10, job_limits(SMALL, DEFAULT_LIMITS)) == [2, 2, 1]
    assert cut(10, job_limits(BYTES, DEFAULT_LIMITS)) == [2, 2, 1]  # 4-byte lines, 10 a job


def test_a_run_and_its_plan_cut_at_the_model_s_rows(client: vb.Client) -> None:
    """shard_size 10, the catalogue's two rows a job: five requests are three shards, and the
    plan counts three jobs; a single submission of three is refused before any cloud call."""
    requests = gemini_requests(5)
    plan = client.plan_gemini("limits", SMALL, requests, shard_size=10)
    assert plan.jobs == 3
    run = client.run_gemini("limits", SMALL, requests, shard_size=10)
    assert [shard.keys for shard in run.shards] == [2, 2, 1]
    with pytest.raises(vb.InvalidRequestError, match="more than 2 requests for one job"):
        client.submit_gemini("limits-one", SMALL, gemini_requests(3))
