"""The online fallback across processes: each key is answered online at most once (issue 10)."""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import vertexbatch as vb
from vertexbatch.emulator import LocalStack

from . import _fallback_workers, _workers
from .test_identity import _endpoints

MODEL = _workers.MODEL
PROCESSES = 4
SHARDS = 2
SHARD_SIZE = 6
KEYS = [f"key-{i}" for i in range(SHARDS * SHARD_SIZE)]


def _late_run(stack: LocalStack, endpoints: dict[str, str], run_id: str) -> None:
    """A run of two shards whose jobs stay PENDING, with slow online calls."""
    for shard in range(SHARDS):
        stack.faults.hold(display_name=f"{run_id}.s{shard}", state="PENDING")
    requests = [
        vb.ClaudeRequest(
            key, {"max_tokens": 16, "messages": [{"role": "user", "content": f"Task {key}"}]}
        )
        for key in KEYS
    ]
    _workers.client(endpoints).run_claude(run_id, MODEL, requests, shard_size=SHARD_SIZE)
    # Slow enough that every process reaches a shard while its claimer is still answering.
    stack.faults.delay("rawPredict", 2.0)
    stack.reset_calls()


def _advance_together(endpoints: dict[str, str], run_id: str) -> list[dict[str, Any]]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    out = ctx.Queue()
    procs = [
        ctx.Process(
            target=_fallback_workers.advance_past_deadline, args=(endpoints, run_id, barrier, out)
        )
        for _ in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    answers = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(kind == "ok" for kind, _ in answers), answers
    return [report for _, report in answers]


def _claim(stack: LocalStack, bucket: str, run_id: str, shard: int) -> Any:
    return stack.storage_client().bucket(bucket).blob(f"jobs/{run_id}.s{shard}/online.claim.json")


def test_processes_past_the_deadline_answer_each_key_online_once(
    stack: LocalStack, bucket: str
) -> None:
    """4 processes advance one run past its deadline at once: one online call per key."""
    endpoints = _endpoints(stack, bucket)
    _late_run(stack, endpoints, "rush")
    reports = _advance_together(endpoints, "rush")
    assert stack.calls()["rawPredict"] == len(KEYS)
    for report in reports:
        assert Counter(report["keys"]) == Counter(KEYS)  # every key, each exactly once
    # The processes did overlap: some step found a shard claimed by another and waited.
    assert any(report["first"].get("pending") for report in reports), reports


def test_processes_racing_for_a_stale_claim_take_it_over_once(
    stack: LocalStack, bucket: str
) -> None:
    """A crashed claimer's expired claims, 4 processes: one takes each over, one call per key."""
    endpoints = _endpoints(stack, bucket)
    _late_run(stack, endpoints, "stale")
    expired = (datetime.now(UTC) - timedelta(minutes=10)).isoformat()
    crashed = {"format": "vertexbatch-online-claim/1", "owner": "crashed/1/0", "expires": expired}
    for shard in range(SHARDS):
        _claim(stack, bucket, "stale", shard).upload_from_string(json.dumps(crashed))
    reports = _advance_together(endpoints, "stale")
    assert stack.calls()["rawPredict"] == len(KEYS)
    for report in reports:
        assert Counter(report["keys"]) == Counter(KEYS)
    for shard in range(SHARDS):
        claim = json.loads(_claim(stack, bucket, "stale", shard).download_as_bytes())
        assert claim["owner"] != "crashed/1/0"
