"""Create-only staging against the real GCS client and server."""

from __future__ import annotations

import re

import pytest

import vertexbatch as vb
from tests.helpers import claude_request, local_client
from vertexbatch._gcs.staging import Staging
from vertexbatch.emulator import LocalStack

SMALL = b'{"a": 1}\n' * 100


def _staging(stack: LocalStack, bucket: str) -> Staging:
    return Staging(stack.storage_client(), bucket, "p", vb.RetryPolicy.no_wait())


def test_small_objects_are_create_only(stack: LocalStack, bucket: str) -> None:
    """A second writer of a small object is told it exists, and the first bytes stay (at every
    size: tests/gcs/test_upload.py)."""
    staging = _staging(stack, bucket)
    assert staging.create("p/obj", SMALL, "application/jsonl")
    assert not staging.create("p/obj", b"other\n", "application/jsonl")
    assert stack.storage_client().bucket(bucket).blob("p/obj").download_as_bytes() == SMALL


def test_large_objects_are_create_only(stack: LocalStack, bucket: str) -> None:
    """A staged input past one request's 8 MiB is create-only too: it is staged in parts, each
    one request, where fake-gcs-server enforces the precondition (it does not on resumable
    uploads, which staging no longer uses). Other rows after a crash before the manifest are
    refused at the first part (created last, after their later parts), and every staged byte
    stays; their later parts, named by their bytes, are left referenced by nothing."""
    client = local_client(stack, bucket)
    stack.faults.hold("large")  # the job writes no output/: the folder holds only what was staged

    def rows(text: str) -> list[vb.ClaudeRequest]:
        return [claude_request(f"k{i}", text * 10_000 + str(i), max_tokens=8) for i in range(480)]

    client.submit_claude("large", "claude-opus-5-5@default", rows("ab"))
    store = stack.storage_client().bucket(bucket)
    for leaf in ("manifest.json", "job.json"):  # a submitter that died before claiming the id
        store.blob(f"jobs/large/{leaf}").delete()
    staged = {b.name: b.md5_hash for b in store.list_blobs(prefix="jobs/large/")}
    assert len([n for n in staged if "/input" in n]) == 2 and "jobs/large/input.jsonl" in staged
    with pytest.raises(vb.InvalidRequestError, match="already claimed for other rows"):
        client.submit_claude("large", "claude-opus-5-5@default", rows("cd"))
    after = {b.name: b.md5_hash for b in store.list_blobs(prefix="jobs/large/")}
    assert {name: after[name] for name in staged} == staged
    left = sorted(name.removeprefix("jobs/large/") for name in set(after) - set(staged))
    assert len(left) == 1 and re.fullmatch(r"input-00001-[0-9a-f]{32}\.jsonl", left[0]), left
