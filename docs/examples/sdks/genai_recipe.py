"""google-genai against the stack, through `stack.genai_client()`: `genai.Client(vertexai=True,
project=, location=, credentials=<a token credential>, http_options=HttpOptions(base_url=<the
http:// endpoint>))`. Environment variables alone cannot point genai at the stack, and it
refuses AnonymousCredentials."""

import json

from google.genai import types

from vertexbatch.emulator import LocalStack


def test_google_genai(stack: LocalStack, bucket: str) -> None:
    line = {"request": {"contents": [{"role": "user", "parts": [{"text": "Hello."}]}]}}
    blob = stack.storage_client().bucket(bucket).blob("in/requests.jsonl")
    blob.upload_from_string(json.dumps(line) + "\n")
    client = stack.genai_client()
    batch = client.batches.create(
        model="gemini-2.5-flash",
        src=f"gs://{bucket}/in/requests.jsonl",
        config=types.CreateBatchJobConfig(display_name="genai-recipe", dest=f"gs://{bucket}/out"),
    )
    stack.wait_job(batch.name)
    done = client.batches.get(name=batch.name)
    assert done.state == types.JobState.JOB_STATE_SUCCEEDED
    listed = client.batches.list(config={"filter": 'display_name="genai-recipe"'})
    assert batch.name in [job.name for job in listed]
