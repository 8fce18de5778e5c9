"""A byte range of a GCS object in one GET, its body read in one piece and checked.

google-cloud-storage's ``download_as_bytes`` reads a body in 8 KB pieces through urllib3: about
0.25 s of CPU for the 50 ranges of a 200 MB object, where one ``read`` per range takes 0.05 s.
This asks for the same URL through the storage client's own authorized session (its
credentials, endpoint and extra headers, or a session a caller handed in), reads the body in one
``read`` without decoding it, and checks it against ``Content-Range`` and ``Content-Length``: an
answer short of what was asked and of the object's end is never taken for the end of the object.

An object stored with a ``Content-Encoding`` (gzip) is refused: its ranges are slices of the
compressed bytes, which ``download_as_bytes`` decoded into garbage or an error. Any other
answer this does not take (one that ignored the range, or has no length) is left to
``download_as_bytes``, as before. Errors are mapped by ``from_http_response``, the function the
storage client maps its own JSON API errors with, so a status raises the same exception type as
before (404 ``NotFound``, 416 ``RequestRangeNotSatisfiable``, 503 ``ServiceUnavailable``...).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as api_exceptions

from .._errors import InvalidRequestError

if TYPE_CHECKING:
    import google.cloud.storage as storage

__all__ = ["RangeRead", "ShortRange"]

# google-cloud-storage's default timeout for a download (connect and read), in seconds.
_TIMEOUT = 60.0
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


class ShortRange(ConnectionError):
    """An answer to a range read held less than it said, or than was asked, before the object's
    end (a dropped connection, a cut body): transient, like any other network failure."""


class RangeRead:
    """Bytes ``start`` to ``end`` (inclusive) of an object; each call is one attempt at them.

    Call it under a retry policy. An attempt that ends short keeps the bytes it read and raises
    ``ShortRange``, so the next attempt asks for the rest only. Returns the bytes, fewer than
    asked for only where the object ends; ``RequestRangeNotSatisfiable`` when ``start`` is at or
    past the end.
    """

    def __init__(self, blob: storage.Blob, start: int, end: int) -> None:
        self._blob = blob
        self._next = start
        self._end = end
        self._parts: list[bytes] = []

    def __call__(self) -> bytes:
        try:
            answer = _get(self._blob, self._next, self._end)
            if answer is None:  # an answer this path does not take: the library reads it
                data: bytes = self._blob.download_as_bytes(
                    start=self._next, end=self._end, retry=None, checksum=None
                )
                answer = (data, True)
        except api_exceptions.RequestRangeNotSatisfiable:
            if not self._parts:
                raise
            answer = (b"", True)  # an earlier attempt read up to the end of the object
        data, whole = answer
        if data:
            self._parts.append(data)
            self._next += len(data)
        if not whole:
            raise ShortRange(
                f"a range read of gs://{self._blob.bucket.name}/{self._blob.name} stopped at byte "
                f"{self._next:,} of {self._end + 1:,}; the rest is read again"
            )
        return self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)


def _get(blob: storage.Blob, start: int, end: int) -> tuple[bytes, bool] | None:
    """One GET of bytes ``start`` to ``end``: the body and whether it reached ``end`` or the
    object's end, or ``None`` for an answer to leave to ``download_as_bytes``."""
    client = blob.client
    # The URL download_as_bytes asks for: the client's endpoint (mTLS included), the object's
    # quoted path, its generation and user project when the blob has them.
    url = blob._get_download_url(client)
    headers = {
        "User-Agent": client._connection.user_agent,
        # As google-cloud-storage asks: a gzip-encoded object comes as stored, with its
        # Content-Encoding, not transcoded (which ignores the range); it is refused below.
        "Accept-Encoding": "gzip",
        **(getattr(client, "_extra_headers", None) or {}),
        "Range": f"bytes={start}-{end}",
    }
    response: Any = client._http.request("GET", url, headers=headers, stream=True, timeout=_TIMEOUT)
    with response:
        if response.status_code not in (200, 206):
            # Deferred: the clients import google.cloud.exceptions when they are built.
            from google.cloud.exceptions import from_http_response

            raise from_http_response(response)  # type: ignore[no-untyped-call]
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding != "identity":
            # A range of an encoded object is a slice of its compressed bytes: decoded it is
            # garbage or an error (download_as_bytes did that), undecoded it is not the lines.
            raise InvalidRequestError(
                f"gs://{blob.bucket.name}/{blob.name} is stored with Content-Encoding "
                f"{encoding!r}, which a range read cannot decode: vertexbatch reads objects "
                "stored as they are (Vertex writes its output so); copy it without the encoding",
                field="staging",
            )
        span = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
        length = response.headers.get("Content-Length", "")
        if response.status_code != 206 or span is None or not length.isdigit():
            return None
        first, last = int(span[1]), int(span[2])
        if first != start or last > end or int(length) != last - first + 1:
            raise ShortRange(
                f"a range read of gs://{blob.bucket.name}/{blob.name} asked for bytes "
                f"{start}-{end} and was answered {span[0]!r} in {length} bytes"
            )
        try:
            data: bytes = response.raw.read(int(length), decode_content=False)
        except Exception as exc:
            # urllib3's errors (a dropped connection, a read timeout) are not requests' here:
            # the body is read below requests, so they are turned into a network failure.
            import urllib3

            if isinstance(exc, urllib3.exceptions.HTTPError):
                raise ShortRange(
                    f"a range read of gs://{blob.bucket.name}/{blob.name} failed in its body at "
                    f"byte {start:,} ({type(exc).__name__}); it is read again"
                ) from exc
            raise
        total = None if span[3] == "*" else int(span[3])
        whole = len(data) == int(length) and (last == end or last + 1 == total)
        return data, whole
