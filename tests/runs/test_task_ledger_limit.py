"""A task whose own shards already make the run's ledger too large to read back is refused as
early as that is known: before any cloud call for a list, before the shard for a stream."""

from __future__ import annotations

import pytest

import vertexbatch as vb
from tests.helpers import jobs_in, object_names, task, with_staging_sizes
from vertexbatch._rules import Limits
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"


def _record_bytes(client: vb.Client, stack: LocalStack, bucket: str, run_id: str) -> int:
    """The larger of the task record and the ledger the one task of a run of one task makes
    from 6 requests in 6 shards: every shard of the run is that task's, so its floor is exact."""
    client.run_claude(run_id, MODEL, [task(i) for i in range(6)], shard_size=1, task=vb.Task(0, 1))
    sizes = []
    for name in ("run.json", "tasks/t0.json"):
        blob = stack.storage_client().bucket(bucket).get_blob(f"jobs/{run_id}/{name}")
        assert blob is not None and blob.size is not None
        sizes.append(blob.size)
    assert sizes[1] > sizes[0]  # the record holds more than the ledger: it bounds first
    return max(sizes)


def test_the_floor_is_exact_a_ledger_of_its_limit_goes_through_and_one_byte_less_does_not(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    size = _record_bytes(client, stack, bucket, "edge")
    rows = [task(i) for i in range(6)]
    with_staging_sizes(client, limits=Limits(record_bytes=size))
    client.run_claude("edgf", MODEL, rows, shard_size=1, task=vb.Task(0, 1))  # the same size
    with_staging_sizes(client, limits=Limits(record_bytes=size - 1))
    with pytest.raises(vb.InvalidRequestError) as info:
        client.run_claude("edgg", MODEL, rows, shard_size=1, task=vb.Task(0, 1))
    message = str(info.value)
    assert message.startswith("task 0 of 1: 6 requests in shards of 1 make at least 6 shards")
    assert f"would be at least {size:,} bytes" in message
    assert f"over the {size - 1:,} a record may be" in message
    assert "use a larger shard_size than 1" in message and "nothing was staged" in message
    assert info.value.field == "shard_size"
    assert object_names(stack, bucket, "jobs/edgg") == []


def test_a_listed_part_over_the_limit_is_refused_before_any_cloud_call(
    counted: tuple[vb.Client, list[str]], stack: LocalStack, bucket: str
) -> None:
    """Task 2 of 3 alone would overflow the ledger: refused before it asks GCS anything, while
    its peers' parts fit (the other tasks are not known; see the next test)."""
    client, seen = counted
    with_staging_sizes(client, limits=Limits(record_bytes=1_000))
    rows = [task(i) for i in range(30)]
    seen.clear()
    with pytest.raises(vb.InvalidRequestError, match="use a larger shard_size than 1") as info:
        client.run_claude("over", MODEL, rows, shard_size=1, task=vb.Task(2, 3))
    assert str(info.value).startswith("task 2 of 3: 30 requests in shards of 1 make at least 30")
    assert "over.s{n*3+2}" in str(info.value)
    assert seen == []
    # A larger shard size fits.
    client.run_claude("over", MODEL, rows, shard_size=10, task=vb.Task(2, 3))


def test_a_streamed_part_over_the_limit_is_refused_before_the_shard_that_would_overflow(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A stream's shards are counted as they are cut: the shard that would overflow is not
    staged, the task does not register, and no job exists."""
    with_staging_sizes(client, limits=Limits(record_bytes=1_000))
    rows = (task(i) for i in range(30))
    with pytest.raises(vb.InvalidRequestError, match="task 1 of 2 has more than") as info:
        client.run_claude("flow", MODEL, rows, shard_size=1, task=vb.Task(1, 2))
    message = str(info.value)
    staged = {n.split("/")[1] for n in object_names(stack, bucket, "jobs/flow.")}
    assert f"more than {len(staged):,} shards" in message and "a new run id" in message
    assert staged == {f"flow.s{2 * n + 1}" for n in range(len(staged))} and 5 < len(staged) < 30
    assert object_names(stack, bucket, "jobs/flow/") == []  # no record, no ledger
    assert jobs_in(stack, client.bucket) == []


def test_parts_that_fit_alone_but_not_together_are_refused_when_the_ledger_would_be_made(
    client: vb.Client, stack: LocalStack
) -> None:
    """What cannot be known early: each task's part fits, the run's does not; the advance that
    finds every task registered refuses it, and no job exists."""
    with_staging_sizes(client, limits=Limits(record_bytes=1_000))
    rows = [task(i) for i in range(24)]
    client.run_claude("pair", MODEL, rows[:12], shard_size=1, task=vb.Task(0, 2))
    with pytest.raises(vb.InvalidRequestError, match="use a larger shard_size"):
        client.run_claude("pair", MODEL, rows[12:], shard_size=1, task=vb.Task(1, 2))
    assert jobs_in(stack, client.bucket) == []
