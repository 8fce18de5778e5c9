"""Labels, a CMEK key and a service account on a job: part of the id, and on every attempt."""

import os

import vertexbatch as vb

client = vb.Client.from_env()
project, location = os.environ["GOOGLE_CLOUD_PROJECT"], os.environ["GOOGLE_CLOUD_LOCATION"]
controls = {
    "labels": {"team": "search", "cost-center": "cc-42"},  # beside vertexbatch's own four
    "kms_key": f"projects/{project}/locations/{location}/keyRings/batch/cryptoKeys/jobs",
    "service_account": f"batch-jobs@{project}.iam.gserviceaccount.com",
}
params = {"max_tokens": 256, "messages": [{"role": "user", "content": "Review this diff."}]}
requests = [vb.ClaudeRequest("a", params), vb.ClaudeRequest("b", params)]

job = client.submit_claude("controls-1", "claude-sonnet-4-5", requests, **controls)
again = client.submit_claude("controls-1", "claude-sonnet-4-5", requests, **controls)
assert again == job  # the same rows and controls: the same job

try:  # the same rows with other controls are other rows: refused, nothing changed
    client.submit_claude("controls-1", "claude-sonnet-4-5", requests, labels={"team": "ads"})
except vb.InvalidRequestError as exc:
    print("refused:", exc.field)

try:  # checked before any cloud call
    client.submit_claude("controls-2", "claude-sonnet-4-5", requests, labels={"Team": "x"})
except vb.InvalidRequestError as exc:
    print("refused:", exc.field)
print(job.id, client.wait(job, floor=1).state)
client.close()
