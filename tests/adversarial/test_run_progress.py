"""A run's progress record (``RUN/progress.json``) is a cache of its shards' records: a step
whose cache is missing, damaged or out of date gives the same answer, and ``advance`` rebuilds
it; the shards' own records stay the source of truth."""

from __future__ import annotations

import json
import logging

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, fill_cache, task
from vertexbatch.emulator import LocalStack

PROGRESS = "jobs/prog/progress.json"


def _finished(client: vb.Client, stack: LocalStack) -> vb.Run:
    run = client.run_claude(
        "prog", CLAUDE, [task(0), task(1), task(2, "[[vb:refuse]]")], shard_size=1
    )
    stack.settle()
    while not run.advance().done:
        stack.settle()
    run.advance()  # the step after the one that finished the shards reads their done records
    return run


def test_a_missing_or_damaged_progress_record_is_rebuilt(
    client: vb.Client, stack: LocalStack, bucket: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Deleted, or not JSON: status still counts every shard from its done record, and the next
    advance writes the progress record again."""
    run = _finished(client, stack)
    expected = run.status()
    assert expected.outcomes == {"ok": 2, "refused": 1}
    blob = stack.storage_client().bucket(bucket).blob(PROGRESS)
    blob.delete()
    assert run.status() == expected
    run.advance()
    assert blob.exists()
    blob.upload_from_string(b"{not json", content_type="application/json")
    with caplog.at_level(logging.WARNING, logger="vertexbatch"):
        assert run.status() == expected
    assert "progress record" in caplog.text
    assert run.advance() == expected
    assert set(json.loads(blob.download_as_bytes())["done"]) == {"0", "1", "2"}


def test_a_done_record_replaced_since_the_progress_record_is_read_again(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A shard's done record replaced after the progress record cached it (as the online
    fallback replaces one) is read again: its new generation is not the cached one."""
    run = _finished(client, stack)
    done = stack.storage_client().bucket(bucket).blob("jobs/prog.s0/done.json")
    record = json.loads(done.download_as_bytes())
    assert record["outcomes"] == {"ok": 1}
    cached = json.loads(stack.storage_client().bucket(bucket).blob(PROGRESS).download_as_bytes())
    assert set(cached["done"]) == {"0", "1", "2"}
    record["outcomes"] = {"failed": 1}
    done.upload_from_string(json.dumps(record).encode(), content_type="application/json")
    assert run.status().outcomes == {"failed": 1, "ok": 1, "refused": 1}
    assert run.advance().outcomes == {"failed": 1, "ok": 1, "refused": 1}


def test_a_shard_the_cache_answers_whole_is_finished_while_the_budget_is_spent(
    client: vb.Client, stack: LocalStack
) -> None:
    """A shard of a cache=True run whose every key the answer cache holds is finished by the
    run's first step, even when four jobs already spend the live-job budget: no step has to
    read every staged shard to find it."""
    fill_cache(client, stack, "whole0", [task(9)])
    requests = [task(0), task(1), task(2), task(3), task(9)]
    for index in range(4):
        stack.faults.hold(display_name=f"whole.s{index}", state="PENDING")
    run = client.run_claude("whole", CLAUDE, requests, shard_size=1, cache=True)
    assert run.status().outcomes == {"ok": 1, "pending": 4}
    assert run.advance().outcomes == {"ok": 1, "pending": 4}
    stack.faults.release()
    stack.settle()
