"""One task of a Cloud Run job: its share of a BigQuery table staged into one run to a dataset.

Every task of the job runs this file. ``vb.Task.from_env()`` says which task it is; the table
itself is the requests, and the task reads only its share of the rows (by a stable hash of the
key), at the one snapshot time the run's first reader recorded. A retried task reads the same
share at the same snapshot and adopts what it staged. The jobs are created once every task has
registered; each writes a table of its own in the dataset.
"""

import os

import vertexbatch as vb

MODEL = "claude-sonnet-4-5"
project, dataset = os.environ["GOOGLE_CLOUD_PROJECT"], os.environ["DATASET"]
table = vb.BigQuerySource(f"bq://{project}.{dataset}.{os.environ['TABLE']}")
task = vb.Task.from_env()  # CLOUD_RUN_TASK_INDEX, CLOUD_RUN_TASK_COUNT, CLOUD_RUN_TASK_ATTEMPT

with vb.Client.from_env() as client:
    run = client.run_claude(
        os.environ["RUN_ID"],
        MODEL,
        table,
        shard_size=5,
        task=task,
        dest=f"bq://{project}.{dataset}",
    )
    if task is not None:
        print(f"{task} reads the rows where {vb.table_share(table, task)}")
    waiting = run.status().waiting
    print("waiting for tasks:", list(waiting) if waiting else "none")
