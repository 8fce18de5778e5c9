"""Uploads and range reads over TLS, as real GCS speaks: fake-gcs-server started with HTTPS.

    python -m benchmarks.tls --n 100000 --repeats 3

The local stack speaks plain HTTP; real GCS speaks TLS, where every socket call moves one TLS
record at most and the thread making it needs the interpreter lock back after each. This starts
a fake-gcs-server of its own with ``-scheme https`` (its self-signed certificate is not checked,
on this benchmark's session only) and measures, in rounds whose order alternates:

- upload: N benchmark Claude lines (``json.dumps`` each, as the naive way builds them) through
  vertexbatch's create-only write (``Staging.create``: the rows sent in one request as they are
  held), against the naive way (the same lines joined into one string, one
  ``upload_from_string``);
- read: a file of N lines (the first request line, N times, stands in for answers),
  ``download_as_bytes`` + ``splitlines`` + ``json.loads``
  (the naive way) against vertexbatch's range reads (``Staging.read_lines``: 8 MiB ranges, the
  next read by a thread while this one is parsed) + ``json.loads``.

Prints the median seconds of each, and each round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

JSONL = "application/jsonl"


def _server(port: int, log: Any) -> subprocess.Popen[bytes]:
    from vertexbatch.emulator._gcs import binary_path

    url = f"https://127.0.0.1:{port}"
    command = [
        str(binary_path()), "-scheme", "https", "-host", "127.0.0.1", "-port", str(port),
        "-backend", "memory", "-external-url", url, "-log-level", "warn",
    ]  # fmt: skip
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)


def _client(url: str) -> Any:
    import requests
    import urllib3
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage  # type: ignore[attr-defined,unused-ignore]

    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    session = requests.Session()
    session.verify = False  # the server's self-signed certificate
    session.trust_env = False  # else a CA bundle named in the environment checks it again
    deadline = time.monotonic() + 30
    while True:
        try:
            session.get(f"{url}/storage/v1/b", timeout=1)
            break
        except requests.RequestException:
            if time.monotonic() > deadline:
                raise RuntimeError(f"fake-gcs-server did not answer on {url}") from None
            time.sleep(0.05)  # polling a server that is starting
    return storage.Client(
        project="tls-bench",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": url},
        _http=session,
    )


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tls")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    import vertexbatch as vb
    from benchmarks import workload
    from vertexbatch._gcs.staging import Staging
    from vertexbatch.emulator._gcs import free_port

    port = free_port()
    with tempfile.TemporaryFile() as log:
        server = _server(port, log)
        try:
            client = _client(f"https://127.0.0.1:{port}")
            bucket = client.bucket("tls-bench")
            bucket.create()
            staging = Staging(client, "tls-bench", "b", vb.RetryPolicy())
            lines = [
                json.dumps(line, ensure_ascii=False, separators=(",", ":"))
                for line in workload.raw_lines("claude", 1)
            ]

            def upload(name: str) -> Callable[[], None]:
                def run() -> None:
                    rows = [
                        json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
                        + b"\n"
                        for line in workload.raw_lines("claude", args.n)
                    ]
                    assert staging.create(name, rows, JSONL)

                return run

            def naive_upload(name: str) -> Callable[[], None]:
                def run() -> None:
                    text = "\n".join(
                        json.dumps(line, ensure_ascii=False, separators=(",", ":"))
                        for line in workload.raw_lines("claude", args.n)
                    )
                    bucket.blob(name).upload_from_string(text + "\n", content_type=JSONL)

                return run

            output = b"".join(line.encode("utf-8") + b"\n" for line in lines) * args.n
            bucket.blob("b/output.jsonl").upload_from_string(output, content_type=JSONL)
            size = len(output)
            del output

            def naive_read() -> None:
                whole = bucket.blob("b/output.jsonl").download_as_bytes()
                assert sum(1 for line in whole.splitlines() if json.loads(line)) == args.n

            def ranged_read() -> None:
                read = staging.read_lines("b/output.jsonl")
                assert sum(1 for line in read if json.loads(line)) == args.n

            times: dict[str, list[float]] = {}
            for rep in range(args.repeats):
                ops = [
                    ("upload, naive", naive_upload(f"naive{rep}.jsonl")),
                    ("upload, one create-only request", upload(f"c{rep}.jsonl")),
                    ("read, naive", naive_read),
                    ("read, ranges", ranged_read),
                ]
                if rep % 2:  # the order changes between rounds
                    ops = [ops[2], ops[1], ops[0], ops[4], ops[3]]
                for what, run in ops:
                    began = time.perf_counter()
                    run()
                    times.setdefault(what, []).append(time.perf_counter() - began)
        finally:
            server.terminate()
            server.wait(30)
    print(f"TLS (fake-gcs-server -scheme https), N={args.n} Claude lines, {size / 1e6:.0f} MB out")
    print("| step | median s | rounds s |")
    print("|---|---|---|")
    for what, seconds in times.items():
        rounds = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"| {what} | {_median(seconds)} | {rounds} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
