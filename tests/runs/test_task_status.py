"""`status` of a tasked run whose tasks all registered before any `advance` made its ledger:
summed up from the task records, at a bounded number of GCS requests (no keys merge)."""

from __future__ import annotations

import pytest

import vertexbatch as vb
from tests.gcs_gate import body_gate, gate, refusing_writes
from tests.helpers import jobs_in, local_client, task
from vertexbatch._command.cli_render import run_record
from vertexbatch._runs.run import summary_line
from vertexbatch.emulator import LocalStack

MODEL = "claude-opus-5-5@default"


def _registered_without_ledger(
    client: vb.Client, stack: LocalStack, bucket: str, run_id: str, keys: int, tasks: int
) -> None:
    """Every task registers; the last task's step cannot write the ledger (GCS refuses it)."""
    rows = [task(i) for i in range(keys)]
    for i in range(tasks - 1):
        t = vb.Task(i, tasks)
        client.run_claude(run_id, MODEL, t.slice(rows), shard_size=7, task=t)
    last = vb.Task(tasks - 1, tasks)
    with body_gate(stack.storage_endpoint, refusing_writes(f"{run_id}/run.json")) as url:
        refused = local_client(stack, bucket, storage_endpoint=url)
        with pytest.raises(Exception, match="403"):
            refused.run_claude(run_id, MODEL, last.slice(rows), shard_size=7, task=last)
    assert jobs_in(stack, client.bucket) == []


@pytest.mark.parametrize("keys", [40, 400])
def test_status_of_a_registered_run_costs_a_bounded_number_of_gcs_requests(
    client: vb.Client, stack: LocalStack, bucket: str, keys: int
) -> None:
    """Every task registered, no ledger yet: status reads no keys file, whatever the keys; its
    summary is exact (every key pending, no task missing) and says the next advance checks."""
    _registered_without_ledger(client, stack, bucket, "look", keys, 3)
    seen: list[str] = []

    def record(method: str, path: str, headers: object) -> None:
        seen.append(f"{method} {path}")

    with gate(stack.storage_endpoint, record) as url:  # type: ignore[arg-type]
        looking = local_client(stack, bucket, storage_endpoint=url)
        run = looking.open_run("look")
        seen.clear()
        summary = run.status()
        again = run.status()
    assert not any(".keys" in request for request in seen), seen
    # Two looks: each a ledger read, a listing of the task records and a read of each of the
    # three (the media read of each is one request more): never a range of a keys file.
    assert len(seen) <= 2 * (1 + 1 + 2 * 3), seen
    assert summary == again
    assert summary == vb.RunSummary(
        "look", False, keys, {"pending": keys}, 0, 0, waiting=(), made=False
    )
    assert "every task registered; the next advance checks the keys" in summary_line(summary)
    assert run_record(summary, shards=0)["made"] is False and "waiting" not in run_record(
        summary, shards=0
    )
    # The next advance checks the keys and makes the ledger; status then steps as on any run.
    made = client.open_run("look").advance()
    assert made.made and made.keys == keys and jobs_in(stack, client.bucket)
    assert client.open_run("look").status().made
    assert "made" not in run_record(client.open_run("look").status(), shards=1)


def test_status_leaves_a_duplicate_key_to_the_advance_that_would_make_the_ledger(
    client: vb.Client, stack: LocalStack
) -> None:
    """A key in two tasks: status does not merge, so it says the next advance checks; that
    advance refuses it naming the key and both tasks, and still no job exists."""
    client.run_claude("twice", MODEL, [task(0), task(1)], task=vb.Task(0, 2))
    with pytest.raises(vb.InvalidRequestError, match="'key-1' is in the requests of both"):
        client.run_claude("twice", MODEL, [task(1), task(2)], task=vb.Task(1, 2))
    summary = client.open_run("twice").status()
    assert summary.waiting == () and not summary.made and summary.keys == 4
    with pytest.raises(vb.InvalidRequestError, match="'key-1' is in the requests of both"):
        client.open_run("twice").advance()
    with pytest.raises(vb.InvalidRequestError, match="'key-1' is in the requests of both"):
        list(client.open_run("twice").results())  # reading still checks: it would read them
    assert jobs_in(stack, client.bucket) == []
