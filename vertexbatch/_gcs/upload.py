"""Create-only uploads to GCS: every object in one (multipart) request, at every size.

One request, not GCS's resumable protocol, for what it guarantees where it can be tested:
fake-gcs-server enforces ``ifGenerationMatch=0`` on one-request uploads and ignores it on
resumable ones, so an object written resumably past 8 MiB would be create-only on GCS only, with
no test here to hold it. GCS takes a one-request upload of any size. What is written is already
in memory: each caller builds its object's bytes first (a list of rows, or one bytes), or cuts
what it streams into bounded pieces, each one object (``_gcs.parts``; a run's online answers,
``_runs.online_rows``).

The request is built here, over the storage client's own authorized session, rather than by
``Blob.upload_from_string``, for memory: the client joins the metadata and the bytes into one new
body (a copy of every byte), and past 8 MiB switches to a resumable upload. Here the bytes go as
they are held: a bytes, a bytearray or a view is sent as it is, a list of rows one after another
(small rows gathered a few hundred KiB at a time, so the socket is not called once a row). A 412
means the object exists: nothing is written. This module is one of the two that use
google-cloud-storage's private API (``client._http``; the other is ``_gcs.ranged_read``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as api_exceptions

if TYPE_CHECKING:
    import google.cloud.storage as storage

__all__ = ["Body", "Chunk", "create_in_one_request", "md5_of"]

# One run of bytes, sent as it is held. A view, not the bytearray: a body with no ``decode`` is
# not logged as text by google-auth.
Chunk = bytes | bytearray | memoryview
# An object's bytes: one run, or runs (rows) sent one after another, never joined.
Body = Chunk | Sequence[Chunk]
_TIMEOUT = 120.0  # seconds a socket operation may take; the storage client's default is 60
# Rows shorter than this are gathered into one send of about this size (a transient copy of
# that much at most); longer runs go to the socket as they are.
_GATHER = 256 * 1024


def _runs(data: Body) -> Sequence[Chunk]:
    if isinstance(data, bytes | bytearray | memoryview):
        return (data,)
    return data


def md5_of(data: Body) -> str:
    """The hex MD5 of ``data``'s bytes, in order."""
    digest = hashlib.md5(usedforsecurity=False)
    for run in _runs(data):
        digest.update(run)
    return digest.hexdigest()


class _Request:
    """A request body sent as it is held: its pieces one after another (never joined into one
    bytes). requests sends it with its ``Content-Length`` (``__len__``), each piece as it
    comes; a retry builds a new one over the same pieces."""

    def __init__(self, head: bytes, runs: Sequence[Chunk], tail: bytes) -> None:
        self._head = head
        self._runs = runs
        self._tail = tail
        self._length = len(head) + sum(len(run) for run in runs) + len(tail)

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Chunk]:
        gathered = bytearray(self._head)
        for run in self._runs:
            if len(run) < _GATHER:
                gathered += run
                if len(gathered) < _GATHER:
                    continue
                yield memoryview(gathered)
                gathered = bytearray()
                continue
            if gathered:
                yield memoryview(gathered)
                gathered = bytearray()
            yield memoryview(run)
        gathered += self._tail
        yield memoryview(gathered)


def _upload_target(blob: storage.Blob) -> tuple[str, dict[str, str]]:
    """The URL and query of a create-only one-request upload of ``blob``, as
    google-cloud-storage's own uploads make them: its endpoint (mTLS included), the bucket's
    user project, and the caller's CMEK key."""
    connection = blob.client._connection
    host = getattr(connection, "get_api_base_url_for_mtls", None)
    hostname = host() if host is not None else connection.API_BASE_URL
    params = {"uploadType": "multipart", "ifGenerationMatch": "0"}
    if blob.user_project is not None:
        params["userProject"] = blob.user_project
    if blob.kms_key_name is not None:  # written with the caller's CMEK key, as the client does
        params["kmsKeyName"] = blob.kms_key_name
    return f"{hostname}/upload/storage/v1{blob.bucket.path}/o", params


def create_in_one_request(
    blob: storage.Blob,
    data: Body,
    content_type: str,
    md5: str,
    *,
    custom_time: datetime | None = None,
    metadata: Mapping[str, str] | None = None,
) -> int:
    """Create the object from ``data`` (base64 MD5 ``md5``, which GCS checks) in one multipart
    request, create-only; the generation created, 0 if the object exists (412).

    ``custom_time``: the object's ``customTime`` (what lifecycle rules read); ``metadata``: its
    custom metadata. An object finalised with other bytes than were sent is deleted (that
    generation only) and raised.
    """
    client = blob.client
    connection = client._connection
    url, params = _upload_target(blob)
    runs = _runs(data)
    resource: dict[str, Any] = {"name": blob.name, "contentType": content_type, "md5Hash": md5}
    if custom_time is not None:
        resource["customTime"] = _rfc3339(custom_time)
    if metadata:
        resource["metadata"] = dict(metadata)
    # JSON lines hold no raw CR, so "\r\n--" and the boundary never occur in the bytes.
    boundary = "vertexbatch-part-boundary"
    head = (
        f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n"
        f"{json.dumps(resource)}\r\n--{boundary}\r\nContent-Type: {content_type}\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode("ascii")
    headers = {
        "User-Agent": connection.user_agent,
        **(getattr(client, "_extra_headers", None) or {}),
        "Content-Type": f'multipart/related; boundary="{boundary}"',
    }
    response = client._http.request(
        "POST",
        url,
        params=params,
        data=_Request(head, runs, tail),
        headers=headers,
        timeout=_TIMEOUT,
    )
    if response.status_code == 412:
        return 0
    if response.status_code not in (200, 201):
        # The storage client's own mapping: 412 is PreconditionFailed, 503 ServiceUnavailable...
        raise api_exceptions.from_http_response(response)  # type: ignore[no-untyped-call]
    size, stored, generation = _finalised(response)
    if size == sum(len(run) for run in runs) and stored in (None, md5):
        return generation or 1
    if generation is not None:  # only that generation: never another writer's object
        with contextlib.suppress(api_exceptions.NotFound, api_exceptions.PreconditionFailed):
            blob.bucket.blob(blob.name).delete(if_generation_match=generation, retry=None)
    raise api_exceptions.Conflict(  # type: ignore[no-untyped-call]
        f"GCS stored {blob.name} with other bytes than were sent (size or MD5): the object was "
        "deleted; submit again"
    )


def _finalised(response: Any) -> tuple[int | None, str | None, int | None]:
    """The created object's size, MD5 (base64; none for a composite object) and generation,
    each ``None`` where the answer does not say."""
    try:
        resource = response.json()
    except ValueError:
        return None, None, None
    if not isinstance(resource, dict):
        return None, None, None
    md5 = resource.get("md5Hash")
    return (
        _int(resource.get("size")),
        md5 if isinstance(md5, str) else None,
        _int(resource.get("generation")),
    )


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (ValueError, TypeError):
        return None


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
