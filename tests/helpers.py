"""What the tests share: request builders, request files, the examples, small checks."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import socket
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from multiprocessing.context import ForkServerContext
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from click.testing import Result

import vertexbatch as vb
from vertexbatch.emulator import JobOptions, LocalStack

CLAUDE = "claude-opus-5-5@default"
GEMINI = "gemini-3.8-flash"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# How deep property tests draw (conftest.py sets it from the run, the one knob): "deep"
# (`pytest --deep`, a scheduled run) draws each test's full count, "default" (the test command)
# a tenth of it, "fast" (`pytest -m fast`, every edit) a fiftieth: the same properties, checked
# on fewer examples. A test's own count is what it draws when deep.
PROFILE = "default"
_DRAWS = {"deep": (1, 0), "default": (10, 10), "fast": (50, 5)}  # (a share of n, the least)


def run_docs_example(stack: LocalStack, bucket: str, name: str) -> str:
    """What ``docs/examples/NAME`` prints run as ``python FILE`` with the stack's environment
    (asserting it exits 0, with its stderr's tail if not)."""
    script = Path(__file__).resolve().parents[1] / "docs" / "examples" / name
    env = {**os.environ, **stack.environment(bucket)}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=110
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def local_credentials(folder: Path) -> Path:
    """A credentials file whose token never expires (no refresh is tried), for the Google
    clients a test starts in another process or points at the stack by environment."""
    path = folder / "credentials.json"
    path.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "local",
                "client_secret": "local",
                "refresh_token": "local",
                "token": "local-token",
                "expiry": "2099-01-01T00:00:00Z",
            }
        )
    )
    return path


def examples(n: int) -> int:
    """How many examples a property test whose full count is ``n`` draws in this run's profile
    (``PROFILE``): ``n`` when deep, else a share of it (a floor, never more than ``n``)."""
    share, least = _DRAWS[PROFILE]
    return min(n, max(least, n // share))


def claude_request(key: str, text: str, *, max_tokens: int = 64) -> vb.ClaudeRequest:
    """A Claude request of one user turn (directives such as ``[[vb:drop]]`` go in ``text``)."""
    return vb.ClaudeRequest(
        key, {"max_tokens": max_tokens, "messages": [{"role": "user", "content": text}]}
    )


def task(i: int, directive: str = "") -> vb.ClaudeRequest:
    """The Claude request ``key-<i>``: "Task <i>", followed by a directive when given."""
    return claude_request(f"key-{i}", f"Task {i} {directive}".rstrip(), max_tokens=32)


def claude_requests(
    n: int,
    *,
    text: str = "Summarise item {i}.",
    start: int = 0,
    key: str = "key-{i}",
    max_tokens: int = 64,
) -> list[vb.ClaudeRequest]:
    """``n`` small Claude requests, keys ``key-<i>`` (or ``key`` formatted with ``i``): the one
    builder of request lists the tests share (``claude_request`` builds one)."""
    return [
        claude_request(key.format(i=i), text.format(i=i), max_tokens=max_tokens)
        for i in range(start, start + n)
    ]


def gemini_requests(n: int, *, text: str = "Classify ticket {i}.") -> list[vb.GeminiRequest]:
    """``n`` small Gemini requests with keys ``key-<i>``."""
    return [vb.GeminiRequest(f"key-{i}", text.format(i=i)) for i in range(n)]


def jobs_in(stack: LocalStack, bucket: str) -> list[dict[str, Any]]:
    """The stack's jobs that read their input from the bucket: the test's own, on a shared stack
    (one reading a BigQuery table is no bucket's)."""
    return [
        job
        for job in stack.jobs()
        if job["inputConfig"]
        .get("gcsSource", {})
        .get("uris", [""])[0]
        .startswith(f"gs://{bucket}/")
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


def raw_job(
    stack: LocalStack,
    bucket: str,
    submission_id: str,
    model: str,
    labels: dict[str, str],
    **fields: Any,
) -> str:
    """A Claude job of the id made straight through aiplatform, as another submitter (or another
    configuration) would make it: the id's input and output, these labels; its name."""
    from google.cloud import aiplatform_v1

    folder = f"gs://{bucket}/jobs/{submission_id}"
    job = stack.jobs_client().create_batch_prediction_job(
        parent=f"projects/{stack.project}/locations/{stack.location}",
        batch_prediction_job=aiplatform_v1.BatchPredictionJob(
            display_name=submission_id,
            model=f"publishers/anthropic/models/{model}",
            input_config={
                "instances_format": "jsonl",
                "gcs_source": {"uris": [f"{folder}/input.jsonl"]},
            },
            output_config={
                "predictions_format": "jsonl",
                "gcs_destination": {"output_uri_prefix": f"{folder}/output"},
            },
            labels={"vertexbatch": "1", "vertexbatch_id": submission_id, **labels},
            **fields,
        ),
    )
    return str(job.name)


def endpoints_client(endpoints: dict[str, str], *, attempts: int | None = None) -> vb.Client:
    """A client of the stack an ``endpoints`` dict names (a worker process's view of it), its
    retries without waiting (``attempts`` of them, the policy's default if ``None``)."""
    retry = vb.RetryPolicy.no_wait() if attempts is None else vb.RetryPolicy.no_wait(attempts)
    return vb.Client.for_endpoints(
        vertex_endpoint=endpoints["vertex"],
        storage_endpoint=endpoints["storage"],
        project=endpoints["project"],
        location=endpoints["location"],
        bucket=endpoints["bucket"],
        prefix="jobs",
        retry=retry,
    )


def _from_bucket_metadata_cache() -> bool:
    """Whether this request is google-cloud-storage's own: since 3.17 its client looks a bucket
    up in a background thread (on a cache miss, and again after any 404, at most one at a time),
    so how many of them land in a step depends on thread timing, not on the caller."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "google.cloud.storage._bucket_metadata_cache":
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def recording_storage_client(
    stack: LocalStack, extra_headers: dict[str, str]
) -> tuple[Any, list[tuple[str, dict[str, str]]]]:
    """A storage client on the stack over a session of its own (as ``storage.Client(_http=...)``
    takes one: credentials, proxies, counting), with ``extra_headers``; and the list where that
    session records each request's method and headers (not the storage library's own background
    bucket lookups: `_from_bucket_metadata_cache`)."""
    from google.auth.credentials import AnonymousCredentials
    from google.auth.transport.requests import AuthorizedSession
    from google.cloud import storage

    seen: list[tuple[str, dict[str, str]]] = []

    class Recording(AuthorizedSession):
        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            if not _from_bucket_metadata_cache():
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


FINAL_OUTPUT = "predictions.jsonl"
INCREMENTAL_OUTPUT = "incremental_predictions/predictions_1.jsonl"


class OutputFiles:
    """A finished job whose output files a test rewrites with the real storage client."""

    def __init__(self, stack: LocalStack, bucket: str, job: vb.Job, directory: str) -> None:
        from vertexbatch._requests.digests import key_digest

        self.job = job
        self.bucket = stack.storage_client().bucket(bucket)
        self.prefix = directory.removeprefix(f"gs://{bucket}/")
        data = self.bucket.blob(f"{self.prefix}/{FINAL_OUTPUT}").download_as_bytes()
        by_digest = {key_digest(f"key-{i}"): f"key-{i}" for i in range(job.keys)}
        self.rows: dict[str, dict[str, Any]] = {}
        for raw in data.splitlines():
            row = json.loads(raw)
            key = by_digest.get(row.get("custom_id") or row.get("vb_key"))
            if key is not None:
                self.rows.setdefault(key, row)

    def write(self, final: list[bytes], incremental: list[bytes] | None = None) -> None:
        """Replace the output directory with these lines (no incremental file when None)."""
        for blob in self.bucket.list_blobs(prefix=self.prefix + "/"):
            blob.delete()
        self.bucket.blob(f"{self.prefix}/{FINAL_OUTPUT}").upload_from_string(
            b"\n".join(final) + b"\n"
        )
        if incremental is not None:
            self.bucket.blob(f"{self.prefix}/{INCREMENTAL_OUTPUT}").upload_from_string(
                b"\n".join(incremental) + b"\n"
            )

    def line(self, key: str, **changes: Any) -> bytes:
        """The row of ``key`` as a line, with fields replaced (``None`` removes one)."""
        row = {**self.rows[key], **changes}
        return json.dumps({k: v for k, v in row.items() if v is not None}).encode()

    def without_ids(self, key: str) -> dict[str, Any]:
        """The row of ``key`` as Vertex writes it when it echoes neither id nor label."""
        row = {k: v for k, v in self.rows[key].items() if k not in ("custom_id", "vb_key")}
        row["request"] = {k: v for k, v in row["request"].items() if k != "labels"}
        return row

    def with_raw(self, key: str, field: str, raw: bytes, *, ids: bool = True) -> bytes:
        """The row of ``key`` with ``field`` set to raw JSON text (first when ``ids`` is false)."""
        row = self.rows[key] if ids else self.without_ids(key)
        rest = json.dumps({k: v for k, v in row.items() if k != field}).encode()
        return b'{"' + field.encode() + b'": ' + raw + b", " + rest[1:]

    def with_id(self, key: str, digest: str, carrier: str, status: str) -> bytes:
        """``key``'s echoed request as a failed row (``status``) whose id is ``digest``, in
        ``carrier`` only: ``custom_id`` (Claude), ``vb_key`` (the Gemini sibling field) or
        ``label`` (the Gemini request label)."""
        row = self.without_ids(key)
        row.pop("response", None)
        row["status"] = status
        if carrier == "label":
            row["request"]["labels"] = {"vb_key": digest}
        else:
            row[carrier] = digest
        return json.dumps(row).encode()


def finished_output(
    client: vb.Client,
    stack: LocalStack,
    bucket: str,
    provider: str,
    name: str,
    *,
    n: int = 4,
    text: str | None = None,
) -> OutputFiles:
    """Submit ``n`` requests of ``provider`` under ``name``, wait for the job: its output."""
    if provider == "anthropic":
        claude = claude_requests(n, text=text) if text else claude_requests(n)
        job = client.submit_claude(name, CLAUDE, claude)
    else:
        gemini = gemini_requests(n, text=text) if text else gemini_requests(n)
        job = client.submit_gemini(name, GEMINI, gemini)
    final = stack.wait_job(job.name)
    return OutputFiles(stack, bucket, job, final["outputInfo"]["gcsOutputDirectory"])


def with_staging_sizes(client: vb.Client, **sizes: Any) -> vb.Client:
    """``client``, its staging built again with ``Staging``'s byte-path sizes (``read_chunk``,
    ``part_size``) or its ``limits`` (a ``_rules.Limits``: rows and
    bytes of one job, a record read back whole, an output line): the one way a test takes a
    whole ``Client`` across a range's or a part's end, or past a limit, with small objects. The
    client's own parts are replaced (``Client`` takes no sizes: they are not a user's to set);
    its storage client is kept."""
    from dataclasses import replace

    cloud = client._cloud
    client._parts = replace(cloud, staging=cloud.staging.with_sizes(**sizes))  # type: ignore[attr-defined]
    return client


def results_filling(
    client: vb.Client, job: vb.Job, *, staging: Any = None, **fill: Any
) -> Iterator[vb.Result]:
    """``client.results(job)``'s pass (the same ``iter_results`` and ``CacheFill`` it builds)
    with the fill's options given: ``limit`` (a small buffer), ``clock``; ``staging``, the one
    the fill writes through (a gated client's, say), the client's by default."""

    from vertexbatch._cache.fill import CacheFill
    from vertexbatch._job.results import iter_results

    cloud = client._cloud
    filler = CacheFill(staging or cloud.staging, job, **fill)
    return iter_results(cloud.vertex, cloud.staging, job, cloud.telemetry, fill=filler)


def past() -> datetime:
    """A moment one second ago: a claim or lease that has just expired."""
    return datetime.now(UTC) - timedelta(seconds=1)


def shard_object(stack: LocalStack, bucket: str, run_id: str, leaf: str) -> Any:
    """The object ``leaf`` of a run's first shard (``jobs/<run_id>.s0/<leaf>``)."""
    return stack.storage_client().bucket(bucket).blob(f"jobs/{run_id}.s0/{leaf}")


def stored(stack: LocalStack, bucket: str, name: str) -> bytes:
    """The bytes of the object ``name``."""
    data: bytes = stack.storage_client().bucket(bucket).blob(name).download_as_bytes()
    return data


def put_object(stack: LocalStack, bucket: str, name: str, data: bytes) -> None:
    """Write ``data`` as the object ``name``."""
    stack.storage_client().bucket(bucket).blob(name).upload_from_string(data)


def staged_names(stack: LocalStack, bucket: str, submission_id: str) -> list[str]:
    """The names of the objects staged under ``jobs/<submission_id>/``."""
    client = stack.storage_client()
    return [b.name for b in client.list_blobs(bucket, prefix=f"jobs/{submission_id}/")]


def jobs_named(stack: LocalStack, bucket: str, submission_id: str) -> list[dict[str, Any]]:
    """The stack's jobs (``jobs_in``) whose display name is ``submission_id``."""
    return [j for j in jobs_in(stack, bucket) if j["displayName"] == submission_id]


def claude_params(**extra: Any) -> dict[str, Any]:
    """Claude Messages parameters of one short user turn, with ``extra`` fields."""
    return {"max_tokens": 64, "messages": [{"role": "user", "content": "Hello"}], **extra}


def cache_digest(i: int) -> str:
    """A cache entry's digest (32 hex digits) in the shard ``ab``."""
    return f"ab{i:030x}"


def line_status(result: vb.Result) -> str:
    """The per-line status of a Result that failed with a ``LineError``."""
    assert isinstance(result.error, vb.LineError), result
    return result.error.status


def wait_briefly(client: vb.Client, job: vb.Job) -> None:
    """Wait for ``job`` polling every few hundredths of a second (the local stack)."""
    client.wait(job, floor=0.01, ceiling=0.05)


def results_by_key(stack: LocalStack, client: vb.Client, job: vb.Job) -> dict[str, vb.Result]:
    """Once the stack has run ``job``, its Results by key (no key yielded twice)."""
    stack.wait_job(job.name)
    results = list(client.results(job))
    by_key = {r.key: r for r in results}
    assert len(by_key) == len(results), "a key was yielded twice"
    return by_key


def invoke(args: list[str], env: Mapping[str, str | None]) -> Result:
    """The ``vertexbatch`` command run in-process with ``args`` and the environment ``env``."""
    from click.testing import CliRunner

    from vertexbatch._command.cli import main

    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


@contextmanager
def bigquery_reset(stack: LocalStack) -> Iterator[LocalStack]:
    """The BigQuery stack, its faults and job options reset around the block."""
    stack.faults.reset()
    stack.set_job_options(JobOptions())
    yield stack
    stack.faults.reset()
    stack.settle()
    stack.set_job_options(JobOptions())


def metered_client(stack: LocalStack, bucket: str, prefix: str) -> tuple[vb.Client, Any]:
    """A client of the stack, retries without waiting, whose metrics an in-memory reader (the
    second value) collects."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    client = stack.client(
        bucket=bucket,
        prefix=prefix,
        retry=vb.RetryPolicy.no_wait(),
        meter_provider=MeterProvider(metric_readers=[reader]),
    )
    return client, reader


def bucket_names(stack: LocalStack, bucket: str) -> list[str]:
    """The names of every object in the bucket."""
    return [b.name for b in stack.storage_client().list_blobs(bucket)]


def read_to_end(client: vb.Client, stack: LocalStack, job: vb.Job) -> dict[str, vb.Result]:
    """The job's results by key, read to the end (which fills the cache); a job the cache
    answered whole has no Vertex job to wait for."""
    if not job.name.startswith("cached:"):
        stack.wait_job(job.name)
    return {r.key: r for r in client.results(job)}


def advance_until_done(stack: LocalStack, run: vb.Run, steps: int = 10) -> vb.RunSummary:
    """Advance ``run`` (the stack settled before each step) until it is done, at most ``steps``
    times."""
    for _ in range(steps):
        stack.settle()
        summary = run.advance()
        if summary.done:
            return summary
    raise AssertionError(f"run not done after {steps} steps: {summary}")


def endpoints(stack: LocalStack, bucket: str) -> dict[str, str]:
    """What a worker process needs to build its own client on the stack and the test's bucket
    (``endpoints_client``)."""
    return {
        "vertex": stack.vertex_endpoint,
        "storage": stack.storage_endpoint,
        "project": stack.project,
        "location": stack.location,
        "bucket": bucket,
    }


def read_embedding_row(row: dict[str, object]) -> Any:
    """An embeddings output row read by the checked path (``classify_row``) and the fast one
    (``row_reader``), which must agree on everything; the checked path's result."""
    from vertexbatch._rows.classify import classify_row
    from vertexbatch._rows.fast_path import row_reader

    plain = classify_row(row, key="doc", provider="embeddings")
    fast = row_reader("embeddings")(row, "doc")
    assert (plain.outcome, plain.usage, plain.embedding, plain.response) == (
        fast.outcome,
        fast.usage,
        fast.embedding,
        fast.response,
    )
    assert (type(plain.error), str(plain.error)) == (type(fast.error), str(fast.error))
    return plain


def client_in(stack: LocalStack, bucket: str, location: str) -> vb.Client:
    """A client of the stack in ``location``, on ``bucket``, retrying without waiting."""
    return vb.Client.for_endpoints(
        vertex_endpoint=stack.vertex_endpoint,
        storage_endpoint=stack.storage_endpoint,
        project=stack.project,
        location=location,
        bucket=bucket,
        prefix="jobs",
        retry=vb.RetryPolicy.no_wait(),
    )


def global_client(stack: LocalStack, bucket: str) -> vb.Client:
    """A client of the stack in the ``global`` location (client_in)."""
    return client_in(stack, bucket, "global")


# What a test's child processes import before they run (``child_processes``): vertexbatch, its local
# stack and the tests' helpers (through the workers' module), the two Google clients every worker
# calls (vertexbatch imports them lazily), pytest (a target in a test module). Not
# google.cloud.bigquery or its storage API: importing them starts pyarrow's threads, and a process
# with threads must not fork. None starts a thread (tests/test_child_processes.py checks).
PRELOAD_THIRD_PARTY = ("google.cloud.storage", "google.cloud.aiplatform_v1", "pytest")
PRELOAD_OWN = ("vertexbatch", "integration_tests._workers")
_server_environment: dict[str, str] = {}


def child_processes() -> ForkServerContext:
    """The one way a test starts child processes that run vertexbatch code: a multiprocessing
    context (``Process``, ``Queue``, ``Barrier``, ``Event``) whose children fork from a server
    process that has already imported ``PRELOAD_*``, instead of each starting an interpreter and
    importing them again (2-4 CPU-s a child: most of a racing test's CPU). Each child is still a
    process of its own that builds its own clients, reads its target's module as a spawned one
    does (importable), sees the test's environment and working folder, and dies as a spawned one
    does (``kill()``: exit code ``-SIGKILL``).

    The server starts at the worker's first child and serves the session
    (``stop_child_processes`` at its end); it is started again if a test's environment (but
    ``PYTEST_CURRENT_TEST``) differs from the one it was started with. Its CPU and its children's
    go to the test that spent them (``child_processes_cpu``, read by tests/cpu_report.py). The
    repository's own modules are preloaded only where the server's working folder resolves them
    to the files this process runs (pytest run from the checkout's root, as the README says)."""
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver  # private: no public call reads or stops it
    environment = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    started = server._forkserver_pid is not None
    # A test that changed the environment after starting children keeps their server.
    if started and environment != _server_environment and not _forked_children():
        stop_child_processes()
    if server._forkserver_pid is None:
        _server_environment.clear()
        _server_environment.update(environment)
    context = multiprocessing.get_context("forkserver")
    own = PRELOAD_OWN if Path(vb.__file__).resolve().parents[1] == Path.cwd().resolve() else ()
    context.set_forkserver_preload([*PRELOAD_THIRD_PARTY, *own])
    return context


def child_processes_cpu() -> float:
    """The CPU seconds spent so far by the server ``child_processes`` started (0 if none runs)
    and by the children it has reaped (each child ``join``ed or killed): its children are not
    this process's, so ``RUSAGE_CHILDREN`` counts them only once the server itself is reaped."""
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver
    pid = server._forkserver_pid
    try:
        stat = Path(f"/proc/{pid}/stat").read_text() if pid is not None else ""
    except OSError:  # no /proc, or the server has just ended
        return 0.0
    if not stat:
        return 0.0
    fields = stat.rpartition(")")[2].split()  # from the third field, the state
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")


def stop_child_processes() -> None:
    """Stop the server ``child_processes`` started, if any (a child still running is killed
    first), and reap it: its CPU and its children's are this process's ``RUSAGE_CHILDREN`` from
    then on. No public call stops it: ``_stop`` is the one the standard library's own tests use
    (3.11 to 3.14)."""
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver  # private: no public call reads or stops it
    if server._forkserver_pid is None:
        return
    for child in _forked_children():
        child.kill()
        child.join(timeout=60)
    server._stop()


def _forked_children() -> list[multiprocessing.process.BaseProcess]:
    """This process's children still running that ``child_processes`` started."""
    from multiprocessing import popen_forkserver

    return [
        child
        for child in multiprocessing.active_children()
        if isinstance(child._popen, popen_forkserver.Popen)  # type: ignore[attr-defined]
    ]


def child_pytest(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest -q -p no:cacheprovider ARGS FOLDER`` run in ``folder`` with the
    checkout importable and ``env`` added: a pytest of its own (never an xdist worker's
    variables, whoever starts it), for tests of the suite's own plugins."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(folder)],
        cwd=folder,
        env={**clean, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_stream_session(stack: LocalStack, table: str, **session: Any) -> tuple[Any, Any]:
    """A Storage Read client of ``stack`` and a one-stream Arrow read session of ``table``
    (``P.D.T``) made with it; ``session``: more ``ReadSession`` fields (read options, table
    modifiers). Close the client's transport after."""
    from google.cloud.bigquery_storage_v1 import types

    project, dataset, name = table.split(".")
    read = stack.bigquery_read_client()
    made = read.create_read_session(
        parent=f"projects/{project}",
        read_session=types.ReadSession(
            table=f"projects/{project}/datasets/{dataset}/tables/{name}",
            data_format=types.DataFormat.ARROW,
            **session,
        ),
        max_stream_count=1,
    )
    return read, made
