"""Google's batch embeddings sample, as python-docs-samples
`genai/batch_prediction/batchpredict_embeddings_with_gcs.py` makes its calls, on the local stack:
google-genai's `batches.create` of `text-embedding-005` on the sample's input URI, polled with
`batches.get` to a terminal state, and the older rows (`instance`, `predictions`, `status`)
written under the destination; then the same model and texts through vertexbatch's own client,
end to end.

The sample's own client, `genai.Client(http_options=HttpOptions(api_version="v1"))`, reaches the
stack by environment alone in Vertex's express mode (an API key, no project or location: genai
then calls the top-level `batchPredictionJobs` collection, which the stack serves as Vertex's v1
API defines it). With a project and location in the environment instead, google-genai 2.34.0
sends every call to the bare base URL, which no service can answer: a test names them in code
(docs/local-stack.md, "Point code at it")."""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import local_credentials
from vertexbatch.emulator import LocalStack
from vertexbatch.emulator._create import express_parent
from vertexbatch.emulator._errors import ApiError

SAMPLE_BUCKET = "cloud-samples-data"
SAMPLE_OBJECT = "generative-ai/embeddings/embeddings_input.jsonl"
LINES = [
    {"content": "Give a short description of a machine learning model:"},
    {"content": "Best recipe for banana bread: [[vb:truncate]]"},
]


def _point_at(stack: LocalStack, monkeypatch: pytest.MonkeyPatch, **names: str) -> None:
    """The environment the sample's client reads: Vertex mode, the stack's URL as both base
    URLs (genai reads the Gemini one when Vertex mode comes from the environment), and
    ``names``; no other project, location or key."""
    for name in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    for name, value in {
        "GOOGLE_GENAI_USE_VERTEXAI": "True",
        "GOOGLE_VERTEX_BASE_URL": stack.vertex_endpoint,
        "GOOGLE_GEMINI_BASE_URL": stack.vertex_endpoint,
        **names,
    }.items():
        monkeypatch.setenv(name, value)


def _sample_client(stack: LocalStack) -> Any:
    """The sample's own line: the environment says where and how."""
    from google import genai
    from google.genai.types import HttpOptions

    return genai.Client(http_options=HttpOptions(api_version="v1"))


def _named_client(stack: LocalStack) -> Any:
    """With a project and location: named in code, or genai drops them from every path."""
    from google import genai
    from google.genai.types import HttpOptions

    return genai.Client(
        vertexai=True,
        project=stack.project,
        location=stack.location,
        http_options=HttpOptions(api_version="v1", base_url=stack.vertex_endpoint),
    )


@pytest.mark.parametrize(
    ("environment", "make_client"),
    [
        ({"GOOGLE_API_KEY": "local-stack-key"}, _sample_client),
        ({"GOOGLE_CLOUD_PROJECT": "", "GOOGLE_CLOUD_LOCATION": ""}, _named_client),
    ],
    ids=["environment-alone-express-mode", "project-and-location-in-code"],
)
def test_google_s_embeddings_sample_runs_on_the_stack(
    stack: LocalStack,
    bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
    make_client: Callable[[LocalStack], Any],
) -> None:
    rows = _run_the_sample(stack, bucket, tmp_path, monkeypatch, environment, make_client)
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
    express = {"GOOGLE_API_KEY": "local-stack-key"}
    rows = _run_the_sample(stack, bucket, tmp_path, monkeypatch, express, _sample_client)
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


def _run_the_sample(
    stack: LocalStack,
    bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
    make_client: Callable[[LocalStack], Any],
) -> list[dict[str, Any]]:
    """The sample's calls on the stack, its client made by ``make_client`` in ``environment``;
    the rows its job wrote."""
    from google.genai.types import CreateBatchJobConfig, JobState

    stack.create_bucket(SAMPLE_BUCKET)
    storage = stack.storage_client()
    storage.bucket(SAMPLE_BUCKET).blob(SAMPLE_OBJECT).upload_from_string(
        "".join(json.dumps(line) + "\n" for line in LINES)
    )
    credentials = str(local_credentials(tmp_path))
    named = {"GOOGLE_CLOUD_PROJECT": stack.project, "GOOGLE_CLOUD_LOCATION": stack.location}
    _point_at(
        stack,
        monkeypatch,
        GOOGLE_APPLICATION_CREDENTIALS=credentials,
        **{k: v or named[k] for k, v in environment.items()},
    )

    # The sample's calls.
    client = make_client(stack)
    output_uri = f"gs://{bucket}/sample-out"
    job = client.batches.create(
        model="text-embedding-005",
        src=f"gs://{SAMPLE_BUCKET}/{SAMPLE_OBJECT}",
        config=CreateBatchJobConfig(dest=output_uri),
    )
    assert job.name.startswith(f"projects/{stack.project_number}/locations/{stack.location}/")
    done = {JobState.JOB_STATE_SUCCEEDED, JobState.JOB_STATE_FAILED, JobState.JOB_STATE_CANCELLED}
    for _ in range(200):
        if job.state in done:
            break
        stack.settle()
        job = client.batches.get(name=job.name)
    assert job.state == JobState.JOB_STATE_SUCCEEDED
    assert stack.calls()["create"] == 1

    blobs = [
        b for b in storage.list_blobs(bucket, prefix="sample-out/") if b.name.endswith(".jsonl")
    ]
    return [json.loads(line) for b in blobs for line in b.download_as_text().splitlines()]


def test_a_project_and_location_from_the_environment_alone_reach_no_route(
    stack: LocalStack, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample's client with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION and a base URL:
    google-genai 2.34.0 drops them and posts the create to the bare URL (``POST /``), as to an
    API gateway; the stack, as Vertex would, has no such route. Should genai change, this fails
    and the sample can run from its environment with a project too."""
    from google.genai import errors
    from google.genai.types import CreateBatchJobConfig

    _point_at(
        stack,
        monkeypatch,
        GOOGLE_CLOUD_PROJECT=stack.project,
        GOOGLE_CLOUD_LOCATION=stack.location,
        GOOGLE_APPLICATION_CREDENTIALS=str(local_credentials(tmp_path)),
    )
    client = _sample_client(stack)
    with pytest.raises(errors.ClientError) as caught:
        client.batches.create(
            model="text-embedding-005",
            src=f"gs://{SAMPLE_BUCKET}/{SAMPLE_OBJECT}",
            config=CreateBatchJobConfig(dest=f"gs://{bucket}/sample-out"),
        )
    assert caught.value.code == 404
    assert stack.calls()["create"] == 0


def test_the_express_form_s_parent_names_a_project_and_location_or_is_refused() -> None:
    assert express_parent("", "p", "us-central1") == {"project": "p", "location": "us-central1"}
    named = express_parent("projects/q/locations/europe-west4", "p", "us-central1")
    assert named == {"project": "q", "location": "europe-west4"}
    with pytest.raises(ApiError) as caught:
        express_parent("projects/q", "p", "us-central1")
    assert caught.value.code == 400 and "projects/PROJECT/locations/LOCATION" in str(
        caught.value.body()
    )
