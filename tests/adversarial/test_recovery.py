"""Recovering an id whose record was deleted: the job recorded anew is the one that can answer.

The damaged-record error says to delete ``job.json``; the next submit then records one of the
id's listed jobs. A cancelled, failed or expired twin must never win over a live or succeeded
job, or the recovery cancels the job that holds the answers and every key ends missing.
"""

from __future__ import annotations

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_requests, jobs_in
from vertexbatch.emulator import LocalStack


def _states(stack: LocalStack, bucket: str, display_name: str) -> dict[str, str]:
    return {
        j["name"]: j["state"] for j in jobs_in(stack, bucket) if j["displayName"] == display_name
    }


def test_a_deleted_record_is_rebuilt_on_the_live_job_not_an_earlier_cancelled_twin(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """An earlier cancelled twin and a later live job: find and submit both take the live one."""
    stack.faults.hold(display_name="recover", state="RUNNING")
    rows = claude_requests(2)
    first = client.submit_claude("recover", CLAUDE, rows)
    jobs = stack.jobs_client()
    parent = f"projects/{stack.project}/locations/{stack.location}"
    # A later job of the id (as a lost create leaves), recorded; the earlier one cancelled.
    later = jobs.create_batch_prediction_job(
        parent=parent, batch_prediction_job=jobs.get_batch_prediction_job(name=first.name)
    )
    record = stack.storage_client().bucket(bucket).blob("jobs/recover/job.json")
    record.upload_from_string(f'{{"name": "{later.name}", "id": "recover"}}')
    client.cancel(first)
    assert stack.wait_job(first.name)["state"] == "JOB_STATE_CANCELLED"
    # The documented recovery from a damaged record: delete it.
    record.delete()
    found = client.find("recover")
    assert found is not None and found.name == later.name
    again = client.submit_claude("recover", CLAUDE, rows)
    assert again.name == later.name
    assert _states(stack, bucket, "recover")[later.name] == "JOB_STATE_RUNNING"
    stack.faults.release("recover")
    assert client.wait(again, floor=0.05).state == "JOB_STATE_SUCCEEDED"
    assert [r.outcome for r in client.results(again)] == ["ok", "ok"]


def test_with_only_ended_twins_the_earliest_is_still_recorded(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """No live or succeeded job: the earliest ended one is recorded, as before (nothing made)."""
    stack.faults.hold(display_name="ended", state="RUNNING")
    rows = claude_requests(1)
    first = client.submit_claude("ended", CLAUDE, rows)
    client.cancel(first)
    stack.wait_job(first.name)
    stack.storage_client().bucket(bucket).blob("jobs/ended/job.json").delete()
    assert client.submit_claude("ended", CLAUDE, rows).name == first.name
    assert list(_states(stack, bucket, "ended")) == [first.name]
