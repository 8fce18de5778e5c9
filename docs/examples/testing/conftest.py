"""One local stack per test session, a fresh bucket and a client per test."""

import uuid
from collections.abc import Iterator

import pytest

import vertexbatch as vb
from vertexbatch.emulator import JobOptions, LocalStack


@pytest.fixture(scope="session")
def local_stack() -> Iterator[LocalStack]:
    """The local Vertex + GCS stack, started once for the session (use `stack` in a test)."""
    with LocalStack() as stack:
        yield stack


def _clean(stack: LocalStack) -> None:
    stack.faults.reset()
    stack.set_job_options(JobOptions())


@pytest.fixture
def stack(local_stack: LocalStack) -> Iterator[LocalStack]:
    """The session's stack, reset for this test; every job has settled when the test is over."""
    _clean(local_stack)
    local_stack.reset_calls()
    yield local_stack
    _clean(local_stack)
    local_stack.settle(timeout=60)


@pytest.fixture
def bucket(stack: LocalStack) -> str:
    """A fresh bucket for this test."""
    name = f"t-{uuid.uuid4().hex[:20]}"
    stack.create_bucket(name)
    return name


@pytest.fixture
def client(stack: LocalStack, bucket: str) -> vb.Client:
    """A vertexbatch client on the stack and this test's bucket, retrying without waiting."""
    return stack.client(bucket=bucket, retry=vb.RetryPolicy.no_wait())
