"""The 200,000-row limit of a batch job, at full size: the client, the importer, a job."""

from __future__ import annotations

import json
import re

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE
from tests.lab import Lab
from vertexbatch.emulator import LocalStack
from vertexbatch.emulator._importer import MAX_ROWS, normalise, parse_lines

pytestmark = pytest.mark.slow


def test_client_refuses_more_than_200000_rows(
    client: vb.Client, bucket: str, stack: LocalStack
) -> None:
    """More than 200,000 rows are refused, pointing at splitting; nothing that claims the id or
    blocks a retry is left: no part 0, key map, manifest or record, only later parts of the
    input, named by their bytes (staging never deletes a part: docs/guarantees.md, "Staged
    parts")."""
    requests = (
        vb.ClaudeRequest(f"k{i}", {"max_tokens": 1, "messages": [{"role": "user", "content": "x"}]})
        for i in range(200_001)
    )
    with pytest.raises(vb.InvalidRequestError, match="more than 200,000 requests"):
        client.submit_claude("too-many", CLAUDE, requests)
    left = [b.name for b in stack.storage_client().list_blobs(bucket)]
    assert left, "200,001 lines are more than one part: later parts were written"
    later = re.compile(r"jobs/too-many/input-\d{5}-[0-9a-f]{32}\.jsonl")
    assert all(later.fullmatch(name) for name in left), left


def test_importer_normalises_200000_rows() -> None:
    """MAX_ROWS typical lines validate and normalise, each to the same echo."""
    line = {
        "custom_id": "k",
        "request": {
            "anthropic_version": "vertex-2023-10-16",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hello there"}],
        },
    }
    data = (json.dumps(line) + "\n").encode() * MAX_ROWS
    rows, schema = parse_lines(data)
    out = normalise(rows, schema)
    assert len(out) == MAX_ROWS
    assert out[0] == out[-1]


def test_a_job_of_more_than_200000_rows_fails_with_code_3(stack: LocalStack, bucket: str) -> None:
    """More than 200,000 rows fails the job with code 3."""
    lab = Lab(stack, bucket)
    data = b'{"request": {"contents": [{"parts": [{"text": "x"}]}]}}\n' * (MAX_ROWS + 1)
    lab.gcs.bucket(lab.bucket).blob("big.jsonl").upload_from_string(
        data, content_type="application/jsonl"
    )
    job = lab.create(uris=[f"gs://{lab.bucket}/big.jsonl"])
    done = lab.stack.wait_job(job.name, timeout=60)
    assert (done["state"], done["error"]["code"]) == ("JOB_STATE_FAILED", 3)
    assert "more than 200000 rows" in done["error"]["message"]
