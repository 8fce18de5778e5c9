"""A Gemini embedding job takes up to 1,000,000 rows (Google's batch embeddings page; the
catalogue's ``job_rows``): one job of more than 200,000 embedding requests is submitted whole
and the local stack's importer takes it (a job it refuses fails with code 3 before RUNNING);
then it is cancelled, its rows being the stack's work, not the question. The client's refusal of
a Claude or Gemini job past 200,000 is integration_tests/test_row_limits.py's."""

from __future__ import annotations

import pytest

import vertexbatch as vb
from vertexbatch._rules import MAX_ROWS
from vertexbatch.emulator import LocalStack

pytestmark = pytest.mark.slow

ROWS = MAX_ROWS + 1
ENDED = ("JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED", "JOB_STATE_CANCELLED")


def test_an_embeddings_job_of_more_than_200000_rows_is_one_job_the_importer_takes(
    client: vb.Client, stack: LocalStack
) -> None:
    requests = (vb.EmbeddingRequest(f"k{i}", "x", dimensions=1) for i in range(ROWS))
    job = client.submit_embeddings("many-embeddings", "gemini-embedding-001", requests)
    assert stack.calls()["create"] == 1
    seen = stack.wait_job(
        job.name, timeout=120, until=lambda j: j["state"] in ("JOB_STATE_RUNNING", *ENDED)
    )
    assert seen["state"] != "JOB_STATE_FAILED", seen.get("error")
    client.cancel(job)
    assert stack.wait_job(job.name, timeout=120)["state"] in ENDED[1:]
