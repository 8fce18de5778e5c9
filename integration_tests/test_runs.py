"""Runs across real processes: concurrent advancers, killed advancers, a large sharded run."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.helpers import CLAUDE, child_processes, claude_request, jobs_in, task
from tests.helpers import endpoints as endpoints_of
from vertexbatch.emulator import LocalStack

from . import _workers
from ._workers import CANCELLED


def test_two_processes_advance_the_same_run(stack: LocalStack, bucket: str) -> None:
    """Two processes advancing one run at once: no duplicate live job, the same final results."""
    # Jobs stay PENDING while the advancers step, as real ones take hours: a twin one of them
    # creates is still live when it must be cancelled. Between rounds the jobs run to their end.
    stack.faults.hold(state="PENDING")
    endpoints = endpoints_of(stack, bucket)
    requests = [task(i, "[[vb:error 503]]" if i % 4 == 0 else "") for i in range(30)]
    _workers.client(endpoints).run_claude("twins", CLAUDE, requests, shard_size=10)
    ctx = child_processes()
    barrier = ctx.Barrier(2)
    inboxes = [ctx.Queue(), ctx.Queue()]
    out = ctx.Queue()
    procs = [
        ctx.Process(
            target=_workers.advance_in_rounds, args=(endpoints, "twins", barrier, inbox, out)
        )
        for inbox in inboxes
    ]
    for p in procs:
        p.start()
    for _ in range(8):
        for inbox in inboxes:
            inbox.put(True)
        steps = [out.get(timeout=120) for _ in procs]
        assert all(kind == "step" for kind, _ in steps), steps
        stack.faults.release()  # the round's jobs run; twins were cancelled in the round
        stack.faults.hold(state="PENDING")
        stack.settle()
        if all(done for _, done in steps):
            break
    for inbox in inboxes:
        inbox.put(False)
    answers = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(kind == "ok" for kind, _ in answers), answers
    first, second = (outcomes for _, outcomes in answers)
    assert first == second
    assert Counter(first.values()) == {"ok": 22, "exhausted": 8}
    per_name = Counter(
        j["displayName"] for j in jobs_in(stack, bucket) if j["state"] not in CANCELLED
    )
    assert per_name and max(per_name.values()) == 1
    assert sorted(per_name) == sorted(
        f"twins.s{s}{r}" for s in range(3) for r in ("", ".r1", ".r2")
    )


def test_advance_killed_midway_is_finished_by_the_next(stack: LocalStack, bucket: str) -> None:
    """An advancer killed after staging a retry, before creating it: the next creates it."""
    endpoints = endpoints_of(stack, bucket)
    client = _workers.client(endpoints)
    run = client.run_claude("killed-run", CLAUDE, [task(0), task(1, "[[vb:drop]]")])
    stack.settle()
    # The step stages key-1's retry, then dies with its create held before taking effect.
    _workers.kill_while_held(stack, _workers.advance, (endpoints, "killed-run"), "create", "before")
    stack.faults.unblock("create", drop=True)  # the dead caller's create never reaches Vertex
    staged = stack.storage_client().list_blobs(bucket, prefix="jobs/killed-run.s0.r1/")
    assert "jobs/killed-run.s0.r1/input.jsonl" in [b.name for b in staged]
    assert client.find("killed-run.s0.r1") is None
    summary = client.open_run("killed-run").advance()
    assert summary.created == 1
    retry = client.find("killed-run.s0.r1")
    assert retry is not None and retry.keys == 1
    for _ in range(5):
        stack.settle()
        summary = run.advance()
        if summary.done:
            break
    assert summary.done and summary.outcomes == {"ok": 1, "exhausted": 1}


@pytest.mark.slow
def test_a_big_run_in_three_shards(stack: LocalStack, bucket: str) -> None:
    """A 25,000-row run with shard size 10,000 makes three jobs and ends with 25,000 results,
    each key once. (It was 250,000 rows in shards of 100,000: 96 CPU-seconds for the same
    path; a run's scale in memory is held by integration_tests/test_memory.py at 100,000 keys,
    one job's row limit by test_row_limits.py and tests/runs/test_job_limits.py.)"""
    client = _workers.client(endpoints_of(stack, bucket))
    requests = (claude_request(f"row-{i}", f"Label row {i}", max_tokens=16) for i in range(25_000))
    run = client.run_claude("big-run", CLAUDE, requests, shard_size=10_000)
    assert [s.keys for s in run.shards] == [10_000, 10_000, 5_000]
    jobs = jobs_in(stack, bucket)
    assert len(jobs) == 3
    stack.settle(timeout=600)
    summary = run.advance()
    assert summary.done and summary.outcomes == {"ok": 25_000}
    seen: set[str] = set()
    for result in run.results():
        assert result.key not in seen
        seen.add(result.key)
    assert len(seen) == 25_000
