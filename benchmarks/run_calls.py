"""Vertex calls and GCS requests per run step: ``advance`` and ``status`` of runs of many shards.

    python -m benchmarks.run_calls --sizes 10,1000,40000

For each size N, on one LocalStack: a Claude run of N one-key requests with ``shard_size=1`` (N
shards), its first four jobs held PENDING. Counted by the stack, then printed as a table:

- ``status``, its four jobs live (nothing ended since the previous step);
- ``advance``, the same (the live-job budget is spent: nothing to create);
- ``status`` once those four jobs ended (their gets: no step has seen them ended yet);
- ``advance`` then: it reads the four ended jobs once, finishes their shards, creates four;
- ``status`` after that (the four new jobs held PENDING).

It also prints each step's GCS requests, counted by the storage client's own session (listing
pages, object reads, writes), and its wall time.

The stack's fake-gcs-server keeps its objects in files (its filesystem backend, the stack's
``state_dir``: a temporary directory on tmpfs where there is one) unless ``--gcs memory``. The
memory backend finds an object by walking every object of the bucket (formatting two strings
per object, on every create and read), so staging N shards of three objects costs it time in N
squared: 40,000 shards had not finished staging after 1 h 51 min. In files an object is found by
its path: staging is linear in the shards (a shard's three uploads cost the client about 7 ms of
CPU and the server about 2), and what each step makes is the same on both backends
(``integration_tests/test_benchmark_run_calls_backends.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

__all__ = ["GCS_BACKENDS", "HEADERS", "main", "measure"]

GCS_BACKENDS = ("filesystem", "memory")
HEADERS = ["shards", "step", "Vertex calls", "by operation", "GCS requests", "by kind", "seconds"]
_MODEL = "claude-opus-5-5@default"


def _request(index: int) -> Any:
    import vertexbatch as vb

    params = {"max_tokens": 16, "messages": [{"role": "user", "content": f"Task {index}"}]}
    return vb.ClaudeRequest(f"key-{index}", params)


def _kind(method: str, url: str) -> str:
    """A GCS JSON API request's kind: a listing page, an object read, a write, or other."""
    path = urlsplit(url).path
    if method == "GET" and path.endswith("/o"):
        return "list"
    if method == "GET" and "alt=media" in url:
        return "read"
    if method in ("POST", "PUT"):
        return "write"
    return "other"


def counting_storage(stack: Any) -> tuple[Any, Counter[str]]:
    """A storage client on the stack whose session counts its requests by kind."""
    from google.auth.credentials import AnonymousCredentials
    from google.auth.transport.requests import AuthorizedSession
    from google.cloud import storage

    counted: Counter[str] = Counter()

    class Counting(AuthorizedSession):
        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            counted[_kind(method, url)] += 1
            return super().request(method, url, *args, **kwargs)  # type: ignore[no-untyped-call]

    client = storage.Client(
        project=stack.project,
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": stack.storage_endpoint},
        _http=Counting(AnonymousCredentials()),  # type: ignore[no-untyped-call]
    )
    return client, counted


Row = tuple[str, Counter[str], Counter[str], float]


def _measure(stack: Any, shards: int) -> list[Row]:
    import vertexbatch as vb

    bucket = f"bench-calls-{uuid.uuid4().hex[:8]}"
    stack.create_bucket(bucket)
    store, counted = counting_storage(stack)
    client = vb.Client(
        stack.project,
        stack.location,
        bucket,
        prefix="bench",
        jobs=stack.jobs_client(),
        storage=store,
        retry=vb.RetryPolicy.no_wait(),
    )
    run_id = f"calls-{shards}"
    for index in range(8):
        stack.faults.hold(display_name=f"{run_id}.s{index}", state="PENDING")
    run = client.run_claude(run_id, _MODEL, (_request(i) for i in range(shards)), shard_size=1)
    rows: list[Row] = []

    def step(name: str, call: Callable[[], object]) -> None:
        stack.reset_calls()
        counted.clear()
        start = time.perf_counter()
        call()
        rows.append((name, stack.calls(), Counter(counted), time.perf_counter() - start))

    step("status, 4 jobs live", run.status)
    step("advance, 4 jobs live", run.advance)
    for index in range(min(4, shards)):
        stack.faults.release(f"{run_id}.s{index}")
        job = client.find(f"{run_id}.s{index}")
        assert job is not None
        stack.wait_job(job.name)
    step("status, 4 jobs ended", run.status)
    step("advance, 4 jobs ended", run.advance)
    step("status after it", run.status)
    stack.faults.release()
    stack.settle(timeout=120)
    return rows


def _by(counts: Counter[str]) -> str:
    return ", ".join(f"{op} {n}" for op, n in sorted(counts.items())) or "-"


def render(measured: dict[int, list[Row]]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for shards, rows in measured.items():
        for name, calls, requests, seconds in rows:
            cells = [f"{shards:,}", name, str(sum(calls.values())), _by(calls)]
            cells += [str(sum(requests.values())), _by(requests), f"{seconds:.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _in_memory() -> str | None:
    """A tmpfs directory for the objects (/dev/shm) where there is one, else the default
    temporary directory: fake-gcs-server syncs every object it writes to disk, which on tmpfs
    costs little (its CPU staging 4,000 shards: 9 s there, 29 s on this machine's disk)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def measure(
    sizes: Sequence[int], gcs: str = "filesystem", state_dir: Path | None = None
) -> dict[int, list[Row]]:
    """Each size's rows, on one LocalStack whose fake-gcs-server has the ``gcs`` backend
    (filesystem: its objects under ``state_dir``, a temporary directory when None)."""
    from vertexbatch.emulator import LocalStack

    if gcs not in GCS_BACKENDS:
        raise ValueError(f"gcs must be one of {GCS_BACKENDS}, got {gcs!r}")
    measured: dict[int, list[Row]] = {}
    with tempfile.TemporaryDirectory(prefix="run-calls-", dir=_in_memory()) as temporary:
        # A state directory is what gives the stack's fake-gcs-server its filesystem backend.
        state = (state_dir or Path(temporary)) if gcs == "filesystem" else None
        with LocalStack(state_dir=state) as stack:
            for shards in sizes:
                measured[shards] = _measure(stack, shards)
    return measured


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run_calls", description=__doc__)
    parser.add_argument("--sizes", default="10,1000,40000", help="shards per run, comma-separated")
    parser.add_argument(
        "--gcs",
        choices=GCS_BACKENDS,
        default="filesystem",
        help="fake-gcs-server's backend: filesystem (linear staging) or memory (quadratic)",
    )
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes.split(",") if n]
    started = time.perf_counter()
    measured = measure(sizes, args.gcs)
    took = time.perf_counter() - started
    shown = "" if args.gcs == "filesystem" else f" --gcs {args.gcs}"
    print(f"# python -m benchmarks.run_calls --sizes {args.sizes}{shown}  ({took:.0f}s)")
    print()
    print(render(measured))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
