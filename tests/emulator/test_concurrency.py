"""Concurrent REST calls from several threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any


def test_concurrent_creates_gets_and_lists(lab: Any) -> None:
    """Eight threads creating, getting and listing at once all succeed with unique job ids."""
    uri = lab.upload([lab.gemini_line("x")])
    tag = lab.bucket[-10:]

    def worker(index: int) -> list[str]:
        jobs = lab.stack.jobs_client()  # one client per thread, as callers do
        names = []
        for n in range(10):
            job = lab.create(uris=[uri], labels={"swarm": tag, "worker": f"w{index}"})
            assert jobs.get_batch_prediction_job(name=job.name).name == job.name
            request = {
                "parent": lab.parent,
                "filter": f'labels.worker="w{index}" AND labels.swarm={tag}',
            }
            listed = [j.name for j in jobs.list_batch_prediction_jobs(request=request)]
            assert listed[-1] == job.name and len(listed) == n + 1
            names.append(job.name)
        return names

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(worker, range(8)))
    names = [name for chunk in results for name in chunk]
    assert len(set(names)) == 80
    for name in names:
        assert lab.stack.wait_job(name)["state"] == "JOB_STATE_SUCCEEDED"
    request = {"parent": lab.parent, "filter": f"labels.swarm={tag}", "page_size": 1000}
    listed = [j.name for j in lab.jobs.list_batch_prediction_jobs(request=request)]
    assert sorted(listed) == sorted(names)
    calls = lab.stack.calls()
    assert calls["create"] == 80 and calls["get"] == 80


def test_concurrent_cancels_are_safe(lab: Any) -> None:
    """Cancelling the same held job from many threads: one state change, every call answered."""
    lab.stack.faults.hold(state="PENDING")
    job = lab.create()

    def cancel(_: int) -> str:
        try:
            lab.stack.jobs_client().cancel_batch_prediction_job(name=job.name)
        except Exception as exc:  # a late cancel of a terminal job is a 400
            return type(exc).__name__
        return "ok"

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(cancel, range(16)))
    assert "ok" in outcomes
    assert set(outcomes) <= {"ok", "BadRequest"}
    assert lab.stack.wait_job(job.name)["state"] == "JOB_STATE_CANCELLED"
