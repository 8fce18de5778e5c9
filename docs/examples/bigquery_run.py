"""A run whose shards write to a BigQuery dataset: a table per attempt's job, results read back.

A later process needs only the run id: the ledger records the dataset.
"""

import os
import time

import vertexbatch as vb

MODEL = "claude-sonnet-4-5"
dataset = f"bq://{os.environ['GOOGLE_CLOUD_PROJECT']}.{os.environ['DATASET']}"
params = {"max_tokens": 256, "messages": [{"role": "user", "content": "Label this ticket."}]}
requests = [vb.ClaudeRequest(f"t{i}", params) for i in range(6)]

with vb.Client.from_env() as client:
    try:  # a run takes a dataset: its attempts of one shard answer the same keys
        client.run_claude("tickets-1", MODEL, requests, dest=f"{dataset}.labels")
    except vb.InvalidRequestError as exc:
        print("refused:", exc.field)
    client.run_claude("tickets-1", MODEL, requests, shard_size=3, dest=dataset)

    run = client.open_run("tickets-1")  # as a scheduled advancer would: no dest given
    pause = 0.2
    while not run.advance().done:
        time.sleep(pause)
        pause = min(pause * 2, 600)  # on Vertex, a step every few minutes is plenty
    print("dest:", run.dest)
    for result in run.results():  # each attempt's table, read through the Storage Read API
        print(result.key, result.outcome)
