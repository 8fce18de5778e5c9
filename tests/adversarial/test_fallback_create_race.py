"""The online fallback racing an attempt's create (issue 38): the create of a shard's attempt
and the answering of its keys online exclude each other, in either order, across processes."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.message import Message
from typing import Any

import vertexbatch as vb
from tests.gcs_gate import Spoil, body_gate
from tests.helpers import CLAUDE, child_processes, endpoints_client, jobs_in, past, task
from tests.helpers import endpoints as endpoints_of
from vertexbatch.emulator import LocalStack

KEYS = 6


# Run in child processes (tests.helpers.child_processes: importable from here).


def start_run(endpoints: dict[str, str], run_id: str, out: Any) -> None:
    """Start a run of 6 keys (its first step creates the shard's job); report its summary."""
    try:
        run = endpoints_client(endpoints).run_claude(run_id, CLAUDE, _tasks())
        out.put(("ok", run.status().outcomes))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def advance(endpoints: dict[str, str], run_id: str, late: bool, out: Any) -> None:
    """One step of the run (past its deadline with the online fallback, or before any)."""
    try:
        run = endpoints_client(endpoints).open_run(run_id)
        summary = run.advance(deadline=past(), fallback="online") if late else run.advance()
        out.put(("ok", (summary.created, dict(summary.outcomes))))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def _tasks() -> list[vb.ClaudeRequest]:
    return [task(i) for i in range(KEYS)]


@contextlib.contextmanager
def _in_process(stack: LocalStack, target: Any, *args: Any) -> Iterator[tuple[Any, Any]]:
    """Run target(*args, queue) in a process; however the test ends, its held calls go on and
    it is gone afterwards."""
    ctx = child_processes()
    out = ctx.Queue()
    process = ctx.Process(target=target, args=(*args, out))
    process.start()
    try:
        yield process, out
    finally:
        stack.faults.unblock()
        process.join(timeout=60)
        if process.is_alive():
            process.kill()
            process.join(timeout=60)


def _joined(process: Any, out: Any) -> Any:
    kind, value = out.get(timeout=120)
    process.join(timeout=60)
    assert kind == "ok", value
    return value


def _paid(stack: LocalStack, bucket: str) -> int:
    """Keys paid for: rows the test's batch jobs ran, once ended, and online calls."""
    stack.settle()
    batch = sum(
        int(job.get("completionStats", {}).get("successfulCount", 0))
        for job in jobs_in(stack, bucket)
    )
    return batch + stack.calls()["rawPredict"]


def _finish_late(run: vb.Run) -> vb.RunSummary:
    """Advance past the deadline until the run is done (its jobs end on their own)."""
    for _ in range(50):
        summary = run.advance(deadline=past(), fallback="online")
        if summary.done:
            return summary
    raise AssertionError(f"run {run.id} not done: {summary}")


def _failed_first_attempt(client: vb.Client, stack: LocalStack, run_id: str) -> vb.Run:
    """A run whose first attempt's job failed with no output: every key awaits attempt r1."""
    stack.faults.fail_job(f"{run_id}.s0")
    run = client.run_claude(run_id, CLAUDE, _tasks())
    stack.settle()
    stack.reset_calls()
    return run


def test_a_step_past_the_deadline_waits_for_a_held_resubmit(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A step stages attempt r1 and its create is held; a step past the deadline in another
    process then calls nothing online and leaves the shard pending; once the create goes
    ahead, every key is paid once, by the batch or online."""
    run = _failed_first_attempt(client, stack, "cr-resubmit")
    stack.faults.block("create")
    with _in_process(stack, advance, endpoints_of(stack, bucket), "cr-resubmit", False) as child:
        stack.faults.wait_blocked("create", timeout=120)
        late = run.advance(deadline=past(), fallback="online")
        assert not late.done and late.outcomes == {"pending": KEYS}
        assert stack.calls()["rawPredict"] == 0
        stack.faults.unblock("create")
        assert _joined(*child) == (1, {"pending": KEYS})
    summary = _finish_late(run)
    assert sum(summary.outcomes.values()) == KEYS
    assert _paid(stack, bucket) == KEYS


def test_a_step_past_the_deadline_waits_for_a_held_first_create(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The same race at the run's start: its first step's create is held while a step past the
    deadline in another process looks at the shard; no key is paid twice."""
    stack.faults.block("create")
    with _in_process(stack, start_run, endpoints_of(stack, bucket), "cr-start") as child:
        stack.faults.wait_blocked("create", timeout=120)
        run = client.open_run("cr-start")
        late = run.advance(deadline=past(), fallback="online")
        assert not late.done and late.outcomes == {"pending": KEYS}
        assert stack.calls()["rawPredict"] == 0
        stack.faults.unblock("create")
        _joined(*child)
    summary = _finish_late(run)
    assert sum(summary.outcomes.values()) == KEYS
    assert _paid(stack, bucket) == KEYS


def test_a_resubmit_waits_for_the_shard_answered_online(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """The other order: a process past the deadline is answering the shard online (its calls
    held) when a step before the deadline would resubmit it: no job is created, and every key
    is paid once, online."""
    run = _failed_first_attempt(client, stack, "cr-online")
    stack.faults.block("rawPredict", times=KEYS)
    with _in_process(stack, advance, endpoints_of(stack, bucket), "cr-online", True) as child:
        stack.faults.wait_blocked("rawPredict", count=1, timeout=120)
        summary = run.advance()
        assert summary.created == 0 and summary.outcomes == {"pending": KEYS}
        assert stack.calls()["create"] == 0
        stack.faults.unblock("rawPredict")
        assert _joined(*child) == (0, {"ok": KEYS})
    assert run.advance().done
    assert stack.calls()["create"] == 0
    assert _paid(stack, bucket) == KEYS


def test_a_step_that_read_the_shard_before_a_create_sees_the_job_once_it_claims(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A step past the deadline reads the shard while another process holds the claim to
    create attempt r1 (staged, no job yet); its claim write is held until that create is
    recorded and the claim released. Once it holds the claim it reads the shard afresh: it
    finds r1's job, cancels it and calls nothing online; every key is paid once."""
    run = _failed_first_attempt(client, stack, "cr-fresh")
    stack.faults.hold(display_name="cr-fresh.s0.r1", state="PENDING")
    stack.faults.block("create")
    go, held = threading.Event(), threading.Event()

    def script(method: str, path: str, headers: Message, body: bytes) -> Spoil | None:
        if method == "POST" and b"online.claim.json" in body and not held.is_set():
            held.set()
            assert go.wait(120), "the test never let the claim write go"
        return None  # forwarded as it came

    with (
        _in_process(stack, advance, endpoints_of(stack, bucket), "cr-fresh", False) as child,
        body_gate(stack.storage_endpoint, script) as url,
    ):
        stack.faults.wait_blocked("create", timeout=120)
        gated = endpoints_client({**endpoints_of(stack, bucket), "storage": url}, attempts=20)
        late: list[vb.RunSummary] = []
        stepper = threading.Thread(
            target=lambda: late.append(
                gated.open_run("cr-fresh").advance(deadline=past(), fallback="online")
            )
        )
        stepper.start()
        assert held.wait(120)  # it read the shard: r1 staged, no job
        stack.faults.unblock("create")
        assert _joined(*child) == (1, {"pending": KEYS})  # r1's job made, the claim released
        go.set()
        stepper.join(timeout=120)
    assert late and late[0].outcomes == {"pending": KEYS} and late[0].live_jobs == 1
    assert stack.calls()["rawPredict"] == 0 and stack.calls()["cancel"] == 1
    summary = _finish_late(run)
    assert summary.outcomes == {"ok": KEYS}
    assert _paid(stack, bucket) == KEYS


def test_a_creator_killed_mid_create_delays_the_fallback_until_its_token_expires(
    client: vb.Client, stack: LocalStack, bucket: str
) -> None:
    """A step killed while its create of r1 is held leaves its token: a step past the deadline
    calls nothing while it is unexpired; once expired (as 5 minutes on), the shard is answered
    online, each key once, and r1 is never created."""
    run = _failed_first_attempt(client, stack, "cr-killed")
    stack.faults.block("create")
    with _in_process(stack, advance, endpoints_of(stack, bucket), "cr-killed", False) as child:
        stack.faults.wait_blocked("create", timeout=120)
        child[0].kill()
        child[0].join(timeout=60)
        stack.faults.unblock("create", drop=True)  # the dead step's create never reaches Vertex
    gcs = stack.storage_client().bucket(bucket)
    tokens = list(gcs.list_blobs(prefix="jobs/cr-killed.s0/creating/"))
    assert len(tokens) == 1
    late = run.advance(deadline=past(), fallback="online")
    assert late.outcomes == {"pending": KEYS} and stack.calls()["rawPredict"] == 0
    token = json.loads(tokens[0].download_as_bytes())
    expired = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    tokens[0].upload_from_string(json.dumps({**token, "expires": expired}))
    summary = run.advance(deadline=past(), fallback="online")
    assert summary.done and summary.outcomes == {"ok": KEYS}
    assert [j["displayName"] for j in jobs_in(stack, bucket)] == ["cr-killed.s0"]
    assert _paid(stack, bucket) == KEYS
