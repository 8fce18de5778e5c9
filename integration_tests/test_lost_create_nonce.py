"""A lost create under list lag, across real processes: the job it made is told by its nonce."""

from __future__ import annotations

from typing import Any

from tests.helpers import child_processes, jobs_in
from vertexbatch.emulator import LocalStack

from . import _workers
from ._workers import CANCELLED


def test_a_lost_create_lagging_in_list_is_cancelled_by_its_own_submitter(
    stack: LocalStack, bucket: str
) -> None:
    """Two processes submit one id. The first's create makes a job but its answer is lost, and
    the job lags in list; its retry adopts the second's job and records it before the second
    can: it lists on until its own job shows and cancels it. Both return the one live job."""
    stack.faults.hold(display_name="nonce", state="PENDING")  # nothing ends on its own
    stack.faults.list_lag(lists=5)  # the first's job: hidden from the next five lists
    stack.faults.lose_response("create")
    stack.faults.block("create", when="after")
    endpoints = _workers.endpoints(stack, bucket)
    ctx = child_processes()
    out: Any = ctx.Queue()

    def start() -> Any:
        process = ctx.Process(target=_workers.submit_and_report, args=(endpoints, "nonce", out))
        process.start()
        return process

    first = start()
    stack.faults.wait_blocked("create")  # the first's job exists; its answer is held
    stack.faults.block("list")  # the first's retry lists only once the second's job exists
    stack.faults.unblock("create")  # the answer is lost (503): the first retries
    stack.faults.wait_blocked("list")
    stack.faults.list_lag(lists=0)  # the second's job shows at once
    stack.faults.block("create", when="after")  # the second, between create and record
    second = start()
    stack.faults.wait_blocked("create")
    stack.faults.unblock("list")  # the first adopts the second's job and records it
    first_answer = out.get(timeout=120)
    stack.faults.unblock("create")  # the second finds the first's record naming its job
    second_answer = out.get(timeout=120)
    for process in (first, second):
        process.join(timeout=60)
    assert first_answer[0] == "ok" and second_answer[0] == "ok", (first_answer, second_answer)
    assert first_answer == second_answer
    name = first_answer[1]
    jobs = [j for j in jobs_in(stack, bucket) if j["displayName"] == "nonce"]
    assert len(jobs) == 2
    assert [j["name"] for j in jobs if j["state"] not in CANCELLED] == [name]
    (lost,) = (j for j in jobs if j["name"] != name)
    assert stack.wait_job(lost["name"])["state"] == "JOB_STATE_CANCELLED"
