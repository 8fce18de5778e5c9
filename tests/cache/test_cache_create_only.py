"""The answer cache's writes are create-only in one request: a shard's entries, a merge, a
submission's cached answers. At each, an object that exists with other bytes (planted by the
gate just before the write reaches the server, as a racing writer would leave it) keeps them,
and the caller does what it does on an existing object. Past 8 MiB where the test can make it
so (a fill's shard, a merge); the shared write is held at every size by tests/gcs/test_upload.py.
"""

from __future__ import annotations

import pytest

import vertexbatch as vb
from tests.gcs_gate import Planting, body_gate
from tests.helpers import CLAUDE, cache_digest, claude_requests, local_client, object_names, stored
from vertexbatch._cache.store import AnswerCache
from vertexbatch._gcs.staging import Staging
from vertexbatch.emulator import LocalStack

NOW = 2_000_000_000
MIB = 1024 * 1024
OTHER = b"\n" * (9 * MIB)  # another writer's object, past 8 MiB


def _staging(stack: LocalStack, bucket: str, url: str) -> Staging:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage  # type: ignore[attr-defined,unused-ignore]

    client = storage.Client(
        project=stack.project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": url},
    )
    return Staging(client, bucket, "jobs", vb.RetryPolicy.no_wait())


def test_a_fills_shard_past_8_mib_that_exists_is_kept(stack: LocalStack, bucket: str) -> None:
    """One shard's entries (9 MiB of them) in one request; the object there already (other
    bytes) stays, and the fill counts none of that shard's entries written."""
    planting = Planting(stack.storage_client().bucket(bucket), "/ab/", OTHER)
    texts = {cache_digest(i): b'{"t":"' + b"x" * (MIB // 2) + b'"}' for i in range(19)}
    texts[f"cd{0:030x}"] = b'{"t":"y"}'
    with body_gate(stack.storage_endpoint, planting) as url:
        cache = AnswerCache(_staging(stack, bucket, url), "anthropic", CLAUDE, clock=lambda: NOW)
        assert cache.fill_text("w", texts) == 1  # the other shard's one entry
    assert planting.planted is not None and stored(stack, bucket, planting.planted) == OTHER
    assert planting.kinds("/_cache/") == ["multipart"] * 2 and planting.chunks == 0


def test_a_merge_past_8_mib_that_exists_is_kept(stack: LocalStack, bucket: str) -> None:
    """A lookup that merges a shard (nine writers' objects, 9.5 MiB) writes the merge in one
    request; a merge there already with other bytes stays, and the lookup's answers stand."""
    staging = Staging(stack.storage_client(), bucket, "jobs", vb.RetryPolicy.no_wait())
    for w in range(9):
        old = AnswerCache(staging, "anthropic", CLAUDE, clock=lambda w=w: NOW - 1200 + w)
        old.fill_text(f"w{w}", {cache_digest(w): b'{"t":"' + b"x" * (MIB + MIB // 20) + b'"}'})
    planting = Planting(stack.storage_client().bucket(bucket), "/merged/", OTHER)
    with body_gate(stack.storage_endpoint, planting) as url:
        cache = AnswerCache(_staging(stack, bucket, url), "anthropic", CLAUDE, clock=lambda: NOW)
        found = cache.lookup([cache_digest(0), cache_digest(8)], compact=True)
    assert sorted(found) == [cache_digest(0), cache_digest(8)]
    assert planting.planted is not None and stored(stack, bucket, planting.planted) == OTHER
    assert planting.kinds("/merged/") == ["multipart"] and planting.chunks == 0
    merged = [n for n in object_names(stack, bucket, "jobs/_cache/") if "/merged/" in n]
    assert merged == [planting.planted]


def test_a_submissions_cached_answers_that_exist_are_kept(stack: LocalStack, bucket: str) -> None:
    """A ``cache=True`` submission answered from the cache writes its answers in one request;
    an object of that name there already with other bytes stays, and the submission is refused
    as one whose staged answers are damaged, naming the object."""
    requests = claude_requests(3, key="k{i}", text="Item {i}.")
    first = local_client(stack, bucket).submit_claude("first", CLAUDE, requests, cache=True)
    stack.wait_job(first.name)
    assert sum(r.ok for r in local_client(stack, bucket).results(first)) == 3  # fills the cache
    planting = Planting(stack.storage_client().bucket(bucket), "/again/cached-", OTHER)
    with body_gate(stack.storage_endpoint, planting) as url:
        again = local_client(stack, bucket, storage_endpoint=url)
        with pytest.raises(vb.InvalidRequestError, match="gone or damaged") as err:
            again.submit_claude("again", CLAUDE, requests, cache=True)
    assert planting.planted is not None and planting.planted in str(err.value)
    assert stored(stack, bucket, planting.planted) == OTHER
    assert planting.kinds("/again/cached-") == ["multipart"] and planting.chunks == 0
