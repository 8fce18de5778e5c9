"""The online fallback and a cancel that lands late (issue 38): a key goes online only once every
batch attempt of its shard is terminal and its output read; keys the batch answered keep it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, jobs_in, task
from tests.helpers import past as _past
from vertexbatch.emulator import LocalStack

KEYS = 6


def _paid_in_batch(stack: LocalStack, bucket: str) -> int:
    """Rows the test's batch jobs ran (every one is billed), once they have all ended."""
    stack.settle()
    return sum(
        int(job.get("completionStats", {}).get("successfulCount", 0))
        for job in jobs_in(stack, bucket)
    )


def _running_late(client: vb.Client, stack: LocalStack, run_id: str, ends: str) -> Any:
    """A run of one shard whose job ran 2 of its 6 rows and is held RUNNING; a cancel of it
    comes too late: it shows CANCELLING, then ends ``ends`` once released."""
    stack.faults.hold(display_name=f"{run_id}.s0", state="RUNNING", after_rows=2)
    stack.faults.late_cancel(f"{run_id}.s0", ends=ends)  # type: ignore[arg-type]
    run = client.run_claude(run_id, CLAUDE, [task(i) for i in range(KEYS)])
    job = client.find(f"{run_id}.s0")
    assert job is not None
    stack.wait_job(job.name, until=lambda j: bool(j.get("completionStats")))
    stack.reset_calls()
    return run, job


def test_a_cancelling_job_keeps_its_shard_pending_and_live(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Past the deadline a step cancels the running job and, while it is CANCELLING, calls
    nothing online and reports the shard pending with its job live."""
    run, job = _running_late(client, stack, "lc-live", "SUCCEEDED")
    summary = run.advance(deadline=_past(), fallback="online")
    assert stack.calls()["cancel"] == 1
    assert (summary.done, summary.live_jobs) == (False, 1)
    assert summary.outcomes == {"pending": KEYS}
    assert stack.calls()["rawPredict"] == 0
    again = run.advance(deadline=_past(), fallback="online")  # still CANCELLING
    assert (again.done, again.live_jobs, again.outcomes) == (False, 1, {"pending": KEYS})
    assert stack.calls()["rawPredict"] == 0 and stack.calls()["cancel"] == 1
    assert run.status().live_jobs == 1
    stack.faults.release("lc-live.s0")
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"


def test_a_late_cancel_that_succeeds_keeps_every_batch_answer(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The job the fallback cancelled ends SUCCEEDED: every key keeps its batch answer, and no
    key is paid twice (nothing is called online)."""
    run, job = _running_late(client, stack, "lc-ok", "SUCCEEDED")
    run.advance(deadline=_past(), fallback="online")
    stack.faults.release("lc-ok.s0")
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"
    summary = run.advance(deadline=_past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": KEYS} and summary.live_jobs == 0
    assert stack.calls()["rawPredict"] == 0
    assert _paid_in_batch(stack, bucket) == KEYS
    assert sorted(r.key for r in run.results()) == sorted(f"key-{i}" for i in range(KEYS))


def test_a_late_cancel_that_fails_sends_online_only_what_the_batch_left(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The cancelled job ends FAILED with some rows done: only the keys it left unanswered go
    online, so every key is paid exactly once and all are ok."""
    run, job = _running_late(client, stack, "lc-failed", "FAILED")
    run.advance(deadline=_past(), fallback="online")
    stack.faults.release("lc-failed.s0")
    assert stack.wait_job(job.name)["state"] == "JOB_STATE_FAILED"
    batch = _paid_in_batch(stack, bucket)
    assert 0 < batch < KEYS
    summary = run.advance(deadline=_past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": KEYS} and summary.live_jobs == 0
    assert stack.calls()["rawPredict"] == KEYS - batch
    assert sorted(r.key for r in run.results()) == sorted(f"key-{i}" for i in range(KEYS))


def _step(client: vb.Client, run_id: str, entry: str) -> tuple[bool, int, dict[str, int]]:
    """One step past the deadline with the fallback, through ``entry``: done, live, outcomes."""
    if entry == "command":
        from click.testing import CliRunner

        from vertexbatch._command.cli import main

        past = _past().isoformat()
        args = ["run", "advance", run_id, "--deadline", past, "--fallback", "online", "--json"]
        answer = CliRunner().invoke(main, args, catch_exceptions=False)
        out = json.loads(answer.stdout)
        return out["done"], out["live_jobs"], out["outcomes"]
    if entry == "aio":

        async def step() -> vb.RunSummary:
            run = await client.aio.open_run(run_id)
            return await run.advance(deadline=_past(), fallback="online")

        summary = asyncio.run(step())
    else:
        summary = client.open_run(run_id).advance(deadline=_past(), fallback="online")
    return summary.done, summary.live_jobs, dict(summary.outcomes)


@pytest.mark.parametrize("entry", ["aio", "command", "tasked"])
def test_every_entry_point_waits_for_a_late_cancel(
    client: vb.Client, stack: LocalStack, bucket: str, stack_env: str, entry: str
) -> None:
    """client.aio, the command's `run advance` and a run staged by tasks: past the deadline a
    job whose cancel lands late keeps its shard pending and live, and its answers are kept."""
    run_id = f"lc-{entry}"
    shards = [f"{run_id}.s{i}" for i in range(2 if entry == "tasked" else 1)]  # a shard a task
    for name in shards:
        stack.faults.hold(display_name=name, state="RUNNING", after_rows=1)
        stack.faults.late_cancel(name, ends="SUCCEEDED")
    rows = [task(i) for i in range(KEYS)]
    if entry == "tasked":
        for i in range(2):
            share = vb.Task(i, 2)
            client.run_claude(run_id, CLAUDE, share.slice(rows), task=share)
        client.open_run(run_id).advance()  # makes the ledger and creates the shards' jobs
    else:
        client.run_claude(run_id, CLAUDE, rows)
    jobs = [client.find(name) for name in shards]
    for job in jobs:
        assert job is not None
        stack.wait_job(job.name, until=lambda j: bool(j.get("completionStats")))
    stack.reset_calls()
    assert _step(client, run_id, entry) == (False, len(shards), {"pending": KEYS})
    assert stack.calls()["cancel"] == len(shards) and stack.calls()["rawPredict"] == 0
    for name, job in zip(shards, jobs, strict=True):
        assert job is not None
        stack.faults.release(name)
        assert stack.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"
    assert _step(client, run_id, entry) == (True, 0, {"ok": KEYS})
    assert stack.calls()["rawPredict"] == 0
    assert _paid_in_batch(stack, bucket) == KEYS


def test_a_prompt_cancel_lets_the_same_step_answer_online(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A job held PENDING is cancelled, as on Vertex, within a poll: the same step answers its
    keys online, finishes the shard and reports no live job."""
    stack.faults.hold(display_name="lc-prompt.s0", state="PENDING")
    run = client.run_claude("lc-prompt", CLAUDE, [task(i) for i in range(KEYS)])
    stack.reset_calls()
    summary = run.advance(deadline=_past(), fallback="online")
    assert (summary.done, summary.live_jobs, summary.outcomes) == (True, 0, {"ok": KEYS})
    assert stack.calls()["cancel"] == 1 and stack.calls()["rawPredict"] == KEYS
    assert _paid_in_batch(stack, bucket) == 0
