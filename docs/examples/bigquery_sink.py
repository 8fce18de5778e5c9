"""Output to a BigQuery dataset: the same requests, the results read back from the table."""

import os

import vertexbatch as vb

client = vb.Client.from_env()
dest = f"bq://{os.environ['GOOGLE_CLOUD_PROJECT']}.{os.environ['DATASET']}"  # a table per job
params = {"max_tokens": 256, "messages": [{"role": "user", "content": "Review this diff."}]}
requests = [vb.ClaudeRequest("a", params), vb.ClaudeRequest("b", params)]

job = client.submit_claude("bq-sink-1", "claude-sonnet-4-5", requests, dest=dest)
try:  # the sink is part of the id: the same rows to GCS are other rows
    client.submit_claude("bq-sink-1", "claude-sonnet-4-5", requests)
except vb.InvalidRequestError as exc:
    print("refused:", exc.field)
status = client.wait(job, floor=1)
assert client.find("bq-sink-1") == job and job.dest == dest  # the sink as given, always
print("table:", status.output_table)  # the table Vertex wrote: bq://PROJECT.DATASET.TABLE
for result in client.results(job):  # read through the Storage Read API, classified as from GCS
    print(result.key, result.outcome)
client.close()
