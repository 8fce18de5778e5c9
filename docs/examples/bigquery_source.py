"""Input from a BigQuery table: a key column and a request column, submitted under an id."""

import os

import vertexbatch as vb

client = vb.Client.from_env()
table = f"bq://{os.environ['GOOGLE_CLOUD_PROJECT']}.{os.environ['DATASET']}.prompts"
# prompts: custom_id STRING, request JSON (Claude's Messages parameters), any other columns
source = vb.BigQuerySource(table, key_column="custom_id", request_column="request")

plan = client.plan_claude("bq-source-1", "claude-sonnet-4-5", source)
print("plan:", plan.requests, "requests")
job = client.submit_claude("bq-source-1", "claude-sonnet-4-5", source)
# The id claims the rows read: the same table again adopts the job, another table is refused.
assert client.submit_claude("bq-source-1", "claude-sonnet-4-5", source) == job
client.wait(job, floor=1)
for result in client.results(job):  # correlated to the table's keys
    print(result.key, result.outcome)
client.close()
