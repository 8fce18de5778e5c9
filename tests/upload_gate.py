"""A loopback gate in front of fake-gcs-server that speaks GCS's resumable upload protocol where
the server does not, and fails chosen chunk requests the ways a network does.

fake-gcs-server 1.54 appends every chunk it is sent whatever its ``Content-Range`` says (a chunk
sent twice is stored twice), answers a status query (``Content-Range: bytes */*``) by
finalising the object with what it has, and never enforces ``ifGenerationMatch`` on resumable
uploads. Real GCS does none of that. The gate keeps, per session, the bytes the server has
confirmed; it answers status queries from that record as GCS does, refuses (and records) a chunk
that does not start where the last confirmed one ended, and applies a plan of faults to the
n-th chunk request it sees:

- ``drop``: answer 503 without forwarding (the server never saw it);
- ``lose``: forward it, then answer 503 (the server has it; the answer was lost);
- ``partial``: forward its first 256 KiB only and answer 308 with that range (GCS may persist
  part of a chunk);
- ``exists``: answer 412, as GCS does when the object was created meanwhile;
- ``corrupt``: forward it with its last byte changed (the size stays right);
- ``stall``: answer 308 confirming nothing new, without forwarding (a server making no progress);
- ``forget``: answer 503, and from then on confirm 256 KiB less than the server holds (GCS
  losing bytes it had confirmed).

- ``refuse``: answer 403 (a failure no retry mends);
- ``garble``: forward it, then answer 308 with an unreadable ``Range`` header;
- ``unfinal``: forward a last chunk as if it were not the last, and answer 308 confirming all of
  its bytes (the object is not created yet).

``stall_from=N`` stalls every chunk request from the N-th on.

``hold=N`` keeps the N-th chunk request (before forwarding it) until ``release`` is set;
``holding`` is set once it is held: the chunk is in flight for as long as the test wants.

``initiate="exists"`` answers the session's POST 412, as GCS does for an object that exists.
``forward_status=True`` lets status queries through, to show what fake-gcs-server does then.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

__all__ = ["Gate", "upload_gate"]

_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "host", "content-length"})
_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")
_QUARTER_MIB = 256 * 1024
# Faults answered without forwarding the chunk: the status and reason GCS would give.
_ANSWERED = {
    "drop": (503, "backendError"),
    "exists": (412, "conditionNotMet"),
    "refuse": (403, "forbidden"),
}


@dataclass
class Gate:
    url: str = ""
    faults: dict[int, str] = field(default_factory=dict)  # n-th chunk request (from 1): fault
    initiate: str = ""
    stall_from: int = 0
    forward_status: bool = False
    hold: int = 0
    holding: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    chunks: int = 0  # chunk requests seen (status queries not counted)
    status_queries: int = 0
    cancels: int = 0
    violations: list[str] = field(default_factory=list)  # chunks that did not start in place
    confirmed: dict[str, int] = field(default_factory=dict)  # per upload id
    finished: dict[str, bytes] = field(default_factory=dict)  # per upload id: the object's JSON
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(upstream: str, gate: Gate) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _forward(
            self, body: bytes, headers: dict[str, str] | None = None
        ) -> tuple[int, dict[str, str], bytes]:
            connection = http.client.HTTPConnection(target.hostname or "", target.port, timeout=60)
            try:
                sent = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                sent.update(headers or {})
                connection.request(self.command, self.path, body=body or None, headers=sent)
                answer = connection.getresponse()
                data = answer.read()
                kept = {k: v for k, v in answer.getheaders() if k.lower() not in _HOP}
                return answer.status, kept, data
            finally:
                connection.close()

        def _answer(self, status: int, headers: dict[str, str], data: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            query = parse_qs(urlsplit(self.path).query)
            upload_id = (query.get("upload_id") or [""])[0]
            if self.command == "POST" and query.get("uploadType") == ["resumable"]:
                self._initiate(body)
            elif self.command == "PUT" and upload_id:
                self._chunk(upload_id, body)
            else:
                if self.command == "DELETE" and upload_id:
                    gate.cancels += 1
                self._answer(*self._forward(body))

        def _initiate(self, body: bytes) -> None:
            if gate.initiate == "exists":
                self._answer(412, {}, _error(412, "conditionNotMet"))
                return
            status, headers, data = self._forward(body)
            if "Location" in headers:  # chunks must come through the gate too
                headers["Location"] = headers["Location"].replace(upstream, gate.url)
            self._answer(status, headers, data)

        def _chunk(self, upload_id: str, body: bytes) -> None:
            span = self.headers.get("Content-Range", "")
            with gate.lock:
                confirmed = gate.confirmed.get(upload_id, 0)
                if span == "bytes */*" and not body:
                    gate.status_queries += 1
                    if not gate.forward_status:
                        self._status(upload_id, confirmed)
                        return
                    self._answer(*self._forward(body))
                    return
                gate.chunks += 1
                fault = gate.faults.get(gate.chunks, "")
                if gate.stall_from and gate.chunks >= gate.stall_from:
                    fault = "stall"
                held = gate.hold == gate.chunks
            if held:
                gate.holding.set()
                if not gate.release.wait(60):
                    self._answer(503, {}, _error(503, "backendError"))
                    return
            match = _RANGE.match(span)
            total = span.rpartition("/")[2]
            if match is None and not (span.startswith("bytes */") and not body):
                gate.violations.append(f"unreadable Content-Range {span!r}")
                self._answer(400, {}, _error(400, "badRequest"))
                return
            start = int(match.group(1)) if match else confirmed
            if start != confirmed:
                gate.violations.append(f"chunk at {start}, but {confirmed} bytes were confirmed")
                self._answer(400, {}, _error(400, "badRequest"))
                return
            if fault in _ANSWERED:
                code, reason = _ANSWERED[fault]
                self._answer(code, {}, _error(code, reason))
                return
            if fault == "stall":
                self._status(upload_id, confirmed)
                return
            if fault == "forget":
                with gate.lock:
                    gate.confirmed[upload_id] = max(0, confirmed - _QUARTER_MIB)
                self._answer(503, {}, _error(503, "backendError"))
                return
            if fault == "corrupt" and body:
                body = body[:-1] + bytes([body[-1] ^ 1])
            if fault == "unfinal" and total != "*":
                span = f"bytes {start}-{start + len(body) - 1}/*"
            if fault == "partial" and len(body) > _QUARTER_MIB:
                body = body[:_QUARTER_MIB]
                span = f"bytes {start}-{start + _QUARTER_MIB - 1}/*"
            status, headers, data = self._forward(body, {"Content-Range": span})
            with gate.lock:
                if status == 308:
                    confirmed = start + len(body)
                    gate.confirmed[upload_id] = confirmed
                    headers["Range"] = f"bytes=0-{confirmed - 1}"
                elif status in (200, 201):
                    gate.confirmed[upload_id] = int(total) if total != "*" else confirmed
                    gate.finished[upload_id] = data
            if fault == "garble":
                self._answer(308, {"Range": "bytes=zero-many"}, b"")
                return
            if fault == "lose":
                self._answer(503, {}, _error(503, "backendError"))
                return
            self._answer(status, headers, data)

        def _status(self, upload_id: str, confirmed: int) -> None:
            """What GCS answers a status query: the object if complete, else what it holds."""
            if upload_id in gate.finished:
                self._answer(200, {"Content-Type": "application/json"}, gate.finished[upload_id])
            elif confirmed:
                self._answer(308, {"Range": f"bytes=0-{confirmed - 1}"}, b"")
            else:
                self._answer(308, {}, b"")

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    return Handler


def _error(code: int, reason: str) -> bytes:
    error = {"code": code, "message": reason, "errors": [{"reason": reason}]}
    return json.dumps({"error": error}).encode("utf-8")


@contextmanager
def upload_gate(upstream: str, gate: Gate) -> Iterator[Gate]:
    """Serve ``gate`` in front of ``upstream``; ``gate.url`` is where to point the client."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream, gate))
    gate.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="upload-gate", daemon=True)
    thread.start()
    try:
        yield gate
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
