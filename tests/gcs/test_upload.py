"""Create-only writes (``Staging.create``, ``_gcs.upload``): one request at every size.

Every object vertexbatch writes goes through ``Staging.create`` (or ``create_bytes``, the same
request): one multipart upload with ``ifGenerationMatch=0``, which fake-gcs-server enforces (it
does not on resumable uploads, which nothing uses any more). The objects here are past the
storage client's 8 MiB multipart limit, where a resumable upload used to take over.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import random
from datetime import UTC, datetime
from email.message import Message

import pytest
from google.api_core import exceptions as api_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage  # type: ignore[attr-defined,unused-ignore]

import vertexbatch as vb
from tests.gcs_gate import Planting, Spoil, body_gate
from tests.helpers import recording_storage_client, stored
from vertexbatch._gcs.staging import Staging
from vertexbatch.emulator import LocalStack

JSONL = "application/jsonl"
MIB = 1024 * 1024
LARGE = 9 * MIB + 17  # past the 8 MiB the storage client sends in one request


def _lines(size: int, seed: int = 7) -> list[bytes]:
    """Request-like lines of irregular lengths (non-ASCII included) adding up to ``size``."""
    rng = random.Random(seed)
    out: list[bytes] = []
    held = 0
    n = 0
    while held < size:
        line = f'{{"k":"{n}","t":"{"é€" * rng.randint(1, 400)}"}}\n'.encode()[: size - held]
        out.append(line)
        held += len(line)
        n += 1
    return out


def _storage(endpoint: str) -> storage.Client:
    return storage.Client(
        project="p",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": endpoint},
    )


def _staging(endpoint: str, bucket: str) -> Staging:
    return Staging(_storage(endpoint), bucket, "u", vb.RetryPolicy.no_wait())


def _md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


LINES = _lines(LARGE)
DATA = b"".join(LINES)
SHAPES = {
    "bytes": lambda: DATA,
    "bytearray": lambda: bytearray(DATA),
    "view": lambda: memoryview(DATA),
    "rows": lambda: LINES,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_large_object_that_exists_is_not_overwritten(
    stack: LocalStack, bucket: str, shape: str
) -> None:
    """An object of 9 MiB that exists with other bytes (9 MiB too) stays as it is: the write
    says so (``False``; ``create_bytes``: generation 0) in one request, and writes nothing."""
    other = b"o" * LARGE
    stack.storage_client().bucket(bucket).blob("u/big").upload_from_string(other)
    planting = Planting(stack.storage_client().bucket(bucket), "u/never", b"")
    with body_gate(stack.storage_endpoint, planting) as url:
        staging = _staging(url, bucket)
        assert not staging.create("u/big", SHAPES[shape](), JSONL)
        assert staging.create_bytes("u/big", DATA, JSONL, hashlib.md5(DATA).hexdigest()) == 0
    assert stored(stack, bucket, "u/big") == other
    assert planting.uploads == [("multipart", "u/big")] * 2 and planting.chunks == 0


def test_an_object_created_just_before_is_not_overwritten(stack: LocalStack, bucket: str) -> None:
    """A writer that creates the object between the caller's check and its write (planted by
    the gate just before the request reaches the server) keeps it: ``False``, its bytes stay."""
    other = b"p" * LARGE
    planting = Planting(stack.storage_client().bucket(bucket), "u/raced", other)
    with body_gate(stack.storage_endpoint, planting) as url:
        assert not _staging(url, bucket).create("u/raced", LINES, JSONL)
    assert planting.planted == "u/raced" and planting.kinds("u/raced") == ["multipart"]
    assert stored(stack, bucket, "u/raced") == other


@pytest.mark.parametrize("size", [0, 1, 1000, 8 * MIB, LARGE, 3 * LARGE])
@pytest.mark.parametrize("shape", ["rows", "one bytes"])
def test_every_byte_once_in_order(stack: LocalStack, bucket: str, size: int, shape: str) -> None:
    """Whatever the size and shape (rows sent one after another, or one bytes), the object is
    the bytes, in one request, and GCS's MD5 agrees."""
    lines = _lines(size)
    data = b"".join(lines)
    planting = Planting(stack.storage_client().bucket(bucket), "u/never", b"")
    with body_gate(stack.storage_endpoint, planting) as url:
        assert _staging(url, bucket).create("u/obj", lines if shape == "rows" else data, JSONL)
    assert planting.uploads == [("multipart", "u/obj")] and planting.chunks == 0
    assert stored(stack, bucket, "u/obj") == data
    blob = stack.storage_client().bucket(bucket).get_blob("u/obj")
    assert blob is not None and blob.md5_hash == _md5(data) and blob.content_type == JSONL


def test_a_wrong_md5_is_refused_and_nothing_is_left(stack: LocalStack, bucket: str) -> None:
    """An MD5 given that is not the bytes' (the bytes changed on the way, as GCS sees it): the
    object is not kept (fake-gcs-server stores it; it is deleted, that generation only), and
    the write raises."""
    staging = _staging(stack.storage_endpoint, bucket)
    with pytest.raises(api_exceptions.Conflict, match="other bytes than were sent"):
        staging.create("u/bad", LINES, JSONL, md5=hashlib.md5(b"x").hexdigest())
    assert not staging.exists("u/bad")
    assert staging.create("u/bad", LINES, JSONL)


def test_custom_time_and_metadata_are_set(stack: LocalStack, bucket: str) -> None:
    """The object carries the customTime lifecycle rules read, and the custom metadata given,
    read back by ``custom_metadata`` (``None`` for an object that does not exist)."""
    moment = datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC)
    staging = _staging(stack.storage_endpoint, bucket)
    assert staging.create("u/timed", LINES, JSONL, custom_time=moment, metadata={"a": "b c"})
    blob = stack.storage_client().bucket(bucket).get_blob("u/timed")
    assert blob is not None and blob.custom_time == moment
    assert staging.custom_metadata("u/timed") == {"a": "b c"}
    assert staging.create("u/plain", b"x\n", JSONL)
    assert staging.custom_metadata("u/plain") == {}
    assert staging.custom_metadata("u/absent") is None


def test_a_transient_failure_is_retried_and_creates_the_object_once(
    stack: LocalStack, bucket: str
) -> None:
    """A 503 on the request is retried by the policy: the object is created once, whole."""
    failed: list[str] = []

    def script(method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        if method == "POST" and path.startswith("/upload/") and not failed:
            failed.append(path)
            return Spoil(status=503)
        return None

    with body_gate(stack.storage_endpoint, script) as url:
        assert _staging(url, bucket).create("u/retried", LINES, JSONL)
    assert len(failed) == 1 and stored(stack, bucket, "u/retried") == DATA


def test_a_large_json_object_that_exists_is_not_overwritten(stack: LocalStack, bucket: str) -> None:
    """``create_json`` goes the same way: a record past 8 MiB that exists stays."""
    staging = _staging(stack.storage_endpoint, bucket)
    value = {"rows": ["x" * 1000] * (9 * 1024)}
    assert staging.create_json("u/record.json", {"first": True})
    assert not staging.create_json("u/record.json", value)
    assert json.loads(stored(stack, bucket, "u/record.json")) == {"first": True}
    assert staging.create_json("u/large.json", value)
    assert not staging.create_json("u/large.json", {"second": True})
    assert json.loads(stored(stack, bucket, "u/large.json")) == value


def test_debug_logging_of_google_auth_never_shows_the_bytes(stack: LocalStack, bucket: str) -> None:
    """With google-auth's request logging on (DEBUG on the ``google`` logger), a request body
    that decodes as text is logged as it is. The body goes as an object of views, which
    google-auth does not decode, so no request's bytes reach a log record."""
    marker = "secret-prompt-7f3a"
    line = f'{{"k":"last","t":"{marker}"}}\n'.encode()
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append  # type: ignore[method-assign]
    google = logging.getLogger("google")
    level = google.level
    google.addHandler(handler)
    google.setLevel(logging.DEBUG)
    try:
        staging = _staging(stack.storage_endpoint, bucket)
        for name, data in (("u/one", line), ("u/rows", [line]), ("u/large", [*LINES, line])):
            assert staging.create(name, data, JSONL)
    finally:
        google.removeHandler(handler)
        google.setLevel(level)
    assert any("Making request" in r.getMessage() for r in records)  # the logging was on
    assert not [r for r in records if marker in repr(r.__dict__)]


def test_writes_go_through_the_session_the_storage_client_was_given(
    stack: LocalStack, bucket: str
) -> None:
    """A session handed to ``storage.Client(_http=...)`` (credentials, proxies, counting)
    carries the write, with the client's extra headers: one POST, at 9 MiB too."""
    client, seen = recording_storage_client(stack, {"X-Test": "yes"})
    staging = Staging(client, bucket, "u", vb.RetryPolicy.no_wait())
    assert staging.create("u/sess", LINES, JSONL)
    uploads = [(m, h.get("X-Test")) for m, h in seen if m in ("POST", "PUT")]
    assert uploads == [("POST", "yes")]
    assert stored(stack, bucket, "u/sess") == DATA
