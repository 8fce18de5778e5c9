"""A delete's long-running operation through the real aiplatform_v1 client (REST): the routes
its transport requests (`/ui/…/operations/*`), and a delete that takes time polled to done."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from vertexbatch.emulator import LocalStack, Timing


def finished_job(lab: Any) -> str:
    job = lab.create()
    lab.stack.wait_job(job.name)
    return str(job.name)


def test_get_and_list_operations_through_the_client(lab: Any) -> None:
    """get_operation and list_operations (which the REST transport sends to /ui/) answer the
    delete's operation; it is done at once by default, and the job is gone."""
    name = finished_job(lab)
    lab.stack.reset_calls()
    operation = lab.jobs.delete_batch_prediction_job(name=name)
    assert operation.done() and operation.result() == empty_pb2.Empty()
    got = lab.jobs.get_operation(operations_pb2.GetOperationRequest(name=operation.operation.name))
    assert got.done and got.name == operation.operation.name
    location = operation.operation.name.rsplit("/operations/", 1)[0]
    listed = lab.jobs.list_operations(operations_pb2.ListOperationsRequest(name=location))
    assert operation.operation.name in [op.name for op in listed.operations]
    assert lab.stack.calls()["getOperation"] == 1 and lab.stack.calls()["listOperations"] == 1
    with pytest.raises(gexc.NotFound):
        lab.jobs.get_batch_prediction_job(name=name)
    with pytest.raises(gexc.NotFound):
        lab.jobs.get_operation(operations_pb2.GetOperationRequest(name=f"{location}/operations/1"))


@pytest.mark.processes
def test_a_slow_delete_is_polled_to_done(lab_factory: Any) -> None:
    """With Timing(delete_seconds=...), the delete answers a pending operation; result() polls
    it over /ui/ until done, and wait_operation blocks until then."""
    with LocalStack(timing=Timing(delete_seconds=0.6)) as stack:
        stack.create_bucket("slow-delete")
        lab = lab_factory(stack, "slow-delete")
        operation = lab.jobs.delete_batch_prediction_job(name=finished_job(lab))
        assert not operation.operation.done
        pending = lab.jobs.get_operation(
            operations_pb2.GetOperationRequest(name=operation.operation.name)
        )
        assert not pending.done
        assert operation.result(timeout=30) == empty_pb2.Empty()
        assert stack.calls()["getOperation"] >= 2  # ours, then result()'s polling
        second = lab.jobs.delete_batch_prediction_job(name=finished_job(lab))
        waited = lab.jobs.wait_operation(
            operations_pb2.WaitOperationRequest(name=second.operation.name)
        )
        assert waited.done
    with pytest.raises(ValueError, match="delete_seconds"):
        Timing(delete_seconds=-1)
