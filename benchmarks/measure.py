"""One measurement in a fresh process: time, peak RSS growth and GCS requests of one operation.

``python -m benchmarks.measure '<json spec>'`` prints ``RESULT <json>`` as its last line. The
parent (``benchmarks.run``) owns the local stack; this process only talks to its endpoints, so the
stack's memory and the emulator's threads never count against the code measured here.

Peak RSS growth is the high-water mark during the operation minus the RSS just before it, after
imports, client construction and a warm-up that touches the same code paths. On Linux the
high-water mark is reset first (``/proc/self/clear_refs``), so nothing before the operation counts.
Peak RSS is the process's own high-water mark (``VmHWM`` in ``/proc/self/status``), read after the
operation: not ``ru_maxrss``, which survives ``exec`` and can report the parent's size.

Two baselines: *raw*, streamed (vertexbatch's chunk size, line by line), and *naive*, what users
write without vertexbatch: ``json.dumps`` every line into one string and ``upload_from_string``;
``download_as_bytes``, ``splitlines`` and ``json.loads`` (for embeddings, each row's
``response.embedding.values`` taken out as well; vertexbatch's side reads ``Result.embedding``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil  # type: ignore[import-untyped,unused-ignore]
from google.auth.credentials import AnonymousCredentials
from google.auth.transport.requests import AuthorizedSession
from google.cloud import storage

import vertexbatch as vb
from benchmarks import workload

__all__ = ["CountingSession", "main"]

JSONL = "application/jsonl"
# The raw baseline streams in 16 MiB chunks (the storage client's resumable upload).
RAW_CHUNK = 16 * 1024 * 1024
_OBJECT = re.compile(r"^(?:/download)?/storage/v1/b/[^/]+/o/(?P<name>.+)$")


class CountingSession(AuthorizedSession):
    """The storage client's HTTP session, counting requests by kind and media bytes by object."""

    def __init__(self) -> None:
        super().__init__(AnonymousCredentials())  # type: ignore[no-untyped-call]
        self.counting = False
        self.kinds: Counter[str] = Counter()
        self.read_bytes: Counter[str] = Counter()
        self.read_requests: Counter[str] = Counter()
        self.sent_bytes = 0

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        response = super().request(method, url, *args, **kwargs)  # type: ignore[no-untyped-call]
        if self.counting:
            self._count(method, url, kwargs.get("data"), response, kwargs.get("params") or {})
        return response

    def _count(
        self, method: str, url: str, data: Any, response: Any, params: dict[str, str]
    ) -> None:
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        query.update({key: [str(value)] for key, value in params.items()})  # given apart
        path = parts.path
        if data is not None and not isinstance(data, str | dict) and hasattr(data, "__len__"):
            self.sent_bytes += len(data)  # bytes, a chunk's view, a part's body of pieces
        if path.startswith("/upload/"):
            upload_type = query.get("uploadType", [""])[0]
            if method == "PUT" or "upload_id" in query:
                kind = "upload chunk"
            elif upload_type == "multipart":
                kind = "upload (one request)"
            else:
                kind = "upload start"
        elif method == "GET" and (path.startswith("/download/") or query.get("alt") == ["media"]):
            kind = "read"
            match = _OBJECT.match(path)
            name = unquote(match.group("name")) if match else path
            self.read_requests[name] += 1
            self.read_bytes[name] += int(response.headers.get("Content-Length") or 0)
        elif method == "GET" and re.match(r"^/storage/v1/b/[^/]+/o/?$", path):
            kind = "list"
        elif method == "GET" and _OBJECT.match(path):
            kind = "stat"
        elif method == "GET" and re.match(r"^/storage/v1/b/[^/]+/?$", path):
            # google-cloud-storage >= 3.x checks that a bucket exists, in a background thread
            kind = "bucket check (storage client)"
        else:
            kind = f"{method} {path.split('/')[-1] if '/o/' not in path else 'object'}"
        self.kinds[kind] += 1


def _process_cpu(pid: int | None) -> float:
    """CPU seconds (user and system) process ``pid`` has used; NaN where /proc cannot say."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def _rss() -> int:
    return int(psutil.Process().memory_info().rss)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _clients(spec: dict[str, Any]) -> tuple[storage.Client, CountingSession, vb.Client]:
    from google.cloud import aiplatform_v1

    session = CountingSession()
    store = storage.Client(
        project=spec["project"],
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": spec["storage_endpoint"]},
        _http=session,
    )
    jobs = aiplatform_v1.JobServiceClient(
        transport="rest",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": spec["vertex_endpoint"]},
    )
    client = vb.Client(
        spec["project"],
        spec["location"],
        spec["bucket"],
        prefix=spec["prefix"],
        jobs=jobs,
        storage=store,
    )
    return store, session, client


# Operations: each returns (warm-up, operation); the operation returns extra fields to report.
Op = tuple[Callable[[], None], Callable[[], dict[str, Any]]]


def _stage_raw(spec: dict[str, Any], store: storage.Client, client: vb.Client) -> Op:
    provider, n = spec["provider"], spec["n"]
    blob = store.bucket(spec["bucket"]).blob(spec["object"])

    def encode(line: dict[str, Any]) -> bytes:
        return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"

    def warm() -> None:
        encode(next(workload.raw_lines(provider, 1)))

    def run() -> dict[str, Any]:
        size = 0
        with blob.open("wb", chunk_size=RAW_CHUNK, content_type=JSONL) as f:
            for line in workload.raw_lines(provider, n):
                data = encode(line)
                size += len(data)
                f.write(data)
        return {"bytes": size}

    return warm, run


def _stage_naive(spec: dict[str, Any], store: storage.Client, client: vb.Client) -> Op:
    """Every line into one string, one ``upload_from_string`` (the same bytes as raw)."""
    provider, n = spec["provider"], spec["n"]
    blob = store.bucket(spec["bucket"]).blob(spec["object"])

    def dumps(line: dict[str, Any]) -> str:
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))

    def warm() -> None:
        dumps(next(workload.raw_lines(provider, 1)))

    def run() -> dict[str, Any]:
        text = "\n".join(dumps(line) for line in workload.raw_lines(provider, n)) + "\n"
        blob.upload_from_string(text, content_type=JSONL)
        return {"bytes": len(text)}

    return warm, run


def _stage_vb(spec: dict[str, Any], store: storage.Client, client: vb.Client) -> Op:
    from vertexbatch._providers import by_command

    provider, n = spec["provider"], spec["n"]
    row = by_command(provider)  # the provider table: its line builder and Client methods
    submit = getattr(client, row.method("submit"))

    def warm() -> None:  # the same pure code paths, no I/O
        row.line(next(workload.requests(provider, 1)))

    calls: list[vb.Progress] = []
    # benchmarks.progress: the same submit with a progress callback (it keeps what it is given).
    options: dict[str, Any] = {"progress": calls.append} if spec.get("progress") else {}

    def run() -> dict[str, Any]:
        requests = workload.requests(provider, n)
        job = submit(spec["id"], workload.MODELS[provider], requests, **options)
        return {"job": job.to_dict(), "progress_calls": len(calls)}

    return warm, run


def _status(spec: dict[str, Any], store: storage.Client, client: vb.Client) -> Op:
    job = vb.Job.from_dict(spec["job"])

    def run() -> dict[str, Any]:
        return {"state": client.status(job).state}

    return (lambda: None), run


def _output_blobs(store: storage.Client, spec: dict[str, Any]) -> Iterator[storage.Blob]:
    job = spec["job"]
    bucket, _, path = job["output_prefix"].removeprefix("gs://").partition("/")
    for blob in store.list_blobs(bucket, prefix=path.rstrip("/") + "/"):
        if blob.name.endswith(".jsonl"):
            yield blob


def _results_whole(split: Callable[[bytes], list[bytes]]) -> Callable[..., Op]:
    """Each output file whole, split into lines by ``split``, ``json.loads`` each (rows not
    kept): the raw baseline splits at newlines, the naive one with ``splitlines``. For
    embeddings each row's vector is taken out too (``response.embedding.values``, as a
    hand-written reader does: docs/embeddings.md) and its values counted."""

    def op(spec: dict[str, Any], store: storage.Client, client: vb.Client) -> Op:
        embeddings = spec["provider"] == "embeddings"

        def warm() -> None:
            json.loads(b'{"status": "", "request": {"a": [1, 2.5, null]}}')

        def run() -> dict[str, Any]:
            lines = values = 0
            for blob in _output_blobs(store, spec):
                data = blob.download_as_bytes()
                for raw in split(data):
                    if raw:
                        row = json.loads(raw)
                        lines += 1
                        if embeddings:
                            values += len(row["response"]["embedding"]["values"])
                del data
            return {"lines": lines, "values": values}

        return warm, run

    return op


_results_raw = _results_whole(lambda data: data.split(b"\n"))
_results_naive = _results_whole(bytes.splitlines)


def _results_vb(spec: dict[str, Any], store: storage.Client, client: vb.Client) -> Op:
    job = vb.Job.from_dict(spec["job"])

    def run() -> dict[str, Any]:
        outcomes: Counter[str] = Counter()
        values = 0
        for result in client.results(job):
            outcomes[str(result.outcome)] += 1
            if result.embedding is not None:  # the vector, as the baselines take it out
                values += len(result.embedding)
        return {"lines": sum(outcomes.values()), "outcomes": dict(outcomes), "values": values}

    return (lambda: None), run


def _key_map(spec: dict[str, Any], store: storage.Client, client: vb.Client) -> Op:
    """What the key map alone keeps in memory (measured as retained RSS, not peak)."""
    from vertexbatch._staged.read import read_key_map

    job = vb.Job.from_dict(spec["job"])
    kept: list[Any] = []

    def run() -> dict[str, Any]:
        kept.append(read_key_map(client._cloud.staging, job))
        return {"keys": len(kept[0]), "retained": _rss()}

    return (lambda: None), run


OPS: dict[str, Callable[[dict[str, Any], storage.Client, vb.Client], Op]] = {
    "stage_raw": _stage_raw,
    "stage_naive": _stage_naive,
    "stage_vb": _stage_vb,
    "status": _status,
    "results_raw": _results_raw,
    "results_naive": _results_naive,
    "results_vb": _results_vb,
    "key_map": _key_map,
}


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one operation and return its figures."""
    store, session, client = _clients(spec)
    warm, run = OPS[spec["op"]](spec, store, client)
    warm()
    store.bucket(spec["bucket"]).reload()  # opens the connection, outside the counted window
    before = _rss()
    exact = _reset_peak()
    session.counting = True
    gcs_start = _process_cpu(spec.get("gcs_pid"))
    cpu_start = time.process_time()
    start = time.perf_counter()
    extra = run()
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    # fake-gcs-server's CPU over the same span: where a client that waits spends its time.
    gcs_cpu = _process_cpu(spec.get("gcs_pid")) - gcs_start
    session.counting = False
    peak = _peak() if exact else max(_peak(), _rss())
    out: dict[str, Any] = {
        "op": spec["op"],
        "seconds": seconds,
        "cpu": cpu,
        "gcs_cpu": gcs_cpu,
        "rss_before": before,
        "peak_growth": max(peak - before, 0),
        "peak_rss": peak,
        "peak_exact": exact,
        "gcs": dict(session.kinds),
        "gcs_total": sum(session.kinds.values()),
        "read_bytes": dict(session.read_bytes),
        "read_requests": dict(session.read_requests),
        "sent_bytes": session.sent_bytes,
        **extra,
    }
    if "retained" in out:
        out["retained"] = max(out["retained"] - before, 0)
    if session.read_bytes:  # sizes of what was read, to tell whether each object was read once
        bucket = store.bucket(spec["bucket"])
        sizes = {}
        for name in session.read_bytes:
            blob = bucket.get_blob(name)
            sizes[name] = int(blob.size or 0) if blob is not None else -1
        out["object_sizes"] = sizes
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(args[0])
    result = measure(spec)
    sys.stdout.write("RESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
