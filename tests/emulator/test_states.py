"""The order of a job's states, seen through the real aiplatform_v1 client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.cloud import aiplatform_v1

from vertexbatch.emulator import LocalStack, Timing

State = aiplatform_v1.JobState


def state_of(lab: Any, name: str) -> str:
    return str(State(lab.jobs.get_batch_prediction_job(name=name).state).name)


@pytest.fixture
def queued_lab(lab_factory: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A stack of its own whose jobs queue for a long time at `request.param`."""
    timing = Timing(queued_seconds=60.0, queued_at=request.param)
    with LocalStack(timing=timing) as local:
        local.create_bucket("queued-bucket")
        yield lab_factory(local, "queued-bucket")


def test_by_default_create_answers_pending_then_running(lab: Any) -> None:
    """The reference's live order: create answers PENDING (never QUEUED), then RUNNING."""
    lab.stack.faults.hold(state="RUNNING", after_rows=0)
    job = lab.create()
    assert State(job.state).name == "JOB_STATE_PENDING"
    lab.stack.wait_job(job.name, until=lambda j: j["state"] == "JOB_STATE_RUNNING")
    assert state_of(lab, job.name) == "JOB_STATE_RUNNING"
    lab.stack.faults.release()
    lab.stack.wait_job(job.name)
    assert state_of(lab, job.name) == "JOB_STATE_SUCCEEDED"


@pytest.mark.processes
@pytest.mark.parametrize("queued_lab", ["create"], indirect=True)
def test_queued_at_create_goes_queued_then_pending(queued_lab: Any) -> None:
    """Timing(queued_seconds, queued_at="create"): QUEUED from create, then PENDING, RUNNING."""
    lab = queued_lab
    lab.stack.faults.hold(state="PENDING")
    job = lab.create()
    assert State(job.state).name == "JOB_STATE_QUEUED"
    assert state_of(lab, job.name) == "JOB_STATE_QUEUED"
    lab.jobs.cancel_batch_prediction_job(name=job.name)
    done = lab.stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_CANCELLED" and "startTime" not in done


@pytest.mark.processes
@pytest.mark.parametrize("queued_lab", ["after_pending"], indirect=True)
def test_queued_after_pending_goes_pending_then_queued(queued_lab: Any) -> None:
    """Timing(queued_at="after_pending"): create answers PENDING, then the job shows QUEUED."""
    lab = queued_lab
    lab.stack.faults.hold(state="PENDING")
    job = lab.create()
    assert State(job.state).name == "JOB_STATE_PENDING"
    assert state_of(lab, job.name) == "JOB_STATE_PENDING"
    lab.stack.faults.release()
    lab.stack.wait_job(job.name, until=lambda j: j["state"] == "JOB_STATE_QUEUED")
    assert state_of(lab, job.name) == "JOB_STATE_QUEUED"
    lab.jobs.cancel_batch_prediction_job(name=job.name)
    assert lab.stack.wait_job(job.name)["state"] == "JOB_STATE_CANCELLED"


@pytest.mark.processes
def test_a_short_queue_ends_like_any_job(lab_factory: Any) -> None:
    """A queued job leaves the queue by itself: QUEUED, PENDING, then SUCCEEDED."""
    with LocalStack(timing=Timing(queued_seconds=0.05)) as local:
        local.create_bucket("short-queue")
        lab = lab_factory(local, "short-queue")
        local.faults.hold(state="PENDING")
        job = lab.create()
        assert State(job.state).name == "JOB_STATE_QUEUED"
        local.wait_job(job.name, until=lambda j: j["state"] == "JOB_STATE_PENDING")
        assert state_of(lab, job.name) == "JOB_STATE_PENDING"
        local.faults.release()
        assert local.wait_job(job.name)["state"] == "JOB_STATE_SUCCEEDED"
        assert state_of(lab, job.name) == "JOB_STATE_SUCCEEDED"


def test_timing_refuses_a_bad_queue() -> None:
    with pytest.raises(ValueError, match="queued_at"):
        Timing(queued_at="later")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="queued_seconds"):
        Timing(queued_seconds=-1)
