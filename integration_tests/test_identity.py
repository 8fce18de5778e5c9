"""Submission identity across real processes: racing submitters, killed submitters."""

from __future__ import annotations

from tests.helpers import CLAUDE, child_processes, claude_requests, jobs_named
from vertexbatch.emulator import LocalStack

from . import _workers
from ._workers import CANCELLED


def test_eight_processes_submit_at_once(stack: LocalStack, bucket: str) -> None:
    """8 processes submit the same id and rows at once: one job name, at most one job left live."""
    stack.faults.hold(display_name="race", state="PENDING")  # twins stay live, as real ones would
    ctx = child_processes()
    barrier = ctx.Barrier(8)
    out = ctx.Queue()
    procs = [
        ctx.Process(
            target=_workers.submit_after_barrier,
            args=(_workers.endpoints(stack, bucket), "race", barrier, out),
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
    jobs = jobs_named(stack, bucket, "race")
    live = [j["name"] for j in jobs if j["state"] not in CANCELLED]
    assert live == list(names)


def test_racing_submitters_of_a_50_mb_input_give_one_job(stack: LocalStack, bucket: str) -> None:
    """4 processes stage the same 50 MB input (seven parts) under one id at once: every part
    is created once (the rest adopt it), one manifest, one job name, at most one job live."""
    stack.faults.hold(display_name="race-large", state="PENDING")
    ctx = child_processes()
    barrier = ctx.Barrier(4)
    out = ctx.Queue()
    args = (_workers.endpoints(stack, bucket), "race-large", 50, barrier, out)
    procs = [ctx.Process(target=_workers.submit_large_after_barrier, args=args) for _ in range(4)]
    for p in procs:
        p.start()
    answers = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(kind == "ok" for kind, _ in answers), answers
    names = {name for _, name in answers}
    assert len(names) == 1
    (job,) = [j for j in jobs_named(stack, bucket, "race-large") if j["state"] not in CANCELLED]
    assert [job["name"]] == list(names)
    uris = job["inputConfig"]["gcsSource"]["uris"]
    assert len(uris) >= 6 and uris[0].endswith("/race-large/input.jsonl")
    staged = [
        b.name for b in stack.storage_client().list_blobs(bucket, prefix="jobs/race-large/input")
    ]
    assert sorted(f"gs://{bucket}/{name}" for name in staged) == sorted(uris)  # no stray part


def test_submitter_killed_between_create_and_record(stack: LocalStack, bucket: str) -> None:
    """Two submitters killed once create took effect: the next submit records the earliest job."""
    stack.faults.hold(display_name="killed", state="PENDING")
    stack.faults.list_lag(lists=1)  # the second submitter does not see the first one's job
    endpoints = _workers.endpoints(stack, bucket)
    for _ in range(2):
        # Vertex has made the job; the submitter dies before it learns the job's name.
        _workers.kill_while_held(stack, _workers.submit, (endpoints, "killed"), "create", "after")
        stack.faults.unblock("create")
    assert not list(stack.storage_client().list_blobs(bucket, prefix="jobs/killed/job.json"))
    jobs = sorted(jobs_named(stack, bucket, "killed"), key=lambda j: (j["createTime"], j["name"]))
    assert len(jobs) == 2 and all(j["state"] not in CANCELLED for j in jobs)
    earliest = jobs[0]["name"]
    client = _workers.client(endpoints)
    assert client.find("killed").name == earliest
    job = client.submit_claude("killed", CLAUDE, claude_requests(5))
    assert job.name == earliest
    assert client.find("killed").name == earliest
    live = [j["name"] for j in jobs_named(stack, bucket, "killed") if j["state"] not in CANCELLED]
    assert live == [earliest]
