"""How a sink's output table is read: the columns each lane's read session selects, the rows
read again whole, and a table of many pages.

Every read goes through the real Storage Read client, on a gRPC channel whose interceptor
records what the client sent and got (each session's selected fields and the columns the stack
answered with, each ReadRows message's rows): the wire, never a patched reader.
"""

from __future__ import annotations

import io
import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pyarrow as pa
import pytest
from google.cloud import bigquery, bigquery_storage_v1
from google.cloud.bigquery_storage_v1.services.big_query_read.transports import (
    BigQueryReadGrpcTransport,
)

import vertexbatch as vb
from tests.bigquery.conftest import client_reading_with
from tests.helpers import CLAUDE, GEMINI, claude_request
from vertexbatch._bigquery.dest import parse_dest
from vertexbatch._bigquery.read import READ_COLUMNS, BigQueryReader
from vertexbatch.emulator import JobOptions, LocalStack
from vertexbatch.emulator._bq_pages import PAGE_ROWS

OPEN_MODEL = "meta/llama-3.3-70b-instruct-maas"
# What a Claude or open-model table's session selects (``_bigquery.read.ID_COLUMNS``).
BY_ID = ["custom_id", *READ_COLUMNS]
TEXTS = ["hello there", "[[vb:error 429]]", "[[vb:refuse]]", "[[vb:error 400]]"]
OUTCOMES = {"ok", "retryable", "refused", "failed"}


class Recorder(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """What a Storage Read client sent and got: each CreateReadSession's selected fields
    (``selected``) and, when the stack made the session, its Arrow schema's columns
    (``columns``); the rows of each ReadRows message (``pages``, a list a stream)."""

    def __init__(self) -> None:
        self.selected: list[list[str]] = []
        self.columns: list[list[str]] = []
        self.pages: list[list[int]] = []

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        outcome = continuation(details, request)
        if details.method.endswith("/CreateReadSession"):
            self.selected.append(list(request.read_session.read_options.selected_fields))
            if outcome.exception() is None:
                schema = outcome.result().arrow_schema.serialized_schema
                self.columns.append(pa.ipc.read_schema(pa.py_buffer(schema)).names)
        return outcome

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        call = continuation(details, request)
        if not details.method.endswith("/ReadRows"):
            return call
        self.pages.append([])
        return _Counted(call, self.pages[-1])


class _Counted:
    """A ReadRows call, each message's ``row_count`` noted as it is read."""

    def __init__(self, call: Any, rows: list[int]) -> None:
        self._call = call
        self._rows = rows

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> Any:
        response = next(self._call)
        self._rows.append(response.row_count)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)


def recorded_client(stack: LocalStack) -> tuple[bigquery_storage_v1.BigQueryReadClient, Recorder]:
    """A Storage Read client on the stack's endpoint whose calls a ``Recorder`` notes."""
    recorder = Recorder()
    channel = grpc.intercept_channel(
        grpc.insecure_channel(
            stack.bigquery_grpc_target,
            options=[("grpc.max_receive_message_length", -1)],
        ),
        recorder,
    )
    transport = BigQueryReadGrpcTransport(channel=channel)
    return bigquery_storage_v1.BigQueryReadClient(transport=transport), recorder  # type: ignore[no-untyped-call]


@pytest.fixture
def recorded(bq: LocalStack, bq_bucket: str) -> Iterator[tuple[vb.Client, Recorder]]:
    """A client on the BigQuery stack whose Storage Read calls are recorded."""
    read, recorder = recorded_client(bq)
    with client_reading_with(bq, bq_bucket, read) as client:
        yield client, recorder
    read.transport.close()


def submitted(client: vb.Client, provider: str, id: str, texts: list[str], dest: str) -> vb.Job:
    """``texts`` as requests ``k0``, ``k1``, ... of ``provider``, to ``dest`` ("": to GCS)."""
    keys = [f"k{i}" for i in range(len(texts))]
    sink: Any = {"dest": dest} if dest else {}
    if provider == "anthropic":
        requests: Any = [claude_request(k, t) for k, t in zip(keys, texts, strict=True)]
        return client.submit_claude(id, CLAUDE, requests, **sink)
    if provider == "google":
        requests = [vb.GeminiRequest(k, t) for k, t in zip(keys, texts, strict=True)]
        return client.submit_gemini(id, GEMINI, requests, **sink)
    requests = [
        vb.ChatRequest(k, {"messages": [{"role": "user", "content": t}]})
        for k, t in zip(keys, texts, strict=True)
    ]
    return client.submit_chat(id, OPEN_MODEL, requests, **sink)


def read_all(client: vb.Client, job: vb.Job) -> list[vb.Result]:
    assert client.wait(job, floor=0.01, ceiling=0.05).state == "JOB_STATE_SUCCEEDED"
    return list(client.results(job))


@pytest.mark.parametrize("provider", ["anthropic", "openmaas"])
def test_a_table_with_an_id_column_is_read_by_it_and_the_columns_a_row_is_classified_by(
    recorded: tuple[vb.Client, Recorder], dataset: str, provider: str
) -> None:
    """One session, of ``custom_id``, ``response``, ``status`` and ``processed_time``: the
    echoed request (Claude's ``request``, an open model's ``body``) is never read; the stack
    answers with those columns only, and every key gets its outcome once."""
    client, recorder = recorded
    results = read_all(client, submitted(client, provider, f"ids-{provider}", TEXTS, dataset))
    assert sorted(r.key for r in results) == [f"k{i}" for i in range(len(TEXTS))]
    assert {r.outcome for r in results} == OUTCOMES
    assert recorder.selected == [BY_ID]
    assert recorder.columns == [BY_ID]


def test_a_gemini_table_is_read_whole_its_id_being_in_the_request(
    recorded: tuple[vb.Client, Recorder], dataset: str
) -> None:
    """A Gemini row's key is in its echoed request's labels (a JSON column): its session
    selects every column."""
    client, recorder = recorded
    results = read_all(client, submitted(client, "google", "whole-gemini", TEXTS, dataset))
    assert {r.outcome for r in results} == OUTCOMES
    assert recorder.selected == [[]]
    assert "request" in recorder.columns[0]


def test_rows_no_id_matches_are_read_again_whole_and_matched_by_their_echo(
    bq: LocalStack, recorded: tuple[vb.Client, Recorder], dataset: str
) -> None:
    """Rows written without their ``custom_id`` (``echo_siblings=False``): the first session
    finds no key, a second one reads every column and each row is matched by its echoed
    request, each key once, as a GCS job's rows without ids are."""
    bq.set_job_options(JobOptions(echo_siblings=False))
    client, recorder = recorded
    gcs = submitted(client, "anthropic", "no-ids-gcs", TEXTS, "")
    table = submitted(client, "anthropic", "no-ids-bq", TEXTS, dataset)
    from_gcs = {r.key: r.outcome for r in read_all(client, gcs)}
    from_table = Counter((r.key, r.outcome) for r in read_all(client, table))
    assert set(from_gcs.values()) == OUTCOMES
    assert from_table == Counter(from_gcs.items())
    assert recorder.selected == [BY_ID, []]


def test_a_table_without_a_column_the_lane_reads_is_read_whole(bq: LocalStack) -> None:
    """A session naming a column the table lacks is refused (the stack: NOT_FOUND; BigQuery:
    INVALID_ARGUMENT): the table is read whole, as before there was a selection."""
    bigquery_client = bq.bigquery_client()
    dataset = bigquery.Dataset(f"{bq.project}.cols_{uuid.uuid4().hex[:10]}")
    dataset.location = bq.location
    bigquery_client.create_dataset(dataset)
    table = f"{dataset.project}.{dataset.dataset_id}.t"
    schema = [bigquery.SchemaField(n, "STRING") for n in ("custom_id", "request", "response")]
    row = {"custom_id": "kabc", "request": '{"a": 1}', "response": '{"b": 2}'}
    config = bigquery.LoadJobConfig(schema=schema, source_format="NEWLINE_DELIMITED_JSON")
    data = io.BytesIO(json.dumps(row).encode() + b"\n")
    bigquery_client.load_table_from_file(data, table, job_config=config).result()
    bigquery_client.close()  # type: ignore[no-untyped-call]
    read, recorder = recorded_client(bq)
    reader = BigQueryReader(bq.project, vb.RetryPolicy.no_wait(), lambda close: None, given=read)
    match: Callable[[Any], int | None] = lambda row: 0 if row.get("custom_id") == "kabc" else None  # noqa: E731
    rows = list(reader.rows(parse_dest(f"bq://{table}"), 10_000, "custom_id", match))
    read.transport.close()
    expected = {"custom_id": "kabc", "request": {"a": 1}, "response": {"b": 2}}
    assert rows == [(expected, b"", None)]
    assert recorder.selected == [BY_ID, []]


@pytest.mark.parametrize("provider", ["anthropic", "google"])
def test_a_table_of_many_pages_gives_every_key_once(
    recorded: tuple[vb.Client, Recorder], dataset: str, provider: str
) -> None:
    """5,000 rows: the stack sends each stream in pages of at most ``PAGE_ROWS`` rows, as
    BigQuery bounds its messages, and the reader, a page at a time, gives each key once."""
    client, recorder = recorded
    n = 5_000
    job = submitted(client, provider, f"pages-{provider}", ["hello"] * n, dataset)
    results = read_all(client, job)
    assert Counter(r.key for r in results) == Counter(f"k{i}" for i in range(n))
    assert all(r.outcome == "ok" for r in results)
    pages = [rows for stream in recorder.pages for rows in stream]
    assert sum(pages) == n and max(pages) <= PAGE_ROWS
    assert len(pages) > len(recorder.pages)  # a stream of more than one page
