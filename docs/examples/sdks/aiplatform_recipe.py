"""google.cloud.aiplatform (the high-level SDK) against the stack, through
`stack.aiplatform_init()`: `aiplatform.init(api_transport="rest", api_endpoint=<http://…>,
credentials=AnonymousCredentials(), …)` plus STORAGE_EMULATOR_HOST for `iter_outputs()`, both
restored when the block ends."""

import json

from vertexbatch.emulator import LocalStack


def test_high_level_aiplatform(stack: LocalStack, bucket: str) -> None:
    line = {"request": {"contents": [{"role": "user", "parts": [{"text": "Hello."}]}]}}
    blob = stack.storage_client().bucket(bucket).blob("in/requests.jsonl")
    blob.upload_from_string(json.dumps(line) + "\n")
    with stack.aiplatform_init() as aiplatform:
        job = aiplatform.BatchPredictionJob.create(
            job_display_name="high-level-recipe",
            model_name="publishers/google/models/gemini-2.5-flash",
            gcs_source=f"gs://{bucket}/in/requests.jsonl",
            gcs_destination_prefix=f"gs://{bucket}/out",
            instances_format="jsonl",
            predictions_format="jsonl",
            sync=False,
        )
        job.wait_for_resource_creation()
        # job.wait_for_completion() polls every 5 s and never returns on JOB_STATE_EXPIRED:
        # in a test, block on the stack instead.
        stack.wait_job(job.resource_name)
        assert job.state.name == "JOB_STATE_SUCCEEDED"
        outputs = [blob.name for blob in job.iter_outputs()]
        assert any(name.endswith("predictions.jsonl") for name in outputs)
        found = aiplatform.BatchPredictionJob.list(filter='display_name="high-level-recipe"')
        assert job.resource_name in [j.resource_name for j in found]
