"""``watch``, ``status`` and the demo count the caller's keys, not the rows staged under dedupe
(Vertex counts rows: 10 rows for 20 keys of 10 distinct requests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_request, invoke, write_lines
from vertexbatch._command.cli_progress import key_counts
from vertexbatch._command.cli_render import keys_status
from vertexbatch.emulator import LocalStack


def _status(succeeded: int, failed: int = 0, incomplete: int = 0) -> vb.Status:
    return vb.Status(
        "JOB_STATE_RUNNING", False, succeeded=succeeded, failed=failed, incomplete=incomplete
    )


@pytest.mark.parametrize(
    ("status", "rows", "keys", "cached", "expected"),
    [
        (_status(3, 1), 10, 10, 0, (3, 1, 0)),  # one key per row: Vertex's counts unchanged
        (_status(10), 10, 20, 0, (20, 0, 0)),  # every row done: every key
        (_status(5), 10, 20, 0, (10, 0, 0)),  # half the rows: half the keys
        (_status(9, 1), 10, 20, 0, (18, 2, 0)),
        (_status(2, 1), 3, 7, 0, (5, 2, 0)),  # every row counted: the keys add up to 7
        (_status(-1, -1, -1), 10, 20, 0, (-1, -1, -1)),  # not reported yet: unknown
        (_status(4), 4, 10, 6, (10, 0, 0)),  # 6 keys answered by the cache count as succeeded
        (_status(0), 4, 10, 6, (6, 0, 0)),
        (_status(-1, -1, -1), 0, 5, 5, (-1, -1, -1)),
    ],
)
def test_keys_status_turns_row_counts_into_key_counts(
    status: vb.Status, rows: int, keys: int, cached: int, expected: tuple[int, int, int]
) -> None:
    """Each row counts for its share of the keys, cached keys as succeeded, unknown stays -1."""
    got = keys_status(status, rows=rows, keys=keys, cached=cached)
    assert (got.succeeded, got.failed, got.incomplete) == expected
    assert got.state == status.state and got.terminal == status.terminal


def _twenty_of_ten(tmp_path: Path) -> Path:
    """20 request lines of 10 distinct bodies (each body twice)."""
    lines = [
        json.dumps(
            {
                "key": f"k{i}",
                "params": {
                    "max_tokens": 16,
                    "messages": [{"role": "user", "content": f"body {i % 10}"}],
                },
            }
        )
        for i in range(20)
    ]
    return write_lines(tmp_path / "twenty.jsonl", lines)


def test_watch_and_status_count_keys_under_dedupe(
    tmp_path: Path, env: dict[str, str | None], stack: LocalStack
) -> None:
    """20 requests, 10 distinct, --dedupe: watch ends at 20/20 keys; status says succeeded 20
    of 20 keys (text and --json), and its note says the counts were turned into keys."""
    file = str(_twenty_of_ten(tmp_path))
    args = ["submit", "--provider", "claude", "--model", CLAUDE, "--id", "dd20", "--dedupe", file]
    submitted = invoke(args, env)
    assert submitted.exit_code == 0, submitted.output
    watched = invoke(["watch", "dd20", "--floor", "0.01", "--ceiling", "0.05"], env)
    assert watched.exit_code == 0, watched.output
    assert "dd20 JOB_STATE_SUCCEEDED 20/20 keys" in watched.stderr
    assert watched.stdout.startswith("dd20  JOB_STATE_SUCCEEDED  succeeded 20  failed 0")
    assert watched.stdout.rstrip().endswith("of 20 keys")
    status = invoke(["status", "dd20"], env)
    assert "succeeded 20  failed 0  incomplete 0  of 20 keys" in status.stdout
    assert "--dedupe" in status.stderr
    record = json.loads(invoke(["status", "dd20", "--json"], env).stdout)
    assert (record["succeeded"], record["keys"]) == (20, 20)


def test_a_running_deduped_job_counts_its_rows_keys(
    tmp_path: Path, env: dict[str, str | None], stack: LocalStack, client: vb.Client
) -> None:
    """Held after 5 of its 10 rows: status counts 10 of its 20 keys done."""
    stack.faults.hold(display_name="dd-run", state="RUNNING", after_rows=5)
    requests = [claude_request(f"k{i}", f"body {i % 10}") for i in range(20)]
    job = client.submit_claude("dd-run", CLAUDE, requests, dedupe=True)
    stack.wait_job(
        job.name, until=lambda j: j.get("completionStats", {}).get("successfulCount") == "5"
    )
    raw = client.status(job)
    assert raw.succeeded == 5  # Vertex's rows
    counts = key_counts(client, job)
    assert (counts.rows, counts.keys, counts.shared) == (10, 20, True)
    assert counts(raw).succeeded == 10
    shown = invoke(["status", "dd-run"], env)
    assert "succeeded 10" in shown.stdout and "of 20 keys" in shown.stdout
    stack.faults.release("dd-run")


def test_without_dedupe_the_counts_are_vertexs(client: vb.Client, stack: LocalStack) -> None:
    """One key per row: nothing turned, the note stays Vertex's."""
    job = client.submit_claude("one-each", CLAUDE, [claude_request("a", "x")])
    counts = key_counts(client, job)
    assert (counts.rows, counts.keys, counts.shared) == (1, 1, False)
