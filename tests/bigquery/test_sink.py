"""A BigQuery sink gives every key the Result a GCS sink gives it, for both providers.

Each provider's requests carry every directive of the local model; the same requests go once to
the id's GCS folder and once to a BigQuery dataset, through the real aiplatform_v1,
google-cloud-storage and Storage Read clients, and each key's Result is compared field by field.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, GEMINI, claude_request
from vertexbatch.emulator import LocalStack

DIRECTIVES = [
    "hello there",
    "[[vb:refuse]]",
    "[[vb:refuse category=cyber detail=some_words]]",
    "[[vb:error 429]]",
    "[[vb:error 400]]",
    "[[vb:error 503 shape=status_object]]",
    "[[vb:error 500 shape=error_envelope]]",
    "[[vb:truncate]]",
    "[[vb:drop]]",
    "[[vb:empty]]",
    "[[vb:no_candidates]]",
    "[[vb:finish NEW_REASON]]",
    "[[vb:think]]",
    "[[vb:cached 100]]",
]


def requests(provider: str) -> list[Any]:
    if provider == "anthropic":
        return [claude_request(f"k{i}", f"Task {i} {d}") for i, d in enumerate(DIRECTIVES)]
    return [vb.GeminiRequest(f"k{i}", f"Task {i} {d}") for i, d in enumerate(DIRECTIVES)]


def submitted(client: vb.Client, provider: str, id: str, **options: Any) -> vb.Job:
    if provider == "anthropic":
        return client.submit_claude(id, CLAUDE, requests(provider), **options)
    return client.submit_gemini(id, GEMINI, requests(provider), **options)


def seen(result: vb.Result) -> tuple[Any, ...]:
    """Everything a caller reads of a Result, its error's fields and message included; of the
    response, all but the moment the local model answered (each job answers at its own)."""
    error = result.error
    fields = (
        None
        if error is None
        else (type(error).__name__, str(error), *(getattr(error, n, None) for n in ERROR_FIELDS))
    )
    response = {k: v for k, v in (result.response or {}).items() if k != "createTime"}
    return (replace(result, error=None), result.outcome, response, fields)


ERROR_FIELDS = ("code", "status", "transient", "key", "job_error_code")


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_a_bigquery_sink_gives_each_key_the_result_a_gcs_sink_gives(
    bq: LocalStack, bq_client: vb.Client, dataset: str, provider: str
) -> None:
    """Every outcome kind (answer, refusal, truncation, retryable and permanent per-line errors,
    unusable answers, missing) is the same from the output table as from predictions.jsonl."""
    gcs = submitted(bq_client, provider, f"gcs-{provider}")
    table = submitted(bq_client, provider, f"bq-{provider}", dest=dataset)
    assert gcs.dest == "" and table.dest.startswith(dataset)
    for job in (gcs, table):
        assert bq_client.wait(job, floor=0.01, ceiling=0.05).state == "JOB_STATE_SUCCEEDED"
    from_gcs = {r.key: seen(r) for r in bq_client.results(gcs)}
    from_table = {r.key: seen(r) for r in bq_client.results(table)}
    assert len(from_gcs) == len(DIRECTIVES)
    assert from_table == from_gcs
    outcomes = {value[1] for value in from_table.values()}
    assert outcomes == {"ok", "refused", "truncated", "retryable", "failed", "missing"}
