"""Create-only uploads (``_upload``): every byte once, in order, through failures GCS can give.

The chunk size is made 512 KiB (two of the protocol's units) so that several chunks take
little time; the code is the same at 16 MiB. Faults come from ``tests/upload_gate.py``, a gate
in front of fake-gcs-server that answers resumable uploads as GCS does where it does not.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import random
import threading
from datetime import UTC, datetime

import pytest
from google.api_core import exceptions as api_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage  # type: ignore[attr-defined,unused-ignore]

import vertexbatch as vb
from tests.helpers import (
    CLAUDE,
    claude_request,
    local_client,
    recording_storage_client,
    with_staging_sizes,
)
from tests.upload_gate import Gate, upload_gate
from vertexbatch._gcs import upload as _upload
from vertexbatch._gcs.staging import Staging
from vertexbatch.emulator import LocalStack

CHUNK = 512 * 1024  # two of the protocol's units: the gate can persist one of them alone
SINGLE = 256 * 1024
JSONL = "application/jsonl"


SMALL = {"upload_chunk": CHUNK, "single_request_limit": SINGLE}  # Staging's sizes here


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


def _staging(endpoint: str, bucket: str, single_request_limit: int = SINGLE) -> Staging:
    policy = vb.RetryPolicy.no_wait()
    sizes = {**SMALL, "single_request_limit": single_request_limit}
    return Staging(_storage(endpoint), bucket, "u", policy, **sizes)


def _small_client(stack: LocalStack, bucket: str, storage_endpoint: str | None = None) -> vb.Client:
    """A client of the stack (prefix "u") whose staging uploads in this module's sizes."""
    return with_staging_sizes(
        local_client(stack, bucket, storage_endpoint=storage_endpoint, prefix="u"), **SMALL
    )


def _stored(stack: LocalStack, bucket: str, name: str) -> bytes:
    data: bytes = stack.storage_client().bucket(bucket).blob(name).download_as_bytes()
    return data


def _md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


SIZES = [0, 1, SINGLE, SINGLE + 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK, 3 * CHUNK + 17]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("shape", ["lines", "one write", "writes over two chunks"])
def test_every_byte_once_in_order(stack: LocalStack, bucket: str, size: int, shape: str) -> None:
    """Whatever the sizes of the writes, the object is their bytes, and GCS's MD5 agrees."""
    lines = _lines(size)
    data = b"".join(lines)
    writes: list[bytes]
    if shape == "lines":
        writes = lines
    elif shape == "one write":
        writes = [data] if data else []
    else:  # a small write, then one larger than two chunks: it is cut across chunks
        writes = [data[:10], data[10:]] if data else []
    upload = _staging(stack.storage_endpoint, bucket).upload("u/obj", JSONL)
    for piece in writes:
        upload.write(piece)
    if shape == "lines":  # the digest taken after finish counts each byte once too
        assert upload.finish()
        assert upload.md5_hex() == hashlib.md5(data).hexdigest()
    else:
        assert upload.md5_hex() == hashlib.md5(data).hexdigest()
        assert upload.finish()
    assert _stored(stack, bucket, "u/obj") == data
    blob = stack.storage_client().bucket(bucket).get_blob("u/obj")
    assert blob is not None and blob.md5_hash == _md5(data) and blob.content_type == JSONL


@pytest.mark.parametrize("size", [SINGLE, 3 * CHUNK + 17])
def test_a_buffer_changed_after_write_does_not_change_the_object(
    stack: LocalStack, bucket: str, size: int
) -> None:
    """What is written is what is stored, whatever the caller does with its buffer afterwards
    (a reused bytearray, as a line writer may keep): one request and resumable chunks alike."""
    data = b"".join(_lines(size))
    upload = _staging(stack.storage_endpoint, bucket).upload("u/obj", JSONL)
    buffer = bytearray()
    for start in range(0, len(data), 1000):
        buffer[:] = data[start : start + 1000]
        upload.write(buffer)  # type: ignore[arg-type]
        buffer[:] = b"x" * len(buffer)
    assert upload.finish()
    assert _stored(stack, bucket, "u/obj") == data
    assert upload.md5_hex() == hashlib.md5(data).hexdigest()


@pytest.mark.parametrize("size", [SINGLE, 3 * CHUNK + 17])
def test_custom_time_is_set_on_both_paths(stack: LocalStack, bucket: str, size: int) -> None:
    """One request or resumable, the object carries the customTime lifecycle rules read."""
    moment = datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC)
    staging = _staging(stack.storage_endpoint, bucket)
    upload = staging.upload("u/timed", JSONL, custom_time=moment)
    upload.write(b"x" * size)
    assert upload.finish()
    blob = stack.storage_client().bucket(bucket).get_blob("u/timed")
    assert blob is not None and blob.custom_time == moment


def _through(stack: LocalStack, bucket: str, gate: Gate, data: list[bytes]) -> bool:
    upload = _staging(gate.url, bucket).upload("u/gated", JSONL)
    for piece in data:
        upload.write(piece)
    assert upload.md5_hex() == hashlib.md5(b"".join(data)).hexdigest()  # retries hash once
    return upload.finish()


LINES = _lines(3 * CHUNK + 17)
DATA = b"".join(LINES)


@pytest.mark.parametrize(
    "faults",
    [
        {2: "drop"},  # the server never saw chunk 2: it is sent again
        {2: "lose"},  # the server kept chunk 2, its answer was lost: not sent again
        {2: "partial"},  # the server kept part of chunk 2: the rest is sent
        {1: "drop", 2: "lose", 3: "partial", 5: "drop"},
        {4: "lose"},  # the last chunk's answer was lost: the object is complete
        {4: "drop"},  # the last chunk never arrived: sent again, once
    ],
    ids=["drop", "lose", "partial", "all", "lose-last", "drop-last"],
)
def test_failed_chunks_resume_where_gcs_stopped(
    stack: LocalStack, bucket: str, faults: dict[int, str]
) -> None:
    """After a failure the client asks what GCS holds and goes on from there: no byte twice,
    none missing, whichever side of the server the failure fell."""
    with upload_gate(stack.storage_endpoint, Gate(faults=dict(faults))) as gate:
        assert _through(stack, bucket, gate, LINES)
    assert gate.violations == []
    assert gate.status_queries == sum(1 for f in faults.values() if f in ("drop", "lose"))
    assert _stored(stack, bucket, "u/gated") == DATA


def test_a_chunk_answered_without_progress_is_asked_again(stack: LocalStack, bucket: str) -> None:
    """A 308 that confirms nothing new is a transient failure: paced and bounded by the retry
    policy, then resumed from what GCS holds, never resent in a tight loop."""
    with upload_gate(stack.storage_endpoint, Gate(faults={2: "stall"})) as gate:
        assert _through(stack, bucket, gate, LINES)
    assert gate.violations == [] and gate.status_queries == 1 and gate.chunks == 5
    assert _stored(stack, bucket, "u/gated") == DATA


def test_a_last_chunk_answered_308_is_finalised_before_done(stack: LocalStack, bucket: str) -> None:
    """A last chunk answered 308 with all its bytes held has not created the object: the upload
    asks GCS to finalise it, and is done only when it answers with the object."""
    with upload_gate(stack.storage_endpoint, Gate(faults={4: "unfinal"})) as gate:
        assert _through(stack, bucket, gate, LINES)
    assert gate.violations == [] and gate.chunks == 5
    assert _stored(stack, bucket, "u/gated") == DATA


def test_a_last_chunk_never_finalised_fails_within_the_policy(
    stack: LocalStack, bucket: str
) -> None:
    """A last chunk answered 308 (all bytes held, object not created) is not taken for done:
    asked again within the policy's attempts, then raised; nothing is created."""
    gate = Gate(stall_from=4)
    with upload_gate(stack.storage_endpoint, gate), pytest.raises(ConnectionError):
        _through(stack, bucket, gate, LINES)
    assert 4 < gate.chunks <= 3 + 8  # the last chunk, at most once per attempt
    assert not _staging(stack.storage_endpoint, bucket).exists("u/gated")


def test_bytes_gcs_lost_after_confirming_stop_the_upload(stack: LocalStack, bucket: str) -> None:
    """GCS confirming fewer bytes than it had (bytes no longer held here to send again) ends
    the upload with an error; no byte is sent at a wrong place, nothing is created."""
    gate = Gate(faults={3: "forget"})
    with upload_gate(stack.storage_endpoint, gate), pytest.raises(api_exceptions.Conflict) as err:
        _through(stack, bucket, gate, LINES)
    assert "cannot go on" in str(err.value)
    assert gate.chunks == 3
    assert not _staging(stack.storage_endpoint, bucket).exists("u/gated")


def test_a_premature_finalisation_is_deleted_and_raised(stack: LocalStack, bucket: str) -> None:
    """fake-gcs-server finalises an object on a status query with what it holds; the short
    object is deleted (nothing blocks a new attempt) and the upload fails, never passing it
    off as the whole."""
    gate = Gate(faults={2: "drop"}, forward_status=True)
    with upload_gate(stack.storage_endpoint, gate), pytest.raises(api_exceptions.Conflict) as err:
        _through(stack, bucket, gate, LINES)
    assert "submit again" in str(err.value)
    assert not _staging(stack.storage_endpoint, bucket).exists("u/gated")
    assert _staging(stack.storage_endpoint, bucket).upload("u/gated", JSONL).finish()


@pytest.mark.parametrize("chunk", [2, 4])
def test_bytes_changed_on_the_way_are_caught_by_the_md5(
    stack: LocalStack, bucket: str, chunk: int
) -> None:
    """An object of the right size but other bytes is not taken for the upload: deleted and
    raised, so a new attempt can create it."""
    gate = Gate(faults={chunk: "corrupt"})
    with upload_gate(stack.storage_endpoint, gate), pytest.raises(api_exceptions.Conflict) as err:
        _through(stack, bucket, gate, LINES)
    assert "its MD5 differs" in str(err.value) and "deleted" in str(err.value)
    assert not _staging(stack.storage_endpoint, bucket).exists("u/gated")


@pytest.mark.parametrize("where", ["initiate", "last chunk"])
def test_an_object_created_meanwhile_is_left_alone(
    stack: LocalStack, bucket: str, where: str
) -> None:
    """GCS answers 412 at the session's start or at its last chunk when the object exists:
    finish says so and creates nothing."""
    gate = Gate(initiate="exists") if where == "initiate" else Gate(faults={4: "exists"})
    with upload_gate(stack.storage_endpoint, gate):
        upload = _staging(gate.url, bucket).upload("u/gated", JSONL)
        for line in LINES:
            upload.write(line)
        # The digest counts every byte written, sent or not: it tells whose the object is.
        assert upload.md5_hex() == hashlib.md5(DATA).hexdigest()
        assert not upload.finish()
        assert upload.exists
    assert gate.chunks == (0 if where == "initiate" else 4)
    assert not _staging(stack.storage_endpoint, bucket).exists("u/gated")


def test_a_refused_chunk_is_not_retried(stack: LocalStack, bucket: str) -> None:
    """A chunk refused for good (not a transient status) fails the upload at once."""
    gate = Gate(faults={2: "exists"})  # a 412 mid-way: not transient
    with upload_gate(stack.storage_endpoint, gate):
        assert not _through(stack, bucket, gate, LINES)
    assert gate.chunks == 2 and gate.status_queries == 0


def test_abort_cancels_the_session(stack: LocalStack, bucket: str) -> None:
    """An abandoned upload cancels its session: nothing is created, a new attempt succeeds."""
    with upload_gate(stack.storage_endpoint, Gate()) as gate:
        upload = _staging(gate.url, bucket).upload("u/gated", JSONL)
        for line in LINES[: len(LINES) // 2]:
            upload.write(line)
        upload.abort()
    assert gate.chunks >= 1 and gate.cancels == 1
    assert not _staging(stack.storage_endpoint, bucket).exists("u/gated")
    with upload_gate(stack.storage_endpoint, Gate()) as gate:
        assert _through(stack, bucket, gate, LINES)
    assert _stored(stack, bucket, "u/gated") == DATA


@pytest.mark.parametrize("size", [2 * SINGLE, 8 * SINGLE + 5])
def test_a_smaller_chunk_starts_only_past_one_request(
    stack: LocalStack, bucket: str, size: int
) -> None:
    """An upload with chunks smaller than one request's limit (a key map's) still goes in one
    request up to the limit (create-only everywhere); past it, chunks go while it is written."""
    with upload_gate(stack.storage_endpoint, Gate()) as gate:
        staging = _staging(gate.url, bucket, single_request_limit=2 * SINGLE)
        upload = staging.upload("u/keys", JSONL, chunk=SINGLE)
        for line in _lines(size):
            upload.write(line)
        sent_before_finish = gate.chunks
        assert upload.finish()
    # 2 MiB + 5 bytes: 8 whole chunks (the 8th may still be in flight at finish) and the last.
    assert sent_before_finish in ((0,) if size == 2 * SINGLE else (7, 8))
    assert gate.chunks == (0 if size == 2 * SINGLE else 9)
    assert _stored(stack, bucket, "u/keys") == b"".join(_lines(size))


def test_the_writer_lets_the_sending_thread_run_while_a_chunk_is_in_flight(
    stack: LocalStack, bucket: str
) -> None:
    """While a chunk is being sent, ``write`` lets go of the interpreter lock every 64 KiB, so the
    sending thread is not held up for the switch interval after each socket call; with nothing
    in flight it does not (the speed itself is the benchmark's: docs/performance.md)."""
    yields: list[int] = []
    data = b"".join(_lines(CHUNK + 4 * _upload._YIELD_EVERY))
    lines = [data[i : i + 1024] for i in range(0, len(data), 1024)]
    gate = Gate(hold=1)  # the first chunk stays in flight until the gate lets it through
    with upload_gate(stack.storage_endpoint, gate):
        upload = _upload.CreateOnlyUpload(
            _storage(gate.url).bucket(bucket).blob("u/obj"),
            JSONL,
            vb.RetryPolicy.no_wait(),
            chunk=CHUNK,
            single_request_limit=SINGLE,
            let_sender_run=lambda: yields.append(0),
        )
        first = CHUNK // 1024
        for line in lines[:first]:  # one whole chunk: handed to the sending thread, nothing yet
            upload.write(line)
        assert yields == [] and gate.holding.wait(30)
        for line in lines[first:]:  # 256 KiB more while that chunk is held in flight
            upload.write(line)
        assert yields == [0, 0, 0, 0]
        gate.release.set()
        in_flight = upload._in_flight
        assert in_flight is not None
        in_flight.result(30)
        upload.write(b"x" * (2 * _upload._YIELD_EVERY))  # the chunk is answered: no yield
        assert yields == [0, 0, 0, 0]
        assert upload.finish()
    assert _stored(stack, bucket, "u/obj") == data + b"x" * (2 * _upload._YIELD_EVERY)


def test_debug_logging_of_google_auth_never_shows_the_bytes(stack: LocalStack, bucket: str) -> None:
    """With google-auth's request logging on (DEBUG on the ``google`` logger), a request body
    that decodes as one JSON document is logged as it is: a last chunk that is one whole line
    would show it. A chunk goes as a view of its buffer, which google-auth does not decode, so
    no request reaches a log record, in one request or in chunks."""
    marker = "secret-prompt-7f3a"
    line = f'{{"k":"last","t":"{marker}"}}\n'.encode()
    chunked = [*_lines(CHUNK), line]  # the last chunk is exactly that line
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append  # type: ignore[method-assign]
    google = logging.getLogger("google")
    level = google.level
    google.addHandler(handler)
    google.setLevel(logging.DEBUG)
    try:
        for name, data in (("u/one", [line]), ("u/chunked", chunked)):
            upload = _staging(stack.storage_endpoint, bucket).upload(name, JSONL)
            for line in data:
                upload.write(line)
            assert upload.finish()
    finally:
        google.removeHandler(handler)
        google.setLevel(level)
    assert any("Making request" in r.getMessage() for r in records)  # the logging was on
    assert not [r for r in records if marker in repr(r.__dict__)]


def test_a_failed_last_chunk_abandons_the_upload(stack: LocalStack, bucket: str) -> None:
    """A finish that fails (its last chunk refused for good) cancels the session before it
    raises, whoever called; the upload then takes no more writes and no second finish, which
    would otherwise send the last bytes again from wherever GCS stopped."""
    gate = Gate(faults={4: "refuse"})
    with upload_gate(stack.storage_endpoint, gate):
        upload = _staging(gate.url, bucket).upload("u/gated", JSONL)
        for line in LINES:
            upload.write(line)
        with pytest.raises(api_exceptions.Forbidden):
            upload.finish()
        assert gate.chunks == 4 and gate.cancels == 1
        for again in (lambda: upload.write(b"more"), upload.finish):
            with pytest.raises(RuntimeError, match="u/gated after it was abandoned"):
                again()
    assert not _staging(stack.storage_endpoint, bucket).exists("u/gated")


@pytest.mark.parametrize("size", [SINGLE, 3 * CHUNK + 17])
def test_an_ended_upload_takes_no_more_writes(stack: LocalStack, bucket: str, size: int) -> None:
    """After finish (one request or resumable) or abort, a write or another finish is refused
    with a clear error: never an object of other bytes, or a second session."""
    data = b"".join(_lines(size))
    staging = _staging(stack.storage_endpoint, bucket)
    finished = staging.upload("u/finished", JSONL)
    finished.write(data)
    assert finished.finish()
    for again in (lambda: finished.write(b"more"), finished.finish):
        with pytest.raises(RuntimeError, match="u/finished after it was finished"):
            again()
    assert _stored(stack, bucket, "u/finished") == data
    abandoned = staging.upload("u/abandoned", JSONL)
    abandoned.write(data)
    abandoned.abort()
    for again in (lambda: abandoned.write(b"more"), abandoned.finish):
        with pytest.raises(RuntimeError, match="u/abandoned after it was abandoned"):
            again()
    assert not staging.exists("u/abandoned")


@pytest.mark.parametrize("chunk", [0, 100_000, SINGLE + 1])
def test_a_chunk_size_off_the_protocol_unit_is_refused(
    stack: LocalStack, bucket: str, chunk: int
) -> None:
    """Every chunk but the last is a multiple of 256 KiB: another size is refused at once."""
    with pytest.raises(ValueError, match="multiple of 256 KiB"):
        _staging(stack.storage_endpoint, bucket).upload("u/odd", JSONL, chunk=chunk)


def test_no_write_after_the_digest(stack: LocalStack, bucket: str) -> None:
    """Bytes written after the digest was taken would be missing from it: refused."""
    upload = _staging(stack.storage_endpoint, bucket).upload("u/late", JSONL)
    upload.write(b"a\n")
    upload.md5_hex()
    with pytest.raises(RuntimeError, match="after md5_hex"):
        upload.write(b"b\n")
    upload.abort()


def _two_thousand_requests() -> list[vb.ClaudeRequest]:
    """500 distinct requests of about 2.5 KB, each four times: 5.4 MB, ten whole chunks and a
    last one (three and a last, deduplicated)."""
    return [
        claude_request(f"k{i}", f"{i % 500} " + "é" * (1000 + i % 500), max_tokens=8)
        for i in range(2000)
    ]


@pytest.mark.parametrize("dedupe", [False, True])
def test_a_submit_claims_the_md5_of_the_input_it_staged(
    stack: LocalStack, bucket: str, dedupe: bool
) -> None:
    """The manifest's MD5 (the upload's digest, taken in its sending thread) is the staged
    input's, over several chunks: it is what a later submit of the id compares."""
    stack.faults.hold(state="PENDING")
    client = _small_client(stack, bucket)
    requests = _two_thousand_requests()
    job = client.submit_claude("md5-id", CLAUDE, requests, dedupe=dedupe)
    store = stack.storage_client().bucket(bucket)
    staged = store.blob("u/md5-id/input.jsonl").download_as_bytes()
    assert len(staged) > 2 * CHUNK
    manifest = json.loads(store.blob("u/md5-id/manifest.json").download_as_bytes())
    assert manifest["md5"] == hashlib.md5(staged).hexdigest()
    client.cancel(job)


def test_uploads_go_through_the_session_the_storage_client_was_given(
    stack: LocalStack, bucket: str
) -> None:
    """A session handed to ``storage.Client(_http=...)`` (credentials, proxies, counting)
    carries every request of a resumable upload, with the client's extra headers."""

    client, seen = recording_storage_client(stack, {"X-Test": "yes"})
    staging = Staging(client, bucket, "u", vb.RetryPolicy.no_wait(), **SMALL)
    upload = staging.upload("u/sess", JSONL)
    for line in LINES:
        upload.write(line)
    assert upload.finish()
    uploads = [(m, h.get("X-Test")) for m, h in seen if m in ("POST", "PUT")]
    assert uploads == [("POST", "yes")] + [("PUT", "yes")] * 4
    assert _stored(stack, bucket, "u/sess") == DATA


def test_a_failed_chunk_ends_the_upload_even_unaborted(stack: LocalStack, bucket: str) -> None:
    """A caller that only writes (no abort on error) still leaves no session and no thread: the
    upload ends itself when a chunk fails for good."""
    before = set(threading.enumerate())
    gate = Gate(faults={2: "refuse"})
    with upload_gate(stack.storage_endpoint, gate), pytest.raises(api_exceptions.Forbidden):
        upload = _staging(gate.url, bucket).upload("u/gated", JSONL)
        for line in LINES:
            upload.write(line)
        upload.finish()
    left = set(threading.enumerate()) - before
    assert not any(t.name.startswith("vertexbatch-upload") for t in left)
    assert gate.cancels == 1


def test_an_unreadable_range_header_stops_the_upload(stack: LocalStack, bucket: str) -> None:
    """A 308 whose Range header cannot be read is a clear error naming the object, not a bare
    ValueError; nothing is created."""
    gate = Gate(faults={2: "garble"})
    with upload_gate(stack.storage_endpoint, gate), pytest.raises(api_exceptions.Conflict) as err:
        _through(stack, bucket, gate, LINES)
    assert "unreadable Range header" in str(err.value) and "u/gated" in str(err.value)
    assert not _staging(stack.storage_endpoint, bucket).exists("u/gated")
