"""A BigQuery sink is part of an id's identity: recorded in its manifest, matched on adoption."""

from __future__ import annotations

import uuid

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_requests, jobs_named, raw_job
from vertexbatch._staged.manifest import Manifest
from vertexbatch.emulator import LocalStack

CANCELLED = ("JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING")


def test_the_same_id_and_rows_with_another_sink_are_refused(
    bq_client: vb.Client, dataset: str
) -> None:
    """Another dest, or none, under an id claimed with one is refused as other rows are, naming
    both sinks; the same dest again returns the same job (its ``dest`` the dataset given)."""
    rows = claude_requests(3)
    job = bq_client.submit_claude("sink-a", CLAUDE, rows, dest=dataset)
    again = bq_client.submit_claude("sink-a", CLAUDE, rows, dest=dataset)
    assert again == job and again.dest == dataset
    for other in (f"{dataset}.named", None):
        with pytest.raises(vb.InvalidRequestError) as caught:
            bq_client.submit_claude("sink-a", CLAUDE, rows, dest=other)
        assert caught.value.field == "id"
        assert f"rows written to dest {dataset!r}" in str(caught.value)
    bq_client.submit_claude("sink-b", CLAUDE, rows)
    with pytest.raises(vb.InvalidRequestError, match=r"the GCS output prefix, not dest"):
        bq_client.submit_claude("sink-b", CLAUDE, rows, dest=dataset)


def test_the_manifest_records_the_sink_only_when_set() -> None:
    """A manifest with a dest writes and reads it back; one without writes no dest (so manifests
    from before sinks read the same); a damaged dest is refused naming the object."""
    plain = Manifest("anthropic", CLAUDE, 1, 10, "0" * 32)
    assert "dest" not in plain.to_json()
    sunk = Manifest("anthropic", CLAUDE, 1, 10, "0" * 32, dest="bq://my-project.ds.t")
    assert Manifest.from_json(sunk.to_json(), "m") == sunk
    for bad in ("", "gs://b/x", "bq://p.ds", 7):
        with pytest.raises(vb.InvalidRequestError, match="'dest' is not a bq:// sink") as caught:
            Manifest.from_json({**plain.to_json(), "dest": bad}, "gs://b/m.json")
        assert caught.value.field == "staging"


def test_a_listed_job_of_the_id_writing_elsewhere_is_not_adopted(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """A job of the id that reads its input but writes to the GCS prefix is refused for a dest=
    submission (naming dest), never adopted; nothing new is created."""
    rows = claude_requests(2)
    bq.faults.fail("create", status=403)  # stage the rows, no job
    with pytest.raises(Exception):  # noqa: B017 - the refused create's own error
        bq_client.submit_claude("adopt", CLAUDE, rows, dest=dataset)
    raw_job(bq, bq_bucket, "adopt", CLAUDE, {})
    with pytest.raises(vb.InvalidRequestError, match="writes to") as caught:
        bq_client.submit_claude("adopt", CLAUDE, rows, dest=dataset)
    assert caught.value.field == "dest"
    assert len(jobs_named(bq, bq_bucket, "adopt")) == 1


def test_a_lost_create_leaves_one_live_job_writing_to_the_sink(
    bq: LocalStack, bq_client: vb.Client, bq_bucket: str, dataset: str
) -> None:
    """The create's answer is lost (its job made all the same): the retry lists, adopts that job
    and creates no other; the job writes to the sink and its results come from the table."""
    bq.faults.lose_response("create")
    job = bq_client.submit_claude("lost", CLAUDE, claude_requests(3), dest=dataset)
    jobs = jobs_named(bq, bq_bucket, "lost")
    assert [j["name"] for j in jobs if j["state"] not in CANCELLED] == [job.name]
    assert len(jobs) == 1
    assert jobs[0]["outputConfig"]["bigqueryDestination"]["outputUri"] == dataset
    status = bq_client.wait(job, floor=0.01, ceiling=0.05)
    assert status.output_table.startswith(f"{dataset}.predictions_")
    found = bq_client.find("lost")
    assert found == job and found.dest == dataset
    assert sorted(r.outcome for r in bq_client.results(found)) == ["ok"] * 3


def test_a_named_table_is_the_jobs_table(bq_client: vb.Client, dataset: str) -> None:
    """With dest naming a table, Job.dest is that table, and results read it."""
    table = f"{dataset}.t_{uuid.uuid4().hex[:6]}"
    job = bq_client.submit_claude("named", CLAUDE, claude_requests(2), dest=table)
    assert job.dest == table
    bq_client.wait(job, floor=0.01, ceiling=0.05)
    assert [r.outcome for r in bq_client.results(job)] == ["ok", "ok"]
    assert vb.Job.from_dict(job.to_dict()) == job
