"""A run step's Vertex calls and GCS requests do not grow with its shards: one listing of the
run's jobs, a get per job that ended since the previous advance, and the creates and cancels the
step makes; one listing of its shard folders, its progress record, and the records that changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import vertexbatch as vb
from tests.helpers import CLAUDE, recording_storage_client, task
from vertexbatch.emulator import LocalStack


def _steps(client: vb.Client, stack: LocalStack, shards: int) -> list[Counter[str]]:
    """The Vertex calls of each step of a run of ``shards`` one-key shards, four live at once:
    status and advance with its four jobs running, then with them ended, then status again."""
    run_id = f"budget-{shards}"
    for index in range(8):  # the first two rounds of jobs stay PENDING until released
        stack.faults.hold(display_name=f"{run_id}.s{index}", state="PENDING")
    run = client.run_claude(run_id, CLAUDE, [task(i) for i in range(shards)], shard_size=1)

    def calls(step: Callable[[], vb.RunSummary]) -> Counter[str]:
        stack.reset_calls()
        step()
        return stack.calls()

    counted = [calls(run.status), calls(run.advance)]
    for index in range(4):
        stack.faults.release(f"{run_id}.s{index}")
    for index in range(4):
        job = client.find(f"{run_id}.s{index}")
        assert job is not None
        stack.wait_job(job.name)
    counted += [calls(run.status), calls(run.advance), calls(run.status), calls(run.advance)]
    for index in range(4, 8):  # Vertex's quota: four live Claude jobs per project
        stack.faults.release(f"{run_id}.s{index}")
    stack.settle()
    return counted


def test_step_calls_are_the_same_for_10_and_200_shards(
    client: vb.Client, stack: LocalStack
) -> None:
    """status and advance on runs of 10 and 200 shards make the same Vertex calls: a status
    or a step with nothing ended is one list call; once four jobs ended, status adds their four
    gets, and advance those gets and the four creates of the next shards."""
    small = _steps(client, stack, 10)
    large = _steps(client, stack, 200)
    assert small == large
    looked, waited, looked_ended, stepped, looked_again, waited_again = large
    assert looked == waited == looked_again == waited_again == Counter(list=1)
    assert looked_ended == Counter(list=1, get=4)
    assert stepped["get"] == 4 and stepped["create"] == 4 and stepped["cancel"] == 0
    # Each create is a submit of the attempt's id: a list before it, one after recording.
    assert stepped["list"] == 1 + 2 * 4


def test_an_ended_attempt_is_asked_about_once(client: vb.Client, stack: LocalStack) -> None:
    """A shard's first attempt ended with a retryable key; while its second runs, steps read the
    first from its ended record, never from Vertex again."""
    stack.faults.hold(display_name="once.s0.r1", state="PENDING")
    run = client.run_claude("once", CLAUDE, [task(0), task(1, "[[vb:error 503]]")])
    stack.settle()
    stack.reset_calls()
    assert run.advance().created == 1  # one get of the ended attempt, then the resubmission
    assert stack.calls()["get"] == 1
    for step in (run.status, run.advance):
        stack.reset_calls()
        assert step().outcomes == {"pending": 2}
        assert stack.calls() == Counter(list=1)


def _gcs_steps(stack: LocalStack, bucket: str, shards: int) -> list[int]:
    """The GCS requests of each step of a run of ``shards`` one-key shards, four live at once,
    counted by the storage client's own session: status and advance with its four jobs
    running, then once they ended, then again with the next four running."""
    store, seen = recording_storage_client(stack, {})
    client = vb.Client(
        stack.project,
        stack.location,
        bucket,
        prefix="jobs",
        jobs=stack.jobs_client(),
        storage=store,
        retry=vb.RetryPolicy.no_wait(),
    )
    run_id = f"gcs-{shards}"
    for index in range(8):
        stack.faults.hold(display_name=f"{run_id}.s{index}", state="PENDING")
    run = client.run_claude(run_id, CLAUDE, [task(i) for i in range(shards)], shard_size=1)

    def requests(step: Callable[[], vb.RunSummary]) -> int:
        seen.clear()
        step()
        return len(seen)

    counted = [requests(run.status), requests(run.advance), requests(run.status)]
    for index in range(4):
        stack.faults.release(f"{run_id}.s{index}")
    for index in range(4):
        job = client.find(f"{run_id}.s{index}")
        assert job is not None
        stack.wait_job(job.name)
    counted += [requests(run.status), requests(run.advance)]
    counted += [requests(run.status), requests(run.advance), requests(run.status)]
    for index in range(4, 8):
        stack.faults.release(f"{run_id}.s{index}")
    stack.settle()
    return counted


def test_step_gcs_requests_are_the_same_for_10_and_200_shards(
    stack: LocalStack, bucket: str
) -> None:
    """status and advance on runs of 10 and 200 shards make the same GCS requests: one page of
    one listing of the shard folders, one read of the run's progress record, and reads of the
    records that changed since the progress record was written (none, once an advance has
    seen them): a step with nothing new is those two requests, whatever the run's size."""
    small = _gcs_steps(stack, bucket, 10)
    large = _gcs_steps(stack, bucket, 200)
    assert small == large
    looked, waited, looked_again, _, _, looked_next, waited_next, looked_last = large
    assert looked_again == looked_last == 2  # the listing and the progress record: nothing new
    # Four job records written since the previous advance; advance also rewrites the progress
    # record (a read of it, conditional on its generation, and the write).
    assert (looked, waited) == (2 + 4, 2 + 4 + 2)
    # Four more job records, and the four shards' done records: their attempts are not read.
    assert (looked_next, waited_next) == (2 + 8, 2 + 8 + 2)
