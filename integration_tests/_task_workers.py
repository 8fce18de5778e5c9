"""Run tasks as processes (started by ``tests.helpers.child_processes``, so this must be
importable): each stages its part of one run through the public API, as a Cloud Run job's task
would; nothing in the library is patched."""

from __future__ import annotations

from typing import Any

import vertexbatch as vb
from tests.helpers import CLAUDE, claude_requests

from ._workers import client


def rows(total: int) -> list[vb.ClaudeRequest]:
    """The whole run's requests: every task builds them all and takes its part."""
    return claude_requests(total, text="Summarise item {i} of the fleet.")


def stage_task(
    endpoints: dict[str, str],
    run_id: str,
    total: int,
    task: tuple[int, int, int],
    shard_size: int,
    barrier: Any = None,
    out: Any = None,
) -> None:
    """Stage task ``(index, count, attempt)``'s part of the run (after ``barrier``, when given);
    report its summary's keys and the tasks it still waits for (a test may kill it instead)."""
    place = vb.Task(*task)
    part = place.slice(rows(total))
    c = client(endpoints)
    if barrier is not None:
        barrier.wait(timeout=60)
    try:
        run = c.run_claude(run_id, CLAUDE, part, shard_size=shard_size, task=place)
        summary = run.status()
        if out is not None:
            out.put(("ok", place.index, summary.keys, list(summary.waiting)))
    except Exception as exc:  # reported to the parent, which fails the test with it
        if out is None:
            raise
        out.put(("error", place.index, f"{type(exc).__name__}: {exc}", []))


def advance_until_made(endpoints: dict[str, str], run_id: str, out: Any, stop: Any) -> None:
    """Advance the run until its ledger is made (or the parent sets ``stop``), reporting each
    step's (waiting, created)."""
    run = client(endpoints).open_run(run_id)
    try:
        while not stop.is_set():  # the test registers the last task meanwhile
            summary = run.advance()
            out.put(("step", list(summary.waiting), summary.created))
            if not summary.waiting:
                out.put(("ok", [], 0))
                return
        out.put(("error", "stopped before the run was made", 0))
    except Exception as exc:  # reported to the parent, which fails the test with it
        out.put(("error", f"{type(exc).__name__}: {exc}", 0))


def stage_files_task(
    endpoints: dict[str, str],
    run_id: str,
    prefix: str,
    task: tuple[int, int, int],
    shard_size: int,
    out: Any = None,
) -> None:
    """Stage task ``(index, count, attempt)``'s share of the request files under ``prefix``,
    listed by the task itself, as a Cloud Run task would; report as ``stage_task`` does."""
    place = vb.Task(*task)
    c = client(endpoints)
    try:
        files = vb.list_request_files(c, prefix).share(place)
        run = c.run_claude(
            run_id, CLAUDE, files.claude_requests(), shard_size=shard_size, task=place
        )
        summary = run.status()
        if out is not None:
            out.put(("ok", place.index, summary.keys, list(summary.waiting)))
    except Exception as exc:  # reported to the parent, which fails the test with it
        if out is None:
            raise
        out.put(("error", place.index, f"{type(exc).__name__}: {exc}", []))
