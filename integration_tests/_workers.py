"""Code run in child processes by the integration tests (started by
``tests.helpers.child_processes``, so it must be importable).

Workers use the public API only. A test that needs one to die at a given point kills it with
SIGKILL while the local stack holds its call there (`kill_while_held`), as a crashed Cloud Run
task would die; nothing in the library is patched.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from typing import Any, Literal

import vertexbatch as vb
from tests.helpers import CLAUDE, child_processes, claude_requests, endpoints_client
from tests.helpers import endpoints as endpoints  # the tests' _workers.endpoints: one definition
from vertexbatch.emulator import LocalStack

CANCELLED = ("JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING")


def kill_while_held(
    stack: LocalStack,
    target: Callable[..., None],
    args: tuple[Any, ...],
    op: str,
    when: Literal["before", "after"],
) -> None:
    """Run target(*args) in a process and SIGKILL it while the stack holds its first `op` call.

    The held call stays held: the test decides with `stack.faults.unblock` whether it goes on.
    """
    stack.faults.block(op, when=when)
    process = child_processes().Process(target=target, args=args)
    process.start()
    try:
        stack.faults.wait_blocked(op, timeout=120)
    finally:
        process.kill()
        process.join(timeout=60)
    assert process.exitcode == -signal.SIGKILL


def client(endpoints: dict[str, str]) -> vb.Client:
    """A worker's client: retries without waiting, enough of them to ride out a busy stack."""
    return endpoints_client(endpoints, attempts=20)


def submit_after_barrier(
    endpoints: dict[str, str], submission_id: str, barrier: Any, out: Any
) -> None:
    """Wait for every sibling, then submit the same id and rows; report the job name."""
    c = client(endpoints)
    rows = claude_requests(20)
    barrier.wait(timeout=60)
    try:
        out.put(("ok", c.submit_claude(submission_id, CLAUDE, rows).name))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def large_rows(megabytes: int) -> Iterator[vb.ClaudeRequest]:
    """About ``megabytes`` MB of distinct requests of 20 KB, built as they are staged."""
    for i in range(megabytes * 50):
        text = f"{i} " + "lorem ipsum " * 1700
        yield vb.ClaudeRequest(
            key=f"k{i}", params={"max_tokens": 8, "messages": [{"role": "user", "content": text}]}
        )


def submit_large_after_barrier(
    endpoints: dict[str, str], submission_id: str, megabytes: int, barrier: Any, out: Any
) -> None:
    """``submit_after_barrier`` with ``large_rows(megabytes)``: an input of several parts."""
    c = client(endpoints)
    barrier.wait(timeout=60)
    try:
        out.put(("ok", c.submit_claude(submission_id, CLAUDE, large_rows(megabytes)).name))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def submit_and_report(endpoints: dict[str, str], submission_id: str, out: Any) -> None:
    """Submit twenty rows under the id at once; report the job name (the test orders the
    process's calls with the stack's blocks)."""
    try:
        job = client(endpoints).submit_claude(submission_id, CLAUDE, claude_requests(20))
        out.put(("ok", job.name))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def submit(endpoints: dict[str, str], submission_id: str) -> None:
    """Submit five rows under the id (the test kills this process while a call is held)."""
    client(endpoints).submit_claude(submission_id, CLAUDE, claude_requests(5))


def advance_in_rounds(
    endpoints: dict[str, str], run_id: str, barrier: Any, inbox: Any, out: Any
) -> None:
    """Advance the run once per round the parent starts, at once with a sibling; at the end
    report the run's results."""
    run = client(endpoints).open_run(run_id)
    try:
        while inbox.get(timeout=120):
            barrier.wait(timeout=60)
            out.put(("step", run.advance().done))
        out.put(("ok", {r.key: r.outcome for r in run.results()}))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def advance(endpoints: dict[str, str], run_id: str) -> None:
    """Take one step of the run (the test kills this process while a call is held)."""
    client(endpoints).open_run(run_id).advance()


def submit_controlled(
    endpoints: dict[str, str], submission_id: str, team: str, barrier: Any, out: Any
) -> None:
    """Wait for every sibling, then submit the id's rows with job controls of ``team``
    (a label, a CMEK key and a service account); report the job name or the refusal's field."""
    c = client(endpoints)
    key = f"projects/{endpoints['project']}/locations/{endpoints['location']}"
    controls: dict[str, Any] = {
        "labels": {"team": team},
        "kms_key": f"{key}/keyRings/ring/cryptoKeys/{team}",
        "service_account": f"{team}@{endpoints['project']}.iam.gserviceaccount.com",
    }
    if barrier is not None:
        barrier.wait(timeout=60)
    try:
        out.put(("ok", c.submit_claude(submission_id, CLAUDE, claude_requests(5), **controls).name))
    except vb.InvalidRequestError as exc:
        out.put(("refused", exc.field))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def submit_to_dest_after_barrier(
    endpoints: dict[str, str], submission_id: str, dest: str, barrier: Any, out: Any
) -> None:
    """As ``submit_after_barrier``, the job writing to the BigQuery sink ``dest``."""
    c = client(endpoints)
    rows = claude_requests(20)
    barrier.wait(timeout=60)
    try:
        job = c.submit_claude(submission_id, CLAUDE, rows, dest=dest)
        out.put(("ok", job.name))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def submit_source_after_barrier(
    endpoints: dict[str, str], submission_id: str, table: str, barrier: Any, out: Any
) -> None:
    """As ``submit_after_barrier``, the rows read from the BigQuery table ``table``
    (``endpoints["bigquery_storage"]``: the stack's Storage Read API)."""
    c = vb.Client.for_endpoints(
        vertex_endpoint=endpoints["vertex"],
        storage_endpoint=endpoints["storage"],
        project=endpoints["project"],
        location=endpoints["location"],
        bucket=endpoints["bucket"],
        prefix="jobs",
        retry=vb.RetryPolicy.no_wait(20),
        bigquery_storage_endpoint=endpoints["bigquery_storage"],
    )
    barrier.wait(timeout=60)
    try:
        out.put(("ok", c.submit_claude(submission_id, CLAUDE, vb.BigQuerySource(table)).name))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))
