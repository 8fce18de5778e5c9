"""Fixtures of the BigQuery sink's tests: the session's BigQuery stack, reset around each test,
a fresh bucket and dataset, and a client on them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from google.cloud import bigquery

import vertexbatch as vb
from tests.helpers import bigquery_reset
from vertexbatch._lifecycle import endpoint_clients
from vertexbatch.emulator import LocalStack


@pytest.fixture
def bq(bigquery_local: LocalStack) -> Iterator[LocalStack]:
    """The BigQuery stack, its faults and job options reset around the test."""
    with bigquery_reset(bigquery_local) as stack:
        yield stack


@pytest.fixture
def bq_bucket() -> str:
    return f"bq-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def dataset(bq: LocalStack) -> str:
    """A fresh dataset in the stack's location: its ``bq://PROJECT.DATASET``."""
    client = bq.bigquery_client()
    made = bigquery.Dataset(f"{bq.project}.ds_{uuid.uuid4().hex[:10]}")
    made.location = bq.location
    client.create_dataset(made)
    client.close()  # type: ignore[no-untyped-call]
    return f"bq://{bq.project}.{made.dataset_id}"


@pytest.fixture
def bq_client(bq: LocalStack, bq_bucket: str) -> Iterator[vb.Client]:
    """A client on the BigQuery stack (its Storage Read API wired by ``LocalStack.client``)."""
    with bq.client(bucket=bq_bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait()) as client:
        yield client


@contextmanager
def client_reading_with(
    bq: LocalStack, bucket: str, read: Any, storage: str = ""
) -> Iterator[vb.Client]:
    """A client on the BigQuery stack that reads tables with ``read`` (a test's own Storage Read
    client) and sends its GCS requests to ``storage`` (a gate in front of the stack's) if given."""
    bq.create_bucket(bucket)
    jobs, store, _ = endpoint_clients(
        bq.vertex_endpoint, storage or bq.storage_endpoint, bq.project
    )
    client = vb.Client(
        bq.project, bq.location, bucket, prefix="jobs", jobs=jobs, storage=store,
        retry=vb.RetryPolicy.no_wait(), bigquery_read=read,
    )  # fmt: skip
    try:
        with client:
            yield client
    finally:
        jobs.transport.close()
        store.close()  # type: ignore[no-untyped-call]
