"""Range reads in one GET each: the bytes download_as_bytes gives, failures retried where they
stopped, errors mapped as the storage client maps them. Faults come from a gate in front of
fake-gcs-server that answers, drops or cuts real HTTP answers."""

from __future__ import annotations

import gzip
import threading
from email.message import Message

import pytest
from google.api_core import exceptions as api_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

import vertexbatch as vb
from tests.gcs_gate import Spoil, gate
from tests.helpers import recording_storage_client
from vertexbatch._gcs import staging as _staging
from vertexbatch._gcs.ranged_read import RangeRead
from vertexbatch._gcs.staging import Staging
from vertexbatch.emulator import LocalStack

CHUNK = 1024  # ranges this small stand for the real 8 MiB ones
NAME = "p/ré sult #1?.jsonl"  # quoted in the URL: a space, non-ASCII, '#' and '?'
LINES = "".join(f"ligne {i} — {'é' * (i * 7 % 50)}\n" for i in range(400)).encode("utf-8")


class Recorder:
    """A gate script: records each media GET's range and spoils the ones ``spoil`` names."""

    def __init__(self, spoil: dict[int, list[Spoil]] | None = None) -> None:
        self.ranges: list[str] = []
        self.by_library: list[str] = []  # the ones google-cloud-storage's own download asked for
        self._spoil = spoil or {}  # first byte of a range -> what to do to its next answers
        self._lock = threading.Lock()

    def __call__(self, method: str, path: str, headers: Message) -> Spoil | None:
        if method != "GET" or not path.startswith("/download/"):
            return None
        asked = headers.get("Range", "")
        with self._lock:
            self.ranges.append(asked)
            if headers.get("x-goog-api-client") is not None:
                self.by_library.append(asked)
            start = int(asked.removeprefix("bytes=").partition("-")[0] or 0)
            planned = self._spoil.get(start)
            return planned.pop(0) if planned else None


def _client(endpoint: str, stack: LocalStack) -> storage.Client:
    return storage.Client(
        project=stack.project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": endpoint},
    )


def _put(stack: LocalStack, bucket: str, name: str, data: bytes) -> storage.Blob:
    blob = stack.storage_client().bucket(bucket).blob(name)
    blob.upload_from_string(data, content_type="application/jsonl")
    return blob


def _read(
    endpoint: str,
    stack: LocalStack,
    bucket: str,
    attempts: int = 8,
    read_chunk: int = _staging._READ_CHUNK,
) -> bytes:
    policy = vb.RetryPolicy.no_wait(attempts)
    staging = Staging(_client(endpoint, stack), bucket, "", policy, read_chunk=read_chunk)
    return b"".join(line + b"\n" for line in staging.read_lines(NAME))


def _ranges(*starts: int) -> list[str]:
    return [f"bytes={start}-{start + CHUNK - 1}" for start in starts]


@pytest.mark.parametrize(
    "size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 3 * CHUNK + 5, len(LINES)]
)
def test_ranges_are_download_as_bytes_bytes_one_get_each(
    stack: LocalStack, bucket: str, size: int
) -> None:
    """Around the range size: the object's bytes, one GET per range, and an object that ends on
    a range's end ends at the next range's 416."""
    data = LINES[:size]
    blob = _put(stack, bucket, NAME, data)
    recorder = Recorder()
    with gate(stack.storage_endpoint, recorder) as url:
        blob = _client(url, stack).bucket(bucket).blob(NAME)
        staging = Staging(
            _client(url, stack), bucket, "", vb.RetryPolicy.no_wait(), read_chunk=CHUNK
        )
        assert b"".join(staging._ranges(blob)) == data == blob.download_as_bytes()
    reads = size // CHUNK + 1  # up to the first short range: after a whole one, a 416
    assert recorder.ranges[:-1] == _ranges(*range(0, reads * CHUNK, CHUNK))
    assert recorder.by_library == [""]  # download_as_bytes, asking for no range


@pytest.mark.parametrize("size", [_staging._READ_CHUNK - 1, _staging._READ_CHUNK + 1])
def test_real_range_size_reads_the_object_exactly(
    stack: LocalStack, bucket: str, size: int
) -> None:
    """At the real range size (8 MiB), just short of and just past one range."""
    data = (LINES * (size // len(LINES) + 1))[:size]
    _put(stack, bucket, NAME, data)
    assert _read(stack.storage_endpoint, stack, bucket).rstrip(b"\n") == data.rstrip(b"\n")


@pytest.mark.parametrize(("start", "end"), [(0, 0), (0, 99), (5, 5000), (1000, 1500), (1199, 1199)])
def test_a_range_read_is_download_as_bytes_of_that_range(
    stack: LocalStack, bucket: str, start: int, end: int
) -> None:
    """Any range, past the end included: the bytes download_as_bytes gives for it."""
    blob = _put(stack, bucket, NAME, LINES[:1200])
    expected = blob.download_as_bytes(start=start, end=end, retry=None, checksum=None)
    assert RangeRead(blob, start, end)() == expected


@pytest.mark.parametrize(
    ("spoil", "kept"),
    [
        (Spoil(status=503), 0),
        (Spoil(status=429), 0),
        (Spoil(status=500), 0),
        (Spoil(cut=0), 0),
        (Spoil(cut=100), 100),
    ],
    ids=["503", "429", "500", "dropped before the body", "dropped mid-body"],
)
def test_a_failed_range_is_read_again_and_the_lines_are_exact(
    stack: LocalStack, bucket: str, spoil: Spoil, kept: int
) -> None:
    """A server error, a rate limit or a connection dropped on the third range: that range is
    asked for again from the byte it stopped at, and the lines are the object's, none lost or
    repeated."""
    _put(stack, bucket, NAME, LINES)
    recorder = Recorder({2 * CHUNK: [spoil]})
    with gate(stack.storage_endpoint, recorder) as url:
        assert _read(url, stack, bucket, read_chunk=CHUNK) == LINES
    again = f"bytes={2 * CHUNK + kept}-{3 * CHUNK - 1}"
    assert recorder.ranges[:4] == [*_ranges(0, CHUNK, 2 * CHUNK), again]


def test_a_short_answer_is_resumed_where_it_stopped(stack: LocalStack, bucket: str) -> None:
    """A 206 whose body and Content-Range stop 300 bytes into the range, before the object's
    end, then 10 bytes further: never taken for the end, each next GET asks for the rest of the
    range only."""
    _put(stack, bucket, NAME, LINES)
    third = 2 * CHUNK
    recorder = Recorder({third: [Spoil(shorten=300)], third + 300: [Spoil(shorten=10)]})
    with gate(stack.storage_endpoint, recorder) as url:
        assert _read(url, stack, bucket, read_chunk=CHUNK) == LINES
    assert recorder.ranges[2:6] == [
        f"bytes={third}-{third + CHUNK - 1}",
        f"bytes={third + 300}-{third + CHUNK - 1}",
        f"bytes={third + 310}-{third + CHUNK - 1}",
        f"bytes={3 * CHUNK}-{4 * CHUNK - 1}",
    ]


def test_a_short_answer_of_unknown_total_ends_at_the_next_416(
    stack: LocalStack, bucket: str
) -> None:
    """The last range answered whole but with ``Content-Range: bytes a-b/*`` (no total): it may
    be short, so the rest is asked for; the 416 that answers says it was the end, and the bytes
    already read are kept."""
    _put(stack, bucket, NAME, LINES)
    last = len(LINES) // CHUNK * CHUNK
    unknown = Spoil(headers={"Content-Range": f"bytes {last}-{len(LINES) - 1}/*"})
    recorder = Recorder({last: [unknown]})
    with gate(stack.storage_endpoint, recorder) as url:
        assert _read(url, stack, bucket, read_chunk=CHUNK) == LINES
    assert recorder.ranges[-2:] == [
        f"bytes={last}-{last + CHUNK - 1}",
        f"bytes={len(LINES)}-{last + CHUNK - 1}",
    ]


def test_an_answer_for_other_bytes_than_asked_is_read_again(stack: LocalStack, bucket: str) -> None:
    """A Content-Range that does not start where the range was asked: not taken, read again."""
    _put(stack, bucket, NAME, LINES)
    recorder = Recorder({CHUNK: [Spoil(headers={"Content-Range": f"bytes 0-{CHUNK - 1}/*"})]})
    with gate(stack.storage_endpoint, recorder) as url:
        assert _read(url, stack, bucket, read_chunk=CHUNK) == LINES
    assert recorder.ranges[1:3] == _ranges(CHUNK, CHUNK)
    assert recorder.by_library == []


def test_an_answer_without_content_range_is_left_to_download_as_bytes(
    stack: LocalStack, bucket: str
) -> None:
    """A 206 without a usable Content-Range is not guessed at: the library reads that range."""
    _put(stack, bucket, NAME, LINES)
    recorder = Recorder({CHUNK: [Spoil(headers={"Content-Range": "bytes */*"})]})
    with gate(stack.storage_endpoint, recorder) as url:
        assert _read(url, stack, bucket, read_chunk=CHUNK) == LINES
    assert recorder.ranges[1:3] == _ranges(CHUNK, CHUNK)
    assert recorder.by_library == _ranges(CHUNK)


def test_a_range_failing_every_time_raises_after_the_policys_attempts(
    stack: LocalStack, bucket: str
) -> None:
    _put(stack, bucket, NAME, LINES)
    recorder = Recorder({CHUNK: [Spoil(status=503)] * 5})
    with (
        gate(stack.storage_endpoint, recorder) as url,
        pytest.raises(api_exceptions.ServiceUnavailable),
    ):
        _read(url, stack, bucket, attempts=3, read_chunk=CHUNK)
    assert recorder.ranges[1:4] == _ranges(CHUNK, CHUNK, CHUNK)
    assert _ranges(CHUNK)[0] not in recorder.ranges[4:]


def test_a_refusal_is_the_storage_clients_exception_and_not_retried(
    stack: LocalStack, bucket: str
) -> None:
    """403 raises what download_as_bytes raises for it, after one request."""
    _put(stack, bucket, NAME, LINES)
    recorder = Recorder({0: [Spoil(status=403), Spoil(status=403)]})
    with gate(stack.storage_endpoint, recorder) as url:
        blob = _client(url, stack).bucket(bucket).blob(NAME)
        with pytest.raises(api_exceptions.Forbidden):
            blob.download_as_bytes(start=0, end=CHUNK - 1, retry=None)
        with pytest.raises(api_exceptions.Forbidden):
            _read(url, stack, bucket, read_chunk=CHUNK)
    assert len(recorder.ranges) == 2


def test_a_missing_object_raises_not_found_as_before(stack: LocalStack, bucket: str) -> None:
    blob = stack.storage_client().bucket(bucket).blob(NAME)
    with pytest.raises(api_exceptions.NotFound):
        blob.download_as_bytes(start=0, end=CHUNK - 1, retry=None)
    with pytest.raises(api_exceptions.NotFound):
        RangeRead(blob, 0, CHUNK - 1)()
    with pytest.raises(api_exceptions.NotFound):
        _read(stack.storage_endpoint, stack, bucket)


def test_a_range_past_the_end_is_range_not_satisfiable(stack: LocalStack, bucket: str) -> None:
    """416 is the end of the object, which ``Staging`` reads as no more bytes."""
    blob = _put(stack, bucket, NAME, LINES[:CHUNK])
    with pytest.raises(api_exceptions.RequestRangeNotSatisfiable):
        RangeRead(blob, CHUNK, 2 * CHUNK - 1)()


def test_a_gzip_encoded_object_is_refused_not_decoded(stack: LocalStack, bucket: str) -> None:
    """A range of a gzip-stored object is a slice of compressed bytes: refused, naming why."""
    blob = stack.storage_client().bucket(bucket).blob(NAME)
    blob.content_encoding = "gzip"
    blob.upload_from_string(gzip.compress(LINES), content_type="application/jsonl")
    with pytest.raises(vb.InvalidRequestError, match="Content-Encoding 'gzip'"):
        _read(stack.storage_endpoint, stack, bucket)


def test_ranges_go_through_the_session_the_storage_client_was_given(
    stack: LocalStack, bucket: str
) -> None:
    """A session handed to ``storage.Client(_http=...)`` (credentials, proxies, counting) carries
    every range read, with the client's extra headers."""
    _put(stack, bucket, NAME, LINES[: 3 * CHUNK + 5])
    client, seen = recording_storage_client(stack, {"X-Test": "yes"})
    staging = Staging(client, bucket, "", vb.RetryPolicy.no_wait(), read_chunk=CHUNK)
    assert b"".join(staging._ranges(client.bucket(bucket).blob(NAME))) == LINES[: 3 * CHUNK + 5]
    got = [(h.get("Range"), h.get("X-Test")) for _, h in seen]
    assert got == [(r, "yes") for r in _ranges(0, CHUNK, 2 * CHUNK, 3 * CHUNK)]
