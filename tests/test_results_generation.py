"""An output file replaced while a results pass reads it is never read as a splice of two."""

from __future__ import annotations

from typing import Any

import pytest

import vertexbatch as vb
from tests.helpers import FINAL_OUTPUT, finished_output
from vertexbatch._gcs import staging as _staging
from vertexbatch.emulator import LocalStack

BIG = "a" * (5 * 1024 * 1024)  # one row past the first 4 MiB range read


def _finished(client: vb.Client, stack: LocalStack, bucket: str) -> tuple[vb.Job, Any, list[bytes]]:
    """A finished two-key job, its predictions.jsonl blob, and its two rows (key-0's made big)."""
    out = finished_output(client, stack, bucket, "anthropic", "gen", n=2)
    blob = out.bucket.blob(f"{out.prefix}/{FINAL_OUTPUT}")
    answer = out.rows["key-0"]["response"]
    big = out.line("key-0", response={**answer, "content": [{"type": "text", "text": BIG}]})
    return out.job, blob, [big, out.line("key-1")]


def test_an_output_file_replaced_between_range_reads_is_a_clear_error(
    client: vb.Client, stack: LocalStack, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is rewritten (the same rows in another order, the same length) after its first
    range was read: the pass fails naming it, and the next pass reads the new file whole."""
    job, blob, (big, small) = _finished(client, stack, bucket)
    blob.upload_from_string(big + b"\n" + small + b"\n")
    real = _staging._read_range
    replaced: list[int] = []

    def read_range(target: Any, start: int) -> Any:
        if start > 0 and not replaced and target.name == blob.name:
            blob.upload_from_string(small + b"\n" + big + b"\n")  # a writer replaces it
            replaced.append(start)
        return real(target, start)

    monkeypatch.setattr(_staging, "_read_range", read_range)
    with pytest.raises(vb.JobError, match="replaced or deleted while it was read") as err:
        list(client.results(job))
    assert "predictions.jsonl" in str(err.value) and replaced
    results = {r.key: r for r in client.results(job)}
    assert results["key-0"].text == BIG and results["key-1"].ok


def test_an_output_file_deleted_while_read_is_a_clear_error(
    client: vb.Client, stack: LocalStack, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    job, blob, (big, small) = _finished(client, stack, bucket)
    blob.upload_from_string(big + b"\n" + small + b"\n")
    real = _staging._read_range

    def read_range(target: Any, start: int) -> Any:
        if start > 0 and target.name == blob.name and blob.exists():
            blob.delete()
        return real(target, start)

    monkeypatch.setattr(_staging, "_read_range", read_range)
    with pytest.raises(vb.JobError, match="replaced or deleted while it was read"):
        list(client.results(job))
