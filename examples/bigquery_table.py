"""Submit a BigQuery table of Claude requests, answers to a dataset; read them two ways.

The table holds one request per row: a key column (STRING) and a request column (JSON, or a
STRING of JSON: Claude's Messages parameters). It is submitted under an id, the job writes its
answers to a table of its own in the dataset, and once the job ends they are read through
``client.results`` (each key once, correlated and classified) and by SQL on that output table.
Running it again with the same id adopts the job instead of creating another.

Usage: ``python examples/bigquery_table.py --id ID [--project P] [--dataset D] [--table T]``
(defaults: GOOGLE_CLOUD_PROJECT, DATASET and TABLE; the client from ``Client.from_env``: on
Google Cloud, VERTEXBATCH_BUCKET and application default credentials).

Install: ``pip install '.[bigquery]'`` in a clone (no package index serves vertexbatch).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery

import vertexbatch as vb

# The output table's rows per stop reason and status ("" on a row with a response).
SQL = """
SELECT JSON_VALUE(response, '$.stop_reason') AS stop_reason, status, COUNT(*) AS row_count
FROM `{table}`
GROUP BY stop_reason, status
ORDER BY row_count DESC, stop_reason
"""


def sql_client(project: str) -> bigquery.Client:
    """A BigQuery client for the SQL: application default credentials on Google Cloud; on a
    local BigQuery (BIGQUERY_EMULATOR_HOST, which google-cloud-bigquery reads) anonymous."""
    if os.environ.get("BIGQUERY_EMULATOR_HOST"):
        return bigquery.Client(project=project, credentials=AnonymousCredentials())
    return bigquery.Client(project=project)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--id", required=True, help="the submission id")
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT"))
    parser.add_argument("--dataset", default=os.environ.get("DATASET"))
    parser.add_argument("--table", default=os.environ.get("TABLE"))
    parser.add_argument("--model", default="claude-sonnet-4-5")
    parser.add_argument("--key-column", default="custom_id")
    parser.add_argument("--request-column", default="request")
    args = parser.parse_args(argv)
    for name in ("project", "dataset", "table"):
        if not getattr(args, name):
            parser.error(f"--{name} is required (or set {name.upper()})")
    project = args.project
    dataset = f"bq://{project}.{args.dataset}"  # the job names its own table here
    source = vb.BigQuerySource(
        f"{dataset}.{args.table}",
        key_column=args.key_column,
        request_column=args.request_column,
    )

    with vb.Client.from_env() as client:
        job = client.submit_claude(args.id, args.model, source, dest=dataset)
        print("job:", job.name)
        status = client.wait(job, floor=1)
        print("state:", status.state)
        print("output:", status.output_table)  # the table the job wrote
        for result in client.results(job):
            print("result:", result.key, result.outcome)

    table = status.output_table.removeprefix("bq://")
    bq = sql_client(project)
    try:
        for row in bq.query(SQL.format(table=table)).result():
            print("sql:", row["stop_reason"] or "-", repr(row["status"] or ""), row["row_count"])
    finally:
        bq.close()  # type: ignore[no-untyped-call]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
