"""Google's batch embeddings sample, as python-docs-samples
`genai/batch_prediction/batchpredict_embeddings_with_gcs.py` makes its calls, on the local stack
with only its client pointed there (environment variables): google-genai's `batches.create` of
`text-embedding-005` on the sample's input URI, polled with `batches.get` to a terminal state,
and the older rows (`instance`, `predictions`, `status`) written under the destination."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import local_credentials
from vertexbatch.emulator import LocalStack

SAMPLE_BUCKET = "cloud-samples-data"
SAMPLE_OBJECT = "generative-ai/embeddings/embeddings_input.jsonl"


def test_google_s_embeddings_sample_runs_on_the_stack(
    stack: LocalStack, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google import genai
    from google.genai.types import CreateBatchJobConfig, HttpOptions, JobState

    stack.create_bucket(SAMPLE_BUCKET)
    lines = [{"content": "Give a short description of a machine learning model:"}]
    lines.append({"content": "Best recipe for banana bread: [[vb:truncate]]"})
    storage = stack.storage_client()
    storage.bucket(SAMPLE_BUCKET).blob(SAMPLE_OBJECT).upload_from_string(
        "".join(json.dumps(line) + "\n" for line in lines)
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
    rows = [json.loads(line) for b in blobs for line in b.download_as_text().splitlines()]
    by_text = {row["instance"]["content"]: row for row in rows}
    assert set(by_text) == {line["content"] for line in lines}
    first = by_text[lines[0]["content"]]
    assert first["status"] == ""
    (prediction,) = first["predictions"]
    assert len(prediction["embeddings"]["values"]) == 768
    assert prediction["embeddings"]["statistics"]["truncated"] is False
    cut = by_text[lines[1]["content"]]["predictions"][0]["embeddings"]["statistics"]
    assert cut["truncated"] is True
