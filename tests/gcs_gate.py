"""A loopback HTTP gate in front of fake-gcs-server that answers some GCS calls 403.

fake-gcs-server has no IAM: it never refuses a caller. Real GCS refuses the bucket metadata GET
(``storage.buckets.get``) to a caller who holds only object roles such as
``roles/storage.objectAdmin``, while every object call succeeds. The gate reproduces that over
real HTTP, so the real ``google-cloud-storage`` client sees GCS's own 403 answer; every other
request is forwarded unchanged.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["deny_bucket_metadata"]

_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "host", "content-length"})
# The bucket resource itself (GET storage/v1/b/NAME), not its objects, IAM policy or uploads.
_BUCKET_GET = re.compile(r"^/storage/v1/b/[^/?]+/?(\?.*)?$")


def _handler(upstream: str) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(upstream)

    class Gate(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: the test's output is the client's

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.command == "GET" and _BUCKET_GET.match(self.path):
                self._answer(403, {}, _forbidden())
                return
            connection = http.client.HTTPConnection(target.hostname or "", target.port, timeout=60)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                connection.request(self.command, self.path, body=body or None, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                kept = {k: v for k, v in answer.getheaders() if k.lower() not in _HOP}
                self._answer(answer.status, kept, data)
            finally:
                connection.close()

        def _answer(self, status: int, headers: dict[str, str], data: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    return Gate


def _forbidden() -> bytes:
    message = (
        "caller@example.com does not have storage.buckets.get access to the Google Cloud "
        "Storage bucket. Permission 'storage.buckets.get' denied on resource (or it may not "
        "exist)."
    )
    error = {"code": 403, "message": message, "errors": [{"reason": "forbidden"}]}
    return json.dumps({"error": error}).encode("utf-8")


@contextmanager
def deny_bucket_metadata(upstream: str) -> Iterator[str]:
    """A gate in front of ``upstream`` that refuses bucket metadata GETs; yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream))
    thread = threading.Thread(target=server.serve_forever, name="gcs-gate", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
