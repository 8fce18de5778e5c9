"""Staging I/O on GCS: the id's folder, create-only writes (each one request), streamed reads.

Layout under ``gs://BUCKET/PREFIX/ID/``::

    input.jsonl     the request lines Vertex reads (past 8 MiB its first part, ``_gcs.parts``)
    keys.jsonl      the key map: [key, digest, canonical digest] per line, in submission order
    manifest.json   claims the id for one set of rows: provider, model, rows, bytes, MD5 of input
    job.json        the record: the resource name of the job the id resolved to
    output/         Vertex's output prefix (it writes prediction-model-<time>/predictions.jsonl)

Every object is written create-only (``if_generation_match=0``), each in one request, at every
size (``_gcs.upload``): nothing staged is ever overwritten, and a write that fails midway
creates nothing.
A ``Staging`` made by ``keyed`` writes every object with a Cloud KMS key (``kmsKeyName``).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
from collections.abc import Callable, Generator, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from google.api_core import exceptions as api_exceptions

from .._errors import InvalidRequestError, ObjectReplaced, bucket_errors
from .._json import load_json
from .._retry import RetryPolicy
from .._rules import DEFAULT_LIMITS, Limits
from .line_blocks import LineBlock, line_blocks
from .parts import PART_SIZE
from .ranged_read import RangeRead
from .upload import Body, create_in_one_request, md5_of

if TYPE_CHECKING:
    # Only for annotations: the storage client is built (and imported) by ``Client``.
    import google.cloud.storage as storage

__all__ = ["Folder", "Staging", "parse_gs_uri"]

JSONL = "application/jsonl"
JSON = "application/json"
# Range reads, one read ahead; two ranges and a range's lines are held. 8 MiB: half the requests
# of 4 MiB, each with its own fixed cost (headers, auth, the response's handling). A warm results
# pass of 100,000 Gemini rows, 11 rounds alternating on a quiet machine: CPU median 1.25 s against
# 1.47 s in 4 MiB (16 MiB: 1.26 s), for about 12 MB more at the peak, which issue 44's cold
# figures have room for (docs/performance.md, "The job service alone").
_READ_CHUNK = 8 * 1024 * 1024
T = TypeVar("T")


def parse_gs_uri(uri: str) -> tuple[str, str]:
    """Split ``gs://bucket/path`` into bucket and path."""
    if not uri.startswith("gs://"):
        raise InvalidRequestError(f"{uri!r} is not a gs:// URI", field="uri")
    bucket, _, path = uri[len("gs://") :].partition("/")
    return bucket, path


@dataclass(frozen=True, slots=True)
class Folder:
    """The names of one submission id's objects."""

    bucket: str
    path: str  # "PREFIX/ID" without slashes at either end

    def name(self, leaf: str) -> str:
        return f"{self.path}/{leaf}"

    def uri(self, leaf: str) -> str:
        return f"gs://{self.bucket}/{self.path}/{leaf}"

    @property
    def input_uri(self) -> str:
        return self.uri("input.jsonl")

    @property
    def output_prefix(self) -> str:
        return self.uri("output")


class Staging:
    """GCS operations of vertexbatch, each under the client's retry policy.

    ``read_chunk`` and ``part_size`` are the sizes of the byte paths (a range read; a staged
    part, and a piece of a run's online answers), the module constants by default: tests pass
    small ones to cross their ends with small objects.
    """

    def __init__(
        self,
        client: storage.Client,
        bucket: str,
        prefix: str,
        policy: RetryPolicy,
        *,
        read_chunk: int = _READ_CHUNK,
        part_size: int = PART_SIZE,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self._client = client
        self._bucket = client.bucket(bucket)
        self._prefix = prefix.strip("/")
        self._policy = policy
        self._read_chunk = read_chunk
        self.part_size = part_size
        self.limits = limits
        self.kms_key = ""  # the Cloud KMS key every object is written with ("": the bucket's)

    def with_sizes(
        self,
        *,
        read_chunk: int | None = None,
        part_size: int | None = None,
        limits: Limits | None = None,
    ) -> Staging:
        """This staging (its storage client, bucket, prefix and policy) with other byte-path
        sizes, those not given kept."""
        return Staging(
            self._client,
            self._bucket.name,
            self._prefix,
            self._policy,
            read_chunk=self._read_chunk if read_chunk is None else read_chunk,
            part_size=self.part_size if part_size is None else part_size,
            limits=self.limits if limits is None else limits,
        ).keyed(self.kms_key)

    def keyed(self, kms_key: str) -> Staging:
        """This staging, writing every object with ``kms_key`` ("": the bucket's default)."""
        if kms_key == self.kms_key:
            return self
        other = copy.copy(self)
        other.kms_key = kms_key
        return other

    def folder(self, submission_id: str) -> Folder:
        path = f"{self._prefix}/{submission_id}" if self._prefix else submission_id
        return Folder(self._bucket.name, path)

    def _blob(self, uri_or_name: str, generation: int | None = None) -> storage.Blob:
        key = self.kms_key or None  # google-cloud-storage sends it as kmsKeyName on writes
        if uri_or_name.startswith("gs://"):
            bucket, name = parse_gs_uri(uri_or_name)
            return self._client.bucket(bucket).blob(name, generation=generation, kms_key_name=key)
        return self._bucket.blob(uri_or_name, generation=generation, kms_key_name=key)

    def _call(self, label: str, call: Callable[[], T], bucket: str = "") -> T:
        """``call`` under the retry policy; GCS's 404 for a bucket that does not exist (of
        ``bucket``, by default this staging's) raised as ``BucketNotFoundError``: every GCS call
        of vertexbatch passes here."""
        with bucket_errors(bucket or self._bucket.name):
            return self._policy.call(label, call)

    def create(
        self,
        name: str,
        data: Body,
        content_type: str,
        *,
        md5: str | None = None,
        custom_time: datetime | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> bool:
        """Write ``data`` (one bytes, or rows sent one after another, never joined) create-only
        in one request; ``False`` if the object already existed (nothing is written).

        ``md5``: the hex MD5 of ``data``, if the caller has it (else it is taken here); GCS
        checks it. ``custom_time``: the ``customTime`` lifecycle rules read; ``metadata``: the
        object's custom metadata."""
        digest = md5_of(data) if md5 is None else md5
        created = self.create_bytes(
            name, data, content_type, digest, custom_time=custom_time, metadata=metadata
        )
        return created != 0

    def create_bytes(
        self,
        name: str,
        data: Body,
        content_type: str,
        md5: str,
        *,
        custom_time: datetime | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> int:
        """Write ``data`` (hex MD5 ``md5``, which GCS checks) create-only in one request, the
        bytes sent as they are held (``create_in_one_request``); the generation created, 0 if
        the object already existed."""
        blob = self._blob(name)
        md5_b64 = base64.b64encode(bytes.fromhex(md5)).decode("ascii")
        return int(
            self._call(
                f"upload {name}",
                lambda: create_in_one_request(
                    blob, data, content_type, md5_b64, custom_time=custom_time, metadata=metadata
                ),
            )
        )

    def create_json(self, name: str, value: Any) -> bool:
        """Write a small JSON object create-only; ``False`` if it already existed."""
        return self.create(name, json.dumps(value, sort_keys=True, indent=1).encode("utf-8"), JSON)

    def read_json(self, name: str) -> Any | None:
        """Read a small JSON object, ``None`` if it does not exist.

        Raises:
            InvalidRequestError: the object is not JSON, or is a JSON ``null`` (vertexbatch never
                writes one, so it is damaged, not absent).
        """
        value, _ = self._read_json_generation(name)
        return value

    def _read_json_generation(self, name: str) -> tuple[Any | None, int]:
        blob = self._blob(name)
        uri = f"gs://{blob.bucket.name}/{blob.name}"
        most = self.limits.record_bytes
        try:
            data = self._call(
                f"read {name}",
                # At most one byte past the limit: a huge object is refused, never held.
                lambda: blob.download_as_bytes(start=0, end=most, retry=None),
                blob.bucket.name,
            )
        except api_exceptions.NotFound:
            return None, 0
        except api_exceptions.RequestRangeNotSatisfiable:  # an empty object
            data = b""
        if len(data) > most:
            raise InvalidRequestError(
                f"{uri} is over {most:,} bytes, which no vertexbatch record is: it "
                "was not written by vertexbatch",
                field="staging",
            )
        try:
            value = load_json(data)  # depth measured before parsing, never met at the limit
        except ValueError:
            value = None
        if value is None:
            raise InvalidRequestError(
                f"{uri} is not a vertexbatch object (not JSON, or null): it was damaged or not "
                "written by vertexbatch",
                field="staging",
            )
        return value, int(blob.generation or 0)

    def replace_json(self, name: str, value: Any, expected: Any) -> bool:
        """Overwrite a small JSON object only if it still holds ``expected``; atomic.

        The write is conditional on the generation that was read, so of two callers replacing
        the same object at once, one wins and the other gets ``False``.
        """
        current, generation = self._read_json_generation(name)
        if current != expected or not generation:
            return False
        blob = self._blob(name)
        data = json.dumps(value, sort_keys=True, indent=1).encode("utf-8")
        try:
            self._call(
                f"replace {name}",
                lambda: blob.upload_from_string(
                    data, content_type=JSON, if_generation_match=generation, retry=None
                ),
            )
        except api_exceptions.PreconditionFailed:
            return False
        return True

    def bucket_exists(self) -> bool:
        """Whether the bucket exists (``lookup_bucket``); ``Forbidden`` propagates."""
        name = self._bucket.name
        found = self._call(
            f"look up bucket {name}", lambda: self._client.lookup_bucket(name, retry=None)
        )
        return found is not None

    def delete(self, name: str) -> None:
        """Delete an object; one already gone is not an error."""
        blob = self._blob(name)
        with contextlib.suppress(api_exceptions.NotFound):
            self._call(f"delete {blob.name}", lambda: blob.delete(retry=None), blob.bucket.name)

    def exists(self, uri_or_name: str) -> bool:
        """Whether an object exists (one GET of its metadata; ``Blob.exists`` would answer
        ``False`` for a bucket that does not exist too)."""
        blob = self._blob(uri_or_name)
        try:
            self._call(f"stat {blob.name}", lambda: blob.reload(retry=None), blob.bucket.name)
        except api_exceptions.NotFound:
            return False
        return True

    def md5(self, name: str) -> str | None:
        """The hex MD5 of an object, ``None`` if it does not exist."""
        blob = self._blob(name)
        try:
            self._call(f"stat {name}", lambda: blob.reload(retry=None))
        except api_exceptions.NotFound:
            return None
        return base64.b64decode(blob.md5_hash).hex() if blob.md5_hash else None

    def generation(self, uri: str) -> int | None:
        """The generation of the object at a ``gs://`` URI (a metadata read), ``None`` if it does
        not exist. The URI is no name of ours: it is never written into a log or an error here."""
        blob = self._blob(uri)
        try:
            self._policy.call("stat a file a request names", lambda: blob.reload(retry=None))
        except api_exceptions.NotFound:
            return None
        return int(blob.generation or 0)

    def custom_metadata(self, name: str) -> dict[str, str] | None:
        """An object's custom metadata (``{}`` if it has none), ``None`` if it does not exist."""
        blob = self._blob(name)
        try:
            self._call(f"stat {name}", lambda: blob.reload(retry=None))
        except api_exceptions.NotFound:
            return None
        return dict(blob.metadata or {})

    def list_names(self, uri_prefix: str) -> list[tuple[str, int, int]]:
        """URIs, sizes and generations of the objects under a ``gs://`` prefix (every page)."""
        bucket, path = parse_gs_uri(uri_prefix)
        prefix = path.rstrip("/") + "/"

        def listing() -> list[tuple[str, int, int]]:
            blobs = self._client.list_blobs(bucket, prefix=prefix, retry=None)
            return [
                (f"gs://{bucket}/{b.name}", int(b.size or 0), int(b.generation or 0)) for b in blobs
            ]

        return self._call(f"list {uri_prefix}", listing, bucket)

    def list_generations(self, prefix: str, glob: str = "") -> dict[str, int]:
        """Names and generations of the bucket's objects whose names start with ``prefix``
        (a name, not a ``gs://`` URI, and not cut at a slash), every page of one listing.

        ``glob``: GCS's ``matchGlob``, which lets GCS leave out what the caller does not
        need; a server may ignore it (fake-gcs-server does), so callers filter names too.
        """

        def listing() -> dict[str, int]:
            blobs = self._client.list_blobs(
                self._bucket.name,
                prefix=prefix,
                match_glob=glob or None,
                fields="items(name,generation),nextPageToken",
                retry=None,
            )
            return {str(b.name): int(b.generation or 0) for b in blobs}

        return self._call(f"list {prefix}", listing)

    def read_lines(
        self, uri_or_name: str, *, max_line: int | None = None, generation: int = 0
    ) -> Iterator[bytes]:
        """Stream an object's lines; a transient failure resumes at the byte it stopped at.

        With ``max_line``, a longer line is yielded as its first ``max_line`` bytes and a NUL
        byte (which no JSON text holds, so it reads as a damaged line) and the rest of it is
        passed over as it streams by: no more than ``max_line`` bytes of one line are held.

        With ``generation`` (from ``list_names``), every range is read from that generation, so
        an object replaced meanwhile is never read as a splice of two: ``ObjectReplaced``.
        """
        blocks = self.read_line_blocks(uri_or_name, max_line=max_line, generation=generation)
        try:
            for block in blocks:
                yield from block.lines
        finally:
            blocks.close()  # a caller that stops early leaves no read ahead running

    def read_line_blocks(
        self, uri_or_name: str, *, max_line: int | None = None, generation: int = 0
    ) -> Generator[LineBlock, None, None]:
        """``read_lines``, a block of lines for each range read, with the range (``LineBlock``):
        a reader may check a range once where it would check each of its lines."""
        yield from line_blocks(self._ranges(self._blob(uri_or_name, generation or None)), max_line)

    def _ranges(self, blob: storage.Blob) -> Iterator[bytes]:
        """An object's bytes in ranges, in order; each transient failure retried where it was.

        Past the first range, the next is read by one background thread while the caller works
        on this one (at most one read ahead); its error surfaces here, in the caller's thread.
        """

        def read(offset: int) -> bytes:
            try:
                # One GET per attempt; a short attempt is resumed where it ended.
                span = RangeRead(blob, offset, offset + self._read_chunk - 1)
                data = self._call(f"read {blob.name}", span, blob.bucket.name)
            except api_exceptions.RequestRangeNotSatisfiable:
                data = b""
            except api_exceptions.NotFound as exc:
                if blob.generation is None:
                    raise
                raise ObjectReplaced(  # type: ignore[no-untyped-call]
                    f"gs://{blob.bucket.name}/{blob.name} generation {blob.generation} is gone"
                ) from exc
            return data

        data = read(0)
        if len(data) < self._read_chunk:  # the whole object in one read: no thread
            if data:
                yield data
            return
        reader = ThreadPoolExecutor(1, thread_name_prefix="vertexbatch-read")
        try:
            offset = len(data)
            while True:
                ahead = reader.submit(read, offset)
                yield data
                data = ahead.result()
                offset += len(data)
                if len(data) < self._read_chunk:
                    break
            if data:
                yield data
        finally:
            # A caller that stops early leaves at most one read to finish on its own.
            reader.shutdown(wait=False, cancel_futures=True)
