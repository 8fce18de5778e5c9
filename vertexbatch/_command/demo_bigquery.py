"""The demo's BigQuery section (``vertexbatch demo --bigquery``): a table in, a dataset out.

A small table of Claude requests (a key column and a request column) is made in the local
stack's BigQuery and submitted under an id with ``BigQuerySource`` and a dataset sink; once the
job ends, its results are read through ``client.results`` and the same output table by SQL with
google-cloud-bigquery; then the same table is submitted again, and the id adopts the job.

google-cloud-bigquery is imported only here, inside the section: the plain demo never needs the
``bigquery-local`` extra (``missing_extra`` says which modules it lacks).
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._bigquery.source import BigQuerySource
from .._client import Client
from .._values import Result
from .demo_data import CLAUDE_MODEL

if TYPE_CHECKING:
    from ..emulator import LocalStack

__all__ = ["BQ_ID", "BQ_KEYS", "EXTRA_LINE", "bigquery_section", "missing_extra"]

BQ_ID = "demo-bq-review"
_DATASET = "vertexbatch_demo"
_TABLE = "review_requests"
# The one line `demo --bigquery` exits 2 with when the extra is not installed.
EXTRA_LINE = (
    "--bigquery needs the local stack's BigQuery, from a checkout of vertexbatch: "
    "pip install '.[cli,bigquery-local]' (or 'WHEEL[cli,bigquery-local]' for a wheel built from it)"
)
# The table's rows: a key and the directive that scripts the local model's outcome (none: ok).
_ROWS = (
    ("bq-review-01", ""),
    ("bq-review-02", "[[vb:refuse]]"),
    ("bq-review-03", ""),
    ("bq-review-04", "[[vb:truncate]]"),
    ("bq-review-05", "[[vb:error 429]]"),
    ("bq-review-06", ""),
)
BQ_KEYS = tuple(key for key, _ in _ROWS)


def missing_extra() -> list[str]:
    """The modules of the ``bigquery-local`` extra that cannot be imported (empty: all there)."""
    from ..emulator._bigquery import missing_modules

    return missing_modules()


def _request(key: str, directive: str) -> dict[str, object]:
    diff = f"--- a/{key}.py\n+++ b/{key}.py\n-    return x\n+    return x or None {directive}"
    return {
        "max_tokens": 256,
        "messages": [{"role": "user", "content": f"Review this diff:\n{diff}"}],
    }


def _make_table(stack: LocalStack) -> str:
    """Create the dataset and its table of requests; return the table's ``bq://`` URI."""
    from google.cloud import bigquery

    bq = stack.bigquery_client()
    try:
        dataset = bigquery.Dataset(f"{stack.project}.{_DATASET}")
        dataset.location = stack.location
        bq.create_dataset(dataset, exists_ok=True)
        schema = [
            bigquery.SchemaField("custom_id", "STRING", mode="REQUIRED"),
            bigquery.SchemaField("request", "JSON"),
        ]
        table = f"{stack.project}.{_DATASET}.{_TABLE}"
        bq.create_table(bigquery.Table(table, schema), exists_ok=True)
        rows = "".join(
            json.dumps({"custom_id": key, "request": _request(key, directive)}) + "\n"
            for key, directive in _ROWS
        )
        config = bigquery.LoadJobConfig(
            schema=schema,
            source_format="NEWLINE_DELIMITED_JSON",
            write_disposition="WRITE_TRUNCATE",
        )
        bq.load_table_from_file(io.BytesIO(rows.encode()), table, job_config=config).result()
    finally:
        bq.close()  # type: ignore[no-untyped-call]
    return f"bq://{table}"


# The SQL the section runs on the output table: the rows per status and stop reason.
_SQL = """
SELECT JSON_VALUE(response, '$.stop_reason') AS stop_reason, status, COUNT(*) AS row_count
FROM `{table}`
GROUP BY stop_reason, status
ORDER BY row_count DESC, stop_reason
"""


def _query(stack: LocalStack, table: str) -> list[tuple[str, str, int]]:
    """Rows per (stop reason, status) of the output table, by SQL with google-cloud-bigquery."""
    bq = stack.bigquery_client()
    try:
        rows = bq.query(_SQL.format(table=table)).result()
        return [(r["stop_reason"] or "", r["status"] or "", int(r["row_count"])) for r in rows]
    finally:
        bq.close()  # type: ignore[no-untyped-call]


def bigquery_section(
    stack: LocalStack,
    client: Client,
    say: Callable[[str], None],
    describe: Callable[[Result], str],
    *,
    interval: float,
) -> None:
    """Submit a table of requests to a dataset sink, read the results twice, submit again."""
    table = _make_table(stack)
    dest = f"bq://{stack.project}.{_DATASET}"
    source = BigQuerySource(table, key_column="custom_id", request_column="request")
    say(f"   table {table}: {len(_ROWS)} rows (custom_id STRING, request JSON)")
    before = stack.calls()["create"]
    job = client.submit_claude(BQ_ID, CLAUDE_MODEL, source, dest=dest)
    verb = "created" if stack.calls()["create"] - before else "adopted"
    say(f"   {BQ_ID:<20} {job.keys} requests read from the table, answers to {dest}")
    say(f"   {'':<20} {verb} {job.name}")
    while not (status := client.status(job)).terminal:
        time.sleep(interval)
    found = client.find(BQ_ID)  # the same job: its dest the dataset given
    assert found is not None
    say(f"   {'':<20} {status.state}, output table {status.output_table}")
    say("")
    say("   Each key's outcome (`client.results(job)`, read through the Storage Read API):")
    for result in sorted(client.results(found), key=lambda r: r.key):
        say(f"     {result.outcome:<10} {describe(result)}")
    say("")
    output = status.output_table.removeprefix("bq://")
    say("   The same table by SQL (google-cloud-bigquery), rows per stop reason and status:")
    say("     SELECT JSON_VALUE(response, '$.stop_reason'), status, COUNT(*) ... GROUP BY 1, 2")
    say(f"     {'stop_reason':<14} {'status':<44} {'rows':>4}")
    for stop_reason, row_status, count in _query(stack, output):
        shown = row_status if len(row_status) <= 44 else row_status[:41] + "..."
        say(f"     {stop_reason or '(none)':<14} {shown or '(empty)':<44} {count:>4}")
    say("")
    say("   Submit the same table under the same id again:")
    before = stack.calls()["create"]
    again = client.submit_claude(BQ_ID, CLAUDE_MODEL, source, dest=dest)
    creates = stack.calls()["create"] - before
    same = "the same job" if again.name == job.name else "A DIFFERENT JOB"
    say(f"   {BQ_ID:<20} {'created' if creates else 'adopted'} {again.name}, {same}")
    say(f"   {'':<20} create calls to Vertex: {creates}")
