"""The real google-genai client (Vertex mode, base_url) against the stack."""

from __future__ import annotations

from typing import Any

import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from google.oauth2.credentials import Credentials

from vertexbatch.emulator import LocalStack


def genai_client(stack: LocalStack, api_version: str = "v1") -> genai.Client:
    return genai.Client(
        vertexai=True,
        project=stack.project,
        location=stack.location,
        credentials=Credentials(token="x"),  # type: ignore[no-untyped-call]
        http_options=types.HttpOptions(base_url=stack.vertex_endpoint, api_version=api_version),
    )


@pytest.mark.parametrize("api_version", ["v1", "v1beta1"])
def test_get_and_list(lab: Any, api_version: str) -> None:
    """batches.get by id or full name, and batches.list with a filter, parse the stack's jobs."""
    client = genai_client(lab.stack, api_version)
    job = lab.create(
        [lab.gemini_line("a", "k0"), lab.gemini_line("[[vb:error 429]]", "k1")],
        labels={"via": lab.bucket[-10:]},
    )
    lab.stack.wait_job(job.name)
    job_id = job.name.rsplit("/", 1)[1]
    got = client.batches.get(name=job_id)
    assert got.state == types.JobState.JOB_STATE_SUCCEEDED and got.done
    assert got.completion_stats is not None
    assert got.completion_stats.successful_count == 1 and got.completion_stats.failed_count == 1
    assert got.output_info is not None and got.output_info.gcs_output_directory
    assert got.create_time is not None and got.end_time is not None
    assert got.model == job.model
    full = client.batches.get(name=job.name)
    assert full.name == got.name
    config = types.ListBatchJobsConfig(filter=f"labels.via={lab.bucket[-10:]}")
    listed = list(client.batches.list(config=config))
    assert [j.name.rsplit("/", 1)[1] for j in listed if j.name] == [job_id]


def test_list_pages(lab: Any) -> None:
    """The genai Pager follows nextPageToken."""
    client = genai_client(lab.stack)
    uri = lab.upload([lab.gemini_line("x")])
    names = [lab.create(uris=[uri], labels={"pager": lab.bucket[-8:]}).name for _ in range(5)]
    pager = client.batches.list(
        config=types.ListBatchJobsConfig(filter=f"labels.pager={lab.bucket[-8:]}", page_size=2)
    )
    assert [j.name.rsplit("/", 1)[1] for j in pager if j.name] == [
        n.rsplit("/", 1)[1] for n in names
    ]
    for name in names:
        lab.stack.wait_job(name)


def test_cancel_and_delete(lab: Any) -> None:
    """batches.cancel (no body) cancels; batches.delete removes a finished job."""
    client = genai_client(lab.stack)
    lab.stack.faults.hold(state="PENDING")
    job = lab.create()
    client.batches.cancel(name=job.name.rsplit("/", 1)[1])
    done = lab.stack.wait_job(job.name)
    assert done["state"] == "JOB_STATE_CANCELLED"
    got = client.batches.get(name=job.name)
    assert got.error is not None and got.error.code == 1 and got.error.message == "CANCELED"
    deleted = client.batches.delete(name=job.name)
    assert deleted.done
    with pytest.raises(genai_errors.ClientError) as info:
        client.batches.get(name=job.name)
    assert info.value.code == 404 and info.value.status == "NOT_FOUND"


def test_errors_map_to_genai_exceptions(lab: Any) -> None:
    """4xx envelopes raise ClientError and 5xx ServerError, with code and status."""
    client = genai_client(lab.stack)
    lab.stack.faults.fail("get", status=503)
    with pytest.raises(genai_errors.ServerError) as info:
        client.batches.get(name="1234567890123456789")
    assert info.value.code == 503 and info.value.status == "UNAVAILABLE"
    with pytest.raises(genai_errors.ClientError):
        client.batches.get(name="1234567890123456789")


def test_failed_job_error_parses(lab: Any) -> None:
    """A FAILED job's error (code 3, message, no details) parses in genai."""
    client = genai_client(lab.stack)
    lab.gcs.bucket(lab.bucket).blob("bad.jsonl").upload_from_string(
        "{oops\n", content_type="application/jsonl"
    )
    job = lab.create(uris=[f"gs://{lab.bucket}/bad.jsonl"])
    lab.stack.wait_job(job.name)
    got = client.batches.get(name=job.name)
    assert got.state == types.JobState.JOB_STATE_FAILED
    assert got.error is not None and got.error.code == 3


def test_online_generate_content(lab: Any) -> None:
    """models.generate_content is answered by the same local model, directives included."""
    client = genai_client(lab.stack)
    response = client.models.generate_content(model="gemini-2.5-flash", contents="hello")
    assert response.text and response.text.startswith("Local model answer")
    with pytest.raises(genai_errors.ClientError) as info:
        client.models.generate_content(model="gemini-2.5-flash", contents="[[vb:error 429]]")
    assert info.value.code == 429
    with pytest.raises(genai_errors.ClientError):
        client.models.generate_content(model="gemma-3", contents="hello")
    assert lab.stack.calls()["generateContent"] == 3


def test_online_claude_raw_predict(lab: Any) -> None:
    """anthropic's Vertex client gets a Message from rawPredict, directives included."""
    from anthropic import AnthropicVertex

    client = AnthropicVertex(
        region=lab.stack.location,
        project_id=lab.stack.project,
        access_token="x",
        base_url=lab.stack.vertex_endpoint + "/v1",
    )
    message = client.messages.create(
        model="claude-opus-5-5",
        max_tokens=50,
        messages=[{"role": "user", "content": "hi [[vb:think tokens=9]]"}],
    )
    assert [block.type for block in message.content] == ["thinking", "text"]
    assert lab.stack.calls()["rawPredict"] == 1
