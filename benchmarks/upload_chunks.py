"""Where a submit's time goes on the local stack: the lines, and each upload request.

    python -m benchmarks.upload_chunks --provider claude --n 100000 [--chunk-mib 16] [--repeats 2]

On one LocalStack (the local model held, so only staging runs): N benchmark requests submitted,
each chunk request of the uploads timed (when it started, how long GCS took to answer, its size),
then the same bytes sent by the naive way's ``upload_from_string`` (one request up to 100 MiB,
google-cloud-storage's default chunk past that; its requests timed too). fake-gcs-server
checksums the whole object again on every chunk, so a chunk's answer takes longer the larger the
object already is. A least-squares line through the input's chunk times (all but the last, which
also commits the object) against the bytes already stored gives that cost per stored GiB, and
what it came to over this upload. Prints one block per repeat.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.upload_chunks")
    parser.add_argument("--provider", choices=["claude", "gemini"], default="claude")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--chunk-mib", type=int, default=0, help="default: vertexbatch's")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)

    from dataclasses import replace

    from google.cloud.storage._media.requests import ResumableUpload

    from benchmarks import workload
    from vertexbatch._client_base import cloud_of
    from vertexbatch._gcs import resumable as _resumable
    from vertexbatch._gcs import upload as _upload
    from vertexbatch.emulator import LocalStack

    chunk = args.chunk_mib * 1024 * 1024 if args.chunk_mib else _upload.CHUNK
    requests: list[tuple[str, float, float, int]] = []  # object, start, seconds, bytes
    start = [0.0]
    send = _resumable.Session.send

    def timed_send(session: Any, chunk: Any, total: int | None) -> None:
        began = time.perf_counter()
        send(session, chunk, total)
        name = session._blob.name.rsplit("/", 1)[-1]
        requests.append((name, began - start[0], time.perf_counter() - began, len(chunk)))

    _resumable.Session.send = timed_send  # type: ignore[method-assign,assignment]
    naive_requests: list[float] = []
    naive_chunk = ResumableUpload.transmit_next_chunk

    def timed_naive_chunk(upload: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return naive_chunk(upload, *args, **kwargs)
        finally:
            naive_requests.append(time.perf_counter() - began)

    ResumableUpload.transmit_next_chunk = timed_naive_chunk  # type: ignore[method-assign]
    with LocalStack() as stack:
        stack.faults.hold(state="PENDING")
        store = stack.storage_client()
        bucket = store.bucket("upload-chunks")
        bucket.create()
        client = stack.client(bucket="upload-chunks", prefix="b")
        # The chunk size is Staging's (a parameter, not a user's to set): its parts rebuilt.
        cloud = cloud_of(client)
        client._parts = replace(cloud, staging=cloud.staging.with_sizes(upload_chunk=chunk))  # type: ignore[attr-defined]
        print(f"{args.provider} N={args.n}, {chunk >> 20} MiB chunks")
        for repeat in range(args.repeats):
            requests.clear()
            start[0] = time.perf_counter()
            if args.provider == "claude":
                source = workload.claude_requests(args.n)
                job = client.submit_claude(f"r{repeat}", workload.CLAUDE_MODEL, source)
            else:
                source = workload.gemini_requests(args.n)
                job = client.submit_gemini(f"r{repeat}", workload.GEMINI_MODEL, source)
            submit = time.perf_counter() - start[0]
            client.cancel(job)
            inputs = [r for r in requests if r[0] == "input.jsonl"]
            data = bucket.blob(f"b/r{repeat}/input.jsonl").download_as_bytes()
            naive_requests.clear()
            began = time.perf_counter()
            bucket.blob(f"b/naive-{repeat}").upload_from_string(data)
            naive = time.perf_counter() - began
            del data
            took = sum(r[2] for r in inputs)
            how = f"{len(inputs)} chunk requests, {took:.2f} s in all" + (
                f" (the last {inputs[-1][2]:.2f} s)" if inputs else " (one multipart request)"
            )
            print(
                f"  submit {submit:.2f} s; input: {how}, against {naive:.2f} s for the same bytes "
                f"by upload_from_string ({max(len(naive_requests), 1)} request(s))"
            )
            print(f"  {_rechecksum(inputs)}")
            for name, at, seconds, size in requests:
                print(f"    {name:12} at {at:5.2f} s: {seconds:.3f} s for {size / 2**20:5.1f} MiB")
    return 0


def _rechecksum(chunks: list[tuple[str, float, float, int]]) -> str:
    """The fitted cost of the bytes already stored, per chunk, over all but the last chunk."""
    stored, seconds, offset = [], [], 0
    for _, _, took, size in chunks:
        stored.append(offset / 2**30)
        seconds.append(took)
        offset += size
    if len(stored) < 4:  # the last is left out: a line needs two points and one to spare
        return "re-checksum: too few chunks to fit"
    slope, intercept = statistics.linear_regression(stored[:-1], seconds[:-1])
    extra = slope * sum(stored)
    return (
        f"re-checksum: {slope:.3f} s per GiB already stored, per chunk (a chunk alone "
        f"{intercept:.3f} s); {extra:.2f} s of this upload"
    )


if __name__ == "__main__":
    raise SystemExit(main())
