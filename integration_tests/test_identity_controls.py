"""Job controls in submission identity across real processes: racing submitters with other
controls, a submitter killed between create and record."""

from __future__ import annotations

import queue

from tests.helpers import child_processes, jobs_in
from vertexbatch.emulator import LocalStack

from . import _workers
from ._workers import CANCELLED


def _live(stack: LocalStack, bucket: str, submission_id: str) -> list[dict]:  # type: ignore[type-arg]
    return [
        j
        for j in jobs_in(stack, bucket)
        if j["displayName"] == submission_id and j["state"] not in CANCELLED
    ]


def test_submitters_with_other_controls_race_one_set_wins(stack: LocalStack, bucket: str) -> None:
    """Six processes, three with each team's controls, submit the same id and rows at once: one
    team's submitters all get the one job; the other team's are refused (``field="id"``)."""
    stack.faults.hold(display_name="ctl-race", state="PENDING")
    ctx = child_processes()
    barrier = ctx.Barrier(6)
    out = ctx.Queue()
    endpoints = _workers.endpoints(stack, bucket)
    procs = [
        ctx.Process(
            target=_workers.submit_controlled,
            args=(endpoints, "ctl-race", team, barrier, out),
        )
        for team in ("red", "red", "red", "blue", "blue", "blue")
    ]
    for p in procs:
        p.start()
    answers = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert not [a for a in answers if a[0] == "error"], answers
    names = {value for kind, value in answers if kind == "ok"}
    assert len(names) == 1
    assert sorted(kind for kind, _ in answers) == ["ok"] * 3 + ["refused"] * 3
    assert {value for kind, value in answers if kind == "refused"} == {"id"}
    (live,) = _live(stack, bucket, "ctl-race")
    assert live["name"] in names
    team = live["labels"]["team"]
    assert live["serviceAccount"].startswith(f"{team}@")
    assert live["encryptionSpec"]["kmsKeyName"].endswith(f"/cryptoKeys/{team}")


def test_a_killed_submitters_job_is_recorded_only_with_its_own_controls(
    stack: LocalStack, bucket: str
) -> None:
    """A submitter dies once its create took effect: a submit with other controls is refused and
    leaves the job alone; one with the same controls records that job."""
    stack.faults.hold(display_name="ctl-killed", state="PENDING")
    endpoints = _workers.endpoints(stack, bucket)
    out: queue.Queue[tuple[str, str]] = queue.Queue()
    _workers.kill_while_held(
        stack,
        _workers.submit_controlled,
        (endpoints, "ctl-killed", "red", None, child_processes().Queue()),
        "create",
        "after",
    )
    stack.faults.unblock("create")
    (made,) = _live(stack, bucket, "ctl-killed")
    _workers.submit_controlled(endpoints, "ctl-killed", "blue", None, out)
    assert out.get(timeout=1) == ("refused", "id")
    _workers.submit_controlled(endpoints, "ctl-killed", "red", None, out)
    assert out.get(timeout=1) == ("ok", made["name"])
    assert [j["name"] for j in _live(stack, bucket, "ctl-killed")] == [made["name"]]
