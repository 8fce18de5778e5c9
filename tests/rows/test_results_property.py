"""Property: whatever mix of rows Vertex writes, every submitted key is yielded exactly once."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vertexbatch as vb
from tests.helpers import claude_requests, examples
from vertexbatch._requests.lines import claude_line
from vertexbatch.emulator import LocalStack

KEYS = 12
REQUESTS = claude_requests(KEYS)
LINES = [json.loads(claude_line(r).data) for r in REQUESTS]

ROW_KINDS = ["answer", "refusal", "truncated", "error", "not-run", "echo-only", "drop", "deep"]
DEEP = 3000  # past the interpreter's recursion limit


def _row(kind: str, line: dict) -> dict:
    """An output row of the given kind for one staged line, in Vertex's shape."""
    base = {"processed_time": "2026-11-29T10:00:00.1+00:00", "request": line["request"]}
    if kind != "echo-only":
        base["custom_id"] = line["custom_id"]
    message = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "an answer"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }
    if kind in ("answer", "echo-only"):
        return {**base, "status": "", "response": message}
    if kind == "refusal":
        return {
            **base,
            "status": "",
            "response": {**message, "content": [], "stop_reason": "refusal"},
        }
    if kind == "truncated":
        return {**base, "status": "", "response": {**message, "stop_reason": "max_tokens"}}
    if kind == "error":
        status = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
        return {**base, "status": "Too Many Requests: " + json.dumps(status)}
    if kind == "deep":  # nested too deeply to read: its key is a malformed line
        return {**base, "status": "", "response": {"content": []}, "deep": None}
    return {"custom_id": line["custom_id"], "request": line["request"]}  # not-run


def _line(row: dict) -> bytes:
    """A row as one JSONL line; a "deep" row gets its nesting as raw text."""
    text = json.dumps(row).encode()
    return text.replace(b'"deep": null', b'"deep": ' + b"[" * DEEP + b"]" * DEEP)


@pytest.fixture(scope="module")
def finished_job(local_stack: LocalStack) -> Iterator[tuple[vb.Client, vb.Job, str]]:
    """One terminal job whose output directory each example rewrites."""
    local_stack.create_bucket("property-bucket")
    client = local_stack.client(
        bucket="property-bucket", prefix="p", retry=vb.RetryPolicy.no_wait()
    )
    job = client.submit_claude("property", "claude-opus-5-5@default", REQUESTS)
    final = local_stack.wait_job(job.name)
    yield client, job, final["outputInfo"]["gcsOutputDirectory"]


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    kinds=st.lists(st.sampled_from(ROW_KINDS), min_size=KEYS, max_size=KEYS),
    duplicated=st.sets(st.integers(0, KEYS - 1)),
    garbage=st.lists(
        st.sampled_from(
            [
                b"not json",
                b"[1, 2]",
                b'{"custom_id": "nobody"}',
                b"{}",
                b'"x"',
                b"[" * DEEP,
                b'{"a": ' * DEEP + b"1" + b"}" * DEEP,
                b'{"request": ' + b"[" * DEEP + b"]" * DEEP + b"}",
            ]
        ),
        max_size=4,
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_key_exactly_once(
    finished_job: tuple[vb.Client, vb.Job, str],
    local_stack: LocalStack,
    kinds: list[str],
    duplicated: set[int],
    garbage: list[bytes],
    seed: int,
) -> None:
    """Random outcomes, drops, duplicates across files, garbage and order: one result per key."""
    client, job, directory = finished_job
    rng = random.Random(seed)
    rows = [_line(_row(k, LINES[i])) for i, k in enumerate(kinds) if k != "drop"]
    lines = rows + garbage
    rng.shuffle(lines)
    dupes = [_line(_row(kinds[i], LINES[i])) for i in duplicated if kinds[i] != "drop"]
    bucket = local_stack.storage_client().bucket("property-bucket")
    prefix = directory.removeprefix("gs://property-bucket/")
    for blob in bucket.list_blobs(prefix=prefix + "/"):
        blob.delete()
    bucket.blob(f"{prefix}/predictions.jsonl").upload_from_string(
        b"\n".join(lines), content_type="application/jsonl"
    )
    bucket.blob(f"{prefix}/incremental_predictions/predictions_1.jsonl").upload_from_string(
        b"\n".join(dupes), content_type="application/jsonl"
    )

    results = list(client.results(job))

    assert sorted(r.key for r in results) == sorted(r.key for r in REQUESTS)
    by_key = {r.key: r for r in results}
    expected = {
        "answer": "ok",
        "echo-only": "ok",
        "refusal": "refused",
        "truncated": "truncated",
        "error": "retryable",
        "not-run": "retryable",
        "drop": "missing",
        "deep": "failed",
    }
    for i, kind in enumerate(kinds):
        assert by_key[REQUESTS[i].key].outcome == expected[kind], (i, kind)
    missing_at_end = [r.key for r in results if r.outcome == "missing"]
    assert [r.key for r in results[len(results) - len(missing_at_end) :]] == missing_at_end
    assert missing_at_end == [REQUESTS[i].key for i, k in enumerate(kinds) if k == "drop"]
