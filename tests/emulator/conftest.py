"""Fixtures of the local stack's own tests, on the suite's `stack` and `bucket` fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import bigquery_reset
from tests.lab import Lab
from vertexbatch.emulator import LocalStack


@pytest.fixture
def lab(stack: LocalStack, bucket: str) -> Lab:
    """Helpers bound to the session stack and this test's fresh bucket."""
    return Lab(stack, bucket)


@pytest.fixture
def lab_factory() -> type[Lab]:
    """The Lab helper class, for tests that start a LocalStack of their own."""
    return Lab


@pytest.fixture
def bq_stack(bigquery_local: LocalStack) -> Iterator[LocalStack]:
    """The BigQuery stack, its faults and job options reset around the test."""
    with bigquery_reset(bigquery_local) as stack:
        yield stack
