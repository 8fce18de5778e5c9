"""An output file replaced while a results pass reads it is never read as a splice of two."""

from __future__ import annotations

from collections.abc import Callable
from email.message import Message
from typing import Any
from urllib.parse import quote

import pytest

import vertexbatch as vb
from tests.gcs_gate import Spoil, gate
from tests.helpers import FINAL_OUTPUT, finished_output, local_client
from vertexbatch._gcs.staging import _READ_CHUNK
from vertexbatch.emulator import LocalStack

BIG = "a" * (_READ_CHUNK + 1024 * 1024)  # one row past the first range read


def _finished(client: vb.Client, stack: LocalStack, bucket: str) -> tuple[vb.Job, Any, list[bytes]]:
    """A finished two-key job, its predictions.jsonl blob, and its two rows (key-0's made big)."""
    out = finished_output(client, stack, bucket, "anthropic", "gen", n=2)
    blob = out.bucket.blob(f"{out.prefix}/{FINAL_OUTPUT}")
    answer = out.rows["key-0"]["response"]
    big = out.line("key-0", response={**answer, "content": [{"type": "text", "text": BIG}]})
    return out.job, blob, [big, out.line("key-1")]


def _after_first_range(name: str, then: Callable[[], None]) -> Any:
    """A gate script: before GCS answers the first read of ``name`` past its first range,
    ``then`` runs (a writer replacing or deleting the object between two range reads)."""
    done: list[str] = []

    def script(method: str, path: str, headers: Message) -> Spoil | None:
        ranged = headers.get("Range", "")
        if (
            not done
            and path.startswith("/download/")
            and quote(name, safe="") in path
            and ranged.startswith("bytes=")
            and not ranged.startswith("bytes=0-")
        ):
            then()
            done.append(ranged)
        return None

    script.done = done  # type: ignore[attr-defined]
    return script


def test_an_output_file_replaced_between_range_reads_is_a_clear_error(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The file is rewritten (the same rows in another order, the same length) after its first
    range was read: the pass fails naming it, and the next pass reads the new file whole."""
    job, blob, (big, small) = _finished(client, stack, bucket)
    blob.upload_from_string(big + b"\n" + small + b"\n")
    script = _after_first_range(  # a writer replaces it
        blob.name, lambda: blob.upload_from_string(small + b"\n" + big + b"\n")
    )
    with gate(stack.storage_endpoint, script) as url:
        gated = local_client(stack, bucket, storage_endpoint=url)
        with pytest.raises(vb.JobError, match="replaced or deleted while it was read") as err:
            list(gated.results(job))
    assert "predictions.jsonl" in str(err.value) and script.done
    results = {r.key: r for r in client.results(job)}
    assert results["key-0"].text == BIG and results["key-1"].ok


def test_an_output_file_deleted_while_read_is_a_clear_error(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    job, blob, (big, small) = _finished(client, stack, bucket)
    blob.upload_from_string(big + b"\n" + small + b"\n")
    script = _after_first_range(blob.name, blob.delete)
    with gate(stack.storage_endpoint, script) as url:
        gated = local_client(stack, bucket, storage_endpoint=url)
        with pytest.raises(vb.JobError, match="replaced or deleted while it was read"):
            list(gated.results(job))
    assert script.done
