"""Create-only staging against the real GCS client and server."""

from __future__ import annotations

import pytest

import vertexbatch as vb
from vertexbatch._gcs.staging import Staging
from vertexbatch.emulator import LocalStack

SMALL = b'{"a": 1}\n' * 100
LARGE = b"x" * (9 * 1024 * 1024)  # past the 8 MiB single-request limit: a resumable upload


def _staging(stack: LocalStack, bucket: str) -> Staging:
    return Staging(stack.storage_client(), bucket, "p", vb.RetryPolicy.no_wait())


def test_small_objects_are_create_only(stack: LocalStack, bucket: str) -> None:
    """A second writer of a small object is told it exists, and the first bytes stay."""
    staging = _staging(stack, bucket)
    first = staging.upload("p/obj", "application/jsonl")
    first.write(SMALL)
    assert first.finish()
    second = staging.upload("p/obj", "application/jsonl")
    second.write(b"other\n")
    assert not second.finish()
    assert stack.storage_client().bucket(bucket).blob("p/obj").download_as_bytes() == SMALL


def test_aborted_stream_leaves_no_object(stack: LocalStack, bucket: str) -> None:
    """An abandoned large upload is never finalised: nothing blocks a retry."""
    staging = _staging(stack, bucket)
    upload = staging.upload("p/big", "application/jsonl")
    upload.write(LARGE)
    upload.abort()
    assert not staging.exists("p/big")
    again = staging.upload("p/big", "application/jsonl")
    again.write(LARGE)
    assert again.finish()


@pytest.mark.xfail(
    reason="this fake-gcs-server ignores preconditions on resumable uploads (fixed in 1.55)",
    raises=AssertionError,
    strict=True,  # passing means the server was fixed: drop the mark
)
def test_large_objects_are_create_only(stack: LocalStack, bucket: str) -> None:
    """Resumable uploads honour create-only too (real GCS does; fake-gcs-server 1.54 does not)."""
    staging = _staging(stack, bucket)
    first = staging.upload("p/large", "application/jsonl")
    first.write(LARGE)
    assert first.finish()
    second = staging.upload("p/large", "application/jsonl")
    second.write(LARGE[:-1] + b"y")
    assert not second.finish()
    content = stack.storage_client().bucket(bucket).blob("p/large").download_as_bytes()
    assert content == LARGE
