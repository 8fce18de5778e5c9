"""Lost create answers under list lag: each create attempt's job is told from every other one.

Every create attempt carries a nonce label of its own, so a submit recognises the job its own
lost create made when that job shows in the listing, adopts it, or cancels it when another job
is the id's. Ordered with the stack's blocks, never with timing; faults go through the stack.
"""

from __future__ import annotations

import re
import threading

import pytest
from google.api_core import exceptions as api_exceptions

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_requests, jobs_in, raw_job
from vertexbatch.emulator import LocalStack

CANCELLED = ("JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING")


def _jobs(stack: LocalStack, bucket: str, submission_id: str) -> list[dict]:  # type: ignore[type-arg]
    jobs = [j for j in jobs_in(stack, bucket) if j["displayName"] == submission_id]
    return sorted(jobs, key=lambda j: (j["createTime"], j["name"]))


def _live(jobs: list[dict]) -> list[str]:  # type: ignore[type-arg]
    return [j["name"] for j in jobs if j["state"] not in CANCELLED]


def _stage(client: vb.Client, stack: LocalStack, submission_id: str) -> list[vb.ClaudeRequest]:
    """Stage the id's rows with no job (the create is refused 403), and return the rows."""
    requests = claude_requests(2)
    stack.faults.fail("create", status=403)
    with pytest.raises(api_exceptions.Forbidden):
        client.submit_claude(submission_id, CLAUDE, requests)
    return requests


def _crashed_submitters_job(stack: LocalStack, bucket: str, submission_id: str) -> str:
    """The id's job as another submitter makes it, one that dies before recording it."""
    nonce = {"vertexbatch_nonce": "0" * 16}  # another submitter's attempt
    return raw_job(stack, bucket, submission_id, CLAUDE, nonce)


class _Submit:
    """Submit in a thread, so that the test can act while the stack holds one of its calls."""

    def __init__(self, client: vb.Client, submission_id: str, requests: list[vb.ClaudeRequest]):
        self.result: vb.Job | Exception | None = None

        def run() -> None:
            try:
                self.result = client.submit_claude(submission_id, CLAUDE, requests)
            except Exception as exc:  # reported by the test's assertions
                self.result = exc

        self._thread = threading.Thread(target=run)
        self._thread.start()

    def join(self) -> vb.Job | Exception | None:
        self._thread.join(timeout=120)
        assert not self._thread.is_alive()
        return self.result


def test_a_retry_adopts_the_job_its_own_lost_create_made(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Two creates make jobs but lose their answers, and the jobs lag in list; another
    submitter's earlier job shows with the first of them: the retry adopts the job its own first
    create made instead of creating a third, and cancels the other two."""
    stack.faults.hold(display_name="own-nonce", state="PENDING")  # twins stay live
    requests = _stage(client, stack, "own-nonce")
    stack.faults.list_lag(lists=1)  # every job from now on is hidden from the next list
    stack.faults.block("create")  # our first create, held before it takes effect
    submit = _Submit(client, "own-nonce", requests)
    stack.faults.wait_blocked("create")
    other = _crashed_submitters_job(stack, bucket, "own-nonce")  # earlier than any of ours
    stack.faults.lose_response("create", times=2)  # our first two creates make jobs, answer 503
    stack.faults.unblock("create")
    job = submit.join()
    assert isinstance(job, vb.Job), job
    jobs = _jobs(stack, bucket, "own-nonce")
    assert len(jobs) == 3 and jobs[0]["name"] == other  # ours: two creates, no third
    first, second = jobs[1], jobs[2]
    nonces = [j["labels"]["vertexbatch_nonce"] for j in (first, second)]
    assert all(re.fullmatch("[0-9a-f]{16}", n) for n in nonces) and len(set(nonces)) == 2
    assert job.name == first["name"]
    assert _live(jobs) == [job.name]
    assert client.find("own-nonce") == job


def test_a_lost_create_whose_job_lags_behind_a_crashed_submitters_job_is_cancelled(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """Our create makes a job but loses its answer, and the job lags in list; the retry lists a
    job a crashed submitter made and never recorded, and records it: before returning, submit
    lists until its own job shows and cancels it, so one job of the id is live."""
    stack.faults.hold(display_name="crash-lag", state="PENDING")  # twins stay live
    requests = _stage(client, stack, "crash-lag")
    stack.faults.block("create")  # our create, held before it takes effect
    submit = _Submit(client, "crash-lag", requests)
    stack.faults.wait_blocked("create")
    other = _crashed_submitters_job(stack, bucket, "crash-lag")  # shows at once
    stack.faults.list_lag(lists=4)  # our job: hidden from the next four lists
    stack.faults.lose_response("create")
    stack.faults.unblock("create")
    job = submit.join()
    assert isinstance(job, vb.Job), job
    assert job.name == other
    jobs = _jobs(stack, bucket, "crash-lag")
    assert len(jobs) == 2
    assert _live(jobs) == [other]
    assert client.find("crash-lag") == job
