"""GCS's resumable upload protocol, spoken over the storage client's own authorized session.

A POST with the object's metadata and ``ifGenerationMatch=0`` opens a session (its URL in
``Location``); each chunk is a PUT of a multiple of 256 KiB with ``Content-Range: bytes A-B/*``,
answered 308 and the bytes persisted (``Range: bytes=0-N``); the last states the total and is
answered 200 or 201. After a transient failure a PUT of ``Content-Range: bytes */*`` asks what was
persisted, and the chunk resumes from there: a lost answer never sends a byte twice. A 412 (at
the start or the end) means the object exists. ``_upload.CreateOnlyUpload`` drives a ``Session``;
this module is one of the two that use google-cloud-storage's private API (``client._http``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as api_exceptions

if TYPE_CHECKING:
    import google.cloud.storage as storage

__all__ = ["Chunk", "Session", "after", "check_offset", "create_in_one_request"]

logger = logging.getLogger("vertexbatch")

# A chunk: a view of the bytes handed over whole (a bytearray, never changed once handed over).
# A view, not the bytearray: a body with no ``decode`` is not logged as text by google-auth.
Chunk = bytes | bytearray | memoryview
# What a 308 says GCS holds: "bytes=0-N".
_RANGE = re.compile(r"bytes=0-(\d{1,18})")
_TIMEOUT = 120.0  # seconds a chunk's request may take; the storage client's default is 60


def after(chunk: Chunk, skip: int) -> Chunk:
    """The bytes of ``chunk`` from offset ``skip`` on (what is left after a partial persist),
    without a copy."""
    return memoryview(chunk)[skip:] if skip else chunk


class Session:
    """One resumable upload session: its URL and the bytes GCS has confirmed."""

    def __init__(self, blob: storage.Blob, content_type: str, custom_time: datetime | None) -> None:
        client = blob.client
        # What google-cloud-storage's own uploads use: the client's authorized session (its
        # credentials, or a session handed in), its user agent and extra headers, and its
        # endpoint (mTLS included).
        self._http: Any = client._http
        self._headers: dict[str, str] = {
            "User-Agent": client._connection.user_agent,
            **(getattr(client, "_extra_headers", None) or {}),
        }
        self._blob = blob
        metadata: dict[str, str] = {"name": blob.name, "contentType": content_type}
        if custom_time is not None:
            metadata["customTime"] = _rfc3339(custom_time)
        url, params = _upload_target(blob, "resumable")
        response = self._request(
            "POST",
            url,
            params=params,
            data=json.dumps(metadata),
            headers={
                "Content-Type": "application/json; charset=UTF-8",
                "X-Upload-Content-Type": content_type,
            },
        )
        _raise_for(response, ok=(200, 201))
        self.url: str = response.headers["Location"]
        self.sent = 0  # bytes GCS has confirmed
        self.md5: str | None = None  # base64, once known: what the finalised object must have

    def _request(self, method: str, url: str, **kwargs: Any) -> Any:
        kwargs["headers"] = {**self._headers, **kwargs.get("headers", {})}
        return self._http.request(method, url, timeout=_TIMEOUT, **kwargs)

    def send(self, chunk: Chunk, total: int | None) -> None:
        """Send ``chunk`` (the bytes from ``self.sent`` on); ``total`` if it is the last.

        A 308 that confirms fewer bytes than were sent has the rest sent again at once.
        """
        start = self.sent
        end = start + len(chunk)
        while True:
            before = self.sent
            last = f"{total}" if total is not None else "*"
            span = f"bytes {self.sent}-{end - 1}/{last}" if end > self.sent else f"bytes */{last}"
            body = after(chunk, self.sent - start)
            response = self._request(
                "PUT", self.url, data=body if len(body) else b"", headers={"Content-Range": span}
            )
            if self._settled(response, total):
                return
            check_offset(self._blob.name, self.sent - start, len(chunk))
            if total is None and self.sent == end:
                return
            if self.sent <= before:  # the policy paces and bounds asking again
                raise _NoProgress(f"GCS confirmed no new bytes of {self._blob.name}")

    def resume(self, total: int | None) -> bool:
        """Ask GCS what it persisted (after a failure); ``True`` if the object is complete."""
        response = self._request("PUT", self.url, data=b"", headers={"Content-Range": "bytes */*"})
        return self._settled(response, total)

    def _settled(self, response: Any, total: int | None) -> bool:
        """Record what a chunk's or a status query's answer says; ``True`` when complete."""
        if response.status_code in (200, 201):
            self._check_complete(response, total)
            return True
        if response.status_code == 308:
            confirmed = response.headers.get("Range")  # "bytes=0-N"; absent: nothing yet
            if not confirmed:
                self.sent = 0
                return False
            held = _RANGE.fullmatch(confirmed.strip())
            if held is None:
                raise api_exceptions.Conflict(  # type: ignore[no-untyped-call]
                    f"GCS answered a chunk of {self._blob.name} with an unreadable Range header "
                    f"({confirmed[:40]!r}): the upload cannot go on; submit again"
                )
            self.sent = int(held.group(1)) + 1
            return False
        _raise_for(response, ok=())
        return False  # pragma: no cover  (_raise_for raised)

    def _check_complete(self, response: Any, total: int | None) -> None:
        """A finalised object must hold exactly the bytes sent (their number, and their MD5 when
        the upload took it); else it is deleted, and raised.

        GCS finalises only on the chunk that states the total. fake-gcs-server 1.54 also
        finalises on a status query, with what it has so far: an object short of its bytes,
        which would otherwise stand in for the whole input. The MD5 catches what the size
        cannot: bytes changed on the way, or sent out of order.
        """
        size, md5, generation = _finalised(response)
        if total is not None and size == total and (self.md5 is None or md5 in (None, self.md5)):
            return
        if generation is not None:  # only that generation: never another writer's object
            with contextlib.suppress(api_exceptions.NotFound, api_exceptions.PreconditionFailed):
                self._blob.bucket.blob(self._blob.name).delete(
                    if_generation_match=generation, retry=None
                )
        if size == total:
            what = "other bytes than were sent (its MD5 differs)"
        else:
            what = f"{size} bytes of {total if total is not None else 'more'}"
        raise api_exceptions.Conflict(  # type: ignore[no-untyped-call]
            f"GCS finalised {self._blob.name} with {what}: "
            + ("the object was deleted; " if generation is not None else "")
            + "submit again"
        )

    def cancel(self) -> None:
        """End the session: GCS drops what it holds and creates nothing."""
        self._request("DELETE", self.url)


class _Body:
    """A request body sent as it is held, its pieces one after another (never joined): requests
    sends it with its ``Content-Length``, and each piece goes to the socket as it is."""

    def __init__(self, pieces: list[Chunk]) -> None:
        self._pieces = pieces
        self._length = sum(len(piece) for piece in pieces)

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Any:
        return iter(self._pieces)


def _upload_target(blob: storage.Blob, upload_type: str) -> tuple[str, dict[str, str]]:
    """The URL and query of a create-only upload of ``blob`` (``uploadType`` ``upload_type``),
    as google-cloud-storage's own uploads make them: its endpoint (mTLS included), the bucket's
    user project, and the caller's CMEK key."""
    connection = blob.client._connection
    host = getattr(connection, "get_api_base_url_for_mtls", None)
    hostname = host() if host is not None else connection.API_BASE_URL
    params = {"uploadType": upload_type, "ifGenerationMatch": "0"}
    if blob.user_project is not None:
        params["userProject"] = blob.user_project
    if blob.kms_key_name is not None:  # written with the caller's CMEK key, as the client does
        params["kmsKeyName"] = blob.kms_key_name
    return f"{hostname}/upload/storage/v1{blob.bucket.path}/o", params


def create_in_one_request(blob: storage.Blob, data: Chunk, content_type: str, md5: str) -> int:
    """Create the object from ``data`` (base64 MD5 ``md5``, which GCS checks) in one multipart
    request, create-only; the generation created, 0 if the object exists (412).

    The storage client's own multipart upload joins the metadata and the bytes into one new
    body (a copy of every byte); here they go as they are. An object finalised with other bytes
    than were sent is deleted (that generation only) and raised, as a resumable upload's is.
    """
    client = blob.client
    connection = client._connection
    url, params = _upload_target(blob, "multipart")
    metadata = json.dumps({"name": blob.name, "contentType": content_type, "md5Hash": md5})
    # JSON lines hold no raw CR, so "\r\n--" and the boundary never occur in the bytes.
    boundary = "vertexbatch-part-boundary"
    head = (
        f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n"
        f"--{boundary}\r\nContent-Type: {content_type}\r\n\r\n"
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
        data=_Body([head, memoryview(data), tail]),
        headers=headers,
        timeout=_TIMEOUT,
    )
    if response.status_code == 412:
        return 0
    _raise_for(response, ok=(200, 201))
    size, stored, generation = _finalised(response)
    if size == len(data) and stored in (None, md5):
        return generation or 1
    if generation is not None:  # only that generation: never another writer's object
        with contextlib.suppress(api_exceptions.NotFound, api_exceptions.PreconditionFailed):
            blob.bucket.blob(blob.name).delete(if_generation_match=generation, retry=None)
    raise api_exceptions.Conflict(  # type: ignore[no-untyped-call]
        f"GCS stored {blob.name} with other bytes than were sent (size or MD5): the object was "
        "deleted; submit again"
    )


class _NoProgress(ConnectionError):
    """A chunk answered 308 with nothing more confirmed: transient, retried by the policy."""


def check_offset(name: str, offset: int, size: int) -> None:
    """GCS's confirmed bytes must fall within the chunk being sent: before it, it lost bytes it
    had confirmed (which are no longer held here to send again); past it, it holds bytes that
    were never sent."""
    if not 0 <= offset <= size:
        raise api_exceptions.Conflict(  # type: ignore[no-untyped-call]
            f"GCS confirmed {offset:+d} bytes of {name} from a chunk of {size}: the upload "
            "cannot go on; submit again"
        )


def _raise_for(response: Any, ok: tuple[int, ...]) -> None:
    if response.status_code not in ok:
        # The storage client's own mapping: 412 is PreconditionFailed, 503 ServiceUnavailable...
        raise api_exceptions.from_http_response(response)  # type: ignore[no-untyped-call]


def _finalised(response: Any) -> tuple[int | None, str | None, int | None]:
    """The finalised object's size, MD5 (base64; none for a composite object) and generation,
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
