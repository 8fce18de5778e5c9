"""Runs across tasks with real processes as tasks on the local stack: staged at once, one task
SIGKILLed mid-staging and retried, two attempts of one task at once, a task registering while an
advancer runs. Each ends as one run: one ledger, every key one outcome, no twin job."""

from __future__ import annotations

import os
import queue
import signal
from collections import Counter
from typing import Any

import pytest

import vertexbatch as vb
from tests.gcs_gate import hold_write
from tests.helpers import child_processes, jobs_in, object_names
from tests.helpers import endpoints as endpoints_of
from vertexbatch.emulator import LocalStack

from . import _task_workers as workers
from ._workers import CANCELLED

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _results(out: Any, n: int) -> list[tuple[Any, ...]]:
    got = [out.get(timeout=600) for _ in range(n)]
    errors = [g for g in got if g[0] == "error"]
    assert not errors, errors
    return got


def _kill_at_write(stack: LocalStack, bucket: str, name: str, args: tuple[Any, ...]) -> None:
    """Run ``stage_task(endpoints, *args)`` in a process and SIGKILL it while its write of the
    object whose name ends with ``name`` is held: it dies with everything before written."""
    with hold_write(stack.storage_endpoint, name) as gate:
        endpoints = {**endpoints_of(stack, bucket), "storage": gate.url}
        process = child_processes().Process(target=workers.stage_task, args=(endpoints, *args))
        process.start()
        try:
            assert gate.held.wait(300), f"the task never wrote {name}"
        finally:
            process.kill()
            process.join(timeout=60)
    assert process.exitcode == -signal.SIGKILL


def _finish(
    stack: LocalStack, client: vb.Client, run_id: str, total: int, settle: float = 30.0
) -> vb.RunSummary:
    """Advance until done; check one ledger's worth of jobs, each once, every key one outcome
    (``settle``: the seconds the stack's jobs may take to end, each step)."""
    run = client.open_run(run_id)
    for _ in range(40):
        stack.settle(settle)
        summary = run.advance(max_live_jobs=16)
        if summary.done:
            break
    assert summary.done and summary.keys == total and summary.outcomes == {"ok": total}
    # A twin made by two steps racing to create one attempt is cancelled at once (the identity
    # protocol): no attempt has two jobs that were not cancelled.
    names = Counter(
        j["displayName"] for j in jobs_in(stack, client.bucket) if j["state"] not in CANCELLED
    )
    assert set(names.values()) == {1}, "a twin job"
    assert set(names) == {s.id for s in run.shards}
    keys = Counter(r.key for r in run.results())
    assert len(keys) == total and set(keys.values()) == {1}
    return summary


def _four_tasks_one_killed(
    stack: LocalStack,
    bucket: str,
    client: vb.Client,
    run_id: str,
    total: int,
    size: int,
    settle: float = 30.0,
) -> None:
    """4 tasks of ``total`` requests at once in shards of ``size``; task 2 is SIGKILLed before
    its second shard's input is written and run again as attempt 1, which adopts its first
    shard; the run is one run of ``total``."""
    count = 4
    endpoints = endpoints_of(stack, bucket)
    out = child_processes().Queue()
    others = [
        child_processes().Process(
            target=workers.stage_task,
            args=(endpoints, run_id, total, (i, count, 0), size, None, out),
        )
        for i in (0, 1, 3)
    ]
    for process in others:
        process.start()
    # Task 2's shard 1 is RUN.s6 (1*4 + 2): killed before its input is written.
    held = f"{run_id}.s6/input.jsonl"
    _kill_at_write(stack, bucket, held, (run_id, total, (2, count, 0), size))
    reports = _results(out, 3)
    for process in others:
        process.join(timeout=300)
    assert all(2 in r[3] for r in reports)  # each still waits for the killed task
    assert jobs_in(stack, client.bucket) == []  # no job before every task registered
    waiting = client.open_run(run_id).status()
    assert waiting.waiting == (2,) and waiting.keys == total * 3 // 4
    staged = {name.rpartition("/")[0] for name in object_names(stack, bucket, f"jobs/{run_id}.s")}
    assert f"jobs/{run_id}.s2" in staged  # its first attempt's first shard
    retry = child_processes().Process(
        target=workers.stage_task,
        args=(endpoints, run_id, total, (2, count, 1), size, None, out),
    )
    retry.start()
    (report,) = _results(out, 1)
    retry.join(timeout=300)
    assert report[2] == total and report[3] == []
    shards = total // size
    assert [s.id for s in client.open_run(run_id).shards] == [
        f"{run_id}.s{i}" for i in range(shards)
    ]
    _finish(stack, client, run_id, total, settle)


def test_four_tasks_stage_one_run_one_killed_and_retried(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    """4 tasks x 2,000 requests, 16 shards of 500."""
    _four_tasks_one_killed(stack, bucket, client, "fleet", 8_000, 500)


@pytest.mark.skipif(
    os.environ.get("VERTEXBATCH_BIG_TASKS") != "1",
    reason="opt-in (VERTEXBATCH_BIG_TASKS=1): 400,000 requests take minutes on 2 cores",
)
@pytest.mark.timeout(3600)
def test_four_tasks_stage_400k_requests_one_killed_and_retried(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    """The issue's figure: 4 tasks x 100,000 requests, 8 shards of 50,000."""
    _four_tasks_one_killed(stack, bucket, client, "fleet-400k", 400_000, 50_000, settle=1200)


@pytest.mark.parametrize("step", ["s3/manifest.json", "tasks/t1.keys", "tasks/t1.json"])
def test_a_task_killed_at_any_step_is_finished_by_its_next_attempt(
    stack: LocalStack, bucket: str, client: vb.Client, step: str
) -> None:
    """Task 1 of 2 dies before its second shard's manifest, its keys file or its record is
    written; its next attempt finishes it, and the run is whole."""
    total, size = 40, 10
    run_id = f"kill-{step.replace('/', '-').replace('.', '-')}"[:40]
    endpoints = endpoints_of(stack, bucket)
    held = f"{run_id}.{step}" if step.startswith("s") else f"{run_id}/{step}"
    _kill_at_write(stack, bucket, held, (run_id, total, (1, 2, 0), size))
    out = child_processes().Queue()
    for attempt, index in ((1, 1), (0, 0)):
        process = child_processes().Process(
            target=workers.stage_task,
            args=(endpoints, run_id, total, (index, 2, attempt), size, None, out),
        )
        process.start()
        _results(out, 1)
        process.join(timeout=120)
    _finish(stack, client, run_id, total)


def test_two_attempts_of_one_task_at_once(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    """Two attempts of task 1 stage the same part at the same moment: one registration, no
    twin shard or job."""
    total, size = 600, 100
    # Jobs stay PENDING while the steps race, so that a twin is cancelled before it could run.
    stack.faults.hold(state="PENDING")
    endpoints = endpoints_of(stack, bucket)
    out = child_processes().Queue()
    barrier = child_processes().Barrier(2)
    both = [
        child_processes().Process(
            target=workers.stage_task,
            args=(endpoints, "twice", total, (1, 2, attempt), size, barrier, out),
        )
        for attempt in (0, 1)
    ]
    for process in both:
        process.start()
    reports = _results(out, 2)
    for process in both:
        process.join(timeout=120)
    assert [r[2:] for r in reports] == [(300, [0]), (300, [0])]
    workers.stage_task(endpoints, "twice", total, (0, 2, 0), size, None, out)
    assert out.get(timeout=60)[0] == "ok"
    stack.faults.release()
    _finish(stack, client, "twice", total)


def test_a_task_registers_while_an_advancer_runs(
    stack: LocalStack, bucket: str, client: vb.Client
) -> None:
    """An advancer steps the run while the last task registers: no step creates a job before
    the ledger is made, the ledger is made once, and the run is whole."""
    total, size = 300, 50
    # Jobs stay PENDING while the steps race, so that a twin is cancelled before it could run.
    stack.faults.hold(state="PENDING")
    endpoints = endpoints_of(stack, bucket)
    out = child_processes().Queue()
    workers.stage_task(endpoints, "meanwhile", total, (0, 2, 0), size, None, out)
    assert out.get(timeout=60)[0] == "ok"
    stop = child_processes().Event()
    advancer = child_processes().Process(
        target=workers.advance_until_made, args=(endpoints, "meanwhile", out, stop)
    )
    advancer.start()
    first = out.get(timeout=120)
    assert first == ("step", [1], 0)  # the advancer is stepping a run still waiting
    stager = child_processes().Process(
        target=workers.stage_task,
        args=(endpoints, "meanwhile", total, (1, 2, 0), size, None, out),
    )
    stager.start()
    steps, staged = [first], None
    while True:
        item = out.get(timeout=300)
        if item[0] == "step":
            steps.append(item)
        elif item[0] == "error":
            stop.set()
            pytest.fail(str(item))
        elif len(item) == 4:
            staged = item
        else:
            break
    if staged is None:
        staged = out.get(timeout=300)
    advancer.join(timeout=120)
    stager.join(timeout=120)
    assert staged[0] == "ok" and staged[2] == total
    assert all(created == 0 for _, waiting, created in steps if waiting)
    stack.faults.release()
    _finish(stack, client, "meanwhile", total)
    with pytest.raises(queue.Empty):
        out.get_nowait()
