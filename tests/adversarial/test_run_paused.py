"""A PAUSED job is live for a run: never finished or resubmitted around, cancelled before its
keys are answered online (it could resume and answer them again, paid twice)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from google.api_core import exceptions as api_exceptions

import vertexbatch as vb
from tests.helpers import CLAUDE, jobs_in, task
from vertexbatch.emulator import LocalStack


def _paused_run(client: vb.Client, stack: LocalStack, run_id: str) -> vb.Job:
    """A one-shard run of four keys whose job answers two, then shows JOB_STATE_PAUSED."""
    stack.faults.hold(display_name=f"{run_id}.s0", state="PAUSED", after_rows=2)
    client.run_claude(run_id, CLAUDE, [task(i) for i in range(4)])
    job = client.find(f"{run_id}.s0")
    assert job is not None
    stack.wait_job(job.name, until=lambda j: j["state"] == "JOB_STATE_PAUSED")
    return job


def test_a_paused_attempt_is_live_not_resubmitted_around(
    client: vb.Client, stack: LocalStack
) -> None:
    """Paused with two keys unanswered: the step waits (one live job, every key pending, no
    .r1); resumed, the job answers every key and the run ends with that one job."""
    job = _paused_run(client, stack, "paused")
    run = client.open_run("paused")
    for summary in (run.status(), run.advance(), run.advance()):
        assert summary.live_jobs == 1 and summary.outcomes == {"pending": 4}
    assert client.find("paused.s0.r1") is None
    stack.faults.release("paused.s0")
    stack.settle()
    summary = run.advance()
    assert summary.done and summary.outcomes == {"ok": 4}
    assert [j["name"] for j in jobs_in(stack, client.bucket)] == [job.name]


def test_a_paused_job_is_cancelled_before_its_keys_are_answered_online(
    client: vb.Client, stack: LocalStack
) -> None:
    """Past the deadline with the fallback, a paused job is cancelled first; only the two keys
    it left unanswered are answered online."""
    job = _paused_run(client, stack, "paused-late")
    run = client.open_run("paused-late")
    stack.reset_calls()
    past = datetime.now(UTC) - timedelta(seconds=1)
    summary = run.advance(deadline=past, fallback="online")
    assert summary.done and summary.outcomes == {"ok": 4}
    assert stack.calls()["cancel"] == 1 and stack.calls()["rawPredict"] == 2
    assert stack.wait_job(job.name, timeout=10)["state"] == "JOB_STATE_CANCELLED"


def test_past_the_deadline_without_fallback_a_paused_shard_is_not_finished(
    client: vb.Client, stack: LocalStack
) -> None:
    """No fallback, deadline past: a paused shard stays pending (it may resume), not exhausted."""
    _paused_run(client, stack, "paused-nofb")
    run = client.open_run("paused-nofb")
    summary = run.advance(deadline=datetime.now(UTC) - timedelta(seconds=1))
    assert not summary.done and summary.outcomes == {"pending": 4} and summary.live_jobs == 1
    stack.faults.release("paused-nofb.s0")
    stack.settle()
    assert run.advance().outcomes == {"ok": 4}


def test_a_refused_cancel_of_a_paused_job_is_raised_not_taken_for_finished(
    client: vb.Client, stack: LocalStack
) -> None:
    """A 400 on cancelling a PAUSED job is no "already finished": the job may resume."""
    stack.faults.hold(display_name="pausedcancel", state="PAUSED", after_rows=1)
    job = client.submit_claude("pausedcancel", CLAUDE, [task(0), task(1)])
    stack.wait_job(job.name, until=lambda j: j["state"] == "JOB_STATE_PAUSED")
    stack.faults.fail("cancel", status=400, times=client.retry.attempts)
    with pytest.raises(api_exceptions.BadRequest):
        client.cancel(job)
    assert client.status(job).state == "JOB_STATE_PAUSED"
