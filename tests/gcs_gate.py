"""A loopback HTTP gate in front of fake-gcs-server that answers some GCS calls its own way.

fake-gcs-server has no IAM: it never refuses a caller. Real GCS refuses the bucket metadata GET
(``storage.buckets.get``) to a caller who holds only object roles such as
``roles/storage.objectAdmin``, while every object call succeeds. ``deny_bucket_metadata``
reproduces that over real HTTP, so the real ``google-cloud-storage`` client sees GCS's own 403
answer; every other request is forwarded unchanged.

``gate`` takes a script that sees each request and may answer it with a status, or forward it
and spoil the answer as a network or a proxy can: a connection dropped mid-body, a body and
``Content-Range`` cut short, a header changed. ``body_gate`` is the same with a script that sees
the request's body too (a one-request upload names its object in the body only).
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "Held",
    "Planting",
    "Spoil",
    "body_gate",
    "deny_bucket_metadata",
    "gate",
    "hold_write",
    "refusing_writes",
]

_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "host", "content-length"})
# The bucket resource itself (GET storage/v1/b/NAME), not its objects, IAM policy or uploads.
_BUCKET_GET = re.compile(r"^/storage/v1/b/[^/?]+/?(\?.*)?$")


@dataclass(frozen=True)
class Spoil:
    """What the gate does with one request instead of forwarding it unchanged.

    Attributes:
        status: answer this status with a GCS JSON error body, without forwarding.
        cut: forward, then send the answer's headers and only this many bytes of its body and
            close the connection (the client was promised the whole ``Content-Length``).
        shorten: forward, then send a 206's first this many bytes as a whole answer, with its
            ``Content-Range`` and ``Content-Length`` saying so.
        headers: forward, then set these headers on the answer.
        message: with ``status``, the error body's message (and reason ``notFound`` for a
            404), as GCS words it; by default the gate's own.
    """

    status: int | None = None
    cut: int | None = None
    shorten: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    message: str | None = None


Script = Callable[[str, str, Message], Spoil | None]
"""Sees a request's method, path and headers; returns how to spoil it, or ``None``."""
BodyScript = Callable[[str, str, Message, bytes], Spoil | None]
"""A ``Script`` that sees the request's body too."""


def _handler(upstream: str, script: BodyScript) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(upstream)

    class Gate(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: the test's output is the client's

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            spoil = script(self.command, self.path, self.headers, body)
            if spoil is not None and spoil.status is not None:
                self._answer(spoil.status, {"Content-Type": "application/json"}, _error(spoil))
                return
            connection = http.client.HTTPConnection(target.hostname or "", target.port, timeout=60)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                connection.request(self.command, self.path, body=body or None, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                kept = {k: v for k, v in answer.getheaders() if k.lower() not in _HOP}
            finally:
                connection.close()
            if spoil is None:
                self._answer(answer.status, kept, data)
                return
            kept.update(spoil.headers)
            if spoil.shorten is not None and answer.status == 206:
                first, _, total = kept["Content-Range"].removeprefix("bytes ").partition("/")
                start = int(first.partition("-")[0])
                data = data[: spoil.shorten]
                kept["Content-Range"] = f"bytes {start}-{start + len(data) - 1}/{total}"
            self._answer(answer.status, kept, data, send=spoil.cut)

        def _answer(
            self, status: int, headers: dict[str, str], data: bytes, send: int | None = None
        ) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data if send is None else data[:send])
            if send is not None:
                self.wfile.flush()
                self.close_connection = True  # the rest of the promised body never comes

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    return Gate


_FORBIDDEN = (
    "caller@example.com does not have storage.buckets.get access to the Google Cloud "
    "Storage bucket. Permission 'storage.buckets.get' denied on resource (or it may not "
    "exist)."
)


def _error(spoil: Spoil) -> bytes:
    code = spoil.status or 500
    message = _FORBIDDEN if code == 403 else f"the gate answered {code}"
    reason = "forbidden" if code == 403 else "notFound" if code == 404 else "backendError"
    message = spoil.message or message
    error = {"code": code, "message": message, "errors": [{"reason": reason}]}
    return json.dumps({"error": error}).encode("utf-8")


def _deny_bucket_get(method: str, path: str, headers: Message) -> Spoil | None:
    return Spoil(status=403) if method == "GET" and _BUCKET_GET.match(path) else None


@contextmanager
def deny_bucket_metadata(upstream: str) -> Iterator[str]:
    """A gate in front of ``upstream`` that refuses bucket metadata GETs; yields its URL."""
    with gate(upstream, _deny_bucket_get) as url:
        yield url


@contextmanager
def gate(upstream: str, script: Script) -> Iterator[str]:
    """A gate in front of ``upstream`` that spoils what ``script`` says; yields its URL."""
    with body_gate(
        upstream, lambda method, path, headers, body: script(method, path, headers)
    ) as url:
        yield url


@contextmanager
def body_gate(upstream: str, script: BodyScript) -> Iterator[str]:
    """``gate`` with a script that sees each request's body too; yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream, script))
    thread = threading.Thread(target=server.serve_forever, name="gcs-gate", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Held:
    """What ``hold_write`` holds: ``url`` to point a client at, ``held`` set once the write is
    held (the request has reached GCS's door and gone no further)."""

    url: str
    held: threading.Event


@contextmanager
def hold_write(upstream: str, name: str) -> Iterator[Held]:
    """A gate that holds the first request creating an object whose name ends with ``name``
    (a one-request upload or a resumable session's start: both name it in their body), and
    never forwards it: once the gate closes it is answered 503. A test kills the process that
    made the request while it is held: that process dies just before the object is written.
    Every other request is forwarded unchanged."""
    held, closing = threading.Event(), threading.Event()

    def script(method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        if (
            method == "POST"
            and path.startswith("/upload/")
            and not held.is_set()
            and _names_ending(body, name.encode())
        ):
            held.set()
            closing.wait(300)
            return Spoil(status=503)
        return None

    with body_gate(upstream, script) as url:
        try:
            yield Held(url, held)
        finally:
            closing.set()


def _names_ending(body: bytes, suffix: bytes) -> bool:
    """Whether the upload's JSON metadata names an object ending with ``suffix`` (the
    ``"name"`` field, in a multipart body's first part or a resumable start's whole body)."""
    return re.search(rb'"name":\s*"[^"]*' + re.escape(suffix), body) is not None


def refusing_writes(fragment: str, status: int = 403) -> BodyScript:
    """A ``body_gate`` script that answers ``status`` (403: no ``storage.objects.create``) to
    every upload of an object whose name holds ``fragment``, as GCS refuses a caller without
    the permission on those names; everything else is forwarded."""
    pattern = re.compile(rb'"name":\s*"[^"]*' + re.escape(fragment.encode()))

    def script(method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        if method == "POST" and path.startswith("/upload/") and pattern.search(body):
            return Spoil(status=status)
        return None

    return script


_NAME = re.compile(rb'"name":\s*"([^"]*)"')


class Planting:
    """A ``body_gate`` script that, at the first upload of an object whose name holds
    ``fragment``, first creates that object upstream with ``other`` bytes (through ``bucket``,
    a client of the server itself), as a writer racing the caller would have just before, then
    forwards the upload. It records every upload request: ``uploads`` holds the ``uploadType``
    and object name of each POST to ``/upload/`` (a resumable session's chunks are PUTs, counted
    in ``chunks``); ``planted`` is the name it created, once it has."""

    def __init__(self, bucket: Any, fragment: str, other: bytes) -> None:
        self._bucket = bucket
        self._fragment = fragment
        self._other = other
        self._lock = threading.Lock()
        self.uploads: list[tuple[str, str]] = []
        self.chunks = 0
        self.planted: str | None = None

    def __call__(self, method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        url = urlsplit(path)
        if method == "PUT" and url.path.startswith("/upload/"):
            with self._lock:
                self.chunks += 1
        if method != "POST" or not url.path.startswith("/upload/"):
            return None
        found = _NAME.search(body)
        name = found.group(1).decode() if found else "?"
        with self._lock:
            self.uploads.append((parse_qs(url.query).get("uploadType", ["?"])[0], name))
            if self.planted is None and self._fragment in name:
                self.planted = name
                self._bucket.blob(name).upload_from_string(self._other)
        return None

    def kinds(self, fragment: str) -> list[str]:
        """The ``uploadType`` of each upload of an object whose name holds ``fragment``."""
        return [kind for kind, name in self.uploads if fragment in name]
