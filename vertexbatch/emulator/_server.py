"""The Vertex AI REST surface on loopback: routing, faults, call counts and the HTTP plumbing.

Routes (under `/v1/` and `/v1beta1/`, `$alt` ignored, enums always strings):

    POST   projects/{p}/locations/{l}/batchPredictionJobs             create
    GET    projects/{p}/locations/{l}/batchPredictionJobs             list (filter, paging)
    GET    projects/{p}/locations/{l}/batchPredictionJobs/{id}        get
    DELETE projects/{p}/locations/{l}/batchPredictionJobs/{id}        delete
    POST   projects/{p}/locations/{l}/batchPredictionJobs/{id}:cancel cancel
    GET    projects/{p}/locations/{l}/operations/{id}                 getOperation (of a delete)
    GET    projects/{p}/locations/{l}/operations                      listOperations
    POST   projects/{p}/locations/{l}/operations/{id}:wait            waitOperation
           (the operations also under /ui/, where aiplatform_v1's REST transport asks)
    POST   projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent  (online Gemini;
           its price tier asked by the X-Vertex-AI-LLM-Shared-Request-Type header: `_tiers`)
    POST   projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict    (online Claude)
    POST   batchPredictionJobs  (?parent=projects/{p}/locations/{l})   create (express form)
    GET    batchPredictionJobs  (?parent=...)                          list (express form)
    GET    batchPredictionJobs/{id}                                    get (express form)
    GET    publishers/{pub}/models/{m}                                 getPublisherModel
    GET    /v3/projects/{p}  (Resource Manager, no version prefix)     getProject
    POST   /v3/projects/{p}:testIamPermissions                         testIamPermissions
    POST   .../publishers/google/models/{m}:countTokens                     (see `_count_tokens`)
    POST   .../publishers/anthropic/models/count-tokens:rawPredict          (see `_count_tokens`)

`{p}` is the stack's project id or any project number. Errors use the Google envelope with no
`details`. Request and response content never reaches a log line.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from vertexbatch.emulator._count_tokens import COUNT_OPS, COUNT_ROUTES, count_tokens
from vertexbatch.emulator._create import (
    check_fields,
    check_query,
    express_parent,
    not_emulated,
    read_mask,
)
from vertexbatch.emulator._errors import ApiError, LineFailure, bad_request, envelope
from vertexbatch.emulator._jobs import JobStore
from vertexbatch.emulator._media import read_media
from vertexbatch.emulator._model import answer_claude, answer_gemini
from vertexbatch.emulator._operations import Operations
from vertexbatch.emulator._publishers import held_permissions, project_resource, publisher_model
from vertexbatch.emulator._runner import object_fingerprint
from vertexbatch.emulator._spec import parse_create_body
from vertexbatch.emulator._tiers import HEADER as TIER_HEADER
from vertexbatch.emulator._tiers import traffic_type

if TYPE_CHECKING:
    from google.cloud import storage

__all__ = ["RestServer", "Service"]

logger = logging.getLogger("vertexbatch.emulator")

_PREFIX = r"^/(?P<version>v1|v1beta1)/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/"
_MODEL = r"publishers/(?P<pub>[^/]+)/models/(?P<model>[^/:]+)"
# The top-level `batchPredictionJobs` collection of Vertex's v1 API: no project or location in
# the path, which google-genai calls in express mode (`_create.express_parent`).
_EXPRESS = r"^/(?P<version>v1|v1beta1)/"
# Operations also under /ui/: aiplatform_v1's REST transport asks there for every
# google.longrunning call (get_operation, list_operations, wait_operation, an LRO's result()).
_OPERATIONS = _PREFIX.replace("v1|v1beta1", "v1|v1beta1|ui")
_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    *COUNT_ROUTES,  # first: Claude's count-tokens:rawPredict would match rawPredict
    ("POST", re.compile(_PREFIX + r"batchPredictionJobs$"), "create"),
    ("GET", re.compile(_PREFIX + r"batchPredictionJobs$"), "list"),
    ("GET", re.compile(_PREFIX + r"batchPredictionJobs/(?P<id>[^/:]+)$"), "get"),
    ("DELETE", re.compile(_PREFIX + r"batchPredictionJobs/(?P<id>[^/:]+)$"), "delete"),
    ("POST", re.compile(_PREFIX + r"batchPredictionJobs/(?P<id>[^/:]+):cancel$"), "cancel"),
    # The collection without a project or location (Vertex's express-mode form, `_EXPRESS`).
    ("POST", re.compile(_EXPRESS + r"batchPredictionJobs$"), "create"),
    ("GET", re.compile(_EXPRESS + r"batchPredictionJobs$"), "list"),
    ("GET", re.compile(_EXPRESS + r"batchPredictionJobs/(?P<id>[^/:]+)$"), "get"),
    ("GET", re.compile(_OPERATIONS + r"operations/(?P<id>[^/:]+)$"), "getOperation"),
    ("GET", re.compile(_OPERATIONS + r"operations$"), "listOperations"),
    ("POST", re.compile(_OPERATIONS + r"operations/(?P<id>[^/:]+):wait$"), "waitOperation"),
    (
        "POST",
        re.compile(
            _PREFIX + r"publishers/(?P<pub>[^/]+)/models/(?P<model>[^/:]+):generateContent$"
        ),
        "generateContent",
    ),
    (
        "POST",
        re.compile(_PREFIX + _MODEL + r":rawPredict$"),
        "rawPredict",
    ),
    ("GET", re.compile(r"^/(?P<version>v1|v1beta1)/" + _MODEL + "$"), "getPublisherModel"),
    ("GET", re.compile(r"^/v3/projects/(?P<project>[^/:]+)$"), "getProject"),
    (
        "POST",
        re.compile(r"^/v3/projects/(?P<project>[^/:]+):testIamPermissions$"),
        "testIamPermissions",
    ),
]
_PERMISSIONS = {
    "create": "create",
    "list": "list",
    "get": "get",
    "delete": "delete",
    "cancel": "cancel",
    "getOperation": "get",
    "listOperations": "list",
    "waitOperation": "get",
    "generateContent": "predict",
    "rawPredict": "predict",
    "getPublisherModel": "get",
    "getProject": "get",
    "testIamPermissions": "get",
    **{op: "predict" for op in COUNT_OPS},
}


# The online operations whose request bodies are kept (``Service.received``), and how many of
# each: enough for a test's calls, bounded for a stack left running.
_ONLINE = ("rawPredict", "generateContent")
_RECEIVED = 10_000


def _json_body(body: bytes, *, required: bool) -> Any:
    if not body.strip():
        if required:
            raise ApiError(400, "Invalid JSON payload received. Empty body.", "INVALID_ARGUMENT")
        return {}
    try:
        return json.loads(body)
    except ValueError:
        raise ApiError(
            400, "Invalid JSON payload received. Unexpected token.", "INVALID_ARGUMENT"
        ) from None


class Service:
    """Routes one REST call to the job store, applying faults and counting calls."""

    def __init__(
        self,
        store: JobStore,
        storage: Callable[[], storage.Client] | None = None,
        location: str = "us-central1",
    ) -> None:
        self.store = store
        self.location = location  # where a call of the express form without `parent` goes
        self._storage = storage  # reads an online Gemini call's fileData objects
        self._lock = threading.Lock()
        self._calls: Counter[str] = Counter()
        self.operations = Operations(store.project_number)
        self._received: dict[str, deque[Any]] = {op: deque(maxlen=_RECEIVED) for op in _ONLINE}

    def _fingerprint(self, bucket: str, name: str) -> str | None:
        assert self._storage is not None
        client = self._storage()
        try:
            return object_fingerprint(client, bucket, name)
        finally:
            client.close()

    def calls(self) -> Counter[str]:
        """A copy of the call counts by operation."""
        with self._lock:
            return Counter(self._calls)

    def reset_calls(self) -> None:
        """Forget the call counts and the online bodies received."""
        with self._lock:
            self._calls.clear()
            for bodies in self._received.values():
                bodies.clear()

    def received(self, op: str) -> list[Any]:
        """The JSON bodies of the last online calls of op served (``rawPredict`` or
        ``generateContent``), in arrival order; at most ``_RECEIVED`` are kept."""
        if op not in _ONLINE:
            raise ValueError(f"op must be one of {sorted(_ONLINE)}")
        with self._lock:
            return [json.loads(body) for body in self._received[op]]

    def handle(
        self, method: str, target: str, body: bytes, tier: str | None = None
    ) -> tuple[int, dict[str, Any], str]:
        """Answer one call: (HTTP status, JSON body, operation name or "" when unrouted).
        ``tier``: the call's ``X-Vertex-AI-LLM-Shared-Request-Type`` header (``_tiers``)."""
        parts = urlsplit(target)
        path = unquote(parts.path)
        found = next(
            (
                (op, m)
                for verb, pattern, op in _ROUTES
                if verb == method and (m := pattern.match(path))
            ),
            None,
        )
        if found is None:
            return 404, envelope(404, "The requested URL was not found on this server."), ""
        op, match = found
        with self._lock:
            self._calls[op] += 1
            if op in _ONLINE:  # kept as text: the caller gets copies, never the server's own
                with contextlib.suppress(ValueError):
                    self._received[op].append(json.dumps(json.loads(body)))
        faults = self.store.faults
        pause = faults.delay_of(op)
        if pause:
            time.sleep(pause)
        dropped = ApiError(503, f"Injected fault: the {op} call was dropped while held.")
        if not faults.pass_block(op, "before"):
            return dropped.code, dropped.body(), op
        try:
            status = faults.take_before(op)
            if status is not None:
                raise ApiError(status, f"Injected fault: {op} failed with HTTP {status}.")
            payload = self._dispatch(op, match.groupdict(), parse_qs(parts.query), body, tier)
        except ApiError as exc:
            return exc.code, exc.body(), op
        if not faults.pass_block(op, "after"):
            return dropped.code, dropped.body(), op
        status = faults.take_after(op)
        if status is not None:
            error = ApiError(status, f"Injected fault: the {op} response was lost (HTTP {status}).")
            return error.code, error.body(), op
        return 200, payload, op

    def _dispatch(
        self,
        op: str,
        params: dict[str, str],
        query: dict[str, list[str]],
        body: bytes,
        tier: str | None = None,
    ) -> dict[str, Any]:
        store = self.store
        if op == "getPublisherModel":  # doctor's lookups: no project or location in the path
            return publisher_model(store.catalogue, params["pub"], params["model"])
        if op == "getProject":
            return project_resource(store.project, store.project_number, params["project"])
        if op == "testIamPermissions":
            request = _json_body(body, required=True)
            denied = store.faults.denied()
            return held_permissions(
                store.project, store.project_number, params["project"], request, denied
            )
        if "project" not in params:  # the express form: the parent is a query parameter
            parent = query.pop("parent", [""])[0]
            params.update(express_parent(parent, store.project, self.location))
        project, location = params["project"], params["location"]
        if project != store.project and not project.isdigit():
            raise ApiError(
                403,
                f"Permission 'aiplatform.batchPredictionJobs.{_PERMISSIONS[op]}' denied on "
                f"resource '//aiplatform.googleapis.com/projects/{project}/locations/{location}' "
                "(or it may not exist).",
                "PERMISSION_DENIED",
            )
        store.locations.check(location)
        check_query(op, query)
        job_id = params.get("id", "")
        if op in ("get", "delete", "cancel") and not job_id.isdigit():
            raise ApiError(400, "The batch prediction job id must be a number.", "INVALID_ARGUMENT")
        if op == "create":
            request = _json_body(body, required=True)
            check_fields(request, params["version"])
            held = store.catalogue.holds
            sentence = not_emulated(request, held) if isinstance(request, dict) else None
            if sentence is not None:
                raise bad_request(sentence)
            spec = parse_create_body(
                request,
                project=store.project,
                project_number=store.project_number,
                location=location,
                catalogue=store.catalogue,
            )
            refused = store.faults.refusal(spec.kms_key_name, spec.service_account)
            if refused is not None:
                raise ApiError(refused[0], refused[2], refused[1])
            return store.create(location, spec)
        if op == "list":
            size_text = (query.get("pageSize") or query.get("page_size") or ["0"])[0]
            if not size_text.lstrip("-").isdigit():
                raise ApiError(400, "page_size must be an integer.", "INVALID_ARGUMENT")
            return store.list_jobs(
                location,
                (query.get("filter") or [""])[0],
                int(size_text),
                (query.get("pageToken") or query.get("page_token") or [""])[0],
                read_mask(
                    (query.get("readMask") or query.get("read_mask") or [""])[0],
                    params["version"],
                ),
            )
        if op == "get":
            return store.get(location, job_id)
        if op == "cancel":
            _json_body(body, required=False)
            return store.cancel(location, job_id)
        if op == "delete":
            store.delete(location, job_id)
            seconds = store.timing.delete_seconds
            return self.operations.start_delete(location, params["version"], seconds)
        if op == "getOperation":
            return self.operations.get(location, job_id)
        if op == "waitOperation":
            return self.operations.wait(location, job_id, _json_body(body, required=False))
        if op == "listOperations":
            return self.operations.list(location)
        if op in COUNT_OPS:
            request = _json_body(body, required=True)
            return count_tokens(op, params, request, store.catalogue, store.project_number)
        return self._online(op, params, _json_body(body, required=True), tier)

    def _online(
        self, op: str, params: dict[str, str], request: Any, tier: str | None = None
    ) -> dict[str, Any]:
        publisher, model = params["pub"], params["model"]
        if (op, publisher) not in (("generateContent", "google"), ("rawPredict", "anthropic")):
            raise ApiError(
                404,
                f"The PublisherModel projects/{self.store.project_number}/locations/"
                f"{params['location']}/publishers/{publisher}/models/{model} does not exist.",
                "NOT_FOUND",
            )
        self.store.catalogue.check(self.store.project_number, params["location"], publisher, model)
        traffic = ""
        if op == "generateContent":
            traffic = traffic_type(tier, params["location"])  # refused before it is answered
            media = read_media(request, self._fingerprint) if self._storage is not None else ()
            if isinstance(media, LineFailure):
                raise ApiError(media.code, media.message)
            answer = answer_gemini(request, model, datetime.now(UTC), media=media)
        else:
            answer = answer_claude(request, model)
        if answer.dropped:
            raise ApiError(504, "Deadline exceeded.", "DEADLINE_EXCEEDED")
        if answer.error is not None:
            raise ApiError(answer.error.code, answer.error.message)
        assert answer.response is not None
        usage = answer.response.get("usageMetadata")
        if traffic and isinstance(usage, dict):
            usage["trafficType"] = traffic
        return answer.response


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes; with Nagle on, each call waits ~40 ms.
    disable_nagle_algorithm = True
    server: RestServer

    def _handle(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
            tier = self.headers.get(TIER_HEADER)
            status, payload, op = self.server.service.handle(self.command, self.path, body, tier)
        except Exception as exc:
            logger.error("internal error (%s)", type(exc).__name__)
            status, payload, op = 500, envelope(500, "Internal error encountered."), ""
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        logger.debug("%s %s -> %d", self.command, op or "unrouted", status)

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _handle

    def log_message(self, format: str, *args: Any) -> None:
        """Silence http.server's access log: it would carry paths and queries."""


class RestServer(ThreadingHTTPServer):
    """The REST service on 127.0.0.1 and `port` (0: a free one); `close` also drops open
    connections."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, service: Service, port: int = 0) -> None:
        self.service = service
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer is not worth a traceback on stderr."""
        kind = sys.exc_info()[0]
        logger.debug("connection error (%s)", kind.__name__ if kind is not None else "unknown")

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def start(self) -> None:
        """Serve on a daemon thread."""
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name="vb-rest", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving, close the listening socket and every open connection."""
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.server_close()
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
