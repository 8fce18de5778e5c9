"""Start the local stack in this process, run a Claude job on it, and stop it."""

import vertexbatch as vb
from vertexbatch.emulator import LocalStack, Timing

with LocalStack(timing=Timing(row_seconds=0.01)) as stack:  # starts in ~30 ms, stops in ~5 ms
    stack.create_bucket("my-bucket")
    jobs = stack.jobs_client()  # aiplatform_v1.JobServiceClient, REST, anonymous
    gcs = stack.storage_client()  # google.cloud.storage.Client on fake-gcs-server
    client = stack.client(bucket="my-bucket")  # a vertexbatch.Client, prefix "vertexbatch"
    env = stack.environment("my-bucket")  # the variables Client.from_env and the command read

    prompt = {"role": "user", "content": "Hello. [[vb:truncate]]"}  # a directive: cut it short
    request = vb.ClaudeRequest("greeting", {"max_tokens": 64, "messages": [prompt]})
    job = client.submit_claude("local-1", "claude-sonnet-4-5", [request])
    print(stack.wait_job(job.name)["state"])  # blocks until the job is terminal, no sleep loop
    for result in client.results(job):
        print(result.key, result.outcome)
    parent = f"projects/{env['GOOGLE_CLOUD_PROJECT']}/locations/{env['GOOGLE_CLOUD_LOCATION']}"
    print([j.display_name for j in jobs.list_batch_prediction_jobs(parent=parent)])
    print([blob.name for blob in gcs.list_blobs("my-bucket")])
