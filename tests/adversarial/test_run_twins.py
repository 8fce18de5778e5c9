"""A run's steps cancel the twins of its attempts' jobs, and count them live until they end."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import vertexbatch as vb
from tests.helpers import CLAUDE, jobs_in, task
from vertexbatch.emulator import LocalStack


def _twin_of(stack: LocalStack, name: str, labels: dict[str, str] | None = None) -> str:
    """A twin of a job, made the way a submitter that crashed between create and record leaves
    one: a raw create of the same job (its labels too, unless ``labels`` are given)."""
    jobs = stack.jobs_client()
    copy = jobs.get_batch_prediction_job(name=name)
    if labels is not None:
        copy.labels.clear()
        copy.labels.update(labels)
    twin = jobs.create_batch_prediction_job(
        parent=f"projects/{stack.project}/locations/{stack.location}", batch_prediction_job=copy
    )
    return str(twin.name)


def _state(stack: LocalStack, name: str) -> str:
    return next(str(j["state"]) for j in stack.jobs() if j["name"] == name)


def test_advance_cancels_a_twin_and_status_only_counts_it(
    client: vb.Client, stack: LocalStack
) -> None:
    """A twin of a shard's job: status counts it live and cancels nothing; advance cancels it,
    counts it until it ends, and leaves the recorded job running."""
    stack.faults.hold(display_name="tw.s0", state="PENDING")
    run = client.run_claude("tw", CLAUDE, [task(i) for i in range(3)])
    job = client.find("tw.s0")
    assert job is not None
    twin = _twin_of(stack, job.name)
    looked = run.status()
    assert looked.live_jobs == 2 and _state(stack, twin) == "JOB_STATE_PENDING"
    stepped = run.advance()
    assert stepped.live_jobs == 2 and stepped.created == 0  # the twin counts until it ends
    assert stack.wait_job(twin, timeout=10)["state"] == "JOB_STATE_CANCELLED"
    assert _state(stack, job.name) == "JOB_STATE_PENDING"
    assert run.status().live_jobs == 1
    stack.faults.release("tw.s0")
    stack.settle()
    summary = run.advance()
    assert summary.done and summary.outcomes == {"ok": 3} and summary.live_jobs == 0
    assert client.find("tw.s0") == job


def test_a_twin_left_by_a_lost_create_answer_and_list_lag_is_cancelled(
    client: vb.Client, stack: LocalStack
) -> None:
    """The world's way to a twin: the create answer is lost and the job lags in list, so the
    retried create makes a second job, which submit's own listings do not see. A later step
    finds it in the run's listing and cancels it; the recorded job answers every key."""
    stack.faults.hold(display_name="lost.s0", state="PENDING")
    stack.faults.lose_response("create")
    stack.faults.list_lag(client.retry.attempts + 3)
    run = client.run_claude("lost", CLAUDE, [task(i) for i in range(2)])
    jobs = [j["name"] for j in jobs_in(stack, client.bucket) if j["displayName"] == "lost.s0"]
    recorded = client.find("lost.s0")
    assert recorded is not None and len(jobs) == 2
    (twin,) = (name for name in jobs if name != recorded.name)
    assert _state(stack, twin) == "JOB_STATE_PENDING"  # submit could not see it
    for _ in range(client.retry.attempts + 4):  # each step lists the run once
        summary = run.advance()
        if _state(stack, twin) != "JOB_STATE_PENDING":
            break
    assert summary.live_jobs == 2
    assert stack.wait_job(twin, timeout=10)["state"] == "JOB_STATE_CANCELLED"
    stack.faults.release("lost.s0")
    stack.settle()
    assert run.advance().outcomes == {"ok": 2}
    assert _state(stack, recorded.name) == "JOB_STATE_SUCCEEDED"


def test_a_twin_of_a_finished_shard_is_cancelled(client: vb.Client, stack: LocalStack) -> None:
    """A twin that outlives its shard (the shard finished, its twin still queued) is counted
    by status and cancelled by the next step, though the run is done."""
    run = client.run_claude("late-twin", CLAUDE, [task(0)])
    stack.settle()
    assert run.advance().done
    job = client.find("late-twin.s0")
    assert job is not None
    stack.faults.hold(display_name="late-twin.s0", state="PENDING")
    twin = _twin_of(stack, job.name)
    looked = run.status()
    assert looked.done and looked.live_jobs == 1
    assert _state(stack, twin) == "JOB_STATE_PENDING"
    assert run.advance().live_jobs == 1
    assert stack.wait_job(twin, timeout=10)["state"] == "JOB_STATE_CANCELLED"
    looked = run.status()
    assert looked.spend is not None and looked.spend.tiers == {"batch": 1}  # the shard's answer
    assert replace(looked, spend=None) == vb.RunSummary("late-twin", True, 1, {"ok": 1})


def test_a_run_started_before_the_run_label_finds_twins_by_id(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A run of the first ledger format (started by an earlier version: its jobs carry no run
    label) is stepped by looking each attempt up by its id: a twin without the run label is
    cancelled all the same, and the run finishes."""
    stack.faults.hold(display_name="old.s0", state="PENDING")
    client.run_claude("old", CLAUDE, [task(0), task(1)], shard_size=1)
    ledger = stack.storage_client().bucket(bucket).blob("jobs/old/run.json")
    data: dict[str, Any] = json.loads(ledger.download_as_bytes())
    assert data["format"] == "vertexbatch-run/2"
    data["format"] = "vertexbatch-run/1"
    ledger.upload_from_string(json.dumps(data))
    run = client.open_run("old")
    job = client.find("old.s0")
    assert job is not None
    twin = _twin_of(stack, job.name, {"vertexbatch": "1", "vertexbatch_id": "old_s0"})
    assert run.status().live_jobs == 2
    run.advance()
    assert stack.wait_job(twin, timeout=10)["state"] == "JOB_STATE_CANCELLED"
    stack.faults.release("old.s0")
    stack.settle()
    summary = run.advance()
    assert summary.done and summary.outcomes == {"ok": 2}
    assert sorted(r.key for r in run.results() if r.ok) == ["key-0", "key-1"]
