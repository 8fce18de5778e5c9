"""A run step's Vertex calls do not grow with its shards: one listing of the run's jobs, a get
per job that ended since the previous advance, and the creates and cancels the step makes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import vertexbatch as vb
from tests.helpers import CLAUDE, task
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
