"""What the tests share: request builders, request files, the examples, small checks."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from click.testing import Result

import vertexbatch as vb
from vertexbatch.emulator import LocalStack

CLAUDE = "claude-opus-5-5@default"
GEMINI = "gemini-3.8-flash"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def claude_request(key: str, text: str, *, max_tokens: int = 64) -> vb.ClaudeRequest:
    """A Claude request of one user turn (directives such as ``[[vb:drop]]`` go in ``text``)."""
    return vb.ClaudeRequest(
        key, {"max_tokens": max_tokens, "messages": [{"role": "user", "content": text}]}
    )


def task(i: int, directive: str = "") -> vb.ClaudeRequest:
    """The Claude request ``key-<i>``: "Task <i>", followed by a directive when given."""
    return claude_request(f"key-{i}", f"Task {i} {directive}".rstrip(), max_tokens=32)


def claude_requests(
    n: int, *, text: str = "Summarise item {i}.", start: int = 0
) -> list[vb.ClaudeRequest]:
    """``n`` small Claude requests with keys ``key-<i>``."""
    return [claude_request(f"key-{i}", text.format(i=i)) for i in range(start, start + n)]


def gemini_requests(n: int, *, text: str = "Classify ticket {i}.") -> list[vb.GeminiRequest]:
    """``n`` small Gemini requests with keys ``key-<i>``."""
    return [vb.GeminiRequest(f"key-{i}", text.format(i=i)) for i in range(n)]


def jobs_in(stack: LocalStack, bucket: str) -> list[dict[str, Any]]:
    """The stack's jobs that read their input from the bucket: the test's own, on a shared stack."""
    return [
        job
        for job in stack.jobs()
        if job["inputConfig"]["gcsSource"]["uris"][0].startswith(f"gs://{bucket}/")
    ]


def request_line(key: str, text: str = "Review this diff.") -> str:
    """One line of a Claude request file, as the command reads it."""
    return json.dumps(
        {"key": key, "params": {"max_tokens": 64, "messages": [{"role": "user", "content": text}]}}
    )


def write_lines(path: Path, lines: list[str]) -> Path:
    """Write the lines as a file, one per line."""
    path.write_text("\n".join(lines) + "\n")
    return path


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write one JSON object per line, as the command and the examples read requests."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def load(name: str) -> ModuleType:
    """Import examples/NAME.py as a module."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def one_error_line(result: Result) -> str:
    """The command wrote exactly one line to stderr, prefixed and without a traceback."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    assert lines[0].startswith("vertexbatch: ")
    return lines[0]


def refuses(endpoint: str) -> bool:
    """Whether nothing listens at http://host:port any more."""
    parts = urlsplit(endpoint)
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((parts.hostname or "", parts.port or 0)) != 0


def free_ports(n: int) -> list[int]:
    """``n`` distinct loopback ports that were free a moment ago."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def fill_cache(
    client: vb.Client, stack: LocalStack, id: str, requests: list[vb.ClaudeRequest]
) -> dict[str, vb.Result]:
    """Submit with cache=True, wait, and read the results to the end (which fills the cache)."""
    job = client.submit_claude(id, CLAUDE, requests, cache=True)
    if not job.name.startswith("cached:"):
        stack.wait_job(job.name)
    return {r.key: r for r in client.results(job)}


def object_names(stack: LocalStack, bucket: str, prefix: str) -> list[str]:
    """The names of the bucket's objects under ``prefix``, sorted."""
    return sorted(b.name for b in stack.storage_client().list_blobs(bucket, prefix=prefix))


def client_with_spans(stack: LocalStack, bucket: str, exporter: Any) -> vb.Client:
    """A client on the stack (prefix "jobs", no retry waits) whose spans go to ``exporter``."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return local_client(stack, bucket, tracer_provider=provider)


def local_client(
    stack: LocalStack,
    bucket: str,
    *,
    storage_endpoint: str | None = None,
    prefix: str = "jobs",
    **options: Any,
) -> vb.Client:
    """A client of the local stack that retries without waiting; its GCS requests go to
    ``storage_endpoint`` (a gate in front of the stack's) when given."""
    return vb.Client.for_endpoints(
        vertex_endpoint=stack.vertex_endpoint,
        storage_endpoint=storage_endpoint or stack.storage_endpoint,
        project=stack.project,
        location=stack.location,
        bucket=bucket,
        prefix=prefix,
        retry=vb.RetryPolicy.no_wait(),
        **options,
    )


def recording_storage_client(
    stack: LocalStack, extra_headers: dict[str, str]
) -> tuple[Any, list[tuple[str, dict[str, str]]]]:
    """A storage client on the stack over a session of its own (as ``storage.Client(_http=...)``
    takes one: credentials, proxies, counting), with ``extra_headers``; and the list where that
    session records each request's method and headers."""
    from google.auth.credentials import AnonymousCredentials
    from google.auth.transport.requests import AuthorizedSession
    from google.cloud import storage

    seen: list[tuple[str, dict[str, str]]] = []

    class Recording(AuthorizedSession):
        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            seen.append((method, dict(kwargs.get("headers") or {})))
            return super().request(method, url, *args, **kwargs)  # type: ignore[no-untyped-call]

    client = storage.Client(
        project=stack.project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": stack.storage_endpoint},
        extra_headers=extra_headers,
        _http=Recording(AnonymousCredentials()),  # type: ignore[no-untyped-call]
    )
    return client, seen
