"""vertexai.batch_prediction against the stack: it shares aiplatform's configuration, so
`stack.aiplatform_init()` configures it too."""

import json

from vertexbatch.emulator import LocalStack


def test_vertexai_batch_prediction(stack: LocalStack, bucket: str) -> None:
    line = {"request": {"contents": [{"role": "user", "parts": [{"text": "Hello."}]}]}}
    blob = stack.storage_client().bucket(bucket).blob("in/requests.jsonl")
    blob.upload_from_string(json.dumps(line) + "\n")
    with stack.aiplatform_init():
        from vertexai.batch_prediction import BatchPredictionJob

        job = BatchPredictionJob.submit(
            source_model="gemini-2.5-flash",
            input_dataset=f"gs://{bucket}/in/requests.jsonl",
            output_uri_prefix=f"gs://{bucket}/out",
        )
        stack.wait_job(job.resource_name)
        job.refresh()
        assert job.has_succeeded
        assert job.output_location.startswith(f"gs://{bucket}/out/prediction-model-")
