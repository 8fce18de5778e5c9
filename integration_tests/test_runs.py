"""Runs across real processes: concurrent advancers, killed advancers, a large sharded run."""

from __future__ import annotations

import multiprocessing
from collections import Counter

import vertexbatch as vb
from vertexbatch.emulator import LocalStack, Timing

from . import _workers
from .test_identity import CANCELLED, _endpoints

MODEL = _workers.MODEL


def _req(i: int, directive: str = "") -> vb.ClaudeRequest:
    return vb.ClaudeRequest(
        f"key-{i}",
        {"max_tokens": 32, "messages": [{"role": "user", "content": f"Task {i} {directive}"}]},
    )


def test_two_processes_advance_the_same_run() -> None:
    """Two processes advancing one run in loops: no duplicate live job, the same final results."""
    # Jobs that take a moment, as real ones take hours: a twin is still live when it is cancelled.
    with LocalStack(timing=Timing(pending_seconds=0.5)) as stack:
        stack.create_bucket("twins-bucket")
        _two_processes_advance(stack, _endpoints(stack, "twins-bucket"))


def _two_processes_advance(stack: LocalStack, endpoints: dict[str, str]) -> None:
    requests = [_req(i, "[[vb:error 503]]" if i % 4 == 0 else "") for i in range(30)]
    _workers.client(endpoints).run_claude("twins", MODEL, requests, shard_size=10)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_workers.advance_many, args=(endpoints, "twins", barrier, out))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    answers = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(kind == "ok" for kind, _ in answers), answers
    first, second = (outcomes for _, outcomes in answers)
    assert first == second
    assert Counter(first.values()) == {"ok": 22, "retryable": 8}
    per_name = Counter(
        j["displayName"]
        for j in stack.jobs()
        if j["displayName"].startswith("twins.") and j["state"] not in CANCELLED
    )
    assert per_name and max(per_name.values()) == 1
    assert sorted(per_name) == sorted(
        f"twins.s{s}{r}" for s in range(3) for r in ("", ".r1", ".r2")
    )


def test_advance_killed_midway_is_finished_by_the_next(stack: LocalStack, bucket: str) -> None:
    """An advancer killed after staging a retry: the next advance creates it from GCS alone."""
    endpoints = _endpoints(stack, bucket)
    client = _workers.client(endpoints)
    run = client.run_claude("killed-run", MODEL, [_req(0), _req(1, "[[vb:drop]]")])
    first = client.find("killed-run.s0")
    assert first is not None
    stack.wait_job(first.name)
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=_workers.advance_and_die_in_resubmit, args=(endpoints, "killed-run"))
    p.start()
    p.join(timeout=120)
    assert p.exitcode == 9
    assert client.find("killed-run.s0.r1") is None  # staged, but no job yet
    summary = client.open_run("killed-run").advance()
    assert summary.created == 1
    retry = client.find("killed-run.s0.r1")
    assert retry is not None and retry.keys == 1
    for _ in range(5):
        for job in stack.jobs():
            if job["state"] not in (
                "JOB_STATE_SUCCEEDED",
                "JOB_STATE_CANCELLED",
                "JOB_STATE_FAILED",
            ):
                stack.wait_job(job["name"])
        summary = run.advance()
        if summary.done:
            break
    assert summary.done and summary.outcomes == {"ok": 1, "exhausted": 1}


def test_250k_rows_in_three_shards(stack: LocalStack, bucket: str) -> None:
    """A 250,000-row run with shard size 100,000 makes three jobs and ends with 250,000 results."""
    client = _workers.client(_endpoints(stack, bucket))
    requests = (
        vb.ClaudeRequest(
            f"row-{i}",
            {"max_tokens": 16, "messages": [{"role": "user", "content": f"Label row {i}"}]},
        )
        for i in range(250_000)
    )
    run = client.run_claude("big-run", MODEL, requests, shard_size=100_000)
    assert [s.keys for s in run.shards] == [100_000, 100_000, 50_000]
    jobs = [j for j in stack.jobs() if j["displayName"].startswith("big-run.")]
    assert len(jobs) == 3
    for job in jobs:
        stack.wait_job(job["name"], timeout=600)
    summary = run.advance()
    assert summary.done and summary.outcomes == {"ok": 250_000}
    seen: set[str] = set()
    for result in run.results():
        assert result.key not in seen
        seen.add(result.key)
    assert len(seen) == 250_000
