"""Fixtures of the whole suite (tests/ and integration_tests/): one local stack per session.

Each test gets the stack with its faults, job options and call counts reset, and a fresh bucket;
afterwards its faults are reset again (releasing held jobs and calls) and every job settles, so
that no job of one test is still running in the next.
"""

from __future__ import annotations

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
    return stack.client(bucket=bucket, prefix="jobs", retry=vb.RetryPolicy.no_wait())


@pytest.fixture
def stack_env(stack: LocalStack, bucket: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point the environment at the stack and this test's bucket; returns the bucket."""
    for name, value in stack.environment(bucket, prefix="jobs").items():
        monkeypatch.setenv(name, value)
    return bucket
