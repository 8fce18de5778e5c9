"""A run's writes are create-only in one request: a task's keys, the online fallback's parts and
its joined answers (past a piece, in pieces ``online.jsonl`` names). At each, an object that
exists with other bytes (planted by the gate just before the write reaches the server, as a
racing writer would leave it) keeps them, and the caller does what it does on an existing
object. The shared write is held at every size by tests/gcs/test_upload.py.
"""

from __future__ import annotations

import json

import pytest

import vertexbatch as vb
from tests.gcs_gate import Planting, body_gate
from tests.helpers import (
    claude_request,
    local_client,
    object_names,
    past,
    stored,
    task,
    with_staging_sizes,
)
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"
MIB = 1024 * 1024
# Another writer's object, past 8 MiB: blank lines (of spaces: no rows), 1 KiB each, so that a
# reader passes over 9,216 of them, not 9.4 million (the one test that reads them cost 11 CPU-s).
OTHER = (b" " * 1023 + b"\n") * (9 * 1024)


def test_a_tasks_keys_past_8_mib_that_exist_are_kept(stack: LocalStack, bucket: str) -> None:
    """A task's keys file (three keys of 3.2 MB: 9.6 MB) goes in one request; one there already
    with other bytes stays, and the task is refused as one whose keys another attempt staged."""
    rows = [claude_request(f"{i}" + "k" * 3_200_000, f"Task {i}", max_tokens=8) for i in range(3)]
    planting = Planting(stack.storage_client().bucket(bucket), "t0.keys", OTHER)
    with body_gate(stack.storage_endpoint, planting) as url:
        client = local_client(stack, bucket, storage_endpoint=url)
        with pytest.raises(vb.InvalidRequestError, match="holds other keys than this task's"):
            client.run_claude("keys", MODEL, rows, task=vb.Task(0, 2))
    assert planting.planted is not None and stored(stack, bucket, planting.planted) == OTHER
    assert planting.kinds("t0.keys") == ["multipart"] and planting.chunks == 0


def _late_run(client: vb.Client, stack: LocalStack, run_id: str, keys: int = 4) -> vb.Run:
    """A run whose only job stays PENDING, so that past the deadline every key goes online."""
    stack.faults.hold(display_name=f"{run_id}.s0", state="PENDING")
    return client.run_claude(run_id, MODEL, [task(i) for i in range(keys)])


def test_an_online_part_that_exists_moves_the_rows_to_the_next(
    stack: LocalStack, bucket: str
) -> None:
    """A part number taken meanwhile (here by 9 MiB of another writer's bytes) is left as it
    is: the group's rows go to the next part, and every key is answered."""
    planting = Planting(stack.storage_client().bucket(bucket), "/online/part-00000", OTHER)
    with body_gate(stack.storage_endpoint, planting) as url:
        run = _late_run(local_client(stack, bucket, storage_endpoint=url), stack, "parted")
        summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 4}
    assert planting.planted is not None and stored(stack, bucket, planting.planted) == OTHER
    assert planting.kinds("/online/part-") == ["multipart"] * 2 and planting.chunks == 0
    parts = object_names(stack, bucket, "jobs/parted.s0/online/")
    assert parts == [
        "jobs/parted.s0/online/part-00000.jsonl",
        "jobs/parted.s0/online/part-00001.jsonl",
    ]


def test_online_answers_that_exist_are_kept(stack: LocalStack, bucket: str) -> None:
    """The joined answers there already (another holder's, here 9 MiB of other bytes) stay:
    the shard is answered by them, as when a holder finds ``online.jsonl`` written."""
    planting = Planting(stack.storage_client().bucket(bucket), "/online.jsonl", OTHER)
    with body_gate(stack.storage_endpoint, planting) as url:
        run = _late_run(local_client(stack, bucket, storage_endpoint=url), stack, "joined")
        summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and "ok" not in summary.outcomes  # the other bytes answer no key
    assert planting.planted == "jobs/joined.s0/online.jsonl"
    assert stored(stack, bucket, planting.planted) == OTHER
    assert planting.kinds("/online.jsonl") == ["multipart"] and planting.chunks == 0


def test_online_answers_past_a_piece_are_pieces_read_back_in_order(
    stack: LocalStack, bucket: str
) -> None:
    """Answers past the staging's piece size (here 1,500 bytes, 8 MiB in use) are written as
    pieces, each one request, ``online.jsonl`` last naming the others; every key's answer is
    read back from them, as from one object."""
    client = with_staging_sizes(local_client(stack, bucket), part_size=1500)
    run = _late_run(client, stack, "pieces", keys=7)
    planting = Planting(stack.storage_client().bucket(bucket), "never", b"")
    with body_gate(stack.storage_endpoint, planting) as url:
        gated = with_staging_sizes(
            local_client(stack, bucket, storage_endpoint=url), part_size=1500
        )
        summary = gated.open_run("pieces").advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": 7}
    names = [
        n.removeprefix("jobs/pieces.s0/") for n in object_names(stack, bucket, "jobs/pieces.s0/")
    ]
    pieces = [n for n in names if n.startswith("online-")]
    assert len(pieces) >= 2 and "online.jsonl" in names
    written = [n.removeprefix("jobs/pieces.s0/") for _, n in planting.uploads]
    assert written.index("online.jsonl") > max(written.index(p) for p in pieces)  # last
    assert {kind for kind, _ in planting.uploads} == {"multipart"} and planting.chunks == 0
    blob = stack.storage_client().bucket(bucket).get_blob("jobs/pieces.s0/online.jsonl")
    assert blob is not None and blob.metadata["vertexbatch-online-pieces"] == str(len(pieces))
    rows = b"".join(stored(stack, bucket, f"jobs/pieces.s0/{n}") for n in ["online.jsonl", *pieces])
    assert len([json.loads(line) for line in rows.splitlines()]) == 7
    results = list(run.results())
    assert sorted(r.key for r in results) == [f"key-{i}" for i in range(7)]
    assert all(r.ok for r in results)


def test_online_answers_naming_their_pieces_in_another_form_are_refused(
    stack: LocalStack, bucket: str
) -> None:
    """``online.jsonl`` metadata edited into a form vertexbatch does not write: a clear error
    naming the object, never answers read from pieces it does not name."""
    client = with_staging_sizes(local_client(stack, bucket), part_size=1500)
    run = _late_run(client, stack, "edited", keys=5)
    assert run.advance(deadline=past(), fallback="online").done
    blob = stack.storage_client().bucket(bucket).get_blob("jobs/edited.s0/online.jsonl")
    assert blob is not None
    blob.metadata = {"vertexbatch-online-pieces": "x"}
    blob.patch()
    with pytest.raises(vb.InvalidRequestError, match=r"edited\.s0/online\.jsonl names its later"):
        list(run.results())
