"""Google's batch embeddings sample, as python-docs-samples
`genai/batch_prediction/batchpredict_embeddings_with_gcs.py` makes its calls, on the local stack
with only its client pointed there (environment variables): google-genai's `batches.create` of
`text-embedding-005` on the sample's input URI, polled with `batches.get` to a terminal state,
and the older rows (`instance`, `predictions`, `status`) written under the destination; then
the same model and texts through vertexbatch's own client, end to end."""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import local_credentials
from vertexbatch.emulator import LocalStack

SAMPLE_BUCKET = "cloud-samples-data"
SAMPLE_OBJECT = "generative-ai/embeddings/embeddings_input.jsonl"


LINES = [
    {"content": "Give a short description of a machine learning model:"},
    {"content": "Best recipe for banana bread: [[vb:truncate]]"},
]


def _run_the_sample(
    stack: LocalStack, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> list[dict[str, Any]]:
    """The sample's calls on the stack; the rows its job wrote."""
    from google import genai
    from google.genai.types import CreateBatchJobConfig, HttpOptions, JobState

    stack.create_bucket(SAMPLE_BUCKET)
    storage = stack.storage_client()
    storage.bucket(SAMPLE_BUCKET).blob(SAMPLE_OBJECT).upload_from_string(
        "".join(json.dumps(line) + "\n" for line in LINES)
    )
    credentials = local_credentials(tmp_path)
    for name, value in {
        "GOOGLE_GENAI_USE_VERTEXAI": "True",
        "GOOGLE_CLOUD_PROJECT": stack.project,
        "GOOGLE_CLOUD_LOCATION": stack.location,
        "GOOGLE_VERTEX_BASE_URL": stack.vertex_endpoint,
        "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)

    # The sample's calls. Its client is pointed at the stack: the sample's own
    # `genai.Client(http_options=HttpOptions(api_version="v1"))` with the environment alone does
    # not get there (genai reads the base URL before GOOGLE_GENAI_USE_VERTEXAI, and with a base
    # URL it drops the project and location from the path unless they are named:
    # tests/emulator/genai_harness.py), so they are named here; the calls are the sample's.
    output_uri = f"gs://{bucket}/sample-out"
    client = genai.Client(
        vertexai=True,
        project=stack.project,
        location=stack.location,
        http_options=HttpOptions(api_version="v1", base_url=stack.vertex_endpoint),
    )
    job = client.batches.create(
        model="text-embedding-005",
        src=f"gs://{SAMPLE_BUCKET}/{SAMPLE_OBJECT}",
        config=CreateBatchJobConfig(dest=output_uri),
    )
    done = {JobState.JOB_STATE_SUCCEEDED, JobState.JOB_STATE_FAILED, JobState.JOB_STATE_CANCELLED}
    for _ in range(200):
        if job.state in done:
            break
        stack.settle()
        job = client.batches.get(name=job.name)
    assert job.state == JobState.JOB_STATE_SUCCEEDED

    blobs = [
        b for b in storage.list_blobs(bucket, prefix="sample-out/") if b.name.endswith(".jsonl")
    ]
    return [json.loads(line) for b in blobs for line in b.download_as_text().splitlines()]


def test_google_s_embeddings_sample_runs_on_the_stack(
    stack: LocalStack, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _run_the_sample(stack, bucket, tmp_path, monkeypatch)
    by_text = {row["instance"]["content"]: row for row in rows}
    assert set(by_text) == {line["content"] for line in LINES}
    first = by_text[LINES[0]["content"]]
    assert first["status"] == ""
    (prediction,) = first["predictions"]
    assert len(prediction["embeddings"]["values"]) == 768
    assert prediction["embeddings"]["statistics"]["truncated"] is False
    cut = by_text[LINES[1]["content"]]["predictions"][0]["embeddings"]["statistics"]
    assert cut["truncated"] is True


def test_vertexbatch_reads_the_sample_s_model_end_to_end(
    stack: LocalStack, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample's model and texts through vertexbatch's own client: the same lines staged,
    each row found again by its echoed instance, the same vectors the sample's job wrote."""
    rows = _run_the_sample(stack, bucket, tmp_path, monkeypatch)
    client = stack.client(bucket=bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())
    requests = [vb.EmbeddingRequest(f"line-{i}", line["content"]) for i, line in enumerate(LINES)]
    job = client.submit_embeddings("sample-005", "text-embedding-005", requests)
    assert job.provider == "embeddings" and job.model == "text-embedding-005"
    staged_bucket, _, path = job.input_uri.removeprefix("gs://").partition("/")
    staged = stack.storage_client().bucket(staged_bucket).blob(path).download_as_text()
    assert [json.loads(line) for line in staged.splitlines()] == LINES  # the sample's input
    client.wait(job, timeout=60)
    results = {r.key: r for r in client.results(job)}
    assert [results[k].outcome for k in ("line-0", "line-1")] == ["ok", "truncated"]
    for index, line in enumerate(LINES):
        row = next(row for row in rows if row["instance"] == line)
        written = array("f", row["predictions"][0]["embeddings"]["values"])
        assert results[f"line-{index}"].embedding == written
