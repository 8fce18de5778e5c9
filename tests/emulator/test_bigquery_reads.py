"""The stack's Storage Read API, through the real google-cloud-bigquery-storage client: a read
stream comes in bounded pages, as BigQuery's does, and a session reads only its selected fields.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest
from google.cloud import bigquery
from google.cloud.bigquery_storage_v1 import types

from tests.helpers import one_stream_session
from vertexbatch.emulator import LocalStack
from vertexbatch.emulator._bq_pages import PAGE_BYTES, PAGE_ROWS, page_rows

ROWS = 5_000
SCHEMA = [bigquery.SchemaField("key", "STRING"), bigquery.SchemaField("text", "STRING")]


@pytest.fixture
def table(bq_stack: LocalStack) -> Iterator[str]:
    """A fresh ``project.dataset.t`` of ``ROWS`` rows of about 100 bytes."""
    client = bq_stack.bigquery_client()
    dataset = bigquery.Dataset(f"{bq_stack.project}.reads_{uuid.uuid4().hex[:10]}")
    dataset.location = bq_stack.location
    client.create_dataset(dataset)
    full = f"{dataset.project}.{dataset.dataset_id}.t"
    rows = "".join(json.dumps({"key": f"k{i}", "text": "x" * 100}) + "\n" for i in range(ROWS))
    config = bigquery.LoadJobConfig(schema=SCHEMA, source_format="NEWLINE_DELIMITED_JSON")
    client.load_table_from_file(io.BytesIO(rows.encode()), full, job_config=config).result()
    yield full
    client.delete_dataset(dataset.dataset_id, delete_contents=True)
    client.close()  # type: ignore[no-untyped-call]


def pages_of(stack: LocalStack, table: str, fields: list[str]) -> list[list[str]]:
    """Each page (ReadRowsResponse) of a one-stream session of ``table``'s ``fields`` ([]:
    every column), as its rows' keys; the session's and every page's columns checked."""
    options = types.ReadSession.TableReadOptions(selected_fields=fields)
    read, session = one_stream_session(stack, table, read_options=options)
    columns = fields or ["key", "text"]
    schema = pa.ipc.read_schema(pa.py_buffer(session.arrow_schema.serialized_schema))
    assert schema.names == columns
    pages = []
    for stream in session.streams:
        for page in read.read_rows(stream.name).rows(session).pages:
            batch = page.to_arrow()
            assert batch.schema.names == columns
            pages.append(batch.column("key").to_pylist())
    read.transport.close()
    return pages


def test_a_read_stream_comes_in_pages_of_at_most_1024_rows(
    bq_stack: LocalStack, table: str
) -> None:
    """BigQuery bounds each ReadRowsResponse (1,024 rows, at most about 10 MiB); bqemulator alone
    sent a stream's 5,000 rows as one message."""
    pages = pages_of(bq_stack, table, [])
    assert [len(page) for page in pages] == [1024, 1024, 1024, 1024, 904]
    assert sorted(key for page in pages for key in page) == sorted(f"k{i}" for i in range(ROWS))


def test_a_session_reads_only_its_selected_fields(bq_stack: LocalStack, table: str) -> None:
    """``read_options.selected_fields``: the session's schema and each page hold those columns
    only, as BigQuery's do."""
    pages = pages_of(bq_stack, table, ["key"])
    assert sum(len(page) for page in pages) == ROWS


@pytest.mark.parametrize(
    ("rows", "size", "page"),
    [
        (5_000, 500_000, PAGE_ROWS),  # small rows: the row bound
        (100, 100 * 100_000, PAGE_BYTES // 100_000),  # 100 KB rows: about 10 MiB a page
        (3, 3 * 50 * 1024 * 1024, 1),  # a row past 10 MiB still goes, alone
        (0, 0, PAGE_ROWS),  # an empty stream
    ],
)
def test_a_page_holds_1024_rows_or_about_10_mib(rows: int, size: int, page: int) -> None:
    assert page_rows(rows, size) == page
