"""Memory stays flat with job size: staging streams, results stream (beyond the key map)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request
from vertexbatch._staged.read import read_key_map
from vertexbatch.emulator import LocalStack

FILLER = "lorem ipsum dolor sit amet " * 36  # ~1 KB per request line


def _requests(n: int) -> Iterator[vb.ClaudeRequest]:
    for i in range(n):
        yield claude_request(f"key-{i:06d}", f"{i} {FILLER}", max_tokens=512)


def _peak(fn: Callable[[], object]) -> int:
    """Peak bytes allocated by Python while ``fn`` runs."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_staging_from_a_generator_is_streamed(stack: LocalStack, bucket: str) -> None:
    """Staging 60,000 requests peaks no higher than 20,000 (beyond the key set): it streams."""
    stack.faults.hold(state="PENDING")  # measure staging, not the local model
    client = stack.client(bucket=bucket, prefix="mem", retry=vb.RetryPolicy.no_wait())
    small = _peak(lambda: client.submit_claude("mem-20k", CLAUDE, _requests(20_000)))
    large = _peak(lambda: client.submit_claude("mem-60k", CLAUDE, _requests(60_000)))
    sizes = {}
    for name in ("mem-20k", "mem-60k"):  # the input's parts: input.jsonl, input-00001-...
        parts = list(stack.storage_client().list_blobs(bucket, prefix=f"mem/{name}/input"))
        assert len(parts) > 1 and all(blob.size is not None for blob in parts)
        sizes[name] = sum(blob.size or 0 for blob in parts)
    more_input = sizes["mem-60k"] - sizes["mem-20k"]
    assert more_input > 40_000_000
    print(f"staging peak: 20k {small:,} B, 60k {large:,} B, input {sizes} B")
    # 8 MiB parts (one being built, two in flight) and the key set grow; the input never is held.
    assert large - small < more_input / 3, (small, large, sizes)
    assert large < 48_000_000, (small, large, sizes)
    for name in sizes:  # the jobs are not needed: no 80,000 rows to answer before the next test
        job = client.find(name)
        assert job is not None
        client.cancel(job)


@pytest.mark.timeout(
    900
)  # 100,000 lines staged and read: past 300 s with four workers on a loaded machine
def test_results_100k_lines_stream_beyond_key_map(stack: LocalStack, bucket: str) -> None:
    """Iterating a 100,000-line output peaks at the key map plus a bounded read buffer.

    The size is the point: 100,000 keys (the key map held) and an output past 100 MB (many
    times the read buffer), so a pass that held its output would show it.
    """
    n = 100_000
    # The job starts RUNNING (so it names its output directory), then fails writing nothing.
    stack.faults.fail_job("mem-results", code=13, message="Failed to export data.", after_rows=0)
    client = stack.client(bucket=bucket, prefix="mem", retry=vb.RetryPolicy.no_wait())
    job = client.submit_claude("mem-results", CLAUDE, _requests(n))
    directory = str(stack.wait_job(job.name, timeout=120)["outputInfo"]["gcsOutputDirectory"])
    # A Vertex-format output row for every staged line, in the order the local Vertex writes
    # one (status, processed_time, the line's custom_id and request echoed, the response),
    # spliced from the staged input's bytes: the requests are built and serialised once (by
    # the submit), and no row is parsed or dumped again.
    message = {
        "type": "message",
        "role": "assistant",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "An answer of a realistic length. " * 8}],
        "usage": {"input_tokens": 300, "output_tokens": 80},
    }
    head = b'{"status":"","processed_time":"2026-11-29T10:00:00.1+00:00",'
    tail = b',"response":' + json.dumps(message).encode() + b"}\n"
    store = stack.storage_client()
    out = store.bucket(bucket).blob(
        f"{directory.removeprefix(f'gs://{bucket}/')}/predictions.jsonl"
    )
    rows = 0
    with out.open("wb", content_type="application/jsonl") as f:
        for part in store.list_blobs(bucket, prefix="mem/mem-results/input"):
            lines = part.download_as_bytes().splitlines()  # {"custom_id":...,"request":{...}}
            f.write(b"".join(head + line[1:-1] + tail for line in lines))
            rows += len(lines)
    assert rows == n
    out.reload()
    assert out.size is not None and out.size > 100_000_000

    key_map = _peak(lambda: read_key_map(client._cloud.staging, job))
    counted: list[int] = []
    full = _peak(lambda: counted.append(sum(1 for r in client.results(job) if r.ok)))
    assert counted == [n]
    print(f"results peak: key map {key_map:,} B, full pass {full:,} B, output {out.size:,} B")
    assert full - key_map < 32_000_000, (key_map, full, out.size)


def test_a_create_only_write_past_8_mib_holds_no_copy_of_its_bytes(
    stack: LocalStack, bucket: str
) -> None:
    """A 9.5 MiB object written from the rows a caller holds (a fill's shard, cached answers, a
    task's keys) or from one bytes (a merge) goes in one request without a copy: at most what
    small rows are gathered into per send (256 KiB) is held beyond them. The streamed upload it
    replaced held a copy of every byte (10.0 and 9.5 MiB here)."""
    from vertexbatch._gcs.staging import Staging

    staging = Staging(stack.storage_client(), bucket, "mem", vb.RetryPolicy.no_wait())
    rows = [(f'{{"d":"{i:032x}","r":"' + "x" * 900 + '"}\n').encode() for i in range(10_500)]
    text = b"".join(rows)
    assert len(text) > 9 * 1024 * 1024
    assert staging.create("mem/warm", [b"x\n"], "application/jsonl")  # the session, opened
    for name, data in (("rows", rows), ("text", text)):
        peak = _peak(lambda name=name, data=data: staging.create(f"mem/{name}", data, "text/plain"))
        print(f"create-only write of {len(text):,} B as {name}: peak {peak:,} B")
        assert peak < 1024 * 1024, (name, peak)
