"""Submission identity across real processes: racing submitters, killed submitters."""

from __future__ import annotations

import multiprocessing

from vertexbatch.emulator import LocalStack

from . import _workers

CANCELLED = ("JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING")


def _endpoints(stack: LocalStack, bucket: str) -> dict[str, str]:
    return {
        "vertex": stack.vertex_endpoint,
        "storage": stack.storage_endpoint,
        "project": stack.project,
        "location": stack.location,
        "bucket": bucket,
    }


def _jobs(stack: LocalStack, submission_id: str) -> list[dict]:
    return [j for j in stack.jobs() if j["displayName"] == submission_id]


def test_eight_processes_submit_at_once(stack: LocalStack, bucket: str) -> None:
    """8 processes submit the same id and rows at once: one job name, at most one job left live."""
    stack.faults.hold(display_name="race", state="PENDING")  # twins stay live, as real ones would
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(8)
    out = ctx.Queue()
    procs = [
        ctx.Process(
            target=_workers.submit_after_barrier,
            args=(_endpoints(stack, bucket), "race", barrier, out),
        )
        for _ in range(8)
    ]
    for p in procs:
        p.start()
    answers = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(kind == "ok" for kind, _ in answers), answers
    names = {name for _, name in answers}
    assert len(names) == 1
    jobs = _jobs(stack, "race")
    live = [j["name"] for j in jobs if j["state"] not in CANCELLED]
    assert live == list(names)


def test_submitter_killed_between_create_and_record(stack: LocalStack, bucket: str) -> None:
    """Two submitters die after create: find returns the earliest; the next submit records it."""
    stack.faults.hold(display_name="killed", state="PENDING")
    stack.faults.list_lag(lists=1)  # the second submitter does not see the first one's job
    ctx = multiprocessing.get_context("spawn")
    endpoints = _endpoints(stack, bucket)
    for _ in range(2):
        p = ctx.Process(target=_workers.submit_and_die_before_record, args=(endpoints, "killed"))
        p.start()
        p.join(timeout=120)
        assert p.exitcode == 9
    jobs = sorted(_jobs(stack, "killed"), key=lambda j: (j["createTime"], j["name"]))
    assert len(jobs) == 2 and all(j["state"] not in CANCELLED for j in jobs)
    earliest = jobs[0]["name"]
    client = _workers.client(endpoints)
    assert client.find("killed").name == earliest
    job = client.submit_claude("killed", _workers.MODEL, _workers.requests(5))
    assert job.name == earliest
    assert client.find("killed").name == earliest
    live = [j["name"] for j in _jobs(stack, "killed") if j["state"] not in CANCELLED]
    assert live == [earliest]
