"""The online fallback across processes: each key is answered online at most once (issue 10),
and a step killed mid-way leaves its written answers to the next (issue 11)."""

from __future__ import annotations

import json
import signal
from collections import Counter
from datetime import UTC, datetime, timedelta
from email.message import Message
from typing import Any

from tests.gcs_gate import Spoil, body_gate
from tests.helpers import CLAUDE, child_processes, claude_request
from vertexbatch.emulator import LocalStack

from . import _fallback_workers, _workers

PROCESSES = 4
SHARDS = 2
SHARD_SIZE = 6
KEYS = [f"key-{i}" for i in range(SHARDS * SHARD_SIZE)]


def _late_run(stack: LocalStack, endpoints: dict[str, str], run_id: str) -> None:
    """A run of two shards whose jobs stay PENDING."""
    for shard in range(SHARDS):
        stack.faults.hold(display_name=f"{run_id}.s{shard}", state="PENDING")
    requests = [claude_request(key, f"Task {key}", max_tokens=16) for key in KEYS]
    _workers.client(endpoints).run_claude(run_id, CLAUDE, requests, shard_size=SHARD_SIZE)
    stack.reset_calls()


def _advance_together(
    stack: LocalStack, endpoints: dict[str, str], run_id: str
) -> list[dict[str, Any]]:
    """Every process advances the run past its deadline at once, until it is done.

    The online calls are held until the processes that claimed no shard (one claimer per shard:
    its calls are held, so it cannot claim another) have finished their first step, which must
    then have found every shard claimed by another process and called nothing.
    """
    stack.faults.block("rawPredict", times=len(KEYS))
    ctx = child_processes()
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
    waiting = [out.get(timeout=120) for _ in range(PROCESSES - SHARDS)]
    assert waiting == [("first", {"pending": len(KEYS)})] * (PROCESSES - SHARDS), waiting
    stack.faults.unblock("rawPredict")
    messages = [out.get(timeout=300) for _ in range(PROCESSES + SHARDS)]
    for p in procs:
        p.join(timeout=60)
    assert sorted(kind for kind, _ in messages) == ["first"] * SHARDS + ["ok"] * PROCESSES, messages
    return [report for kind, report in messages if kind == "ok"]


def _claim(stack: LocalStack, bucket: str, run_id: str, shard: int) -> Any:
    return stack.storage_client().bucket(bucket).blob(f"jobs/{run_id}.s{shard}/online.claim.json")


def test_processes_past_the_deadline_answer_each_key_online_once(
    stack: LocalStack, bucket: str
) -> None:
    """4 processes advance one run past its deadline at once: one online call per key."""
    endpoints = _workers.endpoints(stack, bucket)
    _late_run(stack, endpoints, "rush")
    reports = _advance_together(stack, endpoints, "rush")
    assert stack.calls()["rawPredict"] == len(KEYS)
    for report in reports:
        assert Counter(report["keys"]) == Counter(KEYS)  # every key, each exactly once


def test_processes_racing_for_a_stale_claim_take_it_over_once(
    stack: LocalStack, bucket: str
) -> None:
    """A crashed claimer's expired claims, 4 processes: one takes each over, one call per key."""
    endpoints = _workers.endpoints(stack, bucket)
    _late_run(stack, endpoints, "stale")
    expired = (datetime.now(UTC) - timedelta(minutes=10)).isoformat()
    crashed = {"format": "vertexbatch-online-claim/1", "owner": "crashed/1/0", "expires": expired}
    for shard in range(SHARDS):
        _claim(stack, bucket, "stale", shard).upload_from_string(json.dumps(crashed))
    reports = _advance_together(stack, endpoints, "stale")
    assert stack.calls()["rawPredict"] == len(KEYS)
    for report in reports:
        assert Counter(report["keys"]) == Counter(KEYS)
    for shard in range(SHARDS):
        claim = json.loads(_claim(stack, bucket, "stale", shard).download_as_bytes())
        assert claim["owner"] != "crashed/1/0"


def test_a_step_killed_mid_way_leaves_its_written_answers_to_the_next(
    stack: LocalStack, bucket: str
) -> None:
    """A worker answering 6 keys two at a time is killed while its second group's calls are
    held: its first group is written; the step that takes over calls the other 4 keys only, and
    every key ends with exactly one outcome."""
    run_id = "killed"
    endpoints = _workers.endpoints(stack, bucket)
    stack.faults.hold(display_name=f"{run_id}.s0", state="PENDING")
    requests = [claude_request(f"key-{i}", f"Task {i}", max_tokens=16) for i in range(6)]
    _workers.client(endpoints).run_claude(run_id, CLAUDE, requests)
    stack.reset_calls()
    armed: list[str] = []

    def script(method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        # Runs before the first part's upload is forwarded, so before the next group's calls.
        if method == "POST" and b"online/part-00000.jsonl" in body and not armed:
            armed.append(path)
            stack.faults.block("rawPredict", times=2)
        return None

    with body_gate(stack.storage_endpoint, script) as url:
        gated = {**endpoints, "storage": url}
        ctx = child_processes()
        worker = ctx.Process(target=_fallback_workers.advance_online_once, args=(gated, run_id, 2))
        worker.start()
        try:
            stack.faults.wait_blocked("rawPredict", count=2, timeout=120)
        finally:
            worker.kill()
            worker.join(timeout=60)
    assert worker.exitcode == -signal.SIGKILL
    stack.faults.unblock("rawPredict", drop=True)
    assert stack.calls()["rawPredict"] == 4  # two answered and written, two paid and lost
    gcs = stack.storage_client().bucket(bucket)
    parts = [b.name for b in gcs.list_blobs(prefix=f"jobs/{run_id}.s0/online/")]
    assert parts == [f"jobs/{run_id}.s0/online/part-00000.jsonl"]
    assert not gcs.blob(f"jobs/{run_id}.s0/online.jsonl").exists()
    # The dead worker's claim, as it stands once its expiry has passed (5 minutes on).
    claim = gcs.blob(f"jobs/{run_id}.s0/online.claim.json")
    held = json.loads(claim.download_as_bytes())
    expired = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    claim.upload_from_string(json.dumps({**held, "expires": expired}))
    stack.reset_calls()
    run = _workers.client(endpoints).open_run(run_id)
    summary = run.advance(deadline=datetime.now(UTC), fallback="online", online_concurrency=2)
    assert summary.done and summary.outcomes == {"ok": 6}
    assert stack.calls()["rawPredict"] == 4
    assert Counter(r.key for r in run.results()) == Counter(f"key-{i}" for i in range(6))
    assert all(r.ok for r in run.results())
    assert run.status().outcomes == {"ok": 6}
