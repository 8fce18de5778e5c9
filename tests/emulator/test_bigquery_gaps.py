"""Where the stack's BigQuery (bqemulator 1.4.0) differs from BigQuery, pinned as strict xfails.

Each test asserts what BigQuery does; it fails against bqemulator today, so it is a strict
xfail: the day an upgrade fixes a gap, the test passes, the run fails, and docs/local-stack.md's
list of gaps (and any workaround in the stack) is due for an update.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud import bigquery

from tests.helpers import one_stream_session
from vertexbatch.emulator import LocalStack

SCHEMA = [bigquery.SchemaField("key", "STRING", mode="REQUIRED"), bigquery.SchemaField("j", "JSON")]


def gap(reason: str, raises: type[BaseException]) -> pytest.MarkDecorator:
    """A strict xfail that only counts the failure the gap causes (`raises`)."""
    return pytest.mark.xfail(reason=f"bqemulator 1.4.0: {reason}", raises=raises, strict=True)


@pytest.fixture
def table(bq_stack: LocalStack) -> Iterator[str]:
    """A fresh `project.dataset.t` in us-central1 holding two rows."""
    client = bq_stack.bigquery_client()
    dataset = bigquery.Dataset(f"{bq_stack.project}.gaps_{uuid.uuid4().hex[:10]}")
    dataset.location = "us-central1"
    client.create_dataset(dataset)
    table_id = f"{dataset.dataset_id}.t"
    full = f"{bq_stack.project}.{table_id}"
    client.create_table(bigquery.Table(full, SCHEMA))
    rows = b"".join(json.dumps({"key": k, "j": {"a": k}}).encode() + b"\n" for k in ("a", "b"))
    config = bigquery.LoadJobConfig(schema=SCHEMA, source_format="NEWLINE_DELIMITED_JSON")
    client.load_table_from_file(io.BytesIO(rows), full, job_config=config).result()
    yield full
    client.delete_dataset(dataset.dataset_id, delete_contents=True)


@gap(
    "copy with WRITE_EMPTY onto a non-empty table answers 400 BadRequest, not 409 duplicate",
    api_exceptions.BadRequest,
)
def test_copy_write_empty_onto_a_full_table_is_a_conflict(bq_stack: LocalStack, table: str) -> None:
    """BigQuery refuses the copy with a `duplicate` error, which the client raises as Conflict."""
    client = bq_stack.bigquery_client()
    client.copy_table(table, f"{table}_copy").result()
    config = bigquery.CopyJobConfig(write_disposition="WRITE_EMPTY")
    with pytest.raises(api_exceptions.Conflict):
        client.copy_table(table, f"{table}_copy", job_config=config).result()


@gap(
    "a copy with no write disposition appends (its default is WRITE_APPEND, not WRITE_EMPTY)",
    pytest.fail.Exception,
)
def test_copy_defaults_to_write_empty(bq_stack: LocalStack, table: str) -> None:
    """BigQuery's default copy disposition is WRITE_EMPTY: a second copy onto a full table fails."""
    client = bq_stack.bigquery_client()
    client.copy_table(table, f"{table}_copy").result()
    with pytest.raises(api_exceptions.GoogleAPICallError):
        client.copy_table(table, f"{table}_copy").result()


@gap(
    "load with WRITE_EMPTY onto a non-empty table answers 400 BadRequest, not 409",
    api_exceptions.BadRequest,
)
def test_load_write_empty_onto_a_full_table_is_a_conflict(bq_stack: LocalStack, table: str) -> None:
    """BigQuery refuses the load with a `duplicate` error (Conflict)."""
    config = bigquery.LoadJobConfig(
        schema=SCHEMA, source_format="NEWLINE_DELIMITED_JSON", write_disposition="WRITE_EMPTY"
    )
    with pytest.raises(api_exceptions.Conflict):
        bq_stack.bigquery_client().load_table_from_file(
            io.BytesIO(b'{"key": "c"}\n'), table, job_config=config
        ).result()


@gap("a query job's destination is ignored: nothing is written", api_exceptions.NotFound)
def test_query_destination_is_written(bq_stack: LocalStack, table: str) -> None:
    """A query with a destination table writes its result there."""
    client = bq_stack.bigquery_client()
    config = bigquery.QueryJobConfig(destination=f"{table}_q", write_disposition="WRITE_TRUNCATE")
    client.query(f"SELECT key FROM `{table}`", job_config=config).result()
    assert client.get_table(f"{table}_q").num_rows == 2


@gap("tables report no location (None), though their dataset has one", AssertionError)
def test_table_location_is_reported(bq_stack: LocalStack, table: str) -> None:
    """A table reports its dataset's location."""
    assert bq_stack.bigquery_client().get_table(table).location == "us-central1"


@gap(
    "multipart uploads (load_table_from_json, small load_table_from_file) are refused",
    api_exceptions.BadRequest,
)
def test_load_table_from_json(bq_stack: LocalStack, table: str) -> None:
    """load_table_from_json (a multipart upload) loads rows."""
    config = bigquery.LoadJobConfig(schema=SCHEMA)
    client = bq_stack.bigquery_client()
    client.load_table_from_json([{"key": "c"}], table, job_config=config).result()
    assert client.get_table(table).num_rows == 3


@gap("insertAll does not check REQUIRED columns: the row is stored with a NULL", AssertionError)
def test_insert_all_reports_a_missing_required_value(bq_stack: LocalStack, table: str) -> None:
    """A streamed row without a REQUIRED value comes back in the insert errors."""
    errors = bq_stack.bigquery_client().insert_rows_json(table, [{"j": '{"a": 1}'}])
    assert errors != []


@gap(
    "query results cannot be read through the Storage Read API (anonymous table not found)",
    api_exceptions.NotFound,
)
def test_query_results_through_the_storage_api(bq_stack: LocalStack, table: str) -> None:
    """A query's results download through the Storage Read API."""
    job = bq_stack.bigquery_client().query(f"SELECT key FROM `{table}`")
    arrow = job.to_arrow(bqstorage_client=bq_stack.bigquery_read_client())
    assert arrow.num_rows == 2


@gap(
    "a JSON column read through the Storage API lacks the google:sqlType:json extension name",
    AssertionError,
)
def test_storage_read_marks_json_columns(bq_stack: LocalStack, table: str) -> None:
    """Arrow from the Storage Read API names a JSON column's SQL type in its field metadata."""
    client = bq_stack.bigquery_client()
    arrow = client.list_rows(client.get_table(table)).to_arrow(
        bqstorage_client=bq_stack.bigquery_read_client()
    )
    metadata = arrow.schema.field("j").metadata or {}
    assert metadata.get(b"ARROW:extension:name") == b"google:sqlType:json"


@gap("a read session's table_modifiers.snapshot_time is ignored: it reads now", AssertionError)
def test_a_read_session_reads_the_table_at_its_snapshot_time(
    bq_stack: LocalStack, table: str
) -> None:
    """Rows loaded after a session's snapshot time are not in what it reads."""
    from datetime import UTC, datetime

    from google.cloud.bigquery_storage_v1 import types

    at = datetime.now(UTC)
    row = json.dumps({"key": "c", "j": {"a": "c"}}).encode() + b"\n"
    config = bigquery.LoadJobConfig(schema=SCHEMA, source_format="NEWLINE_DELIMITED_JSON")
    client = bq_stack.bigquery_client()
    client.load_table_from_file(io.BytesIO(row), table, job_config=config).result()
    modifiers = types.ReadSession.TableModifiers(snapshot_time=at)
    read, session = one_stream_session(bq_stack, table, table_modifiers=modifiers)
    rows = sum(
        page.num_items
        for s in session.streams
        for page in read.read_rows(s.name).rows(session).pages
    )
    assert rows == 2


@gap(
    "deleting a non-empty dataset without delete_contents answers 404, not 400 resourceInUse",
    api_exceptions.NotFound,
)
def test_delete_non_empty_dataset_is_bad_request(bq_stack: LocalStack, table: str) -> None:
    """BigQuery refuses with 400 resourceInUse."""
    dataset = table.rsplit(".", 1)[0]
    with pytest.raises(api_exceptions.BadRequest):
        bq_stack.bigquery_client().delete_dataset(dataset)
