"""A BigQuery-sink ``Job`` has one stable meaning: ``dest`` is the sink as given at submit
(dataset or table) after ``submit``, ``find``, a second ``submit`` and a JSON round trip alike,
and ``output_prefix`` is ``""`` (Vertex writes nothing under the GCS folder); the table Vertex
writes is ``Status.output_table``. A Job persisted by an older vertexbatch still loads."""

from __future__ import annotations

import uuid

import vertexbatch as vb
from tests.bigquery.conftest import bq, bq_bucket, bq_client, dataset  # noqa: F401 - fixtures
from tests.helpers import CLAUDE, claude_requests


def test_a_dataset_sink_job_is_the_same_value_after_submit_find_and_submit_again(
    bq_client: vb.Client,  # noqa: F811
    dataset: str,  # noqa: F811
) -> None:
    """``dest`` stays the dataset given (not the table after ``find``), ``output_prefix`` is
    ``""``, and the table Vertex names is on the job's status."""
    rows = claude_requests(2)
    job = bq_client.submit_claude("stable", CLAUDE, rows, dest=dataset)
    assert (job.dest, job.output_prefix) == (dataset, "")
    status = bq_client.wait(job, floor=0.01, ceiling=0.05)
    assert status.output_table.startswith(f"{dataset}.predictions_")
    found = bq_client.find("stable")
    assert found == job
    assert bq_client.submit_claude("stable", CLAUDE, rows, dest=dataset) == job
    assert vb.Job.from_dict(found.to_dict()) == job
    assert [r.outcome for r in bq_client.results(found)] == ["ok", "ok"]


def test_a_table_sink_job_names_the_table_everywhere(
    bq_client: vb.Client,  # noqa: F811
    dataset: str,  # noqa: F811
) -> None:
    """With a table given, ``dest`` and ``Status.output_table`` are that table."""
    table = f"{dataset}.t_{uuid.uuid4().hex[:6]}"
    job = bq_client.submit_claude("stable-t", CLAUDE, claude_requests(2), dest=table)
    assert (job.dest, job.output_prefix) == (table, "")
    assert bq_client.wait(job, floor=0.01, ceiling=0.05).output_table == table
    assert bq_client.find("stable-t") == job


def test_a_job_persisted_before_reads_as_one_of_now(
    bq_client: vb.Client,  # noqa: F811
    dataset: str,  # noqa: F811
) -> None:
    """JSON of a sink job written before (``output_prefix`` the GCS folder's ``output``,
    ``dest`` the table ``find`` named) loads with ``output_prefix`` ``""`` and reads its
    results; a GCS job's JSON is unchanged."""
    job = bq_client.submit_claude("old-json", CLAUDE, claude_requests(2), dest=dataset)
    table = bq_client.wait(job, floor=0.01, ceiling=0.05).output_table
    old = {**job.to_dict(), "output_prefix": f"gs://{bq_client.bucket}/jobs/old-json/output"}
    loaded = vb.Job.from_dict({**old, "dest": table})
    assert (loaded.dest, loaded.output_prefix) == (table, "")
    assert [r.outcome for r in bq_client.results(loaded)] == ["ok", "ok"]
    gcs = {**old, "dest": ""}
    assert vb.Job.from_dict(gcs).output_prefix == old["output_prefix"]
