"""aiplatform_v1 (the generated client) against the stack: REST, the http:// endpoint,
anonymous credentials. `stack` and `bucket` are docs/examples/testing/conftest.py's fixtures."""

import json

from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1

from vertexbatch.emulator import LocalStack


def test_raw_aiplatform_v1(stack: LocalStack, bucket: str) -> None:
    jobs = aiplatform_v1.JobServiceClient(
        transport="rest",  # gRPC would open TLS to the plaintext server
        credentials=AnonymousCredentials(),
        client_options={"api_endpoint": stack.vertex_endpoint},  # "http://127.0.0.1:PORT"
    )
    line = {"request": {"contents": [{"role": "user", "parts": [{"text": "Hello."}]}]}}
    blob = stack.storage_client().bucket(bucket).blob("in/requests.jsonl")
    blob.upload_from_string(json.dumps(line) + "\n")
    job = jobs.create_batch_prediction_job(
        parent=f"projects/{stack.project}/locations/{stack.location}",
        batch_prediction_job=aiplatform_v1.BatchPredictionJob(
            display_name="raw-recipe",
            model="publishers/google/models/gemini-2.5-flash",
            input_config=aiplatform_v1.BatchPredictionJob.InputConfig(
                instances_format="jsonl",
                gcs_source=aiplatform_v1.GcsSource(uris=[f"gs://{bucket}/in/requests.jsonl"]),
            ),
            output_config=aiplatform_v1.BatchPredictionJob.OutputConfig(
                predictions_format="jsonl",
                gcs_destination=aiplatform_v1.GcsDestination(
                    output_uri_prefix=f"gs://{bucket}/out"
                ),
            ),
        ),
    )
    stack.wait_job(job.name)  # blocks until terminal, no polling
    done = jobs.get_batch_prediction_job(name=job.name)
    assert done.state == aiplatform_v1.JobState.JOB_STATE_SUCCEEDED
    assert done.completion_stats.successful_count == 1
    jobs.delete_batch_prediction_job(name=job.name).result(timeout=30)  # polls over /ui/
